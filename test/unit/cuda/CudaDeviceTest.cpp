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

#include <gtest/gtest.h>

#include <dlfcn.h>
#include <sys/stat.h>

#include <array>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>

namespace {

using namespace ortc;
using namespace ortc::cuda;

#define ASSERT_OK(expr)                                                                            \
  do {                                                                                             \
    Status status_ = (expr);                                                                       \
    ASSERT_TRUE(status_.isOk()) << status_.message();                                              \
  } while (0)

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

ModuleImage sourceImage(const std::string &source, const std::string &what) {
  ModuleImage image;
  image.source = source;
  image.what = what;
  return image;
}

std::unique_ptr<CudaDevice> emulator(const std::string &compiler = "") {
  Result<std::unique_ptr<CudaDevice>> device = openEmulatedDevice(compiler);
  EXPECT_TRUE(device.isOk()) << device.status().message();
  return device.isOk() ? device.takeValue() : nullptr;
}

/// Device memory holding `values` (freed by the caller through the device).
template <typename T> void *upload(CudaDevice &device, const std::vector<T> &values) {
  Result<void *> memory = device.allocate(values.size() * sizeof(T));
  EXPECT_TRUE(memory.isOk()) << memory.status().message();
  if (!memory.isOk())
    return nullptr;
  Status copied = device.copyToDevice(memory.value(), values.data(), values.size() * sizeof(T));
  EXPECT_TRUE(copied.isOk()) << copied.message();
  return memory.value();
}

template <typename T> std::vector<T> download(CudaDevice &device, const void *memory, size_t n) {
  std::vector<T> values(n);
  Status copied = device.copyToHost(values.data(), memory, n * sizeof(T));
  EXPECT_TRUE(copied.isOk()) << copied.message();
  return values;
}

Status launch(CudaDevice &device, void *function, std::array<unsigned, 3> grid,
              std::array<unsigned, 3> block, std::vector<void *> args, unsigned sharedBytes = 0) {
  KernelLaunch launch;
  launch.function = function;
  for (int i = 0; i < 3; ++i) {
    launch.grid[i] = grid[i];
    launch.block[i] = block[i];
  }
  launch.sharedBytes = sharedBytes;
  launch.args = args.data();
  return device.launch(launch);
}

/// The module of `source` on `device` and its kernels `names`.
struct Loaded {
  std::unique_ptr<CudaModule> module;
  std::vector<void *> functions;
};
std::optional<Loaded> load(CudaDevice &device, const std::string &source,
                           std::vector<std::string> names) {
  Result<std::unique_ptr<CudaModule>> module = device.loadModule(sourceImage(source, "test"));
  EXPECT_TRUE(module.isOk()) << module.status().message();
  if (!module.isOk())
    return std::nullopt;
  Loaded loaded{module.takeValue(), {}};
  for (const std::string &name : names) {
    Result<void *> function = loaded.module->function(name);
    EXPECT_TRUE(function.isOk()) << function.status().message();
    if (!function.isOk())
      return std::nullopt;
    loaded.functions.push_back(function.value());
  }
  return loaded;
}

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

} // namespace
