//===- PerfDojoBase.td - perfdojo dialect and enums --------*- tablegen -*-===//
//
// The perfdojo dialect: ML kernels as ordered trees of scopes (one loop
// dimension each) and scalar operations over named arrays.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_DIALECT_PERFDOJOBASE_TD
#define PERFDOJO_DIALECT_PERFDOJOBASE_TD

include "mlir/IR/OpBase.td"
include "mlir/IR/AttrTypeBase.td"
include "mlir/IR/EnumAttr.td"

def PerfDojo_Dialect : Dialect {
  let name = "perfdojo";
  let cppNamespace = "::mlir::perfdojo";
  let summary = "Kernels as trees of scopes and scalar operations, for the PerfDojo optimization game";
  let description = !subst("}@]", "}]", [{
    A `perfdojo.kernel` holds buffer declarations followed by an ordered tree:
    inner nodes are `perfdojo.scope` loops with a constant trip count and an
    optional mapping (unroll, CPU-parallel, vector, GPU grid/block/warp);
    leaves are `perfdojo.compute` operations that apply one primitive to
    array elements indexed by affine expressions of the enclosing scopes'
    iteration variables. `{d}` denotes the iteration variable of the
    enclosing scope at depth `d` (0 = outermost).

    ```mlir
    perfdojo.kernel @scale {
      perfdojo.buffer in x f32 [64, 16] heap
      perfdojo.buffer out y f32 [64, 16] heap
      perfdojo.scope 64 {
        perfdojo.scope 16 vector {
          perfdojo.compute y[{0}, {1}@] = mul(x[{0}, {1}@], 0.5)
        }
      }
    }
    ```

    The dialect round-trips exactly with the PerfDojo text form
    (`pd-translate --import-pd` / `--export-pd`).
  }]);
  let useDefaultAttributePrinterParser = 1;
  let extraClassDeclaration = [{
    /// The linear forms of the results of an access map, decomposed once per
    /// map (maps are uniqued) and kept for the context's lifetime.
    ::llvm::ArrayRef<LinearForm> getLinearForms(::mlir::AffineMap map);

    /// Answers of the scope-local moves at one scope context (see
    /// enumerateMoves), keyed by a 128-bit hash of an exact encoding of the
    /// context; the value's type is the listing's business.
    std::shared_ptr<const void> lookupListing(std::pair<uint64_t, uint64_t> key);
    void recordListing(std::pair<uint64_t, uint64_t> key,
                       std::shared_ptr<const void> answer);

  private:
    ::llvm::sys::SmartRWMutex<true> listingsMutex;
    ::llvm::DenseMap<std::pair<uint64_t, uint64_t>, std::shared_ptr<const void>>
        listings, olderListings;
    ::llvm::sys::SmartRWMutex<true> formsMutex;
    ::llvm::DenseMap<::mlir::AffineMap,
                     std::unique_ptr<::llvm::SmallVector<LinearForm>>>
        formsCache;
  public:
  }];
}

//===----------------------------------------------------------------------===//
// Enums
//===----------------------------------------------------------------------===//

def PerfDojo_Role : I32EnumAttr<"Role", "role of a buffer in the kernel signature", [
    I32EnumAttrCase<"in", 0>,
    I32EnumAttrCase<"out", 1>,
    I32EnumAttrCase<"tmp", 2>
  ]> {
  let cppNamespace = "::mlir::perfdojo";
  let genSpecializedAttr = 0;
}
def PerfDojo_RoleAttr : EnumAttr<PerfDojo_Dialect, PerfDojo_Role, "role"> {
  let summary = "Whether a buffer is a kernel input, a kernel output or a temporary";
  let description = [{
    `in` buffers are read-only kernel arguments, `out` buffers are kernel
    arguments whose final contents are the result, `tmp` buffers are local to
    the kernel. Example: `#perfdojo<role tmp>`.
  }];
}

def PerfDojo_Location : I32EnumAttr<"BufferLocation", "storage placement of a buffer", [
    I32EnumAttrCase<"heap", 0>,
    I32EnumAttrCase<"stack", 1>,
    I32EnumAttrCase<"reg", 2>,
    I32EnumAttrCase<"shared", 3>
  ]> {
  let cppNamespace = "::mlir::perfdojo";
  let genSpecializedAttr = 0;
}
def PerfDojo_LocationAttr : EnumAttr<PerfDojo_Dialect, PerfDojo_Location, "location"> {
  let summary = "Where a buffer lives: heap, stack, registers or GPU shared memory";
  let description = [{
    Kernel arguments (`in`/`out`) live on the heap; temporaries may be moved
    to the stack, to registers or to GPU shared memory by moves.
    Example: `#perfdojo<location stack>`.
  }];
}

def PerfDojo_Mapping : I32EnumAttr<"Mapping", "how a scope's iterations are instantiated", [
    I32EnumAttrCase<"seq", 0>,
    I32EnumAttrCase<"unroll", 1>,
    I32EnumAttrCase<"parallel", 2>,
    I32EnumAttrCase<"vector", 3>,
    I32EnumAttrCase<"grid", 4>,
    I32EnumAttrCase<"block", 5>,
    I32EnumAttrCase<"warp", 6>
  ]> {
  let cppNamespace = "::mlir::perfdojo";
  let genSpecializedAttr = 0;
}
def PerfDojo_MappingAttr : EnumAttr<PerfDojo_Dialect, PerfDojo_Mapping, "mapping"> {
  let summary = "Scope mapping: sequential, unrolled, CPU-parallel, vector lanes or GPU grid/block/warp";
  let description = [{
    Text-form suffixes: none (`seq`), `:u` (`unroll`), `:p` (`parallel`),
    `:v` (`vector`), `:g` (`grid`), `:b` (`block`), `:w` (`warp`).
    Example: `#perfdojo<mapping vector>`.
  }];
}

def PerfDojo_Reduction : I32EnumAttr<"Reduction", "how an operation combines with its output", [
    I32EnumAttrCase<"none", 0>,
    I32EnumAttrCase<"add", 1>,
    I32EnumAttrCase<"mul", 2>,
    I32EnumAttrCase<"max", 3>,
    I32EnumAttrCase<"min", 4>
  ]> {
  let cppNamespace = "::mlir::perfdojo";
  let genSpecializedAttr = 0;
}
def PerfDojo_ReductionAttr : EnumAttr<PerfDojo_Dialect, PerfDojo_Reduction, "reduction"> {
  let summary = "Assignment (`=`) or reduction update (`+=`, `*=`, `max=`, `min=`)";
  let description = [{
    `none` overwrites the output element; the others combine the computed
    value with the current output element. Example: `#perfdojo<reduction max>`.
  }];
}

def PerfDojo_OpKind : I32EnumAttr<"OpKind", "primitive scalar operation", [
    I32EnumAttrCase<"copy", 0>,
    I32EnumAttrCase<"neg", 1>,
    I32EnumAttrCase<"abs", 2>,
    I32EnumAttrCase<"exp", 3>,
    I32EnumAttrCase<"log", 4>,
    I32EnumAttrCase<"sqrt", 5>,
    I32EnumAttrCase<"rsqrt", 6>,
    I32EnumAttrCase<"tanh", 7>,
    I32EnumAttrCase<"sigmoid", 8>,
    I32EnumAttrCase<"cast", 9>,
    I32EnumAttrCase<"add", 10>,
    I32EnumAttrCase<"sub", 11>,
    I32EnumAttrCase<"mul", 12>,
    I32EnumAttrCase<"div", 13>,
    I32EnumAttrCase<"max", 14>,
    I32EnumAttrCase<"min", 15>,
    I32EnumAttrCase<"lt", 16>,
    I32EnumAttrCase<"le", 17>,
    I32EnumAttrCase<"gt", 18>,
    I32EnumAttrCase<"ge", 19>,
    I32EnumAttrCase<"eq", 20>,
    I32EnumAttrCase<"ne", 21>,
    I32EnumAttrCase<"fma", 22>,
    I32EnumAttrCase<"select", 23>,
    I32EnumAttrCase<"erf", 24>,
    I32EnumAttrCase<"floor", 25>,
    I32EnumAttrCase<"ceil", 26>,
    I32EnumAttrCase<"round", 27>,
    I32EnumAttrCase<"sin", 28>,
    I32EnumAttrCase<"cos", 29>,
    I32EnumAttrCase<"tan", 30>,
    I32EnumAttrCase<"asin", 31>,
    I32EnumAttrCase<"acos", 32>,
    I32EnumAttrCase<"atan", 33>,
    I32EnumAttrCase<"sinh", 34>,
    I32EnumAttrCase<"cosh", 35>,
    I32EnumAttrCase<"asinh", 36>,
    I32EnumAttrCase<"acosh", 37>,
    I32EnumAttrCase<"atanh", 38>,
    I32EnumAttrCase<"sign", 39>,
    I32EnumAttrCase<"pow", 40>,
    I32EnumAttrCase<"fmod", 41>,
    I32EnumAttrCase<"mod", 42>
  ]> {
  let cppNamespace = "::mlir::perfdojo";
  let genSpecializedAttr = 0;
}
def PerfDojo_OpKindAttr : EnumAttr<PerfDojo_Dialect, PerfDojo_OpKind, "kind"> {
  let summary = "The primitive a compute operation applies";
  let description = [{
    Unary: copy, neg, abs, exp, log, sqrt, rsqrt, tanh, sigmoid, cast, erf,
    floor, ceil, round (half to even), sin, cos, tan, asin, acos, atan, sinh,
    cosh, asinh, acosh, atanh, sign (-1, 0 or 1).
    Binary: add, sub, mul, div, max, min, pow (C `pow`), fmod (remainder of
    the truncated quotient: the sign of `a`, C `fmod` and `%`), mod
    (remainder of the floored quotient: the sign of `b`, Python's `%`) and
    the comparisons lt, le, gt, ge, eq, ne (which produce 1 or 0).
    Ternary: fma (a*b+c) and select (c ? a : b).
    Example: `#perfdojo<kind fma>`.
  }];
}

#endif // PERFDOJO_DIALECT_PERFDOJOBASE_TD
