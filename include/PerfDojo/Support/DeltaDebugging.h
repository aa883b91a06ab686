//===- DeltaDebugging.h - Minimizing a failing sequence ---------*- C++ -*-===//
//
// Zeller and Hildebrandt's ddmin ("Simplifying and isolating
// failure-inducing input", 2002), for sequences such as the moves of a
// failing random walk: it removes chunks of halving size (keeping only one
// chunk, or removing one), down to single elements, so that long
// sequences shrink in a logarithmic number of tests when the failure needs
// few elements, and the result is 1-minimal: removing any one element
// makes the failure go away.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SUPPORT_DELTADEBUGGING_H
#define PERFDOJO_SUPPORT_DELTADEBUGGING_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/STLFunctionalExtras.h"
#include "llvm/ADT/SmallVector.h"
#include <optional>

namespace mlir {
namespace perfdojo {

/// Tests a candidate subsequence, given as ascending indices into the
/// original sequence. Returns std::nullopt when the failure is gone;
/// otherwise the indices of the candidate that took part in it (all of
/// them, or fewer: a replay may skip elements that no longer apply, or stop
/// at an earlier failure), which then replace the candidate.
using FailureTest = llvm::function_ref<std::optional<llvm::SmallVector<size_t>>(
    llvm::ArrayRef<size_t> candidate)>;

/// Minimizes the failing sequence of `size` elements (which must fail as a
/// whole). The empty sequence is tried first. Returns ascending indices of
/// a subsequence that fails and is 1-minimal when `test` is deterministic.
/// `numTests`, when given, receives the number of calls of `test`.
llvm::SmallVector<size_t> minimizeFailingSequence(size_t size,
                                                  FailureTest test,
                                                  unsigned *numTests = nullptr);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SUPPORT_DELTADEBUGGING_H
