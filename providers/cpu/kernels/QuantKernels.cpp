//===- QuantKernels.cpp - linear quantization and integer matmul/conv -----===//
//
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger,
// QLinearMatMul, ConvInteger and QLinearConv, following the ONNX operator
// definitions and onnx.reference (onnx 1.23):
//   - quantize: y = saturate(round_half_even(x / scale) + zero_point), the
//     division in float32;
//   - dequantize: y = (float(x) - float(zero_point)) * scale in float32;
//   - the QLinear* ops accumulate (a - a_zp) * (b - b_zp) in int32 (wrapping
//     as the spec allows), multiply by a_scale * b_scale / y_scale (computed
//     in the scales' precision) in double, add y_zp, round half to even and
//     saturate.
// Integer data types: int8, uint8, int16, uint16 (and int32 where the op has
// it); the float8 and 2/4-bit types are not runtime element types.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/NumericTypes.h"
#include "runtime/ep/WindowGeometry.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ortc::cpu::kernels {

namespace {

//===----------------------------------------------------------------------===//
// Element access
//===----------------------------------------------------------------------===//

bool isQuantInt(ElementType t) {
  return t == ElementType::Int8 || t == ElementType::UInt8 || t == ElementType::Int16 ||
         t == ElementType::UInt16;
}

bool isInt8Like(ElementType t) { return t == ElementType::Int8 || t == ElementType::UInt8; }

/// Element i of an integer tensor (int8/uint8/int16/uint16/int32).
int64_t intAt(const TensorView &t, int64_t i) {
  switch (t.type) {
  case ElementType::Int8:
    return static_cast<const int8_t *>(t.data)[i];
  case ElementType::UInt8:
    return static_cast<const uint8_t *>(t.data)[i];
  case ElementType::Int16:
    return static_cast<const int16_t *>(t.data)[i];
  case ElementType::UInt16:
    return static_cast<const uint16_t *>(t.data)[i];
  case ElementType::Int32:
    return static_cast<const int32_t *>(t.data)[i];
  default:
    return 0;
  }
}

void intRange(ElementType t, int64_t &lo, int64_t &hi) {
  switch (t) {
  case ElementType::Int8:
    lo = -128, hi = 127;
    return;
  case ElementType::UInt8:
    lo = 0, hi = 255;
    return;
  case ElementType::Int16:
    lo = -32768, hi = 32767;
    return;
  case ElementType::UInt16:
    lo = 0, hi = 65535;
    return;
  default:
    lo = 0, hi = 0;
  }
}

void storeInt(const TensorView &t, int64_t i, int64_t v) {
  switch (t.type) {
  case ElementType::Int8:
    static_cast<int8_t *>(t.data)[i] = int8_t(v);
    return;
  case ElementType::UInt8:
    static_cast<uint8_t *>(t.data)[i] = uint8_t(v);
    return;
  case ElementType::Int16:
    static_cast<int16_t *>(t.data)[i] = int16_t(v);
    return;
  case ElementType::UInt16:
    static_cast<uint16_t *>(t.data)[i] = uint16_t(v);
    return;
  default:
    return;
  }
}

/// round_half_even(v) + zp saturated to [lo, hi]; NaN gives zp (saturated).
int64_t saturateRound(double v, int64_t zp, int64_t lo, int64_t hi) {
  double r = std::nearbyint(v); // the default rounding mode: ties to even
  if (std::isnan(r))
    r = 0;
  r += double(zp);
  if (r < double(lo))
    return lo;
  if (r > double(hi))
    return hi;
  return int64_t(r);
}

//===----------------------------------------------------------------------===//
// float16 / bfloat16 (the QLinearMatMul scales; conversions in NumericTypes.h)
//===----------------------------------------------------------------------===//

bool isScaleType(ElementType t) {
  return t == ElementType::Float || t == ElementType::Float16 || t == ElementType::BFloat16;
}

float scaleAt(const TensorView &t, int64_t i) {
  if (t.type == ElementType::Float16)
    return halfToFloat(static_cast<const uint16_t *>(t.data)[i]);
  if (t.type == ElementType::BFloat16)
    return bf16ToFloat(static_cast<const uint16_t *>(t.data)[i]);
  return static_cast<const float *>(t.data)[i];
}

/// A float rounded to the precision of `t` (float16 and bfloat16 arithmetic
/// rounds after every operation).
float roundTo(ElementType t, float v) {
  if (t == ElementType::Float16)
    return halfToFloat(floatToHalf(v));
  if (t == ElementType::BFloat16)
    return bf16ToFloat(floatToBf16(v));
  return v;
}

//===----------------------------------------------------------------------===//
// Quantization granularity
//===----------------------------------------------------------------------===//

/// Which scale (and zero point) element applies to element i of x.
struct QuantMap {
  enum Kind { PerTensor, PerAxis, Blocked } kind = PerTensor;
  int64_t inner = 1, dim = 1, block = 1, scaleDim = 1;

  int64_t index(int64_t i) const {
    switch (kind) {
    case PerTensor:
      return 0;
    case PerAxis:
      return i / inner % dim;
    case Blocked: {
      int64_t in = i % inner, a = i / inner % dim, outer = i / inner / dim;
      return (outer * scaleDim + a / block) * inner + in;
    }
    }
    return 0;
  }
};

/// The granularity from x's and the scale's shapes: one scale element is
/// per-tensor; otherwise block_size 0 needs a 1-D scale of x.shape[axis]
/// (per-axis), block_size > 0 a scale of x's shape but ceil(D/block_size) on
/// `axis` (blocked).
Status planQuantMap(const char *op, const std::vector<int64_t> &x, const TensorView &scale,
                    const TensorView *zp, const StepAttributes &attrs, QuantMap &map) {
  if (zp && zp->shape != scale.shape)
    return invalid(op, "zero point shape " + shapeToString(zp->shape) +
                           " differs from the scale's " + shapeToString(scale.shape));
  int64_t blockSize = attrs.getInt("block_size", 0);
  if (blockSize < 0)
    return invalid(op, "block_size " + std::to_string(blockSize) + " is negative");
  map = QuantMap();
  if (scale.numElements() == 1)
    return Status::ok();
  int64_t axis = 0;
  if (Status s = readAxis(op, attrs, 1, x.size(), axis); !s.isOk())
    return s;
  map.inner = product(x, size_t(axis) + 1, x.size());
  map.dim = x[size_t(axis)];
  if (blockSize == 0) {
    if (scale.shape.size() != 1 || scale.shape[0] != map.dim)
      return invalid(op, "per-axis scale shape " + shapeToString(scale.shape) + " should be [" +
                             std::to_string(map.dim) + "] (x " + shapeToString(x) + ", axis " +
                             std::to_string(axis) + ")");
    map.kind = QuantMap::PerAxis;
    return Status::ok();
  }
  std::vector<int64_t> expect = x;
  expect[size_t(axis)] = (map.dim + blockSize - 1) / blockSize;
  if (scale.shape != expect)
    return invalid(op, "blocked scale shape " + shapeToString(scale.shape) + " should be " +
                           shapeToString(expect) + " (block_size " + std::to_string(blockSize) +
                           ")");
  map.kind = QuantMap::Blocked;
  map.block = blockSize;
  map.scaleDim = expect[size_t(axis)];
  return Status::ok();
}

Status checkOneOutput(const char *op, const KernelCall &call) {
  if (call.numOutputs < 1 || (!call.outputs[0].data && call.outputs[0].numElements() > 0))
    return invalid(op, "missing output");
  for (size_t i = 1; i < call.numOutputs; ++i)
    if (call.outputs[i].data)
      return invalid(op, "only one output is supported");
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
//===----------------------------------------------------------------------===//

/// float32, float16 or bfloat16 element i as a float.
float floatAt(const TensorView &t, int64_t i) { return scaleAt(t, i); }

/// Stores v rounded to t's float type (float32, float16, bfloat16).
void storeFloat(const TensorView &t, int64_t i, float v) {
  if (t.type == ElementType::Float16)
    static_cast<uint16_t *>(t.data)[i] = floatToHalf(v);
  else if (t.type == ElementType::BFloat16)
    static_cast<uint16_t *>(t.data)[i] = floatToBf16(v);
  else
    static_cast<float *>(t.data)[i] = v;
}

Status quantizeLinearImpl(const KernelCall &call) {
  const char *op = "QuantizeLinear";
  const TensorView *X = dataInput(call, 0), *scale = call.input(1), *zp = call.input(2);
  if (!X || !scale)
    return invalid(op, "missing input x or y_scale");
  if (!isScaleType(X->type) || !isScaleType(scale->type))
    return invalid(op, "x and y_scale must be float32, float16 or bfloat16, got " +
                           elementTypeName(X->type) + " and " + elementTypeName(scale->type));
  if (Status s = checkOneOutput(op, call); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  if (!isQuantInt(Y.type))
    return invalid(op,
                   "output must be int8, uint8, int16 or uint16, got " + elementTypeName(Y.type));
  if (zp && zp->type != Y.type)
    return invalid(op, "y_zero_point is " + elementTypeName(zp->type) + " but the output is " +
                           elementTypeName(Y.type));
  int64_t outputDtype = call.attrs.getInt("output_dtype", 0);
  if (outputDtype != 0 && outputDtype != int64_t(Y.type))
    return invalid(op, "output_dtype " + std::to_string(outputDtype) + " differs from the output " +
                           elementTypeName(Y.type));
  // The division's type: `precision`, else y_scale's (then x must have it
  // too: onnx.reference divides in numpy's promoted type).
  int64_t precision = call.attrs.getInt("precision", 0);
  ElementType div = precision ? ElementType(precision) : scale->type;
  if (!isScaleType(div) || (!precision && X->type != scale->type))
    return invalid(op,
                   "precision " + std::to_string(precision) + " with x " +
                       elementTypeName(X->type) + " and y_scale " + elementTypeName(scale->type) +
                       ": needs precision float32, float16 or bfloat16, or x of y_scale's type");
  if (Status s = checkOutputShape(op, Y, X->shape); !s.isOk())
    return s;
  QuantMap map;
  if (Status s = planQuantMap(op, X->shape, *scale, zp, call.attrs, map); !s.isOk())
    return s;
  int64_t lo, hi;
  intRange(Y.type, lo, hi);
  int64_t n = X->numElements();
  if (X->type == ElementType::Float && scale->type == ElementType::Float &&
      div == ElementType::Float) {
    const float *x = static_cast<const float *>(X->data);
    const float *sc = static_cast<const float *>(scale->data);
    for (int64_t i = 0; i < n; ++i) {
      int64_t q = map.index(i);
      storeInt(Y, i, saturateRound(x[i] / sc[q], zp ? intAt(*zp, q) : 0, lo, hi));
    }
    return Status::ok();
  }
  for (int64_t i = 0; i < n; ++i) {
    int64_t q = map.index(i);
    // float16/bfloat16 division: the float quotient of two such values
    // rounds to the correctly rounded one.
    float v = roundTo(div, roundTo(div, floatAt(*X, i)) / roundTo(div, floatAt(*scale, q)));
    storeInt(Y, i, saturateRound(v, zp ? intAt(*zp, q) : 0, lo, hi));
  }
  return Status::ok();
}

Status dequantizeLinearImpl(const KernelCall &call) {
  const char *op = "DequantizeLinear";
  const TensorView *X = dataInput(call, 0), *scale = call.input(1), *zp = call.input(2);
  if (!X)
    return invalid(op, "missing input x");
  if (!isQuantInt(X->type) && X->type != ElementType::Int32)
    return invalid(op, "input x must be int8, uint8, int16, uint16 or int32, got " +
                           elementTypeName(X->type));
  if (!scale || !isScaleType(scale->type))
    return invalid(op, "x_scale must be float32, float16 or bfloat16");
  if (zp && zp->type != X->type)
    return invalid(op, "x_zero_point is " + elementTypeName(zp->type) + " but x is " +
                           elementTypeName(X->type));
  if (Status s = checkOneOutput(op, call); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  int64_t outputDtype = call.attrs.getInt("output_dtype", 0);
  ElementType yType = outputDtype ? ElementType(outputDtype) : scale->type;
  if (!isScaleType(yType) || Y.type != yType)
    return invalid(op, "output is " + elementTypeName(Y.type) + ", should be " +
                           (outputDtype ? "output_dtype " + std::to_string(outputDtype)
                                        : "x_scale's type " + elementTypeName(scale->type)) +
                           " (float32, float16 or bfloat16)");
  if (Status s = checkOutputShape(op, Y, X->shape); !s.isOk())
    return s;
  QuantMap map;
  if (Status s = planQuantMap(op, X->shape, *scale, zp, call.attrs, map); !s.isOk())
    return s;
  int64_t n = X->numElements();
  // (x - zp) * scale in float32, then rounded to the output type (as
  // onnx.reference computes it).
  for (int64_t i = 0; i < n; ++i) {
    int64_t q = map.index(i);
    float centered = float(intAt(*X, i)) - (zp ? float(intAt(*zp, q)) : 0.f);
    storeFloat(Y, i, centered * scaleAt(*scale, q));
  }
  return Status::ok();
}

Status dynamicQuantizeLinearImpl(const KernelCall &call) {
  const char *op = "DynamicQuantizeLinear";
  const TensorView *X = dataInput(call, 0);
  if (Status s = checkFloat(op, X, "input x"); !s.isOk())
    return s;
  if (call.numOutputs != 3)
    return invalid(op, "needs the three outputs y, y_scale, y_zero_point");
  const TensorView &Y = call.outputs[0], &S = call.outputs[1], &Z = call.outputs[2];
  if (Y.type != ElementType::UInt8 || Z.type != ElementType::UInt8)
    return invalid(op, "y and y_zero_point must be uint8");
  if (Status s = checkFloat(op, &S, "output y_scale"); !s.isOk())
    return s;
  if (Status s = checkOutputShape(op, Y, X->shape); !s.isOk())
    return s;
  if (!S.shape.empty() || !Z.shape.empty())
    return invalid(op, "y_scale and y_zero_point must be scalars, got " + shapeToString(S.shape) +
                           " and " + shapeToString(Z.shape));
  const float *x = static_cast<const float *>(X->data);
  int64_t n = X->numElements();
  // The range is widened to include 0 (onnx.reference: maximum(0, max(x))).
  float maxx = 0.f, minx = 0.f;
  for (int64_t i = 0; i < n; ++i) {
    maxx = std::max(maxx, x[i]);
    minx = std::min(minx, x[i]);
  }
  float scale = (maxx == minx ? 1.f : maxx - minx) / 255.f;
  float zpf = 0.f - minx / scale;
  zpf = std::min(255.f, std::max(0.f, zpf));
  int64_t zp = int64_t(std::nearbyint(zpf));
  uint8_t *y = static_cast<uint8_t *>(Y.data);
  for (int64_t i = 0; i < n; ++i)
    y[i] = uint8_t(saturateRound(x[i] / scale, zp, 0, 255));
  *static_cast<float *>(S.data) = scale;
  *static_cast<uint8_t *>(Z.data) = uint8_t(zp);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// MatMulInteger, QLinearMatMul
//===----------------------------------------------------------------------===//

/// numpy matmul geometry: a 1-D A is a row, a 1-D B a column (both dropped
/// from the result); leading batch dims broadcast.
struct MatMulPlan {
  int64_t M = 1, K = 1, N = 1;
  std::vector<int64_t> batch, aStrides, bStrides; // strides in matrices
  std::vector<int64_t> outShape;
  int64_t batchCount() const { return product(batch, 0, batch.size()); }
};

Status planMatMul(const char *op, const std::vector<int64_t> &a, const std::vector<int64_t> &b,
                  MatMulPlan &p) {
  if (a.empty() || b.empty())
    return invalid(op, "A and B must have rank >= 1");
  std::vector<int64_t> as = a, bs = b;
  if (as.size() == 1)
    as.insert(as.begin(), 1);
  if (bs.size() == 1)
    bs.push_back(1);
  p.M = as[as.size() - 2];
  p.K = as.back();
  p.N = bs.back();
  if (bs[bs.size() - 2] != p.K)
    return invalid(op, "inner dims differ: A " + shapeToString(a) + ", B " + shapeToString(b));
  std::vector<int64_t> ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  size_t rank = std::max(ab.size(), bb.size());
  p.batch.assign(rank, 1);
  for (size_t i = 0; i < rank; ++i) {
    int64_t da = i + ab.size() >= rank ? ab[i + ab.size() - rank] : 1;
    int64_t db = i + bb.size() >= rank ? bb[i + bb.size() - rank] : 1;
    if (da != db && da != 1 && db != 1)
      return invalid(op, "batch dims do not broadcast: A " + shapeToString(a) + ", B " +
                             shapeToString(b));
    p.batch[i] = da == 1 ? db : da;
  }
  p.aStrides = broadcastStrides(ab, rank);
  p.bStrides = broadcastStrides(bb, rank);
  p.outShape = p.batch;
  if (a.size() > 1)
    p.outShape.push_back(p.M);
  if (b.size() > 1)
    p.outShape.push_back(p.N);
  return Status::ok();
}

/// out[i] = t[offset + i] - zp for `count` elements of an int8/uint8 tensor.
void centered(const TensorView &t, int64_t offset, int64_t count, int32_t zp, int32_t *out) {
  if (t.type == ElementType::Int8) {
    const int8_t *v = static_cast<const int8_t *>(t.data) + offset;
    for (int64_t i = 0; i < count; ++i)
      out[i] = int32_t(v[i]) - zp;
  } else {
    const uint8_t *v = static_cast<const uint8_t *>(t.data) + offset;
    for (int64_t i = 0; i < count; ++i)
      out[i] = int32_t(v[i]) - zp;
  }
}

/// int32 words of scratch integerMatMul needs besides its output.
size_t integerMatMulScratch(const MatMulPlan &p) { return size_t(p.K * p.N + p.K + p.N); }

/// C[b] = (A[b] - azp) (B[b] - bzp[n]) in int32 (wrapping), for every batch;
/// `work` holds integerMatMulScratch(p) words. `bzpPerColumn` selects
/// bzp[n] over bzp[0].
void integerMatMul(const MatMulPlan &p, const TensorView &A, int64_t azp, const TensorView &B,
                   const TensorView *bzp, bool bzpPerColumn, int32_t *C, int32_t *work) {
  int64_t rank = int64_t(p.batch.size()), count = p.batchCount();
  int32_t *b32 = work, *aRow = b32 + p.K * p.N;
  uint32_t *acc = reinterpret_cast<uint32_t *>(aRow + p.K);
  int64_t lastB = -1;
  for (int64_t b = 0; b < count; ++b) {
    int64_t aOff = stridedOffset(b, p.batch.data(), p.aStrides.data(), size_t(rank)) * p.M * p.K;
    int64_t bOff = stridedOffset(b, p.batch.data(), p.bStrides.data(), size_t(rank)) * p.K * p.N;
    if (bOff != lastB) { // B - bzp, once per distinct matrix
      for (int64_t k = 0; k < p.K; ++k)
        for (int64_t n = 0; n < p.N; ++n)
          b32[k * p.N + n] =
              int32_t(intAt(B, bOff + k * p.N + n) - (bzp ? intAt(*bzp, bzpPerColumn ? n : 0) : 0));
      lastB = bOff;
    }
    int32_t *c = C + b * p.M * p.N;
    for (int64_t m = 0; m < p.M; ++m) {
      centered(A, aOff + m * p.K, p.K, int32_t(azp), aRow);
      std::fill(acc, acc + p.N, 0u);
      for (int64_t k = 0; k < p.K; ++k) {
        uint32_t av = uint32_t(aRow[k]);
        if (av == 0)
          continue;
        const int32_t *bk = b32 + k * p.N;
        for (int64_t n = 0; n < p.N; ++n)
          acc[n] += av * uint32_t(bk[n]); // wraps modulo 2^32, as int32 accumulation may
      }
      for (int64_t n = 0; n < p.N; ++n)
        c[m * p.N + n] = int32_t(acc[n]);
    }
  }
}

Status checkZeroPoint(const char *op, const TensorView *zp, ElementType type, const char *role) {
  if (!zp)
    return Status::ok();
  if (zp->type != type)
    return invalid(op, std::string(role) + " is " + elementTypeName(zp->type) + ", its data is " +
                           elementTypeName(type));
  return Status::ok();
}

Status matMulIntegerImpl(const KernelCall &call) {
  const char *op = "MatMulInteger";
  const TensorView *A = dataInput(call, 0), *B = dataInput(call, 1);
  const TensorView *azp = call.input(2), *bzp = call.input(3);
  if (!A || !B)
    return invalid(op, "missing input A or B");
  if (!isInt8Like(A->type) || !isInt8Like(B->type))
    return invalid(op, "A and B must be int8 or uint8, got " + elementTypeName(A->type) + " and " +
                           elementTypeName(B->type));
  if (Status s = checkZeroPoint(op, azp, A->type, "a_zero_point"); !s.isOk())
    return s;
  if (Status s = checkZeroPoint(op, bzp, B->type, "b_zero_point"); !s.isOk())
    return s;
  if (Status s = checkOneOutput(op, call); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  if (Y.type != ElementType::Int32)
    return invalid(op, "output must be int32, got " + elementTypeName(Y.type));
  MatMulPlan p;
  if (Status s = planMatMul(op, A->shape, B->shape, p); !s.isOk())
    return s;
  if (Status s = checkOutputShape(op, Y, p.outShape); !s.isOk())
    return s;
  if (azp && azp->numElements() != 1)
    return invalid(op, "a_zero_point must have one element (per-tensor), got shape " +
                           shapeToString(azp->shape));
  bool perColumn = false;
  if (bzp && bzp->numElements() != 1) {
    if (B->shape.size() != 2 || bzp->shape != std::vector<int64_t>{p.N})
      return invalid(op, "b_zero_point must have one element, or shape [N] for a 2-D B; got " +
                             shapeToString(bzp->shape));
    perColumn = true;
  }
  int32_t *work = nullptr;
  if (Status s = allocScratch(call, op, integerMatMulScratch(p), work); !s.isOk())
    return s;
  integerMatMul(p, *A, azp ? intAt(*azp, 0) : 0, *B, bzp, perColumn, static_cast<int32_t *>(Y.data),
                work);
  return Status::ok();
}

Status checkScalarScale(const char *op, const TensorView *t, const char *role) {
  if (!t)
    return invalid(op, std::string("missing ") + role);
  if (t->numElements() != 1)
    return invalid(op, std::string(role) + " must have one element (per-tensor), got shape " +
                           shapeToString(t->shape));
  return Status::ok();
}

Status qLinearMatMulImpl(const KernelCall &call) {
  const char *op = "QLinearMatMul";
  const TensorView *A = dataInput(call, 0), *as = call.input(1), *azp = call.input(2);
  const TensorView *B = dataInput(call, 3), *bs = call.input(4), *bzp = call.input(5);
  const TensorView *ys = call.input(6), *yzp = call.input(7);
  if (!A || !B)
    return invalid(op, "missing input a or b");
  if (!isInt8Like(A->type) || !isInt8Like(B->type))
    return invalid(op, "a and b must be int8 or uint8, got " + elementTypeName(A->type) + " and " +
                           elementTypeName(B->type));
  for (auto [t, role] : {std::pair{as, "a_scale"}, {bs, "b_scale"}, {ys, "y_scale"}})
    if (Status s = checkScalarScale(op, t, role); !s.isOk())
      return s;
  if (!isScaleType(as->type) || bs->type != as->type || ys->type != as->type)
    return invalid(op, "the scales must all be float32, all float16 or all bfloat16");
  for (auto [t, role] :
       {std::pair{azp, "a_zero_point"}, {bzp, "b_zero_point"}, {yzp, "y_zero_point"}})
    if (t && t->numElements() != 1)
      return invalid(op, std::string(role) + " must have one element (per-tensor), got shape " +
                             shapeToString(t->shape));
  if (Status s = checkZeroPoint(op, azp, A->type, "a_zero_point"); !s.isOk())
    return s;
  if (Status s = checkZeroPoint(op, bzp, B->type, "b_zero_point"); !s.isOk())
    return s;
  if (Status s = checkOneOutput(op, call); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  ElementType yType = yzp ? yzp->type : A->type;
  if (Y.type != yType || !isInt8Like(Y.type))
    return invalid(op, "output is " + elementTypeName(Y.type) + ", should be " +
                           elementTypeName(yType) + " (y_zero_point's type, else a's)");
  MatMulPlan p;
  if (Status s = planMatMul(op, A->shape, B->shape, p); !s.isOk())
    return s;
  if (Status s = checkOutputShape(op, Y, p.outShape); !s.isOk())
    return s;
  int64_t total = p.batchCount() * p.M * p.N;
  int32_t *acc = nullptr;
  if (Status s = allocScratch(call, op, size_t(total) + integerMatMulScratch(p), acc); !s.isOk())
    return s;
  integerMatMul(p, *A, azp ? intAt(*azp, 0) : 0, *B, bzp, false, acc, acc + total);
  // The multiplier in the scales' precision, applied in double (numpy:
  // int32 * float32/float16 gives float64).
  ElementType st = as->type;
  float mult = roundTo(st, roundTo(st, scaleAt(*as, 0) * scaleAt(*bs, 0)) / scaleAt(*ys, 0));
  int64_t lo, hi, zp = yzp ? intAt(*yzp, 0) : 0;
  intRange(Y.type, lo, hi);
  for (int64_t i = 0; i < total; ++i)
    storeInt(Y, i, saturateRound(double(acc[i]) * double(mult), zp, lo, hi));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// ConvInteger, QLinearConv
//===----------------------------------------------------------------------===//

struct ConvPlan {
  int64_t N = 0, C = 0, M = 0, group = 1;
  std::vector<int64_t> in, k, out, s, d, pb;
  std::vector<int64_t> outShape;
};

Status planConv(const char *op, const StepAttributes &attrs, const std::vector<int64_t> &x,
                const std::vector<int64_t> &w, ConvPlan &p) {
  if (x.size() < 3)
    return invalid(op, "X must be [N,C,D1..Dn] with n >= 1, got " + shapeToString(x));
  if (w.size() != x.size())
    return invalid(op, "W " + shapeToString(w) + " must have X's rank " + std::to_string(x.size()));
  size_t r = x.size() - 2;
  p.N = x[0];
  p.C = x[1];
  p.M = w[0];
  p.group = attrs.getInt("group", 1);
  if (p.group < 1 || p.C % p.group || p.M % p.group || w[1] != p.C / p.group)
    return invalid(op, "group " + std::to_string(p.group) + " does not fit X " + shapeToString(x) +
                           " and W " + shapeToString(w));
  p.in.assign(x.begin() + 2, x.end());
  p.k.assign(w.begin() + 2, w.end());
  std::vector<int64_t> ks = attrs.getInts("kernel_shape", p.k);
  if (ks != p.k)
    return invalid(op, "kernel_shape " + shapeToString(ks) + " differs from W's spatial dims " +
                           shapeToString(p.k));
  p.s = attrs.getInts("strides", std::vector<int64_t>(r, 1));
  p.d = attrs.getInts("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = attrs.getInts("pads", std::vector<int64_t>(2 * r, 0));
  std::string autoPadName = attrs.getString("auto_pad", "NOTSET");
  if (p.s.size() != r || p.d.size() != r || pads.size() != 2 * r)
    return invalid(op, "strides, dilations or pads do not match " + std::to_string(r) +
                           " spatial dims");
  std::optional<AutoPad> autoPad = parseAutoPad(autoPadName);
  if (!autoPad)
    return invalid(op, "unsupported auto_pad '" + autoPadName + "'");
  p.out.assign(r, 0);
  p.pb.assign(r, 0);
  for (size_t i = 0; i < r; ++i) {
    int64_t in = p.in[i], k = p.k[i], s = p.s[i], d = p.d[i];
    if (k < 1 || s < 1 || d < 1)
      return invalid(op, "kernel dims, strides and dilations must be >= 1");
    int64_t pb = pads[i], pe = pads[i + r];
    if (pb < 0 || pe < 0)
      return invalid(op, "negative pads " + shapeToString(pads));
    std::optional<WindowAxis> axis = windowAxis(in, k, s, d, pb, pe, *autoPad, /*ceilMode=*/false);
    if (!axis) {
      bool valid = *autoPad == AutoPad::Valid;
      return invalid(op, "window of " + std::to_string((k - 1) * d + 1) +
                             " is larger than the padded input of " +
                             std::to_string(valid ? in : in + pb + pe));
    }
    p.out[i] = axis->out;
    p.pb[i] = axis->padBegin;
  }
  p.outShape = {p.N, p.M};
  p.outShape.insert(p.outShape.end(), p.out.begin(), p.out.end());
  return Status::ok();
}

/// int32 words of scratch integerConv needs besides its output: w - wzp, and
/// the columns of one image and group.
size_t integerConvScratch(const ConvPlan &p) {
  int64_t kSize = product(p.k, 0, p.k.size()), outSize = product(p.out, 0, p.out.size());
  int64_t cg = p.C / p.group;
  return size_t(p.M * cg * kSize + cg * kSize * outSize);
}

/// acc[n, m, o...] = sum over the group's channels and the window of
/// (x - xzp) (w - wzp[m]) in int32 (wrapping); padding contributes 0. The
/// window is unrolled into columns [cg * kSize, outSize] per image and group,
/// then each output channel is a row times the columns. `work` holds
/// integerConvScratch(p) words.
void integerConv(const ConvPlan &p, const TensorView &X, int64_t xzp, const TensorView &W,
                 const std::vector<int64_t> &wzp, int32_t *acc, int32_t *work) {
  size_t r = p.in.size();
  int64_t inSize = product(p.in, 0, r), outSize = product(p.out, 0, r), kSize = product(p.k, 0, r);
  int64_t cg = p.C / p.group, mg = p.M / p.group, rows = cg * kSize;
  int32_t *w32 = work, *cols = w32 + p.M * rows;
  for (int64_t m = 0; m < p.M; ++m)
    centered(W, m * rows, rows, int32_t(wzp[size_t(m)]), w32 + m * rows);
  // For each kernel position and output position: the input offset, or -1
  // in the padding. Shared by every channel.
  std::vector<int64_t> offsets(size_t(kSize * outSize));
  std::vector<int64_t> o(r), kk(r);
  for (int64_t ki = 0; ki < kSize; ++ki) {
    for (size_t i = r, rem = size_t(ki); i-- > 0;) {
      kk[i] = int64_t(rem) % p.k[i];
      rem /= size_t(p.k[i]);
    }
    for (int64_t oi = 0; oi < outSize; ++oi) {
      for (size_t i = r, rem = size_t(oi); i-- > 0;) {
        o[i] = int64_t(rem) % p.out[i];
        rem /= size_t(p.out[i]);
      }
      int64_t off = 0;
      bool inside = true;
      for (size_t i = 0; i < r && inside; ++i) {
        int64_t pos = o[i] * p.s[i] - p.pb[i] + kk[i] * p.d[i];
        inside = pos >= 0 && pos < p.in[i];
        off = off * p.in[i] + pos;
      }
      offsets[size_t(ki * outSize + oi)] = inside ? off : -1;
    }
  }
  std::vector<int32_t> plane(static_cast<size_t>(inSize));
  std::vector<uint32_t> row(static_cast<size_t>(outSize));
  for (int64_t n = 0; n < p.N; ++n)
    for (int64_t g = 0; g < p.group; ++g) {
      for (int64_t c = 0; c < cg; ++c) {
        centered(X, (n * p.C + g * cg + c) * inSize, inSize, int32_t(xzp), plane.data());
        for (int64_t ki = 0; ki < kSize; ++ki) {
          int32_t *col = cols + (c * kSize + ki) * outSize;
          const int64_t *off = offsets.data() + ki * outSize;
          for (int64_t oi = 0; oi < outSize; ++oi)
            col[oi] = off[oi] < 0 ? 0 : plane[size_t(off[oi])];
        }
      }
      for (int64_t mi = 0; mi < mg; ++mi) {
        int64_t m = g * mg + mi;
        std::fill(row.begin(), row.end(), 0u);
        for (int64_t q = 0; q < rows; ++q) {
          uint32_t wv = uint32_t(w32[m * rows + q]);
          if (wv == 0)
            continue;
          const int32_t *col = cols + q * outSize;
          for (int64_t oi = 0; oi < outSize; ++oi)
            row[size_t(oi)] += wv * uint32_t(col[oi]); // wraps modulo 2^32
        }
        int32_t *out = acc + (n * p.M + m) * outSize;
        for (int64_t oi = 0; oi < outSize; ++oi)
          out[oi] = int32_t(row[size_t(oi)]);
      }
    }
}

/// The per-output-channel values of a scalar or [M] tensor (w_zero_point,
/// w_scale).
Status perChannel(const char *op, const TensorView *t, int64_t M, const char *role,
                  std::vector<int64_t> *ints, std::vector<float> *floats) {
  int64_t count = t ? t->numElements() : 1;
  if (t && count != 1 && t->shape != std::vector<int64_t>{M})
    return invalid(op, std::string(role) + " must have one element or shape [" + std::to_string(M) +
                           "], got " + shapeToString(t->shape));
  for (int64_t m = 0; m < M; ++m) {
    int64_t i = count == 1 ? 0 : m;
    if (ints)
      ints->push_back(t ? intAt(*t, i) : 0);
    if (floats)
      floats->push_back(t ? scaleAt(*t, i) : 1.f);
  }
  return Status::ok();
}

Status convIntegerImpl(const KernelCall &call) {
  const char *op = "ConvInteger";
  const TensorView *X = dataInput(call, 0), *W = dataInput(call, 1);
  const TensorView *xzp = call.input(2), *wzp = call.input(3);
  if (!X || !W)
    return invalid(op, "missing input x or w");
  if (!isInt8Like(X->type) || !isInt8Like(W->type))
    return invalid(op, "x and w must be int8 or uint8, got " + elementTypeName(X->type) + " and " +
                           elementTypeName(W->type));
  if (Status s = checkZeroPoint(op, xzp, X->type, "x_zero_point"); !s.isOk())
    return s;
  if (Status s = checkZeroPoint(op, wzp, W->type, "w_zero_point"); !s.isOk())
    return s;
  if (xzp && xzp->numElements() != 1)
    return invalid(op,
                   "x_zero_point must have one element, got shape " + shapeToString(xzp->shape));
  if (Status s = checkOneOutput(op, call); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  if (Y.type != ElementType::Int32)
    return invalid(op, "output must be int32, got " + elementTypeName(Y.type));
  ConvPlan p;
  if (Status s = planConv(op, call.attrs, X->shape, W->shape, p); !s.isOk())
    return s;
  if (Status s = checkOutputShape(op, Y, p.outShape); !s.isOk())
    return s;
  std::vector<int64_t> wz;
  if (Status s = perChannel(op, wzp, p.M, "w_zero_point", &wz, nullptr); !s.isOk())
    return s;
  int32_t *work = nullptr;
  if (Status s = allocScratch(call, op, integerConvScratch(p), work); !s.isOk())
    return s;
  integerConv(p, *X, xzp ? intAt(*xzp, 0) : 0, *W, wz, static_cast<int32_t *>(Y.data), work);
  return Status::ok();
}

Status qLinearConvImpl(const KernelCall &call) {
  const char *op = "QLinearConv";
  const TensorView *X = dataInput(call, 0), *xs = call.input(1), *xzp = call.input(2);
  const TensorView *W = dataInput(call, 3), *ws = call.input(4), *wzp = call.input(5);
  const TensorView *ys = call.input(6), *yzp = call.input(7), *B = call.input(8);
  if (!X || !W)
    return invalid(op, "missing input x or w");
  if (!isInt8Like(X->type) || !isInt8Like(W->type))
    return invalid(op, "x and w must be int8 or uint8, got " + elementTypeName(X->type) + " and " +
                           elementTypeName(W->type));
  if (Status s =
          checkFloats(op, {{xs, "input x_scale"}, {ws, "input w_scale"}, {ys, "input y_scale"}});
      !s.isOk())
    return s;
  if (Status s = checkScalarScale(op, xs, "x_scale"); !s.isOk())
    return s;
  if (Status s = checkScalarScale(op, ys, "y_scale"); !s.isOk())
    return s;
  if (Status s = checkZeroPoint(op, xzp, X->type, "x_zero_point"); !s.isOk())
    return s;
  if (Status s = checkZeroPoint(op, wzp, W->type, "w_zero_point"); !s.isOk())
    return s;
  for (auto [t, role] : {std::pair{xzp, "x_zero_point"}, {yzp, "y_zero_point"}})
    if (t && t->numElements() != 1)
      return invalid(op, std::string(role) + " must have one element, got shape " +
                             shapeToString(t->shape));
  if (B && B->type != ElementType::Int32)
    return invalid(op, "B must be int32, got " + elementTypeName(B->type));
  if (Status s = checkOneOutput(op, call); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  ElementType yType = yzp ? yzp->type : X->type;
  if (Y.type != yType || !isInt8Like(Y.type))
    return invalid(op, "output is " + elementTypeName(Y.type) + ", should be " +
                           elementTypeName(yType) + " (y_zero_point's type, else x's)");
  ConvPlan p;
  if (Status s = planConv(op, call.attrs, X->shape, W->shape, p); !s.isOk())
    return s;
  if (Status s = checkOutputShape(op, Y, p.outShape); !s.isOk())
    return s;
  if (B && B->shape != std::vector<int64_t>{p.M})
    return invalid(op, "B shape " + shapeToString(B->shape) + " should be [" + std::to_string(p.M) +
                           "]");
  std::vector<int64_t> wz;
  std::vector<float> wsc;
  if (Status s = perChannel(op, wzp, p.M, "w_zero_point", &wz, nullptr); !s.isOk())
    return s;
  if (Status s = perChannel(op, ws, p.M, "w_scale", nullptr, &wsc); !s.isOk())
    return s;
  int64_t total = product(p.outShape, 0, p.outShape.size());
  int32_t *acc = nullptr;
  if (Status s = allocScratch(call, op, size_t(total) + integerConvScratch(p), acc); !s.isOk())
    return s;
  integerConv(p, *X, xzp ? intAt(*xzp, 0) : 0, *W, wz, acc, acc + total);
  float xScale = scaleAt(*xs, 0), yScale = scaleAt(*ys, 0);
  int64_t lo, hi, zp = yzp ? intAt(*yzp, 0) : 0;
  intRange(Y.type, lo, hi);
  int64_t outSize = product(p.out, 0, p.out.size());
  for (int64_t i = 0; i < total; ++i) {
    int64_t m = i / outSize % p.M;
    int64_t v = int64_t(acc[i]) + (B ? intAt(*B, m) : 0);
    float mult = xScale * wsc[size_t(m)] / yScale;
    storeInt(Y, i,
             saturateRound(double(int32_t(uint32_t(uint64_t(v)))) * double(mult), zp, lo, hi));
  }
  return Status::ok();
}

} // namespace

Status quantizeLinear(const KernelCall &call) { return quantizeLinearImpl(call); }
Status dequantizeLinear(const KernelCall &call) { return dequantizeLinearImpl(call); }
Status dynamicQuantizeLinear(const KernelCall &call) { return dynamicQuantizeLinearImpl(call); }
Status matMulInteger(const KernelCall &call) { return matMulIntegerImpl(call); }
Status qLinearMatMul(const KernelCall &call) { return qLinearMatMulImpl(call); }
Status convInteger(const KernelCall &call) { return convIntegerImpl(call); }
Status qLinearConv(const KernelCall &call) { return qLinearConvImpl(call); }

} // namespace ortc::cpu::kernels
