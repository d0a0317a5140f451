//===- SimdLanes.h - lane masks and deinterleaves of AVX2 vectors -*- C++ -*-===//
//
// The one spelling of the AVX2 lane helpers that the convolution and pool
// kernels share (im2col, the padded planes, the column phases of Winograd
// and of the narrow conv, MaxPool's strided windows). Include only from
// translation units that compile x86 code with target attributes.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_SIMDLANES_H
#define ORTC_PROVIDERS_CPU_KERNELS_SIMDLANES_H

#include <cstdint>
#include <immintrin.h>

namespace ortc::cpu {

/// Lanes [0, count) set.
__attribute__((target("avx2,fma"))) inline __m256i firstLanes(int64_t count) {
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(int(count)),
                            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}

/// Lanes 0, 2, .., 14 of the 16 floats a then b, in order.
__attribute__((target("avx2,fma"))) inline __m256 evenLanes(__m256 a, __m256 b) {
  // Per 128-bit half: a0 a2 b0 b2 | a4 a6 b4 b6; then the 64-bit pairs reordered.
  __m256 pairs = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), _MM_SHUFFLE(3, 1, 2, 0)));
}

/// Lanes 1, 3, .., 15 of the 16 floats a then b, in order.
__attribute__((target("avx2,fma"))) inline __m256 oddLanes(__m256 a, __m256 b) {
  __m256 pairs = _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), _MM_SHUFFLE(3, 1, 2, 0)));
}

/// Splits src's columns [0, c) into the T column phases of a padded row
/// (phase p at row + p * phaseW), src's column c being padded column
/// padLeft + c (phase (padLeft + c) % T, index (padLeft + c) / T), 8 T at a
/// time while whole; returns c. T is 2 or 4; the caller finishes the rest.
template <int T>
__attribute__((target("avx2,fma"))) int64_t splitColumnPhasesAvx2(const float *src, int64_t count,
                                                                  int64_t padLeft, int64_t phaseW,
                                                                  float *row) {
  static_assert(T == 2 || T == 4, "8 T columns split by evenLanes / oddLanes");
  // Element c + k (c a multiple of T) is padded column padLeft + c + k:
  // phase (padLeft + k) % T, index c / T + (padLeft + k) / T.
  float *to[T];
  for (int k = 0; k < T; ++k)
    to[k] = row + (padLeft + k) % T * phaseW + (padLeft + k) / T;
  int64_t c = 0;
  for (; c + 8 * T <= count; c += 8 * T) {
    __m256 a = _mm256_loadu_ps(src + c), b = _mm256_loadu_ps(src + c + 8);
    __m256 even = evenLanes(a, b), odd = oddLanes(a, b);
    if constexpr (T == 2) {
      _mm256_storeu_ps(to[0] + c / 2, even);
      _mm256_storeu_ps(to[1] + c / 2, odd);
    } else {
      // Elements 16 .. 31 split the same way, then each pair of halves:
      // the evens' evens are k = 0, their odds k = 2, ...
      __m256 e = _mm256_loadu_ps(src + c + 16), f = _mm256_loadu_ps(src + c + 24);
      __m256 even2 = evenLanes(e, f), odd2 = oddLanes(e, f);
      _mm256_storeu_ps(to[0] + c / 4, evenLanes(even, even2));
      _mm256_storeu_ps(to[2] + c / 4, oddLanes(even, even2));
      _mm256_storeu_ps(to[1] + c / 4, evenLanes(odd, odd2));
      _mm256_storeu_ps(to[3] + c / 4, oddLanes(odd, odd2));
    }
  }
  return c;
}

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_KERNELS_SIMDLANES_H
