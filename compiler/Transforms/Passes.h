//===- Passes.h - generic passes over the onnx dialect ----------*- C++ -*-===//

#ifndef ORTC_COMPILER_TRANSFORMS_PASSES_H
#define ORTC_COMPILER_TRANSFORMS_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::func {
class FuncOp;
}
namespace ortc::onnx_dialect {
class OnnxDialect;
}
namespace ortc::fused {
class OrtcDialect;
}

namespace ortc {

#define GEN_PASS_DECL
#include "compiler/Transforms/Passes.h.inc"

/// What onnx-fold-constants does to `func`: the number of ops it replaced by
/// constants (or If ops it replaced by their branch).
unsigned foldConstantsIn(mlir::func::FuncOp func, int64_t maxElements);

/// One sweep of onnx-shape-inference over `func`, counting the results it
/// refined. A declared shape that contradicts the inferred one is a warning
/// on the node and the inferred type wins, or with `strictShapes` an error
/// (failure); a contradicting element type is always an error.
mlir::LogicalResult inferShapesIn(mlir::func::FuncOp func, unsigned &numRefined,
                                  bool strictShapes = false);

/// What onnx-upgrade-generic-ops does to `func`: the number of older generic
/// nodes it made typed.
unsigned upgradeGenericOpsIn(mlir::func::FuncOp func);

/// What onnx-shapes-from-inputs does to `func`: the number of Shapes rewritten.
unsigned shapesFromInputsIn(mlir::func::FuncOp func);

struct GenericPipelineOptions {
  /// Declared shapes that contradict inference are errors (--strict-shapes).
  bool strictShapes = false;
  /// The largest tensor of a static shape a model may have, in bytes
  /// (--max-tensor-bytes; onnx-check-tensor-sizes).
  int64_t maxTensorBytes = int64_t(1) << 34;
};

/// Adds the generic pipeline (canonicalize, shape inference, DCE) on every
/// function of a module.
void buildGenericOnnxPipeline(mlir::OpPassManager &pm,
                              const GenericPipelineOptions &options = {});

#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/Passes.h.inc"

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_PASSES_H
