//===- LinearForm.h - Linear index expressions ------------------*- C++ -*-===//
//
// Array indices in PerfDojo are linear (affine without division) functions of
// the enclosing scopes' iteration variables. LinearForm is their exact,
// overflow-checked representation: c0*{0} + c1*{1} + ... + constant.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_DIALECT_PERFDOJO_LINEARFORM_H
#define PERFDOJO_DIALECT_PERFDOJO_LINEARFORM_H

#include "mlir/IR/AffineExpr.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/Support/raw_ostream.h"
#include <cstdint>
#include <optional>

namespace mlir {
namespace perfdojo {

/// An exact linear form `sum(coeffs[d] * {d}) + constant`. `coeffs` never has
/// trailing zeros, so equal forms compare equal.
struct LinearForm {
  SmallVector<int64_t, 4> coeffs;
  int64_t constant = 0;

  static LinearForm ofConstant(int64_t c) { return {{}, c}; }
  static LinearForm ofDim(unsigned depth);

  /// Coefficient of `{depth}` (0 when absent).
  int64_t coeff(unsigned depth) const {
    return depth < coeffs.size() ? coeffs[depth] : 0;
  }
  /// One past the deepest scope referenced (0 for a constant).
  unsigned getNumDims() const { return coeffs.size(); }
  bool isConstant() const { return coeffs.empty(); }

  /// Overflow-checked arithmetic; std::nullopt on int64 overflow.
  std::optional<LinearForm> add(const LinearForm &other) const;
  std::optional<LinearForm> scale(int64_t factor) const;
  std::optional<LinearForm> sub(const LinearForm &other) const;

  /// The affine expression, built in canonical order (dims ascending, then
  /// the constant), so that equal forms give identical expressions.
  AffineExpr toAffineExpr(MLIRContext *ctx) const;
  /// Decomposes a division-free affine expression over dims only; fails on
  /// symbols, mod, floordiv, ceildiv or overflow.
  static std::optional<LinearForm> fromAffineExpr(AffineExpr expr);

  /// Prints the canonical text `{0}*64+{1}-3`; `sep` goes around `+`/`-`
  /// (empty in the text form, " " in MLIR assembly).
  void print(raw_ostream &os, StringRef sep = "") const;

  /// The exact range of the form when each `{d}` ranges over
  /// [0, extents[d]-1]. Requires getNumDims() <= extents.size().
  std::pair<__int128, __int128> range(ArrayRef<int64_t> extents) const;

  bool operator==(const LinearForm &o) const {
    return coeffs == o.coeffs && constant == o.constant;
  }

private:
  void trim();
};

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_DIALECT_PERFDOJO_LINEARFORM_H
