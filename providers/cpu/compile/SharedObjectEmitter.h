//===- SharedObjectEmitter.h - LLVM IR to a position-independent .so -*- C++ -*-===//
//
// The CPU EP's kernels end as one ELF shared object inside the blob:
// the LLVM module is optimized at -O3 for the chosen CpuTarget (the new pass
// manager with the TargetMachine, so the vectorizers see the target's costs),
// compiled to an object in memory and linked by LLD in-process. The runtime
// loads the bytes with LoadedSharedObject (runtime/SharedObjectLoader.h).
//
// Undefined symbols (expf, tanhf, memcpy, ...) stay undefined and are bound
// when the runtime loads the object, from the libc and libm it already has.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_COMPILE_SHAREDOBJECTEMITTER_H
#define ORTC_PROVIDERS_CPU_COMPILE_SHAREDOBJECTEMITTER_H

#include "providers/cpu/compile/TargetCpu.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <string>
#include <vector>

namespace llvm {
class Module;
class TargetMachine;
} // namespace llvm

namespace ortc::cpu {

struct SharedObjectOptions {
  std::string soname = "libortc_cpu_kernels.so";
};

/// Optimizes `module` for `target`, compiles and links it; returns the bytes
/// of the shared object. The module is modified (triple, data layout, target
/// attributes, optimized). Every function with default visibility is
/// exported. Errors are one line. Thread-safe for modules in different
/// LLVMContexts; links are serialized.
///
/// LLD resets LLVM's cl::opt options to their defaults when it links: set no
/// option that must outlive a link.
llvm::Expected<std::vector<char>> emitSharedObject(llvm::Module &module, const CpuTarget &target,
                                                   const SharedObjectOptions &options = {});

// The steps of emitSharedObject, for callers that want one of them.

/// Sets the module's triple, data layout and each function's target-cpu and
/// target-features from `machine`, verifies it, and runs the -O3 pipeline.
llvm::Error optimizeModule(llvm::Module &module, llvm::TargetMachine &machine);

/// Compiles a module (optimized or not) to an ELF relocatable object.
llvm::Expected<std::vector<char>> emitObjectFile(llvm::Module &module,
                                                 llvm::TargetMachine &machine);

/// Links one ELF relocatable object into a shared object with LLD, in a
/// private temporary directory that is removed whatever happens.
llvm::Expected<std::vector<char>> linkSharedObject(llvm::ArrayRef<char> object,
                                                   llvm::StringRef soname);

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_COMPILE_SHAREDOBJECTEMITTER_H
