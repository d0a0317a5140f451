//===- ElementwiseShapes.cpp - unary, broadcasting and cast rules ---------===//
//
// Results shaped like input 0, numpy broadcasting (with the arithmetic of
// shape values: Add(Shape(x)[0], 1) is an expression), Where, and the casts.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ShapeRules/BroadcastOps.h"
#include "compiler/Transforms/ShapeRules/ShapeRuleModels.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/onnx/OnnxSchema.h"

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace ortc {

LogicalResult inferLikeInput0(Operation *op, ShapeRuleContext &ctx) {
  ctx.setLike(op->getResult(0), op->getOperand(0));
  return success();
}

namespace {

/// Identity also passes a shape value on.
LogicalResult inferIdentity(od::IdentityOp op, ShapeRuleContext &ctx) {
  // A sequence or an optional is passed on as it is.
  if (!isa<TensorType>(op.getInput().getType())) {
    if (!isa<od::UnknownType>(op.getInput().getType()))
      ctx.setType(op.getOutput(), op.getInput().getType());
    return success();
  }
  ctx.setLike(op.getOutput(), op.getInput());
  if (const DimList *e = ctx.elements(op.getInput()))
    ctx.setElements(op.getOutput(), *e);
  return success();
}

/// Broadcasts every present operand into result 0 as `element`.
LogicalResult broadcastInto(Operation *op, ShapeRuleContext &ctx, Type element) {
  SmallVector<const DimList *> operands;
  for (Value v : op->getOperands())
    if (ctx.present(v))
      operands.push_back(ctx.dims(v));
  FailureOr<std::optional<DimList>> out = broadcastDims(ctx.table(), operands);
  if (failed(out))
    return ctx.fail("input shapes cannot be broadcast together");
  if (*out)
    ctx.setResult(op->getResult(0), element, **out);
  else
    ctx.setUnranked(op->getResult(0), element);
  return success();
}

/// The integer arithmetic of shape values, element by element (a length-1
/// operand broadcasts). kUnknownDim where it has no expression.
int32_t shapeArithmetic(Operation *op, DimTable &t, int32_t a, int32_t b) {
  if (isa<od::AddOp>(op))
    return t.add(a, b);
  if (isa<od::SubOp>(op))
    return t.sub(a, b);
  if (isa<od::MulOp>(op))
    return t.mul(a, b);
  if (isa<od::MaxOp>(op))
    return t.max(a, b);
  if (isa<od::MinOp>(op))
    return t.min(a, b);
  if (isa<od::DivOp>(op)) {
    // Integer Div truncates, which is floor when neither is negative (a
    // value symbol may be).
    std::optional<int64_t> la = t.lowerBound(a), lb = t.lowerBound(b);
    return la && lb && *la >= 0 && *lb >= 0 ? t.floorDiv(a, b) : kUnknownDim;
  }
  return kUnknownDim;
}

LogicalResult inferNumericBroadcast(Operation *op, ShapeRuleContext &ctx) {
  if (failed(broadcastInto(op, ctx, ctx.elementType(op->getOperand(0)))))
    return failure();
  if (op->getNumOperands() != 2)
    return success();
  const DimList *a = ctx.elements(op->getOperand(0)), *b = ctx.elements(op->getOperand(1));
  // Float division is not floor division.
  Type element = ctx.elementType(op->getOperand(0));
  if (!a || !b || (isa<od::DivOp>(op) && element && isa<FloatType>(element)))
    return success();
  size_t n = std::max(a->size(), b->size());
  if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1))
    return success();
  DimList out;
  for (size_t i = 0; i < n; ++i) {
    out.push_back(shapeArithmetic(op, ctx.table(), (*a)[a->size() == 1 ? 0 : i],
                                  (*b)[b->size() == 1 ? 0 : i]));
    if (out.back() == kUnknownDim)
      return success();
  }
  ctx.setElements(op->getResult(0), out);
  return success();
}

LogicalResult inferComparison(Operation *op, ShapeRuleContext &ctx) {
  return broadcastInto(op, ctx, IntegerType::get(op->getContext(), 1));
}

LogicalResult inferWhere(od::WhereOp op, ShapeRuleContext &ctx) {
  return broadcastInto(op, ctx, ctx.elementType(op.getX()));
}

/// IsNaN, IsInf: input 0's dims, bool.
LogicalResult inferClassification(Operation *op, ShapeRuleContext &ctx) {
  ctx.setDimsOf(op->getResult(0), IntegerType::get(op->getContext(), 1), op->getOperand(0));
  return success();
}

LogicalResult inferCast(od::CastOp op, ShapeRuleContext &ctx) {
  Type element = od::elementTypeForOnnxCode(op->getContext(), int64_t(op.getTo()));
  ctx.setDimsOf(op.getOutput(), element, op.getInput());
  if (const DimList *e = ctx.elements(op.getInput()))
    ctx.setElements(op.getOutput(), *e);
  return success();
}

LogicalResult inferCastLike(od::CastLikeOp op, ShapeRuleContext &ctx) {
  ctx.setDimsOf(op.getOutput(), ctx.elementType(op.getTargetType()), op.getInput());
  return success();
}

LogicalResult inferDropout(od::DropoutOp op, ShapeRuleContext &ctx) {
  ctx.setLike(op.getOutput(), op.getData());
  ctx.setDimsOf(op.getMask(), IntegerType::get(op->getContext(), 1), op.getData());
  return success();
}

} // namespace

void attachElementwiseShapeRules(MLIRContext *context) {
  attachRule<inferLikeInput0, od::AbsOp, od::AcosOp, od::AcoshOp, od::AsinOp, od::AsinhOp,
             od::AtanOp, od::AtanhOp, od::CeilOp, od::CeluOp, od::ClipOp, od::CosOp, od::CoshOp,
             od::EluOp, od::ErfOp, od::ExpOp, od::FloorOp, od::GeluOp, od::HardSigmoidOp,
             od::HardSwishOp, od::LeakyReluOp, od::LogOp, od::LogSoftmaxOp,
             od::MishOp, od::NegOp, od::NotOp, od::ReciprocalOp, od::ReluOp, od::RoundOp,
             od::SeluOp, od::ShrinkOp, od::SigmoidOp, od::SignOp, od::SinOp, od::SinhOp,
             od::SoftmaxOp, od::SoftplusOp, od::SoftsignOp, od::SqrtOp, od::TanOp, od::TanhOp,
             od::ThresholdedReluOp, od::HardmaxOp, od::TriluOp, od::CumSumOp, od::CumProdOp, od::SwishOp,
             od::ScatterElementsOp, od::ScatterNDOp, od::LpNormalizationOp,
             od::MeanVarianceNormalizationOp, od::BitwiseNotOp>(context);
  attachRuleTo<inferNumericBroadcast>(context, NumericBroadcastOps());
  attachRuleTo<inferComparison>(context, ComparisonBroadcastOps());
  attachRule<inferClassification, od::IsNaNOp, od::IsInfOp>(context);
  attachRule<inferIdentity, od::IdentityOp>(context);
  attachRule<inferWhere, od::WhereOp>(context);
  attachRule<inferCast, od::CastOp>(context);
  attachRule<inferCastLike, od::CastLikeOp>(context);
  attachRule<inferDropout, od::DropoutOp>(context);
}

} // namespace ortc
