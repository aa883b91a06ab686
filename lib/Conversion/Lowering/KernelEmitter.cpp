//===- KernelEmitter.cpp - The tree walk and accesses of every lowering ---===//
//
// A scope becomes a loop (or, when vector-mapped, the lanes of the vector
// operations it holds), a compute operation becomes loads, the primitive
// (ScalarOps.cpp) and a store. Targets override what mapped scopes become.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/KernelEmitter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

using namespace mlir;
using namespace mlir::perfdojo;

ScopeOp KernelEmitter::findExcessUnrolling(Operation *root) {
  int64_t copies = 0;
  ScopeOp excess;
  root->walk([&](ComputeOp op) {
    int64_t n = 1;
    ScopeOp outermost;
    for (Operation *p = op->getParentOp(); p && p != root; p = p->getParentOp())
      if (auto scope = dyn_cast<ScopeOp>(p);
          scope && scope.getMapping() == Mapping::unroll) {
        n = std::min<int64_t>(n * int64_t(scope.getSize()),
                              kMaxUnrolledCopies + 1);
        outermost = scope;
      }
    copies = std::min(copies + n, kMaxUnrolledCopies + 1);
    if (copies > kMaxUnrolledCopies) {
      excess = outermost;
      return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  return excess;
}

LogicalResult KernelEmitter::lowerBlock(Block &block) {
  for (Operation &op : block)
    if (failed(lowerNode(op)))
      return failure();
  return success();
}

LogicalResult KernelEmitter::lowerNode(Operation &op) {
  if (isa<BufferOp>(op))
    return success();
  if (auto scope = dyn_cast<ScopeOp>(op))
    return lowerScope(scope);
  return lowerCompute(cast<ComputeOp>(op));
}

LogicalResult KernelEmitter::lowerScope(ScopeOp scope) {
  switch (scope.getMapping()) {
  case Mapping::seq:
  case Mapping::unroll:
    return lowerLoop(scope);
  case Mapping::vector:
    return lowerVectorScope(scope);
  default:
    return scope.emitError()
           << "a scope mapped " << stringifyMapping(scope.getMapping())
           << " has no meaning on the " << targetName() << "; the "
           << targetName() << " lowering cannot run it";
  }
}

scf::ForOp KernelEmitter::beginLoop(ScopeOp scope) {
  loc = scope.getLoc();
  auto loop =
      scf::ForOp::create(b, loc, constantIndex(0),
                         constantIndex(scope.getSize()), constantIndex(1));
  if (scope.getMapping() == Mapping::unroll)
    unrolled.push_back(loop);
  b.setInsertionPoint(loop.getBody()->getTerminator());
  ivs.push_back(loop.getInductionVar());
  return loop;
}

LogicalResult KernelEmitter::lowerLoop(ScopeOp scope) {
  OpBuilder::InsertionGuard guard(b);
  beginLoop(scope);
  LogicalResult result = lowerBlock(scope.getBodyBlock());
  ivs.pop_back();
  return result;
}

LogicalResult KernelEmitter::checkUnrolling() {
  if (ScopeOp excess = findExcessUnrolling(kernel))
    return excess.emitError()
           << "the unrolled scopes would copy the kernel's operations more "
              "than "
           << kMaxUnrolledCopies << " times in all, which the " << targetName()
           << " lowering refuses, " << kCodeSizeRefusal
           << "; unroll fewer or smaller scopes";
  return success();
}

LogicalResult KernelEmitter::lowerVectorScope(ScopeOp scope) {
  loc = scope.getLoc();
  if (lanes.active)
    return scope.emitError("a vector scope inside a vector scope");
  enterLanes(scope);
  ivs.push_back(Value());
  LogicalResult result = success();
  for (Operation &op : scope.getBodyBlock()) {
    auto compute = dyn_cast<ComputeOp>(op);
    if (!compute) {
      result = op.emitError("a vector scope may hold only operations");
      break;
    }
    if (failed(lowerCompute(compute))) {
      result = failure();
      break;
    }
  }
  ivs.pop_back();
  lanes = {};
  return result;
}

LogicalResult KernelEmitter::unrollLoops() {
  if (unrolled.empty())
    return success();
  // What the function will hold once unrolled: each operation counts the
  // product of the trip counts of the unrolled loops around it. Refused
  // before unrolling, naming the outermost unrolled loop whose subtree
  // would hold the most.
  llvm::DenseMap<Operation *, int64_t> trips;
  for (scf::ForOp loop : unrolled)
    trips[loop] = *getConstantIntValue(loop.getUpperBound());
  constexpr int64_t cap = int64_t(1) << 40;
  auto add = [&](int64_t &sum, int64_t n) { sum = std::min(sum + n, cap); };
  Operation *function = unrolled.front()->getParentOp();
  while (!isa<FunctionOpInterface>(function))
    function = function->getParentOp();
  int64_t operations = 0, accesses = 0, writes = 0;
  llvm::DenseMap<Operation *, int64_t> under; // per outermost unrolled loop
  function->walk([&](Operation *op) {
    if (op == function)
      return;
    int64_t n = 1;
    Operation *outermost = nullptr;
    for (Operation *p = op->getParentOp(); p != function;
         p = p->getParentOp())
      if (auto it = trips.find(p); it != trips.end()) {
        n = std::min(n * std::max<int64_t>(it->second, 1), cap);
        outermost = p;
      }
    add(operations, n);
    if (outermost)
      add(under[outermost], n);
    bool reads = hasEffect<MemoryEffects::Read>(op);
    bool stores = hasEffect<MemoryEffects::Write>(op);
    if (reads || stores)
      add(accesses, n);
    if (stores)
      add(writes, n);
  });
  int64_t pairs = accesses > 0 && writes > cap / accesses ? cap
                                                          : accesses * writes;
  if (operations > kMaxEmittedOperations || pairs > kMaxAccessPairs) {
    auto worst = llvm::max_element(
        under, [](auto &a, auto &b) { return a.second < b.second; });
    InFlightDiagnostic error = mlir::emitError(worst->first->getLoc());
    error << "once unrolled, the " << targetName() << " code of kernel '"
          << kernel.getSymName() << "' would hold " << operations
          << " operations (this unrolled scope " << worst->second << "), "
          << accesses << " of them memory accesses, " << writes
          << " writes; ";
    if (operations > kMaxEmittedOperations)
      error << "more than the " << kMaxEmittedOperations
            << " operations the lowering accepts";
    else
      error << "accesses times writes, " << pairs
            << ", pass the lowering's bound of " << kMaxAccessPairs
            << " (LLVM's time grows with that product)";
    error << ", " << kCodeSizeRefusal << "; unroll fewer or "
             "smaller scopes, or vectorize along a contiguous dimension (an "
             "access gathered lane by lane is a load per lane)";
    return error;
  }
  // Innermost first, so that an unrolled outer scope copies unrolled bodies.
  for (scf::ForOp loop : llvm::reverse(unrolled)) {
    int64_t trips = *getConstantIntValue(loop.getUpperBound());
    if (trips > 1 && failed(loopUnrollByFactor(loop, trips)))
      return kernel.emitError("cannot unroll a scope of ") << trips;
  }
  unrolled.clear();
  return success();
}

KernelEmitter::OffsetForm KernelEmitter::offsetForm(AccessAttr access) {
  ArrayRef<int64_t> shape = bufferOf(access.getArray().getValue()).getShape();
  SmallVector<LinearForm> forms(access.getLinearForms());
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int d = int(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  OffsetForm offset;
  offset.steps.assign(ivs.size(), 0);
  for (auto [d, form] : llvm::enumerate(forms)) {
    offset.start += form.constant * strides[d];
    for (unsigned v = 0; v < form.getNumDims() && v < ivs.size(); ++v)
      offset.steps[v] += form.coeffs[v] * strides[d];
  }
  return offset;
}

bool KernelEmitter::isOffsetMultipleOf(AccessAttr access, int64_t width) {
  // Every scope variable other than the lanes must step by a multiple of
  // the width, and the start must be one.
  OffsetForm offset = offsetForm(access);
  if (offset.start % width)
    return false;
  for (unsigned v = 0; v < ivs.size(); ++v)
    if (ivs[v] && offset.steps[v] % width)
      return false;
  return true;
}

SmallVector<Value> KernelEmitter::indices(AccessAttr access, int64_t lane) {
  BufferOp buffer = bufferOf(access.getArray().getValue());
  SmallVector<Value> result;
  for (auto [d, form] : llvm::enumerate(access.getLinearForms())) {
    if (isCollapsed(buffer, d)) {
      result.push_back(constantIndex(0));
      continue;
    }
    int64_t constant = form.constant;
    Value sum;
    for (unsigned v = 0; v < form.getNumDims(); ++v) {
      int64_t c = form.coeffs[v];
      if (!c)
        continue;
      if (!ivs[v]) { // the lane variable
        constant += c * lane;
        continue;
      }
      Value term = ivs[v];
      if (c != 1)
        term = arith::MulIOp::create(b, loc, term, constantIndex(c));
      sum = sum ? arith::AddIOp::create(b, loc, sum, term).getResult() : term;
    }
    if (!sum)
      sum = constantIndex(constant);
    else if (constant)
      sum = arith::AddIOp::create(b, loc, sum, constantIndex(constant));
    if (int64_t reuse = buffer.getReuse()[d])
      sum = arith::RemUIOp::create(b, loc, sum, constantIndex(reuse));
    result.push_back(sum);
  }
  return result;
}

void KernelEmitter::enterLanes(ScopeOp vec, ComputeOp maskable) {
  int64_t size = vec.getSize();
  lanes = {vec, vec.getDepth(), size, true, size};
  if (!maskable || llvm::isPowerOf2_64(size) || !maskedLanes())
    return;
  bool floats =
      isa<FloatType>(elementType(maskable.getOut().getArray().getValue()));
  for (Attribute input : maskable.getInputs())
    if (auto access = dyn_cast<AccessAttr>(input))
      floats &= isa<FloatType>(elementType(access.getArray().getValue()));
  if (floats)
    lanes.registerWidth = int64_t(llvm::NextPowerOf2(size));
}

Value KernelEmitter::laneMask() {
  return vector::CreateMaskOp::create(
      b, loc, VectorType::get({lanes.registerWidth}, b.getI1Type()),
      ValueRange{constantIndex(lanes.width)});
}

KernelEmitter::Pattern KernelEmitter::classify(AccessAttr access) {
  SmallVector<LinearForm> forms(access.getLinearForms());
  BufferOp buffer = bufferOf(access.getArray().getValue());
  bool invariant = true, contiguous = true;
  for (auto [d, form] : llvm::enumerate(forms)) {
    int64_t c = form.coeff(lanes.depth);
    invariant &= c == 0;
    bool last = d + 1 == forms.size();
    contiguous &= last ? c == 1 && buffer.getReuse()[d] == 0 : c == 0;
  }
  return invariant    ? Pattern::Invariant
         : contiguous ? Pattern::Contiguous
                      : Pattern::Scattered;
}

Value KernelEmitter::load(AccessAttr access) {
  Value memref = memrefs.lookup(access.getArray().getValue());
  Type scalar = elementType(access.getArray().getValue());
  if (!lanes.active)
    return memref::LoadOp::create(b, loc, memref, indices(access, 0));
  switch (classify(access)) {
  case Pattern::Invariant:
    return vector::BroadcastOp::create(
        b, loc, vectorOf(scalar),
        memref::LoadOp::create(b, loc, memref, indices(access, 0)));
  case Pattern::Contiguous:
    return emitVectorLoad(cast<VectorType>(vectorOf(scalar)), memref,
                          indices(access, 0), access);
  case Pattern::Scattered: {
    if (transposesInRegisters())
      if (Value block = loadTransposed(access))
        return block;
    SmallVector<Value> elements;
    for (int64_t lane = 0; lane < lanes.width; ++lane)
      elements.push_back(
          memref::LoadOp::create(b, loc, memref, indices(access, lane)));
    // The masked lanes: zeros, never read from memory.
    if (lanes.masked())
      elements.append(lanes.registerWidth - lanes.width,
                      constant(0, scalar));
    return vector::FromElementsOp::create(
        b, loc, cast<VectorType>(vectorOf(scalar)), elements);
  }
  }
  llvm_unreachable("unknown pattern");
}

Value KernelEmitter::loadTransposed(AccessAttr access) {
  int64_t width = lanes.width;
  auto around = lanes.scope ? lanes.scope->getParentOfType<ScopeOp>()
                            : ScopeOp();
  if (!around || lanes.masked() || !llvm::isPowerOf2_64(width) ||
      width < 2 || around.getMapping() != Mapping::unroll ||
      int64_t(around.getSize()) != width)
    return {};
  unsigned u = around.getDepth(), v = lanes.depth;
  auto loop = cast<scf::ForOp>(ivs[u].getParentBlock()->getParentOp());
  auto key = std::make_pair(Attribute(access), loop.getOperation());
  if (Value block = transposedBlocks.lookup(key))
    return vector::ExtractOp::create(b, loc, block,
                                     ArrayRef<OpFoldResult>{ivs[u]});
  BufferOp buffer = bufferOf(access.getArray().getValue());
  SmallVector<LinearForm> forms(access.getLinearForms());
  unsigned last = forms.size() - 1;
  if (forms[last].coeff(u) != 1 || forms[last].coeff(v) != 0 ||
      buffer.getReuse()[last] != 0 || isCollapsed(buffer, last))
    return {};
  unsigned laneDims = 0;
  for (unsigned d = 0; d < last; ++d) {
    if (forms[d].coeff(u))
      return {};
    if (int64_t c = forms[d].coeff(v)) {
      if (c != 1)
        return {};
      ++laneDims;
    }
  }
  if (laneDims != 1)
    return {};
  // Nothing under U may write the buffer: its block is read before U.
  bool written = false;
  around.walk([&](ComputeOp op) {
    written |= bufferOf(op.getOut().getArray().getValue()) == buffer;
  });
  if (written)
    return {};

  Type scalar = elementType(access.getArray().getValue());
  auto rowType = VectorType::get({width}, scalar);
  Value memref = memrefs.lookup(access.getArray().getValue());
  Value block;
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(loop);
    // Row j: lane j's elements over U's iterations, contiguous.
    Value iv = ivs[u];
    ivs[u] = constantIndex(0);
    SmallVector<Value> rows;
    for (int64_t j = 0; j < width; ++j)
      rows.push_back(
          vector::LoadOp::create(b, loc, rowType, memref, indices(access, j)));
    ivs[u] = iv;
    // Swap the off-diagonal h x h blocks of every 2h x 2h block, for h =
    // 1, 2, ..., W/2: the transpose.
    for (int64_t h = 1; h < width; h *= 2) {
      SmallVector<int64_t> low, high;
      for (int64_t p = 0; p < width; ++p) {
        bool upper = p & h;
        low.push_back(upper ? width + p - h : p);
        high.push_back(upper ? width + p : p + h);
      }
      for (int64_t i = 0; i < width; ++i) {
        if (i & h)
          continue;
        Value top = rows[i], bottom = rows[i + h];
        rows[i] = vector::ShuffleOp::create(b, loc, top, bottom, low);
        rows[i + h] = vector::ShuffleOp::create(b, loc, top, bottom, high);
      }
    }
    // Row u of the transpose is what iteration u of U reads.
    auto blockType = VectorType::get({width, width}, scalar);
    block = arith::ConstantOp::create(
        b, loc, blockType, cast<TypedAttr>(b.getZeroAttr(blockType)));
    for (int64_t i = 0; i < width; ++i)
      block = vector::InsertOp::create(b, loc, rows[i], block,
                                       ArrayRef<int64_t>{i});
  }
  transposedBlocks[key] = block;
  return vector::ExtractOp::create(b, loc, block,
                                   ArrayRef<OpFoldResult>{ivs[u]});
}

Value KernelEmitter::emitVectorLoad(VectorType type, Value memref,
                                    ValueRange at, AccessAttr access) {
  // Masked lanes read nothing (they may lie past the buffer's end) and
  // hold zeros.
  if (lanes.active && lanes.masked())
    return vector::MaskedLoadOp::create(
        b, loc, type, memref, at, laneMask(),
        constant(0, vectorOf(type.getElementType())));
  return vector::LoadOp::create(b, loc, type, memref, at);
}

void KernelEmitter::emitVectorStore(Value value, Value memref, ValueRange at,
                                    AccessAttr access, bool reduce) {
  if (lanes.active && lanes.masked()) {
    vector::MaskedStoreOp::create(b, loc, memref, at, laneMask(), value);
    return;
  }
  vector::StoreOp::create(b, loc, value, memref, at);
}

void KernelEmitter::store(ComputeOp op, Value value) {
  AccessAttr out = op.getOut();
  Value memref = memrefs.lookup(out.getArray().getValue());
  Type type = elementType(out.getArray().getValue());
  Reduction reduction = op.getReduction();
  bool reduce = reduction != Reduction::none;
  auto storeScalar = [&](Value v, int64_t lane) {
    SmallVector<Value> at = indices(out, lane);
    if (reduce)
      v = binary(getCombiner(reduction),
                 memref::LoadOp::create(b, loc, memref, at), v, type);
    memref::StoreOp::create(b, loc, v, memref, at);
  };
  if (!lanes.active)
    return storeScalar(value, 0);
  switch (classify(out)) {
  case Pattern::Contiguous: {
    SmallVector<Value> at = indices(out, 0);
    if (reduce)
      value = binary(
          getCombiner(reduction),
          emitVectorLoad(cast<VectorType>(value.getType()), memref, at, out),
          value, type);
    emitVectorStore(value, memref, at, out, reduce);
    return;
  }
  case Pattern::Invariant:
    if (reduce) {
      // A horizontal reduction of the lanes, then one update.
      // The lanes may be combined in any order (vectorize's legality treats
      // the updates of one reduction as commuting): a tree, not a chain.
      return storeScalar(reduceLanes(value, reduction, type), 0);
    }
    // Every lane writes the same element: the last one's value stays.
    return storeScalar(vector::ExtractOp::create(
                           b, loc, value, ArrayRef<int64_t>{lanes.width - 1}),
                       0);
  case Pattern::Scattered:
    for (int64_t lane = 0; lane < lanes.width; ++lane)
      storeScalar(
          vector::ExtractOp::create(b, loc, value, ArrayRef<int64_t>{lane}),
          lane);
    return;
  }
}

LogicalResult KernelEmitter::lowerCompute(ComputeOp op) {
  loc = op.getLoc();
  Type outType = elementType(op.getOut().getArray().getValue());
  std::string error;
  Value value = compute(op, outType, error);
  if (!value)
    return op.emitError(error);
  store(op, value);
  return success();
}
