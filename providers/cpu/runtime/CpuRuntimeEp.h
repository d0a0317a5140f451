//===- CpuRuntimeEp.h - the runtime half of the CPU EP ----------*- C++ -*-===//
//
// Host memory, memcpy transfers, and load_context for the blobs the CPU EP's
// compile half writes (context source key "ortc_cpu"). No LLVM: generated
// code arrives as a shared object inside the blob.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_RUNTIME_CPURUNTIMEEP_H
#define ORTC_PROVIDERS_CPU_RUNTIME_CPURUNTIMEEP_H

#include "providers/cpu/runtime/PlanLimits.h"
#include "runtime/ep/EpRegistry.h"

#include <memory>

namespace ortc::cpu {

class ThreadPool;

/// The EPContext `source` of CPU EP blobs.
constexpr const char *kCpuContextSource = "ortc_cpu";

class CpuRuntimeEp final : public RuntimeEp {
public:
  CpuRuntimeEp();
  const EpIdentity &identity() const override { return identity_; }
  /// threads=N: this EP's intra-op threads, over the session's setting.
  std::vector<EpOptionSpec> options() const override;
  /// Starts the intra-op threads: the threads option, else
  /// config.intraOpThreads; 0 = one per core.
  Status initialize(const EpConfig &config) override;
  Status shutdown() override;

  Result<DeviceBuffer> allocate(size_t size, size_t alignment) override;
  Status deallocate(DeviceBuffer &&buffer) override;
  Status copy(const DeviceBuffer &src, DeviceBuffer &dst, size_t size) override;
  Result<std::unique_ptr<Fence>> copyAsync(const DeviceBuffer &src, DeviceBuffer &dst,
                                           size_t size) override;
  Status sync() override { return Status::ok(); }

  std::vector<std::string> contextSourceKeys() const override { return {kCpuContextSource}; }
  Result<std::unique_ptr<LoadedPartition>> loadContext(const EpContextView &context) override;

private:
  EpIdentity identity_;
  std::shared_ptr<ThreadPool> pool_; // shared with the partitions it loads
  PlanLimits limits_;
};

/// How the runtime's registry makes the CPU EP (name cpu_ep, alias cpu); the
/// leaf providers/RuntimeEps.cpp lists it when ORTC_ENABLE_CPU is on.
RuntimeEpFactory cpuRuntimeEpFactory();

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_RUNTIME_CPURUNTIMEEP_H
