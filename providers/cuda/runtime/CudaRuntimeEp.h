//===- CudaRuntimeEp.h - the runtime half of the CUDA EP --------*- C++ -*-===//
//
// Device memory, transfers and load_context for the blobs the CUDA EP's
// compile half writes (context source key "ortc_cuda"). The device is opened
// on first use, not at initialize, so a session whose model has no CUDA
// partition runs on a machine without a GPU; a CUDA partition there fails to
// load with "no CUDA driver found ...; partition 'cuda_ep_p0' needs EP
// cuda_ep". The option device=emulation runs the kernels on the host test
// double (CudaDevice.h) instead of a GPU.
//
// Memory: the EP's device arena (DeviceMemoryPool) serves allocate() and
// every partition's intermediates; blocks are kept and reused across runs.
// copyAsync from the host stages through page-locked buffers and returns an
// event as its fence (StagedTransfers); other copies return when done.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_RUNTIME_CUDARUNTIMEEP_H
#define ORTC_PROVIDERS_CUDA_RUNTIME_CUDARUNTIMEEP_H

#include "runtime/ep/EpRegistry.h"

#include <memory>
#include <mutex>
#include <set>

namespace ortc::cuda {

class CudaDevice;
class DeviceMemoryPool;
class StagedTransfers;

class CudaRuntimeEp final : public RuntimeEp {
public:
  CudaRuntimeEp();
  ~CudaRuntimeEp() override;
  const EpIdentity &identity() const override { return identity_; }
  /// device=gpu (default) or emulation; graphs=on (default) or off.
  std::vector<EpOptionSpec> options() const override;
  Status initialize(const EpConfig &config) override;
  Status shutdown() override;

  Result<DeviceBuffer> allocate(size_t size, size_t alignment) override;
  Status deallocate(DeviceBuffer &&buffer) override;
  Status copy(const DeviceBuffer &src, DeviceBuffer &dst, size_t size) override;
  Result<std::unique_ptr<Fence>> copyAsync(const DeviceBuffer &src, DeviceBuffer &dst,
                                           size_t size) override;
  Status sync() override;
  std::vector<std::string> contextSourceKeys() const override;
  Result<std::unique_ptr<LoadedPartition>> loadContext(const EpContextView &context) override;

private:
  /// The device with its memory pool and staging buffers.
  struct Opened {
    std::shared_ptr<CudaDevice> device;
    std::shared_ptr<DeviceMemoryPool> pool;
    std::shared_ptr<StagedTransfers> staged;
  };
  /// The device, opened on first use; the error says why there is none.
  Result<Opened> open();
  Status checkCopySize(const DeviceBuffer &src, const DeviceBuffer &dst, size_t size) const;

  EpIdentity identity_;
  bool emulate_ = false;
  bool graphs_ = true;
  std::mutex mutex_;
  Opened opened_;
};

/// How the runtime's registry makes the CUDA EP (name cuda_ep, alias cuda);
/// providers/RuntimeEps.cpp lists it when ORTC_ENABLE_CUDA is on.
RuntimeEpFactory cudaRuntimeEpFactory();

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_RUNTIME_CUDARUNTIMEEP_H
