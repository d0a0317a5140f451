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

LogicalResult FusedConvOp::verify() {
  StringRef activation = getActivation();
  size_t params = getActivationParams().size();
  size_t want = activation == "clip" ? 2 : activation == "leaky_relu" ? 1 : 0;
  if (activation != "none" && activation != "relu" && activation != "clip" &&
      activation != "leaky_relu")
    return emitOpError("unknown activation '") << activation
                                               << "' (none, relu, clip or leaky_relu)";
  if (params != want)
    return emitOpError("activation '") << activation << "' takes " << want
                                       << " activation_params, got " << params;
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
