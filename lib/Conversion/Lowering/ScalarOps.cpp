//===- ScalarOps.cpp - The primitives of compute operations ---------------===//
//
// The values every lowering computes the same way: constants, conversions
// between element types, the scalar (or lane-wise) primitives of compute
// operations in `arith`/`math`, and horizontal reductions of lanes.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/KernelEmitter.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/IR/TypeUtilities.h"
#include <numeric>

using namespace mlir;
using namespace mlir::perfdojo;

static bool isFloat(Type type) {
  return isa<FloatType>(getElementTypeOrSelf(type));
}

Value KernelEmitter::constant(double value, Type type) {
  Type scalar = getElementTypeOrSelf(type);
  TypedAttr attr;
  if (auto f = dyn_cast<FloatType>(scalar)) {
    bool lost;
    APFloat v(value);
    v.convert(f.getFloatSemantics(), APFloat::rmNearestTiesToEven, &lost);
    attr = FloatAttr::get(scalar, v);
  } else {
    attr = IntegerAttr::get(scalar, static_cast<int64_t>(value));
  }
  if (auto vector = dyn_cast<VectorType>(type))
    attr = DenseElementsAttr::get(vector, attr);
  return arith::ConstantOp::create(b, loc, attr);
}

Value KernelEmitter::convert(Value value, Type from, Type to) {
  Type src = getElementTypeOrSelf(from), dst = getElementTypeOrSelf(to);
  if (src == dst)
    return value;
  auto shaped = dyn_cast<VectorType>(value.getType());
  Type result = shaped ? VectorType::get(shaped.getShape(), dst) : dst;
  if (isa<FloatType>(src) && isa<FloatType>(dst)) {
    // f16 <-> bf16: same width, neither extends the other; go through f32.
    if (src.getIntOrFloatBitWidth() == dst.getIntOrFloatBitWidth()) {
      Type f32 = b.getF32Type();
      Value wide = convert(value, src, f32);
      return convert(wide, f32, dst);
    }
    return src.getIntOrFloatBitWidth() < dst.getIntOrFloatBitWidth()
               ? arith::ExtFOp::create(b, loc, result, value).getResult()
               : arith::TruncFOp::create(b, loc, result, value).getResult();
  }
  if (isa<FloatType>(dst))
    return arith::SIToFPOp::create(b, loc, result, value);
  if (isa<FloatType>(src))
    return arith::FPToSIOp::create(b, loc, result, value);
  return src.getIntOrFloatBitWidth() < dst.getIntOrFloatBitWidth()
             ? arith::ExtSIOp::create(b, loc, result, value).getResult()
             : arith::TruncIOp::create(b, loc, result, value).getResult();
}

Value KernelEmitter::operand(Attribute input, Type type) {
  if (auto access = dyn_cast<AccessAttr>(input)) {
    Value value = forwardedValues.lookup(access);
    return convert(value ? value : load(access),
                   elementType(access.getArray().getValue()), type);
  }
  if (auto value = dyn_cast<FloatAttr>(input))
    return constant(value.getValueAsDouble(), vectorOf(type));
  unsigned depth = cast<IterAttr>(input).getDepth();
  Type i64 = b.getI64Type();
  if (!ivs[depth]) {
    // The lane variable: 0, 1, ..., width-1 (and on past it in masked
    // lanes).
    SmallVector<int64_t> steps(lanes.registerWidth);
    std::iota(steps.begin(), steps.end(), 0);
    Value lanesValue = arith::ConstantOp::create(
        b, loc, DenseElementsAttr::get(VectorType::get({lanes.registerWidth}, i64),
                                       ArrayRef<int64_t>(steps)));
    return convert(lanesValue, i64, type);
  }
  Value scalar = convert(arith::IndexCastOp::create(b, loc, i64, ivs[depth]),
                         i64, getElementTypeOrSelf(type));
  if (!lanes.active)
    return scalar;
  return vector::BroadcastOp::create(b, loc, vectorOf(scalar.getType()),
                                     scalar);
}

Value KernelEmitter::binary(OpKind kind, Value x, Value y, Type type) {
  bool fp = isFloat(type);
  auto contract = arith::FastMathFlagsAttr::get(
      b.getContext(), fpContract ? arith::FastMathFlags::contract
                                 : arith::FastMathFlags::none);
  auto noSignedZeros =
      arith::FastMathFlagsAttr::get(b.getContext(), arith::FastMathFlags::nsz);
  switch (kind) {
  case OpKind::add:
    return fp ? arith::AddFOp::create(b, loc, x, y, contract).getResult()
              : arith::AddIOp::create(b, loc, x, y).getResult();
  case OpKind::sub:
    return fp ? arith::SubFOp::create(b, loc, x, y, contract).getResult()
              : arith::SubIOp::create(b, loc, x, y).getResult();
  case OpKind::mul:
    return fp ? arith::MulFOp::create(b, loc, x, y, contract).getResult()
              : arith::MulIOp::create(b, loc, x, y).getResult();
  case OpKind::div:
    return fp ? arith::DivFOp::create(b, loc, x, y).getResult()
              : arith::DivSIOp::create(b, loc, x, y).getResult();
  // NaN if either is NaN; of two zeros, either (nsz): the interpreter
  // returns the first of equal operands, and ordering -0 below +0 costs
  // x86 three more instructions a vector (a sign test and two blends).
  case OpKind::max:
    return fp ? arith::MaximumFOp::create(b, loc, x, y, noSignedZeros)
                    .getResult()
              : arith::MaxSIOp::create(b, loc, x, y).getResult();
  case OpKind::min:
    return fp ? arith::MinimumFOp::create(b, loc, x, y, noSignedZeros)
                    .getResult()
              : arith::MinSIOp::create(b, loc, x, y).getResult();
  default:
    llvm_unreachable("not an arithmetic binary primitive");
  }
}

Value KernelEmitter::perLane(Value x, function_ref<Value(Value)> f) {
  auto vector = dyn_cast<VectorType>(x.getType());
  // f32 functions become vector arithmetic (pd-approximate-math).
  if (!vector || vector.getElementType().isF32())
    return f(x);
  SmallVector<Value> results;
  for (int64_t lane = 0; lane < vector.getNumElements(); ++lane)
    results.push_back(
        f(vector::ExtractOp::create(b, loc, x, ArrayRef<int64_t>{lane})));
  return vector::FromElementsOp::create(b, loc, vector, results);
}

Value KernelEmitter::sign(Value x, Type type) {
  Value zero = constant(0, vectorOf(type));
  Value one = constant(1, vectorOf(type));
  Value minusOne = constant(-1, vectorOf(type));
  if (isFloat(type)) {
    // NaN fails every ordered comparison and stays itself; -0 gives 0.
    auto cmp = [&](arith::CmpFPredicate p) {
      return arith::CmpFOp::create(b, loc, p, x, zero);
    };
    Value zeroOrNaN = arith::SelectOp::create(
        b, loc, cmp(arith::CmpFPredicate::OEQ), zero, x);
    Value notPositive = arith::SelectOp::create(
        b, loc, cmp(arith::CmpFPredicate::OLT), minusOne, zeroOrNaN);
    return arith::SelectOp::create(b, loc, cmp(arith::CmpFPredicate::OGT), one,
                                   notPositive);
  }
  auto cmp = [&](arith::CmpIPredicate p) {
    return arith::CmpIOp::create(b, loc, p, x, zero);
  };
  Value notPositive = arith::SelectOp::create(
      b, loc, cmp(arith::CmpIPredicate::slt), minusOne, zero);
  return arith::SelectOp::create(b, loc, cmp(arith::CmpIPredicate::sgt), one,
                                 notPositive);
}

Value KernelEmitter::remainder(OpKind kind, Value x, Value y, Type type) {
  bool fp = isFloat(type);
  Value zero = constant(0, vectorOf(type));
  Value r;
  if (fp) {
    r = arith::RemFOp::create(b, loc, x, y);
  } else {
    // x % -1 is 0, but `srem` of the minimum by -1 is undefined (x86's
    // idiv traps): divide by 1 instead. A zero divisor is the kernel's
    // error, which the interpreter reports.
    Value minusOne = constant(-1, vectorOf(type));
    Value isMinusOne =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, y, minusOne);
    Value divisor = arith::SelectOp::create(b, loc, isMinusOne,
                                            constant(1, vectorOf(type)), y);
    r = arith::RemSIOp::create(b, loc, x, divisor);
  }
  if (kind == OpKind::fmod)
    return r;
  // Floored: a nonzero remainder whose sign differs from the divisor's
  // moves by one divisor; a zero one takes the divisor's sign (floats).
  Value rNegative, yNegative, rZero;
  if (fp) {
    rNegative =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, r, zero);
    yNegative =
        arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OLT, y, zero);
    rZero = arith::CmpFOp::create(b, loc, arith::CmpFPredicate::OEQ, r, zero);
  } else {
    rNegative =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, r, zero);
    yNegative =
        arith::CmpIOp::create(b, loc, arith::CmpIPredicate::slt, y, zero);
    rZero = arith::CmpIOp::create(b, loc, arith::CmpIPredicate::eq, r, zero);
  }
  Value differs = arith::XOrIOp::create(b, loc, rNegative, yNegative);
  Value shifted = fp ? arith::AddFOp::create(b, loc, r, y).getResult()
                     : arith::AddIOp::create(b, loc, r, y).getResult();
  Value floored = arith::SelectOp::create(b, loc, differs, shifted, r);
  Value zeroResult =
      fp ? math::CopySignOp::create(b, loc, r, y).getResult() : r;
  return arith::SelectOp::create(b, loc, rZero, zeroResult, floored);
}

/// The type an operand has by itself: its buffer's for an access, `type`
/// (the operation's) for a constant or a scope variable.
static Type naturalType(Attribute input, Type type,
                        const llvm::StringMap<BufferOp> &buffers) {
  if (auto access = dyn_cast<AccessAttr>(input))
    return buffers.lookup(access.getArray().getValue()).getElementType();
  return type;
}

static bool isComparisonKind(OpKind kind) {
  return kind == OpKind::lt || kind == OpKind::le || kind == OpKind::gt ||
         kind == OpKind::ge || kind == OpKind::eq || kind == OpKind::ne;
}

Value KernelEmitter::compute(ComputeOp op, Type outType, std::string &error) {
  ArrayRef<Attribute> inputs = op.getInputs().getValue();
  OpKind kind = op.getKind();
  auto in = [&](unsigned i, Type type) { return operand(inputs[i], type); };
  bool fp = isFloat(outType);
  if (StringRef why = whyCannotCompute(kind, outType); !why.empty()) {
    error = ("the " + targetName() + " lowering cannot compute '" +
             stringifyOpKind(kind) + "': " + why)
                .str();
    return Value();
  }
  switch (kind) {
  case OpKind::copy:
    return in(0, outType);
  case OpKind::cast: {
    Type from = naturalType(inputs[0], outType, buffers);
    return convert(in(0, from), from, outType);
  }
  case OpKind::neg:
    return fp ? arith::NegFOp::create(b, loc, in(0, outType)).getResult()
              : arith::SubIOp::create(b, loc, constant(0, vectorOf(outType)),
                                      in(0, outType))
                    .getResult();
  case OpKind::abs:
    return fp ? math::AbsFOp::create(b, loc, in(0, outType)).getResult()
              : math::AbsIOp::create(b, loc, in(0, outType)).getResult();
  case OpKind::exp:
    return math::ExpOp::create(b, loc, in(0, outType));
  case OpKind::log:
    return math::LogOp::create(b, loc, in(0, outType));
  case OpKind::sqrt:
    return math::SqrtOp::create(b, loc, in(0, outType));
  case OpKind::rsqrt:
    return math::RsqrtOp::create(b, loc, in(0, outType));
  case OpKind::tanh:
    return math::TanhOp::create(b, loc, in(0, outType));
  case OpKind::sigmoid: {
    Value one = constant(1, vectorOf(outType));
    Value e = math::ExpOp::create(
        b, loc, arith::NegFOp::create(b, loc, in(0, outType)));
    return arith::DivFOp::create(b, loc, one,
                                 arith::AddFOp::create(b, loc, one, e));
  }
  case OpKind::erf:
    return perLane(in(0, outType), [&](Value x) {
      return math::ErfOp::create(b, loc, x).getResult();
    });
  case OpKind::floor:
    return math::FloorOp::create(b, loc, in(0, outType));
  case OpKind::ceil:
    return math::CeilOp::create(b, loc, in(0, outType));
  case OpKind::round:
    return math::RoundEvenOp::create(b, loc, in(0, outType));
  case OpKind::sin:
    return math::SinOp::create(b, loc, in(0, outType));
  case OpKind::cos:
    return math::CosOp::create(b, loc, in(0, outType));
  case OpKind::tan:
    return math::TanOp::create(b, loc, in(0, outType));
  case OpKind::asin:
    return math::AsinOp::create(b, loc, in(0, outType));
  case OpKind::acos:
    return math::AcosOp::create(b, loc, in(0, outType));
  case OpKind::atan:
    return math::AtanOp::create(b, loc, in(0, outType));
  case OpKind::sinh:
    return math::SinhOp::create(b, loc, in(0, outType));
  case OpKind::cosh:
    return math::CoshOp::create(b, loc, in(0, outType));
  case OpKind::asinh:
    return perLane(in(0, outType), [&](Value x) {
      return math::AsinhOp::create(b, loc, x).getResult();
    });
  case OpKind::acosh:
    return perLane(in(0, outType), [&](Value x) {
      return math::AcoshOp::create(b, loc, x).getResult();
    });
  case OpKind::atanh:
    return perLane(in(0, outType), [&](Value x) {
      return math::AtanhOp::create(b, loc, x).getResult();
    });
  case OpKind::sign:
    return sign(in(0, outType), outType);
  case OpKind::pow:
    return math::PowFOp::create(b, loc, in(0, outType), in(1, outType));
  case OpKind::fmod:
  case OpKind::mod:
    return remainder(kind, in(0, outType), in(1, outType), outType);
  case OpKind::div:
    if (Value reciprocal = reciprocals.lookup(op)) {
      if (lanes.active)
        reciprocal = vector::BroadcastOp::create(b, loc, vectorOf(outType),
                                                 reciprocal);
      return binary(OpKind::mul, in(0, outType), reciprocal, outType);
    }
    return binary(kind, in(0, outType), in(1, outType), outType);
  case OpKind::add:
  case OpKind::sub:
  case OpKind::mul:
  case OpKind::max:
  case OpKind::min:
    return binary(kind, in(0, outType), in(1, outType), outType);
  case OpKind::fma: {
    Value x = in(0, outType), y = in(1, outType), z = in(2, outType);
    if (fp)
      return math::FmaOp::create(b, loc, x, y, z);
    return arith::AddIOp::create(b, loc,
                                 arith::MulIOp::create(b, loc, x, y), z);
  }
  case OpKind::select: {
    Type condType = naturalType(inputs[0], outType, buffers);
    Value cond = in(0, condType);
    Value zero = constant(0, vectorOf(condType));
    Value truth =
        isFloat(condType)
            ? arith::CmpFOp::create(b, loc, arith::CmpFPredicate::UNE, cond,
                                    zero)
                  .getResult()
            : arith::CmpIOp::create(b, loc, arith::CmpIPredicate::ne, cond,
                                    zero)
                  .getResult();
    return arith::SelectOp::create(b, loc, truth, in(1, outType),
                                   in(2, outType));
  }
  default:
    break;
  }
  if (isComparisonKind(kind)) {
    Type type = outType;
    for (Attribute input : inputs)
      if (isa<AccessAttr>(input)) {
        type = naturalType(input, outType, buffers);
        break;
      }
    Value x = in(0, type), y = in(1, type);
    Value truth;
    if (isFloat(type)) {
      arith::CmpFPredicate p =
          kind == OpKind::lt   ? arith::CmpFPredicate::OLT
          : kind == OpKind::le ? arith::CmpFPredicate::OLE
          : kind == OpKind::gt ? arith::CmpFPredicate::OGT
          : kind == OpKind::ge ? arith::CmpFPredicate::OGE
          : kind == OpKind::eq ? arith::CmpFPredicate::OEQ
                               : arith::CmpFPredicate::UNE;
      truth = arith::CmpFOp::create(b, loc, p, x, y);
    } else {
      arith::CmpIPredicate p =
          kind == OpKind::lt   ? arith::CmpIPredicate::slt
          : kind == OpKind::le ? arith::CmpIPredicate::sle
          : kind == OpKind::gt ? arith::CmpIPredicate::sgt
          : kind == OpKind::ge ? arith::CmpIPredicate::sge
          : kind == OpKind::eq ? arith::CmpIPredicate::eq
                               : arith::CmpIPredicate::ne;
      truth = arith::CmpIOp::create(b, loc, p, x, y);
    }
    return arith::SelectOp::create(b, loc, truth,
                                   constant(1, vectorOf(outType)),
                                   constant(0, vectorOf(outType)));
  }
  error = "the CPU lowering has no rule for '" +
          stringifyOpKind(kind).str() + "'";
  return Value();
}

OpKind mlir::perfdojo::getCombiner(Reduction reduction) {
  switch (reduction) {
  case Reduction::add:
    return OpKind::add;
  case Reduction::mul:
    return OpKind::mul;
  case Reduction::max:
    return OpKind::max;
  case Reduction::min:
    return OpKind::min;
  case Reduction::none:
    break;
  }
  llvm_unreachable("not a reduction");
}

static vector::CombiningKind combiningKind(Reduction reduction, bool fp) {
  switch (reduction) {
  case Reduction::add:
    return vector::CombiningKind::ADD;
  case Reduction::mul:
    return vector::CombiningKind::MUL;
  case Reduction::max:
    return fp ? vector::CombiningKind::MAXIMUMF : vector::CombiningKind::MAXSI;
  case Reduction::min:
    return fp ? vector::CombiningKind::MINIMUMF : vector::CombiningKind::MINSI;
  case Reduction::none:
    break;
  }
  llvm_unreachable("not a reduction");
}

Value KernelEmitter::reduceLanes(Value value, Reduction reduction,
                                  Type type) {
  bool fp = isFloat(type);
  int64_t width = cast<VectorType>(value.getType()).getNumElements();
  if (lanes.active && lanes.masked()) {
    // Masked lanes (floats only, enterLanes) take the identity.
    value = arith::SelectOp::create(
        b, loc, laneMask(), value,
        constant(*getReductionIdentity(reduction, type), value.getType()));
  }
  if (!fp || reduction == Reduction::add || reduction == Reduction::mul ||
      !llvm::isPowerOf2_64(width))
    return vector::ReductionOp::create(
        b, loc, combiningKind(reduction, fp), value,
        fp ? arith::FastMathFlags::reassoc : arith::FastMathFlags::none);
  // NaN-propagating max/min have no x86 reduction instruction and LLVM
  // expands their reduction lane by lane: halve the vector log2(W) times
  // with a rotation and a vector max/min instead.
  for (int64_t half = width / 2; half >= 1; half /= 2) {
    SmallVector<int64_t> rotation;
    for (int64_t i = 0; i < width; ++i)
      rotation.push_back((i + half) % width);
    Value rotated = vector::ShuffleOp::create(b, loc, value, value, rotation);
    value = binary(getCombiner(reduction), value, rotated, type);
  }
  return vector::ExtractOp::create(b, loc, value, ArrayRef<int64_t>{0});
}

