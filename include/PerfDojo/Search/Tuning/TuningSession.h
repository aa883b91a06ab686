//===- TuningSession.h - One kernel set up for tuning on a target -*- C++ -*-===//
//
// What pd-tune and pd-train do before playing: for a parsed kernel and a
// target (this CPU, or a GPU through kernel packages run by pd-gpu-run
// here or on another machine), the package runner, the tuning database
// keyed by kernel, target and toolchain, and the game environment over
// them. One session per kernel; the session owns everything it made and
// removes its scratch folder when destroyed.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_TUNING_TUNINGSESSION_H
#define PERFDOJO_SEARCH_TUNING_TUNINGSESSION_H

#include "PerfDojo/Search/Tuning/Environment.h"
#include "PerfDojo/Search/Tuning/PackageRunner.h"
#include "PerfDojo/Search/Tuning/Search.h"

namespace mlir {
namespace perfdojo {

struct TuningSessionOptions {
  /// cpu, cuda or rocm.
  std::string target = "cpu";
  /// GPU: write generations into this folder for a runner elsewhere.
  std::string remoteDir;
  /// GPU: the program that runs a generation here (default: pd-gpu-run
  /// beside `toolPath`).
  std::string runnerProgram;
  /// The running tool's executable, to find pd-gpu-run beside it.
  std::string toolPath;
  std::string gpuChip, gpuFeatures;
  unsigned gpuWarmup = 2;
  uint64_t maxExpectedMiB = 32;
  unsigned threads = 1;
  /// The CPU's vector width the heuristics write for (16, 8 or 4; 0: this
  /// CPU's, getCPUTarget).
  int64_t vectorWidth = 0;
  unsigned repetitions = 3;
  /// CPU: see EvaluationOptions::minTimedSeconds.
  double minTimedSeconds = 0.005;
  double timeLimit = 30;
  double tolerance = 2e-3;
  /// Check against the float64 interpreter instead of the starting kernel
  /// (forced where the kernel cannot run on this CPU and the target is a
  /// GPU).
  bool checkAgainstInterpreter = false;
  /// The tuning database; empty for the default path.
  std::string dbPath;
  bool noDb = false;
};

/// Checks the options that do not depend on a kernel: a known target, and
/// GPU-only options only with a GPU target. Returns the reason otherwise.
std::optional<std::string> checkTuningSessionOptions(
    const TuningSessionOptions &options);

class TuningSession {
public:
  /// Sets up tuning of the one kernel of `module` (named `name`, the file's
  /// stem). Null with `error` set when the kernel cannot run on the target,
  /// the runner cannot be found, or the database does not open.
  static std::unique_ptr<TuningSession>
  create(OwningOpRef<ModuleOp> module, StringRef name,
         const TuningSessionOptions &options, std::string &error);
  ~TuningSession();

  StringRef getName() const { return name; }
  KernelOp getKernel();
  /// The starting kernel's canonical text.
  StringRef getKernelText() const { return kernelText; }
  Environment &getEnvironment() { return *env; }
  /// Null on this CPU.
  PackageRunner *getRunner() { return runner.get(); }
  TuningDatabase *getDatabase() { return database.get(); }
  bool isGPU() const { return runner != nullptr; }
  /// What the heuristics know of the target (GPU or this CPU's threads).
  TargetInfo getTargetInfo() const;
  /// "cuda sm_90 +ptx80[, remote]" or "2 threads".
  std::string getTargetLabel() const;

private:
  TuningSession() = default;
  std::string name;
  std::string kernelText;
  OwningOpRef<ModuleOp> module;
  TuningSessionOptions options;
  std::unique_ptr<PackageRunner> runner;
  std::unique_ptr<TuningDatabase> database;
  std::unique_ptr<Environment> env;
  /// Removed when the session ends.
  std::string scratchDir;
};

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_TUNING_TUNINGSESSION_H
