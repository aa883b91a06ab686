//===- MoveStepsBench.cpp - Enumerate+apply steps per second --------------===//
//
// The speed of the game environment: one step enumerates every legal move
// of the current kernel and applies one of them, chosen uniformly with a
// fixed seed; every 30 steps the walk restarts from the original kernel (a
// clone), as the random-walk test and the search do. Reported as
// items_per_second (steps/s).
//
//   build/bin/pd-bench-moves [--benchmark_filter=softmax]
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Transforms/Move.h"
#include "mlir/IR/MLIRContext.h"
#include "llvm/Support/MemoryBuffer.h"
#include "benchmark/benchmark.h"
#include <random>

using namespace mlir;
using namespace mlir::perfdojo;

static void runSteps(benchmark::State &state, const char *file) {
  registerAllMoves();
  MLIRContext ctx;
  std::string path = std::string(PERFDOJO_KERNELS_DIR) + "/" + file;
  auto buffer = llvm::MemoryBuffer::getFile(path);
  if (!buffer) {
    state.SkipWithError(("cannot read " + path).c_str());
    return;
  }
  OwningOpRef<ModuleOp> original =
      importTextForm((*buffer)->getBuffer(), path, &ctx);
  if (!original) {
    state.SkipWithError("the kernel does not import");
    return;
  }
  std::mt19937_64 rng(42);
  IRRewriter rewriter(&ctx);
  OwningOpRef<ModuleOp> current;
  unsigned step = 30;
  int64_t legalMoves = 0;
  for (auto _ : state) {
    if (step == 30) {
      current = original->clone();
      step = 0;
    }
    KernelOp kernel = *current->getOps<KernelOp>().begin();
    SmallVector<MoveInstance> moves = enumerateMoves(kernel);
    legalMoves += moves.size();
    if (moves.empty()) {
      step = 30;
      continue;
    }
    std::string reason;
    const MoveInstance &move = moves[rng() % moves.size()];
    if (failed(applyMove(rewriter, kernel, move, reason))) {
      state.SkipWithError(("a listed move was refused: " + reason).c_str());
      return;
    }
    ++step;
  }
  state.SetItemsProcessed(state.iterations());
  state.counters["legal_moves_per_step"] = benchmark::Counter(
      double(legalMoves) / double(std::max<int64_t>(state.iterations(), 1)));
}

static void BM_StepsSoftmax(benchmark::State &state) {
  runSteps(state, "softmax.pd");
}
static void BM_StepsMatmul(benchmark::State &state) {
  runSteps(state, "matmul.pd");
}
BENCHMARK(BM_StepsSoftmax)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_StepsMatmul)->Unit(benchmark::kMicrosecond);

BENCHMARK_MAIN();
