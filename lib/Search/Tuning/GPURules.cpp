//===- GPURules.cpp - The GPU expert's rules ------------------------------===//
//
// Members of HeuristicRunner (HeuristicRunner.h, where each is documented).
//
//===----------------------------------------------------------------------===//

#include "HeuristicRunner.h"
#include "PerfDojo/Conversion/GPU/Passes.h"
#include "PerfDojo/Transforms/MoveOps.h"
#include "PerfDojo/Transforms/Moves.h"
#include "llvm/Support/SaveAndRestore.h"

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::perfdojo::moves;
using namespace mlir::perfdojo::heuristics;

MoveInstance HeuristicRunner::threadMove(const MoveLocation &loc) const {
  return warpLanes ? GpuWarpOp::make(loc) : GpuBlockOp::make(loc);
}

int64_t HeuristicRunner::threadsFor(int64_t size) const {
  if (warpLanes)
    return size % target.warpSize ? 0 : target.warpSize;
  for (int64_t t = std::min(kBlockThreads, size); t >= target.warpSize; --t)
    if (size % t == 0)
      return t;
  if (size <= target.maxThreadsPerBlock)
    return size;
  for (int64_t t = target.maxThreadsPerBlock; t > 1; --t)
    if (size % t == 0)
      return t;
  return 1;
}

bool HeuristicRunner::vectorizeGPU(ScopeOp scope) {
  int64_t width = target.vectorWidth;
  int64_t size = scope.getSize();
  if (width < 2 || size % width || size == width || !onlyOperations(scope) ||
      contiguityScore(scope, scope.getDepth()) <= 0 ||
      scatters(scope, scope.getDepth()))
    return false;
  size_t before = env.getMoves().size();
  unsigned depth = scope.getDepth();
  // Operations are named by location: moves replace the kernel.
  SmallVector<std::string> ids;
  for (Operation &op : scope.getBodyBlock())
    ids.push_back(scopeLocation(cast<ComputeOp>(op), 0));
  // A vector scope holds one operation: several (a batch norm's
  // xh = d * rstd, then y = xh * gamma + beta) get one each.
  bool ok = apply(TileScopeOp::make(locate(scope), width));
  for (size_t i = 0; ok && i + 1 < ids.size(); ++i)
    ok = apply(SplitScopeOp::make(scopeLoc(*findOpAt(ids[i]), depth + 1)));
  for (size_t i = 0; ok && i < ids.size(); ++i)
    ok = apply(VectorizeOp::make(scopeLoc(*findOpAt(ids[i]), depth + 1)));
  if (ok)
    return true;
  rollBackTo(before);
  return false;
}

bool HeuristicRunner::spreadOverThreads(ScopeOp scope, bool outerToGrid,
                                        bool vectorize) {
  size_t before = env.getMoves().size();
  MoveLocation loc = locate(scope);
  unsigned depth = scope.getDepth();
  int64_t size = scope.getSize();
  // (A loop of a block's row vectorized into less than a warp of threads
  // leaves most of the block idle: an instance norm's rows of 56, 14
  // threads of vectors beside loops of 56. An element-wise nest's block
  // takes more rows instead: widenBlocks.)
  bool vectorized =
      vectorize &&
      (outerToGrid || size / target.vectorWidth >= target.warpSize) &&
      vectorizeGPU(scope);
  if (vectorized)
    size /= target.vectorWidth;
  int64_t threads = threadsFor(size);
  if (!threads) {
    rollBackTo(before);
    return vectorized && spreadOverThreads(scopeAt(loc), outerToGrid,
                                           /*vectorize=*/false);
  }
  // A grid of 3 scopes already (a GPU's most): the whole scope on the
  // threads where a block can hold it, else its outer part a loop.
  unsigned grids = 0;
  for (auto s = scope->getParentOfType<ScopeOp>(); s;
       s = s->getParentOfType<ScopeOp>())
    grids += s.getMapping() == Mapping::grid;
  if (outerToGrid && grids >= 3) {
    outerToGrid = false;
    if (size <= target.maxThreadsPerBlock)
      threads = size;
  }
  bool ok = true;
  if (threads < size) {
    ok = apply(TileScopeOp::make(atDepth(loc, depth), threads));
    if (ok && outerToGrid)
      ok = apply(GpuGridOp::make(atDepth(loc, depth)));
    ++depth;
  }
  ok = ok && apply(threadMove(atDepth(loc, depth)));
  if (!ok) {
    rollBackTo(before);
    // The vectors' threads may not match the block's other loops (a
    // batch norm's rows of 40: 10 threads of vectors beside 40): the
    // scope's elements one a thread instead.
    if (vectorized)
      return spreadOverThreads(scopeAt(loc), outerToGrid,
                               /*vectorize=*/false);
  }
  return ok;
}

ScopeOp HeuristicRunner::threadsAtTop(ArrayRef<ScopeOp> nest) {
  ScopeOp innermost = nest.back();
  if (nest.size() < 2)
    return innermost;
  int64_t size = innermost.getSize(), threads = threadsFor(size);
  if (threads < target.warpSize)
    return innermost;
  size_t before = env.getMoves().size();
  MoveLocation at = locate(innermost);
  unsigned top = ScopeOp(nest.front()).getDepth();
  unsigned depth = innermost.getDepth();
  bool ok = true;
  if (threads < size)
    ok = apply(TileScopeOp::make(at, threads));
  unsigned t = threads < size ? depth + 1 : depth;
  for (; ok && t > top; --t)
    ok = apply(SwapNestedScopesOp::make(atDepth(at, t - 1)));
  if (!ok) {
    rollBackTo(before);
    return scopeAt(at);
  }
  return scopeAt(atDepth(at, top));
}

bool HeuristicRunner::splitOverThreads(ScopeOp scope, int64_t threads) {
  SmallVector<ComputeOp> ops;
  scope.walk([&](ComputeOp op) { ops.push_back(op); });
  if (ops.size() != 1 || ops[0].getReduction() == Reduction::none ||
      usesVariable(ops[0].getOut().getLinearForms(), scope.getDepth()))
    return false;
  int64_t size = scope.getSize();
  if (!threads) {
    threads = threadsFor(size);
    if (threads < target.warpSize)
      return false;
  }
  if (threads < 2 || size % threads)
    return false;
  std::string output = ops[0].getOut().getArray().getValue().str();
  size_t before = env.getMoves().size();
  unsigned depth = scope.getDepth();
  MoveLocation at = locate(scope);
  bool ok = true;
  if (threads < size)
    // (size / threads) x threads, then the threads outside: thread t
    // reads t, t + threads, ...
    ok = apply(TileScopeOp::make(at, threads)) &&
         apply(SwapNestedScopesOp::make(at));
  std::string partial;
  if (ok) {
    partial = splitReductionAt(at, output);
    ok = !partial.empty();
  }
  // The reduction's scope is now the threads' partial sums.
  ok = ok && apply(threadMove(partialLocation(partial, depth)));
  if (!ok) {
    rollBackTo(before);
    return false;
  }
  placePartials(partial, depth, threads);
  // The combination (the operation updating the output from the
  // partials): in warps (combineInWarps), one warp reduction where the
  // partials are few (reduceInWarp), else a second level of c threads
  // of n / c partials each, c the largest divisor with c^2 <= 4n.
  ComputeOp combine = findCombine(output, partial);
  ScopeOp combined = combine ? scopeAt(scopeLoc(combine, depth)) : ScopeOp();
  int64_t n = combined ? combined.getSize() : 0, second = 0;
  if (n >= kTwoLevelCombine && combineInWarps(combined))
    return true;
  if (combined && reduceInWarp(combined))
    return true;
  for (int64_t c = 2; n >= kTwoLevelCombine && c * c <= 4 * n; ++c)
    if (n % c == 0)
      second = c;
  if (second && second < n) {
    size_t now = env.getMoves().size();
    if (!splitOverThreads(combined, second))
      rollBackTo(now);
  }
  return true;
}

void HeuristicRunner::placePartials(StringRef partial, unsigned depth,
                                    int64_t threads) {
  // Shared memory when a block's part of the partials fits.
  if (perBlockBytes(env.getKernel().lookupArray(partial)) <=
      target.maxSharedBytes)
    (void)apply(
        SetLocationOp::make(bufferLoc(partial), BufferLocation::shared));
  // The partials' initialization, before them, over the threads too:
  // where it has one iteration a thread, on the same threads, so that
  // each thread initializes the partial it then updates and the
  // lowering needs no barrier between the two (an exact test); else
  // spread as any element-wise loop.
  if (ScopeOp init = scopeAt(atDepth(bufferLoc(partial), depth))) {
    size_t now = env.getMoves().size();
    bool same = int64_t(init.getSize()) == threads &&
                llvm::hasSingleElement(init.getBodyBlock()) &&
                isa<ComputeOp>(init.getBodyBlock().front()) &&
                apply(threadMove(locate(init)));
    if (!same) {
      rollBackTo(now);
      (void)spreadOverThreads(init, /*outerToGrid=*/false);
    }
  }
}

bool HeuristicRunner::combineInWarps(ScopeOp combined) {
  int64_t n = combined.getSize(), lanes = target.warpSize;
  ComputeOp op = firstCompute(combined);
  if (lanes < 2 || n % lanes || n < 2 * lanes || !op)
    return false;
  size_t before = env.getMoves().size();
  MoveLocation at = locate(combined);
  unsigned depth = combined.getDepth();
  std::string output = op.getOut().getArray().getValue().str();
  std::string partial;
  if (apply(TileScopeOp::make(at, lanes)))
    partial = splitReductionAt(at, output);
  MoveLocation warps = partialLocation(partial, depth);
  if (partial.empty() || !apply(GpuBlockOp::make(warps)) ||
      !apply(GpuWarpOp::make(atDepth(warps, depth + 1)))) {
    rollBackTo(before);
    return false;
  }
  placePartials(partial, depth, n / lanes);
  // The warps' results: a warp reduction too where they are few (and a
  // block scope holds them).
  if (ComputeOp last = findCombine(output, partial))
    if (ScopeOp scope = scopeAt(scopeLoc(last, depth)))
      (void)reduceInWarp(scope);
  return true;
}

ComputeOp HeuristicRunner::findCombine(StringRef output, StringRef partial) {
  ComputeOp combine;
  env.getKernel().walk([&](ComputeOp op) {
    if (op.getOut().getArray().getValue() == output &&
        llvm::any_of(op.getInputs(), [&](Attribute in) {
          auto access = dyn_cast<AccessAttr>(in);
          return access && access.getArray().getValue() == partial;
        }))
      combine = op;
  });
  return combine;
}

bool HeuristicRunner::reduceInWarp(ScopeOp combined) {
  int64_t n = combined.getSize();
  if (n < 2 || n > target.warpSize || !llvm::isPowerOf2_64(n) ||
      !llvm::hasSingleElement(combined.getBodyBlock()) ||
      !isa<ComputeOp>(combined.getBodyBlock().front()))
    return false;
  return apply(GpuWarpOp::make(locate(combined)));
}

SmallVector<ComputeOp> HeuristicRunner::accessesOf(BufferOp buffer) {
  ArrayAttr arrays = buffer.getArrays();
  auto touches = [&](Attribute a) {
    auto access = dyn_cast<AccessAttr>(a);
    return access && llvm::is_contained(arrays.getAsValueRange<StringAttr>(),
                                        access.getArray().getValue());
  };
  SmallVector<ComputeOp> ops;
  env.getKernel().walk([&](ComputeOp op) {
    if (touches(op.getOut()) || llvm::any_of(op.getInputs(), touches))
      ops.push_back(op);
  });
  return ops;
}

int64_t HeuristicRunner::perBlockBytes(BufferOp buffer) {
  SmallVector<ComputeOp> ops = accessesOf(buffer);
  // The grid scopes chained at the top, around the first access.
  unsigned gridDepth = 0;
  if (!ops.empty()) {
    SmallVector<ScopeOp> scopes; // outermost first
    for (auto s = ops.front()->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>())
      scopes.insert(scopes.begin(), s);
    while (gridDepth < scopes.size() &&
           scopes[gridDepth].getMapping() == Mapping::grid)
      ++gridDepth;
  }
  SmallVector<int64_t> perBlock = getPerBlockDims(buffer, ops, gridDepth);
  int64_t elements = 1;
  for (auto [d, window] : llvm::enumerate(perBlock))
    elements *= window ? window : buffer.getStoredExtent(d);
  return elements * std::max<int64_t>(
                        1, buffer.getElementType().getIntOrFloatBitWidth() / 8);
}

MoveLocation HeuristicRunner::partialLocation(StringRef partial,
                                              unsigned depth) {
  MoveLocation loc = atDepth(bufferLoc(partial), depth);
  loc.ordinal = 1;
  return loc;
}

bool HeuristicRunner::fissionNest(unsigned index, unsigned depth) {
  return fissionNest(index, depth, [](Operation &child, Operation &next) {
    return isa<ScopeOp>(child) || isa<ScopeOp>(next);
  });
}

bool HeuristicRunner::fissionNest(
    unsigned index, unsigned depth,
    function_ref<bool(Operation &, Operation &)> cutBetween) {
  size_t before = env.getMoves().size();
  for (;; ++index) {
    ScopeOp top = topScope(index);
    SmallVector<ScopeOp> chain =
        top ? perfectChain(top) : SmallVector<ScopeOp>();
    if (chain.size() < depth) {
      rollBackTo(before);
      return false;
    }
    // The first child after which to cut.
    Operation *cut = nullptr;
    for (Operation &child : chain[depth - 1].getBodyBlock()) {
      Operation *next = child.getNextNode();
      if (next && cutBetween(child, *next)) {
        cut = &child;
        break;
      }
    }
    if (!cut)
      return true;
    ComputeOp first = firstComputeIn(*cut);
    if (!first) {
      rollBackTo(before);
      return false;
    }
    std::string id = scopeLocation(first, 0);
    for (unsigned d = depth; d-- > 0;)
      if (!apply(SplitScopeOp::make(scopeLoc(*findOpAt(id), d)))) {
        rollBackTo(before);
        return false;
      }
  }
}

bool HeuristicRunner::splitAcrossBlocks(unsigned index, size_t prefix) {
  SmallVector<ScopeOp> chain = perfectChain(topScope(index));
  auto op = dyn_cast<ComputeOp>(chain.back().getBodyBlock().front());
  if (!op || !llvm::hasSingleElement(chain.back().getBodyBlock()) ||
      op.getReduction() == Reduction::none)
    return false;
  int64_t outputs = iterations(ArrayRef<ScopeOp>(chain).take_front(prefix));
  int64_t length = iterations(ArrayRef<ScopeOp>(chain).drop_front(prefix));
  std::string id = scopeLocation(op, 0);
  size_t before = env.getMoves().size();
  // S: the outermost reduction scope that fits, else the outermost one
  // that a tile makes fit (its outer part S).
  std::optional<unsigned> split;
  for (size_t d = prefix; !split && d < chain.size(); ++d) {
    int64_t size = chain[d].getSize();
    if (outputs * size >= kFewBlocks && length / size >= kLongReduction)
      split = unsigned(d);
  }
  for (size_t d = prefix; !split && d < chain.size(); ++d) {
    int64_t size = chain[d].getSize(), rest = length / size;
    for (int64_t inner = 2; inner < size; ++inner)
      if (size % inner == 0 && rest * inner >= kLongReduction) {
        if (outputs * (size / inner) >= kFewBlocks &&
            apply(
                TileScopeOp::make(scopeLoc(*findOpAt(id), unsigned(d)), inner)))
          split = unsigned(d);
        break;
      }
  }
  if (!split)
    return false;
  bool ok = true;
  for (unsigned d = *split; ok && d > prefix; --d)
    ok = apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), d - 1)));
  ok = ok && !splitReductionAt(scopeLoc(*findOpAt(id), unsigned(prefix)),
                               op.getOut().getArray().getValue())
                  .empty();
  // The initialization, the partials and the combination: top-level
  // nests of their own (already so when nothing is around them).
  ok = ok && (prefix == 0 || fissionNest(index, unsigned(prefix)));
  if (!ok)
    rollBackTo(before);
  return ok;
}

std::string HeuristicRunner::splitReductionAt(const MoveLocation &at,
                                              StringRef output) {
  for (unsigned n = 0; n < 100; ++n) {
    std::string name = output.str() + "_part" + (n ? std::to_string(n) : "");
    if (apply(SplitReductionOp::make(at, name)))
      return name;
  }
  return "";
}

bool HeuristicRunner::blockPerOutput(unsigned index, size_t prefix) {
  size_t before = env.getMoves().size();
  for (size_t i = 0; i < prefix; ++i)
    if (!apply(GpuGridOp::make(locate(perfectChain(topScope(index))[i])))) {
      rollBackTo(before);
      return false;
    }
  SmallVector<ScopeOp> nest(
      ArrayRef<ScopeOp>(perfectChain(topScope(index))).drop_front(prefix));
  if (!splitOverThreads(threadsAtTop(nest))) {
    rollBackTo(before);
    return false;
  }
  return true;
}

void HeuristicRunner::mapNestForGPU(unsigned index) {
  ScopeOp top = topScope(index);
  if (!top)
    return;
  SmallVector<ScopeOp> chain = perfectChain(top);
  // The independent prefix of the chain.
  size_t prefix = 0;
  while (prefix < chain.size() && independent(chain[prefix]))
    ++prefix;
  // A reduction nest whose outputs are too few for a thread each and
  // whose reductions are long: a block per output, across blocks when
  // even blocks would be too few (the partial results then a nest of
  // their own, mapped in turn).
  if (prefix < chain.size()) {
    int64_t outputs = iterations(ArrayRef<ScopeOp>(chain).take_front(prefix));
    int64_t length = iterations(ArrayRef<ScopeOp>(chain).drop_front(prefix));
    if (outputs < kEnoughThreads && length >= kLongReduction) {
      if (outputs < kFewBlocks && splitAcrossBlocks(index, prefix))
        return mapNestForGPU(index);
      if (prefix > 0 && blockPerOutput(index, prefix))
        return;
    }
  }
  if (prefix == 0)
    return; // a single reduction over everything: one thread
  ScopeOp last = chain[prefix - 1];
  bool rowBlocks = false;
  if (prefix == chain.size() && !onlyOperations(last)) {
    // A reduction long enough to give each thread of a block several
    // elements, which split_reduction can spread.
    bool elementwise = false, reduction = false;
    for (Operation &child : last.getBodyBlock())
      if (auto inner = dyn_cast<ScopeOp>(child)) {
        bool indep = independent(inner);
        elementwise |= indep;
        reduction |=
            !indep && iterations(perfectChain(inner)) >= kLongReduction;
      }
    int64_t rows = iterations(ArrayRef<ScopeOp>(chain).take_front(prefix));
    int64_t longest = 0;
    for (Operation &child : last.getBodyBlock())
      if (auto inner = dyn_cast<ScopeOp>(child))
        longest = std::max(longest, iterations(perfectChain(inner)));
    // (Element-wise loops shorter than a warp, swiglu's 8 partial
    // results an output, leave a block's threads idle: a thread per
    // row then.)
    rowBlocks = (elementwise && longest >= target.warpSize) ||
                (reduction && iterations(chain) < kEnoughThreads);
    // Too few rows for the GPU's multiprocessors while the loops inside
    // are long (a batch norm's 3 channels): each loop a launch of its
    // own with its own grid instead.
    if (rowBlocks && rows < kFewBlocks && rows * longest >= kEnoughThreads &&
        fissionNest(index, unsigned(prefix)))
      return mapNestForGPU(index);
  }
  size_t before = env.getMoves().size();
  if (!rowBlocks && prefix == chain.size() && transposeThroughShared(index))
    return;
  if (!rowBlocks) {
    // Grid over the outer independent scopes (3 at most, a GPU's
    // grid), threads over the last; the scopes between the grid and the
    // last (a group norm's h beside its w) threads too where the block
    // holds them, else loops.
    size_t grids = std::min<size_t>(prefix - 1, kMaxGridScopes);
    for (size_t i = 0; i < grids; ++i)
      if (!apply(GpuGridOp::make(locate(perfectChain(topScope(index))[i])))) {
        rollBackTo(before);
        return;
      }
    ScopeOp threads = perfectChain(topScope(index))[prefix - 1];
    if (!spreadOverThreads(threads, /*outerToGrid=*/true)) {
      rollBackTo(before);
      return;
    }
    for (size_t i = prefix - 1; i-- > grids;) {
      ScopeOp extra = perfectChain(topScope(index))[i];
      int64_t width = 1;
      extra.walk([&](ScopeOp s) {
        if (s != extra && (s.getMapping() == Mapping::block ||
                           s.getMapping() == Mapping::warp))
          width *= s.getSize();
      });
      if (width * int64_t(extra.getSize()) > target.maxThreadsPerBlock ||
          !apply(GpuBlockOp::make(locate(extra))))
        break;
    }
    widenBlocks(index);
    return;
  }
  // A warp per iteration of the independent scopes where they are many
  // and their loops short, else a block.
  if (warpPerRow(index, prefix))
    return;
  if (!gridOverPrefix(index, prefix)) {
    rollBackTo(before);
    return;
  }
  (void)mapRowLoops(index, prefix, /*all=*/false);
}

void HeuristicRunner::widenBlocks(unsigned index) {
  SmallVector<ScopeOp> chain = perfectChain(topScope(index));
  size_t first = 0;
  while (first < chain.size() && chain[first].getMapping() != Mapping::block)
    ++first;
  if (first == 0 || first == chain.size() ||
      chain[first - 1].getMapping() != Mapping::grid)
    return;
  int64_t threads = 1;
  for (size_t d = first; d < chain.size(); ++d) {
    if (chain[d].getMapping() != Mapping::block)
      break;
    threads *= chain[d].getSize();
  }
  if (threads >= kMinBlockThreads)
    return;
  ScopeOp rows = chain[first - 1];
  int64_t size = rows.getSize(), best = 0;
  for (int64_t r = 2; r <= size && threads * r <= kBlockThreads; ++r) {
    if (size % r || threads * r < kMinBlockThreads)
      continue;
    if ((threads * r) % target.warpSize == 0) {
      best = r;
      break;
    }
    if (!best)
      best = r;
  }
  if (!best)
    return;
  size_t before = env.getMoves().size();
  MoveLocation loc = locate(rows);
  unsigned depth = rows.getDepth();
  bool ok = apply(UnsetMappingOp::make(loc));
  if (ok && best < size) {
    // The rows' outer part stays the grid, the inner part joins the block.
    ok = apply(TileScopeOp::make(loc, best)) && apply(GpuGridOp::make(loc));
    ++depth;
  }
  ok = ok && apply(GpuBlockOp::make(atDepth(loc, depth)));
  if (!ok)
    rollBackTo(before);
}

bool HeuristicRunner::gridOverPrefix(unsigned index, size_t prefix) {
  for (size_t i = 0; i < prefix; ++i) {
    ScopeOp s = perfectChain(topScope(index))[i];
    if (!apply(GpuGridOp::make(locate(s))))
      return false;
  }
  return true;
}

bool HeuristicRunner::mapRowLoops(unsigned index, size_t prefix, bool all) {
  // The loops inside, one by one (their number grows as reductions
  // split: init, partials, combine).
  bool every = true;
  for (unsigned child = 0;; ++child) {
    ScopeOp row = perfectChain(topScope(index))[prefix - 1];
    auto it = row.getBodyBlock().begin();
    for (unsigned i = 0; i < child && it != row.getBodyBlock().end(); ++i)
      ++it;
    if (it == row.getBodyBlock().end())
      break;
    auto inner = dyn_cast<ScopeOp>(*it);
    if (!inner)
      continue;
    // The innermost independent scope of the loop's perfect nest holds
    // the threads (a batch norm's w inside n and h); a reduction is
    // split at its innermost scope.
    SmallVector<ScopeOp> nest = perfectChain(inner);
    ScopeOp deepest;
    for (ScopeOp s : nest)
      if (independent(s))
        deepest = s;
    if (deepest) {
      every &= spreadOverThreads(deepest, /*outerToGrid=*/false);
      if (!every && all)
        return false;
      continue;
    }
    size_t before = env.getMoves().size();
    size_t children = llvm::range_size(row.getBodyBlock());
    if (splitOverThreads(threadsAtTop(nest))) {
      // Past the partials and their combination (one scope became
      // several).
      row = perfectChain(topScope(index))[prefix - 1];
      child += llvm::range_size(row.getBodyBlock()) - children;
    } else {
      rollBackTo(before); // no threads brought up for nothing
      every = false;
      if (all)
        return false;
    }
  }
  return every;
}

bool HeuristicRunner::warpPerRow(unsigned index, size_t prefix) {
  SmallVector<ScopeOp> chain = perfectChain(topScope(index));
  int64_t rows = iterations(ArrayRef<ScopeOp>(chain).take_front(prefix));
  if (rows * target.warpSize < kEnoughThreads)
    return false;
  for (Operation &child : chain[prefix - 1].getBodyBlock())
    if (auto inner = dyn_cast<ScopeOp>(child))
      if (iterations(perfectChain(inner)) > kWarpRowElements)
        return false;
  // Rows a block: 8, fewer where a row's temporary of R rows would take
  // more than a quarter of the shared memory (a 1,024-wide layer norm's
  // x - mean: 2 rows, 8 KiB), so that the row's temporaries still fit
  // there together.
  int64_t longest = 0, bytes = 1;
  for (Operation &child : chain[prefix - 1].getBodyBlock())
    if (auto inner = dyn_cast<ScopeOp>(child))
      longest = std::max(longest, iterations(perfectChain(inner)));
  for (BufferOp buffer : env.getKernel().getBuffers())
    if (buffer.isTemporary())
      bytes = std::max<int64_t>(
          bytes,
          llvm::divideCeil(buffer.getElementType().getIntOrFloatBitWidth(), 8));
  int64_t last = chain[prefix - 1].getSize(), perBlock = 0;
  for (int64_t r : {8, 4, 2})
    if (!perBlock && last % r == 0 && last > r &&
        r * longest * bytes <= target.maxSharedBytes / 4)
      perBlock = r;
  if (!perBlock)
    return false;
  size_t before = env.getMoves().size();
  MoveLocation rowLoc = locate(chain[prefix - 1]);
  unsigned depth = chain[prefix - 1].getDepth();
  llvm::SaveAndRestore<bool> lanes(warpLanes, true);
  if (!gridOverPrefix(index, prefix - 1) ||
      !apply(TileScopeOp::make(rowLoc, perBlock)) ||
      !apply(GpuGridOp::make(atDepth(rowLoc, depth))) ||
      !apply(GpuBlockOp::make(atDepth(rowLoc, depth + 1))) ||
      !mapRowLoops(index, prefix + 1, /*all=*/true)) {
    rollBackTo(before);
    return false;
  }
  return true;
}

bool HeuristicRunner::tileProductForGPU(unsigned index) {
  ScopeOp top = topScope(index);
  if (!top)
    return false;
  SmallVector<ScopeOp> chain = perfectChain(top);
  Block *body = &chain.back().getBodyBlock();
  // The products: one op at the bottom of the chain, or the reduction
  // nests among the last scope's children.
  SmallVector<ComputeOp> products;
  size_t prefix = 0;
  if (llvm::hasSingleElement(*body) && isa<ComputeOp>(body->front())) {
    while (prefix < chain.size() && independent(chain[prefix]))
      ++prefix;
    products.push_back(cast<ComputeOp>(body->front()));
    if (prefix == chain.size())
      return false; // no reduction: element-wise
  } else {
    for (ScopeOp s : chain)
      if (!independent(s))
        return false;
    prefix = chain.size();
    for (Operation &child : *body) {
      auto nest = dyn_cast<ScopeOp>(child);
      if (!nest)
        continue;
      SmallVector<ScopeOp> inner = perfectChain(nest);
      auto op = dyn_cast<ComputeOp>(inner.back().getBodyBlock().front());
      if (!op || !llvm::hasSingleElement(inner.back().getBodyBlock()) ||
          llvm::any_of(inner, [&](ScopeOp s) { return independent(s); }))
        return false;
      products.push_back(op);
    }
  }
  if (products.empty() || prefix < 2 || !isProduct(products.front()))
    return false;
  ComputeOp op = products.front();
  SmallVector<LinearForm> out(op.getOut().getLinearForms());
  for (size_t d = prefix; d < chain.size(); ++d)
    if (usesVariable(out, d))
      return false; // every scope below the prefix a reduction
  // J: the innermost scope along which the output is contiguous.
  std::optional<unsigned> jDepth, iDepth;
  for (unsigned d = 0; d < prefix; ++d)
    if (out.back().coeff(d) == 1)
      jDepth = d;
  if (!jDepth)
    return false;
  SmallVector<SmallVector<LinearForm>> inputs;
  for (Attribute input : op.getInputs())
    if (auto access = dyn_cast<AccessAttr>(input))
      inputs.push_back(SmallVector<LinearForm>(access.getLinearForms()));
  // I: an output scope that no operand read along J uses.
  for (unsigned d = 0; d < prefix; ++d) {
    if (d == *jDepth || !usesVariable(out, d) || out.back().coeff(d))
      continue;
    bool shared = llvm::none_of(inputs, [&](ArrayRef<LinearForm> in) {
      return usesVariable(in, *jDepth) && usesVariable(in, d);
    });
    if (shared)
      iDepth = d;
  }
  if (!iDepth)
    return false;
  int64_t iSize = chain[*iDepth].getSize(), jSize = chain[*jDepth].getSize();
  int64_t outputs = iterations(ArrayRef<ScopeOp>(chain).take_front(prefix));
  // Threads along J for TN columns each: 32 or 16, else the largest
  // divisor from 16 to 64 (0: none).
  auto threadsAlongJ = [&](int64_t n) -> int64_t {
    if (jSize % n)
      return 0;
    int64_t columns = jSize / n;
    for (int64_t t : {32, 16})
      if (columns % t == 0)
        return t;
    for (int64_t t = std::min<int64_t>(64, columns); t >= 16; --t)
      if (columns % t == 0)
        return t;
    return 0;
  };
  int64_t others = int64_t(prefix) - 2;
  int64_t tm = 1, tn = 1, ti = 1, tj = 0;
  for (int64_t m : {8, 4, 2, 1})
    for (int64_t n : {4, 2, 1}) {
      int64_t t = threadsAlongJ(n);
      if (!t || m * n <= tm * tn || outputs / (m * n) < kEnoughThreads ||
          iSize % m)
        continue;
      int64_t rows = 1;
      while (rows * 2 * t <= 256 && (iSize / m) % (rows * 2) == 0)
        rows *= 2;
      int64_t grid = others + (iSize / m / rows > 1) + (jSize / n / t > 1);
      if (grid > 3)
        continue;
      tm = m, tn = n, ti = rows, tj = t;
    }
  if (tm * tn == 1)
    return false;

  size_t before = env.getMoves().size();
  // Operations are named by location: moves replace the kernel.
  SmallVector<std::string> productIds;
  for (ComputeOp product : products)
    productIds.push_back(scopeLocation(product, 0));
  std::string id = productIds.front();
  auto at = [&](unsigned depth) { return scopeLoc(*findOpAt(id), depth); };
  // The roles of the first product's scopes, outermost first.
  enum Role { Other, IO, JO, IT, JT, Red, IR, JR };
  SmallVector<Role> roles;
  for (size_t d = 0; d < chain.size(); ++d)
    roles.push_back(d >= prefix    ? Red
                    : d == *iDepth ? IT
                    : d == *jDepth ? JT
                                   : Other);
  auto depthOf = [&](Role r) {
    return unsigned(llvm::find(roles, r) - roles.begin());
  };
  bool ok = true;
  // Sorts the scopes by `rank` with adjacent swaps, each a move.
  auto sortInto = [&](ArrayRef<Role> rank) {
    auto key = [&](Role r) { return llvm::find(rank, r) - rank.begin(); };
    for (size_t pass = 0; ok && pass < roles.size(); ++pass)
      for (size_t d = 0; ok && d + 1 < roles.size(); ++d)
        if (key(roles[d]) > key(roles[d + 1])) {
          ok = apply(SwapNestedScopesOp::make(at(unsigned(d))));
          std::swap(roles[d], roles[d + 1]);
        }
  };
  sortInto({Other, IT, JT, Red});
  // Tiles: I -> IO x IT x IR, J -> JO x JR x JT.
  auto tile = [&](Role whole, int64_t size, int64_t inner, Role outer,
                  Role innerRole) {
    if (!ok)
      return;
    if (inner == 1 || inner == size) {
      roles[depthOf(whole)] = inner == 1 ? outer : innerRole;
      return;
    }
    unsigned d = depthOf(whole);
    ok = apply(TileScopeOp::make(at(d), inner));
    if (ok) {
      roles[d] = outer;
      roles.insert(roles.begin() + d + 1, innerRole);
    }
  };
  // I: a thread's rows innermost, then the threads, then the grid.
  tile(IT, iSize, tm, IT, IR);
  tile(IT, iSize / tm, ti, IO, IT);
  // J: threads innermost (consecutive threads, consecutive columns),
  // then a thread's columns, then the grid.
  tile(JT, jSize, tj, JR, JT);
  tile(JR, jSize / tj, tn, JO, JR);
  sortInto({Other, IO, JO, IT, JT, IR, JR, Red});
  // Each product apart from its siblings below the thread's rows and
  // columns, its reductions then brought above them.
  unsigned threadDepth = depthOf(JT);
  for (const std::string &pid : productIds) {
    if (!ok)
      break;
    for (unsigned d = unsigned(roles.size()); ok && d-- > threadDepth + 1;)
      if (roles[d] == IR || roles[d] == JR)
        ok = isolate(pid, d);
    // Its own scopes: the shared prefix, then IR, JR, its reductions.
    ComputeOp now = *findOpAt(pid);
    SmallVector<Role> own(roles.begin(), roles.begin() + threadDepth + 1);
    for (Role r : {IR, JR})
      if (llvm::is_contained(roles, r))
        own.push_back(r);
    while (own.size() < getEnclosingExtents(now).size())
      own.push_back(Red);
    std::swap(own, roles);
    id = pid;
    sortInto({Other, IO, JO, IT, JT, Red, IR, JR});
    std::swap(own, roles);
    id = productIds.front();
  }
  // The mapping of the shared scopes.
  for (unsigned d = 0; ok && d <= threadDepth; ++d) {
    Role r = roles[d];
    if (r == Other || r == IO || r == JO)
      ok = apply(GpuGridOp::make(at(d)));
    else
      ok = apply(GpuBlockOp::make(at(d)));
  }
  // A thread's rows and columns, unrolled wherever they are: the scopes
  // below the threads that index an operation's output.
  for (bool progress = ok; progress;) {
    progress = false;
    topScope(index).walk([&](ComputeOp c) {
      if (progress)
        return;
      SmallVector<LinearForm> forms(c.getOut().getLinearForms());
      for (auto s = c->getParentOfType<ScopeOp>();
           !progress && s && s.getDepth() > threadDepth;
           s = s->getParentOfType<ScopeOp>())
        if (s.getMapping() == Mapping::seq && usesVariable(forms, s.getDepth()))
          progress = apply(UnrollOp::make(scopeLoc(c, s.getDepth())));
    });
  }
  if (!ok) {
    rollBackTo(before);
    return false;
  }
  for (const std::string &pid : productIds)
    stageInShared(pid);
  return true;
}

void HeuristicRunner::stageInShared(StringRef id) {
  size_t before = env.getMoves().size();
  auto scopesOf = [&] {
    SmallVector<ScopeOp> scopes; // outermost first
    for (auto s = (*findOpAt(id))->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>())
      scopes.insert(scopes.begin(), s);
    return scopes;
  };
  SmallVector<ScopeOp> scopes = scopesOf();
  unsigned g = 0;
  while (g < scopes.size() && scopes[g].getMapping() == Mapping::grid)
    ++g;
  unsigned t = g;
  while (t < scopes.size() && (scopes[t].getMapping() == Mapping::block ||
                               scopes[t].getMapping() == Mapping::warp))
    ++t;
  if (g == 0 || t == g || t >= scopes.size() ||
      scopes[t].getMapping() != Mapping::seq)
    return;
  int64_t size = scopes[t].getSize();
  SmallVector<Mapping> threadMappings;
  int64_t threads = 1;
  for (unsigned d = g; d < t; ++d) {
    threadMappings.push_back(scopes[d].getMapping());
    threads *= scopes[d].getSize();
  }
  auto at = [&](unsigned depth) { return scopeLoc(*findOpAt(id), depth); };
  SmallVector<int64_t> slices;
  if (size <= kSharedSlices[0])
    slices.push_back(size);
  for (int64_t slice : kSharedSlices)
    if (slice < size && size % slice == 0)
      slices.push_back(slice);
  // Half of the shared memory leaves room for several blocks a
  // multiprocessor; only when no slice fits that, all of it.
  for (int64_t limit : {target.maxSharedBytes / 2, target.maxSharedBytes})
    for (int64_t slice : slices) {
      bool ok = true;
      // The slices' loop: K tiled, alone in each thread scope, brought
      // above them (only sequential scopes swap, so the product's thread
      // scopes are unmapped meanwhile).
      if (slice < size)
        ok = apply(TileScopeOp::make(at(t), slice));
      for (unsigned d = t; ok && d-- > g;)
        ok = isolate(id, d);
      unsigned first = g; // the first thread scope
      if (slice < size) {
        for (unsigned d = g; ok && d < t; ++d)
          ok = apply(UnsetMappingOp::make(at(d)));
        for (unsigned d = t; ok && d-- > g;)
          ok = apply(SwapNestedScopesOp::make(at(d)));
        first = g + 1;
        for (unsigned d = 0; ok && d < threadMappings.size(); ++d)
          ok = apply(threadMappings[d] == Mapping::block
                         ? GpuBlockOp::make(at(first + d))
                         : GpuWarpOp::make(at(first + d)));
      }
      // The operands' tiles, a copy each.
      SmallVector<std::string> copies;
      if (ok)
        for (const std::string &array : getCopyableArrays(scopesOf()[first])) {
          std::string name = getFreshCopyName(env.getKernel(), array);
          ok = apply(AddCopyOp::make(at(first), array, name)) &&
               apply(SetLocationOp::make(bufferLoc(name),
                                         BufferLocation::shared));
          if (!ok)
            break;
          copies.push_back(name);
          ok = rowsLast(id, name);
        }
      int64_t bytes = 0;
      for (const std::string &name : copies)
        bytes += perBlockBytes(env.getKernel().lookupArray(name));
      ok = ok && !copies.empty() && bytes <= limit;
      for (const std::string &name : copies)
        ok = ok && mapCopyOverThreads(name, threads);

      if (ok)
        return;
      rollBackTo(before);
    }
}

bool HeuristicRunner::rowsLast(StringRef id, StringRef name) {
  ComputeOp op = *findOpAt(id);
  unsigned rows = 0, rank = 0;
  bool found = false;
  for (Attribute input : op.getInputs()) {
    auto access = dyn_cast<AccessAttr>(input);
    if (!access || access.getArray().getValue() != name)
      continue;
    ArrayRef<LinearForm> forms = access.getLinearForms();
    rank = forms.size();
    for (auto [d, form] : llvm::enumerate(forms))
      for (auto s = op->getParentOfType<ScopeOp>(); s;
           s = s->getParentOfType<ScopeOp>())
        if (s.getMapping() == Mapping::unroll &&
            form.coeff(s.getDepth()) == 1 && d + 1 < forms.size()) {
          rows = d;
          found = true;
        }
  }
  if (!found)
    return true;
  for (unsigned d = rows; d + 1 < rank; ++d)
    if (!apply(PermuteDimsOp::make(bufferLoc(name, d))))
      return false;
  return apply(PadDimOp::make(bufferLoc(name, rank - 1), kTransposedPad));
}

bool HeuristicRunner::mapCopyOverThreads(StringRef name, int64_t threads) {
  return mapOverThreads(
      [&] {
        ComputeOp found;
        env.getKernel().walk([&](ComputeOp op) {
          if (op.getOut().getArray().getValue() == name)
            found = op;
        });
        return found;
      },
      threads);
}

bool HeuristicRunner::mapOverThreads(function_ref<ComputeOp()> copyOp,
                                     int64_t threads) {
  ComputeOp copy = copyOp();
  unsigned nested = 0; // the copy's own scopes (add_copy's nest)
  for (auto s = copy->getParentOfType<ScopeOp>();
       s && llvm::hasSingleElement(s.getBodyBlock()) &&
       s.getMapping() == Mapping::seq;
       s = s->getParentOfType<ScopeOp>())
    ++nested;
  if (!nested)
    return false;
  unsigned top = copy.getDepth() - nested;
  auto scopeAtDepth = [&](unsigned d) {
    return scopeAt(scopeLoc(copyOp(), d));
  };
  unsigned inner = copy.getDepth() - 1; // the innermost non-vector scope
  // (Vectorized, the tile's outer part stays at `inner`.)
  vectorizeGPU(scopeAtDepth(inner));
  SmallVector<unsigned> marked;
  int64_t left = threads;
  // (At most 3 nested block scopes: a GPU block's dimensions.)
  for (unsigned d = inner + 1; d-- > top && left > 1 && marked.size() < 3;) {
    int64_t size = scopeAtDepth(d).getSize();
    if (size <= left) {
      marked.push_back(d);
      left /= size; // (a scope of 66 leaves 3 of 256 threads, 58 idle)
      continue;
    }
    // Threads outside (the largest divisor that fits), each thread's
    // loop inside the other threads.
    int64_t q = left;
    while (size % q)
      --q;
    if (q < 2)
      break;
    if (!apply(TileScopeOp::make(scopeLoc(copyOp(), d), size / q)))
      return false;
    for (unsigned k = 0; k < marked.size(); ++k)
      if (!apply(SwapNestedScopesOp::make(scopeLoc(copyOp(), d + 1 + k))))
        return false;
    marked.push_back(d);
    break;
  }
  for (unsigned d : marked)
    if (!apply(GpuBlockOp::make(scopeLoc(copyOp(), d))))
      return false;
  return !marked.empty();
}

bool HeuristicRunner::transposeThroughShared(unsigned index) {
  ScopeOp top = topScope(index);
  SmallVector<ScopeOp> chain = perfectChain(top);
  Block &body = chain.back().getBodyBlock();
  if (!llvm::hasSingleElement(body) || !isa<ComputeOp>(body.front()) ||
      chain.size() < 2 || chain.size() > 3)
    return false;
  for (ScopeOp s : chain)
    if (!independent(s))
      return false;
  ComputeOp op = cast<ComputeOp>(body.front());
  ArrayRef<LinearForm> out = op.getOut().getLinearForms();
  std::optional<unsigned> jDepth, iDepth;
  for (unsigned d = 0; d < chain.size(); ++d)
    if (out.back().coeff(d) == 1)
      jDepth = d;
  if (!jDepth)
    return false;
  SmallVector<std::string> transposed;
  for (Attribute input : op.getInputs()) {
    auto access = dyn_cast<AccessAttr>(input);
    if (!access ||
        !env.getKernel().lookupArray(access.getArray().getValue()).isInput())
      continue;
    ArrayRef<LinearForm> forms = access.getLinearForms();
    if (forms.back().coeff(*jDepth) != 0 || !usesVariable(forms, *jDepth))
      continue;
    for (unsigned d = 0; d < chain.size(); ++d)
      if (d != *jDepth && forms.back().coeff(d) == 1)
        iDepth = d;
    if (iDepth && !llvm::is_contained(transposed, access.getArray().getValue()))
      transposed.push_back(access.getArray().getValue().str());
  }
  if (!iDepth || transposed.size() != 1)
    return false;
  int64_t iSize = chain[*iDepth].getSize(), jSize = chain[*jDepth].getSize();
  if (iSize % kTransposeTile || jSize % kTransposeTile)
    return false;
  size_t before = env.getMoves().size();
  std::string id = scopeLocation(op, 0);
  auto at = [&](unsigned depth) { return scopeLoc(*findOpAt(id), depth); };
  enum Role { Other, IO, JO, II, JI };
  SmallVector<Role> roles;
  for (unsigned d = 0; d < chain.size(); ++d)
    roles.push_back(d == *iDepth ? II : d == *jDepth ? JI : Other);
  bool ok = true;
  for (Role whole : {II, JI}) {
    unsigned d = unsigned(llvm::find(roles, whole) - roles.begin());
    ok = ok && apply(TileScopeOp::make(at(d), kTransposeTile));
    roles.insert(roles.begin() + d, whole == II ? IO : JO);
  }
  for (size_t pass = 0; ok && pass < roles.size(); ++pass)
    for (size_t d = 0; ok && d + 1 < roles.size(); ++d)
      if (roles[d] > roles[d + 1]) {
        ok = apply(SwapNestedScopesOp::make(at(unsigned(d))));
        std::swap(roles[d], roles[d + 1]);
      }
  unsigned grid = unsigned(roles.size()) - 2;
  for (unsigned d = 0; ok && d < grid; ++d)
    ok = apply(GpuGridOp::make(at(d)));
  std::string name;
  if (ok) {
    name = getFreshCopyName(env.getKernel(), transposed.front());
    ok = apply(AddCopyOp::make(at(grid), transposed.front(), name));
  }
  if (ok) {
    unsigned last =
        unsigned(env.getKernel().lookupArray(name).getShape().size()) - 1;
    ok = apply(PadDimOp::make(bufferLoc(name, last), 1)) &&
         apply(SetLocationOp::make(bufferLoc(name), BufferLocation::shared)) &&
         perBlockBytes(env.getKernel().lookupArray(name)) <=
             target.maxSharedBytes / 2 &&
         mapCopyOverThreads(name, 256) &&
         mapOverThreads([&] { return *findOpAt(id); }, 256);
  }
  if (!ok)
    rollBackTo(before);
  return ok;
}

void HeuristicRunner::gpuExpert() {
  transposeOperands();
  bringParallelOutward();
  alignForFusion();
  naive(/*keepProducts=*/true);
  for (unsigned index = 0; topScope(index);) {
    // (A part that splitOffProducts tiled is mapped already.)
    if (topScope(index).getMapping() == Mapping::seq &&
        !tileProductForGPU(index) &&
        (splitKForGPU(index) || splitOffProducts(index)))
      continue; // its parts, from the first
    if (topScope(index).getMapping() == Mapping::seq)
      mapNestForGPU(index);
    ++index;
  }
  sharedTemporaries();
}

bool HeuristicRunner::splitKForGPU(unsigned index) {
  SmallVector<ScopeOp> chain = perfectChain(topScope(index));
  // The products, by location (moves replace the kernel).
  SmallVector<std::string> ids;
  topScope(index).walk([&](ComputeOp op) {
    if (isProduct(op))
      ids.push_back(scopeLocation(op, 0));
  });
  size_t before = env.getMoves().size();
  SmallVector<std::string> partials;
  std::optional<unsigned> depth; // of the chunks' scope
  for (const std::string &id : ids) {
    // (A split before renumbers the locations of later updates of the
    // same array: then stop there.)
    std::optional<ComputeOp> found = findOpAt(id);
    if (!found || !isProduct(*found))
      break;
    ComputeOp op = *found;
    auto k = dyn_cast<ScopeOp>(op->getParentOp());
    SmallVector<LinearForm> out(op.getOut().getLinearForms());
    if (!k || !llvm::hasSingleElement(k.getBodyBlock()) ||
        k.getMapping() != Mapping::seq || usesVariable(out, k.getDepth()))
      continue;
    int64_t outputs = 1;
    for (auto s = k->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>())
      if (usesVariable(out, s.getDepth()))
        outputs *= s.getSize();
    if (outputs >= 2 * kEnoughThreads)
      continue; // enough for tiles
    int64_t size = k.getSize(), chunks = 2;
    while (outputs * chunks < 8 * kEnoughThreads)
      chunks *= 2;
    if (size % chunks || size / chunks < 256 ||
        (depth && *depth != k.getDepth()) || k.getDepth() > chain.size())
      continue;
    unsigned d = k.getDepth();
    if (!apply(TileScopeOp::make(scopeLoc(op, d), size / chunks)))
      continue;
    std::string partial = splitReductionAt(scopeLoc(*findOpAt(id), d),
                                           op.getOut().getArray().getValue());
    if (partial.empty()) {
      rollBackTo(before);
      return false;
    }
    // (The partials' buffer holds one array, of its own name.)
    unsigned rank = env.getKernel().lookupArray(partial).getShape().size();
    for (unsigned dim = rank - 1; dim-- > 0;)
      if (!apply(PermuteDimsOp::make(bufferLoc(partial, dim)))) {
        rollBackTo(before);
        return false;
      }
    partials.push_back(partial);
    depth = d;
  }
  if (partials.empty())
    return false;
  // The partial products' loops apart from the rest.
  auto isPartialLoop = [&](Operation &node) {
    bool found = false;
    if (isa<ScopeOp>(node))
      node.walk([&](ComputeOp c) {
        found |= c.getReduction() != Reduction::none &&
                 llvm::is_contained(partials, c.getOut().getArray().getValue());
      });
    return found;
  };
  if (*depth == 0 ||
      !fissionNest(index, *depth, [&](Operation &child, Operation &next) {
        return isPartialLoop(child) || isPartialLoop(next);
      })) {
    rollBackTo(before);
    return false;
  }
  return true;
}

bool HeuristicRunner::splitOffProducts(unsigned index) {
  size_t before = env.getMoves().size();
  unsigned pieces = separateProducts(index);
  bool tiled = false;
  for (unsigned i = index; pieces > 1 && i < index + pieces; ++i)
    tiled |= tileProductForGPU(i);
  if (!tiled)
    rollBackTo(before);
  return tiled;
}

unsigned HeuristicRunner::topScopes() {
  unsigned n = 0;
  while (topScope(n))
    ++n;
  return n;
}

bool HeuristicRunner::isProductLoop(Operation &op) {
  bool product = false;
  if (isa<ScopeOp>(op))
    op.walk([&](ComputeOp c) { product |= isProduct(c); });
  return product;
}

unsigned HeuristicRunner::separateProducts(unsigned index) {
  SmallVector<ScopeOp> chain = perfectChain(topScope(index));
  Block &body = chain.back().getBodyBlock();
  bool products = false, others = false;
  for (Operation &child : body) {
    bool product = isProductLoop(child);
    products |= product;
    others |= !product && isa<ScopeOp>(child);
  }
  if (!products || !others)
    return 1;
  unsigned scopes = topScopes();
  if (!fissionNest(index, unsigned(chain.size()),
                   [](Operation &child, Operation &next) {
                     return isProductLoop(child) || isProductLoop(next);
                   }))
    return 1;
  unsigned made = topScopes() - scopes + 1, total = 0;
  for (unsigned i = 0, at = index; i < made; ++i) {
    unsigned n = separateProducts(at);
    at += n;
    total += n;
  }
  return total;
}

void HeuristicRunner::sharedTemporaries() {
  int64_t used = 0;
  SmallVector<std::pair<std::string, int64_t>> candidates;
  for (BufferOp buffer : env.getKernel().getBuffers()) {
    int64_t bytes = perBlockBytes(buffer);
    if (buffer.getLocation() == BufferLocation::shared)
      used += bytes;
    else if (buffer.isTemporary() && bytes <= target.maxSharedBytes / 2 &&
             !isThreadPrivateElement(buffer, accessesOf(buffer)))
      // (A temporary of one element a thread stays in its registers.)
      candidates.push_back({buffer.getSymName().str(), bytes});
  }
  for (auto [name, bytes] : candidates)
    if (used + bytes <= target.maxSharedBytes &&
        apply(SetLocationOp::make(bufferLoc(name), BufferLocation::shared)))
      used += bytes;
}
