//===- Supervisor.h - Running a package in a child process ------*- C++ -*-===//
//
// The parent's side of a run: start a child that runs the package
// (Runner.h) with PerfDojo's child-process supervisor (ChildProcess.h, whose
// plain C++ source this tool compiles in), follow its progress lines, kill it when a step takes longer
// than the time limit, and turn whatever happened (a report, a signal, an
// exit without a report) into a status and a reason. The GPU driver is only
// ever initialized in children: CUDA does not survive fork, and a kernel
// that crashes or hangs takes only its child with it.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDGPURUN_SUPERVISOR_H
#define PERFDOJO_TOOLS_PDGPURUN_SUPERVISOR_H

#include "Driver.h"
#include "Runner.h"
#include "PerfDojo/Support/ChildProcess.h"

#include <optional>
#include <string>
#include <vector>

namespace mlir {
namespace perfdojo {
namespace gpurun {

/// The outcome of a package.
enum class Status {
  Ok,
  /// The outputs differ from the expected or reference values.
  WrongAnswer,
  /// A driver error while running, or the child was killed by a signal.
  Fault,
  /// A step (a launch, mostly) made no progress within the time limit.
  Timeout,
  /// The binary does not load, or lacks a function.
  LoadError,
  /// The package is invalid.
  BadPackage,
  /// No driver or no such device.
  NoDevice,
};
/// The status in results ("wrong-answer").
const char *getStatusName(Status status);
/// The status in progress lines ("wrong answer").
const char *getStatusText(Status status);

/// What a child reported.
struct ChildResult {
  Status status = Status::Ok;
  std::string reason;
  /// Whether the outputs of the checked run reached the shared memory.
  bool checked = false;
  std::vector<double> timesMs;
  /// The device it ran on, if it got that far.
  std::optional<DeviceInfo> device;
};

/// Runs `package` in a child process (see runInChild), which writes the
/// outputs of its checked run to `outputs` (a SharedMemory). A launch that
/// does not finish within `timeLimitSeconds` (another step: within that or
/// a minute, whichever is longer) is abandoned: the child is killed and the
/// status is Timeout, naming the launch and the run.
ChildResult superviseRun(const Package &package, const RunSettings &settings,
                         bool timed, double timeLimitSeconds, char *outputs);

} // namespace gpurun
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDGPURUN_SUPERVISOR_H
