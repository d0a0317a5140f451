//===- ShapeValues.h - the values of small int tensors built from shapes -===//
//
// ONNX's partial data propagation: the elements of a 1-D (or scalar) integer
// tensor computed from shapes (Shape, Gather, Slice, Concat, (Un)Squeeze,
// Cast, Identity, and Add/Sub/Mul/Div/Max/Min between such tensors), with
// ShapedType::kDynamic for an element known only at run time. Shape
// inference reads it for Reshape/Expand/ConstantOfShape targets; constant
// folding turns a value whose every element is known into a constant, so
// that Gather(Shape(x), k) of a static dim k folds while another dim of x is
// dynamic.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_SHAPEVALUES_H
#define ORTC_COMPILER_TRANSFORMS_SHAPEVALUES_H

#include "mlir/IR/Value.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace ortc {

/// One element of a shape value: a known integer, or kDynamic; an unknown
/// element read straight from a dim by Shape (through Gather, Slice, Concat,
/// ...) says which: dim `dim` of `dimOf`.
struct ShapeElement {
  int64_t value;
  mlir::Value dimOf;
  int64_t dim = -1;
};

/// The elements of `value`, or nullopt when it is not a 1-D or scalar int
/// tensor computed from shapes and constants.
std::optional<llvm::SmallVector<ShapeElement>> shapeElements(mlir::Value value);

/// shapeElements' values alone (kDynamic where unknown).
std::optional<llvm::SmallVector<int64_t>> shapeValues(mlir::Value value);

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_SHAPEVALUES_H
