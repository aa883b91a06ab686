//===- Compare.h - Checking outputs against reference values ----*- C++ -*-===//
//
// The rule of PerfDojo's CPU evaluator (compareWithReference in
// lib/Search/Evaluator), so that a kernel passes on the GPU exactly when it
// would pass there.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDGPURUN_COMPARE_H
#define PERFDOJO_TOOLS_PDGPURUN_COMPARE_H

#include "DType.h"

#include <cstdint>
#include <string>

namespace mlir {
namespace perfdojo {
namespace gpurun {

/// The outcome of comparing every output of a run.
struct Comparison {
  /// False after the first mismatch.
  bool ok = true;
  /// The first mismatch: "element 5 of 'y' is 0.5, the reference 0.25".
  std::string reason;
  /// The largest error over every output (see compareOutput).
  double maxError = 0;
};

/// Compares `count` elements of the output `name` (`got`, of type `type`)
/// with reference values (`want`, of type `wantType`). With `scale` the
/// largest |reference value| among the finite ones: a float element matches
/// when both are NaN, or both are the same infinity, or, both finite, when
/// |got - want| / (scale > 0 ? scale : 1) is at most `tolerance` or, if
/// larger, twice the unit roundoff of `type` (a float64 reference rounded
/// to bf16 is already off by that much). Integers must be equal (an error
/// of 1 otherwise). Records the first mismatch in `result` (with " (NaN)"
/// when `got` is NaN and the reference is not) and raises its maxError to
/// the largest error of the finite comparisons.
void compareOutput(const std::string &name, DType type, const void *got,
                   DType wantType, const void *want, int64_t count,
                   double tolerance, Comparison &result);

/// Like compareOutput, for a sample of the output: `want` holds `count`
/// reference values, the i-th that of the element `indices[i]` of `got` (a
/// row-major element number, which mismatches name), and `scale` is the
/// largest |reference value| among the finite ones of the whole output, not
/// only of the sample.
void compareSample(const std::string &name, DType type, const void *got,
                   DType wantType, const void *want, const int64_t *indices,
                   int64_t count, double scale, double tolerance,
                   Comparison &result);

/// Without reference values: fails `result` when a float output holds a
/// NaN ("element 5 of 'y' is NaN"), as the CPU evaluator does.
void checkNoNaN(const std::string &name, DType type, const void *got,
                int64_t count, Comparison &result);

} // namespace gpurun
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDGPURUN_COMPARE_H
