//===- FuseElementwise.cpp - cpu-fuse-elementwise -------------------------===//
//
// Upstream elementwise fusion, restricted to producers whose every use is in
// the consumer: the producer then dies, so a chain becomes one loop nest and
// nothing is computed twice. A producer used elsewhere (a kernel output, a
// value two consumers read) keeps its own loop nest.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Transforms/Transforms.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Transforms/GreedyPatternRewriteDriver.h"

namespace ortc::cpu {
#define GEN_PASS_DEF_CPUFUSEELEMENTWISE
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

using namespace mlir;

namespace {

struct CpuFuseElementwisePass
    : ortc::cpu::impl::CpuFuseElementwiseBase<CpuFuseElementwisePass> {
  void runOnOperation() override {
    MLIRContext *ctx = &getContext();
    RewritePatternSet patterns(ctx);
    // Fuse only a producer whose every use is in the consumer: it then dies,
    // so nothing is computed twice.
    linalg::ControlFusionFn control = [](OpOperand *fused) {
      Operation *producer = fused->get().getDefiningOp();
      Operation *consumer = fused->getOwner();
      return producer && llvm::all_of(producer->getUsers(),
                                      [&](Operation *user) { return user == consumer; });
    };
    linalg::populateElementwiseOpsFusionPatterns(patterns, control);
    linalg::GenericOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::EmptyOp::getCanonicalizationPatterns(patterns, ctx);
    tensor::DimOp::getCanonicalizationPatterns(patterns, ctx);
    if (failed(applyPatternsGreedily(getOperation(), std::move(patterns))))
      signalPassFailure();
  }
};

} // namespace
