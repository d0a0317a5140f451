//===- MiscKernels.cpp - small ops with no better home ----------------------===//
//
// The window generators, NonMaxSuppression, Compress, NonZero, Det and
// ConstantOfShape. Several have data-dependent output shapes; the
// compiler claims them only when the model declares those shapes statically,
// and each kernel refuses a result that does not fit the planned output.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/NumericTypes.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <vector>

namespace ortc::cpu::kernels {

namespace {

Status requireOutput(const char *op, const KernelCall &call) {
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  return Status::ok();
}

/// One scalar of an int32/int64 input (a 0-D or one-element tensor).
Status readIntScalar(const char *op, const TensorView *t, const char *role, int64_t &out) {
  if (!t || t->numElements() != 1)
    return invalid(op, std::string(role) + " must hold one element");
  if (t->type == ElementType::Int64)
    out = *static_cast<const int64_t *>(t->data);
  else if (t->type == ElementType::Int32)
    out = *static_cast<const int32_t *>(t->data);
  else
    return invalid(op, std::string(role) + " must be int32 or int64, got " +
                           elementTypeName(t->type));
  return Status::ok();
}

bool isFloatType(ElementType t) {
  return t == ElementType::Float || t == ElementType::Double || t == ElementType::Float16 ||
         t == ElementType::BFloat16;
}

/// Whether element `i` of `t` is non-zero (a float's sign bit ignored, NaN non-zero).
bool nonZeroAt(const TensorView &t, int64_t i, size_t elem) {
  const uint8_t *p = static_cast<const uint8_t *>(t.data) + size_t(i) * elem;
  bool floating = isFloatType(t.type);
  for (size_t b = 0; b < elem; ++b) {
    uint8_t byte = p[b];
    if (floating && b == elem - 1)
      byte &= 0x7F; // little endian: the sign bit is in the last byte
    if (byte)
      return true;
  }
  return false;
}

} // namespace

namespace {

enum class Window { Hann, Hamming, Blackman };

Status window(const KernelCall &call, const char *op, Window kind) {
  int64_t size;
  if (Status s = readIntScalar(op, dataInput(call, 0), "size", size); !s.isOk())
    return s;
  if (size < 0)
    return invalid(op, "size " + std::to_string(size) + " is negative");
  if (Status s = requireOutput(op, call); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  if (Status s = checkOutputShape(op, Y, {size}); !s.isOk())
    return s;
  if (Y.type != ElementType::Float && Y.type != ElementType::Double)
    return invalid(op, "output type " + elementTypeName(Y.type) + " is not float32 or float64");
  // periodic: N = size; symmetric: N = size - 1 (as the ONNX reference does).
  double n = call.attrs.getInt("periodic", 1) ? double(size) : double(size - 1);
  const double pi = 3.14159265358979323846;
  for (int64_t i = 0; i < size; ++i) {
    double v;
    switch (kind) {
    case Window::Hann: {
      double s = std::sin(pi * double(i) / n);
      v = s * s;
      break;
    }
    case Window::Hamming: {
      double alpha = 25.0 / 46.0;
      v = alpha - (1 - alpha) * std::cos(2 * pi * double(i) / n);
      break;
    }
    case Window::Blackman:
      v = 0.42 - 0.5 * std::cos(2 * pi * double(i) / n) + 0.08 * std::cos(4 * pi * double(i) / n);
      break;
    }
    if (Y.type == ElementType::Float)
      static_cast<float *>(Y.data)[i] = float(v);
    else
      static_cast<double *>(Y.data)[i] = v;
  }
  return Status::ok();
}

} // namespace

Status hannWindow(const KernelCall &call) { return window(call, "HannWindow", Window::Hann); }
Status hammingWindow(const KernelCall &call) {
  return window(call, "HammingWindow", Window::Hamming);
}
Status blackmanWindow(const KernelCall &call) {
  return window(call, "BlackmanWindow", Window::Blackman);
}

namespace {

/// ONNX's IoU test: suppress when IoU is strictly above the threshold.
bool suppresses(const float *a, const float *b, bool centerPoint, float iouThreshold) {
  float ax0, ax1, ay0, ay1, bx0, bx1, by0, by1;
  if (!centerPoint) {
    ay0 = std::min(a[0], a[2]), ay1 = std::max(a[0], a[2]);
    ax0 = std::min(a[1], a[3]), ax1 = std::max(a[1], a[3]);
    by0 = std::min(b[0], b[2]), by1 = std::max(b[0], b[2]);
    bx0 = std::min(b[1], b[3]), bx1 = std::max(b[1], b[3]);
  } else {
    ax0 = a[0] - a[2] / 2, ax1 = a[0] + a[2] / 2, ay0 = a[1] - a[3] / 2, ay1 = a[1] + a[3] / 2;
    bx0 = b[0] - b[2] / 2, bx1 = b[0] + b[2] / 2, by0 = b[1] - b[3] / 2, by1 = b[1] + b[3] / 2;
  }
  float ix0 = std::max(ax0, bx0), ix1 = std::min(ax1, bx1);
  if (ix1 <= ix0)
    return false;
  float iy0 = std::max(ay0, by0), iy1 = std::min(ay1, by1);
  if (iy1 <= iy0)
    return false;
  float inter = (ix1 - ix0) * (iy1 - iy0);
  float areaA = (ax1 - ax0) * (ay1 - ay0), areaB = (bx1 - bx0) * (by1 - by0);
  float uni = areaA + areaB - inter;
  if (inter <= 0 || areaA <= 0 || areaB <= 0 || uni <= 0)
    return false;
  return inter / uni > iouThreshold;
}

} // namespace

Status nonMaxSuppression(const KernelCall &call) {
  const char *op = "NonMaxSuppression";
  const TensorView *boxes = dataInput(call, 0), *scores = dataInput(call, 1);
  if (Status s = checkFloats(op, {{boxes, "boxes"}, {scores, "scores"}}); !s.isOk())
    return s;
  if (boxes->shape.size() != 3 || boxes->shape[2] != 4 || scores->shape.size() != 3 ||
      scores->shape[0] != boxes->shape[0] || scores->shape[2] != boxes->shape[1])
    return invalid(op, "boxes " + shapeToString(boxes->shape) + " and scores " +
                           shapeToString(scores->shape) + " are not [B,S,4] and [B,C,S]");
  int64_t maxPerClass = 0;
  if (const TensorView *m = dataInput(call, 2); m && m->numElements() > 0)
    if (Status s = readIntScalar(op, m, "max_output_boxes_per_class", maxPerClass); !s.isOk())
      return s;
  maxPerClass = std::max<int64_t>(maxPerClass, 0);
  float iouThreshold = 0, scoreThreshold = 0;
  bool useScoreThreshold = false;
  if (const TensorView *t = dataInput(call, 3)) {
    if (Status s = checkFloat(op, t, "iou_threshold"); !s.isOk())
      return s;
    if (t->numElements() != 1)
      return invalid(op, "iou_threshold must hold one element");
    iouThreshold = *static_cast<const float *>(t->data);
  }
  if (const TensorView *t = dataInput(call, 4)) {
    if (Status s = checkFloat(op, t, "score_threshold"); !s.isOk())
      return s;
    if (t->numElements() != 1)
      return invalid(op, "score_threshold must hold one element");
    scoreThreshold = *static_cast<const float *>(t->data);
    useScoreThreshold = true;
  }
  bool centerPoint = call.attrs.getInt("center_point_box", 0) != 0;
  int64_t batches = boxes->shape[0], numBoxes = boxes->shape[1], classes = scores->shape[1];
  const float *B = static_cast<const float *>(boxes->data);
  const float *S = static_cast<const float *>(scores->data);

  std::vector<int64_t> selected; // (batch, class, box) triples
  std::vector<int64_t> order, kept;
  for (int64_t b = 0; b < batches; ++b)
    for (int64_t c = 0; c < classes; ++c) {
      const float *score = S + (b * classes + c) * numBoxes;
      order.clear();
      for (int64_t i = 0; i < numBoxes; ++i)
        if (!useScoreThreshold || score[i] > scoreThreshold)
          order.push_back(i);
      // Highest score first; equal scores by lower box index.
      std::stable_sort(order.begin(), order.end(),
                       [&](int64_t x, int64_t y) { return score[x] > score[y]; });
      kept.clear();
      for (int64_t i : order) {
        if (int64_t(kept.size()) >= maxPerClass)
          break;
        const float *box = B + (b * numBoxes + i) * 4;
        bool keep = std::none_of(kept.begin(), kept.end(), [&](int64_t k) {
          return suppresses(box, B + (b * numBoxes + k) * 4, centerPoint, iouThreshold);
        });
        if (keep) {
          kept.push_back(i);
          selected.insert(selected.end(), {b, c, i});
        }
      }
    }
  if (Status s = requireOutput(op, call); !s.isOk())
    return s;
  if (call.outputs[0].type != ElementType::Int64)
    return invalid(op, "output must be int64");
  Result<TensorView> out = sizedOutput(op, call, 0, {int64_t(selected.size() / 3), 3});
  if (!out.isOk())
    return out.status();
  const TensorView &Y = out.value();
  if (!selected.empty())
    std::memcpy(Y.data, selected.data(), selected.size() * sizeof(int64_t));
  return Status::ok();
}

Status compress(const KernelCall &call) {
  const char *op = "Compress";
  const TensorView *X = dataInput(call, 0), *C = dataInput(call, 1);
  if (!X || !C)
    return invalid(op, "missing input");
  if (C->type != ElementType::Bool || C->shape.size() != 1)
    return invalid(op, "condition must be a 1-D bool tensor");
  size_t elem = elementSize(X->type);
  if (elem == 0)
    return invalid(op, "unsupported element type " + elementTypeName(X->type));
  // Without an axis the input is read flattened.
  std::vector<int64_t> shape = X->shape;
  int64_t axis = 0;
  if (call.attrs.has("axis")) {
    axis = call.attrs.getInt("axis", 0);
    if (!normalizeAxis(axis, shape.size()))
      return invalid(op, "axis " + std::to_string(call.attrs.getInt("axis", 0)) +
                             " is out of range");
  } else {
    shape = {X->numElements()};
  }
  const uint8_t *cond = static_cast<const uint8_t *>(C->data);
  int64_t dim = shape[axis], n = std::min(dim, C->shape[0]);
  std::vector<int64_t> keep;
  for (int64_t i = 0; i < n; ++i)
    if (cond[i])
      keep.push_back(i);
  std::vector<int64_t> outShape = shape;
  outShape[axis] = int64_t(keep.size());
  if (Status s = requireOutput(op, call); !s.isOk())
    return s;
  if (call.outputs[0].type != X->type)
    return invalid(op, "output type differs from the input's");
  Result<TensorView> out = sizedOutput(op, call, 0, outShape);
  if (!out.isOk())
    return out.status();
  const TensorView &Y = out.value();
  int64_t outer = product(shape, 0, axis), inner = product(shape, axis + 1, shape.size());
  size_t row = size_t(inner) * elem;
  const uint8_t *src = static_cast<const uint8_t *>(X->data);
  uint8_t *dst = static_cast<uint8_t *>(Y.data);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t i : keep) {
      std::memcpy(dst, src + size_t(o * dim + i) * row, row);
      dst += row;
    }
  return Status::ok();
}

Status nonZero(const KernelCall &call) {
  const char *op = "NonZero";
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
  const TensorView &in = *X;
  size_t elem = elementSize(in.type);
  if (elem == 0)
    return invalid(op, "unsupported element type " + elementTypeName(in.type));
  int64_t total = in.numElements(), rank = int64_t(in.shape.size());
  std::vector<int64_t> hits;
  for (int64_t i = 0; i < total; ++i)
    if (nonZeroAt(in, i, elem))
      hits.push_back(i);
  if (Status s = requireOutput(op, call); !s.isOk())
    return s;
  if (call.outputs[0].type != ElementType::Int64)
    return invalid(op, "output must be int64");
  int64_t count = int64_t(hits.size());
  Result<TensorView> out = sizedOutput(op, call, 0, {rank, count});
  if (!out.isOk())
    return out.status();
  const TensorView &Y = out.value();
  int64_t *dst = static_cast<int64_t *>(Y.data);
  std::vector<int64_t> strides = denseStrides(in.shape);
  for (int64_t j = 0; j < count; ++j)
    for (int64_t d = 0; d < rank; ++d)
      dst[d * count + j] = (hits[j] / strides[d]) % in.shape[d];
  return Status::ok();
}

namespace {
/// Three-way comparison of element `i` of `a` and element `j` of `b`.
int compareElements(ElementType type, const void *a, int64_t i, const void *b, int64_t j) {
  auto cmp = [](auto x, auto y) { return x < y ? -1 : (y < x ? 1 : 0); };
  switch (type) {
  case ElementType::Float:
    return cmp(static_cast<const float *>(a)[i], static_cast<const float *>(b)[j]);
  case ElementType::Double:
    return cmp(static_cast<const double *>(a)[i], static_cast<const double *>(b)[j]);
  case ElementType::Float16:
    return cmp(halfToFloat(static_cast<const uint16_t *>(a)[i]),
               halfToFloat(static_cast<const uint16_t *>(b)[j]));
  case ElementType::BFloat16:
    return cmp(bf16ToFloat(static_cast<const uint16_t *>(a)[i]),
               bf16ToFloat(static_cast<const uint16_t *>(b)[j]));
  case ElementType::Int8:
    return cmp(static_cast<const int8_t *>(a)[i], static_cast<const int8_t *>(b)[j]);
  case ElementType::Int16:
    return cmp(static_cast<const int16_t *>(a)[i], static_cast<const int16_t *>(b)[j]);
  case ElementType::Int32:
    return cmp(static_cast<const int32_t *>(a)[i], static_cast<const int32_t *>(b)[j]);
  case ElementType::Int64:
    return cmp(static_cast<const int64_t *>(a)[i], static_cast<const int64_t *>(b)[j]);
  case ElementType::UInt16:
    return cmp(static_cast<const uint16_t *>(a)[i], static_cast<const uint16_t *>(b)[j]);
  case ElementType::UInt32:
    return cmp(static_cast<const uint32_t *>(a)[i], static_cast<const uint32_t *>(b)[j]);
  case ElementType::UInt64:
    return cmp(static_cast<const uint64_t *>(a)[i], static_cast<const uint64_t *>(b)[j]);
  default: // uint8, bool
    return cmp(static_cast<const uint8_t *>(a)[i], static_cast<const uint8_t *>(b)[j]);
  }
}
} // namespace

Status unique(const KernelCall &call) {
  const char *op = "Unique";
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input 0");
  size_t elem = elementSize(X->type);
  if (elem == 0)
    return invalid(op, "unsupported element type " + elementTypeName(X->type));
  // Slices along the axis (without one, the flattened elements) are the
  // items compared: item k is `inner` elements at k * inner of each of the
  // `outer` blocks.
  std::vector<int64_t> shape = X->shape;
  bool hasAxis = call.attrs.has("axis");
  int64_t axis = 0;
  if (hasAxis) {
    axis = call.attrs.getInt("axis", 0);
    if (!normalizeAxis(axis, shape.size()))
      return invalid(op, "axis " + std::to_string(call.attrs.getInt("axis", 0)) +
                             " is out of range for rank " + std::to_string(shape.size()));
  } else {
    shape = {X->numElements()};
  }
  int64_t items = shape[axis], outer = product(shape, 0, axis),
          inner = product(shape, axis + 1, shape.size());
  auto compareItems = [&](int64_t x, int64_t y) {
    for (int64_t o = 0; o < outer; ++o)
      for (int64_t e = 0; e < inner; ++e) {
        int64_t base = o * items * inner + e;
        if (int c = compareElements(X->type, X->data, base + x * inner, X->data, base + y * inner))
          return c;
      }
    return 0;
  };
  // Items in order (sorted, or by first occurrence), stably, so each group's
  // first member is its first occurrence.
  std::vector<int64_t> order(static_cast<size_t>(items));
  for (int64_t i = 0; i < items; ++i)
    order[size_t(i)] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](int64_t x, int64_t y) { return compareItems(x, y) < 0; });
  std::vector<int64_t> firsts, counts, inverse(static_cast<size_t>(items));
  for (size_t k = 0; k < order.size(); ++k) {
    if (k == 0 || compareItems(order[k - 1], order[k]) != 0) {
      firsts.push_back(order[k]);
      counts.push_back(0);
    }
    counts.back()++;
    inverse[size_t(order[k])] = int64_t(firsts.size()) - 1;
  }
  if (call.attrs.getInt("sorted", 1) == 0) {
    // By first occurrence: renumber the groups.
    std::vector<int64_t> byFirst(firsts.size());
    for (size_t g = 0; g < firsts.size(); ++g)
      byFirst[g] = int64_t(g);
    std::sort(byFirst.begin(), byFirst.end(),
              [&](int64_t a, int64_t b) { return firsts[size_t(a)] < firsts[size_t(b)]; });
    std::vector<int64_t> rank(firsts.size()), f2(firsts.size()), c2(firsts.size());
    for (size_t r = 0; r < byFirst.size(); ++r) {
      rank[size_t(byFirst[r])] = int64_t(r);
      f2[r] = firsts[size_t(byFirst[r])];
      c2[r] = counts[size_t(byFirst[r])];
    }
    firsts = std::move(f2);
    counts = std::move(c2);
    for (int64_t &g : inverse)
      g = rank[size_t(g)];
  }
  int64_t n = int64_t(firsts.size());
  // The step lists the outputs present; output_slots maps them to ONNX's.
  std::vector<int64_t> slots = call.attrs.getInts("output_slots");
  for (size_t i = 0; i < call.numOutputs; ++i) {
    int64_t slot = i < slots.size() ? slots[i] : int64_t(i);
    std::vector<int64_t> outShape = slot == 0 ? shape : std::vector<int64_t>{slot == 2 ? items : n};
    if (slot == 0)
      outShape[axis] = n;
    if (slot != 0 && call.outputs[i].type != ElementType::Int64)
      return invalid(op, "output " + std::to_string(slot) + " must be int64");
    Result<TensorView> out = sizedOutput(op, call, i, outShape);
    if (!out.isOk())
      return out.status();
    const TensorView &Y = out.value();
    if (slot == 0) {
      if (Y.type != X->type)
        return invalid(op, "output type differs from the input's");
      size_t row = size_t(inner) * elem;
      const char *src = static_cast<const char *>(X->data);
      char *dst = static_cast<char *>(Y.data);
      for (int64_t o = 0; o < outer; ++o)
        for (int64_t first : firsts) {
          std::memcpy(dst, src + size_t((o * items + first) * inner) * elem, row);
          dst += row;
        }
    } else {
      const std::vector<int64_t> &values = slot == 1 ? firsts : slot == 2 ? inverse : counts;
      if (!values.empty())
        std::memcpy(Y.data, values.data(), values.size() * sizeof(int64_t));
    }
  }
  return Status::ok();
}

Status checkCondition(const KernelCall &call) {
  const char *op = "CheckCondition";
  const TensorView *c = dataInput(call, 0);
  if (!c || c->numElements() != 1 || !c->data)
    return invalid(op, "the condition must hold one element");
  size_t elem = elementSize(c->type);
  bool value = false;
  for (size_t b = 0; b < elem; ++b)
    value |= static_cast<const uint8_t *>(c->data)[b] != 0;
  if (value != (call.attrs.getInt("expected", 1) != 0))
    return Status::error(StatusCode::InvalidArgument,
                         call.attrs.getString("message", "a condition the compile assumed fails"));
  return Status::ok();
}

Status det(const KernelCall &call) {
  const char *op = "Det";
  const TensorView *X = dataInput(call, 0);
  if (Status s = checkFloat(op, X, "input 0"); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  if (rank < 2 || X->shape[rank - 1] != X->shape[rank - 2])
    return invalid(op, "input " + shapeToString(X->shape) + " is not [..., M, M]");
  if (Status s = requireOutput(op, call); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  std::vector<int64_t> outShape(X->shape.begin(), X->shape.end() - 2);
  if (Status s = checkFloat(op, &Y, "output 0"); !s.isOk())
    return s;
  if (Status s = checkOutputShape(op, Y, outShape); !s.isOk())
    return s;
  int64_t m = X->shape[rank - 1], count = product(outShape, 0, outShape.size());
  std::vector<double> a(size_t(m * m));
  const float *src = static_cast<const float *>(X->data);
  float *dst = static_cast<float *>(Y.data);
  for (int64_t k = 0; k < count; ++k) {
    for (int64_t i = 0; i < m * m; ++i)
      a[i] = src[k * m * m + i];
    // LU with partial pivoting, in double.
    double d = 1;
    for (int64_t c = 0; c < m && d != 0; ++c) {
      int64_t pivot = c;
      for (int64_t r = c + 1; r < m; ++r)
        if (std::fabs(a[r * m + c]) > std::fabs(a[pivot * m + c]))
          pivot = r;
      if (a[pivot * m + c] == 0) {
        d = 0;
        break;
      }
      if (pivot != c) {
        for (int64_t j = 0; j < m; ++j)
          std::swap(a[c * m + j], a[pivot * m + j]);
        d = -d;
      }
      d *= a[c * m + c];
      for (int64_t r = c + 1; r < m; ++r) {
        double f = a[r * m + c] / a[c * m + c];
        for (int64_t j = c; j < m; ++j)
          a[r * m + j] -= f * a[c * m + j];
      }
    }
    dst[k] = float(d);
  }
  return Status::ok();
}

Status constantOfShape(const KernelCall &call) {
  const char *op = "ConstantOfShape";
  const TensorView *S = dataInput(call, 0);
  if (!S || S->type != ElementType::Int64 || S->shape.size() != 1)
    return invalid(op, "input 0 must be a 1-D int64 shape");
  const int64_t *dims = static_cast<const int64_t *>(S->data);
  std::vector<int64_t> shape(dims, dims + S->numElements());
  for (int64_t d : shape)
    if (d < 0)
      return invalid(op, "shape " + shapeToString(shape) + " has a negative dim");
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Status s = checkOutputShape(op, Y, shape); !s.isOk())
    return s;
  size_t elem = elementSize(Y.type);
  if (elem == 0 || elem > 8)
    return invalid(op, "unsupported output type " + elementTypeName(Y.type));
  // The value's bits (little endian), 0 when the attribute is absent.
  uint64_t bits = uint64_t(call.attrs.getInt("value_bits", 0));
  uint8_t *y = static_cast<uint8_t *>(Y.data);
  for (int64_t i = 0, n = Y.numElements(); i < n; ++i)
    std::memcpy(y + size_t(i) * elem, &bits, elem);
  return Status::ok();
}

} // namespace ortc::cpu::kernels
