//===- CompileEps.cpp - the compile-side EPs of this build ----------------===//
//
// The leaf that decides which EPs `ortc compile` has: one block per EP,
// switched by CMake's ORTC_ENABLE_<EP> option. A new EP adds a block here and
// one in RuntimeEps.cpp; nothing under compiler/, runtime/ or dialects/
// changes.
//
//===----------------------------------------------------------------------===//

#include "compiler/EP/CompileEpRegistry.h"

#if ORTC_ENABLE_CPU
#include "providers/cpu/compile/CpuCompileEp.h"
#endif
#if ORTC_ENABLE_CUDA
#include "providers/cuda/compile/CudaCompileEp.h"
#endif

#include <cstdio>
#include <cstdlib>

namespace ortc {

namespace {
CompileEpRegistry makeBuiltinCompileEps() {
  CompileEpRegistry registry;
  std::vector<CompileEpPlugin> plugins;
#if ORTC_ENABLE_CPU
  plugins.push_back(cpu::cpuCompileEpPlugin());
#endif
#if ORTC_ENABLE_CUDA
  plugins.push_back(cuda::cudaCompileEpPlugin());
#endif
  for (CompileEpPlugin &plugin : plugins) {
    std::string error;
    if (!registry.add(std::move(plugin), error)) {
      // Two built-in EPs with one name is a build mistake, not a user error.
      std::fprintf(stderr, "ortc: internal error: %s\n", error.c_str());
      std::abort();
    }
  }
  return registry;
}
} // namespace

const CompileEpRegistry &builtinCompileEps() {
  static const CompileEpRegistry registry = makeBuiltinCompileEps();
  return registry;
}

} // namespace ortc
