//===- ConstantValues.h - reading onnx.Constant values ----------*- C++ -*-===//

#ifndef ORTC_COMPILER_TRANSFORMS_CONSTANTVALUES_H
#define ORTC_COMPILER_TRANSFORMS_CONSTANTVALUES_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace ortc {

/// The values of an integer tensor produced by onnx.Constant (value as a dense
/// or resource attribute of i32/i64, or value_int/value_ints), or nullopt.
std::optional<llvm::SmallVector<int64_t>> getConstantIntValues(mlir::Value value);

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_CONSTANTVALUES_H
