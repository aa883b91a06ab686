//===- Tiling.cpp - tile_scope and merge_scopes ---------------------------===//
//
//   8 y[{0}]=x[{0}]     tile_scope@y:0:4      2 4 y[{0}*4+{1}]=x[{0}*4+{1}]
//                       ---------------->
//                       <----------------
//                       merge_scopes@y:0
//
// Tiling keeps the iteration order, so it is always legal when the tile
// divides the size; merging is legal when every index uses the two scopes
// only as {d}*inner+{d+1}.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/CheckCache.h"
#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/IndexRewrite.h"
#include "PerfDojo/Transforms/Moves.h"

using namespace mlir;
using namespace mlir::perfdojo;

/// {d} -> {d}*tile + {d+1}; deeper variables move one level down.
static std::optional<LinearForm> tileForm(const LinearForm &f, unsigned depth,
                                          int64_t tile) {
  LinearForm result;
  result.constant = f.constant;
  result.coeffs.assign(std::max<size_t>(f.coeffs.size() + 1, depth + 2), 0);
  for (unsigned d = 0; d < f.coeffs.size(); ++d) {
    if (d < depth) {
      result.coeffs[d] = f.coeffs[d];
    } else if (d == depth) {
      if (llvm::MulOverflow(f.coeffs[d], tile, result.coeffs[d]) ||
          result.coeffs[d] == std::numeric_limits<int64_t>::min())
        return std::nullopt;
      result.coeffs[d + 1] = f.coeffs[d];
    } else {
      result.coeffs[d + 1] = f.coeffs[d];
    }
  }
  while (!result.coeffs.empty() && result.coeffs.back() == 0)
    result.coeffs.pop_back();
  return result;
}

/// Tiling's inverse on one form; fails unless the form uses the two scopes
/// as {d}*inner + {d+1}.
static std::optional<LinearForm> mergeForm(const LinearForm &f, unsigned depth,
                                           int64_t inner) {
  int64_t outerCoeff = f.coeff(depth), innerCoeff = f.coeff(depth + 1);
  int64_t expected;
  if (llvm::MulOverflow(innerCoeff, inner, expected) || expected != outerCoeff)
    return std::nullopt;
  LinearForm result;
  result.constant = f.constant;
  for (unsigned d = 0; d < f.coeffs.size(); ++d) {
    if (d == depth)
      continue;
    result.coeffs.push_back(f.coeffs[d]);
  }
  while (!result.coeffs.empty() && result.coeffs.back() == 0)
    result.coeffs.pop_back();
  return result;
}

/// Depth of the deepest scope in `scope`'s subtree, counting `scope`.
static unsigned getNestHeight(ScopeOp scope) {
  return CheckCache::get<unsigned>(
      scope, CheckCache::Question::NestHeight, [&] {
        unsigned height = 0;
        scope.walk([&](ScopeOp s) {
          height = std::max(height, s.getDepth() - scope.getDepth() + 1);
        });
        return height;
      });
}

LogicalResult mlir::perfdojo::canTileScope(ScopeOp scope, int64_t tile,
                                           std::string &reason) {
  int64_t size = scope.getSize();
  if (tile <= 1 || tile >= size || size % tile != 0) {
    reason = "the tile size " + std::to_string(tile) +
             " must divide the scope size " + std::to_string(size) +
             " and lie strictly between 1 and it";
    return failure();
  }
  if (scope.getMapping() != Mapping::seq &&
      scope.getMapping() != Mapping::parallel) {
    reason = "only sequential or parallel scopes can be tiled; unset the " +
             stringifyMapping(scope.getMapping()).str() + " mapping first";
    return failure();
  }
  if (scope.getDepth() + getNestHeight(scope) + 1 > kMaxNestDepth) {
    reason = "the nest would exceed " + std::to_string(kMaxNestDepth) +
             " scopes";
    return failure();
  }
  unsigned depth = scope.getDepth();
  // Tiling rewrites every index; it fails only where {depth} is a value or
  // a coefficient of it times the tile overflows. Judge that from the
  // largest coefficient, computed once per scope while listing.
  auto [usesValue, largest] = CheckCache::get<std::pair<bool, uint64_t>>(
      scope, CheckCache::Question::TileBounds, [&] {
        std::pair<bool, uint64_t> bounds{false, 0};
        scope.walk([&](ComputeOp op) {
          SmallVector<AccessAttr> accesses{op.getOut()};
          for (Attribute input : op.getInputs()) {
            if (auto access = dyn_cast<AccessAttr>(input))
              accesses.push_back(access);
            else if (auto iter = dyn_cast<IterAttr>(input))
              bounds.first |= iter.getDepth() == depth;
          }
          for (AccessAttr access : accesses)
            for (const LinearForm &form : access.getLinearForms())
              bounds.second = std::max<uint64_t>(
                  bounds.second, llvm::AbsoluteValue(form.coeff(depth)));
        });
        return bounds;
      });
  if (!usesValue && largest <= uint64_t(INT64_MAX) / uint64_t(tile))
    return success();
  return canRewriteIndices(
      scope,
      [&](const LinearForm &f) { return tileForm(f, depth, tile); },
      [&](unsigned d) -> std::optional<unsigned> {
        if (d == depth)
          return std::nullopt;
        return d > depth ? d + 1 : d;
      },
      reason);
}

ScopeOp mlir::perfdojo::tileScope(RewriterBase &rewriter, ScopeOp scope,
                                  int64_t tile) {
  unsigned depth = scope.getDepth();
  Block &body = scope.getBodyBlock();
  SmallVector<Operation *> children;
  for (Operation &op : body)
    children.push_back(&op);
  rewriter.setInsertionPointToEnd(&body);
  auto inner = ScopeOp::create(rewriter, scope.getLoc(), tile, Mapping::seq);
  Block *innerBody = rewriter.createBlock(&inner.getBody());
  for (Operation *op : children)
    rewriter.moveOpBefore(op, innerBody, innerBody->end());
  rewriter.modifyOpInPlace(scope,
                           [&] { scope.setSize(scope.getSize() / tile); });
  rewriteIndices(
      rewriter, inner,
      [&](const LinearForm &f) { return tileForm(f, depth, tile); },
      [&](unsigned d) -> std::optional<unsigned> {
        return d > depth ? d + 1 : d;
      });
  return inner;
}

LogicalResult mlir::perfdojo::canMergeScopes(ScopeOp outer,
                                             std::string &reason) {
  Block &body = outer.getBodyBlock();
  auto inner = llvm::hasSingleElement(body) ? dyn_cast<ScopeOp>(body.front())
                                            : ScopeOp();
  if (!inner) {
    reason = "the scope's body is not a single nested scope";
    return failure();
  }
  if (inner.getMapping() != Mapping::seq ||
      (outer.getMapping() != Mapping::seq &&
       outer.getMapping() != Mapping::parallel)) {
    reason = "only a sequential or parallel scope around a sequential scope "
             "can be merged";
    return failure();
  }
  if (outer.getSize() > kMaxExtent / inner.getSize()) {
    reason = "the merged size would exceed " + std::to_string(kMaxExtent);
    return failure();
  }
  unsigned depth = outer.getDepth();
  int64_t innerSize = inner.getSize();
  // A parallel merged scope runs all outer*inner iterations concurrently:
  // iterations must be independent whether they differ in the outer
  // variable or, for one outer iteration, in the inner one.
  if (outer.getMapping() == Mapping::parallel) {
    auto sharedDeps =
        DependenceAnalysis::getShared(outer->getParentOfType<KernelOp>());
    const DependenceAnalysis &deps = *sharedDeps;
    SmallVector<ComputeOp> ops = collectComputeOps(inner);
    std::string buffer;
    if (deps.mayConflict(ops, ops, depth, {{depth, /*aGreater=*/true}},
                         /*reductionsCommute=*/false, &buffer) ||
        deps.mayConflict(ops, ops, depth + 1, {{depth + 1, true}}, false,
                         &buffer)) {
      reason = "the merged scope would be parallel, but different iterations "
               "touch the same element of '" +
               buffer + "'";
      return failure();
    }
  }
  if (failed(canRewriteIndices(
          inner,
          [&](const LinearForm &f) { return mergeForm(f, depth, innerSize); },
          [&](unsigned d) -> std::optional<unsigned> {
            if (d == depth || d == depth + 1)
              return std::nullopt;
            return d > depth + 1 ? d - 1 : d;
          },
          reason))) {
    if (reason.find("as a value") == std::string::npos)
      reason += "; merging needs every index to use the scopes as {" +
                std::to_string(depth) + "}*" + std::to_string(innerSize) +
                "+{" + std::to_string(depth + 1) + "}";
    return failure();
  }
  return success();
}

void mlir::perfdojo::mergeScopes(RewriterBase &rewriter, ScopeOp outer) {
  auto inner = cast<ScopeOp>(outer.getBodyBlock().front());
  unsigned depth = outer.getDepth();
  int64_t innerSize = inner.getSize();
  rewriteIndices(
      rewriter, inner,
      [&](const LinearForm &f) { return mergeForm(f, depth, innerSize); },
      [&](unsigned d) -> std::optional<unsigned> {
        return d > depth + 1 ? d - 1 : d;
      });
  rewriter.modifyOpInPlace(
      outer, [&] { outer.setSize(outer.getSize() * innerSize); });
  rewriter.inlineBlockBefore(&inner.getBodyBlock(), inner);
  rewriter.eraseOp(inner);
}
