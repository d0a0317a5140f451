//===- KernelApi.h - how the CPU plan calls its library kernels -*- C++ -*-===//
//
// A library step of a CPU execution plan names a kernel ("Gemm", "Conv", ...)
// and carries the ONNX node's attributes. The executor binds the step's buffers
// to concrete shapes (the batch dimension is known by then) and calls the
// kernel. The compile half only claims what these kernels accept, so a kernel
// checks cheap invariants and returns an error Status rather than trusting
// blindly; it never throws and never aborts.
//
// Plain C++17: the runtime links this, never MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_KERNELAPI_H
#define ORTC_PROVIDERS_CPU_KERNELS_KERNELAPI_H

#include "runtime/ep/Status.h"
#include "runtime/ep/Tensor.h"

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace ortc::cpu {

class ThreadPool;

/// The attributes of one step, as the ONNX node had them (after the importer's
/// upgrades): ints and int lists, floats and float lists, strings.
struct StepAttributes {
  std::map<std::string, std::vector<int64_t>> ints;
  std::map<std::string, std::vector<float>> floats;
  std::map<std::string, std::string> strings;

  int64_t getInt(const std::string &name, int64_t fallback) const;
  std::vector<int64_t> getInts(const std::string &name,
                               std::vector<int64_t> fallback = {}) const;
  float getFloat(const std::string &name, float fallback) const;
  std::string getString(const std::string &name, std::string fallback) const;
  bool has(const std::string &name) const;
};

/// Growable scratch memory owned by one loaded partition; kernels borrow it for
/// the duration of a call (im2col columns, packed panels).
class Scratch {
public:
  /// At least `bytes` bytes, 64-byte aligned; valid until the next call.
  void *get(size_t bytes);
  ~Scratch();

private:
  void *data_ = nullptr;
  size_t size_ = 0;
};

/// Memory for the outputs whose size the kernel decides (NonZero's count):
/// the executor binds the output's data-sized dims from `shape`.
class OutputSizer {
public:
  virtual ~OutputSizer() = default;
  /// Whether output `output` waits for the kernel to give its shape.
  virtual bool pending(size_t output) const = 0;
  /// The output's memory; afterwards KernelCall::outputs[output] is the
  /// sized view too.
  virtual Result<void *> allocate(size_t output, const std::vector<int64_t> &shape) = 0;
};

/// One call of a library kernel. An omitted optional input has data == nullptr.
/// Output views are preallocated by the executor with their final shapes,
/// except those `sizer` says are pending (KernelUtil's sizedOutput).
struct KernelCall {
  const StepAttributes &attrs;
  const TensorView *inputs;
  size_t numInputs;
  const TensorView *outputs;
  size_t numOutputs;
  Scratch &scratch;
  ThreadPool *pool = nullptr; // intra-op threads; null runs on the caller
  OutputSizer *sizer = nullptr;

  const TensorView *input(size_t i) const {
    return i < numInputs && inputs[i].data ? &inputs[i] : nullptr;
  }
};

using LibraryKernelFn = Status (*)(const KernelCall &call);

/// The kernel registered under `name`, or nullptr.
LibraryKernelFn findLibraryKernel(const std::string &name);

/// Names of all library kernels (for `ortc inspect` and tests).
std::vector<std::string> libraryKernelNames();

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_KERNELS_KERNELAPI_H
