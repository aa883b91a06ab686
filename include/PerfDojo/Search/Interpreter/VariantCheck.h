//===- VariantCheck.h - A variant checked against its original -*- C++ -*-===//
//
// The oracles that decide whether a variant reached by moves still computes
// what the original computed: a comparison of interpreted outputs and a race
// check of its concurrent scopes. pd-walk (the move fuzzer) applies them
// after random walks; a search can apply them to any variant.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_INTERPRETER_VARIANTCHECK_H
#define PERFDOJO_SEARCH_INTERPRETER_VARIANTCHECK_H

#include "PerfDojo/Search/Interpreter/Interpreter.h"
#include <string>

namespace mlir {
namespace perfdojo {

/// Compares the `out` buffers `actual` of a variant with those of the
/// original, `expected` (both interpreted in float64 on the same inputs):
///
///   - integer elements exactly;
///   - floating-point elements within |actual - expected| <= tolerance *
///     scale, where scale is the largest finite magnitude in the expected
///     buffer. The bound is relative to the buffer rather than to each
///     element because moves may reassociate reductions, and a reassociated
///     sum of mixed-sign terms has an absolute error of the order of its
///     terms, not of its (possibly tiny) result; so an element of an all-zero
///     buffer must be exactly zero;
///   - NaN only against NaN, infinities only against the same infinity, and
///     an unwritten element only against an unwritten one.
///
/// Elements are compared by logical index (each read from its storage slot,
/// so reuse factors may differ). Returns an empty string when they match,
/// else a description of the first difference, such as
/// `first difference at y[0, 3]: expected 1.5, found 2 (|difference| 0.5 >
/// tolerance 1.5e-05)`.
std::string compareInterpretedOutputs(ArrayRef<BufferData> expected,
                                      ArrayRef<BufferData> actual,
                                      double tolerance);

/// The interpreter runs every scope in order, so it cannot see a mapping that
/// makes dependent iterations concurrent. This check executes the tree's
/// index arithmetic alone and, for every instance of a concurrent scope
/// (parallel, vector, grid, block, warp), records which iterations read and
/// write each storage element (after reuse factors and buffer sharing:
/// distinct elements that share a slot conflict too). Two different
/// iterations touching one element, one of them writing it, is a race;
/// reductions included, except that the lanes of a vector scope may reduce
/// into one element (a horizontal reduction).
///
/// Returns an empty string, or the first race, e.g. `race in the parallel
/// scope of size 8 at depth 1: iteration 1 writes y[0] (operation y#1,
/// storage slot 0 of 'y'), which iteration 0 writes`. Stops with a message
/// after `maxOperations` executed operations.
std::string findRace(KernelOp kernel, uint64_t maxOperations);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_INTERPRETER_VARIANTCHECK_H
