//===- LinalgToKernel.cpp - One linalg.generic as a perfdojo kernel -------===//
//
// Plans the kernel of a linalg.generic on memrefs: operands become buffers,
// indexing maps become accesses, and every operation of the body one
// compute operation in a scope nest of its own. A value that more than one
// operation reads (or that is not the output's) lives in a temporary over
// the loops it depends on; the value an output receives is computed into
// the output directly.
//
//   linalg.generic {maps = [(i,j)->(i,j), (i,j)->(i), (i,j)->(i,j)]}
//       ins(%x, %m) outs(%e)          kernel generic_0
//     ^bb0(%a, %b, %acc):             in  in0 f32 [4, 8] heap
//       %d = arith.subf %a, %b   =>   in  in1 f32 [4] heap
//       %y = math.exp %d              out out0 f32 [4, 8] heap
//       linalg.yield %y               tmp t0 f32 [4, 8] heap
//                                     4 8 t0[{0},{1}]=in0[{0},{1}]-in1[{0}]
//                                     4 8 out0[{0},{1}]=exp(t0[{0},{1}])
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Linalg/LinalgToKernel.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Utils/StructuredOpsUtils.h"
#include "mlir/IR/AffineMap.h"
#include "llvm/ADT/TypeSwitch.h"
#include "llvm/Support/FormatVariadic.h"

using namespace mlir;
using namespace mlir::perfdojo;

/// The text of `value` as MLIR prints it (types, maps, attributes).
template <typename T> static std::string show(T value) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << value;
  return text;
}

/// llvm::formatv as a string.
template <typename... Ts>
static std::string format(const char *text, Ts &&...values) {
  return llvm::formatv(text, std::forward<Ts>(values)...).str();
}

/// True if `type` is a memref with the identity layout or a strided layout
/// equal to it (offset 0, row-major strides), which memref.cast turns into
/// the kernel's argument type.
static bool isContiguousRowMajor(MemRefType type) {
  if (type.getLayout().isIdentity())
    return true;
  SmallVector<int64_t> strides;
  int64_t offset;
  if (failed(type.getStridesAndOffset(strides, offset)) || offset != 0)
    return false;
  int64_t expected = 1;
  for (int d = type.getRank() - 1; d >= 0; --d) {
    if (strides[d] != expected)
      return false;
    expected *= type.getDimSize(d);
  }
  return true;
}

//===----------------------------------------------------------------------===//
// The primitives of body operations
//===----------------------------------------------------------------------===//

namespace {
/// What one body operation is in the kernel language: a primitive, or a
/// reason it is none.
struct Primitive {
  std::optional<OpKind> kind;
  std::string whyNot;
};
} // namespace

static Primitive refuse(Operation *op, StringRef why) {
  return {std::nullopt,
          ("'" + op->getName().getStringRef() + "' " + why).str()};
}

/// The primitive of a body operation that computes a value of the kernel
/// language (not the index casts and constants, which become operands).
static Primitive classify(Operation *op) {
  using K = OpKind;
  auto is = [](K kind) { return Primitive{kind, ""}; };
  return llvm::TypeSwitch<Operation *, Primitive>(op)
      .Case<arith::AddFOp, arith::AddIOp>([&](auto) { return is(K::add); })
      .Case<arith::SubFOp, arith::SubIOp>([&](auto) { return is(K::sub); })
      .Case<arith::MulFOp, arith::MulIOp>([&](auto) { return is(K::mul); })
      .Case<arith::DivFOp, arith::DivSIOp>([&](auto) { return is(K::div); })
      .Case<arith::MaximumFOp, arith::MaxSIOp>([&](auto) { return is(K::max); })
      .Case<arith::MinimumFOp, arith::MinSIOp>([&](auto) { return is(K::min); })
      .Case<arith::RemFOp, arith::RemSIOp>([&](auto) { return is(K::fmod); })
      .Case<arith::NegFOp>([&](auto) { return is(K::neg); })
      .Case<arith::SelectOp>([&](auto) { return is(K::select); })
      .Case<arith::ExtFOp, arith::TruncFOp, arith::SIToFPOp, arith::FPToSIOp,
            arith::ExtSIOp, arith::TruncIOp>([&](auto) { return is(K::cast); })
      .Case<arith::UIToFPOp, arith::ExtUIOp>([&](Operation *cast) {
        // Unsigned conversions agree with the signed `cast` only on i1
        // (comparison results, 0 or 1).
        if (cast->getOperand(0).getType().isInteger(1))
          return is(K::cast);
        return refuse(cast, "converts an unsigned integer; the kernel "
                            "language's cast treats integers as signed");
      })
      .Case<arith::CmpFOp>([&](arith::CmpFOp cmp) {
        switch (cmp.getPredicate()) {
        case arith::CmpFPredicate::OLT:
          return is(K::lt);
        case arith::CmpFPredicate::OLE:
          return is(K::le);
        case arith::CmpFPredicate::OGT:
          return is(K::gt);
        case arith::CmpFPredicate::OGE:
          return is(K::ge);
        case arith::CmpFPredicate::OEQ:
          return is(K::eq);
        case arith::CmpFPredicate::UNE:
          return is(K::ne);
        default:
          return refuse(cmp,
                        ("compares with predicate '" +
                         arith::stringifyCmpFPredicate(cmp.getPredicate()) +
                         "'; the kernel language compares with olt, ole, "
                         "ogt, oge, oeq and une")
                            .str());
        }
      })
      .Case<arith::CmpIOp>([&](arith::CmpIOp cmp) {
        switch (cmp.getPredicate()) {
        case arith::CmpIPredicate::slt:
          return is(K::lt);
        case arith::CmpIPredicate::sle:
          return is(K::le);
        case arith::CmpIPredicate::sgt:
          return is(K::gt);
        case arith::CmpIPredicate::sge:
          return is(K::ge);
        case arith::CmpIPredicate::eq:
          return is(K::eq);
        case arith::CmpIPredicate::ne:
          return is(K::ne);
        default:
          return refuse(cmp,
                        ("compares with predicate '" +
                         arith::stringifyCmpIPredicate(cmp.getPredicate()) +
                         "'; the kernel language compares signed "
                         "integers (slt, sle, sgt, sge, eq, ne)")
                            .str());
        }
      })
      .Case<arith::MaxNumFOp, arith::MinNumFOp>([&](Operation *m) {
        return refuse(m, "ignores a NaN operand; the kernel language's "
                         "max and min propagate NaN (arith.maximumf, "
                         "arith.minimumf)");
      })
      .Case<arith::DivUIOp, arith::RemUIOp, arith::MaxUIOp, arith::MinUIOp,
            arith::FPToUIOp>([&](Operation *u) {
        return refuse(u, "is unsigned; the kernel language's integers are "
                         "signed");
      })
      .Case<math::ExpOp>([&](auto) { return is(K::exp); })
      .Case<math::LogOp>([&](auto) { return is(K::log); })
      .Case<math::SqrtOp>([&](auto) { return is(K::sqrt); })
      .Case<math::RsqrtOp>([&](auto) { return is(K::rsqrt); })
      .Case<math::TanhOp>([&](auto) { return is(K::tanh); })
      .Case<math::ErfOp>([&](auto) { return is(K::erf); })
      .Case<math::AbsFOp, math::AbsIOp>([&](auto) { return is(K::abs); })
      .Case<math::FloorOp>([&](auto) { return is(K::floor); })
      .Case<math::CeilOp>([&](auto) { return is(K::ceil); })
      .Case<math::RoundEvenOp>([&](auto) { return is(K::round); })
      .Case<math::RoundOp>([&](Operation *r) {
        return refuse(r, "rounds halves away from zero; the kernel "
                         "language's round rounds them to even "
                         "(math.roundeven)");
      })
      .Case<math::SinOp>([&](auto) { return is(K::sin); })
      .Case<math::CosOp>([&](auto) { return is(K::cos); })
      .Case<math::TanOp>([&](auto) { return is(K::tan); })
      .Case<math::AsinOp>([&](auto) { return is(K::asin); })
      .Case<math::AcosOp>([&](auto) { return is(K::acos); })
      .Case<math::AtanOp>([&](auto) { return is(K::atan); })
      .Case<math::SinhOp>([&](auto) { return is(K::sinh); })
      .Case<math::CoshOp>([&](auto) { return is(K::cosh); })
      .Case<math::AsinhOp>([&](auto) { return is(K::asinh); })
      .Case<math::AcoshOp>([&](auto) { return is(K::acosh); })
      .Case<math::AtanhOp>([&](auto) { return is(K::atanh); })
      .Case<math::PowFOp>([&](auto) { return is(K::pow); })
      .Case<math::FmaOp>([&](auto) { return is(K::fma); })
      .Default([&](Operation *other) {
        return refuse(other, "has no primitive in the kernel language "
                             "(docs/TextForm.md lists them)");
      });
}

/// The primitive a reduction update applies, for the combining operations
/// `acc op f` of a reduction.
static std::optional<Reduction> getReduction(Operation *op) {
  if (isa<arith::AddFOp, arith::AddIOp>(op))
    return Reduction::add;
  if (isa<arith::MulFOp, arith::MulIOp>(op))
    return Reduction::mul;
  if (isa<arith::MaximumFOp, arith::MaxSIOp>(op))
    return Reduction::max;
  if (isa<arith::MinimumFOp, arith::MinSIOp>(op))
    return Reduction::min;
  return std::nullopt;
}

//===----------------------------------------------------------------------===//
// Planning
//===----------------------------------------------------------------------===//

namespace {
/// What a value of the body is in the kernel.
struct Node {
  enum class Kind { Input, Init, Iter, Constant, Expr };
  Kind kind = Kind::Constant;
  /// Input: the operand; Init: the output.
  unsigned index = 0;
  /// Iter: the loop.
  unsigned loop = 0;
  /// Constant: the value.
  double value = 0;
  /// Expr: the primitive, the operation and its element type (for
  /// comparisons, the type they compare in: their result is 1 or 0 in it).
  OpKind primitive = OpKind::copy;
  Operation *op = nullptr;
  Type type;
  /// Expr: the temporary that holds it (a buffer index), when it has one.
  int temporary = -1;
  /// The loops the value depends on, ascending.
  SmallVector<unsigned> loops;
};

/// Where an operation's value goes when it does not need a temporary.
struct Destination {
  unsigned output;
  Reduction reduction;
};

class Planner {
public:
  Planner(linalg::GenericOp op, std::string &reason) : op(op), reason(reason) {}
  FailureOr<LinalgKernelPlan> run();

private:
  LogicalResult fail(const Twine &why) {
    reason = why.str();
    return failure();
  }
  LogicalResult checkOperands();
  LogicalResult checkMaps();
  LogicalResult planBody();
  LogicalResult addNode(Operation *bodyOp);
  LogicalResult addConstant(arith::ConstantOp cst);
  LogicalResult chooseDestinations();
  void emit();

  PlannedOperand operandOf(Value value);
  static SmallVector<unsigned> loopsOf(ArrayRef<LinearForm> forms);
  static SmallVector<LinearForm> identityForms(ArrayRef<unsigned> loops);

  linalg::GenericOp op;
  std::string &reason;
  LinalgKernelPlan plan;
  unsigned numInputs = 0, numOutputs = 0;
  /// Per operand: its index forms (shaped operands) or its constant value
  /// (scalars).
  SmallVector<SmallVector<LinearForm>> forms;
  SmallVector<std::optional<double>> scalars;
  /// Per output: the loops its map leaves out (reduced), and whether the
  /// body reads its initial value.
  SmallVector<SmallVector<unsigned>> reduced;
  SmallVector<bool> needsInit;
  llvm::DenseMap<Value, Node> nodes;
  llvm::DenseMap<Operation *, Destination> destinations;
  /// Combining operations folded into a reduction update.
  llvm::SmallPtrSet<Operation *, 4> absorbed;
  /// Outputs that receive a copy of a value (not an operation's result).
  SmallVector<std::tuple<unsigned, Value, Reduction>> copies;
};
} // namespace

SmallVector<unsigned> Planner::loopsOf(ArrayRef<LinearForm> forms) {
  llvm::SmallSetVector<unsigned, 8> loops;
  for (const LinearForm &form : forms)
    for (unsigned d = 0; d < form.getNumDims(); ++d)
      if (form.coeff(d) != 0)
        loops.insert(d);
  SmallVector<unsigned> sorted(loops.begin(), loops.end());
  llvm::sort(sorted);
  return sorted;
}

SmallVector<LinearForm> Planner::identityForms(ArrayRef<unsigned> loops) {
  SmallVector<LinearForm> result;
  for (unsigned loop : loops)
    result.push_back(LinearForm::ofDim(loop));
  if (result.empty())
    result.push_back(LinearForm::ofConstant(0));
  return result;
}

LogicalResult Planner::checkOperands() {
  numInputs = op.getNumDpsInputs();
  numOutputs = op.getNumDpsInits();
  scalars.resize(op->getNumOperands());
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    Type type = operand.get().getType();
    std::string what = i < numInputs
                           ? llvm::formatv("input #{0}", i).str()
                           : llvm::formatv("output #{0}", i - numInputs).str();
    if (isa<TensorType>(type))
      return fail(what + " is a tensor (" + show(type) +
                  "); kernels take memrefs: bufferize first "
                  "(one-shot-bufferize)");
    auto memref = dyn_cast<MemRefType>(type);
    if (!memref) {
      Attribute value;
      if (auto cst = operand.get().getDefiningOp<arith::ConstantOp>())
        value = cst.getValue();
      if (auto f = dyn_cast_or_null<FloatAttr>(value)) {
        scalars[i] = f.getValueAsDouble();
        continue;
      }
      if (auto n = dyn_cast_or_null<IntegerAttr>(value)) {
        if (!isSupportedElementType(n.getType()))
          return fail(what + " is a constant of type " + show(n.getType()) +
                      "; kernels compute in f16, bf16, f32, f64, i8, i16, "
                      "i32 or i64");
        if (n.getValue().getSignificantBits() > 54)
          return fail(what + " is the constant " + show(n) +
                      ", which f64 cannot hold exactly (kernel constants are "
                      "f64)");
        scalars[i] = static_cast<double>(n.getValue().getSExtValue());
        continue;
      }
      return fail(what + " is a scalar (" + show(type) +
                  ") that is not an arith.constant; kernels take memrefs and "
                  "constants");
    }
    if (!memref.hasStaticShape())
      return fail(what + " has a dynamic shape (" + show(type) +
                  "); kernels take static shapes");
    if (!isSupportedElementType(memref.getElementType()))
      return fail(what + " has element type " + show(memref.getElementType()) +
                  "; kernel buffers hold f16, bf16, f32, f64, i8, i16, i32 "
                  "or i64");
    if (Attribute space = memref.getMemorySpace()) {
      auto n = dyn_cast<IntegerAttr>(space);
      if (!n || n.getInt() != 0)
        return fail(what + " is in memory space " + show(space) +
                    "; kernels take memrefs in the default memory space");
    }
    if (!isContiguousRowMajor(memref))
      return fail(what + " has the layout " + show(memref.getLayout()) +
                  "; kernels take contiguous row-major memrefs (offset 0)");
    for (int64_t size : memref.getShape())
      if (size < 1 || size > kMaxExtent)
        return fail(what + " (" + show(type) + ") has a dimension of size " +
                    std::to_string(size) +
                    "; kernel dimensions are between 1 "
                    "and 2^40");
  }
  for (unsigned j = 0; j < numOutputs; ++j)
    for (unsigned l = 0; l < j; ++l)
      if (op.getDpsInits()[j] == op.getDpsInits()[l])
        return fail(format("outputs #{0} and #{1} are the same memref", l, j));
  return success();
}

LogicalResult Planner::checkMaps() {
  unsigned numLoops = op.getNumLoops();
  if (numLoops > kMaxNestDepth)
    return fail(format("has {0} loops; kernels nest at most {1} scopes",
                       numLoops, kMaxNestDepth));
  plan.loopSizes = op.getStaticLoopRanges();
  for (auto [d, size] : llvm::enumerate(plan.loopSizes))
    if (ShapedType::isDynamic(size) || size < 1 || size > kMaxExtent)
      return fail(format("loop d{0} has no static size between 1 and "
                         "2^40",
                         d));
  SmallVector<utils::IteratorType> iterators = op.getIteratorTypesArray();
  forms.resize(op->getNumOperands());
  reduced.resize(numOutputs);
  for (OpOperand &operand : op->getOpOperands()) {
    unsigned i = operand.getOperandNumber();
    auto memref = dyn_cast<MemRefType>(operand.get().getType());
    if (!memref)
      continue;
    AffineMap map = op.getMatchingIndexingMap(&operand);
    if (map.getNumSymbols() != 0)
      return fail(format("indexing map #{0} ({1}) has symbols; kernel "
                         "indices are linear forms of the loops",
                         i, show(map)));
    for (auto [r, expr] : llvm::enumerate(map.getResults())) {
      std::optional<LinearForm> form = LinearForm::fromAffineExpr(expr);
      if (!form)
        return fail(format(
            "indexing map #{0} ({1}) has the index {2}, which is not a linear "
            "form of the loops (the kernel language has no mod, floordiv or "
            "ceildiv)",
            i, show(map), show(expr)));
      auto [lo, hi] = form->range(plan.loopSizes);
      if (lo < 0 || hi >= memref.getDimSize(r))
        return fail(format(
            "indexing map #{0} ({1}) reaches past dimension {2} of size {3}", i,
            show(map), r, memref.getDimSize(r)));
      forms[i].push_back(*form);
    }
    // A 0-d memref is a buffer of one element.
    if (memref.getRank() == 0)
      forms[i].push_back(LinearForm::ofConstant(0));
    if (i < numInputs)
      continue;
    unsigned j = i - numInputs;
    if (!map.isProjectedPermutation(/*allowZeroInResultPosition=*/true))
      return fail(format("indexing map #{0} ({1}) of output #{2} is "
                         "not a projected permutation (of loops and zeros)",
                         i, show(map), j));
    for (unsigned d = 0; d < numLoops; ++d) {
      if (map.isFunctionOfDim(d))
        continue;
      if (iterators[d] != utils::IteratorType::reduction)
        return fail(format("loop d{0} is parallel but does not index "
                           "output #{1}",
                           d, j));
      reduced[j].push_back(d);
    }
  }
  return success();
}

LogicalResult Planner::addConstant(arith::ConstantOp cst) {
  Node node;
  node.type = cst.getType();
  if (auto f = dyn_cast<FloatAttr>(cst.getValue())) {
    node.value = f.getValueAsDouble();
  } else if (auto n = dyn_cast<IntegerAttr>(cst.getValue())) {
    // i1 constants are 0 and 1; others are signed (index too).
    const APInt &v = n.getValue();
    if (n.getType().isInteger(1))
      node.value = v.getZExtValue();
    else if (v.getSignificantBits() > 54)
      return fail("the body's constant " + show(cst.getValue()) +
                  " is not exact in f64 (kernel constants are f64)");
    else
      node.value = static_cast<double>(v.getSExtValue());
  } else {
    return fail("the body's constant " + show(cst.getValue()) +
                " is not a scalar");
  }
  nodes[cst.getResult()] = node;
  return success();
}

LogicalResult Planner::addNode(Operation *bodyOp) {
  if (bodyOp->getNumResults() != 1 || bodyOp->getNumRegions() != 0)
    return fail("the body's '" + bodyOp->getName().getStringRef() +
                "' has no primitive in the kernel language");
  Value result = bodyOp->getResult(0);
  Type type = result.getType();
  Node node;
  // Constants and loop indices are operands, not operations.
  if (auto cst = dyn_cast<arith::ConstantOp>(bodyOp))
    return addConstant(cst);
  if (auto index = dyn_cast<linalg::IndexOp>(bodyOp)) {
    node.kind = Node::Kind::Iter;
    node.loop = index.getDim();
    node.type = type;
    node.loops = {node.loop};
    nodes[result] = node;
    return success();
  }
  if (isa<arith::IndexCastOp, arith::IndexCastUIOp>(bodyOp)) {
    Node source = nodes.lookup(bodyOp->getOperand(0));
    if (source.kind != Node::Kind::Iter && source.kind != Node::Kind::Constant)
      return fail("the body's '" + bodyOp->getName().getStringRef() +
                  "' converts a value that is not a loop index or a "
                  "constant");
    if (!type.isSignlessInteger() || !isSupportedElementType(type))
      return fail("the body's '" + bodyOp->getName().getStringRef() +
                  "' converts to " + show(type) +
                  "; loop indices are used as i8, i16, i32 or i64");
    source.type = type;
    nodes[result] = source;
    return success();
  }
  if (auto neg = dyn_cast<arith::NegFOp>(bodyOp)) {
    Node source = nodes.lookup(neg.getOperand());
    if (source.kind == Node::Kind::Constant) {
      source.value = -source.value;
      nodes[result] = source;
      return success();
    }
  }

  Primitive primitive = classify(bodyOp);
  if (!primitive.kind)
    return fail("the body's " + primitive.whyNot);
  OpKind kind = *primitive.kind;
  bool comparison = isa<arith::CmpFOp, arith::CmpIOp>(bodyOp);
  if (comparison) {
    // The result (1 or 0) is kept in the type compared; loop indices
    // compare as i64.
    type = bodyOp->getOperand(0).getType();
    if (type.isIndex())
      type = IntegerType::get(type.getContext(), 64);
  }
  if (!isSupportedElementType(type))
    return fail("the body's '" + bodyOp->getName().getStringRef() +
                "' computes in " + show(type) +
                "; the kernel language computes in f16, bf16, f32, f64, i8, "
                "i16, i32 or i64");
  for (auto [i, operand] : llvm::enumerate(bodyOp->getOperands())) {
    Type operandType = operand.getType();
    if (operandType.isInteger(1)) {
      // Comparison results: the condition of a select, or converted to a
      // number by an unsigned cast.
      bool asCondition = kind == OpKind::select && i == 0;
      bool asNumber = isa<arith::UIToFPOp, arith::ExtUIOp>(bodyOp);
      if (!asCondition && !asNumber)
        return fail("the body's '" + bodyOp->getName().getStringRef() +
                    "' uses an i1 value other than as the condition of a "
                    "select or the input of arith.uitofp or arith.extui");
    } else if (operandType.isIndex() && !comparison) {
      return fail("the body's '" + bodyOp->getName().getStringRef() +
                  "' computes with an index; cast loop indices with "
                  "arith.index_cast first");
    }
  }
  node.kind = Node::Kind::Expr;
  node.primitive = kind;
  node.op = bodyOp;
  node.type = type;
  llvm::SmallSetVector<unsigned, 8> loops;
  for (Value operand : bodyOp->getOperands())
    loops.insert(nodes[operand].loops.begin(), nodes[operand].loops.end());
  node.loops.assign(loops.begin(), loops.end());
  llvm::sort(node.loops);
  nodes[result] = node;
  return success();
}

LogicalResult Planner::planBody() {
  Block *body = op.getBody();
  for (BlockArgument arg : body->getArguments()) {
    unsigned i = arg.getArgNumber();
    Node node;
    node.type = arg.getType();
    if (scalars[i]) {
      node.value = *scalars[i];
    } else if (i < numInputs) {
      node.kind = Node::Kind::Input;
      node.index = i;
      node.loops = loopsOf(forms[i]);
    } else {
      node.kind = Node::Kind::Init;
      node.index = i - numInputs;
      node.loops = loopsOf(forms[i]);
    }
    nodes[arg] = node;
  }
  // Values the body takes from outside: constants only.
  WalkResult outside = op.getRegion().walk([&](Operation *bodyOp) {
    for (Value operand : bodyOp->getOperands()) {
      if (operand.getParentRegion() == &op.getRegion() ||
          op.getRegion().isAncestor(operand.getParentRegion()))
        continue;
      auto cst = operand.getDefiningOp<arith::ConstantOp>();
      if (!cst) {
        (void)fail("the body uses a value defined outside it that is not an "
                   "arith.constant; kernels see only their operands");
        return WalkResult::interrupt();
      }
      if (!nodes.count(operand) && failed(addConstant(cst)))
        return WalkResult::interrupt();
    }
    return WalkResult::advance();
  });
  if (outside.wasInterrupted())
    return failure();
  for (Operation &bodyOp : body->without_terminator())
    if (failed(addNode(&bodyOp)))
      return failure();
  return chooseDestinations();
}

LogicalResult Planner::chooseDestinations() {
  auto yield = cast<linalg::YieldOp>(op.getBody()->getTerminator());
  needsInit.assign(numOutputs, false);
  for (unsigned j = 0; j < numOutputs; ++j)
    needsInit[j] = !op.getRegionOutputArgs()[j].use_empty();
  // An operation whose only use is the value an output receives computes
  // into that output.
  auto single = [&](Value value) {
    const Node &node = nodes[value];
    return node.kind == Node::Kind::Expr && value.hasOneUse() &&
           !value.getType().isInteger(1) && !destinations.count(node.op);
  };
  for (unsigned j = 0; j < numOutputs; ++j) {
    Value value = yield.getOperand(j);
    if (reduced[j].empty()) {
      if (single(value))
        destinations[nodes[value].op] = {j, Reduction::none};
      else
        copies.push_back({j, value, Reduction::none});
      continue;
    }
    // A reduction: the yielded value must be `acc op f` (or `f op acc`),
    // where acc, the output's block argument, is used nowhere else.
    BlockArgument acc = op.getRegionOutputArgs()[j];
    std::string loops;
    for (unsigned d : reduced[j])
      loops += (loops.empty() ? "d" : ", d") + std::to_string(d);
    Operation *combine = value.getDefiningOp();
    std::optional<Reduction> reduction =
        combine ? getReduction(combine) : std::nullopt;
    Value f;
    if (reduction && value.hasOneUse() && acc.hasOneUse()) {
      if (combine->getOperand(0) == acc)
        f = combine->getOperand(1);
      else if (combine->getOperand(1) == acc)
        f = combine->getOperand(0);
    }
    if (!f)
      return fail(format(
          "output #{0} is reduced over loop(s) {1}, but the value yielded for "
          "it is not 'acc op f' with op arith.addf/addi, mulf/muli, "
          "maximumf/maxsi or minimumf/minsi and acc the output's block "
          "argument, used nowhere else",
          j, loops));
    absorbed.insert(combine);
    if (single(f))
      destinations[nodes[f].op] = {j, *reduction};
    else
      copies.push_back({j, f, *reduction});
  }
  return success();
}

PlannedOperand Planner::operandOf(Value value) {
  const Node &node = nodes[value];
  PlannedOperand operand;
  switch (node.kind) {
  case Node::Kind::Input:
    operand.kind = PlannedOperand::Kind::Access;
    operand.array = "in" + std::to_string(node.index);
    operand.indices = forms[node.index];
    break;
  case Node::Kind::Init:
    operand.kind = PlannedOperand::Kind::Access;
    operand.array = "init" + std::to_string(node.index);
    operand.indices = forms[numInputs + node.index];
    break;
  case Node::Kind::Iter:
    operand.kind = PlannedOperand::Kind::Iter;
    operand.loop = node.loop;
    break;
  case Node::Kind::Constant:
    operand.value = node.value;
    break;
  case Node::Kind::Expr:
    operand.kind = PlannedOperand::Kind::Access;
    operand.array = plan.buffers[node.temporary].name;
    operand.indices = identityForms(node.loops);
    break;
  }
  return operand;
}

void Planner::emit() {
  auto shapeOf = [](Value value) {
    auto type = cast<MemRefType>(value.getType());
    SmallVector<int64_t> shape(type.getShape());
    if (shape.empty())
      shape.push_back(1);
    return shape;
  };
  auto elementOf = [](Value value) {
    return cast<MemRefType>(value.getType()).getElementType();
  };
  // Arguments: inputs, initial values of outputs, outputs.
  for (unsigned i = 0; i < numInputs; ++i) {
    if (scalars[i])
      continue;
    Value value = op->getOperand(i);
    bool alsoOutput = llvm::is_contained(op.getDpsInits(), value);
    plan.buffers.push_back({"in" + std::to_string(i), Role::in,
                            elementOf(value), shapeOf(value), i, alsoOutput});
  }
  for (unsigned j = 0; j < numOutputs; ++j) {
    if (!needsInit[j])
      continue;
    Value value = op.getDpsInits()[j];
    plan.buffers.push_back({"init" + std::to_string(j), Role::in,
                            elementOf(value), shapeOf(value), numInputs + j,
                            true});
  }
  for (unsigned j = 0; j < numOutputs; ++j) {
    Value value = op.getDpsInits()[j];
    plan.buffers.push_back({"out" + std::to_string(j), Role::out,
                            elementOf(value), shapeOf(value), numInputs + j,
                            false});
  }
  SmallVector<unsigned> allLoops =
      llvm::to_vector(llvm::seq<unsigned>(0, op.getNumLoops()));
  auto outputStatement = [&](unsigned j, Reduction reduction) {
    PlannedStatement statement;
    statement.reduction = reduction;
    statement.array = "out" + std::to_string(j);
    statement.indices = forms[numInputs + j];
    statement.loops = allLoops;
    return statement;
  };
  // A reduction starts from the output's initial value.
  for (unsigned j = 0; j < numOutputs; ++j) {
    if (reduced[j].empty())
      continue;
    PlannedStatement copy;
    copy.array = "out" + std::to_string(j);
    copy.indices = forms[numInputs + j];
    copy.loops = loopsOf(copy.indices);
    PlannedOperand init;
    init.kind = PlannedOperand::Kind::Access;
    init.array = "init" + std::to_string(j);
    init.indices = copy.indices;
    copy.inputs.push_back(init);
    plan.statements.push_back(copy);
  }
  // The body's operations, in order.
  unsigned numTemporaries = 0;
  for (Operation &bodyOp : op.getBody()->without_terminator()) {
    if (bodyOp.getNumResults() != 1 || absorbed.contains(&bodyOp))
      continue;
    Node &node = nodes[bodyOp.getResult(0)];
    // Dead operations compute nothing the kernel needs.
    if (node.kind != Node::Kind::Expr || bodyOp.getResult(0).use_empty())
      continue;
    PlannedStatement statement;
    auto destination = destinations.find(&bodyOp);
    if (destination != destinations.end()) {
      statement = outputStatement(destination->second.output,
                                  destination->second.reduction);
    } else {
      PlannedBuffer temporary;
      temporary.name = "t" + std::to_string(numTemporaries++);
      temporary.elementType = node.type;
      for (unsigned loop : node.loops)
        temporary.shape.push_back(plan.loopSizes[loop]);
      if (temporary.shape.empty())
        temporary.shape.push_back(1);
      node.temporary = plan.buffers.size();
      plan.buffers.push_back(temporary);
      statement.array = temporary.name;
      statement.indices = identityForms(node.loops);
      statement.loops = node.loops;
    }
    statement.kind = node.primitive;
    for (Value operand : bodyOp.getOperands())
      statement.inputs.push_back(operandOf(operand));
    plan.statements.push_back(statement);
  }
  // Outputs that receive a value rather than an operation's result.
  for (auto [j, value, reduction] : copies) {
    PlannedStatement statement = outputStatement(j, reduction);
    statement.inputs.push_back(operandOf(value));
    plan.statements.push_back(statement);
  }
}

FailureOr<LinalgKernelPlan> Planner::run() {
  if (failed(checkOperands()) || failed(checkMaps()) || failed(planBody()))
    return failure();
  emit();
  return plan;
}

FailureOr<LinalgKernelPlan>
mlir::perfdojo::planLinalgKernel(linalg::GenericOp op, std::string &reason) {
  return Planner(op, reason).run();
}

//===----------------------------------------------------------------------===//
// Building
//===----------------------------------------------------------------------===//

/// `forms` (over loops) as forms over the scopes of a nest over `loops`.
static SmallVector<LinearForm> toScopes(ArrayRef<LinearForm> forms,
                                        ArrayRef<unsigned> loops) {
  SmallVector<LinearForm> result;
  for (const LinearForm &form : forms) {
    LinearForm scoped = LinearForm::ofConstant(form.constant);
    for (auto [depth, loop] : llvm::enumerate(loops))
      if (int64_t c = form.coeff(loop))
        scoped = *scoped.add(*LinearForm::ofDim(depth).scale(c));
    result.push_back(scoped);
  }
  return result;
}

KernelOp mlir::perfdojo::buildLinalgKernel(OpBuilder &builder, Location loc,
                                           StringRef name,
                                           const LinalgKernelPlan &plan) {
  MLIRContext *ctx = builder.getContext();
  OpBuilder::InsertionGuard guard(builder);
  auto kernel = KernelOp::create(builder, loc, name);
  builder.setInsertionPointToEnd(&kernel.getBody().emplaceBlock());
  for (const PlannedBuffer &buffer : plan.buffers)
    BufferOp::create(
        builder, loc, buffer.name, buffer.role, buffer.elementType,
        buffer.shape, SmallVector<int64_t>(buffer.shape.size(), 0),
        BufferLocation::heap,
        builder.getArrayAttr({builder.getStringAttr(buffer.name)}));
  for (const PlannedStatement &statement : plan.statements) {
    builder.setInsertionPointToEnd(&kernel.getBodyBlock());
    for (unsigned loop : statement.loops) {
      auto scope =
          ScopeOp::create(builder, loc, plan.loopSizes[loop], Mapping::seq);
      builder.setInsertionPointToEnd(&scope.getBody().emplaceBlock());
    }
    SmallVector<Attribute> inputs;
    for (const PlannedOperand &operand : statement.inputs) {
      switch (operand.kind) {
      case PlannedOperand::Kind::Access:
        inputs.push_back(AccessAttr::getCanonical(
            ctx, operand.array, toScopes(operand.indices, statement.loops)));
        break;
      case PlannedOperand::Kind::Iter:
        inputs.push_back(
            IterAttr::get(ctx, llvm::find(statement.loops, operand.loop) -
                                   statement.loops.begin()));
        break;
      case PlannedOperand::Kind::Constant:
        inputs.push_back(builder.getF64FloatAttr(operand.value));
        break;
      }
    }
    ComputeOp::create(
        builder, loc, statement.kind, statement.reduction,
        AccessAttr::getCanonical(ctx, statement.array,
                                 toScopes(statement.indices, statement.loops)),
        builder.getArrayAttr(inputs));
  }
  return kernel;
}
