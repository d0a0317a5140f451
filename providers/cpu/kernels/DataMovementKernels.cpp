//===- DataMovementKernels.cpp - layout and indexing ops ------------------===//
//
// These kernels move elements without looking at them, so they work for any
// element type by its size. Most reduce to one strided copy: a dense output
// walked in order, each element read from src + sum(index * stride), where a
// stride may be 0 (broadcast) or negative (reversed slice).
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ortc::cpu::kernels {

namespace {

Status invalid(const char *op, const std::string &what) {
  return Status::error(StatusCode::InvalidArgument, std::string(op) + ": " + what);
}

/// Input i, or nullptr if omitted. An empty tensor counts as present even when
/// its data pointer is null.
const TensorView *dataInput(const KernelCall &call, size_t i) {
  if (i >= call.numInputs)
    return nullptr;
  const TensorView &t = call.inputs[i];
  bool empty = std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end();
  return t.data || empty ? &t : nullptr;
}

/// Input 0 present, output 0 of the same element type and of `expect` shape.
Status checkDataAndOutput(const char *op, const KernelCall &call,
                          const std::vector<int64_t> *expect = nullptr) {
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
  if (elementSize(X->type) == 0)
    return invalid(op, "unsupported element type " + elementTypeName(X->type));
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Y.type != X->type)
    return invalid(op, "output type " + elementTypeName(Y.type) + " differs from input type " +
                           elementTypeName(X->type));
  if (expect && Y.shape != *expect)
    return invalid(op, "output shape " + shapeToString(Y.shape) + " should be " +
                           shapeToString(*expect));
  return Status::ok();
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

bool normalizeAxis(int64_t &axis, size_t rank) {
  if (axis < 0)
    axis += int64_t(rank);
  return axis >= 0 && axis < int64_t(rank);
}

std::vector<int64_t> denseStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
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

Status shape(const KernelCall &call) {
  const char *op = "Shape";
  if (call.numInputs < 1)
    return invalid(op, "missing input");
  // Only the shape is read: the data pointer may be null for an empty tensor.
  const TensorView &X = call.inputs[0];
  if (call.numOutputs < 1 || call.outputs[0].type != ElementType::Int64)
    return invalid(op, "output must be int64");
  int64_t rank = int64_t(X.shape.size());
  int64_t start = call.attrs.getInt("start", 0);
  int64_t end = call.attrs.getInt("end", rank);
  if (start < 0)
    start += rank;
  if (end < 0)
    end += rank;
  start = std::clamp<int64_t>(start, 0, rank);
  end = std::clamp<int64_t>(end, 0, rank);
  int64_t n = std::max<int64_t>(end - start, 0);
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
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
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
  if (Status s = checkDataAndOutput(op, call, &outShape); !s.isOk())
    return s;
  stridedCopy(call.outputs[0].data, X->data, outShape, strides, elementSize(X->type));
  return Status::ok();
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
  size_t rank = Y.shape.size();
  int64_t axis = call.attrs.getInt("axis", 0);
  if (rank == 0 || !normalizeAxis(axis, rank))
    return invalid(op, "axis " + std::to_string(call.attrs.getInt("axis", 0)) +
                           " out of range for rank " + std::to_string(rank));
  int64_t total = 0;
  for (size_t i = 0; i < call.numInputs; ++i) {
    const TensorView &in = call.inputs[i];
    if (in.type != Y.type)
      return invalid(op, "input " + std::to_string(i) + " is " + elementTypeName(in.type) +
                             ", output is " + elementTypeName(Y.type));
    bool fits = in.shape.size() == rank;
    for (size_t d = 0; fits && d < rank; ++d)
      fits = int64_t(d) == axis || in.shape[d] == Y.shape[d];
    if (!fits)
      return invalid(op, "input " + std::to_string(i) + " " + shapeToString(in.shape) +
                             " does not fit output " + shapeToString(Y.shape) + " on axis " +
                             std::to_string(axis));
    if (!in.data && in.numElements() != 0)
      return invalid(op, "missing input " + std::to_string(i));
    total += in.shape[axis];
  }
  if (total != Y.shape[axis])
    return invalid(op, "inputs add up to " + std::to_string(total) + " on axis " +
                           std::to_string(axis) + ", output has " + std::to_string(Y.shape[axis]));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= Y.shape[d];
  for (size_t d = axis + 1; d < rank; ++d)
    inner *= Y.shape[d];
  size_t outRow = size_t(Y.shape[axis] * inner) * elem;
  char *y = static_cast<char *>(Y.data);
  size_t at = 0;
  for (size_t i = 0; i < call.numInputs; ++i) {
    const TensorView &in = call.inputs[i];
    size_t row = size_t(in.shape[axis] * inner) * elem;
    if (row == 0)
      continue;
    const char *x = static_cast<const char *>(in.data);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y + o * outRow + at, x + o * row, row);
    at += row;
  }
  return Status::ok();
}

Status split(const KernelCall &call) {
  const char *op = "Split";
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
  size_t elem = elementSize(X->type);
  if (elem == 0)
    return invalid(op, "unsupported element type " + elementTypeName(X->type));
  size_t rank = X->shape.size();
  int64_t axis = call.attrs.getInt("axis", 0);
  if (rank == 0 || !normalizeAxis(axis, rank))
    return invalid(op, "axis " + std::to_string(call.attrs.getInt("axis", 0)) +
                           " out of range for rank " + std::to_string(rank));
  if (call.numOutputs < 1)
    return invalid(op, "needs at least one output");
  int64_t total = 0;
  for (size_t i = 0; i < call.numOutputs; ++i) {
    const TensorView &out = call.outputs[i];
    if (out.type != X->type)
      return invalid(op, "output " + std::to_string(i) + " is " + elementTypeName(out.type) +
                             ", input is " + elementTypeName(X->type));
    bool fits = out.shape.size() == rank;
    for (size_t d = 0; fits && d < rank; ++d)
      fits = int64_t(d) == axis || out.shape[d] == X->shape[d];
    if (!fits)
      return invalid(op, "output " + std::to_string(i) + " " + shapeToString(out.shape) +
                             " does not fit input " + shapeToString(X->shape) + " on axis " +
                             std::to_string(axis));
    total += out.shape[axis];
  }
  if (total != X->shape[axis])
    return invalid(op, "outputs add up to " + std::to_string(total) + " on axis " +
                           std::to_string(axis) + ", input has " + std::to_string(X->shape[axis]));
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= X->shape[d];
  for (size_t d = axis + 1; d < rank; ++d)
    inner *= X->shape[d];
  size_t inRow = size_t(X->shape[axis] * inner) * elem;
  const char *x = static_cast<const char *>(X->data);
  size_t at = 0;
  for (size_t i = 0; i < call.numOutputs; ++i) {
    const TensorView &out = call.outputs[i];
    size_t row = size_t(out.shape[axis] * inner) * elem;
    if (row == 0)
      continue;
    char *y = static_cast<char *>(out.data);
    for (int64_t o = 0; o < outer; ++o)
      std::memcpy(y + o * row, x + o * inRow + at, row);
    at += row;
  }
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Slice
//===----------------------------------------------------------------------===//

Status slice(const KernelCall &call) {
  const char *op = "Slice";
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
  size_t rank = X->shape.size();
  std::vector<int64_t> starts, ends, axes, steps;
  if (Status s = readIndices(op, dataInput(call, 1), "starts", starts); !s.isOk())
    return s;
  if (Status s = readIndices(op, dataInput(call, 2), "ends", ends); !s.isOk())
    return s;
  if (dataInput(call, 3)) {
    if (Status s = readIndices(op, dataInput(call, 3), "axes", axes); !s.isOk())
      return s;
  } else {
    for (size_t i = 0; i < starts.size(); ++i)
      axes.push_back(int64_t(i));
  }
  if (dataInput(call, 4)) {
    if (Status s = readIndices(op, dataInput(call, 4), "steps", steps); !s.isOk())
      return s;
  } else {
    steps.assign(starts.size(), 1);
  }
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    return invalid(op, "starts, ends, axes and steps differ in length");

  std::vector<int64_t> inStrides = denseStrides(X->shape);
  std::vector<int64_t> outShape = X->shape, strides = inStrides;
  std::vector<bool> seen(rank, false);
  int64_t offset = 0;
  for (size_t i = 0; i < starts.size(); ++i) {
    int64_t axis = axes[i];
    if (!normalizeAxis(axis, rank) || seen[axis])
      return invalid(op, "axis " + std::to_string(axes[i]) + " is out of range or repeated");
    seen[axis] = true;
    int64_t dim = X->shape[axis], step = steps[i];
    if (step == 0)
      return invalid(op, "step 0 on axis " + std::to_string(axis));
    int64_t start = starts[i], end = ends[i];
    // ONNX: negative bounds count from the end, then clamp; a negative step
    // runs from start down to end exclusive, so end may reach -1.
    if (start < 0)
      start += dim;
    if (end < 0)
      end += dim;
    int64_t count;
    if (dim == 0) {
      count = 0;
    } else if (step > 0) {
      start = std::clamp<int64_t>(start, 0, dim);
      end = std::clamp<int64_t>(end, 0, dim);
      count = end > start ? (end - start + step - 1) / step : 0;
    } else {
      start = std::clamp<int64_t>(start, 0, dim - 1);
      end = std::clamp<int64_t>(end, -1, dim - 1);
      count = start > end ? (start - end + (-step) - 1) / (-step) : 0;
    }
    outShape[axis] = count;
    if (count > 0)
      offset += start * inStrides[axis];
    strides[axis] = step * inStrides[axis];
  }
  if (Status s = checkDataAndOutput(op, call, &outShape); !s.isOk())
    return s;
  size_t elem = elementSize(X->type);
  stridedCopy(call.outputs[0].data, static_cast<const char *>(X->data) + offset * elem, outShape,
              strides, elem);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Gather
//===----------------------------------------------------------------------===//

Status gather(const KernelCall &call) {
  const char *op = "Gather";
  const TensorView *X = dataInput(call, 0), *I = dataInput(call, 1);
  if (!X)
    return invalid(op, "missing input 0");
  if (!I)
    return invalid(op, "missing indices");
  const TensorView &idx = *I;
  if (idx.type != ElementType::Int64 && idx.type != ElementType::Int32)
    return invalid(op, "indices must be int32 or int64, got " + elementTypeName(idx.type));
  size_t rank = X->shape.size();
  int64_t axis = call.attrs.getInt("axis", 0);
  if (rank == 0 || !normalizeAxis(axis, rank))
    return invalid(op, "axis " + std::to_string(call.attrs.getInt("axis", 0)) +
                           " out of range for rank " + std::to_string(rank));
  std::vector<int64_t> outShape(X->shape.begin(), X->shape.begin() + axis);
  outShape.insert(outShape.end(), idx.shape.begin(), idx.shape.end());
  outShape.insert(outShape.end(), X->shape.begin() + axis + 1, X->shape.end());
  if (Status s = checkDataAndOutput(op, call, &outShape); !s.isOk())
    return s;
  int64_t dim = X->shape[axis], n = idx.numElements();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < axis; ++d)
    outer *= X->shape[d];
  for (size_t d = axis + 1; d < rank; ++d)
    inner *= X->shape[d];
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
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
  std::vector<int64_t> target;
  if (Status s = readIndices(op, dataInput(call, 1), "shape", target); !s.isOk())
    return s;
  // Bidirectional broadcast of X's shape and the requested shape.
  size_t rank = std::max(target.size(), X->shape.size());
  std::vector<int64_t> outShape(rank), strides(rank, 0);
  std::vector<int64_t> inStrides = denseStrides(X->shape);
  for (size_t back = 0; back < rank; ++back) {
    size_t i = rank - 1 - back;
    int64_t xd = back < X->shape.size() ? X->shape[X->shape.size() - 1 - back] : 1;
    int64_t td = back < target.size() ? target[target.size() - 1 - back] : 1;
    if (xd != td && xd != 1 && td != 1)
      return invalid(op, "input " + shapeToString(X->shape) + " does not broadcast to " +
                             shapeToString(target));
    outShape[i] = xd == 1 ? td : xd;
    if (back < X->shape.size() && xd != 1)
      strides[i] = inStrides[X->shape.size() - 1 - back];
  }
  if (Status s = checkDataAndOutput(op, call, &outShape); !s.isOk())
    return s;
  stridedCopy(call.outputs[0].data, X->data, outShape, strides, elementSize(X->type));
  return Status::ok();
}

Status tile(const KernelCall &call) {
  const char *op = "Tile";
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
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
  if (Status s = checkDataAndOutput(op, call, &outShape); !s.isOk())
    return s;
  stridedCopy(call.outputs[0].data, X->data, viewShape, viewStrides, elementSize(X->type));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Pad, Resize (both as per-axis index maps)
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
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
  size_t elem = elementSize(X->type);
  if (elem == 0)
    return invalid(op, "unsupported element type " + elementTypeName(X->type));
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
  if (dataInput(call, 3)) {
    if (Status s = readIndices(op, dataInput(call, 3), "axes", axes); !s.isOk())
      return s;
  } else {
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(int64_t(i));
  }
  if (pads.size() != 2 * axes.size())
    return invalid(op, "pads " + shapeToString(pads) + " needs 2 values per axis (" +
                           std::to_string(axes.size()) + " axes)");
  std::vector<int64_t> begin(rank, 0), end(rank, 0);
  std::vector<bool> seen(rank, false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t a = axes[i];
    if (!normalizeAxis(a, rank) || seen[a])
      return invalid(op, "axis " + std::to_string(axes[i]) + " is out of range or repeated");
    seen[a] = true;
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

Status resize(const KernelCall &call) {
  const char *op = "Resize";
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
  size_t elem = elementSize(X->type);
  if (elem == 0)
    return invalid(op, "unsupported element type " + elementTypeName(X->type));
  size_t rank = X->shape.size();
  if (rank == 0)
    return invalid(op, "input must have rank >= 1");
  std::string mode = call.attrs.getString("mode", "nearest");
  if (mode != "nearest")
    return invalid(op, "only mode 'nearest' is supported, got '" + mode + "'");
  std::string ctm = call.attrs.getString("coordinate_transformation_mode", "half_pixel");
  if (ctm != "half_pixel" && ctm != "asymmetric" && ctm != "align_corners" &&
      ctm != "pytorch_half_pixel" && ctm != "tf_half_pixel_for_nn")
    return invalid(op, "unsupported coordinate_transformation_mode '" + ctm + "'");
  std::string nearest = call.attrs.getString("nearest_mode", "round_prefer_floor");
  if (nearest != "round_prefer_floor" && nearest != "round_prefer_ceil" && nearest != "floor" &&
      nearest != "ceil")
    return invalid(op, "unsupported nearest_mode '" + nearest + "'");
  if (call.attrs.getInt("antialias", 0) != 0)
    return invalid(op, "antialias = 1 is not supported");

  // axes (opset 18) says which dims the scales or sizes describe.
  std::vector<int64_t> axes = call.attrs.getInts("axes");
  if (axes.empty())
    for (size_t i = 0; i < rank; ++i)
      axes.push_back(int64_t(i));
  std::vector<bool> seen(rank, false);
  for (int64_t &a : axes) {
    int64_t orig = a;
    if (!normalizeAxis(a, rank) || seen[a])
      return invalid(op, "axis " + std::to_string(orig) + " is out of range or repeated");
    seen[a] = true;
  }

  const TensorView *scalesT = dataInput(call, 2), *sizesT = dataInput(call, 3);
  bool haveScales = scalesT && scalesT->numElements() > 0;
  bool haveSizes = sizesT && sizesT->numElements() > 0;
  if (haveScales == haveSizes)
    return invalid(op, "needs exactly one of scales and sizes");
  std::vector<float> scales(rank, 1.f);
  std::vector<int64_t> outShape = X->shape;
  if (haveScales) {
    if (scalesT->type != ElementType::Float || scalesT->numElements() != int64_t(axes.size()))
      return invalid(op, "scales must be float32 with " + std::to_string(axes.size()) + " values");
    const float *s = static_cast<const float *>(scalesT->data);
    for (size_t i = 0; i < axes.size(); ++i) {
      if (!(s[i] > 0.f))
        return invalid(op, "scales must be positive");
      scales[axes[i]] = s[i];
      outShape[axes[i]] = int64_t(float(X->shape[axes[i]]) * s[i]);
    }
  } else {
    if (call.attrs.getString("keep_aspect_ratio_policy", "stretch") != "stretch")
      return invalid(op, "only keep_aspect_ratio_policy 'stretch' is supported");
    std::vector<int64_t> sizes;
    if (sizesT->type != ElementType::Int64)
      return invalid(op, "sizes must be int64, got " + elementTypeName(sizesT->type));
    if (Status s = readIndices(op, sizesT, "sizes", sizes); !s.isOk())
      return s;
    if (sizes.size() != axes.size())
      return invalid(op, "sizes must have " + std::to_string(axes.size()) + " values");
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = axes[i];
      if (sizes[i] < 0)
        return invalid(op, "negative size " + std::to_string(sizes[i]));
      outShape[a] = sizes[i];
      if (X->shape[a] > 0)
        scales[a] = float(sizes[i]) / float(X->shape[a]);
    }
  }
  if (Status s = checkDataAndOutput(op, call, &outShape); !s.isOk())
    return s;

  std::vector<int64_t> inStrides = denseStrides(X->shape);
  std::vector<std::vector<int64_t>> maps(rank);
  for (size_t a = 0; a < rank; ++a) {
    int64_t in = X->shape[a], out = outShape[a];
    if (in == 0 && out > 0)
      return invalid(op, "cannot resize an empty axis " + std::to_string(a));
    maps[a].resize(out);
    float scale = scales[a], lin = float(in), lout = float(out);
    for (int64_t j = 0; j < out; ++j) {
      // Float arithmetic in onnxruntime's order, so halves round alike.
      float x = float(j), orig;
      if (ctm == "half_pixel")
        orig = (x + 0.5f) / scale - 0.5f;
      else if (ctm == "asymmetric")
        orig = x / scale;
      else if (ctm == "pytorch_half_pixel")
        orig = out > 1 ? (x + 0.5f) / scale - 0.5f : 0.f;
      else if (ctm == "tf_half_pixel_for_nn")
        orig = (x + 0.5f) / scale;
      else
        orig = out == 1 ? 0.f : x * (lin - 1.f) / (lout - 1.f);
      int64_t i;
      if (nearest == "round_prefer_floor")
        i = orig == float(int64_t(orig)) + 0.5f ? int64_t(std::floor(orig))
                                                : int64_t(std::round(orig));
      else if (nearest == "round_prefer_ceil")
        i = int64_t(std::round(orig));
      else if (nearest == "floor")
        i = int64_t(std::floor(orig));
      else
        i = int64_t(std::ceil(orig));
      i = std::clamp<int64_t>(i, 0, in - 1);
      maps[a][j] = i * inStrides[a];
    }
  }
  char fill[16] = {};
  gatherByMaps(static_cast<char *>(call.outputs[0].data), static_cast<const char *>(X->data), maps,
               fill, elem);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// DepthToSpace, SpaceToDepth (reshape + transpose)
//===----------------------------------------------------------------------===//

Status depthToSpace(const KernelCall &call) {
  const char *op = "DepthToSpace";
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
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
  if (Status s = checkDataAndOutput(op, call, &outShape); !s.isOk())
    return s;
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
  stridedCopy(call.outputs[0].data, X->data, {N, c, H, b, W, b}, {C * sC, sc, W, sb1, 1, sb2},
              elementSize(X->type));
  return Status::ok();
}

Status spaceToDepth(const KernelCall &call) {
  const char *op = "SpaceToDepth";
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
  int64_t b = call.attrs.getInt("blocksize", 0);
  if (X->shape.size() != 4 || b < 1 || X->shape[2] % b != 0 || X->shape[3] % b != 0)
    return invalid(op, "needs X [N,C,H,W] with H and W divisible by blocksize, got " +
                           shapeToString(X->shape) + " and blocksize " + std::to_string(b));
  int64_t N = X->shape[0], C = X->shape[1], H = X->shape[2], W = X->shape[3];
  std::vector<int64_t> outShape = {N, C * b * b, H / b, W / b};
  if (Status s = checkDataAndOutput(op, call, &outShape); !s.isOk())
    return s;
  // Output viewed as [N, b1, b2, C, H/b, W/b]; X is [N, C, H/b, b1, W/b, b2].
  stridedCopy(call.outputs[0].data, X->data, {N, b, b, C, H / b, W / b},
              {C * H * W, W, 1, H * W, b * W, b}, elementSize(X->type));
  return Status::ok();
}

} // namespace ortc::cpu::kernels
