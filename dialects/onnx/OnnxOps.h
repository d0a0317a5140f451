//===- OnnxOps.h - typed ops of the onnx dialect ----------------*- C++ -*-===//
//
// Heavy: pulls in every generated op class. Include it only where typed ops are
// used (passes, patterns), never from another header.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_DIALECTS_ONNX_ONNXOPS_H
#define ORTC_DIALECTS_ONNX_ONNXOPS_H

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#define GET_OP_CLASSES
#include "dialects/onnx/OnnxCoreOps.h.inc"
#define GET_OP_CLASSES
#include "dialects/onnx/OnnxSchemaOps0.h.inc"
#define GET_OP_CLASSES
#include "dialects/onnx/OnnxSchemaOps1.h.inc"
#define GET_OP_CLASSES
#include "dialects/onnx/OnnxSchemaOps2.h.inc"
#define GET_OP_CLASSES
#include "dialects/onnx/OnnxSchemaOps3.h.inc"

namespace ortc::onnx_dialect {
/// True for the placeholder of an omitted optional input (or output).
inline bool isNoValue(mlir::Value value) {
  return value && mlir::isa<mlir::NoneType>(value.getType());
}
} // namespace ortc::onnx_dialect

#endif // ORTC_DIALECTS_ONNX_ONNXOPS_H
