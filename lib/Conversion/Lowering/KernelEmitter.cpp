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
#include "mlir/Dialect/Utils/IndexingUtils.h"
#include "mlir/Interfaces/FunctionInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include <map>
#include <numeric>
#include <set>

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
    if (!foldedNests.contains(&op) && failed(lowerNode(op)))
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
  case Mapping::seq: {
    SmallVector<ScopeOp> unrolls;
    if (ComputeOp op = getRegisterTile(scope, unrolls))
      return lowerRegisterTile(scope, op, unrolls);
    return lowerLoop(scope);
  }
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
  if (prefetchesNextRows())
    prefetchNextRow(scope);
  prefetchAhead(scope);
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

/// The first vector scope of `op`, if `op` is a sequential scope whose
/// children are operations and vector scopes.
/// Bytes of an element of `buffer`.
static int64_t elementBytes(BufferOp buffer) {
  return (buffer.getElementType().getIntOrFloatBitWidth() + 7) / 8;
}

static ScopeOp passVector(Operation &op) {
  auto loop = dyn_cast<ScopeOp>(op);
  if (!loop || loop.getMapping() != Mapping::seq)
    return ScopeOp();
  ScopeOp vec;
  for (Operation &child : loop.getBodyBlock()) {
    auto inner = dyn_cast<ScopeOp>(child);
    if (!inner)
      continue;
    if (inner.getMapping() != Mapping::vector)
      return ScopeOp();
    if (!vec)
      vec = inner;
  }
  return vec;
}

std::optional<KernelEmitter::NextRowPrefetch>
KernelEmitter::findNextRowPrefetch(ScopeOp loop) {
  ScopeOp vec = passVector(*loop);
  auto row = dyn_cast<ScopeOp>(loop->getParentOp());
  if (!vec || !row || row.getMapping() != Mapping::seq || row.getSize() < 2)
    return std::nullopt;
  unsigned s = row.getDepth();
  // The first pass of loop's shape reading an input at an index that s
  // steps, contiguous along the lanes, and the next pass of that shape.
  auto sameShape = [&](ScopeOp other) {
    ScopeOp inner = passVector(*other);
    return inner && other.getSize() == loop.getSize() &&
           inner.getSize() == vec.getSize();
  };
  NextRowPrefetch found;
  for (Operation &child : row.getBodyBlock()) {
    ScopeOp pass = dyn_cast<ScopeOp>(child);
    if (!pass || !sameShape(pass))
      continue;
    if (found.first) {
      found.second = pass;
      break;
    }
    passVector(*pass).walk([&](ComputeOp op) {
      for (Attribute input : op.getInputs()) {
        auto access = dyn_cast<AccessAttr>(input);
        if (found.read || !access ||
            !bufferOf(access.getArray().getValue()).isInput())
          continue;
        SmallVector<LinearForm> forms(access.getLinearForms());
        bool steps = llvm::any_of(
            forms, [&](const LinearForm &f) { return f.coeff(s) != 0; });
        if (steps && classify(access) == Pattern::Contiguous)
          found.read = access;
      }
    });
    if (found.read)
      found.first = pass;
  }
  if (!found.second)
    return std::nullopt;
  BufferOp buffer = bufferOf(found.read.getArray().getValue());
  int64_t rowBytes =
      loop.getSize() * vec.getSize() *
      elementBytes(buffer);
  if (rowBytes > kMaxPrefetchedRowBytes)
    return std::nullopt;
  return found;
}

void KernelEmitter::prefetchNextRow(ScopeOp vec) {
  auto loop = dyn_cast<ScopeOp>(vec->getParentOp());
  if (!loop || passVector(*loop) != vec)
    return;
  std::optional<NextRowPrefetch> found = findNextRowPrefetch(loop);
  if (!found || found->second != loop)
    return;
  // The vector the first pass reads in the next row (clamped to A's rows;
  // rows read in either direction, x[7 - s, ...] too, stay in A).
  AccessAttr read = found->read;
  unsigned s = loop->getParentOfType<ScopeOp>().getDepth();
  ArrayRef<int64_t> shape = bufferOf(read.getArray().getValue()).getShape();
  Value memref = memrefs.lookup(read.getArray().getValue());
  SmallVector<Value> at = indices(read, 0);
  for (auto [d, form] : llvm::enumerate(read.getLinearForms())) {
    Value &index = at[d];
    if (int64_t c = form.coeff(s)) {
      index = arith::AddIOp::create(b, loc, index, constantIndex(c));
      index = arith::MaxSIOp::create(b, loc, index, constantIndex(0));
      index =
          arith::MinSIOp::create(b, loc, index, constantIndex(shape[d] - 1));
    }
  }
  memref::PrefetchOp::create(b, loc, memref, at, /*isWrite=*/false,
                             /*localityHint=*/2, /*isDataCache=*/true);
}

void KernelEmitter::hoistReciprocals(ScopeOp scope) {
  if (!reciprocalDivides() || lanes.active)
    return;
  SmallVector<ComputeOp> divisions;
  llvm::SmallPtrSet<Operation *, 8> written;
  scope.walk([&](ComputeOp op) {
    written.insert(bufferOf(op.getOut().getArray().getValue()));
    if (op.getKind() == OpKind::div && !reciprocals.contains(op))
      divisions.push_back(op);
  });
  unsigned depth = scope.getDepth();
  for (ComputeOp op : divisions) {
    Type type = elementType(op.getOut().getArray().getValue());
    auto divisor = dyn_cast<AccessAttr>(op.getInputs()[1]);
    if (!isa<FloatType>(type) || !divisor)
      continue;
    StringRef array = divisor.getArray().getValue();
    if (written.contains(bufferOf(array)) ||
        llvm::any_of(divisor.getLinearForms(), [&](const LinearForm &form) {
          return form.getNumDims() > depth;
        }))
      continue;
    loc = op.getLoc();
    Value element = convert(memref::LoadOp::create(b, loc, memrefs.lookup(array),
                                                   indices(divisor, 0)),
                            elementType(array), type);
    reciprocals[op] =
        arith::DivFOp::create(b, loc, constant(1, type), element);
  }
}

bool KernelEmitter::readBefore(ScopeOp loop, BufferOp buffer) {
  for (Operation *p = loop->getPrevNode(); p; p = p->getPrevNode()) {
    bool reads = false;
    p->walk([&](ComputeOp op) {
      for (Attribute input : op.getInputs())
        if (auto access = dyn_cast<AccessAttr>(input))
          reads |= bufferOf(access.getArray().getValue()) == buffer;
    });
    if (reads)
      return true;
  }
  return false;
}

void KernelEmitter::prefetchAhead(ScopeOp vec) {
  int64_t aheadBytes = prefetchAheadBytes();
  auto loop = dyn_cast<ScopeOp>(vec->getParentOp());
  if (aheadBytes <= 0 || !loop || loop.getMapping() != Mapping::seq)
    return;
  int64_t width = vec.getSize();
  llvm::SmallPtrSet<Operation *, 4> done;
  for (Operation &child : vec.getBodyBlock()) {
    auto op = dyn_cast<ComputeOp>(child);
    if (!op)
      continue;
    for (Attribute input : op.getInputs()) {
      auto access = dyn_cast<AccessAttr>(input);
      if (!access)
        continue;
      BufferOp buffer = bufferOf(access.getArray().getValue());
      int64_t bytes = elementBytes(buffer);
      if (!buffer.isInput() || done.contains(buffer) ||
          computeProduct(buffer.getShape()) * bytes < kMinPrefetchedInputBytes)
        continue;
      // Consecutive lanes, consecutive vectors in L's iterations.
      OffsetForm offset = offsetForm(access);
      if (offset.steps[vec.getDepth()] != 1 ||
          offset.steps[loop.getDepth()] != width)
        continue;
      int64_t ahead = std::max<int64_t>(aheadBytes / bytes, 1);
      // The stream goes on through the scopes around L whose next
      // iteration starts at most `ahead` elements past the end of the
      // current one's (the next row of a row-major input; a row's few
      // remaining elements that another vector scope reads).
      // Data that a scope around L reads again in each of its iterations
      // (gamma[j] in every row) is in the caches after the first.
      int64_t span = int64_t(loop.getSize()) * width;
      bool streams = true, reused = false;
      for (auto s = loop->getParentOfType<ScopeOp>(); s;
           s = s->getParentOfType<ScopeOp>()) {
        int64_t step = offset.steps[s.getDepth()];
        reused |= step == 0 && s.getSize() > 1;
        streams &= step > 0 && step <= span + ahead;
        if (streams)
          span += step * (int64_t(s.getSize()) - 1);
      }
      if (reused || span * bytes < kMinStreamBytes)
        continue;
      done.insert(buffer);
      // A pass over a row after one that read it finds it in the caches;
      // a first pass whose next row a later pass prefetches
      // (prefetchNextRow) finds its row in L2.
      if (readBefore(loop, buffer))
        continue;
      if (prefetchesNextRows())
        if (std::optional<NextRowPrefetch> next = findNextRowPrefetch(loop);
            next && next->first == loop &&
            bufferOf(next->read.getArray().getValue()) == buffer)
          continue;
      // The element `ahead` past the vector's first in the row-major
      // layout, clamped to the buffer.
      ArrayRef<int64_t> shape = buffer.getShape();
      SmallVector<Value> at = indices(access, 0);
      Value flat = at.back();
      int64_t stride = 1;
      for (int d = int(shape.size()) - 2; d >= 0; --d) {
        stride *= shape[d + 1];
        flat = arith::AddIOp::create(
            b, loc, flat,
            arith::MulIOp::create(b, loc, at[d], constantIndex(stride)));
      }
      flat = arith::AddIOp::create(b, loc, flat, constantIndex(ahead));
      flat = arith::MinSIOp::create(
          b, loc, flat, constantIndex(stride * shape.front() - 1));
      Value memref = memrefs.lookup(access.getArray().getValue());
      if (shape.size() > 1) {
        SmallVector<ReassociationIndices> all(1);
        for (size_t d = 0; d < shape.size(); ++d)
          all.front().push_back(d);
        memref = memref::CollapseShapeOp::create(b, loc, memref, all);
      }
      memref::PrefetchOp::create(b, loc, memref, ValueRange{flat},
                                 /*isWrite=*/false, /*localityHint=*/2,
                                 /*isDataCache=*/true);
    }
  }
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
  return offsetForm(access, bufferOf(access.getArray().getValue()).getShape(),
                    {});
}

KernelEmitter::OffsetForm KernelEmitter::offsetForm(AccessAttr access,
                                                    ArrayRef<int64_t> extents,
                                                    ArrayRef<bool> skip) {
  SmallVector<int64_t> strides(extents.size(), 1);
  for (int d = int(extents.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * extents[d + 1];
  OffsetForm offset;
  offset.steps.assign(ivs.size(), 0);
  for (auto [d, form] : llvm::enumerate(access.getLinearForms())) {
    if (d < skip.size() && skip[d])
      continue;
    offset.start += form.constant * strides[d];
    for (unsigned v = 0; v < form.getNumDims() && v < ivs.size(); ++v)
      offset.steps[v] += form.coeffs[v] * strides[d];
  }
  return offset;
}

bool KernelEmitter::isMultipleOf(const OffsetForm &offset, int64_t width) {
  // Every scope variable other than the lanes must step by a multiple of
  // the width, and the start must be one.
  if (offset.start % width)
    return false;
  for (unsigned v = 0; v < ivs.size(); ++v)
    if (ivs[v] && offset.steps[v] % width)
      return false;
  return true;
}

bool KernelEmitter::isOffsetMultipleOf(AccessAttr access, int64_t width) {
  return isMultipleOf(offsetForm(access), width);
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
    unsigned outer = 0;
    if (windowExtent(buffer, d))
      outer = windowDims.find(buffer)->second.outerDepth;
    for (unsigned v = outer; v < form.getNumDims(); ++v) {
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
    if (stridedLoadsInRegisters())
      if (Value strided = loadStrided(access))
        return strided;
    return gatherLanes(access);
  }
  }
  llvm_unreachable("unknown pattern");
}

Value KernelEmitter::gatherLanes(AccessAttr access) {
  Value memref = memrefs.lookup(access.getArray().getValue());
  Type scalar = elementType(access.getArray().getValue());
  SmallVector<Value> elements;
  for (int64_t lane = 0; lane < lanes.width; ++lane)
    elements.push_back(
        memref::LoadOp::create(b, loc, memref, indices(access, lane)));
  // The masked lanes: zeros, never read from memory.
  if (lanes.masked())
    elements.append(lanes.registerWidth - lanes.width, constant(0, scalar));
  return vector::FromElementsOp::create(
      b, loc, cast<VectorType>(vectorOf(scalar)), elements);
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

Value KernelEmitter::loadStrided(AccessAttr access) {
  int64_t width = lanes.width;
  if (lanes.masked() || width < 2)
    return {};
  BufferOp buffer = bufferOf(access.getArray().getValue());
  SmallVector<LinearForm> forms(access.getLinearForms());
  unsigned last = forms.size() - 1;
  int64_t stride = forms[last].coeff(lanes.depth);
  if (stride < 2 || stride > kMaxLaneStride || buffer.getReuse()[last] != 0 ||
      isCollapsed(buffer, last) || windowExtent(buffer, last))
    return {};
  for (unsigned d = 0; d < last; ++d)
    if (forms[d].coeff(lanes.depth))
      return {};
  // The span from the first lane's element to the last one's, in vectors.
  int64_t span = stride * (width - 1) + 1;
  int64_t chunks = (span + width - 1) / width;
  Type scalar = elementType(access.getArray().getValue());
  auto type = VectorType::get({width}, scalar);
  Value memref = memrefs.lookup(access.getArray().getValue());
  SmallVector<Value> at = indices(access, 0);
  Value first = at[last];
  Value all;
  for (int64_t j = 0; j < chunks; ++j) {
    at[last] =
        j ? arith::AddIOp::create(b, loc, first, constantIndex(j * width))
                .getResult()
          : first;
    int64_t valid = std::min(width, span - j * width);
    Value chunk =
        valid == width
            ? vector::LoadOp::create(b, loc, type, memref, at).getResult()
            : vector::MaskedLoadOp::create(
                  b, loc, type, memref, at,
                  vector::CreateMaskOp::create(
                      b, loc, VectorType::get({width}, b.getI1Type()),
                      ValueRange{constantIndex(valid)}),
                  constant(0, type))
                  .getResult();
    if (!all) {
      all = chunk;
      continue;
    }
    // Append the chunk: all's elements, then the chunk's.
    int64_t size = cast<VectorType>(all.getType()).getNumElements();
    SmallVector<int64_t> concat(size + width);
    std::iota(concat.begin(), concat.end(), 0);
    all = vector::ShuffleOp::create(b, loc, all, chunk, concat);
  }
  SmallVector<int64_t> pick;
  for (int64_t lane = 0; lane < width; ++lane)
    pick.push_back(lane * stride);
  return vector::ShuffleOp::create(b, loc, all, all, pick);
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

//===----------------------------------------------------------------------===//
// Register tiles
//===----------------------------------------------------------------------===//

/// Every instance of the unrolled scopes `unrolls`, in their order: one
/// iteration number per scope.
static SmallVector<SmallVector<int64_t>>
unrolledInstances(ArrayRef<ScopeOp> unrolls) {
  SmallVector<SmallVector<int64_t>> instances;
  SmallVector<int64_t> counter(unrolls.size(), 0);
  int64_t count = 1;
  for (ScopeOp s : unrolls)
    count *= ScopeOp(s).getSize();
  for (int64_t i = 0; i < count; ++i) {
    instances.push_back(counter);
    for (int u = int(unrolls.size()) - 1; u >= 0; --u) {
      if (++counter[u] < int64_t(ScopeOp(unrolls[u]).getSize()))
        break;
      counter[u] = 0;
    }
  }
  return instances;
}

/// The offset per dimension that the unrolled scopes' `instance` adds to
/// an access with `forms`.
static SmallVector<int64_t> instanceOffset(ArrayRef<LinearForm> forms,
                                           ArrayRef<ScopeOp> unrolls,
                                           ArrayRef<int64_t> instance) {
  SmallVector<int64_t> offset;
  for (const LinearForm &form : forms) {
    int64_t o = 0;
    for (auto [u, s] : llvm::enumerate(unrolls))
      o += form.coeff(ScopeOp(s).getDepth()) * instance[u];
    offset.push_back(o);
  }
  return offset;
}

ComputeOp KernelEmitter::getRegisterTile(ScopeOp scope,
                                          SmallVectorImpl<ScopeOp> &unrolls) {
  Operation *child = &scope.getBodyBlock().front();
  if (!llvm::hasSingleElement(scope.getBodyBlock()))
    return {};
  int64_t instances = 1;
  while (auto s = dyn_cast<ScopeOp>(child)) {
    if (s.getMapping() == Mapping::vector &&
        (llvm::hasSingleElement(s.getBodyBlock()) || tileCarriesProducers()))
      break;
    if (!llvm::hasSingleElement(s.getBodyBlock()))
      return {};
    if (s.getMapping() != Mapping::unroll)
      return {};
    unrolls.push_back(s);
    instances *= s.getSize();
    child = &s.getBodyBlock().front();
  }
  // The vector scope, or (scalar tiles) the operation itself.
  auto vec = dyn_cast<ScopeOp>(child);
  if (instances > kMaxTileInstances || (!vec && !maxScalarTile()))
    return {};
  auto op = dyn_cast<ComputeOp>(vec ? &vec.getBodyBlock().back() : child);
  if (!op || op.getReduction() == Reduction::none ||
      (vec && !tileProducers(vec, op)))
    return {};
  BufferOp out = bufferOf(op.getOut().getArray().getValue());
  if (llvm::any_of(out.getReuse(), [](int64_t r) { return r != 0; }))
    return {};
  for (Attribute input : op.getInputs())
    if (auto access = dyn_cast<AccessAttr>(input);
        access && bufferOf(access.getArray().getValue()) == out)
      return {};
  SmallVector<LinearForm> forms(op.getOut().getLinearForms());
  // The lanes run along one dimension of the output, with step `step`:
  // the last with step 1 (contiguous), or, where the target gathers and
  // scatters a tile's vectors, any one.
  size_t laneDim = forms.size() - 1;
  int64_t step = 1;
  if (vec) {
    step = 0;
    for (auto [d, form] : llvm::enumerate(forms))
      if (int64_t c = form.coeff(vec.getDepth())) {
        if (step)
          return {};
        laneDim = d;
        step = std::abs(c);
      }
    if (!step ||
        (!scattersTiles() && (laneDim + 1 != forms.size() || step != 1)))
      return {};
  }
  for (const LinearForm &form : forms)
    if (form.coeff(scope.getDepth()))
      return {};
  int64_t width = vec ? int64_t(vec.getSize()) : 1;
  // The instances' vectors must be the same or not overlap: pairwise,
  // every dimension equal (one accumulator: a convolution's window
  // positions, unrolled, all update the same outputs), or some dimension
  // other than the lanes' different by a constant, or the lanes' by at
  // least the width's span or by no multiple of the step. At most 24
  // distinct vectors.
  SmallVector<SmallVector<int64_t>> offsets;
  for (ArrayRef<int64_t> instance : unrolledInstances(unrolls))
    offsets.push_back(instanceOffset(forms, unrolls, instance));
  llvm::sort(offsets);
  offsets.erase(llvm::unique(offsets), offsets.end());
  if (offsets.size() > (vec ? kMaxTileVectors : size_t(maxScalarTile())))
    return {};
  for (size_t i = 0; i < offsets.size(); ++i)
    for (size_t j = i + 1; j < offsets.size(); ++j) {
      bool apart = false;
      for (size_t d = 0; d < forms.size(); ++d) {
        int64_t diff = std::abs(offsets[i][d] - offsets[j][d]);
        apart |= d == laneDim ? diff >= width * step || diff % step : diff != 0;
      }
      if (!apart)
        return {};
    }
  return op;
}

std::optional<SmallVector<ComputeOp>>
KernelEmitter::tileProducers(ScopeOp vec, ComputeOp op) {
  SmallVector<ComputeOp> producers;
  Operation *reduced = bufferOf(op.getOut().getArray().getValue());
  Type type = elementType(op.getOut().getArray().getValue());
  auto reads = [&](ComputeOp x, Operation *buffer) {
    return llvm::any_of(x.getInputs(), [&](Attribute input) {
      auto access = dyn_cast<AccessAttr>(input);
      return access && bufferOf(access.getArray().getValue()) == buffer;
    });
  };
  for (Operation &child : vec.getBodyBlock()) {
    if (&child == op.getOperation())
      break;
    auto p = dyn_cast<ComputeOp>(child);
    if (!p || p.getReduction() != Reduction::none || reads(p, reduced))
      return std::nullopt;
    StringRef array = p.getOut().getArray().getValue();
    BufferOp buffer = bufferOf(array);
    // Of one element type with the reduction, inputs included (the lanes
    // are entered for the reduction: a masked width is chosen by its
    // types).
    bool oneType = llvm::all_of(p.getInputs(), [&](Attribute input) {
      auto access = dyn_cast<AccessAttr>(input);
      return !access || elementType(access.getArray().getValue()) == type;
    });
    if (!buffer.isTemporary() || buffer.getOperation() == reduced ||
        elementType(array) != type || !oneType || reads(p, buffer))
      return std::nullopt;
    // Every other operation that touches the buffer is a later one of
    // the scope that reads exactly p's element and writes elsewhere.
    Operation *tmp = buffer;
    bool private_ = true;
    kernel.walk([&](ComputeOp x) {
      if (x == p)
        return;
      bool touches = bufferOf(x.getOut().getArray().getValue()) == tmp;
      private_ &= !touches;
      for (Attribute input : x.getInputs())
        if (auto access = dyn_cast<AccessAttr>(input);
            access && bufferOf(access.getArray().getValue()) == tmp) {
          touches = true;
          private_ &= access == p.getOut();
        }
      if (touches)
        private_ &=
            x->getParentOp() == vec.getOperation() && p->isBeforeInBlock(x);
    });
    if (!private_)
      return std::nullopt;
    producers.push_back(p);
  }
  return producers;
}

KernelEmitter::TileSlots
KernelEmitter::getTileSlots(ComputeOp op, ArrayRef<ScopeOp> unrolls) {
  TileSlots tile;
  tile.combos = unrolledInstances(unrolls);
  SmallVector<LinearForm> forms(op.getOut().getLinearForms());
  std::map<SmallVector<int64_t>, unsigned> slots;
  for (auto [i, combo] : llvm::enumerate(tile.combos)) {
    auto [it, added] = slots.try_emplace(instanceOffset(forms, unrolls, combo),
                                         tile.first.size());
    tile.slot.push_back(it->second);
    if (added)
      tile.first.push_back(i);
  }
  return tile;
}

/// The vector scope around a register tile's operation, or null (a scalar
/// tile).
static ScopeOp tileVectorScope(ComputeOp op) {
  auto vec = dyn_cast<ScopeOp>(op->getParentOp());
  return vec && vec.getMapping() == Mapping::vector ? vec : ScopeOp();
}

bool KernelEmitter::scatteredTile(ComputeOp op) {
  ScopeOp vec = tileVectorScope(op);
  return vec && classify(op.getOut()) == Pattern::Scattered;
}

void KernelEmitter::bindTileInstance(ScopeOp scope, Value sVar,
                                     ArrayRef<int64_t> combo, ComputeOp op) {
  ivs.resize(scope.getDepth());
  ivs.push_back(sVar);
  for (int64_t c : combo)
    ivs.push_back(constantIndex(c));
  if (tileVectorScope(op))
    ivs.push_back(Value()); // the lanes
}

SmallVector<Value> KernelEmitter::loadTile(ScopeOp scope, ComputeOp op,
                                           ArrayRef<ScopeOp> unrolls,
                                           const TileSlots &tile) {
  ScopeOp vec = tileVectorScope(op);
  Type type = elementType(op.getOut().getArray().getValue());
  Value memref = memrefs.lookup(op.getOut().getArray().getValue());
  auto vecType = dyn_cast<VectorType>(vectorOf(type));
  unsigned base = ivs.size();
  SmallVector<Value> values;
  for (unsigned i : tile.first) {
    bindTileInstance(scope, constantIndex(0), tile.combos[i], op);
    if (vec && scatteredTile(op)) {
      values.push_back(gatherLanes(op.getOut()));
      continue;
    }
    SmallVector<Value> at = indices(op.getOut(), 0);
    values.push_back(
        vec ? KernelEmitter::emitVectorLoad(vecType, memref, at, op.getOut())
            : memref::LoadOp::create(b, loc, memref, at));
  }
  ivs.resize(base);
  return values;
}

void KernelEmitter::storeTile(ScopeOp scope, ComputeOp op,
                              ArrayRef<ScopeOp> unrolls, const TileSlots &tile,
                              ValueRange values) {
  ScopeOp vec = tileVectorScope(op);
  Value memref = memrefs.lookup(op.getOut().getArray().getValue());
  unsigned base = ivs.size();
  for (auto [i, first] : llvm::enumerate(tile.first)) {
    bindTileInstance(scope, constantIndex(0), tile.combos[first], op);
    if (vec && scatteredTile(op)) {
      for (int64_t lane = 0; lane < lanes.width; ++lane)
        memref::StoreOp::create(b, loc,
                                vector::ExtractOp::create(
                                    b, loc, values[i], ArrayRef<int64_t>{lane}),
                                memref, indices(op.getOut(), lane));
      continue;
    }
    SmallVector<Value> at = indices(op.getOut(), 0);
    if (vec && storesTileAsWrite(op))
      emitVectorStore(values[i], memref, at, op.getOut(), /*reduce=*/false);
    else if (vec)
      KernelEmitter::emitVectorStore(values[i], memref, at, op.getOut(),
                                     /*reduce=*/true);
    else
      memref::StoreOp::create(b, loc, values[i], memref, at);
  }
  ivs.resize(base);
}

/// The most elements an initialization nest may set for folding (a tile
/// holds at most kMaxTileVectors vectors of up to 64 lanes).
static constexpr int64_t kMaxFoldedElements = 24 * 64;

std::optional<double>
KernelEmitter::initializedTile(Operation &nest, ScopeOp scope, ComputeOp op,
                               ArrayRef<ScopeOp> unrolls) {
  // The nest: scopes of one child each down to one plain copy of a
  // constant into the tile's array.
  SmallVector<ScopeOp> scopes;
  Operation *child = &nest;
  int64_t elements = 1;
  while (auto s = dyn_cast<ScopeOp>(child)) {
    Mapping mapping = s.getMapping();
    if (!llvm::hasSingleElement(s.getBodyBlock()) ||
        (mapping != Mapping::seq && mapping != Mapping::unroll &&
         mapping != Mapping::vector))
      return std::nullopt;
    elements *= s.getSize();
    if (elements > kMaxFoldedElements)
      return std::nullopt;
    scopes.push_back(s);
    child = &s.getBodyBlock().front();
  }
  auto init = dyn_cast<ComputeOp>(child);
  if (!init || init.getKind() != OpKind::copy ||
      init.getReduction() != Reduction::none || init.getInputs().size() != 1 ||
      init.getOut().getArray() != op.getOut().getArray())
    return std::nullopt;
  auto value = dyn_cast<FloatAttr>(init.getInputs()[0]);
  SmallVector<LinearForm> initForms(init.getOut().getLinearForms());
  SmallVector<LinearForm> forms(op.getOut().getLinearForms());
  if (!value || initForms.size() != forms.size())
    return std::nullopt;
  // The same element for every iteration of the scopes around both.
  unsigned depth = scope.getDepth();
  for (auto [f, g] : llvm::zip(initForms, forms))
    for (unsigned d = 0; d < depth; ++d)
      if (f.coeff(d) != g.coeff(d))
        return std::nullopt;
  // The elements each sets, relative to those scopes' part: every
  // instance of the nest's scopes; every instance of the tile's unrolled
  // scopes, lane by lane.
  auto elementsOf = [](ArrayRef<LinearForm> forms, ArrayRef<ScopeOp> scopes,
                       ScopeOp vec) {
    std::set<SmallVector<int64_t>> set;
    int64_t lanes = vec ? int64_t(vec.getSize()) : 1;
    for (ArrayRef<int64_t> instance : unrolledInstances(scopes)) {
      SmallVector<int64_t> element = instanceOffset(forms, scopes, instance);
      for (auto [e, f] : llvm::zip(element, forms))
        e += f.constant;
      for (int64_t lane = 0; lane < lanes; ++lane) {
        set.insert(element);
        if (vec)
          for (auto [e, f] : llvm::zip(element, forms))
            e += f.coeff(vec.getDepth());
      }
    }
    return set;
  };
  if (elementsOf(initForms, scopes, ScopeOp()) !=
      elementsOf(forms, unrolls, tileVectorScope(op)))
    return std::nullopt;
  return value.getValueAsDouble();
}

void KernelEmitter::findFoldedInits() {
  kernel.walk([&](ScopeOp scope) {
    Operation *nest = scope->getPrevNode();
    if (scope.getMapping() != Mapping::seq || !nest ||
        !isa<ScopeOp, ComputeOp>(nest) || foldedNests.contains(nest) ||
        !foldsInitInto(scope))
      return;
    SmallVector<ScopeOp> unrolls;
    ComputeOp op = getRegisterTile(scope, unrolls);
    if (!op || carriedTiles.count(op))
      return;
    if (std::optional<double> value =
            initializedTile(*nest, scope, op, unrolls)) {
      foldedInits[op] = *value;
      foldedNests.insert(nest);
    }
  });
}

LogicalResult KernelEmitter::lowerRegisterTile(ScopeOp scope, ComputeOp op,
                                               ArrayRef<ScopeOp> unrolls) {
  // The scope S itself and the unrolled scopes occupy the depths from
  // S's on; the lane depth (of a vector tile) follows them.
  unsigned base = ivs.size();
  ScopeOp vec = tileVectorScope(op);
  Type type = elementType(op.getOut().getArray().getValue());
  if (vec)
    enterLanes(vec, op);
  // One accumulator per distinct output vector, in the order of the
  // instances that first update it; `slot[i]` is instance i's. A tile
  // carried through an enclosing loop (carriedTiles) starts from that
  // loop's values and hands its results back instead of loading and
  // storing.
  TileSlots tile = getTileSlots(op, unrolls);
  SmallVector<ComputeOp> producers;
  if (vec)
    producers = *tileProducers(vec, op);
  CarriedTile *carried = carriedTiles.lookup(op);
  SmallVector<Value> inits;
  if (carried) {
    inits = carried->inits;
  } else if (auto folded = foldedInits.find(op); folded != foldedInits.end()) {
    Value start = constant(folded->second, vec ? vectorOf(type) : type);
    inits.assign(tile.first.size(), start);
  } else {
    inits = loadTile(scope, op, unrolls, tile);
  }
  auto loop = scf::ForOp::create(b, loc, constantIndex(0),
                                 constantIndex(scope.getSize()),
                                 constantIndex(1), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> next(loop.getRegionIterArgs());
    for (auto [combo, i] : llvm::zip(tile.combos, tile.slot)) {
      bindTileInstance(scope, loop.getInductionVar(), combo, op);
      std::string error;
      for (ComputeOp producer : producers) {
        loc = producer.getLoc();
        Value value = compute(producer, type, error);
        if (!value) {
          ivs.resize(base);
          lanes = {};
          forwardedValues.clear();
          return producer.emitError(error);
        }
        forwardedValues[producer.getOut()] = value;
      }
      loc = op.getLoc();
      Value value = compute(op, type, error);
      forwardedValues.clear();
      if (!value) {
        ivs.resize(base);
        lanes = {};
        return op.emitError(error);
      }
      next[i] = binary(getCombiner(op.getReduction()), next[i], value, type);
    }
    scf::YieldOp::create(b, loc, next);
  }
  ivs.resize(base);
  if (carried)
    carried->results.assign(loop.getResults().begin(), loop.getResults().end());
  else
    storeTile(scope, op, unrolls, tile, loop.getResults());
  lanes = {};
  return success();
}
