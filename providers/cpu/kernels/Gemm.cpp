//===- Gemm.cpp - single-precision matrix multiply for the CPU EP ---------===//
//
// GotoBLAS-style blocking around a 6x16 register tile:
//
//   for each M block of <= kMc rows:
//     for each K block of <= kKc:
//       pack A[mc, kc] into row panels of 6, k-major      (stays in L2)
//       for each 16-wide B panel:                         (k-slice in L1)
//         for each 6-row A panel: microkernel -> 6x16 C tile
//
// B is already packed by packGemmB into 16-wide column panels holding every k,
// so a panel's k-slice is contiguous. Edge tiles: the A panel is zero-padded
// to 6 rows and the kernel only touches the first MR rows; B panels are
// zero-padded to 16 columns and the kernel masks C columns past N.
//
// Variants, picked by the CPU's features: AVX-512F (the panel is one zmm;
// four or two adjacent full panels run as one 6x64 or 6x32 tile, so each A
// broadcast feeds four or two FMAs: 24 accumulators keep CPUs with two
// 512-bit FMA pipes busy), AVX2+FMA, and portable C++.
// sgemmOffsetsB runs the same tiles over a B that is never packed: row k of
// B is an offset into a conv's padded input planes (the direct conv).
// Single-threaded by design: callers split work across threads if they want.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/Gemm.h"

#include "providers/cpu/kernels/ThreadPool.h"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>

#if defined(__x86_64__) || defined(__i386__)
#define ORTC_GEMM_X86 1
#include "providers/cpu/kernels/EpilogueSimd.h"
#endif

namespace ortc::cpu {

namespace {

constexpr int kMr = static_cast<int>(kGemmPanelHeight);
constexpr int kNr = static_cast<int>(kGemmPanelWidth);
// Most k per block: a B slice (kc*16 floats, 24 KiB) and an A panel (kc*6
// floats) about fill a 32 KiB L1D; fewer K blocks mean fewer passes over C,
// which measured better than a B slice that fits L1 with room to spare.
constexpr int64_t kKc = 384;
// Most k per block of sgemmRowsOfTaps, whose 6x64 tiles read a B slice of
// kc*64 floats: 48 KiB, about an L1D. At kKc (96 KiB) the slice streamed from
// L2 for every tile, and ResNet-50's 3x3 convs ran 8-10% slower (64 to 512
// channels, one thread). sgemmBlocks keeps kKc: with a wide C (BERT's
// 128x3072 products) the extra passes over C cost more than they save.
constexpr int64_t kKcTaps = 192;
// Bytes of B rows a K block of sgemmOffsetsB may read: most of a 32 KiB L1D,
// the rest left to the A panel and the C tile. At kKc, a stride-2 3x3 conv's
// phase planes (four per channel) needed about 54 KiB and streamed from L2
// for every row panel: ResNet-50's 128->128 3x3 at stride 2 over 56x56 ran
// 9% faster with 144 k per block than with 384 (AMD EPYC, AVX2, one thread).
// Smaller budgets split the 7x7 stem's 147 k in two, which cost it 4%.
constexpr int64_t kOffsetsBlockBytes = 20 << 10;
// Fewest k per block: below, the passes over C cost more than L1 saves.
constexpr int64_t kKcOffsetsMin = 64;
// Most rows per block: kMc*kKc floats of packed A (216 KiB) stay in L2.
constexpr int64_t kMc = 144;
static_assert(kMc % kMr == 0, "M block must hold whole A panels");
static_assert(kMc * kKc * sizeof(float) % 64 == 0, "aligned_alloc needs a multiple of 64");
// Prefetch distance for B, in k steps (16 floats each).
constexpr int kBPrefetch = 24;

/// Computes a C tile of mr (the template's MR) rows by nr (<= 16) columns from
/// an A panel (6 floats per k) and a B panel slice (16 floats per k); adds the
/// existing C when `load`.
/// With `epilogue` (at the tile's column; the tile's first row is its row
/// `row0`), the tile is final: the kernel applies it before storing
/// (GemmEpilogue::apply's arithmetic, in the same order), so C is not read
/// back for it.
using MicroKernel = void (*)(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                             int nr, bool load, const GemmEpilogue *epilogue, int64_t row0);

//===----------------------------------------------------------------------===//
// Portable kernel
//===----------------------------------------------------------------------===//

template <int MR>
void kernelGeneric(int64_t kc, const float *a, const float *b, float *c, int64_t ldc, int nr,
                   bool load, const GemmEpilogue *epilogue, int64_t row0) {
  float acc[MR][kNr] = {};
  for (int64_t k = 0; k < kc; ++k) {
    for (int r = 0; r < MR; ++r) {
      float av = a[r];
      for (int j = 0; j < kNr; ++j)
        acc[r][j] += av * b[j];
    }
    a += kMr;
    b += kNr;
  }
  if (epilogue) {
    // Finished from acc, not from C: the residual may be C itself (a conv
    // written over its residual), which a store before the epilogue would
    // have overwritten.
    if (load)
      for (int r = 0; r < MR; ++r)
        for (int j = 0; j < nr; ++j)
          acc[r][j] = c[r * ldc + j] + acc[r][j];
    epilogue->at(row0, 0).applyFrom(&acc[0][0], kNr, c, ldc, MR, nr);
    return;
  }
  for (int r = 0; r < MR; ++r) {
    float *cr = c + r * ldc;
    if (load) {
      for (int j = 0; j < nr; ++j)
        cr[j] += acc[r][j];
    } else {
      for (int j = 0; j < nr; ++j)
        cr[j] = acc[r][j];
    }
  }
}

/// A 6-row tile of `cols` (a multiple of 16) columns whose row k of B is b +
/// offsets[k] (sgemmOffsetsB), in portable C++.
void kernelGenericOffsets(int64_t kc, const float *a, const float *b, const int32_t *offsets,
                          float *c, int64_t ldc, int64_t cols, bool load, const float *) {
  for (int64_t j = 0; j < cols; j += kNr) {
    float acc[kMr][kNr] = {};
    for (int64_t k = 0; k < kc; ++k) {
      const float *bk = b + offsets[k] + j;
      for (int r = 0; r < kMr; ++r)
        for (int q = 0; q < kNr; ++q)
          acc[r][q] += a[k * kMr + r] * bk[q];
    }
    for (int r = 0; r < kMr; ++r)
      for (int q = 0; q < kNr; ++q)
        c[r * ldc + j + q] = load ? c[r * ldc + j + q] + acc[r][q] : acc[r][q];
  }
}

/// Packs 6 full rows of row-major A (row stride lda), kc columns, into one
/// k-major panel: panel[k*6 + r] = a[r*lda + k].
using RowPacker = void (*)(const float *a, int64_t lda, int64_t kc, float *panel);

void packRowsGeneric(const float *a, int64_t lda, int64_t kc, float *panel) {
  // Rows side by side: their streams are fetched in parallel and the stores
  // are contiguous.
  for (int64_t k = 0; k < kc; ++k)
    for (int r = 0; r < kMr; ++r)
      panel[k * kMr + r] = a[r * lda + k];
}

//===----------------------------------------------------------------------===//
// AVX2 + FMA kernel: 12 ymm accumulators, 2 B loads and MR broadcasts per k.
//===----------------------------------------------------------------------===//

#ifdef ORTC_GEMM_X86

ORTC_AVX2 inline void maskFor(int nr, __m256i &m0, __m256i &m1) {
  const __m256i iota0 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  const __m256i iota1 = _mm256_setr_epi32(8, 9, 10, 11, 12, 13, 14, 15);
  __m256i n = _mm256_set1_epi32(nr);
  m0 = _mm256_cmpgt_epi32(n, iota0);
  m1 = _mm256_cmpgt_epi32(n, iota1);
}

/// Activation `Act` on a tile's two accumulators per row.
template <GemmEpilogue::Activation Act, int MR>
ORTC_AVX2 __attribute__((always_inline)) inline void
activateTileAvx2(__m256 (&v0)[MR], __m256 (&v1)[MR], const GemmEpilogue &e) {
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    v0[r] = activateAvx2(Act, e, v0[r]);
    v1[r] = activateAvx2(Act, e, v1[r]);
  }
}

/// Activation `Act` (one without parameters) on MR stored rows of 16
/// columns (`Full`: all present, else those of m0 and m1).
template <GemmEpilogue::Activation Act, bool Full, int MR>
ORTC_AVX2 void activateStoredAvx2(float *c, int64_t ldc, __m256i m0, __m256i m1) {
  const GemmEpilogue none;
  for (int r = 0; r < MR; ++r) {
    float *cr = c + r * ldc;
    if (Full) {
      _mm256_storeu_ps(cr, activateAvx2(Act, none, _mm256_loadu_ps(cr)));
      _mm256_storeu_ps(cr + 8, activateAvx2(Act, none, _mm256_loadu_ps(cr + 8)));
    } else {
      _mm256_maskstore_ps(cr, m0, activateAvx2(Act, none, _mm256_maskload_ps(cr, m0)));
      _mm256_maskstore_ps(cr + 8, m1, activateAvx2(Act, none, _mm256_maskload_ps(cr + 8, m1)));
    }
  }
}

/// 16 floats at p (`Full`), or those of m0 and m1, as two vectors.
template <bool Full>
ORTC_AVX2 __attribute__((always_inline)) inline void
loadPairAvx2(__m256i m0, __m256i m1, const float *p, __m256 &lo, __m256 &hi) {
  lo = Full ? _mm256_loadu_ps(p) : _mm256_maskload_ps(p, m0);
  hi = Full ? _mm256_loadu_ps(p + 8) : _mm256_maskload_ps(p + 8, m1);
}

/// kernelAvx2's finish, as finishTileAvx512: + C when `load`, the epilogue
/// in GemmEpilogue::apply's order with each step decided once per tile, and
/// the store; `Full`: all 16 columns present, else those of m0 and m1.
template <bool Full, int MR>
ORTC_AVX2 __attribute__((always_inline)) inline void
finishTileAvx2(__m256 (&v0)[MR], __m256 (&v1)[MR], float *c, int64_t ldc, __m256i m0, __m256i m1,
               bool load, const GemmEpilogue *epilogue, int64_t row0) {
  using A = GemmEpilogue::Activation;
  __m256 lo, hi;
  if (load) {
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      loadPairAvx2<Full>(m0, m1, c + r * ldc, lo, hi);
      v0[r] = _mm256_add_ps(v0[r], lo);
      v1[r] = _mm256_add_ps(v1[r], hi);
    }
  }
  A later = A::None;
  if (epilogue) {
    // A copy: the tile's stores cannot alias it, so nothing is reloaded.
    const GemmEpilogue e = *epilogue;
    if (e.rowBias) {
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        __m256 bias = _mm256_set1_ps(e.rowBias[row0 + r]);
        v0[r] = _mm256_add_ps(v0[r], bias);
        v1[r] = _mm256_add_ps(v1[r], bias);
      }
    }
    if (e.colBias) {
      loadPairAvx2<Full>(m0, m1, e.colBias, lo, hi);
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        v0[r] = _mm256_add_ps(v0[r], lo);
        v1[r] = _mm256_add_ps(v1[r], hi);
      }
    }
    if (e.residual) {
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        loadPairAvx2<Full>(m0, m1, e.residual + (row0 + r) * e.ldr, lo, hi);
        v0[r] = _mm256_add_ps(v0[r], lo);
        v1[r] = _mm256_add_ps(v1[r], hi);
      }
    }
    switch (e.activation) {
    case A::None:
      break;
    case A::Relu:
      activateTileAvx2<A::Relu>(v0, v1, e);
      break;
    case A::Clip:
      activateTileAvx2<A::Clip>(v0, v1, e);
      break;
    case A::LeakyRelu:
      activateTileAvx2<A::LeakyRelu>(v0, v1, e);
      break;
    case A::Gelu:
    case A::GeluTanh:
      later = e.activation;
      break;
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    float *cr = c + r * ldc;
    if (Full) {
      _mm256_storeu_ps(cr, v0[r]);
      _mm256_storeu_ps(cr + 8, v1[r]);
    } else {
      _mm256_maskstore_ps(cr, m0, v0[r]);
      _mm256_maskstore_ps(cr + 8, m1, v1[r]);
    }
  }
  if (later == A::Gelu)
    activateStoredAvx2<A::Gelu, Full, MR>(c, ldc, m0, m1);
  else if (later == A::GeluTanh)
    activateStoredAvx2<A::GeluTanh, Full, MR>(c, ldc, m0, m1);
}

template <int MR>
ORTC_AVX2 void kernelAvx2(int64_t kc, const float *a, const float *b, float *c, int64_t ldc,
                          int nr, bool load, const GemmEpilogue *epilogue, int64_t row0) {
  // With 1 or 2 rows there are too few chains to cover FMA latency, so
  // alternate k steps go to separate accumulator sets, summed at the end.
  constexpr int kSets = MR == 1 ? 4 : (MR == 2 ? 2 : 1);
  __m256 acc0[kSets][MR], acc1[kSets][MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    // C is needed only after the k loop: start fetching it now (fetching it
    // a few steps before the end measured worse).
    _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc), _MM_HINT_T0);
    _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc + kNr - 1), _MM_HINT_T0);
    // So is the residual, which lies a plane per row apart and was written
    // several layers back: without this, ResNet-50's 64->256 1x1 convs that
    // add their block's input took 1.5x as long as the same conv without.
    if (epilogue && epilogue->residual) {
      const float *residual = epilogue->residual + (row0 + r) * epilogue->ldr;
      _mm_prefetch(reinterpret_cast<const char *>(residual), _MM_HINT_T0);
      _mm_prefetch(reinterpret_cast<const char *>(residual + kNr - 1), _MM_HINT_T0);
    }
#pragma GCC unroll 4
    for (int set = 0; set < kSets; ++set) {
      acc0[set][r] = _mm256_setzero_ps();
      acc1[set][r] = _mm256_setzero_ps();
    }
  }
  // Unrolled by 4 so loop overhead stays off the FMA ports' critical path.
  int64_t k = 0;
#if defined(__x86_64__)
  if constexpr (MR == 6) {
    // The full tile's loop in assembly: GCC spills accumulators of the
    // intrinsics loop below (12 accumulators + 2 B + 2 A use all 16 ymm),
    // which cost ~10% on 1024^3. The prefetch offsets are kBPrefetch*64.
    static_assert(kBPrefetch * kNr * sizeof(float) == 1536, "update the asm's prefetches");
    int64_t steps = kc / 4;
    if (steps > 0) {
      k = steps * 4;
#define ORTC_STEP(u)                                                                               \
  "vmovups " #u "*64(%[b]), %%ymm12\n\t"                                                            \
  "vmovups " #u "*64+32(%[b]), %%ymm13\n\t"                                                         \
  "vbroadcastss " #u "*24(%[a]), %%ymm14\n\t"                                                       \
  "vbroadcastss " #u "*24+4(%[a]), %%ymm15\n\t"                                                     \
  "vfmadd231ps %%ymm12, %%ymm14, %[c00]\n\t"                                                        \
  "vfmadd231ps %%ymm13, %%ymm14, %[c01]\n\t"                                                        \
  "vbroadcastss " #u "*24+8(%[a]), %%ymm14\n\t"                                                     \
  "vfmadd231ps %%ymm12, %%ymm15, %[c10]\n\t"                                                        \
  "vfmadd231ps %%ymm13, %%ymm15, %[c11]\n\t"                                                        \
  "vbroadcastss " #u "*24+12(%[a]), %%ymm15\n\t"                                                    \
  "vfmadd231ps %%ymm12, %%ymm14, %[c20]\n\t"                                                        \
  "vfmadd231ps %%ymm13, %%ymm14, %[c21]\n\t"                                                        \
  "vbroadcastss " #u "*24+16(%[a]), %%ymm14\n\t"                                                    \
  "vfmadd231ps %%ymm12, %%ymm15, %[c30]\n\t"                                                        \
  "vfmadd231ps %%ymm13, %%ymm15, %[c31]\n\t"                                                        \
  "vbroadcastss " #u "*24+20(%[a]), %%ymm15\n\t"                                                    \
  "vfmadd231ps %%ymm12, %%ymm14, %[c40]\n\t"                                                        \
  "vfmadd231ps %%ymm13, %%ymm14, %[c41]\n\t"                                                        \
  "vfmadd231ps %%ymm12, %%ymm15, %[c50]\n\t"                                                        \
  "vfmadd231ps %%ymm13, %%ymm15, %[c51]\n\t"
      asm volatile("1:\n\t"
                   "prefetcht0 1536(%[b])\n\t"
                   "prefetcht0 1600(%[b])\n\t"
                   "prefetcht0 1664(%[b])\n\t"
                   "prefetcht0 1728(%[b])\n\t"
                   ORTC_STEP(0) ORTC_STEP(1) ORTC_STEP(2) ORTC_STEP(3)
                   "addq $96, %[a]\n\t"
                   "addq $256, %[b]\n\t"
                   "decq %[n]\n\t"
                   "jnz 1b\n\t"
                   : [a] "+r"(a), [b] "+r"(b), [n] "+r"(steps),
                     [c00] "+x"(acc0[0][0]), [c01] "+x"(acc1[0][0]),
                     [c10] "+x"(acc0[0][1]), [c11] "+x"(acc1[0][1]),
                     [c20] "+x"(acc0[0][2]), [c21] "+x"(acc1[0][2]),
                     [c30] "+x"(acc0[0][3]), [c31] "+x"(acc1[0][3]),
                     [c40] "+x"(acc0[0][4]), [c41] "+x"(acc1[0][4]),
                     [c50] "+x"(acc0[0][5]), [c51] "+x"(acc1[0][5])
                   :
                   : "xmm12", "xmm13", "xmm14", "xmm15", "cc", "memory");
#undef ORTC_STEP
    }
  }
#endif
  for (; k + 4 <= kc; k += 4) {
    // B's slice comes from L2 or L3 on the first A panel of a block: fetch
    // kBPrefetch steps ahead (one 64-byte line per k).
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u)
      _mm_prefetch(reinterpret_cast<const char *>(b + (kBPrefetch + u) * kNr), _MM_HINT_T0);
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      __m256 b0 = _mm256_loadu_ps(b + u * kNr);
      __m256 b1 = _mm256_loadu_ps(b + u * kNr + 8);
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r) {
        __m256 av = _mm256_broadcast_ss(a + u * kMr + r);
        acc0[u % kSets][r] = _mm256_fmadd_ps(av, b0, acc0[u % kSets][r]);
        acc1[u % kSets][r] = _mm256_fmadd_ps(av, b1, acc1[u % kSets][r]);
      }
    }
    a += 4 * kMr;
    b += 4 * kNr;
  }
  for (; k < kc; ++k) {
    __m256 b0 = _mm256_loadu_ps(b);
    __m256 b1 = _mm256_loadu_ps(b + 8);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      __m256 av = _mm256_broadcast_ss(a + r);
      acc0[0][r] = _mm256_fmadd_ps(av, b0, acc0[0][r]);
      acc1[0][r] = _mm256_fmadd_ps(av, b1, acc1[0][r]);
    }
    a += kMr;
    b += kNr;
  }
#pragma GCC unroll 4
  for (int set = 1; set < kSets; ++set) {
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r) {
      acc0[0][r] = _mm256_add_ps(acc0[0][r], acc0[set][r]);
      acc1[0][r] = _mm256_add_ps(acc1[0][r], acc1[set][r]);
    }
  }

  if (nr == kNr) {
    finishTileAvx2<true, MR>(acc0[0], acc1[0], c, ldc, __m256i(), __m256i(), load, epilogue, row0);
    return;
  }
  // Right edge: masked so columns past N are neither read nor written.
  __m256i m0, m1;
  maskFor(nr, m0, m1);
  finishTileAvx2<false, MR>(acc0[0], acc1[0], c, ldc, m0, m1, load, epilogue, row0);
}

/// One k step of an MR x 16 tile: A's MR values at a, each broadcast
/// against B's row (b0, b1).
template <int MR>
ORTC_AVX2 __attribute__((always_inline)) inline void
fmaRowAvx2(const float *a, __m256 b0, __m256 b1, __m256 (&acc0)[MR], __m256 (&acc1)[MR]) {
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    __m256 av = _mm256_broadcast_ss(a + r);
    acc0[r] = _mm256_fmadd_ps(av, b0, acc0[r]);
    acc1[r] = _mm256_fmadd_ps(av, b1, acc1[r]);
  }
}

/// kernelAvx2Offsets's 16 columns at j; `Fetch`: fetch `fetch` into L2 on
/// the way, a 24-byte step of it per k (every line, some twice).
template <bool Fetch>
ORTC_AVX2 __attribute__((always_inline)) inline void
offsetsPanelAvx2(int64_t kc, const float *a, const float *b, const int32_t *offsets, float *c,
                 int64_t ldc, bool load, const float *fetch) {
  __m256 acc0[kMr], acc1[kMr];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r)
    acc0[r] = acc1[r] = _mm256_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    if (Fetch)
      _mm_prefetch(reinterpret_cast<const char *>(fetch + k * kMr), _MM_HINT_T1);
    const float *bk = b + offsets[k];
    fmaRowAvx2<kMr>(a, _mm256_loadu_ps(bk), _mm256_loadu_ps(bk + 8), acc0, acc1);
    a += kMr;
  }
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    float *cr = c + r * ldc;
    if (load) {
      acc0[r] = _mm256_add_ps(acc0[r], _mm256_loadu_ps(cr));
      acc1[r] = _mm256_add_ps(acc1[r], _mm256_loadu_ps(cr + 8));
    }
    _mm256_storeu_ps(cr, acc0[r]);
    _mm256_storeu_ps(cr + 8, acc1[r]);
  }
}

/// kernelAvx2 over a B read where it lies (sgemmRowsB): the tile's row k of
/// B is the 16 floats at b + k * ldb, those past `nr` neither read nor
/// written. (Prefetching the next panel's rows, 1 to 8 panels ahead,
/// measured no faster: the rows stream in by themselves.)
template <int MR>
ORTC_AVX2 void kernelAvx2RowsB(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
                               int64_t ldc, int nr, bool load, const GemmEpilogue *epilogue,
                               int64_t row0) {
  __m256 acc0[MR], acc1[MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    acc0[r] = _mm256_setzero_ps();
    acc1[r] = _mm256_setzero_ps();
  }
  __m256i m0, m1;
  maskFor(nr, m0, m1);
  const bool full = nr == kNr;
  for (int64_t k = 0; k < kc; ++k) {
    if (full)
      fmaRowAvx2<MR>(a, _mm256_loadu_ps(b), _mm256_loadu_ps(b + 8), acc0, acc1);
    else
      fmaRowAvx2<MR>(a, _mm256_maskload_ps(b, m0), _mm256_maskload_ps(b + 8, m1), acc0, acc1);
    a += kMr;
    b += ldb;
  }
  if (full)
    finishTileAvx2<true, MR>(acc0, acc1, c, ldc, __m256i(), __m256i(), load, epilogue, row0);
  else
    finishTileAvx2<false, MR>(acc0, acc1, c, ldc, m0, m1, load, epilogue, row0);
}

/// kernelAvx512Offsets in AVX2: 16 columns at a time (12 accumulators); the
/// first 16 fetch nextA.
ORTC_AVX2 void kernelAvx2Offsets(int64_t kc, const float *a, const float *b, const int32_t *offsets,
                                 float *c, int64_t ldc, int64_t cols, bool load,
                                 const float *nextA) {
  for (int64_t j = 0; j < cols; j += kNr) {
    if (j == 0 && nextA)
      offsetsPanelAvx2<true>(kc, a, b + j, offsets, c + j, ldc, load, nextA);
    else
      offsetsPanelAvx2<false>(kc, a, b + j, offsets, c + j, ldc, load, nullptr);
  }
}

//===----------------------------------------------------------------------===//
// AVX-512 kernel: the 16-wide panel is one zmm, so a k step is one B load, MR
// broadcasts and MR FMAs (half the AVX2 kernel's instructions for the same
// work), and the right edge is a k-mask (AVX2's masked stores are microcoded
// on AMD).
//===----------------------------------------------------------------------===//

/// Activation `Act` on every vector of a register tile.
template <GemmEpilogue::Activation Act, int Rows, int Panels>
ORTC_AVX512 __attribute__((always_inline)) inline void
activateTileAvx512(__m512 (&acc)[Rows][Panels], const GemmEpilogue &e) {
#pragma GCC unroll 6
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p)
      acc[r][p] = activateAvx512(Act, e, acc[r][p]);
}

/// Activation `Act` (one without parameters) on `rows` stored rows of a
/// tile of `Panels` panels.
template <GemmEpilogue::Activation Act, int Panels>
ORTC_AVX512 void activateStoredAvx512(float *c, int64_t ldc, int rows,
                                      const __mmask16 (&columns)[Panels]) {
  const GemmEpilogue none;
  for (int r = 0; r < rows; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p) {
      float *cp = c + r * ldc + p * kNr;
      _mm512_mask_storeu_ps(cp, columns[p],
                            activateAvx512(Act, none, _mm512_maskz_loadu_ps(columns[p], cp)));
    }
}

/// Finishes a register tile of `Rows` x `Panels` vectors and stores its
/// first `rows` rows (`columns[p]`: the columns of panel p present): + C
/// when `load`, then the epilogue in GemmEpilogue::apply's order (row bias,
/// column bias, residual, activation). Each step is decided once per tile,
/// not per vector: per-vector tests and the activation's switch cost 25% of
/// a pointwise conv with 16 input channels (K = 16). Gelu's polynomial is
/// applied to the stored rows, where it stays out of the tile's registers.
template <int Rows, int Panels>
ORTC_AVX512 __attribute__((always_inline)) inline void
finishTileAvx512(__m512 (&acc)[Rows][Panels], float *c, int64_t ldc, int rows,
                 const __mmask16 (&columns)[Panels], bool load, const GemmEpilogue *epilogue,
                 int64_t row0) {
  using A = GemmEpilogue::Activation;
  if (load) {
#pragma GCC unroll 6
    for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
      for (int p = 0; p < Panels; ++p)
        if (r < rows)
          acc[r][p] =
              _mm512_add_ps(acc[r][p], _mm512_maskz_loadu_ps(columns[p], c + r * ldc + p * kNr));
  }
  A later = A::None;
  if (epilogue) {
    // A copy: the tile's stores cannot alias it, so nothing is reloaded.
    const GemmEpilogue e = *epilogue;
    if (e.rowBias) {
#pragma GCC unroll 6
      for (int r = 0; r < Rows; ++r) {
        if (r >= rows)
          break;
        __m512 bias = _mm512_set1_ps(e.rowBias[row0 + r]);
#pragma GCC unroll 4
        for (int p = 0; p < Panels; ++p)
          acc[r][p] = _mm512_add_ps(acc[r][p], bias);
      }
    }
    if (e.colBias) {
      __m512 bias[Panels];
#pragma GCC unroll 4
      for (int p = 0; p < Panels; ++p)
        bias[p] = _mm512_maskz_loadu_ps(columns[p], e.colBias + p * kNr);
#pragma GCC unroll 6
      for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
        for (int p = 0; p < Panels; ++p)
          acc[r][p] = _mm512_add_ps(acc[r][p], bias[p]);
    }
    if (e.residual) {
#pragma GCC unroll 6
      for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
        for (int p = 0; p < Panels; ++p)
          if (r < rows)
            acc[r][p] = _mm512_add_ps(
                acc[r][p],
                _mm512_maskz_loadu_ps(columns[p], e.residual + (row0 + r) * e.ldr + p * kNr));
    }
    switch (e.activation) {
    case A::None:
      break;
    case A::Relu:
      activateTileAvx512<A::Relu>(acc, e);
      break;
    case A::Clip:
      activateTileAvx512<A::Clip>(acc, e);
      break;
    case A::LeakyRelu:
      activateTileAvx512<A::LeakyRelu>(acc, e);
      break;
    case A::Gelu:
    case A::GeluTanh:
      later = e.activation;
      break;
    }
  }
#pragma GCC unroll 6
  for (int r = 0; r < Rows; ++r) {
    if (r >= rows)
      break;
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p)
      _mm512_mask_storeu_ps(c + r * ldc + p * kNr, columns[p], acc[r][p]);
  }
  if (later == A::Gelu)
    activateStoredAvx512<A::Gelu, Panels>(c, ldc, rows, columns);
  else if (later == A::GeluTanh)
    activateStoredAvx512<A::GeluTanh, Panels>(c, ldc, rows, columns);
}

template <int MR>
ORTC_AVX512 void kernelAvx512(int64_t kc, const float *a, const float *b, float *c,
                              int64_t ldc, int nr, bool load, const GemmEpilogue *epilogue,
                              int64_t row0) {
  // Two accumulator sets (alternate k steps) keep >= 8 FMA chains in flight
  // for 4-6 rows, four sets for fewer rows; summed at the end.
  constexpr int kSets = MR >= 4 ? 2 : 4;
  __m512 acc[kSets][MR];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc), _MM_HINT_T0);
#pragma GCC unroll 4
    for (int set = 0; set < kSets; ++set)
      acc[set][r] = _mm512_setzero_ps();
  }
  int64_t k = 0;
  for (; k + 4 <= kc; k += 4) {
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u)
      _mm_prefetch(reinterpret_cast<const char *>(b + (kBPrefetch + u) * kNr), _MM_HINT_T0);
#pragma GCC unroll 4
    for (int u = 0; u < 4; ++u) {
      __m512 bv = _mm512_loadu_ps(b + u * kNr);
#pragma GCC unroll 6
      for (int r = 0; r < MR; ++r)
        acc[u % kSets][r] =
            _mm512_fmadd_ps(_mm512_set1_ps(a[u * kMr + r]), bv, acc[u % kSets][r]);
    }
    a += 4 * kMr;
    b += 4 * kNr;
  }
  for (; k < kc; ++k) {
    __m512 bv = _mm512_loadu_ps(b);
#pragma GCC unroll 6
    for (int r = 0; r < MR; ++r)
      acc[0][r] = _mm512_fmadd_ps(_mm512_set1_ps(a[r]), bv, acc[0][r]);
    a += kMr;
    b += kNr;
  }
  // Columns past N are neither read nor written.
  const __mmask16 columns[1] = {static_cast<__mmask16>((1u << nr) - 1)};
  __m512 tile[MR][1];
#pragma GCC unroll 6
  for (int r = 0; r < MR; ++r) {
    tile[r][0] = acc[0][r];
#pragma GCC unroll 4
    for (int set = 1; set < kSets; ++set)
      tile[r][0] = _mm512_add_ps(tile[r][0], acc[set][r]);
  }
  finishTileAvx512<MR, 1>(tile, c, ldc, MR, columns, load, epilogue, row0);
}

/// One k step of a 6-row tile over `Panels` B vectors: each of the panel's
/// 6 A values broadcast once and multiplied into every panel's accumulator
/// (the 6x64 tile and the direct conv's offsets tile alike).
template <int Panels>
ORTC_AVX512 __attribute__((always_inline)) inline void
broadcastFmaStep(__m512 (&acc)[kMr][Panels], const float *a, const __m512 (&bv)[Panels]) {
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
    __m512 av = _mm512_set1_ps(a[r]);
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p)
      acc[r][p] = _mm512_fmadd_ps(av, bv[p], acc[r][p]);
  }
}

/// finishTileAvx512 for a tile of `Panels` panels whose last has
/// `lastCols` columns of C.
template <int Rows, int Panels>
ORTC_AVX512 __attribute__((always_inline)) inline void
storeTileAvx512(__m512 (&acc)[Rows][Panels], float *c, int64_t ldc, int rows, int lastCols,
                bool load, const GemmEpilogue *epilogue, int64_t row0) {
  __mmask16 columns[Panels];
#pragma GCC unroll 4
  for (int p = 0; p < Panels; ++p)
    columns[p] =
        p + 1 < Panels || lastCols >= kNr ? __mmask16(0xFFFF) : __mmask16((1u << lastCols) - 1);
  finishTileAvx512<Rows, Panels>(acc, c, ldc, rows, columns, load, epilogue, row0);
}

/// A full 6-row tile over `Panels` adjacent B panels (b: the first one's
/// slice, the next ones `panelStride` floats apart; the last one has
/// `lastCols` columns of C, its zero padding computed and not stored) in
/// AVX-512: each
/// broadcast of A feeds `Panels` FMAs, so a k step is `Panels` B loads, 6
/// broadcasts and 6 * Panels FMAs on as many independent accumulators, and
/// the tile's fixed costs (C, prefetches, loop) are paid once per 16 * Panels
/// columns. Four panels (24 accumulators) keep two FMA pipes busy with fewer
/// loads per FMA than two. The epilogue is at the first panel's column.
template <int Panels>
ORTC_AVX512 void kernelAvx512Wide(int64_t kc, const float *a, const float *b, int64_t panelStride,
                                  const float *next, float *c, int64_t ldc, int lastCols, bool load,
                                  const GemmEpilogue *epilogue, int64_t row0) {
  __m512 acc[kMr][Panels];
  const float *bp[Panels];
#pragma GCC unroll 4
  for (int p = 0; p < Panels; ++p)
    bp[p] = b + p * panelStride;
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r) {
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p) {
      _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc + p * kNr), _MM_HINT_T0);
      acc[r][p] = _mm512_setzero_ps();
    }
  }
  for (int64_t k = 0; k < kc; ++k) {
    __m512 bv[Panels];
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p) {
      _mm_prefetch(reinterpret_cast<const char *>(bp[p] + kBPrefetch * kNr), _MM_HINT_T0);
      bv[p] = _mm512_loadu_ps(bp[p]);
      bp[p] += kNr;
    }
    // One line a step of the B slice the next tiles read, into L2: weights
    // streamed from memory arrive before the next tiles' first pass.
    _mm_prefetch(reinterpret_cast<const char *>(next + k * kNr), _MM_HINT_T1);
    broadcastFmaStep<Panels>(acc, a, bv);
    a += kMr;
  }
  storeTileAvx512<kMr, Panels>(acc, c, ldc, kMr, lastCols, load, epilogue, row0);
}

/// One k step of kernelAvx512FewRows into one accumulator set.
template <int Rows, int Panels>
ORTC_AVX512 __attribute__((always_inline)) inline void fewRowsStep(__m512 (&acc)[Rows][Panels],
                                                                   const float *const (&bp)[Panels],
                                                                   const float *a, int64_t k) {
  __m512 bv[Panels];
#pragma GCC unroll 4
  for (int p = 0; p < Panels; ++p)
    bv[p] = _mm512_loadu_ps(bp[p] + k * kNr);
#pragma GCC unroll 6
  for (int r = 0; r < Rows; ++r) {
    __m512 av = _mm512_set1_ps(a[k * kMr + r]);
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p)
      acc[r][p] = _mm512_fmadd_ps(av, bv[p], acc[r][p]);
  }
}

/// kernelAvx512Wide for a tile of fewer than 6 rows (a GEMV's one row, an
/// M's last rows): each broadcast of A feeds `Panels` FMAs as there, and
/// one or two rows keep two accumulator sets (alternate k steps), so that
/// at least 8 FMA chains are in flight. With one row the product is bound
/// by streaming B: four panels at once, four streams, read 4 MB of packed
/// weights from L3 at 75 GB/s where one panel at a time read 54 GB/s (AMD
/// EPYC, AVX-512: a 1x1024x1024 GEMV 78 -> 56 us). No software prefetch:
/// it measured slower here (the hardware follows four streams).
template <int Rows, int Panels>
ORTC_AVX512 void kernelAvx512FewRows(int64_t kc, const float *a, const float *b,
                                     int64_t panelStride, const float *, float *c, int64_t ldc,
                                     int lastCols, bool load, const GemmEpilogue *epilogue,
                                     int64_t row0) {
  constexpr int kSets = Rows <= 2 ? 2 : 1;
  __m512 acc[kSets][Rows][Panels];
  const float *bp[Panels];
#pragma GCC unroll 4
  for (int p = 0; p < Panels; ++p)
    bp[p] = b + p * panelStride;
#pragma GCC unroll 2
  for (int set = 0; set < kSets; ++set)
#pragma GCC unroll 6
    for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
      for (int p = 0; p < Panels; ++p)
        acc[set][r][p] = _mm512_setzero_ps();
  int64_t k = 0;
  for (; k + kSets <= kc; k += kSets)
#pragma GCC unroll 2
    for (int set = 0; set < kSets; ++set)
      fewRowsStep<Rows, Panels>(acc[set], bp, a, k + set);
  for (; k < kc; ++k)
    fewRowsStep<Rows, Panels>(acc[0], bp, a, k);
  __m512 tile[Rows][Panels];
#pragma GCC unroll 6
  for (int r = 0; r < Rows; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p) {
      tile[r][p] = acc[0][r][p];
#pragma GCC unroll 2
      for (int set = 1; set < kSets; ++set)
        tile[r][p] = _mm512_add_ps(tile[r][p], acc[set][r][p]);
    }
  storeTileAvx512<Rows, Panels>(tile, c, ldc, Rows, lastCols, load, epilogue, row0);
}

/// A full 6-row tile of 16 * Panels columns whose B is read in place: row k
/// of B is b + offsets[k] (sgemmOffsetsB). Up to 24 accumulators as in the
/// 6x64 tile; the loads are unaligned and mostly L1 hits (neighbouring taps
/// overlap).
template <int Panels>
ORTC_AVX512 void kernelAvx512OffsetsOf(int64_t kc, const float *a, const float *b,
                                       const int32_t *offsets, float *c, int64_t ldc, bool load) {
  __m512 acc[kMr][Panels];
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p)
      acc[r][p] = _mm512_setzero_ps();
  for (int64_t k = 0; k < kc; ++k) {
    const float *bk = b + offsets[k];
    __m512 bv[Panels];
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p)
      bv[p] = _mm512_loadu_ps(bk + p * kNr);
    broadcastFmaStep<Panels>(acc, a, bv);
    a += kMr;
  }
#pragma GCC unroll 6
  for (int r = 0; r < kMr; ++r)
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p) {
      float *cp = c + r * ldc + p * kNr;
      _mm512_storeu_ps(cp, load ? _mm512_add_ps(acc[r][p], _mm512_loadu_ps(cp)) : acc[r][p]);
    }
}

/// kernelAvx512OffsetsOf for `cols` (16, 32, 48 or 64) columns.
ORTC_AVX512 void kernelAvx512Offsets(int64_t kc, const float *a, const float *b,
                                     const int32_t *offsets, float *c, int64_t ldc, int64_t cols,
                                     bool load, const float *) {
  switch (cols / kNr) {
  case 4:
    return kernelAvx512OffsetsOf<4>(kc, a, b, offsets, c, ldc, load);
  case 3:
    return kernelAvx512OffsetsOf<3>(kc, a, b, offsets, c, ldc, load);
  case 2:
    return kernelAvx512OffsetsOf<2>(kc, a, b, offsets, c, ldc, load);
  default:
    return kernelAvx512OffsetsOf<1>(kc, a, b, offsets, c, ldc, load);
  }
}

/// Stores 4 consecutive k of a 6-row panel: rows 0-3 from u_k, rows 4-5 from
/// the (r4,r5)-interleaved t45 (k 0-1) and t67 (k 2-3).
ORTC_AVX2 inline void storeK6(float *d, __m128 u0, __m128 u1, __m128 u2, __m128 u3,
                              __m128 t45, __m128 t67) {
  _mm_storeu_ps(d, u0);
  _mm_storel_pi(reinterpret_cast<__m64 *>(d + 4), t45);
  _mm_storeu_ps(d + kMr, u1);
  _mm_storeh_pi(reinterpret_cast<__m64 *>(d + kMr + 4), t45);
  _mm_storeu_ps(d + 2 * kMr, u2);
  _mm_storel_pi(reinterpret_cast<__m64 *>(d + 2 * kMr + 4), t67);
  _mm_storeu_ps(d + 3 * kMr, u3);
  _mm_storeh_pi(reinterpret_cast<__m64 *>(d + 3 * kMr + 4), t67);
}

/// packRowsGeneric with 8x6 transposes: 6 loads and 16 stores per 48 floats
/// instead of 48 scalar stores, which matters when N is small and packing is
/// a large share of the work.
ORTC_AVX2 void packRowsAvx2(const float *a, int64_t lda, int64_t kc, float *panel) {
  int64_t k = 0;
  for (; k + 8 <= kc; k += 8) {
    const float *s = a + k;
    __m256 r0 = _mm256_loadu_ps(s), r1 = _mm256_loadu_ps(s + lda);
    __m256 r2 = _mm256_loadu_ps(s + 2 * lda), r3 = _mm256_loadu_ps(s + 3 * lda);
    __m256 r4 = _mm256_loadu_ps(s + 4 * lda), r5 = _mm256_loadu_ps(s + 5 * lda);
    // Per 128-bit lane j (k = 4j..4j+3): t0 = r0,r1 interleaved for k 0-1,
    // t1 for k 2-3; u_k = rows 0-3 at k.
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1);
    __m256 t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    __m256 t4 = _mm256_unpacklo_ps(r4, r5), t5 = _mm256_unpackhi_ps(r4, r5);
    __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    float *d = panel + k * kMr;
    storeK6(d, _mm256_castps256_ps128(u0), _mm256_castps256_ps128(u1),
            _mm256_castps256_ps128(u2), _mm256_castps256_ps128(u3), _mm256_castps256_ps128(t4),
            _mm256_castps256_ps128(t5));
    storeK6(d + 4 * kMr, _mm256_extractf128_ps(u0, 1), _mm256_extractf128_ps(u1, 1),
            _mm256_extractf128_ps(u2, 1), _mm256_extractf128_ps(u3, 1),
            _mm256_extractf128_ps(t4, 1), _mm256_extractf128_ps(t5, 1));
  }
  for (; k < kc; ++k)
    for (int r = 0; r < kMr; ++r)
      panel[k * kMr + r] = a[r * lda + k];
}

bool cpuHasAvx2() {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
}
// libgcc's check includes the OS's saving of the zmm state (XGETBV).
bool cpuHasAvx512() { return cpuHasAvx2() && __builtin_cpu_supports("avx512f"); }
#else
bool cpuHasAvx2() { return false; }
bool cpuHasAvx512() { return false; }
#endif

/// A tile of `Rows` (1 to 6) rows over `Panels` adjacent B panels (as
/// kernelAvx512Wide) whose A is never packed: row r's k = t * C + c is
/// rows[r][tapOffsets[t] + c] (sgemmRowsOfTaps). K runs [k0, k1), a run of
/// channels per tap; the broadcasts of a k step read the caller's input
/// rows, which the hardware streams like packed panels. A tile of fewer
/// rows costs fewer FMAs: 7x7 positions are 8 full tiles and a row, not 9
/// full tiles. Each k step also prefetches one line of `next` (a panel
/// slice of 16 floats per k) into L2. HalfLast: the last panel has at most
/// 8 columns (24 = 16 + 8, MobileNetV2's projections), and its FMAs are
/// 8 lanes wide; a core whose 512-bit FMA is two 256-bit ones (AMD Zen 4)
/// then does 3/4 of the work, and one with 512-bit units does the same.
template <int Rows, int Panels, bool HalfLast = false>
ORTC_AVX512 void kernelAvx512Taps(int64_t k0, int64_t k1, int64_t C, const float *const *rows,
                                  const int64_t *tapOffsets, const float *b, int64_t panelStride,
                                  const float *next, float *c, int64_t ldc, int lastCols, bool load,
                                  const GemmEpilogue *epilogue, int64_t row0) {
  constexpr int Wide = HalfLast ? Panels - 1 : Panels;
  __m512 acc[Rows][Panels];
  __m256 half[Rows];
#pragma GCC unroll 6
  for (int r = 0; r < Rows; ++r) {
#pragma GCC unroll 4
    for (int p = 0; p < Panels; ++p) {
      _mm_prefetch(reinterpret_cast<const char *>(c + r * ldc + p * kNr), _MM_HINT_T0);
      acc[r][p] = _mm512_setzero_ps();
    }
    half[r] = _mm256_setzero_ps();
  }
  const float *bp = b;
  // One run of channels per tap: the block may start and end inside one.
  for (int64_t k = k0, t = k0 / C, ch = k0 % C; k < k1; ++t, ch = 0) {
    int64_t n = std::min(C - ch, k1 - k);
    const float *a[Rows];
#pragma GCC unroll 6
    for (int r = 0; r < Rows; ++r)
      a[r] = rows[r] + (tapOffsets ? tapOffsets[t] : t * C) + ch;
    for (int64_t j = 0; j < n; ++j, bp += kNr, next += kNr) {
      _mm_prefetch(reinterpret_cast<const char *>(next), _MM_HINT_T1);
      __m512 bv[Panels];
#pragma GCC unroll 4
      for (int p = 0; p < Wide; ++p)
        bv[p] = _mm512_loadu_ps(bp + p * panelStride);
      __m256 bHalf = HalfLast ? _mm256_loadu_ps(bp + Wide * panelStride) : _mm256_setzero_ps();
#pragma GCC unroll 6
      for (int r = 0; r < Rows; ++r) {
        __m512 av = _mm512_set1_ps(a[r][j]);
#pragma GCC unroll 4
        for (int p = 0; p < Wide; ++p)
          acc[r][p] = _mm512_fmadd_ps(av, bv[p], acc[r][p]);
        if constexpr (HalfLast)
          half[r] = _mm256_fmadd_ps(_mm512_castps512_ps256(av), bHalf, half[r]);
      }
    }
    k += n;
  }
  if constexpr (HalfLast)
#pragma GCC unroll 6
    for (int r = 0; r < Rows; ++r)
      acc[r][Wide] = _mm512_zextps256_ps512(half[r]);
  storeTileAvx512<Rows, Panels>(acc, c, ldc, Rows, lastCols, load, epilogue, row0);
}

//===----------------------------------------------------------------------===//
// Variants and dispatch
//===----------------------------------------------------------------------===//

/// A 6-row tile of `cols` (16 to kOffsetsTile, a multiple of 16) columns
/// whose B rows are read in place (sgemmOffsetsB). `nextA`: the 6 * kc
/// floats of A the next tile reads from memory, or null; the AVX2 kernel
/// fetches them into L2 as it goes (the others ignore it: not measured).
using OffsetsKernel = void (*)(int64_t kc, const float *a, const float *b, const int32_t *offsets,
                               float *c, int64_t ldc, int64_t cols, bool load, const float *nextA);

/// A full-height tile over adjacent B panels (panelStride floats apart),
/// the last with lastCols (1..16) columns of C; null where a variant has
/// none.
using WideKernel = void (*)(int64_t kc, const float *a, const float *b, int64_t panelStride,
                            const float *next, float *c, int64_t ldc, int lastCols, bool load,
                            const GemmEpilogue *epilogue, int64_t row0);

/// kernelAvx2RowsB's signature.
using RowsBKernel = void (*)(int64_t kc, const float *a, const float *b, int64_t ldb, float *c,
                             int64_t ldc, int nr, bool load, const GemmEpilogue *epilogue,
                             int64_t row0);
/// kernelAvx512Taps's signature.
using TapsKernel = void (*)(int64_t k0, int64_t k1, int64_t C, const float *const *rows,
                            const int64_t *tapOffsets, const float *b, int64_t panelStride,
                            const float *next, float *c, int64_t ldc, int lastCols, bool load,
                            const GemmEpilogue *epilogue, int64_t row0);

struct Variant {
  const char *name;
  KernelIsa isa;
  MicroKernel kernels[kMr + 1]; // indexed by rows, 1..6
  RowPacker packRows;
  OffsetsKernel offsetsKernel;
  // Tiles over 4 and 2 adjacent B panels.
  WideKernel quadKernel = nullptr;
  WideKernel pairKernel = nullptr;
  // The same for tiles of 1 to 5 rows, indexed by rows; null where a
  // variant has none.
  WideKernel fewRowsQuadKernels[kMr] = {};
  WideKernel fewRowsPairKernels[kMr] = {};
  // Tiles over 1, 2 and 4 panels whose A rows are runs of taps
  // (sgemmRowsOfTaps), then over 2 panels the last of at most 8 columns;
  // null where a variant has none.
  TapsKernel tapsKernels[kMr][4] = {};
  // Tiles over a B read in place (sgemmRowsB), indexed by rows, 1..6; null
  // where a variant has none.
  RowsBKernel rowsBKernels[kMr + 1] = {};
};

const Variant kGeneric = {"generic",
                          KernelIsa::Generic,
                          {nullptr, kernelGeneric<1>, kernelGeneric<2>, kernelGeneric<3>,
                           kernelGeneric<4>, kernelGeneric<5>, kernelGeneric<6>},
                          packRowsGeneric,
                          kernelGenericOffsets};
#ifdef ORTC_GEMM_X86
const Variant kAvx2 = {"avx2",
                       KernelIsa::Avx2,
                       {nullptr, kernelAvx2<1>, kernelAvx2<2>, kernelAvx2<3>, kernelAvx2<4>,
                        kernelAvx2<5>, kernelAvx2<6>},
                       packRowsAvx2,
                       kernelAvx2Offsets,
                       nullptr,
                       nullptr,
                       {},
                       {},
                       {},
                       {nullptr, kernelAvx2RowsB<1>, kernelAvx2RowsB<2>, kernelAvx2RowsB<3>,
                        kernelAvx2RowsB<4>, kernelAvx2RowsB<5>, kernelAvx2RowsB<6>}};
const Variant kAvx512 = {
    "avx512",
    KernelIsa::Avx512,
    {nullptr, kernelAvx512<1>, kernelAvx512<2>, kernelAvx512<3>, kernelAvx512<4>, kernelAvx512<5>,
     kernelAvx512<6>},
    packRowsAvx2,
    kernelAvx512Offsets,
    kernelAvx512Wide<4>,
    kernelAvx512Wide<2>,
    {nullptr, kernelAvx512FewRows<1, 4>, kernelAvx512FewRows<2, 4>, kernelAvx512FewRows<3, 4>,
     kernelAvx512FewRows<4, 4>, kernelAvx512FewRows<5, 4>},
    {nullptr, kernelAvx512FewRows<1, 2>, kernelAvx512FewRows<2, 2>, kernelAvx512FewRows<3, 2>,
     kernelAvx512FewRows<4, 2>, kernelAvx512FewRows<5, 2>},
    {{kernelAvx512Taps<1, 1>, kernelAvx512Taps<1, 2>, kernelAvx512Taps<1, 4>,
      kernelAvx512Taps<1, 2, true>},
     {kernelAvx512Taps<2, 1>, kernelAvx512Taps<2, 2>, kernelAvx512Taps<2, 4>,
      kernelAvx512Taps<2, 2, true>},
     {kernelAvx512Taps<3, 1>, kernelAvx512Taps<3, 2>, kernelAvx512Taps<3, 4>,
      kernelAvx512Taps<3, 2, true>},
     {kernelAvx512Taps<4, 1>, kernelAvx512Taps<4, 2>, kernelAvx512Taps<4, 4>,
      kernelAvx512Taps<4, 2, true>},
     {kernelAvx512Taps<5, 1>, kernelAvx512Taps<5, 2>, kernelAvx512Taps<5, 4>,
      kernelAvx512Taps<5, 2, true>},
     {kernelAvx512Taps<6, 1>, kernelAvx512Taps<6, 2>, kernelAvx512Taps<6, 4>,
      kernelAvx512Taps<6, 2, true>}}};
#endif

const Variant *detectVariant() {
#ifdef ORTC_GEMM_X86
  if (cpuHasAvx512())
    return &kAvx512;
  if (cpuHasAvx2())
    return &kAvx2;
#endif
  return &kGeneric;
}

const Variant *bestVariant() {
  static const Variant *best = detectVariant();
  return best;
}

// Set only by the testing hook; null means "what the CPU supports best".
std::atomic<const Variant *> forcedVariant{nullptr};

const Variant *activeVariant() {
  const Variant *forced = forcedVariant.load(std::memory_order_relaxed);
  return forced ? forced : bestVariant();
}

//===----------------------------------------------------------------------===//
// Packing A
//===----------------------------------------------------------------------===//

/// Packs rows [i0, i0+mc) and columns [k0, k0+kc) of op(A) into ceil(mc/6)
/// panels of kc*6 floats; rows past mc in the last panel are zero.
void packA(const Variant &variant, const float *A, int64_t lda, bool transA, int64_t i0,
           int64_t mc, int64_t k0, int64_t kc, float *dst) {
  for (int64_t ip = 0; ip < mc; ip += kMr) {
    int64_t mr = std::min<int64_t>(kMr, mc - ip);
    float *panel = dst + ip * kc;
    if (transA) {
      // op(A)(i,k) = A[k*lda + i]: each k reads mr consecutive floats (a
      // fixed-size copy for a full panel, which compiles to two moves).
      const float *src = A + k0 * lda + i0 + ip;
      if (mr == kMr) {
        for (int64_t k = 0; k < kc; ++k)
          std::memcpy(panel + k * kMr, src + k * lda, kMr * sizeof(float));
        continue;
      }
      for (int64_t k = 0; k < kc; ++k) {
        const float *s = src + k * lda;
        float *d = panel + k * kMr;
        int64_t r = 0;
        for (; r < mr; ++r)
          d[r] = s[r];
        for (; r < kMr; ++r)
          d[r] = 0.0f;
      }
      continue;
    }
    const float *rows = A + (i0 + ip) * lda + k0;
    if (mr == kMr) {
      variant.packRows(rows, lda, kc, panel);
      continue;
    }
    for (int64_t k = 0; k < kc; ++k)
      for (int r = 0; r < kMr; ++r)
        panel[k * kMr + r] = r < mr ? rows[r * lda + k] : 0.0f;
  }
}

/// Per-thread packed-A buffer of kMc*kKc floats; null if allocation failed.
float *packBuffer() {
  struct Buffer {
    float *data = nullptr;
    Buffer() {
      data = static_cast<float *>(std::aligned_alloc(64, kMc * kKc * sizeof(float)));
    }
    ~Buffer() { std::free(data); }
  };
  thread_local Buffer buffer;
  return buffer.data;
}

int64_t roundUp(int64_t value, int64_t multiple) {
  return (value + multiple - 1) / multiple * multiple;
}

void zeroC(int64_t M, int64_t N, float *C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    std::memset(C + i * ldc, 0, N * sizeof(float));
}

} // namespace

size_t packedGemmBSize(int64_t K, int64_t N) {
  if (K <= 0 || N <= 0)
    return 0;
  int64_t panels = (N + kGemmPanelWidth - 1) / kGemmPanelWidth;
  return static_cast<size_t>(panels * kGemmPanelWidth * K);
}

/// Full panels packGemmB fills per pass over B's rows (4: a run of 256 bytes
/// per row; 8 and 16 measured no better).
constexpr int64_t kPackPanelsPerPass = 4;

void packGemmB(const float *B, int64_t ldb, bool transB, int64_t K, int64_t N, float alpha,
               float *packed) {
  if (K <= 0 || N <= 0)
    return;
  if (transB) {
    // B is [N,K]: column j of op(B) is row j of B, contiguous in k.
    for (int64_t j0 = 0; j0 < N; j0 += kNr) {
      int64_t nr = std::min<int64_t>(kNr, N - j0);
      float *panel = packed + j0 * K;
      int64_t j = 0;
      for (; j < nr; ++j) {
        const float *s = B + (j0 + j) * ldb;
        for (int64_t k = 0; k < K; ++k)
          panel[k * kNr + j] = alpha * s[k];
      }
      for (; j < kNr; ++j)
        for (int64_t k = 0; k < K; ++k)
          panel[k * kNr + j] = 0.0f;
    }
    return;
  }
  // B is [K,N]: panels a few at a time, row by row, so that each row of B is
  // read as one contiguous run. A panel at a time walked down B's rows a
  // line each, and where rows lie far apart (a pointwise conv's X, a plane
  // per row) every line missed: packing ResNet-50's 256-channel 56x56 X
  // from L3 took 1.6-1.9x as long.
  const int64_t full = N / kNr; // panels with all kNr columns
  for (int64_t p0 = 0; p0 < full; p0 += kPackPanelsPerPass) {
    int64_t count = std::min(kPackPanelsPerPass, full - p0);
    for (int64_t k = 0; k < K; ++k) {
      const float *s = B + k * ldb + p0 * kNr;
      float *d = packed + p0 * kNr * K + k * kNr;
      for (int64_t p = 0; p < count; ++p)
        for (int j = 0; j < kNr; ++j)
          d[p * kNr * K + j] = alpha * s[p * kNr + j];
    }
  }
  if (int64_t nr = N - full * kNr; nr > 0) {
    float *panel = packed + full * kNr * K;
    for (int64_t k = 0; k < K; ++k) {
      const float *s = B + k * ldb + full * kNr;
      int64_t j = 0;
      for (; j < nr; ++j)
        panel[k * kNr + j] = alpha * s[j];
      for (; j < kNr; ++j)
        panel[k * kNr + j] = 0.0f;
    }
  }
}

namespace {

/// The A operand of a product: rows of op(A) packed per block as they are
/// needed, or A packed whole once (packGemmA: row panels of K * kMr floats,
/// so a block's panel is a slice of its row panel).
struct AOperand {
  const float *A = nullptr;
  int64_t lda = 0;
  bool transA = false;
  const float *packed = nullptr;
  /// The same operand from row `i0` on.
  AOperand rowsFrom(int64_t i0, int64_t K) const {
    AOperand a = *this;
    if (packed)
      a.packed = packed + i0 * K; // i0 is a multiple of kMr
    else
      a.A = transA ? A + i0 : A + i0 * lda;
    return a;
  }
};

/// `bK`: the K that packedB's panels were packed with (>= K: the product
/// reads the first K rows of each panel).
void sgemmBlocks(int64_t M, int64_t N, int64_t K, const AOperand &a, const float *packedB,
                 int64_t bK, float *C, int64_t ldc, bool accumulate,
                 const GemmEpilogue *epilogue = nullptr) {
  if (M <= 0 || N <= 0)
    return;
  if (K <= 0) {
    if (!accumulate)
      zeroC(M, N, C, ldc);
    if (epilogue)
      epilogue->apply(C, ldc, M, N);
    return;
  }
  const Variant *variant = activeVariant();

  // Without the heap buffer, fall back to one A panel on the stack: slower,
  // still correct.
  alignas(64) float panelOnStack[kMr * kKc];
  float *aPack = a.packed ? nullptr : packBuffer();
  int64_t mcMax = kMc;
  if (!a.packed && !aPack) {
    aPack = panelOnStack;
    mcMax = kMr;
  }
  // Equal blocks rather than full ones and a small remainder: K=1024 runs as
  // 3x342, not 384+384+256, and M=150 as 78+72, not 144+6.
  // One A panel (M <= 6, e.g. a GEMV): B is used once, so there is no B
  // slice to keep in L1; long K blocks let each B panel stream front to back.
  int64_t kcMax = M <= kMr ? mcMax * kKc / kMr : kKc;
  int64_t kBlocks = (K + kcMax - 1) / kcMax;
  int64_t kcBlock = (K + kBlocks - 1) / kBlocks;
  int64_t mBlocks = (M + mcMax - 1) / mcMax;
  int64_t mcBlock = roundUp((M + mBlocks - 1) / mBlocks, kMr);

  // M blocks outermost: a block's rows of C stay in cache across the K blocks
  // and its rows of A are read front to back.
  for (int64_t i0 = 0; i0 < M; i0 += mcBlock) {
    int64_t mc = std::min<int64_t>(mcBlock, M - i0);
    for (int64_t k0 = 0; k0 < K; k0 += kcBlock) {
      int64_t kc = std::min<int64_t>(kcBlock, K - k0);
      // Later K blocks add onto what the earlier ones wrote.
      bool load = accumulate || k0 > 0;
      // The block's A panels: packed now, or slices of the packed rows.
      const float *aBlock = aPack;
      int64_t aStride = kc;
      if (a.packed) {
        aBlock = a.packed + i0 * K + k0 * kMr;
        aStride = K;
      } else {
        packA(*variant, a.A, a.lda, a.transA, i0, mc, k0, kc, aPack);
      }
      // In the last K block each tile is final: the kernel applies the
      // epilogue before it stores the tile.
      bool last = k0 + kc >= K;
      for (int64_t j0 = 0; j0 < N;) {
        // Four or two panels at once where the variant has a kernel for
        // them, the last of them maybe partial (N = 24 runs as one 6x32
        // tile, not a 6x16 one and a masked 6x16 one that read A twice);
        // else one panel, maybe partial.
        int panels = 1;
        WideKernel wide = nullptr;
        if (variant->quadKernel && j0 + 3 * kNr < N) {
          panels = 4;
          wide = variant->quadKernel;
        } else if (variant->pairKernel && j0 + kNr < N) {
          panels = 2;
          wide = variant->pairKernel;
        }
        int lastCols = static_cast<int>(std::min<int64_t>(kNr, N - j0 - (panels - 1) * kNr));
        int nr = static_cast<int>(std::min<int64_t>(kNr, N - j0));
        const float *bPanel = packedB + j0 * bK + k0 * kNr;
        // The epilogue at this block's rows and panel's column; each tile
        // starts at its row ip of it.
        GemmEpilogue panelEpilogue[4];
        if (last && epilogue)
          for (int p = 0; p < panels; ++p)
            panelEpilogue[p] = epilogue->at(i0, j0 + p * kNr);
        for (int64_t ip = 0; ip < mc; ip += kMr) {
          int mr = static_cast<int>(std::min<int64_t>(kMr, mc - ip));
          float *c = C + (i0 + ip) * ldc + j0;
          const float *aPanel = aBlock + ip * aStride;
          if (wide && mr == kMr) {
            // Each tile prefetches one panel slice of the next tiles (the
            // first ones cover them all), or re-touches its own at the end.
            int64_t nextPanel = j0 + panels * kNr + (ip / kMr % panels) * kNr;
            const float *next = nextPanel < N ? packedB + nextPanel * bK + k0 * kNr : bPanel;
            wide(kc, aPanel, bPanel, bK * kNr, next, c, ldc, lastCols, load,
                 last && epilogue ? &panelEpilogue[0] : nullptr, ip);
            continue;
          }
          WideKernel fewRows = !wide || mr >= kMr ? nullptr
                               : panels == 4      ? variant->fewRowsQuadKernels[mr]
                                                  : variant->fewRowsPairKernels[mr];
          if (fewRows) {
            fewRows(kc, aPanel, bPanel, bK * kNr, nullptr, c, ldc, lastCols, load,
                    last && epilogue ? &panelEpilogue[0] : nullptr, ip);
            continue;
          }
          for (int p = 0; p < panels; ++p)
            variant->kernels[mr](kc, aPanel, bPanel + p * bK * kNr, c + p * kNr, ldc,
                                 panels > 1 ? (p + 1 < panels ? kNr : lastCols) : nr, load,
                                 last && epilogue ? &panelEpilogue[p] : nullptr, ip);
        }
        j0 += panels * kNr;
      }
    }
  }
}

void sgemmBlocksParallel(ThreadPool *pool, int64_t M, int64_t N, int64_t K, const AOperand &a,
                         const float *packedB, float *C, int64_t ldc, bool accumulate,
                         const GemmEpilogue *epilogue) {
  if (epilogue && !epilogue->any())
    epilogue = nullptr;
  // Below ~1 MFLOP per thread, waking workers costs more than it saves.
  constexpr int64_t kMinFlopsPerTask = int64_t(1) << 20;
  int64_t threads = pool ? pool->threads() : 1;
  int64_t flops = 2 * M * N * std::max<int64_t>(K, 1);
  int64_t tasks = std::min<int64_t>(threads, flops / kMinFlopsPerTask);
  if (tasks <= 1 || M <= 0 || N <= 0) {
    sgemmBlocks(M, N, K, a, packedB, K, C, ldc, accumulate, epilogue);
    return;
  }
  int64_t rowPanels = (M + kMr - 1) / kMr, colPanels = (N + kNr - 1) / kNr;
  if (rowPanels >= tasks) {
    // Whole A panels per task, so every task's blocks stay register-tile sized.
    int64_t per = (rowPanels + tasks - 1) / tasks * kMr;
    parallelFor(pool, (M + per - 1) / per, [&](int64_t t) {
      int64_t i0 = t * per, rows = std::min(per, M - i0);
      GemmEpilogue part = epilogue ? epilogue->at(i0, 0) : GemmEpilogue();
      sgemmBlocks(rows, N, K, a.rowsFrom(i0, K), packedB, K, C + i0 * ldc, ldc, accumulate,
                  epilogue ? &part : nullptr);
    });
    return;
  }
  int64_t per = (colPanels + tasks - 1) / tasks * kNr;
  parallelFor(pool, (N + per - 1) / per, [&](int64_t t) {
    int64_t j0 = t * per, cols = std::min(per, N - j0);
    GemmEpilogue part = epilogue ? epilogue->at(0, j0) : GemmEpilogue();
    sgemmBlocks(M, cols, K, a, packedB + j0 * K, K, C + j0, ldc, accumulate,
                epilogue ? &part : nullptr);
  });
}

} // namespace

size_t packedGemmASize(int64_t M, int64_t K) {
  if (M <= 0 || K <= 0)
    return 0;
  return static_cast<size_t>((M + kMr - 1) / kMr * kMr * K);
}

void packGemmA(const float *A, int64_t lda, int64_t M, int64_t K, float *packed) {
  if (M <= 0 || K <= 0)
    return;
  // The whole of A as one block: each row panel is K * kMr floats.
  packA(*activeVariant(), A, lda, false, 0, M, 0, K, packed);
}

void sgemmPacked(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, bool transA,
                 const float *packedB, float *C, int64_t ldc, bool accumulate, int64_t packedK) {
  AOperand a;
  a.A = A;
  a.lda = lda;
  a.transA = transA;
  sgemmBlocks(M, N, K, a, packedB, std::max(packedK, K), C, ldc, accumulate);
}

void sgemmOffsetsB(int64_t M, int64_t Q, int64_t K, const float *packedA, const float *b,
                   const int32_t *offsets, float *C, int64_t ldc, int64_t bBytesPerK) {
  if (M <= 0 || Q <= 0)
    return;
  const Variant *variant = activeVariant();
  int64_t kcMost =
      std::clamp(kOffsetsBlockBytes / std::max<int64_t>(1, bBytesPerK), kKcOffsetsMin, kKc);
  int64_t kBlocks = std::max<int64_t>(1, (K + kcMost - 1) / kcMost);
  int64_t kcBlock = std::max<int64_t>(1, (K + kBlocks - 1) / kBlocks);
  int64_t panels = (M + kMr - 1) / kMr, mcPanels = kMc / kMr;
  // A block of rows stays in L2 across the column tiles; a tile's B rows (a
  // few input rows per channel of the K block) stay in L1 across the
  // block's panels.
  for (int64_t p0 = 0; p0 < panels; p0 += mcPanels) {
    int64_t p1 = std::min(panels, p0 + mcPanels);
    for (int64_t k0 = 0; k0 < std::max<int64_t>(K, 1); k0 += kcBlock) {
      int64_t kc = std::min(kcBlock, K - k0);
      for (int64_t q0 = 0; q0 < Q; q0 += kOffsetsTile) {
        int64_t cols = std::min(kOffsetsTile, Q - q0);
        // A comes from memory on a block's first tile (a model's weights
        // outgrow L3): each tile fetches the next panel's into L2.
        for (int64_t p = p0; p < p1; ++p)
          variant->offsetsKernel(kc, packedA + p * kMr * K + k0 * kMr, b + q0, offsets + k0,
                                 C + p * kMr * ldc + q0, ldc, cols, k0 > 0,
                                 q0 == 0 && p + 1 < p1 ? packedA + (p + 1) * kMr * K + k0 * kMr
                                                       : nullptr);
      }
    }
  }
}

bool sgemmRowsBAvailable() { return activeVariant()->rowsBKernels[kMr] != nullptr; }

void sgemmRowsB(int64_t M, int64_t N, int64_t K, const float *packedA, const float *b, int64_t ldb,
                float *C, int64_t ldc, const GemmEpilogue *epilogue) {
  const Variant *variant = activeVariant();
  if (M <= 0 || N <= 0 || K <= 0 || !variant->rowsBKernels[kMr])
    return;
  // Equal K blocks of at most kKc: a column panel's B rows of a block (64
  // bytes each) stay in L1 while every row panel reads them.
  int64_t kBlocks = (K + kKc - 1) / kKc;
  int64_t kcBlock = (K + kBlocks - 1) / kBlocks;
  for (int64_t k0 = 0; k0 < K; k0 += kcBlock) {
    int64_t kc = std::min(kcBlock, K - k0);
    bool last = k0 + kc >= K;
    for (int64_t j0 = 0; j0 < N; j0 += kNr) {
      int nr = static_cast<int>(std::min<int64_t>(kNr, N - j0));
      GemmEpilogue panelEpilogue;
      if (last && epilogue)
        panelEpilogue = epilogue->at(0, j0);
      for (int64_t ip = 0; ip < M; ip += kMr) {
        int mr = static_cast<int>(std::min<int64_t>(kMr, M - ip));
        variant->rowsBKernels[mr](kc, packedA + ip * K + k0 * kMr, b + k0 * ldb + j0, ldb,
                                  C + ip * ldc + j0, ldc, nr, k0 > 0,
                                  last && epilogue ? &panelEpilogue : nullptr, ip);
      }
    }
  }
}

namespace {
/// How many adjacent panels (4, 2 or 1) the AVX-512 tiles at column j0 span.
int tilePanels(int64_t j0, int64_t N) { return j0 + 3 * kNr < N ? 4 : j0 + kNr < N ? 2 : 1; }
} // namespace

bool sgemmRowsOfTapsAvailable() { return activeVariant()->tapsKernels[0][0] != nullptr; }

void sgemmRowsOfTaps(int64_t M, int64_t N, int64_t C, int64_t taps, const float *x,
                     const int64_t *rowOffsets, const int64_t *tapOffsets, const float *packedB,
                     float *Cm, int64_t ldc, bool accumulate, const GemmEpilogue *epilogue,
                     int64_t packedK) {
  const Variant *variant = activeVariant();
  int64_t K = C * taps;
  int64_t bK = std::max(packedK, K);
  if (M <= 0 || N <= 0 || K <= 0 || !variant->tapsKernels[0][0])
    return;
  int64_t kBlocks = (K + kKcTaps - 1) / kKcTaps;
  int64_t kcBlock = (K + kBlocks - 1) / kBlocks;
  // Rows in blocks whose C stays in cache across the K blocks; a B slice
  // of a K block stays in L1 across the block's tiles.
  for (int64_t i0 = 0; i0 < M; i0 += kMc) {
    int64_t mc = std::min(kMc, M - i0);
    for (int64_t k0 = 0; k0 < K; k0 += kcBlock) {
      int64_t k1 = std::min(K, k0 + kcBlock);
      bool last = k1 >= K;
      for (int64_t j0 = 0; j0 < N;) {
        int panels = tilePanels(j0, N);
        int lastCols = static_cast<int>(std::min<int64_t>(kNr, N - j0 - (panels - 1) * kNr));
        GemmEpilogue panelEpilogue;
        if (last && epilogue)
          panelEpilogue = epilogue->at(i0, j0);
        // The B slice the next tiles read (the next columns, else the next K
        // block's first; this block's first for the last): the tiles of
        // this slice prefetch it into L2, a panel each, since weights come
        // from memory and one conv's rarely fit L2 (ResNet-50's 3x3 over 7x7
        // positions: 123 GFLOP/s with its weights in cache, 103 without).
        int64_t nextJ0 = j0 + panels * kNr < N ? j0 + panels * kNr : 0;
        int64_t nextK0 = nextJ0 ? k0 : k1 < K ? k1 : 0;
        int nextPanels = tilePanels(nextJ0, N);
        for (int64_t ip = 0; ip < mc; ip += kMr) {
          int mr = static_cast<int>(std::min<int64_t>(kMr, mc - ip));
          const float *rows[kMr];
          for (int r = 0; r < mr; ++r)
            rows[r] = x + (rowOffsets ? rowOffsets[i0 + ip + r] : (i0 + ip + r) * K);
          int64_t nextPanel = std::min<int64_t>(ip / kMr, nextPanels - 1);
          const float *next = packedB + (nextJ0 + nextPanel * kNr) * bK + nextK0 * kNr;
          int shape = panels == 4 ? 2 : panels == 2 && lastCols <= 8 ? 3 : panels - 1;
          variant->tapsKernels[mr - 1][shape](
              k0, k1, C, rows, tapOffsets, packedB + j0 * bK + k0 * kNr, bK * kNr, next,
              Cm + (i0 + ip) * ldc + j0, ldc, lastCols, accumulate || k0 > 0,
              last && epilogue ? &panelEpilogue : nullptr, ip);
        }
        j0 += panels * kNr;
      }
    }
  }
}

void sgemmPrepackedParallel(ThreadPool *pool, int64_t M, int64_t N, int64_t K,
                            const float *packedA, const float *packedB, float *C, int64_t ldc,
                            bool accumulate, const GemmEpilogue *epilogue) {
  AOperand a;
  a.packed = packedA;
  sgemmBlocksParallel(pool, M, N, K, a, packedB, C, ldc, accumulate, epilogue);
}

void sgemmPackedParallel(ThreadPool *pool, int64_t M, int64_t N, int64_t K, const float *A,
                         int64_t lda, bool transA, const float *packedB, float *C, int64_t ldc,
                         bool accumulate, const GemmEpilogue *epilogue) {
  AOperand a;
  a.A = A;
  a.lda = lda;
  a.transA = transA;
  sgemmBlocksParallel(pool, M, N, K, a, packedB, C, ldc, accumulate, epilogue);
}

//===----------------------------------------------------------------------===//
// Epilogue
//===----------------------------------------------------------------------===//

GemmEpilogue GemmEpilogue::at(int64_t i0, int64_t j0) const {
  GemmEpilogue part = *this;
  if (rowBias)
    part.rowBias += i0;
  if (colBias)
    part.colBias += j0;
  if (residual)
    part.residual += i0 * ldr + j0;
  return part;
}

namespace {

/// One row from `src` (c itself, or another row) into c: bias and residual
/// summed, then the activation; a loop the compiler vectorizes per
/// (residual, activation) pair.
template <bool kResidual, GemmEpilogue::Activation kActivation>
void epilogueRow(const float *src, float *c, const float *residual, int64_t cols, float bias,
                 const GemmEpilogue &e, int64_t from = 0) {
  const float *colBias = e.colBias; // a local: the loop tests it, never reloads it
  for (int64_t j = from; j < cols; ++j) {
    float v = src[j] + bias;
    if (colBias)
      v += colBias[j];
    if constexpr (kResidual)
      v += residual[j];
    if constexpr (kActivation == GemmEpilogue::Activation::Relu)
      v = v > 0.f ? v : 0.f;
    else if constexpr (kActivation == GemmEpilogue::Activation::Clip)
      v = std::min(std::max(v, e.lo), e.hi);
    else if constexpr (kActivation == GemmEpilogue::Activation::LeakyRelu)
      v = v >= 0.f ? v : v * e.alpha;
    else if constexpr (kActivation == GemmEpilogue::Activation::Gelu)
      // 1 + erf(y) = erfc(-y); 0 where geluAvx2 gives 0 (no denormals).
      v = v < -12.727922f ? 0.f : 0.5f * v * std::erfc(-v * 0.70710678118654752f);
    else if constexpr (kActivation == GemmEpilogue::Activation::GeluTanh)
      v = 0.5f * v * (1.f + std::tanh(0.79788456080286536f * (v + 0.044715f * v * v * v)));
    c[j] = v;
  }
}

#ifdef ORTC_GEMM_X86
/// epilogueRow 8 columns a vector, in the same order of operations (the
/// same values, NaNs included: activateAvx2); the last columns and GELU's
/// two forms (which the vector spells otherwise) as epilogueRow.
template <bool kResidual, GemmEpilogue::Activation kActivation>
ORTC_AVX2 void epilogueRowAvx2(const float *src, float *c, const float *residual, int64_t cols,
                               float bias, const GemmEpilogue &e) {
  int64_t j = 0;
  const __m256 b = _mm256_set1_ps(bias);
  for (; j + 8 <= cols; j += 8) {
    __m256 v = _mm256_add_ps(_mm256_loadu_ps(src + j), b);
    if (e.colBias)
      v = _mm256_add_ps(v, _mm256_loadu_ps(e.colBias + j));
    if constexpr (kResidual)
      v = _mm256_add_ps(v, _mm256_loadu_ps(residual + j));
    _mm256_storeu_ps(c + j, activateAvx2(kActivation, e, v));
  }
  epilogueRow<kResidual, kActivation>(src, c, residual, cols, bias, e, j);
}
#endif

template <bool kResidual, GemmEpilogue::Activation kActivation>
void epilogueRowBest(const float *src, float *c, const float *residual, int64_t cols, float bias,
                     const GemmEpilogue &e) {
#ifdef ORTC_GEMM_X86
  using A = GemmEpilogue::Activation;
  if constexpr (kActivation != A::Gelu && kActivation != A::GeluTanh)
    if (activeVariant()->isa != KernelIsa::Generic)
      return epilogueRowAvx2<kResidual, kActivation>(src, c, residual, cols, bias, e);
#endif
  epilogueRow<kResidual, kActivation>(src, c, residual, cols, bias, e);
}

template <bool kResidual>
void epilogueRows(const GemmEpilogue &e, const float *src, int64_t lds, float *c, int64_t ldc,
                  int64_t rows, int64_t cols) {
  using A = GemmEpilogue::Activation;
  for (int64_t i = 0; i < rows; ++i) {
    float bias = e.rowBias ? e.rowBias[i] : 0.f;
    float *row = c + i * ldc;
    const float *from = src + i * lds;
    const float *res = kResidual ? e.residual + i * e.ldr : nullptr;
    switch (e.activation) {
    case A::None:
      epilogueRowBest<kResidual, A::None>(from, row, res, cols, bias, e);
      break;
    case A::Relu:
      epilogueRowBest<kResidual, A::Relu>(from, row, res, cols, bias, e);
      break;
    case A::Clip:
      epilogueRowBest<kResidual, A::Clip>(from, row, res, cols, bias, e);
      break;
    case A::LeakyRelu:
      epilogueRowBest<kResidual, A::LeakyRelu>(from, row, res, cols, bias, e);
      break;
    case A::Gelu:
      epilogueRowBest<kResidual, A::Gelu>(from, row, res, cols, bias, e);
      break;
    case A::GeluTanh:
      epilogueRowBest<kResidual, A::GeluTanh>(from, row, res, cols, bias, e);
      break;
    }
  }
}

} // namespace

void GemmEpilogue::apply(float *c, int64_t ldc, int64_t rows, int64_t cols) const {
  applyFrom(c, ldc, c, ldc, rows, cols);
}

void GemmEpilogue::applyFrom(const float *src, int64_t lds, float *c, int64_t ldc, int64_t rows,
                             int64_t cols) const {
  if (residual)
    epilogueRows<true>(*this, src, lds, c, ldc, rows, cols);
  else
    epilogueRows<false>(*this, src, lds, c, ldc, rows, cols);
}

const char *sgemmVariant() { return activeVariant()->name; }

KernelIsa kernelIsa() { return activeVariant()->isa; }

bool setSgemmVariant(const char *variant) {
  if (!variant) {
    forcedVariant.store(nullptr);
    return true;
  }
  const Variant *choice = nullptr;
  if (std::strcmp(variant, kGeneric.name) == 0)
    choice = &kGeneric;
#ifdef ORTC_GEMM_X86
  else if (std::strcmp(variant, kAvx2.name) == 0 && cpuHasAvx2())
    choice = &kAvx2;
  else if (std::strcmp(variant, kAvx512.name) == 0 && cpuHasAvx512())
    choice = &kAvx512;
#endif
  if (!choice)
    return false;
  forcedVariant.store(choice);
  return true;
}

} // namespace ortc::cpu
