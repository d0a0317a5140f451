//===- CpuRuntimeEp.cpp - the runtime half of the CPU EP ------------------===//

#include "providers/cpu/runtime/CpuRuntimeEp.h"

#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/ThreadPool.h"
#include "providers/cpu/runtime/PlanExecutor.h"

#include <algorithm>
#include <cerrno>
#include <thread>

#include <cstdlib>
#include <cstring>

namespace ortc::cpu {

CpuRuntimeEp::CpuRuntimeEp() { identity_ = EpIdentity{"cpu_ep", DeviceType::Cpu, 0}; }

RuntimeEpFactory cpuRuntimeEpFactory() {
  return RuntimeEpFactory{"cpu_ep", {"cpu"}, [] { return std::make_shared<CpuRuntimeEp>(); }};
}

std::vector<EpOptionSpec> CpuRuntimeEp::options() const {
  return {{"threads", "N",
           "Intra-op threads of the CPU EP's runs, 0 for one per core; overrides --threads "
           "for this EP.",
           ""},
          {"kernel_isa", "best|avx512|avx2|generic",
           "The vector ISA of the library kernels (GEMM, convolutions), process-wide: best "
           "(the default) is the widest this CPU has; a narrower one measures what a CPU "
           "without the wider one would run.",
           ""},
          {"max_tensor_bytes", "BYTES",
           "The most bytes one tensor of a run may take (default 2^34, 16 GiB): a plan or "
           "run that needs more is refused before it allocates.",
           ""},
          {"max_arena_bytes", "BYTES",
           "The most bytes a run's memory arena may take (default 2^36, 64 GiB): a plan or "
           "run that needs more is refused before it allocates.",
           ""}};
}

Status CpuRuntimeEp::initialize(const EpConfig &config) {
  if (config.intraOpThreads < 0)
    return Status::error(StatusCode::InvalidArgument, name() + ": intra-op thread count " +
                                                          std::to_string(config.intraOpThreads) +
                                                          " is negative");
  int threads = config.intraOpThreads;
  auto option = config.options.find("threads");
  if (option != config.options.end()) {
    const std::string &text = option->second;
    char *end = nullptr;
    long value = text.empty() ? -1 : std::strtol(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0' || value < 0 || value > 4096)
      return badEpOptionValue(name(), "threads", text, "not a thread count",
                              "an integer from 0 to 4096");
    threads = int(value);
  }
  if (auto isa = config.options.find("kernel_isa"); isa != config.options.end()) {
    const std::string &text = isa->second;
    if (!setSgemmVariant(text == "best" ? nullptr : text.c_str()))
      return badEpOptionValue(name(), "kernel_isa", text, "not an ISA this CPU and build run",
                              "best, generic, or avx2 or avx512 where the CPU has them");
  }
  for (auto [key, limit] : {std::pair{"max_tensor_bytes", &limits_.maxTensorBytes},
                            std::pair{"max_arena_bytes", &limits_.maxArenaBytes}}) {
    auto found = config.options.find(key);
    if (found == config.options.end())
      continue;
    const std::string &text = found->second;
    char *end = nullptr;
    errno = 0;
    unsigned long long value = std::strtoull(text.c_str(), &end, 10);
    if (text.empty() || text[0] == '-' || *end != '\0' || errno == ERANGE || value == 0)
      return badEpOptionValue(name(), key, text, "not a byte count",
                              "a positive integer number of bytes");
    *limit = value;
  }
  if (threads == 0)
    threads = int(std::max(1u, std::thread::hardware_concurrency()));
  // Partitions already loaded keep the pool they were given.
  pool_ = threads > 1 ? std::make_shared<ThreadPool>(threads) : nullptr;
  return Status::ok();
}

Status CpuRuntimeEp::shutdown() {
  pool_.reset();
  return Status::ok();
}

Result<DeviceBuffer> CpuRuntimeEp::allocate(size_t size, size_t alignment) {
  if (alignment < alignof(std::max_align_t))
    alignment = alignof(std::max_align_t);
  if (alignment & (alignment - 1))
    return Status::error(StatusCode::InvalidArgument, name() + ": alignment " +
                                                          std::to_string(alignment) +
                                                          " is not a power of two");
  size_t rounded = (size + alignment - 1) / alignment * alignment;
  void *data = std::aligned_alloc(alignment, rounded ? rounded : alignment);
  if (!data)
    return Status::error(StatusCode::Internal,
                         name() + ": out of memory allocating " + std::to_string(size) + " bytes");
  return DeviceBuffer::owned(data, size, *this, DeviceType::Cpu, 0);
}

Status CpuRuntimeEp::deallocate(DeviceBuffer &&buffer) {
  Status owned = checkOwnership(buffer);
  if (!owned.isOk())
    return owned;
  std::free(buffer.data());
  buffer.release();
  return Status::ok();
}

Status CpuRuntimeEp::copy(const DeviceBuffer &src, DeviceBuffer &dst, size_t size) {
  if (src.device() != DeviceType::Cpu || dst.device() != DeviceType::Cpu)
    return Status::error(StatusCode::InvalidArgument,
                         name() + ": copies only between host buffers");
  if (size > src.size() || size > dst.size())
    return Status::error(StatusCode::InvalidArgument,
                         name() + ": copy of " + std::to_string(size) +
                             " bytes exceeds a buffer (source " + std::to_string(src.size()) +
                             ", destination " + std::to_string(dst.size()) + ")");
  if (size)
    std::memmove(dst.data(), src.data(), size);
  return Status::ok();
}

Result<std::unique_ptr<Fence>> CpuRuntimeEp::copyAsync(const DeviceBuffer &src, DeviceBuffer &dst,
                                                       size_t size) {
  Status status = copy(src, dst, size);
  if (!status.isOk())
    return status;
  return std::unique_ptr<Fence>(new ReadyFence());
}

Result<std::unique_ptr<LoadedPartition>> CpuRuntimeEp::loadContext(const EpContextView &context) {
  Result<std::unique_ptr<PlanExecutor>> loaded = PlanExecutor::load(context, pool_, limits_);
  if (!loaded.isOk())
    return loaded.status();
  return std::unique_ptr<LoadedPartition>(loaded.takeValue());
}

} // namespace ortc::cpu
