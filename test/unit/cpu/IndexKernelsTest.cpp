//===- IndexKernelsTest.cpp - index, scatter, scan and Einsum kernels -----===//
//
// The kernels of IndexKernels.cpp and EinsumKernel.cpp through the registry:
// hand-computed cases (the ONNX operator docs' examples among them) pin the
// conventions, naive references written here cover random shapes, and error
// cases check that a bad call returns InvalidArgument naming the problem.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/Einsum.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/NumericTypes.h"

#include "test/unit/cpu/KernelTestUtil.h"
#include "test/unit/cpu/TestRng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

using namespace ortc;
using namespace ortc::cpu;
using namespace ortc::cpu::kernel_test;

namespace {

//===----------------------------------------------------------------------===//
// float16 / bfloat16 conversions
//===----------------------------------------------------------------------===//

TEST(NumericTypesTest, HalfRoundTripsAndRoundsToNearestEven) {
  using namespace ortc::cpu::kernels;
  for (uint32_t h = 0; h < 0x10000; ++h) {
    float f = halfToFloat(uint16_t(h));
    if (std::isnan(f))
      EXPECT_TRUE(std::isnan(halfToFloat(floatToHalf(f))));
    else
      EXPECT_EQ(floatToHalf(f), uint16_t(h)) << h;
  }
  EXPECT_EQ(halfToFloat(0x3c00), 1.0f);
  EXPECT_EQ(halfToFloat(0x0001), std::ldexp(1.0f, -24)); // smallest subnormal
  EXPECT_EQ(floatToHalf(65504.f), 0x7bff);
  EXPECT_EQ(floatToHalf(65520.f), 0x7c00);                         // the tie rounds to infinity
  EXPECT_EQ(floatToHalf(1.0f + std::ldexp(1.f, -11)), 0x3c00);     // tie to even (down)
  EXPECT_EQ(floatToHalf(1.0f + 3 * std::ldexp(1.f, -11)), 0x3c02); // tie to even (up)
  EXPECT_EQ(floatToHalf(std::ldexp(1.0f, -25)), 0x0000);           // tie to even zero
  EXPECT_EQ(floatToHalf(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(floatToHalf(-2.0f), 0xc000);
}

TEST(NumericTypesTest, BFloat16RoundsToNearestEven) {
  using namespace ortc::cpu::kernels;
  EXPECT_EQ(floatToBf16(1.0f), 0x3f80);
  EXPECT_EQ(bf16ToFloat(0x3f80), 1.0f);
  EXPECT_EQ(floatToBf16(1.0f + std::ldexp(1.f, -8)), 0x3f80);     // tie to even (down)
  EXPECT_EQ(floatToBf16(1.0f + 3 * std::ldexp(1.f, -8)), 0x3f82); // tie to even (up)
  EXPECT_TRUE(std::isnan(bf16ToFloat(floatToBf16(std::nanf("")))));
  for (uint32_t b = 0; b < 0x10000; b += 7) {
    float f = bf16ToFloat(uint16_t(b));
    if (!std::isnan(f)) {
      EXPECT_EQ(floatToBf16(f), uint16_t(b));
    }
  }
}

//===----------------------------------------------------------------------===//
// Trilu
//===----------------------------------------------------------------------===//

TEST(IndexKernelsTest, TriluMatchesMaskReference) {
  const int64_t B = 2, N = 4, M = 5;
  Tensor X(ElementType::Int64, {B, N, M});
  std::iota(X.data<int64_t>(), X.data<int64_t>() + B * N * M, int64_t(1));
  for (int upper : {0, 1})
    for (int64_t k : {-7, -2, -1, 0, 1, 3, 6, 100}) {
      Tensor K = scalarI64(k), Y(ElementType::Int64, X.shape);
      EXPECT_OK(run("Trilu", Attrs().i("upper", upper), {&X, &K}, {&Y}));
      std::vector<int64_t> want(size_t(B * N * M));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t i = 0; i < N; ++i)
          for (int64_t j = 0; j < M; ++j) {
            bool keep = upper ? j - i >= k : j - i <= k;
            int64_t at = (b * N + i) * M + j;
            want[size_t(at)] = keep ? X.data<int64_t>()[at] : 0;
          }
      EXPECT_EQ(Y.values<int64_t>(), want) << "upper " << upper << " k " << k;
    }
  // k omitted: 0; upper omitted: 1.
  Tensor X2 = F({2, 2}, {1, 2, 3, 4}), Y2(ElementType::Float, {2, 2});
  EXPECT_OK(run("Trilu", {}, {&X2, nullptr}, {&Y2}));
  EXPECT_EQ(Y2.values<float>(), (std::vector<float>{1, 2, 0, 4}));
}

TEST(IndexKernelsTest, TriluRejectsBadInputs) {
  Tensor X = F({3}, {1, 2, 3}), Y(ElementType::Float, {3});
  EXPECT_INVALID(run("Trilu", {}, {&X}, {&Y}), "rank >= 2");
  Tensor X2 = F({2, 2}, {1, 2, 3, 4}), Y2(ElementType::Float, {2, 2});
  Tensor K = I64({2}, {0, 1});
  EXPECT_INVALID(run("Trilu", {}, {&X2, &K}, {&Y2}), "k must have one element");
  Tensor Ybad(ElementType::Float, {2, 3});
  EXPECT_INVALID(run("Trilu", {}, {&X2}, {&Ybad}), "output shape");
}

//===----------------------------------------------------------------------===//
// CumSum, CumProd
//===----------------------------------------------------------------------===//

TEST(IndexKernelsTest, CumSumExclusiveReverse) {
  Tensor X = D({5}, {1, 2, 3, 4, 5}), axis = I32({}, {0});
  struct Case {
    int exclusive, reverse;
    std::vector<double> want;
  } cases[] = {{0, 0, {1, 3, 6, 10, 15}},
               {1, 0, {0, 1, 3, 6, 10}},
               {0, 1, {15, 14, 12, 9, 5}},
               {1, 1, {14, 12, 9, 5, 0}}};
  for (const Case &c : cases) {
    Tensor Y(ElementType::Double, {5});
    EXPECT_OK(run("CumSum", Attrs().i("exclusive", c.exclusive).i("reverse", c.reverse),
                  {&X, &axis}, {&Y}));
    EXPECT_EQ(Y.values<double>(), c.want) << c.exclusive << c.reverse;
  }
  Tensor Yp(ElementType::Double, {5});
  EXPECT_OK(run("CumProd", Attrs().i("exclusive", 1).i("reverse", 1), {&X, &axis}, {&Yp}));
  EXPECT_EQ(Yp.values<double>(), (std::vector<double>{120, 60, 20, 5, 1}));
}

TEST(IndexKernelsTest, CumSumAndCumProdAlongAxes) {
  Tensor X = I32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor a0 = I64({}, {0}), a1 = I64({1}, {-1});
  Tensor Y(ElementType::Int32, {2, 3});
  EXPECT_OK(run("CumSum", {}, {&X, &a0}, {&Y}));
  EXPECT_EQ(Y.values<int32_t>(), (std::vector<int32_t>{1, 2, 3, 5, 7, 9}));
  EXPECT_OK(run("CumSum", {}, {&X, &a1}, {&Y}));
  EXPECT_EQ(Y.values<int32_t>(), (std::vector<int32_t>{1, 3, 6, 4, 9, 15}));
  EXPECT_OK(run("CumProd", {}, {&X, &a0}, {&Y}));
  EXPECT_EQ(Y.values<int32_t>(), (std::vector<int32_t>{1, 2, 3, 4, 10, 18}));
  EXPECT_OK(run("CumProd", {}, {&X, &a1}, {&Y}));
  EXPECT_EQ(Y.values<int32_t>(), (std::vector<int32_t>{1, 2, 6, 4, 20, 120}));
  // Integers wrap as in numpy.
  Tensor U = make<uint8_t>({3}, {200, 100, 3}), Yu(ElementType::UInt8, {3});
  Tensor z = I64({}, {0});
  EXPECT_OK(run("CumSum", {}, {&U, &z}, {&Yu}));
  EXPECT_EQ(Yu.values<uint8_t>(), (std::vector<uint8_t>{200, 44, 47}));
}

TEST(IndexKernelsTest, CumSumRejectsBadInputs) {
  Tensor X = F({2, 3}, {1, 2, 3, 4, 5, 6}), Y(ElementType::Float, {2, 3});
  Tensor a2 = I64({}, {2});
  EXPECT_INVALID(run("CumSum", {}, {&X, &a2}, {&Y}), "axis 2 out of range");
  EXPECT_INVALID(run("CumSum", {}, {&X}, {&Y}), "missing axis");
  Tensor H(ElementType::Float16, {2}), Yh(ElementType::Float16, {2}), a0 = I64({}, {0});
  EXPECT_INVALID(run("CumProd", {}, {&H, &a0}, {&Yh}), "got float16");
  Tensor Fa = F({}, {0});
  EXPECT_INVALID(run("CumSum", {}, {&X, &Fa}, {&Y}), "axis must be int32 or int64");
}

//===----------------------------------------------------------------------===//
// ScatterElements, ScatterND, TensorScatter
//===----------------------------------------------------------------------===//

TEST(IndexKernelsTest, ScatterElementsDocExamplesAndReductions) {
  // ONNX docs, example 1 (axis 0).
  Tensor X = F({3, 3}, std::vector<float>(9, 0.f));
  Tensor I = I64({2, 3}, {1, 0, 2, 0, 2, 1});
  Tensor U = F({2, 3}, {1.0f, 1.1f, 1.2f, 2.0f, 2.1f, 2.2f});
  Tensor Y(ElementType::Float, {3, 3});
  EXPECT_OK(run("ScatterElements", {}, {&X, &I, &U}, {&Y}));
  EXPECT_EQ(Y.values<float>(),
            (std::vector<float>{2.0f, 1.1f, 0.0f, 1.0f, 0.0f, 2.2f, 0.0f, 2.1f, 1.2f}));
  // Example 2 (axis 1) with a negative index, then duplicates under each reduction.
  Tensor X2 = F({1, 5}, {1, 2, 3, 4, 5});
  Tensor I2 = I64({1, 2}, {1, -2}), U2 = F({1, 2}, {1.5f, 2.5f});
  Tensor Y2(ElementType::Float, {1, 5});
  EXPECT_OK(run("ScatterElements", Attrs().i("axis", 1), {&X2, &I2, &U2}, {&Y2}));
  EXPECT_EQ(Y2.values<float>(), (std::vector<float>{1, 1.5f, 3, 2.5f, 5}));
  Tensor Id = I32({1, 2}, {1, 1}), Ud = F({1, 2}, {3.f, 0.5f});
  struct Case {
    const char *reduction;
    float want;
  } cases[] = {{"none", 0.5f}, {"add", 5.5f}, {"mul", 3.f}, {"max", 3.f}, {"min", 0.5f}};
  for (const Case &c : cases) {
    EXPECT_OK(run("ScatterElements", Attrs().i("axis", -1).s("reduction", c.reduction),
                  {&X2, &Id, &Ud}, {&Y2}));
    EXPECT_EQ(Y2.values<float>(), (std::vector<float>{1, c.want, 3, 4, 5})) << c.reduction;
  }
}

TEST(IndexKernelsTest, ScatterElementsRejectsBadInputs) {
  Tensor X = F({1, 5}, {1, 2, 3, 4, 5}), U = F({1, 2}, {1, 2}), Y(ElementType::Float, {1, 5});
  Tensor I = I64({1, 2}, {1, 5});
  EXPECT_INVALID(run("ScatterElements", Attrs().i("axis", 1), {&X, &I, &U}, {&Y}),
                 "index 5 is out of range for axis 1 of size 5");
  EXPECT_EQ(Y.values<float>(), std::vector<float>(5, 0.f)) << "nothing written on error";
  Tensor Ib = I64({1, 3}, {0, 1, 2});
  EXPECT_INVALID(run("ScatterElements", Attrs().i("axis", 1), {&X, &Ib, &U}, {&Y}),
                 "must have one shape");
  Tensor Bx(ElementType::Bool, {1, 5}), Bu(ElementType::Bool, {1, 2}),
      By(ElementType::Bool, {1, 5});
  Tensor I0 = I64({1, 2}, {0, 1});
  EXPECT_INVALID(
      run("ScatterElements", Attrs().i("axis", 1).s("reduction", "add"), {&Bx, &I0, &Bu}, {&By}),
      "reduction 'add' needs");
  EXPECT_INVALID(run("ScatterElements", Attrs().s("reduction", "mean"), {&X, &I0, &U}, {&Y}),
                 "unsupported reduction 'mean'");
}

TEST(IndexKernelsTest, ScatterNDDocExamples) {
  // Example 1: 1-D data, element indices.
  Tensor X = F({8}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor I = I64({4, 1}, {4, 3, 1, 7}), U = F({4}, {9, 10, 11, 12});
  Tensor Y(ElementType::Float, {8});
  EXPECT_OK(run("ScatterND", {}, {&X, &I, &U}, {&Y}));
  EXPECT_EQ(Y.values<float>(), (std::vector<float>{1, 11, 3, 10, 9, 6, 7, 12}));
  // Example 2: slices of a [4,4,4] tensor, and the same with add over duplicates.
  std::vector<float> data(64), upd(32);
  for (int i = 0; i < 64; ++i)
    data[size_t(i)] = float(i % 7);
  for (int i = 0; i < 32; ++i)
    upd[size_t(i)] = float(100 + i);
  Tensor X3 = F({4, 4, 4}, data), U3 = F({2, 4, 4}, upd), Y3(ElementType::Float, {4, 4, 4});
  Tensor I3 = I64({2, 1}, {0, 2});
  EXPECT_OK(run("ScatterND", {}, {&X3, &I3, &U3}, {&Y3}));
  std::vector<float> want = data;
  for (int j = 0; j < 16; ++j) {
    want[size_t(j)] = upd[size_t(j)];
    want[size_t(32 + j)] = upd[size_t(16 + j)];
  }
  EXPECT_EQ(Y3.values<float>(), want);
  Tensor Idup = I64({2, 1}, {-4, 0});
  EXPECT_OK(run("ScatterND", Attrs().s("reduction", "add"), {&X3, &Idup, &U3}, {&Y3}));
  want = data;
  for (int j = 0; j < 16; ++j)
    want[size_t(j)] += upd[size_t(j)] + upd[size_t(16 + j)];
  EXPECT_EQ(Y3.values<float>(), want);
  // Element indices with max and min.
  Tensor X4 = F({2, 2}, {1, 2, 3, 4}), I4 = I64({2, 2}, {0, 0, 1, 1}), U4 = F({2}, {5, 1});
  Tensor Y4(ElementType::Float, {2, 2});
  EXPECT_OK(run("ScatterND", Attrs().s("reduction", "max"), {&X4, &I4, &U4}, {&Y4}));
  EXPECT_EQ(Y4.values<float>(), (std::vector<float>{5, 2, 3, 4}));
  EXPECT_OK(run("ScatterND", Attrs().s("reduction", "min"), {&X4, &I4, &U4}, {&Y4}));
  EXPECT_EQ(Y4.values<float>(), (std::vector<float>{1, 2, 3, 1}));
}

TEST(IndexKernelsTest, ScatterNDRejectsBadInputs) {
  Tensor X = F({2, 2}, {1, 2, 3, 4}), Y(ElementType::Float, {2, 2});
  Tensor I = I64({2, 2}, {0, 0, 1, 1}), Ubad = F({3}, {1, 2, 3});
  EXPECT_INVALID(run("ScatterND", {}, {&X, &I, &Ubad}, {&Y}), "updates shape [3] should be [2]");
  Tensor Ioob = I64({1, 2}, {0, 2}), U1 = F({1}, {1});
  EXPECT_INVALID(run("ScatterND", {}, {&X, &Ioob, &U1}, {&Y}), "index 2 is out of range");
  Tensor Ik = I64({1, 3}, {0, 0, 0});
  EXPECT_INVALID(run("ScatterND", {}, {&X, &Ik, &U1}, {&Y}), "last dim 3");
}

TEST(IndexKernelsTest, TensorScatterLinearAndCircular) {
  // past [2, 4, 2] (axis -2 = 1), update [2, 2, 2].
  std::vector<float> past(16, 0.f);
  Tensor P = F({2, 4, 2}, past);
  Tensor U = F({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8});
  Tensor W = I64({2}, {1, 2}), Y(ElementType::Float, {2, 4, 2});
  EXPECT_OK(run("TensorScatter", {}, {&P, &U, &W}, {&Y}));
  EXPECT_EQ(Y.values<float>(),
            (std::vector<float>{0, 0, 1, 2, 3, 4, 0, 0, /**/ 0, 0, 0, 0, 5, 6, 7, 8}));
  Tensor Wc = I64({2}, {3, 0});
  EXPECT_OK(run("TensorScatter", Attrs().s("mode", "circular"), {&P, &U, &Wc}, {&Y}));
  EXPECT_EQ(Y.values<float>(),
            (std::vector<float>{3, 4, 0, 0, 0, 0, 1, 2, /**/ 5, 6, 7, 8, 0, 0, 0, 0}));
  // No write_indices: position 0.
  EXPECT_OK(run("TensorScatter", {}, {&P, &U, nullptr}, {&Y}));
  EXPECT_EQ(Y.values<float>(),
            (std::vector<float>{1, 2, 3, 4, 0, 0, 0, 0, /**/ 5, 6, 7, 8, 0, 0, 0, 0}));
}

TEST(IndexKernelsTest, TensorScatterRejectsBadInputs) {
  Tensor P = F({2, 4, 2}, std::vector<float>(16, 0.f)),
         U = F({2, 2, 2}, std::vector<float>(8, 1.f));
  Tensor Y(ElementType::Float, {2, 4, 2});
  Tensor W = I64({2}, {3, 0});
  EXPECT_INVALID(run("TensorScatter", {}, {&P, &U, &W}, {&Y}), "write index 3 of batch 0");
  EXPECT_INVALID(run("TensorScatter", Attrs().i("axis", 0), {&P, &U, &W}, {&Y}),
                 "axis must not be the batch axis");
  Tensor Ubig = F({2, 5, 2}, std::vector<float>(20, 1.f));
  EXPECT_INVALID(run("TensorScatter", {}, {&P, &Ubig}, {&Y}), "does not fit");
}

//===----------------------------------------------------------------------===//
// GatherElements, GatherND
//===----------------------------------------------------------------------===//

TEST(IndexKernelsTest, GatherElementsDocExamples) {
  Tensor X = F({2, 2}, {1, 2, 3, 4}), I = I64({2, 2}, {0, 0, 1, 0});
  Tensor Y(ElementType::Float, {2, 2});
  EXPECT_OK(run("GatherElements", Attrs().i("axis", 1), {&X, &I}, {&Y}));
  EXPECT_EQ(Y.values<float>(), (std::vector<float>{1, 1, 4, 3}));
  Tensor X3 = F({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9}), I3 = I32({2, 3}, {-1, -2, 0, -2, 0, 0});
  Tensor Y3(ElementType::Float, {2, 3});
  EXPECT_OK(run("GatherElements", {}, {&X3, &I3}, {&Y3}));
  EXPECT_EQ(Y3.values<float>(), (std::vector<float>{7, 5, 3, 4, 2, 3}));
  Tensor Ioob = I64({1, 1}, {3}), Y1(ElementType::Float, {1, 1});
  EXPECT_INVALID(run("GatherElements", {}, {&X3, &Ioob}, {&Y1}), "index 3 is out of range");
  Tensor Irank = I64({3}, {0, 1, 2}), Yr(ElementType::Float, {3});
  EXPECT_INVALID(run("GatherElements", {}, {&X3, &Irank}, {&Yr}), "must have data's rank");
}

TEST(IndexKernelsTest, GatherNDDocExamples) {
  Tensor X = I32({2, 2}, {0, 1, 2, 3});
  Tensor I = I64({2, 2}, {0, 0, 1, 1}), Y(ElementType::Int32, {2});
  EXPECT_OK(run("GatherND", {}, {&X, &I}, {&Y}));
  EXPECT_EQ(Y.values<int32_t>(), (std::vector<int32_t>{0, 3}));
  Tensor I1 = I64({2, 1}, {1, 0}), Y1(ElementType::Int32, {2, 2});
  EXPECT_OK(run("GatherND", {}, {&X, &I1}, {&Y1}));
  EXPECT_EQ(Y1.values<int32_t>(), (std::vector<int32_t>{2, 3, 0, 1}));
  Tensor X3 = F({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  Tensor I3 = I64({2, 1, 2}, {0, 1, 1, 0}), Y3(ElementType::Float, {2, 1, 2});
  EXPECT_OK(run("GatherND", {}, {&X3, &I3}, {&Y3}));
  EXPECT_EQ(Y3.values<float>(), (std::vector<float>{2, 3, 4, 5}));
  // batch_dims 1.
  Tensor Ib = I64({2, 1}, {1, -2}), Yb(ElementType::Float, {2, 2});
  EXPECT_OK(run("GatherND", Attrs().i("batch_dims", 1), {&X3, &Ib}, {&Yb}));
  EXPECT_EQ(Yb.values<float>(), (std::vector<float>{2, 3, 4, 5}));
}

TEST(IndexKernelsTest, GatherNDRejectsBadInputs) {
  Tensor X = F({2, 2}, {0, 1, 2, 3}), Y(ElementType::Float, {1});
  Tensor I = I64({1, 3}, {0, 0, 0});
  EXPECT_INVALID(run("GatherND", {}, {&X, &I}, {&Y}), "exceeds data's rank");
  Tensor I2 = I64({1, 2}, {0, -3});
  EXPECT_INVALID(run("GatherND", {}, {&X, &I2}, {&Y}), "index -3 is out of range");
  Tensor I3 = I64({3, 1}, {0, 0, 0}), Y3(ElementType::Float, {3});
  EXPECT_INVALID(run("GatherND", Attrs().i("batch_dims", 1), {&X, &I3}, {&Y3}),
                 "batch dim 0 of indices");
}

//===----------------------------------------------------------------------===//
// TopK
//===----------------------------------------------------------------------===//

TEST(IndexKernelsTest, TopKMatchesStableSortReference) {
  const int64_t A = 3, N = 7, C = 2;
  Tensor X = randomF({A, N, C}, 11);
  for (int64_t i = 0; i < A * N * C; i += 3)
    X.data<float>()[i] = 0.25f; // ties
  for (int largest : {0, 1})
    for (int64_t k : {0, 1, 4, 7}) {
      Tensor K = I64({1}, {k}), V(ElementType::Float, {A, k, C}), Ix(ElementType::Int64, {A, k, C});
      EXPECT_OK(run("TopK", Attrs().i("axis", 1).i("largest", largest), {&X, &K}, {&V, &Ix}));
      for (int64_t a = 0; a < A; ++a)
        for (int64_t c = 0; c < C; ++c) {
          std::vector<int64_t> order(N);
          std::iota(order.begin(), order.end(), int64_t(0));
          auto val = [&](int64_t n) { return X.data<float>()[(a * N + n) * C + c]; };
          std::stable_sort(order.begin(), order.end(), [&](int64_t p, int64_t q) {
            return largest ? val(p) > val(q) : val(p) < val(q);
          });
          for (int64_t j = 0; j < k; ++j) {
            int64_t at = (a * k + j) * C + c;
            EXPECT_EQ(Ix.data<int64_t>()[at], order[size_t(j)]);
            EXPECT_EQ(V.data<float>()[at], val(order[size_t(j)]));
          }
        }
    }
}

TEST(IndexKernelsTest, TopKTiesNaNAndIntegers) {
  Tensor X = make<int64_t>({4}, {0, 0, 0, 0}), K = I64({1}, {3});
  Tensor V(ElementType::Int64, {3}), I(ElementType::Int64, {3});
  EXPECT_OK(run("TopK", Attrs().i("axis", 0), {&X, &K}, {&V, &I}));
  EXPECT_EQ(I.values<int64_t>(), (std::vector<int64_t>{0, 1, 2}));
  float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor Xf = F({4}, {1, nan, 3, -1}), Vf(ElementType::Float, {3});
  EXPECT_OK(run("TopK", {}, {&Xf, &K}, {&Vf, &I}));
  EXPECT_EQ(I.values<int64_t>(), (std::vector<int64_t>{1, 2, 0})) << "NaN sorts above numbers";
  EXPECT_OK(run("TopK", Attrs().i("largest", 0), {&Xf, &K}, {&Vf, &I}));
  EXPECT_EQ(I.values<int64_t>(), (std::vector<int64_t>{3, 0, 2}));
  Tensor Xu = make<uint64_t>({2, 3}, {5, 9, 1, 2, 2, 8}), K2 = I64({1}, {2});
  Tensor Vu(ElementType::UInt64, {2, 2}), Iu(ElementType::Int64, {2, 2});
  EXPECT_OK(run("TopK", Attrs().i("axis", -1), {&Xu, &K2}, {&Vu, &Iu}));
  EXPECT_EQ(Vu.values<uint64_t>(), (std::vector<uint64_t>{9, 5, 8, 2}));
  EXPECT_EQ(Iu.values<int64_t>(), (std::vector<int64_t>{1, 0, 2, 0}));
}

TEST(IndexKernelsTest, TopKRejectsBadInputs) {
  Tensor X = F({4}, {1, 2, 3, 4}), K = I64({1}, {5});
  Tensor V(ElementType::Float, {5}), I(ElementType::Int64, {5});
  EXPECT_INVALID(run("TopK", {}, {&X, &K}, {&V, &I}), "K 5 is out of range");
  Tensor K2 = I64({1}, {2}), V3(ElementType::Float, {3}), I3(ElementType::Int64, {3});
  EXPECT_INVALID(run("TopK", {}, {&X, &K2}, {&V3, &I3}), "output shape [3] should be [2]");
  Tensor V2(ElementType::Float, {2}), I2(ElementType::Int32, {2});
  EXPECT_INVALID(run("TopK", {}, {&X, &K2}, {&V2, &I2}), "output 1 is int32");
}

//===----------------------------------------------------------------------===//
// OneHot, EyeLike
//===----------------------------------------------------------------------===//

TEST(IndexKernelsTest, OneHotAxesAndNegativeIndices) {
  Tensor I = I64({3}, {0, -7, 12}), depth = F({}, {10.f}), vals = F({2}, {1, 3});
  Tensor Y(ElementType::Float, {3, 10});
  EXPECT_OK(run("OneHot", Attrs().i("axis", 1), {&I, &depth, &vals}, {&Y}));
  std::vector<float> want(30, 1.f);
  want[0] = 3;      // index 0
  want[10 + 3] = 3; // -7 + 10
  EXPECT_EQ(Y.values<float>(), want) << "12 is out of range: a row of off values";
  // axis 0 on float indices [2,2]: output [depth, 2, 2]; values int32.
  Tensor If = F({2, 2}, {1, 2.9f, 0, 3}), d4 = I32({}, {4}), vi = I32({2}, {-1, 5});
  Tensor Yi(ElementType::Int32, {4, 2, 2});
  EXPECT_OK(run("OneHot", Attrs().i("axis", -3), {&If, &d4, &vi}, {&Yi}));
  std::vector<int32_t> wi(16, -1);
  wi[1 * 4 + 0] = 5; // indices[0,0] = 1
  wi[2 * 4 + 1] = 5; // 2.9 truncates to 2
  wi[0 * 4 + 2] = 5;
  wi[3 * 4 + 3] = 5;
  EXPECT_EQ(Yi.values<int32_t>(), wi);
}

TEST(IndexKernelsTest, OneHotRejectsBadInputs) {
  Tensor I = I64({3}, {0, 1, 2}), depth = F({}, {10.f}), vals = F({2}, {0, 1});
  Tensor Y(ElementType::Float, {3, 5});
  EXPECT_INVALID(run("OneHot", {}, {&I, &depth, &vals}, {&Y}),
                 "output shape [3,5] should be [3,10]");
  Tensor v3 = F({3}, {0, 1, 2}), Y10(ElementType::Float, {3, 10});
  EXPECT_INVALID(run("OneHot", {}, {&I, &depth, &v3}, {&Y10}), "values must have 2 elements");
  Tensor d0 = F({}, {0.f});
  EXPECT_INVALID(run("OneHot", {}, {&I, &d0, &vals}, {&Y10}), "depth must be a positive");
}

TEST(IndexKernelsTest, EyeLikeTypesAndOffsets) {
  Tensor X = I32({3, 4}, std::vector<int32_t>(12, 7));
  Tensor Y(ElementType::Double, {3, 4});
  EXPECT_OK(run("EyeLike", Attrs().i("dtype", int64_t(ElementType::Double)), {&X}, {&Y}));
  EXPECT_EQ(Y.values<double>(), (std::vector<double>{1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0}));
  Tensor Yi(ElementType::Int32, {3, 4});
  EXPECT_OK(run("EyeLike", Attrs().i("k", -1), {&X}, {&Yi}));
  EXPECT_EQ(Yi.values<int32_t>(), (std::vector<int32_t>{0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0}));
  Tensor Yb(ElementType::BFloat16, {3, 4});
  EXPECT_OK(
      run("EyeLike", Attrs().i("dtype", int64_t(ElementType::BFloat16)).i("k", 3), {&X}, {&Yb}));
  EXPECT_EQ(Yb.values<uint16_t>(),
            (std::vector<uint16_t>{0, 0, 0, 0x3f80, 0, 0, 0, 0, 0, 0, 0, 0}));
  Tensor X3(ElementType::Float, {2, 2, 2}), Y3(ElementType::Float, {2, 2, 2});
  EXPECT_INVALID(run("EyeLike", {}, {&X3}, {&Y3}), "input must be 2-D");
  Tensor Yf(ElementType::Float, {3, 4});
  EXPECT_INVALID(run("EyeLike", {}, {&X}, {&Yf}), "output 0 is float32, should be int32");
}

//===----------------------------------------------------------------------===//
// ReverseSequence, Range
//===----------------------------------------------------------------------===//

TEST(IndexKernelsTest, ReverseSequenceBothLayouts) {
  std::vector<float> x(16);
  std::iota(x.begin(), x.end(), 0.f);
  Tensor X = F({4, 4}, x), Y(ElementType::Float, {4, 4});
  Tensor L = I64({4}, {4, 3, 2, 1});
  // time_axis 0, batch_axis 1: columns are sequences.
  EXPECT_OK(run("ReverseSequence", {}, {&X, &L}, {&Y}));
  EXPECT_EQ(Y.values<float>(),
            (std::vector<float>{12, 9, 6, 3, 8, 5, 2, 7, 4, 1, 10, 11, 0, 13, 14, 15}));
  Tensor L2 = I32({4}, {1, 2, 3, 0});
  EXPECT_OK(run("ReverseSequence", Attrs().i("batch_axis", 0).i("time_axis", 1), {&X, &L2}, {&Y}));
  EXPECT_EQ(Y.values<float>(),
            (std::vector<float>{0, 1, 2, 3, 5, 4, 6, 7, 10, 9, 8, 11, 12, 13, 14, 15}));
  Tensor Lbad = I64({4}, {5, 0, 0, 0});
  EXPECT_INVALID(run("ReverseSequence", {}, {&X, &Lbad}, {&Y}), "sequence length 5 of batch 0");
  EXPECT_INVALID(run("ReverseSequence", Attrs().i("batch_axis", 2), {&X, &L}, {&Y}),
                 "must be 0 and 1");
}

TEST(IndexKernelsTest, RangeTypesAndCounts) {
  Tensor s = F({}, {1}), l = F({}, {5}), d = F({}, {2}), Y(ElementType::Float, {2});
  EXPECT_OK(run("Range", {}, {&s, &l, &d}, {&Y}));
  EXPECT_EQ(Y.values<float>(), (std::vector<float>{1, 3}));
  Tensor si = I32({}, {10}), li = I32({}, {6}), di = I32({}, {-3}), Yi(ElementType::Int32, {2});
  EXPECT_OK(run("Range", {}, {&si, &li, &di}, {&Yi}));
  EXPECT_EQ(Yi.values<int32_t>(), (std::vector<int32_t>{10, 7}));
  Tensor le = I32({}, {10}), Y0(ElementType::Int32, {0});
  EXPECT_OK(run("Range", {}, {&si, &le, &di}, {&Y0}));
  using namespace ortc::cpu::kernels;
  Tensor sh(ElementType::Float16, {}), lh(ElementType::Float16, {}), dh(ElementType::Float16, {});
  sh.data<uint16_t>()[0] = floatToHalf(0.5f);
  lh.data<uint16_t>()[0] = floatToHalf(2.0f);
  dh.data<uint16_t>()[0] = floatToHalf(0.25f);
  Tensor Yh(ElementType::Float16, {6});
  EXPECT_OK(run("Range", {}, {&sh, &lh, &dh}, {&Yh}));
  std::vector<float> got;
  for (uint16_t h : Yh.values<uint16_t>())
    got.push_back(halfToFloat(h));
  EXPECT_EQ(got, (std::vector<float>{0.5f, 0.75f, 1.f, 1.25f, 1.5f, 1.75f}));
}

TEST(IndexKernelsTest, RangeRejectsBadInputs) {
  Tensor s = F({}, {1}), l = F({}, {5}), d = F({}, {2}), Y3(ElementType::Float, {3});
  EXPECT_INVALID(run("Range", {}, {&s, &l, &d}, {&Y3}), "output shape [3] should be [2]");
  Tensor z = F({}, {0});
  EXPECT_INVALID(run("Range", {}, {&s, &l, &z}, {&Y3}), "delta non-zero");
  Tensor di = I32({}, {1});
  EXPECT_INVALID(run("Range", {}, {&s, &l, &di}, {&Y3}), "one element type");
}

//===----------------------------------------------------------------------===//
// SpaceToDepth CRD (DataMovementKernels.cpp)
//===----------------------------------------------------------------------===//

TEST(IndexKernelsTest, SpaceToDepthModesInvertDepthToSpace) {
  const int64_t N = 2, C = 3, H = 4, W = 6, b = 2;
  std::vector<float> x(size_t(N * C * H * W));
  std::iota(x.begin(), x.end(), 0.f);
  Tensor X = F({N, C, H, W}, x);
  for (std::string mode : {"DCR", "CRD"}) {
    Tensor S(ElementType::Float, {N, C * b * b, H / b, W / b});
    EXPECT_OK(run("SpaceToDepth", Attrs().i("blocksize", b).s("mode", mode), {&X}, {&S}));
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t w = 0; w < W; ++w) {
            int64_t b1 = h % b, b2 = w % b;
            int64_t ch = mode == "DCR" ? (b1 * b + b2) * C + c : c * b * b + b1 * b + b2;
            int64_t at = ((n * C * b * b + ch) * (H / b) + h / b) * (W / b) + w / b;
            ASSERT_EQ(S.data<float>()[at], x[size_t(((n * C + c) * H + h) * W + w)]) << mode;
          }
    Tensor Back(ElementType::Float, {N, C, H, W});
    EXPECT_OK(run("DepthToSpace", Attrs().i("blocksize", b).s("mode", mode), {&S}, {&Back}));
    EXPECT_EQ(Back.values<float>(), x) << mode;
  }
  Tensor S(ElementType::Float, {N, C * b * b, H / b, W / b});
  EXPECT_INVALID(run("SpaceToDepth", Attrs().i("blocksize", b).s("mode", "XYZ"), {&X}, {&S}),
                 "unsupported mode 'XYZ'");
}

//===----------------------------------------------------------------------===//
// Einsum
//===----------------------------------------------------------------------===//

TEST(EinsumTest, PlansEquations) {
  EinsumPlan plan;
  std::string error;
  ASSERT_TRUE(planEinsum("bij, bjk -> bik", {{5, 2, 3}, {5, 3, 4}}, plan, error)) << error;
  EXPECT_EQ(plan.outputShape, (std::vector<int64_t>{5, 2, 4}));
  ASSERT_TRUE(planEinsum("ij,jk", {{2, 3}, {3, 4}}, plan, error)) << error;
  EXPECT_EQ(plan.outputShape, (std::vector<int64_t>{2, 4})) << "implicit output: i, k";
  ASSERT_TRUE(planEinsum("Ba,aC", {{2, 3}, {3, 4}}, plan, error)) << error;
  EXPECT_EQ(plan.outputShape, (std::vector<int64_t>{2, 4}));
  ASSERT_TRUE(planEinsum("ii", {{3, 3}}, plan, error)) << error;
  EXPECT_TRUE(plan.outputShape.empty()) << "a trace";
  ASSERT_TRUE(planEinsum("...ii ->...i", {{3, 5, 5}}, plan, error)) << error;
  EXPECT_EQ(plan.outputShape, (std::vector<int64_t>{3, 5}));
  ASSERT_TRUE(planEinsum("...j,j...", {{2, 1, 3}, {3, 4}}, plan, error)) << error;
  EXPECT_EQ(plan.outputShape, (std::vector<int64_t>{2, 4})) << "ellipses broadcast";
  ASSERT_TRUE(planEinsum("->", {{}}, plan, error)) << error;

  EXPECT_FALSE(planEinsum("ij,jk", {{2, 3}}, plan, error));
  EXPECT_NE(error.find("2 terms for 1 inputs"), std::string::npos) << error;
  EXPECT_FALSE(planEinsum("ij,jk", {{2, 3}, {4, 5}}, plan, error));
  EXPECT_FALSE(planEinsum("ii", {{2, 3}}, plan, error));
  EXPECT_FALSE(planEinsum("ijk", {{2, 3}}, plan, error));
  EXPECT_FALSE(planEinsum("...i->i", {{2, 3}}, plan, error));
  EXPECT_FALSE(planEinsum("ij->iz", {{2, 3}}, plan, error));
  EXPECT_FALSE(planEinsum("ij->ii", {{2, 3}}, plan, error));
  EXPECT_FALSE(planEinsum("i.j", {{2, 3}}, plan, error));
}

TEST(EinsumTest, MatchesNaiveContractions) {
  Tensor A = randomF({5, 2, 3}, 1), B = randomF({5, 3, 4}, 2);
  Tensor Y(ElementType::Float, {5, 2, 4});
  EXPECT_OK(run("Einsum", Attrs().s("equation", "bij, bjk -> bik"), {&A, &B}, {&Y}));
  for (int b = 0; b < 5; ++b)
    for (int i = 0; i < 2; ++i)
      for (int k = 0; k < 4; ++k) {
        double want = 0;
        for (int j = 0; j < 3; ++j)
          want +=
              double(A.data<float>()[(b * 2 + i) * 3 + j]) * B.data<float>()[(b * 3 + j) * 4 + k];
        EXPECT_NEAR(Y.data<float>()[(b * 2 + i) * 4 + k], want, 1e-6);
      }
  // Transpose, row sums, trace and batch diagonal on doubles.
  Tensor X = D({3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor T(ElementType::Double, {3, 3});
  EXPECT_OK(run("Einsum", Attrs().s("equation", "ij->ji"), {&X}, {&T}));
  EXPECT_EQ(T.values<double>(), (std::vector<double>{1, 4, 7, 2, 5, 8, 3, 6, 9}));
  Tensor S(ElementType::Double, {3});
  EXPECT_OK(run("Einsum", Attrs().s("equation", "ij->i"), {&X}, {&S}));
  EXPECT_EQ(S.values<double>(), (std::vector<double>{6, 15, 24}));
  Tensor Tr(ElementType::Double, {});
  EXPECT_OK(run("Einsum", Attrs().s("equation", "ii"), {&X}, {&Tr}));
  EXPECT_EQ(Tr.values<double>(), (std::vector<double>{15}));
  Tensor X3 = D({2, 2, 2}, {1, 2, 3, 4, 5, 6, 7, 8}), Dg(ElementType::Double, {2, 2});
  EXPECT_OK(run("Einsum", Attrs().s("equation", "...ii->...i"), {&X3}, {&Dg}));
  EXPECT_EQ(Dg.values<double>(), (std::vector<double>{1, 4, 5, 8}));
  // Integers: an outer product with a broadcast ellipsis.
  Tensor P = I64({2, 1}, {2, 3}), Q = I64({3}, {1, 10, 100}), O(ElementType::Int64, {2, 3});
  EXPECT_OK(run("Einsum", Attrs().s("equation", "...,...->..."), {&P, &Q}, {&O}));
  EXPECT_EQ(O.values<int64_t>(), (std::vector<int64_t>{2, 20, 200, 3, 30, 300}));
}

TEST(EinsumTest, RejectsBadCalls) {
  Tensor A = F({2, 3}, {1, 2, 3, 4, 5, 6}), B = F({4, 5}, std::vector<float>(20, 1.f));
  Tensor Y(ElementType::Float, {2, 5});
  EXPECT_INVALID(run("Einsum", Attrs().s("equation", "ij,jk->ik"), {&A, &B}, {&Y}),
                 "a label has dims 3 and 4");
  EXPECT_INVALID(run("Einsum", {}, {&A}, {&Y}), "missing attribute equation");
  Tensor Bi = I64({3, 5}, std::vector<int64_t>(15, 1));
  EXPECT_INVALID(run("Einsum", Attrs().s("equation", "ij,jk->ik"), {&A, &Bi}, {&Y}),
                 "input 1 is int64");
  Tensor Y3(ElementType::Float, {3});
  EXPECT_INVALID(run("Einsum", Attrs().s("equation", "ij->i"), {&A}, {&Y3}),
                 "output shape [3] should be [2]");
}

} // namespace
