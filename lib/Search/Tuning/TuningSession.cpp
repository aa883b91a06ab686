//===- TuningSession.cpp - One kernel set up for tuning on a target -------===//

#include "PerfDojo/Search/Tuning/TuningSession.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Search/Evaluator/Evaluator.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Program.h"
#include <cmath>

using namespace mlir;
using namespace mlir::perfdojo;

std::optional<std::string>
mlir::perfdojo::checkTuningSessionOptions(const TuningSessionOptions &options) {
  if (options.target != "cpu" && options.target != "cuda" &&
      options.target != "rocm")
    return "unknown --target '" + options.target +
           "'; expected cpu, cuda or rocm";
  if (options.threads == 0)
    return std::string("--num-threads must be at least 1");
  if (!(options.minTimedSeconds >= 0) || options.minTimedSeconds > 60)
    return std::string("--min-timed-ms must lie between 0 and 60000");
  bool gpu = options.target != "cpu";
  if (options.vectorWidth != 0 &&
      (gpu || !getCPUTarget(options.threads, options.vectorWidth)))
    return "--vector-width=" + std::to_string(options.vectorWidth) +
           (gpu ? " is for the CPU target" : ": expected 16, 8 or 4");
  if (!gpu && (!options.remoteDir.empty() || !options.runnerProgram.empty() ||
               !options.gpuChip.empty() || !options.gpuFeatures.empty()))
    return std::string("--remote, --runner, --gpu-chip and --gpu-features "
                       "need --target=cuda or rocm");
  if (!options.remoteDir.empty() && !options.runnerProgram.empty())
    return std::string("--remote writes generations for a runner elsewhere; "
                       "--runner runs them here: give one");
  return std::nullopt;
}

std::unique_ptr<TuningSession>
TuningSession::create(OwningOpRef<ModuleOp> module, StringRef name,
                      const TuningSessionOptions &options,
                      std::string &error) {
  if (std::optional<std::string> why = checkTuningSessionOptions(options)) {
    error = *why;
    return nullptr;
  }
  std::unique_ptr<TuningSession> session(new TuningSession());
  session->name = name.str();
  session->options = options;
  SmallVector<KernelOp> kernels(module->getOps<KernelOp>());
  if (kernels.size() != 1) {
    error = name.str() + " holds " + std::to_string(kernels.size()) +
            " kernels; tuning takes one";
    return nullptr;
  }
  session->module = std::move(module);
  KernelOp kernel = kernels.front();
  bool gpu = options.target != "cpu";
  bool useInterpreter = options.checkAgainstInterpreter;
  if (std::optional<std::string> why = getCPUIncompatibility(kernel)) {
    if (!gpu) {
      error = "the kernel cannot run on this CPU: " + *why;
      return nullptr;
    }
    // The reference outputs then come from the interpreter, which runs
    // every mapping sequentially.
    useInterpreter = true;
  }
  {
    llvm::raw_string_ostream os(session->kernelText);
    if (failed(exportTextForm(kernel, os))) {
      error = "the kernel has no text form";
      return nullptr;
    }
  }

  // A GPU: candidates become kernel packages, run here or elsewhere.
  if (gpu) {
    PackageRunnerOptions runnerOptions;
    runnerOptions.package.api =
        options.target == "cuda" ? GPUApi::Cuda : GPUApi::Hip;
    runnerOptions.package.chip = options.gpuChip;
    runnerOptions.package.features = options.gpuFeatures;
    runnerOptions.expected.maxBytes = options.maxExpectedMiB << 20;
    runnerOptions.kernelName = session->name;
    runnerOptions.kernelHash = hashProgramText(session->kernelText);
    runnerOptions.cost = getKernelCost(kernel);
    if (!options.remoteDir.empty()) {
      runnerOptions.remote = true;
      runnerOptions.dir = options.remoteDir;
    } else {
      SmallString<256> scratch;
      if (std::error_code ec = llvm::sys::fs::createUniqueDirectory(
              "pd-tune-packages", scratch)) {
        error = "cannot create a temporary folder: " + ec.message();
        return nullptr;
      }
      runnerOptions.dir = session->scratchDir = std::string(scratch);
      runnerOptions.runner = options.runnerProgram;
      if (runnerOptions.runner.empty()) {
        SmallString<256> path(llvm::sys::path::parent_path(options.toolPath));
        llvm::sys::path::append(path, "pd-gpu-run");
        runnerOptions.runner = std::string(path);
      }
      if (llvm::ErrorOr<std::string> found =
              llvm::sys::findProgramByName(runnerOptions.runner))
        runnerOptions.runner = *found;
      if (!llvm::sys::fs::can_execute(runnerOptions.runner)) {
        error = "cannot run the GPU runner '" + runnerOptions.runner +
                "'; give --runner, or --remote=DIR to run the candidates "
                "on another machine";
        return nullptr;
      }
      runnerOptions.runnerArgs = {
          "--warmup=" + std::to_string(options.gpuWarmup),
          "--repetitions=" + std::to_string(options.repetitions),
          "--time-limit=" +
              std::to_string(int(std::ceil(options.timeLimit)))};
    }
    session->runner =
        std::make_unique<PackageRunner>(std::move(runnerOptions));
  }

  if (!options.noDb) {
    std::string path = options.dbPath.empty() ? getDefaultTuningDatabasePath()
                                              : options.dbPath;
    session->database = TuningDatabase::open(path, error);
    std::string target = session->runner ? session->runner->getTarget()
                                         : getHostTarget(options.threads);
    if (!session->database ||
        failed(session->database->setKey(
            {session->kernelText, target, getToolchain()}, error))) {
      error = "tuning database: " + error;
      return nullptr;
    }
  }

  EnvironmentOptions envOptions;
  envOptions.evaluation.threads = options.threads;
  envOptions.evaluation.repetitions = options.repetitions;
  envOptions.evaluation.minTimedSeconds = options.minTimedSeconds;
  envOptions.evaluation.timeLimit = options.timeLimit;
  envOptions.tolerance = options.tolerance;
  envOptions.database = session->database.get();
  envOptions.checkAgainstInterpreter = useInterpreter;
  envOptions.runner = session->runner.get();
  session->env = std::make_unique<Environment>(kernel, envOptions);
  return session;
}

TuningSession::~TuningSession() {
  env.reset();
  if (!scratchDir.empty())
    (void)llvm::sys::fs::remove_directories(scratchDir);
}

KernelOp TuningSession::getKernel() {
  return *module->getOps<KernelOp>().begin();
}

TargetInfo TuningSession::getTargetInfo() const {
  TargetInfo target =
      getCPUTarget(options.threads, options.vectorWidth).value_or(TargetInfo());
  target.threads = options.threads;
  if (runner) {
    target.gpu = true;
    target.vectorWidth = 4;
  }
  return target;
}

std::string TuningSession::getTargetLabel() const {
  if (runner)
    return runner->getTarget() + (options.remoteDir.empty() ? "" : ", remote");
  return std::to_string(options.threads) +
         (options.threads == 1 ? " thread" : " threads");
}
