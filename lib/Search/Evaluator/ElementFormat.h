//===- ElementFormat.h - Buffer elements as bytes ----------------*- C++
//-*-===//
//
// How the evaluators (the CPU JIT, the GPU emulator) store the seeded inputs
// into a buffer's bytes and read its outputs back as doubles. Internal to
// lib/Search/Evaluator.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_LIB_SEARCH_EVALUATOR_ELEMENTFORMAT_H
#define PERFDOJO_LIB_SEARCH_EVALUATOR_ELEMENTFORMAT_H

#include "PerfDojo/Search/Evaluator/Evaluator.h"
#include "PerfDojo/Support/DiagnosticText.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "llvm/ADT/APFloat.h"
#include <cstring>

namespace mlir {
namespace perfdojo {

inline unsigned byteWidth(Type type) {
  return type.getIntOrFloatBitWidth() / 8;
}

inline int64_t elementCount(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

/// How a buffer's elements are stored, decided once per buffer so that the
/// loops over millions of elements do not inspect the type each time.
struct ElementFormat {
  enum Kind { F64, F32, F16, Int } kind;
  /// Bytes per element.
  unsigned width;
  /// For F16: the 16-bit format (IEEE half or bfloat).
  const llvm::fltSemantics *semantics = nullptr;

  static ElementFormat of(Type type) {
    unsigned width = byteWidth(type);
    auto f = dyn_cast<FloatType>(type);
    if (!f)
      return {Int, width};
    if (f.isF64())
      return {F64, width};
    if (f.isF32())
      return {F32, width};
    return {F16, width, &f.getFloatSemantics()};
  }

  /// Stores `value` (floats) or `integer` (integers) at `at`.
  void store(char *at, double value, int64_t integer) const {
    switch (kind) {
    case F64:
      std::memcpy(at, &value, 8);
      return;
    case F32: {
      float v = static_cast<float>(value);
      std::memcpy(at, &v, 4);
      return;
    }
    case F16: {
      bool lost;
      llvm::APFloat v(value);
      v.convert(*semantics, llvm::APFloat::rmNearestTiesToEven, &lost);
      uint16_t bits = v.bitcastToAPInt().getZExtValue();
      std::memcpy(at, &bits, 2);
      return;
    }
    case Int:
      std::memcpy(at, &integer, width); // little-endian truncation
      return;
    }
  }

  /// Reads the element at `at` as a double.
  double load(const char *at) const {
    switch (kind) {
    case F64: {
      double v;
      std::memcpy(&v, at, 8);
      return v;
    }
    case F32: {
      float v;
      std::memcpy(&v, at, 4);
      return v;
    }
    case F16: {
      uint16_t bits;
      std::memcpy(&bits, at, 2);
      llvm::APFloat v(*semantics, llvm::APInt(16, bits));
      bool lost;
      v.convert(llvm::APFloat::IEEEdouble(), llvm::APFloat::rmNearestTiesToEven,
                &lost);
      return v.convertToDouble();
    }
    case Int:
      switch (width) {
      case 1: {
        int8_t v;
        std::memcpy(&v, at, 1);
        return v;
      }
      case 2: {
        int16_t v;
        std::memcpy(&v, at, 2);
        return v;
      }
      case 4: {
        int32_t v;
        std::memcpy(&v, at, 4);
        return v;
      }
      default: {
        int64_t v;
        std::memcpy(&v, at, 8);
        return static_cast<double>(v);
      }
      }
    }
    llvm_unreachable("unknown element format");
  }
};

/// The output `name` of element `type` and `shape`, stored row-major at
/// `data`, as doubles.
inline OutputData readOutput(StringRef name, ArrayRef<int64_t> shape, Type type,
                             const char *data) {
  OutputData out;
  out.name = name.str();
  out.shape.assign(shape.begin(), shape.end());
  out.isFloat = isa<FloatType>(type);
  if (auto f = dyn_cast<FloatType>(type))
    out.roundoff = std::ldexp(1.0, -int(f.getFPMantissaWidth()));
  int64_t count = elementCount(shape);
  unsigned width = byteWidth(type);
  out.values.resize(count);
  ElementFormat format = ElementFormat::of(type);
  for (int64_t i = 0; i < count; ++i)
    out.values[i] = format.load(data + i * width);
  return out;
}

} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_LIB_SEARCH_EVALUATOR_ELEMENTFORMAT_H
