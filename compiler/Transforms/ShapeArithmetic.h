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

/// The elements one Slice axis keeps: from `begin`, `size` of them, `step`
/// apart, for starts/ends as ONNX gives them (negative from the end, clamped).
struct SliceRange {
  int64_t begin;
  int64_t size;
};
inline SliceRange sliceRange(int64_t dim, int64_t start, int64_t end, int64_t step) {
  start = start < 0 ? start + dim : start;
  end = end < 0 ? end + dim : end;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, end > start ? (end - start + step - 1) / step : 0};
  }
  start = std::clamp<int64_t>(start, -1, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  return {start, start > end ? (start - end - step - 1) / -step : 0};
}

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_SHAPEARITHMETIC_H
