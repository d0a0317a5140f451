//===- ConcurrencyTest.cpp - many threads on the C API --------------------===//
//
// What an application serving requests does: one session run from many
// threads at once, and sessions created and released from many threads at
// once. Run under ThreadSanitizer by `scripts/test.sh --sanitizer=thread`
// (ctest label "concurrency"), and in every other build too. The models come
// from capi_models.py (the capi_models fixture); only the public header is
// included.
//
//===----------------------------------------------------------------------===//

#include "ortc_runtime.h"

// Beside this file: owning handles for the C API's objects.
#include "CApiHandles.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>
#include <thread>
#include <vector>

namespace {

const std::string kModels = ORTC_CAPI_MODELS;
const std::string kParallel = kModels + "/parallel/model_ctx.onnx";
const std::string kParallelDir = kModels + "/parallel";
const std::string kInline = kModels + "/inline/model_ctx.onnx";
constexpr int32_t kFloat = 1;
constexpr int kThreads = 8;

using ortc::testutil::onThreadsAtOnce;
using ortc::testutil::OptionsPtr;
using ortc::testutil::readFile;
using ortc::testutil::SessionPtr;
using ortc::testutil::TensorPtr;

/// Runs per thread: ORTC_CONCURRENCY_RUNS, or 1,000.
int runsPerThread() {
  const char *text = std::getenv("ORTC_CONCURRENCY_RUNS");
  int runs = text ? std::atoi(text) : 0;
  return runs > 0 ? runs : 1000;
}

OptionsPtr twoThreads() {
  OrtcSessionOptions *options = nullptr;
  EXPECT_EQ(ortc_session_options_create(&options), ORTC_OK);
  EXPECT_EQ(ortc_session_options_set_intra_op_threads(options, 2), ORTC_OK);
  return OptionsPtr(options);
}

/// Thread t's input: batch 1 + t % 3, values from its own seed.
std::vector<float> inputFor(int t, int64_t &batch) {
  batch = 1 + t % 3;
  std::vector<float> x(size_t(batch) * 8 * 16 * 16);
  uint32_t seed = 977u * uint32_t(t + 1);
  for (float &v : x) {
    seed = seed * 1664525u + 1013904223u;
    v = float(int(seed >> 20) % 257 - 128) / 64;
  }
  return x;
}

/// One run of the parallel model; the logits, or empty with `error` set.
std::vector<float> runParallel(OrtcSession *session, std::vector<float> &x, int64_t batch,
                               std::string &error) {
  int64_t shape[] = {batch, 8, 16, 16};
  OrtcTensor *input = nullptr;
  if (ortc_tensor_wrap(kFloat, shape, 4, x.data(), x.size() * sizeof(float), &input) != ORTC_OK) {
    error = ortc_last_error();
    return {};
  }
  TensorPtr in(input);
  const OrtcTensor *inputs[] = {in.get()};
  OrtcTensor *outputs[] = {nullptr};
  if (ortc_session_run(session, nullptr, inputs, 1, nullptr, outputs, 1) != ORTC_OK) {
    error = ortc_last_error();
    return {};
  }
  TensorPtr out(outputs[0]);
  const float *data = static_cast<const float *>(ortc_tensor_data(out.get()));
  return std::vector<float>(data, data + ortc_tensor_byte_size(out.get()) / sizeof(float));
}

/// Fails the test for any error, failure or mismatch the threads recorded.
void report(const std::vector<std::string> &errors, const std::atomic<int> &failures,
            const std::atomic<int> &mismatches) {
  for (size_t t = 0; t < errors.size(); ++t)
    EXPECT_TRUE(errors[t].empty()) << "thread " << t << ": " << errors[t];
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0);
}

TEST(Concurrency, OneSessionRunFromEightThreadsMatchesSerialRuns) {
  OptionsPtr options = twoThreads();
  OrtcSession *raw = nullptr;
  ASSERT_EQ(ortc_session_create(kParallel.c_str(), options.get(), &raw), ORTC_OK)
      << ortc_last_error();
  SessionPtr session(raw);

  // The reference: each thread's input run alone, before any concurrency.
  std::vector<std::vector<float>> inputs(kThreads), expected(kThreads);
  std::vector<int64_t> batches(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    inputs[t] = inputFor(t, batches[t]);
    std::string error;
    expected[t] = runParallel(session.get(), inputs[t], batches[t], error);
    ASSERT_EQ(expected[t].size(), size_t(batches[t]) * 10) << error;
  }

  const int runs = runsPerThread();
  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::string> errors(kThreads);
  onThreadsAtOnce(kThreads, [&](int t) {
    for (int run = 0; run < runs; ++run) {
      std::vector<float> got = runParallel(session.get(), inputs[t], batches[t], errors[t]);
      if (got.empty()) {
        ++failures;
        return;
      }
      if (std::memcmp(got.data(), expected[t].data(), got.size() * sizeof(float)) != 0)
        ++mismatches;
    }
  });
  report(errors, failures, mismatches);
}

TEST(Concurrency, SessionsCreatedAndReleasedFromManyThreads) {
  // Every thread loads, runs and releases sessions in a loop: from a path with
  // a sidecar, and from a buffer with the blob inline; some keep two alive.
  const std::vector<char> inlineBytes = readFile(kInline);
  ASSERT_FALSE(inlineBytes.empty());
  int64_t batch = 0;
  std::vector<float> x = inputFor(0, batch);
  std::string error;
  std::vector<float> expected;
  {
    OrtcSession *raw = nullptr;
    ASSERT_EQ(ortc_session_create(kParallel.c_str(), nullptr, &raw), ORTC_OK) << ortc_last_error();
    SessionPtr session(raw);
    expected = runParallel(session.get(), x, batch, error);
    ASSERT_FALSE(expected.empty()) << error;
  }

  constexpr int kRounds = 25;
  std::atomic<int> failures{0}, mismatches{0};
  std::vector<std::string> errors(kThreads);
  onThreadsAtOnce(kThreads, [&](int t) {
    std::vector<float> mine = x;
    OptionsPtr options = twoThreads();
    for (int round = 0; round < kRounds; ++round) {
      OrtcSession *fromPath = nullptr, *fromBuffer = nullptr;
      if (ortc_session_create(kParallel.c_str(), t % 2 ? options.get() : nullptr, &fromPath) !=
              ORTC_OK ||
          ortc_session_create_from_buffer(inlineBytes.data(), inlineBytes.size(), nullptr,
                                          options.get(), &fromBuffer) != ORTC_OK) {
        errors[t] = ortc_last_error();
        ortc_session_release(fromPath);
        ++failures;
        return;
      }
      SessionPtr a(fromPath), b(fromBuffer);
      std::string runError;
      std::vector<float> got = runParallel(a.get(), mine, batch, runError);
      if (got != expected) {
        errors[t] = runError;
        ++mismatches;
      }
      if (round % 3 == 0)
        b.reset(); // released before the other, on the same thread
      if (ortc_session_input_count(a.get()) != 1)
        ++failures;
    }
  });
  report(errors, failures, mismatches);
}

} // namespace
