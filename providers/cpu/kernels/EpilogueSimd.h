//===- EpilogueSimd.h - GemmEpilogue's activation on one vector -*- C++ -*-===//
//
// The one AVX2 and the one AVX-512 spelling of GemmEpilogue's activations,
// for the kernels that apply the epilogue in registers before they store
// (the GEMM microkernels, the depthwise convolution). Include only from
// translation units that compile x86 code with target attributes.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_EPILOGUESIMD_H
#define ORTC_PROVIDERS_CPU_KERNELS_EPILOGUESIMD_H

#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/VectorMath.h"

#include <immintrin.h>

/// The target attributes of the kernels' AVX2 and AVX-512 functions.
#define ORTC_AVX2 __attribute__((target("avx2,fma")))
#define ORTC_AVX512 __attribute__((target("avx512f,avx2,fma")))

namespace ortc::cpu {

/// Activation `act` of v with e's parameters, with the NaN behaviour of
/// GemmEpilogue::apply. A kernel that passes a constant `act` gets the switch
/// folded away.
__attribute__((target("avx2,fma"))) inline __m256 activateAvx2(GemmEpilogue::Activation act,
                                                               const GemmEpilogue &e, __m256 v) {
  using A = GemmEpilogue::Activation;
  switch (act) {
  case A::None:
    return v;
  case A::Relu: // v > 0 ? v : 0 (NaN: 0), as max_ps(v, 0) returns 0 when unordered
    return _mm256_max_ps(v, _mm256_setzero_ps());
  case A::Clip: // min(max(v, lo), hi) as std::min/std::max: NaN stays NaN
    return _mm256_min_ps(_mm256_set1_ps(e.hi), _mm256_max_ps(_mm256_set1_ps(e.lo), v));
  case A::LeakyRelu: // v >= 0 ? v : v * alpha
    return _mm256_blendv_ps(_mm256_mul_ps(v, _mm256_set1_ps(e.alpha)), v,
                            _mm256_cmp_ps(v, _mm256_setzero_ps(), _CMP_GE_OQ));
  case A::Gelu:
    return geluAvx2(v);
  case A::GeluTanh:
    return geluTanhAvx2(v);
  }
  return v;
}

// GCC 12's _mm512_max_ps/_mm512_min_ps pass an undefined vector as the
// unused merge source, which -Wmaybe-uninitialized reports at every caller.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
/// The same on one zmm.
__attribute__((target("avx512f"))) inline __m512 activateAvx512(GemmEpilogue::Activation act,
                                                                const GemmEpilogue &e, __m512 v) {
  using A = GemmEpilogue::Activation;
  switch (act) {
  case A::None:
    return v;
  case A::Relu:
    return _mm512_max_ps(v, _mm512_setzero_ps());
  case A::Clip:
    return _mm512_min_ps(_mm512_set1_ps(e.hi), _mm512_max_ps(_mm512_set1_ps(e.lo), v));
  case A::LeakyRelu:
    return _mm512_mask_blend_ps(_mm512_cmp_ps_mask(v, _mm512_setzero_ps(), _CMP_GE_OQ),
                                _mm512_mul_ps(v, _mm512_set1_ps(e.alpha)), v);
  case A::Gelu:
    return geluAvx512(v);
  case A::GeluTanh:
    return geluTanhAvx512(v);
  }
  return v;
}
#pragma GCC diagnostic pop

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_KERNELS_EPILOGUESIMD_H
