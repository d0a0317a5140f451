//===- ExpandAttention.cpp - cuda-expand-attention ------------------------===//

#include "providers/cuda/compile/OpBuilding.h"
#include "providers/cuda/compile/Passes.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace ortc::cuda {
#define GEN_PASS_DEF_CUDAEXPANDATTENTION
#include "providers/cuda/compile/Passes.h.inc"
} // namespace ortc::cuda

using namespace mlir;

namespace {

/// [..., rows, cols] of `like`'s batch dims (or `other`'s where `like`'s are
/// all 1) with the given last two dims.
RankedTensorType matrixType(RankedTensorType like, RankedTensorType other, int64_t rows,
                            int64_t cols) {
  ArrayRef<int64_t> batch = like.getShape().drop_back(2);
  if (llvm::all_of(batch, [](int64_t d) { return d == 1; }) && other.getRank() == like.getRank())
    batch = other.getShape().drop_back(2);
  SmallVector<int64_t> shape(batch);
  shape.append({rows, cols});
  return RankedTensorType::get(shape, like.getElementType());
}

} // namespace

unsigned ortc::cuda::expandAttention(func::FuncOp fn) {
  SmallVector<fused::AttentionOp> ops;
  fn.walk([&](fused::AttentionOp op) { ops.push_back(op); });
  for (fused::AttentionOp op : ops) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value query = op.getQuery(), key = op.getKey(), value = op.getValue();
    // sequence_first: [B, S, H, D] in and out, the product on [B, H, S, D].
    auto headsFirst = [&](Value v) {
      auto type = cast<RankedTensorType>(v.getType());
      SmallVector<int64_t> shape(type.getShape());
      std::swap(shape[1], shape[2]);
      return ortc::cuda::createOnnxOp(
          b, loc, "onnx.Transpose", {v}, RankedTensorType::get(shape, type.getElementType()),
          {b.getNamedAttr("perm", b.getDenseI64ArrayAttr({0, 2, 1, 3}))});
    };
    if (op.getSequenceFirst()) {
      query = headsFirst(query);
      key = headsFirst(key);
      value = headsFirst(value);
    }
    auto q = cast<RankedTensorType>(query.getType());
    auto k = cast<RankedTensorType>(key.getType());
    int64_t rank = k.getRank();
    SmallVector<int64_t> perm;
    for (int64_t i = 0; i + 2 < rank; ++i)
      perm.push_back(i);
    perm.append({rank - 1, rank - 2});
    SmallVector<int64_t> ktShape(k.getShape().drop_back(2));
    ktShape.append({k.getShape()[rank - 1], k.getShape()[rank - 2]});
    Value kt = ortc::cuda::createOnnxOp(b, loc, "onnx.Transpose", {key},
                                        RankedTensorType::get(ktShape, k.getElementType()),
                                        {b.getNamedAttr("perm", b.getDenseI64ArrayAttr(perm))});
    RankedTensorType scoresType =
        matrixType(q, k, q.getShape()[q.getRank() - 2], k.getShape()[rank - 2]);
    Value scores = ortc::cuda::createOnnxOp(b, loc, "onnx.MatMul", {query, kt}, scoresType);
    float scale = op.getScale().convertToFloat();
    if (scale != 1.0f) {
      auto scalar = RankedTensorType::get({}, q.getElementType());
      Value s = ortc::cuda::createOnnxOp(
          b, loc, "onnx.Constant", {}, scalar,
          {b.getNamedAttr("value", DenseElementsAttr::get(
                                       scalar, b.getFloatAttr(q.getElementType(), scale).getValue()))});
      scores = ortc::cuda::createOnnxOp(b, loc, "onnx.Mul", {scores, s}, scoresType);
    }
    if (Value mask = op.getMask())
      scores = ortc::cuda::createOnnxOp(b, loc, "onnx.Add", {scores, mask}, scoresType);
    Value probs = ortc::cuda::createOnnxOp(b, loc, "onnx.Softmax", {scores}, scoresType,
                           {b.getNamedAttr("axis", b.getI64IntegerAttr(-1))});
    if (op.getNanToZero()) {
      // Where(IsNaN(p), 0, p): a fully masked row's NaNs become 0.
      auto scalar = RankedTensorType::get({}, q.getElementType());
      Value zero = ortc::cuda::createOnnxOp(
          b, loc, "onnx.Constant", {}, scalar,
          {b.getNamedAttr(
              "value",
              DenseElementsAttr::get(scalar, b.getFloatAttr(q.getElementType(), 0.0).getValue()))});
      Value isNaN =
          ortc::cuda::createOnnxOp(b, loc, "onnx.IsNaN", {probs}, scoresType.clone(b.getI1Type()));
      probs = ortc::cuda::createOnnxOp(b, loc, "onnx.Where", {isNaN, zero, probs}, scoresType);
    }
    Value out;
    if (op.getSequenceFirst()) {
      auto v = cast<RankedTensorType>(value.getType());
      SmallVector<int64_t> shape(q.getShape().drop_back());
      shape.push_back(v.getShape().back());
      out = headsFirst(ortc::cuda::createOnnxOp(b, loc, "onnx.MatMul", {probs, value},
                                                RankedTensorType::get(shape, v.getElementType())));
    } else {
      out =
          ortc::cuda::createOnnxOp(b, loc, "onnx.MatMul", {probs, value}, op.getResult().getType());
    }
    op.getResult().replaceAllUsesWith(out);
    op.erase();
  }
  return ops.size();
}

namespace {

struct CudaExpandAttentionPass
    : ortc::cuda::impl::CudaExpandAttentionBase<CudaExpandAttentionPass> {
  void runOnOperation() override { numExpanded += ortc::cuda::expandAttention(getOperation()); }
};

} // namespace
