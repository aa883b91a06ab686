//===- Move.h - The move abstraction and registry ----------------*- C++ -*-===//
//
// A move is one atomic, location-addressed, legality-checked transformation
// of a kernel. Moves are written `name@location[:param...]`:
//
//   join_scopes@t:0        the depth-0 scope around the first op writing t
//   split_scope@t#1:1      the depth-1 scope around the second op writing t
//   swap_ops@y#2           the third op writing y
//   reuse_dims@t:1         dimension 1 of buffer t
//   tile_scope@x:1:16      scope x:1, tile size 16
//
// Locations name a scope by an operation inside it (its output array, `#n`
// for the n-th op writing that array in program order, default 0) and the
// scope's depth, so they survive edits elsewhere in the tree.
//
// Each move checks first and changes second: `check` is pure and gives the
// reason it refuses; `apply` runs only after the check passed and changes
// the IR only through the rewriter.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TRANSFORMS_MOVE_H
#define PERFDOJO_TRANSFORMS_MOVE_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/IR/PatternMatch.h"
#include <memory>
#include <string>

namespace mlir {
namespace perfdojo {

/// What a move's location designates.
enum class LocationKind {
  /// A scope: `array[#n]:depth`.
  Scope,
  /// A compute operation: `array[#n]`.
  Operation,
  /// A buffer: `buffer`.
  Buffer,
  /// A dimension of a buffer: `buffer:dim`.
  BufferDim,
};

/// A parsed location with its trailing parameters.
struct MoveLocation {
  std::string name;
  unsigned ordinal = 0;
  /// Depth (Scope) or dimension (BufferDim); unused otherwise.
  unsigned index = 0;
  SmallVector<std::string, 2> params;

  /// Prints the location in canonical form for `kind` (no params).
  std::string str(LocationKind kind) const;
};

/// The IR a location resolves to. Scope locations also carry the operation
/// that names them.
struct ResolvedLocation {
  KernelOp kernel;
  ComputeOp op;
  ScopeOp scope;
  BufferOp buffer;
  unsigned dim = 0;
};

/// One move of the catalogue.
class Move {
public:
  virtual ~Move();

  virtual StringRef getName() const = 0;
  /// One line for --help and the docs.
  virtual StringRef getSummary() const = 0;
  /// The move that undoes this one.
  virtual StringRef getInverseName() const = 0;
  virtual LocationKind getLocationKind() const = 0;
  /// True for scope moves whose effect depends on the operation that names
  /// the scope (split_scope splits after that operation's child): they are
  /// enumerated once per child instead of once per scope.
  virtual bool locatesChild() const { return false; }
  /// Names of the parameters after the location (e.g. {"size"}).
  virtual ArrayRef<StringRef> getParamNames() const { return {}; }
  /// True for scope moves whose check and parameter choices read only the
  /// scope's context: its subtree, the subtree of its next sibling, the
  /// sizes and mappings of the scopes around it, and the kernel's buffer
  /// declarations (and, for moves that locate a child, which child). Listing
  /// then reuses their answers for any scope with the same context, in this
  /// state or a later one (see enumerateMoves).
  virtual bool isScopeLocal() const { return false; }

  /// Pure legality check; on refusal returns failure and sets `reason`.
  virtual LogicalResult check(const ResolvedLocation &loc,
                              ArrayRef<std::string> params,
                              std::string &reason) const = 0;
  /// Applies the move; `check` must have succeeded on the same IR.
  virtual void apply(RewriterBase &rewriter, const ResolvedLocation &loc,
                     ArrayRef<std::string> params) const = 0;
  /// Parameter choices worth enumerating at `loc` (e.g. the divisors of a
  /// scope size for a tile size). Moves without parameters return one empty
  /// choice.
  virtual SmallVector<SmallVector<std::string, 2>>
  getParamChoices(const ResolvedLocation &loc) const;
  /// Builds the transform op (`transform.perfdojo.<name>`, MoveOps.td) that
  /// runs this move at `location` (with its params) on the kernel handle
  /// `kernel`.
  virtual Operation *buildTransformOp(OpBuilder &builder, Location loc,
                                      Value kernel,
                                      const MoveLocation &location) const = 0;
};

/// The registry of moves: every move declared in MoveOps.td, in the order of
/// their declarations' names.
class MoveRegistry {
public:
  static MoveRegistry &get();
  void add(std::unique_ptr<Move> move);
  const Move *lookup(StringRef name) const;
  ArrayRef<std::unique_ptr<Move>> getMoves() const { return moves; }

private:
  SmallVector<std::unique_ptr<Move>> moves;
};

/// Registers every move declared in MoveOps.td (idempotent).
void registerAllMoves();

/// A move and its location, e.g. parsed from `join_scopes@t:0`.
struct MoveInstance {
  const Move *move = nullptr;
  MoveLocation location;
  /// The text `name@location[:params]` in canonical form.
  std::string str() const;
};

/// True for a non-empty run of letters, digits and '_' (array and buffer
/// names in locations and parameters).
bool isMoveWord(StringRef text);

/// Parses `name@location[:param...]`. On failure returns failure with
/// `error` naming what is wrong.
FailureOr<MoveInstance> parseMove(StringRef text, std::string &error);

/// The moves of a moves file (`pd-tune --moves-output`, `pd-opt
/// --pd-apply=moves-file=`): one per line; a comment starts with '#' at the
/// start of a line or after a blank ('#' right after a name is an ordinal:
/// m#1); blank lines are ignored.
SmallVector<std::string> parseMoveList(StringRef text);

/// Parses a location of `kind` alone, without parameters (`y#1:2`, `t:0`),
/// as the transform ops' `at` attribute holds it.
FailureOr<MoveLocation> parseMoveLocation(LocationKind kind, StringRef text,
                                          std::string &error);

/// Finds the IR a location designates in `kernel`.
FailureOr<ResolvedLocation> resolveLocation(KernelOp kernel,
                                            LocationKind kind,
                                            const MoveLocation &location,
                                            std::string &error);

/// Checks the move on `kernel` without changing it.
LogicalResult checkMove(KernelOp kernel, const MoveInstance &move,
                        std::string &reason);

/// Checks and, if legal, applies the move and appends it to the kernel's
/// history. On refusal the IR is unchanged and `reason` says why.
LogicalResult applyMove(RewriterBase &rewriter, KernelOp kernel,
                        const MoveInstance &move, std::string &reason);

/// How a listing may reuse earlier answers.
enum class ListingReuse {
  /// Scope-local moves (Move::isScopeLocal) take their legal parameters from
  /// an earlier listing of a scope with the same context when there is one.
  /// The answers of all of them at a scope are kept together by the dialect,
  /// keyed by an exact encoding of the context hashed to 128 bits, for the
  /// MLIRContext's lifetime (two generations of 8,192 contexts: what is no
  /// longer used is forgotten).
  ScopeContext,
  /// Every candidate is checked afresh (to verify the reuse).
  None,
};

/// Every legal move in `kernel`, in a deterministic order, each in the
/// canonical syntax that parseMove accepts.
SmallVector<MoveInstance>
enumerateMoves(KernelOp kernel,
               ListingReuse reuse = ListingReuse::ScopeContext);
/// The legal instances of one move.
SmallVector<MoveInstance>
enumerateMoves(KernelOp kernel, const Move &move,
               ListingReuse reuse = ListingReuse::ScopeContext);

/// Name of the kernel attribute holding the applied moves (an array of
/// strings).
constexpr StringLiteral kHistoryAttrName = "perfdojo.history";
/// Name of the kernel attribute holding the kernel as it was before its
/// first move, in canonical text form.
constexpr StringLiteral kOriginalAttrName = "perfdojo.original";

/// Removes the `index`-th move (1-based) of `kernel`'s history: rebuilds the
/// original kernel and replays every other move in order. On success the
/// kernel is replaced in place; otherwise it is unchanged and `reason` names
/// the first move that no longer applies.
LogicalResult undoMove(RewriterBase &rewriter, KernelOp kernel,
                       unsigned index, std::string &reason);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TRANSFORMS_MOVE_H
