//===- Passes.h - Lowering perfdojo kernels for GPUs -------------*- C++
//-*-===//
//
// `convert-perfdojo-to-gpu` turns kernels into gpu.func kernels and a host
// function that launches them; `pd-lower-to-nvvm` and `pd-lower-to-rocdl`
// continue to PTX (CUDA) and HSACO (ROCm) inside `gpu.binary` ops.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_CONVERSION_GPU_PASSES_H
#define PERFDOJO_CONVERSION_GPU_PASSES_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/GPU/IR/GPUDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassOptions.h"

namespace mlir {
namespace perfdojo {

#define GEN_PASS_DECL
#include "PerfDojo/Conversion/GPU/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "PerfDojo/Conversion/GPU/Passes.h.inc"

/// The GPU APIs PerfDojo generates code for.
enum class GPUApi { Cuda, Hip };

/// Options of the `pd-lower-to-nvvm` and `pd-lower-to-rocdl` pipelines.
struct LowerToGPUOptions : public PassPipelineOptions<LowerToGPUOptions> {
  Option<std::string> chip{
      *this, "gpu-chip",
      llvm::cl::desc("The GPU to generate code for (default: sm_90 for "
                     "NVVM, gfx942 for ROCDL)"),
      llvm::cl::init("")};
  Option<std::string> features{
      *this, "gpu-features",
      llvm::cl::desc("Target features (default: +ptx80 for NVVM)"),
      llvm::cl::init("")};
  Option<int> optLevel{*this, "opt-level",
                       llvm::cl::desc("LLVM optimization level (0-3)"),
                       llvm::cl::init(3)};
  Option<std::string> format{
      *this, "format",
      llvm::cl::desc("What gpu-module-to-binary produces: 'isa' (PTX or "
                     "AMDGPU assembly text), 'bin' (a cubin, which needs "
                     "ptxas, or an HSACO, which needs ld.lld), 'llvm' (LLVM "
                     "IR bitcode) or '' (the target's default: isa for NVVM, "
                     "bin for ROCDL)"),
      llvm::cl::init("")};
  Option<std::string> toolkit{
      *this, "toolkit",
      llvm::cl::desc("Toolkit folder for gpu-module-to-binary: ROCm's "
                     "(holding llvm/bin/ld.lld) or the CUDA Toolkit's "
                     "(default: the ld.lld folder PerfDojo was configured "
                     "with, for ROCDL)"),
      llvm::cl::init("")};
  Option<int64_t> maxThreadsPerBlock{
      *this, "max-threads-per-block",
      llvm::cl::desc("The most threads a block may have"),
      llvm::cl::init(1024)};
  Option<int64_t> maxSharedBytes{
      *this, "max-shared-bytes",
      llvm::cl::desc("The most bytes of shared memory a block may use"),
      llvm::cl::init(49152)};
  Option<bool> fpContract{
      *this, "fp-contract",
      llvm::cl::desc("Let a floating-point product fuse with the sum that "
                     "consumes it"),
      llvm::cl::init(true)};
  Option<bool> toBinary{
      *this, "to-binary",
      llvm::cl::desc("Finish with gpu-module-to-binary (off: stop at the "
                     "NVVM or ROCDL dialect)"),
      llvm::cl::init(true)};
};

/// Adds the passes from perfdojo kernels to a `gpu.binary` for `api` to
/// `pm`.
void buildLowerToGPUPipeline(OpPassManager &pm, GPUApi api,
                             const LowerToGPUOptions &options);

/// The window of each dimension of the shared `buffer` that a block
/// stores, given the operations `ops` of one launch that access it: W > 0
/// where every access indexes the dimension by c {g} + r, the same grid
/// variable g (g < `gridDepth`, the number of grid scopes chained at the
/// top of the launch, around every operation of it) and coefficient c for
/// all, r a form of the other variables (and a constant) within [0, c) in
/// every iteration, W the largest r plus 1 (1 for {g} alone: the block's
/// coordinate); 0 where the block may touch any index. A block then stores
/// W slots, indexed by r (mod the dimension's reuse, if any).
SmallVector<int64_t> getPerBlockDims(BufferOp buffer, ArrayRef<ComputeOp> ops,
                                     unsigned gridDepth);

/// Whether every access to the temporary `buffer` by `ops` (in program
/// order) lies in one top-level child (a launch) under the same innermost
/// thread scope (or none), and indexes the same element by grid and thread
/// variables alone, or variables of sequential or unrolled scopes around
/// every access (no other loop's, no vector variable), the first a plain
/// write: each thread then reads only the element it wrote in the same
/// iteration of those loops (the mappings' legality keeps threads from
/// sharing written elements), and the lowering keeps a heap temporary so
/// used in a register of each thread, not in device memory.
bool isThreadPrivateElement(BufferOp buffer, ArrayRef<ComputeOp> ops);

/// Registers the passes and the `pd-lower-to-nvvm` / `pd-lower-to-rocdl`
/// pipelines.
void registerGPULoweringPasses();

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_CONVERSION_GPU_PASSES_H
