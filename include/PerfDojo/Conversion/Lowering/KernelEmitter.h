//===- KernelEmitter.h - What every lowering of a kernel shares -*- C++ -*-===//
//
// The CPU lowering (`convert-perfdojo-to-standard`) and the GPU lowering
// (`convert-perfdojo-to-gpu`) walk the same tree and emit the same loads,
// stores and scalar primitives; they differ in where buffers live and in
// what a mapped scope becomes. KernelEmitter holds the shared part:
//
//   - the tree walk (lowerBlock, sequential and unrolled scopes as
//     `scf.for`, vector scopes as lanes, compute operations);
//   - access classification in the lanes (invariant, contiguous,
//     scattered) and the stored indices of an access (reuse as `mod`,
//     a dimension the target collapsed to one slot as 0);
//   - loads, stores and reductions into elements, scalar or vector;
//   - the scalar primitives in `arith`/`math`, conversions, constants and
//     horizontal reductions of lanes.
//
// A lowering derives from it, binds every array to a memref, and overrides
// lowerScope for the mappings it gives a meaning to, and the vector load
// and store hooks where it knows more about alignment or streaming.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_CONVERSION_LOWERING_KERNELEMITTER_H
#define PERFDOJO_CONVERSION_LOWERING_KERNELEMITTER_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace perfdojo {

/// The primitive a reduction combines with.
OpKind getCombiner(Reduction reduction);

class KernelEmitter {
public:
  KernelEmitter(KernelOp kernel, bool fpContract)
      : kernel(kernel), b(kernel), loc(kernel.getLoc()),
        fpContract(fpContract) {
    for (BufferOp buffer : kernel.getBuffers())
      for (StringRef array : buffer.getArrays().getAsValueRange<StringAttr>())
        buffers[array] = buffer;
  }
  virtual ~KernelEmitter() = default;

  /// The most copies of compute operations that unrolling may emit. Each
  /// unrolled scope copies its body (up to 64 times, the unroll move's
  /// limit), so nested unrolled scopes multiply: three of 64 would emit
  /// 262,144 copies, on which LLVM's optimizer runs for many minutes.
  static constexpr int64_t kMaxUnrolledCopies = 4096;

  /// Bounds on the code a function may hold once its unrolled loops are
  /// expanded (checked before expanding them). Copies are not all alike: a
  /// vector update whose operand is gathered lane by lane is a load per
  /// lane. LLVM's time on one function grows with its memory accesses
  /// times its writes (it checks accesses against writes for aliasing):
  /// measured on this project's CPU machine (LLVM 22, -O3), 1,024
  /// unrolled copies of a contiguous 8-wide copy (2,048 accesses, 1,024
  /// writes) compile in 3.6 s, 2,048 in 14 s, 4,096 16-wide ones in 57 s;
  /// 512 copies of a 16-lane gather (8,704 accesses) in 5.6 s, 1,024 in
  /// 16.5 s. So: at most kMaxAccessPairs accesses x writes (about 15 s),
  /// and at most kMaxEmittedOperations operations in all.
  static constexpr int64_t kMaxAccessPairs = 10'000'000;
  /// The words every refusal of the lowering for the size of the code it
  /// would emit contains (unrolled copies, operations, accesses x writes):
  /// a limit of the lowering, not a fault of the kernel, which pd-walk
  /// counts apart from failures.
  static constexpr const char *kCodeSizeRefusal =
      "which would take minutes to compile";
  static constexpr int64_t kMaxEmittedOperations = 400'000;

  /// The largest step between the elements of consecutive lanes that
  /// loadStrided reads as whole vectors (4: four vector loads for each).
  static constexpr int64_t kMaxLaneStride = 4;
  /// The outermost unrolled scope under `root` at which the copies that
  /// unrolling emits pass kMaxUnrolledCopies, or null if they do not.
  static ScopeOp findExcessUnrolling(Operation *root);

protected:
  /// The lanes of the vector scope being lowered, if any.
  struct Lanes {
    /// The vector scope.
    ScopeOp scope;
    unsigned depth = 0;
    /// The scope's iterations.
    int64_t width = 1;
    bool active = false;
    /// The lanes of the vectors that hold them: `width`, or the next power
    /// of two when the target masks the lanes past `width` (maskedLanes).
    int64_t registerWidth = 1;
    bool masked() const { return registerWidth != width; }
  };
  /// Enters the lanes of vector scope `vec`; with `maskable`, the
  /// operation in it, whose lanes are masked (see maskedLanes) where the
  /// target masks lanes and the operation allows.
  void enterLanes(ScopeOp vec, ComputeOp maskable = {});
  /// Whether the target may compute a vector scope whose size is not a
  /// power of two on the next power of two of lanes, its loads and stores
  /// masked to the scope's iterations: one 8-lane fused multiply-add for a
  /// convolution's 6 leftover columns, not a 4-lane and a 2-lane one. Only
  /// where the values stay in registers through a loop (a register tile,
  /// vector accumulators) and the lanes are loaded and stored once around
  /// it: a masked store is slow, and a load of what it stored waits for it
  /// (a 3x3 average pool whose 6 leftover columns were summed in memory
  /// through masked stores ran 2.1x slower). Only for operations on
  /// floats, whose extra lanes cannot trap.
  virtual bool maskedLanes() const { return false; }
  /// The i1 vector of the lanes that are iterations of the scope.
  Value laneMask();

  //===--------------------------------------------------------------------===//
  // The tree walk
  //===--------------------------------------------------------------------===//

  /// Lowers the scopes and operations of `block` in order.
  LogicalResult lowerBlock(Block &block);
  /// Lowers one child of a block (a scope or a compute operation).
  LogicalResult lowerNode(Operation &op);
  /// Lowers a scope by its mapping. The base handles sequential and
  /// unrolled scopes (lowerLoop) and vector scopes (lowerVectorScope), and
  /// refuses the others naming `targetName()`.
  virtual LogicalResult lowerScope(ScopeOp scope);
  /// A sequential or unrolled scope as an `scf.for` holding its body;
  /// unrolled loops are expanded by unrollLoops().
  LogicalResult lowerLoop(ScopeOp scope);
  /// Creates the `scf.for` of `scope`, moves the insertion point into its
  /// body and pushes its variable; the caller guards the insertion point
  /// and pops the variable.
  scf::ForOp beginLoop(ScopeOp scope);
  /// Refuses kernels whose unrolled scopes copy too much (naming the
  /// outermost culprit).
  LogicalResult checkUnrolling();
  /// A vector scope: its one operation on `size` lanes.
  LogicalResult lowerVectorScope(ScopeOp scope);
  /// Whether the target prefetches the next row of a pass over rows
  /// (prefetchNextRow).
  virtual bool prefetchesNextRows() const { return false; }
  /// Where a sequential scope S (a row) holds several passes of the same
  /// shape, a loop L of a vector scope each (a layernorm's mean, variance
  /// and normalization over a row of x), and the first of them reads an
  /// input A at an index that S's variable s steps (x[s, ...]): the first
  /// vector scope of the second such pass, `vec`, also prefetches into the
  /// L2 cache the vector of A that the first pass reads at s + 1 (the row
  /// clamped to A's rows), at the same position in the row. The first
  /// pass of each row then finds its data on the way, where it would wait
  /// for DRAM at every row's start: the hardware prefetchers follow a
  /// stream only within a 4 KB page and stop between rows, and the later
  /// passes, which read the row from L1, keep the core from running
  /// ahead. Only rows of A of at most kMaxPrefetchedRowBytes.
  void prefetchNextRow(ScopeOp vec);
  /// The passes and the access of prefetchNextRow for the passes of the
  /// shape of `loop` (a loop of a vector scope) in its parent row: the
  /// first pass reading `read`, and the second, which prefetches. None
  /// where no pass prefetches for them.
  struct NextRowPrefetch {
    ScopeOp first, second;
    AccessAttr read;
  };
  std::optional<NextRowPrefetch> findNextRowPrefetch(ScopeOp loop);
  /// The most bytes of a row that prefetchNextRow brings in ahead.
  static constexpr int64_t kMaxPrefetchedRowBytes = 64 * 1024;
  /// How many bytes ahead a vector scope prefetches the inputs it streams
  /// (prefetchAhead); 0: it does not.
  virtual int64_t prefetchAheadBytes() const { return 0; }
  /// In a vector scope `vec` right inside a sequential loop L: for each
  /// input of at least kMinPrefetchedInputBytes whose consecutive vectors
  /// L's iterations read (a stream, continued by the scopes around L whose
  /// next iteration starts within the distance of the current one's end,
  /// of at least kMinStreamBytes), prefetches into the L2 cache the element
  /// prefetchAheadBytes() further on in the input's row-major layout
  /// (clamped to it), once per input buffer. Not where a scope around L
  /// reads the same elements in each iteration, an earlier pass over the
  /// row read the input, or prefetchNextRow brings the row in. A
  /// hand-written row sum from DRAM (bench/ceiling/stream_prefetch.c) ran
  /// 5-34 % faster with a prefetch 256 B-1 KB ahead; the lowered kernels
  /// measured level (docs/Evaluation.md), so targets leave it off.
  void prefetchAhead(ScopeOp vec);
  /// Whether a floating-point division by an element that a loop's
  /// iterations all share multiplies by its reciprocal (hoistReciprocals);
  /// false: every division rounds once.
  virtual bool reciprocalDivides() const { return false; }
  /// With the insertion point before the loop of `scope` (not a vector
  /// scope): for each floating-point division in its subtree not yet
  /// seen whose divisor is an element that neither `scope`'s variable nor
  /// any inside it indexes, in a buffer that nothing in the subtree
  /// writes, loads the divisor there and computes its reciprocal
  /// (`reciprocals`), which compute() then multiplies by. Hoisted to the
  /// outermost such loop, so once per row for a softmax's normalization:
  /// one scalar division instead of a vector one per vector (LLVM's models
  /// of Zen 1 and Zen 4: a vector division every 6 cycles, a
  /// multiplication every cycle), where LLVM would not hoist the divisor's load past
  /// the stores to another buffer (the OpenMP body loses the arguments'
  /// noalias). The product differs from the quotient by at most about an
  /// ulp more; zeros, infinities and NaN come out as the division's, but a
  /// divisor below 2^-128 in magnitude (subnormal) has an infinite
  /// reciprocal, so its quotients come out infinite.
  void hoistReciprocals(ScopeOp scope);
  llvm::DenseMap<Operation *, Value> reciprocals;
  /// Whether an operation among the children of `loop`'s parent that come
  /// before `loop` reads `buffer`.
  bool readBefore(ScopeOp loop, BufferOp buffer);
  /// The shortest stream (bytes of L's iterations) that prefetchAhead
  /// prefetches: a shorter row is over before a prefetch could help.
  static constexpr int64_t kMinStreamBytes = 4096;
  /// The smallest input that prefetchAhead prefetches: a smaller one may
  /// stay in the caches from one call to the next (mul's 1 MB), where the
  /// prefetches only cost instructions.
  static constexpr int64_t kMinPrefetchedInputBytes = 8 << 20;
  /// A sequential scope S whose body is a chain of unrolled scopes ending in
  /// one reduction, in a vector scope whose lanes its element is contiguous
  /// in (or, where scattersTiles, runs along with any one step), or alone (a
  /// scalar tile, where maxScalarTile allows), whose element is invariant in S
  /// and never read by the operation's inputs, and for any two instances of the
  /// unrolled scopes the same element (vector) or ones that do not overlap (at
  /// most kMaxTileVectors distinct vectors or maxScalarTile elements, at most
  /// kMaxTileInstances instances): that operation and the unrolled scopes, else
  /// null.
  /// Where the target carries producers (tileCarriesProducers), the
  /// vector scope may also hold, before the reduction, element-wise
  /// operations into temporaries that only it reads (tileProducers).
  ComputeOp getRegisterTile(ScopeOp scope, SmallVectorImpl<ScopeOp> &unrolls);
  /// Whether register tiles may carry element-wise producers. The CPU's
  /// do; the GPU's carried tiles assume the reduction alone.
  virtual bool tileCarriesProducers() const { return false; }
  /// The operations that vector scope `vec` runs before its last one, the
  /// reduction `op`, where each is element-wise (no reduction), reads and
  /// writes only `op`'s element type, and writes a temporary that nothing
  /// in the kernel touches but itself and later operations of `vec`, which
  /// read it only at the element it writes, and no later one writes; none
  /// reads `op`'s buffer. Their values then pass to the readers in registers
  /// and are never stored (the temporary is dead outside the scope): a distance
  /// matrix's t = a - b beside d += t * t. std::nullopt otherwise; empty
  /// for a scope that holds the reduction alone.
  std::optional<SmallVector<ComputeOp>> tileProducers(ScopeOp vec,
                                                      ComputeOp op);
  /// The values of a register tile instance's producers, by the access
  /// each writes: `operand` reads them instead of memory.
  llvm::DenseMap<Attribute, Value> forwardedValues;
  /// Lowers such a scope keeping one value per distinct element (vector)
  /// in registers through the loop: loaded before, updated in the same
  /// order as the scope would (exact), stored after. Without it, the
  /// updates go to memory in every iteration (LLVM's LICM promoted only
  /// some of a GPU tile's 32 accumulators: a load and a store per
  /// multiply-add for the others).
  LogicalResult lowerRegisterTile(ScopeOp scope, ComputeOp op,
                                  ArrayRef<ScopeOp> unrolls);
  /// A register tile's accumulators: per instance of the unrolled scopes
  /// (`combos`, in order), the accumulator it updates (`slot`); per
  /// accumulator, the first instance that updates it (`first`).
  struct TileSlots {
    SmallVector<SmallVector<int64_t>> combos;
    SmallVector<unsigned> slot, first;
  };
  TileSlots getTileSlots(ComputeOp op, ArrayRef<ScopeOp> unrolls);
  /// Binds the variables from S's depth on: S's to `sVar`, the unrolled
  /// scopes' to the instance `combo`, the lanes' (a vector tile) to none.
  void bindTileInstance(ScopeOp scope, Value sVar, ArrayRef<int64_t> combo,
                        ComputeOp op);
  /// Loads (stores) a register tile's accumulators from (to) its output,
  /// with the variables of the scopes around S bound (and the lanes
  /// entered for a vector tile).
  SmallVector<Value> loadTile(ScopeOp scope, ComputeOp op,
                              ArrayRef<ScopeOp> unrolls, const TileSlots &tile);
  void storeTile(ScopeOp scope, ComputeOp op, ArrayRef<ScopeOp> unrolls,
                 const TileSlots &tile, ValueRange values);
  /// A register tile whose accumulators an enclosing loop carries (the GPU
  /// lowering's slices of a product staged in shared memory): the tile
  /// starts from `inits` and leaves its results in `results` rather than
  /// loading and storing its output.
  struct CarriedTile {
    SmallVector<Value> inits, results;
  };
  llvm::DenseMap<Operation *, CarriedTile *> carriedTiles;
  /// A register tile's initialization folded into it: the nest right
  /// before the tile's scope S (its previous sibling) sets every element
  /// that the tile accumulates, and no other, to one constant, with
  /// nothing but scopes and that one operation (matmul's C = 0 before
  /// its k loop). The tile's accumulators then start from the constant
  /// instead of loading what the nest stored, and the nest is not
  /// emitted: each element is stored once, after its tile's loop, rather
  /// than stored, loaded back and stored again (LLVM kept the first
  /// stores). The constant by the tile's operation, and the nests.
  llvm::DenseMap<Operation *, double> foldedInits;
  llvm::SmallPtrSet<Operation *, 8> foldedNests;
  /// Finds every folded initialization in the kernel (only into the tiles
  /// that `foldsInitInto` accepts).
  void findFoldedInits();
  /// The constant that `nest`, the previous sibling of register tile
  /// `scope` (with `op` and `unrolls`), sets every element of the tile
  /// to, where it sets exactly those; std::nullopt otherwise.
  std::optional<double> initializedTile(Operation &nest, ScopeOp scope,
                                        ComputeOp op,
                                        ArrayRef<ScopeOp> unrolls);
  /// Whether the target folds an initialization into the register tile of
  /// `scope`: only where lowerScope lowers the scope as that tile (the
  /// nest is skipped either way). The CPU does; the GPU's tiles may be
  /// carried through staging loops instead.
  virtual bool foldsInitInto(ScopeOp scope) { return false; }
  /// Whether the target keeps register tiles whose lanes run along a
  /// dimension of the output other than its contiguous one (a
  /// convolution's output channels), gathering each vector lane by lane
  /// before the tile's loop and scattering it after: a load and a store
  /// per lane once per tile, not per update. The CPU does.
  virtual bool scattersTiles() const { return false; }
  /// Whether vector register tile `op` is such a tile.
  bool scatteredTile(ComputeOp op);
  /// Whether register tile `op` stores its accumulators with
  /// emitVectorStore as plain stores (reduce false), which a target may
  /// make non-temporal; otherwise as the stores of a reduction.
  virtual bool storesTileAsWrite(ComputeOp op) { return false; }
  /// Vector registers a vector register tile may hold (of AVX-512's 32,
  /// the rest for the loaded operands), and unrolled instances it may have
  /// (code size: a 3 x 3 window over 4 x 3 vectors is 108).
  static constexpr size_t kMaxTileVectors = 24;
  static constexpr int64_t kMaxTileInstances = 256;
  /// The most elements a scalar register tile may hold; 0 for none (the
  /// CPU, whose expert vectorizes its tiles).
  virtual int64_t maxScalarTile() const { return 0; }
  /// Loads the operands, computes and stores one operation.
  virtual LogicalResult lowerCompute(ComputeOp op);
  /// Fully unrolls the loops of unrolled scopes, innermost first, unless
  /// the function would then pass kMaxEmittedOperations or kMaxAccessPairs
  /// (refused, naming the unrolled scope that copies most).
  LogicalResult unrollLoops();
  /// The target's name in refusals ("CPU", "GPU").
  virtual StringRef targetName() const = 0;
  /// Why the target cannot compute primitive `kind` with an output of
  /// `type`, or an empty string when it can.
  virtual StringRef whyCannotCompute(OpKind kind, Type type) const {
    return {};
  }

  //===--------------------------------------------------------------------===//
  // Accesses
  //===--------------------------------------------------------------------===//

  Value constantIndex(int64_t value) {
    return arith::ConstantIndexOp::create(b, loc, value);
  }
  /// The stored indices of `access`, with the lane variable (if any) at
  /// `lane`.
  SmallVector<Value> indices(AccessAttr access, int64_t lane);
  /// Whether dimension `dim` of `buffer` is stored as one slot (see
  /// collapsedDims).
  bool isCollapsed(BufferOp buffer, unsigned dim) const {
    auto it = collapsedDims.find(buffer);
    return it != collapsedDims.end() && it->second[dim];
  }
  /// The slots of dimension `dim` of `buffer` stored as a window (see
  /// windowDims), 0 if none.
  int64_t windowExtent(BufferOp buffer, unsigned dim) const {
    auto it = windowDims.find(buffer);
    return it == windowDims.end() ? 0 : it->second.extents[dim];
  }

  /// Lane-invariant, contiguous, or neither, for `access` in the lanes.
  enum class Pattern { Invariant, Contiguous, Scattered };
  Pattern classify(AccessAttr access);
  /// Whether the element offset of `access` (row-major in its buffer's
  /// logical shape) is a multiple of `width` for every iteration of the
  /// enclosing scopes (the lanes excepted).
  bool isOffsetMultipleOf(AccessAttr access, int64_t width);
  /// The element offset of `access` (row-major in its buffer's logical
  /// shape): its constant start, and the step of each enclosing scope's
  /// variable (by depth; the lanes' too).
  struct OffsetForm {
    int64_t start = 0;
    SmallVector<int64_t> steps;
  };
  OffsetForm offsetForm(AccessAttr access);
  /// The same in a row-major layout of `extents` (a buffer's stored
  /// extents), the dimensions where `skip` holds contributing nothing (a
  /// dimension kept as one slot).
  OffsetForm offsetForm(AccessAttr access, ArrayRef<int64_t> extents,
                        ArrayRef<bool> skip);
  /// Whether `offset`'s start and every step but the lanes' are multiples
  /// of `width`.
  bool isMultipleOf(const OffsetForm &offset, int64_t width);

  Value load(AccessAttr access);
  /// Whether the target transposes blocks of a gathered operand in
  /// registers (loadTransposed).
  virtual bool transposesInRegisters() const { return false; }
  /// A gathered read under an unrolled scope U of as many iterations as
  /// there are lanes, right around the lanes, whose last index is U's
  /// variable (coefficient 1) and whose lanes step along one other index
  /// (a blocked transpose: `8:u 8:v y[i*8+{u},j*8+{v}]=x[j*8+{v},i*8+{u}]`):
  /// the W x W block it reads over U's iterations is loaded once before
  /// U, a row vector per lane, transposed in registers (W log2 W
  /// shuffles), and each iteration of U takes its row, instead of W
  /// scalar loads per iteration. Null where the pattern does not hold or
  /// something under U writes the operand's buffer.
  Value loadTransposed(AccessAttr access);
  /// Whether the target reads lanes that step by a few elements along an
  /// operand's last dimension as vectors (loadStrided).
  virtual bool stridedLoadsInRegisters() const { return false; }
  /// A gathered read whose lanes step by S (2 to kMaxLaneStride) along the
  /// operand's last dimension and along no other (a 2x2 pool's
  /// `x[.., {w}*2+{dx}]`, a stride-2 convolution's input): the S(W-1)+1
  /// elements from the first lane's to the last one's are read as
  /// ceil((S(W-1)+1) / W) vectors of W, the last one masked to end at the
  /// last lane's element (nothing past what the lanes read is touched),
  /// and one shuffle picks every S-th element, instead of W scalar loads.
  /// Null where the pattern does not hold (masked lanes: a scope whose
  /// size is not a power of two).
  Value loadStrided(AccessAttr access);
  /// The lanes' elements of `access` loaded one by one into a vector (a
  /// masked vector's other lanes zeros, never read).
  Value gatherLanes(AccessAttr access);
  /// The transposed blocks loadTransposed built, by access and U's loop.
  llvm::DenseMap<std::pair<Attribute, Operation *>, Value> transposedBlocks;
  /// Stores `value` (combined with the element for a reduction) into the
  /// output of `op`.
  void store(ComputeOp op, Value value);
  /// The contiguous vector load and store of the lanes; a target may add
  /// alignment or non-temporal hints.
  virtual Value emitVectorLoad(VectorType type, Value memref, ValueRange at,
                               AccessAttr access);
  virtual void emitVectorStore(Value value, Value memref, ValueRange at,
                               AccessAttr access, bool reduce);

  //===--------------------------------------------------------------------===//
  // Values
  //===--------------------------------------------------------------------===//

  Type vectorOf(Type scalar) {
    return lanes.active ? VectorType::get({lanes.registerWidth}, scalar)
                        : scalar;
  }
  Value operand(Attribute input, Type type);
  Value constant(double value, Type type);
  Value convert(Value value, Type from, Type to);
  /// The value of `op` (before any reduction) in `outType`, or null with
  /// `error` set when the target has no rule for its primitive.
  Value compute(ComputeOp op, Type outType, std::string &error);
  Value binary(OpKind kind, Value a, Value c, Type type);
  /// `f` applied to each lane of `x` (or to `x` itself, a scalar or a
  /// vector of f32, which pd-approximate-math rewrites into vector
  /// arithmetic): for the math operations that become C library calls in
  /// other types (erf, asinh, acosh, atanh), which convert-math-to-libm
  /// runs after the vector dialect is gone and so cannot split into lanes
  /// itself.
  Value perLane(Value x, function_ref<Value(Value)> f);
  /// -1, 0 or 1 by the sign of `x` (a float NaN stays NaN).
  Value sign(Value x, Type type);
  /// The remainder of `x` by `y`: of the truncated quotient (`fmod`, the
  /// sign of `x`) or of the floored one (`mod`, the sign of `y`).
  Value remainder(OpKind kind, Value x, Value y, Type type);
  /// Combines the lanes of `value` with `reduction` into one scalar.
  Value reduceLanes(Value value, Reduction reduction, Type type);

  BufferOp bufferOf(StringRef array) { return buffers.lookup(array); }
  Type elementType(StringRef array) { return bufferOf(array).getElementType(); }
  /// Makes every array of `buffer` refer to `memref`.
  void bindArrays(BufferOp buffer, Value memref) {
    for (StringRef array : buffer.getArrays().getAsValueRange<StringAttr>())
      memrefs[array] = memref;
  }

  KernelOp kernel;
  OpBuilder b;
  Location loc;
  llvm::StringMap<BufferOp> buffers;
  llvm::StringMap<Value> memrefs;
  /// Per buffer, which dimensions its memref stores as a single slot,
  /// indexed by 0. A target collapses a dimension where each instance of
  /// the code it emits touches one index of it only (the GPU lowering: a
  /// shared buffer's dimension indexed by the block's coordinate).
  llvm::DenseMap<Operation *, SmallVector<bool>> collapsedDims;
  /// Per buffer, the dimensions its memref stores as a window of W slots
  /// (W = `extents[d]` > 0), indexed by the access's form without the
  /// terms of the variables of depth below `outerDepth`. A target windows
  /// a dimension where each instance of the code it emits touches W
  /// consecutive indices only, from a multiple of W set by those variables
  /// (the GPU lowering: a shared buffer's rows `{0}*8+{1}` in a block of
  /// grid scope {0}, 8 slots indexed by {1}).
  struct Window {
    SmallVector<int64_t> extents;
    unsigned outerDepth = 0;
  };
  llvm::DenseMap<Operation *, Window> windowDims;
  /// The iteration variable of each enclosing scope; null for the lanes.
  SmallVector<Value> ivs;
  Lanes lanes;
  SmallVector<scf::ForOp> unrolled;
  /// Whether a product may fuse with the sum that consumes it.
  bool fpContract;
};

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_CONVERSION_LOWERING_KERNELEMITTER_H
