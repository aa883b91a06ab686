//===- Runner.h - Running one package on the GPU ----------------*- C++ -*-===//
//
// What the child process does with a package: open the driver, load the
// binary, fill the inputs, run the launches once (the checked run, whose
// outputs it copies to memory shared with the parent), then the warm-up
// and timed runs. It tells the parent what it is doing, line by line, over
// a pipe (the protocol below); the parent (Supervisor.h) enforces the time
// limit and survives whatever happens to the child.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDGPURUN_RUNNER_H
#define PERFDOJO_TOOLS_PDGPURUN_RUNNER_H

#include "Package.h"

#include "PerfDojo/Support/InputGenerator.h"

#include <vector>

namespace mlir {
namespace perfdojo {
namespace gpurun {

/// How to run a package.
struct RunSettings {
  /// The device's index among those of the package's API.
  int device = 0;
  /// Untimed runs after the checked run, then timed runs.
  unsigned warmup = 2;
  unsigned repetitions = 10;
  /// Before each timed run, overwrite a buffer of twice the L2 size.
  bool flushL2 = true;
  /// Seconds of warm-up and timed runs a package may take (0: no bound).
  /// A slow candidate of a search then costs a few of its runs, not
  /// `warmup + repetitions`: warm-ups stop once they used a quarter of it,
  /// timed runs once they used all of it, after at least one.
  double timeBudgetSeconds = 0;
};

/// The lines the child writes to the parent, each "KEYWORD TEXT":
///   stage TEXT          the launch it waits for ("launch 'k' of timed run 3
///                       of 10"), which gets the time limit
///   step TEXT           another step ("loading the module 'k.ptx'"), which
///                       gets at least a minute (compiling, copying)
///   device JSON         the device it runs on ({"api", "name", "driver",
///                       "compute_capability", "l2_bytes", "memory_bytes"})
///   checked             the outputs of the checked run are in shared memory
///   time MS             the time of one timed run, in milliseconds
///   done                everything finished
///   error STATUS TEXT   it stopped: STATUS is fault, load-error, no-device
///                       or bad-package, TEXT the reason
/// Any line counts as progress; a timeout names the last stage or step.
namespace protocol {
constexpr const char *stage = "stage";
constexpr const char *step = "step";
constexpr const char *device = "device";
constexpr const char *checked = "checked";
constexpr const char *time = "time";
constexpr const char *done = "done";
constexpr const char *error = "error";
} // namespace protocol

/// Fills `data` with the elements of the input `buffer`, drawing from
/// `generator` as every PerfDojo evaluator does (row-major; floats rounded
/// to nearest, integers truncated to the width).
void generateInput(InputGenerator &generator, const Buffer &buffer,
                   std::vector<char> &data);

/// Runs `package` in this process (a child of the runner) and reports to
/// the file descriptor `reportFd`; writes the outputs of the checked run to
/// `outputs` (the out buffers' bytes back to back, in declaration order).
/// With `timed` false (a reference package) there is only the checked run.
/// Returns the process's exit status.
int runInChild(const Package &package, const RunSettings &settings, bool timed,
               char *outputs, int reportFd);

} // namespace gpurun
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDGPURUN_RUNNER_H
