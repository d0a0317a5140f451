//===- LossNormKernelsTest.cpp - loss kernels and the further norms -------===//
//
// NegativeLogLikelihoodLoss, SoftmaxCrossEntropyLoss, RMSNormalization,
// GroupNormalization, LpNormalization, MeanVarianceNormalization, LRN,
// Hardmax and ReduceLogSum through the registry: hand-computed values pin
// the conventions, naive double-precision references written here cover
// shapes and attributes, and bad calls return InvalidArgument.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"

#include "test/unit/cpu/KernelTestUtil.h"
#include "test/unit/cpu/TestRng.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

using namespace ortc;
using namespace ortc::cpu;
using namespace ortc::cpu::kernel_test;

namespace {

int64_t at(const Tensor &t, int64_t i) {
  if (t.type == ElementType::Int64)
    return reinterpret_cast<const int64_t *>(t.bytes.data())[i];
  return reinterpret_cast<const int32_t *>(t.bytes.data())[i];
}

//===----------------------------------------------------------------------===//
// NegativeLogLikelihoodLoss / SoftmaxCrossEntropyLoss
//===----------------------------------------------------------------------===//

/// Naive loss over log-probabilities `lp` [N, C, D] (double).
std::vector<double> refLoss(const std::vector<double> &lp, const Tensor &target,
                            const Tensor *weight, int64_t N, int64_t C, int64_t D,
                            const std::string &reduction, bool hasIgnore, int64_t ignore) {
  std::vector<double> loss(N * D);
  double sum = 0, wsum = 0;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t d = 0; d < D; ++d) {
      int64_t t = at(target, n * D + d);
      if (hasIgnore && t == ignore) {
        loss[n * D + d] = 0;
        continue;
      }
      double w = weight ? weight->f()[t] : 1.0;
      loss[n * D + d] = -lp[(n * C + t) * D + d] * w;
      sum += loss[n * D + d];
      wsum += w;
    }
  if (reduction == "none")
    return loss;
  return {reduction == "sum" ? sum : sum / wsum};
}

TEST(LossKernels, NegativeLogLikelihoodLossByHand) {
  // Two samples, three classes: the losses are -x[n][t[n]].
  Tensor X = F({2, 3}, {-1.f, -2.f, -3.f, -0.5f, -0.25f, -4.f});
  Tensor T = I64({2}, {2, 0});
  Tensor W = F({3}, {1.f, 2.f, 4.f});
  Tensor none(ElementType::Float, {2}), scalar(ElementType::Float, {});
  EXPECT_OK(run("NegativeLogLikelihoodLoss", Attrs().s("reduction", "none"), {&X, &T}, {&none}));
  EXPECT_TRUE(near(none.floats(), {3.0, 0.5}));
  EXPECT_OK(run("NegativeLogLikelihoodLoss", Attrs().s("reduction", "sum"), {&X, &T}, {&scalar}));
  EXPECT_TRUE(near(scalar.floats(), {3.5}));
  EXPECT_OK(run("NegativeLogLikelihoodLoss", {}, {&X, &T}, {&scalar})); // default mean
  EXPECT_TRUE(near(scalar.floats(), {1.75}));
  // Weighted mean: (3*4 + 0.5*1) / (4 + 1).
  EXPECT_OK(run("NegativeLogLikelihoodLoss", {}, {&X, &T, &W}, {&scalar}));
  EXPECT_TRUE(near(scalar.floats(), {12.5 / 5}));
  // Ignoring class 2 leaves sample 1 alone; int32 targets read the same.
  Tensor T32 = I32({2}, {2, 0});
  EXPECT_OK(run("NegativeLogLikelihoodLoss", Attrs().i("ignore_index", 2), {&X, &T32, &W},
                {&scalar}));
  EXPECT_TRUE(near(scalar.floats(), {0.5}));
  // A negative ignore_index matches a negative target, which is otherwise
  // out of range.
  Tensor Tn = I64({2}, {-1, 1});
  EXPECT_OK(run("NegativeLogLikelihoodLoss", Attrs().i("ignore_index", -1).s("reduction", "none"),
                {&X, &Tn}, {&none}));
  EXPECT_TRUE(near(none.floats(), {0.0, 0.25}));
}

TEST(LossKernels, NegativeLogLikelihoodLossAgainstReference) {
  struct Case {
    std::vector<int64_t> x;
    bool weight;
    std::string reduction;
    bool hasIgnore;
    int64_t ignore;
  };
  std::vector<Case> cases = {
      {{3, 5}, false, "none", false, 0},       {{3, 5, 2}, true, "mean", false, 0},
      {{3, 5, 6, 6}, true, "sum", true, 0},    {{2, 4, 3, 2, 2}, false, "mean", true, -5},
      {{3, 5, 2, 3}, true, "none", true, 10},  {{4, 6, 5}, false, "sum", true, 1},
  };
  uint64_t seed = 70;
  for (const Case &c : cases) {
    Tensor X = randomF(c.x, seed++, 2.f);
    int64_t N = c.x[0], C = c.x[1], D = numel(c.x) / (N * C);
    std::vector<int64_t> tshape = c.x;
    tshape.erase(tshape.begin() + 1);
    Rng rng(seed++);
    std::vector<int64_t> tv(N * D);
    for (int64_t &t : tv) {
      t = int64_t((rng.next() + 1.f) * 0.5f * float(C + 1)) % (C + 1);
      if (t == C) // sometimes the ignored value
        t = c.hasIgnore ? c.ignore : 0;
    }
    Tensor T = I64(tshape, tv);
    Tensor W = randomF({C}, seed++);
    for (int64_t i = 0; i < C; ++i)
      W.f()[i] = std::fabs(W.f()[i]) + 0.1f;
    std::vector<double> lp(X.f(), X.f() + numel(c.x));
    std::vector<double> want = refLoss(lp, T, c.weight ? &W : nullptr, N, C, D, c.reduction,
                                       c.hasIgnore, c.ignore);
    Attrs attrs;
    attrs.s("reduction", c.reduction);
    if (c.hasIgnore)
      attrs.i("ignore_index", c.ignore);
    Tensor L(ElementType::Float, c.reduction == "none" ? tshape : std::vector<int64_t>{});
    EXPECT_OK(run("NegativeLogLikelihoodLoss", attrs, {&X, &T, c.weight ? &W : nullptr}, {&L}));
    EXPECT_TRUE(near(L.floats(), want)) << shapeToString(c.x) << " " << c.reduction;
  }
}

TEST(LossKernels, NegativeLogLikelihoodLossRejects) {
  Tensor X = randomF({2, 3}, 1), L(ElementType::Float, {});
  Tensor T = I64({2}, {0, 3});
  EXPECT_INVALID(run("NegativeLogLikelihoodLoss", {}, {&X, &T}, {&L}), "target value 3");
  Tensor Tneg = I64({2}, {0, -1});
  EXPECT_INVALID(run("NegativeLogLikelihoodLoss", Attrs().i("ignore_index", -2), {&X, &Tneg}, {&L}),
                 "target value -1");
  Tensor T2 = I64({2}, {0, 1});
  EXPECT_INVALID(run("NegativeLogLikelihoodLoss", Attrs().s("reduction", "avg"), {&X, &T2}, {&L}),
                 "reduction");
  Tensor W = randomF({4}, 2);
  EXPECT_INVALID(run("NegativeLogLikelihoodLoss", {}, {&X, &T2, &W}, {&L}), "weight shape");
  Tensor Tbad = I64({3}, {0, 1, 2});
  EXPECT_INVALID(run("NegativeLogLikelihoodLoss", {}, {&X, &Tbad}, {&L}), "target shape");
  Tensor Lnone(ElementType::Float, {3});
  EXPECT_INVALID(run("NegativeLogLikelihoodLoss", Attrs().s("reduction", "none"), {&X, &T2},
                     {&Lnone}),
                 "output shape");
  Tensor Tf = randomF({2}, 3);
  EXPECT_INVALID(run("NegativeLogLikelihoodLoss", {}, {&X, &Tf}, {&L}), "int32 or int64");
}

TEST(LossKernels, SoftmaxCrossEntropyLoss) {
  // By hand: equal scores give log-probabilities -log(3).
  Tensor X = F({1, 3}, {2.f, 2.f, 2.f});
  Tensor T = I64({1}, {1});
  Tensor L(ElementType::Float, {}), P(ElementType::Float, {1, 3});
  EXPECT_OK(run("SoftmaxCrossEntropyLoss", {}, {&X, &T}, {&L, &P}));
  EXPECT_TRUE(near(L.floats(), {std::log(3.0)}));
  EXPECT_TRUE(near(P.floats(), {-std::log(3.0), -std::log(3.0), -std::log(3.0)}));

  struct Case {
    std::vector<int64_t> x;
    bool weight;
    std::string reduction;
    bool hasIgnore;
    int64_t ignore;
    bool logProb;
  };
  std::vector<Case> cases = {
      {{3, 5}, false, "mean", false, 0, true},     {{3, 5, 2}, true, "mean", true, 1, false},
      {{3, 5, 2, 7}, false, "sum", true, 2, true}, {{2, 4, 3, 2}, true, "none", true, -5, true},
      {{3, 5}, true, "none", false, 0, false},
  };
  uint64_t seed = 90;
  for (const Case &c : cases) {
    Tensor X = randomF(c.x, seed++, 4.f);
    int64_t N = c.x[0], C = c.x[1], D = numel(c.x) / (N * C);
    std::vector<int64_t> tshape = c.x;
    tshape.erase(tshape.begin() + 1);
    Rng rng(seed++);
    std::vector<int64_t> tv(N * D);
    for (int64_t &t : tv) {
      t = int64_t((rng.next() + 1.f) * 0.5f * float(C + 1)) % (C + 1);
      if (t == C)
        t = c.hasIgnore ? c.ignore : 0;
    }
    Tensor T = I64(tshape, tv);
    Tensor W = randomF({C}, seed++);
    for (int64_t i = 0; i < C; ++i)
      W.f()[i] = std::fabs(W.f()[i]) + 0.1f;
    std::vector<double> lp(numel(c.x));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t d = 0; d < D; ++d) {
        double s = 0;
        for (int64_t k = 0; k < C; ++k)
          s += std::exp(double(X.f()[(n * C + k) * D + d]));
        for (int64_t k = 0; k < C; ++k)
          lp[(n * C + k) * D + d] = X.f()[(n * C + k) * D + d] - std::log(s);
      }
    std::vector<double> want = refLoss(lp, T, c.weight ? &W : nullptr, N, C, D, c.reduction,
                                       c.hasIgnore, c.ignore);
    Attrs attrs;
    attrs.s("reduction", c.reduction);
    if (c.hasIgnore)
      attrs.i("ignore_index", c.ignore);
    Tensor L(ElementType::Float, c.reduction == "none" ? tshape : std::vector<int64_t>{});
    Tensor P(ElementType::Float, c.x);
    std::vector<Tensor *> outs = {&L};
    if (c.logProb)
      outs.push_back(&P);
    EXPECT_OK(run("SoftmaxCrossEntropyLoss", attrs, {&X, &T, c.weight ? &W : nullptr}, outs));
    EXPECT_TRUE(near(L.floats(), want)) << shapeToString(c.x) << " " << c.reduction;
    if (c.logProb) {
      EXPECT_TRUE(near(P.floats(), lp)) << shapeToString(c.x);
    }
  }
  Tensor Pbad(ElementType::Float, {3, 1});
  EXPECT_INVALID(run("SoftmaxCrossEntropyLoss", {}, {&X, &T}, {&L, &Pbad}), "output shape");
  Tensor X1 = randomF({4}, 5);
  EXPECT_INVALID(run("SoftmaxCrossEntropyLoss", {}, {&X1, &T}, {&L}), "scores must be");
}

//===----------------------------------------------------------------------===//
// RMSNormalization / GroupNormalization
//===----------------------------------------------------------------------===//

TEST(NormKernels, RMSNormalization) {
  // By hand: [3, 4] has mean square 12.5.
  Tensor X = F({1, 2}, {3.f, 4.f}), S = F({2}, {1.f, 2.f}), Y(ElementType::Float, {1, 2});
  EXPECT_OK(run("RMSNormalization", Attrs().f("epsilon", 0.f), {&X, &S}, {&Y}));
  double r = std::sqrt(12.5);
  EXPECT_TRUE(near(Y.floats(), {3 / r, 8 / r}));

  struct Case {
    std::vector<int64_t> x;
    int64_t axis;
    std::vector<int64_t> scale;
  };
  std::vector<Case> cases = {{{2, 3, 4, 5}, -1, {5}}, {{2, 3, 4, 5}, 1, {3, 4, 5}},
                             {{2, 3, 5}, 0, {2, 3, 5}}, {{2, 3, 4}, 1, {1, 4}},
                             {{4, 6}, -2, {4, 1}}};
  uint64_t seed = 110;
  for (const Case &c : cases) {
    Tensor Xr = randomF(c.x, seed++, 3.f), Sr = randomF(c.scale, seed++);
    int64_t axis = c.axis < 0 ? c.axis + int64_t(c.x.size()) : c.axis;
    std::vector<int64_t> norm(c.x.begin() + axis, c.x.end());
    int64_t n = numel(norm), outer = numel(c.x) / n;
    std::vector<double> want(numel(c.x));
    for (int64_t o = 0; o < outer; ++o) {
      double sq = 0;
      for (int64_t i = 0; i < n; ++i)
        sq += double(Xr.f()[o * n + i]) * Xr.f()[o * n + i];
      double inv = 1 / std::sqrt(sq / n + 0.1);
      for (int64_t i = 0; i < n; ++i) {
        // Scale index: right-aligned, size-1 dims broadcast.
        int64_t rem = i, si = 0, stride = 1;
        for (size_t d = norm.size(); d-- > 0;) {
          int64_t idx = rem % norm[d];
          rem /= norm[d];
          size_t back = norm.size() - 1 - d;
          if (back < c.scale.size()) {
            int64_t sd = c.scale[c.scale.size() - 1 - back];
            si += (sd == 1 ? 0 : idx) * stride;
            stride *= sd;
          }
        }
        want[o * n + i] = Xr.f()[o * n + i] * inv * Sr.f()[si];
      }
    }
    Tensor Yr(ElementType::Float, c.x);
    EXPECT_OK(run("RMSNormalization", Attrs().i("axis", c.axis).f("epsilon", 0.1f), {&Xr, &Sr},
                  {&Yr}));
    EXPECT_TRUE(near(Yr.floats(), want)) << shapeToString(c.x) << " axis " << c.axis;
  }
  Tensor X2 = randomF({2, 6}, 1), S2 = randomF({5}, 2), Y2(ElementType::Float, {2, 6});
  EXPECT_INVALID(run("RMSNormalization", {}, {&X2, &S2}, {&Y2}), "does not broadcast");
  Tensor S3 = randomF({2, 6}, 3); // reaches past the normalized dims at axis -1
  EXPECT_INVALID(run("RMSNormalization", {}, {&X2, &S3}, {&Y2}), "does not broadcast");
  Tensor S4 = randomF({6}, 4);
  EXPECT_INVALID(run("RMSNormalization", Attrs().i("stash_type", 11), {&X2, &S4}, {&Y2}),
                 "stash_type");
  EXPECT_INVALID(run("RMSNormalization", Attrs().i("axis", 2), {&X2, &S4}, {&Y2}), "axis");
}

TEST(NormKernels, GroupNormalization) {
  for (auto [shape, groups] : std::vector<std::pair<std::vector<int64_t>, int64_t>>{
           {{3, 4, 2, 2}, 2}, {{2, 6, 5}, 3}, {{2, 4}, 4}, {{1, 6, 3, 2}, 1}}) {
    Tensor X = randomF(shape, 7, 2.f), S = randomF({shape[1]}, 8), B = randomF({shape[1]}, 9);
    int64_t N = shape[0], C = shape[1], inner = numel(shape) / (N * C), per = C / groups;
    std::vector<double> want(numel(shape));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t g = 0; g < groups; ++g) {
        int64_t base = (n * C + g * per) * inner, cnt = per * inner;
        double m = 0, v = 0;
        for (int64_t i = 0; i < cnt; ++i)
          m += X.f()[base + i];
        m /= cnt;
        for (int64_t i = 0; i < cnt; ++i)
          v += (X.f()[base + i] - m) * (X.f()[base + i] - m);
        v /= cnt;
        for (int64_t i = 0; i < cnt; ++i) {
          int64_t c = g * per + i / inner;
          want[base + i] = (X.f()[base + i] - m) / std::sqrt(v + 1e-2) * S.f()[c] + B.f()[c];
        }
      }
    Tensor Y(ElementType::Float, shape);
    EXPECT_OK(run("GroupNormalization", Attrs().i("num_groups", groups).f("epsilon", 1e-2f),
                  {&X, &S, &B}, {&Y}));
    EXPECT_TRUE(near(Y.floats(), want, 1e-4)) << shapeToString(shape) << " groups " << groups;
  }
  Tensor X = randomF({2, 6, 3}, 1), S = randomF({6}, 2), B = randomF({6}, 3);
  Tensor Y(ElementType::Float, {2, 6, 3});
  EXPECT_INVALID(run("GroupNormalization", Attrs().i("num_groups", 4), {&X, &S, &B}, {&Y}),
                 "num_groups");
  Tensor Sg = randomF({2}, 4), Bg = randomF({2}, 5); // the opset-18 per-group form
  EXPECT_INVALID(run("GroupNormalization", Attrs().i("num_groups", 2), {&X, &Sg, &Bg}, {&Y}),
                 "scale must be [6]");
}

//===----------------------------------------------------------------------===//
// LpNormalization / Hardmax / MeanVarianceNormalization / LRN
//===----------------------------------------------------------------------===//

TEST(NormKernels, LpNormalization) {
  Tensor X = F({2, 3}, {3.f, 0.f, -4.f, 0.f, 0.f, 0.f}), Y(ElementType::Float, {2, 3});
  EXPECT_OK(run("LpNormalization", {}, {&X}, {&Y})); // p 2, last axis
  EXPECT_TRUE(near(Y.floats(), {0.6, 0, -0.8, 0, 0, 0}));
  EXPECT_OK(run("LpNormalization", Attrs().i("p", 1), {&X}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {3 / 7.0, 0, -4 / 7.0, 0, 0, 0}));
  EXPECT_OK(run("LpNormalization", Attrs().i("axis", 0), {&X}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {1, 0, -1, 0, 0, 0}));
  EXPECT_INVALID(run("LpNormalization", Attrs().i("p", 3), {&X}, {&Y}), "p 3");
  EXPECT_INVALID(run("LpNormalization", Attrs().i("axis", 2), {&X}, {&Y}), "axis");
}

TEST(NormKernels, Hardmax) {
  // Ties go to the first maximum.
  Tensor X = F({2, 4}, {1.f, 3.f, 3.f, 2.f, -1.f, -5.f, -1.f, -2.f}), Y(ElementType::Float, {2, 4});
  EXPECT_OK(run("Hardmax", {}, {&X}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {0, 1, 0, 0, 1, 0, 0, 0}));
  EXPECT_OK(run("Hardmax", Attrs().i("axis", 0), {&X}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {1, 1, 1, 1, 0, 0, 0, 0}));
  Tensor Xn = F({1, 3}, {1.f, std::nanf(""), 5.f}), Yn(ElementType::Float, {1, 3});
  EXPECT_OK(run("Hardmax", {}, {&Xn}, {&Yn}));
  EXPECT_TRUE(near(Yn.floats(), {0, 1, 0}));
  // A strided axis against a reference.
  Tensor X3 = randomF({3, 4, 5}, 12), Y3(ElementType::Float, {3, 4, 5});
  EXPECT_OK(run("Hardmax", Attrs().i("axis", 1), {&X3}, {&Y3}));
  std::vector<double> want(60, 0);
  for (int64_t o = 0; o < 3; ++o)
    for (int64_t j = 0; j < 5; ++j) {
      int64_t best = 0;
      for (int64_t i = 1; i < 4; ++i)
        if (X3.f()[(o * 4 + i) * 5 + j] > X3.f()[(o * 4 + best) * 5 + j])
          best = i;
      want[(o * 4 + best) * 5 + j] = 1;
    }
  EXPECT_TRUE(near(Y3.floats(), want));
  EXPECT_INVALID(run("Hardmax", Attrs().i("axis", -3), {&X}, {&Y}), "axis");
}

TEST(NormKernels, MeanVarianceNormalization) {
  for (std::vector<int64_t> axes :
       {std::vector<int64_t>{0, 2, 3}, std::vector<int64_t>{1}, std::vector<int64_t>{-1, 0}}) {
    std::vector<int64_t> shape = {3, 2, 4, 2};
    Tensor X = randomF(shape, 21, 3.f), Y(ElementType::Float, shape);
    std::vector<bool> red(4, false);
    for (int64_t a : axes)
      red[a < 0 ? a + 4 : a] = true;
    // Group key: the kept coordinates.
    auto key = [&](int64_t e) {
      int64_t k = 0;
      for (int64_t d = 3, rem = e; d >= 0; --d) {
        int64_t idx = rem % shape[d];
        rem /= shape[d];
        if (!red[d])
          k = k * 10 + idx + 1;
      }
      return k;
    };
    std::vector<double> want(numel(shape));
    for (int64_t e = 0; e < numel(shape); ++e) {
      double s = 0, q = 0;
      int64_t cnt = 0;
      for (int64_t f = 0; f < numel(shape); ++f)
        if (key(f) == key(e)) {
          s += X.f()[f];
          q += double(X.f()[f]) * X.f()[f];
          ++cnt;
        }
      double m = s / cnt;
      want[e] = (X.f()[e] - m) / (std::sqrt(q / cnt - m * m) + 1e-9);
    }
    Attrs attrs;
    if (axes != std::vector<int64_t>{0, 2, 3})
      attrs.is("axes", axes);
    EXPECT_OK(run("MeanVarianceNormalization", attrs, {&X}, {&Y}));
    EXPECT_TRUE(near(Y.floats(), want, 1e-4));
  }
  Tensor X = randomF({2, 3}, 1), Y(ElementType::Float, {2, 3});
  EXPECT_INVALID(run("MeanVarianceNormalization", Attrs().is("axes", {1, -1}), {&X}, {&Y}),
                 "repeated");
  EXPECT_INVALID(run("MeanVarianceNormalization", {}, {&X}, {&Y}), "out of range"); // [0,2,3]
}

TEST(NormKernels, LRN) {
  // By hand: one pixel, channels 1, 2, 3, size 2 (window [c, c+1]), alpha 2
  // (alpha/size 1), bias 1, beta 1: y = x / (1 + sum of squares).
  Tensor X = F({1, 3, 1, 1}, {1.f, 2.f, 3.f}), Y(ElementType::Float, {1, 3, 1, 1});
  EXPECT_OK(run("LRN", Attrs().i("size", 2).f("alpha", 2.f).f("beta", 1.f).f("bias", 1.f), {&X},
                {&Y}));
  EXPECT_TRUE(near(Y.floats(), {1 / 6.0, 2 / 14.0, 3 / 10.0}));

  std::vector<int64_t> shape = {2, 5, 3, 2};
  Tensor Xr = randomF(shape, 31, 2.f), Yr(ElementType::Float, shape);
  int64_t size = 3, C = 5, inner = 6;
  std::vector<double> want(numel(shape));
  for (int64_t n = 0; n < 2; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        double sq = 0;
        for (int64_t k = std::max<int64_t>(0, c - 1); k <= std::min<int64_t>(C - 1, c + 1); ++k)
          sq += double(Xr.f()[(n * C + k) * inner + i]) * Xr.f()[(n * C + k) * inner + i];
        int64_t e = (n * C + c) * inner + i;
        want[e] = Xr.f()[e] / std::pow(2.0 + 1e-1 / size * sq, 0.5);
      }
  EXPECT_OK(run("LRN", Attrs().i("size", size).f("alpha", 1e-1f).f("beta", 0.5f).f("bias", 2.f),
                {&Xr}, {&Yr}));
  EXPECT_TRUE(near(Yr.floats(), want));
  EXPECT_INVALID(run("LRN", {}, {&X}, {&Y}), "size 0");
}

//===----------------------------------------------------------------------===//
// ReduceLogSum
//===----------------------------------------------------------------------===//

TEST(NormKernels, ReduceLogSum) {
  Tensor X = F({2, 3}, {1.f, 2.f, 3.f, 0.5f, 0.5f, 1.f});
  Tensor axes = I64({1}, {1}), Y(ElementType::Float, {2, 1});
  EXPECT_OK(run("ReduceLogSum", {}, {&X, &axes}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {std::log(6.0), std::log(2.0)}));
  // An empty axes input reduces everything (noop_with_empty_axes 0).
  Tensor none = I64({0}, {}), all(ElementType::Float, {1, 1});
  EXPECT_OK(run("ReduceLogSum", {}, {&X, &none}, {&all}));
  EXPECT_TRUE(near(all.floats(), {std::log(8.0)}));
  // An empty reduction gives log(0) = -inf.
  Tensor E(ElementType::Float, {2, 0}), Ye(ElementType::Float, {2, 1});
  EXPECT_OK(run("ReduceLogSum", {}, {&E, &axes}, {&Ye}));
  EXPECT_TRUE(near(Ye.floats(), {-INFINITY, -INFINITY}));
  Tensor bad = I64({1}, {2});
  EXPECT_INVALID(run("ReduceLogSum", {}, {&X, &bad}, {&Y}), "out of range");
}

TEST(NormKernels, ReduceOtherElementTypes) {
  // float64 for every kind: LogSumExp of large values does not overflow.
  Tensor D(ElementType::Double, {2, 2});
  double dv[4] = {1000.0, 1000.0, -1.0, 2.0};
  std::memcpy(D.bytes.data(), dv, sizeof dv);
  Tensor axes = I64({1}, {1}), Yd(ElementType::Double, {2, 1});
  EXPECT_OK(run("ReduceLogSumExp", {}, {&D, &axes}, {&Yd}));
  const double *yd = reinterpret_cast<const double *>(Yd.bytes.data());
  EXPECT_NEAR(yd[0], 1000.0 + std::log(2.0), 1e-12);
  EXPECT_NEAR(yd[1], std::log(std::exp(-1.0) + std::exp(2.0)), 1e-12);
  // Max and Min over integers and bool; an empty reduction gives the type's
  // lowest (Max) or highest (Min) value.
  Tensor I = I64({2, 3}, {5, -7, 3, -1, -2, -9}), Yi(ElementType::Int64, {2, 1});
  EXPECT_OK(run("ReduceMax", {}, {&I, &axes}, {&Yi}));
  EXPECT_EQ(at(Yi, 0), 5);
  EXPECT_EQ(at(Yi, 1), -1);
  EXPECT_OK(run("ReduceMin", {}, {&I, &axes}, {&Yi}));
  EXPECT_EQ(at(Yi, 0), -7);
  EXPECT_EQ(at(Yi, 1), -9);
  Tensor B(ElementType::Bool, {2, 2});
  B.bytes[0] = 0, B.bytes[1] = 1, B.bytes[2] = 0, B.bytes[3] = 0;
  Tensor Yb(ElementType::Bool, {2, 1});
  EXPECT_OK(run("ReduceMax", {}, {&B, &axes}, {&Yb}));
  EXPECT_EQ(Yb.bytes[0], 1);
  EXPECT_EQ(Yb.bytes[1], 0);
  EXPECT_OK(run("ReduceMin", {}, {&B, &axes}, {&Yb}));
  EXPECT_EQ(Yb.bytes[0], 0);
  Tensor E(ElementType::Int32, {2, 0}), Ye(ElementType::Int32, {2, 1});
  EXPECT_OK(run("ReduceMax", {}, {&E, &axes}, {&Ye}));
  EXPECT_EQ(at(Ye, 0), std::numeric_limits<int32_t>::lowest());
  EXPECT_OK(run("ReduceMin", {}, {&E, &axes}, {&Ye}));
  EXPECT_EQ(at(Ye, 1), std::numeric_limits<int32_t>::max());
  // Integer sums are not computed; the output type must be the input's.
  EXPECT_INVALID(run("ReduceSum", {}, {&I, &axes}, {&Yi}), "float32 or float64");
  Tensor Yf(ElementType::Float, {2, 1});
  EXPECT_INVALID(run("ReduceMax", {}, {&I, &axes}, {&Yf}), "output must be int64");
  Tensor H(ElementType::Float16, {2, 2}), Yh(ElementType::Float16, {2, 1});
  EXPECT_INVALID(run("ReduceMax", {}, {&H, &axes}, {&Yh}), "got float16");
}

TEST(NormKernels, BatchNormalizationTraining) {
  std::vector<int64_t> shape = {2, 3, 2, 2};
  Tensor X = randomF(shape, 41, 2.f), S = randomF({3}, 42), B = randomF({3}, 43);
  Tensor M = randomF({3}, 44), V = randomF({3}, 45);
  for (int64_t c = 0; c < 3; ++c)
    V.f()[c] = std::fabs(V.f()[c]) + 0.5f;
  int64_t N = 2, C = 3, inner = 4;
  std::vector<double> want(numel(shape)), rm(C), rv(C);
  for (int64_t c = 0; c < C; ++c) {
    double s = 0, q = 0;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i)
        s += X.f()[(n * C + c) * inner + i];
    double m = s / (N * inner);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i)
        q += std::pow(X.f()[(n * C + c) * inner + i] - m, 2);
    double v = q / (N * inner);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t i = 0; i < inner; ++i) {
        int64_t e = (n * C + c) * inner + i;
        want[e] = (X.f()[e] - m) / std::sqrt(v + 1e-2) * S.f()[c] + B.f()[c];
      }
    rm[c] = M.f()[c] * 0.8 + m * 0.2;
    rv[c] = V.f()[c] * 0.8 + v * 0.2;
  }
  Tensor Y(ElementType::Float, shape), RM(ElementType::Float, {3}), RV(ElementType::Float, {3});
  Attrs attrs = Attrs().i("training_mode", 1).f("epsilon", 1e-2f).f("momentum", 0.8f);
  EXPECT_OK(run("BatchNormalization", attrs, {&X, &S, &B, &M, &V}, {&Y, &RM, &RV}));
  EXPECT_TRUE(near(Y.floats(), want, 1e-4));
  EXPECT_TRUE(near(RM.floats(), rm));
  EXPECT_TRUE(near(RV.floats(), rv));
  // The running statistics are optional.
  Tensor Y2(ElementType::Float, shape);
  EXPECT_OK(run("BatchNormalization", attrs, {&X, &S, &B, &M, &V}, {&Y2}));
  EXPECT_TRUE(near(Y2.floats(), want, 1e-4));
  Tensor bad(ElementType::Float, {2});
  EXPECT_INVALID(run("BatchNormalization", attrs, {&X, &S, &B, &M, &V}, {&Y, &bad}),
                 "running_mean must be [3]");
}

} // namespace
