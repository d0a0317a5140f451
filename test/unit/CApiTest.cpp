//===- CApiTest.cpp - libortc_runtime.so through its public header --------===//
//
// Links only libortc_runtime.so and GoogleTest, with only the header's folder
// on the include path: the C header is all a user needs. The models come from
// the capi_models fixture (capi_models.py): y = Relu(x @ W + b), z = y * s,
// with a dynamic batch, compiled with the blob inline and in a sidecar. Every
// value is exact in float32, so results are compared bit for bit.
//
//===----------------------------------------------------------------------===//

#include "ortc_runtime.h"

// Beside this file (no include path needed): the tests' scratch directories
// and owning handles.
#include "CApiHandles.h"
#include "ScratchDir.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace {

namespace fs = std::filesystem;

const std::string kModels = ORTC_CAPI_MODELS;
const std::string kInline = kModels + "/inline/model_ctx.onnx";
const std::string kSidecarDir = kModels + "/sidecar";
const std::string kSidecar = kSidecarDir + "/model_ctx.onnx";
constexpr int32_t kFloat = 1, kInt64 = 7;

using ortc::testutil::readFile;
using ortc::testutil::SessionPtr;
using ortc::testutil::TensorPtr;

std::string lastError() { return ortc_last_error(); }

/// Whether this thread's last error holds `text`.
::testing::AssertionResult lastErrorHas(const std::string &text) {
  std::string error = lastError();
  if (error.find(text) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "'" << text << "' is not in the last error: " << error;
}

SessionPtr load(const std::string &path, const OrtcSessionOptions *options = nullptr) {
  OrtcSession *session = nullptr;
  OrtcStatus status = ortc_session_create(path.c_str(), options, &session);
  EXPECT_EQ(status, ORTC_OK) << lastError();
  return SessionPtr(session);
}

void writeFile(const std::string &path, const std::vector<char> &bytes) {
  std::ofstream(path, std::ios::binary).write(bytes.data(), std::streamsize(bytes.size()));
}

/// Owns the values of one run's inputs and the reference outputs.
struct Case {
  int64_t batch;
  std::vector<float> x, s, y, z;

  Case(int64_t batch, unsigned seed) : batch(batch) {
    // Multiples of 1/2 in [-2, 2]: every product and sum below is exact.
    auto value = [&seed] {
      seed = seed * 1103515245u + 12345u;
      return float(int((seed >> 16) % 9) - 4) / 2;
    };
    for (int64_t i = 0; i < batch * 4; ++i)
      x.push_back(value());
    for (int64_t i = 0; i < batch * 3; ++i)
      s.push_back(value());
    for (int64_t n = 0; n < batch; ++n)
      for (int j = 0; j < 3; ++j) {
        float acc = float(j - 1) / 2;
        for (int k = 0; k < 4; ++k)
          acc += x[n * 4 + k] * (float(k - j) / 4);
        float relu = acc > 0 ? acc : 0;
        y.push_back(relu);
        z.push_back(relu * s[n * 3 + j]);
      }
  }

  TensorPtr xTensor() { return wrap(x, 4); }
  TensorPtr sTensor() { return wrap(s, 3); }

  TensorPtr wrap(std::vector<float> &values, int64_t cols) {
    int64_t shape[] = {batch, cols};
    OrtcTensor *t = nullptr;
    EXPECT_EQ(ortc_tensor_wrap(kFloat, shape, 2, values.data(), values.size() * sizeof(float), &t),
              ORTC_OK)
        << lastError();
    return TensorPtr(t);
  }
};

std::vector<float> values(OrtcTensor *t) {
  const float *data = static_cast<const float *>(ortc_tensor_data(t));
  return std::vector<float>(data, data + ortc_tensor_byte_size(t) / sizeof(float));
}

std::vector<int64_t> shapeOf(const OrtcTensor *t) {
  return std::vector<int64_t>(ortc_tensor_shape(t), ortc_tensor_shape(t) + ortc_tensor_rank(t));
}

/// Runs with both inputs by name and both outputs allocated by the library;
/// checks the values against the reference.
void expectRunMatches(OrtcSession *session, int64_t batch, unsigned seed) {
  Case c(batch, seed);
  TensorPtr x = c.xTensor(), s = c.sTensor();
  const char *inNames[] = {"x", "s"};
  const OrtcTensor *ins[] = {x.get(), s.get()};
  OrtcTensor *outs[2] = {nullptr, nullptr};
  ASSERT_EQ(ortc_session_run(session, inNames, ins, 2, nullptr, outs, 2), ORTC_OK) << lastError();
  TensorPtr y(outs[0]), z(outs[1]);
  EXPECT_EQ(shapeOf(y.get()), (std::vector<int64_t>{batch, 3}));
  EXPECT_EQ(ortc_tensor_element_type(y.get()), kFloat);
  EXPECT_EQ(values(y.get()), c.y);
  EXPECT_EQ(values(z.get()), c.z);
}

TensorPtr floats(std::vector<float> &values) {
  int64_t shape[] = {int64_t(values.size())};
  OrtcTensor *t = nullptr;
  EXPECT_EQ(ortc_tensor_wrap(kFloat, shape, 1, values.data(), values.size() * sizeof(float), &t),
            ORTC_OK)
      << lastError();
  return TensorPtr(t);
}

TensorPtr container(int32_t kind, int present, std::vector<const OrtcTensor *> tensors) {
  OrtcTensor *value = nullptr;
  EXPECT_EQ(ortc_value_create(kind, kFloat, present, tensors.data(), tensors.size(), &value),
            ORTC_OK)
      << lastError();
  return TensorPtr(value);
}

// A sequence and an optional in, a sequence and tensors out (the model of
// capi_models.py's build_sequence_model).
TEST(CApi, SequencesAndOptionals) {
  SessionPtr session = load(kModels + "/sequence/model_ctx.onnx");
  ASSERT_TRUE(session);
  EXPECT_EQ(ortc_session_input_kind(session.get(), 0), ORTC_VALUE_SEQUENCE);
  EXPECT_EQ(ortc_session_input_kind(session.get(), 1), ORTC_VALUE_TENSOR);
  EXPECT_EQ(ortc_session_input_kind(session.get(), 2), ORTC_VALUE_OPTIONAL_TENSOR);
  EXPECT_EQ(ortc_session_output_kind(session.get(), 1), ORTC_VALUE_SEQUENCE);
  EXPECT_EQ(ortc_session_input_kind(session.get(), 3), -1);

  std::vector<float> a = {1, 2}, b = {3}, e = {4, 5, 6};
  TensorPtr ta = floats(a), tb = floats(b), extra = floats(e);
  TensorPtr parts = container(ORTC_VALUE_SEQUENCE, 1, {ta.get(), tb.get()});
  a[0] = 100; // the sequence holds copies
  for (int present : {0, 1}) {
    SCOPED_TRACE(present);
    TensorPtr maybe = present ? container(ORTC_VALUE_OPTIONAL_TENSOR, 1, {tb.get()})
                              : container(ORTC_VALUE_OPTIONAL_TENSOR, 0, {});
    EXPECT_EQ(ortc_value_present(maybe.get()), present);
    const OrtcTensor *ins[] = {parts.get(), extra.get(), maybe.get()};
    OrtcTensor *outs[4] = {nullptr, nullptr, nullptr, nullptr};
    ASSERT_EQ(ortc_session_run(session.get(), nullptr, ins, 3, nullptr, outs, 4), ORTC_OK)
        << lastError();
    TensorPtr joined(outs[0]), more(outs[1]), count(outs[2]), has(outs[3]);
    EXPECT_EQ(values(joined.get()), (std::vector<float>{1, 2, 3, 4, 5, 6}));
    EXPECT_EQ(*static_cast<int64_t *>(ortc_tensor_data(count.get())), 3);
    EXPECT_EQ(*static_cast<uint8_t *>(ortc_tensor_data(has.get())), present);
    ASSERT_EQ(ortc_value_kind(more.get()), ORTC_VALUE_SEQUENCE);
    ASSERT_EQ(ortc_value_count(more.get()), 3u);
    EXPECT_EQ(ortc_tensor_data(more.get()), nullptr);
    EXPECT_EQ(ortc_tensor_byte_size(more.get()), 0u);
    std::vector<std::vector<int64_t>> shapes;
    for (size_t i = 0; i < 3; ++i)
      shapes.push_back(shapeOf(ortc_value_tensor(more.get(), i)));
    EXPECT_EQ(shapes, (std::vector<std::vector<int64_t>>{{2}, {1}, {3}}));
    EXPECT_EQ(ortc_value_tensor(more.get(), 3), nullptr);
  }

  // Refusals: a tensor where a sequence goes, a sequence of another element
  // type, a buffer for a sequence output, an optional tensor of two.
  TensorPtr none = container(ORTC_VALUE_OPTIONAL_TENSOR, 0, {});
  const OrtcTensor *tensorForSequence[] = {ta.get(), extra.get(), none.get()};
  OrtcTensor *outs[4] = {nullptr, nullptr, nullptr, nullptr};
  EXPECT_EQ(ortc_session_run(session.get(), nullptr, tensorForSequence, 3, nullptr, outs, 4),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("input 'parts' must be a sequence of float32 tensors, got a float32 tensor"));
  int64_t one = 1, id = 7;
  OrtcTensor *i64 = nullptr;
  ASSERT_EQ(ortc_tensor_wrap(kInt64, &one, 1, &id, sizeof id, &i64), ORTC_OK);
  TensorPtr i64Tensor(i64);
  OrtcTensor *wrongType = nullptr;
  const OrtcTensor *mixed[] = {ta.get(), i64};
  EXPECT_EQ(ortc_value_create(ORTC_VALUE_SEQUENCE, kFloat, 1, mixed, 2, &wrongType),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("tensors[1] is not a float32 tensor"));
  EXPECT_EQ(wrongType, nullptr);
  const OrtcTensor *i64s[] = {i64};
  ASSERT_EQ(ortc_value_create(ORTC_VALUE_SEQUENCE, kInt64, 1, i64s, 1, &wrongType), ORTC_OK);
  TensorPtr wrongSequence(wrongType);
  const OrtcTensor *badElements[] = {wrongSequence.get(), extra.get(), none.get()};
  EXPECT_EQ(ortc_session_run(session.get(), nullptr, badElements, 3, nullptr, outs, 4),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("input 'parts' must be a sequence of float32 tensors"));
  TensorPtr given = container(ORTC_VALUE_SEQUENCE, 1, {});
  const OrtcTensor *good[] = {parts.get(), extra.get(), none.get()};
  OrtcTensor *slots[4] = {nullptr, given.get(), nullptr, nullptr};
  EXPECT_EQ(ortc_session_run(session.get(), nullptr, good, 3, nullptr, slots, 4),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("give no buffer for it"));
  EXPECT_EQ(slots[0], nullptr);
  OrtcTensor *two = nullptr;
  const OrtcTensor *pair[] = {ta.get(), tb.get()};
  EXPECT_EQ(ortc_value_create(ORTC_VALUE_OPTIONAL_TENSOR, kFloat, 1, pair, 2, &two),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("an optional tensor holds one tensor, not 2"));
  EXPECT_EQ(ortc_value_create(5, kFloat, 1, nullptr, 0, &two), ORTC_INVALID_ARGUMENT);
  EXPECT_EQ(ortc_value_kind(nullptr), -1);
}

TEST(CApi, Versions) {
  EXPECT_EQ(ortc_api_version(), ORTC_RUNTIME_API_VERSION);
  EXPECT_STREQ(ortc_version(), "0.1.0");
}

TEST(CApi, CreateFromPath) {
  for (const std::string &path : {kInline, kSidecar}) {
    SCOPED_TRACE(path);
    SessionPtr session = load(path);
    ASSERT_TRUE(session);
    expectRunMatches(session.get(), 2, 1);
    expectRunMatches(session.get(), 7, 2);
  }
}

TEST(CApi, CreateFromBuffer) {
  // The buffer is copied: overwriting it after the call changes nothing.
  std::vector<char> bytes = readFile(kInline);
  OrtcSession *session = nullptr;
  ASSERT_EQ(ortc_session_create_from_buffer(bytes.data(), bytes.size(), nullptr, nullptr, &session),
            ORTC_OK)
      << lastError();
  SessionPtr owned(session);
  std::fill(bytes.begin(), bytes.end(), 0x5a);
  expectRunMatches(session, 3, 3);
}

TEST(CApi, CreateFromBufferWithSidecar) {
  std::vector<char> bytes = readFile(kSidecar);
  OrtcSession *session = nullptr;
  EXPECT_NE(ortc_session_create_from_buffer(bytes.data(), bytes.size(), nullptr, nullptr, &session),
            ORTC_OK);
  EXPECT_EQ(session, nullptr);
  EXPECT_TRUE(lastErrorHas("sidecar 'model_ctx_cpu_ep.bin'"));

  EXPECT_EQ(ortc_session_create_from_buffer(bytes.data(), bytes.size(), "", nullptr, &session),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("base_dir"));

  ASSERT_EQ(ortc_session_create_from_buffer(bytes.data(), bytes.size(), kSidecarDir.c_str(),
                                            nullptr, &session),
            ORTC_OK)
      << lastError();
  SessionPtr owned(session);
  bytes.clear();
  bytes.shrink_to_fit();
  expectRunMatches(session, 4, 4);
}

TEST(CApi, Signatures) {
  SessionPtr session = load(kInline);
  ASSERT_TRUE(session);
  ASSERT_EQ(ortc_session_input_count(session.get()), 2u);
  ASSERT_EQ(ortc_session_output_count(session.get()), 2u);

  struct Expected {
    const char *name;
    std::vector<int64_t> shape;
  };
  const Expected inputs[] = {{"x", {-1, 4}}, {"s", {-1, 3}}};
  const Expected outputs[] = {{"y", {-1, 3}}, {"z", {-1, 3}}};
  for (size_t i = 0; i < 2; ++i) {
    const char *name = nullptr;
    int32_t type = 0;
    const int64_t *shape = nullptr;
    size_t rank = 0;
    ASSERT_EQ(ortc_session_input_info(session.get(), i, &name, &type, &shape, &rank), ORTC_OK);
    EXPECT_STREQ(name, inputs[i].name);
    EXPECT_EQ(type, kFloat);
    EXPECT_EQ(std::vector<int64_t>(shape, shape + rank), inputs[i].shape);
    ASSERT_EQ(ortc_session_output_info(session.get(), i, &name, &type, &shape, &rank), ORTC_OK);
    EXPECT_STREQ(name, outputs[i].name);
    EXPECT_EQ(type, kFloat);
    EXPECT_EQ(std::vector<int64_t>(shape, shape + rank), outputs[i].shape);
  }
  // Every out pointer may be NULL.
  EXPECT_EQ(ortc_session_input_info(session.get(), 1, nullptr, nullptr, nullptr, nullptr), ORTC_OK);
  const char *name = nullptr;
  EXPECT_EQ(ortc_session_output_info(session.get(), 1, &name, nullptr, nullptr, nullptr), ORTC_OK);
  EXPECT_STREQ(name, "z");

  EXPECT_EQ(ortc_session_input_info(session.get(), 2, &name, nullptr, nullptr, nullptr),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ortc_session_input_info: input index 2 is out of range"));
  EXPECT_EQ(ortc_session_output_info(session.get(), 9, &name, nullptr, nullptr, nullptr),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ortc_session_output_info: output index 9 is out of range"));
}

TEST(CApi, RunByNameInAnyOrder) {
  SessionPtr session = load(kInline);
  Case c(5, 5);
  TensorPtr x = c.xTensor(), s = c.sTensor();
  const char *inNames[] = {"s", "x"};
  const OrtcTensor *ins[] = {s.get(), x.get()};
  const char *outNames[] = {"z", "y"};
  OrtcTensor *outs[2] = {nullptr, nullptr};
  ASSERT_EQ(ortc_session_run(session.get(), inNames, ins, 2, outNames, outs, 2), ORTC_OK)
      << lastError();
  TensorPtr z(outs[0]), y(outs[1]);
  EXPECT_EQ(values(z.get()), c.z);
  EXPECT_EQ(values(y.get()), c.y);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ortc_tensor_data(y.get())) % 64, 0u);
}

TEST(CApi, RunPositional) {
  SessionPtr session = load(kSidecar);
  Case c(1, 6);
  TensorPtr x = c.xTensor(), s = c.sTensor();
  const OrtcTensor *ins[] = {x.get(), s.get()};
  OrtcTensor *outs[2] = {nullptr, nullptr};
  ASSERT_EQ(ortc_session_run(session.get(), nullptr, ins, 2, nullptr, outs, 2), ORTC_OK)
      << lastError();
  TensorPtr y(outs[0]), z(outs[1]);
  EXPECT_EQ(values(y.get()), c.y);
  EXPECT_EQ(values(z.get()), c.z);
}

TEST(CApi, CallerProvidedOutputs) {
  SessionPtr session = load(kInline);
  Case c(3, 7);
  TensorPtr x = c.xTensor(), s = c.sTensor();
  const OrtcTensor *ins[] = {x.get(), s.get()};

  // y into the caller's memory, z into a tensor the library allocated.
  std::vector<float> yData(9, -7.0f);
  int64_t shape[] = {3, 3};
  OrtcTensor *yOut = nullptr, *zOut = nullptr;
  ASSERT_EQ(ortc_tensor_wrap(kFloat, shape, 2, yData.data(), yData.size() * sizeof(float), &yOut),
            ORTC_OK);
  ASSERT_EQ(ortc_tensor_create(kFloat, shape, 2, &zOut), ORTC_OK);
  TensorPtr yOwned(yOut), zOwned(zOut);
  OrtcTensor *outs[2] = {yOut, zOut};
  ASSERT_EQ(ortc_session_run(session.get(), nullptr, ins, 2, nullptr, outs, 2), ORTC_OK)
      << lastError();
  EXPECT_EQ(outs[0], yOut);
  EXPECT_EQ(outs[1], zOut);
  EXPECT_EQ(yData, c.y);
  EXPECT_EQ(values(zOut), c.z);
}

TEST(CApi, SubsetOfOutputs) {
  SessionPtr session = load(kInline);
  Case c(2, 8);
  TensorPtr x = c.xTensor(), s = c.sTensor();
  const OrtcTensor *ins[] = {x.get(), s.get()};
  const char *zOnly[] = {"z"};
  OrtcTensor *outs[1] = {nullptr};
  ASSERT_EQ(ortc_session_run(session.get(), nullptr, ins, 2, zOnly, outs, 1), ORTC_OK)
      << lastError();
  TensorPtr z(outs[0]);
  EXPECT_EQ(values(z.get()), c.z);

  // No outputs at all is a valid (if useless) request.
  EXPECT_EQ(ortc_session_run(session.get(), nullptr, ins, 2, zOnly, nullptr, 0), ORTC_OK)
      << lastError();
}

TEST(CApi, OptionsThreads) {
  OrtcSessionOptions *options = nullptr;
  ASSERT_EQ(ortc_session_options_create(&options), ORTC_OK);
  EXPECT_EQ(ortc_session_options_set_intra_op_threads(options, -1), ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("threads"));
  for (int threads : {1, 0, 3}) {
    ASSERT_EQ(ortc_session_options_set_intra_op_threads(options, threads), ORTC_OK);
    SessionPtr session = load(kInline, options);
    ASSERT_TRUE(session);
    expectRunMatches(session.get(), 6, 9);
  }
  ortc_session_options_release(options);
}

TEST(CApi, EpOptions) {
  OrtcSessionOptions *options = nullptr;
  ASSERT_EQ(ortc_session_options_create(&options), ORTC_OK);
  // An EP the library lacks, or a key the EP does not take: refused at once.
  EXPECT_EQ(ortc_session_options_set_ep_option(options, "gpu", "threads", "2"),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("options for EP 'gpu', which this runtime does not have"));
  EXPECT_EQ(ortc_session_options_set_ep_option(options, "cpu", "speed", "2"),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("cpu_ep: unknown option 'speed' (cpu_ep accepts threads=N, kernel_isa="));
  EXPECT_EQ(ortc_session_options_set_ep_option(options, "cpu", nullptr, "2"),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("key is NULL"));
  // A known key reaches the EP (by alias or by name) and the run is unchanged.
  for (const char *ep : {"cpu", "cpu_ep"}) {
    ASSERT_EQ(ortc_session_options_set_ep_option(options, ep, "threads", "2"), ORTC_OK)
        << lastError();
    SessionPtr session = load(kInline, options);
    ASSERT_TRUE(session);
    expectRunMatches(session.get(), 6, 9);
  }
  // The EP checks the value when the session starts it.
  ASSERT_EQ(ortc_session_options_set_ep_option(options, "cpu", "threads", "lots"), ORTC_OK);
  OrtcSession *session = nullptr;
  EXPECT_EQ(ortc_session_create(kInline.c_str(), options, &session), ORTC_INVALID_ARGUMENT);
  EXPECT_EQ(session, nullptr);
  EXPECT_TRUE(lastErrorHas("cpu_ep: option threads='lots': not a thread count"));
  ortc_session_options_release(options);
}

TEST(CApi, Tensors) {
  int64_t shape[] = {2, 3};
  OrtcTensor *t = nullptr;
  ASSERT_EQ(ortc_tensor_create(kInt64, shape, 2, &t), ORTC_OK);
  TensorPtr owned(t);
  EXPECT_EQ(ortc_tensor_element_type(t), kInt64);
  EXPECT_EQ(shapeOf(t), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(ortc_tensor_byte_size(t), 48u);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(ortc_tensor_data(t)) % 64, 0u);
  const int64_t *data = static_cast<const int64_t *>(ortc_tensor_data(t));
  EXPECT_EQ(std::vector<int64_t>(data, data + 6), std::vector<int64_t>(6, 0));

  OrtcTensor *scalar = nullptr;
  ASSERT_EQ(ortc_tensor_create(kFloat, nullptr, 0, &scalar), ORTC_OK);
  EXPECT_EQ(ortc_tensor_rank(scalar), 0u);
  EXPECT_EQ(ortc_tensor_byte_size(scalar), 4u);
  ortc_tensor_release(scalar);

  // Packed sub-byte types round up to whole bytes: int4 (22) two per byte,
  // uint2 (25) four; float8e4m3fn (17) is one byte each.
  int64_t five[] = {5};
  for (auto [type, bytes] : {std::pair<int32_t, size_t>{22, 3}, {25, 2}, {17, 5}}) {
    OrtcTensor *packed = nullptr;
    ASSERT_EQ(ortc_tensor_create(type, five, 1, &packed), ORTC_OK);
    EXPECT_EQ(ortc_tensor_byte_size(packed), bytes) << type;
    ortc_tensor_release(packed);
  }

  float buffer[6];
  EXPECT_EQ(ortc_tensor_wrap(kFloat, shape, 2, buffer, sizeof(buffer) - 4, &t),
            ORTC_INVALID_ARGUMENT);
  EXPECT_EQ(t, nullptr);
  EXPECT_TRUE(lastErrorHas("ortc_tensor_wrap: byte_size is 20 but float32[2,3] needs 24"));
  int64_t negative[] = {2, -1};
  EXPECT_EQ(ortc_tensor_create(kFloat, negative, 2, &t), ORTC_INVALID_ARGUMENT);
  EXPECT_EQ(ortc_tensor_create(0, shape, 2, &t), ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("element type 0"));
  int64_t huge[] = {int64_t(1) << 40, int64_t(1) << 40};
  EXPECT_EQ(ortc_tensor_create(kFloat, huge, 2, &t), ORTC_INVALID_ARGUMENT);
  EXPECT_EQ(t, nullptr);
  int64_t tooLarge[] = {int64_t(1) << 61};
  EXPECT_EQ(ortc_tensor_create(kFloat, tooLarge, 1, &t), ORTC_INTERNAL);
  EXPECT_TRUE(lastErrorHas("ortc_tensor_create: out of memory"));
  EXPECT_EQ(t, nullptr);
}

TEST(CApi, NullArguments) {
  OrtcSession *session = nullptr;
  EXPECT_EQ(ortc_session_create(nullptr, nullptr, &session), ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ortc_session_create: path is NULL"));
  EXPECT_EQ(ortc_session_create(kInline.c_str(), nullptr, nullptr), ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ortc_session_create: out is NULL"));
  EXPECT_EQ(ortc_session_create_from_buffer(nullptr, 10, nullptr, nullptr, &session),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ortc_session_create_from_buffer: data is NULL"));
  EXPECT_EQ(ortc_session_options_create(nullptr), ORTC_INVALID_ARGUMENT);
  EXPECT_EQ(ortc_session_options_set_intra_op_threads(nullptr, 1), ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ortc_session_options_set_intra_op_threads: options is NULL"));
  EXPECT_EQ(ortc_session_input_info(nullptr, 0, nullptr, nullptr, nullptr, nullptr),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ortc_session_input_info: session is NULL"));
  EXPECT_EQ(ortc_tensor_create(kFloat, nullptr, 2, nullptr), ORTC_INVALID_ARGUMENT);
  OrtcTensor *t = nullptr;
  EXPECT_EQ(ortc_tensor_create(kFloat, nullptr, 2, &t), ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ortc_tensor_create: shape is NULL"));
  int64_t shape[] = {2};
  EXPECT_EQ(ortc_tensor_wrap(kFloat, shape, 1, nullptr, 8, &t), ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("data is NULL"));

  // Queries and releases take NULL quietly.
  EXPECT_EQ(ortc_session_input_count(nullptr), 0u);
  EXPECT_EQ(ortc_session_output_count(nullptr), 0u);
  EXPECT_EQ(ortc_tensor_data(nullptr), nullptr);
  EXPECT_EQ(ortc_tensor_shape(nullptr), nullptr);
  EXPECT_EQ(ortc_tensor_rank(nullptr), 0u);
  EXPECT_EQ(ortc_tensor_byte_size(nullptr), 0u);
  EXPECT_EQ(ortc_tensor_element_type(nullptr), 0);
  ortc_session_release(nullptr);
  ortc_session_options_release(nullptr);
  ortc_tensor_release(nullptr);

  SessionPtr loaded = load(kInline);
  Case c(1, 10);
  TensorPtr x = c.xTensor(), s = c.sTensor();
  const OrtcTensor *ins[] = {x.get(), s.get()};
  OrtcTensor *outs[2] = {nullptr, nullptr};
  EXPECT_EQ(ortc_session_run(nullptr, nullptr, ins, 2, nullptr, outs, 2), ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("ortc_session_run: session is NULL"));
  EXPECT_EQ(ortc_session_run(loaded.get(), nullptr, nullptr, 2, nullptr, outs, 2),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("inputs is NULL"));
  EXPECT_EQ(ortc_session_run(loaded.get(), nullptr, ins, 2, nullptr, nullptr, 2),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("outputs is NULL"));
  const OrtcTensor *nullInput[] = {x.get(), nullptr};
  EXPECT_EQ(ortc_session_run(loaded.get(), nullptr, nullInput, 2, nullptr, outs, 2),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("inputs[1] ('s') is NULL"));
  const char *nullName[] = {"x", nullptr};
  EXPECT_EQ(ortc_session_run(loaded.get(), nullName, ins, 2, nullptr, outs, 2),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("input_names[1] is NULL"));
  const char *nullOutName[] = {nullptr};
  EXPECT_EQ(ortc_session_run(loaded.get(), nullptr, ins, 2, nullOutName, outs, 1),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("output_names[0] is NULL"));
  EXPECT_EQ(outs[0], nullptr);
  EXPECT_EQ(outs[1], nullptr);
}

/// Runs the session on x and s as named and expects `status` with a message
/// that holds `mention`; the NULL output slots must stay NULL.
void expectRunFails(OrtcSession *session, std::vector<const char *> names,
                    std::vector<const OrtcTensor *> inputs, std::vector<const char *> outNames,
                    std::vector<OrtcTensor *> outs, OrtcStatus status, const std::string &mention) {
  std::vector<OrtcTensor *> before = outs;
  EXPECT_EQ(ortc_session_run(session, names.empty() ? nullptr : names.data(), inputs.data(),
                             inputs.size(), outNames.empty() ? nullptr : outNames.data(),
                             outs.data(), outs.size()),
            status);
  EXPECT_TRUE(lastErrorHas(mention));
  EXPECT_EQ(outs, before);
}

TEST(CApi, RunRefusals) {
  SessionPtr session = load(kInline);
  OrtcSession *s = session.get();
  Case c(2, 11);
  TensorPtr x = c.xTensor(), sIn = c.sTensor();
  std::vector<OrtcTensor *> noOuts = {nullptr, nullptr};

  int64_t shape24[] = {2, 4}, shape25[] = {2, 5}, shape33[] = {3, 3}, shape23[] = {2, 3};
  std::vector<int64_t> ints(8);
  std::vector<float> wide(10), tall(9), ok(6);
  OrtcTensor *t = nullptr;
  ASSERT_EQ(ortc_tensor_wrap(kInt64, shape24, 2, ints.data(), 64, &t), ORTC_OK);
  TensorPtr intX(t);
  ASSERT_EQ(ortc_tensor_wrap(kFloat, shape25, 2, wide.data(), 40, &t), ORTC_OK);
  TensorPtr wideX(t);
  ASSERT_EQ(ortc_tensor_wrap(kFloat, shape33, 2, tall.data(), 36, &t), ORTC_OK);
  TensorPtr tallY(t);
  ASSERT_EQ(ortc_tensor_wrap(kInt64, shape23, 2, ints.data(), 48, &t), ORTC_OK);
  TensorPtr intZ(t);

  // The input's type or shape.
  expectRunFails(s, {"x", "s"}, {intX.get(), sIn.get()}, {}, noOuts, ORTC_INVALID_ARGUMENT,
                 "input 'x' must be float32[?,4], got int64[2,4]");
  expectRunFails(s, {"x", "s"}, {wideX.get(), sIn.get()}, {}, noOuts, ORTC_INVALID_ARGUMENT,
                 "input 'x' must be float32[?,4], got float32[2,5]");
  // Names.
  expectRunFails(s, {"x", "nope"}, {x.get(), sIn.get()}, {}, noOuts, ORTC_NOT_FOUND,
                 "model_ctx.onnx has no input named 'nope'");
  expectRunFails(s, {"x", "s"}, {x.get(), sIn.get()}, {"y", "nope"}, noOuts, ORTC_NOT_FOUND,
                 "model_ctx.onnx has no output named 'nope'");
  expectRunFails(s, {"x"}, {x.get()}, {}, noOuts, ORTC_INVALID_ARGUMENT, "input 's' is missing");
  expectRunFails(s, {"x", "x"}, {x.get(), x.get()}, {}, noOuts, ORTC_INVALID_ARGUMENT,
                 "input 'x' is given twice");
  expectRunFails(s, {"x", "s"}, {x.get(), sIn.get()}, {"z", "z"}, noOuts, ORTC_INVALID_ARGUMENT,
                 "output 'z' is given twice");
  expectRunFails(s, {}, {x.get()}, {}, noOuts, ORTC_INVALID_ARGUMENT, "expected 2 inputs, got 1");
  expectRunFails(s, {}, {x.get(), sIn.get()}, {}, {nullptr}, ORTC_INVALID_ARGUMENT,
                 "expected 2 output slots, got 1");
  // Caller outputs of the wrong shape or type; the other slot stays NULL.
  expectRunFails(s, {}, {x.get(), sIn.get()}, {}, {tallY.get(), nullptr}, ORTC_INVALID_ARGUMENT,
                 "output 'y' must be float32[2,3]");
  expectRunFails(s, {}, {x.get(), sIn.get()}, {"y", "z"}, {nullptr, intZ.get()},
                 ORTC_INVALID_ARGUMENT, "output 'z' must be float32[2,3]");

  // The session still runs after every refusal.
  expectRunMatches(s, 2, 12);
}

TEST(CApi, BatchMismatchNamesTheInput) {
  // x at batch 2 and s at batch 3: each fits its signature, not the other.
  SessionPtr session = load(kInline);
  Case c(2, 13), other(3, 14);
  TensorPtr x = c.xTensor(), s = other.sTensor();
  // Both declare dim 0 as "batch": one symbol, bound by x first.
  expectRunFails(session.get(), {"x", "s"}, {x.get(), s.get()}, {}, {nullptr, nullptr},
                 ORTC_INVALID_ARGUMENT, "input 's' dim 0 is 3 but 'x' dim 0 (batch) is 2");
}

TEST(CApi, LastErrorIsPerThread) {
  OrtcTensor *t = nullptr;
  ASSERT_EQ(ortc_tensor_create(0, nullptr, 0, &t), ORTC_INVALID_ARGUMENT);
  std::string mine = lastError();
  ASSERT_FALSE(mine.empty());

  std::string otherBefore, otherAfter;
  std::thread other([&] {
    otherBefore = ortc_last_error();
    OrtcSession *session = nullptr;
    (void)ortc_session_create(nullptr, nullptr, &session);
    otherAfter = ortc_last_error();
  });
  other.join();
  EXPECT_EQ(otherBefore, "");
  EXPECT_NE(otherAfter.find("path is NULL"), std::string::npos) << otherAfter;
  EXPECT_EQ(lastError(), mine);
  // A successful call leaves the last failure's message in place.
  ASSERT_EQ(ortc_tensor_create(kFloat, nullptr, 0, &t), ORTC_OK);
  ortc_tensor_release(t);
  EXPECT_EQ(lastError(), mine);
}

// A session maps its sidecars. What happens when the file changes under it
// (docs/runtime-c-api.md): replaced by a rename, as `ortc compile` does, the
// session keeps the bytes it loaded; truncated or rewritten in place, a new
// load refuses the file with one line naming it. (A session whose mapped
// weights are truncated away in place dies of SIGBUS at its next run, as
// any reader of a mapped file would: that is not run here.)
TEST(CApi, SidecarReplacedOrTruncatedWhileMapped) {
  ortc::testutil::ScratchDir scratch("ortc-capi-mapped");
  std::string dir = scratch.path();
  for (const auto &entry : fs::directory_iterator(kModels + "/parallel"))
    fs::copy(entry.path(), dir);
  std::string model = dir + "/model_ctx.onnx", blob = dir + "/model_ctx_cpu_ep.bin";
  SessionPtr session = load(model);
  ASSERT_TRUE(session);
  std::vector<float> x(2 * 8 * 16 * 16);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(int(i % 13) - 6) / 4;
  int64_t shape[] = {2, 8, 16, 16};
  auto runOnce = [&](OrtcSession *s, std::vector<float> &logits) {
    OrtcTensor *in = nullptr;
    EXPECT_EQ(ortc_tensor_wrap(kFloat, shape, 4, x.data(), x.size() * sizeof(float), &in), ORTC_OK);
    TensorPtr input(in);
    const OrtcTensor *ins[] = {in};
    OrtcTensor *outs[] = {nullptr};
    OrtcStatus status = ortc_session_run(s, nullptr, ins, 1, nullptr, outs, 1);
    if (status == ORTC_OK) {
      TensorPtr out(outs[0]);
      logits = values(out.get());
    }
    return status;
  };
  std::vector<float> before, after;
  ASSERT_EQ(runOnce(session.get(), before), ORTC_OK) << lastError();

  // Replaced by a rename with another model's sidecar: the session runs on
  // the bytes it mapped; a new load reads the new file and refuses it.
  std::vector<char> original = readFile(blob);
  writeFile(dir + "/other.bin", readFile(kSidecarDir + "/model_ctx_cpu_ep.bin"));
  ASSERT_EQ(std::rename((dir + "/other.bin").c_str(), blob.c_str()), 0);
  ASSERT_EQ(runOnce(session.get(), after), ORTC_OK) << lastError();
  EXPECT_EQ(after, before);
  OrtcSession *other = nullptr;
  EXPECT_NE(ortc_session_create(model.c_str(), nullptr, &other), ORTC_OK);
  EXPECT_EQ(other, nullptr);
  EXPECT_TRUE(lastErrorHas(model));

  // The original back (a new file), a second session on it, then the file
  // truncated in place, and then rewritten in place at its full size with a
  // byte changed: each new load is refused, naming the sidecar.
  writeFile(dir + "/back.bin", original);
  ASSERT_EQ(std::rename((dir + "/back.bin").c_str(), blob.c_str()), 0);
  SessionPtr second = load(model);
  ASSERT_TRUE(second);
  fs::resize_file(blob, original.size() / 2);
  EXPECT_NE(ortc_session_create(model.c_str(), nullptr, &other), ORTC_OK);
  EXPECT_TRUE(lastErrorHas("model_ctx_cpu_ep.bin"));
  std::vector<char> changed = original;
  changed[changed.size() - 100] ^= 0x10;
  {
    std::fstream out(blob, std::ios::in | std::ios::out | std::ios::binary);
    out.write(changed.data(), std::streamsize(changed.size()));
  }
  EXPECT_NE(ortc_session_create(model.c_str(), nullptr, &other), ORTC_OK);
  EXPECT_TRUE(lastErrorHas("model_ctx_cpu_ep.bin"));
  EXPECT_EQ(other, nullptr);
  // The first session never saw any of it.
  ASSERT_EQ(runOnce(session.get(), after), ORTC_OK) << lastError();
  EXPECT_EQ(after, before);
}

TEST(CApi, MissingAndCorruptedModels) {
  OrtcSession *session = nullptr;
  ortc::testutil::ScratchDir scratch("ortc-capi-corrupt");
  std::string dir = scratch.path();
  std::string missing = dir + "/missing_ctx.onnx";
  EXPECT_EQ(ortc_session_create(missing.c_str(), nullptr, &session), ORTC_NOT_FOUND);
  EXPECT_TRUE(lastErrorHas(missing));
  EXPECT_EQ(session, nullptr);

  std::vector<char> good = readFile(kInline);
  ASSERT_GT(good.size(), 1000u);
  std::vector<char> half(good.begin(), good.begin() + good.size() / 2);
  std::vector<char> garbage(good.size());
  for (size_t i = 0; i < garbage.size(); ++i)
    garbage[i] = char(i * 131 + 7);
  // A flipped byte inside the blob, which is most of the file.
  std::vector<char> flipped = good;
  flipped[good.size() * 3 / 4] ^= 0x40;
  for (const std::vector<char> *bytes : {&half, &garbage, &flipped}) {
    std::string path = dir + "/model_ctx.onnx";
    writeFile(path, *bytes);
    EXPECT_NE(ortc_session_create(path.c_str(), nullptr, &session), ORTC_OK);
    EXPECT_EQ(session, nullptr);
    EXPECT_TRUE(lastErrorHas(path));
    EXPECT_NE(
        ortc_session_create_from_buffer(bytes->data(), bytes->size(), nullptr, nullptr, &session),
        ORTC_OK);
    EXPECT_EQ(session, nullptr);
    EXPECT_FALSE(lastError().empty());
  }

  // No bytes at all.
  EXPECT_EQ(ortc_session_create_from_buffer(good.data(), 0, nullptr, nullptr, &session),
            ORTC_INVALID_ARGUMENT);
  EXPECT_TRUE(lastErrorHas("in-memory model"));

  // A corrupted sidecar.
  ortc::testutil::ScratchDir sidecarScratch("ortc-capi-corrupt-sidecar");
  std::string sidecarDir = sidecarScratch.path();
  for (const auto &entry : fs::directory_iterator(kSidecarDir))
    fs::copy(entry.path(), sidecarDir);
  std::string blob = sidecarDir + "/model_ctx_cpu_ep.bin";
  std::vector<char> blobBytes = readFile(blob);
  ASSERT_FALSE(blobBytes.empty());
  blobBytes[blobBytes.size() / 2] ^= 0x01;
  writeFile(blob, blobBytes);
  std::string model = sidecarDir + "/model_ctx.onnx";
  EXPECT_NE(ortc_session_create(model.c_str(), nullptr, &session), ORTC_OK);
  EXPECT_EQ(session, nullptr);
  EXPECT_FALSE(lastError().empty());
}

TEST(CApi, ConcurrentRunsMatchSerialRuns) {
  SessionPtr session = load(kInline);
  ASSERT_TRUE(session);
  constexpr int kThreads = 8, kRuns = 100;

  // Each thread has its own inputs and batch size, so concurrent runs need
  // differently sized scratch memory; batches large enough that runs overlap.
  std::vector<Case> cases;
  std::vector<std::vector<float>> refY, refZ;
  for (int t = 0; t < kThreads; ++t) {
    cases.emplace_back(32 * (t + 1) + t, 100 + t);
    Case &c = cases.back();
    TensorPtr x = c.xTensor(), s = c.sTensor();
    const OrtcTensor *ins[] = {x.get(), s.get()};
    OrtcTensor *outs[2] = {nullptr, nullptr};
    ASSERT_EQ(ortc_session_run(session.get(), nullptr, ins, 2, nullptr, outs, 2), ORTC_OK)
        << lastError();
    TensorPtr y(outs[0]), z(outs[1]);
    refY.push_back(values(y.get()));
    refZ.push_back(values(z.get()));
    ASSERT_EQ(refY.back(), c.y);
  }

  std::atomic<int> mismatches{0}, failures{0};
  std::vector<std::string> errors(kThreads);
  ortc::testutil::onThreadsAtOnce(kThreads, [&](int t) {
    Case &c = cases[t];
    TensorPtr x = c.xTensor(), s = c.sTensor();
    const OrtcTensor *ins[] = {x.get(), s.get()};
    std::vector<float> zData(c.z.size());
    int64_t shape[] = {c.batch, 3};
    OrtcTensor *zOut = nullptr;
    if (ortc_tensor_wrap(kFloat, shape, 2, zData.data(), zData.size() * sizeof(float), &zOut) !=
        ORTC_OK) {
      ++failures;
      return;
    }
    TensorPtr zOwned(zOut);
    for (int run = 0; run < kRuns; ++run) {
      // Alternate runtime-allocated and caller-provided outputs.
      std::fill(zData.begin(), zData.end(), -1.0f);
      OrtcTensor *outs[2] = {nullptr, run % 2 ? zOut : nullptr};
      if (ortc_session_run(session.get(), nullptr, ins, 2, nullptr, outs, 2) != ORTC_OK) {
        ++failures;
        errors[t] = ortc_last_error();
        return;
      }
      TensorPtr y(outs[0]);
      TensorPtr z(run % 2 ? nullptr : outs[1]);
      std::vector<float> gotZ = run % 2 ? zData : values(outs[1]);
      std::vector<float> gotY = values(y.get());
      if (gotY.size() != refY[t].size() || gotZ.size() != refZ[t].size() ||
          std::memcmp(gotY.data(), refY[t].data(), gotY.size() * sizeof(float)) != 0 ||
          std::memcmp(gotZ.data(), refZ[t].data(), gotZ.size() * sizeof(float)) != 0)
        ++mismatches;
    }
  });
  for (const std::string &error : errors)
    EXPECT_EQ(error, "");
  EXPECT_EQ(failures.load(), 0);
  EXPECT_EQ(mismatches.load(), 0) << "of " << kThreads * kRuns << " runs";
}

} // namespace
