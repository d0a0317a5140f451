//===- SimdLanes.h - lane masks and deinterleaves of AVX2 vectors -*- C++ -*-===//
//
// The one spelling of the AVX2 lane helpers that the convolution and pool
// kernels share (im2col, the padded planes, Winograd's column phases,
// MaxPool's strided windows). Include only from translation units that
// compile x86 code with target attributes.
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

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_KERNELS_SIMDLANES_H
