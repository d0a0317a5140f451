//===- QuantizationShapes.cpp - quantize, dequantize, integer products ----===//
//
// The result keeps the element type the importer gave it (from the op's type
// rules: ctx.elementType of the result) unless the op fixes one; the dims
// follow the float op's rule.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ShapeRules/ShapeRuleModels.h"

#include "dialects/onnx/OnnxOps.h"

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace ortc {
namespace {

/// QuantizeLinear, DequantizeLinear: x's dims.
LogicalResult inferQuantizeLinear(Operation *op, ShapeRuleContext &ctx) {
  Value y = op->getResult(0);
  ctx.setDimsOf(y, ctx.elementType(y), op->getOperand(0));
  return success();
}

/// y like x as uint8, a scalar f32 scale and a scalar uint8 zero point.
LogicalResult inferDynamicQuantizeLinear(od::DynamicQuantizeLinearOp op, ShapeRuleContext &ctx) {
  MLIRContext *context = op->getContext();
  Type u8 = IntegerType::get(context, 8, IntegerType::Unsigned);
  ctx.setDimsOf(op.getY(), u8, op.getX());
  ctx.setResult(op.getYScale(), Float32Type::get(context), {});
  ctx.setResult(op.getYZeroPoint(), u8, {});
  return success();
}

LogicalResult inferMatMulInteger(od::MatMulIntegerOp op, ShapeRuleContext &ctx) {
  return inferMatMulOf(ctx, op.getA(), op.getB(), op.getY(),
                       IntegerType::get(op->getContext(), 32));
}

LogicalResult inferQLinearMatMul(od::QLinearMatMulOp op, ShapeRuleContext &ctx) {
  return inferMatMulOf(ctx, op.getA(), op.getB(), op.getY(), ctx.elementType(op.getY()));
}

LogicalResult inferConvInteger(od::ConvIntegerOp op, ShapeRuleContext &ctx) {
  return inferWindowOf(ctx, convWindowAttrs(op), op.getX(), op.getW(), op.getY(),
                       IntegerType::get(op->getContext(), 32));
}

LogicalResult inferQLinearConv(od::QLinearConvOp op, ShapeRuleContext &ctx) {
  return inferWindowOf(ctx, convWindowAttrs(op), op.getX(), op.getW(), op.getY(),
                       ctx.elementType(op.getY()));
}

} // namespace

void attachQuantizationShapeRules(MLIRContext *context) {
  attachRule<inferQuantizeLinear, od::QuantizeLinearOp, od::DequantizeLinearOp>(context);
  attachRule<inferDynamicQuantizeLinear, od::DynamicQuantizeLinearOp>(context);
  attachRule<inferMatMulInteger, od::MatMulIntegerOp>(context);
  attachRule<inferQLinearMatMul, od::QLinearMatMulOp>(context);
  attachRule<inferConvInteger, od::ConvIntegerOp>(context);
  attachRule<inferQLinearConv, od::QLinearConvOp>(context);
}

} // namespace ortc
