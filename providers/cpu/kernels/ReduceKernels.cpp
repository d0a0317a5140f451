//===- ReduceKernels.cpp - Reduce* and ArgMax/ArgMin, fp32 ----------------===//
//
// A reduction is planned once per call: size-1 dims are dropped and adjacent
// dims that are both reduced or both kept are merged. The input is then
// walked in memory order; the innermost merged dim either folds into one
// output element (reduced) or runs along a row of outputs (kept), both of
// which vectorize.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ortc::cpu::kernels {

namespace {

/// The first checks of both families: X present and float32, output 0
/// present and of `outType` (float32 for Reduce*, int64 for ArgMax/ArgMin).
Status checkIO(const char *op, const KernelCall &call, const TensorView *X, ElementType outType) {
  if (!X)
    return invalid(op, "missing input");
  if (X->type != ElementType::Float)
    return invalid(op, "input must be float32, got " + elementTypeName(X->type));
  if (call.numOutputs < 1 || call.outputs[0].type != outType)
    return invalid(op, "output must be " + elementTypeName(outType));
  return Status::ok();
}

enum class ReduceKind { Sum, Mean, Max, Min, Prod, L1, L2, SumSquare, LogSumExp, LogSum };

/// map(x) folded with combine(); identity is combine's neutral element.
/// T is float or double for every kind; Max and Min also take the integer
/// types and bool (identity: the type's lowest or highest value).
template <ReduceKind K, typename T = float> struct ReduceOp {
  static constexpr bool kMul = K == ReduceKind::Prod;
  static constexpr bool kMax = K == ReduceKind::Max;
  static constexpr bool kMin = K == ReduceKind::Min;
  static T identity() {
    constexpr bool inf = std::numeric_limits<T>::has_infinity;
    if constexpr (kMax)
      return inf ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
    else if constexpr (kMin)
      return inf ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
    else
      return kMul ? T(1) : T(0);
  }
  static T map(T x) {
    if constexpr (K == ReduceKind::L1)
      return std::fabs(x);
    else if constexpr (K == ReduceKind::L2 || K == ReduceKind::SumSquare)
      return x * x;
    else
      return x;
  }
  /// map, or exp(x - s) in LogSumExp's second pass.
  template <bool kExpShift> static T term(T x, T s) {
    if constexpr (kExpShift)
      return std::exp(x - s);
    else
      return map(x);
  }
  static T combine(T a, T b) {
    if constexpr (kMax)
      return a > b ? a : b;
    else if constexpr (kMin)
      return a < b ? a : b;
    else
      return kMul ? T(a * b) : T(a + b);
  }
  static T finalize(T a, int64_t count) {
    if constexpr (K == ReduceKind::Mean)
      return a / T(count);
    else if constexpr (K == ReduceKind::L2)
      return std::sqrt(a);
    else if constexpr (K == ReduceKind::LogSum)
      return std::log(a);
    else
      return a;
  }
};

struct ReducePlan {
  std::vector<int64_t> dims;      // merged input dims
  std::vector<bool> reduced;      // per merged dim
  std::vector<int64_t> outStride; // 0 for reduced dims
  int64_t outSize = 1;
  int64_t count = 1; // elements folded into each output
  bool empty = false;
};

ReducePlan makePlan(const std::vector<int64_t> &shape, const std::vector<bool> &reduce) {
  ReducePlan p;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0)
      p.empty = true;
    if (reduce[i])
      p.count *= shape[i];
    else
      p.outSize *= shape[i];
    if (shape[i] == 1)
      continue;
    if (!p.dims.empty() && p.reduced.back() == reduce[i]) {
      p.dims.back() *= shape[i];
      continue;
    }
    p.dims.push_back(shape[i]);
    p.reduced.push_back(reduce[i]);
  }
  p.outStride.assign(p.dims.size(), 0);
  int64_t s = 1;
  for (size_t i = p.dims.size(); i-- > 0;)
    if (!p.reduced[i]) {
      p.outStride[i] = s;
      s *= p.dims[i];
    }
  return p;
}

/// out[o] = combine over the reduced elements of map(x), starting from what
/// out holds. `shift` (may be null) is subtracted per output before map,
/// then exp is applied (LogSumExp's second pass).
template <class Op, bool kExpShift, typename T>
void fold(const T *x, const ReducePlan &p, T *out, const T *shift) {
  if (p.empty)
    return;
  size_t r = p.dims.size();
  if (r == 0) {
    out[0] = Op::combine(out[0], Op::template term<kExpShift>(x[0], kExpShift ? shift[0] : T(0)));
    return;
  }
  int64_t inner = p.dims[r - 1];
  bool innerReduced = p.reduced[r - 1];
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < r; ++i)
    rows *= p.dims[i];
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t row = 0; row < rows; ++row, x += inner) {
    if (innerReduced) {
      // Eight partial results so the row folds in vector lanes.
      T lanes[8];
      for (T &l : lanes)
        l = Op::identity();
      T s = kExpShift ? shift[off] : T(0);
      int64_t j = 0;
      for (; j + 8 <= inner; j += 8)
        for (int l = 0; l < 8; ++l)
          lanes[l] = Op::combine(lanes[l], Op::template term<kExpShift>(x[j + l], s));
      for (; j < inner; ++j)
        lanes[0] = Op::combine(lanes[0], Op::template term<kExpShift>(x[j], s));
      T a = out[off];
      for (T l : lanes)
        a = Op::combine(a, l);
      out[off] = a;
    } else {
      T *o = out + off;
      if (kExpShift) {
        const T *s = shift + off;
        for (int64_t j = 0; j < inner; ++j)
          o[j] = Op::combine(o[j], Op::template term<true>(x[j], s[j]));
      } else {
        for (int64_t j = 0; j < inner; ++j)
          o[j] = Op::combine(o[j], Op::map(x[j]));
      }
    }
    for (size_t i = r - 1; i-- > 0;) {
      if (++idx[i] < p.dims[i]) {
        off += p.outStride[i];
        break;
      }
      off -= p.outStride[i] * (p.dims[i] - 1);
      idx[i] = 0;
    }
  }
}

template <ReduceKind K, typename T>
Status reduceTyped(const KernelCall &call, const char *op, const TensorView *X) {
  using Op = ReduceOp<K, T>;
  if (call.numOutputs < 1 || call.outputs[0].type != X->type)
    return invalid(op, "output must be " + elementTypeName(X->type) + " as the input");
  size_t rank = X->shape.size();

  // Axes: input 1 (opset 18, ReduceSum 13) or the attribute (older opsets).
  std::vector<int64_t> axes;
  if (const TensorView *A = call.input(1)) {
    if (A->type != ElementType::Int64 || A->shape.size() > 1)
      return invalid(op, "axes must be a 1-D int64 tensor");
    const int64_t *a = static_cast<const int64_t *>(A->data);
    axes.assign(a, a + A->numElements());
  } else {
    axes = call.attrs.getInts("axes");
  }
  bool keepdims = call.attrs.getInt("keepdims", 1) != 0;
  bool noop = call.attrs.getInt("noop_with_empty_axes", 0) != 0;
  std::vector<bool> reduce(rank, axes.empty() && !noop);
  for (int64_t a : axes)
    if (Status s = claimAxis(op, a, reduce); !s.isOk())
      return s;
  std::vector<int64_t> outShape;
  for (size_t i = 0; i < rank; ++i)
    if (!reduce[i])
      outShape.push_back(X->shape[i]);
    else if (keepdims)
      outShape.push_back(1);
  const TensorView &Y = call.outputs[0];
  if (Status s = checkOutputShape(op, Y, outShape); !s.isOk())
    return s;

  ReducePlan plan = makePlan(X->shape, reduce);
  const T *x = static_cast<const T *>(X->data);
  T *y = static_cast<T *>(Y.data);
  if constexpr (K == ReduceKind::LogSumExp) {
    // log(sum(exp(x - max))) + max, so large inputs do not overflow.
    using MaxOp = ReduceOp<ReduceKind::Max, T>;
    using SumOp = ReduceOp<ReduceKind::Sum, T>;
    // Not allocScratch: for an empty output a null get is no error.
    size_t bytes = size_t(plan.outSize) * sizeof(T);
    T *mx = static_cast<T *>(call.scratch.get(bytes));
    if (!mx && bytes)
      return outOfMemory(op, bytes);
    std::fill(mx, mx + plan.outSize, MaxOp::identity());
    fold<MaxOp, false>(x, plan, mx, static_cast<const T *>(nullptr));
    // An all -inf (or empty) group would give inf - inf: shift by 0 instead.
    for (int64_t o = 0; o < plan.outSize; ++o)
      if (std::isinf(mx[o]))
        mx[o] = T(0);
    std::fill(y, y + plan.outSize, T(0));
    fold<SumOp, true>(x, plan, y, static_cast<const T *>(mx));
    for (int64_t o = 0; o < plan.outSize; ++o)
      y[o] = std::log(y[o]) + mx[o];
    return Status::ok();
  } else {
    std::fill(y, y + plan.outSize, Op::identity());
    fold<Op, false>(x, plan, y, static_cast<const T *>(nullptr));
    for (int64_t o = 0; o < plan.outSize; ++o)
      y[o] = Op::finalize(y[o], plan.count);
    return Status::ok();
  }
}

/// float32 and float64 for every kind; Max and Min also int8, uint8, int32,
/// int64 and bool.
template <ReduceKind K> Status reduceImpl(const KernelCall &call, const char *op) {
  // An empty input may come with a null pointer and still reduce (to the
  // identities); ArgMax/ArgMin below call that input missing.
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input");
  switch (X->type) {
  case ElementType::Float:
    return reduceTyped<K, float>(call, op, X);
  case ElementType::Double:
    return reduceTyped<K, double>(call, op, X);
  default:
    break;
  }
  if constexpr (K == ReduceKind::Max || K == ReduceKind::Min) {
    switch (X->type) {
    case ElementType::Int8:
      return reduceTyped<K, int8_t>(call, op, X);
    case ElementType::UInt8:
      return reduceTyped<K, uint8_t>(call, op, X);
    case ElementType::Int32:
      return reduceTyped<K, int32_t>(call, op, X);
    case ElementType::Int64:
      return reduceTyped<K, int64_t>(call, op, X);
    case ElementType::Bool:
      return reduceTyped<K, bool>(call, op, X);
    default:
      return invalid(op, "input must be float32, float64, int8, uint8, int32, int64 or bool, got " +
                             elementTypeName(X->type));
    }
  }
  return invalid(op, "input must be float32 or float64, got " + elementTypeName(X->type));
}

//===----------------------------------------------------------------------===//
// ArgMax / ArgMin
//===----------------------------------------------------------------------===//

template <bool kMax> Status argImpl(const KernelCall &call, const char *op) {
  const TensorView *X = call.input(0);
  if (Status s = checkIO(op, call, X, ElementType::Int64); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, 0, rank, axis); !s.isOk())
    return s;
  bool keepdims = call.attrs.getInt("keepdims", 1) != 0;
  bool last = call.attrs.getInt("select_last_index", 0) != 0;
  std::vector<int64_t> outShape = X->shape;
  if (keepdims)
    outShape[axis] = 1;
  else
    outShape.erase(outShape.begin() + axis);
  const TensorView &Y = call.outputs[0];
  if (Status s = checkOutputShape(op, Y, outShape); !s.isOk())
    return s;
  int64_t outer = product(X->shape, 0, axis), n = X->shape[axis];
  int64_t inner = product(X->shape, axis + 1, rank);
  if (n == 0 && outer * inner != 0)
    return invalid(op, "cannot take an index over an empty axis");
  const float *x = static_cast<const float *>(X->data);
  int64_t *y = static_cast<int64_t *>(Y.data);
  auto better = [last](float v, float best) {
    if (kMax)
      return last ? v >= best : v > best;
    return last ? v <= best : v < best;
  };
  if (inner == 1) {
    for (int64_t o = 0; o < outer; ++o) {
      const float *row = x + o * n;
      int64_t bi = 0;
      for (int64_t i = 1; i < n; ++i)
        if (better(row[i], row[bi]))
          bi = i;
      y[o] = bi;
    }
    return Status::ok();
  }
  float *best;
  if (Status s = allocScratch(call, op, size_t(inner), best); !s.isOk())
    return s;
  for (int64_t o = 0; o < outer; ++o) {
    const float *xb = x + o * n * inner;
    int64_t *yb = y + o * inner;
    std::memcpy(best, xb, size_t(inner) * sizeof(float));
    std::fill(yb, yb + inner, 0);
    for (int64_t i = 1; i < n; ++i)
      for (int64_t j = 0; j < inner; ++j) {
        float v = xb[i * inner + j];
        if (better(v, best[j])) {
          best[j] = v;
          yb[j] = i;
        }
      }
  }
  return Status::ok();
}

} // namespace

Status reduceMean(const KernelCall &call) {
  return reduceImpl<ReduceKind::Mean>(call, "ReduceMean");
}
Status reduceSum(const KernelCall &call) { return reduceImpl<ReduceKind::Sum>(call, "ReduceSum"); }
Status reduceMax(const KernelCall &call) { return reduceImpl<ReduceKind::Max>(call, "ReduceMax"); }
Status reduceMin(const KernelCall &call) { return reduceImpl<ReduceKind::Min>(call, "ReduceMin"); }
Status reduceProd(const KernelCall &call) {
  return reduceImpl<ReduceKind::Prod>(call, "ReduceProd");
}
Status reduceL1(const KernelCall &call) { return reduceImpl<ReduceKind::L1>(call, "ReduceL1"); }
Status reduceL2(const KernelCall &call) { return reduceImpl<ReduceKind::L2>(call, "ReduceL2"); }
Status reduceSumSquare(const KernelCall &call) {
  return reduceImpl<ReduceKind::SumSquare>(call, "ReduceSumSquare");
}
Status reduceLogSumExp(const KernelCall &call) {
  return reduceImpl<ReduceKind::LogSumExp>(call, "ReduceLogSumExp");
}
Status reduceLogSum(const KernelCall &call) {
  return reduceImpl<ReduceKind::LogSum>(call, "ReduceLogSum");
}
Status argMax(const KernelCall &call) { return argImpl<true>(call, "ArgMax"); }
Status argMin(const KernelCall &call) { return argImpl<false>(call, "ArgMin"); }

} // namespace ortc::cpu::kernels
