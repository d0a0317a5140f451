//===- RuntimeEps.cpp - the runtime-side EPs of this build ----------------===//
//
// The leaf that decides which EPs the runtime (the ortc tool and
// libortc_runtime.so) has: one entry per EP, switched by CMake's
// ORTC_ENABLE_<EP> option. A new EP adds an entry here and a block in
// CompileEps.cpp; nothing under compiler/, runtime/ or dialects/ changes.
//
//===----------------------------------------------------------------------===//

#include "runtime/ep/EpRegistry.h"

#if ORTC_ENABLE_CPU
#include "providers/cpu/runtime/CpuRuntimeEp.h"
#endif
#if ORTC_ENABLE_CUDA
#include "providers/cuda/runtime/CudaRuntimeEp.h"
#endif

namespace ortc {

const std::vector<RuntimeEpFactory> &builtinRuntimeEpFactories() {
  static const std::vector<RuntimeEpFactory> factories = {
#if ORTC_ENABLE_CPU
    cpu::cpuRuntimeEpFactory(),
#endif
#if ORTC_ENABLE_CUDA
    cuda::cudaRuntimeEpFactory(),
#endif
  };
  return factories;
}

Result<EpRegistry> createBuiltinEpRegistry() {
  return EpRegistry::fromFactories(builtinRuntimeEpFactories());
}

} // namespace ortc
