//===- PdWalk.cpp - pd-walk's schedule, children and reports --------------===//
//
// See PdWalk.h. A run loads the kernels (files, then random kernels), makes
// the schedule of walks, runs it here or in batches in forked children
// (ChildProcess.h) that report each walk as a line, and accounts for, reports
// and reduces (Reduce.cpp) every failure; or it replays one move sequence.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Tools/PdWalk/PdWalk.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Support/ChildProcess.h"
#include "PerfDojo/Support/InputChecks.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/SourceMgr.h"
#include <chrono>
#include <poll.h>

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::perfdojo::walk;

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
  uint64_t jitCompiled = 0, jitSkipped = 0, jitTooLarge = 0;
  uint64_t emulated = 0, emulationRefused = 0, unchecked = 0;
  /// The GPU lowering's and the emulator's refusals, by class.
  std::map<std::string, uint64_t> refusals;
  std::map<FailureKind, uint64_t> byKind;
  std::map<std::string, uint64_t> applied, offered;
  std::vector<SubjectTotals> subjects;
  uint64_t saved = 0;
};

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

/// One run of pd-walk: its options, subjects, schedule and totals.
class WalkRun {
public:
  explicit WalkRun(const PdWalkOptions &options)
      : options(options), config(options.walk), walker(options.walk) {}
  int run();

private:
  double elapsedSeconds() const {
    return std::chrono::duration<double>(Clock::now() - startTime).count();
  }
  bool timeIsUp() const { return deadline && Clock::now() >= *deadline; }
  std::string describeWalkOptions() const;
  void reduceAndReport(const Subject &subject, const WalkRecord &record,
                       StringRef origin);
  void reportFailure(const Subject &subject, const WalkRecord &record);
  void printProgress();
  void finishWalk(const WalkRecord &record);
  void makeSchedule();
  static void printCrashContext(void *);
  void runInProcess();
  int runBatch(ChildChannel &channel, size_t from, size_t to);
  bool startJob(std::vector<Job> &jobs, size_t from, size_t to);
  void handleLine(Job &job, StringRef line);
  void endJob(std::vector<Job> &jobs, size_t index, bool timedOut);
  void runIsolated();
  void replaySubject(const Subject &subject);

  const PdWalkOptions &options;
  const WalkConfig &config;
  Walker walker;
  Totals totals;
  std::vector<Subject> subjects;
  Clock::time_point startTime;
  std::optional<Clock::time_point> deadline;
  uint64_t scheduled = 0;
  /// The walks of the run, in order: round r runs walk first-walk+r of
  /// every subject that has that many, so that a time budget cuts evenly.
  std::vector<std::pair<unsigned, unsigned>> schedule;
  /// The walk under way in this process (--isolate=false, --replay), for
  /// the crash handler.
  struct {
    const Subject *subject = nullptr;
    int64_t walk = -1;
  } crashContext;
  /// For the progress lines: the walks and the time at the last one.
  uint64_t lastProgressWalks = 0;
  double lastProgressTime = 0;
};
} // namespace

static void printMoves(raw_ostream &os, ArrayRef<std::string> moves) {
  for (const std::string &m : moves)
    os << "  " << m << "\n";
}

static void printMessage(raw_ostream &os, StringRef prefix, StringRef message) {
  os << prefix << message;
  if (!message.ends_with("\n"))
    os << "\n";
}

std::string WalkRun::describeWalkOptions() const {
  std::string text = " --seed=" + std::to_string(config.seed) +
                     " --steps=" + std::to_string(config.steps);
  if (config.minSteps < config.steps)
    text += " --min-steps=" + std::to_string(config.minSteps);
  if (config.pick == PickMode::Move)
    text += " --pick=move";
  if (config.cpuOnly)
    text += " --cpu-only";
  if (config.jitEvery > 1)
    text += " --jit-every=" + std::to_string(config.jitEvery);
  // (Which walks keep off GPU moves depends on it.)
  if (config.jitEvery > 1 && config.emulateGPU)
    text += " --emulate-gpu";
  return text;
}

/// Reduces a failure and reports (and saves) the result.
void WalkRun::reduceAndReport(const Subject &subject, const WalkRecord &record,
                              StringRef origin) {
  raw_ostream &os = llvm::outs();
  if (record.kind == FailureKind::Timeout) {
    os << "not reduced: each replay of a hang takes the time limit\n";
    return;
  }
  ReducedFailure red = walker.reduceFailure(subject, record.moves, record.kind);
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
  os << "minimized replay: pd-walk " << walker.describe(red.subject)
     << walker.getCheckOptions(record.kind == FailureKind::Jit)
     << " --replay=\"" << joinMoves(red.moves) << "\"\n";
  os << "reduction: " << red.replays << " replays\n";
  if (!options.saveFailures.empty()) {
    std::string error;
    FailureOr<std::string> path =
        walker.saveRegressionTest(options.saveFailures, red, origin, error);
    if (failed(path)) {
      os << "cannot save the failure: " << error << "\n";
    } else {
      os << "saved: " << *path << "\n";
      ++totals.saved;
    }
  }
}

void WalkRun::reportFailure(const Subject &subject, const WalkRecord &record) {
  raw_ostream &os = llvm::outs();
  os << "FAILURE kernel=" << subject.name;
  if (subject.random)
    os << " random-seed=" << subject.random->seed
       << " random-size=" << subject.random->size;
  else
    os << " file=" << subject.file;
  os << " walk=" << record.walk << " seed=" << config.seed
     << " walk-seed=" << record.walkSeed << " moves=" << record.moves.size()
     << " kind=" << stringifyFailureKind(record.kind) << "\n";
  os << "moves:\n";
  printMoves(os, record.moves);
  printMessage(os, "error: ", record.message);
  bool jit = record.kind == FailureKind::Jit;
  bool checkJit = config.jitEvery > 0;
  os << "replay: pd-walk " << walker.describe(subject)
     << walker.getCheckOptions(jit) << " --replay=\"" << joinMoves(record.moves)
     << "\"\n";
  // With --pick=rare (or mixed) a walk depends on the walks before it.
  if (config.pick == PickMode::Instance || config.pick == PickMode::Move)
    os << "replay walk: pd-walk " << walker.describe(subject)
       << walker.getCheckOptions(checkJit) << describeWalkOptions()
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
  if (options.minimize) {
    std::string origin = "walk " + std::to_string(record.walk) + " of " +
                         subject.name + " (" + walker.describe(subject) +
                         walker.getCheckOptions(checkJit) +
                         describeWalkOptions() +
                         (config.pick == PickMode::Rare    ? " --pick=rare"
                          : config.pick == PickMode::Mixed ? " --pick=mixed"
                                                           : "") +
                         ")";
    reduceAndReport(subject, record, origin);
  }
  os.flush();
}

void WalkRun::printProgress() {
  double t = elapsedSeconds();
  llvm::outs() << "progress: walks=" << totals.walks << "/" << scheduled
               << " steps=" << totals.steps << " failures=" << totals.failures
               << " (" << llvm::format("%.0f", t) << " s, "
               << llvm::format("%.1f", t > 0 ? totals.walks / t : 0)
               << " walks/s)\n";
  llvm::outs().flush();
}

/// Accounts for a finished walk (run here or in a child).
void WalkRun::finishWalk(const WalkRecord &record) {
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
  totals.jitTooLarge += record.jitTooLarge;
  totals.emulated += record.emulated;
  totals.emulationRefused += record.emulationRefused;
  totals.unchecked += record.unchecked;
  if (record.emulationRefused)
    ++totals.refusals[record.refusal];
  for (size_t i = 0; i < record.steps && i < record.moves.size(); ++i)
    ++totals.applied[StringRef(record.moves[i]).split('@').first.str()];
  for (auto &[name, count] : record.offered)
    totals.offered[name] += count;
  bool failed = record.kind != FailureKind::None;
  if (options.verbose) {
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
  bool byWalks = options.progressWalks &&
                 totals.walks - lastProgressWalks >= options.progressWalks;
  bool byTime = options.progressSeconds > 0 &&
                elapsedSeconds() - lastProgressTime >= options.progressSeconds;
  if (byWalks || byTime) {
    lastProgressWalks = totals.walks;
    lastProgressTime = elapsedSeconds();
    printProgress();
  }
}

//===----------------------------------------------------------------------===//
// Scheduling
//===----------------------------------------------------------------------===//

void WalkRun::makeSchedule() {
  unsigned rounds = 0;
  for (const Subject &s : subjects)
    rounds = std::max(rounds, s.walks);
  for (unsigned r = 0; r < rounds; ++r)
    for (auto [i, s] : llvm::enumerate(subjects))
      if (r < s.walks)
        schedule.push_back({unsigned(i), options.firstWalk + r});
  scheduled = schedule.size();
}

/// The run under way, for the crash handler (a signal handler is the
/// process's, not a run's).
static const WalkRun *crashingRun = nullptr;

void WalkRun::printCrashContext(void *) {
  if (!crashingRun)
    return;
  const WalkRun &self = *crashingRun;
  const auto &crashContext = self.crashContext;
  if (!crashContext.subject)
    return;
  llvm::errs() << "FAILURE (crash while " << self.walker.getStage()
               << ") kernel=" << crashContext.subject->name << " "
               << self.walker.describe(*crashContext.subject);
  if (crashContext.walk >= 0)
    llvm::errs() << " walk=" << crashContext.walk
                 << " seed=" << self.config.seed;
  llvm::errs() << "\n";
}

/// Runs the walks in this process, in order.
void WalkRun::runInProcess() {
  // Applications so far, for PickMode::Rare (totals.applied counts them
  // when each walk is reported).
  std::map<std::string, uint64_t> applied;
  for (auto [subject, walk] : schedule) {
    if (timeIsUp())
      break;
    crashContext.subject = &subjects[subject];
    crashContext.walk = walk;
    finishWalk(walker.runWalk(subjects[subject], subject, walk, applied));
  }
  crashContext.subject = nullptr;
}

/// The body of a child: walks positions [from, to) of the schedule.
int WalkRun::runBatch(ChildChannel &channel, size_t from, size_t to) {
  walker.setChannel(&channel);
  // Applications are counted from the ones seen so far (PickMode::Rare):
  // totals.applied as the parent had it when it forked this child.
  for (size_t pos = from; pos < to && !timeIsUp(); ++pos) {
    auto [subject, walk] = schedule[pos];
    channel.send("B " + std::to_string(pos));
    WalkRecord record =
        walker.runWalk(subjects[subject], subject, walk, totals.applied);
    channel.send("R\t" + record.encode());
  }
  channel.send("Z");
  return 0;
}

bool WalkRun::startJob(std::vector<Job> &jobs, size_t from, size_t to) {
  std::string error;
  Job job;
  job.next = from;
  job.end = to;
  job.lastHeard = Clock::now();
  job.child = ChildProcess::start(
      [&](ChildChannel &c) { return runBatch(c, from, to); },
      getWalkChildOptions(), error);
  if (!job.child) {
    llvm::errs() << "pd-walk: " << error << "\n";
    return false;
  }
  jobs.push_back(std::move(job));
  return true;
}

/// Handles one line from a child.
void WalkRun::handleLine(Job &job, StringRef line) {
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
void WalkRun::endJob(std::vector<Job> &jobs, size_t index, bool timedOut) {
  Job job = std::move(jobs[index]);
  jobs.erase(jobs.begin() + index);
  std::string how = job.child->wait().describe();
  if (!job.current) {
    if (!job.finished && job.next < job.end)
      llvm::errs() << "pd-walk: a child ended between walks ("
                   << (how.empty() ? "exit status 0" : how) << "); walks "
                   << job.next << " to " << job.end - 1
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
        << "the walk was silent for " << llvm::format("%g", config.walkTimeout)
        << " s while " << stage << "; killed";
  } else {
    record.message = "the walk crashed (" +
                     (how.empty() ? std::string("exit status 0") : how) +
                     ") while " + stage;
    std::string err = getCrashExcerpt(*job.child);
    if (!err.empty())
      record.message += ":\n" + err;
  }
  record.walkSeed = walker.getWalkSeed(subjects[subject].name, walk);
  finishWalk(record);
  if (pos + 1 < job.end && !timeIsUp())
    startJob(jobs, pos + 1, job.end);
}

/// Runs the walks in batches in forked children, --jobs at a time.
void WalkRun::runIsolated() {
  std::vector<Job> jobs;
  size_t next = 0;
  while (true) {
    while (jobs.size() < std::max(1u, options.jobs) && next < schedule.size() &&
           !timeIsUp()) {
      size_t to = std::min(schedule.size(), next + std::max(1u, options.batch));
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
      if (silent > config.walkTimeout) {
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
// The run
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
void WalkRun::replaySubject(const Subject &subject) {
  SmallVector<StringRef> parts;
  StringRef(*options.replay).split(parts, ',', -1, /*KeepEmpty=*/false);
  SmallVector<std::string> moves;
  for (StringRef p : parts)
    if (!p.trim().empty())
      moves.push_back(p.trim().str());
  crashContext.subject = &subject;
  bool checkJit = config.jitEvery > 0;
  ReplayResult result =
      walker.replayMoves(subject, moves, options.skipIllegal, checkJit);
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
  if (result.checks == Walker::kUncheckedText)
    ++totals.unchecked;
  if (result.kind == FailureKind::None) {
    llvm::outs() << "replay of " << moves.size() << " move"
                 << (moves.size() == 1 ? "" : "s") << " on " << subject.name
                 << ": ok";
    if (skipped)
      llvm::outs() << " (" << skipped << " illegal, skipped)";
    if (!result.checks.empty())
      llvm::outs() << "; " << result.checks;
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
  os << "FAILURE kernel=" << subject.name << " " << walker.describe(subject)
     << " moves=" << record.moves.size()
     << " kind=" << stringifyFailureKind(record.kind) << "\n";
  os << "moves:\n";
  printMoves(os, record.moves);
  printMessage(os, "error: ", record.message);
  os << "replay: pd-walk " << walker.describe(subject)
     << walker.getCheckOptions(checkJit) << " --replay=\""
     << joinMoves(record.moves) << "\"\n";
  if (!record.transformed.empty())
    os << "transformed kernel:\n" << record.transformed;
  if (options.minimize && !record.moves.empty())
    reduceAndReport(subject, record,
                    "a --replay of " + std::to_string(moves.size()) + " moves");
}

int WalkRun::run() {
  startTime = Clock::now();
  bool replaying = options.replay.has_value();
  size_t numSubjectsGiven =
      options.inputFilenames.size() + options.randomKernels;
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
  if (config.generator.maxIterations < 1) {
    llvm::errs() << "pd-walk: --random-iterations="
                 << config.generator.maxIterations << " must be at least 1\n";
    return 1;
  }
  unsigned randomSize = options.randomSize,
           randomMinSize = options.randomMinSize;
  if (randomMinSize < 1 || randomMinSize > randomSize) {
    llvm::errs() << "pd-walk: --random-min-size=" << randomMinSize
                 << " must be between 1 and --random-size=" << randomSize
                 << "\n";
    return 1;
  }

  if (options.timeBudget > 0)
    deadline =
        startTime + std::chrono::duration_cast<Clock::duration>(
                        std::chrono::duration<double>(options.timeBudget));

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
  crashingRun = this;
  static bool handlerAdded = false;
  if (!handlerAdded)
    llvm::sys::AddSignalHandler(printCrashContext, nullptr);
  handlerAdded = true;

  std::optional<std::vector<BufferData>> override;
  const std::string &compareWith = config.compareWith;
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
    if (failed(walker.interpret(kernel, *override, error))) {
      llvm::errs() << "pd-walk: cannot interpret '" << compareWith << "':\n"
                   << error;
      return 1;
    }
  }

  // The subjects: every kernel of every file, then the random kernels.
  SmallVector<OwningOpRef<ModuleOp>> modules;
  uint64_t brokenKernels = 0;
  for (const std::string &filename : options.inputFilenames) {
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
      subject.walks = options.walks;
      std::string error;
      if (failed(walker.interpret(kernel, subject.reference, error))) {
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
  unsigned randomKernels = options.randomKernels;
  uint64_t firstSeed = options.randomSeed.value_or(config.seed);
  for (unsigned i = 0; i < randomKernels; ++i) {
    RandomOrigin origin;
    origin.seed = firstSeed + i;
    origin.size =
        randomMinSize + mixSeed(origin.seed) % (randomSize - randomMinSize + 1);
    Subject subject;
    subject.walks = options.randomWalks.value_or(options.walks);
    std::string error;
    OwningOpRef<ModuleOp> module =
        walker.makeRandomSubject(&context, origin, subject, error);
    if (!module) {
      llvm::outs() << "FAILURE kernel=" << getRandomKernelName(origin) << ": "
                   << error << "\n";
      ++brokenKernels;
      continue;
    }
    if (const std::string &dumpKernels = options.dumpKernels;
        !dumpKernels.empty()) {
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
    if (config.isolate)
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
  if (options.moveStats) {
    llvm::outs() << "stats: dead-ends=" << totals.deadEnds << "\n";
    for (const std::unique_ptr<Move> &move : MoveRegistry::get().getMoves()) {
      std::string name = move->getName().str();
      llvm::outs() << "stats: " << llvm::left_justify(name, 20)
                   << " applied=" << totals.applied[name]
                   << " offered=" << totals.offered[name] << "\n";
    }
  }
  // What the GPU lowering refused (limits, to be read: a class that should
  // not be there is a lowering bug hidden as a limit).
  for (auto &[refusal, n] : totals.refusals)
    llvm::outs() << "gpu-refusal: " << n << " x " << refusal << "\n";
  auto count = [&](FailureKind kind) { return totals.byKind[kind]; };
  llvm::outs() << "summary: kernels=" << subjects.size() + brokenKernels
               << " walks=" << totals.walks << " steps=" << totals.steps
               << " failures=" << totals.failures;
  if (config.jitEvery > 0)
    llvm::outs() << " compiled=" << totals.jitCompiled
                 << " not-compiled(gpu)=" << totals.jitSkipped
                 << " not-compiled(code-size)=" << totals.jitTooLarge;
  if (config.jitEvery > 0 && config.emulateGPU)
    llvm::outs() << " emulated=" << totals.emulated
                 << " not-emulated(refused)=" << totals.emulationRefused;
  llvm::outs() << " mismatches=" << count(FailureKind::Mismatch)
               << " jit-mismatches=" << count(FailureKind::Jit)
               << " crashes=" << count(FailureKind::Crash)
               << " timeouts=" << count(FailureKind::Timeout)
               << " invalid=" << count(FailureKind::Invalid)
               << " races=" << count(FailureKind::Race)
               << " interpreter-errors=" << count(FailureKind::InterpreterError)
               << " refused=" << count(FailureKind::Refused)
               << " listing=" << count(FailureKind::Listing);
  if (!options.saveFailures.empty())
    llvm::outs() << " saved=" << totals.saved;
  llvm::outs() << " not-checked(interpreter-limits)=" << totals.unchecked;
  llvm::outs() << " seconds=" << llvm::format("%.1f", elapsedSeconds()) << "\n";
  llvm::outs().flush();
  return totals.failures ? 1 : 0;
}

int mlir::perfdojo::walk::runPdWalk(const PdWalkOptions &options) {
  WalkRun run(options);
  int status = run.run();
  crashingRun = nullptr;
  return status;
}
