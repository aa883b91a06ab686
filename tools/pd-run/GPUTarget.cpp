//===- GPUTarget.cpp - pd-run --target=cuda|rocm --------------------------===//
//
// The builder half of GPU evaluation inside pd-run: the kernel, and what
// to check it against, become a kernel package; without --emit-package
// the package is run at once by pd-gpu-run (the runner half), which needs
// a GPU on this machine.
//
//===----------------------------------------------------------------------===//

#include "GPUTarget.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Search/Evaluator/ExpectedOutputs.h"
#include "PerfDojo/Transforms/Move.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;
using namespace mlir::perfdojo;

KernelOp mlir::perfdojo::loadFirstKernel(StringRef path, MLIRContext *ctx,
                                         OwningOpRef<ModuleOp> &holder) {
  std::string error;
  auto file = mlir::openInputFile(path, &error);
  if (!file) {
    llvm::errs() << "pd-run: " << error << "\n";
    return {};
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), llvm::SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, ctx);
  holder = parseKernelFile(sourceMgr, path, "", ctx, error);
  if (!error.empty())
    llvm::errs() << "pd-run: " << error << "\n";
  if (!holder)
    return {};
  auto kernels = holder->getOps<KernelOp>();
  if (kernels.empty()) {
    llvm::errs() << "pd-run: no perfdojo.kernel in '" << path << "'\n";
    return {};
  }
  return *kernels.begin();
}

/// The kernel's untransformed program, from its move history, or null.
static KernelOp loadOriginal(KernelOp kernel, OwningOpRef<ModuleOp> &holder) {
  auto original = kernel->getAttrOfType<StringAttr>(kOriginalAttrName);
  if (!original)
    return {};
  holder = importTextForm(original.getValue(), kOriginalAttrName,
                          kernel.getContext());
  if (!holder)
    return {};
  auto kernels = holder->getOps<KernelOp>();
  return kernels.empty() ? KernelOp() : *kernels.begin();
}

int mlir::perfdojo::runOnGPU(KernelOp kernel, const Interpreter *interpreted,
                             const GPURunOptions &options, const char *argv0) {
  MLIRContext *ctx = kernel.getContext();
  SmallString<256> dir(options.emitPackage);
  if (dir.empty()) {
    if (std::error_code ec =
            llvm::sys::fs::createUniqueDirectory("perfdojo-package", dir)) {
      llvm::errs() << "pd-run: cannot create a temporary folder: "
                   << ec.message() << "\n";
      return 1;
    }
  } else if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    llvm::errs() << "pd-run: cannot create '" << dir << "': " << ec.message()
                 << "\n";
    return 1;
  }

  // What the runner checks the outputs against.
  PackageCheck check;
  check.tolerance = options.tolerance;
  std::string what = "nothing (no interpreter run, no reference)";
  OwningOpRef<ModuleOp> holder;
  KernelOp reference;
  std::string error;
  if (!options.checkAgainst.empty()) {
    reference = loadFirstKernel(options.checkAgainst, ctx, holder);
    if (!reference)
      return 1;
    what = "'" + options.checkAgainst + "' compiled for the same GPU";
  } else if (interpreted) {
    SmallString<256> expectedDir(dir);
    llvm::sys::path::append(expectedDir, "expected");
    ExpectedOutputsOptions expectedOptions;
    expectedOptions.maxBytes = options.maxExpectedBytes;
    expectedOptions.sampleSize = options.sampleSize;
    FailureOr<ExpectedOutputsSummary> written =
        writeExpectedOutputs(interpreted->getBuffers(), expectedDir,
                             "expected/", options.tolerance, expectedOptions,
                             error);
    if (failed(written)) {
      llvm::errs() << "pd-run: " << error << "\n";
      return 1;
    }
    check = written->check;
    what = written->sampled
               ? "a sample of " + std::to_string(options.sampleSize) +
                     " of the interpreter's values per output"
               : std::string("the interpreter's outputs");
  } else if ((reference = loadOriginal(kernel, holder))) {
    what = "the untransformed program compiled for the same GPU";
  }
  if (reference) {
    SmallString<256> referenceDir(dir);
    llvm::sys::path::append(referenceDir, check.reference);
    PackageCheck none;
    KernelPackageOptions referenceOptions = options.package;
    if (failed(writeKernelPackage(reference, referenceDir, referenceOptions,
                                  none, error))) {
      if (!error.empty())
        llvm::errs() << "pd-run: " << error << "\n";
      llvm::errs() << "pd-run: cannot build the reference's package\n";
      return 1;
    }
    check.kind = PackageCheck::Kind::Reference;
  }

  FailureOr<KernelPackageSummary> summary =
      writeKernelPackage(kernel, dir, options.package, check, error);
  if (failed(summary)) {
    if (!error.empty())
      llvm::errs() << "pd-run: " << error << "\n";
    return 1;
  }
  llvm::outs() << "package " << dir << ": " << summary->launches
               << (summary->launches == 1 ? " kernel launch, "
                                          : " kernel launches, ")
               << llvm::sys::path::filename(summary->binaryPath) << " ("
               << summary->binaryBytes << " bytes), built in "
               << llvm::format("%.2f", summary->compileSeconds)
               << " s; checked against " << what << "\n";
  if (!options.emitPackage.empty())
    return 0;

  // Run it here: pd-gpu-run lives beside pd-run.
  std::string self = llvm::sys::fs::getMainExecutable(argv0, (void *)&runOnGPU);
  SmallString<256> runner(llvm::sys::path::parent_path(self));
  llvm::sys::path::append(runner, "pd-gpu-run");
  if (!llvm::sys::fs::can_execute(runner)) {
    llvm::errs() << "pd-run: cannot find pd-gpu-run beside pd-run ('" << runner
                 << "'); run the package with it by hand\n";
    return 1;
  }
  std::string warmup = "--warmup=" + std::to_string(options.warmup);
  std::string repetitions =
      "--repetitions=" + std::to_string(options.repetitions);
  std::string limit = "--time-limit=" + std::to_string(options.timeLimit);
  SmallVector<StringRef> args{runner, warmup, repetitions, limit, dir};
  llvm::outs().flush();
  int status =
      llvm::sys::ExecuteAndWait(runner, args, std::nullopt, {}, 0, 0, &error);
  if (status < 0) {
    llvm::errs() << "pd-run: cannot run pd-gpu-run: " << error << "\n";
    return 1;
  }
  llvm::sys::fs::remove_directories(dir);
  return status;
}
