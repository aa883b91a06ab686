//===- PerfDojoAttrs.td - perfdojo attributes --------------*- tablegen -*-===//
//
// Operands of compute operations: array accesses and iteration variables.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_DIALECT_PERFDOJOATTRS_TD
#define PERFDOJO_DIALECT_PERFDOJOATTRS_TD

include "PerfDojo/Dialect/PerfDojo/PerfDojoBase.td"

class PerfDojo_Attr<string name, string attrMnemonic>
    : AttrDef<PerfDojo_Dialect, name> {
  let mnemonic = attrMnemonic;
}

def PerfDojo_AccessAttr : PerfDojo_Attr<"Access", "access"> {
  let summary = "An element of a named array, indexed by affine expressions of scope variables";
  let description = [{
    `array` names an array declared by a `perfdojo.buffer`; `map` gives one
    linear expression per array dimension over the iteration variables of the
    enclosing scopes (`d0` = depth 0, the outermost). The map has exactly as
    many dimensions as the deepest scope it refers to, and its expressions are
    kept in canonical order (dimensions ascending, constant last), so that
    equal accesses are equal attributes.

    ```mlir
    #perfdojo.access<x[{0} * 64 + {1}, 3]>
    ```
  }];
  let parameters = (ins "::mlir::StringAttr":$array, "::mlir::AffineMap":$map);
  let hasCustomAssemblyFormat = 1;
  let genVerifyDecl = 1;
  let extraClassDeclaration = [{
    /// Builds an access in canonical form from one linear form per dimension.
    static AccessAttr getCanonical(::mlir::MLIRContext *ctx,
                                   ::llvm::StringRef array,
                                   ::llvm::ArrayRef<LinearForm> indices);
    /// Returns the linear form of every index (the verifier guarantees
    /// linearity).
    /// The index forms, owned by the dialect (valid for the context).
    ::llvm::ArrayRef<LinearForm> getLinearForms() const;
  }];
}

def PerfDojo_IterAttr : PerfDojo_Attr<"Iter", "iter"> {
  let summary = "The iteration variable of an enclosing scope, used as a value";
  let description = !subst("}@]", "}]", [{
    `depth` selects the enclosing scope (0 = outermost). Printed `{d}` inside
    compute operations, e.g. `perfdojo.compute z[{0}@] = cast({0})`.

    ```mlir
    #perfdojo.iter<1>
    ```
  }]);
  let parameters = (ins "unsigned":$depth);
  let assemblyFormat = "`<` $depth `>`";
}

#endif // PERFDOJO_DIALECT_PERFDOJOATTRS_TD
