//===- SliceGeometry.h - ONNX's rules for slicing one axis ------*- C++ -*-===//
//
// Where a Slice along one axis starts and how many elements it keeps, and
// which dims Shape's start/end select: written once here, in plain C++, for
// the compiler's shape rules and constant folding and the CPU EP's kernels.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_SLICEGEOMETRY_H
#define ORTC_RUNTIME_EP_SLICEGEOMETRY_H

#include <algorithm>
#include <cstdint>

namespace ortc {

struct SliceAxis {
  int64_t start = 0; // the first element kept (when count > 0)
  int64_t count = 0; // how many, `step` apart
};

/// ONNX Slice on an axis of `dim` elements: negative bounds count from the
/// end; then, for a positive step, start and end are clamped to [0, dim];
/// for a negative one, start to [0, dim - 1] and end to [-1, dim - 1].
/// `step` is not 0 (callers refuse it).
inline SliceAxis sliceAxis(int64_t dim, int64_t start, int64_t end, int64_t step) {
  if (dim <= 0)
    return {};
  start = start < 0 ? start + dim : start;
  end = end < 0 ? end + dim : end;
  if (step > 0) {
    start = std::clamp<int64_t>(start, 0, dim);
    end = std::clamp<int64_t>(end, 0, dim);
    return {start, end > start ? (end - start + step - 1) / step : 0};
  }
  start = std::clamp<int64_t>(start, 0, dim - 1);
  end = std::clamp<int64_t>(end, -1, dim - 1);
  return {start, start > end ? (start - end - step - 1) / -step : 0};
}

/// The dims [first, first + count) that Shape's `start` and `end` (end
/// defaulting to `rank`) select from a tensor of `rank` dims.
inline SliceAxis shapeOpRange(int64_t rank, int64_t start, int64_t end) {
  auto clampIndex = [rank](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + rank : i, 0, rank); };
  start = clampIndex(start);
  end = clampIndex(end);
  return {start, std::max<int64_t>(end - start, 0)};
}

} // namespace ortc

#endif // ORTC_RUNTIME_EP_SLICEGEOMETRY_H
