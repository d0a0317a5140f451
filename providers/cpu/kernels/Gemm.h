//===- Gemm.h - single-precision matrix multiply for the CPU EP -*- C++ -*-===//
//
// C[M,N] (+)= A[M,K] * B[K,N], row-major, fp32. B is packed into column panels
// of kGemmPanelWidth floats (the microkernel's register tile width); packing is
// done once at compile time for constant B (the blob stores the packed bytes)
// and per call for activations. The packed layout is part of the blob format:
// changing it means bumping kCpuKernelAbi.
//
// The microkernel is picked at run time from the CPU's features (AVX-512,
// AVX2+FMA, or portable C++); every variant reads the same packed layout.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_GEMM_H
#define ORTC_PROVIDERS_CPU_KERNELS_GEMM_H

#include <cstddef>
#include <cstdint>

namespace ortc::cpu {

class ThreadPool;

/// Version of the library kernels' packed-weight layouts and step attributes.
constexpr uint32_t kCpuKernelAbi = 1;

/// Width of one packed B panel, in floats.
constexpr int64_t kGemmPanelWidth = 16;
/// Rows of one packed A panel (the microkernel's register tile height).
constexpr int64_t kGemmPanelHeight = 6;

/// Floats needed to hold B[K,N] packed.
size_t packedGemmBSize(int64_t K, int64_t N);

/// Packs B into `packed` (packedGemmBSize(K, N) floats). B is [K,N] with row
/// stride ldb, or [N,K] with row stride ldb when transB. `alpha` scales every
/// element (Gemm's alpha folds in here).
void packGemmB(const float *B, int64_t ldb, bool transB, int64_t K, int64_t N, float alpha,
               float *packed);

/// Floats needed to hold A[M,K] packed (packGemmA).
size_t packedGemmASize(int64_t M, int64_t K);

/// Packs row-major A[M,K] (row stride lda) into row panels of
/// kGemmPanelHeight rows, each K * kGemmPanelHeight floats (k-major, rows
/// past M zero): done once at compile time for constant A (Conv's weights),
/// where sgemmPacked packs A's rows per block and call.
void packGemmA(const float *A, int64_t lda, int64_t M, int64_t K, float *packed);

/// Whether a group-1 Conv with M output channels, K = C * kernel size
/// products per output and P output positions per image runs as Y^T = col^T
/// * W^T (positions as the GEMM's 6-row tiles, output channels as its
/// 16-wide panels; the compiler packs constant W as B panels of W^T, packing
/// "gemm_bt") rather than Y = W * col (positions as panels). Few positions
/// waste most of a panel (7x7 = 49: 4 panels for 3.06) where rows waste
/// little, but the product [P, M] then goes through memory once more, to
/// be transposed into Y: about 64 flops' worth per element (AMD EPYC, AVX2:
/// ResNet-50's 256->1024 1x1 at 14x14, K = 256, ran 5% faster as panels,
/// and its 1024->256, K = 1024, 7% faster transposed). The cheaper by that
/// count wins, up to 16x16 positions.
inline bool convPrefersTransposedGemm(int64_t M, int64_t K, int64_t P) {
  if (P <= 0 || P > 256 || M < kGemmPanelWidth || K <= 0)
    return false;
  auto roundUp = [](int64_t n, int64_t to) { return (n + to - 1) / to * to; };
  constexpr int64_t kTransposeFlops = 64;
  int64_t panels = 2 * K * roundUp(M, kGemmPanelHeight) * roundUp(P, kGemmPanelWidth);
  int64_t transposed =
      2 * K * roundUp(P, kGemmPanelHeight) * roundUp(M, kGemmPanelWidth) + kTransposeFlops * M * P;
  return transposed < panels;
}

/// Whether a group-1 2-D Conv runs directly over its zero-padded input
/// planes (sgemmOffsetsB, W packed by packGemmA: packing "gemm_a"): dilation
/// 1 and a kernel wider than 1x1, where im2col would copy each input value
/// up to kh*kw times (a 1x1 packs X once; a strided one measured faster that
/// way). A stride s splits the padded input into phase planes, so that every
/// tap still reads output positions as a contiguous run. The product covers
/// whole phase-plane rows (outW + (kw - 1) / sw columns, the last ones
/// dropped) rounded up to whole panels; it runs directly while that wastes
/// at most a quarter of it, and while each output takes at least 64
/// products (C * kh * kw): below, copying the planes and the product's rows
/// costs more than im2col (MobileNetV2's 3-channel 3x3 stem: 8% slower).
/// convRunsNarrow is asked first.
/// The compiler packs W for it and the kernel takes it: one rule for both.
inline bool convRunsDirect(int64_t channels, int64_t kh, int64_t kw, int64_t strideH,
                           int64_t strideW, int64_t dilationH, int64_t dilationW, int64_t outH,
                           int64_t outW) {
  if (dilationH != 1 || dilationW != 1 || strideH < 1 || strideW < 1 || outH < 1 || outW < 1 ||
      kh * kw == 1 || channels * kh * kw < 64)
    return false;
  int64_t width = outW + (kw - 1) / strideW;
  int64_t panels = (outH * width + kGemmPanelWidth - 1) / kGemmPanelWidth * kGemmPanelWidth;
  return 4 * outH * outW >= 3 * panels;
}

/// Whether a pointwise conv (1x1, stride 1, unpadded, group 1) over W packed
/// by packGemmA reads X where it lies (sgemmRowsB: row k of the product's B
/// is input plane k) rather than packing X tile by tile: at most 96 output
/// channels, where the packed copy is read by few row panels of W and costs
/// more than the multiplies save, and at most 256 input channels, so that a
/// column panel's B rows (64 bytes each) stay within half an L1D while the
/// row panels read them. AMD EPYC, AVX2, 1 thread, packed -> in place:
/// MobileNetV2's 32->16 at 112x112 0.240 -> 0.198 ms, 96->24 at 56x56 0.220
/// -> 0.182, 144->24 0.304 -> 0.278, 16->96 0.707 -> 0.592, ResNet-50's
/// 256->64 at 56x56 1.36 -> 1.28. It loses with more output channels (64->384
/// at 14x14 0.120 -> 0.148, 256->1024 1.17 -> 1.30) and, in the model, with
/// more input channels (MobileNetV2's 576->96 and 384->96 at 14x14, batch 8:
/// 2.85 -> 3.36 and 1.73 -> 1.96 ms).
inline bool pointwiseConvReadsInPlace(int64_t outChannels, int64_t inChannels) {
  return outChannels <= 96 && inChannels <= 256;
}

/// Whether a group-1 2-D Conv runs narrow (convNarrow, ConvNarrow.cpp: the
/// input rows split into column phases and read in place, each weight
/// broadcast against 8 outputs of a row, 4 output channels at a time; W as
/// it is, packed_w 0): dilation 1, a kernel wider than 1x1, rows of at
/// least 8 outputs, and few products per output (C * kh * kw <= 96) or few
/// input channels (<= 4: an image's stem), where im2col's copy or the
/// direct product's panel rows cost more than the multiplies. AMD EPYC,
/// AVX2, 1 thread, against the GEMM paths: MobileNetV2's 3->32 3x3 stride-2
/// stem 0.52 -> 0.33 ms, ResNet-50's 3->64 7x7 stride-2 stem 3.07 -> 2.7 ms,
/// 8->32 3x3 at 112x112 -18%, 3->24 5x5 -9%; past the bound it loses
/// (16->32 3x3 at 56x56 +15%, 32->64 3x3 stride 2 +8%). The compiler leaves
/// W unpacked for it and the kernel takes it: one rule for both.
inline bool convRunsNarrow(int64_t channels, int64_t kh, int64_t kw, int64_t strideH,
                           int64_t strideW, int64_t dilationH, int64_t dilationW, int64_t outW) {
  return dilationH == 1 && dilationW == 1 && strideH >= 1 && strideW >= 1 && kh * kw > 1 &&
         outW >= 8 && channels >= 1 && (channels * kh * kw <= 96 || channels <= 4);
}

/// Whether a group-1 2-D Conv runs as Winograd F(T x T, 3x3) (convWinograd:
/// per output and input channel 4 (T = 2) or 2.25 (T = 4) products where a
/// direct conv takes 9; W transformed and packed by packConvWeightsWinograd,
/// packings "winograd_f2x3" and "winograd_f4x3"): a 3x3 kernel at stride 1
/// and dilation 1, with enough input and output channels that the GEMMs
/// outweigh the transforms of each input channel's tiles and each output
/// channel's products. The compiler packs W for it; the kernel runs any 3x3
/// stride-1 conv so packed.
inline bool convRunsWinograd(int64_t channels, int64_t outChannels, int64_t kh, int64_t kw,
                             int64_t strideH, int64_t strideW, int64_t dilationH, int64_t dilationW,
                             int64_t outH, int64_t outW) {
  return kh == 3 && kw == 3 && strideH == 1 && strideW == 1 && dilationH == 1 && dilationW == 1 &&
         channels >= 32 && outChannels >= 32 && outH >= 2 && outW >= 2;
}

/// The Winograd output tile T (2 or 4) for an outH x outW output: the one
/// with fewer GEMM products per image, (T + 2)^2 GEMMs over the tiles
/// rounded up to whole panels. 7x7: 16 tiles of 2x2 (16 x 16 columns)
/// beat 4 of 4x4 (36 x 16); 14x14 and up take 4x4 (36 x 16 against
/// 16 x 64 columns).
inline int64_t winogradOutputTile(int64_t outH, int64_t outW) {
  auto columns = [&](int64_t t) {
    int64_t tiles = ((outH + t - 1) / t) * ((outW + t - 1) / t);
    return (t + 2) * (t + 2) * ((tiles + kGemmPanelWidth - 1) / kGemmPanelWidth);
  };
  return columns(4) < columns(2) ? 4 : 2;
}

/// Floats of a [M, C, 3, 3] W packed by packConvWeightsWinograd for output
/// tile `tile`.
size_t packedWinogradSize(int64_t M, int64_t C, int64_t tile);

/// Transforms Conv's 3x3 W [M, C, 3, 3] into Winograd F(tile x tile,
/// 3x3)'s (tile + 2)^2 matrices U_xi [M, C] (U = G w G^T per output and
/// input channel) and packs each by packGemmA, U_xi at xi *
/// packedGemmASize(M, C) (packing "winograd_f2x3", packed_w = 4, for tile
/// 2; "winograd_f4x3", packed_w = 5, for tile 4).
void packConvWeightsWinograd(const float *w, int64_t M, int64_t C, int64_t tile, float *packed);

/// Whether a channels-last group-1 2-D Conv runs as Winograd
/// (convWinogradChannelsLast): as convRunsWinograd, 3x3 at stride 1 with
/// at least 32 input and output channels, onto an output of at least 16
/// tiles of 2x2 (7x7 and up). Below, the transformed weights (16/9 of W's
/// bytes at least) are read for too few tiles. AMD EPYC, AVX-512, 1
/// thread, ResNet-50's 512->512 at 7x7: 2.22 -> 1.49 ms at 2x2 tiles
/// (batch 8: 16.9 -> 10.7 ms), where 4x4 tiles (4 of them, 4x W's bytes)
/// gave 2.2 -> 2.0. The compiler packs W for it (packed_w 6 or 7); the
/// kernel runs any 3x3 stride-1 conv so packed.
inline bool convRunsWinogradChannelsLast(int64_t channels, int64_t outChannels, int64_t kh,
                                         int64_t kw, int64_t strideH, int64_t strideW,
                                         int64_t dilationH, int64_t dilationW, int64_t outH,
                                         int64_t outW) {
  return convRunsWinograd(channels, outChannels, kh, kw, strideH, strideW, dilationH, dilationW,
                          outH, outW) &&
         ((outH + 1) / 2) * ((outW + 1) / 2) >= 16;
}

/// The Winograd output tile T (2 or 4) of a channels-last conv onto an
/// outH x outW output (convWinogradChannelsLast: each tile a GEMM row): 4x4
/// where an image has at least 48 of them (28x28 and up), else 2x2, whose
/// transformed weights are 16/9 of W's bytes rather than 4x, read for few
/// tiles. AMD EPYC, AVX-512, 1 thread: ResNet-50's 256->256 at 14x14 runs
/// 1.17 ms at 2x2 against 1.07 ms at 4x4 (2.12 ms as a GEMM), and its blob
/// is 118 MB rather than 144 MB (97.5 MB with no Winograd; both with its 7x7
/// layers as GEMMs).
inline int64_t winogradOutputTileChannelsLast(int64_t outH, int64_t outW) {
  return ((outH + 3) / 4) * ((outW + 3) / 4) >= 48 ? 4 : 2;
}

/// Floats of a [M, C, 3, 3] W packed by packConvWeightsWinogradChannelsLast
/// for output tile `tile`.
size_t packedWinogradChannelsLastSize(int64_t M, int64_t C, int64_t tile);

/// Transforms Conv's 3x3 W [M, C, 3, 3] as packConvWeightsWinograd does and
/// packs each U_xi^T [C, M] as B panels (packGemmB), U_xi^T at xi *
/// packedGemmBSize(C, M): the operand of a channels-last conv's Winograd
/// GEMMs (packing "winograd_f2x3_bt", packed_w = 6, for tile 2;
/// "winograd_f4x3_bt", packed_w = 7, for tile 4).
void packConvWeightsWinogradChannelsLast(const float *w, int64_t M, int64_t C, int64_t tile,
                                         float *packed);

/// Packs Conv's W [M, C, KH, KW] (kSize = KH * KW) as B panels of W^T
/// [KH * KW * C, M] with k in (kh, kw, c) order (packing "gemm_bt_hwc",
/// packed_w = 3): the GEMM operand of a channels-last conv, whose im2col
/// rows are runs of channels tap by tap. packedGemmBSize(C * kSize, M) floats.
void packConvWeightsChannelsLast(const float *w, int64_t M, int64_t C, int64_t kSize,
                                 float *packed);

/// What the GEMM does to C once a tile of it is final, in registers before
/// the microkernel stores it: c = activation(c + rowBias[i] + colBias[j] +
/// residual[i][j]) (Conv's bias or MatMul's, a residual sum, an activation:
/// ortc.fused_conv, ortc.matmul_bias).
struct GemmEpilogue {
  /// Gelu: 0.5 x (1 + erf(x / sqrt 2)); GeluTanh: its tanh form (ortc.gelu).
  enum class Activation { None, Relu, Clip, LeakyRelu, Gelu, GeluTanh };
  const float *rowBias = nullptr;  // one per row of C, or null
  const float *colBias = nullptr;  // one per column of C (MatMul's bias), or null
  const float *residual = nullptr; // as C, row stride ldr, or null
  int64_t ldr = 0;
  Activation activation = Activation::None;
  float lo = 0, hi = 0; // Clip's bounds
  float alpha = 0;      // LeakyRelu's slope

  bool any() const { return rowBias || colBias || residual || activation != Activation::None; }
  /// The same epilogue for the block of C that starts at row i0, column j0.
  GemmEpilogue at(int64_t i0, int64_t j0) const;
  /// Applies it to `rows` x `cols` of C at `c` (row stride ldc), the block at
  /// (0, 0) of this epilogue.
  void apply(float *c, int64_t ldc, int64_t rows, int64_t cols) const;
  /// The same with C's values read from `src` (row stride lds): the product
  /// copied into C and finished in one pass.
  void applyFrom(const float *src, int64_t lds, float *c, int64_t ldc, int64_t rows,
                 int64_t cols) const;
};

/// C = A * packedB, or C += A * packedB when accumulate. A is [M,K] with row
/// stride lda, or [K,M] with row stride lda when transA; C has row stride ldc.
/// `packedK`: the K that packedB was packed with, when more than K (the
/// product then reads the first K rows of B: attention's keys up to the
/// last one its mask keeps).
void sgemmPacked(int64_t M, int64_t N, int64_t K, const float *A, int64_t lda, bool transA,
                 const float *packedB, float *C, int64_t ldc, bool accumulate, int64_t packedK = 0);

/// sgemmPacked shared out over `pool` (null: on the caller): C's rows in
/// blocks, or its column panels when M is too small to share. Products too
/// small to pay for waking threads run on the caller.
/// With an `epilogue`, each tile of C gets it in its last K block.
void sgemmPackedParallel(ThreadPool *pool, int64_t M, int64_t N, int64_t K, const float *A,
                         int64_t lda, bool transA, const float *packedB, float *C, int64_t ldc,
                         bool accumulate, const GemmEpilogue *epilogue = nullptr);

/// sgemmPackedParallel with A packed by packGemmA.
void sgemmPrepackedParallel(ThreadPool *pool, int64_t M, int64_t N, int64_t K,
                            const float *packedA, const float *packedB, float *C, int64_t ldc,
                            bool accumulate, const GemmEpilogue *epilogue = nullptr);

/// Most columns of C per tile of sgemmOffsetsB.
constexpr int64_t kOffsetsTile = 64;

/// C = A * B for constant A packed by packGemmA (M rows, K) and a B that is
/// read in place: B[k][q] = b[offsets[k] + q] (a conv's zero-padded input
/// planes, each tap an offset into them: a direct convolution with no
/// im2col or packing). Q must be a multiple of kGemmPanelWidth, every
/// b[offsets[k] + q] (q < Q) readable, and C must have room for M rounded
/// up to kGemmPanelHeight rows (those past M come out 0). `bBytesPerK`: the
/// bytes of b that a tile of kOffsetsTile columns reads per k, on average
/// (neighbouring taps read the same lines): the K blocks are sized by it, so
/// that a block's B rows stay in L1 across the row panels. Single-threaded.
void sgemmOffsetsB(int64_t M, int64_t Q, int64_t K, const float *packedA, const float *b,
                   const int32_t *offsets, float *C, int64_t ldc, int64_t bBytesPerK);

/// C = A * B, then the epilogue, for constant A packed by packGemmA (M rows,
/// K) and a B that is read where it lies: B[k][j] = b[k * ldb + j] (a
/// pointwise conv's input planes), with no packed copy; nothing past column
/// N of a row of B is read. Single-threaded; does nothing unless
/// sgemmRowsBAvailable().
void sgemmRowsB(int64_t M, int64_t N, int64_t K, const float *packedA, const float *b, int64_t ldb,
                float *C, int64_t ldc, const GemmEpilogue *epilogue);
/// Whether the variant in use has sgemmRowsB's kernels (AVX2 only).
bool sgemmRowsBAvailable();

/// C[M, N] = A * packedB (or C += A * packedB when accumulate), then the
/// epilogue, where row i of A is, tap by tap, the C floats at x +
/// rowOffsets[i] + tapOffsets[t] (K = taps * C, packedB packed from B
/// [K, N]): a channels-last conv over its zero-padded input, each output
/// position a row, with no im2col copy. Null rowOffsets: the rows lie back
/// to back (row i at x + i * K); null tapOffsets: so do the taps (tap t at
/// t * C). Single-threaded; does nothing unless sgemmRowsOfTapsAvailable().
/// `packedK` as sgemmPacked's.
void sgemmRowsOfTaps(int64_t M, int64_t N, int64_t C, int64_t taps, const float *x,
                     const int64_t *rowOffsets, const int64_t *tapOffsets, const float *packedB,
                     float *Cm, int64_t ldc, bool accumulate, const GemmEpilogue *epilogue,
                     int64_t packedK = 0);
/// Whether the variant in use has sgemmRowsOfTaps's kernels (AVX-512 only:
/// an AVX2 6x16 tile broadcasting from six rows measured 1.7x slower than
/// im2col rows through sgemmPacked, which the others take).
bool sgemmRowsOfTapsAvailable();

/// The microkernel variant this CPU runs: "avx512", "avx2", or "generic".
const char *sgemmVariant();

/// The same as a value, for the kernels whose vector paths follow the
/// GEMM's variant (im2col, depthwise, Softmax, ...): no string compares.
enum class KernelIsa { Generic, Avx2, Avx512 };
KernelIsa kernelIsa();

/// Makes later library kernel calls (in every thread: the GEMM, and the conv
/// paths that follow its variant) use `variant` ("avx512", "avx2" or
/// "generic"), or the CPU's best again when null: the tests' switch, and the
/// CPU EP's kernel_isa option. Returns false and changes nothing when this
/// build or CPU cannot run `variant`.
bool setSgemmVariant(const char *variant);

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_KERNELS_GEMM_H
