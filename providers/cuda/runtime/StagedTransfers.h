//===- StagedTransfers.h - host-to-device copies through pinned memory -*- C++ -*-===//
//
// The CUDA EP's copyAsync from the host: the caller's bytes are copied into
// a page-locked staging buffer, an async copy is queued from there, and the
// fence returned is an event recorded after it, so the caller may reuse its
// buffer at once and the device copies while the host goes on. A staging
// buffer is written again only once the event of its last copy is done (a
// free one is taken, or a new one made, or the oldest waited for). Copies
// larger than a staging buffer, or made when no page-locked memory can be
// had, go straight from the caller's memory, blocking. The caller orders
// these calls with the stream's other users (CudaDevice::streamOrder).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_RUNTIME_STAGEDTRANSFERS_H
#define ORTC_PROVIDERS_CUDA_RUNTIME_STAGEDTRANSFERS_H

#include "runtime/ep/RuntimeEp.h"

#include <memory>
#include <mutex>
#include <vector>

namespace ortc::cuda {

class CudaDevice;
class CudaEvent;

class StagedTransfers {
public:
  /// At most `maxBuffers` staging buffers of up to `maxBytes` each.
  StagedTransfers(std::shared_ptr<CudaDevice> device, size_t maxBuffers = 8,
                  size_t maxBytes = size_t(64) << 20)
      : device_(std::move(device)), maxBuffers_(maxBuffers), maxBytes_(maxBytes) {}
  ~StagedTransfers();
  StagedTransfers(const StagedTransfers &) = delete;
  StagedTransfers &operator=(const StagedTransfers &) = delete;

  /// Copies `bytes` from host memory at `host` to `device`.
  Result<std::unique_ptr<Fence>> toDevice(void *device, const void *host, size_t bytes);

  struct Stats {
    size_t staged = 0, direct = 0, buffers = 0, waits = 0;
  };
  Stats stats() const;

private:
  struct Buffer {
    void *pinned = nullptr;
    size_t capacity = 0;
    std::shared_ptr<CudaEvent> lastUse; // null: never used
    uint64_t lastUseOrder = 0;
  };
  /// A staging buffer of at least `bytes` whose last copy is done; under mutex_.
  Result<Buffer *> freeBuffer(size_t bytes);

  std::shared_ptr<CudaDevice> device_;
  size_t maxBuffers_, maxBytes_;
  mutable std::mutex mutex_;
  std::vector<Buffer> buffers_;
  uint64_t order_ = 0;
  Stats stats_;
};

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_RUNTIME_STAGEDTRANSFERS_H
