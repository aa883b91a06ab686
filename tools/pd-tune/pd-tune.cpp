//===- pd-tune.cpp - Tune one PerfDojo kernel -----------------------------===//
//
//   pd-tune kernels/softmax.pd --strategy=anneal --budget=1000
//
// Searches for a faster program computing the same thing as the kernel:
// a heuristic (naive, greedy, expert) or a search (random sampling,
// simulated annealing) over the legal moves, every candidate compiled for
// this CPU, checked against the kernel itself and timed. Shows progress,
// then prints the best program, the moves that reach it (replayable with
// `pd-opt --pd-apply=moves-file=FILE`), its speedup over the kernel and
// over PyTorch where PyTorch is importable, and writes a convergence plot.
// Every evaluated variant goes to a tuning database, so a second run (or
// one after a kill) reuses the measurements.
//
//===----------------------------------------------------------------------===//

#include "ConvergencePlot.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Evaluator/Machine.h"
#include "PerfDojo/Search/Tuning/PackageRunner.h"
#include "PerfDojo/Search/Policy/Agent.h"
#include "PerfDojo/Search/Tuning/Search.h"
#include "PerfDojo/Search/Tuning/TuningSession.h"
#include "PerfDojo/Support/ToolMain.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include <cmath>
#include <thread>
#include <unistd.h>

using namespace mlir;
using namespace mlir::perfdojo;
namespace cl = llvm::cl;

static cl::OptionCategory tuneCategory("pd-tune options");
static cl::opt<std::string> inputFilename(cl::Positional, cl::Required,
                                          cl::desc("<kernel.pd|kernel.mlir>"),
                                          cl::cat(tuneCategory));
static cl::opt<std::string>
    strategyName("strategy", cl::cat(tuneCategory), cl::init("anneal"),
                 cl::desc("naive, greedy, expert (heuristics), random "
                          "(global sampling), anneal (simulated annealing) "
                          "or rl (a trained policy, --policy)"));
static cl::opt<std::string>
    policyFilename("policy", cl::cat(tuneCategory),
                   cl::desc("rl: the policy file that pd-train wrote"));
static cl::opt<unsigned>
    horizon("horizon", cl::cat(tuneCategory), cl::init(8),
            cl::desc("rl: moves of the greedy rollout at most"));
static cl::opt<double>
    explore("explore", cl::cat(tuneCategory), cl::init(0.25),
            cl::desc("rl: the share of expansions after the greedy rollout "
                     "that measure a random next program, not the "
                     "policy's best (0 to 1)"));
static cl::opt<bool> adaptiveExplore(
    "adaptive-explore", cl::cat(tuneCategory), cl::init(true),
    cl::desc("rl: outside the --explore share, measure the policy's best, "
             "its best place of a random move, or a random next program, by "
             "how often each one's programs ran faster than their parent so "
             "far (Thompson sampling); false: always the policy's best"));
static cl::opt<std::string> policyRank(
    "policy-rank", cl::cat(tuneCategory), cl::init("gain"),
    cl::desc("rl: the policy's best next program for the sampler: gain (its "
             "predicted speedup of the move, the default) or value (its "
             "Q-value: the best program reachable after the move)"));
static cl::opt<unsigned> policyUpdates(
    "policy-updates", cl::cat(tuneCategory), cl::init(0),
    cl::desc("rl: gradient steps of the policy on the search's own "
             "measurements after each one, so that it keeps learning on "
             "this kernel (0, the default: play the policy as trained; the "
             "policy file is never changed)"));
static cl::opt<std::string>
    graphName("graph", cl::cat(tuneCategory), cl::init("edges"),
              cl::desc("what random and anneal search over: edges (one "
                       "move from a program) or sequences (the move "
                       "sequence edited at one point and replayed)"));
static cl::opt<std::string>
    startName("start-from", cl::cat(tuneCategory), cl::init("expert"),
              cl::desc("heuristic whose program random and anneal start "
                       "from: naive, greedy or expert"));
static cl::opt<unsigned> budget("budget", cl::cat(tuneCategory),
                                cl::init(100),
                                cl::desc("candidates to evaluate"));
static cl::opt<double>
    timeBudget("time-budget", cl::cat(tuneCategory), cl::init(0),
               cl::desc("stop after this many seconds (0: no limit)"));
static cl::opt<unsigned> threads(
    "num-threads", cl::cat(tuneCategory),
    cl::init(std::max(1u, std::thread::hardware_concurrency())),
    cl::desc("threads of parallel scopes (default: every core)"));
static cl::opt<unsigned> repetitions("repetitions", cl::cat(tuneCategory),
                                     cl::init(3),
                                     cl::desc("timed runs per candidate"));
static cl::opt<double> minTimedMs(
    "min-timed-ms", cl::cat(tuneCategory), cl::init(5),
    cl::desc("CPU: a short candidate warms up for a quarter of this and is "
             "timed until its runs add up to this, up to 1000 runs (0: "
             "exactly 1 warm-up and --repetitions runs)"));
static cl::opt<double>
    timeLimit("time-limit", cl::cat(tuneCategory), cl::init(30),
              cl::desc("seconds a candidate may take (compile and runs); the "
                       "starting kernel, whose outputs are the reference, "
                       "4x this"));
static cl::opt<double> tolerance(
    "tolerance", cl::cat(tuneCategory), cl::init(2e-3),
    cl::desc("largest accepted difference from the kernel's own outputs, "
             "relative to each output's largest magnitude"));
static cl::opt<std::string> checkAgainst(
    "check-against", cl::cat(tuneCategory), cl::init("kernel"),
    cl::desc("what candidates are checked against: kernel (the starting "
             "kernel compiled at full size) or interpreter (float64, at full "
             "size: slow, for kernels whose float32 result is inaccurate)"));
static cl::opt<uint64_t> seed("seed", cl::cat(tuneCategory), cl::init(1),
                              cl::desc("seed of the search's choices"));
static cl::opt<std::string>
    dbPath("db", cl::cat(tuneCategory),
           cl::desc("tuning database (default: tuning.db beside the "
                    "pd-machine cache)"));
static cl::opt<bool> noDb("no-db", cl::cat(tuneCategory),
                          cl::desc("keep no tuning database"));
static cl::opt<std::string>
    outputFilename("o", cl::cat(tuneCategory),
                   cl::desc("also write the best program (text form) here"));
static cl::opt<std::string>
    movesFilename("moves-output", cl::cat(tuneCategory),
                  cl::desc("also write the best move sequence here"));
static cl::opt<std::string>
    plotFilename("plot", cl::cat(tuneCategory),
                 cl::desc("convergence plot (SVG; default: "
                          "<kernel>-<strategy>.svg, '-' for none)"));
static cl::opt<std::string>
    jsonFilename("json", cl::cat(tuneCategory),
                 cl::desc("also write a summary (times, trace of the best "
                          "time per evaluation, moves) as JSON here"));
static cl::opt<std::string> torchPython(
    "torch-python", cl::cat(tuneCategory),
    cl::desc("Python that imports torch, to time PyTorch on suite kernels "
             "(default: $PERFDOJO_TORCH_PYTHON, else python3)"));
static cl::opt<int64_t> vectorWidth(
    "vector-width", cl::cat(tuneCategory), cl::init(0),
    cl::desc("CPU: the vector lanes the heuristics write for, 16 (AVX-512, "
             "32 registers), 8 (AVX2, 16) or 4 (default: this CPU's)"));
static cl::opt<unsigned> confirmRounds(
    "confirm", cl::cat(tuneCategory), cl::init(3),
    cl::desc("random, anneal on the CPU: time the best 4 programs again in "
             "this many interleaved rounds and answer with the lowest "
             "median; naive, greedy, expert: time a program that measured "
             "slower than the starting kernel again with it before keeping "
             "the starting kernel (0: the first times stand)"));
static cl::opt<bool> allowSlower(
    "allow-slower", cl::cat(tuneCategory),
    cl::desc("naive, greedy, expert: answer with the heuristic's program "
             "even when it measured slower than the starting kernel (by "
             "default the starting kernel is the answer then)"));
static cl::opt<bool> noTorch("no-torch", cl::cat(tuneCategory),
                             cl::desc("do not time PyTorch"));
static cl::opt<bool> quiet("quiet", cl::cat(tuneCategory),
                           cl::desc("no progress bar"));
static cl::opt<std::string> targetName(
    "target", cl::cat(tuneCategory), cl::init("cpu"),
    cl::desc("where candidates run: cpu (this CPU, JIT), cuda (NVIDIA GPU, "
             "PTX packages run by pd-gpu-run) or rocm (AMD GPU, HSACO)"));
static cl::opt<std::string> remoteDir(
    "remote", cl::cat(tuneCategory),
    cl::desc("GPU: write each generation of candidate packages into this "
             "folder and stop; run them with pd-gpu-run on the GPU machine, "
             "bring results.json back and run the same command again"));
static cl::opt<std::string> runnerProgram(
    "runner", cl::cat(tuneCategory),
    cl::desc("GPU without --remote: the program that runs a generation "
             "(default: pd-gpu-run beside pd-tune)"));
static cl::opt<unsigned> generationSize(
    "generation", cl::cat(tuneCategory), cl::init(0),
    cl::desc("candidates proposed and measured together (default: 1 on the "
             "CPU, 16 on a GPU)"));
static cl::opt<std::string>
    gpuChip("gpu-chip", cl::cat(tuneCategory),
            cl::desc("GPU to compile for (default sm_90, gfx942)"));
static cl::opt<std::string>
    gpuFeatures("gpu-features", cl::cat(tuneCategory),
                cl::desc("GPU target features (default +ptx80 for cuda)"));
static cl::opt<unsigned> gpuWarmup(
    "gpu-warmup", cl::cat(tuneCategory), cl::init(2),
    cl::desc("GPU: untimed runs per candidate before the timed ones"));
static cl::opt<uint64_t> maxExpectedMiB(
    "max-expected-mib", cl::cat(tuneCategory), cl::init(32),
    cl::desc("GPU: reference outputs above this size (as float64) are "
             "checked on a sample of 65536 values each"));

static std::string formatDuration(double seconds) {
  unsigned s = unsigned(seconds);
  char text[32];
  if (s >= 60)
    snprintf(text, sizeof(text), "%um%02us", s / 60, s % 60);
  else
    snprintf(text, sizeof(text), "%.1fs", seconds);
  return text;
}

/// The progress bar: redrawn in place on a terminal, else one line every
/// tenth of the budget.
static void showProgress(const SearchProgress &p) {
  static bool terminal = isatty(STDERR_FILENO);
  static unsigned lastDecile = 0;
  unsigned total = std::max(p.budget, 1u);
  unsigned done = std::min(p.evaluations, total);
  if (!terminal) {
    unsigned decile = 10 * done / total;
    if (decile == lastDecile && done != 1)
      return;
    lastDecile = decile;
  }
  const unsigned width = 30;
  unsigned filled = width * done / total;
  std::string bar(filled, '#');
  bar.resize(width, '.');
  llvm::errs() << (terminal ? "\r" : "") << "[" << bar << "] " << done << "/"
               << total << "  best ";
  if (p.bestSeconds > 0) {
    llvm::errs() << llvm::format("%.4g ms", p.bestSeconds * 1e3);
    if (p.startSeconds > 0)
      llvm::errs() << llvm::format(" (%.2fx)", p.startSeconds / p.bestSeconds);
  } else {
    llvm::errs() << "-";
  }
  llvm::errs() << "  " << formatDuration(p.elapsedSeconds) << "  last "
               << p.lastStatus << (terminal ? "\x1b[K" : "\n");
}

/// PyTorch's best time (eager or out=) on suite kernel `name`, through
/// bench/compare_torch.py; std::nullopt with `why` set when unavailable.
static std::optional<std::pair<double, std::string>>
timePyTorch(StringRef name, unsigned threads, std::string &why) {
  std::string script =
      std::string(PERFDOJO_SOURCE_DIR) + "/bench/compare_torch.py";
  std::string suiteKernel =
      std::string(PERFDOJO_SOURCE_DIR) + "/kernels/" + name.str() + ".pd";
  if (!llvm::sys::fs::exists(suiteKernel)) {
    why = "not a suite kernel";
    return std::nullopt;
  }
  std::string python = torchPython;
  if (python.empty())
    if (const char *env = getenv("PERFDOJO_TORCH_PYTHON"))
      python = env;
  if (python.empty())
    python = "python3";
  llvm::ErrorOr<std::string> program = llvm::sys::findProgramByName(python);
  if (!program) {
    why = "no program '" + python + "'";
    return std::nullopt;
  }
  SmallString<128> outPath;
  if (llvm::sys::fs::createTemporaryFile("pd-tune-torch", "json", outPath)) {
    why = "cannot create a temporary file";
    return std::nullopt;
  }
  std::string threadArg = "--threads=" + std::to_string(threads);
  std::string kernelArg = "--kernels=" + name.str();
  SmallVector<StringRef> args = {*program, script, "--torch-only",
                                 kernelArg, threadArg};
  std::optional<StringRef> redirects[] = {std::nullopt, StringRef(outPath),
                                          StringRef("")};
  std::string error;
  int rc = llvm::sys::ExecuteAndWait(*program, args, std::nullopt, redirects,
                                     /*SecondsToWait=*/600, 0, &error);
  auto text = llvm::MemoryBuffer::getFile(outPath);
  llvm::sys::fs::remove(outPath);
  if (rc != 0 || !text) {
    why = python + " " + script + " failed" +
          (error.empty() ? "" : ": " + error);
    return std::nullopt;
  }
  StringRef body = (*text)->getBuffer().trim();
  llvm::Expected<llvm::json::Value> json =
      llvm::json::parse(body.rsplit('\n').second.empty() ? body
                                                         : body.rsplit('\n').second);
  if (!json) {
    llvm::consumeError(json.takeError());
    why = "unreadable output of " + script;
    return std::nullopt;
  }
  const llvm::json::Object *object = json->getAsObject();
  if (std::optional<StringRef> message = object->getString("error")) {
    why = message->str();
    return std::nullopt;
  }
  std::optional<double> best = object->getNumber("best_ms");
  std::optional<StringRef> version = object->getString("torch");
  if (!best) {
    why = "unreadable output of " + script;
    return std::nullopt;
  }
  return std::make_pair(*best / 1e3, version ? version->str() : "");
}

static int runTool(int argc, char **argv);

/// pd-tune's exit status when a generation waits for a remote runner.
constexpr int kExitPending = 3;

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  return runWithLargeStack([&] { return runTool(argc, argv); });
}

static int runTool(int argc, char **argv) {
  cl::HideUnrelatedOptions(tuneCategory);
  cl::ParseCommandLineOptions(
      argc, argv, "pd-tune: search for a faster program for a kernel\n");

  std::optional<Strategy> strategy = parseStrategy(strategyName);
  if (!strategy) {
    llvm::errs() << "pd-tune: unknown --strategy '" << strategyName
                 << "'; expected naive, greedy, expert, random, anneal or "
                    "rl\n";
    return 1;
  }
  std::optional<Strategy> startFrom = parseStrategy(startName);
  if (!startFrom || *startFrom == Strategy::Random ||
      *startFrom == Strategy::Anneal || *startFrom == Strategy::RL) {
    llvm::errs() << "pd-tune: unknown --start-from '" << startName
                 << "'; expected naive, greedy or expert\n";
    return 1;
  }
  SearchGraph graph;
  if (graphName == "edges") {
    graph = SearchGraph::Edges;
  } else if (graphName == "sequences") {
    graph = SearchGraph::Sequences;
  } else {
    llvm::errs() << "pd-tune: unknown --graph '" << graphName
                 << "'; expected edges or sequences\n";
    return 1;
  }
  if (policyRank != "gain" && policyRank != "value") {
    llvm::errs() << "pd-tune: unknown --policy-rank '" << policyRank
                 << "'; expected gain or value\n";
    return 1;
  }
  if (checkAgainst != "kernel" && checkAgainst != "interpreter") {
    llvm::errs() << "pd-tune: unknown --check-against '" << checkAgainst
                 << "'; expected kernel or interpreter\n";
    return 1;
  }
  TuningSessionOptions sessionOptions;
  sessionOptions.target = targetName;
  sessionOptions.remoteDir = remoteDir;
  sessionOptions.runnerProgram = runnerProgram;
  sessionOptions.toolPath =
      llvm::sys::fs::getMainExecutable(argv[0], (void *)&runTool);
  sessionOptions.gpuChip = gpuChip;
  sessionOptions.gpuFeatures = gpuFeatures;
  sessionOptions.gpuWarmup = gpuWarmup;
  sessionOptions.maxExpectedMiB = maxExpectedMiB;
  sessionOptions.threads = threads;
  sessionOptions.vectorWidth = vectorWidth;
  sessionOptions.repetitions = repetitions;
  sessionOptions.minTimedSeconds = minTimedMs / 1000;
  sessionOptions.timeLimit = timeLimit;
  sessionOptions.tolerance = tolerance;
  sessionOptions.checkAgainstInterpreter = checkAgainst == "interpreter";
  sessionOptions.dbPath = dbPath;
  sessionOptions.noDb = noDb;
  if (std::optional<std::string> why =
          checkTuningSessionOptions(sessionOptions)) {
    llvm::errs() << "pd-tune: " << *why << "\n";
    return 1;
  }
  bool gpu = targetName != "cpu";
  if (*strategy == Strategy::RL && !remoteDir.empty()) {
    llvm::errs() << "pd-tune: the rl strategy measures each move before "
                    "choosing the next; it cannot wait for --remote (use "
                    "--runner, or run pd-tune on the GPU machine)\n";
    return 1;
  }
  if (*strategy == Strategy::RL && policyFilename.empty()) {
    llvm::errs() << "pd-tune: --strategy=rl needs --policy=FILE (pd-train's "
                    "output)\n";
    return 1;
  }
  if (*strategy != Strategy::RL && !policyFilename.empty()) {
    llvm::errs() << "pd-tune: --policy is for --strategy=rl\n";
    return 1;
  }
  if (!(explore >= 0 && explore <= 1)) {
    llvm::errs() << "pd-tune: --explore=" << llvm::format("%g", explore.getValue())
                 << " is not a share between 0 and 1\n";
    return 1;
  }

  DialectRegistry registry;
  registerAllPerfDojo(registry);
  if (gpu)
    registerGPUTargets(registry);
  MLIRContext context(registry);
  context.loadDialect<PerfDojoDialect>();
  context.printOpOnDiagnostic(false);
  registerAllMoves();
  registerPolicySearch();

  std::string error;
  std::unique_ptr<llvm::MemoryBuffer> file =
      mlir::openInputFile(inputFilename, &error);
  if (!file) {
    llvm::errs() << "pd-tune: " << error << "\n";
    return 1;
  }
  llvm::SourceMgr sourceMgr;
  sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
  SourceMgrDiagnosticHandler handler(sourceMgr, &context);
  OwningOpRef<ModuleOp> module =
      parseKernelFile(sourceMgr, inputFilename, "", &context, error);
  if (!module) {
    if (!error.empty())
      llvm::errs() << "pd-tune: " << error << "\n";
    return 1;
  }
  size_t kernelCount = llvm::range_size(module->getOps<KernelOp>());
  if (kernelCount != 1) {
    llvm::errs() << "pd-tune: " << inputFilename << " holds " << kernelCount
                 << " kernels; pd-tune takes one\n";
    return 1;
  }
  StringRef name = llvm::sys::path::stem(inputFilename);
  std::unique_ptr<TuningSession> session =
      TuningSession::create(std::move(module), name, sessionOptions, error);
  if (!session) {
    llvm::errs() << "pd-tune: " << error << "\n";
    return 1;
  }
  PackageRunner *runner = session->getRunner();
  TuningDatabase *database = session->getDatabase();
  Environment &env = session->getEnvironment();

  SearchOptions options;
  options.strategy = *strategy;
  options.graph = graph;
  options.target = session->getTargetInfo();
  options.generation = generationSize ? generationSize : (gpu ? 16 : 1);
  options.budget = budget;
  options.timeBudget = timeBudget;
  options.seed = seed;
  // The policy was trained from naive kernels; it starts there unless told.
  options.startFrom = *strategy == Strategy::RL && startName.getNumOccurrences() == 0
                          ? Strategy::Naive
                          : *startFrom;
  options.policyPath = policyFilename;
  options.allowSlower = allowSlower;
  options.confirmRounds = confirmRounds;
  options.horizon = horizon;
  options.explore = explore;
  options.adaptiveExplore = adaptiveExplore;
  options.policyRank =
      policyRank == "value" ? PolicyRank::Value : PolicyRank::Gain;
  options.policyUpdates = policyUpdates;
  bool heuristic = *strategy == Strategy::Naive ||
                   *strategy == Strategy::Greedy ||
                   *strategy == Strategy::Expert;
  if (!quiet && !heuristic)
    options.onProgress = showProgress;

  std::string targetLabel = session->getTargetLabel();
  llvm::errs() << "pd-tune " << name << ": " << strategyName;
  if (!heuristic)
    llvm::errs() << ", budget " << budget << " evaluations, generations of "
                 << options.generation;
  llvm::errs() << ", " << targetLabel;
  if (database)
    llvm::errs() << ", database " << database->getPath();
  llvm::errs() << "\n";
  SearchResult result = runSearch(env, options);
  if (!quiet && !heuristic && isatty(STDERR_FILENO))
    llvm::errs() << "\n";
  if (!result.error.empty()) {
    llvm::errs() << "pd-tune: " << result.error << "\n";
    return 1;
  }
  if (!result.keptStart.empty())
    llvm::errs() << "pd-tune: " << result.keptStart << "\n";
  if (result.confirmedRounds)
    llvm::errs() << "pd-tune: the best " << result.confirmedPrograms
                 << " programs timed again in " << result.confirmedRounds
                 << " interleaved rounds: the answer's median is "
                 << llvm::format("%.4g", result.best.seconds * 1e3)
                 << " ms (first measured "
                 << llvm::format("%.4g", result.firstSeconds * 1e3)
                 << " ms)\n";
  if (*strategy == Strategy::RL) {
    const PolicySearchSources &s = result.sources;
    if (s.policyBest.programs + s.policyPlace.programs + s.randomDraw.programs)
      llvm::errs() << "pd-tune: after the greedy rollout, "
                   << s.policyBest.programs
                   << " programs were the policy's best ("
                   << s.policyBest.faster << " faster than their parent), "
                   << s.policyPlace.programs
                   << " its best place of a random move ("
                   << s.policyPlace.faster << " faster), "
                   << s.randomDraw.programs << " random draws ("
                   << s.randomDraw.faster << " faster)\n";
  }
  if (!result.stoppedEarly.empty())
    llvm::errs() << "pd-tune: the search stopped after " << result.evaluations
                 << " of " << budget << " evaluations: " << result.stoppedEarly
                 << "\n";
  if (result.pending) {
    // Batched remote evaluation: the generation waits for a GPU machine.
    StringRef folder = runner->getWaitingFolder();
    llvm::outs() << "kernel " << name << ": " << result.pending
                 << (result.pending == 1 ? " candidate waits" : " candidates wait")
                 << " for the GPU in " << folder << " (" << result.evaluations
                 << " evaluated so far, " << runner->getBuiltCount()
                 << " packages built now)\n"
                 << "  on the GPU machine: pd-gpu-run " << folder
                 << " --results=" << folder << "/results.json\n"
                 << "  then bring results.json back into " << folder
                 << " and run this command again: the search retraces its "
                    "steps and goes on\n";
    return kExitPending;
  }

  std::string torchWhy;
  std::optional<std::pair<double, std::string>> torch;
  if (gpu)
    torchWhy = "on a GPU, bench/gpu_suite.py times PyTorch on the same GPU";
  else if (!noTorch)
    torch = timePyTorch(name, threads, torchWhy);

  // The best program, in its own state.
  std::string reason;
  if (failed(env.replay(result.bestMoves, reason))) {
    llvm::errs() << "pd-tune: the best sequence does not replay: " << reason
                 << "\n";
    return 1;
  }
  llvm::outs() << "kernel " << name << ": " << stringifyStrategy(*strategy)
               << ", " << result.evaluations << " evaluations ("
               << result.failures << " failed their check or run, "
               << env.getEvaluationCount() << " measured now, the rest "
               << "reused), " << targetLabel << "\n";
  double startMs = result.start.seconds * 1e3,
         bestMs = result.best.seconds * 1e3;
  std::string label =
      heuristic ? (stringifyStrategy(*strategy) + " program").str()
                : "best found";
  if (heuristic && result.bestMoves.empty() && result.failures) {
    llvm::outs() << "  the " << label << " failed (" << result.lastFailure
                 << "); the result is the starting kernel\n";
    if (StringRef(result.lastFailure).starts_with("wrong-answer") &&
        checkAgainst == "kernel")
      llvm::outs() << "  (the reference is the starting kernel compiled; "
                      "where its float32 result is itself inaccurate, as in "
                      "long float32 sums, --check-against=interpreter "
                      "checks against float64)\n";
    label = "starting kernel";
  }
  if (result.start.ok())
    llvm::outs() << llvm::format("  %-16s %10.4g ms\n", "starting kernel",
                                 startMs);
  else
    llvm::outs() << "  starting kernel: "
                 << stringifyEvaluationStatus(result.start.status) << " ("
                 << result.start.reason << ")\n";
  if (label != "starting kernel" && result.start.ok())
    llvm::outs() << llvm::format("  %-16s %10.4g ms  speedup %.2fx\n",
                                 label.c_str(), bestMs, startMs / bestMs);
  else if (label != "starting kernel")
    llvm::outs() << llvm::format("  %-16s %10.4g ms\n", label.c_str(),
                                 bestMs);
  if (torch)
    llvm::outs() << llvm::format("  %-16s %10.4g ms  speedup over PyTorch "
                                 "%.2fx (its faster form: eager or out=)\n",
                                 ("PyTorch " + torch->second).c_str(),
                                 torch->first * 1e3,
                                 torch->first * 1e3 / bestMs);
  else
    llvm::outs() << "  PyTorch: not timed (" << (noTorch ? "--no-torch" : torchWhy)
                 << ")\n";
  KernelCost cost = getKernelCost(env.getKernel());
  // pd-machine measures this CPU; a GPU's limits are in the benchmark.
  std::optional<MachineLimits> limits =
      gpu ? std::nullopt : loadMachineLimits(threads);
  double pctDram = 0, pctFma = 0;
  if (limits) {
    double seconds = result.best.seconds;
    pctDram = 100 * cost.bytes / seconds / 1e9 / limits->bestGBs();
    pctFma = 100 * cost.flops / seconds / 1e9 / limits->fmaGFlops;
    llvm::outs() << llvm::format("  roofline: %.1f%% of the best DRAM "
                                 "bandwidth, %.1f%% of the FMA peak "
                                 "(pd-machine)\n",
                                 pctDram, pctFma);
  }
  llvm::outs() << "\n" << label << ":\n";
  if (failed(exportTextForm(env.getKernel(), llvm::outs())))
    return 1;
  llvm::outs() << "\nmoves (" << result.bestMoves.size()
               << "; replay with pd-opt --pd-apply=moves-file=FILE):\n";
  for (const std::string &move : result.bestMoves)
    llvm::outs() << move << "\n";

  auto writeFile = [&](StringRef path, function_ref<void(raw_ostream &)> fn) {
    std::string fileError;
    auto out = mlir::openOutputFile(path, &fileError);
    if (!out) {
      llvm::errs() << "pd-tune: " << fileError << "\n";
      return false;
    }
    fn(out->os());
    out->keep();
    return true;
  };
  if (!outputFilename.empty() &&
      !writeFile(outputFilename, [&](raw_ostream &os) {
        (void)exportTextForm(env.getKernel(), os);
      }))
    return 1;
  if (!movesFilename.empty() &&
      !writeFile(movesFilename, [&](raw_ostream &os) {
        os << "# " << name << ": " << stringifyStrategy(*strategy) << ", "
           << llvm::format("%.4g", bestMs) << " ms on "
           << (gpu ? runner->getTarget() : getCPUName()) << ", "
           << targetLabel << "\n";
        for (const std::string &move : result.bestMoves)
          os << move << "\n";
      }))
    return 1;
  if (!jsonFilename.empty() &&
      !writeFile(jsonFilename, [&](raw_ostream &os) {
        llvm::json::Array trace, moves;
        for (double t : result.trace)
          trace.push_back(t * 1e3);
        for (const std::string &move : result.bestMoves)
          moves.push_back(move);
        llvm::json::Object out{
            {"kernel", name},
            {"strategy", stringifyStrategy(*strategy)},
            {"graph", graphName.getValue()},
            {"target", gpu ? runner->getTarget() : std::string("cpu")},
            {"threads", threads.getValue()},
            {"evaluations", result.evaluations},
            {"measured", env.getEvaluationCount()},
            {"failures", result.failures},
            {"start_ms", startMs},
            {"best_ms", bestMs},
            {"trace_ms", std::move(trace)},
            {"bytes", cost.bytes},
            {"flops", cost.flops},
            {"moves", std::move(moves)},
        };
        if (result.heuristic.ok())
          out["heuristic_ms"] = result.heuristic.seconds * 1e3;
        if (!result.keptStart.empty())
          out["kept_start"] = result.keptStart;
        if (result.confirmedRounds) {
          out["confirm_rounds"] = result.confirmedRounds;
          out["confirm_programs"] = result.confirmedPrograms;
          out["best_first_ms"] = result.firstSeconds * 1e3;
        }
        if (*strategy == Strategy::RL) {
          auto count = [](const PolicySearchSources::Count &c) {
            return llvm::json::Object{{"programs", c.programs},
                                      {"faster", c.faster}};
          };
          out["policy_best"] = count(result.sources.policyBest);
          out["policy_place"] = count(result.sources.policyPlace);
          out["random_draws"] = count(result.sources.randomDraw);
        }
        if (torch) {
          out["torch_ms"] = torch->first * 1e3;
          out["torch_version"] = torch->second;
        }
        if (limits) {
          out["pct_of_best_bandwidth"] = pctDram;
          out["pct_of_fma_peak"] = pctFma;
        }
        os << llvm::formatv("{0:2}", llvm::json::Value(std::move(out)))
           << "\n";
      }))
    return 1;
  std::string plot = plotFilename;
  if (plot.empty())
    plot = (name + "-" + stringifyStrategy(*strategy) + ".svg").str();
  if (plot != "-") {
    SmallVector<std::pair<std::string, double>> references = {
        {"start", result.start.seconds}};
    if (torch)
      references.push_back({"PyTorch", torch->first});
    if (!writeFile(plot, [&](raw_ostream &os) {
          writeConvergencePlot(os,
                               (name + ": " + stringifyStrategy(*strategy) +
                                ", " + targetLabel)
                                   .str(),
                               result.trace, references);
        }))
      return 1;
    llvm::outs() << "\nconvergence plot: " << plot << "\n";
  }
  return 0;
}
