//===- CpuClaims.cpp - what the CPU EP runs, and how ----------------------===//
//
// The library kernels' accepted inputs and attributes are listed in
// providers/cpu/kernels/README.md; the checks here follow that table.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/CpuClaims.h"

#include "compiler/Transforms/ConstantValues.h"
#include "providers/cpu/compile/LowerToLinalg.h"
#include "providers/cpu/kernels/Einsum.h"

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

/// An input that decides an output's shape: a compile-time constant, or a
/// run-time value when the input and every result are statically shaped anyway
/// (the model declares them). The kernel computes the shape from the run-time
/// value and refuses a mismatch with the planned output, so nothing is guessed.
Refusal requireConstantOrStaticShapes(Operation *op, unsigned operand, const char *what) {
  if (operand >= op->getNumOperands() || isOmitted(op->getOperand(operand)) ||
      getConstantIntValues(op->getOperand(operand)))
    return {};
  auto in = rankedType(op->getOperand(0));
  bool staticShapes = in && in.hasStaticShape();
  for (Value r : op->getResults())
    if (!isa<NoneType>(r.getType()))
      staticShapes &= rankedType(r) && rankedType(r).hasStaticShape();
  if (staticShapes)
    return {};
  return refuse(RejectedKind::Attribute,
                std::string(what) + " is not a constant and the output shape is not static",
                std::string(what) + " known at compile time, or static input and output shapes",
                "give the model static shapes or make " + std::string(what) + " an initializer");
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

/// Bytes one element takes in a buffer (bool: one byte).
int64_t storageBytes(Type t) { return t.isInteger(1) ? 1 : t.getIntOrFloatBitWidth() / 8; }

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
  if (op->getName().getStringRef() == "onnx.AveragePool")
    if (auto dilations = op->getAttrOfType<DenseI64ArrayAttr>("dilations"))
      if (llvm::any_of(dilations.asArrayRef(), [](int64_t d) { return d != 1; }))
        return refuse(RejectedKind::Attribute, "dilations other than 1",
                      "AveragePool without dilation");
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
  // An axes input of static shape [0] is known to be empty without being a
  // constant: the kernel reads no values from it.
  if (op->getNumOperands() > 1 && !isOmitted(op->getOperand(1)))
    if (auto t = rankedType(op->getOperand(1)); t && t.hasStaticShape() && t.getNumElements() == 0)
      return {};
  return requireConstantOrStaticShapes(op, 1, "axes");
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

Refusal requireMinRank(Operation *op, unsigned operand, int64_t minRank, const char *form) {
  auto t = rankedType(op->getOperand(operand));
  if (t && t.getRank() >= minRank)
    return {};
  return refuse(RejectedKind::Shape,
                "input " + std::to_string(operand) + " has rank " +
                    (t ? std::to_string(t.getRank()) : std::string("?")),
                "rank >= " + std::to_string(minRank) + " (" + form + ")");
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

Refusal requireMinRank(Operation *op, unsigned operand, int64_t minRank) {
  auto t = rankedType(op->getOperand(operand));
  if (t && t.getRank() >= minRank)
    return {};
  return refuse(RejectedKind::Shape,
                "input " + std::to_string(operand) + " has rank " +
                    (t ? std::to_string(t.getRank()) : std::string("?")),
                "rank " + std::to_string(minRank) + " or more");
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
          if (auto r = checkPool(op); r.any())
            return r;
          if (intAttr(op, "storage_order", 0) != 0)
            return refuse(RejectedKind::Attribute, "storage_order 1", "storage_order 0");
          return requireUnusedResultsAfter(op, 1);
        }}},
      {"AveragePool", {"AveragePool", checkPool}},
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
      {"layer_norm",
       {"LayerNormalization", [](Operation *op) { return requireF32(op, {0, 1, 2}); }}},
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
      {"Expand",
       {"Expand", [](Operation *op) { return requireConstantOrStaticShapes(op, 1, "shape"); }}},
      {"Tile",
       {"Tile",
        [](Operation *op) -> Refusal {
          if (auto r = requireConstantOrStaticShapes(op, 1, "repeats"); r.any())
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
          if (auto r = requireOneOf(op, "mode", "constant",
                                    {"constant", "reflect", "edge", "wrap"});
              r.any())
            return r;
          if (auto r = requireConstantOrStaticShapes(op, 1, "pads"); r.any())
            return r;
          if (auto r = requireConstantOrStaticShapes(op, 3, "axes"); r.any())
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
      {"Resize",
       {"Resize",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0}); r.any())
            return r;
          if (auto r = requireOneOf(op, "mode", "nearest", {"nearest"}); r.any())
            return r;
          if (auto r = requireOneOf(op, "coordinate_transformation_mode", "half_pixel",
                                    {"half_pixel", "asymmetric", "align_corners",
                                     "pytorch_half_pixel", "tf_half_pixel_for_nn"});
              r.any())
            return r;
          if (auto r = requireOneOf(op, "nearest_mode", "round_prefer_floor",
                                    {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"});
              r.any())
            return r;
          if (intAttr(op, "antialias", 0) != 0)
            return refuse(RejectedKind::Attribute, "antialias 1", "antialias 0");
          if (op->getAttr("axes"))
            return refuse(RejectedKind::Attribute, "the axes attribute", "scales over all axes");
          if (auto r = requireOneOf(op, "keep_aspect_ratio_policy", "stretch", {"stretch"});
              r.any())
            return r;
          return {};
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
          if (auto r = requireArithmetic(op, 0, "input X"); r.any())
            return r;
          return requireAxisNotBatch(op, op->getOperand(0), intAttr(op, "axis", -1), "top-k");
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
      {"Shape", {"Shape", [](Operation *) { return Refusal(); }}},
      {"BitCast",
       {"BitCast",
        [](Operation *op) -> Refusal {
          auto in = rankedType(op->getOperand(0)), out = rankedType(op->getResult(0));
          if (in && out && storageBytes(in.getElementType()) == storageBytes(out.getElementType()))
            return {};
          return refuse(RejectedKind::DType, "input and output element sizes differ",
                        "element types of one size");
        }}},
      {"EyeLike", {"EyeLike", [](Operation *op) { return requireRank(op, 0, 2, 2); }}},
      {"HannWindow", {"HannWindow", checkWindow}},
      {"HammingWindow", {"HammingWindow", checkWindow}},
      {"BlackmanWindow", {"BlackmanWindow", checkWindow}},
      {"NonMaxSuppression",
       {"NonMaxSuppression",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0, 1, 3, 4}); r.any())
            return r;
          return requireStaticShapes(op);
        }}},
      {"Compress", {"Compress", requireStaticShapes}},
      {"NonZero", {"NonZero", requireStaticShapes}},
      {"Det",
       {"Det",
        [](Operation *op) -> Refusal {
          if (auto r = requireF32(op, {0}); r.any())
            return r;
          return requireRank(op, 0, 2, 8);
        }}},
      {"SwiGLU", {"SwiGLU", [](Operation *op) { return requireF32(op, {0, 1}); }}},
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
      {"Reshape", {"Reshape", [](Operation *op) {
         return requireConstantOrStaticShapes(op, 1, "the target shape");
       }}},
      {"Squeeze", {"Squeeze", [](Operation *op) {
         return requireConstantOrStaticShapes(op, 1, "axes");
       }}},
      {"Unsqueeze", {"Unsqueeze", [](Operation *op) {
         return requireConstantOrStaticShapes(op, 1, "axes");
       }}},
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
  };
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

Refusal checkView(Operation *op, const std::string &type) {
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
    return isRuntimeShapedView(op, type) ? CpuOpClass::Library : CpuOpClass::View;
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
