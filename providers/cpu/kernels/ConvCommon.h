//===- ConvCommon.h - what the NCHW and channels-last Convs share -*- C++ -*-===//
//
// The window geometry, the epilogue that ortc.fused_conv asks for and the
// task split of the direct loops: shared by ConvPoolKernels.cpp (NCHW Conv
// and the pools) and ConvChannelsLast.cpp, and by nothing else.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_CONVCOMMON_H
#define ORTC_PROVIDERS_CPU_KERNELS_CONVCOMMON_H

#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

namespace ortc::cpu::kernels {

constexpr int kMaxSpatial = 3;

/// Spatial geometry, normalized to 3 dims (index 0 = depth).
struct Geometry {
  int rank = 0; // the real spatial rank, 1..3
  int64_t in[kMaxSpatial] = {1, 1, 1};
  int64_t out[kMaxSpatial] = {1, 1, 1};
  int64_t k[kMaxSpatial] = {1, 1, 1};
  int64_t s[kMaxSpatial] = {1, 1, 1};
  int64_t d[kMaxSpatial] = {1, 1, 1};
  int64_t padBegin[kMaxSpatial] = {0, 0, 0};
  int64_t padEnd[kMaxSpatial] = {0, 0, 0};

  int64_t inSize() const { return in[0] * in[1] * in[2]; }
  /// A 1x1 window at stride 1 without padding: output position p reads
  /// input position p (X is its own im2col matrix).
  bool pointwise() const {
    bool unit = kernelSize() == 1;
    for (int i = 0; i < kMaxSpatial; ++i)
      unit = unit && s[i] == 1 && padBegin[i] == 0 && padEnd[i] == 0;
    return unit;
  }
  int64_t outSize() const { return out[0] * out[1] * out[2]; }
  int64_t kernelSize() const { return k[0] * k[1] * k[2]; }
};

/// Reads strides, dilations, pads, auto_pad (and ceil_mode where allowed) and
/// computes output sizes and the effective pads as ONNX defines them.
Status computeGeometry(const char *op, const StepAttributes &attrs,
                       const std::vector<int64_t> &inSpatial, const std::vector<int64_t> &kernel,
                       bool allowDilations, bool allowCeilMode, Geometry &g);

/// One float32 output, and no other output given.
Status checkSingleOutput(const char *op, const KernelCall &call);

/// The epilogue ortc.fused_conv asks for (activation, activation_params); a
/// plain Conv has none. `attribute` names another pair (<attribute>,
/// <attribute>_params) of the same meaning.
Status convActivation(const KernelCall &call, GemmEpilogue &e,
                      const std::string &attribute = "activation");

/// `n` rounded up to 16 floats: scratch pieces start on 64-byte lines.
inline int64_t roundUpTo16(int64_t n) { return (n + 15) / 16 * 16; }

/// body(i) for i in [0, n) on `pool`, each task a contiguous run of items of
/// at most kMinElementsPerBlock elements in all (`elementsEach` per item) and
/// at most n / threads items, so that every thread gets a share; all on the
/// caller when there are kMinElementsPerBlock elements or fewer. One task per
/// small item makes the threads share a counter per item and write the same
/// cache lines; runs of kMinElementsPerBlock alone split MobileNetV2's
/// 960x7x7 depthwise 83:37 blocks.
template <typename Body>
void parallelForRuns(ThreadPool *pool, int64_t n, int64_t elementsEach, Body &&body) {
  int64_t each = std::max<int64_t>(elementsEach, 1);
  int64_t threads = pool ? pool->threads() : 1;
  int64_t perTask = n;
  if (n * each > kMinElementsPerBlock)
    perTask =
        std::max<int64_t>(1, std::min(kMinElementsPerBlock / each, (n + threads - 1) / threads));
  parallelFor(pool, (n + perTask - 1) / perTask, [&](int64_t t) {
    for (int64_t i = t * perTask; i < std::min(n, (t + 1) * perTask); ++i)
      body(i);
  });
}

/// A group-1 3x3 Conv at stride 1 and dilation 1 of N images over W packed
/// by packConvWeightsWinograd for output tile `tile` (ConvWinograd.cpp),
/// with `epilogue` (row bias, residual with row stride P, activation) fused.
Status convWinograd(const KernelCall &call, const Geometry &g, int64_t tile, const float *x,
                    const float *packedU, int64_t N, int64_t C, int64_t M,
                    const GemmEpilogue &epilogue, float *y);

/// The same on channels-last X [N, H, W, C] into Y [N, OH, OW, M] over W
/// packed by packConvWeightsWinogradChannelsLast, with `epilogue` (column
/// bias, residual [positions, M] (which may be Y itself), activation).
Status convWinogradChannelsLast(const KernelCall &call, const Geometry &g, int64_t tile,
                                const float *x, const float *packedU, int64_t N, int64_t C,
                                int64_t M, const GemmEpilogue &epilogue, float *y);

/// A group-1 2-D Conv at dilation 1 of N images over W as it is
/// (convRunsNarrow; ConvNarrow.cpp, AVX2), with `epilogue` (row bias,
/// residual as Y, activation) fused.
Status convNarrow(const KernelCall &call, const Geometry &g, const float *x, const float *w,
                  int64_t N, int64_t C, int64_t M, const GemmEpilogue &epilogue, float *y);

/// Conv with channels_last = 1 (ConvChannelsLast.cpp): X [N, H, W, C] and Y
/// (and the residual) [N, OH, OW, M].
Status convChannelsLast(const KernelCall &call);

/// ortc.depthwise_block on channels-last tensors (ConvChannelsLast.cpp).
Status depthwiseBlockChannelsLast(const KernelCall &call);

/// An ortc.depthwise_block's operands (DepthwiseBlock, either layout), as
/// checkDepthwiseBlock found them: X, the expansion's W and B, the
/// depthwise W and B, the projection's W and B and the residual (any but X
/// and the depthwise W may be null), the three activations, the sizes
/// (E the depthwise channels, P the output's) and the depthwise window.
struct DepthwiseBlockOperands {
  const TensorView *X, *W1, *B1, *W2, *B2, *W3, *B3, *Z;
  GemmEpilogue expand, depthwise, project;
  int64_t N, C, H, W, E, P;
  Geometry g;
  float *y;
  const float *residual;
};

/// Checks a DepthwiseBlock call in `channelsLast` layout or not (X [N, H, W,
/// C] or [N, C, H, W], Y and the residual [N, OH, OW, P] or [N, P, OH, OW])
/// whose pointwise weights come as they are or packed as `packed_w`
/// `packedAs` and whose depthwise kernel has at most `maxKernelRows` rows,
/// and fills `b`. Every error is one line prefixed by `op`.
Status checkDepthwiseBlock(const char *op, const KernelCall &call, bool channelsLast,
                           int64_t packedAs, int64_t maxKernelRows, DepthwiseBlockOperands &b);

} // namespace ortc::cpu::kernels

#endif // ORTC_PROVIDERS_CPU_KERNELS_CONVCOMMON_H
