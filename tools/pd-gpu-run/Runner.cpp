//===- Runner.cpp - Running one package on the GPU ------------------------===//
//
// The child's side: every step is announced to the parent before it starts
// (a `stage` line), so that a step that hangs is named when the parent
// gives up on it, and every driver error becomes an `error` line with the
// step that failed.
//
//===----------------------------------------------------------------------===//

#include "Runner.h"

#include "Driver.h"
#include "Json.h"

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <unistd.h>

using namespace mlir::perfdojo;
using namespace mlir::perfdojo::gpurun;

void mlir::perfdojo::gpurun::generateInput(InputGenerator &generator,
                                           const Buffer &buffer,
                                           std::vector<char> &data) {
  const unsigned size = getDTypeSize(buffer.dtype);
  data.assign(size_t(buffer.getDataBytes()), 0);
  char *at = data.data();
  if (isFloatDType(buffer.dtype)) {
    for (int64_t i = 0; i < buffer.elements; ++i, at += size)
      storeElement(buffer.dtype, at, generator.nextFloat(), 0);
  } else {
    for (int64_t i = 0; i < buffer.elements; ++i, at += size)
      storeElement(buffer.dtype, at, 0, generator.nextInt());
  }
}

/// The shortest decimal that reads back as `value` (a float: the events'
/// resolution), so that results show 0.123 rather than 0.12300000339746475.
static std::string formatFloat(float value) {
  char text[32];
  for (int precision = 6; precision <= 9; ++precision) {
    std::snprintf(text, sizeof(text), "%.*g", precision, double(value));
    if (std::strtof(text, nullptr) == value)
      break;
  }
  return text;
}

namespace {
/// Writes protocol lines to the parent.
class Reporter {
public:
  explicit Reporter(int fd) : fd(fd) {}

  void send(const char *keyword, const std::string &text = "") {
    std::string line = keyword;
    if (!text.empty()) {
      line += ' ';
      // One line per message: the compiler's multi-line logs are joined.
      for (char c : text)
        line += (c == '\n' || c == '\r') ? ' ' : c;
    }
    line += '\n';
    const char *data = line.data();
    size_t left = line.size();
    while (left > 0) {
      ssize_t n = write(fd, data, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return; // The parent is gone; nothing to tell.
      data += n;
      left -= size_t(n);
    }
  }

  /// Reports that the run stopped; returns the child's exit status.
  int fail(const char *status, const std::string &reason) {
    send(protocol::error, std::string(status) + " " + reason);
    return 1;
  }

private:
  int fd;
};

/// One package on one device.
class PackageRun {
public:
  PackageRun(const Package &package, const RunSettings &settings,
             Reporter &reporter)
      : package(package), settings(settings), reporter(reporter) {}

  int run(bool timed, char *outputs);

private:
  int openDevice();
  int loadFunctions();
  int prepareBuffers(bool timed);
  /// Runs every launch of the checked run, waiting for each.
  int checkedRun();
  /// One warm-up or timed run: `runName` for messages.
  int queuedRun(const std::string &runName, bool timed, unsigned index);
  std::string describeLaunch(size_t i, const std::string &runName) const;

  const Package &package;
  const RunSettings &settings;
  Reporter &reporter;
  std::unique_ptr<Driver> driver;
  DeviceInfo device;
  std::vector<FunctionHandle> functions;
  std::vector<DevicePointer> pointers;
  /// Per launch: the device pointers of its arguments, and pointers to
  /// them (the kernel parameters).
  std::vector<std::vector<DevicePointer>> argValues;
  std::vector<std::vector<void *>> params;
  DevicePointer flushBuffer = 0;
  uint64_t flushBytes = 0;
  EventHandle start = nullptr, end = nullptr;
  std::vector<EventHandle> launchDone;
  /// Host seconds the checked run took.
  double checkedSeconds = 0;
};
} // namespace

std::string PackageRun::describeLaunch(size_t i,
                                       const std::string &runName) const {
  std::string text = "launch '" + package.launches[i].function + "'";
  if (package.launches.size() > 1)
    text += " (" + std::to_string(i + 1) + " of " +
            std::to_string(package.launches.size()) + ")";
  return text + " of " + runName;
}

int PackageRun::openDevice() {
  const char *api = getApiName(package.api);
  reporter.send(protocol::step, std::string("loading the ") + api + " driver");
  std::string error;
  driver = Driver::create(package.api, error);
  if (!driver)
    return reporter.fail("no-device", error);
  int count = 0;
  if (!driver->getDeviceCount(count, error))
    return reporter.fail("no-device", "cannot count the " + std::string(api) +
                                          " devices: " + error);
  if (settings.device >= count)
    return reporter.fail("no-device", "expected a device index below " +
                                          std::to_string(count) +
                                          " (the number of " + api +
                                          " devices the driver sees), found " +
                                          std::to_string(settings.device));
  if (!driver->getDeviceInfo(settings.device, device, error))
    return reporter.fail("no-device", "cannot query device " +
                                          std::to_string(settings.device) +
                                          ": " + error);
  std::string json =
      std::string("{\"api\": \"") + api +
      "\", \"name\": " + JsonWriter::quote(device.name) +
      ", \"driver\": " + std::to_string(device.driverVersion) +
      ", \"compute_capability\": \"" + device.getComputeCapability() +
      "\", \"l2_bytes\": " + std::to_string(device.l2Bytes) +
      ", \"memory_bytes\": " + std::to_string(device.memoryBytes) + "}";
  reporter.send(protocol::device, json);
  reporter.send(protocol::step,
                "opening device " + std::to_string(settings.device));
  if (!driver->selectDevice(settings.device, error))
    return reporter.fail("no-device", "cannot use device " +
                                          std::to_string(settings.device) +
                                          ": " + error);
  return 0;
}

int PackageRun::loadFunctions() {
  reporter.send(protocol::step, "reading '" + package.binaryPath + "'");
  std::string image;
  {
    std::FILE *file = std::fopen(package.binaryPath.c_str(), "rb");
    if (!file)
      return reporter.fail("bad-package", "cannot open '" + package.binaryPath +
                                              "': " + std::strerror(errno));
    char buffer[1 << 16];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof(buffer), file)) > 0)
      image.append(buffer, n);
    std::fclose(file);
  }
  reporter.send(protocol::step,
                "loading the module '" + package.binaryPath + "'");
  std::string error;
  ModuleHandle module;
  if (!driver->loadModule(image, module, error))
    return reporter.fail("load-error", "cannot load the module '" +
                                           package.binaryPath + "': " + error);
  std::map<std::string, FunctionHandle> byName;
  for (const Launch &launch : package.launches) {
    FunctionHandle &function = byName[launch.function];
    if (!function &&
        !driver->getFunction(module, launch.function, function, error))
      return reporter.fail("load-error",
                           "cannot find the function '" + launch.function +
                               "' in '" + package.binaryPath + "': " + error);
    if (!driver->allowSharedBytes(function, launch.sharedBytes, error))
      return reporter.fail("load-error",
                           "cannot give the function '" + launch.function +
                               "' " + std::to_string(launch.sharedBytes) +
                               " bytes of shared memory: " + error);
    functions.push_back(function);
  }
  return 0;
}

int PackageRun::prepareBuffers(bool timed) {
  std::string error;
  reporter.send(protocol::step, "allocating the buffers");
  for (const Buffer &buffer : package.buffers) {
    DevicePointer pointer;
    if (!driver->allocate(buffer.getAllocationBytes(), pointer, error))
      return reporter.fail(
          "fault", "cannot allocate " +
                       std::to_string(buffer.getAllocationBytes()) +
                       " bytes for the buffer '" + buffer.name + "': " + error);
    pointers.push_back(pointer);
  }
  if (timed && settings.flushL2 && settings.repetitions > 0 &&
      device.l2Bytes > 0) {
    flushBytes = 2 * device.l2Bytes;
    if (!driver->allocate(flushBytes, flushBuffer, error))
      return reporter.fail("fault",
                           "cannot allocate " + std::to_string(flushBytes) +
                               " bytes to flush the L2 cache: " + error);
  }

  // The inputs, buffer by buffer (one host copy at a time); outputs and
  // temporaries start as zeros.
  reporter.send(protocol::step, "writing the inputs");
  InputGenerator generator(package.seed);
  std::vector<char> data;
  for (size_t i = 0; i < package.buffers.size(); ++i) {
    const Buffer &buffer = package.buffers[i];
    if (buffer.role == Role::In) {
      generateInput(generator, buffer, data);
      if (!data.empty() &&
          !driver->copyToDevice(pointers[i], data.data(), data.size(), error))
        return reporter.fail("fault", "cannot copy the input '" + buffer.name +
                                          "' to the device: " + error);
    } else if (!driver->fillAsync(pointers[i], 0, buffer.getAllocationBytes(),
                                  error)) {
      return reporter.fail("fault", "cannot zero the buffer '" + buffer.name +
                                        "': " + error);
    }
  }
  if (!driver->synchronize(error))
    return reporter.fail("fault", "cannot write the inputs: " + error);

  for (const Launch &launch : package.launches) {
    std::vector<DevicePointer> values;
    for (unsigned arg : launch.args)
      values.push_back(pointers[arg]);
    argValues.push_back(std::move(values));
  }
  for (std::vector<DevicePointer> &values : argValues) {
    std::vector<void *> launchParams;
    for (DevicePointer &value : values)
      launchParams.push_back(&value);
    params.push_back(std::move(launchParams));
  }

  if (!driver->createEvent(/*timing=*/true, start, error) ||
      !driver->createEvent(/*timing=*/true, end, error))
    return reporter.fail("fault", "cannot create an event: " + error);
  for (size_t i = 0; i < package.launches.size(); ++i) {
    EventHandle event;
    if (!driver->createEvent(/*timing=*/false, event, error))
      return reporter.fail("fault", "cannot create an event: " + error);
    launchDone.push_back(event);
  }
  return 0;
}

int PackageRun::checkedRun() {
  std::string error;
  for (size_t i = 0; i < package.launches.size(); ++i) {
    const Launch &launch = package.launches[i];
    std::string what = describeLaunch(i, "the checked run");
    reporter.send(protocol::stage, what);
    if (!driver->launch(
            functions[i], launch.grid, launch.block, launch.sharedBytes,
            params[i].empty() ? nullptr : params[i].data(), error) ||
        !driver->synchronize(error))
      return reporter.fail("fault", what + " failed: " + error);
  }
  return 0;
}

int PackageRun::queuedRun(const std::string &runName, bool timed,
                          unsigned index) {
  std::string error;
  // Queuing blocks only when earlier work has not finished: until a launch
  // is known to be done, the first one is the one to blame.
  reporter.send(protocol::stage, describeLaunch(0, runName));
  if (timed && flushBytes > 0 &&
      !driver->fillAsync(flushBuffer, static_cast<unsigned char>(index),
                         flushBytes, error))
    return reporter.fail("fault", "cannot flush the L2 cache before " +
                                      runName + ": " + error);
  if (timed && !driver->recordEvent(start, error))
    return reporter.fail("fault",
                         "cannot record an event in " + runName + ": " + error);
  for (size_t i = 0; i < package.launches.size(); ++i) {
    const Launch &launch = package.launches[i];
    if (!driver->launch(functions[i], launch.grid, launch.block,
                        launch.sharedBytes,
                        params[i].empty() ? nullptr : params[i].data(), error))
      return reporter.fail("fault",
                           describeLaunch(i, runName) + " failed: " + error);
    if (!driver->recordEvent(launchDone[i], error))
      return reporter.fail("fault", "cannot record an event in " + runName +
                                        ": " + error);
  }
  if (timed && !driver->recordEvent(end, error))
    return reporter.fail("fault",
                         "cannot record an event in " + runName + ": " + error);
  // Wait launch by launch, so that the parent's deadline applies to each
  // and names the one that does not finish.
  for (size_t i = 0; i < package.launches.size(); ++i) {
    std::string what = describeLaunch(i, runName);
    if (i > 0)
      reporter.send(protocol::stage, what);
    if (!driver->synchronizeEvent(launchDone[i], error))
      return reporter.fail("fault", what + " failed: " + error);
  }
  if (!timed)
    return 0;
  float ms = 0;
  if (!driver->synchronizeEvent(end, error) ||
      !driver->getElapsedMs(start, end, ms, error))
    return reporter.fail("fault", "cannot time " + runName + ": " + error);
  reporter.send(protocol::time, formatFloat(ms));
  return 0;
}

int PackageRun::run(bool timed, char *outputs) {
  if (int status = openDevice())
    return status;
  if (int status = loadFunctions())
    return status;
  if (int status = prepareBuffers(timed))
    return status;
  auto checkedStart = std::chrono::steady_clock::now();
  if (int status = checkedRun())
    return status;
  checkedSeconds = std::chrono::duration<double>(
                       std::chrono::steady_clock::now() - checkedStart)
                       .count();

  reporter.send(protocol::step, "copying the outputs to the host");
  std::string error;
  char *to = outputs;
  for (size_t i = 0; i < package.buffers.size(); ++i) {
    const Buffer &buffer = package.buffers[i];
    if (buffer.role != Role::Out || buffer.getDataBytes() == 0)
      continue;
    if (!driver->copyToHost(to, pointers[i], buffer.getDataBytes(), error))
      return reporter.fail("fault", "cannot copy the output '" + buffer.name +
                                        "' to the host: " + error);
    to += buffer.getDataBytes();
  }
  reporter.send(protocol::checked);

  if (timed) {
    // The host's clock bounds the runs by --time-budget (the checked run
    // counts toward the warm-ups' quarter).
    using Clock = std::chrono::steady_clock;
    double budget = settings.timeBudgetSeconds;
    auto spent = [since = Clock::now()] {
      return std::chrono::duration<double>(Clock::now() - since).count();
    };
    for (unsigned w = 0; w < settings.warmup; ++w) {
      if (budget > 0 && spent() + checkedSeconds > budget / 4)
        break;
      if (int status = queuedRun("warm-up run " + std::to_string(w + 1) +
                                     " of " + std::to_string(settings.warmup),
                                 /*timed=*/false, w))
        return status;
    }
    for (unsigned r = 0; r < settings.repetitions; ++r) {
      if (r > 0 && budget > 0 && spent() + checkedSeconds > budget)
        break;
      if (int status = queuedRun("timed run " + std::to_string(r + 1) + " of " +
                                     std::to_string(settings.repetitions),
                                 /*timed=*/true, r))
        return status;
    }
  }
  reporter.send(protocol::done);
  return 0;
}

int mlir::perfdojo::gpurun::runInChild(const Package &package,
                                       const RunSettings &settings, bool timed,
                                       char *outputs, int reportFd) {
  Reporter reporter(reportFd);
  PackageRun run(package, settings, reporter);
  return run.run(timed, outputs);
}
