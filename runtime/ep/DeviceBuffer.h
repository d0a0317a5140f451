//===- DeviceBuffer.h - owned buffers and borrowed views --------*- C++ -*-===//
//
// Ownership rules of the EP contract:
//  - an owned buffer comes from one EP's allocate() and is released exactly
//    once, through that EP's deallocate(); releasing it through another EP is
//    an error returned, not undefined behaviour;
//  - a borrowed view owns nothing and cannot be deallocated;
//  - the raw pointer never extends its owner's life.
// There is no releasing destructor: freeing device memory may need the EP's
// context and stream, so release is always explicit. A buffer is move-only,
// and deallocate() takes it by rvalue, so one object cannot be freed twice.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_DEVICEBUFFER_H
#define ORTC_RUNTIME_EP_DEVICEBUFFER_H

#include <cstddef>
#include <string>
#include <utility>

namespace ortc {

enum class DeviceType { Cpu, Cuda };

const char *deviceTypeName(DeviceType type);

/// Stable identity of an EP: a snake_case name such as "cpu_ep", its device
/// type, and the device id it drives.
struct EpIdentity {
  std::string name;
  DeviceType deviceType = DeviceType::Cpu;
  int deviceId = 0;
};

class RuntimeEp;

class DeviceBuffer {
public:
  DeviceBuffer() = default;
  DeviceBuffer(DeviceBuffer &&other) noexcept { *this = std::move(other); }
  DeviceBuffer &operator=(DeviceBuffer &&other) noexcept {
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
    owner_ = std::exchange(other.owner_, nullptr);
    device_ = other.device_;
    deviceId_ = other.deviceId_;
    return *this;
  }
  DeviceBuffer(const DeviceBuffer &) = delete;
  DeviceBuffer &operator=(const DeviceBuffer &) = delete;

  /// An owned buffer; only EPs call this, from allocate().
  static DeviceBuffer owned(void *data, size_t size, const RuntimeEp &owner, DeviceType device,
                            int deviceId) {
    DeviceBuffer b;
    b.data_ = data;
    b.size_ = size;
    b.owner_ = &owner;
    b.device_ = device;
    b.deviceId_ = deviceId;
    return b;
  }
  /// A view of memory someone else owns.
  static DeviceBuffer borrowed(void *data, size_t size, DeviceType device, int deviceId = 0) {
    DeviceBuffer b;
    b.data_ = data;
    b.size_ = size;
    b.device_ = device;
    b.deviceId_ = deviceId;
    return b;
  }

  /// Opaque on the host for device memory: never dereference a CUDA pointer.
  void *data() const { return data_; }
  size_t size() const { return size_; }
  bool isOwned() const { return owner_ != nullptr; }
  const RuntimeEp *owner() const { return owner_; }
  DeviceType device() const { return device_; }
  int deviceId() const { return deviceId_; }
  bool empty() const { return data_ == nullptr && size_ == 0; }

  /// Forgets the memory without releasing it; EPs call this in deallocate().
  void release() {
    data_ = nullptr;
    size_ = 0;
    owner_ = nullptr;
  }

private:
  void *data_ = nullptr;
  size_t size_ = 0;
  const RuntimeEp *owner_ = nullptr;
  DeviceType device_ = DeviceType::Cpu;
  int deviceId_ = 0;
};

} // namespace ortc

#endif // ORTC_RUNTIME_EP_DEVICEBUFFER_H
