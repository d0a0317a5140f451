//===- MemoryPlannerTest.cpp - liveness-based arena offsets ---------------===//

#include "runtime/ep/MemoryPlanner.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

using namespace ortc;

namespace {

ArenaSlot slot(uint64_t size, int first, int last) {
  ArenaSlot s;
  s.size = size;
  s.firstStep = first;
  s.lastStep = last;
  return s;
}

bool overlapInTime(const ArenaSlot &a, const ArenaSlot &b) {
  return a.firstStep <= b.lastStep && b.firstStep <= a.lastStep;
}

/// No two slots live at the same step share a byte; every offset is aligned.
void expectValid(const std::vector<ArenaSlot> &slots, const ArenaPlan &plan, uint64_t alignment) {
  for (size_t i = 0; i < slots.size(); ++i) {
    const ArenaSlot &a = slots[i];
    EXPECT_EQ(a.offset % alignment, 0u);
    EXPECT_LE(a.offset + a.size, plan.bytes);
    for (size_t j = i + 1; j < slots.size(); ++j) {
      const ArenaSlot &b = slots[j];
      if (!overlapInTime(a, b))
        continue;
      bool disjoint = a.offset + a.size <= b.offset || b.offset + b.size <= a.offset;
      EXPECT_TRUE(disjoint) << "slots " << i << " and " << j << " overlap";
    }
  }
}

TEST(MemoryPlanner, ReusesMemoryOfDeadBuffers) {
  // A chain: each buffer is read only by the next step.
  std::vector<ArenaSlot> slots = {slot(1000, 0, 1), slot(1000, 1, 2), slot(1000, 2, 3),
                                  slot(1000, 3, 4)};
  ArenaPlan plan = planArena(slots, 64);
  expectValid(slots, plan, 64);
  // Two buffers are live at any step: two 1024-byte slots suffice.
  EXPECT_EQ(plan.bytes, 2048u);
  EXPECT_EQ(plan.naiveBytes, 4096u);
  EXPECT_EQ(slots[0].offset, slots[2].offset);
}

TEST(MemoryPlanner, KeepsLiveBuffersApart) {
  // All live at step 2.
  std::vector<ArenaSlot> slots = {slot(100, 0, 2), slot(200, 1, 2), slot(300, 2, 2)};
  ArenaPlan plan = planArena(slots, 64);
  expectValid(slots, plan, 64);
  EXPECT_EQ(plan.bytes, plan.naiveBytes);
}

TEST(MemoryPlanner, RandomPlansAreValidAndNoWorseThanNaive) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ArenaSlot> slots;
    int count = 1 + rng() % 40;
    for (int i = 0; i < count; ++i) {
      int first = rng() % 30;
      slots.push_back(slot(1 + rng() % 5000, first, first + rng() % 6));
    }
    ArenaPlan plan = planArena(slots, 64);
    expectValid(slots, plan, 64);
    EXPECT_LE(plan.bytes, plan.naiveBytes);
  }
}

// The plan of the straightforward scan (every placed slot checked against
// each new one), which planArena's index must reproduce offset for offset:
// long and short ranges, ranges given backwards (a hostile blob's), equal
// ends, repeated sizes.
TEST(MemoryPlanner, IndexedPlanEqualsTheScanOverEveryPlacedSlot) {
  std::mt19937 rng(11);
  for (int trial = 0; trial < 300; ++trial) {
    std::vector<ArenaSlot> slots;
    int count = 1 + rng() % 120, steps = 1 + rng() % 60;
    for (int i = 0; i < count; ++i) {
      int first = rng() % steps, length = rng() % 4 == 0 ? rng() % steps : rng() % 4;
      int last = rng() % 16 == 0 ? first - 1 - int(rng() % 5) : first + length;
      slots.push_back(slot(64 * (1 + rng() % 6) + rng() % 3, first, last));
    }
    std::vector<ArenaSlot> want = slots;
    std::vector<size_t> order(want.size());
    for (size_t i = 0; i < order.size(); ++i)
      order[i] = i;
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return want[a].size > want[b].size; });
    std::vector<size_t> placed;
    uint64_t peak = 0;
    auto rounded = [](uint64_t size) { return (std::max<uint64_t>(size, 1) + 63) / 64 * 64; };
    for (size_t i : order) {
      std::vector<std::pair<uint64_t, uint64_t>> busy;
      for (size_t o : placed)
        if (overlapInTime(want[o], want[i]))
          busy.push_back({want[o].offset, want[o].offset + rounded(want[o].size)});
      std::sort(busy.begin(), busy.end());
      uint64_t offset = 0;
      for (auto [begin, end] : busy) {
        if (offset + rounded(want[i].size) <= begin)
          break;
        offset = std::max(offset, end);
      }
      want[i].offset = offset;
      peak = std::max(peak, offset + rounded(want[i].size));
      placed.push_back(i);
    }
    ArenaPlan plan = planArena(slots, 64);
    EXPECT_EQ(plan.bytes, peak) << "trial " << trial;
    for (size_t i = 0; i < slots.size(); ++i)
      ASSERT_EQ(slots[i].offset, want[i].offset) << "trial " << trial << " slot " << i;
  }
}

TEST(MemoryPlanner, ZeroSizedBuffersStillGetDistinctSlots) {
  std::vector<ArenaSlot> slots = {slot(0, 0, 1), slot(0, 0, 1)};
  ArenaPlan plan = planArena(slots, 64);
  EXPECT_NE(slots[0].offset, slots[1].offset);
  EXPECT_EQ(plan.bytes, 128u);
}

} // namespace
