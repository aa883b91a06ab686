//===- LowerToStandard.cpp - perfdojo kernels to scf/memref/vector --------===//
//
// Each kernel becomes a function over memrefs. The tree is walked once: a
// scope becomes a loop (or, when vector-mapped, the lanes of the vector
// operations it holds), a compute operation becomes loads, the primitive in
// arith/math, and a store.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"
#include <map>

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_CONVERTPERFDOJOTOSTANDARD
#include "PerfDojo/Conversion/Lowering/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
/// The lanes of the vector scope being lowered, if any.
struct Lanes {
  unsigned depth = 0;
  int64_t width = 1;
  bool active = false;
};

class KernelLowering {
public:
  KernelLowering(KernelOp kernel, int64_t streamingMinBytes, bool fpContract)
      : kernel(kernel), b(kernel), streamingMinBytes(streamingMinBytes),
        fpContract(fpContract) {}

  LogicalResult run();

private:
  LogicalResult lowerBlock(Block &block);
  LogicalResult lowerScope(ScopeOp scope);
  LogicalResult lowerCompute(ComputeOp op);
  /// A sequential scope whose only child is a vector scope holding one
  /// reduction into an element that neither scope indexes, and that no
  /// input reads: that operation, else null.
  ComputeOp getAccumulated(ScopeOp scope);
  /// Lowers such a scope with vectors of partial results (up to four, each
  /// taking every fourth iteration) carried through the loop, combined and
  /// reduced once after it. For max and min (NaN and signed zeros included)
  /// and integers this is exact; a float sum or product is reassociated
  /// over the scope's iterations as well as over the lanes, which the
  /// vector mapping already declares reassociable.
  LogicalResult lowerAccumulated(ScopeOp scope, ComputeOp op);
  /// A sequential scope S whose body is a chain of unrolled scopes ending in
  /// a vector scope with one reduction whose element is contiguous in the
  /// lanes, invariant in S, never read by the operation's inputs, and for
  /// any two instances of the unrolled scopes the same vector or vectors
  /// that do not overlap (at most kMaxTileVectors distinct ones, at most
  /// kMaxTileInstances instances): that operation and the unrolled scopes,
  /// else null.
  ComputeOp getRegisterTile(ScopeOp scope, SmallVectorImpl<ScopeOp> &unrolls);
  /// Lowers such a scope keeping one vector per unrolled instance in
  /// registers through the loop: loaded before, updated in the same order as
  /// the scope would (exact), stored after.
  LogicalResult lowerRegisterTile(ScopeOp scope, ComputeOp op,
                                  ArrayRef<ScopeOp> unrolls);
  /// Vector registers a register tile may hold (of AVX-512's 32, the rest
  /// for the loaded operands), and unrolled instances it may have (code
  /// size: a 3 x 3 window over 4 x 3 vectors is 108).
  static constexpr size_t kMaxTileVectors = 24;
  static constexpr int64_t kMaxTileInstances = 256;

  /// Outputs of at least `streamingMinBytes` that no operation reads or
  /// reduces into: for each, whether its base address is aligned to 64
  /// bytes, computed once at the function's entry.
  void findStreamedOutputs(ArrayRef<BufferOp> parameters);
  /// Whether the contiguous vector store of `value` at `out` starts at a
  /// multiple of the vector's size for every iteration.
  bool isVectorAligned(AccessAttr out, VectorType type);

  // Indices.
  Value constantIndex(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  /// The stored indices of `access`, with the lane variable (if any) at
  /// `lane`.
  SmallVector<Value> indices(AccessAttr access, int64_t lane);

  // Values.
  Type vectorOf(Type scalar) {
    return lanes.active ? VectorType::get({lanes.width}, scalar) : scalar;
  }
  Value load(AccessAttr access);
  void store(ComputeOp op, Value value);
  Value operand(Attribute input, Type type);
  Value constant(double value, Type type);
  Value convert(Value value, Type from, Type to);
  Value compute(ComputeOp op, Type outType, std::string &error);
  Value binary(OpKind kind, Value a, Value c, Type type);
  /// Combines the lanes of `value` with `reduction` into one scalar.
  Value reduceLanes(Value value, Reduction reduction, Type type);

  /// Lane-invariant, contiguous, or neither, for `access` in the lanes.
  enum class Pattern { Invariant, Contiguous, Scattered };
  Pattern classify(AccessAttr access);

  BufferOp bufferOf(StringRef array) { return buffers.lookup(array); }
  Type elementType(StringRef array) {
    return bufferOf(array).getElementType();
  }

  KernelOp kernel;
  OpBuilder b;
  Location loc = kernel.getLoc();
  llvm::StringMap<BufferOp> buffers;
  llvm::StringMap<Value> memrefs;
  /// The iteration variable of each enclosing scope; null for the lanes.
  SmallVector<Value> ivs;
  Lanes lanes;
  SmallVector<scf::ForOp> unrolled;
  int64_t streamingMinBytes;
  /// Whether a product may fuse with the sum that consumes it.
  bool fpContract;
  /// The outputs that take streaming stores, with an i1 that holds when
  /// their base address is 64-byte aligned.
  llvm::DenseMap<Operation *, Value> streamed;
};
} // namespace

static OpKind combiner(Reduction reduction);

static bool isFloat(Type type) { return isa<FloatType>(getElementTypeOrSelf(type)); }

/// The most copies of compute operations that unrolling may emit. Each
/// unrolled scope copies its body (up to 64 times, the unroll move's
/// limit), so nested unrolled scopes multiply: three of 64 would emit
/// 262,144 copies, on which LLVM's optimizer runs for many minutes. A
/// register tile of 2 x 4 vectors is 8 copies.
static constexpr int64_t kMaxUnrolledCopies = 4096;

/// The outermost unrolled scope around the compute operation at which the
/// copies that unrolling emits for `kernel` pass kMaxUnrolledCopies, or
/// null if they do not.
static ScopeOp findExcessUnrolling(KernelOp kernel) {
  int64_t copies = 0;
  ScopeOp excess;
  kernel.walk([&](ComputeOp op) {
    int64_t n = 1;
    ScopeOp outermost;
    for (Operation *p = op->getParentOp(); p && p != kernel;
         p = p->getParentOp())
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

LogicalResult KernelLowering::run() {
  if (ScopeOp excess = findExcessUnrolling(kernel))
    return excess.emitError()
           << "the unrolled scopes would copy the kernel's operations more "
              "than "
           << kMaxUnrolledCopies
           << " times in all, which the CPU lowering refuses (compiling "
              "that much code takes minutes); unroll fewer or smaller "
              "scopes";
  // The signature: inputs and outputs in declaration order.
  SmallVector<Type> arguments;
  SmallVector<BufferOp> parameters, temporaries;
  for (BufferOp buffer : kernel.getBuffers()) {
    for (StringRef array : buffer.getArrays().getAsValueRange<StringAttr>())
      buffers[array] = buffer;
    if (buffer.isTemporary()) {
      temporaries.push_back(buffer);
      continue;
    }
    parameters.push_back(buffer);
    arguments.push_back(
        MemRefType::get(buffer.getShape(), buffer.getElementType()));
  }
  auto func = func::FuncOp::create(b, loc, kernel.getSymName(),
                                   b.getFunctionType(arguments, {}));
  func->setAttr("llvm.emit_c_interface", b.getUnitAttr());
  // Every buffer is its own object: the arguments never overlap, which lets
  // LLVM keep values of one buffer in registers across stores to another.
  for (unsigned i = 0; i < arguments.size(); ++i)
    func.setArgAttr(i, "llvm.noalias", b.getUnitAttr());
  Block *entry = func.addEntryBlock();
  b.setInsertionPointToStart(entry);
  for (auto [buffer, argument] : llvm::zip(parameters, entry->getArguments()))
    for (StringRef array : buffer.getArrays().getAsValueRange<StringAttr>())
      memrefs[array] = argument;
  findStreamedOutputs(parameters);

  SmallVector<Value> heap;
  for (BufferOp buffer : temporaries) {
    SmallVector<int64_t> stored;
    for (unsigned d = 0; d < buffer.getShape().size(); ++d)
      stored.push_back(buffer.getStoredExtent(d));
    auto type = MemRefType::get(stored, buffer.getElementType());
    Value memref;
    if (buffer.getLocation() == BufferLocation::heap) {
      memref = memref::AllocOp::create(b, loc, type, b.getI64IntegerAttr(64));
      heap.push_back(memref);
    } else if (buffer.getLocation() == BufferLocation::shared) {
      return kernel.emitError()
             << "buffer '" << buffer.getSymName()
             << "' is in GPU shared memory, which the CPU lowering cannot "
                "place";
    } else {
      memref = memref::AllocaOp::create(b, loc, type, b.getI64IntegerAttr(64));
    }
    for (StringRef array : buffer.getArrays().getAsValueRange<StringAttr>())
      memrefs[array] = memref;
  }

  if (failed(lowerBlock(kernel.getBodyBlock())))
    return failure();
  for (Value memref : heap)
    memref::DeallocOp::create(b, loc, memref);
  func::ReturnOp::create(b, loc);

  // Innermost first, so that an unrolled outer scope copies unrolled bodies.
  for (scf::ForOp loop : llvm::reverse(unrolled)) {
    int64_t trips = *getConstantIntValue(loop.getUpperBound());
    if (trips > 1 && failed(loopUnrollByFactor(loop, trips)))
      return kernel.emitError("cannot unroll a scope of ") << trips;
  }
  return success();
}

void KernelLowering::findStreamedOutputs(ArrayRef<BufferOp> parameters) {
  if (streamingMinBytes <= 0)
    return;
  llvm::SmallPtrSet<Operation *, 4> excluded;
  kernel.walk([&](ComputeOp op) {
    if (op.getReduction() != Reduction::none)
      excluded.insert(bufferOf(op.getOut().getArray().getValue()));
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        excluded.insert(bufferOf(access.getArray().getValue()));
  });
  for (BufferOp buffer : parameters) {
    if (!buffer.isOutput() || excluded.contains(buffer))
      continue;
    if (llvm::any_of(buffer.getReuse(), [](int64_t r) { return r != 0; }))
      continue;
    Type element = buffer.getElementType();
    int64_t bytes = element.getIntOrFloatBitWidth() / 8;
    for (int64_t extent : buffer.getShape())
      bytes *= extent;
    if (bytes < streamingMinBytes)
      continue;
    StringRef array =
        *buffer.getArrays().getAsValueRange<StringAttr>().begin();
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(
        b, loc, memrefs.lookup(array));
    Value misalignment =
        arith::RemUIOp::create(b, loc, base, constantIndex(64));
    streamed[buffer] = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, misalignment, constantIndex(0));
  }
}

bool KernelLowering::isVectorAligned(AccessAttr out, VectorType type) {
  BufferOp buffer = bufferOf(out.getArray().getValue());
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  int64_t vectorBytes = type.getNumElements() * elementBytes;
  // A whole 64-byte cache line, aligned to it (the base is 64-byte
  // aligned). A narrower non-temporal store fills part of a line whose rest
  // other stores write: the write-combining buffer is flushed partially,
  // and batchnorm_8x64x300x300's 4-wide remainder columns made the whole
  // kernel half again slower (46 -> 69 ms).
  if (vectorBytes != 64 || type.getElementTypeBitWidth() % 8)
    return false;
  int64_t width = type.getNumElements();
  ArrayRef<int64_t> shape = buffer.getShape();
  SmallVector<LinearForm> forms(out.getLinearForms());
  // The element offset, linearized: every scope variable other than the
  // lanes must step by a multiple of the width, and the start must be one.
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int d = int(shape.size()) - 2; d >= 0; --d)
    strides[d] = strides[d + 1] * shape[d + 1];
  int64_t start = 0;
  SmallVector<int64_t> steps(ivs.size(), 0);
  for (auto [d, form] : llvm::enumerate(forms)) {
    start += form.constant * strides[d];
    for (unsigned v = 0; v < form.getNumDims() && v < ivs.size(); ++v)
      steps[v] += form.coeffs[v] * strides[d];
  }
  if (start % width)
    return false;
  for (unsigned v = 0; v < ivs.size(); ++v)
    if (ivs[v] && steps[v] % width)
      return false;
  return true;
}

LogicalResult KernelLowering::lowerBlock(Block &block) {
  for (Operation &op : block) {
    if (isa<BufferOp>(op))
      continue;
    if (auto scope = dyn_cast<ScopeOp>(op)) {
      if (failed(lowerScope(scope)))
        return failure();
    } else if (failed(lowerCompute(cast<ComputeOp>(op)))) {
      return failure();
    }
  }
  return success();
}

LogicalResult KernelLowering::lowerScope(ScopeOp scope) {
  loc = scope.getLoc();
  int64_t size = scope.getSize();
  OpBuilder::InsertionGuard guard(b);
  switch (scope.getMapping()) {
  case Mapping::grid:
  case Mapping::block:
  case Mapping::warp:
    return scope.emitError() << "a scope mapped "
                             << stringifyMapping(scope.getMapping())
                             << " is for GPUs; the CPU lowering cannot run it";
  case Mapping::vector: {
    if (lanes.active)
      return scope.emitError("a vector scope inside a vector scope");
    lanes = {scope.getDepth(), size, true};
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
  case Mapping::parallel: {
    auto loop = scf::ParallelOp::create(b, loc, ValueRange{constantIndex(0)},
                                        ValueRange{constantIndex(size)},
                                        ValueRange{constantIndex(1)});
    b.setInsertionPoint(loop.getBody()->getTerminator());
    ivs.push_back(loop.getInductionVars()[0]);
    break;
  }
  case Mapping::seq:
  case Mapping::unroll: {
    if (scope.getMapping() == Mapping::seq) {
      if (ComputeOp op = getAccumulated(scope))
        return lowerAccumulated(scope, op);
      SmallVector<ScopeOp> unrolls;
      if (ComputeOp op = getRegisterTile(scope, unrolls))
        return lowerRegisterTile(scope, op, unrolls);
    }
    auto loop = scf::ForOp::create(b, loc, constantIndex(0),
                                   constantIndex(size), constantIndex(1));
    if (scope.getMapping() == Mapping::unroll)
      unrolled.push_back(loop);
    b.setInsertionPoint(loop.getBody()->getTerminator());
    ivs.push_back(loop.getInductionVar());
    break;
  }
  }
  LogicalResult result = lowerBlock(scope.getBodyBlock());
  ivs.pop_back();
  return result;
}

ComputeOp KernelLowering::getAccumulated(ScopeOp scope) {
  Block &body = scope.getBodyBlock();
  auto inner = llvm::hasSingleElement(body) ? dyn_cast<ScopeOp>(body.front())
                                            : ScopeOp();
  if (!inner || inner.getMapping() != Mapping::vector ||
      !llvm::hasSingleElement(inner.getBodyBlock()))
    return {};
  auto op = dyn_cast<ComputeOp>(inner.getBodyBlock().front());
  if (!op || op.getReduction() == Reduction::none)
    return {};
  BufferOp out = bufferOf(op.getOut().getArray().getValue());
  bool extremum = op.getReduction() == Reduction::max ||
                  op.getReduction() == Reduction::min;
  if (extremum && !isa<FloatType>(out.getElementType()))
    return {};
  for (const LinearForm &form : op.getOut().getLinearForms())
    if (form.coeff(scope.getDepth()) || form.coeff(inner.getDepth()))
      return {};
  for (Attribute input : op.getInputs())
    if (auto access = dyn_cast<AccessAttr>(input);
        access && bufferOf(access.getArray().getValue()) == out)
      return {};
  return op;
}

LogicalResult KernelLowering::lowerAccumulated(ScopeOp scope, ComputeOp op) {
  auto inner = cast<ScopeOp>(scope.getBodyBlock().front());
  Type type = elementType(op.getOut().getArray().getValue());
  // The identity of the reduction.
  double identity = 0;
  switch (op.getReduction()) {
  case Reduction::add:
    identity = 0;
    break;
  case Reduction::mul:
    identity = 1;
    break;
  case Reduction::max:
  case Reduction::min: {
    // Floats only (getAccumulated): no finite identity to spell as a double.
    identity = op.getReduction() == Reduction::max ? -INFINITY : INFINITY;
    break;
  }
  case Reduction::none:
    llvm_unreachable("not a reduction");
  }
  // Several accumulators, each updated every K-th iteration, so that the
  // updates of consecutive iterations do not wait for each other (a vector
  // max with NaN propagation takes a chain of several instructions).
  int64_t size = scope.getSize();
  int64_t count = size % 4 == 0 ? 4 : size % 2 == 0 ? 2 : 1;
  Value init = constant(identity,
                        VectorType::get({int64_t(inner.getSize())}, type));
  auto loop = scf::ForOp::create(b, loc, constantIndex(0), constantIndex(size),
                                 constantIndex(count),
                                 SmallVector<Value>(count, init));
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    lanes = {inner.getDepth(), int64_t(inner.getSize()), true};
    SmallVector<Value> next;
    for (int64_t k = 0; k < count; ++k) {
      Value iv = loop.getInductionVar();
      if (k)
        iv = arith::AddIOp::create(b, loc, iv, constantIndex(k));
      ivs.push_back(iv);
      ivs.push_back(Value());
      loc = op.getLoc();
      std::string error;
      Value value = compute(op, type, error);
      ivs.pop_back();
      ivs.pop_back();
      if (!value) {
        lanes = {};
        return op.emitError(error);
      }
      next.push_back(binary(combiner(op.getReduction()),
                            loop.getRegionIterArgs()[k], value, type));
    }
    scf::YieldOp::create(b, loc, next);
  }
  SmallVector<Value> partial(loop.getResults());
  while (partial.size() > 1) {
    SmallVector<Value> halved;
    for (size_t i = 0; i < partial.size(); i += 2)
      halved.push_back(binary(combiner(op.getReduction()), partial[i],
                              partial[i + 1], type));
    partial = std::move(halved);
  }
  // One update of the element with the combined lanes.
  Value total = reduceLanes(partial.front(), op.getReduction(), type);
  lanes = {};
  Value memref = memrefs.lookup(op.getOut().getArray().getValue());
  SmallVector<Value> at = indices(op.getOut(), 0);
  Value updated = binary(combiner(op.getReduction()),
                         memref::LoadOp::create(b, loc, memref, at), total,
                         type);
  memref::StoreOp::create(b, loc, updated, memref, at);
  return success();
}

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

ComputeOp KernelLowering::getRegisterTile(ScopeOp scope,
                                          SmallVectorImpl<ScopeOp> &unrolls) {
  Operation *child = &scope.getBodyBlock().front();
  if (!llvm::hasSingleElement(scope.getBodyBlock()))
    return {};
  int64_t instances = 1;
  while (auto s = dyn_cast<ScopeOp>(child)) {
    if (!llvm::hasSingleElement(s.getBodyBlock()))
      return {};
    if (s.getMapping() == Mapping::vector)
      break;
    if (s.getMapping() != Mapping::unroll)
      return {};
    unrolls.push_back(s);
    instances *= s.getSize();
    child = &s.getBodyBlock().front();
  }
  auto vec = dyn_cast<ScopeOp>(child);
  if (!vec || instances > kMaxTileInstances)
    return {};
  auto op = dyn_cast<ComputeOp>(vec.getBodyBlock().front());
  if (!op || op.getReduction() == Reduction::none)
    return {};
  BufferOp out = bufferOf(op.getOut().getArray().getValue());
  if (llvm::any_of(out.getReuse(), [](int64_t r) { return r != 0; }))
    return {};
  for (Attribute input : op.getInputs())
    if (auto access = dyn_cast<AccessAttr>(input);
        access && bufferOf(access.getArray().getValue()) == out)
      return {};
  SmallVector<LinearForm> forms(op.getOut().getLinearForms());
  unsigned lane = vec.getDepth();
  for (auto [d, form] : llvm::enumerate(forms)) {
    if (form.coeff(scope.getDepth()))
      return {};
    bool last = d + 1 == forms.size();
    if (form.coeff(lane) != (last ? 1 : 0))
      return {};
  }
  // The instances' vectors must be the same or not overlap: pairwise,
  // every dimension equal (one accumulator: a convolution's window
  // positions, unrolled, all update the same outputs), or some dimension
  // different by a constant, by at least the width in the last one. At
  // most 24 distinct vectors.
  SmallVector<SmallVector<int64_t>> offsets;
  for (ArrayRef<int64_t> instance : unrolledInstances(unrolls))
    offsets.push_back(instanceOffset(forms, unrolls, instance));
  llvm::sort(offsets);
  offsets.erase(llvm::unique(offsets), offsets.end());
  if (offsets.size() > kMaxTileVectors)
    return {};
  for (size_t i = 0; i < offsets.size(); ++i)
    for (size_t j = i + 1; j < offsets.size(); ++j) {
      bool apart = false;
      for (size_t d = 0; d < forms.size(); ++d) {
        int64_t diff = std::abs(offsets[i][d] - offsets[j][d]);
        apart |= d + 1 == forms.size() ? diff >= int64_t(vec.getSize())
                                       : diff != 0;
      }
      if (!apart)
        return {};
    }
  return op;
}

LogicalResult KernelLowering::lowerRegisterTile(ScopeOp scope, ComputeOp op,
                                                ArrayRef<ScopeOp> unrolls) {
  auto vec = cast<ScopeOp>(op->getParentOp());
  Type type = elementType(op.getOut().getArray().getValue());
  auto vecType = VectorType::get({int64_t(vec.getSize())}, type);
  Value memref = memrefs.lookup(op.getOut().getArray().getValue());
  // Every instance of the unrolled scopes, as constants per depth.
  SmallVector<SmallVector<int64_t>> combos = unrolledInstances(unrolls);
  // The scope S itself and the unrolled scopes occupy the depths from
  // S's on; the lane depth follows them.
  unsigned base = ivs.size();
  auto bind = [&](Value sVar, ArrayRef<int64_t> combo) {
    ivs.resize(base);
    ivs.push_back(sVar);
    for (int64_t c : combo)
      ivs.push_back(constantIndex(c));
    ivs.push_back(Value()); // the lanes
  };
  lanes = {vec.getDepth(), int64_t(vec.getSize()), true};
  // One accumulator per distinct output vector, in the order of the
  // instances that first update it; `slot[i]` is instance i's.
  SmallVector<LinearForm> forms(op.getOut().getLinearForms());
  std::map<SmallVector<int64_t>, unsigned> slots;
  SmallVector<unsigned> slot;
  SmallVector<Value> inits;
  for (ArrayRef<int64_t> combo : combos) {
    auto [it, added] = slots.try_emplace(
        instanceOffset(forms, unrolls, combo), inits.size());
    slot.push_back(it->second);
    if (!added)
      continue;
    bind(constantIndex(0), combo);
    inits.push_back(vector::LoadOp::create(b, loc, vecType, memref,
                                           indices(op.getOut(), 0)));
  }
  auto loop = scf::ForOp::create(b, loc, constantIndex(0),
                                 constantIndex(scope.getSize()),
                                 constantIndex(1), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> next(loop.getRegionIterArgs());
    for (auto [combo, i] : llvm::zip(combos, slot)) {
      bind(loop.getInductionVar(), combo);
      loc = op.getLoc();
      std::string error;
      Value value = compute(op, type, error);
      if (!value) {
        ivs.resize(base);
        lanes = {};
        return op.emitError(error);
      }
      next[i] = binary(combiner(op.getReduction()), next[i], value, type);
    }
    scf::YieldOp::create(b, loc, next);
  }
  SmallVector<bool> stored(inits.size(), false);
  for (auto [combo, i] : llvm::zip(combos, slot)) {
    if (stored[i])
      continue;
    stored[i] = true;
    bind(constantIndex(0), combo);
    vector::StoreOp::create(b, loc, loop.getResult(i), memref,
                            indices(op.getOut(), 0));
  }
  ivs.resize(base);
  lanes = {};
  return success();
}

SmallVector<Value> KernelLowering::indices(AccessAttr access, int64_t lane) {
  BufferOp buffer = bufferOf(access.getArray().getValue());
  SmallVector<Value> result;
  for (auto [d, form] : llvm::enumerate(access.getLinearForms())) {
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

KernelLowering::Pattern KernelLowering::classify(AccessAttr access) {
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

Value KernelLowering::load(AccessAttr access) {
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
    return vector::LoadOp::create(b, loc, cast<VectorType>(vectorOf(scalar)),
                                  memref, indices(access, 0));
  case Pattern::Scattered: {
    SmallVector<Value> elements;
    for (int64_t lane = 0; lane < lanes.width; ++lane)
      elements.push_back(
          memref::LoadOp::create(b, loc, memref, indices(access, lane)));
    return vector::FromElementsOp::create(
        b, loc, cast<VectorType>(vectorOf(scalar)), elements);
  }
  }
  llvm_unreachable("unknown pattern");
}

Value KernelLowering::constant(double value, Type type) {
  Type scalar = getElementTypeOrSelf(type);
  TypedAttr attr;
  if (auto f = dyn_cast<FloatType>(scalar)) {
    bool lost;
    APFloat v(value);
    v.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    attr = FloatAttr::get(scalar, v);
  } else {
    attr = IntegerAttr::get(scalar, static_cast<int64_t>(value));
  }
  if (auto vector = dyn_cast<VectorType>(type))
    attr = DenseElementsAttr::get(vector, attr);
  return arith::ConstantOp::create(b, loc, attr);
}

Value KernelLowering::convert(Value value, Type from, Type to) {
  Type src = getElementTypeOrSelf(from), dst = getElementTypeOrSelf(to);
  if (src == dst)
    return value;
  auto shaped = dyn_cast<VectorType>(value.getType());
  Type result = shaped ? VectorType::get(shaped.getShape(), dst) : dst;
  if (isa<FloatType>(src) && isa<FloatType>(dst)) {
    // f16 <-> bf16: same width, neither extends the other; go through f32.
    if (src.getIntOrFloatBitWidth() == dst.getIntOrFloatBitWidth()) {
      Type f32 = b.getF32Type();
      Value wide = convert(value, src, f32);
      return convert(wide, f32, dst);
    }
    return src.getIntOrFloatBitWidth() < dst.getIntOrFloatBitWidth()
               ? arith::ExtFOp::create(b, loc, result, value).getResult()
               : arith::TruncFOp::create(b, loc, result, value).getResult();
  }
  if (isa<FloatType>(dst))
    return arith::SIToFPOp::create(b, loc, result, value);
  if (isa<FloatType>(src))
    return arith::FPToSIOp::create(b, loc, result, value);
  return src.getIntOrFloatBitWidth() < dst.getIntOrFloatBitWidth()
             ? arith::ExtSIOp::create(b, loc, result, value).getResult()
             : arith::TruncIOp::create(b, loc, result, value).getResult();
}

Value KernelLowering::operand(Attribute input, Type type) {
  if (auto access = dyn_cast<AccessAttr>(input))
    return convert(load(access), elementType(access.getArray().getValue()),
                   type);
  if (auto value = dyn_cast<FloatAttr>(input))
    return constant(value.getValueAsDouble(), vectorOf(type));
  unsigned depth = cast<IterAttr>(input).getDepth();
  Type i64 = b.getI64Type();
  if (!ivs[depth]) {
    // The lane variable: 0, 1, ..., width-1.
    SmallVector<int64_t> steps(lanes.width);
    std::iota(steps.begin(), steps.end(), 0);
    Value lanesValue = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(VectorType::get({lanes.width}, i64),
                                       ArrayRef<int64_t>(steps)));
    return convert(lanesValue, i64, type);
  }
  Value scalar = convert(arith::IndexCastOp::create(b, loc, i64, ivs[depth]),
                         i64, getElementTypeOrSelf(type));
  if (!lanes.active)
    return scalar;
  return vector::BroadcastOp::create(b, loc, vectorOf(scalar.getType()),
                                     scalar);
}

Value KernelLowering::binary(OpKind kind, Value x, Value y, Type type) {
  bool fp = isFloat(type);
  auto contract = arith::FastMathFlagsAttr::get(
      b.getContext(), fpContract ? arith::FastMathFlags::contract
                                 : arith::FastMathFlags::none);
  switch (kind) {
  case OpKind::add:
    return fp ? arith::AddFOp::create(b, loc, x, y, contract).getResult()
              : arith::AddIOp::create(b, loc, x, y).getResult();
  case OpKind::sub:
    return fp ? arith::SubFOp::create(b, loc, x, y, contract).getResult()
              : arith::SubIOp::create(b, loc, x, y).getResult();
  case OpKind::mul:
    return fp ? arith::MulFOp::create(b, loc, x, y, contract).getResult()
              : arith::MulIOp::create(b, loc, x, y).getResult();
  case OpKind::div:
    return fp ? arith::DivFOp::create(b, loc, x, y).getResult()
              : arith::DivSIOp::create(b, loc, x, y).getResult();
  case OpKind::max:
    return fp ? arith::MaximumFOp::create(b, loc, x, y).getResult()
              : arith::MaxSIOp::create(b, loc, x, y).getResult();
  case OpKind::min:
    return fp ? arith::MinimumFOp::create(b, loc, x, y).getResult()
              : arith::MinSIOp::create(b, loc, x, y).getResult();
  default:
    llvm_unreachable("not an arithmetic binary primitive");
  }
}

/// The type an operand has by itself: its buffer's for an access, `type`
/// (the operation's) for a constant or a scope variable.
static Type naturalType(Attribute input, Type type,
                        const llvm::StringMap<BufferOp> &buffers) {
  if (auto access = dyn_cast<AccessAttr>(input))
    return buffers.lookup(access.getArray().getValue()).getElementType();
  return type;
}

static bool isComparisonKind(OpKind kind) {
  return kind == OpKind::lt || kind == OpKind::le || kind == OpKind::gt ||
         kind == OpKind::ge || kind == OpKind::eq || kind == OpKind::ne;
}

Value KernelLowering::compute(ComputeOp op, Type outType, std::string &error) {
  ArrayRef<Attribute> inputs = op.getInputs().getValue();
  OpKind kind = op.getKind();
  auto in = [&](unsigned i, Type type) { return operand(inputs[i], type); };
  bool fp = isFloat(outType);
  switch (kind) {
  case OpKind::copy:
    return in(0, outType);
  case OpKind::cast: {
    Type from = naturalType(inputs[0], outType, buffers);
    return convert(in(0, from), from, outType);
  }
  case OpKind::neg:
    return fp ? arith::NegFOp::create(b, loc, in(0, outType)).getResult()
              : arith::SubIOp::create(b, loc, constant(0, vectorOf(outType)),
                                      in(0, outType))
                    .getResult();
  case OpKind::abs:
    return fp ? math::AbsFOp::create(b, loc, in(0, outType)).getResult()
              : math::AbsIOp::create(b, loc, in(0, outType)).getResult();
  case OpKind::exp:
    return math::ExpOp::create(b, loc, in(0, outType));
  case OpKind::log:
    return math::LogOp::create(b, loc, in(0, outType));
  case OpKind::sqrt:
    return math::SqrtOp::create(b, loc, in(0, outType));
  case OpKind::rsqrt:
    return math::RsqrtOp::create(b, loc, in(0, outType));
  case OpKind::tanh:
    return math::TanhOp::create(b, loc, in(0, outType));
  case OpKind::sigmoid: {
    Value one = constant(1, vectorOf(outType));
    Value e = math::ExpOp::create(
        b, loc, arith::NegFOp::create(b, loc, in(0, outType)));
    return arith::DivFOp::create(b, loc, one,
                                 arith::AddFOp::create(b, loc, one, e));
  }
  case OpKind::add:
  case OpKind::sub:
  case OpKind::mul:
  case OpKind::div:
  case OpKind::max:
  case OpKind::min:
    return binary(kind, in(0, outType), in(1, outType), outType);
  case OpKind::fma: {
    Value x = in(0, outType), y = in(1, outType), z = in(2, outType);
    if (fp)
      return math::FmaOp::create(b, loc, x, y, z);
    return arith::AddIOp::create(b, loc,
                                 arith::MulIOp::create(b, loc, x, y), z);
  }
  case OpKind::select: {
    Type condType = naturalType(inputs[0], outType, buffers);
    Value cond = in(0, condType);
    Value zero = constant(0, vectorOf(condType));
    Value truth =
        isFloat(condType)
            ? arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, cond,
                                    zero)
                  .getResult()
            : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, cond,
                                    zero)
                  .getResult();
    return arith::SelectOp::create(b, loc, truth, in(1, outType),
                                   in(2, outType));
  }
  default:
    break;
  }
  if (isComparisonKind(kind)) {
    Type type = outType;
    for (Attribute input : inputs)
      if (isa<AccessAttr>(input)) {
        type = naturalType(input, outType, buffers);
        break;
      }
    Value x = in(0, type), y = in(1, type);
    Value truth;
    if (isFloat(type)) {
      arith::CmpFPredicate p =
          kind == OpKind::lt   ? arith::CmpFPredicate::OLT
          : kind == OpKind::le ? arith::CmpFPredicate::OLE
          : kind == OpKind::gt ? arith::CmpFPredicate::OGT
          : kind == OpKind::ge ? arith::CmpFPredicate::OGE
          : kind == OpKind::eq ? arith::CmpFPredicate::OEQ
                               : arith::CmpFPredicate::UNE;
      truth = arith::CmpFOp::create(b, loc, p, x, y);
    } else {
      arith::CmpIPredicate p =
          kind == OpKind::lt   ? arith::CmpIPredicate::slt
          : kind == OpKind::le ? arith::CmpIPredicate::sle
          : kind == OpKind::gt ? arith::CmpIPredicate::sgt
          : kind == OpKind::ge ? arith::CmpIPredicate::sge
          : kind == OpKind::eq ? arith::CmpIPredicate::eq
                               : arith::CmpIPredicate::ne;
      truth = arith::CmpIOp::create(b, loc, p, x, y);
    }
    return arith::SelectOp::create(b, loc, truth,
                                   constant(1, vectorOf(outType)),
                                   constant(0, vectorOf(outType)));
  }
  error = "the CPU lowering has no rule for '" +
          stringifyOpKind(kind).str() + "'";
  return Value();
}

/// The primitive a reduction combines with.
static OpKind combiner(Reduction reduction) {
  switch (reduction) {
  case Reduction::add:
    return OpKind::add;
  case Reduction::mul:
    return OpKind::mul;
  case Reduction::max:
    return OpKind::max;
  case Reduction::min:
    return OpKind::min;
  case Reduction::none:
    break;
  }
  llvm_unreachable("not a reduction");
}

static vector::CombiningKind combiningKind(Reduction reduction, bool fp) {
  switch (reduction) {
  case Reduction::add:
    return vector::CombiningKind::ADD;
  case Reduction::mul:
    return vector::CombiningKind::MUL;
  case Reduction::max:
    return fp ? vector::CombiningKind::MAXIMUMF : vector::CombiningKind::MAXSI;
  case Reduction::min:
    return fp ? vector::CombiningKind::MINIMUMF : vector::CombiningKind::MINSI;
  case Reduction::none:
    break;
  }
  llvm_unreachable("not a reduction");
}

Value KernelLowering::reduceLanes(Value value, Reduction reduction,
                                  Type type) {
  bool fp = isFloat(type);
  if (!fp || reduction == Reduction::add || reduction == Reduction::mul)
    return vector::ReductionOp::create(
        b, loc, combiningKind(reduction, fp), value,
        fp ? arith::FastMathFlags::reassoc : arith::FastMathFlags::none);
  // NaN-propagating max/min have no x86 reduction instruction and LLVM
  // expands their reduction lane by lane: halve the vector log2(W) times
  // with a rotation and a vector max/min instead.
  int64_t width = lanes.width;
  for (int64_t half = width / 2; half >= 1; half /= 2) {
    SmallVector<int64_t> rotation;
    for (int64_t i = 0; i < width; ++i)
      rotation.push_back((i + half) % width);
    Value rotated = vector::ShuffleOp::create(b, loc, value, value, rotation);
    value = binary(combiner(reduction), value, rotated, type);
  }
  return vector::ExtractOp::create(b, loc, value, ArrayRef<int64_t>{0});
}

void KernelLowering::store(ComputeOp op, Value value) {
  AccessAttr out = op.getOut();
  Value memref = memrefs.lookup(out.getArray().getValue());
  Type type = elementType(out.getArray().getValue());
  Reduction reduction = op.getReduction();
  bool reduce = reduction != Reduction::none;
  auto storeScalar = [&](Value v, int64_t lane) {
    SmallVector<Value> at = indices(out, lane);
    if (reduce)
      v = binary(combiner(reduction), memref::LoadOp::create(b, loc, memref, at),
                 v, type);
    memref::StoreOp::create(b, loc, v, memref, at);
  };
  if (!lanes.active)
    return storeScalar(value, 0);
  switch (classify(out)) {
  case Pattern::Contiguous: {
    SmallVector<Value> at = indices(out, 0);
    if (reduce)
      value = binary(combiner(reduction),
                     vector::LoadOp::create(
                         b, loc, cast<VectorType>(value.getType()), memref, at),
                     value, type);
    auto vectorType = cast<VectorType>(value.getType());
    Value aligned = streamed.lookup(bufferOf(out.getArray().getValue()));
    if (reduce || !aligned || !isVectorAligned(out, vectorType)) {
      vector::StoreOp::create(b, loc, value, memref, at);
      return;
    }
    // A streaming store where the base is aligned, else an ordinary one.
    auto choice = scf::IfOp::create(b, loc, aligned, /*withElse=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(choice.thenBlock());
    int64_t bytes =
        vectorType.getNumElements() * vectorType.getElementTypeBitWidth() / 8;
    vector::StoreOp::create(b, loc, value, memref, at, /*nontemporal=*/true,
                            llvm::MaybeAlign(bytes));
    b.setInsertionPointToStart(choice.elseBlock());
    vector::StoreOp::create(b, loc, value, memref, at);
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

LogicalResult KernelLowering::lowerCompute(ComputeOp op) {
  loc = op.getLoc();
  Type outType = elementType(op.getOut().getArray().getValue());
  std::string error;
  Value value = compute(op, outType, error);
  if (!value)
    return op.emitError(error);
  store(op, value);
  return success();
}

namespace {
struct ConvertPerfDojoToStandardPass
    : public perfdojo::impl::ConvertPerfDojoToStandardBase<
          ConvertPerfDojoToStandardPass> {
  using Base::Base;
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<KernelOp> kernels(module.getOps<KernelOp>());
    for (KernelOp kernel : kernels) {
      KernelLowering lowering(kernel, streamingMinBytes, fpContract);
      if (failed(lowering.run()))
        return signalPassFailure();
      kernel.erase();
    }
  }
};
} // namespace
