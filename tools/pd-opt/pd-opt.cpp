//===- pd-opt.cpp - PerfDojo optimizer driver -----------------------------===//
//
// mlir-opt with the perfdojo dialect and every PerfDojo pass registered.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/InitAllPerfDojo.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"

int main(int argc, char **argv) {
  mlir::registerAllPerfDojoPasses();
  mlir::DialectRegistry registry;
  mlir::registerAllPerfDojo(registry);
  return mlir::asMainReturnCode(
      mlir::MlirOptMain(argc, argv, "PerfDojo optimizer driver\n", registry));
}
