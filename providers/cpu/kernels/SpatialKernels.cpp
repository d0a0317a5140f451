//===- SpatialKernels.cpp - Resize, GridSample, ConvTranspose, LpPool, ... ===//
//
// Spatial library kernels that follow the ONNX reference implementation
// (onnx/reference/ops) closely: Resize in all three modes, GridSample,
// ConvTranspose, LpPool, RoiAlign, MaxUnpool, DeformConv. Interpolating
// kernels compute coordinates and weights in double, as the reference does;
// nearest Resize keeps the fp32 coordinates of onnxruntime (README.md).
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/SpatialKernels.h"
#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/ThreadPool.h"
#include "runtime/ep/WindowGeometry.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ortc::cpu::kernels {

namespace {

std::string str(const std::vector<int64_t> &v) { return shapeToString(v); }

/// Reads a 1-D int64 (or int32) tensor.
Status readInts(const char *op, const TensorView *t, const char *what, std::vector<int64_t> &out) {
  out.clear();
  if (!t)
    return Status::ok();
  if (t->shape.size() > 1)
    return invalid(op, std::string(what) + " must be 1-D, got " + str(t->shape));
  int64_t n = t->numElements();
  if (t->type == ElementType::Int64) {
    const int64_t *p = static_cast<const int64_t *>(t->data);
    out.assign(p, p + n);
  } else if (t->type == ElementType::Int32) {
    const int32_t *p = static_cast<const int32_t *>(t->data);
    out.assign(p, p + n);
  } else {
    return invalid(op, std::string(what) + " must be int64, got " + elementTypeName(t->type));
  }
  return Status::ok();
}

/// Reads a 1-D float32 or float64 tensor as doubles.
Status readReals(const char *op, const TensorView *t, const char *what, std::vector<double> &out) {
  out.clear();
  if (!t)
    return Status::ok();
  int64_t n = t->numElements();
  if (t->type == ElementType::Float) {
    const float *p = static_cast<const float *>(t->data);
    out.assign(p, p + n);
  } else if (t->type == ElementType::Double) {
    const double *p = static_cast<const double *>(t->data);
    out.assign(p, p + n);
  } else {
    return invalid(op, std::string(what) + " must be float32 or float64, got " +
                           elementTypeName(t->type));
  }
  return Status::ok();
}

bool isClose(double a, double b) {
  // math.isclose with its defaults (rel_tol 1e-9, abs_tol 0).
  return a == b || std::fabs(a - b) <= 1e-9 * std::max(std::fabs(a), std::fabs(b));
}

} // namespace

//===----------------------------------------------------------------------===//
// Resize
//===----------------------------------------------------------------------===//

ResizePlan::ResizePlan() = default;

Status planResize(const ResizeParams &p, const std::vector<int64_t> &inShape, ResizePlan &plan) {
  const char *op = "Resize";
  size_t rank = inShape.size();
  if (rank == 0)
    return invalid(op, "input must have rank >= 1");
  std::vector<int64_t> axes = p.axes;
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(int64_t(i));
  std::vector<bool> seen(rank, false);
  for (int64_t &a : axes)
    if (Status s = claimAxis(op, a, seen); !s.isOk())
      return s;
  bool haveScales = !p.scales.empty(), haveSizes = !p.sizes.empty();
  if (haveScales == haveSizes)
    return invalid(op, "needs exactly one of scales and sizes");
  plan.axes = axes;
  plan.outShape = inShape;
  plan.scales.assign(rank, 1.0);
  if (haveScales) {
    if (p.scales.size() != axes.size())
      return invalid(op, "scales must have " + std::to_string(axes.size()) + " values");
    for (size_t i = 0; i < axes.size(); ++i) {
      double s = p.scales[i];
      if (!(s > 0.0))
        return invalid(op, "scales must be positive");
      plan.scales[axes[i]] = s;
      plan.outShape[axes[i]] = int64_t(std::floor(double(inShape[axes[i]]) * s));
    }
  } else {
    if (p.sizes.size() != axes.size())
      return invalid(op, "sizes must have " + std::to_string(axes.size()) + " values");
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i];
      if (p.sizes[i] < 0)
        return invalid(op, "negative size " + std::to_string(p.sizes[i]));
      if (inShape[a] == 0)
        return invalid(op, "cannot resize an empty axis " + std::to_string(a));
      plan.outShape[a] = p.sizes[i];
      plan.scales[a] = double(p.sizes[i]) / double(inShape[a]);
    }
    if (p.keepAspectRatioPolicy != "stretch") {
      bool notLarger = p.keepAspectRatioPolicy == "not_larger";
      if (!notLarger && p.keepAspectRatioPolicy != "not_smaller")
        return invalid(op,
                       "unsupported keep_aspect_ratio_policy '" + p.keepAspectRatioPolicy + "'");
      double scale = plan.scales[axes[0]];
      for (int64_t a : axes)
        scale = notLarger ? std::min(scale, plan.scales[a]) : std::max(scale, plan.scales[a]);
      for (int64_t a : axes) {
        plan.scales[a] = scale;
        plan.outShape[a] = int64_t(scale * double(inShape[a]) + 0.5);
      }
    }
  }
  return Status::ok();
}

namespace {

struct ResizeAttrs {
  std::string mode, ctm, nearestMode;
  bool antialias = false, excludeOutside = false;
  double cubicA = -0.75, extrapolation = 0.0;
};

/// The taps of one output position along one axis: `count` input indices
/// (already clamped) and weights, or `extrapolate`.
struct AxisTaps {
  int64_t n = 0; // taps per output position
  std::vector<int64_t> idx;
  std::vector<double> w;
  std::vector<char> extrapolate;
};

double sourceCoordinate(const std::string &ctm, double y, double scale, int64_t in, int64_t outInt,
                        double roiStart, double roiEnd, bool &extrapolated) {
  double outW = scale * double(in);
  extrapolated = false;
  if (ctm == "align_corners")
    return outW == 1 ? 0.0 : y * double(in - 1) / (outW - 1);
  if (ctm == "asymmetric")
    return y / scale;
  if (ctm == "tf_crop_and_resize") {
    double x = outW == 1 ? (roiEnd - roiStart) * double(in - 1) / 2
                         : y * (roiEnd - roiStart) * double(in - 1) / (outW - 1);
    x += roiStart * double(in - 1);
    extrapolated = x < 0 || x > double(in - 1);
    return x;
  }
  if (ctm == "pytorch_half_pixel")
    return outW == 1 ? -0.5 : (y + 0.5) / scale - 0.5;
  if (ctm == "half_pixel_symmetric") {
    double adjustment = double(outInt) / outW;
    double center = double(in) / 2;
    double offset = center * (1 - adjustment);
    return offset + (y + 0.5) / scale - 0.5;
  }
  return (y + 0.5) / scale - 0.5; // half_pixel
}

void cubicCoeffs(double r, double A, double *c) {
  c[0] = ((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A;
  c[1] = ((A + 2) * r - (A + 3)) * r * r + 1;
  c[2] = ((A + 2) * (1 - r) - (A + 3)) * (1 - r) * (1 - r) + 1;
  c[3] = ((A * ((1 - r) + 1) - 5 * A) * ((1 - r) + 1) + 8 * A) * ((1 - r) + 1) - 4 * A;
}

/// Taps per output position for linear or cubic mode (antialias widens them).
int64_t tapCount(const ResizeAttrs &ra, double scale) {
  if (!ra.antialias)
    return ra.mode == "linear" ? 2 : 4;
  double s = std::min(scale, 1.0);
  int64_t start =
      ra.mode == "linear" ? int64_t(std::floor(-1 / s) + 1) : int64_t(std::floor(-2 / s) + 1);
  return 2 - 2 * start;
}

AxisTaps interpolationTaps(const ResizeAttrs &ra, int64_t in, int64_t out, double scale,
                           double roiStart, double roiEnd) {
  AxisTaps t;
  t.n = tapCount(ra, scale);
  t.idx.resize(size_t(out * t.n));
  t.w.resize(size_t(out * t.n));
  t.extrapolate.assign(size_t(out), 0);
  std::vector<double> c(size_t(t.n));
  double s = std::min(scale, 1.0);
  for (int64_t j = 0; j < out; ++j) {
    bool extrapolated;
    double x = sourceCoordinate(ra.ctm, double(j), scale, in, out, roiStart, roiEnd, extrapolated);
    t.extrapolate[j] = extrapolated;
    // The reference prefers the pixel left of x: an integer x has ratio 1.
    double base = std::floor(x), ratio = x - base;
    if (ratio == 0) {
      base -= 1;
      ratio = 1;
    }
    if (!ra.antialias) {
      if (ra.mode == "linear") {
        c[0] = 1 - ratio;
        c[1] = ratio;
      } else {
        cubicCoeffs(ratio, ra.cubicA, c.data());
      }
    } else {
      int64_t start = 1 - t.n / 2;
      double sum = 0;
      for (int64_t k = 0; k < t.n; ++k) {
        double arg = (double(start + k) - ratio) * s;
        double v;
        if (ra.mode == "linear") {
          v = std::clamp(1 - std::fabs(arg), 0.0, 1.0);
        } else {
          double a = std::fabs(arg), a2 = a * a, a3 = a2 * a, A = ra.cubicA;
          v = a <= 1 ? (A + 2) * a3 - (A + 3) * a2 + 1
                     : (a < 2 ? A * a3 - 5 * A * a2 + 8 * A * a - 4 * A : 0.0);
        }
        c[k] = v;
        sum += v;
      }
      for (double &v : c)
        v /= sum;
    }
    int64_t first = int64_t(base) + 1 - t.n / 2;
    if (ra.excludeOutside) {
      double sum = 0;
      for (int64_t k = 0; k < t.n; ++k) {
        int64_t i = first + k;
        if (i < 0 || i >= in)
          c[k] = 0;
        sum += c[k];
      }
      if (sum == 0)
        sum = 1;
      for (double &v : c)
        v /= sum;
    }
    for (int64_t k = 0; k < t.n; ++k) {
      t.idx[j * t.n + k] = std::clamp<int64_t>(first + k, 0, in - 1);
      t.w[j * t.n + k] = c[k];
    }
  }
  return t;
}

/// One separable pass: src [outer, in, inner] -> dst [outer, out, inner].
void interpolateAxis(const double *src, double *dst, int64_t outer, int64_t in, int64_t inner,
                     int64_t out, const AxisTaps &t, double extrapolation) {
  for (int64_t o = 0; o < outer; ++o) {
    const double *s = src + o * in * inner;
    double *d = dst + o * out * inner;
    for (int64_t j = 0; j < out; ++j) {
      double *row = d + j * inner;
      if (t.extrapolate[j]) {
        std::fill(row, row + inner, extrapolation);
        continue;
      }
      std::fill(row, row + inner, 0.0);
      for (int64_t k = 0; k < t.n; ++k) {
        double w = t.w[j * t.n + k];
        const double *srow = s + t.idx[j * t.n + k] * inner;
        for (int64_t i = 0; i < inner; ++i)
          row[i] += w * srow[i];
      }
    }
  }
}

/// Nearest: the source index of each output position along one axis, with
/// fp32 coordinates as onnxruntime computes them.
int64_t nearestIndex(const ResizeAttrs &ra, int64_t j, int64_t in, int64_t out, float scale) {
  float x = float(j), orig, lin = float(in), lout = float(out);
  const std::string &ctm = ra.ctm;
  if (ctm == "half_pixel")
    orig = (x + 0.5f) / scale - 0.5f;
  else if (ctm == "asymmetric")
    orig = x / scale;
  else if (ctm == "pytorch_half_pixel")
    orig = out > 1 ? (x + 0.5f) / scale - 0.5f : 0.f;
  else if (ctm == "tf_half_pixel_for_nn")
    orig = (x + 0.5f) / scale;
  else if (ctm == "half_pixel_symmetric") {
    float adjustment = lout / (scale * lin);
    float offset = lin / 2 * (1 - adjustment);
    orig = offset + (x + 0.5f) / scale - 0.5f;
  } else
    orig = out == 1 ? 0.f : x * (lin - 1.f) / (lout - 1.f);
  int64_t i;
  const std::string &nm = ra.nearestMode;
  if (nm == "round_prefer_floor")
    i = orig == float(int64_t(orig)) + 0.5f ? int64_t(std::floor(orig)) : int64_t(std::round(orig));
  else if (nm == "round_prefer_ceil")
    i = int64_t(std::round(orig));
  else if (nm == "floor")
    i = int64_t(std::floor(orig));
  else
    i = int64_t(std::ceil(orig));
  return std::clamp<int64_t>(i, 0, in - 1);
}

/// dst[i0..ir] = src[sum maps_k[i_k]] (maps in elements), moved by size.
void gatherNearest(char *dst, const char *src, const std::vector<std::vector<int64_t>> &maps,
                   size_t elem) {
  size_t r = maps.size();
  int64_t total = 1;
  for (const auto &m : maps)
    total *= int64_t(m.size());
  if (total == 0)
    return;
  const std::vector<int64_t> &last = maps[r - 1];
  int64_t inner = int64_t(last.size());
  std::vector<size_t> idx(r, 0);
  int64_t rowBytes = inner * int64_t(elem), prevOff = -1;
  for (int64_t row = 0; row < total / inner; ++row) {
    int64_t off = 0;
    for (size_t i = 0; i + 1 < r; ++i)
      off += maps[i][idx[i]];
    const char *s = src + off * int64_t(elem);
    if (off == prevOff) { // upsampling repeats the previous output row
      std::memcpy(dst, dst - rowBytes, size_t(rowBytes));
    } else {
      switch (elem) {
      case 4:
        for (int64_t j = 0; j < inner; ++j)
          std::memcpy(dst + j * 4, s + last[j] * 4, 4);
        break;
      default:
        for (int64_t j = 0; j < inner; ++j)
          std::memcpy(dst + j * int64_t(elem), s + last[j] * int64_t(elem), elem);
      }
    }
    prevOff = off;
    dst += rowBytes;
    for (size_t i = r - 1; i-- > 0;) {
      if (++idx[i] < maps[i].size())
        break;
      idx[i] = 0;
    }
  }
}

} // namespace

Status resize(const KernelCall &call) {
  const char *op = "Resize";
  const TensorView *X = call.input(0);
  if (!X && !(X = dataInput(call, 0)))
    return invalid(op, "missing input X");
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  size_t elem = elementSize(X->type);
  if (elem == 0 || Y.type != X->type)
    return invalid(op, "X and Y must have one known element type, got " + elementTypeName(X->type) +
                           " and " + elementTypeName(Y.type));
  ResizeAttrs ra;
  ra.mode = call.attrs.getString("mode", "nearest");
  ra.ctm = call.attrs.getString("coordinate_transformation_mode", "half_pixel");
  ra.nearestMode = call.attrs.getString("nearest_mode", "round_prefer_floor");
  ra.antialias = call.attrs.getInt("antialias", 0) != 0;
  ra.excludeOutside = call.attrs.getInt("exclude_outside", 0) != 0;
  ra.cubicA = call.attrs.getFloat("cubic_coeff_a", -0.75f);
  ra.extrapolation = call.attrs.getFloat("extrapolation_value", 0.f);
  bool nearest = ra.mode == "nearest";
  if (!nearest && ra.mode != "linear" && ra.mode != "cubic")
    return invalid(op, "unsupported mode '" + ra.mode + "'");
  bool ctmOk = ra.ctm == "half_pixel" || ra.ctm == "half_pixel_symmetric" ||
               ra.ctm == "asymmetric" || ra.ctm == "align_corners" ||
               ra.ctm == "pytorch_half_pixel" ||
               (nearest ? ra.ctm == "tf_half_pixel_for_nn" : ra.ctm == "tf_crop_and_resize");
  if (!ctmOk)
    return invalid(op, "unsupported coordinate_transformation_mode '" + ra.ctm + "' with mode " +
                           ra.mode);
  if (nearest) {
    const std::string &nm = ra.nearestMode;
    if (nm != "round_prefer_floor" && nm != "round_prefer_ceil" && nm != "floor" && nm != "ceil")
      return invalid(op, "unsupported nearest_mode '" + nm + "'");
    if (ra.antialias)
      return invalid(op, "antialias = 1 needs mode linear or cubic");
  } else if (X->type != ElementType::Float) {
    return invalid(op, "mode " + ra.mode + " needs float32 X, got " + elementTypeName(X->type));
  }

  ResizeParams params;
  params.axes = call.attrs.getInts("axes");
  params.keepAspectRatioPolicy = call.attrs.getString("keep_aspect_ratio_policy", "stretch");
  const TensorView *roiT = dataInput(call, 1), *scalesT = dataInput(call, 2),
                   *sizesT = dataInput(call, 3);
  if (scalesT && scalesT->numElements() > 0) {
    if (scalesT->type != ElementType::Float)
      return invalid(op, "scales must be float32, got " + elementTypeName(scalesT->type));
    if (Status s = readReals(op, scalesT, "scales", params.scales); !s.isOk())
      return s;
  }
  if (sizesT && sizesT->numElements() > 0) {
    if (sizesT->type != ElementType::Int64)
      return invalid(op, "sizes must be int64, got " + elementTypeName(sizesT->type));
    if (Status s = readInts(op, sizesT, "sizes", params.sizes); !s.isOk())
      return s;
  }
  if (params.sizes.empty()) // keep_aspect_ratio_policy applies to sizes only
    params.keepAspectRatioPolicy = "stretch";
  ResizePlan plan;
  if (Status s = planResize(params, X->shape, plan); !s.isOk())
    return s;
  // Sizes the scales or sizes decide only now are sized here (Y, a view of
  // call.outputs[0], then shows the buffer).
  if (Result<TensorView> sized = sizedOutput(op, call, 0, plan.outShape); !sized.isOk())
    return sized.status();
  size_t rank = X->shape.size();
  for (size_t a = 0; a < rank; ++a)
    if (X->shape[a] == 0 && plan.outShape[a] > 0)
      return invalid(op, "cannot resize an empty axis " + std::to_string(a));
  if (Y.numElements() == 0)
    return Status::ok();

  if (nearest) {
    std::vector<int64_t> inStrides = denseStrides(X->shape);
    std::vector<std::vector<int64_t>> maps(rank);
    for (size_t a = 0; a < rank; ++a) {
      int64_t in = X->shape[a], out = plan.outShape[a];
      maps[a].resize(size_t(out));
      float scale = float(plan.scales[a]);
      bool resized = std::find(plan.axes.begin(), plan.axes.end(), int64_t(a)) != plan.axes.end();
      for (int64_t j = 0; j < out; ++j)
        maps[a][j] = (resized ? nearestIndex(ra, j, in, out, scale) : j) * inStrides[a];
    }
    gatherNearest(static_cast<char *>(Y.data), static_cast<const char *>(X->data), maps, elem);
    return Status::ok();
  }

  // roi: [starts..., ends...] over the resized axes (tf_crop_and_resize only).
  std::vector<double> roiStart(rank, 0.0), roiEnd(rank, 1.0);
  if (ra.ctm == "tf_crop_and_resize") {
    std::vector<double> roi;
    if (Status s = readReals(op, roiT, "roi", roi); !s.isOk())
      return s;
    size_t na = plan.axes.size();
    if (roi.size() != 2 * na)
      return invalid(op, "tf_crop_and_resize needs roi with " + std::to_string(2 * na) +
                             " values, got " + std::to_string(roi.size()));
    for (size_t i = 0; i < na; ++i) {
      roiStart[plan.axes[i]] = roi[i];
      roiEnd[plan.axes[i]] = roi[na + i];
    }
  }

  // Separable passes in double, one per resized axis in `axes` order.
  std::vector<int64_t> shape = X->shape;
  int64_t maxElems = X->numElements();
  {
    std::vector<int64_t> s = shape;
    for (int64_t a : plan.axes) {
      s[a] = plan.outShape[a];
      maxElems = std::max(maxElems, product(s, 0, rank));
    }
  }
  double *buf;
  if (Status s = allocScratch(call, op, size_t(2 * maxElems), buf); !s.isOk())
    return s;
  double *cur = buf, *next = buf + maxElems;
  const float *x = static_cast<const float *>(X->data);
  int64_t n = X->numElements();
  for (int64_t i = 0; i < n; ++i)
    cur[i] = x[i];
  for (int64_t a : plan.axes) {
    int64_t in = shape[a], out = plan.outShape[a];
    double scale = plan.scales[a];
    if (isClose(scale, 1.0) && out == in && (roiStart[a] == 0.0 && isClose(roiEnd[a], 1.0)))
      continue;
    AxisTaps taps = interpolationTaps(ra, in, out, scale, roiStart[a], roiEnd[a]);
    interpolateAxis(cur, next, product(shape, 0, size_t(a)), in,
                    product(shape, size_t(a) + 1, rank), out, taps, ra.extrapolation);
    shape[a] = out;
    std::swap(cur, next);
  }
  float *y = static_cast<float *>(Y.data);
  for (int64_t i = 0; i < Y.numElements(); ++i)
    y[i] = float(cur[i]);
  return Status::ok();
}

} // namespace ortc::cpu::kernels

//===----------------------------------------------------------------------===//
// GridSample
//===----------------------------------------------------------------------===//

namespace ortc::cpu::kernels {

namespace {

/// Reflects x into [lo, hi] by the nearer border until it is inside (the
/// reference's _gs_reflect).
double reflectCoordinate(double x, double lo, double hi) {
  double range = hi - lo;
  if (!(range > 0))
    return lo;
  if (x < lo) {
    double dx = lo - x, q = std::floor(dx / range), r = dx - q * range;
    return std::fmod(q, 2.0) == 0 ? lo + r : hi - r;
  }
  if (x > hi) {
    double dx = x - hi, q = std::floor(dx / range), r = dx - q * range;
    return std::fmod(q, 2.0) == 0 ? hi - r : lo + r;
  }
  return x;
}

/// A coordinate made safe to convert to an integer.
double saneCoordinate(double x) {
  if (!(x >= -1e9))
    return -1e9;
  if (!(x <= 1e9))
    return 1e9;
  return x;
}

} // namespace

Status gridSample(const KernelCall &call) {
  const char *op = "GridSample";
  const TensorView *X = call.input(0), *G = call.input(1);
  if (Status s = checkFloats(op, {{X, "input X"}, {G, "input grid"}}); !s.isOk())
    return s;
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Status s = checkFloat(op, &Y, "output Y"); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  if (rank != 4 && rank != 5)
    return invalid(op, "X must be [N,C,H,W] or [N,C,D,H,W], got " + str(X->shape));
  size_t r = rank - 2;
  if (G->shape.size() != rank || G->shape[0] != X->shape[0] || G->shape[rank - 1] != int64_t(r))
    return invalid(op, "grid must be [N, out..., " + std::to_string(r) + "] for X " +
                           str(X->shape) + ", got " + str(G->shape));
  std::string mode = call.attrs.getString("mode", "linear");
  std::string padding = call.attrs.getString("padding_mode", "zeros");
  bool align = call.attrs.getInt("align_corners", 0) != 0;
  // Opset 16 spelled the modes bilinear and bicubic.
  if (mode == "bilinear")
    mode = "linear";
  else if (mode == "bicubic")
    mode = "cubic";
  if (mode != "linear" && mode != "nearest" && mode != "cubic")
    return invalid(op, "unsupported mode '" + mode + "'");
  if (mode == "cubic" && r != 2)
    return invalid(op, "mode cubic needs 4-D X, got " + str(X->shape));
  if (padding != "zeros" && padding != "border" && padding != "reflection")
    return invalid(op, "unsupported padding_mode '" + padding + "'");
  std::vector<int64_t> outShape = {X->shape[0], X->shape[1]};
  outShape.insert(outShape.end(), G->shape.begin() + 1, G->shape.end() - 1);
  if (Status s = checkOutputShape(op, Y, outShape); !s.isOk())
    return s;
  int64_t N = X->shape[0], C = X->shape[1];
  int64_t P = product(G->shape, 1, rank - 1);
  int64_t inPlane = product(X->shape, 2, rank);
  if (Y.numElements() == 0)
    return Status::ok();
  if (inPlane == 0)
    return invalid(op, "X has an empty spatial dim " + str(X->shape));
  const float *x = static_cast<const float *>(X->data);
  const float *g = static_cast<const float *>(G->data);
  float *y = static_cast<float *>(Y.data);
  std::vector<int64_t> inStrides = denseStrides(X->shape);

  constexpr int kMaxTaps = 4;
  int64_t nt = mode == "linear" ? 2 : mode == "cubic" ? 4 : 1;
  // Per spatial dim: tap offsets in elements (-1: a zero pad) and weights.
  int64_t off[3][kMaxTaps];
  float w[3][kMaxTaps];
  for (int64_t n = 0; n < N; ++n)
    for (int64_t p = 0; p < P; ++p) {
      const float *gp = g + (n * P + p) * int64_t(r);
      for (size_t i = 0; i < r; ++i) {
        int64_t len = X->shape[2 + i];
        float nv = gp[r - 1 - i]; // the grid lists x (the last dim) first
        float v = align ? (nv + 1) / 2.0f * float(len - 1) : ((nv + 1) * float(len) - 1) / 2.0f;
        double lo = align ? 0.0 : -0.5, hi = align ? double(len - 1) : double(len) - 0.5;
        if (mode == "nearest")
          v = std::nearbyint(v);
        if (v < lo || v > hi) {
          if (padding == "border")
            v = std::clamp(v, 0.f, float(len - 1));
          else if (padding == "reflection")
            v = float(reflectCoordinate(v, lo, hi));
        }
        auto tap = [&](int64_t idx) -> int64_t {
          if (padding == "zeros")
            return idx >= 0 && idx < len ? idx * inStrides[2 + i] : -1;
          if (padding == "border")
            idx = std::clamp<int64_t>(idx, 0, len - 1);
          else
            idx = int64_t(reflectCoordinate(double(idx), lo, hi));
          return std::clamp<int64_t>(idx, 0, len - 1) * inStrides[2 + i];
        };
        double sv = saneCoordinate(v);
        if (mode == "nearest") {
          off[i][0] = tap(int64_t(sv));
          w[i][0] = 1.f;
          continue;
        }
        int64_t x0 = int64_t(std::floor(sv));
        float t = float(sv - double(x0));
        if (mode == "linear") {
          w[i][0] = 1 - t;
          w[i][1] = t;
          off[i][0] = tap(x0);
          off[i][1] = tap(x0 + 1);
        } else {
          const float A = -0.75f;
          w[i][0] = ((A * (t + 1) - 5 * A) * (t + 1) + 8 * A) * (t + 1) - 4 * A;
          w[i][1] = ((A + 2) * t - (A + 3)) * t * t + 1;
          w[i][2] = ((A + 2) * (1 - t) - (A + 3)) * (1 - t) * (1 - t) + 1;
          w[i][3] = ((A * (2 - t) - 5 * A) * (2 - t) + 8 * A) * (2 - t) - 4 * A;
          for (int k = 0; k < 4; ++k)
            off[i][k] = tap(x0 - 1 + k);
        }
      }
      int64_t combos = 1;
      for (size_t i = 0; i < r; ++i)
        combos *= nt;
      for (int64_t c = 0; c < C; ++c) {
        const float *xp = x + (n * C + c) * inPlane;
        double acc = 0;
        for (int64_t k = 0; k < combos; ++k) {
          int64_t rest = k, o = 0;
          double wt = 1;
          bool zero = false;
          for (size_t i = r; i-- > 0;) {
            int64_t t = rest % nt;
            rest /= nt;
            if (off[i][t] < 0)
              zero = true;
            o += off[i][t];
            wt *= w[i][t];
          }
          if (!zero)
            acc += wt * xp[o];
        }
        y[(n * C + c) * P + p] = float(acc);
      }
    }
  return Status::ok();
}

} // namespace ortc::cpu::kernels

//===----------------------------------------------------------------------===//
// ConvTranspose
//===----------------------------------------------------------------------===//

namespace ortc::cpu::kernels {

Status planConvTranspose(const StepAttributes &attrs, const std::vector<int64_t> &inSpatial,
                         const std::vector<int64_t> &kernel, ConvTransposePlan &plan) {
  const char *op = "ConvTranspose";
  size_t r = inSpatial.size();
  if (r < 1 || r > 3)
    return invalid(op, "supports 1 to 3 spatial dims, got " + std::to_string(r));
  if (kernel.size() != r)
    return invalid(op, "W's kernel " + str(kernel) + " does not match " + std::to_string(r) +
                           " spatial dims");
  if (attrs.has("kernel_shape") && attrs.getInts("kernel_shape") != kernel)
    return invalid(op, "kernel_shape " + str(attrs.getInts("kernel_shape")) + " differs from W's " +
                           str(kernel));
  std::vector<int64_t> strides = attrs.getInts("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> dilations = attrs.getInts("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> outPad = attrs.getInts("output_padding", std::vector<int64_t>(r, 0));
  std::vector<int64_t> pads = attrs.getInts("pads", std::vector<int64_t>(2 * r, 0));
  std::vector<int64_t> outputShape = attrs.getInts("output_shape");
  std::string autoPad = attrs.getString("auto_pad", "NOTSET");
  if (strides.size() != r || dilations.size() != r || outPad.size() != r || pads.size() != 2 * r ||
      (!outputShape.empty() && outputShape.size() != r))
    return invalid(op, "strides, dilations, output_padding, pads or output_shape do not match " +
                           std::to_string(r) + " spatial dims");
  bool same = autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER";
  if (!same && autoPad != "NOTSET" && autoPad != "VALID")
    return invalid(op, "unsupported auto_pad '" + autoPad + "'");
  if (autoPad == "VALID")
    pads.assign(2 * r, 0);
  if (!same && !outputShape.empty())
    for (int64_t p : pads)
      if (p != 0)
        return invalid(op, "output_shape with nonzero pads " + str(pads));
  plan = ConvTransposePlan();
  for (size_t i = 0; i < r; ++i) {
    int64_t s = strides[i], d = dilations[i], k = kernel[i], in = inSpatial[i];
    if (s < 1 || d < 1 || k < 1)
      return invalid(op, "strides, dilations and kernel dims must be >= 1");
    if (outPad[i] < 0 || outPad[i] >= std::max(s, d))
      return invalid(op, "output_padding " + str(outPad) + " must be below the stride or dilation");
    int64_t pb = pads[i], pe = pads[i + r], out;
    if (pb < 0 || pe < 0)
      return invalid(op, "negative pads " + str(pads));
    int64_t natural =
        transposedWindowOutputSize<int64_t>(in, k, s, d, outPad[i], 0, 0, AutoPad::NotSet);
    if (same) {
      out = outputShape.empty() ? transposedWindowOutputSize<int64_t>(in, k, s, d, outPad[i], 0, 0,
                                                                     AutoPad::SameUpper)
                                : outputShape[i];
      int64_t total = natural - out;
      if (total < 0)
        return invalid(op, "output_shape " + str(outputShape) +
                               " is larger than the full output with auto_pad " + autoPad);
      // SAME_UPPER puts the odd pad at the end (the ONNX reference's split).
      pb = autoPad == "SAME_UPPER" ? total / 2 : total - total / 2;
    } else if (!outputShape.empty()) {
      out = outputShape[i];
      // Larger than the full output: the extra positions at the end get only
      // the bias (as output_padding). Smaller is a crop whose placement ONNX,
      // its reference and onnxruntime disagree on.
      if (out < natural)
        return invalid(op, "output_shape " + str(outputShape) +
                               " is smaller than the full output; only larger is supported");
      pb = 0;
    } else {
      out = transposedWindowOutputSize<int64_t>(in, k, s, d, outPad[i], pb, pe, AutoPad::NotSet);
    }
    if (out < 0)
      return invalid(op, "pads " + str(pads) + " remove more than the output has");
    plan.out.push_back(out);
    plan.padBegin.push_back(pb);
    plan.strides.push_back(s);
    plan.dilations.push_back(d);
  }
  return Status::ok();
}

Status convTranspose(const KernelCall &call) {
  const char *op = "ConvTranspose";
  const TensorView *X = call.input(0), *Wt = call.input(1), *B = call.input(2);
  if (Status s = checkFloats(op, {{X, "input X"}, {Wt, "input W"}}); !s.isOk())
    return s;
  if (Status s = checkOptionalFloat(op, B, "input B"); !s.isOk())
    return s;
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Status s = checkFloat(op, &Y, "output Y"); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  if (rank < 3 || rank > 5 || Wt->shape.size() != rank)
    return invalid(op, "X [N,C,D1..Dn] and W [C,M/group,k1..kn] with n = 1..3, got X " +
                           str(X->shape) + " and W " + str(Wt->shape));
  int64_t N = X->shape[0], C = X->shape[1];
  int64_t group = call.attrs.getInt("group", 1);
  if (group < 1 || C % group != 0 || Wt->shape[0] != C)
    return invalid(op, "group " + std::to_string(group) + " does not fit X " + str(X->shape) +
                           " and W " + str(Wt->shape));
  int64_t Mg = Wt->shape[1], M = Mg * group, Cg = C / group;
  if (B && B->shape != std::vector<int64_t>{M})
    return invalid(op, "B must be [" + std::to_string(M) + "], got " + str(B->shape));
  std::vector<int64_t> inSpatial(X->shape.begin() + 2, X->shape.end());
  std::vector<int64_t> kernel(Wt->shape.begin() + 2, Wt->shape.end());
  ConvTransposePlan plan;
  if (Status s = planConvTranspose(call.attrs, inSpatial, kernel, plan); !s.isOk())
    return s;
  std::vector<int64_t> outShape = {N, M};
  outShape.insert(outShape.end(), plan.out.begin(), plan.out.end());
  if (Status s = checkOutputShape(op, Y, outShape); !s.isOk())
    return s;

  // Normalize to 3 spatial dims (leading size-1 dims).
  size_t r = inSpatial.size(), lead = 3 - r;
  int64_t in[3] = {1, 1, 1}, out[3] = {1, 1, 1}, k[3] = {1, 1, 1}, s[3] = {1, 1, 1},
          d[3] = {1, 1, 1}, pb[3] = {0, 0, 0};
  for (size_t i = 0; i < r; ++i) {
    in[lead + i] = inSpatial[i];
    out[lead + i] = plan.out[i];
    k[lead + i] = kernel[i];
    s[lead + i] = plan.strides[i];
    d[lead + i] = plan.dilations[i];
    pb[lead + i] = plan.padBegin[i];
  }
  int64_t inPlane = in[0] * in[1] * in[2], outPlane = out[0] * out[1] * out[2];
  int64_t kSize = k[0] * k[1] * k[2];
  float *y = static_cast<float *>(Y.data);
  const float *x = static_cast<const float *>(X->data);
  const float *w = static_cast<const float *>(Wt->data);
  const float *bias = B ? static_cast<const float *>(B->data) : nullptr;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m)
      std::fill(y + (n * M + m) * outPlane, y + (n * M + m + 1) * outPlane, bias ? bias[m] : 0.f);
  if (Y.numElements() == 0 || inPlane == 0 || Cg == 0)
    return Status::ok();

  // cols [Mg*kSize, inPlane] = W_g^T [Mg*kSize, Cg] x X_g [Cg, inPlane], then
  // each column entry is added at its output position (col2im).
  int64_t rows = Mg * kSize;
  size_t packedFloats = packedGemmBSize(Cg, inPlane);
  float *scratch;
  if (Status st = allocScratch(call, op, packedFloats + size_t(rows * inPlane), scratch);
      !st.isOk())
    return st;
  float *packed = scratch, *cols = scratch + packedFloats;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < group; ++g) {
      const float *xg = x + (n * C + g * Cg) * inPlane;
      const float *wg = w + g * Cg * rows;
      packGemmB(xg, inPlane, false, Cg, inPlane, 1.f, packed);
      sgemmPackedParallel(call.pool, rows, inPlane, Cg, wg, rows, true, packed, cols, inPlane,
                          false);
      for (int64_t m = 0; m < Mg; ++m) {
        float *yp = y + (n * M + g * Mg + m) * outPlane;
        for (int64_t t = 0; t < kSize; ++t) {
          int64_t kd = t / (k[1] * k[2]), kh = t / k[2] % k[1], kw = t % k[2];
          const float *col = cols + (m * kSize + t) * inPlane;
          for (int64_t id = 0; id < in[0]; ++id) {
            int64_t od = id * s[0] + kd * d[0] - pb[0];
            if (od < 0 || od >= out[0])
              continue;
            for (int64_t ih = 0; ih < in[1]; ++ih) {
              int64_t oh = ih * s[1] + kh * d[1] - pb[1];
              if (oh < 0 || oh >= out[1])
                continue;
              float *yrow = yp + (od * out[1] + oh) * out[2];
              const float *crow = col + (id * in[1] + ih) * in[2];
              for (int64_t iw = 0; iw < in[2]; ++iw) {
                int64_t ow = iw * s[2] + kw * d[2] - pb[2];
                if (ow >= 0 && ow < out[2])
                  yrow[ow] += crow[iw];
              }
            }
          }
        }
      }
    }
  return Status::ok();
}

} // namespace ortc::cpu::kernels

//===----------------------------------------------------------------------===//
// RoiAlign
//===----------------------------------------------------------------------===//

namespace ortc::cpu::kernels {

Status roiAlign(const KernelCall &call) {
  const char *op = "RoiAlign";
  const TensorView *X = call.input(0), *R = call.input(1), *Bi = dataInput(call, 2);
  if (Status s = checkFloats(op, {{X, "input X"}, {R, "input rois"}}); !s.isOk())
    return s;
  if (!Bi || Bi->type != ElementType::Int64)
    return invalid(op, "batch_indices must be int64");
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Status s = checkFloat(op, &Y, "output Y"); !s.isOk())
    return s;
  if (X->shape.size() != 4)
    return invalid(op, "X must be [N,C,H,W], got " + str(X->shape));
  if (R->shape.size() != 2 || R->shape[1] != 4)
    return invalid(op, "rois must be [num_rois, 4], got " + str(R->shape));
  int64_t numRois = R->shape[0];
  if (Bi->shape != std::vector<int64_t>{numRois})
    return invalid(op, "batch_indices must be [" + std::to_string(numRois) + "], got " +
                           str(Bi->shape));
  std::string ctm = call.attrs.getString("coordinate_transformation_mode", "half_pixel");
  std::string mode = call.attrs.getString("mode", "avg");
  if (ctm != "half_pixel" && ctm != "output_half_pixel")
    return invalid(op, "unsupported coordinate_transformation_mode '" + ctm + "'");
  if (mode != "avg" && mode != "max")
    return invalid(op, "unsupported mode '" + mode + "'");
  int64_t OH = call.attrs.getInt("output_height", 1), OW = call.attrs.getInt("output_width", 1);
  int64_t samplingRatio = call.attrs.getInt("sampling_ratio", 0);
  double spatialScale = call.attrs.getFloat("spatial_scale", 1.f);
  if (OH < 1 || OW < 1 || samplingRatio < 0)
    return invalid(op, "output_height and output_width must be >= 1, sampling_ratio >= 0");
  int64_t N = X->shape[0], C = X->shape[1], H = X->shape[2], W = X->shape[3];
  if (Status s = checkOutputShape(op, Y, {numRois, C, OH, OW}); !s.isOk())
    return s;
  const float *x = static_cast<const float *>(X->data);
  const float *rois = static_cast<const float *>(R->data);
  const int64_t *batch = static_cast<const int64_t *>(Bi->data);
  float *y = static_cast<float *>(Y.data);
  bool halfPixel = ctm == "half_pixel";
  struct Sample {
    int64_t pos[4];
    double w[4];
  };
  std::vector<Sample> samples;
  for (int64_t n = 0; n < numRois; ++n) {
    int64_t b = batch[n];
    if (b < 0 || b >= N)
      return invalid(op, "batch index " + std::to_string(b) + " of roi " + std::to_string(n) +
                             " is outside [0, " + std::to_string(N) + ")");
    const float *roi = rois + n * 4;
    double offset = halfPixel ? 0.5 : 0.0;
    double startW = roi[0] * spatialScale - offset, startH = roi[1] * spatialScale - offset;
    double endW = roi[2] * spatialScale - offset, endH = roi[3] * spatialScale - offset;
    double roiW = endW - startW, roiH = endH - startH;
    if (!halfPixel) {
      roiW = std::max(roiW, 1.0);
      roiH = std::max(roiH, 1.0);
    }
    double binH = roiH / double(OH), binW = roiW / double(OW);
    int64_t gridH = samplingRatio > 0 ? samplingRatio : int64_t(std::ceil(roiH / double(OH)));
    int64_t gridW = samplingRatio > 0 ? samplingRatio : int64_t(std::ceil(roiW / double(OW)));
    gridH = std::max<int64_t>(gridH, 0);
    gridW = std::max<int64_t>(gridW, 0);
    double count = double(std::max<int64_t>(gridH * gridW, 1));
    // The bilinear taps of every sample point, shared by all channels.
    samples.assign(size_t(OH * OW * gridH * gridW), Sample{{0, 0, 0, 0}, {0, 0, 0, 0}});
    size_t at = 0;
    for (int64_t ph = 0; ph < OH; ++ph)
      for (int64_t pw = 0; pw < OW; ++pw)
        for (int64_t iy = 0; iy < gridH; ++iy) {
          double yy = startH + double(ph) * binH + (double(iy) + 0.5) * binH / double(gridH);
          for (int64_t ix = 0; ix < gridW; ++ix, ++at) {
            double xx = startW + double(pw) * binW + (double(ix) + 0.5) * binW / double(gridW);
            double sy = yy, sx = xx;
            if (sy < -1.0 || sy > double(H) || sx < -1.0 || sx > double(W))
              continue;
            sy = std::max(sy, 0.0);
            sx = std::max(sx, 0.0);
            int64_t yLow = int64_t(sy), xLow = int64_t(sx), yHigh, xHigh;
            if (yLow >= H - 1) {
              yHigh = yLow = H - 1;
              sy = double(yLow);
            } else {
              yHigh = yLow + 1;
            }
            if (xLow >= W - 1) {
              xHigh = xLow = W - 1;
              sx = double(xLow);
            } else {
              xHigh = xLow + 1;
            }
            double ly = sy - double(yLow), lx = sx - double(xLow), hy = 1 - ly, hx = 1 - lx;
            samples[at] =
                Sample{{yLow * W + xLow, yLow * W + xHigh, yHigh * W + xLow, yHigh * W + xHigh},
                       {hy * hx, hy * lx, ly * hx, ly * lx}};
          }
        }
    int64_t perBin = gridH * gridW;
    for (int64_t c = 0; c < C; ++c) {
      const float *xp = x + (b * C + c) * H * W;
      float *yp = y + (n * C + c) * OH * OW;
      for (int64_t bin = 0; bin < OH * OW; ++bin) {
        double out = 0;
        bool first = true;
        for (int64_t k = 0; k < perBin; ++k) {
          const Sample &sm = samples[size_t(bin * perBin + k)];
          if (mode == "avg") {
            out += sm.w[0] * xp[sm.pos[0]] + sm.w[1] * xp[sm.pos[1]] + sm.w[2] * xp[sm.pos[2]] +
                   sm.w[3] * xp[sm.pos[3]];
          } else {
            // The reference's max mode: the largest weighted corner.
            double v = std::max(std::max(sm.w[0] * xp[sm.pos[0]], sm.w[1] * xp[sm.pos[1]]),
                                std::max(sm.w[2] * xp[sm.pos[2]], sm.w[3] * xp[sm.pos[3]]));
            out = first ? v : std::max(out, v);
            first = false;
          }
        }
        yp[bin] = float(mode == "avg" ? out / count : out);
      }
    }
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// MaxUnpool
//===----------------------------------------------------------------------===//

Status maxUnpool(const KernelCall &call) {
  const char *op = "MaxUnpool";
  const TensorView *X = call.input(0), *I = dataInput(call, 1), *S = dataInput(call, 2);
  if (Status s = checkFloat(op, X, "input X"); !s.isOk())
    return s;
  if (!I || I->type != ElementType::Int64 || I->shape != X->shape)
    return invalid(op, "I must be int64 of X's shape " + str(X->shape));
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Status s = checkFloat(op, &Y, "output Y"); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  if (rank < 3 || rank > 5)
    return invalid(op, "X must be [N,C,D1..Dn] with n = 1..3, got " + str(X->shape));
  size_t r = rank - 2;
  std::vector<int64_t> kernel = call.attrs.getInts("kernel_shape");
  std::vector<int64_t> strides = call.attrs.getInts("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = call.attrs.getInts("pads", std::vector<int64_t>(2 * r, 0));
  if (kernel.size() != r || strides.size() != r || pads.size() != 2 * r)
    return invalid(op, "kernel_shape, strides and pads must match " + std::to_string(r) +
                           " spatial dims");
  std::vector<int64_t> inferred = {X->shape[0], X->shape[1]};
  for (size_t i = 0; i < r; ++i) {
    int64_t d = (X->shape[2 + i] - 1) * strides[i] - (pads[i] + pads[r + i]) + kernel[i];
    if (kernel[i] < 1 || strides[i] < 1 || d < 0)
      return invalid(op, "kernel_shape, strides or pads give a negative output dim");
    inferred.push_back(d);
  }
  std::vector<int64_t> outShape = inferred;
  if (S) {
    if (Status s = readInts(op, S, "output_shape", outShape); !s.isOk())
      return s;
    if (outShape.size() != rank)
      return invalid(op, "output_shape must have " + std::to_string(rank) + " values");
    // As the ONNX reference: the indices address the inferred shape, which
    // lands in the leading corner of a larger output_shape.
    for (size_t i = 0; i < rank; ++i)
      if (outShape[i] < inferred[i])
        return invalid(op, "output_shape " + str(outShape) + " is smaller than the inferred " +
                               str(inferred));
  }
  if (Status s = checkOutputShape(op, Y, outShape); !s.isOk())
    return s;
  float *y = static_cast<float *>(Y.data);
  std::fill(y, y + Y.numElements(), 0.f);
  int64_t total = product(inferred, 0, rank);
  const float *x = static_cast<const float *>(X->data);
  const int64_t *idx = static_cast<const int64_t *>(I->data);
  std::vector<int64_t> inferredStrides = denseStrides(inferred),
                       outStrides = denseStrides(outShape);
  for (int64_t e = 0; e < X->numElements(); ++e) {
    int64_t at = idx[e];
    if (at < 0 || at >= total)
      return invalid(op, "index " + std::to_string(at) + " is outside [0, " +
                             std::to_string(total) + ")");
    int64_t o = 0, rest = at;
    for (size_t i = 0; i < rank; ++i) {
      o += rest / inferredStrides[i] * outStrides[i];
      rest %= inferredStrides[i];
    }
    y[o] = x[e];
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// DeformConv (2-D)
//===----------------------------------------------------------------------===//

Status deformConv(const KernelCall &call) {
  const char *op = "DeformConv";
  const TensorView *X = call.input(0), *Wt = call.input(1), *Off = call.input(2),
                   *B = call.input(3), *Mk = call.input(4);
  if (Status s = checkFloats(op, {{X, "input X"}, {Wt, "input W"}, {Off, "input offset"}});
      !s.isOk())
    return s;
  if (Status s = checkOptionalFloat(op, B, "input B"); !s.isOk())
    return s;
  if (Status s = checkOptionalFloat(op, Mk, "input mask"); !s.isOk())
    return s;
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Status s = checkFloat(op, &Y, "output Y"); !s.isOk())
    return s;
  if (X->shape.size() != 4 || Wt->shape.size() != 4 || Off->shape.size() != 4)
    return invalid(op, "supports 2-D only: X [N,C,H,W], W [M,C/group,kH,kW], offset 4-D");
  int64_t N = X->shape[0], C = X->shape[1], H = X->shape[2], Wd = X->shape[3];
  int64_t M = Wt->shape[0], Cg = Wt->shape[1], kH = Wt->shape[2], kW = Wt->shape[3];
  int64_t group = call.attrs.getInt("group", 1), og = call.attrs.getInt("offset_group", 1);
  if (group < 1 || Cg * group != C || M % group != 0)
    return invalid(op, "group " + std::to_string(group) + " does not fit X " + str(X->shape) +
                           " and W " + str(Wt->shape));
  if (og < 1 || C % og != 0)
    return invalid(op, "offset_group " + std::to_string(og) + " must divide C");
  std::vector<int64_t> kernel = {kH, kW};
  if (call.attrs.has("kernel_shape") && call.attrs.getInts("kernel_shape") != kernel)
    return invalid(op, "kernel_shape differs from W's");
  std::vector<int64_t> strides = call.attrs.getInts("strides", {1, 1});
  std::vector<int64_t> dil = call.attrs.getInts("dilations", {1, 1});
  std::vector<int64_t> pads = call.attrs.getInts("pads", {0, 0, 0, 0});
  if (strides.size() != 2 || dil.size() != 2 || pads.size() != 4)
    return invalid(op, "strides, dilations and pads must describe 2 spatial dims");
  for (int i = 0; i < 2; ++i)
    if (strides[i] < 1 || dil[i] < 1)
      return invalid(op, "strides and dilations must be >= 1");
  int64_t OH = (H + pads[0] + pads[2] - ((kH - 1) * dil[0] + 1)) / strides[0] + 1;
  int64_t OW = (Wd + pads[1] + pads[3] - ((kW - 1) * dil[1] + 1)) / strides[1] + 1;
  if (OH < 1 || OW < 1)
    return invalid(op, "the dilated kernel is larger than the padded input");
  int64_t K = kH * kW;
  if (Off->shape != std::vector<int64_t>{N, og * K * 2, OH, OW})
    return invalid(op,
                   "offset must be " + str({N, og * K * 2, OH, OW}) + ", got " + str(Off->shape));
  if (Mk && Mk->shape != std::vector<int64_t>{N, og * K, OH, OW})
    return invalid(op, "mask must be " + str({N, og * K, OH, OW}) + ", got " + str(Mk->shape));
  if (B && B->shape != std::vector<int64_t>{M})
    return invalid(op, "B must be [" + std::to_string(M) + "], got " + str(B->shape));
  if (Status s = checkOutputShape(op, Y, {N, M, OH, OW}); !s.isOk())
    return s;
  const float *x = static_cast<const float *>(X->data), *w = static_cast<const float *>(Wt->data);
  const float *off = static_cast<const float *>(Off->data);
  const float *mask = Mk ? static_cast<const float *>(Mk->data) : nullptr;
  const float *bias = B ? static_cast<const float *>(B->data) : nullptr;
  float *y = static_cast<float *>(Y.data);
  int64_t P = OH * OW, Mg = M / group, perOffsetGroup = C / og;
  // Sampled values [C, K, P] of one image, then a GEMM-like reduction.
  float *cols;
  if (Status s = allocScratch(call, op, size_t(C * K * P), cols); !s.isOk())
    return s;
  auto at = [&](const float *plane, int64_t yy, int64_t xx) -> double {
    return yy >= 0 && yy < H && xx >= 0 && xx < Wd ? plane[yy * Wd + xx] : 0.0;
  };
  for (int64_t n = 0; n < N; ++n) {
    for (int64_t c = 0; c < C; ++c) {
      int64_t g = c / perOffsetGroup;
      const float *plane = x + (n * C + c) * H * Wd;
      for (int64_t k = 0; k < K; ++k) {
        int64_t ki = k / kW, kj = k % kW;
        const float *offH = off + ((n * og + g) * K * 2 + k * 2) * P;
        const float *offW = offH + P;
        const float *mk = mask ? mask + ((n * og + g) * K + k) * P : nullptr;
        for (int64_t p = 0; p < P; ++p) {
          int64_t i = p / OW, j = p % OW;
          double hy = double(i * strides[0] - pads[0] + ki * dil[0]) + offH[p];
          double wx = double(j * strides[1] - pads[1] + kj * dil[1]) + offW[p];
          double v = 0;
          if (std::isfinite(hy) && std::isfinite(wx) && hy > -1 && hy < double(H) && wx > -1 &&
              wx < double(Wd)) {
            int64_t y0 = int64_t(std::floor(hy)), x0 = int64_t(std::floor(wx));
            double ly = hy - double(y0), lx = wx - double(x0);
            v = (1 - ly) * ((1 - lx) * at(plane, y0, x0) + lx * at(plane, y0, x0 + 1)) +
                ly * ((1 - lx) * at(plane, y0 + 1, x0) + lx * at(plane, y0 + 1, x0 + 1));
          }
          cols[(c * K + k) * P + p] = float(mk ? v * mk[p] : v);
        }
      }
    }
    for (int64_t m = 0; m < M; ++m) {
      int64_t g = m / Mg;
      float *yp = y + (n * M + m) * P;
      for (int64_t p = 0; p < P; ++p) {
        double acc = bias ? bias[m] : 0.0;
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t k = 0; k < K; ++k)
            acc += double(w[(m * Cg + c) * K + k]) * cols[((g * Cg + c) * K + k) * P + p];
        yp[p] = float(acc);
      }
    }
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Col2Im, CenterCropPad, AffineGrid
//===----------------------------------------------------------------------===//

Status col2Im(const KernelCall &call) {
  const char *op = "Col2Im";
  const TensorView *X = call.input(0), *IS = dataInput(call, 1), *BS = dataInput(call, 2);
  if (Status s = checkFloat(op, X, "input"); !s.isOk())
    return s;
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Status s = checkFloat(op, &Y, "output"); !s.isOk())
    return s;
  std::vector<int64_t> image, block;
  if (!IS || !BS)
    return invalid(op, "needs image_shape and block_shape");
  if (Status s = readInts(op, IS, "image_shape", image); !s.isOk())
    return s;
  if (Status s = readInts(op, BS, "block_shape", block); !s.isOk())
    return s;
  size_t r = image.size();
  if (r < 1 || block.size() != r)
    return invalid(op, "image_shape and block_shape must have one length >= 1");
  std::vector<int64_t> strides = call.attrs.getInts("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> dil = call.attrs.getInts("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = call.attrs.getInts("pads", std::vector<int64_t>(2 * r, 0));
  if (strides.size() != r || dil.size() != r || pads.size() != 2 * r)
    return invalid(op, "strides, dilations or pads do not match " + std::to_string(r) + " dims");
  if (X->shape.size() != 3)
    return invalid(op, "input must be [N, C*prod(block_shape), L], got " + str(X->shape));
  int64_t kSize = 1, L = 1;
  std::vector<int64_t> blocks(r);
  for (size_t i = 0; i < r; ++i) {
    if (block[i] < 1 || strides[i] < 1 || dil[i] < 1 || image[i] < 0 || pads[i] < 0 ||
        pads[r + i] < 0)
      return invalid(op, "block_shape, strides and dilations must be >= 1, pads >= 0");
    kSize *= block[i];
    blocks[i] = (image[i] + pads[i] + pads[r + i] - dil[i] * (block[i] - 1) - 1) / strides[i] + 1;
    if (blocks[i] < 1)
      return invalid(op, "the dilated block is larger than the padded image");
    L *= blocks[i];
  }
  int64_t N = X->shape[0];
  if (X->shape[1] % kSize != 0 || X->shape[2] != L)
    return invalid(op, "input " + str(X->shape) + " must be [N, C*" + std::to_string(kSize) + ", " +
                           std::to_string(L) + "]");
  int64_t C = X->shape[1] / kSize;
  std::vector<int64_t> outShape = {N, C};
  outShape.insert(outShape.end(), image.begin(), image.end());
  if (Status s = checkOutputShape(op, Y, outShape); !s.isOk())
    return s;
  float *y = static_cast<float *>(Y.data);
  const float *x = static_cast<const float *>(X->data);
  std::fill(y, y + Y.numElements(), 0.f);
  int64_t imSize = product(image, 0, r);
  std::vector<int64_t> kpos(r), bpos(r);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t cc = 0; cc < C * kSize; ++cc) {
      int64_t c = cc / kSize, rest = cc % kSize;
      for (size_t i = r; i-- > 0;) {
        kpos[i] = rest % block[i];
        rest /= block[i];
      }
      const float *col = x + (n * C * kSize + cc) * L;
      float *img = y + (n * C + c) * imSize;
      for (int64_t l = 0; l < L; ++l) {
        int64_t lr = l, o = 0;
        bool insideAll = true;
        for (size_t i = r; i-- > 0;) {
          bpos[i] = lr % blocks[i];
          lr /= blocks[i];
        }
        for (size_t i = 0; i < r; ++i) {
          int64_t p = bpos[i] * strides[i] - pads[i] + kpos[i] * dil[i];
          if (p < 0 || p >= image[i]) {
            insideAll = false;
            break;
          }
          o = o * image[i] + p;
        }
        if (insideAll)
          img[o] += col[l];
      }
    }
  return Status::ok();
}

Status centerCropPad(const KernelCall &call) {
  const char *op = "CenterCropPad";
  const TensorView *X = dataInput(call, 0), *S = dataInput(call, 1);
  if (!X || !S)
    return invalid(op, "needs input_data and shape");
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  size_t elem = elementSize(X->type);
  if (elem == 0 || Y.type != X->type)
    return invalid(op, "input and output must have one known element type");
  std::vector<int64_t> shape;
  if (Status s = readInts(op, S, "shape", shape); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  std::vector<int64_t> axes = call.attrs.getInts("axes");
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(int64_t(i));
  if (shape.size() != axes.size())
    return invalid(op, "shape must have " + std::to_string(axes.size()) + " values");
  std::vector<bool> seen(rank, false);
  std::vector<int64_t> outShape = X->shape;
  // Per dim: output j reads input j + shift when inside.
  std::vector<int64_t> shift(rank, 0);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (Status s = claimAxis(op, a, seen); !s.isOk())
      return s;
    int64_t dim = X->shape[a], want = shape[i];
    if (want < 0)
      return invalid(op, "negative shape value " + std::to_string(want));
    outShape[a] = want;
    shift[a] = want <= dim ? (dim - want) / 2 : -((want - dim) / 2);
  }
  if (Status s = checkOutputShape(op, Y, outShape); !s.isOk())
    return s;
  int64_t total = Y.numElements();
  char *y = static_cast<char *>(Y.data);
  const char *x = static_cast<const char *>(X->data);
  std::vector<int64_t> inStrides = denseStrides(X->shape);
  std::vector<int64_t> idx(rank, 0);
  for (int64_t e = 0; e < total; ++e) {
    int64_t src = 0;
    bool inside = true;
    for (size_t i = 0; i < rank; ++i) {
      int64_t j = idx[i] + shift[i];
      if (j < 0 || j >= X->shape[i]) {
        inside = false;
        break;
      }
      src += j * inStrides[i];
    }
    if (inside)
      std::memcpy(y + e * int64_t(elem), x + src * int64_t(elem), elem);
    else
      std::memset(y + e * int64_t(elem), 0, elem);
    for (size_t i = rank; i-- > 0;) {
      if (++idx[i] < outShape[i])
        break;
      idx[i] = 0;
    }
  }
  return Status::ok();
}

Status affineGrid(const KernelCall &call) {
  const char *op = "AffineGrid";
  const TensorView *T = call.input(0), *S = dataInput(call, 1);
  if (Status s = checkFloat(op, T, "input theta"); !s.isOk())
    return s;
  if (!S)
    return invalid(op, "needs the size input");
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Status s = checkFloat(op, &Y, "output grid"); !s.isOk())
    return s;
  std::vector<int64_t> size;
  if (Status s = readInts(op, S, "size", size); !s.isOk())
    return s;
  if (size.size() != 4 && size.size() != 5)
    return invalid(op, "size must be [N,C,H,W] or [N,C,D,H,W], got " + str(size));
  int64_t r = int64_t(size.size()) - 2;
  int64_t N = size[0];
  if (T->shape != std::vector<int64_t>{N, r, r + 1})
    return invalid(op, "theta must be " + str({N, r, r + 1}) + ", got " + str(T->shape));
  std::vector<int64_t> dims(size.begin() + 2, size.end());
  for (int64_t d : dims)
    if (d < 0)
      return invalid(op, "negative size " + str(size));
  std::vector<int64_t> outShape = {N};
  outShape.insert(outShape.end(), dims.begin(), dims.end());
  outShape.push_back(r);
  if (Status s = checkOutputShape(op, Y, outShape); !s.isOk())
    return s;
  bool align = call.attrs.getInt("align_corners", 0) != 0;
  // The base coordinate of index i along a dim of n points, in [-1, 1].
  auto base = [&](int64_t i, int64_t n) {
    if (align)
      return n == 1 ? -1.0 : -1.0 + double(i) * (2.0 / double(n - 1));
    double step = 2.0 / double(n);
    return -1.0 + step / 2 + double(i) * step;
  };
  const float *theta = static_cast<const float *>(T->data);
  float *y = static_cast<float *>(Y.data);
  int64_t P = product(dims, 0, size_t(r));
  for (int64_t n = 0; n < N; ++n) {
    const float *th = theta + n * r * (r + 1);
    for (int64_t p = 0; p < P; ++p) {
      // Homogeneous point (x, y[, z], 1): x runs along the last dim.
      double pt[4];
      int64_t rest = p;
      for (int64_t i = r; i-- > 0;) {
        int64_t len = dims[size_t(i)];
        pt[r - 1 - i] = base(rest % len, len);
        rest /= len;
      }
      pt[r] = 1.0;
      float *out = y + (n * P + p) * r;
      for (int64_t k = 0; k < r; ++k) {
        double acc = 0;
        for (int64_t j = 0; j <= r; ++j)
          acc += double(th[k * (r + 1) + j]) * pt[j];
        out[k] = float(acc);
      }
    }
  }
  return Status::ok();
}

} // namespace ortc::cpu::kernels
