//===- Passes.h - the CPU EP's kernel lowering passes -----------*- C++ -*-===//
//
// Declared in Passes.td; KernelPipeline.h strings them together.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_COMPILE_PASSES_H
#define ORTC_PROVIDERS_CPU_COMPILE_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir {
class ModuleOp;
namespace func {
class FuncOp;
}
} // namespace mlir

namespace ortc::cpu {

#define GEN_PASS_DECL
#include "providers/cpu/compile/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "providers/cpu/compile/Passes.h.inc"

/// Registers every pass of Passes.td (for ortc-opt and the lit tests).
inline void registerCpuPasses() { registerOrtcCpuPasses(); }

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_COMPILE_PASSES_H
