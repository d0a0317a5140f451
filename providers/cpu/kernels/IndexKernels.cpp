//===- IndexKernels.cpp - indexing, scatter, scan and generator ops --------===//
//
// Trilu, CumSum, CumProd, ScatterElements, ScatterND, TensorScatter,
// GatherElements, GatherND, TopK, OneHot, EyeLike, ReverseSequence and Range.
// Ops that only place elements move them by element size (any type); ops that
// compute on values (the scans, scatter reductions, TopK's comparisons, Range)
// dispatch on the element type (NumericTypes.h). Every index an input supplies
// is checked before anything is written; an out-of-range one is an
// InvalidArgument naming it. Outputs never overlap inputs (the memory plan
// gives a step's outputs their own bytes).
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/NumericTypes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <numeric>

namespace ortc::cpu::kernels {

namespace {

//===----------------------------------------------------------------------===//
// Checks shared by these kernels
//===----------------------------------------------------------------------===//

/// Input i, present (an empty tensor counts), or "missing <role>".
Status need(const char *op, const KernelCall &call, size_t i, const char *role,
            const TensorView *&t) {
  t = dataInput(call, i);
  return t ? Status::ok() : invalid(op, std::string("missing ") + role);
}

/// need(), and an element type the runtime knows the size of.
Status needSized(const char *op, const KernelCall &call, size_t i, const char *role,
                 const TensorView *&t) {
  if (Status s = need(op, call, i, role, t); !s.isOk())
    return s;
  if (elementSize(t->type) == 0)
    return invalid(op,
                   std::string(role) + " has unsupported element type " + elementTypeName(t->type));
  return Status::ok();
}

/// Output i exists with element type `type` and shape `shape`.
Status needOutput(const char *op, const KernelCall &call, size_t i, ElementType type,
                  const std::vector<int64_t> &shape, const TensorView *&Y) {
  if (i >= call.numOutputs)
    return invalid(op, "missing output " + std::to_string(i));
  if (call.outputs[i].type != type)
    return invalid(op, "output " + std::to_string(i) + " is " +
                           elementTypeName(call.outputs[i].type) + ", should be " +
                           elementTypeName(type));
  // Sized by the data (a K or a range bound computed at run time): the
  // executor allocates it now and updates call.outputs[i].
  if (Result<TensorView> sized = sizedOutput(op, call, i, shape); !sized.isOk())
    return sized.status();
  Y = &call.outputs[i];
  return Status::ok();
}

bool isIndexType(ElementType t) { return t == ElementType::Int64 || t == ElementType::Int32; }

Status needIndices(const char *op, const TensorView &t, const char *role) {
  if (!isIndexType(t.type))
    return invalid(op,
                   std::string(role) + " must be int32 or int64, got " + elementTypeName(t.type));
  return Status::ok();
}

int64_t indexAt(const TensorView &t, int64_t i) {
  return t.type == ElementType::Int64 ? static_cast<const int64_t *>(t.data)[i]
                                      : static_cast<const int32_t *>(t.data)[i];
}

/// A one-element int32/int64 tensor (rank 0, or one element of any rank).
Status readScalarIndex(const char *op, const TensorView *t, const char *role, int64_t &v) {
  if (!t)
    return invalid(op, std::string("missing ") + role);
  if (Status s = needIndices(op, *t, role); !s.isOk())
    return s;
  if (t->numElements() != 1)
    return invalid(op, std::string(role) + " must have one element, got shape " +
                           shapeToString(t->shape));
  v = indexAt(*t, 0);
  return Status::ok();
}

/// Normalizes index `v` for a dim of size `dim` ([-dim, dim) accepted).
Status checkIndex(const char *op, int64_t &v, int64_t dim, const std::string &where) {
  if (v < -dim || v >= dim)
    return invalid(op, "index " + std::to_string(v) + " is out of range for " + where +
                           " of size " + std::to_string(dim));
  if (v < 0)
    v += dim;
  return Status::ok();
}

std::string axisWhere(int64_t axis) { return "axis " + std::to_string(axis); }

/// Advances a row-major multi-index over `dims`.
void nextIndex(std::vector<int64_t> &idx, const std::vector<int64_t> &dims) {
  for (size_t d = dims.size(); d-- > 0;) {
    if (++idx[d] < dims[d])
      return;
    idx[d] = 0;
  }
}

char *bytesOf(const TensorView &t) { return static_cast<char *>(t.data); }
const char *cbytesOf(const TensorView &t) { return static_cast<const char *>(t.data); }

void copyBytes(void *dst, const void *src, size_t n) {
  if (n)
    std::memcpy(dst, src, n);
}

//===----------------------------------------------------------------------===//
// Scatter reductions
//===----------------------------------------------------------------------===//

enum class Reduction { None, Add, Mul, Max, Min };

Status readReduction(const char *op, const StepAttributes &attrs, Reduction &r, std::string &name) {
  name = attrs.getString("reduction", "none");
  if (name == "none")
    r = Reduction::None;
  else if (name == "add")
    r = Reduction::Add;
  else if (name == "mul")
    r = Reduction::Mul;
  else if (name == "max")
    r = Reduction::Max;
  else if (name == "min")
    r = Reduction::Min;
  else
    return invalid(op, "unsupported reduction '" + name + "'");
  return Status::ok();
}

/// dst[i] = reduce(dst[i], src[i]) for n elements.
using CombineFn = void (*)(void *dst, const void *src, int64_t n);

template <typename T, Reduction R> void combineN(void *dst, const void *src, int64_t n) {
  T *d = static_cast<T *>(dst);
  const T *s = static_cast<const T *>(src);
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (R == Reduction::Add)
      d[i] = wrapAdd(d[i], s[i]);
    else if constexpr (R == Reduction::Mul)
      d[i] = wrapMul(d[i], s[i]);
    else if constexpr (R == Reduction::Max)
      d[i] = nanMax(d[i], s[i]);
    else
      d[i] = nanMin(d[i], s[i]);
  }
}

/// The combine function of reduction `r` on `type`; nullptr for none (copy).
Status pickCombine(const char *op, ElementType type, Reduction r, const std::string &name,
                   CombineFn &fn) {
  fn = nullptr;
  if (r == Reduction::None)
    return Status::ok();
  bool ok = visitArithmetic(type, [&](auto tag) {
    using T = decltype(tag);
    switch (r) {
    case Reduction::Add:
      fn = combineN<T, Reduction::Add>;
      break;
    case Reduction::Mul:
      fn = combineN<T, Reduction::Mul>;
      break;
    case Reduction::Max:
      fn = combineN<T, Reduction::Max>;
      break;
    default:
      fn = combineN<T, Reduction::Min>;
      break;
    }
  });
  if (!ok)
    return invalid(op, "reduction '" + name + "' needs float32, float64 or an integer type, got " +
                           elementTypeName(type));
  return Status::ok();
}

struct Scatterer {
  CombineFn fn;
  size_t elem;
  void operator()(char *dst, const char *src, int64_t n) const {
    if (fn)
      fn(dst, src, n);
    else
      copyBytes(dst, src, size_t(n) * elem);
  }
};

} // namespace

//===----------------------------------------------------------------------===//
// Trilu
//===----------------------------------------------------------------------===//

Status trilu(const KernelCall &call) {
  const char *op = "Trilu";
  const TensorView *X, *Y;
  if (Status s = needSized(op, call, 0, "input", X); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  if (rank < 2)
    return invalid(op, "input must have rank >= 2, got " + shapeToString(X->shape));
  int64_t k = 0;
  if (const TensorView *K = dataInput(call, 1))
    if (Status s = readScalarIndex(op, K, "k", k); !s.isOk())
      return s;
  if (Status s = needOutput(op, call, 0, X->type, X->shape, Y); !s.isOk())
    return s;
  bool upper = call.attrs.getInt("upper", 1) != 0;
  int64_t N = X->shape[rank - 2], M = X->shape[rank - 1];
  int64_t batches = product(X->shape, 0, rank - 2);
  k = std::clamp<int64_t>(k, -(N + 1), M + 1);
  size_t elem = elementSize(X->type);
  const char *x = cbytesOf(*X);
  char *y = bytesOf(*Y);
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t i = 0; i < N; ++i) {
      // Columns [lo, hi) of row i are kept, the rest are zero.
      int64_t lo = upper ? std::clamp<int64_t>(i + k, 0, M) : 0;
      int64_t hi = upper ? M : std::clamp<int64_t>(i + k + 1, 0, M);
      size_t row = size_t((b * N + i) * M) * elem;
      if (lo > 0)
        std::memset(y + row, 0, size_t(lo) * elem);
      copyBytes(y + row + size_t(lo) * elem, x + row + size_t(lo) * elem, size_t(hi - lo) * elem);
      if (hi < M)
        std::memset(y + row + size_t(hi) * elem, 0, size_t(M - hi) * elem);
    }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// CumSum, CumProd
//===----------------------------------------------------------------------===//

namespace {

template <typename T>
void scanTyped(const T *x, T *y, int64_t outer, int64_t dim, int64_t inner, bool exclusive,
               bool reverse, bool prod) {
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      T acc = prod ? T(1) : T(0);
      for (int64_t t = 0; t < dim; ++t) {
        int64_t p = reverse ? dim - 1 - t : t;
        int64_t at = (o * dim + p) * inner + in;
        T v = x[at];
        if (exclusive)
          y[at] = acc;
        acc = prod ? wrapMul(acc, v) : wrapAdd(acc, v);
        if (!exclusive)
          y[at] = acc;
      }
    }
}

Status scan(const KernelCall &call, const char *op, bool prod) {
  const TensorView *X, *Y;
  if (Status s = needSized(op, call, 0, "input x", X); !s.isOk())
    return s;
  int64_t axis;
  if (Status s = readScalarIndex(op, dataInput(call, 1), "axis", axis); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  int64_t given = axis;
  if (!normalizeAxis(axis, rank))
    return invalid(op, "axis " + std::to_string(given) + " out of range for rank " +
                           std::to_string(rank));
  if (Status s = needOutput(op, call, 0, X->type, X->shape, Y); !s.isOk())
    return s;
  bool exclusive = call.attrs.getInt("exclusive", 0) != 0;
  bool reverse = call.attrs.getInt("reverse", 0) != 0;
  int64_t outer = product(X->shape, 0, axis), dim = X->shape[axis];
  int64_t inner = product(X->shape, axis + 1, rank);
  bool ok = visitArithmetic(X->type, [&](auto tag) {
    using T = decltype(tag);
    scanTyped<T>(static_cast<const T *>(X->data), static_cast<T *>(Y->data), outer, dim, inner,
                 exclusive, reverse, prod);
  });
  if (!ok)
    return invalid(op, "input x must be float32, float64 or an integer type, got " +
                           elementTypeName(X->type));
  return Status::ok();
}

} // namespace

Status cumSum(const KernelCall &call) { return scan(call, "CumSum", false); }
Status cumProd(const KernelCall &call) { return scan(call, "CumProd", true); }

//===----------------------------------------------------------------------===//
// ScatterElements, ScatterND, TensorScatter
//===----------------------------------------------------------------------===//

Status scatterElements(const KernelCall &call) {
  const char *op = "ScatterElements";
  const TensorView *X, *I, *U, *Y;
  if (Status s = needSized(op, call, 0, "data", X); !s.isOk())
    return s;
  if (Status s = need(op, call, 1, "indices", I); !s.isOk())
    return s;
  if (Status s = need(op, call, 2, "updates", U); !s.isOk())
    return s;
  if (Status s = needIndices(op, *I, "indices"); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  if (rank == 0)
    return invalid(op, "data must have rank >= 1");
  if (U->type != X->type)
    return invalid(op, "updates is " + elementTypeName(U->type) + ", data is " +
                           elementTypeName(X->type));
  if (I->shape.size() != rank || U->shape != I->shape)
    return invalid(op, "indices " + shapeToString(I->shape) + " and updates " +
                           shapeToString(U->shape) + " must have one shape of data's rank " +
                           std::to_string(rank));
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, 0, rank, axis); !s.isOk())
    return s;
  for (size_t d = 0; d < rank; ++d)
    if (int64_t(d) != axis && I->shape[d] > X->shape[d])
      return invalid(op, "indices " + shapeToString(I->shape) + " exceed data " +
                             shapeToString(X->shape) + " off the axis");
  Reduction r;
  std::string rname;
  if (Status s = readReduction(op, call.attrs, r, rname); !s.isOk())
    return s;
  size_t elem = elementSize(X->type);
  Scatterer apply{nullptr, elem};
  if (Status s = pickCombine(op, X->type, r, rname, apply.fn); !s.isOk())
    return s;
  if (Status s = needOutput(op, call, 0, X->type, X->shape, Y); !s.isOk())
    return s;
  int64_t n = I->numElements(), dim = X->shape[axis];
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = indexAt(*I, i);
    if (Status s = checkIndex(op, v, dim, axisWhere(axis)); !s.isOk())
      return s;
  }
  copyBytes(Y->data, X->data, X->byteSize());
  std::vector<int64_t> strides = denseStrides(X->shape), idx(rank, 0);
  char *y = bytesOf(*Y);
  const char *u = cbytesOf(*U);
  for (int64_t i = 0; i < n; ++i, nextIndex(idx, I->shape)) {
    int64_t v = indexAt(*I, i);
    if (v < 0)
      v += dim;
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d)
      off += (int64_t(d) == axis ? v : idx[d]) * strides[d];
    apply(y + size_t(off) * elem, u + size_t(i) * elem, 1);
  }
  return Status::ok();
}

Status scatterND(const KernelCall &call) {
  const char *op = "ScatterND";
  const TensorView *X, *I, *U, *Y;
  if (Status s = needSized(op, call, 0, "data", X); !s.isOk())
    return s;
  if (Status s = need(op, call, 1, "indices", I); !s.isOk())
    return s;
  if (Status s = need(op, call, 2, "updates", U); !s.isOk())
    return s;
  if (Status s = needIndices(op, *I, "indices"); !s.isOk())
    return s;
  size_t r = X->shape.size(), q = I->shape.size();
  if (r == 0 || q == 0)
    return invalid(op, "data and indices must have rank >= 1");
  int64_t k = I->shape[q - 1];
  if (k < 1 || k > int64_t(r))
    return invalid(op, "indices' last dim " + std::to_string(k) + " must be in [1, " +
                           std::to_string(r) + "]");
  if (U->type != X->type)
    return invalid(op, "updates is " + elementTypeName(U->type) + ", data is " +
                           elementTypeName(X->type));
  std::vector<int64_t> updShape(I->shape.begin(), I->shape.end() - 1);
  updShape.insert(updShape.end(), X->shape.begin() + k, X->shape.end());
  if (U->shape != updShape)
    return invalid(op, "updates shape " + shapeToString(U->shape) + " should be " +
                           shapeToString(updShape));
  Reduction red;
  std::string rname;
  if (Status s = readReduction(op, call.attrs, red, rname); !s.isOk())
    return s;
  size_t elem = elementSize(X->type);
  Scatterer apply{nullptr, elem};
  if (Status s = pickCombine(op, X->type, red, rname, apply.fn); !s.isOk())
    return s;
  if (Status s = needOutput(op, call, 0, X->type, X->shape, Y); !s.isOk())
    return s;
  int64_t tuples = product(I->shape, 0, q - 1), slice = product(X->shape, size_t(k), r);
  for (int64_t t = 0; t < tuples; ++t)
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = indexAt(*I, t * k + j);
      if (Status s = checkIndex(op, v, X->shape[j], axisWhere(j)); !s.isOk())
        return s;
    }
  copyBytes(Y->data, X->data, X->byteSize());
  std::vector<int64_t> strides = denseStrides(X->shape);
  char *y = bytesOf(*Y);
  const char *u = cbytesOf(*U);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = indexAt(*I, t * k + j);
      off += (v < 0 ? v + X->shape[j] : v) * strides[j];
    }
    apply(y + size_t(off) * elem, u + size_t(t * slice) * elem, slice);
  }
  return Status::ok();
}

Status tensorScatter(const KernelCall &call) {
  const char *op = "TensorScatter";
  const TensorView *P, *U, *Y;
  if (Status s = needSized(op, call, 0, "past_cache", P); !s.isOk())
    return s;
  if (Status s = need(op, call, 1, "update", U); !s.isOk())
    return s;
  size_t rank = P->shape.size();
  if (rank < 2)
    return invalid(op, "past_cache must have rank >= 2, got " + shapeToString(P->shape));
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, -2, rank, axis); !s.isOk())
    return s;
  if (axis == 0)
    return invalid(op, "axis must not be the batch axis 0");
  std::string mode = call.attrs.getString("mode", "linear");
  if (mode != "linear" && mode != "circular")
    return invalid(op, "unsupported mode '" + mode + "'");
  if (U->type != P->type)
    return invalid(op, "update is " + elementTypeName(U->type) + ", past_cache is " +
                           elementTypeName(P->type));
  bool fits = U->shape.size() == rank;
  for (size_t d = 0; fits && d < rank; ++d)
    fits = int64_t(d) == axis ? U->shape[d] <= P->shape[d] : U->shape[d] == P->shape[d];
  if (!fits)
    return invalid(op, "update " + shapeToString(U->shape) + " does not fit past_cache " +
                           shapeToString(P->shape) + " along axis " + std::to_string(axis));
  int64_t batch = P->shape[0];
  const TensorView *W = dataInput(call, 2);
  if (W) {
    if (Status s = needIndices(op, *W, "write_indices"); !s.isOk())
      return s;
    if (W->shape != std::vector<int64_t>{batch})
      return invalid(op, "write_indices shape " + shapeToString(W->shape) + " should be [" +
                             std::to_string(batch) + "]");
  }
  if (Status s = needOutput(op, call, 0, P->type, P->shape, Y); !s.isOk())
    return s;
  int64_t maxSeq = P->shape[axis], seq = U->shape[axis];
  bool circular = mode == "circular";
  auto start = [&](int64_t b) { return W ? indexAt(*W, b) : 0; };
  for (int64_t b = 0; b < batch; ++b) {
    int64_t w = start(b);
    if (w < 0 || (!circular && w + seq > maxSeq) || (circular && seq > 0 && w >= maxSeq))
      return invalid(op, "write index " + std::to_string(w) + " of batch " + std::to_string(b) +
                             " does not fit " + std::to_string(seq) + " of " +
                             std::to_string(maxSeq) + " positions (" + mode + " mode)");
  }
  copyBytes(Y->data, P->data, P->byteSize());
  size_t elem = elementSize(P->type);
  int64_t prefix = product(P->shape, 0, axis), perBatch = product(P->shape, 1, axis);
  size_t block = size_t(product(P->shape, axis + 1, rank)) * elem;
  char *y = bytesOf(*Y);
  const char *u = cbytesOf(*U);
  for (int64_t p = 0; p < prefix; ++p) {
    int64_t w = start(p / perBatch);
    for (int64_t s = 0; s < seq; ++s) {
      int64_t c = circular ? (w + s) % maxSeq : w + s;
      copyBytes(y + size_t(p * maxSeq + c) * block, u + size_t(p * seq + s) * block, block);
    }
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// GatherElements, GatherND
//===----------------------------------------------------------------------===//

Status gatherElements(const KernelCall &call) {
  const char *op = "GatherElements";
  const TensorView *X, *I, *Y;
  if (Status s = needSized(op, call, 0, "data", X); !s.isOk())
    return s;
  if (Status s = need(op, call, 1, "indices", I); !s.isOk())
    return s;
  if (Status s = needIndices(op, *I, "indices"); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  if (rank == 0 || I->shape.size() != rank)
    return invalid(op, "indices " + shapeToString(I->shape) + " must have data's rank " +
                           std::to_string(rank) + " (>= 1)");
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, 0, rank, axis); !s.isOk())
    return s;
  for (size_t d = 0; d < rank; ++d)
    if (int64_t(d) != axis && I->shape[d] > X->shape[d])
      return invalid(op, "indices " + shapeToString(I->shape) + " exceed data " +
                             shapeToString(X->shape) + " off the axis");
  if (Status s = needOutput(op, call, 0, X->type, I->shape, Y); !s.isOk())
    return s;
  int64_t n = I->numElements(), dim = X->shape[axis];
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = indexAt(*I, i);
    if (Status s = checkIndex(op, v, dim, axisWhere(axis)); !s.isOk())
      return s;
  }
  size_t elem = elementSize(X->type);
  std::vector<int64_t> strides = denseStrides(X->shape), idx(rank, 0);
  const char *x = cbytesOf(*X);
  char *y = bytesOf(*Y);
  for (int64_t i = 0; i < n; ++i, nextIndex(idx, I->shape)) {
    int64_t v = indexAt(*I, i);
    if (v < 0)
      v += dim;
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d)
      off += (int64_t(d) == axis ? v : idx[d]) * strides[d];
    std::memcpy(y + size_t(i) * elem, x + size_t(off) * elem, elem);
  }
  return Status::ok();
}

Status gatherND(const KernelCall &call) {
  const char *op = "GatherND";
  const TensorView *X, *I, *Y;
  if (Status s = needSized(op, call, 0, "data", X); !s.isOk())
    return s;
  if (Status s = need(op, call, 1, "indices", I); !s.isOk())
    return s;
  if (Status s = needIndices(op, *I, "indices"); !s.isOk())
    return s;
  int64_t r = int64_t(X->shape.size()), q = int64_t(I->shape.size());
  int64_t b = call.attrs.getInt("batch_dims", 0);
  if (r < 1 || q < 1 || b < 0 || b >= std::min(r, q))
    return invalid(op, "batch_dims " + std::to_string(b) + " must be below the ranks of data " +
                           shapeToString(X->shape) + " and indices " + shapeToString(I->shape));
  int64_t k = I->shape[q - 1];
  if (k > r - b)
    return invalid(op, "indices' last dim " + std::to_string(k) + " exceeds data's rank " +
                           std::to_string(r) + " less batch_dims " + std::to_string(b));
  for (int64_t d = 0; d < b; ++d)
    if (I->shape[d] != X->shape[d])
      return invalid(op, "batch dim " + std::to_string(d) + " of indices " +
                             shapeToString(I->shape) + " differs from data " +
                             shapeToString(X->shape));
  std::vector<int64_t> outShape(I->shape.begin(), I->shape.end() - 1);
  outShape.insert(outShape.end(), X->shape.begin() + b + k, X->shape.end());
  if (Status s = needOutput(op, call, 0, X->type, outShape, Y); !s.isOk())
    return s;
  int64_t batches = product(X->shape, 0, size_t(b));
  int64_t perBatch = product(I->shape, size_t(b), size_t(q - 1));
  int64_t slice = product(X->shape, size_t(b + k), size_t(r));
  int64_t batchStride = product(X->shape, size_t(b), size_t(r));
  std::vector<int64_t> strides = denseStrides(X->shape);
  int64_t tuples = batches * perBatch;
  for (int64_t t = 0; t < tuples; ++t)
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = indexAt(*I, t * k + j);
      if (Status s = checkIndex(op, v, X->shape[b + j], axisWhere(b + j)); !s.isOk())
        return s;
    }
  size_t elem = elementSize(X->type);
  size_t block = size_t(slice) * elem;
  const char *x = cbytesOf(*X);
  char *y = bytesOf(*Y);
  for (int64_t t = 0; t < tuples; ++t) {
    int64_t off = (t / perBatch) * batchStride;
    for (int64_t j = 0; j < k; ++j) {
      int64_t v = indexAt(*I, t * k + j);
      off += (v < 0 ? v + X->shape[b + j] : v) * strides[b + j];
    }
    copyBytes(y + size_t(t) * block, x + size_t(off) * elem, block);
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

namespace {

/// a > b with NaN above every number (numpy's sort order).
template <typename T> bool greaterNanHigh(T a, T b) {
  if constexpr (std::is_floating_point_v<T>) {
    if (std::isnan(a))
      return !std::isnan(b);
    if (std::isnan(b))
      return false;
  }
  return a > b;
}

template <typename T>
void topKTyped(const T *x, T *values, int64_t *indices, int64_t outer, int64_t dim, int64_t inner,
               int64_t k, bool largest) {
  std::vector<int64_t> order(static_cast<size_t>(dim));
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      const T *row = x + o * dim * inner + in;
      auto at = [&](int64_t i) { return row[i * inner]; };
      // A strict total order: by value, equal values by the lower index.
      auto before = [&](int64_t a, int64_t b) {
        T va = at(a), vb = at(b);
        bool first = largest ? greaterNanHigh(va, vb) : greaterNanHigh(vb, va);
        bool second = largest ? greaterNanHigh(vb, va) : greaterNanHigh(va, vb);
        return first || (!second && a < b);
      };
      std::iota(order.begin(), order.end(), int64_t(0));
      std::partial_sort(order.begin(), order.begin() + k, order.end(), before);
      for (int64_t j = 0; j < k; ++j) {
        int64_t out = (o * k + j) * inner + in;
        if (values)
          values[out] = at(order[size_t(j)]);
        if (indices)
          indices[out] = order[size_t(j)];
      }
    }
}

} // namespace

Status topK(const KernelCall &call) {
  const char *op = "TopK";
  const TensorView *X, *V, *I;
  if (Status s = needSized(op, call, 0, "input X", X); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  int64_t k, axis;
  if (Status s = readScalarIndex(op, dataInput(call, 1), "K", k); !s.isOk())
    return s;
  if (Status s = readAxis(op, call.attrs, -1, rank, axis); !s.isOk())
    return s;
  int64_t dim = X->shape[axis];
  if (k < 0 || k > dim)
    return invalid(op, "K " + std::to_string(k) + " is out of range for axis " +
                           std::to_string(axis) + " of size " + std::to_string(dim));
  std::vector<int64_t> outShape = X->shape;
  outShape[axis] = k;
  if (Status s = needOutput(op, call, 0, X->type, outShape, V); !s.isOk())
    return s;
  if (Status s = needOutput(op, call, 1, ElementType::Int64, outShape, I); !s.isOk())
    return s;
  bool largest = call.attrs.getInt("largest", 1) != 0;
  int64_t outer = product(X->shape, 0, axis), inner = product(X->shape, axis + 1, rank);
  bool ok = visitArithmetic(X->type, [&](auto tag) {
    using T = decltype(tag);
    topKTyped<T>(static_cast<const T *>(X->data), static_cast<T *>(V->data),
                 static_cast<int64_t *>(I->data), outer, dim, inner, k, largest);
  });
  if (!ok)
    return invalid(op, "input X must be float32, float64 or an integer type, got " +
                           elementTypeName(X->type));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// OneHot, EyeLike
//===----------------------------------------------------------------------===//

namespace {

/// Element i of a numeric tensor as int64 (floats truncated toward zero, as
/// ONNX's cast to int64); false for NaN or a value beyond int64.
bool numericAsInt(const TensorView &t, int64_t i, int64_t &out) {
  bool inRange = true;
  visitArithmetic(t.type, [&](auto tag) {
    using T = decltype(tag);
    T v = static_cast<const T *>(t.data)[i];
    if constexpr (std::is_floating_point_v<T>) {
      inRange = v > -9.2e18 && v < 9.2e18; // false for NaN too
      out = inRange ? int64_t(v) : 0;
    } else if constexpr (std::is_same_v<T, uint64_t>) {
      inRange = v <= uint64_t(std::numeric_limits<int64_t>::max());
      out = int64_t(v);
    } else {
      out = int64_t(v);
    }
  });
  return inRange;
}

bool isNumeric(ElementType type) {
  return visitArithmetic(type, [](auto) {});
}

} // namespace

Status oneHot(const KernelCall &call) {
  const char *op = "OneHot";
  const TensorView *I, *D, *Vals, *Y;
  if (Status s = need(op, call, 0, "indices", I); !s.isOk())
    return s;
  if (Status s = need(op, call, 1, "depth", D); !s.isOk())
    return s;
  if (Status s = needSized(op, call, 2, "values", Vals); !s.isOk())
    return s;
  if (!isNumeric(I->type) || !isNumeric(D->type))
    return invalid(op, "indices and depth must be float32, float64 or integers, got " +
                           elementTypeName(I->type) + " and " + elementTypeName(D->type));
  if (D->numElements() != 1)
    return invalid(op, "depth must have one element, got shape " + shapeToString(D->shape));
  if (Vals->numElements() != 2)
    return invalid(op, "values must have 2 elements, got shape " + shapeToString(Vals->shape));
  int64_t depth;
  if (!numericAsInt(*D, 0, depth) || depth < 1)
    return invalid(op, "depth must be a positive integer");
  size_t rank = I->shape.size();
  int64_t axis = call.attrs.getInt("axis", -1);
  int64_t given = axis;
  if (!normalizeAxis(axis, rank + 1))
    return invalid(op, "axis " + std::to_string(given) + " out of range for rank " +
                           std::to_string(rank + 1));
  std::vector<int64_t> outShape(I->shape.begin(), I->shape.begin() + axis);
  outShape.push_back(depth);
  outShape.insert(outShape.end(), I->shape.begin() + axis, I->shape.end());
  if (Status s = needOutput(op, call, 0, Vals->type, outShape, Y); !s.isOk())
    return s;
  size_t elem = elementSize(Vals->type);
  const char *off = cbytesOf(*Vals), *on = off + elem;
  char *y = bytesOf(*Y);
  int64_t total = Y->numElements();
  for (int64_t i = 0; i < total; ++i)
    std::memcpy(y + size_t(i) * elem, off, elem);
  int64_t outer = product(I->shape, 0, axis), inner = product(I->shape, axis, rank);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t in = 0; in < inner; ++in) {
      int64_t v;
      if (!numericAsInt(*I, o * inner + in, v))
        continue;
      if (v < 0)
        v += depth;
      if (v < 0 || v >= depth)
        continue; // out of range: all off_value
      std::memcpy(y + size_t((o * depth + v) * inner + in) * elem, on, elem);
    }
  return Status::ok();
}

namespace {

/// The bytes of 1 in `type`; false if the type has none here.
bool oneOf(ElementType type, unsigned char *bytes) {
  std::memset(bytes, 0, 8);
  auto put = [&](auto v) { std::memcpy(bytes, &v, sizeof(v)); };
  switch (type) {
  case ElementType::Float:
    put(1.0f);
    return true;
  case ElementType::Double:
    put(1.0);
    return true;
  case ElementType::Float16:
    put(uint16_t(0x3c00));
    return true;
  case ElementType::BFloat16:
    put(uint16_t(0x3f80));
    return true;
  case ElementType::Bool:
  case ElementType::Int8:
  case ElementType::UInt8:
  case ElementType::Int16:
  case ElementType::UInt16:
  case ElementType::Int32:
  case ElementType::UInt32:
  case ElementType::Int64:
  case ElementType::UInt64:
    bytes[0] = 1; // little endian
    return true;
  default:
    return false;
  }
}

} // namespace

Status eyeLike(const KernelCall &call) {
  const char *op = "EyeLike";
  const TensorView *X, *Y;
  if (Status s = need(op, call, 0, "input", X); !s.isOk())
    return s;
  if (X->shape.size() != 2)
    return invalid(op, "input must be 2-D, got " + shapeToString(X->shape));
  ElementType type =
      call.attrs.has("dtype") ? ElementType(int32_t(call.attrs.getInt("dtype", 0))) : X->type;
  unsigned char one[8];
  if (elementSize(type) == 0 || !oneOf(type, one))
    return invalid(op, "unsupported output element type " + elementTypeName(type));
  if (Status s = needOutput(op, call, 0, type, X->shape, Y); !s.isOk())
    return s;
  int64_t k = call.attrs.getInt("k", 0);
  int64_t N = X->shape[0], M = X->shape[1];
  size_t elem = elementSize(type);
  char *y = bytesOf(*Y);
  if (Y->byteSize())
    std::memset(y, 0, Y->byteSize());
  for (int64_t i = 0; i < N; ++i) {
    int64_t j = i + k;
    if (j >= 0 && j < M)
      std::memcpy(y + size_t(i * M + j) * elem, one, elem);
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// ReverseSequence
//===----------------------------------------------------------------------===//

Status reverseSequence(const KernelCall &call) {
  const char *op = "ReverseSequence";
  const TensorView *X, *L, *Y;
  if (Status s = needSized(op, call, 0, "input", X); !s.isOk())
    return s;
  if (Status s = need(op, call, 1, "sequence_lens", L); !s.isOk())
    return s;
  if (Status s = needIndices(op, *L, "sequence_lens"); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  if (rank < 2)
    return invalid(op, "input must have rank >= 2, got " + shapeToString(X->shape));
  int64_t batchAxis = call.attrs.getInt("batch_axis", 1);
  int64_t timeAxis = call.attrs.getInt("time_axis", 0);
  if (!((batchAxis == 0 && timeAxis == 1) || (batchAxis == 1 && timeAxis == 0)))
    return invalid(op, "batch_axis " + std::to_string(batchAxis) + " and time_axis " +
                           std::to_string(timeAxis) + " must be 0 and 1 in some order");
  int64_t B = X->shape[batchAxis], T = X->shape[timeAxis];
  if (L->shape != std::vector<int64_t>{B})
    return invalid(op, "sequence_lens shape " + shapeToString(L->shape) + " should be [" +
                           std::to_string(B) + "]");
  for (int64_t b = 0; b < B; ++b) {
    int64_t len = indexAt(*L, b);
    if (len < 0 || len > T)
      return invalid(op, "sequence length " + std::to_string(len) + " of batch " +
                             std::to_string(b) + " is out of range [0, " + std::to_string(T) + "]");
  }
  if (Status s = needOutput(op, call, 0, X->type, X->shape, Y); !s.isOk())
    return s;
  size_t elem = elementSize(X->type);
  int64_t inner = product(X->shape, 2, rank);
  int64_t stride0 = X->shape[1] * inner, stride1 = inner;
  int64_t sb = batchAxis == 0 ? stride0 : stride1, st = timeAxis == 0 ? stride0 : stride1;
  size_t block = size_t(inner) * elem;
  const char *x = cbytesOf(*X);
  char *y = bytesOf(*Y);
  for (int64_t b = 0; b < B; ++b) {
    int64_t len = indexAt(*L, b);
    for (int64_t t = 0; t < T; ++t) {
      int64_t from = t < len ? len - 1 - t : t;
      copyBytes(y + size_t(b * sb + t * st) * elem, x + size_t(b * sb + from * st) * elem, block);
    }
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Range
//===----------------------------------------------------------------------===//

namespace {

/// A one-element tensor of a Range input as double (floats, halves) or int64.
bool rangeScalar(const TensorView &t, double &f, int64_t &i) {
  if (t.numElements() != 1)
    return false;
  switch (t.type) {
  case ElementType::Float16:
    f = halfToFloat(*static_cast<const uint16_t *>(t.data));
    return true;
  case ElementType::BFloat16:
    f = bf16ToFloat(*static_cast<const uint16_t *>(t.data));
    return true;
  default:
    break;
  }
  bool ok = false;
  visitArithmetic(t.type, [&](auto tag) {
    using T = decltype(tag);
    T v = *static_cast<const T *>(t.data);
    if constexpr (std::is_floating_point_v<T>)
      f = double(v);
    else if constexpr (!std::is_same_v<T, uint64_t>)
      i = int64_t(v);
    ok = !std::is_same_v<T, uint64_t>;
  });
  return ok;
}

} // namespace

Status range(const KernelCall &call) {
  const char *op = "Range";
  const TensorView *S, *L, *D, *Y;
  if (Status s = need(op, call, 0, "start", S); !s.isOk())
    return s;
  if (Status s = need(op, call, 1, "limit", L); !s.isOk())
    return s;
  if (Status s = need(op, call, 2, "delta", D); !s.isOk())
    return s;
  ElementType type = S->type;
  if (L->type != type || D->type != type)
    return invalid(op, "start, limit and delta must have one element type, got " +
                           elementTypeName(type) + ", " + elementTypeName(L->type) + ", " +
                           elementTypeName(D->type));
  double fs = 0, fl = 0, fd = 0;
  int64_t is = 0, il = 0, id = 0;
  if (!rangeScalar(*S, fs, is) || !rangeScalar(*L, fl, il) || !rangeScalar(*D, fd, id))
    return invalid(op, "start, limit and delta must be single float or signed integer values, "
                       "got " +
                           elementTypeName(type) + " " + shapeToString(S->shape) + ", " +
                           shapeToString(L->shape) + ", " + shapeToString(D->shape));
  bool isFloat = type == ElementType::Float || type == ElementType::Double ||
                 type == ElementType::Float16 || type == ElementType::BFloat16;
  int64_t count;
  if (isFloat) {
    if (fd == 0 || !std::isfinite(fs) || !std::isfinite(fl) || !std::isfinite(fd))
      return invalid(op, "start, limit and delta must be finite and delta non-zero");
    double n = std::ceil((fl - fs) / fd);
    if (n > 9.0e15)
      return invalid(op, "too many elements");
    count = n > 0 ? int64_t(n) : 0;
  } else {
    if (id == 0)
      return invalid(op, "delta must be non-zero");
    __extension__ typedef __int128 Wide;
    Wide diff = Wide(il) - Wide(is), n = diff / id;
    if (n * id != diff && ((diff > 0) == (id > 0)))
      n += 1; // ceil of a positive quotient
    count = n > 0 ? int64_t(n) : 0;
  }
  if (Status s = needOutput(op, call, 0, type, {count}, Y); !s.isOk())
    return s;
  // Low-precision floats are computed in float32 (stash_type 1, the default)
  // or float64 (11) and rounded once, as the ONNX reference does.
  bool stashDouble = call.attrs.getInt("stash_type", 1) == 11;
  for (int64_t i = 0; i < count; ++i) {
    switch (type) {
    case ElementType::Float:
      static_cast<float *>(Y->data)[i] = float(fs + double(i) * fd);
      break;
    case ElementType::Double:
      static_cast<double *>(Y->data)[i] = fs + double(i) * fd;
      break;
    case ElementType::Float16:
    case ElementType::BFloat16: {
      float v = stashDouble ? float(fs + double(i) * fd) : float(fs) + float(i) * float(fd);
      static_cast<uint16_t *>(Y->data)[i] =
          type == ElementType::Float16 ? floatToHalf(v) : floatToBf16(v);
      break;
    }
    default:
      visitArithmetic(type, [&](auto tag) {
        using T = decltype(tag);
        static_cast<T *>(Y->data)[i] = T(is + i * id);
      });
    }
  }
  return Status::ok();
}

} // namespace ortc::cpu::kernels
