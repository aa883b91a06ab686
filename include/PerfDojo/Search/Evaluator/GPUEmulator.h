//===- GPUEmulator.h - Run the GPU lowering's kernels on the CPU -*- C++
//-*-===//
//
// Checks the GPU lowering where no GPU is: the kernels that
// convert-perfdojo-to-gpu makes are turned into host functions of a block
// and a thread (pd-gpu-emulate-on-host), JIT-compiled for this CPU, and
// launched in the launch plan's order: the blocks of a launch one after
// another, the threads of a block as concurrent OS threads that meet at
// real barriers, shared memory one allocation a block. A missing guard,
// a wrong thread decomposition or a misplaced private or shared buffer
// gives wrong outputs here as on a GPU; a missing barrier may (the threads
// are scheduled by the OS). Not for timing, and for small shapes only.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_EVALUATOR_GPUEMULATOR_H
#define PERFDOJO_SEARCH_EVALUATOR_GPUEMULATOR_H

#include "PerfDojo/Search/Evaluator/Evaluator.h"

namespace mlir {
namespace perfdojo {

/// How the threads of a block run between barriers.
enum class GPUThreadOrder {
  /// As OS threads, concurrently: a missing barrier may show (the OS
  /// schedules them).
  Concurrent,
  /// One at a time, in increasing thread index, each until its next
  /// barrier: deterministic, and a missing barrier shows whenever a thread
  /// reads what a higher-numbered one writes before the barrier that is
  /// missing (or the other way round for Reverse).
  Forward,
  /// One at a time, in decreasing thread index.
  Reverse,
};

struct GPUEmulatorOptions {
  uint64_t seed = 1;
  GPUThreadOrder order = GPUThreadOrder::Concurrent;
  /// The most thread runs (blocks x threads, over all launches) emulated.
  int64_t maxThreadRuns = int64_t(1) << 22;
  /// The most operations of the lowered kernels compiled for this CPU
  /// (26,000, a kernel unrolled 1,024 times with 83 barriers, took minutes).
  int64_t maxOperations = 8192;
  /// The most barrier waits (each thread run's barriers, loops multiplied
  /// out, plus one a block), a thread switch each in the ordered modes: a
  /// kernel of 256 blocks x 512 threads x 293 barriers ran for minutes.
  int64_t maxBarrierWaits = int64_t(1) << 23;
  int64_t maxThreadsPerBlock = 1024, maxSharedBytes = 49152;
  bool fpContract = true;
};

/// How a CompileError's reason begins when the GPU lowering refuses the
/// kernel (its diagnostics follow), and when the emulator does (more
/// thread runs than GPUEmulatorOptions::maxThreadRuns, more operations
/// than maxOperations to compile): limits of the target or of the
/// emulator, where other compile errors are faults.
inline constexpr llvm::StringLiteral kGPULoweringRefusal =
    "GPU lowering failed: ";
inline constexpr llvm::StringLiteral kEmulatorRefusal =
    "the emulator refuses the kernel: ";

/// Emulates `kernel` as lowered for a GPU, on the seeded inputs; compares
/// its outputs with `reference` when given. The result's status says
/// whether it could be compiled and whether the outputs match.
EvaluationResult emulateGPU(KernelOp kernel, const GPUEmulatorOptions &options,
                            const Interpreter *reference, double tolerance);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_EVALUATOR_GPUEMULATOR_H
