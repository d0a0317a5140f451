//===- LowerToLinalg.cpp - cpu-lower-to-linalg ----------------------------===//
//
// onnx/ortc elementwise ops to linalg.generic on tensors, and the predicate
// the CPU EP claims with (LowerToLinalg.h). One table, kRules, says which op
// is which kind and which element types it takes; the predicate and the
// lowering both read it, so they cannot disagree.
//
// Broadcasting: the result's shape is the iteration space. An input of rank
// r aligns with the result's last r dims; its map reads d_p for a dim that
// matches and the constant 0 for a size-1 dim that broadcasts. A `?` result
// dim takes its size from `tensor.dim` of an input with `?` at the same
// position (the kernels' `?` is one batch value, so `?` never broadcasts).
//
// Unsigned (ui8) values: arith works on signless integers, so a body converts
// ui8 block arguments to i8 with builtin.unrealized_conversion_cast and back
// for a ui8 result; the casts cancel in the LLVM conversion. Such generics
// are not vectorized (cpu-tile-and-vectorize lowers them to loops).
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

#include "providers/cpu/compile/LowerToLinalg.h"
#include "providers/cpu/compile/Passes.h"

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

namespace ortc::cpu {
#define GEN_PASS_DEF_CPULOWERTOLINALG
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

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
  kFloat = kF32 | kF64,
  kSigned = kI8 | kI32 | kI64,
  kInt = kSigned | kU8,
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
  Clip,     // input, optional min and max of the result's type
  Pow,      // float base (the result's type), numeric exponent
  Mod,      // two inputs and the result of one type; floats need fmod=1
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
    {"onnx.Pow", Kind::Pow, kFloat},
    {"onnx.Sqrt", Kind::Unary, kFloat},
    {"onnx.Exp", Kind::Unary, kFloat},
    {"onnx.Log", Kind::Unary, kFloat},
    {"onnx.Neg", Kind::Unary, kFloat | kSigned},
    {"onnx.Abs", Kind::Unary, kNumeric},
    {"onnx.Reciprocal", Kind::Unary, kFloat},
    {"onnx.Floor", Kind::Unary, kFloat},
    {"onnx.Ceil", Kind::Unary, kFloat},
    {"onnx.Relu", Kind::Unary, kFloat | kSigned},
    {"onnx.LeakyRelu", Kind::Unary, kFloat},
    {"onnx.Elu", Kind::Unary, kFloat},
    {"onnx.Selu", Kind::Unary, kFloat},
    {"onnx.Sigmoid", Kind::Unary, kFloat},
    {"onnx.HardSigmoid", Kind::Unary, kFloat},
    {"onnx.HardSwish", Kind::Unary, kFloat},
    {"onnx.Softplus", Kind::Unary, kFloat},
    {"onnx.Tanh", Kind::Unary, kFloat},
    {"onnx.Erf", Kind::Unary, kFloat},
    {"onnx.Sin", Kind::Unary, kFloat},
    {"onnx.Cos", Kind::Unary, kFloat},
    {"onnx.Gelu", Kind::Unary, kFloat},
    {"ortc.gelu", Kind::Unary, kFloat},
    {"onnx.Clip", Kind::Clip, kNumeric},
    {"onnx.Max", Kind::Variadic, kNumeric},
    {"onnx.Min", Kind::Variadic, kNumeric},
    {"onnx.Sum", Kind::Variadic, kNumeric},
    {"onnx.Mean", Kind::Variadic, kFloat},
    {"onnx.Mod", Kind::Mod, kNumeric},
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
  if (t.isSignlessInteger(1))
    return kBool;
  if (t.isSignlessInteger(8))
    return kI8;
  if (t.isSignlessInteger(32))
    return kI32;
  if (t.isSignlessInteger(64))
    return kI64;
  if (t.isUnsignedInteger(8))
    return kU8;
  return 0;
}

std::string typeSetText(unsigned set) {
  static const std::pair<unsigned, const char *> names[] = {
      {kF32, "f32"}, {kF64, "f64"}, {kI8, "i8"},  {kI32, "i32"},
      {kI64, "i64"}, {kU8, "ui8"},  {kBool, "i1"}};
  std::string out;
  for (auto [bit, name] : names)
    if (set & bit)
      out += (out.empty() ? "" : ", ") + std::string(name);
  return out;
}

std::string typeText(Type t) {
  std::string s;
  llvm::raw_string_ostream os(s);
  t.print(os);
  return s;
}

/// The element type ONNX's Cast `to` code names, among the supported ones.
Type castTarget(MLIRContext *ctx, int64_t to) {
  Builder b(ctx);
  switch (to) {
  case 1:
    return b.getF32Type();
  case 2:
    return IntegerType::get(ctx, 8, IntegerType::Unsigned);
  case 3:
    return b.getIntegerType(8);
  case 6:
    return b.getI32Type();
  case 7:
    return b.getI64Type();
  case 9:
    return b.getI1Type();
  case 11:
    return b.getF64Type();
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

/// numpy broadcasting of `in` to `out` under the kernels' `?` rule.
bool broadcasts(RankedTensorType in, RankedTensorType out, std::string &why) {
  int64_t offset = out.getRank() - in.getRank();
  if (offset < 0) {
    why = "has rank " + std::to_string(in.getRank()) + ", more than the result's " +
          std::to_string(out.getRank());
    return false;
  }
  for (int64_t i = 0; i < in.getRank(); ++i) {
    int64_t id = in.getDimSize(i), od = out.getDimSize(offset + i);
    if (ShapedType::isDynamic(id)) {
      if (!ShapedType::isDynamic(od)) {
        why = "has ? at dim " + std::to_string(i) + " where the result has " + std::to_string(od);
        return false;
      }
      continue;
    }
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

bool check(Operation *op, std::string &why) {
  StringRef name = op->getName().getStringRef();
  const Rule *rule = findRule(name);
  if (!rule) {
    why = "not an elementwise op the CPU kernels lower";
    return false;
  }
  if (op->getNumResults() != 1) {
    why = "expected one result";
    return false;
  }
  auto resultType = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!resultType) {
    why = "result type " + typeText(op->getResult(0).getType()) + " is not a ranked tensor";
    return false;
  }
  Type resultElem = resultType.getElementType();
  if (!typeBit(resultElem)) {
    why = "result element type " + typeText(resultElem) + " is not one of " +
          typeSetText(kAll);
    return false;
  }
  if (rule->kind == Kind::Constant) {
    if (!(typeBit(resultElem) & rule->types)) {
      why = "constant of element type " + typeText(resultElem);
      return false;
    }
    return checkConstant(op, resultType, why);
  }

  SmallVector<Value> inputs = dataOperands(op);
  size_t arity = inputs.size();
  bool arityOk = true;
  switch (rule->kind) {
  case Kind::Unary:
  case Kind::Cast:
  case Kind::Identity:
    arityOk = arity == 1;
    break;
  case Kind::Binary:
  case Kind::Compare:
  case Kind::Pow:
  case Kind::Mod:
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
  if (!arityOk) {
    why = "unexpected number of inputs (" + std::to_string(arity) + ")";
    return false;
  }

  SmallVector<RankedTensorType> types;
  for (auto [i, v] : llvm::enumerate(inputs)) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t) {
      why = "operand " + std::to_string(i) + " of type " + typeText(v.getType()) +
            " is not a ranked tensor";
      return false;
    }
    if (!typeBit(t.getElementType())) {
      why = "element type " + typeText(t.getElementType()) + " of operand " +
            std::to_string(i) + " is not one of " + typeSetText(kAll);
      return false;
    }
    std::string bwhy;
    if (rule->kind == Kind::Identity) {
      if (failed(verifyCompatibleShape(t.getShape(), resultType.getShape()))) {
        why = "input shape does not match the result's";
        return false;
      }
    } else if (!broadcasts(t, resultType, bwhy)) {
      why = "operand " + std::to_string(i) + " " + bwhy;
      return false;
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
    if (!found) {
      why = "result dim " + std::to_string(p) + " is ? but no input has ? there";
      return false;
    }
  }

  auto needType = [&](Type t, unsigned set, const Twine &what) {
    if (typeBit(t) & set)
      return true;
    why = (what + " has element type " + typeText(t) + "; " + name + " takes " +
           typeSetText(set))
              .str();
    return false;
  };
  auto needSame = [&](Type t, const Twine &what) {
    if (t == resultElem)
      return true;
    why = (what + " has element type " + typeText(t) + ", the result " + typeText(resultElem))
              .str();
    return false;
  };

  switch (rule->kind) {
  case Kind::Unary:
  case Kind::Binary:
  case Kind::Variadic:
  case Kind::Identity:
  case Kind::Clip:
  case Kind::Mod:
    for (auto [i, t] : llvm::enumerate(types))
      if (!needType(t.getElementType(), rule->types, "operand " + Twine(i)) ||
          !needSame(t.getElementType(), "operand " + Twine(i)))
        return false;
    break;
  case Kind::Compare:
    if (!needType(types[0].getElementType(), rule->types, "operand 0"))
      return false;
    if (types[1].getElementType() != types[0].getElementType()) {
      why = "operands have different element types";
      return false;
    }
    if (!resultElem.isSignlessInteger(1)) {
      why = "result element type is not i1";
      return false;
    }
    break;
  case Kind::Where:
    if (!types[0].getElementType().isSignlessInteger(1)) {
      why = "condition element type is not i1";
      return false;
    }
    if (!needSame(types[1].getElementType(), "operand 1") ||
        !needSame(types[2].getElementType(), "operand 2"))
      return false;
    break;
  case Kind::Cast: {
    auto to = op->getAttrOfType<IntegerAttr>("to");
    Type target = to ? castTarget(op->getContext(), to.getInt()) : Type();
    if (!target) {
      why = "Cast to ONNX type " + (to ? std::to_string(to.getInt()) : std::string("?")) +
            "; takes " + typeSetText(kAll);
      return false;
    }
    if (target != resultElem) {
      why = "Cast 'to' does not match the result element type";
      return false;
    }
    break;
  }
  case Kind::Pow:
    if (!needType(types[0].getElementType(), kFloat, "base") ||
        !needSame(types[0].getElementType(), "base") ||
        !needType(types[1].getElementType(), kNumeric, "exponent"))
      return false;
    break;
  case Kind::Constant:
    break;
  }

  // Attributes.
  if (auto mod = dyn_cast<onnx::ModOp>(op)) {
    if (isa<FloatType>(resultElem) && mod.getFmod() != 1) {
      why = "Mod of floats needs fmod=1";
      return false;
    }
    if (mod.getFmod() > 1) {
      why = "Mod fmod is not 0 or 1";
      return false;
    }
  }
  StringRef approximate;
  if (auto gelu = dyn_cast<onnx::GeluOp>(op))
    approximate = gelu.getApproximate();
  else if (auto gelu = dyn_cast<ortc::fused::GeluOp>(op))
    approximate = gelu.getApproximate();
  if ((isa<onnx::GeluOp, ortc::fused::GeluOp>(op)) && approximate != "none" &&
      approximate != "tanh") {
    why = "Gelu approximate='" + approximate.str() + "' (takes none or tanh)";
    return false;
  }
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

/// Cast a signless scalar `v` whose ONNX type is `from` to ONNX type `to`
/// (returned signless).
Value castScalar(Scalar &s, Value v, Type from, Type to) {
  if (from == to)
    return v;
  OpBuilder &b = s.b;
  Location loc = s.loc;
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
    // Toward zero. Narrow targets go through i32 and wrap, as C on x86 does.
    unsigned width = to.getIntOrFloatBitWidth();
    if (width < 32) {
      Value wide = arith::FPToSIOp::create(b, loc, b.getI32Type(), v);
      return arith::TruncIOp::create(b, loc, sTo, wide);
    }
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
  return s.mul(s.mul(s.cst(t, 0.5), x), math::ErfcOp::create(s.b, s.loc, arg));
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
  Type t = types.empty() ? resultElem : types[0];
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
    if (isFloat)
      return arith::RemFOp::create(b, loc, args[0], args[1]);
    return intMod(s, args[0], args[1], isUnsigned, cast<onnx::ModOp>(op).getFmod() == 1);
  }
  if (name == "onnx.Pow") {
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
  if (name == "onnx.Sigmoid")
    return s.div(s.cst(t, 1), s.add(s.cst(t, 1), s.exp(arith::NegFOp::create(b, loc, x))));
  if (name == "onnx.Softplus") {
    // max(x, 0) + log1p(exp(-|x|)): no overflow for large x.
    Value negAbs = arith::NegFOp::create(b, loc, math::AbsFOp::create(b, loc, x));
    Value tail = math::Log1pOp::create(b, loc, s.exp(negAbs));
    return s.add(s.fmax(x, s.cst(t, 0)), tail);
  }
  if (name == "onnx.LeakyRelu") {
    double alpha = cast<onnx::LeakyReluOp>(op).getAlpha().convertToDouble();
    return s.sel(s.cmp(FP::OLT, x, s.cst(t, 0)), s.mul(s.cst(t, alpha), x), x);
  }
  if (name == "onnx.Elu") {
    double alpha = cast<onnx::EluOp>(op).getAlpha().convertToDouble();
    return s.sel(s.cmp(FP::OLT, x, s.cst(t, 0)), s.mul(s.cst(t, alpha), s.expm1(x)), x);
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
  return arith::ConstantOp::create(b, op.getLoc(), type, value);
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

  auto generic = linalg::GenericOp::create(
      b, loc, TypeRange{resultType}, inputs, ValueRange{init}, maps, iterators,
      [&](OpBuilder &nb, Location nloc, ValueRange blockArgs) {
        Scalar s{nb, nloc};
        SmallVector<Value> args;
        for (Value a : blockArgs.drop_back())
          args.push_back(s.toSignless(a));
        Value r = buildBody(s, op, args, inTypes, resultElem);
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
    auto c = axes.getDefiningOp<onnx::ConstantOp>();
    auto dense = c ? dyn_cast_or_null<DenseIntElementsAttr>(c.getValueAttr()) : nullptr;
    if (!dense || !dense.getElementType().isSignlessInteger(64) ||
        dense.getType().getRank() != 1) {
      why = "axes is not a 1-D i64 onnx.Constant with a dense value";
      return std::nullopt;
    }
    for (const APInt &v : dense.getValues<APInt>())
      list.push_back(v.getSExtValue());
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
    why = "not a transpose, reduction or softmax the CPU kernels lower";
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
      return s.sub(s.sub(v[0], v[1]), math::LogOp::create(s.b, s.loc, v[2]));
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

struct CpuLowerToLinalgPass : ortc::cpu::impl::CpuLowerToLinalgBase<CpuLowerToLinalgPass> {
  using CpuLowerToLinalgBase::CpuLowerToLinalgBase;

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
      if (!ortc::cpu::isLowerableStructuredOp(op, &why)) {
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
      if (!ortc::cpu::isLowerableElementwiseOp(op))
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
        ortc::cpu::isLowerableElementwiseOp(op, &why);
      op->emitError() << "cpu kernel lowering: cannot lower '" << op->getName() << "'"
                      << nodeSuffix(op->getLoc()) << ": " << why;
      failedAny = true;
    });
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace

bool ortc::cpu::isLowerableElementwiseOp(Operation *op, std::string *why) {
  std::string reason;
  bool ok = check(op, reason);
  if (!ok && why)
    *why = reason;
  return ok;
}

bool ortc::cpu::isLowerableElementwiseOp(Operation *op) {
  return isLowerableElementwiseOp(op, nullptr);
}

bool ortc::cpu::isLowerableStructuredOp(Operation *op, std::string *why) {
  std::string reason;
  bool ok = checkStructured(op, reason);
  if (!ok && why)
    *why = reason;
  return ok;
}

bool ortc::cpu::isLowerableStructuredOp(Operation *op) {
  return isLowerableStructuredOp(op, nullptr);
}

std::vector<std::string> ortc::cpu::elementwiseOpNames() {
  std::vector<std::string> names;
  for (const Rule &rule : kRules)
    names.push_back(rule.name.str());
  return names;
}
