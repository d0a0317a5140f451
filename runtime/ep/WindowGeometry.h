//===- WindowGeometry.h - ONNX's sliding-window shape rule ------*- C++ -*-===//
//
// The output size and effective pads of one spatial axis of Conv,
// ConvTranspose's forward twin, the pools and the integer convolutions, as
// ONNX defines them: written once here, in plain C++, and used by the
// compiler's shape inference, the CPU EP's claims and its kernels' output
// geometry.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_WINDOWGEOMETRY_H
#define ORTC_RUNTIME_EP_WINDOWGEOMETRY_H

#include "runtime/ep/DimExpr.h"

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string_view>

namespace ortc {

enum class AutoPad { NotSet, SameUpper, SameLower, Valid };

/// "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"; nullopt for anything else.
inline std::optional<AutoPad> parseAutoPad(std::string_view text) {
  if (text == "NOTSET")
    return AutoPad::NotSet;
  if (text == "SAME_UPPER")
    return AutoPad::SameUpper;
  if (text == "SAME_LOWER")
    return AutoPad::SameLower;
  if (text == "VALID")
    return AutoPad::Valid;
  return std::nullopt;
}

struct WindowAxis {
  int64_t out = 0;
  int64_t padBegin = 0, padEnd = 0; // as applied (auto_pad resolved)
};

/// The output size of one spatial axis: input size `in`, window `kernel`
/// with `stride` and `dilation`, explicit pads (used with NotSet), auto_pad,
/// and ceil_mode (honoured with NotSet). One rule for every dim type: D is
/// int64_t at run time and SymDim in the compiler's shape inference.
template <class D>
D windowOutputSize(D in, int64_t kernel, int64_t stride, int64_t dilation, int64_t padBegin,
                   int64_t padEnd, AutoPad autoPad, bool ceilMode) {
  int64_t effective = (kernel - 1) * dilation + 1;
  if (autoPad == AutoPad::SameUpper || autoPad == AutoPad::SameLower)
    return ceilDiv(in, stride);
  if (autoPad == AutoPad::Valid)
    padBegin = padEnd = 0;
  D span = in + (padBegin + padEnd - effective);
  if (!(ceilMode && autoPad == AutoPad::NotSet))
    return floorDiv(span, stride) + 1;
  // With ceil_mode a last window that would start in the end padding is
  // dropped (ONNX's rule, and what onnxruntime's pools compute); a single
  // window never starts there.
  D out = ceilDiv(span, stride) + 1;
  return out - dimGe((out - 1) * stride, in + padBegin);
}

/// ConvTranspose's output size along one spatial axis without output_shape:
/// the full output stride * (in - 1) + output_padding + (kernel - 1) *
/// dilation + 1, less the pads; with SAME auto_pad, in * stride. D as above.
template <class D>
D transposedWindowOutputSize(D in, int64_t kernel, int64_t stride, int64_t dilation,
                             int64_t outputPadding, int64_t padBegin, int64_t padEnd,
                             AutoPad autoPad) {
  if (autoPad == AutoPad::SameUpper || autoPad == AutoPad::SameLower)
    return in * stride;
  if (autoPad == AutoPad::Valid)
    padBegin = padEnd = 0;
  return in * stride + (outputPadding + (kernel - 1) * dilation + 1 - stride - padBegin - padEnd);
}

/// One spatial axis with its pads as applied. nullopt when the dilated
/// window is larger than the padded input. Arguments are positive (pads
/// non-negative): callers check and name what is wrong.
inline std::optional<WindowAxis> windowAxis(int64_t in, int64_t kernel, int64_t stride,
                                            int64_t dilation, int64_t padBegin, int64_t padEnd,
                                            AutoPad autoPad, bool ceilMode) {
  int64_t effective = (kernel - 1) * dilation + 1;
  WindowAxis axis;
  axis.out =
      windowOutputSize<int64_t>(in, kernel, stride, dilation, padBegin, padEnd, autoPad, ceilMode);
  if (autoPad == AutoPad::SameUpper || autoPad == AutoPad::SameLower) {
    int64_t total = std::max<int64_t>(0, (axis.out - 1) * stride + effective - in);
    // SAME_UPPER puts the odd pad at the end, SAME_LOWER at the beginning.
    axis.padEnd = autoPad == AutoPad::SameUpper ? total - total / 2 : total / 2;
    axis.padBegin = total - axis.padEnd;
    return axis;
  }
  if (autoPad == AutoPad::Valid)
    padBegin = padEnd = 0;
  if (in + padBegin + padEnd - effective < 0)
    return std::nullopt;
  axis.padBegin = padBegin;
  axis.padEnd = padEnd;
  return axis;
}

} // namespace ortc

#endif // ORTC_RUNTIME_EP_WINDOWGEOMETRY_H
