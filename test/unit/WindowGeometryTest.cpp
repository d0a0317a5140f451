//===- WindowGeometryTest.cpp - ONNX's sliding-window shape rule ----------===//
//
// runtime/ep/WindowGeometry.h against the sizes the ONNX operator docs and
// backend tests give (test_maxpool_2d_same_upper, _same_lower, _ceil, ...).
//
//===----------------------------------------------------------------------===//

#include "runtime/ep/WindowGeometry.h"

#include <gtest/gtest.h>

namespace {

using ortc::AutoPad;
using ortc::windowAxis;

TEST(WindowGeometry, ExplicitPadsFloorAndCeil) {
  // 5 wide, kernel 3, stride 2, no pads: 2 windows; pads 1/1: 3.
  EXPECT_EQ(windowAxis(5, 3, 2, 1, 0, 0, AutoPad::NotSet, false)->out, 2);
  EXPECT_EQ(windowAxis(5, 3, 2, 1, 1, 1, AutoPad::NotSet, false)->out, 3);
  // test_maxpool_2d_ceil: 4 wide, kernel 3, stride 2: floor 1, ceil 2.
  EXPECT_EQ(windowAxis(4, 3, 2, 1, 0, 0, AutoPad::NotSet, false)->out, 1);
  EXPECT_EQ(windowAxis(4, 3, 2, 1, 0, 0, AutoPad::NotSet, true)->out, 2);
  // A ceil_mode window that would start in the end pad is dropped: 6 wide,
  // kernel 2, stride 2, end pad 1 gives 3, not 4.
  EXPECT_EQ(windowAxis(6, 2, 2, 1, 0, 1, AutoPad::NotSet, true)->out, 3);
  // Dilation widens the window: kernel 3, dilation 2 covers 5.
  EXPECT_EQ(windowAxis(7, 3, 1, 2, 0, 0, AutoPad::NotSet, false)->out, 3);
}

TEST(WindowGeometry, SamePadsSplitTheOddPadByMode) {
  // 5 wide, kernel 2, stride 1: output 5, one pad, at the end for
  // SAME_UPPER and at the beginning for SAME_LOWER.
  auto upper = windowAxis(5, 2, 1, 1, 0, 0, AutoPad::SameUpper, false);
  EXPECT_EQ(upper->out, 5);
  EXPECT_EQ(upper->padBegin, 0);
  EXPECT_EQ(upper->padEnd, 1);
  auto lower = windowAxis(5, 2, 1, 1, 0, 0, AutoPad::SameLower, false);
  EXPECT_EQ(lower->padBegin, 1);
  EXPECT_EQ(lower->padEnd, 0);
  // Stride 2: ceil(5 / 2) = 3 outputs whatever the kernel; ceil_mode is
  // ignored with auto_pad.
  EXPECT_EQ(windowAxis(5, 3, 2, 1, 0, 0, AutoPad::SameUpper, true)->out, 3);
}

TEST(WindowGeometry, ValidIgnoresPadsAndRefusesAWindowTooLarge) {
  auto valid = windowAxis(5, 3, 1, 1, 2, 2, AutoPad::Valid, false);
  EXPECT_EQ(valid->out, 3);
  EXPECT_EQ(valid->padBegin, 0);
  EXPECT_FALSE(windowAxis(2, 3, 2, 1, 0, 0, AutoPad::Valid, false));
  EXPECT_FALSE(windowAxis(2, 3, 1, 1, 0, 0, AutoPad::NotSet, false));
  EXPECT_TRUE(windowAxis(2, 3, 1, 1, 1, 0, AutoPad::NotSet, false));
}

TEST(WindowGeometry, ParsesAutoPadNames) {
  EXPECT_EQ(ortc::parseAutoPad("SAME_LOWER"), AutoPad::SameLower);
  EXPECT_EQ(ortc::parseAutoPad("NOTSET"), AutoPad::NotSet);
  EXPECT_FALSE(ortc::parseAutoPad("same_upper"));
}

} // namespace
