//===- ConvChannelsLast.cpp - Conv on channels-last tensors, fp32 ---------===//
//
// Conv with channels_last = 1 (what cpu-conv-channels-last makes of a 2-D
// ortc.fused_conv): X is [N, H, W, C], Y and the residual [N, OH, OW, M],
// and W keeps ONNX's [M, C/group, KH, KW] unless the compiler packed it
// (packed_w = 3). Every position is a run of channels, so:
//  - a group-1 conv is one GEMM, Y[P, M] = A[P, K] * W^T[K, M] over the N *
//    OH * OW positions, K in (kh, kw, c) order as packConvWeightsChannelsLast
//    packs W^T; the bias is per column and the residual has Y's layout, so
//    the GEMM's epilogue takes both. On AVX-512 the GEMM's tiles read A's
//    rows in place (sgemmRowsOfTaps: offsets into X, zero-padded once when
//    the conv has pads, one run of KW * C floats per row of taps); else A
//    is X itself (1x1, stride 1, unpadded) or im2col rows of channel runs,
//    which the GEMM packs; a 3x3 stride-1 conv onto more than 8x8 outputs
//    runs as Winograd instead (packed_w 6 or 7: convWinogradChannelsLast,
//    ConvWinograd.cpp);
//  - a depthwise conv sums its taps over vectors of channels at each
//    position: every lane is used at any width, and a stride is only a step
//    between positions.
// MaxPool with channels_last (ortc.max_pool) takes the maximum the same
// way, a vector of channels at a time.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/ConvCommon.h"
#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/SpatialKernels.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include "providers/cpu/kernels/EpilogueSimd.h"
#endif

namespace ortc::cpu {

void packConvWeightsChannelsLast(const float *w, int64_t M, int64_t C, int64_t kSize,
                                 float *packed) {
  // W^T's row k = t * C + c is W's column c * kSize + t: reorder W's rows
  // to (t, c), then pack them as the columns of W^T.
  int64_t K = C * kSize;
  std::vector<float> rows(size_t(M * K));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t t = 0; t < kSize; ++t)
        rows[size_t(m * K + t * C + c)] = w[m * K + c * kSize + t];
  packGemmB(rows.data(), K, /*transB=*/true, K, M, 1.0f, packed);
}

namespace kernels {
namespace {

constexpr const char *kOp = "Conv";
// Most floats of im2col rows built before the GEMM consumes them: rows of
// a whole image would take 7 MiB for ResNet-50's 64-channel 3x3 conv.
constexpr int64_t kIm2colChunkFloats = int64_t(1) << 19;
// Most outputs of a depthwise conv split statically, a contiguous run of
// rows per thread: 4 MiB of output, about what stays in the caches.
constexpr int64_t kDepthwiseStaticSplitOutputs = int64_t(1) << 20;

inline bool inside(int64_t i, int64_t n) { return uint64_t(i) < uint64_t(n); }

/// How im2col moves runs of channels: std::copy and std::fill (library
/// calls) for the portable path.
struct PortableRuns {
  static void copy(float *dst, const float *src, int64_t n) { std::copy(src, src + n, dst); }
  static void zero(float *dst, int64_t n) { std::fill(dst, dst + n, 0.f); }
};

/// Rows [r0, r1) of the im2col matrix [N * OH * OW, KH * KW * C] of
/// channels-last X: row (n, oh, ow) holds, tap by tap, the C channels of
/// the input position the tap reads, zeros where it reads padding. Taps
/// along a row whose positions are all inside are one contiguous run.
/// `Runs` copies and zeroes them (the stem's runs are 3 channels: a
/// library call per run costs more than the copy).
template <typename Runs>
__attribute__((always_inline)) inline void
im2colRowsWith(const float *x, int64_t C, const Geometry &g, int64_t r0, int64_t r1, float *a) {
  int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  int64_t KH = g.k[1], KW = g.k[2], K = KH * KW * C;
  for (int64_t r = r0; r < r1; ++r, a += K) {
    int64_t ow = r % OW, oh = r / OW % OH, n = r / (OW * OH);
    const float *image = x + n * H * W * C;
    int64_t iw0 = ow * g.s[2] - g.padBegin[2];
    bool wholeRow = g.d[2] == 1 && iw0 >= 0 && iw0 + KW <= W;
    float *dst = a;
    for (int64_t kh = 0; kh < KH; ++kh) {
      int64_t ih = oh * g.s[1] - g.padBegin[1] + kh * g.d[1];
      if (!inside(ih, H)) {
        Runs::zero(dst, KW * C);
        dst += KW * C;
        continue;
      }
      const float *in = image + ih * W * C;
      if (wholeRow) {
        Runs::copy(dst, in + iw0 * C, KW * C);
        dst += KW * C;
        continue;
      }
      for (int64_t kw = 0; kw < KW; ++kw, dst += C) {
        int64_t iw = iw0 + kw * g.d[2];
        if (inside(iw, W))
          Runs::copy(dst, in + iw * C, C);
        else
          Runs::zero(dst, C);
      }
    }
  }
}

#if defined(__x86_64__) || defined(__i386__)
/// Runs in 8-float vectors, the tail a float at a time (AMD's masked
/// stores are microcoded).
struct Avx2Runs {
  ORTC_AVX2 static void copy(float *dst, const float *src, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_loadu_ps(src + i));
    for (; i < n; ++i)
      dst[i] = src[i];
  }
  ORTC_AVX2 static void zero(float *dst, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
      _mm256_storeu_ps(dst + i, _mm256_setzero_ps());
    for (; i < n; ++i)
      dst[i] = 0.f;
  }
};

ORTC_AVX2 void im2colRowsAvx2(const float *x, int64_t C, const Geometry &g, int64_t r0, int64_t r1,
                              float *a) {
  im2colRowsWith<Avx2Runs>(x, C, g, r0, r1, a);
}
#endif

void im2colRowsPortable(const float *x, int64_t C, const Geometry &g, int64_t r0, int64_t r1,
                        float *a) {
  im2colRowsWith<PortableRuns>(x, C, g, r0, r1, a);
}

using Im2colRowsFn = void (*)(const float *, int64_t, const Geometry &, int64_t, int64_t, float *);

Im2colRowsFn pickIm2colRows() {
#if defined(__x86_64__) || defined(__i386__)
  // AVX-512 reads its rows in place (readsRowsOfTaps) and never gets here.
  switch (kernelIsa()) {
  case KernelIsa::Avx512:
  case KernelIsa::Avx2:
    return im2colRowsAvx2;
  case KernelIsa::Generic:
    break;
  }
#endif
  return im2colRowsPortable;
}

/// Whether a group-1 conv reads its GEMM rows in place, tap by tap, from X
/// (zero-padded first when it has pads: sgemmRowsOfTaps), rather than
/// from im2col rows the GEMM packs again. A pointwise conv's rows are X's
/// own, and the GEMM packs them per block: in place pays where packing is
/// a large share and the rows are long enough for the broadcasts to stream
/// (measured on MobileNetV2's and ResNet-50's pointwise convs: 144 -> 24
/// channels 0.29 -> 0.23 ms, 256 -> 128 at 56x56 1.54 -> 1.37; 32 -> 16
/// channels 0.18 -> 0.29 stays packed). Once the in-place tiles prefetched
/// the next B slice, wide outputs gained too with their weights cold, as in
/// a model (512 -> 256 at 28x28 1.44 -> 1.37 ms, 512 -> 2048 at 7x7 0.89 ->
/// 0.84).
constexpr int64_t kInPlacePointwiseChannels = 64;
bool readsRowsOfTaps(const Geometry &g, int64_t C, int64_t M) {
  if (!sgemmRowsOfTapsAvailable())
    return false;
  return !g.pointwise() || C >= kInPlacePointwiseChannels;
}

bool hasPads(const Geometry &g) {
  return g.padBegin[1] || g.padBegin[2] || g.padEnd[1] || g.padEnd[2];
}

/// Floats of scratch convGemm takes.
int64_t convGemmScratchFloats(const Geometry &g, int64_t N, int64_t C, int64_t M) {
  bool inPlace = readsRowsOfTaps(g, C, M);
  if (!inPlace && g.pointwise())
    return 0;
  if (!inPlace)
    return kIm2colChunkFloats + C * g.kernelSize() * kGemmPanelHeight;
  int64_t padded = 0;
  if (hasPads(g))
    padded = roundUpTo16(N * (g.in[1] + g.padBegin[1] + g.padEnd[1]) *
                         (g.in[2] + g.padBegin[2] + g.padEnd[2]) * C);
  // Row and tap offsets, int64 each.
  return padded + 2 * (N * g.outSize() + g.kernelSize()) + 16;
}

/// sgemmRowsOfTaps over `rows` rows (see it for x, rowOffsets and
/// tapOffsets; K = runs * runLength) into y [rows, M], split over `pool`:
/// whole 6-row tiles per task, as evenly as they go, the rows left over (a
/// shorter tile, which costs less) with the first task, which has the
/// fewest (7x7 positions on 2 threads are 25 + 24 rows, not 30 + 19); no
/// more tasks than threads nor than ~1 MFLOP each.
void rowsOfTapsParallel(ThreadPool *pool, int64_t rows, int64_t M, int64_t runLength, int64_t runs,
                        const float *x, const int64_t *rowOffsets, const int64_t *tapOffsets,
                        const float *packedW, float *y, bool accumulate,
                        const GemmEpilogue &epilogue) {
  int64_t K = runLength * runs;
  int64_t full = rows / kGemmPanelHeight, left = rows % kGemmPanelHeight;
  int64_t threads = pool ? pool->threads() : 1;
  int64_t tasks = std::max<int64_t>(1, std::min({threads, full, 2 * rows * M * K >> 20}));
  parallelFor(pool, tasks, [&](int64_t t) {
    int64_t r0 = t == 0 ? 0 : full * t / tasks * kGemmPanelHeight + left;
    int64_t r1 = full * (t + 1) / tasks * kGemmPanelHeight + left;
    if (r0 >= r1)
      return;
    GemmEpilogue part = epilogue.at(r0, 0);
    sgemmRowsOfTaps(r1 - r0, M, runLength, runs, rowOffsets ? x : x + r0 * K,
                    rowOffsets ? rowOffsets + r0 : nullptr, tapOffsets, packedW, y + r0 * M, M,
                    accumulate, part.any() ? &part : nullptr);
  });
}

/// A pointwise conv's GEMM over `rows` positions of C channels, back to
/// back, into y [rows, M] (W packed as the channels-last conv's W^T), on
/// `pool`: the rows read in place where convGemm would (readsRowsOfTaps),
/// else packed by the GEMM.
void pointwiseGemm(ThreadPool *pool, int64_t rows, int64_t M, int64_t C, const float *x,
                   const float *packedW, float *y, const GemmEpilogue &epilogue) {
  if (sgemmRowsOfTapsAvailable() && C >= kInPlacePointwiseChannels)
    rowsOfTapsParallel(pool, rows, M, C, 1, x, nullptr, nullptr, packedW, y, false, epilogue);
  else
    sgemmPackedParallel(pool, rows, M, C, x, C, false, packedW, y, M, false,
                        epilogue.any() ? &epilogue : nullptr);
}

/// A group-1 conv as one GEMM over all N * OH * OW positions (see the file
/// comment), added to y's values when `accumulate`; `work` holds
/// convGemmScratchFloats floats.
void convGemm(const KernelCall &call, const Geometry &g, const float *x, const float *packedWt,
              int64_t N, int64_t C, int64_t M, const GemmEpilogue &epilogue, float *y, float *work,
              bool accumulate) {
  int64_t rows = N * g.outSize(), K = C * g.kernelSize();
  bool inPlace = readsRowsOfTaps(g, C, M);
  if (g.pointwise() && !inPlace) {
    sgemmPackedParallel(call.pool, rows, M, K, x, C, false, packedWt, y, M, accumulate,
                        epilogue.any() ? &epilogue : nullptr);
    return;
  }
  if (inPlace) {
    int64_t H = g.in[1], W = g.in[2], pt = g.padBegin[1], pl = g.padBegin[2];
    int64_t Hp = H + pt + g.padEnd[1], Wp = W + pl + g.padEnd[2];
    const float *xp = x;
    float *next = work;
    if (hasPads(g)) {
      // X with its zero border: every tap of every row is inside.
      float *padded = work;
      next += roundUpTo16(N * Hp * Wp * C);
      parallelForRuns(call.pool, N * Hp, Wp * C, [&](int64_t row) {
        int64_t n = row / Hp, ih = row % Hp - pt;
        float *dst = padded + row * Wp * C;
        if (!inside(ih, H)) {
          std::fill(dst, dst + Wp * C, 0.f);
          return;
        }
        std::fill(dst, dst + pl * C, 0.f);
        std::copy(x + (n * H + ih) * W * C, x + (n * H + ih + 1) * W * C, dst + pl * C);
        std::fill(dst + (pl + W) * C, dst + Wp * C, 0.f);
      });
      xp = padded;
    }
    if (g.pointwise()) {
      // X's rows are the GEMM's, back to back.
      rowsOfTapsParallel(call.pool, rows, M, C, 1, x, nullptr, nullptr, packedWt, y, accumulate,
                         epilogue);
      return;
    }
    int64_t *rowOffsets = reinterpret_cast<int64_t *>(next);
    int64_t *tapOffsets = rowOffsets + rows;
    // Nested loops, not a division per row: at 8 images a stem has 10^5.
    int64_t *offset = rowOffsets;
    for (int64_t n = 0; n < N; ++n)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow)
          *offset++ = ((n * Hp + oh * g.s[1]) * Wp + ow * g.s[2]) * C;
    // Without dilation along W a row of taps is one run of KW * C floats
    // (the 3-channel stem: runs of 21 rather than 3).
    bool rowRuns = g.d[2] == 1;
    int64_t runs = rowRuns ? g.k[1] : g.kernelSize(), runLength = rowRuns ? g.k[2] * C : C;
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < (rowRuns ? 1 : g.k[2]); ++kw)
        tapOffsets[rowRuns ? kh : kh * g.k[2] + kw] = (kh * g.d[1] * Wp + kw * g.d[2]) * C;
    rowsOfTapsParallel(call.pool, rows, M, runLength, runs, xp, rowOffsets, tapOffsets, packedWt, y,
                       accumulate, epilogue);
    return;
  }
  Im2colRowsFn im2colRows = pickIm2colRows();
  int64_t chunk = std::max<int64_t>(kGemmPanelHeight,
                                    kIm2colChunkFloats / K / kGemmPanelHeight * kGemmPanelHeight);
  for (int64_t r0 = 0; r0 < rows; r0 += chunk) {
    int64_t r1 = std::min(rows, r0 + chunk);
    parallelForRuns(call.pool, r1 - r0, K,
                    [&](int64_t i) { im2colRows(x, C, g, r0 + i, r0 + i + 1, work + i * K); });
    GemmEpilogue part = epilogue.at(r0, 0);
    sgemmPackedParallel(call.pool, r1 - r0, M, K, work, K, false, packedWt, y + r0 * M, M,
                        accumulate, part.any() ? &part : nullptr);
  }
}

/// A depthwise conv's operands: W transposed to [KH * KW, C] so that a
/// tap's weights are a run of channels like X's.
struct DepthwiseRows {
  const float *x, *wt, *bias, *residual, *zeros;
  const Geometry &g;
  const GemmEpilogue &epilogue;
  int64_t C;
  /// When not 0, x is a ring of this many input rows of the output row's
  /// image, row ih at ih % ringRows (a depthwise block's expansion).
  int64_t ringRows = 0;

  int64_t rowFloats() const { return g.out[2] * C; }
  /// The input image of output row `row` (n * OH + oh).
  const float *image(int64_t row) const { return x + row / g.out[1] * g.in[1] * g.in[2] * C; }
  /// Input row kh of output row `row` (n * OH + oh): `zeros` (a row of
  /// zeros) when it is padding.
  const float *inputRow(int64_t row, int64_t kh) const {
    int64_t ih = row % g.out[1] * g.s[1] - g.padBegin[1] + kh * g.d[1];
    if (!inside(ih, g.in[1]))
      return zeros;
    return ringRows ? x + ih % ringRows * g.in[2] * C : image(row) + ih * g.in[2] * C;
  }
};

/// One output row, every channel, in portable C++: taps summed, then the
/// epilogue over the row as [OW, C] with the bias per column.
void depthwiseRowGeneric(const DepthwiseRows &d, int64_t row, float *out) {
  const Geometry &g = d.g;
  int64_t C = d.C, OW = g.out[2];
  const float *residual = d.residual ? d.residual + row * d.rowFloats() : nullptr;
  // A residual in y's own row (the sum written over it) is zeroed below:
  // keep a copy.
  thread_local std::vector<float> residualCopy;
  if (residual == out) {
    residualCopy.assign(residual, residual + OW * C);
    residual = residualCopy.data();
  }
  std::fill(out, out + OW * C, 0.f);
  for (int64_t kh = 0; kh < g.k[1]; ++kh) {
    const float *in = d.inputRow(row, kh);
    for (int64_t kw = 0; kw < g.k[2]; ++kw) {
      const float *w = d.wt + (kh * g.k[2] + kw) * C;
      for (int64_t ow = 0; ow < OW; ++ow) {
        int64_t iw = ow * g.s[2] - g.padBegin[2] + kw * g.d[2];
        if (!inside(iw, g.in[2]))
          continue;
        for (int64_t c = 0; c < C; ++c)
          out[ow * C + c] += in[iw * C + c] * w[c];
      }
    }
  }
  GemmEpilogue e = d.epilogue;
  e.rowBias = nullptr;
  e.colBias = d.bias;
  e.residual = residual;
  e.ldr = C;
  if (e.any())
    e.apply(out, C, OW, C);
}

#if defined(__x86_64__) || defined(__i386__)
// Vector values pass only between functions of one ISA's target attribute;
// GCC's ABI note on them does not apply.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
/// AVX-512: 16 channels a vector, the last block k-masked.
struct Avx512Ops {
  using V = __m512;
  using Mask = __mmask16;
  static constexpr int64_t kLanes = 16;
  static constexpr int kRegisters = 32;
  ORTC_AVX512 static Mask mask(int64_t left) {
    return left >= 16 ? Mask(0xFFFF) : Mask((1u << left) - 1);
  }
  ORTC_AVX512 static V zero() { return _mm512_setzero_ps(); }
  ORTC_AVX512 static V load(const float *p, Mask m) { return _mm512_maskz_loadu_ps(m, p); }
  ORTC_AVX512 static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  ORTC_AVX512 static V add(V a, V b) { return _mm512_add_ps(a, b); }
  /// + residual (or null), activation, store.
  ORTC_AVX512 static void finish(const GemmEpilogue &e, V v, const float *res, float *out, Mask m) {
    if (res)
      v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, res));
    _mm512_mask_storeu_ps(out, m, activateAvx512(e.activation, e, v));
  }
};

/// AVX2: 8 channels a vector; the last block reads and writes through a
/// small buffer (AMD's masked stores are microcoded).
struct Avx2Ops {
  using V = __m256;
  using Mask = int64_t; // lanes present
  static constexpr int64_t kLanes = 8;
  static constexpr int kRegisters = 16;
  ORTC_AVX2 static Mask mask(int64_t left) { return std::min<int64_t>(left, 8); }
  ORTC_AVX2 static V zero() { return _mm256_setzero_ps(); }
  ORTC_AVX2 static V load(const float *p, Mask m) {
    if (m == 8)
      return _mm256_loadu_ps(p);
    alignas(32) float part[8] = {};
    std::memcpy(part, p, size_t(m) * sizeof(float));
    return _mm256_load_ps(part);
  }
  ORTC_AVX2 static void store(float *p, V v, Mask m) {
    if (m == 8) {
      _mm256_storeu_ps(p, v);
      return;
    }
    alignas(32) float part[8];
    _mm256_store_ps(part, v);
    std::memcpy(p, part, size_t(m) * sizeof(float));
  }
  ORTC_AVX2 static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  ORTC_AVX2 static V add(V a, V b) { return _mm256_add_ps(a, b); }
  ORTC_AVX2 static void finish(const GemmEpilogue &e, V v, const float *res, float *out, Mask m) {
    if (res)
      v = _mm256_add_ps(v, load(res, m));
    store(out, activateAvx2(e.activation, e, v), m);
  }
};

// The row once per ISA: the code carries each ISA's target attribute itself
// (clang refuses vector values in a template without it).
#define ORTC_ROW_NAME depthwiseRowAvx512
#define ORTC_ROW_TARGET ORTC_AVX512
#define ORTC_ROW_OPS Avx512Ops
#include "providers/cpu/kernels/DepthwiseRowVariant.inc"
#define ORTC_ROW_NAME depthwiseRowAvx2
#define ORTC_ROW_TARGET ORTC_AVX2
#define ORTC_ROW_OPS Avx2Ops
#include "providers/cpu/kernels/DepthwiseRowVariant.inc"
#pragma GCC diagnostic pop

#endif

/// Output row `row` (n * OH + oh) of d into `out` (its OW * C floats).
using DepthwiseRowFn = void (*)(const DepthwiseRows &, int64_t row, float *out);

/// The row function for this CPU and kernel.
DepthwiseRowFn pickDepthwiseRow(const Geometry &g) {
#if defined(__x86_64__) || defined(__i386__)
  KernelIsa isa = kernelIsa();
  if (g.k[1] <= kMaxDepthwiseRows && (isa == KernelIsa::Avx512 || isa == KernelIsa::Avx2)) {
    bool avx512 = isa == KernelIsa::Avx512;
    bool fixed = g.d[2] == 1 && g.k[1] == g.k[2] && (g.k[1] == 3 || g.k[1] == 5) &&
                 (g.s[2] == 1 || g.s[2] == 2);
    if (!fixed)
      return avx512 ? depthwiseRowAvx512<0, 0, 0> : depthwiseRowAvx2<0, 0, 0>;
    if (g.k[1] == 3)
      return g.s[2] == 1 ? (avx512 ? depthwiseRowAvx512<3, 3, 1> : depthwiseRowAvx2<3, 3, 1>)
                         : (avx512 ? depthwiseRowAvx512<3, 3, 2> : depthwiseRowAvx2<3, 3, 2>);
    return g.s[2] == 1 ? (avx512 ? depthwiseRowAvx512<5, 5, 1> : depthwiseRowAvx2<5, 5, 1>)
                       : (avx512 ? depthwiseRowAvx512<5, 5, 2> : depthwiseRowAvx2<5, 5, 2>);
  }
#endif
  (void)g;
  return depthwiseRowGeneric;
}

/// Y of `yShape`, and the residual Z (when given) of Y's shape.
Status checkOutputAndResidual(const TensorView &Y, const std::vector<int64_t> &yShape,
                              const TensorView *Z) {
  if (Status s = checkOutputShape(kOp, Y, yShape); !s.isOk())
    return s;
  if (Z && Z->shape != yShape)
    return invalid(kOp, "the residual " + shapeToString(Z->shape) + " differs from Y " +
                            shapeToString(yShape));
  return Status::ok();
}

/// W [C, 1, KH, KW] as [KH * KW, C] into wt, so that a tap's weights are a
/// run of channels, then `width` zeros (the padding rows).
void transposeDepthwiseWeights(const float *w, int64_t C, int64_t kSize, int64_t width, float *wt) {
  for (int64_t c = 0; c < C; ++c)
    for (int64_t t = 0; t < kSize; ++t)
      wt[t * C + c] = w[c * kSize + t];
  std::fill(wt + C * kSize, wt + C * kSize + width, 0.f);
}

/// Every output row of the depthwise conv d over N images, on call's pool.
void runDepthwiseRows(const KernelCall &call, const DepthwiseRows &d, int64_t N, float *y) {
  DepthwiseRowFn rowFn = pickDepthwiseRow(d.g);
  // A layer that fits in cache: one contiguous run of rows per thread,
  // the split the GEMM before it made of the positions, so that each
  // thread reads what it wrote itself (MobileNetV2 b1 at 2 threads: 3.84
  // -> 3.55 ms); a larger one in runs handed out as threads come free.
  int64_t rowsAll = N * d.g.out[1], outputs = rowsAll * d.rowFloats();
  int64_t threads = call.pool ? call.pool->threads() : 1;
  if (outputs > kDepthwiseStaticSplitOutputs) {
    parallelForRuns(call.pool, rowsAll, d.rowFloats(),
                    [&](int64_t row) { rowFn(d, row, y + row * d.rowFloats()); });
    return;
  }
  if (outputs <= kMinElementsPerBlock)
    threads = 1;
  parallelFor(call.pool, std::min(threads, rowsAll), [&](int64_t t) {
    for (int64_t row = rowsAll * t / threads; row < rowsAll * (t + 1) / threads; ++row)
      rowFn(d, row, y + row * d.rowFloats());
  });
}

} // namespace

Status convChannelsLast(const KernelCall &call) {
  const TensorView *X = call.input(0), *Wt = call.input(1), *B = call.input(2);
  const TensorView *Z = call.input(3);
  if (Status s = checkFloats(kOp, {{X, "input X"}, {Wt, "input W"}}); !s.isOk())
    return s;
  if (Status s = checkOptionalFloat(kOp, B, "input B"); !s.isOk())
    return s;
  if (Status s = checkOptionalFloat(kOp, Z, "residual"); !s.isOk())
    return s;
  if (Status s = checkSingleOutput(kOp, call); !s.isOk())
    return s;
  GemmEpilogue epilogue;
  if (Status s = convActivation(call, epilogue); !s.isOk())
    return s;
  if (X->shape.size() != 4 || Wt->shape.size() != 4)
    return invalid(kOp, "channels_last needs X [N,H,W,C] and W [M,C/group,KH,KW], got X " +
                            shapeToString(X->shape) + " and W " + shapeToString(Wt->shape));
  const TensorView &Y = call.outputs[0];
  int64_t N = X->shape[0], C = X->shape[3], M = Wt->shape[0];
  int64_t group = call.attrs.getInt("group", 1);
  bool depthwise = isDepthwiseConv(C, group) && M == C && Wt->shape[1] == 1;
  if (!depthwise && (group != 1 || Wt->shape[1] != C))
    return invalid(kOp, "channels_last takes group 1 or a depthwise conv with one output "
                        "channel per group; group " +
                            std::to_string(group) + " does not fit X " + shapeToString(X->shape) +
                            " and W " + shapeToString(Wt->shape));
  std::vector<int64_t> kernel = {Wt->shape[2], Wt->shape[3]};
  if (call.attrs.has("kernel_shape") && call.attrs.getInts("kernel_shape") != kernel)
    return invalid(kOp, "kernel_shape " + shapeToString(call.attrs.getInts("kernel_shape")) +
                            " differs from W " + shapeToString(Wt->shape));
  if (B && B->shape != std::vector<int64_t>{M})
    return invalid(kOp, "B must be [" + std::to_string(M) + "], got " + shapeToString(B->shape));
  Geometry g;
  if (Status s =
          computeGeometry(kOp, call.attrs, {X->shape[1], X->shape[2]}, kernel, true, false, g);
      !s.isOk())
    return s;
  std::vector<int64_t> yShape = {N, g.out[1], g.out[2], M};
  if (Status s = checkOutputAndResidual(Y, yShape, Z); !s.isOk())
    return s;
  int64_t packedW = call.attrs.getInt("packed_w", 0);
  bool winograd = packedW == 6 || packedW == 7;
  if (packedW != 0 && ((packedW != 3 && !winograd) || depthwise))
    return invalid(kOp, std::string("channels_last reads packed_w 0") +
                            (depthwise ? "" : ", 3, 6 or 7") + " here, got " +
                            std::to_string(packedW));
  if (winograd &&
      !(g.k[1] == 3 && g.k[2] == 3 && g.s[1] == 1 && g.s[2] == 1 && g.d[1] == 1 && g.d[2] == 1))
    return invalid(kOp, "packed_w " + std::to_string(packedW) +
                            " (Winograd) needs a 3x3 kernel at stride 1 and dilation 1, got W " +
                            shapeToString(Wt->shape));

  const float *x = static_cast<const float *>(X->data);
  const float *w = static_cast<const float *>(Wt->data);
  const float *bias = B ? static_cast<const float *>(B->data) : nullptr;
  const float *residual = Z ? static_cast<const float *>(Z->data) : nullptr;
  float *y = static_cast<float *>(Y.data);
  int64_t kSize = g.kernelSize(), K = C * kSize, rows = N * g.outSize();
  if (rows == 0 || M == 0)
    return Status::ok();
  // The residual may be y itself (the sum written over it); any other
  // overlap would be read after it was written.
  const bool sumOverResidual = residual == y;
  size_t yFloats = size_t(rows * M);
  if (residual && !sumOverResidual && residual < y + yFloats && y < residual + yFloats)
    return invalid(kOp, "the residual overlaps Y without being Y");

  if (depthwise) {
    float *wt = nullptr;
    int64_t width = X->shape[2] * C;
    if (Status s = allocScratch(call, kOp, size_t(K + width), wt); !s.isOk())
      return s;
    transposeDepthwiseWeights(w, C, kSize, width, wt);
    runDepthwiseRows(call, DepthwiseRows{x, wt, bias, residual, wt + K, g, epilogue, C}, N, y);
    return Status::ok();
  }

  if (winograd) {
    // The epilogue reads the residual before it writes each value, so a
    // residual that is y itself takes no other path.
    GemmEpilogue full = epilogue;
    full.colBias = bias;
    full.residual = residual;
    full.ldr = M;
    return convWinogradChannelsLast(call, g, packedW == 7 ? 4 : 2, x, w, N, C, M, full, y);
  }

  // Scratch: W^T packed when the plan did not pack it, then convGemm's.
  size_t packedFloats = packedW == 3 ? 0 : size_t(roundUpTo16(int64_t(packedGemmBSize(K, M))));
  size_t aFloats = size_t(convGemmScratchFloats(g, N, C, M));
  float *work = nullptr;
  if (packedFloats + aFloats > 0)
    if (Status s = allocScratch(call, kOp, packedFloats + aFloats, work); !s.isOk())
      return s;
  const float *packedWt = w;
  if (packedW != 3) {
    packConvWeightsChannelsLast(w, M, C, kSize, work);
    packedWt = work;
  }
  // y over the residual (the plan's in-place sum): the product is added to
  // y's values in every K block, not the residual in the last one, which
  // the first would have overwritten.
  GemmEpilogue full = epilogue;
  full.colBias = bias;
  full.residual = sumOverResidual ? nullptr : residual;
  full.ldr = M;
  convGemm(call, g, x, packedWt, N, C, M, full, y, work ? work + packedFloats : nullptr,
           sumOverResidual);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// A depthwise conv and the pointwise convs around it
//===----------------------------------------------------------------------===//

namespace {

// Most floats of the tensors between a block's convs that are made whole,
// each conv in turn (1 MiB, well inside L2); larger ones are made a band of
// rows at a time and stay in cache.
constexpr int64_t kWholeBlockFloats = int64_t(1) << 18;
// Fewest positions per band: the GEMMs' tiles want rows to spread over.
constexpr int64_t kBandPositions = 96;

/// What the tasks of a depthwise block share.
struct DepthwiseBlock {
  const float *x; // [N, H, W, C]
  int64_t C;
  const float *expandW; // packed W1^T [C, E]; null: the depthwise conv reads x
  GemmEpilogue expand;
  const DepthwiseRows *rows; // E channels; with expandW, x becomes each task's ring
  DepthwiseRowFn rowFn;
  const float *projectW; // packed W3^T [E, P]; null: the depthwise rows are y's
  GemmEpilogue project;  // column bias, residual (ldr P), activation
  int64_t P, bandRows;
};

/// The output rows [row0, row1) (n * OH + oh) of one task, a band of rows
/// at a time: the expansion's GEMM makes only the input rows the band newly
/// needs into `ring` (two GEMMs where it wraps; the rows a band shares with
/// the last are kept), the depthwise rows read them from there into `band`
/// (or y), and the projection's GEMM reads the band into y.
void depthwiseBlockRows(const DepthwiseBlock &b, float *ring, float *band, int64_t row0,
                        int64_t row1, float *y) {
  DepthwiseRows d = *b.rows;
  const Geometry &g = d.g;
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2], E = d.C;
  if (b.expandW)
    d.x = ring;
  for (int64_t row = row0; row < row1;) {
    int64_t n = row / OH, imageEnd = std::min(row1, (n + 1) * OH);
    const float *image = b.x + n * H * W * b.C;
    int64_t made = 0; // input rows [.., made) of image n are in the ring
    while (row < imageEnd) {
      int64_t oh = row % OH, bandEnd = std::min(imageEnd, row + b.bandRows);
      if (b.expandW) {
        int64_t first = std::max<int64_t>(0, oh * g.s[1] - g.padBegin[1]);
        int64_t last =
            std::min(H, ((bandEnd - 1) % OH) * g.s[1] - g.padBegin[1] + (g.k[1] - 1) * g.d[1] + 1);
        for (int64_t ih = std::max(first, made); ih < last;) {
          int64_t end = std::min(last, ih + d.ringRows - ih % d.ringRows);
          pointwiseGemm(nullptr, (end - ih) * W, E, b.C, image + ih * W * b.C, b.expandW,
                        ring + ih % d.ringRows * W * E, b.expand);
          ih = end;
        }
        made = std::max(made, last);
      }
      float *out = b.projectW ? band : y + row * d.rowFloats();
      for (int64_t r = row; r < bandEnd; ++r)
        b.rowFn(d, r, out + (r - row) * d.rowFloats());
      if (b.projectW) {
        pointwiseGemm(nullptr, (bandEnd - row) * OW, b.P, E, band, b.projectW, y + row * OW * b.P,
                      b.project.at(row * OW, 0));
      }
      row = bandEnd;
    }
  }
}

} // namespace

/// ortc.depthwise_block: Y = project(depthwise(expand(X))) [+ residual]
/// over X [N, H, W, C] into Y [N, OH, OW, P]: inputs X, W1 [E, C, 1, 1]
/// (or absent: E = C), B1, W2 [E, 1, KH, KW], B2, W3 [P, E, 1, 1] (or
/// absent: P = E), B3, residual (Y's shape; needs W3); W1 and W3 packed as
/// the channels-last conv's W^T when packed_w is 3. Attributes:
/// expand_activation, the depthwise window and activation,
/// project_activation (each with _params). Small blocks run each conv in
/// turn through scratch; larger ones per thread a run of output rows, a
/// band at a time (depthwiseBlockRows), so the tensors between the convs
/// stay in cache (MobileNetV2's 16 -> 96 expansion at 112x112 is 4.8 MB an
/// image).
Status depthwiseBlockChannelsLast(const KernelCall &call) {
  DepthwiseBlockOperands o;
  if (Status s = checkDepthwiseBlock(kOp, call, /*channelsLast=*/true, 3, kMaxDepthwiseRows, o);
      !s.isOk())
    return s;
  const TensorView *X = o.X, *W1 = o.W1, *B1 = o.B1, *W2 = o.W2, *B2 = o.B2, *W3 = o.W3;
  const TensorView *B3 = o.B3;
  int64_t N = o.N, H = o.H, W = o.W, C = o.C, E = o.E, P = o.P;
  const Geometry &g = o.g;
  DepthwiseBlock b{};
  b.expand = o.expand;
  b.project = o.project;
  GemmEpilogue depthwise = o.depthwise;
  int64_t packedW = call.attrs.getInt("packed_w", 0);
  float *y = o.y;
  const float *residual = o.residual;
  int64_t rowsAll = N * g.out[1], OW = g.out[2];
  if (rowsAll == 0 || OW == 0 || P == 0)
    return Status::ok();

  // Scratch: W1^T and W3^T packed when the plan did not pack them; the
  // depthwise W as [KH * KW, E] and a row of zeros; then the tensors
  // between the convs, whole or as each task's ring and band.
  int64_t kSize = g.kernelSize(), width = W * E;
  int64_t threads = call.pool ? call.pool->threads() : 1, tasks = std::min(threads, rowsAll);
  int64_t expansionFloats = W1 ? N * H * width : 0, bandFloats = W3 ? rowsAll * OW * E : 0;
  bool whole = expansionFloats + bandFloats <= kWholeBlockFloats;
  b.bandRows = std::clamp<int64_t>((kBandPositions + OW - 1) / OW, 1, g.out[1]);
  int64_t ringRows =
      W1 ? std::min(H, (b.bandRows - 1) * g.s[1] + (g.k[1] - 1) * g.d[1] + 1) : int64_t(0);
  auto packedSize = [&](const TensorView *Wp, int64_t K, int64_t M) {
    return Wp && packedW != 3 ? roundUpTo16(int64_t(packedGemmBSize(K, M))) : int64_t(0);
  };
  int64_t packed1 = packedSize(W1, C, E), packed3 = packedSize(W3, E, P);
  int64_t weightFloats = roundUpTo16(E * kSize + width);
  int64_t perTask = roundUpTo16(ringRows * width) + (W3 ? roundUpTo16(b.bandRows * OW * E) : 0);
  int64_t between = whole ? roundUpTo16(expansionFloats) + bandFloats : tasks * perTask;
  float *work = nullptr;
  if (Status s = allocScratch(call, kOp, size_t(packed1 + packed3 + weightFloats + between), work);
      !s.isOk())
    return s;
  auto packed = [&](const TensorView *Wp, int64_t K, int64_t M, float *into) -> const float * {
    if (!Wp)
      return nullptr;
    if (packedW == 3)
      return static_cast<const float *>(Wp->data);
    packConvWeightsChannelsLast(static_cast<const float *>(Wp->data), M, K, 1, into);
    return into;
  };
  b.x = static_cast<const float *>(X->data);
  b.C = C;
  b.expandW = packed(W1, C, E, work);
  b.projectW = packed(W3, E, P, work + packed1);
  b.P = P;
  float *wt = work + packed1 + packed3, *rest = wt + weightFloats;
  transposeDepthwiseWeights(static_cast<const float *>(W2->data), E, kSize, width, wt);
  b.expand.colBias = B1 ? static_cast<const float *>(B1->data) : nullptr;
  b.project.colBias = B3 ? static_cast<const float *>(B3->data) : nullptr;
  b.project.residual = residual;
  b.project.ldr = P;
  const float *depthwiseBias = B2 ? static_cast<const float *>(B2->data) : nullptr;
  DepthwiseRows d{b.x, wt, depthwiseBias, nullptr, wt + E * kSize, g, depthwise, E};
  b.rows = &d;

  if (whole) {
    // Each conv in turn over all rows, the tensors between them in scratch.
    float *expansion = rest, *band = rest + roundUpTo16(expansionFloats);
    if (b.expandW) {
      pointwiseGemm(call.pool, N * H * W, E, C, b.x, b.expandW, expansion, b.expand);
      d.x = expansion;
    }
    runDepthwiseRows(call, d, N, b.projectW ? band : y);
    if (b.projectW)
      pointwiseGemm(call.pool, rowsAll * OW, P, E, band, b.projectW, y, b.project);
    return Status::ok();
  }
  // A contiguous run of output rows per thread; a run that starts inside an
  // image makes again the few expansion rows the run before it also needs.
  d.ringRows = ringRows;
  b.rowFn = pickDepthwiseRow(g);
  parallelFor(call.pool, tasks, [&](int64_t t) {
    float *ring = rest + t * perTask, *band = ring + roundUpTo16(ringRows * width);
    depthwiseBlockRows(b, ring, band, rowsAll * t / tasks, rowsAll * (t + 1) / tasks, y);
  });
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// MaxPool
//===----------------------------------------------------------------------===//

namespace {

/// out = max(out, in) over C channels, as `v > m ? v : m` (NaNs lose, as
/// in the NCHW MaxPool).
using MaxIntoFn = void (*)(float *out, const float *in, int64_t C);

void maxIntoGeneric(float *out, const float *in, int64_t C) {
  for (int64_t c = 0; c < C; ++c)
    out[c] = in[c] > out[c] ? in[c] : out[c];
}

#if defined(__x86_64__) || defined(__i386__)
/// maxIntoGeneric 16 channels a vector: max_ps(v, m) gives m when v is NaN
/// and on equal values, as `v > m ? v : m` does.
ORTC_AVX512 void maxIntoAvx512(float *out, const float *in, int64_t C) {
  for (int64_t c = 0; c < C; c += 16) {
    __mmask16 m = C - c >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << (C - c)) - 1);
    // The zero-masked max: GCC's plain max_ps reads an undefined vector and
    // warns of it.
    _mm512_mask_storeu_ps(out + c, m,
                          _mm512_maskz_max_ps(m, _mm512_maskz_loadu_ps(m, in + c),
                                              _mm512_maskz_loadu_ps(m, out + c)));
  }
}
#endif

/// Output row `row` (n * OH + oh) of a channels-last MaxPool: each position
/// the maximum of its window's input positions inside X, from the lowest
/// float (padding never counts).
void maxPoolRow(const float *x, const Geometry &g, int64_t C, int64_t row, float *y,
                MaxIntoFn maxInto) {
  int64_t n = row / g.out[1], oh = row % g.out[1];
  for (int64_t ow = 0; ow < g.out[2]; ++ow) {
    float *out = y + (row * g.out[2] + ow) * C;
    std::fill(out, out + C, std::numeric_limits<float>::lowest());
    for (int64_t i = 0; i < g.k[1]; ++i) {
      int64_t ih = oh * g.s[1] - g.padBegin[1] + i * g.d[1];
      for (int64_t j = 0; inside(ih, g.in[1]) && j < g.k[2]; ++j) {
        int64_t iw = ow * g.s[2] - g.padBegin[2] + j * g.d[2];
        if (inside(iw, g.in[2]))
          maxInto(out, x + ((n * g.in[1] + ih) * g.in[2] + iw) * C, C);
      }
    }
  }
}

} // namespace

/// ortc.max_pool: MaxPool over X [N, H, W, C] into Y [N, OH, OW, C].
Status maxPoolChannelsLast(const KernelCall &call) {
  const char *op = "MaxPool";
  const TensorView *X = call.input(0);
  if (Status s = checkFloat(op, X, "input X"); !s.isOk())
    return s;
  if (Status s = checkSingleOutput(op, call); !s.isOk())
    return s;
  if (X->shape.size() != 4)
    return invalid(op, "channels_last needs X [N,H,W,C], got " + shapeToString(X->shape));
  if (!call.attrs.has("kernel_shape"))
    return invalid(op, "missing kernel_shape");
  std::vector<int64_t> kernel = call.attrs.getInts("kernel_shape");
  if (kernel.size() != 2)
    return invalid(op, "channels_last needs a 2-D kernel_shape, got " + shapeToString(kernel));
  Geometry g;
  if (Status s = computeGeometry(op, call.attrs, {X->shape[1], X->shape[2]}, kernel, true, true, g);
      !s.isOk())
    return s;
  int64_t N = X->shape[0], C = X->shape[3];
  const TensorView &Y = call.outputs[0];
  if (Status s = checkOutputShape(op, Y, {N, g.out[1], g.out[2], C}); !s.isOk())
    return s;
  MaxIntoFn maxInto = maxIntoGeneric;
#if defined(__x86_64__) || defined(__i386__)
  if (kernelIsa() == KernelIsa::Avx512)
    maxInto = maxIntoAvx512;
#endif
  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(Y.data);
  parallelForRuns(call.pool, N * g.out[1], g.out[2] * C,
                  [&](int64_t row) { maxPoolRow(x, g, C, row, y, maxInto); });
  return Status::ok();
}

} // namespace kernels
} // namespace ortc::cpu
