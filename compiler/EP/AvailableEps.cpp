//===- AvailableEps.cpp ----------------------------------------------------===//

#include "compiler/EP/AvailableEps.h"

namespace ortc {

std::vector<std::string> availableCompileEps() {
  // The CPU EP (LLVM) and the CUDA EP (NVRTC, cuBLAS) add themselves here.
  return {};
}

std::unique_ptr<CompileEp> createCompileEp(const std::string &name, std::string &error) {
  std::vector<std::string> names = availableCompileEps();
  std::string list;
  for (const std::string &n : names)
    list += (list.empty() ? "" : ", ") + n;
  error = "no EP named '" + name + "' in this build (available: " +
          (list.empty() ? std::string("none yet; the CPU and CUDA EPs arrive with their issues")
                        : list) +
          ")";
  return nullptr;
}

} // namespace ortc
