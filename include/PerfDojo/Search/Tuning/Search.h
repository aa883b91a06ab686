//===- Search.h - Heuristic passes and search strategies ----------*- C++ -*-===//
//
// The paper's section 4: target heuristics (naive, greedy, expert) that
// apply moves by rule, and searches (global random sampling, simulated
// annealing) that measure what they find, over either graph: the edge
// graph (a neighbour is one legal move away) or the sequence-refinement
// graph (a neighbour is the move sequence edited at one point and
// replayed). Hardware knowledge (the vector width, the thread count) lives
// here, not in the moves. The RL agent's policy (Policy/Agent.h) is one more
// strategy, reached through a hook so that this library does not need
// libtorch.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_TUNING_SEARCH_H
#define PERFDOJO_SEARCH_TUNING_SEARCH_H

#include "PerfDojo/Search/Tuning/Environment.h"
#include <functional>
#include <random>

namespace mlir {
namespace perfdojo {

enum class Strategy { Naive, Greedy, Expert, Random, Anneal, RL };
std::optional<Strategy> parseStrategy(StringRef name);
StringRef stringifyStrategy(Strategy strategy);

enum class SearchGraph { Edges, Sequences };

/// Strategy RL: how the guided sampler ranks the next programs of a
/// measured one: by the policy's gain head (the predicted speedup of the
/// move, the default) or by its Q-values (the best program reachable
/// after the move).
enum class PolicyRank { Gain, Value };

/// What the heuristics know about the target.
struct TargetInfo {
  /// A GPU (the GPU expert; GPU mappings and shared memory in searches)
  /// rather than this CPU.
  bool gpu = false;
  /// Lanes of a vector of 32-bit elements (AVX-512: 16; AVX2: 8; a GPU
  /// thread's widest load, 128 bits: 4), and the CPU's vector registers
  /// (AVX-512: 32; AVX2: 16), which bound the register tiles of products.
  int64_t vectorWidth = 16;
  int64_t vectorRegisters = 32;
  /// Threads the parallel scopes run on (CPU).
  unsigned threads = 1;
  /// GPU: the most threads a block may have, the threads of a warp, and
  /// the most shared memory a block may use.
  int64_t maxThreadsPerBlock = 1024;
  int64_t warpSize = 32;
  int64_t maxSharedBytes = 48 * 1024;
};

/// This CPU as the heuristics see it, with `threads` threads: AVX-512 (16
/// lanes, 32 registers), else AVX or AVX2 (8 lanes, 16 registers), else 4
/// lanes and 16 registers. `vectorWidth` (16, 8 or 4; 0 for this CPU's)
/// names one of those instead, so that a program can be written for
/// another CPU, or the same program expected on every CPU (the tests).
/// Fails (nothing returned) for another width.
std::optional<TargetInfo> getCPUTarget(unsigned threads,
                                       int64_t vectorWidth = 0);

/// Where a search stands, after each measured candidate.
struct SearchProgress {
  unsigned evaluations = 0;
  unsigned budget = 0;
  double elapsedSeconds = 0;
  /// Best time so far and the starting kernel's (0 when not measured).
  double bestSeconds = 0;
  double startSeconds = 0;
  /// The last candidate's status ("ok", "wrong-answer", ...).
  std::string lastStatus;
};

struct SearchOptions {
  Strategy strategy = Strategy::Anneal;
  SearchGraph graph = SearchGraph::Edges;
  TargetInfo target;
  /// Candidates measured (a candidate found in the tuning database
  /// counts, so that a resumed run retraces the killed one and goes on).
  unsigned budget = 100;
  /// Wall-clock limit in seconds; 0 for none.
  double timeBudget = 0;
  uint64_t seed = 1;
  /// The heuristic whose result random and anneal start from.
  Strategy startFrom = Strategy::Expert;
  /// Annealing temperatures, in units of log(time): accepting a candidate
  /// 10% slower has probability exp(-0.095 / T).
  double initialTemperature = 0.05;
  double finalTemperature = 0.002;
  /// Candidates proposed and measured together (one batch of the
  /// environment): 1 measures each before proposing the next; a GPU runner
  /// reached through files wants many (each generation is one round trip).
  /// Annealing proposes a generation of neighbours of its current program,
  /// then takes the acceptance decisions in order; random sampling expands
  /// a generation of parents drawn at once.
  unsigned generation = 1;
  std::function<void(const SearchProgress &)> onProgress;
  /// Strategy RL: the policy file (pd-train's output), and the moves of
  /// one rollout at most.
  std::string policyPath;
  unsigned horizon = 8;
  /// Strategy RL: after the greedy rollout, the share of expansions that
  /// measure a random next program whatever the policy says.
  double explore = 0.25;
  /// Strategy RL: outside that share, choose among the policy's best, its
  /// best place of a move name drawn at random, and a random next program,
  /// by how often each one's programs have run faster than their parent in
  /// this search (Thompson sampling); false: always the policy's best.
  bool adaptiveExplore = true;
  /// Strategy RL: which of the policy's heads the sampler takes its best
  /// next program by (the greedy rollout always follows Q).
  PolicyRank policyRank = PolicyRank::Gain;
  /// Strategy RL: gradient steps of the policy on this search's own
  /// measurements after each one, so that the policy keeps learning on the
  /// kernel it tunes (the policy file is not changed); 0 plays the policy
  /// as it was trained.
  unsigned policyUpdates = 0;
  /// Heuristics: answer with the heuristic's program even when it measured
  /// slower than the starting kernel (to see what the heuristic does; by
  /// default the starting kernel is the answer then).
  bool allowSlower = false;
  /// Random and anneal on this CPU: after the search, its best
  /// `confirmPrograms` programs are timed again in `confirmRounds`
  /// interleaved rounds, and the answer is the one with the lowest median
  /// of those rounds' times (not its first time: the best of many noisy
  /// measurements is optimistic, and may be a lucky one). 0 rounds: the
  /// first best stands.
  unsigned confirmRounds = 3;
  unsigned confirmPrograms = 4;
};

/// Strategy RL: where the guided sampler's programs came from and how many
/// of each ran faster than their parent program.
struct PolicySearchSources {
  struct Count {
    unsigned programs = 0, faster = 0;
  };
  /// The policy's best next program of all.
  Count policyBest;
  /// A move name drawn as --strategy=random draws it, then the policy's
  /// best place of that move.
  Count policyPlace;
  /// A move name, then one of its places, both drawn as --strategy=random
  /// draws them.
  Count randomDraw;
};

struct SearchResult {
  /// Moves from the starting kernel to the best program found (for a
  /// heuristic: to its program, unless that fails its check).
  std::vector<std::string> bestMoves;
  Measurement best;
  /// The starting kernel's measurement.
  Measurement start;
  /// A heuristic's program's measurement (when it made any move). Where it
  /// is slower than the starting kernel, the starting kernel is the answer
  /// (best, no moves) and `keptStart` says so.
  Measurement heuristic;
  std::string keptStart;
  /// Best seconds so far after each measured candidate.
  std::vector<double> trace;
  unsigned evaluations = 0;
  /// Candidates that failed their check, crashed, timed out or did not
  /// compile (recorded, not fatal).
  unsigned failures = 0;
  /// The status and reason of the last failure, if any.
  std::string lastFailure;
  /// Set when the search could not run at all (the starting kernel fails,
  /// the runner cannot measure).
  std::string error;
  /// The search's finalists timed again (SearchOptions::confirmRounds):
  /// how many programs, how many rounds, and the best program's time as
  /// first measured (best.seconds is then the median of all its times).
  unsigned confirmedPrograms = 0, confirmedRounds = 0;
  double firstSeconds = 0;
  /// Why a search stopped before its budget when it ran out of new
  /// programs to measure (the neighbourhood is exhausted); empty otherwise.
  std::string stoppedEarly;
  /// Candidates of the last generation whose results are not back (a
  /// remote runner): the search stopped there and, run again with the same
  /// options once they are in the database, retraces its steps and goes on.
  unsigned pending = 0;
  /// Strategy RL: the guided sampler's sources.
  PolicySearchSources sources;
};

/// Applies heuristic `level` (Naive, Greedy or Expert) to the current state
/// of `env`, move by move.
void applyHeuristic(Environment &env, Strategy level,
                    const TargetInfo &target);

/// Runs `options.strategy` from the starting kernel of `env`. Strategy RL
/// runs through the hook that setPolicySearch installed (and fails, saying
/// so, where none was).
SearchResult runSearch(Environment &env, const SearchOptions &options);

/// The search of Strategy RL. Tools that link the policy library install
/// it (registerPolicySearch in PerfDojo/Search/Policy/Agent.h); the
/// dialect plugin and the Python module, which do not load libtorch, have
/// none.
using PolicySearchFn = SearchResult (*)(Environment &env,
                                        const SearchOptions &options);
void setPolicySearch(PolicySearchFn search);

/// Counts one measured candidate, reached by `moves`, into `result` (every
/// search does so): evaluations, failures, the best program so far (after
/// which a candidate 3x slower is cut short), the trace, and the progress
/// callback.
void countCandidate(SearchResult &result, ArrayRef<std::string> moves,
                    const Measurement &m, Environment &env,
                    const SearchOptions &options, double elapsedSeconds);

/// A program a search measured correct, by the moves that reach it.
struct MeasuredProgram {
  double seconds;
  std::vector<std::string> moves;
};

/// The finalists of a confirmation: the indices of the `count` fastest of
/// `programs` by first time, fastest first (ties by index), with `origin`
/// among them, in the last place when it is not among the fastest.
std::vector<size_t> pickFinalists(ArrayRef<MeasuredProgram> programs,
                                  std::optional<size_t> origin, size_t count);

/// The winner of a confirmation: which finalist, the median of its
/// timings, and how many of its timings succeeded.
struct ConfirmedFinalist {
  size_t finalist;
  double median;
  unsigned timings;
};

/// Times `finalists` finalists in `rounds` alternating rounds (finalist 0,
/// 1, ..., then again), `time(i)` timing finalist i once (nullopt when it
/// fails), and returns the one whose successful timings have the lowest
/// median (the first on a tie). Only these timings count, not the first
/// times that made the finalists: the fastest of many noisy first times is
/// the luckiest of them. A finalist whose every timing failed is skipped;
/// nullopt when all are.
std::optional<ConfirmedFinalist>
confirmFinalists(size_t finalists, unsigned rounds,
                 function_ref<std::optional<double>(size_t)> time);

/// Times the fastest `programs` again, SearchOptions::confirmRounds rounds
/// of SearchOptions::confirmPrograms finalists (the program at `origin`, the
/// one the search started from, always among them), and makes the one with
/// the lowest median `result`'s best (every search on this CPU does so; one
/// first timing is a noisy pick among many). Nothing on a GPU or a runner.
void confirmBest(Environment &env, const SearchOptions &options,
                 SearchResult &result, std::vector<MeasuredProgram> programs,
                 std::optional<size_t> origin);

/// The index of one of `count` moves drawn as --strategy=random draws: a
/// move name uniformly (`nameOf(i)` names move i), then one of its places.
size_t drawMoveByName(size_t count, function_ref<StringRef(size_t)> nameOf,
                      std::mt19937_64 &rng);

/// Whether `target` can run `move`: GPU mappings and GPU shared memory
/// only on a GPU, CPU-parallel scopes only on the CPU.
bool runsOnTarget(const TargetInfo &target, const MoveInstance &move);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_TUNING_SEARCH_H
