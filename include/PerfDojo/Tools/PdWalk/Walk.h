//===- Walk.h - pd-walk's walks, checks, replays, reductions -----*- C++
//-*-===//
//
// The parts of pd-walk below its scheduler: the kernels under test
// ("subjects"), the soundness check of a transformed kernel, one random walk,
// the replay of a move sequence, and the reduction of a failure to a short
// sequence on a small kernel, saved as a lit test. A Walker does these with
// one WalkConfig; PdWalk.h schedules the walks (in forked children) and
// reports.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDWALK_WALK_H
#define PERFDOJO_TOOLS_PDWALK_WALK_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Search/Interpreter/Interpreter.h"
#include "PerfDojo/Search/Interpreter/KernelGenerator.h"
#include "PerfDojo/Transforms/Move.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include "mlir/IR/PatternMatch.h"
#include <map>
#include <optional>
#include <string>

namespace mlir {
namespace perfdojo {
class ChildChannel;
class ChildProcess;
struct ChildOptions;
namespace walk {

/// How a walk picks its next move.
enum class PickMode {
  /// Uniformly among all legal move instances.
  Instance,
  /// A legal move name uniformly, then one of its instances.
  Move,
  /// A legal move name with weight 1 / (1 + times applied so far in the
  /// run), then one of its instances.
  Rare,
  /// Each walk one of the above, chosen by its seed.
  Mixed,
};

/// Everything the command line decides about walks and checks.
struct WalkConfig {
  uint64_t seed = 1, inputSeed = 1;
  unsigned steps = 30, minSteps = 30;
  PickMode pick = PickMode::Instance;
  bool checkEveryStep = false, checkRaces = true, cpuOnly = false;
  /// Compare every listing with one that checks every candidate afresh.
  bool checkListing = false;
  /// Compile the final kernel of every `jitEvery`-th walk (0: never).
  unsigned jitEvery = 0;
  /// In those compile checks, run a kernel with GPU mappings on the GPU
  /// emulator (the GPU lowering, run on this CPU) instead of skipping it;
  /// the compiled walks then take GPU moves too.
  bool emulateGPU = false;
  double tolerance = 1e-5;
  bool toleranceGiven = false;
  uint64_t maxOps = uint64_t(1) << 26, maxMiB = 1024;
  /// Forked children for walks and replays (else all in this process).
  bool isolate = true;
  /// A hung walk or replay is killed after this many seconds.
  double walkTimeout = 300;
  /// Test hook: abort when applying a move of this name.
  std::string crashOn;
  /// The --compare-with file (echoed in replay commands).
  std::string compareWith;
  /// The random kernels' generator options other than their size.
  RandomKernelOptions generator;
};

/// Where a random kernel comes from.
struct RandomOrigin {
  uint64_t seed = 0;
  unsigned size = 0;
};

/// A kernel under test and its reference outputs.
struct Subject {
  /// The file it was read from; empty for a random kernel.
  std::string file;
  std::string name;
  ModuleOp module;
  std::vector<BufferData> reference;
  std::optional<RandomOrigin> random;
  /// Walks to run on it.
  unsigned walks = 0;
};

/// The name of the random kernel of (seed, size).
std::string getRandomKernelName(const RandomOrigin &origin);
KernelOp findKernel(ModuleOp module, StringRef name);

/// What went wrong. Numbered for the reports between processes.
enum class FailureKind {
  None = 0,
  /// The interpreter's outputs differ from the original's.
  Mismatch,
  /// The interpreter refuses the transformed kernel (reads an unwritten
  /// element, say).
  InterpreterError,
  /// Two iterations of a concurrent scope conflict.
  Race,
  /// The transformed kernel does not verify, or a move does not print back.
  Invalid,
  /// enumerateMoves lists a move that applyMove refuses.
  Refused,
  /// The compiled kernel fails or differs from the interpreter.
  Jit,
  /// The tool crashed (a signal, an assertion).
  Crash,
  /// The walk or replay ran past --walk-timeout.
  Timeout,
  /// The listing that reuses earlier answers differs from a fresh one
  /// (--check-listing).
  Listing,
};
StringRef stringifyFailureKind(FailureKind kind);

/// One walk as it ended.
struct WalkRecord {
  unsigned subject = 0, walk = 0;
  uint64_t walkSeed = 0;
  unsigned steps = 0;
  bool deadEnd = false;
  FailureKind kind = FailureKind::None;
  std::string message;
  /// The transformed kernel in text form, on a failure.
  std::string transformed;
  /// The moves taken (on a failure, the last one may be the refused one).
  SmallVector<std::string> moves;
  bool jitCompiled = false, jitSkipped = false;
  /// With WalkConfig::emulateGPU: the kernel ran on the GPU emulator, or
  /// the GPU lowering or the emulator refused it (a limit such as the
  /// shared memory of a block, not a fault; `refusal` says which).
  bool emulated = false, emulationRefused = false;
  std::string refusal;
  /// The final kernel was too large for the interpreter's limits
  /// (WalkConfig::maxMiB, maxOps): not checked, not a failure.
  bool unchecked = false;
  /// Whether the CPU lowering refused the kernel for the size of the code
  /// it would emit (KernelEmitter::kCodeSizeRefusal): not compiled, not a
  /// failure.
  bool jitTooLarge = false;
  double seconds = 0;
  /// Legal instances offered, by move name (for --move-stats).
  std::map<std::string, uint64_t> offered;

  std::string encode() const;
  static WalkRecord decode(StringRef line);
};

/// The outcome of replaying a move sequence.
struct ReplayResult {
  FailureKind kind = FailureKind::None;
  std::string message;
  /// Positions (in the replayed sequence) of the moves that were applied,
  /// up to the failure.
  SmallVector<size_t> applied;
  /// With `lenient` false: the position of the first illegal move, if any.
  std::optional<size_t> illegal;
  /// The transformed kernel in text form, when it failed a check.
  std::string transformed;
  /// On success, what checked the final kernel beyond the interpreter
  /// ("compiled", "emulated on the GPU", ...; empty: the interpreter
  /// alone).
  std::string checks;
};

/// A failure reduced: the (possibly smaller) kernel and the moves.
struct ReducedFailure {
  /// Set when a smaller random kernel reproduces the failure; it owns the
  /// module of `subject`.
  OwningOpRef<ModuleOp> owned;
  Subject subject;
  SmallVector<std::string> moves;
  FailureKind kind = FailureKind::None;
  std::string message;
  std::string transformed;
  /// Whether a replay of the original moves reproduced the failure at all.
  bool reproduced = false;
  unsigned replays = 0;
};

/// How pd-walk starts its children: their stderr captured (for
/// getCrashExcerpt), their crash reports without symbols (symbolizing would
/// start a process per crash), llvm::outs() and errs() flushed around the
/// fork.
ChildOptions getWalkChildOptions();

/// What went wrong in a child: what it wrote to stderr before LLVM's stack
/// dump (the assertion or error message).
std::string getCrashExcerpt(const ChildProcess &child);

/// Runs walks, checks, replays and reductions with one configuration. While
/// it works it knows its stage ("applying the last move", ...) and, with a
/// channel, sends it and the moves begun and applied to the parent process,
/// which reports a crash or a hang with them. `config` must outlive it.
class Walker {
public:
  explicit Walker(const WalkConfig &config) : config(config) {}
  const WalkConfig &getConfig() const { return config; }

  /// Sends progress notes over `channel` (in a child), or nowhere (null).
  void setChannel(ChildChannel *channel) { this->channel = channel; }
  /// The stage of the walk or replay under way, for crash reports.
  const char *getStage() const { return stage; }

  /// `subject.file`, or how to regenerate the random kernel (pd-walk
  /// options).
  std::string describe(const Subject &subject) const;
  /// Generates the random kernel of `origin` into a subject; on failure
  /// (a generator bug) returns null and sets `error`.
  OwningOpRef<ModuleOp> makeRandomSubject(MLIRContext *context,
                                          const RandomOrigin &origin,
                                          Subject &subject,
                                          std::string &error) const;
  /// Interprets `kernel` on the inputs of config.inputSeed; fills `outputs`
  /// with its `out` buffers, or fails with the diagnostics in `error`.
  LogicalResult interpret(KernelOp kernel, std::vector<BufferData> &outputs,
                          std::string &error) const;

  /// The seed of walk `walk` of the kernel named `kernel` (from
  /// config.seed): independent of the other kernels and of the other walks,
  /// so any walk can be replayed alone.
  uint64_t getWalkSeed(StringRef kernel, uint64_t walk) const;

  /// Runs walk `walk` of `subject` (index `index` of the run). `applied`
  /// counts the moves applied so far in the run (for PickMode::Rare) and is
  /// updated.
  WalkRecord runWalk(const Subject &subject, unsigned index, unsigned walk,
                     std::map<std::string, uint64_t> &applied);

  /// Replays `moves` on a fresh copy of the subject, checking the result
  /// (and each intermediate kernel with --check-every-step) and listing the
  /// legal moves of the final kernel; with `jit`, also compiling it. A move
  /// that is illegal where it comes is skipped when `lenient`, else the
  /// replay stops there.
  ReplayResult replayMoves(const Subject &subject, ArrayRef<std::string> moves,
                           bool lenient, bool jit);
  /// The same in a forked child when config.isolate (a crash or a hang is
  /// then a result, not the end of the tool).
  ReplayResult replayIsolated(const Subject &subject,
                              ArrayRef<std::string> moves, bool lenient,
                              bool jit);

  /// Reduces `moves` on `subject`, failing with `kind`, to a 1-minimal
  /// sequence (ddmin), and for a random kernel also to the smallest
  /// generator size that still fails the same way.
  ReducedFailure reduceFailure(const Subject &subject,
                               ArrayRef<std::string> moves, FailureKind kind);

  /// Writes the reduced failure as a lit test into `dir`; returns its path,
  /// or fails with `error`.
  FailureOr<std::string> saveRegressionTest(StringRef dir,
                                            const ReducedFailure &reduction,
                                            StringRef origin,
                                            std::string &error) const;

  /// The check options of a replay command line (" --input-seed=1 ...").
  std::string getCheckOptions(bool jit) const;

  /// What `record`'s flags say was checked (ReplayResult::checks).
  static std::string describeChecks(const WalkRecord &record);
  /// describeChecks of a kernel past the interpreter's limits.
  static constexpr llvm::StringLiteral kUncheckedText =
      "not checked: past the interpreter's limits";

private:
  void setStage(const char *stage);
  /// A move is about to be applied (`what`: its text, or its position in a
  /// replay).
  void noteMove(StringRef what);
  /// The move noted last was applied.
  void noteApplied();
  /// Verifies, interprets and compares `kernel` with the reference; with
  /// `jit`, also compiles it (or emulates it, see WalkConfig::emulateGPU)
  /// and compares its outputs, noting in `record` what was done.
  FailureKind checkKernel(const Subject &subject, KernelOp kernel, bool jit,
                          std::string &message, WalkRecord *record = nullptr);
  /// The compile check of a kernel with GPU mappings: the GPU emulator.
  FailureKind emulateKernel(const Subject &subject, KernelOp kernel,
                            std::string &message, WalkRecord *record);
  FailureKind applyText(IRRewriter &rewriter, KernelOp kernel,
                        const std::string &text, std::optional<bool> listed,
                        bool &illegal, std::string &message);

  const WalkConfig &config;
  ChildChannel *channel = nullptr;
  const char *stage = "";
};

std::string joinMoves(ArrayRef<std::string> moves);

} // namespace walk
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDWALK_WALK_H
