//===- SymbolicShapes.cpp - every dynamic dim as an expression ------------===//

#include "compiler/Transforms/SymbolicShapes.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/HostTensor.h"
#include "compiler/Transforms/OpQueries.h"
#include "compiler/Transforms/Passes.h"
#include "runtime/ep/WindowGeometry.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <deque>
#include <set>
#include <functional>

using namespace mlir;

namespace ortc {

namespace {

using Dims = SmallVector<int32_t>;

std::optional<SmallVector<int64_t>> intsAttr(Operation *op, StringRef name) {
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name))
    return SmallVector<int64_t>(a.asArrayRef());
  if (auto a = op->getAttrOfType<ArrayAttr>(name)) {
    SmallVector<int64_t> out;
    for (Attribute e : a)
      if (auto i = dyn_cast<IntegerAttr>(e))
        out.push_back(i.getInt());
      else
        return std::nullopt;
    return out;
  }
  return std::nullopt;
}

int64_t normalized(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// Attribute "axis" (default `fallback`) normalized against `rank`; -1 when
/// it is out of [0, rank) (or [0, rank] with `endAllowed`, Flatten's).
int64_t axisOf(Operation *op, int64_t fallback, size_t rank, bool endAllowed = false) {
  int64_t axis = normalized(intAttrOr(op, "axis", fallback), int64_t(rank));
  bool inRange = axis >= 0 && (axis < int64_t(rank) || (endAllowed && axis == int64_t(rank)));
  return inRange ? axis : -1;
}

/// An ints attribute, or `count` copies of `fill` when absent.
SmallVector<int64_t> intsAttrOr(Operation *op, StringRef name, size_t count, int64_t fill) {
  return intsAttr(op, name).value_or(SmallVector<int64_t>(count, fill));
}

/// A window op's auto_pad (NOTSET when absent); nullopt for an unknown one.
std::optional<AutoPad> autoPadOf(Operation *op) {
  auto text = op->getAttrOfType<StringAttr>("auto_pad");
  return parseAutoPad(text ? text.getValue().str() : std::string("NOTSET"));
}

/// Axes from input `operand` when it is a constant, else from attribute
/// `name` (older opsets), else nullopt.
std::optional<SmallVector<int64_t>> axesOf(Operation *op, unsigned operand, StringRef name) {
  if (operand < op->getNumOperands() && !isAbsentOperand(op->getOperand(operand)))
    return getConstantIntValues(op->getOperand(operand));
  if (auto a = intsAttr(op, name))
    return a;
  return SmallVector<int64_t>{};
}

} // namespace

/// The per-op rules, with access to the analysis' state.
class SymbolicRules {
public:
  explicit SymbolicRules(SymbolicShapes &s) : s(s), t(s.table_) {}

  void run(Operation *op) {
    scratch.clear();
    apply(op);
    // A rule that could not apply leaves its dynamic dims unknown: guessing
    // the batch there would be wrong for a Reshape or Slice.
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      if (!s.dims(op->getResult(i)))
        propose(op, i, {}, /*leadingFallback=*/false);
  }

private:
  void apply(Operation *op);
  SymDim dim(int32_t id) { return {&t, id}; }
  int32_t c(int64_t v) { return t.constant(v); }
  const Dims *in(Operation *op, unsigned i) {
    if (i >= op->getNumOperands())
      return nullptr;
    return s.dims(op->getOperand(i));
  }
  const Dims *elems(Value v) { return s.elements(v); }
  /// A small integer input as expressions: a shape value, or a constant of
  /// any integer type (kept for the op's lifetime in `scratch`).
  const Dims *boundsOf(Value v) {
    if (const Dims *e = elems(v))
      return e;
    auto values = getConstantIntValues(v);
    if (!values)
      return nullptr;
    Dims &out = scratch.emplace_back();
    for (int64_t x : *values)
      out.push_back(c(x));
    return &out;
  }
  void setElements(Value v, Dims e) { s.elements_[v] = std::move(e); }
  void propose(Operation *op, unsigned result, Dims dims, bool leadingFallback = true);
  int32_t product(const Dims &d, size_t begin, size_t end) {
    return s.product(ArrayRef<int32_t>(d).slice(begin, end - begin));
  }
  /// Axes normalized against `rank` as a mask; nullopt when one is out of range.
  std::optional<SmallVector<bool>> axisMask(ArrayRef<int64_t> axes, int64_t rank) {
    SmallVector<bool> mask(rank, false);
    for (int64_t a : axes) {
      a = normalized(a, rank);
      if (a < 0 || a >= rank)
        return std::nullopt;
      mask[a] = true;
    }
    return mask;
  }
  /// numpy broadcasting: a dim against 1 or its equal, else their max (the
  /// only value valid inputs can give).
  std::optional<Dims> broadcast(ArrayRef<const Dims *> operands) {
    size_t rank = 0;
    for (const Dims *d : operands) {
      if (!d)
        return std::nullopt;
      rank = std::max(rank, d->size());
    }
    Dims out(rank, c(1));
    for (const Dims *d : operands)
      for (size_t i = 0; i < d->size(); ++i) {
        int32_t &o = out[rank - d->size() + i];
        int32_t x = (*d)[i];
        if (x == kUnknownDim || o == kUnknownDim) {
          o = kUnknownDim;
          continue;
        }
        if (t.constantValue(x) == 1 || x == o)
          continue;
        o = t.constantValue(o) == 1 ? x : t.max(o, x);
      }
    return out;
  }

  void shapeValue(Operation *op, StringRef name);

  SymbolicShapes &s;
  DimTable &t;
  std::deque<Dims> scratch;
};

void SymbolicRules::propose(Operation *op, unsigned result, Dims dims, bool leadingFallback) {
  if (result >= op->getNumResults())
    return;
  Value v = op->getResult(result);
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return;
  Dims &out = s.dims_[v];
  out.assign(type.getRank(), kUnknownDim);
  // A static dim of the type wins; a rule fills only the dynamic ones.
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (!type.isDynamicDim(i))
      out[i] = c(type.getDimSize(i));
    else if (dims.size() == size_t(type.getRank()))
      out[i] = dims[i];
  }
  // Without a rule, a leading dynamic dim alone is the inputs' leading one
  // when they agree on it (the batch an op carries through), as the CPU EP's
  // batch-only claims have always read it.
  if (!leadingFallback || type.getRank() == 0 || out[0] != kUnknownDim)
    return;
  for (int64_t i = 1; i < type.getRank(); ++i)
    if (out[i] == kUnknownDim)
      return;
  int32_t lead = kUnknownDim;
  for (Value operand : op->getOperands()) {
    auto t = dyn_cast<RankedTensorType>(operand.getType());
    if (!t || t.getRank() == 0 || !t.isDynamicDim(0))
      continue;
    const Dims *d = s.dims(operand);
    if (!d || (*d)[0] == kUnknownDim || (lead != kUnknownDim && lead != (*d)[0]))
      return;
    lead = (*d)[0];
  }
  out[0] = lead;
}

void SymbolicRules::shapeValue(Operation *op, StringRef name) {
  if (name == "onnx.Split") {
    // A shape value split into parts: each part's elements, in order.
    const Dims *e = elems(op->getOperand(0));
    if (!e || intAttrOr(op, "axis", 0) != 0)
      return;
    size_t next = 0;
    for (Value part : op->getResults()) {
      auto type = dyn_cast<RankedTensorType>(part.getType());
      if (!type || type.getRank() != 1 || !type.hasStaticShape() ||
          next + size_t(type.getNumElements()) > e->size())
        return;
      setElements(part, Dims(e->begin() + next, e->begin() + next + type.getNumElements()));
      next += size_t(type.getNumElements());
    }
    return;
  }
  if (op->getNumResults() != 1)
    return;
  Value r = op->getResult(0);
  auto type = dyn_cast<RankedTensorType>(r.getType());
  // Shapes are int64; Paddle2ONNX casts them to int32 and back, and YOLO
  // exports to float for a Range over a grid. A float shape value holds
  // whole numbers only.
  Type element = type ? type.getElementType() : Type();
  bool isFloat = element && (element.isF32() || element.isF64());
  if (!type || type.getRank() > 1 ||
      !(((element.isInteger(64) || element.isInteger(32)) && !element.isUnsignedInteger()) ||
        isFloat) ||
      !type.hasStaticShape() ||
      type.getNumElements() > 64)
    return;
  if (auto values = getConstantIntValues(r)) {
    Dims e;
    for (int64_t v : *values)
      e.push_back(c(v));
    setElements(r, e);
    return;
  }
  if (isFloat && name == "onnx.Constant") {
    std::optional<HostTensor> values = readHostTensor(r, 64);
    if (!values)
      return;
    Dims e;
    for (int64_t i = 0; i < values->numElements(); ++i) {
      double v = values->floatAt(i);
      if (v != double(int64_t(v)) || std::abs(v) > double(int64_t(1) << 40))
        return;
      e.push_back(c(int64_t(v)));
    }
    setElements(r, e);
    return;
  }
  auto operandElems = [&](unsigned i) -> const Dims * {
    return i < op->getNumOperands() ? elems(op->getOperand(i)) : nullptr;
  };
  if (name == "onnx.Shape") {
    const Dims *d = in(op, 0);
    if (!d)
      return;
    int64_t rank = int64_t(d->size());
    int64_t start = normalized(intAttrOr(op, "start", 0), rank);
    int64_t end = op->hasAttr("end") ? normalized(intAttrOr(op, "end", rank), rank) : rank;
    start = std::clamp<int64_t>(start, 0, rank);
    end = std::clamp<int64_t>(end, start, rank);
    Dims e(d->begin() + start, d->begin() + end);
    if (llvm::is_contained(e, kUnknownDim))
      return;
    setElements(r, e);
    return;
  }
  if (name == "onnx.Cast" || name == "onnx.Identity" || name == "onnx.Squeeze" ||
      name == "onnx.Unsqueeze" || name == "onnx.Reshape" || name == "onnx.Flatten") {
    if (const Dims *e = operandElems(0))
      if (int64_t(e->size()) == std::max<int64_t>(type.getNumElements(), 1))
        setElements(r, *e);
    return;
  }
  if (name == "onnx.Gather") {
    const Dims *e = operandElems(0);
    auto indices = getConstantIntValues(op->getOperand(1));
    if (!e || !indices || intAttrOr(op, "axis", 0) != 0)
      return;
    Dims out;
    for (int64_t i : *indices) {
      i = normalized(i, int64_t(e->size()));
      if (i < 0 || i >= int64_t(e->size()))
        return;
      out.push_back((*e)[i]);
    }
    setElements(r, out);
    return;
  }
  if (name == "onnx.Slice") {
    const Dims *e = operandElems(0);
    auto starts = getConstantIntValues(op->getOperand(1));
    auto ends = getConstantIntValues(op->getOperand(2));
    if (!e || !starts || !ends || starts->size() != 1 || ends->size() != 1)
      return;
    int64_t step = 1;
    if (op->getNumOperands() > 4 && !isAbsentOperand(op->getOperand(4))) {
      auto steps = getConstantIntValues(op->getOperand(4));
      if (!steps || steps->size() != 1)
        return;
      step = (*steps)[0];
    }
    int64_t n = int64_t(e->size());
    if (step <= 0)
      return;
    int64_t b = std::clamp<int64_t>(normalized((*starts)[0], n), 0, n);
    int64_t en = std::clamp<int64_t>(normalized((*ends)[0], n), 0, n);
    Dims out;
    for (int64_t i = b; i < en; i += step)
      out.push_back((*e)[i]);
    setElements(r, out);
    return;
  }
  if (name == "onnx.Concat") {
    Dims out;
    for (Value v : op->getOperands()) {
      const Dims *e = elems(v);
      if (!e)
        return;
      out.append(e->begin(), e->end());
    }
    setElements(r, out);
    return;
  }
  static const llvm::StringMap<std::function<int32_t(DimTable &, int32_t, int32_t)>> arith = {
      {"onnx.Add", [](DimTable &t, int32_t a, int32_t b) { return t.add(a, b); }},
      {"onnx.Sub", [](DimTable &t, int32_t a, int32_t b) { return t.sub(a, b); }},
      {"onnx.Mul", [](DimTable &t, int32_t a, int32_t b) { return t.mul(a, b); }},
      // Integer Div truncates, which is floor when both are not negative
      // (kUnknownDim otherwise: a value symbol may be negative).
      {"onnx.Div",
       [](DimTable &t, int32_t a, int32_t b) {
         std::optional<int64_t> la = t.lowerBound(a), lb = t.lowerBound(b);
         return la && lb && *la >= 0 && *lb >= 0 ? t.floorDiv(a, b) : kUnknownDim;
       }},
      {"onnx.Max", [](DimTable &t, int32_t a, int32_t b) { return t.max(a, b); }},
      {"onnx.Min", [](DimTable &t, int32_t a, int32_t b) { return t.min(a, b); }},
  };
  auto fn = arith.find(name);
  // Float division is not floor division.
  if (fn != arith.end() && op->getNumOperands() == 2 && !(isFloat && name == "onnx.Div")) {
    const Dims *a = operandElems(0), *b = operandElems(1);
    if (!a || !b)
      return;
    size_t n = std::max(a->size(), b->size());
    if ((a->size() != n && a->size() != 1) || (b->size() != n && b->size() != 1))
      return;
    Dims out;
    for (size_t i = 0; i < n; ++i) {
      out.push_back(fn->second(t, (*a)[a->size() == 1 ? 0 : i], (*b)[b->size() == 1 ? 0 : i]));
      if (out.back() == kUnknownDim)
        return;
    }
    setElements(r, out);
  }
}

void SymbolicRules::apply(Operation *op) {
  StringRef name = op->getName().getStringRef();
  shapeValue(op, name);
  if (op->getNumResults() == 0)
    return;
  auto rankOf = [&](unsigned result) -> int64_t {
    auto type = dyn_cast<RankedTensorType>(op->getResult(result).getType());
    return type ? type.getRank() : -1;
  };
  // Only results with a dynamic dim need a rule.
  bool anyDynamic = false;
  for (Value r : op->getResults())
    if (auto type = dyn_cast<RankedTensorType>(r.getType()))
      anyDynamic |= !type.hasStaticShape();
  if (!anyDynamic) {
    for (unsigned i = 0; i < op->getNumResults(); ++i)
      propose(op, i, {});
    return;
  }

  const Dims *x = in(op, 0);
  if (hasInput0Shape(name) || name == "onnx.Cast" || name == "onnx.CastLike" ||
      name == "onnx.Dropout" || name == "onnx.IsNaN" || name == "onnx.IsInf" ||
      name == "onnx.BatchNormalization" || name == "onnx.LayerNormalization" ||
      name == "onnx.InstanceNormalization" || name == "onnx.GroupNormalization" ||
      name == "ortc.layer_norm" || name == "ortc.gelu") {
    if (x)
      propose(op, 0, *x);
    return;
  }
  if (name == "onnx.Where" || isBroadcastOp(name)) {
    SmallVector<const Dims *> operands;
    for (unsigned i = 0; i < op->getNumOperands(); ++i)
      operands.push_back(in(op, i));
    if (auto out = broadcast(operands))
      propose(op, 0, *out);
    return;
  }
  if (name == "onnx.MatMul" || name == "ortc.attention") {
    const Dims *a = x, *b = in(op, name == "onnx.MatMul" ? 1 : 2);
    if (!a || !b || a->empty() || b->empty())
      return;
    if (name == "ortc.attention") {
      Dims out = *a;
      out.back() = b->back();
      propose(op, 0, out);
      return;
    }
    Dims ab(a->begin(), a->end() - std::min<size_t>(a->size(), 2));
    Dims bb(b->begin(), b->end() - std::min<size_t>(b->size(), 2));
    auto batch = broadcast({&ab, &bb});
    if (!batch)
      return;
    Dims out = *batch;
    if (a->size() >= 2)
      out.push_back((*a)[a->size() - 2]);
    if (b->size() >= 2)
      out.push_back(b->back());
    propose(op, 0, out);
    return;
  }
  if (name == "onnx.Gemm") {
    const Dims *b = in(op, 1);
    if (!x || !b || x->size() != 2 || b->size() != 2)
      return;
    propose(op, 0,
            {(*x)[intAttrOr(op, "transA", 0) ? 1 : 0], (*b)[intAttrOr(op, "transB", 0) ? 0 : 1]});
    return;
  }
  if (name == "onnx.Transpose") {
    if (!x)
      return;
    SmallVector<int64_t> perm;
    if (auto p = intsAttr(op, "perm"))
      perm = *p;
    else
      for (int64_t i = int64_t(x->size()) - 1; i >= 0; --i)
        perm.push_back(i);
    Dims out;
    for (int64_t p : perm) {
      if (p < 0 || p >= int64_t(x->size()))
        return;
      out.push_back((*x)[p]);
    }
    propose(op, 0, out);
    return;
  }
  if (name == "onnx.Reshape") {
    const Dims *target = op->getNumOperands() > 1 ? elems(op->getOperand(1)) : nullptr;
    if (!x || !target)
      return;
    bool allowZero = intAttrOr(op, "allowzero", 0) != 0;
    Dims out;
    int inferred = -1;
    for (size_t i = 0; i < target->size(); ++i) {
      int32_t d = (*target)[i];
      std::optional<int64_t> v = t.constantValue(d);
      // An input's value may be -1 (infer) or 0 (copy) at run time: no one
      // expression. (Elements computed from dims are taken as the sizes.)
      if (!v && t.readsSigned(d))
        return;
      if (v == 0 && !allowZero) {
        if (i >= x->size())
          return;
        d = (*x)[i];
      } else if (v == -1) {
        inferred = int(i);
      }
      out.push_back(d);
    }
    if (inferred >= 0) {
      Dims others = out;
      others.erase(others.begin() + inferred);
      int32_t total = product(*x, 0, x->size()), rest = product(others, 0, others.size());
      if (total == kUnknownDim || rest == kUnknownDim)
        return;
      out[inferred] = t.floorDiv(total, rest);
    }
    propose(op, 0, out);
    return;
  }
  if (name == "onnx.Flatten") {
    if (!x)
      return;
    int64_t axis = axisOf(op, 1, x->size(), /*endAllowed=*/true);
    if (axis < 0)
      return;
    propose(op, 0, {product(*x, 0, size_t(axis)), product(*x, size_t(axis), x->size())});
    return;
  }
  if (name == "onnx.Unsqueeze" || name == "onnx.Squeeze") {
    auto axes = axesOf(op, 1, "axes");
    if (!x || !axes)
      return;
    int64_t outRank = rankOf(0);
    if (outRank < 0)
      return;
    bool unsqueeze = name == "onnx.Unsqueeze";
    auto mask = axisMask(*axes, unsqueeze ? outRank : int64_t(x->size()));
    if (!mask)
      return;
    Dims out;
    if (unsqueeze) {
      size_t next = 0;
      for (int64_t i = 0; i < outRank; ++i)
        out.push_back((*mask)[i] ? c(1) : next < x->size() ? (*x)[next++] : kUnknownDim);
    } else {
      // No axes: every static 1 goes.
      for (size_t i = 0; i < x->size(); ++i)
        if (!(axes->empty() ? t.constantValue((*x)[i]) == 1 : (*mask)[i]))
          out.push_back((*x)[i]);
    }
    propose(op, 0, out);
    return;
  }
  if (name == "onnx.Concat") {
    if (!x)
      return;
    int64_t axis = axisOf(op, 0, x->size());
    if (axis < 0)
      return;
    Dims out = *x;
    for (unsigned i = 1; i < op->getNumOperands(); ++i) {
      const Dims *d = in(op, i);
      if (!d || d->size() != x->size() || out[axis] == kUnknownDim || (*d)[axis] == kUnknownDim)
        return;
      out[axis] = t.add(out[axis], (*d)[axis]);
    }
    propose(op, 0, out);
    return;
  }
  bool isConv = name == "onnx.Conv";
  if (isConv || name == "onnx.MaxPool" || name == "onnx.AveragePool" || name == "onnx.LpPool") {
    if (!x || x->size() < 3)
      return;
    size_t spatial = x->size() - 2;
    SmallVector<int64_t> kernel;
    if (auto k = intsAttr(op, "kernel_shape")) {
      kernel = *k;
    } else if (isConv) {
      auto w = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
      if (!w || !w.hasStaticShape())
        return;
      kernel.assign(w.getShape().begin() + 2, w.getShape().end());
    }
    if (kernel.size() != spatial)
      return;
    SmallVector<int64_t> strides = intsAttrOr(op, "strides", spatial, 1),
                         dilations = intsAttrOr(op, "dilations", spatial, 1),
                         pads = intsAttrOr(op, "pads", 2 * spatial, 0);
    std::optional<AutoPad> autoPad = autoPadOf(op);
    if (!autoPad || strides.size() != spatial || dilations.size() != spatial ||
        pads.size() != 2 * spatial)
      return;
    bool ceilMode = !isConv && intAttrOr(op, "ceil_mode", 0) != 0;
    Dims out = {(*x)[0], kUnknownDim};
    for (size_t i = 0; i < spatial; ++i) {
      int32_t d = (*x)[2 + i];
      if (d == kUnknownDim)
        return;
      out.push_back(windowOutputSize(dim(d), kernel[i], strides[i], dilations[i], pads[i],
                                     pads[spatial + i], *autoPad, ceilMode)
                        .id);
    }
    propose(op, 0, out); // channels: static in the type
    if (name == "onnx.MaxPool")
      propose(op, 1, out);
    return;
  }
  if (name == "onnx.ConvTranspose") {
    auto w = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
    if (!x || x->size() < 3 || !w || !w.hasStaticShape())
      return;
    size_t spatial = x->size() - 2;
    if (op->hasAttr("output_shape")) {
      Dims out(x->size(), kUnknownDim); // spatial dims: static in the type
      out[0] = (*x)[0];
      propose(op, 0, out);
      return;
    }
    SmallVector<int64_t> kernel(w.getShape().begin() + 2, w.getShape().end());
    SmallVector<int64_t> strides = intsAttrOr(op, "strides", spatial, 1),
                         dilations = intsAttrOr(op, "dilations", spatial, 1),
                         outputPadding = intsAttrOr(op, "output_padding", spatial, 0),
                         pads = intsAttrOr(op, "pads", 2 * spatial, 0);
    std::optional<AutoPad> autoPad = autoPadOf(op);
    if (!autoPad || kernel.size() != spatial || strides.size() != spatial ||
        dilations.size() != spatial || outputPadding.size() != spatial ||
        pads.size() != 2 * spatial)
      return;
    Dims out = {(*x)[0], kUnknownDim};
    for (size_t i = 0; i < spatial; ++i) {
      int32_t d = (*x)[2 + i];
      if (d == kUnknownDim)
        return;
      out.push_back(transposedWindowOutputSize(dim(d), kernel[i], strides[i], dilations[i],
                                               outputPadding[i], pads[i], pads[spatial + i],
                                               *autoPad)
                        .id);
    }
    propose(op, 0, out); // channels: static in the type
    return;
  }
  if (name == "onnx.GlobalAveragePool" || name == "onnx.GlobalMaxPool" ||
      name == "onnx.GlobalLpPool") {
    if (!x || x->size() < 2)
      return;
    Dims out = {(*x)[0], (*x)[1]};
    out.resize(x->size(), c(1));
    propose(op, 0, out);
    return;
  }
  if (name.starts_with("onnx.Reduce") || name == "onnx.ArgMax" || name == "onnx.ArgMin") {
    if (!x)
      return;
    bool arg = name == "onnx.ArgMax" || name == "onnx.ArgMin";
    std::optional<SmallVector<int64_t>> axes =
        arg ? std::optional(SmallVector<int64_t>{intAttrOr(op, "axis", 0)}) : axesOf(op, 1, "axes");
    if (!axes)
      return;
    bool keep = intAttrOr(op, "keepdims", 1) != 0;
    auto reduced = axisMask(*axes, int64_t(x->size()));
    if (!reduced)
      return;
    // No axes: all of them, unless noop_with_empty_axes.
    if (axes->empty() && !intAttrOr(op, "noop_with_empty_axes", 0))
      reduced->assign(x->size(), true);
    Dims out;
    for (size_t i = 0; i < x->size(); ++i)
      if (!(*reduced)[i])
        out.push_back((*x)[i]);
      else if (keep)
        out.push_back(c(1));
    propose(op, 0, out);
    return;
  }
  if (name == "onnx.Gather") {
    const Dims *idx = in(op, 1);
    if (!x || !idx)
      return;
    int64_t axis = axisOf(op, 0, x->size());
    if (axis < 0)
      return;
    Dims out(x->begin(), x->begin() + axis);
    out.append(idx->begin(), idx->end());
    out.append(x->begin() + axis + 1, x->end());
    propose(op, 0, out);
    return;
  }
  if (name == "onnx.Slice") {
    if (!x)
      return;
    // Bounds may be shape values (Slice(x, 0, Shape(y)[1])); axes and steps
    // must be constants.
    const Dims *starts = boundsOf(op->getOperand(1)), *ends = boundsOf(op->getOperand(2));
    std::optional<SmallVector<int64_t>> axes, steps;
    if (op->getNumOperands() > 3 && !isAbsentOperand(op->getOperand(3)))
      axes = getConstantIntValues(op->getOperand(3));
    else if (starts) {
      axes.emplace();
      for (size_t i = 0; i < starts->size(); ++i)
        axes->push_back(int64_t(i));
    }
    if (op->getNumOperands() > 4 && !isAbsentOperand(op->getOperand(4)))
      steps = getConstantIntValues(op->getOperand(4));
    else if (starts)
      steps = SmallVector<int64_t>(starts->size(), 1);
    if (!starts || !ends || !axes || !steps || starts->size() != ends->size() ||
        axes->size() != starts->size() || steps->size() != starts->size())
      return;
    Dims out = *x;
    for (size_t i = 0; i < axes->size(); ++i) {
      int64_t a = normalized((*axes)[i], int64_t(x->size()));
      if (a < 0 || a >= int64_t(x->size()) || out[a] == kUnknownDim || (*steps)[i] <= 0)
        return;
      // clamp(start, 0, n) and clamp(end, 0, n), then ceil((end - start) / step).
      SymDim n = dim(out[a]);
      auto bound = [&](int32_t id) -> std::optional<SymDim> {
        std::optional<int64_t> v = t.constantValue(id);
        if (v && *v >= (int64_t(1) << 40))
          return n;
        // A symbolic bound counts from the end only if it is negative, so it
        // must be known not to be.
        std::optional<int64_t> low = t.lowerBound(id);
        if (!v && (!low || *low < 0))
          return std::nullopt;
        SymDim raw = v && *v < 0 ? n + *v : dim(id);
        return SymDim{&t, t.min(t.max(raw.id, c(0)), n.id)};
      };
      std::optional<SymDim> b = bound((*starts)[i]), e = bound((*ends)[i]);
      if (!b || !e)
        return;
      out[a] = dimMax(ceilDiv(*e - *b, (*steps)[i]), 0).id;
    }
    propose(op, 0, out);
    return;
  }
  if (name == "onnx.Split") {
    if (!x)
      return;
    int64_t axis = axisOf(op, 0, x->size());
    if (axis < 0 || (*x)[axis] == kUnknownDim)
      return;
    unsigned parts = op->getNumResults();
    Dims sizes;
    if (op->getNumOperands() > 1 && !isAbsentOperand(op->getOperand(1))) {
      const Dims *given = boundsOf(op->getOperand(1));
      if (!given || given->size() != parts)
        return;
      sizes = *given;
    } else {
      // Equal parts, the last one smaller: ceil(d / n) each.
      SymDim whole = dim((*x)[axis]);
      SymDim part = ceilDiv(whole, int64_t(parts));
      sizes.assign(parts, part.id);
      sizes.back() = (whole - part * int64_t(parts - 1)).id;
    }
    for (unsigned i = 0; i < parts; ++i) {
      Dims out = *x;
      out[axis] = sizes[i];
      propose(op, i, out);
    }
    return;
  }
  if (name == "onnx.RNN" || name == "onnx.GRU" || name == "onnx.LSTM") {
    if (!x || x->size() != 3)
      return;
    // X is [seq, batch, input] (layout 0) or [batch, seq, input]; the hidden
    // size and the direction count are static in the result types.
    bool batchFirst = intAttrOr(op, "layout", 0) != 0;
    int32_t seq = (*x)[batchFirst ? 1 : 0], batch = (*x)[batchFirst ? 0 : 1];
    int32_t any = kUnknownDim; // static in the type
    propose(op, 0, batchFirst ? Dims{batch, seq, any, any} : Dims{seq, any, batch, any});
    for (unsigned i = 1; i < op->getNumResults(); ++i)
      propose(op, i, batchFirst ? Dims{batch, any, any} : Dims{any, batch, any});
    return;
  }
  if (name == "onnx.GatherElements") {
    if (const Dims *idx = in(op, 1))
      propose(op, 0, *idx);
    return;
  }
  if (name == "onnx.GatherND") {
    const Dims *idx = in(op, 1);
    if (!x || !idx || idx->empty())
      return;
    std::optional<int64_t> depth = t.constantValue(idx->back());
    int64_t batchDims = intAttrOr(op, "batch_dims", 0);
    if (!depth || batchDims < 0 || batchDims + *depth > int64_t(x->size()))
      return;
    Dims out(idx->begin(), idx->end() - 1);
    out.append(x->begin() + batchDims + *depth, x->end());
    propose(op, 0, out);
    return;
  }
  if (name == "onnx.TopK") {
    const Dims *k = boundsOf(op->getOperand(1));
    if (!x || !k || k->size() != 1)
      return;
    int64_t axis = axisOf(op, -1, x->size());
    if (axis < 0)
      return;
    Dims out = *x;
    out[axis] = (*k)[0];
    propose(op, 0, out);
    propose(op, 1, out);
    return;
  }
  if (name == "onnx.Expand") {
    const Dims *target = elems(op->getOperand(1));
    if (!x || !target)
      return;
    if (auto out = broadcast({x, target}))
      propose(op, 0, *out);
    return;
  }
  if (name == "onnx.ConstantOfShape") {
    if (const Dims *target = elems(op->getOperand(0)))
      propose(op, 0, *target);
    return;
  }
  if (name == "onnx.Range") {
    const Dims *start = elems(op->getOperand(0)), *limit = elems(op->getOperand(1)),
               *delta = elems(op->getOperand(2));
    if (!start || !limit || !delta || start->size() != 1 || limit->size() != 1 ||
        delta->size() != 1)
      return;
    std::optional<int64_t> step = t.constantValue((*delta)[0]);
    if (!step || *step <= 0)
      return;
    SymDim span = dim((*limit)[0]) - dim((*start)[0]);
    propose(op, 0, {dimMax(ceilDiv(span, *step), 0).id});
    return;
  }
  if (name == "onnx.Pad") {
    // Pads may be shape values (SAME pads computed from Shape(x)).
    const Dims *pads = op->getNumOperands() > 1 ? boundsOf(op->getOperand(1)) : nullptr;
    if (!x || !pads || (op->getNumOperands() > 3 && !isAbsentOperand(op->getOperand(3))) ||
        pads->size() != 2 * x->size())
      return;
    Dims out = *x;
    for (size_t i = 0; i < x->size(); ++i)
      if (out[i] != kUnknownDim)
        out[i] = t.add(out[i], t.add((*pads)[i], (*pads)[x->size() + i]));
    propose(op, 0, out);
    return;
  }
  if (name == "onnx.Tile") {
    const Dims *repeats = elems(op->getOperand(1));
    if (!x || !repeats || repeats->size() != x->size())
      return;
    Dims out;
    for (size_t i = 0; i < x->size(); ++i)
      out.push_back((*x)[i] == kUnknownDim ? kUnknownDim : t.mul((*x)[i], (*repeats)[i]));
    propose(op, 0, out);
    return;
  }
  if (name == "onnx.Resize") {
    // Integer scales only: floor(d * s) is then d * s. Sizes over every axis,
    // stretched (the other policies tie the axes together).
    if (!x || op->getNumOperands() < 3 || op->hasAttr("axes"))
      return;
    if (op->getNumOperands() > 3 && !isAbsentOperand(op->getOperand(3))) {
      auto policy = op->getAttrOfType<StringAttr>("keep_aspect_ratio_policy");
      if (policy && policy.getValue() != "stretch")
        return;
      if (const Dims *sizes = elems(op->getOperand(3)))
        propose(op, 0, *sizes);
      return;
    }
    std::optional<HostTensor> scales = readHostTensor(op->getOperand(2), 16);
    if (!scales || scales->numElements() != int64_t(x->size()))
      return;
    Dims out;
    for (size_t i = 0; i < x->size(); ++i) {
      // A static dim's size is the type's; a dynamic one needs a whole scale.
      double s = scales->floatAt(int64_t(i));
      if (t.constantValue((*x)[i])) {
        out.push_back(kUnknownDim);
        continue;
      }
      if (s != double(int64_t(s)) || s < 1 || (*x)[i] == kUnknownDim)
        return;
      out.push_back(t.mul((*x)[i], c(int64_t(s))));
    }
    propose(op, 0, out);
    return;
  }
  // No rule: static dims only.
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    propose(op, i, {});
}

SymbolicShapes::SymbolicShapes(func::FuncOp fn) {
  std::set<int64_t> dimSymbols, valueSymbols;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    seedArgument(fn, i, dimSymbols, valueSymbols);
  // A value may be negative (a pad, an axis); one that is also a dim is not.
  for (int64_t k : valueSymbols)
    if (!dimSymbols.count(k))
      table_.markSigned(k);
  SymbolicRules rules(*this);
  fn.walk([&](Operation *op) {
    if (op->getParentOp() == fn.getOperation())
      rules.run(op);
  });
}

int32_t SymbolicShapes::symbolNamed(const std::string &name) {
  auto found = std::find(symbolNames_.begin(), symbolNames_.end(), name);
  if (found != symbolNames_.end())
    return table_.symbol(found - symbolNames_.begin());
  symbolNames_.push_back(name);
  return table_.symbol(int64_t(symbolNames_.size()) - 1);
}

void SymbolicShapes::seedArgument(func::FuncOp fn, unsigned index, std::set<int64_t> &dimSymbols,
                                  std::set<int64_t> &valueSymbols) {
  Value arg = fn.getArgument(index);
  auto type = dyn_cast<RankedTensorType>(arg.getType());
  if (!type)
    return;
  ArrayAttr names = fn.getArgAttrOfType<ArrayAttr>(index, "ortc.dim_symbols");
  if (!names)
    names = fn.getArgAttrOfType<ArrayAttr>(index, "onnx.dim_params");
  if (names && names.size() != size_t(type.getRank()))
    names = nullptr;
  auto argName = fn.getArgAttrOfType<StringAttr>(index, "onnx.name");
  Dims &dims = dims_[arg];
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d)) {
      dims.push_back(table_.constant(type.getDimSize(d)));
      continue;
    }
    std::string name;
    if (names)
      if (auto s = dyn_cast<StringAttr>(names[d]))
        name = s.str();
    if (!dimParamNamesSymbol(name))
      name = (argName ? argName.str() : "arg" + std::to_string(index)) + "." + std::to_string(d);
    dims.push_back(symbolNamed(name));
    dimSymbols.insert(table_.node(dims.back()).a);
  }
  // A small integer input (a window length, a target shape, pads) is a shape
  // value whose elements are symbols bound from its data at run time: "x[]"
  // for a scalar, "x[k]" for an element; a partition argument's are the
  // caller's expressions (ortc.value_symbols), integers for constants.
  if (!isValueSymbolCarrier(type))
    return;
  int64_t count = type.getNumElements();
  auto texts = fn.getArgAttrOfType<ArrayAttr>(index, "ortc.value_symbols");
  if (texts && int64_t(texts.size()) != count)
    texts = nullptr;
  std::string base = argName ? argName.str() : "arg" + std::to_string(index);
  Dims &elements = elements_[arg];
  for (int64_t k = 0; k < count; ++k) {
    std::string text = type.getRank() == 0 ? base + "[]" : base + "[" + std::to_string(k) + "]";
    if (texts)
      if (auto t = dyn_cast<StringAttr>(texts[k]))
        text = t.str();
    int64_t constant;
    if (!StringRef(text).getAsInteger(10, constant)) {
      elements.push_back(table_.constant(constant));
      continue;
    }
    elements.push_back(symbolNamed(text));
    valueSymbols.insert(table_.node(elements.back()).a);
  }
}

bool isValueSymbolCarrier(RankedTensorType type) {
  Type e = type.getElementType();
  return (e.isInteger(64) || e.isInteger(32)) && !e.isUnsignedInteger() &&
         type.hasStaticShape() && type.getRank() <= 1 && type.getNumElements() <= 8;
}

const SmallVector<int32_t> *SymbolicShapes::dims(Value value) const {
  auto found = dims_.find(value);
  return found == dims_.end() ? nullptr : &found->second;
}

bool SymbolicShapes::known(Value value) const {
  const Dims *d = dims(value);
  return d && !llvm::is_contained(*d, kUnknownDim);
}

int32_t SymbolicShapes::product(ArrayRef<int32_t> dims) const {
  int32_t p = table_.constant(1);
  for (int32_t d : dims) {
    if (d == kUnknownDim)
      return kUnknownDim;
    p = table_.mul(p, d);
  }
  return p;
}

int32_t SymbolicShapes::numElements(Value value) const {
  const Dims *d = dims(value);
  return d ? product(*d) : kUnknownDim;
}

const SmallVector<int32_t> *SymbolicShapes::elements(Value value) const {
  auto found = elements_.find(value);
  return found == elements_.end() ? nullptr : &found->second;
}

std::string SymbolicShapes::print(int32_t dim) const {
  return dim == kUnknownDim ? "?" : table_.print(dim, symbolNames_);
}

std::string SymbolicShapes::print(Value value) const {
  const Dims *d = dims(value);
  if (!d)
    return "(unranked)";
  std::string text = "[";
  for (size_t i = 0; i < d->size(); ++i)
    text += (i ? ", " : "") + print((*d)[i]);
  return text + "]";
}

std::vector<std::string> dimSymbolsFor(const SymbolicShapes &shapes, Value value) {
  const Dims *d = shapes.dims(value);
  if (!d || !shapes.known(value))
    return {};
  std::vector<std::string> out;
  bool anySymbolic = false;
  for (int32_t id : *d) {
    bool symbolic = !shapes.table().constantValue(id);
    anySymbolic |= symbolic;
    out.push_back(symbolic ? shapes.print(id) : std::string());
  }
  return anySymbolic ? out : std::vector<std::string>{};
}

void annotateDimSymbols(func::FuncOp fn, ArrayRef<Value> callerValues,
                        const SymbolicShapes &shapes) {
  Builder builder(fn.getContext());
  for (auto [i, value] : llvm::enumerate(callerValues)) {
    std::vector<std::string> symbols = dimSymbolsFor(shapes, value);
    if (!symbols.empty()) {
      SmallVector<Attribute> names;
      for (const std::string &name : symbols)
        names.push_back(builder.getStringAttr(name));
      fn.setArgAttr(unsigned(i), "ortc.dim_symbols", builder.getArrayAttr(names));
    }
    // A small integer value: its elements as the caller knows them. (The
    // type is the partition's own: `value` may be of an op already outlined.)
    auto type = dyn_cast<RankedTensorType>(fn.getFunctionType().getInput(unsigned(i)));
    const SmallVector<int32_t> *elements = shapes.elements(value);
    if (!type || !isValueSymbolCarrier(type) || !elements)
      continue;
    SmallVector<Attribute> texts;
    for (int32_t id : *elements)
      texts.push_back(builder.getStringAttr(shapes.print(id)));
    fn.setArgAttr(unsigned(i), "ortc.value_symbols", builder.getArrayAttr(texts));
  }
}

} // namespace ortc
