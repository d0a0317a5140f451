//===- EpilogueAvx2.h - GemmEpilogue's activation on one ymm -----*- C++ -*-===//
//
// The one AVX2 spelling of GemmEpilogue's activations, for the kernels that
// apply the epilogue in registers before they store (the GEMM microkernel,
// the depthwise convolution). Include only from translation units that
// compile x86 code with target attributes.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_EPILOGUEAVX2_H
#define ORTC_PROVIDERS_CPU_KERNELS_EPILOGUEAVX2_H

#include "providers/cpu/kernels/Gemm.h"

#include <immintrin.h>

namespace ortc::cpu {

/// Activation `act` of v with e's parameters, with the NaN behaviour of
/// GemmEpilogue::apply. A kernel that passes a constant `act` gets the switch
/// folded away.
__attribute__((target("avx2,fma"))) inline __m256
activateAvx2(GemmEpilogue::Activation act, const GemmEpilogue &e, __m256 v) {
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
  }
  return v;
}

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_KERNELS_EPILOGUEAVX2_H
