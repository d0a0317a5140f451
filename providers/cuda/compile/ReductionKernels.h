//===- ReductionKernels.h - CUDA kernels that reduce along axes -*- C++ -*-===//
//
// The reduction family, one kernel per op: Reduce{Sum,Mean,Max,Min} over a
// contiguous run of axes, GlobalAveragePool and GlobalMaxPool (a mean or a
// max over the spatial dims), Softmax and LogSoftmax along one axis,
// LayerNormalization (ortc.layer_norm) and RMSNormalization over the trailing
// dims. Each sees its input as [outer, R, inner] (R the reduced extent) and
// gives one thread block to each (outer, inner) pair: the block's threads
// stride over R, combine through warp shuffles and shared memory, and write
// the pair's outputs. Element types f32, f16 and bf16, accumulated in f32.
// The kernels follow KernelEmitter.h's parameter convention (inputs, then
// the output, then one struct of every parameter's dims).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_COMPILE_REDUCTIONKERNELS_H
#define ORTC_PROVIDERS_CUDA_COMPILE_REDUCTIONKERNELS_H

#include "mlir/Support/LLVM.h"

#include <cstdint>
#include <string>
#include <vector>

namespace mlir {
class Operation;
class Value;
} // namespace mlir

namespace ortc::cuda {

/// Threads per block of every reduction kernel.
constexpr int kReductionThreadsPerBlock = 256;

/// Whether the CUDA EP compiles `op` as a reduction kernel; when it does
/// not but the op is of this family, `why` says what is refused.
bool isReductionKernelOp(mlir::Operation *op, std::string *why = nullptr);

struct ReductionKernel {
  std::string source;
  std::vector<mlir::Value> inputs; // the kernel's input parameters, in order
  /// The input dims outside the reduced run: their product is the grid.
  std::vector<int64_t> gridDims; // indices into the input's dims
};

/// The CUDA C++ of `op`'s kernel, named `name`.
mlir::FailureOr<ReductionKernel> emitReductionKernel(mlir::Operation *op,
                                                     const std::string &name);

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_COMPILE_REDUCTIONKERNELS_H
