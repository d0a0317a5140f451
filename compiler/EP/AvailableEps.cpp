//===- AvailableEps.cpp ----------------------------------------------------===//

#include "compiler/EP/AvailableEps.h"

#include "providers/cpu/compile/CpuCompileEp.h"

namespace ortc {

std::vector<std::string> availableCompileEps() {
  // The CUDA EP (NVRTC, cuBLAS) adds itself here when its issue lands.
  return {"cpu_ep"};
}

std::unique_ptr<CompileEp> createCompileEp(const std::string &name, const EpOptions &options,
                                           std::string &error) {
  if (name == "cpu" || name == "cpu_ep") {
    cpu::CpuCompileOptions cpuOptions;
    cpuOptions.cpu = options.cpu;
    return cpu::createCpuCompileEp(cpuOptions, error);
  }
  std::string list;
  for (const std::string &n : availableCompileEps())
    list += (list.empty() ? "" : ", ") + n;
  error = "no EP named '" + name + "' in this build (available: " + list + ")";
  return nullptr;
}

std::unique_ptr<CompileEp> createCompileEp(const std::string &name, std::string &error) {
  return createCompileEp(name, EpOptions(), error);
}

} // namespace ortc
