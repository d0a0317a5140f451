//===- SliceGeometryTest.cpp - ONNX's rules for slicing one axis ----------===//
//
// runtime/ep/SliceGeometry.h against what onnxruntime 1.31.1 computes for a
// Slice of [0, 1, 2, 3, 4] (the spec's clamping: for a negative step, start
// into [0, dim - 1] and end into [-1, dim - 1]).
//
//===----------------------------------------------------------------------===//

#include "runtime/ep/SliceGeometry.h"

#include <gtest/gtest.h>

#include <vector>

namespace {

/// The elements a slice of [0, dim) keeps.
std::vector<int64_t> kept(int64_t dim, int64_t start, int64_t end, int64_t step) {
  ortc::SliceAxis axis = ortc::sliceAxis(dim, start, end, step);
  std::vector<int64_t> out;
  for (int64_t k = 0; k < axis.count; ++k)
    out.push_back(axis.start + k * step);
  return out;
}

TEST(SliceGeometry, PositiveSteps) {
  EXPECT_EQ(kept(5, 0, 5, 2), (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(kept(5, -3, 100, 1), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_EQ(kept(5, 4, 2, 1), (std::vector<int64_t>{}));
  EXPECT_EQ(kept(0, 0, 5, 1), (std::vector<int64_t>{}));
}

TEST(SliceGeometry, NegativeStepsClampStartIntoTheAxis) {
  // A start before the axis clamps to 0, which a negative step still keeps.
  EXPECT_EQ(kept(5, -10, -100, -1), (std::vector<int64_t>{0}));
  EXPECT_EQ(kept(5, 10, -100, -1), (std::vector<int64_t>{4, 3, 2, 1, 0}));
  EXPECT_EQ(kept(5, 4, -6, -2), (std::vector<int64_t>{4, 2, 0}));
  EXPECT_EQ(kept(5, -1, 0, -1), (std::vector<int64_t>{4, 3, 2, 1}));
  EXPECT_EQ(kept(5, 7, 2, -2), (std::vector<int64_t>{4}));
}

TEST(SliceGeometry, ShapeOpRange) {
  EXPECT_EQ(ortc::shapeOpRange(4, 0, 4).count, 4);
  ortc::SliceAxis tail = ortc::shapeOpRange(4, -2, 4);
  EXPECT_EQ(tail.start, 2);
  EXPECT_EQ(tail.count, 2);
  EXPECT_EQ(ortc::shapeOpRange(4, 3, 1).count, 0);
  EXPECT_EQ(ortc::shapeOpRange(4, -10, 10).count, 4);
}

} // namespace
