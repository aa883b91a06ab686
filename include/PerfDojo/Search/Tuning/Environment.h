//===- Environment.h - The optimization game as an API -----------*- C++ -*-===//
//
// The state of the game is a kernel reached from a starting kernel by a
// sequence of legal moves. The environment lists the legal moves, applies
// one (step), takes the last back (undo), names the state by a hash of its
// canonical text (equal programs reached by different paths are one state)
// and measures it: compiled for this CPU, checked against the starting
// kernel compiled at full size, timed; or, with a CandidateRunner, compiled
// for another target (a GPU) and run there, in batches. Measurements are
// cached by that hash, in memory and, when given, in a tuning database.
// Every search strategy, and later the RL agent and Python, play through
// this class.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_TUNING_ENVIRONMENT_H
#define PERFDOJO_SEARCH_TUNING_ENVIRONMENT_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Search/Evaluator/Evaluator.h"
#include "PerfDojo/Search/Interpreter/Interpreter.h"
#include "PerfDojo/Search/Tuning/TuningDatabase.h"
#include "PerfDojo/Transforms/Move.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "llvm/ADT/DenseMap.h"

namespace mlir {
namespace perfdojo {

/// The outcome of measuring one state.
struct Measurement {
  EvaluationStatus status = EvaluationStatus::Ok;
  std::string reason;
  /// Median seconds per run (status Ok).
  double seconds = 0;
  double compileSeconds = 0;
  double maxError = 0;
  /// Whether it came from the cache or the database rather than a run.
  bool reused = false;
  /// Handed to a runner whose results have not come back yet (a remote
  /// GPU machine): no status, no time. Never cached nor recorded.
  bool pending = false;

  bool ok() const { return status == EvaluationStatus::Ok && !pending; }
};

/// One program to measure on a CandidateRunner's target.
struct Candidate {
  KernelOp kernel;
  /// Environment::getHash() of the program.
  std::string hash;
  /// The moves from the starting kernel, comma-separated.
  std::string moves;
};

/// The starting kernel's outputs on the seeded inputs, which candidates
/// must reproduce: from the starting kernel compiled for this CPU, or from
/// the float64 interpreter.
struct ReferenceOutputs {
  /// One per output buffer (role out), logical shapes, no reuse.
  std::vector<BufferData> outputs;
  /// Largest accepted difference (see EnvironmentOptions::tolerance).
  double tolerance = 2e-3;
  /// Seed of the inputs.
  uint64_t seed = 1;
};

/// Measures candidates somewhere else than in this process on this CPU: a
/// GPU here, or a GPU machine reached through files (batched remote
/// evaluation). The environment asks it for batches, caches and records
/// what comes back.
class CandidateRunner {
public:
  virtual ~CandidateRunner();
  /// The target of the tuning database's key (e.g. "cuda sm_90 +ptx80").
  virtual std::string getTarget() const = 0;
  /// Called once, before any batch, with what candidates are checked
  /// against.
  virtual LogicalResult prepare(const ReferenceOutputs &reference,
                                std::string &error) = 0;
  /// One measurement per candidate, in order; `pending` where the results
  /// are not back yet. Fails (with `error`) when the batch cannot be
  /// measured at all (no GPU, an unreadable results file).
  virtual FailureOr<std::vector<Measurement>>
  run(ArrayRef<Candidate> candidates, std::string &error) = 0;
};

struct EnvironmentOptions {
  /// Threads, repetitions, time limit, seed of the measurements.
  EvaluationOptions evaluation;
  /// Largest difference from the reference outputs, relative to each
  /// output's largest magnitude (see compareWithReference).
  double tolerance = 2e-3;
  /// Where measurements are also recorded and looked up; may be null.
  TuningDatabase *database = nullptr;
  /// What candidates' outputs are compared with: the starting kernel
  /// compiled at full size (fast), or the float64 interpreter at full size
  /// (slow, once; for kernels whose float32 result is itself inaccurate,
  /// such as a sum of 10^7 terms; the starting kernel is then timed but not
  /// checked).
  bool checkAgainstInterpreter = false;
  /// Where candidates run; null for this CPU (in-process, one at a time).
  /// With a runner, the starting kernel still runs on this CPU (or in the
  /// interpreter), once, for the reference outputs.
  CandidateRunner *runner = nullptr;
};

/// The hash that names a state: of its canonical text, as 16 hex digits.
std::string hashProgramText(StringRef text);

class Environment {
public:
  /// Starts from a copy of `start`, which is not modified.
  Environment(KernelOp start, EnvironmentOptions options);
  ~Environment();

  /// Back to the starting kernel.
  void reset();
  /// The current state's kernel (valid until the next step, undo or reset).
  KernelOp getKernel();
  /// The moves from the starting kernel to the current state.
  ArrayRef<std::string> getMoves() const { return moves; }
  /// Every legal move of the current state.
  SmallVector<MoveInstance> getLegalMoves();

  /// Applies `move`; on refusal the state is unchanged and `reason` says
  /// why.
  LogicalResult step(const MoveInstance &move, std::string &reason);
  /// The same from the text `name@location[:params]`.
  LogicalResult step(StringRef move, std::string &reason);
  /// Takes the last move back; fails at the starting kernel.
  LogicalResult undo();
  /// Resets, then applies `sequence`; stops at the first move refused,
  /// naming it in `reason`, leaving the state after the moves that applied.
  LogicalResult replay(ArrayRef<std::string> sequence, std::string &reason);

  /// The current state in canonical text form.
  std::string getText();
  /// A hash of getText(), as 16 hex digits.
  std::string getHash();

  /// Measures the current state, or returns its earlier measurement. A
  /// state whose outputs differ from the starting kernel's beyond the
  /// tolerance is WrongAnswer: its time does not count.
  Measurement measure();
  /// Measures the programs the move sequences reach, as one batch (one
  /// generation of a search): those known from the cache or the database
  /// are reused, the others measured together, each once. Leaves the state
  /// at the last sequence's program. A sequence that does not replay gets
  /// a CompileError naming the move. With a runner, measurements may be
  /// pending; fails with `error` when the runner cannot measure at all.
  FailureOr<std::vector<Measurement>>
  measureBatch(ArrayRef<std::vector<std::string>> sequences,
               std::string &error);
  /// Runs the starting kernel once on this CPU (or the interpreter) for the
  /// reference outputs. Without a runner this is also its measurement (a
  /// time already in the database stands); with one, the status of the
  /// reference run, whose time is this CPU's and is not recorded. The
  /// starting kernel may take kStartTimeFactor x the evaluation's time
  /// limit, and its timed runs stop after the first that takes more than
  /// an eighth of the limit: a naive kernel is often far slower than any
  /// program a search measures, and without its outputs nothing runs.
  Measurement measureStart();
  static constexpr double kStartTimeFactor = 4;
  /// Measures the current state again on this CPU, ignoring the cache and
  /// the database and recording nothing: a search's finalists re-timed, so
  /// that its answer is not merely the luckiest of many noisy measurements.
  /// Not counted among the evaluations. With a runner (or when the
  /// starting kernel fails), the earlier measurement.
  Measurement measureAgain();
  /// Measurements actually run (not reused) so far.
  unsigned getEvaluationCount() const { return evaluations; }
  const EnvironmentOptions &getOptions() const { return options; }
  /// See EvaluationOptions::slowSeconds (the starting kernel's own rule
  /// is measureStart's).
  void setSlowSeconds(double seconds) {
    options.evaluation.slowSeconds = seconds;
  }

private:
  Measurement evaluateCurrent(bool asReference);
  /// evaluateCurrent with every timed run (no slowSeconds), except for the
  /// starting kernel (no moves), which gets measureStart's limits.
  Measurement evaluateAllRuns(bool asReference);
  /// The measurement of the text's state from the cache or the database.
  std::optional<Measurement> lookup(StringRef text);
  /// Hands the reference to the runner (once).
  LogicalResult prepareRunner(std::string &error);
  /// Caches (and records in the database) the measurement of the state
  /// whose text is `text`, reached by `sequence` (comma-separated moves).
  void remember(StringRef text, StringRef sequence, const Measurement &m);

  MLIRContext *ctx;
  EnvironmentOptions options;
  OwningOpRef<ModuleOp> start;
  /// states.back() is the current state; states.front() a copy of start.
  SmallVector<OwningOpRef<ModuleOp>> states;
  SmallVector<std::string> moves;
  llvm::DenseMap<uint64_t, Measurement> cache;
  /// The starting kernel's outputs and measurement, once measured.
  std::optional<EvaluationResult> reference;
  /// With checkAgainstInterpreter: the interpreted starting kernel.
  std::unique_ptr<Interpreter> interpreted;
  Measurement startMeasurement;
  bool startMeasured = false;
  bool runnerPrepared = false;
  unsigned evaluations = 0;
};

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_TUNING_ENVIRONMENT_H
