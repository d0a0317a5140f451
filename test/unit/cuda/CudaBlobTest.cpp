//===- CudaBlobTest.cpp - the CUDA EP's blob is verified before use -------===//
//
// A blob round-trips; a flipped byte, a truncation, a wrong plan version and
// inconsistent plans (a step reading a buffer that does not exist, a cubin
// outside its section, an input no buffer holds) are refused with one line
// each, by the writer (a compiler bug) and by the reader.
//
//===----------------------------------------------------------------------===//

#include "providers/cuda/blob/CudaBlob.h"
#include "test/unit/cuda/PlanSupport.h"

#include <gtest/gtest.h>

#include <cstring>

namespace {

namespace fb = ortc::cuda::fb;

/// A plan with one f32 input [n, 4], a kernel writing the output, one cubin.
fb::PlanT samplePlan() {
  fb::PlanT plan = ortc::cuda::testing::nByFourPlan("cuda_ep_p0", {fb::BufferKind::Input,
                                                                   fb::BufferKind::Output});
  auto kernel = std::make_unique<fb::KernelT>();
  kernel->name = "cuda_ep_p0_k0";
  plan.kernels.push_back(std::move(kernel));
  auto step = std::make_unique<fb::StepT>();
  step->kind = fb::StepKind::Launch;
  step->inputs = {0};
  step->outputs = {1};
  step->threads_per_block = 256;
  step->max_blocks = 1024;
  plan.steps.push_back(std::move(step));
  auto cubin = std::make_unique<fb::CubinT>();
  cubin->arch = 90;
  cubin->size = 16;
  plan.cubins.push_back(std::move(cubin));
  return plan;
}

ortc::cuda::CudaBlobParts sampleParts() {
  ortc::cuda::CudaBlobParts parts;
  parts.cubins.assign(16, 'c');
  parts.ptx = ".version 8.0";
  parts.source = "extern \"C\" __global__ void cuda_ep_p0_k0() {}";
  return parts;
}

TEST(CudaBlob, RoundTrips) {
  auto blob = ortc::cuda::writeCudaBlob(samplePlan(), sampleParts());
  ASSERT_TRUE(blob.isOk()) << blob.status().message();
  auto view = ortc::cuda::openCudaBlob(blob.value().data(), blob.value().size(), "p0");
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_EQ(view.value().plan->kernels()->Get(0)->name()->str(), "cuda_ep_p0_k0");
  EXPECT_EQ(view.value().cubinsSize, 16u);
  EXPECT_EQ(std::string(view.value().ptx, view.value().ptxSize), ".version 8.0");
  EXPECT_NE(std::string(view.value().source, view.value().sourceSize).find("cuda_ep_p0_k0"),
            std::string::npos);
}

TEST(CudaBlob, CorruptionIsRefused) {
  auto blob = ortc::cuda::writeCudaBlob(samplePlan(), sampleParts());
  ASSERT_TRUE(blob.isOk());
  std::vector<char> bytes = blob.value();
  bytes[bytes.size() / 2] ^= 0x40;
  auto flipped = ortc::cuda::openCudaBlob(bytes.data(), bytes.size(), "p0");
  ASSERT_FALSE(flipped.isOk());
  EXPECT_NE(flipped.status().message().find("p0: "), std::string::npos);
  EXPECT_NE(flipped.status().message().find("checksum"), std::string::npos)
      << flipped.status().message();
  for (size_t size : {size_t(0), size_t(7), blob.value().size() - 1}) {
    auto truncated = ortc::cuda::openCudaBlob(blob.value().data(), size, "p0");
    EXPECT_FALSE(truncated.isOk()) << size;
    EXPECT_EQ(truncated.status().message().find('\n'), std::string::npos);
  }
}

TEST(CudaBlob, InconsistentPlansAreRefusedByTheWriter) {
  {
    fb::PlanT plan = samplePlan();
    plan.steps[0]->inputs = {7};
    auto blob = ortc::cuda::writeCudaBlob(plan, sampleParts());
    ASSERT_FALSE(blob.isOk());
    EXPECT_NE(blob.status().message().find("buffer 7"), std::string::npos)
        << blob.status().message();
  }
  {
    fb::PlanT plan = samplePlan();
    plan.cubins[0]->size = 17; // one byte past CUBN
    auto blob = ortc::cuda::writeCudaBlob(plan, sampleParts());
    ASSERT_FALSE(blob.isOk());
    EXPECT_NE(blob.status().message().find("sm_90"), std::string::npos) << blob.status().message();
  }
  {
    fb::PlanT plan = samplePlan();
    plan.buffers[0]->kind = fb::BufferKind::Arena; // nobody holds input 0
    plan.memory->symbolic = true;
    auto blob = ortc::cuda::writeCudaBlob(plan, sampleParts());
    ASSERT_FALSE(blob.isOk());
    EXPECT_NE(blob.status().message().find("input 0"), std::string::npos)
        << blob.status().message();
  }
  {
    fb::PlanT plan = samplePlan();
    plan.steps[0]->kernel = 3;
    EXPECT_FALSE(ortc::cuda::writeCudaBlob(plan, sampleParts()).isOk());
  }
}

TEST(CudaBlob, ArenaBuffersMustLieInsideTheArena) {
  // A static intermediate [2, 4] f32 (32 bytes) between two launches.
  auto withArena = [](uint64_t offset, uint64_t arenaBytes) {
    fb::PlanT plan = samplePlan();
    auto b = std::make_unique<fb::BufferT>();
    b->kind = fb::BufferKind::Arena;
    b->element_type = 1;
    b->shape = {2, 4};
    b->size = 32;
    b->offset = offset;
    plan.buffers.push_back(std::move(b));
    plan.memory->fixed_bytes = arenaBytes;
    return plan;
  };
  EXPECT_TRUE(ortc::cuda::writeCudaBlob(withArena(256, 512), sampleParts()).isOk());
  auto outside = ortc::cuda::writeCudaBlob(withArena(256, 270), sampleParts());
  ASSERT_FALSE(outside.isOk());
  EXPECT_NE(outside.status().message().find("buffer 2 lies outside the arena of 270 bytes"),
            std::string::npos)
      << outside.status().message();
  EXPECT_FALSE(ortc::cuda::writeCudaBlob(withArena(100, 512), sampleParts()).isOk()); // unaligned
  fb::PlanT symbolic = withArena(256, 270);
  symbolic.memory->symbolic = true; // laid out at run time: offsets are not checked
  EXPECT_TRUE(ortc::cuda::writeCudaBlob(symbolic, sampleParts()).isOk());
  fb::PlanT badAlignment = withArena(0, 512);
  badAlignment.memory->alignment = 48;
  EXPECT_FALSE(ortc::cuda::writeCudaBlob(badAlignment, sampleParts()).isOk());
}

TEST(CudaBlob, OtherVersionsAreUnsupported) {
  fb::PlanT plan = samplePlan();
  plan.format_version = ortc::cuda::kCudaPlanFormatVersion + 1;
  auto blob = ortc::cuda::writeCudaBlob(plan, sampleParts());
  ASSERT_FALSE(blob.isOk());
  EXPECT_NE(blob.status().message().find("plan format"), std::string::npos)
      << blob.status().message();
}

} // namespace
