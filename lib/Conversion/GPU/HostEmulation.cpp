//===- HostEmulation.cpp - gpu.func kernels as host functions -------------===//
//
// For the GPU emulator: a kernel becomes a function of (arguments, shared
// memory, block, thread) that the emulator calls once per thread, with the
// threads of a block running concurrently and meeting at real barriers.
// A warp shuffle becomes a call that exchanges the lanes' words through
// the block.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/GPU/Passes.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/IR/IRMapping.h"

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_EMULATEGPUONHOST
#include "PerfDojo/Conversion/GPU/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

using namespace mlir;
using namespace mlir::perfdojo;

/// `type` in the default memory space.
static MemRefType onHost(Type type) {
  auto memref = cast<MemRefType>(type);
  return MemRefType::get(memref.getShape(), memref.getElementType(),
                         memref.getLayout());
}

namespace {
struct EmulateGPUOnHostPass
    : public perfdojo::impl::EmulateGPUOnHostBase<EmulateGPUOnHostPass> {
  void runOnOperation() override;
  LogicalResult convert(gpu::GPUFuncOp kernel, OpBuilder &b);
};
} // namespace

LogicalResult EmulateGPUOnHostPass::convert(gpu::GPUFuncOp kernel,
                                            OpBuilder &b) {
  Location loc = kernel.getLoc();
  MLIRContext *ctx = kernel.getContext();
  SmallVector<Type> inputs;
  for (Type type : kernel.getArgumentTypes())
    inputs.push_back(type);
  for (BlockArgument shared : kernel.getWorkgroupAttributions())
    inputs.push_back(onHost(shared.getType()));
  Type index = b.getIndexType();
  inputs.push_back(index);
  inputs.push_back(index);
  auto func = func::FuncOp::create(b, loc, kernel.getName(),
                                   b.getFunctionType(inputs, {}));
  func->setAttr("llvm.emit_c_interface", UnitAttr::get(ctx));
  Block *entry = func.addEntryBlock();
  OpBuilder body = OpBuilder::atBlockBegin(entry);
  IRMapping mapping;
  Block &old = kernel.getBody().front();
  unsigned numArgs = kernel.getNumArguments();
  for (unsigned i = 0; i < numArgs; ++i)
    mapping.map(old.getArgument(i), entry->getArgument(i));
  for (auto [i, shared] : llvm::enumerate(kernel.getWorkgroupAttributions()))
    mapping.map(shared, entry->getArgument(numArgs + i));
  for (BlockArgument priv : kernel.getPrivateAttributions())
    mapping.map(priv,
                memref::AllocaOp::create(body, loc, onHost(priv.getType()))
                    .getResult());
  Value block = entry->getArgument(inputs.size() - 2);
  Value thread = entry->getArgument(inputs.size() - 1);
  for (Operation &op : old) {
    if (auto id = dyn_cast<gpu::BlockIdOp>(op)) {
      mapping.map(id.getResult(), block);
      continue;
    }
    if (auto id = dyn_cast<gpu::ThreadIdOp>(op)) {
      mapping.map(id.getResult(), thread);
      continue;
    }
    body.clone(op, mapping);
  }
  // What the clone carried over of the GPU: barriers, the return, ids in
  // nested regions.
  WalkResult result = func.walk([&](Operation *op) {
    OpBuilder at(op);
    if (isa<gpu::BarrierOp>(op)) {
      func::CallOp::create(at, op->getLoc(), "perfdojo_gpu_barrier",
                           TypeRange());
      op->erase();
    } else if (auto shuffle = dyn_cast<gpu::ShuffleOp>(op)) {
      // The emulator exchanges the lanes' words through the block (every
      // thread of the block reaches a shuffle: the lowering's uniform walk).
      Type i32 = at.getI32Type();
      if (shuffle.getMode() != gpu::ShuffleMode::XOR ||
          shuffle.getValue().getType() != i32) {
        op->emitError("the GPU emulator shuffles only 32-bit words by xor");
        return WalkResult::interrupt();
      }
      Value other =
          func::CallOp::create(
              at, op->getLoc(), "perfdojo_gpu_shuffle_xor", TypeRange{i32},
              ValueRange{shuffle.getValue(), shuffle.getOffset()})
              .getResult(0);
      shuffle.getShuffleResult().replaceAllUsesWith(other);
      shuffle.getValid().replaceAllUsesWith(
          arith::ConstantOp::create(at, op->getLoc(), at.getBoolAttr(true))
              .getResult());
      op->erase();
    } else if (isa<gpu::ReturnOp>(op)) {
      func::ReturnOp::create(at, op->getLoc());
      op->erase();
    } else if (isa<gpu::BlockIdOp>(op)) {
      op->getResult(0).replaceAllUsesWith(block);
      op->erase();
    } else if (isa<gpu::ThreadIdOp>(op)) {
      op->getResult(0).replaceAllUsesWith(thread);
      op->erase();
    } else if (op->getDialect() && op->getDialect()->getNamespace() == "gpu") {
      op->emitError("the GPU emulator has no rule for this operation");
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return failure(result.wasInterrupted());
}

void EmulateGPUOnHostPass::runOnOperation() {
  ModuleOp module = getOperation();
  OpBuilder b = OpBuilder::atBlockEnd(module.getBody());
  SmallVector<gpu::GPUModuleOp> gpuModules(module.getOps<gpu::GPUModuleOp>());
  if (gpuModules.empty())
    return;
  for (gpu::GPUModuleOp gpuModule : gpuModules)
    for (auto kernel : gpuModule.getOps<gpu::GPUFuncOp>())
      if (failed(convert(kernel, b)))
        return signalPassFailure();
  // The barrier the emulator provides.
  auto barrier = func::FuncOp::create(
      b, module.getLoc(), "perfdojo_gpu_barrier", b.getFunctionType({}, {}));
  barrier.setPrivate();
  // The shuffle it provides: a lane's 32-bit word for another's.
  Type i32 = b.getI32Type();
  auto shuffle =
      func::FuncOp::create(b, module.getLoc(), "perfdojo_gpu_shuffle_xor",
                           b.getFunctionType({i32, i32}, {i32}));
  shuffle.setPrivate();
  // The host functions that launched the kernels.
  SmallVector<func::FuncOp> launchers;
  for (auto func : module.getOps<func::FuncOp>())
    if (func.walk([](gpu::LaunchFuncOp) { return WalkResult::interrupt(); })
            .wasInterrupted())
      launchers.push_back(func);
  for (func::FuncOp func : launchers)
    func.erase();
  for (gpu::GPUModuleOp gpuModule : gpuModules)
    gpuModule.erase();
  module->removeAttr(gpu::GPUDialect::getContainerModuleAttrName());
}
