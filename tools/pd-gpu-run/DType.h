//===- DType.h - Element types of a GPU kernel package ----------*- C++ -*-===//
//
// The element types a package's buffers may have, their sizes and NumPy
// names, and the conversions between them and double: IEEE half and
// bfloat16 round to nearest, ties to even, directly from the double (as
// APFloat does in the CPU evaluator), not through float.
//
//===----------------------------------------------------------------------===//

#ifndef PERFDOJO_TOOLS_PDGPURUN_DTYPE_H
#define PERFDOJO_TOOLS_PDGPURUN_DTYPE_H

#include <cstdint>
#include <optional>
#include <string>

namespace mlir {
namespace perfdojo {
namespace gpurun {

/// The element type of a buffer.
enum class DType { F16, BF16, F32, F64, I8, I16, I32, I64 };

/// The package spelling of `type` ("f16", "bf16", ..., "i64").
const char *getDTypeName(DType type);
/// The type spelled `name`, or std::nullopt.
std::optional<DType> parseDTypeName(const std::string &name);
/// "f16, bf16, f32, f64, i8, i16, i32, i64", for error messages.
const char *getDTypeNameList();

/// Bytes per element.
unsigned getDTypeSize(DType type);
/// Whether `type` is a floating-point type.
bool isFloatDType(DType type);
/// The unit roundoff of a float type (2^-11 for f16, 2^-8 for bf16, 2^-24
/// for f32, 2^-53 for f64) and 0 for integers: a comparison of an output of
/// that type never asks for more.
double getUnitRoundoff(DType type);

/// IEEE binary16 bits of `value` rounded to nearest, ties to even
/// (overflow gives infinity, tiny values subnormals or zero, NaN a quiet NaN).
uint16_t roundToHalf(double value);
/// bfloat16 bits of `value` rounded to nearest, ties to even.
uint16_t roundToBFloat16(double value);
/// The exact value of IEEE binary16 bits.
double halfToDouble(uint16_t bits);
/// The exact value of bfloat16 bits.
double bfloat16ToDouble(uint16_t bits);

/// Stores an element of `type` at `at`: floats take `value` rounded to the
/// type, integers take `integer` truncated to the width (two's complement).
void storeElement(DType type, void *at, double value, int64_t integer);
/// The element of `type` at `at` as a double (exact for every float type;
/// integers of more than 53 bits may round).
double loadAsDouble(DType type, const void *at);
/// The integer element of `type` at `at` (sign-extended); 0 for floats.
int64_t loadAsInteger(DType type, const void *at);

} // namespace gpurun
} // namespace perfdojo
} // namespace mlir

#endif // PERFDOJO_TOOLS_PDGPURUN_DTYPE_H
