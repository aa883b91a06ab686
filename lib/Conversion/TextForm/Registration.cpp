//===- Registration.cpp - mlir-translate registrations for the text form --===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Support/InputChecks.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::perfdojo;

void mlir::perfdojo::registerTextFormTranslations(
    std::function<void(DialectRegistry &)> hostDialects) {
  TranslateToMLIRRegistration importPd(
      "import-pd", "import the PerfDojo text form into the perfdojo dialect",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *context) {
        // Diagnostics point at text-form lines; the generic form of the
        // failing op would only repeat them.
        context->printOpOnDiagnostic(false);
        return OwningOpRef<Operation *>(
            importTextForm(sourceMgr, context).release());
      });
  // A raw translation, so that the input is checked for absurd nesting
  // before MLIR's recursive parser reads it.
  TranslateRegistration exportPd(
      "export-pd", "export perfdojo kernels in the PerfDojo text form",
      [hostDialects](const std::shared_ptr<llvm::SourceMgr> &sourceMgr,
         raw_ostream &output, MLIRContext *context) -> LogicalResult {
        const llvm::MemoryBuffer *buffer =
            sourceMgr->getMemoryBuffer(sourceMgr->getMainFileID());
        if (std::optional<std::string> tooDeep = checkInputNesting(
                buffer->getBuffer(), buffer->getBufferIdentifier())) {
          llvm::errs() << *tooDeep << "\n";
          return failure();
        }
        if (hostDialects) {
          DialectRegistry registry;
          hostDialects(registry);
          context->appendDialectRegistry(registry);
        }
        context->loadDialect<PerfDojoDialect>();
        context->printOpOnDiagnostic(false);
        OwningOpRef<ModuleOp> module =
            parseSourceFile<ModuleOp>(*sourceMgr, ParserConfig(context));
        if (!module)
          return failure();
        return exportTextForm(module->getOperation(), output);
      });
}
