//===- TargetCpu.cpp - the x86-64 CPU that kernels are compiled for -------===//
//
// Which features a target enables is asked of the X86 backend itself (an
// MCSubtargetInfo for the CPU and feature string), so CPU names, levels and
// host detection all agree with what code generation will use.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/TargetCpu.h"

#include "providers/cpu/runtime/HostCpu.h"

#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/MC/MCSubtargetInfo.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"
#include "llvm/TargetParser/Triple.h"
#include "llvm/TargetParser/X86TargetParser.h"

#include <algorithm>
#include <mutex>

using namespace llvm;

namespace ortc::cpu {
namespace {

// The code is an ELF shared object for Linux whatever machine compiles it.
constexpr const char *kTriple = "x86_64-unknown-linux-gnu";

Error makeError(const Twine &message) {
  return createStringError(inconvertibleErrorCode(), message);
}

Error unknownCpu(StringRef name) {
  return makeError("unknown CPU '" + name +
                   "': expected host, x86-64, x86-64-v2, x86-64-v3, x86-64-v4 or an x86-64 CPU "
                   "name LLVM knows (for example skylake-avx512, znver4)");
}

Expected<const Target *> lookupX86() {
  initializeCpuTargets();
  std::string error;
  const Target *target = TargetRegistry::lookupTarget(Triple(kTriple), error);
  if (!target)
    return makeError("LLVM's X86 target is not available: " + error);
  return target;
}

bool has(const std::vector<std::string> &features, StringRef name) {
  return std::find(features.begin(), features.end(), name) != features.end();
}

/// The widest vector level, FMA next to AVX2 (AVX-512 implies it), then the
/// extensions that change which kernels are fast.
std::string hardwareArchitecture(const std::vector<std::string> &features) {
  std::string result = "x86_64";
  if (has(features, "avx512f")) {
    result += "+avx512f";
  } else if (has(features, "avx2")) {
    result += "+avx2";
    if (has(features, "fma"))
      result += "+fma";
  } else if (has(features, "avx")) {
    result += "+avx";
  } else if (has(features, "sse4.2")) {
    result += "+sse4.2";
  }
  for (const char *extra : {"avx512bw", "avx512vnni", "avx512bf16", "avx512fp16", "avxvnni"})
    if (has(features, extra))
      result += std::string("+") + extra;
  return result;
}

} // namespace

void initializeCpuTargets() {
  static std::once_flag once;
  std::call_once(once, [] {
    LLVMInitializeX86TargetInfo();
    LLVMInitializeX86Target();
    LLVMInitializeX86TargetMC();
    LLVMInitializeX86AsmPrinter();
    LLVMInitializeX86AsmParser(); // inline assembly in a module
    InitializeNativeTarget();
    InitializeNativeTargetAsmPrinter();
  });
}

Expected<CpuTarget> resolveCpuTarget(StringRef name) {
  Expected<const Target *> target = lookupX86();
  if (!target)
    return target.takeError();
  Triple triple(kTriple);

  CpuTarget result;
  result.triple = kTriple;
  if (name == "host") {
    Triple host(sys::getProcessTriple());
    if (host.getArch() != Triple::x86_64)
      return makeError("host: the CPU EP generates x86-64 code only and this host is " +
                       host.getArchName() + "; pass target=x86-64-v3 (or another x86-64 level)");
    result.cpu = sys::getHostCPUName().str();
    // A CPU newer than this LLVM comes back as a name it cannot parse; its
    // features still say what it has.
    if (X86::parseArchX86(result.cpu, /*Only64Bit=*/true) == X86::CK_None)
      result.cpu = "x86-64";
    StringMap<bool> hostFeatures = sys::getHostCPUFeatures();
    SmallVector<std::string> flags;
    for (const auto &feature : hostFeatures)
      flags.push_back((feature.second ? "+" : "-") + feature.first().str());
    std::sort(flags.begin(), flags.end()); // StringMap order is unspecified
    result.features = join(flags, ",");
  } else {
    // Only64Bit: i686 and friends are X86 CPUs but cannot run x86-64 code.
    if (name.empty() || X86::parseArchX86(name, /*Only64Bit=*/true) == X86::CK_None)
      return unknownCpu(name);
    // A generic subtarget asks the backend without the warning an unknown
    // CPU name would print.
    std::unique_ptr<MCSubtargetInfo> generic(
        (*target)->createMCSubtargetInfo(triple, "x86-64", ""));
    if (!generic || !generic->isCPUStringValid(name))
      return unknownCpu(name);
    result.cpu = name.str();
  }

  std::unique_ptr<MCSubtargetInfo> subtarget(
      (*target)->createMCSubtargetInfo(triple, result.cpu, result.features));
  if (!subtarget)
    return makeError("LLVM's X86 target cannot describe CPU '" + result.cpu + "'");
  for (const char *feature : kX86CpuFeatures)
    if (subtarget->checkFeatures(std::string("+") + feature))
      result.requiredFeatures.push_back(feature);
  result.hardwareArchitecture = hardwareArchitecture(result.requiredFeatures);
  return result;
}

Expected<std::unique_ptr<TargetMachine>> createTargetMachine(const CpuTarget &cpu) {
  initializeCpuTargets();
  Triple triple(cpu.triple);
  std::string error;
  const Target *target = TargetRegistry::lookupTarget(triple, error);
  if (!target)
    return makeError("no LLVM target for triple '" + cpu.triple + "': " + error);
  TargetOptions options;
  options.FunctionSections = true;
  options.DataSections = true;
  std::unique_ptr<TargetMachine> machine(
      target->createTargetMachine(triple, cpu.cpu, cpu.features, options, Reloc::PIC_, std::nullopt,
                                  CodeGenOptLevel::Aggressive));
  if (!machine)
    return makeError("LLVM cannot create a target machine for " + cpu.triple + " (" + cpu.cpu +
                     ")");
  return machine;
}

} // namespace ortc::cpu
