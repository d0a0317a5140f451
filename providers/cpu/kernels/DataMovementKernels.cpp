//===- DataMovementKernels.cpp - layout and indexing ops ------------------===//
//
// These kernels move elements without looking at them, so they work for any
// element type by its size. Most reduce to one strided copy: a dense output
// walked in order, each element read from src + sum(index * stride), where a
// stride may be 0 (broadcast) or negative (reversed slice).
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "runtime/ep/SliceGeometry.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ortc::cpu::kernels {

namespace {

/// Input 0 (the data), or "missing input 0".
Status requireData(const char *op, const KernelCall &call, const TensorView *&X) {
  X = dataInput(call, 0);
  return X ? Status::ok() : invalid(op, "missing input 0");
}

/// requireData, then an element type the runtime knows the size of.
Status requireSizedData(const char *op, const KernelCall &call, const TensorView *&X,
                        size_t &elem) {
  if (Status s = requireData(op, call, X); !s.isOk())
    return s;
  elem = elementSize(X->type);
  if (elem == 0)
    return invalid(op, "unsupported element type " + elementTypeName(X->type));
  return Status::ok();
}

/// Input 0 present, output 0 of the same element type and of `expect` shape.
Status checkDataAndOutput(const char *op, const KernelCall &call,
                          const std::vector<int64_t> *expect = nullptr) {
  const TensorView *X;
  size_t elem;
  if (Status s = requireSizedData(op, call, X, elem); !s.isOk())
    return s;
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Y.type != X->type)
    return invalid(op, "output type " + elementTypeName(Y.type) + " differs from input type " +
                           elementTypeName(X->type));
  return expect ? checkOutputShape(op, Y, *expect) : Status::ok();
}

/// Reads a 1-D (or scalar) int32/int64 tensor.
Status readIndices(const char *op, const TensorView *t, const char *role,
                   std::vector<int64_t> &out) {
  out.clear();
  if (!t)
    return invalid(op, std::string("missing ") + role);
  if (t->shape.size() > 1)
    return invalid(op, std::string(role) + " must be 1-D, got " + shapeToString(t->shape));
  int64_t n = t->numElements();
  if (t->type == ElementType::Int64) {
    const int64_t *p = static_cast<const int64_t *>(t->data);
    out.assign(p, p + n);
  } else if (t->type == ElementType::Int32) {
    const int32_t *p = static_cast<const int32_t *>(t->data);
    out.assign(p, p + n);
  } else {
    return invalid(op,
                   std::string(role) + " must be int32 or int64, got " + elementTypeName(t->type));
  }
  return Status::ok();
}

/// readIndices of input i if present, else `fallback`.
Status readOptionalIndices(const char *op, const KernelCall &call, size_t i, const char *role,
                           std::vector<int64_t> &out, std::vector<int64_t> fallback) {
  if (const TensorView *t = dataInput(call, i))
    return readIndices(op, t, role, out);
  out = std::move(fallback);
  return Status::ok();
}

/// 0, 1, ..., n - 1: the axes an omitted axes list means.
std::vector<int64_t> allAxes(size_t n) {
  std::vector<int64_t> axes(n);
  for (size_t i = 0; i < n; ++i)
    axes[i] = int64_t(i);
  return axes;
}

template <typename T> void copyElements(char *dst, const char *src, int64_t n, int64_t stride) {
  T *d = reinterpret_cast<T *>(dst);
  const T *s = reinterpret_cast<const T *>(src);
  if (stride == 0) {
    T v;
    std::memcpy(&v, s, sizeof(T));
    std::fill(d, d + n, v);
    return;
  }
  for (int64_t i = 0; i < n; ++i) {
    T v;
    std::memcpy(&v, s + i * stride, sizeof(T));
    d[i] = v;
  }
}

/// n elements of `elem` bytes, src elements `stride` apart, into dense dst.
void copyRow(char *dst, const char *src, int64_t n, int64_t stride, size_t elem) {
  if (stride == 1) {
    std::memcpy(dst, src, size_t(n) * elem);
    return;
  }
  switch (elem) {
  case 1:
    return copyElements<uint8_t>(dst, src, n, stride);
  case 2:
    return copyElements<uint16_t>(dst, src, n, stride);
  case 4:
    return copyElements<uint32_t>(dst, src, n, stride);
  case 8:
    return copyElements<uint64_t>(dst, src, n, stride);
  default:
    for (int64_t i = 0; i < n; ++i)
      std::memcpy(dst + i * elem, src + i * stride * int64_t(elem), elem);
  }
}

/// Fills dense dst with the strided view of src: shape and strides (in
/// elements) per dim. Dims of size 1 are dropped and dims that are contiguous
/// in src are merged, so the inner loop is as long as possible.
void stridedCopy(void *dst, const void *src, const std::vector<int64_t> &shape,
                 const std::vector<int64_t> &strides, size_t elem) {
  std::vector<int64_t> dims, st;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0)
      return;
    if (shape[i] == 1)
      continue;
    if (!dims.empty() && st.back() == strides[i] * shape[i]) {
      dims.back() *= shape[i];
      st.back() = strides[i];
      continue;
    }
    dims.push_back(shape[i]);
    st.push_back(strides[i]);
  }
  char *d = static_cast<char *>(dst);
  const char *s = static_cast<const char *>(src);
  if (dims.empty()) {
    std::memcpy(d, s, elem);
    return;
  }
  size_t r = dims.size();
  int64_t inner = dims[r - 1], innerStride = st[r - 1];
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < r; ++i)
    rows *= dims[i];
  std::vector<int64_t> idx(r, 0);
  int64_t off = 0;
  for (int64_t row = 0; row < rows; ++row) {
    copyRow(d, s + off * int64_t(elem), inner, innerStride, elem);
    d += inner * int64_t(elem);
    // Advance the outer counters, odometer style.
    for (size_t i = r - 1; i-- > 0;) {
      if (++idx[i] < dims[i]) {
        off += st[i];
        break;
      }
      off -= st[i] * (dims[i] - 1);
      idx[i] = 0;
    }
  }
}

/// Fills `n` elements of `elem` bytes with the element at `value`.
void fillElements(char *dst, const char *value, int64_t n, size_t elem) {
  copyRow(dst, value, n, 0, elem);
}

/// The ending of the kernels that are one strided copy: output 0 checked
/// against `outShape`, then filled with the view of X that `shape` and
/// `strides` (elements) describe, starting `offset` elements into X.
Status writeStridedView(const char *op, const KernelCall &call, const TensorView &X,
                        const std::vector<int64_t> &outShape, const std::vector<int64_t> &shape,
                        const std::vector<int64_t> &strides, int64_t offset = 0) {
  if (Status s = checkDataAndOutput(op, call, &outShape); !s.isOk())
    return s;
  size_t elem = elementSize(X.type);
  stridedCopy(call.outputs[0].data, static_cast<const char *>(X.data) + offset * elem, shape,
              strides, elem);
  return Status::ok();
}

/// Concat's inputs or Split's outputs (`parts`, each called `partRole`)
/// against the whole tensor (`wholeRole`): the same element type, the same dims
/// off `axis`, and `axis` dims that add up to the whole's. Concat also wants
/// every non-empty part's data (`needData`).
Status checkParts(const char *op, const TensorView &whole, const char *wholeRole,
                  const TensorView *parts, size_t numParts, const char *partRole, int64_t axis,
                  bool needData) {
  size_t rank = whole.shape.size();
  int64_t total = 0;
  for (size_t i = 0; i < numParts; ++i) {
    const TensorView &part = parts[i];
    auto name = [&] { return std::string(partRole) + " " + std::to_string(i); };
    if (part.type != whole.type)
      return invalid(op, name() + " is " + elementTypeName(part.type) + ", " + wholeRole + " is " +
                             elementTypeName(whole.type));
    bool fits = part.shape.size() == rank;
    for (size_t d = 0; fits && d < rank; ++d)
      fits = int64_t(d) == axis || part.shape[d] == whole.shape[d];
    if (!fits)
      return invalid(op, name() + " " + shapeToString(part.shape) + " does not fit " + wholeRole +
                             " " + shapeToString(whole.shape) + " on axis " + std::to_string(axis));
    if (needData && !part.data && part.numElements() != 0)
      return invalid(op, "missing " + name());
    total += part.shape[axis];
  }
  if (total != whole.shape[axis])
    return invalid(op, std::string(partRole) + "s add up to " + std::to_string(total) +
                           " on axis " + std::to_string(axis) + ", " + wholeRole + " has " +
                           std::to_string(whole.shape[axis]));
  return Status::ok();
}

/// Concat (kJoin) copies the parts' rows into the whole's, Split the other
/// way. A row is everything from `axis` on; part i's share of the whole's row
/// follows the shares of the parts before it.
template <bool kJoin>
void copyParts(const TensorView &whole, const TensorView *parts, size_t numParts, int64_t axis,
               size_t elem) {
  size_t rank = whole.shape.size();
  int64_t outer = product(whole.shape, 0, axis), inner = product(whole.shape, axis + 1, rank);
  size_t wholeRow = size_t(whole.shape[axis] * inner) * elem;
  char *w = static_cast<char *>(whole.data);
  size_t at = 0;
  for (size_t i = 0; i < numParts; ++i) {
    size_t row = size_t(parts[i].shape[axis] * inner) * elem;
    if (row == 0)
      continue;
    char *p = static_cast<char *>(parts[i].data);
    for (int64_t o = 0; o < outer; ++o) {
      if (kJoin)
        std::memcpy(w + o * wholeRow + at, p + o * row, row);
      else
        std::memcpy(p + o * row, w + o * wholeRow + at, row);
    }
    at += row;
  }
}

} // namespace

//===----------------------------------------------------------------------===//
// Copy, Shape
//===----------------------------------------------------------------------===//

Status copy(const KernelCall &call) {
  const char *op = "Copy";
  if (Status s = checkDataAndOutput(op, call); !s.isOk())
    return s;
  const TensorView &X = *dataInput(call, 0), &Y = call.outputs[0];
  if (X.byteSize() != Y.byteSize())
    return invalid(op, "output " + shapeToString(Y.shape) + " and input " + shapeToString(X.shape) +
                           " differ in size");
  if (X.byteSize())
    std::memmove(Y.data, X.data, X.byteSize());
  return Status::ok();
}

/// Reshape, Squeeze and Unsqueeze whose shape or axes input is only known at
/// run time (a constant one makes them views with no step): the output shape
/// follows from that input, must be the planned one, and the bytes are copied.
Status copyIntoShape(const char *op, const KernelCall &call, const std::vector<int64_t> &shape) {
  if (Status s = checkDataAndOutput(op, call, &shape); !s.isOk())
    return s;
  const TensorView &X = *dataInput(call, 0), &Y = call.outputs[0];
  if (X.byteSize() != Y.byteSize())
    return invalid(op, "output " + shapeToString(Y.shape) + " and input " +
                           shapeToString(X.shape) + " differ in size");
  if (X.byteSize())
    std::memmove(Y.data, X.data, X.byteSize());
  return Status::ok();
}

Status reshape(const KernelCall &call) {
  const char *op = "Reshape";
  const TensorView *X;
  if (Status s = requireData(op, call, X); !s.isOk())
    return s;
  std::vector<int64_t> shape;
  if (Status s = readIndices(op, dataInput(call, 1), "shape", shape); !s.isOk())
    return s;
  bool allowZero = call.attrs.getInt("allowzero", 0) != 0;
  int64_t known = 1, inferred = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == 0 && !allowZero) {
      if (i >= X->shape.size())
        return invalid(op, "shape " + shapeToString(shape) + " copies dim " + std::to_string(i) +
                               " of a rank-" + std::to_string(X->shape.size()) + " input");
      shape[i] = X->shape[i];
    }
    if (shape[i] == -1) {
      if (inferred >= 0)
        return invalid(op, "shape " + shapeToString(shape) + " has more than one -1");
      inferred = int64_t(i);
    } else if (shape[i] < 0) {
      return invalid(op, "shape " + shapeToString(shape) + " has a negative dim");
    } else {
      known *= shape[i];
    }
  }
  int64_t total = X->numElements();
  if (inferred >= 0) {
    if (known == 0 || total % known != 0)
      return invalid(op, "cannot infer the -1 of " + shapeToString(shape) + " for " +
                             std::to_string(total) + " elements");
    shape[inferred] = total / known;
  }
  return copyIntoShape(op, call, shape);
}

Status squeeze(const KernelCall &call) {
  const char *op = "Squeeze";
  const TensorView *X;
  if (Status s = requireData(op, call, X); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  std::vector<int64_t> axes;
  if (Status s = readOptionalIndices(op, call, 1, "axes", axes, {}); !s.isOk())
    return s;
  std::vector<bool> drop(rank, false);
  if (axes.empty() && !dataInput(call, 1)) {
    for (size_t a = 0; a < rank; ++a)
      drop[a] = X->shape[a] == 1;
  }
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes) {
    if (Status s = claimAxis(op, a, seen); !s.isOk())
      return s;
    if (X->shape[a] != 1)
      return invalid(op, "axis " + std::to_string(a) + " of " + shapeToString(X->shape) +
                             " is not 1");
    drop[a] = true;
  }
  std::vector<int64_t> shape;
  for (size_t a = 0; a < rank; ++a)
    if (!drop[a])
      shape.push_back(X->shape[a]);
  return copyIntoShape(op, call, shape);
}

Status unsqueeze(const KernelCall &call) {
  const char *op = "Unsqueeze";
  const TensorView *X;
  if (Status s = requireData(op, call, X); !s.isOk())
    return s;
  std::vector<int64_t> axes;
  if (Status s = readIndices(op, dataInput(call, 1), "axes", axes); !s.isOk())
    return s;
  size_t rank = X->shape.size() + axes.size();
  std::vector<bool> seen(rank, false);
  for (int64_t a : axes)
    if (Status s = claimAxis(op, a, seen); !s.isOk())
      return s;
  std::vector<int64_t> shape;
  for (size_t a = 0, next = 0; a < rank; ++a)
    shape.push_back(seen[a] ? 1 : X->shape[next++]);
  return copyIntoShape(op, call, shape);
}

Status shape(const KernelCall &call) {
  const char *op = "Shape";
  if (call.numInputs < 1)
    return invalid(op, "missing input");
  // Only the shape is read: the data pointer may be null for an empty tensor.
  const TensorView &X = call.inputs[0];
  if (call.numOutputs < 1 || call.outputs[0].type != ElementType::Int64)
    return invalid(op, "output must be int64");
  int64_t rank = int64_t(X.shape.size());
  SliceAxis dims =
      shapeOpRange(rank, call.attrs.getInt("start", 0), call.attrs.getInt("end", rank));
  int64_t start = dims.start, n = dims.count;
  const TensorView &Y = call.outputs[0];
  if (Y.shape != std::vector<int64_t>{n})
    return invalid(op, "output shape " + shapeToString(Y.shape) + " should be [" +
                           std::to_string(n) + "]");
  int64_t *y = static_cast<int64_t *>(Y.data);
  for (int64_t i = 0; i < n; ++i)
    y[i] = X.shape[start + i];
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Transpose
//===----------------------------------------------------------------------===//

Status transpose(const KernelCall &call) {
  const char *op = "Transpose";
  const TensorView *X;
  if (Status s = requireData(op, call, X); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  std::vector<int64_t> perm = call.attrs.getInts("perm");
  if (perm.empty())
    for (size_t i = rank; i-- > 0;)
      perm.push_back(int64_t(i));
  std::vector<bool> seen(rank, false);
  if (perm.size() != rank)
    return invalid(op,
                   "perm " + shapeToString(perm) + " does not match rank " + std::to_string(rank));
  for (int64_t p : perm) {
    if (p < 0 || p >= int64_t(rank) || seen[p])
      return invalid(op, "perm " + shapeToString(perm) + " is not a permutation");
    seen[p] = true;
  }
  std::vector<int64_t> outShape(rank), strides(rank);
  std::vector<int64_t> inStrides = denseStrides(X->shape);
  for (size_t i = 0; i < rank; ++i) {
    outShape[i] = X->shape[perm[i]];
    strides[i] = inStrides[perm[i]];
  }
  return writeStridedView(op, call, *X, outShape, outShape, strides);
}

//===----------------------------------------------------------------------===//
// Concat, Split
//===----------------------------------------------------------------------===//

Status concat(const KernelCall &call) {
  const char *op = "Concat";
  if (call.numInputs < 1)
    return invalid(op, "needs at least one input");
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  size_t elem = elementSize(Y.type);
  if (elem == 0)
    return invalid(op, "unsupported element type " + elementTypeName(Y.type));
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, 0, Y.shape.size(), axis); !s.isOk())
    return s;
  if (Status s = checkParts(op, Y, "output", call.inputs, call.numInputs, "input", axis, true);
      !s.isOk())
    return s;
  copyParts<true>(Y, call.inputs, call.numInputs, axis, elem);
  return Status::ok();
}

Status split(const KernelCall &call) {
  const char *op = "Split";
  const TensorView *X;
  size_t elem;
  if (Status s = requireSizedData(op, call, X, elem); !s.isOk())
    return s;
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, 0, X->shape.size(), axis); !s.isOk())
    return s;
  if (call.numOutputs < 1)
    return invalid(op, "needs at least one output");
  if (Status s = checkParts(op, *X, "input", call.outputs, call.numOutputs, "output", axis, false);
      !s.isOk())
    return s;
  copyParts<false>(*X, call.outputs, call.numOutputs, axis, elem);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

Status slice(const KernelCall &call) {
  const char *op = "Slice";
  const TensorView *X;
  if (Status s = requireData(op, call, X); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (Status s = readIndices(op, dataInput(call, 1), "starts", starts); !s.isOk())
    return s;
  if (Status s = readIndices(op, dataInput(call, 2), "ends", ends); !s.isOk())
    return s;
  if (Status s = readOptionalIndices(op, call, 3, "axes", axes, allAxes(starts.size())); !s.isOk())
    return s;
  if (Status s =
          readOptionalIndices(op, call, 4, "steps", steps, std::vector<int64_t>(starts.size(), 1));
      !s.isOk())
    return s;
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return invalid(op, "starts, ends, axes and steps differ in length");

  std::vector<int64_t> inStrides = denseStrides(X->shape);
  std::vector<int64_t> outShape = X->shape, strides = inStrides;
  std::vector<bool> seen(rank, false);
  int64_t offset = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = axes[i];
    if (Status s = claimAxis(op, axis, seen); !s.isOk())
      return s;
    int64_t dim = X->shape[axis], step = steps[i];
    if (step == 0)
      return invalid(op, "step 0 on axis " + std::to_string(axis));
    SliceAxis range = sliceAxis(dim, starts[i], ends[i], step);
    outShape[axis] = range.count;
    if (range.count > 0)
      offset += range.start * inStrides[axis];
    strides[axis] = step * inStrides[axis];
  }
  return writeStridedView(op, call, *X, outShape, outShape, strides, offset);
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

Status gather(const KernelCall &call) {
  const char *op = "Gather";
  const TensorView *X, *I = dataInput(call, 1);
  if (Status s = requireData(op, call, X); !s.isOk())
    return s;
  if (!I)
    return invalid(op, "missing indices");
  const TensorView &idx = *I;
  if (idx.type != ElementType::Int64 && idx.type != ElementType::Int32)
    return invalid(op, "indices must be int32 or int64, got " + elementTypeName(idx.type));
  size_t rank = X->shape.size();
  int64_t axis;
  if (Status s = readAxis(op, call.attrs, 0, rank, axis); !s.isOk())
    return s;
  std::vector<int64_t> outShape(X->shape.begin(), X->shape.begin() + axis);
  outShape.insert(outShape.end(), idx.shape.begin(), idx.shape.end());
  outShape.insert(outShape.end(), X->shape.begin() + axis + 1, X->shape.end());
  if (Status s = checkDataAndOutput(op, call, &outShape); !s.isOk())
    return s;
  int64_t dim = X->shape[axis], n = idx.numElements();
  int64_t outer = product(X->shape, 0, axis), inner = product(X->shape, axis + 1, rank);
  auto index = [&](int64_t i) -> int64_t {
    return idx.type == ElementType::Int64 ? static_cast<const int64_t *>(idx.data)[i]
                                          : static_cast<const int32_t *>(idx.data)[i];
  };
  // Check every index before writing anything.
  for (int64_t i = 0; i < n; ++i) {
    int64_t v = index(i);
    if (v < -dim || v >= dim)
      return invalid(op, "index " + std::to_string(v) + " is out of range for axis " +
                             std::to_string(axis) + " of size " + std::to_string(dim));
  }
  size_t elem = elementSize(X->type);
  size_t block = size_t(inner) * elem;
  const char *x = static_cast<const char *>(X->data);
  char *y = static_cast<char *>(call.outputs[0].data);
  if (block == 0)
    return Status::ok();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i = 0; i < n; ++i) {
      int64_t v = index(i);
      if (v < 0)
        v += dim;
      std::memcpy(y, x + (o * dim + v) * block, block);
      y += block;
    }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Expand, Tile
//===----------------------------------------------------------------------===//

Status expand(const KernelCall &call) {
  const char *op = "Expand";
  const TensorView *X;
  if (Status s = requireData(op, call, X); !s.isOk())
    return s;
  std::vector<int64_t> target;
  if (Status s = readIndices(op, dataInput(call, 1), "shape", target); !s.isOk())
    return s;
  // Bidirectional broadcast of X's shape and the requested shape.
  size_t rank = std::max(target.size(), X->shape.size());
  std::vector<int64_t> outShape(rank);
  std::vector<int64_t> strides = broadcastStrides(X->shape, rank);
  for (size_t back = 0; back < rank; ++back) {
    size_t i = rank - 1 - back;
    int64_t xd = back < X->shape.size() ? X->shape[X->shape.size() - 1 - back] : 1;
    int64_t td = back < target.size() ? target[target.size() - 1 - back] : 1;
    if (xd != td && xd != 1 && td != 1)
      return invalid(op, "input " + shapeToString(X->shape) + " does not broadcast to " +
                             shapeToString(target));
    outShape[i] = xd == 1 ? td : xd;
  }
  return writeStridedView(op, call, *X, outShape, outShape, strides);
}

Status tile(const KernelCall &call) {
  const char *op = "Tile";
  const TensorView *X;
  if (Status s = requireData(op, call, X); !s.isOk())
    return s;
  std::vector<int64_t> repeats;
  if (Status s = readIndices(op, dataInput(call, 1), "repeats", repeats); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  if (repeats.size() != rank)
    return invalid(op, "repeats " + shapeToString(repeats) + " does not match rank " +
                           std::to_string(rank));
  // Output dim i is (repeat, dim) in row-major order: the repeat part reads
  // with stride 0.
  std::vector<int64_t> outShape(rank), viewShape, viewStrides;
  std::vector<int64_t> inStrides = denseStrides(X->shape);
  for (size_t i = 0; i < rank; ++i) {
    if (repeats[i] < 0)
      return invalid(op, "negative repeat " + std::to_string(repeats[i]));
    outShape[i] = X->shape[i] * repeats[i];
    viewShape.push_back(repeats[i]);
    viewStrides.push_back(0);
    viewShape.push_back(X->shape[i]);
    viewStrides.push_back(inStrides[i]);
  }
  return writeStridedView(op, call, *X, outShape, viewShape, viewStrides);
}

//===----------------------------------------------------------------------===//
// Pad (as per-axis index maps; Resize lives in SpatialKernels.cpp)
//===----------------------------------------------------------------------===//

namespace {

/// Dense output whose element (i0..ir) is src[sum(map_k[i_k])], or the fill
/// value where any map_k[i_k] is -1. Maps hold offsets in elements.
void gatherByMaps(char *dst, const char *src, const std::vector<std::vector<int64_t>> &maps,
                  const char *fill, size_t elem) {
  size_t r = maps.size();
  if (r == 0) {
    std::memcpy(dst, src, elem);
    return;
  }
  for (const auto &m : maps)
    if (m.empty())
      return;
  const std::vector<int64_t> &last = maps[r - 1];
  int64_t inner = int64_t(last.size());
  // Runs of the last map: consecutive sources become one memcpy.
  struct Run {
    int64_t at, len, src; // src -1: fill
  };
  std::vector<Run> runs;
  for (int64_t j = 0; j < inner; ++j) {
    int64_t s = last[j];
    if (!runs.empty()) {
      Run &b = runs.back();
      if ((s < 0 && b.src < 0) || (s >= 0 && b.src >= 0 && s == b.src + b.len)) {
        ++b.len;
        continue;
      }
    }
    runs.push_back({j, 1, s});
  }
  std::vector<size_t> idx(r, 0);
  int64_t rows = 1;
  for (size_t i = 0; i + 1 < r; ++i)
    rows *= int64_t(maps[i].size());
  for (int64_t row = 0; row < rows; ++row) {
    int64_t off = 0;
    bool filled = false;
    for (size_t i = 0; i + 1 < r; ++i) {
      int64_t m = maps[i][idx[i]];
      if (m < 0)
        filled = true;
      off += m;
    }
    if (filled) {
      fillElements(dst, fill, inner, elem);
    } else {
      for (const Run &run : runs) {
        char *d = dst + run.at * int64_t(elem);
        if (run.src < 0)
          fillElements(d, fill, run.len, elem);
        else
          std::memcpy(d, src + (off + run.src) * int64_t(elem), size_t(run.len) * elem);
      }
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

Status pad(const KernelCall &call) {
  const char *op = "Pad";
  const TensorView *X;
  size_t elem;
  if (Status s = requireSizedData(op, call, X, elem); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  std::string mode = call.attrs.getString("mode", "constant");
  if (mode != "constant" && mode != "reflect" && mode != "edge" && mode != "wrap")
    return invalid(op, "unsupported mode '" + mode + "'");
  std::vector<int64_t> pads, axes;
  const TensorView *padsT = dataInput(call, 1);
  if (padsT && padsT->type != ElementType::Int64)
    return invalid(op, "pads must be int64, got " + elementTypeName(padsT->type));
  if (Status s = readIndices(op, padsT, "pads", pads); !s.isOk())
    return s;
  if (Status s = readOptionalIndices(op, call, 3, "axes", axes, allAxes(rank)); !s.isOk())
    return s;
  if (pads.size() != 2 * axes.size())
    return invalid(op, "pads " + shapeToString(pads) + " needs 2 values per axis (" +
                           std::to_string(axes.size()) + " axes)");
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (Status s = claimAxis(op, a, seen); !s.isOk())
      return s;
    begin[a] = pads[i];
    end[a] = pads[i + axes.size()];
  }
  // The fill value: constant_value (same type as the data) or zero bytes.
  char fill[16] = {};
  if (const TensorView *cv = dataInput(call, 2); cv && mode == "constant") {
    if (cv->type != X->type || cv->numElements() != 1)
      return invalid(op, "constant_value must be one " + elementTypeName(X->type) + " element");
    std::memcpy(fill, cv->data, elem);
  }
  std::vector<int64_t> outShape(rank);
  std::vector<int64_t> inStrides = denseStrides(X->shape);
  std::vector<std::vector<int64_t>> maps(rank);
  for (size_t a = 0; a < rank; ++a) {
    int64_t n = X->shape[a], out = n + begin[a] + end[a];
    if (out < 0)
      return invalid(op, "pads " + shapeToString(pads) + " remove more than axis " +
                             std::to_string(a) + " holds");
    outShape[a] = out;
    if (n == 0 && out > 0 && mode != "constant")
      return invalid(op, "mode " + mode + " cannot pad an empty axis " + std::to_string(a));
    maps[a].resize(out);
    for (int64_t j = 0; j < out; ++j) {
      int64_t i = j - begin[a];
      if (i < 0 || i >= n) {
        if (mode == "constant") {
          maps[a][j] = -1;
          continue;
        }
        if (mode == "edge") {
          i = std::clamp<int64_t>(i, 0, n - 1);
        } else if (mode == "wrap") {
          i = ((i % n) + n) % n;
        } else if (n == 1) {
          i = 0;
        } else {
          // reflect (numpy): mirror without repeating the edge, repeatedly.
          int64_t period = 2 * (n - 1);
          i = ((i % period) + period) % period;
          if (i >= n)
            i = period - i;
        }
      }
      maps[a][j] = i * inStrides[a];
    }
  }
  if (Status s = checkDataAndOutput(op, call, &outShape); !s.isOk())
    return s;
  gatherByMaps(static_cast<char *>(call.outputs[0].data), static_cast<const char *>(X->data), maps,
               fill, elem);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// DepthToSpace, SpaceToDepth (reshape + transpose)
//===----------------------------------------------------------------------===//

Status depthToSpace(const KernelCall &call) {
  const char *op = "DepthToSpace";
  const TensorView *X;
  if (Status s = requireData(op, call, X); !s.isOk())
    return s;
  int64_t b = call.attrs.getInt("blocksize", 0);
  std::string mode = call.attrs.getString("mode", "DCR");
  if (X->shape.size() != 4 || b < 1 || X->shape[1] % (b * b) != 0)
    return invalid(op, "needs X [N,C,H,W] with C divisible by blocksize^2, got " +
                           shapeToString(X->shape) + " and blocksize " + std::to_string(b));
  if (mode != "DCR" && mode != "CRD")
    return invalid(op, "unsupported mode '" + mode + "'");
  int64_t N = X->shape[0], C = X->shape[1], H = X->shape[2], W = X->shape[3];
  int64_t c = C / (b * b);
  std::vector<int64_t> outShape = {N, c, H * b, W * b};
  // Output viewed as [N, c, H, b1, W, b2]; strides into X.
  int64_t sC = H * W, sb1, sb2, sc;
  if (mode == "DCR") { // X as [N, b1, b2, c, H, W]
    sb1 = b * c * sC;
    sb2 = c * sC;
    sc = sC;
  } else { // CRD: X as [N, c, b1, b2, H, W]
    sc = b * b * sC;
    sb1 = b * sC;
    sb2 = sC;
  }
  return writeStridedView(op, call, *X, outShape, {N, c, H, b, W, b}, {C * sC, sc, W, sb1, 1, sb2});
}

Status spaceToDepth(const KernelCall &call) {
  const char *op = "SpaceToDepth";
  const TensorView *X;
  if (Status s = requireData(op, call, X); !s.isOk())
    return s;
  int64_t b = call.attrs.getInt("blocksize", 0);
  if (X->shape.size() != 4 || b < 1 || X->shape[2] % b != 0 || X->shape[3] % b != 0)
    return invalid(op, "needs X [N,C,H,W] with H and W divisible by blocksize, got " +
                           shapeToString(X->shape) + " and blocksize " + std::to_string(b));
  std::string mode = call.attrs.getString("mode", "DCR");
  if (mode != "DCR" && mode != "CRD")
    return invalid(op, "unsupported mode '" + mode + "'");
  int64_t N = X->shape[0], C = X->shape[1], H = X->shape[2], W = X->shape[3];
  std::vector<int64_t> outShape = {N, C * b * b, H / b, W / b};
  // X is [N, C, H/b, b1, W/b, b2]. DCR: output viewed as [N, b1, b2, C, H/b, W/b];
  // CRD: as [N, C, b1, b2, H/b, W/b].
  if (mode == "CRD")
    return writeStridedView(op, call, *X, outShape, {N, C, b, b, H / b, W / b},
                            {C * H * W, H * W, W, 1, b * W, b});
  return writeStridedView(op, call, *X, outShape, {N, b, b, C, H / b, W / b},
                          {C * H * W, W, 1, H * W, b * W, b});
}

} // namespace ortc::cpu::kernels
