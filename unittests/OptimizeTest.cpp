//===- OptimizeTest.cpp - The guard against LLVM 22's SROA bug ------------===//
//
// guardPartialVectorSlots (lib/Conversion/Lowering/Optimize.cpp) on LLVM IR
// written here: a stack slot of 8 floats stored as two halves, the upper
// half first, then loaded whole. LLVM 22's SROA leaves an invalid function
// behind for it (the widening shuffle of the lower half placed before the
// value it widens); guarded, the verifier accepts what SROA leaves.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/Optimize.h"
#include "llvm/AsmParser/Parser.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Support/SourceMgr.h"
#include "llvm/Transforms/Scalar/SROA.h"
#include "gtest/gtest.h"

using namespace llvm;

namespace {

// A slot of 8 floats stored as two halves, the upper half first.
constexpr const char *kStores = R"(
define void @f(ptr %in, ptr %out) {
  %slot = alloca [8 x float], align 64
  %high = getelementptr float, ptr %slot, i64 4
  %in4 = getelementptr float, ptr %in, i64 4
  %a = load <4 x float>, ptr %in4, align 4
  store <4 x float> %a, ptr %high, align 4
  %b = load <4 x float>, ptr %in, align 4
  store <4 x float> %b, ptr %slot, align 4
)";

// Then loaded whole.
constexpr const char *kWhole = R"(
  %all = load <8 x float>, ptr %slot, align 4
  store <8 x float> %all, ptr %out, align 4
  ret void
}
)";

// Or loaded in the same halves: no load spans two stores, and SROA turns
// the slot into values as usual.
constexpr const char *kHalves = R"(
  %x = load <4 x float>, ptr %slot, align 4
  %y = load <4 x float>, ptr %high, align 4
  %out4 = getelementptr float, ptr %out, i64 4
  store <4 x float> %x, ptr %out, align 4
  store <4 x float> %y, ptr %out4, align 4
  ret void
}
)";

/// kStores followed by `loads`.
std::unique_ptr<Module> parse(const char *loads, LLVMContext &context) {
  SMDiagnostic error;
  std::string text = std::string(kStores) + loads;
  std::unique_ptr<Module> module = parseAssemblyString(text, error, context);
  EXPECT_TRUE(module) << error.getMessage().str();
  return module;
}

/// Runs SROA on every function; true if the verifier then accepts the
/// module.
bool validAfterSROA(Module &module) {
  LoopAnalysisManager loops;
  FunctionAnalysisManager functions;
  CGSCCAnalysisManager cgscc;
  ModuleAnalysisManager modules;
  PassBuilder builder;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  FunctionPassManager sroa;
  sroa.addPass(SROAPass(SROAOptions::ModifyCFG));
  ModulePassManager pipeline;
  pipeline.addPass(createModuleToFunctionPassAdaptor(std::move(sroa)));
  pipeline.run(module, modules);
  return !verifyModule(module, &errs());
}

bool anyVolatile(Module &module) {
  for (Function &function : module)
    for (BasicBlock &block : function)
      for (Instruction &instruction : block)
        if (auto *load = dyn_cast<LoadInst>(&instruction);
            load && load->isVolatile())
          return true;
  return false;
}

/// Parses kStores followed by `loads`, guards it (checking how many slots
/// the guard marks and that their loads became volatile) and runs SROA;
/// whether the verifier accepts the result.
bool guardThenSROA(const char *loads, unsigned guarded) {
  LLVMContext context;
  std::unique_ptr<Module> module = parse(loads, context);
  if (!module)
    return false;
  EXPECT_EQ(mlir::perfdojo::guardPartialVectorSlots(*module), guarded);
  EXPECT_EQ(anyVolatile(*module), guarded != 0);
  return validAfterSROA(*module);
}

TEST(OptimizeTest, GuardsASlotLoadedAcrossStores) {
  EXPECT_TRUE(guardThenSROA(kWhole, 1));
}

TEST(OptimizeTest, LeavesOtherSlotsAlone) {
  EXPECT_TRUE(guardThenSROA(kHalves, 0));
}

// What the guard is for: unguarded, SROA leaves the function invalid.
// (Should a later LLVM fix SROA, this fails, and the guard can go.)
TEST(OptimizeTest, SROABreaksTheUnguardedSlot) {
  LLVMContext context;
  std::unique_ptr<Module> module = parse(kWhole, context);
  ASSERT_TRUE(module);
  EXPECT_FALSE(validAfterSROA(*module));
}

} // namespace
