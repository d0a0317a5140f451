//===- ConvWinograd.cpp - 3x3 stride-1 Conv as Winograd F(2x2 / 4x4, 3x3) -===//
//
// A group-1 3x3 Conv at stride 1 and dilation 1 (convRunsWinograd) computes
// each T x T block of outputs (T = 2 or 4: F(T x T, 3x3)) from the
// (T + 2) x (T + 2) input tile under it (Lavin and Gray, "Fast Algorithms
// for Convolutional Neural Networks", 2016):
//
//   Y = A^T [ sum over c of (G w G^T) . (B^T d B) ] A
//
// Per element xi of the transformed tile the channel sum is a GEMM,
// Prod_xi [M, T] = U_xi [M, C] * V_xi [C, tiles]: per output and channel
// pair 16 / 4 = 4 multiplies (F(2x2)) or 36 / 16 = 2.25 (F(4x4)) where the
// direct conv takes 9. The compiler transforms W once (U = G w G^T) and
// packs each U_xi as GEMM A panels (packConvWeightsWinograd: packings
// "winograd_f2x3" and "winograd_f4x3", packed_w = 4 and 5; the tile is
// winogradOutputTile's). A run works a band of tile rows at a time, so that
// the band's V and products stay in cache: it copies each channel's rows of
// the band into zero-padded column phases (padded column q at phase q % T,
// index q / T), writes the transformed tiles straight into the GEMMs'
// packed B panels, multiplies, and turns each output channel's products
// back into T x T blocks of output rows, which the fused epilogue finishes
// into Y. F(2x2)'s matrices hold only 0, +-1 and +-1/2; F(4x4)'s reach 8
// and 1/24, and its sums stay within about 1e-5 of the direct conv's,
// relative to the output's magnitude.
//
// A channels-last conv (convWinogradChannelsLast, packings
// "winograd_f2x3_bt" and "winograd_f4x3_bt", packed_w = 6 and 7) takes the
// same transforms on vectors of channels, a tile per GEMM row (see its
// section below).
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
#include "providers/cpu/kernels/SimdLanes.h"
#endif

namespace ortc::cpu {

size_t packedWinogradSize(int64_t M, int64_t C, int64_t tile) {
  return size_t((tile + 2) * (tile + 2)) * packedGemmASize(M, C);
}

namespace {

/// U = G g G^T per (m, c), in double, gathered as (tile + 2)^2 matrices
/// U_xi [M, C] one after another.
std::vector<float> winogradTransformedWeights(const float *w, int64_t M, int64_t C, int64_t tile) {
  // G's rows for F(2x2) and F(4x4).
  static const double g2[4][3] = {{1, 0, 0}, {0.5, 0.5, 0.5}, {0.5, -0.5, 0.5}, {0, 0, 1}};
  static const double g4[6][3] = {{1.0 / 4, 0, 0},
                                  {-1.0 / 6, -1.0 / 6, -1.0 / 6},
                                  {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                  {1.0 / 24, 1.0 / 12, 1.0 / 6},
                                  {1.0 / 24, -1.0 / 12, 1.0 / 6},
                                  {0, 0, 1}};
  const int a = int(tile) + 2;
  auto G = [&](int i, int j) { return tile == 2 ? g2[i][j] : g4[i][j]; };
  std::vector<float> u(size_t(a * a * M * C));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t c = 0; c < C; ++c) {
      const float *g = w + (m * C + c) * 9;
      double t[6][3];
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < 3; ++j)
          t[i][j] = G(i, 0) * g[j] + G(i, 1) * g[3 + j] + G(i, 2) * g[6 + j];
      for (int i = 0; i < a; ++i)
        for (int j = 0; j < a; ++j)
          u[size_t(((i * a + j) * M + m) * C + c)] =
              float(t[i][0] * G(j, 0) + t[i][1] * G(j, 1) + t[i][2] * G(j, 2));
    }
  return u;
}

} // namespace

void packConvWeightsWinograd(const float *w, int64_t M, int64_t C, int64_t tile, float *packed) {
  std::vector<float> u = winogradTransformedWeights(w, M, C, tile);
  for (int64_t xi = 0; xi < (tile + 2) * (tile + 2); ++xi)
    packGemmA(u.data() + xi * M * C, C, M, C, packed + xi * packedGemmASize(M, C));
}

size_t packedWinogradChannelsLastSize(int64_t M, int64_t C, int64_t tile) {
  return size_t((tile + 2) * (tile + 2)) * packedGemmBSize(C, M);
}

void packConvWeightsWinogradChannelsLast(const float *w, int64_t M, int64_t C, int64_t tile,
                                         float *packed) {
  std::vector<float> u = winogradTransformedWeights(w, M, C, tile);
  for (int64_t xi = 0; xi < (tile + 2) * (tile + 2); ++xi)
    packGemmB(u.data() + xi * M * C, C, /*transB=*/true, C, M, 1.f,
              packed + xi * packedGemmBSize(C, M));
}

namespace kernels {
namespace {

/// Tiles transformed and multiplied per band: the band's V (elements x C x
/// tiles floats) and its products stay about this size.
constexpr int64_t kWinogradBandBytes = int64_t(1) << 20;
/// Tiles per vector: the transforms run on 8 tiles at a time.
constexpr int64_t kLanes = 8;
/// The fewest tiles a band takes while its images have them.
constexpr int64_t kMinBandTiles = 64;

/// F(T x T, 3x3)'s transforms of one column (or row) of a tile, on floats
/// or on vectors of 8 tiles (always inlined: an AVX2 caller's vectors stay
/// in its registers).
template <int T> struct WinogradTile;

template <> struct WinogradTile<2> {
  static constexpr int kIn = 4;
  /// B^T x of one column (or row) x of the input tile: B^T = [1 0 -1 0;
  /// 0 1 1 0; 0 -1 1 0; 0 1 0 -1].
  template <typename V>
  __attribute__((always_inline)) static void input(const V *x, int step, V *r, int rstep) {
    V d0 = x[0], d1 = x[step], d2 = x[2 * step], d3 = x[3 * step];
    r[0] = d0 - d2;
    r[rstep] = d1 + d2;
    r[2 * rstep] = d2 - d1;
    r[3 * rstep] = d1 - d3;
  }
  /// A^T p of one column (or row) p of the products: A^T = [1 1 1 0;
  /// 0 1 -1 -1].
  template <typename V>
  __attribute__((always_inline)) static void output(const V *p, int step, V *r, int rstep) {
    V p1 = p[step], p2 = p[2 * step];
    r[0] = p[0] + p1 + p2;
    r[rstep] = p1 - p2 - p[3 * step];
  }
};

template <> struct WinogradTile<4> {
  static constexpr int kIn = 6;
  /// B^T = [4 0 -5 0 1 0; 0 -4 -4 1 1 0; 0 4 -4 -1 1 0; 0 -2 -1 2 1 0;
  /// 0 2 -1 -2 1 0; 0 4 0 -5 0 1].
  template <typename V>
  __attribute__((always_inline)) static void input(const V *x, int step, V *r, int rstep) {
    V d0 = x[0], d1 = x[step], d2 = x[2 * step], d3 = x[3 * step], d4 = x[4 * step],
      d5 = x[5 * step];
    V d4m2 = d4 - d2, d3m1 = d3 - d1;
    r[0] = d4 - 5.f * d2 + 4.f * d0;
    r[rstep] = (d3 + d4) - 4.f * (d1 + d2);
    r[2 * rstep] = (d4 - d3) + 4.f * (d1 - d2);
    r[3 * rstep] = d4m2 + 2.f * d3m1;
    r[4 * rstep] = d4m2 - 2.f * d3m1;
    r[5 * rstep] = d5 - 5.f * d3 + 4.f * d1;
  }
  /// A^T = [1 1 1 1 1 0; 0 1 -1 2 -2 0; 0 1 1 4 4 0; 0 1 -1 8 -8 1].
  template <typename V>
  __attribute__((always_inline)) static void output(const V *p, int step, V *r, int rstep) {
    V p12 = p[step] + p[2 * step], m12 = p[step] - p[2 * step];
    V p34 = p[3 * step] + p[4 * step], m34 = p[3 * step] - p[4 * step];
    r[0] = p[0] + p12 + p34;
    r[rstep] = m12 + 2.f * m34;
    r[2 * rstep] = p12 + 4.f * p34;
    r[3 * rstep] = m12 + 8.f * m34 + p[5 * step];
  }
};

/// The transformed tile B^T d B of the kIn x kIn tile d (row-major).
template <int T, typename V>
__attribute__((always_inline)) inline void inputTransform(const V *d, V *v) {
  constexpr int n = WinogradTile<T>::kIn;
  V t[n * n];
  for (int j = 0; j < n; ++j)
    WinogradTile<T>::input(d + j, n, t + j, n);
  for (int i = 0; i < n; ++i)
    WinogradTile<T>::input(t + i * n, 1, v + i * n, 1);
}

/// The T x T outputs A^T p A of the products p (row-major), row-major.
template <int T, typename V>
__attribute__((always_inline)) inline void outputTransform(const V *p, V *o) {
  constexpr int n = WinogradTile<T>::kIn;
  V s[T * n];
  for (int j = 0; j < n; ++j)
    WinogradTile<T>::output(p + j, n, s + j, n);
  for (int i = 0; i < T; ++i)
    WinogradTile<T>::output(s + i * n, 1, o + i * T, 1);
}

/// The geometry of a run. Tile (th, tw) covers output rows T th .. T th +
/// T - 1 and the same columns, and reads padded input rows and columns T th
/// .. T th + T + 1. A band is tile rows [th0, th0 + bandRows) of one image,
/// or, where a whole image fits in a band, bandImages whole images; its
/// tiles are numbered t = ((i * bandRows) + th - th0) * tilesW + tw (image
/// i of the band), the GEMMs' columns (whole panels: lanes past the band's
/// tiles transform its first tile again, and nothing reads their
/// products), in chunks of 8. Each image's part of a band's plane holds its
/// padded rows, each as T column phases of phaseW floats (8 of them
/// slack): tap column j of tile tw is at (j % T) * phaseW + tw + j / T, so
/// 8 neighbouring tiles read 8 contiguous floats.
template <int T> struct WinogradLayout {
  static constexpr int64_t kElements = WinogradTile<T>::kIn * WinogradTile<T>::kIn;
  int64_t tilesH, tilesW, phaseW, rowStride, bandRows, bandImages, bandColumns, bandChunks;

  WinogradLayout(const Geometry &g, int64_t N, int64_t C) {
    tilesH = (g.out[1] + T - 1) / T;
    tilesW = (g.out[2] + T - 1) / T;
    phaseW = tilesW + 1 + kLanes;
    rowStride = T * phaseW;
    // At least 64 tiles where the images have them: every weight a band's
    // GEMMs read is used for 64 columns (a batch of 7x7 or 14x14 images
    // read its weights once per image and band, from memory).
    int64_t tilesPerBand = std::max<int64_t>(
        kMinBandTiles, kWinogradBandBytes / (kElements * int64_t(sizeof(float)) * C));
    bandRows = std::clamp<int64_t>(tilesPerBand / tilesW, 1, tilesH);
    bandImages =
        bandRows < tilesH ? 1 : std::clamp<int64_t>(tilesPerBand / (tilesH * tilesW), 1, N);
    bandColumns = roundUp(bandImages * bandRows * tilesW, kGemmPanelWidth);
    bandChunks = bandColumns / kLanes;
  }
  static int64_t roundUp(int64_t n, int64_t to) { return (n + to - 1) / to * to; }
  /// Floats of one image's part of a band's plane.
  int64_t planeFloats() const { return (T * bandRows + 2) * rowStride; }
  /// Floats of a band's output rows (T per tile row, T tilesW each).
  int64_t outRowsFloats() const { return bandImages * T * bandRows * T * tilesW; }
};

/// One band: the tiles, where they are, and the scratch they go through.
struct WinogradBand {
  int64_t images, rows, tiles, columns, chunks;
  /// Per chunk of 8 tiles: each lane's tile's offset in the band's plane
  /// (i planeFloats + T (th - th0) rowStride + tw; 0 past the band's
  /// tiles), and how many lanes lie in the chunk's first tile row when the
  /// rest lie in the next one: 8 when all do (contiguous loads and stores),
  /// 0 when neither holds (gathers).
  const int32_t *offsets;
  const uint8_t *firstRun;
};

/// Copies rows [first, first + count) of the padded input plane `x`
/// (padded row r is x's row r - padTop, padded column q its column q -
/// padLeft) into `plane`, each row split into its T column phases.
template <int T>
void copyBandRows(const float *x, const Geometry &g, const WinogradLayout<T> &l, int64_t first,
                  int64_t count, float *plane) {
  const int64_t inH = g.in[1], inW = g.in[2], padTop = g.padBegin[1], padLeft = g.padBegin[2];
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
      c = splitColumnPhasesAvx2<T>(src, inW, padLeft, l.phaseW, row);
#endif
    for (; c < inW; ++c) {
      int64_t q = padLeft + c;
      row[q % T * l.phaseW + q / T] = src[c];
    }
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
template <int T>
void transformInputGeneric(const float *plane, const WinogradLayout<T> &l, const WinogradBand &b,
                           int64_t C, int64_t c, float *v) {
  constexpr int n = WinogradTile<T>::kIn;
  for (int64_t k = 0; k < b.chunks; ++k)
    for (int64_t lane = 0; lane < kLanes; ++lane) {
      float d[n * n], out[n * n];
      const float *at = plane + b.offsets[k * kLanes + lane];
      for (int r = 0; r < n; ++r)
        for (int j = 0; j < n; ++j)
          d[n * r + j] = at[r * l.rowStride + j % T * l.phaseW + j / T];
      inputTransform<T>(d, out);
      for (int64_t xi = 0; xi < n * n; ++xi)
        packedAt(v, b, C, xi, c, k)[lane] = out[xi];
    }
}

/// Output channel m's products of the band (prod: [elements][columns]) as
/// the band's output rows in `rows` (T per tile row, T tilesW floats each).
template <int T>
void transformOutputGeneric(const float *prod, const WinogradLayout<T> &l, const WinogradBand &b,
                            float *rows) {
  constexpr int n = WinogradTile<T>::kIn;
  const int64_t width = T * l.tilesW;
  for (int64_t t = 0; t < b.tiles; ++t) {
    float p[n * n], o[T * T];
    for (int64_t xi = 0; xi < n * n; ++xi)
      p[xi] = prod[xi * b.columns + t];
    outputTransform<T>(p, o);
    float *at = rows + T * (t / l.tilesW) * width + T * (t % l.tilesW);
    for (int i = 0; i < T; ++i)
      for (int j = 0; j < T; ++j)
        at[i * width + j] = o[i * T + j];
  }
}

#if defined(__x86_64__) || defined(__i386__)
/// transformInputGeneric on 8 tiles per vector: loads where the chunk's
/// tiles are neighbours in one tile row, two loads blended where they lie
/// in two (every chunk of a 7x7 or 14x14 output's rows of 4 or 7 tiles),
/// else gathers.
template <int T>
ORTC_AVX2 void transformInputAvx2(const float *plane, const WinogradLayout<T> &l,
                                  const WinogradBand &b, int64_t C, int64_t c, float *v) {
  constexpr int n = WinogradTile<T>::kIn;
  for (int64_t k = 0; k < b.chunks; ++k) {
    __m256 d[n * n], out[n * n];
    const int32_t *offsets = b.offsets + k * kLanes;
    const int split = b.firstRun[k];
    if (split == kLanes) {
      const float *at = plane + offsets[0];
      for (int r = 0; r < n; ++r)
        for (int j = 0; j < n; ++j)
          d[n * r + j] = _mm256_loadu_ps(at + r * l.rowStride + j % T * l.phaseW + j / T);
    } else if (split > 0) {
      // Lanes past the first run read on into the row's slack; those
      // before the second read the plane before it: both stay inside it.
      const float *first = plane + offsets[0], *second = plane + offsets[split] - split;
      const __m256 inFirst = _mm256_castsi256_ps(firstLanes(split));
      for (int r = 0; r < n; ++r)
        for (int j = 0; j < n; ++j) {
          int64_t at = r * l.rowStride + j % T * l.phaseW + j / T;
          d[n * r + j] =
              _mm256_blendv_ps(_mm256_loadu_ps(second + at), _mm256_loadu_ps(first + at), inFirst);
        }
    } else {
      __m256i index = _mm256_loadu_si256(reinterpret_cast<const __m256i *>(offsets));
      for (int r = 0; r < n; ++r)
        for (int j = 0; j < n; ++j)
          d[n * r + j] =
              _mm256_i32gather_ps(plane + r * l.rowStride + j % T * l.phaseW + j / T, index, 4);
    }
    inputTransform<T>(d, out);
    for (int64_t xi = 0; xi < n * n; ++xi)
      _mm256_storeu_ps(packedAt(v, b, C, xi, c, k), out[xi]);
  }
}

/// The T x T outputs of 8 tiles (o[i * T + j]: lane = tile) as each output
/// row's 8 T contiguous floats.
template <int T> ORTC_AVX2 inline void storeTileRows(const __m256 *o, float *at, int64_t width) {
  for (int i = 0; i < T; ++i) {
    const __m256 *r = o + i * T;
    if constexpr (T == 2) {
      // Tile outputs (j = 0, 1) interleaved: columns 2tw, 2tw + 1, ...
      __m256 lo = _mm256_unpacklo_ps(r[0], r[1]), hi = _mm256_unpackhi_ps(r[0], r[1]);
      _mm256_storeu_ps(at + i * width, _mm256_permute2f128_ps(lo, hi, 0x20));
      _mm256_storeu_ps(at + i * width + 8, _mm256_permute2f128_ps(lo, hi, 0x31));
    } else {
      // A 4 x 8 transpose: u_q holds tiles q and q + 4's 4 outputs.
      __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
      __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
      __m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
      __m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
      __m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
      __m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
      float *row = at + i * width;
      _mm256_storeu_ps(row, _mm256_permute2f128_ps(u0, u1, 0x20));
      _mm256_storeu_ps(row + 8, _mm256_permute2f128_ps(u2, u3, 0x20));
      _mm256_storeu_ps(row + 16, _mm256_permute2f128_ps(u0, u1, 0x31));
      _mm256_storeu_ps(row + 24, _mm256_permute2f128_ps(u2, u3, 0x31));
    }
  }
}

/// transformOutputGeneric on 8 tiles per vector: a chunk in one tile row
/// stores its T output rows' 8 T columns whole.
template <int T>
ORTC_AVX2 void transformOutputAvx2(const float *prod, const WinogradLayout<T> &l,
                                   const WinogradBand &b, float *rows) {
  constexpr int n = WinogradTile<T>::kIn;
  const int64_t width = T * l.tilesW;
  for (int64_t k = 0; k * kLanes < b.tiles; ++k) {
    int64_t t0 = k * kLanes;
    __m256 p[n * n], o[T * T];
    for (int64_t xi = 0; xi < n * n; ++xi)
      p[xi] = _mm256_loadu_ps(prod + xi * b.columns + t0);
    outputTransform<T>(p, o);
    if (b.firstRun[k] == kLanes) {
      storeTileRows<T>(o, rows + T * (t0 / l.tilesW) * width + T * (t0 % l.tilesW), width);
      continue;
    }
    alignas(32) float lanes[T * T][kLanes];
    for (int i = 0; i < T * T; ++i)
      _mm256_store_ps(lanes[i], o[i]);
    for (int64_t lane = 0; lane < kLanes && t0 + lane < b.tiles; ++lane) {
      int64_t t = t0 + lane;
      float *at = rows + T * (t / l.tilesW) * width + T * (t % l.tilesW);
      for (int i = 0; i < T; ++i)
        for (int j = 0; j < T; ++j)
          at[i * width + j] = lanes[i * T + j][lane];
    }
  }
}
#endif

template <int T>
Status convWinogradTiles(const KernelCall &call, const Geometry &g, const float *x,
                         const float *packedU, int64_t N, int64_t C, int64_t M,
                         const GemmEpilogue &epilogue, float *y) {
  const char *op = "Conv";
  using Layout = WinogradLayout<T>;
  constexpr int64_t kElements = Layout::kElements;
  const Layout l(g, N, C);
  const int64_t inPlane = g.in[1] * g.in[2], outH = g.out[1], outW = g.out[2], P = outH * outW;
  const int64_t threads = call.pool ? call.pool->threads() : 1;
  const int64_t inTasks = std::min(threads, C), outTasks = std::min(threads, M);
  const int64_t imagePlane = l.planeFloats(), planeFloats = l.bandImages * imagePlane;
  const int64_t rowsFloats = l.outRowsFloats();
  const int64_t vFloats = kElements * C * l.bandColumns;
  const int64_t prodFloats = kElements * M * l.bandColumns;
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
  auto *firstRun = reinterpret_cast<uint8_t *>(offsets + l.bandChunks * kLanes);

  bool vectors = false;
#if defined(__x86_64__) || defined(__i386__)
  vectors = kernelIsa() != KernelIsa::Generic;
#endif
  const int64_t width = T * l.tilesW;
  for (int64_t n0 = 0; n0 < N; n0 += l.bandImages)
    for (int64_t th0 = 0; th0 < l.tilesH; th0 += l.bandRows) {
      WinogradBand b;
      b.images = std::min(l.bandImages, N - n0);
      b.rows = std::min(l.bandRows, l.tilesH - th0);
      b.tiles = b.images * b.rows * l.tilesW;
      b.columns = Layout::roundUp(b.tiles, kGemmPanelWidth);
      b.chunks = b.columns / kLanes;
      const int64_t imageTiles = b.rows * l.tilesW;
      for (int64_t k = 0; k < b.chunks; ++k) {
        for (int64_t lane = 0; lane < kLanes; ++lane) {
          int64_t t = k * kLanes + lane, i = t / imageTiles, r = t % imageTiles;
          offsets[k * kLanes + lane] =
              t < b.tiles
                  ? int32_t(i * imagePlane + T * (r / l.tilesW) * l.rowStride + r % l.tilesW)
                  : 0;
        }
        // One tile row is one image's; a chunk past the band's tiles gathers.
        int64_t t0 = k * kLanes, inFirstRow = l.tilesW - t0 % l.tilesW;
        firstRun[k] = t0 + kLanes > b.tiles             ? 0
                      : inFirstRow >= kLanes            ? kLanes
                      : kLanes - inFirstRow <= l.tilesW ? uint8_t(inFirstRow)
                                                        : 0;
      }
      b.offsets = offsets;
      b.firstRun = firstRun;

      parallelFor(call.pool, inTasks, [&](int64_t task) {
        float *plane = planes + task * planeFloats;
        for (int64_t c = C * task / inTasks; c < C * (task + 1) / inTasks; ++c) {
          for (int64_t i = 0; i < b.images; ++i)
            copyBandRows<T>(x + ((n0 + i) * C + c) * inPlane, g, l, T * th0, T * b.rows + 2,
                            plane + i * imagePlane);
#if defined(__x86_64__) || defined(__i386__)
          if (vectors) {
            transformInputAvx2<T>(plane, l, b, C, c, v);
            continue;
          }
#endif
          transformInputGeneric<T>(plane, l, b, C, c, v);
        }
      });
      // Prod_xi [M, columns] = U_xi * V_xi, each output channel m's rows
      // of columns together (row m * elements + xi) for the output
      // transform.
      parallelFor(call.pool, kElements, [&](int64_t xi) {
        sgemmPrepackedParallel(nullptr, M, b.columns, C, packedU + xi * uFloats,
                               v + xi * C * b.columns, prod + xi * b.columns, kElements * b.columns,
                               false);
      });
      // Image i's output rows lie at i T rows width in `rows`.
      const int64_t firstRow = T * th0, lastRow = std::min(outH, T * (th0 + b.rows));
      parallelFor(call.pool, outTasks, [&](int64_t task) {
        float *rows = outRows + task * rowsFloats;
        for (int64_t m = M * task / outTasks; m < M * (task + 1) / outTasks; ++m) {
          const float *pm = prod + m * kElements * b.columns;
#if defined(__x86_64__) || defined(__i386__)
          if (vectors)
            transformOutputAvx2<T>(pm, l, b, rows);
          else
#endif
            transformOutputGeneric<T>(pm, l, b, rows);
          for (int64_t i = 0; i < b.images; ++i) {
            // Row m of the epilogue's [M, P] block at image n0 + i.
            const int64_t image = (n0 + i) * M * P;
            const float *from = rows + i * T * b.rows * width;
            for (int64_t oh = firstRow; oh < lastRow; ++oh)
              epilogue.at(m, image + oh * outW)
                  .applyFrom(from + (oh - firstRow) * width, width, y + image + m * P + oh * outW,
                             P, 1, outW);
          }
        }
      });
    }
  return Status::ok();
}

} // namespace

Status convWinograd(const KernelCall &call, const Geometry &g, int64_t tile, const float *x,
                    const float *packedU, int64_t N, int64_t C, int64_t M,
                    const GemmEpilogue &epilogue, float *y) {
  if (tile == 4)
    return convWinogradTiles<4>(call, g, x, packedU, N, C, M, epilogue, y);
  return convWinogradTiles<2>(call, g, x, packedU, N, C, M, epilogue, y);
}

//===----------------------------------------------------------------------===//
// Channels last: X [N, H, W, C], Y [N, OH, OW, M]
//===----------------------------------------------------------------------===//
//
// Every tile is a run of channels at each of its (T + 2)^2 input positions,
// so the transforms work on vectors of channels, with no column phases and
// no gathers: V_xi [tiles, C] (a tile a row), Prod_xi [tiles, M] = V_xi *
// U_xi^T, U_xi^T [C, M] packed as B panels at compile time
// (packConvWeightsWinogradChannelsLast), and each tile's products back into
// its T x T positions of M channels, which the epilogue finishes into Y.

namespace {

/// A band's V and products stay about this size (in L2), unless the band
/// is at its fewest tiles.
constexpr int64_t kChannelsLastBandBytes = int64_t(3) << 19;
/// The fewest tiles a band takes while the images have them: a band's
/// GEMMs read every U_xi once, and want rows to spread it over.
constexpr int64_t kChannelsLastMinBandTiles = 48;

/// One vector of channels per ISA (ScalarLanes also finishes the channels
/// a vector leaves over). Loads and stores are memcpy, so that these
/// templates need no target attribute: inlined into an AVX2 or AVX-512
/// function they become its unaligned moves.
struct ScalarLanes {
  using V = float;
  static constexpr int64_t kWidth = 1;
};
#if defined(__x86_64__) || defined(__i386__)
struct Avx2Lanes {
  using V = __m256;
  static constexpr int64_t kWidth = 8;
};
struct Avx512Lanes {
  using V = __m512;
  static constexpr int64_t kWidth = 16;
};
#endif

/// What the tasks of a channels-last Winograd conv share.
struct WinogradChannelsLast {
  const float *x;     // [N, H, W, C]
  const float *zeros; // C zeros: the taps outside X
  int64_t H, W, C, M, OH, OW, padTop, padLeft, tilesH, tilesW;
  /// The band's first tile and tile count: tile t is image t / (tilesH
  /// tilesW), tile row t / tilesW % tilesH, tile column t % tilesW.
  int64_t band0, bandTiles;
  float *v;    // [elements][bandTiles][C]
  float *prod; // [elements][bandTiles][M]
};

/// Channels [c0, c1) (whole vectors of L) of one tile: its taps at
/// at[k] + c, transformed, to `to` + xi `stride` + c.
template <typename L, int T>
__attribute__((always_inline)) inline void inputChannels(const float *const *at, float *to,
                                                         int64_t stride, int64_t c0, int64_t c1) {
  constexpr int n = WinogradTile<T>::kIn;
  for (int64_t c = c0; c < c1; c += L::kWidth) {
    typename L::V d[n * n], out[n * n];
    for (int k = 0; k < n * n; ++k)
      std::memcpy(&d[k], at[k] + c, sizeof(d[k]));
    inputTransform<T>(d, out);
    for (int xi = 0; xi < n * n; ++xi)
      std::memcpy(to + xi * stride + c, &out[xi], sizeof(out[xi]));
  }
}

/// The band's tiles transformed into V.
template <typename L, int T>
__attribute__((always_inline)) inline void inputTilesWith(const WinogradChannelsLast &w) {
  constexpr int n = WinogradTile<T>::kIn;
  const int64_t tileImage = w.tilesH * w.tilesW, C = w.C;
  const int64_t vectorEnd = C / L::kWidth * L::kWidth;
  for (int64_t t = 0; t < w.bandTiles; ++t) {
    int64_t tile = w.band0 + t, image = tile / tileImage, th = tile / w.tilesW % w.tilesH,
            tw = tile % w.tilesW;
    const float *at[n * n];
    for (int r = 0; r < n; ++r)
      for (int j = 0; j < n; ++j) {
        int64_t ih = T * th - w.padTop + r, iw = T * tw - w.padLeft + j;
        at[n * r + j] = uint64_t(ih) < uint64_t(w.H) && uint64_t(iw) < uint64_t(w.W)
                            ? w.x + ((image * w.H + ih) * w.W + iw) * C
                            : w.zeros;
      }
    inputChannels<L, T>(at, w.v + t * C, w.bandTiles * C, 0, vectorEnd);
    inputChannels<ScalarLanes, T>(at, w.v + t * C, w.bandTiles * C, vectorEnd, C);
  }
}

/// Channels [m0, m1) (whole vectors of L) of one tile's products (at
/// `from` + xi `stride`) as its T x T outputs, output k at `out` + k M.
template <typename L, int T>
__attribute__((always_inline)) inline void
outputChannels(const float *from, int64_t stride, int64_t M, float *out, int64_t m0, int64_t m1) {
  constexpr int n = WinogradTile<T>::kIn;
  for (int64_t m = m0; m < m1; m += L::kWidth) {
    typename L::V p[n * n], o[T * T];
    for (int xi = 0; xi < n * n; ++xi)
      std::memcpy(&p[xi], from + xi * stride + m, sizeof(p[xi]));
    outputTransform<T>(p, o);
    for (int k = 0; k < T * T; ++k)
      std::memcpy(out + k * M + m, &o[k], sizeof(o[k]));
  }
}

/// The band's tiles from their products into Y, finished by the
/// epilogue (column bias, residual [positions, M], activation); `out` holds
/// T T M floats.
template <typename L, int T>
__attribute__((always_inline)) inline void
outputTilesWith(const WinogradChannelsLast &w, const GemmEpilogue &epilogue, float *out, float *y) {
  const int64_t tileImage = w.tilesH * w.tilesW, M = w.M;
  const int64_t vectorEnd = M / L::kWidth * L::kWidth;
  for (int64_t t = 0; t < w.bandTiles; ++t) {
    outputChannels<L, T>(w.prod + t * M, w.bandTiles * M, M, out, 0, vectorEnd);
    outputChannels<ScalarLanes, T>(w.prod + t * M, w.bandTiles * M, M, out, vectorEnd, M);
    // Output row i of the tile: its positions inside Y, back to back.
    int64_t tile = w.band0 + t, image = tile / tileImage, th = tile / w.tilesW % w.tilesH,
            tw = tile % w.tilesW;
    int64_t columns = std::min<int64_t>(T, w.OW - T * tw);
    for (int64_t i = 0; i < T && T * th + i < w.OH; ++i) {
      int64_t position = (image * w.OH + T * th + i) * w.OW + T * tw;
      epilogue.at(position, 0).applyFrom(out + i * T * M, M, y + position * M, M, columns, M);
    }
  }
}

template <int T> void inputTilesGeneric(const WinogradChannelsLast &w) {
  inputTilesWith<ScalarLanes, T>(w);
}
template <int T>
void outputTilesGeneric(const WinogradChannelsLast &w, const GemmEpilogue &e, float *out,
                        float *y) {
  outputTilesWith<ScalarLanes, T>(w, e, out, y);
}
#if defined(__x86_64__) || defined(__i386__)
template <int T> ORTC_AVX2 void inputTilesAvx2(const WinogradChannelsLast &w) {
  inputTilesWith<Avx2Lanes, T>(w);
}
template <int T>
ORTC_AVX2 void outputTilesAvx2(const WinogradChannelsLast &w, const GemmEpilogue &e, float *out,
                               float *y) {
  outputTilesWith<Avx2Lanes, T>(w, e, out, y);
}
template <int T> ORTC_AVX512 void inputTilesAvx512(const WinogradChannelsLast &w) {
  inputTilesWith<Avx512Lanes, T>(w);
}
template <int T>
ORTC_AVX512 void outputTilesAvx512(const WinogradChannelsLast &w, const GemmEpilogue &e, float *out,
                                   float *y) {
  outputTilesWith<Avx512Lanes, T>(w, e, out, y);
}
#endif

template <int T>
Status convWinogradChannelsLastTiles(const KernelCall &call, const Geometry &g, const float *x,
                                     const float *packedU, int64_t N, int64_t C, int64_t M,
                                     const GemmEpilogue &epilogue, float *y) {
  constexpr int64_t kElements = WinogradTile<T>::kIn * WinogradTile<T>::kIn;
  WinogradChannelsLast w;
  w.x = x;
  w.H = g.in[1], w.W = g.in[2], w.C = C, w.M = M, w.OH = g.out[1], w.OW = g.out[2];
  w.padTop = g.padBegin[1], w.padLeft = g.padBegin[2];
  w.tilesH = (w.OH + T - 1) / T, w.tilesW = (w.OW + T - 1) / T;
  const int64_t tiles = N * w.tilesH * w.tilesW;
  // Bands of equal size, as many as the bytes ask for, and a multiple of
  // the threads where each gets at least a 6-row tile's worth: a task runs
  // whole bands (transforms and GEMMs), so that a conv is one parallel
  // region rather than three per band.
  const int64_t threads = call.pool ? call.pool->threads() : 1;
  int64_t mostTiles = kChannelsLastBandBytes / (kElements * (C + M) * int64_t(sizeof(float)));
  mostTiles = std::max(kChannelsLastMinBandTiles, mostTiles / kGemmPanelHeight * kGemmPanelHeight);
  int64_t bands = (tiles + mostTiles - 1) / mostTiles;
  if (tiles >= threads * kGemmPanelHeight)
    bands = (std::max(bands, threads) + threads - 1) / threads * threads;
  const int64_t bandTiles = (tiles + bands - 1) / bands;
  bands = (tiles + bandTiles - 1) / bandTiles;
  const int64_t tasks = std::min(threads, bands);
  const int64_t vFloats = roundUpTo16(kElements * bandTiles * C);
  const int64_t prodFloats = roundUpTo16(kElements * bandTiles * M);
  const int64_t outFloats = roundUpTo16(T * T * M);
  const int64_t slotFloats = vFloats + prodFloats + outFloats;
  float *scratch;
  if (Status s = allocScratch(call, "Conv", size_t(tasks * slotFloats + roundUpTo16(C)), scratch);
      !s.isOk())
    return s;
  float *zeros = scratch + tasks * slotFloats;
  std::fill(zeros, zeros + C, 0.f);
  w.zeros = zeros;

  auto inputTiles = inputTilesGeneric<T>;
  auto outputTiles = outputTilesGeneric<T>;
#if defined(__x86_64__) || defined(__i386__)
  if (kernelIsa() == KernelIsa::Avx512) {
    inputTiles = inputTilesAvx512<T>;
    outputTiles = outputTilesAvx512<T>;
  } else if (kernelIsa() == KernelIsa::Avx2) {
    inputTiles = inputTilesAvx2<T>;
    outputTiles = outputTilesAvx2<T>;
  }
#endif
  const size_t uFloats = packedGemmBSize(C, M);
  const bool rowsInPlace = sgemmRowsOfTapsAvailable();
  // Task t runs bands t, t + tasks, ... through its own slot of scratch.
  parallelFor(call.pool, tasks, [&](int64_t task) {
    WinogradChannelsLast band = w;
    band.v = scratch + task * slotFloats;
    band.prod = band.v + vFloats;
    float *out = band.prod + prodFloats;
    for (int64_t b = task; b < bands; b += tasks) {
      band.band0 = b * bandTiles;
      band.bandTiles = std::min(bandTiles, tiles - band.band0);
      inputTiles(band);
      // Prod_xi = V_xi * U_xi^T.
      for (int64_t xi = 0; xi < kElements; ++xi) {
        const float *a = band.v + xi * band.bandTiles * C, *u = packedU + xi * uFloats;
        float *p = band.prod + xi * band.bandTiles * M;
        if (rowsInPlace)
          sgemmRowsOfTaps(band.bandTiles, M, C, 1, a, nullptr, nullptr, u, p, M, false, nullptr);
        else
          sgemmPacked(band.bandTiles, M, C, a, C, false, u, p, M, false);
      }
      outputTiles(band, epilogue, out, y);
    }
  });
  return Status::ok();
}

} // namespace

Status convWinogradChannelsLast(const KernelCall &call, const Geometry &g, int64_t tile,
                                const float *x, const float *packedU, int64_t N, int64_t C,
                                int64_t M, const GemmEpilogue &epilogue, float *y) {
  if (tile == 4)
    return convWinogradChannelsLastTiles<4>(call, g, x, packedU, N, C, M, epilogue, y);
  return convWinogradChannelsLastTiles<2>(call, g, x, packedU, N, C, M, epilogue, y);
}

} // namespace kernels
} // namespace ortc::cpu
