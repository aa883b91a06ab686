//===- PerfDojoOps.td - perfdojo operations ----------------*- tablegen -*-===//
//
// kernel, buffer, scope and compute: the four node kinds of a PerfDojo tree.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_DIALECT_PERFDOJOOPS_TD
#define PERFDOJO_DIALECT_PERFDOJOOPS_TD

include "PerfDojo/Dialect/PerfDojo/PerfDojoAttrs.td"
include "mlir/IR/SymbolInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

class PerfDojo_Op<string mnemonic, list<Trait> traits = []>
    : Op<PerfDojo_Dialect, mnemonic, traits>;

//===----------------------------------------------------------------------===//
// KernelOp
//===----------------------------------------------------------------------===//

def PerfDojo_KernelOp : PerfDojo_Op<"kernel", [
    Symbol, IsolatedFromAbove, NoTerminator, SingleBlock,
    NoRegionArguments]> {
  let summary = "A kernel: buffer declarations followed by a tree of scopes and operations";
  let description = !subst("}@]", "}]", [{
    The root of a PerfDojo program. Its single block holds the
    `perfdojo.buffer` declarations first, then the ordered children of the
    root: `perfdojo.scope` and `perfdojo.compute` operations, executed in
    order. The kernel's arguments are its `in` and `out` buffers, in
    declaration order.

    ```mlir
    perfdojo.kernel @relu {
      perfdojo.buffer in x f32 [4096, 4096] heap
      perfdojo.buffer out y f32 [4096, 4096] heap
      perfdojo.scope 4096 {
        perfdojo.scope 4096 {
          perfdojo.compute y[{0}, {1}@] = max(x[{0}, {1}@], 0)
        }
      }
    }
    ```
  }]);
  let arguments = (ins SymbolNameAttr:$sym_name);
  let regions = (region SizedRegion<1>:$body);
  let assemblyFormat = "$sym_name attr-dict-with-keyword $body";
  let hasRegionVerifier = 1;
  let extraClassDeclaration = [{
    /// The buffer declarations, in order.
    auto getBuffers() { return getBody().front().getOps<BufferOp>(); }
    /// Returns the buffer that declares `array`, or null.
    BufferOp lookupArray(::llvm::StringRef array);
    /// Returns the buffer named `name` (its symbol, which may differ from
    /// its arrays' names once buffers are shared), or null.
    BufferOp lookupBuffer(::llvm::StringRef name);
    /// Appends an operation at the end of the kernel body.
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

//===----------------------------------------------------------------------===//
// BufferOp
//===----------------------------------------------------------------------===//

def PerfDojo_BufferOp : PerfDojo_Op<"buffer", [HasParent<"KernelOp">]> {
  let summary = "A buffer declaration: element type, shape, storage, role and the arrays it holds";
  let description = [{
    Declares a buffer of `element_type` with the given `shape`. `reuse` gives,
    per dimension, how many elements are materialized (0 = all of them);
    index `i` of a dimension with reuse `k` is stored at `i mod k`. `arrays`
    lists the names of the arrays that share this buffer's storage; it is
    `[name]` when the buffer holds a single array of its own name.

    Custom form (mirrors the text form):

    ```mlir
    perfdojo.buffer in x f32 [24576, 512] heap
    perfdojo.buffer tmp t f32 [24576:1, 512] stack -> a, b
    ```
  }];
  let arguments = (ins
    StrAttr:$sym_name,
    PerfDojo_RoleAttr:$role,
    TypeAttr:$element_type,
    DenseI64ArrayAttr:$shape,
    DenseI64ArrayAttr:$reuse,
    PerfDojo_LocationAttr:$location,
    StrArrayAttr:$arrays);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of elements actually stored (the product of the
    /// materialized extents).
    int64_t getStoredElementCount();
    /// The extent stored for dimension `dim` (its reuse factor, or its size).
    int64_t getStoredExtent(unsigned dim);
    bool isInput() { return getRole() == Role::in; }
    bool isOutput() { return getRole() == Role::out; }
    bool isTemporary() { return getRole() == Role::tmp; }
  }];
}

//===----------------------------------------------------------------------===//
// ScopeOp
//===----------------------------------------------------------------------===//

def PerfDojo_ScopeOp : PerfDojo_Op<"scope", [
    ParentOneOf<["KernelOp", "ScopeOp"]>, NoTerminator, SingleBlock,
    NoRegionArguments]> {
  let summary = "A loop over one dimension with a constant trip count and a mapping";
  let description = !subst("}@]", "}]", [{
    Executes its children, in order, `size` times. Its iteration variable is
    referred to as `{d}` by operations nested inside, where `d` is the number
    of scopes enclosing this one. `mapping` says how the iterations are
    instantiated: `seq` (default, omitted when printed), `unroll`,
    `parallel` (CPU threads), `vector` (SIMD lanes; only operations inside),
    `grid`, `block` and `warp` (GPU).

    ```mlir
    perfdojo.scope 24576 parallel {
      perfdojo.scope 512 {
        perfdojo.compute m[{0}@] max= x[{0}, {1}@]
      }
    }
    ```
  }]);
  let arguments = (ins
    ConfinedAttr<I64Attr, [IntPositive]>:$size,
    PerfDojo_MappingAttr:$mapping);
  let regions = (region SizedRegion<1>:$body);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of enclosing scopes (0 for a scope directly in the kernel).
    unsigned getDepth();
    ::mlir::Block &getBodyBlock() { return getBody().front(); }
  }];
}

//===----------------------------------------------------------------------===//
// ComputeOp
//===----------------------------------------------------------------------===//

def PerfDojo_ComputeOp : PerfDojo_Op<"compute", [
    ParentOneOf<["KernelOp", "ScopeOp"]>]> {
  let summary = "One primitive scalar operation on array elements: a leaf of the tree";
  let description = !subst("}@]", "}]", [{
    Computes `kind` of its `inputs` and stores it into the `out` element, or
    combines it with that element when `reduction` is not `none`. Inputs are
    array accesses (`#perfdojo.access`), iteration variables used as values
    (`#perfdojo.iter`) or constants (an `f64` float attribute, converted to
    the operation's type). Arithmetic is performed in the output's element
    type; `cast` converts from its input's type; comparisons produce 1 or 0;
    the condition of `select` may have any type (non-zero is true).

    Custom form: `out reduction operand` for a copy, otherwise
    `out reduction kind(operand, ...)`, where `reduction` is one of
    `=`, `+=`, `*=`, `max=`, `min=`:

    ```mlir
    perfdojo.compute m[{0}@] max= x[{0}, {1}@]
    perfdojo.compute e[{0}, {1}@] = sub(x[{0}, {1}@], m[{0}@])
    perfdojo.compute i[{0}@] = cast({0})
    perfdojo.compute m[{0}@] = -inf
    ```
  }]);
  let arguments = (ins
    PerfDojo_OpKindAttr:$kind,
    PerfDojo_ReductionAttr:$reduction,
    PerfDojo_AccessAttr:$out,
    ArrayAttr:$inputs);
  let hasCustomAssemblyFormat = 1;
  let hasVerifier = 1;
  let extraClassDeclaration = [{
    /// The number of enclosing scopes.
    unsigned getDepth();
    /// The enclosing kernel.
    KernelOp getKernel();
  }];
}

//===----------------------------------------------------------------------===//
// CallOp
//===----------------------------------------------------------------------===//

def PerfDojo_CallOp : PerfDojo_Op<"call", [
    DeclareOpInterfaceMethods<SymbolUserOpInterface>]> {
  let summary = "A host-side call of the function a kernel lowers to";
  let description = [{
    Calls kernel `callee` from ordinary host code (a `func.func`), with one
    memref per `in` and `out` buffer of the kernel, in declaration order.
    Each memref has exactly the type the kernel's function will take: the
    buffer's shape and element type, the identity layout, no memory space.
    `func.call` cannot name a kernel (its callee must be a `func.func`), so
    `convert-linalg-to-perfdojo` emits this operation and
    `convert-perfdojo-to-standard`, which turns each kernel into a function
    of the same name, replaces it by a `func.call` of that function.

    The kernel's arguments never overlap (its function marks them
    `llvm.noalias`): passing one memref twice, or overlapping views, is
    undefined.

    ```mlir
    perfdojo.call @matmul_0(%a, %b, %c_init, %c)
        : memref<64x32xf32>, memref<32x48xf32>, memref<64x48xf32>, memref<64x48xf32>
    ```
  }];
  let arguments = (ins FlatSymbolRefAttr:$callee,
                       Arg<Variadic<AnyMemRef>, "the kernel's arguments",
                           [MemRead, MemWrite]>:$operands);
  let assemblyFormat = [{
    $callee `(` $operands `)` attr-dict (`:` type($operands)^)?
  }];
}

#endif // PERFDOJO_DIALECT_PERFDOJOOPS_TD
