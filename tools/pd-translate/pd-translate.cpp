//===- pd-translate.cpp - PerfDojo text form translator -------------------===//
//
// `--import-pd` reads the text form and prints the perfdojo dialect;
// `--export-pd` reads MLIR and prints the text form (of the kernels of a
// module that may hold host code too).
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Support/ToolMain.h"
#include "mlir/Tools/mlir-translate/MlirTranslateMain.h"

int main(int argc, char **argv) {
  std::vector<char *> args;
  argv = mlir::perfdojo::withoutOpOnDiagnostic(argc, argv, args);
  // Kernels among host code (convert-linalg-to-perfdojo) export too.
  mlir::perfdojo::registerTextFormTranslations(mlir::registerAllPerfDojo);
  return mlir::perfdojo::runWithLargeStack([&] {
    return mlir::failed(
        mlir::mlirTranslateMain(argc, argv, "PerfDojo text form translator"));
  });
}
