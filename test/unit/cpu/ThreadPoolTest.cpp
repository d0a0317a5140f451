//===- ThreadPoolTest.cpp - the CPU EP's thread pool ----------------------===//
//
// parallelFor covers every index exactly once when many callers share the
// pool, nested loops do not deadlock with every worker busy, and a pool of
// one thread runs the loop on the caller.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/ThreadPool.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <thread>
#include <vector>

namespace {

using namespace ortc;

TEST(ThreadPoolTest, CoversEveryIndexOnceFromManyCallers) {
  cpu::ThreadPool pool(4);
  EXPECT_EQ(pool.threads(), 4);
  std::vector<std::thread> callers;
  std::atomic<int> bad{0};
  for (int c = 0; c < 6; ++c)
    callers.emplace_back([&] {
      for (int round = 0; round < 50; ++round) {
        std::vector<std::atomic<int>> hits(257);
        pool.parallelFor(257, [&](int64_t i) {
          // A nested loop must not deadlock, even with every worker busy.
          std::atomic<int> inner{0};
          pool.parallelFor(3, [&](int64_t) { ++inner; });
          hits[i] += inner.load() == 3 ? 1 : 100;
        });
        for (auto &h : hits)
          if (h.load() != 1)
            ++bad;
      }
    });
  for (std::thread &caller : callers)
    caller.join();
  EXPECT_EQ(bad.load(), 0);

  cpu::ThreadPool single(1);
  EXPECT_EQ(single.threads(), 1);
  int64_t sum = 0;
  single.parallelFor(10, [&](int64_t i) { sum += i; }); // runs on the caller
  EXPECT_EQ(sum, 45);
}

} // namespace
