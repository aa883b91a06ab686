//===- Peeling.cpp - peel_scope and unpeel_scope --------------------------===//
//
//   10 y[{0}]=x[{0}]    peel_scope@y:0:8      8 y[{0}]=x[{0}]
//                       ---------------->     2 y[{0}+8]=x[{0}+8]
//                       <----------------
//                       unpeel_scope@y:0
//
// Peeling splits the iterations of a scope into its first `count` and the
// rest, run one after the other: the order of every instance is unchanged,
// so it is always legal for a sequential, unrolled or parallel scope. It is
// how a tile size that does not divide a scope gets its remainder: peel the
// largest multiple of the tile, then tile the first part.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/IndexRewrite.h"
#include "PerfDojo/Transforms/Moves.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;
using namespace mlir::perfdojo;

/// {depth} -> {depth} + offset.
static std::optional<LinearForm> shiftForm(const LinearForm &form,
                                           unsigned depth, int64_t offset) {
  int64_t delta, constant;
  if (llvm::MulOverflow(form.coeff(depth), offset, delta) ||
      llvm::AddOverflow(form.constant, delta, constant))
    return std::nullopt;
  LinearForm result = form;
  result.constant = constant;
  return result;
}

static bool canPeelMapping(Mapping mapping) {
  return mapping == Mapping::seq || mapping == Mapping::unroll ||
         mapping == Mapping::parallel;
}

LogicalResult mlir::perfdojo::canPeelScope(ScopeOp scope, int64_t count,
                                           std::string &reason) {
  int64_t size = scope.getSize();
  if (count <= 0 || count >= size) {
    reason = "the count " + std::to_string(count) +
             " must lie strictly between 0 and the scope size " +
             std::to_string(size);
    return failure();
  }
  if (!canPeelMapping(scope.getMapping())) {
    reason = "a " + stringifyMapping(scope.getMapping()).str() +
             " scope cannot be peeled; unset its mapping first";
    return failure();
  }
  unsigned depth = scope.getDepth();
  return canRewriteIndices(
      scope, [&](const LinearForm &f) { return shiftForm(f, depth, count); },
      [&](unsigned d) -> std::optional<unsigned> {
        if (d == depth)
          return std::nullopt;
        return d;
      },
      reason);
}

ScopeOp mlir::perfdojo::peelScope(RewriterBase &rewriter, ScopeOp scope,
                                  int64_t count) {
  unsigned depth = scope.getDepth();
  rewriter.setInsertionPointAfter(scope);
  auto rest = cast<ScopeOp>(rewriter.clone(*scope));
  rewriter.modifyOpInPlace(rest,
                           [&] { rest.setSize(scope.getSize() - count); });
  rewriter.modifyOpInPlace(scope, [&] { scope.setSize(count); });
  rewriteIndices(
      rewriter, rest,
      [&](const LinearForm &f) { return shiftForm(f, depth, count); },
      [](unsigned d) -> std::optional<unsigned> { return d; });
  return rest;
}

SmallVector<int64_t> mlir::perfdojo::getPeelChoices(ScopeOp scope) {
  // The largest multiple of each power-of-two tile that leaves a remainder.
  SmallVector<int64_t> counts;
  int64_t size = scope.getSize();
  for (int64_t tile = 2; tile <= 64 && tile < size; tile *= 2)
    if (size % tile != 0)
      counts.push_back(size / tile * tile);
  // And the first half, so that every scope of two or more can be peeled.
  if (size >= 2)
    counts.push_back(size / 2);
  llvm::sort(counts);
  counts.erase(std::unique(counts.begin(), counts.end()), counts.end());
  return counts;
}

/// True if `second` is `first` with every `{depth}` replaced by
/// `{depth}+offset`: the same tree, sizes, mappings and operations.
static bool isShiftedCopy(Operation *first, Operation *second, unsigned depth,
                          int64_t offset) {
  if (auto a = dyn_cast<ScopeOp>(first)) {
    auto b = dyn_cast<ScopeOp>(second);
    if (!b || a.getSize() != b.getSize() || a.getMapping() != b.getMapping())
      return false;
    Block &x = a.getBodyBlock(), &y = b.getBodyBlock();
    if (x.getOperations().size() != y.getOperations().size())
      return false;
    for (auto [p, q] : llvm::zip_equal(x, y))
      if (!isShiftedCopy(&p, &q, depth, offset))
        return false;
    return true;
  }
  auto a = cast<ComputeOp>(first);
  auto b = dyn_cast<ComputeOp>(second);
  if (!b || a.getKind() != b.getKind() ||
      a.getReduction() != b.getReduction() ||
      a.getInputs().size() != b.getInputs().size())
    return false;
  auto sameAccess = [&](AccessAttr x, AccessAttr y) {
    if (x.getArray() != y.getArray())
      return false;
    for (auto [f, g] : llvm::zip_equal(x.getLinearForms(), y.getLinearForms()))
      if (std::optional<LinearForm> shifted = shiftForm(f, depth, offset);
          !shifted || !(*shifted == g))
        return false;
    return true;
  };
  if (!sameAccess(a.getOut(), b.getOut()))
    return false;
  for (auto [x, y] : llvm::zip_equal(a.getInputs(), b.getInputs())) {
    auto p = dyn_cast<AccessAttr>(x), q = dyn_cast<AccessAttr>(y);
    if (p || q) {
      if (!p || !q || !sameAccess(p, q))
        return false;
      continue;
    }
    // {depth} as a value cannot be shifted: such a pair never comes from
    // peeling.
    if (auto iter = dyn_cast<IterAttr>(x); iter && iter.getDepth() == depth)
      return false;
    if (x != y)
      return false;
  }
  return true;
}

LogicalResult mlir::perfdojo::canUnpeelScope(ScopeOp scope,
                                             std::string &reason) {
  auto next = dyn_cast_or_null<ScopeOp>(scope->getNextNode());
  if (!next) {
    reason = "the scope is not followed by a sibling scope";
    return failure();
  }
  if (scope.getMapping() != next.getMapping() ||
      !canPeelMapping(scope.getMapping())) {
    reason = "the two scopes must have the same sequential, unrolled or "
             "parallel mapping";
    return failure();
  }
  if (scope.getSize() > kMaxExtent - next.getSize()) {
    reason = "the joined size would exceed " + std::to_string(kMaxExtent);
    return failure();
  }
  if (next.getMapping() == Mapping::unroll &&
      scope.getSize() + next.getSize() > 64) {
    reason = "an unrolled scope has at most 64 iterations";
    return failure();
  }
  Block &x = scope.getBodyBlock(), &y = next.getBodyBlock();
  // Joined, the iterations of both parts run concurrently: no iteration of
  // one part may touch an element another iteration of the other writes.
  if (scope.getMapping() == Mapping::parallel) {
    auto sharedDeps =
        DependenceAnalysis::getShared(scope->getParentOfType<KernelOp>());
    const DependenceAnalysis &deps = *sharedDeps;
    std::string buffer;
    if (deps.mayConflict(collectComputeOps(scope), collectComputeOps(next),
                         scope.getDepth(), {}, /*reductionsCommute=*/false,
                         &buffer)) {
      reason = "the joined scope would be parallel, but an iteration of one "
               "part touches an element of '" +
               buffer + "' that an iteration of the other writes";
      return failure();
    }
  }
  bool same = x.getOperations().size() == y.getOperations().size();
  for (auto [p, q] : llvm::zip(x, y))
    same = same && isShiftedCopy(&p, &q, scope.getDepth(), scope.getSize());
  if (!same) {
    reason = "the next scope's body is not this one's with {" +
             std::to_string(scope.getDepth()) + "} shifted by " +
             std::to_string(scope.getSize());
    return failure();
  }
  return success();
}

void mlir::perfdojo::unpeelScope(RewriterBase &rewriter, ScopeOp scope) {
  auto next = cast<ScopeOp>(scope->getNextNode());
  rewriter.modifyOpInPlace(
      scope, [&] { scope.setSize(scope.getSize() + next.getSize()); });
  rewriter.eraseOp(next);
}
