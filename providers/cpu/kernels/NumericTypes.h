//===- NumericTypes.h - element types as C++ types for the kernels -*- C++ -*-===//
//
// Internal to the *Kernels.cpp files of this folder: the C++ type behind an
// ElementType for kernels that compute on values (not just move bytes), the
// float16 and bfloat16 conversions, and wrap-around integer arithmetic (as
// numpy does, without C++'s signed-overflow undefined behaviour).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_NUMERICTYPES_H
#define ORTC_PROVIDERS_CPU_KERNELS_NUMERICTYPES_H

#include "runtime/ep/Tensor.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

namespace ortc::cpu::kernels {

//===----------------------------------------------------------------------===//
// float16 and bfloat16 (IEEE binary16 and the upper half of binary32)
//===----------------------------------------------------------------------===//

inline float halfToFloat(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    float f = float(man) * (1.0f / 16777216.0f); // zero or subnormal: man * 2^-24
    return sign ? -f : f;
  }
  if (exp == 31)
    bits = sign | 0x7f800000u | (man << 13);
  else
    bits = sign | ((exp + 112) << 23) | (man << 13);
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

/// Round to nearest even; overflow gives infinity, NaN stays NaN.
inline uint16_t floatToHalf(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint16_t sign = uint16_t((x >> 16) & 0x8000u);
  uint32_t ax = x & 0x7fffffffu;
  if (ax >= 0x7f800000u)
    return uint16_t(sign | 0x7c00u | (ax > 0x7f800000u ? 0x200u : 0u));
  if (ax >= 0x477ff000u) // 65520 and above round to infinity
    return uint16_t(sign | 0x7c00u);
  if (ax < 0x38800000u) { // below 2^-14: a subnormal half (or zero)
    float a;
    std::memcpy(&a, &ax, 4);
    return uint16_t(sign | uint32_t(std::nearbyint(a * 16777216.0f)));
  }
  uint32_t h = (((ax >> 23) - 112) << 10) | ((ax & 0x7fffffu) >> 13);
  uint32_t rest = ax & 0x1fffu;
  if (rest > 0x1000u || (rest == 0x1000u && (h & 1u)))
    ++h;
  return uint16_t(sign | h);
}

inline float bf16ToFloat(uint16_t b) {
  uint32_t x = uint32_t(b) << 16;
  float f;
  std::memcpy(&f, &x, 4);
  return f;
}

/// Round to nearest even; NaN stays NaN.
inline uint16_t floatToBf16(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  if ((x & 0x7fffffffu) > 0x7f800000u)
    return uint16_t((x >> 16) | 0x40u);
  x += 0x7fffu + ((x >> 16) & 1u);
  return uint16_t(x >> 16);
}

//===----------------------------------------------------------------------===//
// Dispatch
//===----------------------------------------------------------------------===//

/// Calls fn(T()) with T the C++ type of `type` for float32, float64 and the
/// 8- to 64-bit integers; false (fn not called) for any other type.
template <typename Fn> bool visitArithmetic(ElementType type, Fn &&fn) {
  switch (type) {
  case ElementType::Float:
    fn(float());
    return true;
  case ElementType::Double:
    fn(double());
    return true;
  case ElementType::Int8:
    fn(int8_t());
    return true;
  case ElementType::Int16:
    fn(int16_t());
    return true;
  case ElementType::Int32:
    fn(int32_t());
    return true;
  case ElementType::Int64:
    fn(int64_t());
    return true;
  case ElementType::UInt8:
    fn(uint8_t());
    return true;
  case ElementType::UInt16:
    fn(uint16_t());
    return true;
  case ElementType::UInt32:
    fn(uint32_t());
    return true;
  case ElementType::UInt64:
    fn(uint64_t());
    return true;
  default:
    return false;
  }
}

//===----------------------------------------------------------------------===//
// Arithmetic that wraps for integers and propagates NaN for max/min
//===----------------------------------------------------------------------===//

template <typename T> T wrapAdd(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(uint64_t(a) + uint64_t(b));
  else
    return a + b;
}

template <typename T> T wrapMul(T a, T b) {
  if constexpr (std::is_integral_v<T>)
    return T(uint64_t(a) * uint64_t(b));
  else
    return a * b;
}

template <typename T> T nanMax(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b))
      return std::isnan(a) ? a : b;
  return b > a ? b : a;
}

template <typename T> T nanMin(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) || std::isnan(b))
      return std::isnan(a) ? a : b;
  return b < a ? b : a;
}

} // namespace ortc::cpu::kernels

#endif // ORTC_PROVIDERS_CPU_KERNELS_NUMERICTYPES_H
