//===- Search.cpp - Heuristic passes and search strategies ----------------===//

#include "PerfDojo/Search/Tuning/Search.h"
#include "HeuristicRunner.h"
#include "PerfDojo/Transforms/MoveOps.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/ADT/StringSwitch.h"
#include "llvm/Support/Format.h"
#include "llvm/TargetParser/Host.h"
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::perfdojo::moves;

std::optional<TargetInfo> mlir::perfdojo::getCPUTarget(unsigned threads,
                                                       int64_t vectorWidth) {
  if (vectorWidth == 0) {
    llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
    vectorWidth = features.lookup("avx512f")                          ? 16
                  : features.lookup("avx2") || features.lookup("avx") ? 8
                                                                      : 4;
  }
  if (vectorWidth != 16 && vectorWidth != 8 && vectorWidth != 4)
    return std::nullopt;
  TargetInfo target;
  target.threads = std::max(threads, 1u);
  target.vectorWidth = vectorWidth;
  target.vectorRegisters = vectorWidth == 16 ? 32 : 16;
  return target;
}

std::optional<Strategy> mlir::perfdojo::parseStrategy(StringRef name) {
  return llvm::StringSwitch<std::optional<Strategy>>(name)
      .Case("naive", Strategy::Naive)
      .Case("greedy", Strategy::Greedy)
      .Case("expert", Strategy::Expert)
      .Case("random", Strategy::Random)
      .Case("anneal", Strategy::Anneal)
      .Case("rl", Strategy::RL)
      .Default(std::nullopt);
}

StringRef mlir::perfdojo::stringifyStrategy(Strategy strategy) {
  switch (strategy) {
  case Strategy::Naive:
    return "naive";
  case Strategy::Greedy:
    return "greedy";
  case Strategy::Expert:
    return "expert";
  case Strategy::Random:
    return "random";
  case Strategy::Anneal:
    return "anneal";
  case Strategy::RL:
    return "rl";
  }
  llvm_unreachable("unknown strategy");
}

//===----------------------------------------------------------------------===//
// Heuristics
//===----------------------------------------------------------------------===//

using mlir::perfdojo::heuristics::HeuristicRunner;
using mlir::perfdojo::heuristics::undoTo;

/// The elements the temporaries of `kernel` store, reused dimensions
/// counted as stored (at most 2^62).
static int64_t temporaryElements(KernelOp kernel) {
  int64_t total = 0;
  for (BufferOp buffer : kernel.getBuffers()) {
    if (!buffer.isTemporary())
      continue;
    int64_t count = 1;
    for (unsigned d = 0; d < buffer.getShape().size(); ++d)
      count = std::min<int64_t>(count * buffer.getStoredExtent(d), int64_t(1)
                                                                       << 40);
    total = std::min<int64_t>(total + count, int64_t(1) << 62);
  }
  return total;
}

void mlir::perfdojo::applyHeuristic(Environment &env, Strategy level,
                                    const TargetInfo &target) {
  HeuristicRunner runner(env, target);
  switch (level) {
  case Strategy::Naive:
    runner.naive();
    return;
  case Strategy::Greedy:
    runner.naive();
    runner.vectorize();
    runner.parallelize();
    return;
  case Strategy::Expert: {
    if (target.gpu) {
      runner.gpuExpert();
      return;
    }
    // Recomputing temporaries trades arithmetic for memory: kept only when
    // the program it leads to stores fewer temporary elements (a batch
    // norm's d no longer stored whole, a layernorm's row of d down to
    // vectors), not when both copies stay as large as the one (a
    // log-softmax's row of x - max, which its exp pass keeps anyway).
    size_t start = env.getMoves().size();
    if (!HeuristicRunner(env, target).cpuExpert(/*recompute=*/true))
      return;
    int64_t with = temporaryElements(env.getKernel());
    SmallVector<std::string> recomputed(env.getMoves().drop_front(start));
    undoTo(env, start);
    HeuristicRunner(env, target).cpuExpert(/*recompute=*/false);
    if (temporaryElements(env.getKernel()) <= with)
      return;
    // The first program again, from its moves rather than its rules.
    undoTo(env, start);
    for (const std::string &move : recomputed) {
      std::string reason;
      (void)env.step(move, reason);
    }
    return;
  }
  case Strategy::Random:
  case Strategy::Anneal:
  case Strategy::RL:
    return;
  }
}

//===----------------------------------------------------------------------===//
// Searches
//===----------------------------------------------------------------------===//

namespace {
class Searcher {
public:
  Searcher(Environment &env, const SearchOptions &options)
      : env(env), options(options), rng(options.seed),
        begin(std::chrono::steady_clock::now()) {}

  SearchResult run();

private:
  using Sequence = std::vector<std::string>;

  double elapsed() const {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         begin)
        .count();
  }
  bool exhausted() const {
    return stopped || result.evaluations >= options.budget ||
           (options.timeBudget > 0 && elapsed() >= options.timeBudget) ||
           proposals >= 50 * std::max(options.budget, 1u);
  }
  /// Measures `batch` as one generation and counts each candidate, in
  /// order (updating the best), remembering each as the program of its
  /// state hash in `hashes`. Returns nothing, and stops the search, when
  /// the batch cannot be measured or some results are pending.
  std::optional<std::vector<Measurement>>
  measureGeneration(ArrayRef<Sequence> batch, ArrayRef<std::string> hashes);
  /// Counts one measured candidate reached by `moves`.
  void count(const Sequence &moves, const Measurement &m);
  /// Up to a generation of neighbours of programs `parent()` gives, none
  /// of them a program this search has measured (or proposed in the same
  /// generation). A neighbour measured before costs no evaluation: it is
  /// handed to `onMet` with its time (0 if it failed) and skipped. After
  /// kIdleLimit proposals in a row that met nothing new, the neighbourhood
  /// is exhausted: the search stops and says so. `hashes` receives the
  /// state hash of each neighbour proposed.
  std::vector<Sequence>
  propose(function_ref<const Sequence &()> parent,
          std::vector<std::string> &hashes,
          function_ref<void(const Sequence &, double)> onMet = nullptr);
  /// A random legal move of the current state that the target can run: a
  /// move name uniformly, then one of its instances (a few moves, such as
  /// tile_scope with every divisor, have many more instances than others).
  std::optional<MoveInstance> randomMove();
  /// env's state as a sequence edited at one random point, replayed (moves
  /// that no longer apply after the edit are dropped).
  bool mutateSequence(std::vector<std::string> sequence);
  /// One neighbour of `from` in the chosen graph, left in env.
  bool neighbour(const std::vector<std::string> &from);

  void anneal();
  void sample();
  /// Times the best programs again (SearchOptions::confirmRounds), the
  /// program the search started from always among them, and answers with
  /// the one of the lowest median: a program that won its first timing by
  /// noise does not replace the origin unless it wins again.
  void confirm();
  /// A heuristic's program that measured slower than the starting kernel
  /// is timed again with it, SearchOptions::confirmRounds interleaved
  /// rounds on this CPU, and both keep the median of those rounds' times
  /// (not their first, see confirmBest) before pd-tune decides to keep
  /// the starting kernel: one run of a few
  /// milliseconds can be off by 2x here (a 2x2 average pool's expert
  /// program measured 1.08 ms against the naive kernel's 0.83 once, then
  /// 0.28-0.39 against 0.60-0.78 in three more runs). Returns how many
  /// timings each median took (0: not timed again, for a GPU or a runner,
  /// or every round failed).
  unsigned retimeAgainstStart(const Sequence &program);

  Environment &env;
  const SearchOptions &options;
  std::mt19937_64 rng;
  std::chrono::steady_clock::time_point begin;
  SearchResult result;
  unsigned proposals = 0;
  bool stopped = false;
  /// Every program measured by this search (by state hash), with its time
  /// (0 for a failure).
  llvm::StringMap<double> timeOf;
  /// The moves that reach each program measured correct (by state hash).
  llvm::StringMap<Sequence> sequenceOf;
  /// The state hash of the program the search started from (the starting
  /// kernel, or the heuristic's program).
  std::string originHash;
  /// Proposals in a row that met no new program.
  unsigned idle = 0;
  static constexpr unsigned kIdleLimit = 1000;
};
} // namespace

/// Whether `move` is one `target` can run: GPU mappings and GPU shared
/// memory only on a GPU, CPU parallel scopes only on the CPU (on a GPU a
/// `:p` scope is a grid scope at the top of a kernel and a loop elsewhere,
/// which gpu_grid already covers).
bool mlir::perfdojo::runsOnTarget(const TargetInfo &target,
                                  const MoveInstance &move) {
  StringRef name = move.move->getName();
  if (target.gpu)
    return name != "parallelize";
  if (name.starts_with("gpu_"))
    return false;
  return llvm::none_of(move.location.params,
                       [](const std::string &p) { return p == "shared"; });
}

std::optional<MoveInstance> Searcher::randomMove() {
  SmallVector<MoveInstance> moves = env.getLegalMoves();
  llvm::erase_if(moves, [&](const MoveInstance &m) {
    return !runsOnTarget(options.target, m);
  });
  if (moves.empty())
    return std::nullopt;
  return moves[drawMoveByName(
      moves.size(), [&](size_t i) { return moves[i].move->getName(); }, rng)];
}

size_t mlir::perfdojo::drawMoveByName(size_t count,
                                      function_ref<StringRef(size_t)> nameOf,
                                      std::mt19937_64 &rng) {
  SmallVector<StringRef> names;
  for (size_t i = 0; i < count; ++i)
    if (!llvm::is_contained(names, nameOf(i)))
      names.push_back(nameOf(i));
  StringRef name = names[rng() % names.size()];
  SmallVector<size_t> instances;
  for (size_t i = 0; i < count; ++i)
    if (nameOf(i) == name)
      instances.push_back(i);
  return instances[rng() % instances.size()];
}

std::optional<std::vector<Measurement>>
Searcher::measureGeneration(ArrayRef<Sequence> batch,
                            ArrayRef<std::string> hashes) {
  std::string error;
  FailureOr<std::vector<Measurement>> measured =
      env.measureBatch(batch, error);
  if (failed(measured)) {
    result.error = error;
    stopped = true;
    return std::nullopt;
  }
  result.pending = llvm::count_if(
      *measured, [](const Measurement &m) { return m.pending; });
  if (result.pending) {
    stopped = true;
    return std::nullopt;
  }
  for (auto [moves, hash, m] : llvm::zip(batch, hashes, *measured)) {
    count(moves, m);
    timeOf[hash] = m.ok() ? m.seconds : 0;
    if (m.ok())
      sequenceOf.try_emplace(hash, moves);
  }
  return std::move(*measured);
}

void Searcher::count(const Sequence &moves, const Measurement &m) {
  countCandidate(result, moves, m, env, options, elapsed());
}

void mlir::perfdojo::countCandidate(SearchResult &result,
                                    ArrayRef<std::string> moves,
                                    const Measurement &m, Environment &env,
                                    const SearchOptions &options,
                                    double elapsedSeconds) {
  ++result.evaluations;
  if (!m.ok()) {
    ++result.failures;
    result.lastFailure =
        stringifyEvaluationStatus(m.status).str() + ": " + m.reason;
  } else if (!result.best.ok() || result.best.seconds == 0 ||
             m.seconds < result.best.seconds) {
    result.best = m;
    result.bestMoves.assign(moves.begin(), moves.end());
    // A candidate 3x slower than the best is rejected on its first run.
    env.setSlowSeconds(3 * m.seconds);
  }
  result.trace.push_back(result.best.ok() ? result.best.seconds : 0);
  if (options.onProgress) {
    SearchProgress progress;
    progress.evaluations = result.evaluations;
    progress.budget = options.budget;
    progress.elapsedSeconds = elapsedSeconds;
    progress.bestSeconds = result.best.ok() ? result.best.seconds : 0;
    progress.startSeconds = result.start.ok() ? result.start.seconds : 0;
    progress.lastStatus = stringifyEvaluationStatus(m.status).str();
    options.onProgress(progress);
  }
}

std::vector<Searcher::Sequence>
Searcher::propose(function_ref<const Sequence &()> parent,
                  std::vector<std::string> &hashes,
                  function_ref<void(const Sequence &, double)> onMet) {
  std::vector<Sequence> batch;
  hashes.clear();
  llvm::StringSet<> proposed;
  unsigned size = std::max(options.generation, 1u);
  while (batch.size() < size && !exhausted() &&
         result.evaluations + batch.size() < options.budget) {
    ++proposals;
    bool fresh = false;
    if (neighbour(parent())) {
      Sequence moves(env.getMoves().begin(), env.getMoves().end());
      std::string hash = env.getHash();
      auto known = timeOf.find(hash);
      if (known != timeOf.end()) {
        if (onMet)
          onMet(moves, known->second);
      } else if (proposed.insert(hash).second) {
        batch.push_back(std::move(moves));
        hashes.push_back(std::move(hash));
        fresh = true;
      }
    }
    idle = fresh ? 0 : idle + 1;
    if (idle >= kIdleLimit) {
      stopped = true;
      result.stoppedEarly =
          "the neighbourhood is exhausted: " + std::to_string(kIdleLimit) +
          " proposals in a row met only programs already measured (" +
          std::to_string(timeOf.size()) + " distinct programs measured)";
    }
  }
  return batch;
}

bool Searcher::mutateSequence(std::vector<std::string> sequence) {
  // Insert, delete or replace at a random point.
  size_t point = sequence.empty() ? 0 : rng() % (sequence.size() + 1);
  unsigned kind = sequence.empty() ? 0 : rng() % 3;
  std::string reason;
  env.reset();
  for (size_t i = 0; i < point && i < sequence.size(); ++i)
    if (failed(env.step(sequence[i], reason)))
      return false;
  size_t rest = point;
  if (kind == 1 || kind == 2) { // delete, or replace: drop the move there
    if (point >= sequence.size())
      return false;
    ++rest;
  }
  if (kind == 0 || kind == 2) { // insert, or replace: a new move here
    std::optional<MoveInstance> move = randomMove();
    if (!move || failed(env.step(*move, reason)))
      return false;
  }
  for (size_t i = rest; i < sequence.size(); ++i)
    (void)env.step(sequence[i], reason); // dropped if it no longer applies
  return true;
}

bool Searcher::neighbour(const std::vector<std::string> &from) {
  if (options.graph == SearchGraph::Sequences)
    return mutateSequence(from);
  std::string reason;
  if (failed(env.replay(from, reason)))
    return false;
  std::optional<MoveInstance> move = randomMove();
  return move && succeeded(env.step(*move, reason));
}

void Searcher::anneal() {
  Sequence current = result.bestMoves;
  double currentCost = std::log(result.best.seconds);
  std::uniform_real_distribution<double> unit(0, 1);
  unsigned budget = std::max(options.budget, 1u);
  // The Metropolis decision for moving to `moves`, which runs in `seconds`
  // (0: it failed).
  auto decide = [&](const Sequence &moves, double seconds) {
    if (seconds <= 0)
      return;
    double progress = std::min(1.0, double(result.evaluations) / budget);
    if (options.timeBudget > 0)
      progress = std::max(progress, elapsed() / options.timeBudget);
    double temperature =
        options.initialTemperature *
        std::pow(options.finalTemperature / options.initialTemperature,
                 progress);
    double cost = std::log(seconds);
    if (cost <= currentCost ||
        unit(rng) < std::exp(-(cost - currentCost) / temperature)) {
      current = moves;
      currentCost = cost;
    }
  };
  while (!exhausted()) {
    // A generation of new neighbours of the current program (walking, for
    // free, through neighbours measured before); then the decisions, in
    // order, each against the program current by then.
    std::vector<std::string> hashes;
    std::vector<Sequence> batch = propose(
        [&]() -> const Sequence & { return current; }, hashes, decide);
    if (batch.empty())
      continue;
    std::optional<std::vector<Measurement>> measured =
        measureGeneration(batch, hashes);
    if (!measured)
      return;
    for (auto [moves, m] : llvm::zip(batch, *measured))
      decide(moves, m.ok() ? m.seconds : 0);
  }
}

void Searcher::sample() {
  // Every program met so far that ran correctly, with its time.
  std::vector<std::pair<Sequence, double>> met = {
      {result.bestMoves, result.best.seconds}};
  llvm::StringSet<> metStates;
  std::string reason;
  if (succeeded(env.replay(result.bestMoves, reason)))
    metStates.insert(env.getHash());
  while (!exhausted()) {
    // Parents drawn with weight (best / its time)^4: faster programs are
    // expanded more often, every program sometimes.
    std::vector<double> weights;
    for (auto &[moves, seconds] : met)
      weights.push_back(std::pow(result.best.seconds / seconds, 4));
    std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
    std::vector<std::string> hashes;
    std::vector<Sequence> batch = propose(
        [&]() -> const Sequence & { return met[pick(rng)].first; }, hashes);
    if (batch.empty())
      continue;
    std::optional<std::vector<Measurement>> measured =
        measureGeneration(batch, hashes);
    if (!measured)
      return;
    for (auto [moves, m] : llvm::zip(batch, *measured)) {
      if (!m.ok() || failed(env.replay(moves, reason)) ||
          !metStates.insert(env.getHash()).second)
        continue;
      met.push_back({moves, m.seconds});
    }
  }
}

/// `seconds` as milliseconds, four significant digits: "1.234 ms".
static std::string milliseconds(double seconds) {
  std::string text;
  llvm::raw_string_ostream(text) << llvm::format("%.4g ms", seconds * 1e3);
  return text;
}

SearchResult Searcher::run() {
  env.reset();
  Measurement reference = env.measureStart();
  if (!reference.ok()) {
    result.error = "the starting kernel fails (" +
                   stringifyEvaluationStatus(reference.status).str() +
                   "): " + reference.reason;
    return result;
  }
  bool heuristic = options.strategy == Strategy::Naive ||
                   options.strategy == Strategy::Greedy ||
                   options.strategy == Strategy::Expert;
  // The first generation: the starting kernel and the heuristic's program.
  applyHeuristic(env, heuristic ? options.strategy : options.startFrom,
                 options.target);
  Sequence program(env.getMoves().begin(), env.getMoves().end());
  std::string programHash = env.getHash();
  env.reset();
  std::vector<Sequence> first = {{}};
  std::vector<std::string> hashes = {env.getHash()};
  if (!program.empty()) {
    first.push_back(program);
    hashes.push_back(programHash);
  }
  std::optional<std::vector<Measurement>> measured =
      measureGeneration(first, hashes);
  if (!measured)
    return result;
  result.start = measured->front();
  originHash = hashes.back();
  // A heuristic's answer is its program when it runs correctly and is not
  // slower than the starting kernel; otherwise the starting kernel, saying
  // so (a heuristic never makes a kernel slower).
  if (heuristic && !program.empty()) {
    result.heuristic = measured->back();
    unsigned timings = 0;
    if (result.heuristic.ok() && result.start.ok() && !options.allowSlower &&
        result.heuristic.seconds > result.start.seconds)
      timings = retimeAgainstStart(program);
    if (result.heuristic.ok() &&
        (options.allowSlower || !result.start.ok() ||
         result.heuristic.seconds <= result.start.seconds)) {
      result.best = result.heuristic;
      result.bestMoves = program;
    } else if (result.heuristic.ok()) {
      result.best = result.start;
      result.bestMoves.clear();
      result.keptStart =
          "the " + stringifyStrategy(options.strategy).str() + " program (" +
          milliseconds(result.heuristic.seconds) +
          ") is slower than the starting kernel (" +
          milliseconds(result.start.seconds) + ")" +
          (timings ? ", medians of " + std::to_string(timings) +
                             " alternating timings each"
                       : std::string()) +
          ": the starting kernel is the answer";
    }
  }
  if (heuristic)
    return result;
  if (!result.best.ok()) {
    // On a GPU the starting kernel may time out (one thread) where the
    // heuristic's program runs; a search needs some program that runs.
    result.error = "neither the starting kernel nor the " +
                   stringifyStrategy(options.startFrom).str() +
                   " program runs on the target (" + result.lastFailure + ")";
    return result;
  }
  if (options.strategy == Strategy::Anneal)
    anneal();
  else
    sample();
  confirm();
  if (result.stoppedEarly.empty() && result.error.empty() && !result.pending &&
      result.evaluations < options.budget &&
      !(options.timeBudget > 0 && elapsed() >= options.timeBudget))
    result.stoppedEarly =
        "no new program among " + std::to_string(proposals) +
        " proposals (few legal moves lead anywhere new from the programs met)";
  return result;
}

/// The median of `times` (the mean of the middle two for an even count).
static double median(std::vector<double> times) {
  llvm::sort(times);
  size_t n = times.size();
  return n % 2 ? times[n / 2] : (times[n / 2 - 1] + times[n / 2]) / 2;
}

unsigned Searcher::retimeAgainstStart(const Sequence &program) {
  if (!options.confirmRounds || options.target.gpu || env.getOptions().runner)
    return 0;
  // The rounds' times only (see confirmBest: a first time is biased).
  std::vector<double> start, heuristic;
  for (unsigned round = 0; round < options.confirmRounds; ++round) {
    std::string why;
    if (failed(env.replay({}, why)))
      break;
    Measurement a = env.measureAgain();
    if (failed(env.replay(program, why)))
      break;
    Measurement b = env.measureAgain();
    if (!a.ok() || !b.ok())
      break;
    start.push_back(a.seconds);
    heuristic.push_back(b.seconds);
  }
  if (start.empty())
    return 0;
  result.start.seconds = median(start);
  result.heuristic.seconds = median(heuristic);
  return unsigned(start.size());
}

void Searcher::confirm() {
  // A search stopped by an error or pending measurements has nothing to
  // confirm (confirmBest checks both); one that stopped early because its
  // neighbourhood was exhausted is confirmed like any other.
  std::vector<MeasuredProgram> programs;
  std::optional<size_t> origin;
  for (const auto &entry : timeOf) {
    auto sequence = sequenceOf.find(entry.first());
    if (entry.second <= 0 || sequence == sequenceOf.end())
      continue;
    if (entry.first() == originHash)
      origin = programs.size();
    programs.push_back({entry.second, sequence->second});
  }
  confirmBest(env, options, result, std::move(programs), origin);
}

std::vector<size_t>
mlir::perfdojo::pickFinalists(ArrayRef<MeasuredProgram> programs,
                              std::optional<size_t> origin, size_t count) {
  std::vector<size_t> ranked(programs.size());
  std::iota(ranked.begin(), ranked.end(), 0);
  llvm::sort(ranked, [&](size_t a, size_t b) {
    return std::make_pair(programs[a].seconds, a) <
           std::make_pair(programs[b].seconds, b);
  });
  count = std::min(count, ranked.size());
  if (origin && *origin < programs.size() && count) {
    auto at = llvm::find(ranked, *origin);
    if (size_t(at - ranked.begin()) >= count) {
      ranked.erase(at);
      ranked.insert(ranked.begin() + (count - 1), *origin);
    }
  }
  ranked.resize(count);
  return ranked;
}

std::optional<ConfirmedFinalist> mlir::perfdojo::confirmFinalists(
    size_t finalists, unsigned rounds,
    function_ref<std::optional<double>(size_t)> time) {
  std::vector<std::vector<double>> times(finalists);
  for (unsigned round = 0; round < rounds; ++round)
    for (size_t i = 0; i < finalists; ++i)
      if (std::optional<double> seconds = time(i))
        times[i].push_back(*seconds);
  std::optional<ConfirmedFinalist> best;
  for (size_t i = 0; i < finalists; ++i) {
    if (times[i].empty())
      continue;
    double m = median(times[i]);
    if (!best || m < best->median)
      best = ConfirmedFinalist{i, m, unsigned(times[i].size())};
  }
  return best;
}

void mlir::perfdojo::confirmBest(Environment &env, const SearchOptions &options,
                                 SearchResult &result,
                                 std::vector<MeasuredProgram> programs,
                                 std::optional<size_t> origin) {
  if (!options.confirmRounds || options.confirmPrograms < 1 ||
      options.target.gpu || env.getOptions().runner ||
      !result.error.empty() || result.pending || !result.best.ok() ||
      programs.empty())
    return;
  std::vector<size_t> ranked =
      pickFinalists(programs, origin, options.confirmPrograms);
  // Only the confirmation's times rank the finalists (a reducemean variant
  // first timed at 1.38 ms won a confirmation whose median, 1.67 ms,
  // counted that time, then ran 1.77-2.18 ms).
  std::vector<Measurement> last(ranked.size());
  std::optional<ConfirmedFinalist> best = confirmFinalists(
      ranked.size(), options.confirmRounds,
      [&](size_t i) -> std::optional<double> {
        std::string why;
        if (failed(env.replay(programs[ranked[i]].moves, why)))
          return std::nullopt;
        Measurement m = env.measureAgain();
        if (!m.ok())
          return std::nullopt;
        last[i] = m;
        return m.seconds;
      });
  if (!best)
    return;
  const MeasuredProgram &winner = programs[ranked[best->finalist]];
  result.firstSeconds = winner.seconds;
  result.best = last[best->finalist];
  result.best.seconds = best->median;
  result.bestMoves = winner.moves;
  result.confirmedPrograms = ranked.size();
  result.confirmedRounds = options.confirmRounds;
}

static PolicySearchFn policySearch = nullptr;

void mlir::perfdojo::setPolicySearch(PolicySearchFn search) {
  policySearch = search;
}

SearchResult mlir::perfdojo::runSearch(Environment &env,
                                       const SearchOptions &options) {
  if (options.strategy == Strategy::RL) {
    if (policySearch)
      return policySearch(env, options);
    SearchResult result;
    result.error = "the rl strategy needs the policy library, which this "
                   "tool does not link (pd-tune and pd-opt do)";
    return result;
  }
  return Searcher(env, options).run();
}
