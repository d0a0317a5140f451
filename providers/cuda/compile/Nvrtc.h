//===- Nvrtc.h - CUDA C++ to cubin and PTX with NVRTC -----------*- C++ -*-===//
//
// The CUDA EP's compiler back end: one CUDA C++ translation unit (a fused
// kernel the EP emits) becomes a cubin for each requested architecture, plus
// PTX for forward compatibility. Compile side only: the runtime half loads
// what this produces and never links NVRTC.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_COMPILE_NVRTC_H
#define ORTC_PROVIDERS_CUDA_COMPILE_NVRTC_H

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ortc::cuda {

/// A GPU architecture as NVRTC names it: sm_90 is {9, 0}.
struct CudaArch {
  int major = 9;
  int minor = 0;

  std::string name() const;        ///< "sm_90": the cubin's real architecture
  std::string virtualName() const; ///< "compute_90": the PTX's
  friend bool operator==(const CudaArch &a, const CudaArch &b) {
    return a.major == b.major && a.minor == b.minor;
  }
};

/// "sm_90" (or "90", "sm_86", ...); nullopt for anything else or an
/// architecture older than sm_50.
std::optional<CudaArch> parseCudaArch(std::string_view text);

/// What one compile gives.
struct CudaBinary {
  CudaArch arch;
  std::vector<uint8_t> cubin; ///< an ELF with the kernels' SASS for `arch`
  std::string ptx;            ///< PTX for arch.virtualName()
  std::string log;            ///< NVRTC's log: warnings and ptxas's report
};

/// Compiles `source`, whose file name in diagnostics is `name`, for `arch`
/// with C++17; ptxas reports its resource use into `out.log`. False on
/// failure, with `error` one line ("name (sm_90): name(3): error: ...") and
/// the whole log in `out.log`.
bool compileCuda(const std::string &source, const std::string &name, const CudaArch &arch,
                 CudaBinary &out, std::string &error);

/// ptxas's resource report for one kernel (from `--ptxas-options=-v`).
struct KernelResources {
  std::string kernel;
  int registers = 0;
  int64_t spillStores = 0, spillLoads = 0; ///< bytes
  int64_t sharedBytes = 0, stackBytes = 0;
};

/// Reads the per-kernel reports ptxas wrote into an NVRTC log.
std::vector<KernelResources> parsePtxasReport(const std::string &log);

/// The NVRTC version this build links, "13.0".
std::string nvrtcVersion();

/// The names of the function symbols (kernels and device functions) in a
/// cubin, or nullopt, with `error`, when it is not a CUDA ELF.
std::optional<std::vector<std::string>> cubinFunctionSymbols(const std::vector<uint8_t> &cubin,
                                                             std::string &error);

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_COMPILE_NVRTC_H
