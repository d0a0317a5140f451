//===- DeviceMemoryPool.h - the CUDA EP's device arena ----------*- C++ -*-===//
//
// One per EP instance (a session's EPs are its own): every device buffer the
// session asks for and every partition's arena comes from here. Freed
// blocks are kept and handed out again, so a run after the first allocates
// nothing from the driver, and a run that asks for the same sizes in the
// same order gets the same addresses (which lets a captured CUDA graph be
// replayed). A request takes the smallest free block that holds it and is
// at most twice its size; when the device is out of memory the kept blocks
// are released and the allocation tried once more. Thread-safe.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_RUNTIME_DEVICEMEMORYPOOL_H
#define ORTC_PROVIDERS_CUDA_RUNTIME_DEVICEMEMORYPOOL_H

#include "runtime/ep/Status.h"

#include <cstddef>
#include <map>
#include <memory>
#include <mutex>

namespace ortc::cuda {

class CudaDevice;

class DeviceMemoryPool {
public:
  explicit DeviceMemoryPool(std::shared_ptr<CudaDevice> device) : device_(std::move(device)) {}
  ~DeviceMemoryPool();
  DeviceMemoryPool(const DeviceMemoryPool &) = delete;
  DeviceMemoryPool &operator=(const DeviceMemoryPool &) = delete;

  /// At least `bytes` (rounded up to 512) of device memory, 256-byte aligned.
  Result<void *> allocate(size_t bytes);
  /// Returns a block from allocate() to the pool; anything else is refused.
  Status free(void *pointer);
  /// Releases every kept block to the device.
  Status trim();

  struct Stats {
    size_t bytesInUse = 0, bytesKept = 0;
    size_t deviceAllocations = 0; // calls that reached the device
  };
  Stats stats() const;

  CudaDevice &device() const { return *device_; }

private:
  Status releaseKept(); // under mutex_

  std::shared_ptr<CudaDevice> device_;
  mutable std::mutex mutex_;
  std::map<void *, size_t> inUse_;         // block -> its size
  std::multimap<size_t, void *> kept_;     // size -> free block, oldest first
  Stats stats_;
};

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_RUNTIME_DEVICEMEMORYPOOL_H
