//===- VectorMath.h - elementary functions on vectors ------------*- C++ -*-===//
//
// exp, GELU and a lane sum on 8 (and 16) floats for the library kernels'
// vector loops (Softmax, LayerNormalization, the GEMM's epilogue). Include
// only from translation units that compile x86 code with target attributes.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_VECTORMATH_H
#define ORTC_PROVIDERS_CPU_KERNELS_VECTORMATH_H

#include <immintrin.h>

namespace ortc::cpu {

/// exp's clamps, its reduction x = n ln2 + r (ln2 in two parts, so that r is
/// exact) and Cephes' degree-6 polynomial for e^r, highest degree first
/// (e^r = 1 + r + r^2 P(r)): one set for every vector width.
inline constexpr float kExpLo = -87.33f, kExpHi = 88.0f, kLog2e = 1.44269504088896341f;
inline constexpr float kLn2Hi = 0.693359375f, kLn2Lo = -2.12194440e-4f;
inline constexpr float kExpPoly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
/// Numerical Recipes' erfcc: erfc(z) = t exp(-z^2 + P(t)), t = 1 / (1 +
/// z / 2), P's Chebyshev-fit coefficients highest degree first.
inline constexpr float kErfcPoly[10] = {0.17087277f, -0.82215223f, 1.48851587f, -1.13520398f,
                                        0.27886807f, -0.18628806f, 0.09678418f, 0.37409196f,
                                        1.00002368f, -1.26551223f};

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
  const __m256 hi = _mm256_set1_ps(kExpHi), lo = _mm256_set1_ps(kExpLo);
  x = _mm256_min_ps(hi, _mm256_max_ps(lo, x)); // NaN: max_ps/min_ps return x
  __m256 n = _mm256_round_ps(_mm256_mul_ps(x, _mm256_set1_ps(kLog2e)),
                             _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m256 r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Hi), x);
  r = _mm256_fnmadd_ps(n, _mm256_set1_ps(kLn2Lo), r);
  __m256 p = _mm256_set1_ps(kExpPoly[0]);
  for (int i = 1; i < 6; ++i)
    p = _mm256_fmadd_ps(p, r, _mm256_set1_ps(kExpPoly[i]));
  __m256 r2 = _mm256_mul_ps(r, r);
  __m256 e = _mm256_add_ps(_mm256_fmadd_ps(p, r2, r), _mm256_set1_ps(1.f));
  __m256i pow2 =
      _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvtps_epi32(n), _mm256_set1_epi32(127)), 23);
  return _mm256_mul_ps(e, _mm256_castsi256_ps(pow2));
}

/// 1 / d per lane for normal d: the 12-bit estimate and one Newton step
/// (about 23 bits), without the divider's latency.
__attribute__((target("avx2,fma"))) inline __m256 reciprocalAvx2(__m256 d) {
  __m256 r = _mm256_rcp_ps(d);
  return _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.f)));
}

/// GELU per lane, 0.5 x (1 + erf(x / sqrt 2)), written as x (1 - erfc(z) / 2)
/// for x >= 0 and x erfc(z) / 2 below, z = |x| / sqrt 2, so that negative x
/// lose nothing to cancellation; erfc from kErfcPoly (fractional error under
/// 1.2e-7 for every z >= 0). Below x = -9 sqrt 2 the result is 0 (erfc(9) =
/// 4e-37: anything smaller would leave the normal range, and a denormal costs
/// a microcode assist on most Intel CPUs).
__attribute__((target("avx2,fma"))) inline __m256 geluAvx2(__m256 x) {
  const __m256 absMask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  __m256 z = _mm256_mul_ps(_mm256_and_ps(x, absMask), _mm256_set1_ps(0.70710678118654752f));
  __m256 t = reciprocalAvx2(_mm256_fmadd_ps(z, _mm256_set1_ps(0.5f), _mm256_set1_ps(1.f)));
  __m256 p = _mm256_set1_ps(kErfcPoly[0]);
  for (int i = 1; i < 10; ++i)
    p = _mm256_fmadd_ps(p, t, _mm256_set1_ps(kErfcPoly[i]));
  __m256 halfErfc =
      _mm256_mul_ps(_mm256_mul_ps(t, expAvx2(_mm256_fnmadd_ps(z, z, p))), _mm256_set1_ps(0.5f));
  __m256 negative = _mm256_cmp_ps(x, _mm256_setzero_ps(), _CMP_LT_OQ);
  __m256 factor =
      _mm256_blendv_ps(_mm256_sub_ps(_mm256_set1_ps(1.f), halfErfc), halfErfc, negative);
  __m256 vanishing = _mm256_cmp_ps(z, _mm256_set1_ps(9.f), _CMP_GT_OQ);
  factor = _mm256_andnot_ps(_mm256_and_ps(negative, vanishing), factor);
  return _mm256_mul_ps(x, factor);
}

/// GELU's tanh form per lane, 0.5 x (1 + tanh(u)) = x / (1 + e^(-2u)), u =
/// sqrt(2 / pi) (x + 0.044715 x^3); expAvx2's clamps keep e^(-2u) finite,
/// and the quotient stays normal (|x| >= 13 where it clamps).
__attribute__((target("avx2,fma"))) inline __m256 geluTanhAvx2(__m256 x) {
  __m256 x3 = _mm256_mul_ps(_mm256_mul_ps(x, x), x);
  __m256 u = _mm256_mul_ps(_mm256_fmadd_ps(x3, _mm256_set1_ps(0.044715f), x),
                           _mm256_set1_ps(0.79788456080286536f));
  __m256 e = expAvx2(_mm256_mul_ps(u, _mm256_set1_ps(-2.f)));
  // e below 1e30: the reciprocal stays normal.
  e = _mm256_min_ps(e, _mm256_set1_ps(1e30f));
  return _mm256_mul_ps(x, reciprocalAvx2(_mm256_add_ps(_mm256_set1_ps(1.f), e)));
}

/// expAvx2 on 16 lanes (2^n applied by scalef).
__attribute__((target("avx512f"))) inline __m512 expAvx512(__m512 x) {
  x = _mm512_min_ps(_mm512_set1_ps(kExpHi), _mm512_max_ps(_mm512_set1_ps(kExpLo), x));
  __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(x, _mm512_set1_ps(kLog2e)),
                                  _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Hi), x);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(kLn2Lo), r);
  __m512 p = _mm512_set1_ps(kExpPoly[0]);
  for (int i = 1; i < 6; ++i)
    p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(kExpPoly[i]));
  __m512 e = _mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(r, r), r), _mm512_set1_ps(1.f));
  return _mm512_scalef_ps(e, n);
}

/// reciprocalAvx2 on 16 lanes (14-bit estimate, one Newton step).
__attribute__((target("avx512f"))) inline __m512 reciprocalAvx512(__m512 d) {
  __m512 r = _mm512_rcp14_ps(d);
  return _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.f)));
}

/// geluAvx2 on 16 lanes.
__attribute__((target("avx512f"))) inline __m512 geluAvx512(__m512 x) {
  __m512 z = _mm512_mul_ps(_mm512_abs_ps(x), _mm512_set1_ps(0.70710678118654752f));
  __m512 t = reciprocalAvx512(_mm512_fmadd_ps(z, _mm512_set1_ps(0.5f), _mm512_set1_ps(1.f)));
  __m512 p = _mm512_set1_ps(kErfcPoly[0]);
  for (int i = 1; i < 10; ++i)
    p = _mm512_fmadd_ps(p, t, _mm512_set1_ps(kErfcPoly[i]));
  __m512 halfErfc =
      _mm512_mul_ps(_mm512_mul_ps(t, expAvx512(_mm512_fnmadd_ps(z, z, p))), _mm512_set1_ps(0.5f));
  __mmask16 negative = _mm512_cmp_ps_mask(x, _mm512_setzero_ps(), _CMP_LT_OQ);
  __m512 factor =
      _mm512_mask_blend_ps(negative, _mm512_sub_ps(_mm512_set1_ps(1.f), halfErfc), halfErfc);
  __mmask16 vanishing = negative & _mm512_cmp_ps_mask(z, _mm512_set1_ps(9.f), _CMP_GT_OQ);
  factor = _mm512_maskz_mov_ps(static_cast<__mmask16>(~vanishing), factor);
  return _mm512_mul_ps(x, factor);
}

/// geluTanhAvx2 on 16 lanes.
__attribute__((target("avx512f"))) inline __m512 geluTanhAvx512(__m512 x) {
  __m512 x3 = _mm512_mul_ps(_mm512_mul_ps(x, x), x);
  __m512 u = _mm512_mul_ps(_mm512_fmadd_ps(x3, _mm512_set1_ps(0.044715f), x),
                           _mm512_set1_ps(0.79788456080286536f));
  __m512 e =
      _mm512_min_ps(expAvx512(_mm512_mul_ps(u, _mm512_set1_ps(-2.f))), _mm512_set1_ps(1e30f));
  return _mm512_mul_ps(x, reciprocalAvx512(_mm512_add_ps(_mm512_set1_ps(1.f), e)));
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
