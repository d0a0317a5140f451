//===- OnnxAttentionKernels.cpp - ONNX Attention-23..25, RotaryEmbedding-23 ===//
//
// The ONNX operators (not ortc's fused `attention`, which is the `Attention`
// kernel in NormalizationKernels.cpp). Inputs and outputs are float32,
// float16 or bfloat16; every value is widened to float32 on load and rounded
// once on store, so the arithmetic is float32 whatever the storage type (the
// softmax is float64 when softmax_precision asks for DOUBLE).
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/NumericTypes.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

namespace ortc::cpu::kernels {

namespace {

//===----------------------------------------------------------------------===//
// float16 / bfloat16 storage (conversions in NumericTypes.h)
//===----------------------------------------------------------------------===//

bool isComputeFloat(ElementType t) {
  return t == ElementType::Float || t == ElementType::Float16 || t == ElementType::BFloat16;
}

/// n elements of `t` from element `offset` on, widened to float32.
void loadFloats(const TensorView &t, int64_t offset, int64_t n, float *dst) {
  switch (t.type) {
  case ElementType::Float:
    std::memcpy(dst, static_cast<const float *>(t.data) + offset, size_t(n) * sizeof(float));
    return;
  case ElementType::Float16: {
    const uint16_t *p = static_cast<const uint16_t *>(t.data) + offset;
    for (int64_t i = 0; i < n; ++i)
      dst[i] = halfToFloat(p[i]);
    return;
  }
  case ElementType::BFloat16: {
    const uint16_t *p = static_cast<const uint16_t *>(t.data) + offset;
    for (int64_t i = 0; i < n; ++i)
      dst[i] = bf16ToFloat(p[i]);
    return;
  }
  default:
    return; // callers check isComputeFloat first
  }
}

/// n float32 values into `t` from element `offset` on, rounded to its type.
void storeFloats(const float *src, int64_t n, const TensorView &t, int64_t offset) {
  switch (t.type) {
  case ElementType::Float:
    std::memcpy(static_cast<float *>(t.data) + offset, src, size_t(n) * sizeof(float));
    return;
  case ElementType::Float16: {
    uint16_t *p = static_cast<uint16_t *>(t.data) + offset;
    for (int64_t i = 0; i < n; ++i)
      p[i] = floatToHalf(src[i]);
    return;
  }
  case ElementType::BFloat16: {
    uint16_t *p = static_cast<uint16_t *>(t.data) + offset;
    for (int64_t i = 0; i < n; ++i)
      p[i] = floatToBf16(src[i]);
    return;
  }
  default:
    return;
  }
}

//===----------------------------------------------------------------------===//
// Outputs by ONNX index
//===----------------------------------------------------------------------===//

/// The output the ONNX node has at `index`, or nullptr when the node leaves it
/// out. A step whose node leaves out an output before a present one carries
/// `output_slots`: the ONNX index of each of its outputs, in order.
const TensorView *onnxOutput(const KernelCall &call, int64_t index) {
  std::vector<int64_t> slots = call.attrs.getInts("output_slots");
  size_t at = size_t(index);
  if (!slots.empty()) {
    auto it = std::find(slots.begin(), slots.end(), index);
    if (it == slots.end())
      return nullptr;
    at = size_t(it - slots.begin());
  }
  if (at >= call.numOutputs || !call.outputs[at].data)
    return nullptr;
  return &call.outputs[at];
}

std::string dims(const TensorView &t) { return shapeToString(t.shape); }

Status requireType(const char *op, const TensorView *t, const char *role, ElementType type) {
  if (t && t->type != type)
    return invalid(op, std::string(role) + " must be " + elementTypeName(type) + " like the " +
                           "tensors it goes with, got " + elementTypeName(t->type));
  return Status::ok();
}

constexpr float kNegInf = -std::numeric_limits<float>::infinity();

} // namespace

//===----------------------------------------------------------------------===//
// Attention (ONNX, opset 23..25)
//===----------------------------------------------------------------------===//

Status onnxAttention(const KernelCall &call) {
  const char *op = "OnnxAttention";
  const TensorView *Q = call.input(0), *K = call.input(1), *V = call.input(2);
  const TensorView *mask = dataInput(call, 3);
  const TensorView *pastK = dataInput(call, 4), *pastV = dataInput(call, 5);
  const TensorView *nonpad = dataInput(call, 6);
  const TensorView *Y = onnxOutput(call, 0), *presentK = onnxOutput(call, 1),
                   *presentV = onnxOutput(call, 2), *qkOut = onnxOutput(call, 3);
  if (!Q || !K || !V)
    return invalid(op, "missing input Q, K or V");
  if (!Y)
    return invalid(op, "missing output Y");

  // Element types: T1 for Q, K, past_key, Y, present_key, qk_matmul_output;
  // T2 for V, past_value, present_value.
  ElementType t1 = Q->type, t2 = V->type;
  if (!isComputeFloat(t1))
    return invalid(op, "input Q must be float32, float16 or bfloat16, got " + elementTypeName(t1));
  if (!isComputeFloat(t2))
    return invalid(op, "input V must be float32, float16 or bfloat16, got " + elementTypeName(t2));
  for (auto [t, role] : {std::pair{K, "input K"},
                         {pastK, "input past_key"},
                         {Y, "output Y"},
                         {presentK, "output present_key"},
                         {qkOut, "output qk_matmul_output"}})
    if (Status s = requireType(op, t, role, t1); !s.isOk())
      return s;
  for (auto [t, role] : {std::pair{pastV, "input past_value"}, {presentV, "output present_value"}})
    if (Status s = requireType(op, t, role, t2); !s.isOk())
      return s;
  bool boolMask = mask && mask->type == ElementType::Bool;
  if (mask && !boolMask && mask->type != t1)
    return invalid(op, "input attn_mask must be bool or " + elementTypeName(t1) + " like Q, got " +
                           elementTypeName(mask->type));
  if (nonpad && nonpad->type != ElementType::Int64)
    return invalid(op,
                   "input nonpad_kv_seqlen must be int64, got " + elementTypeName(nonpad->type));

  // Shapes.
  size_t rank = Q->shape.size();
  if ((rank != 3 && rank != 4) || K->shape.size() != rank || V->shape.size() != rank)
    return invalid(op, "Q, K, V must all be 3-D or all 4-D, got " + dims(*Q) + ", " + dims(*K) +
                           ", " + dims(*V));
  const StepAttributes &at = call.attrs;
  int64_t B = Q->shape[0], Hq, Hkv, Sq, Skv, D, Dv;
  if (rank == 4) {
    Hq = Q->shape[1], Sq = Q->shape[2], D = Q->shape[3];
    Hkv = K->shape[1], Skv = K->shape[2], Dv = V->shape[3];
    if (K->shape[0] != B || K->shape[3] != D || V->shape[0] != B || V->shape[1] != Hkv ||
        V->shape[2] != Skv)
      return invalid(op, "Q " + dims(*Q) + ", K " + dims(*K) + ", V " + dims(*V) +
                             " do not fit [B,Hq,Sq,D], [B,Hkv,Skv,D], [B,Hkv,Skv,Dv]");
    if ((at.has("q_num_heads") && at.getInt("q_num_heads", 0) != Hq) ||
        (at.has("kv_num_heads") && at.getInt("kv_num_heads", 0) != Hkv))
      return invalid(op, "q_num_heads / kv_num_heads disagree with the 4-D Q " + dims(*Q) +
                             " and K " + dims(*K));
  } else {
    Hq = at.getInt("q_num_heads", 0), Hkv = at.getInt("kv_num_heads", 0);
    if (Hq <= 0 || Hkv <= 0)
      return invalid(op, "3-D inputs need q_num_heads and kv_num_heads > 0");
    Sq = Q->shape[1], Skv = K->shape[1];
    if (Q->shape[2] % Hq || V->shape[2] % Hkv)
      return invalid(op, "hidden sizes of Q " + dims(*Q) + " and V " + dims(*V) +
                             " are not multiples of q_num_heads / kv_num_heads");
    D = Q->shape[2] / Hq, Dv = V->shape[2] / Hkv;
    if (K->shape[0] != B || V->shape[0] != B || V->shape[1] != Skv || K->shape[2] != Hkv * D)
      return invalid(op, "Q " + dims(*Q) + ", K " + dims(*K) + ", V " + dims(*V) +
                             " do not fit [B,Sq,Hq*D], [B,Skv,Hkv*D], [B,Skv,Hkv*Dv]");
  }
  if (Hkv <= 0 || Hq % Hkv)
    return invalid(op, "q_num_heads " + std::to_string(Hq) + " is not a multiple of kv_num_heads " +
                           std::to_string(Hkv));
  if (bool(pastK) != bool(pastV))
    return invalid(op, "past_key and past_value must be given together");
  int64_t P = 0;
  if (pastK) {
    P = pastK->shape.size() == 4 ? pastK->shape[2] : -1;
    if (pastK->shape != std::vector<int64_t>{B, Hkv, P, D} ||
        pastV->shape != std::vector<int64_t>{B, Hkv, P, Dv})
      return invalid(op, "past_key " + dims(*pastK) + " / past_value " + dims(*pastV) +
                             " should be [B,Hkv,P,D] / [B,Hkv,P,Dv] with B=" + std::to_string(B) +
                             ", Hkv=" + std::to_string(Hkv) + ", D=" + std::to_string(D) +
                             ", Dv=" + std::to_string(Dv));
    if (nonpad)
      return invalid(op, "nonpad_kv_seqlen cannot be combined with past_key / past_value");
  }
  if (nonpad && nonpad->shape != std::vector<int64_t>{B})
    return invalid(op,
                   "nonpad_kv_seqlen " + dims(*nonpad) + " should be [" + std::to_string(B) + "]");
  int64_t T = P + Skv;

  // The mask, right-aligned to [B, Hq, Sq, M] with M <= T (keys past M are
  // masked out: the spec pads the mask with -inf / false).
  int64_t maskStride[3] = {0, 0, 0}, M = 0;
  if (mask) {
    size_t mr = mask->shape.size();
    if (mr < 1 || mr > 4)
      return invalid(op, "attn_mask " + dims(*mask) + " must have rank 1 to 4");
    M = mask->shape.back();
    if (M > T || (M == 1 && T > 1))
      return invalid(op, "attn_mask " + dims(*mask) + ": its last dim must be between 2 and " +
                             "the total sequence length " + std::to_string(T) +
                             " (or 1 when that is 1)");
    const int64_t full[3] = {B, Hq, Sq};
    int64_t stride = M;
    for (size_t k = 0; k + 1 < mr; ++k) {
      size_t d = mr - 2 - k;         // mask dim, from the second last down
      int64_t axis = 2 - int64_t(k); // aligned axis of [B, Hq, Sq]
      int64_t n = mask->shape[d];
      if (n != 1 && n != full[axis])
        return invalid(op, "attn_mask " + dims(*mask) + " does not broadcast to [" +
                               std::to_string(B) + "," + std::to_string(Hq) + "," +
                               std::to_string(Sq) + "," + std::to_string(T) + "]");
      maskStride[axis] = n == 1 ? 0 : stride;
      stride *= n;
    }
  }

  // Attributes.
  int64_t isCausal = at.getInt("is_causal", 0);
  int64_t mode = at.getInt("qk_matmul_output_mode", 0);
  int64_t left = at.getInt("left_window_size", -1), right = at.getInt("right_window_size", -1);
  float softcap = at.getFloat("softcap", 0.f);
  int64_t precision = at.getInt("softmax_precision", 0);
  if (isCausal != 0 && isCausal != 1)
    return invalid(op, "is_causal " + std::to_string(isCausal) + " is not 0 or 1");
  if (mode < 0 || mode > 3)
    return invalid(op, "qk_matmul_output_mode " + std::to_string(mode) + " is not 0..3");
  if (left < -1 || right < -1)
    return invalid(op, "left_window_size / right_window_size must be >= -1");
  int64_t t1Code = int64_t(t1);
  if (at.has("softmax_precision") && precision != 1 && precision != 11 && precision != t1Code)
    return invalid(op, "softmax_precision " + std::to_string(precision) +
                           " is not FLOAT (1), DOUBLE (11) or Q's type (" + std::to_string(t1Code) +
                           ")");
  bool doubleSoftmax = at.has("softmax_precision") && precision == 11;
  // Q and K are each scaled by sqrt(scale), rounded to float as the spec's
  // pattern does.
  double scale = at.has("scale") ? double(at.getFloat("scale", 1.f))
                                 : 1.0 / std::sqrt(double(std::max<int64_t>(D, 1)));
  if (!(scale >= 0))
    return invalid(op, "scale " + std::to_string(scale) +
                           " is negative (its square root scales Q "
                           "and K)");
  float rootScale = float(std::sqrt(scale));

  // Output shapes.
  std::vector<int64_t> yShape =
      rank == 4 ? std::vector<int64_t>{B, Hq, Sq, Dv} : std::vector<int64_t>{B, Sq, Hq * Dv};
  if (Status s = checkOutputShape(op, *Y, yShape); !s.isOk())
    return s;
  if (presentK)
    if (Status s = checkOutputShape(op, *presentK, {B, Hkv, T, D}); !s.isOk())
      return s;
  if (presentV)
    if (Status s = checkOutputShape(op, *presentV, {B, Hkv, T, Dv}); !s.isOk())
      return s;
  if (qkOut)
    if (Status s = checkOutputShape(op, *qkOut, {B, Hq, Sq, T}); !s.isOk())
      return s;
  if (B == 0 || Hq == 0 || Sq == 0)
    return Status::ok();

  // Work is shared out in chunks of (batch, query head) pairs, one chunk per
  // thread, each with its own packed K and V panels and a block of score rows.
  int64_t tasks = B * Hq;
  int64_t chunks = std::min<int64_t>(tasks, call.pool ? call.pool->threads() : 1);
  // Query rows per block: the scores block stays around 256 KiB.
  int64_t rows =
      std::max<int64_t>(1, std::min<int64_t>(Sq, (int64_t(1) << 16) / std::max<int64_t>(T, 1)));
  size_t packK = packedGemmBSize(D, T), packV = packedGemmBSize(T, Dv);
  size_t rowsT = size_t(rows) * size_t(T);
  // Per chunk: packed K and V, the score rows, their bias, one qk_matmul_output
  // row and the Y rows; and one float64 row (a float64 softmax).
  size_t perChunk = packK + packV + 2 * rowsT + size_t(T) + size_t(rows * Dv);
  size_t nQ = size_t(B * Hq * Sq * D), nK = size_t(B * Hkv * T * D), nV = size_t(B * Hkv * T * Dv);
  size_t wideCount = size_t(chunks) * size_t(T);
  size_t bytes =
      wideCount * sizeof(double) + (nQ + nK + nV + size_t(chunks) * perChunk) * sizeof(float);
  double *wideBase = static_cast<double *>(call.scratch.get(std::max<size_t>(bytes, 1)));
  if (!wideBase)
    return outOfMemory(op, bytes);
  float *q = reinterpret_cast<float *>(wideBase + wideCount);
  float *k = q + nQ, *v = k + nK, *chunkBase = v + nV;

  // Load into the 4-D layout. A 3-D tensor [B,S,H*d] reads as [B,S,H,d].
  auto gather = [&](const TensorView &src, int64_t H, int64_t S, int64_t d, float *dst,
                    int64_t dstSeq, int64_t seqOffset) {
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t s = 0; s < S; ++s) {
          int64_t from = rank == 4 || src.shape.size() == 4 ? ((b * H + h) * S + s) * d
                                                            : (b * S + s) * H * d + h * d;
          loadFloats(src, from, d, dst + ((b * H + h) * dstSeq + seqOffset + s) * d);
        }
  };
  gather(*Q, Hq, Sq, D, q, Sq, 0);
  for (size_t i = 0; i < nQ; ++i)
    q[i] *= rootScale;
  if (pastK) {
    gather(*pastK, Hkv, P, D, k, T, 0);
    gather(*pastV, Hkv, P, Dv, v, T, 0);
  }
  gather(*K, Hkv, Skv, D, k, T, P);
  gather(*V, Hkv, Skv, Dv, v, T, P);
  // The caches are the inputs' values exactly (float16/bfloat16 widen and
  // round back unchanged).
  if (presentK)
    storeFloats(k, int64_t(nK), *presentK, 0);
  if (presentV)
    storeFloats(v, int64_t(nV), *presentV, 0);

  const int64_t *nonpadLen = nonpad ? static_cast<const int64_t *>(nonpad->data) : nullptr;
  const int64_t group = Hq / Hkv;

  // The bias of query i of (b, h) over the T keys; returns its maximum (-inf:
  // the row attends nothing).
  auto biasRow = [&](int64_t b, int64_t h, int64_t i, float *bias) {
    // Causal and window frontiers are relative to the keys before this block.
    int64_t offset = pastK ? P : nonpadLen ? nonpadLen[b] - Sq : 0;
    float maxBias = kNegInf;
    for (int64_t j = 0; j < T; ++j) {
      float bj = 0.f;
      if (mask) {
        if (j >= M) {
          bj = kNegInf;
        } else {
          int64_t mi = b * maskStride[0] + h * maskStride[1] + i * maskStride[2] + j;
          if (boolMask)
            bj = static_cast<const uint8_t *>(mask->data)[mi] ? 0.f : kNegInf;
          else
            loadFloats(*mask, mi, 1, &bj);
        }
      }
      int64_t diff = i + offset - j; // query position minus key position
      if ((isCausal && diff < 0) || (left >= 0 && diff > left) || (right >= 0 && -diff > right) ||
          (nonpadLen && j >= nonpadLen[b]))
        bj += kNegInf;
      bias[j] = bj;
      maxBias = std::max(maxBias, bj);
    }
    return maxBias;
  };

  // Scores to probabilities, in place, over one row of T logits.
  auto softmax = [&](float *row, double *wide) {
    if (doubleSoftmax) {
      double m = -std::numeric_limits<double>::infinity();
      for (int64_t j = 0; j < T; ++j)
        m = std::max(m, double(row[j]));
      double sum = 0;
      for (int64_t j = 0; j < T; ++j)
        sum += wide[j] = std::exp(double(row[j]) - m);
      for (int64_t j = 0; j < T; ++j)
        row[j] = float(wide[j] / sum);
      return;
    }
    float m = kNegInf;
    for (int64_t j = 0; j < T; ++j)
      m = std::max(m, row[j]);
    float sum = 0.f;
    for (int64_t j = 0; j < T; ++j)
      sum += row[j] = std::exp(row[j] - m);
    for (int64_t j = 0; j < T; ++j)
      row[j] /= sum;
  };

  auto body = [&](int64_t chunk) {
    float *packedK = chunkBase + size_t(chunk) * perChunk, *packedV = packedK + packK;
    float *scores = packedV + packV, *bias = scores + rowsT, *qkRow = bias + rowsT;
    float *y = qkRow + T;
    double *wide = wideBase + size_t(chunk) * size_t(T);
    for (int64_t task = tasks * chunk / chunks; task < tasks * (chunk + 1) / chunks; ++task) {
      int64_t b = task / Hq, h = task % Hq, kvh = h / group;
      const float *kh = k + (b * Hkv + kvh) * T * D;
      const float *vh = v + (b * Hkv + kvh) * T * Dv;
      if (D > 0 && T > 0)
        packGemmB(kh, D, /*transB=*/true, D, T, rootScale, packedK);
      if (T > 0 && Dv > 0)
        packGemmB(vh, Dv, false, T, Dv, 1.f, packedV);
      for (int64_t r0 = 0; r0 < Sq; r0 += rows) {
        int64_t nr = std::min(rows, Sq - r0);
        const float *qh = q + ((b * Hq + h) * Sq + r0) * D;
        if (D > 0 && T > 0)
          sgemmPacked(nr, T, D, qh, D, false, packedK, scores, T, false);
        else
          std::fill(scores, scores + nr * T, 0.f);
        for (int64_t r = 0; r < nr; ++r) {
          int64_t i = r0 + r;
          float *raw = scores + r * T, *bi = bias + r * T;
          float maxBias = biasRow(b, h, i, bi);
          if (qkOut && mode == 0)
            std::copy(raw, raw + T, qkRow);
          if (softcap > 0.f)
            for (int64_t j = 0; j < T; ++j)
              raw[j] = softcap * std::tanh(raw[j] / softcap);
          if (qkOut && mode == 1)
            std::copy(raw, raw + T, qkRow);
          for (int64_t j = 0; j < T; ++j)
            raw[j] += bi[j];
          if (qkOut && mode == 2)
            std::copy(raw, raw + T, qkRow);
          // A row whose bias is -inf everywhere attends nothing: zeros
          // (probabilities and Y).
          if (!(maxBias > kNegInf))
            std::fill(raw, raw + T, 0.f);
          else
            softmax(raw, wide);
          if (qkOut && mode == 3)
            std::copy(raw, raw + T, qkRow);
          if (qkOut)
            storeFloats(qkRow, T, *qkOut, ((b * Hq + h) * Sq + i) * T);
        }
        if (T > 0 && Dv > 0)
          sgemmPacked(nr, Dv, T, scores, T, false, packedV, y, Dv, false);
        else
          std::fill(y, y + nr * Dv, 0.f);
        for (int64_t r = 0; r < nr; ++r) {
          int64_t i = r0 + r;
          int64_t to = rank == 4 ? ((b * Hq + h) * Sq + i) * Dv : (b * Sq + i) * Hq * Dv + h * Dv;
          storeFloats(y + r * Dv, Dv, *Y, to);
        }
      }
    }
  };
  parallelFor(call.pool, chunks, body);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// RotaryEmbedding (ONNX, opset 23)
//===----------------------------------------------------------------------===//

Status rotaryEmbedding(const KernelCall &call) {
  const char *op = "RotaryEmbedding";
  const TensorView *X = call.input(0), *cosC = call.input(1), *sinC = call.input(2);
  const TensorView *pos = dataInput(call, 3);
  if (!X || !cosC || !sinC)
    return invalid(op, "missing input X, cos_cache or sin_cache");
  if (call.numOutputs < 1 || !call.outputs[0].data)
    return invalid(op, "missing output");
  for (size_t i = 1; i < call.numOutputs; ++i)
    if (call.outputs[i].data)
      return invalid(op, "output " + std::to_string(i) + " is not supported");
  const TensorView &Y = call.outputs[0];
  if (!isComputeFloat(X->type))
    return invalid(op,
                   "input X must be float32, float16 or bfloat16, got " + elementTypeName(X->type));
  for (auto [t, role] :
       {std::pair{cosC, "input cos_cache"}, {sinC, "input sin_cache"}, {&Y, "output"}})
    if (Status s = requireType(op, t, role, X->type); !s.isOk())
      return s;
  if (pos && pos->type != ElementType::Int64)
    return invalid(op, "input position_ids must be int64, got " + elementTypeName(pos->type));

  size_t rank = X->shape.size();
  int64_t B, S, H, Dh;
  if (rank == 4) {
    B = X->shape[0], H = X->shape[1], S = X->shape[2], Dh = X->shape[3];
  } else if (rank == 3) {
    H = call.attrs.getInt("num_heads", 0);
    if (H <= 0 || X->shape[2] % H)
      return invalid(op, "3-D input " + dims(*X) + " needs num_heads > 0 dividing its last dim");
    B = X->shape[0], S = X->shape[1], Dh = X->shape[2] / H;
  } else {
    return invalid(op, "input X " + dims(*X) + " must be 3-D or 4-D");
  }
  int64_t rd = call.attrs.getInt("rotary_embedding_dim", 0);
  if (rd == 0)
    rd = Dh;
  if (rd < 0 || rd > Dh || rd % 2)
    return invalid(op, "rotary_embedding_dim " + std::to_string(rd) +
                           " must be even and at most the head size " + std::to_string(Dh));
  int64_t half = rd / 2;
  int64_t interleaved = call.attrs.getInt("interleaved", 0);
  if (interleaved != 0 && interleaved != 1)
    return invalid(op, "interleaved " + std::to_string(interleaved) + " is not 0 or 1");
  int64_t maxPos = 0;
  if (pos) {
    if (pos->shape != std::vector<int64_t>{B, S})
      return invalid(op, "position_ids " + dims(*pos) + " should be [" + std::to_string(B) + "," +
                             std::to_string(S) + "]");
    if (cosC->shape.size() != 2 || cosC->shape[1] != half || sinC->shape != cosC->shape)
      return invalid(op, "cos_cache " + dims(*cosC) + " / sin_cache " + dims(*sinC) +
                             " should both be [max_position, " + std::to_string(half) + "]");
    maxPos = cosC->shape[0];
  } else if (cosC->shape != std::vector<int64_t>{B, S, half} || sinC->shape != cosC->shape) {
    return invalid(op, "cos_cache " + dims(*cosC) + " / sin_cache " + dims(*sinC) +
                           " should both be [" + std::to_string(B) + "," + std::to_string(S) + "," +
                           std::to_string(half) + "] without position_ids");
  }
  if (Status s = checkOutputShape(op, Y, X->shape); !s.isOk())
    return s;
  const int64_t *ids = pos ? static_cast<const int64_t *>(pos->data) : nullptr;
  for (int64_t i = 0; ids && i < B * S; ++i)
    if (ids[i] < 0 || ids[i] >= maxPos)
      return invalid(op, "position_ids value " + std::to_string(ids[i]) + " is outside [0, " +
                             std::to_string(maxPos) + ")");
  if (B * S * H * Dh == 0)
    return Status::ok();

  // Per (b, s) task: one head's row, then that position's cos and sin.
  size_t perTask = size_t(Dh + 2 * half);
  float *buffer;
  if (Status s = allocScratch(call, op, size_t(B * S) * perTask, buffer); !s.isOk())
    return s;
  auto body = [&](int64_t bs) {
    int64_t b = bs / S, s = bs % S;
    float *x = buffer + size_t(bs) * perTask;
    float *cs = x + Dh, *sc = cs + half;
    int64_t from = ids ? ids[bs] * half : bs * half;
    loadFloats(*cosC, from, half, cs);
    loadFloats(*sinC, from, half, sc);
    for (int64_t h = 0; h < H; ++h) {
      int64_t off = rank == 4 ? ((b * H + h) * S + s) * Dh : (b * S + s) * H * Dh + h * Dh;
      loadFloats(*X, off, Dh, x);
      for (int64_t i = 0; i < half; ++i) {
        int64_t i1 = interleaved ? 2 * i : i, i2 = interleaved ? 2 * i + 1 : i + half;
        float x1 = x[i1], x2 = x[i2];
        x[i1] = cs[i] * x1 - sc[i] * x2;
        x[i2] = sc[i] * x1 + cs[i] * x2;
      }
      storeFloats(x, Dh, Y, off);
    }
  };
  parallelFor(call.pool, B * S, body);
  return Status::ok();
}

} // namespace ortc::cpu::kernels
