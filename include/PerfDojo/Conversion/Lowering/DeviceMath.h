//===- DeviceMath.h - f32 functions from instructions -----------*- C++ -*-===//
//
// Rewrites of f32 math functions into arithmetic that every target has an
// instruction for (and exp, log, log1p, expm1, which MLIR approximates by
// polynomials): vector code on the CPU, and no device library on GPUs.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_CONVERSION_LOWERING_DEVICEMATH_H
#define PERFDOJO_CONVERSION_LOWERING_DEVICEMATH_H

namespace mlir {
class RewritePatternSet;
namespace perfdojo {

/// Adds patterns that compute f32 (scalar or vector) `math.sin`,
/// `math.cos`, `math.tan`, `math.sinh`, `math.cosh`, `math.asinh`,
/// `math.acosh` and `math.atanh` from arithmetic, `math.exp`, `math.expm1`,
/// `math.log`, `math.log1p` and `math.sqrt`, accurate to a few ulp over the
/// whole range (near zero and for large arguments included):
/// - sin, cos, tan: a reduction by pi/2 in three parts with FMAs, then
///   polynomials on [-pi/4, pi/4] (sin, cos) chosen and signed by the
///   quadrant; tan as their quotient;
/// - sinh, cosh: from exp(|x|/2) squared (no overflow below the result's),
///   sinh through expm1 below 1;
/// - asinh, acosh, atanh: through log1p, and log(|x|) + log 2 above 2^12.
void populateDeviceMathPatterns(RewritePatternSet &patterns);

/// Adds a pattern that computes f32 (scalar or vector) `math.exp` from two
/// calls of the `llvm.exp2` intrinsic (an instruction where the target has
/// one, as NVPTX's ex2.approx.f32): x = j ln 2 + f by a reduction with
/// ln 2 in two parts, e^x = (2 * 2^(f log2 e)) * 2^(j - 1). Within 0.85
/// ulp with an exact 2^y, plus the instruction's own error; for a target
/// whose exp2 is not a library call.
void populateExpByExp2Patterns(RewritePatternSet &patterns);

/// Adds a pattern that computes f32 (scalar or vector) `math.exp` as a
/// polynomial scaled by 2^j in one vscalefps: x = j ln 2 + f as above, e^f
/// by Cephes' expf polynomial in Horner's order, within 0.88 ulp. Vectors
/// of 16 call `llvm.x86.avx512.mask.scalef.ps.512`, other shapes
/// `llvm.ldexp` (an integer exponent): for x86 CPUs with AVX-512 only.
void populateExpByScalefPatterns(RewritePatternSet &patterns);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_CONVERSION_LOWERING_DEVICEMATH_H
