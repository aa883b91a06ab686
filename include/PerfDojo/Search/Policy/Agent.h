//===- Agent.h - PerfLLM: the RL agent as a search policy --------*- C++ -*-===//
//
// The paper's section 3 on top of the game environment (Environment.h):
//
//   state   s = E(k), the embedding of the program's text form
//   action  a legal move, as the pair (E(s), E(s')) of the programs before
//           and after it; stop is (E(s), E(s))
//   reward  r = c / T(s') after each move, T measured by the environment
//           (checked programs only; a failed check ends the episode with
//           no reward), c the starting kernel's time, so that r is the
//           speedup over it; stop earns the reward of the state it stops in
//
// Trainer plays episodes from a kernel's starting program, epsilon-greedy
// with a decaying epsilon, keeps the transitions in a replay buffer and
// trains the Q-network on mini-batches from it (QNetwork.h: Max-Q learning,
// double DQN, dueling). runPolicySearch plays a trained policy: a greedy
// rollout, then rollouts with a little exploration from the start or from
// the best program so far, until the evaluation budget is spent.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_POLICY_AGENT_H
#define PERFDOJO_SEARCH_POLICY_AGENT_H

#include "PerfDojo/Search/Policy/QNetwork.h"
#include "PerfDojo/Search/Tuning/Search.h"
#include "llvm/ADT/StringMap.h"
#include <deque>
#include <random>

namespace mlir {
namespace perfdojo {

/// The move catalogue's version, as a policy records it: the number of
/// moves and a hash of their names, location kinds, parameter names and
/// inverses ("30 moves, 1f2e3d4c").
std::string getMoveCatalogueVersion();

/// What a policy is trained for on `env`'s target: "cuda sm_90 +ptx80" for
/// a GPU runner's, "cpu <name>" (the host CPU's LLVM name) on this CPU.
std::string getPolicyTarget(Environment &env);

/// A Q-network with what it was trained on, as a policy file holds it.
class Policy {
public:
  /// A fresh, untrained policy for `target`.
  static std::unique_ptr<Policy> create(const QNetworkConfig &config,
                                        StringRef target, std::string &error);
  /// The policy in `path`. Refused, with a reason naming both sides, when
  /// its features or move catalogue are not this build's, or (`target` not
  /// empty) when it was trained for another target.
  static std::unique_ptr<Policy> load(StringRef path, StringRef target,
                                      std::string &error);
  bool save(StringRef path, std::string &error) const;

  QNetwork &getNetwork() { return *network; }
  StringRef getTarget() const { return metadata.at("target"); }
  /// Recorded with the policy: encoder, features, catalogue, target, and
  /// the trainer's counters (episodes, evaluations, ...).
  std::map<std::string, std::string> &getMetadata() { return metadata; }

private:
  std::unique_ptr<QNetwork> network;
  std::map<std::string, std::string> metadata;
};

/// Program features by program hash, computed once per program.
class FeatureCache {
public:
  explicit FeatureCache(unsigned buckets) : buckets(buckets) {}
  /// The features of the program whose canonical text is `text`.
  const ProgramFeatures *get(StringRef hash, StringRef text);
  /// Adds features read back from a file.
  const ProgramFeatures *insert(StringRef hash, ProgramFeatures features);
  const ProgramFeatures *lookup(StringRef hash) const;
  /// The hash under which `features` is stored.
  StringRef getHash(const ProgramFeatures *features) const;
  size_t size() const { return byHash.size(); }

private:
  unsigned buckets;
  llvm::StringMap<std::unique_ptr<ProgramFeatures>> byHash;
  llvm::DenseMap<const ProgramFeatures *, StringRef> hashes;
};

/// The legal moves of the environment's current state, each with the
/// program it leads to; moves that change nothing, or lead to a program an
/// earlier move already reaches, are left out.
struct StateActions {
  std::string hash;
  const ProgramFeatures *state = nullptr;
  std::vector<std::string> moves;
  std::vector<const ProgramFeatures *> afters;
};
StateActions listActions(Environment &env, const TargetInfo &target,
                         FeatureCache &cache);

struct TrainingOptions {
  /// Moves per episode at most (then the episode ends).
  unsigned horizon = 8;
  unsigned batchSize = 32;
  unsigned replayCapacity = 5000;
  /// Gradient steps after each move, once the buffer holds a batch.
  unsigned updatesPerStep = 4;
  /// Gradient steps between copies into the target network.
  unsigned targetSync = 100;
  /// Epsilon decays linearly from start to end over `epsilonEpisodes`.
  double epsilonStart = 1.0;
  double epsilonEnd = 0.05;
  unsigned epsilonEpisodes = 100;
  /// Next-state actions kept per transition for the target (a random
  /// sample when there are more; stop always).
  unsigned maxNextActions = 32;
  /// The share of episodes that start from the fastest program met so far
  /// on their kernel (training goes on from where it got), rather than
  /// from the starting kernel.
  double restartBest = 0.5;
  uint64_t seed = 1;
};

/// One episode's outcome.
struct EpisodeResult {
  unsigned moves = 0;
  /// Speedups over the starting kernel: the best state of the episode,
  /// and the state it ended in (0 when it ended on a failed check).
  double bestSpeedup = 0;
  double finalSpeedup = 0;
  /// Programs measured (not reused) in the episode.
  unsigned evaluations = 0;
  double meanLoss = 0;
  double epsilon = 0;
  /// Set when the episode could not be played (the starting kernel fails).
  std::string error;
};

/// Learns a policy from episodes on any number of environments.
class Trainer {
public:
  Trainer(Policy &policy, TrainingOptions options);
  /// Plays one episode on `env` (from its starting kernel), learning as it
  /// goes. `episode` (from 0) sets epsilon.
  EpisodeResult playEpisode(Environment &env, unsigned episode);
  /// Plays `heuristic`'s program of env's starting kernel as an episode
  /// (a demonstration, epsilon 0): the heuristic's moves one after another
  /// from the starting kernel, each program measured and each move a
  /// transition in the replay buffer with its reward, learning as it goes,
  /// then stop. The episode is as long as the heuristic's sequence.
  EpisodeResult playDemonstration(Environment &env, Strategy heuristic);

  /// The replay buffer and the features it refers to, as text (for
  /// checkpoints), and back.
  void writeReplay(llvm::raw_ostream &os) const;
  LogicalResult readReplay(StringRef text, std::string &error);
  size_t getReplaySize() const { return replay.size(); }
  unsigned getUpdates() const { return updates; }

private:
  double learn(std::string &error);
  void remember(QTransition transition);
  /// An episode's start: `env` reset to its starting kernel and measured.
  struct EpisodeStart {
    TargetInfo target;
    unsigned evaluationsBefore;
    std::string hash;
    Measurement measurement;
  };
  /// None (with result.error set) when the measurement must wait for a
  /// remote runner.
  std::optional<EpisodeStart> startEpisode(Environment &env,
                                           EpisodeResult &result);
  /// Steps `env` by `move` and measures the program reached; none (with
  /// result.error set) when the move does not apply or the measurement
  /// would wait for a remote runner.
  std::optional<Measurement> stepAndMeasure(Environment &env, StringRef move,
                                            EpisodeResult &result);
  /// learn() after a transition, adding its loss to `result`'s sums.
  bool learnInto(EpisodeResult &result, double &lossSum, unsigned &lossCount);
  /// The speedup of `m` over the starting kernel `startHash` (its first
  /// time that ran is the constant c); 0 when `m` failed.
  double rewardOf(StringRef startHash, const Measurement &m);

  Policy &policy;
  TrainingOptions options;
  FeatureCache features;
  std::deque<QTransition> replay;
  std::mt19937_64 rng;
  unsigned updates = 0;
  /// The reward constant c of each starting kernel, by its hash.
  llvm::StringMap<double> scale;
  /// The fastest program met on each starting kernel (by its hash): its
  /// speedup and the moves that reach it.
  struct Best {
    double speedup = 0;
    std::vector<std::string> moves;
    /// Keeps `env`'s current program when its speedup is higher.
    void note(double current, Environment &env) {
      if (current > speedup) {
        speedup = current;
        moves.assign(env.getMoves().begin(), env.getMoves().end());
      }
    }
  };
  llvm::StringMap<Best> bestOf;
};

/// The next state of a transition from `actions` (its state and the
/// after-programs of its moves): at most `most` of them, a random sample
/// where there are more, then stop (the state itself).
void setNext(QTransition &t, const StateActions &actions, unsigned most,
             std::mt19937_64 &rng);

/// `steps` gradient steps of `network`, each on `batchSize` transitions
/// that `draw` returns; the target network is synced every `targetSync`
/// steps, counted in `updates`. Returns the mean loss, or a negative value
/// with `error` set.
double trainSteps(QNetwork &network, unsigned steps, unsigned batchSize,
                  function_ref<const QTransition &()> draw, unsigned &updates,
                  unsigned targetSync, std::string &error);

/// The index of one of `moves` (move instances as text) drawn as
/// --strategy=random draws: a move name uniformly, then one of its places.
size_t drawLikeRandom(ArrayRef<std::string> moves, std::mt19937_64 &rng);

/// Plays `policy` on `env` within `options.budget` measured programs (see
/// SearchOptions; options.startFrom's heuristic first, as the other
/// searches do). Moves per rollout: `horizon`.
SearchResult runPolicySearch(Environment &env, Policy &policy,
                             const SearchOptions &options);

/// Installs the RL strategy of runSearch: it loads options.policyPath
/// (checked against the environment's target) and runs runPolicySearch.
void registerPolicySearch();

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_POLICY_AGENT_H
