//===- OnnxAttentionKernelsTest.cpp - ONNX Attention and RotaryEmbedding ---===//
//
// The OnnxAttention and RotaryEmbedding library kernels: hand-computed cases
// pin each rule of the spec (scale, causal offset with a past cache or
// nonpad_kv_seqlen, GQA head mapping, the 3-D layout, masks padded to the total
// sequence, fully-masked rows, softcap, the qk_matmul_output modes, windows,
// float16 / bfloat16 storage); random cases compare against a naive reference
// that builds the full bias tensor and repeats the kv heads as the spec's
// pattern does. Error cases check InvalidArgument.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include "test/unit/cpu/KernelTestUtil.h"
#include "test/unit/cpu/TestRng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

using namespace ortc;
using namespace ortc::cpu;
using namespace ortc::cpu::kernel_test;

namespace {

const float kLn3 = std::log(3.f);
const float kInf = std::numeric_limits<float>::infinity();

//===----------------------------------------------------------------------===//
// Attention: hand-computed cases
//===----------------------------------------------------------------------===//

// scale 1: logits [0, ln 3] give probabilities [1/4, 3/4]; Y = 4/4 + 8*3/4.
TEST(OnnxAttention, OneHeadByHand) {
  Tensor Q = F({1, 1, 1, 1}, {1}), K = F({1, 1, 2, 1}, {0, kLn3}), V = F({1, 1, 2, 1}, {4, 8});
  Tensor Y = zeros({1, 1, 1, 1}), PK = zeros({1, 1, 2, 1}), PV = zeros({1, 1, 2, 1}),
         QK = zeros({1, 1, 1, 2});
  EXPECT_OK(run("OnnxAttention", Attrs().f("scale", 1.f), {&Q, &K, &V}, {&Y, &PK, &PV, &QK}));
  EXPECT_TRUE(near(Y.floats(), {7}));
  EXPECT_TRUE(near(PK.floats(), {0, kLn3})); // no past: the present cache is K
  EXPECT_TRUE(near(PV.floats(), {4, 8}));
  EXPECT_TRUE(near(QK.floats(), {0, kLn3})); // mode 0: the scaled product

  // The default scale is 1/sqrt(D): D = 4 halves these logits.
  Tensor Q4 = F({1, 1, 1, 4}, {1, 1, 1, 1}), K4 = F({1, 1, 2, 4}, {0, 0, 0, 0, kLn3, kLn3, 0, 0});
  EXPECT_OK(run("OnnxAttention", Attrs(), {&Q4, &K4, &V}, {&Y}));
  float w = std::exp(kLn3); // logits [0, 2 ln3 / 2]
  EXPECT_TRUE(near(Y.floats(), {(4 + 8 * w) / (1 + w)}));
}

// Q = 0 makes every allowed key equally likely, so Y is the mean of the
// allowed values: each masking rule shows in which values are averaged.
TEST(OnnxAttention, CausalWithPastIsOffsetByThePastLength) {
  Tensor Q = zeros({1, 1, 2, 1}), K = zeros({1, 1, 2, 1}), V = F({1, 1, 2, 1}, {2, 6});
  Tensor pastK = zeros({1, 1, 1, 1}), pastV = F({1, 1, 1, 1}, {1});
  Tensor Y = zeros({1, 1, 2, 1}), PK = zeros({1, 1, 3, 1}), PV = zeros({1, 1, 3, 1});
  EXPECT_OK(run("OnnxAttention", Attrs().i("is_causal", 1), {&Q, &K, &V, nullptr, &pastK, &pastV},
                {&Y, &PK, &PV}));
  // Query 0 sees keys 0..1 (past + its own), query 1 sees 0..2.
  EXPECT_TRUE(near(Y.floats(), {1.5f, 3.f}));
  EXPECT_TRUE(near(PV.floats(), {1, 2, 6}));

  // Without a past the frontier is the diagonal.
  Tensor Y2 = zeros({1, 1, 2, 1});
  EXPECT_OK(run("OnnxAttention", Attrs().i("is_causal", 1), {&Q, &K, &V}, {&Y2}));
  EXPECT_TRUE(near(Y2.floats(), {2.f, 4.f}));
}

// 3-D inputs [B, S, heads * size]; q heads 0,1 share kv head 0, 2,3 kv head 1.
TEST(OnnxAttention, GroupedQueryHeadsIn3D) {
  Tensor Q = zeros({1, 2, 4}), K = zeros({1, 3, 2});
  // V [B=1, S=3, 2 kv heads * Dv=1]: head 0 values 1,2,3, head 1 values 10,20,30.
  Tensor V = F({1, 3, 2}, {1, 10, 2, 20, 3, 30});
  Tensor Y = zeros({1, 2, 4});
  EXPECT_OK(
      run("OnnxAttention", Attrs().i("q_num_heads", 4).i("kv_num_heads", 2), {&Q, &K, &V}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {2, 2, 20, 20, 2, 2, 20, 20}));
}

TEST(OnnxAttention, MasksArePaddedToTheTotalLengthAndFullyMaskedRowsAreZero) {
  Tensor Q = zeros({1, 1, 2, 1}), K = zeros({1, 1, 3, 1}), V = F({1, 1, 3, 1}, {1, 2, 30});
  Tensor Y = zeros({1, 1, 2, 1});
  // A float mask [Sq, 2] of 3 keys: key 2 is padded out (-inf).
  Tensor Mf = F({2, 2}, {0, kLn3, 0, -kInf});
  EXPECT_OK(run("OnnxAttention", Attrs(), {&Q, &K, &V, &Mf}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {(1 + 2 * 3) / 4.f, 1}));
  // A bool mask: row 0 attends keys 1, 2; row 1 nothing, so it is zero.
  Tensor Mb = Bool({2, 3}, {0, 1, 1, 0, 0, 0});
  Tensor QK = zeros({1, 1, 2, 3});
  EXPECT_OK(run("OnnxAttention", Attrs().i("qk_matmul_output_mode", 3).is("output_slots", {0, 3}),
                {&Q, &K, &V, &Mb}, {&Y, &QK}));
  EXPECT_TRUE(near(Y.floats(), {16, 0}));
  EXPECT_TRUE(near(QK.floats(), {0, 0.5f, 0.5f, 0, 0, 0}));
  // A rank-1 bool mask broadcasts over rows; with is_causal both rules hold.
  Tensor M1 = Bool({3}, {0, 1, 1});
  EXPECT_OK(run("OnnxAttention", Attrs().i("is_causal", 1), {&Q, &K, &V, &M1}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {0, 2})); // row 0: only key 0, masked; row 1: key 1
}

// Logits [2, -2] (scale 1), softcap 1, float mask [0, -1]: what each
// qk_matmul_output_mode exposes.
TEST(OnnxAttention, SoftcapAndQkOutputModes) {
  Tensor Q = F({1, 1, 1, 1}, {2}), K = F({1, 1, 2, 1}, {1, -1}), V = F({1, 1, 2, 1}, {1, 0});
  Tensor M = F({1, 2}, {0, -1});
  float t = std::tanh(2.f);
  float e0 = std::exp(t), e1 = std::exp(-t - 1), p0 = e0 / (e0 + e1), p1 = e1 / (e0 + e1);
  std::vector<std::vector<float>> want = {{2, -2}, {t, -t}, {t, -t - 1}, {p0, p1}};
  for (int64_t mode = 0; mode < 4; ++mode) {
    Tensor Y = zeros({1, 1, 1, 1}), QK = zeros({1, 1, 1, 2});
    Attrs at;
    at.f("scale", 1.f)
        .f("softcap", 1.f)
        .i("qk_matmul_output_mode", mode)
        .is("output_slots", {0, 3});
    EXPECT_OK(run("OnnxAttention", at, {&Q, &K, &V, &M}, {&Y, &QK}));
    EXPECT_TRUE(near(QK.floats(), want[size_t(mode)])) << "mode " << mode;
    EXPECT_TRUE(near(Y.floats(), {p0})) << "mode " << mode;
    // A float64 softmax gives the same numbers here.
    at.i("softmax_precision", 11);
    EXPECT_OK(run("OnnxAttention", at, {&Q, &K, &V, &M}, {&Y, &QK}));
    EXPECT_TRUE(near(Y.floats(), {p0}));
  }
}

TEST(OnnxAttention, NonpadKvSeqlenMasksPaddingAndOffsetsTheCausalFrontier) {
  // B = 2, one query each, 3 cached keys; batch 0 has all 3 valid, batch 1 one.
  Tensor Q = zeros({2, 1, 1, 1}), K = zeros({2, 1, 3, 1});
  Tensor V = F({2, 1, 3, 1}, {1, 2, 6, 5, 50, 500});
  Tensor N = I64({2}, {3, 1}), Y = zeros({2, 1, 1, 1});
  EXPECT_OK(run("OnnxAttention", Attrs().i("is_causal", 1),
                {&Q, &K, &V, nullptr, nullptr, nullptr, &N}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {3, 5}));
  // 2 queries with 1 valid key: offset -1, so query 0 sees nothing.
  Tensor Q2 = zeros({1, 1, 2, 1}), K2 = zeros({1, 1, 3, 1}), V2 = F({1, 1, 3, 1}, {4, 5, 6});
  Tensor N2 = I64({1}, {1}), Y2 = zeros({1, 1, 2, 1});
  EXPECT_OK(run("OnnxAttention", Attrs().i("is_causal", 1),
                {&Q2, &K2, &V2, nullptr, nullptr, nullptr, &N2}, {&Y2}));
  EXPECT_TRUE(near(Y2.floats(), {0, 4}));
}

TEST(OnnxAttention, SlidingWindow) {
  Tensor Q = zeros({1, 1, 3, 1}), K = zeros({1, 1, 3, 1}), V = F({1, 1, 3, 1}, {1, 2, 4});
  Tensor Y = zeros({1, 1, 3, 1});
  // Query i sees keys i-1 .. i.
  EXPECT_OK(run("OnnxAttention", Attrs().i("left_window_size", 1).i("right_window_size", 0),
                {&Q, &K, &V}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {1, 1.5f, 3}));
  // Query i sees keys i .. i+1.
  EXPECT_OK(run("OnnxAttention", Attrs().i("left_window_size", 0).i("right_window_size", 1),
                {&Q, &K, &V}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {1.5f, 3, 4}));
}

// float16 and bfloat16 storage; V (T2) may differ from Q (T1).
TEST(OnnxAttention, HalfPrecisionStorage) {
  for (ElementType t1 : {ElementType::Float16, ElementType::BFloat16}) {
    Tensor Q = F({1, 1, 1, 1}, {1}, t1), K = F({1, 1, 2, 1}, {0, 0}, t1);
    Tensor V = F({1, 1, 2, 2}, {4, 0.5f, 8, 0.25f}); // float32
    Tensor M = F({1, 2}, {0, -kInf}, t1);
    Tensor Y = zeros({1, 1, 1, 2}, t1), PV = zeros({1, 1, 2, 2});
    EXPECT_OK(run("OnnxAttention", Attrs(), {&Q, &K, &V}, {&Y, nullptr, &PV}));
    EXPECT_TRUE(near(Y.floats(), {6, 0.375f}));
    EXPECT_TRUE(near(PV.floats(), {4, 0.5f, 8, 0.25f}));
    EXPECT_OK(run("OnnxAttention", Attrs(), {&Q, &K, &V, &M}, {&Y}));
    EXPECT_TRUE(near(Y.floats(), {4, 0.5f}));
    // softmax_precision may name Q's own type.
    EXPECT_OK(run("OnnxAttention",
                  Attrs().i("softmax_precision", t1 == ElementType::Float16 ? 10 : 16),
                  {&Q, &K, &V, &M}, {&Y}));
  }
}

//===----------------------------------------------------------------------===//
// Attention: random cases against a naive reference
//===----------------------------------------------------------------------===//

struct Config {
  int64_t B, Hq, Hkv, Sq, Skv, P, D, Dv;
  bool threeD, causal, boolMask;
  std::vector<int64_t> mask; // empty: none
  float softcap;
  int64_t left, right;
};

/// The spec's pattern, literally: K and V concatenated with the past and
/// repeated per q head, a [B,Hq,Sq,T] bias, softmax in double.
std::vector<double> reference(const Config &c, const std::vector<float> &q4,
                              const std::vector<float> &k4, const std::vector<float> &v4,
                              const std::vector<float> &mask) {
  int64_t T = c.P + c.Skv, G = c.Hq / c.Hkv;
  double s = std::sqrt(1.0 / std::sqrt(double(c.D)));
  std::vector<double> bias(size_t(c.B * c.Hq * c.Sq * T), 0.0);
  size_t mr = c.mask.size();
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t i = 0; i < c.Sq; ++i)
        for (int64_t j = 0; j < T; ++j) {
          double &x = bias[size_t(((b * c.Hq + h) * c.Sq + i) * T + j)];
          if (mr) {
            int64_t idx[4] = {b, h, i, j}, off = 0, stride = 1;
            bool padded = j >= c.mask.back();
            for (size_t d = mr; d-- > 0;) {
              int64_t n = c.mask[d], at = idx[4 - mr + d];
              off += (n == 1 ? 0 : at) * stride;
              stride *= n;
            }
            if (padded)
              x = -INFINITY;
            else if (c.boolMask)
              x = mask[size_t(off)] != 0 ? 0 : -INFINITY;
            else
              x = mask[size_t(off)];
          }
          int64_t diff = i + c.P - j;
          if ((c.causal && diff < 0) || (c.left >= 0 && diff > c.left) ||
              (c.right >= 0 && -diff > c.right))
            x += -INFINITY;
        }
  std::vector<double> y(size_t(c.B * c.Hq * c.Sq * c.Dv), 0.0);
  for (int64_t b = 0; b < c.B; ++b)
    for (int64_t h = 0; h < c.Hq; ++h)
      for (int64_t i = 0; i < c.Sq; ++i) {
        std::vector<double> logit(static_cast<size_t>(T));
        double m = -INFINITY, biasMax = -INFINITY;
        for (int64_t j = 0; j < T; ++j) {
          double dot = 0;
          for (int64_t d = 0; d < c.D; ++d)
            dot += q4[size_t(((b * c.Hq + h) * c.Sq + i) * c.D + d)] * s *
                   k4[size_t(((b * c.Hkv + h / G) * T + j) * c.D + d)] * s;
          if (c.softcap > 0)
            dot = c.softcap * std::tanh(dot / c.softcap);
          double bj = bias[size_t(((b * c.Hq + h) * c.Sq + i) * T + j)];
          logit[size_t(j)] = dot + bj;
          biasMax = std::max(biasMax, bj);
          m = std::max(m, logit[size_t(j)]);
        }
        if (biasMax == -INFINITY)
          continue; // fully masked: zeros
        double sum = 0;
        for (double &l : logit)
          sum += l = std::exp(l - m);
        for (int64_t j = 0; j < T; ++j)
          for (int64_t d = 0; d < c.Dv; ++d)
            y[size_t(((b * c.Hq + h) * c.Sq + i) * c.Dv + d)] +=
                logit[size_t(j)] / sum * v4[size_t(((b * c.Hkv + h / G) * T + j) * c.Dv + d)];
      }
  return y;
}

/// [B,H,S,d] to [B,S,H*d].
std::vector<float> to3D(const std::vector<float> &x, int64_t B, int64_t H, int64_t S, int64_t d) {
  std::vector<float> out(x.size());
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t s = 0; s < S; ++s)
        for (int64_t e = 0; e < d; ++e)
          out[size_t(((b * S + s) * H + h) * d + e)] = x[size_t(((b * H + h) * S + s) * d + e)];
  return out;
}

TEST(OnnxAttention, RandomAgainstNaiveReference) {
  std::vector<Config> configs = {
      {2, 3, 3, 4, 6, 0, 8, 8, false, false, false, {}, 0, -1, -1},
      {2, 6, 2, 3, 5, 0, 4, 7, true, true, false, {3, 5}, 0, -1, -1},
      {1, 4, 1, 5, 3, 4, 8, 2, false, true, true, {1, 4, 1, 6}, 0, -1, -1},
      {2, 2, 2, 4, 4, 2, 6, 6, true, false, false, {2, 1, 4, 5}, 1.5f, -1, -1},
      {1, 3, 3, 6, 6, 0, 4, 4, false, true, true, {3, 6, 6}, 0, 2, -1},
      {2, 4, 2, 3, 7, 0, 5, 3, false, false, false, {7}, 0.7f, 1, 2},
      {3, 8, 4, 17, 33, 5, 16, 12, false, true, false, {17, 38}, 0, -1, -1},
      // Long keys: query rows go in several blocks.
      {1, 2, 1, 20, 4000, 1000, 4, 3, false, true, false, {20, 4990}, 0, -1, -1},
  };
  ThreadPool pool(3);
  uint64_t seed = 100;
  for (const Config &c : configs) {
    SCOPED_TRACE("config " + std::to_string(&c - configs.data()));
    int64_t T = c.P + c.Skv;
    Tensor Q = randomF({c.B, c.Hq, c.Sq, c.D}, seed++, 2.f);
    Tensor K = randomF({c.B, c.Hkv, c.Skv, c.D}, seed++, 2.f);
    Tensor V = randomF({c.B, c.Hkv, c.Skv, c.Dv}, seed++);
    Tensor pastK = randomF({c.B, c.Hkv, c.P, c.D}, seed++, 2.f);
    Tensor pastV = randomF({c.B, c.Hkv, c.P, c.Dv}, seed++);
    Tensor M;
    std::vector<float> maskValues;
    if (!c.mask.empty()) {
      if (c.boolMask) {
        test_support::Rng rng(seed++);
        std::vector<int> bits(size_t(numel(c.mask)));
        for (int &bit : bits)
          bit = rng.next() > -0.6f;
        M = Bool(c.mask, bits);
        maskValues.assign(bits.begin(), bits.end());
      } else {
        M = randomF(c.mask, seed++, 2.f);
        maskValues = M.floats();
      }
    }
    // The naive reference reads [B,H,T,d] caches.
    auto cat = [&](const Tensor &past, const Tensor &now, int64_t d) {
      std::vector<float> p = past.floats(), n = now.floats(), out;
      for (int64_t bh = 0; bh < c.B * c.Hkv; ++bh) {
        out.insert(out.end(), p.begin() + bh * c.P * d, p.begin() + (bh + 1) * c.P * d);
        out.insert(out.end(), n.begin() + bh * c.Skv * d, n.begin() + (bh + 1) * c.Skv * d);
      }
      return out;
    };
    std::vector<float> k4 = cat(pastK, K, c.D), v4 = cat(pastV, V, c.Dv);
    std::vector<double> want = reference(c, Q.floats(), k4, v4, maskValues);
    std::vector<float> wantF(want.begin(), want.end());

    Attrs at;
    if (c.causal)
      at.i("is_causal", 1);
    if (c.softcap > 0)
      at.f("softcap", c.softcap);
    at.i("left_window_size", c.left).i("right_window_size", c.right);
    Tensor Y;
    if (c.threeD) {
      at.i("q_num_heads", c.Hq).i("kv_num_heads", c.Hkv);
      Q = F({c.B, c.Sq, c.Hq * c.D}, to3D(Q.floats(), c.B, c.Hq, c.Sq, c.D));
      K = F({c.B, c.Skv, c.Hkv * c.D}, to3D(K.floats(), c.B, c.Hkv, c.Skv, c.D));
      V = F({c.B, c.Skv, c.Hkv * c.Dv}, to3D(V.floats(), c.B, c.Hkv, c.Skv, c.Dv));
      Y = zeros({c.B, c.Sq, c.Hq * c.Dv});
      wantF = to3D(wantF, c.B, c.Hq, c.Sq, c.Dv);
    } else {
      Y = zeros({c.B, c.Hq, c.Sq, c.Dv});
    }
    Tensor PK = zeros({c.B, c.Hkv, T, c.D}), PV = zeros({c.B, c.Hkv, T, c.Dv});
    const Tensor *mask = c.mask.empty() ? nullptr : &M;
    if (c.P) {
      EXPECT_OK(
          run("OnnxAttention", at, {&Q, &K, &V, mask, &pastK, &pastV}, {&Y, &PK, &PV}, &pool));
      EXPECT_TRUE(near(PK.floats(), k4, 0));
      EXPECT_TRUE(near(PV.floats(), v4, 0));
    } else {
      EXPECT_OK(run("OnnxAttention", at, {&Q, &K, &V, mask}, {&Y}, &pool));
    }
    EXPECT_TRUE(near(Y.floats(), wantF, 1e-4f));
  }
}

//===----------------------------------------------------------------------===//
// Attention: errors
//===----------------------------------------------------------------------===//

TEST(OnnxAttention, BadCallsAreInvalidArgument) {
  Tensor Q = zeros({1, 2, 3, 4}), K = zeros({1, 1, 5, 4}), V = zeros({1, 1, 5, 6});
  Tensor Y = zeros({1, 2, 3, 6});
  EXPECT_OK(run("OnnxAttention", Attrs(), {&Q, &K, &V}, {&Y}));
  Tensor K3 = zeros({1, 5, 4});
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Q, &K3, &V}, {&Y}), "all be 3-D or all 4-D");
  Tensor Kheads = zeros({1, 3, 5, 4}), Vheads = zeros({1, 3, 5, 6});
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Q, &Kheads, &Vheads}, {&Y}), "multiple");
  Tensor Q3 = zeros({1, 3, 8}), K3b = zeros({1, 5, 4}), V3 = zeros({1, 5, 6}),
         Y3 = zeros({1, 3, 12});
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Q3, &K3b, &V3}, {&Y3}), "q_num_heads");
  EXPECT_OK(run("OnnxAttention", Attrs().i("q_num_heads", 2).i("kv_num_heads", 1), {&Q3, &K3b, &V3},
                {&Y3}));
  Tensor Mbad = zeros({2, 5});
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Q, &K, &V, &Mbad}, {&Y}), "broadcast");
  Tensor Mlong = zeros({3, 6});
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Q, &K, &V, &Mlong}, {&Y}), "last dim");
  Tensor Mint = I64({3, 5}, std::vector<int64_t>(15, 0));
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Q, &K, &V, &Mint}, {&Y}), "attn_mask");
  Tensor past = zeros({1, 1, 2, 4});
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Q, &K, &V, nullptr, &past}, {&Y}), "together");
  Tensor pastV = zeros({1, 1, 2, 6}), N = I64({1}, {5});
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Q, &K, &V, nullptr, &past, &pastV, &N}, {&Y}),
                 "nonpad_kv_seqlen");
  Tensor Ywrong = zeros({1, 2, 3, 4});
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Q, &K, &V}, {&Ywrong}), "output shape");
  EXPECT_INVALID(run("OnnxAttention", Attrs().i("softmax_precision", 10), {&Q, &K, &V}, {&Y}),
                 "softmax_precision");
  EXPECT_INVALID(run("OnnxAttention", Attrs().i("qk_matmul_output_mode", 4), {&Q, &K, &V}, {&Y}),
                 "qk_matmul_output_mode");
  EXPECT_INVALID(run("OnnxAttention", Attrs().f("scale", -1.f), {&Q, &K, &V}, {&Y}), "scale");
  Tensor Kh = zeros({1, 1, 5, 4}, ElementType::Float16);
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Q, &Kh, &V}, {&Y}), "input K");
  Tensor Qd(ElementType::Double, {1, 2, 3, 4});
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Qd, &K, &V}, {&Y}), "input Q");
  EXPECT_INVALID(run("OnnxAttention", Attrs(), {&Q, &K, &V}, {}), "missing output Y");
}

//===----------------------------------------------------------------------===//
// RotaryEmbedding
//===----------------------------------------------------------------------===//

// cos/sin [0, 1] / [1, 0]: the first pair turns by 90 degrees, the second not.
TEST(RotaryEmbedding, PairsByHand) {
  Tensor X = F({1, 1, 1, 4}, {1, 2, 3, 4});
  Tensor c = F({1, 1, 2}, {0, 1}), s = F({1, 1, 2}, {1, 0});
  Tensor Y = zeros({1, 1, 1, 4});
  // Halves: pairs (x0, x2), (x1, x3).
  EXPECT_OK(run("RotaryEmbedding", Attrs(), {&X, &c, &s}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {-3, 2, 1, 4}));
  // Interleaved: pairs (x0, x1), (x2, x3).
  EXPECT_OK(run("RotaryEmbedding", Attrs().i("interleaved", 1), {&X, &c, &s}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {-2, 1, 3, 4}));
  // rotary_embedding_dim 2: only (x0, x1) turns, x2 and x3 pass through.
  Tensor c1 = F({1, 1, 1}, {0}), s1 = F({1, 1, 1}, {1});
  EXPECT_OK(run("RotaryEmbedding", Attrs().i("rotary_embedding_dim", 2), {&X, &c1, &s1}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {-2, 1, 3, 4}));
}

// 3-D X [B=1, S=2, 2 heads * 2] with position_ids picking cache rows.
TEST(RotaryEmbedding, PositionIdsAnd3DInput) {
  Tensor X = F({1, 2, 4}, {1, 2, 3, 4, 5, 6, 7, 8});
  float r = std::sqrt(0.5f);
  // Rows: 0 degrees, 90 degrees, 45 degrees.
  Tensor c = F({3, 1}, {1, 0, r}), s = F({3, 1}, {0, 1, r});
  Tensor pos = I64({1, 2}, {1, 2}), Y = zeros({1, 2, 4});
  EXPECT_OK(run("RotaryEmbedding", Attrs().i("num_heads", 2), {&X, &c, &s, &pos}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {-2, 1, -4, 3, r * (5 - 6), r * (5 + 6), r * (7 - 8), r * (7 + 8)}));
  // float16 storage: the 90-degree turn is exact.
  Tensor Xh = F({1, 1, 1, 2}, {1, 2}, ElementType::Float16);
  Tensor ch = F({1, 1, 1}, {0}, ElementType::Float16), sh = F({1, 1, 1}, {1}, ElementType::Float16);
  Tensor Yh = zeros({1, 1, 1, 2}, ElementType::Float16);
  EXPECT_OK(run("RotaryEmbedding", Attrs(), {&Xh, &ch, &sh}, {&Yh}));
  EXPECT_TRUE(near(Yh.floats(), {-2, 1}));
}

TEST(RotaryEmbedding, BadCallsAreInvalidArgument) {
  Tensor X = zeros({1, 2, 4}), c = zeros({3, 1}), s = zeros({3, 1}), Y = zeros({1, 2, 4});
  Tensor pos = I64({1, 2}, {0, 3});
  EXPECT_INVALID(run("RotaryEmbedding", Attrs().i("num_heads", 2), {&X, &c, &s, &pos}, {&Y}),
                 "outside [0, 3)");
  Tensor ok = I64({1, 2}, {0, 2});
  EXPECT_OK(run("RotaryEmbedding", Attrs().i("num_heads", 2), {&X, &c, &s, &ok}, {&Y}));
  EXPECT_INVALID(run("RotaryEmbedding", Attrs(), {&X, &c, &s, &ok}, {&Y}), "num_heads");
  EXPECT_INVALID(run("RotaryEmbedding", Attrs().i("num_heads", 2).i("rotary_embedding_dim", 3),
                     {&X, &c, &s, &ok}, {&Y}),
                 "rotary_embedding_dim");
  Tensor cWide = zeros({3, 2}), sWide = zeros({3, 2});
  EXPECT_INVALID(run("RotaryEmbedding", Attrs().i("num_heads", 2), {&X, &cWide, &sWide, &ok}, {&Y}),
                 "cos_cache");
  Tensor ch = zeros({3, 1}, ElementType::Float16);
  EXPECT_INVALID(run("RotaryEmbedding", Attrs().i("num_heads", 2), {&X, &ch, &s, &ok}, {&Y}),
                 "cos_cache");
  Tensor Ywrong = zeros({1, 2, 5});
  EXPECT_INVALID(run("RotaryEmbedding", Attrs().i("num_heads", 2), {&X, &c, &s, &ok}, {&Ywrong}),
                 "output shape");
}

} // namespace
