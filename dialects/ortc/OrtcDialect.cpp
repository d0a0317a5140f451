//===- OrtcDialect.cpp - the ortc dialect ---------------------------------===//

#include "dialects/ortc/OrtcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace ortc::fused;

#include "dialects/ortc/OrtcDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/ortc/OrtcOps.cpp.inc"

void OrtcDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/ortc/OrtcOps.cpp.inc"
      >();
}

LogicalResult MaxPoolOp::verify() {
  for (Value v : {getX(), getY()})
    if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && t.getRank() != 4)
      return emitOpError("needs x and y [N, H, W, C], got ") << v.getType();
  if (getKernelShape().size() != 2)
    return emitOpError("needs a 2-D kernel_shape, got ") << getKernelShape().size() << " dims";
  return success();
}

/// A conv epilogue's activation (fused_conv's names) and its parameters.
static LogicalResult verifyConvActivation(Operation *op, StringRef attribute, StringRef activation,
                                          size_t params) {
  size_t want = activation == "clip" ? 2 : activation == "leaky_relu" ? 1 : 0;
  if (activation != "none" && activation != "relu" && activation != "clip" &&
      activation != "leaky_relu")
    return op->emitOpError("unknown ")
           << attribute << " '" << activation << "' (none, relu, clip or leaky_relu)";
  if (params != want)
    return op->emitOpError() << attribute << " '" << activation << "' takes " << want << " "
                             << attribute << "_params, got " << params;
  return success();
}

LogicalResult PointwiseDepthwiseConvOp::verify() {
  if (failed(verifyConvActivation(*this, "pointwise_activation", getPointwiseActivation(),
                                  getPointwiseActivationParams().size())) ||
      failed(
          verifyConvActivation(*this, "activation", getActivation(), getActivationParams().size())))
    return failure();
  for (Value optional : {getPointwiseBias(), getDepthwiseBias()})
    if (!isa<NoneType, TensorType>(optional.getType()))
      return emitOpError("the biases must be tensors or none");
  auto x = dyn_cast<RankedTensorType>(getX().getType());
  auto pointwise = dyn_cast<RankedTensorType>(getPointwiseW().getType());
  auto depthwise = dyn_cast<RankedTensorType>(getDepthwiseW().getType());
  if (!x || !pointwise || !depthwise || x.getRank() != 4 || pointwise.getRank() != 4 ||
      depthwise.getRank() != 4 || !pointwise.hasStaticShape() || !depthwise.hasStaticShape())
    return emitOpError("needs x [N, H, W, C], pointwise_w [E, C, 1, 1] and depthwise_w "
                       "[E, 1, KH, KW], static weights");
  int64_t E = pointwise.getDimSize(0);
  if ((!x.isDynamicDim(3) && pointwise.getDimSize(1) != x.getDimSize(3)) ||
      pointwise.getDimSize(2) != 1 || pointwise.getDimSize(3) != 1 ||
      depthwise.getDimSize(0) != E || depthwise.getDimSize(1) != 1 || getGroup() != E)
    return emitOpError("pointwise_w ")
           << pointwise << ", depthwise_w " << depthwise << " and group " << getGroup()
           << " do not fit x " << x << " (pointwise_w [E, C, 1, 1], depthwise_w [E, 1, KH, KW], "
           << "group E)";
  return success();
}

LogicalResult FusedConvOp::verify() {
  if (failed(
          verifyConvActivation(*this, "activation", getActivation(), getActivationParams().size())))
    return failure();
  for (Value optional : {getBias(), getResidual()})
    if (!isa<NoneType, TensorType>(optional.getType()))
      return emitOpError("bias and residual must be tensors or none");
  if (getChannelsLast()) {
    auto x = dyn_cast<RankedTensorType>(getX().getType());
    auto w = dyn_cast<RankedTensorType>(getW().getType());
    if (!x || !w || x.getRank() != 4 || w.getRank() != 4)
      return emitOpError("channels_last needs x [N, H, W, C] and w [M, C/group, KH, KW]");
  }
  if (auto residual = dyn_cast<TensorType>(getResidual().getType()))
    if (residual != getY().getType())
      return emitOpError("residual ") << residual << " differs from the output "
                                      << getY().getType();
  return success();
}
