//===- ExpectedOutputs.h - What a GPU package is checked against -*- C++ -*-===//
//
// A kernel package's expected outputs (check kind "expected", docs/GPU.md):
// each output of a reference run as a float64 or int64 .npy file, all of
// it when small, else an evenly spread sample with the element numbers
// and the largest |value| of the whole output. pd-run writes them into one
// package; pd-tune once per tuning folder, shared by every candidate.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_EVALUATOR_EXPECTEDOUTPUTS_H
#define PERFDOJO_SEARCH_EVALUATOR_EXPECTEDOUTPUTS_H

#include "PerfDojo/Conversion/GPU/KernelPackage.h"
#include "PerfDojo/Search/Interpreter/Interpreter.h"

namespace mlir {
namespace perfdojo {

struct ExpectedOutputsOptions {
  /// Outputs larger than this in all (as float64) are sampled.
  uint64_t maxBytes = uint64_t(32) << 20;
  /// Values per sampled output.
  int64_t sampleSize = 65536;
};

/// What writeExpectedOutputs wrote.
struct ExpectedOutputsSummary {
  PackageCheck check;
  bool sampled = false;
};

/// Writes the outputs (role out) among `buffers` into the folder `dir`
/// (created if needed) and returns the check that reads them, with paths
/// `pathPrefix` + file name (`pathPrefix` is how a package reaches `dir`:
/// "expected/" inside it, "../../expected/" from a tuning generation).
FailureOr<ExpectedOutputsSummary>
writeExpectedOutputs(ArrayRef<BufferData> buffers, StringRef dir,
                     StringRef pathPrefix, double tolerance,
                     const ExpectedOutputsOptions &options,
                     std::string &error);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_EVALUATOR_EXPECTEDOUTPUTS_H
