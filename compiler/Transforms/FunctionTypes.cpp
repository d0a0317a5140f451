//===- FunctionTypes.cpp ---------------------------------------------------===//

#include "compiler/Transforms/FunctionTypes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

void ortc::syncFunctionResultTypes(mlir::func::FuncOp func) {
  mlir::Operation *ret = func.getBody().back().getTerminator();
  llvm::SmallVector<mlir::Type> results(ret->getOperandTypes());
  if (mlir::TypeRange(results) != func.getResultTypes())
    func.setFunctionType(
        mlir::FunctionType::get(func.getContext(), func.getArgumentTypes(), results));
}
