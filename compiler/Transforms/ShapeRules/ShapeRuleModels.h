//===- ShapeRuleModels.h - one rule function as an external model -*- C++ -*-===//
//
// Private to the family files: `attachRule<inferX, FooOp, BarOp>(ctx)` makes
// `LogicalResult inferX(OpT op, ShapeRuleContext &)` (or one taking an
// Operation *) the ShapeInferenceOpInterface of each listed op.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPERULEMODELS_H
#define ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPERULEMODELS_H

#include "compiler/Transforms/ShapeRules/ShapeInferenceOpInterface.h"
#include "compiler/Transforms/ShapeRules/ShapeRuleContext.h"
#include "compiler/Transforms/SymbolicShapes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"

namespace ortc {

template <auto Rule, typename OpT>
struct ShapeRuleModel : ShapeInferenceOpInterface::ExternalModel<ShapeRuleModel<Rule, OpT>, OpT> {
  mlir::LogicalResult inferShapes(mlir::Operation *op, ShapeRuleContext &ctx) const {
    return Rule(mlir::cast<OpT>(op), ctx);
  }
};

template <auto Rule, typename... Ops> void attachRule(mlir::MLIRContext *context) {
  (Ops::template attachInterface<ShapeRuleModel<Rule, Ops>>(*context), ...);
}
/// attachRule over the ops of an OpList (BroadcastOps.h).
template <auto Rule, template <typename...> class List, typename... Ops>
void attachRuleTo(mlir::MLIRContext *context, List<Ops...>) {
  attachRule<Rule, Ops...>(context);
}

// Rules that several families share.
/// Result 0 has operand 0's element type and dims.
mlir::LogicalResult inferLikeInput0(mlir::Operation *op, ShapeRuleContext &ctx);
/// numpy matmul of `a` and `b` into `result` as `element` (MatMul,
/// MatMulInteger, QLinearMatMul).
mlir::LogicalResult inferMatMulOf(ShapeRuleContext &ctx, mlir::Value a, mlir::Value b,
                                  mlir::Value result, mlir::Type element);
/// The attributes of a sliding window (Conv's and the pools').
struct WindowAttrs {
  std::optional<llvm::ArrayRef<int64_t>> kernelShape, strides, dilations, pads;
  llvm::StringRef autoPad;
  bool ceilMode = false;
  /// x and the result are [N, D1..Dn, C] rather than [N, C, D1..Dn]
  /// (ortc.fused_conv's channels_last).
  bool channelsLast = false;
  /// The result's channels when they are not W's dim 0 (ortc.depthwise_block:
  /// its projection's).
  std::optional<int64_t> channels;
};
template <typename OpT> WindowAttrs convWindowAttrs(OpT op) {
  return {op.getKernelShape(), op.getStrides(), op.getDilations(), op.getPads(),
          op.getAutoPad()};
}
/// Conv's window rule over `x` and weights `w` (null for the pools: the
/// channels are x's) into `result` as `element` (Conv, ConvInteger,
/// QLinearConv, the pools).
mlir::LogicalResult inferWindowOf(ShapeRuleContext &ctx, const WindowAttrs &attrs, mlir::Value x,
                                  mlir::Value w, mlir::Value result, mlir::Type element);

// The family files (one per op family, as onnxruntime's providers/cpu/*).
void attachElementwiseShapeRules(mlir::MLIRContext *context);
void attachMathShapeRules(mlir::MLIRContext *context);
void attachNNShapeRules(mlir::MLIRContext *context);
void attachTransformerShapeRules(mlir::MLIRContext *context);
void attachTensorShapeRules(mlir::MLIRContext *context);
void attachQuantizationShapeRules(mlir::MLIRContext *context);
void attachSequenceShapeRules(mlir::MLIRContext *context);
void attachControlFlowShapeRules(mlir::MLIRContext *context);
void attachFusedShapeRules(mlir::MLIRContext *context);

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPERULEMODELS_H
