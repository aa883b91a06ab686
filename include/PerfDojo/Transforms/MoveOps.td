//===- MoveOps.td - The move catalogue as transform ops -----*- tablegen -*-===//
//
// Every move of the catalogue is declared here, once, as an op of a
// Transform-dialect extension (`transform.perfdojo.<move>`). The declaration
// is the single source of the move's name, summary, description, location
// kind, inverse and typed parameters: the C++ move registry (Move.h), the
// parsing of `name@location:param` strings, the typed builders the
// heuristics use (`TileScopeOp::make(at, 16)`), the transform op that
// `mlir-opt --transform-interpreter` runs, and the generated move reference
// (docs/generated/PerfDojoMoves.md) all come from it. A move's C++ side is
// three static functions, defined next to its algorithm: `checkMove`,
// `applyMove` and, for moves with parameters, `getMoveChoices`.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TRANSFORMS_MOVEOPS_TD
#define PERFDOJO_TRANSFORMS_MOVEOPS_TD

include "mlir/Dialect/Transform/IR/TransformDialect.td"
include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.td"
include "mlir/Interfaces/SideEffectInterfaces.td"
include "mlir/IR/OpBase.td"

//===----------------------------------------------------------------------===//
// Locations
//===----------------------------------------------------------------------===//

/// What a move's location designates (Move.h, LocationKind).
class PerfDojo_LocationKind<string cppName, string syntax, string summary> {
  string cppKind = "::mlir::perfdojo::LocationKind::" # cppName;
  string locationSyntax = syntax;
  string doc = summary;
}
def PerfDojo_ScopeLocation : PerfDojo_LocationKind<"Scope", "array[#n]:depth",
  "the scope at depth `depth` (0 = outermost) around the `n`-th operation "
  "writing `array`">;
def PerfDojo_OperationLocation : PerfDojo_LocationKind<"Operation",
  "array[#n]", "the `n`-th operation (from 0) writing `array`, in program "
  "order">;
def PerfDojo_BufferLocation : PerfDojo_LocationKind<"Buffer", "name",
  "the buffer `name`">;
def PerfDojo_BufferDimLocation : PerfDojo_LocationKind<"BufferDim",
  "name:dim", "dimension `dim` (from 0) of the buffer `name`">;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

/// A parameter of a move: `name` is both the transform op's attribute and the
/// parameter's name in the registry; `cppType` the type of the typed check,
/// apply and builder; `parser` the function (MoveOps.h) that reads the
/// parameter from its text in `name@location:param`, with a reason when it
/// is malformed; `attr` the attribute, whose constraint the transform op
/// verifies.
class PerfDojo_MoveParam<string paramName, string type, string parseFn,
                         Attr attribute, string attrBuilder, string summary> {
  string name = paramName;
  string cppType = type;
  string parser = parseFn;
  Attr attr = attribute;
  /// Builds the attribute from the parameter's text `$_text`.
  string buildAttr = attrBuilder;
  string doc = summary;
}

def PerfDojo_IsWord : AttrConstraint<
  CPred<"::mlir::perfdojo::isMoveWord(::llvm::cast<::mlir::StringAttr>($_self).getValue())">,
  "a name (letters, digits and '_')">;
def PerfDojo_WordAttr : ConfinedAttr<StrAttr, [PerfDojo_IsWord]>;
def PerfDojo_IsBufferLocation : AttrConstraint<
  CPred<"::mlir::perfdojo::symbolizeBufferLocation(::llvm::cast<::mlir::StringAttr>($_self).getValue()).has_value()">,
  "one of heap, stack, reg, shared">;
def PerfDojo_BufferLocationNameAttr
    : ConfinedAttr<StrAttr, [PerfDojo_IsBufferLocation]>;

/// A positive integer (a size, a count).
class PerfDojo_CountParam<string name, string doc>
  : PerfDojo_MoveParam<name, "int64_t", "parsePositiveMoveParam",
                       ConfinedAttr<I64Attr, [IntPositive]>,
                       "parseMoveIntegerAttr($_builder, $_text)", doc>;
/// A non-negative integer (a position, a depth).
class PerfDojo_IndexParam<string name, string doc>
  : PerfDojo_MoveParam<name, "int64_t", "parseNonNegativeMoveParam",
                       ConfinedAttr<I64Attr, [IntNonNegative]>,
                       "parseMoveIntegerAttr($_builder, $_text)", doc>;
/// The name of an array or of a new temporary.
class PerfDojo_NameParam<string name, string doc>
  : PerfDojo_MoveParam<name, "::llvm::StringRef", "parseNameMoveParam",
                       PerfDojo_WordAttr, "$_builder.getStringAttr($_text)",
                       doc>;
/// Where a buffer lives.
class PerfDojo_PlaceParam<string name, string doc>
  : PerfDojo_MoveParam<name, "::mlir::perfdojo::BufferLocation",
                       "parseBufferLocationMoveParam",
                       PerfDojo_BufferLocationNameAttr,
                       "$_builder.getStringAttr($_text)", doc>;

//===----------------------------------------------------------------------===//
// The move op class
//===----------------------------------------------------------------------===//

/// One move of the catalogue. `mnemonic` is the move's name; `kind` what its
/// location designates; `inverse` the move (or moves, `a|b`) that undo it;
/// `params` its typed parameters, in the order of the text form.
///
/// In a def: `let summary` (one line, for --help and the listing), `let
/// moveDoc` (what the move does and when it is legal; the generated
/// reference appends the location, the parameters and the inverse), and, as
/// needed, `locatesChild` (the scope is split after the child holding the
/// located operation, so candidates are enumerated per child) and
/// `scopeLocal` (the check and the parameter choices read only the scope's
/// context; Move::isScopeLocal).
class PerfDojo_MoveOp<string mnemonic, PerfDojo_LocationKind kind,
                      string inverse, list<PerfDojo_MoveParam> params = []>
  : TransformDialectOp<"perfdojo." # mnemonic,
      [DeclareOpInterfaceMethods<TransformOpInterface>,
       DeclareOpInterfaceMethods<MemoryEffectsOpInterface>]> {
  string moveName = mnemonic;
  PerfDojo_LocationKind locationKind = kind;
  string inverseMove = inverse;
  list<PerfDojo_MoveParam> moveParams = params;
  bit locatesChild = 0;
  bit scopeLocal = 0;
  string moveDoc = "";

  let cppNamespace = "::mlir::perfdojo::moves";

  // `, int64_t size, ::llvm::StringRef name`
  string typedParams = !foldl("", params, acc, p,
                              acc # ", " # p.cppType # " " # p.name);
  // `, size, name`
  string paramArgs = !foldl("", params, acc, p, acc # ", " # p.name);

  // Indented like the `[{` blocks of moveDoc, which the docs dedent.
  let description = moveDoc # "\n\n    "
    # "Text form: `" # mnemonic # "@" # kind.locationSyntax
    # !foldl("", params, acc, p, acc # ":" # p.name) # "`. "
    # "Location: " # kind.doc # ". "
    # !if(!empty(params), "",
          "Parameters: " # !interleave(!foreach(p, params,
              "`" # p.name # "`, " # p.doc), "; ") # ". ")
    # "Inverse: `" # !subst("|", "`, `", inverse) # "`.\n\n"
    # "    ```mlir\n"
    # "    transform.perfdojo." # mnemonic # " %kernel at \""
    # kind.locationSyntax # "\""
    # !foldl("", params, acc, p, acc # " " # p.name # " <" # p.name # ">")
    # " : !transform.op<\"perfdojo.kernel\">\n    ```\n";

  let arguments = !con(
    (ins TransformHandleTypeInterface:$target, StrAttr:$at),
    !dag(ins, !foreach(p, params, p.attr), !foreach(p, params, p.name)));
  let assemblyFormat = "$target `at` $at"
    # !foldl("", params, acc, p, acc # " `" # p.name # "` $" # p.name)
    # " attr-dict `:` type($target)";
  let hasVerifier = 1;

  let extraClassDeclaration = [{
    /// The move's name in `name@location:param` and in the registry.
    static ::llvm::StringRef getMoveName() { return "}] # mnemonic # [{"; }
    static ::llvm::StringRef getMoveSummary() {
      return "}] # !subst("\"", "\\\"", summary) # [{";
    }
    /// The move (or moves, `a|b`) that undo this one.
    static ::llvm::StringRef getInverseMoveName() { return "}] # inverse # [{"; }
    static constexpr ::mlir::perfdojo::LocationKind kLocationKind =
        }] # kind.cppKind # [{;
    static constexpr bool kLocatesChild = }] # !if(locatesChild, "true", "false") # [{;
    static constexpr bool kScopeLocal = }] # !if(scopeLocal, "true", "false") # [{;
    static ::llvm::ArrayRef<::llvm::StringRef> getMoveParamNames() {
      }] # !if(!empty(params), "return {};", "static const ::llvm::StringRef names[] = {"
           # !interleave(!foreach(p, params, "\"" # p.name # "\""), ", ")
           # "}; return names;") # [{
    }

    /// The legality check, on typed parameters (defined with the move).
    static ::mlir::LogicalResult checkMove(
        const ::mlir::perfdojo::ResolvedLocation &loc}] # typedParams # [{,
        std::string &reason);
    /// Applies the move; checkMove must have succeeded on the same IR.
    static void applyMove(::mlir::RewriterBase &rewriter,
        const ::mlir::perfdojo::ResolvedLocation &loc}] # typedParams # [{);
    /// The parameter choices worth enumerating at `loc` (moves with
    /// parameters define it with the move).
    static ::llvm::SmallVector<::llvm::SmallVector<std::string, 2>>
    getMoveChoices(const ::mlir::perfdojo::ResolvedLocation &loc);

    /// The move at `at` with these parameters, ready for applyMove.
    static ::mlir::perfdojo::MoveInstance
    make(::mlir::perfdojo::MoveLocation at}] # typedParams # [{);

    /// checkMove and applyMove on the parameters' text.
    static ::mlir::LogicalResult checkMoveText(
        const ::mlir::perfdojo::ResolvedLocation &loc,
        ::llvm::ArrayRef<std::string> params, std::string &reason);
    static void applyMoveText(::mlir::RewriterBase &rewriter,
        const ::mlir::perfdojo::ResolvedLocation &loc,
        ::llvm::ArrayRef<std::string> params);
    /// The parameters' attributes, from their text (already checked).
    static void addParamAttributes(::mlir::Builder &builder,
        ::mlir::OperationState &state, ::llvm::ArrayRef<std::string> params);
  }];

  let extraClassDefinition = [{
    ::mlir::perfdojo::MoveInstance
    $cppClass::make(::mlir::perfdojo::MoveLocation at}] # typedParams # [{) {
      at.params.clear();
      }] # !foldl("", params, acc, p,
                  acc # "at.params.push_back(::mlir::perfdojo::printMoveParam("
                  # p.name # "));\n") # [{
      return ::mlir::perfdojo::makeMoveInstance(getMoveName(), std::move(at));
    }

    ::mlir::LogicalResult $cppClass::checkMoveText(
        const ::mlir::perfdojo::ResolvedLocation &loc,
        ::llvm::ArrayRef<std::string> params, std::string &reason) {
      [[maybe_unused]] unsigned next = 0;
      }] # !foldl("", params, acc, p,
                  acc # p.cppType # " " # p.name # ";\n"
                  # "if (::mlir::failed(::mlir::perfdojo::" # p.parser
                  # "(params[next++], \"" # p.name # "\", " # p.name
                  # ", reason)))\n  return ::mlir::failure();\n") # [{
      return checkMove(loc}] # paramArgs # [{, reason);
    }

    void $cppClass::applyMoveText(::mlir::RewriterBase &rewriter,
        const ::mlir::perfdojo::ResolvedLocation &loc,
        ::llvm::ArrayRef<std::string> params) {
      [[maybe_unused]] unsigned next = 0;
      [[maybe_unused]] std::string ignored;
      }] # !foldl("", params, acc, p,
                  acc # p.cppType # " " # p.name # "{};\n"
                  # "(void)::mlir::perfdojo::" # p.parser
                  # "(params[next++], \"" # p.name # "\", " # p.name
                  # ", ignored);\n") # [{
      applyMove(rewriter, loc}] # paramArgs # [{);
    }

    void $cppClass::addParamAttributes(::mlir::Builder &builder,
        ::mlir::OperationState &state, ::llvm::ArrayRef<std::string> params) {
      [[maybe_unused]] unsigned next = 0;
      }] # !foldl("", params, acc, p,
                  acc # "state.addAttribute(\"" # p.name # "\", "
                  # !subst("$_text", "params[next++]",
                           !subst("$_builder", "builder", p.buildAttr))
                  # ");\n") # [{
    }

    ::mlir::DiagnosedSilenceableFailure
    $cppClass::apply(::mlir::transform::TransformRewriter &rewriter,
                     ::mlir::transform::TransformResults &,
                     ::mlir::transform::TransformState &state) {
      return ::mlir::perfdojo::applyMoveTransform(getOperation(), getMoveName(),
                                                  getTarget(), rewriter, state);
    }

    void $cppClass::getEffects(
        ::llvm::SmallVectorImpl<::mlir::MemoryEffects::EffectInstance> &effects) {
      ::mlir::perfdojo::getMoveTransformEffects(getTargetMutable(), effects);
    }

    ::mlir::LogicalResult $cppClass::verify() {
      return ::mlir::perfdojo::verifyMoveTransform(getOperation(), kLocationKind,
                                                   getAt());
    }
  }] # !if(!empty(params), [{
    ::llvm::SmallVector<::llvm::SmallVector<std::string, 2>>
    $cppClass::getMoveChoices(const ::mlir::perfdojo::ResolvedLocation &) {
      return {{}};
    }
  }], "");
}

//===----------------------------------------------------------------------===//
// Loop moves
//===----------------------------------------------------------------------===//

def PerfDojo_JoinScopesOp
    : PerfDojo_MoveOp<"join_scopes", PerfDojo_ScopeLocation, "split_scope"> {
  let summary = "fuse a scope with the next sibling scope of equal size";
  let moveDoc = [{
    Fuses the scope with the sibling scope right after it when both have the
    same size and mapping and no dependence runs backwards: the fused body
    runs the first body, then the second, for each iteration.
  }];
  let scopeLocal = 1;
}

def PerfDojo_SplitScopeOp
    : PerfDojo_MoveOp<"split_scope", PerfDojo_ScopeLocation, "join_scopes"> {
  let summary = "split a scope after the child holding the located operation";
  let moveDoc = [{
    Splits the scope after its child that holds the located operation: the
    children up to that one stay, the rest move to a new scope of the same
    size right after. Legal when no dependence crosses the cut backwards.
  }];
  let locatesChild = 1;
  let scopeLocal = 1;
}

def PerfDojo_SwapNestedScopesOp
    : PerfDojo_MoveOp<"swap_nested_scopes", PerfDojo_ScopeLocation,
                      "swap_nested_scopes"> {
  let summary = "interchange a scope with the only scope in its body";
  let moveDoc = [{
    Interchanges the scope with the only scope in its body (loop
    interchange), when every dependence stays in order.
  }];
  let scopeLocal = 1;
}

def PerfDojo_SwapSiblingOp
    : PerfDojo_MoveOp<"swap_sibling", PerfDojo_ScopeLocation,
                      "swap_sibling|swap_ops"> {
  let summary = "exchange a scope with the sibling that follows it";
  let moveDoc = [{
    Exchanges the scope with the sibling (scope or operation) that follows
    it, when neither reads what the other writes.
  }];
  let scopeLocal = 1;
}

def PerfDojo_SwapOpsOp
    : PerfDojo_MoveOp<"swap_ops", PerfDojo_OperationLocation,
                      "swap_ops|swap_sibling"> {
  let summary = "exchange an operation with the sibling that follows it";
  let moveDoc = [{
    Exchanges the operation with the sibling (operation or scope) that
    follows it, when neither reads what the other writes.
  }];
}

def PerfDojo_TileScopeOp
    : PerfDojo_MoveOp<"tile_scope", PerfDojo_ScopeLocation, "merge_scopes",
                      [PerfDojo_CountParam<"size",
                         "the inner scope's size, a divisor of the scope's">]> {
  let summary = "split a scope of N into N/t scopes of t nested inside";
  let moveDoc = [{
    Splits a scope of size N into a scope of N/t around a new scope of t;
    the index `{d}` becomes `{d}*t+{d+1}`. The order of every instance is
    unchanged, so the move is always legal when t divides N.
  }];
  let scopeLocal = 1;
}

def PerfDojo_MergeScopesOp
    : PerfDojo_MoveOp<"merge_scopes", PerfDojo_ScopeLocation, "tile_scope"> {
  let summary = "merge a scope with the only scope in its body";
  let moveDoc = [{
    Tiling's inverse: merges the scope with the only scope in its body when
    every index uses them as `{d}*inner+{d+1}`.
  }];
  let scopeLocal = 1;
}

def PerfDojo_PeelScopeOp
    : PerfDojo_MoveOp<"peel_scope", PerfDojo_ScopeLocation, "unpeel_scope",
                      [PerfDojo_CountParam<"count",
                         "how many iterations the first scope runs">]> {
  let summary = "split a scope into its first n iterations and the rest, run after";
  let moveDoc = [{
    Splits a scope of size N into one of its first `count` iterations and
    one of the other N-count, run right after it (`{d}` becomes
    `{d}+count` there). The order of every instance is unchanged.
  }];
  let scopeLocal = 1;
}

def PerfDojo_UnpeelScopeOp
    : PerfDojo_MoveOp<"unpeel_scope", PerfDojo_ScopeLocation, "peel_scope"> {
  let summary = "join a scope with the next one when it runs the following iterations";
  let moveDoc = [{
    Peeling's inverse: joins the scope with the next sibling scope when that
    one's body is this one's with `{d}` shifted by this scope's size.
  }];
  let scopeLocal = 1;
}

//===----------------------------------------------------------------------===//
// Mapping moves
//===----------------------------------------------------------------------===//

/// Gives a sequential scope a mapping.
class PerfDojo_MappingMoveOp<string mnemonic, string mark, string what>
  : PerfDojo_MoveOp<mnemonic, PerfDojo_ScopeLocation, "unset_mapping"> {
  let moveDoc = "\n    Marks a sequential scope `" # mark # "`: " # what # ". "
    # "Legality depends on the mapping (docs/Moves.md): the scope's "
    # "iterations must be independent for parallel, vector and GPU "
    # "mappings, and the scopes around and inside must allow it.";
  let scopeLocal = 1;
}

def PerfDojo_UnrollOp : PerfDojo_MappingMoveOp<"unroll", ":u",
    "its iterations are instantiated one after the other at compile time"> {
  let summary = "unroll a scope (:u)";
}
def PerfDojo_ParallelizeOp : PerfDojo_MappingMoveOp<"parallelize", ":p",
    "its iterations run on CPU threads (OpenMP)"> {
  let summary = "run a scope's iterations on CPU threads (:p)";
}
def PerfDojo_VectorizeOp : PerfDojo_MappingMoveOp<"vectorize", ":v",
    "its iterations run as the lanes of a vector"> {
  let summary = "run a scope's iterations as vector lanes (:v)";
}
def PerfDojo_GpuGridOp : PerfDojo_MappingMoveOp<"gpu_grid", ":g",
    "its iterations are the blocks of a GPU grid"> {
  let summary = "map a scope to the GPU grid (:g)";
}
def PerfDojo_GpuBlockOp : PerfDojo_MappingMoveOp<"gpu_block", ":b",
    "its iterations are the threads of a GPU block"> {
  let summary = "map a scope to the threads of a GPU block (:b)";
}
def PerfDojo_GpuWarpOp : PerfDojo_MappingMoveOp<"gpu_warp", ":w",
    "its iterations are the lanes of a GPU warp"> {
  let summary = "map a scope to the lanes of a GPU warp (:w)";
}

def PerfDojo_UnsetMappingOp
    : PerfDojo_MoveOp<"unset_mapping", PerfDojo_ScopeLocation,
                      "unroll|parallelize|vectorize|gpu_grid|gpu_block|gpu_warp"> {
  let summary = "make a mapped scope sequential again";
  let moveDoc = [{
    Makes a mapped scope sequential again; always legal on a mapped scope
    (a sequential scope runs any mapped one's iterations in order).
  }];
  let scopeLocal = 1;
}

//===----------------------------------------------------------------------===//
// Buffer moves
//===----------------------------------------------------------------------===//

def PerfDojo_ReuseDimsOp
    : PerfDojo_MoveOp<"reuse_dims", PerfDojo_BufferDimLocation,
                      "materialize_dims"> {
  let summary = "store one element of a temporary's dimension (:1)";
  let moveDoc = [{
    Stores only one element of the temporary's dimension (`:1`), indexed
    modulo 1. Legal when every access indexes the dimension by the variable
    of one sequential or unrolled scope that encloses all accesses to the
    buffer, and no element is shared between two iterations of it.
  }];
}

def PerfDojo_MaterializeDimsOp
    : PerfDojo_MoveOp<"materialize_dims", PerfDojo_BufferDimLocation,
                      "reuse_dims"> {
  let summary = "store every element of a reused dimension again";
  let moveDoc = [{
    reuse_dims's inverse: stores every element of the dimension again,
    under the same conditions.
  }];
}

def PerfDojo_SetLocationOp
    : PerfDojo_MoveOp<"set_location", PerfDojo_BufferLocation, "set_location",
                      [PerfDojo_PlaceParam<"place",
                         "`heap`, `stack`, `reg` or `shared`">]> {
  let summary = "move a temporary to the heap, the stack, registers or GPU shared memory";
  let moveDoc = [{
    Moves a temporary to another storage location. Registers need a size
    known to be small and every index fixed at compile time (unrolled
    scopes); shared memory is for GPU kernels.
  }];
}

def PerfDojo_PermuteDimsOp
    : PerfDojo_MoveOp<"permute_dims", PerfDojo_BufferDimLocation,
                      "permute_dims"> {
  let summary = "exchange a temporary's dimension with the next one in its layout";
  let moveDoc = [{
    Exchanges dimensions `dim` and `dim+1` of a temporary's layout,
    rewriting every access to it.
  }];
}

def PerfDojo_SplitDimOp
    : PerfDojo_MoveOp<"split_dim", PerfDojo_BufferDimLocation, "join_dims",
                      [PerfDojo_CountParam<"inner",
                         "the inner dimension's size, a divisor of the dimension's">]> {
  let summary = "split a temporary's dimension of N into N/inner and inner";
  let moveDoc = [{
    Splits dimension `dim` of a temporary into two, of N/inner and inner
    elements, with the same layout: index i becomes (i div inner,
    i mod inner). Legal when every access's index of the dimension is
    inner * P + Q with Q within 0 .. inner-1 over its scopes, so that each
    access splits into indices of its own (a vector's lanes in Q).
  }];
}

def PerfDojo_JoinDimsOp
    : PerfDojo_MoveOp<"join_dims", PerfDojo_BufferDimLocation, "split_dim"> {
  let summary = "join a temporary's dimension with the next one";
  let moveDoc = [{
    split_dim's inverse: dimensions `dim` and `dim+1` (A and B elements)
    become one of A*B, indexed B * i + j, with the same layout.
  }];
}

def PerfDojo_AddDimOp
    : PerfDojo_MoveOp<"add_dim", PerfDojo_BufferLocation, "remove_dim",
                      [PerfDojo_IndexParam<"position",
                         "where the new dimension goes (0 = first)">,
                       PerfDojo_IndexParam<"depth",
                         "the enclosing scope that indexes it">]> {
  let summary = "give a temporary a new dimension indexed by an enclosing scope (:1)";
  let moveDoc = [{
    Inserts at `position` a dimension as large as the scope at `depth` that
    encloses every access to the buffer, indexed by that scope's variable
    and stored as one element (`:1`): the storage does not change until
    materialize_dims.
  }];
}

def PerfDojo_RemoveDimOp
    : PerfDojo_MoveOp<"remove_dim", PerfDojo_BufferDimLocation, "add_dim"> {
  let summary = "remove a temporary's dimension that stores one element";
  let moveDoc = [{
    Removes a dimension of a temporary that stores one element (its size or
    its reuse factor is 1): every index of it reads the same slot.
  }];
}

def PerfDojo_PadDimOp
    : PerfDojo_MoveOp<"pad_dim", PerfDojo_BufferDimLocation, "unpad_dim",
                      [PerfDojo_CountParam<"amount",
                         "how many unused elements to add">]> {
  let summary = "add unused elements at the end of a temporary's dimension";
  let moveDoc = [{
    Grows a temporary's dimension by `amount` elements that no access
    reaches (padding, e.g. to align rows or to avoid cache conflicts).
  }];
}

def PerfDojo_UnpadDimOp
    : PerfDojo_MoveOp<"unpad_dim", PerfDojo_BufferDimLocation, "pad_dim",
                      [PerfDojo_CountParam<"amount",
                         "how many unused elements to remove">]> {
  let summary = "remove unused elements from the end of a dimension";
  let moveDoc = [{
    pad_dim's inverse: shrinks a temporary's dimension by `amount` when no
    access reaches those elements.
  }];
}

//===----------------------------------------------------------------------===//
// Copy, reduction and sharing moves
//===----------------------------------------------------------------------===//

def PerfDojo_AddCopyOp
    : PerfDojo_MoveOp<"add_copy", PerfDojo_ScopeLocation, "remove_copy",
                      [PerfDojo_NameParam<"array", "the array the scope reads">,
                       PerfDojo_NameParam<"name", "the new temporary's name">]> {
  let summary = "copy the tile of an array a scope reads into a new temporary before it";
  let moveDoc = [{
    Inserts right before the scope a nest copying the tile of `array` that
    the scope reads into a new temporary `name`, and makes the scope read
    the copy. Legal when nothing in the scope writes the array's buffer.
  }];
  let scopeLocal = 1;
}

def PerfDojo_RemoveCopyOp
    : PerfDojo_MoveOp<"remove_copy", PerfDojo_BufferLocation, "add_copy"> {
  let summary = "read the source of a copy again and delete the copy";
  let moveDoc = [{
    add_copy's inverse: the readers of the copy read its source again, and
    the copy and its nest are deleted.
  }];
}

def PerfDojo_RecomputeOp
    : PerfDojo_MoveOp<"recompute", PerfDojo_BufferLocation, "reload"> {
  let summary = "compute a copied element again from the operands of the operation that wrote it";
  let moveDoc = [{
    The copy writing this temporary, `buffer[..] = array[s]`, computes the
    element instead, as the one element-wise operation writing `array`
    does, from that operation's operands at `s`. Legal when that operation
    writes every element of `array` once, in a nest before the copy's, and
    nothing in its nest, the copy's or any between writes a buffer it
    reads.
  }];
}

def PerfDojo_ReloadOp
    : PerfDojo_MoveOp<"reload", PerfDojo_BufferLocation, "recompute",
                      [PerfDojo_NameParam<"array",
                         "the array whose element the operation computes">]> {
  let summary = "copy an element that an operation computes again from the array its writer stored it in";
  let moveDoc = [{
    recompute's inverse: the operation writing this temporary, which
    computes an element of `array` as `array`'s one writer does, copies
    the element from `array` instead.
  }];
}

def PerfDojo_SplitReductionOp
    : PerfDojo_MoveOp<"split_reduction", PerfDojo_ScopeLocation,
                      "join_reduction",
                      [PerfDojo_NameParam<"name",
                         "the new temporary of partial results">]> {
  let summary = "give each iteration of a reduction's scope its own partial result, combined after the scope";
  let moveDoc = [{
    Rfactor: the reduction located by the operation gets a temporary `name`
    of partial results indexed by the scope's variable, initialized with
    the reduction's identity, and the partial results are combined into the
    original element after the scope. The scope's iterations then become
    independent (parallel, vector or GPU mappings become legal).
  }];
  let scopeLocal = 1;
}

def PerfDojo_JoinReductionOp
    : PerfDojo_MoveOp<"join_reduction", PerfDojo_BufferLocation,
                      "split_reduction"> {
  let summary = "update the combined element in the reduction again and delete its partial results";
  let moveDoc = [{
    split_reduction's inverse, located by the temporary of partial results.
  }];
}

def PerfDojo_ReuseBufferOp
    : PerfDojo_MoveOp<"reuse_buffer", PerfDojo_BufferLocation, "split_buffer",
                      [PerfDojo_NameParam<"array",
                         "the temporary to store in this buffer">]> {
  let summary = "store a temporary in another one's buffer when their lifetimes are disjoint";
  let moveDoc = [{
    Stores temporary `array` (alone in a buffer of its name) in this buffer
    too, deleting its own. Legal when both have the same type, shape, reuse
    and location, and every top-level scope touching one comes before every
    top-level scope touching the other.
  }];
}

def PerfDojo_SplitBufferOp
    : PerfDojo_MoveOp<"split_buffer", PerfDojo_BufferLocation, "reuse_buffer",
                      [PerfDojo_NameParam<"array",
                         "the array that gets its own buffer">]> {
  let summary = "give an array that shares a buffer its own buffer again";
  let moveDoc = [{
    reuse_buffer's inverse: gives `array` its own buffer again, declared
    right after this one, when the lifetimes are disjoint and the later
    arrays overwrite the whole buffer before reading it.
  }];
}

//===----------------------------------------------------------------------===//
// Finding kernels
//===----------------------------------------------------------------------===//

def PerfDojo_MatchKernelOp : TransformDialectOp<"perfdojo.match_kernel",
    [DeclareOpInterfaceMethods<TransformOpInterface>,
     DeclareOpInterfaceMethods<MemoryEffectsOpInterface>,
     NavigationTransformOpTrait]> {
  let summary = "the perfdojo kernels nested in the payload, or the one named";
  let description = [{
    Returns a handle to every `perfdojo.kernel` nested in the payload of
    `root` (the payload itself included), or only the kernel named
    `kernel_name`. Fails (silenceably) when there is none, naming the
    kernel.

    ```mlir
    %k = transform.perfdojo.match_kernel @softmax in %root
        : (!transform.any_op) -> !transform.op<"perfdojo.kernel">
    ```
  }];
  let cppNamespace = "::mlir::perfdojo::moves";
  let arguments = (ins TransformHandleTypeInterface:$root,
                       OptionalAttr<FlatSymbolRefAttr>:$kernel_name);
  let results = (outs TransformHandleTypeInterface:$result);
  let assemblyFormat = "($kernel_name^)? `in` $root attr-dict `:` "
                       "functional-type($root, $result)";
}

#endif // PERFDOJO_TRANSFORMS_MOVEOPS_TD
