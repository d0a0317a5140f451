//===- ShapeArithmetic.h - ONNX shape rules shared by passes ----*- C++ -*-===//
//
// Shape inference and constant folding apply the same ONNX rules, one to
// types and one to values; they share them here.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_SHAPEARITHMETIC_H
#define ORTC_COMPILER_TRANSFORMS_SHAPEARITHMETIC_H

#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"

#include <algorithm>
#include <optional>

namespace ortc {

/// Multidirectional (numpy) broadcasting of shapes whose dims may be
/// ShapedType::kDynamic; nullopt if two static dims clash.
inline std::optional<llvm::SmallVector<int64_t>>
broadcastShapes(llvm::ArrayRef<llvm::SmallVector<int64_t>> shapes) {
  constexpr int64_t kDyn = mlir::ShapedType::kDynamic;
  size_t rank = 0;
  for (const auto &s : shapes)
    rank = std::max(rank, s.size());
  llvm::SmallVector<int64_t> out(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    bool anyDynamic = false;
    int64_t staticDim = 1;
    for (const auto &s : shapes) {
      if (i + s.size() < rank)
        continue;
      int64_t d = s[i + s.size() - rank];
      if (d == kDyn) {
        anyDynamic = true;
      } else if (d != 1) {
        if (staticDim != 1 && staticDim != d)
          return std::nullopt;
        staticDim = d;
      }
    }
    out[i] = staticDim != 1 ? staticDim : (anyDynamic ? kDyn : 1);
  }
  return out;
}

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_SHAPEARITHMETIC_H
