//===- Dependence.h - Exact dependence tests on perfdojo kernels -*- C++ -*-===//
//
// The legality of every reordering move reduces to one question: can two
// dynamic instances of operations, related in a given way, touch the same
// buffer element with at least one of them writing it? Because indices are
// linear in the scope variables and trip counts are constant, the question
// is an integer linear feasibility problem, which MLIR's Presburger library
// answers exactly. Arrays that share a buffer alias; a dimension with reuse
// factor k stores index i at i mod k; both are modelled.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TRANSFORMS_DEPENDENCE_H
#define PERFDOJO_TRANSFORMS_DEPENDENCE_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringMap.h"
#include <memory>

namespace mlir {
namespace perfdojo {

/// A constraint between the iteration variables of two instances at one
/// depth: a's variable is less than, or greater than, b's. With `depthB`,
/// a's variable at `depth` against b's at `depthB` (a GPU thread's index
/// bound by thread scopes at different depths on the two sides).
struct IterationOrder {
  unsigned depth;
  bool aGreater;
  int depthB = -1;
};

class DependenceAnalysis {
public:
  explicit DependenceAnalysis(KernelOp kernel);

  /// The analysis of `kernel`, built once per listing (see CheckCache).
  static std::shared_ptr<const DependenceAnalysis> getShared(KernelOp kernel);

  /// True if an instance of `a` and an instance of `b` may access a common
  /// buffer element, at least one writing it, where the two instances share
  /// the iteration variables of depths [0, tie) and satisfy `order` at
  /// deeper depths. Updates by the same reduction (`+=` and `+=`) commute and
  /// do not conflict when `reductionsCommute` is set. `a` may equal `b`.
  /// On a conflict, `buffer` (if given) receives the buffer's name. With
  /// `only`, accesses to other buffers are ignored.
  bool mayConflict(ComputeOp a, ComputeOp b, unsigned tie,
                   ArrayRef<IterationOrder> order, bool reductionsCommute,
                   std::string *buffer = nullptr, BufferOp only = {}) const;

  /// mayConflict over every pair (a in `first`, b in `second`).
  bool mayConflict(ArrayRef<ComputeOp> first, ArrayRef<ComputeOp> second,
                   unsigned tie, ArrayRef<IterationOrder> order,
                   bool reductionsCommute, std::string *buffer = nullptr,
                   BufferOp only = {}) const;

  /// The buffer that holds `array`, or null.
  BufferOp lookup(StringRef array) const { return arrays.lookup(array); }

  /// Analyzes `buffer` as if its reuse factors were `reuse` (for checks of
  /// moves that change them).
  void overrideReuse(BufferOp buffer, ArrayRef<int64_t> reuse) {
    reuseOverrides[buffer] = SmallVector<int64_t>(reuse);
  }

private:
  ArrayRef<int64_t> getReuse(BufferOp buffer) const;

  llvm::StringMap<BufferOp> arrays;
  llvm::DenseMap<Operation *, SmallVector<int64_t>> reuseOverrides;
};

/// The compute operations in the subtree rooted at `root`, in program order.
SmallVector<ComputeOp> collectComputeOps(Operation *root);

/// Whether `op` is a warp reduction: a reduction directly in a warp scope
/// into an element that the scope's variable does not index, so that every
/// lane updates it (gpu_warp's legality; the GPU lowering combines the
/// lanes' terms by shuffles).
bool isWarpReduction(ComputeOp op);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TRANSFORMS_DEPENDENCE_H
