//===- InputGenerator.h - The seeded inputs of every evaluator --*- C++ -*-===//
//
// Header-only and free of LLVM and MLIR, so that the standalone GPU runner
// (tools/pd-gpu-run), which builds with nothing but a C++ compiler, draws
// exactly the inputs that the interpreter and the CPU evaluator draw.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_SUPPORT_INPUTGENERATOR_H
#define PERFDOJO_SUPPORT_INPUTGENERATOR_H

#include <cmath>
#include <cstdint>

namespace mlir {
namespace perfdojo {

/// The seeded input values every evaluator uses (splitmix64: tiny, fully
/// specified, identical on every platform): floats uniform in [-1, 1),
/// integers uniform in [-8, 8]. Inputs are drawn buffer by buffer in
/// declaration order, elements in row-major order; a float buffer of a
/// narrower type stores each value rounded to nearest.
class InputGenerator {
public:
  explicit InputGenerator(uint64_t seed) : state(seed) {}
  double nextFloat() { return std::ldexp(double(next() >> 11), -52) - 1.0; }
  int64_t nextInt() { return int64_t(next() % 17) - 8; }

private:
  uint64_t next() {
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t state;
};

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_SUPPORT_INPUTGENERATOR_H
