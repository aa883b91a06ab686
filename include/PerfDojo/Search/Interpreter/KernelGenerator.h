//===- KernelGenerator.h - Random kernels that verify and run ---*- C++ -*-===//
//
// Seeded random kernels for the move fuzzer (pd-walk --random-kernels) and
// for anything else that needs many small, varied programs. A kernel is a
// sequence of *stages*; each stage computes one new array from inputs,
// constants, iteration variables and the arrays of earlier stages:
//
//   - an elementwise map: one primitive (unary, binary, fma, select, cast,
//     comparisons), sometimes followed by an in-place update of the result;
//   - a reduction (+=, max=, min=, *=) over one or two more axes, after an
//     initialization with the identity or with another array.
//
// Arrays are indexed by *axes*: the kernel draws 2 to 5 axes with extents
// 1..8 or 16; every scope iterates over one axis. Operands with fewer axes
// than their operation are broadcast; outputs may be transposed or flatten
// two axes into one dimension (`t[{1}*4+{0}]`); inputs are also read
// through affine indices (`{0}+{2}` windows, strides, reversal, shifts and
// constants). Consecutive operations share their leading scopes at random,
// so nests hold several operations (`|` bars in the text form). Element
// types are f32, f64 and i32.
//
// Every generated kernel verifies and runs in the interpreter: no element is
// read before it is written, values stay within a few thousand (interval
// arithmetic decides which primitive may follow which), no NaN or infinity
// arises, integers never divide by zero, and a float-to-integer cast or a
// comparison only ever sees values that the compiled float32 code holds
// exactly, so that the compiled kernel can be checked against the float64
// interpreter.
//
// Generation is deterministic in (seed, size) on every platform, and the
// kernel of size n is the kernel of size n+1 without its last stage (an
// array that only the last stage read becomes an `out` buffer): a failure
// found on a large kernel can be retried on its prefixes.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SEARCH_INTERPRETER_KERNELGENERATOR_H
#define PERFDOJO_SEARCH_INTERPRETER_KERNELGENERATOR_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"
#include <cstdint>
#include <string>

namespace mlir {
namespace perfdojo {

struct RandomKernelOptions {
  /// The number of stages (at least 1).
  unsigned size = 4;
  /// The most iterations one operation may execute (the product of the
  /// extents of the scopes around it).
  int64_t maxIterations = 1024;
};

/// SplitMix64's finalizer: a fixed, portable 64-bit mix, for deriving
/// independent seeds (of stages here, of walks and kernels in pd-walk).
uint64_t mixSeed(uint64_t x);

/// The text form of the random kernel of `seed` and `options`, named `name`
/// (an identifier). The text is valid but not canonical; import it with
/// importTextForm or use generateRandomKernel.
std::string generateRandomKernelText(uint64_t seed,
                                     const RandomKernelOptions &options,
                                     StringRef name);

/// The random kernel of `seed` and `options`, imported and verified (a
/// module holding one perfdojo.kernel named `name`). Null, with the
/// diagnostics emitted on `context`, if the generator produced a kernel that
/// does not verify (a bug of the generator).
OwningOpRef<ModuleOp> generateRandomKernel(MLIRContext *context, uint64_t seed,
                                           const RandomKernelOptions &options,
                                           StringRef name);

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SEARCH_INTERPRETER_KERNELGENERATOR_H
