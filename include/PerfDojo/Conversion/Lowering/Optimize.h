//===- Optimize.h - LLVM's optimizer for lowered kernels --*- C++ -*-===//
//
// The -O3 pipeline that the JIT evaluator and the kernel library run on a
// lowered kernel's LLVM module, with a guard against a miscompilation of
// LLVM 22's SROA pass.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_CONVERSION_LOWERING_OPTIMIZE_H
#define PERFDOJO_CONVERSION_LOWERING_OPTIMIZE_H

#include "llvm/Support/Error.h"
#include <functional>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace mlir {
namespace perfdojo {

/// Marks volatile every load and store of each stack slot (alloca) that
/// SROA would break: one that a vector load reads across several stores,
/// of different offsets, that write parts of what it reads (a register
/// temporary written 4 and 5 lanes at a time, then read as 9: `5:v t[{0}+4]`
/// then `4:v t[{0}]` then `9:v y[{0}]=t[{0}]`). LLVM 22's SROA rewrites
/// such a slot into one vector value and inserts the widening shuffle of
/// a stored value before that value's definition when a store to a
/// higher offset comes first (`Instruction does not dominate all uses`),
/// and code generation then crashes. Volatile accesses keep the slot in
/// memory, which SROA leaves alone. Only constant offsets from the slot
/// are followed (GEPs with constant indices); a slot used any other way is
/// left as it is (SROA does not turn it into a vector either). Returns how
/// many slots it marked.
unsigned guardPartialVectorSlots(llvm::Module &module);

/// LLVM's -O3 pipeline for `machine` (MLIR's makeOptimizingTransformer),
/// after InstCombine (which folds the memref descriptors' insertvalue and
/// extractvalue pairs, so that each slot's users are plain GEPs, loads and
/// stores) and guardPartialVectorSlots.
std::function<llvm::Error(llvm::Module *)>
makeKernelOptimizer(llvm::TargetMachine *machine);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_CONVERSION_LOWERING_OPTIMIZE_H
