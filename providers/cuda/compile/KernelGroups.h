//===- KernelGroups.h - which ops of a partition share a CUDA kernel -*- C++ -*-===//
//
// The CUDA EP fuses chains of elementwise ops into one kernel each: an op
// joins the open group when its result has the group's type and dims and
// it reads a value the group makes (or a non-constant value a member reads:
// siblings such as Sigmoid(h) and Tanh(h) share one pass over h). A group
// closes before an op that is not elementwise reads one of its values. The
// cuda-outline-kernels pass and the EP's partition compiler both use this.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_COMPILE_KERNELGROUPS_H
#define ORTC_PROVIDERS_CUDA_COMPILE_KERNELGROUPS_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/ADT/StringRef.h"

#include <vector>

namespace mlir {
class ModuleOp;
class Operation;
namespace func {
class FuncOp;
}
} // namespace mlir

namespace ortc {
class SymbolicShapes;
}

namespace ortc::cuda {

/// Whether `op` goes into a generated elementwise kernel: exactly what
/// onnx-lower-to-linalg lowers as elementwise (the emitter translates every
/// body it writes).
bool isKernelOp(mlir::Operation *op);

/// Splat constants are compiled into the kernels that read them; any other
/// constant is a weight the kernel reads from memory.
bool isInlinedConstant(mlir::Value value);

struct KernelGroup {
  std::vector<mlir::Operation *> ops;      // in program order
  llvm::SetVector<mlir::Value> inputs;     // read from outside the group
  llvm::SetVector<mlir::Value> outputs;    // used after it, or returned
  llvm::SetVector<mlir::Operation *> inlined; // splat constants the ops read
  /// The op after which the kernel runs: an op between members that does not
  /// read the group runs before it.
  mlir::Operation *last() const { return ops.back(); }
};

/// The kernel groups of `fn`'s top-level ops, in program order.
std::vector<KernelGroup> formKernelGroups(mlir::func::FuncOp fn, const SymbolicShapes &shapes);

/// A new `func.func private @name` at the end of `module`: the group's
/// inputs as arguments, its outputs as results, {ortc.cuda.kernel}, the
/// members and their inlined constants cloned inside.
mlir::func::FuncOp buildKernelFunction(const KernelGroup &group, mlir::ModuleOp module,
                                       llvm::StringRef name);

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_COMPILE_KERNELGROUPS_H
