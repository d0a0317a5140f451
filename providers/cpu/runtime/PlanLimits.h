//===- PlanLimits.h - what a CPU EP session lets a plan allocate -*- C++ -*-===//
#ifndef ORTC_PROVIDERS_CPU_RUNTIME_PLANLIMITS_H
#define ORTC_PROVIDERS_CPU_RUNTIME_PLANLIMITS_H

#include <cstdint>

namespace ortc::cpu {

/// What one session lets a plan allocate, from the CPU EP's options
/// max_tensor_bytes and max_arena_bytes: a plan whose fixed sizes are over
/// either is refused at load, and a run whose shapes make them so is refused
/// before it allocates anything.
struct PlanLimits {
  uint64_t maxTensorBytes = uint64_t(1) << 34; // 16 GiB
  uint64_t maxArenaBytes = uint64_t(1) << 36;  // 64 GiB
};

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_RUNTIME_PLANLIMITS_H
