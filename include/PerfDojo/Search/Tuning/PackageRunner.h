//===- PackageRunner.h - Candidates measured on a GPU via packages -*- C++ -*-===//
//
// The environment's CandidateRunner for GPUs: each batch of candidates is
// compiled here into kernel packages (docs/GPU.md), one folder per
// generation, and run by `pd-gpu-run`, either at once on this machine's GPU
// or on a GPU machine reached through files (batched remote evaluation):
//
//   DIR/tuning.json              what the folder tunes (kernel, target)
//   DIR/expected/*.npy           the reference outputs, shared
//   DIR/gen-NNN/candidates.json  the generation: package, hash and moves
//   DIR/gen-NNN/<hash>/          one package per candidate
//   DIR/gen-NNN/results.json     pd-gpu-run's results (--results=)
//
// In remote mode a generation without results.json is pending: the search
// stops there, and run again once the results are in, it retraces its
// steps (their measurements come back from the results into the tuning
// database) and writes the next generation.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_TUNING_PACKAGERUNNER_H
#define PERFDOJO_SEARCH_TUNING_PACKAGERUNNER_H

#include "PerfDojo/Conversion/GPU/KernelPackage.h"
#include "PerfDojo/Search/Tuning/Environment.h"
#include "PerfDojo/Search/Evaluator/ExpectedOutputs.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace perfdojo {

struct PackageRunnerOptions {
  KernelPackageOptions package;
  ExpectedOutputsOptions expected;
  /// The tuning folder (see above); created if needed.
  std::string dir;
  /// Write generations and wait for their results.json instead of running
  /// them here.
  bool remote = false;
  /// Not remote: the runner program (pd-gpu-run, or a stand-in with its
  /// command line and results format) and its options before the folder.
  std::string runner;
  SmallVector<std::string> runnerArgs;
  /// The kernel's name, for tuning.json and the messages.
  std::string kernelName;
  /// Identifies the starting kernel (a hash of its canonical text): a
  /// folder of another kernel or target is refused.
  std::string kernelHash;
  /// What the kernel must move and compute, recorded in tuning.json for
  /// the benchmark's share of the GPU's peaks.
  KernelCost cost;
};

class PackageRunner : public CandidateRunner {
public:
  explicit PackageRunner(PackageRunnerOptions options);

  /// "cuda sm_90 +ptx80": the API, chip and features candidates are
  /// compiled for.
  static std::string getTargetName(const KernelPackageOptions &package);
  std::string getTarget() const override;
  LogicalResult prepare(const ReferenceOutputs &reference,
                        std::string &error) override;
  FailureOr<std::vector<Measurement>> run(ArrayRef<Candidate> candidates,
                                          std::string &error) override;

  /// Remote: the generation folder whose results the last pending batch
  /// waits for.
  StringRef getWaitingFolder() const { return waiting; }
  /// Candidates run by a runner (results read) and packages built.
  unsigned getRunCount() const { return runCount; }
  unsigned getBuiltCount() const { return builtCount; }

private:
  /// Reads every generation of the folder: results into `results`,
  /// packages without results into `written`.
  LogicalResult scan(std::string &error);
  /// Reads one generation's results.json.
  LogicalResult readResults(StringRef generation, std::string &error);

  PackageRunnerOptions options;
  PackageCheck check;
  /// Measurements read back, by candidate hash.
  llvm::StringMap<Measurement> results;
  /// Packages written whose results are not back, by hash: their folder.
  llvm::StringMap<std::string> written;
  unsigned generations = 0;
  std::string waiting;
  unsigned runCount = 0, builtCount = 0;
};

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_TUNING_PACKAGERUNNER_H
