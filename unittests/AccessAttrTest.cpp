//===- AccessAttrTest.cpp - AccessAttr invariants through the C++ API -----===//
//
// The textual parsers always build canonical accesses, so the verifier of
// AccessAttr is reachable only from C++: these tests call getChecked.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
struct AccessAttrTest : public ::testing::Test {
  AccessAttrTest() { ctx.loadDialect<PerfDojoDialect>(); }

  /// getChecked on `map`; returns the diagnostic, or "" if it succeeded.
  std::string check(AffineMap map, StringRef array = "x") {
    std::string message;
    auto emit = [&]() {
      return emitError(UnknownLoc::get(&ctx));
    };
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      message = diag.str();
      return success();
    });
    AccessAttr attr =
        AccessAttr::getChecked(emit, &ctx, StringAttr::get(&ctx, array), map);
    return attr ? "" : message;
  }

  MLIRContext ctx;
};
} // namespace

TEST_F(AccessAttrTest, CanonicalAccessIsAccepted) {
  AffineExpr d0 = getAffineDimExpr(0, &ctx), d1 = getAffineDimExpr(1, &ctx);
  EXPECT_EQ(check(AffineMap::get(2, 0, {d0 * 64 + d1}, &ctx)), "");
}

TEST_F(AccessAttrTest, TermOrderMustBeCanonical) {
  AffineExpr d0 = getAffineDimExpr(0, &ctx), d1 = getAffineDimExpr(1, &ctx);
  EXPECT_EQ(check(AffineMap::get(2, 0, {d1 + d0 * 64}, &ctx)),
            "index expression 'd1 + d0 * 64' of 'x' is not canonical; "
            "expected 'd0 * 64 + d1'");
}

TEST_F(AccessAttrTest, DivisionIsNotLinear) {
  AffineExpr d0 = getAffineDimExpr(0, &ctx);
  EXPECT_EQ(check(AffineMap::get(1, 0, {d0.floorDiv(2)}, &ctx)),
            "index expression 'd0 floordiv 2' of 'x' is not linear in the "
            "scope variables");
}

TEST_F(AccessAttrTest, SymbolsAreRejected) {
  AffineExpr s0 = getAffineSymbolExpr(0, &ctx);
  EXPECT_EQ(check(AffineMap::get(0, 1, {s0}, &ctx)),
            "access map affine_map<()[s0] -> (s0)> must not have symbols");
}

TEST_F(AccessAttrTest, UnusedTrailingDimensionsAreRejected) {
  AffineExpr d0 = getAffineDimExpr(0, &ctx);
  EXPECT_EQ(check(AffineMap::get(3, 0, {d0}, &ctx)),
            "access map of 'x' has 3 dimensions but its deepest reference "
            "needs 1");
}

TEST_F(AccessAttrTest, EmptyNameIsRejected) {
  EXPECT_EQ(check(AffineMap::get(0, 0, {getAffineConstantExpr(0, &ctx)}, &ctx),
                  ""),
            "access needs an array name");
}
