//===- LoopRules.cpp - Loop order, fusion, threads ------------------------===//
//
// Members of HeuristicRunner (HeuristicRunner.h, where each is documented).
//
//===----------------------------------------------------------------------===//

#include "HeuristicRunner.h"
#include "PerfDojo/Conversion/Lowering/KernelEmitter.h"
#include "PerfDojo/Transforms/MoveOps.h"
#include "PerfDojo/Transforms/Moves.h"
#include "llvm/ADT/StringSet.h"
#include <set>

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::perfdojo::moves;
using namespace mlir::perfdojo::heuristics;

void HeuristicRunner::transposeOperands() {
  SmallVector<std::pair<MoveLocation, std::pair<std::string, unsigned>>>
      todo; // (scope location, (array, dimension of the columns))
  env.getKernel().walk([&](ComputeOp op) {
    if (!isProduct(op))
      return;
    SmallVector<LinearForm> out(op.getOut().getLinearForms());
    std::optional<unsigned> columns;
    for (auto s = op->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>())
      if (out.back().coeff(s.getDepth()) != 0)
        columns = columns ? std::optional<unsigned>(~0u) : s.getDepth();
    if (!columns || *columns == ~0u)
      return;
    for (Attribute input : op.getInputs()) {
      auto access = dyn_cast<AccessAttr>(input);
      if (!access)
        continue;
      SmallVector<LinearForm> in(access.getLinearForms());
      if (in.size() < 2 || in.back().coeff(*columns) != 0)
        continue;
      bool lastReduces = false;
      for (auto s = op->getParentOfType<ScopeOp>(); s;
           s = s->getParentOfType<ScopeOp>())
        lastReduces |= in.back().coeff(s.getDepth()) != 0 &&
                       !usesVariable(out, s.getDepth());
      if (visitsPerElement(op, in) < target.vectorWidth)
        continue;
      for (unsigned d = 0; d + 1 < in.size(); ++d)
        if (lastReduces && in[d].coeff(*columns) != 0)
          todo.push_back(
              {scopeLoc(op, 0), {access.getArray().getValue().str(), d}});
    }
  });
  for (auto &[location, what] : todo) {
    auto &[array, dim] = what;
    size_t before = env.getMoves().size();
    std::string name = array + "_t";
    bool ok = apply(AddCopyOp::make(location, array, name));
    unsigned rank =
        ok ? env.getKernel().lookupArray(name).getShape().size() : 0;
    for (unsigned d = dim; ok && d + 1 < rank; ++d)
      ok = apply(PermuteDimsOp::make(bufferLoc(name, d)));
    if (!ok) {
      rollBackTo(before);
      continue;
    }
    hoistCopy(name);
  }
}

void HeuristicRunner::hoistCopy(StringRef copy) {
  llvm::StringSet<> operands;
  env.getKernel().walk([&](ComputeOp op) {
    bool readsCopy = false;
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        readsCopy |= access.getArray().getValue() == copy;
    if (readsCopy && op.getReduction() != Reduction::none)
      for (Attribute input : op.getInputs())
        if (auto access = dyn_cast<AccessAttr>(input))
          if (access.getArray().getValue() != copy)
            operands.insert(access.getArray().getValue());
  });
  auto copyNest = [&] {
    ScopeOp nest;
    env.getKernel().walk([&](ComputeOp op) {
      if (!nest && op.getOut().getArray().getValue() == copy)
        nest = scopeAt(op, 0);
    });
    return nest;
  };
  // The nests to pass: up to the first that computes an operand (the
  // buffers come before every nest).
  unsigned passes = 0, distance = 0;
  ScopeOp nest = copyNest();
  for (auto scope = nest ? dyn_cast_or_null<ScopeOp>(nest->getPrevNode())
                         : ScopeOp();
       scope; scope = dyn_cast_or_null<ScopeOp>(scope->getPrevNode())) {
    ++distance;
    scope.walk([&](ComputeOp op) {
      if (operands.contains(op.getOut().getArray().getValue()))
        passes = distance;
    });
  }
  size_t before = env.getMoves().size();
  for (unsigned i = 0; i < passes; ++i) {
    auto previous = cast<ScopeOp>(copyNest()->getPrevNode());
    ComputeOp first;
    previous.walk([&](ComputeOp op) {
      if (!first)
        first = op;
    });
    if (!first || !apply(SwapSiblingOp::make(scopeLoc(first, 0)))) {
      rollBackTo(before);
      return;
    }
  }
}

bool HeuristicRunner::onlyOperations(ScopeOp scope) {
  return llvm::all_of(scope.getBodyBlock(),
                      [](Operation &op) { return isa<ComputeOp>(op); });
}

void HeuristicRunner::vectorize() {
  int64_t width = target.vectorWidth;
  // An innermost scope of more than the width, not a multiple of it,
  // first peels its largest multiple of the width (54 -> 48 + 6); what
  // remains narrower than the width (a convolution's 6 leftover columns)
  // becomes one vector when an access runs along it: in a register tile
  // the CPU lowering computes 6 lanes as 8 with masked loads and stores,
  // one instruction per operation where 4 + 2 lanes took two.
  auto peel = [&](ScopeOp scope) -> int64_t {
    int64_t size = scope.getSize();
    if (scope.getMapping() == Mapping::seq && size > width && size % width &&
        onlyOperations(scope))
      return size - size % width;
    return 0;
  };
  for (bool progress = true; progress;) {
    std::optional<MoveInstance> move;
    env.getKernel().walk([&](ScopeOp scope) {
      if (int64_t count = move ? 0 : peel(scope)) {
        auto first = cast<ComputeOp>(scope.getBodyBlock().front());
        move = PeelScopeOp::make(scopeLoc(first, scope.getDepth()), count);
      }
    });
    progress = move && apply(*move);
  }
  // Tile each innermost sequential scope larger than the width.
  exhaust<TileScopeOp>([&](const MoveInstance &move) {
    if (move.location.params.empty() ||
        move.location.params[0] != std::to_string(width))
      return false;
    ScopeOp scope = scopeOf(move);
    return scope && scope.getMapping() == Mapping::seq &&
           int64_t(scope.getSize()) > width && onlyOperations(scope);
  });
  // One operation per scope of the width (or a remainder), then
  // vectorize those.
  exhaust<SplitScopeOp>([&](const MoveInstance &move) {
    ScopeOp scope = scopeOf(move);
    return scope && (int64_t(scope.getSize()) == width || isRemainder(scope)) &&
           scope.getMapping() == Mapping::seq && onlyOperations(scope);
  });
  exhaust<VectorizeOp>();
}

void HeuristicRunner::splitLongReductions() {
  const int64_t threads = target.threads;
  if (target.gpu || threads < 2)
    return;
  // Visited reductions, and the partial results made here (whose
  // reductions are split already).
  SmallVector<std::string> done, partials;
  while (steps < kMaxSteps) {
    std::optional<ComputeOp> found;
    ScopeOp split;
    env.getKernel().walk([&](ComputeOp op) {
      if (found || llvm::is_contained(done, scopeLocation(op, 0)) ||
          llvm::is_contained(partials, op.getOut().getArray().getValue()))
        return;
      if (ScopeOp first = longReductionScope(op)) {
        found = op;
        split = first;
      }
    });
    if (!found)
      return;
    std::string id = scopeLocation(*found, 0);
    done.push_back(id);
    int64_t size = split.getSize();
    unsigned depth = split.getDepth();
    if (!sharesOutEvenly(size, /*least=*/1)) {
      (void)shareInnerScope(id, depth);
      continue;
    }
    size_t before = env.getMoves().size();
    bool ok = size == threads ||
              apply(TileScopeOp::make(scopeLoc(*found, depth), size / threads));
    std::string partial;
    for (unsigned n = 0; ok && partial.empty() && n < 100; ++n) {
      std::string name = found->getOut().getArray().getValue().str() + "_part" +
                         (n ? std::to_string(n) : "");
      if (apply(SplitReductionOp::make(scopeLoc(*findOpAt(id), depth), name)))
        partial = name;
    }
    ok = !partial.empty() &&
         apply(ParallelizeOp::make(partialLocation(partial, depth)));
    if (!ok) {
      rollBackTo(before);
      (void)shareInnerScope(id, depth);
    } else {
      partials.push_back(partial);
    }
  }
}

bool HeuristicRunner::shareInnerScope(StringRef id, unsigned depth) {
  std::optional<ComputeOp> op = findOpAt(id);
  if (!op)
    return false;
  SmallVector<LinearForm> forms(op->getOut().getLinearForms());
  ScopeOp inner;
  for (auto s = dyn_cast<ScopeOp>((*op)->getParentOp());
       s && s.getDepth() > depth; s = dyn_cast<ScopeOp>(s->getParentOp()))
    if (usesVariable(forms, s.getDepth()))
      inner = s;
  if (!inner || inner.getMapping() != Mapping::seq ||
      !sharesOutEvenly(inner.getSize(), target.vectorWidth))
    return false;
  size_t before = env.getMoves().size();
  unsigned d = inner.getDepth();
  bool ok = apply(
      TileScopeOp::make(scopeLoc(*op, d), inner.getSize() / target.threads));
  for (unsigned k = d; ok && k-- > depth;)
    ok = apply(SwapNestedScopesOp::make(scopeLoc(*findOpAt(id), k)));
  if (!ok || !apply(ParallelizeOp::make(scopeLoc(*findOpAt(id), depth)))) {
    rollBackTo(before);
    return false;
  }
  return true;
}

ScopeOp HeuristicRunner::longReductionScope(ComputeOp op) {
  if (op.getReduction() == Reduction::none)
    return ScopeOp();
  SmallVector<LinearForm> forms(op.getOut().getLinearForms());
  // The scopes around the reduction, outermost first.
  SmallVector<ScopeOp> around;
  for (auto s = dyn_cast<ScopeOp>(op->getParentOp()); s;
       s = dyn_cast<ScopeOp>(s->getParentOp()))
    around.insert(around.begin(), s);
  int64_t outside = 1, inside = 1;
  ScopeOp first;
  for (ScopeOp s : around) {
    if (s.getMapping() != Mapping::seq && s.getMapping() != Mapping::parallel)
      return ScopeOp();
    bool independent = usesVariable(forms, s.getDepth());
    if (!first && !independent)
      first = s;
    if (!first)
      outside *= s.getSize();
    else
      inside = std::min<int64_t>(inside * s.getSize(), int64_t(1) << 40);
  }
  // Enough independent work around it, or too little to split.
  if (!first || outside >= 4 * int64_t(target.threads) ||
      inside < (int64_t(1) << 16) || first.getMapping() != Mapping::seq)
    return ScopeOp();
  int64_t ops = 0;
  first.walk([&](ComputeOp) { ++ops; });
  return ops == 1 ? first : ScopeOp();
}

bool HeuristicRunner::splitsReductionInside(ScopeOp scope) {
  bool found = false;
  scope.walk([&](ComputeOp op) {
    ScopeOp first = found ? ScopeOp() : longReductionScope(op);
    if (first && first != scope && scope->isAncestor(first) &&
        sharesOutEvenly(first.getSize(), /*least=*/1))
      found = true;
  });
  return found;
}

void HeuristicRunner::fuseReductionsWithProducers() {
  if (target.gpu)
    return;
  SmallVector<std::string> tried;
  auto writes = [](ScopeOp scope) {
    llvm::StringSet<> arrays;
    scope.walk([&](ComputeOp op) {
      arrays.insert(op.getOut().getArray().getValue());
    });
    return arrays;
  };
  auto readsAny = [](Operation *root, const llvm::StringSet<> &arrays,
                     bool reductionsOnly) {
    bool found = false;
    root->walk([&](ComputeOp op) {
      if (reductionsOnly && op.getReduction() == Reduction::none)
        return;
      for (Attribute input : op.getInputs())
        if (auto access = dyn_cast<AccessAttr>(input))
          found |= arrays.contains(access.getArray().getValue());
    });
    return found;
  };
  while (steps < kMaxSteps) {
    ScopeOp producer, consumer;
    unsigned between = 0;
    env.getKernel().walk<WalkOrder::PreOrder>([&](ScopeOp p) {
      if (producer || p.getMapping() == Mapping::vector)
        return;
      llvm::StringSet<> written = writes(p);
      unsigned n = 0;
      for (Operation *next = p->getNextNode(); next && n <= 4;
           next = next->getNextNode(), ++n) {
        if (readsAny(next, written, /*reductionsOnly=*/false)) {
          // (Not into a product's nest, which registerBlock tiles alone.)
          auto r = dyn_cast<ScopeOp>(next);
          bool product = false;
          if (r)
            r.walk([&](ComputeOp op) { product |= isProduct(op); });
          if (r && !product && readsAny(r, written, /*reductionsOnly=*/true) &&
              !llvm::is_contained(
                  tried, scopeLocation(firstCompute(p), p.getDepth()))) {
            producer = p;
            consumer = r;
            between = n;
          }
          return;
        }
      }
    });
    if (!producer)
      return;
    ComputeOp first = firstCompute(producer);
    std::string id = scopeLocation(first, 0);
    unsigned depth = producer.getDepth();
    tried.push_back(scopeLocation(first, depth));
    size_t before = env.getMoves().size();
    // The producer's scope as the consumer's: tiled as the consumer's
    // was (its one child the tile), and mapped alike.
    int64_t size = producer.getSize(), wanted = consumer.getSize();
    auto inner = llvm::hasSingleElement(consumer.getBodyBlock())
                     ? dyn_cast<ScopeOp>(consumer.getBodyBlock().front())
                     : ScopeOp();
    bool ok = true;
    if (size != wanted)
      ok = inner && size == wanted * int64_t(inner.getSize()) &&
           apply(TileScopeOp::make(scopeLoc(first, depth), inner.getSize()));
    if (ok && consumer.getMapping() == Mapping::parallel)
      ok = apply(ParallelizeOp::make(scopeLoc(*findOpAt(id), depth)));
    else if (ok)
      ok = consumer.getMapping() == Mapping::seq;
    for (unsigned k = 0; ok && k < between; ++k)
      ok = apply(SwapSiblingOp::make(scopeLoc(*findOpAt(id), depth)));
    ok = ok && apply(JoinScopesOp::make(scopeLoc(*findOpAt(id), depth)));
    if (!ok) {
      rollBackTo(before);
      continue;
    }
    // The nested scopes below, as far as they join.
    for (unsigned d = depth + 1;
         apply(JoinScopesOp::make(scopeLoc(*findOpAt(id), d))); ++d)
      ;
  }
}

bool HeuristicRunner::isRemainder(ScopeOp scope) {
  int64_t size = scope.getSize();
  if (scope.getDepth() == 0 || scope.getMapping() != Mapping::seq ||
      size <= 1 || size >= target.vectorWidth || !onlyOperations(scope) ||
      contiguityScore(scope, scope.getDepth()) <= 0)
    return false;
  auto around = dyn_cast<ScopeOp>(scope->getParentOp());
  bool carried = true;
  scope.walk([&](ComputeOp op) {
    SmallVector<LinearForm> forms(op.getOut().getLinearForms());
    if (usesVariable(forms, scope.getDepth()))
      return;
    carried &= op.getReduction() != Reduction::none && around &&
               around.getMapping() == Mapping::seq &&
               !usesVariable(forms, around.getDepth());
  });
  return carried;
}

void HeuristicRunner::parallelize() {
  exhaust<ParallelizeOp>([&](const MoveInstance &move) {
    ScopeOp scope = scopeOf(move);
    // Not around a scope that runs in parallel already (a reduction
    // split across the threads): nested, it would run on one thread.
    return scope && scope.getDepth() == 0 &&
           scope.getSize() >= target.threads && !hasParallel(scope);
  });
}

void HeuristicRunner::parallelizeBlocks() {
  parallelize();
  if (target.threads < 2)
    return;
  for (unsigned index = 0; steps < kMaxSteps; ++index) {
    // The index-th top-level scope, if sequential with nothing parallel
    // inside and divisible among the threads.
    ScopeOp scope;
    unsigned n = 0;
    for (Operation &op : env.getKernel().getBodyBlock())
      if (auto s = dyn_cast<ScopeOp>(op); s && n++ == index)
        scope = s;
    if (!scope)
      return;
    ComputeOp first;
    scope.walk([&](ComputeOp c) {
      if (!first)
        first = c;
    });
    if (hasParallel(scope) || !first || scope.getMapping() != Mapping::seq ||
        !splitsIntoBlocks(scope))
      continue;
    llvm::StringSet<> touched;
    forEachAccess(scope, [&](ComputeOp, AccessAttr access, bool) {
      touched.insert(access.getArray().getValue());
    });
    MoveLocation block = scopeLoc(first, 0);
    size_t before = env.getMoves().size();
    if (!apply(TileScopeOp::make(block, scope.getSize() / target.threads)))
      continue;
    SmallVector<std::string> temporaries;
    for (BufferOp buffer : env.getKernel().getBuffers())
      if (buffer.isTemporary() && touched.contains(buffer.getSymName()))
        temporaries.push_back(buffer.getSymName().str());
    for (const std::string &name : temporaries) {
      if (!apply(AddDimOp::make(bufferLoc(name), /*position=*/0,
                                /*depth=*/0)))
        continue;
      if (!apply(MaterializeDimsOp::make(bufferLoc(name, 0))))
        (void)env.undo();
    }
    if (!apply(ParallelizeOp::make(block)))
      rollBackTo(before);
  }
}

bool HeuristicRunner::splitsIntoBlocks(ScopeOp scope) const {
  return scope.getDepth() == 0 && sharesOutEvenly(scope.getSize());
}

bool HeuristicRunner::sharesOutEvenly(int64_t count, int64_t least) const {
  return count % target.threads == 0 && count >= least * target.threads;
}

bool HeuristicRunner::hasParallel(ScopeOp scope) {
  bool found = false;
  scope.walk([&](ScopeOp s) { found |= s.getMapping() == Mapping::parallel; });
  return found;
}

void HeuristicRunner::parallelizeInner() {
  if (target.threads < 2)
    return;
  while (steps < kMaxSteps) {
    std::optional<MoveInstance> best;
    unsigned bestDepth = ~0u;
    for (const MoveInstance &move : legal<ParallelizeOp>()) {
      ScopeOp scope = scopeOf(move);
      if (!scope || scope.getDepth() == 0 || scope.getDepth() >= bestDepth ||
          scope.getSize() < target.threads || hasParallel(scope))
        continue;
      int64_t entries = 1;
      bool sequential = true;
      for (auto s = scope->getParentOfType<ScopeOp>(); s;
           s = s->getParentOfType<ScopeOp>()) {
        entries *= s.getSize();
        sequential &=
            s.getMapping() == Mapping::seq || s.getMapping() == Mapping::unroll;
      }
      if (sequential && entries <= kMaxParallelEntries &&
          vectorInstances(scope) >= kMinParallelWork * target.threads) {
        best = move;
        bestDepth = scope.getDepth();
      }
    }
    if (!best || !apply(*best))
      return;
  }
}

int64_t HeuristicRunner::vectorInstances(ScopeOp scope) {
  int64_t total = 0;
  scope.walk([&](ComputeOp op) {
    int64_t n = 1;
    for (auto s = op->getParentOfType<ScopeOp>(); s;
         s = s->getParentOfType<ScopeOp>()) {
      if (s.getMapping() != Mapping::vector)
        n *= s.getSize();
      if (s == scope)
        break;
    }
    total += n;
  });
  return total;
}

HeuristicRunner::AccessUse HeuristicRunner::classify(AccessAttr access,
                                                     unsigned depth) const {
  SmallVector<LinearForm> forms(access.getLinearForms());
  AccessUse use = AccessUse::Unused;
  for (auto [d, form] : llvm::enumerate(forms)) {
    int64_t c = form.coeff(depth);
    if (c == 0)
      continue;
    if (d + 1 != forms.size())
      return AccessUse::Scattered;
    if (c == 1)
      use = AccessUse::Contiguous;
    else if (!target.gpu && c >= 2 && c <= KernelEmitter::kMaxLaneStride)
      use = AccessUse::Strided;
    else
      return AccessUse::Scattered;
  }
  return use;
}

HeuristicRunner::AccessUse HeuristicRunner::classify(AccessAttr access,
                                                     unsigned depth,
                                                     bool isOutput) const {
  AccessUse use = classify(access, depth);
  return isOutput && use == AccessUse::Strided ? AccessUse::Scattered : use;
}

void HeuristicRunner::forEachAccess(
    Operation *root, function_ref<void(ComputeOp, AccessAttr, bool)> visit) {
  root->walk([&](ComputeOp op) {
    visit(op, op.getOut(), /*isOutput=*/true);
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        visit(op, access, /*isOutput=*/false);
  });
}

int HeuristicRunner::contiguityScore(ScopeOp scope, unsigned depth) const {
  int score = 0;
  forEachAccess(scope, [&](ComputeOp, AccessAttr access, bool isOutput) {
    switch (classify(access, depth, isOutput)) {
    case AccessUse::Unused:
      return;
    case AccessUse::Contiguous:
      score += isOutput ? 2 : 1;
      return;
    case AccessUse::Strided:
      score += 1;
      return;
    case AccessUse::Scattered:
      score -= 1;
      return;
    }
  });
  return score;
}

bool HeuristicRunner::scatters(ScopeOp scope, unsigned depth) const {
  bool scattered = false;
  forEachAccess(scope, [&](ComputeOp, AccessAttr access, bool isOutput) {
    scattered |= classify(access, depth, isOutput) == AccessUse::Scattered;
  });
  return scattered;
}

bool HeuristicRunner::outputsUse(ScopeOp scope, unsigned depth,
                                 bool reductionsOnly) {
  bool all = true;
  scope.walk([&](ComputeOp op) {
    if (reductionsOnly && op.getReduction() == Reduction::none)
      return;
    all &= usesVariable(op.getOut().getLinearForms(), depth);
  });
  return all;
}

bool HeuristicRunner::transposingCopy(ScopeOp scope, ScopeOp inner) {
  if (!llvm::hasSingleElement(inner.getBodyBlock()))
    return false;
  auto copy = dyn_cast<ComputeOp>(inner.getBodyBlock().front());
  if (!copy || copy.getKind() != OpKind::copy ||
      copy.getReduction() != Reduction::none)
    return false;
  auto in = dyn_cast<AccessAttr>(copy.getInputs()[0]);
  return in && writesContiguously(scope) &&
         classify(in, inner.getDepth()) == AccessUse::Contiguous &&
         int64_t(inner.getSize()) % target.vectorWidth == 0;
}

void HeuristicRunner::bringContiguousInward() {
  exhaust<SwapNestedScopesOp>([&](const MoveInstance &move) {
    ScopeOp scope = scopeOf(move);
    if (!scope)
      return false;
    auto inner = cast<ScopeOp>(scope.getBodyBlock().front());
    if (isWindow(inner) && writesContiguously(scope) &&
        !scatters(scope, scope.getDepth()))
      return true;
    if (transposingCopy(scope, inner))
      return true;
    if (scatters(scope, scope.getDepth()))
      return false;
    return contiguityScore(scope, scope.getDepth()) >
           contiguityScore(scope, inner.getDepth());
  });
}

bool HeuristicRunner::isWindow(ScopeOp scope) {
  bool window = true;
  scope.walk([&](ScopeOp s) { window &= int64_t(s.getSize()) <= kMaxWindow; });
  scope.walk([&](ComputeOp op) {
    window &= op.getReduction() != Reduction::none &&
              !usesVariable(op.getOut().getLinearForms(), scope.getDepth());
  });
  return window;
}

bool HeuristicRunner::writesContiguously(ScopeOp scope) {
  if (int64_t(scope.getSize()) < target.vectorWidth)
    return false;
  bool contiguous = true;
  scope.walk([&](ComputeOp op) {
    contiguous &=
        classify(op.getOut(), scope.getDepth()) == AccessUse::Contiguous;
  });
  return contiguous;
}

void HeuristicRunner::blockTransposes() {
  int64_t width = target.vectorWidth;
  SmallVector<std::string> done;
  for (bool progress = true; progress && steps < kMaxSteps;) {
    progress = false;
    std::optional<std::pair<ComputeOp, unsigned>> found;
    env.getKernel().walk([&](ComputeOp op) {
      auto lanes = dyn_cast<ScopeOp>(op->getParentOp());
      if (found || !lanes || lanes.getMapping() != Mapping::vector ||
          llvm::is_contained(done, scopeLocation(op, 0)))
        return;
      for (Attribute input : op.getInputs()) {
        auto access = dyn_cast<AccessAttr>(input);
        if (!access ||
            classify(access, lanes.getDepth()) != AccessUse::Scattered)
          continue;
        // The innermost enclosing scope along which it is contiguous.
        for (auto s = dyn_cast<ScopeOp>(lanes->getParentOp()); s;
             s = dyn_cast<ScopeOp>(s->getParentOp()))
          if (s.getMapping() == Mapping::seq &&
              classify(access, s.getDepth()) == AccessUse::Contiguous &&
              int64_t(s.getSize()) > width) {
            found = {op, s.getDepth()};
            return;
          }
      }
    });
    if (!found)
      return;
    auto [op, depth] = *found;
    std::string id = scopeLocation(op, 0);
    done.push_back(id);
    unsigned lanesDepth = op->getParentOfType<ScopeOp>().getDepth();
    size_t before = env.getMoves().size();
    // A block as wide as a cache line along S where S allows (16 floats
    // of 64 bytes, two vectors of AVX2's 8), so that each line the
    // gathered rows touch is read whole while it is in the cache: S is
    // tiled by the line, the line by the vector width, and both parts
    // sink to right above the lanes, the vector-wide one innermost.
    BufferOp out = bufferHolding(op.getOut().getArray().getValue());
    int64_t line = std::max<int64_t>(width, kLineBytes / elementBytes(out));
    int64_t size = scopeAt(op, depth).getSize();
    // A size that the width does not divide (a 2048 x 3000 transpose's
    // 3000 rows of y): the largest multiple of the line (else of the
    // width) is blocked, the rest peeled off and left gathered lane by
    // lane (8 of 3000 rows; 11.2 ms, 17 % of DRAM, with all of them
    // gathered).
    if (size % width) {
      int64_t covered =
          size - size % line > line ? size - size % line : size - size % width;
      std::optional<ComputeOp> now;
      if (!apply(PeelScopeOp::make(scopeLoc(op, depth), covered)) ||
          !(now = findOpAt(id)) ||
          int64_t(scopeAt(*now, depth).getSize()) != covered) {
        rollBackTo(before);
        progress = true;
        continue;
      }
      op = *now;
      size = covered;
    }
    bool wholeLines =
        line > width && line % width == 0 && size % line == 0 && size > line;
    // After the tiles, the parts are at depth + 1 (and depth + 2) and
    // the lanes one (two) deeper than now; each interchange sinks a part
    // by one, the inner part first, until the parts sit right above the
    // lanes.
    unsigned parts = wholeLines ? 2 : 1;
    bool ok = apply(
        TileScopeOp::make(scopeLoc(op, depth), wholeLines ? line : width));
    if (ok && wholeLines) {
      std::optional<ComputeOp> now = findOpAt(id);
      ok = now && apply(TileScopeOp::make(scopeLoc(*now, depth + 1), width));
    }
    // A part that holds more than the scope it sinks into (the lanes
    // peeled into a vector scope and its remainder, a 1999-wide row's
    // 124 x 16 and 15) is split around that scope first.
    for (unsigned part = parts; ok && part >= 1; --part)
      for (unsigned d = depth + part; ok && d < lanesDepth + part - 1; ++d) {
        std::optional<ComputeOp> now;
        ok = isolate(id, d) && (now = findOpAt(id)) &&
             apply(SwapNestedScopesOp::make(scopeLoc(*now, d)));
      }
    // The vector-wide part unrolled: the lowering then reads the
    // block a row per lane and transposes it in registers.
    if (ok) {
      std::optional<ComputeOp> now = findOpAt(id);
      ok = now && apply(UnrollOp::make(scopeLoc(*now, lanesDepth + parts - 1)));
    }
    if (!ok)
      rollBackTo(before);
    progress = true;
  }
}

void HeuristicRunner::bringParallelOutward() {
  exhaust<SwapNestedScopesOp>([&](const MoveInstance &move) {
    ScopeOp scope = scopeOf(move);
    if (!scope)
      return false;
    auto inner = cast<ScopeOp>(scope.getBodyBlock().front());
    return !outputsUse(scope, scope.getDepth(), /*reductionsOnly=*/true) &&
           outputsUse(scope, inner.getDepth(), /*reductionsOnly=*/false);
  });
}

void HeuristicRunner::alignForFusion() {
  exhaust<SwapNestedScopesOp>([&](const MoveInstance &move) {
    ScopeOp scope = scopeOf(move);
    if (!scope || scope.getDepth() != 0)
      return false;
    auto previous = dyn_cast_or_null<ScopeOp>(scope->getPrevNode());
    auto inner = cast<ScopeOp>(scope.getBodyBlock().front());
    return previous && previous.getSize() != scope.getSize() &&
           previous.getSize() == inner.getSize() &&
           outputsUse(scope, scope.getDepth(), /*reductionsOnly=*/false) &&
           outputsUse(scope, inner.getDepth(), /*reductionsOnly=*/false);
  });
}

void HeuristicRunner::shrinkTemporaries() {
  llvm::StringSet<> products, operands;
  // The dimensions of a product's operands indexed by a variable that
  // also indexes the output's rows or columns (its last two dimensions:
  // relu_ffn's rows of r, attention's query rows of pr): registerBlock's
  // tiles of the output hold several of them at once. (reuse_dims takes
  // them since a thread's slot counts as fixed while a row's scope runs;
  // reused, relu_ffn's product lost its 2-row tiles.)
  std::set<std::pair<std::string, unsigned>> outputRows;
  env.getKernel().walk([&](ComputeOp op) {
    if (!isProduct(op))
      return;
    products.insert(op.getOut().getArray().getValue());
    ArrayRef<LinearForm> out = op.getOut().getLinearForms();
    out = out.drop_front(out.size() - std::min<size_t>(out.size(), 2));
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input)) {
        operands.insert(access.getArray().getValue());
        for (auto [dim, form] : llvm::enumerate(access.getLinearForms()))
          for (unsigned d = 0; d < form.getNumDims(); ++d)
            if (form.coeff(d) && usesVariable(out, d))
              outputRows.insert(
                  {access.getArray().getValue().str(), unsigned(dim)});
      }
  });
  // The innermost dimension first: once an outer one shares its slot,
  // an inner one can no longer be reused where its scope runs again
  // for each outer index (an instance norm's d[n, c, h, w] kept all of
  // c, 800 KB a thread, where reusing c then n leaves one 12 KB plane).
  // The last dimension of a buffer of several stays when vectors can
  // run along it (an innermost loop indexes it at unit stride): reused,
  // it leaves one element, which vectorize cannot make a vector of (a
  // row statistic such as softmax's m[row] still becomes one slot). A
  // product's operands go outermost first: reused innermost first, the
  // rows of relu_ffn's r would become one slot, and the product's row
  // tiles need them.
  auto accept = [&](const MoveInstance &move) {
    if (products.contains(move.location.name) ||
        outputRows.count({move.location.name, move.location.index}) ||
        hostsThreads(move.location.name, move.location.index))
      return false;
    ArrayRef<int64_t> shape =
        env.getKernel().lookupArray(move.location.name).getShape();
    return operands.contains(move.location.name) || shape.size() == 1 ||
           move.location.index + 1 != shape.size() ||
           shape.back() < target.vectorWidth ||
           !vectorsRunAlong(move.location.name);
  };
  while (steps < kMaxSteps) {
    std::optional<MoveInstance> best;
    for (const MoveInstance &move : legal<ReuseDimsOp>()) {
      if (!accept(move))
        continue;
      if (best && move.location.name != best->location.name)
        break;
      if (!best || (!operands.contains(move.location.name) &&
                    move.location.index > best->location.index))
        best = move;
    }
    if (!best || !apply(*best))
      break;
  }
}

void HeuristicRunner::shrinkToVectors() {
  SmallVector<std::string> names;
  for (BufferOp buffer : env.getKernel().getBuffers())
    if (buffer.isTemporary())
      names.push_back(buffer.getSymName().str());
  // Whether every access indexes dimension `dim` of `buffer` by exactly
  // the variable of a vector scope.
  auto lanesOnly = [&](StringRef buffer, unsigned dim) {
    BufferOp op = env.getKernel().lookupBuffer(buffer);
    llvm::StringSet<> arrays;
    for (StringRef name : op.getArrays().getAsValueRange<StringAttr>())
      arrays.insert(name);
    bool lanes = true;
    forEachAccess(env.getKernel(), [&](ComputeOp compute, AccessAttr access,
                                       bool) {
      if (!arrays.contains(access.getArray().getValue()))
        return;
      const LinearForm &form = access.getLinearForms()[dim];
      unsigned n = form.getNumDims();
      lanes &= form.constant == 0 && n > 0 && form.coeff(n - 1) == 1 &&
               llvm::count_if(form.coeffs, [](int64_t c) { return c; }) == 1 &&
               scopeAt(compute, n - 1).getMapping() == Mapping::vector;
    });
    return lanes;
  };
  for (const std::string &name : names) {
    for (unsigned dim = env.getKernel().lookupBuffer(name).getShape().size();
         dim-- > 0;) {
      BufferOp buffer = env.getKernel().lookupBuffer(name);
      if (buffer.getReuse()[dim] != 0)
        continue;
      for (int64_t inner : getSplitDimSizes(buffer, dim)) {
        size_t before = env.getMoves().size();
        if (apply(SplitDimOp::make(bufferLoc(name, dim), inner)) &&
            lanesOnly(name, dim + 1) &&
            apply(ReuseDimsOp::make(bufferLoc(name, dim))))
          break;
        rollBackTo(before);
      }
    }
  }
}

void HeuristicRunner::isolateReductions() {
  exhaust<SplitScopeOp>([&](const MoveInstance &move) {
    ScopeOp scope = scopeOf(move);
    if (!scope || scope.getMapping() != Mapping::seq)
      return false;
    // Only loops whose children are vector scopes, at least one of them
    // a reduction and one a polynomial.
    bool reduction = false, polynomial = false;
    for (Operation &op : scope.getBodyBlock()) {
      auto inner = dyn_cast<ScopeOp>(op);
      if (!inner || inner.getMapping() != Mapping::vector)
        return false;
      inner.walk([&](ComputeOp compute) {
        reduction |= compute.getReduction() != Reduction::none;
        polynomial |= isPolynomial(compute.getKind());
      });
    }
    return reduction && polynomial &&
           !llvm::hasSingleElement(scope.getBodyBlock());
  });
}

bool HeuristicRunner::isPolynomial(OpKind kind) {
  switch (kind) {
  case OpKind::sqrt:
  case OpKind::rsqrt:
  case OpKind::floor:
  case OpKind::ceil:
  case OpKind::round:
    return false;
  default:
    return isFloatOnly(kind);
  }
}
