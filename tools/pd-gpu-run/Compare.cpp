//===- Compare.cpp - Checking outputs against reference values ------------===//

#include "Compare.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace mlir::perfdojo::gpurun;

/// Compares `count` reference values `want` with elements of `got`: the
/// i-th with element `indices[i]` (element i without `indices`), errors
/// relative to `scale` (see compareOutput).
static void compareElements(const std::string &name, DType type,
                            const void *got, DType wantType, const void *want,
                            const int64_t *indices, int64_t count, double scale,
                            double tolerance, Comparison &result) {
  const char *gotBytes = static_cast<const char *>(got);
  const char *wantBytes = static_cast<const char *>(want);
  const unsigned gotSize = getDTypeSize(type);
  const unsigned wantSize = getDTypeSize(wantType);
  const bool isFloat = isFloatDType(type);
  const bool exactIntegers = !isFloat && !isFloatDType(wantType);
  const double limit = std::max(tolerance, 2 * getUnitRoundoff(type));

  for (int64_t i = 0; i < count; ++i) {
    const int64_t element = indices ? indices[i] : i;
    const void *gotAt = gotBytes + element * gotSize;
    const void *wantAt = wantBytes + i * wantSize;
    double g = loadAsDouble(type, gotAt), w = loadAsDouble(wantType, wantAt);
    bool match;
    double error = 0;
    if (!isFloat) {
      // Integers compare exactly, even beyond 2^53.
      match = exactIntegers ? loadAsInteger(type, gotAt) ==
                                  loadAsInteger(wantType, wantAt)
                            : g == w;
      error = match ? 0 : 1;
    } else if (std::isnan(w) || std::isnan(g)) {
      match = std::isnan(w) && std::isnan(g);
    } else if (std::isinf(w) || std::isinf(g)) {
      match = w == g;
    } else {
      error = std::fabs(g - w) / (scale > 0 ? scale : 1);
      match = error <= limit;
    }
    result.maxError = std::max(result.maxError, error);
    if (!match && result.ok) {
      result.ok = false;
      char text[160];
      std::snprintf(text, sizeof(text),
                    "element %lld of '%s' is %.9g, the reference %.9g",
                    static_cast<long long>(element), name.c_str(), g, w);
      result.reason = text;
      if (std::isnan(g) && !std::isnan(w))
        result.reason += " (NaN)";
    }
  }
}

void mlir::perfdojo::gpurun::compareOutput(const std::string &name, DType type,
                                           const void *got, DType wantType,
                                           const void *want, int64_t count,
                                           double tolerance,
                                           Comparison &result) {
  const char *wantBytes = static_cast<const char *>(want);
  const unsigned wantSize = getDTypeSize(wantType);
  double scale = 0;
  for (int64_t i = 0; i < count; ++i)
    if (double v = std::fabs(loadAsDouble(wantType, wantBytes + i * wantSize));
        std::isfinite(v))
      scale = std::max(scale, v);
  compareElements(name, type, got, wantType, want, /*indices=*/nullptr, count,
                  scale, tolerance, result);
}

void mlir::perfdojo::gpurun::compareSample(
    const std::string &name, DType type, const void *got, DType wantType,
    const void *want, const int64_t *indices, int64_t count, double scale,
    double tolerance, Comparison &result) {
  compareElements(name, type, got, wantType, want, indices, count, scale,
                  tolerance, result);
}

void mlir::perfdojo::gpurun::checkNoNaN(const std::string &name, DType type,
                                        const void *got, int64_t count,
                                        Comparison &result) {
  if (!isFloatDType(type) || !result.ok)
    return;
  const char *bytes = static_cast<const char *>(got);
  const unsigned size = getDTypeSize(type);
  for (int64_t i = 0; i < count; ++i)
    if (std::isnan(loadAsDouble(type, bytes + i * size))) {
      result.ok = false;
      result.reason =
          "element " + std::to_string(i) + " of '" + name + "' is NaN";
      return;
    }
}
