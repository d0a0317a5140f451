//===- RecognizeFusedOps.cpp - onnx-recognize-fused-ops -------------------===//
//
// Rewrites the subgraphs that converters export for layer normalization, GELU
// and scaled dot-product attention (and the ONNX ops LayerNormalization and
// Gelu) into ortc.layer_norm, ortc.gelu and ortc.attention. Each pattern
// anchors on the op in the middle of the subgraph that is rarest elsewhere
// (Div over a Sqrt, Erf, Softmax) and replaces only the subgraph's final
// value; intermediates that lose their last user are left to onnx-dce.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/HostTensor.h"
#include "compiler/Transforms/OpQueries.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

#include <cmath>

namespace ortc {
#define GEN_PASS_DEF_ONNXRECOGNIZEFUSEDOPS
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
namespace od = ortc::onnx_dialect;
namespace fused = ortc::fused;

namespace {

/// The value of a constant whose elements are all equal (a scalar in effect).
std::optional<double> scalarConstant(Value v) {
  auto t = ortc::readHostTensor(v, 1);
  if (!t || t->numElements() != 1)
    return std::nullopt;
  return t->floatAt(0);
}

bool isScalarNear(Value v, double expected, double tolerance = 1e-4) {
  auto s = scalarConstant(v);
  return s && std::fabs(*s - expected) <= tolerance * std::max(1.0, std::fabs(expected));
}

/// Whether every given value that is present has a tensor type. The fused ops
/// take tensors only: a value whose type inference did not reach
/// (!onnx.unknown) keeps its plain ops, which the EPs then judge.
bool allTensors(std::initializer_list<Value> values) {
  return llvm::all_of(values, [](Value v) { return !v || isa<TensorType>(v.getType()); });
}

/// For a binary op, the operand that is not `known`, or null.
Value otherOperand(Operation *op, Value known) {
  if (op->getNumOperands() != 2)
    return nullptr;
  if (op->getOperand(0) == known)
    return op->getOperand(1);
  if (op->getOperand(1) == known)
    return op->getOperand(0);
  return nullptr;
}

/// If a ReduceMean's (constant) axes are exactly the trailing dims from some
/// axis on, that axis.
std::optional<int64_t> trailingReduceAxis(od::ReduceMeanOp op) {
  auto type = dyn_cast<RankedTensorType>(op.getData().getType());
  if (!type || op.getKeepdims() != 1)
    return std::nullopt;
  std::optional<SmallVector<int64_t>> axes;
  if (!od::isNoValue(op.getAxes()))
    axes = ortc::getConstantIntValues(op.getAxes());
  if (!axes || axes->empty())
    return std::nullopt;
  int64_t rank = type.getRank();
  SmallVector<int64_t> sorted;
  for (int64_t a : *axes)
    sorted.push_back(a < 0 ? a + rank : a);
  llvm::sort(sorted);
  for (size_t i = 0; i < sorted.size(); ++i)
    if (sorted[i] != rank - static_cast<int64_t>(sorted.size()) + static_cast<int64_t>(i))
      return std::nullopt;
  return sorted.front();
}

/// (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps) [* scale] [+ bias]
struct RecognizeLayerNorm : OpRewritePattern<od::DivOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(od::DivOp div, PatternRewriter &rewriter) const override {
    auto sub = div.getA().getDefiningOp<od::SubOp>();
    auto sqrt = div.getB().getDefiningOp<od::SqrtOp>();
    if (!sub || !sqrt)
      return failure();
    auto mean = sub.getB().getDefiningOp<od::ReduceMeanOp>();
    if (!mean || mean.getData() != sub.getA())
      return failure();
    Value x = sub.getA(), centered = sub.getC();
    auto addEps = sqrt.getX().getDefiningOp<od::AddOp>();
    if (!addEps)
      return failure();
    Value variance = addEps.getA(), epsValue = addEps.getB();
    if (!variance.getDefiningOp<od::ReduceMeanOp>())
      std::swap(variance, epsValue);
    auto var = variance.getDefiningOp<od::ReduceMeanOp>();
    auto epsilon = scalarConstant(epsValue);
    if (!var || !epsilon)
      return failure();
    Operation *square = var.getData().getDefiningOp();
    bool isSquare = square && ((isa<od::PowOp>(square) && square->getOperand(0) == centered &&
                                isScalarNear(square->getOperand(1), 2.0)) ||
                               (isa<od::MulOp>(square) && square->getOperand(0) == centered &&
                                square->getOperand(1) == centered));
    auto axis = trailingReduceAxis(mean);
    if (!isSquare || !axis || trailingReduceAxis(var) != axis)
      return rewriter.notifyMatchFailure(div, "not a layer normalization");

    // Optional affine part: a Mul by a constant, then an Add of a constant.
    Value result = div.getC(), scale, bias;
    if (Operation *mul = ortc::soleUser(result); mul && isa<od::MulOp>(mul)) {
      Value other = otherOperand(mul, result);
      if (other && other.getDefiningOp<od::ConstantOp>()) {
        scale = other;
        result = mul->getResult(0);
        if (Operation *add = ortc::soleUser(result); add && isa<od::AddOp>(add)) {
          Value b = otherOperand(add, result);
          if (b && b.getDefiningOp<od::ConstantOp>()) {
            bias = b;
            result = add->getResult(0);
          }
        }
      }
    }
    if (result.use_empty())
      return failure(); // already rewritten; the rest is left to onnx-dce
    if (!allTensors({x, scale, bias, result}))
      return rewriter.notifyMatchFailure(div, "a type is not inferred");
    Operation *last = result.getDefiningOp();
    rewriter.setInsertionPoint(last);
    auto fusedOp = fused::LayerNormOp::create(rewriter, last->getLoc(), result.getType(), x, scale,
                                              bias, rewriter.getI64IntegerAttr(*axis),
                                              rewriter.getF32FloatAttr(*epsilon));
    rewriter.replaceAllUsesWith(result, fusedOp.getResult());
    return success();
  }
};

/// onnx.LayerNormalization whose mean and inverse std-dev outputs are unused.
struct ConvertLayerNormalization : OpRewritePattern<od::LayerNormalizationOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(od::LayerNormalizationOp op,
                                PatternRewriter &rewriter) const override {
    for (unsigned i = 1; i < op->getNumResults(); ++i)
      if (!op->getResult(i).use_empty())
        return rewriter.notifyMatchFailure(op, "statistics outputs are used");
    Value bias = od::isNoValue(op.getB()) ? Value() : op.getB();
    Value scale = od::isNoValue(op.getScale()) ? Value() : op.getScale();
    if (!allTensors({op.getX(), scale, bias, op->getResult(0)}))
      return rewriter.notifyMatchFailure(op, "a type is not inferred");
    auto fusedOp = fused::LayerNormOp::create(
        rewriter, op.getLoc(), op->getResult(0).getType(), op.getX(), op.getScale(), bias,
        rewriter.getI64IntegerAttr(static_cast<int64_t>(op.getAxis())),
        rewriter.getF32FloatAttr(op.getEpsilon().convertToFloat()));
    rewriter.replaceAllUsesWith(op->getResult(0), fusedOp.getResult());
    rewriter.eraseOp(op);
    return success();
  }
};

/// Given t and x, the value of 0.5 * x * (1 + t) in the orders converters
/// write it: (x * (1 + t)) * 0.5, (0.5 x) * (1 + t), ((1 + t) * 0.5) * x.
Value matchHalfXTimesOnePlus(Value t, Value x) {
  Operation *plusOne = ortc::soleUser(t);
  if (!plusOne || !isa<od::AddOp>(plusOne) || !isScalarNear(otherOperand(plusOne, t), 1.0))
    return nullptr;
  Value c = plusOne->getResult(0);
  Operation *mul = ortc::soleUser(c);
  if (!mul || !isa<od::MulOp>(mul))
    return nullptr;
  Value other = otherOperand(mul, c);
  if (other == x) { // (x * c) * 0.5
    Operation *half = ortc::soleUser(mul->getResult(0));
    if (half && isa<od::MulOp>(half) && isScalarNear(otherOperand(half, mul->getResult(0)), 0.5))
      return half->getResult(0);
  } else if (auto halfX = other ? other.getDefiningOp<od::MulOp>() : nullptr) { // (0.5 x) * c
    if (otherOperand(halfX, x) && isScalarNear(otherOperand(halfX, x), 0.5))
      return mul->getResult(0);
  } else if (other && isScalarNear(other, 0.5)) { // (c * 0.5) * x
    Operation *timesX = ortc::soleUser(mul->getResult(0));
    if (timesX && isa<od::MulOp>(timesX) && otherOperand(timesX, mul->getResult(0)) == x)
      return timesX->getResult(0);
  }
  return nullptr;
}

/// 0.5 * x * (1 + erf(x / sqrt(2))), in the orders converters write it.
struct RecognizeErfGelu : OpRewritePattern<od::ErfOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(od::ErfOp erf, PatternRewriter &rewriter) const override {
    Operation *scaled = erf.getInput().getDefiningOp();
    if (!scaled)
      return failure();
    Value x;
    if (isa<od::DivOp>(scaled) && isScalarNear(scaled->getOperand(1), std::sqrt(2.0)))
      x = scaled->getOperand(0);
    else if (isa<od::MulOp>(scaled) && isScalarNear(scaled->getOperand(1), std::sqrt(0.5)))
      x = scaled->getOperand(0);
    else if (isa<od::MulOp>(scaled) && isScalarNear(scaled->getOperand(0), std::sqrt(0.5)))
      x = scaled->getOperand(1);
    if (!x)
      return rewriter.notifyMatchFailure(erf, "erf input is not x / sqrt(2)");
    Value result = matchHalfXTimesOnePlus(erf.getOutput(), x);
    if (!result)
      return rewriter.notifyMatchFailure(erf, "no 0.5 * x * (1 + erf) product");
    if (result.use_empty())
      return failure(); // already rewritten
    if (!allTensors({x, result}))
      return rewriter.notifyMatchFailure(erf, "a type is not inferred");
    Operation *last = result.getDefiningOp();
    rewriter.setInsertionPoint(last);
    auto gelu = fused::GeluOp::create(rewriter, last->getLoc(), result.getType(), x,
                                      rewriter.getStringAttr("none"));
    rewriter.replaceAllUsesWith(result, gelu.getResult());
    return success();
  }
};

/// 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))), as exported for
/// "gelu_new"/"gelu_pytorch_tanh".
struct RecognizeTanhGelu : OpRewritePattern<od::TanhOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(od::TanhOp tanh, PatternRewriter &rewriter) const override {
    auto scaled = tanh.getInput().getDefiningOp<od::MulOp>();
    if (!scaled)
      return failure();
    Value inner = scaled.getA(), k = scaled.getB();
    if (!isScalarNear(k, std::sqrt(2.0 / M_PI)))
      std::swap(inner, k);
    auto add = inner.getDefiningOp<od::AddOp>();
    if (!isScalarNear(k, std::sqrt(2.0 / M_PI)) || !add)
      return rewriter.notifyMatchFailure(tanh, "tanh input is not sqrt(2/pi) * (...)");
    // add = x + 0.044715 * x^3, either operand order.
    for (int side = 0; side < 2; ++side) {
      Value x = add->getOperand(side);
      auto cubic = add->getOperand(1 - side).getDefiningOp<od::MulOp>();
      if (!cubic)
        continue;
      Value cube = cubic.getA(), c = cubic.getB();
      if (!isScalarNear(c, 0.044715))
        std::swap(cube, c);
      auto pow = cube.getDefiningOp<od::PowOp>();
      if (!isScalarNear(c, 0.044715) || !pow || pow.getX() != x || !isScalarNear(pow.getY(), 3.0))
        continue;
      Value result = matchHalfXTimesOnePlus(tanh.getOutput(), x);
      if (!result || result.use_empty() || !allTensors({x, result}))
        continue;
      Operation *last = result.getDefiningOp();
      rewriter.setInsertionPoint(last);
      auto gelu = fused::GeluOp::create(rewriter, last->getLoc(), result.getType(), x,
                                        rewriter.getStringAttr("tanh"));
      rewriter.replaceAllUsesWith(result, gelu.getResult());
      return success();
    }
    return rewriter.notifyMatchFailure(tanh, "not x + 0.044715 x^3");
  }
};

struct ConvertGelu : OpRewritePattern<od::GeluOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(od::GeluOp op, PatternRewriter &rewriter) const override {
    if (!allTensors({op.getX(), op->getResult(0)}))
      return rewriter.notifyMatchFailure(op, "a type is not inferred");
    rewriter.replaceOpWithNewOp<fused::GeluOp>(op, op.getType(), op.getX(),
                                               rewriter.getStringAttr(op.getApproximate()));
    return success();
  }
};

bool swapsLastTwoDims(od::TransposeOp op) {
  auto perm = op.getPerm();
  auto type = dyn_cast<RankedTensorType>(op.getData().getType());
  if (!type || type.getRank() < 2)
    return false;
  int64_t rank = type.getRank();
  SmallVector<int64_t> expected;
  for (int64_t i = 0; i < rank - 2; ++i)
    expected.push_back(i);
  expected.push_back(rank - 1);
  expected.push_back(rank - 2);
  if (!perm)
    return rank == 2;
  return llvm::equal(*perm, expected);
}

/// The tensor whose last two dims `kt` holds swapped: k of Transpose(k)
/// swapping its last two dims, or of Reshape(Transpose(Reshape(k))) whose
/// reshapes only merge and split k's leading dims again (torch's SDPA
/// export of k^T: [B, H, S, D] -> [B*H, S, D] -> [B*H, D, S] -> [B, H, D, S]).
/// Null otherwise.
Value keyOfTransposed(Value kt) {
  auto t = kt.getDefiningOp<od::TransposeOp>();
  if (t)
    return swapsLastTwoDims(t) ? t.getData() : Value();
  auto outer = kt.getDefiningOp<od::ReshapeOp>();
  t = outer ? outer.getData().getDefiningOp<od::TransposeOp>() : nullptr;
  auto inner = t ? t.getData().getDefiningOp<od::ReshapeOp>() : nullptr;
  if (!inner || !swapsLastTwoDims(t))
    return {};
  Value k = inner.getData();
  auto kType = dyn_cast<RankedTensorType>(k.getType());
  auto ktType = dyn_cast<RankedTensorType>(kt.getType());
  auto merged = dyn_cast<RankedTensorType>(inner.getResult().getType());
  if (!kType || !ktType || !merged || !kType.hasStaticShape() || !ktType.hasStaticShape() ||
      !merged.hasStaticShape() || kType.getRank() < 2 || merged.getRank() < 2 ||
      ktType.getRank() != kType.getRank())
    return {};
  ArrayRef<int64_t> ks = kType.getShape(), kts = ktType.getShape(), ms = merged.getShape();
  int64_t r = kType.getRank(), mr = merged.getRank();
  // The inner reshape keeps (S, D), so it only regroups the leading dims;
  // the outer one gives back k's leading dims around (D, S).
  if (ms[mr - 2] != ks[r - 2] || ms[mr - 1] != ks[r - 1] || kts[r - 2] != ks[r - 1] ||
      kts[r - 1] != ks[r - 2] || ks.drop_back(2) != kts.drop_back(2))
    return {};
  return k;
}

/// `v` without a Mul by a scalar constant, whose factor multiplies `scale`
/// (torch's SDPA export scales q and k^T by sqrt(scale) each).
Value withoutScalarMul(Value v, double &scale) {
  auto mul = v.getDefiningOp<od::MulOp>();
  if (!mul || (mul.getA().getType() != v.getType() && mul.getB().getType() != v.getType()))
    return v;
  if (auto s = scalarConstant(mul.getB())) {
    scale *= *s;
    return mul.getA();
  }
  if (auto s = scalarConstant(mul.getA())) {
    scale *= *s;
    return mul.getB();
  }
  return v;
}

/// The MatMul that reads softmax probabilities `p` as its A: directly, or
/// through Where(IsNaN(p), 0, p), torch's SDPA export's guard for fully
/// masked rows (`nanToZero` set). Null otherwise.
Operation *probabilitiesReader(Value p, bool &nanToZero) {
  nanToZero = false;
  if (Operation *user = ortc::soleUser(p))
    return isa<od::MatMulOp>(user) && user->getOperand(0) == p ? user : nullptr;
  od::WhereOp guard;
  od::IsNaNOp isNaN;
  for (Operation *user : p.getUsers()) {
    if (auto w = dyn_cast<od::WhereOp>(user))
      guard = w;
    else if (auto n = dyn_cast<od::IsNaNOp>(user))
      isNaN = n;
    else
      return nullptr;
  }
  if (!guard || !isNaN || guard.getCondition() != isNaN.getResult() || guard.getY() != p ||
      !isNaN.getResult().hasOneUse() || !isScalarNear(guard.getX(), 0.0, 0))
    return nullptr;
  // The guard keeps p's type: a 0 that broadcast it wider is no guard.
  if (guard.getResult().getType() != p.getType())
    return nullptr;
  Operation *user = ortc::soleUser(guard.getResult());
  if (!user || !isa<od::MatMulOp>(user) || user->getOperand(0) != guard.getResult())
    return nullptr;
  nanToZero = true;
  return user;
}

/// Whether `t` is a rank-4 Transpose swapping dims 1 and 2 ([B, S, H, D]
/// <-> [B, H, S, D]).
bool swapsSequenceAndHeads(od::TransposeOp t) {
  auto type = t ? dyn_cast<RankedTensorType>(t.getData().getType()) : nullptr;
  return type && type.getRank() == 4 && t.getPerm() &&
         llvm::equal(*t.getPerm(), ArrayRef<int64_t>{0, 2, 1, 3});
}

/// MatMul(Softmax(MatMul(q, k^T) [* s | / s] [+ mask]) [NaN -> 0], v), q
/// and k^T each optionally scaled by a scalar (see keyOfTransposed,
/// withoutScalarMul and probabilitiesReader for the forms taken).
struct RecognizeAttention : OpRewritePattern<od::SoftmaxOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(od::SoftmaxOp softmax, PatternRewriter &rewriter) const override {
    auto type = dyn_cast<RankedTensorType>(softmax.getInput().getType());
    int64_t axis = static_cast<int64_t>(softmax.getAxis());
    if (!type || (axis != -1 && axis != type.getRank() - 1))
      return failure();
    bool nanToZero = false;
    Operation *outMatMul = probabilitiesReader(softmax.getOutput(), nanToZero);
    if (!outMatMul)
      return failure();
    Value v = outMatMul->getOperand(1), scores = softmax.getInput(), mask;
    if (auto add = scores.getDefiningOp<od::AddOp>()) {
      // The mask is the side that is not the scaled product.
      Value a = add.getA(), b = add.getB();
      bool aIsProduct = a.getDefiningOp<od::MatMulOp>() || a.getDefiningOp<od::MulOp>() ||
                        a.getDefiningOp<od::DivOp>();
      scores = aIsProduct ? a : b;
      mask = aIsProduct ? b : a;
    }
    double scale = 1.0;
    if (auto mul = scores.getDefiningOp<od::MulOp>()) {
      bool productFirst = static_cast<bool>(mul.getA().getDefiningOp<od::MatMulOp>());
      auto s = scalarConstant(productFirst ? mul.getB() : mul.getA());
      if (!s)
        return failure();
      scale = *s;
      scores = productFirst ? mul.getA() : mul.getB();
    } else if (auto div = scores.getDefiningOp<od::DivOp>()) {
      auto s = scalarConstant(div.getB());
      if (!s || *s == 0)
        return failure();
      scale = 1.0 / *s;
      scores = div.getA();
    }
    auto qk = scores.getDefiningOp<od::MatMulOp>();
    Value q = qk ? withoutScalarMul(qk.getA(), scale) : Value();
    Value k = qk ? keyOfTransposed(withoutScalarMul(qk.getB(), scale)) : Value();
    if (!q || !k)
      return rewriter.notifyMatchFailure(softmax, "not softmax(q k^T) v");
    // One batch of heads: a MatMul that broadcasts q, k or v is left alone.
    auto qType = dyn_cast<RankedTensorType>(q.getType());
    auto kType = dyn_cast<RankedTensorType>(k.getType());
    auto vType = dyn_cast<RankedTensorType>(v.getType());
    if (!qType || !kType || !vType || qType.getRank() < 2 || qType.getRank() != kType.getRank() ||
        qType.getRank() != vType.getRank() ||
        qType.getShape().drop_back(2) != kType.getShape().drop_back(2) ||
        qType.getShape().drop_back(2) != vType.getShape().drop_back(2))
      return rewriter.notifyMatchFailure(softmax, "q, k and v do not share their leading dims");
    // q, k and v transposed from [B, S, H, D] and the output transposed back
    // (the heads split out of the projections and merged again): the
    // kernel reads and writes the untransposed tensors.
    Value result = outMatMul->getResult(0);
    auto qT = q.getDefiningOp<od::TransposeOp>(), kT = k.getDefiningOp<od::TransposeOp>(),
         vT = v.getDefiningOp<od::TransposeOp>();
    auto outTranspose = dyn_cast_or_null<od::TransposeOp>(ortc::soleUser(result));
    bool sequenceFirst = swapsSequenceAndHeads(qT) && swapsSequenceAndHeads(kT) &&
                         swapsSequenceAndHeads(vT) && swapsSequenceAndHeads(outTranspose);
    if (sequenceFirst) {
      q = qT.getData();
      k = kT.getData();
      v = vT.getData();
      result = outTranspose.getTransposed();
    }
    if (result.use_empty())
      return failure(); // already rewritten
    if (!allTensors({mask, result}))
      return rewriter.notifyMatchFailure(softmax, "a type is not inferred");
    rewriter.setInsertionPoint(sequenceFirst ? outTranspose : outMatMul);
    auto attention =
        fused::AttentionOp::create(rewriter, outMatMul->getLoc(), result.getType(), q, k, v, mask,
                                   rewriter.getF32FloatAttr(static_cast<float>(scale)),
                                   nanToZero ? rewriter.getUnitAttr() : UnitAttr(),
                                   sequenceFirst ? rewriter.getUnitAttr() : UnitAttr());
    rewriter.replaceAllUsesWith(result, attention.getResult());
    return success();
  }
};

struct OnnxRecognizeFusedOps : ortc::impl::OnnxRecognizeFusedOpsBase<OnnxRecognizeFusedOps> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RecognizeLayerNorm, ConvertLayerNormalization, RecognizeErfGelu, RecognizeTanhGelu,
                 ConvertGelu, RecognizeAttention>(&getContext());
    // Matched subgraphs lose their users and are left to onnx-dce.
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
