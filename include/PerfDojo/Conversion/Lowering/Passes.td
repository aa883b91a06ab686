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
    carries `llvm.emit_c_interface` so it can be called from C.

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
      element type, reductions a load, combine and store.

    GPU mappings (`:g`, `:b`, `:w`) have no CPU meaning: the pass fails
    naming the scope.
  }]);
  let dependentDialects = [
    "::mlir::func::FuncDialect", "::mlir::scf::SCFDialect",
    "::mlir::memref::MemRefDialect", "::mlir::vector::VectorDialect",
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect"
  ];
}

#endif // PERFDOJO_CONVERSION_LOWERING_PASSES_TD
