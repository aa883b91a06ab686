//===- Agent.cpp - PerfLLM: the RL agent as a search policy ---------------===//

#include "PerfDojo/Search/Policy/Agent.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/TargetParser/Host.h"
#include <chrono>
#include <cmath>

using namespace mlir;
using namespace mlir::perfdojo;

//===----------------------------------------------------------------------===//
// Versions and targets
//===----------------------------------------------------------------------===//

std::string mlir::perfdojo::getMoveCatalogueVersion() {
  std::string description;
  ArrayRef<std::unique_ptr<Move>> moves = MoveRegistry::get().getMoves();
  for (const std::unique_ptr<Move> &move : moves) {
    description += move->getName().str() + "@" +
                   std::to_string(int(move->getLocationKind())) + ":";
    for (StringRef param : move->getParamNames())
      description += param.str() + ",";
    description += "~" + move->getInverseName().str() + ";";
  }
  return std::to_string(moves.size()) + " moves, " +
         hashProgramText(description).substr(0, 8);
}

std::string mlir::perfdojo::getPolicyTarget(Environment &env) {
  if (CandidateRunner *runner = env.getOptions().runner)
    return runner->getTarget();
  return "cpu " + llvm::sys::getHostCPUName().str();
}

//===----------------------------------------------------------------------===//
// Policy
//===----------------------------------------------------------------------===//

std::unique_ptr<Policy> Policy::create(const QNetworkConfig &config,
                                       StringRef target, std::string &error) {
  auto policy = std::make_unique<Policy>();
  policy->network = QNetwork::create(config, error);
  if (!policy->network)
    return nullptr;
  policy->metadata = {{"encoder", config.encoder},
                      {"features", kFeatureVersion.str()},
                      {"catalogue", getMoveCatalogueVersion()},
                      {"target", target.str()},
                      {"episodes", "0"}};
  return policy;
}

std::unique_ptr<Policy> Policy::load(StringRef path, StringRef target,
                                     std::string &error) {
  auto policy = std::make_unique<Policy>();
  policy->network = QNetwork::load(path.str(), policy->metadata, error);
  if (!policy->network)
    return nullptr;
  auto recorded = [&](StringRef key) -> std::string {
    auto it = policy->metadata.find(key.str());
    return it == policy->metadata.end() ? "nothing" : "'" + it->second + "'";
  };
  std::string prefix = "the policy '" + path.str() + "' ";
  if (recorded("features") != "'" + kFeatureVersion.str() + "'") {
    error = prefix + "was trained on program features " +
            recorded("features") + "; this build computes '" +
            kFeatureVersion.str() + "'";
    return nullptr;
  }
  std::string catalogue = getMoveCatalogueVersion();
  if (recorded("catalogue") != "'" + catalogue + "'") {
    error = prefix + "was trained with the move catalogue " +
            recorded("catalogue") + "; this build has '" + catalogue +
            "': train it again";
    return nullptr;
  }
  if (!target.empty() && recorded("target") != "'" + target.str() + "'") {
    error = prefix + "was trained for the target " + recorded("target") +
            ", not for '" + target.str() + "'";
    return nullptr;
  }
  if (recorded("encoder") != "'" + policy->network->getConfig().encoder + "'") {
    error = prefix + "is inconsistent: its metadata names the encoder " +
            recorded("encoder") + ", its network has '" +
            policy->network->getConfig().encoder + "'";
    return nullptr;
  }
  return policy;
}

bool Policy::save(StringRef path, std::string &error) const {
  return network->save(path.str(), metadata, error);
}

//===----------------------------------------------------------------------===//
// Features and actions
//===----------------------------------------------------------------------===//

const ProgramFeatures *FeatureCache::get(StringRef hash, StringRef text) {
  if (const ProgramFeatures *known = lookup(hash))
    return known;
  return insert(hash, featurizeProgram(text, buckets));
}

const ProgramFeatures *FeatureCache::insert(StringRef hash,
                                            ProgramFeatures features) {
  auto [it, inserted] = byHash.try_emplace(hash);
  if (inserted) {
    it->second = std::make_unique<ProgramFeatures>(std::move(features));
    hashes[it->second.get()] = it->first();
  }
  return it->second.get();
}

const ProgramFeatures *FeatureCache::lookup(StringRef hash) const {
  auto it = byHash.find(hash);
  return it == byHash.end() ? nullptr : it->second.get();
}

StringRef FeatureCache::getHash(const ProgramFeatures *features) const {
  return hashes.lookup(features);
}

StateActions mlir::perfdojo::listActions(Environment &env,
                                         const TargetInfo &target,
                                         FeatureCache &cache) {
  StateActions actions;
  std::string text = env.getText();
  actions.hash = hashProgramText(text);
  actions.state = cache.get(actions.hash, text);
  llvm::StringSet<> reached = {actions.hash};
  for (const MoveInstance &move : env.getLegalMoves()) {
    if (!runsOnTarget(target, move))
      continue;
    std::string reason;
    if (failed(env.step(move, reason)))
      continue;
    std::string after = env.getText();
    std::string hash = hashProgramText(after);
    if (reached.insert(hash).second) {
      actions.moves.push_back(move.str());
      actions.afters.push_back(cache.get(hash, after));
    }
    (void)env.undo();
  }
  return actions;
}

//===----------------------------------------------------------------------===//
// Training
//===----------------------------------------------------------------------===//

Trainer::Trainer(Policy &policy, TrainingOptions options)
    : policy(policy), options(options),
      features(policy.getNetwork().getConfig().buckets), rng(options.seed) {}

void Trainer::remember(QTransition transition) {
  replay.push_back(std::move(transition));
  while (replay.size() > std::max(options.replayCapacity, 1u))
    replay.pop_front();
}

double mlir::perfdojo::trainSteps(QNetwork &network, unsigned steps,
                                  unsigned batchSize,
                                  function_ref<const QTransition &()> draw,
                                  unsigned &updates, unsigned targetSync,
                                  std::string &error) {
  double total = 0;
  std::vector<QTransition> batch;
  for (unsigned u = 0; u < steps; ++u) {
    batch.clear();
    for (unsigned i = 0; i < batchSize; ++i)
      batch.push_back(draw());
    double loss = network.train(batch, error);
    if (loss < 0)
      return -1;
    total += loss;
    if (++updates % std::max(targetSync, 1u) == 0)
      network.syncTarget();
  }
  return steps ? total / steps : 0;
}

void mlir::perfdojo::setNext(QTransition &t, const StateActions &actions,
                             unsigned most, std::mt19937_64 &rng) {
  t.next = actions.state;
  t.nextAfters = actions.afters;
  if (t.nextAfters.size() > most) {
    std::shuffle(t.nextAfters.begin(), t.nextAfters.end(), rng);
    t.nextAfters.resize(most);
  }
  t.nextAfters.push_back(actions.state);
}

double Trainer::learn(std::string &error) {
  if (replay.size() < options.batchSize)
    return 0;
  return trainSteps(
      policy.getNetwork(), options.updatesPerStep, options.batchSize,
      [&]() -> const QTransition & { return replay[rng() % replay.size()]; },
      updates, options.targetSync, error);
}

/// The index of the largest value (the first of equals).
static size_t argmax(const std::vector<float> &values) {
  return std::max_element(values.begin(), values.end()) - values.begin();
}

size_t mlir::perfdojo::drawLikeRandom(ArrayRef<std::string> moves,
                                      std::mt19937_64 &rng) {
  return drawMoveByName(
      moves.size(),
      [&](size_t i) { return StringRef(moves[i]).split('@').first; }, rng);
}

/// The target whose moves the agent plays on `env`: this CPU, or the GPU
/// behind its runner.
static TargetInfo getTrainingTarget(Environment &env) {
  TargetInfo target = getCPUTarget(env.getOptions().evaluation.threads)
                          .value_or(TargetInfo());
  if (env.getOptions().runner) {
    target.gpu = true;
    target.vectorWidth = 4;
  }
  return target;
}

static constexpr const char *kNoRemote =
    "the RL agent needs its measurements at once; it cannot wait for a "
    "remote runner";

double Trainer::rewardOf(StringRef startHash, const Measurement &m) {
  // The reward's constant c: the starting kernel's time; where the starting
  // kernel itself fails on the target (one GPU thread may time out), the
  // first time of the kernel that ran. A state that fails earns nothing.
  if (!m.ok() || m.seconds <= 0)
    return 0.0;
  double c = scale.try_emplace(startHash, m.seconds).first->second;
  return c / m.seconds;
}

/// The gain head's target for a move from a program of reward `before`
/// to one of reward `after`: the log of its speedup; NaN where either
/// failed.
static float gainOf(double before, double after) {
  return before > 0 && after > 0 ? float(std::log(after / before)) : NAN;
}

bool Trainer::learnInto(EpisodeResult &result, double &lossSum,
                        unsigned &lossCount) {
  std::string error;
  double loss = learn(error);
  if (loss < 0) {
    result.error = error;
    return false;
  }
  if (replay.size() >= options.batchSize) {
    lossSum += loss;
    ++lossCount;
  }
  return true;
}

std::optional<Trainer::EpisodeStart>
Trainer::startEpisode(Environment &env, EpisodeResult &result) {
  env.reset();
  EpisodeStart start{getTrainingTarget(env), env.getEvaluationCount(),
                     env.getHash(), env.measure()};
  if (start.measurement.pending) {
    result.error = kNoRemote;
    return std::nullopt;
  }
  return start;
}

std::optional<Measurement> Trainer::stepAndMeasure(Environment &env,
                                                   StringRef move,
                                                   EpisodeResult &result) {
  std::string reason;
  if (failed(env.step(move, reason))) {
    result.error = ("the move " + move + " does not apply: " + reason).str();
    return std::nullopt;
  }
  ++result.moves;
  Measurement m = env.measure();
  if (m.pending) {
    result.error = kNoRemote;
    return std::nullopt;
  }
  return m;
}

EpisodeResult Trainer::playDemonstration(Environment &env,
                                         Strategy heuristic) {
  EpisodeResult result;
  std::optional<EpisodeStart> begin = startEpisode(env, result);
  if (!begin)
    return result;
  const TargetInfo &target = begin->target;
  StringRef startHash = begin->hash;
  Measurement start = begin->measurement;
  unsigned evaluationsBefore = begin->evaluationsBefore;
  applyHeuristic(env, heuristic, target);
  std::vector<std::string> moves(env.getMoves().begin(), env.getMoves().end());
  env.reset();
  double current = rewardOf(startHash, start);
  Best &best = bestOf[startHash];
  result.bestSpeedup = result.finalSpeedup = current;
  StateActions actions = listActions(env, target, features);
  double lossSum = 0;
  unsigned lossCount = 0;
  for (const std::string &move : moves) {
    std::optional<Measurement> measured = stepAndMeasure(env, move, result);
    if (!measured)
      return result;
    const Measurement &m = *measured;
    StateActions next = listActions(env, target, features);
    QTransition t{actions.state, next.state, 0, true, nullptr, {}};
    if (!m.ok()) {
      // As in an episode: a failed check ends it without reward.
      remember(std::move(t));
      result.finalSpeedup = 0;
      break;
    }
    double before = current;
    current = rewardOf(startHash, m);
    t.gain = gainOf(before, current);
    result.bestSpeedup = std::max(result.bestSpeedup, current);
    result.finalSpeedup = current;
    best.note(current, env);
    t.reward = float(current);
    t.terminal = false;
    setNext(t, next, options.maxNextActions, rng);
    remember(std::move(t));
    if (!learnInto(result, lossSum, lossCount))
      return result;
    actions = std::move(next);
  }
  if (result.finalSpeedup > 0) {
    // The demonstration stops where the heuristic did.
    remember({actions.state, actions.state, float(current), true, nullptr, {}});
    if (!learnInto(result, lossSum, lossCount))
      return result;
  }
  result.meanLoss = lossCount ? lossSum / lossCount : 0;
  result.evaluations = env.getEvaluationCount() - evaluationsBefore;
  return result;
}

EpisodeResult Trainer::playEpisode(Environment &env, unsigned episode) {
  EpisodeResult result;
  double progress =
      std::min(1.0, double(episode) / std::max(options.epsilonEpisodes, 1u));
  result.epsilon = options.epsilonStart +
                   (options.epsilonEnd - options.epsilonStart) * progress;
  std::optional<EpisodeStart> begin = startEpisode(env, result);
  if (!begin)
    return result;
  const TargetInfo &target = begin->target;
  StringRef startHash = begin->hash;
  unsigned evaluationsBefore = begin->evaluationsBefore;
  double current = rewardOf(startHash, begin->measurement);
  Best &best = bestOf[startHash];
  std::uniform_real_distribution<double> coin(0, 1);
  if (!best.moves.empty() && coin(rng) < options.restartBest) {
    // Go on from the fastest program met on this kernel.
    std::string reason;
    std::optional<Measurement> m;
    if (succeeded(env.replay(best.moves, reason)))
      m = env.measure();
    if (m && m->ok() && !m->pending)
      current = rewardOf(startHash, *m);
    else
      env.reset(); // from the starting kernel after all
  }
  best.note(current, env);
  result.bestSpeedup = current;
  StateActions actions = listActions(env, target, features);
  double lossSum = 0;
  unsigned lossCount = 0;
  for (unsigned step = 0; step < options.horizon; ++step) {
    // Stop is the action whose after-program is the state itself.
    std::vector<const ProgramFeatures *> choices = actions.afters;
    choices.push_back(actions.state);
    size_t choice;
    if (coin(rng) < result.epsilon) {
      // Exploring: as --strategy=random draws, stop being one more name.
      std::vector<std::string> named = actions.moves;
      named.push_back("stop");
      choice = drawLikeRandom(named, rng);
    } else
      choice = argmax(policy.getNetwork().evaluate(*actions.state, choices));
    QTransition t{actions.state, choices[choice], 0, true, nullptr, {}};
    if (choice == actions.moves.size()) {
      t.reward = float(current);
      remember(std::move(t));
      result.finalSpeedup = current;
      break;
    }
    std::optional<Measurement> measured =
        stepAndMeasure(env, actions.moves[choice], result);
    if (!measured)
      return result;
    const Measurement &m = *measured;
    if (!m.ok()) {
      // A failed check ends the episode without reward.
      remember(std::move(t));
      result.finalSpeedup = 0;
      break;
    }
    double before = current;
    current = rewardOf(startHash, m);
    t.gain = gainOf(before, current);
    best.note(current, env);
    result.bestSpeedup = std::max(result.bestSpeedup, current);
    result.finalSpeedup = current;
    t.reward = float(current);
    t.terminal = step + 1 == options.horizon;
    if (!t.terminal) {
      actions = listActions(env, target, features);
      setNext(t, actions, options.maxNextActions, rng);
    }
    remember(std::move(t));
    if (!learnInto(result, lossSum, lossCount))
      return result;
  }
  result.meanLoss = lossCount ? lossSum / lossCount : 0;
  result.evaluations = env.getEvaluationCount() - evaluationsBefore;
  return result;
}

// The replay file, one record per line:
//   p <hash> <id>:<weight> ...                 a program's features
//   t <state> <after> <reward> <gain|-> <terminal> <next|-> <after>,...
//   b <kernel hash> <speedup> <move> ...      the fastest program met
void Trainer::writeReplay(llvm::raw_ostream &os) const {
  llvm::DenseSet<const ProgramFeatures *> written;
  auto program = [&](const ProgramFeatures *f) {
    if (!f || !written.insert(f).second)
      return;
    os << "p " << features.getHash(f);
    for (auto [id, weight] : llvm::zip(f->ids, f->weights))
      os << " " << id << ":" << llvm::format("%.9g", weight);
    os << "\n";
  };
  for (const QTransition &s : replay) {
    program(s.state);
    program(s.after);
    program(s.next);
    for (const ProgramFeatures *f : s.nextAfters)
      program(f);
    os << "t " << features.getHash(s.state) << " " << features.getHash(s.after)
       << " " << llvm::format("%.9g", s.reward) << " ";
    if (std::isfinite(s.gain))
      os << llvm::format("%.9g", s.gain);
    else
      os << "-";
    os << " " << int(s.terminal) << " "
       << (s.next ? features.getHash(s.next) : StringRef("-")) << " ";
    for (auto [i, f] : llvm::enumerate(s.nextAfters))
      os << (i ? "," : "") << features.getHash(f);
    os << "\n";
  }
  for (const auto &entry : bestOf) {
    if (entry.second.moves.empty())
      continue;
    os << "b " << entry.first() << " "
       << llvm::format("%.9g", entry.second.speedup);
    for (const std::string &move : entry.second.moves)
      os << " " << move;
    os << "\n";
  }
}

LogicalResult Trainer::readReplay(StringRef text, std::string &error) {
  unsigned lineNumber = 0;
  for (StringRef line : llvm::split(text, '\n')) {
    ++lineNumber;
    line = line.trim();
    if (line.empty())
      continue;
    SmallVector<StringRef> words;
    line.split(words, ' ', -1, /*KeepEmpty=*/false);
    auto bad = [&](StringRef why) {
      error = "line " + std::to_string(lineNumber) + ": " + why.str();
      return failure();
    };
    if (words[0] == "p") {
      if (words.size() < 2)
        return bad("a program record needs a hash");
      ProgramFeatures f;
      for (StringRef word : llvm::drop_begin(words, 2)) {
        auto [id, weight] = word.split(':');
        int32_t value;
        double w;
        if (id.getAsInteger(10, value) || weight.getAsDouble(w))
          return bad("malformed feature '" + word.str() + "'");
        f.ids.push_back(value);
        f.weights.push_back(float(w));
      }
      features.insert(words[1], std::move(f));
      continue;
    }
    if (words[0] == "b") {
      Best best;
      if (words.size() < 4 || words[2].getAsDouble(best.speedup))
        return bad("a best-program record needs a kernel, a speedup and "
                   "moves");
      for (StringRef move : llvm::drop_begin(words, 3))
        best.moves.push_back(move.str());
      bestOf[words[1]] = std::move(best);
      continue;
    }
    if (words[0] != "t" || words.size() < 7)
      return bad("expected a program (p), transition (t) or best program "
                 "(b) record");
    auto find = [&](StringRef hash) { return features.lookup(hash); };
    QTransition s{find(words[1]),
                  find(words[2]),
                  0,
                  words[5] == "1",
                  words[6] == "-" ? nullptr : find(words[6]),
                  {}};
    double reward, gain;
    if (!s.state || !s.after || (words[6] != "-" && !s.next))
      return bad("a transition names a program not recorded before it");
    if (words[3].getAsDouble(reward))
      return bad("malformed reward '" + words[3].str() + "'");
    s.reward = float(reward);
    if (words[4] != "-") {
      if (words[4].getAsDouble(gain))
        return bad("malformed gain '" + words[4].str() + "'");
      s.gain = float(gain);
    }
    if (words.size() > 7)
      for (StringRef hash : llvm::split(words[7], ',')) {
        const ProgramFeatures *f = find(hash);
        if (!f)
          return bad("a transition names a program not recorded before it");
        s.nextAfters.push_back(f);
      }
    remember(std::move(s));
  }
  return success();
}

//===----------------------------------------------------------------------===//
// Search with a trained policy
//===----------------------------------------------------------------------===//

namespace {
class PolicySearch {
public:
  PolicySearch(Environment &env, Policy &policy, const SearchOptions &options)
      : env(env), policy(policy), options(options),
        horizon(std::max(options.horizon, 1u)),
        features(policy.getNetwork().getConfig().buckets), rng(options.seed),
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
           (options.timeBudget > 0 && elapsed() >= options.timeBudget);
  }
  /// A program measured by this search that runs correctly.
  struct Node {
    Sequence moves;
    double seconds;
    /// Every next program of it has been measured.
    bool closed = false;
  };
  /// Measures the current state unless this search has; returns whether it
  /// runs correctly (false ends a rollout). `from` is the program the
  /// search stepped from and the move's after-program, when it stepped:
  /// a fresh measurement then teaches the policy (learn).
  bool visit(const ProgramFeatures *from = nullptr,
             const ProgramFeatures *after = nullptr);
  /// Online learning: the transition from `from` to the current program
  /// (reward c / T with c the starting kernel's time, as in training; a
  /// failed check ends it without reward) and the current program's stop,
  /// then options.policyUpdates gradient steps on batches drawn from this
  /// search's transitions.
  void learn(const ProgramFeatures *from, const ProgramFeatures *after,
             const Measurement &m);
  /// The greedy rollout: the policy's best action at each step, from
  /// `from`, until it stops or `horizon` moves.
  void rollout(const Sequence &from);
  /// The actions of the current program, and their values, computed once
  /// per program.
  struct Scored {
    StateActions actions;
    /// Q and G of each action (stop last); G only when the search ranks
    /// by it.
    std::vector<float> q, gain;
    /// The network's version the values are from.
    unsigned version = 0;
  };
  const Scored &score();
  /// Measures one next program of `met[parent]` that this search has not
  /// measured, from the source chooseSource says. Closes the parent when
  /// there is none.
  void expand(size_t parent);
  /// Where an expansion's program comes from: the policy's best of all
  /// next programs; a move name drawn as --strategy=random draws it, then
  /// the policy's best place of it; or a random draw of both. With
  /// probability options.explore a random draw; otherwise, with
  /// options.adaptiveExplore, the source whose programs have paid more
  /// often on this kernel (Thompson sampling over how many of each
  /// source's programs ran faster than their parent), else the policy's
  /// best.
  enum Source { PolicyBest, PolicyPlace, RandomDraw };
  static PolicySearchSources::Count &countOf(PolicySearchSources &sources,
                                             Source source) {
    return source == PolicyBest    ? sources.policyBest
           : source == PolicyPlace ? sources.policyPlace
                                   : sources.randomDraw;
  }
  Source chooseSource();

  Environment &env;
  Policy &policy;
  const SearchOptions &options;
  unsigned horizon;
  FeatureCache features;
  std::mt19937_64 rng;
  std::chrono::steady_clock::time_point begin;
  SearchResult result;
  bool stopped = false;
  /// Programs measured by this search: the time of each that runs
  /// correctly (0 where it has none), kFailed for the others.
  static constexpr double kFailed = -1;
  llvm::StringMap<double> measured;
  /// The programs that ran correctly, in the order they were measured.
  std::vector<Node> met;
  /// The program the search starts from (the heuristic's).
  Sequence originMoves;
  llvm::StringMap<Scored> scored;
  /// Online learning: this search's transitions, the gradient steps taken
  /// and the network's version (bumped by each round of steps, so that
  /// cached values are computed again).
  std::vector<QTransition> transitions;
  unsigned updates = 0;
  unsigned version = 0;
  /// The reward's constant c: the starting kernel's time.
  double scale = 0;
};

/// A program pays when it runs at least this much faster than its parent
/// (below it, timing noise decides).
constexpr double kPaysMargin = 0.03;

/// A draw from Beta(a, b), as X / (X + Y) of two gamma draws.
static double drawBeta(double a, double b, std::mt19937_64 &rng) {
  double x = std::gamma_distribution<double>(a, 1)(rng);
  double y = std::gamma_distribution<double>(b, 1)(rng);
  return x + y > 0 ? x / (x + y) : 0.5;
}
} // namespace

bool PolicySearch::visit(const ProgramFeatures *from,
                         const ProgramFeatures *after) {
  std::string hash = env.getHash();
  if (auto it = measured.find(hash); it != measured.end())
    return it->second != kFailed;
  Measurement m = env.measure();
  if (m.pending) {
    result.error = "the RL policy needs its measurements at once; it "
                   "cannot wait for a remote runner (run it with --runner "
                   "or on the GPU machine)";
    stopped = true;
    return false;
  }
  measured[hash] = !m.ok() ? kFailed : std::max(m.seconds, 0.0);
  countCandidate(result, env.getMoves(), m, env, options, elapsed());
  if (m.ok() && m.seconds > 0)
    met.push_back(
        {Sequence(env.getMoves().begin(), env.getMoves().end()), m.seconds});
  if (from && options.policyUpdates > 0)
    learn(from, after, m);
  return m.ok();
}

void PolicySearch::learn(const ProgramFeatures *from,
                         const ProgramFeatures *after, const Measurement &m) {
  constexpr unsigned kBatch = 32, kNextActions = 32, kTargetSync = 50;
  QTransition t{from, after, 0, true, nullptr, {}};
  if (m.ok() && m.seconds > 0 && scale > 0) {
    t.reward = float(scale / m.seconds);
    t.terminal = false;
    double parent = measured.lookup(features.getHash(from));
    t.gain = parent > 0 ? gainOf(scale / parent, t.reward) : NAN;
    const Scored &next = score();
    setNext(t, next.actions, kNextActions, rng);
    // Stopping here earns the program's own reward.
    transitions.push_back(
        {next.actions.state, next.actions.state, t.reward, true, nullptr, {}});
  }
  transitions.push_back(std::move(t));
  std::string error;
  if (trainSteps(
          policy.getNetwork(), options.policyUpdates, kBatch,
          [&]() -> const QTransition & {
            return transitions[rng() % transitions.size()];
          },
          updates, kTargetSync, error) < 0) {
    result.error = "the policy could not learn from this search: " + error;
    stopped = true;
    return;
  }
  ++version;
}

const PolicySearch::Scored &PolicySearch::score() {
  std::string hash = env.getHash();
  auto [it, inserted] = scored.try_emplace(hash);
  Scored &s = it->second;
  if (inserted)
    s.actions = listActions(env, options.target, features);
  if (inserted || s.version != version) {
    std::vector<const ProgramFeatures *> choices = s.actions.afters;
    choices.push_back(s.actions.state);
    s.q = policy.getNetwork().evaluate(
        *s.actions.state, choices,
        options.policyRank == PolicyRank::Gain ? &s.gain : nullptr);
    s.version = version;
  }
  return s;
}

void PolicySearch::rollout(const Sequence &from) {
  std::string reason;
  if (failed(env.replay(from, reason)))
    return;
  for (unsigned step = 0; step < horizon && !exhausted(); ++step) {
    const Scored &s = score();
    size_t choice = argmax(s.q);
    if (choice == s.actions.moves.size())
      break; // stop
    const ProgramFeatures *from = s.actions.state;
    const ProgramFeatures *after = s.actions.afters[choice];
    if (failed(env.step(s.actions.moves[choice], reason)) ||
        !visit(from, after))
      break;
  }
}

void PolicySearch::expand(size_t parent) {
  std::string reason;
  if (failed(env.replay(met[parent].moves, reason))) {
    met[parent].closed = true;
    return;
  }
  const Scored &s = score();
  std::vector<size_t> open;
  for (auto [i, after] : llvm::enumerate(s.actions.afters))
    if (!measured.count(features.getHash(after)))
      open.push_back(i);
  if (open.empty()) {
    met[parent].closed = true;
    return;
  }
  Source source = chooseSource();
  std::vector<size_t> candidates = open;
  if (source != PolicyBest) {
    // A move name as --strategy=random draws it; its places.
    std::vector<std::string> named;
    for (size_t i : open)
      named.push_back(s.actions.moves[i]);
    size_t drawn = drawLikeRandom(named, rng);
    StringRef name = StringRef(named[drawn]).split('@').first;
    if (source == RandomDraw)
      candidates = {open[drawn]};
    else
      llvm::erase_if(candidates, [&](size_t i) {
        return StringRef(s.actions.moves[i]).split('@').first != name;
      });
  }
  const std::vector<float> &rank =
      options.policyRank == PolicyRank::Gain ? s.gain : s.q;
  size_t choice = candidates.front();
  for (size_t i : candidates)
    if (rank[i] > rank[choice])
      choice = i;
  const ProgramFeatures *from = s.actions.state;
  const ProgramFeatures *after = s.actions.afters[choice];
  double parentSeconds = met[parent].seconds;
  PolicySearchSources::Count &count = countOf(result.sources, source);
  ++count.programs;
  if (failed(env.step(s.actions.moves[choice], reason))) {
    measured[features.getHash(after)] = kFailed;
    return;
  }
  size_t before = met.size();
  visit(from, after); // may grow `met`
  if (met.size() > before &&
      met.back().seconds < parentSeconds * (1 - kPaysMargin))
    ++count.faster;
}

PolicySearch::Source PolicySearch::chooseSource() {
  std::uniform_real_distribution<double> coin(0, 1);
  if (coin(rng) < options.explore)
    return RandomDraw;
  if (!options.adaptiveExplore)
    return PolicyBest;
  // Beta(1 + faster, 1 + not faster) for each source: a source starts at
  // even odds and is trusted as far as its programs pay on this kernel.
  Source chosen = PolicyBest;
  double best = -1;
  for (Source source : {PolicyBest, PolicyPlace, RandomDraw}) {
    const PolicySearchSources::Count &c = countOf(result.sources, source);
    double odds = drawBeta(1.0 + c.faster, 1.0 + (c.programs - c.faster), rng);
    if (odds > best) {
      best = odds;
      chosen = source;
    }
  }
  return chosen;
}

SearchResult PolicySearch::run() {
  env.reset();
  Measurement reference = env.measureStart();
  if (!reference.ok()) {
    result.error = "the starting kernel fails (" +
                   stringifyEvaluationStatus(reference.status).str() +
                   "): " + reference.reason;
    return result;
  }
  // The starting kernel, then the heuristic's program to start from.
  visit();
  result.start = env.measure();
  scale = result.start.ok() ? result.start.seconds : 0;
  applyHeuristic(env, options.startFrom, options.target);
  originMoves.assign(env.getMoves().begin(), env.getMoves().end());
  if (!originMoves.empty())
    visit();
  if (stopped)
    return result;
  // What the policy would do alone: its greedy rollout. Then the policy
  // guides a sampler: a program measured so far is drawn, the faster the
  // more often (weight (best / its time)^4, as --strategy=random draws its
  // parents), and one of its next programs not yet measured is measured:
  // the one the policy values most, or with probability --explore a
  // random one.
  rollout(originMoves);
  while (!exhausted()) {
    std::vector<double> weights;
    for (const Node &node : met)
      weights.push_back(node.closed ? 0.0
                                    : std::pow(result.best.seconds /
                                                   node.seconds,
                                               4));
    if (llvm::all_of(weights, [](double w) { return w == 0; })) {
      result.stoppedEarly = "every next program of every program measured "
                            "has been measured (" +
                            std::to_string(measured.size()) +
                            " distinct programs)";
      break;
    }
    std::discrete_distribution<size_t> pick(weights.begin(), weights.end());
    expand(pick(rng));
  }
  if (!stopped) {
    std::vector<MeasuredProgram> programs;
    std::optional<size_t> originIndex;
    for (auto [i, node] : llvm::enumerate(met)) {
      programs.push_back({node.seconds, node.moves});
      if (node.moves == originMoves)
        originIndex = i;
    }
    confirmBest(env, options, result, std::move(programs), originIndex);
  }
  if ((!result.best.ok() || result.best.seconds == 0) && result.error.empty())
    result.error = "no program the policy reached runs on the target (" +
                   result.lastFailure + ")";
  return result;
}

SearchResult mlir::perfdojo::runPolicySearch(Environment &env, Policy &policy,
                                             const SearchOptions &options) {
  return PolicySearch(env, policy, options).run();
}

static SearchResult searchWithPolicyFile(Environment &env,
                                         const SearchOptions &options) {
  SearchResult result;
  if (options.policyPath.empty()) {
    result.error = "the rl strategy needs a policy file (pd-train's output)";
    return result;
  }
  std::unique_ptr<Policy> policy =
      Policy::load(options.policyPath, getPolicyTarget(env), result.error);
  if (!policy)
    return result;
  return runPolicySearch(env, *policy, options);
}

void mlir::perfdojo::registerPolicySearch() {
  setPolicySearch(searchWithPolicyFile);
}
