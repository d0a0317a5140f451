//===- RecurrentKernels.cpp - RNN, GRU, LSTM, fp32 ------------------------===//
//
// The ONNX recurrent ops with their default activations (RNN: Tanh; GRU:
// Sigmoid, Tanh; LSTM: Sigmoid, Tanh, Tanh), as the operator definitions
// write them:
//   RNN   H = tanh(X W^T + H R^T + Wb + Rb)
//   GRU   z, r = sigmoid(...), h = tanh(X Wh^T + (r . H) Rh^T + Rbh + Wbh), or
//         with linear_before_reset tanh(X Wh^T + r . (H Rh^T + Rbh) + Wbh);
//         H = (1 - z) . h + z . H
//   LSTM  i, f = sigmoid(... + P . C), c = tanh(...), C = f . C + i . c,
//         o = sigmoid(... + Po . C_new), H = o . tanh(C)
// Gate orders: GRU z, r, h; LSTM i, o, f, c; peepholes P = [Pi, Po, Pf].
// `clip` bounds every gate's pre-activation to [-clip, clip]. `direction`
// forward, reverse or bidirectional; `layout` 0 ([seq, batch, ...]) or 1
// ([batch, seq, ...]). With sequence_lens, batch entry b runs its first L_b
// steps only (reverse: from step L_b - 1 down to 0); Y is 0 past L_b and Y_h
// (Y_c) hold the state after the last step run.
//
// The step's outputs are the op's present outputs in order; when an earlier
// output is omitted, the compiler's `output_slots` attribute names the ONNX
// output of each (0 Y, 1 Y_h, 2 Y_c).
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <cstring>

namespace ortc::cpu::kernels {

namespace {

enum class Cell { Rnn, Gru, Lstm };

struct RecurrentSpec {
  const char *op;
  Cell cell;
  int gates;      // 1, 3, 4
  int numOutputs; // 2 or 3
};

float sigmoid(float x) { return 1.f / (1.f + std::exp(-x)); }

struct Dims {
  int64_t S = 0, B = 0, I = 0, H = 0, D = 1;
  bool layout1 = false;
  int64_t x(int64_t t, int64_t b) const { return (layout1 ? b * S + t : t * B + b) * I; }
  int64_t y(int64_t t, int64_t d, int64_t b) const {
    return (layout1 ? (b * S + t) * D + d : (t * D + d) * B + b) * H;
  }
  int64_t state(int64_t d, int64_t b) const { return (layout1 ? b * D + d : d * B + b) * H; }
  std::vector<int64_t> yShape() const {
    return layout1 ? std::vector<int64_t>{B, S, D, H} : std::vector<int64_t>{S, D, B, H};
  }
  std::vector<int64_t> stateShape() const {
    return layout1 ? std::vector<int64_t>{B, D, H} : std::vector<int64_t>{D, B, H};
  }
};

Status checkShape(const char *op, const TensorView *t, const char *role,
                  const std::vector<int64_t> &expect) {
  if (t && t->shape != expect)
    return invalid(op, std::string(role) + " shape " + shapeToString(t->shape) + " should be " +
                           shapeToString(expect));
  return Status::ok();
}

Status runRecurrent(const RecurrentSpec &spec, const KernelCall &call) {
  const char *op = spec.op;
  const bool lstm = spec.cell == Cell::Lstm;
  const TensorView *X = dataInput(call, 0), *W = dataInput(call, 1), *R = dataInput(call, 2);
  const TensorView *Bias = call.input(3), *seqLens = call.input(4), *h0 = call.input(5);
  const TensorView *c0 = lstm ? call.input(6) : nullptr, *P = lstm ? call.input(7) : nullptr;
  if (Status s = checkFloats(op, {{X, "input X"}, {W, "input W"}, {R, "input R"}}); !s.isOk())
    return s;
  for (auto [t, role] : {std::pair{Bias, "input B"}, {h0, "input initial_h"},
                         {c0, "input initial_c"}, {P, "input P"}})
    if (Status s = checkOptionalFloat(op, t, role); !s.isOk())
      return s;
  if (seqLens && seqLens->type != ElementType::Int32)
    return invalid(op, "sequence_lens must be int32, got " + elementTypeName(seqLens->type));

  const StepAttributes &attrs = call.attrs;
  int64_t layout = attrs.getInt("layout", 0);
  if (layout != 0 && layout != 1)
    return invalid(op, "layout " + std::to_string(layout) + " is not 0 or 1");
  std::string direction = attrs.getString("direction", "forward");
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional")
    return invalid(op, "unknown direction '" + direction + "'");
  if (lstm && attrs.getInt("input_forget", 0) != 0)
    return invalid(op, "input_forget 1 is not supported");
  bool linearBeforeReset = attrs.getInt("linear_before_reset", 0) != 0;
  bool hasClip = attrs.floats.count("clip") > 0;
  float clip = attrs.getFloat("clip", 0.f);
  if (hasClip && !(clip > 0.f))
    return invalid(op, "clip " + std::to_string(clip) + " must be positive");

  if (X->shape.size() != 3 || W->shape.size() != 3 || R->shape.size() != 3)
    return invalid(op, "X, W and R must be 3-D, got " + shapeToString(X->shape) + ", " +
                           shapeToString(W->shape) + ", " + shapeToString(R->shape));
  Dims dm;
  dm.layout1 = layout == 1;
  dm.S = dm.layout1 ? X->shape[1] : X->shape[0];
  dm.B = dm.layout1 ? X->shape[0] : X->shape[1];
  dm.I = X->shape[2];
  dm.D = direction == "bidirectional" ? 2 : 1;
  dm.H = R->shape[2];
  int64_t G = spec.gates, H = dm.H, D = dm.D, S = dm.S, Bt = dm.B, I = dm.I;
  int64_t hiddenSize = attrs.getInt("hidden_size", H);
  if (hiddenSize != H)
    return invalid(op, "hidden_size " + std::to_string(hiddenSize) + " differs from R's " +
                           shapeToString(R->shape));
  if (Status s = checkShape(op, W, "W", {D, G * H, I}); !s.isOk())
    return s;
  if (Status s = checkShape(op, R, "R", {D, G * H, H}); !s.isOk())
    return s;
  if (Status s = checkShape(op, Bias, "B", {D, 2 * G * H}); !s.isOk())
    return s;
  if (Status s = checkShape(op, seqLens, "sequence_lens", {Bt}); !s.isOk())
    return s;
  if (Status s = checkShape(op, h0, "initial_h", dm.stateShape()); !s.isOk())
    return s;
  if (Status s = checkShape(op, c0, "initial_c", dm.stateShape()); !s.isOk())
    return s;
  if (Status s = checkShape(op, P, "P", {D, 3 * H}); !s.isOk())
    return s;

  // Outputs by ONNX index.
  std::vector<int64_t> indices = attrs.getInts("output_slots");
  if (indices.empty())
    for (size_t i = 0; i < call.numOutputs; ++i)
      indices.push_back(int64_t(i));
  if (indices.size() != call.numOutputs)
    return invalid(op, "output_slots has " + std::to_string(indices.size()) + " entries for " +
                           std::to_string(call.numOutputs) + " outputs");
  const TensorView *outs[3] = {nullptr, nullptr, nullptr};
  for (size_t i = 0; i < call.numOutputs; ++i) {
    int64_t k = indices[i];
    if (k < 0 || k >= spec.numOutputs || outs[k])
      return invalid(op, "output index " + std::to_string(k) + " is out of range or repeated");
    const TensorView &o = call.outputs[i];
    if (!o.data && o.numElements() > 0)
      continue;
    const char *names[] = {"output Y", "output Y_h", "output Y_c"};
    if (Status s = checkFloat(op, &o, names[k]); !s.isOk())
      return s;
    if (Status s = checkOutputShape(op, o, k == 0 ? dm.yShape() : dm.stateShape()); !s.isOk())
      return s;
    outs[k] = &o;
  }

  std::vector<int32_t> lens(static_cast<size_t>(Bt), static_cast<int32_t>(S));
  if (seqLens)
    for (int64_t b = 0; b < Bt; ++b) {
      int32_t L = static_cast<const int32_t *>(seqLens->data)[b];
      if (L < 0 || L > S)
        return invalid(op, "sequence_lens[" + std::to_string(b) + "] = " + std::to_string(L) +
                               " is outside [0, " + std::to_string(S) + "]");
      lens[size_t(b)] = L;
    }

  // Scratch: xw [S, B, G*H] (X W^T + Wb), hr [B, G*H], h and c [B, H] each.
  int64_t GH = G * H;
  size_t need = size_t(S * Bt * GH + Bt * GH + 2 * Bt * H + Bt * H);
  float *scratch = nullptr;
  if (Status s = allocScratch(call, op, need, scratch); !s.isOk())
    return s;
  float *xw = scratch, *hr = xw + S * Bt * GH, *h = hr + Bt * GH, *c = h + Bt * H,
        *hNew = c + Bt * H;

  const float *x = static_cast<const float *>(X->data);
  float *Y = outs[0] ? static_cast<float *>(outs[0]->data) : nullptr;
  if (Y)
    std::fill(Y, Y + outs[0]->numElements(), 0.f);
  auto clipped = [&](float v) { return hasClip ? std::min(clip, std::max(-clip, v)) : v; };

  for (int64_t d = 0; d < D; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    const float *w = static_cast<const float *>(W->data) + d * GH * I;
    const float *r = static_cast<const float *>(R->data) + d * GH * H;
    const float *wb = Bias ? static_cast<const float *>(Bias->data) + d * 2 * GH : nullptr;
    const float *rb = wb ? wb + GH : nullptr;
    const float *p = P ? static_cast<const float *>(P->data) + d * 3 * H : nullptr;

    // Input projections of every step; the bias of R too, except GRU's Rbh
    // (inside the reset with linear_before_reset) which stays separate.
    for (int64_t t = 0; t < S; ++t)
      for (int64_t b = 0; b < Bt; ++b) {
        const float *xt = x + dm.x(t, b);
        float *out = xw + (t * Bt + b) * GH;
        for (int64_t g = 0; g < GH; ++g) {
          float sum = 0.f;
          const float *wg = w + g * I;
          for (int64_t i = 0; i < I; ++i)
            sum += xt[i] * wg[i];
          if (wb)
            sum += wb[g];
          bool gruCandidate = spec.cell == Cell::Gru && g >= 2 * H;
          if (rb && !gruCandidate)
            sum += rb[g];
          out[g] = sum;
        }
      }
    for (int64_t b = 0; b < Bt; ++b)
      for (int64_t k = 0; k < H; ++k) {
        h[b * H + k] = h0 ? static_cast<const float *>(h0->data)[dm.state(d, b) + k] : 0.f;
        c[b * H + k] = c0 ? static_cast<const float *>(c0->data)[dm.state(d, b) + k] : 0.f;
      }

    std::vector<float> zv(static_cast<size_t>(H)), rv(static_cast<size_t>(H)); // GRU's z and r of one entry
    for (int64_t step = 0; step < S; ++step) {
      // hr = H R^T for the batch entries still running.
      for (int64_t b = 0; b < Bt; ++b) {
        if (step >= lens[size_t(b)])
          continue;
        const float *hb = h + b * H;
        for (int64_t g = 0; g < GH; ++g) {
          const float *rg = r + g * H;
          float sum = 0.f;
          if (spec.cell == Cell::Gru && g >= 2 * H && !linearBeforeReset)
            continue; // needs r . H first (below)
          for (int64_t k = 0; k < H; ++k)
            sum += hb[k] * rg[k];
          hr[b * GH + g] = sum;
        }
      }
      for (int64_t b = 0; b < Bt; ++b) {
        int64_t L = lens[size_t(b)];
        if (step >= L)
          continue;
        int64_t t = reverse ? L - 1 - step : step;
        const float *g = xw + (t * Bt + b) * GH;
        const float *q = hr + b * GH;
        float *hb = h + b * H, *cb = c + b * H, *hn = hNew + b * H;
        switch (spec.cell) {
        case Cell::Rnn:
          for (int64_t k = 0; k < H; ++k)
            hn[k] = std::tanh(clipped(g[k] + q[k]));
          break;
        case Cell::Gru: {
          // z and r first; the candidate needs r.
          for (int64_t k = 0; k < H; ++k) {
            zv[size_t(k)] = sigmoid(clipped(g[k] + q[k]));
            rv[size_t(k)] = sigmoid(clipped(g[H + k] + q[H + k]));
          }
          const float *rbh = rb ? rb + 2 * H : nullptr;
          for (int64_t k = 0; k < H; ++k) {
            float pre;
            if (linearBeforeReset) {
              pre = g[2 * H + k] + rv[size_t(k)] * (q[2 * H + k] + (rbh ? rbh[k] : 0.f));
            } else {
              const float *rg = r + (2 * H + k) * H;
              float sum = 0.f;
              for (int64_t j = 0; j < H; ++j)
                sum += rv[size_t(j)] * hb[j] * rg[j];
              pre = g[2 * H + k] + sum + (rbh ? rbh[k] : 0.f);
            }
            float cand = std::tanh(clipped(pre));
            hn[k] = (1.f - zv[size_t(k)]) * cand + zv[size_t(k)] * hb[k];
          }
          break;
        }
        case Cell::Lstm:
          for (int64_t k = 0; k < H; ++k) {
            float cPrev = cb[k];
            float ig = g[k] + q[k] + (p ? p[k] * cPrev : 0.f);
            float og = g[H + k] + q[H + k];
            float fg = g[2 * H + k] + q[2 * H + k] + (p ? p[2 * H + k] * cPrev : 0.f);
            float cg = g[3 * H + k] + q[3 * H + k];
            float cNew = sigmoid(clipped(fg)) * cPrev + sigmoid(clipped(ig)) * std::tanh(clipped(cg));
            float o = sigmoid(clipped(og + (p ? p[H + k] * cNew : 0.f)));
            cb[k] = cNew;
            hn[k] = o * std::tanh(cNew);
          }
          break;
        }
        std::memcpy(hb, hn, size_t(H) * sizeof(float));
        if (Y)
          std::memcpy(Y + dm.y(t, d, b), hb, size_t(H) * sizeof(float));
      }
    }
    for (int64_t b = 0; b < Bt; ++b) {
      if (outs[1])
        std::memcpy(static_cast<float *>(outs[1]->data) + dm.state(d, b), h + b * H,
                    size_t(H) * sizeof(float));
      if (outs[2])
        std::memcpy(static_cast<float *>(outs[2]->data) + dm.state(d, b), c + b * H,
                    size_t(H) * sizeof(float));
    }
  }
  return Status::ok();
}

} // namespace

Status rnn(const KernelCall &call) { return runRecurrent({"RNN", Cell::Rnn, 1, 2}, call); }
Status gru(const KernelCall &call) { return runRecurrent({"GRU", Cell::Gru, 3, 2}, call); }
Status lstm(const KernelCall &call) { return runRecurrent({"LSTM", Cell::Lstm, 4, 3}, call); }

} // namespace ortc::cpu::kernels
