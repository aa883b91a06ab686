//===- ElideLoopBarriers.cpp - One barrier per parallel region ------------===//
//
// `convert-scf-to-openmp` turns each parallel scope into an `omp.parallel`
// region holding one `omp.wsloop`. A worksharing loop ends with a barrier
// unless it is `nowait`, and the region ends with the join's barrier: two
// barriers where one orders everything. Where nothing in the region after
// the loop reads memory (only the fence of FenceStreamingStores and the
// terminator follow it) and the loop has no reduction clause, the loop's
// barrier is redundant, and the loop becomes `nowait`.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "mlir/Dialect/OpenMP/OpenMPDialect.h"

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_ELIDELOOPBARRIERS
#include "PerfDojo/Conversion/Lowering/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

using namespace mlir;

/// Whether `op`, after a worksharing loop in its parallel region, lets the
/// threads run on to the join without waiting for each other: the
/// region's terminator, or the streaming-store fence (which orders a
/// thread's own stores).
static bool needsNoBarrier(Operation *op) {
  return isa<omp::TerminatorOp>(op) || perfdojo::isStreamingStoreFence(op);
}

namespace {
struct ElideLoopBarriersPass
    : public perfdojo::impl::ElideLoopBarriersBase<ElideLoopBarriersPass> {
  void runOnOperation() override {
    getOperation()->walk([](omp::WsloopOp loop) {
      auto parallel = dyn_cast<omp::ParallelOp>(loop->getParentOp());
      if (!parallel || !loop.getReductionVars().empty() || loop.getNowait())
        return;
      for (Operation *next = loop->getNextNode(); next;
           next = next->getNextNode())
        if (!needsNoBarrier(next))
          return;
      loop.setNowait(true);
    });
  }
};
} // namespace
