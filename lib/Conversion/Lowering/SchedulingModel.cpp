//===- SchedulingModel.cpp - The CPU model LLVM schedules kernels by ------===//

#include "PerfDojo/Conversion/Lowering/SchedulingModel.h"
#include "llvm/IR/Function.h"
#include "llvm/IR/Module.h"

using namespace mlir;

std::optional<llvm::StringRef>
mlir::perfdojo::getKernelTuneCPU(llvm::StringRef cpu) {
  if (cpu == "znver4")
    return llvm::StringRef("generic");
  return std::nullopt;
}

void mlir::perfdojo::setKernelTuneCPU(llvm::Module &module,
                                      llvm::StringRef cpu) {
  std::optional<llvm::StringRef> tune = getKernelTuneCPU(cpu);
  if (!tune)
    return;
  for (llvm::Function &function : module)
    if (!function.isDeclaration() && !function.hasFnAttribute("tune-cpu"))
      function.addFnAttr("tune-cpu", *tune);
}
