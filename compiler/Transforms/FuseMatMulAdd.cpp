//===- FuseMatMulAdd.cpp - onnx-fuse-matmul-add ---------------------------===//
//
// Add(MatMul(A, B), C) -> Gemm(A, B, C) for 2-D float operands, and
// Add(Gemm(A, B, none), C) -> Gemm(A, B, C) when beta is 1: one kernel, and
// the bias add happens in the GEMM's epilogue.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "dialects/onnx/OnnxOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ortc {
#define GEN_PASS_DEF_ONNXFUSEMATMULADD
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
using namespace ortc::onnx_dialect;

namespace {

RankedTensorType rankedFloat(Value v, int64_t rank) {
  auto t = dyn_cast<RankedTensorType>(v.getType());
  if (!t || t.getRank() != rank || !isa<FloatType>(t.getElementType()))
    return nullptr;
  return t;
}

/// Gemm broadcasts C one way to [M, N]: each dim of C is 1 or matches.
bool broadcastsTo(Value c, int64_t m, int64_t n) {
  auto t = dyn_cast<RankedTensorType>(c.getType());
  if (!t || t.getRank() > 2)
    return false;
  SmallVector<int64_t> target{m, n};
  for (int64_t i = 0; i < t.getRank(); ++i) {
    int64_t d = t.getDimSize(t.getRank() - 1 - i), want = target[1 - i];
    if (d != 1 && (ShapedType::isDynamic(d) || d != want))
      return false;
  }
  return true;
}

struct FuseAddIntoGemm : OpRewritePattern<AddOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(AddOp add, PatternRewriter &rewriter) const override {
    for (int side = 0; side < 2; ++side) {
      Value product = add->getOperand(side), bias = add->getOperand(1 - side);
      Operation *producer = product.getDefiningOp();
      if (!producer || !product.hasOneUse())
        continue;
      auto matmul = dyn_cast<MatMulOp>(producer);
      auto gemm = dyn_cast<GemmOp>(producer);
      if (!matmul && !(gemm && isNoValue(gemm.getC()) && gemm.getBeta().convertToDouble() == 1.0))
        continue;
      auto a = rankedFloat(producer->getOperand(0), 2);
      auto b = rankedFloat(producer->getOperand(1), 2);
      auto out = rankedFloat(product, 2);
      if (!a || !b || !out || a.getElementType() != b.getElementType())
        continue;
      auto biasType = dyn_cast<RankedTensorType>(bias.getType());
      if (!biasType || biasType.getElementType() != out.getElementType() ||
          !broadcastsTo(bias, out.getDimSize(0), out.getDimSize(1)))
        continue;
      if (add.getType() != product.getType())
        continue; // the Add would broadcast past [M, N]
      if (gemm) {
        rewriter.modifyOpInPlace(gemm, [&] { gemm.getCMutable().assign(bias); });
        rewriter.replaceOp(add, gemm.getResult());
        return success();
      }
      OperationState state(add.getLoc(), "onnx.Gemm");
      state.addOperands({producer->getOperand(0), producer->getOperand(1), bias});
      state.addTypes(add.getType());
      Operation *fused = rewriter.create(state);
      rewriter.replaceOp(add, fused->getResults());
      rewriter.eraseOp(producer);
      return success();
    }
    return rewriter.notifyMatchFailure(add, "not a bias add on a 2-D MatMul or Gemm");
  }
};

struct OnnxFuseMatMulAdd : ortc::impl::OnnxFuseMatMulAddBase<OnnxFuseMatMulAdd> {
  void runOnOperation() override {
    RewritePatternSet patterns(&getContext());
    patterns.add<FuseAddIntoGemm>(&getContext());
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
