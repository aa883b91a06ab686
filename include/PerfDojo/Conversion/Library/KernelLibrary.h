//===- KernelLibrary.h - Kernels compiled ahead of time ---------*- C++ -*-===//
//
// Library generation: a set of (tuned) kernels compiled ahead of time for a
// CPU into one object per kernel, then a static archive, a shared library
// and a C header with one function per kernel taking plain pointers:
//
//   /* softmax: x f32[24576][512] in, y f32[24576][512] out */
//   void pd_softmax(const float *x, float *y);
//
// Each buffer is dense and row-major (C order), in declaration order,
// inputs const. Beside it, `pd_softmax_ws(x, y, workspace)` takes the
// temporaries from a caller's block of `pd_softmax_workspace_size()` bytes.
// Everything but those functions has internal linkage, so libraries of
// different kernels link together.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_CONVERSION_LIBRARY_KERNELLIBRARY_H
#define PERFDOJO_CONVERSION_LIBRARY_KERNELLIBRARY_H

#include "PerfDojo/Dialect/PerfDojo/PerfDojo.h"
#include "mlir/Support/LLVM.h"
#include <string>
#include <vector>

namespace mlir {
namespace perfdojo {

/// One kernel of a library: the program to compile and where it comes from
/// (written into the header).
struct LibraryKernel {
  KernelOp program;
  /// E.g. "moves from softmax.moves (21 moves)", "tuning database: 5.81 ms".
  std::string origin;
};

struct LibraryOptions {
  /// The library's name: lib<name>.a, lib<name>.so, <name>.h.
  std::string name;
  /// Prefix of every function (default: `<name>_`).
  std::string prefix;
  /// The CPU compiled for: `host` (this machine's CPU and features) or an
  /// LLVM CPU name (`x86-64-v3`, `znver4`, `skylake-avx512`), with extra
  /// `features` (`+avx2,-avx512f`).
  std::string cpu = "host";
  std::string features;
  /// Lowering options (see LowerToLLVMOptions).
  int64_t streamingMinBytes = 16 << 20;
  bool fpContract = true;
  bool prefetchRows = true;
  int64_t prefetchAhead = 0;
  bool reciprocalDivide = true;
  /// The C compiler driver that links the shared library (clang), and the
  /// folder of the OpenMP runtime (libomp) parallel kernels call.
  std::string linker;
  std::string openmpDir;
};

/// What writeKernelLibrary made.
struct LibraryFiles {
  std::string header, archive, shared;
  std::vector<std::string> objects;
};

/// Compiles `kernels` into `dir` (created if needed). Fails with `error`
/// naming the kernel and the step (lowering, code generation, linking).
FailureOr<LibraryFiles> writeKernelLibrary(ArrayRef<LibraryKernel> kernels,
                                           StringRef dir,
                                           const LibraryOptions &options,
                                           std::string &error);

/// The C declaration of a kernel's function, as the header has it; with
/// `workspace`, of its `_ws` function, which takes the caller's workspace.
std::string getLibraryDeclaration(KernelOp kernel, StringRef prefix,
                                  bool workspace = false);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_CONVERSION_LIBRARY_KERNELLIBRARY_H
