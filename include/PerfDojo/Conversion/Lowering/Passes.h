//===- Passes.h - Lowering perfdojo kernels ----------------------*- C++ -*-===//
//
// `convert-perfdojo-to-standard` turns kernels into functions over memrefs;
// `pd-lower-to-llvm` continues to the LLVM dialect for the CPU, ready for
// the ExecutionEngine or mlir-translate.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_CONVERSION_LOWERING_PASSES_H
#define PERFDOJO_CONVERSION_LOWERING_PASSES_H

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"

namespace mlir {
namespace perfdojo {
class KernelOp;

#define GEN_PASS_DECL
#include "PerfDojo/Conversion/Lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "PerfDojo/Conversion/Lowering/Passes.h.inc"

/// Adds the passes from perfdojo kernels to the LLVM dialect (CPU, OpenMP
/// for parallel scopes) to `pm`.
/// Options of the `pd-lower-to-llvm` pipeline.
struct LowerToLLVMOptions : public PassPipelineOptions<LowerToLLVMOptions> {
  Option<int64_t> streamingMinBytes{
      *this, "streaming-min-bytes",
      llvm::cl::desc("Outputs of at least this many bytes that the kernel "
                     "only writes, and heap temporaries of at least 4 times "
                     "as many that parallel scopes write, get non-temporal "
                     "vector stores (0: never)"),
      llvm::cl::init(16 << 20)};
  Option<bool> fpContract{
      *this, "fp-contract",
      llvm::cl::desc("Let a floating-point product fuse with the sum that "
                     "consumes it (fused multiply-add); off: every "
                     "operation rounds"),
      llvm::cl::init(true)};
  Option<bool> prefetchRows{
      *this, "prefetch-rows",
      llvm::cl::desc("The second of several passes over a row of the same "
                     "shape prefetches the row the first pass reads next "
                     "(at most 64 KiB)"),
      llvm::cl::init(true)};
  Option<int64_t> prefetchAhead{
      *this, "prefetch-ahead",
      llvm::cl::desc("A vector scope in a sequential loop that streams a "
                     "row of an input prefetches the element this many "
                     "bytes further on in the input (0: never)"),
      llvm::cl::init(0)};
  Option<bool> reciprocalDivide{
      *this, "reciprocal-divide",
      llvm::cl::desc("A floating-point division by an element that a "
                     "loop's iterations all share multiplies by its "
                     "reciprocal, computed once before the loop; off: "
                     "every division rounds once"),
      llvm::cl::init(true)};
  Option<bool> scalefExp{
      *this, "scalef-exp",
      llvm::cl::desc("exp scales its polynomial by 2^j in one vscalefps "
                     "(x86 CPUs with AVX-512 only)"),
      llvm::cl::init(false)};
};

void buildLowerToLLVMPipeline(OpPassManager &pm,
                              const LowerToLLVMOptions &options = {});

/// A copy of `kernel`, in a module of its own, lowered by
/// buildLowerToLLVMPipeline; null with the diagnostics in `error` when the
/// lowering fails.
OwningOpRef<ModuleOp> lowerKernelToLLVM(KernelOp kernel,
                                        const LowerToLLVMOptions &options,
                                        std::string &error);

/// Replaces every perfdojo.call in `module` with a func.call of the function
/// its kernel became; fails (with an error on the call) where there is no
/// such function of the call's type.
LogicalResult replaceKernelCalls(ModuleOp module);

/// Whether `op` is the fence that pd-fence-streaming-stores puts after a
/// parallel scope's non-temporal stores (x86's sfence, else a seq_cst
/// fence): it orders the thread's own stores and reads no memory.
bool isStreamingStoreFence(Operation *op);

/// Registers the lowering passes and the `pd-lower-to-llvm` pipeline.
void registerLoweringPasses();

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_CONVERSION_LOWERING_PASSES_H
