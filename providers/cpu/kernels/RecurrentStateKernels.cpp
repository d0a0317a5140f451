//===- RecurrentStateKernels.cpp - LinearAttention, CausalConvWithState ----===//
//
// The state-carrying ops of linear-attention and state-space decoders
// (ONNX opset 27): both take an optional past state and return the present
// one, so a decode loop feeds each step's output state to the next step.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

namespace ortc::cpu::kernels {

Status causalConvWithState(const KernelCall &call) {
  const char *op = "CausalConvWithState";
  const TensorView *X = dataInput(call, 0), *W = dataInput(call, 1);
  const TensorView *B = dataInput(call, 2), *past = dataInput(call, 3);
  if (Status s = checkFloats(op, {{X, "input"}, {W, "weight"}}); !s.isOk())
    return s;
  if (Status s = checkOptionalFloat(op, B, "bias"); !s.isOk())
    return s;
  if (Status s = checkOptionalFloat(op, past, "past_state"); !s.isOk())
    return s;
  if (X->shape.size() != 3 || W->shape.size() != 3 || W->shape[0] != X->shape[1] ||
      W->shape[1] != 1 || W->shape[2] < 1)
    return invalid(op, "input " + shapeToString(X->shape) + " and weight " +
                           shapeToString(W->shape) + " are not [B,C,L] and [C,1,K]");
  int64_t batch = X->shape[0], channels = X->shape[1], length = X->shape[2], k = W->shape[2];
  std::vector<int64_t> stateShape = {batch, channels, k - 1};
  if (B && B->shape != std::vector<int64_t>{channels})
    return invalid(op, "bias " + shapeToString(B->shape) + " is not [C]");
  if (past && past->shape != stateShape)
    return invalid(op, "past_state " + shapeToString(past->shape) + " should be " +
                           shapeToString(stateShape));
  std::string activation = call.attrs.getString("activation", "none");
  bool silu = activation == "silu" || activation == "swish";
  if (!silu && activation != "none")
    return invalid(op, "unsupported activation '" + activation + "'");
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Status s = checkOutputShape(op, Y, X->shape); !s.isOk())
    return s;
  const TensorView *present = call.numOutputs > 1 && call.outputs[1].data ? &call.outputs[1]
                                                                          : nullptr;
  if (present)
    if (Status s = checkOutputShape(op, *present, stateShape); !s.isOk())
      return s;

  const float *x = static_cast<const float *>(X->data), *w = static_cast<const float *>(W->data);
  const float *bias = B ? static_cast<const float *>(B->data) : nullptr;
  const float *p = past ? static_cast<const float *>(past->data) : nullptr;
  float *y = static_cast<float *>(Y.data);
  int64_t padded = length + k - 1;
  std::vector<float> row(padded);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t c = 0; c < channels; ++c) {
      // [past (or zeros), input] along time.
      for (int64_t t = 0; t < k - 1; ++t)
        row[t] = p ? p[(b * channels + c) * (k - 1) + t] : 0.f;
      std::memcpy(row.data() + k - 1, x + (b * channels + c) * length, length * sizeof(float));
      const float *wc = w + c * k;
      for (int64_t t = 0; t < length; ++t) {
        float sum = bias ? bias[c] : 0.f;
        for (int64_t j = 0; j < k; ++j)
          sum += row[t + j] * wc[j];
        if (silu)
          sum = sum / (1.f + std::exp(-sum));
        y[(b * channels + c) * length + t] = sum;
      }
      if (present && k > 1)
        std::memcpy(static_cast<float *>(present->data) + (b * channels + c) * (k - 1),
                    row.data() + length, (k - 1) * sizeof(float));
    }
  return Status::ok();
}

Status linearAttention(const KernelCall &call) {
  const char *op = "LinearAttention";
  const TensorView *Q = dataInput(call, 0), *K = dataInput(call, 1), *V = dataInput(call, 2);
  const TensorView *past = dataInput(call, 3), *decay = dataInput(call, 4),
                   *beta = dataInput(call, 5);
  if (Status s = checkFloats(op, {{Q, "query"}, {K, "key"}, {V, "value"}}); !s.isOk())
    return s;
  for (auto [t, role] : {std::pair{past, "past_state"}, {decay, "decay"}, {beta, "beta"}})
    if (Status s = checkOptionalFloat(op, t, role); !s.isOk())
      return s;
  int64_t hq = call.attrs.getInt("q_num_heads", 0), hkv = call.attrs.getInt("kv_num_heads", 0);
  if (hq <= 0 || hkv <= 0 || hq % hkv != 0)
    return invalid(op, "q_num_heads " + std::to_string(hq) +
                           " must be a positive multiple of kv_num_heads " + std::to_string(hkv));
  std::string rule = call.attrs.getString("update_rule", "gated_delta");
  bool gating = rule == "gated" || rule == "gated_delta";
  bool delta = rule == "delta" || rule == "gated_delta";
  if (!gating && !delta && rule != "linear")
    return invalid(op, "unsupported update_rule '" + rule + "'");
  if (gating != (decay != nullptr) || delta != (beta != nullptr))
    return invalid(op, "update_rule '" + rule + "' needs decay " + (gating ? "" : "absent ") +
                           "and beta " + (delta ? "" : "absent"));
  if (Q->shape.size() != 3 || K->shape.size() != 3 || V->shape.size() != 3)
    return invalid(op, "query, key and value must be [B, T, H*D]");
  int64_t batch = Q->shape[0], steps = Q->shape[1];
  if (Q->shape[2] % hq != 0 || V->shape[2] % hkv != 0)
    return invalid(op, "the hidden sizes do not divide by the head counts");
  int64_t dk = Q->shape[2] / hq, dv = V->shape[2] / hkv, group = hq / hkv;
  if (K->shape != std::vector<int64_t>{batch, steps, hkv * dk} ||
      V->shape[0] != batch || V->shape[1] != steps)
    return invalid(op, "key " + shapeToString(K->shape) + " or value " +
                           shapeToString(V->shape) + " does not match query " +
                           shapeToString(Q->shape));
  std::vector<int64_t> stateShape = {batch, hkv, dk, dv};
  if (past && past->shape != stateShape)
    return invalid(op, "past_state " + shapeToString(past->shape) + " should be " +
                           shapeToString(stateShape));
  bool decayPerKey = false;
  if (decay) {
    if (decay->shape.size() != 3 || decay->shape[0] != batch || decay->shape[1] != steps ||
        (decay->shape[2] != hkv && decay->shape[2] != hkv * dk))
      return invalid(op, "decay " + shapeToString(decay->shape) +
                             " is not [B, T, kv_num_heads] or [B, T, kv_num_heads*d_k]");
    decayPerKey = decay->shape[2] == hkv * dk && dk != 1;
  }
  bool betaShared = false;
  if (beta) {
    if (beta->shape.size() != 3 || beta->shape[0] != batch || beta->shape[1] != steps ||
        (beta->shape[2] != hkv && beta->shape[2] != 1))
      return invalid(op, "beta " + shapeToString(beta->shape) +
                             " is not [B, T, kv_num_heads] or [B, T, 1]");
    betaShared = beta->shape[2] == 1;
  }
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (Status s = checkOutputShape(op, Y, {batch, steps, hq * dv}); !s.isOk())
    return s;
  const TensorView *present = call.numOutputs > 1 && call.outputs[1].data ? &call.outputs[1]
                                                                          : nullptr;
  if (present)
    if (Status s = checkOutputShape(op, *present, stateShape); !s.isOk())
      return s;
  float scale = call.attrs.getFloat("scale", 0.f);
  if (scale == 0.f)
    scale = 1.f / std::sqrt(float(dk));

  const float *q = static_cast<const float *>(Q->data), *kk = static_cast<const float *>(K->data);
  const float *v = static_cast<const float *>(V->data);
  const float *g = decay ? static_cast<const float *>(decay->data) : nullptr;
  const float *bt = beta ? static_cast<const float *>(beta->data) : nullptr;
  float *y = static_cast<float *>(Y.data);
  // The state of one (batch, kv head): [d_k, d_v].
  std::vector<float> state(size_t(batch * hkv * dk * dv), 0.f), update(dv);
  if (past)
    std::memcpy(state.data(), past->data, state.size() * sizeof(float));
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t t = 0; t < steps; ++t)
      for (int64_t h = 0; h < hkv; ++h) {
        float *S = state.data() + (b * hkv + h) * dk * dv;
        const float *kt = kk + ((b * steps + t) * hkv + h) * dk;
        const float *vt = v + ((b * steps + t) * hkv + h) * dv;
        if (gating) {
          int64_t base = (b * steps + t) * decay->shape[2];
          for (int64_t i = 0; i < dk; ++i) {
            float factor = std::exp(g[decayPerKey ? base + h * dk + i : base + h]);
            for (int64_t j = 0; j < dv; ++j)
              S[i * dv + j] *= factor;
          }
        }
        for (int64_t j = 0; j < dv; ++j)
          update[j] = vt[j];
        if (delta) {
          float rate = bt[(b * steps + t) * beta->shape[2] + (betaShared ? 0 : h)];
          for (int64_t j = 0; j < dv; ++j) {
            float retrieved = 0;
            for (int64_t i = 0; i < dk; ++i)
              retrieved += S[i * dv + j] * kt[i];
            update[j] = rate * (vt[j] - retrieved);
          }
        }
        for (int64_t i = 0; i < dk; ++i)
          for (int64_t j = 0; j < dv; ++j)
            S[i * dv + j] += kt[i] * update[j];
        // Each query head of this group reads the updated state.
        for (int64_t qh = h * group; qh < (h + 1) * group; ++qh) {
          const float *qt = q + ((b * steps + t) * hq + qh) * dk;
          float *out = y + ((b * steps + t) * hq + qh) * dv;
          for (int64_t j = 0; j < dv; ++j) {
            float sum = 0;
            for (int64_t i = 0; i < dk; ++i)
              sum += qt[i] * S[i * dv + j];
            out[j] = scale * sum;
          }
        }
      }
  if (present)
    std::memcpy(present->data, state.data(), state.size() * sizeof(float));
  return Status::ok();
}

} // namespace ortc::cpu::kernels
