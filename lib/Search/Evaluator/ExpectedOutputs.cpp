//===- ExpectedOutputs.cpp - What a GPU package is checked against --------===//

#include "PerfDojo/Search/Evaluator/ExpectedOutputs.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include <cmath>

using namespace mlir;
using namespace mlir::perfdojo;

FailureOr<ExpectedOutputsSummary> mlir::perfdojo::writeExpectedOutputs(
    ArrayRef<BufferData> buffers, StringRef dir, StringRef pathPrefix,
    double tolerance, const ExpectedOutputsOptions &options,
    std::string &error) {
  ExpectedOutputsSummary summary;
  summary.check.kind = PackageCheck::Kind::Expected;
  summary.check.tolerance = tolerance;
  uint64_t bytes = 0;
  for (const BufferData &b : buffers)
    if (b.role == Role::out)
      bytes += 8 * uint64_t(b.getNumElements());
  // Every expected value when they are few, else an evenly spread sample:
  // a wrong kernel differs almost everywhere, and a package of a full-size
  // kernel stays small enough to copy to a GPU machine.
  summary.sampled = bytes > options.maxBytes;
  if (std::error_code ec = llvm::sys::fs::create_directories(dir)) {
    error = "cannot create '" + dir.str() + "': " + ec.message();
    return failure();
  }
  for (const BufferData &b : buffers) {
    if (b.role != Role::out)
      continue;
    PackageCheck::Expected expected;
    std::string values = b.name + ".npy", indices = b.name + ".indices.npy";
    expected.values = (pathPrefix + values).str();
    SmallVector<int64_t> sample;
    if (summary.sampled) {
      int64_t n = b.getNumElements();
      int64_t count = std::min<int64_t>(n, options.sampleSize);
      for (int64_t i = 0; i < count; ++i)
        sample.push_back(count > 1 ? i * (n - 1) / (count - 1) : 0);
      expected.indices = (pathPrefix + indices).str();
      for (int64_t i = 0; i < int64_t(b.written.size()); ++i)
        if (double v = std::fabs(b.getAsDouble(i)); std::isfinite(v))
          expected.scale = std::max(expected.scale, v);
    }
    SmallString<256> path(dir);
    llvm::sys::path::append(path, values);
    if (failed(writeNpy(b, path, error, sample)))
      return failure();
    if (summary.sampled) {
      SmallString<256> indexPath(dir);
      llvm::sys::path::append(indexPath, indices);
      if (failed(writeNpyIndices(sample, indexPath, error)))
        return failure();
    }
    summary.check.expected[b.name] = std::move(expected);
  }
  return summary;
}
