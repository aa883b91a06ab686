//===- EvaluatorTest.cpp - Cost model, checks and runs of the evaluator ---===//

#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/InitAllPerfDojo.h"
#include "PerfDojo/Search/Evaluator/Evaluator.h"
#include "mlir/IR/MLIRContext.h"
#include "gtest/gtest.h"
#include <cmath>

using namespace mlir;
using namespace mlir::perfdojo;

namespace {
struct Loaded {
  MLIRContext ctx;
  OwningOpRef<ModuleOp> module;
  KernelOp kernel;
  explicit Loaded(StringRef text) {
    DialectRegistry registry;
    registerAllPerfDojo(registry);
    ctx.appendDialectRegistry(registry);
    module = importTextForm(text, "k.pd", &ctx);
    if (module)
      kernel = *module->getOps<KernelOp>().begin();
  }
};

constexpr StringLiteral kScale = R"(kernel scale
in  x f32 [4, 8] heap
out y f32 [4, 8] heap
tmp t f32 [4, 8] heap

4 8 t[{0},{1}]=x[{0},{1}]*2
4 8 y[{0},{1}]=fma(t[{0},{1}],x[{0},{1}],1)
)";

EvaluationResult withOutput(std::vector<double> values, bool isFloat = true) {
  EvaluationResult result;
  OutputData out;
  out.name = "y";
  out.shape = {int64_t(values.size())};
  out.isFloat = isFloat;
  out.values = std::move(values);
  result.outputs.push_back(out);
  return result;
}
} // namespace

TEST(EvaluatorTest, CostCountsBuffersOnceAndFlopsPerPrimitive) {
  Loaded k(kScale);
  ASSERT_TRUE(k.kernel);
  KernelCost cost = getKernelCost(k.kernel);
  // x and y, 32 floats each; the temporary does not count.
  EXPECT_EQ(cost.bytes, 2 * 32 * 4);
  // 32 multiplications and 32 fma (2 each).
  EXPECT_EQ(cost.flops, 32 + 2 * 32);
}

TEST(EvaluatorTest, ComparisonIsRelativeToTheLargestReferenceMagnitude) {
  EvaluationResult reference = withOutput({100, 1, -2});
  EvaluationResult close = withOutput({100, 1.005, -2});
  compareWithReference(reference, 1e-4, close);
  EXPECT_TRUE(close.ok()) << close.reason;
  EXPECT_NEAR(close.maxError, 5e-5, 1e-12);

  EvaluationResult far = withOutput({100, 1.02, -2});
  compareWithReference(reference, 1e-4, far);
  EXPECT_EQ(far.status, EvaluationStatus::WrongAnswer);
  EXPECT_NE(far.reason.find("element 1 of 'y'"), std::string::npos)
      << far.reason;
}

TEST(EvaluatorTest, NaNMustMeetNaNAndIntegersMustBeEqual) {
  EvaluationResult reference = withOutput({1, NAN});
  EvaluationResult same = withOutput({1, NAN});
  compareWithReference(reference, 1e-4, same);
  EXPECT_TRUE(same.ok());
  EvaluationResult nan = withOutput({NAN, NAN});
  compareWithReference(reference, 1e-4, nan);
  EXPECT_EQ(nan.status, EvaluationStatus::WrongAnswer);
  EXPECT_NE(nan.reason.find("(NaN)"), std::string::npos) << nan.reason;

  EvaluationResult ints = withOutput({3, 4}, /*isFloat=*/false);
  EvaluationResult off = withOutput({3, 5}, /*isFloat=*/false);
  compareWithReference(ints, 0.5, off);
  EXPECT_EQ(off.status, EvaluationStatus::WrongAnswer);
}

TEST(EvaluatorTest, CompiledRunMatchesTheInterpreterOnTheSameInputs) {
  Loaded k(kScale);
  ASSERT_TRUE(k.kernel);
  auto interp = Interpreter::create(k.kernel);
  ASSERT_TRUE(succeeded(interp));
  (*interp)->fillInputs(7);
  ASSERT_TRUE(succeeded((*interp)->run()));
  EvaluationOptions options;
  options.seed = 7;
  options.repetitions = 2;
  options.minTimedSeconds = 0;
  EvaluationResult result = evaluate(k.kernel, options, interp->get());
  ASSERT_TRUE(result.ok()) << result.reason;
  EXPECT_EQ(result.times.size(), 2u);
  EXPECT_LT(result.maxError, 1e-6);
  // Another seed gives other inputs: the check must then fail.
  options.seed = 8;
  EvaluationResult other = evaluate(k.kernel, options, interp->get());
  EXPECT_EQ(other.status, EvaluationStatus::WrongAnswer);
}

TEST(EvaluatorTest, AShortKernelIsTimedForTheMinimumTime) {
  Loaded k(kScale);
  ASSERT_TRUE(k.kernel);
  EvaluationOptions options;
  options.repetitions = 3;
  options.minTimedSeconds = 0.002;
  EvaluationResult result = evaluate(k.kernel, options);
  ASSERT_TRUE(result.ok()) << result.reason;
  // 32 elements take well under 2 ms a run: more runs than asked for,
  // adding up to the minimum time unless they reached the cap of 1000.
  double total = 0;
  for (double t : result.times)
    total += t;
  EXPECT_GT(result.times.size(), 3u);
  EXPECT_LE(result.times.size(), 1000u);
  EXPECT_TRUE(total >= 0.002 || result.times.size() == 1000u) << total;
  // A kernel slower than the minimum time gets the runs asked for: here
  // the minimum is below one run.
  options.minTimedSeconds = 1e-12;
  EvaluationResult exact = evaluate(k.kernel, options);
  ASSERT_TRUE(exact.ok()) << exact.reason;
  EXPECT_EQ(exact.times.size(), 3u);
}

TEST(EvaluatorTest, GPUMappingsAreNamedAsCPUIncompatible) {
  Loaded k(R"(kernel g
in  x f32 [8] heap
out y f32 [8] heap

8:g y[{0}]=x[{0}]
)");
  ASSERT_TRUE(k.kernel);
  std::optional<std::string> why = getCPUIncompatibility(k.kernel);
  ASSERT_TRUE(why.has_value());
  EXPECT_EQ(*why, "a scope is mapped grid");
}
