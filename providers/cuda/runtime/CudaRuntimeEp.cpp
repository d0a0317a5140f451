//===- CudaRuntimeEp.cpp - the runtime half of the CUDA EP ----------------===//

#include "providers/cuda/runtime/CudaRuntimeEp.h"

#include "providers/cuda/blob/CudaBlob.h"
#include "providers/cuda/runtime/CudaDevice.h"
#include "providers/cuda/runtime/DeviceMemoryPool.h"
#include "providers/cuda/runtime/PlanRunner.h"
#include "providers/cuda/runtime/StagedTransfers.h"

#include <cstring>

namespace ortc::cuda {

CudaRuntimeEp::CudaRuntimeEp() { identity_ = EpIdentity{kCudaEpName, DeviceType::Cuda, 0}; }

CudaRuntimeEp::~CudaRuntimeEp() = default;

RuntimeEpFactory cudaRuntimeEpFactory() {
  return RuntimeEpFactory{kCudaEpName, {"cuda"}, [] { return std::make_shared<CudaRuntimeEp>(); }};
}

std::vector<EpOptionSpec> CudaRuntimeEp::options() const {
  return {{"device", "gpu|emulation",
           "Where the kernels run: gpu (GPU 0 through the CUDA driver) or emulation (the "
           "host test double: the blob's CUDA C++ compiled with the host C++ compiler, "
           "$ORTC_HOST_CXX or c++, each block's threads as fibers; for tests, not speed).",
           "gpu"},
          {"graphs", "on|off",
           "Capture each partition's run into a CUDA graph at the first run of a shape and "
           "replay it after (off: every run issues its kernels on the stream).",
           "on"}};
}

Status CudaRuntimeEp::initialize(const EpConfig &config) {
  auto option = config.options.find("device");
  if (option != config.options.end()) {
    if (option->second != "gpu" && option->second != "emulation")
      return badEpOptionValue(name(), "device", option->second, "not a device kind",
                              "gpu or emulation");
    emulate_ = option->second == "emulation";
  }
  option = config.options.find("graphs");
  if (option != config.options.end()) {
    if (option->second != "on" && option->second != "off")
      return badEpOptionValue(name(), "graphs", option->second, "not on or off", "on or off");
    graphs_ = option->second == "on";
  }
  return Status::ok();
}

Status CudaRuntimeEp::shutdown() {
  std::lock_guard<std::mutex> lock(mutex_);
  opened_ = Opened();
  return Status::ok();
}

Result<CudaRuntimeEp::Opened> CudaRuntimeEp::open() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (opened_.device)
    return opened_;
  Result<std::unique_ptr<CudaDevice>> opened = emulate_ ? openEmulatedDevice() : openDriverDevice(0);
  if (!opened.isOk())
    return opened.status();
  Opened state;
  state.device = std::shared_ptr<CudaDevice>(opened.takeValue());
  state.pool = std::make_shared<DeviceMemoryPool>(state.device);
  state.staged = std::make_shared<StagedTransfers>(state.device);
  opened_ = state;
  return opened_;
}

Result<DeviceBuffer> CudaRuntimeEp::allocate(size_t size, size_t alignment) {
  Result<Opened> dev = open();
  if (!dev.isOk())
    return Status::error(dev.status().code(), name() + ": " + dev.status().message());
  // Pool blocks are 256-byte aligned, more than any tensor needs.
  if (alignment > 256 || (alignment & (alignment - 1)))
    return Status::error(StatusCode::InvalidArgument,
                         name() + ": alignment " + std::to_string(alignment) +
                             " is not a power of two up to 256");
  Result<void *> memory = dev.value().pool->allocate(size ? size : 1);
  if (!memory.isOk())
    return Status::error(memory.status().code(), name() + ": " + memory.status().message());
  return DeviceBuffer::owned(memory.value(), size, *this, DeviceType::Cuda, 0);
}

Status CudaRuntimeEp::deallocate(DeviceBuffer &&buffer) {
  if (Status owned = checkOwnership(buffer); !owned.isOk())
    return owned;
  Result<Opened> dev = open();
  if (!dev.isOk())
    return dev.status();
  Status status = dev.value().pool->free(buffer.data());
  buffer.release();
  return status;
}

Status CudaRuntimeEp::checkCopySize(const DeviceBuffer &src, const DeviceBuffer &dst,
                                    size_t size) const {
  if (size > src.size() || size > dst.size())
    return Status::error(StatusCode::InvalidArgument,
                         name() + ": copy of " + std::to_string(size) +
                             " bytes exceeds a buffer (source " + std::to_string(src.size()) +
                             ", destination " + std::to_string(dst.size()) + ")");
  return Status::ok();
}

Status CudaRuntimeEp::copy(const DeviceBuffer &src, DeviceBuffer &dst, size_t size) {
  if (Status s = checkCopySize(src, dst, size); !s.isOk())
    return s;
  if (size == 0)
    return Status::ok();
  bool fromDevice = src.device() == DeviceType::Cuda, toDevice = dst.device() == DeviceType::Cuda;
  if (!fromDevice && !toDevice) {
    std::memmove(dst.data(), src.data(), size);
    return Status::ok();
  }
  Result<Opened> dev = open();
  if (!dev.isOk())
    return dev.status();
  CudaDevice &device = *dev.value().device;
  std::lock_guard<std::mutex> order(device.streamOrder());
  if (fromDevice && toDevice)
    return device.copyOnDevice(dst.data(), src.data(), size);
  if (toDevice)
    return device.copyToDevice(dst.data(), src.data(), size);
  return device.copyToHost(dst.data(), src.data(), size);
}

Result<std::unique_ptr<Fence>> CudaRuntimeEp::copyAsync(const DeviceBuffer &src, DeviceBuffer &dst,
                                                        size_t size) {
  // From the host: staged through page-locked memory, the fence an event
  // after the copy; the stream orders it before any later launch. Other
  // directions return when done.
  if (src.device() == DeviceType::Cuda || dst.device() != DeviceType::Cuda || size == 0) {
    if (Status status = copy(src, dst, size); !status.isOk())
      return status;
    return std::unique_ptr<Fence>(new ReadyFence());
  }
  if (Status s = checkCopySize(src, dst, size); !s.isOk())
    return s;
  Result<Opened> dev = open();
  if (!dev.isOk())
    return dev.status();
  std::lock_guard<std::mutex> order(dev.value().device->streamOrder());
  Result<std::unique_ptr<Fence>> fence = dev.value().staged->toDevice(dst.data(), src.data(), size);
  if (!fence.isOk())
    return Status::error(fence.status().code(), name() + ": " + fence.status().message());
  return fence;
}

Status CudaRuntimeEp::sync() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!opened_.device)
    return Status::ok();
  std::lock_guard<std::mutex> order(opened_.device->streamOrder());
  return opened_.device->synchronize();
}

std::vector<std::string> CudaRuntimeEp::contextSourceKeys() const { return {kCudaContextSource}; }

Result<std::unique_ptr<LoadedPartition>> CudaRuntimeEp::loadContext(const EpContextView &context) {
  Result<Opened> dev = open();
  if (!dev.isOk())
    return Status::error(dev.status().code(), dev.status().message() + "; partition '" +
                                                  context.partitionName + "' needs EP " + name());
  PlanRunner::Options options;
  options.graphs = graphs_;
  Result<std::unique_ptr<PlanRunner>> loaded = PlanRunner::load(context, dev.value().pool, options);
  if (!loaded.isOk())
    return loaded.status();
  return std::unique_ptr<LoadedPartition>(loaded.takeValue());
}

} // namespace ortc::cuda
