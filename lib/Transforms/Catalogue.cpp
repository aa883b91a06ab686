//===- Catalogue.cpp - The typed entry points of the declared moves -------===//
//
// For each move declared in MoveOps.td: its typed legality check, its apply
// and, for moves with parameters, the parameter choices worth listing, each
// forwarding to the algorithms of Moves.h. Everything else about a move (its
// name, location kind, inverse, parameter parsing, builder, transform op and
// registry entry) is generated from its declaration.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/MoveOps.h"
#include "PerfDojo/Transforms/Moves.h"

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::perfdojo::moves;

using Choices = SmallVector<SmallVector<std::string, 2>>;

//===- Loop moves ---------------------------------------------------------===//

LogicalResult JoinScopesOp::checkMove(const ResolvedLocation &loc,
                                      std::string &reason) {
  return canJoinScopes(loc.scope, reason);
}
void JoinScopesOp::applyMove(RewriterBase &rewriter,
                             const ResolvedLocation &loc) {
  joinScopes(rewriter, loc.scope);
}

LogicalResult SplitScopeOp::checkMove(const ResolvedLocation &loc,
                                      std::string &reason) {
  return canSplitScope(loc.scope, loc.op, reason);
}
void SplitScopeOp::applyMove(RewriterBase &rewriter,
                             const ResolvedLocation &loc) {
  splitScope(rewriter, loc.scope, loc.op);
}

LogicalResult SwapNestedScopesOp::checkMove(const ResolvedLocation &loc,
                                            std::string &reason) {
  return canSwapNestedScopes(loc.scope, reason);
}
void SwapNestedScopesOp::applyMove(RewriterBase &rewriter,
                                   const ResolvedLocation &loc) {
  swapNestedScopes(rewriter, loc.scope);
}

LogicalResult SwapSiblingOp::checkMove(const ResolvedLocation &loc,
                                       std::string &reason) {
  return canSwapWithNext(loc.scope, reason);
}
void SwapSiblingOp::applyMove(RewriterBase &rewriter,
                              const ResolvedLocation &loc) {
  swapWithNext(rewriter, loc.scope);
}

LogicalResult SwapOpsOp::checkMove(const ResolvedLocation &loc,
                                   std::string &reason) {
  return canSwapWithNext(loc.op, reason);
}
void SwapOpsOp::applyMove(RewriterBase &rewriter, const ResolvedLocation &loc) {
  swapWithNext(rewriter, loc.op);
}

LogicalResult TileScopeOp::checkMove(const ResolvedLocation &loc, int64_t size,
                                     std::string &reason) {
  return canTileScope(loc.scope, size, reason);
}
void TileScopeOp::applyMove(RewriterBase &rewriter, const ResolvedLocation &loc,
                            int64_t size) {
  tileScope(rewriter, loc.scope, size);
}
/// The divisors of the scope's size strictly between 1 and it, ascending.
Choices TileScopeOp::getMoveChoices(const ResolvedLocation &loc) {
  ScopeOp scope = loc.scope;
  int64_t n = scope.getSize();
  SmallVector<int64_t> small, large;
  for (int64_t d = 2; d * d <= n; ++d) {
    if (n % d)
      continue;
    small.push_back(d);
    if (d != n / d)
      large.push_back(n / d);
  }
  Choices choices;
  choices.reserve(small.size() + large.size());
  for (int64_t d : small)
    choices.push_back({std::to_string(d)});
  for (int64_t d : llvm::reverse(large))
    choices.push_back({std::to_string(d)});
  return choices;
}

LogicalResult MergeScopesOp::checkMove(const ResolvedLocation &loc,
                                       std::string &reason) {
  return canMergeScopes(loc.scope, reason);
}
void MergeScopesOp::applyMove(RewriterBase &rewriter,
                              const ResolvedLocation &loc) {
  mergeScopes(rewriter, loc.scope);
}

LogicalResult PeelScopeOp::checkMove(const ResolvedLocation &loc, int64_t count,
                                     std::string &reason) {
  return canPeelScope(loc.scope, count, reason);
}
void PeelScopeOp::applyMove(RewriterBase &rewriter, const ResolvedLocation &loc,
                            int64_t count) {
  peelScope(rewriter, loc.scope, count);
}
Choices PeelScopeOp::getMoveChoices(const ResolvedLocation &loc) {
  Choices choices;
  for (int64_t count : getPeelChoices(loc.scope))
    choices.push_back({std::to_string(count)});
  return choices;
}

LogicalResult UnpeelScopeOp::checkMove(const ResolvedLocation &loc,
                                       std::string &reason) {
  return canUnpeelScope(loc.scope, reason);
}
void UnpeelScopeOp::applyMove(RewriterBase &rewriter,
                              const ResolvedLocation &loc) {
  unpeelScope(rewriter, loc.scope);
}

//===- Mapping moves ------------------------------------------------------===//

#define PERFDOJO_MAPPING_MOVE(OP, MAPPING)                                     \
  LogicalResult OP::checkMove(const ResolvedLocation &loc,                     \
                              std::string &reason) {                           \
    return canSetMapping(loc.scope, Mapping::MAPPING, reason);                 \
  }                                                                            \
  void OP::applyMove(RewriterBase &rewriter, const ResolvedLocation &loc) {    \
    setMapping(rewriter, loc.scope, Mapping::MAPPING);                         \
  }
PERFDOJO_MAPPING_MOVE(UnrollOp, unroll)
PERFDOJO_MAPPING_MOVE(ParallelizeOp, parallel)
PERFDOJO_MAPPING_MOVE(VectorizeOp, vector)
PERFDOJO_MAPPING_MOVE(GpuGridOp, grid)
PERFDOJO_MAPPING_MOVE(GpuBlockOp, block)
PERFDOJO_MAPPING_MOVE(GpuWarpOp, warp)
#undef PERFDOJO_MAPPING_MOVE

LogicalResult UnsetMappingOp::checkMove(const ResolvedLocation &loc,
                                        std::string &reason) {
  return canUnsetMapping(loc.scope, reason);
}
void UnsetMappingOp::applyMove(RewriterBase &rewriter,
                               const ResolvedLocation &loc) {
  setMapping(rewriter, loc.scope, Mapping::seq);
}

//===- Buffer moves -------------------------------------------------------===//

LogicalResult ReuseDimsOp::checkMove(const ResolvedLocation &loc,
                                     std::string &reason) {
  return canReuseDim(loc.buffer, loc.dim, /*reuse=*/true, reason);
}
void ReuseDimsOp::applyMove(RewriterBase &rewriter,
                            const ResolvedLocation &loc) {
  reuseDim(rewriter, loc.buffer, loc.dim, /*reuse=*/true);
}

LogicalResult MaterializeDimsOp::checkMove(const ResolvedLocation &loc,
                                           std::string &reason) {
  return canReuseDim(loc.buffer, loc.dim, /*reuse=*/false, reason);
}
void MaterializeDimsOp::applyMove(RewriterBase &rewriter,
                                  const ResolvedLocation &loc) {
  reuseDim(rewriter, loc.buffer, loc.dim, /*reuse=*/false);
}

LogicalResult SetLocationOp::checkMove(const ResolvedLocation &loc,
                                       BufferLocation place,
                                       std::string &reason) {
  return canSetLocation(loc.buffer, place, reason);
}
void SetLocationOp::applyMove(RewriterBase &rewriter,
                              const ResolvedLocation &loc,
                              BufferLocation place) {
  setLocation(rewriter, loc.buffer, place);
}
Choices SetLocationOp::getMoveChoices(const ResolvedLocation &) {
  return {{"heap"}, {"stack"}, {"reg"}, {"shared"}};
}

LogicalResult PermuteDimsOp::checkMove(const ResolvedLocation &loc,
                                       std::string &reason) {
  return canPermuteDims(loc.buffer, loc.dim, reason);
}
void PermuteDimsOp::applyMove(RewriterBase &rewriter,
                              const ResolvedLocation &loc) {
  permuteDims(rewriter, loc.buffer, loc.dim);
}

LogicalResult SplitDimOp::checkMove(const ResolvedLocation &loc, int64_t inner,
                                    std::string &reason) {
  return canSplitDim(loc.buffer, loc.dim, inner, reason);
}
void SplitDimOp::applyMove(RewriterBase &rewriter, const ResolvedLocation &loc,
                           int64_t inner) {
  splitDim(rewriter, loc.buffer, loc.dim, inner);
}
Choices SplitDimOp::getMoveChoices(const ResolvedLocation &loc) {
  Choices choices;
  for (int64_t inner : getSplitDimSizes(loc.buffer, loc.dim))
    choices.push_back({std::to_string(inner)});
  return choices;
}

LogicalResult JoinDimsOp::checkMove(const ResolvedLocation &loc,
                                    std::string &reason) {
  return canJoinDims(loc.buffer, loc.dim, reason);
}
void JoinDimsOp::applyMove(RewriterBase &rewriter,
                           const ResolvedLocation &loc) {
  joinDims(rewriter, loc.buffer, loc.dim);
}

LogicalResult AddDimOp::checkMove(const ResolvedLocation &loc, int64_t position,
                                  int64_t depth, std::string &reason) {
  return canAddDim(loc.buffer, position, depth, reason);
}
void AddDimOp::applyMove(RewriterBase &rewriter, const ResolvedLocation &loc,
                         int64_t position, int64_t depth) {
  addDim(rewriter, loc.buffer, position, depth);
}
Choices AddDimOp::getMoveChoices(const ResolvedLocation &loc) {
  Choices choices;
  BufferOp buffer = loc.buffer;
  for (unsigned depth : getCommonScopeDepths(buffer))
    for (unsigned p = 0; p <= buffer.getShape().size(); ++p)
      choices.push_back({std::to_string(p), std::to_string(depth)});
  return choices;
}

LogicalResult RemoveDimOp::checkMove(const ResolvedLocation &loc,
                                     std::string &reason) {
  return canRemoveDim(loc.buffer, loc.dim, reason);
}
void RemoveDimOp::applyMove(RewriterBase &rewriter,
                            const ResolvedLocation &loc) {
  removeDim(rewriter, loc.buffer, loc.dim);
}

LogicalResult PadDimOp::checkMove(const ResolvedLocation &loc, int64_t amount,
                                  std::string &reason) {
  return canPadDim(loc.buffer, loc.dim, amount, /*grow=*/true, reason);
}
void PadDimOp::applyMove(RewriterBase &rewriter, const ResolvedLocation &loc,
                         int64_t amount) {
  padDim(rewriter, loc.buffer, loc.dim, amount, /*grow=*/true);
}
/// One element, and up to the next multiple of 16 (a vector of f32 on
/// AVX-512).
Choices PadDimOp::getMoveChoices(const ResolvedLocation &loc) {
  BufferOp buffer = loc.buffer;
  int64_t size = buffer.getShape()[loc.dim];
  Choices choices{{"1"}};
  if (int64_t toSixteen = (16 - size % 16) % 16; toSixteen > 1)
    choices.push_back({std::to_string(toSixteen)});
  return choices;
}

LogicalResult UnpadDimOp::checkMove(const ResolvedLocation &loc,
                                    int64_t amount, std::string &reason) {
  return canPadDim(loc.buffer, loc.dim, amount, /*grow=*/false, reason);
}
void UnpadDimOp::applyMove(RewriterBase &rewriter, const ResolvedLocation &loc,
                           int64_t amount) {
  padDim(rewriter, loc.buffer, loc.dim, amount, /*grow=*/false);
}
/// One element, and everything no access reaches.
Choices UnpadDimOp::getMoveChoices(const ResolvedLocation &loc) {
  Choices choices{{"1"}};
  if (int64_t unused = getUnusedTail(loc.buffer, loc.dim); unused > 1)
    choices.push_back({std::to_string(unused)});
  return choices;
}

//===- Copy, reduction and sharing moves ----------------------------------===//

LogicalResult AddCopyOp::checkMove(const ResolvedLocation &loc,
                                   StringRef array, StringRef name,
                                   std::string &reason) {
  return canAddCopy(loc.scope, array, name, reason);
}
void AddCopyOp::applyMove(RewriterBase &rewriter, const ResolvedLocation &loc,
                          StringRef array, StringRef name) {
  addCopy(rewriter, loc.scope, array, name);
}
Choices AddCopyOp::getMoveChoices(const ResolvedLocation &loc) {
  Choices choices;
  for (std::string &array : getCopyableArrays(loc.scope))
    choices.push_back({array, getFreshCopyName(loc.kernel, array)});
  return choices;
}

LogicalResult RemoveCopyOp::checkMove(const ResolvedLocation &loc,
                                      std::string &reason) {
  return canRemoveCopy(loc.buffer, reason);
}
void RemoveCopyOp::applyMove(RewriterBase &rewriter,
                             const ResolvedLocation &loc) {
  removeCopy(rewriter, loc.buffer);
}

LogicalResult RecomputeOp::checkMove(const ResolvedLocation &loc,
                                     std::string &reason) {
  return canRecompute(loc.buffer, reason);
}
void RecomputeOp::applyMove(RewriterBase &rewriter,
                            const ResolvedLocation &loc) {
  recompute(rewriter, loc.buffer);
}

LogicalResult ReloadOp::checkMove(const ResolvedLocation &loc, StringRef array,
                                  std::string &reason) {
  return canReload(loc.buffer, array, reason);
}
void ReloadOp::applyMove(RewriterBase &rewriter, const ResolvedLocation &loc,
                         StringRef array) {
  reload(rewriter, loc.buffer, array);
}
Choices ReloadOp::getMoveChoices(const ResolvedLocation &loc) {
  Choices choices;
  for (std::string &array : getReloadCandidates(loc.buffer))
    choices.push_back({array});
  return choices;
}

LogicalResult SplitReductionOp::checkMove(const ResolvedLocation &loc,
                                          StringRef name,
                                          std::string &reason) {
  return canSplitReduction(loc.scope, loc.op, name, reason);
}
void SplitReductionOp::applyMove(RewriterBase &rewriter,
                                 const ResolvedLocation &loc, StringRef name) {
  splitReduction(rewriter, loc.scope, loc.op, name);
}
Choices SplitReductionOp::getMoveChoices(const ResolvedLocation &loc) {
  ComputeOp op = loc.op;
  return {{getFreshPartialName(loc.kernel, op.getOut().getArray().getValue())}};
}

LogicalResult JoinReductionOp::checkMove(const ResolvedLocation &loc,
                                         std::string &reason) {
  return canJoinReduction(loc.buffer, reason);
}
void JoinReductionOp::applyMove(RewriterBase &rewriter,
                                const ResolvedLocation &loc) {
  joinReduction(rewriter, loc.buffer);
}

LogicalResult ReuseBufferOp::checkMove(const ResolvedLocation &loc,
                                       StringRef array, std::string &reason) {
  return canReuseBuffer(loc.buffer, array, reason);
}
void ReuseBufferOp::applyMove(RewriterBase &rewriter,
                              const ResolvedLocation &loc, StringRef array) {
  reuseBuffer(rewriter, loc.buffer, array);
}
Choices ReuseBufferOp::getMoveChoices(const ResolvedLocation &loc) {
  Choices choices;
  for (std::string &array : getReuseBufferCandidates(loc.buffer))
    choices.push_back({array});
  return choices;
}

LogicalResult SplitBufferOp::checkMove(const ResolvedLocation &loc,
                                       StringRef array, std::string &reason) {
  return canSplitBuffer(loc.buffer, array, reason);
}
void SplitBufferOp::applyMove(RewriterBase &rewriter,
                              const ResolvedLocation &loc, StringRef array) {
  splitBuffer(rewriter, loc.buffer, array);
}
Choices SplitBufferOp::getMoveChoices(const ResolvedLocation &loc) {
  Choices choices;
  BufferOp buffer = loc.buffer;
  for (StringRef array : buffer.getArrays().getAsValueRange<StringAttr>())
    if (array != buffer.getSymName())
      choices.push_back({array.str()});
  return choices;
}
