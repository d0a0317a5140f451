//===- TestRng.h - reproducible test data for the CPU kernel tests -*- C++ -*-===//

#ifndef ORTC_TEST_UNIT_CPU_TESTRNG_H
#define ORTC_TEST_UNIT_CPU_TESTRNG_H

#include <cstdint>

namespace ortc::cpu::test_support {

/// Deterministic values in [-1, 1) (xorshift), so failures reproduce.
struct Rng {
  uint64_t state;
  explicit Rng(uint64_t seed) : state(seed * 0x9E3779B97F4A7C15ull + 1) {}
  float next() {
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return static_cast<float>((state >> 40) & 0xFFFFFF) / 8388608.0f - 1.0f;
  }
};

} // namespace ortc::cpu::test_support

#endif // ORTC_TEST_UNIT_CPU_TESTRNG_H
