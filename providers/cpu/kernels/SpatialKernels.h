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

#include "runtime/ep/Status.h"
#include "runtime/ep/Tensor.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ortc::cpu::kernels {

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

} // namespace ortc::cpu::kernels

#endif // ORTC_PROVIDERS_CPU_KERNELS_SPATIALKERNELS_H
