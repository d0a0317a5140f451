//===- ConstantValues.h - reading onnx.Constant values ----------*- C++ -*-===//

#ifndef ORTC_COMPILER_TRANSFORMS_CONSTANTVALUES_H
#define ORTC_COMPILER_TRANSFORMS_CONSTANTVALUES_H

#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <cstdint>
#include <optional>
#include <vector>

namespace ortc {

/// The values of an integer tensor produced by onnx.Constant (value as a dense
/// or resource attribute of i32/i64, or value_int/value_ints), or nullopt.
std::optional<llvm::SmallVector<int64_t>> getConstantIntValues(mlir::Value value);

/// TensorProto.DataType of an element type (1 for f32, ...), or 0.
int32_t onnxElementCode(mlir::Type elementType);

/// The bytes of an onnx.Constant as the runtime keeps a tensor (runtime/ep/
/// Tensor.h): row-major, one byte per bool, sub-byte types packed; nullopt
/// for a dynamic shape or a value it cannot read.
std::optional<std::vector<char>> constantBytes(mlir::Operation *constant);

/// constantBytes(), read in place where the attribute already holds them in
/// that layout (a resource blob, a dense attribute that is no splat and no
/// i1) at an address aligned for the element type, else a copy: a compile
/// reads hundreds of MiB of weights once each.
/// The bytes in place live as long as the constant's attribute.
class ConstantBytes {
public:
  explicit ConstantBytes(llvm::ArrayRef<char> inPlace) : view(inPlace) {}
  explicit ConstantBytes(std::vector<char> bytes) : copy(std::move(bytes)), copied(true) {}
  const char *data() const { return copied ? copy.data() : view.data(); }
  size_t size() const { return copied ? copy.size() : view.size(); }

private:
  llvm::ArrayRef<char> view;
  std::vector<char> copy;
  bool copied = false;
};
std::optional<ConstantBytes> constantBytesInPlace(mlir::Operation *constant);

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_CONSTANTVALUES_H
