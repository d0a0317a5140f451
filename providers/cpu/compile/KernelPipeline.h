//===- KernelPipeline.h - CPU kernels from onnx ops to LLVM IR --*- C++ -*-===//
//
// Input: a module of kernels, each
//
//   func.func @k(%x: memref<?x512xf32>, %b: memref<512xf32>, %out: memref<?x512xf32>)
//       attributes {ortc.kernel} {
//     %tx = bufferization.to_tensor %x restrict : memref<?x512xf32> to tensor<?x512xf32>
//     %tb = bufferization.to_tensor %b restrict : memref<512xf32> to tensor<512xf32>
//     %s = "onnx.Add"(%tx, %tb) : (tensor<?x512xf32>, tensor<512xf32>) -> tensor<?x512xf32>
//     %r = "onnx.Relu"(%s) : (tensor<?x512xf32>) -> tensor<?x512xf32>
//     bufferization.materialize_in_destination %r in restrict writable %out
//         : (tensor<?x512xf32>, memref<?x512xf32>) -> ()
//     return
//   }
//
// (inputs then outputs, identity layouts, no results; the ops inside are those
// isLowerableElementwiseOp accepts.)
//
// Output: LLVM IR in which each such @k is an exported
//
//   void k(void **args);
//
// args[i] points to the i-th memref argument's descriptor
//   struct { T *allocated; T *aligned; int64_t offset; int64_t sizes[rank];
//            int64_t strides[rank]; }        (rank 0: the first three only)
// and everything else is internal. The kernel reads `aligned` and the sizes
// of `?` dims; the layout is the static identity one, so offset must be 0
// and strides row-major (they are not read). i1 elements are one byte
// (0 or 1). Outputs must not alias inputs (the inputs are `restrict`). The module has no target triple or data
// layout and is not optimized: the emitter sets both and runs the O2/O3
// pipeline. External symbols it may call: libm (sinf, cosf, powf, fmodf and
// the f64 functions; f32 exp/log/tanh/erf are inlined polynomials), and
// malloc/free when an intermediate cannot be fused away.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_COMPILE_KERNELPIPELINE_H
#define ORTC_PROVIDERS_CPU_COMPILE_KERNELPIPELINE_H

#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <memory>

namespace llvm {
class LLVMContext;
class Module;
} // namespace llvm

namespace mlir {
class DialectRegistry;
class ModuleOp;
class OpPassManager;
} // namespace mlir

namespace ortc::cpu {

struct KernelPipelineOptions {
  /// f32 lanes of a vector register: 8 for AVX2, 16 for AVX-512, 4 for SSE/NEON.
  int64_t vectorWidth = 8;
  /// Vector registers per innermost tile.
  int64_t unroll = 2;
};

/// Every dialect and interface model the pipeline needs (for the context that
/// builds the kernel module, and for ortc-opt).
void registerKernelPipelineDialects(mlir::DialectRegistry &registry);

/// The passes from the input form above to the LLVM dialect, packed entries
/// included. Runs on a builtin.module.
void buildCpuKernelLoweringPipeline(mlir::OpPassManager &pm,
                                    const KernelPipelineOptions &options = {});

/// Runs the pipeline on `kernels` (in place) and translates it into a new
/// llvm::Module in `llvmContext`. On failure the diagnostics have gone to the
/// context's handler (each error names the op) and the result is failure.
mlir::FailureOr<std::unique_ptr<llvm::Module>>
lowerKernelsToLLVMIR(mlir::ModuleOp kernels, llvm::LLVMContext &llvmContext,
                     const KernelPipelineOptions &options = {});

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_COMPILE_KERNELPIPELINE_H
