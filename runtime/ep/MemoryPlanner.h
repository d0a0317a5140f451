//===- MemoryPlanner.h - liveness-based arena offsets -----------*- C++ -*-===//
//
// Places a partition's intermediate buffers in one arena. Two buffers may share
// bytes when their lifetimes (first step that writes, last step that reads)
// do not intersect. The compiler plans a static arena once; the runtime plans
// an arena with symbolic sizes once per set of symbol values. Plain C++.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_MEMORYPLANNER_H
#define ORTC_RUNTIME_EP_MEMORYPLANNER_H

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ortc {

struct ArenaSlot {
  uint64_t size = 0;   // bytes
  int firstStep = 0;   // the step that writes it
  int lastStep = 0;    // the last step that reads it (>= firstStep)
  uint64_t offset = 0; // out: within its region
};

struct ArenaPlan {
  uint64_t bytes = 0;
  uint64_t naiveBytes = 0; // what one buffer per value would take, for the report
};

/// Each buffer's live range over a plan's steps: from the first step that
/// writes it to the last step that reads it or a view of it (`rootOf` maps a
/// view to the buffer whose bytes it shares); -1 where there is none.
/// `io(step)` gives a step's input and output buffer ids (-1: omitted).
template <class Steps, class Io, class RootOf>
void bufferLiveRanges(const Steps &steps, Io io, RootOf rootOf, size_t numBuffers,
                      std::vector<int> &first, std::vector<int> &last) {
  first.assign(numBuffers, -1);
  last.assign(numBuffers, -1);
  int index = 0;
  for (const auto &step : steps) {
    const auto &[inputs, outputs] = io(step);
    for (int id : outputs)
      if (first[size_t(id)] < 0)
        first[size_t(id)] = index;
    for (int id : inputs)
      if (id >= 0)
        last[size_t(rootOf(id))] = index;
    ++index;
  }
}

/// Assigns every slot an offset aligned to `alignment` (a power of two):
/// largest first, each at the lowest offset that overlaps no live slot.
ArenaPlan planArena(std::vector<ArenaSlot> &slots, uint64_t alignment);

} // namespace ortc

#endif // ORTC_RUNTIME_EP_MEMORYPLANNER_H
