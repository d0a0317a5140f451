//===- MemoryPlannerTest.cpp - liveness-based arena offsets ---------------===//

#include "providers/cpu/compile/MemoryPlanner.h"

#include <gtest/gtest.h>

#include <random>

using namespace ortc::cpu;

namespace {

ArenaSlot slot(uint64_t size, int first, int last, bool scaled = false) {
  ArenaSlot s;
  s.size = size;
  s.firstStep = first;
  s.lastStep = last;
  s.batchScaled = scaled;
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
    EXPECT_LE(a.offset + a.size, a.batchScaled ? plan.batchScaledBytes : plan.fixedBytes);
    for (size_t j = i + 1; j < slots.size(); ++j) {
      const ArenaSlot &b = slots[j];
      if (a.batchScaled != b.batchScaled || !overlapInTime(a, b))
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
  EXPECT_EQ(plan.fixedBytes, 2048u);
  EXPECT_EQ(plan.naiveFixedBytes, 4096u);
  EXPECT_EQ(slots[0].offset, slots[2].offset);
}

TEST(MemoryPlanner, KeepsLiveBuffersApart) {
  // All live at step 2.
  std::vector<ArenaSlot> slots = {slot(100, 0, 2), slot(200, 1, 2), slot(300, 2, 2)};
  ArenaPlan plan = planArena(slots, 64);
  expectValid(slots, plan, 64);
  EXPECT_EQ(plan.fixedBytes, plan.naiveFixedBytes);
}

TEST(MemoryPlanner, SeparatesBatchScaledFromFixed) {
  std::vector<ArenaSlot> slots = {slot(512, 0, 1, true), slot(64, 0, 1, false),
                                  slot(512, 2, 3, true)};
  ArenaPlan plan = planArena(slots, 64);
  expectValid(slots, plan, 64);
  EXPECT_EQ(plan.batchScaledBytes, 512u);
  EXPECT_EQ(plan.fixedBytes, 64u);
}

TEST(MemoryPlanner, ScaledOffsetsStayDisjointAtAnyBatch) {
  // The runtime multiplies batch-scaled offsets and sizes by the batch.
  std::vector<ArenaSlot> slots = {slot(100, 0, 3, true), slot(300, 1, 2, true),
                                  slot(50, 2, 4, true), slot(70, 4, 5, true)};
  ArenaPlan plan = planArena(slots, 64);
  for (uint64_t batch : {1u, 2u, 7u, 64u}) {
    for (size_t i = 0; i < slots.size(); ++i)
      for (size_t j = i + 1; j < slots.size(); ++j) {
        if (!overlapInTime(slots[i], slots[j]))
          continue;
        uint64_t ai = slots[i].offset * batch, ae = ai + slots[i].size * batch;
        uint64_t bi = slots[j].offset * batch, be = bi + slots[j].size * batch;
        EXPECT_TRUE(ae <= bi || be <= ai) << "batch " << batch;
      }
    for (const ArenaSlot &s : slots)
      EXPECT_LE((s.offset + s.size) * batch, plan.batchScaledBytes * batch);
  }
}

TEST(MemoryPlanner, RandomPlansAreValidAndNoWorseThanNaive) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<ArenaSlot> slots;
    int count = 1 + rng() % 40;
    for (int i = 0; i < count; ++i) {
      int first = rng() % 30;
      slots.push_back(slot(1 + rng() % 5000, first, first + rng() % 6, rng() % 3 == 0));
    }
    ArenaPlan plan = planArena(slots, 64);
    expectValid(slots, plan, 64);
    EXPECT_LE(plan.fixedBytes, plan.naiveFixedBytes);
    EXPECT_LE(plan.batchScaledBytes, plan.naiveBatchScaledBytes);
  }
}

TEST(MemoryPlanner, ZeroSizedBuffersStillGetDistinctSlots) {
  std::vector<ArenaSlot> slots = {slot(0, 0, 1), slot(0, 0, 1)};
  ArenaPlan plan = planArena(slots, 64);
  EXPECT_NE(slots[0].offset, slots[1].offset);
  EXPECT_EQ(plan.fixedBytes, 128u);
}

} // namespace
