//===- LinearFormTest.cpp - LinearForm arithmetic and printing ------------===//

#include "PerfDojo/Dialect/PerfDojo/LinearForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"
#include <cmath>
#include <limits>

using namespace mlir;
using namespace mlir::perfdojo;

static std::string print(const LinearForm &f, StringRef sep = "") {
  std::string text;
  llvm::raw_string_ostream os(text);
  f.print(os, sep);
  return text;
}

TEST(LinearForm, PrintsCanonically) {
  LinearForm f = *LinearForm::ofDim(1).add(LinearForm::ofDim(0).scale(64).value());
  EXPECT_EQ(print(f), "{0}*64+{1}");
  EXPECT_EQ(print(*f.add(LinearForm::ofConstant(-3))), "{0}*64+{1}-3");
  EXPECT_EQ(print(*LinearForm::ofDim(2).scale(-1)), "-{2}");
  EXPECT_EQ(print(LinearForm::ofConstant(0)), "0");
  EXPECT_EQ(print(f, " "), "{0} * 64 + {1}");
}

TEST(LinearForm, CancellingTermsLeaveNoTrailingZeros) {
  LinearForm f = *LinearForm::ofDim(3).sub(LinearForm::ofDim(3));
  EXPECT_TRUE(f.isConstant());
  EXPECT_EQ(f.getNumDims(), 0u);
}

TEST(LinearForm, OverflowIsDetected) {
  LinearForm big = LinearForm::ofConstant(std::numeric_limits<int64_t>::max());
  EXPECT_FALSE(big.add(LinearForm::ofConstant(1)).has_value());
  EXPECT_FALSE(LinearForm::ofDim(0).scale(std::numeric_limits<int64_t>::max())
                   ->scale(2)
                   .has_value());
}

TEST(LinearForm, RangeIsExact) {
  // {0}*4 - {1} + 2 over {0} in [0,9], {1} in [0,3]: [-1, 38].
  LinearForm f = *LinearForm::ofDim(0).scale(4)->sub(LinearForm::ofDim(1));
  f = *f.add(LinearForm::ofConstant(2));
  auto [lo, hi] = f.range({10, 4});
  EXPECT_EQ((long long)lo, -1);
  EXPECT_EQ((long long)hi, 38);
}

TEST(LinearForm, AffineRoundTrip) {
  MLIRContext ctx;
  LinearForm f = *LinearForm::ofDim(0).scale(-7)->add(LinearForm::ofDim(2));
  AffineExpr e = f.toAffineExpr(&ctx);
  EXPECT_EQ(*LinearForm::fromAffineExpr(e), f);
  // Division is not linear.
  EXPECT_FALSE(LinearForm::fromAffineExpr(getAffineDimExpr(0, &ctx)
                                              .floorDiv(2))
                   .has_value());
}

TEST(FormatConstant, ShortestRoundTrip) {
  for (double v : {0.0, 0.5, 1e-05, -1.5, 0.1, 1.0 / 3.0, 1e300, 123456789.0,
                   -0.0}) {
    std::string text = formatConstant(v);
    EXPECT_EQ(std::strtod(text.c_str(), nullptr), v) << text;
    EXPECT_EQ(std::signbit(std::strtod(text.c_str(), nullptr)),
              std::signbit(v))
        << text;
  }
  EXPECT_EQ(formatConstant(0.1), "0.1");
  EXPECT_EQ(formatConstant(1e-05), "1e-05");
  EXPECT_EQ(formatConstant(-INFINITY), "-inf");
  EXPECT_EQ(formatConstant(NAN), "nan");
}
