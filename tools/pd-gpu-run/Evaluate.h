//===- Evaluate.h - Checking and timing packages ----------------*- C++ -*-===//
//
// One package from folder to result: validate it, run its reference (once
// for every package that shares it), run it, compare its outputs, and dump
// them if asked.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDGPURUN_EVALUATE_H
#define PERFDOJO_TOOLS_PDGPURUN_EVALUATE_H

#include "Supervisor.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace perfdojo {
namespace gpurun {

struct EvaluationOptions {
  RunSettings settings;
  /// Seconds a step (a launch) may take before the package is abandoned.
  double timeLimitSeconds = 60;
  /// False: compare nothing (--check=none).
  bool check = true;
  /// Where to write the outputs of each checked run (empty: nowhere).
  std::string dumpOutputsDir;
};

/// The result of one package.
struct PackageResult {
  /// The folder as named on the command line (or found in a named folder).
  std::string path;
  /// The folder's name.
  std::string name;
  /// The kernel's name (empty when the package could not be read).
  std::string kernel;
  Status status = Status::Ok;
  /// Why, for every status but Ok.
  std::string reason;
  std::vector<double> timesMs;
  /// What the outputs were compared with.
  CheckKind checked = CheckKind::None;
  /// The largest error, when compared with expected or reference values.
  std::optional<double> maxError;
  /// The elements so compared, over every output: all of them, or fewer
  /// when some expected values are a sample.
  std::optional<int64_t> checkedElements;
  /// The elements of every output (what a full comparison compares).
  int64_t outputElements = 0;
  /// Whether the expected values of some output were a sample.
  bool sampled = false;

  /// The median of the times (0 when there are none).
  double getMedianMs() const;
  double getMinMs() const;
};

/// Evaluates packages one after the other.
class Evaluator {
public:
  explicit Evaluator(const EvaluationOptions &options);
  ~Evaluator();

  /// Evaluates the package in folder `dir`. Never fails: every problem
  /// becomes the result's status and reason.
  PackageResult evaluate(const std::string &dir);

  /// The device of the first child that got one.
  const std::optional<DeviceInfo> &getDevice() const { return device; }
  /// Whether writing dumped outputs failed (reported on stderr).
  bool hadDumpErrors() const { return dumpErrors; }

private:
  struct ReferenceRun;
  /// The outputs of `reference` (run or remembered), or a failure.
  const ReferenceRun &runReference(const Package &reference);
  void dumpOutputs(const Package &package, const char *outputs);

  EvaluationOptions options;
  std::optional<DeviceInfo> device;
  /// The last reference run, kept for the packages that share it.
  std::unique_ptr<ReferenceRun> lastReference;
  bool dumpErrors = false;
};

/// The byte offset of each output buffer's elements in a run's shared
/// output memory (back to back in declaration order; -1 for other roles),
/// and their total in `totalBytes`.
std::vector<int64_t> getOutputOffsets(const Package &package,
                                      uint64_t &totalBytes);

/// Creates `dir` and its missing parents; false with `error` on failure.
bool createDirectories(const std::string &dir, std::string &error);

} // namespace gpurun
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDGPURUN_EVALUATE_H
