//===- InitAllPerfDojo.cpp - Register everything PerfDojo provides --------===//

#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Conversion/GPU/Passes.h"
#include "PerfDojo/Conversion/Linalg/Passes.h"
#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Search/Interpreter/Passes.h"
#include "PerfDojo/Transforms/Move.h"
#include "PerfDojo/Transforms/MoveOps.h"
#include "PerfDojo/Transforms/Passes.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/IR/DialectRegistry.h"

void mlir::registerAllPerfDojo(DialectRegistry &registry) {
  // The host code around kernels, and the linalg input of
  // convert-linalg-to-perfdojo, must parse in every tool.
  registry.insert<perfdojo::PerfDojoDialect, func::FuncDialect,
                  arith::ArithDialect, cf::ControlFlowDialect,
                  linalg::LinalgDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect,
                  tensor::TensorDialect, transform::TransformDialect>();
  // The moves as transform ops (transform.perfdojo.<move>).
  perfdojo::registerMoveTransformOps(registry);
}

void mlir::registerAllPerfDojoPasses() {
  perfdojo::registerAllMoves();
  perfdojo::registerPerfDojoTransformsPasses();
  perfdojo::registerPerfDojoSearchPasses();
  perfdojo::registerLoweringPasses();
  perfdojo::registerGPULoweringPasses();
  perfdojo::registerPerfDojoLinalgPasses();
}
