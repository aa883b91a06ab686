//===- KernelFile.cpp - Kernels from .pd or .mlir files -------------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Support/InputChecks.h"
#include "mlir/Parser/Parser.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::perfdojo;

OwningOpRef<ModuleOp> mlir::perfdojo::parseKernelFile(
    llvm::SourceMgr &sourceMgr, StringRef path, StringRef format,
    MLIRContext *context, std::string &error) {
  std::string chosen = format.str();
  if (chosen.empty())
    chosen = path.ends_with(".mlir") ? "mlir" : "pd";
  if (chosen == "pd")
    return importTextForm(sourceMgr, context);
  if (chosen != "mlir") {
    error = "unknown input format '" + chosen + "'; expected 'pd' or 'mlir'";
    return nullptr;
  }
  const llvm::MemoryBuffer *buffer =
      sourceMgr.getMemoryBuffer(sourceMgr.getMainFileID());
  if (std::optional<std::string> tooDeep = checkInputNesting(
          buffer->getBuffer(), buffer->getBufferIdentifier())) {
    error = *tooDeep;
    return nullptr;
  }
  return parseSourceFile<ModuleOp>(sourceMgr, context);
}
