//===- ThreadPool.h - intra-op parallelism for the CPU EP -------*- C++ -*-===//
//
// A fixed set of worker threads that help with parallelFor loops. The calling
// thread always takes part, so a loop finishes even when every worker is busy
// with another caller's loop (several runs of one session share the pool) and
// a loop may be nested inside another. Workers and callers spin briefly
// before they sleep: the loops of one run come a fraction of a millisecond
// apart, and waking a sleeping thread (on a virtual machine especially) costs
// about that much. Plain C++17; no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_THREADPOOL_H
#define ORTC_PROVIDERS_CPU_KERNELS_THREADPOOL_H

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace ortc::cpu {

/// Fewest elements one row block of a split generated kernel gets
/// (PlanExecutor: below that, waking threads costs more than it saves); the
/// compiler marks only kernels big enough for two.
constexpr int64_t kMinElementsPerBlock = int64_t(1) << 15;

class ThreadPool {
public:
  /// `threads` counts the caller: 1 (or less) starts no workers.
  explicit ThreadPool(int threads);
  ~ThreadPool();
  ThreadPool(const ThreadPool &) = delete;
  ThreadPool &operator=(const ThreadPool &) = delete;

  /// Threads a loop may use, the caller included.
  int threads() const { return int(workers_.size()) + 1; }

  /// Calls body(i) once for every i in [0, n), on the caller and the workers,
  /// and returns when all calls have returned. `body` must not throw.
  void parallelFor(int64_t n, const std::function<void(int64_t)> &body);

private:
  struct Loop {
    const std::function<void(int64_t)> *body;
    int64_t n;
    std::atomic<int64_t> next{0};
    std::atomic<int64_t> done{0};
    int helpers = 0; // workers inside this loop; guarded by mutex_
  };
  static void work(Loop &loop);
  void workerMain();

  std::mutex mutex_;
  std::condition_variable wake_, finished_;
  std::deque<Loop *> loops_; // loops with indices left to hand out
  std::atomic<int> queued_{0}; // loops_.size(), readable without the lock
  std::atomic<bool> stopping_{false}; // set under mutex_, polled without it
  std::vector<std::thread> workers_;
};

/// Calls body(i) for i in [0, n): on `pool` when it is non-null, else in order
/// on the caller.
void parallelFor(ThreadPool *pool, int64_t n, const std::function<void(int64_t)> &body);

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_KERNELS_THREADPOOL_H
