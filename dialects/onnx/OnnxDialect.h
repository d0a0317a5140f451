//===- OnnxDialect.h - the onnx dialect and its types -----------*- C++ -*-===//
//
// Lean on purpose: only the dialect class and its types. Code that works on
// typed ops includes OnnxOps.h instead.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_DIALECTS_ONNX_ONNXDIALECT_H
#define ORTC_DIALECTS_ONNX_ONNXDIALECT_H

#include "mlir/IR/Dialect.h"
#include "mlir/IR/Types.h"

#include "dialects/onnx/OnnxDialect.h.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/onnx/OnnxTypes.h.inc"

namespace ortc::onnx_dialect {
/// The MLIR element type of an ONNX TensorProto.DataType code, or null.
mlir::Type elementTypeForOnnxCode(mlir::MLIRContext *context, int code);

// Registers the op shards; each lives in its own translation unit.
void registerOpsShard0(OnnxDialect &dialect);
void registerOpsShard1(OnnxDialect &dialect);
void registerOpsShard2(OnnxDialect &dialect);
void registerOpsShard3(OnnxDialect &dialect);
void registerCoreOps(OnnxDialect &dialect);
} // namespace ortc::onnx_dialect

#endif // ORTC_DIALECTS_ONNX_ONNXDIALECT_H
