//===- BroadcastOps.h - the ops with numpy (multidirectional) broadcasting -*- C++ -*-===//
//
// One list, read by the shape rules (which attach the broadcasting rule to
// these ops) and by the passes that rely on what broadcasting implies (that
// leading 1 dims of an operand change nothing when the result has at least
// its rank).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_SHAPERULES_BROADCASTOPS_H
#define ORTC_COMPILER_TRANSFORMS_SHAPERULES_BROADCASTOPS_H

#include "dialects/onnx/OnnxOps.h"

namespace ortc {

template <typename... Ops> struct OpList {
  static bool contains(mlir::Operation *op) { return mlir::isa<Ops...>(op); }
};

/// Numeric results, broadcast operands.
using NumericBroadcastOps =
    OpList<onnx_dialect::AddOp, onnx_dialect::SubOp, onnx_dialect::MulOp, onnx_dialect::DivOp,
           onnx_dialect::PowOp, onnx_dialect::ModOp, onnx_dialect::PReluOp, onnx_dialect::MaxOp,
           onnx_dialect::MinOp, onnx_dialect::SumOp, onnx_dialect::MeanOp,
           onnx_dialect::BitwiseAndOp, onnx_dialect::BitwiseOrOp, onnx_dialect::BitwiseXorOp,
           onnx_dialect::BitShiftOp, onnx_dialect::SwiGLUOp>;
/// Bool results, broadcast operands.
using ComparisonBroadcastOps =
    OpList<onnx_dialect::EqualOp, onnx_dialect::LessOp, onnx_dialect::LessOrEqualOp,
           onnx_dialect::GreaterOp, onnx_dialect::GreaterOrEqualOp, onnx_dialect::AndOp,
           onnx_dialect::OrOp, onnx_dialect::XorOp>;

/// Whether `op` broadcasts all its operands together into its result (the
/// ops above, and Where).
inline bool isMultidirectionalBroadcast(mlir::Operation *op) {
  return NumericBroadcastOps::contains(op) || ComparisonBroadcastOps::contains(op) ||
         mlir::isa<onnx_dialect::WhereOp>(op);
}

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_SHAPERULES_BROADCASTOPS_H
