//===- LowerToLinalg.cpp - onnx-lower-to-linalg ---------------------------===//
//
// No argument list here creates two ops: C++ leaves the order of arguments
// to the compiler (GCC and clang differ), and the IR should not.
//
// onnx/ortc elementwise ops to linalg.generic on tensors, and the predicate
// the EPs that generate kernels claim with (LowerToLinalg.h). One table, kRules, says which op
// is which kind and which element types it takes; the predicate and the
// lowering both read it, so they cannot disagree.
//
// Broadcasting: the result's shape is the iteration space. An input of rank
// r aligns with the result's last r dims; its map reads d_p for a dim that
// matches and the constant 0 for a size-1 dim that broadcasts. A `?` result
// dim takes its size from `tensor.dim` of an input with `?` at the same
// position (the kernels' `?` is one batch value, so `?` never broadcasts).
//
// Unsigned (ui8..ui64) values: arith works on signless integers, so a body
// converts unsigned block arguments to signless with
// builtin.unrealized_conversion_cast and back for an unsigned result; the
// casts cancel in the LLVM conversion. Such generics are not vectorized
// (cpu-tile-and-vectorize lowers them to loops). Compares, Div, Mod, Max,
// Min and shifts pick the unsigned arith ops by the ONNX type.
//
// f16 and bf16 compute in f32: a body bitcasts the block argument to i16,
// widens it with integer code (exact) and rounds the f32 result back to
// nearest even with integer code (widenHalf, narrowHalf); Where and a Cast
// to the same type move the bits.
//
// Structured ops (isLowerableStructuredOp, f32): Transpose becomes
// linalg.transpose; Reduce{Sum,Mean,Max,Min} a linalg.fill (0, -inf, +inf)
// and a linalg.generic with reduction iterators into a tensor without the
// reduced dims (Mean: then a divide by the count, which includes the run-time
// batch when it is reduced; keepdims: then tensor.expand_shape); Softmax and
// LogSoftmax (opset 13, one axis) the max over the axis, exp(x - max) and its
// sum, and the divide (LogSoftmax: x - max - log(sum)), the per-row values
// broadcast back by their indexing maps. They are lowered first, while a
// Reduce op's axes are still an onnx.Constant. cpu-tile-and-vectorize
// vectorizes the all-parallel generics among them and leaves the transpose,
// the fills and the reductions as scalar loops.
//
//===----------------------------------------------------------------------===//

#include "compiler/Lowering/LowerToLinalg.h"
#include "compiler/Lowering/Passes.h"
#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/SymbolicShapes.h"

#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/PatternMatch.h"
#include "mlir/IR/TypeUtilities.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/StringSwitch.h"

#include <limits>
#include <optional>
#include <string>

namespace ortc {
#define GEN_PASS_DEF_ONNXLOWERTOLINALG
#include "compiler/Lowering/Passes.h.inc"
} // namespace ortc

using namespace mlir;
namespace onnx = ortc::onnx_dialect;

namespace {

//===----------------------------------------------------------------------===//
// The table
//===----------------------------------------------------------------------===//

enum TypeBits : unsigned {
  kF32 = 1u << 0,
  kF64 = 1u << 1,
  kI8 = 1u << 2,
  kI32 = 1u << 3,
  kI64 = 1u << 4,
  kU8 = 1u << 5,
  kBool = 1u << 6,
  kI16 = 1u << 7,
  kU16 = 1u << 8,
  kU32 = 1u << 9,
  kU64 = 1u << 10,
  kF16 = 1u << 11,
  kBF16 = 1u << 12,
  kFloat = kF32 | kF64 | kF16 | kBF16,
  kSigned = kI8 | kI16 | kI32 | kI64,
  kUnsigned = kU8 | kU16 | kU32 | kU64,
  kInt = kSigned | kUnsigned,
  kNumeric = kFloat | kInt,
  kAll = kNumeric | kBool,
};

enum class Kind {
  Unary,    // one input, result of the input's type
  Binary,   // two inputs and the result of one type
  Variadic, // one or more inputs and the result of one type
  Compare,  // two inputs of one type, i1 result
  Where,    // i1 condition, X and Y of the result's type
  Cast,     // any supported type to any supported type
  BitCast,  // the bits of one type as another of the same width
  Clip,     // input, optional min and max of the result's type
  Pow,      // base of the result's type, numeric exponent
  Mod,      // two inputs and the result of one type
  Classify, // one float input, i1 result (IsInf, IsNaN)
  PRelu,    // X of the result's shape and type, slope broadcasting to it
  Identity, // forwards its input
  Constant, // onnx.Constant with a dense value
};

struct Rule {
  llvm::StringLiteral name;
  Kind kind;
  unsigned types; // element types of the typed operands (see each kind)
};

constexpr Rule kRules[] = {
    {"onnx.Add", Kind::Binary, kNumeric},
    {"onnx.Sub", Kind::Binary, kNumeric},
    {"onnx.Mul", Kind::Binary, kNumeric},
    {"onnx.Div", Kind::Binary, kNumeric},
    {"onnx.Pow", Kind::Pow, kFloat | kI32 | kI64},
    {"onnx.Sqrt", Kind::Unary, kFloat},
    {"onnx.Exp", Kind::Unary, kFloat},
    {"onnx.Log", Kind::Unary, kFloat},
    {"onnx.Neg", Kind::Unary, kFloat | kSigned},
    {"onnx.Abs", Kind::Unary, kNumeric},
    {"onnx.Sign", Kind::Unary, kNumeric},
    {"onnx.Reciprocal", Kind::Unary, kFloat},
    {"onnx.Floor", Kind::Unary, kFloat},
    {"onnx.Ceil", Kind::Unary, kFloat},
    {"onnx.Round", Kind::Unary, kFloat},
    {"onnx.Relu", Kind::Unary, kFloat | kSigned},
    {"onnx.LeakyRelu", Kind::Unary, kFloat},
    {"onnx.PRelu", Kind::PRelu, kFloat | kI32 | kI64 | kU32 | kU64},
    {"onnx.ThresholdedRelu", Kind::Unary, kFloat},
    {"onnx.Elu", Kind::Unary, kFloat},
    {"onnx.Celu", Kind::Unary, kFloat},
    {"onnx.Selu", Kind::Unary, kFloat},
    {"onnx.Shrink", Kind::Unary, kFloat},
    {"onnx.Sigmoid", Kind::Unary, kFloat},
    {"onnx.HardSigmoid", Kind::Unary, kFloat},
    {"onnx.HardSwish", Kind::Unary, kFloat},
    {"onnx.Swish", Kind::Unary, kFloat},
    {"onnx.SwiGLU", Kind::Binary, kFloat},
    {"onnx.Mish", Kind::Unary, kFloat},
    {"onnx.Softplus", Kind::Unary, kFloat},
    {"onnx.Softsign", Kind::Unary, kFloat},
    {"onnx.Tanh", Kind::Unary, kFloat},
    {"onnx.Erf", Kind::Unary, kFloat},
    {"onnx.Sin", Kind::Unary, kFloat},
    {"onnx.Cos", Kind::Unary, kFloat},
    {"onnx.Tan", Kind::Unary, kFloat},
    {"onnx.Asin", Kind::Unary, kFloat},
    {"onnx.Acos", Kind::Unary, kFloat},
    {"onnx.Atan", Kind::Unary, kFloat},
    {"onnx.Sinh", Kind::Unary, kFloat},
    {"onnx.Cosh", Kind::Unary, kFloat},
    {"onnx.Asinh", Kind::Unary, kFloat},
    {"onnx.Acosh", Kind::Unary, kFloat},
    {"onnx.Atanh", Kind::Unary, kFloat},
    {"onnx.Gelu", Kind::Unary, kFloat},
    {"ortc.gelu", Kind::Unary, kFloat},
    {"onnx.IsInf", Kind::Classify, kFloat},
    {"onnx.IsNaN", Kind::Classify, kFloat},
    {"onnx.Clip", Kind::Clip, kNumeric},
    {"onnx.Max", Kind::Variadic, kNumeric},
    {"onnx.Min", Kind::Variadic, kNumeric},
    {"onnx.Sum", Kind::Variadic, kNumeric},
    {"onnx.Mean", Kind::Variadic, kFloat},
    {"onnx.Mod", Kind::Mod, kNumeric},
    {"onnx.BitShift", Kind::Binary, kInt},
    {"onnx.BitwiseAnd", Kind::Binary, kInt},
    {"onnx.BitwiseOr", Kind::Binary, kInt},
    {"onnx.BitwiseXor", Kind::Binary, kInt},
    {"onnx.BitwiseNot", Kind::Unary, kInt},
    {"onnx.Equal", Kind::Compare, kAll},
    {"onnx.Less", Kind::Compare, kNumeric},
    {"onnx.Greater", Kind::Compare, kNumeric},
    {"onnx.LessOrEqual", Kind::Compare, kNumeric},
    {"onnx.GreaterOrEqual", Kind::Compare, kNumeric},
    {"onnx.Not", Kind::Unary, kBool},
    {"onnx.And", Kind::Binary, kBool},
    {"onnx.Or", Kind::Binary, kBool},
    {"onnx.Xor", Kind::Binary, kBool},
    {"onnx.Where", Kind::Where, kAll},
    {"onnx.Cast", Kind::Cast, kAll},
    {"onnx.BitCast", Kind::BitCast, kAll},
    {"onnx.Identity", Kind::Identity, kAll},
    {"onnx.Constant", Kind::Constant, kAll},
};

const Rule *findRule(StringRef name) {
  for (const Rule &rule : kRules)
    if (rule.name == name)
      return &rule;
  return nullptr;
}

unsigned typeBit(Type t) {
  if (t.isF32())
    return kF32;
  if (t.isF64())
    return kF64;
  if (t.isF16())
    return kF16;
  if (t.isBF16())
    return kBF16;
  if (t.isSignlessInteger(1))
    return kBool;
  auto it = dyn_cast<IntegerType>(t);
  if (!it || it.isSigned())
    return 0;
  bool u = it.isUnsigned();
  switch (it.getWidth()) {
  case 8:
    return u ? kU8 : kI8;
  case 16:
    return u ? kU16 : kI16;
  case 32:
    return u ? kU32 : kI32;
  case 64:
    return u ? kU64 : kI64;
  default:
    return 0;
  }
}

std::string typeSetText(unsigned set) {
  static const std::pair<unsigned, const char *> names[] = {
      {kF32, "f32"},   {kF64, "f64"},   {kF16, "f16"},   {kBF16, "bf16"}, {kI8, "i8"},
      {kI16, "i16"},   {kI32, "i32"},   {kI64, "i64"},   {kU8, "ui8"},    {kU16, "ui16"},
      {kU32, "ui32"},  {kU64, "ui64"},  {kBool, "i1"}};
  std::string out;
  for (auto [bit, name] : names)
    if (set & bit)
      out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

/// f16 and bf16 compute in f32 (lowerElementwise widens and rounds back).
bool isHalf(Type t) { return t.isF16() || t.isBF16(); }
Type computeType(Type t) { return isHalf(t) ? Type(Float32Type::get(t.getContext())) : t; }

std::string typeText(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

/// The element type ONNX's Cast `to` code names, among the supported ones.
Type castTarget(MLIRContext *ctx, int64_t to) {
  Builder b(ctx);
  auto u = [&](unsigned w) { return IntegerType::get(ctx, w, IntegerType::Unsigned); };
  switch (to) {
  case 1:
    return b.getF32Type();
  case 2:
    return u(8);
  case 3:
    return b.getIntegerType(8);
  case 4:
    return u(16);
  case 5:
    return b.getIntegerType(16);
  case 6:
    return b.getI32Type();
  case 7:
    return b.getI64Type();
  case 9:
    return b.getI1Type();
  case 10:
    return b.getF16Type();
  case 11:
    return b.getF64Type();
  case 12:
    return u(32);
  case 13:
    return u(64);
  case 16:
    return b.getBF16Type();
  default:
    return {};
  }
}

/// The typed inputs of `op` (Clip's omitted min/max left out).
SmallVector<Value> dataOperands(Operation *op) {
  SmallVector<Value> inputs;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    if (isa<onnx::ClipOp>(op) && i > 0 && onnx::isNoValue(v))
      continue;
    inputs.push_back(v);
  }
  return inputs;
}

//===----------------------------------------------------------------------===//
// The predicate
//===----------------------------------------------------------------------===//

/// numpy broadcasting of `in` to `out` under the kernels' `?` rule: only a
/// static 1 broadcasts; a `?` against a static size (or a static size against
/// a `?`) is compiled as equal, which the EP's plan checks at run time
/// (CpuCompileEp's broadcast checks), as it does two different `?`s.
bool broadcasts(RankedTensorType in, RankedTensorType out, std::string &why) {
  int64_t offset = out.getRank() - in.getRank();
  if (offset < 0) {
    why = "has rank " + std::to_string(in.getRank()) + ", more than the result's " +
          std::to_string(out.getRank());
    return false;
  }
  for (int64_t i = 0; i < in.getRank(); ++i) {
    int64_t id = in.getDimSize(i), od = out.getDimSize(offset + i);
    if (ShapedType::isDynamic(id) || ShapedType::isDynamic(od))
      continue;
    if (id == 1 || id == od)
      continue;
    why = "dim " + std::to_string(i) + " (" + std::to_string(id) + ") does not broadcast to " +
          (ShapedType::isDynamic(od) ? std::string("?") : std::to_string(od));
    return false;
  }
  return true;
}

/// Bytes an element takes in a resource blob (i1: one byte each).
size_t blobElementBytes(Type elem) {
  return elem.isSignlessInteger(1) ? 1 : elem.getIntOrFloatBitWidth() / 8;
}

/// Constants larger than this stay out of kernels (the EP passes weights as
/// arguments); it bounds what a kernel object embeds.
constexpr int64_t kMaxConstantBytes = 1 << 20;

bool checkConstant(Operation *op, RankedTensorType resultType, std::string &why) {
  if (!resultType.hasStaticShape()) {
    why = "constant of dynamic shape";
    return false;
  }
  auto c = cast<onnx::ConstantOp>(op);
  Type elem = resultType.getElementType();
  int64_t count = resultType.getNumElements();
  if (count * int64_t(blobElementBytes(elem)) > kMaxConstantBytes) {
    why = "constant larger than " + std::to_string(kMaxConstantBytes) + " bytes";
    return false;
  }
  if (auto value = c.getValueAttr()) {
    auto shaped = dyn_cast<ShapedType>(value.getType());
    if (!shaped || shaped.getElementType() != elem || !shaped.hasStaticShape() ||
        shaped.getNumElements() != count) {
      why = "constant value does not match the result type";
      return false;
    }
    if (isa<DenseElementsAttr>(value))
      return true;
    if (auto resource = dyn_cast<DenseResourceElementsAttr>(value)) {
      AsmResourceBlob *blob = resource.getRawHandle().getBlob();
      if (blob && int64_t(blob->getData().size()) == count * int64_t(blobElementBytes(elem)))
        return true;
      why = "constant resource has no data (elided) or the wrong size";
      return false;
    }
    why = "constant value is neither dense nor a resource";
    return false;
  }
  if (c.getValueFloatAttr() || c.getValueFloatsAttr()) {
    int64_t n = c.getValueFloatsAttr() ? int64_t(c.getValueFloatsAttr().size()) : 1;
    if (elem.isF32() && n == count)
      return true;
  } else if (c.getValueIntAttr() || c.getValueIntsAttr()) {
    int64_t n = c.getValueIntsAttr() ? int64_t(c.getValueIntsAttr().size()) : 1;
    if (elem.isSignlessInteger(64) && n == count)
      return true;
  } else {
    why = "constant without a value, value_float(s) or value_int(s)";
    return false;
  }
  why = "constant value does not match the result type";
  return false;
}

/// Why check() refuses an op: the phrase, the kind of thing refused and
/// what would be accepted instead (an EP's decline reason).
struct Refusal {
  std::string why, accepts;
  ortc::ElementwiseRefusalKind kind = ortc::ElementwiseRefusalKind::Op;
};

bool check(Operation *op, Refusal &r) {
  using RK = ortc::ElementwiseRefusalKind;
  std::string &why = r.why;
  auto fail = [&](RK kind, std::string text, std::string accepts) {
    r.kind = kind;
    r.why = std::move(text);
    r.accepts = std::move(accepts);
    return false;
  };
  StringRef name = op->getName().getStringRef();
  const Rule *rule = findRule(name);
  if (!rule)
    return fail(RK::Op, "not an elementwise op the kernel lowering takes",
                "the elementwise ops of onnx-lower-to-linalg");
  if (op->getNumResults() != 1)
    return fail(RK::Op, "expected one result", "one result");
  auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType)
    return fail(RK::Shape,
                "result type " + typeText(op->getResult(0).getType()) + " is not a ranked tensor",
                "ranked tensors");
  Type resultElem = resultType.getElementType();
  if (!typeBit(resultElem))
    return fail(RK::DType,
                "result element type " + typeText(resultElem) + " is not one of " +
                    typeSetText(kAll),
                typeSetText(kAll) + " tensors");
  if (rule->kind == Kind::Constant) {
    if (!(typeBit(resultElem) & rule->types))
      return fail(RK::DType, "constant of element type " + typeText(resultElem),
                  typeSetText(rule->types) + " constants");
    if (!checkConstant(op, resultType, why))
      return fail(RK::Attribute, why,
                  "static constants of up to 1 MiB with a dense value, value_float(s) or "
                  "value_int(s)");
    return true;
  }

  SmallVector<Value> inputs = dataOperands(op);
  size_t arity = inputs.size();
  bool arityOk = true;
  switch (rule->kind) {
  case Kind::Unary:
  case Kind::Cast:
  case Kind::BitCast:
  case Kind::Identity:
  case Kind::Classify:
    arityOk = arity == 1;
    break;
  case Kind::Binary:
  case Kind::Compare:
  case Kind::Pow:
  case Kind::Mod:
  case Kind::PRelu:
    arityOk = arity == 2;
    break;
  case Kind::Where:
    arityOk = arity == 3;
    break;
  case Kind::Variadic:
    arityOk = arity >= 1;
    break;
  case Kind::Clip:
    arityOk = arity >= 1 && arity <= 3;
    break;
  case Kind::Constant:
    break;
  }
  if (!arityOk)
    return fail(RK::Op, "unexpected number of inputs (" + std::to_string(arity) + ")",
                "the op's inputs as ONNX defines them");

  SmallVector<RankedTensorType> types;
  for (auto [i, v] : llvm::enumerate(inputs)) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return fail(RK::Shape,
                  "operand " + std::to_string(i) + " of type " + typeText(v.getType()) +
                      " is not a ranked tensor",
                  "ranked tensors");
    if (!typeBit(t.getElementType()))
      return fail(RK::DType,
                  "element type " + typeText(t.getElementType()) + " of operand " +
                      std::to_string(i) + " is not one of " + typeSetText(kAll),
                  typeSetText(kAll) + " tensors");
    std::string bwhy;
    if (rule->kind == Kind::Identity ||
        (rule->kind == Kind::PRelu && i == 0)) {
      if (failed(verifyCompatibleShape(t.getShape(), resultType.getShape())))
        return fail(RK::Shape,
                    "input " + std::to_string(i) + " shape " + typeText(t) +
                        " does not match the result's " + typeText(resultType),
                    "an input of the result's shape");
    } else if (!broadcasts(t, resultType, bwhy)) {
      return fail(RK::Shape, "operand " + std::to_string(i) + " " + bwhy,
                  "inputs that broadcast to the result by numpy rules (a ? only at the batch)");
    }
    types.push_back(t);
  }
  // Every `?` of the result needs an input with `?` there to take it from.
  for (int64_t p = 0; p < resultType.getRank(); ++p) {
    if (!resultType.isDynamicDim(p) || rule->kind == Kind::Identity)
      continue;
    bool found = llvm::any_of(types, [&](RankedTensorType t) {
      int64_t q = p - (resultType.getRank() - t.getRank());
      return q >= 0 && t.isDynamicDim(q);
    });
    if (!found)
      return fail(RK::Shape, "result dim " + std::to_string(p) + " is ? but no input has ? there",
                  "a ? result dim that an input has at the same position");
  }

  auto needType = [&](Type t, unsigned set, const Twine &what) {
    if (typeBit(t) & set)
      return true;
    return fail(RK::DType,
                (what + " has element type " + typeText(t) + "; " + name + " takes " +
                 typeSetText(set))
                    .str(),
                typeSetText(set) + " for " + name.str());
  };
  auto needSame = [&](Type t, const Twine &what) {
    if (t == resultElem)
      return true;
    return fail(RK::DType,
                (what + " has element type " + typeText(t) + ", the result " +
                 typeText(resultElem))
                    .str(),
                "inputs of the result's element type");
  };
  auto needBool = [&](Type t, const Twine &what) {
    if (t.isSignlessInteger(1))
      return true;
    return fail(RK::DType, (what + " has element type " + typeText(t)).str(),
                "i1 (bool) for " + what.str());
  };

  switch (rule->kind) {
  case Kind::Unary:
  case Kind::Binary:
  case Kind::Variadic:
  case Kind::Identity:
  case Kind::Clip:
  case Kind::Mod:
  case Kind::PRelu:
    for (auto [i, t] : llvm::enumerate(types))
      if (!needType(t.getElementType(), rule->types, "operand " + Twine(i)) ||
          !needSame(t.getElementType(), "operand " + Twine(i)))
        return false;
    break;
  case Kind::Compare:
    if (!needType(types[0].getElementType(), rule->types, "operand 0"))
      return false;
    if (types[1].getElementType() != types[0].getElementType())
      return fail(RK::DType,
                  "operands have different element types (" +
                      typeText(types[0].getElementType()) + ", " +
                      typeText(types[1].getElementType()) + ")",
                  "two operands of one element type");
    if (!needBool(resultElem, "the result"))
      return false;
    break;
  case Kind::Classify:
    if (!needType(types[0].getElementType(), rule->types, "operand 0") ||
        !needBool(resultElem, "the result"))
      return false;
    break;
  case Kind::Where:
    if (!needBool(types[0].getElementType(), "the condition") ||
        !needSame(types[1].getElementType(), "operand 1") ||
        !needSame(types[2].getElementType(), "operand 2"))
      return false;
    break;
  case Kind::Cast: {
    auto to = op->getAttrOfType<IntegerAttr>("to");
    Type target = to ? castTarget(op->getContext(), to.getInt()) : Type();
    if (!target)
      return fail(RK::DType,
                  "Cast to ONNX type " +
                      (to ? std::to_string(to.getInt()) : std::string("?")),
                  "Cast between " + typeSetText(kAll));
    if (target != resultElem)
      return fail(RK::Attribute, "Cast 'to' does not match the result element type",
                  "'to' naming the result's element type");
    break;
  }
  case Kind::BitCast: {
    auto to = op->getAttrOfType<IntegerAttr>("to");
    Type target = to ? castTarget(op->getContext(), to.getInt()) : Type();
    if (!target)
      return fail(RK::DType,
                  "BitCast to ONNX type " +
                      (to ? std::to_string(to.getInt()) : std::string("?")),
                  "BitCast between " + typeSetText(kAll));
    if (target != resultElem)
      return fail(RK::Attribute, "BitCast 'to' does not match the result element type",
                  "'to' naming the result's element type");
    Type from = types[0].getElementType();
    auto storageBits = [](Type t) { return t.isSignlessInteger(1) ? 8u : t.getIntOrFloatBitWidth(); };
    if (storageBits(from) != storageBits(target))
      return fail(RK::DType,
                  "BitCast from " + typeText(from) + " to " + typeText(target) +
                      " (different widths)",
                  "a target of the input's bit width");
    if (target.isSignlessInteger(1) && from != target)
      return fail(RK::DType, "BitCast from " + typeText(from) + " to bool",
                  "bool targets from bool only (a byte other than 0 or 1 is no bool)");
    break;
  }
  case Kind::Pow:
    if (!needType(types[0].getElementType(), rule->types, "base") ||
        !needSame(types[0].getElementType(), "base") ||
        !needType(types[1].getElementType(), kNumeric, "exponent"))
      return false;
    break;
  case Kind::Constant:
    break;
  }

  // Attributes.
  if (auto mod = dyn_cast<onnx::ModOp>(op); mod && mod.getFmod() != 0 && mod.getFmod() != 1)
    return fail(RK::Attribute, "Mod fmod=" + std::to_string(mod.getFmod()), "fmod 0 or 1");
  if (auto shift = dyn_cast<onnx::BitShiftOp>(op);
      shift && shift.getDirection() != "LEFT" && shift.getDirection() != "RIGHT")
    return fail(RK::Attribute, "BitShift direction='" + shift.getDirection().str() + "'",
                "direction LEFT or RIGHT");
  StringRef approximate;
  if (auto gelu = dyn_cast<onnx::GeluOp>(op))
    approximate = gelu.getApproximate();
  else if (auto gelu = dyn_cast<ortc::fused::GeluOp>(op))
    approximate = gelu.getApproximate();
  if ((isa<onnx::GeluOp, ortc::fused::GeluOp>(op)) && approximate != "none" &&
      approximate != "tanh")
    return fail(RK::Attribute, "Gelu approximate='" + approximate.str() + "' (takes none or tanh)",
                "approximate none or tanh");
  return true;
}

//===----------------------------------------------------------------------===//
// Scalar bodies
//===----------------------------------------------------------------------===//

struct Scalar {
  OpBuilder &b;
  Location loc;

  Value cst(Type t, double v) {
    if (isa<FloatType>(t))
      return arith::ConstantOp::create(b, loc, t, b.getFloatAttr(t, v));
    return arith::ConstantOp::create(b, loc, t, b.getIntegerAttr(t, static_cast<int64_t>(v)));
  }
  Value toSignless(Value v) {
    auto it = dyn_cast<IntegerType>(v.getType());
    if (!it || it.isSignless())
      return v;
    Type s = IntegerType::get(v.getContext(), it.getWidth());
    return UnrealizedConversionCastOp::create(b, loc, s, v).getResult(0);
  }
  Value fromSignless(Value v, Type target) {
    if (v.getType() == target)
      return v;
    return UnrealizedConversionCastOp::create(b, loc, target, v).getResult(0);
  }

  // Floats.
  Value add(Value x, Value y) { return arith::AddFOp::create(b, loc, x, y); }
  Value sub(Value x, Value y) { return arith::SubFOp::create(b, loc, x, y); }
  Value mul(Value x, Value y) { return arith::MulFOp::create(b, loc, x, y); }
  Value div(Value x, Value y) { return arith::DivFOp::create(b, loc, x, y); }
  Value cmp(arith::CmpFPredicate p, Value x, Value y) {
    return arith::CmpFOp::create(b, loc, p, x, y);
  }
  Value sel(Value c, Value x, Value y) { return arith::SelectOp::create(b, loc, c, x, y); }
  Value fmax(Value x, Value y) { return arith::MaximumFOp::create(b, loc, x, y); }
  Value fmin(Value x, Value y) { return arith::MinimumFOp::create(b, loc, x, y); }
  Value exp(Value x) { return math::ExpOp::create(b, loc, x); }
  Value expm1(Value x) { return math::ExpM1Op::create(b, loc, x); }

  // Integers.
  Value icmp(arith::CmpIPredicate p, Value x, Value y) {
    return arith::CmpIOp::create(b, loc, p, x, y);
  }
};

/// Integer division truncating toward zero; 0 for a zero divisor, and the
/// wrapped negation for a divisor of -1 (no trap on INT_MIN / -1).
Value intDiv(Scalar &s, Value x, Value y, bool isUnsigned) {
  Type t = x.getType();
  Value zero = s.cst(t, 0), one = s.cst(t, 1);
  Value yIsZero = s.icmp(arith::CmpIPredicate::eq, y, zero);
  if (isUnsigned) {
    Value safe = s.sel(yIsZero, one, y);
    return s.sel(yIsZero, zero, arith::DivUIOp::create(s.b, s.loc, x, safe));
  }
  Value minusOne = s.cst(t, -1);
  Value yIsMinusOne = s.icmp(arith::CmpIPredicate::eq, y, minusOne);
  Value special = arith::OrIOp::create(s.b, s.loc, yIsZero, yIsMinusOne);
  Value safe = s.sel(special, one, y);
  Value q = arith::DivSIOp::create(s.b, s.loc, x, safe);
  Value neg = arith::SubIOp::create(s.b, s.loc, zero, x);
  return s.sel(yIsZero, zero, s.sel(yIsMinusOne, neg, q));
}

/// Integer remainder: fmod=1 takes the dividend's sign (C), fmod=0 the
/// divisor's (Python). 0 for a zero divisor and for a divisor of -1.
Value intMod(Scalar &s, Value x, Value y, bool isUnsigned, bool cStyle) {
  Type t = x.getType();
  Value zero = s.cst(t, 0), one = s.cst(t, 1);
  Value yIsZero = s.icmp(arith::CmpIPredicate::eq, y, zero);
  if (isUnsigned) {
    Value safe = s.sel(yIsZero, one, y);
    return s.sel(yIsZero, zero, arith::RemUIOp::create(s.b, s.loc, x, safe));
  }
  Value yIsMinusOne = s.icmp(arith::CmpIPredicate::eq, y, s.cst(t, -1));
  Value special = arith::OrIOp::create(s.b, s.loc, yIsZero, yIsMinusOne);
  Value safe = s.sel(special, one, y);
  Value r = arith::RemSIOp::create(s.b, s.loc, x, safe);
  if (!cStyle) {
    // r != 0 and sign(r) != sign(y): r += y.
    Value rNonZero = s.icmp(arith::CmpIPredicate::ne, r, zero);
    Value rNeg = s.icmp(arith::CmpIPredicate::slt, r, zero);
    Value yNeg = s.icmp(arith::CmpIPredicate::slt, safe, zero);
    Value differ = arith::XOrIOp::create(s.b, s.loc, rNeg, yNeg);
    Value fix = arith::AndIOp::create(s.b, s.loc, rNonZero, differ);
    r = s.sel(fix, arith::AddIOp::create(s.b, s.loc, r, safe), r);
  }
  return s.sel(special, zero, r);
}

//===----------------------------------------------------------------------===//
// f16 and bf16: bits in i16, computed in f32
//===----------------------------------------------------------------------===//
//
// The conversions are integer code of our own rather than arith.extf/truncf
// on half types, which LLVM may lower to compiler-rt calls (__truncsfhf2,
// __truncsfbf2) that a kernel object cannot count on; these vectorize too.

Value icst(Scalar &s, Type t, int64_t v) {
  return arith::ConstantOp::create(s.b, s.loc, t, s.b.getIntegerAttr(t, v));
}

/// The f32 value of f16 or bf16 bits (i16); exact.
Value widenHalf(Scalar &s, Value bits, Type half) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  Value h = arith::ExtUIOp::create(b, loc, i32, bits);
  if (half.isBF16())
    return arith::BitcastOp::create(b, loc, f32,
                                    arith::ShLIOp::create(b, loc, h, icst(s, i32, 16)));
  Value sign = arith::ShLIOp::create(
      b, loc, arith::AndIOp::create(b, loc, h, icst(s, i32, 0x8000)), icst(s, i32, 16));
  Value exp = arith::AndIOp::create(b, loc, h, icst(s, i32, 0x7c00));
  Value mant = arith::AndIOp::create(b, loc, h, icst(s, i32, 0x3ff));
  // Normal: rebias the exponent (127 - 15 = 112).
  Value em = arith::ShLIOp::create(
      b, loc, arith::AndIOp::create(b, loc, h, icst(s, i32, 0x7fff)), icst(s, i32, 13));
  Value normal = arith::AddIOp::create(b, loc, em, icst(s, i32, 112 << 23));
  // Inf and NaN: the f32 all-ones exponent, the payload kept.
  Value special = arith::OrIOp::create(
      b, loc, icst(s, i32, 0x7f800000),
      arith::ShLIOp::create(b, loc, mant, icst(s, i32, 13)));
  // Zero and subnormal: mant * 2^-24, exact in f32.
  Value sub = arith::MulFOp::create(b, loc, arith::UIToFPOp::create(b, loc, f32, mant),
                                    s.cst(f32, 0x1p-24));
  Value subBits = arith::BitcastOp::create(b, loc, i32, sub);
  Value isZeroExp = s.icmp(arith::CmpIPredicate::eq, exp, icst(s, i32, 0));
  Value isMaxExp = s.icmp(arith::CmpIPredicate::eq, exp, icst(s, i32, 0x7c00));
  Value mag = s.sel(isZeroExp, subBits, s.sel(isMaxExp, special, normal));
  return arith::BitcastOp::create(b, loc, f32, arith::OrIOp::create(b, loc, mag, sign));
}

/// f32 `v` rounded to the nearest f16 or bf16 (ties to even), as bits (i16).
Value narrowHalf(Scalar &s, Value v, Type half) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Type i32 = b.getI32Type(), i16 = b.getIntegerType(16), f32 = b.getF32Type();
  Value u = arith::BitcastOp::create(b, loc, i32, v);
  Value a = arith::AndIOp::create(b, loc, u, icst(s, i32, 0x7fffffff));
  Value isNaN = s.icmp(arith::CmpIPredicate::ugt, a, icst(s, i32, 0x7f800000));
  Value sign16 = arith::AndIOp::create(
      b, loc, arith::ShRUIOp::create(b, loc, u, icst(s, i32, 16)), icst(s, i32, 0x8000));
  Value r;
  if (half.isBF16()) {
    // Round at bit 16: add 0x7fff plus the lowest kept bit; a carry moves
    // into the exponent (and to infinity) as it should.
    Value odd = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, u, icst(s, i32, 16)), icst(s, i32, 1));
    Value rounded = arith::ShRUIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, u, arith::AddIOp::create(b, loc, odd, icst(s, i32, 0x7fff))),
        icst(s, i32, 16));
    Value quiet = arith::OrIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, u, icst(s, i32, 16)), icst(s, i32, 0x40));
    r = s.sel(isNaN, quiet, rounded);
  } else {
    // |v| >= 65520 rounds to infinity.
    Value isBig = s.icmp(arith::CmpIPredicate::uge, a, icst(s, i32, 0x477ff000));
    // Normal results (|v| >= 2^-14): rebias, round at bit 13.
    Value t = arith::SubIOp::create(b, loc, a, icst(s, i32, 112 << 23));
    Value odd = arith::AndIOp::create(
        b, loc, arith::ShRUIOp::create(b, loc, t, icst(s, i32, 13)), icst(s, i32, 1));
    Value normal = arith::ShRUIOp::create(
        b, loc,
        arith::AddIOp::create(b, loc, t, arith::AddIOp::create(b, loc, odd, icst(s, i32, 0xfff))),
        icst(s, i32, 13));
    // Subnormal results: |v| + 0.5 rounds |v| to a multiple of 2^-24 (the
    // f32 ulp at 0.5), ties to even; the bits above 0.5 count those units.
    Value absV = arith::BitcastOp::create(b, loc, f32, a);
    Value shifted = arith::AddFOp::create(b, loc, absV, s.cst(f32, 0.5));
    Value subnormal = arith::SubIOp::create(b, loc, arith::BitcastOp::create(b, loc, i32, shifted),
                                            icst(s, i32, 0x3f000000));
    Value isSmall = s.icmp(arith::CmpIPredicate::ult, a, icst(s, i32, 113 << 23));
    Value mag = s.sel(isSmall, subnormal, normal);
    mag = s.sel(isBig, icst(s, i32, 0x7c00), mag);
    r = s.sel(isNaN, icst(s, i32, 0x7e00), mag);
  }
  return arith::TruncIOp::create(b, loc, i16, arith::OrIOp::create(b, loc, r, sign16));
}

/// f64 `d` to f32 rounded to odd: truncated toward zero, the lowest bit set
/// when inexact. Rounding that to f16/bf16 is then rounding `d` once.
Value truncToOdd(Scalar &s, Value d) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Type i32 = b.getI32Type(), f32 = b.getF32Type();
  Value t = arith::TruncFOp::create(b, loc, f32, d);
  Value back = arith::ExtFOp::create(b, loc, b.getF64Type(), t);
  Value inexact = s.cmp(arith::CmpFPredicate::ONE, back, d);
  Value away = s.cmp(arith::CmpFPredicate::OGT, math::AbsFOp::create(b, loc, back),
                     math::AbsFOp::create(b, loc, d));
  Value bits = arith::BitcastOp::create(b, loc, i32, t);
  Value down = arith::SubIOp::create(b, loc, bits, icst(s, i32, 1));
  bits = s.sel(arith::AndIOp::create(b, loc, inexact, away), down, bits);
  bits = s.sel(inexact, arith::OrIOp::create(b, loc, bits, icst(s, i32, 1)), bits);
  return arith::BitcastOp::create(b, loc, f32, bits);
}

/// Cast a signless scalar `v` whose (compute) type is `from` to ONNX type
/// `to` (returned signless; an f16/bf16 `to` returns the f32 that
/// narrowHalf rounds once to the target).
Value castScalar(Scalar &s, Value v, Type from, Type to) {
  if (from == to)
    return v;
  OpBuilder &b = s.b;
  Location loc = s.loc;
  if (isHalf(to)) {
    Type f32 = b.getF32Type(), f64 = b.getF64Type();
    if (from.isF32())
      return v;
    if (from.isF64())
      return truncToOdd(s, v);
    bool fromUnsigned = from.isUnsignedInteger() || from.isSignlessInteger(1);
    Type via = from.getIntOrFloatBitWidth() <= 16 ? f32 : f64; // exact below 2^53
    Value f = fromUnsigned ? Value(arith::UIToFPOp::create(b, loc, via, v))
                           : Value(arith::SIToFPOp::create(b, loc, via, v));
    return via == f64 ? truncToOdd(s, f) : f;
  }
  Type sTo = isa<IntegerType>(to) ? Type(IntegerType::get(to.getContext(),
                                                           to.getIntOrFloatBitWidth()))
                                  : to;
  if (to.isSignlessInteger(1)) {
    if (isa<FloatType>(from))
      return s.cmp(arith::CmpFPredicate::UNE, v, s.cst(from, 0));
    return s.icmp(arith::CmpIPredicate::ne, v, s.cst(v.getType(), 0));
  }
  if (auto ff = dyn_cast<FloatType>(from)) {
    if (auto ft = dyn_cast<FloatType>(to)) {
      if (ft.getWidth() > ff.getWidth())
        return arith::ExtFOp::create(b, loc, ft, v);
      return arith::TruncFOp::create(b, loc, ft, v);
    }
    // Toward zero. Narrow targets go through i32 (ui32 through i64) and
    // wrap, as C on x86 does; ui64 converts as unsigned.
    unsigned width = to.getIntOrFloatBitWidth();
    if (width < 32 || (width == 32 && to.isUnsignedInteger())) {
      Type wideT = width < 32 ? b.getI32Type() : b.getI64Type();
      Value wide = arith::FPToSIOp::create(b, loc, wideT, v);
      return arith::TruncIOp::create(b, loc, sTo, wide);
    }
    if (to.isUnsignedInteger())
      return arith::FPToUIOp::create(b, loc, sTo, v);
    return arith::FPToSIOp::create(b, loc, sTo, v);
  }
  bool fromUnsigned = from.isUnsignedInteger() || from.isSignlessInteger(1);
  if (isa<FloatType>(to)) {
    if (fromUnsigned)
      return arith::UIToFPOp::create(b, loc, to, v);
    return arith::SIToFPOp::create(b, loc, to, v);
  }
  unsigned fw = from.getIntOrFloatBitWidth(), tw = to.getIntOrFloatBitWidth();
  if (fw == tw)
    return v;
  if (tw < fw)
    return arith::TruncIOp::create(b, loc, sTo, v);
  if (fromUnsigned)
    return arith::ExtUIOp::create(b, loc, sTo, v);
  return arith::ExtSIOp::create(b, loc, sTo, v);
}

/// Integer `x` (signless, i32 or i64) to the power `e`. An integer exponent
/// (ONNX type `eType`) is exact with wrapping (square and multiply over all
/// of its bits); a negative one gives trunc(x^e): 1 for x = 1, +-1 for
/// x = -1, else 0. A float exponent computes in f64 and truncates toward
/// zero.
Value intPow(Scalar &s, Value x, Value e, Type eType) {
  OpBuilder &b = s.b;
  Location loc = s.loc;
  Type t = x.getType();
  if (isa<FloatType>(eType)) {
    Type f64 = b.getF64Type();
    Value xf = arith::SIToFPOp::create(b, loc, f64, x);
    Value ef = eType.isF64() ? e : Value(arith::ExtFOp::create(b, loc, f64, e));
    return arith::FPToSIOp::create(b, loc, t, math::PowFOp::create(b, loc, xf, ef));
  }
  Type et = e.getType();
  unsigned ew = et.getIntOrFloatBitWidth();
  Value one = icst(s, t, 1), result = one, base = x;
  for (unsigned i = 0; i < ew; ++i) {
    Value bit = i == 0 ? e : Value(arith::ShRUIOp::create(b, loc, e, icst(s, et, i)));
    bit = arith::TruncIOp::create(b, loc, b.getI1Type(), bit);
    result = s.sel(bit, arith::MulIOp::create(b, loc, result, base), result);
    if (i + 1 < ew)
      base = arith::MulIOp::create(b, loc, base, base);
  }
  if (eType.isUnsignedInteger())
    return result;
  Value negE = s.icmp(arith::CmpIPredicate::slt, e, icst(s, et, 0));
  Value odd = arith::TruncIOp::create(b, loc, b.getI1Type(), e);
  Value minusOne = icst(s, t, -1);
  Value ofMinusOne = s.sel(odd, minusOne, one);
  Value negResult = s.sel(s.icmp(arith::CmpIPredicate::eq, x, one), one,
                          s.sel(s.icmp(arith::CmpIPredicate::eq, x, minusOne), ofMinusOne,
                                icst(s, t, 0)));
  return s.sel(negE, negResult, result);
}

/// Written so that the negative tail does not cancel: erfc(-x/sqrt2) is
/// 1 + erf(x/sqrt2), and 1 + tanh(u) is 2 sigmoid(2u).
Value geluScalar(Scalar &s, Value x, StringRef approximate) {
  Type t = x.getType();
  if (approximate == "tanh") {
    // x sigmoid(2 sqrt(2/pi) (x + 0.044715 x^3)) = x / (1 + exp(-2u))
    Value x3 = s.mul(s.mul(x, x), x);
    Value poly = s.add(x, s.mul(s.cst(t, 0.044715), x3));
    Value minusTwoU = s.mul(s.cst(t, -2 * 0.7978845608028654), poly);
    return s.div(x, s.add(s.cst(t, 1.0), s.exp(minusTwoU)));
  }
  // 0.5 x erfc(-x / sqrt 2)
  Value arg = s.mul(x, s.cst(t, -0.7071067811865476));
  Value erfc = math::ErfcOp::create(s.b, s.loc, arg);
  Value half = s.mul(s.cst(t, 0.5), x);
  return s.mul(half, erfc);
}

/// A splat float value of `v` when it is a constant (onnx or arith).
std::optional<double> splatValue(Value v) {
  Attribute attr;
  if (auto c = v.getDefiningOp<onnx::ConstantOp>())
    attr = c.getValueAttr();
  else if (auto c = v.getDefiningOp<arith::ConstantOp>())
    attr = c.getValue();
  auto dense = dyn_cast_or_null<DenseElementsAttr>(attr);
  if (!dense || !dense.isSplat())
    return std::nullopt;
  if (isa<FloatType>(dense.getElementType()))
    return dense.getSplatValue<APFloat>().convertToDouble();
  if (dense.getElementType().isSignlessInteger())
    return double(dense.getSplatValue<APInt>().getSExtValue());
  return std::nullopt;
}

/// The scalar result of `op` from signless `args` (the typed inputs of
/// `op`, in order; `types` are their ONNX element types).
Value buildBody(Scalar &s, Operation *op, ValueRange args, ArrayRef<Type> types,
                Type resultElem) {
  StringRef name = op->getName().getStringRef();
  Type t = types.empty() ? computeType(resultElem) : types[0];
  bool isFloat = isa<FloatType>(t);
  bool isUnsigned = t.isUnsignedInteger();
  Value x = args.empty() ? Value() : args[0];
  OpBuilder &b = s.b;
  Location loc = s.loc;
  using FP = arith::CmpFPredicate;
  using IP = arith::CmpIPredicate;

  auto fold = [&](auto fn) {
    Value acc = args[0];
    for (Value v : args.drop_front())
      acc = fn(acc, v);
    return acc;
  };

  if (name == "onnx.Add" || name == "onnx.Sum")
    return fold([&](Value a, Value c) -> Value {
      return isFloat ? s.add(a, c) : Value(arith::AddIOp::create(b, loc, a, c));
    });
  if (name == "onnx.Mean")
    return s.div(fold([&](Value a, Value c) { return s.add(a, c); }),
                 s.cst(t, double(args.size())));
  if (name == "onnx.Sub")
    return isFloat ? s.sub(args[0], args[1])
                   : Value(arith::SubIOp::create(b, loc, args[0], args[1]));
  if (name == "onnx.Mul")
    return isFloat ? s.mul(args[0], args[1])
                   : Value(arith::MulIOp::create(b, loc, args[0], args[1]));
  if (name == "onnx.Div")
    return isFloat ? s.div(args[0], args[1]) : intDiv(s, args[0], args[1], isUnsigned);
  if (name == "onnx.Max")
    return fold([&](Value a, Value c) -> Value {
      if (isFloat)
        return s.fmax(a, c);
      if (isUnsigned)
        return arith::MaxUIOp::create(b, loc, a, c);
      return arith::MaxSIOp::create(b, loc, a, c);
    });
  if (name == "onnx.Min")
    return fold([&](Value a, Value c) -> Value {
      if (isFloat)
        return s.fmin(a, c);
      if (isUnsigned)
        return arith::MinUIOp::create(b, loc, a, c);
      return arith::MinSIOp::create(b, loc, a, c);
    });
  if (name == "onnx.Clip") {
    auto clip = cast<onnx::ClipOp>(op);
    Value v = x;
    unsigned next = 1;
    if (!onnx::isNoValue(clip.getMin())) {
      Value lo = args[next++];
      v = isFloat      ? s.fmax(v, lo)
          : isUnsigned ? Value(arith::MaxUIOp::create(b, loc, v, lo))
                       : Value(arith::MaxSIOp::create(b, loc, v, lo));
    }
    if (!onnx::isNoValue(clip.getMax())) {
      Value hi = args[next++];
      v = isFloat      ? s.fmin(v, hi)
          : isUnsigned ? Value(arith::MinUIOp::create(b, loc, v, hi))
                       : Value(arith::MinSIOp::create(b, loc, v, hi));
    }
    return v;
  }
  if (name == "onnx.Mod") {
    bool cStyle = cast<onnx::ModOp>(op).getFmod() == 1;
    if (!isFloat)
      return intMod(s, args[0], args[1], isUnsigned, cStyle);
    Value r = arith::RemFOp::create(b, loc, args[0], args[1]);
    if (cStyle)
      return r;
    // The divisor's sign: a nonzero r of the other sign gets y added; a
    // zero r takes y's sign. NaN and infinities come out of fmod as ONNX
    // says (x = +-inf or y = 0: NaN; y = +-inf: x, or y when signs differ).
    Value y = args[1];
    Value zero = s.cst(t, 0);
    Value yNegative = s.cmp(FP::OLT, y, zero);
    Value rNegative = s.cmp(FP::OLT, r, zero);
    Value differ = arith::XOrIOp::create(b, loc, rNegative, yNegative);
    Value fix = arith::AndIOp::create(b, loc, s.cmp(FP::ONE, r, zero), differ);
    Value fixed = s.sel(fix, s.add(r, y), r);
    Value signed_ = math::CopySignOp::create(b, loc, r, y);
    return s.sel(s.cmp(FP::OEQ, r, zero), signed_, fixed);
  }
  if (name == "onnx.Pow") {
    if (!isFloat)
      return intPow(s, x, args[1], types[1]);
    Value e = castScalar(s, args[1], types[1], t);
    if (auto k = splatValue(op->getOperand(1))) {
      if (*k == 1.0)
        return x;
      if (*k == 2.0)
        return s.mul(x, x);
    }
    return math::PowFOp::create(b, loc, x, e);
  }
  if (name == "onnx.Neg")
    return isFloat ? Value(arith::NegFOp::create(b, loc, x))
                   : Value(arith::SubIOp::create(b, loc, s.cst(t, 0), x));
  if (name == "onnx.Abs") {
    if (isFloat)
      return math::AbsFOp::create(b, loc, x);
    if (isUnsigned)
      return x;
    return math::AbsIOp::create(b, loc, x);
  }
  if (name == "onnx.Relu") {
    if (isFloat) // NaN stays NaN; -0 becomes +0
      return s.sel(s.cmp(FP::UGT, x, s.cst(t, 0)), x, s.cst(t, 0));
    return arith::MaxSIOp::create(b, loc, x, s.cst(t, 0));
  }
  if (name == "onnx.Sqrt")
    return math::SqrtOp::create(b, loc, x);
  if (name == "onnx.Exp")
    return s.exp(x);
  if (name == "onnx.Log")
    return math::LogOp::create(b, loc, x);
  if (name == "onnx.Reciprocal")
    return s.div(s.cst(t, 1), x);
  if (name == "onnx.Floor")
    return math::FloorOp::create(b, loc, x);
  if (name == "onnx.Ceil")
    return math::CeilOp::create(b, loc, x);
  if (name == "onnx.Tanh")
    return math::TanhOp::create(b, loc, x);
  if (name == "onnx.Erf")
    return math::ErfOp::create(b, loc, x);
  if (name == "onnx.Sin")
    return math::SinOp::create(b, loc, x);
  if (name == "onnx.Cos")
    return math::CosOp::create(b, loc, x);
  if (name == "onnx.Sigmoid") {
    Value expNeg = s.exp(arith::NegFOp::create(b, loc, x));
    Value denominator = s.add(s.cst(t, 1), expNeg);
    return s.div(s.cst(t, 1), denominator);
  }
  auto softplus = [&](Value v) -> Value {
    // max(v, 0) + log1p(exp(-|v|)): no overflow for large v.
    Value negAbs = arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, v));
    Value tail = math::Log1pOp::create(b, loc, s.exp(negAbs));
    return s.add(s.fmax(v, s.cst(t, 0)), tail);
  };
  if (name == "onnx.Softplus")
    return softplus(x);
  if (name == "onnx.Mish")
    return s.mul(x, math::TanhOp::create(b, loc, softplus(x)));
  if (name == "onnx.Softsign") {
    Value abs = math::AbsFOp::create(b, loc, x);
    return s.div(x, s.add(s.cst(t, 1), abs));
  }
  if (auto swish = dyn_cast<onnx::SwishOp>(op)) {
    // x sigmoid(alpha x) = x / (1 + exp(-alpha x))
    Value ax = s.mul(s.cst(t, -swish.getAlpha().convertToDouble()), x);
    return s.div(x, s.add(s.cst(t, 1), s.exp(ax)));
  }
  if (auto swiglu = dyn_cast<onnx::SwiGLUOp>(op)) {
    // Swish_alpha(a) * b
    Value aa = s.mul(s.cst(t, -swiglu.getAlpha().convertToDouble()), args[0]);
    Value gate = s.div(args[0], s.add(s.cst(t, 1), s.exp(aa)));
    return s.mul(gate, args[1]);
  }
  if (auto celu = dyn_cast<onnx::CeluOp>(op)) {
    // max(0, x) + min(0, alpha (exp(x / alpha) - 1))
    Value alpha = s.cst(t, celu.getAlpha().convertToDouble());
    Value pos = s.fmax(s.cst(t, 0), x);
    Value neg = s.fmin(s.cst(t, 0), s.mul(alpha, s.expm1(s.div(x, alpha))));
    return s.add(pos, neg);
  }
  if (auto tr = dyn_cast<onnx::ThresholdedReluOp>(op))
    return s.sel(s.cmp(FP::OGT, x, s.cst(t, tr.getAlpha().convertToDouble())), x, s.cst(t, 0));
  if (auto shrink = dyn_cast<onnx::ShrinkOp>(op)) {
    double lambd = shrink.getLambd().convertToDouble();
    double bias = shrink.getBias().convertToDouble();
    Value zero = s.cst(t, 0);
    Value shiftedDown = s.sub(x, s.cst(t, bias));
    Value hi = s.sel(s.cmp(FP::OGT, x, s.cst(t, lambd)), shiftedDown, zero);
    Value shiftedUp = s.add(x, s.cst(t, bias));
    return s.sel(s.cmp(FP::OLT, x, s.cst(t, -lambd)), shiftedUp, hi);
  }
  if (name == "onnx.PRelu") {
    Value slope = args[1];
    if (isUnsigned)
      return x;
    if (isFloat) {
      Value scaled = s.mul(slope, x);
      return s.sel(s.cmp(FP::OLT, x, s.cst(t, 0)), scaled, x);
    }
    Value scaled = arith::MulIOp::create(b, loc, slope, x);
    return s.sel(s.icmp(IP::slt, x, icst(s, x.getType(), 0)), scaled, x);
  }
  if (name == "onnx.Sign") {
    if (isFloat) { // +-0 and NaN stay
      Value pos = s.cmp(FP::OGT, x, s.cst(t, 0));
      Value neg = s.sel(s.cmp(FP::OLT, x, s.cst(t, 0)), s.cst(t, -1), x);
      return s.sel(pos, s.cst(t, 1), neg);
    }
    Type it = x.getType();
    Value zero = icst(s, it, 0);
    Value pos = s.icmp(isUnsigned ? IP::ne : IP::sgt, x, zero);
    Value neg = s.sel(s.icmp(IP::slt, x, zero), icst(s, it, -1), zero);
    return s.sel(pos, icst(s, it, 1), neg);
  }
  if (name == "onnx.Round")
    return math::RoundEvenOp::create(b, loc, x);
  if (name == "onnx.Tan")
    return math::TanOp::create(b, loc, x);
  if (name == "onnx.Asin")
    return math::AsinOp::create(b, loc, x);
  if (name == "onnx.Acos")
    return math::AcosOp::create(b, loc, x);
  if (name == "onnx.Atan")
    return math::AtanOp::create(b, loc, x);
  if (name == "onnx.Sinh")
    return math::SinhOp::create(b, loc, x);
  if (name == "onnx.Cosh")
    return math::CoshOp::create(b, loc, x);
  if (name == "onnx.Asinh")
    return math::AsinhOp::create(b, loc, x);
  if (name == "onnx.Acosh")
    return math::AcoshOp::create(b, loc, x);
  if (name == "onnx.Atanh")
    return math::AtanhOp::create(b, loc, x);
  if (auto isInf = dyn_cast<onnx::IsInfOp>(op)) {
    double inf = std::numeric_limits<double>::infinity();
    Value r = s.cst(b.getI1Type(), 0);
    if (isInf.getDetectPositive() != 0)
      r = s.cmp(FP::OEQ, x, s.cst(t, inf));
    if (isInf.getDetectNegative() != 0)
      r = arith::OrIOp::create(b, loc, r, s.cmp(FP::OEQ, x, s.cst(t, -inf)));
    return r;
  }
  if (name == "onnx.IsNaN")
    return s.cmp(FP::UNO, x, x);
  if (auto shift = dyn_cast<onnx::BitShiftOp>(op)) {
    // A shift by a negative amount or by the width or more: what the sign
    // fill alone gives (-1 for a right shift of a negative signed x, else
    // 0). An unsigned compare treats a negative amount as huge.
    Type it = x.getType();
    unsigned width = it.getIntOrFloatBitWidth();
    Value y = args[1];
    Value inRange = s.icmp(IP::ult, y, icst(s, it, width));
    Value zero = icst(s, it, 0);
    if (shift.getDirection() == "RIGHT" && !isUnsigned)
      return arith::ShRSIOp::create(b, loc, x, s.sel(inRange, y, icst(s, it, width - 1)));
    Value amount = s.sel(inRange, y, zero);
    Value shifted = shift.getDirection() == "LEFT"
                        ? Value(arith::ShLIOp::create(b, loc, x, amount))
                        : Value(arith::ShRUIOp::create(b, loc, x, amount));
    return s.sel(inRange, shifted, zero);
  }
  if (name == "onnx.BitwiseAnd")
    return arith::AndIOp::create(b, loc, args[0], args[1]);
  if (name == "onnx.BitwiseOr")
    return arith::OrIOp::create(b, loc, args[0], args[1]);
  if (name == "onnx.BitwiseXor")
    return arith::XOrIOp::create(b, loc, args[0], args[1]);
  if (name == "onnx.BitwiseNot")
    return arith::XOrIOp::create(b, loc, x, icst(s, x.getType(), -1));
  if (name == "onnx.LeakyRelu") {
    double alpha = cast<onnx::LeakyReluOp>(op).getAlpha().convertToDouble();
    Value scaled = s.mul(s.cst(t, alpha), x);
    return s.sel(s.cmp(FP::OLT, x, s.cst(t, 0)), scaled, x);
  }
  if (name == "onnx.Elu") {
    double alpha = cast<onnx::EluOp>(op).getAlpha().convertToDouble();
    Value expm1 = s.expm1(x);
    Value scaled = s.mul(s.cst(t, alpha), expm1);
    return s.sel(s.cmp(FP::OLT, x, s.cst(t, 0)), scaled, x);
  }
  if (name == "onnx.Selu") {
    auto selu = cast<onnx::SeluOp>(op);
    double alpha = selu.getAlpha().convertToDouble();
    double gamma = selu.getGamma().convertToDouble();
    Value neg = s.mul(s.cst(t, alpha), s.expm1(x));
    return s.mul(s.cst(t, gamma), s.sel(s.cmp(FP::OGT, x, s.cst(t, 0)), x, neg));
  }
  if (name == "onnx.HardSigmoid") {
    auto hs = cast<onnx::HardSigmoidOp>(op);
    Value y = s.add(s.mul(s.cst(t, hs.getAlpha().convertToDouble()), x),
                    s.cst(t, hs.getBeta().convertToDouble()));
    return s.fmax(s.cst(t, 0), s.fmin(s.cst(t, 1), y));
  }
  if (name == "onnx.HardSwish") {
    // x max(0, min(1, x/6 + 1/2)) as x min(max(x + 3, 0), 6) / 6: exact
    // near -3, where x/6 + 1/2 cancels.
    Value y = s.fmin(s.fmax(s.add(x, s.cst(t, 3)), s.cst(t, 0)), s.cst(t, 6));
    return s.div(s.mul(x, y), s.cst(t, 6));
  }
  if (auto gelu = dyn_cast<onnx::GeluOp>(op))
    return geluScalar(s, x, gelu.getApproximate());
  if (auto gelu = dyn_cast<ortc::fused::GeluOp>(op))
    return geluScalar(s, x, gelu.getApproximate());
  if (name == "onnx.Equal" || name == "onnx.Less" || name == "onnx.Greater" ||
      name == "onnx.LessOrEqual" || name == "onnx.GreaterOrEqual") {
    if (isFloat) {
      FP p = llvm::StringSwitch<FP>(name)
                 .Case("onnx.Equal", FP::OEQ)
                 .Case("onnx.Less", FP::OLT)
                 .Case("onnx.Greater", FP::OGT)
                 .Case("onnx.LessOrEqual", FP::OLE)
                 .Default(FP::OGE);
      return s.cmp(p, args[0], args[1]);
    }
    IP p = llvm::StringSwitch<IP>(name)
               .Case("onnx.Equal", IP::eq)
               .Case("onnx.Less", isUnsigned ? IP::ult : IP::slt)
               .Case("onnx.Greater", isUnsigned ? IP::ugt : IP::sgt)
               .Case("onnx.LessOrEqual", isUnsigned ? IP::ule : IP::sle)
               .Default(isUnsigned ? IP::uge : IP::sge);
    return s.icmp(p, args[0], args[1]);
  }
  if (name == "onnx.Not")
    return arith::XOrIOp::create(b, loc, x, s.cst(t, 1));
  if (name == "onnx.And")
    return arith::AndIOp::create(b, loc, args[0], args[1]);
  if (name == "onnx.Or")
    return arith::OrIOp::create(b, loc, args[0], args[1]);
  if (name == "onnx.Xor")
    return arith::XOrIOp::create(b, loc, args[0], args[1]);
  if (name == "onnx.Where")
    return s.sel(args[0], args[1], args[2]);
  if (name == "onnx.Cast")
    return castScalar(s, x, t, resultElem);
  if (name == "onnx.BitCast") {
    // Signless (or f16/bf16 as i16 bits) in, the target's signless (or i16
    // bits) out; a bool is its byte.
    if (resultElem.isSignlessInteger(1))
      return x; // bool to bool
    if (x.getType().isSignlessInteger(1))
      x = arith::ExtUIOp::create(b, loc, b.getI8Type(), x);
    Type target = isHalf(resultElem) ? Type(b.getIntegerType(16))
                  : isa<IntegerType>(resultElem)
                      ? Type(b.getIntegerType(resultElem.getIntOrFloatBitWidth()))
                      : resultElem;
    return x.getType() == target ? x : Value(arith::BitcastOp::create(b, loc, target, x));
  }
  llvm_unreachable("op in kRules without a body");
}

//===----------------------------------------------------------------------===//
// Lowering
//===----------------------------------------------------------------------===//

Value lowerConstant(OpBuilder &b, onnx::ConstantOp op) {
  auto type = cast<RankedTensorType>(op.getType());
  DenseElementsAttr value;
  if (auto v = op.getValueAttr()) {
    if (auto dense = dyn_cast<DenseElementsAttr>(v)) {
      value = dense.getType() == type ? dense : dense.reshape(type);
    } else {
      // A resource: little-endian bytes, i1 one byte each.
      ArrayRef<char> data =
          cast<DenseResourceElementsAttr>(v).getRawHandle().getBlob()->getData();
      if (type.getElementType().isSignlessInteger(1)) {
        SmallVector<bool> bits;
        for (char byte : data)
          bits.push_back(byte != 0);
        value = DenseElementsAttr::get(type, bits);
      } else {
        value = DenseElementsAttr::getFromRawBuffer(type, data);
      }
    }
  } else if (auto f = op.getValueFloatAttr()) {
    value = DenseElementsAttr::get(type, f.getValue());
  } else if (auto fs = op.getValueFloatsAttr()) {
    value = DenseElementsAttr::get(type, fs.asArrayRef());
  } else if (auto i = op.getValueIntAttr()) {
    value = DenseElementsAttr::get(type, i.getValue());
  } else {
    value = DenseElementsAttr::get(type, op.getValueIntsAttr().asArrayRef());
  }
  auto unsignedElem = dyn_cast<IntegerType>(type.getElementType());
  if (!unsignedElem || !unsignedElem.isUnsigned())
    return arith::ConstantOp::create(b, op.getLoc(), type, value);
  // arith wants signless scalars, and fusion folds a splat constant into
  // its consumer's body as a scalar constant: keep the tensor signless and
  // view it as unsigned in a generic of its own.
  Location loc = op.getLoc();
  Type signless = b.getIntegerType(unsignedElem.getWidth());
  auto signlessType = RankedTensorType::get(type.getShape(), signless);
  Value c = arith::ConstantOp::create(b, loc, signlessType, value.bitcast(signless));
  Value init = tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType());
  AffineMap id = b.getMultiDimIdentityMap(type.getRank());
  SmallVector<utils::IteratorType> iterators(type.getRank(), utils::IteratorType::parallel);
  return linalg::GenericOp::create(
             b, loc, TypeRange{type}, ValueRange{c}, ValueRange{init},
             SmallVector<AffineMap>{id, id}, iterators,
             [&](OpBuilder &nb, Location nloc, ValueRange args) {
               Value u = UnrealizedConversionCastOp::create(nb, nloc, type.getElementType(), args[0])
                             .getResult(0);
               linalg::YieldOp::create(nb, nloc, u);
             })
      .getResult(0);
}

Value lowerElementwise(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  int64_t rank = resultType.getRank();
  SmallVector<Value> inputs = dataOperands(op);

  SmallVector<Value> dynSizes;
  for (int64_t p = 0; p < rank; ++p) {
    if (!resultType.isDynamicDim(p))
      continue;
    for (Value in : inputs) {
      auto t = cast<RankedTensorType>(in.getType());
      int64_t q = p - (rank - t.getRank());
      if (q >= 0 && t.isDynamicDim(q)) {
        dynSizes.push_back(tensor::DimOp::create(b, loc, in, q));
        break;
      }
    }
  }
  Value init = tensor::EmptyOp::create(b, loc, resultType.getShape(),
                                       resultType.getElementType(), dynSizes);

  SmallVector<AffineMap> maps;
  SmallVector<Type> inTypes;
  for (Value in : inputs) {
    auto t = cast<RankedTensorType>(in.getType());
    int64_t offset = rank - t.getRank();
    SmallVector<AffineExpr> exprs;
    for (int64_t q = 0; q < t.getRank(); ++q) {
      bool broadcast = t.getDimSize(q) == 1 && resultType.getDimSize(offset + q) != 1;
      exprs.push_back(broadcast ? getAffineConstantExpr(0, b.getContext())
                                : getAffineDimExpr(offset + q, b.getContext()));
    }
    maps.push_back(AffineMap::get(rank, 0, exprs, b.getContext()));
    inTypes.push_back(t.getElementType());
  }
  maps.push_back(b.getMultiDimIdentityMap(rank));
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  Type resultElem = resultType.getElementType();
  // f16/bf16 values are read as i16 bits and widened to f32, and the result
  // rounded back, except where the op only moves values (Where, BitCast, a
  // Cast to the same type): those move the bits.
  bool moves = isa<onnx::WhereOp, onnx::BitCastOp>(op) ||
               (isa<onnx::CastOp>(op) && inTypes[0] == resultElem);
  SmallVector<Type> computeTypes;
  for (Type t : inTypes)
    computeTypes.push_back(moves ? t : computeType(t));

  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange blockArgs) {
        Scalar s{nb, nloc};
        SmallVector<Value> args;
        for (auto [a, t] : llvm::zip(blockArgs.drop_back(), inTypes)) {
          if (!isHalf(t)) {
            args.push_back(s.toSignless(a));
            continue;
          }
          Value bits = arith::BitcastOp::create(nb, nloc, nb.getIntegerType(16), a);
          args.push_back(moves ? bits : widenHalf(s, bits, t));
        }
        Value r = buildBody(s, op, args, computeTypes, resultElem);
        if (isHalf(resultElem)) {
          Value bits = moves ? r : narrowHalf(s, r, resultElem);
          r = arith::BitcastOp::create(nb, nloc, resultElem, bits);
        }
        linalg::YieldOp::create(nb, nloc, s.fromSignless(r, resultElem));
      });
  return generic.getResult(0);
}

//===----------------------------------------------------------------------===//
// Structured ops: Transpose, Reduce{Mean,Sum,Max,Min}, Softmax, LogSoftmax
//===----------------------------------------------------------------------===//

enum class StructKind { Transpose, Reduce, Softmax, LogSoftmax };

/// An integer attribute, or its ODS default when the op does not carry it.
int64_t intAttr(Operation *op, StringRef name, int64_t dflt) {
  auto attr = op->getAttrOfType<IntegerAttr>(name);
  return attr ? attr.getValue().getSExtValue() : dflt;
}

std::optional<StructKind> structKind(Operation *op) {
  if (isa<onnx::TransposeOp>(op))
    return StructKind::Transpose;
  if (isa<onnx::ReduceMeanOp, onnx::ReduceSumOp, onnx::ReduceMaxOp, onnx::ReduceMinOp>(op))
    return StructKind::Reduce;
  if (isa<onnx::SoftmaxOp>(op))
    return StructKind::Softmax;
  if (isa<onnx::LogSoftmaxOp>(op))
    return StructKind::LogSoftmax;
  return std::nullopt;
}

/// The transpose permutation of `op` (default: reversed), or nullopt when
/// it is not a permutation of the input's dims.
std::optional<SmallVector<int64_t>> transposePerm(onnx::TransposeOp op, int64_t rank) {
  SmallVector<int64_t> perm;
  if (auto p = op.getPermAttr())
    perm.assign(p.asArrayRef().begin(), p.asArrayRef().end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if (int64_t(perm.size()) != rank)
    return std::nullopt;
  SmallVector<bool> seen(rank, false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[p])
      return std::nullopt;
    seen[p] = true;
  }
  return perm;
}

/// The reduced dims of a Reduce op as a mask over the input's dims.
std::optional<SmallVector<bool>> reduceMask(Operation *op, int64_t rank, std::string &why) {
  Value axes = op->getOperand(1);
  SmallVector<int64_t> list;
  if (!onnx::isNoValue(axes)) {
    auto type = dyn_cast<RankedTensorType>(axes.getType());
    std::optional<SmallVector<int64_t>> values = ortc::getConstantIntValues(axes);
    if (!values || !type || type.getRank() != 1) {
      why = "axes is not a 1-D integer onnx.Constant";
      return std::nullopt;
    }
    list.assign(values->begin(), values->end());
  }
  if (list.empty() && intAttr(op, "noop_with_empty_axes", 0) != 0) {
    why = "empty axes with noop_with_empty_axes=1";
    return std::nullopt;
  }
  SmallVector<bool> mask(rank, list.empty());
  for (int64_t a : list) {
    if (a < -rank || a >= rank) {
      why = "axis " + std::to_string(a) + " out of range for rank " + std::to_string(rank);
      return std::nullopt;
    }
    if (a < 0)
      a += rank;
    if (mask[a]) {
      why = "axis " + std::to_string(a) + " repeated";
      return std::nullopt;
    }
    mask[a] = true;
  }
  return mask;
}

bool checkStructured(Operation *op, std::string &why) {
  std::optional<StructKind> kind = structKind(op);
  if (!kind) {
    why = "not a transpose, reduction or softmax the kernel lowering takes";
    return false;
  }
  if (op->getNumResults() != 1 || op->getNumOperands() < 1) {
    why = "unexpected number of results or operands";
    return false;
  }
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!in || !out) {
    why = "operand or result is not a ranked tensor";
    return false;
  }
  if (!in.getElementType().isF32() || !out.getElementType().isF32()) {
    why = "element type is not f32";
    return false;
  }
  int64_t rank = in.getRank();
  if (rank < 1) {
    why = "input of rank 0";
    return false;
  }
  SmallVector<int64_t> expected;
  switch (*kind) {
  case StructKind::Transpose: {
    auto perm = transposePerm(cast<onnx::TransposeOp>(op), rank);
    if (!perm) {
      why = "perm is not a permutation of the input's dims";
      return false;
    }
    for (int64_t p : *perm)
      expected.push_back(in.getDimSize(p));
    break;
  }
  case StructKind::Reduce: {
    auto mask = reduceMask(op, rank, why);
    if (!mask)
      return false;
    int64_t keepdims = intAttr(op, "keepdims", 1);
    if (keepdims != 0 && keepdims != 1) {
      why = "keepdims is not 0 or 1";
      return false;
    }
    for (int64_t i = 0; i < rank; ++i) {
      if (!(*mask)[i])
        expected.push_back(in.getDimSize(i));
      else if (keepdims)
        expected.push_back(1);
    }
    break;
  }
  case StructKind::Softmax:
  case StructKind::LogSoftmax: {
    int64_t axis = intAttr(op, "axis", -1);
    if (axis < -rank || axis >= rank) {
      why = "axis " + std::to_string(axis) + " out of range for rank " + std::to_string(rank);
      return false;
    }
    expected.assign(in.getShape().begin(), in.getShape().end());
    break;
  }
  }
  if (out.getShape() != ArrayRef<int64_t>(expected)) {
    why = "result type " + typeText(out) + " is not the shape the op computes";
    return false;
  }
  return true;
}

/// tensor.empty of `type`; a `?` dim i takes its size from dim srcDims[i]
/// of `src`.
Value emptyFrom(OpBuilder &b, Location loc, RankedTensorType type, Value src,
                ArrayRef<int64_t> srcDims) {
  SmallVector<Value> dyn;
  for (int64_t i = 0; i < type.getRank(); ++i)
    if (type.isDynamicDim(i))
      dyn.push_back(tensor::DimOp::create(b, loc, src, srcDims[i]));
  return tensor::EmptyOp::create(b, loc, type.getShape(), type.getElementType(), dyn);
}

using ReduceBody = llvm::function_ref<Value(Scalar &, ValueRange ins, Value acc)>;

/// Reduces over the dims `mask` marks: `inputs[0]` has the full shape, the
/// others have the reduced shape (the full shape without the marked dims)
/// and are read at the same outer position. The result has the reduced
/// shape, starting from `init`.
Value buildReduction(OpBuilder &b, Location loc, ValueRange inputs, ArrayRef<bool> mask,
                     double init, ReduceBody body) {
  auto full = cast<RankedTensorType>(inputs[0].getType());
  int64_t rank = full.getRank();
  SmallVector<int64_t> shape, srcDims;
  SmallVector<AffineExpr> outExprs;
  SmallVector<utils::IteratorType> iterators;
  for (int64_t i = 0; i < rank; ++i) {
    if (mask[i]) {
      iterators.push_back(utils::IteratorType::reduction);
      continue;
    }
    iterators.push_back(utils::IteratorType::parallel);
    shape.push_back(full.getDimSize(i));
    srcDims.push_back(i);
    outExprs.push_back(b.getAffineDimExpr(i));
  }
  Type f32 = b.getF32Type();
  auto type = RankedTensorType::get(shape, f32);
  Value empty = emptyFrom(b, loc, type, inputs[0], srcDims);
  Value initValue = arith::ConstantOp::create(b, loc, f32, b.getFloatAttr(f32, init));
  Value filled = linalg::FillOp::create(b, loc, initValue, empty).getResult(0);
  AffineMap outMap = AffineMap::get(rank, 0, outExprs, b.getContext());
  SmallVector<AffineMap> maps{b.getMultiDimIdentityMap(rank)};
  for (size_t i = 1; i < inputs.size(); ++i)
    maps.push_back(outMap);
  maps.push_back(outMap);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{type}, inputs, ValueRange{filled}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Scalar s{nb, nloc};
        linalg::YieldOp::create(nb, nloc, body(s, args.drop_back(), args.back()));
      });
  return generic.getResult(0);
}

/// An all-parallel generic over the full shape of `inputs[0]`; the others
/// have the reduced shape of `mask` (read at the same outer position).
Value buildBroadcastMap(OpBuilder &b, Location loc, ValueRange inputs, ArrayRef<bool> mask,
                        llvm::function_ref<Value(Scalar &, ValueRange)> body) {
  auto full = cast<RankedTensorType>(inputs[0].getType());
  int64_t rank = full.getRank();
  SmallVector<AffineExpr> outExprs;
  SmallVector<int64_t> srcDims;
  for (int64_t i = 0; i < rank; ++i) {
    srcDims.push_back(i);
    if (!mask[i])
      outExprs.push_back(b.getAffineDimExpr(i));
  }
  Value empty = emptyFrom(b, loc, full, inputs[0], srcDims);
  AffineMap id = b.getMultiDimIdentityMap(rank);
  AffineMap reducedMap = AffineMap::get(rank, 0, outExprs, b.getContext());
  SmallVector<AffineMap> maps{id};
  for (size_t i = 1; i < inputs.size(); ++i)
    maps.push_back(reducedMap);
  maps.push_back(id);
  SmallVector<utils::IteratorType> iterators(rank, utils::IteratorType::parallel);
  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{full}, inputs, ValueRange{empty}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange args) {
        Scalar s{nb, nloc};
        linalg::YieldOp::create(nb, nloc, body(s, args.drop_back()));
      });
  return generic.getResult(0);
}

Value lowerTranspose(OpBuilder &b, onnx::TransposeOp op) {
  Location loc = op.getLoc();
  Value in = op->getOperand(0);
  int64_t rank = cast<RankedTensorType>(in.getType()).getRank();
  SmallVector<int64_t> perm = *transposePerm(op, rank);
  auto type = cast<RankedTensorType>(op->getResult(0).getType());
  Value empty = emptyFrom(b, loc, type, in, perm);
  return linalg::TransposeOp::create(b, loc, in, empty, perm)->getResult(0);
}

Value lowerReduce(OpBuilder &b, Operation *op) {
  Location loc = op->getLoc();
  Value in = op->getOperand(0);
  auto inType = cast<RankedTensorType>(in.getType());
  int64_t rank = inType.getRank();
  std::string why;
  SmallVector<bool> mask = *reduceMask(op, rank, why);
  double inf = std::numeric_limits<double>::infinity();
  Value r;
  if (isa<onnx::ReduceMaxOp>(op))
    r = buildReduction(b, loc, in, mask, -inf,
                       [](Scalar &s, ValueRange x, Value acc) { return s.fmax(acc, x[0]); });
  else if (isa<onnx::ReduceMinOp>(op))
    r = buildReduction(b, loc, in, mask, inf,
                       [](Scalar &s, ValueRange x, Value acc) { return s.fmin(acc, x[0]); });
  else
    r = buildReduction(b, loc, in, mask, 0.0,
                       [](Scalar &s, ValueRange x, Value acc) { return s.add(acc, x[0]); });
  if (isa<onnx::ReduceMeanOp>(op)) {
    // Divide by the number of reduced elements (a `?` dim counts at run time).
    Type f32 = b.getF32Type();
    double staticCount = 1;
    Value dynCount;
    for (int64_t i = 0; i < rank; ++i) {
      if (!mask[i])
        continue;
      if (!inType.isDynamicDim(i)) {
        staticCount *= double(inType.getDimSize(i));
        continue;
      }
      Value d = tensor::DimOp::create(b, loc, in, i);
      Value di = arith::IndexCastOp::create(b, loc, b.getI64Type(), d);
      Value df = arith::SIToFPOp::create(b, loc, f32, di);
      dynCount = dynCount ? Value(arith::MulFOp::create(b, loc, dynCount, df)) : df;
    }
    auto rType = cast<RankedTensorType>(r.getType());
    SmallVector<int64_t> srcDims;
    for (int64_t i = 0; i < rType.getRank(); ++i)
      srcDims.push_back(i);
    Value empty = emptyFrom(b, loc, rType, r, srcDims);
    AffineMap id = b.getMultiDimIdentityMap(rType.getRank());
    SmallVector<utils::IteratorType> iterators(rType.getRank(), utils::IteratorType::parallel);
    r = linalg::GenericOp::create(
            b, loc, TypeRange{rType}, ValueRange{r}, ValueRange{empty},
            SmallVector<AffineMap>{id, id}, iterators,
            [&](OpBuilder &nb, Location nloc, ValueRange args) {
              Scalar s{nb, nloc};
              Value n = s.cst(f32, staticCount);
              if (dynCount)
                n = s.mul(n, dynCount);
              linalg::YieldOp::create(nb, nloc, s.div(args[0], n));
            })
            .getResult(0);
  }
  int64_t keepdims = intAttr(op, "keepdims", 1);
  if (!keepdims)
    return r;
  // keepdims: each kept dim forms a group with the reduced dims after it
  // (leading reduced dims join the first kept dim's group).
  auto resultType = cast<RankedTensorType>(op->getResult(0).getType());
  SmallVector<ReassociationIndices> groups;
  ReassociationIndices current;
  int64_t kept = 0;
  SmallVector<OpFoldResult> outputShape;
  for (int64_t i = 0; i < rank; ++i) {
    current.push_back(i);
    if (mask[i]) {
      outputShape.push_back(b.getIndexAttr(1));
      continue;
    }
    if (resultType.isDynamicDim(i))
      outputShape.push_back(OpFoldResult(tensor::DimOp::create(b, loc, r, kept).getResult()));
    else
      outputShape.push_back(b.getIndexAttr(resultType.getDimSize(i)));
    ++kept;
    groups.push_back(current);
    current.clear();
  }
  if (!current.empty() && !groups.empty())
    groups.back().append(current.begin(), current.end());
  return tensor::ExpandShapeOp::create(b, loc, resultType, r, groups, outputShape);
}

Value lowerSoftmax(OpBuilder &b, Operation *op, bool log) {
  Location loc = op->getLoc();
  Value x = op->getOperand(0);
  int64_t rank = cast<RankedTensorType>(x.getType()).getRank();
  int64_t axis = intAttr(op, "axis", -1);
  if (axis < 0)
    axis += rank;
  SmallVector<bool> mask(rank, false);
  mask[axis] = true;
  double inf = std::numeric_limits<double>::infinity();
  Value mx = buildReduction(b, loc, x, mask, -inf,
                            [](Scalar &s, ValueRange v, Value acc) { return s.fmax(acc, v[0]); });
  if (log) {
    // sum exp(x - max), then x - max - log(sum).
    Value sum = buildReduction(b, loc, ValueRange{x, mx}, mask, 0.0,
                               [](Scalar &s, ValueRange v, Value acc) {
                                 return s.add(acc, s.exp(s.sub(v[0], v[1])));
                               });
    return buildBroadcastMap(b, loc, ValueRange{x, mx, sum}, mask, [](Scalar &s, ValueRange v) {
      Value logSum = math::LogOp::create(s.b, s.loc, v[2]);
      return s.sub(s.sub(v[0], v[1]), logSum);
    });
  }
  Value e = buildBroadcastMap(b, loc, ValueRange{x, mx}, mask,
                              [](Scalar &s, ValueRange v) { return s.exp(s.sub(v[0], v[1])); });
  Value sum = buildReduction(b, loc, e, mask, 0.0,
                             [](Scalar &s, ValueRange v, Value acc) { return s.add(acc, v[0]); });
  return buildBroadcastMap(b, loc, ValueRange{e, sum}, mask,
                           [](Scalar &s, ValueRange v) { return s.div(v[0], v[1]); });
}

Value lowerStructured(OpBuilder &b, Operation *op) {
  switch (*structKind(op)) {
  case StructKind::Transpose:
    return lowerTranspose(b, cast<onnx::TransposeOp>(op));
  case StructKind::Reduce:
    return lowerReduce(b, op);
  case StructKind::Softmax:
    return lowerSoftmax(b, op, /*log=*/false);
  case StructKind::LogSoftmax:
    return lowerSoftmax(b, op, /*log=*/true);
  }
  llvm_unreachable("unknown structured kind");
}

bool isOnnxOrOrtc(Operation *op) {
  Dialect *d = op->getDialect();
  return d && (isa<onnx::OnnxDialect>(d) || isa<ortc::fused::OrtcDialect>(d));
}

/// " (node 'x')" when the location names the node.
std::string nodeSuffix(Location loc) {
  if (auto named = dyn_cast<NameLoc>(loc))
    return " (node '" + named.getName().str() + "')";
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location l : fused.getLocations())
      if (auto named = dyn_cast<NameLoc>(l))
        return " (node '" + named.getName().str() + "')";
  return "";
}

struct OnnxLowerToLinalgPass : ortc::impl::OnnxLowerToLinalgBase<OnnxLowerToLinalgPass> {
  using OnnxLowerToLinalgBase::OnnxLowerToLinalgBase;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    SmallVector<Operation *> ops;
    fn.walk([&](Operation *op) {
      if (isOnnxOrOrtc(op))
        ops.push_back(op);
    });
    IRRewriter rewriter(fn.getContext());
    // Structured ops first: their axes are still onnx.Constant ops.
    // Why each refused one is refused, said now, before its axes constant
    // becomes an arith.constant.
    SmallVector<Operation *> elementwise;
    llvm::DenseMap<Operation *, std::string> refused;
    for (Operation *op : ops) {
      if (!structKind(op)) {
        elementwise.push_back(op);
        continue;
      }
      std::string why;
      if (!ortc::isLowerableStructuredOp(op, &why)) {
        refused[op] = why;
        continue;
      }
      rewriter.setInsertionPoint(op);
      Value replacement = lowerStructured(rewriter, op);
      rewriter.replaceOp(op, replacement);
      ++numLowered;
    }
    for (Operation *op : elementwise) {
      if (isa<onnx::ConstantOp>(op) && op->use_empty())
        continue; // an axes input nobody reads any more
      if (!ortc::isLowerableElementwiseOp(op))
        continue;
      rewriter.setInsertionPoint(op);
      Value replacement;
      if (auto c = dyn_cast<onnx::ConstantOp>(op)) {
        replacement = lowerConstant(rewriter, c);
      } else if (isa<onnx::IdentityOp>(op)) {
        replacement = op->getOperand(0);
        if (replacement.getType() != op->getResult(0).getType())
          replacement = tensor::CastOp::create(rewriter, op->getLoc(),
                                               op->getResult(0).getType(), replacement);
      } else {
        replacement = lowerElementwise(rewriter, op);
      }
      rewriter.replaceOp(op, replacement);
      ++numLowered;
    }
    // Placeholders and constants nobody reads any more.
    SmallVector<Operation *> dead;
    fn.walk([&](Operation *op) {
      if (isa<onnx::NoValueOp, onnx::ConstantOp>(op) && op->use_empty())
        dead.push_back(op);
    });
    for (Operation *op : dead)
      rewriter.eraseOp(op);
    if (!failOnUnlowered)
      return;
    bool failedAny = false;
    fn.walk([&](Operation *op) {
      if (!isOnnxOrOrtc(op) || isa<onnx::NoValueOp>(op))
        return; // a placeholder; the op that reads it is reported
      std::string why;
      if (structKind(op))
        why = refused.lookup(op);
      else
        ortc::isLowerableElementwiseOp(op, &why);
      op->emitError() << "kernel lowering: cannot lower '" << op->getName() << "'"
                      << nodeSuffix(op->getLoc()) << ": " << why;
      failedAny = true;
    });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace

bool ortc::isLowerableElementwiseOp(Operation *op, std::string *why) {
  Refusal reason;
  bool ok = check(op, reason);
  if (!ok && why)
    *why = reason.why;
  return ok;
}

bool ortc::explainElementwiseRefusal(Operation *op, ElementwiseRefusal &out) {
  if (!findRule(op->getName().getStringRef()))
    return false;
  Refusal reason;
  if (check(op, reason))
    return false;
  out.kind = reason.kind;
  out.rejected = reason.why;
  out.accepts = reason.accepts;
  return true;
}

bool ortc::isLowerableElementwiseOp(Operation *op) {
  return isLowerableElementwiseOp(op, nullptr);
}

bool ortc::isLowerableStructuredOp(Operation *op, std::string *why) {
  std::string reason;
  bool ok = checkStructured(op, reason);
  if (!ok && why)
    *why = reason;
  return ok;
}

std::optional<SmallVector<int64_t>> ortc::transposePermutation(Operation *op) {
  auto transpose = dyn_cast<onnx::TransposeOp>(op);
  auto type = transpose ? dyn_cast<RankedTensorType>(op->getOperand(0).getType()) : nullptr;
  if (!type)
    return std::nullopt;
  return transposePerm(transpose, type.getRank());
}

bool ortc::isLowerableStructuredOp(Operation *op) {
  return isLowerableStructuredOp(op, nullptr);
}

std::vector<std::string> ortc::elementwiseOpNames() {
  std::vector<std::string> names;
  for (const Rule &rule : kRules)
    names.push_back(rule.name.str());
  return names;
}

bool ortc::readsInputDimsAsOutputs(Operation *op) {
  return isLowerableElementwiseOp(op) && !isa<onnx::SwiGLUOp, onnx::BitCastOp>(op);
}

std::string ortc::AssumedEqualDims::describe(Operation *op, const SymbolicShapes &shapes) const {
  std::string node = "<" + op->getName().getStringRef().str() + ">";
  if (auto named = dyn_cast<NameLoc>(op->getLoc()))
    node = named.getName().str();
  return "node '" + node + "' input " + std::to_string(operand) + " dim " +
         std::to_string(inputDim) + " (" + shapes.print(input) + ") and output dim " +
         std::to_string(outputDim) + " (" + shapes.print(output) + ")";
}

std::vector<ortc::AssumedEqualDims> ortc::assumedEqualDims(Operation *op,
                                                           const SymbolicShapes &shapes) {
  std::vector<AssumedEqualDims> out;
  if (!readsInputDimsAsOutputs(op) || op->getNumResults() != 1)
    return out;
  const SmallVector<int32_t> *result = shapes.dims(op->getResult(0));
  if (!result)
    return out;
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    const SmallVector<int32_t> *in = shapes.dims(operand);
    auto type = dyn_cast<RankedTensorType>(operand.getType());
    if (!in || !type || in->size() > result->size())
      continue;
    size_t offset = result->size() - in->size();
    for (size_t d = 0; d < in->size(); ++d) {
      int32_t x = (*in)[d], y = (*result)[offset + d];
      // Equal expressions, or a 1 in the type, which the kernel broadcasts.
      if (x == y || type.getDimSize(int64_t(d)) == 1 || x == kUnknownDim || y == kUnknownDim)
        continue;
      out.push_back(AssumedEqualDims{unsigned(i), d, offset + d, x, y});
    }
  }
  return out;
}

std::optional<SmallVector<bool>> ortc::reduceAxesMask(Operation *op, std::string &why) {
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  if (!in || op->getNumOperands() < 2) {
    why = "not a Reduce op over a ranked tensor with an axes input";
    return std::nullopt;
  }
  return reduceMask(op, in.getRank(), why);
}
