//===- TargetCpu.h - the x86-64 CPU that kernels are compiled for -*- C++ -*-===//
//
// `ortc compile --cpu=<name>` picks the instruction set of the CPU kernels:
// "host" (the default: this machine's CPU and features), an x86-64
// micro-architecture level ("x86-64", "x86-64-v2", "x86-64-v3",
// "x86-64-v4"), or any x86-64 CPU name LLVM's X86 backend knows ("znver4",
// "sapphirerapids", ...). The result also says which features the runtime
// must find on the CPU it runs on before it loads the code.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_COMPILE_TARGETCPU_H
#define ORTC_PROVIDERS_CPU_COMPILE_TARGETCPU_H

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <memory>
#include <string>
#include <vector>

namespace llvm {
class TargetMachine;
} // namespace llvm

namespace ortc::cpu {

struct CpuTarget {
  std::string triple;   // "x86_64-unknown-linux-gnu"
  std::string cpu;      // LLVM CPU name: "znver3", "x86-64-v3", ...
  std::string features; // LLVM feature string ("+avx2,-avx512f,..."); may be empty
  /// The names of kX86CpuFeatures (runtime/HostCpu.h) this target enables;
  /// the runtime refuses the code on a CPU that lacks one.
  std::vector<std::string> requiredFeatures;
  /// Compact, key features only: "x86_64", "x86_64+avx2+fma",
  /// "x86_64+avx512f+avx512bw". Informational (EPContext's
  /// hardware_architecture); requiredFeatures is what is checked.
  std::string hardwareArchitecture;
};

/// Registers LLVM's X86 target (and the native one); idempotent, thread-safe.
void initializeCpuTargets();

/// Resolves a --cpu value. Errors are one line; an unknown name lists the
/// accepted levels.
llvm::Expected<CpuTarget> resolveCpuTarget(llvm::StringRef name = "host");

/// A TargetMachine for `target`: position-independent code, -O3 code
/// generation, function and data sections (for the linker's --gc-sections).
llvm::Expected<std::unique_ptr<llvm::TargetMachine>> createTargetMachine(const CpuTarget &target);

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_COMPILE_TARGETCPU_H
