//===- ShapeValues.cpp -----------------------------------------------------===//

#include "compiler/Transforms/ShapeValues.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/OpQueries.h"
#include "compiler/Transforms/ShapeArithmetic.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <algorithm>

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;
// Deeper chains than this are left to run time (and keep the walk cheap).
constexpr int kMaxDepth = 16;

using ortc::intAttrOr;
using ortc::isAbsentOperand;
using ortc::rankedShapeOf;

// Elementwise integer arithmetic of two shape values, one of which may be a
// single element (broadcast); an unknown element stays unknown. Division
// truncates toward zero and a zero divisor is left for run time, as the
// constant folder does.
using Elements = SmallVector<ortc::ShapeElement>;

ortc::ShapeElement known(int64_t value) { return {value, Value(), -1}; }

Elements knownElements(ArrayRef<int64_t> values) {
  Elements out;
  for (int64_t v : values)
    out.push_back(known(v));
  return out;
}

std::optional<Elements> combine(StringRef name, ArrayRef<ortc::ShapeElement> a,
                                ArrayRef<ortc::ShapeElement> b) {
  if (a.size() != b.size() && a.size() != 1 && b.size() != 1)
    return std::nullopt;
  size_t n = std::max(a.size(), b.size());
  Elements out;
  for (size_t i = 0; i < n; ++i) {
    int64_t x = a[a.size() == 1 ? 0 : i].value, y = b[b.size() == 1 ? 0 : i].value;
    if (x == kDyn || y == kDyn) {
      out.push_back(known(kDyn)); // arithmetic on an unknown dim: no longer a dim
      continue;
    }
    if (name == "onnx.Add")
      out.push_back(known(x + y));
    else if (name == "onnx.Sub")
      out.push_back(known(x - y));
    else if (name == "onnx.Mul")
      out.push_back(known(x * y));
    else if (name == "onnx.Max")
      out.push_back(known(std::max(x, y)));
    else if (name == "onnx.Min")
      out.push_back(known(std::min(x, y)));
    else if (y == 0)
      out.push_back(known(kDyn));
    else
      out.push_back(known(x / y));
  }
  return out;
}

std::optional<Elements> valuesAt(Value v, int depth) {
  if (auto constant = ortc::getConstantIntValues(v))
    return knownElements(*constant);
  Operation *def = v.getDefiningOp();
  if (!def || depth > kMaxDepth)
    return std::nullopt;
  StringRef name = def->getName().getStringRef();
  auto operandValues = [&](unsigned i) -> std::optional<Elements> {
    if (i >= def->getNumOperands() || isAbsentOperand(def->getOperand(i)))
      return std::nullopt;
    auto rank = rankedShapeOf(def->getOperand(i));
    if (!rank || rank->size() > 1)
      return std::nullopt;
    return valuesAt(def->getOperand(i), depth + 1);
  };
  if (name == "onnx.Shape") {
    auto in = rankedShapeOf(def->getOperand(0));
    if (!in)
      return std::nullopt;
    int64_t rank = in->size();
    int64_t start = intAttrOr(def, "start", 0), end = intAttrOr(def, "end", rank);
    start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
    end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
    Elements out;
    for (int64_t d = start; d < end; ++d)
      out.push_back((*in)[d] == kDyn ? ortc::ShapeElement{kDyn, def->getOperand(0), d}
                                     : known((*in)[d]));
    return out;
  }
  if (name == "onnx.Identity" || name == "onnx.Unsqueeze" || name == "onnx.Squeeze")
    return operandValues(0);
  if (name == "onnx.Cast") {
    Type to = od::elementTypeForOnnxCode(def->getContext(), intAttrOr(def, "to", 0));
    if (!to || !(to.isSignlessInteger(64) || to.isSignlessInteger(32)))
      return std::nullopt;
    return operandValues(0);
  }
  if (name == "onnx.Add" || name == "onnx.Sub" || name == "onnx.Mul" || name == "onnx.Div" ||
      name == "onnx.Max" || name == "onnx.Min") {
    auto type = dyn_cast<TensorType>(v.getType());
    if (!type || !type.getElementType().isSignlessInteger() || def->getNumOperands() != 2)
      return std::nullopt;
    auto a = operandValues(0), b = operandValues(1);
    if (!a || !b)
      return std::nullopt;
    return combine(name, *a, *b);
  }
  if (name == "onnx.Concat") {
    Elements out;
    for (unsigned i = 0; i < def->getNumOperands(); ++i) {
      auto part = operandValues(i);
      if (!part)
        return std::nullopt;
      out.append(part->begin(), part->end());
    }
    return out;
  }
  if (name == "onnx.Gather") {
    auto data = operandValues(0);
    auto indices = ortc::getConstantIntValues(def->getOperand(1));
    if (!data || !indices || intAttrOr(def, "axis", 0) != 0)
      return std::nullopt;
    Elements out;
    int64_t n = data->size();
    for (int64_t i : *indices) {
      if (i < -n || i >= n)
        return std::nullopt;
      out.push_back((*data)[i < 0 ? i + n : i]);
    }
    return out;
  }
  if (name == "onnx.Slice") {
    auto data = operandValues(0);
    if (!data || def->getNumOperands() < 3)
      return std::nullopt;
    auto starts = ortc::getConstantIntValues(def->getOperand(1));
    auto ends = ortc::getConstantIntValues(def->getOperand(2));
    int64_t step = 1;
    if (def->getNumOperands() > 3 && !isAbsentOperand(def->getOperand(3))) {
      auto axes = ortc::getConstantIntValues(def->getOperand(3));
      if (!axes || axes->size() != 1 || ((*axes)[0] != 0 && (*axes)[0] != -1))
        return std::nullopt;
    }
    if (def->getNumOperands() > 4 && !isAbsentOperand(def->getOperand(4))) {
      auto steps = ortc::getConstantIntValues(def->getOperand(4));
      if (!steps || steps->size() != 1 || (*steps)[0] == 0)
        return std::nullopt;
      step = (*steps)[0];
    }
    if (!starts || !ends || starts->size() != 1 || ends->size() != 1)
      return std::nullopt;
    ortc::SliceRange range = ortc::sliceRange(data->size(), (*starts)[0], (*ends)[0], step);
    Elements out;
    for (int64_t i = 0; i < range.size; ++i)
      out.push_back((*data)[range.begin + i * step]);
    return out;
  }
  return std::nullopt;
}

} // namespace

std::optional<SmallVector<ortc::ShapeElement>> ortc::shapeElements(Value value) {
  return valuesAt(value, 0);
}

std::optional<SmallVector<int64_t>> ortc::shapeValues(Value value) {
  auto elements = valuesAt(value, 0);
  if (!elements)
    return std::nullopt;
  SmallVector<int64_t> values;
  for (const ShapeElement &e : *elements)
    values.push_back(e.value);
  return values;
}
