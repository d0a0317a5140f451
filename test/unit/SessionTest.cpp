//===- SessionTest.cpp - the session: transfers, outputs, concurrency ----===//
//
// The session over two mock EPs: a host EP whose partitions compute y = x * k
// and a "device" EP (DeviceType::Cuda) whose memory only it may touch: its
// partitions refuse any pointer it did not allocate, so a run succeeds only
// when the session copied every value where it is read. Checks the values,
// the number of transfers each way, that every device buffer is released, the
// caller-provided outputs, and concurrent runs.
//
//===----------------------------------------------------------------------===//

#include "runtime/session/Session.h"

#include "onnx/onnx_pb.h"

#include "test/unit/ScratchDir.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <mutex>
#include <set>
#include <thread>

namespace {

using namespace ortc;
using testutil::ScratchDir;

/// y = x * scale (host) or y = x + offset (device), over float32[4].
class ArithmeticPartition final : public LoadedPartition {
public:
  ArithmeticPartition(float k, bool add, std::function<bool(const void *)> owns)
      : k_(k), add_(add), owns_(std::move(owns)) {
    inputs_ = {TensorSignature{"x", ElementType::Float, {4}}};
    outputs_ = {TensorSignature{"y", ElementType::Float, {4}}};
  }
  const std::vector<TensorSignature> &inputs() const override { return inputs_; }
  const std::vector<TensorSignature> &outputs() const override { return outputs_; }
  Result<std::vector<std::vector<int64_t>>>
  outputShapes(const std::vector<TensorView> &inputs) const override {
    return std::vector<std::vector<int64_t>>{{4}};
  }
  Status run(const std::vector<TensorView> &inputs,
             const std::vector<TensorView> &outputs) override {
    if (!owns_(inputs[0].data) || !owns_(outputs[0].data))
      return Status::error(StatusCode::InvalidArgument, "a buffer is not in this EP's memory");
    const float *x = static_cast<const float *>(inputs[0].data);
    float *y = static_cast<float *>(outputs[0].data);
    for (int i = 0; i < 4; ++i)
      y[i] = add_ ? x[i] + k_ : x[i] * k_;
    return Status::ok();
  }

private:
  float k_;
  bool add_;
  std::function<bool(const void *)> owns_;
  std::vector<TensorSignature> inputs_, outputs_;
};

/// The blob is the constant as text.
float constantOf(const EpContextView &context) {
  return std::stof(std::string(context.data, context.size));
}

class MockHostEp final : public RuntimeEp {
public:
  MockHostEp() : identity_{"mock_host", DeviceType::Cpu, 0} {}
  const EpIdentity &identity() const override { return identity_; }
  Status initialize(const EpConfig &) override { return Status::ok(); }
  Status shutdown() override { return Status::ok(); }
  Result<DeviceBuffer> allocate(size_t, size_t) override {
    return Status::error(StatusCode::Unsupported, "not used");
  }
  Status deallocate(DeviceBuffer &&) override { return Status::ok(); }
  Status copy(const DeviceBuffer &, DeviceBuffer &, size_t) override { return Status::ok(); }
  Result<std::unique_ptr<Fence>> copyAsync(const DeviceBuffer &, DeviceBuffer &,
                                           size_t) override {
    return std::unique_ptr<Fence>(new ReadyFence());
  }
  Status sync() override { return Status::ok(); }
  std::vector<std::string> contextSourceKeys() const override { return {"mock_host"}; }
  Result<std::unique_ptr<LoadedPartition>> loadContext(const EpContextView &context) override {
    return std::unique_ptr<LoadedPartition>(
        new ArithmeticPartition(constantOf(context), false, [](const void *) { return true; }));
  }

private:
  EpIdentity identity_;
};

/// A device whose memory is host memory it tracks; transfers are counted.
class MockDeviceEp final : public RuntimeEp {
public:
  MockDeviceEp() : identity_{"mock_device", DeviceType::Cuda, 0} {}
  const EpIdentity &identity() const override { return identity_; }
  Status initialize(const EpConfig &) override { return Status::ok(); }
  Status shutdown() override { return Status::ok(); }
  Result<DeviceBuffer> allocate(size_t size, size_t) override {
    void *data = std::malloc(size);
    std::lock_guard<std::mutex> lock(mutex_);
    live_.insert(data);
    return DeviceBuffer::owned(data, size, *this, DeviceType::Cuda, 0);
  }
  Status deallocate(DeviceBuffer &&buffer) override {
    if (Status s = checkOwnership(buffer); !s.isOk())
      return s;
    std::lock_guard<std::mutex> lock(mutex_);
    live_.erase(buffer.data());
    std::free(buffer.data());
    buffer.release();
    return Status::ok();
  }
  Status copy(const DeviceBuffer &src, DeviceBuffer &dst, size_t size) override {
    bool toDevice = dst.device() == DeviceType::Cuda, fromDevice = src.device() == DeviceType::Cuda;
    if (toDevice == fromDevice)
      return Status::error(StatusCode::InvalidArgument, "copies between host and device only");
    if ((toDevice && !owns(dst.data())) || (fromDevice && !owns(src.data())))
      return Status::error(StatusCode::InvalidArgument, "not this device's memory");
    std::memcpy(dst.data(), src.data(), size);
    ++(toDevice ? toDevice_ : toHost_);
    return Status::ok();
  }
  Result<std::unique_ptr<Fence>> copyAsync(const DeviceBuffer &src, DeviceBuffer &dst,
                                           size_t size) override {
    if (Status s = copy(src, dst, size); !s.isOk())
      return s;
    return std::unique_ptr<Fence>(new ReadyFence());
  }
  Status sync() override { return Status::ok(); }
  std::vector<std::string> contextSourceKeys() const override { return {"mock_device"}; }
  Result<std::unique_ptr<LoadedPartition>> loadContext(const EpContextView &context) override {
    return std::unique_ptr<LoadedPartition>(new ArithmeticPartition(
        constantOf(context), true, [this](const void *p) { return owns(p); }));
  }

  bool owns(const void *p) {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.count(const_cast<void *>(p)) != 0;
  }
  size_t liveBuffers() {
    std::lock_guard<std::mutex> lock(mutex_);
    return live_.size();
  }
  std::atomic<int> toDevice_{0}, toHost_{0};

private:
  EpIdentity identity_;
  std::mutex mutex_;
  std::set<void *> live_;
};

void addTensor(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> *list,
               const std::string &name) {
  onnx::ValueInfoProto *value = list->Add();
  value->set_name(name);
  auto *tensor = value->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  tensor->mutable_shape()->add_dim()->set_dim_value(4);
}

void addNode(onnx::GraphProto *graph, const std::string &name, const std::string &source,
             const std::string &constant, const std::string &in, const std::string &out) {
  onnx::NodeProto *node = graph->add_node();
  node->set_name(name);
  node->set_domain("com.microsoft");
  node->set_op_type("EPContext");
  node->add_input(in);
  node->add_output(out);
  auto attr = [&](const char *attrName) {
    onnx::AttributeProto *a = node->add_attribute();
    a->set_name(attrName);
    return a;
  };
  onnx::AttributeProto *a = attr("main_context");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  a = attr("embed_mode");
  a->set_type(onnx::AttributeProto::INT);
  a->set_i(1);
  a = attr("ep_cache_context");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(constant);
  a = attr("source");
  a->set_type(onnx::AttributeProto::STRING);
  a->set_s(source);
}

struct NodeSpec {
  const char *name, *source, *constant, *in, *out;
};

/// Writes the model to `<dir>/session_<tag>_ctx.onnx` and returns the path.
std::string writeModel(const ScratchDir &dir, const std::string &tag,
                       const std::vector<NodeSpec> &nodes,
                       const std::vector<std::string> &outputs) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  auto *ms = model.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name(tag);
  addTensor(graph->mutable_input(), "x");
  for (const NodeSpec &n : nodes)
    addNode(graph, n.name, n.source, n.constant, n.in, n.out);
  for (const std::string &output : outputs)
    addTensor(graph->mutable_output(), output);
  std::string path = dir.file("session_" + tag + "_ctx.onnx");
  std::ofstream(path, std::ios::binary) << model.SerializeAsString();
  return path;
}

// x -> host(*2) -> a -> device(+1) -> b -> device(+10) -> c -> host(*3) -> d,
// with graph outputs d, c and b: c and b end on the device.
std::string writeChainModel(const ScratchDir &dir) {
  return writeModel(dir, "chain",
                    {{"h0", "mock_host", "2", "x", "a"},
                     {"d0", "mock_device", "1", "a", "b"},
                     {"d1", "mock_device", "10", "b", "c"},
                     {"h1", "mock_host", "3", "c", "d"}},
                    {"d", "c", "b"});
}

struct Fixture {
  std::shared_ptr<MockDeviceEp> device = std::make_shared<MockDeviceEp>();
  std::unique_ptr<Session> session;
  explicit Fixture(const std::string &path) {
    EpRegistry registry;
    EXPECT_TRUE(registry.add(std::make_shared<MockHostEp>()).isOk());
    EXPECT_TRUE(registry.add(device).isOk());
    Result<std::unique_ptr<Session>> loaded = Session::load(path, std::move(registry));
    EXPECT_TRUE(loaded.isOk()) << loaded.status().message();
    if (loaded.isOk())
      session = loaded.takeValue();
  }
};

std::vector<float> floats(const OwnedTensor &t) {
  const float *p = reinterpret_cast<const float *>(t.data.get());
  return std::vector<float>(p, p + 4);
}

TEST(SessionTest, CopiesValuesBetweenHostAndDeviceOncePerRun) {
  ScratchDir dir("ortc-session");
  Fixture f(writeChainModel(dir));
  ASSERT_TRUE(f.session);
  float x[4] = {1, 2, 3, 4};
  Result<std::vector<OwnedTensor>> out =
      f.session->run({TensorView{x, ElementType::Float, {4}}});
  ASSERT_TRUE(out.isOk()) << out.status().message();
  ASSERT_EQ(out.value().size(), 3u);
  // a = 2x, b = a + 1, c = b + 10, d = 3c.
  EXPECT_EQ(floats(out.value()[0]), (std::vector<float>{39, 45, 51, 57}));
  EXPECT_EQ(floats(out.value()[1]), (std::vector<float>{13, 15, 17, 19}));
  EXPECT_EQ(floats(out.value()[2]), (std::vector<float>{3, 5, 7, 9}));
  // a goes to the device once; c comes back once (for h1 and the output
  // alike) and b once, as an output.
  EXPECT_EQ(f.device->toDevice_.load(), 1);
  EXPECT_EQ(f.device->toHost_.load(), 2);
  EXPECT_EQ(f.device->liveBuffers(), 0u) << "device buffers leaked";
}

TEST(SessionTest, ADeviceValueReadOnTheHostStaysUsableOnTheDevice) {
  // b is made on the device, read by a host partition, then by the device
  // again: that second read uses the original, with no copy back.
  ScratchDir dir("ortc-session");
  Fixture f(writeModel(dir, "fanout",
                       {{"d0", "mock_device", "1", "x", "b"},
                        {"h0", "mock_host", "2", "b", "c"},
                        {"d1", "mock_device", "10", "b", "e"}},
                       {"c", "e"}));
  ASSERT_TRUE(f.session);
  float x[4] = {1, 2, 3, 4};
  Result<std::vector<OwnedTensor>> out =
      f.session->run({TensorView{x, ElementType::Float, {4}}});
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ(floats(out.value()[0]), (std::vector<float>{4, 6, 8, 10}));
  EXPECT_EQ(floats(out.value()[1]), (std::vector<float>{12, 13, 14, 15}));
  EXPECT_EQ(f.device->toDevice_.load(), 1); // x
  EXPECT_EQ(f.device->toHost_.load(), 2);   // b for h0, e as an output
  EXPECT_EQ(f.device->liveBuffers(), 0u);
}

TEST(SessionTest, WritesIntoCallerBuffersAndSubsets) {
  ScratchDir dir("ortc-session");
  Fixture f(writeChainModel(dir));
  ASSERT_TRUE(f.session);
  float x[4] = {1, 2, 3, 4}, c[4] = {0}, d[4] = {0};
  std::vector<RunOutput> outputs(3);
  outputs[0].index = 2; // b, allocated by the session
  outputs[1].index = 1; // c, from the device into the caller's buffer
  outputs[1].into = TensorView{c, ElementType::Float, {4}};
  outputs[2].index = 0; // d, written in place by the host partition
  outputs[2].into = TensorView{d, ElementType::Float, {4}};
  Status status = f.session->run({TensorView{x, ElementType::Float, {4}}}, outputs);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(floats(outputs[0].result), (std::vector<float>{3, 5, 7, 9}));
  EXPECT_EQ(std::vector<float>(c, c + 4), (std::vector<float>{13, 15, 17, 19}));
  EXPECT_EQ(std::vector<float>(d, d + 4), (std::vector<float>{39, 45, 51, 57}));
  EXPECT_FALSE(outputs[1].result.data);
  EXPECT_FALSE(outputs[2].result.data);

  // A caller buffer of the wrong shape: refused, naming the output, and the
  // session-allocated slot is left empty.
  float small[2];
  outputs[1].into = TensorView{small, ElementType::Float, {2}};
  status = f.session->run({TensorView{x, ElementType::Float, {4}}}, outputs);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("output 'c' must be float32[4]"), std::string::npos)
      << status.message();
  EXPECT_FALSE(outputs[0].result.data);
  EXPECT_EQ(f.device->liveBuffers(), 0u) << "device buffers leaked on the error path";

  std::vector<RunOutput> twice(2);
  twice[0].index = twice[1].index = 1;
  status = f.session->run({TensorView{x, ElementType::Float, {4}}}, twice);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("requested twice"), std::string::npos) << status.message();
}

TEST(SessionTest, RefusesASourceNoEpHolds) {
  EpRegistry registry;
  ASSERT_TRUE(registry.add(std::make_shared<MockHostEp>()).isOk());
  ScratchDir dir("ortc-session");
  Result<std::unique_ptr<Session>> loaded =
      Session::load(writeChainModel(dir), std::move(registry));
  ASSERT_FALSE(loaded.isOk());
  const std::string &message = loaded.status().message();
  EXPECT_NE(message.find("node 'd0'"), std::string::npos) << message;
  EXPECT_NE(message.find("mock_device"), std::string::npos) << message;
  EXPECT_NE(message.find("mock_host"), std::string::npos) << message;
}

TEST(SessionTest, LoadsFromABuffer) {
  ScratchDir dir("ortc-session");
  std::string path = writeChainModel(dir);
  std::ifstream in(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EpRegistry registry;
  ASSERT_TRUE(registry.add(std::make_shared<MockHostEp>()).isOk());
  ASSERT_TRUE(registry.add(std::make_shared<MockDeviceEp>()).isOk());
  Result<std::unique_ptr<Session>> loaded =
      Session::loadFromBuffer(bytes.data(), bytes.size(), "<memory>", "", std::move(registry));
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  bytes.assign(bytes.size(), '\0'); // the session keeps its own copy
  float x[4] = {1, 2, 3, 4};
  Result<std::vector<OwnedTensor>> out =
      loaded.value()->run({TensorView{x, ElementType::Float, {4}}});
  ASSERT_TRUE(out.isOk()) << out.status().message();
  EXPECT_EQ(floats(out.value()[0]), (std::vector<float>{39, 45, 51, 57}));

  EpRegistry none;
  Result<std::unique_ptr<Session>> broken =
      Session::loadFromBuffer("not a model", 11, "<memory>", "", std::move(none));
  ASSERT_FALSE(broken.isOk());
  EXPECT_NE(broken.status().message().find("<memory>: not a valid ONNX ModelProto"),
            std::string::npos)
      << broken.status().message();
}

TEST(SessionTest, RunsConcurrentlyWithTransfers) {
  ScratchDir dir("ortc-session");
  Fixture f(writeChainModel(dir));
  ASSERT_TRUE(f.session);
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      for (int i = 0; i < 100; ++i) {
        float x[4] = {float(t), float(i), 1, 2};
        Result<std::vector<OwnedTensor>> out =
            f.session->run({TensorView{x, ElementType::Float, {4}}});
        if (!out.isOk() || floats(out.value()[0])[1] != 3 * (2 * float(i) + 11))
          ++wrong;
      }
    });
  for (std::thread &thread : threads)
    thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(f.device->liveBuffers(), 0u);
}

} // namespace
