//===- ShapeRules.cpp - attaching the ops' shape rules --------------------===//

#include "compiler/Transforms/ShapeRules/ShapeRules.h"

#include "compiler/Transforms/ShapeRules/ShapeRuleModels.h"
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/OperationSupport.h"

#include "compiler/Transforms/ShapeRules/ShapeInferenceOpInterface.cpp.inc"

using namespace mlir;

namespace ortc {

void registerShapeRules(DialectRegistry &registry) {
  registry.addExtension(+[](MLIRContext *context, onnx_dialect::OnnxDialect *) {
    attachElementwiseShapeRules(context);
    attachMathShapeRules(context);
    attachNNShapeRules(context);
    attachTransformerShapeRules(context);
    attachTensorShapeRules(context);
    attachQuantizationShapeRules(context);
    attachSequenceShapeRules(context);
    attachControlFlowShapeRules(context);
  });
  registry.addExtension(
      +[](MLIRContext *context, fused::OrtcDialect *) { attachFusedShapeRules(context); });
}

void ensureShapeRules(MLIRContext *context) {
  // onnx.Relu stands for the lot: its rule comes with the first extension.
  std::optional<RegisteredOperationName> probe =
      RegisteredOperationName::lookup("onnx.Relu", context);
  if (probe && probe->hasInterface<ShapeInferenceOpInterface>())
    return;
  DialectRegistry registry;
  registerShapeRules(registry);
  context->appendDialectRegistry(registry);
}

} // namespace ortc
