//===- pd-opt.cpp - PerfDojo optimizer driver -----------------------------===//
//
// mlir-opt with the perfdojo dialect and every PerfDojo pass registered. The
// input is checked for absurd nesting before MLIR's recursive parser sees it.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/GPU/KernelPackage.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Policy/Agent.h"
#include "PerfDojo/Search/Tuning/SearchPass.h"
#include "PerfDojo/Support/InputChecks.h"
#include "PerfDojo/Support/ToolMain.h"
#include "mlir/Dialect/Transform/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Support/FileUtilities.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/ToolOutputFile.h"

using namespace mlir;

static int runOpt(int argc, char **argv, DialectRegistry &registry) {
  auto [inputFilename, outputFilename] = registerAndParseCLIOptions(
      argc, argv, "PerfDojo optimizer driver\n", registry);
  MlirOptMainConfig config = MlirOptMainConfig::createFromCLOptions();
  // These print and return without reading any input.
  if (config.shouldShowDialects() || config.shouldListPasses())
    return asMainReturnCode(
        MlirOptMain(argc, argv, inputFilename, outputFilename, registry));

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file =
      openInputFile(inputFilename, &error);
  if (!file) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (std::optional<std::string> tooDeep = perfdojo::checkInputNesting(
          file->getBuffer(), file->getBufferIdentifier())) {
    llvm::errs() << *tooDeep << "\n";
    return 1;
  }
  std::unique_ptr<llvm::ToolOutputFile> output =
      openOutputFile(outputFilename, &error);
  if (!output) {
    llvm::errs() << error << "\n";
    return 1;
  }
  if (failed(MlirOptMain(output->os(), std::move(file), registry, config)))
    return 1;
  output->keep();
  return 0;
}

/// `--pd-apply=<moves>` is shorthand for `--pd-apply="moves=<moves>"`,
/// `--pd-undo=<k>` for `--pd-undo="move=<k>"` and `--pd-search=<strategy>`
/// for `--pd-search="strategy=<strategy>"`, the pass option forms that pass
/// pipelines and mlir-opt plugins use.
static void expandApplyShorthand(std::vector<char *> &args,
                                 std::vector<std::string> &storage) {
  storage.reserve(args.size());
  for (char *&arg : args) {
    llvm::StringRef text(arg);
    if (text.consume_front("--pd-apply=") || text.consume_front("-pd-apply=")) {
      if (text.starts_with("moves=") || text.starts_with("moves-file=") ||
          text.starts_with("kernel="))
        continue;
      storage.push_back("--pd-apply=moves=" + text.str());
    } else if (text.consume_front("--pd-undo=") ||
               text.consume_front("-pd-undo=")) {
      if (text.starts_with("move=") || text.starts_with("kernel="))
        continue;
      storage.push_back("--pd-undo=move=" + text.str());
    } else if (text.consume_front("--pd-search=") ||
               text.consume_front("-pd-search=")) {
      if (text.contains('='))
        continue;
      storage.push_back("--pd-search=strategy=" + text.str());
    } else {
      continue;
    }
    arg = storage.back().data();
  }
}

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  std::vector<char *> args;
  argv = perfdojo::withoutOpOnDiagnostic(argc, argv, args);
  std::vector<std::string> expanded;
  expandApplyShorthand(args, expanded);
  registerAllPerfDojoPasses();
  perfdojo::registerSearchPass();
  perfdojo::registerPolicySearch();
  // Transform scripts of moves (pd-export-transform) run in pd-opt too.
  transform::registerTransformPasses();
  DialectRegistry registry;
  registerAllPerfDojo(registry);
  perfdojo::registerGPUTargets(registry);
  return perfdojo::runWithLargeStack(
      [&] { return runOpt(argc, argv, registry); });
}
