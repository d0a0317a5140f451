//===- ShapeInference.cpp - onnx-shape-inference --------------------------===//
//
// Forward inference of result types. Each shape function looks at operand
// types (and constant operands or attributes) and proposes a type per result;
// the pass joins it with what the result already has: a static dim or a rank
// known on either side wins, and two static dims that disagree are an error
// on the node.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/FunctionTypes.h"
#include "compiler/Transforms/HostTensor.h"
#include "compiler/Transforms/OpQueries.h"
#include "compiler/Transforms/ShapeArithmetic.h"
#include "compiler/Transforms/ShapeValues.h"
#include "dialects/onnx/OnnxDialect.h"
#include "runtime/ep/WindowGeometry.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"

#include <cmath>
#include <functional>

namespace ortc {
#define GEN_PASS_DEF_ONNXSHAPEINFERENCE
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

//===----------------------------------------------------------------------===//
// Helpers
//===----------------------------------------------------------------------===//

Type elementOf(Value v) {
  if (auto t = dyn_cast<TensorType>(v.getType()))
    return t.getElementType();
  return nullptr;
}

std::optional<SmallVector<int64_t>> shapeOf(Value v) { return ortc::rankedShapeOf(v); }
bool isAbsent(Value v) { return ortc::isAbsentOperand(v); }
int64_t intAttr(Operation *op, StringRef name, int64_t fallback) {
  return ortc::intAttrOr(op, name, fallback);
}

std::optional<SmallVector<int64_t>> intsAttr(Operation *op, StringRef name) {
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name))
    return SmallVector<int64_t>(a.asArrayRef());
  return std::nullopt;
}

StringRef strAttr(Operation *op, StringRef name, StringRef fallback) {
  if (auto a = op->getAttrOfType<StringAttr>(name))
    return a.getValue();
  return fallback;
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

Type tensorType(std::optional<SmallVector<int64_t>> shape, Type elem) {
  if (!elem)
    return nullptr;
  if (!shape)
    return UnrankedTensorType::get(elem);
  return RankedTensorType::get(*shape, elem);
}

// Proposals: one type per result (null: no opinion), or a failure that has
// already been reported on the op.
using Proposal = SmallVector<Type, 2>;

/// The proposal when only the element type of result 0 is known.
Proposal unknownShape(Proposal p, Type elem) {
  p[0] = tensorType(std::nullopt, elem);
  return p;
}
using ShapeFn = std::function<FailureOr<Proposal>(Operation *)>;

//===----------------------------------------------------------------------===//
// Shape functions
//===----------------------------------------------------------------------===//

FailureOr<Proposal> sameAsInput0(Operation *op) {
  Proposal p(op->getNumResults());
  p[0] = op->getOperand(0).getType();
  return p;
}

FailureOr<Proposal> broadcastOperands(Operation *op, Type elem) {
  SmallVector<SmallVector<int64_t>> shapes;
  Proposal p(op->getNumResults());
  for (Value v : op->getOperands()) {
    if (isAbsent(v))
      continue;
    auto s = shapeOf(v);
    if (!s)
      return unknownShape(p, elem);
    shapes.push_back(*s);
  }
  auto out = ortc::broadcastShapes(shapes);
  if (!out) {
    op->emitError("input shapes cannot be broadcast together");
    return failure();
  }
  p[0] = tensorType(*out, elem);
  return p;
}

FailureOr<Proposal> numericBroadcast(Operation *op) {
  return broadcastOperands(op, elementOf(op->getOperand(0)));
}
FailureOr<Proposal> compareBroadcast(Operation *op) {
  return broadcastOperands(op, IntegerType::get(op->getContext(), 1));
}

FailureOr<Proposal> inferWhere(Operation *op) {
  auto p = broadcastOperands(op, elementOf(op->getOperand(1)));
  return p;
}

FailureOr<Proposal> inferCast(Operation *op) {
  Proposal p(1);
  Type elem = od::elementTypeForOnnxCode(op->getContext(), intAttr(op, "to", 0));
  p[0] = tensorType(shapeOf(op->getOperand(0)), elem);
  return p;
}

FailureOr<Proposal> inferCastLike(Operation *op) {
  Proposal p(1);
  p[0] = tensorType(shapeOf(op->getOperand(0)), elementOf(op->getOperand(1)));
  return p;
}

FailureOr<Proposal> inferDropout(Operation *op) {
  Proposal p(op->getNumResults());
  auto shape = shapeOf(op->getOperand(0));
  p[0] = op->getOperand(0).getType();
  if (p.size() > 1 && !isa<NoneType>(op->getResult(1).getType()))
    p[1] = tensorType(shape, IntegerType::get(op->getContext(), 1));
  return p;
}

/// numpy matmul of operands `ia` and `ib` (MatMul: 0 and 1), as `elem`.
FailureOr<Proposal> matMulOf(Operation *op, unsigned ia, unsigned ib, Type elem) {
  Proposal p(1);
  auto a = shapeOf(op->getOperand(ia)), b = shapeOf(op->getOperand(ib));
  if (!a || !b || a->empty() || b->empty())
    return unknownShape(p, elem);
  bool aVector = a->size() == 1, bVector = b->size() == 1;
  SmallVector<int64_t> as = *a, bs = *b;
  if (aVector)
    as.insert(as.begin(), 1);
  if (bVector)
    bs.push_back(1);
  int64_t k1 = as.back(), k2 = bs[bs.size() - 2];
  if (k1 != kDyn && k2 != kDyn && k1 != k2) {
    op->emitError("inner dimensions differ: ") << k1 << " and " << k2;
    return failure();
  }
  SmallVector<SmallVector<int64_t>> batch{SmallVector<int64_t>(as.begin(), as.end() - 2),
                                          SmallVector<int64_t>(bs.begin(), bs.end() - 2)};
  auto out = ortc::broadcastShapes(batch);
  if (!out) {
    op->emitError("batch dimensions cannot be broadcast together");
    return failure();
  }
  if (!aVector)
    out->push_back(as[as.size() - 2]);
  if (!bVector)
    out->push_back(bs.back());
  p[0] = tensorType(*out, elem);
  return p;
}

FailureOr<Proposal> inferMatMul(Operation *op) {
  return matMulOf(op, 0, 1, elementOf(op->getOperand(0)));
}

FailureOr<Proposal> inferGemm(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto a = shapeOf(op->getOperand(0)), b = shapeOf(op->getOperand(1));
  if (!a || !b || a->size() != 2 || b->size() != 2)
    return unknownShape(p, elem);
  bool ta = intAttr(op, "transA", 0), tb = intAttr(op, "transB", 0);
  int64_t m = ta ? (*a)[1] : (*a)[0], k1 = ta ? (*a)[0] : (*a)[1];
  int64_t k2 = tb ? (*b)[1] : (*b)[0], n = tb ? (*b)[0] : (*b)[1];
  if (k1 != kDyn && k2 != kDyn && k1 != k2) {
    op->emitError("inner dimensions differ: ") << k1 << " and " << k2;
    return failure();
  }
  p[0] = tensorType(SmallVector<int64_t>{m, n}, elem);
  return p;
}

FailureOr<Proposal> inferTranspose(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto in = shapeOf(op->getOperand(0));
  if (!in)
    return unknownShape(p, elem);
  auto perm = intsAttr(op, "perm");
  SmallVector<int64_t> out;
  for (size_t i = 0; i < in->size(); ++i) {
    int64_t from = perm ? ((i < perm->size()) ? (*perm)[i] : -1) : in->size() - 1 - i;
    if (from < 0 || from >= static_cast<int64_t>(in->size()) ||
        (perm && perm->size() != in->size())) {
      op->emitError("perm does not permute the ") << in->size() << " input dims";
      return failure();
    }
    out.push_back((*in)[from]);
  }
  p[0] = tensorType(out, elem);
  return p;
}

FailureOr<Proposal> inferReshape(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto target = ortc::shapeValues(op->getOperand(1));
  if (!target) {
    // The rank is the length of the shape tensor, when that is static.
    auto shapeShape = shapeOf(op->getOperand(1));
    if (shapeShape && shapeShape->size() == 1 && (*shapeShape)[0] != kDyn)
      p[0] = tensorType(SmallVector<int64_t>((*shapeShape)[0], kDyn), elem);
    else
      p[0] = tensorType(std::nullopt, elem);
    return p;
  }
  auto in = shapeOf(op->getOperand(0));
  bool allowZero = intAttr(op, "allowzero", 0);
  SmallVector<int64_t> out;
  int64_t inferred = -1, known = 1;
  // Dynamic input dims the target copies with 0: the same factor on both
  // sides, so they do not stop -1 from being computed.
  SmallVector<bool> copied(in ? in->size() : 0, false);
  for (size_t i = 0; i < target->size(); ++i) {
    int64_t d = (*target)[i];
    if (d == kDyn) { // known at run time only
      out.push_back(kDyn);
      known = kDyn;
      continue;
    }
    if (d == 0 && !allowZero) {
      if (!in || i >= in->size()) {
        out.push_back(kDyn);
        known = kDyn;
        continue;
      }
      d = (*in)[i];
      if (d == kDyn) {
        out.push_back(kDyn);
        copied[i] = true;
        continue;
      }
    }
    if (d == -1) {
      if (inferred >= 0) {
        op->emitError("shape has more than one -1");
        return failure();
      }
      inferred = out.size();
      out.push_back(kDyn);
      continue;
    }
    if (d < -1) {
      op->emitError("shape has the invalid dimension ") << d;
      return failure();
    }
    out.push_back(d);
    if (d == kDyn || known == kDyn)
      known = kDyn;
    else
      known *= d;
  }
  bool restStatic = in && llvm::all_of(llvm::seq<size_t>(0, in->size()),
                                       [&](size_t i) { return copied[i] || (*in)[i] != kDyn; });
  if (inferred >= 0 && restStatic && known != kDyn && known != 0) {
    int64_t total = 1;
    for (size_t i = 0; i < in->size(); ++i)
      if (!copied[i])
        total *= (*in)[i];
    if (total % known != 0) {
      op->emitError("cannot reshape ") << total << " elements into the target shape";
      return failure();
    }
    out[inferred] = total / known;
  }
  p[0] = tensorType(out, elem);
  return p;
}

FailureOr<Proposal> inferFlatten(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto in = shapeOf(op->getOperand(0));
  if (!in) {
    p[0] = tensorType(SmallVector<int64_t>{kDyn, kDyn}, elem);
    return p;
  }
  int64_t rank = in->size();
  int64_t axis = intAttr(op, "axis", 1);
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank) {
    op->emitError("axis is out of range for rank ") << rank;
    return failure();
  }
  auto product = [&](int64_t from, int64_t to) {
    int64_t n = 1;
    for (int64_t i = from; i < to; ++i) {
      if ((*in)[i] == kDyn)
        return kDyn;
      n *= (*in)[i];
    }
    return n;
  };
  p[0] = tensorType(SmallVector<int64_t>{product(0, axis), product(axis, rank)}, elem);
  return p;
}

FailureOr<Proposal> inferUnsqueeze(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto in = shapeOf(op->getOperand(0));
  auto axes = ortc::getConstantIntValues(op->getOperand(1));
  if (!in || !axes)
    return unknownShape(p, elem);
  int64_t rank = in->size() + axes->size();
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    auto axis = normalizeAxis(a, rank);
    if (!axis || inserted[*axis]) {
      op->emitError("axes are out of range or repeated");
      return failure();
    }
    inserted[*axis] = true;
  }
  SmallVector<int64_t> out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(inserted[i] ? 1 : (*in)[next++]);
  p[0] = tensorType(out, elem);
  return p;
}

FailureOr<Proposal> inferSqueeze(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto in = shapeOf(op->getOperand(0));
  if (!in)
    return unknownShape(p, elem);
  int64_t rank = in->size();
  SmallVector<bool> removed(rank, false);
  if (op->getNumOperands() > 1 && !isAbsent(op->getOperand(1))) {
    auto axes = ortc::getConstantIntValues(op->getOperand(1));
    if (!axes)
      return unknownShape(p, elem);
    for (int64_t a : *axes) {
      auto axis = normalizeAxis(a, rank);
      if (!axis || ((*in)[*axis] != 1 && (*in)[*axis] != kDyn)) {
        op->emitError("cannot squeeze axis ") << a << " of a tensor of rank " << rank;
        return failure();
      }
      removed[*axis] = true;
    }
  } else {
    for (int64_t i = 0; i < rank; ++i) {
      if ((*in)[i] == kDyn) { // it may or may not be 1: the rank is unknown
        p[0] = tensorType(std::nullopt, elem);
        return p;
      }
      removed[i] = (*in)[i] == 1;
    }
  }
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i)
    if (!removed[i])
      out.push_back((*in)[i]);
  p[0] = tensorType(out, elem);
  return p;
}

FailureOr<Proposal> inferConcat(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  SmallVector<SmallVector<int64_t>> shapes;
  for (Value v : op->getOperands()) {
    auto s = shapeOf(v);
    if (!s)
      return unknownShape(p, elem);
    shapes.push_back(*s);
  }
  int64_t rank = shapes[0].size();
  auto axis = normalizeAxis(intAttr(op, "axis", 0), rank);
  if (!axis) {
    op->emitError("axis is out of range for rank ") << rank;
    return failure();
  }
  SmallVector<int64_t> out = shapes[0];
  for (size_t n = 1; n < shapes.size(); ++n) {
    if (static_cast<int64_t>(shapes[n].size()) != rank) {
      op->emitError("inputs have different ranks");
      return failure();
    }
    for (int64_t i = 0; i < rank; ++i) {
      int64_t d = shapes[n][i];
      if (i == *axis)
        out[i] = (out[i] == kDyn || d == kDyn) ? kDyn : out[i] + d;
      else if (out[i] == kDyn)
        out[i] = d;
      else if (d != kDyn && d != out[i]) {
        op->emitError("inputs differ in dim ") << i << ": " << out[i] << " and " << d;
        return failure();
      }
    }
  }
  p[0] = tensorType(out, elem);
  return p;
}

FailureOr<Proposal> inferShape(Operation *op) {
  Proposal p(1);
  Type i64 = IntegerType::get(op->getContext(), 64);
  auto in = shapeOf(op->getOperand(0));
  if (!in) {
    p[0] = tensorType(SmallVector<int64_t>{kDyn}, i64);
    return p;
  }
  int64_t rank = in->size();
  int64_t start = intAttr(op, "start", 0), end = intAttr(op, "end", rank);
  start = std::clamp<int64_t>(start < 0 ? start + rank : start, 0, rank);
  end = std::clamp<int64_t>(end < 0 ? end + rank : end, 0, rank);
  p[0] = tensorType(SmallVector<int64_t>{std::max<int64_t>(end - start, 0)}, i64);
  return p;
}

/// Output spatial size of a convolution or pooling window
/// (runtime/ep/WindowGeometry.h), -1 when the window does not fit.
int64_t windowOutput(int64_t in, int64_t kernel, int64_t stride, int64_t dilation, int64_t padBegin,
                     int64_t padEnd, ortc::AutoPad autoPad, bool ceilMode) {
  if (in == kDyn || kernel == kDyn)
    return kDyn;
  auto axis = ortc::windowAxis(in, kernel, stride, dilation, padBegin, padEnd, autoPad, ceilMode);
  return axis ? axis->out : -1;
}

/// `weights`: W's operand (Conv, ConvInteger 1; QLinearConv 3).
/// ConvTranspose: [N, W[1] * group, spatial...], each spatial dim from
/// output_shape, or the transposed window rule (WindowGeometry.h) over a
/// static input dim.
FailureOr<Proposal> inferConvTranspose(Operation *op) {
  Proposal p(op->getNumResults());
  Type elem = elementOf(op->getOperand(0));
  auto x = shapeOf(op->getOperand(0));
  auto w = shapeOf(op->getOperand(1));
  if (!x || !w || x->size() < 3 || w->size() != x->size())
    return unknownShape(p, elem);
  size_t spatial = x->size() - 2;
  auto ints = [&](StringRef name, size_t n, int64_t fill) {
    return intsAttr(op, name).value_or(SmallVector<int64_t>(n, fill));
  };
  SmallVector<int64_t> kernel(w->begin() + 2, w->end());
  if (auto ks = intsAttr(op, "kernel_shape"))
    kernel = *ks;
  SmallVector<int64_t> strides = ints("strides", spatial, 1),
                       dilations = ints("dilations", spatial, 1),
                       outputPadding = ints("output_padding", spatial, 0),
                       pads = ints("pads", 2 * spatial, 0);
  std::optional<SmallVector<int64_t>> outputShape = intsAttr(op, "output_shape");
  std::optional<ortc::AutoPad> autoPad = ortc::parseAutoPad(strAttr(op, "auto_pad", "NOTSET"));
  if (kernel.size() != spatial || strides.size() != spatial || dilations.size() != spatial ||
      outputPadding.size() != spatial || pads.size() != 2 * spatial || !autoPad ||
      (outputShape && outputShape->size() != spatial))
    return unknownShape(p, elem); // the kernel's plan names what is wrong
  int64_t group = intAttr(op, "group", 1);
  int64_t channels = (*w)[1] == kDyn || group < 1 ? kDyn : (*w)[1] * group;
  SmallVector<int64_t> out{(*x)[0], channels};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t in = (*x)[i + 2];
    if (outputShape)
      out.push_back((*outputShape)[i]);
    else if (in == kDyn || kernel[i] == kDyn)
      out.push_back(kDyn);
    else
      out.push_back(ortc::transposedWindowOutputSize<int64_t>(
          in, kernel[i], strides[i], dilations[i], outputPadding[i], pads[i], pads[i + spatial],
          *autoPad));
  }
  p[0] = tensorType(out, elem);
  return p;
}

FailureOr<Proposal> inferWindowed(Operation *op, bool isConv, unsigned weights = 1) {
  Proposal p(op->getNumResults());
  Type elem = elementOf(op->getOperand(0));
  auto x = shapeOf(op->getOperand(0));
  if (!x || x->size() < 3)
    return unknownShape(p, elem);
  size_t spatial = x->size() - 2;
  SmallVector<int64_t> kernel;
  int64_t channels = (*x)[1];
  if (isConv) {
    auto w = shapeOf(op->getOperand(weights));
    if (!w || w->size() != x->size())
      return unknownShape(p, elem);
    channels = (*w)[0];
    kernel.assign(w->begin() + 2, w->end());
  }
  if (auto ks = intsAttr(op, "kernel_shape"))
    kernel = *ks;
  if (kernel.size() != spatial) {
    op->emitError("kernel_shape has ")
        << kernel.size() << " dims, the input has " << spatial << " spatial dims";
    return failure();
  }
  auto strides = intsAttr(op, "strides").value_or(SmallVector<int64_t>(spatial, 1));
  auto dilations = intsAttr(op, "dilations").value_or(SmallVector<int64_t>(spatial, 1));
  auto pads = intsAttr(op, "pads").value_or(SmallVector<int64_t>(2 * spatial, 0));
  if (strides.size() != spatial || dilations.size() != spatial || pads.size() != 2 * spatial) {
    op->emitError("strides, dilations or pads do not match the ") << spatial << " spatial dims";
    return failure();
  }
  for (size_t i = 0; i < spatial; ++i) {
    if (strides[i] <= 0 || dilations[i] <= 0 || (kernel[i] != kDyn && kernel[i] <= 0) ||
        pads[i] < 0 || pads[i + spatial] < 0) {
      op->emitError("strides, dilations and kernel sizes must be positive and pads not negative");
      return failure();
    }
  }
  StringRef autoPadName = strAttr(op, "auto_pad", "NOTSET");
  std::optional<ortc::AutoPad> autoPad = ortc::parseAutoPad(autoPadName);
  if (!autoPad) {
    op->emitError("unknown auto_pad '") << autoPadName << "'";
    return failure();
  }
  bool ceilMode = intAttr(op, "ceil_mode", 0);
  SmallVector<int64_t> out{(*x)[0], channels};
  for (size_t i = 0; i < spatial; ++i) {
    int64_t d = windowOutput((*x)[i + 2], kernel[i], strides[i], dilations[i], pads[i],
                             pads[i + spatial], *autoPad, ceilMode);
    if (d != kDyn && d <= 0) {
      op->emitError("the window is larger than the padded input in spatial dim ") << i;
      return failure();
    }
    out.push_back(d);
  }
  p[0] = tensorType(out, elem);
  // MaxPool's optional Indices output has the same shape, as int64.
  if (p.size() > 1 && !isa<NoneType>(op->getResult(1).getType()))
    p[1] = tensorType(out, IntegerType::get(op->getContext(), 64));
  return p;
}

FailureOr<Proposal> inferGlobalPool(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto x = shapeOf(op->getOperand(0));
  if (!x || x->size() < 2)
    return unknownShape(p, elem);
  SmallVector<int64_t> out{(*x)[0], (*x)[1]};
  out.append(x->size() - 2, 1);
  p[0] = tensorType(out, elem);
  return p;
}

//===----------------------------------------------------------------------===//
// Quantization and recurrent ops: the result keeps the element type the
// importer gave it (from the op's type rules); the shape is inferred here.
//===----------------------------------------------------------------------===//

Type resultElement(Operation *op, unsigned i) { return elementOf(op->getResult(i)); }

FailureOr<Proposal> inferQuantizeLinear(Operation *op) {
  Proposal p(1);
  p[0] = tensorType(shapeOf(op->getOperand(0)), resultElement(op, 0));
  return p;
}

FailureOr<Proposal> inferDynamicQuantizeLinear(Operation *op) {
  Proposal p(3);
  MLIRContext *ctx = op->getContext();
  Type u8 = IntegerType::get(ctx, 8, IntegerType::Unsigned);
  p[0] = tensorType(shapeOf(op->getOperand(0)), u8);
  p[1] = RankedTensorType::get({}, Float32Type::get(ctx));
  p[2] = RankedTensorType::get({}, u8);
  return p;
}

/// ConvInteger (int32) and QLinearConv (the result's type): Conv's shape.
FailureOr<Proposal> inferIntegerConv(Operation *op) {
  bool qlinear = op->getName().getStringRef() == "onnx.QLinearConv";
  auto p = inferWindowed(op, /*isConv=*/true, qlinear ? 3 : 1);
  if (failed(p) || !(*p)[0])
    return p;
  Type elem = qlinear ? resultElement(op, 0) : IntegerType::get(op->getContext(), 32);
  auto t = cast<TensorType>((*p)[0]);
  (*p)[0] = !elem         ? Type()
            : t.hasRank() ? Type(RankedTensorType::get(t.getShape(), elem))
                          : Type(UnrankedTensorType::get(elem));
  return p;
}

/// RNN, GRU, LSTM: Y [S, D, B, H] (layout 1: [B, S, D, H]), Y_h and Y_c
/// [D, B, H] (layout 1: [B, D, H]).
FailureOr<Proposal> inferRecurrent(Operation *op) {
  Proposal p(op->getNumResults());
  Type elem = elementOf(op->getOperand(0));
  auto x = shapeOf(op->getOperand(0));
  auto r = shapeOf(op->getOperand(2));
  if (!x || x->size() != 3)
    return p;
  bool layout1 = intAttr(op, "layout", 0) == 1;
  int64_t seq = layout1 ? (*x)[1] : (*x)[0], batch = layout1 ? (*x)[0] : (*x)[1];
  int64_t dirs = strAttr(op, "direction", "forward") == "bidirectional" ? 2 : 1;
  int64_t hidden = intAttr(op, "hidden_size", r && r->size() == 3 ? (*r)[2] : kDyn);
  SmallVector<int64_t> y = layout1 ? SmallVector<int64_t>{batch, seq, dirs, hidden}
                                   : SmallVector<int64_t>{seq, dirs, batch, hidden};
  SmallVector<int64_t> state = layout1 ? SmallVector<int64_t>{batch, dirs, hidden}
                                       : SmallVector<int64_t>{dirs, batch, hidden};
  for (unsigned i = 0; i < p.size(); ++i)
    if (!isa<NoneType>(op->getResult(i).getType()))
      p[i] = tensorType(i == 0 ? y : state, elem);
  return p;
}

// Resize-13+: X, roi, scales, sizes. Output dims are `sizes`, or
// floor(dim * scale); a dynamic dim stays dynamic unless sizes pins it.
// With Resize-18's axes attribute or a keep_aspect_ratio_policy other than
// stretch the shape stays unknown.
FailureOr<Proposal> inferResize(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto x = shapeOf(op->getOperand(0));
  if (!x || op->getNumOperands() < 3 || op->getAttr("axes") ||
      (op->getAttrOfType<StringAttr>("keep_aspect_ratio_policy") &&
       op->getAttrOfType<StringAttr>("keep_aspect_ratio_policy").getValue() != "stretch"))
    return unknownShape(p, elem);
  SmallVector<int64_t> out;
  if (op->getNumOperands() > 3 && !isAbsent(op->getOperand(3))) {
    auto sizes = ortc::getConstantIntValues(op->getOperand(3));
    if (!sizes || sizes->size() != x->size())
      return unknownShape(p, elem);
    out.assign(sizes->begin(), sizes->end());
  } else {
    std::optional<ortc::HostTensor> scales = ortc::readHostTensor(op->getOperand(2), 16);
    if (!scales || scales->numElements() != int64_t(x->size()))
      return unknownShape(p, elem);
    for (size_t i = 0; i < x->size(); ++i) {
      double scale = scales->floatAt(i);
      if (!(scale > 0))
        return unknownShape(p, elem);
      int64_t d = (*x)[i];
      out.push_back(d == kDyn ? kDyn : int64_t(std::floor(double(d) * scale)));
    }
  }
  p[0] = tensorType(out, elem);
  return p;
}

FailureOr<Proposal> inferReduce(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto in = shapeOf(op->getOperand(0));
  if (!in)
    return unknownShape(p, elem);
  int64_t rank = in->size();
  std::optional<SmallVector<int64_t>> axes;
  if (op->getNumOperands() > 1 && !isAbsent(op->getOperand(1))) {
    axes = ortc::getConstantIntValues(op->getOperand(1));
    if (!axes)
      return unknownShape(p, elem);
  }
  bool keepDims = intAttr(op, "keepdims", 1);
  SmallVector<bool> reduced(rank, false);
  if (!axes || axes->empty()) {
    if (intAttr(op, "noop_with_empty_axes", 0)) {
      p[0] = op->getOperand(0).getType();
      return p;
    }
    reduced.assign(rank, true);
  }
  for (int64_t a : axes.value_or(SmallVector<int64_t>())) {
    auto axis = normalizeAxis(a, rank);
    if (!axis) {
      op->emitError("axis ") << a << " is out of range for rank " << rank;
      return failure();
    }
    reduced[*axis] = true;
  }
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < rank; ++i) {
    if (!reduced[i])
      out.push_back((*in)[i]);
    else if (keepDims)
      out.push_back(1);
  }
  p[0] = tensorType(out, elem);
  return p;
}

FailureOr<Proposal> inferGather(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto data = shapeOf(op->getOperand(0)), indices = shapeOf(op->getOperand(1));
  if (!data || !indices)
    return unknownShape(p, elem);
  auto axis = normalizeAxis(intAttr(op, "axis", 0), data->size());
  if (!axis) {
    op->emitError("axis is out of range for rank ") << data->size();
    return failure();
  }
  SmallVector<int64_t> out(data->begin(), data->begin() + *axis);
  out.append(indices->begin(), indices->end());
  out.append(data->begin() + *axis + 1, data->end());
  p[0] = tensorType(out, elem);
  return p;
}

FailureOr<Proposal> inferSplit(Operation *op) {
  Proposal p(op->getNumResults());
  Type elem = elementOf(op->getOperand(0));
  auto in = shapeOf(op->getOperand(0));
  unsigned n = op->getNumResults();
  if (!in || n == 0)
    return p;
  auto axis = normalizeAxis(intAttr(op, "axis", 0), in->size());
  if (!axis) {
    op->emitError("axis is out of range for rank ") << in->size();
    return failure();
  }
  SmallVector<int64_t> sizes;
  if (op->getNumOperands() > 1 && !isAbsent(op->getOperand(1))) {
    auto split = ortc::getConstantIntValues(op->getOperand(1));
    if (!split)
      return p;
    sizes = *split;
    if (sizes.size() != n) {
      op->emitError("split has ") << sizes.size() << " sizes for " << n << " outputs";
      return failure();
    }
  } else {
    int64_t dim = (*in)[*axis];
    if (dim == kDyn)
      sizes.assign(n, kDyn);
    else // equal parts, the last one smaller (num_outputs semantics)
      for (unsigned i = 0; i < n; ++i) {
        int64_t chunk = (dim + n - 1) / n;
        sizes.push_back(std::max<int64_t>(std::min(chunk, dim - chunk * i), 0));
      }
  }
  for (unsigned i = 0; i < n; ++i) {
    SmallVector<int64_t> shape = *in;
    shape[*axis] = sizes[i];
    p[i] = tensorType(shape, elem);
  }
  return p;
}

/// Slice with constant starts, ends and (optional) axes and steps; dims it
/// does not slice keep their size, sliced dynamic dims stay dynamic.
FailureOr<Proposal> inferSlice(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto in = shapeOf(op->getOperand(0));
  if (!in)
    return unknownShape(p, elem);
  int64_t rank = in->size();
  auto starts = ortc::getConstantIntValues(op->getOperand(1));
  auto ends = ortc::getConstantIntValues(op->getOperand(2));
  std::optional<SmallVector<int64_t>> axes, steps;
  if (op->getNumOperands() > 3 && !isAbsent(op->getOperand(3)))
    axes = ortc::getConstantIntValues(op->getOperand(3));
  if (op->getNumOperands() > 4 && !isAbsent(op->getOperand(4)))
    steps = ortc::getConstantIntValues(op->getOperand(4));
  bool axesKnown = op->getNumOperands() <= 3 || isAbsent(op->getOperand(3)) || axes;
  bool stepsKnown = op->getNumOperands() <= 4 || isAbsent(op->getOperand(4)) || steps;
  if (!starts || !ends || !axesKnown || !stepsKnown) {
    p[0] = tensorType(SmallVector<int64_t>(rank, kDyn), elem);
    return p;
  }
  size_t n = starts->size();
  if (!axes) {
    axes.emplace();
    for (size_t i = 0; i < n; ++i)
      axes->push_back(i);
  }
  if (!steps)
    steps = SmallVector<int64_t>(n, 1);
  if (ends->size() != n || axes->size() != n || steps->size() != n) {
    op->emitError("starts, ends, axes and steps have different lengths");
    return failure();
  }
  SmallVector<int64_t> out = *in;
  for (size_t i = 0; i < n; ++i) {
    auto axis = normalizeAxis((*axes)[i], rank);
    int64_t step = (*steps)[i];
    if (!axis || step == 0) {
      op->emitError("slice axis out of range or step 0");
      return failure();
    }
    int64_t dim = (*in)[*axis];
    if (dim == kDyn) {
      out[*axis] = kDyn;
      continue;
    }
    out[*axis] = ortc::sliceRange(dim, (*starts)[i], (*ends)[i], step).size;
  }
  p[0] = tensorType(out, elem);
  return p;
}

/// Pad with constant pads (and axes): each padded dim grows by its two pads.
FailureOr<Proposal> inferPad(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto in = shapeOf(op->getOperand(0));
  if (!in)
    return unknownShape(p, elem);
  int64_t rank = in->size();
  auto pads = ortc::getConstantIntValues(op->getOperand(1));
  std::optional<SmallVector<int64_t>> axes;
  if (op->getNumOperands() > 3 && !isAbsent(op->getOperand(3))) {
    axes = ortc::getConstantIntValues(op->getOperand(3));
    if (!axes)
      pads.reset();
  }
  if (!pads) {
    p[0] = tensorType(SmallVector<int64_t>(rank, kDyn), elem);
    return p;
  }
  if (!axes) {
    axes.emplace();
    for (int64_t i = 0; i < rank; ++i)
      axes->push_back(i);
  }
  size_t n = axes->size();
  if (pads->size() != 2 * n) {
    op->emitError("pads has ") << pads->size() << " values for " << n << " axes";
    return failure();
  }
  SmallVector<int64_t> out = *in;
  for (size_t i = 0; i < n; ++i) {
    auto axis = normalizeAxis((*axes)[i], rank);
    if (!axis) {
      op->emitError("pad axis out of range");
      return failure();
    }
    if (out[*axis] != kDyn) {
      out[*axis] += (*pads)[i] + (*pads)[i + n];
      if (out[*axis] < 0) {
        op->emitError("negative pads remove more than dim ") << *axis << " holds";
        return failure();
      }
    }
  }
  p[0] = tensorType(out, elem);
  return p;
}

/// Expand whose target shape is not a constant but has a static length: the
/// rank is known, and so is every dim the input has other than 1.
FailureOr<Proposal> inferExpandRank(Operation *op, ArrayRef<int64_t> in) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto shapeShape = shapeOf(op->getOperand(1));
  if (!shapeShape || shapeShape->size() != 1 || (*shapeShape)[0] == kDyn)
    return unknownShape(p, elem);
  int64_t rank = std::max<int64_t>(in.size(), (*shapeShape)[0]);
  SmallVector<int64_t> out(rank, kDyn);
  for (size_t i = 0; i < in.size(); ++i)
    if (in[i] != 1)
      out[rank - in.size() + i] = in[i];
  p[0] = tensorType(out, elem);
  return p;
}

/// Expand broadcasts the input against a constant shape.
FailureOr<Proposal> inferExpand(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto in = shapeOf(op->getOperand(0));
  auto target = ortc::shapeValues(op->getOperand(1));
  if (!in)
    return unknownShape(p, elem);
  if (!target)
    return inferExpandRank(op, *in);
  auto out = ortc::broadcastShapes({*in, *target});
  if (!out) {
    op->emitError("the input cannot be expanded to the target shape");
    return failure();
  }
  p[0] = tensorType(*out, elem);
  return p;
}

/// Tile multiplies each dim by a constant repeat count.
FailureOr<Proposal> inferTile(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto in = shapeOf(op->getOperand(0));
  auto repeats = ortc::getConstantIntValues(op->getOperand(1));
  if (!in || !repeats)
    return unknownShape(p, elem);
  if (repeats->size() != in->size()) {
    op->emitError("repeats has ") << repeats->size() << " values for rank " << in->size();
    return failure();
  }
  SmallVector<int64_t> out;
  for (size_t i = 0; i < in->size(); ++i) {
    if ((*repeats)[i] < 0) {
      op->emitError("negative repeat count");
      return failure();
    }
    out.push_back((*in)[i] == kDyn ? kDyn : (*in)[i] * (*repeats)[i]);
  }
  p[0] = tensorType(out, elem);
  return p;
}

FailureOr<Proposal> inferNormalization(Operation *op) {
  Proposal p(op->getNumResults());
  p[0] = op->getOperand(0).getType();
  return p;
}

/// ConstantOfShape: the shape is input 0's values; the element type is the
/// `value` attribute's (f32 without one).
FailureOr<Proposal> inferConstantOfShape(Operation *op) {
  Proposal p(1);
  Type elem = Float32Type::get(op->getContext());
  if (auto value = dyn_cast_or_null<ElementsAttr>(op->getAttr("value")))
    elem = value.getElementType();
  if (auto dims = ortc::shapeValues(op->getOperand(0))) {
    if (llvm::any_of(*dims, [](int64_t d) { return d < 0 && d != kDyn; })) {
      op->emitError("the shape has a negative dim");
      return failure();
    }
    p[0] = tensorType(*dims, elem);
    return p;
  }
  auto shapeShape = shapeOf(op->getOperand(0));
  if (shapeShape && shapeShape->size() == 1 && (*shapeShape)[0] != kDyn)
    p[0] = tensorType(SmallVector<int64_t>((*shapeShape)[0], kDyn), elem);
  else
    p[0] = tensorType(std::nullopt, elem);
  return p;
}

/// Range: 1-D, max(ceil((limit - start) / delta), 0) long when all three are
/// constants.
FailureOr<Proposal> inferRange(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  p[0] = tensorType(SmallVector<int64_t>{kDyn}, elem);
  auto start = ortc::readHostTensor(op->getOperand(0), 1);
  auto limit = ortc::readHostTensor(op->getOperand(1), 1);
  auto delta = ortc::readHostTensor(op->getOperand(2), 1);
  if (!start || !limit || !delta || start->numElements() != 1 || limit->numElements() != 1 ||
      delta->numElements() != 1)
    return p;
  double n;
  if (start->isFloat() && start->elementType.isF32()) // the difference in f32, as runtimes do
    n = std::ceil(double(float(limit->floatAt(0)) - float(start->floatAt(0))) / delta->floatAt(0));
  else if (start->isFloat())
    n = std::ceil((limit->floatAt(0) - start->floatAt(0)) / delta->floatAt(0));
  else if (delta->intAt(0) != 0)
    n = std::ceil(double(limit->intAt(0) - start->intAt(0)) / double(delta->intAt(0)));
  else
    n = NAN;
  if (!std::isfinite(n) || n > 1e15) {
    op->emitError("delta is zero or the range is not finite");
    return failure();
  }
  p[0] = tensorType(SmallVector<int64_t>{std::max<int64_t>(int64_t(n), 0)}, elem);
  return p;
}

/// GatherElements: the indices' shape, the data's element type.
FailureOr<Proposal> inferGatherElements(Operation *op) {
  Proposal p(1);
  p[0] = tensorType(shapeOf(op->getOperand(1)), elementOf(op->getOperand(0)));
  return p;
}

/// GatherND with batch_dims b: indices[:-1] + data[b + indices[-1]:].
FailureOr<Proposal> inferGatherND(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  auto data = shapeOf(op->getOperand(0)), indices = shapeOf(op->getOperand(1));
  if (!data || !indices || indices->empty() || indices->back() == kDyn)
    return unknownShape(p, elem);
  int64_t b = intAttr(op, "batch_dims", 0), k = indices->back();
  if (b < 0 || b + k > int64_t(data->size()) || b >= int64_t(indices->size())) {
    op->emitError("indices do not fit the data's rank");
    return failure();
  }
  SmallVector<int64_t> out(indices->begin(), indices->end() - 1);
  out.append(data->begin() + b + k, data->end());
  p[0] = tensorType(out, elem);
  return p;
}

/// ArgMax/ArgMin: a reduction over `axis` giving int64.
FailureOr<Proposal> inferArgReduce(Operation *op) {
  Proposal p(1);
  Type i64 = IntegerType::get(op->getContext(), 64);
  auto in = shapeOf(op->getOperand(0));
  if (!in)
    return unknownShape(p, i64);
  auto axis = normalizeAxis(intAttr(op, "axis", 0), in->size());
  if (!axis) {
    op->emitError("axis is out of range for rank ") << in->size();
    return failure();
  }
  SmallVector<int64_t> out = *in;
  if (intAttr(op, "keepdims", 1))
    out[*axis] = 1;
  else
    out.erase(out.begin() + *axis);
  p[0] = tensorType(out, i64);
  return p;
}

/// TopK: values and int64 indices, `axis` cut to a constant K.
FailureOr<Proposal> inferTopK(Operation *op) {
  Proposal p(op->getNumResults());
  auto in = shapeOf(op->getOperand(0));
  auto k = ortc::getConstantIntValues(op->getOperand(1));
  if (!in || !k || k->size() != 1)
    return p;
  auto axis = normalizeAxis(intAttr(op, "axis", -1), in->size());
  if (!axis) {
    op->emitError("axis is out of range for rank ") << in->size();
    return failure();
  }
  SmallVector<int64_t> out = *in;
  out[*axis] = (*k)[0];
  p[0] = tensorType(out, elementOf(op->getOperand(0)));
  if (p.size() > 1)
    p[1] = tensorType(out, IntegerType::get(op->getContext(), 64));
  return p;
}

FailureOr<Proposal> inferSize(Operation *op) {
  Proposal p(1);
  p[0] = RankedTensorType::get({}, IntegerType::get(op->getContext(), 64));
  return p;
}

FailureOr<Proposal> inferIsClass(Operation *op) {
  Proposal p(1);
  p[0] = tensorType(shapeOf(op->getOperand(0)), IntegerType::get(op->getContext(), 1));
  return p;
}

/// EyeLike, RandomUniformLike, RandomNormalLike, Bernoulli: the input's shape,
/// the `dtype` attribute's element type (else the input's).
FailureOr<Proposal> inferLikeWithDtype(Operation *op) {
  Proposal p(1);
  Type elem = elementOf(op->getOperand(0));
  if (auto dtype = op->getAttrOfType<IntegerAttr>("dtype"))
    elem = od::elementTypeForOnnxCode(op->getContext(), dtype.getInt());
  p[0] = tensorType(shapeOf(op->getOperand(0)), elem);
  return p;
}

/// If: a result both branches yield with the same type has that type; with
/// the same rank and element type, the dims the two agree on.
FailureOr<Proposal> inferIf(Operation *op) {
  Proposal p(op->getNumResults());
  if (op->getNumRegions() != 2)
    return p;
  SmallVector<Operation *, 2> yields;
  for (Region &r : op->getRegions()) {
    if (!r.hasOneBlock())
      return p;
    Operation *y = r.front().getTerminator();
    if (!y || y->getNumOperands() != op->getNumResults())
      return p;
    yields.push_back(y);
  }
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    Type a = yields[0]->getOperand(i).getType(), b = yields[1]->getOperand(i).getType();
    if (a == b) {
      p[i] = a;
      continue;
    }
    auto ra = dyn_cast<RankedTensorType>(a), rb = dyn_cast<RankedTensorType>(b);
    if (!ra || !rb || ra.getElementType() != rb.getElementType() || ra.getRank() != rb.getRank())
      continue;
    SmallVector<int64_t> dims;
    for (int64_t d = 0; d < ra.getRank(); ++d)
      dims.push_back(ra.getDimSize(d) == rb.getDimSize(d) ? ra.getDimSize(d) : kDyn);
    p[i] = RankedTensorType::get(dims, ra.getElementType());
  }
  return p;
}

/// The ops whose result has input 0's shape (and type).
const llvm::StringSet<> &input0ShapeOps() {
  static const llvm::StringSet<> ops = [] {
    llvm::StringSet<> set;
    for (const char *name : {"Abs",
                             "Acos",
                             "Acosh",
                             "Asin",
                             "Asinh",
                             "Atan",
                             "Atanh",
                             "Ceil",
                             "Celu",
                             "Clip",
                             "Cos",
                             "Cosh",
                             "Elu",
                             "Erf",
                             "Exp",
                             "Floor",
                             "Gelu",
                             "HardSigmoid",
                             "HardSwish",
                             "Identity",
                             "LeakyRelu",
                             "Log",
                             "LogSoftmax",
                             "Mish",
                             "Neg",
                             "Not",
                             "Reciprocal",
                             "Relu",
                             "Round",
                             "Selu",
                             "Shrink",
                             "Sigmoid",
                             "Sign",
                             "Sin",
                             "Sinh",
                             "Softmax",
                             "Softplus",
                             "Softsign",
                             "Sqrt",
                             "Tan",
                             "Tanh",
                             "ThresholdedRelu",
                             "Hardmax",
                             "Trilu",
                             "CumSum",
                             "Swish",
                             "ScatterElements",
                             "ScatterND",
                             "LpNormalization",
                             "MeanVarianceNormalization",
                             "BitwiseNot"})
      set.insert(std::string("onnx.") + name);
    return set;
  }();
  return ops;
}

/// The comparisons among broadcastOps (their result is bool).
const llvm::StringSet<> &compareOps() {
  static const llvm::StringSet<> ops = {
      "onnx.Equal", "onnx.Less", "onnx.LessOrEqual", "onnx.Greater", "onnx.GreaterOrEqual",
      "onnx.And",   "onnx.Or",   "onnx.Xor",         "onnx.IsInf",   "onnx.IsNaN"};
  return ops;
}

/// The ops whose result shape is the numpy broadcast of their inputs'.
const llvm::StringSet<> &broadcastOps() {
  static const llvm::StringSet<> ops = [] {
    llvm::StringSet<> set;
    for (const char *name : {"Add", "Sub", "Mul", "Div", "Pow", "Mod", "PRelu", "Max", "Min", "Sum",
                             "Mean", "BitwiseAnd", "BitwiseOr", "BitwiseXor", "BitShift", "SwiGLU"})
      set.insert(std::string("onnx.") + name);
    for (const auto &name : compareOps())
      set.insert(name.getKey());
    return set;
  }();
  return ops;
}

llvm::StringMap<ShapeFn> buildShapeFunctions() {
  llvm::StringMap<ShapeFn> fns;
  for (const auto &name : input0ShapeOps())
    fns[name.getKey()] = sameAsInput0;
  for (const auto &name : broadcastOps())
    fns[name.getKey()] = compareOps().contains(name.getKey()) ? compareBroadcast : numericBroadcast;
  fns["onnx.Where"] = inferWhere;
  fns["onnx.Cast"] = inferCast;
  fns["onnx.CastLike"] = inferCastLike;
  fns["onnx.Dropout"] = inferDropout;
  fns["onnx.MatMul"] = inferMatMul;
  fns["onnx.Gemm"] = inferGemm;
  fns["onnx.Transpose"] = inferTranspose;
  fns["onnx.Reshape"] = inferReshape;
  fns["onnx.Flatten"] = inferFlatten;
  fns["onnx.Unsqueeze"] = inferUnsqueeze;
  fns["onnx.Squeeze"] = inferSqueeze;
  fns["onnx.Concat"] = inferConcat;
  fns["onnx.Shape"] = inferShape;
  fns["onnx.Conv"] = [](Operation *op) { return inferWindowed(op, /*isConv=*/true); };
  fns["onnx.ConvTranspose"] = inferConvTranspose;
  for (const char *name : {"MaxPool", "AveragePool", "LpPool"})
    fns[std::string("onnx.") + name] = [](Operation *op) {
      return inferWindowed(op, /*isConv=*/false);
    };
  for (const char *name : {"GlobalAveragePool", "GlobalMaxPool", "GlobalLpPool"})
    fns[std::string("onnx.") + name] = inferGlobalPool;
  for (const char *name :
       {"ReduceMean", "ReduceSum", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
        "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"})
    fns[std::string("onnx.") + name] = inferReduce;
  fns["onnx.Gather"] = inferGather;
  fns["onnx.Resize"] = inferResize;
  fns["onnx.Split"] = inferSplit;
  fns["onnx.Slice"] = inferSlice;
  fns["onnx.Pad"] = inferPad;
  fns["onnx.Expand"] = inferExpand;
  fns["onnx.ConstantOfShape"] = inferConstantOfShape;
  fns["onnx.Range"] = inferRange;
  fns["onnx.GatherElements"] = inferGatherElements;
  fns["onnx.GatherND"] = inferGatherND;
  fns["onnx.ArgMax"] = inferArgReduce;
  fns["onnx.ArgMin"] = inferArgReduce;
  fns["onnx.TopK"] = inferTopK;
  fns["onnx.Size"] = inferSize;
  fns["onnx.IsNaN"] = inferIsClass;
  fns["onnx.IsInf"] = inferIsClass;
  for (const char *name : {"EyeLike", "RandomUniformLike", "RandomNormalLike", "Bernoulli"})
    fns[std::string("onnx.") + name] = inferLikeWithDtype;
  fns["onnx.If"] = inferIf;
  fns["onnx.Tile"] = inferTile;
  for (const char *name :
       {"BatchNormalization", "LayerNormalization", "InstanceNormalization", "GroupNormalization"})
    fns[std::string("onnx.") + name] = inferNormalization;
  fns["onnx.QuantizeLinear"] = inferQuantizeLinear;
  fns["onnx.DequantizeLinear"] = inferQuantizeLinear;
  fns["onnx.DynamicQuantizeLinear"] = inferDynamicQuantizeLinear;
  fns["onnx.MatMulInteger"] = [](Operation *op) {
    return matMulOf(op, 0, 1, IntegerType::get(op->getContext(), 32));
  };
  fns["onnx.QLinearMatMul"] = [](Operation *op) {
    return matMulOf(op, 0, 3, resultElement(op, 0));
  };
  fns["onnx.ConvInteger"] = inferIntegerConv;
  fns["onnx.QLinearConv"] = inferIntegerConv;
  for (const char *name : {"RNN", "GRU", "LSTM"})
    fns[std::string("onnx.") + name] = inferRecurrent;
  return fns;
}

//===----------------------------------------------------------------------===//
// Joining a proposal with what a result has
//===----------------------------------------------------------------------===//

/// The more precise of two types of one value, or failure if they disagree.
FailureOr<Type> join(Type have, Type proposed) {
  if (!proposed || have == proposed)
    return have;
  if (isa<od::UnknownType>(have))
    return proposed;
  auto haveTensor = dyn_cast<TensorType>(have), newTensor = dyn_cast<TensorType>(proposed);
  if (!haveTensor || !newTensor)
    return have;
  if (haveTensor.getElementType() != newTensor.getElementType())
    return failure();
  if (!newTensor.hasRank())
    return have;
  if (!haveTensor.hasRank())
    return proposed;
  if (haveTensor.getRank() != newTensor.getRank())
    return failure();
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < haveTensor.getRank(); ++i) {
    int64_t a = haveTensor.getDimSize(i), b = newTensor.getDimSize(i);
    if (a != kDyn && b != kDyn && a != b)
      return failure();
    dims.push_back(a != kDyn ? a : b);
  }
  return Type(RankedTensorType::get(dims, haveTensor.getElementType()));
}

} // namespace

bool ortc::hasInput0Shape(StringRef opName) { return input0ShapeOps().contains(opName); }
bool ortc::isBroadcastOp(StringRef opName) { return broadcastOps().contains(opName); }

LogicalResult ortc::inferShapesIn(func::FuncOp func, unsigned &numRefined, bool strictShapes) {
  static const llvm::StringMap<ShapeFn> shapeFns = buildShapeFunctions();
  bool failedAny = false;
  func.walk([&](Operation *op) {
    auto fn = shapeFns.find(op->getName().getStringRef());
    if (fn == shapeFns.end())
      return;
    FailureOr<Proposal> proposal = fn->second(op);
    if (failed(proposal)) {
      failedAny = true;
      return;
    }
    for (unsigned i = 0; i < op->getNumResults() && i < proposal->size(); ++i) {
      Type have = op->getResult(i).getType();
      FailureOr<Type> joined = join(have, (*proposal)[i]);
      if (failed(joined)) {
        // A declared shape that inference contradicts: onnxruntime warns and
        // runs with what the graph computes, and so do we unless asked not to.
        auto haveTensor = dyn_cast<TensorType>(have);
        auto inferred = dyn_cast<TensorType>((*proposal)[i]);
        bool shapeOnly =
            haveTensor && inferred && haveTensor.getElementType() == inferred.getElementType();
        if (strictShapes || !shapeOnly) {
          op->emitError("result ")
              << i << " is declared as " << have << " but its inputs give " << (*proposal)[i];
          failedAny = true;
          continue;
        }
        op->emitWarning("result ") << i << " is declared as " << have << " but its inputs give "
                                   << (*proposal)[i] << "; using the inferred shape";
        joined = (*proposal)[i];
      }
      if (*joined != have) {
        op->getResult(i).setType(*joined);
        ++numRefined;
      }
    }
  });
  if (failedAny)
    return failure();
  ortc::syncFunctionResultTypes(func);
  return success();
}

namespace {

struct OnnxShapeInference : ortc::impl::OnnxShapeInferenceBase<OnnxShapeInference> {
  using Base::Base;

  void runOnOperation() override {
    unsigned refined = 0;
    if (failed(ortc::inferShapesIn(getOperation(), refined, strictShapes)))
      return signalPassFailure();
    numRefined += refined;
  }
};

} // namespace
