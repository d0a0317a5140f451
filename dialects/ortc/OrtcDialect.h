//===- OrtcDialect.h - the ortc dialect -------------------------*- C++ -*-===//

#ifndef ORTC_DIALECTS_ORTC_ORTCDIALECT_H
#define ORTC_DIALECTS_ORTC_ORTCDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/ortc/OrtcDialect.h.inc"

namespace ortc::fused {

/// What ortc.matmul_bias does after the product: y = activation(alpha *
/// a op(b) + bias [+ residual]). The one way to build the op (its builder
/// takes this), so every EP that makes it fills the same fields.
struct MatMulBiasEpilogue {
  bool transB = false;
  float alpha = 1.0f;
  /// "none", "relu", "gelu" (erf) or "gelu_tanh".
  llvm::StringRef activation = "none";
  /// Of the result's type, or null.
  mlir::Value residual;
};

} // namespace ortc::fused

#define GET_OP_CLASSES
#include "dialects/ortc/OrtcOps.h.inc"

#endif // ORTC_DIALECTS_ORTC_ORTCDIALECT_H
