//===- RuntimeEp.h - the runtime half of the EP contract --------*- C++ -*-===//
//
// What the runtime asks of an execution provider once a model is compiled:
// lifecycle, memory, transfers, device-graph capture, and loading the EPContext
// blobs it wrote at compile time. Plain C++17; links nothing heavy, so the
// runtime never pulls in MLIR, LLVM or NVRTC. Errors are values (Status).
//
// The EP decides none of: request priority, batching, global model residency,
// sampling or model-family behaviour.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_RUNTIMEEP_H
#define ORTC_RUNTIME_EP_RUNTIMEEP_H

#include "runtime/ep/DeviceBuffer.h"
#include "runtime/ep/EpOptions.h"
#include "runtime/ep/Profile.h"
#include "runtime/ep/Status.h"
#include "runtime/ep/Tensor.h"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ortc {

struct EpConfig {
  int intraOpThreads = 0; // 0: the EP's default
  /// This EP's options (--ep-option EP:KEY=VALUE); only keys that options()
  /// lists reach initialize(), which checks their values.
  EpOptionMap options;
};

/// Completion of asynchronous work; wait() blocks until it is done.
class Fence {
public:
  virtual ~Fence() = default;
  virtual Status wait() = 0;
  virtual bool isDone() const = 0;
};

/// A fence for work that finished before the call returned.
class ReadyFence final : public Fence {
public:
  Status wait() override { return Status::ok(); }
  bool isDone() const override { return true; }
};

/// One EPContext node as the runtime hands it to an EP: the blob bytes (inline
/// or mapped from a sidecar) and the node's attributes.
struct EpContextView {
  std::string source;
  std::string partitionName;
  std::string hardwareArchitecture;
  std::string epSdkVersion;
  const char *data = nullptr;
  size_t size = 0;
  /// `data` is a read-only map of a file (a sidecar) that stays unchanged
  /// while it is used: an EP may give back pages it reads only now and then
  /// (madvise), and they come back from the file when next read.
  bool fileMapping = false;
  /// The node's input and output value names, for messages: an EP may name
  /// its partition's tensors internally ("input0"), the user knows these.
  std::vector<std::string> inputNames, outputNames;
};

/// Memory for output `output` of `shape`, asked for by a partition whose
/// output shape follows from the data (NonZero's count, an If's branch): it
/// knows the shape only once the step that makes the output has run.
using OutputAllocator =
    std::function<Result<void *>(size_t output, const std::vector<int64_t> &shape)>;

/// A partition restored from its context, ready to run. Tensors are host
/// views for CPU EPs; device EPs document what their views point to.
class LoadedPartition {
public:
  virtual ~LoadedPartition() = default;

  virtual const std::vector<TensorSignature> &inputs() const = 0;
  virtual const std::vector<TensorSignature> &outputs() const = 0;

  /// Checks the inputs' element types and shapes against the signature, binds
  /// the batch dimension, and returns the shape of every output.
  virtual Result<std::vector<std::vector<int64_t>>>
  outputShapes(const std::vector<TensorView> &inputs) const = 0;

  /// Runs the partition. `outputs` are the caller's buffers, shaped as
  /// outputShapes() said; inputs are checked again (cheaply).
  virtual Status run(const std::vector<TensorView> &inputs,
                     const std::vector<TensorView> &outputs) = 0;

  /// As run(), where outputs() may have dims that outputShapes() gives as -1
  /// (sized by the data): such an output is passed with data == nullptr and
  /// the partition asks `allocate` for it when its shape is known. An EP
  /// whose outputs are always known before the run keeps this default.
  virtual Status run(const std::vector<TensorView> &inputs, const std::vector<TensorView> &outputs,
                     const OutputAllocator &allocate) {
    (void)allocate;
    return run(inputs, outputs);
  }

  /// Times each step of later runs into `steps` (null: stop timing), which
  /// the partition fills with one entry per step; false when the EP times no
  /// steps (the session then times the partition whole). Runs must not
  /// overlap while steps are timed.
  virtual bool profileSteps(std::vector<StepProfile> *steps) {
    (void)steps;
    return false;
  }
};

class RuntimeEp {
public:
  virtual ~RuntimeEp() = default;

  // Identity.
  virtual const EpIdentity &identity() const = 0;
  const std::string &name() const { return identity().name; }

  /// The keys EpConfig::options may hold for this EP.
  virtual std::vector<EpOptionSpec> options() const { return {}; }

  // Lifecycle.
  virtual Status initialize(const EpConfig &config) = 0;
  virtual Status shutdown() = 0;

  // Allocation. deallocate() refuses buffers it did not allocate.
  virtual Result<DeviceBuffer> allocate(size_t size, size_t alignment) = 0;
  virtual Status deallocate(DeviceBuffer &&buffer) = 0;

  // Transfer: host<->device or device<->device, `size` bytes.
  virtual Status copy(const DeviceBuffer &src, DeviceBuffer &dst, size_t size) = 0;
  virtual Result<std::unique_ptr<Fence>> copyAsync(const DeviceBuffer &src, DeviceBuffer &dst,
                                                   size_t size) = 0;
  virtual Status sync() = 0;

  // EPContext. The keys come from the EP itself (its configuration or build),
  // never from the loader; empty means the EP takes no EPContext nodes.
  virtual std::vector<std::string> contextSourceKeys() const { return {}; }
  virtual Result<std::unique_ptr<LoadedPartition>> loadContext(const EpContextView &context) {
    return Status::error(StatusCode::Unsupported, name() +
                                                      " does not load EPContext blobs (source '" +
                                                      context.source + "')");
  }

  // Device-graph capture; EPs without it say so.
  virtual Status beginCapture() { return unsupportedCapture(); }
  virtual Status endCapture() { return unsupportedCapture(); }
  virtual Status abortCapture() { return unsupportedCapture(); }
  virtual Status replay() { return unsupportedCapture(); }

protected:
  /// Checks that `buffer` is an owned buffer of this EP; deallocate() starts here.
  Status checkOwnership(const DeviceBuffer &buffer) const;

private:
  Status unsupportedCapture() const {
    return Status::error(StatusCode::Unsupported, name() + " has no device-graph capture");
  }
};

} // namespace ortc

#endif // ORTC_RUNTIME_EP_RUNTIMEEP_H
