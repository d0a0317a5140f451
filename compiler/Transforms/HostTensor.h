//===- HostTensor.h - small constant tensors evaluated at compile time -*- C++ -*-===//
//
// Constant folding reads onnx.Constant values into HostTensors, computes, and
// writes the result back as a dense attribute. Only small tensors of f32, f64,
// i32, i64 and i1 take part: this is for shape arithmetic and tiny subgraphs,
// not for evaluating weights.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_HOSTTENSOR_H
#define ORTC_COMPILER_TRANSFORMS_HOSTTENSOR_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/Types.h"
#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace ortc {

struct HostTensor {
  llvm::SmallVector<int64_t> shape;
  mlir::Type elementType;
  // Floats are held as double (exact for f32 and f64); integers and booleans
  // as int64.
  llvm::SmallVector<double> floats;
  llvm::SmallVector<int64_t> ints;

  bool isFloat() const;
  int64_t numElements() const;
  double floatAt(int64_t i) const { return isFloat() ? floats[i] : double(ints[i]); }
  int64_t intAt(int64_t i) const { return isFloat() ? int64_t(floats[i]) : ints[i]; }

  /// Sets element `i` to element `j` of `src` (of the same element type).
  void copyElement(int64_t i, const HostTensor &src, int64_t j) {
    if (isFloat())
      floats[i] = src.floats[j];
    else
      ints[i] = src.ints[j];
  }

  /// A tensor of `shape` and `elementType` with room for every element.
  static HostTensor make(llvm::ArrayRef<int64_t> shape, mlir::Type elementType);
  /// The dense attribute holding these values.
  mlir::Attribute toAttribute() const;
};

/// Whether `type` is an element type HostTensor handles.
bool isHostElementType(mlir::Type type);

/// The value of `v` if it is produced by onnx.Constant with a supported
/// element type and at most `maxElements` elements.
std::optional<HostTensor> readHostTensor(mlir::Value v, int64_t maxElements);

/// The value of a dense or dense-resource elements attribute of a supported
/// element type with at most `maxElements` elements.
std::optional<HostTensor> readHostAttribute(mlir::Attribute value, int64_t maxElements);

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_HOSTTENSOR_H
