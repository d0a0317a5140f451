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
/// refined; failure when a declared type contradicts the inferred one (the
/// error is reported on the node).
mlir::LogicalResult inferShapesIn(mlir::func::FuncOp func, unsigned &numRefined);

/// Adds the generic pipeline (canonicalize, shape inference, DCE) on every
/// function of a module.
void buildGenericOnnxPipeline(mlir::OpPassManager &pm);

#define GEN_PASS_REGISTRATION
#include "compiler/Transforms/Passes.h.inc"

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_PASSES_H
