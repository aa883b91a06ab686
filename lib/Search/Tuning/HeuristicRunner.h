//===- HeuristicRunner.h - The experts' rules -------------------*- C++ -*-===//
//
// Private to PerfDojoTuning. HeuristicRunner holds the rules of the CPU and
// GPU experts, each a member that applies moves through the environment;
// its definitions live in one file per family of rules:
//
//   HeuristicRunner.cpp  stepping, locating scopes and operations, and the
//                        CPU expert's order of rules (cpuExpert);
//   LoopRules.cpp        loop order, fusion, vectorization, parallelization,
//                        blocked transposes, temporaries;
//   RegisterTiling.cpp   register tiles of products: the tile model
//                        (chooseTile), panels, staged operands, windows;
//   GPURules.cpp         the GPU expert (gpuExpert): grids, blocks, warps,
//                        shared memory.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_LIB_SEARCH_TUNING_HEURISTICRUNNER_H
#define PERFDOJO_LIB_SEARCH_TUNING_HEURISTICRUNNER_H

#include "PerfDojo/Search/Tuning/Environment.h"
#include "PerfDojo/Search/Tuning/Search.h"
#include "PerfDojo/Transforms/Move.h"
#include "llvm/ADT/STLFunctionalExtras.h"

namespace mlir::perfdojo::heuristics {

/// Takes back every move after the first `size`.
inline void undoTo(Environment &env, size_t size) {
  while (env.getMoves().size() > size)
    (void)env.undo();
}

/// Applies moves of one kind by rule until no rule fires, with a bound on
/// the steps in case two rules undo each other.
class HeuristicRunner {
public:
  HeuristicRunner(Environment &env, const TargetInfo &target)
      : env(env), target(target) {}

  /// The legal instances of the move declared as `MoveOpT` in the current
  /// state.
  template <typename MoveOpT> SmallVector<MoveInstance> legal() {
    registerAllMoves();
    return enumerateMoves(env.getKernel(),
                          *MoveRegistry::get().lookup(MoveOpT::getMoveName()));
  }

  /// The scope a scope move's instance designates.
  ScopeOp scopeOf(const MoveInstance &move);

  /// Applies a move if it is legal and the bound on steps allows; every
  /// move applied counts towards the bound, also those rolled back later.
  /// Moves are built with the typed builders of MoveOps.h
  /// (`TileScopeOp::make(scopeLoc(op, 1), 16)`), never from strings.
  bool apply(const MoveInstance &move);

  /// Takes back every move after the first `size`.
  void rollBackTo(size_t size);

  /// Whether any of `forms` uses the variable of depth `depth`.
  static bool usesVariable(ArrayRef<LinearForm> forms, unsigned depth);

  /// How often `op` visits each element that `forms` index: the product of
  /// the sizes of the scopes around it whose variables they do not use (a
  /// product's reduction steps for its output; the reads of each element
  /// of an operand), at most 2^40.
  static int64_t visitsPerElement(ComputeOp op, ArrayRef<LinearForm> forms);

  /// Applies the first legal instance of `name` accepted by `accept` until
  /// there is none; returns how many were applied.
  template <typename MoveOpT>
  unsigned exhaust(function_ref<bool(const MoveInstance &)> accept) {
    unsigned applied = 0;
    while (steps < kMaxSteps) {
      bool progress = false;
      for (const MoveInstance &move : legal<MoveOpT>())
        if (accept(move) && apply(move)) {
          progress = true;
          ++applied;
          break;
        }
      if (!progress)
        break;
    }
    return applied;
  }
  template <typename MoveOpT> unsigned exhaust() {
    return exhaust<MoveOpT>([](const MoveInstance &) { return true; });
  }

  /// Fuse scopes and share buffers until neither applies. With
  /// `keepProducts` (the expert), a product's reduction scope joins
  /// nothing: gemm's k loop would otherwise take in the 1024-column loop
  /// of the next statement, and registerBlock needs it alone.
  void naive(bool keepProducts = false);

  /// Whether `scope` is the reduction scope of a product under it (the
  /// product's output does not use its variable).
  static bool reducesProduct(ScopeOp scope);

  /// A large temporary that one cheap element-wise operation writes from
  /// one array of its size (a batch norm's d = x - mean, mean broadcast)
  /// and that several later passes read (the variance, then the
  /// normalization, apart because the variance must be complete first):
  /// every pass after the first computes it again from its operands
  /// (add_copy of the pass's tile, then recompute). The later pass then
  /// reads x instead of d, the same traffic, and d lives only in the first
  /// pass, which fuses with its writer, so that d shrinks to registers and
  /// is never written to memory. Only operations as cheap as a load (no
  /// division, no transcendental function) are computed twice.
  bool recomputeTemporaries();

  /// A product whose output columns (its last index) index an operand in
  /// another dimension than the operand's last, while the reduction
  /// indexes its last (relu_ffn's y[.., j] += r[.., k] * w[j, k]), reads
  /// that operand across rows in the vector lanes. Copies it (add_copy at
  /// the outermost scope) and moves the columns' dimension last
  /// (permute_dims), so that the product vectorizes along the columns as
  /// matmul does. Only an operand that the scopes around the product read
  /// again and again (relu_ffn's w, once for every row of r: at least a
  /// vector's width of times each element) is worth the copy: each element
  /// of a batched matrix-vector product's matrix (y[b, i] += A[b, i, k] *
  /// x[b, k]) is read once, and its copy would cost twice what the product
  /// reads; such a product stays vectorized along k. Takes every step back
  /// if one is refused.
  void transposeOperands();

  /// Moves the top-level nest that writes `copy` (an operand copied for a
  /// product by transposeOperands) before the first nest that computes
  /// one of the product's other operands, one swap_sibling at a time, as
  /// far as legality allows: the copy then no longer stands between such
  /// a nest (relu_ffn's r = max(x, 0)) and the product, which can fuse
  /// with it scope by scope. Where no nest ahead computes an operand (the
  /// operands are inputs), the copy stays where it is.
  void hoistCopy(StringRef copy);

  static bool onlyOperations(ScopeOp scope);

  /// Innermost scopes of a multiple of the vector width become a loop of
  /// vector scopes, one operation each.
  void vectorize();

  /// CPU, several threads: a long reduction with too few independent
  /// iterations around it to share among the threads (a batch norm's 3
  /// channels, each summing 3.4e7 elements on one thread) is split across
  /// them, as TVM's rfactor does: its outermost scope that the output does
  /// not index, S, is tiled into one part per thread (when the threads
  /// divide it), the reduction split there into per-thread partial results
  /// (split_reduction), and S runs in parallel; the partials are combined
  /// after it. Runs before vectorize, which refuses a split across vector
  /// lanes. Each reduction is visited once; refused steps are taken back.
  void splitLongReductions();

  /// A reduction whose output a scope inside its split scope indexes (a
  /// column maximum, 4096 rows around 1000 columns: y[{1}] max= x[{0},{1}])
  /// has no partials to combine after that scope (split_reduction refuses
  /// it). The threads take even shares of the outermost such scope
  /// instead, brought above the split scope: `2:p 4096 500 y[{0}*500+{2}]
  /// max= x[{1},{0}*500+{2}]`, each thread reading its half of every row
  /// in order and updating its own elements. A share of at least a vector
  /// each. Returns whether it did; nothing changes otherwise.
  bool shareInnerScope(StringRef id, unsigned depth);

  /// The scope that splitLongReductions splits among the threads for the
  /// reduction `op`, or null: its outermost scope that the output does not
  /// index, sequential with `op` its only operation, where the scopes
  /// around `op` are sequential or parallel, run `op` at least 2^16 times
  /// from that scope inward (a row sum's 65,536 elements, or a column
  /// max's 4,096 rows of 1,000 columns, the columns inside the rows) and
  /// leave fewer than 4 independent iterations a thread outside it.
  ScopeOp longReductionScope(ComputeOp op);
  /// Whether splitLongReductions will split a reduction among the threads
  /// at a scope strictly inside `scope`, which then stays sequential.
  bool splitsReductionInside(ScopeOp scope);

  /// CPU: a reduction that reads what the scope before it writes (a batch
  /// norm's var += d * d after d = x - mean, with var's initialization in
  /// between) fuses with that scope, so that each element is read from
  /// memory once for both: the siblings in between move above the
  /// producer (swap_sibling), the two scopes join (join_scopes) and so do
  /// their perfectly nested scopes below. Where splitLongReductions tiled
  /// and split the reduction's scope across the threads, the producer is
  /// tiled and mapped as it was first. The lowering keeps the partial
  /// results in vector registers through the fused loop. Each pair is
  /// tried once; the steps are taken back if one is refused.
  void fuseReductionsWithProducers();

  /// An innermost sequential scope inside another, narrower than the
  /// vector width but more than one iteration, along which some access
  /// runs contiguously (as a vectorizable remainder would) and every
  /// operation writes its own elements, or sums into an element that the
  /// sequential scope around does not index either: the CPU lowering then
  /// carries that sum's narrow vector of partials through the loop around
  /// and reduces its lanes once after it (an instance norm's var += d * d
  /// over the 8 leftover columns of each 56-column row). A sum into an
  /// element that the scope around does index would reduce each narrow
  /// vector across its lanes, a shuffle sequence per vector that saves
  /// little over the scalar loop.
  bool isRemainder(ScopeOp scope);

  /// Every top-level scope that may run in parallel and has an iteration
  /// per thread.
  void parallelize();

  /// For each top-level scope that may not run in parallel as it is (its
  /// iterations share temporaries): splits it into one block per thread,
  /// gives each block its own copy of every temporary it touches (add_dim,
  /// then materialize_dims), then parallelizes the blocks. Takes every
  /// step back for a scope whose blocks still cannot run in parallel.
  void parallelizeBlocks();

  /// Whether parallelizeBlocks can split `scope` into one block per
  /// thread: a top-level scope of several iterations per thread, evenly
  /// (a block of one iteration is no tile).
  bool splitsIntoBlocks(ScopeOp scope) const;
  /// Whether `count` iterations give every thread the same number, at
  /// least `least`.
  bool sharesOutEvenly(int64_t count, int64_t least = 2) const;

  /// Whether `scope` or a scope inside it is mapped parallel.
  static bool hasParallel(ScopeOp scope);

  /// Inside top-level scopes that stay sequential (a batch norm's 3
  /// channels, which 2 threads cannot share out evenly and whose sums
  /// cannot run in parallel), the outermost scopes that may run in
  /// parallel do, as long as the scopes around them run at most
  /// kMaxParallelEntries times together (each entry is a fork and a join)
  /// and each entry gives every thread kMinParallelWork operations.
  void parallelizeInner();
  static constexpr int64_t kMaxParallelEntries = 64;
  /// The least work, in vector (or scalar) operations run, that an inner
  /// parallel scope gives each thread per entry: about the cost of a fork
  /// and a join. A 24 x 64 x 496 matmul's tiles, 3,120 multiply-adds a
  /// thread in each of 7 column panels, ran 2.5x slower with a parallel
  /// region per panel (0.073 against 0.029 ms).
  static constexpr int64_t kMinParallelWork = 4096;
  /// The operations that `scope` runs, a vector scope's counting once.
  static int64_t vectorInstances(ScopeOp scope);
  /// An operand of at most this size (twice a 32 KiB L1 data cache) stays
  /// near the core and is not packed into panels. Measured on a Zen 3:
  /// relu_ffn's 49 KiB weights unpacked, 28.9 -> 13.7 ms; attention's
  /// 128 KiB heads of K unpacked, 9.06 -> 9.6 ms, so those stay packed.
  static constexpr int64_t kCachedOperandBytes = 64 * 1024;

  /// How an access uses the variable of depth `depth`: not at all, as the
  /// unit-stride index of its last dimension only, as a step of 2 to
  /// KernelEmitter::kMaxLaneStride along it only (strided: on the CPU, a
  /// read whose lanes the lowering loads as whole vectors and one
  /// shuffle), or otherwise (scattered).
  enum class AccessUse { Unused, Contiguous, Strided, Scattered };
  AccessUse classify(AccessAttr access, unsigned depth) const;
  /// classify, where a strided output (stored lane by lane) scatters.
  AccessUse classify(AccessAttr access, unsigned depth, bool isOutput) const;

  /// Calls `visit` on every access under `root` (a scope, or the whole
  /// kernel) in program order, each operation's output first, with its
  /// operation and whether it is the output.
  static void
  forEachAccess(Operation *root,
                function_ref<void(ComputeOp, AccessAttr, bool)> visit);

  /// How well the operations under `scope` would vectorize along the
  /// variable of depth `depth`: +1 per access contiguous along it
  /// (coefficient 1 in the last dimension only; +2 for an output, whose
  /// stores and reductions then stay in the lanes) or a strided input
  /// (a stride-2 convolution's x along its output columns), -1 per access
  /// it scatters (any other use), 0 per access it does not index.
  int contiguityScore(ScopeOp scope, unsigned depth) const;

  /// Whether some access under `scope` uses the variable of depth `depth`
  /// other than as the unit-stride index of its last dimension (or a
  /// strided input's).
  bool scatters(ScopeOp scope, unsigned depth) const;

  /// Whether the element each operation under `scope` writes depends on the
  /// variable of depth `depth` (`all`), or whether some reduction's element
  /// does not (`!all` with `reductionsOnly`).
  static bool outputsUse(ScopeOp scope, unsigned depth, bool reductionsOnly);

  /// Whether `scope` and its only child `inner` hold one plain copy that
  /// writes contiguously along `scope` and reads contiguously along
  /// `inner` (a transposing copy, K_t[d, j] = K[j, d]): with `scope` inside,
  /// the copy's stores are vectors and its reads gather, which
  /// blockTransposes turns into blocks transposed in registers; with
  /// `inner` inside, each lane would store one element.
  bool transposingCopy(ScopeOp scope, ScopeOp inner);

  /// Interchanges nested scopes so that the one along which the operations
  /// would vectorize better (contiguityScore) moves inward: matmul's j
  /// (C and B contiguous, A invariant) below its k (A contiguous, B
  /// scattered); softmax's row loop stays outside its columns. A variable
  /// that would scatter an access (a batch norm's channel, the second
  /// index of x[n, c, h, w]) does not move inward, however its results
  /// are laid out.
  ///
  /// A scope that writes its results contiguously and is at least a
  /// vector wide also moves inward past a short reduction window (a
  /// pooling window, whose variables the results do not use) when it
  /// reads its inputs contiguously or strided (a 2x2 max-pool's output
  /// columns read x at stride 2; vectors along them keep the maxima in the
  /// lanes, where vectors along the window would reduce two lanes at a
  /// time), not when it would gather an input lane by lane (a global
  /// average pool's channels, x[n, c, h, w] read 49 elements apart around
  /// its 7 x 7 window). A transposing copy moves its output's contiguous
  /// scope inward too (transposingCopy).
  void bringContiguousInward();

  /// The most iterations of a reduction window (isWindow).
  static constexpr int64_t kMaxWindow = 8;
  /// The most instances of a register tile with its window unrolled
  /// (unrollWindow).
  static constexpr int64_t kMaxWindowInstances = 256;

  /// Whether `scope` is a short reduction window: at most kMaxWindow
  /// iterations, every scope under it short too (a pooling window's rows
  /// and columns, not a batch norm's 8 images around 300 x 300 pixels),
  /// and every operation under it a reduction into an element that does
  /// not depend on its variable.
  static bool isWindow(ScopeOp scope);

  /// Whether every operation under `scope` writes its output contiguously
  /// along the scope's variable (the unit-stride index of the output's last
  /// dimension), over at least a vector's width.
  bool writesContiguously(ScopeOp scope);

  /// The bytes of a cache line.
  static constexpr int64_t kLineBytes = 64;

  /// Loop tiling of transposes (y[j, i] = x[i, j], z = x + y^T): a vector
  /// scope whose operation gathers an input across the lanes (their
  /// variable indexes another dimension than the input's last) that an
  /// enclosing sequential scope S reads contiguously (S's variable the
  /// unit-stride index of its last dimension). S is tiled by the vector
  /// width and the tile's inner part sunk to right above the vector scope,
  /// so that each gathered block of width x width elements comes from
  /// `width` cache lines that stay in the L1 cache while S's inner part
  /// walks along them, instead of one new line (and page) per lane and
  /// iteration. Where S allows, the block is a cache line wide along S (16
  /// floats, two vectors of 8), so each line is read whole; and the
  /// vector-wide part is unrolled, so that the lowering loads the block a
  /// row per lane and transposes it in registers (loadTransposed). The
  /// unseen 4096 x 4096 transpose (2 threads, pd-run): 12.7 ms with 8 x 8
  /// blocks gathered lane by lane, 11.9 ms transposed in registers, 7.1 ms
  /// with the blocks a line wide. Takes every step back if one is refused.
  void blockTransposes();

  /// Moves the loops that index every result outside the loops some
  /// reduction sums over: a batch norm's channel sums, mean[c] +=
  /// x[n, c, h, w], become c outside n, so that the channel loop can run in
  /// parallel and fuse with its neighbours.
  void bringParallelOutward();

  /// Interchanges the two outer scopes of a top-level nest whose outer size
  /// differs from its previous sibling's when that makes them equal, so
  /// that fusion (join_scopes) can follow: the element-wise nests of a
  /// batch norm, n outside c, line up with the channel loops before them.
  void alignForFusion();

  /// The location of the scope at `depth` around `op`: its output array,
  /// the op's ordinal among the writers of that array, and the depth.
  MoveLocation scopeLoc(ComputeOp op, unsigned depth);
  /// scopeLoc as text (`y#1:2`), which names a scope across moves.
  std::string scopeLocation(ComputeOp op, unsigned depth);
  /// The location of buffer `name`, or of its dimension `dim`.
  static MoveLocation bufferLoc(StringRef name, unsigned dim = 0);

  /// A vector reduction `op` (in a vector scope V) whose nest ends in
  /// ... R, K, J, V: J the direct parent of V and contiguous in the
  /// output, K a sequential scope whose variable the output does not use
  /// (the reduction), R above K indexing the output's rows. Null if none.
  struct Product {
    ComputeOp op;
    /// Null for a product of one vector of columns (findNarrowProduct).
    ScopeOp rows, reduction, columns;
  };
  std::optional<Product> findProduct(ArrayRef<std::string> skip);

  /// The rows of a register tile: the largest of 8, 6, 4, 3, 2 that
  /// divides the row scope's size (and is below it), keeps `rows` x
  /// `vectors` within the accumulators and that `fits`, when given,
  /// accepts; 0 when none does.
  static int64_t rowTile(int64_t size, int64_t vectors, int64_t accumulators,
                         function_ref<bool(int64_t)> fits = nullptr);

  /// rowTile for the rows `rows` of product `p` (`vectors` vectors a
  /// row), where the tile's accumulators, the vectors its unrolled window
  /// keeps live (windowLiveVectors: a depthwise convolution's input rows,
  /// each read by several output rows of the tile), a broadcast and a
  /// loaded vector fit in the vector registers. A 5 x 5 depthwise
  /// convolution's 8 leftover columns (one vector of 8 lanes) by 8 rows
  /// kept about 35 input vectors live besides its 8 accumulators and
  /// spilled (144 spill instructions among 200 multiply-adds); 4 rows fit,
  /// and the whole convolution took 0.228-0.235 ms against 0.240-0.246
  /// (bench/probe's dw5; its stride-2 3 x 3 dw_s2, 2 rows x 3 vectors
  /// instead of 8 x 3, 1.05-1.09 against 1.18-1.21; 6 rounds, 2 threads,
  /// 2026-11-29).
  int64_t rowTileInRegisters(Product p, ScopeOp rows, int64_t vectors,
                             int64_t accumulators);

  struct TileChoice {
    /// Vectors of columns per tile row (all of them: no column tiles).
    int64_t columns = 1;
    /// The depth of the rows scope, when a row scope takes part, and its
    /// rows per tile (a one-scope tile's are chosen again by rowTile after
    /// the column tiling).
    std::optional<unsigned> rowsDepth;
    int64_t rows = 0;
    /// A second row scope of a two-scope tile, and its rows per tile.
    std::optional<unsigned> rows2Depth;
    int64_t rows2 = 0;
    /// The vectors of columns that the tiles cover when C does not divide
    /// them all (28 of 31 in tiles of 4): the rest are peeled off into a
    /// product of their own. 0 when C divides them.
    int64_t covered = 0;
    /// Likewise the rows of the row scope that tiles of R rows cover when R
    /// does not divide them (1020 of 1024 in tiles of 6): the rest are
    /// peeled off. 0 when R divides them.
    int64_t rowsCovered = 0;
  };

  /// The operands of product `p` that are read as vectors (their last
  /// index runs along the lanes) and those that are broadcast.
  static void
  splitOperands(Product p, SmallVectorImpl<SmallVector<LinearForm>> &loaded,
                SmallVectorImpl<SmallVector<LinearForm>> &broadcast);
  static bool usedBy(ArrayRef<SmallVector<LinearForm>> operands, unsigned d);
  /// Whether one of `operands` indexes a dimension by variable `d` alone
  /// (no other variable in that dimension's form).
  static bool usedAlone(ArrayRef<SmallVector<LinearForm>> operands,
                        unsigned d);

  /// The reduction scopes that unrollWindow would unroll above a tile of
  /// `tile` instances of product `p` (unrollsAsWindow, from p's reduction
  /// out), appended to `scopes` as (depth, size) when given; returns the
  /// first scope above them that stays a loop (null at the top).
  static ScopeOp predictWindow(
      Product p, int64_t tile,
      SmallVectorImpl<std::pair<unsigned, int64_t>> *scopes = nullptr);

  /// The most vectors of the loaded operands that the window unrollWindow
  /// would unroll above a tile of `tile` instances (`rows` rows of scope
  /// `x` by `c` vectors) keeps live at once: a vector that two instances
  /// read (a convolution's input row h + kh, read again by output row h + 1
  /// at kh - 1) is loaded once and stays in a register from its first
  /// reader to its last, through the instances between. The instances are
  /// taken in the order the lowering emits them, the tile's rows and
  /// vectors innermost, then the window's scopes from the innermost out
  /// (the broadcast operand's scopes do not change what is live). 0
  /// without a window. A 5 x 5 convolution's tile of 4 rows keeps about 4
  /// input rows x 5 filter columns live, 20 vectors; with 5 output
  /// channels (20 accumulators) that spilled and ran 4.5x slower.
  int64_t windowLiveVectors(Product p, ScopeOp x, int64_t rows, int64_t c,
                            int64_t tile);

  /// Whether the window that unrollWindow would unroll above a tile of
  /// `tile` instances reaches every short reduction scope (at most
  /// kMaxWindow, the output not using it) that slides a vector-loaded
  /// operand, indexing it together with another scope in one dimension (a
  /// convolution's filter rows kh and columns kw: x row h + kh, column w +
  /// kw). Where the window stops short of one (too many instances), it
  /// stays a loop of a few iterations around the tile. A 5 x 5
  /// convolution (10 output channels, 3 input channels) measured, 4
  /// rounds alternated, 2 threads, 2026-11-29: 5 channels x 2 rows with kh
  /// and kw unrolled 9.9-12.1 ms; the same tile with kh a loop 13.0-13.8;
  /// 5 channels x 4 rows, kh a loop (500 instances with it) 13.5-14.5; 4
  /// images x 5 channels, kh a loop, 10.5-12.4; 2 channels x 4 rows, kh
  /// and kw unrolled, 10.9-12.4.
  static bool windowUnrollsSliding(Product p, int64_t tile);

  /// Chooses the register tile of product `p` (before any of its moves):
  /// C vectors of columns, a divisor of `vectorsPerRow` or, for a one-scope
  /// tile, a C whose tiles cover only part of them (the rest is peeled off
  /// into a product of its own; taken only where the model finds it
  /// strictly better: 31 vectors get tiles of 4 and 3 peeled, not 1), by R
  /// rows of one
  /// row scope (rowTile), the pair that a model of today's x86 cores runs
  /// fastest per k step: R x C fused multiply-adds, two per cycle; two
  /// loads per cycle, the vector loads (C when the vector-loaded operand
  /// does not use the rows, so each loaded vector serves every row; else
  /// R x C) and the broadcasts (R, or 1 when the broadcast operand does not
  /// use the rows either); and at least 4 cycles, the latency of a fused
  /// multiply-add into one accumulator. Ties go to the larger tile, then
  /// to C = `cols`, then to the larger R. Without a row scope, C is `cols`
  /// when it divides the vectors, else all of them. So matmul gets 6 rows
  /// x 2 vectors on AVX2, a batched matmul its rows rather than its batch
  /// (each of whose rows reads another B).
  ///
  /// Rows may also come from two scopes at once, R1 x R2 x C: one that
  /// only the broadcast operand uses (a convolution's output channels) and
  /// one that only the vector-loaded operand uses (its output rows); each
  /// loaded vector then serves R1 accumulators and each broadcast R2 x C.
  /// R1 and R2 are each 2 to 8. Such a tile must leave registers for the
  /// values that the inner group of its scopes keeps live (orderTile): the
  /// accumulators, the smaller group's values, one more, the vectors that
  /// its unrolled window keeps live (windowLiveVectors), and the mask of
  /// lanes that do not fill a register (6 of 8). It is taken only where the
  /// model finds it strictly better than every one-scope tile: a convolution
  /// with 10 output channels gets 2 channels x 2 rows x 3 vectors (8 loads per
  /// 12 multiply-adds, where 4 rows x 3 vectors need 13), and 6 leftover
  /// columns (masked lanes) 4 channels x 2 rows rather than 8 channels (6
  /// loads per 8 multiply-adds, not 9).
  TileChoice chooseTile(Product p, int64_t vectorsPerRow, int64_t accumulators,
                        int64_t cols);

  /// Register blocking of products (matmul and kin): for each vector
  /// reduction under ... rows, k, columns, lanes, the columns split into
  /// tiles of `cols` vectors and the rows into tiles of R rows, both
  /// brought below k and unrolled, so that the lowering keeps an R x `cols`
  /// tile of vectors in registers through the k loop, each loaded B vector
  /// serving R rows. R is the largest of 8, 6, 4, 3, 2 that divides the
  /// rows and keeps R x the vectors per row within three quarters of the
  /// vector registers (24 accumulators of AVX-512's 32, with the B vectors
  /// and a broadcast; 12 of AVX2's 16), and, where the rows allow, at least 8
  /// independent fused multiply-adds per k step to cover their latency (4
  /// cycles, 2 per cycle). Then unrollWindow and packPanel. Steps that are
  /// refused are skipped; a product is visited once.
  void registerBlock();

  /// A product of one vector narrower than a register (findNarrowProduct:
  /// a 3x3 convolution's 6 leftover columns of 54, masked lanes that waste
  /// 10 of every 16 multiply-adds) whose output has a row scope S that the
  /// vector width divides (its 64 output channels): the lanes move to S
  /// instead. S is tiled by the width, the inner part sunk below the
  /// columns and vectorized, and the tile becomes the columns (unrolled)
  /// by C vectors of S (the outer part, tiled by C where it is larger,
  /// sunk right above the lanes and unrolled), C the most of 4, 3, 2, 1
  /// that divides it with the columns x C within the accumulators; then
  /// unrollWindow. Each operand that reads S (the weights) is copied first
  /// (add_copy before the product's top-level nest, permute_dims) with S's
  /// dimension last, so that its vectors load contiguously; the others are
  /// broadcast. The output's vectors run along S: the CPU lowering
  /// gathers them before the tile's loop and scatters them after. Its
  /// initialization is moved alike and fused (fuseInit), so that the tile
  /// starts from it. Taken where the lanes fill at most half a register,
  /// every operand that reads S reads it in one dimension at unit stride
  /// and without the lanes, and the product reads each of its elements at
  /// least a vector's width of times (the copy's cost). conv3x3's tail of
  /// 8 x 64 x 54 x 6 outputs: 5.6-5.9 -> 5.2-5.5 ms for the whole
  /// convolution (`pd-run --jit`, alternating, 2 threads). False, with
  /// steps left for the caller to take back, where it does not apply or a
  /// step is refused.
  bool lanesAcrossRows(StringRef id);

  /// The steps of lanesAcrossRows on operation `id`, alone in the scopes
  /// from depth `s` (S) down to its lanes at depth `v`: the lanes made a
  /// sequential scope; S, tiled by the vector width where larger, its
  /// inner part (or all of it) sunk below them and vectorized; its outer
  /// part tiled by `c` where larger, and that (or all of it) sunk right
  /// above the vector; the former lanes and that part unrolled. False if
  /// a step is refused.
  bool moveLanes(StringRef id, unsigned s, unsigned v, int64_t c);

  /// Whether some row of product `p` reuses its loaded vectors: a
  /// sequential scope above k that indexes the output's rows (not its
  /// contiguous dimension) and that the vector-loaded operands do not use
  /// (matmul's i). Without one (y[j] += A[k][j] * x[k], a matrix-vector
  /// product along the columns), each loaded vector feeds one
  /// multiply-add whatever the tile.
  bool reusesLoadedVectors(Product p);

  /// A product whose loaded vectors no row reuses (reusesLoadedVectors)
  /// is bound by reading its matrix, once: rather than a register tile of
  /// a few vectors of columns kept through all of k, which reads the
  /// matrix in strips of one row's few vectors a whole row apart (a new
  /// page at every k), it runs k outermost in groups of kStreamRows rows,
  /// unrolled under the columns, so that each pass reads that many whole
  /// rows of the matrix at unit stride while the output's vectors are
  /// loaded and stored once per group (a 4096 x 8192 transposed
  /// matrix-vector product: 5.2-5.5 ms in tiles of 4 vectors, 3.3-3.4 ms
  /// so). Where no scope above k indexes the output, the columns are first
  /// split into one block per thread, raised above k, which parallelizeBlocks
  /// then runs in parallel. False if a step is refused or k has no
  /// group (the steps taken stay).
  bool streamProduct(StringRef id);
  static constexpr int64_t kStreamRows = 8;

  /// The sequential scopes (their depths) between the vector scope of
  /// `op` and the first scope above it for which `stop` holds (`at`; null
  /// when none does), unrolled ones passed over, and the vectors they hold
  /// together. Nothing when `op` is not in a vector scope or one of those
  /// scopes is mapped otherwise.
  struct LoopsAboveLanes {
    SmallVector<unsigned> depths;
    int64_t vectors = 1;
    ScopeOp at;
  };
  static std::optional<LoopsAboveLanes>
  loopsAboveLanes(ComputeOp op, function_ref<bool(ScopeOp)> stop);

  /// The bytes of `access` that one run of scope `from` reads (the
  /// variables of `from` and the scopes inside it over their ranges, those
  /// outside fixed): the product over its dimensions of the span of each
  /// index, at most the dimension's size (at most 2^62).
  int64_t bytesPerRun(ComputeOp op, AccessAttr access, ScopeOp from);

  /// Orders the loops around each register tile by what they make it read
  /// again. A tile (a vector reduction under unrolled scopes, right under
  /// its sequential reduction scope K) sits under a perfect nest of
  /// sequential scopes (the innermost, P, holds K and the tile's
  /// initialization). Each iteration of the innermost of them runs K once
  /// more: the inputs that use its variable bring in new elements, and
  /// the loops outside read those again only after all of them, from L2
  /// if what they read over the whole nest fits (kStagedBytes), from L3
  /// or memory otherwise; the other inputs are read again from L1. Where
  /// the inputs that P's variable brings in do not fit, the scope of the
  /// nest whose variable's inputs do, and that reads fewer bytes in one
  /// run of K, goes innermost. A 3 x 3 convolution over 8 x 64 x 56 x 56
  /// with 64 output channels: its blocks of 4 output channels outside the
  /// output rows and columns read the whole image (800 KiB of x) again
  /// for each block, from L3 on a Zen 3 (512 KiB of L2); innermost, the
  /// blocks bring in w (147 KiB in all, 9 KiB a run against x's 20 KiB)
  /// and x's rows stay in L1 while they pass. Where the operands fit
  /// anyway (a head of attention's scores, 32 KiB of Q and of K), the
  /// order stays: the row tiles outside write the output a row at a time.
  /// Steps that are refused are taken back.
  void orderLoopsAroundTiles();

  /// A vector reduction that no register tile took (not a product: a
  /// depthwise convolution over channels-last data, y[n,h,w,c] +=
  /// x[n,h+i,w+j,c] * w[i,j,c]; a sum over the middle axis) whose lanes
  /// sit under sequential scopes that index its output (the channels'
  /// vectors), right under a sequential scope that does not (the window):
  /// those scopes are unrolled when they hold at most `accumulators`
  /// vectors together, so that each vector of the output has a register
  /// of its own through the reduction, loaded and stored once, and the
  /// instances' multiply-adds are independent, instead of a load and a
  /// store of the output around each one (the probe kernel dw3_nhwc, 3 x 3
  /// over 4 vectors of channels: 0.37-0.68 -> 0.27 ms).
  void unrollAccumulators();

  /// The initialization of the reduction `id` (findInit) in the same nest
  /// (a zeroing that shares the scopes around the window with it): the
  /// sequential scopes around its lanes that it does not share with the
  /// reduction are unrolled too, when they hold at most `accumulators`
  /// vectors, so that the lowering sets the registers right away instead
  /// of storing the values and loading them back (dw3_nhwc 0.33-0.35 ->
  /// 0.28-0.29 ms with its zeroing's 4 vectors unrolled).
  void unrollInit(StringRef id, int64_t accumulators);

  /// Peels the scope of the initialization of product `p` (findInit) that
  /// matches the product's `scope` (as large, with the same coefficients
  /// in the output's indices: its columns or its rows) at `covered`
  /// iterations, as registerBlock peels the product's, so that fuseInit
  /// finds one part to join with each part of the product. The
  /// initialization then writes the array once more before the product,
  /// whose location `id` is updated.
  void peelInit(Product p, ScopeOp scope, int64_t covered, std::string &id);

  /// The steps after a product's tile is in place: its unrolled scopes
  /// ordered, the window above it unrolled, the right operand packed, the
  /// initialization fused, a batch's operand slices staged and k unrolled
  /// by a few steps.
  void completeTile(StringRef id);

  /// The reduction scope k right above the register tile of product `id`
  /// splits into groups of 4 steps (2 where 4 does not divide it), the
  /// group unrolled above the tile, when the group's instances of the tile
  /// stay within kMaxStepInstances multiply-adds: the loop's own
  /// instructions (an increment, a compare, a branch, the address updates)
  /// then come once per group, and the scheduler sees the next step's
  /// loads beside this step's multiply-adds. matmul's 6 x 4 tiles: 4.95-5.06
  /// -> 4.53-4.70 ms in groups of 4, 4.55-4.93 in groups of 2 (`pd-run
  /// --jit`, 6 alternating rounds of 40 runs, 2026-11-29). A tile under an
  /// unrolled window (a convolution's) is left as it is (conv1d's 3 x 4 x 4
  /// measured 1.60 -> 1.63 ms in groups of 2).
  void unrollSteps(StringRef id);
  static constexpr int64_t kMaxStepInstances = 96;

  /// The box of elements that `op` writes: per dimension of its output,
  /// the least and greatest index over its enclosing scopes.
  static SmallVector<std::pair<int64_t, int64_t>> writtenBox(ComputeOp op);

  /// The operation that initializes the outputs of product `id`: the last
  /// one before it that writes the same array without a reduction and
  /// without reading it (a zeroing, a bias), and writes elements of the
  /// box the product updates. Null if none.
  ComputeOp findInit(StringRef id);

  /// The scope at `depth` around `op`.
  static ScopeOp scopeAt(Operation *op, unsigned depth);

  /// The most instances of an initialization's scopes that fuseInit
  /// unrolls (a 2 x 2 x 3 tile of vectors: 12).
  static constexpr int64_t kMaxInitInstances = 64;

  /// Fuses the initialization of product `id`'s outputs (findInit) into
  /// the scopes around its register tiles: the tiles of output rows and
  /// column tiles above the reduction. The initialization is tiled like
  /// them (tile_scope, swap_nested_scopes), brought next to the product
  /// (swap_sibling) and joined with it scope by scope (join_scopes), its
  /// leftover scopes unrolled. Each tile's outputs are then zeroed (or set
  /// to the bias) right before the tile loads them into registers, in the
  /// cache, instead of in a pass of their own over the whole output: a
  /// convolution whose 82 MB output is zeroed and read back (5 x 5, 3
  /// input channels) or a batched matmul with 50 MB. Stops at the first
  /// scope it cannot match or join; takes every step back if it joins
  /// none. An initialization that already shares a scope with an update
  /// of its array stays as it is.
  void fuseInit(StringRef id);

  /// Rows in tiles, the tile brought below k: the row scope at depth `r`
  /// (above k, indexing the output but not its contiguous dimension) is
  /// tiled by `rowsPerTile`, the tile sunk to right below k and unrolled.
  /// Whatever shares a scope between the rows and k with the product (its
  /// zeroing before it, the element-wise tail of swiglu after it, a
  /// convolution's peeled columns) is split off first, the deepest scope
  /// first: each splits after the product's subtree, then before. The
  /// scopes above k keep their depths. False if a step is refused (the
  /// steps taken stay).
  bool tileRowsBelowK(StringRef id, unsigned r, int64_t rowsPerTile);

  /// Orders the unrolled scopes of the register tile of product `id`
  /// (between k and the lanes) so that the lowering's instances, emitted
  /// in that order, keep few values live besides the accumulators. The
  /// scopes that only the broadcast operand uses form one group (W), the
  /// others another (X, with the columns); with W outside, each loaded
  /// vector stays live through all of W's instances, |X| of them at once;
  /// with X outside, each broadcast through X's, |W| at once. The smaller
  /// group goes inside: a convolution's 2 output channels below its 2 rows
  /// x 3 vectors (3 live values, not 7, within AVX2's 16 registers), while
  /// a 3x3 convolution's 4 channels stay above its 3 vectors. Interchanges
  /// that are refused leave the order as it is.
  void orderTile(StringRef id);

  /// The scope at depth `d` above the product `id` (its column tiles, just
  /// brought above the innermost reduction scope) rises above every
  /// reduction scope that directly encloses it alone: a convolution's
  /// input channels and filter rows as well as its filter columns. Each
  /// output tile then stays in registers through the whole reduction,
  /// instead of being stored and loaded again for every channel and row.
  /// Stops at the first scope that the output uses or that is not
  /// sequential, or where a step is refused.
  void raiseAboveReductions(StringRef id, unsigned d);

  /// After register blocking, ... R, T, K, tile, lanes (R the row tiles,
  /// T the column tiles, K the reduction): brings T outside R and copies
  /// the K x tile panel of the operand that R does not index (matmul's B)
  /// into a contiguous temporary before R (add_copy), its rows vectorized.
  /// The register tiles of every row then read one panel that stays in the
  /// cache, at unit stride, instead of rows of B a whole row apart (one
  /// page per k for a 1024-wide B). When T's tiles cannot be shared out
  /// evenly among the threads (swiglu's 7), R and the copy run in
  /// parallel inside T instead of T in blocks (parallelizeBlocks); so do
  /// they when T has fewer than two tiles per thread. Takes every step
  /// back if one is refused.
  void packPanel(StringRef id);

  /// The fewest rows of a product that packPanel copies a panel for.
  static constexpr int64_t kMinPanelRows = 16;

  /// The fewest reduction steps of a product that packPanel copies a
  /// panel for: below, each output vector takes fewer than 32 cycles of
  /// fused multiply-adds (2 a cycle), less than writing its line to
  /// memory.
  static constexpr int64_t kMinPanelReduction = 64;

  /// The bytes of a panel's slice of k (kc rows of a column tile) that
  /// blockRowsAndReduction keeps in the L1 data cache: half of a 32 KiB
  /// L1, the rest left to the row operand's lines.
  static constexpr int64_t kPanelSliceBytes = 16 * 1024;

  /// packPanel where the column tiles T cannot be shared out evenly among
  /// the threads (swiglu's 7 tiles of 64 columns for 2 threads) and the
  /// row tiles R can, at the top level: instead of a parallel region per
  /// tile of T over rows that all read one shared panel, R splits into one
  /// block of rows per thread (tile_scope, parallelize), K into slices of
  /// kc (tile_scope; kc the largest power of two below K that divides it
  /// with kc rows of the tile within kPanelSliceBytes), ordered B, Ko, T,
  /// R', Ki (swap_nested_scopes). Each thread then runs its register
  /// tiles past a kc x tile slice of the operand, read where it lies,
  /// that stays in the L1 cache, its rows' kc columns of the other operand
  /// in the L2 cache. Taken only where those (a thread's rows x kc) fit in
  /// kCachedOperandBytes: measured with 2 threads (256 x 4096 by 4096 x
  /// 448, 4 x 4 tiles, each slice then copied, programs alternated in one
  /// process), 0.71x to 0.78x of the time for 64 and 128 rows a thread,
  /// 0.88x for 256, but 1.12x to 1.19x for 512 rows a thread (1024 x 1024
  /// by 1024 x 448), where the rows' slice no longer stays near the core.
  /// False, with every step taken back, when
  /// it does not apply or a step is refused.
  bool blockRowsAndReduction(StringRef id, ScopeOp rows, ScopeOp tiles,
                             ScopeOp reduction, StringRef array);

  /// After blockRowsAndReduction (B Ko T R' Ki): every tile of T reads the
  /// same slice of the other operand again, a thread's rows over kc steps
  /// of k (swiglu's x, 128 rows x 64). When its rows lie a multiple of the
  /// cache's way size apart (x's rows 16 KiB apart), the slice's lines
  /// fall into a few sets of the L1 cache, more than a set holds
  /// (kMaxLinesPerSet), and every tile reads the slice from L2. Copied
  /// once per slice before T into a contiguous slot per thread (add_copy
  /// at T, vectorized), its rows are kc elements apart and it stays in the
  /// L1 cache next to the slice of the other operand. Measured on swiglu (2
  /// threads, 6 rounds alternated, Intel, 2026-11-29): 6.15-6.71 ms against
  /// 6.47-7.52 without (6.7-7.4 against 7.5-8.0 in another 6). A slice whose
  /// lines spread over the sets stays where it is (copying gemm_tail's 24 x 32
  /// slice, rows 640 bytes apart, would only add work).
  void stageRowSlice(StringRef id);

  /// The most lines of one slice that stageRowSlice leaves in a set of
  /// the L1 cache: an 8-way cache's ways (Zen 3's 32 KiB; Intel's 48 KiB
  /// has 12).
  static constexpr int64_t kMaxLinesPerSet = 8;
  /// The sets of an L1 data cache of 4 KiB a way (32 KiB 8-way, 48 KiB
  /// 12-way).
  static constexpr int64_t kL1Sets = 64;

  /// The most cache lines that `op`'s access `forms` of the input
  /// `buffer` reads in one set of the L1 cache (kL1Sets), over the scopes
  /// around `op` from `depth` down (the scopes above at their first iteration).
  /// 0 when unknown: the buffer missing or reused, or over 2^16 points to
  /// visit.
  int64_t maxLinesPerSet(ComputeOp op, ArrayRef<LinearForm> forms,
                         BufferOp buffer, unsigned depth);

  /// The buffer holding `array`, or null.
  BufferOp bufferHolding(StringRef array);
  /// The bytes of one element of `buffer` (at least 1).
  static int64_t elementBytes(BufferOp buffer);
  /// The bytes that the buffer holding `array` stores.
  int64_t arrayBytes(StringRef array);

  /// The last operation that writes `array` (a copy's one writer), or null.
  ComputeOp writerOf(StringRef array);

  /// Copies the tile of `array` that the scope at `depth` around the
  /// operation at `id` reads (add_copy) into a temporary named after the
  /// array: `array` then `suffix` (B_panel), numbered when the name is
  /// taken (B_panel1, ...). Returns the name, empty if the copy is refused.
  std::string addCopy(StringRef id, unsigned depth, StringRef array,
                      StringRef suffix);

  /// The innermost scope of the nest that writes copy `name` as vectors
  /// when the vector width divides it: tiled by the width, the inner part
  /// vectorized.
  void vectorizeCopy(StringRef name);

  /// The most bytes of operand slices that stageOperands keeps per
  /// iteration of a batch: half of a Zen 3 core's 512 KiB L2 cache, the
  /// rest left to the output's tiles and the other thread's lines.
  static constexpr int64_t kStagedBytes = 256 * 1024;

  /// A product inside a scope S that indexes its output and its operands
  /// (a batched matmul's batch: C[b] = A[b] x B[b]), around ... T, R, K
  /// after packPanel (T the column tiles with the panel copy, R the row
  /// tiles, K the reduction), reads a new slice of each operand in every
  /// iteration of S. The first column tile reads the slice of the row
  /// operand (A, which T does not index) from memory in the order of the
  /// register tiles, a few rows at a time, and each panel copy reads its
  /// columns of B a whole row apart; the multiply-adds wait for both. When
  /// the slices fit in the L2 cache together (kStagedBytes), they are
  /// staged at unit stride at the top of each iteration of S instead: A's
  /// slice copied before T (add_copy at T, vectorized), and the panel copy
  /// given a dimension per column tile (add_dim, materialize_dims), split
  /// out of T (split_scope) and its reduction loop brought outside the
  /// tiles (swap_nested_scopes), so that it reads B row by row. Measured
  /// on bmm (192 batches of 256 x 128 by 128 x 256, 2 threads, Zen 3):
  /// 20.2 -> 18.1 ms, the panel's part alone 19.5 -> 18.8 ms. A's slice
  /// is staged only where T is all that S holds: attention's heads also
  /// hold its softmax, whose rows the staged Q (128 KiB a head) pushes out
  /// of the cache, and staging Q there measured 8.23 -> 8.44 ms (the
  /// panels' part made no difference). Each staging that is refused is
  /// taken back.
  void stageOperands(StringRef id);

  /// Whether `k`, the reduction scope right above a register tile of
  /// `instances` instances whose output forms are `out`, is a window that
  /// unrollWindow unrolls: k short (kMaxWindow), the output not using it,
  /// the instances with k's within kMaxWindowInstances, and a sequential
  /// scope around k, which then carries the tile. (unrollWindow also needs
  /// k alone in that scope, which the tiling's splits make so: chooseTile
  /// predicts the unrolling before them.)
  static bool unrollsAsWindow(ScopeOp k, ArrayRef<LinearForm> out,
                              int64_t instances);

  /// Unrolls the short reduction scopes right above a register tile (a
  /// convolution's 3 x 3 window), so that the tile stays in registers
  /// through the next longer one (the input channels) rather than being
  /// loaded and stored for every window row. At most kMaxWindow iterations
  /// each and 256 unrolled instances in all (a 5 x 5 window over a 4 x 3
  /// tile unrolls its columns, 60 instances, and keeps the tile through
  /// its rows and the input channels).
  void unrollWindow(StringRef id);

  /// Splits the scope of depth `d` around the reduction whose depth-0
  /// location is `id` so that the child holding it is alone: after that
  /// child's subtree, then before it. False if a split is refused (the
  /// steps taken stay).
  bool isolate(StringRef id, unsigned d);

  /// The operation whose depth-0 location was `id` (a product's
  /// reduction, a transposing copy), after other moves.
  std::optional<ComputeOp> findOpAt(StringRef id);
  /// A product of one vector of columns: its vector scope directly under
  /// k (a sequential scope its output does not use), the output contiguous
  /// in the lanes (a convolution's 4 leftover columns). No columns scope.
  std::optional<Product> findNarrowProduct(ComputeOp op);

  std::optional<Product> findProductAt(StringRef id);

  /// Whether `op` is a product: a reduction under a scope whose variable
  /// its output does not index (k), with at least two variables that the
  /// output does index (rows and columns), and an operand that the columns
  /// (the variables of the output's last index) do not index, so that it
  /// is reused across them: matmul (A), a convolution (its weights), not
  /// a row sum, a softmax's maximum, a group norm's sums over its channels
  /// (mean[n, g] += x[n, g*8 + c, h, w]) or a pooling window.
  static bool isProduct(ComputeOp op);

  /// Whether the scope that indexes dimension `dim` of `array` (the scope
  /// of that index's variable around its first access) is the outermost
  /// of its nest with an iteration per thread: the scope the threads will
  /// share, which a reused dimension would keep sequential (a batch-2
  /// group norm's batch scope, or its groups at batch 1), unless
  /// parallelizeBlocks gives each thread's block slots of its own. A
  /// scope around it inside which splitLongReductions splits a sum among
  /// the threads stays sequential and does not take them: a batch norm's
  /// channels, 3 on 2 threads, each summing 3.4e7 elements, whose last
  /// pass runs its 8 images in parallel instead (a reused image dimension
  /// of xh kept it on one thread, 0.65-0.83x of its time). Likewise a
  /// scope around it that holds a parallel scope already (that split sum,
  /// once shrinkTemporaries runs again after fuseReductionsWithProducers).
  bool hostsThreads(StringRef array, unsigned dim);

  /// Whether an operation in an innermost loop (one that holds only
  /// operations) accesses `array` with that loop's variable at unit stride
  /// in its last index.
  bool vectorsRunAlong(StringRef array);

  /// Temporaries keep only the elements that are live at once, except
  /// those a product writes: their rows stay, so that registerBlock can
  /// give the product a row loop of its own and tile it.
  void shrinkTemporaries();

  /// A temporary whose elements live for one vector only keeps one
  /// vector: where every access indexes a dimension as a vector tile
  /// (`{2}*16+{3}`, lanes `{3}`) and each tile's elements are written and
  /// read in one iteration of the tile's scope, the dimension splits into
  /// tiles and lanes (`split_dim`) and the tiles share one slot
  /// (`reuse_dims`). shrinkTemporaries, which runs before the vectors
  /// exist, keeps such a row whole. A layer norm's xh row (16 KiB of 4096
  /// floats, written by one vector operation and read by the next) then
  /// takes 64 bytes, and the rows that stay (x, d, gamma, beta) fit the L1
  /// cache: layernorm_4096x4096 0.90-0.95x, rmsnorm 0.92x, the unseen
  /// gelu's six rows 0.80x of their time (paired calls through pd-lib, 2
  /// threads, 2026-11-28); silu, swiglu, gemm, bias_relu and the other
  /// layer norm within 1 %.
  void shrinkToVectors();

  /// A reduction into an element its innermost loop does not index, in a
  /// loop beside a function that the lowering evaluates as a polynomial
  /// (exp, log, erf...), gets a loop of its own. The lowering keeps the
  /// partial results of such a reduction in vector registers through its
  /// loop, with other children or alone; beside a polynomial, whose
  /// constants take most of AVX2's 16 vector registers, the partials spill:
  /// softmax's fused exp and sum ran 15-40 % slower than split (measured
  /// 2026-11-27, 2 threads). Elsewhere the reduction stays fused: a batch
  /// norm's var += d * d beside d = x - mean reads d once (split, it was
  /// 7 % slower on batchnorm_8x64x300x300).
  void isolateReductions();
  /// Whether the CPU lowering evaluates `kind` as a polynomial (many
  /// vector constants), not as one or two instructions.
  static bool isPolynomial(OpKind kind);

  //===--------------------------------------------------------------------===//
  // The GPU expert
  //===--------------------------------------------------------------------===//

  /// The `index`-th top-level scope of the current state, or null.
  ScopeOp topScope(unsigned index);
  static ComputeOp firstCompute(ScopeOp scope);
  /// The move location of `scope` (through its first operation).
  MoveLocation locate(ScopeOp scope);
  /// `loc` at another depth: a scope above or below it around the same
  /// operation.
  static MoveLocation atDepth(MoveLocation loc, unsigned depth);
  /// The scopes of the perfect nest from `scope` down: each the only child
  /// of the previous.
  static SmallVector<ScopeOp> perfectChain(ScopeOp scope);
  /// Whether the iterations of `scope` are independent (what parallel,
  /// grid and block mappings need), the scopes around it left as they are.
  /// (Asked as `parallelize` outside GPU scopes and as `gpu_block` inside a
  /// grid scope, whose nesting rules differ.)
  bool independent(ScopeOp scope);
  /// While mapping a warp per row (warpPerRow): loops spread over a
  /// warp's lanes (gpu_warp) rather than a block's threads (gpu_block).
  bool warpLanes = false;
  /// The move that maps the scope at `loc` to threads: gpu_warp while
  /// warpLanes, else gpu_block.
  MoveInstance threadMove(const MoveLocation &loc) const;
  /// The threads a scope of `size` iterations is spread over: the largest
  /// divisor from 32 to 256 (whole warps, several blocks a multiprocessor),
  /// else the size itself up to a block's limit, else its largest divisor
  /// within the limit. While warpLanes: a warp's lanes, where they divide
  /// the size (else 0).
  int64_t threadsFor(int64_t size) const;

  /// Vectorizes the scope at `loc` (a scope holding one operation, some of
  /// whose accesses run contiguously along it) by the target's width:
  /// tile_scope, then vectorize the inner scope. Returns whether it did
  /// (nothing changes otherwise).
  bool vectorizeGPU(ScopeOp scope);

  /// Spreads the scope `scope` over a block's threads (`gpu_block`), after
  /// vectorizing it when it can: when more iterations remain than
  /// threadsFor gives, the scope is tiled and its inner part becomes the
  /// threads (consecutive threads, consecutive elements: coalesced), the
  /// outer part a loop (`outerToGrid`: a grid scope). Returns whether it
  /// did; nothing changes otherwise.
  bool spreadOverThreads(ScopeOp scope, bool outerToGrid,
                         bool vectorize = true);

  /// For a reduction over several scopes (a batch norm's n, h, w): the
  /// innermost tiled so that its inner part is a block's threads (thread t
  /// reads t, t + threads, ...: coalesced), that part brought to the top of
  /// the nest, so that split_reduction there gives each thread one partial
  /// result over the whole nest (combined once, not once per row). Returns
  /// the scope to split (the nest's only scope, or where the moves are
  /// refused, its innermost).
  ScopeOp threadsAtTop(ArrayRef<ScopeOp> nest);

  /// Splits the reduction in `scope` (a scope holding one reduction, into
  /// an element its variable does not index) across a block's threads
  /// (`threads` of them, else threadsFor's, at least a warp): tiled so
  /// that consecutive threads read consecutive elements, the threads'
  /// partial results combined after them by the block's first thread
  /// (split_reduction), partials in shared memory when they fit. The
  /// combination of 64 partials or more is split in turn: in warps where
  /// their number is a multiple of a warp's lanes (combineInWarps: 256
  /// partials, 8 warps of shuffles, then the first thread adds the 8),
  /// else over fewer threads (c threads of n / c partials each, then the
  /// first thread adds the c), a chain of about 2 sqrt(n) additions
  /// instead of n.
  bool splitOverThreads(ScopeOp scope, int64_t threads = 0);
  /// Places the partial results `partial` of a reduction split over
  /// `threads` threads at `depth`: in shared memory when a block's part of
  /// them fits, and their initialization, before them, over the threads
  /// too.
  void placePartials(StringRef partial, unsigned depth, int64_t threads);
  /// Combines the partials that the scope `combined` reduces (n of them, n
  /// a multiple of a warp's lanes) in warps: each warp of the block
  /// reduces a warp's lanes' worth of them with shuffles (gpu_warp on a
  /// reduction), and the first thread combines the n / 32 results. A
  /// chain of 5 shuffles and n / 32 additions, with no barrier between
  /// the two levels' threads inside a warp. Returns whether it did;
  /// nothing changes otherwise.
  bool combineInWarps(ScopeOp combined);
  /// The operation that combines the partial results `partial` into
  /// `output` (it updates `output` from them), or null.
  ComputeOp findCombine(StringRef output, StringRef partial);
  /// Maps the scope `combined`, which combines partial results (one
  /// reduction into an element its variable does not index), to a warp's
  /// lanes (a warp reduction: log2 n shuffles instead of n additions on
  /// one thread) where n is a power of two up to a warp's lanes. Returns
  /// whether it did.
  bool reduceInWarp(ScopeOp combined);
  /// Partial results from this many on are combined in two levels.
  static constexpr int64_t kTwoLevelCombine = 64;
  /// The operations that access `buffer`, in program order.
  SmallVector<ComputeOp> accessesOf(BufferOp buffer);
  /// The bytes of `buffer` that one block stores in shared memory: the GPU
  /// lowering keeps a block's window of a dimension that every access
  /// indexes by c times the variable of a grid scope plus less than c
  /// (getPerBlockDims).
  int64_t perBlockBytes(BufferOp buffer);
  /// The scope at a scope location, or null.
  ScopeOp scopeAt(const MoveLocation &location);
  /// The location of the scope at `depth` around the partial reduction
  /// writing `partial` (its second writer, after the initialization).
  static MoveLocation partialLocation(StringRef partial, unsigned depth);

  /// How many iterations the scopes of `chain` make in all.
  static int64_t iterations(ArrayRef<ScopeOp> chain);
  /// Enough threads to fill a large GPU (132 multiprocessors x 2048
  /// threads is 270,336; a quarter of that keeps most of them busy).
  static constexpr int64_t kEnoughThreads = 1 << 16;
  /// The threads a block takes where the work allows (threadsFor,
  /// widenBlocks).
  static constexpr int64_t kBlockThreads = 256;
  /// Grid dimensions of a GPU launch.
  static constexpr size_t kMaxGridScopes = 3;
  static constexpr int64_t kLongReduction = 1024;
  /// Fewer blocks of 256 threads than this leave most of a large GPU
  /// idle: blocks of rows only when there are this many rows.
  static constexpr int64_t kFewBlocks = kEnoughThreads / 256;

  /// The first operation in `op`'s subtree (itself if it is one).
  static ComputeOp firstComputeIn(Operation &op);

  /// Splits the `index`-th top-level nest, whose first `depth` scopes
  /// form a perfect chain, into one top-level nest per child of its
  /// depth-`depth - 1` scope (split_scope at each depth of the chain,
  /// innermost first), consecutive operations staying together: each
  /// loop becomes a launch of its own, mapped with its own grid. Returns
  /// whether it did; nothing changes otherwise (split_scope refuses where
  /// a later child's iteration feeds an earlier child's later one).
  bool fissionNest(unsigned index, unsigned depth);
  /// fissionNest, cutting between two consecutive children where
  /// `cutBetween` says.
  bool fissionNest(unsigned index, unsigned depth,
                   function_ref<bool(Operation &, Operation &)> cutBetween);

  /// Splits a reduction `p` whose outputs are too few to give a large
  /// GPU blocks of their own (a batch norm's 3 channels over 8 x 2048 x
  /// 2048 elements each) across blocks: one reduction scope S (the
  /// outermost that makes at least kFewBlocks outputs and leaves each a
  /// reduction of kLongReduction elements, tiled if one is too large) is
  /// brought right below the outputs' scopes and split (split_reduction:
  /// partial results p_part[outputs, S]), and the nest is split into its
  /// three parts, each a launch: the partials' initialization, the
  /// partial reductions (one block each, mapped by mapNestForGPU), and
  /// their combination. `prefix` is the number of output scopes at the
  /// top of the nest's perfect chain. Returns whether it did; nothing
  /// changes otherwise.
  bool splitAcrossBlocks(unsigned index, size_t prefix);

  /// Splits the reduction at scope location `at` (split_reduction) into
  /// partial results named after `output` (`s_part`, `s_part1`, ...: the
  /// first name free). Returns the partials' name, empty if refused.
  std::string splitReductionAt(const MoveLocation &at, StringRef output);

  /// A block per output of a reduction nest (`prefix` output scopes at the
  /// top of its perfect chain, the grid), the reduction below them split
  /// over the block's threads. Returns whether it did; nothing changes
  /// otherwise.
  bool blockPerOutput(unsigned index, size_t prefix);

  /// Maps the `index`-th top-level nest for the GPU. Either the nest's
  /// independent scopes are the grid and its innermost independent scope
  /// the block's threads (a thread per output element: element-wise
  /// kernels, products, convolutions), or, when the body below the
  /// independent scopes holds element-wise loops or long reductions and
  /// the scopes above make too few threads, each iteration of them is a
  /// block (a row of a softmax or a normalization) and the loops inside it
  /// are spread over its threads, reductions split across them.
  void mapNestForGPU(unsigned index);

  /// Fewer threads a block than this leave a multiprocessor's warps few
  /// and partly idle (a row of 300 floats in vectors of 4: 75 threads).
  static constexpr int64_t kMinBlockThreads = 128;

  /// Where the `index`-th nest's blocks hold fewer than kMinBlockThreads
  /// threads and a grid scope holds the block's scopes directly (a batch
  /// norm's rows of 300, an element-wise nest's rows of 112), that grid
  /// scope is tiled and its inner part joins the block, outside its
  /// threads (consecutive threads still along the row): the fewest rows
  /// that make kMinBlockThreads threads, preferring whole warps up to
  /// kBlockThreads. Nothing changes where no divisor fits or a move is refused.
  void widenBlocks(unsigned index);

  /// The scopes of the `index`-th nest's independent prefix (`prefix` of
  /// them) as the grid: a block per row. Returns whether it did.
  bool gridOverPrefix(unsigned index, size_t prefix);

  /// Spreads the loops of a row (the body of the `index`-th nest's
  /// `prefix`-th scope, a block or a warp) over its threads: each loop's
  /// innermost independent scope, and reductions split across them.
  /// Returns whether every loop got threads (with `all`, it stops at the
  /// first that does not).
  bool mapRowLoops(unsigned index, size_t prefix, bool all);

  /// Rows no longer than this many elements (32 a lane) get a warp each.
  static constexpr int64_t kWarpRowElements = 1024;
  /// A warp per row (softmax's 24,576 rows of 512, a layer norm's 16,384 of
  /// 1,024), where the rows give enough threads at a warp each and every
  /// loop of a row is at most kWarpRowElements long: the rows are tiled by
  /// R (8, else 4 or 2: what divides them and keeps R rows of a temporary
  /// within a quarter of the shared memory), the outer part the grid, the
  /// R rows of a block its block scope; each loop of a row is spread over a
  /// warp's lanes, each reduction split across them (a partial a lane) and
  /// its 32 partials combined by a warp reduction. A row's loads are then
  /// many to a lane and in flight together, and its reductions 5 shuffles.
  /// The row's temporaries stay in shared memory (a block's window of R
  /// rows). Returns whether it did; nothing changes otherwise (every loop
  /// must map to the lanes).
  bool warpPerRow(unsigned index, size_t prefix);

  /// Register tiles of products on a GPU: for a nest of independent
  /// scopes around one product (matmul's i, j around k; a convolution's n,
  /// k, h, w around c, r, s), or around a body that holds products beside
  /// element-wise operations (an initialization, a GEMM's epilogue, SwiGLU's
  /// two products and their gate), a thread computes TM rows x TN columns
  /// of the outputs, the products' accumulated in registers through their
  /// reductions, so that each value it loads serves several multiply-adds
  /// (TM + TN loads for TM x TN of them, where a thread per output needs two
  /// loads for each). The columns J are the scope along which the first
  /// product's output is contiguous; the rows I an independent scope that
  /// indexes that output but not the operand read along J (matmul's i, a
  /// convolution's output channel), so that a warp's threads, consecutive
  /// along J, read that operand coalesced and the other one at a single
  /// address. The nest becomes
  ///   grid: the other independent scopes, I / (TI TM), J / (TJ TN);
  ///   block: TI x TJ threads (TJ 32 or 16 consecutive columns, else a
  ///   divisor of the columns from 16 to 64);
  ///   per part of the body: a product's reductions, then TM rows and TN
  ///   columns (strided by TJ), unrolled;
  /// TM from 8, 4, 2 and TN from 4, 2: the largest tile that divides the
  /// scopes, keeps the grid within 3 scopes and leaves at least
  /// kEnoughThreads threads. Returns whether it did; nothing changes
  /// otherwise.
  bool tileProductForGPU(unsigned index);

  /// The reduction slices a block stages in shared memory, tried in turn
  /// (a reduction of at most 32 whole first): the largest that divides
  /// the reduction and whose tiles fit in half of the shared memory, else
  /// in all of it.
  static constexpr int64_t kSharedSlices[] = {32, 16, 8};

  /// Shared-memory tiles for a register-tiled product (after
  /// tileProductForGPU): its first reduction scope K is tiled into slices
  /// of BK (kSharedSlices), the loop over the slices brought above the
  /// block's thread scopes, and before each slice the block copies the
  /// tiles of the operands that its threads read (add_copy at the first
  /// thread scope, one slot per block, set_location shared), all its
  /// threads sharing each copy out (mapCopyOverThreads). Each operand
  /// element then comes from device memory once a block, not once a
  /// thread row or column, and the register tiles read it from shared
  /// memory; the lowering keeps the accumulators in registers across the
  /// slices. Skipped (nothing changes) when the tiles of every slice
  /// overflow the shared memory or a move is refused.
  void stageInShared(StringRef id);

  /// The padding of a transposed tile's rows (rowsLast), in elements.
  static constexpr int64_t kTransposedPad = 4;

  /// A copy of product `id`'s operand that its thread reads at its TM
  /// unrolled rows (matmul's A_c[.., row, k]) is stored with the rows last
  /// (permute_dims: A_c[.., k, row]), so that a thread's rows at one k are
  /// consecutive and load as vectors from shared memory rather than one
  /// at a time; the rows are padded by kTransposedPad so that the copy's
  /// stores, consecutive along k and a row apart, spread over 8 of the 32
  /// banks (4 ways) instead of one, and keep 16-byte alignment. Other
  /// copies stay as they are. Returns false if a move is refused.
  bool rowsLast(StringRef id, StringRef name);

  /// Shares the copy nest writing `name` (add_copy's, one scope per
  /// dimension) out among `threads` threads of a block: vectorized along
  /// its last dimension where it can, then its scopes from the innermost
  /// outwards become thread scopes while threads are left (a scope of n
  /// takes n of them, the block's threads divided by n remain); a scope
  /// larger than the threads left is tiled by its largest divisor that
  /// fits, its outer part the threads and its inner part a loop of each
  /// thread, below the other thread scopes (consecutive threads copy
  /// consecutive elements: coalesced). Returns whether some scope became
  /// threads.
  bool mapCopyOverThreads(StringRef name, int64_t threads);
  /// mapCopyOverThreads for the nest of sequential scopes, each holding
  /// only the next, around the operation that `copyOp` finds.
  bool mapOverThreads(function_ref<ComputeOp()> copyOp, int64_t threads);

  /// The side of the square tiles of transposeThroughShared.
  static constexpr int64_t kTransposeTile = 32;

  /// An element-wise nest (independent scopes around one operation) that
  /// reads an input transposed against its output (`y[i,j]=x[j,i]`: the
  /// output contiguous along J, the input along another scope I) goes
  /// through shared memory in square tiles of kTransposeTile: I and J
  /// tiled, the tiles' scopes (and at most one other scope) the grid; a
  /// block copies its tile of the input (add_copy at the tile's rows, a
  /// slot per block, padded by one element so that the reads across its
  /// rows fall on different banks, set_location shared), its threads
  /// reading along the input's rows, then writes the output with its
  /// threads along the output's rows. Both sides of device memory are then
  /// coalesced, where a thread per output element reads the input 4096
  /// floats apart (an unseen 4096 x 4096 transpose: 32 % of the copy
  /// bandwidth on an H100, 2026-11-26). Returns whether it did; nothing
  /// changes otherwise.
  bool transposeThroughShared(unsigned index);

  /// The GPU expert: fusion and layout as the CPU expert prepares them,
  /// then every top-level nest mapped (mapNestForGPU).
  void gpuExpert();

  /// Products of too few outputs for register tiles (swiglu's 256 x 448
  /// over 4096 products each) split along their reduction (split-K): the
  /// product's innermost reduction scope K tiled into c chunks and split
  /// at them (split_reduction; the partials' chunk dimension moved first
  /// with permute_dims, so that the output's columns stay contiguous),
  /// then the loops of partial products split off the nest (fissionNest),
  /// each a launch that tileProductForGPU tiles; the partials are combined
  /// afterwards by the outputs' threads. c is the smallest power of two
  /// that makes 8 x kEnoughThreads partial outputs, each a reduction of
  /// 256 or more. Returns whether it split; nothing changes otherwise.
  bool splitKForGPU(unsigned index);

  /// A nest that holds a product beside loops that tileProductForGPU does
  /// not tile with it (relu_ffn's relu, whose every element a row of the
  /// product reads): split around its product loops (separateProducts),
  /// the parts that hold products tiled into registers. Returns whether a
  /// part was tiled; nothing changes otherwise.
  bool splitOffProducts(unsigned index);
  /// The number of top-level scopes.
  unsigned topScopes();
  /// Whether `op` is a scope that holds a product.
  static bool isProductLoop(Operation &op);
  /// Splits the `index`-th top-level nest where loops holding products
  /// sit beside other loops (attention: the scores' product, the softmax's
  /// loops, the product with V), before and after each product loop, at
  /// every level, operations staying with the loops they neighbour: the
  /// parts tileProductForGPU can tile (a product with its initialization
  /// or epilogue) and the others, each a top-level nest. Returns how many
  /// nests the one became (1: unchanged).
  unsigned separateProducts(unsigned index);

  /// Temporaries that live within a block (a softmax's x - max and exp of
  /// a row, where a block is a row) move to shared memory when a block's
  /// part fits, half of the shared memory at most each (a 4096-wide
  /// layernorm's row of x - mean, 16 KiB) and all of it together: each
  /// pass over the row then reads and writes on-chip, not device memory.
  /// set_location refuses a buffer that blocks share.
  void sharedTemporaries();

  /// The CPU expert's rules in order; with `recompute`, temporaries that
  /// later passes read are computed again there first. Returns whether a
  /// temporary was recomputed.
  bool cpuExpert(bool recompute);

  Environment &env;
  const TargetInfo &target;
  static constexpr unsigned kMaxSteps = 400;
  unsigned steps = 0;
};

} // namespace mlir::perfdojo::heuristics

#endif // PERFDOJO_LIB_SEARCH_TUNING_HEURISTICRUNNER_H
