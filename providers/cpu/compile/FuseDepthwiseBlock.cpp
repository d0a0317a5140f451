//===- FuseDepthwiseBlock.cpp - cpu-fuse-depthwise-block ------------------===//
//
// A depthwise conv and the pointwise convs next to it (the one it alone
// reads, the one that alone reads it) become one ortc.depthwise_block (see
// Passes.td), whose kernel keeps the tensors between them in cache: always
// channels last; channels first where the depthwise conv's input would not
// stay in cache otherwise.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/Passes.h"

#include "compiler/Transforms/OpQueries.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"
#include "providers/cpu/kernels/SpatialKernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace ortc::cpu {
#define GEN_PASS_DEF_CPUFUSEDEPTHWISEBLOCK
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

using namespace mlir;
namespace onnx = ortc::onnx_dialect;
namespace fused = ortc::fused;

namespace {

/// Static 4-D weights of a fused_conv or an onnx.Conv.
template <typename ConvLike> RankedTensorType weightsOf(ConvLike conv) {
  if (!conv)
    return {};
  auto w = dyn_cast<RankedTensorType>(conv.getW().getType());
  return w && w.getRank() == 4 && w.hasStaticShape() ? w : RankedTensorType();
}

bool allEqual(std::optional<ArrayRef<int64_t>> values, int64_t value) {
  return !values || llvm::all_of(*values, [&](int64_t v) { return v == value; });
}

/// 1x1 weights, group 1, stride 1, no padding.
template <typename ConvLike> bool isPointwise(ConvLike conv) {
  RankedTensorType w = weightsOf(conv);
  return w && w.getDimSize(2) == 1 && w.getDimSize(3) == 1 && conv.getGroup() == 1 &&
         allEqual(conv.getStrides(), 1) && allEqual(conv.getPads(), 0);
}

/// One output channel per input channel, no residual, at most
/// kMaxDepthwiseRows rows of taps.
bool isDepthwise(fused::FusedConvOp conv) {
  RankedTensorType w = weightsOf(conv);
  return w && ortc::isAbsentOperand(conv.getResidual()) &&
         int64_t(conv.getGroup()) == w.getDimSize(0) && w.getDimSize(0) > 1 &&
         w.getDimSize(1) == 1 && w.getDimSize(2) <= ortc::cpu::kernels::kMaxDepthwiseRows;
}

/// A depthwise conv and the pointwise convs fused with it.
struct Block {
  fused::FusedConvOp expand, depthwise, project;
};

/// Channels first, constant weights only: the kernel reads them packed.
bool packableWeights(fused::FusedConvOp conv) {
  return conv.getChannelsLast() || isa_and_nonnull<onnx::ConstantOp>(conv.getW().getDefiningOp());
}

/// Channels first, a block pays where the depthwise conv's static input is
/// large enough that a batch of it would leave the caches
/// (planarDepthwiseBlockPays); channels last, always.
bool blockPays(fused::FusedConvOp depthwise) {
  if (depthwise.getChannelsLast())
    return true;
  auto planes = dyn_cast<RankedTensorType>(depthwise.getX().getType());
  return planes && planes.getRank() == 4 && !planes.isDynamicDim(1) && !planes.isDynamicDim(2) &&
         !planes.isDynamicDim(3) &&
         ortc::cpu::kernels::planarDepthwiseBlockPays(planes.getDimSize(1), planes.getDimSize(2),
                                                      planes.getDimSize(3));
}

/// The pointwise conv of `depthwise`'s layout (no residual) whose output
/// only `depthwise` reads.
fused::FusedConvOp expansionOf(fused::FusedConvOp depthwise) {
  auto expand = depthwise.getX().getDefiningOp<fused::FusedConvOp>();
  if (!expand || !isPointwise(expand) || !ortc::isAbsentOperand(expand.getResidual()) ||
      !expand.getY().hasOneUse() || expand.getChannelsLast() != depthwise.getChannelsLast() ||
      !packableWeights(expand))
    return {};
  return expand;
}

/// The pointwise conv of `depthwise`'s layout that alone reads its output,
/// as its input.
fused::FusedConvOp projectionOf(fused::FusedConvOp depthwise) {
  if (!depthwise.getY().hasOneUse())
    return {};
  auto project = dyn_cast<fused::FusedConvOp>(*depthwise.getY().getUsers().begin());
  if (!project || !isPointwise(project) || project.getX() != depthwise.getY() ||
      project.getChannelsLast() != depthwise.getChannelsLast() || !packableWeights(project))
    return {};
  return project;
}

/// A plain pointwise onnx.Conv that alone reads a channels-first depthwise conv which
/// would make a block (cpu-fuse-conv-epilogue leaves a conv with no residual
/// or activation as it is): as the ortc.fused_conv it means, with neither,
/// so that it can be that block's projection.
void promoteProjections(func::FuncOp fn) {
  SmallVector<onnx::ConvOp> convs;
  fn.walk([&](onnx::ConvOp conv) {
    auto depthwise = conv.getX().getDefiningOp<fused::FusedConvOp>();
    if (depthwise && !depthwise.getChannelsLast() && isDepthwise(depthwise) &&
        blockPays(depthwise) && depthwise.getY().hasOneUse() && isPointwise(conv) &&
        isa_and_nonnull<onnx::ConstantOp>(conv.getW().getDefiningOp()))
      convs.push_back(conv);
  });
  for (onnx::ConvOp conv : convs) {
    OpBuilder b(conv);
    Value none = onnx::NoValueOp::create(b, conv.getLoc(), b.getNoneType()).getResult();
    OperationState state(conv.getLoc(), fused::FusedConvOp::getOperationName());
    state.addOperands({conv.getX(), conv.getW(), conv.getB(), none});
    state.addTypes(conv->getResult(0).getType());
    for (StringRef name : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
      if (Attribute attr = conv->getAttr(name))
        state.addAttribute(name, attr);
    state.addAttribute("activation", b.getStringAttr("none"));
    state.addAttribute("activation_params", b.getDenseF32ArrayAttr({}));
    Operation *fusedConv = b.create(state);
    conv->getResult(0).replaceAllUsesWith(fusedConv->getResult(0));
    conv->erase();
  }
}

void fuse(Block block) {
  Operation *last = block.project ? block.project : block.depthwise;
  OpBuilder b(last);
  SmallVector<Location, 3> locations;
  for (fused::FusedConvOp conv : {block.expand, block.depthwise, block.project})
    if (conv)
      locations.push_back(conv.getLoc());
  // The first conv's name first (messages name it).
  Location loc = b.getFusedLoc(locations);
  // The operands of the convs the block does not have.
  Value none = onnx::NoValueOp::create(b, loc, b.getNoneType()).getResult();
  OperationState state(loc, fused::DepthwiseBlockOp::getOperationName());
  fused::FusedConvOp dw = block.depthwise;
  state.addOperands(
      {block.expand ? block.expand.getX() : dw.getX(), block.expand ? block.expand.getW() : none,
       block.expand ? block.expand.getBias() : none, dw.getW(), dw.getBias(),
       block.project ? block.project.getW() : none, block.project ? block.project.getBias() : none,
       block.project ? block.project.getResidual() : none});
  state.addTypes(last->getResult(0).getType());
  if (block.expand) {
    state.addAttribute("expand_activation", block.expand.getActivationAttr());
    state.addAttribute("expand_activation_params", block.expand.getActivationParamsAttr());
  }
  for (StringRef name : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides",
                         "activation", "activation_params"})
    if (Attribute attr = dw->getAttr(name))
      state.addAttribute(name, attr);
  if (block.project) {
    state.addAttribute("project_activation", block.project.getActivationAttr());
    state.addAttribute("project_activation_params", block.project.getActivationParamsAttr());
  }
  if (dw.getChannelsLast())
    state.addAttribute("channels_last", b.getUnitAttr());
  Operation *fusedOp = b.create(state);
  last->getResult(0).replaceAllUsesWith(fusedOp->getResult(0));
  for (fused::FusedConvOp conv : {block.project, block.depthwise, block.expand})
    if (conv)
      conv->erase();
}

struct CpuFuseDepthwiseBlockPass
    : ortc::cpu::impl::CpuFuseDepthwiseBlockBase<CpuFuseDepthwiseBlockPass> {
  void runOnOperation() override {
    promoteProjections(getOperation());
    SmallVector<Block> blocks;
    getOperation().walk([&](fused::FusedConvOp depthwise) {
      if (!isDepthwise(depthwise) || !blockPays(depthwise))
        return;
      Block block{expansionOf(depthwise), depthwise, projectionOf(depthwise)};
      if (block.expand || block.project)
        blocks.push_back(block);
    });
    // A pointwise conv between two depthwise convs is the projection of
    // the first only.
    llvm::SmallPtrSet<Operation *, 16> taken;
    for (Block &block : blocks) {
      if (block.expand && taken.contains(block.expand))
        block.expand = {};
      if (block.project)
        taken.insert(block.project);
    }
    for (const Block &block : blocks)
      if (block.expand || block.project) {
        fuse(block);
        ++numFused;
      }
  }
};

} // namespace
