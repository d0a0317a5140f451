//===- OpBuilding.h - onnx ops created by the CUDA EP's rewrites -*- C++ -*-===//
//
// cuda-split-gemm-bias and cuda-expand-attention rewrite ops into plain onnx
// ops, built by name so that the rewrites need not know each op's builder.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_COMPILE_OPBUILDING_H
#define ORTC_PROVIDERS_CUDA_COMPILE_OPBUILDING_H

#include "mlir/IR/Builders.h"

namespace ortc::cuda {

/// `name`(operands) with one result of type `result` and `attrs`.
inline mlir::Value createOnnxOp(mlir::OpBuilder &b, mlir::Location loc, llvm::StringRef name,
                                mlir::ValueRange operands, mlir::Type result,
                                llvm::ArrayRef<mlir::NamedAttribute> attrs = {}) {
  mlir::OperationState state(loc, name);
  state.addOperands(operands);
  state.addTypes(result);
  state.addAttributes(attrs);
  return b.create(state)->getResult(0);
}

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_COMPILE_OPBUILDING_H
