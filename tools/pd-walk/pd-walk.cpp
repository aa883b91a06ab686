//===- pd-walk.cpp - The move fuzzer: random walks checked for soundness --===//
//
// The soundness test of the move catalogue. pd-walk runs random walks of
// legal moves over the kernels given (files) and over randomly generated
// kernels (--random-kernels, see KernelGenerator.h). Each walk starts from a
// fresh copy of its kernel and, at every step, applies one of the moves that
// enumerateMoves lists as legal: uniformly among the instances
// (--pick=instance), a move name first (--pick=move), or a name weighted by
// 1 / (1 + the times it was applied so far in the run) (--pick=rare). A walk
// takes --steps moves, or a number drawn from [--min-steps, --steps].
//
// After the walk (and after every step with --check-every-step) the
// transformed kernel must verify and, run in the reference interpreter on
// the same seeded inputs as the original, produce the same `out` buffers
// (see compareInterpretedOutputs: integers exactly, floats within 1e-5 of
// each buffer's largest magnitude, NaN, infinities and unwritten elements
// exactly); its concurrent scopes must be free of races (findRace). With
// --jit (or on every --jit-every-th walk) it is also compiled for this CPU
// and its outputs compared with the interpreter's.
//
// A mismatch, a race, a verifier failure, an interpreter error, a move that
// enumerateMoves listed but applyMove refused, a failing compiled kernel, a
// crash or a hang is a FAILURE, reported with the kernel, the walk, its seed
// and its moves in the syntax of `pd-opt --pd-apply`. Walks run in batches
// in forked children (--isolate), so a crash or a hang ends one walk, not
// the run. Every failure is reduced (--minimize): its moves by ddmin, a
// random kernel to the smallest generator size that fails the same way,
// each step replayed in a child; --save-failures=DIR writes the result as a
// lit test.
//
//   pd-walk --walks=1000 --steps=30 add.pd softmax.pd ...
//   pd-walk --random-kernels=500 --walks=20 --min-steps=1 --steps=100 \
//           --pick=rare --jit --jit-every=50 --time-budget=3600
//   pd-walk k.pd --replay="tile_scope@y:1:4,parallelize@y:0"
//
//===----------------------------------------------------------------------===//

#include "Walk.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Support/ChildProcess.h"
#include "PerfDojo/Support/InputChecks.h"
#include "PerfDojo/Support/ToolMain.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include <chrono>
#include <poll.h>

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::perfdojo::walk;
namespace cl = llvm::cl;

static cl::OptionCategory walkCategory("pd-walk options");

static cl::list<std::string>
    inputFilenames(cl::Positional, cl::ZeroOrMore, cl::cat(walkCategory),
                   cl::desc("<kernel.pd|kernel.mlir>..."));
static cl::opt<unsigned> numWalks("walks", cl::cat(walkCategory),
                                  cl::desc("random walks per kernel"),
                                  cl::init(100));
static cl::opt<unsigned> firstWalk(
    "first-walk", cl::cat(walkCategory),
    cl::desc("index of the first walk (walks first-walk .. first-walk+walks-1 "
             "run; with --walks=1 this replays one walk alone)"),
    cl::init(0));
static cl::opt<unsigned> numSteps("steps", cl::cat(walkCategory),
                                  cl::desc("moves per walk (the most, with "
                                           "--min-steps)"),
                                  cl::init(30));
static cl::opt<unsigned> minSteps(
    "min-steps", cl::cat(walkCategory),
    cl::desc("draw each walk's length uniformly from [min-steps, steps] "
             "(default: every walk takes --steps moves)"),
    cl::init(0));
static cl::opt<uint64_t> seed("seed", cl::cat(walkCategory),
                              cl::desc("seed of the move choices; each walk's "
                                       "generator is seeded from it, the "
                                       "kernel name and the walk index"),
                              cl::init(1));
static cl::opt<uint64_t> inputSeed("input-seed", cl::cat(walkCategory),
                                   cl::desc("seed of the interpreter inputs"),
                                   cl::init(1));
static cl::opt<bool> checkEveryStep(
    "check-every-step", cl::cat(walkCategory),
    cl::desc("verify, interpret and compare after every move, not only at the "
             "end of each walk"));
static cl::opt<bool> checkListing(
    "check-listing", cl::cat(walkCategory),
    cl::desc("compare every listing of the legal moves, which reuses the "
             "answers of earlier listings for unchanged scopes, with one that "
             "checks every candidate afresh"));
static cl::opt<std::string>
    replay("replay", cl::cat(walkCategory),
           cl::desc("apply these comma-separated moves to the (single) kernel "
                    "instead of walking, then compare"),
           cl::init(""));
static cl::opt<bool> skipIllegal(
    "skip-illegal", cl::cat(walkCategory),
    cl::desc("with --replay, skip the moves that are illegal where they come "
             "instead of stopping (saved regression tests replay this way, so "
             "that a fix that refuses a move passes them)"));
static cl::opt<std::string> compareWith(
    "compare-with", cl::cat(walkCategory),
    cl::desc("take the reference outputs from this kernel instead of the "
             "original (a check that the comparison can fail)"),
    cl::init(""));
static cl::opt<bool> minimize(
    "minimize", cl::cat(walkCategory),
    cl::desc("reduce each failure to a 1-minimal move sequence (ddmin) and, "
             "for a random kernel, to the smallest generator size that fails "
             "the same way"),
    cl::init(true));
static cl::opt<std::string> saveFailures(
    "save-failures", cl::cat(walkCategory),
    cl::desc("write each reduced failure as a lit regression test into this "
             "directory"),
    cl::init(""));
static cl::opt<PickMode> pickMode(
    "pick", cl::cat(walkCategory),
    cl::desc("how each step chooses among the legal moves"),
    cl::values(clEnumValN(PickMode::Instance, "instance",
                          "uniformly among all legal move instances (the "
                          "default)"),
               clEnumValN(PickMode::Move, "move",
                          "a legal move name uniformly, then one of its "
                          "instances uniformly (more even coverage)"),
               clEnumValN(PickMode::Rare, "rare",
                          "a legal move name with weight 1 / (1 + the times "
                          "it was applied so far in the run), then one of its "
                          "instances uniformly (favours rarely used moves)"),
               clEnumValN(PickMode::Mixed, "mixed",
                          "each walk one of instance, move and rare, chosen "
                          "by its seed")),
    cl::init(PickMode::Instance));
static cl::opt<bool> checkRaces(
    "check-races", cl::cat(walkCategory),
    cl::desc("also check that no two iterations of a parallel, vector, grid, "
             "block or warp scope touch a common storage element with one "
             "writing it (the interpreter runs them in order and cannot see "
             "this)"),
    cl::init(true));
static cl::opt<bool> checkJit(
    "jit", cl::cat(walkCategory),
    cl::desc("also compile each checked kernel for this CPU and compare its "
             "outputs (2 threads) with the original's interpretation "
             "(tolerance 1e-4 of each buffer's largest magnitude, for float32 "
             "rounding); kernels with GPU mappings are not compiled"));
static cl::opt<unsigned> jitEvery(
    "jit-every", cl::cat(walkCategory),
    cl::desc("with --jit, compile only about one walk in N (chosen by the "
             "walk's seed); those walks avoid GPU moves"),
    cl::init(1));
static cl::opt<bool> cpuOnly(
    "cpu-only", cl::cat(walkCategory),
    cl::desc("never choose a GPU move (gpu_grid, gpu_block, gpu_warp, "
             "set_location to shared), so that every walk stays compilable "
             "for the CPU (with --jit)"));
static cl::opt<unsigned> randomKernels(
    "random-kernels", cl::cat(walkCategory),
    cl::desc("also walk this many randomly generated kernels (seeds "
             "random-seed, random-seed+1, ...)"),
    cl::init(0));
static cl::opt<uint64_t> randomSeed(
    "random-seed", cl::cat(walkCategory),
    cl::desc("seed of the first random kernel (default: --seed)"),
    cl::init(0));
static cl::opt<unsigned> randomSize(
    "random-size", cl::cat(walkCategory),
    cl::desc("largest size (number of stages) of a random kernel; each "
             "kernel's size is drawn from [random-min-size, random-size] by "
             "its seed"),
    cl::init(6));
static cl::opt<unsigned>
    randomMinSize("random-min-size", cl::cat(walkCategory),
                  cl::desc("smallest size of a random kernel"), cl::init(1));
static cl::opt<int64_t> randomIterations(
    "random-iterations", cl::cat(walkCategory),
    cl::desc("the most iterations one operation of a random kernel executes "
             "(the product of its scopes' sizes)"),
    cl::init(1024));
static cl::opt<unsigned> randomWalks(
    "random-walks", cl::cat(walkCategory),
    cl::desc("random walks per random kernel (default: --walks)"),
    cl::init(0));
static cl::opt<std::string> dumpKernels(
    "dump-kernels", cl::cat(walkCategory),
    cl::desc("write each random kernel as <dir>/<name>.pd (with --walks=0, "
             "only that)"),
    cl::init(""));
static cl::opt<double> timeBudget(
    "time-budget", cl::cat(walkCategory),
    cl::desc("start no walk after this many seconds (0: no limit)"),
    cl::init(0));
static cl::opt<double>
    progressSeconds("progress", cl::cat(walkCategory),
                    cl::desc("print a progress line every N seconds (0: no)"),
                    cl::init(0));
static cl::opt<unsigned>
    progressWalks("progress-walks", cl::cat(walkCategory),
                  cl::desc("print a progress line every N walks (0: no)"),
                  cl::init(0));
static cl::opt<bool> isolate(
    "isolate", cl::cat(walkCategory),
    cl::desc("run walks and the replays of reductions in forked children, so "
             "that a crash or a hang fails one walk and the run goes on"),
    cl::init(true));
static cl::opt<unsigned>
    numJobs("jobs", cl::cat(walkCategory),
            cl::desc("children walking at once (with --isolate)"),
            cl::init(1));
static cl::opt<unsigned>
    batchSize("batch", cl::cat(walkCategory),
              cl::desc("walks per child (with --isolate)"), cl::init(200));
static cl::opt<double> walkTimeout(
    "walk-timeout", cl::cat(walkCategory),
    cl::desc("kill a walk or a replay silent for this many seconds (with "
             "--isolate)"),
    cl::init(300));
static cl::opt<bool> printStats("move-stats", cl::cat(walkCategory),
                                cl::desc("print how often each move was "
                                         "applied and offered"));
static cl::opt<bool> verbose("verbose", cl::cat(walkCategory),
                             cl::desc("print every walk and its moves"));
static cl::opt<double>
    tolerance("tolerance", cl::cat(walkCategory),
              cl::desc("tolerance of float outputs, relative to the largest "
                       "magnitude in each out buffer of the original"),
              cl::init(1e-5));
static cl::opt<uint64_t>
    maxOps("max-ops", cl::cat(walkCategory),
           cl::desc("interpreter limit on executed operations per run"),
           cl::init(uint64_t(1) << 26));
static cl::opt<uint64_t> maxMiB("max-mib", cl::cat(walkCategory),
                                cl::desc("interpreter memory limit (MiB)"),
                                cl::init(1024));
static cl::opt<std::string> crashOn(
    "debug-crash-on", cl::Hidden, cl::cat(walkCategory),
    cl::desc("abort when applying a legal move of this name (tests the crash "
             "isolation and reduction)"),
    cl::init(""));

//===----------------------------------------------------------------------===//
// Totals and reports
//===----------------------------------------------------------------------===//

namespace {
using Clock = std::chrono::steady_clock;

struct SubjectTotals {
  uint64_t walks = 0, steps = 0, failures = 0, deadEnds = 0;
  double seconds = 0;
};

/// Totals over the run.
struct Totals {
  uint64_t walks = 0, steps = 0, failures = 0, deadEnds = 0;
  uint64_t jitCompiled = 0, jitSkipped = 0;
  std::map<FailureKind, uint64_t> byKind;
  std::map<std::string, uint64_t> applied, offered;
  std::vector<SubjectTotals> subjects;
  uint64_t saved = 0;
};
} // namespace

static Totals totals;
static std::vector<Subject> subjects;
static Clock::time_point startTime;
static std::optional<Clock::time_point> deadline;
static uint64_t scheduled = 0;

static double elapsedSeconds() {
  return std::chrono::duration<double>(Clock::now() - startTime).count();
}

static bool timeIsUp() { return deadline && Clock::now() >= *deadline; }

static void printMoves(raw_ostream &os, ArrayRef<std::string> moves) {
  for (const std::string &m : moves)
    os << "  " << m << "\n";
}

static void printMessage(raw_ostream &os, StringRef prefix,
                         StringRef message) {
  os << prefix << message;
  if (!message.ends_with("\n"))
    os << "\n";
}

static std::string describeWalkOptions() {
  std::string text = " --seed=" + std::to_string(seed) +
                     " --steps=" + std::to_string(numSteps);
  if (minSteps && minSteps < numSteps)
    text += " --min-steps=" + std::to_string(minSteps);
  if (pickMode == PickMode::Move)
    text += " --pick=move";
  if (cpuOnly)
    text += " --cpu-only";
  if (checkJit && jitEvery > 1)
    text += " --jit-every=" + std::to_string(jitEvery);
  return text;
}

/// Reduces a failure and reports (and saves) the result.
static void reduceAndReport(const Subject &subject, const WalkRecord &record,
                            StringRef origin) {
  raw_ostream &os = llvm::outs();
  if (record.kind == FailureKind::Timeout) {
    os << "not reduced: each replay of a hang takes the time limit\n";
    return;
  }
  ReducedFailure red = reduceFailure(subject, record.moves, record.kind);
  if (!red.reproduced) {
    os << "not reproduced: a replay of the " << record.moves.size()
       << " moves in a fresh process does not fail with a "
       << stringifyFailureKind(record.kind) << " (after " << red.replays
       << " replay" << (red.replays == 1 ? "" : "s") << ")\n";
    return;
  }
  os << "minimized to " << red.moves.size() << " move"
     << (red.moves.size() == 1 ? "" : "s");
  if (red.owned)
    os << " on " << red.subject.name << " (size " << red.subject.random->size
       << " of " << subject.random->size << ")";
  os << ":\n";
  printMoves(os, red.moves);
  printMessage(os, "minimized error: ", red.message);
  os << "minimized replay: pd-walk " << red.subject.describe()
     << getCheckOptions(record.kind == FailureKind::Jit) << " --replay=\""
     << joinMoves(red.moves) << "\"\n";
  os << "reduction: " << red.replays << " replays\n";
  if (!saveFailures.empty()) {
    std::string error;
    FailureOr<std::string> path =
        saveRegressionTest(saveFailures, red, origin, error);
    if (failed(path)) {
      os << "cannot save the failure: " << error << "\n";
    } else {
      os << "saved: " << *path << "\n";
      ++totals.saved;
    }
  }
}

static void reportFailure(const Subject &subject, const WalkRecord &record) {
  raw_ostream &os = llvm::outs();
  os << "FAILURE kernel=" << subject.name;
  if (subject.random)
    os << " random-seed=" << subject.random->seed
       << " random-size=" << subject.random->size;
  else
    os << " file=" << subject.file;
  os << " walk=" << record.walk << " seed=" << seed
     << " walk-seed=" << record.walkSeed << " moves=" << record.moves.size()
     << " kind=" << stringifyFailureKind(record.kind) << "\n";
  os << "moves:\n";
  printMoves(os, record.moves);
  printMessage(os, "error: ", record.message);
  bool jit = record.kind == FailureKind::Jit;
  os << "replay: pd-walk " << subject.describe() << getCheckOptions(jit)
     << " --replay=\"" << joinMoves(record.moves) << "\"\n";
  // With --pick=rare (or mixed) a walk depends on the walks before it.
  if (pickMode == PickMode::Instance || pickMode == PickMode::Move)
    os << "replay walk: pd-walk " << subject.describe()
       << getCheckOptions(checkJit) << describeWalkOptions()
       << " --first-walk=" << record.walk << " --walks=1\n";
  if (!subject.random) {
    if (StringRef(subject.file).ends_with(".mlir"))
      os << "apply: pd-opt " << subject.file;
    else
      os << "apply: pd-translate --import-pd " << subject.file << " | pd-opt";
    os << " --pd-apply=" << joinMoves(record.moves) << "\n";
  }
  if (!record.transformed.empty())
    os << "transformed kernel:\n" << record.transformed;
  os.flush();
  if (minimize) {
    std::string origin = "walk " + std::to_string(record.walk) + " of " +
                         subject.name + " (" + subject.describe() +
                         getCheckOptions(checkJit) + describeWalkOptions() +
                         (pickMode == PickMode::Rare    ? " --pick=rare"
                          : pickMode == PickMode::Mixed ? " --pick=mixed"
                                                        : "") +
                         ")";
    reduceAndReport(subject, record, origin);
  }
  os.flush();
}

static void printProgress() {
  double t = elapsedSeconds();
  llvm::outs() << "progress: walks=" << totals.walks << "/" << scheduled
               << " steps=" << totals.steps
               << " failures=" << totals.failures << " ("
               << llvm::format("%.0f", t) << " s, "
               << llvm::format("%.1f", t > 0 ? totals.walks / t : 0)
               << " walks/s)\n";
  llvm::outs().flush();
}

/// Accounts for a finished walk (run here or in a child).
static void finishWalk(const WalkRecord &record) {
  static uint64_t lastProgressWalks = 0;
  static double lastProgressTime = 0;
  const Subject &subject = subjects[record.subject];
  SubjectTotals &st = totals.subjects[record.subject];
  ++st.walks;
  st.steps += record.steps;
  st.deadEnds += record.deadEnd;
  st.seconds += record.seconds;
  ++totals.walks;
  totals.steps += record.steps;
  totals.deadEnds += record.deadEnd;
  totals.jitCompiled += record.jitCompiled;
  totals.jitSkipped += record.jitSkipped;
  for (size_t i = 0; i < record.steps && i < record.moves.size(); ++i)
    ++totals.applied[StringRef(record.moves[i]).split('@').first.str()];
  for (auto &[name, count] : record.offered)
    totals.offered[name] += count;
  bool failed = record.kind != FailureKind::None;
  if (verbose) {
    llvm::outs() << "walk " << record.walk << " of " << subject.name
                 << " (walk-seed " << record.walkSeed
                 << "): " << (failed ? "FAILED" : "ok") << "\n";
    printMoves(llvm::outs(), record.moves);
  }
  if (failed) {
    ++st.failures;
    ++totals.failures;
    ++totals.byKind[record.kind];
    reportFailure(subject, record);
  }
  bool byWalks =
      progressWalks && totals.walks - lastProgressWalks >= progressWalks;
  bool byTime = progressSeconds > 0 &&
                elapsedSeconds() - lastProgressTime >= progressSeconds;
  if (byWalks || byTime) {
    lastProgressWalks = totals.walks;
    lastProgressTime = elapsedSeconds();
    printProgress();
  }
}

//===----------------------------------------------------------------------===//
// Scheduling
//===----------------------------------------------------------------------===//

/// The walks of the run, in order: round r runs walk first-walk+r of every
/// subject that has that many, so that a time budget cuts evenly.
static std::vector<std::pair<unsigned, unsigned>> schedule;

static void makeSchedule() {
  unsigned rounds = 0;
  for (const Subject &s : subjects)
    rounds = std::max(rounds, s.walks);
  for (unsigned r = 0; r < rounds; ++r)
    for (auto [i, s] : llvm::enumerate(subjects))
      if (r < s.walks)
        schedule.push_back({unsigned(i), firstWalk + r});
  scheduled = schedule.size();
}

/// The walk under way in this process (--isolate=false, --replay), for the
/// crash handler.
static struct {
  const Subject *subject = nullptr;
  int64_t walk = -1;
} crashContext;

static void printCrashContext(void *) {
  if (!crashContext.subject)
    return;
  llvm::errs() << "FAILURE (crash while " << getStage()
               << ") kernel=" << crashContext.subject->name << " "
               << crashContext.subject->describe();
  if (crashContext.walk >= 0)
    llvm::errs() << " walk=" << crashContext.walk << " seed=" << seed;
  llvm::errs() << "\n";
}

/// Runs the walks in this process, in order.
static void runInProcess() {
  // Applications so far, for PickMode::Rare (totals.applied counts them
  // when each walk is reported).
  std::map<std::string, uint64_t> applied;
  for (auto [subject, walk] : schedule) {
    if (timeIsUp())
      break;
    crashContext.subject = &subjects[subject];
    crashContext.walk = walk;
    finishWalk(runWalk(subjects[subject], subject, walk, applied));
  }
  crashContext.subject = nullptr;
}

namespace {
/// A child running a batch of walks: schedule positions [next, end).
struct Job {
  std::unique_ptr<ChildProcess> child;
  size_t next = 0, end = 0;
  /// The walk under way (its schedule position) and the moves begun so
  /// far, the last one applied or not.
  std::optional<size_t> current;
  SmallVector<std::string> moves;
  bool lastApplied = false;
  std::string stage;
  bool finished = false;
  Clock::time_point lastHeard;
};
} // namespace

/// The body of a child: walks positions [from, to) of the schedule.
static int runBatch(ChildChannel &channel, size_t from, size_t to) {
  setChannel(&channel);
  // Applications are counted from the ones seen so far (PickMode::Rare):
  // totals.applied as the parent had it when it forked this child.
  for (size_t pos = from; pos < to && !timeIsUp(); ++pos) {
    auto [subject, walk] = schedule[pos];
    channel.send("B " + std::to_string(pos));
    WalkRecord record =
        runWalk(subjects[subject], subject, walk, totals.applied);
    channel.send("R\t" + record.encode());
  }
  channel.send("Z");
  return 0;
}

static bool startJob(std::vector<Job> &jobs, size_t from, size_t to) {
  std::string error;
  Job job;
  job.next = from;
  job.end = to;
  job.lastHeard = Clock::now();
  job.child = ChildProcess::start(
      [&](ChildChannel &c) { return runBatch(c, from, to); }, error);
  if (!job.child) {
    llvm::errs() << "pd-walk: " << error << "\n";
    return false;
  }
  jobs.push_back(std::move(job));
  return true;
}

/// Handles one line from a child.
static void handleLine(Job &job, StringRef line) {
  if (line.consume_front("B ")) {
    size_t pos = 0;
    (void)line.getAsInteger(10, pos);
    job.current = pos;
    job.moves.clear();
    job.stage.clear();
    job.lastApplied = false;
  } else if (line.consume_front("C ")) {
    job.stage = line.str();
  } else if (line.consume_front("M ")) {
    job.moves.push_back(line.str());
    job.lastApplied = false;
  } else if (line == "A") {
    job.lastApplied = true;
  } else if (line.consume_front("R\t")) {
    WalkRecord record = WalkRecord::decode(line);
    job.next = *job.current + 1;
    job.current.reset();
    finishWalk(record);
  } else if (line == "Z") {
    job.finished = true;
  }
}

/// A child ended or was killed: reports the walk it was in, if any, and
/// starts a new child for the rest of its batch.
static void endJob(std::vector<Job> &jobs, size_t index, bool timedOut) {
  Job job = std::move(jobs[index]);
  jobs.erase(jobs.begin() + index);
  std::string how = job.child->wait();
  if (!job.current) {
    if (!job.finished && job.next < job.end)
      llvm::errs() << "pd-walk: a child ended between walks ("
                   << (how.empty() ? "exit status 0" : how)
                   << "); walks " << job.next << " to " << job.end - 1
                   << " of the schedule are skipped\n";
    return;
  }
  size_t pos = *job.current;
  auto [subject, walk] = schedule[pos];
  WalkRecord record;
  record.subject = subject;
  record.walk = walk;
  record.moves = job.moves;
  record.steps =
      job.moves.size() - (job.moves.empty() || job.lastApplied ? 0 : 1);
  record.kind = timedOut ? FailureKind::Timeout : FailureKind::Crash;
  std::string stage = job.stage.empty() ? "starting the walk" : job.stage;
  if (timedOut) {
    llvm::raw_string_ostream(record.message)
        << "the walk was silent for " << llvm::format("%g", double(walkTimeout))
        << " s while " << stage << "; killed";
  } else {
    record.message = "the walk crashed (" +
                     (how.empty() ? std::string("exit status 0") : how) +
                     ") while " + stage;
    std::string err = getCrashExcerpt(*job.child);
    if (!err.empty())
      record.message += ":\n" + err;
  }
  record.walkSeed = getWalkSeed(subjects[subject].name, walk);
  finishWalk(record);
  if (pos + 1 < job.end && !timeIsUp())
    startJob(jobs, pos + 1, job.end);
}

/// Runs the walks in batches in forked children, --jobs at a time.
static void runIsolated() {
  std::vector<Job> jobs;
  size_t next = 0;
  while (true) {
    while (jobs.size() < std::max(1u, unsigned(numJobs)) &&
           next < schedule.size() && !timeIsUp()) {
      size_t to = std::min(schedule.size(),
                           next + std::max(1u, unsigned(batchSize)));
      if (!startJob(jobs, next, to))
        return;
      next = to;
    }
    if (jobs.empty())
      break;
    std::vector<struct pollfd> fds;
    for (Job &job : jobs)
      fds.push_back({job.child->getFD(), POLLIN, 0});
    int r = poll(fds.data(), fds.size(), 200);
    if (r < 0 && errno != EINTR)
      break;
    uint64_t failuresBefore = totals.failures;
    for (size_t i = jobs.size(); i-- > 0;) {
      Job &job = jobs[i];
      bool ended = false;
      if (fds[i].revents) {
        std::vector<std::string> lines;
        ended = !job.child->readAvailable(lines);
        for (const std::string &line : lines)
          handleLine(job, line);
        job.lastHeard = Clock::now();
      }
      if (ended) {
        endJob(jobs, i, /*timedOut=*/false);
        continue;
      }
      double silent =
          std::chrono::duration<double>(Clock::now() - job.lastHeard).count();
      if (silent > walkTimeout) {
        job.child->kill();
        endJob(jobs, i, /*timedOut=*/true);
      }
    }
    // A reduction takes a while: the children waited for us meanwhile.
    if (totals.failures != failuresBefore)
      for (Job &job : jobs)
        job.lastHeard = Clock::now();
  }
}

//===----------------------------------------------------------------------===//
// Driver
//===----------------------------------------------------------------------===//

static OwningOpRef<ModuleOp> loadFile(StringRef filename, MLIRContext &context,
                                      llvm::SourceMgr &sourceMgr) {
  std::string errorMessage;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(filename, &errorMessage);
  if (!file) {
    llvm::errs() << "pd-walk: " << errorMessage << "\n";
    return nullptr;
  }
  unsigned id = sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  const llvm::MemoryBuffer *buffer = sourceMgr.getMemoryBuffer(id);
  if (filename.ends_with(".mlir")) {
    if (std::optional<std::string> tooDeep = checkInputNesting(
            buffer->getBuffer(), buffer->getBufferIdentifier())) {
      llvm::errs() << *tooDeep << "\n";
      return nullptr;
    }
    return parseSourceString<ModuleOp>(buffer->getBuffer(),
                                       ParserConfig(&context),
                                       buffer->getBufferIdentifier());
  }
  return importTextForm(buffer->getBuffer(), buffer->getBufferIdentifier(),
                        &context);
}

/// Replays --replay on the single subject.
static void replaySubject(const Subject &subject) {
  SmallVector<StringRef> parts;
  StringRef(replay).split(parts, ',', -1, /*KeepEmpty=*/false);
  SmallVector<std::string> moves;
  for (StringRef p : parts)
    if (!p.trim().empty())
      moves.push_back(p.trim().str());
  crashContext.subject = &subject;
  ReplayResult result = replayMoves(subject, moves, skipIllegal, checkJit);
  crashContext.subject = nullptr;
  ++totals.walks;
  ++totals.subjects[0].walks;
  totals.steps += result.applied.size() - (result.kind == FailureKind::Refused);
  if (result.illegal) {
    ++totals.failures;
    llvm::outs() << "ERROR kernel=" << subject.name << ": move "
                 << *result.illegal + 1 << " of the replay: " << result.message
                 << "\n";
    return;
  }
  size_t skipped = moves.size() - result.applied.size();
  if (result.kind == FailureKind::None) {
    llvm::outs() << "replay of " << moves.size() << " move"
                 << (moves.size() == 1 ? "" : "s") << " on " << subject.name
                 << ": ok";
    if (skipped)
      llvm::outs() << " (" << skipped << " illegal, skipped)";
    llvm::outs() << "\n";
    return;
  }
  ++totals.failures;
  ++totals.byKind[result.kind];
  WalkRecord record;
  record.kind = result.kind;
  record.message = result.message;
  record.transformed = result.transformed;
  for (size_t i : result.applied)
    record.moves.push_back(moves[i]);
  record.steps = record.moves.size();
  // Report as a walk would, without the walk.
  raw_ostream &os = llvm::outs();
  os << "FAILURE kernel=" << subject.name << " " << subject.describe()
     << " moves=" << record.moves.size()
     << " kind=" << stringifyFailureKind(record.kind) << "\n";
  os << "moves:\n";
  printMoves(os, record.moves);
  printMessage(os, "error: ", record.message);
  os << "replay: pd-walk " << subject.describe()
     << getCheckOptions(checkJit) << " --replay=\""
     << joinMoves(record.moves) << "\"\n";
  if (!record.transformed.empty())
    os << "transformed kernel:\n" << record.transformed;
  if (minimize && !record.moves.empty())
    reduceAndReport(subject, record, "a --replay of " +
                                         std::to_string(moves.size()) +
                                         " moves");
}

static int runTool(int argc, char **argv);

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  return runWithLargeStack([&] { return runTool(argc, argv); });
}

static int runTool(int argc, char **argv) {
  cl::HideUnrelatedOptions(walkCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pd-walk: the move fuzzer: random walks of legal moves over kernel "
      "files and random kernels, each checked against the original kernel "
      "in the reference interpreter (and compiled, with --jit)\n\n"
      "Float outputs match when |transformed - original| <= tolerance * the "
      "largest finite |original| of the buffer (reassociated reductions "
      "allowed); integers, NaNs, infinities and unwritten elements must match "
      "exactly.\n");
  startTime = Clock::now();
  bool replaying = replay.getNumOccurrences() > 0;
  size_t numSubjectsGiven = inputFilenames.size() + randomKernels;
  if (replaying && numSubjectsGiven != 1) {
    llvm::errs() << "pd-walk: --replay needs exactly one kernel file, found "
                 << numSubjectsGiven << "\n";
    return 1;
  }
  if (!numSubjectsGiven) {
    llvm::errs() << "pd-walk: no kernel: give kernel files or "
                    "--random-kernels=N\n";
    return 1;
  }
  if (randomIterations < 1) {
    llvm::errs() << "pd-walk: --random-iterations=" << randomIterations
                 << " must be at least 1\n";
    return 1;
  }
  if (randomMinSize < 1 || randomMinSize > randomSize) {
    llvm::errs() << "pd-walk: --random-min-size=" << randomMinSize
                 << " must be between 1 and --random-size=" << randomSize
                 << "\n";
    return 1;
  }

  config.seed = seed;
  config.inputSeed = inputSeed;
  config.steps = numSteps;
  config.minSteps =
      minSteps ? std::min<unsigned>(minSteps, numSteps) : unsigned(numSteps);
  config.pick = pickMode;
  config.checkEveryStep = checkEveryStep;
  config.checkListing = checkListing;
  config.checkRaces = checkRaces;
  config.cpuOnly = cpuOnly;
  config.jitEvery = checkJit ? std::max(1u, unsigned(jitEvery)) : 0;
  config.tolerance = tolerance;
  config.toleranceGiven = tolerance.getNumOccurrences() > 0;
  config.maxOps = maxOps;
  config.maxMiB = maxMiB;
  config.isolate = isolate;
  config.walkTimeout = walkTimeout;
  config.crashOn = crashOn;
  config.compareWith = compareWith;
  config.generator.maxIterations = randomIterations;
  if (timeBudget > 0)
    deadline = startTime + std::chrono::duration_cast<Clock::duration>(
                               std::chrono::duration<double>(timeBudget));

  registerAllMoves();
  DialectRegistry registry;
  registerAllPerfDojo(registry);
  MLIRContext context(registry);
  // Children are forked: no thread pool may hold a lock at a fork.
  context.disableMultithreading();
  context.loadDialect<PerfDojoDialect>();
  context.printOpOnDiagnostic(false);
  llvm::SourceMgr sourceMgr;
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  llvm::sys::AddSignalHandler(printCrashContext, nullptr);

  std::optional<std::vector<BufferData>> override;
  if (!compareWith.empty()) {
    OwningOpRef<ModuleOp> other = loadFile(compareWith, context, sourceMgr);
    if (!other)
      return 1;
    KernelOp kernel;
    other->walk([&](KernelOp k) { kernel = kernel ? kernel : k; });
    if (!kernel) {
      llvm::errs() << "pd-walk: no perfdojo.kernel in '" << compareWith
                   << "'\n";
      return 1;
    }
    std::string error;
    override.emplace();
    if (failed(interpret(kernel, *override, error))) {
      llvm::errs() << "pd-walk: cannot interpret '" << compareWith << "':\n"
                   << error;
      return 1;
    }
  }

  // The subjects: every kernel of every file, then the random kernels.
  SmallVector<OwningOpRef<ModuleOp>> modules;
  uint64_t brokenKernels = 0;
  for (const std::string &filename : inputFilenames) {
    modules.push_back(loadFile(filename, context, sourceMgr));
    if (!modules.back())
      return 1;
    SmallVector<KernelOp> kernels;
    modules.back()->walk([&](KernelOp k) { kernels.push_back(k); });
    if (kernels.empty()) {
      llvm::errs() << "pd-walk: no perfdojo.kernel in '" << filename << "'\n";
      return 1;
    }
    if (replaying && kernels.size() != 1) {
      llvm::errs() << "pd-walk: --replay needs a file with one kernel; '"
                   << filename << "' holds " << kernels.size() << "\n";
      return 1;
    }
    for (KernelOp kernel : kernels) {
      Subject subject;
      subject.file = filename;
      subject.name = kernel.getSymName().str();
      subject.module = *modules.back();
      subject.walks = numWalks;
      std::string error;
      if (failed(interpret(kernel, subject.reference, error))) {
        llvm::outs() << "FAILURE kernel=" << subject.name
                     << " file=" << filename
                     << ": the original kernel does not run:\n"
                     << error;
        ++brokenKernels;
        continue;
      }
      if (override)
        subject.reference = *override;
      subjects.push_back(std::move(subject));
    }
  }
  uint64_t firstSeed =
      randomSeed.getNumOccurrences() ? uint64_t(randomSeed) : uint64_t(seed);
  for (unsigned i = 0; i < randomKernels; ++i) {
    RandomOrigin origin;
    origin.seed = firstSeed + i;
    origin.size = randomMinSize +
                  mixSeed(origin.seed) % (randomSize - randomMinSize + 1);
    Subject subject;
    subject.walks =
        randomWalks.getNumOccurrences() ? unsigned(randomWalks) : numWalks;
    std::string error;
    OwningOpRef<ModuleOp> module =
        makeRandomSubject(&context, origin, subject, error);
    if (!module) {
      llvm::outs() << "FAILURE kernel=" << getRandomKernelName(origin)
                   << ": " << error << "\n";
      ++brokenKernels;
      continue;
    }
    if (!dumpKernels.empty()) {
      SmallString<256> path(dumpKernels);
      llvm::sys::path::append(path, subject.name + ".pd");
      std::error_code ec = llvm::sys::fs::create_directories(dumpKernels);
      llvm::raw_fd_ostream os(path, ec);
      if (ec || failed(exportTextForm(module->getOperation(), os))) {
        llvm::errs() << "pd-walk: cannot write '" << path << "'"
                     << (ec ? ": " + ec.message() : "") << "\n";
        return 1;
      }
    }
    modules.push_back(std::move(module));
    subjects.push_back(std::move(subject));
  }
  if (randomKernels)
    llvm::outs() << "random kernels: " << randomKernels << " (seeds "
                 << firstSeed << " to " << firstSeed + randomKernels - 1
                 << ", sizes " << randomMinSize << " to " << randomSize
                 << ")\n";
  totals.failures = brokenKernels;
  totals.subjects.resize(subjects.size());

  if (replaying) {
    if (!subjects.empty())
      replaySubject(subjects[0]);
  } else {
    makeSchedule();
    if (isolate)
      runIsolated();
    else
      runInProcess();
  }

  // Per-kernel lines for files; random kernels summed, and those that
  // failed.
  if (!replaying) {
    SubjectTotals randomSum;
    uint64_t randomCount = 0;
    for (auto [subject, st] : llvm::zip(subjects, totals.subjects)) {
      if (subject.random) {
        ++randomCount;
        randomSum.walks += st.walks;
        randomSum.steps += st.steps;
        randomSum.deadEnds += st.deadEnds;
        randomSum.failures += st.failures;
        randomSum.seconds += st.seconds;
        if (!st.failures)
          continue;
      }
      llvm::outs() << "kernel " << subject.name << ": walks=" << st.walks
                   << " steps=" << st.steps << " dead-ends=" << st.deadEnds
                   << " failures=" << st.failures << " ("
                   << llvm::format("%.2f", st.seconds) << " s)\n";
    }
    if (randomCount)
      llvm::outs() << "random kernels: kernels=" << randomCount
                   << " walks=" << randomSum.walks
                   << " steps=" << randomSum.steps
                   << " dead-ends=" << randomSum.deadEnds
                   << " failures=" << randomSum.failures << " ("
                   << llvm::format("%.2f", randomSum.seconds) << " s)\n";
  }
  if (printStats) {
    llvm::outs() << "stats: dead-ends=" << totals.deadEnds << "\n";
    for (const std::unique_ptr<Move> &move : MoveRegistry::get().getMoves()) {
      std::string name = move->getName().str();
      llvm::outs() << "stats: " << llvm::left_justify(name, 20)
                   << " applied=" << totals.applied[name]
                   << " offered=" << totals.offered[name] << "\n";
    }
  }
  auto count = [](FailureKind kind) { return totals.byKind[kind]; };
  llvm::outs() << "summary: kernels=" << subjects.size() + brokenKernels
               << " walks=" << totals.walks << " steps=" << totals.steps
               << " failures=" << totals.failures;
  if (checkJit)
    llvm::outs() << " compiled=" << totals.jitCompiled
                 << " not-compiled(gpu)=" << totals.jitSkipped;
  llvm::outs() << " mismatches=" << count(FailureKind::Mismatch)
               << " jit-mismatches=" << count(FailureKind::Jit)
               << " crashes=" << count(FailureKind::Crash)
               << " timeouts=" << count(FailureKind::Timeout)
               << " invalid=" << count(FailureKind::Invalid)
               << " races=" << count(FailureKind::Race)
               << " interpreter-errors=" << count(FailureKind::InterpreterError)
               << " refused=" << count(FailureKind::Refused)
               << " listing=" << count(FailureKind::Listing);
  if (!saveFailures.empty())
    llvm::outs() << " saved=" << totals.saved;
  llvm::outs() << " seconds=" << llvm::format("%.1f", elapsedSeconds())
               << "\n";
  llvm::outs().flush();
  return totals.failures ? 1 : 0;
}
