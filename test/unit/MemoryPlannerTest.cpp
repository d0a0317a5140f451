//===- MemoryPlannerTest.cpp - liveness-based arena offsets ---------------===//

#include "runtime/ep/MemoryPlanner.h"

#include <gtest/gtest.h>

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

TEST(MemoryPlanner, ZeroSizedBuffersStillGetDistinctSlots) {
  std::vector<ArenaSlot> slots = {slot(0, 0, 1), slot(0, 0, 1)};
  ArenaPlan plan = planArena(slots, 64);
  EXPECT_NE(slots[0].offset, slots[1].offset);
  EXPECT_EQ(plan.bytes, 128u);
}

} // namespace
