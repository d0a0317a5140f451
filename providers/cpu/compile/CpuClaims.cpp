//===- CpuClaims.cpp - what the CPU EP runs, and how ----------------------===//
//
// The library kernels' accepted inputs and attributes are listed in
// providers/cpu/kernels/README.md; the checks here follow that table.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/CpuClaims.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/HostTensor.h"
#include "compiler/Transforms/ShapeRules/SequenceTypes.h"
#include "compiler/Transforms/SymbolicShapes.h"
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/onnx/OnnxSchema.h"
#include "compiler/Lowering/LowerToLinalg.h"
#include "providers/cpu/kernels/Einsum.h"
#include "providers/cpu/kernels/SpatialKernels.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/ErrorHandling.h"

#include <cctype>
#include <functional>
#include <map>
#include <set>

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

/// An input that decides an output's shape (Reshape's target, Expand's shape,
/// Pad's pads...) need not be a constant: checkTypes has given every dim of
/// the node an expression, so the plan knows the output's shape at every run,
/// and the kernel computes the shape from the run-time value and returns
/// InvalidArgument when it differs from the output view. Nothing is guessed.
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

/// Ops whose output shape follows from input values (NonZero, Compress, ...):
/// claimed only when the model declares every shape statically; the kernel
/// refuses a result that does not fit.
Refusal requireStaticShapes(Operation *op) {
  for (auto [i, r] : llvm::enumerate(op->getResults())) {
    if (isa<NoneType>(r.getType()))
      continue;
    auto t = rankedType(r);
    if (!t || !t.hasStaticShape())
      return refuse(RejectedKind::Shape,
                    "output " + std::to_string(i) + " depends on the input values and is " +
                        (t ? "not static" : "unranked"),
                    "a model that declares this output's shape statically",
                    "declare the output shape, or run the op outside the compiled partition");
  }
  return {};
}

std::string typeText(Type type);

Refusal checkWindow(Operation *op) {
  auto out = rankedType(op->getResult(0));
  if (!out || !(out.getElementType().isF32() || out.getElementType().isF64()))
    return refuse(RejectedKind::DType,
                  "output 0 is " + typeText(op->getResult(0).getType()),
                  "float32 or float64 output (output_datatype 1 or 11)");
  if (op->getName().getStringRef() == "onnx.MelWeightMatrix" &&
      !rankedType(op->getResult(0)).getElementType().isF32())
    return refuse(RejectedKind::DType, "output 0 is " + typeText(op->getResult(0).getType()),
                  "float32 output (output_datatype 1)");
  return requireStaticShapes(op);
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
  // float32 and float64; ReduceMax and ReduceMin also int8, uint8, int32,
  // int64 and bool (ReduceKernels.cpp).
  auto data = rankedType(op->getOperand(0));
  Type e = data ? data.getElementType() : Type();
  bool ok = e && (e.isF32() || e.isF64());
  StringRef name = op->getName().getStringRef();
  bool maxMin = name == "onnx.ReduceMax" || name == "onnx.ReduceMin";
  if (auto it = dyn_cast_or_null<IntegerType>(e); it && maxMin)
    ok = it.getWidth() == 1 || it.getWidth() == 8 ||
         ((it.getWidth() == 32 || it.getWidth() == 64) && !it.isUnsigned());
  if (!ok)
    return refuse(RejectedKind::DType,
                  data ? "input 0 has element type " + typeText(e)
                       : "input 0 is " + typeText(op->getOperand(0).getType()),
                  maxMin ? "float32, float64, int8, uint8, int32, int64 or bool data"
                         : "float32 or float64 data");
  // Axes may be a run-time input (see requireShapeInput).
  return {};
}

//===----------------------------------------------------------------------===//
// Losses and the further normalizations (LossKernels.cpp,
// NormalizationExtraKernels.cpp)
//===----------------------------------------------------------------------===//

/// The plan passes a node's present outputs in order, so one after an
/// omitted output would land in the omitted one's slot: it must be unused.
Refusal requireNoOutputGap(Operation *op) {
  bool gap = false;
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    bool omitted = isa<NoneType>(op->getResult(i).getType());
    if (gap && !omitted && !op->getResult(i).use_empty())
      return refuse(RejectedKind::Attribute,
                    "output " + std::to_string(i) + " is used after an omitted output",
                    "optional outputs omitted only at the end");
    gap |= omitted;
  }
  return {};
}

/// Input `operand` has rank `minRank` or more; `form` names the expected
/// layout in the decline ("X [N, C, D1..Dn]").
Refusal requireMinRank(Operation *op, unsigned operand, int64_t minRank,
                       const char *form = nullptr) {
  auto t = rankedType(op->getOperand(operand));
  if (t && t.getRank() >= minRank)
    return {};
  return refuse(RejectedKind::Shape,
                "input " + std::to_string(operand) + " has rank " +
                    (t ? std::to_string(t.getRank()) : std::string("?")),
                "rank " + std::to_string(minRank) + " or more" +
                    (form ? " (" + std::string(form) + ")" : std::string()));
}

Refusal requireStashFloat(Operation *op) {
  int64_t stash = intAttr(op, "stash_type", 1);
  if (stash == 1)
    return {};
  return refuse(RejectedKind::Attribute, "stash_type " + std::to_string(stash),
                "stash_type 1 (statistics in float32)");
}

/// An int-list attribute in either of its forms, or `fallback` when absent.
std::vector<int64_t> intsAttr(Operation *op, StringRef name, std::vector<int64_t> fallback) {
  if (auto a = op->getAttrOfType<DenseI64ArrayAttr>(name))
    return std::vector<int64_t>(a.asArrayRef().begin(), a.asArrayRef().end());
  if (auto a = op->getAttrOfType<ArrayAttr>(name)) {
    std::vector<int64_t> v;
    for (Attribute e : a)
      if (auto i = dyn_cast<IntegerAttr>(e))
        v.push_back(i.getInt());
    return v;
  }
  return fallback;
}

/// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: scores, target,
/// optional weight.
Refusal checkLoss(Operation *op) {
  if (auto r = requireF32(op, {0, 2}); r.any())
    return r;
  if (auto r = requireMinRank(op, 0, 2, "scores [N, C, d1..dk]"); r.any())
    return r;
  auto target = rankedType(op->getOperand(1));
  auto index = target ? dyn_cast<IntegerType>(target.getElementType()) : IntegerType();
  if (!index || index.isUnsigned() || (index.getWidth() != 32 && index.getWidth() != 64))
    return refuse(RejectedKind::DType, "input 1 is " + typeText(op->getOperand(1).getType()),
                  "an int32 or int64 target");
  if (auto r = requireOneOf(op, "reduction", "mean", {"none", "sum", "mean"}); r.any())
    return r;
  return requireNoOutputGap(op);
}

Refusal checkRmsNormalization(Operation *op) {
  if (auto r = requireF32(op, {0, 1}); r.any())
    return r;
  if (auto r = requireStashFloat(op); r.any())
    return r;
  auto x = rankedType(op->getOperand(0));
  auto scale = rankedType(op->getOperand(1));
  if (!scale)
    return refuse(RejectedKind::Shape, "no scale input", "a scale input");
  int64_t rank = x.getRank(), axis = normalizeAxis(intAttr(op, "axis", -1), x.getRank());
  if (axis < 0 || axis >= rank)
    return refuse(RejectedKind::Attribute, "axis " + std::to_string(intAttr(op, "axis", -1)),
                  "an axis within X's rank " + std::to_string(rank));
  ArrayRef<int64_t> xs = x.getShape(), ss = scale.getShape();
  bool fits = int64_t(ss.size()) <= rank - axis;
  for (size_t i = 0; fits && i < ss.size(); ++i) {
    int64_t d = ss[ss.size() - 1 - i], t = xs[xs.size() - 1 - i];
    fits = d == 1 || ShapedType::isDynamic(d) || ShapedType::isDynamic(t) || d == t;
  }
  if (!fits)
    return refuse(RejectedKind::Shape,
                  "scale " + typeText(scale) + " does not broadcast to X's dims from axis " +
                      std::to_string(axis),
                  "a scale broadcasting (numpy) to X.shape[axis:]");
  return {};
}

Refusal checkGroupNormalization(Operation *op) {
  if (auto r = requireF32(op, {0, 1, 2}); r.any())
    return r;
  if (auto r = requireMinRank(op, 0, 2, "X [N, C, D1..Dn]"); r.any())
    return r;
  if (auto r = requireStashFloat(op); r.any())
    return r;
  int64_t C = rankedType(op->getOperand(0)).getShape()[1];
  int64_t groups = intAttr(op, "num_groups", 0);
  if (groups <= 0 || C % groups != 0)
    return refuse(RejectedKind::Attribute, "num_groups " + std::to_string(groups),
                  "num_groups dividing C = " + std::to_string(C));
  for (unsigned i : {1u, 2u}) {
    auto t = rankedType(op->getOperand(i));
    if (!t || t.getShape() != ArrayRef<int64_t>{C})
      return refuse(RejectedKind::Shape,
                    "input " + std::to_string(i) + " is " + typeText(op->getOperand(i).getType()),
                    "scale and bias of shape [C] = [" + std::to_string(C) +
                        "] (the opset-21 per-channel form)");
  }
  return {};
}

Refusal checkMeanVarianceNormalization(Operation *op) {
  if (auto r = requireF32(op, {0}); r.any())
    return r;
  int64_t rank = rankedType(op->getOperand(0)).getRank();
  std::vector<bool> seen(rank, false);
  for (int64_t a : intsAttr(op, "axes", {0, 2, 3})) {
    int64_t n = normalizeAxis(a, rank);
    if (n < 0 || n >= rank || seen[n])
      return refuse(RejectedKind::Attribute, "axes entry " + std::to_string(a),
                    "distinct axes within the rank " + std::to_string(rank));
    seen[n] = true;
  }
  return {};
}

Refusal checkAlongAxis(Operation *op) {
  if (auto r = requireF32(op, {0}); r.any())
    return r;
  int64_t rank = rankedType(op->getOperand(0)).getRank();
  int64_t axis = normalizeAxis(intAttr(op, "axis", -1), rank);
  if (axis < 0 || axis >= rank)
    return refuse(RejectedKind::Attribute, "axis " + std::to_string(intAttr(op, "axis", -1)),
                  "an axis within the input's rank " + std::to_string(rank));
  return {};
}

//===--- Index, scatter, scan and generator ops (kernels/IndexKernels.cpp,
//===--- kernels/EinsumKernel.cpp) ---------------------------------------===//

std::string elementTypeText(Value v) {
  std::string s;
  auto t = rankedType(v);
  llvm::raw_string_ostream(s) << (t ? t.getElementType() : v.getType());
  return s;
}

/// float32, float64 or an 8- to 64-bit integer (not bool): what the kernels
/// that compute on values (visitArithmetic) take.
bool isArithmeticElement(Value v) {
  auto t = rankedType(v);
  if (!t)
    return false;
  Type e = t.getElementType();
  return e.isF32() || e.isF64() || (isa<IntegerType>(e) && !e.isInteger(1));
}

Refusal requireArithmetic(Operation *op, unsigned operand, const char *what) {
  if (isArithmeticElement(op->getOperand(operand)))
    return {};
  return refuse(RejectedKind::DType,
                std::string(what) + " has element type " + elementTypeText(op->getOperand(operand)),
                "float32, float64 or 8- to 64-bit integers", "insert a Cast to float32");
}

Refusal checkScatter(Operation *op) {
  if (auto r = requireOneOf(op, "reduction", "none", {"none", "add", "mul", "max", "min"}); r.any())
    return r;
  if (strAttr(op, "reduction", "none") != "none")
    return requireArithmetic(op, 0, "data (with a reduction)");
  return {};
}

Refusal checkDepthSpace(Operation *op, bool toSpace) {
  if (auto r = requireRank(op, 0, 4, 4); r.any())
    return r;
  if (auto r = requireOneOf(op, "mode", "DCR", {"DCR", "CRD"}); r.any())
    return r;
  int64_t b = intAttr(op, "blocksize", 0);
  if (b < 1)
    return refuse(RejectedKind::Attribute, "blocksize " + std::to_string(b), "blocksize >= 1");
  auto shape = rankedType(op->getOperand(0)).getShape();
  bool fits = toSpace ? shape[1] % (b * b) == 0 : shape[2] % b == 0 && shape[3] % b == 0;
  if (!fits)
    return refuse(RejectedKind::Shape, "input dims do not divide by blocksize " + std::to_string(b),
                  toSpace ? "C divisible by blocksize^2" : "H and W divisible by blocksize");
  return {};
}

Refusal checkEinsum(Operation *op) {
  std::vector<std::vector<int64_t>> shapes;
  for (Value in : op->getOperands()) {
    auto t = rankedType(in);
    Type e = t ? t.getElementType() : Type();
    if (!t || !(e.isF32() || e.isF64() || e.isF16() || e.isBF16() ||
                (isa<IntegerType>(e) && !e.isInteger(1))))
      return refuse(RejectedKind::DType, "an input has element type " + elementTypeText(in),
                    "float32, float64, float16, bfloat16 or 8- to 64-bit integers");
    if (!t.hasStaticShape())
      return refuse(RejectedKind::Shape, "an input has a dynamic dim", "static input shapes",
                    "give the model static shapes");
    shapes.emplace_back(t.getShape().begin(), t.getShape().end());
  }
  EinsumPlan plan;
  std::string error;
  if (!planEinsum(strAttr(op, "equation", ""), shapes, plan, error))
    return refuse(RejectedKind::Attribute,
                  "equation '" + strAttr(op, "equation", "") + "': " + error,
                  "numpy einsum equations that fit the input shapes");
  auto out = rankedType(op->getResult(0));
  if (!out || llvm::ArrayRef<int64_t>(plan.outputShape) != out.getShape())
    return refuse(RejectedKind::Shape, "the result type differs from the equation's output shape",
                  "a result of the equation's shape");
  return {};
}

/// Resize: the kernel's own shape rule (planResize) must give the declared
/// output shape from constant scales or sizes; run-time ones the kernel
/// applies when it sizes its output (the rule's data symbols).
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
      return {}; // a run-time input; see above
    for (int64_t i = 0; i < scales->numElements(); ++i)
      params.scales.push_back(scales->floatAt(i));
    haveScales = !params.scales.empty();
  }
  if (op->getNumOperands() > 3 && !isOmitted(op->getOperand(3))) {
    auto sizes = getConstantIntValues(op->getOperand(3));
    if (!sizes)
      return {}; // a run-time input; see above
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
  // A dynamic dim is planned as 1 here and left out of the comparison: its
  // size is the symbolic analysis' (checkTypes; a data symbol where only the
  // run decides it), and the kernel checks or sizes it at run time. A
  // size-keeping policy ties every axis to the others: over a dynamic dim
  // only the run can tell, so the kernel sizes the output then.
  std::vector<int64_t> inShape(x.getShape().begin(), x.getShape().end());
  std::vector<int64_t> outShape(y.getShape().begin(), y.getShape().end());
  bool anyDynamic = false;
  for (size_t d = 0; d < inShape.size(); ++d)
    if (ShapedType::isDynamic(inShape[d])) {
      inShape[d] = outShape[d] = 1;
      anyDynamic = true;
    }
  if (anyDynamic && params.keepAspectRatioPolicy != "stretch")
    return {};
  kernels::ResizePlan plan;
  Status status = kernels::planResize(params, inShape, plan);
  if (!status.isOk())
    return refuse(RejectedKind::Attribute, status.message(), "valid scales or sizes");
  for (size_t d = 0; d < inShape.size(); ++d)
    if (ShapedType::isDynamic(x.getShape()[d]) || ShapedType::isDynamic(y.getShape()[d]))
      plan.outShape[d] = outShape[d];
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
    else if (auto floats = dyn_cast<DenseF32ArrayAttr>(attr))
      a.floats[name].assign(floats.asArrayRef().begin(), floats.asArrayRef().end());
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

Refusal checkConv(Operation *op) {
  if (auto r = requireF32(op, {0, 1, 2}); r.any())
    return r;
  if (auto r = requireRank(op, 0, 3, 5); r.any())
    return r;
  // A W of dynamic dims (a graph input): the kernel reads the kernel shape
  // from W when it runs.
  return requireOneOf(op, "auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
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
  // A dynamic spatial dim is planned as 1 here and its output left out of the
  // comparison: the symbolic analysis gives its size (checkTypes) and the
  // kernel checks it at run time. output_shape then needs static inputs.
  std::vector<int64_t> inSpatial(x.getShape().begin() + 2, x.getShape().end());
  std::vector<int64_t> kernel(w.getShape().begin() + 2, w.getShape().end());
  std::vector<int64_t> outSpatial(y.getShape().begin() + 2, y.getShape().end());
  bool anyDynamic = false;
  for (size_t d = 0; d < inSpatial.size(); ++d)
    if (ShapedType::isDynamic(inSpatial[d])) {
      inSpatial[d] = 1;
      anyDynamic = true;
    }
  if (anyDynamic && op->hasAttr("output_shape"))
    return refuse(RejectedKind::Shape, "output_shape with a dynamic spatial dim",
                  "static spatial dims with output_shape");
  kernels::ConvTransposePlan plan;
  Status status = kernels::planConvTranspose(stepAttributesOf(op), inSpatial, kernel, plan);
  if (!status.isOk())
    return refuse(RejectedKind::Attribute, status.message(),
                  "pads >= 0, output_padding below the stride or dilation, output_shape at "
                  "least the full output (without SAME auto_pad, zero pads)");
  for (size_t d = 0; d < outSpatial.size(); ++d)
    if (ShapedType::isDynamic(x.getShape()[2 + d]) || ShapedType::isDynamic(outSpatial[d]))
      plan.out[d] = outSpatial[d];
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
  return {}; // a run-time input; see above
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
    return {}; // run-time inputs; see above
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

//===----------------------------------------------------------------------===//
// Quantization and recurrent ops (kernels/QuantKernels.cpp,
// kernels/RecurrentKernels.cpp)
//===----------------------------------------------------------------------===//

bool isQuantIntType(Type e) {
  return e.isInteger(8) || e.isInteger(16); // int8/uint8/int16/uint16 (signless or not)
}
bool isInt8Type(Type e) { return e.isInteger(8); }

/// Operand `i` (skipped when omitted) has an element type `ok` accepts.
Refusal requireElement(Operation *op, unsigned i, const std::function<bool(Type)> &ok,
                       const std::string &accepts) {
  if (i >= op->getNumOperands() || isOmitted(op->getOperand(i)))
    return {};
  auto t = rankedType(op->getOperand(i));
  if (t && ok(t.getElementType()))
    return {};
  return refuse(RejectedKind::DType,
                "input " + std::to_string(i) + " has element type " +
                    (t ? typeText(t.getElementType()) : typeText(op->getOperand(i).getType())),
                accepts);
}

Refusal requireResultElement(Operation *op, unsigned i, const std::function<bool(Type)> &ok,
                             const std::string &accepts) {
  auto t = rankedType(op->getResult(i));
  if (t && ok(t.getElementType()))
    return {};
  return refuse(RejectedKind::DType,
                "output " + std::to_string(i) + " has element type " +
                    (t ? typeText(t.getElementType()) : typeText(op->getResult(i).getType())),
                accepts);
}

/// Operand `i`, when present, has the element type of operand (or result) `ref`.
Refusal requireSameElement(Operation *op, unsigned i, Value ref, const std::string &what) {
  if (i >= op->getNumOperands() || isOmitted(op->getOperand(i)))
    return {};
  auto t = rankedType(op->getOperand(i)), r = rankedType(ref);
  if (t && r && t.getElementType() == r.getElementType())
    return {};
  return refuse(RejectedKind::DType,
                "input " + std::to_string(i) + " has element type " +
                    (t ? typeText(t.getElementType()) : std::string("?")),
                what);
}

/// Operand `i`, when present, is statically shaped with one element.
Refusal requireOneElement(Operation *op, unsigned i, const char *what) {
  if (i >= op->getNumOperands() || isOmitted(op->getOperand(i)))
    return {};
  auto t = rankedType(op->getOperand(i));
  if (t && t.hasStaticShape() && t.getNumElements() == 1)
    return {};
  return refuse(RejectedKind::Shape,
                std::string(what) + " (input " + std::to_string(i) + ") is " +
                    typeText(op->getOperand(i).getType()),
                std::string(what) + " with one element (per-tensor)");
}

/// Operand `i`, when present, has one element or is [M] with M = dim 0 of
/// operand `ofDim0` (per output channel / per column).
Refusal requireOneOrPerChannel(Operation *op, unsigned i, int64_t m, const char *what) {
  if (i >= op->getNumOperands() || isOmitted(op->getOperand(i)))
    return {};
  auto t = rankedType(op->getOperand(i));
  if (t && t.hasStaticShape() &&
      (t.getNumElements() == 1 || (t.getRank() == 1 && t.getShape()[0] == m && m >= 0)))
    return {};
  return refuse(RejectedKind::Shape,
                std::string(what) + " (input " + std::to_string(i) + ") is " +
                    typeText(op->getOperand(i).getType()),
                std::string(what) + " with one element or of shape [" + std::to_string(m) + "]");
}

/// The ONNX TensorProto code of an element type, 0 if none.
int64_t onnxTypeCode(Type e) {
  if (e.isF32())
    return 1;
  if (auto i = dyn_cast<IntegerType>(e)) {
    bool u = i.isUnsigned();
    switch (i.getWidth()) {
    case 8:
      return u ? 2 : 3;
    case 16:
      return u ? 4 : 5;
    case 32:
      return u ? 12 : 6;
    default:
      return 0;
    }
  }
  return 0;
}

/// Scale and zero point (operands 1, 2) against data operand 0 and the
/// `axis`/`block_size` attributes, as the kernels' planQuantMap reads them:
/// one element (per-tensor), [x.shape[axis]] (per-axis, block_size 0) or x's
/// shape with ceil(D/block_size) on `axis` (blocked); static shapes.
Refusal checkQuantGranularity(Operation *op) {
  auto x = rankedType(op->getOperand(0)), scale = rankedType(op->getOperand(1));
  if (!x || !scale || !scale.hasStaticShape())
    return refuse(RejectedKind::Shape, "the scale's shape is not static",
                  "a statically shaped scale");
  if (op->getNumOperands() > 2 && !isOmitted(op->getOperand(2))) {
    auto zp = rankedType(op->getOperand(2));
    if (!zp || zp.getShape() != scale.getShape())
      return refuse(RejectedKind::Shape,
                    "zero point " + typeText(op->getOperand(2).getType()) + " and scale " +
                        typeText(scale) + " differ in shape",
                    "a zero point of the scale's shape");
  }
  int64_t blockSize = intAttr(op, "block_size", 0);
  if (blockSize < 0)
    return refuse(RejectedKind::Attribute, "block_size " + std::to_string(blockSize),
                  "block_size >= 0");
  if (scale.getNumElements() == 1)
    return {};
  if (!x.hasStaticShape())
    return refuse(RejectedKind::Shape, "per-axis or blocked scales with a dynamic dim in x",
                  "per-tensor scales, or a statically shaped x");
  int64_t rank = x.getRank(), axis = normalizeAxis(intAttr(op, "axis", 1), rank);
  if (axis < 0 || axis >= rank)
    return refuse(RejectedKind::Attribute,
                  "axis " + std::to_string(intAttr(op, "axis", 1)) + " for rank " +
                      std::to_string(rank),
                  "an axis within x's rank");
  SmallVector<int64_t> expect;
  if (blockSize == 0) {
    expect.push_back(x.getShape()[axis]);
  } else {
    expect.assign(x.getShape().begin(), x.getShape().end());
    expect[axis] = (expect[axis] + blockSize - 1) / blockSize;
  }
  if (scale.getShape() != ArrayRef<int64_t>(expect))
    return refuse(RejectedKind::Shape,
                  "scale " + typeText(scale) + " for x " + typeText(x) + ", axis " +
                      std::to_string(axis) + ", block_size " + std::to_string(blockSize),
                  "a scale with one element, [x.shape[axis]] (block_size 0) or x's shape with "
                  "ceil(D/block_size) on axis");
  return {};
}

bool isQuantFloat(Type e) { return e.isF32() || e.isF16() || e.isBF16(); }

Refusal checkQuantizeLinear(Operation *op) {
  if (auto r = requireElement(op, 0, isQuantFloat,
                              "float32, float16 or bfloat16 x (int32 x is not supported)");
      r.any())
    return r;
  if (auto r = requireElement(op, 1, isQuantFloat,
                              "a float32, float16 or bfloat16 y_scale (float8e8m0 and int32 "
                              "scales are not supported)");
      r.any())
    return r;
  const char *quantTypes = "int8, uint8, int16 or uint16 (float8, 4-bit and 2-bit types are not "
                           "supported)";
  if (auto r = requireElement(op, 2, isQuantIntType, std::string("y_zero_point of ") + quantTypes);
      r.any())
    return r;
  if (auto r = requireResultElement(op, 0, isQuantIntType, std::string("y of ") + quantTypes);
      r.any())
    return r;
  if (auto r = requireSameElement(op, 2, op->getResult(0), "y_zero_point of y's element type");
      r.any())
    return r;
  int64_t outputDtype = intAttr(op, "output_dtype", 0);
  if (outputDtype != 0 &&
      outputDtype != onnxTypeCode(rankedType(op->getResult(0)).getElementType()))
    return refuse(RejectedKind::Attribute, "output_dtype " + std::to_string(outputDtype),
                  "output_dtype 0 or y's element type");
  // The division's type: precision (float32 1, float16 10, bfloat16 16), else
  // y_scale's, which x must then share.
  int64_t precision = intAttr(op, "precision", 0);
  if (precision != 0 && precision != 1 && precision != 10 && precision != 16)
    return refuse(RejectedKind::Attribute, "precision " + std::to_string(precision),
                  "precision 0 (y_scale's type), 1, 10 or 16 (float32, float16, bfloat16)");
  if (precision == 0 && rankedType(op->getOperand(0)).getElementType() !=
                            rankedType(op->getOperand(1)).getElementType())
    return refuse(RejectedKind::DType,
                  "x " + typeText(rankedType(op->getOperand(0)).getElementType()) +
                      " and y_scale " +
                      typeText(rankedType(op->getOperand(1)).getElementType()) +
                      " differ with no precision attribute",
                  "x of y_scale's type, or an explicit precision");
  return checkQuantGranularity(op);
}

Refusal checkDequantizeLinear(Operation *op) {
  if (auto r = requireElement(
          op, 0,
          [](Type e) {
            return isQuantIntType(e) || e.isSignlessInteger(32) || e.isSignedInteger(32);
          },
          "x of int8, uint8, int16, uint16 or int32 (float8, 4-bit and 2-bit types are not "
          "supported)");
      r.any())
    return r;
  if (auto r = requireElement(op, 1, isQuantFloat,
                              "a float32, float16 or bfloat16 x_scale (float8e8m0 scales are "
                              "not supported)");
      r.any())
    return r;
  if (auto r = requireSameElement(op, 2, op->getOperand(0), "x_zero_point of x's element type");
      r.any())
    return r;
  if (auto r = requireResultElement(op, 0, isQuantFloat, "a float32, float16 or bfloat16 y");
      r.any())
    return r;
  int64_t outputDtype = intAttr(op, "output_dtype", 0);
  Type y = rankedType(op->getResult(0)).getElementType();
  Type expect = rankedType(op->getOperand(1)).getElementType();
  if (outputDtype != 0) {
    int64_t code = y.isF32() ? 1 : y.isF16() ? 10 : 16;
    if (outputDtype != code)
      return refuse(RejectedKind::Attribute, "output_dtype " + std::to_string(outputDtype),
                    "output_dtype 0 or y's element type");
  } else if (y != expect) {
    return refuse(RejectedKind::DType, "y has element type " + typeText(y),
                  "y of x_scale's type when output_dtype is 0");
  }
  return checkQuantGranularity(op);
}

Refusal checkDynamicQuantizeLinear(Operation *op) {
  if (auto r = requireF32(op, {0}); r.any())
    return r;
  for (unsigned i = 0; i < op->getNumResults(); ++i)
    if (isa<NoneType>(op->getResult(i).getType()))
      return refuse(RejectedKind::Attribute, "output " + std::to_string(i) + " is omitted",
                    "all three outputs y, y_scale, y_zero_point");
  return {};
}

Refusal checkMatMulInteger(Operation *op) {
  const char *accepts = "int8 or uint8 A and B";
  if (auto r = requireElement(op, 0, isInt8Type, accepts); r.any())
    return r;
  if (auto r = requireElement(op, 1, isInt8Type, accepts); r.any())
    return r;
  if (auto r = requireSameElement(op, 2, op->getOperand(0), "a_zero_point of A's type"); r.any())
    return r;
  if (auto r = requireSameElement(op, 3, op->getOperand(1), "b_zero_point of B's type"); r.any())
    return r;
  if (auto r = requireOneElement(op, 2, "a_zero_point"); r.any())
    return r;
  auto b = rankedType(op->getOperand(1));
  int64_t n = b && b.getRank() == 2 ? b.getShape()[1] : -1;
  return requireOneOrPerChannel(op, 3, n, "b_zero_point (per-column only for a 2-D B)");
}

Refusal checkQLinearMatMul(Operation *op) {
  const char *accepts = "int8 or uint8 a, b and y (float8 types are not supported)";
  for (unsigned i : {0u, 3u})
    if (auto r = requireElement(op, i, isInt8Type, accepts); r.any())
      return r;
  if (auto r = requireResultElement(op, 0, isInt8Type, accepts); r.any())
    return r;
  auto isScale = [](Type e) { return e.isF32() || e.isF16() || e.isBF16(); };
  for (unsigned i : {1u, 4u, 6u}) {
    if (auto r = requireElement(op, i, isScale, "float32, float16 or bfloat16 scales"); r.any())
      return r;
    if (auto r = requireSameElement(op, i, op->getOperand(1), "scales of one element type");
        r.any())
      return r;
  }
  if (auto r = requireSameElement(op, 2, op->getOperand(0), "a_zero_point of a's type"); r.any())
    return r;
  if (auto r = requireSameElement(op, 5, op->getOperand(3), "b_zero_point of b's type"); r.any())
    return r;
  if (auto r = requireSameElement(op, 7, op->getResult(0), "y_zero_point of y's type"); r.any())
    return r;
  if (op->getNumOperands() > 7 && isOmitted(op->getOperand(7)) &&
      rankedType(op->getResult(0)).getElementType() !=
          rankedType(op->getOperand(0)).getElementType())
    return refuse(RejectedKind::DType, "y's type differs from a's with no y_zero_point",
                  "y of y_zero_point's type (a's when omitted)");
  const char *names[] = {"a", "a_scale", "a_zero_point", "b", "b_scale", "b_zero_point",
                         "y_scale", "y_zero_point"};
  for (unsigned i : {1u, 2u, 4u, 5u, 6u, 7u})
    if (auto r = requireOneElement(op, i, names[i]); r.any())
      return r;
  return {};
}

Refusal checkIntegerConvCommon(Operation *op, unsigned x, unsigned w) {
  const char *accepts = "int8 or uint8 x and w";
  if (auto r = requireElement(op, x, isInt8Type, accepts); r.any())
    return r;
  if (auto r = requireElement(op, w, isInt8Type, accepts); r.any())
    return r;
  if (auto r = requireRank(op, x, 3, 8); r.any())
    return r;
  if (hasDynamicDim(op->getOperand(w)))
    return refuse(RejectedKind::Shape, "w has a dynamic dim", "a static w");
  return requireOneOf(op, "auto_pad", "NOTSET", {"NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"});
}

int64_t outChannels(Operation *op, unsigned w) {
  auto t = rankedType(op->getOperand(w));
  return t && t.getRank() >= 1 ? t.getShape()[0] : -1;
}

Refusal checkConvInteger(Operation *op) {
  if (auto r = checkIntegerConvCommon(op, 0, 1); r.any())
    return r;
  if (auto r = requireSameElement(op, 2, op->getOperand(0), "x_zero_point of x's type"); r.any())
    return r;
  if (auto r = requireSameElement(op, 3, op->getOperand(1), "w_zero_point of w's type"); r.any())
    return r;
  if (auto r = requireOneElement(op, 2, "x_zero_point"); r.any())
    return r;
  return requireOneOrPerChannel(op, 3, outChannels(op, 1), "w_zero_point");
}

Refusal checkQLinearConv(Operation *op) {
  if (auto r = checkIntegerConvCommon(op, 0, 3); r.any())
    return r;
  if (auto r = requireF32(op, {1, 4, 6}); r.any())
    return r;
  if (auto r = requireResultElement(op, 0, isInt8Type, "int8 or uint8 y"); r.any())
    return r;
  if (auto r = requireSameElement(op, 2, op->getOperand(0), "x_zero_point of x's type"); r.any())
    return r;
  if (auto r = requireSameElement(op, 5, op->getOperand(3), "w_zero_point of w's type"); r.any())
    return r;
  if (auto r = requireSameElement(op, 7, op->getResult(0), "y_zero_point of y's type"); r.any())
    return r;
  if (isOmitted(op->getOperand(7)) && rankedType(op->getResult(0)).getElementType() !=
                                          rankedType(op->getOperand(0)).getElementType())
    return refuse(RejectedKind::DType, "y's type differs from x's with no y_zero_point",
                  "y of y_zero_point's type (x's when omitted)");
  if (auto r = requireElement(op, 8, [](Type e) { return e.isSignlessInteger(32) || e.isSignedInteger(32); },
                              "an int32 B");
      r.any())
    return r;
  for (auto [i, name] : {std::pair{1u, "x_scale"}, {2u, "x_zero_point"}, {6u, "y_scale"},
                         {7u, "y_zero_point"}})
    if (auto r = requireOneElement(op, i, name); r.any())
      return r;
  int64_t m = outChannels(op, 3);
  if (auto r = requireOneOrPerChannel(op, 4, m, "w_scale"); r.any())
    return r;
  if (auto r = requireOneOrPerChannel(op, 5, m, "w_zero_point"); r.any())
    return r;
  if (op->getNumOperands() > 8 && !isOmitted(op->getOperand(8))) {
    auto b = rankedType(op->getOperand(8));
    if (!b || b.getRank() != 1 || b.getShape()[0] != m)
      return refuse(RejectedKind::Shape, "B is " + typeText(op->getOperand(8).getType()),
                    "B of shape [" + std::to_string(m) + "]");
  }
  return {};
}

/// RNN, GRU, LSTM: fp32 data, int32 sequence_lens, the default activations.
Refusal checkRecurrent(Operation *op, std::initializer_list<const char *> defaults) {
  std::string type = onnxOpTypeAndDomain(op).first;
  bool lstm = type == "LSTM";
  if (auto r = lstm ? requireF32(op, {0, 1, 2, 3, 5, 6, 7}) : requireF32(op, {0, 1, 2, 3, 5});
      r.any())
    return r;
  if (auto r = requireElement(op, 4, [](Type e) { return e.isSignlessInteger(32) || e.isSignedInteger(32); },
                              "int32 sequence_lens");
      r.any())
    return r;
  // W and R of dynamic dims: the kernel takes the hidden size from R and
  // checks W, B and the states against it when it runs.
  for (unsigned i : {1u, 2u})
    if (auto r = requireRank(op, i, 3, 3); r.any())
      return r;
  if (auto r = requireRank(op, 0, 3, 3); r.any())
    return r;
  if (auto r = requireOneOf(op, "direction", "forward", {"forward", "reverse", "bidirectional"});
      r.any())
    return r;
  int64_t layout = intAttr(op, "layout", 0);
  if (layout != 0 && layout != 1)
    return refuse(RejectedKind::Attribute, "layout " + std::to_string(layout), "layout 0 or 1");
  if (lstm && intAttr(op, "input_forget", 0) != 0)
    return refuse(RejectedKind::Attribute, "input_forget 1", "input_forget 0");
  if (auto clip = op->getAttrOfType<FloatAttr>("clip"))
    if (!(clip.getValueAsDouble() > 0))
      return refuse(RejectedKind::Attribute, "clip " + std::to_string(clip.getValueAsDouble()),
                    "a positive clip");
  int directions = strAttr(op, "direction", "forward") == "bidirectional" ? 2 : 1;
  std::string expected;
  for (int d = 0; d < directions; ++d)
    for (const char *a : defaults)
      expected += (expected.empty() ? "" : ", ") + std::string(a);
  if (auto acts = op->getAttrOfType<ArrayAttr>("activations")) {
    std::string given;
    bool same = acts.size() == defaults.size() * directions;
    for (auto [i, a] : llvm::enumerate(acts)) {
      auto s = dyn_cast<StringAttr>(a);
      std::string name = s ? s.str() : "?";
      given += (given.empty() ? "" : ", ") + name;
      if (same && !StringRef(name).equals_insensitive(defaults.begin()[i % defaults.size()]))
        same = false;
    }
    if (!same)
      return refuse(RejectedKind::Attribute, "activations [" + given + "]",
                    "the default activations [" + expected + "]");
  }
  return {};
}

//===----------------------------------------------------------------------===//
// ONNX Attention (OnnxAttention) and RotaryEmbedding: what OnnxAttentionKernels
// checks, on the static dims (the kernels check the dynamic ones when they run).
//===----------------------------------------------------------------------===//

namespace onnx_attention {

std::string elementText(Value v) {
  std::string s;
  auto t = rankedType(v);
  llvm::raw_string_ostream(s) << (t ? t.getElementType() : v.getType());
  return s;
}
Type elementOf(Value v) {
  auto t = rankedType(v);
  return t ? t.getElementType() : Type();
}
bool isComputeFloat(Type e) { return e && (e.isF32() || e.isF16() || e.isBF16()); }
/// Equal, or either dynamic.
bool dimFits(int64_t a, int64_t b) {
  return a == b || ShapedType::isDynamic(a) || ShapedType::isDynamic(b);
}
// Static-dim arithmetic in which a dynamic operand gives a dynamic result:
// what a claim can rule out before the run, the kernel checking the rest.
constexpr int64_t kDyn = ShapedType::kDynamic;
bool isStatic(int64_t d) { return !ShapedType::isDynamic(d); }
int64_t addDims(int64_t a, int64_t b) { return isStatic(a) && isStatic(b) ? a + b : kDyn; }
int64_t mulDims(int64_t a, int64_t b) { return isStatic(a) && isStatic(b) ? a * b : kDyn; }
std::string shapeText(Value v) {
  std::string s;
  llvm::raw_string_ostream(s) << v.getType();
  return s;
}

Refusal checkOnnxAttention(Operation *op) {
  const char *floatTypes = "float32, float16 or bfloat16 (computed in float32)";
  Value Q = op->getOperand(0), K = op->getOperand(1), V = op->getOperand(2);
  Value mask = op->getOperand(3), pastK = op->getOperand(4), pastV = op->getOperand(5);
  Value nonpad = op->getOperand(6);
  Type t1 = elementOf(Q), t2 = elementOf(V);
  if (!isComputeFloat(t1))
    return refuse(RejectedKind::DType, "input 0 (Q) has element type " + elementText(Q),
                  std::string("Q of ") + floatTypes);
  if (!isComputeFloat(t2))
    return refuse(RejectedKind::DType, "input 2 (V) has element type " + elementText(V),
                  std::string("V of ") + floatTypes);
  struct Typed {
    Value v;
    const char *name;
    Type want;
    const char *like;
  };
  for (const Typed &t : {Typed{K, "input 1 (K)", t1, "Q"},
                         {pastK, "input 4 (past_key)", t1, "Q"},
                         {pastV, "input 5 (past_value)", t2, "V"},
                         {op->getResult(0), "output 0 (Y)", t1, "Q"},
                         {op->getResult(1), "output 1 (present_key)", t1, "Q"},
                         {op->getResult(2), "output 2 (present_value)", t2, "V"},
                         {op->getResult(3), "output 3 (qk_matmul_output)", t1, "Q"}})
    if (!isOmitted(t.v) && elementOf(t.v) != t.want)
      return refuse(RejectedKind::DType,
                    std::string(t.name) + " has element type " + elementText(t.v) + ", " + t.like +
                        " has " + elementText(t.like[0] == 'Q' ? Q : V),
                    std::string(t.name) + " of the element type of " + t.like);
  if (!isOmitted(mask) && !elementOf(mask).isSignlessInteger(1) && elementOf(mask) != t1)
    return refuse(RejectedKind::DType, "input 3 (attn_mask) has element type " + elementText(mask),
                  "a bool attn_mask or one of Q's element type");
  if (!isOmitted(nonpad) && !elementOf(nonpad).isSignlessInteger(64))
    return refuse(RejectedKind::DType,
                  "input 6 (nonpad_kv_seqlen) has element type " + elementText(nonpad),
                  "int64 nonpad_kv_seqlen");

  // Attributes.
  int64_t isCausal = intAttr(op, "is_causal", 0), mode = intAttr(op, "qk_matmul_output_mode", 0);
  if (isCausal != 0 && isCausal != 1)
    return refuse(RejectedKind::Attribute, "is_causal " + std::to_string(isCausal),
                  "is_causal 0 or 1");
  if (mode < 0 || mode > 3)
    return refuse(RejectedKind::Attribute, "qk_matmul_output_mode " + std::to_string(mode),
                  "qk_matmul_output_mode 0, 1, 2 or 3");
  for (const char *w : {"left_window_size", "right_window_size"})
    if (intAttr(op, w, -1) < -1)
      return refuse(RejectedKind::Attribute,
                    std::string(w) + " " + std::to_string(intAttr(op, w, -1)),
                    std::string(w) + " >= -1");
  if (auto scale = op->getAttrOfType<FloatAttr>("scale"); scale && !(scale.getValueAsDouble() >= 0))
    return refuse(RejectedKind::Attribute, "scale " + std::to_string(scale.getValueAsDouble()),
                  "scale >= 0 (Q and K are each scaled by its square root)");
  if (op->getAttr("softmax_precision")) {
    int64_t p = intAttr(op, "softmax_precision", 0);
    int64_t own = t1.isF32() ? 1 : t1.isF16() ? 10 : 16;
    if (p != 1 && p != 11 && p != own)
      return refuse(RejectedKind::Attribute, "softmax_precision " + std::to_string(p),
                    "softmax_precision FLOAT (1), DOUBLE (11) or Q's own type (" +
                        std::to_string(own) + "); the kernel computes in float32",
                    "drop softmax_precision");
  }

  // Shapes.
  auto q = rankedType(Q), k = rankedType(K), v = rankedType(V);
  int64_t rank = q.getRank();
  if ((rank != 3 && rank != 4) || k.getRank() != rank || v.getRank() != rank)
    return refuse(RejectedKind::Shape,
                  "Q, K, V are " + shapeText(Q) + ", " + shapeText(K) + ", " + shapeText(V),
                  "Q, K, V all 3-D or all 4-D");
  // A dynamic dim is checked by the kernel when it runs (it refuses inputs
  // that do not fit); the claim refuses only what the static dims rule out.
  auto qs = q.getShape(), ks = k.getShape(), vs = v.getShape();
  int64_t B = qs[0], Hq, Hkv, Sq, Skv, D, Dv;
  auto misfit = [&](const char *accepts) {
    return refuse(RejectedKind::Shape,
                  "Q, K, V are " + shapeText(Q) + ", " + shapeText(K) + ", " + shapeText(V),
                  accepts);
  };
  if (rank == 4) {
    Hq = qs[1], Sq = qs[2], D = qs[3], Hkv = ks[1], Skv = ks[2], Dv = vs[3];
    if (!dimFits(ks[0], B) || !dimFits(vs[0], B) || !dimFits(ks[3], D) || !dimFits(vs[1], Hkv) ||
        !dimFits(vs[2], Skv))
      return misfit("[B,Hq,Sq,D], [B,Hkv,Skv,D], [B,Hkv,Skv,Dv]");
    if ((op->getAttr("q_num_heads") && !dimFits(Hq, intAttr(op, "q_num_heads", 0))) ||
        (op->getAttr("kv_num_heads") && !dimFits(Hkv, intAttr(op, "kv_num_heads", 0))))
      return refuse(RejectedKind::Attribute,
                    "q_num_heads / kv_num_heads disagree with the 4-D Q and K",
                    "4-D inputs without head counts (or with the inputs' own)");
  } else {
    Hq = intAttr(op, "q_num_heads", 0), Hkv = intAttr(op, "kv_num_heads", 0);
    if (Hq <= 0 || Hkv <= 0)
      return refuse(RejectedKind::Attribute, "3-D inputs without q_num_heads and kv_num_heads",
                    "3-D inputs with q_num_heads and kv_num_heads > 0");
    Sq = qs[1], Skv = ks[1];
    if ((isStatic(qs[2]) && qs[2] % Hq) || (isStatic(vs[2]) && vs[2] % Hkv))
      return misfit("hidden sizes that are multiples of q_num_heads / kv_num_heads");
    D = isStatic(qs[2]) ? qs[2] / Hq : kDyn;
    Dv = isStatic(vs[2]) ? vs[2] / Hkv : kDyn;
    if (!dimFits(ks[0], B) || !dimFits(vs[0], B) || !dimFits(vs[1], Skv) ||
        !dimFits(ks[2], mulDims(Hkv, D)))
      return misfit("[B,Sq,Hq*D], [B,Skv,Hkv*D], [B,Skv,Hkv*Dv]");
  }
  if (isStatic(Hq) && isStatic(Hkv) && (Hkv <= 0 || Hq % Hkv))
    return refuse(RejectedKind::Shape,
                  "q heads " + std::to_string(Hq) + ", kv heads " + std::to_string(Hkv),
                  "q heads a multiple of kv heads (MHA, GQA, MQA)");
  if (isOmitted(pastK) != isOmitted(pastV))
    return refuse(RejectedKind::Shape, "only one of past_key and past_value",
                  "past_key and past_value together");
  int64_t P = 0;
  if (!isOmitted(pastK)) {
    if (!isOmitted(nonpad))
      return refuse(RejectedKind::Shape, "nonpad_kv_seqlen with past_key / past_value",
                    "nonpad_kv_seqlen (external cache) or past_key / past_value, not both");
    auto pk = rankedType(pastK), pv = rankedType(pastV);
    if (pk.getRank() != 4 || pv.getRank() != 4 || !dimFits(pk.getShape()[0], B) ||
        !dimFits(pv.getShape()[0], B) || !dimFits(pk.getShape()[1], Hkv) ||
        !dimFits(pv.getShape()[1], Hkv) || !dimFits(pk.getShape()[3], D) ||
        !dimFits(pv.getShape()[3], Dv) || !dimFits(pk.getShape()[2], pv.getShape()[2]))
      return refuse(RejectedKind::Shape,
                    "past_key " + shapeText(pastK) + ", past_value " + shapeText(pastV),
                    "past_key [B,Hkv,P,D] and past_value [B,Hkv,P,Dv]");
    P = pk.getShape()[2];
  }
  if (!isOmitted(nonpad)) {
    auto n = rankedType(nonpad);
    if (n.getRank() != 1 || !dimFits(n.getShape()[0], B))
      return refuse(RejectedKind::Shape, "nonpad_kv_seqlen " + shapeText(nonpad),
                    "nonpad_kv_seqlen of shape [batch]");
  }
  int64_t T = addDims(P, Skv);
  if (!isOmitted(mask)) {
    auto m = rankedType(mask);
    auto ms = m.getShape();
    int64_t M = m.getRank() ? ms.back() : 0;
    // A last dim of 1 could mean broadcast or padding; the kernel refuses
    // one at run time as it does here.
    if (m.getRank() < 1 || m.getRank() > 4 ||
        (isStatic(M) && isStatic(T) && (M > T || (M == 1 && T > 1))))
      return refuse(RejectedKind::Shape, "attn_mask " + shapeText(mask),
                    "attn_mask of rank 1 to 4 whose last dim is between 2 and the total "
                    "sequence length " +
                        std::to_string(T) + " (a last dim of 1 could mean broadcast or padding)");
    int64_t full[3] = {B, Hq, Sq};
    for (int64_t d = m.getRank() - 2, axis = 2; d >= 0; --d, --axis)
      if (ms[d] != 1 && !dimFits(ms[d], full[axis]))
        return refuse(RejectedKind::Shape, "attn_mask " + shapeText(mask),
                      "an attn_mask that broadcasts to [B,Hq,Sq,T] = [" + std::to_string(B) + "," +
                          std::to_string(Hq) + "," + std::to_string(Sq) + "," + std::to_string(T) +
                          "]");
  }
  SmallVector<SmallVector<int64_t>> expect = {rank == 4
                                                  ? SmallVector<int64_t>{B, Hq, Sq, Dv}
                                                  : SmallVector<int64_t>{B, Sq, mulDims(Hq, Dv)},
                                              {B, Hkv, T, D},
                                              {B, Hkv, T, Dv},
                                              {B, Hq, Sq, T}};
  for (unsigned i = 0; i < 4; ++i) {
    Value r = op->getResult(i);
    if (isOmitted(r))
      continue;
    auto t = rankedType(r);
    bool fits = t && t.getRank() == int64_t(expect[i].size());
    for (int64_t d = 0; fits && d < t.getRank(); ++d)
      fits = dimFits(t.getShape()[d], expect[i][d]);
    if (!fits)
      return refuse(RejectedKind::Shape, "output " + std::to_string(i) + " is " + shapeText(r),
                    "the output shapes the inputs imply");
  }
  return {};
}

Refusal checkRotaryEmbedding(Operation *op) {
  Value X = op->getOperand(0), cosC = op->getOperand(1), sinC = op->getOperand(2),
        pos = op->getOperand(3);
  Type t = elementOf(X);
  if (!isComputeFloat(t))
    return refuse(RejectedKind::DType, "input 0 (X) has element type " + elementText(X),
                  "X of float32, float16 or bfloat16 (computed in float32)");
  if (elementOf(cosC) != t || elementOf(sinC) != t || elementOf(op->getResult(0)) != t)
    return refuse(RejectedKind::DType,
                  "cos_cache / sin_cache / output of element types " + elementText(cosC) + " / " +
                      elementText(sinC) + " / " + elementText(op->getResult(0)),
                  "cos_cache, sin_cache and the output of X's element type");
  if (!isOmitted(pos) && !elementOf(pos).isSignlessInteger(64))
    return refuse(RejectedKind::DType,
                  "input 3 (position_ids) has element type " + elementText(pos),
                  "int64 position_ids");
  auto x = rankedType(X);
  int64_t rank = x.getRank(), B = x.getShape()[0], S, Dh;
  if (rank == 4) {
    S = x.getShape()[2], Dh = x.getShape()[3];
  } else if (rank == 3) {
    int64_t H = intAttr(op, "num_heads", 0);
    if (H <= 0 || (isStatic(x.getShape()[2]) && x.getShape()[2] % H))
      return refuse(RejectedKind::Attribute,
                    "3-D X " + shapeText(X) + " with num_heads " + std::to_string(H),
                    "3-D X with num_heads > 0 dividing its last dim");
    S = x.getShape()[1], Dh = isStatic(x.getShape()[2]) ? x.getShape()[2] / H : kDyn;
  } else {
    return refuse(RejectedKind::Shape, "X is " + shapeText(X), "3-D or 4-D X");
  }
  // With a dynamic head size the kernel checks the rotary dim against it.
  int64_t rd = intAttr(op, "rotary_embedding_dim", 0);
  if (rd == 0)
    rd = Dh;
  if (isStatic(rd) && (rd < 0 || (isStatic(Dh) && rd > Dh) || rd % 2))
    return refuse(RejectedKind::Attribute, "rotary_embedding_dim " + std::to_string(rd),
                  "an even rotary_embedding_dim up to the head size " + std::to_string(Dh));
  int64_t half = isStatic(rd) ? rd / 2 : kDyn;
  int64_t interleaved = intAttr(op, "interleaved", 0);
  if (interleaved != 0 && interleaved != 1)
    return refuse(RejectedKind::Attribute, "interleaved " + std::to_string(interleaved),
                  "interleaved 0 or 1");
  // The kernel checks each position id against the caches' run-time rows.
  auto c = rankedType(cosC), s = rankedType(sinC);
  bool fits = c.getRank() == s.getRank();
  for (int64_t d = 0; fits && d < c.getRank(); ++d)
    fits = dimFits(c.getShape()[d], s.getShape()[d]);
  if (!isOmitted(pos)) {
    auto p = rankedType(pos);
    fits = fits && c.getRank() == 2 && dimFits(c.getShape()[1], half) && p.getRank() == 2 &&
           dimFits(p.getShape()[0], B) && dimFits(p.getShape()[1], S);
  } else {
    fits = fits && c.getRank() == 3 && dimFits(c.getShape()[0], B) &&
           dimFits(c.getShape()[1], S) && dimFits(c.getShape()[2], half);
  }
  if (!fits)
    return refuse(RejectedKind::Shape,
                  "cos_cache " + shapeText(cosC) + ", sin_cache " + shapeText(sinC) +
                      (isOmitted(pos) ? std::string() : ", position_ids " + shapeText(pos)),
                  "position_ids [B,S] with caches [max_position, rotary_dim/2], or no "
                  "position_ids and caches [B,S,rotary_dim/2]");
  return {};
}

} // namespace onnx_attention

/// Cast and CastLike (kernels/CastKernels.cpp): any pair of the element types
/// checkTypes lets through for them; the result's type must be the target.
Refusal checkCast(Operation *op) {
  auto in = rankedType(op->getOperand(0));
  auto out = rankedType(op->getResult(0));
  if (!in || !out)
    return refuse(RejectedKind::Shape, "an unranked input or output", "ranked tensors");
  if (op->getName().getStringRef() == "onnx.Cast") {
    auto to = op->getAttrOfType<IntegerAttr>("to");
    Type target = to ? onnx_dialect::elementTypeForOnnxCode(op->getContext(), int(to.getInt()))
                     : Type();
    if (target != out.getElementType())
      return refuse(RejectedKind::Attribute,
                    "to " + (to ? std::to_string(to.getInt()) : std::string("(absent)")) +
                        " with result element type " + typeText(out.getElementType()),
                    "'to' naming the result's element type");
  } else {
    auto like = rankedType(op->getOperand(1));
    if (!like || like.getElementType() != out.getElementType())
      return refuse(RejectedKind::DType,
                    "target_type " + typeText(op->getOperand(1).getType()) + " and result " +
                        typeText(out),
                    "a result of target_type's element type");
  }
  // A dynamic dim against a static one is the kernel's to check at run time
  // (a declared output that refines a symbol).
  bool compatible = in.getRank() == out.getRank();
  for (int64_t d = 0; compatible && d < in.getRank(); ++d)
    compatible = in.isDynamicDim(d) || out.isDynamicDim(d) || in.getDimSize(d) == out.getDimSize(d);
  if (!compatible)
    return refuse(RejectedKind::Shape,
                  "input " + typeText(in) + " and result " + typeText(out) + " differ in shape",
                  "a result of the input's shape");
  int64_t saturate = intAttr(op, "saturate", 1);
  if (saturate != 0 && saturate != 1)
    return refuse(RejectedKind::Attribute, "saturate " + std::to_string(saturate),
                  "saturate 0 or 1");
  return requireOneOf(op, "round_mode", "up", {"up", "down", "nearest"});
}

/// The table below as a map; a key listed twice is a programming error (the
/// second entry would be silently ignored), reported at first use.
std::map<std::string, LibraryOp>
uniqueKeys(std::initializer_list<std::pair<const std::string, LibraryOp>> entries) {
  std::map<std::string, LibraryOp> map;
  for (const auto &entry : entries)
    if (!map.insert(entry).second)
      llvm::report_fatal_error(llvm::Twine("cpu claims: libraryOps lists '") + entry.first +
                               "' twice");
  return map;
}

const std::map<std::string, LibraryOp> &libraryOps() {
  static const std::map<std::string, LibraryOp> ops = uniqueKeys({
      {"MatMul",
       {"MatMul",
        // The kernels read M, K and N from the run-time views and check the
        // output; only a constant B is packed ahead (and is static).
        [](Operation *op) -> Refusal { return requireF32(op, {0, 1}); }}},
      {"Gemm", {"Gemm", [](Operation *op) -> Refusal { return requireF32(op, {0, 1, 2}); }}},
      // Made inside CPU partitions (cpu-fuse-matmul-epilogue), after claims:
      // B as it is or transposed (2-D then), no scale, the activations the
      // GEMM's epilogue has.
      {"matmul_bias",
       {"MatMul",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 2}); r.any())
            return r;
          if (op->getNumOperands() > 3)
            if (auto r = requireF32(op, {3}); r.any())
              return r;
          auto alpha = op->getAttrOfType<FloatAttr>("alpha");
          if (alpha && alpha.getValueAsDouble() != 1.0)
            return refuse(RejectedKind::Attribute, "alpha", "alpha = 1");
          auto transB = op->getAttrOfType<BoolAttr>("trans_b");
          if (transB && transB.getValue())
            if (auto r = requireRank(op, 1, 2, 2); r.any())
              return r;
          auto activation = op->getAttrOfType<StringAttr>("activation");
          StringRef name = activation ? activation.getValue() : "none";
          if (name != "none" && name != "relu" && name != "gelu" && name != "gelu_tanh")
            return refuse(RejectedKind::Attribute, "activation '" + name.str() + "'",
                          "none, relu, gelu, gelu_tanh");
          return Refusal{};
        }}},
      {"Conv", {"Conv", checkConv}},
      // Made inside CPU partitions (cpu-fuse-conv-epilogue), after claims.
      {"fused_conv",
       {"Conv",
        [](Operation *op) -> Refusal {
          if (auto r = checkConv(op); r.any())
            return r;
          return requireF32(op, {3});
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
      // Made inside CPU partitions (cpu-conv-channels-last), after claims.
      {"max_pool",
       {"MaxPoolChannelsLast",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0}); r.any())
            return r;
          return requireRank(op, 0, 4, 4);
        }}},
      // Made inside CPU partitions (cpu-fuse-depthwise-block), after claims.
      {"depthwise_block",
       {"DepthwiseBlock",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 3}); r.any())
            return r;
          return requireRank(op, 0, 4, 4);
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
          // Mean and InvStdDev (type U) come out in float32 only.
          for (unsigned i = 1; i < op->getNumResults() && i < 3; ++i) {
            auto t = rankedType(op->getResult(i));
            if (t && !t.getElementType().isF32())
              return refuse(RejectedKind::DType,
                            "output " + std::to_string(i) + " has element type " +
                                typeText(t.getElementType()),
                            "float32 Mean and InvStdDev");
          }
          if (auto r = requireNoOutputGap(op); r.any())
            return r;
          return requireUnusedResultsAfter(op, 3);
        }}},
      {"check_condition",
       {"CheckCondition",
        [](Operation *op) -> Refusal {
          auto t = rankedType(op->getOperand(0));
          if (!t || !t.hasStaticShape() || t.getNumElements() != 1)
            return refuse(RejectedKind::Shape,
                          "the condition is " + typeText(op->getOperand(0).getType()),
                          "a condition of one element");
          return {};
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
          if (op->hasAttr("sequence_first") && q.getRank() != 4)
            return refuse(RejectedKind::Shape,
                          "sequence_first with rank " + std::to_string(q.getRank()),
                          "sequence_first q, k, v of rank 4");
          return {};
        }}},
      {"Attention", {"OnnxAttention", onnx_attention::checkOnnxAttention}},
      {"RotaryEmbedding", {"RotaryEmbedding", onnx_attention::checkRotaryEmbedding}},
      {"BatchNormalization",
       {"BatchNormalization",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 2, 3, 4}); r.any())
            return r;
          int64_t training = intAttr(op, "training_mode", 0);
          if (training != 0 && training != 1)
            return refuse(RejectedKind::Attribute, "training_mode " + std::to_string(training),
                          "training_mode 0 or 1");
          if (auto r = requireRank(op, 0, 2, 8); r.any())
            return r;
          if (training == 0)
            return requireUnusedResultsAfter(op, 1);
          // training_mode 1 (opset 14+): Y, running_mean, running_var.
          if (auto r = requireNoOutputGap(op); r.any())
            return r;
          return requireUnusedResultsAfter(op, 3);
        }}},
      {"InstanceNormalization",
       {"InstanceNormalization",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 2}); r.any())
            return r;
          return requireRank(op, 0, 3, 8);
        }}},
      {"Transpose", {"Transpose", [](Operation *) { return Refusal(); }}},
      // The data-movement kernels size everything from the run-time views and
      // check their outputs, so dynamic dims may be anywhere, axes included.
      {"Concat", {"Concat", [](Operation *) { return Refusal(); }}},
      {"Split", {"Split", [](Operation *) { return Refusal(); }}},
      {"Slice", {"Slice", [](Operation *) { return Refusal(); }}},
      {"Gather", {"Gather", [](Operation *) { return Refusal(); }}},
      {"Expand", {"Expand", [](Operation *) { return Refusal(); }}},
      {"Tile", {"Tile", [](Operation *) { return Refusal(); }}},
      {"Pad",
       {"Pad",
        [](Operation *op) -> Refusal {
          return requireOneOf(op, "mode", "constant", {"constant", "reflect", "edge", "wrap"});
        }}},
      {"Trilu", {"Trilu", [](Operation *op) { return requireMinRank(op, 0, 2); }}},
      {"CumSum", {"CumSum", [](Operation *op) { return requireArithmetic(op, 0, "input x"); }}},
      {"CumProd", {"CumProd", [](Operation *op) { return requireArithmetic(op, 0, "input x"); }}},
      {"ScatterElements", {"ScatterElements", checkScatter}},
      {"ScatterND", {"ScatterND", checkScatter}},
      {"TensorScatter",
       {"TensorScatter",
        [](Operation *op) -> Refusal {
          if (auto r = requireOneOf(op, "mode", "linear", {"linear", "circular"}); r.any())
            return r;
          if (auto r = requireMinRank(op, 0, 2); r.any())
            return r;
          int64_t rank = rankedType(op->getOperand(0)).getRank();
          int64_t axis = normalizeAxis(intAttr(op, "axis", -2), rank);
          if (axis <= 0 || axis >= rank)
            return refuse(RejectedKind::Attribute,
                          "axis " + std::to_string(intAttr(op, "axis", -2)),
                          "a sequence axis in [1, rank) (not the batch axis 0)");
          return {};
        }}},
      {"GatherElements", {"GatherElements", [](Operation *) { return Refusal(); }}},
      {"GatherND", {"GatherND", [](Operation *) { return Refusal(); }}},
      // K need not be a constant: the result type's static dim fixes it, and
      // the kernel refuses a K that differs.
      {"TopK",
       {"TopK",
        [](Operation *op) -> Refusal {
          return requireArithmetic(op, 0, "input X");
        }}},
      // depth likewise: the result's static dim fixes it; not the batch dim.
      {"OneHot",
       {"OneHot",
        [](Operation *op) -> Refusal {
          if (auto r = requireArithmetic(op, 0, "indices"); r.any())
            return r;
          if (auto r = requireArithmetic(op, 1, "depth"); r.any())
            return r;
          auto out = rankedType(op->getResult(0));
          int64_t axis = normalizeAxis(intAttr(op, "axis", -1), out.getRank());
          if (axis < 0 || axis >= out.getRank() || ShapedType::isDynamic(out.getShape()[axis]))
            return refuse(RejectedKind::Shape, "the depth dim is not a static dim of the result",
                          "a static depth dim");
          return {};
        }}},
      {"ReverseSequence",
       {"ReverseSequence",
        [](Operation *op) -> Refusal {
          if (auto r = requireMinRank(op, 0, 2); r.any())
            return r;
          int64_t b = intAttr(op, "batch_axis", 1), t = intAttr(op, "time_axis", 0);
          if (!((b == 0 && t == 1) || (b == 1 && t == 0)))
            return refuse(RejectedKind::Attribute,
                          "batch_axis " + std::to_string(b) + ", time_axis " + std::to_string(t),
                          "batch_axis and time_axis 0 and 1 in either order");
          return {};
        }}},
      // start, limit and delta need not be constants: the result's static
      // length (checkTypes refuses a dynamic one) fixes the element count, and
      // the kernel refuses inputs that give another.
      {"Range",
       {"Range",
        [](Operation *op) -> Refusal {
          auto t = rankedType(op->getOperand(0));
          Type e = t ? t.getElementType() : Type();
          bool signedInt = isa<IntegerType>(e) && !e.isUnsignedInteger() &&
                           (e.isInteger(16) || e.isInteger(32) || e.isInteger(64));
          if (!t || !(e.isF32() || e.isF64() || e.isF16() || e.isBF16() || signedInt))
            return refuse(RejectedKind::DType,
                          "start has element type " + elementTypeText(op->getOperand(0)),
                          "float32, float64, float16, bfloat16, int16, int32 or int64");
          int64_t stash = intAttr(op, "stash_type", 1);
          if (stash != 1 && stash != 11)
            return refuse(RejectedKind::Attribute, "stash_type " + std::to_string(stash),
                          "stash_type 1 (float32) or 11 (float64)");
          return {};
        }}},
      {"Einsum", {"Einsum", checkEinsum}},
      {"DepthToSpace", {"DepthToSpace", [](Operation *op) { return checkDepthSpace(op, true); }}},
      {"SpaceToDepth", {"SpaceToDepth", [](Operation *op) { return checkDepthSpace(op, false); }}},
      {"Resize", {"Resize", checkResize}},
      {"Shape", {"Shape", [](Operation *) { return Refusal(); }}},
      {"EyeLike", {"EyeLike", [](Operation *op) { return requireRank(op, 0, 2, 2); }}},
      {"HannWindow", {"HannWindow", checkWindow}},
      {"HammingWindow", {"HammingWindow", checkWindow}},
      {"BlackmanWindow", {"BlackmanWindow", checkWindow}},
      {"NonMaxSuppression",
       {"NonMaxSuppression",
        [](Operation *op) -> Refusal {
          return requireF32(op, {0, 1, 3, 4});
        }}},
      // Sized by their data: the kernel reports the count (sizedOutput).
      {"Compress", {"Compress", [](Operation *) { return Refusal(); }}},
      {"NonZero", {"NonZero", [](Operation *) { return Refusal(); }}},
      {"Unique", {"Unique", [](Operation *) { return Refusal(); }}},
      {"ConstantOfShape",
       {"ConstantOfShape",
        [](Operation *op) -> Refusal {
          if (auto value = op->getAttrOfType<ElementsAttr>("value"))
            if (value.getNumElements() != 1 || !value.getElementType().isIntOrFloat() ||
                value.getElementType().getIntOrFloatBitWidth() > 64)
              return refuse(RejectedKind::Attribute, "a value of " +
                                                          std::to_string(value.getNumElements()) +
                                                          " elements or of a type over 64 bits",
                            "a one-element value of a type up to 64 bits");
          return {};
        }}},
      {"Det",
       {"Det",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0}); r.any())
            return r;
          return requireRank(op, 0, 2, 8);
        }}},
      {"DFT",
       {"DFT",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0}); r.any())
            return r;
          return requireStaticShapes(op);
        }}},
      {"STFT",
       {"STFT",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 2}); r.any())
            return r;
          return requireStaticShapes(op);
        }}},
      {"MelWeightMatrix", {"MelWeightMatrix", checkWindow}},
      {"CausalConvWithState",
       {"CausalConvWithState",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 2, 3}); r.any())
            return r;
          return requireOneOf(op, "activation", "none", {"none", "silu", "swish"});
        }}},
      {"LinearAttention",
       {"LinearAttention",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 2, 3, 4, 5}); r.any())
            return r;
          return requireOneOf(op, "update_rule", "gated_delta",
                              {"linear", "gated", "delta", "gated_delta"});
        }}},
      // Only with a run-time shape or axes (isRuntimeShapedView); else views.
      {"Reshape", {"Reshape", [](Operation *) { return Refusal(); }}},
      {"Squeeze", {"Squeeze", [](Operation *) { return Refusal(); }}},
      {"Unsqueeze", {"Unsqueeze", [](Operation *) { return Refusal(); }}},
      {"ReduceMean", {"ReduceMean", checkReduce}},
      {"ReduceSum", {"ReduceSum", checkReduce}},
      {"ReduceMax", {"ReduceMax", checkReduce}},
      {"ReduceMin", {"ReduceMin", checkReduce}},
      {"ReduceProd", {"ReduceProd", checkReduce}},
      {"ReduceL2", {"ReduceL2", checkReduce}},
      {"ReduceSumSquare", {"ReduceSumSquare", checkReduce}},
      {"ReduceL1", {"ReduceL1", checkReduce}},
      {"ReduceLogSumExp", {"ReduceLogSumExp", checkReduce}},
      {"ReduceLogSum", {"ReduceLogSum", checkReduce}},
      {"NegativeLogLikelihoodLoss",
       {"NegativeLogLikelihoodLoss",
        [](Operation *op) -> Refusal {
          if (auto r = checkLoss(op); r.any())
            return r;
          return requireUnusedResultsAfter(op, 1);
        }}},
      {"SoftmaxCrossEntropyLoss", {"SoftmaxCrossEntropyLoss", checkLoss}},
      {"RMSNormalization", {"RMSNormalization", checkRmsNormalization}},
      {"GroupNormalization", {"GroupNormalization", checkGroupNormalization}},
      {"MeanVarianceNormalization",
       {"MeanVarianceNormalization", checkMeanVarianceNormalization}},
      {"Hardmax", {"Hardmax", checkAlongAxis}},
      {"LpNormalization",
       {"LpNormalization",
        [](Operation *op) -> Refusal {
          if (auto r = checkAlongAxis(op); r.any())
            return r;
          int64_t p = intAttr(op, "p", 2);
          if (p != 1 && p != 2)
            return refuse(RejectedKind::Attribute, "p " + std::to_string(p), "p 1 or 2");
          return {};
        }}},
      {"LRN",
       {"LRN",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0}); r.any())
            return r;
          if (auto r = requireMinRank(op, 0, 2, "X [N, C, D1..Dn]"); r.any())
            return r;
          if (intAttr(op, "size", 0) < 1)
            return refuse(RejectedKind::Attribute, "size " + std::to_string(intAttr(op, "size", 0)),
                          "size >= 1");
          return {};
        }}},
      {"ArgMax", {"ArgMax", [](Operation *op) { return requireF32(op, {0}); }}},
      {"ArgMin", {"ArgMin", [](Operation *op) { return requireF32(op, {0}); }}},
      {"QuantizeLinear", {"QuantizeLinear", checkQuantizeLinear}},
      {"DequantizeLinear", {"DequantizeLinear", checkDequantizeLinear}},
      {"DynamicQuantizeLinear", {"DynamicQuantizeLinear", checkDynamicQuantizeLinear}},
      {"MatMulInteger", {"MatMulInteger", checkMatMulInteger}},
      {"QLinearMatMul", {"QLinearMatMul", checkQLinearMatMul}},
      {"ConvInteger", {"ConvInteger", checkConvInteger}},
      {"QLinearConv", {"QLinearConv", checkQLinearConv}},
      {"RNN", {"RNN", [](Operation *op) { return checkRecurrent(op, {"Tanh"}); }}},
      {"GRU", {"GRU", [](Operation *op) { return checkRecurrent(op, {"Sigmoid", "Tanh"}); }}},
      {"LSTM",
       {"LSTM", [](Operation *op) { return checkRecurrent(op, {"Sigmoid", "Tanh", "Tanh"}); }}},
      {"Cast", {"Cast", checkCast}},
      {"CastLike", {"Cast", checkCast}},
  });
  return ops;
}

/// Ops that only reinterpret their input's bytes.
const llvm::StringSet<> &viewOps() {
  static const llvm::StringSet<> ops = {"Reshape", "Flatten", "Squeeze", "Unsqueeze", "Identity",
                                        "Dropout"};
  return ops;
}

/// A Reshape, Squeeze or Unsqueeze whose shape or axes input is not a
/// constant: it runs as a library step that derives the shape at run time.
bool isRuntimeShapedView(Operation *op, const std::string &type) {
  if (type != "Reshape" && type != "Squeeze" && type != "Unsqueeze")
    return false;
  return op->getNumOperands() > 1 && !isOmitted(op->getOperand(1)) &&
         !getConstantIntValues(op->getOperand(1));
}

} // namespace

std::optional<SmallVector<int32_t>> squeezedDynamicDims(Operation *op,
                                                        const SymbolicShapes &shapes) {
  if (onnxOpTypeAndDomain(op).first != "Squeeze" || op->getNumOperands() < 2 ||
      isOmitted(op->getOperand(1)))
    return std::nullopt;
  auto axes = getConstantIntValues(op->getOperand(1));
  const SmallVector<int32_t> *in = shapes.dims(op->getOperand(0));
  const SmallVector<int32_t> *out = shapes.dims(op->getResult(0));
  if (!axes || !in || !out)
    return std::nullopt;
  int64_t rank = int64_t(in->size());
  SmallVector<bool> removed(in->size(), false);
  for (int64_t axis : *axes) {
    if (axis < -rank || axis >= rank)
      return std::nullopt;
    removed[size_t(axis < 0 ? axis + rank : axis)] = true;
  }
  SmallVector<int32_t> kept, squeezed;
  for (size_t d = 0; d < in->size(); ++d)
    (removed[d] ? squeezed : kept).push_back((*in)[d]);
  if (kept != *out)
    return std::nullopt;
  SmallVector<int32_t> dynamic;
  for (int32_t d : squeezed)
    if (shapes.table().constantValue(d) != std::optional<int64_t>(1))
      dynamic.push_back(d);
  return dynamic;
}

namespace {

Refusal checkView(Operation *op, const std::string &type, const SymbolicShapes &shapes) {
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
  // The view's bytes are its input's: the element counts must be equal.
  // Where the algebra cannot prove it (equal expressions share an id), the
  // plan checks them at run time (viewElementCountCheck).
  int32_t count = shapes.numElements(op->getOperand(0));
  // A Squeeze of dims the compiler cannot prove 1: the plan checks them.
  if (auto squeezed = squeezedDynamicDims(op, shapes); squeezed && !squeezed->empty())
    return {};
  if (!in || !out || count == kUnknownDim || shapes.numElements(op->getResult(0)) == kUnknownDim)
    return refuse(RejectedKind::Shape,
                  "the element count of " + shapes.print(op->getResult(0)) +
                      " has no expression (the input's is " + shapes.print(op->getOperand(0)) + ")",
                  "views whose element counts follow from the inputs' dims");
  return {};
}

std::string typeText(Type type) {
  std::string s;
  llvm::raw_string_ostream(s) << type;
  return s;
}

/// The narrow element types: the 8-bit floats, float4e2m1 and the 2- and
/// 4-bit integers (packed in the runtime). Only the ops of narrowTypeOps take
/// them; their kernels' checks say which.
bool isNarrowType(Type e) {
  return isa<Float8E4M3FNType, Float8E4M3FNUZType, Float8E5M2Type, Float8E5M2FNUZType,
             Float8E8M0FNUType, Float4E2M1FNType>(e) ||
         e.isInteger(4) || e.isInteger(2);
}
const llvm::StringSet<> &narrowTypeOps() {
  static const llvm::StringSet<> ops = {"Cast", "CastLike"};
  return ops;
}

/// A sequence or optional the CPU EP keeps: of whole-byte numeric or bool
/// tensors (at a partition's boundary too: the session passes them between
/// host partitions and to and from the caller).
Refusal checkContainer(Operation *op, Value v, const std::string &what) {
  std::string text = typeText(v.getType());
  if (!containerKindOf(v.getType()))
    return refuse(RejectedKind::DType, what + " is " + text,
                  "tensors, sequences of tensors, and optionals of either (not maps or "
                  "sequences of sequences)");
  Type e = containerElementType(v.getType()).getElementType();
  if (!(e.isF32() || e.isF64() || e.isF16() || e.isBF16() || e.isInteger(1) || e.isInteger(8) ||
        e.isInteger(16) || e.isInteger(32) || e.isInteger(64)))
    return refuse(RejectedKind::DType, what + " is " + text,
                  "sequences and optionals of numeric or bool tensors");
  (void)op;
  return {};
}

/// The rules every claimed node meets, whatever its class.
Refusal checkTypes(Operation *op, const SymbolicShapes &shapes) {
  bool takesNarrow = narrowTypeOps().contains(onnxOpTypeAndDomain(op).first);
  CpuOpClass opClass = classifyCpuOp(op);
  bool takesContainers = opClass == CpuOpClass::Sequence || opClass == CpuOpClass::ControlFlow;
  auto checkValue = [&](Value v, const std::string &what) -> Refusal {
    if (isa<NoneType>(v.getType()))
      return {};
    if (takesContainers && !isa<TensorType>(v.getType()) &&
        !isa<onnx_dialect::UnknownType>(v.getType()))
      return checkContainer(op, v, what);
    auto t = rankedType(v);
    if (!t) {
      // No rank (or no type at all) is a shape the compiler could not infer,
      // not an element type the EP refuses.
      std::string text = typeText(v.getType());
      bool unranked = isa<UnrankedTensorType>(v.getType());
      if (unranked || text == "!onnx.unknown")
        return refuse(RejectedKind::Shape,
                      what + (unranked ? " has no inferred rank (" : " has no inferred type (") +
                          text + ")",
                      "ranked tensors with static dims (a leading batch dim may be dynamic)",
                      "declare the graph's input shapes; shape inference could not follow the "
                      "ops that compute this value");
      return refuse(RejectedKind::DType, what + " is " + text,
                    "tensors (not sequences, optionals or maps)");
    }
    Type e = t.getElementType();
    if (isNarrowType(e) && !takesNarrow) {
      std::vector<std::string> names;
      for (const auto &entry : narrowTypeOps())
        names.push_back(entry.getKey().str());
      llvm::sort(names);
      return refuse(RejectedKind::DType, what + " has element type " + typeText(e),
                    "numeric and bool tensors (float8, float4 and 2- and 4-bit integers only in " +
                        llvm::join(names, ", ") + ")");
    }
    if (!(e.isF32() || e.isF64() || e.isF16() || e.isBF16() || e.isInteger(1) ||
          e.isInteger(8) || e.isInteger(16) || e.isInteger(32) || e.isInteger(64) ||
          isNarrowType(e)))
      return refuse(RejectedKind::DType, what + " has element type " + typeText(e),
                    "numeric and bool tensors");
    const SmallVector<int32_t> *dims = shapes.dims(v);
    for (auto [i, d] : llvm::enumerate(t.getShape())) {
      if (!ShapedType::isDynamic(d))
        continue;
      if (!dims || (*dims)[i] == kUnknownDim)
        return refuse(RejectedKind::Shape,
                      what + " dim " + std::to_string(i) + " of " + typeText(t) +
                          " has a size ortc cannot compute before the run",
                      "dynamic dims that follow from the graph inputs' dims",
                      "declare the shape, or feed the ops that compute it constants");
    }
    return {};
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (auto r = checkValue(v, "input " + std::to_string(i)); r.any())
      return r;
  for (auto [i, v] : llvm::enumerate(op->getResults()))
    if (auto r = checkValue(v, "output " + std::to_string(i)); r.any())
      return r;
  // A generated kernel reads a dynamic input dim as the output's own; where
  // the two expressions differ, the plan checks them equal at run time
  // (CpuCompileEp's addBroadcastChecks), or, for ops whose dims do not line
  // up so, the claim refuses.
  if (classifyCpuOp(op) == CpuOpClass::Elementwise && !readsInputDimsAsOutputs(op) &&
      op->getNumResults() == 1) {
    const SmallVector<int32_t> *out = shapes.dims(op->getResult(0));
    for (auto [i, v] : llvm::enumerate(op->getOperands())) {
      auto t = rankedType(v);
      const SmallVector<int32_t> *in = shapes.dims(v);
      if (!t || !in || !out || in->size() > out->size())
        continue;
      size_t offset = out->size() - in->size();
      for (size_t d = 0; d < in->size(); ++d)
        if (t.isDynamicDim(int64_t(d)) && (*in)[d] != (*out)[offset + d])
          return refuse(RejectedKind::Shape,
                        "input " + std::to_string(i) + " dim " + std::to_string(d) + " (" +
                            shapes.print((*in)[d]) + ") may differ from the output's (" +
                            shapes.print((*out)[offset + d]) + ")",
                        "dynamic input dims equal to the output's");
    }
  }
  return {};
}

/// The ONNX op types the CPU EP claims in some form, sorted, comma separated.
const std::string &cpuOpTypeList() {
  static const std::string list = [] {
    std::set<std::string> types;
    for (const std::string &name : elementwiseOpNames())
      if (StringRef(name).starts_with("onnx."))
        types.insert(name.substr(5));
    for (const auto &entry : libraryOps())
      if (!entry.first.empty() && std::isupper(static_cast<unsigned char>(entry.first[0])))
        types.insert(entry.first);
    for (const auto &entry : viewOps())
      types.insert(entry.getKey().str());
    types.insert("If");
    types.insert("Loop");
    types.insert("Scan");
    std::string text;
    for (const std::string &t : types)
      text += (text.empty() ? "" : ", ") + t;
    return text;
  }();
  return list;
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

/// The sequence and optional ops the executor runs (SequenceSteps.cpp).
const llvm::StringSet<> &sequenceOps() {
  static const llvm::StringSet<> ops = {
      "SequenceEmpty",   "SequenceConstruct",  "SequenceInsert", "SequenceErase",
      "SequenceAt",      "SequenceLength",     "SplitToSequence", "ConcatFromSequence",
      "Optional",        "OptionalHasElement", "OptionalGetElement"};
  return ops;
}

/// Ops the library runs better than a generated kernel would, though both
/// could: float32 Softmax and LogSoftmax over the last axis (contiguous rows:
/// a vector exp and the rows shared out over the pool).
static bool prefersLibraryKernel(Operation *op) {
  std::string type = onnxOpTypeAndDomain(op).first;
  if (type != "Softmax" && type != "LogSoftmax")
    return false;
  auto x = rankedType(op->getOperand(0));
  if (!x || !x.getElementType().isF32() || x.getRank() < 1)
    return false;
  int64_t axis = intAttr(op, "axis", -1);
  return axis == -1 || axis == x.getRank() - 1;
}

CpuOpClass classifyCpuOp(Operation *op) {
  if (isLowerableElementwiseOp(op))
    return CpuOpClass::Elementwise;
  if (prefersLibraryKernel(op))
    return CpuOpClass::Library;
  if (isLowerableStructuredOp(op))
    return CpuOpClass::Structured;
  std::string type = onnxOpTypeAndDomain(op).first;
  if (op->getName().getStringRef() == "onnx.Generic")
    return CpuOpClass::Unsupported;
  if (sequenceOps().contains(type) ||
      (type == "Identity" && op->getNumOperands() == 1 &&
       !isa<TensorType>(op->getOperand(0).getType())))
    return CpuOpClass::Sequence;
  if (viewOps().contains(type))
    return isRuntimeShapedView(op, type) ? CpuOpClass::Library : CpuOpClass::View;
  if (libraryOps().count(type))
    return CpuOpClass::Library;
  if (type == "If" || type == "Loop" || type == "Scan")
    return CpuOpClass::ControlFlow;
  return CpuOpClass::Unsupported;
}

namespace {
/// The first node of `region` the CPU EP declines, as a refusal naming it.
Refusal checkRegion(Region &region, const char *name, const SymbolicShapes &shapes,
                    const std::string &epName) {
  for (Operation &nested : region.getOps()) {
    if (nested.hasTrait<OpTrait::IsTerminator>() || isFreeOnnxOp(&nested))
      continue;
    NodeQuery inner = NodeQuery::fromOp(&nested);
    inner.shapes = &shapes;
    KernelMatch match = matchCpuOp(inner, epName);
    if (match.isSupported())
      continue;
    const DeclineReason &why = match.reason();
    return refuse(why.kind,
                  std::string(name) + " node '" + why.node + "' (" + why.op + "): " + why.rejected,
                  "control flow whose bodies the CPU EP runs whole; there: " + why.accepts,
                  why.remediation);
  }
  return {};
}

/// The branches of an If yield each result in one rank.
Refusal checkBranchRanks(onnx_dialect::IfOp op) {
  if (!op.getThenBranch().hasOneBlock() || !op.getElseBranch().hasOneBlock())
    return {};
  Operation *a = op.getThenBranch().front().getTerminator();
  Operation *b = op.getElseBranch().front().getTerminator();
  for (unsigned i = 0; i < a->getNumOperands() && i < b->getNumOperands(); ++i) {
    auto ta = rankedType(a->getOperand(i)), tb = rankedType(b->getOperand(i));
    if (ta && tb && ta.getRank() != tb.getRank())
      return refuse(RejectedKind::Shape,
                    "output " + std::to_string(i) + " is rank " + std::to_string(ta.getRank()) +
                        " from the then_branch, rank " + std::to_string(tb.getRank()) +
                        " from the else_branch",
                    "an If whose branches agree in rank, or one whose other branch the rest of "
                    "the graph rules out (onnx-specialize-branches)",
                    "make both branches give one rank, or let what follows the If need one");
  }
  return {};
}

/// A one-element tensor (an If's or Loop's condition, a trip count), or an
/// omitted one when `optional`.
Refusal requireScalar(Value v, const char *what, bool optional) {
  if (optional && isOmitted(v))
    return {};
  auto t = rankedType(v);
  if (!t || !t.hasStaticShape() || t.getNumElements() != 1)
    return refuse(RejectedKind::Shape, std::string(what) + " is " + typeText(v.getType()),
                  std::string(what) + " of one element");
  return {};
}

/// If and Loop run their bodies as sub-plans: claimed when the CPU EP
/// claims every node of every body (nested ones too); the first node it
/// declines is named.
Refusal checkControlFlow(Operation *op, const SymbolicShapes &shapes, const std::string &epName) {
  if (auto ifOp = dyn_cast<onnx_dialect::IfOp>(op)) {
    if (auto r = requireScalar(ifOp.getCond(), "the condition", false); r.any())
      return r;
    if (auto r = checkRegion(ifOp.getThenBranch(), "then_branch", shapes, epName); r.any())
      return r;
    return checkRegion(ifOp.getElseBranch(), "else_branch", shapes, epName);
  }
  if (auto scan = dyn_cast<onnx_dialect::ScanOp>(op)) {
    int64_t numScan = scan.getNumScanInputs();
    size_t operands = scan.getInitialStateAndScanInputs().size();
    if (numScan < 1 || uint64_t(numScan) > operands)
      return refuse(RejectedKind::Attribute,
                    "num_scan_inputs " + std::to_string(numScan) + " of " +
                        std::to_string(operands) + " inputs",
                    "a Scan with at least one scan input");
    for (BlockArgument arg : scan.getBody().front().getArguments())
      if (!rankedType(arg))
        return refuse(RejectedKind::Shape,
                      "body input " + std::to_string(arg.getArgNumber()) + " is " +
                          typeText(arg.getType()),
                      "a Scan whose body takes ranked tensors");
    return checkRegion(scan.getBody(), "body", shapes, epName);
  }
  auto loop = cast<onnx_dialect::LoopOp>(op);
  if (auto r = requireScalar(loop.getM(), "the trip count M", true); r.any())
    return r;
  if (auto r = requireScalar(loop.getCond(), "the condition", true); r.any())
    return r;
  Block &body = loop.getBody().front();
  for (BlockArgument arg : body.getArguments())
    if (!rankedType(arg) &&
        !(arg.getArgNumber() >= 2 && containerKindOf(arg.getType()) &&
          *containerKindOf(arg.getType()) != ContainerKind::None))
      return refuse(RejectedKind::Shape,
                    "body input " + std::to_string(arg.getArgNumber()) + " is " +
                        typeText(arg.getType()),
                    "a Loop whose body takes ranked tensors (and carries sequences or optionals)");
  // Scan outputs are stacked tensors (ONNX allows nothing else).
  for (unsigned k = unsigned(loop.getVInitial().size()); k < op->getNumResults(); ++k)
    if (!isa<TensorType>(op->getResult(k).getType()))
      return refuse(RejectedKind::DType,
                    "scan output " + std::to_string(k - loop.getVInitial().size()) + " is " +
                        typeText(op->getResult(k).getType()),
                    "a Loop whose scan outputs are tensors");
  return checkRegion(loop.getBody(), "body", shapes, epName);
}
} // namespace


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
  if (op->getName().getStringRef() == "onnx.Generic") {
    // The importer types an op from the oldest opset with the schema it
    // follows; older versions (and ops it has no schema for) stay generic.
    std::string schemaDomain = query.domain == "ai.onnx" ? "" : query.domain;
    const auto *schema = onnx_dialect::lookupOnnxSchema(schemaDomain, query.opType);
    std::string name = query.domain + "::" + query.opType;
    if (schema)
      return decline(refuse(RejectedKind::Opset,
                            "opset " + std::to_string(query.opset) + " of " + name +
                                " (imported untyped, as onnx.Generic)",
                            name + " from opset " + std::to_string(schema->compatibleSince),
                            "re-export the model with opset " +
                                std::to_string(schema->compatibleSince) + " or newer"));
    return decline(refuse(RejectedKind::Opset,
                          name + " (no typed schema; imported as onnx.Generic)",
                          "ops with a typed schema in ortc's onnx dialect"));
  }
  if (query.domain != "ai.onnx" && query.domain != "ortc")
    return decline(refuse(RejectedKind::Domain, "domain " + query.domain, "ai.onnx and ortc ops"));
  // The partitioner analyses the graph once; a caller without it (a test)
  // gets the op's function analysed here.
  std::unique_ptr<SymbolicShapes> ownShapes;
  const SymbolicShapes *shapes = query.shapes;
  if (!shapes) {
    ownShapes = std::make_unique<SymbolicShapes>(op->getParentOfType<func::FuncOp>());
    shapes = ownShapes.get();
  }
  // An If whose branches disagree in rank has an unranked result; say so.
  if (auto ifOp = dyn_cast<onnx_dialect::IfOp>(op))
    if (auto r = checkBranchRanks(ifOp); r.any())
      return decline(r);
  if (auto r = checkTypes(op, *shapes); r.any())
    return decline(r);

  const std::string &type = query.opType;
  switch (classifyCpuOp(op)) {
  case CpuOpClass::Elementwise:
  case CpuOpClass::Structured:
    return KernelMatch::supported(estimateCost(op, type));
  case CpuOpClass::View:
    if (auto r = checkView(op, type, *shapes); r.any())
      return decline(r);
    return KernelMatch::supported(KernelCost{});
  case CpuOpClass::Library:
    if (auto r = libraryOps().at(type).check(op); r.any())
      return decline(r);
    return KernelMatch::supported(estimateCost(op, type));
  case CpuOpClass::ControlFlow:
    if (auto r = checkControlFlow(op, *shapes, epName); r.any())
      return decline(r);
    return KernelMatch::supported(KernelCost{});
  case CpuOpClass::Sequence:
    return KernelMatch::supported(estimateCost(op, type));
  case CpuOpClass::Unsupported:
    break;
  }
  // An elementwise op with types, shapes or attributes the lowering refuses.
  if (ElementwiseRefusal r; explainElementwiseRefusal(op, r)) {
    RejectedKind kind = r.kind == ElementwiseRefusalKind::DType       ? RejectedKind::DType
                        : r.kind == ElementwiseRefusalKind::Shape     ? RejectedKind::Shape
                        : r.kind == ElementwiseRefusalKind::Attribute ? RejectedKind::Attribute
                                                                      : RejectedKind::OpType;
    return decline(refuse(kind, r.rejected, r.accepts));
  }
  return decline(refuse(RejectedKind::OpType,
                        "no CPU kernel or lowering for " + query.domain + "::" + type,
                        "the op types the CPU EP runs: " + cpuOpTypeList()));
}

} // namespace ortc::cpu
