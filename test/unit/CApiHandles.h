//===- CApiHandles.h - owning handles for the C API's objects ---*- C++ -*-===//
//
// unique_ptr types that release sessions, tensors and options through the C
// API, a whole-file reader and threads that start together: what the C
// API's tests share. Only the public
// header and the standard library, like the tests themselves.
//
//===----------------------------------------------------------------------===//
#ifndef ORTC_TEST_UNIT_CAPIHANDLES_H
#define ORTC_TEST_UNIT_CAPIHANDLES_H

#include "ortc_runtime.h"

#include <atomic>
#include <fstream>
#include <functional>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace ortc::testutil {

struct SessionDeleter {
  void operator()(OrtcSession *s) const { ortc_session_release(s); }
};
struct TensorDeleter {
  void operator()(OrtcTensor *t) const { ortc_tensor_release(t); }
};
struct OptionsDeleter {
  void operator()(OrtcSessionOptions *o) const { ortc_session_options_release(o); }
};
using SessionPtr = std::unique_ptr<OrtcSession, SessionDeleter>;
using TensorPtr = std::unique_ptr<OrtcTensor, TensorDeleter>;
using OptionsPtr = std::unique_ptr<OrtcSessionOptions, OptionsDeleter>;

inline std::vector<char> readFile(const std::string &path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), {});
}

/// Runs body(t) for t in [0, count) on as many threads, which start together
/// (so that their work overlaps), and returns when all have finished.
inline void onThreadsAtOnce(int count, const std::function<void(int)> &body) {
  std::atomic<int> ready{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < count; ++t)
    threads.emplace_back([&, t] {
      ++ready;
      while (ready.load() < count)
        std::this_thread::yield();
      body(t);
    });
  for (std::thread &thread : threads)
    thread.join();
}

} // namespace ortc::testutil

#endif // ORTC_TEST_UNIT_CAPIHANDLES_H
