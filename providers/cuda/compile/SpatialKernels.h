//===- SpatialKernels.h - CUDA kernels for 2-D windows ----------*- C++ -*-===//
//
// The spatial family: Conv as im2col plus one strided-batched cuBLAS GEMM
// per image (the groups are the batch; a 1x1 stride-1 unpadded Conv reads
// its input as the column matrix directly), and MaxPool / AveragePool with
// one thread per output element. Inputs are NCHW; the window's geometry is
// fixed at compile time except the pads of auto_pad SAME, which the runtime
// derives from the input size with WindowGeometry.h like every other
// consumer of ONNX's window rule. Both kernels take
//
//   (const T *x, T *y, ortc_window g)
//
// where ortc_window holds N, C, H, W, OH, OW, the kernel, strides,
// dilations, the applied begin pads and, for im2col, the image to unfold.
// Element types f32, f16 and bf16.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_COMPILE_SPATIALKERNELS_H
#define ORTC_PROVIDERS_CUDA_COMPILE_SPATIALKERNELS_H

#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>

namespace mlir {
class Operation;
}

namespace ortc::cuda {

constexpr int kSpatialThreadsPerBlock = 256;

/// Whether the CUDA EP compiles `op` (Conv, MaxPool, AveragePool) with these
/// kernels; when it does not but the op is one of them, `why` says why.
bool isSpatialKernelOp(mlir::Operation *op, std::string *why = nullptr);

/// The window as the plan records it, from `op`'s attributes.
struct WindowAttrs {
  int64_t kernel[2] = {1, 1}, stride[2] = {1, 1}, dilation[2] = {1, 1};
  int64_t padBegin[2] = {0, 0}, padEnd[2] = {0, 0};
  int autoPad = 0; // ortc::AutoPad
  bool ceilMode = false;
  int64_t group = 1;
  enum class Pool { None, Max, AverageIncludingPad, AverageExcludingPad } pool = Pool::None;
  /// A Conv whose input is its own column matrix: no im2col kernel.
  bool pointwise() const;
};
WindowAttrs windowAttrs(mlir::Operation *op);

/// The CUDA C++ of `op`'s kernel (im2col for Conv, the pool itself), named
/// `name`; empty for a pointwise Conv.
mlir::FailureOr<std::string> emitSpatialKernel(mlir::Operation *op, const std::string &name);

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_COMPILE_SPATIALKERNELS_H
