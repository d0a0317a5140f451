//===- DataMovementKernels.h - CUDA kernels that move elements --*- C++ -*-===//
//
// The data-movement family: Transpose, Concat, Slice (constant starts, ends,
// axes and steps over static sliced dims; a Split is made Slices first),
// Gather, GatherElements, GatherND (a static index length) and Expand, each one
// kernel where every thread writes one output element, read from the
// element its coordinates map to. Any element type the buffers hold; the
// parameters follow KernelEmitter.h's convention (inputs, the output, one
// struct of every parameter's dims), so any other dim may be dynamic.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_COMPILE_DATAMOVEMENTKERNELS_H
#define ORTC_PROVIDERS_CUDA_COMPILE_DATAMOVEMENTKERNELS_H

#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace mlir {
class Operation;
class Value;
} // namespace mlir

namespace ortc::cuda {

/// Whether the CUDA EP compiles `op` as a data-movement kernel; when it does
/// not but the op is of this family, `why` says why.
bool isDataMovementKernelOp(mlir::Operation *op, std::string *why = nullptr);

/// A Split's pieces along its axis: the axis and each output's [start,
/// end), when the axis dim is static and the sizes are known (a constant
/// `split`, or num_outputs or the output count dividing the dim as ONNX
/// says); nullopt with `why` otherwise. cuda-split-to-slices makes each
/// piece a Slice, which this family compiles.
struct SplitPieces {
  int64_t axis = 0;
  std::vector<std::pair<int64_t, int64_t>> bounds;
};
std::optional<SplitPieces> splitPieces(mlir::Operation *op, std::string *why = nullptr);

struct DataMovementKernel {
  std::string source;
  std::vector<mlir::Value> inputs; // the kernel's input parameters, in order
};

/// The CUDA C++ of `op`'s kernel, named `name`.
mlir::FailureOr<DataMovementKernel> emitDataMovementKernel(mlir::Operation *op,
                                                           const std::string &name);

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_COMPILE_DATAMOVEMENTKERNELS_H
