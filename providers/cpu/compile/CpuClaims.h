//===- CpuClaims.h - what the CPU EP runs, and how --------------*- C++ -*-===//
//
// One place answers both "does cpu_ep take this node?" (supportsOp) and "how
// does it run it?" (the plan builder), so the two cannot drift apart: every
// node matchCpuOp accepts has a class other than Unsupported, and the class's
// code path accepts everything matchCpuOp let through.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_COMPILE_CPUCLAIMS_H
#define ORTC_PROVIDERS_CPU_COMPILE_CPUCLAIMS_H

#include "compiler/EP/CompileEp.h"

#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace ortc::cpu {

enum class CpuOpClass {
  Unsupported,
  Elementwise, // fused into a generated kernel
  Structured,  // a generated kernel of its own (Transpose, reductions, Softmax)
  View,        // shares its input's bytes (Reshape, Flatten, Squeeze, ...)
  Library,     // a call into kernels/ (KernelApi.h)
  ControlFlow, // If, Loop: their bodies become sub-plans of the partition's plan
  Sequence,    // makes or reads a sequence or optional: a step the executor runs
};

/// How the CPU EP runs `op` (an op it claimed).
CpuOpClass classifyCpuOp(mlir::Operation *op);

/// A Squeeze whose output is its input without the squeezed dims: those of
/// them the compiler cannot prove are 1 (the plan checks them at run time);
/// nullopt for any other op or form.
std::optional<llvm::SmallVector<int32_t>> squeezedDynamicDims(mlir::Operation *op,
                                                              const SymbolicShapes &shapes);

/// The library kernel name for a Library op ("Conv", "LayerNormalization").
std::string libraryKernelFor(mlir::Operation *op);


/// The CPU EP's answer for one node: supported with a cost, or a decline that
/// names what was rejected and what is accepted.
KernelMatch matchCpuOp(const NodeQuery &query, const std::string &epName);

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_COMPILE_CPUCLAIMS_H
