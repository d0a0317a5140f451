//===- LibraryKernelsTest.cpp - CPU library kernels against naive references ===//
//
// Each kernel runs through the registry (findLibraryKernel) on deterministic
// random data and is compared with a naive reference written here, over
// several shapes and attribute combinations; hand-computed cases pin the
// conventions (pad placement, ceil_mode, rounding) independently of the
// references. Error cases check that a bad call returns InvalidArgument.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include "test/unit/cpu/KernelTestUtil.h"
#include "test/unit/cpu/TestRng.h"

#include <array>
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <iostream>
#include <limits>
#include <numeric>
#include <string>
#include <vector>

using namespace ortc;
using namespace ortc::cpu;
using namespace ortc::cpu::kernel_test;

namespace {

//===----------------------------------------------------------------------===//
// Harness
//===----------------------------------------------------------------------===//

/// Row-major multi-index of linear index `i` over `shape`.
std::vector<int64_t> unravel(int64_t i, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    idx[d] = i % shape[d];
    i /= shape[d];
  }
  return idx;
}

int64_t ravel(const std::vector<int64_t> &idx, const std::vector<int64_t> &shape) {
  int64_t i = 0;
  for (size_t d = 0; d < shape.size(); ++d)
    i = i * shape[d] + idx[d];
  return i;
}

/// Index into a tensor of `shape` that broadcasts (numpy) to an index of a
/// larger rank.
int64_t broadcastIndex(const std::vector<int64_t> &outIdx, const std::vector<int64_t> &shape) {
  std::vector<int64_t> idx(shape.size());
  size_t off = outIdx.size() - shape.size();
  for (size_t d = 0; d < shape.size(); ++d)
    idx[d] = shape[d] == 1 ? 0 : outIdx[off + d];
  return ravel(idx, shape);
}

//===----------------------------------------------------------------------===//
// Registry and Scratch
//===----------------------------------------------------------------------===//

/// A rank-4 float tensor with its dims in `perm`'s order (ONNX Transpose).
static Tensor permuted4(const Tensor &t, std::array<int, 4> perm) {
  std::vector<int64_t> shape(4), stride(4),
      from = {t.shape[1] * t.shape[2] * t.shape[3], t.shape[2] * t.shape[3], t.shape[3], 1};
  for (int i = 0; i < 4; ++i) {
    shape[i] = t.shape[perm[i]];
    stride[i] = from[perm[i]];
  }
  Tensor r(ElementType::Float, shape);
  int64_t at = 0;
  for (int64_t a = 0; a < shape[0]; ++a)
    for (int64_t b = 0; b < shape[1]; ++b)
      for (int64_t c = 0; c < shape[2]; ++c)
        for (int64_t d = 0; d < shape[3]; ++d)
          r.f()[at++] = t.f()[a * stride[0] + b * stride[1] + c * stride[2] + d * stride[3]];
  return r;
}

TEST(LibraryKernelApi, RegistryFindsEveryName) {
  std::vector<std::string> names = libraryKernelNames();
  EXPECT_GE(names.size(), 35u);
  EXPECT_TRUE(std::is_sorted(names.begin(), names.end()));
  EXPECT_EQ(std::adjacent_find(names.begin(), names.end()), names.end());
  for (const std::string &n : names)
    EXPECT_NE(findLibraryKernel(n), nullptr) << n;
  for (const char *n : {"MatMul",
                        "Gemm",
                        "Conv",
                        "MaxPool",
                        "AveragePool",
                        "GlobalAveragePool",
                        "GlobalMaxPool",
                        "Softmax",
                        "LogSoftmax",
                        "LayerNormalization",
                        "BatchNormalization",
                        "InstanceNormalization",
                        "Attention",
                        "Transpose",
                        "Concat",
                        "Split",
                        "Slice",
                        "Gather",
                        "Expand",
                        "Tile",
                        "Pad",
                        "Resize",
                        "Copy",
                        "Shape",
                        "ConstantOfShape",
                        "Reshape",
                        "Squeeze",
                        "Unsqueeze",
                        "ReduceMean",
                        "ReduceSum",
                        "ReduceMax",
                        "ReduceMin",
                        "ReduceProd",
                        "ReduceL2",
                        "ReduceSumSquare",
                        "ArgMax",
                        "ArgMin"})
    EXPECT_NE(findLibraryKernel(n), nullptr) << n;
  EXPECT_EQ(findLibraryKernel("Relu"), nullptr);
  EXPECT_EQ(findLibraryKernel(""), nullptr);
  EXPECT_EQ(findLibraryKernel("matmul"), nullptr);
  EXPECT_EQ(findLibraryKernel("ZZZ"), nullptr);
}

TEST(LibraryKernelApi, AttributesAndScratch) {
  Attrs at;
  at.i("group", 3).is("pads", {1, 2}).f("alpha", 0.5f).s("auto_pad", "VALID");
  at.a.ints["empty"] = {};
  EXPECT_EQ(at.a.getInt("group", 1), 3);
  EXPECT_EQ(at.a.getInt("missing", 7), 7);
  EXPECT_EQ(at.a.getInt("empty", 7), 7);
  EXPECT_EQ(at.a.getInts("pads"), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(at.a.getInts("missing", {4}), (std::vector<int64_t>{4}));
  EXPECT_EQ(at.a.getFloat("alpha", 1.f), 0.5f);
  EXPECT_EQ(at.a.getFloat("beta", 2.f), 2.f);
  EXPECT_EQ(at.a.getString("auto_pad", "NOTSET"), "VALID");
  EXPECT_EQ(at.a.getString("mode", "x"), "x");
  EXPECT_TRUE(at.a.has("group") && at.a.has("alpha") && at.a.has("auto_pad"));
  EXPECT_FALSE(at.a.has("nothing"));

  Scratch s;
  for (size_t bytes :
       {size_t(0), size_t(1), size_t(100), size_t(64), size_t(1) << 20, size_t(10)}) {
    void *p = s.get(bytes);
    ASSERT_NE(p, nullptr);
    EXPECT_EQ(reinterpret_cast<uintptr_t>(p) % 64, 0u);
    std::memset(p, 0xAB, bytes); // must be writable in full
  }
}

//===----------------------------------------------------------------------===//
// MatMul and Gemm
//===----------------------------------------------------------------------===//

/// numpy matmul in double.
std::vector<float> refMatMul(const Tensor &A, const Tensor &B, std::vector<int64_t> &outShape) {
  std::vector<int64_t> a = A.shape, b = B.shape;
  bool av = a.size() == 1, bv = b.size() == 1;
  if (av)
    a.insert(a.begin(), 1);
  if (bv)
    b.push_back(1);
  int64_t M = a[a.size() - 2], K = a.back(), N = b.back();
  std::vector<int64_t> ab(a.begin(), a.end() - 2), bb(b.begin(), b.end() - 2);
  size_t r = std::max(ab.size(), bb.size());
  std::vector<int64_t> batch(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i + ab.size() >= r ? ab[i + ab.size() - r] : 1;
    int64_t y = i + bb.size() >= r ? bb[i + bb.size() - r] : 1;
    batch[i] = std::max(x, y);
  }
  outShape = batch;
  if (!av)
    outShape.push_back(M);
  if (!bv)
    outShape.push_back(N);
  std::vector<float> out(numel(batch) * M * N);
  for (int64_t bi = 0; bi < numel(batch); ++bi) {
    std::vector<int64_t> idx = unravel(bi, batch);
    int64_t ao = broadcastIndex(idx, ab) * M * K, bo = broadcastIndex(idx, bb) * K * N;
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < K; ++k)
          acc += double(A.data<float>()[ao + m * K + k]) * B.data<float>()[bo + k * N + n];
        out[(bi * M + m) * N + n] = float(acc);
      }
  }
  return out;
}

TEST(LibraryKernels, MatMulShapes) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{3, 4}, {4, 5}},
      {{1, 1}, {1, 1}},
      {{7, 33}, {33, 17}},
      {{4}, {4, 5}},
      {{3, 4}, {4}},
      {{6}, {6}},
      {{2, 3, 4, 5}, {5, 6}},
      {{2, 3, 4, 5}, {5}},
      {{5}, {2, 5, 3}},
      {{2, 1, 4, 5}, {3, 5, 6}},
      {{3, 5, 6}, {2, 1, 6, 2}},
      {{2, 3, 4}, {2, 4, 3}},
      {{13, 70}, {70, 1}},
      {{2, 8, 300}, {300, 1}},
      {{1, 2, 3}, {3, 3, 2}},
  };
  uint64_t seed = 1;
  for (auto &[as, bs] : cases) {
    Tensor A = randomF(as, seed++), B = randomF(bs, seed++);
    std::vector<int64_t> ys;
    std::vector<float> want = refMatMul(A, B, ys);
    Tensor Y(ElementType::Float, ys);
    EXPECT_OK(run("MatMul", {}, {&A, &B}, {&Y}));
    EXPECT_TRUE(near(Y.floats(), want, 1e-4)) << shapeToString(as) << " x " << shapeToString(bs);
  }
}

TEST(LibraryKernels, MatMulPackedAndErrors) {
  Tensor A = randomF({2, 3, 20}, 11), B = randomF({20, 19}, 12);
  std::vector<int64_t> ys;
  std::vector<float> want = refMatMul(A, B, ys);
  Tensor P(ElementType::Float, {int64_t(packedGemmBSize(20, 19))});
  packGemmB(B.f(), 19, false, 20, 19, 1.f, P.f());
  P.shape = {20, 19}; // the view keeps B's logical shape
  Tensor Y(ElementType::Float, ys);
  EXPECT_OK(run("MatMul", Attrs().i("packed_b", 1), {&A, &P}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), want, 1e-4));

  Tensor bad(ElementType::Float, {2, 3, 18});
  EXPECT_INVALID(run("MatMul", {}, {&A, &B}, {&bad}), "output shape");
  Tensor B2 = randomF({21, 19}, 13);
  EXPECT_INVALID(run("MatMul", {}, {&A, &B2}, {&Y}), "inner dimensions");
  Tensor Ai = iota(ElementType::Int64, {2, 3, 20});
  EXPECT_INVALID(run("MatMul", {}, {&Ai, &B}, {&Y}), "float32");
  Tensor A3 = randomF({3, 2, 4}, 1), B3 = randomF({2, 4, 5}, 2), Y3(ElementType::Float, {3, 2, 5});
  EXPECT_INVALID(run("MatMul", {}, {&A3, &B3}, {&Y3}), "broadcast");
}

// ortc.matmul_bias on the MatMul kernel: a bias over the last dim and an
// activation (relu, GELU and its tanh form) in the GEMM's epilogue, against
// MatMul, the bias and the activation in double: packed and unpacked B,
// each as it is and stored transposed ([N, K], trans_b: a torch Linear's
// Gemm), a batch of stacked rows, B as a vector (N = 1), K = 0, on every
// vector variant; then a residual; a bias or residual of the wrong size, an
// unknown activation and trans_b on a batched B are refused.
TEST(LibraryKernels, MatMulBiasAndActivation) {
  struct Shape {
    std::vector<int64_t> a, b;
  };
  uint64_t seed = 60;
  for (const char *variant : {"generic", "avx2", "avx512"}) {
    if (!setSgemmVariant(variant))
      continue;
    for (const Shape &c : {Shape{{2, 3, 20}, {20, 19}}, Shape{{70, 64}, {64, 100}},
                           Shape{{4, 9}, {9}}, Shape{{3, 0}, {0, 5}}})
      for (const char *activation : {"none", "relu", "gelu", "gelu_tanh"})
        for (int form = 0; form < 4; ++form) {
          bool packedB = form & 1, transB = form & 2;
          if ((packedB || transB) && c.b.size() != 2)
            continue;
          std::string label = std::string(variant) + " " + shapeToString(c.a) + " x " +
                              shapeToString(c.b) + " " + activation + (packedB ? " packed" : "") +
                              (transB ? " trans_b" : "");
          Tensor A = randomF(c.a, ++seed), B = randomF(c.b, ++seed);
          int64_t N = c.b.size() == 2 ? c.b[1] : 1;
          Tensor bias = randomF({N}, ++seed);
          for (float &v : bias.floats())
            v *= 4.f; // outputs on both sides of GELU's knee
          std::vector<int64_t> ys;
          std::vector<float> product = refMatMul(A, B, ys);
          std::vector<float> want(product.size());
          for (size_t i = 0; i < product.size(); ++i) {
            double x = double(product[i]) + bias.floats()[i % size_t(N)];
            if (std::strcmp(activation, "relu") == 0)
              x = std::max(x, 0.0);
            else if (std::strcmp(activation, "gelu") == 0)
              x = 0.5 * x * std::erfc(-x / std::sqrt(2.0));
            else if (std::strcmp(activation, "gelu_tanh") == 0)
              x = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
            want[i] = float(x);
          }
          Tensor Bin = B;
          if (transB) { // B^T, [N, K]
            Bin.shape = {N, c.b[0]};
            for (int64_t k = 0; k < c.b[0]; ++k)
              for (int64_t n = 0; n < N; ++n)
                Bin.f()[n * c.b[0] + k] = B.f()[k * N + n];
          }
          Attrs attrs = Attrs().s("activation", activation);
          if (transB)
            attrs.i("trans_b", 1);
          if (packedB) {
            Bin = Tensor(ElementType::Float, {int64_t(packedGemmBSize(c.b[0], N))});
            packGemmB(B.f(), N, false, c.b[0], N, 1.f, Bin.f());
            Bin.shape = c.b; // the compiler's view of a packed B: [K, N], transposed or not
            attrs.i("packed_b", 1);
          }
          Tensor Y(ElementType::Float, ys);
          Status status = run("MatMul", attrs, {&A, &Bin, &bias}, {&Y});
          ASSERT_TRUE(status.isOk()) << label << ": " << status.message();
          EXPECT_TRUE(near(Y.floats(), want, 1e-4)) << label;
        }
  }
  setSgemmVariant(nullptr);
  // A residual of Y's shape (input 3, a folded skip connection) adds after
  // the bias: rows stacked, a batched B (the residual's batches follow Y's),
  // B as a vector, and K = 0; serially and on a pool.
  ThreadPool pool(2);
  for (const Shape &c : {Shape{{2, 30, 20}, {20, 37}}, Shape{{2, 30, 20}, {2, 20, 37}},
                         Shape{{4, 9}, {9}}, Shape{{3, 0}, {0, 5}}}) {
    Tensor A = randomF(c.a, ++seed), B = randomF(c.b, ++seed);
    int64_t N = c.b.size() >= 2 ? c.b.back() : 1;
    Tensor bias = randomF({N}, ++seed);
    std::vector<int64_t> ys;
    std::vector<float> product = refMatMul(A, B, ys);
    Tensor residual = randomF(ys, ++seed);
    std::vector<float> want(product.size());
    for (size_t i = 0; i < product.size(); ++i)
      want[i] = product[i] + bias.floats()[i % size_t(N)] + residual.floats()[i];
    for (ThreadPool *on : {(ThreadPool *)nullptr, &pool}) {
      Tensor Y(ElementType::Float, ys);
      ASSERT_OK(run("MatMul", Attrs(), {&A, &B, &bias, &residual}, {&Y}, on));
      EXPECT_TRUE(near(Y.floats(), want, 1e-4))
          << shapeToString(c.a) << " x " << shapeToString(c.b) << (on ? " pool" : "");
    }
  }
  Tensor A = randomF({2, 3}, 1), B = randomF({3, 4}, 2), Y(ElementType::Float, {2, 4});
  Tensor shortBias = randomF({3}, 3), bias = randomF({4}, 4), wrongResidual = randomF({1, 4}, 5);
  EXPECT_INVALID(run("MatMul", Attrs(), {&A, &B, &bias, &wrongResidual}, {&Y}),
                 "the residual [1,4] differs from Y [2,4]");
  EXPECT_INVALID(run("MatMul", Attrs(), {&A, &B, &shortBias}, {&Y}), "the bias must be [4]");
  EXPECT_INVALID(run("MatMul", Attrs().s("activation", "swish"), {&A, &B, &bias}, {&Y}),
                 "unknown activation 'swish'");
  Tensor B3 = randomF({1, 4, 3}, 6);
  EXPECT_INVALID(run("MatMul", Attrs().i("trans_b", 1), {&A, &B3, &bias}, {&Y}),
                 "trans_b needs a 2-D B, got [1,4,3]");
}

TEST(LibraryKernels, Gemm) {
  struct Case {
    int64_t M, N, K;
    bool tA, tB;
    float alpha, beta;
    std::vector<int64_t> cShape; // {-1}: no C
  };
  std::vector<Case> cases = {
      {3, 5, 4, false, false, 1.f, 1.f, {-1}},   {3, 5, 4, true, false, 0.5f, 1.f, {5}},
      {3, 5, 4, false, true, 1.f, 2.f, {3, 5}},  {7, 17, 9, true, true, -1.5f, 0.25f, {7, 1}},
      {7, 17, 9, false, false, 1.f, 1.f, {}},    {7, 17, 9, false, true, 2.f, 0.f, {1, 17}},
      {1, 1, 1, false, false, 1.f, 1.f, {1, 1}}, {20, 40, 300, false, true, 1.f, 1.f, {40}},
  };
  uint64_t seed = 100;
  for (const Case &c : cases) {
    Tensor A =
        randomF(c.tA ? std::vector<int64_t>{c.K, c.M} : std::vector<int64_t>{c.M, c.K}, seed++);
    Tensor B =
        randomF(c.tB ? std::vector<int64_t>{c.N, c.K} : std::vector<int64_t>{c.K, c.N}, seed++);
    bool hasC = !(c.cShape.size() == 1 && c.cShape[0] == -1);
    Tensor C = hasC ? randomF(c.cShape, seed++) : Tensor();
    std::vector<float> want(c.M * c.N);
    for (int64_t m = 0; m < c.M; ++m)
      for (int64_t n = 0; n < c.N; ++n) {
        double acc = 0;
        for (int64_t k = 0; k < c.K; ++k) {
          float a = c.tA ? A.f()[k * c.M + m] : A.f()[m * c.K + k];
          float b = c.tB ? B.f()[n * c.K + k] : B.f()[k * c.N + n];
          acc += double(a) * b;
        }
        double v = c.alpha * acc;
        if (hasC)
          v += c.beta * C.f()[broadcastIndex({m, n}, c.cShape)];
        want[m * c.N + n] = float(v);
      }
    Attrs at;
    at.i("transA", c.tA).i("transB", c.tB).f("alpha", c.alpha).f("beta", c.beta);
    Tensor Y(ElementType::Float, {c.M, c.N});
    EXPECT_OK(run("Gemm", at, {&A, &B, hasC ? &C : nullptr}, {&Y}));
    std::string what = "M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) +
                       " tA=" + std::to_string(c.tA) + " tB=" + std::to_string(c.tB);
    EXPECT_TRUE(near(Y.floats(), want, 1e-4)) << what;

    // The same with B packed at "compile time" (alpha and transB folded in).
    Tensor P(ElementType::Float, {int64_t(packedGemmBSize(c.K, c.N))});
    packGemmB(B.f(), B.shape[1], c.tB, c.K, c.N, c.alpha, P.f());
    P.shape = B.shape;
    Tensor Y2(ElementType::Float, {c.M, c.N});
    at.i("packed_b", 1);
    EXPECT_OK(run("Gemm", at, {&A, &P, hasC ? &C : nullptr}, {&Y2}));
    EXPECT_TRUE(near(Y2.floats(), want, 1e-4)) << what << " packed";
  }
  Tensor A = randomF({3, 4}, 1), B = randomF({4, 5}, 2), C = randomF({2, 5}, 3);
  Tensor Y(ElementType::Float, {3, 5});
  EXPECT_INVALID(run("Gemm", {}, {&A, &B, &C}, {&Y}), "broadcast");
  Tensor Yb(ElementType::Float, {3, 4});
  EXPECT_INVALID(run("Gemm", {}, {&A, &B}, {&Yb}), "output shape");
}

//===----------------------------------------------------------------------===//
// Conv
//===----------------------------------------------------------------------===//

struct ConvSpec {
  std::vector<int64_t> x, w; // NC..., M C/g k...
  int64_t group = 1;
  std::vector<int64_t> strides, pads, dilations; // explicit, for the reference
  bool bias = true;
};

/// Direct convolution in double with explicit pads.
std::vector<float> refConv(const Tensor &X, const Tensor &W, const Tensor *B, const ConvSpec &s,
                           std::vector<int64_t> &outShape) {
  size_t r = X.shape.size() - 2;
  int64_t N = X.shape[0], C = X.shape[1], M = W.shape[0], Cg = C / s.group, Mg = M / s.group;
  std::vector<int64_t> in(X.shape.begin() + 2, X.shape.end());
  std::vector<int64_t> k(W.shape.begin() + 2, W.shape.end()), out(r);
  for (size_t i = 0; i < r; ++i)
    out[i] =
        (in[i] + s.pads[i] + s.pads[i + r] - ((k[i] - 1) * s.dilations[i] + 1)) / s.strides[i] + 1;
  outShape = {N, M};
  outShape.insert(outShape.end(), out.begin(), out.end());
  std::vector<float> y(numel(outShape));
  int64_t P = numel(out), KS = numel(k), IS = numel(in);
  // For each output position and kernel tap: the input position, or -1.
  std::vector<int64_t> tap(P * KS);
  for (int64_t p = 0; p < P; ++p) {
    std::vector<int64_t> o = unravel(p, out);
    for (int64_t q = 0; q < KS; ++q) {
      std::vector<int64_t> kk = unravel(q, k), ii(r);
      bool ok = true;
      for (size_t i = 0; i < r; ++i) {
        ii[i] = o[i] * s.strides[i] - s.pads[i] + kk[i] * s.dilations[i];
        ok = ok && ii[i] >= 0 && ii[i] < in[i];
      }
      tap[p * KS + q] = ok ? ravel(ii, in) : -1;
    }
  }
  for (int64_t n = 0; n < N; ++n)
    for (int64_t m = 0; m < M; ++m) {
      int64_t g = m / Mg;
      for (int64_t p = 0; p < P; ++p) {
        double acc = B ? B->data<float>()[m] : 0.0;
        for (int64_t c = 0; c < Cg; ++c)
          for (int64_t q = 0; q < KS; ++q) {
            int64_t t = tap[p * KS + q];
            if (t >= 0)
              acc += double(X.data<float>()[(n * C + g * Cg + c) * IS + t]) *
                     W.data<float>()[(m * Cg + c) * KS + q];
          }
        y[(n * M + m) * P + p] = float(acc);
      }
    }
  return y;
}

void checkConv(ConvSpec s, uint64_t seed, Attrs at = Attrs(), bool explicitAttrs = true) {
  size_t r = s.x.size() - 2;
  if (s.strides.empty())
    s.strides.assign(r, 1);
  if (s.pads.empty())
    s.pads.assign(2 * r, 0);
  if (s.dilations.empty())
    s.dilations.assign(r, 1);
  Tensor X = randomF(s.x, seed), W = randomF(s.w, seed + 1), B = randomF({s.w[0]}, seed + 2);
  std::vector<int64_t> ys;
  std::vector<float> want = refConv(X, W, s.bias ? &B : nullptr, s, ys);
  at.i("group", s.group);
  if (explicitAttrs)
    at.is("strides", s.strides).is("pads", s.pads).is("dilations", s.dilations);
  Tensor Y(ElementType::Float, ys);
  std::string what = "x " + shapeToString(s.x) + " w " + shapeToString(s.w) + " group " +
                     std::to_string(s.group) + " strides " + shapeToString(s.strides) + " pads " +
                     shapeToString(s.pads) + " dil " + shapeToString(s.dilations);
  Status st = run("Conv", at, {&X, &W, s.bias ? &B : nullptr}, {&Y});
  ASSERT_TRUE(st.isOk()) << what << ": " << st.message();
  EXPECT_TRUE(near(Y.floats(), want, 1e-4)) << what;
}

TEST(LibraryKernels, Conv2D) {
  checkConv({{1, 1, 5, 5}, {1, 1, 3, 3}}, 1);
  checkConv({{2, 3, 7, 6}, {4, 3, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}}, 2);
  checkConv({{1, 3, 9, 9}, {5, 3, 3, 2}, 1, {2, 3}, {0, 1, 2, 0}}, 3);
  checkConv({{1, 2, 11, 10}, {3, 2, 3, 3}, 1, {1, 2}, {2, 2, 2, 2}, {2, 3}}, 4);
  checkConv({{2, 4, 6, 6}, {6, 2, 3, 3}, 2, {1, 1}, {1, 1, 1, 1}}, 5);         // groups
  checkConv({{2, 5, 8, 7}, {5, 1, 3, 3}, 5, {1, 1}, {1, 1, 1, 1}}, 6);         // depthwise
  checkConv({{1, 4, 9, 9}, {8, 1, 3, 3}, 4, {2, 2}, {1, 0, 1, 2}, {1, 2}}, 7); // multiplier 2
  checkConv({{1, 3, 10, 9}, {3, 1, 5, 5}, 3, {3, 1}, {2, 2, 2, 2}, {2, 1}, false}, 8);
  checkConv({{2, 16, 5, 4}, {8, 16, 1, 1}}, 9); // pointwise
  // Depthwise rows wide enough for the 8-wide paths and their tails, stride
  // 1 and 2 (MobileNet's), padded, odd widths.
  checkConv({{1, 3, 9, 37}, {3, 1, 3, 3}, 3, {1, 1}, {1, 1, 1, 1}}, 11);
  checkConv({{2, 4, 12, 41}, {4, 1, 3, 3}, 4, {2, 2}, {1, 1, 1, 1}}, 12);
  checkConv({{1, 2, 6, 64}, {2, 1, 3, 3}, 2, {2, 2}, {0, 0, 0, 0}}, 13);
  checkConv({{1, 2, 5, 30}, {2, 1, 5, 5}, 2, {2, 2}, {2, 2, 2, 2}}, 14);
  checkConv({{1, 6, 5, 4}, {6, 2, 1, 1}, 3}, 10);                                  // grouped 1x1
  checkConv({{1, 8, 7, 7}, {4, 8, 1, 1}, 1, {2, 2}}, 11);                          // 1x1 stride 2
  checkConv({{1, 8, 7, 7}, {4, 8, 1, 1}, 1, {1, 1}, {1, 1, 0, 0}}, 12);            // 1x1 padded
  checkConv({{1, 2, 4, 4}, {3, 2, 4, 4}, 1, {1, 1}, {0, 0, 0, 0}, {}, false}, 13); // full window
  // Many output tiles (K = 576) and M past the GEMM's 6-row tiles.
  checkConv({{1, 64, 40, 40}, {13, 64, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}}, 14);
  checkConv({{1, 3, 200, 100}, {7, 3, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}}, 15);
}

// The depthwise kernel's specialized (3x3 and 5x5 at stride 1 and 2) and
// general paths against the reference, on every vector variant: rows shorter than, equal to and
// longer than a chunk, the masked last chunk, symmetric and asymmetric pads,
// dilations, other strides, and a channel multiplier.
TEST(LibraryKernels, DepthwiseConvGeometries) {
  struct Kernel {
    int64_t kh, kw, dh, dw;
  };
  for (const char *variant : {"generic", "avx2", "avx512"}) {
    if (!setSgemmVariant(variant))
      continue; // this CPU cannot run it (ConvOnEveryVectorVariant says so)
    SCOPED_TRACE(variant);
    uint64_t seed = 500;
    for (Kernel k : {Kernel{3, 3, 1, 1}, Kernel{5, 5, 1, 1}, Kernel{3, 3, 2, 2}, Kernel{1, 7, 1, 1},
                     Kernel{2, 3, 1, 3}})
      for (int64_t stride : {1, 2, 3})
        for (int64_t width : {1, 7, 8, 9, 14, 23, 56})
          for (std::vector<int64_t> pads :
               {std::vector<int64_t>{0, 0, 0, 0}, {1, 1, 1, 1}, {0, 2, 1, 0}}) {
            int64_t height = 5 + stride;
            int64_t extH = (k.kh - 1) * k.dh + 1, extW = (k.kw - 1) * k.dw + 1;
            if (height + pads[0] + pads[2] < extH || width + pads[1] + pads[3] < extW)
              continue;
            int64_t multiplier = width == 9 ? 2 : 1;
            checkConv({{2, 3, height, width},
                       {3 * multiplier, 1, k.kh, k.kw},
                       3,
                       {stride, stride},
                       pads,
                       {k.dh, k.dw},
                       width != 14},
                      ++seed);
          }

    // A residual in the output's own memory (the kernel then masks what it
    // would otherwise overlap or spill) gives what a separate residual gives.
    for (int64_t width : {5, 14, 16}) {
      Tensor X = randomF({1, 4, 6, width}, ++seed), W = randomF({4, 1, 3, 3}, ++seed);
      Tensor Z = randomF({1, 4, 6, width}, ++seed);
      Attrs attrs = Attrs().is("pads", {1, 1, 1, 1}).i("group", 4).s("activation", "relu");
      attrs.a.floats["activation_params"] = {};
      Tensor want(ElementType::Float, Z.shape), inPlace = Z;
      ASSERT_OK(run("Conv", attrs, {&X, &W, nullptr, &Z}, {&want}));
      ASSERT_OK(run("Conv", attrs, {&X, &W, nullptr, &inPlace}, {&inPlace}));
      EXPECT_EQ(inPlace.floats(), want.floats()) << "width " << width;
    }
  }
  setSgemmVariant(nullptr);
}

TEST(LibraryKernels, ConvOnAThreadPool) {
  // Packing and GEMM shared out over 3 threads give the serial results.
  ThreadPool pool(3);
  kernelPool() = &pool;
  checkConv({{2, 3, 7, 6}, {4, 3, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}}, 40);
  checkConv({{2, 5, 8, 7}, {5, 1, 3, 3}, 5, {1, 1}, {1, 1, 1, 1}}, 41); // depthwise
  checkConv({{2, 16, 5, 4}, {8, 16, 1, 1}}, 42);                        // pointwise
  checkConv({{1, 64, 40, 40}, {13, 64, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}}, 43);
  checkConv({{1, 3, 200, 100}, {7, 3, 3, 3}, 1, {2, 1}, {1, 1, 1, 1}}, 44);
  Tensor A = randomF({2, 70, 190}, 45), B = randomF({190, 230}, 46);
  std::vector<int64_t> ys;
  std::vector<float> want = refMatMul(A, B, ys);
  Tensor Y(ElementType::Float, ys);
  EXPECT_OK(run("MatMul", Attrs(), {&A, &B}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), want, 1e-4));
  // A batch of at least as many images as threads: each thread takes whole
  // images (pointwise and im2col with 3 images, grouped with 4, on 2 threads).
  ThreadPool two(2);
  kernelPool() = &two;
  checkConv({{3, 16, 5, 4}, {8, 16, 1, 1}}, 47);
  checkConv({{3, 3, 7, 6}, {4, 3, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}}, 48);
  checkConv({{4, 4, 6, 6}, {6, 2, 3, 3}, 2, {1, 2}, {1, 0, 1, 2}, {2, 1}}, 49);
  kernelPool() = nullptr;
}

TEST(LibraryKernels, ConvAndMatMulOnPortableGemm) {
  // The kernels rely on the packed layout only, never on one microkernel.
  ASSERT_TRUE(setSgemmVariant("generic"));
  checkConv({{2, 3, 9, 8}, {5, 3, 3, 3}, 1, {2, 1}, {1, 0, 1, 2}}, 90);
  checkConv({{1, 8, 7, 7}, {4, 8, 1, 1}}, 91);
  // Depthwise follows the GEMM's variant: its portable loop here.
  checkConv({{2, 4, 12, 41}, {4, 1, 3, 3}, 4, {2, 2}, {1, 1, 1, 1}}, 94);
  checkConv({{1, 3, 9, 37}, {3, 1, 3, 3}, 3, {1, 1}, {1, 1, 1, 1}}, 95);
  Tensor A = randomF({2, 7, 19}, 92), B = randomF({19, 23}, 93);
  std::vector<int64_t> ys;
  std::vector<float> want = refMatMul(A, B, ys);
  Tensor Y(ElementType::Float, ys);
  EXPECT_OK(run("MatMul", {}, {&A, &B}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), want, 1e-4));
  setSgemmVariant(nullptr);
}

// The im2col panels and depthwise planes follow the GEMM's variant: each
// one this CPU runs gives the reference's values (stride 1 loads, stride 2
// and dilations gather, padding on every side, runs across output rows).
TEST(LibraryKernels, ConvOnEveryVectorVariant) {
  for (const char *variant : {"generic", "avx2", "avx512"}) {
    if (!setSgemmVariant(variant)) {
      std::cout << "[ SKIPPED  ] variant " << variant << ": this CPU or build cannot run it\n";
      continue;
    }
    SCOPED_TRACE(variant);
    uint64_t seed = 800;
    checkConv({{1, 5, 13, 11}, {7, 5, 3, 3}, 1, {1, 1}, {1, 1, 1, 1}}, ++seed);
    checkConv({{1, 3, 21, 19}, {8, 3, 7, 7}, 1, {2, 2}, {3, 3, 3, 3}}, ++seed);
    checkConv({{2, 4, 9, 23}, {5, 4, 3, 2}, 1, {1, 3}, {2, 0, 1, 2}, {2, 1}}, ++seed);
    checkConv({{1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, 1, {1, 2, 1}, {1, 1, 1, 1, 0, 1}}, ++seed);
    checkConv({{1, 6, 17, 17}, {6, 1, 3, 3}, 6, {2, 2}, {1, 1, 1, 1}}, ++seed);
    // Whole 16-wide runs at stride 2 (read as contiguous floats, not
    // gathered), the last of them ending on X's last float; and a padded
    // 3x3 whose panels mix whole and partial runs.
    checkConv({{1, 3, 5, 31}, {4, 3, 1, 1}, 1, {2, 2}}, ++seed);
    checkConv({{1, 2, 7, 70}, {5, 2, 3, 3}, 1, {2, 2}, {1, 1, 1, 1}}, ++seed);
    // A pointwise conv packs X by runs of four full panels, then the rest.
    checkConv({{1, 8, 10, 10}, {5, 8, 1, 1}}, ++seed);
  }
  setSgemmVariant(nullptr);
}

TEST(LibraryKernels, Conv1DAnd3D) {
  checkConv({{2, 3, 17}, {4, 3, 5}, 1, {2}, {2, 1}, {1}}, 20);
  checkConv({{1, 4, 12}, {4, 1, 3}, 4, {1}, {1, 1}, {3}}, 21);
  checkConv({{1, 4, 12}, {6, 2, 1}, 2}, 22);
  checkConv({{1, 2, 5, 6, 7}, {3, 2, 3, 3, 3}, 1, {1, 2, 1}, {1, 1, 1, 1, 0, 1}}, 23);
  checkConv({{2, 4, 4, 5, 6}, {4, 1, 2, 3, 2}, 4, {1, 1, 2}, {0, 1, 1, 1, 1, 0}, {2, 1, 1}}, 24);
}

TEST(LibraryKernels, ConvAutoPad) {
  // SAME: out = ceil(in / s); the odd pad goes to the end (UPPER) or the
  // beginning (LOWER). in 6, k 3, s 2: out 3, total pad (3-1)*2+3-6 = 1.
  checkConv({{1, 2, 6, 6}, {3, 2, 3, 3}, 1, {2, 2}, {0, 0, 1, 1}}, 30,
            Attrs().s("auto_pad", "SAME_UPPER").is("strides", {2, 2}), false);
  checkConv({{1, 2, 6, 6}, {3, 2, 3, 3}, 1, {2, 2}, {1, 1, 0, 0}}, 31,
            Attrs().s("auto_pad", "SAME_LOWER").is("strides", {2, 2}), false);
  // in 7, k 4, s 1: total 3 -> UPPER 1/2, LOWER 2/1.
  checkConv({{1, 1, 7, 5}, {2, 1, 4, 1}, 1, {1, 1}, {1, 0, 2, 0}}, 32,
            Attrs().s("auto_pad", "SAME_UPPER"), false);
  checkConv({{1, 1, 7, 5}, {2, 1, 4, 1}, 1, {1, 1}, {2, 0, 1, 0}}, 33,
            Attrs().s("auto_pad", "SAME_LOWER"), false);
  // Dilated SAME: effective kernel 5 on in 8, s 1 -> total 4.
  checkConv({{1, 2, 8, 8}, {2, 2, 3, 3}, 1, {1, 1}, {2, 2, 2, 2}, {2, 2}}, 34,
            Attrs().s("auto_pad", "SAME_UPPER").is("dilations", {2, 2}), false);
  // VALID ignores pads.
  checkConv({{1, 2, 8, 7}, {2, 2, 3, 3}, 1, {2, 2}, {0, 0, 0, 0}}, 35,
            Attrs().s("auto_pad", "VALID").is("strides", {2, 2}).is("pads", {5, 5, 5, 5}), false);
  checkConv({{1, 3, 9}, {3, 1, 3}, 3, {2}, {1, 1}}, 36,
            Attrs().s("auto_pad", "SAME_LOWER").is("strides", {2}), false);
}

// Weights packed at compile time (packed_w = 1, packGemmA of W as [M, K])
// give the unpacked run's values within ulps: a 3x3 pad 1 (convRunsDirect:
// the direct product sums in another order than im2col's GEMM) and a
// pointwise conv (read in place on AVX2, pointwiseConvReadsInPlace, where
// the GEMM's one-row tiles split their sums); M not a multiple of the panel
// height, several output tiles' worth of positions.
// The orientation rule on the shapes it was measured on (ResNet-50 at
// 14x14 and 7x7, MobileNetV2 at 14x14) and its bounds.
TEST(LibraryKernels, ConvTransposedGemmRule) {
  EXPECT_FALSE(convPrefersTransposedGemm(1024, 256, 196)); // 256->1024: panels
  EXPECT_TRUE(convPrefersTransposedGemm(256, 1024, 196));  // 1024->256: transposed
  EXPECT_TRUE(convPrefersTransposedGemm(2048, 512, 49));   // 7x7: 4 panels for 3.06
  EXPECT_FALSE(convPrefersTransposedGemm(384, 64, 196));   // K = 64: the move dominates
  EXPECT_FALSE(convPrefersTransposedGemm(64, 4096, 257));  // past 16x16 positions
  EXPECT_FALSE(convPrefersTransposedGemm(8, 4096, 49));    // fewer channels than a panel
  EXPECT_FALSE(convPrefersTransposedGemm(64, 0, 49));
}

TEST(LibraryKernels, ConvPrepackedWeightsMatchUnpacked) {
  struct Shape {
    std::vector<int64_t> x, w;
    std::vector<int64_t> pads;
  };
  for (const Shape &c : {Shape{{2, 5, 33, 31}, {13, 5, 3, 3}, {1, 1, 1, 1}},
                         Shape{{1, 8, 40, 40}, {7, 8, 1, 1}, {0, 0, 0, 0}}}) {
    Tensor X = randomF(c.x, 21), W = randomF(c.w, 22), B = randomF({c.w[0]}, 23);
    int64_t M = c.w[0], K = c.w[1] * c.w[2] * c.w[3];
    Tensor P(ElementType::Float, {int64_t(packedGemmASize(M, K))});
    packGemmA(W.f(), K, M, K, P.f());
    P.shape = c.w; // the view keeps W's logical shape
    int64_t oh = c.x[2] + c.pads[0] + c.pads[2] - c.w[2] + 1;
    int64_t ow = c.x[3] + c.pads[1] + c.pads[3] - c.w[3] + 1;
    Tensor want(ElementType::Float, {c.x[0], M, oh, ow}), got(ElementType::Float, want.shape);
    EXPECT_OK(run("Conv", Attrs().is("pads", c.pads), {&X, &W, &B}, {&want}));
    EXPECT_OK(run("Conv", Attrs().is("pads", c.pads).i("packed_w", 1), {&X, &P, &B}, {&got}));
    EXPECT_TRUE(near(got.floats(), want.floats(), 1e-5f)) << shapeToString(c.w);
  }
  // Only a group-1 conv takes packed weights.
  Tensor X = randomF({1, 4, 5, 5}, 24), W = randomF({4, 2, 3, 3}, 25);
  Tensor Y(ElementType::Float, {1, 4, 3, 3});
  EXPECT_INVALID(run("Conv", Attrs().i("group", 2).i("packed_w", 1), {&X, &W}, {&Y}),
                 "packed_w needs group 1");
}

// Runs Conv with `attrs` on every vector variant this CPU runs, serially and
// on a pool of 2, each time expecting `want` (a variant the CPU lacks is
// ConvOnEveryVectorVariant's to report).
void expectConvOnEveryVariant(const Attrs &attrs, std::vector<const Tensor *> inputs,
                              const std::vector<int64_t> &ys, const std::vector<float> &want,
                              const std::string &label, bool overResidual = false, Tol tol = 1e-4) {
  ThreadPool pool(2);
  // Over the residual: y is a copy of the residual (inputs[3]) that the
  // conv reads as its residual, as a plan makes it when nothing reads the
  // residual after the conv.
  const Tensor *residual = overResidual ? inputs[3] : nullptr;
  for (const char *variant : {"generic", "avx2", "avx512"}) {
    if (!setSgemmVariant(variant))
      continue;
    for (ThreadPool *on : {(ThreadPool *)nullptr, &pool}) {
      Tensor Y = residual ? *residual : Tensor(ElementType::Float, ys);
      if (residual)
        inputs[3] = &Y;
      ASSERT_OK(run("Conv", attrs, inputs, {&Y}, on));
      EXPECT_TRUE(near(Y.floats(), want, tol))
          << label << (overResidual ? " over the residual " : " ") << variant
          << (on ? " pool" : "");
    }
  }
  setSgemmVariant(nullptr);
}

/// A fused conv the tests below run: random X, W, bias and residual Z (in
/// that order from `seed`), and the reference's values of clip(conv + Z, 0,
/// 0.75), the epilogue `withClip` asks for.
struct FusedConvCase {
  Tensor X, W, B, Z;
  std::vector<int64_t> ys;
  std::vector<float> want;
};

FusedConvCase fusedConvCase(const ConvSpec &spec, uint64_t &seed) {
  FusedConvCase c;
  c.X = randomF(spec.x, ++seed);
  c.W = randomF(spec.w, ++seed);
  c.B = randomF({spec.w[0]}, ++seed);
  c.want = refConv(c.X, c.W, &c.B, spec, c.ys);
  c.Z = randomF(c.ys, ++seed);
  for (size_t i = 0; i < c.want.size(); ++i)
    c.want[i] = std::min(std::max(c.want[i] + c.Z.floats()[i], 0.f), 0.75f);
  return c;
}

/// `attrs` with fusedConvCase's epilogue: clip to [0, 0.75].
Attrs withClip(Attrs attrs) {
  attrs.s("activation", "clip");
  attrs.a.floats["activation_params"] = {0.f, 0.75f};
  return attrs;
}

// A conv over prepacked W wider than 1x1 runs directly over its zero-padded
// input (phase) planes (convRunsDirect, sgemmOffsetsB): the
// reference's values with the fused epilogue, serial and on a pool, on every
// vector variant: one column tile split by row panels (7x7), many tiles and
// M not a multiple of the panel height, batches of 2 and 3, a 5x5 with
// asymmetric pads, no padding, a 1x3 kernel; last tiles of 16, 32, 48 and
// 64 columns; strides 2 and 3 (a 7x7 stem, unequal strides, pads odd and
// even).
TEST(LibraryKernels, ConvDirectMatchesReference) {
  struct Shape {
    std::vector<int64_t> x, w, pads, strides = {1, 1};
  };
  uint64_t seed = 900;
  for (const Shape &c : {Shape{{1, 40, 7, 7}, {48, 40, 3, 3}, {1, 1, 1, 1}},
                         Shape{{2, 8, 33, 31}, {13, 8, 3, 3}, {1, 1, 1, 1}},
                         Shape{{1, 8, 9, 14}, {20, 8, 5, 5}, {2, 1, 0, 3}},
                         Shape{{1, 16, 14, 14}, {32, 16, 3, 3}, {0, 0, 0, 0}},
                         Shape{{3, 24, 12, 12}, {7, 24, 1, 3}, {0, 1, 0, 1}},
                         Shape{{1, 8, 8, 10}, {6, 8, 3, 3}, {1, 1, 1, 1}},
                         Shape{{1, 3, 32, 30}, {8, 3, 7, 7}, {3, 3, 3, 3}, {2, 2}},
                         Shape{{2, 24, 14, 14}, {24, 24, 3, 1}, {1, 0, 1, 0}, {2, 2}},
                         Shape{{1, 8, 15, 17}, {9, 8, 3, 3}, {1, 0, 1, 2}, {2, 3}},
                         Shape{{1, 8, 16, 16}, {10, 8, 3, 3}, {1, 1, 1, 1}, {2, 2}}}) {
    FusedConvCase t = fusedConvCase({c.x, c.w, 1, c.strides, c.pads, {1, 1}}, seed);
    ASSERT_TRUE(
        convRunsDirect(c.w[1], c.w[2], c.w[3], c.strides[0], c.strides[1], 1, 1, t.ys[2], t.ys[3]))
        << shapeToString(c.w) << " " << shapeToString(t.ys);
    int64_t M = c.w[0], K = c.w[1] * c.w[2] * c.w[3];
    Tensor P(ElementType::Float, {int64_t(packedGemmASize(M, K))});
    packGemmA(t.W.f(), K, M, K, P.f());
    P.shape = c.w; // the view keeps W's logical shape
    Attrs attrs = withClip(Attrs().is("pads", c.pads).is("strides", c.strides).i("packed_w", 1));
    expectConvOnEveryVariant(attrs, {&t.X, &P, &t.B, &t.Z}, t.ys, t.want,
                             shapeToString(c.w) + " strides " + shapeToString(c.strides));
  }
  // Dilated and 1x1 convs, outputs where a quarter of the product would be
  // padding, and fewer than 64 products per output do not run directly.
  EXPECT_TRUE(convRunsDirect(64, 3, 3, 2, 2, 1, 1, 28, 28));
  EXPECT_FALSE(convRunsDirect(64, 3, 3, 1, 1, 2, 2, 28, 28));
  EXPECT_FALSE(convRunsDirect(64, 1, 1, 1, 1, 1, 1, 28, 28));
  EXPECT_FALSE(convRunsDirect(64, 1, 1, 2, 2, 1, 1, 7, 7));
  EXPECT_FALSE(convRunsDirect(64, 3, 3, 1, 1, 1, 1, 5, 5));
  EXPECT_TRUE(convRunsDirect(64, 3, 3, 1, 1, 1, 1, 7, 7));
  EXPECT_FALSE(convRunsDirect(64, 3, 3, 1, 1, 1, 1, 1, 1));
  EXPECT_FALSE(convRunsDirect(3, 3, 3, 2, 2, 1, 1, 112, 112));
  EXPECT_TRUE(convRunsDirect(3, 7, 7, 2, 2, 1, 1, 112, 112));
}

// A pointwise conv over prepacked W with few output channels reads X where
// it lies (pointwiseConvReadsInPlace, sgemmRowsB): the reference's values
// with the fused epilogue (bias, residual, clip), serial and on a pool, on
// every vector variant, and over its own residual: M of 1 to 96 (every tile
// height), positions not a multiple of a panel (a masked last panel) and
// fewer than one, a batch of 3. sgemmRowsB alone with K past one K block
// (the blocks accumulated in C), against the packed GEMM.
TEST(LibraryKernels, PointwiseConvInPlaceMatchesReference) {
  struct Shape {
    std::vector<int64_t> x, w;
  };
  uint64_t seed = 1200;
  for (const Shape &c : {Shape{{1, 32, 12, 12}, {16, 32, 1, 1}}, Shape{{1, 3, 5, 3}, {1, 3, 1, 1}},
                         Shape{{3, 24, 7, 9}, {11, 24, 1, 1}}, Shape{{1, 8, 2, 3}, {96, 8, 1, 1}},
                         Shape{{1, 256, 6, 7}, {20, 256, 1, 1}}}) {
    ASSERT_TRUE(pointwiseConvReadsInPlace(c.w[0], c.w[1])) << shapeToString(c.w);
    FusedConvCase t = fusedConvCase({c.x, c.w, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}}, seed);
    int64_t M = c.w[0], K = c.w[1];
    Tensor P(ElementType::Float, {int64_t(packedGemmASize(M, K))});
    packGemmA(t.W.f(), K, M, K, P.f());
    P.shape = c.w; // the view keeps W's logical shape
    Attrs attrs = withClip(Attrs().i("packed_w", 1));
    std::string label = shapeToString(c.x) + " " + shapeToString(c.w);
    expectConvOnEveryVariant(attrs, {&t.X, &P, &t.B, &t.Z}, t.ys, t.want, label);
    expectConvOnEveryVariant(attrs, {&t.X, &P, &t.B, &t.Z}, t.ys, t.want, label,
                             /*overResidual=*/true);
  }
  EXPECT_TRUE(pointwiseConvReadsInPlace(96, 256));
  EXPECT_FALSE(pointwiseConvReadsInPlace(97, 16));
  EXPECT_FALSE(pointwiseConvReadsInPlace(16, 257));

  // K = 900: three K blocks, each adding onto C; an epilogue (row bias,
  // residual) on the last; 37 columns of a B with row stride 40. The kernels
  // are AVX2's: an AVX-512 CPU runs them too.
  bool forced = !sgemmRowsBAvailable() && setSgemmVariant("avx2");
  if (!sgemmRowsBAvailable())
    GTEST_SKIP() << "sgemmRowsB: this CPU has no AVX2 GEMM to run its kernels";
  const int64_t M = 13, N = 37, K = 900, ldb = 40;
  Tensor A = randomF({M, K}, ++seed), Bm = randomF({K, ldb}, ++seed);
  Tensor bias = randomF({M}, ++seed), residual = randomF({M, N}, ++seed);
  std::vector<float> packedA(packedGemmASize(M, K)), packedB(packedGemmBSize(K, N));
  packGemmA(A.f(), K, M, K, packedA.data());
  packGemmB(Bm.f(), ldb, false, K, N, 1.f, packedB.data());
  GemmEpilogue e;
  e.rowBias = bias.f();
  e.residual = residual.f();
  e.ldr = N;
  std::vector<float> want(size_t(M * N)), got(size_t(M * N));
  sgemmPrepackedParallel(nullptr, M, N, K, packedA.data(), packedB.data(), want.data(), N, false,
                         &e);
  sgemmRowsB(M, N, K, packedA.data(), Bm.f(), ldb, got.data(), N, &e);
  if (forced)
    setSgemmVariant(nullptr);
  EXPECT_TRUE(near(got, want, 1e-4f));
}

// A conv of few products per output over W as it is (convRunsNarrow,
// ConvNarrow.cpp): the reference's values with the fused epilogue (bias,
// residual, clip), serial and on a pool, on every vector variant, and over
// its own residual: MobileNetV2's and ResNet's stems shrunk (strides 2 and
// odd pads, the AVX2 phase split and its scalar rest), output channels not a
// multiple of 4, rows of 24 and 48 outputs (whole tiles) and of 9, 13 and 29
// (part vectors), strides 1, 3 and 4 and unequal ones, asymmetric pads, a
// 1x3 kernel, a batch of 2, an image tall enough for several bands, one
// input channel; then with no bias, residual or activation. The generic
// variant runs im2col with W unpacked: over the residual it caught the
// portable GEMM tile storing C before its epilogue read the residual there.
TEST(LibraryKernels, ConvNarrowMatchesReference) {
  struct Shape {
    std::vector<int64_t> x, w, pads, strides;
  };
  uint64_t seed = 930;
  for (const Shape &c : {Shape{{1, 3, 37, 35}, {32, 3, 3, 3}, {1, 1, 1, 1}, {2, 2}},
                         Shape{{1, 3, 40, 44}, {19, 3, 7, 7}, {3, 3, 3, 3}, {2, 2}},
                         Shape{{2, 8, 12, 24}, {6, 8, 3, 3}, {1, 1, 1, 1}, {1, 1}},
                         Shape{{1, 4, 20, 48}, {5, 4, 3, 3}, {1, 1, 1, 1}, {1, 1}},
                         Shape{{1, 2, 30, 40}, {13, 2, 5, 5}, {2, 1, 0, 2}, {3, 3}},
                         Shape{{1, 1, 70, 70}, {9, 1, 3, 3}, {1, 1, 1, 1}, {4, 4}},
                         Shape{{1, 3, 300, 29}, {4, 3, 3, 3}, {1, 1, 1, 1}, {1, 1}},
                         Shape{{1, 6, 17, 40}, {7, 6, 1, 3}, {0, 1, 0, 1}, {2, 3}}}) {
    ConvSpec spec{c.x, c.w, 1, c.strides, c.pads, {1, 1}};
    Tensor X = randomF(c.x, ++seed), W = randomF(c.w, ++seed), B = randomF({c.w[0]}, ++seed);
    std::vector<int64_t> ys;
    std::vector<float> plain = refConv(X, W, &B, spec, ys);
    ASSERT_TRUE(convRunsNarrow(c.w[1], c.w[2], c.w[3], c.strides[0], c.strides[1], 1, 1, ys[3]))
        << shapeToString(c.w) << " " << shapeToString(ys);
    Tensor Z = randomF(ys, ++seed);
    std::vector<float> want = plain;
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = std::min(std::max(want[i] + Z.floats()[i], -0.5f), 2.f);
    Attrs attrs = Attrs().is("pads", c.pads).is("strides", c.strides);
    std::string label = shapeToString(c.x) + " " + shapeToString(c.w);
    Attrs fused = attrs;
    fused.s("activation", "clip");
    fused.a.floats["activation_params"] = {-0.5f, 2.f};
    for (bool overResidual : {false, true})
      expectConvOnEveryVariant(fused, {&X, &W, &B, &Z}, ys, want, label, overResidual);
    std::vector<float> unbiased = refConv(X, W, nullptr, spec, ys);
    expectConvOnEveryVariant(attrs, {&X, &W}, ys, unbiased, label + " alone");
  }
  // The rule: the stems and up to 96 products per output; not 1x1, dilated
  // or rows of fewer than 8 outputs, nor 16 channels of 3x3.
  EXPECT_TRUE(convRunsNarrow(3, 3, 3, 2, 2, 1, 1, 112));
  EXPECT_TRUE(convRunsNarrow(3, 7, 7, 2, 2, 1, 1, 112));
  EXPECT_TRUE(convRunsNarrow(8, 3, 3, 1, 1, 1, 1, 112));
  EXPECT_FALSE(convRunsNarrow(16, 3, 3, 1, 1, 1, 1, 56));
  EXPECT_FALSE(convRunsNarrow(3, 1, 1, 1, 1, 1, 1, 56));
  EXPECT_FALSE(convRunsNarrow(3, 3, 3, 1, 1, 2, 2, 56));
  EXPECT_FALSE(convRunsNarrow(3, 3, 3, 1, 1, 1, 1, 7));
}

/// A Winograd test's 3x3 stride-1 conv of X `x` by W `w` with `pads`:
/// random X, W, bias and residual Z (from `seed`) and the reference's
/// values of clip(conv + Z, -0.5, 2), and the tolerance of each tile:
/// F(4x4)'s transforms (coefficients up to 8 and 1/24) round more, so its
/// error is held to 1e-5 of the largest output (measured 6e-6 at 256
/// channels; the benchmark's target is 1e-4), F(2x2)'s to 1e-4 as the
/// direct conv's.
struct WinogradCase {
  Tensor X, W, B, Z;
  std::vector<int64_t> ys;
  std::vector<float> want;
  double largest = 0;
  Tol tol(int64_t tile) const {
    return tile == 4 ? Tol(std::max(1e-4, 1e-5 * largest), 0) : Tol(1e-4);
  }
};

WinogradCase winogradCase(const std::vector<int64_t> &x, const std::vector<int64_t> &w,
                          const std::vector<int64_t> &pads, uint64_t &seed) {
  WinogradCase c;
  c.X = randomF(x, ++seed);
  c.W = randomF(w, ++seed);
  c.B = randomF({w[0]}, ++seed);
  c.want = refConv(c.X, c.W, &c.B, ConvSpec{x, w, 1, {1, 1}, pads, {1, 1}}, c.ys);
  c.Z = randomF(c.ys, ++seed);
  for (size_t i = 0; i < c.want.size(); ++i) {
    float sum = c.want[i] + c.Z.floats()[i];
    c.largest = std::max(c.largest, std::fabs(double(sum)));
    c.want[i] = std::min(std::max(sum, -0.5f), 2.f);
  }
  return c;
}

/// `attrs` with winogradCase's epilogue.
Attrs withWinogradClip(Attrs attrs) {
  attrs.s("activation", "clip");
  attrs.a.floats["activation_params"] = {-0.5f, 2.f};
  return attrs;
}

// A 3x3 stride-1 conv over W packed for Winograd F(2x2, 3x3) and F(4x4,
// 3x3) (packed_w = 4 and 5, packConvWeightsWinograd): the reference's
// values with the fused epilogue (bias, residual, clip), serial and on a
// pool, on every vector variant, and over its own residual: tile rows of 4
// and 7 tiles (every chunk of 8 spans two rows), rows of 3 (chunks
// spanning three rows, gathered), odd output sizes (part
// tiles at the right and bottom edge), asymmetric and no padding, a row of
// 20 tiles (whole chunks, and rows of input split 8 T columns at a time),
// several bands of tile rows, bands of whole images (a batch of 2 in one
// band; 3 in bands of 2 and 1 at 2x2 tiles), M not a multiple of the panel
// height, a 1x1 output.
TEST(LibraryKernels, ConvWinogradMatchesReference) {
  struct Shape {
    std::vector<int64_t> x, w, pads;
  };
  uint64_t seed = 950;
  for (const Shape &c : {Shape{{1, 32, 7, 7}, {40, 32, 3, 3}, {1, 1, 1, 1}},
                         Shape{{2, 33, 14, 14}, {35, 33, 3, 3}, {1, 1, 1, 1}},
                         Shape{{1, 16, 17, 23}, {12, 16, 3, 3}, {1, 0, 2, 1}},
                         Shape{{1, 16, 20, 36}, {7, 16, 3, 3}, {0, 0, 0, 0}},
                         Shape{{1, 8, 9, 40}, {9, 8, 3, 3}, {1, 1, 1, 1}},
                         Shape{{1, 256, 20, 20}, {8, 256, 3, 3}, {1, 1, 1, 1}},
                         Shape{{3, 256, 10, 10}, {8, 256, 3, 3}, {1, 1, 1, 1}},
                         Shape{{1, 8, 14, 8}, {6, 8, 3, 3}, {0, 0, 0, 0}},
                         Shape{{1, 4, 3, 3}, {5, 4, 3, 3}, {0, 0, 0, 0}}}) {
    WinogradCase t = winogradCase(c.x, c.w, c.pads, seed);
    int64_t M = c.w[0], C = c.w[1];
    for (int64_t tile : {2, 4}) {
      Tensor P(ElementType::Float, {int64_t(packedWinogradSize(M, C, tile))});
      packConvWeightsWinograd(t.W.f(), M, C, tile, P.f());
      P.shape = c.w; // the view keeps W's logical shape
      Attrs attrs = withWinogradClip(Attrs().is("pads", c.pads).i("packed_w", tile == 4 ? 5 : 4));
      for (bool overResidual : {false, true})
        expectConvOnEveryVariant(attrs, {&t.X, &P, &t.B, &t.Z}, t.ys, t.want,
                                 shapeToString(c.x) + " " + shapeToString(c.w) + " tile " +
                                     std::to_string(tile),
                                 overResidual, t.tol(tile));
    }
  }
  // The kernel takes only 3x3 kernels at stride 1 and dilation 1 so packed.
  Tensor X = randomF({1, 4, 9, 9}, 960), W = randomF({4, 4, 3, 3}, 961);
  Tensor P(ElementType::Float, {int64_t(packedWinogradSize(4, 4, 4))});
  packConvWeightsWinograd(W.f(), 4, 4, 4, P.f());
  P.shape = W.shape;
  Tensor Y(ElementType::Float, {1, 4, 4, 4});
  EXPECT_INVALID(run("Conv", Attrs().is("strides", {2, 2}).i("packed_w", 5), {&X, &P}, {&Y}),
                 "packed_w 5 (Winograd) needs a 2-D 3x3 kernel at stride 1");
  // The rule: ResNet's 3x3 stride-1 layers run so; strided, dilated, 5x5
  // and few-channel convs do not.
  EXPECT_TRUE(convRunsWinograd(64, 64, 3, 3, 1, 1, 1, 1, 56, 56));
  EXPECT_TRUE(convRunsWinograd(512, 512, 3, 3, 1, 1, 1, 1, 7, 7));
  EXPECT_FALSE(convRunsWinograd(128, 128, 3, 3, 2, 2, 1, 1, 28, 28));
  EXPECT_FALSE(convRunsWinograd(64, 64, 3, 3, 1, 1, 2, 2, 56, 56));
  EXPECT_FALSE(convRunsWinograd(64, 64, 5, 5, 1, 1, 1, 1, 56, 56));
  EXPECT_FALSE(convRunsWinograd(3, 64, 3, 3, 1, 1, 1, 1, 224, 224));
  EXPECT_FALSE(convRunsWinograd(64, 8, 3, 3, 1, 1, 1, 1, 56, 56));
  // 2x2 tiles where 4x4 ones would leave most of a panel empty.
  EXPECT_EQ(winogradOutputTile(7, 7), 2);
  EXPECT_EQ(winogradOutputTile(14, 14), 4);
  EXPECT_EQ(winogradOutputTile(56, 56), 4);
  EXPECT_EQ(winogradOutputTile(2, 2), 2);
}

// Depthwise convs with narrow output rows, or strided ones
// (depthwiseRunsBlocked), run on blocks of 8 channels (transposed in, summed
// per position, transposed out): the reference's values with the fused
// epilogue (residual, clip), serial and on a pool, on every vector variant:
// 19 channels (two whole blocks and one of 3), batches, 3x3 and 5x5 at
// strides 1 and 2, unequal strides, a dilated 2x3, asymmetric pads, widths 1
// to 16, a stride-2 plane with rows of 3 vectors and a tail, a plane tall
// enough for several bands, and a residual in the output's own memory.
TEST(LibraryKernels, DepthwiseConvChannelBlocks) {
  struct Shape {
    std::vector<int64_t> x, w, strides, pads, dilations = {1, 1};
  };
  uint64_t seed = 1000;
  for (const Shape &c : {Shape{{1, 19, 7, 7}, {19, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         Shape{{2, 19, 14, 14}, {19, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}},
                         Shape{{1, 16, 9, 5}, {16, 1, 5, 5}, {1, 1}, {2, 2, 2, 2}},
                         Shape{{1, 11, 12, 12}, {11, 1, 5, 5}, {2, 2}, {2, 1, 1, 2}},
                         Shape{{1, 9, 8, 8}, {9, 1, 2, 3}, {1, 1}, {0, 1, 1, 0}, {2, 2}},
                         Shape{{1, 8, 6, 1}, {8, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         Shape{{1, 10, 400, 4}, {10, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         Shape{{3, 5, 7, 3}, {5, 1, 3, 1}, {1, 2}, {1, 0, 1, 0}},
                         Shape{{1, 24, 9, 16}, {24, 1, 3, 3}, {2, 3}, {1, 1, 1, 1}},
                         Shape{{1, 13, 11, 49}, {13, 1, 3, 3}, {2, 2}, {1, 0, 1, 1}}}) {
    int64_t C = c.x[1];
    FusedConvCase t = fusedConvCase({c.x, c.w, C, c.strides, c.pads, c.dilations}, seed);
    Attrs attrs = withClip(Attrs().is("pads", c.pads).is("strides", c.strides).i("group", C));
    attrs.is("dilations", c.dilations);
    std::string label = shapeToString(c.x) + " " + shapeToString(c.w);
    expectConvOnEveryVariant(attrs, {&t.X, &t.W, &t.B, &t.Z}, t.ys, t.want, label);
    // The residual in y's own memory.
    for (const char *variant : {"avx2", "avx512"}) {
      if (!setSgemmVariant(variant))
        continue;
      Tensor inPlace = t.Z;
      ASSERT_OK(run("Conv", attrs, {&t.X, &t.W, &t.B, &inPlace}, {&inPlace}));
      EXPECT_TRUE(near(inPlace.floats(), t.want, 1e-4)) << label << " in place " << variant;
    }
    setSgemmVariant(nullptr);
  }
}

/// NCHW values as NHWC (`toChannelsLast`) or back.
std::vector<float> permuteChannels(const std::vector<float> &v, const std::vector<int64_t> &nchw,
                                   bool toChannelsLast) {
  int64_t N = nchw[0], C = nchw[1], P = nchw[2] * nchw[3];
  std::vector<float> out(v.size());
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t p = 0; p < P; ++p) {
        int64_t first = (n * C + c) * P + p, last = (n * P + p) * C + c;
        out[size_t(toChannelsLast ? last : first)] = v[size_t(toChannelsLast ? first : last)];
      }
  return out;
}

// Conv with channels_last = 1 (X [N,H,W,C], Y and the residual [N,OH,OW,M])
// gives the reference's values, transposed: group-1 convs as one GEMM (a
// pointwise one reading X as A, strided and padded ones through im2col rows,
// the 3-channel stem, a batch, more rows than one im2col chunk, and on
// AVX-512 rows read in place from the padded input) with W packed per call
// or by the compiler (packed_w = 3), and depthwise convs
// (3x3, 5x5, a 2x3 window with dilation, strides 2 and 3, channels not a
// multiple of any vector, rows narrower than the window), with bias,
// residual and Clip, on every vector variant, serially and on a pool; and
// each with y written over its residual (the plan's in-place sum), through
// one K block and several (a packed pointwise conv of K = 400).
TEST(LibraryKernels, ConvChannelsLastMatchesReference) {
  struct Shape {
    std::vector<int64_t> x, w, strides, pads, dilations = {1, 1};
  };
  uint64_t seed = 1100;
  for (const Shape &c : {Shape{{1, 24, 9, 9}, {40, 24, 1, 1}, {1, 1}, {0, 0, 0, 0}},
                         Shape{{2, 19, 7, 6}, {21, 19, 1, 1}, {2, 2}, {0, 0, 0, 0}},
                         Shape{{1, 3, 23, 21}, {32, 3, 3, 3}, {2, 2}, {1, 1, 1, 1}},
                         Shape{{2, 16, 10, 10}, {17, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         Shape{{1, 5, 11, 9}, {8, 5, 3, 2}, {1, 2}, {0, 1, 2, 1}, {2, 1}},
                         Shape{{1, 64, 40, 40}, {16, 64, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         // Rows read in place (AVX-512): a pointwise conv
                         // (70 rows, 40 columns), a strided 1x1, and K
                         // blocks that split a tap's channels.
                         Shape{{2, 72, 5, 7}, {40, 72, 1, 1}, {1, 1}, {0, 0, 0, 0}},
                         Shape{{1, 64, 9, 9}, {50, 64, 1, 1}, {2, 2}, {0, 0, 0, 0}},
                         Shape{{1, 80, 11, 10}, {24, 80, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         Shape{{1, 400, 6, 6}, {200, 400, 1, 1}, {1, 1}, {0, 0, 0, 0}},
                         // Tiles of every height: 35 rows (5 left over),
                         // and 7x7 (1 left over, 25 + 24 rows on a pool).
                         Shape{{1, 64, 7, 5}, {70, 64, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         Shape{{1, 96, 7, 7}, {64, 96, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         Shape{{1, 40, 13, 13}, {40, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         Shape{{2, 19, 14, 15}, {19, 1, 3, 3}, {2, 2}, {1, 1, 1, 1}},
                         Shape{{1, 33, 12, 12}, {33, 1, 5, 5}, {2, 2}, {2, 2, 2, 2}},
                         Shape{{1, 9, 8, 8}, {9, 1, 2, 3}, {1, 3}, {0, 1, 1, 0}, {2, 2}},
                         Shape{{1, 16, 6, 2}, {16, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         // Depthwise rows split on a pool: one run per
                         // thread, then (over 2^20 outputs) runs handed out.
                         Shape{{1, 64, 30, 30}, {64, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         Shape{{2, 32, 130, 130}, {32, 1, 3, 3}, {1, 1}, {1, 1, 1, 1}}}) {
    int64_t C = c.x[1], M = c.w[0];
    bool depthwise = c.w[1] == 1 && C > 1;
    ConvSpec spec{c.x, c.w, depthwise ? C : 1, c.strides, c.pads, c.dilations};
    Tensor X = randomF(c.x, ++seed), W = randomF(c.w, ++seed), B = randomF({M}, ++seed);
    std::vector<int64_t> ys;
    std::vector<float> want = refConv(X, W, &B, spec, ys);
    Tensor Z = randomF(ys, ++seed);
    std::vector<float> z = Z.floats();
    for (size_t i = 0; i < want.size(); ++i)
      want[i] = std::min(std::max(want[i] + z[i], 0.f), 0.75f);
    std::vector<int64_t> xLast = {c.x[0], c.x[2], c.x[3], C}, yLast = {ys[0], ys[2], ys[3], M};
    Tensor XL = F(xLast, permuteChannels(X.floats(), c.x, true));
    Tensor ZL = F(yLast, permuteChannels(Z.floats(), ys, true));
    std::vector<float> wantLast = permuteChannels(want, ys, true);
    Attrs attrs = Attrs().is("pads", c.pads).is("strides", c.strides).is("dilations", c.dilations);
    attrs.i("group", spec.group).i("channels_last", 1).s("activation", "clip");
    attrs.a.floats["activation_params"] = {0.f, 0.75f};
    std::string label = shapeToString(c.x) + " " + shapeToString(c.w);
    expectConvOnEveryVariant(attrs, {&XL, &W, &B, &ZL}, yLast, wantLast, label);
    expectConvOnEveryVariant(attrs, {&XL, &W, &B, &ZL}, yLast, wantLast, label, true);
    if (depthwise)
      continue;
    Tensor P(ElementType::Float, {int64_t(packedGemmBSize(C * c.w[2] * c.w[3], M))});
    packConvWeightsChannelsLast(W.f(), M, C, c.w[2] * c.w[3], P.f());
    P.shape = c.w; // the view keeps W's logical shape
    Attrs packed = attrs;
    packed.i("packed_w", 3);
    expectConvOnEveryVariant(packed, {&XL, &P, &B, &ZL}, yLast, wantLast, label + " packed");
    expectConvOnEveryVariant(packed, {&XL, &P, &B, &ZL}, yLast, wantLast, label + " packed", true);
  }
  // A residual that overlaps y without being y would be read after parts of
  // it were written.
  {
    Tensor X = randomF({1, 4, 4, 8}, 1), W = randomF({8, 8, 1, 1}, 2);
    Tensor Both(ElementType::Float, {1, 4, 4, 9});
    std::vector<int64_t> shape = {1, 4, 4, 8};
    TensorView x{X.f(), ElementType::Float, X.shape}, w{W.f(), ElementType::Float, W.shape};
    TensorView z{Both.f(), ElementType::Float, shape}, y{Both.f() + 1, ElementType::Float, shape};
    TensorView inputs[4] = {x, w, {}, z};
    inputs[2].data = nullptr;
    StepAttributes a = Attrs().i("channels_last", 1).a;
    Scratch scratch;
    KernelCall call{a, inputs, 4, &y, 1, scratch, nullptr};
    Status status = findLibraryKernel("Conv")(call);
    ASSERT_FALSE(status.isOk());
    EXPECT_NE(status.message().find("the residual overlaps Y without being Y"), std::string::npos)
        << status.message();
  }
  Tensor X = randomF({1, 5, 5, 4}, 1), W = randomF({4, 4, 1, 1}, 2);
  Tensor Y(ElementType::Float, {1, 5, 5, 4});
  EXPECT_INVALID(run("Conv", Attrs().i("channels_last", 1).i("packed_w", 2), {&X, &W}, {&Y}),
                 "channels_last reads packed_w 0, 3, 6 or 7 here, got 2");
  Tensor X3 = randomF({1, 4, 5, 5, 4}, 1);
  EXPECT_INVALID(run("Conv", Attrs().i("channels_last", 1), {&X3, &W}, {&Y}),
                 "channels_last needs X [N,H,W,C]");
  Tensor G = randomF({4, 2, 1, 1}, 3);
  EXPECT_INVALID(run("Conv", Attrs().i("channels_last", 1).i("group", 2), {&X, &G}, {&Y}),
                 "channels_last takes group 1 or a depthwise conv");
  Tensor Wrong(ElementType::Float, {1, 5, 4, 4});
  EXPECT_INVALID(run("Conv", Attrs().i("channels_last", 1), {&X, &W}, {&Wrong}), "Conv");
}

// A channels-last 3x3 stride-1 conv over W packed for Winograd with each
// U_xi^T as B panels (packed_w = 6 and 7, packConvWeightsWinogradChannelsLast):
// the reference's values, transposed, with the fused epilogue (bias,
// residual, clip), serially and on a pool, on every vector variant, and over
// its own residual: channels not a multiple of any vector (the scalar
// tails), part tiles at the right and bottom edge, asymmetric and no
// padding, several bands of one image (64 channels at 40x40), bands that
// cross images (a batch of 3 at 256 channels), a batch in one band, a 1x1
// output.
TEST(LibraryKernels, ConvWinogradChannelsLastMatchesReference) {
  struct Shape {
    std::vector<int64_t> x, w, pads;
  };
  uint64_t seed = 1180;
  for (const Shape &c : {Shape{{1, 32, 7, 7}, {40, 32, 3, 3}, {1, 1, 1, 1}},
                         Shape{{2, 33, 14, 14}, {35, 33, 3, 3}, {1, 1, 1, 1}},
                         Shape{{1, 16, 17, 23}, {12, 16, 3, 3}, {1, 0, 2, 1}},
                         Shape{{1, 16, 20, 36}, {7, 16, 3, 3}, {0, 0, 0, 0}},
                         Shape{{1, 64, 40, 40}, {64, 64, 3, 3}, {1, 1, 1, 1}},
                         Shape{{3, 256, 10, 10}, {8, 256, 3, 3}, {1, 1, 1, 1}},
                         Shape{{1, 8, 14, 8}, {6, 8, 3, 3}, {0, 0, 0, 0}},
                         Shape{{1, 4, 3, 3}, {5, 4, 3, 3}, {0, 0, 0, 0}}}) {
    WinogradCase t = winogradCase(c.x, c.w, c.pads, seed);
    int64_t M = c.w[0], C = c.w[1];
    std::vector<int64_t> xLast = {c.x[0], c.x[2], c.x[3], C};
    std::vector<int64_t> yLast = {t.ys[0], t.ys[2], t.ys[3], M};
    Tensor XL = F(xLast, permuteChannels(t.X.floats(), c.x, true));
    Tensor ZL = F(yLast, permuteChannels(t.Z.floats(), t.ys, true));
    std::vector<float> wantLast = permuteChannels(t.want, t.ys, true);
    for (int64_t tile : {2, 4}) {
      Tensor P(ElementType::Float, {int64_t(packedWinogradChannelsLastSize(M, C, tile))});
      packConvWeightsWinogradChannelsLast(t.W.f(), M, C, tile, P.f());
      P.shape = c.w; // the view keeps W's logical shape
      Attrs attrs = withWinogradClip(
          Attrs().is("pads", c.pads).i("channels_last", 1).i("packed_w", tile == 4 ? 7 : 6));
      for (bool overResidual : {false, true})
        expectConvOnEveryVariant(attrs, {&XL, &P, &t.B, &ZL}, yLast, wantLast,
                                 shapeToString(c.x) + " " + shapeToString(c.w) + " tile " +
                                     std::to_string(tile),
                                 overResidual, t.tol(tile));
    }
  }
  // Only 3x3 kernels at stride 1 so packed.
  Tensor X = randomF({1, 9, 9, 4}, 1190), W = randomF({4, 4, 3, 3}, 1191);
  Tensor P(ElementType::Float, {int64_t(packedWinogradChannelsLastSize(4, 4, 4))});
  packConvWeightsWinogradChannelsLast(W.f(), 4, 4, 4, P.f());
  P.shape = W.shape;
  Tensor Y(ElementType::Float, {1, 4, 4, 4});
  EXPECT_INVALID(run("Conv", Attrs().i("channels_last", 1).is("strides", {2, 2}).i("packed_w", 7),
                     {&X, &P}, {&Y}),
                 "packed_w 7 (Winograd) needs a 3x3 kernel at stride 1");
  // The rule: as convRunsWinograd, onto at least 16 tiles of 2x2.
  EXPECT_TRUE(convRunsWinogradChannelsLast(64, 64, 3, 3, 1, 1, 1, 1, 56, 56));
  EXPECT_TRUE(convRunsWinogradChannelsLast(256, 256, 3, 3, 1, 1, 1, 1, 14, 14));
  EXPECT_TRUE(convRunsWinogradChannelsLast(512, 512, 3, 3, 1, 1, 1, 1, 7, 7));
  EXPECT_FALSE(convRunsWinogradChannelsLast(512, 512, 3, 3, 1, 1, 1, 1, 6, 6));
  EXPECT_FALSE(convRunsWinogradChannelsLast(512, 512, 3, 3, 1, 1, 1, 1, 4, 14));
  EXPECT_FALSE(convRunsWinogradChannelsLast(128, 128, 3, 3, 2, 2, 1, 1, 28, 28));
  EXPECT_FALSE(convRunsWinogradChannelsLast(16, 64, 3, 3, 1, 1, 1, 1, 56, 56));
  // 4x4 tiles from 48 of them an image (28x28), 2x2 below.
  EXPECT_EQ(winogradOutputTileChannelsLast(56, 56), 4);
  EXPECT_EQ(winogradOutputTileChannelsLast(28, 28), 4);
  EXPECT_EQ(winogradOutputTileChannelsLast(24, 32), 4);
  EXPECT_EQ(winogradOutputTileChannelsLast(14, 14), 2);
  EXPECT_EQ(winogradOutputTileChannelsLast(6, 6), 2);
}

// Weights packed as B panels of W^T (packed_w = 2, "gemm_bt": the
// transposed product the compiler picks for few output positions) give the
// reference's values, with the fused epilogue, serial and on a pool: a 3x3
// at 7x7, a pointwise conv (X read as op(A) directly), a strided 1x1,
// batches of 2 and 3, M not a multiple of the panel width, a pointwise conv
// whose W outweighs X (split by output channels on a pool), on every vector
// variant.
TEST(LibraryKernels, ConvTransposedProductMatchesReference) {
  struct Shape {
    std::vector<int64_t> x, w, strides, pads;
  };
  uint64_t seed = 700;
  for (const Shape &c : {Shape{{1, 40, 7, 7}, {48, 40, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         Shape{{2, 24, 7, 7}, {37, 24, 1, 1}, {1, 1}, {0, 0, 0, 0}},
                         Shape{{1, 16, 14, 14}, {32, 16, 1, 1}, {2, 2}, {0, 0, 0, 0}},
                         Shape{{1, 8, 9, 11}, {20, 8, 3, 3}, {2, 1}, {0, 1, 2, 1}},
                         Shape{{3, 16, 7, 7}, {32, 16, 3, 3}, {1, 1}, {1, 1, 1, 1}},
                         // W outweighs X: a pool shares out W's column panels.
                         Shape{{2, 256, 5, 5}, {200, 256, 1, 1}, {1, 1}, {0, 0, 0, 0}}}) {
    FusedConvCase t = fusedConvCase({c.x, c.w, 1, c.strides, c.pads, {1, 1}}, seed);
    int64_t M = c.w[0], K = c.w[1] * c.w[2] * c.w[3];
    Tensor P(ElementType::Float, {int64_t(packedGemmBSize(K, M))});
    packGemmB(t.W.f(), K, /*transB=*/true, K, M, 1.f, P.f());
    P.shape = c.w; // the view keeps W's logical shape
    Attrs attrs = withClip(Attrs().is("strides", c.strides).is("pads", c.pads).i("packed_w", 2));
    expectConvOnEveryVariant(attrs, {&t.X, &P, &t.B, &t.Z}, t.ys, t.want, shapeToString(c.w));
  }
  Tensor X = randomF({1, 4, 5, 5}, 1), W = randomF({4, 4, 1, 1}, 2);
  Tensor Y(ElementType::Float, {1, 4, 5, 5});
  EXPECT_INVALID(run("Conv", Attrs().i("packed_w", 3), {&X, &W}, {&Y}),
                 "packed_w must be 0, 1, 2, 4 or 5, got 3");
}

// ortc.fused_conv's epilogue (residual sum, then the activation) gives what
// the plain Conv followed by the sum and the activation gives: for a 3x3,
// a pointwise (GEMM epilogue per block, several blocks), a depthwise (per
// plane) and a grouped Conv, each activation, with and without bias and
// residual, serial and on a pool, prepacked or not.
TEST(LibraryKernels, FusedConvEpilogueMatchesConvThenEpilogue) {
  struct Case {
    std::vector<int64_t> x, w;
    int64_t group;
    std::vector<int64_t> pads;
  };
  struct Act {
    std::string name;
    std::vector<float> params;
    std::function<float(float)> apply;
  };
  std::vector<Act> acts = {
      {"none", {}, [](float v) { return v; }},
      {"relu", {}, [](float v) { return std::max(v, 0.f); }},
      {"clip", {0.f, 0.5f}, [](float v) { return std::min(std::max(v, 0.f), 0.5f); }},
      {"leaky_relu", {0.125f}, [](float v) { return v >= 0 ? v : 0.125f * v; }},
  };
  ThreadPool pool(2);
  uint64_t seed = 300;
  for (const Case &c : {Case{{2, 5, 13, 11}, {7, 5, 3, 3}, 1, {1, 1, 1, 1}},
                        Case{{1, 40, 30, 30}, {20, 40, 1, 1}, 1, {0, 0, 0, 0}},
                        Case{{2, 6, 9, 37}, {6, 1, 3, 3}, 6, {1, 1, 1, 1}},
                        Case{{1, 4, 6, 6}, {6, 2, 3, 3}, 2, {1, 1, 1, 1}}})
    for (const Act &act : acts)
      for (int variant = 0; variant < 4; ++variant) {
        bool withBias = variant & 1, withResidual = variant & 2;
        Tensor X = randomF(c.x, ++seed), W = randomF(c.w, ++seed), B = randomF({c.w[0]}, ++seed);
        int64_t oh = c.x[2] + c.pads[0] + c.pads[2] - c.w[2] + 1;
        int64_t ow = c.x[3] + c.pads[1] + c.pads[3] - c.w[3] + 1;
        std::vector<int64_t> ys = {c.x[0], c.w[0], oh, ow};
        Tensor Z = randomF(ys, ++seed);
        Tensor plain(ElementType::Float, ys);
        Attrs attrs = Attrs().is("pads", c.pads).i("group", c.group);
        ASSERT_OK(run("Conv", attrs, {&X, &W, withBias ? &B : nullptr}, {&plain}));
        std::vector<float> want = plain.floats();
        for (size_t i = 0; i < want.size(); ++i)
          want[i] = act.apply(want[i] + (withResidual ? Z.floats()[i] : 0.f));
        Attrs fused = attrs;
        fused.s("activation", act.name);
        fused.a.floats["activation_params"] = act.params;
        for (ThreadPool *on : {(ThreadPool *)nullptr, &pool}) {
          Tensor got(ElementType::Float, ys);
          ASSERT_OK(run("Conv", fused,
                        {&X, &W, withBias ? &B : nullptr, withResidual ? &Z : nullptr}, {&got},
                        on));
          // The epilogue adds in another order than the plain sum: ulps.
          EXPECT_TRUE(near(got.floats(), want, 1e-5))
              << act.name << " bias " << withBias << " residual " << withResidual << " group "
              << c.group << (on ? " pool" : "");
        }
      }
  // Refused: an unknown activation, wrong parameter counts, a residual of
  // another shape.
  Tensor X = randomF({1, 2, 4, 4}, 1), W = randomF({2, 2, 1, 1}, 2);
  Tensor Y(ElementType::Float, {1, 2, 4, 4}), Z = randomF({1, 2, 4, 1}, 3);
  EXPECT_INVALID(run("Conv", Attrs().s("activation", "swish"), {&X, &W}, {&Y}),
                 "unknown activation 'swish'");
  EXPECT_INVALID(run("Conv", Attrs().s("activation", "clip"), {&X, &W}, {&Y}),
                 "takes 2 activation_params, got 0");
  EXPECT_INVALID(run("Conv", Attrs(), {&X, &W, nullptr, &Z}, {&Y}),
                 "the residual [1,2,4,1] differs from Y [1,2,4,4]");
}

TEST(LibraryKernels, ConvHandComputedAndErrors) {
  // 1x1 input channel, 3x3 ones kernel, pad 1: corner sums of a 3x3 iota.
  Tensor X = F({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});
  Tensor W = F({1, 1, 3, 3}, std::vector<float>(9, 1.f));
  Tensor B = F({1}, {0.5f});
  Tensor Y(ElementType::Float, {1, 1, 3, 3});
  EXPECT_OK(run("Conv", Attrs().is("pads", {1, 1, 1, 1}), {&X, &W, &B}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {12.5f, 21.5f, 16.5f, 27.5f, 45.5f, 33.5f, 24.5f, 39.5f, 28.5f}));

  Tensor bad(ElementType::Float, {1, 1, 2, 2});
  EXPECT_INVALID(run("Conv", Attrs().is("pads", {1, 1, 1, 1}), {&X, &W, &B}, {&bad}),
                 "output shape");
  EXPECT_INVALID(run("Conv", Attrs().i("group", 2), {&X, &W}, {&Y}), "group");
  EXPECT_INVALID(run("Conv", Attrs().is("kernel_shape", {2, 2}), {&X, &W}, {&Y}), "kernel_shape");
  EXPECT_INVALID(run("Conv", Attrs().s("auto_pad", "BOGUS"), {&X, &W}, {&Y}), "auto_pad");
  Tensor Xi = iota(ElementType::Int64, {1, 1, 3, 3});
  EXPECT_INVALID(run("Conv", {}, {&Xi, &W}, {&Y}), "float32");
  Tensor B2 = F({2}, {0, 0});
  EXPECT_INVALID(run("Conv", Attrs().is("pads", {1, 1, 1, 1}), {&X, &W, &B2}, {&Y}), "B must");
}

//===----------------------------------------------------------------------===//
// Pools
//===----------------------------------------------------------------------===//

struct PoolSpec {
  std::vector<int64_t> x, k, strides, pads, dilations;
  bool ceil = false, includePad = false;
};

std::vector<float> refPool(const Tensor &X, const PoolSpec &s, bool isMax,
                           std::vector<int64_t> &outShape) {
  size_t r = s.k.size();
  std::vector<int64_t> in(X.shape.begin() + 2, X.shape.end()), out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t eff = (s.k[i] - 1) * s.dilations[i] + 1;
    double span = double(in[i] + s.pads[i] + s.pads[i + r] - eff) / s.strides[i];
    out[i] = int64_t(s.ceil ? std::ceil(span) : std::floor(span)) + 1;
    if (s.ceil && (out[i] - 1) * s.strides[i] >= in[i] + s.pads[i])
      --out[i];
  }
  outShape = {X.shape[0], X.shape[1]};
  outShape.insert(outShape.end(), out.begin(), out.end());
  std::vector<float> y(numel(outShape));
  int64_t P = numel(out), IS = numel(in), KS = numel(s.k);
  for (int64_t pl = 0; pl < X.shape[0] * X.shape[1]; ++pl)
    for (int64_t p = 0; p < P; ++p) {
      std::vector<int64_t> o = unravel(p, out);
      double acc = isMax ? -std::numeric_limits<double>::infinity() : 0.0;
      int64_t valid = 0, padded = 0;
      for (int64_t q = 0; q < KS; ++q) {
        std::vector<int64_t> kk = unravel(q, s.k), ii(r);
        bool ok = true, inPadded = true;
        for (size_t i = 0; i < r; ++i) {
          ii[i] = o[i] * s.strides[i] - s.pads[i] + kk[i] * s.dilations[i];
          ok = ok && ii[i] >= 0 && ii[i] < in[i];
          inPadded = inPadded && ii[i] < in[i] + s.pads[i + r];
        }
        padded += inPadded;
        if (!ok)
          continue;
        ++valid;
        float v = X.data<float>()[pl * IS + ravel(ii, in)];
        acc = isMax ? std::max(acc, double(v)) : acc + v;
      }
      y[pl * P + p] = isMax ? float(acc) : float(acc / (s.includePad ? padded : valid));
    }
  return y;
}

void checkPool(const std::string &op, PoolSpec s, uint64_t seed) {
  size_t r = s.k.size();
  if (s.strides.empty())
    s.strides.assign(r, 1);
  if (s.pads.empty())
    s.pads.assign(2 * r, 0);
  if (s.dilations.empty())
    s.dilations.assign(r, 1);
  Tensor X = randomF(s.x, seed);
  std::vector<int64_t> ys;
  std::vector<float> want = refPool(X, s, op == "MaxPool", ys);
  Attrs at;
  at.is("kernel_shape", s.k).is("strides", s.strides).is("pads", s.pads).i("ceil_mode", s.ceil);
  if (op == "MaxPool")
    at.is("dilations", s.dilations);
  else
    at.i("count_include_pad", s.includePad);
  Tensor Y(ElementType::Float, ys);
  std::string what = op + " x " + shapeToString(s.x) + " k " + shapeToString(s.k) + " s " +
                     shapeToString(s.strides) + " p " + shapeToString(s.pads) + " d " +
                     shapeToString(s.dilations) + " ceil " + std::to_string(s.ceil);
  Status st = run(op, at, {&X}, {&Y});
  ASSERT_TRUE(st.isOk()) << what << ": " << st.message();
  EXPECT_TRUE(near(Y.floats(), want, 1e-4)) << what;
}

TEST(LibraryKernels, MaxPool) {
  checkPool("MaxPool", {{1, 2, 6, 6}, {2, 2}, {2, 2}}, 1);
  checkPool("MaxPool", {{2, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}}, 2);
  checkPool("MaxPool", {{1, 2, 7, 8}, {3, 2}, {2, 3}, {0, 1, 1, 0}, {}, true}, 3);
  checkPool("MaxPool", {{1, 1, 9, 9}, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}}, 4);
  checkPool("MaxPool", {{1, 2, 5, 5}, {2, 2}, {2, 2}, {}, {}, true}, 5);
  checkPool("MaxPool", {{2, 2, 13}, {4}, {3}, {1, 2}, {}, true}, 6);
  checkPool("MaxPool", {{1, 2, 5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {0, 1, 0, 1, 1, 1}}, 7);
  checkPool("MaxPool", {{1, 1, 10, 10}, {3, 3}, {3, 3}, {1, 1, 1, 1}, {2, 1}, true}, 8);
  checkPool("MaxPool", {{1, 2, 7, 7}, {2, 2}, {2, 2}}, 9); // input past the last window
}

// A 2-D MaxPool at dilation 1 folds each window's rows, then its columns
// (MaxPoolRows): the reference's values exactly, on every vector variant,
// serially and on a pool: ResNet's stem pool, whole vectors of 8 outputs and
// a remainder at strides 1 and 2, stride 3 (columns one at a time), ceil
// mode, asymmetric pads, a window wider than the pad, a NaN (it loses).
TEST(LibraryKernels, MaxPoolRowsOnEveryVariant) {
  ThreadPool pool(2);
  uint64_t seed = 120;
  for (PoolSpec s : {PoolSpec{{1, 64, 13, 13}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},
                     PoolSpec{{2, 3, 20, 37}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}},
                     PoolSpec{{1, 3, 11, 19}, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}},
                     PoolSpec{{1, 2, 16, 34}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}},
                     PoolSpec{{1, 2, 17, 23}, {3, 3}, {3, 3}, {0, 0, 0, 0}, {1, 1}},
                     PoolSpec{{1, 2, 16, 17}, {3, 3}, {2, 2}, {0, 0, 0, 0}, {1, 1}, true},
                     PoolSpec{{1, 2, 9, 30}, {2, 5}, {1, 2}, {1, 4, 0, 2}, {1, 1}}}) {
    Tensor X = randomF(s.x, ++seed);
    X.f()[5] = NAN;
    std::vector<int64_t> ys;
    std::vector<float> want = refPool(X, s, true, ys);
    Attrs at;
    at.is("kernel_shape", s.k).is("strides", s.strides).is("pads", s.pads).i("ceil_mode", s.ceil);
    std::string what =
        "x " + shapeToString(s.x) + " k " + shapeToString(s.k) + " s " + shapeToString(s.strides);
    for (const char *variant : {"generic", "avx2", "avx512"}) {
      if (!setSgemmVariant(variant))
        continue;
      for (ThreadPool *on : {(ThreadPool *)nullptr, &pool}) {
        Tensor Y(ElementType::Float, ys);
        ASSERT_OK(run("MaxPool", at, {&X}, {&Y}, on));
        EXPECT_TRUE(near(Y.floats(), want, 0.0)) << what << " " << variant << (on ? " pool" : "");
      }
    }
    setSgemmVariant(nullptr);
  }
}

// MaxPoolChannelsLast (ortc.max_pool) over X [N, H, W, C] gives MaxPool's
// result over X [N, C, H, W], transposed, exactly: pads, ceil_mode,
// dilations and auto_pad, channel counts with and without a partial vector,
// a NaN (it loses, as in MaxPool), on every variant, serially and on a pool.
TEST(LibraryKernels, MaxPoolChannelsLast) {
  struct Case {
    std::vector<int64_t> nchw, k, strides, pads, dilations;
    int64_t ceil;
    std::string autoPad;
  };
  const Case cases[] = {
      {{1, 64, 12, 12}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, 0, "NOTSET"}, // ResNet's stem
      {{2, 20, 9, 11}, {3, 2}, {2, 3}, {0, 1, 1, 0}, {1, 1}, 1, "NOTSET"},
      {{1, 5, 10, 10}, {3, 3}, {1, 1}, {2, 2, 2, 2}, {2, 2}, 0, "NOTSET"},
      {{1, 17, 7, 6}, {2, 2}, {2, 2}, {0, 0, 0, 0}, {1, 1}, 0, "SAME_UPPER"},
      {{3, 16, 4, 4}, {1, 1}, {1, 1}, {0, 0, 0, 0}, {1, 1}, 0, "NOTSET"},
  };
  ThreadPool pool(2);
  uint64_t seed = 80;
  for (const Case &c : cases) {
    Tensor X = randomF(c.nchw, seed++);
    X.f()[3] = NAN;
    Attrs at;
    at.is("kernel_shape", c.k).is("strides", c.strides).is("dilations", c.dilations);
    at.i("ceil_mode", c.ceil).s("auto_pad", c.autoPad);
    if (c.autoPad == "NOTSET")
      at.is("pads", c.pads);
    std::string what = "x " + shapeToString(c.nchw) + " k " + shapeToString(c.k) + " s " +
                       shapeToString(c.strides) + " " + c.autoPad;
    // The NCHW kernel's result, then both transposed to channels-last.
    std::vector<int64_t> ys = {c.nchw[0], c.nchw[1]};
    for (int i = 0; i < 2; ++i) {
      int64_t in = c.nchw[2 + i], window = (c.k[i] - 1) * c.dilations[i] + 1;
      int64_t span = in + c.pads[i] + c.pads[2 + i] - window;
      int64_t out = c.autoPad != "NOTSET" ? (in + c.strides[i] - 1) / c.strides[i]
                    : c.ceil              ? (span + c.strides[i] - 1) / c.strides[i] + 1
                                          : span / c.strides[i] + 1;
      // ceil_mode's last window starts inside the input or its begin pad.
      if (c.ceil && (out - 1) * c.strides[i] >= in + c.pads[i])
        --out;
      ys.push_back(out);
    }
    Tensor Y(ElementType::Float, ys);
    ASSERT_OK(run("MaxPool", at, {&X}, {&Y}));
    Tensor XL = permuted4(X, {0, 2, 3, 1}), want = permuted4(Y, {0, 2, 3, 1});
    for (const char *variant : {"generic", "avx2", "avx512"}) {
      if (!setSgemmVariant(variant))
        continue;
      for (ThreadPool *on : {(ThreadPool *)nullptr, &pool}) {
        Tensor YL(ElementType::Float, want.shape);
        ASSERT_OK(run("MaxPoolChannelsLast", at, {&XL}, {&YL}, on));
        EXPECT_EQ(YL.floats(), want.floats()) << what << " " << variant << (on ? " pool" : "");
      }
    }
    setSgemmVariant(nullptr);
  }
  Tensor X3 = randomF({1, 4, 4}, 1), Y3(ElementType::Float, {1, 2, 2});
  EXPECT_INVALID(run("MaxPoolChannelsLast", Attrs().is("kernel_shape", {2, 2}), {&X3}, {&Y3}),
                 "[N,H,W,C]");
  Tensor X4 = randomF({1, 4, 4, 3}, 1), Y4(ElementType::Float, {1, 2, 2, 2});
  EXPECT_INVALID(run("MaxPoolChannelsLast", Attrs().is("kernel_shape", {2, 2}), {&X4}, {&Y4}),
                 "output shape");
}

// DepthwiseBlock (ortc.depthwise_block) over X [N, H, W, C] gives the
// reference of its convs in turn (expansion, clip; depthwise, leaky relu;
// projection with the residual, relu): every conv present, the expansion
// or the projection alone; the tensors between the convs made whole
// (small) or a band at a time with the expansion in a ring of rows (over
// 2^18 floats), which wraps; strides 1 and 2, a 5x3 kernel with dilation
// and asymmetric pads, threads splitting inside an image and at image
// boundaries, biases absent, pointwise weights packed (packed_w 3) or not;
// on every vector variant, serially and on a pool.
// A depthwise block case: X [N, C, H, W]; E expansion channels and P
// projection channels (0: no such conv); the depthwise window.
struct BlockShape {
  std::vector<int64_t> x;
  int64_t E, P;
  std::vector<int64_t> kernel, strides, pads, dilations = {1, 1};
  bool biases = true, residual = false;
};

// A case's random operands and its reference, NCHW: each conv in turn, the
// expansion clipped to [0, 0.75], the depthwise conv's leaky relu 0.1, the
// projection plus the residual, relu (blockActivations and
// project_activation relu).
struct BlockCase {
  int64_t C, E, P;
  std::vector<int64_t> w1Shape, w2Shape, w3Shape, ys;
  Tensor X, W1, B1, W2, B2, W3, B3, Z;
  std::vector<float> want;

  BlockCase(const BlockShape &c, uint64_t &seed)
      : C(c.x[1]), E(c.E ? c.E : C),
        P(c.P ? c.P : E), w1Shape{E, C, 1, 1}, w2Shape{E, 1, c.kernel[0], c.kernel[1]}, w3Shape{
                                                                                            P, E, 1,
                                                                                            1} {
    X = randomF(c.x, ++seed), W1 = randomF(w1Shape, ++seed), B1 = randomF({E}, ++seed);
    W2 = randomF(w2Shape, ++seed), B2 = randomF({E}, ++seed);
    W3 = randomF(w3Shape, ++seed), B3 = randomF({P}, ++seed);
    Tensor Mid = X;
    if (c.E) {
      ConvSpec expand{c.x, w1Shape, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}};
      std::vector<int64_t> shape;
      std::vector<float> v = refConv(X, W1, c.biases ? &B1 : nullptr, expand, shape);
      for (float &f : v)
        f = std::min(std::max(f, 0.f), 0.75f);
      Mid = F(shape, v);
    }
    ConvSpec depthwise{Mid.shape, w2Shape, E, c.strides, c.pads, c.dilations};
    want = refConv(Mid, W2, c.biases ? &B2 : nullptr, depthwise, ys);
    for (float &f : want)
      f = f > 0 ? f : 0.1f * f;
    Z = randomF({ys[0], P, ys[2], ys[3]}, ++seed);
    if (c.P) {
      Tensor Dw = F(ys, want);
      ConvSpec project{ys, w3Shape, 1, {1, 1}, {0, 0, 0, 0}, {1, 1}};
      want = refConv(Dw, W3, c.biases ? &B3 : nullptr, project, ys);
      for (size_t i = 0; i < want.size(); ++i)
        want[i] = std::max(want[i] + (c.residual ? Z.floats()[i] : 0.f), 0.f);
    }
  }
};

// The activations both depthwise block tests give `attrs`: the expansion
// clipped to [0, 0.75] (as their references), the depthwise conv's leaky
// relu with slope 0.1.
Attrs blockActivations(Attrs attrs) {
  attrs.s("expand_activation", "clip").s("activation", "leaky_relu");
  attrs.a.floats["expand_activation_params"] = {0.f, 0.75f};
  attrs.a.floats["activation_params"] = {0.1f};
  return attrs;
}

// body(pool or null, packed weights?, variant) on every GEMM variant this
// CPU has, on one thread and on two, with the pointwise weights as they are
// and packed.
template <typename Body> void forEachBlockRun(Body &&body) {
  ThreadPool pool(2);
  for (const char *variant : {"generic", "avx2", "avx512"}) {
    if (!setSgemmVariant(variant))
      continue;
    for (ThreadPool *on : {(ThreadPool *)nullptr, &pool})
      for (bool isPacked : {false, true})
        body(on, isPacked, variant);
  }
  setSgemmVariant(nullptr);
}

TEST(LibraryKernels, DepthwiseBlock) {
  uint64_t seed = 1300;
  for (const BlockShape &c :
       {BlockShape{{1, 3, 6, 6}, 8, 0, {3, 3}, {1, 1}, {1, 1, 1, 1}},
        BlockShape{{2, 5, 9, 7}, 20, 0, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
        BlockShape{{1, 8, 70, 70}, 64, 0, {3, 3}, {1, 1}, {1, 1, 1, 1}},
        BlockShape{{2, 5, 60, 61}, 40, 0, {3, 3}, {2, 2}, {1, 1, 1, 1}},
        BlockShape{{3, 4, 40, 40}, 60, 0, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false},
        BlockShape{{1, 6, 47, 50}, 120, 0, {5, 3}, {1, 2}, {2, 0, 1, 1}, {2, 1}},
        // The whole block, with the residual: small, then banded.
        BlockShape{{2, 7, 8, 9}, 42, 7, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true},
        BlockShape{{3, 24, 30, 30}, 144, 24, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true},
        BlockShape{{1, 16, 45, 44}, 96, 24, {3, 3}, {2, 2}, {1, 1, 1, 1}},
        BlockShape{{2, 10, 33, 31}, 64, 20, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, true},
        // The depthwise conv and its projection (a depthwise separable
        // conv): small, then banded.
        BlockShape{{1, 12, 10, 10}, 0, 20, {3, 3}, {1, 1}, {1, 1, 1, 1}},
        BlockShape{{2, 32, 56, 57}, 0, 16, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true},
        BlockShape{{1, 40, 80, 81}, 0, 24, {5, 5}, {2, 2}, {2, 2, 2, 2}, {1, 1}, false}}) {
    BlockCase t(c, seed);
    int64_t C = t.C, E = t.E, P = t.P;
    const std::vector<int64_t> &ys = t.ys;
    const std::vector<float> &want = t.want;
    const Tensor &X = t.X, &W1 = t.W1, &B1 = t.B1, &W2 = t.W2, &B2 = t.B2, &W3 = t.W3, &B3 = t.B3;
    const Tensor &Z = t.Z;
    std::vector<int64_t> yLast = {ys[0], ys[2], ys[3], P};
    std::vector<float> wantLast = permuteChannels(want, ys, true);
    Tensor XL = F({c.x[0], c.x[2], c.x[3], C}, permuteChannels(X.floats(), c.x, true));
    Tensor ZL = F(yLast, permuteChannels(Z.floats(), ys, true));
    auto packedOf = [](const Tensor &Wp, int64_t M, int64_t K) {
      Tensor Pk(ElementType::Float, {int64_t(packedGemmBSize(K, M))});
      packConvWeightsChannelsLast(Wp.f(), M, K, 1, Pk.f());
      Pk.shape = Wp.shape; // the view keeps W's logical shape
      return Pk;
    };
    Tensor P1 = packedOf(W1, E, C), P3 = packedOf(W3, P, E);
    Attrs attrs = blockActivations(
        Attrs().is("pads", c.pads).is("strides", c.strides).is("dilations", c.dilations));
    attrs.i("group", E).i("channels_last", 1).s("project_activation", "relu");
    Attrs packed = attrs;
    packed.i("packed_w", 3);
    forEachBlockRun(
        [&](ThreadPool *on, bool isPacked, const char *variant) {
          Tensor Y(ElementType::Float, yLast);
          const Tensor *w1 = c.E ? (isPacked ? &P1 : &W1) : nullptr;
          const Tensor *w3 = c.P ? (isPacked ? &P3 : &W3) : nullptr;
          ASSERT_OK(run("DepthwiseBlock", isPacked ? packed : attrs,
                        {&XL, w1, c.biases && c.E ? &B1 : nullptr, &W2, c.biases ? &B2 : nullptr,
                         w3, c.biases && c.P ? &B3 : nullptr, c.residual ? &ZL : nullptr},
                        {&Y}, on));
          EXPECT_TRUE(near(Y.floats(), wantLast, 1e-4))
              << shapeToString(c.x) << " E " << c.E << " P " << c.P << " " << variant
              << (on ? " pool" : "") << (isPacked ? " packed" : "");
        });
  }
  Tensor X = randomF({1, 5, 5, 4}, 1), W1 = randomF({8, 4, 1, 1}, 2), W2 = randomF({8, 1, 3, 3}, 3);
  Tensor W3 = randomF({6, 8, 1, 1}, 4), B3 = randomF({6}, 5);
  Tensor Y(ElementType::Float, {1, 3, 3, 8}), Y6(ElementType::Float, {1, 3, 3, 6});
  Attrs attrs = Attrs().i("group", 8).i("channels_last", 1);
  EXPECT_OK(run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2}, {&Y}));
  EXPECT_OK(run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2, nullptr, &W3}, {&Y6}));
  Tensor Wide = randomF({8, 4, 3, 3}, 4);
  EXPECT_INVALID(run("DepthwiseBlock", attrs, {&X, &Wide, nullptr, &W2}, {&Y}), "do not fit X");
  EXPECT_INVALID(run("DepthwiseBlock", attrs, {&X, nullptr, nullptr, &W2}, {&Y}), "do not fit X");
  Tensor B8 = randomF({8}, 7);
  EXPECT_INVALID(run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2, nullptr, nullptr, &B8}, {&Y}),
                 "a bias or residual for a pointwise conv the block does not have");
  EXPECT_INVALID(run("DepthwiseBlock", Attrs(attrs).i("group", 4), {&X, &W1, nullptr, &W2}, {&Y}),
                 "the depthwise conv's group must be 8, got 4");
  EXPECT_INVALID(
      run("DepthwiseBlock", Attrs(attrs).i("packed_w", 2), {&X, &W1, nullptr, &W2}, {&Y}),
      "reads packed_w 0 or 3, got 2");
  EXPECT_INVALID(run("DepthwiseBlock", Attrs(attrs).s("project_activation", "gelu"),
                     {&X, &W1, nullptr, &W2}, {&Y}),
                 "unknown project_activation 'gelu'");
  Tensor Tall = randomF({8, 1, 9, 3}, 5);
  Tensor Y9(ElementType::Float, {1, 1, 3, 8});
  EXPECT_INVALID(run("DepthwiseBlock", Attrs(attrs).is("pads", {2, 1, 2, 1}),
                     {&X, &W1, nullptr, &Tall}, {&Y9}),
                 "kernels of at most 8 rows");
  EXPECT_INVALID(run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2}, {&Y6}), "Conv");
  Tensor Z = randomF({1, 3, 3, 5}, 6);
  EXPECT_INVALID(
      run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2, nullptr, &W3, nullptr, &Z}, {&Y6}),
      "the residual [1,3,3,5] differs from Y");
  EXPECT_INVALID(
      run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2, nullptr, &W3, nullptr, &Y6}, {&Y6}),
      "the residual overlaps Y");
}

// A channels-first depthwise block (no channels_last): the expansion, the
// depthwise conv and the projection with its residual (either pointwise conv
// absent) image by image, against the reference convs in turn; on one thread
// and two, fewer images than threads and more, with the pointwise W as they
// are and packed as A panels (packed_w 1).
TEST(LibraryKernels, DepthwiseBlockChannelsFirst) {
  uint64_t seed = 1400;
  for (const BlockShape &c :
       {BlockShape{{1, 3, 6, 6}, 8, 0, {3, 3}, {1, 1}, {1, 1, 1, 1}},
        BlockShape{{3, 5, 9, 7}, 20, 0, {3, 3}, {2, 2}, {1, 1, 1, 1}, {1, 1}, false},
        BlockShape{{2, 16, 30, 31}, 96, 24, {3, 3}, {2, 2}, {1, 1, 1, 1}},
        BlockShape{{4, 24, 20, 20}, 144, 24, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, true, true},
        BlockShape{{1, 300, 9, 9}, 12, 0, {5, 3}, {1, 2}, {2, 0, 1, 1}},
        BlockShape{{3, 7, 8, 9}, 42, 7, {3, 3}, {1, 1}, {1, 1, 1, 1}, {1, 1}, false, true},
        // A depthwise separable conv: no expansion.
        BlockShape{{2, 32, 28, 29}, 0, 16, {3, 3}, {1, 1}, {1, 1, 1, 1}},
        BlockShape{{1, 40, 20, 21}, 0, 300, {5, 5}, {2, 2}, {2, 2, 2, 2}, {1, 1}, true, false}}) {
    BlockCase t(c, seed);
    int64_t C = t.C, E = t.E, P = t.P;
    const Tensor &X = t.X, &W1 = t.W1, &B1 = t.B1, &W2 = t.W2, &B2 = t.B2, &W3 = t.W3, &B3 = t.B3;
    auto packedOf = [](const Tensor &Wp, int64_t M, int64_t K) {
      Tensor Pk(ElementType::Float, {int64_t(packedGemmASize(M, K))});
      packGemmA(Wp.f(), K, M, K, Pk.f());
      Pk.shape = Wp.shape; // the view keeps W's logical shape
      return Pk;
    };
    Tensor P1 = packedOf(W1, E, C), P3 = packedOf(W3, P, E);
    Attrs attrs =
        blockActivations(Attrs().is("pads", c.pads).is("strides", c.strides).i("group", E));
    attrs.s("project_activation", "relu");
    forEachBlockRun([&](ThreadPool *on, bool isPacked, const char *variant) {
      Tensor Y(ElementType::Float, t.ys);
      const Tensor *w1 = c.E ? (isPacked ? &P1 : &W1) : nullptr;
      const Tensor *w3 = c.P ? (isPacked ? &P3 : &W3) : nullptr;
      ASSERT_OK(run("DepthwiseBlock", isPacked ? Attrs(attrs).i("packed_w", 1) : attrs,
                    {&X, w1, c.biases && c.E ? &B1 : nullptr, &W2, c.biases ? &B2 : nullptr, w3,
                     c.biases && c.P ? &B3 : nullptr, c.residual ? &t.Z : nullptr},
                    {&Y}, on));
      EXPECT_TRUE(near(Y.floats(), t.want, 1e-4))
          << shapeToString(c.x) << " E " << c.E << " P " << c.P << " " << variant
          << (on ? " pool" : "") << (isPacked ? " packed" : "");
    });
  }
  Tensor X = randomF({1, 4, 5, 5}, 1), W1 = randomF({8, 4, 1, 1}, 2), W2 = randomF({8, 1, 3, 3}, 3);
  Tensor W3 = randomF({6, 8, 1, 1}, 4), Y(ElementType::Float, {1, 8, 3, 3});
  Tensor Y6(ElementType::Float, {1, 6, 3, 3});
  Attrs attrs = Attrs().i("group", 8);
  EXPECT_OK(run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2}, {&Y}));
  EXPECT_OK(run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2, nullptr, &W3}, {&Y6}));
  EXPECT_INVALID(run("DepthwiseBlock", attrs, {&X, nullptr, nullptr, &W2}, {&Y}), "do not fit X");
  Tensor Wide = randomF({8, 4, 3, 3}, 4);
  EXPECT_INVALID(run("DepthwiseBlock", attrs, {&X, &Wide, nullptr, &W2}, {&Y}), "do not fit X");
  Tensor B8 = randomF({8}, 7);
  EXPECT_INVALID(run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2, nullptr, nullptr, &B8}, {&Y}),
                 "a bias or residual for a pointwise conv the block does not have");
  EXPECT_INVALID(
      run("DepthwiseBlock", Attrs(attrs).i("packed_w", 3), {&X, &W1, nullptr, &W2}, {&Y}),
      "reads packed_w 0 or 1, got 3");
  EXPECT_INVALID(run("DepthwiseBlock", Attrs(attrs).i("group", 4), {&X, &W1, nullptr, &W2}, {&Y}),
                 "the depthwise conv's group must be 8, got 4");
  EXPECT_INVALID(run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2}, {&Y6}),
                 "output shape [1,6,3,3] should be [1,8,3,3]");
  Tensor Z = randomF({1, 5, 3, 3}, 6);
  EXPECT_INVALID(
      run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2, nullptr, &W3, nullptr, &Z}, {&Y6}),
      "the residual [1,5,3,3] differs from Y");
  EXPECT_INVALID(
      run("DepthwiseBlock", attrs, {&X, &W1, nullptr, &W2, nullptr, &W3, nullptr, &Y6}, {&Y6}),
      "the residual overlaps Y");
}

TEST(LibraryKernels, AveragePool) {
  for (bool inc : {false, true}) {
    checkPool("AveragePool", {{1, 2, 6, 6}, {2, 2}, {2, 2}, {}, {}, false, inc}, 10);
    checkPool("AveragePool", {{1, 2, 7, 9}, {2, 2}, {2, 2}, {}, {}, false, inc}, 16);
    checkPool("AveragePool", {{2, 3, 7, 7}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, false, inc}, 11);
    checkPool("AveragePool", {{1, 2, 7, 8}, {3, 2}, {2, 3}, {0, 1, 1, 0}, {}, true, inc}, 12);
    checkPool("AveragePool", {{1, 2, 5, 5}, {3, 3}, {2, 2}, {1, 1, 1, 1}, {}, true, inc}, 13);
    checkPool("AveragePool", {{2, 2, 13}, {4}, {3}, {1, 2}, {}, true, inc}, 14);
    checkPool("AveragePool",
              {{1, 2, 5, 6, 7}, {2, 3, 2}, {2, 1, 2}, {0, 1, 0, 1, 1, 1}, {}, false, inc}, 15);
  }
}

TEST(LibraryKernels, PoolHandComputed) {
  Tensor X = F({1, 1, 4, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16});
  // ceil_mode: in 4, k 3, s 2 -> 2 windows either way; with in 5 -> 2 vs 3.
  Tensor Y(ElementType::Float, {1, 1, 2, 2});
  EXPECT_OK(run("MaxPool",
                Attrs().is("kernel_shape", {3, 3}).is("strides", {2, 2}).i("ceil_mode", 1), {&X},
                {&Y}));
  EXPECT_TRUE(near(Y.floats(), {11, 12, 15, 16}));
  Tensor X5 = randomF({1, 1, 5, 5}, 3);
  Tensor Y3(ElementType::Float, {1, 1, 3, 3}), Y2(ElementType::Float, {1, 1, 2, 2});
  Attrs at = Attrs().is("kernel_shape", {2, 2}).is("strides", {2, 2});
  EXPECT_OK(run("MaxPool", at, {&X5}, {&Y2}));
  EXPECT_INVALID(run("MaxPool", at, {&X5}, {&Y3}), "output shape");
  at.i("ceil_mode", 1);
  EXPECT_OK(run("MaxPool", at, {&X5}, {&Y3}));
  EXPECT_EQ(Y3.f()[8], X5.f()[24]); // the last window holds one element
  // A window may not start in the end pad: in 4, k 2, s 2, end pad 1, ceil -> 2.
  EXPECT_OK(run("MaxPool",
                Attrs()
                    .is("kernel_shape", {2, 2})
                    .is("strides", {2, 2})
                    .is("pads", {0, 0, 1, 1})
                    .i("ceil_mode", 1),
                {&X}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {6, 8, 14, 16}));
  // count_include_pad: corner window of a 3x3 pool with pad 1 sees 4 values.
  Tensor A(ElementType::Float, {1, 1, 4, 4}), Ai(ElementType::Float, {1, 1, 4, 4});
  Attrs avg = Attrs().is("kernel_shape", {3, 3}).is("pads", {1, 1, 1, 1});
  EXPECT_OK(run("AveragePool", avg, {&X}, {&A}));
  EXPECT_FLOAT_EQ(A.f()[0], (1 + 2 + 5 + 6) / 4.f);
  avg.i("count_include_pad", 1);
  EXPECT_OK(run("AveragePool", avg, {&X}, {&Ai}));
  EXPECT_FLOAT_EQ(Ai.f()[0], (1 + 2 + 5 + 6) / 9.f);
  // SAME_UPPER pools: in 4, k 3, s 2 -> out 2, pad 0 before, 1 after.
  Tensor S(ElementType::Float, {1, 1, 2, 2});
  EXPECT_OK(
      run("MaxPool",
          Attrs().is("kernel_shape", {3, 3}).is("strides", {2, 2}).s("auto_pad", "SAME_UPPER"),
          {&X}, {&S}));
  EXPECT_TRUE(near(S.floats(), {11, 12, 15, 16}));
  EXPECT_OK(
      run("MaxPool",
          Attrs().is("kernel_shape", {3, 3}).is("strides", {2, 2}).s("auto_pad", "SAME_LOWER"),
          {&X}, {&S}));
  EXPECT_TRUE(near(S.floats(), {6, 8, 14, 16}));
  EXPECT_OK(
      run("AveragePool",
          Attrs().is("kernel_shape", {3, 3}).is("strides", {2, 2}).s("auto_pad", "SAME_LOWER"),
          {&X}, {&S}));
  EXPECT_TRUE(near(S.floats(), {3.5f, 5.f, 9.5f, 11.f}));
  Tensor V(ElementType::Float, {1, 1, 1, 1});
  EXPECT_OK(run("AveragePool",
                Attrs().is("kernel_shape", {3, 3}).is("strides", {2, 2}).s("auto_pad", "VALID"),
                {&X}, {&V}));
  EXPECT_FLOAT_EQ(V.f()[0], 6.f);

  EXPECT_INVALID(run("MaxPool", Attrs(), {&X}, {&Y}), "kernel_shape");
  // Dilations are supported now (SpatialKernelsTest); a zero dilation is not.
  EXPECT_INVALID(
      run("AveragePool", Attrs().is("kernel_shape", {2, 2}).is("dilations", {0, 2}), {&X}, {&V}),
      "dilations");
  EXPECT_INVALID(
      run("MaxPool",
          Attrs().is("kernel_shape", {3, 3}).i("ceil_mode", 1).s("auto_pad", "SAME_UPPER"), {&X},
          {&V}),
      "ceil_mode");
  // The Indices output must be int64 (SpatialKernelsTest checks its values).
  Tensor idx(ElementType::Int32, {1, 1, 2, 2});
  EXPECT_INVALID(
      run("MaxPool", Attrs().is("kernel_shape", {2, 2}).is("strides", {2, 2}), {&X}, {&Y, &idx}),
      "Indices");
}

TEST(LibraryKernels, GlobalPools) {
  for (std::vector<int64_t> shape :
       {std::vector<int64_t>{2, 3, 4, 5}, std::vector<int64_t>{1, 4, 7},
        std::vector<int64_t>{2, 2, 2, 3, 4}}) {
    Tensor X = randomF(shape, 5);
    std::vector<int64_t> ys(shape.size(), 1);
    ys[0] = shape[0];
    ys[1] = shape[1];
    int64_t planes = shape[0] * shape[1], size = numel(shape) / planes;
    std::vector<float> mean(planes), mx(planes);
    for (int64_t p = 0; p < planes; ++p) {
      double s = 0;
      float m = -INFINITY;
      for (int64_t i = 0; i < size; ++i) {
        s += X.f()[p * size + i];
        m = std::max(m, X.f()[p * size + i]);
      }
      mean[p] = float(s / size);
      mx[p] = m;
    }
    Tensor A(ElementType::Float, ys), M(ElementType::Float, ys);
    EXPECT_OK(run("GlobalAveragePool", {}, {&X}, {&A}));
    EXPECT_OK(run("GlobalMaxPool", {}, {&X}, {&M}));
    EXPECT_TRUE(near(A.floats(), mean, 1e-4));
    EXPECT_TRUE(near(M.floats(), mx, 1e-4));
  }
  Tensor X = randomF({2, 3, 4}, 1), bad(ElementType::Float, {2, 3});
  EXPECT_INVALID(run("GlobalAveragePool", {}, {&X}, {&bad}), "output shape");
}

//===----------------------------------------------------------------------===//
// Softmax, normalizations, attention
//===----------------------------------------------------------------------===//

std::vector<float> refSoftmax(const Tensor &X, int64_t axis, bool log) {
  int64_t r = int64_t(X.shape.size());
  if (axis < 0)
    axis += r;
  std::vector<float> y(numel(X.shape));
  for (int64_t i = 0; i < numel(X.shape); ++i) {
    std::vector<int64_t> idx = unravel(i, X.shape);
    double m = -INFINITY, s = 0;
    for (int64_t a = 0; a < X.shape[axis]; ++a) {
      idx[axis] = a;
      m = std::max(m, double(X.data<float>()[ravel(idx, X.shape)]));
    }
    for (int64_t a = 0; a < X.shape[axis]; ++a) {
      idx[axis] = a;
      s += std::exp(double(X.data<float>()[ravel(idx, X.shape)]) - m);
    }
    double v = X.data<float>()[i] - m;
    y[i] = float(log ? v - std::log(s) : std::exp(v) / s);
  }
  return y;
}

TEST(LibraryKernels, SoftmaxAndLogSoftmax) {
  std::vector<std::pair<std::vector<int64_t>, int64_t>> cases = {
      {{5}, 0}, {{3, 7}, -1}, {{3, 7}, 0}, {{2, 3, 4}, 1}, {{2, 3, 4}, -3}, {{4, 1, 300}, 2},
  };
  for (bool log : {false, true})
    for (auto &[shape, axis] : cases) {
      Tensor X = randomF(shape, 7, 20.f);
      X.f()[0] = 1000.f; // stability: exp(1000) overflows without the shift
      Tensor Y(ElementType::Float, shape);
      EXPECT_OK(run(log ? "LogSoftmax" : "Softmax", Attrs().i("axis", axis), {&X}, {&Y}));
      EXPECT_TRUE(near(Y.floats(), refSoftmax(X, axis, log), 1e-5f))
          << shapeToString(shape) << " axis " << axis << " log " << log;
    }
  Tensor X = randomF({3, 4}, 1), Y(ElementType::Float, {3, 4});
  EXPECT_OK(run("Softmax", {}, {&X}, {&Y})); // default axis -1
  EXPECT_TRUE(near(Y.floats(), refSoftmax(X, -1, false), 1e-4));
  EXPECT_INVALID(run("Softmax", Attrs().i("axis", 2), {&X}, {&Y}), "axis");
}

// The last-axis rows on every vector variant and on a pool: lengths around
// the 8-wide chunks, masked attention rows (-inf), a row of -inf (NaN, as
// torch's SDPA export expects before its IsNaN/Where), a NaN in a row (the
// row is NaN).
TEST(LibraryKernels, SoftmaxRowsOnEveryVariant) {
  ThreadPool pool(2);
  const float inf = std::numeric_limits<float>::infinity();
  for (const char *variant : {"generic", "avx2", "avx512"}) {
    if (!setSgemmVariant(variant))
      continue; // this CPU cannot run it
    for (int64_t n : {1, 7, 8, 9, 31, 128, 515})
      for (bool log : {false, true})
        for (ThreadPool *on : {(ThreadPool *)nullptr, &pool}) {
          Tensor X = randomF({12, n}, uint64_t(n), 30.f);
          for (int64_t c = 0; c < n; c += 3)
            X.f()[5 * n + c] = -inf; // a masked row
          Tensor Y(ElementType::Float, X.shape);
          ASSERT_OK(run(log ? "LogSoftmax" : "Softmax", {}, {&X}, {&Y}, on));
          EXPECT_TRUE(near(Y.floats(), refSoftmax(X, -1, log), 2e-6f))
              << variant << " n " << n << " log " << log << (on ? " pool" : "");
        }
    Tensor X = randomF({3, 20}, 9), Y(ElementType::Float, X.shape);
    for (int64_t c = 0; c < 20; ++c)
      X.f()[c] = -inf;   // row 0: all masked
    X.f()[20 + 7] = NAN; // row 1: one NaN
    ASSERT_OK(run("Softmax", {}, {&X}, {&Y}));
    for (int64_t c = 0; c < 20; ++c) {
      EXPECT_TRUE(std::isnan(Y.floats()[c])) << variant << " masked row, column " << c;
      EXPECT_TRUE(std::isnan(Y.floats()[20 + c])) << variant << " NaN row, column " << c;
      EXPECT_FALSE(std::isnan(Y.floats()[40 + c])) << variant << " plain row, column " << c;
    }
  }
  setSgemmVariant(nullptr);
}

// Terms far below the row's max come out 0, never denormal (a denormal
// probability costs a microcode assist per use on most Intel CPUs), and the
// row still matches the reference: x - max runs from 0 down past the float
// range of exp, through ln(FLT_MIN) = -87.34 where the clamp sits.
TEST(LibraryKernels, SoftmaxHasNoDenormals) {
  for (const char *variant : {"generic", "avx2", "avx512"}) {
    if (!setSgemmVariant(variant))
      continue; // this CPU cannot run it
    for (int64_t n : {2, 9, 64, 1000}) {
      Tensor X(ElementType::Float, {3, n});
      for (int64_t c = 0; c < n; ++c) {
        X.f()[c] = -200.f * float(c) / float(n - 1);              // 0 .. -200
        X.f()[n + c] = c == 0 ? 0.f : -87.3365f + 0.0001f * float(c); // around ln(FLT_MIN)
        X.f()[2 * n + c] = c == 0 ? 0.f : -1e30f;                  // masked
      }
      Tensor Y(ElementType::Float, X.shape);
      ASSERT_OK(run("Softmax", {}, {&X}, {&Y}));
      for (int64_t i = 0; i < 3 * n; ++i)
        EXPECT_NE(std::fpclassify(Y.floats()[i]), FP_SUBNORMAL)
            << variant << " n " << n << " element " << i << " = " << Y.floats()[i];
      EXPECT_TRUE(near(Y.floats(), refSoftmax(X, -1, false), 1e-6f)) << variant << " n " << n;
    }
  }
  setSgemmVariant(nullptr);
}

TEST(LibraryKernels, LayerNormalization) {
  struct Case {
    std::vector<int64_t> x;
    int64_t axis;
    std::vector<int64_t> scale, bias; // {} = omitted
  };
  std::vector<Case> cases = {
      {{4, 8}, -1, {8}, {8}},      {{2, 3, 16}, -1, {16}, {}},    {{2, 3, 4}, 1, {3, 4}, {3, 4}},
      {{2, 3, 4}, 1, {4}, {1, 4}}, {{2, 3, 4}, -2, {3, 1}, {4}},  {{5, 7}, 0, {5, 7}, {}},
      {{3, 10}, -1, {}, {}},       {{70, 771}, -1, {771}, {771}}, {{9, 64}, -1, {64}, {}},
  };
  uint64_t seed = 40;
  ThreadPool pool(2);
  for (const char *variant : {"generic", "avx2", "avx512"})
    for (ThreadPool *on : {(ThreadPool *)nullptr, &pool})
      for (const Case &c : cases) {
        if (!setSgemmVariant(variant))
          continue; // this CPU cannot run it
        Tensor X = randomF(c.x, seed++, 3.f);
        Tensor S = c.scale.empty() ? Tensor() : randomF(c.scale, seed++);
        Tensor B = c.bias.empty() ? Tensor() : randomF(c.bias, seed++);
        int64_t axis = c.axis < 0 ? c.axis + int64_t(c.x.size()) : c.axis;
        std::vector<int64_t> norm(c.x.begin() + axis, c.x.end());
        int64_t n = numel(norm), outer = numel(c.x) / n;
        std::vector<float> want(numel(c.x)), mean(outer), inv(outer);
        for (int64_t o = 0; o < outer; ++o) {
          double s = 0, q = 0;
          for (int64_t i = 0; i < n; ++i)
            s += X.f()[o * n + i];
          double m = s / n;
          for (int64_t i = 0; i < n; ++i)
            q += (X.f()[o * n + i] - m) * (X.f()[o * n + i] - m);
          double iv = 1.0 / std::sqrt(q / n + 1e-3);
          mean[o] = float(m);
          inv[o] = float(iv);
          for (int64_t i = 0; i < n; ++i) {
            std::vector<int64_t> idx = unravel(i, norm);
            double v = (X.f()[o * n + i] - m) * iv;
            if (!c.scale.empty())
              v *= S.f()[broadcastIndex(idx, c.scale)];
            if (!c.bias.empty())
              v += B.f()[broadcastIndex(idx, c.bias)];
            want[o * n + i] = float(v);
          }
        }
        std::vector<int64_t> statShape(c.x.begin(), c.x.begin() + axis);
        statShape.resize(c.x.size(), 1);
        Tensor Y(ElementType::Float, c.x), M(ElementType::Float, statShape),
            I(ElementType::Float, statShape);
        EXPECT_OK(run("LayerNormalization", Attrs().i("axis", c.axis).f("epsilon", 1e-3f),
                      {&X, c.scale.empty() ? nullptr : &S, c.bias.empty() ? nullptr : &B},
                      {&Y, &M, &I}, on));
        EXPECT_TRUE(near(Y.floats(), want, 1e-4))
            << shapeToString(c.x) << " axis " << c.axis << " " << variant << (on ? " pool" : "");
        EXPECT_TRUE(near(M.floats(), mean, 1e-4));
        EXPECT_TRUE(near(I.floats(), inv, 1e-4));
      }
  setSgemmVariant(nullptr);
  Tensor X = randomF({2, 6}, 1), S = randomF({5}, 2), Y(ElementType::Float, {2, 6});
  EXPECT_INVALID(run("LayerNormalization", {}, {&X, &S}, {&Y}), "broadcast");
}

TEST(LibraryKernels, BatchAndInstanceNormalization) {
  for (std::vector<int64_t> shape : {std::vector<int64_t>{2, 3, 4, 5}, std::vector<int64_t>{4, 3},
                                     std::vector<int64_t>{1, 3, 7}}) {
    int64_t C = shape[1];
    Tensor X = randomF(shape, 3, 2.f), S = randomF({C}, 4), B = randomF({C}, 5),
           M = randomF({C}, 6);
    Tensor V = randomF({C}, 7);
    for (int64_t c = 0; c < C; ++c)
      V.f()[c] = std::fabs(V.f()[c]) + 0.1f;
    int64_t inner = numel(shape) / (shape[0] * C);
    std::vector<float> want(numel(shape));
    for (int64_t i = 0; i < numel(shape); ++i) {
      int64_t c = i / inner % C;
      want[i] =
          float((X.f()[i] - M.f()[c]) / std::sqrt(double(V.f()[c]) + 1e-4) * S.f()[c] + B.f()[c]);
    }
    Tensor Y(ElementType::Float, shape);
    EXPECT_OK(run("BatchNormalization", Attrs().f("epsilon", 1e-4f), {&X, &S, &B, &M, &V}, {&Y}));
    EXPECT_TRUE(near(Y.floats(), want, 1e-4)) << shapeToString(shape);

    if (shape.size() < 3)
      continue;
    std::vector<float> inst(numel(shape));
    for (int64_t p = 0; p < shape[0] * C; ++p) {
      double s = 0, q = 0;
      for (int64_t i = 0; i < inner; ++i)
        s += X.f()[p * inner + i];
      double m = s / inner;
      for (int64_t i = 0; i < inner; ++i)
        q += (X.f()[p * inner + i] - m) * (X.f()[p * inner + i] - m);
      for (int64_t i = 0; i < inner; ++i)
        inst[p * inner + i] = float(
            (X.f()[p * inner + i] - m) / std::sqrt(q / inner + 1e-5) * S.f()[p % C] + B.f()[p % C]);
    }
    EXPECT_OK(run("InstanceNormalization", {}, {&X, &S, &B}, {&Y}));
    EXPECT_TRUE(near(Y.floats(), inst, 1e-4)) << shapeToString(shape);
  }
  Tensor X = randomF({2, 3, 4}, 1), S = randomF({4}, 2), Y(ElementType::Float, {2, 3, 4});
  EXPECT_INVALID(run("BatchNormalization", {}, {&X, &S, &S, &S, &S}, {&Y}), "scale");
  Tensor S3 = randomF({3}, 2);
  EXPECT_INVALID(
      run("BatchNormalization", Attrs().i("training_mode", 2), {&X, &S3, &S3, &S3, &S3}, {&Y}),
      "training_mode");
}

/// Attention's result in double: softmax(q k^T * scale + mask) v, over the
/// [lead..., S, D] shapes of q, k, v (the mask broadcasting to the scores).
std::vector<float> attentionReference(const Tensor &Q, const Tensor &K, const Tensor &V,
                                      const Tensor *mask, float scale) {
  size_t rank = Q.shape.size();
  std::vector<int64_t> lead(Q.shape.begin(), Q.shape.end() - 2);
  int64_t Sq = Q.shape[rank - 2], D = Q.shape[rank - 1], Sk = K.shape[rank - 2],
          Dv = V.shape[rank - 1], batch = numel(lead);
  std::vector<int64_t> scoreShape = lead;
  scoreShape.push_back(Sq);
  scoreShape.push_back(Sk);
  std::vector<float> want(batch * Sq * Dv);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t i = 0; i < Sq; ++i) {
      std::vector<double> s(Sk);
      double m = -INFINITY, z = 0;
      for (int64_t j = 0; j < Sk; ++j) {
        double acc = 0;
        for (int64_t d = 0; d < D; ++d)
          acc += double(Q.f()[(b * Sq + i) * D + d]) * K.f()[(b * Sk + j) * D + d];
        s[j] = acc * scale;
        if (mask)
          s[j] +=
              mask->f()[broadcastIndex(unravel((b * Sq + i) * Sk + j, scoreShape), mask->shape)];
        m = std::max(m, s[j]);
      }
      for (double &v : s)
        z += v = std::exp(v - m);
      for (int64_t e = 0; e < Dv; ++e) {
        double acc = 0;
        for (int64_t j = 0; j < Sk; ++j)
          acc += s[j] / z * V.f()[(b * Sk + j) * Dv + e];
        want[(b * Sq + i) * Dv + e] = float(acc);
      }
    }
  return want;
}

TEST(LibraryKernels, Attention) {
  struct Case {
    std::vector<int64_t> lead;
    int64_t Sq, Sk, D, Dv;
    std::vector<int64_t> mask; // {-1}: none
    float scale;               // 0: default 1/sqrt(D)
  };
  std::vector<Case> cases = {
      {{}, 4, 6, 8, 8, {-1}, 0.f},
      {{2, 3}, 5, 7, 16, 12, {-1}, 0.3f},
      {{2, 3}, 5, 7, 16, 12, {5, 7}, 0.3f},
      {{2, 3}, 5, 7, 16, 12, {2, 1, 1, 7}, 0.f},
      {{2, 3}, 5, 7, 16, 12, {2, 3, 5, 7}, 0.f},
      {{2}, 1, 33, 5, 3, {1, 33}, 1.f},
      {{1, 2}, 40, 7000, 8, 4, {40, 7000}, 0.f}, // two query chunks
  };
  uint64_t seed = 60;
  for (const Case &c : cases) {
    auto shp = [&](int64_t a, int64_t b) {
      std::vector<int64_t> s = c.lead;
      s.push_back(a);
      s.push_back(b);
      return s;
    };
    Tensor Q = randomF(shp(c.Sq, c.D), seed++), K = randomF(shp(c.Sk, c.D), seed++),
           V = randomF(shp(c.Sk, c.Dv), seed++);
    bool hasMask = !(c.mask.size() == 1 && c.mask[0] == -1);
    Tensor Mk = hasMask ? randomF(c.mask, seed++, 3.f) : Tensor();
    float scale = c.scale == 0.f ? 1.f / std::sqrt(float(c.D)) : c.scale;
    std::vector<float> want = attentionReference(Q, K, V, hasMask ? &Mk : nullptr, scale);
    Attrs at;
    if (c.scale != 0.f)
      at.f("scale", c.scale);
    // On every variant this CPU runs (AVX-512: q's and the probabilities'
    // rows read in place, the row's softmax in one pass each), serially and
    // on 3 threads: heads shared out, or a head's query rows when there are
    // fewer heads than threads.
    ThreadPool three(3);
    for (const char *variant : {"generic", "avx2", "avx512"}) {
      if (!setSgemmVariant(variant))
        continue;
      for (ThreadPool *on : {(ThreadPool *)nullptr, &three}) {
        Tensor O(ElementType::Float, shp(c.Sq, c.Dv));
        EXPECT_OK(run("Attention", at, {&Q, &K, &V, hasMask ? &Mk : nullptr}, {&O}, on));
        EXPECT_TRUE(near(O.floats(), want, 1e-4))
            << "lead " << shapeToString(c.lead) << " mask " << shapeToString(c.mask) << " "
            << variant << (on ? " pool" : "");
      }
    }
    setSgemmVariant(nullptr);
  }
  // A fully masked query row (all scores -inf): NaN as Softmax gives it,
  // or 0 with nan_to_zero (torch's SDPA guard); the other rows unchanged.
  {
    Tensor Q = randomF({2, 3, 8}, 70), K = randomF({2, 5, 8}, 71), V = randomF({2, 5, 4}, 72);
    Tensor Mk(ElementType::Float, {3, 5});
    for (int64_t j = 0; j < 15; ++j)
      Mk.f()[j] = j / 5 == 1 ? -INFINITY : 0.f;
    for (const char *variant : {"generic", "avx2", "avx512"}) {
      if (!setSgemmVariant(variant))
        continue;
      Tensor plain(ElementType::Float, {2, 3, 4}), guarded(ElementType::Float, {2, 3, 4});
      EXPECT_OK(run("Attention", {}, {&Q, &K, &V, &Mk}, {&plain}));
      EXPECT_OK(run("Attention", Attrs().i("nan_to_zero", 1), {&Q, &K, &V, &Mk}, {&guarded}));
      for (int64_t i = 0; i < 24; ++i) {
        bool masked = i / 4 % 3 == 1;
        EXPECT_EQ(std::isnan(plain.f()[i]), masked) << variant << " " << i;
        if (masked)
          EXPECT_EQ(guarded.f()[i], 0.f) << variant << " " << i;
        else
          EXPECT_EQ(guarded.f()[i], plain.f()[i]) << variant << " " << i;
      }
    }
    setSgemmVariant(nullptr);
  }
  // sequence_first: q, k, v and the output [B, S, H, D] give the
  // heads-first result transposed, exactly (the same products per head).
  {
    auto swap12 = [](const Tensor &t) { return permuted4(t, {0, 2, 1, 3}); };
    ThreadPool three(3);
    // [B, H, Sq, D], Sk, Dv, mask (heads-first scores' shape)
    struct SeqCase {
      std::vector<int64_t> q;
      int64_t Sk, Dv;
      std::vector<int64_t> mask;
    };
    for (const SeqCase &c : std::vector<SeqCase>{{{2, 3, 5, 8}, 7, 4, {2, 1, 5, 7}},
                                                 {{1, 4, 33, 16}, 33, 16, {1, 1, 33, 33}},
                                                 {{1, 1, 9, 8}, 6, 8, {}}}) {
      Tensor Qh = randomF(c.q, 90), Kh = randomF({c.q[0], c.q[1], c.Sk, c.q[3]}, 91),
             Vh = randomF({c.q[0], c.q[1], c.Sk, c.Dv}, 92);
      Tensor Mk = c.mask.empty() ? Tensor() : randomF(c.mask, 93, 3.f);
      if (!c.mask.empty())
        Mk.f()[0] = -INFINITY;
      const Tensor *mk = c.mask.empty() ? nullptr : &Mk;
      Attrs at = Attrs().i("nan_to_zero", 1).f("scale", 0.2f);
      Tensor Oh(ElementType::Float, {c.q[0], c.q[1], c.q[2], c.Dv});
      ASSERT_OK(run("Attention", at, {&Qh, &Kh, &Vh, mk}, {&Oh}));
      Tensor Qs = swap12(Qh), Ks = swap12(Kh), Vs = swap12(Vh), want = swap12(Oh);
      Attrs seq = at;
      seq.i("sequence_first", 1);
      for (const char *variant : {"generic", "avx2", "avx512"}) {
        if (!setSgemmVariant(variant))
          continue;
        for (ThreadPool *on : {(ThreadPool *)nullptr, &three}) {
          Tensor Os(ElementType::Float, want.shape);
          ASSERT_OK(run("Attention", seq, {&Qs, &Ks, &Vs, mk}, {&Os}, on));
          EXPECT_TRUE(near(Os.floats(), want.floats(), 1e-5))
              << "q " << shapeToString(c.q) << " " << variant << (on ? " pool" : "");
        }
      }
      setSgemmVariant(nullptr);
    }
    Tensor Q3 = randomF({2, 4, 8}, 1), O3(ElementType::Float, {2, 4, 8});
    EXPECT_INVALID(run("Attention", Attrs().i("sequence_first", 1), {&Q3, &Q3, &Q3}, {&O3}),
                   "sequence_first");
  }
  Tensor Q = randomF({2, 4, 8}, 1), K = randomF({3, 4, 8}, 2), O(ElementType::Float, {2, 4, 8});
  EXPECT_INVALID(run("Attention", {}, {&Q, &K, &K}, {&O}), "leading dims");
  Tensor K2 = randomF({2, 4, 8}, 2), Mk = randomF({3, 4}, 3);
  EXPECT_INVALID(run("Attention", {}, {&Q, &K2, &K2, &Mk}, {&O}), "mask");
}

// Keys a mask drops at the end of a query row (-inf or float's lowest, as
// causal and padding masks write them) are left out of both products: the
// result is the reference's, and a key no row of a chunk keeps is never read
// (a NaN in its value stays out of those rows, where the whole product
// would carry it as 0 * NaN).
TEST(LibraryKernels, AttentionSkipsDroppedKeys) {
  const int64_t S = 100, D = 16, Dv = 8;
  Tensor Q = randomF({2, 3, S, D}, 80), K = randomF({2, 3, S, D}, 81),
         V = randomF({2, 3, S, Dv}, 82);
  auto causal = [&](float dropped) {
    Tensor Mk = zeros({S, S});
    for (int64_t i = 0; i < S; ++i)
      for (int64_t j = i + 1; j < S; ++j)
        Mk.f()[i * S + j] = dropped;
    return Mk;
  };
  // Padding: batch 1 drops its last 30 keys, batch 0 none.
  Tensor padding = zeros({2, 1, 1, S});
  for (int64_t j = S - 30; j < S; ++j)
    padding.f()[S + j] = -INFINITY;
  ThreadPool three(3);
  float scale = 1.f / std::sqrt(float(D));
  for (const Tensor &Mk :
       {causal(-INFINITY), causal(std::numeric_limits<float>::lowest()), padding}) {
    std::vector<float> want = attentionReference(Q, K, V, &Mk, scale);
    Tensor Vnan = V;
    for (int64_t b = 0; b < 6; ++b)
      for (int64_t e = 0; e < Dv; ++e)
        Vnan.f()[(b * S + S - 1) * Dv + e] = NAN;
    for (const char *variant : {"generic", "avx2", "avx512"}) {
      if (!setSgemmVariant(variant))
        continue;
      for (ThreadPool *on : {(ThreadPool *)nullptr, &three}) {
        Tensor O(ElementType::Float, {2, 3, S, Dv}), On(ElementType::Float, {2, 3, S, Dv});
        EXPECT_OK(run("Attention", {}, {&Q, &K, &V, &Mk}, {&O}, on));
        EXPECT_TRUE(near(O.floats(), want, 1e-4))
            << "mask " << shapeToString(Mk.shape) << " " << variant << (on ? " pool" : "");
        EXPECT_OK(run("Attention", {}, {&Q, &K, &Vnan, &Mk}, {&On}, on));
        // Causal: the first half of the query rows never read the last key.
        // Padding: no row of batch 1 reads it; every row of batch 0 does.
        bool isCausal = Mk.shape.size() == 2;
        for (int64_t b = 0; b < 6; ++b)
          for (int64_t i = 0; i < S; ++i) {
            bool readsLastKey = isCausal ? i >= S / 2 : b < 3;
            if (readsLastKey)
              continue;
            for (int64_t e = 0; e < Dv; ++e) {
              int64_t at = (b * S + i) * Dv + e;
              ASSERT_EQ(On.f()[at], O.f()[at]) << "mask " << shapeToString(Mk.shape) << " "
                                               << variant << " head " << b << " row " << i;
            }
          }
      }
    }
    setSgemmVariant(nullptr);
  }
}

//===----------------------------------------------------------------------===//
// Data movement
//===----------------------------------------------------------------------===//

/// Element-wise copy through an index function, for any element size.
Tensor refGather(ElementType type, const std::vector<int64_t> &outShape, const Tensor &X,
                 const std::function<int64_t(const std::vector<int64_t> &)> &srcIndex) {
  Tensor Y(type, outShape);
  size_t e = elementSize(type);
  for (int64_t i = 0; i < numel(outShape); ++i) {
    int64_t s = srcIndex(unravel(i, outShape));
    std::memcpy(Y.bytes.data() + i * e, X.bytes.data() + s * e, e);
  }
  return Y;
}

const ElementType kTypes[] = {ElementType::Float, ElementType::Int64, ElementType::UInt8,
                              ElementType::Float16, ElementType::Int32};

TEST(LibraryKernels, Transpose) {
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> cases = {
      {{3, 4}, {1, 0}},
      {{2, 3, 4}, {0, 2, 1}},
      {{2, 3, 4}, {2, 0, 1}},
      {{2, 3, 4, 5}, {0, 2, 3, 1}},
      {{2, 3, 4, 5}, {3, 1, 0, 2}},
      {{2, 1, 4, 1}, {3, 2, 1, 0}},
      {{5}, {0}},
      {{2, 3, 4}, {}},
      // Matrix transposes (NCHW <-> NHWC) across 16x16 blocks, on a pool.
      {{3, 19, 37}, {0, 2, 1}},
      {{2, 3, 40, 41}, {0, 2, 3, 1}},
      {{2, 33, 7, 35}, {0, 3, 1, 2}},
  };
  ThreadPool pool(2);
  for (ElementType type : kTypes)
    for (auto &[shape, perm] : cases) {
      Tensor X = iota(type, shape);
      std::vector<int64_t> p = perm;
      if (p.empty())
        for (size_t i = shape.size(); i-- > 0;)
          p.push_back(int64_t(i));
      std::vector<int64_t> outShape;
      for (int64_t a : p)
        outShape.push_back(shape[a]);
      Tensor want = refGather(type, outShape, X, [&](const std::vector<int64_t> &o) {
        std::vector<int64_t> in(shape.size());
        for (size_t i = 0; i < p.size(); ++i)
          in[p[i]] = o[i];
        return ravel(in, shape);
      });
      Tensor Y(type, outShape);
      Attrs at;
      if (!perm.empty())
        at.is("perm", perm);
      for (ThreadPool *on : {(ThreadPool *)nullptr, &pool}) {
        EXPECT_OK(run("Transpose", at, {&X}, {&Y}, on));
        EXPECT_EQ(Y.bytes, want.bytes)
            << shapeToString(shape) << " perm " << shapeToString(perm) << (on ? " pool" : "");
      }
    }
  Tensor X = iota(ElementType::Float, {2, 3}), Y(ElementType::Float, {3, 2});
  EXPECT_INVALID(run("Transpose", Attrs().is("perm", {0, 0}), {&X}, {&Y}), "permutation");
  Tensor Yi(ElementType::Int64, {3, 2});
  EXPECT_INVALID(run("Transpose", {}, {&X}, {&Yi}), "type");
}

TEST(LibraryKernels, ConcatAndSplit) {
  for (ElementType type : {ElementType::Float, ElementType::Int64, ElementType::UInt8}) {
    for (int64_t axis : {0, 1, 2, -1, -3}) {
      std::vector<std::vector<int64_t>> shapes;
      int64_t a = axis < 0 ? axis + 3 : axis;
      std::vector<int64_t> sizes = {2, 0, 3, 1};
      for (int64_t s : sizes) {
        std::vector<int64_t> sh = {2, 3, 4};
        sh[a] = s;
        shapes.push_back(sh);
      }
      std::vector<Tensor> ins;
      for (size_t i = 0; i < shapes.size(); ++i) {
        ins.push_back(iota(type, shapes[i]));
        std::vector<uint8_t> &raw = ins.back().bytes;
        for (size_t k = 0; k < ins.back().payload(); ++k)
          raw[k] = uint8_t(raw[k] + 40 * i);
      }
      std::vector<int64_t> outShape = {2, 3, 4};
      outShape[a] = 6;
      Tensor Y(type, outShape);
      size_t e = elementSize(type);
      Tensor want(type, outShape);
      for (int64_t i = 0; i < numel(outShape); ++i) {
        std::vector<int64_t> idx = unravel(i, outShape);
        size_t which = 0;
        while (idx[a] >= shapes[which][a]) {
          idx[a] -= shapes[which][a];
          ++which;
        }
        std::memcpy(want.bytes.data() + i * e,
                    ins[which].bytes.data() + ravel(idx, shapes[which]) * e, e);
      }
      std::vector<const Tensor *> in;
      for (Tensor &t : ins)
        in.push_back(&t);
      EXPECT_OK(run("Concat", Attrs().i("axis", axis), in, {&Y}));
      EXPECT_EQ(Y.bytes, want.bytes) << "axis " << axis;

      std::vector<Tensor> outs;
      for (auto &sh : shapes)
        outs.emplace_back(type, sh);
      std::vector<Tensor *> out;
      for (Tensor &t : outs)
        out.push_back(&t);
      EXPECT_OK(run("Split", Attrs().i("axis", axis), {&Y}, out));
      for (size_t i = 0; i < outs.size(); ++i)
        EXPECT_EQ(outs[i].bytes, ins[i].bytes) << "split axis " << axis << " part " << i;
    }
  }
  Tensor A = iota(ElementType::Float, {2, 3}), B = iota(ElementType::Float, {3, 3}),
         Y(ElementType::Float, {5, 4});
  EXPECT_INVALID(run("Concat", Attrs().i("axis", 0), {&A, &B}, {&Y}), "does not fit");
  Tensor P(ElementType::Float, {1, 3}), Q(ElementType::Float, {2, 3});
  EXPECT_INVALID(run("Split", Attrs().i("axis", 0), {&A}, {&P, &Q}), "add up");
}

/// ONNX Slice on one axis, by the spec's definition.
std::vector<int64_t> refSliceIndices(int64_t dim, int64_t start, int64_t end, int64_t step) {
  std::vector<int64_t> r;
  if (start < 0)
    start += dim;
  if (end < 0)
    end += dim;
  if (step > 0) {
    start = std::max<int64_t>(0, std::min(start, dim));
    end = std::max<int64_t>(0, std::min(end, dim));
    for (int64_t i = start; i < end; i += step)
      r.push_back(i);
  } else {
    start = std::max<int64_t>(0, std::min(start, dim - 1));
    end = std::max<int64_t>(-1, std::min(end, dim - 1));
    for (int64_t i = start; i > end; i += step)
      r.push_back(i);
  }
  return r;
}

TEST(LibraryKernels, Slice) {
  const int64_t kMax = std::numeric_limits<int64_t>::max();
  const int64_t kMin = std::numeric_limits<int64_t>::min();
  struct Case {
    std::vector<int64_t> shape, starts, ends, axes, steps; // axes/steps {} = omitted
  };
  std::vector<Case> cases = {
      {{10}, {2}, {7}, {}, {}},
      {{10}, {-3}, {kMax}, {}, {}},
      {{10}, {8}, {1}, {0}, {-2}},
      {{10}, {kMax}, {kMin}, {0}, {-1}},
      {{10}, {-1}, {-11}, {}, {-3}},
      {{10}, {5}, {2}, {}, {}},
      {{10}, {20}, {30}, {}, {}},
      {{4, 5, 6}, {1, -1}, {3, 0}, {0, 2}, {1, -2}},
      {{4, 5, 6}, {0, 0, 0}, {4, 5, 6}, {2, 1, 0}, {3, 2, 1}},
      {{4, 5, 6}, {-100}, {100}, {-2}, {4}},
      {{3, 4, 5, 2}, {2, 1}, {-4, 3}, {0, -2}, {-1, 1}},
      {{3, 4}, {0}, {0}, {1}, {1}},
  };
  for (const Case &c : cases)
    for (bool i32 : {false, true}) {
      if (i32 && (c.starts[0] == kMax || c.ends[0] == kMax))
        continue;
      Tensor X = iota(ElementType::Int64, c.shape);
      std::vector<int64_t> axes = c.axes, steps = c.steps;
      if (axes.empty())
        for (size_t i = 0; i < c.starts.size(); ++i)
          axes.push_back(int64_t(i));
      if (steps.empty())
        steps.assign(c.starts.size(), 1);
      std::vector<std::vector<int64_t>> picks(c.shape.size());
      for (size_t d = 0; d < c.shape.size(); ++d)
        for (int64_t i = 0; i < c.shape[d]; ++i)
          picks[d].push_back(i);
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t a = axes[i] < 0 ? axes[i] + int64_t(c.shape.size()) : axes[i];
        picks[a] = refSliceIndices(c.shape[a], c.starts[i], c.ends[i], steps[i]);
      }
      std::vector<int64_t> outShape;
      for (auto &p : picks)
        outShape.push_back(int64_t(p.size()));
      Tensor want = refGather(ElementType::Int64, outShape, X, [&](const std::vector<int64_t> &o) {
        std::vector<int64_t> in(o.size());
        for (size_t d = 0; d < o.size(); ++d)
          in[d] = picks[d][o[d]];
        return ravel(in, c.shape);
      });
      auto mk = [&](const std::vector<int64_t> &v) {
        if (!i32)
          return I64(v);
        std::vector<int32_t> w;
        for (int64_t x : v)
          w.push_back(int32_t(std::max<int64_t>(INT32_MIN, std::min<int64_t>(INT32_MAX, x))));
        return I32(w);
      };
      Tensor S = mk(c.starts), E = mk(c.ends), A = mk(c.axes), St = mk(c.steps);
      Tensor Y(ElementType::Int64, outShape);
      EXPECT_OK(run("Slice", {},
                    {&X, &S, &E, c.axes.empty() ? nullptr : &A, c.steps.empty() ? nullptr : &St},
                    {&Y}));
      EXPECT_EQ(Y.values<int64_t>(), want.values<int64_t>())
          << shapeToString(c.shape) << " starts " << shapeToString(c.starts) << " i32 " << i32;
    }
  // Hand-computed: reversed with step -2.
  Tensor X = F({6}, {0, 1, 2, 3, 4, 5}), Y(ElementType::Float, {3});
  Tensor S = I64({-1}), E = I64({kMin}), A = I64({0}), St = I64({-2});
  EXPECT_OK(run("Slice", {}, {&X, &S, &E, &A, &St}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {5, 3, 1}));
  Tensor Z = I64({0});
  EXPECT_INVALID(run("Slice", {}, {&X, &S, &E, &A, &Z}, {&Y}), "step 0");
  Tensor Y2(ElementType::Float, {2});
  EXPECT_INVALID(run("Slice", {}, {&X, &S, &E, &A, &St}, {&Y2}), "output shape");
}

TEST(LibraryKernels, Gather) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
    std::vector<int64_t> idxShape, idx;
  };
  std::vector<Case> cases = {
      {{5, 3}, 0, {4}, {0, 4, -1, -5}},       {{5, 3}, 1, {2, 2}, {2, -3, 0, 1}},
      {{2, 3, 4}, -1, {3}, {3, -4, 1}},       {{2, 3, 4}, 1, {}, {-2}},
      {{7}, 0, {2, 3}, {6, 5, 4, -1, -2, 0}}, {{4, 2}, 0, {0}, {}},
  };
  for (ElementType type : kTypes)
    for (const Case &c : cases)
      for (bool i32 : {false, true}) {
        Tensor X = iota(type, c.shape);
        Tensor I;
        if (i32) {
          I = Tensor(ElementType::Int32, c.idxShape);
          for (size_t i = 0; i < c.idx.size(); ++i)
            I.data<int32_t>()[i] = int32_t(c.idx[i]);
        } else {
          I = I64(c.idxShape, c.idx);
        }
        int64_t a = c.axis < 0 ? c.axis + int64_t(c.shape.size()) : c.axis;
        std::vector<int64_t> outShape(c.shape.begin(), c.shape.begin() + a);
        outShape.insert(outShape.end(), c.idxShape.begin(), c.idxShape.end());
        outShape.insert(outShape.end(), c.shape.begin() + a + 1, c.shape.end());
        Tensor want = refGather(type, outShape, X, [&](const std::vector<int64_t> &o) {
          std::vector<int64_t> in(o.begin(), o.begin() + a);
          std::vector<int64_t> ii(o.begin() + a, o.begin() + a + c.idxShape.size());
          int64_t v = c.idx[ravel(ii, c.idxShape)];
          in.push_back(v < 0 ? v + c.shape[a] : v);
          in.insert(in.end(), o.begin() + a + c.idxShape.size(), o.end());
          return ravel(in, c.shape);
        });
        Tensor Y(type, outShape);
        EXPECT_OK(run("Gather", Attrs().i("axis", c.axis), {&X, &I}, {&Y}));
        EXPECT_EQ(Y.bytes, want.bytes) << shapeToString(c.shape) << " axis " << c.axis;
      }
  Tensor X = iota(ElementType::Float, {5, 3}), Y(ElementType::Float, {2, 3});
  Tensor bad = I64({1, 5}), neg = I64({-6, 0});
  EXPECT_INVALID(run("Gather", {}, {&X, &bad}, {&Y}), "index 5 is out of range");
  EXPECT_INVALID(run("Gather", {}, {&X, &neg}, {&Y}), "index -6 is out of range");
  Tensor fl = F({2}, {0, 1});
  EXPECT_INVALID(run("Gather", {}, {&X, &fl}, {&Y}), "int32 or int64");
}

TEST(LibraryKernels, ExpandAndTile) {
  struct Case {
    std::vector<int64_t> in, shape;
  };
  std::vector<Case> cases = {
      {{3, 1}, {2, 3, 4}},    {{1}, {5}},       {{2, 3}, {2, 3}},       {{4}, {3, 1, 4}},
      {{2, 1, 3}, {1, 4, 1}}, {{1, 1}, {2, 1}}, {{3, 1, 1}, {3, 2, 5}},
  };
  for (ElementType type : kTypes)
    for (const Case &c : cases) {
      Tensor X = iota(type, c.in), S = I64(c.shape);
      size_t r = std::max(c.in.size(), c.shape.size());
      std::vector<int64_t> outShape(r);
      for (size_t i = 0; i < r; ++i) {
        int64_t a = i + c.in.size() >= r ? c.in[i + c.in.size() - r] : 1;
        int64_t b = i + c.shape.size() >= r ? c.shape[i + c.shape.size() - r] : 1;
        outShape[i] = std::max(a, b);
      }
      Tensor want = refGather(type, outShape, X, [&](const std::vector<int64_t> &o) {
        return broadcastIndex(o, c.in);
      });
      Tensor Y(type, outShape);
      EXPECT_OK(run("Expand", {}, {&X, &S}, {&Y}));
      EXPECT_EQ(Y.bytes, want.bytes) << shapeToString(c.in) << " -> " << shapeToString(c.shape);
    }
  std::vector<std::pair<std::vector<int64_t>, std::vector<int64_t>>> tiles = {
      {{3}, {2}}, {{2, 3}, {2, 2}}, {{2, 3}, {1, 3}}, {{2, 1, 3}, {2, 3, 1}}, {{2, 2}, {0, 2}},
  };
  for (ElementType type : kTypes)
    for (auto &[in, rep] : tiles) {
      Tensor X = iota(type, in), R = I64(rep);
      std::vector<int64_t> outShape;
      for (size_t i = 0; i < in.size(); ++i)
        outShape.push_back(in[i] * rep[i]);
      Tensor want = refGather(type, outShape, X, [&](const std::vector<int64_t> &o) {
        std::vector<int64_t> ii(o.size());
        for (size_t d = 0; d < o.size(); ++d)
          ii[d] = o[d] % in[d];
        return ravel(ii, in);
      });
      Tensor Y(type, outShape);
      EXPECT_OK(run("Tile", {}, {&X, &R}, {&Y}));
      EXPECT_EQ(Y.bytes, want.bytes) << shapeToString(in) << " x " << shapeToString(rep);
    }
  Tensor X = iota(ElementType::Float, {2, 3}), S = I64({4, 3}), Y(ElementType::Float, {4, 3});
  EXPECT_INVALID(run("Expand", {}, {&X, &S}, {&Y}), "broadcast");
}

TEST(LibraryKernels, Pad) {
  struct Case {
    std::vector<int64_t> shape, pads, axes; // axes {} = all
    std::string mode;
  };
  std::vector<Case> cases = {
      {{3, 4}, {1, 2, 2, 1}, {}, "constant"},
      {{3, 4}, {1, 2, 2, 1}, {}, "reflect"},
      {{3, 4}, {1, 2, 2, 1}, {}, "edge"},
      {{3, 4}, {4, 5, 3, 6}, {}, "wrap"},
      {{3, 4}, {2, 3, 2, 3}, {}, "reflect"},
      {{3, 4}, {5, 7, 6, 4}, {}, "reflect"},
      {{2, 3, 4}, {1, -1}, {-1}, "constant"},
      {{2, 3, 4}, {-1, 0, 2, 0, 1, -2}, {}, "constant"},
      {{2, 3, 4}, {2, 1, 1, 0}, {0, 2}, "edge"},
      {{1, 5}, {0, 3, 0, 3}, {}, "reflect"},
      {{4}, {0, 0}, {}, "reflect"},
      {{1, 1}, {2, 2, 2, 2}, {}, "reflect"},
  };
  for (ElementType type : {ElementType::Float, ElementType::Int64, ElementType::UInt8})
    for (const Case &c : cases) {
      size_t r = c.shape.size();
      std::vector<int64_t> axes = c.axes;
      if (axes.empty())
        for (size_t i = 0; i < r; ++i)
          axes.push_back(int64_t(i));
      std::vector<int64_t> b(r, 0), e(r, 0);
      for (size_t i = 0; i < axes.size(); ++i) {
        int64_t a = axes[i] < 0 ? axes[i] + int64_t(r) : axes[i];
        b[a] = c.pads[i];
        e[a] = c.pads[i + axes.size()];
      }
      std::vector<int64_t> outShape(r);
      for (size_t i = 0; i < r; ++i)
        outShape[i] = c.shape[i] + b[i] + e[i];
      Tensor X = iota(type, c.shape);
      // Append the constant as one extra element so refGather can point at it.
      Tensor Xc = X;
      size_t es = elementSize(type);
      Xc.bytes.resize(size_t(numel(c.shape) + 1) * es);
      std::memset(Xc.bytes.data() + numel(c.shape) * es, 0x5A, es);
      Tensor CV(type, {});
      std::memset(CV.bytes.data(), 0x5A, es);
      Tensor want = refGather(type, outShape, Xc, [&](const std::vector<int64_t> &o) {
        std::vector<int64_t> in(r);
        for (size_t d = 0; d < r; ++d) {
          int64_t i = o[d] - b[d], n = c.shape[d];
          if (i < 0 || i >= n) {
            if (c.mode == "constant")
              return numel(c.shape);
            if (c.mode == "edge")
              i = i < 0 ? 0 : n - 1;
            else if (c.mode == "wrap")
              i = ((i % n) + n) % n;
            else // reflect, by repeated mirroring
              while (i < 0 || i >= n) {
                if (n == 1) {
                  i = 0;
                  break;
                }
                i = i < 0 ? -i : 2 * (n - 1) - i;
              }
          }
          in[d] = i;
        }
        return ravel(in, c.shape);
      });
      Tensor P = I64(c.pads), A = I64(c.axes), Y(type, outShape);
      EXPECT_OK(run("Pad", Attrs().s("mode", c.mode),
                    {&X, &P, c.mode == "constant" ? &CV : nullptr, c.axes.empty() ? nullptr : &A},
                    {&Y}));
      EXPECT_EQ(Y.bytes, want.bytes)
          << shapeToString(c.shape) << " pads " << shapeToString(c.pads) << " " << c.mode;
    }
  // Hand-computed reflect and default constant 0.
  Tensor X = F({3}, {1, 2, 3}), P = I64({2, 2}), Y(ElementType::Float, {7});
  EXPECT_OK(run("Pad", Attrs().s("mode", "reflect"), {&X, &P}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {3, 2, 1, 2, 3, 2, 1}));
  EXPECT_OK(run("Pad", {}, {&X, &P}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {0, 0, 1, 2, 3, 0, 0}));
  EXPECT_INVALID(run("Pad", Attrs().s("mode", "mirror"), {&X, &P}, {&Y}), "mode");
  Tensor Y6(ElementType::Float, {6});
  EXPECT_INVALID(run("Pad", {}, {&X, &P}, {&Y6}), "output shape");
}

/// ONNX Resize (nearest) for one output coordinate, in double as the spec
/// writes it, then rounded and clamped.
int64_t refNearest(int64_t x, int64_t in, int64_t out, double scale, const std::string &ctm,
                   const std::string &nm) {
  double o;
  if (ctm == "half_pixel")
    o = (x + 0.5) / scale - 0.5;
  else if (ctm == "asymmetric")
    o = x / scale;
  else if (ctm == "pytorch_half_pixel")
    o = out > 1 ? (x + 0.5) / scale - 0.5 : 0;
  else if (ctm == "tf_half_pixel_for_nn")
    o = (x + 0.5) / scale;
  else
    o = out == 1 ? 0 : double(x) * (in - 1) / (out - 1);
  int64_t i;
  if (nm == "floor")
    i = int64_t(std::floor(o));
  else if (nm == "ceil")
    i = int64_t(std::ceil(o));
  else if (o - std::floor(o) == 0.5)
    i = int64_t(nm == "round_prefer_floor" ? std::floor(o) : std::ceil(o));
  else
    i = int64_t(std::round(o));
  return std::max<int64_t>(0, std::min(i, in - 1));
}

TEST(LibraryKernels, ResizeNearest) {
  const char *ctms[] = {"half_pixel", "asymmetric", "align_corners", "pytorch_half_pixel",
                        "tf_half_pixel_for_nn"};
  const char *nms[] = {"round_prefer_floor", "round_prefer_ceil", "floor", "ceil"};
  struct Case {
    std::vector<int64_t> in;
    std::vector<float> scales;  // {} = use sizes
    std::vector<int64_t> sizes; // {} = use scales
  };
  std::vector<Case> cases = {
      {{1, 2, 3, 4}, {1, 1, 2, 2}, {}},    {{1, 1, 4, 6}, {1, 1, 0.5f, 0.5f}, {}},
      {{2, 1, 3, 5}, {1, 1, 3, 1.5f}, {}}, {{1, 1, 5, 4}, {}, {1, 1, 7, 3}},
      {{1, 1, 6, 6}, {}, {1, 1, 1, 4}},    {{3, 4}, {}, {5, 2}},
      {{2, 3, 4}, {1, 2.5f, 0.75f}, {}},   {{1, 2, 2, 3, 2}, {1, 1, 2, 1, 3}, {}},
  };
  for (const Case &c : cases)
    for (const char *ctm : ctms)
      for (const char *nm : nms) {
        size_t r = c.in.size();
        std::vector<int64_t> out(r);
        std::vector<double> scale(r);
        for (size_t d = 0; d < r; ++d) {
          if (c.sizes.empty()) {
            out[d] = int64_t(std::floor(c.in[d] * double(c.scales[d])));
            scale[d] = c.scales[d];
          } else {
            out[d] = c.sizes[d];
            scale[d] = double(out[d]) / c.in[d];
          }
        }
        Tensor X = iota(ElementType::Float, c.in);
        Tensor want = refGather(ElementType::Float, out, X, [&](const std::vector<int64_t> &o) {
          std::vector<int64_t> in(r);
          for (size_t d = 0; d < r; ++d)
            in[d] = refNearest(o[d], c.in[d], out[d], scale[d], ctm, nm);
          return ravel(in, c.in);
        });
        Tensor S(ElementType::Float, {int64_t(c.scales.size())});
        std::copy(c.scales.begin(), c.scales.end(), S.f());
        Tensor Z = I64(c.sizes), Y(ElementType::Float, out);
        Attrs at = Attrs()
                       .s("mode", "nearest")
                       .s("coordinate_transformation_mode", ctm)
                       .s("nearest_mode", nm);
        EXPECT_OK(run(
            "Resize", at,
            {&X, nullptr, c.scales.empty() ? nullptr : &S, c.sizes.empty() ? nullptr : &Z}, {&Y}));
        EXPECT_EQ(Y.floats(), want.floats())
            << shapeToString(c.in) << " -> " << shapeToString(out) << " " << ctm << " " << nm;
      }
  // Hand-computed: 2x upsampling of [a b] with the defaults (half_pixel,
  // round_prefer_floor): x=1 maps to 0.25 -> 0, x=2 to 0.75 -> 1.
  Tensor X = F({1, 1, 1, 2}, {10, 20}), S = F({4}, {1, 1, 1, 2}),
         Y(ElementType::Float, {1, 1, 1, 4});
  EXPECT_OK(run("Resize", Attrs().s("mode", "nearest"), {&X, nullptr, &S}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {10, 10, 20, 20}));
  // asymmetric + round_prefer_ceil on 3 -> 6: x/2 = 0,0.5,1,1.5,2,2.5 -> 0,1,1,2,2,3->2.
  Tensor X3 = F({3}, {1, 2, 3}), S3 = F({1}, {2}), Y6(ElementType::Float, {6});
  EXPECT_OK(run("Resize",
                Attrs()
                    .s("coordinate_transformation_mode", "asymmetric")
                    .s("nearest_mode", "round_prefer_ceil"),
                {&X3, nullptr, &S3}, {&Y6}));
  EXPECT_TRUE(near(Y6.floats(), {1, 2, 2, 3, 3, 3}));
  // Integer data moves as bytes; axes picks the scaled dims.
  Tensor Xi = iota(ElementType::Int64, {2, 3}), Sa = F({1}, {2}), Yi(ElementType::Int64, {2, 6});
  EXPECT_OK(run("Resize",
                Attrs()
                    .is("axes", {1})
                    .s("coordinate_transformation_mode", "asymmetric")
                    .s("nearest_mode", "floor"),
                {&Xi, nullptr, &Sa}, {&Yi}));
  std::vector<int64_t> xi = Xi.values<int64_t>(), yi = Yi.values<int64_t>();
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_EQ(yi[i], xi[(i / 6) * 3 + (i % 6) / 2]);
  EXPECT_INVALID(run("Resize", Attrs().s("mode", "bilinear"), {&X, nullptr, &S}, {&Y}), "mode");
  EXPECT_INVALID(run("Resize", Attrs().s("coordinate_transformation_mode", "tf_crop_and_resize"),
                     {&X, nullptr, &S}, {&Y}),
                 "coordinate_transformation_mode");
  Tensor Ybad(ElementType::Float, {1, 1, 1, 3});
  EXPECT_INVALID(run("Resize", {}, {&X, nullptr, &S}, {&Ybad}), "output shape");
}

TEST(LibraryKernels, MiscSmallOps) {
  // Windows: periodic Hann of 4 is sin^2(pi n / 4); symmetric Hamming of 3 ends at 25/46 - 21/46.
  Tensor size4 = I64({}, {4}), size3 = I64({}, {3}), H(ElementType::Float, {4}),
         M(ElementType::Float, {3});
  EXPECT_OK(run("HannWindow", {}, {&size4}, {&H}));
  EXPECT_TRUE(near(H.floats(), {0.f, 0.5f, 1.f, 0.5f}, 1e-6f));
  EXPECT_OK(run("HammingWindow", Attrs().i("periodic", 0), {&size3}, {&M}));
  EXPECT_TRUE(near(M.floats(), {4.f / 46.f, 1.f, 4.f / 46.f}, 1e-6f));
  EXPECT_INVALID(run("BlackmanWindow", {}, {&size3}, {&H}), "output shape");

  // NonMaxSuppression: box 1 overlaps box 0 (IoU 0.81), box 2 is apart.
  Tensor boxes = F({1, 3, 4}, {0, 0, 1, 1, 0, 0.1f, 1, 1.1f, 0, 5, 1, 6});
  Tensor scores = F({1, 1, 3}, {0.9f, 0.95f, 0.5f});
  Tensor maxOut = I64({1}, {3}), iou = F({1}, {0.5f});
  Tensor sel(ElementType::Int64, {2, 3});
  EXPECT_OK(run("NonMaxSuppression", {}, {&boxes, &scores, &maxOut, &iou}, {&sel}));
  EXPECT_EQ(sel.values<int64_t>(), (std::vector<int64_t>{0, 0, 1, 0, 0, 2}));
  Tensor wrong(ElementType::Int64, {3, 3});
  EXPECT_INVALID(run("NonMaxSuppression", {}, {&boxes, &scores, &maxOut, &iou}, {&wrong}),
                 "output shape");

  // Compress along an axis and flattened; NonZero in row-major order.
  Tensor data = iota(ElementType::Int32, {3, 2}), cond(ElementType::Bool, {3});
  cond.data<uint8_t>()[1] = cond.data<uint8_t>()[2] = 1;
  Tensor C0(ElementType::Int32, {2, 2}), Cf(ElementType::Int32, {2});
  EXPECT_OK(run("Compress", Attrs().i("axis", 0), {&data, &cond}, {&C0}));
  EXPECT_EQ(C0.values<int32_t>(), (std::vector<int32_t>{17, 24, 31, 38})); // iota: 7i + 3
  EXPECT_OK(run("Compress", {}, {&data, &cond}, {&Cf}));
  EXPECT_EQ(Cf.values<int32_t>(), (std::vector<int32_t>{10, 17}));
  Tensor nz = F({2, 2}, {1.f, -0.f, 0.f, 3.f}), NZ(ElementType::Int64, {2, 2});
  EXPECT_OK(run("NonZero", {}, {&nz}, {&NZ}));
  EXPECT_EQ(NZ.values<int64_t>(), (std::vector<int64_t>{0, 1, 0, 1}));

  // Det of a batch: a permutation (-1), a singular matrix (0), a 2x2 (-2).
  Tensor A = F({3, 2, 2}, {0, 1, 1, 0, 1, 2, 2, 4, 1, 2, 3, 4}), dets(ElementType::Float, {3});
  EXPECT_OK(run("Det", {}, {&A}, {&dets}));
  EXPECT_TRUE(near(dets.floats(), {-1.f, 0.f, -2.f}, 1e-6f));
  Tensor notSquare = F({2, 3}, {1, 2, 3, 4, 5, 6});
  EXPECT_INVALID(run("Det", {}, {&notSquare}, {&dets}), "is not [..., M, M]");

  // ConstantOfShape fills with the value's bits (float32 0 without one).
  Tensor shape = I64({2, 3}), C(ElementType::Float, {2, 3}), Ci(ElementType::Int32, {2, 3});
  float one = 1.f;
  uint32_t oneBits;
  std::memcpy(&oneBits, &one, 4);
  EXPECT_OK(run("ConstantOfShape", Attrs().i("value_bits", oneBits), {&shape}, {&C}));
  EXPECT_EQ(C.floats(), std::vector<float>(6, 1.f));
  EXPECT_OK(run("ConstantOfShape", {}, {&shape}, {&Ci}));
  EXPECT_EQ(Ci.values<int32_t>(), std::vector<int32_t>(6, 0));
  Tensor wrongShape = I64({3, 2});
  EXPECT_INVALID(run("ConstantOfShape", {}, {&wrongShape}, {&C}), "output shape");
  Tensor negative = I64({-1, 3});
  EXPECT_INVALID(run("ConstantOfShape", {}, {&negative}, {&C}), "negative dim");
}

TEST(LibraryKernels, SignalOps) {
  // DFT of the real signal [1, 2, 3, 4] along axis 1: [10, -2+2i, -2, -2-2i].
  Tensor x = F({1, 4, 1}, {1, 2, 3, 4}), full(ElementType::Float, {1, 4, 2}),
         half(ElementType::Float, {1, 3, 2});
  EXPECT_OK(run("DFT", {}, {&x}, {&full}));
  EXPECT_TRUE(near(full.floats(), {10, 0, -2, 2, -2, 0, -2, -2}, 1e-6f));
  EXPECT_OK(run("DFT", Attrs().i("onesided", 1), {&x}, {&half}));
  EXPECT_TRUE(near(half.floats(), {10, 0, -2, 2, -2, 0}, 1e-6f));
  // The inverse brings the spectrum back; irfft from the one-sided half too.
  Tensor back(ElementType::Float, {1, 4, 2}), real(ElementType::Float, {1, 4, 1});
  EXPECT_OK(run("DFT", Attrs().i("inverse", 1), {&full}, {&back}));
  EXPECT_TRUE(near(back.floats(), {1, 0, 2, 0, 3, 0, 4, 0}, 1e-6f));
  EXPECT_OK(run("DFT", Attrs().i("inverse", 1).i("onesided", 1), {&half}, {&real}));
  EXPECT_TRUE(near(real.floats(), {1, 2, 3, 4}, 1e-6f));
  // dft_length pads with zeros; the last axis is refused.
  Tensor len8 = I64({}, {8}), padded(ElementType::Float, {1, 8, 2}), last = I64({}, {-1});
  EXPECT_OK(run("DFT", {}, {&x, &len8}, {&padded}));
  EXPECT_TRUE(near({padded.floats()[0], padded.floats()[8]}, {10, -2}, 1e-6f));
  EXPECT_INVALID(run("DFT", {}, {&x, nullptr, &last}, {&full}), "the last dim");

  // STFT: frames of 2 with step 2 over [1, 2, 3, 4]: [3, -1] and [7, -1].
  Tensor sig = F({1, 4, 1}, {1, 2, 3, 4}), step = I64({}, {2}), flen = I64({}, {2});
  Tensor spec(ElementType::Float, {1, 2, 2, 2});
  EXPECT_OK(run("STFT", {}, {&sig, &step, nullptr, &flen}, {&spec}));
  EXPECT_TRUE(near(spec.floats(), {3, 0, -1, 0, 7, 0, -1, 0}, 1e-6f));
  Tensor zero = I64({}, {0});
  EXPECT_INVALID(run("STFT", {}, {&sig, &zero, nullptr, &flen}, {&spec}), "do not fit");

  // MelWeightMatrix: triangles that peak at 1; a wrong output shape is refused.
  Tensor bins = I64({}, {2}), n = I64({}, {8}), rate = I64({}, {8000});
  Tensor lo = F({}, {0.f}), hi = F({}, {4000.f}), mel(ElementType::Float, {5, 2});
  EXPECT_OK(run("MelWeightMatrix", {}, {&bins, &n, &rate, &lo, &hi}, {&mel}));
  for (int64_t i = 0; i < 2; ++i) {
    float peak = 0;
    for (int64_t j = 0; j < 5; ++j)
      peak = std::max(peak, mel.floats()[j * 2 + i]);
    EXPECT_EQ(peak, 1.f) << "mel bin " << i;
  }
  Tensor badMel(ElementType::Float, {4, 2});
  EXPECT_INVALID(run("MelWeightMatrix", {}, {&bins, &n, &rate, &lo, &hi}, {&badMel}),
                 "output shape");
}

TEST(LibraryKernels, StatefulDecoderOps) {
  // Causal depthwise conv, k = 2: y[t] = w0 x[t-1] + w1 x[t] + b, x[-1] from the past state.
  Tensor x = F({1, 1, 3}, {1, 2, 3}), w = F({1, 1, 2}, {10, 1}), b = F({1}, {0.5f});
  Tensor past = F({1, 1, 1}, {4}), y(ElementType::Float, {1, 1, 3}),
         present(ElementType::Float, {1, 1, 1});
  EXPECT_OK(run("CausalConvWithState", {}, {&x, &w, &b, &past}, {&y, &present}));
  EXPECT_TRUE(near(y.floats(), {41.5f, 12.5f, 23.5f}));
  EXPECT_EQ(present.floats(), (std::vector<float>{3}));
  EXPECT_OK(run("CausalConvWithState", Attrs().s("activation", "silu"), {&x, &w}, {&y}));
  EXPECT_TRUE(near(y.floats(), {float(1 / (1 + std::exp(-1.0))), float(12 / (1 + std::exp(-12.0))),
                                float(23 / (1 + std::exp(-23.0)))}));
  Tensor badPast = F({1, 1, 2}, {0, 0});
  EXPECT_INVALID(run("CausalConvWithState", {}, {&x, &w, nullptr, &badPast}, {&y}), "past_state");

  // Linear rule, one head, d_k = d_v = 1, scale 1: S_t = S_{t-1} + k_t v_t, o_t = q_t S_t.
  Tensor q = F({1, 2, 1}, {1, 2}), k = F({1, 2, 1}, {3, 1}), v = F({1, 2, 1}, {2, 5});
  Tensor o(ElementType::Float, {1, 2, 1}), state(ElementType::Float, {1, 1, 1, 1});
  Attrs linear =
      Attrs().i("q_num_heads", 1).i("kv_num_heads", 1).s("update_rule", "linear").f("scale", 1.f);
  EXPECT_OK(run("LinearAttention", linear, {&q, &k, &v}, {&o, &state}));
  EXPECT_TRUE(near(o.floats(), {6, 22}));
  EXPECT_EQ(state.floats(), (std::vector<float>{11}));
  // Gated delta: S = e^g S + beta k (v - e^g S k), from past state 1.
  Tensor s0 = F({1, 1, 1, 1}, {1}), g = F({1, 2, 1}, {0, std::log(0.5f)}),
         beta = F({1, 2, 1}, {0.5f, 1});
  Attrs gd = Attrs().i("q_num_heads", 1).i("kv_num_heads", 1).f("scale", 1.f);
  EXPECT_OK(run("LinearAttention", gd, {&q, &k, &v, &s0, &g, &beta}, {&o, &state}));
  // t0: S = 1 + 0.5*3*(2 - 3) = -0.5, o = -0.5; t1: S = -0.25 + 1*(5 + 0.25) = 5, o = 10.
  EXPECT_TRUE(near(o.floats(), {-0.5f, 10}));
  EXPECT_INVALID(run("LinearAttention", gd, {&q, &k, &v}, {&o}), "needs decay");
  EXPECT_INVALID(
      run("LinearAttention", Attrs().i("q_num_heads", 3).i("kv_num_heads", 2), {&q, &k, &v}, {&o}),
      "positive multiple");
}

// Reshape/Squeeze/Unsqueeze run as kernels only when their shape or axes
// input is a run-time value: the shape comes from it and must be the planned one.
TEST(LibraryKernels, RuntimeShapedViews) {
  Tensor X = iota(ElementType::Int32, {2, 3, 4});
  Tensor Y(ElementType::Int32, {3, 8}), S = I64({3, -1});
  EXPECT_OK(run("Reshape", {}, {&X, &S}, {&Y}));
  EXPECT_EQ(Y.bytes, X.bytes);
  Tensor Z(ElementType::Int32, {2, 12}), S0 = I64({0, -1});
  EXPECT_OK(run("Reshape", {}, {&X, &S0}, {&Z}));
  EXPECT_EQ(Z.bytes, X.bytes);
  Tensor Zs = I64({0, 24});
  EXPECT_INVALID(run("Reshape", {}, {&X, &Zs}, {&Z}), "output shape");
  EXPECT_INVALID(run("Reshape", Attrs().i("allowzero", 1), {&X, &S0}, {&Z}), "-1");
  Tensor Two = I64({-1, -1});
  EXPECT_INVALID(run("Reshape", {}, {&X, &Two}, {&Z}), "more than one -1");
  Tensor Odd = I64({5, -1});
  EXPECT_INVALID(run("Reshape", {}, {&X, &Odd}, {&Z}), "cannot infer");

  Tensor W = iota(ElementType::Float, {1, 3, 1, 2});
  Tensor Sq(ElementType::Float, {3, 1, 2}), A0 = I64({0});
  EXPECT_OK(run("Squeeze", {}, {&W, &A0}, {&Sq}));
  EXPECT_EQ(Sq.bytes, W.bytes);
  Tensor All(ElementType::Float, {3, 2});
  EXPECT_OK(run("Squeeze", {}, {&W}, {&All}));
  Tensor A1 = I64({1}), Rep = I64({0, -4});
  EXPECT_INVALID(run("Squeeze", {}, {&W, &A1}, {&Sq}), "is not 1");
  EXPECT_INVALID(run("Squeeze", {}, {&W, &Rep}, {&All}), "out of range or repeated");

  Tensor U(ElementType::Float, {1, 3, 2, 1}), Axes = I64({0, -1});
  EXPECT_OK(run("Unsqueeze", {}, {&All, &Axes}, {&U}));
  EXPECT_EQ(std::vector<uint8_t>(U.bytes.begin(), U.bytes.begin() + U.payload()),
            std::vector<uint8_t>(All.bytes.begin(), All.bytes.begin() + All.payload()));
  Tensor Wrong(ElementType::Float, {3, 1, 2, 1});
  EXPECT_INVALID(run("Unsqueeze", {}, {&All, &Axes}, {&Wrong}), "output shape");
  Tensor Far = I64({4});
  EXPECT_INVALID(run("Unsqueeze", {}, {&All, &Far}, {&Wrong}), "out of range");
}

TEST(LibraryKernels, CopyShapeDepthSpace) {
  Tensor X = iota(ElementType::Int32, {2, 3, 4}), Y(ElementType::Int32, {6, 4});
  EXPECT_OK(run("Copy", {}, {&X}, {&Y}));
  EXPECT_EQ(Y.bytes, X.bytes);
  Tensor Yb(ElementType::Int32, {5, 4});
  EXPECT_INVALID(run("Copy", {}, {&X}, {&Yb}), "size");

  Tensor S3(ElementType::Int64, {3}), S1(ElementType::Int64, {1}), S2(ElementType::Int64, {2}),
      S0(ElementType::Int64, {0});
  EXPECT_OK(run("Shape", {}, {&X}, {&S3}));
  EXPECT_EQ(S3.values<int64_t>(), (std::vector<int64_t>{2, 3, 4}));
  EXPECT_OK(run("Shape", Attrs().i("start", -1), {&X}, {&S1}));
  EXPECT_EQ(S1.values<int64_t>(), (std::vector<int64_t>{4}));
  EXPECT_OK(run("Shape", Attrs().i("start", -10).i("end", 2), {&X}, {&S2}));
  EXPECT_EQ(S2.values<int64_t>(), (std::vector<int64_t>{2, 3}));
  EXPECT_OK(run("Shape", Attrs().i("start", 2).i("end", 1), {&X}, {&S0}));
  EXPECT_INVALID(run("Shape", {}, {&X}, {&S2}), "output shape");

  for (int64_t b : {2, 3})
    for (std::string mode : {"DCR", "CRD"}) {
      int64_t N = 2, c = 3, H = 2, W = 3;
      Tensor In = iota(ElementType::Float, {N, c * b * b, H, W});
      std::vector<int64_t> os = {N, c, H * b, W * b};
      Tensor want = refGather(ElementType::Float, os, In, [&](const std::vector<int64_t> &o) {
        int64_t b1 = o[2] % b, b2 = o[3] % b;
        int64_t ch = mode == "DCR" ? (b1 * b + b2) * c + o[1] : o[1] * b * b + b1 * b + b2;
        return ravel({o[0], ch, o[2] / b, o[3] / b}, In.shape);
      });
      Tensor Out(ElementType::Float, os);
      EXPECT_OK(run("DepthToSpace", Attrs().i("blocksize", b).s("mode", mode), {&In}, {&Out}));
      EXPECT_EQ(Out.floats(), want.floats()) << "D2S b " << b << " " << mode;
      if (mode == "DCR") {
        Tensor Back(ElementType::Float, In.shape);
        EXPECT_OK(run("SpaceToDepth", Attrs().i("blocksize", b), {&Out}, {&Back}));
        EXPECT_EQ(Back.floats(), In.floats()) << "S2D b " << b;
      }
    }
}

//===----------------------------------------------------------------------===//
// Reductions
//===----------------------------------------------------------------------===//

double refReduce(const std::string &op, const std::vector<double> &v) {
  double a;
  if (op == "ReduceMax") {
    a = -INFINITY;
    for (double x : v)
      a = std::max(a, x);
  } else if (op == "ReduceMin") {
    a = INFINITY;
    for (double x : v)
      a = std::min(a, x);
  } else if (op == "ReduceProd") {
    a = 1;
    for (double x : v)
      a *= x;
  } else if (op == "ReduceLogSumExp") {
    a = 0;
    for (double x : v)
      a += std::exp(x);
    a = std::log(a);
  } else {
    a = 0;
    for (double x : v)
      a += op == "ReduceL1"                              ? std::fabs(x)
           : op == "ReduceL2" || op == "ReduceSumSquare" ? x * x
                                                         : x;
    if (op == "ReduceMean")
      a /= double(v.size());
    if (op == "ReduceL2")
      a = std::sqrt(a);
  }
  return a;
}

TEST(LibraryKernels, Reductions) {
  const char *ops[] = {"ReduceMean", "ReduceSum", "ReduceMax",       "ReduceMin",      "ReduceProd",
                       "ReduceL1",   "ReduceL2",  "ReduceSumSquare", "ReduceLogSumExp"};
  struct Case {
    std::vector<int64_t> shape, axes;
  };
  std::vector<Case> cases = {
      {{3, 4}, {1}},     {{3, 4}, {0}},          {{3, 4}, {}},           {{2, 3, 4}, {0, 2}},
      {{2, 3, 4}, {-2}}, {{2, 3, 4, 5}, {1, 3}}, {{2, 1, 4}, {1}},       {{2, 3, 4}, {2, 1, 0}},
      {{5, 37}, {1}},    {{37, 5}, {0}},         {{2, 3, 1, 4}, {0, 1}}, {{6}, {0}},
  };
  for (const char *op : ops)
    for (const Case &c : cases)
      for (bool keep : {true, false})
        for (bool viaInput : {true, false}) {
          Tensor X = randomF(c.shape, 9, 1.5f);
          size_t r = c.shape.size();
          std::vector<bool> red(r, c.axes.empty());
          for (int64_t a : c.axes)
            red[a < 0 ? a + r : a] = true;
          std::vector<int64_t> keptShape, outShape;
          for (size_t d = 0; d < r; ++d) {
            keptShape.push_back(red[d] ? 1 : c.shape[d]);
            if (!red[d] || keep)
              outShape.push_back(red[d] ? 1 : c.shape[d]);
          }
          std::vector<std::vector<double>> groups(numel(keptShape));
          for (int64_t i = 0; i < numel(c.shape); ++i) {
            std::vector<int64_t> idx = unravel(i, c.shape);
            for (size_t d = 0; d < r; ++d)
              if (red[d])
                idx[d] = 0;
            groups[ravel(idx, keptShape)].push_back(X.f()[i]);
          }
          std::vector<float> want;
          for (auto &g : groups)
            want.push_back(float(refReduce(op, g)));
          Tensor A = I64(c.axes), Y(ElementType::Float, outShape);
          Attrs at = Attrs().i("keepdims", keep);
          if (!viaInput && !c.axes.empty())
            at.is("axes", c.axes);
          EXPECT_OK(run(op, at, {&X, viaInput && !c.axes.empty() ? &A : nullptr}, {&Y}));
          EXPECT_TRUE(near(Y.floats(), want, 2e-5f))
              << op << " " << shapeToString(c.shape) << " axes " << shapeToString(c.axes)
              << " keep " << keep;
        }
  // noop_with_empty_axes: each element reduced alone.
  Tensor X = F({2, 2}, {-1, 2, -3, 4}), Y(ElementType::Float, {2, 2});
  EXPECT_OK(run("ReduceSum", Attrs().i("noop_with_empty_axes", 1), {&X}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {-1, 2, -3, 4}));
  EXPECT_OK(run("ReduceSumSquare", Attrs().i("noop_with_empty_axes", 1), {&X}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {1, 4, 9, 16}));
  EXPECT_OK(run("ReduceL2", Attrs().i("noop_with_empty_axes", 1), {&X}, {&Y}));
  EXPECT_TRUE(near(Y.floats(), {1, 2, 3, 4}));
  // LogSumExp stays finite for large inputs.
  Tensor L = F({2}, {1000, 1000}), L1(ElementType::Float, {});
  EXPECT_OK(run("ReduceLogSumExp", Attrs().i("keepdims", 0), {&L}, {&L1}));
  EXPECT_NEAR(L1.f()[0], 1000.f + std::log(2.f), 1e-3);
  Tensor Yb(ElementType::Float, {2});
  EXPECT_INVALID(run("ReduceSum", Attrs().is("axes", {1}), {&X}, {&Yb}), "output shape");
  EXPECT_INVALID(run("ReduceSum", Attrs().is("axes", {1, -1}), {&X}, {&Y}), "repeated");
  Tensor Xi = iota(ElementType::Int64, {2, 2});
  EXPECT_INVALID(run("ReduceSum", {}, {&Xi}, {&Y}), "float32");
}

TEST(LibraryKernels, ArgMaxArgMin) {
  struct Case {
    std::vector<int64_t> shape;
    int64_t axis;
  };
  std::vector<Case> cases = {{{7}, 0},       {{3, 5}, 1},     {{3, 5}, 0},
                             {{2, 3, 4}, 1}, {{2, 3, 4}, -1}, {{4, 1, 3}, 1}};
  for (bool isMax : {true, false})
    for (const Case &c : cases)
      for (bool keep : {true, false})
        for (bool last : {false, true}) {
          // Few distinct values so ties are common.
          Tensor X(ElementType::Float, c.shape);
          Rng rng(3);
          for (int64_t i = 0; i < numel(c.shape); ++i)
            X.f()[i] = std::floor(rng.next() * 2.f);
          int64_t a = c.axis < 0 ? c.axis + int64_t(c.shape.size()) : c.axis;
          std::vector<int64_t> kept = c.shape;
          kept[a] = 1;
          std::vector<int64_t> outShape = kept;
          if (!keep)
            outShape.erase(outShape.begin() + a);
          std::vector<int64_t> want(numel(kept));
          for (int64_t o = 0; o < numel(kept); ++o) {
            std::vector<int64_t> idx = unravel(o, kept);
            int64_t best = 0;
            for (int64_t i = 0; i < c.shape[a]; ++i) {
              idx[a] = i;
              float v = X.f()[ravel(idx, c.shape)];
              idx[a] = best;
              float b = X.f()[ravel(idx, c.shape)];
              bool better = isMax ? (v > b || (last && v == b)) : (v < b || (last && v == b));
              if (i == 0 || better)
                best = i;
            }
            want[o] = best;
          }
          Tensor Y(ElementType::Int64, outShape);
          EXPECT_OK(run(isMax ? "ArgMax" : "ArgMin",
                        Attrs().i("axis", c.axis).i("keepdims", keep).i("select_last_index", last),
                        {&X}, {&Y}));
          EXPECT_EQ(Y.values<int64_t>(), want)
              << (isMax ? "ArgMax " : "ArgMin ") << shapeToString(c.shape) << " axis " << c.axis
              << " last " << last;
        }
  Tensor X = randomF({2, 3}, 1), Y(ElementType::Float, {2});
  EXPECT_INVALID(run("ArgMax", Attrs().i("axis", 1).i("keepdims", 0), {&X}, {&Y}), "int64");
}

} // namespace
