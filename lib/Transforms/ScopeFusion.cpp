//===- ScopeFusion.cpp - join_scopes and split_scope ----------------------===//
//
//   4 a[{0}]=x[{0}]          join_scopes@a:0        4 a[{0}]=x[{0}]
//   4 b[{0}]=a[{0}]*2        ------------------>    | b[{0}]=a[{0}]*2
//                            <------------------
//                            split_scope@a:0
//
// Both moves change the order of the two bodies' iterations from "all of
// the first, then all of the second" to "interleaved" (or back). They are
// legal when no iteration i of the second body touches an element that an
// iteration j > i of the first body touches, one of them writing it.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/Moves.h"

using namespace mlir;
using namespace mlir::perfdojo;

/// Whether running `second`'s iteration i before `first`'s iteration j > i
/// may change the result; `depth` is the depth of the fused scope.
static LogicalResult checkInterleaving(KernelOp kernel,
                                       ArrayRef<ComputeOp> first,
                                       ArrayRef<ComputeOp> second,
                                       unsigned depth, std::string &reason) {
  auto sharedDeps = DependenceAnalysis::getShared(kernel);
  const DependenceAnalysis &deps = *sharedDeps;
  std::string buffer;
  if (deps.mayConflict(first, second, depth, {{depth, /*aGreater=*/true}},
                       /*reductionsCommute=*/true, &buffer)) {
    reason = "an iteration of the second body would run before a later "
             "iteration of the first body that touches the same element of '" +
             buffer + "'";
    return failure();
  }
  return success();
}

LogicalResult mlir::perfdojo::canJoinScopes(ScopeOp first,
                                            std::string &reason) {
  auto second = dyn_cast_or_null<ScopeOp>(first->getNextNode());
  if (!second) {
    reason = "the scope is not followed by a sibling scope";
    return failure();
  }
  if (first.getSize() != second.getSize()) {
    reason = "the scopes have different sizes (" +
             std::to_string(first.getSize()) + " and " +
             std::to_string(second.getSize()) + ")";
    return failure();
  }
  if (first.getMapping() != second.getMapping()) {
    reason = "the scopes have different mappings (" +
             stringifyMapping(first.getMapping()).str() + " and " +
             stringifyMapping(second.getMapping()).str() + ")";
    return failure();
  }
  Mapping mapping = first.getMapping();
  if (mapping == Mapping::vector) {
    reason = "a vector scope wraps exactly one operation; unset the vector "
             "mappings first";
    return failure();
  }
  KernelOp kernel = first->getParentOfType<KernelOp>();
  SmallVector<ComputeOp> a = collectComputeOps(first),
                         b = collectComputeOps(second);
  unsigned depth = first.getDepth();
  if (failed(checkInterleaving(kernel, a, b, depth, reason)))
    return failure();
  // Iterations of a parallel or GPU scope run concurrently: the fused
  // bodies must also be independent across different iterations, in both
  // directions and with reductions too, since concurrent updates of one
  // element race (each scope alone already was independent). The check
  // above lets a later iteration of the first body update an element that
  // an earlier iteration of the second body updates, `+=` after `+=`.
  if (mapping != Mapping::seq && mapping != Mapping::unroll) {
    auto sharedDeps = DependenceAnalysis::getShared(kernel);
    const DependenceAnalysis &deps = *sharedDeps;
    std::string buffer;
    for (bool aGreater : {false, true}) {
      if (!deps.mayConflict(a, b, depth, {{depth, aGreater}},
                            /*reductionsCommute=*/false, &buffer))
        continue;
      reason = "the fused iterations run concurrently (" +
               stringifyMapping(mapping).str() +
               ") and different iterations touch the same element of '" +
               buffer + "'";
      return failure();
    }
  }
  return success();
}

void mlir::perfdojo::joinScopes(RewriterBase &rewriter, ScopeOp first) {
  auto second = cast<ScopeOp>(first->getNextNode());
  rewriter.mergeBlocks(&second.getBodyBlock(), &first.getBodyBlock());
  rewriter.eraseOp(second);
}

/// The child of `scope` that is, or holds, `op`.
static Operation *getChildHolding(ScopeOp scope, ComputeOp op) {
  Operation *child = op;
  while (child && child->getParentOp() != scope)
    child = child->getParentOp();
  return child;
}

LogicalResult mlir::perfdojo::canSplitScope(ScopeOp scope, ComputeOp op,
                                            std::string &reason) {
  Operation *child = getChildHolding(scope, op);
  if (!child || !child->getNextNode()) {
    reason = "nothing follows the operation in the scope";
    return failure();
  }
  SmallVector<ComputeOp> before, after;
  bool seen = false;
  for (Operation &c : scope.getBodyBlock()) {
    llvm::append_range(seen ? after : before, collectComputeOps(&c));
    seen |= &c == child;
  }
  return checkInterleaving(scope->getParentOfType<KernelOp>(), before, after,
                           scope.getDepth(), reason);
}

ScopeOp mlir::perfdojo::splitScope(RewriterBase &rewriter, ScopeOp scope,
                                   ComputeOp op) {
  Operation *child = getChildHolding(scope, op);
  rewriter.setInsertionPointAfter(scope);
  auto second = ScopeOp::create(rewriter, scope.getLoc(), scope.getSize(),
                                scope.getMapping());
  Block *body = rewriter.createBlock(&second.getBody());
  SmallVector<Operation *> moved;
  for (Operation *o = child->getNextNode(); o; o = o->getNextNode())
    moved.push_back(o);
  for (Operation *o : moved)
    rewriter.moveOpBefore(o, body, body->end());
  return second;
}
