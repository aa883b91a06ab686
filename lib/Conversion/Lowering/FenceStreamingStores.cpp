//===- FenceStreamingStores.cpp - Order non-temporal stores ---------------===//
//
// x86 non-temporal stores bypass the store order that ordinary stores keep:
// a thread's later ordinary store (such as the flag of an OpenMP barrier)
// can become visible before them. A sequentially consistent fence drains
// them. One per thread at the end of each parallel region, and one before
// returning, is enough for the caller to read every streamed output.
//
// On x86 that fence is `sfence`: LLVM implements `fence seq_cst` with a
// locked instruction, which AMD documents as not ordering non-temporal
// stores. Elsewhere (the lowering compiles for the host) it is a
// sequentially consistent `llvm.fence`.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_FENCESTREAMINGSTORES
#include "PerfDojo/Conversion/Lowering/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

using namespace mlir;

static bool holdsStreamingStore(Operation *op) {
  return op
      ->walk([](vector::StoreOp store) {
        return store.getNontemporal() ? WalkResult::interrupt()
                                      : WalkResult::advance();
      })
      .wasInterrupted();
}

static constexpr llvm::StringLiteral kSfence = "llvm.x86.sse.sfence";

bool mlir::perfdojo::isStreamingStoreFence(Operation *op) {
  if (isa<LLVM::FenceOp>(op))
    return true;
  auto call = dyn_cast<LLVM::CallIntrinsicOp>(op);
  return call && call.getIntrin() == kSfence;
}

static void fenceBefore(Operation *op) {
  OpBuilder b(op);
  static const bool x86 =
      llvm::Triple(llvm::sys::getProcessTriple()).isX86();
  if (x86)
    LLVM::CallIntrinsicOp::create(b, op->getLoc(), b.getStringAttr(kSfence),
                                  ValueRange{});
  else
    LLVM::FenceOp::create(b, op->getLoc(), LLVM::AtomicOrdering::seq_cst);
}

namespace {
struct FenceStreamingStoresPass
    : public perfdojo::impl::FenceStreamingStoresBase<
          FenceStreamingStoresPass> {
  void runOnOperation() override {
    getOperation().walk([](func::FuncOp func) {
      if (!holdsStreamingStore(func))
        return;
      func.walk([](omp::ParallelOp parallel) {
        if (holdsStreamingStore(parallel))
          fenceBefore(parallel.getRegion().back().getTerminator());
      });
      func.walk([](func::ReturnOp ret) { fenceBefore(ret); });
    });
  }
};
} // namespace
