//===- HostCpu.h - what the CPU running this process offers ------*- C++ -*-===//
//
// A CPU blob records the instruction-set features its machine code needs
// (CpuTarget::requiredFeatures on the compile side); before loading the code
// the runtime asks which of them this CPU lacks, so that a blob compiled for a
// newer CPU is refused with a message instead of dying on SIGILL.
//
// Plain C++17: the runtime links this, never LLVM. The feature names are the
// ones both GCC's __builtin_cpu_supports and LLVM's X86 backend use.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_RUNTIME_HOSTCPU_H
#define ORTC_PROVIDERS_CPU_RUNTIME_HOSTCPU_H

#include <string>
#include <vector>

/// The x86 features a blob may require, oldest first: an X-macro so that the
/// compile side (which asks LLVM) and the runtime (which asks the CPU) share
/// one list. Features every x86-64 CPU has (cmov, sse2, ...) are left out.
#define ORTC_X86_CPU_FEATURES(X)                                                                   \
  X("sse3")                                                                                        \
  X("ssse3")                                                                                       \
  X("sse4.1")                                                                                      \
  X("sse4.2")                                                                                      \
  X("popcnt")                                                                                      \
  X("avx")                                                                                         \
  X("avx2")                                                                                        \
  X("fma")                                                                                         \
  X("f16c")                                                                                        \
  X("bmi")                                                                                         \
  X("bmi2")                                                                                        \
  X("lzcnt")                                                                                       \
  X("movbe")                                                                                       \
  X("avxvnni")                                                                                     \
  X("avx512f")                                                                                     \
  X("avx512cd")                                                                                    \
  X("avx512bw")                                                                                    \
  X("avx512dq")                                                                                    \
  X("avx512vl")                                                                                    \
  X("avx512vnni")                                                                                  \
  X("avx512bf16")                                                                                  \
  X("avx512fp16")

namespace ortc::cpu {

/// Every name ORTC_X86_CPU_FEATURES lists, in its order.
inline constexpr const char *kX86CpuFeatures[] = {
#define ORTC_FEATURE_NAME(name) name,
    ORTC_X86_CPU_FEATURES(ORTC_FEATURE_NAME)
#undef ORTC_FEATURE_NAME
};

/// The architecture this process runs as, in the spelling of a target triple:
/// "x86_64", "aarch64", ...
std::string hostArchitecture();

/// The features of ORTC_X86_CPU_FEATURES this CPU (and the OS, for the AVX
/// register state) supports, in the list's order; empty on non-x86 hosts.
std::vector<std::string> hostCpuFeatures();

/// The names in `required` that hostCpuFeatures() lacks, in their order. A
/// name this runtime does not know is missing: it cannot be checked.
std::vector<std::string> missingCpuFeatures(const std::vector<std::string> &required);

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_RUNTIME_HOSTCPU_H
