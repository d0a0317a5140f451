//===- ApproximateMath.cpp - cpu-approximate-math -------------------------===//
//
// f32 transcendentals as MLIR's polynomial approximations, so that they
// vectorize and call no library; math.fma as a contractible mul + add, so
// that LLVM fuses it where the target has FMA and never calls fmaf; and what
// no LLVM intrinsic computes accurately (f64 expm1, log1p, erf, erfc) as libm
// calls. Everything else is left to math-to-llvm.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/Passes.h"

#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Math/Transforms/Passes.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Transforms/DialectConversion.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ortc::cpu {
#define GEN_PASS_DEF_CPUAPPROXIMATEMATH
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

using namespace mlir;

namespace {

/// math.fma(a, b, c) -> a * b + c with `contract`: LLVM fuses it when the
/// target has FMA instead of calling fmaf.
struct FmaToContractedMulAdd : OpRewritePattern<math::FmaOp> {
  using OpRewritePattern::OpRewritePattern;
  LogicalResult matchAndRewrite(math::FmaOp op, PatternRewriter &rewriter) const override {
    auto contract = arith::FastMathFlagsAttr::get(getContext(), arith::FastMathFlags::contract);
    Value mul = arith::MulFOp::create(rewriter, op.getLoc(), op.getA(), op.getB(), contract);
    rewriter.replaceOpWithNewOp<arith::AddFOp>(op, mul, op.getC(), contract);
    return success();
  }
};

struct CpuApproximateMathPass
    : ortc::cpu::impl::CpuApproximateMathBase<CpuApproximateMathPass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet approximations(ctx);
    populateMathPolynomialApproximationPatterns(approximations, [](StringRef name) {
      return llvm::is_contained(
          {math::ExpOp::getOperationName(), math::ExpM1Op::getOperationName(),
           math::LogOp::getOperationName(), math::Log1pOp::getOperationName(),
           math::TanhOp::getOperationName(), math::ErfOp::getOperationName(),
           math::ErfcOp::getOperationName()},
          name);
    });
    if (failed(applyPatternsGreedily(getOperation(), std::move(approximations))))
      return signalPassFailure();
    RewritePatternSet fma(ctx);
    fma.add<FmaToContractedMulAdd>(ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(fma))))
      return signalPassFailure();

    // What no LLVM intrinsic computes accurately goes to libm.
    ConversionTarget target(*ctx);
    target.markUnknownOpDynamicallyLegal([](Operation *) { return true; });
    target.addIllegalOp<math::ExpM1Op, math::Log1pOp, math::ErfOp, math::ErfcOp>();
    target.addLegalDialect<func::FuncDialect, vector::VectorDialect, arith::ArithDialect>();
    RewritePatternSet libm(ctx);
    populateMathToLibmConversionPatterns(libm);
    if (failed(applyPartialConversion(getOperation(), target, std::move(libm))))
      return signalPassFailure();
  }
};

} // namespace
