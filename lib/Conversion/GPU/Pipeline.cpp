//===- Pipeline.cpp - pd-lower-to-nvvm and pd-lower-to-rocdl --------------===//

#include "PerfDojo/Conversion/GPU/Passes.h"
#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/GPU/Transforms/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/ADT/StringSwitch.h"

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_CHECKGPUEXTERNALS
#define GEN_PASS_DEF_GPUDEVICEFUNCTIONS
#include "PerfDojo/Conversion/GPU/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

using namespace mlir;

#ifndef PERFDOJO_ROCM_TOOLKIT
#define PERFDOJO_ROCM_TOOLKIT ""
#endif

namespace {
/// What a device library function computes, by its name in libdevice
/// (`__nv_sqrtf`, `__nv_sqrt`) and ocml (`__ocml_sqrt_f32`).
enum class DeviceFunction {
  Sqrt,
  Rsqrt,
  Floor,
  Ceil,
  RoundEven,
  Fma,
  Fabs,
  CopySign
};

static std::optional<DeviceFunction> classifyDeviceFunction(StringRef name) {
  StringRef base;
  if (name.consume_front("__nv_")) {
    // f32 functions end in 'f' (__nv_sqrtf); f64 ones do not.
    base = name;
    if (base != "floorf" && base != "floor" && base.ends_with("f"))
      base = base.drop_back();
    if (base == "floorf")
      base = "floor";
  } else if (name.consume_front("__ocml_")) {
    if (!name.consume_back("_f32") && !name.consume_back("_f64"))
      return std::nullopt;
    base = name;
  } else {
    return std::nullopt;
  }
  return llvm::StringSwitch<std::optional<DeviceFunction>>(base)
      .Case("sqrt", DeviceFunction::Sqrt)
      .Case("rsqrt", DeviceFunction::Rsqrt)
      .Case("floor", DeviceFunction::Floor)
      .Case("ceil", DeviceFunction::Ceil)
      .Case("rint", DeviceFunction::RoundEven)
      .Case("fma", DeviceFunction::Fma)
      .Case("fabs", DeviceFunction::Fabs)
      .Case("copysign", DeviceFunction::CopySign)
      .Default(std::nullopt);
}

struct GPUDeviceFunctionsPass
    : public perfdojo::impl::GPUDeviceFunctionsBase<GPUDeviceFunctionsPass> {
  void runOnOperation() override {
    for (auto func : getOperation().getOps<LLVM::LLVMFuncOp>()) {
      if (!func.isExternal())
        continue;
      std::optional<DeviceFunction> kind =
          classifyDeviceFunction(func.getSymName());
      if (!kind)
        continue;
      LLVM::LLVMFunctionType type = func.getFunctionType();
      Type result = type.getReturnType();
      unsigned arity = *kind == DeviceFunction::Fma        ? 3
                       : *kind == DeviceFunction::CopySign ? 2
                                                           : 1;
      if (!isa<FloatType>(result) || type.getNumParams() != arity ||
          llvm::any_of(type.getParams(),
                       [&](Type param) { return param != result; }))
        continue;
      OpBuilder b(&getContext());
      Block *entry = func.addEntryBlock(b);
      b.setInsertionPointToStart(entry);
      Location loc = func.getLoc();
      ValueRange args = entry->getArguments();
      Value value;
      switch (*kind) {
      case DeviceFunction::Sqrt:
        value = LLVM::SqrtOp::create(b, loc, result, args[0]);
        break;
      case DeviceFunction::Rsqrt: {
        Value one = LLVM::ConstantOp::create(b, loc, result,
                                             b.getFloatAttr(result, 1.0));
        Value root = LLVM::SqrtOp::create(b, loc, result, args[0]);
        value = LLVM::FDivOp::create(b, loc, one, root);
        break;
      }
      case DeviceFunction::Floor:
        value = LLVM::FFloorOp::create(b, loc, result, args[0]);
        break;
      case DeviceFunction::Ceil:
        value = LLVM::FCeilOp::create(b, loc, result, args[0]);
        break;
      case DeviceFunction::RoundEven:
        value = LLVM::RoundEvenOp::create(b, loc, result, args[0]);
        break;
      case DeviceFunction::Fma:
        value = LLVM::FMAOp::create(b, loc, result, args[0], args[1], args[2]);
        break;
      case DeviceFunction::Fabs:
        value = LLVM::FAbsOp::create(b, loc, result, args[0]);
        break;
      case DeviceFunction::CopySign:
        value = LLVM::CopySignOp::create(b, loc, result, args[0], args[1]);
        break;
      }
      LLVM::ReturnOp::create(b, loc, value);
      // Internal: inlined and gone from the PTX or code object.
      func.setLinkage(LLVM::Linkage::Internal);
    }
  }
};

struct CheckGPUExternalsPass
    : public perfdojo::impl::CheckGPUExternalsBase<CheckGPUExternalsPass> {
  void runOnOperation() override {
    getOperation().walk([&](gpu::GPUModuleOp module) {
      for (auto func : module.getOps<LLVM::LLVMFuncOp>()) {
        if (!func.isExternal())
          continue;
        // The first call names the operation that needs it.
        Operation *caller = nullptr;
        module.walk([&](LLVM::CallOp call) {
          if (call.getCallee() == func.getSymName()) {
            caller = call;
            return WalkResult::interrupt();
          }
          return WalkResult::advance();
        });
        InFlightDiagnostic diag =
            (caller ? caller : func.getOperation())->emitError()
            << "the GPU code calls '" << func.getSymName()
            << "', a device library function that PerfDojo does not link "
               "(libdevice or ocml); no instruction computes this "
               "operation in this type: compute it in f32";
        signalPassFailure();
      }
    });
  }
};
} // namespace

void mlir::perfdojo::buildLowerToGPUPipeline(OpPassManager &pm, GPUApi api,
                                             const LowerToGPUOptions &options) {
  bool cuda = api == GPUApi::Cuda;
  ConvertPerfDojoToGPUOptions lowering;
  lowering.maxThreadsPerBlock = options.maxThreadsPerBlock;
  lowering.maxSharedBytes = options.maxSharedBytes;
  lowering.fpContract = options.fpContract;
  pm.addPass(createConvertPerfDojoToGPU(lowering));
  // f32 functions as arithmetic: no device library needed; on NVPTX, exp
  // from its ex2.approx instruction (LLVM lowers llvm.exp2.f32 to it).
  ApproximateMathPassOptions math;
  math.exp2Instruction = cuda;
  pm.addPass(createApproximateMathPass(math));
  pm.addPass(createCanonicalizerPass());
  pm.addPass(createCSEPass());
  // The kernels, inside each gpu.module: structured control flow to
  // branches, then everything to the NVVM or ROCDL flavour of the LLVM
  // dialect. Buffers are plain pointers (static shapes, identity layouts),
  // which is what the runner passes.
  OpPassManager &device = pm.nest<gpu::GPUModuleOp>();
  device.addPass(createLowerAffinePass());
  device.addPass(createSCFToControlFlowPass());
  if (cuda) {
    ConvertGpuOpsToNVVMOpsOptions nvvm;
    nvvm.useBarePtrCallConv = true;
    device.addPass(createConvertGpuOpsToNVVMOps(nvvm));
  } else {
    ConvertGpuOpsToROCDLOpsOptions rocdl;
    rocdl.useBarePtrCallConv = true;
    rocdl.chipset =
        options.chip.empty() ? std::string("gfx942") : options.chip.getValue();
    device.addPass(createConvertGpuOpsToROCDLOps(rocdl));
  }
  device.addPass(createGPUDeviceFunctions());
  device.addPass(createReconcileUnrealizedCastsPass());
  device.addPass(createCanonicalizerPass());
  device.addPass(createCSEPass());
  // NVPTX's and AMDGPU's -O3 run LLVM's SROA too.
  device.addPass(createGuardPartialVectorSlots());
  pm.addPass(createCheckGPUExternals());
  // The target, then the code: PTX text (the CUDA driver compiles it when
  // it loads the module; no ptxas needed) or an HSACO (linked by ld.lld).
  if (cuda) {
    GpuNVVMAttachTargetOptions target;
    target.chip =
        options.chip.empty() ? std::string("sm_90") : options.chip.getValue();
    target.features = options.features.empty() ? std::string("+ptx80")
                                               : options.features.getValue();
    target.optLevel = options.optLevel;
    pm.addPass(createGpuNVVMAttachTarget(target));
  } else {
    GpuROCDLAttachTargetOptions target;
    target.chip =
        options.chip.empty() ? std::string("gfx942") : options.chip.getValue();
    target.features = options.features;
    target.optLevel = options.optLevel;
    pm.addPass(createGpuROCDLAttachTarget(target));
  }
  if (!options.toBinary)
    return;
  GpuModuleToBinaryPassOptions binary;
  binary.compilationTarget = !options.format.empty() ? options.format.getValue()
                             : cuda                  ? std::string("isa")
                                                     : std::string("bin");
  binary.toolkitPath = !options.toolkit.empty() ? options.toolkit.getValue()
                       : cuda                   ? std::string()
                              : std::string(PERFDOJO_ROCM_TOOLKIT);
  pm.addPass(createGpuModuleToBinaryPass(binary));
}

void mlir::perfdojo::registerGPULoweringPasses() {
  registerPerfDojoGPUPasses();
  PassPipelineRegistration<LowerToGPUOptions>(
      "pd-lower-to-nvvm",
      "Lower perfdojo kernels to gpu.func kernels and on to PTX for NVIDIA "
      "GPUs (a gpu.binary; sm_90 by default)",
      [](OpPassManager &pm, const LowerToGPUOptions &options) {
        buildLowerToGPUPipeline(pm, GPUApi::Cuda, options);
      });
  PassPipelineRegistration<LowerToGPUOptions>(
      "pd-lower-to-rocdl",
      "Lower perfdojo kernels to gpu.func kernels and on to an HSACO for "
      "AMD GPUs (a gpu.binary; gfx942 by default)",
      [](OpPassManager &pm, const LowerToGPUOptions &options) {
        buildLowerToGPUPipeline(pm, GPUApi::Hip, options);
      });
}
