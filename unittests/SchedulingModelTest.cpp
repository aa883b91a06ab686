//===- SchedulingModelTest.cpp - The scheduling model kernels get ---------===//
//
// getKernelTuneCPU and setKernelTuneCPU (lib/Conversion/Lowering/
// SchedulingModel.cpp), and the reason for them: the register tile of a
// 5 x 5 convolution (5 output channels x 2 rows x 16 lanes, 250
// multiply-adds a step of its loop), lowered and compiled for AMD Zen 4
// by LLVM 22 at -O3, spills vectors inside its loop when scheduled by the
// Zen 4 model and none when scheduled by the generic one. The second is a
// canary: should a later LLVM schedule it without spills, the override is
// no longer needed.
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/Passes.h"
#include "PerfDojo/Conversion/Lowering/SchedulingModel.h"
#include "PerfDojo/Conversion/TextForm.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/TargetParser/Triple.h"
#include "gtest/gtest.h"

using namespace mlir;
using namespace mlir::perfdojo;

namespace {

TEST(SchedulingModel, OnlyZen4IsScheduledByAnotherModel) {
  EXPECT_EQ(getKernelTuneCPU("znver4"), std::optional<llvm::StringRef>(
                                            llvm::StringRef("generic")));
  for (const char *cpu : {"znver3", "sapphirerapids", "x86-64-v4", "generic"})
    EXPECT_EQ(getKernelTuneCPU(cpu), std::nullopt) << cpu;
}

TEST(SchedulingModel, SetsDefinedFunctionsThatNameNone) {
  llvm::LLVMContext context;
  llvm::Module module("m", context);
  auto *type = llvm::FunctionType::get(llvm::Type::getVoidTy(context), false);
  auto define = [&](const char *name) {
    auto *f = llvm::Function::Create(type, llvm::Function::ExternalLinkage,
                                     name, module);
    llvm::ReturnInst::Create(context, llvm::BasicBlock::Create(context, "", f));
    return f;
  };
  llvm::Function *kernel = define("kernel");
  llvm::Function *own = define("own");
  own->addFnAttr("tune-cpu", "sapphirerapids");
  llvm::Function *declared = llvm::Function::Create(
      type, llvm::Function::ExternalLinkage, "declared", module);

  setKernelTuneCPU(module, "sapphirerapids"); // keeps its own model
  EXPECT_FALSE(kernel->hasFnAttribute("tune-cpu"));

  setKernelTuneCPU(module, "znver4");
  EXPECT_EQ(kernel->getFnAttribute("tune-cpu").getValueAsString(), "generic");
  EXPECT_EQ(own->getFnAttribute("tune-cpu").getValueAsString(),
            "sapphirerapids");
  EXPECT_FALSE(declared->hasFnAttribute("tune-cpu"));
}

// The expert's program for a small 5 x 5 convolution (its tile as on the
// suite's conv_8x10x3x512x512x5), without the parallel scope.
constexpr const char *kConvTile = R"(kernel conv_tile
in  x f32 [2, 3, 12, 36] heap
in  w f32 [10, 3, 5, 5] heap
out y f32 [2, 10, 8, 32] heap

2 2 4 2 5:u 2:u 16:v y[{0},{1}*5+{4},{2}*2+{5},{3}*16+{6}]=0
| | | | 3 5:u 5:u 5:u 2:u 16:v y[{0},{1}*5+{7},{2}*2+{8},{3}*16+{9}]+=x[{0},{4},{2}*2+{5}+{8},{3}*16+{6}+{9}]*w[{1}*5+{7},{4},{5},{6}]
)";

/// The vectors spilled in the innermost loops of the tile compiled for
/// Zen 4 (the assembly's "Spill" comments between a loop's header and its
/// back branch), the tune CPU given by setKernelTuneCPU if `tune`; -1 where
/// the host is not x86.
int spillsInLoops(bool tune) {
  // The host's target, which is x86 wherever this can run.
  llvm::InitializeNativeTarget();
  llvm::InitializeNativeTargetAsmPrinter();
  std::string error;
  llvm::Triple triple("x86_64-unknown-linux-gnu");
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return -1;
  // Verbose assembly: the loops' and spills' comments.
  llvm::TargetOptions targetOptions;
  targetOptions.MCOptions.AsmVerbose = true;
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, "znver4", "", targetOptions, llvm::Reloc::PIC_,
      std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  if (!machine)
    return -1;

  MLIRContext ctx;
  ctx.loadDialect<PerfDojoDialect>();
  registerBuiltinDialectTranslation(ctx);
  registerLLVMDialectTranslation(ctx);
  OwningOpRef<ModuleOp> module = importTextForm(kConvTile, "tile.pd", &ctx);
  EXPECT_TRUE(module);
  if (!module)
    return -1;
  auto kernel = *module->getOps<KernelOp>().begin();
  LowerToLLVMOptions options;
  OwningOpRef<ModuleOp> lowered = lowerKernelToLLVM(kernel, options, error);
  EXPECT_TRUE(lowered) << error;
  if (!lowered)
    return -1;
  llvm::LLVMContext context;
  std::unique_ptr<llvm::Module> ir =
      translateModuleToLLVMIR(*lowered, context, "tile");
  EXPECT_TRUE(ir);
  if (!ir)
    return -1;
  ir->setDataLayout(machine->createDataLayout());
  ir->setTargetTriple(triple);
  if (tune)
    setKernelTuneCPU(*ir, machine->getTargetCPU());
  EXPECT_FALSE(bool(makeOptimizingTransformer(3, 0, machine.get())(ir.get())));

  std::string assembly;
  {
    llvm::raw_string_ostream out(assembly);
    llvm::buffer_ostream buffer(out);
    llvm::legacy::PassManager codegen;
    EXPECT_FALSE(machine->addPassesToEmitFile(
        codegen, buffer, nullptr, llvm::CodeGenFileType::AssemblyFile));
    codegen.run(*ir);
  }
  // Each innermost loop: from its header comment to the next branch.
  int spills = 0;
  bool inLoop = false;
  llvm::StringRef rest(assembly);
  while (!rest.empty()) {
    auto [line, next] = rest.split('\n');
    rest = next;
    if (line.contains("Inner Loop Header"))
      inLoop = true;
    else if (inLoop && line.ltrim().starts_with("j"))
      inLoop = false;
    else if (inLoop && line.contains("Spill"))
      ++spills;
  }
  return spills;
}

TEST(SchedulingModel, Zen4TileSpillsOnlyUnderItsOwnModel) {
  int own = spillsInLoops(/*tune=*/false);
  if (own < 0)
    GTEST_SKIP() << "the host is not x86";
  EXPECT_GT(own, 0) << "LLVM's Zen 4 model no longer spills the tile: "
                       "getKernelTuneCPU's override may be unneeded";
  EXPECT_EQ(spillsInLoops(/*tune=*/true), 0);
}

} // namespace
