//===- InitAllPerfDojo.cpp - Register everything PerfDojo provides --------===//

#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Conversion/GPU/Passes.h"
#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Search/Passes.h"
#include "PerfDojo/Transforms/Move.h"
#include "PerfDojo/Transforms/MoveOps.h"
#include "PerfDojo/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::registerAllPerfDojo(DialectRegistry &registry) {
  registry.insert<perfdojo::PerfDojoDialect, func::FuncDialect,
                  transform::TransformDialect>();
  // The moves as transform ops (transform.perfdojo.<move>).
  perfdojo::registerMoveTransformOps(registry);
}

void mlir::registerAllPerfDojoPasses() {
  perfdojo::registerAllMoves();
  perfdojo::registerPerfDojoTransformsPasses();
  perfdojo::registerPerfDojoSearchPasses();
  perfdojo::registerLoweringPasses();
  perfdojo::registerGPULoweringPasses();
}
