//===- ApplyFuzzer.cpp - libFuzzer target for --pd-apply move lists -------===//
//
// Treats arbitrary bytes as the value of `pd-opt --pd-apply=<moves>` and
// runs the pd-apply pass on a fixed kernel (the suite's softmax) through
// the pass registry, exactly as pd-opt builds it from the command line: the
// pass options are parsed from "moves=<input>", then the pass runs. Each
// move is checked before it changes anything. Properties:
//
//   * nothing crashes;
//   * options that do not parse yield an error message (through the error
//     handler, or printed on stderr by llvm::cl itself, which is how MLIR's
//     option parser reports "for the --moves option: requires a value!");
//   * a failed run yields an error diagnostic at file:line:column;
//   * after the run, failed or not, the module verifies (a refused move
//     leaves the moves before it applied and valid IR);
//   * after a successful run the kernel exports to text that imports, and
//     undoing its last move (replaying the others) succeeds.
//
//===----------------------------------------------------------------------===//

#include "FuzzerSupport.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Transforms/Move.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <unistd.h>

using namespace mlir;
using namespace mlir::perfdojo;

static const PassInfo *applyPass;

/// Runs `body` with file descriptor 2 redirected to a temporary file and
/// returns what was written there (llvm::errs() is unbuffered).
static std::string captureStderr(llvm::function_ref<void()> body) {
  FILE *capture = std::tmpfile();
  fuzz::require(capture != nullptr, "cannot create a temporary file");
  int saved = dup(2);
  dup2(fileno(capture), 2);
  body();
  dup2(saved, 2);
  close(saved);
  std::string text;
  std::rewind(capture);
  char chunk[256];
  while (size_t n = std::fread(chunk, 1, sizeof(chunk), capture))
    text.append(chunk, n);
  std::fclose(capture);
  return text;
}

extern "C" int LLVMFuzzerInitialize(int *, char ***) {
  registerAllPerfDojoPasses();
  applyPass = PassInfo::lookup("pd-apply");
  fuzz::require(applyPass != nullptr, "pd-apply is not registered");
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  StringRef input(reinterpret_cast<const char *>(data), size);
  DialectRegistry registry;
  registerAllPerfDojo(registry);
  MLIRContext context(registry, MLIRContext::Threading::DISABLED);
  context.printOpOnDiagnostic(false);
  fuzz::DiagnosticRecorder diagnostics(&context);
  OwningOpRef<ModuleOp> module = fuzz::importSoftmaxKernel(&context);

  PassManager pm(&context);
  // Verified below after failures too, where the pass manager would not.
  pm.enableVerifier(false);
  std::string options = ("moves=" + input).str();
  std::string optionsError;
  auto addPass = [&](OpPassManager &passes) {
    return applyPass->addToPipeline(passes, options, [&](const Twine &message) {
      optionsError += message.str();
      return failure();
    });
  };
  if (failed(addPass(pm))) {
    // llvm::cl prints some refusals itself; parse again (deterministic, and
    // it did not crash the first time) to see them.
    if (optionsError.empty()) {
      OpPassManager scratch("builtin.module");
      optionsError = captureStderr([&] { (void)addPass(scratch); });
    }
    fuzz::require(!optionsError.empty(),
                  "the pass options were refused without a message");
    return 0;
  }

  bool applied = succeeded(pm.run(*module));
  if (!applied)
    diagnostics.requireLocatedError("pd-apply");
  fuzz::require(succeeded(verify(*module)),
                "the kernel does not verify after pd-apply:\n" +
                    diagnostics.getLog());
  if (!applied)
    return 0;
  fuzz::require(diagnostics.getNumErrors() == 0,
                "pd-apply succeeded after an error:\n" + diagnostics.getLog());

  std::string text;
  llvm::raw_string_ostream os(text);
  fuzz::require(succeeded(exportTextForm(module->getOperation(), os)),
                "the transformed kernel does not export:\n" +
                    diagnostics.getLog());
  fuzz::require(
      static_cast<bool>(importTextForm(text, "exported.pd", &context)),
      "the exported text does not import:\n" + text + "\n" +
          diagnostics.getLog());

  KernelOp kernel = *module->getOps<KernelOp>().begin();
  auto history = kernel->getAttrOfType<ArrayAttr>(kHistoryAttrName);
  if (!history)
    return 0;
  IRRewriter rewriter(&context);
  std::string reason;
  fuzz::require(succeeded(undoMove(rewriter, kernel, history.size(), reason)),
                "undoing the last of the applied moves fails: " + reason);
  return 0;
}
