//===- LinearForm.cpp - Linear index expressions --------------------------===//

#include "PerfDojo/Dialect/PerfDojo/LinearForm.h"
#include "mlir/IR/AffineExpr.h"
#include "llvm/Support/MathExtras.h"
#include <limits>

using namespace mlir;
using namespace mlir::perfdojo;

LinearForm LinearForm::ofDim(unsigned depth) {
  LinearForm f;
  f.coeffs.assign(depth + 1, 0);
  f.coeffs[depth] = 1;
  return f;
}

/// INT64_MIN has no negation; forms never hold it, so that every form
/// prints as text that parses back.
static bool isRepresentable(int64_t v) {
  return v != std::numeric_limits<int64_t>::min();
}

void LinearForm::trim() {
  while (!coeffs.empty() && coeffs.back() == 0)
    coeffs.pop_back();
}

std::optional<LinearForm> LinearForm::add(const LinearForm &other) const {
  LinearForm r;
  r.coeffs.assign(std::max(coeffs.size(), other.coeffs.size()), 0);
  for (unsigned d = 0; d < r.coeffs.size(); ++d)
    if (llvm::AddOverflow(coeff(d), other.coeff(d), r.coeffs[d]) ||
        !isRepresentable(r.coeffs[d]))
      return std::nullopt;
  if (llvm::AddOverflow(constant, other.constant, r.constant) ||
      !isRepresentable(r.constant))
    return std::nullopt;
  r.trim();
  return r;
}

std::optional<LinearForm> LinearForm::scale(int64_t factor) const {
  LinearForm r = *this;
  for (int64_t &c : r.coeffs)
    if (llvm::MulOverflow(c, factor, c) || !isRepresentable(c))
      return std::nullopt;
  if (llvm::MulOverflow(constant, factor, r.constant) ||
      !isRepresentable(r.constant))
    return std::nullopt;
  r.trim();
  return r;
}

std::optional<LinearForm> LinearForm::sub(const LinearForm &other) const {
  std::optional<LinearForm> neg = other.scale(-1);
  if (!neg)
    return std::nullopt;
  return add(*neg);
}

AffineExpr LinearForm::toAffineExpr(MLIRContext *ctx) const {
  AffineExpr result;
  for (unsigned d = 0; d < coeffs.size(); ++d) {
    if (coeffs[d] == 0)
      continue;
    AffineExpr term = getAffineDimExpr(d, ctx);
    if (coeffs[d] != 1)
      term = term * coeffs[d];
    result = result ? result + term : term;
  }
  if (!result)
    return getAffineConstantExpr(constant, ctx);
  if (constant != 0)
    result = result + constant;
  return result;
}

std::optional<LinearForm> LinearForm::fromAffineExpr(AffineExpr expr) {
  switch (expr.getKind()) {
  case AffineExprKind::Constant: {
    int64_t value = cast<AffineConstantExpr>(expr).getValue();
    if (!isRepresentable(value))
      return std::nullopt;
    return ofConstant(value);
  }
  case AffineExprKind::DimId:
    return ofDim(cast<AffineDimExpr>(expr).getPosition());
  case AffineExprKind::Add: {
    auto bin = cast<AffineBinaryOpExpr>(expr);
    std::optional<LinearForm> lhs = fromAffineExpr(bin.getLHS());
    std::optional<LinearForm> rhs = fromAffineExpr(bin.getRHS());
    if (!lhs || !rhs)
      return std::nullopt;
    return lhs->add(*rhs);
  }
  case AffineExprKind::Mul: {
    auto bin = cast<AffineBinaryOpExpr>(expr);
    std::optional<LinearForm> lhs = fromAffineExpr(bin.getLHS());
    std::optional<LinearForm> rhs = fromAffineExpr(bin.getRHS());
    if (!lhs || !rhs)
      return std::nullopt;
    if (rhs->isConstant())
      return lhs->scale(rhs->constant);
    if (lhs->isConstant())
      return rhs->scale(lhs->constant);
    return std::nullopt;
  }
  default:
    return std::nullopt;
  }
}

void LinearForm::print(raw_ostream &os, StringRef sep) const {
  bool first = true;
  auto emitSign = [&](bool negative) {
    if (first) {
      if (negative)
        os << "-";
    } else {
      os << sep << (negative ? "-" : "+") << sep;
    }
    first = false;
  };
  for (unsigned d = 0; d < coeffs.size(); ++d) {
    int64_t c = coeffs[d];
    if (c == 0)
      continue;
    emitSign(c < 0);
    os << "{" << d << "}";
    // Print the magnitude; INT64_MIN has no positive counterpart, so print
    // it through an unsigned value.
    uint64_t mag = c < 0 ? 0 - uint64_t(c) : uint64_t(c);
    if (mag != 1)
      os << sep << "*" << sep << mag;
  }
  if (first) {
    os << constant;
    return;
  }
  if (constant != 0) {
    emitSign(constant < 0);
    os << (constant < 0 ? 0 - uint64_t(constant) : uint64_t(constant));
  }
}

std::pair<__int128, __int128>
LinearForm::range(ArrayRef<int64_t> extents) const {
  assert(getNumDims() <= extents.size() && "form refers to unknown scopes");
  __int128 lo = constant, hi = constant;
  for (unsigned d = 0; d < coeffs.size(); ++d) {
    __int128 span = (__int128)coeffs[d] * (extents[d] - 1);
    if (span < 0)
      lo += span;
    else
      hi += span;
  }
  return {lo, hi};
}
