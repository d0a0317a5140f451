//===- HostCpu.cpp - what the CPU running this process offers -------------===//
//
// __builtin_cpu_supports reads CPUID once (libgcc's constructor) and also
// checks XGETBV, so "avx" and "avx512f" are reported only when the OS saves
// the wider registers.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/runtime/HostCpu.h"

#include <algorithm>

#include <sys/utsname.h>

namespace ortc::cpu {

std::string hostArchitecture() {
#if defined(__x86_64__)
  return "x86_64";
#elif defined(__aarch64__)
  return "aarch64";
#elif defined(__i386__)
  return "i386";
#elif defined(__riscv) && __riscv_xlen == 64
  return "riscv64";
#elif defined(__powerpc64__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  return "powerpc64le";
#else
  // What the kernel says; the loader refuses blobs for it anyway.
  struct utsname name;
  if (uname(&name) == 0)
    return name.machine;
  return "unknown";
#endif
}

std::vector<std::string> hostCpuFeatures() {
  std::vector<std::string> features;
#if defined(__x86_64__) || defined(__i386__)
  // Callable before constructors have run only after this.
  __builtin_cpu_init();
#define ORTC_CHECK_FEATURE(name)                                                                   \
  if (__builtin_cpu_supports(name))                                                                \
    features.push_back(name);
  ORTC_X86_CPU_FEATURES(ORTC_CHECK_FEATURE)
#undef ORTC_CHECK_FEATURE
#endif
  return features;
}

std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &required) {
  std::vector<std::string> have = hostCpuFeatures();
  std::vector<std::string> missing;
  for (const std::string &name : required)
    if (std::find(have.begin(), have.end(), name) == have.end())
      missing.push_back(name);
  return missing;
}

} // namespace ortc::cpu
