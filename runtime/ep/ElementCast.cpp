//===- ElementCast.cpp - ONNX Cast between every element type -------------===//

#include "runtime/ep/ElementCast.h"

#include <cmath>
#include <cstring>
#include <limits>

namespace ortc {
namespace {

//===----------------------------------------------------------------------===//
// Small floats: one description, one decoder, one encoder.
//===----------------------------------------------------------------------===//

/// How a format spends its top exponent and its sign.
enum class Special {
  Ieee, // all-ones exponent: Inf (mantissa 0) and NaN
  Fn,   // no Inf; all-ones exponent and mantissa is NaN (float8e4m3fn)
  Fnuz, // no Inf, no -0; the negative-zero pattern is the one NaN
  None, // neither Inf nor NaN (float4e2m1)
};

struct FloatFormat {
  int expBits, manBits, bias;
  Special special;

  int signShift() const { return expBits + manBits; }
  uint32_t manMask() const { return (1u << manBits) - 1; }
  uint32_t expMask() const { return (1u << expBits) - 1; }
  /// The largest exponent field of a finite value.
  uint32_t maxExp() const { return special == Special::Ieee ? expMask() - 1 : expMask(); }
  /// The bits of the largest finite magnitude.
  uint32_t maxFinite() const {
    uint32_t man = special == Special::Fn ? manMask() - 1 : manMask();
    return maxExp() << manBits | man;
  }
};

constexpr FloatFormat kHalf{5, 10, 15, Special::Ieee};
constexpr FloatFormat kBFloat16{8, 7, 127, Special::Ieee};
constexpr FloatFormat kE4M3FN{4, 3, 7, Special::Fn};
constexpr FloatFormat kE4M3FNUZ{4, 3, 8, Special::Fnuz};
constexpr FloatFormat kE5M2{5, 2, 15, Special::Ieee};
constexpr FloatFormat kE5M2FNUZ{5, 2, 16, Special::Fnuz};
constexpr FloatFormat kE2M1{2, 1, 1, Special::None};

const FloatFormat *smallFloatFormat(ElementType type) {
  switch (type) {
  case ElementType::Float16:
    return &kHalf;
  case ElementType::BFloat16:
    return &kBFloat16;
  case ElementType::Float8E4M3FN:
    return &kE4M3FN;
  case ElementType::Float8E4M3FNUZ:
    return &kE4M3FNUZ;
  case ElementType::Float8E5M2:
    return &kE5M2;
  case ElementType::Float8E5M2FNUZ:
    return &kE5M2FNUZ;
  case ElementType::Float4E2M1:
    return &kE2M1;
  default:
    return nullptr;
  }
}

double decodeSmallFloat(uint32_t bits, const FloatFormat &f) {
  bool negative = (bits >> f.signShift()) & 1;
  uint32_t exp = (bits >> f.manBits) & f.expMask();
  uint32_t man = bits & f.manMask();
  // NaNs keep their sign bit, as ml_dtypes does (the FNUZ NaN is negative).
  const double nan = std::copysign(std::numeric_limits<double>::quiet_NaN(), negative ? -1 : 1);
  if (f.special == Special::Fnuz && negative && exp == 0 && man == 0)
    return nan;
  if (f.special == Special::Ieee && exp == f.expMask())
    return man ? nan
               : std::copysign(std::numeric_limits<double>::infinity(), negative ? -1 : 1);
  if (f.special == Special::Fn && exp == f.expMask() && man == f.manMask())
    return nan;
  double magnitude = exp == 0 ? std::ldexp(double(man), 1 - f.bias - f.manBits)
                              : std::ldexp(double(man | (1u << f.manBits)),
                                           int(exp) - f.bias - f.manBits);
  return negative ? -magnitude : magnitude;
}

/// The bits of the value `mantissa` * 2^`exp2` (with `negative`'s sign) in
/// format `f`, rounded to nearest even. `saturate`: overflow gives the
/// largest finite value rather than Inf or NaN.
uint32_t encodeSmallFloat(bool negative, uint64_t mantissa, int exp2, const FloatFormat &f,
                          bool saturate) {
  uint32_t sign = negative ? 1u << f.signShift() : 0;
  if (mantissa == 0)
    return f.special == Special::Fnuz ? 0 : sign;
  int msb = 63 - __builtin_clzll(mantissa);
  int exponent = msb + exp2; // the value lies in [2^exponent, 2^(exponent+1))
  int minExponent = 1 - f.bias;
  // The value of one unit in the last place where the value lands.
  int quantum = (exponent > minExponent ? exponent : minExponent) - f.manBits;
  int shift = quantum - exp2;
  uint64_t units;
  if (shift <= 0) {
    units = mantissa << -shift; // exact: fewer than manBits + 1 bits
  } else if (shift > 64) {
    units = 0; // below half a unit
  } else if (shift == 64) {
    units = mantissa > (uint64_t(1) << 63) ? 1 : 0; // a tie goes to even (0)
  } else {
    units = mantissa >> shift;
    uint64_t rest = mantissa & ((uint64_t(1) << shift) - 1);
    uint64_t half = uint64_t(1) << (shift - 1);
    if (rest > half || (rest == half && (units & 1)))
      ++units;
  }
  if (units >> (f.manBits + 1)) { // rounding carried into the next binade
    units >>= 1;
    ++quantum;
  }
  uint32_t exp = 0, man = uint32_t(units);
  if (units >> f.manBits) {
    exp = uint32_t(quantum + f.manBits + f.bias);
    man = uint32_t(units) & f.manMask();
  }
  if (units == 0)
    return f.special == Special::Fnuz ? 0 : sign;
  bool overflow = quantum + f.manBits + f.bias > int(f.maxExp()) ||
                  (f.special == Special::Fn && exp == f.maxExp() && man == f.manMask());
  if (!overflow)
    return sign | exp << f.manBits | man;
  if (saturate || f.special == Special::None)
    return sign | f.maxFinite();
  switch (f.special) {
  case Special::Ieee:
    return sign | f.expMask() << f.manBits; // Inf
  case Special::Fn:
    return sign | f.expMask() << f.manBits | f.manMask(); // NaN
  default:
    return 1u << f.signShift(); // the FNUZ NaN
  }
}

uint32_t smallFloatNaN(bool negative, const FloatFormat &f) {
  uint32_t sign = negative ? 1u << f.signShift() : 0;
  switch (f.special) {
  case Special::Ieee:
    return sign | f.expMask() << f.manBits | 1u << (f.manBits - 1); // quiet
  case Special::Fn:
    return sign | f.expMask() << f.manBits | f.manMask();
  case Special::Fnuz:
    return 1u << f.signShift();
  case Special::None:
    // No NaN: ml_dtypes (onnx's reference) writes the sign-flipped zero.
    return negative ? 0 : 1u << f.signShift();
  }
  return 0;
}

uint32_t smallFloatInfinity(bool negative, const FloatFormat &f, bool saturate) {
  uint32_t sign = negative ? 1u << f.signShift() : 0;
  if (saturate || f.special == Special::None)
    return sign | f.maxFinite();
  if (f.special == Special::Ieee)
    return sign | f.expMask() << f.manBits;
  return smallFloatNaN(negative, f);
}

uint32_t doubleToSmallFloat(double v, const FloatFormat &f, bool saturate) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  bool negative = bits >> 63;
  uint32_t exp = uint32_t(bits >> 52) & 0x7ff;
  uint64_t man = bits & ((uint64_t(1) << 52) - 1);
  if (exp == 0x7ff)
    return man ? smallFloatNaN(negative, f) : smallFloatInfinity(negative, f, saturate);
  if (exp == 0)
    return encodeSmallFloat(negative, man, -1074, f, saturate);
  return encodeSmallFloat(negative, man | (uint64_t(1) << 52), int(exp) - 1075, f, saturate);
}

uint32_t valueToSmallFloat(const ElementValue &v, const FloatFormat &f, bool saturate) {
  switch (v.kind) {
  case ElementValue::Float:
    return doubleToSmallFloat(v.f, f, saturate);
  case ElementValue::Signed:
    return encodeSmallFloat(v.i < 0, v.i < 0 ? 0 - uint64_t(v.i) : uint64_t(v.i), 0, f, saturate);
  case ElementValue::Unsigned:
    return encodeSmallFloat(false, v.u, 0, f, saturate);
  }
  return 0;
}

//===----------------------------------------------------------------------===//
// float8e8m0
//===----------------------------------------------------------------------===//

double decodeE8M0(uint8_t bits) {
  if (bits == 0xff)
    return std::numeric_limits<double>::quiet_NaN();
  return std::ldexp(1.0, int(bits) - 127);
}

float toFloat32(const ElementValue &v) {
  switch (v.kind) {
  case ElementValue::Float:
    return float(v.f);
  case ElementValue::Signed:
    return float(v.i);
  case ElementValue::Unsigned:
    return float(v.u);
  }
  return 0;
}

/// onnx.numpy_helper.to_float8e8m0 on one float32.
uint8_t encodeE8M0(float value, const CastOptions &options) {
  uint32_t bits;
  std::memcpy(&bits, &value, 4);
  uint32_t exponent = (bits >> 23) & 0xff;
  if (exponent == 0xff)
    return 0xff; // NaN and Inf
  bool roundUp = false;
  switch (options.e8m0Rounding) {
  case E8M0Rounding::Nearest: {
    bool guard = bits & 0x400000, round = bits & 0x200000, sticky = bits & 0x1fffff;
    bool lsb = exponent > 0;
    roundUp = guard && (round || sticky || lsb);
    break;
  }
  case E8M0Rounding::Up:
    roundUp = (bits & 0x7fffff) != 0;
    break;
  case E8M0Rounding::Down:
    break;
  }
  if (roundUp && options.saturate && exponent == 0xfe)
    roundUp = false;
  return uint8_t(exponent + (roundUp ? 1 : 0));
}

//===----------------------------------------------------------------------===//
// Integers
//===----------------------------------------------------------------------===//

/// A double truncated toward zero into [lo, hi], or `lo` when it is NaN or
/// outside (x86's "integer indefinite", what numpy gives).
int64_t truncateOrMin(double v, double lo, double hi) {
  if (!(v > lo - 1 && v < hi + 1))
    return int64_t(lo);
  return int64_t(std::trunc(v));
}

/// The bits of a float cast to an integer type of `bits` bits.
uint64_t floatToIntegerBits(double v, size_t bits, bool isUnsigned) {
  const double two31 = 2147483648.0, two63 = 9223372036854775808.0;
  if (bits <= 16 || (bits == 32 && !isUnsigned))
    return uint64_t(truncateOrMin(v, -two31, two31 - 1));
  if (bits == 64 && isUnsigned && v >= two63)
    return v < 2 * two63 ? uint64_t(v) : 0;
  // uint32 and int64 go through int64 (the upper bound is 2^63 - 1024 in
  // doubles; anything above is out of range).
  if (!(v >= -two63 && v < two63))
    return uint64_t(std::numeric_limits<int64_t>::min());
  return uint64_t(int64_t(std::trunc(v)));
}

uint64_t integerBits(const ElementValue &v, size_t bits, bool isUnsigned) {
  switch (v.kind) {
  case ElementValue::Float:
    return floatToIntegerBits(v.f, bits, isUnsigned);
  case ElementValue::Signed:
    return uint64_t(v.i);
  case ElementValue::Unsigned:
    return v.u;
  }
  return 0;
}

bool isUnsignedType(ElementType type) {
  switch (type) {
  case ElementType::UInt8:
  case ElementType::UInt16:
  case ElementType::UInt32:
  case ElementType::UInt64:
  case ElementType::UInt4:
  case ElementType::UInt2:
    return true;
  default:
    return false;
  }
}

template <typename T> T load(const void *data, int64_t index) {
  T value;
  std::memcpy(&value, static_cast<const char *>(data) + index * int64_t(sizeof(T)), sizeof(T));
  return value;
}

/// The `bits`-bit field of element `index` in a packed tensor.
uint32_t loadPacked(const void *data, int64_t index, size_t bits) {
  int64_t perByte = int64_t(8 / bits);
  uint8_t byte = static_cast<const uint8_t *>(data)[index / perByte];
  return (byte >> (size_t(index % perByte) * bits)) & ((1u << bits) - 1);
}

int64_t signExtend(uint32_t field, size_t bits) {
  return int64_t(field ^ (1u << (bits - 1))) - int64_t(1u << (bits - 1));
}

//===----------------------------------------------------------------------===//
// Fast paths between float32 and float16/bfloat16 (bit for bit the generic
// conversions; the rare cases go through them)
//===----------------------------------------------------------------------===//

float halfToFloat(uint16_t h) {
  uint32_t exp = (h >> 10) & 0x1f;
  if (exp == 0 || exp == 0x1f)
    return float(decodeSmallFloat(h, kHalf)); // zero, subnormal, Inf, NaN
  uint32_t bits = uint32_t(h & 0x8000) << 16 | (exp + 127 - 15) << 23 | uint32_t(h & 0x3ff) << 13;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToHalf(float f) {
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  uint32_t magnitude = bits & 0x7fffffff;
  // float16 normals and the values that round up to the next binade or to
  // Inf: [2^-14, 65520) have exponents 113..142.
  if (magnitude < (113u << 23) || magnitude >= (143u << 23))
    return uint16_t(doubleToSmallFloat(f, kHalf, false));
  uint32_t rounded = magnitude - ((127u - 15u) << 23) + 0xfff + ((magnitude >> 13) & 1);
  return uint16_t((bits >> 16 & 0x8000) | (rounded >> 13)); // a carry into Inf is right
}

float bfloat16ToFloat(uint16_t b) {
  uint32_t bits = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t floatToBFloat16(float f) {
  if (std::isnan(f))
    return uint16_t(doubleToSmallFloat(f, kBFloat16, false));
  uint32_t bits;
  std::memcpy(&bits, &f, 4);
  return uint16_t((bits + 0x7fff + ((bits >> 16) & 1)) >> 16);
}

template <typename From, typename To, typename Fn>
void convertRange(const void *src, void *dst, int64_t begin, int64_t end, Fn fn) {
  const char *in = static_cast<const char *>(src);
  char *out = static_cast<char *>(dst);
  for (int64_t i = begin; i < end; ++i) {
    From x;
    std::memcpy(&x, in + i * int64_t(sizeof(From)), sizeof(From));
    To y = fn(x);
    std::memcpy(out + i * int64_t(sizeof(To)), &y, sizeof(To));
  }
}

/// The float32 <-> float16/bfloat16 casts, and float32 -> the 8-bit floats,
/// without the generic dispatch.
bool castFast(ElementType from, const void *src, ElementType to, void *dst, int64_t begin,
              int64_t end, const CastOptions &options) {
  const FloatFormat *format = smallFloatFormat(to);
  if (from == ElementType::Float && format && elementBits(to) == 8) {
    bool saturate = options.saturate;
    convertRange<float, uint8_t>(src, dst, begin, end, [&](float f) {
      return uint8_t(doubleToSmallFloat(f, *format, saturate));
    });
    return true;
  }
  if (from == ElementType::Float16 && to == ElementType::Float)
    convertRange<uint16_t, float>(src, dst, begin, end, halfToFloat);
  else if (from == ElementType::Float && to == ElementType::Float16)
    convertRange<float, uint16_t>(src, dst, begin, end, floatToHalf);
  else if (from == ElementType::BFloat16 && to == ElementType::Float)
    convertRange<uint16_t, float>(src, dst, begin, end, bfloat16ToFloat);
  else if (from == ElementType::Float && to == ElementType::BFloat16)
    convertRange<float, uint16_t>(src, dst, begin, end, floatToBFloat16);
  else
    return false;
  return true;
}

} // namespace

double ElementValue::toDouble() const {
  switch (kind) {
  case Float:
    return f;
  case Signed:
    return double(i);
  case Unsigned:
    return double(u);
  }
  return 0;
}

ElementValue readElement(ElementType type, const void *data, int64_t index) {
  switch (type) {
  case ElementType::Float:
    return ElementValue::ofFloat(load<float>(data, index));
  case ElementType::Double:
    return ElementValue::ofFloat(load<double>(data, index));
  case ElementType::Float16:
  case ElementType::BFloat16:
    return ElementValue::ofFloat(
        decodeSmallFloat(load<uint16_t>(data, index), *smallFloatFormat(type)));
  case ElementType::Float8E4M3FN:
  case ElementType::Float8E4M3FNUZ:
  case ElementType::Float8E5M2:
  case ElementType::Float8E5M2FNUZ:
    return ElementValue::ofFloat(
        decodeSmallFloat(load<uint8_t>(data, index), *smallFloatFormat(type)));
  case ElementType::Float8E8M0:
    return ElementValue::ofFloat(decodeE8M0(load<uint8_t>(data, index)));
  case ElementType::Float4E2M1:
    return ElementValue::ofFloat(decodeSmallFloat(loadPacked(data, index, 4), kE2M1));
  case ElementType::Bool:
    return ElementValue::ofUnsigned(load<uint8_t>(data, index) != 0);
  case ElementType::Int8:
    return ElementValue::ofSigned(load<int8_t>(data, index));
  case ElementType::Int16:
    return ElementValue::ofSigned(load<int16_t>(data, index));
  case ElementType::Int32:
    return ElementValue::ofSigned(load<int32_t>(data, index));
  case ElementType::Int64:
    return ElementValue::ofSigned(load<int64_t>(data, index));
  case ElementType::UInt8:
    return ElementValue::ofUnsigned(load<uint8_t>(data, index));
  case ElementType::UInt16:
    return ElementValue::ofUnsigned(load<uint16_t>(data, index));
  case ElementType::UInt32:
    return ElementValue::ofUnsigned(load<uint32_t>(data, index));
  case ElementType::UInt64:
    return ElementValue::ofUnsigned(load<uint64_t>(data, index));
  case ElementType::Int4:
    return ElementValue::ofSigned(signExtend(loadPacked(data, index, 4), 4));
  case ElementType::UInt4:
    return ElementValue::ofUnsigned(loadPacked(data, index, 4));
  case ElementType::Int2:
    return ElementValue::ofSigned(signExtend(loadPacked(data, index, 2), 2));
  case ElementType::UInt2:
    return ElementValue::ofUnsigned(loadPacked(data, index, 2));
  case ElementType::Undefined:
    break;
  }
  return {};
}

uint64_t encodeElement(ElementType type, const ElementValue &value, const CastOptions &options) {
  switch (type) {
  case ElementType::Double: {
    double d = value.toDouble();
    uint64_t bits;
    std::memcpy(&bits, &d, 8);
    return bits;
  }
  case ElementType::Float: {
    float f = toFloat32(value); // one rounding from each kind
    uint32_t bits;
    std::memcpy(&bits, &f, 4);
    return bits;
  }
  case ElementType::Float16:
    return valueToSmallFloat(value, kHalf, /*saturate=*/false);
  // Through float32, as ml_dtypes (and onnxruntime) convert into these.
  case ElementType::BFloat16:
    return doubleToSmallFloat(toFloat32(value), kBFloat16, /*saturate=*/false);
  case ElementType::Float8E4M3FN:
  case ElementType::Float8E4M3FNUZ:
  case ElementType::Float8E5M2:
  case ElementType::Float8E5M2FNUZ:
    return doubleToSmallFloat(toFloat32(value), *smallFloatFormat(type), options.saturate);
  case ElementType::Float4E2M1:
    return doubleToSmallFloat(toFloat32(value), kE2M1, /*saturate=*/true);
  case ElementType::Float8E8M0:
    return encodeE8M0(toFloat32(value), options);
  case ElementType::Bool:
    switch (value.kind) {
    case ElementValue::Float:
      return value.f != 0;
    case ElementValue::Signed:
      return value.i != 0;
    case ElementValue::Unsigned:
      return value.u != 0;
    }
    return 0;
  case ElementType::Undefined:
    return 0;
  default: {
    size_t bits = elementBits(type);
    uint64_t all = integerBits(value, bits, isUnsignedType(type));
    return bits == 64 ? all : all & ((uint64_t(1) << bits) - 1);
  }
  }
}

void writeElementBits(ElementType type, void *data, int64_t index, uint64_t bits) {
  size_t width = elementBits(type);
  if (width >= 8) {
    std::memcpy(static_cast<char *>(data) + index * int64_t(width / 8), &bits, width / 8);
    return;
  }
  int64_t perByte = int64_t(8 / width);
  uint8_t &byte = static_cast<uint8_t *>(data)[index / perByte];
  size_t shift = size_t(index % perByte) * width;
  uint8_t mask = uint8_t(((1u << width) - 1) << shift);
  byte = uint8_t((byte & ~mask) | ((uint32_t(bits) << shift) & mask));
}

namespace {

template <typename T, typename Fn> void storeEach(void *dst, int64_t begin, int64_t end, Fn value) {
  char *out = static_cast<char *>(dst);
  for (int64_t i = begin; i < end; ++i) {
    T v = T(value(i)); // little endian: the low bytes of the bits
    std::memcpy(out + i * int64_t(sizeof(T)), &v, sizeof(T));
  }
}

/// Source tensors at least this long with at most 8 bits per element are
/// cast through a table of every source pattern's result.
constexpr int64_t kTableMinElements = 512;

} // namespace

void castElements(ElementType from, const void *src, ElementType to, void *dst, int64_t begin,
                  int64_t end, const CastOptions &options) {
  if (begin >= end)
    return;
  size_t bits = elementBits(to);
  if (from == to && bits % 8 == 0) {
    size_t size = bits / 8;
    std::memcpy(static_cast<char *>(dst) + begin * int64_t(size),
                static_cast<const char *>(src) + begin * int64_t(size), size_t(end - begin) * size);
    return;
  }
  if (castFast(from, src, to, dst, begin, end, options))
    return;
  size_t fromBits = elementBits(from);
  bool useTable = fromBits <= 8 && end - begin >= kTableMinElements;
  uint64_t table[256];
  if (useTable)
    for (uint32_t pattern = 0; pattern < (1u << fromBits); ++pattern) {
      uint8_t byte = uint8_t(pattern);
      table[pattern] = encodeElement(to, readElement(from, &byte, 0), options);
    }
  auto value = [&](int64_t i) -> uint64_t {
    if (!useTable)
      return encodeElement(to, readElement(from, src, i), options);
    return table[fromBits == 8 ? static_cast<const uint8_t *>(src)[i]
                               : loadPacked(src, i, fromBits)];
  };
  switch (bits) {
  case 8:
    return storeEach<uint8_t>(dst, begin, end, value);
  case 16:
    return storeEach<uint16_t>(dst, begin, end, value);
  case 32:
    return storeEach<uint32_t>(dst, begin, end, value);
  case 64:
    return storeEach<uint64_t>(dst, begin, end, value);
  default:
    break;
  }
  // Packed targets: whole bytes, the last one completed with zero bits.
  int64_t perByte = int64_t(8 / bits);
  uint8_t *out = static_cast<uint8_t *>(dst);
  uint64_t mask = (uint64_t(1) << bits) - 1;
  for (int64_t i = begin; i < end; i += perByte) {
    uint8_t byte = 0;
    for (int64_t j = 0; j < perByte && i + j < end; ++j)
      byte |= uint8_t((value(i + j) & mask) << (size_t(j) * bits));
    out[i / perByte] = byte;
  }
}

} // namespace ortc
