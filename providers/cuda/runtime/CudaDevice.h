//===- CudaDevice.h - what the CUDA EP's runtime asks of a device -*- C++ -*-===//
//
// The CUDA EP runs its plans on a CudaDevice: memory, transfers and kernel
// launches ordered on one stream, and modules loaded from the blob. Two
// implementations:
//  - openDriverDevice: a GPU through the CUDA driver API, loaded with dlopen
//    (libcuda.so.1) so the runtime links no CUDA library and builds, loads
//    and reports clearly where there is no driver;
//  - openEmulatedDevice: a test double that runs the same emitted CUDA C++
//    on the host (the kernel source is compiled with the host C++ compiler
//    against emulation/HostEmulation.h and each block's threads run as
//    cooperating fibers). It exists to catch wrong indexing and missing
//    barriers without a GPU; it is not the product.
// Plain C++17; errors are values.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_RUNTIME_CUDADEVICE_H
#define ORTC_PROVIDERS_CUDA_RUNTIME_CUDADEVICE_H

#include "runtime/ep/Status.h"

#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ortc::cuda {

/// The code of one partition as the blob holds it. A device takes what it
/// can run: the driver the cubin for its compute capability, else the PTX
/// (JIT-compiled by the driver) when its virtual architecture is not newer
/// than the device; the emulator the source.
struct ModuleImage {
  struct Cubin {
    int arch = 0; // 90 for sm_90
    const char *data = nullptr;
    size_t size = 0;
  };
  std::vector<Cubin> cubins;
  int ptxArch = 0;          // compute_90: 90; 0 when there is no PTX
  std::string ptx;          // NUL-free PTX text
  std::string source;       // the CUDA C++ the cubins were compiled from
  std::string what;         // names the partition in errors
};

class CudaModule {
public:
  virtual ~CudaModule() = default;
  /// The kernel `name` (extern "C"), or an error naming it and the module.
  virtual Result<void *> function(const std::string &name) = 0;
};

/// One kernel launch: cuLaunchKernel's arguments. `args[i]` points to the
/// i-th kernel parameter's value.
struct KernelLaunch {
  void *function = nullptr;
  unsigned grid[3] = {1, 1, 1};
  unsigned block[3] = {1, 1, 1};
  unsigned sharedBytes = 0;
  void **args = nullptr;
};

/// One strided-batched GEMM in cuBLAS's column-major terms: for each of
/// `batch` problems p, C_p = alpha * op(A_p) * op(B_p) + beta * C_p, with
/// op(A) m x k, op(B) k x n and C m x n, X_p at X + p * strideX elements (a
/// stride may be 0: that operand is shared by every problem), leading
/// dimensions in elements. A, B and C have one element type; products
/// accumulate in f32, with the inputs first rounded as `compute` says.
/// An epilogue then adds `bias` (m elements of C's type, one per row of the
/// column-major C, shared by every problem) and applies ReLU or the tanh
/// GELU before C is rounded: cuBLASLt's BIAS, RELU_BIAS and GELU_BIAS.
struct GemmCall {
  enum class Epilogue { None, Bias, BiasRelu, BiasGeluTanh };
  enum class Type { F32, F16, BF16 };
  enum class Compute {
    F32,     // CUBLAS_COMPUTE_32F: full f32
    F32Tf32, // CUBLAS_COMPUTE_32F_FAST_TF32: inputs rounded to tf32
    F32F16,  // CUBLAS_COMPUTE_32F_FAST_16F: inputs rounded to f16
    F32Bf16, // CUBLAS_COMPUTE_32F_FAST_16BF: inputs rounded to bf16
  };
  Type type = Type::F32;
  Compute compute = Compute::F32;
  bool transA = false, transB = false;
  int64_t m = 0, n = 0, k = 0, batch = 1;
  const void *a = nullptr;
  int64_t lda = 0, strideA = 0;
  const void *b = nullptr;
  int64_t ldb = 0, strideB = 0;
  void *c = nullptr;
  int64_t ldc = 0, strideC = 0;
  float alpha = 1, beta = 0;
  Epilogue epilogue = Epilogue::None;
  const void *bias = nullptr;
};

/// "f32", "f16", "bf16".
const char *gemmTypeName(GemmCall::Type type);
/// cuBLAS's name of the compute type without its prefix: "32F_FAST_TF32".
const char *gemmComputeName(GemmCall::Compute compute);
/// cuBLASLt's name of the epilogue without its prefix: "RELU_BIAS".
const char *gemmEpilogueName(GemmCall::Epilogue epilogue);
size_t gemmElementBytes(GemmCall::Type type);
/// What cuBLAS would refuse, as one line prefixed by `who`: element and
/// compute types, sizes, leading dimensions, strides, null or misaligned
/// pointers. Both devices check every call with it.
Status checkGemmCall(const GemmCall &call, const std::string &who);

/// A point in the device's stream (cuEventRecord): done once everything
/// queued before it is.
class CudaEvent {
public:
  virtual ~CudaEvent() = default;
  /// Whether it is done, without waiting.
  virtual Result<bool> query() = 0;
  /// Blocks the host until it is done.
  virtual Status wait() = 0;
};

/// Launches, GEMMs and device copies recorded by stream capture and
/// instantiated (cuGraphInstantiate): each launch replays them, with the
/// addresses and sizes they were captured with, in one call.
class CudaGraph {
public:
  virtual ~CudaGraph() = default;
  /// Queues the whole graph on the device's stream.
  virtual Status launch() = 0;
};

class CudaDevice {
public:
  virtual ~CudaDevice() = default;

  /// "NVIDIA H200 (sm_90, driver 13.0)", "host emulation".
  virtual std::string describe() const = 0;
  /// The compute capability as 10 * major + minor (90), or 0 for the
  /// emulator, which runs any architecture's source.
  virtual int computeCapability() const = 0;

  // Memory (device addresses are opaque to the host).
  virtual Result<void *> allocate(size_t bytes) = 0;
  virtual Status free(void *pointer) = 0;

  // Transfers, ordered on the device's stream; `synchronize` waits for them
  // and every launch before it. Host memory for the async copies may be
  // pageable (the driver stages it) or from allocateHost (pinned).
  virtual Status copyToDevice(void *device, const void *host, size_t bytes) = 0;
  virtual Status copyToHost(void *host, const void *device, size_t bytes) = 0;
  virtual Status copyOnDevice(void *to, const void *from, size_t bytes) = 0;
  virtual Status synchronize() = 0;

  // Page-locked host memory (cuMemHostAlloc), and copies that return once
  // queued. The host side of an async copy must be page-locked memory of
  // this device and stay untouched (to the device) or unread (to the host)
  // until an event recorded after the copy is done.
  virtual Result<void *> allocatePinned(size_t bytes) = 0;
  virtual Status freePinned(void *pointer) = 0;
  virtual Status copyToDeviceAsync(void *device, const void *pinnedHost, size_t bytes) = 0;
  virtual Status copyToHostAsync(void *pinnedHost, const void *device, size_t bytes) = 0;
  virtual Result<std::unique_ptr<CudaEvent>> recordEvent() = 0;

  // Stream capture. Between beginCapture and endCapture launches, gemms and
  // copyOnDevice are recorded instead of run; anything that waits on the
  // stream (a blocking copy, synchronize, an event) is an error there and
  // spoils the capture. endCapture ends it either way and returns the
  // instantiated graph, or why there is none (the caller runs the work on
  // the stream instead).
  virtual Status beginCapture() = 0;
  virtual Result<std::unique_ptr<CudaGraph>> endCapture() = 0;

  // Modules and launches.
  virtual Result<std::unique_ptr<CudaModule>> loadModule(const ModuleImage &image) = 0;
  virtual Status launch(const KernelLaunch &launch) = 0;

  /// A GEMM ordered on the stream with the launches: cuBLAS on a GPU
  /// (loaded with dlopen on first use), a host reference that reads the same
  /// column-major descriptors on the emulator.
  virtual Status gemm(const GemmCall &call) = 0;

  /// Held by whoever issues work on the stream, for as long as the work
  /// must not interleave with another thread's: a partition's run from its
  /// capture to its synchronize, a copy. (A capture takes in everything
  /// queued on the stream meanwhile, from any thread.)
  std::mutex &streamOrder() { return streamOrder_; }

private:
  std::mutex streamOrder_;
};

/// The GPU `ordinal` through the CUDA driver. Fails with one line when the
/// driver library cannot be loaded ("no CUDA driver found (libcuda.so.1: ...)"),
/// when cuInit fails (no GPU, a stub driver), or when there is no such device.
Result<std::unique_ptr<CudaDevice>> openDriverDevice(int ordinal);

/// The host test double (see above). `compiler` is the host C++ compiler
/// to build kernel sources with (empty: $ORTC_HOST_CXX, else c++).
Result<std::unique_ptr<CudaDevice>> openEmulatedDevice(const std::string &compiler = "");

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_RUNTIME_CUDADEVICE_H
