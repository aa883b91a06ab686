//===- KernelPackage.h - Compiled GPU candidates as folders ------*- C++
//-*-===//
//
// The builder half of PerfDojo's GPU evaluation (TVM MetaSchedule's
// builder/runner split): a kernel is compiled here, where LLVM and MLIR
// are, into a *kernel package*, a folder that `pd-gpu-run` executes and
// times on a GPU machine that has only the driver. docs/GPU.md describes
// the format.
//
//   DIR/package.json      launch plan: kernels in order, grid and block
//                         sizes, buffers (shapes, dtypes, roles), seed,
//                         and how to check the outputs
//   DIR/<kernel>.ptx      the device code (PTX text, or <kernel>.hsaco)
//   DIR/expected/*.npy    expected outputs (check kind "expected")
//   DIR/reference/        a package of the reference program (kind
//                         "reference"), run once on the same inputs
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_CONVERSION_GPU_KERNELPACKAGE_H
#define PERFDOJO_CONVERSION_GPU_KERNELPACKAGE_H

#include "PerfDojo/Conversion/GPU/Passes.h"
#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "llvm/ADT/StringMap.h"

namespace mlir {
namespace perfdojo {

/// The version of the package format `pd-gpu-run` reads.
constexpr int kKernelPackageVersion = 1;

/// How the runner checks a package's outputs.
struct PackageCheck {
  enum class Kind { None, Expected, Reference };
  Kind kind = Kind::None;
  /// Largest accepted |got - expected| relative to the largest |expected|
  /// of each output (the CPU evaluator's rule).
  double tolerance = 1e-4;
  /// Kind::Expected: each output's expected values, as paths relative to
  /// the package: all of them (float64 or int64 .npy of the buffer's
  /// shape), or a sample (1-D .npy of values, 1-D int64 .npy of their
  /// row-major element numbers, and the largest finite |value| of the whole
  /// output, which scales the tolerance).
  struct Expected {
    std::string values, indices;
    double scale = 0;
  };
  llvm::StringMap<Expected> expected;
  /// Kind::Reference: the subfolder holding the reference's package.
  std::string reference = "reference";
};

struct KernelPackageOptions {
  GPUApi api = GPUApi::Cuda;
  /// Empty: the pipeline's default (sm_90, gfx942).
  std::string chip, features, toolkit;
  int optLevel = 3;
  int64_t maxThreadsPerBlock = 1024, maxSharedBytes = 49152;
  bool fpContract = true;
  /// The seed of the inputs the runner draws (InputGenerator).
  uint64_t seed = 1;
};

/// What building a package found, for the caller's report.
struct KernelPackageSummary {
  std::string binaryPath;
  size_t binaryBytes = 0;
  unsigned launches = 0;
  double compileSeconds = 0;
};

/// One kernel launch of a lowered kernel's host function.
struct LaunchPlan {
  std::string function;
  int64_t grid[3] = {1, 1, 1}, block[3] = {1, 1, 1};
  /// The buffers passed, by name (`perfdojo.args`).
  SmallVector<std::string> args;
};

/// The launches, in order, of the host function `name` that
/// `convert-perfdojo-to-gpu` made in `module`.
SmallVector<LaunchPlan> readLaunchPlan(ModuleOp module, StringRef name);

/// Compiles `kernel` for the GPU with `pd-lower-to-nvvm` or
/// `pd-lower-to-rocdl` and writes its package into `dir` (created if
/// needed). `kernel` is not modified. Fails with a diagnostic (lowering
/// refusals) or with `error` set (files).
FailureOr<KernelPackageSummary>
writeKernelPackage(KernelOp kernel, StringRef dir,
                   const KernelPackageOptions &options,
                   const PackageCheck &check, std::string &error);

/// Registers what compiling for GPUs needs in `registry`: the GPU, NVVM,
/// ROCDL and LLVM dialects, their target attributes' serialization and
/// translation to LLVM IR. Not for the mlir-opt plugin (mlir-opt has its
/// own).
void registerGPUTargets(DialectRegistry &registry);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_CONVERSION_GPU_KERNELPACKAGE_H
