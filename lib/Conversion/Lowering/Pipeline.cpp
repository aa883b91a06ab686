//===- Pipeline.cpp - pd-lower-to-llvm ------------------------------------===//

#include "PerfDojo/Conversion/Lowering/DeviceMath.h"
#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Support/DiagnosticText.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"
#include "mlir/Transforms/Passes.h"

using namespace mlir;

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_APPROXIMATEMATHPASS
#include "PerfDojo/Conversion/Lowering/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

namespace {
/// Replaces f32 math functions by arithmetic (a few ulp), which vectorizes
/// and needs no math library: instead of one libm call per lane on the
/// CPU, and of device library calls a GPU could not resolve.
struct ApproximateMathPass
    : public perfdojo::impl::ApproximateMathPassBase<ApproximateMathPass> {
  using ApproximateMathPassBase::ApproximateMathPassBase;
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    // Into exp, expm1, log, log1p and sqrt (approximated below).
    perfdojo::populateDeviceMathPatterns(patterns);
    if (exp2Instruction)
      perfdojo::populateExpByExp2Patterns(patterns);
    else if (scalefExp)
      perfdojo::populateExpByScalefPatterns(patterns);
    math::populateExpansionPatterns(patterns, {"powf"});
    populateMathPolynomialApproximationPatterns(
        patterns, [&](StringRef name) { // full operation names
          if (name == "math.exp")
            return !exp2Instruction && !scalefExp;
          return llvm::is_contained({"math.log", "math.tanh", "math.erf",
                                     "math.atan", "math.asin", "math.acos",
                                     "math.log1p", "math.expm1"},
                                    name);
        });
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};
} // namespace

void mlir::perfdojo::buildLowerToLLVMPipeline(
    OpPassManager &pm, const LowerToLLVMOptions &options) {
  ConvertPerfDojoToStandardOptions lowering;
  lowering.streamingMinBytes = options.streamingMinBytes;
  lowering.fpContract = options.fpContract;
  lowering.prefetchRows = options.prefetchRows;
  lowering.prefetchAhead = options.prefetchAhead;
  lowering.reciprocalDivide = options.reciprocalDivide;
  pm.addPass(createConvertPerfDojoToStandard(lowering));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  pm.addPass(createConvertSCFToOpenMPPass());
  pm.addPass(createFenceStreamingStores());
  // Inlines the memref.alloca_scope that scf-to-openmp wraps around each
  // parallel body (it holds no alloca: temporaries are allocated up front),
  // which must not end up with several blocks after scf-to-cf. The math
  // comes after: an llvm.call_intrinsic (exp's llvm.ldexp) has unknown
  // effects, and an alloca_scope holding one stays.
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createElideLoopBarriers());
  perfdojo::ApproximateMathPassOptions math;
  math.scalefExp = options.scalefExp;
  pm.addPass(createApproximateMathPass(math));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
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
  pm.addPass(createGuardPartialVectorSlots());
}

OwningOpRef<ModuleOp>
mlir::perfdojo::lowerKernelToLLVM(KernelOp kernel,
                                  const LowerToLLVMOptions &options,
                                  std::string &error) {
  MLIRContext *ctx = kernel.getContext();
  OwningOpRef<ModuleOp> module = ModuleOp::create(kernel.getLoc());
  module->getBody()->push_back(kernel->clone());
  DiagnosticText diagnostics(ctx);
  PassManager pm(ctx, ModuleOp::getOperationName());
  buildLowerToLLVMPipeline(pm, options);
  if (failed(pm.run(*module))) {
    error = "lowering failed: " + diagnostics.str();
    return nullptr;
  }
  return module;
}

void mlir::perfdojo::registerLoweringPasses() {
  registerPerfDojoLoweringPasses();
  PassPipelineRegistration<LowerToLLVMOptions>(
      "pd-lower-to-llvm",
      "Lower perfdojo kernels to the LLVM dialect for the CPU (OpenMP for "
      "parallel scopes)",
      buildLowerToLLVMPipeline);
}
