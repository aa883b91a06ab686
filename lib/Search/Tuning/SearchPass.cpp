//===- SearchPass.cpp - pd-search: tuning as a pass -----------------------===//
//
// `pd-opt --pd-search=anneal` (or `--pd-search="strategy=anneal budget=200"`)
// runs a strategy of pd-tune on every kernel of the module and leaves the
// best program found in its place, the moves recorded in its history (so
// `--pd-undo` and replays work as after `--pd-apply`), with a remark
// summarizing the search.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Search/Tuning/Search.h"
#include "PerfDojo/Search/Tuning/SearchPass.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/Format.h"

using namespace mlir;
using namespace mlir::perfdojo;

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_SEARCHPASS
#include "PerfDojo/Search/Tuning/SearchPass.h.inc"
} // namespace perfdojo
} // namespace mlir

namespace {
struct SearchPass : public perfdojo::impl::SearchPassBase<SearchPass> {
  using SearchPassBase::SearchPassBase;

  void runOnOperation() override {
    std::optional<Strategy> chosen = parseStrategy(strategy);
    std::optional<Strategy> start = parseStrategy(startFrom);
    if (!chosen || !start || *start == Strategy::Random ||
        *start == Strategy::Anneal || *start == Strategy::RL ||
        (graph != "edges" && graph != "sequences")) {
      getOperation().emitError()
          << "pd-search: unknown strategy '" << strategy << "', graph '"
          << graph << "' or start-from '" << startFrom << "'";
      return signalPassFailure();
    }
    if (policyRank != "gain" && policyRank != "value") {
      getOperation().emitError() << "pd-search: unknown policy-rank '"
                                 << policyRank << "'; expected gain or value";
      return signalPassFailure();
    }
    if ((*chosen == Strategy::RL) != !policy.empty()) {
      getOperation().emitError()
          << "pd-search: " << (policy.empty()
                                   ? "strategy rl needs policy=FILE"
                                   : "policy=FILE is for strategy rl");
      return signalPassFailure();
    }
    if (!(explore >= 0 && explore <= 1)) {
      std::string value;
      llvm::raw_string_ostream(value) << llvm::format("%g", double(explore));
      getOperation().emitError()
          << "pd-search: explore=" << value
          << " is not a share between 0 and 1";
      return signalPassFailure();
    }
    std::unique_ptr<TuningDatabase> database;
    if (!db.empty()) {
      std::string error;
      database = TuningDatabase::open(db, error);
      if (!database) {
        getOperation().emitError() << "pd-search: " << error;
        return signalPassFailure();
      }
    }
    registerAllMoves();
    SmallVector<KernelOp> kernels(getOperation().getOps<KernelOp>());
    for (KernelOp kernel : kernels)
      if (failed(tune(kernel, *chosen, *start, database.get())))
        return signalPassFailure();
  }

  LogicalResult tune(KernelOp kernel, Strategy chosen, Strategy start,
                     TuningDatabase *database) {
    if (database) {
      std::string text, error;
      llvm::raw_string_ostream os(text);
      if (failed(exportTextForm(kernel, os)))
        return failure();
      if (failed(database->setKey(
              {text, getHostTarget(threads), getToolchain()}, error)))
        return kernel.emitError() << "pd-search: " << error;
    }
    EnvironmentOptions envOptions;
    envOptions.evaluation.threads = threads;
    envOptions.evaluation.repetitions = repetitions;
    envOptions.tolerance = tolerance;
    envOptions.database = database;
    Environment env(kernel, envOptions);
    SearchOptions options;
    options.strategy = chosen;
    options.graph = graph == "sequences" ? SearchGraph::Sequences
                                         : SearchGraph::Edges;
    // A policy plays from the naive program it was trained on, unless
    // told otherwise.
    options.startFrom =
        chosen == Strategy::RL && startFrom.getNumOccurrences() == 0
            ? Strategy::Naive
            : start;
    options.policyPath = policy;
    options.horizon = horizon;
    options.explore = explore;
    options.adaptiveExplore = adaptiveExplore;
    options.policyRank =
        policyRank == "value" ? PolicyRank::Value : PolicyRank::Gain;
    options.policyUpdates = policyUpdates;
    std::optional<TargetInfo> cpu = getCPUTarget(threads, vectorWidth);
    if (!cpu)
      return kernel.emitError()
             << "pd-search: vector-width=" << vectorWidth
             << " is not a CPU's vector width (16, 8 or 4; 0 for this CPU's)";
    options.target = *cpu;
    options.budget = budget;
    options.timeBudget = timeBudget;
    options.seed = seed;
    options.allowSlower = allowSlower;
    SearchResult result = runSearch(env, options);
    if (!result.error.empty())
      return kernel.emitError() << "pd-search: " << result.error;
    IRRewriter rewriter(kernel.getContext());
    for (const std::string &text : result.bestMoves) {
      std::string reason;
      FailureOr<MoveInstance> move = parseMove(text, reason);
      if (failed(move) ||
          failed(applyMove(rewriter, kernel, *move, reason)))
        return kernel.emitError()
               << "pd-search: the best sequence does not replay at '" << text
               << "': " << reason;
    }
    std::string summary;
    llvm::raw_string_ostream os(summary);
    os << "pd-search " << strategy << ": " << result.evaluations
       << " evaluations, "
       << llvm::format("%.4g", result.start.seconds * 1e3) << " ms -> "
       << llvm::format("%.4g", result.best.seconds * 1e3) << " ms ("
       << result.bestMoves.size() << " moves)";
    if (!result.keptStart.empty())
      os << "; " << result.keptStart;
    kernel.emitRemark() << summary;
    return success();
  }
};
} // namespace
