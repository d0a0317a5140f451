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
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_RUNTIME_CUDARUNTIMEEP_H
#define ORTC_PROVIDERS_CUDA_RUNTIME_CUDARUNTIMEEP_H

#include "runtime/ep/EpRegistry.h"

#include <memory>
#include <mutex>
#include <set>

namespace ortc::cuda {

class CudaDevice;

class CudaRuntimeEp final : public RuntimeEp {
public:
  CudaRuntimeEp();
  ~CudaRuntimeEp() override;
  const EpIdentity &identity() const override { return identity_; }
  /// device=gpu (default) or emulation.
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
  /// The device, opened on first use; the error says why there is none.
  Result<std::shared_ptr<CudaDevice>> device();

  EpIdentity identity_;
  bool emulate_ = false;
  std::mutex mutex_;
  std::shared_ptr<CudaDevice> device_;
};

/// How the runtime's registry makes the CUDA EP (name cuda_ep, alias cuda);
/// providers/RuntimeEps.cpp lists it when ORTC_ENABLE_CUDA is on.
RuntimeEpFactory cudaRuntimeEpFactory();

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_RUNTIME_CUDARUNTIMEEP_H
