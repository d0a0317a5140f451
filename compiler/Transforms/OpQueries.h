//===- OpQueries.h - small questions passes ask of onnx ops -----*- C++ -*-===//
//
// The generic passes read ops whose form they know only by name (typed ops
// and onnx.Generic alike): an operand's static dims, whether an optional
// operand was omitted, an integer attribute with ONNX's default.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_OPQUERIES_H
#define ORTC_COMPILER_TRANSFORMS_OPQUERIES_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Location.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>
#include <string>

namespace ortc {

/// The dims of a ranked tensor value (kDynamic where unknown), or nullopt.
inline std::optional<llvm::SmallVector<int64_t>> rankedShapeOf(mlir::Value v) {
  if (auto t = mlir::dyn_cast<mlir::RankedTensorType>(v.getType()))
    return llvm::SmallVector<int64_t>(t.getShape());
  return std::nullopt;
}

/// A ranked float32 tensor type.
inline bool isF32Tensor(mlir::Type type) {
  auto t = mlir::dyn_cast<mlir::RankedTensorType>(type);
  return t && t.getElementType().isF32();
}

/// The one op that reads `v`, or null (no reader, or several).
inline mlir::Operation *soleUser(mlir::Value v) {
  return v.hasOneUse() ? *v.getUsers().begin() : nullptr;
}

/// An omitted optional operand (onnx.NoValue, typed `none`).
inline bool isAbsentOperand(mlir::Value v) { return !v || mlir::isa<mlir::NoneType>(v.getType()); }

/// Integer attribute `name` of `op`, or `fallback` when it is not set.
inline int64_t intAttrOr(mlir::Operation *op, llvm::StringRef name, int64_t fallback) {
  if (auto a = op->getAttrOfType<mlir::IntegerAttr>(name))
    return a.getInt();
  return fallback;
}

/// The ONNX node name in `op`'s location (a NameLoc, alone or in a FusedLoc),
/// or `fallback` when there is none.
inline std::string nodeNameOf(mlir::Operation *op, std::string fallback) {
  mlir::Location loc = op->getLoc();
  if (auto fused = mlir::dyn_cast<mlir::FusedLoc>(loc))
    for (mlir::Location inner : fused.getLocations())
      if (mlir::isa<mlir::NameLoc>(inner))
        loc = inner;
  if (auto named = mlir::dyn_cast<mlir::NameLoc>(loc))
    return named.getName().str();
  return fallback;
}
} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_OPQUERIES_H
