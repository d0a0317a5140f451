//===- MemoryPlanner.cpp - liveness-based arena offsets -------------------===//

#include "runtime/ep/MemoryPlanner.h"

#include <algorithm>
#include <numeric>

namespace ortc {

static uint64_t alignUp(uint64_t value, uint64_t alignment) {
  return (value + alignment - 1) & ~(alignment - 1);
}

ArenaPlan planArena(std::vector<ArenaSlot> &slots, uint64_t alignment) {
  ArenaPlan plan;
  std::vector<size_t> order(slots.size());
  std::iota(order.begin(), order.end(), size_t(0));
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return slots[a].size > slots[b].size; });
  std::vector<size_t> placed;
  uint64_t peak = 0;
  for (size_t index : order) {
    ArenaSlot &slot = slots[index];
    uint64_t size = alignUp(std::max<uint64_t>(slot.size, 1), alignment);
    // The live slots already placed, by offset; try each gap in turn.
    std::vector<std::pair<uint64_t, uint64_t>> busy;
    for (size_t other : placed) {
      const ArenaSlot &o = slots[other];
      if (o.firstStep <= slot.lastStep && slot.firstStep <= o.lastStep)
        busy.push_back({o.offset, o.offset + alignUp(std::max<uint64_t>(o.size, 1), alignment)});
    }
    std::sort(busy.begin(), busy.end());
    uint64_t offset = 0;
    for (auto [begin, end] : busy) {
      if (offset + size <= begin)
        break;
      offset = std::max(offset, end);
    }
    slot.offset = offset;
    peak = std::max(peak, offset + size);
    placed.push_back(index);
    plan.naiveBytes += size;
  }
  plan.bytes = peak;
  return plan;
}

} // namespace ortc
