//===- CpuClaims.cpp - what the CPU EP runs, and how ----------------------===//
//
// The library kernels' accepted inputs and attributes are listed in
// providers/cpu/kernels/README.md; the checks here follow that table.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/CpuClaims.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/HostTensor.h"
#include "providers/cpu/compile/LowerToLinalg.h"
#include "providers/cpu/kernels/SpatialKernels.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringSet.h"

#include <functional>
#include <map>

using namespace mlir;

namespace ortc::cpu {

namespace {

RankedTensorType rankedType(Value v) { return dyn_cast<RankedTensorType>(v.getType()); }
bool isOmitted(Value v) { return isa<NoneType>(v.getType()); }

bool hasDynamicDim(Value v) {
  auto t = rankedType(v);
  return t && !t.hasStaticShape();
}

int64_t intAttr(Operation *op, StringRef name, int64_t fallback) {
  if (auto a = op->getAttrOfType<IntegerAttr>(name))
    return a.getInt();
  return fallback;
}
std::string strAttr(Operation *op, StringRef name, StringRef fallback) {
  if (auto a = op->getAttrOfType<StringAttr>(name))
    return a.str();
  return fallback.str();
}
int64_t normalizeAxis(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

int64_t staticProduct(RankedTensorType t) {
  int64_t n = 1;
  for (int64_t d : t.getShape())
    if (!ShapedType::isDynamic(d))
      n *= d;
  return n;
}

/// Why `op` is declined, or "" when the check passes; `kind` says which field.
struct Refusal {
  RejectedKind kind = RejectedKind::Attribute;
  std::string rejected, accepts, remediation;
  bool any() const { return !rejected.empty(); }
};
Refusal refuse(RejectedKind kind, std::string rejected, std::string accepts,
               std::string remediation = "") {
  return Refusal{kind, std::move(rejected), std::move(accepts), std::move(remediation)};
}

Refusal requireF32(Operation *op, std::initializer_list<unsigned> operands) {
  for (unsigned i : operands) {
    if (i >= op->getNumOperands() || isOmitted(op->getOperand(i)))
      continue;
    auto t = rankedType(op->getOperand(i));
    if (!t || !t.getElementType().isF32()) {
      std::string type;
      llvm::raw_string_ostream(type) << op->getOperand(i).getType();
      return refuse(RejectedKind::DType, "input " + std::to_string(i) + " is " + type,
                    "float32 for this op", "insert a Cast to float32");
    }
  }
  return {};
}

Refusal requireConstant(Operation *op, unsigned operand, const char *what) {
  if (operand >= op->getNumOperands() || isOmitted(op->getOperand(operand)))
    return {};
  if (!getConstantIntValues(op->getOperand(operand)))
    return refuse(RejectedKind::Attribute, std::string(what) + " is not a constant",
                  std::string(what) + " known at compile time");
  return {};
}

Refusal requireOneOf(Operation *op, StringRef name, StringRef fallback,
                     std::initializer_list<const char *> allowed) {
  std::string value = strAttr(op, name, fallback);
  std::string list;
  for (const char *a : allowed) {
    if (value == a)
      return {};
    list += (list.empty() ? "" : ", ") + std::string(a);
  }
  return refuse(RejectedKind::Attribute, name.str() + " '" + value + "'",
                name.str() + " in {" + list + "}");
}

Refusal requireUnusedResultsAfter(Operation *op, unsigned keep) {
  for (unsigned i = keep; i < op->getNumResults(); ++i)
    if (!isa<NoneType>(op->getResult(i).getType()) && !op->getResult(i).use_empty())
      return refuse(RejectedKind::Attribute, "output " + std::to_string(i) + " is used",
                    "only the first " + std::to_string(keep) + " output(s)");
  return {};
}

Refusal requireRank(Operation *op, unsigned operand, int64_t minRank, int64_t maxRank) {
  auto t = rankedType(op->getOperand(operand));
  if (t && t.getRank() >= minRank && t.getRank() <= maxRank)
    return {};
  return refuse(RejectedKind::Shape,
                "input " + std::to_string(operand) + " has rank " +
                    (t ? std::to_string(t.getRank()) : std::string("?")),
                "rank " + std::to_string(minRank) + " to " + std::to_string(maxRank));
}

/// The batch dim must not be the axis an op works along.
Refusal requireAxisNotBatch(Operation *op, Value data, int64_t axis, const char *what) {
  auto t = rankedType(data);
  if (!t || !hasDynamicDim(data) || normalizeAxis(axis, t.getRank()) != 0)
    return {};
  return refuse(RejectedKind::Shape, std::string(what) + " along the dynamic batch dim",
                std::string(what) + " along static dims", "give the model a static batch");
}

using Check = std::function<Refusal(Operation *)>;

struct LibraryOp {
  const char *kernel;
  Check check;
};

Refusal checkPool(Operation *op) {
  if (auto r = requireF32(op, {0}); r.any())
    return r;
  if (auto r = requireRank(op, 0, 3, 5); r.any())
    return r;
  if (auto r = requireOneOf(op, "auto_pad", "NOTSET",
                            {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
      r.any())
    return r;
  // ONNX and onnxruntime size the output differently with both.
  if (intAttr(op, "ceil_mode", 0) && strAttr(op, "auto_pad", "NOTSET") != "NOTSET")
    return refuse(RejectedKind::Attribute, "ceil_mode 1 with auto_pad " +
                                               strAttr(op, "auto_pad", "NOTSET"),
                  "ceil_mode 1 only with explicit pads (auto_pad NOTSET)");
  if (!op->getAttr("kernel_shape"))
    return refuse(RejectedKind::Attribute, "no kernel_shape", "an explicit kernel_shape");
  return {};
}

Refusal checkReduce(Operation *op) {
  if (auto r = requireF32(op, {0}); r.any())
    return r;
  return requireConstant(op, 1, "axes");
}

std::string typeText(Type type);

/// An input that decides the output shape (Resize scales or sizes, ...) is not
/// a constant: claimed only when every input and output shape is static, so
/// the model's declared output type fixes the shape. The kernel computes the
/// shape from the values it gets and returns InvalidArgument if it differs
/// from the output view; it never writes a different shape.
Refusal requireStaticOutputForRuntimeShape(Operation *op, const char *what) {
  for (Value v : op->getOperands())
    if (!isOmitted(v) && (!rankedType(v) || !rankedType(v).hasStaticShape()))
      return refuse(RejectedKind::Shape,
                    std::string(what) + " is not a constant and an input has a dynamic dim",
                    std::string("constant ") + what + ", or static input and output shapes");
  for (Value v : op->getResults())
    if (!isa<NoneType>(v.getType()) && (!rankedType(v) || !rankedType(v).hasStaticShape()))
      return refuse(RejectedKind::Shape,
                    std::string(what) + " is not a constant and the output shape is not static",
                    std::string("constant ") + what + ", or static input and output shapes");
  return {};
}

/// Resize: the kernel's own shape rule (planResize) must give the declared
/// output shape from constant scales or sizes.
Refusal checkResize(Operation *op) {
  std::string mode = strAttr(op, "mode", "nearest");
  if (auto r = requireOneOf(op, "mode", "nearest", {"nearest", "linear", "cubic"}); r.any())
    return r;
  // Nearest moves elements of any type; linear and cubic compute in float32.
  if (mode != "nearest")
    if (auto r = requireF32(op, {0}); r.any())
      return r;
  if (mode == "nearest") {
    if (auto r = requireOneOf(op, "coordinate_transformation_mode", "half_pixel",
                              {"half_pixel", "half_pixel_symmetric", "asymmetric", "align_corners",
                               "pytorch_half_pixel", "tf_half_pixel_for_nn"});
        r.any())
      return r;
    if (auto r = requireOneOf(op, "nearest_mode", "round_prefer_floor",
                              {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
        r.any())
      return r;
    if (intAttr(op, "antialias", 0) != 0)
      return refuse(RejectedKind::Attribute, "antialias 1 with mode nearest",
                    "antialias 0 with mode nearest (1 with linear or cubic)");
  } else if (auto r = requireOneOf(op, "coordinate_transformation_mode", "half_pixel",
                                   {"half_pixel", "half_pixel_symmetric", "asymmetric",
                                    "align_corners", "pytorch_half_pixel", "tf_crop_and_resize"});
             r.any()) {
    return r;
  }
  if (auto r = requireOneOf(op, "keep_aspect_ratio_policy", "stretch",
                            {"stretch", "not_larger", "not_smaller"});
      r.any())
    return r;
  if (op->getNumOperands() < 3)
    return refuse(RejectedKind::Opset, "Resize without the roi input (opset 10)",
                  "Resize-11 and later (X, roi, scales, sizes)");
  if (strAttr(op, "coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize" &&
      isOmitted(op->getOperand(1)))
    return refuse(RejectedKind::Attribute, "tf_crop_and_resize without roi",
                  "tf_crop_and_resize with an roi input");
  if (strAttr(op, "coordinate_transformation_mode", "half_pixel") == "tf_crop_and_resize") {
    auto roi = rankedType(op->getOperand(1));
    if (!roi || !(roi.getElementType().isF32() || roi.getElementType().isF64()))
      return refuse(RejectedKind::DType, "roi is " + typeText(op->getOperand(1).getType()),
                    "a float32 or float64 roi");
  }
  kernels::ResizeParams params;
  if (auto axes = op->getAttrOfType<DenseI64ArrayAttr>("axes"))
    params.axes.assign(axes.asArrayRef().begin(), axes.asArrayRef().end());
  bool haveScales = false, haveSizes = false;
  if (!isOmitted(op->getOperand(2))) {
    auto scales = readHostTensor(op->getOperand(2), 64);
    if (!scales)
      return requireStaticOutputForRuntimeShape(op, "scales");
    for (int64_t i = 0; i < scales->numElements(); ++i)
      params.scales.push_back(scales->floatAt(i));
    haveScales = !params.scales.empty();
  }
  if (op->getNumOperands() > 3 && !isOmitted(op->getOperand(3))) {
    auto sizes = getConstantIntValues(op->getOperand(3));
    if (!sizes)
      return requireStaticOutputForRuntimeShape(op, "sizes");
    params.sizes.assign(sizes->begin(), sizes->end());
    haveSizes = !params.sizes.empty();
  }
  if (haveScales == haveSizes)
    return refuse(RejectedKind::Attribute,
                  haveScales ? "both scales and sizes" : "neither scales nor sizes",
                  "exactly one non-empty input of scales and sizes");
  if (!haveSizes)
    params.keepAspectRatioPolicy = "stretch";
  else
    params.keepAspectRatioPolicy = strAttr(op, "keep_aspect_ratio_policy", "stretch");
  auto x = rankedType(op->getOperand(0));
  auto y = rankedType(op->getResult(0));
  if (!x || !y || x.getRank() != y.getRank())
    return refuse(RejectedKind::Shape, "X and Y of different or unknown ranks",
                  "ranked X and Y of one rank");
  // A dynamic (batch) dim is planned as 1 and must not be resized.
  std::vector<int64_t> inShape(x.getShape().begin(), x.getShape().end());
  std::vector<int64_t> outShape(y.getShape().begin(), y.getShape().end());
  for (size_t d = 0; d < inShape.size(); ++d)
    if (ShapedType::isDynamic(inShape[d]))
      inShape[d] = outShape[d] = 1;
  kernels::ResizePlan plan;
  Status status = kernels::planResize(params, inShape, plan);
  if (!status.isOk())
    return refuse(RejectedKind::Attribute, status.message(), "valid scales or sizes");
  for (int64_t a : plan.axes)
    if (ShapedType::isDynamic(x.getShape()[a]) && (haveSizes || plan.scales[a] != 1.0))
      return refuse(RejectedKind::Shape, "resizing the dynamic batch dim",
                    "scale 1 on a dynamic dim", "give the model a static batch");
  if (plan.outShape != outShape)
    return refuse(RejectedKind::Shape,
                  "declared output " + typeText(y) + " but the scales or sizes give " +
                      ortc::shapeToString(plan.outShape),
                  "an output shape of floor(in * scale) (computed in double) or sizes");
  return {};
}

/// The node's attributes as a library step gets them (ints, int lists,
/// floats, strings), for the kernels' shape rules.
StepAttributes stepAttributesOf(Operation *op) {
  StepAttributes a;
  for (NamedAttribute named : op->getAttrs()) {
    std::string name = named.getName().str();
    Attribute attr = named.getValue();
    if (auto i = dyn_cast<IntegerAttr>(attr))
      a.ints[name] = {i.getInt()};
    else if (auto f = dyn_cast<FloatAttr>(attr))
      a.floats[name] = {float(f.getValueAsDouble())};
    else if (auto str = dyn_cast<StringAttr>(attr))
      a.strings[name] = str.str();
    else if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr))
      a.ints[name].assign(ints.asArrayRef().begin(), ints.asArrayRef().end());
  }
  return a;
}

Refusal checkGridSample(Operation *op) {
  if (auto r = requireF32(op, {0, 1}); r.any())
    return r;
  if (auto r = requireRank(op, 0, 4, 5); r.any())
    return r;
  if (auto r =
          requireOneOf(op, "mode", "linear", {"linear", "nearest", "cubic", "bilinear", "bicubic"});
      r.any())
    return r;
  std::string mode = strAttr(op, "mode", "linear");
  auto x = rankedType(op->getOperand(0)), grid = rankedType(op->getOperand(1));
  if (!grid || grid.getRank() != x.getRank() || grid.getShape().back() != x.getRank() - 2)
    return refuse(RejectedKind::Shape, "grid " + typeText(op->getOperand(1).getType()),
                  "grid [N, out..., spatial rank] of X's rank");
  if ((mode == "cubic" || mode == "bicubic") && x.getRank() != 4)
    return refuse(RejectedKind::Shape, "mode cubic with a 5-D X", "mode cubic with a 4-D X");
  return requireOneOf(op, "padding_mode", "zeros", {"zeros", "border", "reflection"});
}

Refusal checkConvTranspose(Operation *op) {
  if (auto r = requireF32(op, {0, 1, 2}); r.any())
    return r;
  if (auto r = requireRank(op, 0, 3, 5); r.any())
    return r;
  if (auto r =
          requireOneOf(op, "auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
      r.any())
    return r;
  auto x = rankedType(op->getOperand(0));
  auto w = rankedType(op->getOperand(1));
  auto y = rankedType(op->getResult(0));
  if (!w || !w.hasStaticShape() || w.getRank() != x.getRank())
    return refuse(RejectedKind::Shape, "W is not static or differs from X in rank",
                  "a static W of X's rank");
  if (!y || y.getRank() != x.getRank())
    return refuse(RejectedKind::Shape, "Y's rank is unknown or differs from X's",
                  "a ranked Y of X's rank");
  std::vector<int64_t> inSpatial(x.getShape().begin() + 2, x.getShape().end());
  std::vector<int64_t> kernel(w.getShape().begin() + 2, w.getShape().end());
  for (int64_t d : inSpatial)
    if (ShapedType::isDynamic(d))
      return refuse(RejectedKind::Shape, "a dynamic spatial dim", "static spatial dims");
  kernels::ConvTransposePlan plan;
  Status status = kernels::planConvTranspose(stepAttributesOf(op), inSpatial, kernel, plan);
  if (!status.isOk())
    return refuse(RejectedKind::Attribute, status.message(),
                  "pads >= 0, output_padding below the stride or dilation, output_shape at "
                  "least the full output (without SAME auto_pad, zero pads)");
  std::vector<int64_t> outSpatial(y.getShape().begin() + 2, y.getShape().end());
  if (outSpatial != plan.out)
    return refuse(RejectedKind::Shape,
                  "declared output " + typeText(y) + " but the attributes give spatial dims " +
                      ortc::shapeToString(plan.out),
                  "the output shape the ONNX ConvTranspose equations give");
  int64_t group = intAttr(op, "group", 1);
  if (ShapedType::isDynamic(x.getShape()[1]) || group < 1 || x.getShape()[1] % group != 0 ||
      w.getShape()[0] != x.getShape()[1])
    return refuse(RejectedKind::Shape,
                  "group " + std::to_string(group) + " does not fit X " + typeText(x) + " and W " +
                      typeText(w),
                  "W [C, M/group, k...] with C divisible by group");
  return {};
}

/// Output 0 must be declared as `expect` (dims of -1 in `expect`: any).
Refusal requireOutputShape(Operation *op, const std::vector<int64_t> &expect, const char *rule) {
  auto y = rankedType(op->getResult(0));
  bool ok = y && y.getRank() == int64_t(expect.size());
  for (size_t i = 0; ok && i < expect.size(); ++i)
    ok = expect[i] < 0 || y.getShape()[i] == expect[i];
  if (ok)
    return {};
  return refuse(RejectedKind::Shape,
                "declared output " + (y ? typeText(y) : std::string("unranked")) + " but " + rule +
                    " gives " + ortc::shapeToString(expect),
                std::string("the output shape ") + rule + " gives");
}

/// An input that decides the output shape: a constant (then `check` compares
/// the declared output with what the values give), or static shapes.
Refusal requireShapeInput(Operation *op, unsigned operand, const char *what,
                          const std::function<Refusal(const SmallVector<int64_t> &)> &check) {
  if (operand >= op->getNumOperands() || isOmitted(op->getOperand(operand)))
    return {};
  if (auto values = getConstantIntValues(op->getOperand(operand)))
    return check(*values);
  return requireStaticOutputForRuntimeShape(op, what);
}

std::vector<int64_t> dimsOf(Value v) {
  auto t = rankedType(v);
  std::vector<int64_t> d;
  if (t)
    for (int64_t x : t.getShape())
      d.push_back(ShapedType::isDynamic(x) ? -1 : x);
  return d;
}

Refusal checkRoiAlign(Operation *op) {
  if (auto r = requireF32(op, {0, 1}); r.any())
    return r;
  if (auto r = requireRank(op, 0, 4, 4); r.any())
    return r;
  auto bi = rankedType(op->getOperand(2));
  if (!bi || !bi.getElementType().isInteger(64))
    return refuse(RejectedKind::DType, "batch_indices is not int64", "int64 batch_indices");
  if (auto r = requireOneOf(op, "coordinate_transformation_mode", "half_pixel",
                            {"half_pixel", "output_half_pixel"});
      r.any())
    return r;
  if (auto r = requireOneOf(op, "mode", "avg", {"avg", "max"}); r.any())
    return r;
  if (intAttr(op, "output_height", 1) < 1 || intAttr(op, "output_width", 1) < 1 ||
      intAttr(op, "sampling_ratio", 0) < 0)
    return refuse(RejectedKind::Attribute, "output_height/width below 1 or sampling_ratio below 0",
                  "output_height, output_width >= 1 and sampling_ratio >= 0");
  std::vector<int64_t> x = dimsOf(op->getOperand(0)), rois = dimsOf(op->getOperand(1));
  if (rois.size() != 2 || rois[1] != 4)
    return refuse(RejectedKind::Shape, "rois is not [num_rois, 4]", "rois [num_rois, 4]");
  return requireOutputShape(
      op, {rois[0], x[1], intAttr(op, "output_height", 1), intAttr(op, "output_width", 1)},
      "RoiAlign's [num_rois, C, output_height, output_width]");
}

Refusal checkMaxUnpool(Operation *op) {
  if (auto r = requireF32(op, {0}); r.any())
    return r;
  if (auto r = requireRank(op, 0, 3, 5); r.any())
    return r;
  auto kernel = op->getAttrOfType<DenseI64ArrayAttr>("kernel_shape");
  std::vector<int64_t> x = dimsOf(op->getOperand(0));
  size_t r = x.size() - 2;
  if (!kernel || kernel.size() != int64_t(r))
    return refuse(RejectedKind::Attribute, "kernel_shape missing or of the wrong length",
                  "a kernel_shape per spatial dim");
  std::vector<int64_t> strides(r, 1), pads(2 * r, 0);
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>("strides"))
    strides.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>("pads"))
    pads.assign(a.asArrayRef().begin(), a.asArrayRef().end());
  if (strides.size() != r || pads.size() != 2 * r)
    return refuse(RejectedKind::Attribute, "strides or pads of the wrong length",
                  "strides and pads per spatial dim");
  std::vector<int64_t> inferred = {x[0], x[1]};
  for (size_t i = 0; i < r; ++i)
    inferred.push_back(
        x[2 + i] < 0 ? -1 : (x[2 + i] - 1) * strides[i] - (pads[i] + pads[r + i]) + kernel[i]);
  if (op->getNumOperands() > 2 && !isOmitted(op->getOperand(2)))
    return requireShapeInput(op, 2, "output_shape", [&](const SmallVector<int64_t> &v) {
      std::vector<int64_t> out(v.begin(), v.end());
      for (size_t i = 0; i < out.size() && i < inferred.size(); ++i)
        if (out[i] < inferred[i])
          return refuse(RejectedKind::Shape, "output_shape smaller than the inferred shape",
                        "output_shape at least the inferred shape");
      return requireOutputShape(op, out, "output_shape");
    });
  return requireOutputShape(op, inferred, "MaxUnpool's inferred shape");
}

Refusal checkDeformConv(Operation *op) {
  if (auto r = requireF32(op, {0, 1, 2, 3, 4}); r.any())
    return r;
  if (auto r = requireRank(op, 0, 4, 4); r.any())
    return r;
  std::vector<int64_t> x = dimsOf(op->getOperand(0)), w = dimsOf(op->getOperand(1)),
                       off = dimsOf(op->getOperand(2));
  if (w.size() != 4 || off.size() != 4)
    return refuse(RejectedKind::Shape, "W or offset is not 4-D", "2-D DeformConv");
  return requireOutputShape(op, {x[0], w[0], off[2], off[3]},
                            "DeformConv's [N, M, offset H, offset W]");
}

Refusal checkCol2Im(Operation *op) {
  if (auto r = requireF32(op, {0}); r.any())
    return r;
  if (auto r = requireRank(op, 0, 3, 3); r.any())
    return r;
  auto image = getConstantIntValues(op->getOperand(1));
  auto block = getConstantIntValues(op->getOperand(2));
  if (!image || !block)
    return requireStaticOutputForRuntimeShape(op, "image_shape or block_shape");
  std::vector<int64_t> x = dimsOf(op->getOperand(0));
  int64_t kSize = 1;
  for (int64_t b : *block)
    kSize *= std::max<int64_t>(b, 1);
  std::vector<int64_t> out = {x[0], x[1] < 0 ? -1 : x[1] / kSize};
  out.insert(out.end(), image->begin(), image->end());
  return requireOutputShape(op, out, "image_shape");
}

Refusal checkCenterCropPad(Operation *op) {
  return requireShapeInput(op, 1, "shape", [&](const SmallVector<int64_t> &shape) -> Refusal {
    std::vector<int64_t> out = dimsOf(op->getOperand(0));
    int64_t rank = int64_t(out.size());
    std::vector<int64_t> axes;
    if (auto a = op->getAttrOfType<DenseI64ArrayAttr>("axes"))
      axes.assign(a.asArrayRef().begin(), a.asArrayRef().end());
    else
      for (int64_t i = 0; i < rank; ++i)
        axes.push_back(i);
    if (axes.size() != shape.size())
      return refuse(RejectedKind::Shape, "shape and axes differ in length",
                    "one shape value per axis");
    for (size_t i = 0; i < axes.size(); ++i) {
      int64_t a = normalizeAxis(axes[i], rank);
      if (a < 0 || a >= rank)
        return refuse(RejectedKind::Attribute, "axis out of range", "axes within the rank");
      if (out[a] < 0)
        return refuse(RejectedKind::Shape, "cropping or padding the dynamic batch dim",
                      "static cropped dims");
      out[a] = shape[i];
    }
    return requireOutputShape(op, out, "shape");
  });
}

Refusal checkAffineGrid(Operation *op) {
  if (auto r = requireF32(op, {0}); r.any())
    return r;
  return requireShapeInput(op, 1, "size", [&](const SmallVector<int64_t> &size) -> Refusal {
    if (size.size() != 4 && size.size() != 5)
      return refuse(RejectedKind::Shape, "size of " + std::to_string(size.size()) + " values",
                    "size [N,C,H,W] or [N,C,D,H,W]");
    std::vector<int64_t> out = {size[0]};
    out.insert(out.end(), size.begin() + 2, size.end());
    out.push_back(int64_t(size.size()) - 2);
    return requireOutputShape(op, out, "size");
  });
}

const std::map<std::string, LibraryOp> &libraryOps() {
  static const std::map<std::string, LibraryOp> ops = {
      {"MatMul",
       {"MatMul",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1}); r.any())
            return r;
          auto b = rankedType(op->getOperand(1));
          if (b && b.getRank() <= 2 && hasDynamicDim(op->getOperand(1)))
            return refuse(RejectedKind::Shape, "B has a dynamic dim", "a static 1-D or 2-D B");
          return {};
        }}},
      {"Gemm",
       {"Gemm",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 2}); r.any())
            return r;
          if (hasDynamicDim(op->getOperand(1)) ||
              (hasDynamicDim(op->getOperand(0)) && intAttr(op, "transA", 0)))
            return refuse(RejectedKind::Shape, "the batch dim would be K or N",
                          "a dynamic M only (A untransposed)");
          return {};
        }}},
      {"Conv",
       {"Conv",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 2}); r.any())
            return r;
          if (auto r = requireRank(op, 0, 3, 5); r.any())
            return r;
          if (hasDynamicDim(op->getOperand(1)))
            return refuse(RejectedKind::Shape, "W has a dynamic dim", "a static W");
          return requireOneOf(op, "auto_pad", "NOTSET",
                              {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
        }}},
      {"MaxPool",
       {"MaxPool",
        [](Operation *op) -> Refusal {
          // float32, or int8/uint8 (a direct loop, as with the Indices output).
          auto x = rankedType(op->getOperand(0));
          if (!x || !x.getElementType().isInteger(8))
            if (auto r = requireF32(op, {0}); r.any())
              return r;
          if (auto r = requireRank(op, 0, 3, 5); r.any())
            return r;
          if (auto r = requireOneOf(op, "auto_pad", "NOTSET",
                                    {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
              r.any())
            return r;
          if (intAttr(op, "ceil_mode", 0) && strAttr(op, "auto_pad", "NOTSET") != "NOTSET")
            return refuse(RejectedKind::Attribute,
                          "ceil_mode 1 with auto_pad " + strAttr(op, "auto_pad", "NOTSET"),
                          "ceil_mode 1 only with explicit pads (auto_pad NOTSET)");
          if (!op->getAttr("kernel_shape"))
            return refuse(RejectedKind::Attribute, "no kernel_shape", "an explicit kernel_shape");
          int64_t order = intAttr(op, "storage_order", 0);
          if (order != 0 && order != 1)
            return refuse(RejectedKind::Attribute, "storage_order " + std::to_string(order),
                          "storage_order 0 or 1");
          return {};
        }}},
      {"AveragePool", {"AveragePool", checkPool}},
      {"LpPool",
       {"LpPool",
        [](Operation *op) -> Refusal {
          if (auto r = checkPool(op); r.any())
            return r;
          if (op->getAttr("p") && !op->getAttrOfType<IntegerAttr>("p"))
            return refuse(RejectedKind::Attribute, "a float p (LpPool-1)", "an integer p");
          if (intAttr(op, "p", 2) < 1)
            return refuse(RejectedKind::Attribute, "p " + std::to_string(intAttr(op, "p", 2)),
                          "p >= 1");
          return {};
        }}},
      {"GridSample", {"GridSample", checkGridSample}},
      {"RoiAlign", {"RoiAlign", checkRoiAlign}},
      {"MaxUnpool", {"MaxUnpool", checkMaxUnpool}},
      {"DeformConv", {"DeformConv", checkDeformConv}},
      {"Col2Im", {"Col2Im", checkCol2Im}},
      {"CenterCropPad", {"CenterCropPad", checkCenterCropPad}},
      {"AffineGrid", {"AffineGrid", checkAffineGrid}},
      {"ConvTranspose", {"ConvTranspose", checkConvTranspose}},
      {"GlobalAveragePool",
       {"GlobalAveragePool",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0}); r.any())
            return r;
          return requireRank(op, 0, 3, 8);
        }}},
      {"GlobalMaxPool",
       {"GlobalMaxPool",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0}); r.any())
            return r;
          return requireRank(op, 0, 3, 8);
        }}},
      {"Softmax", {"Softmax", [](Operation *op) { return requireF32(op, {0}); }}},
      {"LogSoftmax", {"LogSoftmax", [](Operation *op) { return requireF32(op, {0}); }}},
      {"LayerNormalization",
       {"LayerNormalization",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 2}); r.any())
            return r;
          return requireUnusedResultsAfter(op, 1);
        }}},
      {"layer_norm",
       {"LayerNormalization",
        [](Operation *op) {
          return requireF32(op, {0, 1, 2});
        }}},
      {"attention",
       {"Attention",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 2, 3}); r.any())
            return r;
          auto q = rankedType(op->getOperand(0));
          auto k = rankedType(op->getOperand(1));
          auto v = rankedType(op->getOperand(2));
          if (!q || !k || !v || q.getRank() < 2 || q.getRank() != k.getRank() ||
              q.getRank() != v.getRank())
            return refuse(RejectedKind::Shape, "q, k, v ranks differ or are below 2",
                          "q, k, v of one rank >= 2");
          return {};
        }}},
      {"BatchNormalization",
       {"BatchNormalization",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 2, 3, 4}); r.any())
            return r;
          if (intAttr(op, "training_mode", 0) != 0)
            return refuse(RejectedKind::Attribute, "training_mode 1", "inference (training_mode 0)");
          if (auto r = requireRank(op, 0, 2, 8); r.any())
            return r;
          return requireUnusedResultsAfter(op, 1);
        }}},
      {"InstanceNormalization",
       {"InstanceNormalization",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 2}); r.any())
            return r;
          return requireRank(op, 0, 3, 8);
        }}},
      {"Transpose", {"Transpose", [](Operation *) { return Refusal(); }}},
      {"Concat",
       {"Concat",
        [](Operation *op) -> Refusal {
          for (Value in : op->getOperands())
            if (auto r = requireAxisNotBatch(op, in, intAttr(op, "axis", 0), "concatenation");
                r.any())
              return r;
          return {};
        }}},
      {"Split",
       {"Split",
        [](Operation *op) -> Refusal {
          return requireAxisNotBatch(op, op->getOperand(0), intAttr(op, "axis", 0), "split");
        }}},
      {"Slice",
       {"Slice",
        [](Operation *op) -> Refusal {
          if (!hasDynamicDim(op->getOperand(0)))
            return {};
          if (op->getNumOperands() < 4 || isOmitted(op->getOperand(3)))
            return refuse(RejectedKind::Shape, "slicing every axis, the batch dim included",
                          "explicit constant axes that leave the batch dim alone");
          auto axes = getConstantIntValues(op->getOperand(3));
          if (!axes)
            return refuse(RejectedKind::Attribute, "axes is not a constant",
                          "constant axes when the batch dim is dynamic");
          int64_t rank = rankedType(op->getOperand(0)).getRank();
          for (int64_t axis : *axes)
            if (normalizeAxis(axis, rank) == 0)
              return refuse(RejectedKind::Shape, "slice along the dynamic batch dim",
                            "slices along static dims");
          return {};
        }}},
      {"Gather",
       {"Gather",
        [](Operation *op) -> Refusal {
          return requireAxisNotBatch(op, op->getOperand(0), intAttr(op, "axis", 0), "gather");
        }}},
      {"Expand", {"Expand", [](Operation *op) { return requireConstant(op, 1, "shape"); }}},
      {"Tile",
       {"Tile",
        [](Operation *op) -> Refusal {
          if (auto r = requireConstant(op, 1, "repeats"); r.any())
            return r;
          auto repeats = getConstantIntValues(op->getOperand(1));
          if (hasDynamicDim(op->getOperand(0)) && repeats && !repeats->empty() &&
              (*repeats)[0] != 1)
            return refuse(RejectedKind::Shape, "tiling the dynamic batch dim",
                          "repeats[0] == 1 when the batch is dynamic");
          return {};
        }}},
      {"Pad",
       {"Pad",
        [](Operation *op) -> Refusal {
          if (auto r = requireOneOf(op, "mode", "constant", {"constant", "reflect", "edge"});
              r.any())
            return r;
          if (auto r = requireConstant(op, 1, "pads"); r.any())
            return r;
          if (auto r = requireConstant(op, 3, "axes"); r.any())
            return r;
          if (hasDynamicDim(op->getOperand(0))) {
            if (op->getNumOperands() > 3 && !isOmitted(op->getOperand(3)))
              return refuse(RejectedKind::Shape, "explicit axes with a dynamic batch",
                            "pads over all axes, zero on the batch dim");
            auto pads = getConstantIntValues(op->getOperand(1));
            int64_t rank = rankedType(op->getOperand(0)).getRank();
            if (!pads || int64_t(pads->size()) != 2 * rank || (*pads)[0] || (*pads)[rank])
              return refuse(RejectedKind::Shape, "padding the dynamic batch dim",
                            "zero pads on the batch dim");
          }
          return {};
        }}},
      {"Resize", {"Resize", checkResize}},
      {"Shape", {"Shape", [](Operation *) { return Refusal(); }}},
      {"ReduceMean", {"ReduceMean", checkReduce}},
      {"ReduceSum", {"ReduceSum", checkReduce}},
      {"ReduceMax", {"ReduceMax", checkReduce}},
      {"ReduceMin", {"ReduceMin", checkReduce}},
      {"ReduceProd", {"ReduceProd", checkReduce}},
      {"ReduceL2", {"ReduceL2", checkReduce}},
      {"ReduceSumSquare", {"ReduceSumSquare", checkReduce}},
      {"ArgMax", {"ArgMax", [](Operation *op) { return requireF32(op, {0}); }}},
      {"ArgMin", {"ArgMin", [](Operation *op) { return requireF32(op, {0}); }}},
  };
  return ops;
}

/// Ops that only reinterpret their input's bytes.
const llvm::StringSet<> &viewOps() {
  static const llvm::StringSet<> ops = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
                                        "Dropout"};
  return ops;
}

Refusal checkView(Operation *op, const std::string &type) {
  if (type == "Reshape" && !getConstantIntValues(op->getOperand(1)))
    return refuse(RejectedKind::Attribute, "the target shape is not a constant",
                  "a constant shape");
  if ((type == "Squeeze" || type == "Unsqueeze") && op->getNumOperands() > 1)
    if (auto r = requireConstant(op, 1, "axes"); r.any())
      return r;
  if (type == "Dropout") {
    if (op->getNumOperands() > 2 && !isOmitted(op->getOperand(2))) {
      auto training = getConstantIntValues(op->getOperand(2));
      if (!training || (!training->empty() && (*training)[0] != 0))
        return refuse(RejectedKind::Attribute, "training_mode may be true", "inference Dropout");
    }
    if (auto r = requireUnusedResultsAfter(op, 1); r.any())
      return r;
  }
  auto in = rankedType(op->getOperand(0));
  auto out = rankedType(op->getResult(0));
  if (!in || !out || in.hasStaticShape() != out.hasStaticShape() ||
      staticProduct(in) != staticProduct(out))
    return refuse(RejectedKind::Shape, "the batch dim does not map to the output's batch dim",
                  "views that keep the batch dim whole");
  return {};
}

std::string typeText(Type type) {
  std::string s;
  llvm::raw_string_ostream(s) << type;
  return s;
}

/// The rules every claimed node meets, whatever its class.
Refusal checkTypes(Operation *op) {
  auto checkValue = [&](Value v, const std::string &what) -> Refusal {
    if (isa<NoneType>(v.getType()))
      return {};
    auto t = rankedType(v);
    if (!t)
      return refuse(RejectedKind::DType, what + " is " + typeText(v.getType()),
                    "ranked tensors");
    Type e = t.getElementType();
    if (!(e.isF32() || e.isF64() || e.isF16() || e.isBF16() || e.isInteger(1) ||
          e.isInteger(8) || e.isInteger(16) || e.isInteger(32) || e.isInteger(64)))
      return refuse(RejectedKind::DType, what + " has element type " + typeText(e),
                    "numeric and bool tensors");
    for (auto [i, d] : llvm::enumerate(t.getShape()))
      if (ShapedType::isDynamic(d) && i != 0)
        return refuse(RejectedKind::Shape, what + " is " + typeText(t),
                      "static dims except a leading batch dim",
                      "give the model static shapes (or a dynamic batch only)");
    return {};
  };
  bool dynamicIn = false;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    if (auto r = checkValue(v, "input " + std::to_string(i)); r.any())
      return r;
    dynamicIn |= hasDynamicDim(v);
  }
  for (auto [i, v] : llvm::enumerate(op->getResults())) {
    if (auto r = checkValue(v, "output " + std::to_string(i)); r.any())
      return r;
    if (hasDynamicDim(v) && !dynamicIn)
      return refuse(RejectedKind::Shape,
                    "output " + std::to_string(i) + " has a dynamic dim no input has",
                    "outputs whose dynamic dim is the inputs' batch");
  }
  return {};
}

double elementsOf(Value v) {
  auto t = rankedType(v);
  if (!t)
    return 0;
  double n = 1;
  for (int64_t d : t.getShape())
    n *= ShapedType::isDynamic(d) ? 1 : double(d);
  return n;
}

KernelCost estimateCost(Operation *op, const std::string &type) {
  double out = 0, bytes = 0;
  for (Value r : op->getResults())
    out += elementsOf(r);
  for (Value v : op->getOperands())
    bytes += elementsOf(v) * 4;
  bytes += out * 4;
  double flops = out;
  if (type == "MatMul" || type == "Gemm") {
    auto a = rankedType(op->getOperand(0));
    int64_t k = a && a.getRank() ? a.getShape().back() : 1;
    if (type == "Gemm" && intAttr(op, "transA", 0) && a)
      k = a.getShape().front();
    flops = 2 * out * double(std::max<int64_t>(k, 1));
  } else if (type == "Conv") {
    flops = 2 * out * elementsOf(op->getOperand(1)) /
            std::max<double>(1, rankedType(op->getOperand(1)).getShape().front());
  }
  KernelCost cost;
  cost.computeNs = flops * 0.03;
  cost.memoryNs = bytes * 0.1;
  return cost;
}

} // namespace

CpuOpClass classifyCpuOp(Operation *op) {
  if (isLowerableElementwiseOp(op))
    return CpuOpClass::Elementwise;
  if (isLowerableStructuredOp(op))
    return CpuOpClass::Structured;
  std::string type = onnxOpTypeAndDomain(op).first;
  if (op->getName().getStringRef() == "onnx.Generic")
    return CpuOpClass::Unsupported;
  if (viewOps().contains(type))
    return CpuOpClass::View;
  if (libraryOps().count(type))
    return CpuOpClass::Library;
  return CpuOpClass::Unsupported;
}

std::string libraryKernelFor(Operation *op) {
  auto found = libraryOps().find(onnxOpTypeAndDomain(op).first);
  return found == libraryOps().end() ? std::string() : found->second.kernel;
}

KernelMatch matchCpuOp(const NodeQuery &query, const std::string &epName) {
  Operation *op = query.op;
  auto decline = [&](const Refusal &r) {
    return KernelMatch::unsupported(
        query.decline(epName, r.kind, r.rejected, r.accepts, r.remediation));
  };
  if (op->getName().getStringRef() == "onnx.Generic")
    return decline(refuse(RejectedKind::Opset,
                          "imported as onnx.Generic (no typed schema for this opset)",
                          "typed onnx ops (see docs/onnx-dialect.md)",
                          "re-export with a newer opset"));
  if (query.domain != "ai.onnx" && query.domain != "ortc")
    return decline(refuse(RejectedKind::Domain, "domain " + query.domain, "ai.onnx and ortc ops"));
  if (auto r = checkTypes(op); r.any())
    return decline(r);

  const std::string &type = query.opType;
  switch (classifyCpuOp(op)) {
  case CpuOpClass::Elementwise:
  case CpuOpClass::Structured:
    return KernelMatch::supported(estimateCost(op, type));
  case CpuOpClass::View:
    if (auto r = checkView(op, type); r.any())
      return decline(r);
    return KernelMatch::supported(KernelCost{});
  case CpuOpClass::Library:
    if (auto r = libraryOps().at(type).check(op); r.any())
      return decline(r);
    return KernelMatch::supported(estimateCost(op, type));
  case CpuOpClass::Unsupported:
    break;
  }
  std::string why = "no CPU kernel for " + query.domain + "::" + type +
                    " with these element types and attributes";
  return decline(refuse(RejectedKind::OpType, why,
                        "the ops in providers/cpu/kernels/README.md and elementwise ops "
                        "(docs/passes.md, cpu-lower-to-linalg)"));
}

} // namespace ortc::cpu
