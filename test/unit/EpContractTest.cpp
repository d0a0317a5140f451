//===- EpContractTest.cpp - buffers, registry, KernelMatch, declines ------===//

#include "compiler/EP/KernelMatch.h"
#include "runtime/ep/EpRegistry.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>

using namespace ortc;

namespace {

// A host-memory EP standing in for real ones: enough to test the contract.
class HostTestEp : public RuntimeEp {
public:
  HostTestEp(std::string name, std::vector<std::string> keys)
      : id_{std::move(name), DeviceType::Cpu, 0}, keys_(std::move(keys)) {}
  const EpIdentity &identity() const override { return id_; }
  Status initialize(const EpConfig &) override { return Status::ok(); }
  Status shutdown() override { return Status::ok(); }
  Result<DeviceBuffer> allocate(size_t size, size_t alignment) override {
    if (alignment == 0 || (alignment & (alignment - 1)))
      return Status::error(StatusCode::InvalidArgument, name() + ": alignment " +
                                                            std::to_string(alignment) +
                                                            " is not a power of two");
    size_t rounded = (size + alignment - 1) / alignment * alignment;
    void *data = std::aligned_alloc(alignment, rounded ? rounded : alignment);
    if (!data)
      return Status::error(StatusCode::Internal, name() + ": out of memory");
    ++live;
    return DeviceBuffer::owned(data, size, *this, DeviceType::Cpu, 0);
  }
  Status deallocate(DeviceBuffer &&buffer) override {
    Status owned = checkOwnership(buffer);
    if (!owned.isOk())
      return owned;
    std::free(buffer.data());
    buffer.release();
    --live;
    return Status::ok();
  }
  Status copy(const DeviceBuffer &src, DeviceBuffer &dst, size_t size) override {
    if (size > src.size() || size > dst.size())
      return Status::error(StatusCode::InvalidArgument, name() + ": copy past a buffer's end");
    std::memcpy(dst.data(), src.data(), size);
    return Status::ok();
  }
  Result<std::unique_ptr<Fence>> copyAsync(const DeviceBuffer &src, DeviceBuffer &dst,
                                           size_t size) override {
    Status s = copy(src, dst, size);
    if (!s.isOk())
      return s;
    return std::unique_ptr<Fence>(new ReadyFence());
  }
  Status sync() override { return Status::ok(); }
  std::vector<std::string> contextSourceKeys() const override { return keys_; }

  int live = 0;

private:
  EpIdentity id_;
  std::vector<std::string> keys_;
};

TEST(DeviceBufferTest, OwnedBuffersAreReleasedOnceThroughTheirOwner) {
  HostTestEp a("a_ep", {}), b("b_ep", {});
  auto buffer = a.allocate(100, 64);
  ASSERT_TRUE(buffer.isOk()) << buffer.status().message();
  DeviceBuffer owned = buffer.takeValue();
  EXPECT_TRUE(owned.isOwned());
  EXPECT_EQ(owned.owner(), &a);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(owned.data()) % 64, 0u);

  // Another EP refuses it, with a message naming both.
  Status wrong = b.deallocate(std::move(owned));
  EXPECT_EQ(wrong.code(), StatusCode::InvalidArgument);
  EXPECT_NE(wrong.message().find("owned by a_ep"), std::string::npos) << wrong.message();
  EXPECT_TRUE(owned.isOwned()); // still a's to release

  // Moving transfers ownership; the moved-from object owns nothing.
  DeviceBuffer moved = std::move(owned);
  EXPECT_FALSE(owned.isOwned());
  EXPECT_TRUE(a.deallocate(std::move(moved)).isOk());
  EXPECT_EQ(a.live, 0);
  // The released object cannot be released again.
  Status again = a.deallocate(std::move(moved));
  EXPECT_FALSE(again.isOk());
  EXPECT_EQ(a.live, 0);
}

TEST(DeviceBufferTest, BorrowedViewsOwnNothing) {
  HostTestEp a("a_ep", {});
  float host[4] = {1, 2, 3, 4};
  DeviceBuffer view = DeviceBuffer::borrowed(host, sizeof(host), DeviceType::Cpu);
  EXPECT_FALSE(view.isOwned());
  Status s = a.deallocate(std::move(view));
  EXPECT_EQ(s.code(), StatusCode::InvalidArgument);
  EXPECT_NE(s.message().find("borrowed"), std::string::npos);
}

TEST(DeviceBufferTest, CopiesAndFences) {
  HostTestEp a("a_ep", {});
  DeviceBuffer src = a.allocate(16, 16).takeValue();
  DeviceBuffer dst = a.allocate(16, 16).takeValue();
  std::memset(src.data(), 7, 16);
  auto fence = a.copyAsync(src, dst, 16);
  ASSERT_TRUE(fence.isOk());
  EXPECT_TRUE(fence.value()->wait().isOk());
  EXPECT_EQ(static_cast<unsigned char *>(dst.data())[15], 7);
  EXPECT_FALSE(a.copy(src, dst, 17).isOk());
  EXPECT_TRUE(a.deallocate(std::move(src)).isOk());
  EXPECT_TRUE(a.deallocate(std::move(dst)).isOk());
  EXPECT_FALSE(a.allocate(8, 3).isOk());
}

TEST(RuntimeEpTest, DefaultsSayUnsupported) {
  HostTestEp a("a_ep", {});
  EXPECT_EQ(a.beginCapture().code(), StatusCode::Unsupported);
  EXPECT_EQ(a.replay().code(), StatusCode::Unsupported);
  EpContextView ctx;
  ctx.source = "x";
  auto loaded = a.loadContext(ctx);
  ASSERT_FALSE(loaded.isOk());
  EXPECT_EQ(loaded.status().code(), StatusCode::Unsupported);
}

TEST(EpRegistryTest, MapsSourceKeysToTheirEp) {
  EpRegistry registry;
  auto cpu = std::make_shared<HostTestEp>("cpu_ep", std::vector<std::string>{"ortc_cpu"});
  auto gpu =
      std::make_shared<HostTestEp>("gpu_ep", std::vector<std::string>{"ortc_gpu", "ortc_gpu_v2"});
  ASSERT_TRUE(registry.add(cpu).isOk());
  ASSERT_TRUE(registry.add(gpu).isOk());
  auto found = registry.findBySource("ortc_gpu_v2");
  ASSERT_TRUE(found.isOk());
  EXPECT_EQ(found.value(), gpu.get());
  EXPECT_EQ(registry.findByName("cpu_ep"), cpu.get());

  auto missing = registry.findBySource("TensorrtExecutionProvider");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().message(),
            "no registered EP holds context source 'TensorrtExecutionProvider' (registered: "
            "cpu_ep [ortc_cpu], gpu_ep [ortc_gpu, ortc_gpu_v2])");
}

TEST(EpRegistryTest, RejectsAKeyHeldTwice) {
  EpRegistry registry;
  ASSERT_TRUE(
      registry.add(std::make_shared<HostTestEp>("a_ep", std::vector<std::string>{"k"})).isOk());
  Status clash = registry.add(std::make_shared<HostTestEp>("b_ep", std::vector<std::string>{"k"}));
  EXPECT_EQ(clash.code(), StatusCode::AlreadyExists);
  EXPECT_EQ(clash.message(), "context source key 'k' of b_ep is already held by a_ep");
  // The failed EP left nothing behind.
  EXPECT_EQ(registry.findByName("b_ep"), nullptr);
  EXPECT_EQ(registry.findBySource("k").value()->name(), "a_ep");

  EXPECT_FALSE(
      registry.add(std::make_shared<HostTestEp>("a_ep", std::vector<std::string>{})).isOk());
  EXPECT_FALSE(
      registry.add(std::make_shared<HostTestEp>("c_ep", std::vector<std::string>{""})).isOk());
  EXPECT_FALSE(
      registry.add(std::make_shared<HostTestEp>("d_ep", std::vector<std::string>{"x", "x"}))
          .isOk());
  EXPECT_FALSE(registry.add(nullptr).isOk());
}

DeclineReason sampleDecline() {
  DeclineReason r;
  r.node = "conv1";
  r.op = "Conv";
  r.domain = "ai.onnx";
  r.opset = 17;
  r.ep = "cpu_ep";
  r.kind = RejectedKind::DType;
  r.rejected = "input 'X' has dtype f64";
  r.accepts = "f32 inputs";
  r.remediation = "insert a Cast to f32 before the node";
  return r;
}

TEST(KernelMatchTest, SupportedCarriesCostAndLayouts) {
  KernelCost cost{10, 5, 2, 1};
  KernelMatch m = KernelMatch::supported(cost, {TensorLayout::NHWC});
  EXPECT_TRUE(m.isSupported());
  EXPECT_DOUBLE_EQ(m.cost().total(), 18);
  ASSERT_EQ(m.inputLayouts().size(), 1u);
  EXPECT_EQ(m.inputLayouts()[0], TensorLayout::NHWC);
}

TEST(KernelMatchTest, DeclinesSayEverythingTheContractAsks) {
  KernelMatch m = KernelMatch::unsupported(sampleDecline());
  EXPECT_FALSE(m.isSupported());
  EXPECT_TRUE(m.reason().isComplete());
  EXPECT_EQ(m.reason().format(),
            "cpu_ep declines node 'conv1' (ai.onnx::Conv, opset 17): dtype: input 'X' has dtype "
            "f64; accepts f32 inputs; remediation: insert a Cast to f32 before the node");
  EXPECT_EQ(m.reason().toJson(),
            "{\"node\": \"conv1\", \"op\": \"Conv\", \"domain\": \"ai.onnx\", \"opset\": 17, "
            "\"ep\": \"cpu_ep\", \"kind\": \"dtype\", \"rejected\": \"input 'X' has dtype f64\", "
            "\"accepts\": \"f32 inputs\", \"remediation\": \"insert a Cast to f32 before the "
            "node\"}");
}

TEST(KernelMatchTest, IncompleteDeclinesAreDetected) {
  for (int field = 0; field < 6; ++field) {
    DeclineReason r = sampleDecline();
    switch (field) {
    case 0:
      r.node.clear();
      break;
    case 1:
      r.op.clear();
      break;
    case 2:
      r.opset = 0;
      break;
    case 3:
      r.ep.clear();
      break;
    case 4:
      r.rejected.clear();
      break;
    case 5:
      r.accepts.clear();
      break;
    }
    EXPECT_FALSE(r.isComplete()) << "field " << field;
  }
  DeclineReason noRemedy = sampleDecline();
  noRemedy.remediation.clear(); // optional
  EXPECT_TRUE(noRemedy.isComplete());
  EXPECT_EQ(noRemedy.format().find("remediation"), std::string::npos);
}

TEST(KernelMatchTest, JsonEscapesHostileNames) {
  DeclineReason r = sampleDecline();
  r.node = "a\"b\\c\nd\x01";
  EXPECT_NE(r.toJson().find("\"node\": \"a\\\"b\\\\c\\nd\\u0001\""), std::string::npos)
      << r.toJson();
}

} // namespace
