//===- ShapeRules.h - attaching the ops' shape rules ------------*- C++ -*-===//
//
// Each op family's file attaches its rules (ShapeInferenceOpInterface external
// models) to the typed onnx ops and the ortc fused ops.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPERULES_H
#define ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPERULES_H

namespace mlir {
class DialectRegistry;
class MLIRContext;
} // namespace mlir

namespace ortc {

/// Attaches every rule when the onnx and ortc dialects load.
void registerShapeRules(mlir::DialectRegistry &registry);

/// registerShapeRules for a context that was set up without it (the shape
/// walk calls it, so no tool or test can forget it).
void ensureShapeRules(mlir::MLIRContext *context);

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPERULES_H
