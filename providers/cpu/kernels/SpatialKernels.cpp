//===- SpatialKernels.cpp - Resize, GridSample, ConvTranspose, LpPool, ... ===//
//
// Spatial library kernels that follow the ONNX reference implementation
// (onnx/reference/ops) closely: Resize in all three modes, GridSample,
// ConvTranspose, LpPool, RoiAlign, MaxUnpool, DeformConv. Interpolating
// kernels compute coordinates and weights in double, as the reference does;
// nearest Resize keeps the fp32 coordinates of onnxruntime (README.md).
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/SpatialKernels.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ortc::cpu::kernels {

namespace {

std::string str(const std::vector<int64_t> &v) { return shapeToString(v); }

/// Reads a 1-D int64 (or int32) tensor.
Status readInts(const char *op, const TensorView *t, const char *what,
                std::vector<int64_t> &out) {
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
        return invalid(op, "unsupported keep_aspect_ratio_policy '" + p.keepAspectRatioPolicy +
                               "'");
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
  int64_t start = ra.mode == "linear" ? int64_t(std::floor(-1 / s) + 1)
                                      : int64_t(std::floor(-2 / s) + 1);
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
    i = orig == float(int64_t(orig)) + 0.5f ? int64_t(std::floor(orig))
                                            : int64_t(std::round(orig));
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
  for (int64_t row = 0; row < total / inner; ++row) {
    int64_t off = 0;
    for (size_t i = 0; i + 1 < r; ++i)
      off += maps[i][idx[i]];
    const char *s = src + off * int64_t(elem);
    switch (elem) {
    case 4:
      for (int64_t j = 0; j < inner; ++j)
        std::memcpy(dst + j * 4, s + last[j] * 4, 4);
      break;
    default:
      for (int64_t j = 0; j < inner; ++j)
        std::memcpy(dst + j * int64_t(elem), s + last[j] * int64_t(elem), elem);
    }
    dst += inner * int64_t(elem);
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
    return invalid(op, "X and Y must have one known element type, got " +
                           elementTypeName(X->type) + " and " + elementTypeName(Y.type));
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
  if (Status s = checkOutputShape(op, Y, plan.outShape); !s.isOk())
    return s;
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
    interpolateAxis(cur, next, product(shape, 0, size_t(a)), in, product(shape, size_t(a) + 1, rank),
                    out, taps, ra.extrapolation);
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
    int64_t natural = s * (in - 1) + outPad[i] + (k - 1) * d + 1;
    int64_t pb = pads[i], pe = pads[i + r], out;
    if (pb < 0 || pe < 0)
      return invalid(op, "negative pads " + str(pads));
    if (same) {
      out = outputShape.empty() ? in * s : outputShape[i];
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
      out = natural - pb - pe;
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
  if (Status st = allocScratch(call, op, packedFloats + size_t(rows * inPlane), scratch); !st.isOk())
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

namespace ortc::cpu::kernels {
Status roiAlign(const KernelCall &call) { return invalid("RoiAlign", "not implemented"); }
Status maxUnpool(const KernelCall &call) { return invalid("MaxUnpool", "not implemented"); }
Status deformConv(const KernelCall &call) { return invalid("DeformConv", "not implemented"); }
} // namespace ortc::cpu::kernels
