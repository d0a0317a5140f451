//===- FusePointwiseDepthwise.cpp - cpu-fuse-pointwise-depthwise ----------===//
//
// A channels-last pointwise conv read only by a channels-last depthwise conv
// becomes one ortc.pointwise_depthwise_conv (see Passes.td), whose kernel
// keeps the pointwise output in cache between the two.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/Passes.h"

#include "compiler/Transforms/OpQueries.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace ortc::cpu {
#define GEN_PASS_DEF_CPUFUSEPOINTWISEDEPTHWISE
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

using namespace mlir;
namespace fused = ortc::fused;

namespace {

// The depthwise kernel's rows of taps are at most this many (the
// kernel's kMaxDepthwiseRows).
constexpr int64_t kMaxDepthwiseRows = 8;

/// Static 4-D weights of a channels-last fused_conv without a residual.
RankedTensorType weightsOf(fused::FusedConvOp conv) {
  if (!conv.getChannelsLast() || !ortc::isAbsentOperand(conv.getResidual()))
    return {};
  auto w = dyn_cast<RankedTensorType>(conv.getW().getType());
  return w && w.getRank() == 4 && w.hasStaticShape() ? w : RankedTensorType();
}

bool allEqual(std::optional<ArrayRef<int64_t>> values, int64_t value) {
  return !values || llvm::all_of(*values, [&](int64_t v) { return v == value; });
}

/// 1x1 weights, group 1, stride 1, no padding.
bool isPointwise(fused::FusedConvOp conv) {
  RankedTensorType w = weightsOf(conv);
  return w && w.getDimSize(2) == 1 && w.getDimSize(3) == 1 && conv.getGroup() == 1 &&
         allEqual(conv.getStrides(), 1) && allEqual(conv.getPads(), 0);
}

/// One output channel per input channel of `channels`, at most
/// kMaxDepthwiseRows rows of taps.
bool isDepthwiseOf(fused::FusedConvOp conv, int64_t channels) {
  RankedTensorType w = weightsOf(conv);
  return w && conv.getGroup() == channels && w.getDimSize(0) == channels &&
         w.getDimSize(1) == 1 && w.getDimSize(2) <= kMaxDepthwiseRows;
}

struct CpuFusePointwiseDepthwisePass
    : ortc::cpu::impl::CpuFusePointwiseDepthwiseBase<CpuFusePointwiseDepthwisePass> {
  void runOnOperation() override {
    SmallVector<std::pair<fused::FusedConvOp, fused::FusedConvOp>> pairs;
    getOperation().walk([&](fused::FusedConvOp pointwise) {
      if (!isPointwise(pointwise) || !pointwise.getY().hasOneUse())
        return;
      auto depthwise = dyn_cast<fused::FusedConvOp>(*pointwise.getY().getUsers().begin());
      if (depthwise && depthwise.getX() == pointwise.getY() &&
          isDepthwiseOf(depthwise, weightsOf(pointwise).getDimSize(0)))
        pairs.emplace_back(pointwise, depthwise);
    });
    for (auto [pointwise, depthwise] : pairs) {
      OpBuilder b(depthwise);
      // Both nodes' names, the pointwise conv's first (messages name it).
      OperationState state(b.getFusedLoc({pointwise.getLoc(), depthwise.getLoc()}),
                           fused::PointwiseDepthwiseConvOp::getOperationName());
      state.addOperands({pointwise.getX(), pointwise.getW(), pointwise.getBias(), depthwise.getW(),
                         depthwise.getBias()});
      state.addTypes(depthwise.getY().getType());
      state.addAttribute("pointwise_activation", pointwise.getActivationAttr());
      state.addAttribute("pointwise_activation_params", pointwise.getActivationParamsAttr());
      for (StringRef name : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides",
                             "activation", "activation_params"})
        if (Attribute attr = depthwise->getAttr(name))
          state.addAttribute(name, attr);
      Operation *pair = b.create(state);
      depthwise.getY().replaceAllUsesWith(pair->getResult(0));
      depthwise->erase();
      pointwise->erase();
      ++numFused;
    }
  }
};

} // namespace
