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

} // namespace

void attachFusedShapeRules(MLIRContext *context) {
  attachRule<inferLikeInput0, fused::LayerNormOp, fused::GeluOp>(context);
  attachRule<inferAttention, fused::AttentionOp>(context);
}

} // namespace ortc
