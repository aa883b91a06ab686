//===- InterpreterTest.cpp - Reference interpreter semantics --------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Search/Interpreter/Interpreter.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
struct KernelRun {
  MLIRContext ctx;
  std::vector<std::string> errors;
  OwningOpRef<ModuleOp> module;
  std::unique_ptr<Interpreter> interp;
  bool ok = false;

  explicit KernelRun(StringRef text, uint64_t seed = 1) {
    ScopedDiagnosticHandler handler(&ctx, [&](Diagnostic &diag) {
      errors.push_back(diag.str());
      return success();
    });
    module = importTextForm(text, "k.pd", &ctx);
    if (!module)
      return;
    KernelOp kernel = *module->getOps<KernelOp>().begin();
    auto created = Interpreter::create(kernel);
    if (failed(created))
      return;
    interp = std::move(*created);
    interp->fillInputs(seed);
    ok = succeeded(interp->run());
  }
  const BufferData &buffer(StringRef name) {
    return *interp->lookupBuffer(name);
  }
};
} // namespace

TEST(Interpreter, RowSumMatchesDirectComputation) {
  KernelRun r("kernel k\nin  x f32 [3, 5] heap\nout y f32 [3] heap\n\n"
        "3 y[{0}]=0\n| 5 y[{0}]+=x[{0},{1}]\n");
  ASSERT_TRUE(r.ok);
  const BufferData &x = r.buffer("x"), &y = r.buffer("y");
  for (int i = 0; i < 3; ++i) {
    double sum = 0;
    for (int j = 0; j < 5; ++j)
      sum += x.floats[i * 5 + j];
    EXPECT_EQ(y.floats[i], sum);
  }
}

TEST(Interpreter, InputsAreUniformInRangeAndSeeded) {
  KernelRun a("kernel k\nin  x f64 [1000] heap\nout y f64 [1] heap\n\ny[0]=1\n", 5);
  KernelRun b("kernel k\nin  x f64 [1000] heap\nout y f64 [1] heap\n\ny[0]=1\n", 5);
  KernelRun c("kernel k\nin  x f64 [1000] heap\nout y f64 [1] heap\n\ny[0]=1\n", 6);
  ASSERT_TRUE(a.ok && b.ok && c.ok);
  EXPECT_EQ(a.buffer("x").floats, b.buffer("x").floats);
  EXPECT_NE(a.buffer("x").floats, c.buffer("x").floats);
  double lo = 1, hi = -1;
  for (double v : a.buffer("x").floats)
    lo = std::min(lo, v), hi = std::max(hi, v);
  EXPECT_GE(lo, -1.0);
  EXPECT_LT(hi, 1.0);
  EXPECT_LT(lo, -0.9);
  EXPECT_GT(hi, 0.9);
}

TEST(Interpreter, ReadBeforeWriteIsAnError) {
  KernelRun r("kernel k\nin  x f32 [4] heap\nout y f32 [4] heap\ntmp m f32 [1] "
        "heap\n\n4 m[0]max=x[{0}]\n| y[{0}]=m[0]\n");
  EXPECT_FALSE(r.ok);
  ASSERT_FALSE(r.errors.empty());
  EXPECT_EQ(r.errors.back(), "'perfdojo.compute' op updates 'm'[0] at "
                             "iteration {0}=0 before it is written");
}

TEST(Interpreter, ReusedDimensionAliasesItsSlots) {
  // t has reuse 1 on dimension 0: t[i] all share one slot, so the second
  // nest reads the value written last (x[3]) for every i.
  KernelRun r("kernel k\nin  x f32 [4] heap\nout y f32 [4] heap\ntmp t f32 [4:1] "
        "heap\n\n4 t[{0}]=x[{0}]\n4 y[{0}]=t[{0}]\n");
  ASSERT_TRUE(r.ok);
  const BufferData &x = r.buffer("x"), &y = r.buffer("y");
  for (int i = 0; i < 4; ++i)
    EXPECT_EQ(y.floats[i], x.floats[3]);
  EXPECT_EQ(r.buffer("t").floats.size(), 1u);
}

TEST(Interpreter, SharedBufferArraysAlias) {
  KernelRun r("kernel k\nin  x f32 [2] heap\nout y f32 [2] heap\ntmp t f32 [2] heap "
        "-> a, b\n\n2 a[{0}]=x[{0}]*2\n2 y[{0}]=b[{0}]\n");
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.buffer("y").floats[1], 2 * r.buffer("x").floats[1]);
}

TEST(Interpreter, IntegerArithmeticWrapsAndChecksDivision) {
  KernelRun wraps("kernel k\nout y i8 [1] heap\n\ny[0]=100\ny[0]+=100\n");
  ASSERT_TRUE(wraps.ok);
  EXPECT_EQ(wraps.buffer("y").ints[0], -56);

  KernelRun divZero("kernel k\nin  x i32 [3] heap\nout y i32 [3] heap\n\n"
              "3 y[{0}]=x[{0}]/0\n");
  EXPECT_FALSE(divZero.ok);
  ASSERT_FALSE(divZero.errors.empty());
  EXPECT_EQ(divZero.errors.back(), "'perfdojo.compute' op divides by zero "
                                   "writing 'y'[0] at iteration {0}=0");
}

TEST(Interpreter, PrimitivesComputeInFloat64) {
  KernelRun r("kernel k\nout y f32 [8] heap\ntmp t f32 [1] heap\n\n"
        "t[0]=0.25\n"
        "y[0]=exp(t[0])\ny[1]=log(t[0])\ny[2]=rsqrt(t[0])\n"
        "y[3]=sigmoid(t[0])\ny[4]=tanh(t[0])\ny[5]=fma(t[0],t[0],1)\n"
        "y[6]=select(0,1,t[0])\ny[7]=t[0]<0.5\n");
  ASSERT_TRUE(r.ok);
  const std::vector<double> &y = r.buffer("y").floats;
  EXPECT_EQ(y[0], std::exp(0.25));
  EXPECT_EQ(y[1], std::log(0.25));
  EXPECT_EQ(y[2], 2.0);
  EXPECT_EQ(y[3], 1.0 / (1.0 + std::exp(-0.25)));
  EXPECT_EQ(y[4], std::tanh(0.25));
  EXPECT_EQ(y[5], 1.0625);
  EXPECT_EQ(y[6], 0.25);
  EXPECT_EQ(y[7], 1.0);
}

TEST(Interpreter, MorePrimitivesAtChosenPoints) {
  KernelRun r("kernel k\nout y f64 [24] heap\ntmp t f64 [1] heap\n\n"
              "t[0]=0.5\n"
              "y[0]=erf(t[0])\ny[1]=sin(t[0])\ny[2]=cos(t[0])\n"
              "y[3]=tan(t[0])\ny[4]=asin(t[0])\ny[5]=acos(t[0])\n"
              "y[6]=atan(t[0])\ny[7]=sinh(t[0])\ny[8]=cosh(t[0])\n"
              "y[9]=asinh(t[0])\ny[10]=acosh(2)\ny[11]=atanh(t[0])\n"
              "y[12]=pow(t[0],-3)\ny[13]=pow(-8,t[0])\n"
              "y[14]=floor(-2.5)\ny[15]=ceil(-2.5)\n"
              "y[16]=round(2.5)\ny[17]=round(3.5)\ny[18]=round(-2.5)\n"
              "y[19]=round(-0.5)\ny[20]=round(2.5000001)\n"
              "y[21]=sign(-0.25)\ny[22]=sign(-0)\ny[23]=sign(nan)\n");
  ASSERT_TRUE(r.ok);
  const std::vector<double> &y = r.buffer("y").floats;
  EXPECT_EQ(y[0], std::erf(0.5));
  EXPECT_EQ(y[1], std::sin(0.5));
  EXPECT_EQ(y[2], std::cos(0.5));
  EXPECT_EQ(y[3], std::tan(0.5));
  EXPECT_EQ(y[4], std::asin(0.5));
  EXPECT_EQ(y[5], std::acos(0.5));
  EXPECT_EQ(y[6], std::atan(0.5));
  EXPECT_EQ(y[7], std::sinh(0.5));
  EXPECT_EQ(y[8], std::cosh(0.5));
  EXPECT_EQ(y[9], std::asinh(0.5));
  EXPECT_EQ(y[10], std::acosh(2.0));
  EXPECT_EQ(y[11], std::atanh(0.5));
  EXPECT_EQ(y[12], 8.0);
  EXPECT_TRUE(std::isnan(y[13])); // C pow: a negative base, a fraction.
  EXPECT_EQ(y[14], -3.0);
  EXPECT_EQ(y[15], -2.0);
  // Halves to even; -0.5 rounds to -0.
  EXPECT_EQ(y[16], 2.0);
  EXPECT_EQ(y[17], 4.0);
  EXPECT_EQ(y[18], -2.0);
  EXPECT_EQ(y[19], 0.0);
  EXPECT_TRUE(std::signbit(y[19]));
  EXPECT_EQ(y[20], 3.0);
  EXPECT_EQ(y[21], -1.0);
  EXPECT_EQ(y[22], 0.0);
  EXPECT_FALSE(std::signbit(y[22]));
  EXPECT_TRUE(std::isnan(y[23]));
}

TEST(Interpreter, RemaindersTruncatedAndFloored) {
  // fmod keeps the sign of the dividend (C), mod takes the divisor's
  // (Python); a zero remainder of mod has the divisor's sign.
  KernelRun f("kernel k\nout y f64 [8] heap\n\n"
              "y[0]=fmod(-7,3)\ny[1]=mod(-7,3)\ny[2]=fmod(7,-3)\n"
              "y[3]=mod(7,-3)\ny[4]=mod(6,-3)\ny[5]=mod(-5.5,2)\n"
              "y[6]=fmod(1,0)\ny[7]=mod(-1,inf)\n");
  ASSERT_TRUE(f.ok);
  const std::vector<double> &y = f.buffer("y").floats;
  EXPECT_EQ(y[0], -1.0);
  EXPECT_EQ(y[1], 2.0);
  EXPECT_EQ(y[2], 1.0);
  EXPECT_EQ(y[3], -2.0);
  EXPECT_EQ(y[4], 0.0);
  EXPECT_TRUE(std::signbit(y[4]));
  EXPECT_EQ(y[5], 0.5);
  EXPECT_TRUE(std::isnan(y[6]));
  EXPECT_EQ(y[7], INFINITY); // as Python's -1 % inf

  KernelRun i("kernel k\nout y i8 [7] heap\ntmp m i8 [1] heap\n\n"
              "m[0]=-128\n"
              "y[0]=fmod(-7,3)\ny[1]=mod(-7,3)\ny[2]=fmod(7,-3)\n"
              "y[3]=mod(7,-3)\ny[4]=fmod(m[0],-1)\ny[5]=mod(m[0],-1)\n"
              "y[6]=sign(m[0])\n");
  ASSERT_TRUE(i.ok);
  const std::vector<int64_t> &n = i.buffer("y").ints;
  EXPECT_EQ(n[0], -1);
  EXPECT_EQ(n[1], 2);
  EXPECT_EQ(n[2], 1);
  EXPECT_EQ(n[3], -2);
  EXPECT_EQ(n[4], 0);
  EXPECT_EQ(n[5], 0);
  EXPECT_EQ(n[6], -1);

  KernelRun byZero("kernel k\nin  x i32 [3] heap\nout y i32 [3] heap\n\n"
                   "3 y[{0}]=mod(x[{0}],0)\n");
  EXPECT_FALSE(byZero.ok);
  ASSERT_FALSE(byZero.errors.empty());
  EXPECT_EQ(byZero.errors.back(),
            "'perfdojo.compute' op takes a remainder of a division by zero "
            "writing 'y'[0] at iteration {0}=0");
}

TEST(Interpreter, CastToIntegerChecksRange) {
  KernelRun ok("kernel k\nout y i32 [1] heap\ntmp t f32 [1] heap\n\n"
         "t[0]=-2.75\ny[0]=cast(t[0])\n");
  ASSERT_TRUE(ok.ok);
  EXPECT_EQ(ok.buffer("y").ints[0], -2);
  KernelRun bad("kernel k\nout y i8 [1] heap\ntmp t f32 [1] heap\n\n"
          "t[0]=300\ny[0]=cast(t[0])\n");
  EXPECT_FALSE(bad.ok);
}

TEST(Interpreter, RefusesKernelsOverTheMemoryLimit) {
  MLIRContext ctx;
  ScopedDiagnosticHandler handler(&ctx, [](Diagnostic &) { return success(); });
  auto module = importTextForm(
      "kernel k\nout y f32 [1048576, 1024] heap\n\n1 y[0,0]=1\n", "k.pd", &ctx);
  ASSERT_TRUE(module);
  KernelOp kernel = *module->getOps<KernelOp>().begin();
  EXPECT_TRUE(failed(Interpreter::create(kernel, uint64_t(1) << 30)));
}
