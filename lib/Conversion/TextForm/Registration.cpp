//===- Registration.cpp - mlir-translate registrations for the text form --===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/Tools/mlir-translate/Translation.h"
#include "llvm/Support/SourceMgr.h"

using namespace mlir;
using namespace mlir::perfdojo;

void mlir::perfdojo::registerTextFormTranslations() {
  TranslateToMLIRRegistration importPd(
      "import-pd", "import the PerfDojo text form into the perfdojo dialect",
      [](llvm::SourceMgr &sourceMgr, MLIRContext *context) {
        return OwningOpRef<Operation *>(
            importTextForm(sourceMgr, context).release());
      });
  TranslateFromMLIRRegistration exportPd(
      "export-pd", "export perfdojo kernels in the PerfDojo text form",
      [](Operation *op, raw_ostream &output) {
        return exportTextForm(op, output);
      },
      [](DialectRegistry &registry) {
        registry.insert<PerfDojoDialect>();
      });
}
