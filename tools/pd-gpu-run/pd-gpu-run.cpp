//===- pd-gpu-run.cpp - Check and time GPU kernel packages ----------------===//
//
// The standalone GPU runner: PerfDojo's compiler writes kernel packages
// (Package.h) on any machine; this tool, built with nothing but a C++
// compiler on the GPU machine, checks and times them there and reports
// every outcome, whatever a kernel does:
//
//   pd-gpu-run --results=results.json candidates/
//
// It parses the command line, expands folders of packages, runs each
// package through the Evaluator (a child process per run) and writes the
// progress lines and the JSON results.
//
//===----------------------------------------------------------------------===//

#include "Driver.h"
#include "Evaluate.h"
#include "Json.h"
#include "Npy.h"
#include "Package.h"
#include "Runner.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

using namespace mlir::perfdojo;
using namespace mlir::perfdojo::gpurun;

static const char *const helpText = R"(USAGE: pd-gpu-run [options] PATH...

Checks and times PerfDojo GPU kernel packages. PATH is a package folder
(it holds package.json) or a folder whose subfolders are packages (run in
the order of their names). Each package runs in a child process of its own,
so a kernel that crashes or hangs fails alone and the others still run.

For each package: the inputs are drawn from the package's seed, the
launches run once and their outputs are checked (against the expected
values the package holds, all or a sample of them, or the reference
package it names), then the warm-up runs and the timed runs follow. One
line per package tells the outcome: ok, wrong answer, fault, timeout, load
error, bad package or no device.

OPTIONS:
  --warmup=N            untimed runs before the timed ones (default 2)
  --repetitions=N       timed runs (default 10)
  --no-flush-l2         keep the L2 cache between timed runs (by default
                        a buffer of twice its size is overwritten before
                        each, so that each run starts cold)
  --time-limit=SECONDS  longest one launch may take before the package is
                        abandoned as a timeout (default 60; the other
                        steps, such as compiling the PTX, get at least a
                        minute)
  --time-budget=SECONDS seconds the warm-up and timed runs of one package
                        may take together (default: no bound): warm-ups
                        stop after a quarter of it, timed runs after all of
                        it (at least one), so that a slow candidate costs
                        a few runs
  --results=FILE        write the results as JSON to FILE, rewritten after
                        each package ('-': stdout; the progress lines then
                        go to stderr)
  --dump-outputs=DIR    write the outputs of each checked run as
                        DIR/<package>/<buffer>.npy (bf16 as float32)
  --dump-inputs=DIR     write the inputs of each package as
                        DIR/<package>/<buffer>.npy and stop; needs no GPU
  --check=auto|none     compare the outputs as each package says (auto,
                        the default) or not at all
  --device=N            the GPU to use, among those of the package's API
                        (default 0)
  --validate            read and check the packages only (no GPU); print
                        'ok: PATH' for each valid one
  --list-devices        list the GPUs the drivers see; exit 1 when there
                        are none, saying why
  --api=cuda|hip        with --list-devices: ask this interface only
  --help                print this help

Exit status: 0 when every package is ok, 1 when any is not, 2 for a
usage error.

ENVIRONMENT:
  PD_GPU_RUN_CUDA_LIBRARY  the CUDA driver library to load instead of
                           libcuda.so.1
  PD_GPU_RUN_HIP_LIBRARY   the HIP library to load instead of
                           libamdhip64.so
)";

namespace {
enum class Mode { Run, Validate, DumpInputs, ListDevices, Help, TestRound };

struct Options {
  Mode mode = Mode::Run;
  EvaluationOptions evaluation;
  std::string resultsFile;
  std::string dumpInputsDir;
  /// --api: empty for both.
  std::vector<Api> apis = {Api::Cuda, Api::Hip};
  /// --test-round (hidden): the element type to round the PATHs to.
  DType roundType = DType::F16;
  std::vector<std::string> paths;
};
} // namespace

/// Reports a usage error; returns the exit status 2.
static int usageError(const std::string &message) {
  std::fprintf(stderr, "pd-gpu-run: %s (see 'pd-gpu-run --help')\n",
               message.c_str());
  return 2;
}

static bool parseUnsigned(const std::string &text, unsigned long long max,
                          unsigned long long &result) {
  if (text.empty() || text.find_first_not_of("0123456789") != std::string::npos)
    return false;
  errno = 0;
  result = std::strtoull(text.c_str(), nullptr, 10);
  return errno == 0 && result <= max;
}

/// Parses the command line into `options`; returns -1 to go on, or the
/// exit status.
static int parseOptions(int argc, char **argv, Options &options) {
  bool optionsEnded = false;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    if (optionsEnded || arg.size() < 2 || arg[0] != '-') {
      options.paths.push_back(arg);
      continue;
    }
    if (arg == "--") {
      optionsEnded = true;
      continue;
    }
    // --name=value, -name=value, or --name value for options with values.
    std::string name = arg.substr(arg[1] == '-' ? 2 : 1);
    std::string value;
    bool hasValue = false;
    if (size_t eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      hasValue = true;
    }
    static const char *const valued[] = {
        "warmup",      "repetitions", "time-limit", "results", "dump-outputs",
        "dump-inputs", "check",       "device",     "api",     "test-round",
        "time-budget"};
    bool takesValue = std::find_if(std::begin(valued), std::end(valued),
                                   [&](const char *v) { return name == v; }) !=
                      std::end(valued);
    if (takesValue && !hasValue) {
      if (i + 1 >= argc)
        return usageError("--" + name + ": expected a value, found none");
      value = argv[++i];
      hasValue = true;
    }
    if (!takesValue && hasValue)
      return usageError("--" + name + ": expected no value, found '" + value +
                        "'");
    std::string option = "--" + name;
    unsigned long long number;
    if (name == "help") {
      options.mode = Mode::Help;
    } else if (name == "validate") {
      options.mode = Mode::Validate;
    } else if (name == "list-devices") {
      options.mode = Mode::ListDevices;
    } else if (name == "no-flush-l2") {
      options.evaluation.settings.flushL2 = false;
    } else if (name == "warmup" || name == "repetitions") {
      if (!parseUnsigned(value, 1000000, number))
        return usageError(option +
                          ": expected an integer from 0 to 1000000, found '" +
                          value + "'");
      (name == "warmup" ? options.evaluation.settings.warmup
                        : options.evaluation.settings.repetitions) =
          unsigned(number);
    } else if (name == "device") {
      if (!parseUnsigned(value, 1000000, number))
        return usageError(option +
                          ": expected a non-negative integer, found '" + value +
                          "'");
      options.evaluation.settings.device = int(number);
    } else if (name == "time-limit" || name == "time-budget") {
      char *end = nullptr;
      double seconds = std::strtod(value.c_str(), &end);
      if (value.empty() || *end || !std::isfinite(seconds) || seconds <= 0 ||
          seconds > 1e6)
        return usageError(option +
                          ": expected a positive number of seconds, found '" +
                          value + "'");
      (name == "time-limit" ? options.evaluation.timeLimitSeconds
                            : options.evaluation.settings.timeBudgetSeconds) =
          seconds;
    } else if (name == "results") {
      if (value.empty())
        return usageError(option + ": expected a file name, found ''");
      options.resultsFile = value;
    } else if (name == "dump-outputs") {
      if (value.empty())
        return usageError(option + ": expected a folder, found ''");
      options.evaluation.dumpOutputsDir = value;
    } else if (name == "dump-inputs") {
      if (value.empty())
        return usageError(option + ": expected a folder, found ''");
      options.dumpInputsDir = value;
      options.mode = Mode::DumpInputs;
    } else if (name == "check") {
      if (value != "auto" && value != "none")
        return usageError(option + ": expected 'auto' or 'none', found '" +
                          value + "'");
      options.evaluation.check = value == "auto";
    } else if (name == "api") {
      if (value == "cuda")
        options.apis = {Api::Cuda};
      else if (value == "hip")
        options.apis = {Api::Hip};
      else
        return usageError(option + ": expected 'cuda' or 'hip', found '" +
                          value + "'");
    } else if (name == "test-round") {
      // Hidden, for the tests of the rounding to 16-bit floats: prints the
      // bits of each PATH (a number, hexadecimal floats included) rounded
      // to the type.
      std::optional<DType> type = parseDTypeName(value);
      if (!type || !isFloatDType(*type))
        return usageError(option +
                          ": expected f16, bf16, f32 or f64, "
                          "found '" +
                          value + "'");
      options.roundType = *type;
      options.mode = Mode::TestRound;
    } else {
      return usageError("unknown option '" + arg + "'");
    }
  }
  if (options.mode == Mode::Help || options.mode == Mode::ListDevices)
    return -1;
  if (options.paths.empty())
    return usageError("expected at least one package folder, found none");
  return -1;
}

//===----------------------------------------------------------------------===//
// Modes without a GPU
//===----------------------------------------------------------------------===//

static bool isDirectory(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0 && S_ISDIR(info.st_mode);
}

static bool exists(const std::string &path) {
  struct stat info;
  return stat(path.c_str(), &info) == 0;
}

/// The package folders `path` names: itself when it holds package.json (or
/// is no folder: it then fails as a package), its folder when it is a
/// package.json, else its subfolders in the order of their names (hidden
/// ones skipped).
static std::vector<std::string> expandPath(const std::string &path) {
  if (getBaseName(path) == "package.json" && exists(path) &&
      !isDirectory(path)) {
    size_t slash = path.find_last_of('/');
    return {slash == std::string::npos ? "." : path.substr(0, slash + 1)};
  }
  if (exists(joinPath(path, "package.json")) || !isDirectory(path))
    return {path};
  std::vector<std::string> names;
  if (DIR *dir = opendir(path.c_str())) {
    while (dirent *entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name.empty() || name[0] == '.')
        continue;
      if (isDirectory(joinPath(path, name)))
        names.push_back(name);
    }
    closedir(dir);
  }
  if (names.empty())
    return {path};
  std::sort(names.begin(), names.end());
  std::vector<std::string> result;
  for (const std::string &name : names)
    result.push_back(joinPath(path, name));
  return result;
}

static std::vector<std::string> expandPaths(const Options &options) {
  std::vector<std::string> result;
  for (const std::string &path : options.paths)
    for (std::string &dir : expandPath(path))
      result.push_back(std::move(dir));
  return result;
}

static int validate(const Options &options) {
  int status = 0;
  for (const std::string &dir : expandPaths(options)) {
    Package package;
    std::string error;
    if (loadPackage(dir, package, error)) {
      std::printf("ok: %s\n", dir.c_str());
    } else {
      std::fflush(stdout);
      std::fprintf(stderr, "pd-gpu-run: %s\n", error.c_str());
      status = 1;
    }
  }
  return status;
}

static int dumpInputs(const Options &options) {
  int status = 0;
  for (const std::string &dir : expandPaths(options)) {
    Package package;
    std::string error;
    if (!loadPackage(dir, package, error)) {
      std::fflush(stdout);
      std::fprintf(stderr, "pd-gpu-run: %s\n", error.c_str());
      status = 1;
      continue;
    }
    std::string out = joinPath(options.dumpInputsDir, package.name);
    if (!createDirectories(out, error)) {
      std::fprintf(stderr, "pd-gpu-run: %s\n", error.c_str());
      return 1;
    }
    InputGenerator generator(package.seed);
    std::vector<char> data;
    for (const Buffer &buffer : package.buffers) {
      if (buffer.role != Role::In)
        continue;
      generateInput(generator, buffer, data);
      std::string path = joinPath(out, buffer.name + ".npy");
      if (!writeNpy(path, buffer.dtype, buffer.shape, data.data(),
                    buffer.elements, error)) {
        std::fprintf(stderr, "pd-gpu-run: %s\n", error.c_str());
        return 1;
      }
      std::printf("wrote %s\n", path.c_str());
    }
  }
  return status;
}

static int testRound(const Options &options) {
  for (const std::string &text : options.paths) {
    char *end = nullptr;
    double value = std::strtod(text.c_str(), &end);
    if (text.empty() || *end)
      return usageError("--test-round: expected a number, found '" + text +
                        "'");
    unsigned char bytes[8] = {0};
    storeElement(options.roundType, bytes, value, 0);
    unsigned size = getDTypeSize(options.roundType);
    uint64_t bits = 0;
    for (unsigned i = 0; i < size; ++i)
      bits |= uint64_t(bytes[i]) << (8 * i);
    std::printf("%s -> 0x%0*llx = %.17g\n", text.c_str(), int(2 * size),
                static_cast<unsigned long long>(bits),
                loadAsDouble(options.roundType, bytes));
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// Devices
//===----------------------------------------------------------------------===//

/// "80 GiB", "50 MiB".
static std::string formatBytes(uint64_t bytes) {
  const char *units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double value = double(bytes);
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof(text), "%.3g %s", value, units[unit]);
  return text;
}

static int listDevices(const Options &options) {
  int found = 0;
  std::string reasons;
  for (Api api : options.apis) {
    std::string error;
    std::unique_ptr<Driver> driver = Driver::create(api, error);
    int count = 0;
    if (driver && !driver->getDeviceCount(count, error))
      driver.reset();
    if (!driver) {
      reasons += (reasons.empty() ? "" : "; ") + error;
      continue;
    }
    if (count == 0)
      reasons += (reasons.empty() ? "" : "; ") + std::string("the ") +
                 getApiName(api) + " driver sees no device";
    for (int i = 0; i < count; ++i) {
      DeviceInfo info;
      if (!driver->getDeviceInfo(i, info, error)) {
        reasons += (reasons.empty() ? "" : "; ") +
                   std::string("cannot query ") + getApiName(api) + " device " +
                   std::to_string(i) + ": " + error;
        continue;
      }
      std::printf("%s device %d: %s (compute capability %s, %s memory, %s "
                  "L2, driver %d)\n",
                  getApiName(api), i, info.name.c_str(),
                  info.getComputeCapability().c_str(),
                  formatBytes(info.memoryBytes).c_str(),
                  formatBytes(info.l2Bytes).c_str(), info.driverVersion);
      ++found;
    }
  }
  if (found)
    return 0;
  std::fprintf(stderr, "pd-gpu-run: no GPU found: %s\n", reasons.c_str());
  return 1;
}

//===----------------------------------------------------------------------===//
// Running
//===----------------------------------------------------------------------===//

static void writeResults(std::FILE *out,
                         const std::optional<DeviceInfo> &device,
                         const std::vector<PackageResult> &results) {
  JsonWriter json(out);
  json.beginObject();
  json.key("runner");
  json.value("pd-gpu-run");
  json.key("version");
  json.value(1);
  json.key("device");
  if (device) {
    json.beginObject();
    json.key("api");
    json.value(getApiName(device->api));
    json.key("name");
    json.value(device->name);
    json.key("driver");
    json.value(device->driverVersion);
    json.key("compute_capability");
    json.value(device->getComputeCapability());
    json.key("l2_bytes");
    json.value(device->l2Bytes);
    json.key("memory_bytes");
    json.value(device->memoryBytes);
    json.endObject();
  } else {
    json.null();
  }
  json.key("results");
  json.beginArray();
  for (const PackageResult &r : results) {
    json.beginObject();
    json.key("package");
    json.value(r.path);
    json.key("kernel");
    json.value(r.kernel);
    json.key("status");
    json.value(getStatusName(r.status));
    json.key("reason");
    json.value(r.reason);
    json.key("median_ms");
    if (r.timesMs.empty())
      json.null();
    else
      json.value(r.getMedianMs());
    json.key("min_ms");
    if (r.timesMs.empty())
      json.null();
    else
      json.value(r.getMinMs());
    json.key("times_ms");
    json.beginArray(/*compact=*/true);
    for (double t : r.timesMs)
      json.value(t);
    json.endArray();
    json.key("max_error");
    if (r.maxError)
      json.value(*r.maxError);
    else
      json.null();
    json.key("checked");
    json.value(getCheckKindName(r.checked));
    json.key("checked_elements");
    if (r.checkedElements)
      json.value(*r.checkedElements);
    else
      json.null();
    json.endObject();
  }
  json.endArray();
  json.endObject();
}

/// Rewrites the results file (through a temporary file, so that a reader
/// never sees half of it); false with a message on stderr on failure.
static bool saveResults(const std::string &path,
                        const std::optional<DeviceInfo> &device,
                        const std::vector<PackageResult> &results) {
  std::string temporary = path + ".tmp" + std::to_string(getpid());
  std::FILE *file = std::fopen(temporary.c_str(), "w");
  if (!file) {
    std::fprintf(stderr, "pd-gpu-run: cannot write '%s': %s\n",
                 temporary.c_str(), std::strerror(errno));
    return false;
  }
  writeResults(file, device, results);
  bool ok = !std::ferror(file);
  ok = std::fclose(file) == 0 && ok;
  if (!ok || std::rename(temporary.c_str(), path.c_str()) != 0) {
    std::fprintf(stderr, "pd-gpu-run: cannot write '%s': %s\n", path.c_str(),
                 std::strerror(errno));
    std::remove(temporary.c_str());
    return false;
  }
  return true;
}

/// The progress line of a result.
static std::string describeResult(const PackageResult &r) {
  std::string line = r.name + ": " + getStatusText(r.status);
  if (r.status != Status::Ok)
    return line + ": " + r.reason;
  char text[96];
  if (r.timesMs.empty()) {
    line += ", not timed";
  } else {
    std::snprintf(text, sizeof(text), ", median %.4g ms (%zu run%s)",
                  r.getMedianMs(), r.timesMs.size(),
                  r.timesMs.size() == 1 ? "" : "s");
    line += text;
  }
  if (r.maxError) {
    std::snprintf(text, sizeof(text), ", max error %.2g", *r.maxError);
    line += text;
    if (r.sampled && r.checkedElements)
      line += " (on a sample of " + std::to_string(*r.checkedElements) +
              " of " + std::to_string(r.outputElements) + " elements)";
  } else {
    line += ", not checked";
  }
  return line;
}

static int runPackages(const Options &options) {
  std::FILE *progress = options.resultsFile == "-" ? stderr : stdout;
  Evaluator evaluator(options.evaluation);
  std::vector<PackageResult> results;
  bool allOk = true, saved = true;
  for (const std::string &dir : expandPaths(options)) {
    results.push_back(evaluator.evaluate(dir));
    const PackageResult &r = results.back();
    allOk = allOk && r.status == Status::Ok;
    std::fprintf(progress, "%s\n", describeResult(r).c_str());
    std::fflush(progress);
    if (!options.resultsFile.empty() && options.resultsFile != "-")
      saved =
          saveResults(options.resultsFile, evaluator.getDevice(), results) &&
          saved;
  }
  if (options.resultsFile == "-")
    writeResults(stdout, evaluator.getDevice(), results);
  return allOk && saved && !evaluator.hadDumpErrors() ? 0 : 1;
}

int main(int argc, char **argv) {
  Options options;
  if (int status = parseOptions(argc, argv, options); status >= 0)
    return status;
  switch (options.mode) {
  case Mode::Help:
    std::fputs(helpText, stdout);
    return 0;
  case Mode::Validate:
    return validate(options);
  case Mode::DumpInputs:
    return dumpInputs(options);
  case Mode::ListDevices:
    return listDevices(options);
  case Mode::TestRound:
    return testRound(options);
  case Mode::Run:
    return runPackages(options);
  }
  return 0;
}
