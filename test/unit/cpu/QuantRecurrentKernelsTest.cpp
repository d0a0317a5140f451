//===- QuantRecurrentKernelsTest.cpp - quantization and RNN/GRU/LSTM kernels ===//
//
// The quantization kernels against hand-computed values (rounding ties to
// even, saturation, per-axis and blocked scales, the ONNX operator docs'
// examples) and the recurrent kernels against a naive per-element reference
// written from the ONNX formulas, over directions, layouts, initial states,
// sequence_lens, clip and omitted outputs. Error cases check that a bad call
// returns InvalidArgument naming the problem.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"

#include "test/unit/cpu/KernelTestUtil.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

using namespace ortc;
using namespace ortc::cpu;
using namespace ortc::cpu::kernel_test;

namespace {

//===----------------------------------------------------------------------===//
// QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear
//===----------------------------------------------------------------------===//

TEST(QuantKernels, QuantizeLinearRoundsHalfToEvenAndSaturates) {
  Tensor x = F({10}, {0.5f, 1.5f, 2.5f, -0.5f, -1.5f, -2.5f, 300.f, -300.f, 126.5f, -128.5f});
  Tensor s = F({}, {1.f});
  Tensor zp = I8({}, {0});
  Tensor y(ElementType::Int8, {10});
  EXPECT_OK(run("QuantizeLinear", Attrs(), {&x, &s, &zp}, {&y}));
  EXPECT_EQ(y.values<int8_t>(),
            (std::vector<int8_t>{0, 2, 2, 0, -2, -2, 127, -128, 126, -128}));

  // uint8 with a zero point; the ONNX docs' example.
  Tensor x2 = F({6}, {0.f, 2.f, 3.f, 1000.f, -254.f, -1000.f});
  Tensor s2 = F({}, {2.f});
  Tensor z2 = U8({}, {128});
  Tensor y2(ElementType::UInt8, {6});
  EXPECT_OK(run("QuantizeLinear", Attrs(), {&x2, &s2, &z2}, {&y2}));
  EXPECT_EQ(y2.values<uint8_t>(), (std::vector<uint8_t>{128, 129, 130, 255, 1, 0}));

  // int16 without a zero point (output_dtype decides the type).
  Tensor y3(ElementType::Int16, {6});
  EXPECT_OK(run("QuantizeLinear", Attrs().i("output_dtype", 5), {&x2, &s2, nullptr}, {&y3}));
  EXPECT_EQ(y3.values<int16_t>(), (std::vector<int16_t>{0, 1, 2, 500, -127, -500}));
}

TEST(QuantKernels, QuantizeLinearPerAxisAndBlocked) {
  // x [2,3], per-axis on axis 1 (the default).
  Tensor x = F({2, 3}, {1.f, 2.f, 3.f, -1.f, -2.f, -3.f});
  Tensor s = F({3}, {1.f, 0.5f, 0.25f});
  Tensor z = U8({3}, {10, 20, 30});
  Tensor y(ElementType::UInt8, {2, 3});
  EXPECT_OK(run("QuantizeLinear", Attrs(), {&x, &s, &z}, {&y}));
  EXPECT_EQ(y.values<uint8_t>(), (std::vector<uint8_t>{11, 24, 42, 9, 16, 18}));
  // Negative axis counts from the end: axis -2 uses one scale per row.
  Tensor s0 = F({2}, {1.f, 0.5f});
  Tensor z0 = U8({2}, {0, 100});
  EXPECT_OK(run("QuantizeLinear", Attrs().i("axis", -2), {&x, &s0, &z0}, {&y}));
  EXPECT_EQ(y.values<uint8_t>(), (std::vector<uint8_t>{1, 2, 3, 98, 96, 94}));

  // Blocked: x [2,5], axis 1, block 2 -> scale [2,3] (last block short).
  Tensor xb = F({2, 5}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor sb = F({2, 3}, {1, 2, 4, 0.5f, 1, 10});
  Tensor yb(ElementType::Int8, {2, 5});
  EXPECT_OK(run("QuantizeLinear", Attrs().i("axis", 1).i("block_size", 2).i("output_dtype", 3),
                {&xb, &sb, nullptr}, {&yb}));
  // 1/1 2/1 3/2 4/2 5/4 | 6/.5 7/.5 8/1 9/1 10/10 (1.5 -> 2, 1.25 -> 1)
  EXPECT_EQ(yb.values<int8_t>(), (std::vector<int8_t>{1, 2, 2, 2, 1, 12, 14, 8, 9, 1}));
}

TEST(QuantKernels, QuantizeLinearErrors) {
  Tensor x = F({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor y(ElementType::UInt8, {2, 3});
  Tensor s3 = F({3}, {1, 1, 1}), s2 = F({2}, {1, 1});
  Tensor zI8 = I8({3}, {0, 0, 0});
  EXPECT_INVALID(run("QuantizeLinear", Attrs(), {&x, &s3, &zI8}, {&y}), "y_zero_point is int8");
  EXPECT_INVALID(run("QuantizeLinear", Attrs(), {&x, &s2, nullptr}, {&y}), "per-axis scale");
  EXPECT_INVALID(run("QuantizeLinear", Attrs().i("block_size", 2), {&x, &s3, nullptr}, {&y}),
                 "blocked scale");
  EXPECT_INVALID(run("QuantizeLinear", Attrs().i("axis", 2), {&x, &s3, nullptr}, {&y}),
                 "out of range");
  Tensor yf(ElementType::Float, {2, 3});
  EXPECT_INVALID(run("QuantizeLinear", Attrs(), {&x, &s3, nullptr}, {&yf}), "output must be");
  Tensor yBad(ElementType::UInt8, {3, 2});
  EXPECT_INVALID(run("QuantizeLinear", Attrs(), {&x, &s3, nullptr}, {&yBad}), "output shape");
}

TEST(QuantKernels, DequantizeLinear) {
  // Per-tensor uint8 (the ONNX docs' example).
  Tensor x = U8({4}, {0, 3, 128, 255});
  Tensor s = F({}, {2.f});
  Tensor z = U8({}, {128});
  Tensor y(ElementType::Float, {4});
  EXPECT_OK(run("DequantizeLinear", Attrs(), {&x, &s, &z}, {&y}));
  EXPECT_EQ(y.values<float>(), (std::vector<float>{-256.f, -250.f, 0.f, 254.f}));

  // Per-axis int16 on axis 0; int32 without a zero point.
  Tensor x16 = I16({2, 2}, {-32768, 32767, 100, -100});
  Tensor s16 = F({2}, {0.5f, 2.f});
  Tensor z16 = I16({2}, {0, -100});
  Tensor y16(ElementType::Float, {2, 2});
  EXPECT_OK(run("DequantizeLinear", Attrs().i("axis", 0), {&x16, &s16, &z16}, {&y16}));
  EXPECT_EQ(y16.values<float>(), (std::vector<float>{-16384.f, 16383.5f, 400.f, 0.f}));
  Tensor x32 = I32({3}, {-7, 0, 1 << 20});
  Tensor y32(ElementType::Float, {3});
  EXPECT_OK(run("DequantizeLinear", Attrs(), {&x32, &s, nullptr}, {&y32}));
  EXPECT_EQ(y32.values<float>(), (std::vector<float>{-14.f, 0.f, float(1 << 21)}));

  // Blocked along axis 0 with block 2: rows 0-1 share scale row 0.
  Tensor xb = I8({3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor sb = F({2, 2}, {1.f, 10.f, 100.f, 1000.f});
  Tensor yb(ElementType::Float, {3, 2});
  EXPECT_OK(run("DequantizeLinear", Attrs().i("axis", 0).i("block_size", 2), {&xb, &sb, nullptr},
                {&yb}));
  EXPECT_EQ(yb.values<float>(), (std::vector<float>{1, 20, 3, 40, 500, 6000}));

  // Errors: zero point of another type; a float16 scale gives float16
  // unless output_dtype says otherwise.
  Tensor zI8 = I8({}, {0});
  EXPECT_INVALID(run("DequantizeLinear", Attrs(), {&x, &s, &zI8}, {&y}), "x_zero_point is int8");
  Tensor sHalf = make<uint16_t>(ElementType::Float16, {}, {0x4000}); // 2.0
  EXPECT_INVALID(run("DequantizeLinear", Attrs(), {&x, &sHalf, nullptr}, {&y}),
                 "output is float32, should be x_scale's type float16");
  EXPECT_OK(run("DequantizeLinear", Attrs().i("output_dtype", 1), {&x, &sHalf, &z}, {&y}));
  EXPECT_EQ(y.values<float>(), (std::vector<float>{-256.f, -250.f, 0.f, 254.f}));
}

TEST(QuantKernels, Float16AndBFloat16Scales) {
  // DequantizeLinear to float16: (x - zp) * scale in float32, then rounded
  // to nearest even (expected bits from numpy: float32 product .astype).
  // 1000 * 0.0999755859375 = 99.9755859 -> 100.0 (0x5640); -0.29992676 ->
  // 0xB4CC; 0.6998291 -> 0x3999.
  Tensor x = I16({3}, {1000, -3, 7});
  Tensor sh = make<uint16_t>(ElementType::Float16, {}, {0x2E66}); // 0.0999755859375
  Tensor yh(ElementType::Float16, {3});
  EXPECT_OK(run("DequantizeLinear", Attrs(), {&x, &sh, nullptr}, {&yh}));
  EXPECT_EQ(yh.values<uint16_t>(), (std::vector<uint16_t>{0x5640, 0xB4CC, 0x3999}));
  // bfloat16 output from a float32 scale (output_dtype 16): 100 -> 0x42C8,
  // -0.3 -> 0xBE9A, 0.7 -> 0x3F33.
  Tensor sf = F({}, {0.1f});
  Tensor yb(ElementType::BFloat16, {3});
  EXPECT_OK(run("DequantizeLinear", Attrs().i("output_dtype", 16), {&x, &sf, nullptr}, {&yb}));
  EXPECT_EQ(yb.values<uint16_t>(), (std::vector<uint16_t>{0x42C8, 0xBE9A, 0x3F33}));

  // QuantizeLinear in float16: x / scale rounded to float16, then to even.
  // 2.5h / 1.0h = 2.5 -> 2; 3.5 -> 4; 0.1h / 0.1h = 1.
  Tensor xq = make<uint16_t>(ElementType::Float16, {3}, {0x4100, 0x4300, 0x2E66}); // 2.5, 3.5, 0.1
  Tensor one = make<uint16_t>(ElementType::Float16, {}, {0x3C00});
  Tensor yq(ElementType::UInt8, {3});
  EXPECT_OK(run("QuantizeLinear", Attrs(), {&xq, &one, nullptr}, {&yq}));
  EXPECT_EQ(yq.values<uint8_t>(), (std::vector<uint8_t>{2, 4, 0}));
  // float32 x with a float16 scale needs precision.
  Tensor xf = F({3}, {2.5f, 3.5f, 0.1f});
  EXPECT_INVALID(run("QuantizeLinear", Attrs(), {&xf, &one, nullptr}, {&yq}), "precision 0");
  EXPECT_OK(run("QuantizeLinear", Attrs().i("precision", 1), {&xf, &one, nullptr}, {&yq}));
  EXPECT_EQ(yq.values<uint8_t>(), (std::vector<uint8_t>{2, 4, 0}));
}

TEST(QuantKernels, DynamicQuantizeLinear) {
  // The ONNX docs' example.
  Tensor x = F({6}, {0.f, 2.f, -3.f, -2.5f, 1.34f, 0.5f});
  Tensor y(ElementType::UInt8, {6}), s(ElementType::Float, {}), z(ElementType::UInt8, {});
  EXPECT_OK(run("DynamicQuantizeLinear", Attrs(), {&x}, {&y, &s, &z}));
  EXPECT_FLOAT_EQ(s.values<float>()[0], 5.f / 255.f);
  EXPECT_EQ(z.values<uint8_t>()[0], 153);
  EXPECT_EQ(y.values<uint8_t>(), (std::vector<uint8_t>{153, 255, 0, 26, 221, 179}));

  // All positive: the range is widened to 0, zero point 0.
  Tensor x2 = F({3}, {1.f, 2.f, 51.f});
  EXPECT_INVALID(run("DynamicQuantizeLinear", Attrs(), {&x2}, {&y, &s, &z}), "output shape");
  Tensor y2(ElementType::UInt8, {3});
  EXPECT_OK(run("DynamicQuantizeLinear", Attrs(), {&x2}, {&y2, &s, &z}));
  EXPECT_FLOAT_EQ(s.values<float>()[0], 51.f / 255.f);
  EXPECT_EQ(z.values<uint8_t>()[0], 0);
  EXPECT_EQ(y2.values<uint8_t>(), (std::vector<uint8_t>{5, 10, 255}));

  Tensor yBad(ElementType::Int8, {3});
  EXPECT_INVALID(run("DynamicQuantizeLinear", Attrs(), {&x2}, {&yBad, &s, &z}), "uint8");
  EXPECT_INVALID(run("DynamicQuantizeLinear", Attrs(), {&x2}, {&y2}), "three outputs");
}

//===----------------------------------------------------------------------===//
// MatMulInteger, QLinearMatMul, ConvInteger, QLinearConv
//===----------------------------------------------------------------------===//

TEST(QuantKernels, MatMulInteger) {
  // The ONNX docs' example.
  Tensor A = U8({4, 3}, {11, 7, 3, 10, 6, 2, 9, 5, 1, 8, 4, 0});
  Tensor B = U8({3, 2}, {1, 4, 2, 5, 3, 6});
  Tensor az = U8({}, {12}), bz = U8({}, {0});
  Tensor Y(ElementType::Int32, {4, 2});
  EXPECT_OK(run("MatMulInteger", Attrs(), {&A, &B, &az, &bz}, {&Y}));
  EXPECT_EQ(Y.values<int32_t>(), (std::vector<int32_t>{-38, -83, -44, -98, -50, -113, -56, -128}));

  // int8 A, per-column b_zero_point, a batch of 2 against one B.
  Tensor A2 = I8({2, 1, 2}, {1, -2, 3, 4});
  Tensor B2 = U8({2, 2}, {10, 20, 30, 40});
  Tensor bz2 = U8({2}, {10, 0});
  Tensor Y2(ElementType::Int32, {2, 1, 2});
  EXPECT_OK(run("MatMulInteger", Attrs(), {&A2, &B2, nullptr, &bz2}, {&Y2}));
  // B - bz = [[0,20],[20,40]]: [1,-2] -> [-40,-60]; [3,4] -> [80,220]
  EXPECT_EQ(Y2.values<int32_t>(), (std::vector<int32_t>{-40, -60, 80, 220}));

  Tensor Bbad = U8({2, 2}, {1, 2, 3, 4});
  EXPECT_INVALID(run("MatMulInteger", Attrs(), {&A, &Bbad, nullptr, nullptr}, {&Y}),
                 "inner dims differ");
  Tensor azBad = U8({4}, {1, 2, 3, 4});
  EXPECT_INVALID(run("MatMulInteger", Attrs(), {&A, &B, &azBad, nullptr}, {&Y}), "a_zero_point");
}

TEST(QuantKernels, QLinearMatMulFloat32AndFloat16Scales) {
  // a [2,2] int8, b [2,2] int8; C = (a - 1)(b + 2).
  Tensor a = I8({2, 2}, {3, 1, -1, 5});
  Tensor b = I8({2, 2}, {-2, 0, 1, -3});
  Tensor az = I8({1}, {1}), bz = I8({1}, {-2});
  Tensor as = F({1}, {0.1f}), bs = F({1}, {0.2f}), ys = F({1}, {0.05f});
  Tensor yz = U8({1}, {100});
  Tensor y(ElementType::UInt8, {2, 2});
  EXPECT_OK(run("QLinearMatMul", Attrs(), {&a, &as, &az, &b, &bs, &bz, &ys, &yz}, {&y}));
  // C = [[2,0],[-2,4]] x [[0,2],[3,-1]] = [[0,4],[12,-8]]; * 0.4 + 100
  // = [100, 101.6, 104.8, 96.8] -> [100, 102, 105, 97]
  EXPECT_EQ(y.values<uint8_t>(), (std::vector<uint8_t>{100, 102, 105, 97}));

  // float16 scales (the float16 nearest 0.1, 0.2, 0.05): the multiplier is
  // rounded to float16 after each step, about 0.4 again.
  Tensor ash = make<uint16_t>(ElementType::Float16, {1}, {0x2E66}),
         bsh = make<uint16_t>(ElementType::Float16, {1}, {0x3266}),
         ysh = make<uint16_t>(ElementType::Float16, {1}, {0x2A66}); // 0.1, 0.2, 0.05
  EXPECT_OK(run("QLinearMatMul", Attrs(), {&a, &ash, &az, &b, &bsh, &bz, &ysh, &yz}, {&y}));
  EXPECT_EQ(y.values<uint8_t>(), (std::vector<uint8_t>{100, 102, 105, 97}));

  Tensor ysBad = F({2}, {1, 1});
  EXPECT_INVALID(run("QLinearMatMul", Attrs(), {&a, &as, &az, &b, &bs, &bz, &ysBad, &yz}, {&y}),
                 "y_scale must have one element");
  EXPECT_INVALID(run("QLinearMatMul", Attrs(), {&a, &ash, &az, &b, &bs, &bz, &ys, &yz}, {&y}),
                 "scales must all be");
}

TEST(QuantKernels, ConvIntegerAndQLinearConv) {
  // The ONNX docs' ConvInteger example: x 3x3 = 2..10, x_zp 1, w 2x2 ones.
  Tensor x = U8({1, 1, 3, 3}, {2, 3, 4, 5, 6, 7, 8, 9, 10});
  Tensor w = U8({1, 1, 2, 2}, {1, 1, 1, 1});
  Tensor xz = U8({}, {1});
  Tensor y(ElementType::Int32, {1, 1, 2, 2});
  EXPECT_OK(run("ConvInteger", Attrs(), {&x, &w, &xz, nullptr}, {&y}));
  EXPECT_EQ(y.values<int32_t>(), (std::vector<int32_t>{12, 16, 24, 28}));
  // With pads 1: the corners see one input (x - 1), the padding adds 0.
  Tensor yp(ElementType::Int32, {1, 1, 4, 4});
  EXPECT_OK(run("ConvInteger", Attrs().is("pads", {1, 1, 1, 1}), {&x, &w, &xz, nullptr}, {&yp}));
  EXPECT_EQ(yp.values<int32_t>(), (std::vector<int32_t>{1, 3, 5, 3, 5, 12, 16, 9, 11, 24, 28, 15,
                                                        7, 15, 17, 9}));
  // Per-channel w_zero_point and group 2 (one input channel per group).
  Tensor x2 = I8({1, 2, 1, 2}, {1, 2, -3, 4});
  Tensor w2 = I8({2, 1, 1, 1}, {5, 5});
  Tensor wz2 = I8({2}, {3, 7});
  Tensor y2(ElementType::Int32, {1, 2, 1, 2});
  EXPECT_OK(run("ConvInteger", Attrs().i("group", 2), {&x2, &w2, nullptr, &wz2}, {&y2}));
  EXPECT_EQ(y2.values<int32_t>(), (std::vector<int32_t>{2, 4, 6, -8}));
  EXPECT_INVALID(run("ConvInteger", Attrs().i("group", 3), {&x2, &w2, nullptr, &wz2}, {&y2}),
                 "group 3");

  // QLinearConv: the accumulator (+B) times x_scale * w_scale[m] / y_scale,
  // plus y_zp, rounded half to even and saturated.
  Tensor xs = F({}, {0.5f}), ys = F({}, {0.25f});
  Tensor ws = F({2}, {1.f, 0.25f});
  Tensor yz = I8({}, {-10});
  Tensor B = I32({2}, {1, -2});
  Tensor yq(ElementType::Int8, {1, 2, 1, 2});
  EXPECT_OK(run("QLinearConv", Attrs().i("group", 2),
                {&x2, &xs, nullptr, &w2, &ws, &wz2, &ys, &yz, &B}, {&yq}));
  // acc+B = [3, 5 | 4, -10]; multipliers 2, 0.5: [6-10, 10-10 | 2-10, -5-10]
  EXPECT_EQ(yq.values<int8_t>(), (std::vector<int8_t>{-4, 0, -8, -15}));
  Tensor yzU = U8({}, {0});
  EXPECT_INVALID(run("QLinearConv", Attrs().i("group", 2),
                     {&x2, &xs, nullptr, &w2, &ws, &wz2, &ys, &yzU, &B}, {&yq}),
                 "output is int8");
}

//===----------------------------------------------------------------------===//
// RNN, GRU, LSTM
//===----------------------------------------------------------------------===//

float sigm(float x) { return 1.f / (1.f + std::exp(-x)); }

struct RecConfig {
  std::string op; // RNN, GRU, LSTM
  int64_t S = 3, B = 2, I = 3, H = 4;
  std::string direction = "forward";
  int64_t layout = 0;
  bool bias = true, h0 = false, c0 = false, peep = false, lbr = false;
  std::vector<int32_t> lens; // empty: none
  float clip = 0.f;          // 0: none
};

int gatesOf(const std::string &op) { return op == "RNN" ? 1 : op == "GRU" ? 3 : 4; }

/// Naive reference: one direction, one batch entry at a time, straight from
/// the ONNX formulas; outputs in layout 0.
void refRecurrent(const RecConfig &c, const Tensor &X, const Tensor &W, const Tensor &R,
                  const Tensor *Bias, const Tensor *h0, const Tensor *c0, const Tensor *P,
                  std::vector<float> &Y, std::vector<float> &Yh, std::vector<float> &Yc) {
  int64_t D = c.direction == "bidirectional" ? 2 : 1, G = gatesOf(c.op), H = c.H;
  Y.assign(size_t(c.S * D * c.B * H), 0.f);
  Yh.assign(size_t(D * c.B * H), 0.f);
  Yc = Yh;
  auto xAt = [&](int64_t t, int64_t b, int64_t i) {
    int64_t idx = c.layout ? (b * c.S + t) * c.I + i : (t * c.B + b) * c.I + i;
    return X.values<float>()[size_t(idx)];
  };
  auto stAt = [&](const Tensor *s, int64_t d, int64_t b, int64_t k) {
    if (!s)
      return 0.f;
    int64_t idx = c.layout ? (b * D + d) * H + k : (d * c.B + b) * H + k;
    return s->values<float>()[size_t(idx)];
  };
  auto cl = [&](float v) { return c.clip > 0 ? std::fmax(-c.clip, std::fmin(c.clip, v)) : v; };
  std::vector<float> w = W.values<float>(), r = R.values<float>();
  std::vector<float> bias = Bias ? Bias->values<float>() : std::vector<float>(size_t(D * 2 * G * H));
  std::vector<float> p = P ? P->values<float>() : std::vector<float>(size_t(D * 3 * H));
  for (int64_t d = 0; d < D; ++d)
    for (int64_t b = 0; b < c.B; ++b) {
      int64_t L = c.lens.empty() ? c.S : c.lens[size_t(b)];
      std::vector<float> h(static_cast<size_t>(H)), cs(static_cast<size_t>(H));
      for (int64_t k = 0; k < H; ++k) {
        h[size_t(k)] = stAt(h0, d, b, k);
        cs[size_t(k)] = stAt(c0, d, b, k);
      }
      for (int64_t s = 0; s < L; ++s) {
        int64_t t = (c.direction == "reverse" || d == 1) ? L - 1 - s : s;
        // xw[g] = x W_g + Wb_g, hr[g] = h R_g + Rb_g for every gate row g.
        std::vector<float> xw(static_cast<size_t>(G * H)), hr(static_cast<size_t>(G * H));
        for (int64_t g = 0; g < G * H; ++g) {
          float a = bias[size_t(d * 2 * G * H + g)], e = bias[size_t(d * 2 * G * H + G * H + g)];
          for (int64_t i = 0; i < c.I; ++i)
            a += xAt(t, b, i) * w[size_t((d * G * H + g) * c.I + i)];
          for (int64_t k = 0; k < H; ++k)
            e += h[size_t(k)] * r[size_t((d * G * H + g) * H + k)];
          xw[size_t(g)] = a;
          hr[size_t(g)] = e;
        }
        std::vector<float> hn(static_cast<size_t>(H));
        for (int64_t k = 0; k < H; ++k) {
          size_t K = size_t(k), Hs = size_t(H);
          if (c.op == "RNN") {
            hn[K] = std::tanh(cl(xw[K] + hr[K]));
          } else if (c.op == "GRU") {
            float z = sigm(cl(xw[K] + hr[K])), rg = sigm(cl(xw[Hs + K] + hr[Hs + K]));
            float pre;
            if (c.lbr) {
              pre = xw[2 * Hs + K] + rg * hr[2 * Hs + K];
            } else { // (r . h) Rh + Rbh
              float e = bias[size_t(d * 2 * G * H + G * H + 2 * H + k)];
              for (int64_t j = 0; j < H; ++j) {
                float rj = sigm(cl(xw[Hs + size_t(j)] + hr[Hs + size_t(j)]));
                e += rj * h[size_t(j)] * r[size_t((d * G * H + 2 * H + k) * H + j)];
              }
              pre = xw[2 * Hs + K] + e;
            }
            hn[K] = (1 - z) * std::tanh(cl(pre)) + z * h[K];
          } else {
            const float *pd = p.data() + d * 3 * H;
            float i = sigm(cl(xw[K] + hr[K] + pd[K] * cs[K]));
            float f = sigm(cl(xw[2 * Hs + K] + hr[2 * Hs + K] + pd[2 * Hs + K] * cs[K]));
            float g = std::tanh(cl(xw[3 * Hs + K] + hr[3 * Hs + K]));
            cs[K] = f * cs[K] + i * g;
            float o = sigm(cl(xw[Hs + K] + hr[Hs + K] + pd[Hs + K] * cs[K]));
            hn[K] = o * std::tanh(cs[K]);
          }
        }
        h = hn;
        for (int64_t k = 0; k < H; ++k)
          Y[size_t(((t * D + d) * c.B + b) * H + k)] = h[size_t(k)];
      }
      for (int64_t k = 0; k < H; ++k) {
        Yh[size_t((d * c.B + b) * H + k)] = h[size_t(k)];
        Yc[size_t((d * c.B + b) * H + k)] = cs[size_t(k)];
      }
    }
}

/// Layout-0 reference values reordered to the kernel's layout.
std::vector<float> toLayout(const RecConfig &c, const std::vector<float> &v, bool isY) {
  if (!c.layout)
    return v;
  int64_t D = c.direction == "bidirectional" ? 2 : 1, H = c.H;
  std::vector<float> out(v.size());
  int64_t S = isY ? c.S : 1;
  for (int64_t t = 0; t < S; ++t)
    for (int64_t d = 0; d < D; ++d)
      for (int64_t b = 0; b < c.B; ++b)
        for (int64_t k = 0; k < H; ++k)
          out[size_t(((b * S + t) * D + d) * H + k)] = v[size_t(((t * D + d) * c.B + b) * H + k)];
  return out;
}

void checkRecurrent(const RecConfig &c, uint64_t seed, std::vector<bool> present = {true, true,
                                                                                   true}) {
  SCOPED_TRACE(c.op + " " + c.direction + " layout " + std::to_string(c.layout));
  int64_t D = c.direction == "bidirectional" ? 2 : 1, G = gatesOf(c.op);
  bool lstm = c.op == "LSTM";
  Tensor X = randomF(
      c.layout ? std::vector<int64_t>{c.B, c.S, c.I} : std::vector<int64_t>{c.S, c.B, c.I}, seed);
  Tensor W = randomF({D, G * c.H, c.I}, seed + 1, 0.7f),
         R = randomF({D, G * c.H, c.H}, seed + 2, 0.7f);
  Tensor Bias = randomF({D, 2 * G * c.H}, seed + 3, 0.5f);
  std::vector<int64_t> st =
      c.layout ? std::vector<int64_t>{c.B, D, c.H} : std::vector<int64_t>{D, c.B, c.H};
  Tensor h0 = randomF(st, seed + 4), c0 = randomF(st, seed + 5),
         P = randomF({D, 3 * c.H}, seed + 6);
  Tensor lens = I32({c.B}, c.lens.empty() ? std::vector<int32_t>(size_t(c.B), 1) : c.lens);
  std::vector<float> rY, rYh, rYc;
  refRecurrent(c, X, W, R, c.bias ? &Bias : nullptr, c.h0 ? &h0 : nullptr, c.c0 ? &c0 : nullptr,
               c.peep ? &P : nullptr, rY, rYh, rYc);

  Attrs a;
  a.i("hidden_size", c.H).s("direction", c.direction).i("layout", c.layout);
  if (c.lbr)
    a.i("linear_before_reset", 1);
  if (c.clip > 0)
    a.f("clip", c.clip);
  std::vector<int64_t> yShape = c.layout ? std::vector<int64_t>{c.B, c.S, D, c.H}
                                         : std::vector<int64_t>{c.S, D, c.B, c.H};
  Tensor Y(ElementType::Float, yShape), Yh(ElementType::Float, st), Yc(ElementType::Float, st);
  std::vector<Tensor *> outs;
  std::vector<int64_t> indices;
  Tensor *all[] = {&Y, &Yh, &Yc};
  for (int k = 0; k < (lstm ? 3 : 2); ++k)
    if (present[size_t(k)]) {
      outs.push_back(all[k]);
      indices.push_back(k);
    }
  if (indices.back() + 1 != int64_t(indices.size()))
    a.is("output_slots", indices);
  std::vector<const Tensor *> ins = {
      &X, &W, &R, c.bias ? &Bias : nullptr, c.lens.empty() ? nullptr : &lens, c.h0 ? &h0 : nullptr};
  if (lstm) {
    ins.push_back(c.c0 ? &c0 : nullptr);
    ins.push_back(c.peep ? &P : nullptr);
  }
  ASSERT_TRUE(run(c.op, a, ins, outs).isOk());
  if (present[0]) {
    EXPECT_TRUE(near(Y.values<float>(), toLayout(c, rY, true)));
  }
  if (present[1]) {
    EXPECT_TRUE(near(Yh.values<float>(), toLayout(c, rYh, false)));
  }
  if (lstm && present[2]) {
    EXPECT_TRUE(near(Yc.values<float>(), toLayout(c, rYc, false)));
  }
}

TEST(RecurrentKernels, RnnHandComputed) {
  // H = I = 1, W = R = 0.5, no bias: h1 = tanh(0.5), h2 = tanh(1 + 0.5 h1).
  Tensor X = F({2, 1, 1}, {1.f, 2.f}), W = F({1, 1, 1}, {0.5f}), R = F({1, 1, 1}, {0.5f});
  Tensor Y(ElementType::Float, {2, 1, 1, 1}), Yh(ElementType::Float, {1, 1, 1});
  EXPECT_OK(run("RNN", Attrs().i("hidden_size", 1), {&X, &W, &R}, {&Y, &Yh}));
  float h1 = std::tanh(0.5f), h2 = std::tanh(1.f + 0.5f * h1);
  EXPECT_TRUE(near(Y.values<float>(), {h1, h2}));
  EXPECT_TRUE(near(Yh.values<float>(), {h2}));
}

TEST(RecurrentKernels, RnnGruLstmAgainstReference) {
  uint64_t seed = 10;
  for (std::string op : {"RNN", "GRU", "LSTM"})
    for (std::string dir : {"forward", "reverse", "bidirectional"})
      for (int64_t layout : {0, 1}) {
        RecConfig c;
        c.op = op;
        c.direction = dir;
        c.layout = layout;
        checkRecurrent(c, seed += 10);
        c.h0 = c.c0 = c.peep = true;
        c.lens = {3, 1};
        c.lbr = true;
        checkRecurrent(c, seed += 10);
        c.bias = false;
        c.lbr = false;
        c.clip = 0.4f;
        c.lens = {0, 2};
        checkRecurrent(c, seed += 10);
      }
}

TEST(RecurrentKernels, OmittedOutputs) {
  RecConfig c;
  c.op = "LSTM";
  c.direction = "bidirectional";
  checkRecurrent(c, 7, {false, true, true});
  checkRecurrent(c, 8, {false, false, true});
  checkRecurrent(c, 9, {true, false, true});
  c.op = "GRU";
  checkRecurrent(c, 11, {false, true});
}

TEST(RecurrentKernels, Errors) {
  // Only Y_h: the step's one output is ONNX output 1.
  Tensor X = randomF({2, 1, 3}, 1), W = randomF({1, 16, 3}, 2), R = randomF({1, 16, 4}, 3);
  Tensor Yh(ElementType::Float, {1, 1, 4});
  auto attrs = [] { return Attrs().i("hidden_size", 4).is("output_slots", {1}); };
  EXPECT_OK(run("LSTM", attrs(), {&X, &W, &R}, {&Yh}));
  // Without output_slots the one output is Y, of another shape.
  EXPECT_INVALID(run("LSTM", Attrs().i("hidden_size", 4), {&X, &W, &R}, {&Yh}),
                 "output shape [1,1,4] should be [2,1,1,4]");
  Tensor Wbad = randomF({1, 12, 3}, 2);
  EXPECT_INVALID(run("LSTM", attrs(), {&X, &Wbad, &R}, {&Yh}), "W shape");
  EXPECT_INVALID(run("LSTM", attrs().i("hidden_size", 5), {&X, &W, &R}, {&Yh}), "hidden_size 5");
  Tensor lens = I32({1}, {3});
  EXPECT_INVALID(run("LSTM", attrs(), {&X, &W, &R, nullptr, &lens}, {&Yh}),
                 "sequence_lens[0] = 3");
  EXPECT_INVALID(run("LSTM", attrs().s("direction", "sideways"), {&X, &W, &R}, {&Yh}),
                 "unknown direction");
  EXPECT_INVALID(run("LSTM", attrs().is("output_slots", {3}), {&X, &W, &R}, {&Yh}),
                 "output index 3");
  EXPECT_INVALID(run("LSTM", attrs().i("input_forget", 1), {&X, &W, &R}, {&Yh}), "input_forget");
  Tensor Xhalf(ElementType::Float16, {2, 1, 3});
  EXPECT_INVALID(run("LSTM", attrs(), {&Xhalf, &W, &R}, {&Yh}), "input X must be float32");
}

} // namespace
