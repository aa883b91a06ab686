//===- Passes.td - Lowering perfdojo kernels ---------------*- tablegen -*-===//

#ifndef PERFDOJO_CONVERSION_LOWERING_PASSES_TD
#define PERFDOJO_CONVERSION_LOWERING_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertPerfDojoToStandard
    : Pass<"convert-perfdojo-to-standard", "::mlir::ModuleOp"> {
  let summary = "Lower perfdojo kernels to func, scf, memref, vector, arith and math";
  let description = !subst("}@]", "}]", [{
    Replaces every `perfdojo.kernel` with a `func.func` of the same name that
    takes one memref per input and output buffer, in declaration order, and
    carries `llvm.emit_c_interface` so it can be called from C. Every
    `perfdojo.call` of a kernel becomes a `func.call` of its function;
    everything else in the module (host functions, their other operations)
    is left as it is.

    - Temporaries become `memref.alloc` (heap, 64-byte aligned, freed at the
      end) or `memref.alloca` (stack and registers). A dimension with reuse
      factor `k` stores `k` elements, indexed `i mod k`; arrays that share a
      buffer share its memref.
    - Scopes become `scf.for` (sequential), fully unrolled `scf.for`
      (`:u`), or `scf.parallel` (`:p`, later OpenMP).
    - A vector scope (`:v`) of width W becomes W-lane vector operations:
      contiguous accesses (the lane variable with coefficient 1 in the last
      dimension) as `vector.load`/`vector.store`, lane-invariant reads as a
      broadcast, lane-invariant reduction targets as a horizontal
      `vector.reduction`, anything else lane by lane.
    - Compute operations become `arith`/`math` operations in the output's
      element type, reductions a load, combine and store. With
      `fp-contract` (the default) floating-point additions, subtractions
      and multiplications carry the `contract` flag: LLVM may fuse a
      product with the sum that consumes it (`C += A * B` becomes one
      fused multiply-add, rounded once), as C compilers do by default.

    - Streaming stores: a contiguous vector store of a whole 64-byte
      cache line into an output of at least `streaming-min-bytes` that the
      kernel only writes (never reads, never reduces into) is non-temporal
      (`nontemporal`, aligned to the line) when its offset is a multiple of
      the vector's size for every iteration and the output's base address is aligned at run time
      (checked once per call; an unaligned output takes ordinary stores).
      A narrower vector (AVX2's 32 bytes) streams when the loop right
      around its lanes writes whole lines one after the other (consecutive
      vectors, starting a line, the loop's vectors ending one).
      Such an output bypasses the caches: no read for ownership, about a
      third less DRAM traffic. So does a heap temporary that stores at
      least 4 x `streaming-min-bytes` (each dimension whole or one slot),
      that no operation reduces into, where a parallel scope writes it:
      when a later pass reads it, its first lines have left the caches
      anyway. `pd-fence-streaming-stores` orders them.
    - Prefetching the next row (`prefetch-rows`): in a sequential scope S
      holding several passes of one shape over a row (loops of one size
      around vector scopes of one width), the first of which reads an
      input at an index S's variable steps, the second pass's first vector
      scope prefetches into L2 (`memref.prefetch`, locality 2) the vector
      the first pass reads in S's next iteration (clamped to the input's
      rows), for rows of at most 64 KiB.
    - Prefetching ahead (`prefetch-ahead`, bytes, 0: off): a vector scope
      right inside a sequential loop whose iterations read consecutive
      vectors of an input (a stream, continued by the scopes around the
      loop whose next iteration starts at most `prefetch-ahead` bytes past
      the current one's end, of at least 4 KB in all) prefetches into L2
      (locality 2) the element `prefetch-ahead` bytes further on
      in the input's row-major layout (clamped to it: a row's end
      prefetches the next row's start), once per input buffer, when the
      input has at least 8 MiB, no scope around the loop reads the same
      elements again, no earlier pass over the row read it, and
      `prefetch-rows` does not already bring the row in. Off by default:
      on the suite's streaming kernels (Zen 4, 2 threads) it measured
      level, 0.95-1.08x (docs/Evaluation.md).
    - A sequential scope keeps the partial results of each vector
      reduction among its children into an element neither it nor the
      lanes index, and that nothing else in the scope touches, in vectors
      carried through its loop (four where the body holds only vector
      scopes, each taking every fourth iteration), combined and stored
      once after it.

    GPU mappings (`:g`, `:b`, `:w`) have no CPU meaning: the pass fails
    naming the scope.
  }]);
  let options = [
    Option<"streamingMinBytes", "streaming-min-bytes", "int64_t",
           /*default=*/"16777216",
           "Outputs of at least this many bytes that the kernel only writes, "
           "and heap temporaries of at least 4 times as many that parallel "
           "scopes write, get non-temporal vector stores (0: never)">,
    Option<"fpContract", "fp-contract", "bool", /*default=*/"true",
           "Let a floating-point product fuse with the sum or difference "
           "that consumes it (one rounding: a fused multiply-add), as C "
           "compilers do by default; off: every operation rounds">,
    Option<"prefetchRows", "prefetch-rows", "bool", /*default=*/"true",
           "The second of several passes over a row of the same shape "
           "prefetches the row the first pass reads next (at most 64 KiB)">,
    Option<"prefetchAhead", "prefetch-ahead", "int64_t", /*default=*/"0",
           "A vector scope in a sequential loop that streams a row of an "
           "input prefetches the element this many bytes further on in "
           "the input (0: never)">,
    Option<"reciprocalDivide", "reciprocal-divide", "bool",
           /*default=*/"true",
           "A floating-point division by an element that a loop's "
           "iterations all share (a row's sum) multiplies by its "
           "reciprocal, computed once before the loop (two roundings, as "
           "PyTorch's softmax does); off: every division rounds once">
  ];
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::scf::SCFDialect",
    "::mlir::memref::MemRefDialect", "::mlir::vector::VectorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"
  ];
}

def FenceStreamingStores
    : Pass<"pd-fence-streaming-stores", "::mlir::ModuleOp"> {
  let summary = "Order non-temporal stores before their results are read";
  let description = [{
    Non-temporal stores are weakly ordered on x86: another thread (or the
    caller, through the OpenMP join) may not see them until a fence. After
    `convert-scf-to-openmp`, inserts a fence (x86 hosts: `sfence`; others:
    a sequentially consistent `llvm.fence`) at the end of every `omp.parallel` region that holds a non-temporal
    `vector.store` (once per thread, before the join) and before the
    returns of every function that holds one.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ElideLoopBarriers : Pass<"pd-elide-loop-barriers"> {
  let summary = "Drop a worksharing loop's barrier where the join orders all";
  let description = [{
    After `convert-scf-to-openmp` (and the canonicalizer that inlines the
    `memref.alloca_scope` around each parallel body): an `omp.wsloop`
    directly in an `omp.parallel` region, without reduction clauses, that
    only a fence (`pd-fence-streaming-stores`) and the terminator follow,
    becomes `nowait`. Its barrier would only precede the region's join,
    which is a barrier itself: one barrier per parallel scope instead of
    two.
  }];
}

def GuardPartialVectorSlots
    : Pass<"pd-guard-partial-vector-slots"> {
  let summary = "Keep in memory the stack slots that LLVM 22's SROA miscompiles";
  let description = [{
    The last pass of `pd-lower-to-llvm` (and of the GPU lowering's device
    modules), on the LLVM dialect: marks
    volatile every load and store of each `llvm.alloca` that a vector load
    reads across narrower stores beginning at two different offsets (a
    register temporary written 5 lanes at offset 4, then 4 lanes at
    offset 0, then read as 9). LLVM 22's SROA rewrites such a slot into one
    vector value and, when the store to the higher offset comes first,
    inserts the widening shuffle of a stored value before that value is
    defined ("Instruction does not dominate all uses"); code generation
    then crashes. Volatile accesses keep the slot in memory, which SROA
    leaves alone. Because the marks are in the lowered module, every
    consumer is covered: the JIT, the kernel library, and a user's
    `mlir-translate --mlir-to-llvmir | opt -O3` after `pd-opt` or the pass
    plugin. The slot is followed through memref descriptors
    (`llvm.insertvalue`, `llvm.extractvalue`) and through GEPs whose
    indices are constants or sums and products of constants; a slot used
    any other way (a variable index, a call, a branch argument, stored as a
    value) is left as it is, since SROA does not rewrite such a slot into
    one value either.
  }];
  let dependentDialects = ["::mlir::LLVM::LLVMDialect"];
}

def ApproximateMathPass : Pass<"pd-approximate-math", "::mlir::ModuleOp"> {
  let summary = "f32 math functions as vector arithmetic, without a math library";
  let description = [{
    Rewrites every f32 (scalar or vector) math function into arithmetic
    that vectorizes and needs no math library, instead of one C library
    call per lane on the CPU, and a device library call (which PerfDojo
    does not link) on a GPU: `exp`, `log`, `tanh`, `erf`, `asin`, `acos`,
    `atan` by MLIR's polynomial approximations; `sin`, `cos`, `tan`,
    `sinh`, `cosh`, `asinh`, `acosh`, `atanh` by PerfDojo's rewrites
    (`DeviceMath.h`: accurate near zero and for large arguments, where
    MLIR's expansions lose digits); `powf` by MLIR's expansion. A few ulp
    (docs/GPU.md has the measured errors). `pd-lower-to-llvm`, the GPU
    pipelines and the GPU emulator run it after the conversion of the
    kernels; functions of other types are left to `convert-math-to-llvm`
    and `convert-math-to-libm` (the GPU lowering refuses them).

    ```mlir
    %e = math.exp %x : vector<8xf32>
    // becomes arith operations on vector<8xf32> (a range reduction, a
    // polynomial, a scale by a power of two): no call
    ```
  }];
  let options = [
    Option<"exp2Instruction", "exp2-instruction", "bool",
           /*default=*/"false",
           "compute exp from two llvm.intr.exp2 (ex2.approx.f32 on NVPTX, "
           "about 10 instructions) instead of the polynomial (about 25); for "
           "targets whose exp2 is an instruction, not a library call">,
    Option<"scalefExp", "scalef-exp", "bool", /*default=*/"false",
           "compute exp as a polynomial scaled by 2^j in one vscalefps "
           "(14 instructions a vector of 16 against 24 for MLIR's "
           "polynomial: llvm.x86.avx512.mask.scalef.ps.512 by name, "
           "llvm.ldexp for other shapes); for x86 CPUs with AVX-512 only">
  ];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

#endif // PERFDOJO_CONVERSION_LOWERING_PASSES_TD
