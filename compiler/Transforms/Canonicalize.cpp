//===- Canonicalize.cpp - onnx-canonicalize and its patterns --------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/ConstantValues.h"
#include "dialects/onnx/OnnxOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ortc {
#define GEN_PASS_DEF_ONNXCANONICALIZE
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
using namespace ortc::onnx_dialect;

namespace {

/// Identity(x) -> x, when x already has the result's type.
struct RemoveIdentity : OpRewritePattern<IdentityOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(IdentityOp op, PatternRewriter &rewriter) const override {
    if (op.getInput().getType() != op.getType())
      return rewriter.notifyMatchFailure(op, "input and result types differ");
    rewriter.replaceOp(op, op.getInput());
    return success();
  }
};

/// The permutation a Transpose applies; a missing `perm` reverses the dims.
std::optional<SmallVector<int64_t>> permutationOf(TransposeOp op) {
  if (auto perm = op.getPerm())
    return SmallVector<int64_t>(perm->begin(), perm->end());
  auto type = dyn_cast<RankedTensorType>(op.getData().getType());
  if (!type)
    return std::nullopt;
  SmallVector<int64_t> reversed;
  for (int64_t i = type.getRank() - 1; i >= 0; --i)
    reversed.push_back(i);
  return reversed;
}

bool isIdentityPermutation(ArrayRef<int64_t> perm) {
  for (size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<int64_t>(i))
      return false;
  return true;
}

/// Transpose(Transpose(x, p1), p2) -> Transpose(x, c) with c[i] = p1[p2[i]];
/// Transpose(x, identity) -> x.
struct FoldTransposes : OpRewritePattern<TransposeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(TransposeOp op, PatternRewriter &rewriter) const override {
    auto outer = permutationOf(op);
    if (!outer)
      return rewriter.notifyMatchFailure(op, "unknown rank");
    if (isIdentityPermutation(*outer) && op.getData().getType() == op.getType()) {
      rewriter.replaceOp(op, op.getData());
      return success();
    }
    auto producer = op.getData().getDefiningOp<TransposeOp>();
    if (!producer)
      return failure();
    auto inner = permutationOf(producer);
    if (!inner || inner->size() != outer->size())
      return rewriter.notifyMatchFailure(op, "inner permutation unknown");
    SmallVector<int64_t> composed;
    for (int64_t i : *outer) {
      if (i < 0 || i >= static_cast<int64_t>(inner->size()))
        return rewriter.notifyMatchFailure(op, "permutation out of range");
      composed.push_back((*inner)[i]);
    }
    rewriter.modifyOpInPlace(op, [&] {
      op.getDataMutable().assign(producer.getData());
      op.setPermAttr(rewriter.getDenseI64ArrayAttr(composed));
    });
    return success();
  }
};

/// Reshape(Reshape(x, s1), s2) -> Reshape(x, s2) when s2 is a constant
/// without 0 entries (or allowzero is set): the outer reshape then depends on
/// the element count only, which the inner one preserves.
struct FoldReshapes : OpRewritePattern<ReshapeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(ReshapeOp op, PatternRewriter &rewriter) const override {
    auto producer = op.getData().getDefiningOp<ReshapeOp>();
    if (!producer)
      return failure();
    auto shape = ortc::getConstantIntValues(op.getShape());
    if (!shape)
      return rewriter.notifyMatchFailure(op, "target shape is not a constant");
    if (op.getAllowzero() == 0 && llvm::is_contained(*shape, 0))
      return rewriter.notifyMatchFailure(op, "target shape copies a dim of the inner result");
    rewriter.modifyOpInPlace(op, [&] { op.getDataMutable().assign(producer.getData()); });
    return success();
  }
};

Type elementTypeOf(Type type) {
  if (auto tensor = dyn_cast<TensorType>(type))
    return tensor.getElementType();
  return nullptr;
}

/// Converting `from` to `to` keeps every value exactly.
bool isLosslessConversion(Type from, Type to) {
  if (!from || !to)
    return false;
  if (isa<FloatType>(from) && isa<FloatType>(to)) {
    unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
    return (from.isF16() || from.isBF16() || from.isF32()) && (to.isF32() || to.isF64()) && tw > fw;
  }
  auto fi = dyn_cast<IntegerType>(from), ti = dyn_cast<IntegerType>(to);
  if (!fi || !ti || fi.getWidth() == 1 || ti.getWidth() == 1)
    return false;
  if (fi.isUnsigned())
    return ti.getWidth() > fi.getWidth(); // fits as unsigned, or as signed with a spare bit
  return !ti.isUnsigned() && ti.getWidth() > fi.getWidth();
}

/// Cast(x) to x's own type -> x; Cast(Cast(x, lossless), T) -> Cast(x, T),
/// or x when T is x's type.
struct FoldCasts : OpRewritePattern<CastOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastOp op, PatternRewriter &rewriter) const override {
    Type target = elementTypeForOnnxCode(getContext(), static_cast<int>(op.getTo()));
    if (!target)
      return rewriter.notifyMatchFailure(op, "unknown target type");
    Value input = op.getInput();
    if (elementTypeOf(input.getType()) == target && input.getType() == op.getType()) {
      rewriter.replaceOp(op, input);
      return success();
    }
    auto producer = input.getDefiningOp<CastOp>();
    if (!producer)
      return failure();
    Value original = producer.getInput();
    if (!isLosslessConversion(elementTypeOf(original.getType()), elementTypeOf(input.getType())))
      return rewriter.notifyMatchFailure(op, "inner cast may change values");
    if (original.getType() == op.getType()) {
      rewriter.replaceOp(op, original);
      return success();
    }
    rewriter.modifyOpInPlace(op, [&] { op.getInputMutable().assign(original); });
    return success();
  }
};

/// CastLike(x, like) -> Cast(x, to = like's element type), when that type
/// is known and has an ONNX code: one Cast for every later pattern and EP.
struct CastLikeToCast : OpRewritePattern<CastLikeOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(CastLikeOp op, PatternRewriter &rewriter) const override {
    Type target = elementTypeOf(op.getTargetType().getType());
    if (!target)
      return rewriter.notifyMatchFailure(op, "target type unknown");
    // TensorProto.DataType codes run from 1 to a few dozen.
    int code = 0;
    for (int c = 1; c < 64 && !code; ++c)
      if (elementTypeForOnnxCode(getContext(), c) == target)
        code = c;
    if (!code)
      return rewriter.notifyMatchFailure(op, "no ONNX code for the target type");
    rewriter.replaceOpWithNewOp<CastOp>(op, op.getType(), op.getInput(), op.getRoundModeAttr(),
                                        op.getSaturateAttr(), rewriter.getI64IntegerAttr(code));
    return success();
  }
};

struct OnnxCanonicalize : ortc::impl::OnnxCanonicalizeBase<OnnxCanonicalize> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<RemoveIdentity, FoldTransposes, FoldReshapes, FoldCasts, CastLikeToCast>(
        &getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
