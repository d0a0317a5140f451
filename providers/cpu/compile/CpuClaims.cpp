//===- CpuClaims.cpp - what the CPU EP runs, and how ----------------------===//
//
// The library kernels' accepted inputs and attributes are listed in
// providers/cpu/kernels/README.md; the checks here follow that table.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/CpuClaims.h"

#include "compiler/Transforms/ConstantValues.h"
#include "providers/cpu/compile/LowerToLinalg.h"

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
  if (op->getName().getStringRef() == "onnx.AveragePool")
    if (auto dilations = op->getAttrOfType<DenseI64ArrayAttr>("dilations"))
      if (llvm::any_of(dilations.asArrayRef(), [](int64_t d) { return d != 1; }))
        return refuse(RejectedKind::Attribute, "dilations other than 1",
                      "AveragePool without dilation");
  return {};
}

Refusal checkReduce(Operation *op) {
  if (auto r = requireF32(op, {0}); r.any())
    return r;
  return requireConstant(op, 1, "axes");
}

//===----------------------------------------------------------------------===//
// ONNX Attention (OnnxAttention) and RotaryEmbedding: what OnnxAttentionKernels
// checks, on the static dims (a dynamic batch is checked at run time).
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
  auto qs = q.getShape(), ks = k.getShape(), vs = v.getShape();
  int64_t B = qs[0], Hq, Hkv, Sq, Skv, D, Dv;
  auto misfit = [&](const char *accepts) {
    return refuse(RejectedKind::Shape,
                  "Q, K, V are " + shapeText(Q) + ", " + shapeText(K) + ", " + shapeText(V),
                  accepts);
  };
  if (rank == 4) {
    Hq = qs[1], Sq = qs[2], D = qs[3], Hkv = ks[1], Skv = ks[2], Dv = vs[3];
    if (!dimFits(ks[0], B) || !dimFits(vs[0], B) || ks[3] != D || vs[1] != Hkv || vs[2] != Skv)
      return misfit("[B,Hq,Sq,D], [B,Hkv,Skv,D], [B,Hkv,Skv,Dv]");
    if ((op->getAttr("q_num_heads") && intAttr(op, "q_num_heads", 0) != Hq) ||
        (op->getAttr("kv_num_heads") && intAttr(op, "kv_num_heads", 0) != Hkv))
      return refuse(RejectedKind::Attribute,
                    "q_num_heads / kv_num_heads disagree with the 4-D Q and K",
                    "4-D inputs without head counts (or with the inputs' own)");
  } else {
    Hq = intAttr(op, "q_num_heads", 0), Hkv = intAttr(op, "kv_num_heads", 0);
    if (Hq <= 0 || Hkv <= 0)
      return refuse(RejectedKind::Attribute, "3-D inputs without q_num_heads and kv_num_heads",
                    "3-D inputs with q_num_heads and kv_num_heads > 0");
    Sq = qs[1], Skv = ks[1];
    if (qs[2] % Hq || vs[2] % Hkv)
      return misfit("hidden sizes that are multiples of q_num_heads / kv_num_heads");
    D = qs[2] / Hq, Dv = vs[2] / Hkv;
    if (!dimFits(ks[0], B) || !dimFits(vs[0], B) || vs[1] != Skv || ks[2] != Hkv * D)
      return misfit("[B,Sq,Hq*D], [B,Skv,Hkv*D], [B,Skv,Hkv*Dv]");
  }
  if (Hkv <= 0 || Hq % Hkv)
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
        !dimFits(pv.getShape()[0], B) || pk.getShape()[1] != Hkv || pv.getShape()[1] != Hkv ||
        pk.getShape()[3] != D || pv.getShape()[3] != Dv || pk.getShape()[2] != pv.getShape()[2])
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
  int64_t T = P + Skv;
  if (!isOmitted(mask)) {
    auto m = rankedType(mask);
    auto ms = m.getShape();
    // Only a leading dim of a 4-D mask lines up with the batch.
    for (int64_t d = 0; d < m.getRank(); ++d)
      if (ShapedType::isDynamic(ms[d]) && !(d == 0 && m.getRank() == 4))
        return refuse(RejectedKind::Shape, "attn_mask " + shapeText(mask),
                      "an attn_mask whose only dynamic dim is the batch of a 4-D mask");
    int64_t M = m.getRank() ? ms.back() : 0;
    if (m.getRank() < 1 || m.getRank() > 4 || M > T || (M == 1 && T > 1))
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
  SmallVector<SmallVector<int64_t>> expect = {rank == 4 ? SmallVector<int64_t>{B, Hq, Sq, Dv}
                                                        : SmallVector<int64_t>{B, Sq, Hq * Dv},
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
    if (H <= 0 || x.getShape()[2] % H)
      return refuse(RejectedKind::Attribute,
                    "3-D X " + shapeText(X) + " with num_heads " + std::to_string(H),
                    "3-D X with num_heads > 0 dividing its last dim");
    S = x.getShape()[1], Dh = x.getShape()[2] / H;
  } else {
    return refuse(RejectedKind::Shape, "X is " + shapeText(X), "3-D or 4-D X");
  }
  int64_t rd = intAttr(op, "rotary_embedding_dim", 0);
  if (rd == 0)
    rd = Dh;
  if (rd < 0 || rd > Dh || rd % 2)
    return refuse(RejectedKind::Attribute, "rotary_embedding_dim " + std::to_string(rd),
                  "an even rotary_embedding_dim up to the head size " + std::to_string(Dh));
  int64_t interleaved = intAttr(op, "interleaved", 0);
  if (interleaved != 0 && interleaved != 1)
    return refuse(RejectedKind::Attribute, "interleaved " + std::to_string(interleaved),
                  "interleaved 0 or 1");
  auto c = rankedType(cosC), s = rankedType(sinC);
  bool fits = c.getShape() == s.getShape();
  if (!isOmitted(pos) && c.getRank() == 2 && ShapedType::isDynamic(c.getShape()[0]))
    return refuse(RejectedKind::Shape, "cos_cache " + shapeText(cosC),
                  "caches with a static max_position");
  if (!isOmitted(pos)) {
    auto p = rankedType(pos);
    fits = fits && c.getRank() == 2 && c.getShape()[1] == rd / 2 && p.getRank() == 2 &&
           dimFits(p.getShape()[0], B) && p.getShape()[1] == S;
  } else {
    fits = fits && c.getRank() == 3 && dimFits(c.getShape()[0], B) && c.getShape()[1] == S &&
           c.getShape()[2] == rd / 2;
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
          return requireUnusedResultsAfter(op, 1);
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
      {"Attention", {"OnnxAttention", onnx_attention::checkOnnxAttention}},
      {"RotaryEmbedding", {"RotaryEmbedding", onnx_attention::checkRotaryEmbedding}},
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
