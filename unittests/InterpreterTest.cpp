//===- InterpreterTest.cpp - Reference interpreter semantics --------------===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Search/Interpreter.h"
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
