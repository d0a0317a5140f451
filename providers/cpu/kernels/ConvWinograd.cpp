//===- ConvWinograd.cpp - 3x3 stride-1 Conv as Winograd F(2x2, 3x3) -------===//
//
// A group-1 3x3 Conv at stride 1 and dilation 1 (convRunsWinograd) computes
// each 2x2 block of outputs from the 4x4 input tile under it (Lavin and
// Gray, "Fast Algorithms for Convolutional Neural Networks", 2016):
//
//   Y = A^T [ sum over c of (G w G^T) . (B^T d B) ] A
//
// Per element xi of the 4x4 transformed tile the channel sum is a GEMM,
// Prod_xi [M, T] = U_xi [M, C] * V_xi [C, T] over the image's T tiles: 16
// multiplies per tile and channel pair where the direct conv takes 36. The
// compiler transforms W once (U = G w G^T) and packs each U_xi as GEMM A
// panels (packConvWeightsWinograd: packing "winograd_f2x3", packed_w = 4).
// A run works a band of tile rows at a time, so that the band's V and
// products stay in cache: it copies each channel's rows of the band into
// zero-padded column phases (even input columns, then odd ones), writes the
// transformed tiles straight into the 16 GEMMs' packed B panels, multiplies,
// and turns each output channel's products back into 2x2 blocks of output
// rows, which the fused epilogue finishes into Y. B^T, G and A^T hold only
// 0, +-1 and +-1/2: the sums stay within a few ulps of the direct conv's.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/ConvCommon.h"
#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__) || defined(__i386__)
#include "providers/cpu/kernels/EpilogueSimd.h"
#endif

namespace ortc::cpu {

size_t packedWinogradSize(int64_t M, int64_t C) {
  return size_t(kWinogradTileElements) * packedGemmASize(M, C);
}

void packConvWeightsWinograd(const float *w, int64_t M, int64_t C, float *packed) {
  // U = G g G^T per (m, c), G = [1 0 0; 1/2 1/2 1/2; 1/2 -1/2 1/2; 0 0 1],
  // gathered as 16 matrices U_xi [M, C].
  std::vector<float> u(size_t(kWinogradTileElements * M * C));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      const float *g = w + (m * C + c) * 9;
      double t[4][3], v[4][4];
      for (int j = 0; j < 3; ++j) {
        t[0][j] = g[j];
        t[1][j] = 0.5 * (double(g[j]) + g[3 + j] + g[6 + j]);
        t[2][j] = 0.5 * (double(g[j]) - g[3 + j] + g[6 + j]);
        t[3][j] = g[6 + j];
      }
      for (int i = 0; i < 4; ++i) {
        v[i][0] = t[i][0];
        v[i][1] = 0.5 * (t[i][0] + t[i][1] + t[i][2]);
        v[i][2] = 0.5 * (t[i][0] - t[i][1] + t[i][2]);
        v[i][3] = t[i][2];
      }
      for (int i = 0; i < 4; ++i)
        for (int j = 0; j < 4; ++j)
          u[size_t(((i * 4 + j) * M + m) * C + c)] = float(v[i][j]);
    }
  for (int64_t xi = 0; xi < kWinogradTileElements; ++xi)
    packGemmA(u.data() + xi * M * C, C, M, C, packed + xi * packedGemmASize(M, C));
}

namespace kernels {
namespace {

/// Tiles transformed and multiplied per band: the band's V (16 x C x
/// tiles floats) and its products stay about this size.
constexpr int64_t kWinogradBandBytes = int64_t(1) << 20;
/// Tiles per vector: the transforms run on 8 tiles at a time.
constexpr int64_t kLanes = 8;

/// The geometry of a run. Tile (th, tw) covers output rows 2th, 2th + 1 and
/// columns 2tw, 2tw + 1, and reads padded input rows 2th .. 2th + 3 and
/// columns 2tw .. 2tw + 3. A band is tile rows [th0, th0 + bandRows); its
/// tiles are numbered t = (th - th0) * tilesW + tw, the GEMMs' columns
/// (whole panels: lanes past the band's tiles transform the band's first
/// tile again, and nothing reads their products), in chunks of 8. A band's
/// plane holds each padded row as its even columns, then its odd ones
/// (halfW floats each, 8 of them slack): tap column j of tile tw is at
/// (j & 1) * halfW + tw + j / 2, so 8 neighbouring tiles read 8 contiguous
/// floats.
struct WinogradLayout {
  int64_t tilesH, tilesW, halfW, rowStride, bandRows, bandTiles, bandColumns, bandChunks;

  explicit WinogradLayout(const Geometry &g, int64_t C) {
    tilesH = (g.out[1] + 1) / 2;
    tilesW = (g.out[2] + 1) / 2;
    halfW = tilesW + 1 + kLanes;
    rowStride = 2 * halfW;
    int64_t tilesPerBand = std::max<int64_t>(
        kLanes, kWinogradBandBytes / (kWinogradTileElements * int64_t(sizeof(float)) * C));
    bandRows = std::clamp<int64_t>(tilesPerBand / tilesW, 1, tilesH);
    bandTiles = bandRows * tilesW;
    bandColumns = roundUp(bandTiles, kGemmPanelWidth);
    bandChunks = bandColumns / kLanes;
  }
  static int64_t roundUp(int64_t n, int64_t to) { return (n + to - 1) / to * to; }
  /// Padded rows a band's plane holds.
  int64_t planeRows() const { return 2 * bandRows + 2; }
};

/// One band: the tiles, where they are, and the scratch they go through.
struct WinogradBand {
  int64_t th0, rows, tiles, columns, chunks;
  /// Per chunk of 8 tiles: each lane's tile's offset in the band's plane
  /// (2 (th - th0) rowStride + tw; 0 past the band's tiles), and whether
  /// the 8 lie in one tile row (contiguous loads and stores).
  const int32_t *offsets;
  const uint8_t *inOneRow;
};

#if defined(__x86_64__) || defined(__i386__)
/// Lanes 0, 2, .., 14 (odd: 1, 3, .., 15) of the 16 floats a then b.
ORTC_AVX2 inline __m256 columnPhase(__m256 a, __m256 b, bool odd) {
  // Per 128-bit half a0 a2 b0 b2 | a4 a6 b4 b6, then the 64-bit pairs
  // reordered.
  __m256 pairs = odd ? _mm256_shuffle_ps(a, b, _MM_SHUFFLE(3, 1, 3, 1))
                     : _mm256_shuffle_ps(a, b, _MM_SHUFFLE(2, 0, 2, 0));
  return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(pairs), _MM_SHUFFLE(3, 1, 2, 0)));
}

/// Splits src's columns [0, c) into the two column phases of a padded row
/// (`row`: even columns, then odd ones at halfW), src's column c being
/// padded column padLeft + c, 16 at a time while whole; returns c.
ORTC_AVX2 int64_t splitColumnPhasesAvx2(const float *src, int64_t count, int64_t padLeft,
                                        int64_t halfW, float *row) {
  float *even = row + (padLeft & 1) * halfW + padLeft / 2;
  float *odd = row + ((padLeft + 1) & 1) * halfW + (padLeft + 1) / 2;
  int64_t c = 0;
  for (; c + 16 <= count; c += 16) {
    __m256 a = _mm256_loadu_ps(src + c), b = _mm256_loadu_ps(src + c + 8);
    _mm256_storeu_ps(even + c / 2, columnPhase(a, b, false));
    _mm256_storeu_ps(odd + c / 2, columnPhase(a, b, true));
  }
  return c;
}
#endif

/// Copies rows [first, first + count) of the padded input plane `x`
/// (padded row r is x's row r - padTop, padded column q its column q -
/// padLeft) into `plane`, each row split into its even and odd columns.
void copyBandRows(const float *x, const Geometry &g, const WinogradLayout &l, int64_t first,
                  int64_t count, float *plane) {
  const int64_t inH = g.in[1], inW = g.in[2], padTop = g.padBegin[1], padLeft = g.padBegin[2];
  // x's column c is padded column padLeft + c: phase (padLeft + c) % 2.
  for (int64_t r = 0; r < count; ++r) {
    float *row = plane + r * l.rowStride;
    std::fill(row, row + l.rowStride, 0.f);
    int64_t ir = first + r - padTop;
    if (ir < 0 || ir >= inH)
      continue;
    const float *src = x + ir * inW;
    int64_t c = 0;
#if defined(__x86_64__) || defined(__i386__)
    if (kernelIsa() != KernelIsa::Generic)
      c = splitColumnPhasesAvx2(src, inW, padLeft, l.halfW, row);
#endif
    for (; c < inW; ++c) {
      int64_t q = padLeft + c;
      row[(q & 1) * l.halfW + q / 2] = src[c];
    }
  }
}

/// The 16 transformed values B^T d B of the 4x4 tile d (row-major).
template <typename T> __attribute__((always_inline)) inline void inputTransform(const T d[16], T v[16]) {
  T t[16];
  for (int j = 0; j < 4; ++j) {
    t[j] = d[j] - d[8 + j];
    t[4 + j] = d[4 + j] + d[8 + j];
    t[8 + j] = d[8 + j] - d[4 + j];
    t[12 + j] = d[4 + j] - d[12 + j];
  }
  for (int i = 0; i < 4; ++i) {
    v[4 * i] = t[4 * i] - t[4 * i + 2];
    v[4 * i + 1] = t[4 * i + 1] + t[4 * i + 2];
    v[4 * i + 2] = t[4 * i + 2] - t[4 * i + 1];
    v[4 * i + 3] = t[4 * i + 1] - t[4 * i + 3];
  }
}

/// The 2x2 outputs A^T p A of the 16 products p (row-major), o[2i + j].
template <typename T> __attribute__((always_inline)) inline void outputTransform(const T p[16], T o[4]) {
  T s[8];
  for (int j = 0; j < 4; ++j) {
    s[j] = p[j] + p[4 + j] + p[8 + j];
    s[4 + j] = p[4 + j] - p[8 + j] - p[12 + j];
  }
  for (int i = 0; i < 2; ++i) {
    o[2 * i] = s[4 * i] + s[4 * i + 1] + s[4 * i + 2];
    o[2 * i + 1] = s[4 * i + 1] - s[4 * i + 2] - s[4 * i + 3];
  }
}

/// Where chunk k of channel c lands in transformed element xi's packed B
/// panels (16 columns per panel, each channel's 16 contiguous).
inline float *packedAt(float *v, const WinogradBand &b, int64_t C, int64_t xi, int64_t c,
                       int64_t k) {
  int64_t t0 = k * kLanes;
  return v + xi * C * b.columns + t0 / kGemmPanelWidth * (C * kGemmPanelWidth) +
         c * kGemmPanelWidth + t0 % kGemmPanelWidth;
}

/// Channel c's tiles of the band, transformed into V, one lane at a time.
void transformInputGeneric(const float *plane, const WinogradLayout &l, const WinogradBand &b,
                           int64_t C, int64_t c, float *v) {
  for (int64_t k = 0; k < b.chunks; ++k)
    for (int64_t lane = 0; lane < kLanes; ++lane) {
      float d[16], out[16];
      const float *at = plane + b.offsets[k * kLanes + lane];
      for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 4; ++j)
          d[4 * r + j] = at[r * l.rowStride + (j & 1) * l.halfW + j / 2];
      inputTransform(d, out);
      for (int64_t xi = 0; xi < kWinogradTileElements; ++xi)
        packedAt(v, b, C, xi, c, k)[lane] = out[xi];
    }
}

/// Output channel m's products of the band (prod: [16][columns]) as the
/// band's output rows in `rows` (2 per tile row, 2 tilesW floats each).
void transformOutputGeneric(const float *prod, const WinogradLayout &l, const WinogradBand &b,
                            float *rows) {
  for (int64_t t = 0; t < b.tiles; ++t) {
    float p[16], o[4];
    for (int64_t xi = 0; xi < kWinogradTileElements; ++xi)
      p[xi] = prod[xi * b.columns + t];
    outputTransform(p, o);
    float *at = rows + 2 * (t / l.tilesW) * (2 * l.tilesW) + 2 * (t % l.tilesW);
    at[0] = o[0];
    at[1] = o[1];
    at[2 * l.tilesW] = o[2];
    at[2 * l.tilesW + 1] = o[3];
  }
}

#if defined(__x86_64__) || defined(__i386__)
/// transformInputGeneric on 8 tiles per vector: loads where the chunk's
/// tiles are neighbours in one tile row, else gathers.
ORTC_AVX2 void transformInputAvx2(const float *plane, const WinogradLayout &l,
                                  const WinogradBand &b, int64_t C, int64_t c, float *v) {
  for (int64_t k = 0; k < b.chunks; ++k) {
    __m256 d[16], out[16];
    const int32_t *offsets = b.offsets + k * kLanes;
    if (b.inOneRow[k]) {
      const float *at = plane + offsets[0];
      for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 4; ++j)
          d[4 * r + j] = _mm256_loadu_ps(at + r * l.rowStride + (j & 1) * l.halfW + j / 2);
    } else {
      __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(offsets));
      for (int r = 0; r < 4; ++r)
        for (int j = 0; j < 4; ++j)
          d[4 * r + j] =
              _mm256_i32gather_ps(plane + r * l.rowStride + (j & 1) * l.halfW + j / 2, index, 4);
    }
    inputTransform(d, out);
    for (int64_t xi = 0; xi < kWinogradTileElements; ++xi)
      _mm256_storeu_ps(packedAt(v, b, C, xi, c, k), out[xi]);
  }
}

/// transformOutputGeneric on 8 tiles per vector: a chunk in one tile row
/// stores its two output rows' 16 columns whole.
ORTC_AVX2 void transformOutputAvx2(const float *prod, const WinogradLayout &l,
                                   const WinogradBand &b, float *rows) {
  const int64_t width = 2 * l.tilesW;
  for (int64_t k = 0; k * kLanes < b.tiles; ++k) {
    int64_t t0 = k * kLanes;
    __m256 p[16], o[4];
    for (int64_t xi = 0; xi < kWinogradTileElements; ++xi)
      p[xi] = _mm256_loadu_ps(prod + xi * b.columns + t0);
    outputTransform(p, o);
    if (b.inOneRow[k]) {
      float *at = rows + 2 * (t0 / l.tilesW) * width + 2 * (t0 % l.tilesW);
      for (int i = 0; i < 2; ++i) {
        // Tile outputs (j = 0, 1) interleaved: columns 2tw, 2tw + 1, ...
        __m256 lo = _mm256_unpacklo_ps(o[2 * i], o[2 * i + 1]);
        __m256 hi = _mm256_unpackhi_ps(o[2 * i], o[2 * i + 1]);
        _mm256_storeu_ps(at + i * width, _mm256_permute2f128_ps(lo, hi, 0x20));
        _mm256_storeu_ps(at + i * width + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
      }
      continue;
    }
    alignas(32) float lanes[4][kLanes];
    for (int i = 0; i < 4; ++i)
      _mm256_store_ps(lanes[i], o[i]);
    for (int64_t lane = 0; lane < kLanes && t0 + lane < b.tiles; ++lane) {
      int64_t t = t0 + lane;
      float *at = rows + 2 * (t / l.tilesW) * width + 2 * (t % l.tilesW);
      at[0] = lanes[0][lane];
      at[1] = lanes[1][lane];
      at[width] = lanes[2][lane];
      at[width + 1] = lanes[3][lane];
    }
  }
}
#endif

} // namespace

Status convWinograd(const KernelCall &call, const Geometry &g, const float *x, const float *packedU,
                    int64_t N, int64_t C, int64_t M, const GemmEpilogue &epilogue, float *y) {
  const char *op = "Conv";
  const WinogradLayout l(g, C);
  const int64_t inPlane = g.in[1] * g.in[2], outH = g.out[1], outW = g.out[2], P = outH * outW;
  const int64_t threads = call.pool ? call.pool->threads() : 1;
  const int64_t inTasks = std::min(threads, C), outTasks = std::min(threads, M);
  const int64_t planeFloats = l.planeRows() * l.rowStride;
  const int64_t rowsFloats = 2 * l.bandRows * 2 * l.tilesW;
  const int64_t vFloats = kWinogradTileElements * C * l.bandColumns;
  const int64_t prodFloats = kWinogradTileElements * M * l.bandColumns;
  const size_t uFloats = packedGemmASize(M, C);
  float *scratch;
  if (Status s = allocScratch(call, op,
                              size_t(vFloats + prodFloats + inTasks * planeFloats +
                                     outTasks * rowsFloats + l.bandChunks * (kLanes + 1)),
                              scratch);
      !s.isOk())
    return s;
  float *v = scratch, *prod = v + vFloats, *planes = prod + prodFloats;
  float *outRows = planes + inTasks * planeFloats;
  auto *offsets = reinterpret_cast<int32_t *>(outRows + outTasks * rowsFloats);
  auto *inOneRow = reinterpret_cast<uint8_t *>(offsets + l.bandChunks * kLanes);

  bool vectors = false;
#if defined(__x86_64__) || defined(__i386__)
  vectors = kernelIsa() != KernelIsa::Generic;
#endif
  for (int64_t th0 = 0; th0 < l.tilesH; th0 += l.bandRows) {
    WinogradBand b;
    b.th0 = th0;
    b.rows = std::min(l.bandRows, l.tilesH - th0);
    b.tiles = b.rows * l.tilesW;
    b.columns = WinogradLayout::roundUp(b.tiles, kGemmPanelWidth);
    b.chunks = b.columns / kLanes;
    for (int64_t k = 0; k < b.chunks; ++k) {
      for (int64_t lane = 0; lane < kLanes; ++lane) {
        int64_t t = k * kLanes + lane;
        offsets[k * kLanes + lane] =
            t < b.tiles ? int32_t(2 * (t / l.tilesW) * l.rowStride + t % l.tilesW) : 0;
      }
      int64_t t0 = k * kLanes;
      inOneRow[k] = t0 < b.tiles && t0 % l.tilesW + kLanes <= l.tilesW;
    }
    b.offsets = offsets;
    b.inOneRow = inOneRow;

    for (int64_t n = 0; n < N; ++n) {
      const float *xn = x + n * C * inPlane;
      parallelFor(call.pool, inTasks, [&](int64_t task) {
        float *plane = planes + task * planeFloats;
        for (int64_t c = C * task / inTasks; c < C * (task + 1) / inTasks; ++c) {
          copyBandRows(xn + c * inPlane, g, l, 2 * th0, 2 * b.rows + 2, plane);
#if defined(__x86_64__) || defined(__i386__)
          if (vectors) {
            transformInputAvx2(plane, l, b, C, c, v);
            continue;
          }
#endif
          transformInputGeneric(plane, l, b, C, c, v);
        }
      });
      // Prod_xi [M, columns] = U_xi * V_xi, each product m's 16 rows of
      // columns together (row m * 16 + xi) for the output transform.
      parallelFor(call.pool, kWinogradTileElements, [&](int64_t xi) {
        sgemmPrepackedParallel(nullptr, M, b.columns, C, packedU + xi * uFloats,
                               v + xi * C * b.columns, prod + xi * b.columns,
                               kWinogradTileElements * b.columns, false);
      });
      float *yn = y + n * M * P;
      GemmEpilogue image = epilogue;
      image.residual = epilogue.residual ? epilogue.residual + n * M * P : nullptr;
      const int64_t firstRow = 2 * th0, lastRow = std::min(outH, 2 * (th0 + b.rows));
      parallelFor(call.pool, outTasks, [&](int64_t task) {
        float *rows = outRows + task * rowsFloats;
        for (int64_t m = M * task / outTasks; m < M * (task + 1) / outTasks; ++m) {
          const float *pm = prod + m * kWinogradTileElements * b.columns;
#if defined(__x86_64__) || defined(__i386__)
          if (vectors)
            transformOutputAvx2(pm, l, b, rows);
          else
#endif
            transformOutputGeneric(pm, l, b, rows);
          for (int64_t oh = firstRow; oh < lastRow; ++oh)
            image.at(m, oh * outW)
                .applyFrom(rows + (oh - firstRow) * 2 * l.tilesW, 2 * l.tilesW,
                           yn + m * P + oh * outW, P, 1, outW);
        }
      });
    }
  }
  return Status::ok();
}

} // namespace kernels
} // namespace ortc::cpu
