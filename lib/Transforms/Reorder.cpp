//===- Reorder.cpp - swap_nested_scopes, swap_sibling, swap_ops -----------===//
//
//   4 8 y[{0},{1}]=x[{1},{0}]   swap_nested_scopes@y:0   8 4 y[{1},{0}]=x[{0},{1}]
//
//   4 a[{0}]=x[{0}]             swap_sibling@a:0         4 b[{0}]=x[{0}]*2
//   4 b[{0}]=x[{0}]*2           ------------------>      4 a[{0}]=x[{0}]
//
// Interchange is legal when no two iterations (i1,j1) before (i2,j2) with
// i1 < i2 and j1 > j2 touch a common element, one writing it. Swapping
// siblings is legal when they touch no common element, one writing it, in
// the same iteration of their enclosing scopes. Updates by the same
// reduction commute.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/IndexRewrite.h"
#include "PerfDojo/Transforms/Moves.h"

using namespace mlir;
using namespace mlir::perfdojo;

/// The only operation in `scope`'s body if it is a scope, else null.
static ScopeOp getOnlyChildScope(ScopeOp scope) {
  Block &body = scope.getBodyBlock();
  if (!llvm::hasSingleElement(body))
    return nullptr;
  return dyn_cast<ScopeOp>(body.front());
}

/// Interchange keeps only sequential semantics: a parallel scope moved to
/// another level would need its independence proven there again.
static bool isLoopMapping(Mapping m) {
  return m == Mapping::seq || m == Mapping::unroll;
}

LogicalResult mlir::perfdojo::canSwapNestedScopes(ScopeOp outer,
                                                  std::string &reason) {
  ScopeOp inner = getOnlyChildScope(outer);
  if (!inner) {
    reason = "the scope's body is not a single nested scope";
    return failure();
  }
  if (!isLoopMapping(outer.getMapping()) || !isLoopMapping(inner.getMapping())) {
    reason = "only sequential or unrolled scopes can be interchanged; unset "
             "the " +
             stringifyMapping(isLoopMapping(outer.getMapping())
                                  ? inner.getMapping()
                                  : outer.getMapping())
                 .str() +
             " mapping first";
    return failure();
  }
  unsigned depth = outer.getDepth();
  // Exchanging two coefficients, or two variables used as values, always
  // succeeds: the indices need no check.
  auto sharedDeps =
      DependenceAnalysis::getShared(outer->getParentOfType<KernelOp>());
  const DependenceAnalysis &deps = *sharedDeps;
  SmallVector<ComputeOp> ops = collectComputeOps(inner);
  std::string buffer;
  if (deps.mayConflict(ops, ops, depth,
                       {{depth, /*aGreater=*/false}, {depth + 1, true}},
                       /*reductionsCommute=*/true, &buffer)) {
    reason = "iterations that touch the same element of '" + buffer +
             "' would run in the opposite order";
    return failure();
  }
  return success();
}

void mlir::perfdojo::swapNestedScopes(RewriterBase &rewriter, ScopeOp outer) {
  ScopeOp inner = getOnlyChildScope(outer);
  unsigned depth = outer.getDepth();
  int64_t outerSize = outer.getSize(), innerSize = inner.getSize();
  Mapping outerMapping = outer.getMapping(), innerMapping = inner.getMapping();
  rewriter.modifyOpInPlace(outer, [&] {
    outer.setSize(innerSize);
    outer.setMapping(innerMapping);
  });
  rewriter.modifyOpInPlace(inner, [&] {
    inner.setSize(outerSize);
    inner.setMapping(outerMapping);
  });
  rewriteIndices(
      rewriter, inner,
      [&](const LinearForm &f) -> std::optional<LinearForm> {
        return swapDims(f, depth);
      },
      [&](unsigned d) -> std::optional<unsigned> {
        return d == depth ? depth + 1 : d == depth + 1 ? depth : d;
      });
}

LogicalResult mlir::perfdojo::canSwapWithNext(Operation *first,
                                              std::string &reason) {
  Operation *second = first->getNextNode();
  if (!second) {
    reason = "nothing follows it in its scope";
    return failure();
  }
  unsigned depth = getEnclosingExtents(first).size();
  auto sharedDeps =
      DependenceAnalysis::getShared(first->getParentOfType<KernelOp>());
  const DependenceAnalysis &deps = *sharedDeps;
  std::string buffer;
  if (deps.mayConflict(collectComputeOps(first), collectComputeOps(second),
                       depth, {}, /*reductionsCommute=*/true, &buffer)) {
    reason = "both touch the same element of '" + buffer +
             "', one of them writing it";
    return failure();
  }
  return success();
}

void mlir::perfdojo::swapWithNext(RewriterBase &rewriter, Operation *first) {
  rewriter.moveOpBefore(first->getNextNode(), first);
}
