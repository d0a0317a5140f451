//===- CudaRuntimeEp.cpp - the runtime half of the CUDA EP ----------------===//

#include "providers/cuda/runtime/CudaRuntimeEp.h"

#include "providers/cuda/blob/CudaBlob.h"
#include "providers/cuda/runtime/CudaDevice.h"
#include "providers/cuda/runtime/PlanRunner.h"

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
           "gpu"}};
}

Status CudaRuntimeEp::initialize(const EpConfig &config) {
  auto option = config.options.find("device");
  if (option != config.options.end()) {
    if (option->second != "gpu" && option->second != "emulation")
      return badEpOptionValue(name(), "device", option->second, "not a device kind",
                              "gpu or emulation");
    emulate_ = option->second == "emulation";
  }
  return Status::ok();
}

Status CudaRuntimeEp::shutdown() {
  std::lock_guard<std::mutex> lock(mutex_);
  device_.reset();
  return Status::ok();
}

Result<std::shared_ptr<CudaDevice>> CudaRuntimeEp::device() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (device_)
    return device_;
  Result<std::unique_ptr<CudaDevice>> opened = emulate_ ? openEmulatedDevice() : openDriverDevice(0);
  if (!opened.isOk())
    return opened.status();
  device_ = std::shared_ptr<CudaDevice>(opened.takeValue());
  return device_;
}

Result<DeviceBuffer> CudaRuntimeEp::allocate(size_t size, size_t alignment) {
  Result<std::shared_ptr<CudaDevice>> dev = device();
  if (!dev.isOk())
    return Status::error(dev.status().code(), name() + ": " + dev.status().message());
  // Device allocations are 256-byte aligned, more than any tensor needs.
  if (alignment > 256 || (alignment & (alignment - 1)))
    return Status::error(StatusCode::InvalidArgument,
                         name() + ": alignment " + std::to_string(alignment) +
                             " is not a power of two up to 256");
  Result<void *> memory = dev.value()->allocate(size ? size : 1);
  if (!memory.isOk())
    return Status::error(memory.status().code(), name() + ": " + memory.status().message());
  return DeviceBuffer::owned(memory.value(), size, *this, DeviceType::Cuda, 0);
}

Status CudaRuntimeEp::deallocate(DeviceBuffer &&buffer) {
  if (Status owned = checkOwnership(buffer); !owned.isOk())
    return owned;
  Result<std::shared_ptr<CudaDevice>> dev = device();
  if (!dev.isOk())
    return dev.status();
  Status status = dev.value()->free(buffer.data());
  buffer.release();
  return status;
}

Status CudaRuntimeEp::copy(const DeviceBuffer &src, DeviceBuffer &dst, size_t size) {
  if (size > src.size() || size > dst.size())
    return Status::error(StatusCode::InvalidArgument,
                         name() + ": copy of " + std::to_string(size) +
                             " bytes exceeds a buffer (source " + std::to_string(src.size()) +
                             ", destination " + std::to_string(dst.size()) + ")");
  if (size == 0)
    return Status::ok();
  bool fromDevice = src.device() == DeviceType::Cuda, toDevice = dst.device() == DeviceType::Cuda;
  if (!fromDevice && !toDevice) {
    std::memmove(dst.data(), src.data(), size);
    return Status::ok();
  }
  Result<std::shared_ptr<CudaDevice>> dev = device();
  if (!dev.isOk())
    return dev.status();
  if (fromDevice && toDevice)
    return dev.value()->copyOnDevice(dst.data(), src.data(), size);
  if (toDevice)
    return dev.value()->copyToDevice(dst.data(), src.data(), size);
  return dev.value()->copyToHost(dst.data(), src.data(), size);
}

Result<std::unique_ptr<Fence>> CudaRuntimeEp::copyAsync(const DeviceBuffer &src, DeviceBuffer &dst,
                                                        size_t size) {
  // Copies are ordered on the device's one stream before any later launch,
  // and the device's copyToDevice returns once the source may be reused.
  if (Status status = copy(src, dst, size); !status.isOk())
    return status;
  return std::unique_ptr<Fence>(new ReadyFence());
}

Status CudaRuntimeEp::sync() {
  std::lock_guard<std::mutex> lock(mutex_);
  return device_ ? device_->synchronize() : Status::ok();
}

std::vector<std::string> CudaRuntimeEp::contextSourceKeys() const { return {kCudaContextSource}; }

Result<std::unique_ptr<LoadedPartition>> CudaRuntimeEp::loadContext(const EpContextView &context) {
  Result<std::shared_ptr<CudaDevice>> dev = device();
  if (!dev.isOk())
    return Status::error(dev.status().code(), dev.status().message() + "; partition '" +
                                                  context.partitionName + "' needs EP " + name());
  Result<std::unique_ptr<PlanRunner>> loaded = PlanRunner::load(context, dev.value());
  if (!loaded.isOk())
    return loaded.status();
  return std::unique_ptr<LoadedPartition>(loaded.takeValue());
}

} // namespace ortc::cuda
