//===- Supervisor.cpp - Running a package in a child process --------------===//

#include "Supervisor.h"

#include "Json.h"

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>

using namespace mlir::perfdojo;
using namespace mlir::perfdojo::gpurun;

const char *mlir::perfdojo::gpurun::getStatusName(Status status) {
  switch (status) {
  case Status::Ok:
    return "ok";
  case Status::WrongAnswer:
    return "wrong-answer";
  case Status::Fault:
    return "fault";
  case Status::Timeout:
    return "timeout";
  case Status::LoadError:
    return "load-error";
  case Status::BadPackage:
    return "bad-package";
  case Status::NoDevice:
    return "no-device";
  }
  return "fault";
}

const char *mlir::perfdojo::gpurun::getStatusText(Status status) {
  switch (status) {
  case Status::Ok:
    return "ok";
  case Status::WrongAnswer:
    return "wrong answer";
  case Status::Fault:
    return "fault";
  case Status::Timeout:
    return "timeout";
  case Status::LoadError:
    return "load error";
  case Status::BadPackage:
    return "bad package";
  case Status::NoDevice:
    return "no device";
  }
  return "fault";
}

namespace {
using Clock = std::chrono::steady_clock;

/// The least time a step other than a launch gets, in seconds.
constexpr int minStepSeconds = 60;

/// Follows one child's lines.
class ChildMonitor {
public:
  explicit ChildMonitor(ChildResult &result) : result(result) {}

  /// Handles one complete line.
  void handle(const std::string &line) {
    size_t space = line.find(' ');
    std::string keyword = line.substr(0, space);
    std::string text = space == std::string::npos ? "" : line.substr(space + 1);
    if (keyword == protocol::stage || keyword == protocol::step) {
      stage = text;
      inLaunch = keyword == protocol::stage;
    } else if (keyword == protocol::device) {
      parseDevice(text);
    } else if (keyword == protocol::checked) {
      result.checked = true;
    } else if (keyword == protocol::time) {
      result.timesMs.push_back(std::strtod(text.c_str(), nullptr));
    } else if (keyword == protocol::done) {
      finished = true;
    } else if (keyword == protocol::error) {
      size_t split = text.find(' ');
      std::string status = text.substr(0, split);
      result.reason = split == std::string::npos ? "" : text.substr(split + 1);
      if (status == "load-error")
        result.status = Status::LoadError;
      else if (status == "no-device")
        result.status = Status::NoDevice;
      else if (status == "bad-package")
        result.status = Status::BadPackage;
      else
        result.status = Status::Fault;
      failed = true;
    }
  }

  bool isOver() const { return finished || failed; }
  bool hasFailed() const { return failed; }
  const std::string &getStage() const { return stage; }
  /// Whether the child waits for a launch (rather than another step).
  bool isInLaunch() const { return inLaunch; }

private:
  void parseDevice(const std::string &text) {
    JsonValue value;
    std::string error;
    if (!parseJson(text, value, error) || !value.isObject())
      return;
    DeviceInfo info;
    const JsonValue *api = value.get("api");
    info.api = api && api->getText() == "hip" ? Api::Hip : Api::Cuda;
    if (const JsonValue *name = value.get("name"))
      info.name = name->getText();
    int64_t number = 0;
    uint64_t bytes = 0;
    if (const JsonValue *driver = value.get("driver");
        driver && driver->getInteger(number))
      info.driverVersion = int(number);
    if (const JsonValue *cc = value.get("compute_capability")) {
      int major = 0, minor = 0;
      if (std::sscanf(cc->getText().c_str(), "%d.%d", &major, &minor) == 2) {
        info.computeMajor = major;
        info.computeMinor = minor;
      }
    }
    if (const JsonValue *l2 = value.get("l2_bytes");
        l2 && l2->getUnsigned(bytes))
      info.l2Bytes = bytes;
    if (const JsonValue *memory = value.get("memory_bytes");
        memory && memory->getUnsigned(bytes))
      info.memoryBytes = bytes;
    result.device = info;
  }

  ChildResult &result;
  std::string stage = "starting the child process";
  bool inLaunch = false;
  bool finished = false;
  bool failed = false;
};
} // namespace

/// "60 s", "0.5 s".
static std::string formatSeconds(double seconds) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g s", seconds);
  return text;
}

ChildResult mlir::perfdojo::gpurun::superviseRun(const Package &package,
                                                 const RunSettings &settings,
                                                 bool timed,
                                                 double timeLimitSeconds,
                                                 char *outputs) {
  ChildResult result;
  ChildOptions options;
  // The child does not outlive the runner.
  options.dieWithParent = true;
  std::string error;
  std::unique_ptr<ChildProcess> child = ChildProcess::start(
      [&](ChildChannel &channel) {
        return runInChild(package, settings, timed, outputs, channel.getFD());
      },
      options, error);
  if (!child) {
    result.status = Status::Fault;
    result.reason = error;
    return result;
  }

  ChildMonitor monitor(result);
  const auto limit = std::chrono::duration_cast<Clock::duration>(
      std::chrono::duration<double>(timeLimitSeconds));
  // Steps other than launches (loading the driver, compiling the PTX,
  // copying large buffers) get at least a minute, whatever the limit.
  const auto stepLimit =
      std::max<Clock::duration>(limit, std::chrono::seconds(minStepSeconds));
  // After the last report, the child only has to exit.
  const auto exitLimit =
      std::min<Clock::duration>(limit, std::chrono::seconds(10));
  auto deadline = Clock::now() + stepLimit;
  double deadlineSeconds = std::max(timeLimitSeconds, double(minStepSeconds));
  bool timedOut = false;
  std::string line;
  while (true) {
    double left =
        std::chrono::duration<double>(deadline - Clock::now()).count();
    int read = left > 0 ? child->readLine(line, left) : -1;
    if (read < 0) {
      timedOut = true;
      break;
    }
    if (read == 0)
      break; // The child exited (or closed the pipe).
    monitor.handle(line);
    bool launch = monitor.isInLaunch();
    deadline = Clock::now() + (monitor.isOver() ? exitLimit
                               : launch         ? limit
                                                : stepLimit);
    deadlineSeconds = launch
                          ? timeLimitSeconds
                          : std::max(timeLimitSeconds, double(minStepSeconds));
  }
  if (timedOut)
    child->kill();
  const ChildStatus &status = child->wait();

  if (monitor.hasFailed())
    return result;
  if (monitor.isOver()) {
    // Done: whatever happened while the child exited does not matter.
    result.status = Status::Ok;
    return result;
  }
  if (timedOut) {
    result.status = Status::Timeout;
    result.reason = monitor.getStage() + " did not finish within " +
                    formatSeconds(deadlineSeconds);
    return result;
  }
  result.status = Status::Fault;
  if (status.kind == ChildStatus::Kind::Signalled)
    result.reason =
        describeSignal(status.signal) + " during " + monitor.getStage();
  else
    result.reason = "the child process exited with status " +
                    std::to_string(status.exitCode) + " during " +
                    monitor.getStage() + " without a report";
  return result;
}
