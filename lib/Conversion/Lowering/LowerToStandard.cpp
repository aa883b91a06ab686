//===- LowerToStandard.cpp - perfdojo kernels to scf/memref/vector --------===//
//
// Each kernel becomes a function over memrefs. The tree is walked once: a
// scope becomes a loop (or, when vector-mapped, the lanes of the vector
// operations it holds), a compute operation becomes loads, the primitive in
// arith/math, and a store.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "PerfDojo/Conversion/Lowering/KernelEmitter.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/Dialect/SCF/Utils/Utils.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace perfdojo {
#define GEN_PASS_DEF_CONVERTPERFDOJOTOSTANDARD
#include "PerfDojo/Conversion/Lowering/Passes.h.inc"
} // namespace perfdojo
} // namespace mlir

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
/// The CPU lowering: a kernel becomes one function; parallel scopes
/// `scf.parallel` (OpenMP later); temporaries heap or stack memrefs.
class KernelLowering : public KernelEmitter {
public:
  KernelLowering(KernelOp kernel, int64_t streamingMinBytes, bool fpContract,
                 bool prefetchRows, int64_t prefetchAhead,
                 bool reciprocalDivide)
      : KernelEmitter(kernel, fpContract),
        streamingMinBytes(streamingMinBytes), prefetchRows(prefetchRows),
        aheadBytes(prefetchAhead), reciprocalDivide(reciprocalDivide) {}

  LogicalResult run();

private:
  StringRef targetName() const override { return "CPU"; }
  bool maskedLanes() const override { return true; }
  bool transposesInRegisters() const override { return true; }
  bool stridedLoadsInRegisters() const override { return true; }
  bool prefetchesNextRows() const override { return prefetchRows; }
  int64_t prefetchAheadBytes() const override { return aheadBytes; }
  bool reciprocalDivides() const override { return reciprocalDivide; }
  bool scattersTiles() const override { return true; }
  bool tileCarriesProducers() const override { return true; }
  bool foldsInitInto(ScopeOp scope) override {
    return getAccumulated(scope).empty(); // else lowerAccumulated takes it
  }
  bool storesTileAsWrite(ComputeOp op) override {
    return streamedTiles.contains(op);
  }
  /// Whether every update of the output of register tile `op` happens in
  /// the tile's loop: each scope around the tile's scope indexes the
  /// output, so that the tile stores each element's final value.
  bool holdsWholeReduction(ComputeOp op);
  LogicalResult lowerScope(ScopeOp scope) override;
  void emitVectorStore(Value value, Value memref, ValueRange at,
                       AccessAttr access, bool reduce) override;
  /// The reductions of a sequential scope S that can accumulate in
  /// registers through S's loop: each alone in a vector scope that is a
  /// child of S or under sequential scopes that are (accumulatedAt: a row
  /// of 56 columns, 3 vectors then 8 leftover lanes), into an element that
  /// neither S, those scopes nor the lanes index, whose buffer nothing else in
  /// S's subtree touches (no other operation reads or writes it but reductions
  /// of the same kind into the same element, which accumulate too, and the
  /// reduction's own inputs do not read it). Empty if there is none. An
  /// instance norm's sums over its 56 x 56 planes were reduced across the lanes
  /// and stored once per row of 56, about 40 cycles of dependent instructions
  /// each.
  SmallVector<ComputeOp> getAccumulated(ScopeOp scope);
  /// Lowers such a scope with vectors of partial results carried through
  /// the loop, combined and reduced once after it; its other children are
  /// lowered in each iteration as usual (a batch norm's d = x - mean
  /// stored while var += d * d accumulates). Where S holds only vector
  /// scopes, up to four vectors of partials per reduction each take every
  /// fourth iteration, so that consecutive updates do not wait for each
  /// other (a vector max with NaN propagation is a chain of several
  /// instructions); otherwise one.
  /// For max and min (NaN and signed zeros included) and integers this is
  /// exact; a float sum or product is reassociated over the scope's
  /// iterations as well as over the lanes, which the vector mapping
  /// already declares reassociable.
  LogicalResult lowerAccumulated(ScopeOp scope, ArrayRef<ComputeOp> ops);
  /// Emits `scope`, the reduction `op`'s vector scope or a sequential
  /// scope around it (accumulatedAt), so that `op`'s values combine into
  /// `partial` and the other operations run as usual; the combined
  /// partials.
  FailureOr<Value> accumulate(ScopeOp scope, ComputeOp op, Value partial);
  /// The buffers whose contiguous whole-line vector stores are
  /// non-temporal, each with an i1 that holds when its base address is
  /// aligned to 64 bytes (computed once at the function's entry):
  ///   - outputs of at least `streamingMinBytes` that no operation reads
  ///     or reduces into, or whose only reductions are register tiles with
  ///     a folded initialization (foldedInits), each holding its whole
  ///     reduction (holdsWholeReduction) and written by nothing else: the
  ///     tiles store each element once, its final value (a batched
  ///     matmul's 50 MB output; the tiles in streamedTiles);
  ///   - heap temporaries that store at least kStreamedTemporaryFactor x
  ///     `streamingMinBytes`, far more than a last-level cache, that no
  ///     operation reduces into, each dimension stored whole or as one
  ///     slot: by the time a later pass reads such a temporary, the lines
  ///     written first have left the caches anyway, and streaming saves
  ///     reading each line before writing it (a batch norm's d = x - mean,
  ///     128 MB a channel). Only their stores inside parallel scopes
  ///     stream, where pd-fence-streaming-stores orders them before the
  ///     threads join and other threads read them, and only where nothing
  ///     in the writer's parallel scope reads them but the loop right
  ///     around the writer's lanes, in the same iteration.
  void findStreamedBuffers(ArrayRef<BufferOp> parameters,
                           ArrayRef<BufferOp> temporaries);
  static constexpr int64_t kStreamedTemporaryFactor = 4;
  /// The element offset of `access` as its buffer stores it (a dimension
  /// kept as one slot contributes nothing), or std::nullopt where a
  /// dimension is stored modulo several slots (not linear).
  std::optional<OffsetForm> storedOffsetForm(AccessAttr access);
  /// Whether the contiguous vector store of `value` at `out` starts at a
  /// multiple of the vector's size for every iteration.
  bool isVectorAligned(AccessAttr out, VectorType type);
  /// The extents that `buffer`'s memref stores. A temporary with one slot
  /// per thread (every access indexes its first dimension by exactly the
  /// variable of a parallel scope) whose slots are a single row each has
  /// that row padded to a multiple of 64 bytes, so that no two threads
  /// write one cache line: a layer norm's per-row mean, variance and
  /// 1/sqrt, one float a thread each, were written by both threads into one
  /// line 3 times a row and read from it for every vector, 1.58x the time
  /// of the same loops with a line each.
  SmallVector<int64_t> storedExtents(BufferOp buffer);
  /// Whether every access to `buffer` indexes its first dimension by
  /// exactly the variable of a parallel scope.
  bool hasThreadSlots(BufferOp buffer);

  int64_t streamingMinBytes;
  bool prefetchRows;
  int64_t aheadBytes;
  bool reciprocalDivide;
  llvm::DenseMap<Operation *, bool> threadSlots;
  /// The outputs that take streaming stores, with an i1 that holds when
  /// their base address is 64-byte aligned.
  llvm::DenseMap<Operation *, Value> streamed;
  /// The temporaries among them (streamed only inside parallel scopes),
  /// and how many parallel scopes the walk is inside.
  llvm::SmallPtrSet<Operation *, 4> streamedTemporaries;
  /// The register tiles whose stores stream (findStreamedBuffers).
  llvm::SmallPtrSet<Operation *, 4> streamedTiles;
  unsigned parallelDepth = 0;
};
} // namespace

LogicalResult KernelLowering::run() {
  if (failed(checkUnrolling()))
    return failure();
  // The signature: inputs and outputs in declaration order.
  SmallVector<Type> arguments;
  SmallVector<BufferOp> parameters, temporaries;
  for (BufferOp buffer : kernel.getBuffers()) {
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
    bindArrays(buffer, argument);

  SmallVector<Value> heap;
  for (BufferOp buffer : temporaries) {
    auto type = MemRefType::get(storedExtents(buffer), buffer.getElementType());
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
    bindArrays(buffer, memref);
  }
  findFoldedInits();
  findStreamedBuffers(parameters, temporaries);

  if (failed(lowerBlock(kernel.getBodyBlock())))
    return failure();
  for (Value memref : heap)
    memref::DeallocOp::create(b, loc, memref);
  func::ReturnOp::create(b, loc);

  return unrollLoops();
}

void KernelLowering::findStreamedBuffers(ArrayRef<BufferOp> parameters,
                                         ArrayRef<BufferOp> temporaries) {
  if (streamingMinBytes <= 0)
    return;
  // Each buffer's writers and readers, and those reduced into.
  llvm::DenseMap<Operation *, SmallVector<ComputeOp>> writers, readers;
  llvm::SmallPtrSet<Operation *, 4> reduced;
  kernel.walk([&](ComputeOp op) {
    Operation *out = bufferOf(op.getOut().getArray().getValue());
    writers[out].push_back(op);
    if (op.getReduction() != Reduction::none)
      reduced.insert(out);
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input))
        readers[bufferOf(access.getArray().getValue())].push_back(op);
  });
  auto storedBytes = [&](BufferOp buffer) {
    int64_t bytes = buffer.getElementType().getIntOrFloatBitWidth() / 8;
    for (int64_t extent : storedExtents(buffer))
      bytes *= extent;
    return bytes;
  };
  // An output reduced into only by register tiles that store final values,
  // written by nothing else but their folded initializations.
  auto writtenOnceByTiles = [&](BufferOp buffer) {
    bool tiles = false;
    for (ComputeOp writer : writers.lookup(buffer)) {
      if (writer.getReduction() == Reduction::none) {
        Operation *nest = writer;
        while (nest && !foldedNests.contains(nest))
          nest = nest->getParentOp();
        if (!nest)
          return false;
        continue;
      }
      if (!foldedInits.count(writer) || !holdsWholeReduction(writer))
        return false;
      tiles = true;
    }
    return tiles;
  };
  for (BufferOp buffer : parameters) {
    if (!buffer.isOutput() || readers.count(buffer) ||
        (reduced.contains(buffer) && !writtenOnceByTiles(buffer)))
      continue;
    if (llvm::any_of(buffer.getReuse(), [](int64_t r) { return r != 0; }))
      continue;
    if (storedBytes(buffer) < streamingMinBytes)
      continue;
    StringRef array =
        *buffer.getArrays().getAsValueRange<StringAttr>().begin();
    Value base = memref::ExtractAlignedPointerAsIndexOp::create(
        b, loc, memrefs.lookup(array));
    Value misalignment =
        arith::RemUIOp::create(b, loc, base, constantIndex(64));
    streamed[buffer] = arith::CmpIOp::create(
        b, loc, arith::CmpIPredicate::eq, misalignment, constantIndex(0));
    if (reduced.contains(buffer))
      for (ComputeOp writer : writers.lookup(buffer))
        if (writer.getReduction() != Reduction::none)
          streamedTiles.insert(writer);
  }
  // Whether an operation reading a temporary runs soon after a write of it
  // by the same thread, while the line would still be cached: inside the
  // writer's outermost parallel scope, except in the same iteration of the
  // loop right around the writer's lanes (where the written vector is
  // still in a register).
  auto readSoon = [&](BufferOp buffer) {
    for (ComputeOp writer : writers.lookup(buffer)) {
      ScopeOp parallel;
      for (auto s = writer->getParentOfType<ScopeOp>(); s;
           s = s->getParentOfType<ScopeOp>())
        if (s.getMapping() == Mapping::parallel)
          parallel = s;
      Operation *loop = writer->getParentOp()->getParentOp();
      for (ComputeOp reader : readers.lookup(buffer))
        if (parallel && parallel->isAncestor(reader) &&
            reader->getParentOp()->getParentOp() != loop)
          return true;
    }
    return false;
  };
  // Heap temporaries are allocated aligned to 64 bytes (run()).
  for (BufferOp buffer : temporaries) {
    if (buffer.getLocation() != BufferLocation::heap ||
        reduced.contains(buffer) ||
        llvm::any_of(buffer.getReuse(), [](int64_t r) { return r > 1; }) ||
        storedBytes(buffer) < kStreamedTemporaryFactor * streamingMinBytes ||
        readSoon(buffer))
      continue;
    streamed[buffer] = arith::ConstantIntOp::create(b, loc, 1, 1);
    streamedTemporaries.insert(buffer);
  }
}

bool KernelLowering::holdsWholeReduction(ComputeOp op) {
  // The tile's scope: the sequential scope above its unrolled scopes and
  // lanes.
  Operation *tile = op->getParentOp();
  while (auto s = dyn_cast<ScopeOp>(tile)) {
    if (s.getMapping() == Mapping::seq)
      break;
    tile = s->getParentOp();
  }
  SmallVector<LinearForm> forms(op.getOut().getLinearForms());
  for (auto s = tile->getParentOfType<ScopeOp>(); s;
       s = s->getParentOfType<ScopeOp>())
    if (llvm::none_of(forms, [&](const LinearForm &f) {
          return f.coeff(s.getDepth()) != 0;
        }))
      return false;
  return true;
}

std::optional<KernelEmitter::OffsetForm>
KernelLowering::storedOffsetForm(AccessAttr access) {
  BufferOp buffer = bufferOf(access.getArray().getValue());
  SmallVector<int64_t> extents = storedExtents(buffer);
  SmallVector<bool> skip;
  for (int64_t reuse : buffer.getReuse()) {
    if (reuse > 1)
      return std::nullopt;      // stored modulo several slots
    skip.push_back(reuse == 1); // one slot: index 0
  }
  return offsetForm(access, extents, skip);
}

SmallVector<int64_t> KernelLowering::storedExtents(BufferOp buffer) {
  SmallVector<int64_t> extents;
  for (unsigned d = 0; d < buffer.getShape().size(); ++d)
    extents.push_back(buffer.getStoredExtent(d));
  unsigned bits = buffer.getElementType().getIntOrFloatBitWidth();
  if (!buffer.isTemporary() || extents.size() < 2 || extents.front() < 2 ||
      bits % 8 || 512 % bits ||
      llvm::any_of(ArrayRef(extents).drop_front().drop_back(),
                   [](int64_t e) { return e != 1; }) ||
      !hasThreadSlots(buffer))
    return extents;
  int64_t line = 512 / bits; // elements in 64 bytes
  extents.back() = llvm::alignTo(extents.back(), line);
  return extents;
}

bool KernelLowering::hasThreadSlots(BufferOp buffer) {
  auto found = threadSlots.find(buffer);
  if (found != threadSlots.end())
    return found->second;
  bool slots = true, accessed = false;
  kernel.walk([&](ComputeOp op) {
    SmallVector<Attribute> accesses{op.getOut()};
    llvm::append_range(accesses, op.getInputs());
    for (Attribute attr : accesses) {
      auto access = dyn_cast<AccessAttr>(attr);
      if (!access || bufferOf(access.getArray().getValue()) != buffer)
        continue;
      accessed = true;
      SmallVector<LinearForm> forms(access.getLinearForms());
      const LinearForm &first = forms.front();
      // Exactly one variable, {d}, with coefficient 1 and no constant.
      unsigned depth = first.getNumDims();
      bool single = first.constant == 0 && depth > 0 &&
                    first.coeff(depth - 1) == 1 &&
                    llvm::all_of(ArrayRef(first.coeffs).drop_back(),
                                 [](int64_t c) { return c == 0; });
      ScopeOp scope;
      for (auto s = op->getParentOfType<ScopeOp>(); single && s;
           s = s->getParentOfType<ScopeOp>())
        if (s.getDepth() == depth - 1)
          scope = s;
      slots &= single && scope && scope.getMapping() == Mapping::parallel;
    }
  });
  return threadSlots[buffer] = slots && accessed;
}

bool KernelLowering::isVectorAligned(AccessAttr out, VectorType type) {
  if (type.getElementTypeBitWidth() % 8)
    return false;
  int64_t elementBytes = type.getElementTypeBitWidth() / 8;
  int64_t width = type.getNumElements();
  int64_t vectorBytes = width * elementBytes;
  int64_t line = 64 / elementBytes;
  // A whole 64-byte cache line, aligned to it (the base is 64-byte
  // aligned). A narrower non-temporal store that fills part of a line
  // whose rest other stores write flushes the write-combining buffer
  // partially: batchnorm_8x64x300x300's 4-wide remainder columns made the
  // whole kernel half again slower (46 -> 69 ms).
  std::optional<OffsetForm> offset = storedOffsetForm(out);
  if (!offset)
    return false;
  if (vectorBytes == 64)
    return isMultipleOf(*offset, width);
  // A narrower vector (AVX2's 32 bytes) streams when the loop right around
  // its lanes writes whole lines, one after the other: consecutive
  // iterations store consecutive vectors, the loop's first vector starts a
  // line and its vectors end one (softmax's 64 x 8 floats of a row).
  if (vectorBytes > 64 || 64 % vectorBytes || !lanes.scope)
    return false;
  auto loop = dyn_cast<ScopeOp>(lanes.scope->getParentOp());
  if (!loop ||
      (loop.getMapping() != Mapping::seq &&
       loop.getMapping() != Mapping::unroll) ||
      (int64_t(loop.getSize()) * width) % line)
    return false;
  if (offset->start % line || offset->steps[loop.getDepth()] != width)
    return false;
  for (unsigned v = 0; v < ivs.size(); ++v)
    if (ivs[v] && v != loop.getDepth() && offset->steps[v] % line)
      return false;
  return true;
}

LogicalResult KernelLowering::lowerScope(ScopeOp scope) {
  if (scope.getMapping() != Mapping::vector)
    hoistReciprocals(scope);
  switch (scope.getMapping()) {
  case Mapping::parallel: {
    loc = scope.getLoc();
    OpBuilder::InsertionGuard guard(b);
    auto loop = scf::ParallelOp::create(
        b, loc, ValueRange{constantIndex(0)},
        ValueRange{constantIndex(scope.getSize())},
        ValueRange{constantIndex(1)});
    b.setInsertionPoint(loop.getBody()->getTerminator());
    ivs.push_back(loop.getInductionVars()[0]);
    ++parallelDepth;
    LogicalResult result = lowerBlock(scope.getBodyBlock());
    --parallelDepth;
    ivs.pop_back();
    return result;
  }
  case Mapping::seq: {
    loc = scope.getLoc();
    if (SmallVector<ComputeOp> ops = getAccumulated(scope); !ops.empty())
      return lowerAccumulated(scope, ops);
    return KernelEmitter::lowerScope(scope); // a register tile or a loop
  }
  case Mapping::grid:
  case Mapping::block:
  case Mapping::warp:
    return scope.emitError() << "a scope mapped "
                             << stringifyMapping(scope.getMapping())
                             << " is for GPUs; the CPU lowering cannot run it";
  default:
    return KernelEmitter::lowerScope(scope);
  }
}

void KernelLowering::emitVectorStore(Value value, Value memref, ValueRange at,
                                     AccessAttr out, bool reduce) {
  auto vectorType = cast<VectorType>(value.getType());
  Operation *buffer = bufferOf(out.getArray().getValue());
  Value aligned = streamed.lookup(buffer);
  if (!parallelDepth && streamedTemporaries.contains(buffer))
    aligned = {};
  if (lanes.masked())
    return KernelEmitter::emitVectorStore(value, memref, at, out, reduce);
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
}

/// The reduction that `child`, a child of a scope S, accumulates: the
/// only reduction in its subtree, alone in a vector scope that is `child`
/// or lies under sequential scopes up to it (which may hold other
/// operations: a row's d = x - mean beside var += d * d), into an element
/// that none of those scopes nor the lanes index. Null otherwise.
static ComputeOp accumulatedAt(Operation &child) {
  auto top = dyn_cast<ScopeOp>(child);
  if (!top)
    return {};
  ComputeOp found;
  unsigned reductions = 0;
  top.walk([&](ComputeOp op) {
    if (op.getReduction() != Reduction::none) {
      found = op;
      ++reductions;
    }
  });
  if (reductions != 1)
    return {};
  auto vector = dyn_cast<ScopeOp>(found->getParentOp());
  if (!vector || vector.getMapping() != Mapping::vector ||
      !llvm::hasSingleElement(vector.getBodyBlock()))
    return {};
  SmallVector<unsigned> depths;
  for (ScopeOp s = vector;; s = cast<ScopeOp>(s->getParentOp())) {
    if (s != vector && s.getMapping() != Mapping::seq)
      return {};
    depths.push_back(s.getDepth());
    if (s == top)
      break;
  }
  for (const LinearForm &form : found.getOut().getLinearForms())
    for (unsigned d : depths)
      if (form.coeff(d))
        return {};
  return found;
}

SmallVector<ComputeOp> KernelLowering::getAccumulated(ScopeOp scope) {
  SmallVector<ComputeOp> found;
  for (Operation &child : scope.getBodyBlock()) {
    ComputeOp op = accumulatedAt(child);
    if (!op)
      continue;
    BufferOp out = bufferOf(op.getOut().getArray().getValue());
    bool extremum = op.getReduction() == Reduction::max ||
                    op.getReduction() == Reduction::min;
    if ((extremum && !isa<FloatType>(out.getElementType())) ||
        llvm::any_of(op.getOut().getLinearForms(), [&](const LinearForm &f) {
          return f.coeff(scope.getDepth()) != 0;
        }))
      continue;
    found.push_back(op);
  }
  // An accumulated element is in memory only after the loop: nothing else
  // in the scope may read or write its buffer (another array of it
  // included), and its own inputs may not read it. Several reductions
  // into one element (a row's vectors and its leftover columns) each keep
  // partials of their own when they are of one kind into the same array
  // and element; into other elements of the buffer, none accumulates.
  auto touches = [&](ComputeOp op, Operation *buffer) {
    for (Attribute input : op.getInputs())
      if (auto access = dyn_cast<AccessAttr>(input);
          access && bufferOf(access.getArray().getValue()) == buffer)
        return true;
    return false;
  };
  auto sameElement = [](ComputeOp a, ComputeOp b) {
    return a.getReduction() == b.getReduction() && a.getOut() == b.getOut();
  };
  SmallVector<ComputeOp> kept;
  for (ComputeOp accumulated : found) {
    Operation *out = bufferOf(accumulated.getOut().getArray().getValue());
    if (touches(accumulated, out))
      continue;
    bool shared = false;
    scope.walk([&](ComputeOp other) {
      if (other == accumulated)
        return;
      bool partner = llvm::is_contained(found, other) &&
                     sameElement(accumulated, other) && !touches(other, out);
      shared |=
          !partner && (touches(other, out) ||
                       bufferOf(other.getOut().getArray().getValue()) == out);
    });
    if (!shared)
      kept.push_back(accumulated);
  }
  return kept;
}

LogicalResult KernelLowering::lowerAccumulated(ScopeOp scope,
                                               ArrayRef<ComputeOp> ops) {
  auto vectorScope = [](ComputeOp op) {
    return cast<ScopeOp>(op->getParentOp());
  };
  auto typeOf = [&](ComputeOp op) {
    return elementType(op.getOut().getArray().getValue());
  };
  // Several vectors of partials per reduction, each taking every count-th
  // iteration (the body is emitted once per vector), where the body is
  // flat: only vector scopes, so that copying it cannot multiply unrolled
  // or nested loops.
  int64_t size = scope.getSize();
  bool flat = llvm::all_of(scope.getBodyBlock(), [](Operation &child) {
    auto inner = dyn_cast<ScopeOp>(child);
    return inner && inner.getMapping() == Mapping::vector;
  });
  int64_t count = !flat            ? 1
                  : size % 4 == 0 ? 4
                  : size % 2 == 0 ? 2
                                  : 1;
  // The identity of each reduction (max= and min= are on floats only here,
  // getAccumulated, so every identity is exact), in its lanes' vectors.
  SmallVector<Value> inits;
  for (ComputeOp op : ops) {
    enterLanes(vectorScope(op), op);
    Value init = constant(*getReductionIdentity(op.getReduction(), typeOf(op)),
                          vectorOf(typeOf(op)));
    inits.append(count, init);
    lanes = {};
  }
  auto loop = scf::ForOp::create(b, loc, constantIndex(0), constantIndex(size),
                                 constantIndex(count), inits);
  {
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(loop.getBody());
    SmallVector<Value> next(inits.size());
    for (int64_t k = 0; k < count; ++k) {
      Value iv = loop.getInductionVar();
      if (k)
        iv = arith::AddIOp::create(b, loc, iv, constantIndex(k));
      ivs.push_back(iv);
      for (Operation &child : scope.getBodyBlock()) {
        const ComputeOp *it = llvm::find_if(
            ops, [&](ComputeOp op) { return child.isAncestor(op); });
        if (it == ops.end()) {
          if (failed(lowerNode(child))) {
            ivs.pop_back();
            return failure();
          }
          continue;
        }
        unsigned slot = unsigned(it - ops.begin()) * count + k;
        FailureOr<Value> updated = accumulate(cast<ScopeOp>(child), *it,
                                              loop.getRegionIterArgs()[slot]);
        if (failed(updated)) {
          ivs.pop_back();
          return failure();
        }
        next[slot] = *updated;
      }
      ivs.pop_back();
    }
    scf::YieldOp::create(b, loc, next);
  }
  // Each reduction's partials combined and its lanes reduced; those of
  // the reductions into one element combined (in the order of the
  // scope's children), then one update of the element.
  auto reduced = [&](size_t i) {
    ComputeOp op = ops[i];
    Type type = typeOf(op);
    SmallVector<Value> partial(loop.getResults().slice(i * count, count));
    while (partial.size() > 1) {
      SmallVector<Value> halved;
      for (size_t j = 0; j < partial.size(); j += 2)
        halved.push_back(binary(getCombiner(op.getReduction()), partial[j],
                                partial[j + 1], type));
      partial = std::move(halved);
    }
    enterLanes(vectorScope(op), op);
    loc = op.getLoc();
    Value total = reduceLanes(partial.front(), op.getReduction(), type);
    lanes = {};
    return total;
  };
  for (size_t i = 0; i < ops.size(); ++i) {
    ComputeOp op = ops[i];
    if (llvm::any_of(ops.take_front(i), [&](ComputeOp other) {
          return other.getOut() == op.getOut();
        }))
      continue;
    Type type = typeOf(op);
    Value total = reduced(i);
    for (size_t j = i + 1; j < ops.size(); ++j)
      if (ComputeOp(ops[j]).getOut() == op.getOut())
        total = binary(getCombiner(op.getReduction()), total, reduced(j), type);
    loc = op.getLoc();
    Value memref = memrefs.lookup(op.getOut().getArray().getValue());
    SmallVector<Value> at = indices(op.getOut(), 0);
    Value updated =
        binary(getCombiner(op.getReduction()),
               memref::LoadOp::create(b, loc, memref, at), total, type);
    memref::StoreOp::create(b, loc, updated, memref, at);
  }
  return success();
}

FailureOr<Value> KernelLowering::accumulate(ScopeOp scope, ComputeOp op,
                                            Value partial) {
  Type type = elementType(op.getOut().getArray().getValue());
  if (scope.getMapping() == Mapping::vector) {
    enterLanes(scope, op);
    ivs.push_back(Value());
    loc = op.getLoc();
    prefetchAhead(scope);
    std::string error;
    Value value = compute(op, type, error);
    ivs.pop_back();
    lanes = {};
    if (!value)
      return op.emitError(error);
    return binary(getCombiner(op.getReduction()), partial, value, type);
  }
  // A sequential scope on the way: a loop that carries the partials, its
  // other children lowered as usual in each iteration.
  loc = scope.getLoc();
  auto loop = scf::ForOp::create(b, loc, constantIndex(0),
                                 constantIndex(scope.getSize()),
                                 constantIndex(1), ValueRange{partial});
  OpBuilder::InsertionGuard guard(b);
  b.setInsertionPointToStart(loop.getBody());
  ivs.push_back(loop.getInductionVar());
  Value updated = loop.getRegionIterArgs()[0];
  for (Operation &child : scope.getBodyBlock()) {
    if (!child.isAncestor(op)) {
      if (failed(lowerNode(child))) {
        ivs.pop_back();
        return failure();
      }
      continue;
    }
    FailureOr<Value> next = accumulate(cast<ScopeOp>(child), op, updated);
    if (failed(next)) {
      ivs.pop_back();
      return failure();
    }
    updated = *next;
  }
  ivs.pop_back();
  loc = scope.getLoc();
  scf::YieldOp::create(b, loc, updated);
  return loop.getResult(0);
}

LogicalResult mlir::perfdojo::replaceKernelCalls(ModuleOp module) {
  // The perfdojo.call verifier has checked the memref types against the
  // kernel's buffers: the types its function takes, so a plain func.call
  // replaces the call.
  SymbolTableCollection symbols;
  SmallVector<perfdojo::CallOp> calls;
  module.walk([&](perfdojo::CallOp call) { calls.push_back(call); });
  for (perfdojo::CallOp call : calls) {
    auto func = symbols.lookupNearestSymbolFrom<func::FuncOp>(
        call, call.getCalleeAttr());
    if (!func || !llvm::equal(func.getFunctionType().getInputs(),
                              call.getOperands().getTypes()))
      return call.emitOpError("calls '")
             << call.getCallee()
             << "', which did not become a function of matching type";
    OpBuilder builder(call);
    func::CallOp::create(builder, call.getLoc(), func, call.getOperands());
    call.erase();
  }
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
      KernelLowering lowering(kernel, streamingMinBytes, fpContract,
                              prefetchRows, prefetchAhead, reciprocalDivide);
      if (failed(lowering.run()))
        return signalPassFailure();
      kernel.erase();
    }
    if (failed(replaceKernelCalls(module)))
      return signalPassFailure();
  }
};
} // namespace
