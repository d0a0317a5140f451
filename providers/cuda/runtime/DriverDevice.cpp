//===- DriverDevice.cpp - a GPU through the CUDA driver API, via dlopen ---===//
//
// openDriverDevice loads libcuda.so.1 at run time, so the runtime links no
// CUDA library and a machine without a driver gets one clear line. The few
// declarations the EP needs are written here rather than taken from cuda.h;
// the symbols are the versioned ones cuda.h maps the API names to
// (cuMemAlloc -> cuMemAlloc_v2, ...). $ORTC_CUDA_DRIVER names another
// library to load instead (tests use the toolkit's stub).
//
// A device uses its GPU's primary context, made current on the calling
// thread by every call (the runtime calls from many threads), and one
// non-blocking stream that orders copies and launches. Both blocking copies
// to and from the host synchronize the stream before returning: the caller
// may reuse or read its host buffer at once. Device-to-device copies, the
// async copies (from page-locked memory) and launches return once queued;
// events (cuEventRecord, without timing) mark points in the stream.
//
// Stream capture (cuStreamBeginCapture_v2 in thread-local mode) records the
// launches, cuBLAS calls and device copies issued from this thread until
// cuStreamEndCapture; the graph is instantiated at once and launched with
// cuGraphLaunch. cuBLAS gets a workspace of its own (cublasSetWorkspace),
// so that it allocates nothing while captured.
//
// gemm loads cuBLAS with dlopen on first use (libcublas.so.13, else
// libcublas.so; declared here too, never linked), creates the device's
// handle with its context current, binds it to the stream (with reductions
// in f32 even for f16 and bf16 outputs), and calls
// cublasGemmStridedBatchedEx (its _64 variant for sizes past int32). It
// returns once queued, like a launch. A GEMM with an epilogue (a bias,
// then ReLU or the tanh GELU) goes to cuBLASLt instead (libcublasLt.so.13,
// also loaded on first use): cublasLtMatmul with the same layouts, the
// epilogue and bias pointer on its descriptor, the heuristic's algorithm
// and the handle's workspace.
//
//===----------------------------------------------------------------------===//

#include "providers/cuda/runtime/CudaDevice.h"

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>
#include <set>

namespace ortc::cuda {
namespace {

// The driver API's types, as cuda.h declares them (the handles are opaque).
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
using CUcontext = struct CUctx_st *;
using CUmodule = struct CUmod_st *;
using CUfunction = struct CUfunc_st *;
using CUstream = struct CUstream_st *;
using CUjit_option = int;
using CUevent = struct CUevent_st *;
using CUgraph = struct CUgraph_st *;
using CUgraphExec = struct CUgraphExec_st *;

constexpr CUresult CUDA_SUCCESS = 0;
constexpr CUresult CUDA_ERROR_NOT_READY = 600;
constexpr unsigned CU_EVENT_DISABLE_TIMING = 2;
constexpr int CU_STREAM_CAPTURE_MODE_THREAD_LOCAL = 1;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR = 75;
constexpr int CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR = 76;
constexpr unsigned CU_STREAM_NON_BLOCKING = 1;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER = 5;
constexpr CUjit_option CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES = 6;
constexpr int CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES = 8;
constexpr unsigned kDefaultSharedBytes = 48 * 1024; // more needs an opt-in
constexpr size_t kCublasWorkspaceBytes = size_t(32) << 20;

/// The entry points, resolved once per library.
struct DriverApi {
  CUresult (*cuInit)(unsigned);
  CUresult (*cuDriverGetVersion)(int *);
  CUresult (*cuGetErrorName)(CUresult, const char **);
  CUresult (*cuGetErrorString)(CUresult, const char **);
  CUresult (*cuDeviceGetCount)(int *);
  CUresult (*cuDeviceGet)(CUdevice *, int);
  CUresult (*cuDeviceGetName)(char *, int, CUdevice);
  CUresult (*cuDeviceGetAttribute)(int *, int, CUdevice);
  CUresult (*cuDevicePrimaryCtxRetain)(CUcontext *, CUdevice);
  CUresult (*cuDevicePrimaryCtxRelease)(CUdevice);
  CUresult (*cuCtxSetCurrent)(CUcontext);
  CUresult (*cuStreamCreate)(CUstream *, unsigned);
  CUresult (*cuStreamDestroy)(CUstream);
  CUresult (*cuStreamSynchronize)(CUstream);
  CUresult (*cuMemAlloc)(CUdeviceptr *, size_t);
  CUresult (*cuMemFree)(CUdeviceptr);
  CUresult (*cuMemcpyHtoDAsync)(CUdeviceptr, const void *, size_t, CUstream);
  CUresult (*cuMemcpyDtoHAsync)(void *, CUdeviceptr, size_t, CUstream);
  CUresult (*cuMemcpyDtoDAsync)(CUdeviceptr, CUdeviceptr, size_t, CUstream);
  CUresult (*cuModuleLoadDataEx)(CUmodule *, const void *, unsigned, CUjit_option *, void **);
  CUresult (*cuModuleUnload)(CUmodule);
  CUresult (*cuModuleGetFunction)(CUfunction *, CUmodule, const char *);
  CUresult (*cuFuncSetAttribute)(CUfunction, int, int);
  CUresult (*cuLaunchKernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                             unsigned, CUstream, void **, void **);
  CUresult (*cuMemHostAlloc)(void **, size_t, unsigned);
  CUresult (*cuMemFreeHost)(void *);
  CUresult (*cuEventCreate)(CUevent *, unsigned);
  CUresult (*cuEventRecord)(CUevent, CUstream);
  CUresult (*cuEventQuery)(CUevent);
  CUresult (*cuEventSynchronize)(CUevent);
  CUresult (*cuEventDestroy)(CUevent);
  CUresult (*cuStreamBeginCapture)(CUstream, int);
  CUresult (*cuStreamEndCapture)(CUstream, CUgraph *);
  CUresult (*cuGraphInstantiateWithFlags)(CUgraphExec *, CUgraph, unsigned long long);
  CUresult (*cuGraphLaunch)(CUgraphExec, CUstream);
  CUresult (*cuGraphExecDestroy)(CUgraphExec);
  CUresult (*cuGraphDestroy)(CUgraph);

  /// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)"; a stub driver answers
  /// nothing, so the common codes are named here too.
  std::string describe(CUresult code) const {
    const char *name = nullptr, *text = nullptr;
    if (cuGetErrorName(code, &name) != CUDA_SUCCESS || !name)
      name = fallbackName(code);
    if (cuGetErrorString(code, &text) != CUDA_SUCCESS)
      text = nullptr;
    std::string out = name ? name : "CUDA error " + std::to_string(code);
    if (text && *text)
      out += std::string(" (") + text + ")";
    return out;
  }

  static const char *fallbackName(CUresult code) {
    switch (code) {
    case 1:
      return "CUDA_ERROR_INVALID_VALUE";
    case 2:
      return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3:
      return "CUDA_ERROR_NOT_INITIALIZED";
    case 34:
      return "CUDA_ERROR_STUB_LIBRARY";
    case 35:
      return "CUDA_ERROR_INSUFFICIENT_DRIVER";
    case 46:
      return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100:
      return "CUDA_ERROR_NO_DEVICE";
    case 101:
      return "CUDA_ERROR_INVALID_DEVICE";
    case 999:
      return "CUDA_ERROR_UNKNOWN";
    default:
      return nullptr;
    }
  }
};

/// Loads (once per library name; never unloaded: the driver keeps threads)
/// and resolves the entry points.
Result<const DriverApi *> loadDriver() {
  static std::mutex mutex;
  // Never destroyed, like the libraries: the tables stay reachable (and
  // usable by threads still running) through exit.
  static auto &loaded = *new std::map<std::string, const DriverApi *>();
  const char *override = std::getenv("ORTC_CUDA_DRIVER");
  std::string library = override && *override ? override : "libcuda.so.1";
  std::lock_guard<std::mutex> lock(mutex);
  if (auto found = loaded.find(library); found != loaded.end())
    return found->second;

  void *handle = dlopen(library.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    const char *reason = dlerror();
    return Status::error(StatusCode::NotFound, std::string("no CUDA driver found (") +
                                                   (reason ? reason : library.c_str()) + ")");
  }
  auto api = std::make_unique<DriverApi>();
  std::string missing;
  auto resolve = [&](auto &slot, const char *symbol) {
    void *address = dlsym(handle, symbol);
    if (!address && missing.empty())
      missing = symbol;
    slot = reinterpret_cast<std::remove_reference_t<decltype(slot)>>(address);
  };
  resolve(api->cuInit, "cuInit");
  resolve(api->cuDriverGetVersion, "cuDriverGetVersion");
  resolve(api->cuGetErrorName, "cuGetErrorName");
  resolve(api->cuGetErrorString, "cuGetErrorString");
  resolve(api->cuDeviceGetCount, "cuDeviceGetCount");
  resolve(api->cuDeviceGet, "cuDeviceGet");
  resolve(api->cuDeviceGetName, "cuDeviceGetName");
  resolve(api->cuDeviceGetAttribute, "cuDeviceGetAttribute");
  resolve(api->cuDevicePrimaryCtxRetain, "cuDevicePrimaryCtxRetain");
  resolve(api->cuDevicePrimaryCtxRelease, "cuDevicePrimaryCtxRelease_v2");
  resolve(api->cuCtxSetCurrent, "cuCtxSetCurrent");
  resolve(api->cuStreamCreate, "cuStreamCreate");
  resolve(api->cuStreamDestroy, "cuStreamDestroy_v2");
  resolve(api->cuStreamSynchronize, "cuStreamSynchronize");
  resolve(api->cuMemAlloc, "cuMemAlloc_v2");
  resolve(api->cuMemFree, "cuMemFree_v2");
  resolve(api->cuMemcpyHtoDAsync, "cuMemcpyHtoDAsync_v2");
  resolve(api->cuMemcpyDtoHAsync, "cuMemcpyDtoHAsync_v2");
  resolve(api->cuMemcpyDtoDAsync, "cuMemcpyDtoDAsync_v2");
  resolve(api->cuModuleLoadDataEx, "cuModuleLoadDataEx");
  resolve(api->cuModuleUnload, "cuModuleUnload");
  resolve(api->cuModuleGetFunction, "cuModuleGetFunction");
  resolve(api->cuFuncSetAttribute, "cuFuncSetAttribute");
  resolve(api->cuLaunchKernel, "cuLaunchKernel");
  resolve(api->cuMemHostAlloc, "cuMemHostAlloc");
  resolve(api->cuMemFreeHost, "cuMemFreeHost");
  resolve(api->cuEventCreate, "cuEventCreate");
  resolve(api->cuEventRecord, "cuEventRecord");
  resolve(api->cuEventQuery, "cuEventQuery");
  resolve(api->cuEventSynchronize, "cuEventSynchronize");
  resolve(api->cuEventDestroy, "cuEventDestroy_v2");
  resolve(api->cuStreamBeginCapture, "cuStreamBeginCapture_v2");
  resolve(api->cuStreamEndCapture, "cuStreamEndCapture");
  resolve(api->cuGraphInstantiateWithFlags, "cuGraphInstantiateWithFlags");
  resolve(api->cuGraphLaunch, "cuGraphLaunch");
  resolve(api->cuGraphExecDestroy, "cuGraphExecDestroy");
  resolve(api->cuGraphDestroy, "cuGraphDestroy");
  if (!missing.empty()) {
    dlclose(handle);
    return Status::error(StatusCode::NotFound,
                         "the CUDA driver " + library + " lacks " + missing +
                             " (not a CUDA driver, or one older than CUDA 11.4)");
  }
  const DriverApi *result = api.release();
  loaded.emplace(library, result);
  return result;
}

//===----------------------------------------------------------------------===//
// cuBLAS, loaded with dlopen on a device's first gemm
//===----------------------------------------------------------------------===//

// cublas_api.h's and library_types.h's types and values (CUDA 13); the
// enums are int-sized in the C ABI.
using cublasStatus_t = int;
using cublasHandle_t = struct cublasContext *;
constexpr cublasStatus_t CUBLAS_STATUS_SUCCESS = 0;
constexpr int CUBLAS_OP_N = 0;
constexpr int CUBLAS_OP_T = 1;
constexpr int CUDA_R_32F = 0; // cudaDataType
constexpr int CUDA_R_16F = 2;
constexpr int CUDA_R_16BF = 14;
constexpr int CUBLAS_COMPUTE_32F = 68; // cublasComputeType_t
constexpr int CUBLAS_COMPUTE_32F_FAST_16F = 74;
constexpr int CUBLAS_COMPUTE_32F_FAST_16BF = 75;
constexpr int CUBLAS_COMPUTE_32F_FAST_TF32 = 77;
constexpr int CUBLAS_GEMM_DEFAULT = -1; // cublasGemmAlgo_t
constexpr int CUBLAS_DEFAULT_MATH = 0;  // cublasMath_t
constexpr int CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION = 16;

const char *cublasStatusName(cublasStatus_t status) {
  switch (status) {
  case 0:
    return "CUBLAS_STATUS_SUCCESS";
  case 1:
    return "CUBLAS_STATUS_NOT_INITIALIZED";
  case 3:
    return "CUBLAS_STATUS_ALLOC_FAILED";
  case 7:
    return "CUBLAS_STATUS_INVALID_VALUE";
  case 8:
    return "CUBLAS_STATUS_ARCH_MISMATCH";
  case 11:
    return "CUBLAS_STATUS_MAPPING_ERROR";
  case 13:
    return "CUBLAS_STATUS_EXECUTION_FAILED";
  case 14:
    return "CUBLAS_STATUS_INTERNAL_ERROR";
  case 15:
    return "CUBLAS_STATUS_NOT_SUPPORTED";
  case 16:
    return "CUBLAS_STATUS_LICENSE_ERROR";
  default:
    return nullptr;
  }
}

/// "cuBLAS: cublasCreate_v2: CUBLAS_STATUS_NOT_INITIALIZED", or ok.
Status checkCublas(cublasStatus_t status, const std::string &call) {
  if (status == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  const char *name = cublasStatusName(status);
  return Status::error(StatusCode::Internal,
                       "cuBLAS: " + call + ": " +
                           (name ? std::string(name) : "cublasStatus_t " + std::to_string(status)));
}

struct CublasApi {
  std::string library;
  cublasStatus_t (*cublasCreate_v2)(cublasHandle_t *);
  cublasStatus_t (*cublasDestroy_v2)(cublasHandle_t);
  cublasStatus_t (*cublasSetStream_v2)(cublasHandle_t, CUstream);
  cublasStatus_t (*cublasSetMathMode)(cublasHandle_t, int);
  cublasStatus_t (*cublasSetWorkspace_v2)(cublasHandle_t, void *, size_t);
  cublasStatus_t (*cublasGemmStridedBatchedEx)(cublasHandle_t, int transa, int transb, int m, int n,
                                               int k, const void *alpha, const void *A, int Atype,
                                               int lda, long long strideA, const void *B, int Btype,
                                               int ldb, long long strideB, const void *beta,
                                               void *C, int Ctype, int ldc, long long strideC,
                                               int batchCount, int computeType, int algo);
  /// Null where the library lacks it.
  cublasStatus_t (*cublasGemmStridedBatchedEx_64)(
      cublasHandle_t, int transa, int transb, int64_t m, int64_t n, int64_t k, const void *alpha,
      const void *A, int Atype, int64_t lda, long long strideA, const void *B, int Btype,
      int64_t ldb, long long strideB, const void *beta, void *C, int Ctype, int64_t ldc,
      long long strideC, int64_t batchCount, int computeType, int algo);
};

/// dlopens the first of `names` that loads, and resolves symbols from it;
/// `missing` names the first required symbol it lacks.
struct LoadedLibrary {
  void *handle = nullptr;
  std::string name, firstError, missing;

  LoadedLibrary(std::initializer_list<const char *> names) {
    for (const char *candidate : names) {
      handle = dlopen(candidate, RTLD_NOW | RTLD_LOCAL);
      if (handle) {
        name = candidate;
        return;
      }
      const char *reason = dlerror();
      if (firstError.empty())
        firstError = reason ? reason : std::string(candidate) + ": cannot be loaded";
    }
  }
  template <typename Slot> void resolve(Slot &slot, const char *symbol, bool required = true) {
    void *address = dlsym(handle, symbol);
    if (!address && required && missing.empty())
      missing = symbol;
    slot = reinterpret_cast<Slot>(address);
  }
};

/// Loads cuBLAS once per process (never unloaded); a failure is tried
/// again on the next call.
Result<const CublasApi *> loadCublas() {
  static std::mutex mutex;
  static const CublasApi *loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded)
    return loaded;
  LoadedLibrary lib({"libcublas.so.13", "libcublas.so"});
  if (!lib.handle)
    return Status::error(StatusCode::NotFound, "cuBLAS not found (" + lib.firstError + ")");
  auto api = std::make_unique<CublasApi>();
  api->library = lib.name;
  lib.resolve(api->cublasCreate_v2, "cublasCreate_v2");
  lib.resolve(api->cublasDestroy_v2, "cublasDestroy_v2");
  lib.resolve(api->cublasSetStream_v2, "cublasSetStream_v2");
  lib.resolve(api->cublasSetMathMode, "cublasSetMathMode");
  lib.resolve(api->cublasSetWorkspace_v2, "cublasSetWorkspace_v2");
  lib.resolve(api->cublasGemmStridedBatchedEx, "cublasGemmStridedBatchedEx");
  lib.resolve(api->cublasGemmStridedBatchedEx_64, "cublasGemmStridedBatchedEx_64", false);
  if (!lib.missing.empty()) {
    dlclose(lib.handle);
    return Status::error(StatusCode::NotFound, "cuBLAS " + lib.name + " lacks " + lib.missing +
                                                   " (not cuBLAS, or one older than CUDA 11)");
  }
  loaded = api.release();
  return loaded;
}

// cublasLt.h's types and values (CUDA 13).
using cublasLtHandle_t = struct cublasLtContext *;
using cublasLtMatmulDesc_t = struct cublasLtMatmulDescOpaque *;
using cublasLtMatrixLayout_t = struct cublasLtMatrixLayoutOpaque *;
constexpr int CUBLASLT_MATMUL_DESC_TRANSA = 3;
constexpr int CUBLASLT_MATMUL_DESC_TRANSB = 4;
constexpr int CUBLASLT_MATMUL_DESC_EPILOGUE = 7;
constexpr int CUBLASLT_MATMUL_DESC_BIAS_POINTER = 8;
constexpr int CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT = 5;
constexpr int CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET = 6;
constexpr uint32_t CUBLASLT_EPILOGUE_BIAS = 4;
constexpr uint32_t CUBLASLT_EPILOGUE_RELU_BIAS = 6;
constexpr uint32_t CUBLASLT_EPILOGUE_GELU_BIAS = 36;

struct CublasLtApi {
  std::string library;
  cublasStatus_t (*cublasLtCreate)(cublasLtHandle_t *);
  cublasStatus_t (*cublasLtDestroy)(cublasLtHandle_t);
  cublasStatus_t (*cublasLtMatmulDescCreate)(cublasLtMatmulDesc_t *, int computeType,
                                             int scaleType);
  cublasStatus_t (*cublasLtMatmulDescDestroy)(cublasLtMatmulDesc_t);
  cublasStatus_t (*cublasLtMatmulDescSetAttribute)(cublasLtMatmulDesc_t, int, const void *,
                                                   size_t);
  cublasStatus_t (*cublasLtMatrixLayoutCreate)(cublasLtMatrixLayout_t *, int type, uint64_t rows,
                                               uint64_t cols, int64_t ld);
  cublasStatus_t (*cublasLtMatrixLayoutDestroy)(cublasLtMatrixLayout_t);
  cublasStatus_t (*cublasLtMatrixLayoutSetAttribute)(cublasLtMatrixLayout_t, int, const void *,
                                                     size_t);
  cublasStatus_t (*cublasLtMatmul)(cublasLtHandle_t, cublasLtMatmulDesc_t, const void *alpha,
                                   const void *A, cublasLtMatrixLayout_t, const void *B,
                                   cublasLtMatrixLayout_t, const void *beta, const void *C,
                                   cublasLtMatrixLayout_t, void *D, cublasLtMatrixLayout_t,
                                   const void *algo, void *workspace, size_t workspaceBytes,
                                   CUstream);
};

/// Loads cuBLASLt once per process (never unloaded); a failure is tried
/// again on the next call.
Result<const CublasLtApi *> loadCublasLt() {
  static std::mutex mutex;
  static const CublasLtApi *loaded = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  if (loaded)
    return loaded;
  LoadedLibrary lib({"libcublasLt.so.13", "libcublasLt.so"});
  if (!lib.handle)
    return Status::error(StatusCode::NotFound, "cuBLASLt not found (" + lib.firstError + ")");
  auto api = std::make_unique<CublasLtApi>();
  api->library = lib.name;
  lib.resolve(api->cublasLtCreate, "cublasLtCreate");
  lib.resolve(api->cublasLtDestroy, "cublasLtDestroy");
  lib.resolve(api->cublasLtMatmulDescCreate, "cublasLtMatmulDescCreate");
  lib.resolve(api->cublasLtMatmulDescDestroy, "cublasLtMatmulDescDestroy");
  lib.resolve(api->cublasLtMatmulDescSetAttribute, "cublasLtMatmulDescSetAttribute");
  lib.resolve(api->cublasLtMatrixLayoutCreate, "cublasLtMatrixLayoutCreate");
  lib.resolve(api->cublasLtMatrixLayoutDestroy, "cublasLtMatrixLayoutDestroy");
  lib.resolve(api->cublasLtMatrixLayoutSetAttribute, "cublasLtMatrixLayoutSetAttribute");
  lib.resolve(api->cublasLtMatmul, "cublasLtMatmul");
  if (!lib.missing.empty()) {
    dlclose(lib.handle);
    return Status::error(StatusCode::NotFound, "cuBLASLt " + lib.name + " lacks " + lib.missing +
                                                   " (not cuBLASLt 11 or newer)");
  }
  loaded = api.release();
  return loaded;
}

/// The primary context of one GPU, shared by the device and its modules so
/// that whichever goes last releases it.
struct GpuContext {
  const DriverApi *api = nullptr;
  CUdevice device = 0;
  CUcontext context = nullptr;

  ~GpuContext() {
    if (context)
      api->cuDevicePrimaryCtxRelease(device);
  }

  /// "cuMemAlloc_v2: CUDA_ERROR_OUT_OF_MEMORY (out of memory)", or ok.
  Status check(CUresult code, const std::string &call) const {
    if (code == CUDA_SUCCESS)
      return Status::ok();
    return Status::error(StatusCode::Internal, "CUDA driver: " + call + ": " + api->describe(code));
  }
  /// Every call may come from another thread: make the context current.
  Status bind() const { return check(api->cuCtxSetCurrent(context), "cuCtxSetCurrent"); }
};

std::string archName(const char *prefix, int arch) { return prefix + std::to_string(arch); }

class DriverModule : public CudaModule {
public:
  DriverModule(std::shared_ptr<GpuContext> gpu, CUmodule module, std::string what)
      : gpu_(std::move(gpu)), module_(module), what_(std::move(what)) {}
  ~DriverModule() override {
    if (gpu_->bind().isOk())
      gpu_->api->cuModuleUnload(module_);
  }

  Result<void *> function(const std::string &name) override {
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    CUfunction function = nullptr;
    CUresult code = gpu_->api->cuModuleGetFunction(&function, module_, name.c_str());
    if (code != CUDA_SUCCESS)
      return Status::error(StatusCode::NotFound, "CUDA driver: cuModuleGetFunction(" + name +
                                                     ") in " + what_ + ": " +
                                                     gpu_->api->describe(code));
    return static_cast<void *>(function);
  }

private:
  std::shared_ptr<GpuContext> gpu_;
  CUmodule module_;
  std::string what_;
};

class DriverDevice : public CudaDevice {
public:
  explicit DriverDevice(std::shared_ptr<GpuContext> gpu) : gpu_(std::move(gpu)) {}
  ~DriverDevice() override {
    if (!gpu_->bind().isOk())
      return;
    if (stream_)
      gpu_->api->cuStreamSynchronize(stream_);
    if (cublasHandle_)
      cublas_->cublasDestroy_v2(cublasHandle_);
    if (cublasLtHandle_)
      cublasLt_->cublasLtDestroy(cublasLtHandle_);
    if (cublasWorkspace_)
      gpu_->api->cuMemFree(cublasWorkspace_);
    if (stream_)
      gpu_->api->cuStreamDestroy(stream_);
    for (CUdeviceptr pointer : allocations_)
      gpu_->api->cuMemFree(pointer);
  }

  /// Everything after the primary context: the name, the architecture and
  /// the stream.
  Status initialize() {
    const DriverApi &api = *gpu_->api;
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    char name[256] = {0};
    if (Status s = gpu_->check(api.cuDeviceGetName(name, sizeof name - 1, gpu_->device),
                               "cuDeviceGetName");
        !s.isOk())
      return s;
    int major = 0, minor = 0, version = 0;
    if (Status s =
            gpu_->check(api.cuDeviceGetAttribute(
                            &major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, gpu_->device),
                        "cuDeviceGetAttribute");
        !s.isOk())
      return s;
    if (Status s =
            gpu_->check(api.cuDeviceGetAttribute(
                            &minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, gpu_->device),
                        "cuDeviceGetAttribute");
        !s.isOk())
      return s;
    if (Status s = gpu_->check(api.cuDriverGetVersion(&version), "cuDriverGetVersion"); !s.isOk())
      return s;
    if (Status s =
            gpu_->check(api.cuStreamCreate(&stream_, CU_STREAM_NON_BLOCKING), "cuStreamCreate");
        !s.isOk())
      return s;
    capability_ = major * 10 + minor;
    description_ = std::string(name) + " (sm_" + std::to_string(capability_) + ", driver " +
                   std::to_string(version / 1000) + "." + std::to_string(version % 1000 / 10) + ")";
    return Status::ok();
  }

  std::string describe() const override { return description_; }
  int computeCapability() const override { return capability_; }

  Result<void *> allocate(size_t bytes) override {
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    CUdeviceptr pointer = 0;
    if (Status s = gpu_->check(gpu_->api->cuMemAlloc(&pointer, bytes),
                               "cuMemAlloc_v2(" + std::to_string(bytes) + " bytes)");
        !s.isOk())
      return s;
    std::lock_guard<std::mutex> lock(mutex_);
    allocations_.insert(pointer);
    return reinterpret_cast<void *>(pointer);
  }

  Status free(void *pointer) override {
    if (!pointer)
      return Status::ok();
    CUdeviceptr address = reinterpret_cast<CUdeviceptr>(pointer);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      if (!allocations_.erase(address))
        return Status::error(StatusCode::InvalidArgument,
                             "CUDA device: free of a pointer this device did not allocate");
    }
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    return gpu_->check(gpu_->api->cuMemFree(address), "cuMemFree_v2");
  }

  Status copyToDevice(void *device, const void *host, size_t bytes) override {
    if (bytes == 0)
      return Status::ok();
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    if (Status s = gpu_->check(gpu_->api->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(device),
                                                            host, bytes, stream_),
                               "cuMemcpyHtoDAsync_v2");
        !s.isOk())
      return s;
    // The caller owns `host` again when this returns.
    return gpu_->check(gpu_->api->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  Status copyToHost(void *host, const void *device, size_t bytes) override {
    if (bytes == 0)
      return Status::ok();
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    if (Status s = gpu_->check(gpu_->api->cuMemcpyDtoHAsync(
                                   host, reinterpret_cast<CUdeviceptr>(device), bytes, stream_),
                               "cuMemcpyDtoHAsync_v2");
        !s.isOk())
      return s;
    return gpu_->check(gpu_->api->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  Status copyOnDevice(void *to, const void *from, size_t bytes) override {
    if (bytes == 0)
      return Status::ok();
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    return gpu_->check(gpu_->api->cuMemcpyDtoDAsync(reinterpret_cast<CUdeviceptr>(to),
                                                    reinterpret_cast<CUdeviceptr>(from), bytes,
                                                    stream_),
                       "cuMemcpyDtoDAsync_v2");
  }

  Status synchronize() override {
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    return gpu_->check(gpu_->api->cuStreamSynchronize(stream_), "cuStreamSynchronize");
  }

  Result<void *> allocatePinned(size_t bytes) override {
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    void *pointer = nullptr;
    if (Status s = gpu_->check(gpu_->api->cuMemHostAlloc(&pointer, std::max<size_t>(bytes, 1), 0),
                               "cuMemHostAlloc(" + std::to_string(bytes) + " bytes)");
        !s.isOk())
      return s;
    return pointer;
  }
  Status freePinned(void *pointer) override {
    if (!pointer)
      return Status::ok();
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    return gpu_->check(gpu_->api->cuMemFreeHost(pointer), "cuMemFreeHost");
  }
  Status copyToDeviceAsync(void *device, const void *host, size_t bytes) override {
    if (bytes == 0)
      return Status::ok();
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    return gpu_->check(gpu_->api->cuMemcpyHtoDAsync(reinterpret_cast<CUdeviceptr>(device), host,
                                                    bytes, stream_),
                       "cuMemcpyHtoDAsync_v2");
  }
  Status copyToHostAsync(void *host, const void *device, size_t bytes) override {
    if (bytes == 0)
      return Status::ok();
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    return gpu_->check(gpu_->api->cuMemcpyDtoHAsync(host, reinterpret_cast<CUdeviceptr>(device),
                                                    bytes, stream_),
                       "cuMemcpyDtoHAsync_v2");
  }
  Result<std::unique_ptr<CudaEvent>> recordEvent() override;
  Status beginCapture() override {
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    // cuBLAS's and cuBLASLt's handles and the workspace exist before the
    // capture starts: nothing is allocated while captured.
    {
      std::lock_guard<std::mutex> lock(gemmMutex_);
      if (Status s = cublasReady(); !s.isOk())
        return s;
      if (Status s = cublasLtReady(); !s.isOk())
        return s;
    }
    return gpu_->check(
        gpu_->api->cuStreamBeginCapture(stream_, CU_STREAM_CAPTURE_MODE_THREAD_LOCAL),
        "cuStreamBeginCapture_v2");
  }
  Result<std::unique_ptr<CudaGraph>> endCapture() override;

  Result<std::unique_ptr<CudaModule>> loadModule(const ModuleImage &image) override;

  Status launch(const KernelLaunch &launch) override {
    if (!launch.function)
      return Status::error(StatusCode::InvalidArgument, "CUDA launch: no function");
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    CUfunction function = static_cast<CUfunction>(launch.function);
    if (launch.sharedBytes > kDefaultSharedBytes)
      if (Status s = gpu_->check(gpu_->api->cuFuncSetAttribute(
                                     function, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                     static_cast<int>(launch.sharedBytes)),
                                 "cuFuncSetAttribute(" + std::to_string(launch.sharedBytes) +
                                     " bytes of dynamic shared memory)");
          !s.isOk())
        return s;
    return gpu_->check(gpu_->api->cuLaunchKernel(function, launch.grid[0], launch.grid[1],
                                                 launch.grid[2], launch.block[0], launch.block[1],
                                                 launch.block[2], launch.sharedBytes, stream_,
                                                 launch.args, nullptr),
                       "cuLaunchKernel");
  }

  Status gemm(const GemmCall &call) override;

private:
  /// A GEMM with an epilogue, through cuBLASLt; under gemmMutex_.
  Status gemmLt(const GemmCall &call, int type, int compute);
  /// The cuBLASLt handle, created on first use; under gemmMutex_.
  Status cublasLtReady();

  /// The device's cuBLAS handle, created on first use with the context
  /// current and bound to the stream; under gemmMutex_.
  Status cublasReady();

  std::shared_ptr<GpuContext> gpu_;
  CUstream stream_ = nullptr;
  int capability_ = 0;
  std::string description_;
  std::mutex mutex_; // allocations_
  std::set<CUdeviceptr> allocations_;
  std::mutex gemmMutex_; // cublas_, cublasHandle_, and the calls that use the handle
  const CublasApi *cublas_ = nullptr;
  cublasHandle_t cublasHandle_ = nullptr;
  CUdeviceptr cublasWorkspace_ = 0;
  const CublasLtApi *cublasLt_ = nullptr;
  cublasLtHandle_t cublasLtHandle_ = nullptr;
};

class DriverEvent final : public CudaEvent {
public:
  DriverEvent(std::shared_ptr<GpuContext> gpu, CUevent event)
      : gpu_(std::move(gpu)), event_(event) {}
  ~DriverEvent() override {
    if (gpu_->bind().isOk())
      gpu_->api->cuEventDestroy(event_);
  }
  Result<bool> query() override {
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    CUresult code = gpu_->api->cuEventQuery(event_);
    if (code == CUDA_ERROR_NOT_READY)
      return false;
    if (Status s = gpu_->check(code, "cuEventQuery"); !s.isOk())
      return s;
    return true;
  }
  Status wait() override {
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    return gpu_->check(gpu_->api->cuEventSynchronize(event_), "cuEventSynchronize");
  }

private:
  std::shared_ptr<GpuContext> gpu_;
  CUevent event_;
};

class DriverGraph final : public CudaGraph {
public:
  DriverGraph(std::shared_ptr<GpuContext> gpu, CUgraph graph, CUgraphExec exec, CUstream stream)
      : gpu_(std::move(gpu)), graph_(graph), exec_(exec), stream_(stream) {}
  ~DriverGraph() override {
    if (!gpu_->bind().isOk())
      return;
    gpu_->api->cuGraphExecDestroy(exec_);
    gpu_->api->cuGraphDestroy(graph_);
  }
  Status launch() override {
    if (Status s = gpu_->bind(); !s.isOk())
      return s;
    return gpu_->check(gpu_->api->cuGraphLaunch(exec_, stream_), "cuGraphLaunch");
  }

private:
  std::shared_ptr<GpuContext> gpu_;
  CUgraph graph_;
  CUgraphExec exec_;
  CUstream stream_; // the device's; the device outlives its graphs
};

Result<std::unique_ptr<CudaEvent>> DriverDevice::recordEvent() {
  if (Status s = gpu_->bind(); !s.isOk())
    return s;
  CUevent event = nullptr;
  if (Status s = gpu_->check(gpu_->api->cuEventCreate(&event, CU_EVENT_DISABLE_TIMING),
                             "cuEventCreate");
      !s.isOk())
    return s;
  auto owned = std::make_unique<DriverEvent>(gpu_, event);
  if (Status s = gpu_->check(gpu_->api->cuEventRecord(event, stream_), "cuEventRecord"); !s.isOk())
    return s;
  return std::unique_ptr<CudaEvent>(std::move(owned));
}

Result<std::unique_ptr<CudaGraph>> DriverDevice::endCapture() {
  if (Status s = gpu_->bind(); !s.isOk())
    return s;
  CUgraph graph = nullptr;
  // Ends the capture also when it was invalidated (the error says why).
  if (Status s = gpu_->check(gpu_->api->cuStreamEndCapture(stream_, &graph), "cuStreamEndCapture");
      !s.isOk()) {
    if (graph)
      gpu_->api->cuGraphDestroy(graph);
    return s;
  }
  CUgraphExec exec = nullptr;
  if (Status s = gpu_->check(gpu_->api->cuGraphInstantiateWithFlags(&exec, graph, 0),
                             "cuGraphInstantiateWithFlags");
      !s.isOk()) {
    gpu_->api->cuGraphDestroy(graph);
    return s;
  }
  return std::unique_ptr<CudaGraph>(std::make_unique<DriverGraph>(gpu_, graph, exec, stream_));
}

Status DriverDevice::cublasReady() {
  if (cublasHandle_)
    return Status::ok();
  Result<const CublasApi *> loaded = loadCublas();
  if (!loaded.isOk())
    return loaded.status();
  const CublasApi *api = loaded.value();
  cublasHandle_t handle = nullptr;
  if (Status s = checkCublas(api->cublasCreate_v2(&handle), "cublasCreate_v2"); !s.isOk())
    return s;
  // Sums stay f32 until C is written, also where cuBLAS splits k (by
  // default it may reduce the partial sums in C's f16 or bf16).
  Status s = checkCublas(api->cublasSetStream_v2(handle, stream_), "cublasSetStream_v2");
  if (s.isOk())
    s = checkCublas(
        api->cublasSetMathMode(handle, CUBLAS_DEFAULT_MATH |
                                           CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION),
        "cublasSetMathMode(CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION)");
  // A workspace of its own, so that a captured GEMM allocates nothing
  // (cuBLAS's guidance for graphs: 32 MiB on Hopper).
  CUdeviceptr workspace = 0;
  if (s.isOk())
    s = gpu_->check(gpu_->api->cuMemAlloc(&workspace, kCublasWorkspaceBytes),
                    "cuMemAlloc_v2(cuBLAS workspace)");
  if (s.isOk())
    s = checkCublas(api->cublasSetWorkspace_v2(handle, reinterpret_cast<void *>(workspace),
                                               kCublasWorkspaceBytes),
                    "cublasSetWorkspace_v2");
  if (!s.isOk()) {
    api->cublasDestroy_v2(handle);
    if (workspace)
      gpu_->api->cuMemFree(workspace);
    return s;
  }
  cublas_ = api;
  cublasHandle_ = handle;
  cublasWorkspace_ = workspace;
  return Status::ok();
}

Status DriverDevice::gemm(const GemmCall &g) {
  if (Status s = checkGemmCall(g, "cuBLAS gemm"); !s.isOk())
    return s;
  if (g.m == 0 || g.n == 0)
    return Status::ok(); // nothing to write (cuBLAS returns at once, too)
  int type = g.type == GemmCall::Type::F32   ? CUDA_R_32F
             : g.type == GemmCall::Type::F16 ? CUDA_R_16F
                                             : CUDA_R_16BF;
  int compute = CUBLAS_COMPUTE_32F;
  switch (g.compute) {
  case GemmCall::Compute::F32:
    break;
  case GemmCall::Compute::F32Tf32:
    compute = CUBLAS_COMPUTE_32F_FAST_TF32;
    break;
  case GemmCall::Compute::F32F16:
    compute = CUBLAS_COMPUTE_32F_FAST_16F;
    break;
  case GemmCall::Compute::F32Bf16:
    compute = CUBLAS_COMPUTE_32F_FAST_16BF;
    break;
  }
  int transA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N, transB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  const int64_t limit = 0x7fffffff;
  bool fitsInt = g.m <= limit && g.n <= limit && g.k <= limit && g.lda <= limit && g.ldb <= limit &&
                 g.ldc <= limit && g.batch <= limit;
  // "cublasGemmStridedBatchedEx(f16, 32F, NT, m 64, n 32, k 16, batch 2)"
  auto what = [&](const char *call) {
    return std::string(call) + "(" + gemmTypeName(g.type) + ", " + gemmComputeName(g.compute) +
           ", " + (g.transA ? "T" : "N") + (g.transB ? "T" : "N") + ", m " + std::to_string(g.m) +
           ", n " + std::to_string(g.n) + ", k " + std::to_string(g.k) + ", batch " +
           std::to_string(g.batch) + ")";
  };

  std::lock_guard<std::mutex> lock(gemmMutex_);
  if (Status s = gpu_->bind(); !s.isOk())
    return s;
  if (Status s = cublasReady(); !s.isOk())
    return s;
  if (g.epilogue != GemmCall::Epilogue::None)
    return gemmLt(g, type, compute); // the workspace is cuBLAS's, made above
  // Host scalars (the handle's default pointer mode), f32 for the 32F
  // compute types.
  const float alpha = g.alpha, beta = g.beta;
  if (fitsInt)
    return checkCublas(cublas_->cublasGemmStridedBatchedEx(
                           cublasHandle_, transA, transB, static_cast<int>(g.m),
                           static_cast<int>(g.n), static_cast<int>(g.k), &alpha, g.a, type,
                           static_cast<int>(g.lda), g.strideA, g.b, type, static_cast<int>(g.ldb),
                           g.strideB, &beta, g.c, type, static_cast<int>(g.ldc), g.strideC,
                           static_cast<int>(g.batch), compute, CUBLAS_GEMM_DEFAULT),
                       what("cublasGemmStridedBatchedEx"));
  if (!cublas_->cublasGemmStridedBatchedEx_64)
    return Status::error(StatusCode::InvalidArgument,
                         "cuBLAS gemm: m " + std::to_string(g.m) + ", n " + std::to_string(g.n) +
                             ", k " + std::to_string(g.k) + ", lda " + std::to_string(g.lda) +
                             ", ldb " + std::to_string(g.ldb) + ", ldc " + std::to_string(g.ldc) +
                             ", batch " + std::to_string(g.batch) + " exceed int32 and " +
                             cublas_->library + " has no cublasGemmStridedBatchedEx_64");
  return checkCublas(cublas_->cublasGemmStridedBatchedEx_64(
                         cublasHandle_, transA, transB, g.m, g.n, g.k, &alpha, g.a, type, g.lda,
                         g.strideA, g.b, type, g.ldb, g.strideB, &beta, g.c, type, g.ldc, g.strideC,
                         g.batch, compute, CUBLAS_GEMM_DEFAULT),
                     what("cublasGemmStridedBatchedEx_64"));
}

Status DriverDevice::cublasLtReady() {
  if (cublasLtHandle_)
    return Status::ok();
  Result<const CublasLtApi *> loaded = loadCublasLt();
  if (!loaded.isOk())
    return loaded.status();
  cublasLtHandle_t handle = nullptr;
  if (Status s = checkCublas(loaded.value()->cublasLtCreate(&handle), "cublasLtCreate"); !s.isOk())
    return s;
  cublasLt_ = loaded.value();
  cublasLtHandle_ = handle;
  return Status::ok();
}

Status DriverDevice::gemmLt(const GemmCall &g, int type, int compute) {
  if (Status s = cublasLtReady(); !s.isOk())
    return s;
  const CublasLtApi &lt = *cublasLt_;
  std::string what = std::string("cublasLtMatmul(") + gemmTypeName(g.type) + ", " +
                     gemmComputeName(g.compute) + ", " + gemmEpilogueName(g.epilogue) + ", m " +
                     std::to_string(g.m) + ", n " + std::to_string(g.n) + ", k " +
                     std::to_string(g.k) + ", batch " + std::to_string(g.batch) + ")";
  if (g.batch > 0x7fffffff)
    return Status::error(StatusCode::InvalidArgument, what + ": batch exceeds int32");
  // Descriptors made per call and released whatever happens: host objects,
  // cheap next to the GEMM; a captured call keeps what it needs.
  cublasLtMatmulDesc_t desc = nullptr;
  cublasLtMatrixLayout_t layouts[3] = {nullptr, nullptr, nullptr};
  struct Release {
    const CublasLtApi &lt;
    cublasLtMatmulDesc_t &desc;
    cublasLtMatrixLayout_t (&layouts)[3];
    ~Release() {
      for (cublasLtMatrixLayout_t layout : layouts)
        if (layout)
          lt.cublasLtMatrixLayoutDestroy(layout);
      if (desc)
        lt.cublasLtMatmulDescDestroy(desc);
    }
  } release{lt, desc, layouts};
  cublasStatus_t status = lt.cublasLtMatmulDescCreate(&desc, compute, CUDA_R_32F);
  int32_t transA = g.transA ? CUBLAS_OP_T : CUBLAS_OP_N;
  int32_t transB = g.transB ? CUBLAS_OP_T : CUBLAS_OP_N;
  uint32_t epilogue = g.epilogue == GemmCall::Epilogue::Bias       ? CUBLASLT_EPILOGUE_BIAS
                      : g.epilogue == GemmCall::Epilogue::BiasRelu ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                                   : CUBLASLT_EPILOGUE_GELU_BIAS;
  const void *bias = g.bias;
  auto set = [&](int attribute, const void *value, size_t bytes) {
    if (status == CUBLAS_STATUS_SUCCESS)
      status = lt.cublasLtMatmulDescSetAttribute(desc, attribute, value, bytes);
  };
  set(CUBLASLT_MATMUL_DESC_TRANSA, &transA, sizeof transA);
  set(CUBLASLT_MATMUL_DESC_TRANSB, &transB, sizeof transB);
  set(CUBLASLT_MATMUL_DESC_EPILOGUE, &epilogue, sizeof epilogue);
  set(CUBLASLT_MATMUL_DESC_BIAS_POINTER, &bias, sizeof bias);
  // The layouts as stored: A m x k (k x m transposed), B k x n (n x k), C m x n.
  const int64_t rows[3] = {g.transA ? g.k : g.m, g.transB ? g.n : g.k, g.m};
  const int64_t cols[3] = {g.transA ? g.m : g.k, g.transB ? g.k : g.n, g.n};
  const int64_t lds[3] = {g.lda, g.ldb, g.ldc}, strides[3] = {g.strideA, g.strideB, g.strideC};
  int32_t batch = static_cast<int32_t>(g.batch);
  for (int i = 0; i < 3 && status == CUBLAS_STATUS_SUCCESS; ++i) {
    status = lt.cublasLtMatrixLayoutCreate(&layouts[i], type, uint64_t(rows[i]), uint64_t(cols[i]),
                                           lds[i]);
    if (status == CUBLAS_STATUS_SUCCESS && g.batch > 1)
      status = lt.cublasLtMatrixLayoutSetAttribute(layouts[i], CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT,
                                                   &batch, sizeof batch);
    if (status == CUBLAS_STATUS_SUCCESS && g.batch > 1)
      status = lt.cublasLtMatrixLayoutSetAttribute(
          layouts[i], CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &strides[i], sizeof strides[i]);
  }
  if (Status s = checkCublas(status, what + ": descriptors"); !s.isOk())
    return s;
  const float alpha = g.alpha, beta = g.beta;
  return checkCublas(lt.cublasLtMatmul(cublasLtHandle_, desc, &alpha, g.a, layouts[0], g.b,
                                       layouts[1], &beta, g.c, layouts[2], g.c, layouts[2],
                                       nullptr, reinterpret_cast<void *>(cublasWorkspace_),
                                       kCublasWorkspaceBytes, stream_),
                     what);
}

Result<std::unique_ptr<CudaModule>> DriverDevice::loadModule(const ModuleImage &image) {
  const void *code = nullptr;
  std::string chosen;
  for (const ModuleImage::Cubin &cubin : image.cubins)
    if (cubin.arch == capability_ && cubin.data && cubin.size) {
      code = cubin.data;
      chosen = "cubin " + archName("sm_", cubin.arch);
      break;
    }
  if (!code && image.ptxArch != 0 && image.ptxArch <= capability_ && !image.ptx.empty()) {
    code = image.ptx.c_str(); // NUL-terminated, as the driver wants PTX
    chosen = "PTX " + archName("compute_", image.ptxArch);
  }
  if (!code) {
    std::string archs;
    for (const ModuleImage::Cubin &cubin : image.cubins)
      archs += (archs.empty() ? "" : ", ") + archName("sm_", cubin.arch);
    std::string ptx =
        image.ptxArch ? "PTX " + archName("compute_", image.ptxArch) : std::string("no PTX");
    return Status::error(StatusCode::Unsupported,
                         image.what + ": the blob has code for " +
                             (archs.empty() ? std::string("no real architecture") : archs) + " (" +
                             ptx + ") but this GPU is " + archName("sm_", capability_));
  }

  if (Status s = gpu_->bind(); !s.isOk())
    return s;
  // The JIT's error log, so that a PTX the driver refuses says why.
  char log[4096] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void *values[] = {log, reinterpret_cast<void *>(static_cast<uintptr_t>(sizeof log - 1))};
  CUmodule module = nullptr;
  CUresult result = gpu_->api->cuModuleLoadDataEx(&module, code, 2, options, values);
  if (result != CUDA_SUCCESS) {
    std::string detail(log);
    if (size_t newline = detail.find('\n'); newline != std::string::npos)
      detail.resize(newline);
    return Status::error(StatusCode::Internal,
                         "CUDA driver: cuModuleLoadDataEx(" + image.what + ", " + chosen + "): " +
                             gpu_->api->describe(result) + (detail.empty() ? "" : ": " + detail));
  }
  return std::unique_ptr<CudaModule>(std::make_unique<DriverModule>(gpu_, module, image.what));
}

} // namespace

Result<std::unique_ptr<CudaDevice>> openDriverDevice(int ordinal) {
  Result<const DriverApi *> loaded = loadDriver();
  if (!loaded.isOk())
    return loaded.status();
  const DriverApi &api = *loaded.value();
  if (CUresult code = api.cuInit(0); code != CUDA_SUCCESS)
    return Status::error(StatusCode::Unsupported, "CUDA driver: cuInit: " + api.describe(code));
  int count = 0;
  if (CUresult code = api.cuDeviceGetCount(&count); code != CUDA_SUCCESS)
    return Status::error(StatusCode::Unsupported,
                         "CUDA driver: cuDeviceGetCount: " + api.describe(code));
  if (ordinal < 0 || ordinal >= count)
    return Status::error(StatusCode::NotFound, "no CUDA device " + std::to_string(ordinal) +
                                                   " (this machine has " + std::to_string(count) +
                                                   ")");
  auto gpu = std::make_shared<GpuContext>();
  gpu->api = &api;
  if (Status s = gpu->check(api.cuDeviceGet(&gpu->device, ordinal), "cuDeviceGet"); !s.isOk())
    return s;
  if (Status s = gpu->check(api.cuDevicePrimaryCtxRetain(&gpu->context, gpu->device),
                            "cuDevicePrimaryCtxRetain");
      !s.isOk()) {
    gpu->context = nullptr; // not retained: nothing to release
    return s;
  }
  auto device = std::make_unique<DriverDevice>(std::move(gpu));
  if (Status s = device->initialize(); !s.isOk())
    return s;
  return std::unique_ptr<CudaDevice>(std::move(device));
}

} // namespace ortc::cuda
