//===- NormalizationKernels.cpp - softmax, norms and attention, fp32 ------===//

#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/ThreadPool.h"

#if defined(__x86_64__) || defined(__i386__)
#include "providers/cpu/kernels/VectorMath.h"
#endif

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ortc::cpu::kernels {

namespace {

/// Output 0 must be float32 with X's shape; further outputs must be absent.
Status checkSameShapeOutput(const char *op, const KernelCall &call, const TensorView &X,
                            size_t allowedOutputs = 1) {
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  for (size_t i = allowedOutputs; i < call.numOutputs; ++i)
    if (call.outputs[i].data)
      return invalid(op, "output " + std::to_string(i) + " is not supported");
  const TensorView &Y = call.outputs[0];
  if (Status s = checkFloat(op, &Y, "output"); !s.isOk())
    return s;
  return checkOutputShape(op, Y, X.shape);
}

/// Input 0 (X) float32 and output 0 like it: the first checks of the kernels
/// that map X to a Y of its shape. `role` names X in errors.
Status checkElementwiseIO(const char *op, const KernelCall &call, const TensorView *&X,
                          const char *role = "input X", size_t allowedOutputs = 1) {
  X = call.input(0);
  if (Status s = checkFloat(op, X, role); !s.isOk())
    return s;
  return checkSameShapeOutput(op, call, *X, allowedOutputs);
}

/// Mean and (biased) variance of a contiguous run, in two passes so that a
/// large mean does not cancel the variance away.
inline void moments(const float *x, int64_t n, float &mean, float &var) {
  float sum = 0.f;
  for (int64_t i = 0; i < n; ++i)
    sum += x[i];
  mean = sum / float(n);
  float sq = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    float c = x[i] - mean;
    sq += c * c;
  }
  var = sq / float(n);
}

/// y = x * a + b over one contiguous run: a channel with its statistics folded.
inline void scaleShift(const float *x, float *y, int64_t n, float a, float b) {
  for (int64_t i = 0; i < n; ++i)
    y[i] = x[i] * a + b;
}

//===----------------------------------------------------------------------===//
// Softmax / LogSoftmax
//===----------------------------------------------------------------------===//

/// Softmax's terms below this x - max are 0 rather than denormal: e^x < FLT_MIN
/// * n, over a sum <= n, would give a denormal probability, which is below
/// any tolerance of a value that the row sums to 1, and costs a microcode
/// assist per use on CPUs without fast denormals (most Intel ones: the
/// attention MatMul after a masked softmax slowed 10x). n is rounded up to
/// a power of two, so that a row pays a bit count, not two logs.
inline float softmaxCutoff(int64_t n) {
  constexpr float kLogFloatMin = -87.3365447505531f; // ln(FLT_MIN)
  constexpr float kLn2 = 0.693147180559945f;
  int bits = n <= 1 ? 0 : 64 - __builtin_clzll(uint64_t(n - 1)); // ceil(log2(n))
  return kLogFloatMin + kLn2 * float(bits);
}

/// One contiguous row: y = softmax(x) or log-softmax(x), max-shifted.
/// Terms are cut off as in a row of `cutoffN` (>= n) elements: attention
/// passes its whole row's length where it leaves out masked keys, so that
/// the kept terms come out as they would with those keys.
void softmaxRow(const float *x, float *y, int64_t n, bool log, int64_t cutoffN) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t i = 0; i < n; ++i)
    m = std::max(m, x[i]);
  float sum = 0.f;
  if (log) {
    for (int64_t i = 0; i < n; ++i)
      sum += std::exp(x[i] - m);
    float shift = m + std::log(sum);
    for (int64_t i = 0; i < n; ++i)
      y[i] = x[i] - shift;
    return;
  }
  const float cutoff = softmaxCutoff(cutoffN);
  for (int64_t i = 0; i < n; ++i) {
    float d = x[i] - m;
    y[i] = d < cutoff ? 0.f : std::exp(d);
    sum += y[i];
  }
  float inv = 1.f / sum;
  for (int64_t i = 0; i < n; ++i)
    y[i] *= inv;
}

#if defined(__x86_64__) || defined(__i386__)
/// e^d, or 0 where d < cutoff (NaN kept: the compare is unordered-true).
__attribute__((target("avx2,fma"))) inline __m256 softmaxTermAvx2(__m256 d, __m256 cutoff) {
  return _mm256_and_ps(expAvx2(d), _mm256_cmp_ps(d, cutoff, _CMP_NLT_UQ));
}

/// softmaxRow in AVX2: the max, exp(x - max) with its sum, and the scaling
/// (or the log shift) 8 lanes at a time, masked at the row's end; the sums
/// are folded lane by lane, so they differ from the serial loop's in ulps.
/// Terms below softmaxCutoff are 0 as there.
__attribute__((target("avx2,fma"))) void softmaxRowAvx2(const float *x, float *y, int64_t n,
                                                        bool log, int64_t cutoffN) {
  const __m256i lanes = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i tail = _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n % 8)), lanes);
  const int64_t full = n / 8 * 8;
  const __m256 negInf = _mm256_set1_ps(-std::numeric_limits<float>::infinity());
  __m256 mv = negInf;
  for (int64_t i = 0; i < full; i += 8)
    mv = _mm256_max_ps(mv, _mm256_loadu_ps(x + i));
  if (full < n)
    mv = _mm256_max_ps(mv, _mm256_blendv_ps(negInf, _mm256_maskload_ps(x + full, tail),
                                            _mm256_castsi256_ps(tail)));
  alignas(32) float lanesOut[8];
  _mm256_store_ps(lanesOut, mv);
  // A NaN the max drops still makes exp(x - m), the sum and so the whole row
  // NaN, as in the serial loop.
  float m = lanesOut[0];
  for (int i = 1; i < 8; ++i)
    m = std::max(m, lanesOut[i]);
  const __m256 shift = _mm256_set1_ps(m);
  const __m256 cutoff =
      _mm256_set1_ps(log ? -std::numeric_limits<float>::infinity() : softmaxCutoff(cutoffN));
  __m256 sv = _mm256_setzero_ps();
  for (int64_t i = 0; i < full; i += 8) {
    __m256 e = softmaxTermAvx2(_mm256_sub_ps(_mm256_loadu_ps(x + i), shift), cutoff);
    if (!log)
      _mm256_storeu_ps(y + i, e);
    sv = _mm256_add_ps(sv, e);
  }
  if (full < n) {
    __m256 e = _mm256_and_ps(softmaxTermAvx2(_mm256_sub_ps(_mm256_maskload_ps(x + full, tail), shift), cutoff),
                             _mm256_castsi256_ps(tail));
    if (!log)
      _mm256_maskstore_ps(y + full, tail, e);
    sv = _mm256_add_ps(sv, e);
  }
  float sum = sumLanesAvx2(sv);
  if (log) {
    const __m256 total = _mm256_set1_ps(m + std::log(sum));
    for (int64_t i = 0; i < full; i += 8)
      _mm256_storeu_ps(y + i, _mm256_sub_ps(_mm256_loadu_ps(x + i), total));
    for (int64_t i = full; i < n; ++i)
      y[i] = x[i] - (m + std::log(sum));
    return;
  }
  const __m256 inv = _mm256_set1_ps(1.f / sum);
  for (int64_t i = 0; i < full; i += 8)
    _mm256_storeu_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(y + i), inv));
  for (int64_t i = full; i < n; ++i)
    y[i] *= 1.f / sum;
}
#endif

// GCC 12's _mm512_mask_max_ps and _mm512_reduce_*_ps pass undefined vectors
// as unused merge sources, which -W(maybe-)uninitialized reports.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
/// One attention row's probabilities in place, in AVX-512: the scores plus
/// the mask row (unit stride, or null) in the max's pass, the exp terms
/// (0 below softmaxCutoff, as softmaxRow) and their sum, then the scaling
/// with NaNs set to 0 when `nanToZero` (a fully masked row). One pass each
/// where the portable path takes five; sums fold 16 lanes wide. `cutoffN`
/// as softmaxRow's.
__attribute__((target("avx512f"))) void attentionRowAvx512(float *row, const float *mask, int64_t n,
                                                           bool nanToZero, int64_t cutoffN) {
  const int64_t full = n / 16 * 16;
  const __mmask16 tail = static_cast<__mmask16>((1u << (n % 16)) - 1);
  __m512 mv = _mm512_set1_ps(-std::numeric_limits<float>::infinity());
  for (int64_t i = 0; i < full; i += 16) {
    __m512 v = _mm512_loadu_ps(row + i);
    if (mask) {
      v = _mm512_add_ps(v, _mm512_loadu_ps(mask + i));
      _mm512_storeu_ps(row + i, v);
    }
    mv = _mm512_max_ps(mv, v);
  }
  if (tail) {
    __m512 v = _mm512_maskz_loadu_ps(tail, row + full);
    if (mask) {
      v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(tail, mask + full));
      _mm512_mask_storeu_ps(row + full, tail, v);
    }
    mv = _mm512_mask_max_ps(mv, tail, mv, v);
  }
  const __m512 shift = _mm512_set1_ps(_mm512_reduce_max_ps(mv));
  const __m512 cutoff = _mm512_set1_ps(softmaxCutoff(cutoffN));
  __m512 sv = _mm512_setzero_ps();
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 lanes = i < full ? __mmask16(0xFFFF) : tail;
    __m512 d = _mm512_sub_ps(_mm512_maskz_loadu_ps(lanes, row + i), shift);
    // NaN kept: the compare is unordered-true.
    __m512 e =
        _mm512_maskz_mov_ps(lanes & _mm512_cmp_ps_mask(d, cutoff, _CMP_NLT_UQ), expAvx512(d));
    _mm512_mask_storeu_ps(row + i, lanes, e);
    sv = _mm512_add_ps(sv, e);
  }
  const __m512 inv = _mm512_set1_ps(1.f / _mm512_reduce_add_ps(sv));
  for (int64_t i = 0; i < n; i += 16) {
    __mmask16 lanes = i < full ? __mmask16(0xFFFF) : tail;
    __m512 p = _mm512_mul_ps(_mm512_maskz_loadu_ps(lanes, row + i), inv);
    if (nanToZero)
      p = _mm512_maskz_mov_ps(_mm512_cmp_ps_mask(p, p, _CMP_ORD_Q), p);
    _mm512_mask_storeu_ps(row + i, lanes, p);
  }
}
#pragma GCC diagnostic pop

/// softmaxRow for the library kernels' vector variant (picked once a call).
using SoftmaxRowFn = void (*)(const float *, float *, int64_t, bool, int64_t);
SoftmaxRowFn bestSoftmaxRow() {
#if defined(__x86_64__) || defined(__i386__)
  if (kernelIsa() != KernelIsa::Generic)
    return softmaxRowAvx2;
#endif
  return softmaxRow;
}

Status softmaxImpl(const KernelCall &call, const char *op, bool log) {
  const TensorView *X;
  if (Status s = checkElementwiseIO(op, call, X, "input"); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  if (rank == 0)
    return invalid(op, "input must have rank >= 1");
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, -1, rank, axis); !s.isOk())
    return s;
  int64_t outer = product(X->shape, 0, axis), n = X->shape[axis];
  int64_t inner = product(X->shape, axis + 1, rank);
  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(call.outputs[0].data);
  if (outer * n * inner == 0)
    return Status::ok();
  if (inner == 1) {
    // Rows shared out in chunks of at least ~16K elements.
    int64_t perTask = std::max<int64_t>(1, (int64_t(1) << 14) / n);
    int64_t tasks = (outer + perTask - 1) / perTask;
    SoftmaxRowFn row = bestSoftmaxRow();
    parallelFor(call.pool, tasks, [&](int64_t t) {
      for (int64_t o = t * perTask; o < std::min(outer, (t + 1) * perTask); ++o)
        row(x + o * n, y + o * n, n, log, n);
    });
    return Status::ok();
  }
  // Strided axis: run down the axis for a whole row of `inner` lanes at once.
  float *m;
  if (Status s = allocScratch(call, op, size_t(2 * inner), m); !s.isOk())
    return s;
  float *sum = m + inner;
  for (int64_t o = 0; o < outer; ++o) {
    const float *xb = x + o * n * inner;
    float *yb = y + o * n * inner;
    std::fill(m, m + inner, -std::numeric_limits<float>::infinity());
    std::fill(sum, sum + inner, 0.f);
    for (int64_t a = 0; a < n; ++a)
      for (int64_t i = 0; i < inner; ++i)
        m[i] = std::max(m[i], xb[a * inner + i]);
    for (int64_t a = 0; a < n; ++a)
      for (int64_t i = 0; i < inner; ++i) {
        float e = std::exp(xb[a * inner + i] - m[i]);
        if (!log)
          yb[a * inner + i] = e;
        sum[i] += e;
      }
    if (log) {
      for (int64_t i = 0; i < inner; ++i)
        m[i] += std::log(sum[i]);
      for (int64_t a = 0; a < n; ++a)
        for (int64_t i = 0; i < inner; ++i)
          yb[a * inner + i] = xb[a * inner + i] - m[i];
    } else {
      for (int64_t i = 0; i < inner; ++i)
        sum[i] = 1.f / sum[i];
      for (int64_t a = 0; a < n; ++a)
        for (int64_t i = 0; i < inner; ++i)
          yb[a * inner + i] *= sum[i];
    }
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Per-channel parameters
//===----------------------------------------------------------------------===//

/// A [C] float parameter, or an error naming it.
Status checkChannelParam(const char *op, const TensorView *t, const char *role, int64_t C) {
  if (Status s = checkFloat(op, t, role); !s.isOk())
    return s;
  if (t->shape != std::vector<int64_t>{C})
    return invalid(op, std::string(role) + " must be [" + std::to_string(C) + "], got " +
                           shapeToString(t->shape));
  return Status::ok();
}

/// True if `shape` broadcasts one way onto `target` (numpy, right-aligned);
/// leading 1s beyond target's rank are allowed.
bool broadcastsTo(const std::vector<int64_t> &shape, const std::vector<int64_t> &target) {
  for (size_t i = 0; i < shape.size(); ++i) {
    size_t back = shape.size() - 1 - i;
    int64_t d = shape[i];
    if (back >= target.size()) {
      if (d != 1)
        return false;
      continue;
    }
    int64_t t = target[target.size() - 1 - back];
    if (d != 1 && d != t)
      return false;
  }
  return true;
}

/// Expands `src` (broadcastable to `target`) into a dense row of
/// prod(target) floats.
void broadcastInto(const float *src, const std::vector<int64_t> &shape,
                   const std::vector<int64_t> &target, float *dst) {
  size_t r = target.size();
  std::vector<int64_t> strides = broadcastStrides(shape, r);
  int64_t total = product(target, 0, r);
  for (int64_t e = 0; e < total; ++e)
    dst[e] = src[stridedOffset(e, target.data(), strides.data(), r)];
}

} // namespace

Status softmax(const KernelCall &call) { return softmaxImpl(call, "Softmax", false); }
Status logSoftmax(const KernelCall &call) { return softmaxImpl(call, "LogSoftmax", true); }

//===----------------------------------------------------------------------===//
// LayerNormalization
//===----------------------------------------------------------------------===//

namespace {

/// One row of LayerNormalization: y = (x - mean) * inv * scale + bias (scale
/// and bias spanning the row, or null), with its mean and inv = 1/sqrt(var +
/// epsilon).
/// Elements [from, n) of a row normalized by its mean and inv.
void normalizeRow(const float *x, float *y, int64_t from, int64_t n, const float *scale,
                  const float *bias, float mean, float inv) {
  for (int64_t i = from; i < n; ++i) {
    float v = (x[i] - mean) * inv;
    if (scale)
      v *= scale[i];
    if (bias)
      v += bias[i];
    y[i] = v;
  }
}

void layerNormRow(const float *x, float *y, int64_t n, const float *scale, const float *bias,
                  float epsilon, float &mean, float &inv) {
  float var;
  moments(x, n, mean, var);
  inv = 1.f / std::sqrt(var + epsilon);
  normalizeRow(x, y, 0, n, scale, bias, mean, inv);
}

#if defined(__x86_64__) || defined(__i386__)
/// The same in AVX2: the two moment passes and the normalization 8 lanes at
/// a time (the sums fold lane by lane: ulps from the serial loop's), the
/// row's last lanes the serial way.
__attribute__((target("avx2,fma"))) void layerNormRowAvx2(const float *x, float *y, int64_t n,
                                                          const float *scale, const float *bias,
                                                          float epsilon, float &mean, float &inv) {
  const int64_t full = n / 8 * 8;
  __m256 acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < full; i += 8)
    acc = _mm256_add_ps(acc, _mm256_loadu_ps(x + i));
  float sum = sumLanesAvx2(acc);
  for (int64_t i = full; i < n; ++i)
    sum += x[i];
  mean = sum / float(n);
  const __m256 mv = _mm256_set1_ps(mean);
  acc = _mm256_setzero_ps();
  for (int64_t i = 0; i < full; i += 8) {
    __m256 c = _mm256_sub_ps(_mm256_loadu_ps(x + i), mv);
    acc = _mm256_fmadd_ps(c, c, acc);
  }
  float sq = sumLanesAvx2(acc);
  for (int64_t i = full; i < n; ++i)
    sq += (x[i] - mean) * (x[i] - mean);
  inv = 1.f / std::sqrt(sq / float(n) + epsilon);
  const __m256 iv = _mm256_set1_ps(inv);
  for (int64_t i = 0; i < full; i += 8) {
    __m256 v = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(x + i), mv), iv);
    if (scale)
      v = _mm256_mul_ps(v, _mm256_loadu_ps(scale + i));
    if (bias)
      v = _mm256_add_ps(v, _mm256_loadu_ps(bias + i));
    _mm256_storeu_ps(y + i, v);
  }
  normalizeRow(x, y, full, n, scale, bias, mean, inv);
}
#endif

/// layerNormRow for the library kernels' vector variant (picked once a call).
using LayerNormRowFn = void (*)(const float *, float *, int64_t, const float *, const float *,
                                float, float &, float &);
LayerNormRowFn bestLayerNormRow() {
#if defined(__x86_64__) || defined(__i386__)
  if (kernelIsa() != KernelIsa::Generic)
    return layerNormRowAvx2;
#endif
  return layerNormRow;
}

} // namespace

Status layerNormalization(const KernelCall &call) {
  const char *op = "LayerNormalization";
  const TensorView *X, *scale = call.input(1), *bias = call.input(2);
  if (Status s = checkElementwiseIO(op, call, X, "input X", 3); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, -1, rank, axis); !s.isOk())
    return s;
  float epsilon = call.attrs.getFloat("epsilon", 1e-5f);
  std::vector<int64_t> normShape(X->shape.begin() + axis, X->shape.end());
  int64_t outer = product(X->shape, 0, axis), n = product(X->shape, axis, rank);
  for (const TensorView *p : {scale, bias}) {
    if (!p)
      continue;
    if (Status s = checkFloat(op, p, p == scale ? "scale" : "bias"); !s.isOk())
      return s;
    if (!broadcastsTo(p->shape, normShape))
      return invalid(op, std::string(p == scale ? "scale " : "bias ") + shapeToString(p->shape) +
                             " does not broadcast to " + shapeToString(normShape));
  }
  // Optional Mean and InvStdDev: [d0 .. d(axis-1), 1, ..., 1].
  std::vector<int64_t> statShape(X->shape.begin(), X->shape.begin() + axis);
  statShape.resize(rank, 1);
  float *stats[2] = {nullptr, nullptr};
  for (size_t i = 1; i < call.numOutputs && i < 3; ++i) {
    const TensorView &o = call.outputs[i];
    if (!o.data)
      continue;
    if (Status s = checkFloat(op, &o, i == 1 ? "output Mean" : "output InvStdDev"); !s.isOk())
      return s;
    if (o.shape != statShape)
      return invalid(op, "output " + std::to_string(i) + " shape " + shapeToString(o.shape) +
                             " should be " + shapeToString(statShape));
    stats[i - 1] = static_cast<float *>(o.data);
  }
  if (outer == 0 || n == 0)
    return Status::ok();

  // Parameters that do not already span the normalized dims are expanded once.
  const float *sc = scale ? static_cast<const float *>(scale->data) : nullptr;
  const float *bi = bias ? static_cast<const float *>(bias->data) : nullptr;
  bool expandScale = scale && scale->numElements() != n;
  bool expandBias = bias && bias->numElements() != n;
  if (expandScale || expandBias) {
    float *buf;
    if (Status s = allocScratch(call, op, size_t(2 * n), buf); !s.isOk())
      return s;
    if (expandScale) {
      broadcastInto(sc, scale->shape, normShape, buf);
      sc = buf;
    }
    if (expandBias) {
      broadcastInto(bi, bias->shape, normShape, buf + n);
      bi = buf + n;
    }
  }

  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(call.outputs[0].data);
  // Rows shared out in chunks of at least ~16K elements.
  int64_t perTask = std::max<int64_t>(1, (int64_t(1) << 14) / n);
  LayerNormRowFn row = bestLayerNormRow();
  parallelFor(call.pool, (outer + perTask - 1) / perTask, [&](int64_t t) {
    for (int64_t o = t * perTask; o < std::min(outer, (t + 1) * perTask); ++o) {
      float mean, inv;
      row(x + o * n, y + o * n, n, sc, bi, epsilon, mean, inv);
      if (stats[0])
        stats[0][o] = mean;
      if (stats[1])
        stats[1][o] = inv;
    }
  });
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// BatchNormalization (inference) and InstanceNormalization
//===----------------------------------------------------------------------===//

Status batchNormalizationTraining(const KernelCall &call);

Status batchNormalization(const KernelCall &call) {
  const char *op = "BatchNormalization";
  const TensorView *X = call.input(0);
  if (Status s = checkFloat(op, X, "input X"); !s.isOk())
    return s;
  if (call.attrs.getInt("training_mode", 0) != 0)
    return batchNormalizationTraining(call); // NormalizationExtraKernels.cpp
  if (Status s = checkSameShapeOutput(op, call, *X); !s.isOk())
    return s;
  if (X->shape.size() < 2)
    return invalid(op, "X must be [N,C,...], got " + shapeToString(X->shape));
  int64_t N = X->shape[0], C = X->shape[1];
  const char *roles[4] = {"scale", "B", "input_mean", "input_var"};
  const float *p[4];
  for (int i = 0; i < 4; ++i) {
    const TensorView *t = call.input(1 + i);
    if (Status s = checkChannelParam(op, t, roles[i], C); !s.isOk())
      return s;
    p[i] = static_cast<const float *>(t->data);
  }
  float epsilon = call.attrs.getFloat("epsilon", 1e-5f);
  int64_t inner = product(X->shape, 2, X->shape.size());
  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(call.outputs[0].data);
  for (int64_t c = 0; c < C; ++c) {
    // The statistics are folded per channel.
    float a = p[0][c] / std::sqrt(p[3][c] + epsilon);
    float b = p[1][c] - p[2][c] * a;
    for (int64_t n = 0; n < N; ++n)
      scaleShift(x + (n * C + c) * inner, y + (n * C + c) * inner, inner, a, b);
  }
  return Status::ok();
}

Status instanceNormalization(const KernelCall &call) {
  const char *op = "InstanceNormalization";
  const TensorView *X;
  if (Status s = checkElementwiseIO(op, call, X); !s.isOk())
    return s;
  if (X->shape.size() < 3)
    return invalid(op, "X must be [N,C,D1..Dn], got " + shapeToString(X->shape));
  int64_t N = X->shape[0], C = X->shape[1];
  const TensorView *scale = call.input(1), *bias = call.input(2);
  if (Status s = checkChannelParam(op, scale, "scale", C); !s.isOk())
    return s;
  if (Status s = checkChannelParam(op, bias, "B", C); !s.isOk())
    return s;
  float epsilon = call.attrs.getFloat("epsilon", 1e-5f);
  int64_t inner = product(X->shape, 2, X->shape.size());
  if (inner == 0)
    return Status::ok();
  const float *x = static_cast<const float *>(X->data);
  const float *sc = static_cast<const float *>(scale->data);
  const float *bi = static_cast<const float *>(bias->data);
  float *y = static_cast<float *>(call.outputs[0].data);
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) {
      const float *xp = x + (n * C + c) * inner;
      float *yp = y + (n * C + c) * inner;
      float mean, var;
      moments(xp, inner, mean, var);
      float a = sc[c] / std::sqrt(var + epsilon);
      scaleShift(xp, yp, inner, a, bi[c] - mean * a);
    }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Attention
//===----------------------------------------------------------------------===//

namespace {
// A mask at or below kMaskedOut drops its key (causal and padding masks
// write -inf or float's lowest), once a key of the row is kept at or above
// kKeptFloor: a dropped key's term exp(score + mask - max) is then exactly
// 0 for any score under 1e29 in magnitude, so the products can stop before
// the row's trailing dropped keys and give the same probabilities.
constexpr float kMaskedOut = -1e30f;
constexpr float kKeptFloor = -1e20f;
// Query rows per chunk where chunks stop at their last needed key: a causal
// mask's chunks of 32 rows skip all but 1/16 of the dropped half at 512 keys.
constexpr int64_t kTrimmedChunkRows = 32;

/// The keys a query row with `mask` (n floats, unit stride) needs: up to its
/// last one above kMaskedOut, when a key before it reaches kKeptFloor; else
/// all n (a row that drops every key keeps its NaNs or even weights).
int64_t keysNeeded(const float *mask, int64_t n) {
  int64_t last = n;
  while (last > 0 && mask[last - 1] <= kMaskedOut)
    --last;
  if (last < n)
    for (int64_t j = 0; j < last; ++j)
      if (mask[j] >= kKeptFloor)
        return last;
  return n;
}
} // namespace

Status attention(const KernelCall &call) {
  const char *op = "Attention";
  const TensorView *Q = call.input(0), *K = call.input(1), *V = call.input(2),
                   *mask = call.input(3);
  if (Status s = checkFloats(op, {{Q, "q"}, {K, "k"}, {V, "v"}}); !s.isOk())
    return s;
  if (Status s = checkOptionalFloat(op, mask, "mask"); !s.isOk())
    return s;
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &O = call.outputs[0];
  if (Status s = checkFloat(op, &O, "output"); !s.isOk())
    return s;
  size_t rank = Q->shape.size();
  if (rank < 2 || K->shape.size() != rank || V->shape.size() != rank)
    return invalid(op, "q, k, v must have one rank >= 2, got " + shapeToString(Q->shape) + ", " +
                           shapeToString(K->shape) + ", " + shapeToString(V->shape));
  // sequence_first: q, k, v and the output are [B, S, H, D], each head's
  // rows H * D floats apart; `qs`, `ks`, `vs` are their [B, H, S, D] shapes.
  bool sequenceFirst = call.attrs.getInt("sequence_first", 0) != 0;
  if (sequenceFirst && rank != 4)
    return invalid(op,
                   "sequence_first needs q, k, v [B, S, H, D], got rank " + std::to_string(rank));
  auto headsFirst = [&](const TensorView *t) {
    std::vector<int64_t> shape = t->shape;
    if (sequenceFirst)
      std::swap(shape[1], shape[2]);
    return shape;
  };
  std::vector<int64_t> qs = headsFirst(Q), ks = headsFirst(K), vs = headsFirst(V);
  size_t lead = rank - 2;
  int64_t batch = 1;
  for (size_t i = 0; i < lead; ++i) {
    if (ks[i] != qs[i] || vs[i] != qs[i])
      return invalid(op, "leading dims of q, k, v differ: " + shapeToString(Q->shape) + ", " +
                             shapeToString(K->shape) + ", " + shapeToString(V->shape));
    batch *= qs[i];
  }
  int64_t Sq = qs[lead], D = qs[lead + 1];
  int64_t Sk = ks[lead], Dv = vs[lead + 1];
  if (ks[lead + 1] != D || vs[lead] != Sk)
    return invalid(op, "q " + shapeToString(Q->shape) + ", k " + shapeToString(K->shape) + ", v " +
                           shapeToString(V->shape) + " do not fit together");
  std::vector<int64_t> expect(qs.begin(), qs.begin() + lead);
  expect.push_back(Sq);
  expect.push_back(Dv);
  if (sequenceFirst)
    std::swap(expect[1], expect[2]);
  if (Status s = checkOutputShape(op, O, expect); !s.isOk())
    return s;
  // Where head b's rows start in a tensor of `S` rows of `width` floats,
  // and how far apart they are.
  int64_t heads = sequenceFirst ? qs[1] : 1;
  auto headStart = [&](int64_t b, int64_t S, int64_t width) {
    return sequenceFirst ? (b / heads * S * heads + b % heads) * width : b * S * width;
  };
  // Row strides: q's and k's rows hold D floats, v's and the output's Dv.
  int64_t ldD = heads * D, ldDv = heads * Dv;
  float scale = call.attrs.getFloat("scale", 1.f / std::sqrt(float(std::max<int64_t>(D, 1))));

  // Mask strides over the scores' [lead..., Sq, Sk], right-aligned, 0 where
  // the mask broadcasts.
  std::vector<int64_t> scoreShape(qs.begin(), qs.begin() + lead);
  scoreShape.push_back(Sq);
  scoreShape.push_back(Sk);
  std::vector<int64_t> maskStride(rank, 0);
  if (mask) {
    if (mask->shape.size() > rank || !broadcastsTo(mask->shape, scoreShape))
      return invalid(op, "mask " + shapeToString(mask->shape) + " does not broadcast to " +
                             shapeToString(scoreShape));
    maskStride = broadcastStrides(mask->shape, rank);
  }

  bool nanToZero = call.attrs.getInt("nan_to_zero", 0) != 0;
  float *o = static_cast<float *>(O.data);
  if (batch == 0 || Sq == 0 || Dv == 0)
    return Status::ok();
  if (Sk == 0) {
    std::fill(o, o + batch * Sq * Dv, 0.f);
    return Status::ok();
  }
  // Work units: a batch entry (a head), or a share of its query rows when
  // there are fewer heads than threads. Each task packs k and v once per
  // head it meets, into buffers of its own.
  int64_t threads = call.pool ? call.pool->threads() : 1;
  int64_t qSplit = batch >= threads ? 1 : std::min<int64_t>(Sq, (threads + batch - 1) / batch);
  int64_t units = batch * qSplit;
  int64_t tasks = std::min(threads, units);
  // Query rows per chunk: the scores chunk stays around 1 MiB.
  int64_t rows = std::max<int64_t>(1, std::min<int64_t>(Sq, (int64_t(1) << 18) / Sk));
  size_t kSize = packedGemmBSize(D, Sk), vSize = packedGemmBSize(Sk, Dv);
  // q's and the probabilities' rows are read in place where the GEMM can
  // (sgemmRowsOfTaps, one tap): no packing of A per chunk.
  bool inPlace = sgemmRowsOfTapsAvailable();
  // With a mask whose rows are contiguous, each query row's needed keys
  // (keysNeeded) are found once per mask block a task meets; chunks then
  // stop at their rows' last needed key.
  bool trimKeys = mask && maskStride[rank - 1] == 1;
  // A task's slot: packed k and v, a chunk's scores, then (8-byte aligned)
  // each query row's needed keys.
  size_t keysAt = (kSize + vSize + size_t(rows * Sk) + 1) / 2 * 2;
  size_t slot = (keysAt + (trimKeys ? 2 * size_t(Sq) : 0) + 15) / 16 * 16;
  size_t offsetsAt = slot * size_t(tasks);
  float *buf;
  // Row offsets (int64) of q's rows and of the probabilities' rows.
  size_t offsetsFloats = inPlace ? size_t(4 * rows) : 0;
  if (Status s = allocScratch(call, op, offsetsAt + offsetsFloats, buf); !s.isOk())
    return s;
  int64_t *qRows = reinterpret_cast<int64_t *>(buf + offsetsAt), *pRows = qRows + rows;
  for (int64_t r = 0; inPlace && r < rows; ++r) {
    qRows[r] = r * ldD;
    pRows[r] = r * Sk;
  }
  const int64_t firstTap = 0;
  const float *q = static_cast<const float *>(Q->data);
  const float *k = static_cast<const float *>(K->data);
  const float *v = static_cast<const float *>(V->data);
  const float *m = mask ? static_cast<const float *>(mask->data) : nullptr;
  SoftmaxRowFn softmax = bestSoftmaxRow();
  bool avx512 = kernelIsa() == KernelIsa::Avx512;

  parallelFor(call.pool, tasks, [&](int64_t t) {
    float *packedK = buf + size_t(t) * slot, *packedV = packedK + kSize, *scores = packedV + vSize;
    int64_t *keysOfRow = reinterpret_cast<int64_t *>(packedK + keysAt);
    int64_t packed = -1; // the head whose k and v are packed
    int64_t keysFor = -1; // the mask offset keysOfRow is for
    bool trimmed = false; // whether some row of it needs fewer than Sk keys
    for (int64_t u = t * units / tasks; u < (t + 1) * units / tasks; ++u) {
      int64_t b = u / qSplit, part = u % qSplit;
      if (b != packed) {
        // scores = q k^T * scale: k packed transposed with the scale folded in.
        if (D > 0)
          packGemmB(k + headStart(b, Sk, D), ldD, true, D, Sk, scale, packedK);
        packGemmB(v + headStart(b, Sk, Dv), ldDv, false, Sk, Dv, 1.f, packedV);
        packed = b;
      }
      int64_t maskOff = stridedOffset(b, qs.data(), maskStride.data(), lead);
      if (trimKeys && maskOff != keysFor) {
        trimmed = false;
        for (int64_t r = 0; r < Sq; ++r) {
          keysOfRow[r] = keysNeeded(m + maskOff + r * maskStride[rank - 2], Sk);
          trimmed |= keysOfRow[r] < Sk;
        }
        keysFor = maskOff;
      }
      const float *qb = q + headStart(b, Sq, D);
      float *ob = o + headStart(b, Sq, Dv);
      for (int64_t r0 = part * Sq / qSplit, end = (part + 1) * Sq / qSplit, nr; r0 < end;
           r0 += nr) {
        nr = std::min(trimmed ? std::min(rows, kTrimmedChunkRows) : rows, end - r0);
        // The keys this chunk needs: scores past them are neither computed
        // nor read.
        int64_t keys = trimmed ? *std::max_element(keysOfRow + r0, keysOfRow + r0 + nr) : Sk;
        if (inPlace)
          sgemmRowsOfTaps(nr, keys, D, 1, qb + r0 * ldD, qRows, &firstTap, packedK, scores, Sk,
                          false, nullptr);
        else
          sgemmPacked(nr, keys, D, qb + r0 * ldD, ldD, false, packedK, scores, Sk, false);
        for (int64_t r = 0; r < nr; ++r) {
          float *row = scores + r * Sk;
          const float *mr = m ? m + maskOff + (r0 + r) * maskStride[rank - 2] : nullptr;
          int64_t ms = maskStride[rank - 1];
#if defined(__x86_64__) || defined(__i386__)
          if (avx512 && (!mr || ms == 1)) {
            attentionRowAvx512(row, mr, keys, nanToZero, Sk);
            continue;
          }
#endif
          if (mr)
            for (int64_t j = 0; j < keys; ++j)
              row[j] += mr[j * ms];
          softmax(row, row, keys, false, Sk);
          if (nanToZero)
            for (int64_t j = 0; j < keys; ++j)
              row[j] = std::isnan(row[j]) ? 0.f : row[j];
        }
        if (inPlace)
          sgemmRowsOfTaps(nr, Dv, keys, 1, scores, pRows, &firstTap, packedV, ob + r0 * ldDv, ldDv,
                          false, nullptr, Sk);
        else
          sgemmPacked(nr, Dv, keys, scores, Sk, false, packedV, ob + r0 * ldDv, ldDv, false, Sk);
      }
    }
  });
  return Status::ok();
}

} // namespace ortc::cpu::kernels
