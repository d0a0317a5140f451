//===- Passes.h - the CUDA EP's passes --------------------------*- C++ -*-===//
//
// Declared in Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_COMPILE_PASSES_H
#define ORTC_PROVIDERS_CUDA_COMPILE_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir {
class ModuleOp;
namespace func {
class FuncOp;
}
} // namespace mlir

namespace ortc::cuda {

#define GEN_PASS_DECL
#include "providers/cuda/compile/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "providers/cuda/compile/Passes.h.inc"

/// What cuda-fold-gemm-epilogue does to `fn`: the number of products folded.
unsigned foldGemmEpilogue(mlir::func::FuncOp fn);

/// What cuda-split-gemm-bias does to `fn`: the number of Gemm ops split.
unsigned splitGemmBias(mlir::func::FuncOp fn);

/// What cuda-split-to-slices does to `fn`: the number of Splits rewritten.
unsigned splitToSlices(mlir::func::FuncOp fn);

/// What cuda-expand-attention does to `fn`: the number of ops expanded.
unsigned expandAttention(mlir::func::FuncOp fn);

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_COMPILE_PASSES_H
