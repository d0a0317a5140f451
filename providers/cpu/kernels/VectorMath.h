//===- VectorMath.h - elementary functions on vectors ------------*- C++ -*-===//
//
// exp and a lane sum on 8 floats for the library kernels' vector loops
// (Softmax, LayerNormalization). Include
// only from translation units that compile x86 code with target attributes.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_VECTORMATH_H
#define ORTC_PROVIDERS_CPU_KERNELS_VECTORMATH_H

#include <immintrin.h>

namespace ortc::cpu {

/// e^x per lane, within 2 ulp of std::exp over the float range: x = n ln2 +
/// r with |r| <= ln2/2 (ln2 in two parts, so r is exact), e^r by Cephes'
/// degree-6 polynomial, 2^n into the exponent bits. x is clamped to
/// [-87.33, 88] (below: 1.007 times the smallest normal, not 0: a result
/// that stays normal after the polynomial's rounding, where ln(FLT_MIN) =
/// -87.3365 itself came out a denormal half the time, a microcode assist per
/// lane on most Intel CPUs; above: e^88, where 2^n still fits the exponent);
/// NaN stays NaN (the clamps return it). Softmax's x - max <= 0 never
/// reaches the top clamp.
__attribute__((target("avx2,fma"))) inline __m256 expAvx2(__m256 x) {
  const __m256 hi = _mm256_set1_ps(88.0f), lo = _mm256_set1_ps(-87.33f);
  x = _mm256_min_ps(hi, _mm256_max_ps(lo, x)); // NaN: max_ps/min_ps return x
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(1.44269504088896341f)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(0.693359375f), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(-2.12194440e-4f), r);
  __m256 p = _mm256_set1_ps(1.9875691500e-4f);
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.3981999507e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(8.3334519073e-3f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(4.1665795894e-2f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(1.6666665459e-1f));
  p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(5.0000001201e-1f));
  __m256 r2 = _mm256_mul_ps(r, r);
  __m256 e = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.f));
  __m256i pow2 =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(e, _mm256_castsi256_ps(pow2));
}

/// The sum of the 8 lanes, lane 0 first (the order the kernels' tails then
/// continue in).
__attribute__((target("avx2,fma"))) inline float sumLanesAvx2(__m256 v) {
  alignas(32) float lanes[8];
  _mm256_store_ps(lanes, v);
  float sum = 0.f;
  for (float lane : lanes)
    sum += lane;
  return sum;
}

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_KERNELS_VECTORMATH_H
