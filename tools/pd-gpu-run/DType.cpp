//===- DType.cpp - Element types of a GPU kernel package ------------------===//
//
// Element type names and sizes, and the rounding of doubles to the 16-bit
// float formats.
//
//===----------------------------------------------------------------------===//

#include "DType.h"

#include <cmath>
#include <cstring>

using namespace mlir::perfdojo::gpurun;

namespace {
struct DTypeInfo {
  DType type;
  const char *name;
  unsigned size;
  bool isFloat;
  /// Significand bits including the implicit one (floats only).
  int precision;
};
} // namespace

static const DTypeInfo dtypeTable[] = {
    {DType::F16, "f16", 2, true, 11}, {DType::BF16, "bf16", 2, true, 8},
    {DType::F32, "f32", 4, true, 24}, {DType::F64, "f64", 8, true, 53},
    {DType::I8, "i8", 1, false, 0},   {DType::I16, "i16", 2, false, 0},
    {DType::I32, "i32", 4, false, 0}, {DType::I64, "i64", 8, false, 0},
};

static const DTypeInfo &getInfo(DType type) {
  return dtypeTable[static_cast<unsigned>(type)];
}

const char *mlir::perfdojo::gpurun::getDTypeName(DType type) {
  return getInfo(type).name;
}

std::optional<DType>
mlir::perfdojo::gpurun::parseDTypeName(const std::string &name) {
  for (const DTypeInfo &info : dtypeTable)
    if (name == info.name)
      return info.type;
  return std::nullopt;
}

const char *mlir::perfdojo::gpurun::getDTypeNameList() {
  return "f16, bf16, f32, f64, i8, i16, i32, i64";
}

unsigned mlir::perfdojo::gpurun::getDTypeSize(DType type) {
  return getInfo(type).size;
}

bool mlir::perfdojo::gpurun::isFloatDType(DType type) {
  return getInfo(type).isFloat;
}

double mlir::perfdojo::gpurun::getUnitRoundoff(DType type) {
  const DTypeInfo &info = getInfo(type);
  return info.isFloat ? std::ldexp(1.0, -info.precision) : 0.0;
}

/// Rounds `value` to nearest, ties to even, into a binary format with
/// `exponentBits` exponent bits and `fractionBits` stored fraction bits
/// (IEEE layout: sign, biased exponent, fraction), and returns its bits.
///
/// The double is an integer significand times a power of two; the result's
/// quantum (the value of its last fraction bit) is 2^(e - fractionBits) for
/// a value of exponent e, but never less than the subnormal quantum
/// 2^(1 - bias - fractionBits). Shifting the significand right to that
/// quantum, with the bits shifted out deciding the rounding, gives the
/// result's significand r; `(max(e, 1 - bias) + bias - 1) << fractionBits`
/// plus r is then its encoding, a carry out of the fraction (r reaching
/// 2^(fractionBits + 1)) moving into the exponent, a subnormal that rounds
/// up to 2^fractionBits becoming the smallest normal, and an exponent field
/// reaching all ones meaning infinity.
static uint32_t roundToSmallFloat(double value, int exponentBits,
                                  int fractionBits) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof(bits));
  const uint32_t sign = uint32_t(bits >> 63) << (exponentBits + fractionBits);
  const int biasedExponent = int((bits >> 52) & 0x7ff);
  const uint64_t fraction = bits & ((uint64_t(1) << 52) - 1);
  const int bias = (1 << (exponentBits - 1)) - 1;
  const uint32_t infinity = ((uint32_t(1) << exponentBits) - 1) << fractionBits;

  if (biasedExponent == 0x7ff) {
    if (fraction == 0)
      return sign | infinity;
    // NaN: the payload's leading bits, made quiet (never all zero).
    uint32_t payload = uint32_t(fraction >> (52 - fractionBits));
    return sign | infinity | payload | (uint32_t(1) << (fractionBits - 1));
  }

  // value = significand * 2^scale exactly.
  uint64_t significand;
  int scale;
  if (biasedExponent == 0) {
    significand = fraction;
    scale = -1074;
  } else {
    significand = fraction | (uint64_t(1) << 52);
    scale = biasedExponent - 1075;
  }
  if (significand == 0)
    return sign;

  int msb = 63;
  while (!(significand >> msb))
    --msb;
  const int exponent = msb + scale;
  if (exponent > bias)
    return sign | infinity;
  const int minExponent = 1 - bias;
  const int quantum =
      (exponent < minExponent ? minExponent : exponent) - fractionBits;
  // The double's quantum is always finer than the result's (53 > 11 or 8
  // significand bits, and a double subnormal is far below both formats'
  // subnormals), so the shift is positive.
  const int shift = quantum - scale;
  uint64_t rounded;
  if (shift > 60) {
    // Less than a quarter of the smallest subnormal: rounds to zero.
    rounded = 0;
  } else {
    rounded = significand >> shift;
    const uint64_t rest = significand & ((uint64_t(1) << shift) - 1);
    const uint64_t half = uint64_t(1) << (shift - 1);
    if (rest > half || (rest == half && (rounded & 1)))
      ++rounded;
  }
  const int effectiveExponent = exponent < minExponent ? minExponent : exponent;
  uint32_t result = (uint32_t(effectiveExponent + bias - 1) << fractionBits) +
                    uint32_t(rounded);
  if (result >= infinity)
    return sign | infinity;
  return sign | result;
}

uint16_t mlir::perfdojo::gpurun::roundToHalf(double value) {
  return uint16_t(roundToSmallFloat(value, /*exponentBits=*/5,
                                    /*fractionBits=*/10));
}

uint16_t mlir::perfdojo::gpurun::roundToBFloat16(double value) {
  return uint16_t(roundToSmallFloat(value, /*exponentBits=*/8,
                                    /*fractionBits=*/7));
}

double mlir::perfdojo::gpurun::halfToDouble(uint16_t bits) {
  const bool negative = bits >> 15;
  const int exponent = (bits >> 10) & 0x1f;
  const int fraction = bits & 0x3ff;
  double magnitude;
  if (exponent == 0x1f)
    magnitude = fraction ? std::nan("") : INFINITY;
  else if (exponent == 0)
    magnitude = std::ldexp(double(fraction), -24);
  else
    magnitude = std::ldexp(double(fraction | 0x400), exponent - 25);
  return negative ? -magnitude : magnitude;
}

double mlir::perfdojo::gpurun::bfloat16ToDouble(uint16_t bits) {
  // bfloat16 is the upper half of a float.
  uint32_t wide = uint32_t(bits) << 16;
  float value;
  std::memcpy(&value, &wide, sizeof(value));
  return value;
}

void mlir::perfdojo::gpurun::storeElement(DType type, void *at, double value,
                                          int64_t integer) {
  switch (type) {
  case DType::F16: {
    uint16_t bits = roundToHalf(value);
    std::memcpy(at, &bits, 2);
    return;
  }
  case DType::BF16: {
    uint16_t bits = roundToBFloat16(value);
    std::memcpy(at, &bits, 2);
    return;
  }
  case DType::F32: {
    float narrow = static_cast<float>(value);
    std::memcpy(at, &narrow, 4);
    return;
  }
  case DType::F64:
    std::memcpy(at, &value, 8);
    return;
  case DType::I8: {
    int8_t v = int8_t(uint8_t(uint64_t(integer)));
    std::memcpy(at, &v, 1);
    return;
  }
  case DType::I16: {
    int16_t v = int16_t(uint16_t(uint64_t(integer)));
    std::memcpy(at, &v, 2);
    return;
  }
  case DType::I32: {
    int32_t v = int32_t(uint32_t(uint64_t(integer)));
    std::memcpy(at, &v, 4);
    return;
  }
  case DType::I64:
    std::memcpy(at, &integer, 8);
    return;
  }
}

int64_t mlir::perfdojo::gpurun::loadAsInteger(DType type, const void *at) {
  switch (type) {
  case DType::I8: {
    int8_t v;
    std::memcpy(&v, at, 1);
    return v;
  }
  case DType::I16: {
    int16_t v;
    std::memcpy(&v, at, 2);
    return v;
  }
  case DType::I32: {
    int32_t v;
    std::memcpy(&v, at, 4);
    return v;
  }
  case DType::I64: {
    int64_t v;
    std::memcpy(&v, at, 8);
    return v;
  }
  default:
    return 0;
  }
}

double mlir::perfdojo::gpurun::loadAsDouble(DType type, const void *at) {
  switch (type) {
  case DType::F16: {
    uint16_t bits;
    std::memcpy(&bits, at, 2);
    return halfToDouble(bits);
  }
  case DType::BF16: {
    uint16_t bits;
    std::memcpy(&bits, at, 2);
    return bfloat16ToDouble(bits);
  }
  case DType::F32: {
    float v;
    std::memcpy(&v, at, 4);
    return v;
  }
  case DType::F64: {
    double v;
    std::memcpy(&v, at, 8);
    return v;
  }
  default:
    return double(loadAsInteger(type, at));
  }
}
