//===- GPUTarget.h - pd-run --target=cuda|rocm -------------------*- C++
//-*-===//

#ifndef PERFDOJO_TOOLS_PDRUN_GPUTARGET_H
#define PERFDOJO_TOOLS_PDRUN_GPUTARGET_H

#include "PerfDojo/Conversion/GPU/KernelPackage.h"
#include "PerfDojo/Search/Interpreter/Interpreter.h"

namespace mlir {
namespace perfdojo {

struct GPURunOptions {
  KernelPackageOptions package;
  /// Where to write the package; empty: a temporary folder, run at once.
  std::string emitPackage;
  /// A kernel file to check against (its package goes to reference/).
  std::string checkAgainst;
  double tolerance = 1e-4;
  /// Expected outputs larger than this (as float64) are written as a
  /// sample of `sampleSize` values each.
  uint64_t maxExpectedBytes = uint64_t(32) << 20;
  int64_t sampleSize = 65536;
  unsigned warmup = 1, repetitions = 5;
  double timeLimit = 60;
};

/// The first kernel of the file at `path` (text form or MLIR), parsed into
/// `holder`; null, with the errors printed, if there is none.
KernelOp loadFirstKernel(StringRef path, MLIRContext *ctx,
                         OwningOpRef<ModuleOp> &holder);

/// Builds `kernel`'s package (checked against `interpreted` when given and
/// small enough, else against --check-against or the kernel's original
/// program) and, without --emit-package, runs it with the pd-gpu-run found
/// beside `argv0`. Returns the exit status.
int runOnGPU(KernelOp kernel, const Interpreter *interpreted,
             const GPURunOptions &options, const char *argv0);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDRUN_GPUTARGET_H
