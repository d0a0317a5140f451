//===- CudaStreamTest.cpp - streams, graphs and memory of the CUDA EP -----===//
//
// On the emulated device (the GPU versions of these paths run in
// scripts/gpu-check.sh): async copies from page-locked memory wait for
// their event, stream capture records launches with copies of their
// parameters and replays them, the memory pool hands the same blocks back
// in the same order, the staging buffers are never rewritten before their
// copy is done, and a partition runs from its arena, captured once per
// shape and replayed after.
//
//===----------------------------------------------------------------------===//

#include "providers/cuda/blob/CudaBlob.h"
#include "providers/cuda/runtime/DeviceMemoryPool.h"
#include "providers/cuda/runtime/PlanRunner.h"
#include "providers/cuda/runtime/StagedTransfers.h"
#include "test/unit/cuda/EmulatorSupport.h"
#include "test/unit/cuda/PlanSupport.h"

#include <gtest/gtest.h>

#include <cstring>
#include <thread>

namespace {

using namespace ortc;
using namespace ortc::cuda;
using namespace ortc::cuda::testing;
namespace fb = ortc::cuda::fb;

// y = x * scale + offset over n elements, with its sizes in a struct, and
// the same kernel without NAME__params (its launches cannot be recorded).
const char *kAffine = R"(
struct Affine {
  long long n;
  float scale, offset;
};
extern "C" __global__ void affine(const float *__restrict__ x, float *__restrict__ y, Affine a) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < a.n; i += stride)
    y[i] = x[i] * a.scale + a.offset;
}
extern "C" __global__ void affine_unrecordable(const float *x, float *y, Affine a) {
  affine(x, y, a);
}
#ifdef ORTC_HOST_EMULATION
ORTC_EMU_ENTRY(affine)
extern "C" void affine_unrecordable__emulate(void **args) {
  affine_unrecordable(*(const float **)args[0], *(float **)args[1], *(const Affine *)args[2]);
}
#endif
)";

struct Affine {
  long long n;
  float scale, offset;
};

TEST(EmulatedStream, AsyncCopiesRunWhenTheStreamGetsThere) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  Result<void *> pinned = device->allocatePinned(16);
  ASSERT_TRUE(pinned.isOk()) << pinned.status().message();
  void *d = upload(*device, std::vector<float>(4, 0.0f));
  float values[4] = {1, 2, 3, 4};
  std::memcpy(pinned.value(), values, 16);
  ASSERT_OK(device->copyToDeviceAsync(d, pinned.value(), 16));
  Result<std::unique_ptr<CudaEvent>> event = device->recordEvent();
  ASSERT_TRUE(event.isOk()) << event.status().message();
  Result<bool> done = event.value()->query();
  ASSERT_TRUE(done.isOk());
  EXPECT_FALSE(done.value()) << "the copy is still queued";
  // Rewriting the staging memory before the event is done changes what
  // lands on the device: the hazard the staging code must avoid.
  static_cast<float *>(pinned.value())[0] = 100;
  ASSERT_OK(event.value()->wait());
  EXPECT_TRUE(event.value()->query().value());
  EXPECT_EQ(download<float>(*device, d, 4), (std::vector<float>{100, 2, 3, 4}));

  // Device to host, and pageable memory refused.
  float back[4] = {0};
  ASSERT_OK(device->copyToHostAsync(pinned.value(), d, 16));
  ASSERT_OK(device->synchronize());
  std::memcpy(back, pinned.value(), 16);
  EXPECT_EQ(back[3], 4);
  Status pageable = device->copyToDeviceAsync(d, values, 16);
  ASSERT_FALSE(pageable.isOk());
  EXPECT_NE(pageable.message().find("not page-locked"), std::string::npos) << pageable.message();
  ASSERT_OK(device->freePinned(pinned.value()));
  EXPECT_FALSE(device->freePinned(pinned.value()).isOk());
  ASSERT_OK(device->free(d));
}

TEST(EmulatedGraph, ReplaysLaunchesWithTheParametersTheyWereCapturedWith) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  std::optional<Loaded> loaded = load(*device, kAffine, {"affine", "affine_unrecordable"});
  ASSERT_TRUE(loaded);
  std::vector<float> x(300);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i);
  void *dx = upload(*device, x);
  void *dy = upload(*device, std::vector<float>(300, -1.0f));
  void *dz = upload(*device, std::vector<float>(300, -1.0f));
  void *dw = upload(*device, std::vector<float>(300, -1.0f));
  void *three = upload(*device, std::vector<float>{3.0f});

  // y = 2x + 1; z = y * [3] (column-major 300x1 times 1x1); w = z.
  ASSERT_OK(device->beginCapture());
  Affine first{300, 2.0f, 1.0f};
  ASSERT_OK(launch(*device, loaded->functions[0], {2, 1, 1}, {128, 1, 1}, {&dx, &dy, &first}));
  GemmCall g;
  g.m = 300, g.n = 1, g.k = 1;
  g.a = dy, g.lda = 300, g.b = three, g.ldb = 1, g.c = dz, g.ldc = 300;
  ASSERT_OK(device->gemm(g));
  ASSERT_OK(device->copyOnDevice(dw, dz, 300 * sizeof(float)));
  first.scale = 5.0f; // after the launch was recorded: the graph keeps 2
  Result<std::unique_ptr<CudaGraph>> graph = device->endCapture();
  ASSERT_TRUE(graph.isOk()) << graph.status().message();
  EXPECT_EQ(download<float>(*device, dw, 300)[10], -1.0f) << "capture must not run anything";

  for (int replay = 0; replay < 2; ++replay) {
    ASSERT_OK(device->copyToDevice(dw, std::vector<float>(300, 0.0f).data(), 1200));
    ASSERT_OK(graph.value()->launch());
    ASSERT_OK(device->synchronize());
    std::vector<float> w = download<float>(*device, dw, 300);
    for (size_t i = 0; i < w.size(); ++i)
      ASSERT_EQ(w[i], 3.0f * (2.0f * float(i) + 1.0f)) << "replay " << replay << " at " << i;
  }

  // What waits on the stream spoils a capture; so does a launch of a
  // kernel whose parameter sizes are unknown.
  ASSERT_OK(device->beginCapture());
  EXPECT_FALSE(device->synchronize().isOk());
  Result<std::unique_ptr<CudaGraph>> spoiled = device->endCapture();
  ASSERT_FALSE(spoiled.isOk());
  EXPECT_NE(spoiled.status().message().find("synchronize while the stream is being captured"),
            std::string::npos)
      << spoiled.status().message();
  ASSERT_OK(device->beginCapture());
  ASSERT_OK(launch(*device, loaded->functions[1], {1, 1, 1}, {64, 1, 1}, {&dx, &dy, &first}));
  spoiled = device->endCapture();
  ASSERT_FALSE(spoiled.isOk());
  EXPECT_NE(spoiled.status().message().find("affine_unrecordable__params"), std::string::npos)
      << spoiled.status().message();
  // The device works on after an ended capture.
  ASSERT_OK(launch(*device, loaded->functions[0], {1, 1, 1}, {64, 1, 1}, {&dx, &dy, &first}));
  EXPECT_EQ(download<float>(*device, dy, 300)[3], 5.0f * 3.0f + 1.0f);
  for (void *p : {dx, dy, dz, dw, three})
    ASSERT_OK(device->free(p));
}

TEST(DeviceMemoryPool, HandsTheSameBlocksBackInTheSameOrder) {
  std::shared_ptr<CudaDevice> device(emulator());
  ASSERT_TRUE(device);
  DeviceMemoryPool pool(device);
  auto take = [&](size_t bytes) {
    Result<void *> block = pool.allocate(bytes);
    EXPECT_TRUE(block.isOk()) << block.status().message();
    return block.isOk() ? block.value() : nullptr;
  };
  std::vector<size_t> sizes = {1000, 4096, 1000, 64};
  std::vector<void *> first;
  for (size_t bytes : sizes)
    first.push_back(take(bytes));
  for (void *block : first)
    ASSERT_OK(pool.free(block));
  EXPECT_EQ(pool.stats().deviceAllocations, 4u);
  std::vector<void *> second;
  for (size_t bytes : sizes)
    second.push_back(take(bytes));
  EXPECT_EQ(second, first) << "a run like the one before gets the same addresses";
  EXPECT_EQ(pool.stats().deviceAllocations, 4u) << "and allocates nothing";
  for (void *block : second)
    ASSERT_OK(pool.free(block));
  // A block more than twice the request is not handed out for it.
  void *small = take(1536);
  EXPECT_NE(small, first[1]);
  EXPECT_EQ(pool.stats().deviceAllocations, 5u);
  ASSERT_OK(pool.free(small));
  EXPECT_FALSE(pool.free(small).isOk()) << "freed twice";
  EXPECT_FALSE(pool.free(&sizes).isOk()) << "not the pool's";
  ASSERT_OK(pool.trim());
  EXPECT_EQ(pool.stats().bytesKept, 0u);
}

TEST(StagedTransfers, NeverRewriteAStagingBufferBeforeItsCopyIsDone) {
  std::shared_ptr<CudaDevice> device(emulator());
  ASSERT_TRUE(device);
  // Two staging buffers of at most 1 MiB, and ten copies with nothing else
  // on the stream: the third must wait for the first.
  StagedTransfers staged(device, 2, size_t(1) << 20);
  std::vector<void *> targets;
  for (int copy = 0; copy < 10; ++copy) // (a blocking upload drains the stream)
    targets.push_back(upload(*device, std::vector<float>(1000, -1.0f)));
  std::vector<std::unique_ptr<Fence>> fences;
  for (int copy = 0; copy < 10; ++copy) {
    std::vector<float> values(1000, float(copy));
    Result<std::unique_ptr<Fence>> fence =
        staged.toDevice(targets[size_t(copy)], values.data(), values.size() * sizeof(float));
    ASSERT_TRUE(fence.isOk()) << fence.status().message();
    values.assign(values.size(), -7.0f); // the caller may reuse its memory at once
    fences.push_back(fence.takeValue());
  }
  for (std::unique_ptr<Fence> &fence : fences)
    ASSERT_OK(fence->wait());
  for (int copy = 0; copy < 10; ++copy)
    ASSERT_EQ(download<float>(*device, targets[copy], 1000),
              std::vector<float>(1000, float(copy)))
        << "copy " << copy;
  StagedTransfers::Stats stats = staged.stats();
  EXPECT_EQ(stats.staged, 10u);
  EXPECT_EQ(stats.buffers, 2u);
  // A wait runs every queued copy here, freeing both buffers: every other
  // copy from the third on waits.
  EXPECT_EQ(stats.waits, 4u);
  // Larger than a staging buffer: straight from the caller's memory.
  std::vector<float> large((size_t(1) << 20) / 4 + 1, 3.0f);
  void *big = upload(*device, std::vector<float>(large.size(), 0.0f));
  Result<std::unique_ptr<Fence>> fence = staged.toDevice(big, large.data(), large.size() * 4);
  ASSERT_TRUE(fence.isOk()) << fence.status().message();
  EXPECT_TRUE(fence.value()->isDone());
  EXPECT_EQ(download<float>(*device, big, large.size()).back(), 3.0f);
  EXPECT_EQ(staged.stats().direct, 1u);
  for (void *p : targets)
    ASSERT_OK(device->free(p));
  ASSERT_OK(device->free(big));
}

//===----------------------------------------------------------------------===//
// A partition: x [n, 4] -> t = 2x + 1 (arena) -> y = 2t + 1, symbolic n
//===----------------------------------------------------------------------===//

const char *kTwoSteps = R"(
struct dims4 { long long v[4]; };
extern "C" __global__ void p0_k0(const float *__restrict__ a0, float *__restrict__ r0, dims4 d) {
  long long n = d.v[2] * d.v[3];
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;
       i += (long long)gridDim.x * blockDim.x)
    r0[i] = a0[i] * 2.0f + 1.0f;
}
#ifdef ORTC_HOST_EMULATION
ORTC_EMU_ENTRY(p0_k0)
#endif
)";

std::vector<char> twoStepBlob() {
  fb::PlanT plan =
      nByFourPlan("p0", {fb::BufferKind::Input, fb::BufferKind::Arena, fb::BufferKind::Output});
  plan.buffers[1]->name = "t";
  auto kernel = std::make_unique<fb::KernelT>();
  kernel->name = "p0_k0";
  plan.kernels.push_back(std::move(kernel));
  for (int i = 0; i < 2; ++i) {
    auto step = std::make_unique<fb::StepT>();
    step->kind = fb::StepKind::Launch;
    step->node = "n" + std::to_string(i);
    step->inputs = {i};
    step->outputs = {i + 1};
    step->threads_per_block = 128;
    step->max_blocks = 1 << 20;
    plan.steps.push_back(std::move(step));
  }
  plan.memory->symbolic = true;
  CudaBlobParts parts;
  parts.source = kTwoSteps;
  Result<std::vector<char>> blob = writeCudaBlob(plan, parts);
  EXPECT_TRUE(blob.isOk()) << blob.status().message();
  return blob.isOk() ? blob.takeValue() : std::vector<char>();
}

/// Runs the partition on x = [n, 4] of offset, offset + 1, ... at `dx` into
/// `dy` and checks y = 4x + 3: "" or what went wrong (callable from threads;
/// the copies take the stream-order lock as the EP's do).
std::string twoStepsFailure(PlanRunner &runner, CudaDevice &device, int64_t n, void *dx, void *dy,
                            float offset = 0) {
  std::vector<float> x(size_t(n * 4)), y(x.size());
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i) + offset;
  auto copy = [&](bool toDevice) {
    std::lock_guard<std::mutex> order(device.streamOrder());
    return toDevice ? device.copyToDevice(dx, x.data(), x.size() * 4)
                    : device.copyToHost(y.data(), dy, y.size() * 4);
  };
  TensorView in{dx, ElementType::Float, {n, 4}}, out{dy, ElementType::Float, {n, 4}};
  for (Status s : {copy(true), runner.run({in}, {out}), copy(false)})
    if (!s.isOk())
      return s.message();
  for (size_t i = 0; i < x.size(); ++i)
    if (y[i] != 4.0f * x[i] + 3.0f)
      return "n " + std::to_string(n) + " at " + std::to_string(i) + ": " + std::to_string(y[i]);
  return "";
}

void runTwoSteps(PlanRunner &runner, CudaDevice &device, int64_t n, void *dx, void *dy) {
  ASSERT_EQ(twoStepsFailure(runner, device, n, dx, dy), "");
}

/// The emulated device, its pool, and the two-step partition's blob.
struct TwoStepSetup {
  std::shared_ptr<CudaDevice> device{emulator()};
  std::shared_ptr<DeviceMemoryPool> pool =
      device ? std::make_shared<DeviceMemoryPool>(device) : nullptr;
  std::vector<char> blob = twoStepBlob();
  EpContextView context() const {
    EpContextView view;
    view.partitionName = "p0";
    view.data = blob.data();
    view.size = blob.size();
    return view;
  }
};

TEST(PlanRunner, CapturesEachShapeOnceAndReplaysIt) {
  TwoStepSetup setup;
  ASSERT_TRUE(setup.device);
  std::shared_ptr<CudaDevice> device = setup.device;
  EpContextView context = setup.context();
  auto pool = setup.pool;
  for (bool graphs : {true, false}) {
    PlanRunner::Options options;
    options.graphs = graphs;
    Result<std::unique_ptr<PlanRunner>> runner = PlanRunner::load(context, pool, options);
    ASSERT_TRUE(runner.isOk()) << runner.status().message();
    void *dx = upload(*device, std::vector<float>(64 * 4, 0.0f));
    void *dy = upload(*device, std::vector<float>(64 * 4, 0.0f));
    void *dy2 = upload(*device, std::vector<float>(64 * 4, 0.0f));
    for (int64_t n : {3, 3, 64, 3, 64}) {
      runTwoSteps(*runner.value(), *device, n, dx, dy);
      if (::testing::Test::HasFatalFailure())
        return;
    }
    runTwoSteps(*runner.value(), *device, 3, dx, dy2); // another output buffer
    PlanRunner::Stats stats = runner.value()->stats();
    if (graphs) {
      // n = 3 and n = 64 into dy, n = 3 into dy2; a bigger arena for n = 64
      // drops the graphs captured with the smaller one.
      EXPECT_EQ(stats.graphsCaptured, 4u);
      EXPECT_EQ(stats.graphReplays, 2u);
      EXPECT_EQ(stats.streamRuns, 0u);
      EXPECT_EQ(stats.graphsOff, "");
    } else {
      EXPECT_EQ(stats.graphsCaptured, 0u);
      EXPECT_EQ(stats.streamRuns, 6u);
    }
    EXPECT_EQ(stats.arenaBytes, 1024u) << "one [64, 4] f32 intermediate";
    for (void *p : {dx, dy, dy2})
      ASSERT_OK(device->free(p));
  }
}

TEST(PlanRunner, RunsFromManyThreadsGiveTheSameOutputs) {
  // Four threads, each with its own buffers and shapes, 25 runs each on one
  // partition and one device: captures, replays and the stream never mix
  // (each check compares against the formula, as a single thread would get).
  TwoStepSetup setup;
  ASSERT_TRUE(setup.device);
  std::shared_ptr<CudaDevice> device = setup.device;
  EpContextView context = setup.context();
  auto pool = setup.pool;
  Result<std::unique_ptr<PlanRunner>> runner = PlanRunner::load(context, pool, {});
  ASSERT_TRUE(runner.isOk()) << runner.status().message();
  std::vector<std::thread> threads;
  std::vector<std::string> failures(4);
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Result<void *> dx = pool->allocate(32 * 4 * 4), dy = pool->allocate(32 * 4 * 4);
      if (!dx.isOk() || !dy.isOk()) {
        failures[size_t(t)] = "allocation failed";
        return;
      }
      for (int run = 0; run < 25 && failures[size_t(t)].empty(); ++run) {
        int64_t n = 1 + (t * 7 + run) % 3 * 15; // 1, 16 or 31 rows
        failures[size_t(t)] =
            twoStepsFailure(*runner.value(), *device, n, dx.value(), dy.value(), float(t) * 1000);
      }
      (void)pool->free(dx.value());
      (void)pool->free(dy.value());
    });
  for (std::thread &thread : threads)
    thread.join();
  for (int t = 0; t < 4; ++t)
    EXPECT_EQ(failures[size_t(t)], "") << "thread " << t;
  PlanRunner::Stats stats = runner.value()->stats();
  EXPECT_EQ(stats.graphsCaptured + stats.graphReplays, 100u);
  EXPECT_GT(stats.graphReplays, 0u);
}

} // namespace
