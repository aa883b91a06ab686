//===- Evaluate.cpp - Checking and timing packages ------------------------===//

#include "Evaluate.h"

#include "Compare.h"
#include "Npy.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sys/stat.h>

using namespace mlir::perfdojo::gpurun;

double PackageResult::getMedianMs() const {
  if (timesMs.empty())
    return 0;
  std::vector<double> sorted = timesMs;
  std::sort(sorted.begin(), sorted.end());
  size_t n = sorted.size();
  return n % 2 ? sorted[n / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
}

double PackageResult::getMinMs() const {
  return timesMs.empty() ? 0
                         : *std::min_element(timesMs.begin(), timesMs.end());
}

std::vector<int64_t>
mlir::perfdojo::gpurun::getOutputOffsets(const Package &package,
                                         uint64_t &totalBytes) {
  std::vector<int64_t> offsets;
  totalBytes = 0;
  for (const Buffer &buffer : package.buffers) {
    if (buffer.role != Role::Out) {
      offsets.push_back(-1);
      continue;
    }
    offsets.push_back(int64_t(totalBytes));
    totalBytes += buffer.getDataBytes();
  }
  return offsets;
}

bool mlir::perfdojo::gpurun::createDirectories(const std::string &dir,
                                               std::string &error) {
  std::string path;
  size_t pos = 0;
  while (pos <= dir.size()) {
    size_t next = dir.find('/', pos);
    if (next == std::string::npos)
      next = dir.size();
    path = dir.substr(0, next);
    pos = next + 1;
    if (path.empty() || path == "." || path == "..")
      continue;
    if (mkdir(path.c_str(), 0777) != 0 && errno != EEXIST) {
      error = "cannot create '" + path + "': " + std::strerror(errno);
      return false;
    }
  }
  struct stat info;
  if (stat(dir.c_str(), &info) != 0 || !S_ISDIR(info.st_mode)) {
    error = "cannot create '" + dir + "': not a directory";
    return false;
  }
  return true;
}

/// A run of a reference package: its outputs, or why it failed.
struct Evaluator::ReferenceRun {
  /// The reference's real path and seed: packages sharing it reuse it.
  std::string key;
  std::shared_ptr<Package> package;
  Status status = Status::Ok;
  std::string reason;
  std::vector<char> outputs;
  std::vector<int64_t> offsets;
};

Evaluator::Evaluator(const EvaluationOptions &options) : options(options) {}

Evaluator::~Evaluator() = default;

const Evaluator::ReferenceRun &
Evaluator::runReference(const Package &reference) {
  char resolved[PATH_MAX];
  std::string key =
      (realpath(reference.dir.c_str(), resolved) ? resolved : reference.dir) +
      "#" + std::to_string(reference.seed);
  if (lastReference && lastReference->key == key)
    return *lastReference;

  lastReference.reset();
  auto run = std::make_unique<ReferenceRun>();
  run->key = key;
  uint64_t bytes;
  run->offsets = getOutputOffsets(reference, bytes);
  SharedMemory memory(bytes);
  if (!memory.getData()) {
    run->status = Status::Fault;
    run->reason = "cannot map " + std::to_string(bytes) +
                  " bytes for the outputs: " + std::strerror(errno);
  } else {
    ChildResult child =
        superviseRun(reference, options.settings, /*timed=*/false,
                     options.timeLimitSeconds, memory.getData());
    if (child.device && !device)
      device = child.device;
    run->status = child.status;
    run->reason = child.reason;
    if (child.status == Status::Ok)
      run->outputs.assign(memory.getData(), memory.getData() + bytes);
  }
  lastReference = std::move(run);
  return *lastReference;
}

void Evaluator::dumpOutputs(const Package &package, const char *outputs) {
  std::string dir = joinPath(options.dumpOutputsDir, package.name);
  std::string error;
  if (!createDirectories(dir, error)) {
    std::fprintf(stderr, "pd-gpu-run: %s\n", error.c_str());
    dumpErrors = true;
    return;
  }
  uint64_t total;
  std::vector<int64_t> offsets = getOutputOffsets(package, total);
  for (size_t i = 0; i < package.buffers.size(); ++i) {
    const Buffer &buffer = package.buffers[i];
    if (buffer.role != Role::Out)
      continue;
    if (!writeNpy(joinPath(dir, buffer.name + ".npy"), buffer.dtype,
                  buffer.shape, outputs + offsets[i], buffer.elements, error)) {
      std::fprintf(stderr, "pd-gpu-run: %s\n", error.c_str());
      dumpErrors = true;
    }
  }
}

PackageResult Evaluator::evaluate(const std::string &dir) {
  PackageResult result;
  result.path = dir;
  result.name = getBaseName(dir);
  Package package;
  std::string error;
  if (!loadPackage(dir, package, error)) {
    result.status = Status::BadPackage;
    result.reason = error;
    return result;
  }
  result.kernel = package.kernel;
  CheckKind check = options.check ? package.check.kind : CheckKind::None;

  // The reference first: no use timing a package nothing can be compared
  // with.
  const ReferenceRun *reference = nullptr;
  if (check == CheckKind::Reference) {
    reference = &runReference(*package.check.reference);
    if (reference->status != Status::Ok) {
      result.status = reference->status;
      result.reason = "the reference '" + package.check.reference->dir +
                      "' failed: " + getStatusText(reference->status) + ": " +
                      reference->reason;
      return result;
    }
  }

  uint64_t bytes;
  std::vector<int64_t> offsets = getOutputOffsets(package, bytes);
  SharedMemory memory(bytes);
  if (!memory.getData()) {
    result.status = Status::Fault;
    result.reason = "cannot map " + std::to_string(bytes) +
                    " bytes for the outputs: " + std::strerror(errno);
    return result;
  }
  ChildResult child = superviseRun(package, options.settings, /*timed=*/true,
                                   options.timeLimitSeconds, memory.getData());
  if (child.device && !device)
    device = child.device;
  result.status = child.status;
  result.reason = child.reason;
  result.timesMs = child.timesMs;
  if (!child.checked)
    return result;
  const char *outputs = memory.getData();
  if (!options.dumpOutputsDir.empty())
    dumpOutputs(package, outputs);
  if (child.status != Status::Ok)
    return result;

  Comparison comparison;
  int64_t checkedElements = 0;
  for (size_t i = 0; i < package.buffers.size(); ++i) {
    const Buffer &buffer = package.buffers[i];
    if (buffer.role != Role::Out)
      continue;
    result.outputElements += buffer.elements;
    const char *got = outputs + offsets[i];
    if (check == CheckKind::Expected) {
      auto it = std::find_if(
          package.check.expected.begin(), package.check.expected.end(),
          [&](const ExpectedOutput &entry) { return entry.buffer == i; });
      NpyArray want;
      if (!readNpy(it->valuesPath, want, error)) {
        result.status = Status::BadPackage;
        result.reason = package.jsonPath + ": check.expected." + buffer.name +
                        (it->isSample() ? ".values: " : ": ") + error;
        return result;
      }
      if (!it->isSample()) {
        compareOutput(buffer.name, buffer.dtype, got, want.header.dtype,
                      want.data.data(), buffer.elements,
                      package.check.tolerance, comparison);
        checkedElements += buffer.elements;
        continue;
      }
      // Loading checked the sample; the file may have changed since.
      int64_t count = int64_t(it->indices.size());
      if (want.header.getNumElements() != count) {
        result.status = Status::BadPackage;
        result.reason = package.jsonPath + ": check.expected." + buffer.name +
                        ".values: expected " + std::to_string(count) +
                        " values (one for each element number in '" +
                        it->indicesPath + "'), found " +
                        std::to_string(want.header.getNumElements()) + " in '" +
                        it->valuesPath + "'";
        return result;
      }
      compareSample(buffer.name, buffer.dtype, got, want.header.dtype,
                    want.data.data(), it->indices.data(), count, it->scale,
                    package.check.tolerance, comparison);
      checkedElements += count;
      result.sampled = true;
    } else if (check == CheckKind::Reference) {
      const Package &ref = *package.check.reference;
      size_t r = size_t(ref.lookupBuffer(buffer.name));
      compareOutput(buffer.name, buffer.dtype, got, ref.buffers[r].dtype,
                    reference->outputs.data() + reference->offsets[r],
                    buffer.elements, package.check.tolerance, comparison);
      checkedElements += buffer.elements;
    } else if (options.check) {
      checkNoNaN(buffer.name, buffer.dtype, got, buffer.elements, comparison);
    }
  }
  result.checked = check;
  if (check != CheckKind::None) {
    result.maxError = comparison.maxError;
    result.checkedElements = checkedElements;
  }
  if (!comparison.ok) {
    result.status = Status::WrongAnswer;
    result.reason = comparison.reason;
  }
  return result;
}
