//===- OrtcDialect.cpp - the ortc dialect ---------------------------------===//

#include "dialects/ortc/OrtcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/IR/TypeUtilities.h"

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

void MatMulBiasOp::build(OpBuilder &builder, OperationState &state, Type output, Value a, Value b,
                         Value bias, const MatMulBiasEpilogue &epilogue) {
  state.addOperands({a, b, bias});
  if (epilogue.residual)
    state.addOperands(epilogue.residual);
  Properties &props = state.getOrAddProperties<Properties>();
  props.setTransB(builder.getBoolAttr(epilogue.transB));
  props.setAlpha(builder.getF32FloatAttr(epilogue.alpha));
  props.setActivation(builder.getStringAttr(epilogue.activation));
  state.addTypes(output);
}

MatMulBiasEpilogue MatMulBiasOp::getEpilogue() {
  return {getTransB(), getAlpha().convertToFloat(), getActivation(), getResidual()};
}

LogicalResult MatMulBiasOp::verify() {
  StringRef activation = getActivation();
  if (activation != "none" && activation != "relu" && activation != "gelu" &&
      activation != "gelu_tanh")
    return emitOpError("unknown activation '") << activation << "' (none, relu, gelu or gelu_tanh)";
  auto b = dyn_cast<RankedTensorType>(getB().getType());
  auto bias = dyn_cast<RankedTensorType>(getBias().getType());
  if (b && b.getRank() < 2)
    return emitOpError("needs b of rank 2 or more, got ") << b;
  if (bias && bias.getRank() != 1)
    return emitOpError("needs a bias [N], got ") << bias;
  if (b && bias) {
    int64_t n = b.getDimSize(b.getRank() - (getTransB() ? 2 : 1));
    if (!ShapedType::isDynamic(n) && !bias.isDynamicDim(0) && bias.getDimSize(0) != n)
      return emitOpError("has a bias of ")
             << bias.getDimSize(0) << " elements for N = " << n
             << (getTransB() ? " (b's dim -2, trans_b)" : " (b's last dim)");
  }
  if (Value residual = getResidual(); residual && residual.getType() != getOutput().getType())
    return emitOpError("needs a residual of the output's type ")
           << getOutput().getType() << ", got " << residual.getType();
  Type element = getElementTypeOrSelf(getOutput().getType());
  for (Value v : {getA(), getB(), getBias()})
    if (getElementTypeOrSelf(v.getType()) != element)
      return emitOpError("needs a, b and bias of the output's element type ")
             << element << ", got " << v.getType();
  return success();
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

LogicalResult DepthwiseBlockOp::verify() {
  if (failed(verifyConvActivation(*this, "expand_activation", getExpandActivation(),
                                  getExpandActivationParams().size())) ||
      failed(verifyConvActivation(*this, "activation", getActivation(),
                                  getActivationParams().size())) ||
      failed(verifyConvActivation(*this, "project_activation", getProjectActivation(),
                                  getProjectActivationParams().size())))
    return failure();
  for (Value optional : {getExpandW(), getExpandBias(), getDepthwiseBias(), getProjectW(),
                         getProjectBias(), getResidual()})
    if (!isa<NoneType, TensorType>(optional.getType()))
      return emitOpError("the weights, biases and residual other than depthwise_w must be "
                         "tensors or none");
  auto x = dyn_cast<RankedTensorType>(getX().getType());
  auto depthwise = dyn_cast<RankedTensorType>(getDepthwiseW().getType());
  auto expand = dyn_cast<RankedTensorType>(getExpandW().getType());
  auto project = dyn_cast<RankedTensorType>(getProjectW().getType());
  auto ranked4 = [](RankedTensorType t) { return !t || (t.getRank() == 4 && t.hasStaticShape()); };
  bool channelsLast = getChannelsLast();
  if (!x || x.getRank() != 4 || !depthwise || !ranked4(depthwise) || !ranked4(expand) ||
      !ranked4(project))
    return emitOpError("needs x ")
           << (channelsLast ? "[N, H, W, C]" : "[N, C, H, W]") << " and static 4-D weights";
  int64_t channelDim = channelsLast ? 3 : 1;
  int64_t E = depthwise.getDimSize(0), C = x.getDimSize(channelDim);
  bool fits = depthwise.getDimSize(1) == 1 && int64_t(getGroup()) == E;
  if (expand)
    fits = fits && expand.getDimSize(0) == E &&
           (x.isDynamicDim(channelDim) || expand.getDimSize(1) == C) && expand.getDimSize(2) == 1 &&
           expand.getDimSize(3) == 1;
  else
    fits = fits && (x.isDynamicDim(channelDim) || C == E);
  if (project)
    fits = fits && project.getDimSize(1) == E && project.getDimSize(2) == 1 &&
           project.getDimSize(3) == 1;
  if (!fits)
    return emitOpError("the weights do not fit x ")
           << x << " (expand_w [E, C, 1, 1], depthwise_w [E, 1, KH, KW] with group E, "
           << "project_w [P, E, 1, 1])";
  if (auto residual = dyn_cast<TensorType>(getResidual().getType())) {
    if (!project)
      return emitOpError("a residual needs project_w");
    if (residual != getY().getType())
      return emitOpError("residual ")
             << residual << " differs from the output " << getY().getType();
  }
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
