//===- DeviceMath.cpp - f32 functions from instructions -------------------===//
//
// pd-approximate-math runs these for the CPU, the GPUs and the GPU
// emulator, so that the functions vectorize and need no math library (a
// GPU has none: PerfDojo links no libdevice or ocml). MLIR's own
// expansions of
// these functions are exact formulas that lose most digits in some ranges
// (asinh(x) = log(x + sqrt(x^2 + 1)) is -inf at x = -10^4, sinh near zero
// cancels), and its sin and cos approximations carry an absolute error
// (1e-4 relative at 1e-3): hence these.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/DeviceMath.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/IR/ImplicitLocOpBuilder.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"

using namespace mlir;

namespace {
/// f32 arithmetic in one shape (a scalar or a vector of f32).
class F32Math {
public:
  F32Math(PatternRewriter &rewriter, Operation *op)
      : b(op->getLoc(), rewriter), type(op->getResult(0).getType()) {}

  Value c(double value) {
    FloatAttr attr = b.getF32FloatAttr(float(value));
    if (auto vector = dyn_cast<VectorType>(type))
      return arith::ConstantOp::create(b, DenseElementsAttr::get(vector, attr));
    return arith::ConstantOp::create(b, attr);
  }
  Value add(Value x, Value y) { return arith::AddFOp::create(b, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, x, y); }
  Value neg(Value x) { return arith::NegFOp::create(b, x); }
  Value fma(Value x, Value y, Value z) {
    return math::FmaOp::create(b, x, y, z);
  }
  Value abs(Value x) { return math::AbsFOp::create(b, x); }
  Value floor(Value x) { return math::FloorOp::create(b, x); }
  Value roundEven(Value x) { return math::RoundEvenOp::create(b, x); }
  Value sqrt(Value x) { return math::SqrtOp::create(b, x); }
  Value exp(Value x) { return math::ExpOp::create(b, x); }
  Value expm1(Value x) { return math::ExpM1Op::create(b, x); }
  Value log(Value x) { return math::LogOp::create(b, x); }
  Value log1p(Value x) { return math::Log1pOp::create(b, x); }
  /// 2^x by the target's instruction (llvm.exp2: ex2.approx.f32 on
  /// NVPTX, subnormals kept). A call of the intrinsic by name, which the
  /// GPU conversions leave alone (they turn llvm.intr.exp2 and math.exp2
  /// into device library calls).
  Value exp2(Value x) {
    return LLVM::CallIntrinsicOp::create(b, type, b.getStringAttr("llvm.exp2"),
                                         ValueRange{x})
        .getResult(0);
  }
  /// x 2^j for an integral j (llvm.ldexp, one vscalefps with AVX-512):
  /// exact where the product is a normal number, rounded once where it is
  /// subnormal, 0 or inf beyond.
  Value ldexp(Value x, Value j) {
    Type integers = b.getI32Type();
    if (auto vector = dyn_cast<VectorType>(type))
      integers = vector.clone(integers);
    // By name: MLIR's llvm.intr.ldexp takes a scalar exponent only.
    Value exponent = arith::FPToSIOp::create(b, integers, j);
    return LLVM::CallIntrinsicOp::create(b, type, b.getStringAttr("llvm.ldexp"),
                                         ValueRange{x, exponent})
        .getResult(0);
  }
  /// ldexp for x86 with AVX-512: a vector of 16 is one vscalefps by name,
  /// whose exponent is the float j itself (llvm.ldexp's integer exponent
  /// costs two conversions there, vcvttps2dq and vcvtdq2ps); other shapes
  /// go through ldexp.
  Value scalef(Value x, Value j) {
    auto vector = dyn_cast<VectorType>(type);
    if (!vector || vector.getRank() != 1 || vector.getNumElements() != 16 ||
        vector.isScalable())
      return ldexp(x, j);
    Value allLanes = arith::ConstantOp::create(b, b.getI16IntegerAttr(-1));
    Value currentRounding =
        arith::ConstantOp::create(b, b.getI32IntegerAttr(4));
    return LLVM::CallIntrinsicOp::create(
               b, type, b.getStringAttr("llvm.x86.avx512.mask.scalef.ps.512"),
               ValueRange{x, j, /*passthrough=*/x, allLanes, currentRounding})
        .getResult(0);
  }
  Value min(Value x, Value y) { return arith::MinimumFOp::create(b, x, y); }
  Value max(Value x, Value y) { return arith::MaximumFOp::create(b, x, y); }
  Value less(Value x, Value y) {
    return arith::CmpFOp::create(b, arith::CmpFPredicate::OLT, x, y);
  }
  Value greater(Value x, Value y) {
    return arith::CmpFOp::create(b, arith::CmpFPredicate::OGT, x, y);
  }
  Value select(Value cond, Value x, Value y) {
    return arith::SelectOp::create(b, cond, x, y);
  }
  /// `magnitude` with the sign of `sign` (an instruction everywhere; on
  /// GPUs through pd-gpu-device-functions).
  Value withSignOf(Value magnitude, Value sign) {
    return math::CopySignOp::create(b, magnitude, sign);
  }
  /// c[0] + z (c[1] + z (c[2] + ...)), by FMAs.
  Value poly(Value z, ArrayRef<double> coefficients) {
    Value sum = c(coefficients.back());
    for (double k : llvm::reverse(coefficients.drop_back()))
      sum = fma(sum, z, c(k));
    return sum;
  }

  /// sin, cos and tan of `x` from one reduction: x = j pi/2 + r, |r| <=
  /// pi/4, the quadrant j mod 4 choosing and signing the polynomials.
  enum class Trig { Sin, Cos, Tan };
  Value trig(Value x, Trig which) {
    Value j = roundEven(mul(x, c(0.636619772367581343))); // x * 2/pi
    // pi/2 in three parts; the first has 8 significant bits, so that
    // j * part1 is exact and x - j * part1 too (Sterbenz).
    Value r = fma(j, c(-1.5703125), x);
    r = fma(j, c(-4.837512969970703125e-4), r);
    r = fma(j, c(-7.54978995489188216e-8), r);
    Value z = mul(r, r);
    // Minimax polynomials on [-pi/4, pi/4] (Cephes' sinf and cosf).
    Value sinR =
        fma(mul(r, z),
            poly(z, {-1.6666654611e-1, 8.3321608736e-3, -1.9515295891e-4}), r);
    Value cosR = fma(mul(z, z),
                     poly(z, {4.166664568298827e-2, -1.388731625493765e-3,
                              2.443315711809948e-5}),
                     fma(c(-0.5), z, c(1)));
    if (which == Trig::Cos)
      j = add(j, c(1)); // cos(x) = sin(x + pi/2)
    // The quadrant j mod 4 in {0, 1, 2, 3}, as floats.
    Value quadrant = sub(j, mul(c(4), floor(mul(j, c(0.25)))));
    Value odd =
        greater(sub(quadrant, mul(c(2), floor(mul(quadrant, c(0.5))))), c(0.5));
    if (which == Trig::Tan)
      return select(odd, neg(div(cosR, sinR)), div(sinR, cosR));
    Value value = select(odd, cosR, sinR);
    return select(greater(quadrant, c(1.5)), neg(value), value);
  }

  ImplicitLocOpBuilder b;
  Type type;
};

constexpr double kLog2 = 0.693147180559945309;
/// Above this, asinh and acosh are log(2x) to f32 precision.
constexpr double kLargeArgument = 4096;

/// Rewrites an f32 (scalar or vector) `Op` by `build(math, operand)`.
template <typename Op> struct DeviceMathPattern : public OpRewritePattern<Op> {
  using Build = Value (*)(F32Math &, Value);
  DeviceMathPattern(MLIRContext *ctx, Build build)
      : OpRewritePattern<Op>(ctx), build(build) {}

  LogicalResult matchAndRewrite(Op op,
                                PatternRewriter &rewriter) const override {
    if (!getElementTypeOrSelf(op.getType()).isF32())
      return rewriter.notifyMatchFailure(op, "not f32");
    F32Math math(rewriter, op);
    rewriter.replaceOp(op, build(math, op.getOperand()));
    return success();
  }

  Build build;
};

Value buildSin(F32Math &m, Value x) { return m.trig(x, F32Math::Trig::Sin); }
Value buildCos(F32Math &m, Value x) { return m.trig(x, F32Math::Trig::Cos); }
Value buildTan(F32Math &m, Value x) { return m.trig(x, F32Math::Trig::Tan); }

/// e^|x| / 2, as (e^(|x|/2) / 2) e^(|x|/2): finite while the result is.
Value halfExpOfAbs(F32Math &m, Value a) {
  Value root = m.exp(m.mul(a, m.c(0.5)));
  return m.mul(m.mul(root, m.c(0.5)), root);
}

Value buildSinh(F32Math &m, Value x) {
  Value a = m.abs(x);
  // Below 1: (e + e / (e + 1)) / 2 with e = expm1(|x|), no cancellation.
  Value e = m.expm1(a);
  Value small = m.mul(m.c(0.5), m.add(e, m.div(e, m.add(e, m.c(1)))));
  Value h = halfExpOfAbs(m, a);
  Value large = m.sub(h, m.div(m.c(0.25), h));
  return m.withSignOf(m.select(m.less(a, m.c(1)), small, large), x);
}

Value buildCosh(F32Math &m, Value x) {
  Value h = halfExpOfAbs(m, m.abs(x));
  return m.add(h, m.div(m.c(0.25), h));
}

Value buildAsinh(F32Math &m, Value x) {
  Value a = m.abs(x);
  Value a2 = m.mul(a, a);
  // log1p(a + a^2 / (1 + sqrt(1 + a^2))) = log(a + sqrt(a^2 + 1)).
  Value moderate =
      m.log1p(m.add(a, m.div(a2, m.add(m.c(1), m.sqrt(m.add(m.c(1), a2))))));
  Value large = m.add(m.log(a), m.c(kLog2));
  return m.withSignOf(
      m.select(m.greater(a, m.c(kLargeArgument)), large, moderate), x);
}

Value buildAcosh(F32Math &m, Value x) {
  // log1p(t + sqrt(t (t + 2))) with t = x - 1 (exact near 1); NaN below 1.
  Value t = m.sub(x, m.c(1));
  Value moderate = m.log1p(m.add(t, m.sqrt(m.mul(t, m.add(t, m.c(2))))));
  Value large = m.add(m.log(x), m.c(kLog2));
  return m.select(m.greater(x, m.c(kLargeArgument)), large, moderate);
}

Value buildAtanh(F32Math &m, Value x) {
  // log1p(2|x| / (1 - |x|)) / 2: inf at 1, NaN beyond.
  Value a = m.abs(x);
  Value value =
      m.mul(m.c(0.5), m.log1p(m.div(m.mul(m.c(2), a), m.sub(m.c(1), a))));
  return m.withSignOf(value, x);
}
/// e^x through two 2^y instructions: x = j ln 2 + f, |f| <= ln 2 / 2 (j
/// rounded, ln 2 in two parts so that j ln2_hi is exact), then
/// e^x = (2 * 2^(f log2 e)) 2^(j - 1), each power one instruction (exact
/// for the integer j - 1; the product overflows to inf past e^89,
/// subnormal or 0 below e^-87). x is clamped to [-104, 89] first, where
/// e^x is 0 and inf (NaN stays NaN).
/// About 10 instructions, against 25 for the polynomial.
Value buildExpByExp2(F32Math &m, Value x) {
  x = m.min(m.max(x, m.c(-104)), m.c(89));
  Value j = m.roundEven(m.mul(x, m.c(1.44269504088896341)));
  Value f = m.fma(j, m.c(-0.693145751953125), x);
  f = m.fma(j, m.c(-1.42860682030941723e-06), f);
  // (2 p) 2^(j - 1): 2^j alone overflows at j = 128 (x just below 89).
  Value p = m.exp2(m.mul(f, m.c(1.44269504088896341)));
  return m.mul(m.mul(p, m.c(2)), m.exp2(m.sub(j, m.c(1))));
}
/// e^x = p(f) 2^j with x = j ln 2 + f, |f| <= ln 2 / 2 (the reduction of
/// buildExpByExp2), p(f) = 1 + f (1 + f q(f)) by FMAs with Cephes' expf
/// polynomial q, and the scaling by 2^j one vscalefps (F32Math::scalef):
/// 0 and inf beyond the range as the clamp to [-104, 89] gives them, NaN
/// stays NaN, and a subnormal result rounds once. 14 instructions a vector
/// of 16, against 24 for MLIR's polynomial, which builds 2^j from its bits
/// and clamps j to the normal exponents. Within 0.88 ulp (normal results;
/// bench/math/ulp.py measures it), where Cephes' order
/// (1 + (f + f^2 q)) came to 1.003 ulp with two instructions more.
Value buildExpByScalef(F32Math &m, Value x) {
  x = m.min(m.max(x, m.c(-104)), m.c(89));
  Value j = m.roundEven(m.mul(x, m.c(1.44269504088896341)));
  Value f = m.fma(j, m.c(-0.693145751953125), x);
  f = m.fma(j, m.c(-1.42860682030941723e-06), f);
  Value q = m.poly(f, {5.0000001201e-1, 1.6666665459e-1, 4.1665795894e-2,
                       8.3334519073e-3, 1.3981999507e-3, 1.9875691500e-4});
  Value p = m.fma(m.fma(q, f, m.c(1)), f, m.c(1));
  return m.scalef(p, j);
}
} // namespace

void mlir::perfdojo::populateExpByScalefPatterns(RewritePatternSet &patterns) {
  patterns.add<DeviceMathPattern<math::ExpOp>>(patterns.getContext(),
                                               buildExpByScalef);
}

void mlir::perfdojo::populateExpByExp2Patterns(RewritePatternSet &patterns) {
  // (Ahead of the polynomial, where both are added.)
  patterns.add<DeviceMathPattern<math::ExpOp>>(patterns.getContext(),
                                               buildExpByExp2);
}

void mlir::perfdojo::populateDeviceMathPatterns(RewritePatternSet &patterns) {
  MLIRContext *ctx = patterns.getContext();
  patterns.add<DeviceMathPattern<math::SinOp>>(ctx, buildSin);
  patterns.add<DeviceMathPattern<math::CosOp>>(ctx, buildCos);
  patterns.add<DeviceMathPattern<math::TanOp>>(ctx, buildTan);
  patterns.add<DeviceMathPattern<math::SinhOp>>(ctx, buildSinh);
  patterns.add<DeviceMathPattern<math::CoshOp>>(ctx, buildCosh);
  patterns.add<DeviceMathPattern<math::AsinhOp>>(ctx, buildAsinh);
  patterns.add<DeviceMathPattern<math::AcoshOp>>(ctx, buildAcosh);
  patterns.add<DeviceMathPattern<math::AtanhOp>>(ctx, buildAtanh);
}
