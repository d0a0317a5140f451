//===- ConvNarrow.cpp - Convs of few products per output, weights broadcast ===//
//
// A group-1 2-D Conv at dilation 1 whose outputs each take few products
// (convRunsNarrow: the 3-channel stems of image models) spends more on
// im2col's packed copy of X, or on the direct product's panel rows, than on
// its multiplies. This kernel reads X where it lies, a band of output rows
// at a time: it splits each input row the band needs into its column phases
// once (stride s: padded column q at phase q % s, index q / s), so that one
// tap (c, ky, kx) of 8 neighbouring outputs of a row is one contiguous load.
// Each weight is then broadcast against 3 such vectors for 4 output channels
// at once (12 accumulators), and the fused epilogue (bias, residual,
// activation) finishes the sums in registers before they are stored into Y's
// rows. W is read as it is ([M, C, KH, KW], packed_w 0).
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/ConvCommon.h"
#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include <algorithm>

#if defined(__x86_64__) || defined(__i386__)
#include "providers/cpu/kernels/EpilogueSimd.h"
#include "providers/cpu/kernels/SimdLanes.h"
#endif

namespace ortc::cpu::kernels {

#if defined(__x86_64__) || defined(__i386__)
namespace {

constexpr int64_t kLanes = 8;
/// Output channels and vectors of 8 output columns per tile: 12
/// accumulators, 3 loads and 4 broadcasts per tap, within 16 registers.
constexpr int kTileChannels = 4;
constexpr int kTileVectors = 3;
/// One band's phase rows stay in L2 while every channel's tiles read them.
constexpr int64_t kBandBytes = int64_t(64) << 10;
/// Output channels whose weights stay in L1 while a band's rows go by.
constexpr int64_t kWeightGroupBytes = int64_t(16) << 10;

/// Where a band's phase rows lie and how many output rows it covers.
struct NarrowLayout {
  int64_t phaseW;     // floats of one phase of one input row
  int64_t rowFloats;  // the row's stride phases
  int64_t bandRows;   // output rows per band
  int64_t bandInRows; // input rows a full band reads
  int64_t bands;      // per image
  int64_t groupChannels;

  NarrowLayout(const Geometry &g, int64_t C, int64_t K, int64_t threads) {
    const int64_t kh = g.k[1], kw = g.k[2], sh = g.s[1], sw = g.s[2];
    const int64_t outH = g.out[1], outW = g.out[2];
    // A tile's last vector reads up to column roundUp(outW, 8) - 1 + the
    // tap's index; the split writes the row's last column.
    phaseW = std::max((outW + kLanes - 1) / kLanes * kLanes + (kw - 1) / sw,
                      (g.padBegin[2] + g.in[2]) / sw + 1 + kLanes);
    rowFloats = sw * phaseW;
    int64_t fit = kBandBytes / int64_t(sizeof(float)) / (C * rowFloats);
    bandRows = std::clamp<int64_t>((fit - kh) / sh + 1, 1, outH);
    // An image's rows shared by the threads when one image is all there is.
    bandRows = std::min(bandRows, (outH + threads - 1) / threads);
    bandInRows = (bandRows - 1) * sh + kh;
    bands = (outH + bandRows - 1) / bandRows;
    groupChannels =
        std::max<int64_t>(kTileChannels, kWeightGroupBytes / int64_t(sizeof(float)) / K /
                                             kTileChannels * kTileChannels);
  }
  int64_t bandFloats(int64_t C) const { return C * bandInRows * rowFloats; }
};

/// Rows [oy0, oy0 + rows) of one image's output: the input rows they read,
/// each split into its column phases (rows outside X are zeros).
ORTC_AVX2 void splitBandRows(const float *x, const Geometry &g, const NarrowLayout &l, int64_t C,
                             int64_t oy0, int64_t rows, float *band) {
  const int64_t inH = g.in[1], inW = g.in[2], sw = g.s[2], padLeft = g.padBegin[2];
  const int64_t inRows = (rows - 1) * g.s[1] + g.k[1], first = oy0 * g.s[1] - g.padBegin[1];
  for (int64_t c = 0; c < C; ++c)
    for (int64_t r = 0; r < inRows; ++r) {
      float *row = band + (c * l.bandInRows + r) * l.rowFloats;
      std::fill(row, row + l.rowFloats, 0.f);
      int64_t ir = first + r;
      if (ir < 0 || ir >= inH)
        continue;
      const float *src = x + (c * inH + ir) * inW;
      int64_t col = 0;
      if (sw == 1) {
        std::copy(src, src + inW, row + padLeft);
        continue;
      }
      if (sw == 2)
        col = splitColumnPhasesAvx2<2>(src, inW, padLeft, l.phaseW, row);
      else if (sw == 4)
        col = splitColumnPhasesAvx2<4>(src, inW, padLeft, l.phaseW, row);
      for (; col < inW; ++col) {
        int64_t q = padLeft + col;
        row[q % sw * l.phaseW + q / sw] = src[col];
      }
    }
}

/// One row's tiles: output channels [m0, m1) by `cols` outputs of one row
/// from its column ox0.
struct NarrowTiles {
  const float *at;       // the band's phase rows for the output row, at ox0
  const int32_t *taps;   // per product k = (c KH + ky) KW + kx: its offset from `at`
  int64_t K;             // products per output
  const float *w;        // W [M, K]
  const float *bias;     // [M], or null
  const float *residual; // as Y, or null
  float *y;              // Y's element (n, 0, oy, ox0)
  int64_t planeStride;   // floats between output channels' planes
  int64_t cols;          // outputs of the row in this tile, 1 .. 8 NV
  int64_t m0, m1;
  const GemmEpilogue *epilogue;
};

using A = GemmEpilogue::Activation;

/// Channels [m, m + MB) of the tiles: the sums in 12 accumulators, then
/// c = activation(c + bias + residual), GemmEpilogue::apply's order.
template <int MB, int NV, A Act>
ORTC_AVX2 inline __attribute__((always_inline)) void narrowTile(const NarrowTiles &t, int64_t m) {
  // The loops over i and j unrolled keep acc in registers.
  __m256 acc[MB][NV];
#pragma GCC unroll 4
  for (int i = 0; i < MB; ++i)
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      acc[i][j] = _mm256_setzero_ps();
  const float *w = t.w + m * t.K;
  for (int64_t k = 0; k < t.K; ++k) {
    const float *src = t.at + t.taps[k];
    __m256 v[NV];
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j)
      v[j] = _mm256_loadu_ps(src + j * kLanes);
#pragma GCC unroll 4
    for (int i = 0; i < MB; ++i) {
      __m256 b = _mm256_broadcast_ss(w + i * t.K + k);
#pragma GCC unroll 4
      for (int j = 0; j < NV; ++j)
        acc[i][j] = _mm256_fmadd_ps(b, v[j], acc[i][j]);
    }
  }
  const __m256i tail = firstLanes(t.cols - (NV - 1) * kLanes);
  const bool partial = t.cols < NV * kLanes;
#pragma GCC unroll 4
  for (int i = 0; i < MB; ++i) {
    float *y = t.y + (m + i) * t.planeStride;
    const float *r = t.residual ? t.residual + (m + i) * t.planeStride : nullptr;
    const __m256 bias = _mm256_set1_ps(t.bias ? t.bias[m + i] : 0.f);
#pragma GCC unroll 4
    for (int j = 0; j < NV; ++j) {
      __m256 v = acc[i][j];
      if (t.bias)
        v = _mm256_add_ps(v, bias);
      bool whole = j + 1 < NV || !partial;
      if (r)
        v = _mm256_add_ps(v, whole ? _mm256_loadu_ps(r + j * kLanes)
                                   : _mm256_maskload_ps(r + j * kLanes, tail));
      v = activateAvx2(Act, *t.epilogue, v);
      if (whole)
        _mm256_storeu_ps(y + j * kLanes, v);
      else
        _mm256_maskstore_ps(y + j * kLanes, tail, v);
    }
  }
}

template <int NV, A Act> ORTC_AVX2 void narrowTiles(const NarrowTiles &t) {
  int64_t m = t.m0;
  for (; m + kTileChannels <= t.m1; m += kTileChannels)
    narrowTile<kTileChannels, NV, Act>(t, m);
  switch (t.m1 - m) {
  case 3:
    return narrowTile<3, NV, Act>(t, m);
  case 2:
    return narrowTile<2, NV, Act>(t, m);
  case 1:
    return narrowTile<1, NV, Act>(t, m);
  default:
    return;
  }
}

using NarrowTilesFn = void (*)(const NarrowTiles &);

template <A Act> NarrowTilesFn tilesFn(int64_t vectors) {
  return vectors == 1 ? narrowTiles<1, Act> : vectors == 2 ? narrowTiles<2, Act> : narrowTiles<3, Act>;
}

/// The row's tiles for `vectors` vectors of outputs; null for an
/// activation no conv epilogue has (convActivation).
NarrowTilesFn pickTiles(A act, int64_t vectors) {
  switch (act) {
  case A::None:
    return tilesFn<A::None>(vectors);
  case A::Relu:
    return tilesFn<A::Relu>(vectors);
  case A::Clip:
    return tilesFn<A::Clip>(vectors);
  case A::LeakyRelu:
    return tilesFn<A::LeakyRelu>(vectors);
  case A::Gelu:
  case A::GeluTanh:
    return nullptr;
  }
  return nullptr;
}

} // namespace

Status convNarrow(const KernelCall &call, const Geometry &g, const float *x, const float *w,
                  int64_t N, int64_t C, int64_t M, const GemmEpilogue &epilogue, float *y) {
  const int64_t kh = g.k[1], kw = g.k[2], K = C * kh * kw;
  const int64_t outH = g.out[1], outW = g.out[2], P = outH * outW;
  const int64_t threads = call.pool ? call.pool->threads() : 1;
  NarrowLayout l(g, C, K, threads);
  const int64_t units = N * l.bands, workers = std::min(threads, units);
  const int64_t bandFloats = l.bandFloats(C);
  float *scratch;
  if (Status s = allocScratch(call, "Conv", size_t(workers * bandFloats + K), scratch); !s.isOk())
    return s;
  auto *taps = reinterpret_cast<int32_t *>(scratch + workers * bandFloats);
  for (int64_t c = 0; c < C; ++c)
    for (int64_t ky = 0; ky < kh; ++ky)
      for (int64_t kx = 0; kx < kw; ++kx)
        taps[(c * kh + ky) * kw + kx] =
            int32_t((c * l.bandInRows + ky) * l.rowFloats + kx % g.s[2] * l.phaseW + kx / g.s[2]);

  const int64_t tileCols = kTileVectors * kLanes;
  const int64_t lastVectors = (outW - (outW - 1) / tileCols * tileCols + kLanes - 1) / kLanes;
  NarrowTilesFn whole = pickTiles(epilogue.activation, kTileVectors);
  NarrowTilesFn last = pickTiles(epilogue.activation, lastVectors);
  if (!whole || !last)
    return invalid("Conv", "the narrow conv has no fused GELU epilogue");
  parallelFor(call.pool, workers, [&](int64_t worker) {
    float *band = scratch + worker * bandFloats;
    for (int64_t u = units * worker / workers; u < units * (worker + 1) / workers; ++u) {
      const int64_t n = u / l.bands, oy0 = u % l.bands * l.bandRows;
      const int64_t rows = std::min(l.bandRows, outH - oy0);
      splitBandRows(x + n * C * g.inSize(), g, l, C, oy0, rows, band);
      NarrowTiles t;
      t.taps = taps;
      t.K = K;
      t.w = w;
      t.bias = epilogue.rowBias;
      t.planeStride = P;
      t.epilogue = &epilogue;
      for (int64_t g0 = 0; g0 < M; g0 += l.groupChannels)
        for (int64_t j = 0; j < rows; ++j)
          for (int64_t ox0 = 0; ox0 < outW; ox0 += tileCols) {
            const int64_t at = n * M * P + (oy0 + j) * outW + ox0;
            t.at = band + j * g.s[1] * l.rowFloats + ox0;
            t.residual = epilogue.residual ? epilogue.residual + at : nullptr;
            t.y = y + at;
            t.cols = std::min(tileCols, outW - ox0);
            t.m0 = g0;
            t.m1 = std::min(M, g0 + l.groupChannels);
            (ox0 + tileCols < outW ? whole : last)(t);
          }
    }
  });
  return Status::ok();
}
#endif

} // namespace ortc::cpu::kernels
