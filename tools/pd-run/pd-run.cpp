//===- pd-run.cpp - Run one PerfDojo kernel -------------------------------===//
//
// Loads a kernel (text form or MLIR), optionally prints it back in text form,
// runs it in the reference interpreter on seeded inputs and prints a summary
// of its outputs; `--dump-dir` writes every input and output as .npy.
//
//===----------------------------------------------------------------------===//

#include "GPUTarget.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Evaluator/Evaluator.h"
#include "PerfDojo/Search/Evaluator/GPUEmulator.h"
#include "PerfDojo/Search/Interpreter/Interpreter.h"
#include "PerfDojo/Search/Evaluator/Machine.h"
#include "llvm/Support/JSON.h"
#include "PerfDojo/Support/InputChecks.h"
#include "PerfDojo/Support/ToolMain.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include <chrono>

using namespace mlir;
using namespace mlir::perfdojo;
namespace cl = llvm::cl;

static cl::opt<std::string> inputFilename(cl::Positional,
                                          cl::desc("<kernel.pd|kernel.mlir>"),
                                          cl::init("-"));
static cl::opt<std::string>
    inputFormat("input-format",
                cl::desc("input format: 'pd' (text form) or 'mlir'; by "
                         "default chosen from the file extension"),
                cl::init(""));
static cl::opt<bool> interpret("interpret",
                               cl::desc("run the reference interpreter (the "
                                        "default and, for now, only engine)"),
                               cl::init(true));
static cl::opt<bool> printText("print-text",
                               cl::desc("print the kernel back in text form"));
static cl::opt<uint64_t> seed("seed", cl::desc("input generator seed"),
                              cl::init(1));
static cl::opt<std::string> kernelName("kernel",
                                       cl::desc("the kernel to run, when the "
                                                "input holds several"),
                                       cl::init(""));
static cl::opt<std::string>
    dumpDir("dump-dir", cl::desc("write every in and out buffer as "
                                 "<dir>/<buffer>.npy (float64 or int64)"),
            cl::init(""));
static cl::opt<uint64_t>
    maxOps("max-ops",
           cl::desc("stop with an error after this many executed operations"),
           cl::init(Interpreter::kDefaultMaxOperations));
static cl::opt<uint64_t> maxMiB("max-mib",
                                cl::desc("refuse kernels whose buffers need "
                                         "more memory than this (MiB)"),
                                cl::init(8192));

static cl::OptionCategory jitCategory("Compiled execution (--jit)");
static cl::opt<bool> jit("jit",
                         cl::desc("also compile the kernel for this CPU, run "
                                  "it on the same inputs, check its outputs "
                                  "against the interpreter's and time it"),
                         cl::cat(jitCategory));
static cl::opt<bool> noInterpret(
    "no-interpret",
    cl::desc("with --jit: skip the interpreter (no output check); for "
             "kernels too large to interpret"),
    cl::cat(jitCategory));
static cl::opt<unsigned> threads("num-threads",
                                 cl::desc("OpenMP threads for parallel scopes"),
                                 cl::init(1), cl::cat(jitCategory));
static cl::opt<unsigned> repetitions("repetitions",
                                     cl::desc("timed runs"), cl::init(5),
                                     cl::cat(jitCategory));
static cl::opt<unsigned> warmup("warmup", cl::desc("untimed runs first"),
                                cl::init(1), cl::cat(jitCategory));
static cl::opt<double> minTimedMs(
    "min-timed-ms",
    cl::desc("CPU: a short kernel warms up for a quarter of this and is "
             "timed until its runs add up to this, up to 1000 runs (0: "
             "exactly --warmup and --repetitions runs)"),
    cl::init(5), cl::cat(jitCategory));
static cl::opt<double>
    timeLimit("time-limit",
              cl::desc("seconds after which the child compiling and running "
                       "the kernel is killed"),
              cl::init(60), cl::cat(jitCategory));
static cl::opt<int64_t> streamingMinBytes(
    "streaming-min-bytes",
    cl::desc("with --jit: outputs of at least this many bytes that the "
             "kernel only writes, and heap temporaries of at least 4 times as "
             "many that parallel scopes write, get non-temporal stores (0: "
             "never)"),
    cl::init(16 << 20), cl::cat(jitCategory));
static cl::opt<bool> fpContract(
    "fp-contract",
    cl::desc("with --jit: let a floating-point product fuse with the sum "
             "that consumes it (fused multiply-add, one rounding); "
             "--fp-contract=false rounds every operation"),
    cl::init(true), cl::cat(jitCategory));
static cl::opt<bool> prefetchRows(
    "prefetch-rows",
    cl::desc("with --jit: the second of several passes over a row of the "
             "same shape prefetches the row the first pass reads next; "
             "--prefetch-rows=false never prefetches"),
    cl::init(true), cl::cat(jitCategory));
static cl::opt<int64_t> prefetchAhead(
    "prefetch-ahead",
    cl::desc("with --jit: a vector scope in a sequential loop that streams "
             "a row of an input prefetches the element this many bytes "
             "further on in the input (0: never)"),
    cl::init(0), cl::cat(jitCategory));
static cl::opt<bool> reciprocalDivide(
    "reciprocal-divide",
    cl::desc("with --jit: a floating-point division by an element that a "
             "loop's iterations all share multiplies by its reciprocal, "
             "computed once before the loop; --reciprocal-divide=false "
             "divides every time (one rounding)"),
    cl::init(true), cl::cat(jitCategory));
static cl::opt<std::string> checkAgainst(
    "check-against",
    cl::desc("with --jit: check the outputs against this kernel (text form "
             "or .mlir) compiled and run on the same inputs, instead of the "
             "interpreter; for full-size kernels, pass the untransformed one"),
    cl::init(""), cl::cat(jitCategory));
static cl::opt<bool> json("json",
                          cl::desc("with --jit: print the result as one JSON "
                                   "object instead of the jit line"),
                          cl::cat(jitCategory));
static cl::opt<double> tolerance(
    "tolerance",
    cl::desc("largest accepted |compiled - interpreted| relative to the "
             "largest |interpreted| of each output buffer (floats)"),
    cl::init(1e-4), cl::cat(jitCategory));

static cl::OptionCategory gpuCategory("GPU targets (--target=cuda|rocm)");
static cl::opt<std::string> target(
    "target",
    cl::desc("where to run: 'cpu' (the interpreter, and with --jit this "
             "CPU), 'cuda' or 'rocm': build a kernel package (PTX or HSACO, "
             "checked against the interpreter's outputs or the untransformed "
             "program) and run it with pd-gpu-run on this machine's GPU; "
             "'gpu-emulator': run the GPU lowering's kernels on this CPU "
             "(each block's threads as OS threads with real barriers) and "
             "check them against the interpreter, for small shapes"),
    cl::init("cpu"), cl::cat(gpuCategory));
static cl::opt<GPUThreadOrder> emulatorOrder(
    "emulator-order",
    cl::desc("with --target=gpu-emulator: how a block's threads run between "
             "barriers"),
    cl::values(clEnumValN(GPUThreadOrder::Concurrent, "concurrent",
                          "as concurrent OS threads (the default; a missing "
                          "barrier may show)"),
               clEnumValN(GPUThreadOrder::Forward, "forward",
                          "one at a time by increasing index, each up to its "
                          "next barrier (deterministic)"),
               clEnumValN(GPUThreadOrder::Reverse, "reverse",
                          "one at a time by decreasing index")),
    cl::init(GPUThreadOrder::Concurrent), cl::cat(gpuCategory));
static cl::opt<std::string> emitPackage(
    "emit-package",
    cl::desc("with --target=cuda|rocm: write the package into this folder "
             "and stop (run it with pd-gpu-run here or on a GPU machine)"),
    cl::init(""), cl::cat(gpuCategory));
static cl::opt<std::string> gpuChip(
    "gpu-chip", cl::desc("the GPU to compile for (default sm_90 or gfx942)"),
    cl::init(""), cl::cat(gpuCategory));
static cl::opt<std::string>
    gpuFeatures("gpu-features",
                cl::desc("target features (default +ptx80 for CUDA)"),
                cl::init(""), cl::cat(gpuCategory));
static cl::opt<std::string> gpuToolkit(
    "gpu-toolkit",
    cl::desc("ROCm folder (holding llvm/bin/ld.lld) for HSACOs; default: "
             "the ld.lld PerfDojo was configured with"),
    cl::init(""), cl::cat(gpuCategory));
static cl::opt<uint64_t> maxExpectedMiB(
    "max-expected-mib",
    cl::desc("with --target=cuda|rocm: expected outputs larger than this "
             "(as float64) go into the package as an evenly spread sample "
             "of 65536 values each"),
    cl::init(32), cl::cat(gpuCategory));

/// --target=gpu-emulator: the GPU lowering's kernels run on this CPU and
/// checked against the interpreter.
static int runGPUEmulator(KernelOp kernel, const Interpreter *interpreted) {
  GPUEmulatorOptions options;
  options.seed = seed;
  options.order = emulatorOrder;
  options.fpContract = fpContract;
  EvaluationResult result =
      emulateGPU(kernel, options, interpreted, tolerance);
  llvm::outs() << "gpu-emulator " << kernel.getSymName() << ": ";
  if (!result.ok()) {
    llvm::outs() << stringifyEvaluationStatus(result.status) << ": "
                 << result.reason << "\n";
    return 1;
  }
  llvm::outs() << "ok; max error " << llvm::format("%.3g", result.maxError)
               << " (tolerance " << llvm::format("%g", tolerance.getValue())
               << ")\n";
  return 0;
}

/// --target=cuda|rocm: the package, and its run when not only emitted.
static int runGPUTarget(KernelOp kernel, const Interpreter *interpreted,
                        const char *argv0) {
  GPURunOptions options;
  options.package.api = target == "rocm" ? GPUApi::Hip : GPUApi::Cuda;
  options.package.chip = gpuChip;
  options.package.features = gpuFeatures;
  options.package.toolkit = gpuToolkit;
  options.package.fpContract = fpContract;
  options.package.seed = seed;
  options.emitPackage = emitPackage;
  options.checkAgainst = checkAgainst;
  options.tolerance = tolerance;
  options.maxExpectedBytes = maxExpectedMiB << 20;
  options.warmup = warmup;
  options.repetitions = repetitions;
  options.timeLimit = timeLimit;
  return runOnGPU(kernel, interpreted, options, argv0);
}

static std::string shapeString(const BufferData &b) {
  std::string text = "[";
  for (auto [i, s] : llvm::enumerate(b.shape))
    text += (i ? ", " : "") + std::to_string(s);
  return text + "]";
}

static int runTool(int argc, char **argv);

/// parseKernelFile, with its errors printed.
static OwningOpRef<ModuleOp> loadKernelFile(llvm::SourceMgr &sourceMgr,
                                            StringRef path, StringRef format,
                                            MLIRContext *context) {
  std::string error;
  OwningOpRef<ModuleOp> module =
      parseKernelFile(sourceMgr, path, format, context, error);
  if (!error.empty())
    llvm::errs() << "pd-run: " << error << "\n";
  return module;
}

/// Compiles, runs and times `kernel`; checks it against `reference` when
/// given. Prints one line; returns the exit status.
static int runCompiled(KernelOp kernel, const Interpreter *reference) {
  EvaluationOptions options;
  options.threads = threads;
  options.repetitions = repetitions;
  options.minTimedSeconds = minTimedMs / 1000;
  options.warmup = warmup;
  options.timeLimit = timeLimit;
  options.seed = seed;
  options.streamingMinBytes = streamingMinBytes;
  options.fpContract = fpContract;
  options.prefetchRows = prefetchRows;
  options.prefetchAhead = prefetchAhead;
  options.reciprocalDivide = reciprocalDivide;
  EvaluationResult result;
  if (checkAgainst.empty()) {
    result = evaluate(kernel, options, reference, tolerance);
  } else {
    // The reference: another kernel, compiled, run once on the same inputs.
    OwningOpRef<ModuleOp> other;
    KernelOp otherKernel =
        loadFirstKernel(checkAgainst, kernel.getContext(), other);
    if (!otherKernel)
      return 1;
    EvaluationOptions once = options;
    once.warmup = 0;
    once.repetitions = 1;
    once.minTimedSeconds = 0;
    EvaluationResult expected = evaluate(otherKernel, once);
    if (!expected.ok()) {
      llvm::errs() << "pd-run: the reference kernel fails: "
                   << stringifyEvaluationStatus(expected.status) << ": "
                   << expected.reason << "\n";
      return 1;
    }
    result = evaluate(kernel, options);
    if (result.ok())
      compareWithReference(expected, tolerance, result);
  }
  bool checked = reference || !checkAgainst.empty();
  KernelCost cost = getKernelCost(kernel);
  std::optional<MachineLimits> limits = loadMachineLimits(threads);
  double seconds = result.median();
  double gbs = seconds > 0 ? cost.bytes / seconds / 1e9 : 0;
  double gflops = seconds > 0 ? cost.flops / seconds / 1e9 : 0;
  if (json) {
    llvm::json::Object out{
        {"kernel", kernel.getSymName()},
        {"status", stringifyEvaluationStatus(result.status)},
        {"threads", threads.getValue()},
        {"compile_ms", result.compileSeconds * 1e3},
    };
    if (!result.ok())
      out["reason"] = result.reason;
    if (result.ok()) {
      llvm::json::Array times;
      for (double t : result.times)
        times.push_back(t * 1e3);
      out["times_ms"] = std::move(times);
      out["median_ms"] = seconds * 1e3;
      out["min_ms"] = result.minimum() * 1e3;
      out["max_ms"] = result.maximum() * 1e3;
      out["bytes"] = cost.bytes;
      out["flops"] = cost.flops;
      out["GBs"] = gbs;
      out["GFLOPs"] = gflops;
      out["checked"] = checked;
      if (checked) {
        out["max_error"] = result.maxError;
        out["tolerance"] = tolerance.getValue();
      }
      if (limits) {
        out["pct_of_best_bandwidth"] = 100 * gbs / limits->bestGBs();
        out["pct_of_fma_peak"] = 100 * gflops / limits->fmaGFlops;
      }
    }
    llvm::outs() << llvm::formatv("{0}", llvm::json::Value(std::move(out)))
                 << "\n";
    return result.ok() ? 0 : 1;
  }
  llvm::outs() << "jit " << kernel.getSymName() << ": ";
  if (!result.ok()) {
    llvm::outs() << stringifyEvaluationStatus(result.status) << ": "
                 << result.reason << "\n";
    return 1;
  }
  llvm::outs() << "compiled in "
               << llvm::format("%.1f", result.compileSeconds * 1e3)
               << " ms; median " << llvm::format("%.4g", seconds * 1e3)
               << " ms (min " << llvm::format("%.4g", result.minimum() * 1e3)
               << ", max " << llvm::format("%.4g", result.maximum() * 1e3)
               << ") over " << result.times.size() << " runs, " << threads
               << (threads == 1 ? " thread" : " threads");
  if (checked)
    llvm::outs() << "; max error " << llvm::format("%.3g", result.maxError)
                 << " (tolerance " << llvm::format("%g", tolerance.getValue())
                 << ")";
  else
    llvm::outs() << "; not checked";
  llvm::outs() << "\n";
  llvm::outs() << "perf " << kernel.getSymName() << ": "
               << llvm::format("%.2f", gbs) << " GB/s, "
               << llvm::format("%.2f", gflops) << " GFLOP/s";
  if (limits)
    llvm::outs() << " = " << llvm::format("%.1f", 100 * gbs / limits->bestGBs())
                 << "% of the best DRAM bandwidth ("
                 << llvm::format("%.1f", limits->bestGBs()) << " GB/s), "
                 << llvm::format("%.1f", 100 * gflops / limits->fmaGFlops)
                 << "% of the FMA peak ("
                 << llvm::format("%.0f", limits->fmaGFlops) << " GFLOP/s), "
                 << threads << (threads == 1 ? " thread" : " threads");
  else
    llvm::outs() << " (no measured limits for " << threads
                 << " thread(s): run pd-machine --num-threads=" << threads
                 << ")";
  llvm::outs() << "\n";
  return 0;
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  return runWithLargeStack([&] { return runTool(argc, argv); });
}

static int runTool(int argc, char **argv) {
  cl::ParseCommandLineOptions(
      argc, argv,
      "pd-run: load a PerfDojo kernel, interpret it and summarize its "
      "outputs\n");
  if (target != "cpu" && target != "cuda" && target != "rocm" &&
      target != "gpu-emulator") {
    llvm::errs() << "pd-run: --target must be 'cpu', 'cuda', 'rocm' or "
                    "'gpu-emulator', not '"
                 << target << "'\n";
    return 1;
  }
  if (!(minTimedMs >= 0) || minTimedMs > 60000) {
    llvm::errs() << "pd-run: --min-timed-ms must lie between 0 and 60000, "
                 << "not " << llvm::format("%g", double(minTimedMs)) << "\n";
    return 1;
  }
  bool emulate = target == "gpu-emulator";
  if (emulate && (noInterpret || !interpret)) {
    llvm::errs() << "pd-run: --target=gpu-emulator checks against the "
                    "interpreter; it cannot be combined with --no-interpret\n";
    return 1;
  }
  bool gpu = target == "cuda" || target == "rocm";
  if ((gpu || emulate) && jit) {
    llvm::errs() << "pd-run: --jit compiles for this CPU; it cannot be "
                    "combined with --target="
                 << target << "\n";
    return 1;
  }
  if (!gpu && !emitPackage.empty()) {
    llvm::errs() << "pd-run: --emit-package needs --target=cuda or "
                    "--target=rocm\n";
    return 1;
  }

  DialectRegistry registry;
  registerAllPerfDojo(registry);
  registerGPUTargets(registry);
  MLIRContext context(registry);
  context.loadDialect<PerfDojoDialect>();
  // Diagnostics point at the kernel's own lines; the generic form of the op
  // would only repeat them.
  context.printOpOnDiagnostic(false);

  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(inputFilename, &errorMessage);
  if (!file) {
    llvm::errs() << "pd-run: " << errorMessage << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);

  OwningOpRef<ModuleOp> module =
      loadKernelFile(sourceMgr, inputFilename, inputFormat, &context);
  if (!module)
    return 1;

  SmallVector<KernelOp> kernels;
  module->walk([&](KernelOp k) { kernels.push_back(k); });
  KernelOp kernel;
  for (KernelOp k : kernels)
    if (kernelName.empty() || k.getSymName() == kernelName)
      kernel = kernel ? kernel : k;
  if (!kernel) {
    llvm::errs() << "pd-run: "
                 << (kernelName.empty() ? std::string("no perfdojo.kernel in the input")
                                        : "no kernel named '" + kernelName + "'")
                 << "\n";
    return 1;
  }
  if (kernelName.empty() && kernels.size() > 1) {
    llvm::errs() << "pd-run: the input holds " << kernels.size()
                 << " kernels; choose one with --kernel\n";
    return 1;
  }

  if (printText && failed(exportTextForm(kernel, llvm::outs())))
    return 1;

  unsigned scopes = 0, computes = 0, maxDepth = 0;
  kernel.walk([&](Operation *op) {
    if (auto scope = dyn_cast<ScopeOp>(op)) {
      ++scopes;
      maxDepth = std::max(maxDepth, scope.getDepth() + 1);
    }
    computes += isa<ComputeOp>(op);
  });
  llvm::outs() << "kernel " << kernel.getSymName() << ": "
               << llvm::range_size(kernel.getBuffers()) << " buffers, "
               << scopes << " scopes, " << computes
               << " operations, nest depth " << maxDepth << "\n";
  if (gpu && (!interpret || noInterpret || !checkAgainst.empty()))
    return runGPUTarget(kernel, nullptr, argv[0]);
  if (!interpret || (jit && (noInterpret || !checkAgainst.empty())))
    return jit ? runCompiled(kernel, nullptr) : 0;

  FailureOr<std::unique_ptr<Interpreter>> interp =
      Interpreter::create(kernel, Interpreter::mebibytes(maxMiB));
  if (failed(interp))
    return 1;
  (*interp)->fillInputs(seed);
  auto start = std::chrono::steady_clock::now();
  if (failed((*interp)->run(maxOps)))
    return 1;
  double seconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - start)
                       .count();
  uint64_t executed = (*interp)->getExecutedOperations();
  llvm::outs() << "interpreted " << executed << " operations in "
               << llvm::format("%.3f", seconds) << " s (seed " << seed
               << ")\n";
  for (const BufferData &b : (*interp)->getBuffers()) {
    if (b.role != Role::out)
      continue;
    BufferSummary s = Interpreter::summarize(b);
    llvm::outs() << "out " << b.name << " " << b.elementType << " "
                 << shapeString(b) << ": sum=" << llvm::format("%.17g", s.sum)
                 << " abs_sum=" << llvm::format("%.17g", s.absSum)
                 << " min=" << llvm::format("%.9g", s.min)
                 << " max=" << llvm::format("%.9g", s.max)
                 << " nan=" << s.nans << " inf=" << s.infs
                 << " unwritten=" << s.unwritten << "\n";
  }

  if (!dumpDir.empty()) {
    if (std::error_code ec = llvm::sys::fs::create_directories(dumpDir)) {
      llvm::errs() << "pd-run: cannot create '" << dumpDir
                   << "': " << ec.message() << "\n";
      return 1;
    }
    for (const BufferData &b : (*interp)->getBuffers()) {
      if (b.role == Role::tmp)
        continue;
      SmallString<128> path(dumpDir);
      llvm::sys::path::append(path, b.name + ".npy");
      std::string error;
      if (failed(writeNpy(b, path, error))) {
        llvm::errs() << "pd-run: " << error << "\n";
        return 1;
      }
    }
  }
  if (gpu)
    return runGPUTarget(kernel, interp->get(), argv[0]);
  if (emulate)
    return runGPUEmulator(kernel, interp->get());
  return jit ? runCompiled(kernel, interp->get()) : 0;
}
