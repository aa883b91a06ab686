//===- MoveOps.cpp - The moves as transform ops, and the registry ---------===//
//
// What every op of MoveOps.td shares: parameter parsing and printing, the
// transform behaviour (apply, effects, verification), the transform-dialect
// extension, and the move registry built from the declarations.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Transforms/MoveOps.h"
#include "mlir/Dialect/Transform/IR/TransformDialect.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/SymbolTable.h"
#include <type_traits>

using namespace mlir;
using namespace mlir::perfdojo;

//===----------------------------------------------------------------------===//
// Parameters
//===----------------------------------------------------------------------===//

static LogicalResult parseIntegerParam(StringRef text, StringRef name,
                                       int64_t min, StringRef what,
                                       int64_t &value, std::string &reason) {
  if (text.getAsInteger(10, value) || value < min) {
    reason = "the " + name.str() + " '" + text.str() + "' is not a " +
             what.str() + " integer";
    return failure();
  }
  return success();
}

LogicalResult mlir::perfdojo::parsePositiveMoveParam(StringRef text,
                                                     StringRef name,
                                                     int64_t &value,
                                                     std::string &reason) {
  return parseIntegerParam(text, name, 1, "positive", value, reason);
}

LogicalResult mlir::perfdojo::parseNonNegativeMoveParam(StringRef text,
                                                        StringRef name,
                                                        int64_t &value,
                                                        std::string &reason) {
  return parseIntegerParam(text, name, 0, "non-negative", value, reason);
}

LogicalResult mlir::perfdojo::parseNameMoveParam(StringRef text,
                                                 StringRef name,
                                                 StringRef &value,
                                                 std::string &reason) {
  if (!isMoveWord(text)) {
    reason = "the " + name.str() + " '" + text.str() +
             "' is not a name (letters, digits and '_')";
    return failure();
  }
  value = text;
  return success();
}

LogicalResult mlir::perfdojo::parseBufferLocationMoveParam(
    StringRef text, StringRef name, BufferLocation &value,
    std::string &reason) {
  std::optional<BufferLocation> location = symbolizeBufferLocation(text);
  if (!location) {
    reason = "unknown location '" + text.str() +
             "'; expected heap, stack, reg or shared";
    return failure();
  }
  value = *location;
  return success();
}

std::string mlir::perfdojo::printMoveParam(int64_t value) {
  return std::to_string(value);
}
std::string mlir::perfdojo::printMoveParam(StringRef value) {
  return value.str();
}
std::string mlir::perfdojo::printMoveParam(BufferLocation value) {
  return stringifyBufferLocation(value).str();
}

Attribute mlir::perfdojo::parseMoveIntegerAttr(Builder &builder,
                                               StringRef text) {
  int64_t value = 0;
  (void)text.getAsInteger(10, value);
  return builder.getI64IntegerAttr(value);
}

MoveInstance mlir::perfdojo::makeMoveInstance(StringRef name, MoveLocation at) {
  registerAllMoves();
  MoveInstance instance;
  instance.move = MoveRegistry::get().lookup(name);
  assert(instance.move && "every declared move is registered");
  instance.location = std::move(at);
  return instance;
}

//===----------------------------------------------------------------------===//
// Transform behaviour
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure mlir::perfdojo::applyMoveTransform(
    Operation *op, StringRef moveName, Value target,
    transform::TransformRewriter &rewriter, transform::TransformState &state) {
  registerAllMoves();
  MoveInstance move;
  move.move = MoveRegistry::get().lookup(moveName);
  std::string error;
  FailureOr<MoveLocation> location = parseMoveLocation(
      move.move->getLocationKind(),
      op->getAttrOfType<StringAttr>("at").getValue(), error);
  if (failed(location))
    return emitDefiniteFailure(op) << error;
  move.location = std::move(*location);
  for (StringRef param : move.move->getParamNames()) {
    Attribute value = op->getAttr(param);
    if (auto integer = dyn_cast_or_null<IntegerAttr>(value))
      move.location.params.push_back(std::to_string(integer.getInt()));
    else if (auto text = dyn_cast_or_null<StringAttr>(value))
      move.location.params.push_back(text.str());
    else
      return emitDefiniteFailure(op)
             << "parameter '" << param << "' is missing or not an integer "
             << "or a string";
  }
  for (Operation *payload : state.getPayloadOps(target)) {
    auto kernel = dyn_cast<KernelOp>(payload);
    if (!kernel) {
      DiagnosedDefiniteFailure diag =
          emitDefiniteFailure(op) << "expects perfdojo.kernel payloads, got '"
                                  << payload->getName() << "'";
      diag.attachNote(payload->getLoc()) << "payload op";
      return diag;
    }
    std::string reason;
    if (failed(applyMove(rewriter, kernel, move, reason))) {
      DiagnosedSilenceableFailure diag =
          emitSilenceableFailure(op)
          << "move '" << move.str() << "' is illegal in kernel @"
          << kernel.getSymName() << ": " << reason;
      diag.attachNote(kernel.getLoc()) << "kernel";
      return diag;
    }
  }
  return DiagnosedSilenceableFailure::success();
}

void mlir::perfdojo::getMoveTransformEffects(
    MutableOperandRange target,
    SmallVectorImpl<MemoryEffects::EffectInstance> &effects) {
  transform::onlyReadsHandle(target, effects);
  transform::modifiesPayload(effects);
}

LogicalResult mlir::perfdojo::verifyMoveTransform(Operation *op,
                                                  LocationKind kind,
                                                  StringRef at) {
  std::string error;
  if (failed(parseMoveLocation(kind, at, error)))
    return op->emitOpError() << error;
  return success();
}

Operation *mlir::perfdojo::buildMoveTransformOp(OpBuilder &builder,
                                                Location loc, Value kernel,
                                                const MoveInstance &move) {
  return move.move->buildTransformOp(builder, loc, kernel, move.location);
}

//===----------------------------------------------------------------------===//
// match_kernel
//===----------------------------------------------------------------------===//

DiagnosedSilenceableFailure
moves::MatchKernelOp::apply(transform::TransformRewriter &,
                            transform::TransformResults &results,
                            transform::TransformState &state) {
  SmallVector<Operation *> kernels;
  for (Operation *root : state.getPayloadOps(getRoot()))
    root->walk([&](KernelOp kernel) {
      if (!getKernelName() || kernel.getSymName() == *getKernelName())
        kernels.push_back(kernel);
    });
  if (kernels.empty()) {
    DiagnosedSilenceableFailure diag = emitSilenceableError();
    if (getKernelName())
      diag << "no perfdojo.kernel named @" << *getKernelName()
           << " in the payload";
    else
      diag << "no perfdojo.kernel in the payload";
    return diag;
  }
  results.set(cast<OpResult>(getResult()), kernels);
  return DiagnosedSilenceableFailure::success();
}

void moves::MatchKernelOp::getEffects(
    SmallVectorImpl<MemoryEffects::EffectInstance> &effects) {
  transform::onlyReadsHandle(getRootMutable(), effects);
  transform::producesHandle(getOperation()->getOpResults(), effects);
  transform::onlyReadsPayload(effects);
}

//===----------------------------------------------------------------------===//
// The registry, from the declarations
//===----------------------------------------------------------------------===//

#ifndef NDEBUG
/// Registering transform ops calls this check in builds with assertions
/// (TransformDialect::addOperationIfNotRegistered), but Debian's libMLIR is
/// built without them and does not define it: PerfDojo's sanitizer build
/// (-UNDEBUG) would not link. The same check, weak, so that an MLIR built
/// with assertions keeps its own.
LLVM_ATTRIBUTE_WEAK void
mlir::transform::detail::checkImplementsTransformOpInterface(
    StringRef name, MLIRContext *context) {
  std::optional<RegisteredOperationName> op =
      RegisteredOperationName::lookup(name, context);
  assert(op && "a transform op is registered before it is checked");
  assert(op->hasInterface<transform::TransformOpInterface>() &&
         op->hasInterface<MemoryEffectOpInterface>() &&
         "a transform op implements TransformOpInterface and "
         "MemoryEffectOpInterface");
  (void)op;
}
#endif // NDEBUG

namespace {
/// The registry's view of the move declared as `OpT`.
template <typename OpT>
class DeclaredMove final : public Move {
public:
  StringRef getName() const override { return OpT::getMoveName(); }
  StringRef getSummary() const override { return OpT::getMoveSummary(); }
  StringRef getInverseName() const override {
    return OpT::getInverseMoveName();
  }
  LocationKind getLocationKind() const override { return OpT::kLocationKind; }
  bool locatesChild() const override { return OpT::kLocatesChild; }
  bool isScopeLocal() const override { return OpT::kScopeLocal; }
  ArrayRef<StringRef> getParamNames() const override {
    return OpT::getMoveParamNames();
  }
  LogicalResult check(const ResolvedLocation &loc,
                      ArrayRef<std::string> params,
                      std::string &reason) const override {
    return OpT::checkMoveText(loc, params, reason);
  }
  void apply(RewriterBase &rewriter, const ResolvedLocation &loc,
             ArrayRef<std::string> params) const override {
    OpT::applyMoveText(rewriter, loc, params);
  }
  SmallVector<SmallVector<std::string, 2>>
  getParamChoices(const ResolvedLocation &loc) const override {
    return OpT::getMoveChoices(loc);
  }
  Operation *buildTransformOp(OpBuilder &builder, Location loc, Value kernel,
                              const MoveLocation &location) const override {
    OperationState state(loc, OpT::getOperationName());
    state.addOperands(kernel);
    state.addAttribute("at",
                       builder.getStringAttr(location.str(OpT::kLocationKind)));
    OpT::addParamAttributes(builder, state, location.params);
    return builder.create(state);
  }
};

template <typename... OpTs>
void addDeclaredMoves(MoveRegistry &registry) {
  auto add = [&](auto *tag) {
    using OpT = std::remove_pointer_t<decltype(tag)>;
    if constexpr (!std::is_same_v<OpT, moves::MatchKernelOp>)
      registry.add(std::make_unique<DeclaredMove<OpT>>());
  };
  (add(static_cast<OpTs *>(nullptr)), ...);
}

/// The transform-dialect extension holding the move ops.
class MoveTransformExtension
    : public transform::TransformDialectExtension<MoveTransformExtension> {
public:
  MLIR_DEFINE_EXPLICIT_INTERNAL_INLINE_TYPE_ID(MoveTransformExtension)
  using Base::Base;

  void init() {
    declareGeneratedDialect<PerfDojoDialect>();
    registerTransformOps<
#define GET_OP_LIST
#include "PerfDojo/Transforms/MoveOps.cpp.inc"
        >();
  }
};
} // namespace

void mlir::perfdojo::registerAllMoves() {
  static const bool once = [] {
    addDeclaredMoves<
#define GET_OP_LIST
#include "PerfDojo/Transforms/MoveOps.cpp.inc"
        >(MoveRegistry::get());
    return true;
  }();
  (void)once;
}

void mlir::perfdojo::registerMoveTransformOps(DialectRegistry &registry) {
  registry.addExtensions<MoveTransformExtension>();
}

#define GET_OP_CLASSES
#include "PerfDojo/Transforms/MoveOps.cpp.inc"
