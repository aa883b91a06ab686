//===- Pipeline.cpp - pd-lower-to-llvm ------------------------------------===//

#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

void mlir::perfdojo::buildLowerToLLVMPipeline(OpPassManager &pm) {
  pm.addPass(createConvertPerfDojoToStandard());
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  // Inlines the memref.alloca_scope that scf-to-openmp wraps around each
  // parallel body (it holds no alloca: temporaries are allocated up front),
  // which must not end up with several blocks after scf-to-cf.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createConvertVectorToSCFPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertOpenMPToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
}

void mlir::perfdojo::registerLoweringPasses() {
  registerPerfDojoLoweringPasses();
  PassPipelineRegistration<>(
      "pd-lower-to-llvm",
      "Lower perfdojo kernels to the LLVM dialect for the CPU (OpenMP for "
      "parallel scopes)",
      buildLowerToLLVMPipeline);
}
