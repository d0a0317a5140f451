//===- LossKernels.cpp - NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss ===//
//
// Both losses pick, for every position (n, d1..dk), the score of the target
// class c = target[n, d1..dk] out of input[n, :, d1..dk], negate it and weight
// it by weight[c] (1 without weights; 0 where target == ignore_index). The
// input is read as [N, C, D] with D = d1 * ... * dk. SoftmaxCrossEntropyLoss
// first takes log-softmax over C (its optional second output).
//
// Reductions: none keeps the [N, d1..dk] losses; sum adds them; mean divides
// the sum by the sum of the weights picked (the count of positions not
// ignored without weights), so a batch that ignores everything gives 0/0.
// Sums run in double.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace ortc::cpu::kernels {

namespace {

enum class Reduction { None, Sum, Mean };

/// The checked operands of one loss call.
struct LossArgs {
  const float *scores = nullptr; // [N, C, D], log-probabilities
  const TensorView *target = nullptr;
  const float *weight = nullptr; // [C] or null
  int64_t N = 0, C = 0, D = 0;
  Reduction reduction = Reduction::Mean;
  bool hasIgnore = false;
  int64_t ignoreIndex = 0;
  float *loss = nullptr;
};

int64_t targetAt(const TensorView &t, int64_t i) {
  return t.type == ElementType::Int64 ? static_cast<const int64_t *>(t.data)[i]
                                      : int64_t(static_cast<const int32_t *>(t.data)[i]);
}

/// Checks input 0 (scores), 1 (target), 2 (optional weight), the attributes
/// and output 0; fills `a` except `scores`.
Status checkLoss(const char *op, const KernelCall &call, LossArgs &a) {
  const TensorView *X = dataInput(call, 0);
  const TensorView *T = dataInput(call, 1);
  const TensorView *W = call.input(2);
  if (Status s = checkFloat(op, X, "input scores"); !s.isOk())
    return s;
  if (!T)
    return invalid(op, "missing input target");
  if (T->type != ElementType::Int64 && T->type != ElementType::Int32)
    return invalid(op, "target must be int32 or int64, got " + elementTypeName(T->type));
  if (Status s = checkOptionalFloat(op, W, "weight"); !s.isOk())
    return s;
  const std::vector<int64_t> &xs = X->shape;
  if (xs.size() < 2)
    return invalid(op, "scores must be [N, C, d1..dk], got " + shapeToString(xs));
  a.N = xs[0];
  a.C = xs[1];
  a.D = product(xs, 2, xs.size());
  std::vector<int64_t> targetShape = xs;
  targetShape.erase(targetShape.begin() + 1);
  if (T->shape != targetShape)
    return invalid(op, "target shape " + shapeToString(T->shape) + " should be " +
                           shapeToString(targetShape));
  if (W && W->shape != std::vector<int64_t>{a.C})
    return invalid(op, "weight shape " + shapeToString(W->shape) + " should be [" +
                           std::to_string(a.C) + "]");
  std::string reduction = call.attrs.getString("reduction", "mean");
  if (reduction == "none")
    a.reduction = Reduction::None;
  else if (reduction == "sum")
    a.reduction = Reduction::Sum;
  else if (reduction == "mean")
    a.reduction = Reduction::Mean;
  else
    return invalid(op, "reduction '" + reduction + "' is not none, sum or mean");
  a.hasIgnore = call.attrs.has("ignore_index");
  a.ignoreIndex = call.attrs.getInt("ignore_index", 0);
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  const TensorView &L = call.outputs[0];
  if (Status s = checkFloat(op, &L, "output loss"); !s.isOk())
    return s;
  if (Status s = checkOutputShape(op, L, a.reduction == Reduction::None
                                             ? targetShape
                                             : std::vector<int64_t>{});
      !s.isOk())
    return s;
  // Every target is checked before anything is written.
  int64_t positions = a.N * a.D;
  for (int64_t i = 0; i < positions; ++i) {
    int64_t t = targetAt(*T, i);
    if (a.hasIgnore && t == a.ignoreIndex)
      continue;
    if (t < 0 || t >= a.C)
      return invalid(op, "target value " + std::to_string(t) + " at position " +
                             std::to_string(i) + " is outside [0, " + std::to_string(a.C) +
                             ") and is not ignore_index");
  }
  a.target = T;
  a.weight = W ? static_cast<const float *>(W->data) : nullptr;
  a.loss = static_cast<float *>(L.data);
  return Status::ok();
}

/// The loss of `a` over its log-probabilities `a.scores`.
void nllLossCore(const LossArgs &a) {
  double sum = 0, weightSum = 0;
  for (int64_t n = 0; n < a.N; ++n)
    for (int64_t d = 0; d < a.D; ++d) {
      int64_t i = n * a.D + d;
      int64_t t = targetAt(*a.target, i);
      float l = 0.f, w = 0.f;
      if (!(a.hasIgnore && t == a.ignoreIndex)) {
        w = a.weight ? a.weight[t] : 1.f;
        l = -a.scores[(n * a.C + t) * a.D + d] * w;
      }
      if (a.reduction == Reduction::None)
        a.loss[i] = l;
      sum += l;
      weightSum += w;
    }
  if (a.reduction == Reduction::Sum)
    a.loss[0] = float(sum);
  else if (a.reduction == Reduction::Mean)
    a.loss[0] = float(sum / weightSum);
}

} // namespace

Status negativeLogLikelihoodLoss(const KernelCall &call) {
  const char *op = "NegativeLogLikelihoodLoss";
  LossArgs a;
  if (Status s = checkLoss(op, call, a); !s.isOk())
    return s;
  for (size_t i = 1; i < call.numOutputs; ++i)
    if (call.outputs[i].data)
      return invalid(op, "output " + std::to_string(i) + " is not supported");
  a.scores = static_cast<const float *>(call.inputs[0].data);
  nllLossCore(a);
  return Status::ok();
}

Status softmaxCrossEntropyLoss(const KernelCall &call) {
  const char *op = "SoftmaxCrossEntropyLoss";
  LossArgs a;
  if (Status s = checkLoss(op, call, a); !s.isOk())
    return s;
  for (size_t i = 2; i < call.numOutputs; ++i)
    if (call.outputs[i].data)
      return invalid(op, "output " + std::to_string(i) + " is not supported");
  const TensorView &X = call.inputs[0];
  float *logProb = nullptr;
  if (call.numOutputs > 1 && call.outputs[1].data) {
    const TensorView &P = call.outputs[1];
    if (Status s = checkFloat(op, &P, "output log_prob"); !s.isOk())
      return s;
    if (Status s = checkOutputShape(op, P, X.shape); !s.isOk())
      return s;
    logProb = static_cast<float *>(P.data);
  } else {
    size_t count = size_t(a.N * a.C * a.D);
    if (count && !(logProb = static_cast<float *>(call.scratch.get(count * sizeof(float)))))
      return outOfMemory(op, count * sizeof(float));
  }
  // Log-softmax over C (stride D), max-shifted.
  const float *x = static_cast<const float *>(X.data);
  for (int64_t n = 0; n < a.N; ++n)
    for (int64_t d = 0; d < a.D; ++d) {
      const float *xr = x + n * a.C * a.D + d;
      float *pr = logProb + n * a.C * a.D + d;
      float m = -std::numeric_limits<float>::infinity();
      for (int64_t c = 0; c < a.C; ++c)
        m = std::max(m, xr[c * a.D]);
      double sum = 0;
      for (int64_t c = 0; c < a.C; ++c)
        sum += std::exp(double(xr[c * a.D]) - m);
      float shift = float(m + std::log(sum));
      for (int64_t c = 0; c < a.C; ++c)
        pr[c * a.D] = xr[c * a.D] - shift;
    }
  a.scores = logProb;
  nllLossCore(a);
  return Status::ok();
}

} // namespace ortc::cpu::kernels
