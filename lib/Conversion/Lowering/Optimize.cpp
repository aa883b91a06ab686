//===- Optimize.cpp - LLVM's optimizer for lowered kernels ----------------===//
//
// See Optimize.h. The guard is found by pd-walk: a random walk on relu
// (`add_copy`, `peel_scope`, `vectorize`, `set_location@..:reg`) made a
// register temporary of 9 floats written as 5 lanes then 4 and read as 9,
// and the JIT crashed while compiling it (test/Conversion/sroa-guard.test).
//
//===----------------------------------------------------------------------===//

#include "PerfDojo/Conversion/Lowering/Optimize.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/IR/Instructions.h"
#include "llvm/IR/Module.h"
#include "llvm/IR/PassManager.h"
#include "llvm/Passes/PassBuilder.h"
#include "llvm/Transforms/InstCombine/InstCombine.h"

using namespace llvm;

namespace {
/// A load or store of a stack slot at a constant byte offset.
struct SlotAccess {
  int64_t begin, end;
  Instruction *access;
  bool isStore, isVector;
};
} // namespace

/// Collects every load and store of `slot` through GEPs with constant
/// indices; false if something else uses it (a call, a GEP with a variable
/// index, the pointer stored as a value).
static bool collectAccesses(AllocaInst *slot, const DataLayout &layout,
                            SmallVectorImpl<SlotAccess> &accesses) {
  SmallVector<std::pair<Value *, int64_t>> work = {{slot, 0}};
  while (!work.empty()) {
    auto [pointer, offset] = work.pop_back_val();
    for (User *user : pointer->users()) {
      if (auto *gep = dyn_cast<GetElementPtrInst>(user)) {
        APInt delta(layout.getIndexTypeSizeInBits(gep->getType()), 0);
        if (!gep->accumulateConstantOffset(layout, delta))
          return false;
        work.push_back({gep, offset + delta.getSExtValue()});
      } else if (auto *load = dyn_cast<LoadInst>(user)) {
        Type *type = load->getType();
        accesses.push_back(
            {offset,
             offset + int64_t(layout.getTypeStoreSize(type).getFixedValue()),
             load, false, type->isVectorTy()});
      } else if (auto *store = dyn_cast<StoreInst>(user)) {
        if (store->getValueOperand() == pointer)
          return false;
        Type *type = store->getValueOperand()->getType();
        accesses.push_back(
            {offset,
             offset + int64_t(layout.getTypeStoreSize(type).getFixedValue()),
             store, true, type->isVectorTy()});
      } else if (auto *call = dyn_cast<IntrinsicInst>(user);
                 call && call->isLifetimeStartOrEnd()) {
        continue;
      } else {
        return false;
      }
    }
  }
  return true;
}

unsigned mlir::perfdojo::guardPartialVectorSlots(Module &module) {
  unsigned guarded = 0;
  const DataLayout &layout = module.getDataLayout();
  for (Function &function : module) {
    SmallVector<AllocaInst *> slots;
    for (BasicBlock &block : function)
      for (Instruction &instruction : block)
        if (auto *slot = dyn_cast<AllocaInst>(&instruction))
          slots.push_back(slot);
    for (AllocaInst *slot : slots) {
      SmallVector<SlotAccess> accesses;
      if (!collectAccesses(slot, layout, accesses))
        continue;
      // A vector load over stores that begin at two different offsets
      // inside it.
      bool risky = false;
      for (const SlotAccess &load : accesses) {
        if (load.isStore || !load.isVector)
          continue;
        std::optional<int64_t> first;
        for (const SlotAccess &store : accesses)
          if (store.isStore && store.begin >= load.begin &&
              store.end <= load.end &&
              store.end - store.begin < load.end - load.begin) {
            risky |= first && *first != store.begin;
            first = store.begin;
          }
      }
      if (!risky)
        continue;
      for (const SlotAccess &access : accesses) {
        if (auto *load = dyn_cast<LoadInst>(access.access))
          load->setVolatile(true);
        else
          cast<StoreInst>(access.access)->setVolatile(true);
      }
      ++guarded;
    }
  }
  return guarded;
}

std::function<Error(Module *)>
mlir::perfdojo::makeKernelOptimizer(TargetMachine *machine) {
  auto optimize = makeOptimizingTransformer(3, 0, machine);
  return [optimize, machine](Module *module) -> Error {
    {
      LoopAnalysisManager loops;
      FunctionAnalysisManager functions;
      CGSCCAnalysisManager cgscc;
      ModuleAnalysisManager modules;
      PassBuilder builder(machine);
      builder.registerModuleAnalyses(modules);
      builder.registerCGSCCAnalyses(cgscc);
      builder.registerFunctionAnalyses(functions);
      builder.registerLoopAnalyses(loops);
      builder.crossRegisterProxies(loops, functions, cgscc, modules);
      FunctionPassManager clean;
      clean.addPass(InstCombinePass());
      ModulePassManager pipeline;
      pipeline.addPass(createModuleToFunctionPassAdaptor(std::move(clean)));
      pipeline.run(*module, modules);
    }
    guardPartialVectorSlots(*module);
    return optimize(module);
  };
}
