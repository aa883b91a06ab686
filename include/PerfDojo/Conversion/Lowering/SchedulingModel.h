//===- SchedulingModel.h - The CPU model LLVM schedules kernels by -*- C++ -*-===//
//
// Which scheduling model LLVM's code generator should use for kernels
// compiled for a CPU, where the CPU's own model is known to hurt them. The
// JIT (createHostEngine) and the kernel library (pd-lib) both apply it, so
// that a program is timed with the code that ships.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_CONVERSION_LOWERING_SCHEDULINGMODEL_H
#define PERFDOJO_CONVERSION_LOWERING_SCHEDULINGMODEL_H

#include "llvm/ADT/StringRef.h"
#include <optional>

namespace llvm {
class Module;
} // namespace llvm

namespace mlir {
namespace perfdojo {

/// The CPU whose scheduling model kernels compiled for `cpu` (an LLVM CPU
/// name) are scheduled by instead of `cpu`'s own, or std::nullopt to keep
/// it. "znver4" (AMD Zen 4) gets "generic": LLVM 22's Zen 4 model makes the
/// machine scheduler issue all of a register tile's broadcasts of the
/// filter early, and the register allocator then spills 31 to 37 vectors
/// in each step of a 5 x 5 convolution's tile (10 accumulators, 250
/// multiply-adds); scheduled by the generic model it spills none and runs
/// 1.2x faster (docs/Evaluation.md). Only the scheduling changes: the
/// instructions available are `cpu`'s.
std::optional<llvm::StringRef> getKernelTuneCPU(llvm::StringRef cpu);

/// Gives every function defined in `module` that names no tune CPU of its
/// own the one getKernelTuneCPU(`cpu`) chooses, if any.
void setKernelTuneCPU(llvm::Module &module, llvm::StringRef cpu);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_CONVERSION_LOWERING_SCHEDULINGMODEL_H
