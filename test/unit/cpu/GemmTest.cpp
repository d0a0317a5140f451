//===- GemmTest.cpp - the CPU EP's fp32 GEMM against a double reference ---===//
//
// Every microkernel variant this CPU can run is forced in turn through the
// testing hook and compared with a naive double-accumulating reference over
// edge shapes (M%6, N%16, K across the K blocks), transposes, alpha,
// accumulate and padded leading dimensions. Padding around C is filled with a
// sentinel that must survive.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include "test/unit/cpu/TestRng.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

using namespace ortc::cpu;

namespace {

constexpr float kSentinel = -12345.5f;

struct Case {
  int64_t M, N, K;
  bool transA = false, transB = false;
  float alpha = 1.0f;
  bool accumulate = false;
  // Extra floats beyond the minimum leading dimension.
  int64_t padA = 0, padB = 0, padC = 0;
};

std::string describe(const Case &c) {
  return "M=" + std::to_string(c.M) + " N=" + std::to_string(c.N) + " K=" + std::to_string(c.K) +
         " transA=" + std::to_string(c.transA) + " transB=" + std::to_string(c.transB) +
         " alpha=" + std::to_string(c.alpha) + " accumulate=" + std::to_string(c.accumulate) +
         " pads=" + std::to_string(c.padA) + "," + std::to_string(c.padB) + "," +
         std::to_string(c.padC);
}

using ortc::cpu::test_support::Rng;

/// Runs sgemmPacked on random data and checks it against the reference;
/// returns the number of mismatches (reported through gtest as well).
/// With a pool, through sgemmPackedParallel.
int checkCase(const Case &c, uint64_t seed, ThreadPool *pool = nullptr) {
  Rng rng(seed);
  // Stored shapes: A is [M,K] or [K,M]; B is [K,N] or [N,K].
  int64_t aRows = c.transA ? c.K : c.M, aCols = c.transA ? c.M : c.K;
  int64_t bRows = c.transB ? c.N : c.K, bCols = c.transB ? c.K : c.N;
  int64_t lda = aCols + c.padA, ldb = bCols + c.padB, ldc = c.N + c.padC;
  std::vector<float> A(std::max<int64_t>(aRows * lda, 1)), B(std::max<int64_t>(bRows * ldb, 1));
  for (float &v : A)
    v = rng.next();
  for (float &v : B)
    v = rng.next();
  std::vector<float> C(std::max<int64_t>(c.M * ldc, 1), kSentinel);
  for (int64_t i = 0; i < c.M; ++i)
    for (int64_t j = 0; j < c.N; ++j)
      C[i * ldc + j] = rng.next();
  std::vector<float> C0 = C;

  auto a = [&](int64_t i, int64_t k) { return c.transA ? A[k * lda + i] : A[i * lda + k]; };
  auto b = [&](int64_t k, int64_t j) { return c.transB ? B[j * ldb + k] : B[k * ldb + j]; };

  std::vector<float> packed(packedGemmBSize(c.K, c.N) + 1, kSentinel);
  packGemmB(B.data(), ldb, c.transB, c.K, c.N, c.alpha, packed.data());
  EXPECT_EQ(packed.back(), kSentinel) << "packGemmB wrote past packedGemmBSize: " << describe(c);
  if (pool)
    sgemmPackedParallel(pool, c.M, c.N, c.K, A.data(), lda, c.transA, packed.data(), C.data(),
                        ldc, c.accumulate);
  else
    sgemmPacked(c.M, c.N, c.K, A.data(), lda, c.transA, packed.data(), C.data(), ldc,
                c.accumulate);

  // |a|,|b| <= 1, so K*|alpha| bounds every product sum; float rounding of a
  // K-term sum stays far below 1e-5 of that.
  double tol = 1e-5 * std::max<int64_t>(c.K, 1) * std::max(1.0f, std::fabs(c.alpha)) + 1e-6;
  int bad = 0;
  for (int64_t i = 0; i < c.M; ++i) {
    for (int64_t j = 0; j < ldc; ++j) {
      float got = C[i * ldc + j];
      if (j >= c.N) {
        if (got != kSentinel && bad++ < 5)
          ADD_FAILURE() << "wrote C padding at (" << i << "," << j << "): " << describe(c);
        continue;
      }
      double want = c.accumulate ? C0[i * ldc + j] : 0.0;
      double sum = 0.0;
      for (int64_t k = 0; k < c.K; ++k)
        sum += static_cast<double>(a(i, k)) * static_cast<double>(b(k, j));
      want += static_cast<double>(c.alpha) * sum;
      if (!(std::fabs(got - want) <= tol) && bad++ < 5)
        ADD_FAILURE() << "C(" << i << "," << j << ") = " << got << ", want " << want << " (tol "
                      << tol << "): " << describe(c);
    }
  }
  return bad;
}

// Every variant Gemm.cpp has; the ones this CPU cannot run are skipped.
const char *const kVariants[] = {"generic", "avx2", "avx512"};

/// Forces one variant per test instance and restores auto-detection after.
class GemmVariantTest : public ::testing::TestWithParam<const char *> {
protected:
  void SetUp() override {
    if (!setSgemmVariant(GetParam()))
      GTEST_SKIP() << "this CPU or build cannot run the " << GetParam() << " GEMM";
    ASSERT_STREQ(sgemmVariant(), GetParam());
  }
  void TearDown() override { setSgemmVariant(nullptr); }
};

const int64_t kEdgeDims[] = {1, 2, 5, 6, 7, 15, 16, 17, 31, 33, 64, 100, 257};

TEST_P(GemmVariantTest, EdgeShapes) {
  // Every (M,N,K) from the edge set; the flags cycle with the shape index so
  // each flag meets many edge combinations without multiplying the run time.
  uint64_t index = 0;
  int bad = 0;
  for (int64_t M : kEdgeDims)
    for (int64_t N : kEdgeDims)
      for (int64_t K : kEdgeDims) {
        Case c{M, N, K};
        c.transA = index & 1;
        c.transB = index & 2;
        c.accumulate = index & 4;
        c.alpha = (index % 3 == 0) ? 1.0f : (index % 3 == 1 ? -0.75f : 2.5f);
        c.padA = (index % 5 == 0) ? 3 : 0;
        c.padB = (index % 7 == 0) ? 5 : 0;
        c.padC = (index % 4 == 1) ? 9 : 0;
        bad += checkCase(c, index);
        ++index;
        if (bad > 20)
          FAIL() << "too many mismatches, stopping";
      }
}

TEST_P(GemmVariantTest, AllFlagCombinations) {
  const int64_t shapes[][3] = {{7, 17, 33}, {13, 35, 300}, {6, 16, 256}, {1, 1, 1}};
  uint64_t seed = 1000;
  for (const auto &s : shapes)
    for (int flags = 0; flags < 32; ++flags) {
      Case c{s[0], s[1], s[2]};
      c.transA = flags & 1;
      c.transB = flags & 2;
      c.accumulate = flags & 4;
      c.alpha = (flags & 8) ? 0.5f : 1.0f;
      if (flags & 16)
        c.padA = 1, c.padB = 2, c.padC = 3;
      checkCase(c, seed++);
    }
}

TEST_P(GemmVariantTest, LargeShapes) {
  checkCase({300, 500, 700}, 1);
  checkCase({300, 500, 700, true, true, 1.5f, true, 7, 11, 13}, 2);
  checkCase({127, 1025, 513, false, true, -1.0f, false, 0, 0, 16}, 3);
  checkCase({1, 1000, 600}, 4);
  checkCase({600, 3, 200, true, false}, 5);
}

TEST_P(GemmVariantTest, BlockBoundaries) {
  // Around the M block (144 rows) and K block (384) limits and their
  // multiples, where blocks split evenly and C is revisited per K block.
  uint64_t seed = 500;
  for (int64_t M : {143, 144, 145, 289})
    for (int64_t K : {383, 384, 385, 769, 1000}) {
      checkCase({M, 20, K}, seed++);
      checkCase({M, 33, K, true, false, 1.0f, true, 2, 0, 1}, seed++);
    }
  // A single A panel (M <= 6) takes K in blocks of up to 9216.
  checkCase({1, 17, 9217}, seed++);
  checkCase({6, 40, 20000, false, true, 1.0f, true}, seed++);
  checkCase({4, 16, 9216, true, false}, seed++);
}

TEST_P(GemmVariantTest, EmptyK) {
  // K == 0: C = 0, or C unchanged when accumulating.
  std::vector<float> C = {1, 2, 3, 4, kSentinel, 5, 6, 7, 8, kSentinel};
  float dummy = 0;
  sgemmPacked(2, 4, 0, &dummy, 1, false, &dummy, C.data(), 5, true);
  EXPECT_EQ(C[0], 1.0f);
  EXPECT_EQ(C[8], 8.0f);
  sgemmPacked(2, 4, 0, &dummy, 1, false, &dummy, C.data(), 5, false);
  for (int i = 0; i < 10; ++i)
    EXPECT_EQ(C[i], (i % 5 == 4) ? kSentinel : 0.0f) << i;
}

TEST_P(GemmVariantTest, ConcurrentCalls) {
  // Packing scratch is per thread: concurrent calls must not share it.
  int bad[2] = {0, 0};
  std::thread t0([&] { bad[0] = checkCase({250, 70, 600, false, false}, 77); });
  std::thread t1([&] { bad[1] = checkCase({130, 90, 520, true, true}, 78); });
  t0.join();
  t1.join();
  EXPECT_EQ(bad[0] + bad[1], 0);
}

TEST_P(GemmVariantTest, ParallelSplitsMatchTheReference) {
  // Rows split in whole A panels (large M), column panels (small M), with
  // transposes, accumulation and padded strides; tiny products stay serial.
  ThreadPool pool(4);
  const Case cases[] = {
      {250, 70, 600, false, false},       {250, 70, 600, true, true, 0.5f, true, 3, 2, 5},
      {3, 700, 400, false, false},        {5, 333, 257, true, false, 1.f, true, 0, 0, 7},
      {37, 45, 129, false, true},         {4, 4, 4},
  };
  int bad = 0;
  for (const Case &c : cases)
    bad += checkCase(c, 91, &pool);
  EXPECT_EQ(bad, 0);
}

// A packed once (packGemmA, as the compiler packs Conv's weights) gives the
// same bits as A packed per block: the same panels in the same order, only
// read from another place; serial and shared out, across block boundaries.
TEST_P(GemmVariantTest, PrepackedAMatchesPackedPerCall) {
  ThreadPool pool(3);
  const int64_t shapes[][3] = {{1, 1, 1},   {5, 17, 3},   {6, 16, 384}, {7, 33, 385},
                               {150, 70, 600}, {250, 40, 1000}, {13, 300, 77}};
  for (const auto &shape : shapes) {
    int64_t M = shape[0], N = shape[1], K = shape[2];
    SCOPED_TRACE(describe(Case{M, N, K}));
    std::vector<float> A(M * K), B(K * N);
    for (size_t i = 0; i < A.size(); ++i)
      A[i] = float(int(i * 7919 % 23) - 11) / 8.0f;
    for (size_t i = 0; i < B.size(); ++i)
      B[i] = float(int(i * 104729 % 19) - 9) / 4.0f;
    std::vector<float> packedB(packedGemmBSize(K, N)), packedA(packedGemmASize(M, K) + 1,
                                                               kSentinel);
    packGemmB(B.data(), N, false, K, N, 1.0f, packedB.data());
    packGemmA(A.data(), K, M, K, packedA.data());
    EXPECT_EQ(packedA.back(), kSentinel) << "packGemmA wrote past packedGemmASize";
    for (ThreadPool *p : {static_cast<ThreadPool *>(nullptr), &pool}) {
      std::vector<float> want(M * N), got(M * N);
      sgemmPackedParallel(p, M, N, K, A.data(), K, false, packedB.data(), want.data(), N, false);
      sgemmPrepackedParallel(p, M, N, K, packedA.data(), packedB.data(), got.data(), N, false);
      EXPECT_EQ(got, want);
    }
  }
  EXPECT_EQ(packedGemmASize(6, 5), 30u);
  EXPECT_EQ(packedGemmASize(7, 5), 60u);
  EXPECT_EQ(packedGemmASize(0, 5), 0u);
}

// An epilogue (row bias, column bias, residual with its own stride,
// activation) gives the GEMM's result (added to C's values when
// accumulating) then the epilogue applied to it, bit for bit: serial, split
// by rows (large M) and by column panels (small M), across K blocks, and
// with K == 0.
TEST_P(GemmVariantTest, EpilogueMatchesGemmThenEpilogue) {
  using Activation = GemmEpilogue::Activation;
  ThreadPool pool(2);
  const int64_t shapes[][3] = {{7, 33, 5}, {150, 70, 600}, {4, 1000, 600}, {13, 300, 77}, {3, 5, 0}};
  for (const auto &shape : shapes)
    for (Activation act : {Activation::None, Activation::Relu, Activation::Clip,
                           Activation::LeakyRelu}) {
      int64_t M = shape[0], N = shape[1], K = shape[2], ldc = N + 3, ldr = N + 5;
      SCOPED_TRACE(describe(Case{M, N, K}) + " activation " + std::to_string(int(act)));
      Rng rng(uint64_t(M * 131 + N + K));
      std::vector<float> A(std::max<int64_t>(M * K, 1)), B(std::max<int64_t>(K * N, 1)), bias(M),
          colBias(N), residual(M * ldr), initial(M * ldc);
      for (std::vector<float> *v : {&A, &B, &bias, &colBias, &residual, &initial})
        for (float &x : *v)
          x = rng.next();
      std::vector<float> packedB(packedGemmBSize(K, N) + 1);
      packGemmB(B.data(), N, false, K, N, 1.0f, packedB.data());
      GemmEpilogue e;
      e.rowBias = bias.data();
      e.colBias = colBias.data();
      e.residual = residual.data();
      e.ldr = ldr;
      e.activation = act;
      e.lo = -0.25f;
      e.hi = 0.5f;
      e.alpha = 0.125f;
      for (bool accumulate : {false, true}) {
        std::vector<float> want = accumulate ? initial : std::vector<float>(M * ldc, kSentinel);
        sgemmPackedParallel(nullptr, M, N, K, A.data(), K, false, packedB.data(), want.data(), ldc,
                            accumulate);
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            float v = want[i * ldc + j] + bias[i] + colBias[j] + residual[i * ldr + j];
            if (act == Activation::Relu)
              v = v > 0 ? v : 0;
            else if (act == Activation::Clip)
              v = std::min(std::max(v, e.lo), e.hi);
            else if (act == Activation::LeakyRelu)
              v = v >= 0 ? v : v * e.alpha;
            want[i * ldc + j] = v;
          }
        for (ThreadPool *p : {static_cast<ThreadPool *>(nullptr), &pool}) {
          std::vector<float> got = accumulate ? initial : std::vector<float>(M * ldc, kSentinel);
          sgemmPackedParallel(p, M, N, K, A.data(), K, false, packedB.data(), got.data(), ldc,
                              accumulate, &e);
          EXPECT_EQ(got, want) << (p ? "pool" : "serial") << (accumulate ? ", accumulating" : "");
        }
      }
    }
}

// sgemmRowsOfTaps (AVX-512): rows gathered tap by tap from an input through
// offsets, against the same rows as a plain A through sgemmPacked, with a
// column bias, a residual and Relu; column counts whose last tile is 1, 2 or
// 4 panels, partial or whole, and 2 panels whose last has at most 8 columns
// (the half-width tile: 24, 40 + 16, 56).
// packedK: a product over the first K rows of a B packed with more (the
// keys attention's mask keeps) gives exactly what B's first K rows packed
// alone give, through sgemmPacked and sgemmRowsOfTaps alike; K past the
// last block boundary (384) too.
TEST_P(GemmVariantTest, PackedKReadsTheFirstRowsOfB) {
  const int64_t packedK = 800;
  for (int64_t M : {1, 7, 13})
    for (int64_t N : {17, 40, 100})
      for (int64_t K : {int64_t(1), int64_t(23), int64_t(400), packedK}) {
        SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N) +
                     " K=" + std::to_string(K));
        Rng rng(uint64_t(M * 131 + N * 7 + K));
        std::vector<float> A(M * K), B(packedK * N);
        for (std::vector<float> *v : {&A, &B})
          for (float &f : *v)
            f = rng.next();
        std::vector<float> whole(packedGemmBSize(packedK, N)), first(packedGemmBSize(K, N));
        packGemmB(B.data(), N, false, packedK, N, 1.0f, whole.data());
        packGemmB(B.data(), N, false, K, N, 1.0f, first.data());
        std::vector<float> want(M * N), got(M * N);
        sgemmPacked(M, N, K, A.data(), K, false, first.data(), want.data(), N, false);
        sgemmPacked(M, N, K, A.data(), K, false, whole.data(), got.data(), N, false, packedK);
        ASSERT_EQ(got, want);
        if (!sgemmRowsOfTapsAvailable())
          continue;
        std::vector<float> taps(M * N);
        sgemmRowsOfTaps(M, N, K, 1, A.data(), nullptr, nullptr, first.data(), want.data(), N, false,
                        nullptr);
        sgemmRowsOfTaps(M, N, K, 1, A.data(), nullptr, nullptr, whole.data(), taps.data(), N, false,
                        nullptr, packedK);
        ASSERT_EQ(taps, want);
      }
}

TEST_P(GemmVariantTest, RowsOfTapsMatchesPackedRows) {
  if (!sgemmRowsOfTapsAvailable())
    GTEST_SKIP() << "the " << GetParam() << " variant has no sgemmRowsOfTaps kernels";
  const int64_t C = 5, taps = 3, K = C * taps, gap = 2; // taps `gap` floats apart
  for (int64_t M : {1, 6, 7, 13})
    for (int64_t N : {8, 16, 17, 24, 25, 40, 56, 88, 100}) {
      SCOPED_TRACE("M=" + std::to_string(M) + " N=" + std::to_string(N));
      Rng rng(uint64_t(M * 977 + N));
      int64_t rowFloats = taps * (C + gap) + 3, ldc = N + 3;
      std::vector<float> x(M * rowFloats), B(K * N), colBias(N), residual(M * ldc),
          initial(M * ldc);
      for (std::vector<float> *v : {&x, &B, &colBias, &residual, &initial})
        for (float &f : *v)
          f = rng.next();
      std::vector<int64_t> rowOffsets(M), tapOffsets(taps);
      for (int64_t i = 0; i < M; ++i)
        rowOffsets[i] = (M - 1 - i) * rowFloats; // rows in reverse order
      for (int64_t t = 0; t < taps; ++t)
        tapOffsets[t] = t * (C + gap) + 1;
      std::vector<float> A(M * K);
      for (int64_t i = 0; i < M; ++i)
        for (int64_t t = 0; t < taps; ++t)
          for (int64_t c = 0; c < C; ++c)
            A[i * K + t * C + c] = x[rowOffsets[i] + tapOffsets[t] + c];
      std::vector<float> packedB(packedGemmBSize(K, N));
      packGemmB(B.data(), N, false, K, N, 1.0f, packedB.data());
      GemmEpilogue e;
      e.colBias = colBias.data();
      e.residual = residual.data();
      e.ldr = ldc;
      e.activation = GemmEpilogue::Activation::Relu;
      for (bool accumulate : {false, true}) {
        std::vector<float> want = accumulate ? initial : std::vector<float>(M * ldc, kSentinel);
        sgemmPacked(M, N, K, A.data(), K, false, packedB.data(), want.data(), ldc, accumulate);
        e.apply(want.data(), ldc, M, N);
        std::vector<float> got = accumulate ? initial : std::vector<float>(M * ldc, kSentinel);
        sgemmRowsOfTaps(M, N, C, taps, x.data(), rowOffsets.data(), tapOffsets.data(),
                        packedB.data(), got.data(), ldc, accumulate, &e);
        for (int64_t i = 0; i < M * ldc; ++i)
          ASSERT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i])))
              << "at row " << i / ldc << " column " << i % ldc
              << (accumulate ? ", accumulating" : "");
      }
    }
}

// A column bias (MatMul's) and the GELU activations in the epilogue: the
// GEMM's result plus the bias through GELU in double (erf form and tanh
// form), within 1e-6 of max(1, |x|) per output, serial and on a pool, with
// partial panels; outputs from -40 to 40, so that GELU's far negative side,
// where it must give 0 or a normal float, never a denormal, is covered.
// GemmEpilogue::applyFrom (the pass that finishes a product kept apart, as
// the direct conv's and Winograd's) gives the scalar formula's values
// exactly on every variant, 8 columns a vector with a remainder: bias, a
// column bias, a residual, and each activation but GELU's, with a NaN, a
// -0 and values on Clip's bounds.
TEST_P(GemmVariantTest, ApplyFromMatchesTheScalarFormula) {
  using Activation = GemmEpilogue::Activation;
  const int64_t rows = 3, cols = 21, ld = 24;
  Rng rng(77);
  std::vector<float> src(rows * ld), bias(rows), colBias(cols), residual(rows * ld);
  for (std::vector<float> *v : {&src, &bias, &colBias, &residual})
    for (float &x : *v)
      x = rng.next();
  src[2] = NAN;
  src[ld + 9] = -0.f;
  bias[1] = 0.f;
  colBias[9] = 0.f;
  residual[ld + 9] = 0.f;
  src[2 * ld + 4] = -0.25f - bias[2] - colBias[4] - residual[2 * ld + 4];
  for (Activation act :
       {Activation::None, Activation::Relu, Activation::Clip, Activation::LeakyRelu}) {
    for (bool withColumns : {false, true}) {
      GemmEpilogue e;
      e.rowBias = bias.data();
      e.colBias = withColumns ? colBias.data() : nullptr;
      e.residual = withColumns ? residual.data() : nullptr;
      e.ldr = ld;
      e.activation = act;
      e.lo = -0.25f;
      e.hi = 0.5f;
      e.alpha = 0.125f;
      std::vector<float> got(rows * ld, kSentinel);
      e.applyFrom(src.data(), ld, got.data(), ld, rows, cols);
      for (int64_t i = 0; i < rows; ++i)
        for (int64_t j = 0; j < cols; ++j) {
          float v = src[i * ld + j] + bias[i];
          if (withColumns)
            v = v + colBias[j] + residual[i * ld + j];
          if (act == Activation::Relu)
            v = v > 0.f ? v : 0.f;
          else if (act == Activation::Clip)
            v = std::min(std::max(v, e.lo), e.hi);
          else if (act == Activation::LeakyRelu)
            v = v >= 0.f ? v : v * e.alpha;
          float g = got[i * ld + j];
          EXPECT_TRUE(std::isnan(v) ? std::isnan(g) : std::memcmp(&g, &v, sizeof(float)) == 0)
              << "activation " << int(act) << " at " << i << "," << j << ": " << g << " vs " << v;
        }
    }
  }
}

TEST_P(GemmVariantTest, EpilogueColumnBiasAndGelu) {
  using Activation = GemmEpilogue::Activation;
  ThreadPool pool(2);
  const int64_t shapes[][3] = {{7, 33, 5}, {150, 70, 600}, {4, 1000, 60}, {13, 300, 77}};
  for (const auto &shape : shapes)
    for (Activation act : {Activation::Gelu, Activation::GeluTanh}) {
      int64_t M = shape[0], N = shape[1], K = shape[2], ldc = N + 3;
      SCOPED_TRACE(describe(Case{M, N, K}) + " activation " + std::to_string(int(act)));
      Rng rng(uint64_t(M * 7 + N + K));
      std::vector<float> A(M * K), B(K * N), bias(N);
      for (std::vector<float> *v : {&A, &B})
        for (float &x : *v)
          x = rng.next();
      for (int64_t j = 0; j < N; ++j)
        bias[j] = -40.f + 80.f * float(j) / float(N);
      std::vector<float> packedB(packedGemmBSize(K, N) + 1);
      packGemmB(B.data(), N, false, K, N, 1.0f, packedB.data());
      std::vector<float> product(M * ldc, kSentinel);
      sgemmPackedParallel(nullptr, M, N, K, A.data(), K, false, packedB.data(), product.data(), ldc,
                          false);
      GemmEpilogue e;
      e.colBias = bias.data();
      e.activation = act;
      for (ThreadPool *p : {static_cast<ThreadPool *>(nullptr), &pool}) {
        std::vector<float> got(M * ldc, kSentinel);
        sgemmPackedParallel(p, M, N, K, A.data(), K, false, packedB.data(), got.data(), ldc, false,
                            &e);
        double worst = 0;
        for (int64_t i = 0; i < M; ++i)
          for (int64_t j = 0; j < N; ++j) {
            double x = double(product[i * ldc + j]) + bias[j], want;
            if (act == Activation::Gelu)
              want = 0.5 * x * std::erfc(-x / std::sqrt(2.0));
            else
              want = 0.5 * x * (1 + std::tanh(std::sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
            float v = got[i * ldc + j];
            worst = std::max(worst, std::abs(double(v) - want) / std::max(1.0, std::abs(x)));
            EXPECT_FALSE(v != 0 && std::abs(v) < FLT_MIN) << "denormal at " << i << "," << j;
          }
        EXPECT_LT(worst, 1e-6) << (p ? "pool" : "serial");
      }
    }
}

// Named "Gemm" so that --gtest_filter='Gemm*' selects these too.
INSTANTIATE_TEST_SUITE_P(Gemm, GemmVariantTest, ::testing::ValuesIn(kVariants),
                         [](const ::testing::TestParamInfo<const char *> &info) {
                           return std::string(info.param);
                         });

TEST(GemmPackTest, LayoutIsColumnPanelsOf16) {
  // The blob format: panel p holds columns 16p..16p+15, k-major, zero-padded.
  const int64_t K = 3, N = 20, ldb = 23;
  std::vector<float> B(K * ldb), BT(N * ldb);
  for (int64_t k = 0; k < K; ++k)
    for (int64_t j = 0; j < N; ++j)
      B[k * ldb + j] = BT[j * ldb + k] = static_cast<float>(k * 100 + j);
  ASSERT_EQ(packedGemmBSize(K, N), 2u * 16 * K);
  for (bool trans : {false, true}) {
    std::vector<float> packed(packedGemmBSize(K, N), kSentinel);
    packGemmB(trans ? BT.data() : B.data(), ldb, trans, K, N, 2.0f, packed.data());
    for (int64_t p = 0; p < 2; ++p)
      for (int64_t k = 0; k < K; ++k)
        for (int64_t j = 0; j < 16; ++j) {
          int64_t col = p * 16 + j;
          float want = col < N ? 2.0f * static_cast<float>(k * 100 + col) : 0.0f;
          EXPECT_EQ(packed[(p * K + k) * 16 + j], want)
              << "trans=" << trans << " p=" << p << " k=" << k << " j=" << j;
        }
  }
}

TEST(GemmPackTest, SizeRoundsNUpToPanels) {
  EXPECT_EQ(packedGemmBSize(1, 1), 16u);
  EXPECT_EQ(packedGemmBSize(5, 16), 80u);
  EXPECT_EQ(packedGemmBSize(5, 17), 160u);
  EXPECT_EQ(packedGemmBSize(0, 17), 0u);
}

TEST(GemmDispatchTest, ReportsAndRestoresVariant) {
  std::string best = sgemmVariant();
  EXPECT_TRUE(best == "generic" || best == "avx2" || best == "avx512") << best;
  EXPECT_FALSE(setSgemmVariant("sse9"));
  EXPECT_EQ(best, sgemmVariant());
  ASSERT_TRUE(setSgemmVariant("generic"));
  EXPECT_STREQ(sgemmVariant(), "generic");
  ASSERT_TRUE(setSgemmVariant(nullptr));
  EXPECT_EQ(best, sgemmVariant());
#if defined(__x86_64__)
  // The variant this machine is expected to run, so a broken dispatch that
  // silently falls back to the portable kernel shows up here.
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    EXPECT_NE(best, "generic");
  }
  if (__builtin_cpu_supports("avx512f")) {
    EXPECT_EQ(best, "avx512");
  }
#endif
}

} // namespace
