//===- CudaDeviceTest.cpp - the CUDA EP's devices: driver and emulation ---===//
//
// providers/cuda/runtime/CudaDevice.h. The host emulation runs hand-written
// CUDA C++ kernels (the emitter's ABI: NAME__emulate, NAME__cooperative)
// and must get indexing, barriers, shuffles and dynamic shared memory right,
// expose a missing barrier, turn a deadlock into an error, and cache what it
// compiled. Every kernel is also compiled with NVRTC for sm_90, so the
// sources are CUDA, not just C++. The driver device must report a missing
// driver and the toolkit's stub in one line, and run a kernel where a GPU
// exists (skipped elsewhere, with the reason).
//
//===----------------------------------------------------------------------===//

#include "providers/cuda/runtime/CudaDevice.h"
#include "providers/cuda/compile/Nvrtc.h"
#include "test/unit/ScratchDir.h"
#include "test/unit/cuda/EmulatorSupport.h"

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <array>
#include <cfloat>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>

namespace {

using namespace ortc;
using namespace ortc::cuda;
using namespace ortc::cuda::testing;

// What the emitter will put at the top of every source for NVRTC.
const char *kPrelude = R"(
#ifndef ORTC_HOST_EMULATION
#define ORTC_DYNAMIC_SHARED(type, name) extern __shared__ type name[]
#endif
)";

// (a) A grid-stride loop with a by-value struct of int64 dims; and where
// each thread of a 3-D launch lands.
const char *kElementwise = R"(
struct Shape {
  long long n;
  long long inner;
  float scale;
};

extern "C" __global__ void scale_add(const float *__restrict__ x, float *__restrict__ y,
                                     Shape shape) {
  long long stride = (long long)gridDim.x * blockDim.x;
  for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < shape.n; i += stride)
    y[i] = x[i] * shape.scale + (float)(i % shape.inner);
}

extern "C" __global__ void where_am_i(int *cells, unsigned *order, unsigned *counter) {
  unsigned block = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  unsigned thread = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  unsigned threads = blockDim.x * blockDim.y * blockDim.z;
  cells[block * threads + thread] = threadIdx.x | threadIdx.y << 4 | threadIdx.z << 8 |
                                    blockIdx.x << 12 | blockIdx.y << 16 | blockIdx.z << 20;
  if (thread == 0)
    order[block] = atomicAdd(counter, 1u);
}

#ifdef ORTC_HOST_EMULATION
extern "C" void scale_add__emulate(void **args) {
  scale_add(*(const float **)args[0], *(float **)args[1], *(const Shape *)args[2]);
}
ORTC_EMU_ENTRY(where_am_i)
#endif
)";

// (b) A block reduction through static shared memory.
const char *kBlockSum = R"(
extern "C" __global__ void __launch_bounds__(256) block_sum(const float *x, float *partial, int n) {
  __shared__ float buffer[256];
  unsigned t = threadIdx.x;
  int i = blockIdx.x * blockDim.x + t;
  buffer[t] = i < n ? x[i] : 0.0f;
  __syncthreads();
  for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
    if (t < s)
      buffer[t] += buffer[t + s];
    __syncthreads();
  }
  if (t == 0)
    partial[blockIdx.x] = buffer[0];
}

#ifdef ORTC_HOST_EMULATION
ORTC_EMU_ENTRY(block_sum)
ORTC_EMU_COOPERATIVE(block_sum);
#endif
)";

// (c) A warp-shuffle reduction whose warp sums meet in dynamic shared
// memory; and the shuffles' and votes' exact semantics.
const char *kWarpSum = R"(
extern "C" __global__ void warp_sum(const float *x, float *lanes, float *out, int n) {
  ORTC_DYNAMIC_SHARED(float, warpSums);
  unsigned t = threadIdx.x, lane = t % 32, warp = t / 32;
  int i = blockIdx.x * blockDim.x + t;
  float v = i < n ? x[i] : 0.0f;
  for (int offset = 16; offset > 0; offset /= 2)
    v += __shfl_xor_sync(0xffffffffu, v, offset);
  lanes[i] = v;
  if (lane == 0)
    warpSums[warp] = v;
  __syncthreads();
  if (t == 0) {
    float total = 0.0f;
    for (unsigned w = 0; w < blockDim.x / 32; ++w)
      total += warpSums[w];
    out[blockIdx.x] = total;
  }
}

extern "C" __global__ void warp_ops(int *out) {
  int lane = threadIdx.x;
  int *o = out + lane * 9;
  o[0] = __shfl_sync(0xffffffffu, lane * 10, 3);
  o[1] = __shfl_sync(0xffffffffu, lane * 10, lane + 1, 8);
  o[2] = __shfl_up_sync(0xffffffffu, lane, 2);
  o[3] = __shfl_down_sync(0xffffffffu, lane, 4, 16);
  o[4] = __shfl_xor_sync(0xffffffffu, lane, 5);
  o[5] = (int)__ballot_sync(0xffffffffu, lane % 3 == 0);
  o[6] = __any_sync(0xffffffffu, lane == 31) + 2 * __all_sync(0xffffffffu, lane < 31);
  __syncwarp();
  o[7] = (int)(__shfl_sync(0xffffffffu, (long long)lane << 33, 31 - lane) >> 33);
  o[8] = __shfl_xor_sync(0xffffffffu, lane, 8, 8);
}

#ifdef ORTC_HOST_EMULATION
ORTC_EMU_ENTRY(warp_sum)
ORTC_EMU_COOPERATIVE(warp_sum);
ORTC_EMU_ENTRY(warp_ops)
ORTC_EMU_COOPERATIVE(warp_ops);
#endif
)";

// (d) Rotates a block's values by one and back: without the second
// barrier, a thread reads its neighbour's slot before it is written.
const char *kRotate = R"(
extern "C" __global__ void rotate_twice(const float *x, float *y, int withBarrier) {
  __shared__ float first[128];
  __shared__ float second[128];
  unsigned t = threadIdx.x, n = blockDim.x;
  first[t] = x[blockIdx.x * n + t];
  __syncthreads();
  second[t] = first[(t + 1) % n];
  if (withBarrier)
    __syncthreads();
  y[blockIdx.x * n + t] = second[(t + n - 1) % n];
}

#ifdef ORTC_HOST_EMULATION
ORTC_EMU_ENTRY(rotate_twice)
ORTC_EMU_COOPERATIVE(rotate_twice);
#endif
)";

// (e) Misuse: a barrier that half a warp skips while the warp shuffles
// (deadlock), a mask without the caller's lane, a barrier in a kernel not
// marked cooperative; and the divergent barrier CUDA tolerates in practice
// (the other threads exited).
const char *kMisuse = R"(
extern "C" __global__ void divergent(float *out) {
  float v = (float)threadIdx.x;
  if (threadIdx.x < 16)
    __syncthreads();
  v += __shfl_xor_sync(0xffffffffu, v, 1);
  out[threadIdx.x] = v;
}

extern "C" __global__ void bad_mask(int *out) {
  out[threadIdx.x] = __shfl_sync(1u, 1, 0);
}

extern "C" __global__ void undeclared_barrier(int *out) {
  out[threadIdx.x] = 1;
  __syncthreads();
}

extern "C" __global__ void early_exit(int *out) {
  unsigned t = threadIdx.x;
  if (t >= 16)
    return;
  out[t] = t;
  __syncthreads();
  int other = out[15 - t];
  __syncthreads();
  out[t] = t + other * 100;
}

#ifdef ORTC_HOST_EMULATION
ORTC_EMU_ENTRY(divergent)
ORTC_EMU_COOPERATIVE(divergent);
ORTC_EMU_ENTRY(bad_mask)
ORTC_EMU_COOPERATIVE(bad_mask);
ORTC_EMU_ENTRY(undeclared_barrier)
ORTC_EMU_ENTRY(early_exit)
ORTC_EMU_COOPERATIVE(early_exit);
#endif
)";

std::string withPrelude(const char *source) { return std::string(kPrelude) + source; }

TEST(EmulatedKernels, AreValidCudaForNvrtc) {
  std::optional<CudaArch> sm90 = parseCudaArch("sm_90");
  ASSERT_TRUE(sm90);
  for (const char *source : {kElementwise, kBlockSum, kWarpSum, kRotate, kMisuse}) {
    CudaBinary binary;
    std::string error;
    EXPECT_TRUE(compileCuda(withPrelude(source), "kernel.cu", *sm90, binary, error)) << error;
  }
}

TEST(EmulatedDevice, DescribesItself) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  EXPECT_EQ(device->describe(), "host emulation (test double)");
  EXPECT_EQ(device->computeCapability(), 0);
}

TEST(EmulatedDevice, GridStrideLoopWithAStructOfInt64Dims) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  std::optional<Loaded> loaded = load(*device, withPrelude(kElementwise), {"scale_add"});
  ASSERT_TRUE(loaded);

  struct Shape {
    long long n;
    long long inner;
    float scale;
  } shape{1000, 7, 0.5f}; // 1000 = 2 * 384 + 232: neither the block nor the grid divides it
  std::vector<float> x(shape.n);
  for (long long i = 0; i < shape.n; ++i)
    x[i] = static_cast<float>(i) * 0.25f - 3.0f;
  void *dx = upload(*device, x);
  void *dy = upload(*device, std::vector<float>(shape.n, -1.0f));
  ASSERT_OK(launch(*device, loaded->functions[0], {3, 1, 1}, {128, 1, 1}, {&dx, &dy, &shape}));
  std::vector<float> y = download<float>(*device, dy, shape.n);
  for (long long i = 0; i < shape.n; ++i)
    ASSERT_FLOAT_EQ(y[i], x[i] * 0.5f + static_cast<float>(i % 7)) << "at " << i;
  ASSERT_OK(device->free(dx));
  ASSERT_OK(device->free(dy));
}

TEST(EmulatedDevice, ThreeDimensionalIndicesAndBlockOrder) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  std::optional<Loaded> loaded = load(*device, withPrelude(kElementwise), {"where_am_i"});
  ASSERT_TRUE(loaded);
  const unsigned gx = 3, gy = 2, gz = 2, bx = 4, by = 2, bz = 3;
  const unsigned blocks = gx * gy * gz, threads = bx * by * bz;
  void *cells = upload(*device, std::vector<int>(blocks * threads, -1));
  void *order = upload(*device, std::vector<unsigned>(blocks, 0));
  void *counter = upload(*device, std::vector<unsigned>(1, 0));
  ASSERT_OK(launch(*device, loaded->functions[0], {gx, gy, gz}, {bx, by, bz},
                   {&cells, &order, &counter}));
  std::vector<int> got = download<int>(*device, cells, blocks * threads);
  for (unsigned z = 0; z < gz; ++z)
    for (unsigned y = 0; y < gy; ++y)
      for (unsigned x = 0; x < gx; ++x)
        for (unsigned tz = 0; tz < bz; ++tz)
          for (unsigned ty = 0; ty < by; ++ty)
            for (unsigned tx = 0; tx < bx; ++tx) {
              unsigned block = x + gx * (y + gy * z), thread = tx + bx * (ty + by * tz);
              int expected = tx | ty << 4 | tz << 8 | x << 12 | y << 16 | z << 20;
              ASSERT_EQ(got[block * threads + thread], expected) << block << "/" << thread;
            }
  // Blocks run one at a time, x fastest.
  std::vector<unsigned> sequence = download<unsigned>(*device, order, blocks);
  for (unsigned b = 0; b < blocks; ++b)
    EXPECT_EQ(sequence[b], b);
  for (void *memory : {cells, order, counter})
    ASSERT_OK(device->free(memory));
}

TEST(EmulatedDevice, BlockReductionWithStaticSharedMemory) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  std::optional<Loaded> loaded = load(*device, withPrelude(kBlockSum), {"block_sum"});
  ASSERT_TRUE(loaded);
  int n = 1000;
  const unsigned blocks = 4;
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = static_cast<float>(i % 7);
  void *dx = upload(*device, x);
  void *partial = upload(*device, std::vector<float>(blocks, 0.0f));
  ASSERT_OK(
      launch(*device, loaded->functions[0], {blocks, 1, 1}, {256, 1, 1}, {&dx, &partial, &n}));
  std::vector<float> sums = download<float>(*device, partial, blocks);
  for (unsigned b = 0; b < blocks; ++b) {
    float expected = 0;
    for (int i = b * 256; i < std::min<int>(n, (b + 1) * 256); ++i)
      expected += x[i];
    EXPECT_EQ(sums[b], expected) << "block " << b;
  }
  ASSERT_OK(device->free(dx));
  ASSERT_OK(device->free(partial));
}

TEST(EmulatedDevice, WarpShuffleReductionWithDynamicSharedMemory) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  std::optional<Loaded> loaded = load(*device, withPrelude(kWarpSum), {"warp_sum"});
  ASSERT_TRUE(loaded);
  const unsigned blocks = 3, block = 128;
  int n = 300; // the last block is partly past the end
  std::vector<float> x(n);
  for (int i = 0; i < n; ++i)
    x[i] = static_cast<float>(i % 11);
  void *dx = upload(*device, x);
  void *lanes = upload(*device, std::vector<float>(blocks * block, 0.0f));
  void *out = upload(*device, std::vector<float>(blocks, 0.0f));
  ASSERT_OK(launch(*device, loaded->functions[0], {blocks, 1, 1}, {block, 1, 1},
                   {&dx, &lanes, &out, &n}, block / 32 * sizeof(float)));
  std::vector<float> laneSums = download<float>(*device, lanes, blocks * block);
  std::vector<float> blockSums = download<float>(*device, out, blocks);
  for (unsigned b = 0; b < blocks; ++b) {
    float blockTotal = 0;
    for (unsigned w = 0; w < block / 32; ++w) {
      float warpTotal = 0;
      for (unsigned l = 0; l < 32; ++l) {
        int i = b * block + w * 32 + l;
        warpTotal += i < n ? x[i] : 0.0f;
      }
      for (unsigned l = 0; l < 32; ++l) // the butterfly gives every lane the sum
        ASSERT_EQ(laneSums[b * block + w * 32 + l], warpTotal) << b << "/" << w << "/" << l;
      blockTotal += warpTotal;
    }
    EXPECT_EQ(blockSums[b], blockTotal) << "block " << b;
  }
  for (void *memory : {dx, lanes, out})
    ASSERT_OK(device->free(memory));
}

TEST(EmulatedDevice, ShufflesAndVotesFollowCuda) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  std::optional<Loaded> loaded = load(*device, withPrelude(kWarpSum), {"warp_ops"});
  ASSERT_TRUE(loaded);
  void *out = upload(*device, std::vector<int>(32 * 9, -1));
  ASSERT_OK(launch(*device, loaded->functions[0], {1, 1, 1}, {32, 1, 1}, {&out}));
  std::vector<int> got = download<int>(*device, out, 32 * 9);
  unsigned ballot = 0;
  for (int lane = 0; lane < 32; lane += 3)
    ballot |= 1u << lane;
  for (int lane = 0; lane < 32; ++lane) {
    const int *o = &got[lane * 9];
    EXPECT_EQ(o[0], 30) << lane;
    EXPECT_EQ(o[1], ((lane & ~7) + (lane + 1) % 8) * 10) << lane;
    EXPECT_EQ(o[2], lane < 2 ? lane : lane - 2) << lane;
    EXPECT_EQ(o[3], lane % 16 + 4 < 16 ? lane + 4 : lane) << lane;
    EXPECT_EQ(o[4], lane ^ 5) << lane;
    EXPECT_EQ(static_cast<unsigned>(o[5]), ballot) << lane;
    EXPECT_EQ(o[6], 1) << lane; // any: yes, all: no
    EXPECT_EQ(o[7], 31 - lane) << lane;
    // Width 8: a later segment is out of reach (the lane keeps its value),
    // an earlier one is not.
    EXPECT_EQ(o[8], (lane ^ 8) >= (lane & ~7) + 8 ? lane : lane ^ 8) << lane;
  }
  ASSERT_OK(device->free(out));
}

TEST(EmulatedDevice, AMissingBarrierGivesWrongResults) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  std::optional<Loaded> loaded = load(*device, withPrelude(kRotate), {"rotate_twice"});
  ASSERT_TRUE(loaded);
  const unsigned blocks = 2, block = 128;
  std::vector<float> x(blocks * block);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = static_cast<float>(i + 1);
  void *dx = upload(*device, x);
  void *dy = upload(*device, std::vector<float>(x.size(), 0.0f));
  int withBarrier = 0;
  ASSERT_OK(launch(*device, loaded->functions[0], {blocks, 1, 1}, {block, 1, 1},
                   {&dx, &dy, &withBarrier}));
  EXPECT_NE(download<float>(*device, dy, x.size()), x)
      << "the emulator ran a kernel that misses a __syncthreads as if it were correct";
  withBarrier = 1;
  ASSERT_OK(launch(*device, loaded->functions[0], {blocks, 1, 1}, {block, 1, 1},
                   {&dx, &dy, &withBarrier}));
  EXPECT_EQ(download<float>(*device, dy, x.size()), x);
  ASSERT_OK(device->free(dx));
  ASSERT_OK(device->free(dy));
}

TEST(EmulatedDevice, MisuseIsAnErrorNotAHang) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  std::optional<Loaded> loaded = load(
      *device, withPrelude(kMisuse), {"divergent", "bad_mask", "undeclared_barrier", "early_exit"});
  ASSERT_TRUE(loaded);
  void *out = upload(*device, std::vector<int>(64, 0));

  auto start = std::chrono::steady_clock::now();
  Status status = launch(*device, loaded->functions[0], {1, 1, 1}, {32, 1, 1}, {&out});
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(10));
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(),
            "emulated kernel divergent deadlocked in block (0,0,0): 16 threads at "
            "__syncthreads, 16 at warp operations, 0 exited; warp 0: 16 lanes at "
            "__shfl_xor_sync (mask 0xffffffff)");

  status = launch(*device, loaded->functions[1], {1, 1, 1}, {32, 1, 1}, {&out});
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("excludes its own lane"), std::string::npos) << status.message();

  status = launch(*device, loaded->functions[2], {1, 1, 1}, {32, 1, 1}, {&out});
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("undeclared_barrier__cooperative"), std::string::npos)
      << status.message();

  // After all that, the device still runs kernels; threads that exited do
  // not hold a barrier back.
  ASSERT_OK(launch(*device, loaded->functions[3], {1, 1, 1}, {32, 1, 1}, {&out}));
  std::vector<int> got = download<int>(*device, out, 16);
  for (int t = 0; t < 16; ++t)
    EXPECT_EQ(got[t], t + (15 - t) * 100) << t;

  // Launch parameters the GPU would refuse.
  EXPECT_FALSE(launch(*device, loaded->functions[3], {1, 1, 1}, {2048, 1, 1}, {&out}).isOk());
  EXPECT_FALSE(launch(*device, loaded->functions[3], {0, 1, 1}, {32, 1, 1}, {&out}).isOk());
  int notAKernel = 0;
  status = launch(*device, &notAKernel, {1, 1, 1}, {32, 1, 1}, {&out});
  EXPECT_EQ(status.message(), "emulated launch: the function is not a kernel of a loaded module");
  Result<void *> missing = loaded->module->function("no_such_kernel");
  ASSERT_FALSE(missing.isOk());
  EXPECT_EQ(missing.status().message(),
            "emulated module test has no kernel no_such_kernel (no extern \"C\" "
            "no_such_kernel__emulate)");
  ASSERT_OK(device->free(out));
}

TEST(EmulatedDevice, ASyntaxErrorIsAClearError) {
  const std::string source =
      withPrelude("extern \"C\" __global__ void broken(float *y) { y[0] = 1.0f }\n");
  CudaBinary binary;
  std::string nvrtcError;
  EXPECT_FALSE(compileCuda(source, "broken.cu", CudaArch{}, binary, nvrtcError));

  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  Result<std::unique_ptr<CudaModule>> module = device->loadModule(sourceImage(source, "broken"));
  ASSERT_FALSE(module.isOk());
  const std::string &message = module.status().message();
  EXPECT_EQ(message.rfind("emulated module broken: the host compiler failed: k.cpp:", 0), 0u)
      << message;
  EXPECT_NE(message.find("error"), std::string::npos) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;

  // A compiler that does not exist says so, too.
  std::unique_ptr<CudaDevice> nowhere = emulator("/nonexistent/c++");
  ASSERT_TRUE(nowhere);
  module = nowhere->loadModule(sourceImage(withPrelude(kBlockSum), "nowhere"));
  ASSERT_FALSE(module.isOk());
  EXPECT_NE(module.status().message().find("/nonexistent/c++"), std::string::npos)
      << module.status().message();
}

/// Sets an environment variable for a scope.
class ScopedEnv {
public:
  ScopedEnv(const char *name, const std::string &value) : name_(name) {
    if (const char *old = std::getenv(name))
      old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_)
      setenv(name_, old_->c_str(), 1);
    else
      unsetenv(name_);
  }

private:
  const char *name_;
  std::optional<std::string> old_;
};

size_t lineCount(const std::string &path) {
  std::ifstream in(path);
  size_t lines = 0;
  for (std::string line; std::getline(in, line);)
    ++lines;
  return lines;
}

TEST(EmulatedDevice, ASecondLoadUsesTheCache) {
  testutil::ScratchDir scratch("ortc-cuda-emu-cache");
  ScopedEnv tmpdir("TMPDIR", scratch.path()); // a fresh cache, removed with the scratch
  // A compiler that counts its runs.
  std::string compiler = scratch.file("counting-c++");
  std::string count = scratch.file("count");
  {
    std::ofstream script(compiler);
    script << "#!/bin/sh\necho run >> '" << count << "'\nexec c++ \"$@\"\n";
  }
  ASSERT_EQ(chmod(compiler.c_str(), 0755), 0);

  std::unique_ptr<CudaDevice> device = emulator(compiler);
  ASSERT_TRUE(device);
  std::optional<Loaded> first = load(*device, withPrelude(kBlockSum), {"block_sum"});
  ASSERT_TRUE(first);
  EXPECT_EQ(lineCount(count), 1u);
  std::optional<Loaded> second = load(*device, withPrelude(kBlockSum), {"block_sum"});
  ASSERT_TRUE(second);
  EXPECT_EQ(lineCount(count), 1u) << "the second load compiled again";
  first.reset(); // the second module stands alone

  int n = 256;
  void *dx = upload(*device, std::vector<float>(n, 2.0f));
  void *partial = upload(*device, std::vector<float>(1, 0.0f));
  ASSERT_OK(launch(*device, second->functions[0], {1, 1, 1}, {256, 1, 1}, {&dx, &partial, &n}));
  EXPECT_EQ(download<float>(*device, partial, 1)[0], 512.0f);
  ASSERT_OK(device->free(dx));
  ASSERT_OK(device->free(partial));

  // Another source compiles; the work folders are gone; the cache holds two
  // objects.
  ASSERT_TRUE(load(*device, withPrelude(kRotate), {"rotate_twice"}));
  EXPECT_EQ(lineCount(count), 2u);
  size_t objects = 0, leftovers = 0;
  for (const auto &entry : std::filesystem::directory_iterator(scratch.path())) {
    std::string name = entry.path().filename().string();
    leftovers += name.rfind("ortc-cuda-emu-", 0) == 0;
  }
  for (const auto &entry : std::filesystem::directory_iterator(scratch.file("ortc-cuda-emulation")))
    objects += entry.path().extension() == ".so";
  EXPECT_EQ(objects, 2u);
  EXPECT_EQ(leftovers, 0u);
}

TEST(EmulatedDevice, MemoryIsTracked) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  int local = 0;
  Status status = device->free(&local);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("not an allocation of this device"), std::string::npos)
      << status.message();
  ASSERT_OK(device->free(nullptr));

  Result<void *> memory = device->allocate(100);
  ASSERT_TRUE(memory.isOk()) << memory.status().message();
  EXPECT_EQ(reinterpret_cast<uintptr_t>(memory.value()) % 256, 0u);
  std::vector<char> host(200, 1);
  ASSERT_OK(device->copyToDevice(memory.value(), host.data(), 100));
  ASSERT_OK(device->copyOnDevice(static_cast<char *>(memory.value()) + 50, memory.value(), 50));
  EXPECT_FALSE(device->copyToDevice(memory.value(), host.data(), 101).isOk());
  EXPECT_FALSE(
      device->copyToHost(host.data(), static_cast<char *>(memory.value()) + 1, 100).isOk());
  EXPECT_FALSE(device->copyToHost(host.data(), &local, sizeof local).isOk());
  EXPECT_FALSE(device->allocate(0).isOk());
  ASSERT_OK(device->free(memory.value()));
  EXPECT_FALSE(device->free(memory.value()).isOk()) << "a double free was accepted";
}

//===----------------------------------------------------------------------===//
// The driver device
//===----------------------------------------------------------------------===//

const char *kAddKernel = R"(
extern "C" __global__ void add_f32(const float *a, const float *b, float *y, long long n) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n)
    y[i] = a[i] + b[i];
}
)";

bool driverInstalled() {
  void *probe = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (probe)
    dlclose(probe);
  return probe != nullptr;
}

TEST(DriverDevice, AMissingDriverIsOneLine) {
  if (driverInstalled())
    GTEST_SKIP() << "libcuda.so.1 is installed here: the no-driver path cannot be shown";
  std::optional<ScopedEnv> noOverride;
  if (std::getenv("ORTC_CUDA_DRIVER"))
    noOverride.emplace("ORTC_CUDA_DRIVER", "");
  Result<std::unique_ptr<CudaDevice>> device = openDriverDevice(0);
  ASSERT_FALSE(device.isOk());
  const std::string &message = device.status().message();
  EXPECT_EQ(message.rfind("no CUDA driver found (libcuda.so.1: ", 0), 0u) << message;
  EXPECT_EQ(message.find('\n'), std::string::npos) << message;
}

TEST(DriverDevice, TheToolkitsStubFailsInCuInit) {
  std::string stub = ORTC_CUDA_STUB_DRIVER;
  if (stub.empty() || !std::filesystem::exists(stub))
    GTEST_SKIP() << "no stub libcuda in this toolkit (CUDA_cuda_driver_LIBRARY: '" << stub << "')";
  // In a child process: the stub's soname is libcuda.so.1, so once loaded it
  // would answer for the real driver in this process. Every symbol the
  // device resolves exists in the stub (else the error would say "lacks").
  EXPECT_EXIT(
      {
        setenv("ORTC_CUDA_DRIVER", stub.c_str(), 1);
        Result<std::unique_ptr<CudaDevice>> device = openDriverDevice(0);
        std::string message = device.isOk() ? "opened" : device.status().message();
        std::fprintf(stderr, "[%s]\n", message.c_str());
        std::exit(message.find('\n') == std::string::npos ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "\\[CUDA driver: cuInit: CUDA_ERROR_STUB_LIBRARY[^]]*\\]");
}

TEST(DriverDevice, RunsAKernelOnTheGpu) {
  Result<std::unique_ptr<CudaDevice>> opened = openDriverDevice(0);
  if (!opened.isOk())
    GTEST_SKIP() << "no GPU to run on: " << opened.status().message();
  std::unique_ptr<CudaDevice> device = opened.takeValue();
  int capability = device->computeCapability();
  std::cout << "device: " << device->describe() << "\n";
  EXPECT_NE(device->describe().find("(sm_" + std::to_string(capability) + ", driver "),
            std::string::npos);

  CudaArch arch{capability / 10, capability % 10};
  CudaBinary binary;
  std::string error;
  ASSERT_TRUE(compileCuda(kAddKernel, "add_f32.cu", arch, binary, error)) << error;

  long long n = 1000;
  std::vector<float> a(n), b(n);
  for (long long i = 0; i < n; ++i) {
    a[i] = static_cast<float>(i);
    b[i] = 0.5f * static_cast<float>(i);
  }
  void *da = upload(*device, a), *db = upload(*device, b);
  void *dy = upload(*device, std::vector<float>(n, 0.0f));
  auto run = [&](const ModuleImage &image) {
    Result<std::unique_ptr<CudaModule>> module = device->loadModule(image);
    if (!module.isOk() && !image.ptx.empty() &&
        module.status().message().find("CUDA_ERROR_UNSUPPORTED_PTX_VERSION") != std::string::npos) {
      // A driver older than this NVRTC cannot JIT its PTX: the machine's
      // limit, not the device's.
      std::cout << "note: " << module.status().message() << "\n";
      return;
    }
    ASSERT_TRUE(module.isOk()) << module.status().message();
    Result<void *> function = module.value()->function("add_f32");
    ASSERT_TRUE(function.isOk()) << function.status().message();
    ASSERT_OK(device->copyOnDevice(dy, da, n * sizeof(float))); // overwritten below
    ASSERT_OK(launch(*device, function.value(), {(unsigned)((n + 127) / 128), 1, 1}, {128, 1, 1},
                     {&da, &db, &dy, &n}));
    ASSERT_OK(device->synchronize());
    std::vector<float> y = download<float>(*device, dy, n);
    for (long long i = 0; i < n; ++i)
      ASSERT_EQ(y[i], a[i] + b[i]) << i;
    EXPECT_FALSE(module.value()->function("no_such_kernel").isOk());
  };

  ModuleImage cubin;
  cubin.what = "add (cubin)";
  cubin.cubins.push_back(
      {capability, reinterpret_cast<const char *>(binary.cubin.data()), binary.cubin.size()});
  run(cubin);

  ModuleImage ptx; // JIT-compiled by the driver
  ptx.what = "add (PTX)";
  ptx.ptxArch = capability;
  ptx.ptx = binary.ptx;
  run(ptx);

  ModuleImage elsewhere;
  elsewhere.what = "add (elsewhere)";
  elsewhere.cubins.push_back({capability == 80 ? 86 : 80, "", 1});
  elsewhere.ptxArch = capability + 10;
  elsewhere.ptx = binary.ptx;
  Result<std::unique_ptr<CudaModule>> refused = device->loadModule(elsewhere);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.status().message().find("but this GPU is sm_" + std::to_string(capability)),
            std::string::npos)
      << refused.status().message();

  int local = 0;
  EXPECT_FALSE(device->free(&local).isOk());
  for (void *memory : {da, db, dy})
    ASSERT_OK(device->free(memory));
}

//===----------------------------------------------------------------------===//
// GEMM: the emulator's host reference and cuBLAS
//===----------------------------------------------------------------------===//

// Rounding written independently of the emulator's bit manipulation: x to
// `bits` mantissa bits, to nearest even (nearbyint in the default rounding
// mode), with exponents below `minExponent` subnormal.
double roundMantissa(double x, int bits, int minExponent) {
  if (x == 0 || !std::isfinite(x))
    return x;
  int exponent = 0;
  std::frexp(x, &exponent); // x = f * 2^exponent, 0.5 <= |f| < 1
  double quantum = std::ldexp(1.0, std::max(exponent - 1, minExponent) - bits);
  return std::nearbyint(x / quantum) * quantum;
}
float toF16(float x) {
  double r = roundMantissa(x, 10, -14);
  return std::fabs(r) >= 65536.0 ? std::copysign(INFINITY, x) : static_cast<float>(r);
}
float toBf16(float x) {
  double r = roundMantissa(x, 7, -126);
  return std::fabs(r) > FLT_MAX ? std::copysign(INFINITY, x) : static_cast<float>(r);
}
float toTf32(float x) {
  double r = roundMantissa(x, 10, -126);
  return std::fabs(r) > FLT_MAX ? std::copysign(INFINITY, x) : static_cast<float>(r);
}

/// f16 bits of a value f16 represents exactly (or inf, NaN).
uint16_t f16Bits(float x) {
  uint16_t sign = std::signbit(x) ? 0x8000 : 0;
  double a = std::fabs(static_cast<double>(x));
  if (std::isnan(x))
    return 0x7e00;
  if (std::isinf(x))
    return sign | 0x7c00;
  if (a == 0)
    return sign;
  int exponent = 0;
  std::frexp(a, &exponent);
  int lead = exponent - 1;
  if (lead < -14)
    return sign | static_cast<uint16_t>(a / std::ldexp(1.0, -24));
  return sign | static_cast<uint16_t>((lead + 15) << 10) |
         static_cast<uint16_t>((a / std::ldexp(1.0, lead) - 1) * 1024);
}
float f16Value(uint16_t bits) {
  int exponent = (bits >> 10) & 0x1f, mantissa = bits & 0x3ff;
  double magnitude = exponent == 0    ? std::ldexp(mantissa, -24)
                     : exponent == 31 ? (mantissa ? NAN : INFINITY)
                                      : std::ldexp(1024 + mantissa, exponent - 25);
  return static_cast<float>((bits & 0x8000) ? -magnitude : magnitude);
}
uint16_t bf16Bits(float x) { // exact for values bf16 represents
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  return static_cast<uint16_t>(bits >> 16);
}
float bf16Value(uint16_t bits) {
  uint32_t wide = uint32_t(bits) << 16;
  float x;
  std::memcpy(&x, &wide, 4);
  return x;
}

/// One problem set: op(A) m x k, op(B) k x n, C m x n, each logical matrix
/// row-major (problem q's at [q]; one matrix when the stride is 0).
struct GemmProblem {
  GemmCall call; // sizes, transposes, lds, strides, alpha, beta, types; no pointers
  std::vector<std::vector<float>> a, b, c;
  std::vector<float> bias; // m values, for an epilogue
};

size_t elementSize(GemmCall::Type type) { return type == GemmCall::Type::F32 ? 4 : 2; }

float roundTo(GemmCall::Type type, float x) {
  return type == GemmCall::Type::F16 ? toF16(x) : type == GemmCall::Type::BF16 ? toBf16(x) : x;
}

/// The elements cuBLAS reads for `logical` (rows x cols each) stored
/// transposed or not with `ld` and `stride`; `padding` between them.
std::vector<float> columnMajor(const std::vector<std::vector<float>> &logical, int64_t rows,
                               int64_t cols, bool transposed, int64_t ld, int64_t stride,
                               int64_t batch, float padding) {
  int64_t storedRows = transposed ? cols : rows, storedCols = transposed ? rows : cols;
  std::vector<float> out((storedRows - 1) + (storedCols - 1) * ld + (batch - 1) * stride + 1,
                         padding);
  for (int64_t q = 0; q < batch; ++q)
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t c = 0; c < cols; ++c)
        out[q * stride + (transposed ? c + r * ld : r + c * ld)] =
            logical[stride == 0 ? 0 : q][r * cols + c];
  return out;
}

std::vector<char> encode(GemmCall::Type type, const std::vector<float> &values) {
  std::vector<char> bytes(values.size() * elementSize(type));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == GemmCall::Type::F32) {
      std::memcpy(&bytes[i * 4], &values[i], 4);
      continue;
    }
    uint16_t bits =
        type == GemmCall::Type::F16 ? f16Bits(toF16(values[i])) : bf16Bits(toBf16(values[i]));
    std::memcpy(&bytes[i * 2], &bits, 2);
  }
  return bytes;
}

std::vector<float> decode(GemmCall::Type type, const std::vector<char> &bytes) {
  std::vector<float> values(bytes.size() / elementSize(type));
  for (size_t i = 0; i < values.size(); ++i) {
    if (type == GemmCall::Type::F32) {
      std::memcpy(&values[i], &bytes[i * 4], 4);
      continue;
    }
    uint16_t bits;
    std::memcpy(&bits, &bytes[i * 2], 2);
    values[i] = type == GemmCall::Type::F16 ? f16Value(bits) : bf16Value(bits);
  }
  return values;
}

/// The naive row-major reference: per element, the products of the inputs
/// rounded as `compute` says, summed in double, then alpha * sum + beta * C
/// rounded to the element type (C not read when beta is 0).
std::vector<std::vector<float>> referenceGemm(const GemmProblem &p) {
  const GemmCall &g = p.call;
  auto input = [&](float x) {
    x = roundTo(g.type, x);
    switch (g.compute) {
    case GemmCall::Compute::F32Tf32:
      return toTf32(x);
    case GemmCall::Compute::F32F16:
      return toF16(x);
    case GemmCall::Compute::F32Bf16:
      return toBf16(x);
    default:
      return x;
    }
  };
  std::vector<std::vector<float>> out(g.batch, std::vector<float>(g.m * g.n));
  for (int64_t q = 0; q < g.batch; ++q) {
    const std::vector<float> &a = p.a[g.strideA == 0 ? 0 : q], &b = p.b[g.strideB == 0 ? 0 : q];
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        double sum = 0;
        for (int64_t l = 0; l < g.k; ++l)
          sum += double(input(a[i * g.k + l])) * double(input(b[l * g.n + j]));
        double value = double(g.alpha) * sum;
        if (g.beta != 0)
          value += double(g.beta) * double(roundTo(g.type, p.c[q][i * g.n + j]));
        if (g.epilogue != GemmCall::Epilogue::None)
          value += double(roundTo(g.type, p.bias[size_t(i)]));
        if (g.epilogue == GemmCall::Epilogue::BiasRelu)
          value = std::max(value, 0.0);
        if (g.epilogue == GemmCall::Epilogue::BiasGeluTanh)
          value = 0.5 * value *
                  (1 + std::tanh(std::sqrt(2 / M_PI) * (value + 0.044715 * value * value * value)));
        out[q][i * g.n + j] = roundTo(g.type, static_cast<float>(value));
      }
  }
  return out;
}

struct GemmOutcome {
  Status status;
  std::vector<std::vector<float>> c; // logical, per problem
  bool paddingKept = true;           // C's elements outside every problem untouched
};

constexpr float kPadding = -1536.0f; // exact in f16 and bf16

/// Runs `p` on `device`: operands uploaded as cuBLAS reads them, C
/// downloaded and unpacked.
GemmOutcome runGemm(CudaDevice &device, const GemmProblem &p) {
  const GemmCall &g = p.call;
  GemmOutcome outcome;
  std::vector<float> a = columnMajor(p.a, g.m, g.k, g.transA, g.lda, g.strideA, g.batch, NAN);
  std::vector<float> b = columnMajor(p.b, g.k, g.n, g.transB, g.ldb, g.strideB, g.batch, NAN);
  std::vector<float> c = columnMajor(p.c, g.m, g.n, false, g.ldc, g.strideC, g.batch, kPadding);
  std::vector<char> bytesC = encode(g.type, c);
  void *da = upload(device, encode(g.type, a)), *db = upload(device, encode(g.type, b));
  void *dc = upload(device, bytesC);
  void *dbias = p.bias.empty() ? nullptr : upload(device, encode(g.type, p.bias));
  GemmCall call = g;
  call.a = da;
  call.b = db;
  call.c = dc;
  call.bias = dbias;
  outcome.status = device.gemm(call);
  if (outcome.status.isOk())
    outcome.status = device.synchronize();
  std::vector<char> got = download<char>(device, dc, bytesC.size());
  std::vector<float> values = decode(g.type, got);
  outcome.c.assign(g.batch, std::vector<float>(g.m * g.n));
  std::vector<bool> inside(values.size());
  for (int64_t q = 0; q < g.batch; ++q)
    for (int64_t i = 0; i < g.m; ++i)
      for (int64_t j = 0; j < g.n; ++j) {
        size_t index = q * g.strideC + i + j * g.ldc;
        outcome.c[q][i * g.n + j] = values[index];
        inside[index] = true;
      }
  for (size_t i = 0; i < values.size(); ++i)
    if (!inside[i] && values[i] != kPadding)
      outcome.paddingKept = false;
  for (void *memory : {da, db, dc, dbias})
    EXPECT_TRUE(device.free(memory).isOk());
  return outcome;
}

/// Deterministic multiples of 1/8 in [-2, 2]: exact in f16 and bf16, and
/// sums of their products are exact in f32 in any order (so results are
/// exact, whatever the summation order).
std::vector<float> dyadic(size_t count, unsigned seed) {
  std::vector<float> values(count);
  uint32_t state = seed * 2654435761u + 12345u;
  for (float &value : values) {
    state = state * 1664525u + 1013904223u;
    value = static_cast<float>(static_cast<int>((state >> 16) % 33) - 16) / 8.0f;
  }
  return values;
}

/// A problem with `batch` sets of random operands (one when the stride is
/// 0); lds and strides as given (strides past each matrix, with a gap).
GemmProblem makeProblem(GemmCall call, unsigned seed) {
  GemmProblem p;
  p.call = call;
  auto count = [&](int64_t stride) { return stride == 0 ? 1 : call.batch; };
  for (int64_t q = 0; q < count(call.strideA); ++q)
    p.a.push_back(dyadic(call.m * call.k, seed * 31 + q));
  for (int64_t q = 0; q < count(call.strideB); ++q)
    p.b.push_back(dyadic(call.k * call.n, seed * 37 + q + 1000));
  for (int64_t q = 0; q < call.batch; ++q)
    p.c.push_back(dyadic(call.m * call.n, seed * 41 + q + 2000));
  return p;
}

/// A descriptor with lds `pad` past the minimum and each stride the span
/// of one matrix plus `gap` elements.
GemmCall descriptor(bool transA, bool transB, int64_t m, int64_t n, int64_t k, int64_t batch = 1,
                    int64_t pad = 3, int64_t gap = 5) {
  GemmCall g;
  g.transA = transA;
  g.transB = transB;
  g.m = m;
  g.n = n;
  g.k = k;
  g.batch = batch;
  g.lda = (transA ? k : m) + pad;
  g.ldb = (transB ? n : k) + pad;
  g.ldc = m + pad;
  g.strideA = g.lda * (transA ? m : k) + gap;
  g.strideB = g.ldb * (transB ? k : n) + gap;
  g.strideC = g.ldc * n + gap;
  return g;
}

void expectResults(const GemmOutcome &got, const std::vector<std::vector<float>> &want,
                   const std::string &what) {
  ASSERT_TRUE(got.status.isOk()) << what << ": " << got.status.message();
  EXPECT_TRUE(got.paddingKept) << what << ": C was written outside its problems";
  ASSERT_EQ(got.c.size(), want.size()) << what;
  for (size_t q = 0; q < want.size(); ++q)
    for (size_t i = 0; i < want[q].size(); ++i)
      ASSERT_EQ(got.c[q][i], want[q][i]) << what << ": problem " << q << ", element " << i;
}

TEST(EmulatedGemm, AllTransposesWithPaddedLeadingDimensions) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  for (bool transA : {false, true})
    for (bool transB : {false, true}) {
      GemmCall g = descriptor(transA, transB, 7, 5, 9); // m, n, k all different
      g.alpha = 1.5f;
      GemmProblem p = makeProblem(g, 1 + transA * 2 + transB);
      std::string what = std::string(transA ? "T" : "N") + (transB ? "T" : "N");
      expectResults(runGemm(*device, p), referenceGemm(p), what);
    }
}

TEST(EmulatedGemm, NonTrivialColumnsAndRowsLandWhereCublasPutsThem) {
  // A hand-checked case: op(A) = [[1, 2], [3, 4], [5, 6]] (3 x 2), op(B) =
  // [[1, 0, 2], [0, 1, 3]] (2 x 3); C = A B = [[1, 2, 8], [3, 4, 18], [5, 6, 28]].
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  for (bool transA : {false, true})
    for (bool transB : {false, true}) {
      GemmProblem p;
      p.call = descriptor(transA, transB, 3, 3, 2, 1, 1, 0);
      p.a = {{1, 2, 3, 4, 5, 6}};
      p.b = {{1, 0, 2, 0, 1, 3}};
      p.c = {std::vector<float>(9, 0.0f)};
      expectResults(runGemm(*device, p), {{1, 2, 8, 3, 4, 18, 5, 6, 28}},
                    std::string(transA ? "T" : "N") + (transB ? "T" : "N"));
    }
}

TEST(EmulatedGemm, StridedBatchAndASharedB) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  GemmCall g = descriptor(false, true, 6, 4, 5, 3);
  GemmProblem p = makeProblem(g, 7);
  expectResults(runGemm(*device, p), referenceGemm(p), "batch 3");

  g.strideB = 0; // every problem multiplies by the same B
  GemmProblem shared = makeProblem(g, 8);
  ASSERT_EQ(shared.b.size(), 1u);
  expectResults(runGemm(*device, shared), referenceGemm(shared), "batch 3, strideB 0");

  g = descriptor(true, false, 4, 6, 3, 3);
  g.strideA = 0; // a shared A, too
  GemmProblem sharedA = makeProblem(g, 9);
  expectResults(runGemm(*device, sharedA), referenceGemm(sharedA), "batch 3, strideA 0");
}

TEST(EmulatedGemm, BetaAccumulatesIntoC) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  GemmCall g = descriptor(true, true, 5, 6, 4, 2);
  g.alpha = 0.5f;
  g.beta = 0.75f;
  GemmProblem p = makeProblem(g, 11);
  std::vector<std::vector<float>> want = referenceGemm(p);
  EXPECT_NE(want, referenceGemm([&] {
              GemmProblem zero = p;
              zero.call.beta = 0;
              return zero;
            }()))
      << "beta makes no difference in this case";
  expectResults(runGemm(*device, p), want, "beta 0.75");

  g.alpha = 0; // C = beta * C: A and B are not read, so their NaNs do not matter
  GemmProblem scaled = makeProblem(g, 12);
  for (std::vector<float> &a : scaled.a)
    std::fill(a.begin(), a.end(), NAN);
  std::vector<std::vector<float>> onlyC = scaled.c;
  for (std::vector<float> &c : onlyC)
    for (float &x : c)
      x *= 0.75f;
  expectResults(runGemm(*device, scaled), onlyC, "alpha 0");

  g = descriptor(false, false, 3, 4, 0, 2); // k 0: C = beta * C
  g.beta = 0.75f;
  GemmProblem empty = makeProblem(g, 13);
  std::vector<std::vector<float>> kZero = empty.c;
  for (std::vector<float> &c : kZero)
    for (float &x : c)
      x *= 0.75f;
  expectResults(runGemm(*device, empty), kZero, "k 0");
}

TEST(EmulatedGemm, EpiloguesAddTheBiasPerRowThenActivate) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  for (GemmCall::Type type : {GemmCall::Type::F32, GemmCall::Type::F16}) {
    for (GemmCall::Epilogue epilogue :
         {GemmCall::Epilogue::Bias, GemmCall::Epilogue::BiasRelu,
          GemmCall::Epilogue::BiasGeluTanh}) {
      GemmProblem p;
      p.call = descriptor(true, false, 5, 3, 4, 2); // batched: the bias is shared
      p.call.type = type;
      p.call.epilogue = epilogue;
      p.call.alpha = 0.5f;
      for (int q = 0; q < 2; ++q) {
        p.a.push_back(dyadic(5 * 4, 10 + q));
        p.b.push_back(dyadic(4 * 3, 20 + q));
        p.c.push_back(std::vector<float>(5 * 3, 0.0f));
      }
      p.bias = dyadic(5, 30);
      std::string name = std::string(gemmTypeName(type)) + " " + gemmEpilogueName(epilogue);
      GemmOutcome got = runGemm(*device, p);
      ASSERT_TRUE(got.status.isOk()) << name << ": " << got.status.message();
      EXPECT_TRUE(got.paddingKept) << name;
      std::vector<std::vector<float>> want = referenceGemm(p);
      bool negative = false;
      for (int q = 0; q < 2; ++q)
        for (size_t e = 0; e < want[q].size(); ++e) {
          // The GELU's tanh: f32 on the device, double here.
          float tolerance = epilogue == GemmCall::Epilogue::BiasGeluTanh
                                ? (type == GemmCall::Type::F16 ? 2e-3f : 1e-6f)
                                : 0.0f;
          EXPECT_NEAR(got.c[q][e], want[q][e], tolerance * (1 + std::fabs(want[q][e])))
              << name << " problem " << q << " element " << e;
          negative |= want[q][e] < 0;
        }
      if (epilogue == GemmCall::Epilogue::Bias)
        EXPECT_TRUE(negative) << "the case must exercise the ReLU";
    }
  }
  // A bias is required with an epilogue, and refused without one.
  GemmProblem p;
  p.call = descriptor(false, false, 2, 2, 2);
  p.call.epilogue = GemmCall::Epilogue::Bias;
  p.a = {dyadic(4, 1)};
  p.b = {dyadic(4, 2)};
  p.c = {std::vector<float>(4, 0.0f)};
  GemmOutcome missing = runGemm(*device, p);
  ASSERT_FALSE(missing.status.isOk());
  EXPECT_NE(missing.status.message().find("the bias is null"), std::string::npos)
      << missing.status.message();
}

TEST(EmulatedGemm, BetaZeroDoesNotReadC) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  for (GemmCall::Type type : {GemmCall::Type::F32, GemmCall::Type::F16}) {
    GemmCall g = descriptor(false, false, 6, 5, 7, 2);
    g.type = type;
    g.alpha = 2.0f;
    g.beta = 0.0f;
    GemmProblem p = makeProblem(g, 14);
    for (std::vector<float> &c : p.c)
      std::fill(c.begin(), c.end(), NAN); // uninitialized memory, as a GPU's may be
    std::vector<std::vector<float>> want = referenceGemm(p);
    for (const std::vector<float> &c : want)
      for (float x : c)
        ASSERT_FALSE(std::isnan(x));
    expectResults(runGemm(*device, p), want, type == GemmCall::Type::F32 ? "f32" : "f16");
  }
}

TEST(EmulatedGemm, HalfAndBfloat16Elements) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  for (GemmCall::Type type : {GemmCall::Type::F16, GemmCall::Type::BF16}) {
    const char *name = type == GemmCall::Type::F16 ? "f16" : "bf16";
    GemmCall g = descriptor(true, false, 9, 6, 64, 2);
    g.type = type;
    g.alpha = 3.0f;
    g.beta = 0.5f;
    GemmProblem p = makeProblem(g, 15);
    std::vector<std::vector<float>> want = referenceGemm(p);
    // Three times sums of 64 products of eighths (multiples of 1/64) need
    // more bits than f16's 11 or bf16's 8: the output rounding is part of
    // what is tested.
    bool rounded = false;
    for (size_t q = 0; q < want.size(); ++q)
      for (size_t i = 0; i < want[q].size(); ++i) {
        GemmProblem exact = p;
        exact.call.type = GemmCall::Type::F32;
        rounded |= referenceGemm(exact)[q][i] != want[q][i];
      }
    EXPECT_TRUE(rounded) << name << ": no result needed rounding";
    expectResults(runGemm(*device, p), want, name);
  }

  // Round to nearest even on the way out: 1 + 2^-11 is halfway between two
  // f16 values (ties to 1), 1 + 3 * 2^-11 ties up to 1 + 2^-9; bf16: the
  // same at 2^-8.
  for (GemmCall::Type type : {GemmCall::Type::F16, GemmCall::Type::BF16}) {
    float ulp = type == GemmCall::Type::F16 ? 0x1p-10f : 0x1p-7f;
    GemmProblem p;
    p.call = descriptor(false, false, 4, 1, 2, 1, 0, 0);
    p.call.type = type;
    // C = a0 + a1 (B = [1, 1]); a1 = ulp/2 or 3 ulp/2 of something exact.
    p.a = {{1, ulp / 2, 1, 3 * ulp / 2, 1, ulp / 4 * 3, -1, -ulp / 2}};
    p.b = {{1, 1}};
    p.c = {std::vector<float>(4, 0.0f)};
    expectResults(runGemm(*device, p), {{1, 1 + 2 * ulp, 1 + ulp, -1}},
                  type == GemmCall::Type::F16 ? "f16 ties" : "bf16 ties");
  }
}

TEST(EmulatedGemm, FastComputeTypesRoundTheInputs) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  // A designed case: op(A) one row with values between tf32 (10 mantissa
  // bits) neighbours, op(B) ones: the f32 sum keeps the low bits, tf32
  // rounds each input first, to nearest even.
  GemmProblem p;
  p.call = descriptor(false, false, 1, 1, 4, 1, 0, 0);
  p.a = {{1 + 0x1p-12f, 1 + 0x1p-11f, 1 + 3 * 0x1p-11f, 1 + 0x1p-11f + 0x1p-20f}};
  p.b = {{1, 1, 1, 1}};
  p.c = {{0}};
  float exactSum = 4 + 0x1p-12f + 0x1p-11f + 3 * 0x1p-11f + 0x1p-11f + 0x1p-20f;
  expectResults(runGemm(*device, p), {{exactSum}}, "f32");
  p.call.compute = GemmCall::Compute::F32Tf32;
  // 1 + 2^-12 -> 1; 1 + 2^-11 (a tie) -> 1; 1 + 3 * 2^-11 (a tie) -> 1 + 2^-9;
  // just above a tie -> 1 + 2^-10.
  float tf32Sum = 1 + 1 + (1 + 0x1p-9f) + (1 + 0x1p-10f);
  ASSERT_NE(tf32Sum, exactSum);
  expectResults(runGemm(*device, p), {{tf32Sum}}, "tf32");
  EXPECT_EQ(referenceGemm(p)[0][0], tf32Sum);

  // f16 and bf16 inputs: the same idea at their precision (bf16: 7 bits),
  // and f16's range: 70000 overflows to inf.
  p.call.compute = GemmCall::Compute::F32Bf16;
  p.a = {{1 + 0x1p-9f, 1 + 0x1p-8f, 1 + 3 * 0x1p-8f, 3 + 0x1p-10f}};
  expectResults(runGemm(*device, p), {{1 + 1 + (1 + 0x1p-6f) + 3}}, "bf16");
  p.call.compute = GemmCall::Compute::F32F16;
  p.a = {{1 + 0x1p-12f, 1 + 0x1p-11f, 1 + 3 * 0x1p-11f, 0.1f}};
  expectResults(runGemm(*device, p), {{1 + 1 + (1 + 0x1p-9f) + toF16(0.1f)}}, "f16");
  p.a = {{70000.0f, 0, 0, 0}};
  expectResults(runGemm(*device, p), {{INFINITY}}, "f16 overflow");

  // A random f32 problem: each mode against the reference (sums of rounded
  // inputs, within f32 accumulation error), and tf32 differs from f32.
  GemmCall g = descriptor(true, false, 33, 17, 65, 2);
  GemmProblem random = makeProblem(g, 16);
  uint32_t state = 99;
  for (auto *operands : {&random.a, &random.b})
    for (std::vector<float> &values : *operands)
      for (float &x : values) {
        state = state * 1664525u + 1013904223u;
        x = static_cast<float>(state >> 8) * 0x1p-24f * 2 - 1; // 24 random bits in [-1, 1)
      }
  std::vector<std::vector<float>> f32;
  for (GemmCall::Compute compute : {GemmCall::Compute::F32, GemmCall::Compute::F32Tf32,
                                    GemmCall::Compute::F32F16, GemmCall::Compute::F32Bf16}) {
    random.call.compute = compute;
    GemmOutcome got = runGemm(*device, random);
    ASSERT_TRUE(got.status.isOk()) << got.status.message();
    std::vector<std::vector<float>> want = referenceGemm(random);
    for (size_t q = 0; q < want.size(); ++q)
      for (size_t i = 0; i < want[q].size(); ++i)
        ASSERT_NEAR(got.c[q][i], want[q][i], 1e-4) << static_cast<int>(compute) << "/" << i;
    if (compute == GemmCall::Compute::F32)
      f32 = got.c;
    else
      EXPECT_NE(got.c, f32) << static_cast<int>(compute) << " gave the f32 results";
  }
}

TEST(EmulatedGemm, ConversionsMatchAnIndependentRounding) {
  // Every f16 and bf16 value through C = alpha * A * 1 (m = 65536, k = 1):
  // the input conversion is exact, and the output is alpha * a rounded to
  // the element type (alpha 1 + 2^-11 makes ties of every odd mantissa;
  // the others land in the subnormals and past the largest finite value).
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  for (GemmCall::Type type : {GemmCall::Type::F16, GemmCall::Type::BF16}) {
    const char *name = type == GemmCall::Type::F16 ? "f16" : "bf16";
    std::vector<uint16_t> patterns(65536);
    for (uint32_t i = 0; i < 65536; ++i)
      patterns[i] = static_cast<uint16_t>(i);
    void *a = upload(*device, patterns);
    void *b = upload(*device, std::vector<uint16_t>{type == GemmCall::Type::F16 ? f16Bits(1.0f)
                                                                                : bf16Bits(1.0f)});
    Result<void *> c = device->allocate(65536 * 2);
    ASSERT_TRUE(c.isOk());
    for (float alpha : {1.0f, 1.0f + 0x1p-11f, 1.0f + 0x1p-8f, 0.7f, 3.3e-5f, 1.7e4f}) {
      GemmCall g = descriptor(false, false, 65536, 1, 1, 1, 0, 0);
      g.type = type;
      g.alpha = alpha;
      g.a = a;
      g.b = b;
      g.c = c.value();
      ASSERT_OK(device->gemm(g));
      std::vector<uint16_t> got = download<uint16_t>(*device, c.value(), 65536);
      for (uint32_t i = 0; i < 65536; ++i) {
        float input = type == GemmCall::Type::F16 ? f16Value(patterns[i]) : bf16Value(patterns[i]);
        float output = type == GemmCall::Type::F16 ? f16Value(got[i]) : bf16Value(got[i]);
        float want = roundTo(type, alpha * input);
        if (std::isnan(input)) {
          ASSERT_TRUE(std::isnan(output)) << name << " " << i;
          continue;
        }
        ASSERT_EQ(output, want) << name << " pattern " << i << " (" << input << ") * " << alpha;
      }
    }
    for (void *memory : {a, b, c.value()})
      ASSERT_OK(device->free(memory));
  }

  // f32 inputs rounded by each fast compute type, over floats of every
  // exponent and the edges: the f32 result of x * 1 is the rounded x.
  std::vector<float> values = {65504.0f,  65519.996f,       65520.0f,   65536.0f,
                               0x1p-25f,  0x1.0001p-25f,    0x1.8p-24f, 0x1.4p-24f,
                               0x1p-14f,  0x1.ffcp-15f,     FLT_MAX,    FLT_MIN,
                               0x1p-149f, 0x1.fffffep-127f, INFINITY};
  uint32_t state = 5;
  while (values.size() < 20000) {
    state = state * 1664525u + 1013904223u;
    uint32_t bits = state;
    if ((bits & 0x7f800000u) == 0x7f800000u)
      continue; // not inf or NaN
    float x;
    std::memcpy(&x, &bits, 4);
    values.push_back(x);
  }
  for (size_t i = 0, n = values.size(); i < n; ++i)
    values.push_back(-values[i]);
  void *a = upload(*device, values);
  void *b = upload(*device, std::vector<float>{1.0f});
  Result<void *> c = device->allocate(values.size() * 4);
  ASSERT_TRUE(c.isOk());
  for (GemmCall::Compute compute :
       {GemmCall::Compute::F32Tf32, GemmCall::Compute::F32F16, GemmCall::Compute::F32Bf16}) {
    GemmCall g = descriptor(false, false, static_cast<int64_t>(values.size()), 1, 1, 1, 0, 0);
    g.compute = compute;
    g.a = a;
    g.b = b;
    g.c = c.value();
    ASSERT_OK(device->gemm(g));
    std::vector<float> got = download<float>(*device, c.value(), values.size());
    for (size_t i = 0; i < values.size(); ++i) {
      float x = values[i];
      float want = compute == GemmCall::Compute::F32Tf32  ? toTf32(x)
                   : compute == GemmCall::Compute::F32F16 ? toF16(x)
                                                          : toBf16(x);
      ASSERT_EQ(got[i], want) << static_cast<int>(compute) << ": " << std::hexfloat << x;
    }
  }
  for (void *memory : {a, b, c.value()})
    ASSERT_OK(device->free(memory));
}

TEST(EmulatedGemm, ConformanceSizeIsQuick) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  GemmCall g = descriptor(false, false, 512, 768, 768, 1, 0, 0);
  GemmProblem p = makeProblem(g, 17);
  auto start = std::chrono::steady_clock::now();
  GemmOutcome got = runGemm(*device, p);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::cout << "512x768x768 f32 on the emulator (with the transfers): " << seconds << " s\n";
  ASSERT_TRUE(got.status.isOk()) << got.status.message();
  // Spot checks against the reference (all of it would take longer than the GEMM).
  for (int64_t i : {int64_t(0), int64_t(1), int64_t(255), int64_t(511)})
    for (int64_t j : {int64_t(0), int64_t(383), int64_t(767)}) {
      double sum = 0;
      for (int64_t l = 0; l < g.k; ++l)
        sum += double(p.a[0][i * g.k + l]) * double(p.b[0][l * g.n + j]);
      ASSERT_EQ(got.c[0][i * g.n + j], static_cast<float>(sum)) << i << "," << j;
    }
  EXPECT_LT(seconds, 30.0);
}

TEST(EmulatedGemm, OutOfBoundsDescriptorsAreRefused) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  GemmCall g = descriptor(false, false, 8, 4, 6, 2, 0, 0); // exact spans
  size_t bytesA = (g.strideA * 2) * 4, bytesB = (g.strideB * 2) * 4, bytesC = (g.strideC * 2) * 4;
  Result<void *> a = device->allocate(bytesA), b = device->allocate(bytesB),
                 c = device->allocate(bytesC);
  ASSERT_TRUE(a.isOk() && b.isOk() && c.isOk());
  std::vector<float> zeros(bytesC, 0.0f);
  ASSERT_OK(device->copyToDevice(a.value(), zeros.data(), bytesA));
  ASSERT_OK(device->copyToDevice(b.value(), zeros.data(), bytesB));
  g.a = a.value();
  g.b = b.value();
  g.c = c.value();
  ASSERT_OK(device->gemm(g)); // exactly fits

  auto refused = [&](GemmCall call, const std::string &operand, const std::string &what) {
    Status status = device->gemm(call);
    ASSERT_FALSE(status.isOk()) << what;
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument) << what;
    const std::string &message = status.message();
    EXPECT_EQ(message.rfind("emulated gemm: " + operand + " (", 0), 0u) << what << ": " << message;
    EXPECT_NE(message.find("is not inside an allocation of this device"), std::string::npos)
        << what << ": " << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  };
  GemmCall wrong = g;
  wrong.lda = g.lda + 1; // the last column of problem 1 ends one element late... and more
  refused(wrong, "A", "lda one too large");
  wrong = g;
  wrong.strideB = g.strideB + 1;
  refused(wrong, "B", "strideB one too large");
  wrong = g;
  wrong.batch = 3;
  refused(wrong, "A", "one problem too many");
  wrong = g;
  wrong.transA = true; // stored 6 x 8 with lda 8: 8 columns, not 6
  wrong.lda = 6;
  wrong.strideA = 48;
  ASSERT_OK(device->gemm(wrong)); // the same span, read transposed
  wrong.lda = 8;
  refused(wrong, "A", "transposed A with lda 8");
  wrong = g;
  wrong.c = static_cast<char *>(g.c) + 4;
  refused(wrong, "C", "C one element late");
  wrong = g;
  wrong.type = GemmCall::Type::F16; // half the bytes: fits
  ASSERT_OK(device->gemm(wrong));
  float host[64] = {};
  wrong = g;
  wrong.m = wrong.n = wrong.k = 2;
  wrong.lda = wrong.ldb = wrong.ldc = 2;
  wrong.batch = 1;
  wrong.b = host; // host memory, not the device's
  refused(wrong, "B", "B in host memory");
  for (void *memory : {a.value(), b.value(), c.value()})
    ASSERT_OK(device->free(memory));
}

TEST(EmulatedGemm, InvalidArgumentsAreRefused) {
  std::unique_ptr<CudaDevice> device = emulator();
  ASSERT_TRUE(device);
  Result<void *> memory = device->allocate(1 << 16);
  ASSERT_TRUE(memory.isOk());
  GemmCall good = descriptor(false, false, 4, 3, 5, 1, 0, 0);
  good.a = good.b = good.c = memory.value();
  std::vector<float> zeros(1 << 14, 0.0f);
  ASSERT_OK(device->copyToDevice(memory.value(), zeros.data(), 1 << 16));
  ASSERT_OK(device->gemm(good));

  struct Case {
    std::string what;
    std::function<void(GemmCall &)> change;
    std::string message;
  };
  std::vector<Case> cases = {
      {"m < 0", [](GemmCall &g) { g.m = -1; }, "negative size (m -1, n 3, k 5)"},
      {"k < 0", [](GemmCall &g) { g.k = -2; }, "negative size (m 4, n 3, k -2)"},
      {"batch 0", [](GemmCall &g) { g.batch = 0; }, "batch 0 (at least 1)"},
      {"lda < m", [](GemmCall &g) { g.lda = 3; }, "lda 3 < 4 (the rows of A as stored: m)"},
      {"lda < k, transposed",
       [](GemmCall &g) {
         g.transA = true;
         g.lda = 4;
       },
       "lda 4 < 5 (the rows of A as stored: k, A is transposed)"},
      {"ldb < k", [](GemmCall &g) { g.ldb = 4; }, "ldb 4 < 5 (the rows of B as stored: k)"},
      {"ldb < n, transposed",
       [](GemmCall &g) {
         g.transB = true;
         g.ldb = 2;
       },
       "ldb 2 < 3 (the rows of B as stored: n, B is transposed)"},
      {"ldc < m", [](GemmCall &g) { g.ldc = 2; }, "ldc 2 < 4 (m)"},
      {"ld 0 with m 0",
       [](GemmCall &g) {
         g.m = 0;
         g.lda = 0;
       },
       "lda 0 < 1 (the rows of A as stored: m)"},
      {"negative stride",
       [](GemmCall &g) {
         g.batch = 2;
         g.strideA = -20;
       },
       "negative stride (strideA -20, strideB 15, strideC 12)"},
      {"strideC 0",
       [](GemmCall &g) {
         g.batch = 2;
         g.strideC = 0;
       },
       "strideC 0 with batch 2: every problem would write the same C"},
      {"null A", [](GemmCall &g) { g.a = nullptr; }, "A is null for a 4x5 matrix"},
      {"null C", [](GemmCall &g) { g.c = nullptr; }, "C is null for a 4x3 matrix"},
      {"misaligned B", [](GemmCall &g) { g.b = static_cast<const char *>(g.b) + 2; },
       "B is not aligned to its 4-byte elements"},
      {"tf32 with f16 elements",
       [](GemmCall &g) {
         g.type = GemmCall::Type::F16;
         g.compute = GemmCall::Compute::F32Tf32;
       },
       "compute 32F_FAST_TF32 with f16 elements (cuBLAS takes the fast compute types for f32 "
       "only)"},
      {"an unknown type", [](GemmCall &g) { g.type = static_cast<GemmCall::Type>(7); },
       "unknown element type 7"},
  };
  for (const Case &test : cases) {
    GemmCall call = good;
    test.change(call);
    Status status = device->gemm(call);
    ASSERT_FALSE(status.isOk()) << test.what;
    EXPECT_EQ(status.code(), StatusCode::InvalidArgument) << test.what;
    EXPECT_EQ(status.message(), "emulated gemm: " + test.message) << test.what;
  }

  // Empty problems are fine, null pointers included where nothing is read.
  GemmCall empty = good;
  empty.n = 0;
  empty.b = nullptr;
  empty.c = nullptr;
  ASSERT_OK(device->gemm(empty));
  empty = good;
  empty.k = 0; // C = beta * C = 0; A and B are not read
  empty.a = empty.b = nullptr;
  ASSERT_OK(device->gemm(empty));
  ASSERT_OK(device->free(memory.value()));
}

TEST(DriverDevice, CublasHasTheEntryPointsTheDeviceUses) {
  // No GPU needed: the library loads (cudart is linked into it statically)
  // and its status names match the values DriverDevice.cpp declares.
  void *cublas = dlopen("libcublas.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!cublas)
    GTEST_SKIP() << "no libcublas.so.13 on the loader's path: " << dlerror();
  for (const char *symbol :
       {"cublasCreate_v2", "cublasDestroy_v2", "cublasSetStream_v2", "cublasSetMathMode",
        "cublasGemmStridedBatchedEx", "cublasGemmStridedBatchedEx_64", "cublasSetWorkspace_v2"})
    EXPECT_NE(dlsym(cublas, symbol), nullptr) << symbol;
  // cuBLASLt, for the GEMMs with an epilogue.
  void *lt = dlopen("libcublasLt.so.13", RTLD_NOW | RTLD_LOCAL);
  ASSERT_NE(lt, nullptr) << "libcublas.so.13 loads but libcublasLt.so.13 does not: " << dlerror();
  for (const char *symbol :
       {"cublasLtCreate", "cublasLtDestroy", "cublasLtMatmulDescCreate", "cublasLtMatmulDescDestroy",
        "cublasLtMatmulDescSetAttribute", "cublasLtMatrixLayoutCreate",
        "cublasLtMatrixLayoutDestroy", "cublasLtMatrixLayoutSetAttribute", "cublasLtMatmul"})
    EXPECT_NE(dlsym(lt, symbol), nullptr) << symbol;
  auto statusName = reinterpret_cast<const char *(*)(int)>(dlsym(cublas, "cublasGetStatusName"));
  ASSERT_NE(statusName, nullptr);
  const std::pair<int, const char *> names[] = {
      {0, "CUBLAS_STATUS_SUCCESS"},           {1, "CUBLAS_STATUS_NOT_INITIALIZED"},
      {3, "CUBLAS_STATUS_ALLOC_FAILED"},      {7, "CUBLAS_STATUS_INVALID_VALUE"},
      {8, "CUBLAS_STATUS_ARCH_MISMATCH"},     {11, "CUBLAS_STATUS_MAPPING_ERROR"},
      {13, "CUBLAS_STATUS_EXECUTION_FAILED"}, {14, "CUBLAS_STATUS_INTERNAL_ERROR"},
      {15, "CUBLAS_STATUS_NOT_SUPPORTED"},    {16, "CUBLAS_STATUS_LICENSE_ERROR"}};
  for (const auto &[code, name] : names)
    EXPECT_STREQ(statusName(code), name) << code;
  // Never dlclosed: unloading cuBLAS in a process is not supported well.
}

TEST(DriverDevice, RunsACublasGemmOnTheGpu) {
  Result<std::unique_ptr<CudaDevice>> opened = openDriverDevice(0);
  if (!opened.isOk())
    GTEST_SKIP() << "no GPU to run on: " << opened.status().message();
  std::unique_ptr<CudaDevice> gpu = opened.takeValue();
  std::unique_ptr<CudaDevice> host = emulator();
  ASSERT_TRUE(host);

  // Exact cases (eighths: any summation order gives the same sums), so
  // cuBLAS, the emulator and the reference agree bit for bit.
  GemmCall g = descriptor(true, false, 37, 29, 41, 3);
  g.strideB = 0;
  g.alpha = 0.5f;
  g.beta = 0.25f;
  for (GemmCall::Type type : {GemmCall::Type::F32, GemmCall::Type::F16, GemmCall::Type::BF16}) {
    g.type = type;
    GemmProblem p = makeProblem(g, 21);
    GemmOutcome onGpu = runGemm(*gpu, p);
    if (!onGpu.status.isOk() && onGpu.status.message().rfind("cuBLAS not found", 0) == 0)
      GTEST_SKIP() << onGpu.status.message();
    std::string what = std::string("cuBLAS ") + (type == GemmCall::Type::F32   ? "f32"
                                                 : type == GemmCall::Type::F16 ? "f16"
                                                                               : "bf16");
    expectResults(onGpu, referenceGemm(p), what);
    expectResults(runGemm(*host, p), onGpu.c, what + " vs the emulator");
  }

  // beta 0 over NaNs, NN and TT.
  for (bool trans : {false, true}) {
    GemmCall plain = descriptor(trans, trans, 64, 48, 96, 1);
    plain.type = GemmCall::Type::F32;
    GemmProblem p = makeProblem(plain, 22);
    std::fill(p.c[0].begin(), p.c[0].end(), NAN);
    expectResults(runGemm(*gpu, p), referenceGemm(p), trans ? "cuBLAS TT" : "cuBLAS NN");
  }

  // A refused call is one line naming the check.
  GemmCall bad = g;
  bad.type = GemmCall::Type::F32;
  bad.lda = 1;
  bad.a = bad.b = bad.c = reinterpret_cast<void *>(uintptr_t(256));
  Status status = gpu->gemm(bad);
  ASSERT_FALSE(status.isOk());
  EXPECT_EQ(status.message(), "cuBLAS gemm: lda 1 < 41 (the rows of A as stored: k, A is "
                              "transposed)");
}

} // namespace
