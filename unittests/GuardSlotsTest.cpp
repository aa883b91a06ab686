//===- GuardSlotsTest.cpp - The guard against LLVM 22's SROA bug ----------===//
//
// pd-guard-partial-vector-slots (lib/Conversion/Lowering/
// GuardPartialVectorSlots.cpp) on LLVM dialect written here: a stack slot
// of 8 floats stored as two halves, the upper half first, then loaded
// whole. Translated to LLVM IR, LLVM 22's InstCombine and SROA (the start
// of -O3) leave an invalid function behind for it (the widening shuffle of
// the lower half placed before the value it widens); guarded, the verifier
// accepts what they leave.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/IR/Verifier.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"
#include "llvm/Transforms/Scalar/SROA.h"
#include "gtest/gtest.h"

using namespace mlir;

namespace {

// A slot of 8 floats stored as two halves, the upper half first.
constexpr const char *kStores = R"(
llvm.func @f(%in: !llvm.ptr, %out: !llvm.ptr) {
  %n = llvm.mlir.constant(8 : i64) : i64
  %one = llvm.mlir.constant(1 : i64) : i64
  %two = llvm.mlir.constant(2 : i64) : i64
  %four = llvm.add %two, %two : i64
  %slot = llvm.alloca %n x f32 {alignment = 64 : i64} : (i64) -> !llvm.ptr
  %high = llvm.getelementptr %slot[%four] : (!llvm.ptr, i64) -> !llvm.ptr, f32
  %in4 = llvm.getelementptr %in[4] : (!llvm.ptr) -> !llvm.ptr, f32
  %a = llvm.load %in4 {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
  llvm.store %a, %high {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
  %b = llvm.load %in {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
  llvm.store %b, %slot {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
)";

// Then loaded whole.
constexpr const char *kWhole = R"(
  %all = llvm.load %slot {alignment = 4 : i64} : !llvm.ptr -> vector<8xf32>
  llvm.store %all, %out {alignment = 4 : i64} : vector<8xf32>, !llvm.ptr
  llvm.return
}
)";

// Or loaded in the same halves: no load spans two stores, and SROA turns
// the slot into values as usual.
constexpr const char *kHalves = R"(
  %x = llvm.load %slot {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
  %y = llvm.load %high {alignment = 4 : i64} : !llvm.ptr -> vector<4xf32>
  %out4 = llvm.getelementptr %out[4] : (!llvm.ptr) -> !llvm.ptr, f32
  llvm.store %x, %out {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
  llvm.store %y, %out4 {alignment = 4 : i64} : vector<4xf32>, !llvm.ptr
  llvm.return
}
)";

struct Fixture {
  MLIRContext context;
  Fixture() {
    context.loadDialect<LLVM::LLVMDialect>();
    registerBuiltinDialectTranslation(context);
    registerLLVMDialectTranslation(context);
  }

  /// kStores followed by `loads`, guarded if `guard`.
  OwningOpRef<ModuleOp> build(const char *loads, bool guard) {
    std::string text = std::string(kStores) + loads;
    OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(text, &context);
    EXPECT_TRUE(module);
    if (module && guard) {
      PassManager pm(&context);
      pm.addPass(perfdojo::createGuardPartialVectorSlots());
      EXPECT_TRUE(succeeded(pm.run(*module)));
    }
    return module;
  }
};

/// How many loads and stores are volatile.
unsigned countVolatile(ModuleOp module) {
  unsigned count = 0;
  module.walk([&](Operation *op) {
    if (auto load = dyn_cast<LLVM::LoadOp>(op))
      count += load.getVolatile_();
    if (auto store = dyn_cast<LLVM::StoreOp>(op))
      count += store.getVolatile_();
  });
  return count;
}

/// Translates `module` to LLVM IR and runs InstCombine (which turns the
/// `alloca float, i64 8` into the `[8 x float]` slot SROA works on) and
/// SROA; true if the verifier then accepts the result.
bool validAfterSROA(ModuleOp module) {
  llvm::LLVMContext llvmContext;
  std::unique_ptr<llvm::Module> llvmModule =
      translateModuleToLLVMIR(module, llvmContext);
  if (!llvmModule)
    return false;
  llvm::LoopAnalysisManager loops;
  llvm::FunctionAnalysisManager functions;
  llvm::CGSCCAnalysisManager cgscc;
  llvm::ModuleAnalysisManager modules;
  llvm::PassBuilder builder;
  builder.registerModuleAnalyses(modules);
  builder.registerCGSCCAnalyses(cgscc);
  builder.registerFunctionAnalyses(functions);
  builder.registerLoopAnalyses(loops);
  builder.crossRegisterProxies(loops, functions, cgscc, modules);
  llvm::FunctionPassManager passes;
  passes.addPass(llvm::InstCombinePass());
  passes.addPass(llvm::SROAPass(llvm::SROAOptions::ModifyCFG));
  llvm::ModulePassManager pipeline;
  pipeline.addPass(createModuleToFunctionPassAdaptor(std::move(passes)));
  pipeline.run(*llvmModule, modules);
  return !llvm::verifyModule(*llvmModule, &llvm::errs());
}

TEST(GuardSlotsTest, GuardsASlotLoadedAcrossStores) {
  Fixture fixture;
  OwningOpRef<ModuleOp> module = fixture.build(kWhole, /*guard=*/true);
  ASSERT_TRUE(module);
  // The slot's two stores and its load; not the loads of %in nor the
  // store to %out.
  EXPECT_EQ(countVolatile(*module), 3u);
  EXPECT_TRUE(validAfterSROA(*module));
}

TEST(GuardSlotsTest, LeavesOtherSlotsAlone) {
  Fixture fixture;
  OwningOpRef<ModuleOp> module = fixture.build(kHalves, /*guard=*/true);
  ASSERT_TRUE(module);
  EXPECT_EQ(countVolatile(*module), 0u);
  EXPECT_TRUE(validAfterSROA(*module));
}

// What the guard is for: unguarded, SROA leaves the function invalid.
// (Should a later LLVM fix SROA, this fails, and the guard can go.)
TEST(GuardSlotsTest, SROABreaksTheUnguardedSlot) {
  Fixture fixture;
  OwningOpRef<ModuleOp> module = fixture.build(kWhole, /*guard=*/false);
  ASSERT_TRUE(module);
  EXPECT_FALSE(validAfterSROA(*module));
}

} // namespace
