//===- NNShapes.cpp - convolutions, pools, normalizations, RNNs, Resize ---===//

#include "compiler/Transforms/ShapeRules/ShapeRuleModels.h"

#include "compiler/Transforms/HostTensor.h"
#include "dialects/onnx/OnnxOps.h"
#include "runtime/ep/WindowGeometry.h"

#include "llvm/ADT/Twine.h"

#include <algorithm>
#include <cmath>

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace ortc {

/// An optional ints attribute, or `n` copies of `fill` when absent.
static SmallVector<int64_t> orFill(std::optional<ArrayRef<int64_t>> a, size_t n, int64_t fill) {
  return a ? SmallVector<int64_t>(*a) : SmallVector<int64_t>(n, fill);
}

LogicalResult inferWindowOf(ShapeRuleContext &ctx, const WindowAttrs &attrs, Value x, Value w,
                            Value result, Type element) {
  const DimList *xd = ctx.dims(x);
  if (!xd || xd->size() < 3) {
    ctx.setUnranked(result, element);
    return success();
  }
  // Channels last: the rule below on x's dims as [N, C, D1..Dn].
  DimList channelsFirst;
  if (attrs.channelsLast) {
    channelsFirst = {xd->front(), xd->back()};
    channelsFirst.append(xd->begin() + 1, xd->end() - 1);
    xd = &channelsFirst;
  }
  size_t spatial = xd->size() - 2;
  // Kernel sizes: the attribute, else W's spatial dims (unknown: -1).
  SmallVector<int64_t> kernel;
  int32_t channels = (*xd)[1];
  if (w) {
    const DimList *wd = ctx.dims(w);
    if (!wd || wd->size() != xd->size()) {
      ctx.setUnranked(result, element);
      return success();
    }
    channels = attrs.channels ? ctx.constant(*attrs.channels) : (*wd)[0];
    for (size_t i = 2; i < wd->size(); ++i)
      kernel.push_back(ctx.constantValue((*wd)[i]).value_or(-1));
  }
  if (attrs.kernelShape)
    kernel.assign(attrs.kernelShape->begin(), attrs.kernelShape->end());
  if (kernel.size() != spatial)
    return ctx.fail("kernel_shape has " + Twine(kernel.size()) + " dims, the input has " +
                    Twine(spatial) + " spatial dims");
  SmallVector<int64_t> strides = orFill(attrs.strides, spatial, 1),
                       dilations = orFill(attrs.dilations, spatial, 1),
                       pads = orFill(attrs.pads, 2 * spatial, 0);
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial)
    return ctx.fail("strides, dilations or pads do not match the " + Twine(spatial) +
                    " spatial dims");
  for (size_t i = 0; i < spatial; ++i)
    if (strides[i] <= 0 || dilations[i] <= 0 || kernel[i] == 0 || kernel[i] < -1 || pads[i] < 0 ||
        pads[i + spatial] < 0)
      return ctx.fail("strides, dilations and kernel sizes must be positive and pads not negative");
  std::optional<AutoPad> autoPad = parseAutoPad(attrs.autoPad.str());
  if (!autoPad)
    return ctx.fail("unknown auto_pad '" + attrs.autoPad + "'");
  DimList out = {(*xd)[0], channels};
  for (size_t i = 0; i < spatial; ++i) {
    int32_t in = (*xd)[2 + i];
    if (in == kUnknownDim || kernel[i] < 0) {
      out.push_back(kUnknownDim);
      continue;
    }
    SymDim d = windowOutputSize(ctx.dim(in), kernel[i], strides[i], dilations[i], pads[i],
                                pads[spatial + i], *autoPad, attrs.ceilMode);
    if (std::optional<int64_t> size = d.constant(); size && *size <= 0)
      return ctx.fail("the window is larger than the padded input in spatial dim " + Twine(i));
    out.push_back(d.id);
  }
  if (attrs.channelsLast)
    std::rotate(out.begin() + 1, out.begin() + 2, out.end());
  ctx.setResult(result, element, out);
  return success();
}

namespace {

LogicalResult inferConv(od::ConvOp op, ShapeRuleContext &ctx) {
  return inferWindowOf(ctx, convWindowAttrs(op), op.getX(), op.getW(), op.getY(),
                       ctx.elementType(op.getX()));
}

template <typename PoolOp> LogicalResult inferPool(PoolOp op, ShapeRuleContext &ctx) {
  WindowAttrs attrs{op.getKernelShape(), op.getStrides(), op.getDilations(), op.getPads(),
                    op.getAutoPad(), op.getCeilMode() != 0};
  if (failed(inferWindowOf(ctx, attrs, op.getX(), Value(), op.getY(), ctx.elementType(op.getX()))))
    return failure();
  // MaxPool's optional Indices output has the same shape, as int64.
  if constexpr (std::is_same_v<PoolOp, od::MaxPoolOp>) {
    const ShapeRuleContext::Proposal &y = ctx.proposals()[0];
    if (y.dims)
      ctx.setResult(op.getIndices(), IntegerType::get(op->getContext(), 64), *y.dims);
  }
  return success();
}

/// ConvTranspose: [N, W[1] * group, spatial...], each spatial dim from
/// output_shape, or the transposed window rule (WindowGeometry.h).
LogicalResult inferConvTranspose(od::ConvTransposeOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getX());
  const DimList *x = ctx.dims(op.getX()), *w = ctx.dims(op.getW());
  if (!x || !w || x->size() < 3 || w->size() != x->size()) {
    ctx.setUnranked(op.getY(), element);
    return success();
  }
  size_t spatial = x->size() - 2;
  SmallVector<int64_t> kernel;
  for (size_t i = 2; i < w->size(); ++i)
    kernel.push_back(ctx.constantValue((*w)[i]).value_or(-1));
  if (auto ks = op.getKernelShape())
    kernel.assign(ks->begin(), ks->end());
  SmallVector<int64_t> strides = orFill(op.getStrides(), spatial, 1),
                       dilations = orFill(op.getDilations(), spatial, 1),
                       outputPadding = orFill(op.getOutputPadding(), spatial, 0),
                       pads = orFill(op.getPads(), 2 * spatial, 0);
  std::optional<ArrayRef<int64_t>> outputShape = op.getOutputShape();
  std::optional<AutoPad> autoPad = parseAutoPad(op.getAutoPad().str());
  if (kernel.size() != spatial || strides.size() != spatial || dilations.size() != spatial ||
      outputPadding.size() != spatial || pads.size() != 2 * spatial || !autoPad ||
      (outputShape && outputShape->size() != spatial)) {
    ctx.setUnranked(op.getY(), element); // the kernel's plan names what is wrong
    return success();
  }
  int64_t group = int64_t(op.getGroup());
  std::optional<int64_t> perGroup = ctx.constantValue((*w)[1]);
  DimList out = {(*x)[0], perGroup && group >= 1 ? ctx.constant(*perGroup * group) : kUnknownDim};
  for (size_t i = 0; i < spatial; ++i) {
    int32_t in = (*x)[2 + i];
    if (outputShape)
      out.push_back(ctx.constant((*outputShape)[i]));
    else if (in == kUnknownDim || kernel[i] < 0)
      out.push_back(kUnknownDim);
    else
      out.push_back(transposedWindowOutputSize(ctx.dim(in), kernel[i], strides[i], dilations[i],
                                               outputPadding[i], pads[i], pads[spatial + i],
                                               *autoPad)
                        .id);
  }
  ctx.setResult(op.getY(), element, out);
  return success();
}

/// GlobalAveragePool, GlobalMaxPool, GlobalLpPool: [N, C, 1, ...].
LogicalResult inferGlobalPool(Operation *op, ShapeRuleContext &ctx) {
  Value x = op->getOperand(0);
  const DimList *xd = ctx.dims(x);
  if (!xd || xd->size() < 2) {
    ctx.setUnranked(op->getResult(0), ctx.elementType(x));
    return success();
  }
  DimList out = {(*xd)[0], (*xd)[1]};
  out.resize(xd->size(), ctx.constant(1));
  ctx.setResult(op->getResult(0), ctx.elementType(x), out);
  return success();
}

/// The normalizations: Y is shaped like X (the statistics outputs keep the
/// importer's types).
LogicalResult inferNormalization(Operation *op, ShapeRuleContext &ctx) {
  ctx.setLike(op->getResult(0), op->getOperand(0));
  return success();
}

/// LayerNormalization: Y like X; Mean and InvStdDev keep X's dims before
/// `axis` and are 1 from it on.
LogicalResult inferLayerNormalization(od::LayerNormalizationOp op, ShapeRuleContext &ctx) {
  ctx.setLike(op.getY(), op.getX());
  const DimList *x = ctx.dims(op.getX());
  if (!x)
    return success();
  std::optional<int64_t> axis = normalizeAxis(op.getAxis(), int64_t(x->size()));
  if (!axis)
    return ctx.fail("axis " + Twine(op.getAxis()) + " is out of range for rank " +
                    Twine(x->size()));
  DimList stats(x->begin(), x->begin() + *axis);
  stats.resize(x->size(), ctx.constant(1));
  Type statsElement = op.getStashType() == 1 ? Type(Float32Type::get(op.getContext()))
                                             : ctx.elementType(op.getX());
  for (Value result : {op.getMean(), op.getInvStdDev()})
    if (auto declared = dyn_cast<TensorType>(result.getType()))
      ctx.setResult(result, declared.getElementType(), stats);
    else if (statsElement)
      ctx.setResult(result, statsElement, stats);
  return success();
}

/// GridSample: [N, C] of X, then the grid's output positions ([N, H, W, 2]
/// or [N, D, H, W, 3]).
LogicalResult inferGridSample(od::GridSampleOp op, ShapeRuleContext &ctx) {
  const DimList *x = ctx.dims(op.getX()), *grid = ctx.dims(op.getGrid());
  if (!x || !grid || x->size() < 3 || grid->size() != x->size())
    return success();
  DimList out{(*x)[0], (*x)[1]};
  out.append(grid->begin() + 1, grid->end() - 1);
  ctx.setResult(op.getY(), ctx.elementType(op.getX()), out);
  return success();
}

/// AffineGrid: size [N, C, H, W] gives [N, H, W, 2]; [N, C, D, H, W] gives
/// [N, D, H, W, 3].
LogicalResult inferAffineGrid(od::AffineGridOp op, ShapeRuleContext &ctx) {
  const DimList *size = ctx.bounds(op.getSize());
  if (!size || (size->size() != 4 && size->size() != 5))
    return success();
  DimList out{(*size)[0]};
  out.append(size->begin() + 2, size->end());
  out.push_back(ctx.constant(int64_t(size->size()) - 2));
  ctx.setResult(op.getGrid(), ctx.elementType(op.getTheta()), out);
  return success();
}

/// SpaceToDepth: [N, C * b * b, H / b, W / b]; DepthToSpace the inverse.
template <typename OpT, bool ToDepth>
LogicalResult inferBlockRearrange(OpT op, ShapeRuleContext &ctx) {
  const DimList *x = ctx.dims(op.getInput());
  if (!x)
    return success();
  if (x->size() != 4)
    return ctx.fail("input must be rank 4 [N, C, H, W]");
  if (op.getBlocksize() <= 0)
    return ctx.fail("blocksize must be positive");
  DimTable &table = ctx.table();
  int32_t b = ctx.constant(int64_t(op.getBlocksize()));
  int32_t area = table.mul(b, b);
  DimList out = ToDepth ? DimList{(*x)[0], table.mul((*x)[1], area), table.floorDiv((*x)[2], b),
                                  table.floorDiv((*x)[3], b)}
                        : DimList{(*x)[0], table.floorDiv((*x)[1], area), table.mul((*x)[2], b),
                                  table.mul((*x)[3], b)};
  ctx.setResult(op.getOutput(), ctx.elementType(op.getInput()), out);
  return success();
}

/// RoiAlign: [num_rois, C, output_height, output_width].
LogicalResult inferRoiAlign(od::RoiAlignOp op, ShapeRuleContext &ctx) {
  const DimList *x = ctx.dims(op.getX()), *rois = ctx.dims(op.getRois());
  if (!x || !rois || x->size() != 4 || rois->size() != 2)
    return success();
  ctx.setResult(op.getY(), ctx.elementType(op.getX()),
                DimList{(*rois)[0], (*x)[1], ctx.constant(int64_t(op.getOutputHeight())),
                        ctx.constant(int64_t(op.getOutputWidth()))});
  return success();
}

/// RNN, GRU, LSTM: Y [S, D, B, H] (layout 1: [B, S, D, H]), Y_h and Y_c
/// [D, B, H] (layout 1: [B, D, H]).
template <typename RecurrentOp>
LogicalResult inferRecurrent(RecurrentOp op, ShapeRuleContext &ctx) {
  const DimList *x = ctx.dims(op.getX()), *r = ctx.dims(op.getR());
  if (!x)
    return success();
  if (x->size() != 3)
    return ctx.fail("X has rank " + Twine(x->size()) + "; it must be [seq, batch, input] (rank 3)");
  bool batchFirst = op.getLayout() == 1;
  int32_t seq = (*x)[batchFirst ? 1 : 0], batch = (*x)[batchFirst ? 0 : 1];
  int32_t dirs = ctx.constant(op.getDirection() == "bidirectional" ? 2 : 1);
  int32_t hidden = op.getHiddenSize()        ? ctx.constant(int64_t(*op.getHiddenSize()))
                   : r && r->size() == 3 ? (*r)[2]
                                         : kUnknownDim;
  DimList y = batchFirst ? DimList{batch, seq, dirs, hidden} : DimList{seq, dirs, batch, hidden};
  DimList state = batchFirst ? DimList{batch, dirs, hidden} : DimList{dirs, batch, hidden};
  Type element = ctx.elementType(op.getX());
  for (OpResult result : op->getResults())
    ctx.setResult(result, element, result.getResultNumber() == 0 ? y : state);
  return success();
}

/// Resize-13+: each dim is `sizes`' (stretched; the other policies tie the
/// axes together), or floor(dim * scale): exact for a static dim, d * s for
/// a dynamic one only with a whole scale. A dim that the scales or sizes
/// decide only when the op runs (scales computed from data, a keep-aspect
/// policy, a dynamic dim times a fractional scale) is a data symbol, which
/// the kernel binds when it sizes its output. The rank is X's.
LogicalResult inferResize(od::ResizeOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getX());
  const DimList *x = ctx.dims(op.getX());
  if (!x) {
    ctx.setUnranked(op.getY(), element);
    return success();
  }
  DimList out(x->size(), kUnknownDim);
  if (ctx.present(op.getSizes()) && !op.getAxes()) {
    const DimList *sizes = ctx.bounds(op.getSizes());
    if (sizes && sizes->size() == x->size() && op.getKeepAspectRatioPolicy() == "stretch")
      out = *sizes;
  } else if (!op.getAxes()) {
    std::optional<HostTensor> scales = readHostTensor(op.getScales(), 16);
    for (size_t i = 0; scales && scales->numElements() == int64_t(x->size()) && i < x->size();
         ++i) {
      double s = scales->floatAt(int64_t(i));
      if (!(s > 0))
        return ctx.fail("scale " + Twine(std::to_string(s)) + " on axis " + Twine(i) +
                        " is not positive");
      int32_t d = (*x)[i];
      std::optional<int64_t> size = ctx.constantValue(d);
      if (size)
        out[i] = ctx.constant(int64_t(std::floor(double(*size) * s)));
      else if (d != kUnknownDim && s >= 1 && s == std::floor(s))
        out[i] = ctx.table().mul(d, ctx.constant(int64_t(s)));
      else if (d != kUnknownDim && s == 1)
        out[i] = d;
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    if (out[i] == kUnknownDim)
      out[i] = ctx.dataDim(op.getY(), unsigned(i));
  ctx.setResult(op.getY(), element, out);
  return success();
}

} // namespace

void attachNNShapeRules(MLIRContext *context) {
  attachRule<inferConv, od::ConvOp>(context);
  attachRule<inferPool<od::MaxPoolOp>, od::MaxPoolOp>(context);
  attachRule<inferPool<od::AveragePoolOp>, od::AveragePoolOp>(context);
  attachRule<inferPool<od::LpPoolOp>, od::LpPoolOp>(context);
  attachRule<inferConvTranspose, od::ConvTransposeOp>(context);
  attachRule<inferGlobalPool, od::GlobalAveragePoolOp, od::GlobalMaxPoolOp, od::GlobalLpPoolOp>(
      context);
  attachRule<inferNormalization, od::BatchNormalizationOp, od::InstanceNormalizationOp,
             od::GroupNormalizationOp>(context);
  attachRule<inferLayerNormalization, od::LayerNormalizationOp>(context);
  attachRule<inferLikeInput0, od::RMSNormalizationOp, od::LRNOp>(context);
  attachRule<inferGridSample, od::GridSampleOp>(context);
  attachRule<inferAffineGrid, od::AffineGridOp>(context);
  attachRule<inferBlockRearrange<od::SpaceToDepthOp, true>, od::SpaceToDepthOp>(context);
  attachRule<inferBlockRearrange<od::DepthToSpaceOp, false>, od::DepthToSpaceOp>(context);
  attachRule<inferRoiAlign, od::RoiAlignOp>(context);
  attachRule<inferRecurrent<od::RNNOp>, od::RNNOp>(context);
  attachRule<inferRecurrent<od::GRUOp>, od::GRUOp>(context);
  attachRule<inferRecurrent<od::LSTMOp>, od::LSTMOp>(context);
  attachRule<inferResize, od::ResizeOp>(context);
}

} // namespace ortc
