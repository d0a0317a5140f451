//===- StagedTransfers.cpp - host-to-device copies through pinned memory --===//

#include "providers/cuda/runtime/StagedTransfers.h"

#include "providers/cuda/runtime/CudaDevice.h"

#include <algorithm>
#include <cstring>

namespace ortc::cuda {

namespace {

constexpr size_t kMinBufferBytes = size_t(64) << 10;

/// Done when the event after the copy is.
class EventFence final : public Fence {
public:
  explicit EventFence(std::shared_ptr<CudaEvent> event) : event_(std::move(event)) {}
  Status wait() override { return event_->wait(); }
  bool isDone() const override {
    Result<bool> done = event_->query();
    return !done.isOk() || done.value(); // a failed query: wait() reports it
  }

private:
  std::shared_ptr<CudaEvent> event_;
};

} // namespace

StagedTransfers::~StagedTransfers() {
  for (Buffer &buffer : buffers_) {
    if (buffer.lastUse)
      (void)buffer.lastUse->wait();
    (void)device_->freePinned(buffer.pinned);
  }
}

Result<StagedTransfers::Buffer *> StagedTransfers::freeBuffer(size_t bytes) {
  Buffer *oldest = nullptr;
  for (Buffer &buffer : buffers_) {
    if (buffer.capacity < bytes)
      continue;
    if (!buffer.lastUse)
      return &buffer;
    Result<bool> done = buffer.lastUse->query();
    if (!done.isOk())
      return done.status();
    if (done.value())
      return &buffer;
    if (!oldest || buffer.lastUseOrder < oldest->lastUseOrder)
      oldest = &buffer;
  }
  if (buffers_.size() < maxBuffers_ || !oldest) {
    // A new buffer; when every slot is taken by smaller ones, the smallest
    // idle one gives way.
    size_t capacity = kMinBufferBytes;
    while (capacity < bytes)
      capacity *= 2;
    if (buffers_.size() >= maxBuffers_) {
      auto smallest = std::min_element(buffers_.begin(), buffers_.end(),
                                       [](const Buffer &a, const Buffer &b) {
                                         return a.capacity < b.capacity;
                                       });
      if (smallest->lastUse)
        if (Status s = smallest->lastUse->wait(); !s.isOk())
          return s;
      if (Status s = device_->freePinned(smallest->pinned); !s.isOk())
        return s;
      buffers_.erase(smallest);
    }
    Result<void *> pinned = device_->allocatePinned(capacity);
    if (!pinned.isOk())
      return pinned.status();
    buffers_.push_back(Buffer{pinned.value(), capacity, nullptr, 0});
    ++stats_.buffers;
    return &buffers_.back();
  }
  ++stats_.waits;
  if (Status s = oldest->lastUse->wait(); !s.isOk())
    return s;
  return oldest;
}

Result<std::unique_ptr<Fence>> StagedTransfers::toDevice(void *device, const void *host,
                                                         size_t bytes) {
  if (bytes == 0)
    return std::unique_ptr<Fence>(new ReadyFence());
  std::lock_guard<std::mutex> lock(mutex_);
  if (bytes > maxBytes_) {
    // Larger than a staging buffer: the driver stages it, and the call
    // returns once the caller's memory may be reused.
    if (Status s = device_->copyToDevice(device, host, bytes); !s.isOk())
      return s;
    ++stats_.direct;
    return std::unique_ptr<Fence>(new ReadyFence());
  }
  Result<Buffer *> found = freeBuffer(bytes);
  if (!found.isOk()) {
    // No staging buffer (page-locked memory may be scarce, in a container):
    // a blocking copy still gets the bytes there.
    if (Status s = device_->copyToDevice(device, host, bytes); !s.isOk())
      return Status::error(s.code(), s.message() + " (staging failed too: " +
                                         found.status().message() + ")");
    ++stats_.direct;
    return std::unique_ptr<Fence>(new ReadyFence());
  }
  Buffer &buffer = *found.value();
  std::memcpy(buffer.pinned, host, bytes);
  if (Status s = device_->copyToDeviceAsync(device, buffer.pinned, bytes); !s.isOk())
    return s;
  Result<std::unique_ptr<CudaEvent>> event = device_->recordEvent();
  if (!event.isOk()) {
    // Without an event nothing says when the buffer is free: wait for it all.
    (void)device_->synchronize();
    return event.status();
  }
  buffer.lastUse = std::shared_ptr<CudaEvent>(event.takeValue());
  buffer.lastUseOrder = ++order_;
  ++stats_.staged;
  return std::unique_ptr<Fence>(new EventFence(buffer.lastUse));
}

StagedTransfers::Stats StagedTransfers::stats() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return stats_;
}

} // namespace ortc::cuda
