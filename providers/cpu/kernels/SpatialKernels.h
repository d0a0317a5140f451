//===- SpatialKernels.h - shape rules the claims share with the kernels -*- C++ -*-===//
//
// The output-shape arithmetic of the spatial kernels whose output shape comes
// from constant inputs (Resize's scales or sizes). The compile half calls the
// same function to check a node's declared output type before it claims the
// node, so the claim and the kernel cannot disagree.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_SPATIALKERNELS_H
#define ORTC_PROVIDERS_CPU_KERNELS_SPATIALKERNELS_H

#include "providers/cpu/kernels/KernelApi.h"
#include "runtime/ep/Status.h"
#include "runtime/ep/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ortc::cpu::kernels {

/// Whether Conv runs as a depthwise loop rather than a GEMM (one input
/// channel per group): its weights are then read as they are, never packed.
inline bool isDepthwiseConv(int64_t channels, int64_t group) {
  return group > 1 && channels == group;
}

/// Most rows of taps the vector depthwise rows take (their input row
/// pointers live in an array; taller kernels run the portable rows), and so
/// the most a depthwise block (cpu-fuse-depthwise-block) is made with.
constexpr int64_t kMaxDepthwiseRows = 8;

/// Whether a channels-first depthwise conv reading E planes of H x W and
/// the pointwise convs next to it run as one depthwise block, image by
/// image: where those planes are at least 1 MiB an image (E * H * W floats),
/// so that a batch of them, and of the planes around them, would leave the
/// caches between the convs. MobileNetV2's blocks at 112x112 and 56x56 (AMD
/// EPYC, batch 8, one thread: 16 -> 96 and the stride-2 depthwise conv
/// 11.4-13.6 -> 8.1-8.5 ms); at batch 1 the block runs the same convs.
inline bool planarDepthwiseBlockPays(int64_t E, int64_t H, int64_t W) {
  return E > 0 && H > 0 && W > 0 && E * H * W >= (int64_t(1) << 18);
}

/// What decides Resize's output shape: the `axes` attribute (empty: all),
/// exactly one of scales and sizes (over `axes`), keep_aspect_ratio_policy.
struct ResizeParams {
  std::vector<int64_t> axes;
  std::vector<double> scales;
  std::vector<int64_t> sizes;
  std::string keepAspectRatioPolicy = "stretch";
};

struct ResizePlan {
  ResizePlan();
  std::vector<int64_t> axes;     // normalized, in attribute order
  std::vector<int64_t> outShape; // the output shape
  std::vector<double> scales;    // per dim; 1 for dims not resized
};

/// Output dims: floor(in * scale) in double (as the ONNX reference), or
/// sizes; with not_larger / not_smaller one scale (min / max of sizes/in over
/// the axes) and dims round(in * scale) half up.
Status planResize(const ResizeParams &p, const std::vector<int64_t> &inShape, ResizePlan &plan);

/// ConvTranspose's geometry per spatial dim. Pads: explicit (VALID: 0);
/// auto_pad SAME_* splits stride*(in-1) + output_padding + (k-1)*d + 1 - out
/// (out = in*stride or output_shape) with the odd pad at the end for
/// SAME_UPPER, at the beginning for SAME_LOWER, as the ONNX reference does;
/// output_shape without SAME needs zero pads and an output at least as large
/// as the full one (the extra positions get only the bias).
struct ConvTransposePlan {
  std::vector<int64_t> out, padBegin, strides, dilations;
};
Status planConvTranspose(const StepAttributes &attrs, const std::vector<int64_t> &inSpatial,
                         const std::vector<int64_t> &kernel, ConvTransposePlan &plan);

} // namespace ortc::cpu::kernels

#endif // ORTC_PROVIDERS_CPU_KERNELS_SPATIALKERNELS_H
