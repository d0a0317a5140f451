//===- ThreadPool.cpp -----------------------------------------------------===//

#include "providers/cpu/kernels/ThreadPool.h"

#include <algorithm>
#include <chrono>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define ORTC_CPU_RELAX() _mm_pause()
#else
#define ORTC_CPU_RELAX() std::this_thread::yield()
#endif

namespace ortc::cpu {

namespace {
// How long an idle worker or a waiting caller polls before it blocks.
constexpr std::chrono::microseconds kSpin(300);

/// Polls `ready` for up to kSpin; true when it became true.
template <typename Ready> bool spinUntil(Ready ready) {
  auto until = std::chrono::steady_clock::now() + kSpin;
  for (int i = 0;; ++i) {
    if (ready())
      return true;
    ORTC_CPU_RELAX();
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until)
      return false;
  }
}
} // namespace

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i)
    workers_.emplace_back([this] { workerMain(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (std::thread &worker : workers_)
    worker.join();
}

void ThreadPool::work(Loop &loop) {
  for (int64_t i; (i = loop.next.fetch_add(1)) < loop.n;) {
    (*loop.body)(i);
    loop.done.fetch_add(1);
  }
}

void ThreadPool::workerMain() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (loops_.empty() && !stopping_) {
      lock.unlock();
      spinUntil([&] { return queued_.load() > 0 || stopping_.load(); });
      lock.lock();
    }
    wake_.wait(lock, [&] { return stopping_ || !loops_.empty(); });
    if (loops_.empty())
      return; // stopping, nothing left
    Loop *loop = loops_.front();
    ++loop->helpers;
    lock.unlock();
    work(*loop);
    lock.lock();
    // Every index is handed out: no one else needs to find this loop.
    auto it = std::find(loops_.begin(), loops_.end(), loop);
    if (it != loops_.end()) {
      loops_.erase(it);
      --queued_;
    }
    --loop->helpers;
    finished_.notify_all();
  }
}

void ThreadPool::parallelFor(int64_t n, const std::function<void(int64_t)> &body) {
  if (n <= 0)
    return;
  if (workers_.empty() || n == 1) {
    for (int64_t i = 0; i < n; ++i)
      body(i);
    return;
  }
  Loop loop;
  loop.body = &body;
  loop.n = n;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    loops_.push_back(&loop);
    ++queued_;
  }
  wake_.notify_all();
  work(loop);
  spinUntil([&] { return loop.done.load() == n; });
  // The loop lives on this stack: wait until no worker can still touch it.
  std::unique_lock<std::mutex> lock(mutex_);
  auto it = std::find(loops_.begin(), loops_.end(), &loop);
  if (it != loops_.end()) {
    loops_.erase(it);
    --queued_;
  }
  finished_.wait(lock, [&] { return loop.helpers == 0 && loop.done.load() == n; });
}

void parallelFor(ThreadPool *pool, int64_t n, const std::function<void(int64_t)> &body) {
  if (pool) {
    pool->parallelFor(n, body);
    return;
  }
  for (int64_t i = 0; i < n; ++i)
    body(i);
}

} // namespace ortc::cpu
