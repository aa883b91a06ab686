//===- Passes.td - Importing linalg operations -------------*- tablegen -*-===//

#ifndef PERFDOJO_CONVERSION_LINALG_PASSES_TD
#define PERFDOJO_CONVERSION_LINALG_PASSES_TD

include "mlir/Pass/PassBase.td"

def ConvertLinalgToPerfDojoPass
    : Pass<"convert-linalg-to-perfdojo", "::mlir::ModuleOp"> {
  let summary = "Turn linalg operations on static memrefs into perfdojo kernels called from the host code";
  let description = !subst("}@]", "}]", [{
    Every `linalg.generic`, and every named linalg operation (generalized
    with `linalg::generalizeNamedOp`), whose operands are memrefs of static
    shape becomes a `perfdojo.kernel` of its own, inserted before the
    function that holds the operation; the operation is replaced by a
    `perfdojo.call` of the kernel (which `convert-perfdojo-to-standard`
    turns into a `func.call` of the kernel's function). The rest of the
    module is not changed.

    The kernel's loops are the operation's loops, in order; its buffers are
    `in<k>` for input `k`, `out<j>` for output `j`, in declaration order,
    `init<j>` (an input) when the body reads output `j`'s initial value
    (the caller passes a copy of that output), and temporaries `t<n>`.
    Each operation of the body becomes one compute operation in a scope
    nest of its own, over the loops its value depends on; `join_scopes`
    fuses them. A reduction (`acc op f(...)` yielded for an output that
    some loop does not index, `op` one of add, mul, maximumf, minimumf)
    becomes a copy of the initial value followed by `out<j> op= f(...)`.

    ```mlir
    linalg.matmul ins(%a, %b : memref<64x32xf32>, memref<32x48xf32>)
                  outs(%c : memref<64x48xf32>)
    ```

    becomes, in the text form,

    ```
    kernel matmul_0
    in  in0 f32 [64, 32] heap
    in  in1 f32 [32, 48] heap
    in  init0 f32 [64, 48] heap
    out out0 f32 [64, 48] heap

    64 48 out0[{0},{1}@]=init0[{0},{1}@]
    64 48 32 out0[{0},{1}@]+=in0[{0},{2}@]*in1[{2},{1}@]
    ```

    and the matmul a `perfdojo.call @matmul_0(%a, %b, %copy_of_c, %c)`.

    An operation that cannot be expressed stays as it is, with a remark
    naming the reason (tensors: run `one-shot-bufferize` first; dynamic
    shapes; element types other than f16, bf16, f32, f64, i8, i16, i32,
    i64; indexing maps that are not linear; body operations without a
    primitive, such as `arith.maxnumf` or unsigned division; outputs that
    overlap other operands). docs/Linalg.md lists them all.
  }]);
  let dependentDialects = [
    "::mlir::perfdojo::PerfDojoDialect", "::mlir::func::FuncDialect",
    "::mlir::memref::MemRefDialect", "::mlir::linalg::LinalgDialect"
  ];
}

#endif // PERFDOJO_CONVERSION_LINALG_PASSES_TD
