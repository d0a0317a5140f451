//===- DeviceMemoryPool.cpp - the CUDA EP's device arena ------------------===//

#include "providers/cuda/runtime/DeviceMemoryPool.h"

#include "providers/cuda/runtime/CudaDevice.h"

#include <algorithm>

namespace ortc::cuda {

namespace {
constexpr size_t kGranule = 512;
} // namespace

DeviceMemoryPool::~DeviceMemoryPool() {
  std::lock_guard<std::mutex> lock(mutex_);
  (void)releaseKept();
  // Blocks still in use belong to partitions or buffers that outlived the
  // EP; the device frees them with itself.
}

Result<void *> DeviceMemoryPool::allocate(size_t bytes) {
  size_t size = (std::max<size_t>(bytes, 1) + kGranule - 1) / kGranule * kGranule;
  std::lock_guard<std::mutex> lock(mutex_);
  auto fit = kept_.lower_bound(size);
  if (fit != kept_.end() && fit->first / 2 <= size) {
    void *block = fit->second;
    size_t blockSize = fit->first;
    kept_.erase(fit);
    inUse_[block] = blockSize;
    stats_.bytesKept -= blockSize;
    stats_.bytesInUse += blockSize;
    return block;
  }
  Result<void *> memory = device_->allocate(size);
  if (!memory.isOk() && !kept_.empty()) {
    // Out of memory, maybe only because of what the pool keeps.
    if (Status s = releaseKept(); !s.isOk())
      return s;
    memory = device_->allocate(size);
  }
  if (!memory.isOk())
    return memory.status();
  ++stats_.deviceAllocations;
  inUse_[memory.value()] = size;
  stats_.bytesInUse += size;
  return memory.value();
}

Status DeviceMemoryPool::free(void *pointer) {
  if (!pointer)
    return Status::ok();
  std::lock_guard<std::mutex> lock(mutex_);
  auto found = inUse_.find(pointer);
  if (found == inUse_.end())
    return Status::error(StatusCode::InvalidArgument,
                         "CUDA memory pool: free of a block it did not hand out (or freed twice)");
  kept_.emplace(found->second, pointer);
  stats_.bytesInUse -= found->second;
  stats_.bytesKept += found->second;
  inUse_.erase(found);
  return Status::ok();
}

Status DeviceMemoryPool::trim() {
  std::lock_guard<std::mutex> lock(mutex_);
  return releaseKept();
}

Status DeviceMemoryPool::releaseKept() {
  Status first = Status::ok();
  for (auto &[size, block] : kept_) {
    Status s = device_->free(block);
    if (!s.isOk() && first.isOk())
      first = s;
  }
  kept_.clear();
  stats_.bytesKept = 0;
  return first;
}

DeviceMemoryPool::Stats DeviceMemoryPool::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

} // namespace ortc::cuda
