//===- HeuristicRunner.cpp - Stepping, locations, cpuExpert ---------------===//
//
// Members of HeuristicRunner (HeuristicRunner.h, where each is documented).
//
//===----------------------------------------------------------------------===//

#include "HeuristicRunner.h"
#include "PerfDojo/Transforms/Dependence.h"
#include "PerfDojo/Transforms/MoveOps.h"
#include "PerfDojo/Transforms/Moves.h"

using namespace mlir;
using namespace mlir::perfdojo;
using namespace mlir::perfdojo::moves;
using namespace mlir::perfdojo::heuristics;

ScopeOp HeuristicRunner::scopeOf(const MoveInstance &move) {
  return scopeAt(move.location);
}

bool HeuristicRunner::apply(const MoveInstance &move) {
  if (steps >= kMaxSteps)
    return false;
  std::string reason;
  if (failed(env.step(move, reason)))
    return false;
  ++steps;
  return true;
}

void HeuristicRunner::rollBackTo(size_t size) { undoTo(env, size); }

bool HeuristicRunner::usesVariable(ArrayRef<LinearForm> forms, unsigned depth) {
  return llvm::any_of(forms,
                      [&](const LinearForm &f) { return f.coeff(depth) != 0; });
}

int64_t HeuristicRunner::visitsPerElement(ComputeOp op,
                                          ArrayRef<LinearForm> forms) {
  int64_t visits = 1;
  for (auto s = op->getParentOfType<ScopeOp>(); s;
       s = s->getParentOfType<ScopeOp>())
    if (!usesVariable(forms, s.getDepth()))
      visits = std::min<int64_t>(visits * s.getSize(), int64_t(1) << 40);
  return visits;
}

void HeuristicRunner::naive(bool keepProducts) {
  auto accept = [&](const MoveInstance &move) {
    if (!keepProducts)
      return true;
    ScopeOp scope = scopeOf(move);
    auto next =
        scope ? dyn_cast_or_null<ScopeOp>(scope->getNextNode()) : ScopeOp();
    return scope && next && !reducesProduct(scope) && !reducesProduct(next);
  };
  while (exhaust<JoinScopesOp>(accept) + exhaust<ReuseBufferOp>())
    ;
}

bool HeuristicRunner::reducesProduct(ScopeOp scope) {
  bool found = false;
  scope.walk([&](ComputeOp op) {
    found |= isProduct(op) &&
             !usesVariable(op.getOut().getLinearForms(), scope.getDepth());
  });
  return found;
}

bool HeuristicRunner::recomputeTemporaries() {
  auto cheap = [](OpKind kind) {
    switch (kind) {
    case OpKind::copy:
    case OpKind::neg:
    case OpKind::abs:
    case OpKind::add:
    case OpKind::sub:
    case OpKind::mul:
    case OpKind::max:
    case OpKind::min:
    case OpKind::fma:
      return true;
    default:
      return false;
    }
  };
  KernelOp kernel = env.getKernel();
  auto elements = [](BufferOp buffer) {
    int64_t n = 1;
    for (int64_t size : buffer.getShape())
      n = std::min<int64_t>(n * size, int64_t(1) << 40);
    return n;
  };
  SmallVector<std::pair<std::string, SmallVector<MoveLocation>>> todo;
  for (BufferOp buffer : kernel.getBuffers()) {
    if (!buffer.isTemporary() || buffer.getArrays().size() != 1)
      continue;
    StringRef name = buffer.getSymName();
    SmallVector<ComputeOp> writers;
    // The first reading operation of each top-level nest, in order.
    SmallVector<ComputeOp> passes;
    Operation *lastTop = nullptr;
    for (ComputeOp op : collectComputeOps(kernel)) {
      if (op.getOut().getArray().getValue() == name)
        writers.push_back(op);
      bool reads = llvm::any_of(op.getInputs(), [&](Attribute input) {
        auto access = dyn_cast<AccessAttr>(input);
        return access && access.getArray().getValue() == name;
      });
      Operation *top = op;
      while (!isa<KernelOp>(top->getParentOp()))
        top = top->getParentOp();
      if (reads && top != lastTop) {
        passes.push_back(op);
        lastTop = top;
      }
    }
    if (writers.size() != 1 || passes.size() < 2 ||
        writers.front().getReduction() != Reduction::none ||
        !cheap(writers.front().getKind()))
      continue;
    unsigned large = 0;
    for (Attribute input : writers.front().getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        large += elements(kernel.lookupArray(access.getArray().getValue())) >=
                 elements(buffer);
    if (large != 1)
      continue;
    SmallVector<MoveLocation> locations;
    for (ComputeOp op : ArrayRef(passes).drop_front())
      locations.push_back(scopeLoc(op, 0));
    todo.push_back({name.str(), std::move(locations)});
  }
  bool recomputed = false;
  for (auto &[array, locations] : todo)
    for (const MoveLocation &location : locations) {
      size_t before = env.getMoves().size();
      std::string copy = getFreshCopyName(env.getKernel(), array);
      if (apply(AddCopyOp::make(location, array, copy)) &&
          apply(RecomputeOp::make(bufferLoc(copy))))
        recomputed = true;
      else
        rollBackTo(before);
    }
  return recomputed;
}

MoveLocation HeuristicRunner::scopeLoc(ComputeOp op, unsigned depth) {
  MoveLocation loc;
  loc.name = op.getOut().getArray().getValue().str();
  env.getKernel().walk<WalkOrder::PreOrder>([&](ComputeOp other) {
    if (other == op)
      return WalkResult::interrupt();
    loc.ordinal += other.getOut().getArray().getValue() == loc.name;
    return WalkResult::advance();
  });
  loc.index = depth;
  return loc;
}

std::string HeuristicRunner::scopeLocation(ComputeOp op, unsigned depth) {
  return scopeLoc(op, depth).str(LocationKind::Scope);
}

MoveLocation HeuristicRunner::bufferLoc(StringRef name, unsigned dim) {
  MoveLocation loc;
  loc.name = name.str();
  loc.index = dim;
  return loc;
}

ScopeOp HeuristicRunner::scopeAt(Operation *op, unsigned depth) {
  auto s = op->getParentOfType<ScopeOp>();
  while (s && s.getDepth() > depth)
    s = s->getParentOfType<ScopeOp>();
  return s && s.getDepth() == depth ? s : ScopeOp();
}

BufferOp HeuristicRunner::bufferHolding(StringRef array) {
  for (BufferOp buffer : env.getKernel().getBuffers())
    if (llvm::is_contained(buffer.getArrays().getAsValueRange<StringAttr>(),
                           array))
      return buffer;
  return {};
}

int64_t HeuristicRunner::elementBytes(BufferOp buffer) {
  return std::max<int64_t>(1,
                           buffer.getElementType().getIntOrFloatBitWidth() / 8);
}

int64_t HeuristicRunner::arrayBytes(StringRef array) {
  BufferOp buffer = bufferHolding(array);
  if (!buffer)
    return 0;
  int64_t bytes = elementBytes(buffer);
  for (unsigned d = 0; d < buffer.getShape().size(); ++d)
    bytes *= buffer.getStoredExtent(d);
  return bytes;
}

ComputeOp HeuristicRunner::writerOf(StringRef array) {
  ComputeOp writer;
  env.getKernel().walk([&](ComputeOp c) {
    if (c.getOut().getArray().getValue() == array)
      writer = c;
  });
  return writer;
}

bool HeuristicRunner::isolate(StringRef id, unsigned d) {
  ComputeOp op = *findOpAt(id);
  Operation *child = op;
  while (cast<ScopeOp>(child->getParentOp()).getDepth() != d)
    child = child->getParentOp();
  // Both locations are taken before the first step replaces the kernel;
  // splitting does not change them.
  std::optional<MoveInstance> after, beforeIt;
  if (child->getNextNode())
    after = SplitScopeOp::make(scopeLoc(op, d));
  if (Operation *node = child->getPrevNode())
    node->walk(
        [&](ComputeOp c) { beforeIt = SplitScopeOp::make(scopeLoc(c, d)); });
  for (const std::optional<MoveInstance> &move : {after, beforeIt})
    if (move && !apply(*move))
      return false;
  return true;
}

std::optional<ComputeOp> HeuristicRunner::findOpAt(StringRef id) {
  std::optional<ComputeOp> result;
  env.getKernel().walk([&](ComputeOp op) {
    if (!result && scopeLocation(op, 0) == id)
      result = op;
  });
  return result;
}

ScopeOp HeuristicRunner::topScope(unsigned index) {
  unsigned n = 0;
  for (Operation &op : env.getKernel().getBodyBlock())
    if (auto scope = dyn_cast<ScopeOp>(op); scope && n++ == index)
      return scope;
  return {};
}

ComputeOp HeuristicRunner::firstCompute(ScopeOp scope) {
  ComputeOp first;
  scope.walk<WalkOrder::PreOrder>([&](ComputeOp op) {
    first = op;
    return WalkResult::interrupt();
  });
  return first;
}

MoveLocation HeuristicRunner::locate(ScopeOp scope) {
  return scopeLoc(firstCompute(scope), scope.getDepth());
}

MoveLocation HeuristicRunner::atDepth(MoveLocation loc, unsigned depth) {
  loc.index = depth;
  return loc;
}

SmallVector<ScopeOp> HeuristicRunner::perfectChain(ScopeOp scope) {
  SmallVector<ScopeOp> chain = {scope};
  for (Block *body = &scope.getBodyBlock(); llvm::hasSingleElement(*body);) {
    auto inner = dyn_cast<ScopeOp>(body->front());
    if (!inner)
      break;
    chain.push_back(inner);
    body = &inner.getBodyBlock();
  }
  return chain;
}

bool HeuristicRunner::independent(ScopeOp scope) {
  MoveLocation location = locate(scope);
  for (const MoveInstance &move :
       {ParallelizeOp::make(location), GpuBlockOp::make(location)}) {
    std::string reason;
    if (succeeded(checkMove(env.getKernel(), move, reason)))
      return true;
  }
  return false;
}

ScopeOp HeuristicRunner::scopeAt(const MoveLocation &location) {
  std::string error;
  FailureOr<ResolvedLocation> loc =
      resolveLocation(env.getKernel(), LocationKind::Scope, location, error);
  return succeeded(loc) ? loc->scope : ScopeOp();
}

int64_t HeuristicRunner::iterations(ArrayRef<ScopeOp> chain) {
  int64_t n = 1;
  for (ScopeOp s : chain)
    n = std::min<int64_t>(n * s.getSize(), int64_t(1) << 40);
  return n;
}

ComputeOp HeuristicRunner::firstComputeIn(Operation &op) {
  if (auto compute = dyn_cast<ComputeOp>(op))
    return compute;
  return firstCompute(cast<ScopeOp>(op));
}

bool HeuristicRunner::cpuExpert(bool recompute) {
  bool recomputed = recompute && recomputeTemporaries();
  transposeOperands();
  bringParallelOutward();
  bringContiguousInward();
  alignForFusion();
  naive(/*keepProducts=*/true);
  shrinkTemporaries();
  splitLongReductions();
  fuseReductionsWithProducers();
  shrinkTemporaries();
  vectorize();
  blockTransposes();
  isolateReductions();
  registerBlock();
  unrollAccumulators();
  parallelizeBlocks();
  parallelizeInner();
  orderLoopsAroundTiles();
  shrinkToVectors();
  return recomputed;
}
