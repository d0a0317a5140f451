//===- NormalizationExtraKernels.cpp - RMS/Group/Lp/MVN norms, LRN, Hardmax ===//
//
// fp32 kernels that map X to a Y of X's shape. Statistics are accumulated in
// double and applied in float.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace ortc::cpu::kernels {

namespace {

/// X (input 0) present and float32; output 0 float32 of X's shape; outputs
/// after the first absent.
Status checkUnaryIO(const char *op, const KernelCall &call, const TensorView *&X) {
  X = dataInput(call, 0);
  if (Status s = checkFloat(op, X, "input X"); !s.isOk())
    return s;
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  for (size_t i = 1; i < call.numOutputs; ++i)
    if (call.outputs[i].data)
      return invalid(op, "output " + std::to_string(i) + " is not supported");
  if (Status s = checkFloat(op, &call.outputs[0], "output Y"); !s.isOk())
    return s;
  return checkOutputShape(op, call.outputs[0], X->shape);
}

/// A [C] float parameter, or an error naming it.
Status checkPerChannel(const char *op, const TensorView *t, const char *role, int64_t C) {
  if (Status s = checkFloat(op, t, role); !s.isOk())
    return s;
  if (t->shape != std::vector<int64_t>{C})
    return invalid(op, std::string(role) + " must be [" + std::to_string(C) + "], got " +
                           shapeToString(t->shape));
  return Status::ok();
}

} // namespace

//===----------------------------------------------------------------------===//
// RMSNormalization (opset 23)
//===----------------------------------------------------------------------===//

Status rmsNormalization(const KernelCall &call) {
  const char *op = "RMSNormalization";
  const TensorView *X;
  if (Status s = checkUnaryIO(op, call, X); !s.isOk())
    return s;
  const TensorView *scale = dataInput(call, 1);
  if (Status s = checkFloat(op, scale, "input scale"); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, -1, rank, axis); !s.isOk())
    return s;
  if (call.attrs.getInt("stash_type", 1) != 1)
    return invalid(op, "stash_type " + std::to_string(call.attrs.getInt("stash_type", 1)) +
                           " is not supported (only 1, float32)");
  std::vector<int64_t> norm(X->shape.begin() + axis, X->shape.end());
  // scale broadcasts (numpy, right-aligned) onto the normalized dims only.
  const std::vector<int64_t> &ss = scale->shape;
  bool fits = ss.size() <= norm.size();
  for (size_t i = 0; fits && i < ss.size(); ++i) {
    int64_t d = ss[ss.size() - 1 - i], t = norm[norm.size() - 1 - i];
    fits = d == 1 || d == t;
  }
  if (!fits)
    return invalid(op, "scale " + shapeToString(ss) + " does not broadcast to the normalized dims " +
                           shapeToString(norm));
  float epsilon = call.attrs.getFloat("epsilon", 1e-5f);
  int64_t outer = product(X->shape, 0, axis), n = product(norm, 0, norm.size());
  if (outer == 0 || n == 0)
    return Status::ok();
  const float *sc = static_cast<const float *>(scale->data);
  if (scale->numElements() != n) {
    float *buf;
    if (Status s = allocScratch(call, op, size_t(n), buf); !s.isOk())
      return s;
    std::vector<int64_t> strides = broadcastStrides(ss, norm.size());
    for (int64_t e = 0; e < n; ++e)
      buf[e] = sc[stridedOffset(e, norm.data(), strides.data(), norm.size())];
    sc = buf;
  }
  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(call.outputs[0].data);
  for (int64_t o = 0; o < outer; ++o) {
    const float *xr = x + o * n;
    float *yr = y + o * n;
    double sq = 0;
    for (int64_t i = 0; i < n; ++i)
      sq += double(xr[i]) * xr[i];
    float inv = float(1.0 / std::sqrt(sq / double(n) + double(epsilon)));
    for (int64_t i = 0; i < n; ++i)
      yr[i] = xr[i] * inv * sc[i];
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// GroupNormalization (opset 21: scale and bias per channel)
//===----------------------------------------------------------------------===//

Status groupNormalization(const KernelCall &call) {
  const char *op = "GroupNormalization";
  const TensorView *X;
  if (Status s = checkUnaryIO(op, call, X); !s.isOk())
    return s;
  if (X->shape.size() < 2)
    return invalid(op, "X must be [N, C, D1..Dn], got " + shapeToString(X->shape));
  int64_t N = X->shape[0], C = X->shape[1];
  if (Status s = checkPerChannel(op, dataInput(call, 1), "scale", C); !s.isOk())
    return s;
  if (Status s = checkPerChannel(op, dataInput(call, 2), "bias", C); !s.isOk())
    return s;
  int64_t G = call.attrs.getInt("num_groups", 0);
  if (G <= 0 || C % G != 0)
    return invalid(op, "num_groups " + std::to_string(G) + " must be positive and divide C = " +
                           std::to_string(C));
  if (call.attrs.getInt("stash_type", 1) != 1)
    return invalid(op, "stash_type " + std::to_string(call.attrs.getInt("stash_type", 1)) +
                           " is not supported (only 1, float32)");
  float epsilon = call.attrs.getFloat("epsilon", 1e-5f);
  int64_t inner = product(X->shape, 2, X->shape.size()), perGroup = C / G;
  int64_t groupSize = perGroup * inner;
  if (groupSize == 0)
    return Status::ok();
  const float *x = static_cast<const float *>(X->data);
  const float *sc = static_cast<const float *>(call.inputs[1].data);
  const float *bi = static_cast<const float *>(call.inputs[2].data);
  float *y = static_cast<float *>(call.outputs[0].data);
  for (int64_t ng = 0; ng < N * G; ++ng) {
    const float *xg = x + ng * groupSize;
    float *yg = y + ng * groupSize;
    double sum = 0;
    for (int64_t i = 0; i < groupSize; ++i)
      sum += xg[i];
    double mean = sum / double(groupSize), sq = 0;
    for (int64_t i = 0; i < groupSize; ++i)
      sq += (xg[i] - mean) * (xg[i] - mean);
    double inv = 1.0 / std::sqrt(sq / double(groupSize) + double(epsilon));
    for (int64_t k = 0; k < perGroup; ++k) {
      int64_t c = (ng % G) * perGroup + k;
      float a = float(sc[c] * inv), b = float(bi[c] - mean * sc[c] * inv);
      for (int64_t i = 0; i < inner; ++i)
        yg[k * inner + i] = xg[k * inner + i] * a + b;
    }
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// LpNormalization and Hardmax: along one axis
//===----------------------------------------------------------------------===//

Status lpNormalization(const KernelCall &call) {
  const char *op = "LpNormalization";
  const TensorView *X;
  if (Status s = checkUnaryIO(op, call, X); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, -1, rank, axis); !s.isOk())
    return s;
  int64_t p = call.attrs.getInt("p", 2);
  if (p != 1 && p != 2)
    return invalid(op, "p " + std::to_string(p) + " is not 1 or 2");
  int64_t outer = product(X->shape, 0, axis), n = X->shape[axis];
  int64_t inner = product(X->shape, axis + 1, rank);
  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(call.outputs[0].data);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      const float *xr = x + o * n * inner + j;
      float *yr = y + o * n * inner + j;
      double acc = 0;
      for (int64_t i = 0; i < n; ++i) {
        double v = xr[i * inner];
        acc += p == 1 ? std::fabs(v) : v * v;
      }
      double norm = p == 1 ? acc : std::sqrt(acc);
      // A zero norm gives 0 rather than 0/0.
      for (int64_t i = 0; i < n; ++i)
        yr[i * inner] = norm == 0 ? 0.f : float(xr[i * inner] / norm);
    }
  return Status::ok();
}

Status hardmax(const KernelCall &call) {
  const char *op = "Hardmax";
  const TensorView *X;
  if (Status s = checkUnaryIO(op, call, X); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, -1, rank, axis); !s.isOk())
    return s;
  int64_t outer = product(X->shape, 0, axis), n = X->shape[axis];
  int64_t inner = product(X->shape, axis + 1, rank);
  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(call.outputs[0].data);
  std::fill(y, y + outer * n * inner, 0.f);
  if (n == 0)
    return Status::ok();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      const float *xr = x + o * n * inner + j;
      // The first maximum; a NaN counts as the maximum (as numpy's argmax).
      int64_t best = 0;
      for (int64_t i = 1; i < n && !std::isnan(xr[best * inner]); ++i)
        if (std::isnan(xr[i * inner]) || xr[i * inner] > xr[best * inner])
          best = i;
      y[(o * n + best) * inner + j] = 1.f;
    }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// MeanVarianceNormalization
//===----------------------------------------------------------------------===//

Status meanVarianceNormalization(const KernelCall &call) {
  const char *op = "MeanVarianceNormalization";
  const TensorView *X;
  if (Status s = checkUnaryIO(op, call, X); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  std::vector<bool> reduced(rank, false);
  for (int64_t a : call.attrs.getInts("axes", {0, 2, 3}))
    if (Status s = claimAxis(op, a, reduced); !s.isOk())
      return s;
  // Each element's group: its index over the kept dims.
  std::vector<int64_t> keptStride(rank, 0);
  int64_t groups = 1;
  for (size_t i = rank; i-- > 0;)
    if (!reduced[i]) {
      keptStride[i] = groups;
      groups *= X->shape[i];
    }
  int64_t total = X->numElements();
  if (total == 0)
    return Status::ok();
  int64_t count = total / groups;
  double *stats;
  if (Status s = allocScratch(call, op, size_t(2 * groups), stats); !s.isOk())
    return s;
  double *sum = stats, *sq = stats + groups;
  std::fill(stats, stats + 2 * groups, 0.0);
  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(call.outputs[0].data);
  auto walk = [&](auto &&visit) {
    std::vector<int64_t> idx(rank, 0);
    int64_t g = 0;
    for (int64_t e = 0; e < total; ++e) {
      visit(e, g);
      for (size_t i = rank; i-- > 0;) {
        if (++idx[i] < X->shape[i]) {
          g += keptStride[i];
          break;
        }
        g -= keptStride[i] * (X->shape[i] - 1);
        idx[i] = 0;
      }
    }
  };
  walk([&](int64_t e, int64_t g) {
    sum[g] += x[e];
    sq[g] += double(x[e]) * x[e];
  });
  // As the ONNX function: (X - E[X]) / (sqrt(E[X^2] - E[X]^2) + 1e-9); the
  // variance is clamped at 0 against rounding.
  for (int64_t g = 0; g < groups; ++g) {
    double mean = sum[g] / double(count);
    double var = std::max(0.0, sq[g] / double(count) - mean * mean);
    sum[g] = mean;
    sq[g] = 1.0 / (std::sqrt(var) + 1e-9);
  }
  walk([&](int64_t e, int64_t g) { y[e] = float((x[e] - sum[g]) * sq[g]); });
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// LRN: across channels
//===----------------------------------------------------------------------===//

Status lrn(const KernelCall &call) {
  const char *op = "LRN";
  const TensorView *X;
  if (Status s = checkUnaryIO(op, call, X); !s.isOk())
    return s;
  if (X->shape.size() < 2)
    return invalid(op, "X must be [N, C, D1..Dn], got " + shapeToString(X->shape));
  int64_t size = call.attrs.getInt("size", 0);
  if (size < 1)
    return invalid(op, "size " + std::to_string(size) + " must be at least 1");
  double alpha = call.attrs.getFloat("alpha", 1e-4f);
  double beta = call.attrs.getFloat("beta", 0.75f);
  double bias = call.attrs.getFloat("bias", 1.f);
  int64_t N = X->shape[0], C = X->shape[1];
  int64_t inner = product(X->shape, 2, X->shape.size());
  int64_t before = (size - 1) / 2, after = size - 1 - before; // floor and ceil of (size-1)/2
  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(call.outputs[0].data);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      int64_t lo = std::max<int64_t>(0, c - before), hi = std::min<int64_t>(C - 1, c + after);
      for (int64_t i = 0; i < inner; ++i) {
        double sq = 0;
        for (int64_t k = lo; k <= hi; ++k) {
          double v = x[(n * C + k) * inner + i];
          sq += v * v;
        }
        int64_t e = (n * C + c) * inner + i;
        y[e] = float(x[e] / std::pow(bias + alpha / double(size) * sq, beta));
      }
    }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// BatchNormalization, training_mode 1 (opset 14+); batchNormalization
// (NormalizationKernels.cpp) hands such calls here
//===----------------------------------------------------------------------===//

Status batchNormalizationTraining(const KernelCall &call) {
  const char *op = "BatchNormalization";
  if (call.attrs.getInt("training_mode", 0) != 1)
    return invalid(op, "training_mode " + std::to_string(call.attrs.getInt("training_mode", 0)) +
                           " is not 0 or 1");
  const TensorView *X = dataInput(call, 0);
  if (Status s = checkFloat(op, X, "input X"); !s.isOk())
    return s;
  if (X->shape.size() < 2)
    return invalid(op, "X must be [N,C,...], got " + shapeToString(X->shape));
  int64_t N = X->shape[0], C = X->shape[1];
  int64_t inner = product(X->shape, 2, X->shape.size());
  const char *roles[4] = {"scale", "B", "input_mean", "input_var"};
  const float *p[4];
  for (int i = 0; i < 4; ++i) {
    const TensorView *t = dataInput(call, 1 + i);
    if (Status s = checkPerChannel(op, t, roles[i], C); !s.isOk())
      return s;
    p[i] = static_cast<const float *>(t->data);
  }
  // Outputs: Y, and optional running_mean and running_var ([C]).
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  for (size_t i = 3; i < call.numOutputs; ++i)
    if (call.outputs[i].data)
      return invalid(op, "output " + std::to_string(i) + " is not supported");
  if (Status s = checkFloat(op, &call.outputs[0], "output Y"); !s.isOk())
    return s;
  if (Status s = checkOutputShape(op, call.outputs[0], X->shape); !s.isOk())
    return s;
  float *running[2] = {nullptr, nullptr};
  for (size_t i = 1; i < call.numOutputs && i < 3; ++i) {
    const TensorView &o = call.outputs[i];
    if (!o.data)
      continue;
    if (Status s = checkPerChannel(op, &o, i == 1 ? "output running_mean" : "output running_var",
                                   C);
        !s.isOk())
      return s;
    running[i - 1] = static_cast<float *>(o.data);
  }
  float epsilon = call.attrs.getFloat("epsilon", 1e-5f);
  double momentum = call.attrs.getFloat("momentum", 0.9f);
  int64_t count = N * inner;
  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(call.outputs[0].data);
  for (int64_t c = 0; c < C; ++c) {
    // The batch's mean and (biased) variance over N and the spatial dims.
    double sum = 0, sq = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i)
        sum += x[(n * C + c) * inner + i];
    double mean = count ? sum / double(count) : 0.0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        double d = x[(n * C + c) * inner + i] - mean;
        sq += d * d;
      }
    double var = count ? sq / double(count) : 0.0;
    double a = p[0][c] / std::sqrt(var + double(epsilon)), b = p[1][c] - mean * a;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t e = (n * C + c) * inner + i;
        y[e] = float(x[e] * a + b);
      }
    if (running[0])
      running[0][c] = float(p[2][c] * momentum + mean * (1 - momentum));
    if (running[1])
      running[1][c] = float(p[3][c] * momentum + var * (1 - momentum));
  }
  return Status::ok();
}

} // namespace ortc::cpu::kernels
