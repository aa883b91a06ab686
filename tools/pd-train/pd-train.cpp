//===- pd-train.cpp - Train the RL agent's policy -------------------------===//
//
//   pd-train kernels/small/ --generated=8 --episodes=200 -o policy.pt
//
// Trains the PerfLLM agent (PerfDojo/Search/Policy/Agent.h) by playing
// episodes on kernels (files, folders of them, and random kernels from the
// kernel generator), one kernel after another, every move's program
// measured for real on the target (this CPU, or a GPU through a runner)
// and recorded in the tuning database. Writes the policy, with a
// checkpoint every N episodes from which a killed run resumes (--resume),
// a progress line per episode with the best speedups, and the learning
// curve (CSV and SVG). `pd-tune --strategy=rl --policy=FILE` plays it.
//
//===----------------------------------------------------------------------===//

#include "LearningCurve.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Interpreter/KernelGenerator.h"
#include "PerfDojo/Search/Policy/Agent.h"
#include "PerfDojo/Search/Tuning/TuningSession.h"
#include "PerfDojo/Support/ToolMain.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/FileUtilities.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Format.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/InitLLVM.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Support/ToolOutputFile.h"
#include <chrono>
#include <thread>

using namespace mlir;
using namespace mlir::perfdojo;
namespace cl = llvm::cl;

static cl::OptionCategory trainCategory("pd-train options");
static cl::list<std::string>
    inputs(cl::Positional, cl::desc("<kernel.pd|kernel.mlir|folder>..."),
           cl::cat(trainCategory));
static cl::opt<std::string> outputFilename(
    "o", cl::cat(trainCategory), cl::Required,
    cl::desc("the policy file (also the checkpoint; FILE.replay holds the "
             "replay buffer)"));
static cl::opt<bool>
    resume("resume", cl::cat(trainCategory),
           cl::desc("go on from the checkpoint in -o (after a kill, or for "
                    "more episodes)"));
static cl::opt<unsigned> generated(
    "generated", cl::cat(trainCategory), cl::init(0),
    cl::desc("also train on this many random kernels of the generator"));
static cl::opt<unsigned> generatedStages(
    "generated-stages", cl::cat(trainCategory), cl::init(3),
    cl::desc("stages of each random kernel"));
static cl::opt<int64_t> generatedIterations(
    "generated-iterations", cl::cat(trainCategory), cl::init(1 << 16),
    cl::desc("most iterations of one operation of a random kernel"));
static cl::opt<unsigned> episodes("episodes", cl::cat(trainCategory),
                                  cl::init(100),
                                  cl::desc("episodes in all (with --resume: "
                                           "the total to reach)"));
static cl::opt<unsigned> horizon("horizon", cl::cat(trainCategory),
                                 cl::init(8),
                                 cl::desc("moves per episode at most"));
static cl::opt<unsigned>
    budget("budget", cl::cat(trainCategory), cl::init(0),
           cl::desc("stop after this many programs measured (0: none)"));
static cl::opt<double>
    timeBudget("time-budget", cl::cat(trainCategory), cl::init(0),
               cl::desc("stop after this many seconds (0: no limit)"));
static cl::opt<unsigned>
    checkpointEvery("checkpoint-every", cl::cat(trainCategory), cl::init(10),
                    cl::desc("episodes between checkpoints"));
static cl::opt<std::string>
    encoder("encoder", cl::cat(trainCategory), cl::init("fixed"),
            cl::desc("learned (the token table is trained) or fixed (a "
                     "random projection of the token counts)"));
static cl::opt<unsigned> embedding("embedding", cl::cat(trainCategory),
                                   cl::init(64),
                                   cl::desc("size of a program's embedding"));
static cl::opt<unsigned> hidden("hidden", cl::cat(trainCategory),
                                cl::init(128),
                                cl::desc("width of the hidden layers"));
static cl::opt<unsigned>
    buckets("buckets", cl::cat(trainCategory), cl::init(1 << 12),
            cl::desc("hash buckets of the program tokens"));
static cl::opt<double> learningRate("learning-rate", cl::cat(trainCategory),
                                    cl::init(1e-3), cl::desc("Adam's"));
static cl::opt<double> discount("gamma", cl::cat(trainCategory), cl::init(0.95),
                             cl::desc("discount of the max-Bellman target"));
static cl::opt<unsigned> batchSize("batch", cl::cat(trainCategory),
                                   cl::init(32),
                                   cl::desc("transitions per gradient step"));
static cl::opt<unsigned>
    updatesPerStep("updates-per-step", cl::cat(trainCategory), cl::init(4),
                   cl::desc("gradient steps after each move"));
static cl::opt<unsigned>
    targetSync("target-sync", cl::cat(trainCategory), cl::init(100),
               cl::desc("gradient steps between target-network copies"));
static cl::opt<double> epsilonStart("epsilon-start", cl::cat(trainCategory),
                                    cl::init(1.0),
                                    cl::desc("exploration at the start"));
static cl::opt<double> epsilonEnd("epsilon-end", cl::cat(trainCategory),
                                  cl::init(0.05),
                                  cl::desc("exploration at the end"));
static cl::opt<unsigned> epsilonEpisodes(
    "epsilon-episodes", cl::cat(trainCategory), cl::init(0),
    cl::desc("episodes over which epsilon decays (default: 70% of them)"));
static cl::opt<double> restartBest(
    "restart-best", cl::cat(trainCategory), cl::init(0.5),
    cl::desc("the share of episodes that start from the fastest program met "
             "so far on their kernel, not from the kernel (0 to 1)"));
static cl::opt<std::string> demonstrate(
    "demonstrate", cl::cat(trainCategory), cl::init("none"),
    cl::desc("before the first episode, play this heuristic's program of "
             "each kernel as a demonstration: its moves one by one, each "
             "program measured and each move a transition of the replay "
             "buffer (none, greedy or expert)"));
static cl::opt<uint64_t> seed("seed", cl::cat(trainCategory), cl::init(1),
                              cl::desc("seed of the network and the choices"));
static cl::opt<std::string> curveFilename(
    "curve", cl::cat(trainCategory),
    cl::desc("learning curve, CSV (default FILE.curve.csv; '-' for none); "
             "an SVG chart is written beside it"));
static cl::opt<bool> quiet("quiet", cl::cat(trainCategory),
                           cl::desc("no progress lines"));
// The target, as for pd-tune.
static cl::opt<std::string> targetName(
    "target", cl::cat(trainCategory), cl::init("cpu"),
    cl::desc("cpu, or cuda/rocm with a GPU runner (--runner)"));
static cl::opt<std::string>
    runnerProgram("runner", cl::cat(trainCategory),
                  cl::desc("GPU: the program that runs candidate packages "
                           "(default: pd-gpu-run beside pd-train)"));
static cl::opt<std::string> gpuChip("gpu-chip", cl::cat(trainCategory),
                                    cl::desc("GPU to compile for"));
static cl::opt<unsigned> threads(
    "num-threads", cl::cat(trainCategory),
    cl::init(std::max(1u, std::thread::hardware_concurrency())),
    cl::desc("threads of parallel scopes (default: every core)"));
static cl::opt<unsigned> repetitions("repetitions", cl::cat(trainCategory),
                                     cl::init(3),
                                     cl::desc("timed runs per program"));
static cl::opt<double>
    timeLimit("time-limit", cl::cat(trainCategory), cl::init(30),
              cl::desc("seconds a program may take (compile and runs)"));
static cl::opt<std::string>
    dbPath("db", cl::cat(trainCategory),
           cl::desc("tuning database (default: pd-tune's)"));
static cl::opt<bool> noDb("no-db", cl::cat(trainCategory),
                          cl::desc("keep no tuning database"));

static int runTool(int argc, char **argv);

int main(int argc, char **argv) {
  llvm::InitLLVM y(argc, argv);
  return runWithLargeStack([&] { return runTool(argc, argv); });
}

/// The kernel files named by `inputs`: files as given, folders' *.pd and
/// *.mlir files in name order.
static FailureOr<std::vector<std::string>> expandInputs(std::string &error) {
  std::vector<std::string> files;
  for (const std::string &input : inputs) {
    if (!llvm::sys::fs::is_directory(input)) {
      if (!llvm::sys::fs::exists(input)) {
        error = "no kernel file or folder '" + input + "'";
        return failure();
      }
      files.push_back(input);
      continue;
    }
    std::vector<std::string> found;
    std::error_code ec;
    for (llvm::sys::fs::directory_iterator it(input, ec), end;
         it != end && !ec; it.increment(ec)) {
      StringRef ext = llvm::sys::path::extension(it->path());
      if (ext == ".pd" || ext == ".mlir")
        found.push_back(it->path());
    }
    if (ec) {
      error = "cannot read the folder '" + input + "': " + ec.message();
      return failure();
    }
    if (found.empty()) {
      error = "the folder '" + input + "' holds no .pd or .mlir kernel";
      return failure();
    }
    llvm::sort(found);
    files.insert(files.end(), found.begin(), found.end());
  }
  return files;
}

static std::string formatDuration(double seconds) {
  unsigned s = unsigned(seconds);
  char text[32];
  snprintf(text, sizeof(text), "%u:%02u:%02u", s / 3600, s / 60 % 60, s % 60);
  return text;
}

static int runTool(int argc, char **argv) {
  cl::HideUnrelatedOptions(trainCategory);
  cl::ParseCommandLineOptions(
      argc, argv,
      "pd-train: train the RL agent's policy by playing the optimization "
      "game\n");
  auto fail = [](const Twine &message) {
    llvm::errs() << "pd-train: " << message << "\n";
    return 1;
  };
  if (inputs.empty() && generated == 0)
    return fail("no kernels: give kernel files or folders, or --generated=N");
  if (encoder != "learned" && encoder != "fixed")
    return fail("unknown --encoder '" + encoder + "'; expected learned or "
                "fixed");
  if (!(restartBest >= 0 && restartBest <= 1))
    return fail("--restart-best must be a share between 0 and 1");
  std::optional<Strategy> teacher = parseStrategy(demonstrate);
  if (demonstrate != "none" &&
      (!teacher || (*teacher != Strategy::Greedy &&
                    *teacher != Strategy::Expert)))
    return fail("unknown --demonstrate '" + demonstrate +
                "'; expected none, greedy or expert");
  if (horizon == 0 || batchSize == 0 || checkpointEvery == 0)
    return fail("--horizon, --batch and --checkpoint-every must be at least 1");
  if (generatedStages == 0 || generatedIterations < 1)
    return fail("--generated-stages and --generated-iterations must be at "
                "least 1");
  TuningSessionOptions sessionOptions;
  sessionOptions.target = targetName;
  sessionOptions.runnerProgram = runnerProgram;
  sessionOptions.toolPath =
      llvm::sys::fs::getMainExecutable(argv[0], (void *)&runTool);
  sessionOptions.gpuChip = gpuChip;
  sessionOptions.threads = threads;
  sessionOptions.repetitions = repetitions;
  sessionOptions.timeLimit = timeLimit;
  sessionOptions.dbPath = dbPath;
  sessionOptions.noDb = noDb;
  if (std::optional<std::string> why =
          checkTuningSessionOptions(sessionOptions))
    return fail(*why);
  std::string error;
  FailureOr<std::vector<std::string>> files = expandInputs(error);
  if (failed(files))
    return fail(error);

  DialectRegistry registry;
  registerAllPerfDojo(registry);
  if (targetName != "cpu")
    registerGPUTargets(registry);
  MLIRContext context(registry);
  context.loadDialect<PerfDojoDialect>();
  context.printOpOnDiagnostic(false);
  registerAllMoves();

  // One tuning session per kernel.
  std::vector<std::unique_ptr<TuningSession>> sessions;
  for (const std::string &path : *files) {
    std::unique_ptr<llvm::MemoryBuffer> file =
        mlir::openInputFile(path, &error);
    if (!file)
      return fail(error);
    // A source manager of its own: the parser reads its main buffer.
    llvm::SourceMgr sourceMgr;
    sourceMgr.AddNewSourceBuffer(std::move(file), SMLoc());
    SourceMgrDiagnosticHandler handler(sourceMgr, &context);
    OwningOpRef<ModuleOp> module =
        parseKernelFile(sourceMgr, path, "", &context, error);
    if (!module)
      return error.empty() ? 1 : fail(error);
    std::string name = llvm::sys::path::stem(path).str();
    auto session =
        TuningSession::create(std::move(module), name, sessionOptions, error);
    if (!session)
      return fail(path + ": " + error);
    sessions.push_back(std::move(session));
  }
  RandomKernelOptions randomOptions;
  randomOptions.size = generatedStages;
  randomOptions.maxIterations = generatedIterations;
  for (unsigned i = 0; i < generated; ++i) {
    uint64_t kernelSeed = mixSeed(seed * 1000003 + i);
    std::string name = "random_" + std::to_string(i);
    OwningOpRef<ModuleOp> module =
        generateRandomKernel(&context, kernelSeed, randomOptions, name);
    if (!module)
      return fail("the kernel generator failed on seed " +
                  std::to_string(kernelSeed));
    auto session =
        TuningSession::create(std::move(module), name, sessionOptions, error);
    if (!session)
      return fail(name + ": " + error);
    sessions.push_back(std::move(session));
  }
  std::string target = getPolicyTarget(sessions.front()->getEnvironment());

  // The policy: a fresh one, or the checkpoint's.
  std::unique_ptr<Policy> policy;
  std::string replayPath = outputFilename + ".replay";
  if (resume) {
    policy = Policy::load(outputFilename, target, error);
    if (!policy)
      return fail(error);
  } else {
    if (llvm::sys::fs::exists(outputFilename))
      return fail("'" + outputFilename + "' exists: give --resume to go on "
                  "from it, or another -o");
    QNetworkConfig config;
    config.encoder = encoder;
    config.buckets = buckets;
    config.embedding = embedding;
    config.hidden = hidden;
    config.learningRate = learningRate;
    config.gamma = discount;
    config.seed = seed;
    policy = Policy::create(config, target, error);
    if (!policy)
      return fail(error);
  }
  std::map<std::string, std::string> &meta = policy->getMetadata();
  unsigned done = 0, measuredBefore = 0;
  double secondsBefore = 0;
  StringRef(meta["episodes"]).getAsInteger(10, done);
  StringRef(meta["evaluations"]).getAsInteger(10, measuredBefore);
  StringRef(meta["train_seconds"]).getAsDouble(secondsBefore);

  TrainingOptions options;
  options.horizon = horizon;
  options.batchSize = batchSize;
  options.updatesPerStep = updatesPerStep;
  options.targetSync = targetSync;
  options.epsilonStart = epsilonStart;
  options.epsilonEnd = epsilonEnd;
  options.restartBest = restartBest;
  options.epsilonEpisodes =
      epsilonEpisodes ? unsigned(epsilonEpisodes)
                      : std::max(1u, unsigned(0.7 * episodes));
  // A resumed run continues with a seed of its own.
  options.seed = seed + done;
  Trainer trainer(*policy, options);
  if (resume && llvm::sys::fs::exists(replayPath)) {
    auto text = llvm::MemoryBuffer::getFile(replayPath);
    if (!text)
      return fail("cannot read '" + replayPath + "'");
    if (failed(trainer.readReplay((*text)->getBuffer(), error)))
      return fail(replayPath + ": " + error);
  }

  // The learning curve so far (a resumed run appends).
  std::string curvePath =
      curveFilename.empty() ? outputFilename + ".curve.csv" : curveFilename;
  std::vector<CurvePoint> curve;
  if (resume && curvePath != "-")
    if (auto text = llvm::MemoryBuffer::getFile(curvePath))
      for (StringRef line : llvm::drop_begin(
               llvm::split((*text)->getBuffer().trim(), '\n'))) {
        SmallVector<StringRef> cells;
        line.split(cells, ',');
        CurvePoint p;
        if (cells.size() < 4 || cells[0].getAsInteger(10, p.episode) ||
            cells[2].getAsDouble(p.bestSpeedup) ||
            cells[3].getAsDouble(p.epsilon))
          continue;
        p.kernel = cells[1].str();
        if (p.episode < done)
          curve.push_back(p);
      }

  auto checkpoint = [&](unsigned episodesDone, unsigned measured,
                        double seconds) {
    meta["episodes"] = std::to_string(episodesDone);
    meta["evaluations"] = std::to_string(measured);
    meta["train_seconds"] = llvm::formatv("{0:f1}", seconds).str();
    meta["updates"] = std::to_string(trainer.getUpdates());
    std::string kernels;
    for (auto &s : sessions)
      kernels += (kernels.empty() ? "" : ",") + s->getName().str();
    meta["kernels"] = kernels;
    {
      std::string replayError;
      auto out = mlir::openOutputFile(replayPath + ".tmp", &replayError);
      if (!out)
        return fail(replayError) == 0;
      trainer.writeReplay(out->os());
      out->keep();
    }
    if (std::error_code ec =
            llvm::sys::fs::rename(replayPath + ".tmp", replayPath))
      return fail("cannot write '" + replayPath + "': " + ec.message()) == 0;
    std::string saveError;
    if (!policy->save(outputFilename, saveError))
      return fail(saveError) == 0;
    if (curvePath != "-") {
      std::string curveError;
      auto csv = mlir::openOutputFile(curvePath, &curveError);
      auto svg = mlir::openOutputFile(
          llvm::sys::path::parent_path(curvePath).str() +
              (llvm::sys::path::parent_path(curvePath).empty() ? "" : "/") +
              llvm::sys::path::stem(curvePath).str() + ".svg",
          &curveError);
      if (!csv || !svg)
        return fail(curveError) == 0;
      csv->os() << "episode,kernel,best_speedup,epsilon\n";
      for (const CurvePoint &p : curve)
        csv->os() << p.episode << "," << p.kernel << ","
                  << llvm::format("%.4f", p.bestSpeedup) << ","
                  << llvm::format("%.3f", p.epsilon) << "\n";
      writeLearningCurve(svg->os(),
                         "pd-train: " + meta["encoder"] + " encoder, " +
                             meta["target"],
                         curve);
      csv->keep();
      svg->keep();
    }
    return true;
  };

  llvm::errs() << "pd-train: " << sessions.size() << " kernels, episodes "
               << done << " -> " << episodes << ", " << meta["encoder"]
               << " encoder, " << target << ", policy " << outputFilename
               << " (" << QNetwork::getBackendVersion() << ", "
               << policy->getNetwork().getDevice() << ")\n";
  auto begin = std::chrono::steady_clock::now();
  auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() -
                                         begin)
        .count();
  };
  unsigned measured = measuredBefore;
  std::map<std::string, double> best;
  std::string stopReason;
  unsigned episode = done;
  // Demonstrations, once, before the first episode (a resumed run has them
  // in its replay buffer already).
  if (demonstrate != "none" && done == 0)
    for (auto &session : sessions) {
      EpisodeResult r =
          trainer.playDemonstration(session->getEnvironment(), *teacher);
      if (!r.error.empty())
        return fail(session->getName() + ": " + r.error);
      measured += r.evaluations;
      double &kernelBest = best[session->getName().str()];
      kernelBest = std::max(kernelBest, r.bestSpeedup);
      if (!quiet)
        llvm::errs() << llvm::format(
            "demonstration %s (%s): %u moves, %.2fx, loss %.4f, %u "
            "measured, %s\n",
            session->getName().str().c_str(), demonstrate.c_str(), r.moves,
            r.bestSpeedup, r.meanLoss, r.evaluations,
            formatDuration(secondsBefore + elapsed()).c_str());
      meta["demonstrations"] = demonstrate;
    }
  for (; episode < episodes; ++episode) {
    if (budget && measured >= budget) {
      stopReason = "the budget of " + std::to_string(budget) +
                   " measured programs is spent";
      break;
    }
    if (timeBudget > 0 && elapsed() >= timeBudget) {
      stopReason = "the time budget is spent";
      break;
    }
    TuningSession &session = *sessions[episode % sessions.size()];
    EpisodeResult r = trainer.playEpisode(session.getEnvironment(), episode);
    if (!r.error.empty())
      return fail(session.getName() + ": " + r.error);
    measured += r.evaluations;
    double &kernelBest = best[session.getName().str()];
    kernelBest = std::max(kernelBest, r.bestSpeedup);
    curve.push_back({episode, session.getName().str(), r.bestSpeedup,
                     r.epsilon});
    if (!quiet)
      llvm::errs() << llvm::format(
          "episode %u/%u %s: %u moves, %.2fx (best %.2fx), epsilon %.2f, "
          "loss %.4f, %u measured, %s\n",
          episode + 1, unsigned(episodes), session.getName().str().c_str(),
          r.moves, r.bestSpeedup, kernelBest, r.epsilon, r.meanLoss,
          r.evaluations, formatDuration(secondsBefore + elapsed()).c_str());
    if ((episode + 1) % checkpointEvery == 0 &&
        !checkpoint(episode + 1, measured, secondsBefore + elapsed()))
      return 1;
  }
  if (!checkpoint(episode, measured, secondsBefore + elapsed()))
    return 1;
  llvm::outs() << "pd-train: " << episode << " episodes, " << measured
               << " programs measured, "
               << formatDuration(secondsBefore + elapsed()) << " of training"
               << (stopReason.empty() ? "" : " (stopped: " + stopReason + ")")
               << "\n";
  for (auto &[kernel, speedup] : best)
    llvm::outs() << llvm::format("  %-24s best %.2fx over its start\n",
                                 kernel.c_str(), speedup);
  llvm::outs() << "policy: " << outputFilename << "\n";
  return 0;
}
