//===- TransformerShapes.cpp - attention and the decoder state ops --------===//
//
// Attention (ONNX 23: q, k, v as [B, H, S, D] or [B, S, H*D], with a past
// key and value), RotaryEmbedding, and the state-carrying ops of
// linear-attention and state-space decoders (LinearAttention,
// CausalConvWithState). Every size follows from the inputs' dims and the
// head-count attributes, so a model with any dim symbolic keeps expressions.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ShapeRules/ShapeRuleModels.h"

#include "dialects/onnx/OnnxOps.h"

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace ortc {
namespace {

/// Attention: Y [B, Hq, Sq, Dv] (3-D q: [B, Sq, Hq * Dv]); present_key and
/// present_value [B, Hkv, P + Skv, D(v)] after the past's P positions;
/// qk_matmul_output [B, Hq, Sq, P + Skv].
LogicalResult inferOnnxAttention(od::AttentionOp op, ShapeRuleContext &ctx) {
  const DimList *q = ctx.dims(op.getQ()), *k = ctx.dims(op.getK()), *v = ctx.dims(op.getV());
  Type element = ctx.elementType(op.getQ());
  if (!q || !k || !v)
    return success();
  if (q->size() != k->size() || q->size() != v->size() || (q->size() != 3 && q->size() != 4))
    return ctx.fail("Q, K and V must all be rank 4 [B, H, S, D] or all rank 3 [B, S, H*D]");
  DimTable &table = ctx.table();
  int32_t batch = (*q)[0];
  int32_t qHeads, kvHeads, qSeq, kvSeq, headDim, valueDim;
  if (q->size() == 4) {
    qHeads = (*q)[1];
    kvHeads = (*k)[1];
    qSeq = (*q)[2];
    kvSeq = (*k)[2];
    headDim = (*k)[3];
    valueDim = (*v)[3];
  } else {
    if (!op.getQNumHeads() || !op.getKvNumHeads() || *op.getQNumHeads() <= 0 ||
        *op.getKvNumHeads() <= 0)
      return ctx.fail("3-D Q, K and V need positive q_num_heads and kv_num_heads");
    qHeads = ctx.constant(int64_t(*op.getQNumHeads()));
    kvHeads = ctx.constant(int64_t(*op.getKvNumHeads()));
    qSeq = (*q)[1];
    kvSeq = (*k)[1];
    headDim = table.floorDiv((*k)[2], kvHeads);
    valueDim = table.floorDiv((*v)[2], kvHeads);
  }
  // The past's positions come first in the present key and value.
  int32_t total = kvSeq;
  if (const DimList *past = ctx.present(op.getPastKey()) ? ctx.dims(op.getPastKey()) : nullptr) {
    if (past->size() != 4)
      return ctx.fail("past_key must be rank 4 [B, Hkv, P, D]");
    total = table.add((*past)[2], kvSeq);
  } else if (ctx.present(op.getPastKey())) {
    total = kUnknownDim;
  }
  DimList y = q->size() == 4 ? DimList{batch, qHeads, qSeq, valueDim}
                             : DimList{batch, qSeq, table.mul(qHeads, valueDim)};
  ctx.setResult(op.getY(), element, y);
  ctx.setResult(op.getPresentKey(), ctx.elementType(op.getK()),
                DimList{batch, kvHeads, total, headDim});
  ctx.setResult(op.getPresentValue(), ctx.elementType(op.getV()),
                DimList{batch, kvHeads, total, valueDim});
  ctx.setResult(op.getQkMatmulOutput(), element, DimList{batch, qHeads, qSeq, total});
  return success();
}

/// LinearAttention: output [B, T, Hq * Dv] and present_state
/// [B, Hkv, Dk, Dv], with Dk = q's hidden / Hq and Dv = v's hidden / Hkv.
LogicalResult inferLinearAttention(od::LinearAttentionOp op, ShapeRuleContext &ctx) {
  const DimList *q = ctx.dims(op.getQuery()), *v = ctx.dims(op.getValue());
  Type element = ctx.elementType(op.getQuery());
  if (!q || !v)
    return success();
  if (q->size() != 3 || v->size() != 3)
    return ctx.fail("query and value must be [B, T, H*D]");
  if (op.getQNumHeads() <= 0 || op.getKvNumHeads() <= 0)
    return ctx.fail("q_num_heads and kv_num_heads must be positive");
  DimTable &table = ctx.table();
  int32_t qHeads = ctx.constant(int64_t(op.getQNumHeads()));
  int32_t kvHeads = ctx.constant(int64_t(op.getKvNumHeads()));
  int32_t keyDim = table.floorDiv((*q)[2], qHeads);
  int32_t valueDim = table.floorDiv((*v)[2], kvHeads);
  ctx.setResult(op.getOutput(), element, DimList{(*q)[0], (*q)[1], table.mul(qHeads, valueDim)});
  ctx.setResult(op.getPresentState(), element, DimList{(*q)[0], kvHeads, keyDim, valueDim});
  return success();
}

/// CausalConvWithState: output like input [B, C, L]; present_state
/// [B, C, K - 1] for a weight [C, 1, K].
LogicalResult inferCausalConvWithState(od::CausalConvWithStateOp op, ShapeRuleContext &ctx) {
  const DimList *x = ctx.dims(op.getInput()), *w = ctx.dims(op.getWeight());
  Type element = ctx.elementType(op.getInput());
  if (!x)
    return success();
  ctx.setResult(op.getOutput(), element, *x);
  if (!w || x->size() != 3 || w->size() != 3)
    return success();
  ctx.setResult(op.getPresentState(), element,
                DimList{(*x)[0], (*x)[1], ctx.table().sub((*w)[2], ctx.constant(1))});
  return success();
}

} // namespace

void attachTransformerShapeRules(MLIRContext *context) {
  attachRule<inferOnnxAttention, od::AttentionOp>(context);
  attachRule<inferLikeInput0, od::RotaryEmbeddingOp>(context);
  attachRule<inferLinearAttention, od::LinearAttentionOp>(context);
  attachRule<inferCausalConvWithState, od::CausalConvWithStateOp>(context);
}

} // namespace ortc
