//===- MemoryPlanner.h - liveness-based arena offsets -----------*- C++ -*-===//
//
// Places a partition's intermediate buffers in one arena. Two buffers may share
// bytes when their lifetimes (first step that writes, last step that reads)
// do not intersect. Buffers with a batch dimension scale with the batch: they
// are planned at batch 1 in their own region, and the runtime multiplies their
// offsets and sizes by the batch, which keeps every non-overlap intact; the
// other buffers live in a fixed region after it.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_COMPILE_MEMORYPLANNER_H
#define ORTC_PROVIDERS_CPU_COMPILE_MEMORYPLANNER_H

#include <cstdint>
#include <vector>

namespace ortc::cpu {

struct ArenaSlot {
  uint64_t size = 0;        // bytes (per unit of batch when batchScaled)
  bool batchScaled = false;
  int firstStep = 0;        // the step that writes it
  int lastStep = 0;         // the last step that reads it (>= firstStep)
  uint64_t offset = 0;      // out: within its region
};

struct ArenaPlan {
  uint64_t batchScaledBytes = 0;
  uint64_t fixedBytes = 0;
  // What one buffer per value would take, for the report.
  uint64_t naiveBatchScaledBytes = 0;
  uint64_t naiveFixedBytes = 0;
};

/// Assigns every slot an offset aligned to `alignment` (a power of two):
/// largest first, each at the lowest offset that overlaps no live slot.
ArenaPlan planArena(std::vector<ArenaSlot> &slots, uint64_t alignment);

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_COMPILE_MEMORYPLANNER_H
