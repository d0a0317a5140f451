//===- FusedShapes.cpp - the ortc dialect's fused ops ---------------------===//

#include "compiler/Transforms/ShapeRules/ShapeRuleModels.h"

#include "dialects/ortc/OrtcDialect.h"

using namespace mlir;
namespace fused = ortc::fused;

namespace ortc {
namespace {

/// attention(q, k, v): q's dims with v's last.
LogicalResult inferAttention(fused::AttentionOp op, ShapeRuleContext &ctx) {
  const DimList *q = ctx.dims(op.getQuery()), *v = ctx.dims(op.getValue());
  Type element = ctx.elementType(op.getQuery());
  if (!q || !v || q->empty() || v->empty()) {
    ctx.setUnranked(op.getOutput(), element);
    return success();
  }
  DimList out = *q;
  out.back() = v->back();
  ctx.setResult(op.getOutput(), element, out);
  return success();
}

/// matmul_bias(a, b, bias): a's dims with b's N last (b is a matrix).
LogicalResult inferMatMulBias(fused::MatMulBiasOp op, ShapeRuleContext &ctx) {
  const DimList *a = ctx.dims(op.getA()), *b = ctx.dims(op.getB());
  Type element = ctx.elementType(op.getA());
  if (!a || !b || a->empty() || b->size() != 2) {
    ctx.setUnranked(op.getOutput(), element);
    return success();
  }
  DimList out = *a;
  out.back() = op.getTransB() ? b->front() : b->back();
  ctx.setResult(op.getOutput(), element, out);
  return success();
}

/// fused_conv: onnx.Conv's window rule, with the channels last or first.
LogicalResult inferFusedConv(fused::FusedConvOp op, ShapeRuleContext &ctx) {
  WindowAttrs attrs = convWindowAttrs(op);
  attrs.channelsLast = op.getChannelsLast();
  return inferWindowOf(ctx, attrs, op.getX(), op.getW(), op.getY(), ctx.elementType(op.getX()));
}

/// max_pool: MaxPool's window rule with the channels last.
LogicalResult inferMaxPool(fused::MaxPoolOp op, ShapeRuleContext &ctx) {
  WindowAttrs attrs{op.getKernelShape(), op.getStrides(), op.getDilations(),
                    op.getPads(),        op.getAutoPad(), op.getCeilMode() != 0};
  attrs.channelsLast = true;
  return inferWindowOf(ctx, attrs, op.getX(), Value(), op.getY(), ctx.elementType(op.getX()));
}

/// depthwise_block: the depthwise conv's window rule over x's positions,
/// in x's layout, with the projection's channels when it has one.
LogicalResult inferDepthwiseBlock(fused::DepthwiseBlockOp op, ShapeRuleContext &ctx) {
  WindowAttrs attrs = convWindowAttrs(op);
  attrs.channelsLast = op.getChannelsLast();
  if (auto project = dyn_cast<RankedTensorType>(op.getProjectW().getType());
      project && project.getRank() == 4 && !project.isDynamicDim(0))
    attrs.channels = project.getDimSize(0);
  return inferWindowOf(ctx, attrs, op.getX(), op.getDepthwiseW(), op.getY(),
                       ctx.elementType(op.getX()));
}

} // namespace

void attachFusedShapeRules(MLIRContext *context) {
  attachRule<inferLikeInput0, fused::LayerNormOp, fused::GeluOp>(context);
  attachRule<inferAttention, fused::AttentionOp>(context);
  attachRule<inferMatMulBias, fused::MatMulBiasOp>(context);
  attachRule<inferFusedConv, fused::FusedConvOp>(context);
  attachRule<inferMaxPool, fused::MaxPoolOp>(context);
  attachRule<inferDepthwiseBlock, fused::DepthwiseBlockOp>(context);
}

} // namespace ortc
