//===- FoldConvBatchNorm.cpp - onnx-fold-conv-bn --------------------------===//
//
// BatchNormalization (inference) after a Conv with constant f32 weights folds
// into the Conv: with s = scale / sqrt(var + epsilon) per output channel m,
//   W'[m] = W[m] * s[m]        B'[m] = (B[m] - mean[m]) * s[m] + bias[m]
// The new weights are a resource blob of their own; nothing is interned in
// the context.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/HostTensor.h"
#include "dialects/onnx/OnnxOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>
#include <cstring>

namespace ortc {
#define GEN_PASS_DEF_ONNXFOLDCONVBATCHNORM
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
using namespace ortc::onnx_dialect;

namespace {

constexpr int64_t kAnySize = std::numeric_limits<int64_t>::max();

std::optional<ortc::HostTensor> readF32(Value v, int64_t expectedElements) {
  auto t = ortc::readHostTensor(v, kAnySize);
  if (!t || !t->elementType.isF32() ||
      (expectedElements >= 0 && t->numElements() != expectedElements))
    return std::nullopt;
  return t;
}

/// An onnx.Constant over a fresh resource blob holding `values` as f32.
Value makeF32Constant(PatternRewriter &rewriter, Location loc, ArrayRef<int64_t> shape,
                      ArrayRef<double> values, StringRef key) {
  AsmResourceBlob blob = HeapAsmResourceBlob::allocate(values.size() * 4, alignof(float));
  char *dst = blob.getMutableData().data();
  for (size_t i = 0; i < values.size(); ++i) {
    float f = static_cast<float>(values[i]);
    std::memcpy(dst + 4 * i, &f, 4);
  }
  auto type = RankedTensorType::get(shape, rewriter.getF32Type());
  auto attr = DenseResourceElementsAttr::get(type, key, std::move(blob));
  OperationState state(loc, "onnx.Constant");
  state.addAttribute("value", attr);
  state.addTypes(type);
  return rewriter.create(state)->getResult(0);
}

struct FoldBatchNormIntoConv : OpRewritePattern<BatchNormalizationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(BatchNormalizationOp bn, PatternRewriter &rewriter) const override {
    if (bn.getTrainingMode() != 0)
      return rewriter.notifyMatchFailure(bn, "training mode");
    for (unsigned i = 1; i < bn->getNumResults(); ++i)
      if (!bn->getResult(i).use_empty())
        return rewriter.notifyMatchFailure(bn, "running statistics are used");
    auto conv = bn.getX().getDefiningOp<ConvOp>();
    if (!conv || !conv->getResult(0).hasOneUse())
      return rewriter.notifyMatchFailure(bn, "input is not a Conv used once");
    auto wType = dyn_cast<RankedTensorType>(conv.getW().getType());
    if (!wType || !wType.hasStaticShape() || wType.getRank() < 3)
      return rewriter.notifyMatchFailure(bn, "weights of unknown shape");
    int64_t channels = wType.getDimSize(0);
    auto w = readF32(conv.getW(), wType.getNumElements());
    auto scale = readF32(bn.getScale(), channels), shift = readF32(bn.getB(), channels);
    auto mean = readF32(bn.getInputMean(), channels), var = readF32(bn.getInputVar(), channels);
    std::optional<ortc::HostTensor> bias;
    if (!isNoValue(conv.getB()) && !(bias = readF32(conv.getB(), channels)))
      return rewriter.notifyMatchFailure(bn, "conv bias is not a constant");
    if (!w || !scale || !shift || !mean || !var)
      return rewriter.notifyMatchFailure(bn, "weights or statistics are not f32 constants");

    double epsilon = bn.getEpsilon().convertToDouble();
    int64_t perChannel = wType.getNumElements() / channels;
    SmallVector<double> newW(w->floats), newB(channels);
    for (int64_t m = 0; m < channels; ++m) {
      double s = scale->floats[m] / std::sqrt(var->floats[m] + epsilon);
      for (int64_t k = 0; k < perChannel; ++k)
        newW[m * perChannel + k] = w->floats[m * perChannel + k] * s;
      newB[m] = ((bias ? bias->floats[m] : 0.0) - mean->floats[m]) * s + shift->floats[m];
    }
    rewriter.setInsertionPoint(conv);
    Value wFolded =
        makeF32Constant(rewriter, conv.getW().getLoc(), wType.getShape(), newW, "conv_bn_weight");
    Value bFolded = makeF32Constant(rewriter, bn.getLoc(), {channels}, newB, "conv_bn_bias");
    rewriter.modifyOpInPlace(conv, [&] {
      conv.getWMutable().assign(wFolded);
      conv.getBMutable().assign(bFolded);
      conv->getResult(0).setType(bn->getResult(0).getType());
    });
    rewriter.replaceOp(bn, SmallVector<Value>(bn->getNumResults(), conv->getResult(0)));
    return success();
  }
};

struct OnnxFoldConvBatchNorm : ortc::impl::OnnxFoldConvBatchNormBase<OnnxFoldConvBatchNorm> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FoldBatchNormIntoConv>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
