//===- MoveOps.h - The moves as transform ops, and the registry --*- C++ -*-===//
//
// The ops declared in MoveOps.td (`transform.perfdojo.<move>`), one per move
// of the catalogue, and what their generated code calls: the parsers of
// parameter text, the typed builders' printers, and the transform op
// behaviour shared by every move (apply, effects, verification). The move
// registry of Move.h is built from these declarations (registerAllMoves).
//
// Typed builders for the heuristics:
//
//   MoveInstance m = moves::TileScopeOp::make(scopeAt(op, 1), 16);
//   applyMove(rewriter, kernel, m, reason);
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TRANSFORMS_MOVEOPS_H
#define PERFDOJO_TRANSFORMS_MOVEOPS_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "PerfDojo/Transforms/Move.h"
#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/Dialect/Transform/Interfaces/TransformInterfaces.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

namespace mlir {
class DialectRegistry;
namespace perfdojo {

//===- Parameters ---------------------------------------------------------===//

/// Read a parameter from its text in `name@location:param`; on failure set
/// `reason`, naming the parameter `name`.
LogicalResult parsePositiveMoveParam(StringRef text, StringRef name,
                                     int64_t &value, std::string &reason);
LogicalResult parseNonNegativeMoveParam(StringRef text, StringRef name,
                                        int64_t &value, std::string &reason);
LogicalResult parseNameMoveParam(StringRef text, StringRef name,
                                 StringRef &value, std::string &reason);
LogicalResult parseBufferLocationMoveParam(StringRef text, StringRef name,
                                           BufferLocation &value,
                                           std::string &reason);

/// A parameter's text, as `name@location:param` writes it.
std::string printMoveParam(int64_t value);
std::string printMoveParam(StringRef value);
std::string printMoveParam(BufferLocation value);

/// An i64 attribute from an integer parameter's text (checked before).
Attribute parseMoveIntegerAttr(Builder &builder, StringRef text);

/// The registered move `name` at `at` (whose params are set).
MoveInstance makeMoveInstance(StringRef name, MoveLocation at);

//===- Transform ops ------------------------------------------------------===//

/// Applies the move `moveName`, located by the op's `at` and parameterized
/// by its attributes, to every kernel `target` designates. An illegal move
/// is a silenceable failure that gives the reason; a payload that is not a
/// kernel is a definite one.
DiagnosedSilenceableFailure
applyMoveTransform(Operation *op, StringRef moveName, Value target,
                   transform::TransformRewriter &rewriter,
                   transform::TransformState &state);
/// A move reads its kernel handle and modifies the payload.
void getMoveTransformEffects(MutableOperandRange target,
                             SmallVectorImpl<MemoryEffects::EffectInstance> &effects);
/// The `at` attribute must be a well-formed location of `kind`.
LogicalResult verifyMoveTransform(Operation *op, LocationKind kind,
                                  StringRef at);

/// Registers the transform-dialect extension holding the move ops.
void registerMoveTransformOps(DialectRegistry &registry);

/// The transform op running `move` on `kernel`, as `pd-opt
/// --pd-export-transform` writes it.
Operation *buildMoveTransformOp(OpBuilder &builder, Location loc,
                                Value kernel, const MoveInstance &move);

} // namespace perfdojo
} // namespace mlir

#define GET_OP_CLASSES
#include "PerfDojo/Transforms/MoveOps.h.inc"

#endif // PERFDOJO_TRANSFORMS_MOVEOPS_H
