//===- ConstantFolding.cpp - onnx-fold-constants --------------------------===//
//
// Evaluates single-result onnx ops whose inputs are small constants (or, for
// Shape and Size, whose input shape is static) and replaces them with an
// onnx.Constant. This is what turns exported shape arithmetic
// (Shape -> Gather -> Unsqueeze -> Concat -> Reshape) into static shapes.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/RegionInlining.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/FunctionTypes.h"
#include "compiler/Transforms/HostTensor.h"
#include "compiler/Transforms/OpQueries.h"
#include "compiler/Transforms/ShapeArithmetic.h"
#include "runtime/ep/SliceGeometry.h"
#include "compiler/Transforms/SymbolicShapes.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"

#include <cmath>
#include <functional>
#include <limits>
#include <type_traits>

namespace ortc {
#define GEN_PASS_DEF_ONNXFOLDCONSTANTS
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
using ortc::HostTensor;

namespace {

using Inputs = SmallVector<std::optional<HostTensor>>;
using Folder = std::function<std::optional<HostTensor>(Operation *, Inputs &, int64_t)>;

SmallVector<int64_t> stridesOf(ArrayRef<int64_t> shape) {
  SmallVector<int64_t> strides(shape.size(), 1);
  for (int64_t i = static_cast<int64_t>(shape.size()) - 2; i >= 0; --i)
    strides[i] = strides[i + 1] * shape[i + 1];
  return strides;
}

/// Index into `shape` (broadcast against `outShape`) of the element at linear
/// position `linear` of the output.
int64_t broadcastIndex(int64_t linear, ArrayRef<int64_t> outShape, ArrayRef<int64_t> shape) {
  SmallVector<int64_t> outStrides = stridesOf(outShape), inStrides = stridesOf(shape);
  int64_t offset = outShape.size() - shape.size(), index = 0;
  for (size_t d = 0; d < outShape.size(); ++d) {
    int64_t coord = (linear / outStrides[d]) % outShape[d];
    if (static_cast<int64_t>(d) >= offset && shape[d - offset] != 1)
      index += coord * inStrides[d - offset];
  }
  return index;
}

std::optional<SmallVector<int64_t>> broadcastShape(ArrayRef<int64_t> a, ArrayRef<int64_t> b) {
  return ortc::broadcastShapes({SmallVector<int64_t>(a), SmallVector<int64_t>(b)});
}

/// Element count, saturating instead of overflowing on hostile shapes.
int64_t product(ArrayRef<int64_t> shape) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / std::max<int64_t>(d, 1))
      return std::numeric_limits<int64_t>::max();
    n *= d;
  }
  return n;
}

int64_t intAttr(Operation *op, StringRef name, int64_t fallback) {
  return ortc::intAttrOr(op, name, fallback);
}

std::optional<SmallVector<int64_t>> staticResultShape(Operation *op) {
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  return SmallVector<int64_t>(type.getShape());
}

/// Elementwise binary op with broadcasting; `fn` returns nullopt to refuse
/// (integer division by zero).
std::optional<HostTensor> binary(Inputs &in, Type resultElem, int64_t limit,
                                 std::function<std::optional<double>(double, double)> floatFn,
                                 std::function<std::optional<int64_t>(int64_t, int64_t)> intFn) {
  if (in.size() != 2 || !in[0] || !in[1] || in[0]->elementType != in[1]->elementType)
    return std::nullopt;
  auto shape = broadcastShape(in[0]->shape, in[1]->shape);
  if (!shape || product(*shape) > limit)
    return std::nullopt;
  HostTensor out = HostTensor::make(*shape, resultElem);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t ia = broadcastIndex(i, *shape, in[0]->shape);
    int64_t ib = broadcastIndex(i, *shape, in[1]->shape);
    if (in[0]->isFloat()) {
      auto v = floatFn(in[0]->floats[ia], in[1]->floats[ib]);
      if (!v)
        return std::nullopt;
      if (out.isFloat())
        out.floats[i] = in[0]->elementType.isF32() ? double(float(*v)) : *v;
      else
        out.ints[i] = *v != 0;
    } else {
      auto v = intFn(in[0]->ints[ia], in[1]->ints[ib]);
      if (!v)
        return std::nullopt;
      out.ints[i] = in[0]->elementType.isSignlessInteger(32) ? int64_t(int32_t(*v)) : *v;
    }
  }
  return out;
}

std::optional<HostTensor> arithmetic(Operation *op, Inputs &in, int64_t limit, char kind) {
  if (!in[0])
    return std::nullopt;
  // One body for doubles and int64s; integer division truncates toward zero,
  // as ONNX runtimes do, and division by zero is left for run time.
  auto apply = [kind](auto a, auto b) -> std::optional<decltype(a)> {
    switch (kind) {
    case '+':
      return a + b;
    case '-':
      return a - b;
    case '*':
      return a * b;
    default:
      if constexpr (std::is_integral_v<decltype(a)>)
        if (b == 0)
          return std::nullopt;
      return a / b;
    }
  };
  return binary(in, in[0]->elementType, limit, apply, apply);
}

std::optional<HostTensor> comparison(Inputs &in, int64_t limit, char kind) {
  Type i1 = in[0] ? IntegerType::get(in[0]->elementType.getContext(), 1) : Type();
  if (!i1)
    return std::nullopt;
  auto cmp = [kind](auto a, auto b) {
    switch (kind) {
    case '=':
      return a == b;
    case '<':
      return a < b;
    case 'l':
      return a <= b;
    case 'g':
      return a >= b;
    default:
      return a > b;
    }
  };
  return binary(
      in, i1, limit, [&](double a, double b) -> std::optional<double> { return cmp(a, b); },
      [&](int64_t a, int64_t b) -> std::optional<int64_t> { return cmp(a, b); });
}

std::optional<HostTensor> foldShape(Operation *op, Inputs &, int64_t limit) {
  auto type = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  int64_t rank = type.getRank();
  int64_t start = intAttr(op, "start", 0), end = intAttr(op, "end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  int64_t n = std::max<int64_t>(end - start, 0);
  if (n > limit)
    return std::nullopt;
  HostTensor out = HostTensor::make({n}, IntegerType::get(op->getContext(), 64));
  for (int64_t i = 0; i < n; ++i)
    out.ints[i] = type.getDimSize(start + i);
  return out;
}

std::optional<HostTensor> foldSize(Operation *op, Inputs &, int64_t) {
  auto type = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  HostTensor out = HostTensor::make({}, IntegerType::get(op->getContext(), 64));
  out.ints[0] = type.getNumElements();
  return out;
}

/// Same data, the result's (static) shape: Identity, Reshape, Squeeze, ...
std::optional<HostTensor> foldRelabel(Operation *op, Inputs &in, int64_t) {
  auto shape = staticResultShape(op);
  if (!in[0] || !shape || product(*shape) != in[0]->numElements())
    return std::nullopt;
  HostTensor out = *in[0];
  out.shape = *shape;
  return out;
}

std::optional<HostTensor> castTo(Type to, Inputs &in) {
  if (!in[0] || !ortc::isHostElementType(to))
    return std::nullopt;
  HostTensor out = HostTensor::make(in[0]->shape, to);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    if (to.isSignlessInteger(1)) {
      out.ints[i] = in[0]->floatAt(i) != 0;
    } else if (out.isFloat()) {
      double v = in[0]->floatAt(i);
      out.floats[i] = to.isF32() ? double(float(v)) : v;
    } else {
      if (in[0]->isFloat()) {
        double v = in[0]->floats[i];
        if (!std::isfinite(v) || std::fabs(v) > 9.2e18)
          return std::nullopt; // out of range: undefined in ONNX, leave it
        out.ints[i] = static_cast<int64_t>(v);
      } else {
        out.ints[i] = in[0]->ints[i];
      }
      if (to.isSignlessInteger(32))
        out.ints[i] = int64_t(int32_t(out.ints[i]));
    }
  }
  return out;
}

std::optional<HostTensor> foldCast(Operation *op, Inputs &in, int64_t) {
  return castTo(ortc::onnx_dialect::elementTypeForOnnxCode(op->getContext(), intAttr(op, "to", 0)),
                in);
}

std::optional<HostTensor> foldCastLike(Operation *op, Inputs &in, int64_t) {
  auto target = dyn_cast<TensorType>(op->getOperand(1).getType());
  if (!target)
    return std::nullopt;
  return castTo(target.getElementType(), in);
}

std::optional<HostTensor> foldNeg(Operation *, Inputs &in, int64_t) {
  if (!in[0] || in[0]->elementType.isSignlessInteger(1))
    return std::nullopt;
  HostTensor out = *in[0];
  for (double &v : out.floats)
    v = -v;
  for (int64_t &v : out.ints)
    v = -v;
  return out;
}

std::optional<HostTensor> foldConcat(Operation *op, Inputs &in, int64_t limit) {
  for (auto &t : in)
    if (!t || t->elementType != in[0]->elementType || t->shape.size() != in[0]->shape.size())
      return std::nullopt;
  int64_t rank = in[0]->shape.size();
  int64_t axis = intAttr(op, "axis", 0);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  SmallVector<int64_t> shape = in[0]->shape;
  shape[axis] = 0;
  for (auto &t : in) {
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && t->shape[d] != shape[d])
        return std::nullopt;
    shape[axis] += t->shape[axis];
  }
  if (product(shape) > limit)
    return std::nullopt;
  HostTensor out = HostTensor::make(shape, in[0]->elementType);
  int64_t outer = product(ArrayRef<int64_t>(shape).take_front(axis));
  int64_t inner = product(ArrayRef<int64_t>(shape).drop_front(axis + 1));
  int64_t k = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (auto &t : in)
      for (int64_t j = 0; j < t->shape[axis] * inner; ++j, ++k) {
        int64_t src = o * t->shape[axis] * inner + j;
        out.copyElement(k, *t, src);
      }
  return out;
}

std::optional<HostTensor> foldGather(Operation *op, Inputs &in, int64_t limit) {
  if (!in[0] || !in[1] || in[1]->isFloat())
    return std::nullopt;
  const HostTensor &data = *in[0], &indices = *in[1];
  int64_t rank = data.shape.size();
  int64_t axis = intAttr(op, "axis", 0);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis >= rank)
    return std::nullopt;
  SmallVector<int64_t> shape(data.shape.begin(), data.shape.begin() + axis);
  shape.append(indices.shape.begin(), indices.shape.end());
  shape.append(data.shape.begin() + axis + 1, data.shape.end());
  if (product(shape) > limit)
    return std::nullopt;
  HostTensor out = HostTensor::make(shape, data.elementType);
  int64_t outer = product(ArrayRef<int64_t>(data.shape).take_front(axis));
  int64_t inner = product(ArrayRef<int64_t>(data.shape).drop_front(axis + 1));
  int64_t n = data.shape[axis], k = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t idx : indices.ints) {
      if (idx < -n || idx >= n)
        return std::nullopt; // out of range: an error at run time, not ours to fold
      idx = idx < 0 ? idx + n : idx;
      for (int64_t j = 0; j < inner; ++j, ++k) {
        int64_t src = (o * n + idx) * inner + j;
        out.copyElement(k, data, src);
      }
    }
  return out;
}

std::optional<HostTensor> foldSlice(Operation *op, Inputs &in, int64_t limit) {
  if (!in[0] || in.size() < 3 || !in[1] || !in[2])
    return std::nullopt;
  const HostTensor &data = *in[0];
  int64_t rank = data.shape.size();
  size_t count = in[1]->ints.size();
  if (in[2]->ints.size() != count)
    return std::nullopt;
  SmallVector<int64_t> axes, steps(count, 1);
  for (size_t i = 0; i < count; ++i)
    axes.push_back(i);
  if (in.size() > 3 && in[3])
    axes = SmallVector<int64_t>(in[3]->ints);
  else if (in.size() > 3 && !in[3] && !isa<NoneType>(op->getOperand(3).getType()))
    return std::nullopt;
  if (in.size() > 4 && in[4])
    steps = SmallVector<int64_t>(in[4]->ints);
  else if (in.size() > 4 && !in[4] && !isa<NoneType>(op->getOperand(4).getType()))
    return std::nullopt;
  if (axes.size() != count || steps.size() != count)
    return std::nullopt;
  SmallVector<int64_t> start(rank, 0), step(rank, 1), shape = data.shape;
  for (size_t i = 0; i < count; ++i) {
    int64_t axis = axes[i] < 0 ? axes[i] + rank : axes[i];
    if (axis < 0 || axis >= rank || steps[i] == 0)
      return std::nullopt;
    ortc::SliceAxis range =
        ortc::sliceAxis(data.shape[axis], in[1]->ints[i], in[2]->ints[i], steps[i]);
    shape[axis] = range.count;
    start[axis] = range.start;
    step[axis] = steps[i];
  }
  if (product(shape) > limit)
    return std::nullopt;
  HostTensor out = HostTensor::make(shape, data.elementType);
  SmallVector<int64_t> outStrides = stridesOf(shape), inStrides = stridesOf(data.shape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src += (start[d] + ((i / outStrides[d]) % shape[d]) * step[d]) * inStrides[d];
    out.copyElement(i, data, src);
  }
  return out;
}

std::optional<HostTensor> foldConstantOfShape(Operation *op, Inputs &in, int64_t limit) {
  if (!in[0] || in[0]->isFloat())
    return std::nullopt;
  SmallVector<int64_t> shape(in[0]->ints);
  if (llvm::any_of(shape, [](int64_t d) { return d < 0; }) || product(shape) > limit)
    return std::nullopt;
  Type elem = Float32Type::get(op->getContext());
  double fill = 0;
  if (Attribute attr = op->getAttr("value")) {
    std::optional<HostTensor> value = ortc::readHostAttribute(attr, 1);
    if (!value || value->numElements() != 1)
      return std::nullopt; // an element type folding does not hold
    elem = value->elementType;
    fill = value->floatAt(0);
  }
  HostTensor out = HostTensor::make(shape, elem);
  for (double &v : out.floats)
    v = fill;
  for (int64_t &v : out.ints)
    v = static_cast<int64_t>(fill);
  return out;
}

std::optional<HostTensor> foldRange(Operation *op, Inputs &in, int64_t limit) {
  if (!in[0] || !in[1] || !in[2] || in[0]->numElements() != 1 || in[1]->numElements() != 1 ||
      in[2]->numElements() != 1 || in[1]->elementType != in[0]->elementType ||
      in[2]->elementType != in[0]->elementType)
    return std::nullopt;
  double start = in[0]->floatAt(0), end = in[1]->floatAt(0), delta = in[2]->floatAt(0);
  // The element count as shape inference computes it (f32: the difference in
  // f32, as runtimes do).
  double span = in[0]->elementType.isF32() ? double(float(end) - float(start)) : end - start;
  double count = std::ceil(span / delta);
  if (delta == 0 || !std::isfinite(count) || count > double(limit))
    return std::nullopt;
  int64_t n = std::max<int64_t>(static_cast<int64_t>(count), 0);
  if (n > limit)
    return std::nullopt;
  HostTensor out = HostTensor::make({n}, in[0]->elementType);
  for (int64_t i = 0; i < n; ++i) {
    if (out.isFloat())
      out.floats[i] = start + i * delta;
    else
      out.ints[i] = in[0]->ints[0] + i * in[2]->ints[0];
  }
  return out;
}

std::optional<HostTensor> foldWhere(Operation *, Inputs &in, int64_t limit) {
  if (in.size() != 3 || !in[0] || !in[1] || !in[2] || in[1]->elementType != in[2]->elementType)
    return std::nullopt;
  auto shape = broadcastShape(in[0]->shape, in[1]->shape);
  if (shape)
    shape = broadcastShape(*shape, in[2]->shape);
  if (!shape || product(*shape) > limit)
    return std::nullopt;
  HostTensor out = HostTensor::make(*shape, in[1]->elementType);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    bool c = in[0]->intAt(broadcastIndex(i, *shape, in[0]->shape)) != 0;
    const HostTensor &src = c ? *in[1] : *in[2];
    int64_t j = broadcastIndex(i, *shape, src.shape);
    out.copyElement(i, src, j);
  }
  return out;
}

/// Elementwise unary op; `fn` returns nullopt to refuse.
std::optional<HostTensor> unary(Inputs &in, std::function<std::optional<double>(double)> floatFn,
                                std::function<std::optional<int64_t>(int64_t)> intFn) {
  if (!in[0])
    return std::nullopt;
  HostTensor out = *in[0];
  bool f32 = out.elementType.isF32();
  for (double &v : out.floats) {
    if (!floatFn)
      return std::nullopt;
    auto r = floatFn(v);
    if (!r)
      return std::nullopt;
    v = f32 ? double(float(*r)) : *r;
  }
  for (int64_t &v : out.ints) {
    if (!intFn)
      return std::nullopt;
    auto r = intFn(v);
    if (!r)
      return std::nullopt;
    v = out.elementType.isSignlessInteger(32) ? int64_t(int32_t(*r)) : *r;
  }
  return out;
}

std::optional<HostTensor> logical(Inputs &in, int64_t limit, char kind) {
  if (!in[0] || !in[0]->elementType.isSignlessInteger(1))
    return std::nullopt;
  auto fn = [kind](int64_t a, int64_t b) -> std::optional<int64_t> {
    return kind == '&' ? (a && b) : kind == '|' ? (a || b) : (bool(a) != bool(b));
  };
  return binary(in, in[0]->elementType, limit, nullptr, fn);
}

std::optional<HostTensor> foldMod(Operation *op, Inputs &in, int64_t limit) {
  if (!in[0])
    return std::nullopt;
  bool fmod = intAttr(op, "fmod", 0) != 0;
  auto floatFn = [fmod](double a, double b) -> std::optional<double> {
    if (!fmod || b == 0)
      return std::nullopt; // fmod 0 is for integers only
    return std::fmod(a, b);
  };
  auto intFn = [fmod](int64_t a, int64_t b) -> std::optional<int64_t> {
    if (b == 0 || (a == std::numeric_limits<int64_t>::min() && b == -1))
      return std::nullopt;
    int64_t r = a % b;
    if (!fmod && r != 0 && ((r < 0) != (b < 0)))
      r += b; // the divisor's sign, as Python's %
    return r;
  };
  return binary(in, in[0]->elementType, limit, floatFn, intFn);
}

std::optional<HostTensor> foldMinMax(Operation *op, Inputs &in, int64_t limit, bool isMax) {
  if (in.size() != 2 || !in[0])
    return std::nullopt;
  auto pick = [isMax](auto a, auto b) -> std::optional<decltype(a)> {
    return isMax ? std::max(a, b) : std::min(a, b);
  };
  auto floatFn = [&](double a, double b) -> std::optional<double> {
    if (std::isnan(a) || std::isnan(b))
      return std::nullopt;
    return pick(a, b);
  };
  auto intFn = [&](int64_t a, int64_t b) -> std::optional<int64_t> { return pick(a, b); };
  return binary(in, in[0]->elementType, limit, floatFn, intFn);
}

std::optional<HostTensor> foldExpand(Operation *, Inputs &in, int64_t limit) {
  if (!in[0] || !in[1] || in[1]->isFloat())
    return std::nullopt;
  SmallVector<int64_t> target(in[1]->ints);
  if (llvm::any_of(target, [](int64_t d) { return d < 0; }))
    return std::nullopt;
  auto shape = broadcastShape(in[0]->shape, target);
  if (!shape || product(*shape) > limit)
    return std::nullopt;
  HostTensor out = HostTensor::make(*shape, in[0]->elementType);
  for (int64_t i = 0; i < out.numElements(); ++i)
    out.copyElement(i, *in[0], broadcastIndex(i, *shape, in[0]->shape));
  return out;
}

std::optional<HostTensor> foldTile(Operation *, Inputs &in, int64_t limit) {
  if (!in[0] || !in[1] || in[1]->isFloat() || in[1]->ints.size() != in[0]->shape.size())
    return std::nullopt;
  SmallVector<int64_t> shape;
  for (size_t d = 0; d < in[0]->shape.size(); ++d) {
    if (in[1]->ints[d] < 0)
      return std::nullopt;
    shape.push_back(in[0]->shape[d] * in[1]->ints[d]);
  }
  if (product(shape) > limit)
    return std::nullopt;
  HostTensor out = HostTensor::make(shape, in[0]->elementType);
  SmallVector<int64_t> outStrides = stridesOf(shape), inStrides = stridesOf(in[0]->shape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t src = 0;
    for (size_t d = 0; d < shape.size(); ++d)
      src += ((i / outStrides[d]) % shape[d] % in[0]->shape[d]) * inStrides[d];
    out.copyElement(i, *in[0], src);
  }
  return out;
}

std::optional<HostTensor> foldTranspose(Operation *op, Inputs &in, int64_t) {
  if (!in[0])
    return std::nullopt;
  int64_t rank = in[0]->shape.size();
  SmallVector<int64_t> perm;
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>("perm"))
    perm.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  else
    for (int64_t d = rank - 1; d >= 0; --d)
      perm.push_back(d);
  if (static_cast<int64_t>(perm.size()) != rank)
    return std::nullopt;
  SmallVector<bool> seen(rank, false);
  SmallVector<int64_t> shape;
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return std::nullopt;
    seen[p] = true;
    shape.push_back(in[0]->shape[p]);
  }
  HostTensor out = HostTensor::make(shape, in[0]->elementType);
  SmallVector<int64_t> outStrides = stridesOf(shape), inStrides = stridesOf(in[0]->shape);
  for (int64_t i = 0; i < out.numElements(); ++i) {
    int64_t src = 0;
    for (int64_t d = 0; d < rank; ++d)
      src += ((i / outStrides[d]) % shape[d]) * inStrides[perm[d]];
    out.copyElement(i, *in[0], src);
  }
  return out;
}

/// ReduceSum/Prod/Max/Min/Mean with constant (or no) axes.
std::optional<HostTensor> foldReduce(Operation *op, Inputs &in, int64_t, char kind) {
  if (!in[0])
    return std::nullopt;
  const HostTensor &data = *in[0];
  int64_t rank = data.shape.size();
  SmallVector<int64_t> axes;
  if (in.size() > 1 && in[1]) {
    if (in[1]->isFloat())
      return std::nullopt;
    axes.assign(in[1]->ints.begin(), in[1]->ints.end());
  } else if (in.size() > 1 && !isa<NoneType>(op->getOperand(1).getType())) {
    return std::nullopt;
  }
  SmallVector<bool> reduced(rank, axes.empty());
  if (axes.empty() && intAttr(op, "noop_with_empty_axes", 0))
    return data;
  for (int64_t a : axes) {
    if (a < -rank || a >= rank)
      return std::nullopt;
    reduced[a < 0 ? a + rank : a] = true;
  }
  bool keepDims = intAttr(op, "keepdims", 1);
  SmallVector<int64_t> keptShape, outShape;
  for (int64_t d = 0; d < rank; ++d) {
    keptShape.push_back(reduced[d] ? 1 : data.shape[d]);
    if (!reduced[d] || keepDims)
      outShape.push_back(reduced[d] ? 1 : data.shape[d]);
  }
  int64_t count = 1;
  for (int64_t d = 0; d < rank; ++d)
    if (reduced[d])
      count *= data.shape[d];
  if (op->getAttr("axes"))
    return std::nullopt; // the pre-opset-18 form: the importer upgrades it
  if ((kind == 'M' || kind == 'm') && count == 0)
    return std::nullopt; // max/min of nothing
  if (kind == 'a' && (count == 0 || !data.isFloat()))
    return std::nullopt;
  HostTensor out = HostTensor::make(outShape, data.elementType);
  SmallVector<bool> started(out.numElements(), false);
  SmallVector<int64_t> inStrides = stridesOf(data.shape), keptStrides = stridesOf(keptShape);
  for (int64_t i = 0; i < data.numElements(); ++i) {
    int64_t o = 0;
    for (int64_t d = 0; d < rank; ++d)
      if (!reduced[d])
        o += ((i / inStrides[d]) % data.shape[d]) * keptStrides[d];
    auto combine = [&](auto acc, auto v) {
      switch (kind) {
      case 'M':
        return std::max(acc, v);
      case 'm':
        return std::min(acc, v);
      case '*':
        return acc * v;
      default:
        return acc + v;
      }
    };
    if (data.isFloat()) {
      if (kind == 'M' || kind == 'm')
        if (std::isnan(data.floats[i]))
          return std::nullopt;
      out.floats[o] = started[o] ? combine(out.floats[o], data.floats[i]) : data.floats[i];
    } else {
      out.ints[o] = started[o] ? combine(out.ints[o], data.ints[i]) : data.ints[i];
    }
    started[o] = true;
  }
  for (int64_t o = 0; o < out.numElements(); ++o) {
    if (!started[o]) { // an empty reduction: the identity of the op
      if (out.isFloat())
        out.floats[o] = kind == '*' ? 1 : 0;
      else
        out.ints[o] = kind == '*' ? 1 : 0;
    }
    if (kind == 'a')
      out.floats[o] /= double(count);
    if (out.elementType.isF32())
      out.floats[o] = double(float(out.floats[o]));
    if (out.elementType.isSignlessInteger(32))
      out.ints[o] = int64_t(int32_t(out.ints[o]));
  }
  return out;
}

llvm::StringMap<Folder> buildFolders() {
  llvm::StringMap<Folder> f;
  f["onnx.Shape"] = foldShape;
  f["onnx.Size"] = foldSize;
  for (const char *name :
       {"onnx.Identity", "onnx.Reshape", "onnx.Squeeze", "onnx.Unsqueeze", "onnx.Flatten"})
    f[name] = foldRelabel;
  f["onnx.Cast"] = foldCast;
  f["onnx.Neg"] = foldNeg;
  f["onnx.Add"] = [](Operation *op, Inputs &in, int64_t l) { return arithmetic(op, in, l, '+'); };
  f["onnx.Sub"] = [](Operation *op, Inputs &in, int64_t l) { return arithmetic(op, in, l, '-'); };
  f["onnx.Mul"] = [](Operation *op, Inputs &in, int64_t l) { return arithmetic(op, in, l, '*'); };
  f["onnx.Div"] = [](Operation *op, Inputs &in, int64_t l) { return arithmetic(op, in, l, '/'); };
  f["onnx.Equal"] = [](Operation *, Inputs &in, int64_t l) { return comparison(in, l, '='); };
  f["onnx.Less"] = [](Operation *, Inputs &in, int64_t l) { return comparison(in, l, '<'); };
  f["onnx.Greater"] = [](Operation *, Inputs &in, int64_t l) { return comparison(in, l, '>'); };
  f["onnx.LessOrEqual"] = [](Operation *, Inputs &in, int64_t l) { return comparison(in, l, 'l'); };
  f["onnx.GreaterOrEqual"] = [](Operation *, Inputs &in, int64_t l) {
    return comparison(in, l, 'g');
  };
  f["onnx.And"] = [](Operation *, Inputs &in, int64_t l) { return logical(in, l, '&'); };
  f["onnx.Or"] = [](Operation *, Inputs &in, int64_t l) { return logical(in, l, '|'); };
  f["onnx.Xor"] = [](Operation *, Inputs &in, int64_t l) { return logical(in, l, '^'); };
  f["onnx.Not"] = [](Operation *, Inputs &in, int64_t) -> std::optional<HostTensor> {
    if (!in[0] || !in[0]->elementType.isSignlessInteger(1))
      return std::nullopt;
    return unary(in, nullptr, [](int64_t v) -> std::optional<int64_t> { return v == 0; });
  };
  f["onnx.Abs"] = [](Operation *, Inputs &in, int64_t) {
    return unary(
        in, [](double v) -> std::optional<double> { return std::fabs(v); },
        [](int64_t v) -> std::optional<int64_t> { return v < 0 ? -v : v; });
  };
  f["onnx.Sqrt"] = [](Operation *, Inputs &in, int64_t) {
    return unary(
        in, [](double v) -> std::optional<double> { return std::sqrt(v); }, nullptr);
  };
  f["onnx.Reciprocal"] = [](Operation *, Inputs &in, int64_t) {
    return unary(
        in, [](double v) -> std::optional<double> { return 1.0 / v; }, nullptr);
  };
  f["onnx.Floor"] = [](Operation *, Inputs &in, int64_t) {
    return unary(
        in, [](double v) -> std::optional<double> { return std::floor(v); }, nullptr);
  };
  f["onnx.Ceil"] = [](Operation *, Inputs &in, int64_t) {
    return unary(
        in, [](double v) -> std::optional<double> { return std::ceil(v); }, nullptr);
  };
  f["onnx.Mod"] = foldMod;
  f["onnx.Max"] = [](Operation *op, Inputs &in, int64_t l) { return foldMinMax(op, in, l, true); };
  f["onnx.Min"] = [](Operation *op, Inputs &in, int64_t l) { return foldMinMax(op, in, l, false); };
  f["onnx.Tile"] = foldTile;
  f["onnx.Transpose"] = foldTranspose;
  f["onnx.CastLike"] = foldCastLike;
  f["onnx.ReduceSum"] = [](Operation *op, Inputs &in, int64_t l) {
    return foldReduce(op, in, l, '+');
  };
  f["onnx.ReduceProd"] = [](Operation *op, Inputs &in, int64_t l) {
    return foldReduce(op, in, l, '*');
  };
  f["onnx.ReduceMax"] = [](Operation *op, Inputs &in, int64_t l) {
    return foldReduce(op, in, l, 'M');
  };
  f["onnx.ReduceMin"] = [](Operation *op, Inputs &in, int64_t l) {
    return foldReduce(op, in, l, 'm');
  };
  f["onnx.ReduceMean"] = [](Operation *op, Inputs &in, int64_t l) {
    return foldReduce(op, in, l, 'a');
  };
  f["onnx.Concat"] = foldConcat;
  f["onnx.Gather"] = foldGather;
  f["onnx.Slice"] = foldSlice;
  f["onnx.ConstantOfShape"] = foldConstantOfShape;
  f["onnx.Range"] = foldRange;
  f["onnx.Where"] = foldWhere;
  f["onnx.Expand"] = foldExpand;
  return f;
}

/// A static-shaped function argument with no elements is a constant: there
/// is nothing to read (reductions given empty `axes` as a graph input).
unsigned foldEmptyArguments(func::FuncOp func) {
  unsigned folded = 0;
  if (func.getBody().empty())
    return 0;
  Block &entry = func.getBody().front();
  for (BlockArgument arg : entry.getArguments()) {
    auto type = dyn_cast<RankedTensorType>(arg.getType());
    if (!type || !type.hasStaticShape() || type.getNumElements() != 0 ||
        !ortc::isHostElementType(type.getElementType()))
      continue;
    bool used = llvm::any_of(arg.getUsers(), [](Operation *u) { return !isa<func::ReturnOp>(u); });
    if (!used)
      continue;
    OpBuilder builder = OpBuilder::atBlockBegin(&entry);
    OperationState state(arg.getLoc(), "onnx.Constant");
    Attribute value = HostTensor::make(type.getShape(), type.getElementType()).toAttribute();
    state.addAttribute("value", value);
    state.addTypes(type);
    Operation *constant = builder.create(state);
    arg.replaceUsesWithIf(constant->getResult(0),
                          [](OpOperand &use) { return !isa<func::ReturnOp>(use.getOwner()); });
    ++folded;
  }
  return folded;
}

/// If with a constant condition becomes the branch it takes: its ops move
/// before the If and the branch's yielded values replace the If's results,
/// where their types agree.
unsigned foldConstantIfs(func::FuncOp func) {
  SmallVector<Operation *> ifs;
  func.walk([&](Operation *op) {
    if (op->getName().getStringRef() == "onnx.If" && op->getNumRegions() == 2)
      ifs.push_back(op);
  });
  unsigned folded = 0;
  // Post-order: an inner If goes before its parent, so no listed op is in a
  // region erased earlier.
  for (Operation *op : ifs) {
    std::optional<HostTensor> cond = ortc::readHostTensor(op->getOperand(0), 1);
    if (!cond || cond->numElements() != 1)
      continue;
    // The typed If's regions are (else_branch, then_branch).
    Region &branch = op->getRegion(cond->floatAt(0) != 0 ? 1 : 0);
    if (!branch.hasOneBlock() || branch.front().getNumArguments() != 0)
      continue;
    Block &block = branch.front();
    Operation *yield = block.getTerminator();
    if (!yield || yield->getNumOperands() != op->getNumResults())
      continue;
    bool typesAgree = true;
    for (auto [result, value] : llvm::zip(op->getResults(), yield->getOperands())) {
      Type have = result.getType(), give = value.getType();
      auto haveTensor = dyn_cast<TensorType>(have), giveTensor = dyn_cast<TensorType>(give);
      bool refines =
          have == give ||
          (haveTensor && giveTensor && haveTensor.getElementType() == giveTensor.getElementType() &&
           (!haveTensor.hasRank() ||
            (giveTensor.hasRank() && haveTensor.getRank() == giveTensor.getRank())));
      typesAgree &= refines;
    }
    if (!typesAgree)
      continue;
    ortc::inlineRegionInPlaceOf(op, branch);
    ++folded;
  }
  return folded;
}

/// A small int tensor computed from shapes whose every element is known,
/// although an input is not constant: Gather(Shape(x), k) for a static dim k
/// of an x whose batch is dynamic (its elements in SymbolicShapes).
std::optional<HostTensor> foldKnownShapeValues(Operation *op, int64_t limit,
                                               const ortc::SymbolicShapes &shapes) {
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!type || !type.hasStaticShape() || type.getRank() > 1 || type.getNumElements() > limit ||
      !(type.getElementType().isSignlessInteger(64) || type.getElementType().isSignlessInteger(32)))
    return std::nullopt;
  const SmallVector<int32_t> *elements = shapes.elements(op->getResult(0));
  if (!elements || int64_t(elements->size()) != type.getNumElements())
    return std::nullopt;
  HostTensor out = HostTensor::make(type.getShape(), type.getElementType());
  for (size_t i = 0; i < elements->size(); ++i) {
    std::optional<int64_t> value = shapes.table().constantValue((*elements)[i]);
    if (!value)
      return std::nullopt;
    out.ints[i] = *value;
  }
  return out;
}

/// Reshape(x, [Shape(x)[0], ..., -1]): an unknown target element that is
/// dim i of x itself, at position i, is what 0 means in a Reshape target
/// (copy the input's dim), so the target becomes a constant with 0 there
/// (x.view(x.size(0), -1) as exporters write it, with a dynamic batch).
unsigned foldReshapeTargets(func::FuncOp func, const ortc::SymbolicShapes &shapes) {
  ortc::DimTable &table = shapes.table();
  unsigned folded = 0;
  func.walk([&](Operation *op) {
    if (op->getName().getStringRef() != "onnx.Reshape" || op->getNumOperands() != 2)
      return;
    auto allowZero = op->getAttrOfType<IntegerAttr>("allowzero");
    Value data = op->getOperand(0), target = op->getOperand(1);
    if ((allowZero && allowZero.getInt() != 0) || ortc::getConstantIntValues(target))
      return;
    auto targetType = dyn_cast<RankedTensorType>(target.getType());
    const SmallVector<int32_t> *elements = shapes.elements(target);
    const SmallVector<int32_t> *dims = shapes.dims(data);
    if (!targetType || !targetType.hasStaticShape() || targetType.getRank() != 1 || !elements ||
        !dims || int64_t(elements->size()) != targetType.getNumElements())
      return;
    HostTensor constant = HostTensor::make(targetType.getShape(), targetType.getElementType());
    for (auto [i, e] : llvm::enumerate(*elements)) {
      if (std::optional<int64_t> value = table.constantValue(e))
        constant.ints[i] = *value;
      else if (i < dims->size() && (*dims)[i] == e)
        constant.ints[i] = 0;
      else
        return;
    }
    OpBuilder builder(op);
    OperationState state(op->getLoc(), "onnx.Constant");
    Attribute value = constant.toAttribute();
    state.addAttribute("value", value);
    state.addTypes(cast<TypedAttr>(value).getType());
    op->setOperand(1, builder.create(state)->getResult(0));
    ++folded;
  });
  return folded;
}

} // namespace

unsigned ortc::foldConstantsIn(func::FuncOp func, int64_t maxElements) {
  static const llvm::StringMap<Folder> folders = buildFolders();
  unsigned folded = foldEmptyArguments(func);
  // Built before any op is erased: Reshape targets only add constants, and
  // the loop asks it only of ops of `ops`, each before that op is erased (so
  // no key can be the address of a value created since).
  ortc::SymbolicShapes shapes(func, ortc::SymbolicShapes::Walk::WithRegions);
  folded += foldReshapeTargets(func, shapes);
  SmallVector<Operation *> ops;
  func.walk<WalkOrder::PreOrder>([&](Operation *op) { ops.push_back(op); });
  for (Operation *op : ops) {
    auto folder = folders.find(op->getName().getStringRef());
    if (folder == folders.end() || op->getNumResults() != 1)
      continue;
    // Reshape/Squeeze/Unsqueeze/Expand read only their data as a tensor.
    Inputs inputs;
    for (Value operand : op->getOperands())
      inputs.push_back(isa<NoneType>(operand.getType())
                           ? std::nullopt
                           : ortc::readHostTensor(operand, maxElements));
    std::optional<HostTensor> result = folder->second(op, inputs, maxElements);
    if (!result)
      result = foldKnownShapeValues(op, maxElements, shapes);
    if (!result)
      continue;
    // The value must fit the type the result already has.
    auto have = dyn_cast<TensorType>(op->getResult(0).getType());
    if (have &&
        (have.getElementType() != result->elementType ||
         (have.hasRank() && (have.getRank() != int64_t(result->shape.size()) ||
                             llvm::any_of(llvm::zip(have.getShape(), result->shape), [](auto dims) {
                               auto [a, b] = dims;
                               return a != ShapedType::kDynamic && a != b;
                             })))))
      continue;
    OpBuilder builder(op);
    OperationState state(op->getLoc(), "onnx.Constant");
    Attribute value = result->toAttribute();
    state.addAttribute("value", value);
    state.addTypes(cast<TypedAttr>(value).getType());
    Operation *constant = builder.create(state);
    op->getResult(0).replaceAllUsesWith(constant->getResult(0));
    op->erase();
    ++folded;
  }
  folded += foldConstantIfs(func);
  ortc::syncFunctionResultTypes(func);
  return folded;
}

namespace {

struct OnnxFoldConstants : ortc::impl::OnnxFoldConstantsBase<OnnxFoldConstants> {
  using Base::Base;

  void runOnOperation() override {
    numFolded += ortc::foldConstantsIn(getOperation(), maxElements);
  }
};

} // namespace
