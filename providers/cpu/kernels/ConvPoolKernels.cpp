//===- ConvPoolKernels.cpp - Conv and the pools, NCHW fp32 ----------------===//
//
// Every spatial rank (1-3) is handled as 3-D: missing leading spatial dims are
// size 1 with a 1x kernel, stride 1, dilation 1 and no padding, so one loop
// nest serves all ranks.
//
// Conv lowers to sgemmPacked per image and group: W's rows are A, and the
// im2col matrix is written straight into packGemmB's layout (16-wide column
// panels, every k of a panel contiguous), a tile of output positions at a time
// so the packed columns stay in cache. A 1x1, stride-1, unpadded conv packs X
// itself, or with few channels reads it in place (sgemmRowsB); depthwise convs
// use a direct loop (a 1-row GEMM would waste panels):
// with AVX2, each input plane is copied once into a zero-padded plane and each
// 8-wide chunk of an output row sums every tap in a register and takes the
// epilogue before its one store; planes with narrow rows, and strided ones,
// run on blocks of 8 channels instead (DepthwiseBlocks, depthwiseRunsBlocked).
// Constant weights of a group-1 conv come packed from the compiler (A's
// panels, packGemmA), so no run packs them again. A channels-first
// ortc.depthwise_block (DepthwiseBlock without channels_last) runs its
// expansion and depthwise conv through the same paths, image by image.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/ConvCommon.h"
#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/SpatialKernels.h"
#include "providers/cpu/kernels/ThreadPool.h"
#include "runtime/ep/WindowGeometry.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <limits>

#if defined(__x86_64__) || defined(__i386__)
#include "providers/cpu/kernels/EpilogueSimd.h"
#include "providers/cpu/kernels/SimdLanes.h"
#endif

namespace ortc::cpu::kernels {

static std::string listToString(const std::vector<int64_t> &v) { return shapeToString(v); }

Status computeGeometry(const char *op, const StepAttributes &attrs,
                       const std::vector<int64_t> &inSpatial, const std::vector<int64_t> &kernel,
                       bool allowDilations, bool allowCeilMode, Geometry &g) {
  size_t r = inSpatial.size();
  if (r < 1 || r > kMaxSpatial)
    return invalid(op, "supports 1 to 3 spatial dims, got " + std::to_string(r));
  if (kernel.size() != r)
    return invalid(op, "kernel_shape " + listToString(kernel) + " does not match " +
                           std::to_string(r) + " spatial dims");
  std::vector<int64_t> strides = attrs.getInts("strides", std::vector<int64_t>(r, 1));
  std::vector<int64_t> dilations = attrs.getInts("dilations", std::vector<int64_t>(r, 1));
  std::vector<int64_t> pads = attrs.getInts("pads", std::vector<int64_t>(2 * r, 0));
  std::string autoPadName = attrs.getString("auto_pad", "NOTSET");
  bool ceilMode = attrs.getInt("ceil_mode", 0) != 0;
  if (strides.size() != r || dilations.size() != r || pads.size() != 2 * r)
    return invalid(op, "strides " + listToString(strides) + ", dilations " +
                           listToString(dilations) + " or pads " + listToString(pads) +
                           " do not match " + std::to_string(r) + " spatial dims");
  std::optional<AutoPad> autoPad = parseAutoPad(autoPadName);
  if (!autoPad)
    return invalid(op, "unsupported auto_pad '" + autoPadName + "'");
  if (ceilMode && !allowCeilMode)
    return invalid(op, "ceil_mode is not supported");
  // ONNX's and onnxruntime's output sizes disagree for ceil_mode with auto_pad.
  if (ceilMode && *autoPad != AutoPad::NotSet)
    return invalid(op, "ceil_mode = 1 needs auto_pad NOTSET, got " + autoPadName);

  g.rank = int(r);
  size_t off = kMaxSpatial - r;
  for (size_t i = 0; i < r; ++i) {
    int64_t in = inSpatial[i], k = kernel[i], s = strides[i], d = dilations[i];
    if (k < 1 || s < 1 || d < 1)
      return invalid(op, "kernel_shape, strides and dilations must be >= 1");
    if (d != 1 && !allowDilations)
      return invalid(op, "dilations other than 1 are not supported");
    int64_t pb = pads[i], pe = pads[i + r];
    if (pb < 0 || pe < 0)
      return invalid(op, "negative pads " + listToString(pads));
    std::optional<WindowAxis> axis = windowAxis(in, k, s, d, pb, pe, *autoPad, ceilMode);
    if (!axis) {
      bool valid = *autoPad == AutoPad::Valid;
      return invalid(op, "window of " + std::to_string((k - 1) * d + 1) +
                             " is larger than the padded input of " +
                             std::to_string(valid ? in : in + pb + pe));
    }
    g.in[off + i] = in;
    g.out[off + i] = axis->out;
    g.k[off + i] = k;
    g.s[off + i] = s;
    g.d[off + i] = d;
    g.padBegin[off + i] = axis->padBegin;
    g.padEnd[off + i] = axis->padEnd;
  }
  return Status::ok();
}

Status checkSingleOutput(const char *op, const KernelCall &call) {
  if (call.numOutputs < 1)
    return invalid(op, "missing output");
  for (size_t i = 1; i < call.numOutputs; ++i)
    if (call.outputs[i].data)
      return invalid(op, "only the first output is supported");
  return checkFloat(op, &call.outputs[0], "output");
}

namespace {

/// After the inputs' types: one float32 output, and X [N,C,D1..Dn] with a
/// spatial rank n the kernels handle.
Status checkSpatialIO(const char *op, const KernelCall &call, const TensorView &X) {
  if (Status s = checkSingleOutput(op, call); !s.isOk())
    return s;
  size_t rank = X.shape.size();
  if (rank < 3 || rank > 2 + kMaxSpatial)
    return invalid(op, "X must be [N,C,D1..Dn] with 1 <= n <= 3, got " + shapeToString(X.shape));
  return Status::ok();
}

/// [N, C, out...] must match the output view.
Status checkOutput(const char *op, const TensorView &Y, int64_t N, int64_t C, const Geometry &g) {
  std::vector<int64_t> expect = {N, C};
  for (int i = kMaxSpatial - g.rank; i < kMaxSpatial; ++i)
    expect.push_back(g.out[i]);
  return checkOutputShape(op, Y, expect);
}

inline bool inside(int64_t i, int64_t n) { return uint64_t(i) < uint64_t(n); }

/// Of `len` output columns reading input columns first + q * s, those inside
/// [0, n) are [lo, hi); empty when lo >= hi. lo is left unclamped: clamping it
/// here costs the direct pool loops ~10%, so im2col clamps it itself.
inline void clipColumns(int64_t first, int64_t s, int64_t n, int64_t len, int64_t &lo,
                        int64_t &hi) {
  lo = first >= 0 ? 0 : (-first + s - 1) / s;
  hi = std::min(n - 1 - first < 0 ? 0 : (n - 1 - first) / s + 1, len);
}

/// The direct loops (depthwise conv, pools) over one output row (od, oh):
/// calls tap(in, t, base, lo, hi) for every kernel tap t (its index in the
/// kernel) whose input row `in` of plane x is inside; output columns [lo, hi)
/// read in[ow * s + base]. A template, so each caller's tap body is inlined
/// into the loop nest.
template <typename TapFn>
inline void forEachTap(const float *x, const Geometry &g, int64_t od, int64_t oh, TapFn &&tap) {
  for (int64_t kd = 0; kd < g.k[0]; ++kd) {
    int64_t id = od * g.s[0] - g.padBegin[0] + kd * g.d[0];
    if (!inside(id, g.in[0]))
      continue;
    for (int64_t kh = 0; kh < g.k[1]; ++kh) {
      int64_t ih = oh * g.s[1] - g.padBegin[1] + kh * g.d[1];
      if (!inside(ih, g.in[1]))
        continue;
      const float *in = x + (id * g.in[1] + ih) * g.in[2];
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        int64_t base = kw * g.d[2] - g.padBegin[2], lo, hi;
        clipColumns(base, g.s[2], g.in[2], g.out[2], lo, hi);
        tap(in, (kd * g.k[1] + kh) * g.k[2] + kw, base, lo, hi);
      }
    }
  }
}

//===----------------------------------------------------------------------===//
// Conv
//===----------------------------------------------------------------------===//

/// A packed im2col panel's row for one kernel tap is the same for every
/// input channel but for the channel's plane: per tap and run of the panel's
/// columns along one output row, the lanes [begin, end) of the 16-wide row
/// that are inside the input and where they read (lane L reads the plane at
/// offset + L * stride; lanes outside every run are zero). Computed once per
/// panel, so the channels' loop only copies.
struct TapRun {
  int64_t offset;
  int begin, end;
};

/// The panel whose first column is output position `pos`, `nr` columns:
/// its TapRuns, kernelSize() groups of `runs` (returned) entries.
int panelTapRuns(const Geometry &g, int64_t pos, int64_t nr, std::vector<TapRun> &out) {
  struct ColumnRun {
    int64_t j, len, od, oh, ow;
  };
  ColumnRun runs[kGemmPanelWidth];
  int count = 0;
  for (int64_t j = 0; j < nr;) {
    int64_t ow = pos % g.out[2], t = pos / g.out[2];
    int64_t len = std::min(nr - j, g.out[2] - ow);
    runs[count++] = {j, len, t / g.out[1], t % g.out[1], ow};
    j += len;
    pos += len;
  }
  out.clear();
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw)
        for (int r = 0; r < count; ++r) {
          const ColumnRun &run = runs[r];
          int64_t id = run.od * g.s[0] - g.padBegin[0] + kd * g.d[0];
          int64_t ih = run.oh * g.s[1] - g.padBegin[1] + kh * g.d[1];
          if (!inside(id, g.in[0]) || !inside(ih, g.in[1])) {
            out.push_back({0, 0, 0});
            continue;
          }
          // Run positions q in [lo, hi) read input column first + q * s.
          int64_t first = run.ow * g.s[2] + kw * g.d[2] - g.padBegin[2], lo, hi;
          clipColumns(first, g.s[2], g.in[2], run.len, lo, hi);
          lo = std::min(lo, run.len);
          hi = std::max(lo, hi);
          int64_t rowStart = (id * g.in[1] + ih) * g.in[2];
          out.push_back({rowStart + first - run.j * g.s[2], int(run.j + lo), int(run.j + hi)});
        }
  return count;
}

/// Writes columns [j0, j0 + cols) of the im2col matrix of one image and group
/// (x points at the group's first channel) in packGemmB's layout: 16-wide
/// panels of K rows, columns past `cols` zero. `copyRow` writes one panel row
/// (16 floats at d) from one channel plane and one tap's runs.
template <typename CopyRow>
inline void im2colPackedWith(const float *x, int64_t Cg, const Geometry &g, int64_t j0,
                             int64_t cols, float *packed, CopyRow &&copyRow) {
  constexpr int64_t W = kGemmPanelWidth;
  int64_t K = Cg * g.kernelSize(), inPlane = g.inSize(), taps = g.kernelSize();
  thread_local std::vector<TapRun> tapRuns;
  for (int64_t p0 = 0; p0 < cols; p0 += W) {
    int runs = panelTapRuns(g, j0 + p0, std::min(W, cols - p0), tapRuns);
    float *dst = packed + p0 * K;
    for (int64_t c = 0; c < Cg; ++c)
      for (int64_t t = 0; t < taps; ++t, dst += W)
        copyRow(dst, x + c * inPlane, tapRuns.data() + t * runs, runs);
  }
}

void im2colPackedGeneric(const float *x, int64_t Cg, const Geometry &g, int64_t j0, int64_t cols,
                         float *packed) {
  const int64_t s = g.s[2];
  im2colPackedWith(x, Cg, g, j0, cols, packed,
                   [s](float *d, const float *plane, const TapRun *runs, int count) {
                     std::fill(d, d + kGemmPanelWidth, 0.f);
                     for (int r = 0; r < count; ++r)
                       for (int L = runs[r].begin; L < runs[r].end; ++L)
                         d[L] = plane[runs[r].offset + L * s];
                   });
}

#if defined(__x86_64__) || defined(__i386__)
/// One panel row in AVX2: per run, two masked loads (gathers for strides
/// past 1, but for whole runs at stride 2) whose masked-off lanes are zero,
/// OR-ed together, then two whole stores (a masked store is microcoded on
/// AMD).
struct CopyRowAvx2 {
  int64_t s;
  __attribute__((target("avx2,fma"))) void operator()(float *d, const float *plane,
                                                      const TapRun *runs, int count) const {
    const __m256i lane0 = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    const __m256i lane8 = _mm256_add_epi32(lane0, _mm256_set1_epi32(8));
    const __m256i index0 = _mm256_mullo_epi32(lane0, _mm256_set1_epi32(int(s)));
    const __m256i index8 = _mm256_mullo_epi32(lane8, _mm256_set1_epi32(int(s)));
    __m256 lo = _mm256_setzero_ps(), hi = _mm256_setzero_ps();
    for (int r = 0; r < count; ++r) {
      if (runs[r].begin == runs[r].end)
        continue;
      __m256i b = _mm256_set1_epi32(runs[r].begin), e = _mm256_set1_epi32(runs[r].end);
      // begin <= lane < end
      __m256i m0 = _mm256_andnot_si256(_mm256_cmpgt_epi32(b, lane0), _mm256_cmpgt_epi32(e, lane0));
      __m256i m8 = _mm256_andnot_si256(_mm256_cmpgt_epi32(b, lane8), _mm256_cmpgt_epi32(e, lane8));
      const float *at = plane + runs[r].offset;
      if (s == 1) {
        lo = _mm256_or_ps(lo, _mm256_maskload_ps(at, m0));
        hi = _mm256_or_ps(hi, _mm256_maskload_ps(at + 8, m8));
      } else if (s == 2 && runs[r].begin == 0 && runs[r].end == 16) {
        // A whole run at stride 2 is every other one of 31 contiguous
        // floats: four loads and two shuffles, where the two gathers cost
        // a third of a strided pointwise conv's time on an AMD EPYC. The
        // last load leaves out at[31], which may lie past X.
        lo = _mm256_or_ps(lo, evenLanes(_mm256_loadu_ps(at), _mm256_loadu_ps(at + 8)));
        hi = _mm256_or_ps(
            hi, evenLanes(_mm256_loadu_ps(at + 16), _mm256_maskload_ps(at + 24, firstLanes(7))));
      } else {
        lo = _mm256_or_ps(lo, _mm256_mask_i32gather_ps(_mm256_setzero_ps(), at, index0,
                                                       _mm256_castsi256_ps(m0), 4));
        hi = _mm256_or_ps(hi, _mm256_mask_i32gather_ps(_mm256_setzero_ps(), at, index8,
                                                       _mm256_castsi256_ps(m8), 4));
      }
    }
    _mm256_storeu_ps(d, lo);
    _mm256_storeu_ps(d + 8, hi);
  }
};

/// One panel row in AVX-512: per run one masked load (a gather for strides
/// past 1), one whole store.
struct CopyRowAvx512 {
  int64_t s;
  __attribute__((target("avx512f"))) void operator()(float *d, const float *plane,
                                                     const TapRun *runs, int count) const {
    const __m512i index =
        _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                           _mm512_set1_epi32(int(s)));
    __m512 row = _mm512_setzero_ps();
    for (int r = 0; r < count; ++r) {
      auto in = static_cast<__mmask16>(((1u << runs[r].end) - 1) & ~((1u << runs[r].begin) - 1));
      const float *at = plane + runs[r].offset;
      row = s == 1 ? _mm512_mask_loadu_ps(row, in, at)
                   : _mm512_mask_i32gather_ps(row, in, index, at, 4);
    }
    _mm512_storeu_ps(d, row);
  }
};
#endif

/// The im2col panels by the GEMM's variant (the one the CPU EP's vector code
/// follows, setSgemmVariant included).
void im2colPacked(const float *x, int64_t Cg, const Geometry &g, int64_t j0, int64_t cols,
                  float *packed) {
  static_assert(kGemmPanelWidth == 16, "a panel row is one zmm or two ymm");
#if defined(__x86_64__) || defined(__i386__)
  KernelIsa isa = kernelIsa();
  if (isa == KernelIsa::Avx512)
    return im2colPackedWith(x, Cg, g, j0, cols, packed, CopyRowAvx512{g.s[2]});
  if (isa == KernelIsa::Avx2)
    return im2colPackedWith(x, Cg, g, j0, cols, packed, CopyRowAvx2{g.s[2]});
#endif
  im2colPackedGeneric(x, Cg, g, j0, cols, packed);
}

/// One output channel of a depthwise conv: y (one plane) from x (one plane),
/// tap by tap over each output row.
void depthwisePlaneGeneric(const float *x, const float *w, float bias, const Geometry &g,
                           float *y) {
  int64_t s = g.s[2];
  for (int64_t od = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      float *row = y + (od * g.out[1] + oh) * g.out[2];
      std::fill(row, row + g.out[2], bias);
      forEachTap(x, g, od, oh,
                 [&](const float *in, int64_t t, int64_t base, int64_t lo, int64_t hi) {
                   float wv = w[t];
                   if (s == 1) {
                     const float *src = in + base;
                     for (int64_t ow = lo; ow < hi; ++ow)
                       row[ow] += wv * src[ow];
                   } else {
                     for (int64_t ow = lo; ow < hi; ++ow)
                       row[ow] += wv * in[ow * s + base];
                   }
                 });
    }
}

/// A depthwise conv's planes: each output channel from its input plane, the
/// bias as the starting value and the rest of `epilogue` (residual,
/// activation) applied to each plane while it is in cache.
struct DepthwisePlanes {
  const float *x, *w, *bias, *residual;
  const Geometry &g;
  const GemmEpilogue &epilogue;
  int64_t C, M, inPlane, outPlane, kSize;

  const float *input(int64_t plane) const {
    int64_t n = plane / M, oc = plane % M;
    return x + (n * C + oc / (M / C)) * inPlane;
  }
  float biasOf(int64_t plane) const { return bias ? bias[plane % M] : 0.f; }
  const float *weights(int64_t plane) const { return w + plane % M * kSize; }
  const float *residualOf(int64_t plane) const {
    return residual ? residual + plane * outPlane : nullptr;
  }
};

/// The portable plane: taps summed row by row, then the epilogue.
void depthwisePlaneGeneric(const DepthwisePlanes &p, int64_t plane, float *y) {
  // A residual in y's own memory is read after y is written: keep a copy.
  const float *residual = p.residualOf(plane);
  thread_local std::vector<float> residualCopy;
  if (residual && residual < y + p.outPlane && y < residual + p.outPlane) {
    residualCopy.assign(residual, residual + p.outPlane);
    residual = residualCopy.data();
  }
  depthwisePlaneGeneric(p.input(plane), p.weights(plane), p.biasOf(plane), p.g, y);
  if (residual || p.epilogue.activation != GemmEpilogue::Activation::None) {
    GemmEpilogue planeEpilogue = p.epilogue;
    planeEpilogue.rowBias = nullptr;
    planeEpilogue.residual = residual;
    planeEpilogue.ldr = p.outPlane;
    planeEpilogue.apply(y, p.outPlane, 1, p.outPlane);
  }
}

#if defined(__x86_64__) || defined(__i386__)
/// Columns at[0], at[s], ..., at[7s]: stride 1 loads them straight, stride 2
/// deinterleaves two loads, other strides gather.
__attribute__((target("avx2,fma"))) inline __m256 loadColumns(const float *at, int64_t s) {
  if (s == 1)
    return _mm256_loadu_ps(at);
  if (s == 2)
    return evenLanes(_mm256_loadu_ps(at), _mm256_loadu_ps(at + 8));
  return _mm256_setr_ps(at[0], at[s], at[2 * s], at[3 * s], at[4 * s], at[5 * s], at[6 * s],
                        at[7 * s]);
}

/// A thread's zero-padded copy of one input plane: padded[r][c] =
/// x[r - padTop][c - padLeft], zero elsewhere. The zeros depend only on the
/// layout, so they are written when the layout changes, and each plane then
/// overwrites only the interior (its rows are short: inline vector loops, not
/// a library call per row). `phased` (width a multiple of 16, with 16 floats
/// to spare): each row split into its column phases, its even columns then
/// its odd ones from width / 2 on, each with 8 floats of slack at its end. A
/// stride-2 depthwise conv then reads each tap's 8 columns with one load;
/// deinterleaving two loads per tap and output row cost it about twice
/// onnxruntime's time (AMD EPYC, AVX2).
class PaddedPlane {
public:
  __attribute__((target("avx2,fma"))) const float *copy(const float *x, int64_t inH, int64_t inW,
                                                        int64_t padTop, int64_t padLeft,
                                                        int64_t rows, int64_t width,
                                                        bool phased = false) {
    std::array<int64_t, 7> want = {inH, inW, padTop, padLeft, rows, width, phased};
    if (want != layout_) {
      // 8 floats of slack for the last row's whole tail store.
      data_.assign(size_t(rows * width + 8), 0.f);
      layout_ = want;
    }
    // x's columns kept: those in the padded row (phased: before the slack).
    const int64_t count = std::clamp<int64_t>(width - (phased ? 16 : 0) - padLeft, 0, inW);
    int64_t first = std::max<int64_t>(padTop, 0), last = std::min(rows, padTop + inH);
    if (phased) {
      // x's column c lands in padded column padLeft + c: phase (padLeft + c)
      // % 2, index (padLeft + c) / 2.
      const int64_t half = width / 2;
      const int64_t evenAt = (padLeft & 1) * half + padLeft / 2;
      const int64_t oddAt = ((padLeft + 1) & 1) * half + (padLeft + 1) / 2;
      for (int64_t r = first; r < last; ++r) {
        const float *src = x + (r - padTop) * inW;
        float *row = data_.data() + r * width;
        for (int64_t c = 0; c < count; c += 16) {
          // The tail's masked-off lanes load as zeros and land in the
          // phase's border or slack: whole stores.
          int64_t left = count - c;
          __m256 a =
              left >= 8 ? _mm256_loadu_ps(src + c) : _mm256_maskload_ps(src + c, firstLanes(left));
          __m256 b = left >= 16 ? _mm256_loadu_ps(src + c + 8)
                                : _mm256_maskload_ps(src + c + 8, firstLanes(left - 8));
          _mm256_storeu_ps(row + evenAt + c / 2, evenLanes(a, b));
          _mm256_storeu_ps(row + oddAt + c / 2, oddLanes(a, b));
        }
      }
      return data_.data();
    }
    const __m256i tail = firstLanes(count % 8);
    for (int64_t r = first; r < last; ++r) {
      const float *src = x + (r - padTop) * inW;
      float *to = data_.data() + r * width + padLeft;
      int64_t c = 0;
      for (; c + 8 <= count; c += 8)
        _mm256_storeu_ps(to + c, _mm256_loadu_ps(src + c));
      // The tail's masked-off lanes load as zeros and land on zeros (the
      // border, or the next row's left pad or interior, copied after it):
      // a whole store, as a masked one is microcoded on AMD.
      if (c < count)
        _mm256_storeu_ps(to + c, _mm256_maskload_ps(src + c, tail));
    }
    return data_.data();
  }

private:
  std::vector<float> data_;
  std::array<int64_t, 7> layout_ = {-1, -1, -1, -1, -1, -1, -1};
};

/// Tap column j of an 8-wide chunk in a padded row of `width` floats: at
/// S = 2 from the row's column phases (`row` at the chunk's first even
/// column), else columns row[j], row[j + s], ...
template <int S>
__attribute__((target("avx2,fma"), always_inline)) inline __m256
tapColumns(const float *row, int64_t j, int64_t s, int64_t width) {
  if constexpr (S == 2)
    return _mm256_loadu_ps(row + (j & 1) * (width / 2) + (j >> 1));
  else
    return loadColumns(row + j, s);
}

/// What one depthwise plane's rows read and write: its padded input (row
/// stride `width`; for AVX2 at column stride 2 (S = 2), split into column
/// phases: PaddedPlane), its taps, bias and residual, its output.
struct DepthwiseRows {
  const Geometry &g;
  const float *padded;
  int64_t width;
  const float *w;
  float bias;
  const float *residual;
  const GemmEpilogue &epilogue;
  float *y;
};

/// The 8-wide chunk at column ow of R output rows from oh: every tap summed
/// in a register per row (R independent chains cover the FMA latency), then
/// the residual, the activation and one store each. Each padded row the R
/// rows read is loaded once and feeds every row it is a tap row of. A
/// `partial` chunk (past the row's end) stores whole, spilling into the next
/// row (written after it), except where `maskRow` says the row must not
/// spill. Values come in locals, not through a struct: the stores to y would
/// otherwise make the compiler reload every field.
template <int R, int KH, int KW, int S, GemmEpilogue::Activation Act, typename MaskRow>
__attribute__((target("avx2,fma"), always_inline)) inline void
depthwiseChunksAvx2(const Geometry &g, const float *top, int64_t width, const __m256 *taps,
                    const float *w, __m256 bias, const float *res, float *out, __m256i tail,
                    const GemmEpilogue &epilogue, int64_t oh, bool partial, MaskRow &&maskRow) {
  const int64_t kh = KH ? KH : g.k[1], kw = KW ? KW : g.k[2], s = S ? S : g.s[2];
  const int64_t outW = g.out[2];
  __m256 acc[R];
  for (int r = 0; r < R; ++r)
    acc[r] = bias;
  if constexpr (KH > 0 && KW > 0) {
    // Stride-1 rows: padded row q is tap row q - r of output row r.
    static_assert(KH * KW > 0);
    if (g.s[1] == 1) {
#pragma GCC unroll 8
      for (int q = 0; q < R + KH - 1; ++q) {
        __m256 v[KW];
#pragma GCC unroll 5
        for (int j = 0; j < KW; ++j)
          v[j] = tapColumns<S>(top + q * width, j, s, width);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          int i = q - r;
          if (i < 0 || i >= KH)
            continue;
#pragma GCC unroll 5
          for (int j = 0; j < KW; ++j)
            acc[r] = _mm256_fmadd_ps(taps[i * KW + j], v[j], acc[r]);
        }
      }
    } else {
      const int64_t sh = g.s[1];
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 25
        for (int t = 0; t < KH * KW; ++t)
          acc[r] = _mm256_fmadd_ps(
              taps[t], tapColumns<S>(top + (r * sh + t / KW) * width, t % KW, s, width), acc[r]);
    }
  } else {
    const int64_t sh = g.s[1], dh = g.d[1], dw = g.d[2];
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        __m256 tap = _mm256_set1_ps(w[i * kw + j]);
        for (int r = 0; r < R; ++r)
          acc[r] = _mm256_fmadd_ps(tap, loadColumns(top + (r * sh + i * dh) * width + j * dw, s),
                                   acc[r]);
      }
  }
  for (int r = 0; r < R; ++r) {
    if (res)
      acc[r] = _mm256_add_ps(acc[r], partial ? _mm256_maskload_ps(res + r * outW, tail)
                                             : _mm256_loadu_ps(res + r * outW));
    acc[r] = activateAvx2(Act, epilogue, acc[r]);
    // A masked store is microcoded on AMD: only where a spill would be wrong.
    if (partial && maskRow(oh + r))
      _mm256_maskstore_ps(out + r * outW, tail, acc[r]);
    else
      _mm256_storeu_ps(out + r * outW, acc[r]);
  }
}

/// The output rows of a depthwise plane, four at a time. KH, KW and S (the
/// column stride) are template constants for the common 3x3 and 5x5, stride
/// 1 and 2 convs (0: read from g), and so is the activation.
///
/// Rows of 8 or more end with a chunk that overlaps the one before it, so
/// every store is whole; shorter rows spill into the rows after them,
/// written later, and only the rows whose spill would leave the plane mask
/// their store. A
/// residual in y's own memory (read after a neighbour's store) gets masked
/// partial chunks instead.
template <int KH, int KW, int S, GemmEpilogue::Activation Act>
__attribute__((target("avx2,fma"))) void depthwiseRowsAvx2(const DepthwiseRows &d) {
  const int64_t outH = d.g.out[1], outW = d.g.out[2];
  const int64_t plane = outH * outW;
  const bool inPlace = d.residual && d.residual < d.y + plane && d.y < d.residual + plane;
  const bool overlapLast = outW >= 8 && !inPlace;
  const int64_t lastChunk = (outW - 1) / 8 * 8;
  const int64_t lastStart = overlapLast ? outW - 8 : lastChunk;
  const bool anyPartial = !overlapLast && outW % 8 != 0;
  auto maskRow = [&](int64_t row) { return inPlace || row * outW + 8 > plane; };
  constexpr int kTaps = KH * KW;
  __m256 taps[kTaps > 0 ? kTaps : 1];
  for (int t = 0; t < kTaps; ++t)
    taps[t] = _mm256_set1_ps(d.w[t]);
  const __m256i tail = firstLanes(outW - lastChunk);
  const __m256 bias = _mm256_set1_ps(d.bias);
  const float *padded = d.padded, *w = d.w, *residual = d.residual;
  const int64_t width = d.width, rowStep = d.g.s[1] * width, s = S ? S : d.g.s[2];
  float *y = d.y;
  constexpr int kRows = 4;
  for (int64_t oh = 0; oh < outH;) {
    bool block = oh + kRows <= outH;
    for (int64_t ow = 0; ow < outW; ow += 8) {
      int64_t at = std::min(ow, lastStart), o = oh * outW + at;
      // Split into column phases at stride 2 (PaddedPlane): column
      // at * 2 is even column at.
      const float *top = padded + oh * rowStep + (S == 2 ? at : at * s);
      const float *res = residual ? residual + o : nullptr;
      bool partial = anyPartial && ow == lastChunk;
      if (block)
        depthwiseChunksAvx2<kRows, KH, KW, S, Act>(d.g, top, width, taps, w, bias, res, y + o, tail,
                                                   d.epilogue, oh, partial, maskRow);
      else
        depthwiseChunksAvx2<1, KH, KW, S, Act>(d.g, top, width, taps, w, bias, res, y + o, tail,
                                               d.epilogue, oh, partial, maskRow);
    }
    oh += block ? kRows : 1;
  }
}

/// A plane of a 1-D or 2-D depthwise conv in AVX2 FMA: the input plane is
/// copied once into a zero-padded plane, wide enough that every 8-wide chunk
/// of an output row loads its taps whole (no clipping, no masked loads), and
/// the rows are computed from it. With KH and KW given, the dilations are 1.
/// Columns at[0], at[s], ..., at[15s] in AVX-512: stride 1 loads them
/// straight, stride 2 picks the even lanes of two loads, other strides
/// gather.
__attribute__((target("avx512f"))) inline __m512 loadColumns16(const float *at, int64_t s) {
  if (s == 1)
    return _mm512_loadu_ps(at);
  if (s == 2) {
    const __m512i even =
        _mm512_setr_epi32(0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28, 30);
    return _mm512_permutex2var_ps(_mm512_loadu_ps(at), even, _mm512_loadu_ps(at + 16));
  }
  const __m512i index =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int(s)));
  return _mm512_mask_i32gather_ps(_mm512_setzero_ps(), 0xFFFF, index, at, 4);
}

/// depthwiseChunksAvx2 16 lanes wide: the row's last chunk masks its loads
/// of the residual and its store (k-masks are cheap, unlike AVX2's).
template <int R, int KH, int KW, int S, GemmEpilogue::Activation Act>
__attribute__((target("avx512f"), always_inline)) inline void
depthwiseChunksAvx512(const Geometry &g, const float *top, int64_t width, const float *w,
                      __m512 bias, const float *res, float *out, __mmask16 lanes,
                      const GemmEpilogue &epilogue) {
  const int64_t kh = KH ? KH : g.k[1], kw = KW ? KW : g.k[2], s = S ? S : g.s[2];
  const int64_t sh = g.s[1], dh = KH ? 1 : g.d[1], dw = KW ? 1 : g.d[2], outW = g.out[2];
  __m512 acc[R];
  for (int r = 0; r < R; ++r)
    acc[r] = bias;
  if constexpr (KH > 0 && KW > 0) {
    if (sh == 1) {
      // Padded row q is tap row q - r of output row r: loaded once.
#pragma GCC unroll 8
      for (int q = 0; q < R + KH - 1; ++q) {
        __m512 v[KW];
#pragma GCC unroll 5
        for (int j = 0; j < KW; ++j)
          v[j] = loadColumns16(top + q * width + j, s);
#pragma GCC unroll 4
        for (int r = 0; r < R; ++r) {
          int i = q - r;
          if (i < 0 || i >= KH)
            continue;
#pragma GCC unroll 5
          for (int j = 0; j < KW; ++j)
            acc[r] = _mm512_fmadd_ps(_mm512_set1_ps(w[i * KW + j]), v[j], acc[r]);
        }
      }
    } else {
#pragma GCC unroll 4
      for (int r = 0; r < R; ++r)
#pragma GCC unroll 25
        for (int t = 0; t < KH * KW; ++t)
          acc[r] =
              _mm512_fmadd_ps(_mm512_set1_ps(w[t]),
                              loadColumns16(top + (r * sh + t / KW) * width + t % KW, s), acc[r]);
    }
  } else {
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        __m512 tap = _mm512_set1_ps(w[i * kw + j]);
        for (int r = 0; r < R; ++r)
          acc[r] = _mm512_fmadd_ps(tap, loadColumns16(top + (r * sh + i * dh) * width + j * dw, s),
                                   acc[r]);
      }
  }
  for (int r = 0; r < R; ++r) {
    if (res)
      acc[r] = _mm512_add_ps(acc[r], _mm512_maskz_loadu_ps(lanes, res + r * outW));
    _mm512_mask_storeu_ps(out + r * outW, lanes, activateAvx512(Act, epilogue, acc[r]));
  }
}

/// depthwiseRowsAvx2 16 lanes wide, four rows at a time.
template <int KH, int KW, int S, GemmEpilogue::Activation Act>
__attribute__((target("avx512f"))) void depthwiseRowsAvx512(const DepthwiseRows &d) {
  const int64_t outH = d.g.out[1], outW = d.g.out[2];
  const __m512 bias = _mm512_set1_ps(d.bias);
  const float *padded = d.padded, *w = d.w, *residual = d.residual;
  const int64_t width = d.width, rowStep = d.g.s[1] * width, s = S ? S : d.g.s[2];
  float *y = d.y;
  constexpr int kRows = 4;
  for (int64_t oh = 0; oh < outH;) {
    bool block = oh + kRows <= outH;
    for (int64_t ow = 0; ow < outW; ow += 16) {
      int64_t o = oh * outW + ow, left = std::min<int64_t>(16, outW - ow);
      auto lanes = static_cast<__mmask16>((1u << left) - 1);
      const float *top = padded + oh * rowStep + ow * s, *res = residual ? residual + o : nullptr;
      if (block)
        depthwiseChunksAvx512<kRows, KH, KW, S, Act>(d.g, top, width, w, bias, res, y + o, lanes,
                                                     d.epilogue);
      else
        depthwiseChunksAvx512<1, KH, KW, S, Act>(d.g, top, width, w, bias, res, y + o, lanes,
                                                 d.epilogue);
    }
    oh += block ? kRows : 1;
  }
}

/// A plane of a 1-D or 2-D depthwise conv in AVX2 FMA (Lanes 8) or AVX-512
/// (Lanes 16): the input plane is copied once into a zero-padded plane,
/// wide enough that every chunk of an output row loads its taps whole (no
/// clipping, no masked loads), and the rows are computed from it. With KH
/// and KW given, the dilations are 1.
template <int KH, int KW, int S, int Lanes>
void depthwisePlane2d(const DepthwisePlanes &p, int64_t plane, float *y) {
  const Geometry &g = p.g;
  const int64_t kh = KH ? KH : g.k[1], kw = KW ? KW : g.k[2], s = S ? S : g.s[2];
  // Padded rows the taps reach, and columns up to the last chunk's reads.
  const int64_t lastChunk = (g.out[2] - 1) / Lanes * Lanes;
  const int64_t padRows = (g.out[1] - 1) * g.s[1] + (kh - 1) * g.d[1] + 1;
  const int64_t reach = lastChunk * s + (kw - 1) * g.d[2] + Lanes * std::max<int64_t>(s, 2);
  // AVX2 at stride 2 reads the rows split into column phases, whole pairs of vectors.
  constexpr bool kPhased = Lanes == 8 && S == 2;
  const int64_t width = kPhased ? (reach + 15) / 16 * 16 + 16 : (reach + 7) / 8 * 8;
  thread_local PaddedPlane scratch;
  const float *padded = scratch.copy(p.input(plane), g.in[1], g.in[2], g.padBegin[1], g.padBegin[2],
                                     padRows, width, kPhased);
  using A = GemmEpilogue::Activation;
  DepthwiseRows rows{
      g, padded, width, p.weights(plane), p.biasOf(plane), p.residualOf(plane), p.epilogue, y};
  auto run = [&](auto act) {
    constexpr A Act = decltype(act)::value;
    if constexpr (Lanes == 16)
      depthwiseRowsAvx512<KH, KW, S, Act>(rows);
    else
      depthwiseRowsAvx2<KH, KW, S, Act>(rows);
  };
  switch (p.epilogue.activation) {
  case A::None:
    return run(std::integral_constant<A, A::None>());
  case A::Relu:
    return run(std::integral_constant<A, A::Relu>());
  case A::Clip:
    return run(std::integral_constant<A, A::Clip>());
  case A::LeakyRelu:
    return run(std::integral_constant<A, A::LeakyRelu>());
  case A::Gelu: // no conv epilogue has these (convActivation); kept correct
  case A::GeluTanh:
    return depthwisePlaneGeneric(p, plane, y);
  }
}
#endif

using DepthwisePlaneFn = void (*)(const DepthwisePlanes &, int64_t, float *);

/// The plane function for g on this CPU: the AVX-512 or AVX2 one for 1-D and
/// 2-D convs (specialized for the common kernels and strides), the portable
/// loop for
/// 3-D ones and when the GEMM runs its portable variant too (the variant the
/// CPU EP's vector code follows, setSgemmVariant included).
DepthwisePlaneFn pickDepthwisePlane(const Geometry &g) {
#if defined(__x86_64__) || defined(__i386__)
  bool twoD = g.in[0] == 1 && g.k[0] == 1 && g.out[0] == 1;
  KernelIsa isa = kernelIsa();
  if (twoD && isa != KernelIsa::Generic) {
    auto pick = [&](auto lanes) -> DepthwisePlaneFn {
      constexpr int L = decltype(lanes)::value;
      bool unitDilation = g.d[1] == 1 && g.d[2] == 1;
      if (unitDilation && g.k[1] == 3 && g.k[2] == 3 && g.s[2] == 1)
        return depthwisePlane2d<3, 3, 1, L>;
      if (unitDilation && g.k[1] == 3 && g.k[2] == 3 && g.s[2] == 2)
        return depthwisePlane2d<3, 3, 2, L>;
      if (unitDilation && g.k[1] == 5 && g.k[2] == 5 && g.s[2] == 1)
        return depthwisePlane2d<5, 5, 1, L>;
      if (unitDilation && g.k[1] == 5 && g.k[2] == 5 && g.s[2] == 2)
        return depthwisePlane2d<5, 5, 2, L>;
      return depthwisePlane2d<0, 0, 0, L>;
    };
    if (isa == KernelIsa::Avx512)
      return pick(std::integral_constant<int, 16>());
    return pick(std::integral_constant<int, 8>());
  }
#endif
  return depthwisePlaneGeneric;
}

#if defined(__x86_64__) || defined(__i386__)
/// r[i] (row i of an 8x8 block) becomes column i: on return r[j] holds the
/// old r[0][j], ..., r[7][j].
__attribute__((target("avx2,fma"), always_inline)) inline void transpose8x8(__m256 r[8]) {
  __m256 t[8], u[8];
  for (int j = 0; j < 8; j += 2) {
    t[j] = _mm256_unpacklo_ps(r[j], r[j + 1]);
    t[j + 1] = _mm256_unpackhi_ps(r[j], r[j + 1]);
  }
  for (int h = 0; h < 8; h += 4) {
    u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
    u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xEE);
    u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
    u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xEE);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

/// A 2-D depthwise conv (channel multiplier 1) on blocks of 8 channels, the
/// way a blocked (NCHW8c) layout computes it: a band of the block's input
/// rows is transposed into a zero-padded buffer of 8-channel vectors, each
/// output position is then one vector summed over the taps (every lane
/// useful, whatever the width and the stride), and the output band is
/// transposed back into the 8 planes with the epilogue on the way. Narrow
/// rows (7x7 and 14x14 planes) waste lanes and per-plane setup in the plane
/// loop, and a strided one splits every plane into column phases; there the
/// transposes cost less (depthwiseRunsBlocked).
struct DepthwiseBlocks {
  static constexpr int64_t kLanes = 8;
  const Geometry &g;
  const float *x, *w, *bias, *residual;
  const GemmEpilogue &epilogue;
  int64_t C; // channels in and out

  int64_t blocks() const { return (C + kLanes - 1) / kLanes; }
  /// Columns of the padded input rows the taps read.
  int64_t paddedWidth() const { return (g.out[2] - 1) * g.s[2] + (g.k[2] - 1) * g.d[2] + 1; }
  /// Padded input rows output rows [0, rows) read.
  int64_t inputRows(int64_t rows) const { return (rows - 1) * g.s[1] + (g.k[1] - 1) * g.d[1] + 1; }
  /// Output rows per band: the band's input and output vectors within
  /// about 64 KiB, so both stay in the core's cache between the passes.
  int64_t bandRows() const {
    constexpr int64_t kBandFloats = 16 * 1024;
    int64_t rows = 1;
    while (rows < g.out[1] &&
           (inputRows(rows + 1) * paddedWidth() + (rows + 1) * g.out[2]) * kLanes <= kBandFloats)
      ++rows;
    return rows;
  }
};

/// B output positions of one band row, `sw` vectors apart from `top` in the
/// padded input rows (`rowStep` floats apart), summed over their taps (tap
/// t = i * kw + j: 8 channels' weights at taps + 8 t) into `to`, from
/// `bias`. KH, KW and S, when not 0, are the kernel and the column stride
/// with unit dilations: each input vector is then loaded once for every
/// position and tap that reads it. Geometry comes in locals: the stores
/// (may-alias vectors) would otherwise make the compiler reload it.
template <int B, int KH, int KW, int S>
__attribute__((target("avx2,fma"), always_inline)) inline void
depthwiseBlockPositions(const float *top, int64_t rowStep, int64_t kh, int64_t kw, int64_t sw,
                        int64_t dh, int64_t dw, const float *taps, __m256 bias, float *to) {
  constexpr int64_t L = DepthwiseBlocks::kLanes;
  __m256 acc[B];
  for (int b = 0; b < B; ++b)
    acc[b] = bias;
  if constexpr (KH > 0 && KW > 0 && S > 0) {
    constexpr int kColumns = (B - 1) * S + KW;
#pragma GCC unroll 5
    for (int i = 0; i < KH; ++i) {
      __m256 v[kColumns];
#pragma GCC unroll 16
      for (int c = 0; c < kColumns; ++c)
        v[c] = _mm256_loadu_ps(top + i * rowStep + c * L);
#pragma GCC unroll 5
      for (int j = 0; j < KW; ++j) {
        __m256 wv = _mm256_loadu_ps(taps + (i * KW + j) * L);
#pragma GCC unroll 8
        for (int b = 0; b < B; ++b)
          acc[b] = _mm256_fmadd_ps(wv, v[b * S + j], acc[b]);
      }
    }
  } else {
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j) {
        __m256 wv = _mm256_loadu_ps(taps + (i * kw + j) * L);
        const float *at = top + i * dh * rowStep + j * dw * L;
        for (int b = 0; b < B; ++b)
          acc[b] = _mm256_fmadd_ps(wv, _mm256_loadu_ps(at + b * sw * L), acc[b]);
      }
  }
  for (int b = 0; b < B; ++b)
    _mm256_storeu_ps(to + b * L, acc[b]);
}

/// The output rows of one band from its padded input vectors, four
/// positions at a time so the FMA chains overlap, into `out` ([rows][outW]
/// vectors).
template <int KH, int KW, int S>
__attribute__((target("avx2,fma"))) void depthwiseBlockRows(const Geometry &g, const float *in,
                                                            int64_t paddedWidth, const float *taps,
                                                            __m256 bias, int64_t rows, float *out) {
  constexpr int64_t L = DepthwiseBlocks::kLanes;
  const int64_t kh = g.k[1], kw = g.k[2], sh = g.s[1], sw = S ? S : g.s[2], dh = g.d[1],
                dw = g.d[2], outW = g.out[2], rowStep = paddedWidth * L;
  for (int64_t r = 0; r < rows; ++r) {
    const float *top = in + r * sh * rowStep;
    float *to = out + r * outW * L;
    int64_t ow = 0;
    for (; ow + 4 <= outW; ow += 4)
      depthwiseBlockPositions<4, KH, KW, S>(top + ow * sw * L, rowStep, kh, kw, sw, dh, dw, taps,
                                            bias, to + ow * L);
    for (; ow < outW; ++ow)
      depthwiseBlockPositions<1, KH, KW, S>(top + ow * sw * L, rowStep, kh, kw, sw, dh, dw, taps,
                                            bias, to + ow * L);
  }
}

/// Padded input rows [r0, r1) of channel block `c0` of image n, as vectors
/// of the block's channels, into `rows` (row stride paddedWidth vectors).
__attribute__((target("avx2,fma"))) void transposeInputRows(const DepthwiseBlocks &d, int64_t n,
                                                            int64_t c0, int64_t r0, int64_t r1,
                                                            float *rows) {
  constexpr int64_t L = DepthwiseBlocks::kLanes;
  const Geometry &g = d.g;
  const int64_t inH = g.in[1], inW = g.in[2], padTop = g.padBegin[1], padLeft = g.padBegin[2];
  const int64_t width = d.paddedWidth(), channels = std::min(L, d.C - c0);
  // x's columns some tap reads, and where they land.
  const int64_t count = std::clamp<int64_t>(width - padLeft, 0, inW);
  const float *plane = d.x + (n * d.C + c0) * inH * inW;
  for (int64_t r = r0; r < r1; ++r) {
    float *to = rows + (r - r0) * width * L;
    int64_t ih = r - padTop;
    if (!inside(ih, inH)) {
      std::fill(to, to + width * L, 0.f);
      continue;
    }
    std::fill(to, to + padLeft * L, 0.f);
    std::fill(to + (padLeft + count) * L, to + width * L, 0.f);
    const float *src = plane + ih * inW;
    for (int64_t j = 0; j < count; j += L) {
      int64_t cols = std::min(L, count - j);
      __m256i mask = firstLanes(cols);
      __m256 v[L];
      for (int64_t c = 0; c < L; ++c)
        v[c] = c >= channels ? _mm256_setzero_ps()
               : cols == L   ? _mm256_loadu_ps(src + c * inH * inW + j)
                             : _mm256_maskload_ps(src + c * inH * inW + j, mask);
      transpose8x8(v);
      float *at = to + (padLeft + j) * L;
      // Unrolled with a test per store: a plain loop up to `cols` becomes a
      // spill and a memcpy.
#pragma GCC unroll 8
      for (int k = 0; k < L; ++k)
        if (k < cols)
          _mm256_storeu_ps(at + k * L, v[k]);
    }
  }
}

/// Output rows [oh0, oh0 + rows) of the block's planes from `out` (vectors
/// of channels, [rows][outW]): transposed back, residual added, activated,
/// stored. A residual at y's own address is read just before each store of
/// the same elements.
template <GemmEpilogue::Activation Act>
__attribute__((target("avx2,fma"))) void transposeOutputRows(const DepthwiseBlocks &d, int64_t n,
                                                             int64_t c0, int64_t oh0, int64_t rows,
                                                             const float *out, float *y) {
  constexpr int64_t L = DepthwiseBlocks::kLanes;
  const int64_t outW = d.g.out[2], P = d.g.out[1] * outW;
  const int64_t channels = std::min(L, d.C - c0);
  const int64_t first = (n * d.C + c0) * P + oh0 * outW;
  const int64_t total = rows * outW; // the band's positions, contiguous in every plane
  const float *residual = d.residual;
  const GemmEpilogue epilogue = d.epilogue; // a local: the stores could alias d's
  for (int64_t p = 0; p < total; p += L) {
    int64_t count = std::min(L, total - p);
    __m256i mask = firstLanes(count);
    __m256 v[L];
    for (int64_t k = 0; k < L; ++k) // past `total`: slack, never stored
      v[k] = _mm256_loadu_ps(out + (p + k) * L);
    transpose8x8(v);
    for (int64_t c = 0; c < channels; ++c) {
      int64_t at = first + c * P + p;
      __m256 value = v[c];
      if (residual)
        value = _mm256_add_ps(value, count == L ? _mm256_loadu_ps(residual + at)
                                                : _mm256_maskload_ps(residual + at, mask));
      value = activateAvx2(Act, epilogue, value);
      if (count == L)
        _mm256_storeu_ps(y + at, value);
      else
        _mm256_maskstore_ps(y + at, mask, value);
    }
  }
}

/// Channel block `block` of image n, band by band. The rows two bands share
/// (a 3x3 stride-1 conv's two) move to the top instead of being transposed
/// again.
template <int KH, int KW, int S, GemmEpilogue::Activation Act>
__attribute__((target("avx2,fma"))) void depthwiseBlock(const DepthwiseBlocks &d, int64_t n,
                                                        int64_t block, float *y) {
  constexpr int64_t L = DepthwiseBlocks::kLanes;
  const Geometry &g = d.g;
  const int64_t c0 = block * L, channels = std::min(L, d.C - c0);
  const int64_t kSize = g.k[1] * g.k[2], width = d.paddedWidth(), band = d.bandRows();
  const int64_t outH = g.out[1], outW = g.out[2];
  thread_local std::vector<float> in, out, taps;
  in.resize(size_t(d.inputRows(band) * width * L));
  out.resize(size_t((band * outW + L) * L));
  taps.resize(size_t(kSize * L));
  for (int64_t t = 0; t < kSize; ++t)
    for (int64_t c = 0; c < L; ++c)
      taps[t * L + c] = c < channels ? d.w[(c0 + c) * kSize + t] : 0.f;
  alignas(32) float biasLanes[L] = {};
  for (int64_t c = 0; c < channels && d.bias; ++c)
    biasLanes[c] = d.bias[c0 + c];
  const __m256 bias = _mm256_load_ps(biasLanes);
  int64_t haveFrom = 0, haveTo = 0; // padded input rows in `in`
  for (int64_t oh0 = 0; oh0 < outH; oh0 += band) {
    int64_t rows = std::min(band, outH - oh0);
    int64_t from = oh0 * g.s[1], to = from + d.inputRows(rows);
    int64_t kept = std::clamp<int64_t>(haveTo - from, 0, haveTo - haveFrom);
    if (kept > 0)
      std::memmove(in.data(), in.data() + (haveTo - kept - haveFrom) * width * L,
                   size_t(kept * width * L) * sizeof(float));
    transposeInputRows(d, n, c0, from + kept, to, in.data() + kept * width * L);
    haveFrom = from;
    haveTo = to;
    depthwiseBlockRows<KH, KW, S>(g, in.data(), width, taps.data(), bias, rows, out.data());
    transposeOutputRows<Act>(d, n, c0, oh0, rows, out.data(), y);
  }
}

/// Whether a depthwise conv runs on channel blocks (DepthwiseBlocks): a
/// 2-D one with one output channel per input channel, on a vector CPU, whose
/// residual (if any) is y itself or apart from it, and
/// - with AVX-512, whose output rows would leave more than half of the plane
///   loop's 16 lanes empty (7x7 planes: 3 layers of MobileNetV2, 0.069 ->
///   0.042 ms each; 14x14 ran faster plane by plane, 0.044 against 0.049 ms);
/// - with AVX2, whose output rows are at most two vectors or whose column
///   stride is above 1. The plane loop's copy into a padded (and, at stride
///   2, phase-split) plane and its per-plane setup outweigh its one
///   transpose each way there: MobileNetV2 in the model, one thread, AMD
///   EPYC: 960x7x7 0.085 -> 0.055 ms, 576x14x14 0.104 -> 0.085 ms, 576 at
///   stride 2 onto 7x7 0.075 -> 0.049 ms, 96 at stride 2 onto 56x56 0.374 ->
///   0.333 ms; the whole model 4% faster. Wider stride-1 rows (28 to 112)
///   measured the same or slower blocked (144x56x56 0.261 -> 0.270 ms).
bool depthwiseRunsBlocked(const Geometry &g, int64_t C, int64_t M, const float *y,
                          const float *residual, int64_t size) {
  bool twoD = g.in[0] == 1 && g.k[0] == 1 && g.out[0] == 1;
  bool apart = !residual || residual == y || residual + size <= y || y + size <= residual;
  if (!twoD || M != C || !apart)
    return false;
  switch (kernelIsa()) {
  case KernelIsa::Avx512:
    return 2 * g.out[2] <= 16;
  case KernelIsa::Avx2:
    return g.out[2] <= 2 * DepthwiseBlocks::kLanes || g.s[2] > 1;
  case KernelIsa::Generic:
    return false;
  }
  return false;
}

using DepthwiseBlockFn = void (*)(const DepthwiseBlocks &, int64_t, int64_t, float *);

template <int V> using IntConstant = std::integral_constant<int, V>;

/// The block function for d's kernel, stride and activation: 3x3 and 5x5
/// at column stride 1 and 2 (unit dilations) are specialized.
DepthwiseBlockFn pickDepthwiseBlock(const DepthwiseBlocks &d) {
  using A = GemmEpilogue::Activation;
  auto pick = [&](auto kh, auto kw, auto stride) -> DepthwiseBlockFn {
    constexpr int KH = decltype(kh)::value, KW = decltype(kw)::value, S = decltype(stride)::value;
    switch (d.epilogue.activation) {
    case A::None:
      return depthwiseBlock<KH, KW, S, A::None>;
    case A::Relu:
      return depthwiseBlock<KH, KW, S, A::Relu>;
    case A::Clip:
      return depthwiseBlock<KH, KW, S, A::Clip>;
    case A::LeakyRelu:
      return depthwiseBlock<KH, KW, S, A::LeakyRelu>;
    case A::Gelu: // no conv epilogue has these (convActivation): the planes
    case A::GeluTanh:
      return nullptr;
    }
    return nullptr;
  };
  const Geometry &g = d.g;
  if (g.d[1] == 1 && g.d[2] == 1 && g.k[1] == g.k[2] && (g.s[2] == 1 || g.s[2] == 2)) {
    bool one = g.s[2] == 1;
    if (g.k[1] == 3)
      return one ? pick(IntConstant<3>(), IntConstant<3>(), IntConstant<1>())
                 : pick(IntConstant<3>(), IntConstant<3>(), IntConstant<2>());
    if (g.k[1] == 5)
      return one ? pick(IntConstant<5>(), IntConstant<5>(), IntConstant<1>())
                 : pick(IntConstant<5>(), IntConstant<5>(), IntConstant<2>());
  }
  return pick(IntConstant<0>(), IntConstant<0>(), IntConstant<0>());
}
#endif

/// Columns [p0, p1) (output positions) of one image's im2col matrix,
/// row-major [C * kernel, P] (row stride P): row (c, kd, kh, kw) holds, per
/// output position, the input value its tap reads, or 0 in the padding.
void im2colColumns(const float *x, int64_t C, const Geometry &g, int64_t p0, int64_t p1,
                   float *cols) {
  int64_t kSize = g.kernelSize(), inPlane = g.inSize(), P = g.outSize(), s = g.s[2];
  int64_t outW = g.out[2];
  for (int64_t r = 0; r < C * kSize; ++r) {
    int64_t c = r / kSize, t = r % kSize;
    int64_t kd = t / (g.k[1] * g.k[2]), kh = t / g.k[2] % g.k[1], kw = t % g.k[2];
    const float *xc = x + c * inPlane;
    int64_t base = kw * g.d[2] - g.padBegin[2], lo, hi;
    clipColumns(base, s, g.in[2], outW, lo, hi);
    lo = std::min(lo, outW);
    hi = std::max(lo, hi);
    // Output rows (od, oh) overlapping [p0, p1), each clipped to it.
    for (int64_t rowStart = p0 / outW * outW; rowStart < p1; rowStart += outW) {
      int64_t od = rowStart / outW / g.out[1], oh = rowStart / outW % g.out[1];
      int64_t from = std::max(p0 - rowStart, int64_t(0)), to = std::min(p1 - rowStart, outW);
      float *d = cols + r * P + rowStart;
      int64_t id = od * g.s[0] - g.padBegin[0] + kd * g.d[0];
      int64_t ih = oh * g.s[1] - g.padBegin[1] + kh * g.d[1];
      if (!inside(id, g.in[0]) || !inside(ih, g.in[1])) {
        std::fill(d + from, d + to, 0.f);
        continue;
      }
      const float *in = xc + (id * g.in[1] + ih) * g.in[2];
      int64_t a = std::clamp(lo, from, to), b = std::clamp(hi, a, to);
      std::fill(d + from, d + a, 0.f);
      if (s == 1)
        std::copy(in + base + a, in + base + b, d + a);
      else
        for (int64_t ow = a; ow < b; ++ow)
          d[ow] = in[ow * s + base];
      std::fill(d + b, d + to, 0.f);
    }
  }
}

/// Positions [p0, p1) of the M channels of Y (row stride P) from the
/// product [P, *] (row stride ldp): y[m][p] = product[p][m], then the
/// epilogue (at Y's origin).
void transposeProductGeneric(const float *product, int64_t ldp, int64_t P, int64_t M, int64_t p0,
                             int64_t p1, const GemmEpilogue &e, float *y) {
  for (int64_t m = 0; m < M; ++m)
    for (int64_t p = p0; p < p1; ++p)
      y[m * P + p] = product[p * ldp + m];
  if (e.any())
    e.at(0, p0).apply(y + p0, P, M, p1 - p0);
}

#if defined(__x86_64__) || defined(__i386__)
/// The same in 8x8 blocks transposed in registers, each row of a block
/// taking the epilogue (GemmEpilogue::apply's order) before its one store;
/// the edges the portable way.
__attribute__((target("avx2,fma"))) void transposeProductAvx2(const float *product, int64_t ldp,
                                                              int64_t P, int64_t M, int64_t p0,
                                                              int64_t p1, const GemmEpilogue &e,
                                                              float *y) {
  const int64_t fullRows = M / 8 * 8, fullEnd = p0 + (p1 - p0) / 8 * 8;
  for (int64_t mb = 0; mb < fullRows; mb += 8) {
    for (int64_t p = p0; p < fullEnd; p += 8) {
      __m256 r[8];
      for (int j = 0; j < 8; ++j)
        r[j] = _mm256_loadu_ps(product + (p + j) * ldp + mb);
      transpose8x8(r);
      for (int i = 0; i < 8; ++i) {
        __m256 v = r[i]; // channel mb + i at positions p..p+7
        if (e.rowBias)
          v = _mm256_add_ps(v, _mm256_set1_ps(e.rowBias[mb + i]));
        if (e.residual)
          v = _mm256_add_ps(v, _mm256_loadu_ps(e.residual + (mb + i) * e.ldr + p));
        _mm256_storeu_ps(y + (mb + i) * P + p, activateAvx2(e.activation, e, v));
      }
    }
  }
  // The last positions of every channel, and the last channels.
  if (fullEnd < p1)
    transposeProductGeneric(product, ldp, P, fullRows, fullEnd, p1, e, y);
  if (fullRows < M)
    transposeProductGeneric(product + fullRows, ldp, P, M - fullRows, p0, p1, e.at(fullRows, 0),
                            y + fullRows * P);
}
#endif

/// transposeProductGeneric by the GEMM's variant.
void transposeProduct(const float *product, int64_t ldp, int64_t P, int64_t M, int64_t p0,
                      int64_t p1, const GemmEpilogue &e, float *y) {
#if defined(__x86_64__) || defined(__i386__)
  if (kernelIsa() != KernelIsa::Generic)
    return transposeProductAvx2(product, ldp, P, M, p0, p1, e, y);
#endif
  transposeProductGeneric(product, ldp, P, M, p0, p1, e, y);
}

/// Units of work (tiles, panels) per task when `units` of them, `flops` in
/// all, are shared out on call's pool: no more tasks than threads, nor than
/// ~1 MFLOP each (below that, waking threads costs more than it saves).
int64_t unitsPerTask(const KernelCall &call, int64_t units, int64_t flops) {
  constexpr int64_t kMinFlopsPerTask = int64_t(1) << 20;
  int64_t tasks = std::max<int64_t>(1, std::min<int64_t>({call.pool ? call.pool->threads() : 1,
                                                           units, flops / kMinFlopsPerTask}));
  return (units + tasks - 1) / tasks;
}

/// A group-1 Conv as Y^T = col^T * W^T per image (convPrefersTransposedGemm):
/// the P output positions are the GEMM's rows, read from X itself (1x1,
/// stride 1, unpadded) or from the im2col matrix as op(A) = A^T; W comes
/// packed as B panels of W^T (packing "gemm_bt"). The product lands in
/// scratch as [P, M] and is transposed into Y, each 8x8 block taking the
/// epilogue (bias, residual, activation) in registers. The positions are
/// shared out in whole 6-row tiles: each task writes its own im2col columns,
/// product rows and Y columns, so an image waits on its threads once.
Status convTransposedGemm(const KernelCall &call, const Geometry &g, const float *x,
                          const float *packedWt, int64_t N, int64_t C, int64_t M,
                          const GemmEpilogue &epilogue, float *y) {
  const char *op = "Conv";
  int64_t P = g.outSize(), K = C * g.kernelSize(), inPlane = g.inSize();
  bool pointwise = g.pointwise();
  // One scratch: the product [P, M], then the im2col matrix [K, P].
  size_t productFloats = size_t(P * M + 15) / 16 * 16;
  float *scratch;
  if (Status s = allocScratch(call, op, productFloats + (pointwise ? 0 : size_t(K * P)), scratch);
      !s.isOk())
    return s;
  float *product = scratch, *cols = scratch + productFloats;
  int64_t tiles = (P + kGemmPanelHeight - 1) / kGemmPanelHeight;
  int64_t perTask = unitsPerTask(call, tiles, 2 * M * P * K) * kGemmPanelHeight;
  int64_t tasks = (P + perTask - 1) / perTask;
  // A pointwise conv whose W outweighs X shares out W's column panels
  // instead: each task then reads its part of W, not all of it (MobileNetV2's
  // 576x96 at 14x14 reads 221 KiB of W against 75 KiB of X).
  int64_t mPanels = (M + kGemmPanelWidth - 1) / kGemmPanelWidth;
  int64_t perChannelTask = unitsPerTask(call, mPanels, 2 * M * P * K) * kGemmPanelWidth;
  bool byChannels = pointwise && M > P && perChannelTask < M;
  for (int64_t n = 0; n < N; ++n) {
    const float *xn = x + n * C * inPlane;
    float *yn = y + n * M * P;
    GemmEpilogue image = epilogue;
    image.residual = epilogue.residual ? epilogue.residual + n * M * P : nullptr;
    if (byChannels) {
      parallelFor(call.pool, (M + perChannelTask - 1) / perChannelTask, [&](int64_t t) {
        int64_t m0 = t * perChannelTask, m1 = std::min(M, m0 + perChannelTask);
        sgemmPackedParallel(nullptr, P, m1 - m0, K, xn, P, /*transA=*/true, packedWt + m0 * K,
                            product + m0, M, false);
        transposeProduct(product + m0, M, P, m1 - m0, 0, P, image.at(m0, 0), yn + m0 * P);
      });
      continue;
    }
    parallelFor(call.pool, tasks, [&](int64_t t) {
      int64_t p0 = t * perTask, p1 = std::min(P, p0 + perTask);
      const float *a = xn;
      if (!pointwise) {
        im2colColumns(xn, C, g, p0, p1, cols);
        a = cols;
      }
      sgemmPackedParallel(nullptr, p1 - p0, M, K, a + p0, P, /*transA=*/true, packedWt,
                          product + p0 * M, M, false);
      transposeProduct(product, M, P, M, p0, p1, image, yn);
    });
  }
  return Status::ok();
}

/// dst[m] = src[2 m] for m < n, reading nothing past src[2 n - 2]: a
/// stride-2 phase row of convDirect's planes.
using EvenColumnsFn = void (*)(const float *src, int64_t n, float *dst);

#if defined(__x86_64__) || defined(__i386__)
__attribute__((target("avx2,fma"))) void evenColumnsAvx2(const float *src, int64_t n, float *dst) {
  int64_t m = 0;
  // Whole vectors while their last odd neighbour is still one of the row's.
  for (; m + 8 < n; m += 8)
    _mm256_storeu_ps(dst + m,
                     evenLanes(_mm256_loadu_ps(src + 2 * m), _mm256_loadu_ps(src + 2 * m + 8)));
  for (; m < n; ++m)
    dst[m] = src[2 * m];
}
#endif

/// The vector evenColumns where the GEMM's variant has vectors, else null
/// (convDirect's scalar loop).
EvenColumnsFn pickEvenColumns() {
#if defined(__x86_64__) || defined(__i386__)
  if (kernelIsa() != KernelIsa::Generic)
    return evenColumnsAvx2;
#endif
  return nullptr;
}

/// Where convDirect keeps one image's zero-padded input, split by the
/// strides into phase planes per channel: phase (a, b) of channel ch, row r,
/// column c holds the padded input at row r*sh + a, column c*sw + b, at
/// (ch * phases + a * phaseCols + b) * planeStride + r * width + c (only the
/// phases some tap reads: a < min(kh, sh), b < min(kw, sw)). Output position
/// (oh, ow) is q = oh * width + ow, and its tap (i, j) reads phase
/// (i % sh, j % sw) at q + (i / sh) * width + j / sw: a contiguous run per
/// tap. The product covers Q = outH * width positions (the last
/// (kw - 1) / sw of each row dropped), rounded up to whole panels.
struct DirectLayout {
  int64_t sh, sw, phaseCols, phases, width, rows, q, qPanels, planeStride;
  /// The bytes of the planes a tile of kOffsetsTile columns reads per tap
  /// (sgemmOffsetsB's bBytesPerK): per channel, each phase's taps read one
  /// run from the tile's start to its last tap's end.
  int64_t bytesPerTap;

  explicit DirectLayout(const Geometry &g) {
    sh = g.s[1];
    sw = g.s[2];
    phaseCols = std::min(g.k[2], sw);
    phases = std::min(g.k[1], sh) * phaseCols;
    width = g.out[2] + (g.k[2] - 1) / sw;
    rows = g.out[1] + (g.k[1] - 1) / sh;
    q = g.out[1] * width;
    qPanels = (q + kGemmPanelWidth - 1) / kGemmPanelWidth * kGemmPanelWidth;
    // The last panel's reads reach past the plane's rows: they stay inside
    // the plane's own (zeroed) slack.
    int64_t reach = qPanels + (g.k[1] - 1) / sh * width + (g.k[2] - 1) / sw;
    planeStride = (std::max(rows * width, reach) + 15) / 16 * 16;
    int64_t tile = std::min(qPanels, kOffsetsTile), perChannel = 0;
    for (int64_t a = 0; a < std::min(g.k[1], sh); ++a)
      for (int64_t b = 0; b < phaseCols; ++b)
        perChannel += tile + (g.k[1] - 1 - a) / sh * width + (g.k[2] - 1 - b) / sw;
    bytesPerTap = perChannel * int64_t(sizeof(float)) / (g.k[1] * g.k[2]);
  }
  /// Offsets into the planes must fit sgemmOffsetsB's int32.
  bool fits(int64_t C) const { return C * phases * planeStride <= int64_t(INT32_MAX); }
  int64_t offset(int64_t c, int64_t i, int64_t j) const {
    return (c * phases + (i % sh) * phaseCols + j % sw) * planeStride + i / sh * width + j / sw;
  }
};

/// A group-1 2-D Conv at dilation 1 (convRunsDirect) over W packed as A
/// panels: each image's input is copied once into zero-padded phase planes,
/// the product reads its taps from them in place (sgemmOffsetsB, each tap an
/// offset: DirectLayout), and each output row is taken from the product's
/// rows with the epilogue (bias, residual, activation). No im2col: a 3x3
/// conv moves its input once, not 9 times.
Status convDirect(const KernelCall &call, const Geometry &g, const DirectLayout &d,
                  const float *x, const float *packedW, int64_t N, int64_t C, int64_t M,
                  const GemmEpilogue &epilogue, float *y) {
  const char *op = "Conv";
  const int64_t kh = g.k[1], kw = g.k[2], inH = g.in[1], inW = g.in[2];
  const int64_t outH = g.out[1], outW = g.out[2], P = outH * outW, K = C * kh * kw;
  const int64_t padTop = g.padBegin[1], padLeft = g.padBegin[2];
  const int64_t rowsM = (M + kGemmPanelHeight - 1) / kGemmPanelHeight * kGemmPanelHeight;
  const int64_t planesFloats = C * d.phases * d.planeStride;
  float *scratch;
  if (Status s = allocScratch(call, op, size_t(planesFloats + rowsM * d.qPanels + K), scratch);
      !s.isOk())
    return s;
  float *planes = scratch, *product = planes + planesFloats;
  auto *offsets = reinterpret_cast<int32_t *>(product + rowsM * d.qPanels);
  for (int64_t c = 0, k = 0; c < C; ++c)
    for (int64_t i = 0; i < kh; ++i)
      for (int64_t j = 0; j < kw; ++j)
        offsets[k++] = int32_t(d.offset(c, i, j));

  // Tasks: whole column tiles or whole row panels, whichever gives the
  // largest task the smaller share of the product (14x14: four tiles, the
  // last one half full, split 2:1.5 where 43 panels split 22:21).
  int64_t threads = call.pool ? call.pool->threads() : 1;
  int64_t tiles = (d.qPanels + kOffsetsTile - 1) / kOffsetsTile;
  int64_t panels = rowsM / kGemmPanelHeight;
  int64_t perTile = unitsPerTask(call, tiles, 2 * M * P * K);
  int64_t perPanel = unitsPerTask(call, panels, 2 * M * P * K);
  bool byTiles = rowsM * std::min(d.qPanels, perTile * kOffsetsTile) <=
                 std::min(rowsM, perPanel * kGemmPanelHeight) * d.qPanels;
  int64_t units = byTiles ? tiles : panels;
  int64_t perTask = byTiles ? perTile : perPanel;
  int64_t tasks = (units + perTask - 1) / perTask;

  EvenColumnsFn evenColumns = pickEvenColumns();
  for (int64_t n = 0; n < N; ++n) {
    const float *xn = x + n * C * inH * inW;
    auto copyPlane = [&](int64_t cp) {
      int64_t c = cp / d.phases, a = cp % d.phases / d.phaseCols, b = cp % d.phaseCols;
      float *plane = planes + cp * d.planeStride;
      const float *src = xn + c * inH * inW;
      // Phase columns cc read input column cc * sw + b - padLeft: those in
      // [lo, hi) are inside the input.
      int64_t lo = std::clamp<int64_t>((padLeft - b + d.sw - 1) / d.sw, 0, d.width);
      int64_t hi = std::clamp<int64_t>((inW + padLeft - b + d.sw - 1) / d.sw, lo, d.width);
      for (int64_t r = 0; r < d.rows; ++r) {
        float *row = plane + r * d.width;
        int64_t ir = r * d.sh + a - padTop;
        if (ir < 0 || ir >= inH) {
          std::fill(row, row + d.width, 0.f);
          continue;
        }
        const float *in = src + ir * inW;
        int64_t first = lo * d.sw + b - padLeft; // input column of phase column lo
        std::fill(row, row + lo, 0.f);
        if (d.sw == 1)
          std::copy(in + first, in + first + (hi - lo), row + lo);
        else if (d.sw == 2 && evenColumns)
          evenColumns(in + first, hi - lo, row + lo);
        else
          for (int64_t cc = lo; cc < hi; ++cc)
            row[cc] = in[first + (cc - lo) * d.sw];
        std::fill(row + hi, row + d.width, 0.f);
      }
      std::fill(plane + d.rows * d.width, plane + d.planeStride, 0.f);
    };
    parallelForRuns(call.pool, C * d.phases, d.planeStride, copyPlane);
    parallelFor(call.pool, tasks, [&](int64_t t) {
      int64_t u0 = t * perTask, u1 = std::min(units, u0 + perTask);
      if (byTiles)
        sgemmOffsetsB(M, std::min(d.qPanels, u1 * kOffsetsTile) - u0 * kOffsetsTile, K, packedW,
                      planes + u0 * kOffsetsTile, offsets, product + u0 * kOffsetsTile, d.qPanels,
                      d.bytesPerTap);
      else
        sgemmOffsetsB(std::min(M, u1 * kGemmPanelHeight) - u0 * kGemmPanelHeight, d.qPanels, K,
                      packedW + u0 * kGemmPanelHeight * K, planes, offsets,
                      product + u0 * kGemmPanelHeight * d.qPanels, d.qPanels, d.bytesPerTap);
    });
    float *yn = y + n * M * P;
    GemmEpilogue image = epilogue;
    image.residual = epilogue.residual ? epilogue.residual + n * M * P : nullptr;
    int64_t rowTasks = std::min<int64_t>(threads, std::max<int64_t>(1, M * P / (int64_t(1) << 14)));
    int64_t perRows = (M + rowTasks - 1) / rowTasks;
    parallelFor(call.pool, (M + perRows - 1) / perRows, [&](int64_t t) {
      for (int64_t m = t * perRows; m < std::min(M, (t + 1) * perRows); ++m) {
        float *out = yn + m * P;
        const float *from = product + m * d.qPanels;
        // Each output row from the product's padded row, finished on the way.
        for (int64_t oh = 0; oh < outH; ++oh)
          image.at(m, oh * outW)
              .applyFrom(from + oh * d.width, d.width, out + oh * outW, P, 1, outW);
      }
    });
  }
  return Status::ok();
}

} // namespace

Status convActivation(const KernelCall &call, GemmEpilogue &e, const std::string &attribute) {
  using A = GemmEpilogue::Activation;
  std::string name = call.attrs.getString(attribute, "none");
  std::vector<float> params;
  if (auto found = call.attrs.floats.find(attribute + "_params"); found != call.attrs.floats.end())
    params = found->second;
  size_t want = 0;
  if (name == "none") {
    e.activation = A::None;
  } else if (name == "relu") {
    e.activation = A::Relu;
  } else if (name == "clip") {
    e.activation = A::Clip;
    want = 2;
  } else if (name == "leaky_relu") {
    e.activation = A::LeakyRelu;
    want = 1;
  } else {
    return invalid("Conv", "unknown " + attribute + " '" + name + "'");
  }
  if (params.size() != want)
    return invalid("Conv", attribute + " '" + name + "' takes " + std::to_string(want) + " " +
                               attribute + "_params, got " + std::to_string(params.size()));
  if (e.activation == A::Clip) {
    e.lo = params[0];
    e.hi = params[1];
  } else if (e.activation == A::LeakyRelu) {
    e.alpha = params[0];
  }
  return Status::ok();
}

/// A depthwise conv (isDepthwiseConv) of N images: on blocks of 8 channels
/// where depthwiseRunsBlocked says so, else plane by plane; the planes (or
/// blocks) of every image are shared out over `pool`. `epilogue` holds the
/// activation; the bias and the residual (Y's shape) are given apart.
void depthwiseConv(ThreadPool *pool, const Geometry &g, int64_t N, int64_t C, int64_t M,
                   const float *x, const float *w, const float *bias, const float *residual,
                   const GemmEpilogue &epilogue, float *y) {
  int64_t inPlane = g.inSize(), P = g.outSize(), kSize = g.kernelSize();
  // A plane's work, for sharing planes out: its input is read (and copied
  // or transposed) once, its outputs each take the taps. By outputs alone,
  // a stride-2 layer onto 7x7 (576 planes of 14x14) stayed on one thread.
  const int64_t planeWork = std::max(P, inPlane);
#if defined(__x86_64__) || defined(__i386__)
  DepthwiseBlocks blocks{g, x, w, bias, residual, epilogue, C};
  DepthwiseBlockFn blockFn = pickDepthwiseBlock(blocks);
  if (blockFn && depthwiseRunsBlocked(g, C, M, y, residual, P * N * M)) {
    int64_t perImage = blocks.blocks();
    parallelForRuns(pool, N * perImage, DepthwiseBlocks::kLanes * planeWork,
                    [&](int64_t unit) { blockFn(blocks, unit / perImage, unit % perImage, y); });
    return;
  }
#endif
  DepthwisePlanes planes{x, w, bias, residual, g, epilogue, C, M, inPlane, P, kSize};
  DepthwisePlaneFn planeFn = pickDepthwisePlane(g);
  // Runs of planes per task: one task per plane made a 7x7 layer slower
  // on two threads than on one.
  parallelForRuns(pool, N * M, planeWork,
                  [&](int64_t plane) { planeFn(planes, plane, y + plane * P); });
}

/// Conv as a GEMM per image and group, W's rows as A (packed as A panels
/// when `prepacked`) and X's columns as B: read in place for a 1x1 conv
/// with few channels (pointwiseConvReadsInPlace), else packed a tile at a
/// time (the im2col columns for any other conv). `epilogue` holds the
/// activation; the bias (per output channel) and the residual (Y's shape)
/// are given apart.
Status convGemm(const KernelCall &call, const Geometry &g, int64_t N, int64_t C, int64_t M,
                int64_t group, const float *x, const float *w, const float *bias,
                const float *residual, const GemmEpilogue &epilogue, bool prepacked, float *y) {
  const char *op = "Conv";
  int64_t Cg = C / group, Mg = M / group;
  int64_t inPlane = g.inSize(), P = g.outSize(), K = Cg * g.kernelSize();
  bool pointwise = g.pointwise();

  if (pointwise && prepacked && pointwiseConvReadsInPlace(M, K) && sgemmRowsBAvailable()) {
    // Positions shared out in whole panels; each task multiplies its
    // columns of X where they lie, every row panel of W in turn.
    int64_t panels = (P + kGemmPanelWidth - 1) / kGemmPanelWidth;
    int64_t perTask = unitsPerTask(call, panels, 2 * M * P * K) * kGemmPanelWidth;
    int64_t tasks = (P + perTask - 1) / perTask;
    for (int64_t n = 0; n < N; ++n)
      parallelFor(call.pool, tasks, [&](int64_t t) {
        int64_t j0 = t * perTask, cols = std::min(P, j0 + perTask) - j0;
        GemmEpilogue e = epilogue;
        e.rowBias = bias;
        e.residual = residual ? residual + n * M * P + j0 : nullptr;
        e.ldr = P;
        sgemmRowsB(M, cols, K, w, x + n * C * inPlane + j0, inPlane, y + n * M * P + j0, P, &e);
      });
    return Status::ok();
  }

  // The output positions are shared out in whole panels, one contiguous
  // range per task; each task packs its own tiles into its own scratch and
  // multiplies them on its thread, so a task's packed columns stay in its
  // core's cache and a conv waits on its threads once per image and group.
  int64_t panels = (P + kGemmPanelWidth - 1) / kGemmPanelWidth;
  int64_t perTask = unitsPerTask(call, panels, 2 * Mg * P * K) * kGemmPanelWidth;
  int64_t tasks = (P + perTask - 1) / perTask;
  // Output positions per tile: every row panel of W streams over the packed
  // tile (K x tile floats), and W is read again for every tile. The tile is
  // at most 8 times W (W's extra reads stay under an eighth of the tile's),
  // between 64 KiB and 2 MiB: with few output channels (MobileNetV2's
  // projections) a small tile is read from L1/L2 by each row panel where a
  // 2 MiB one came from L3 every time (24x144 at 56x56: 0.31 -> 0.21 ms).
  const int64_t tileBudget = std::clamp<int64_t>(8 * Mg * K, int64_t(1) << 14, int64_t(1) << 19);
  int64_t tile = std::max<int64_t>(kGemmPanelWidth, tileBudget / std::max<int64_t>(K, 1) /
                                                        kGemmPanelWidth * kGemmPanelWidth);
  tile = std::min(tile, perTask);
  size_t tileFloats = packedGemmBSize(K, tile);
  float *scratch;
  if (Status s = allocScratch(call, op, tileFloats * size_t(tasks), scratch); !s.isOk())
    return s;

  for (int64_t n = 0; n < N; ++n)
    for (int64_t gi = 0; gi < group; ++gi) {
      const float *xg = x + (n * C + gi * Cg) * inPlane;
      const float *wg = w + gi * Mg * K;
      float *yg = y + (n * M + gi * Mg) * P;
      parallelFor(call.pool, tasks, [&](int64_t t) {
        float *packed = scratch + size_t(t) * tileFloats;
        int64_t end = std::min(P, (t + 1) * perTask);
        for (int64_t j0 = t * perTask; j0 < end; j0 += tile) {
          int64_t cols = std::min(tile, end - j0);
          if (pointwise)
            packGemmB(xg + j0, inPlane, false, K, cols, 1.f, packed);
          else
            im2colPacked(xg, Cg, g, j0, cols, packed);
          // Bias, residual and activation per block, inside the GEMM.
          GemmEpilogue tileEpilogue = epilogue;
          tileEpilogue.rowBias = bias ? bias + gi * Mg : nullptr;
          tileEpilogue.residual = residual ? residual + (n * M + gi * Mg) * P + j0 : nullptr;
          tileEpilogue.ldr = P;
          if (prepacked)
            sgemmPrepackedParallel(nullptr, Mg, cols, K, w, packed, yg + j0, P, false,
                                   &tileEpilogue);
          else
            sgemmPackedParallel(nullptr, Mg, cols, K, wg, K, false, packed, yg + j0, P, false,
                                &tileEpilogue);
        }
      });
    }
  return Status::ok();
}

Status conv(const KernelCall &call);

/// conv on call's pool, each thread on a contiguous run of the N images (X,
/// the residual and Y sliced along N), serially and on a scratch of its own.
Status convByImages(const KernelCall &call, int64_t N) {
  int64_t tasks = call.pool->threads();
  std::vector<Status> status(size_t(tasks), Status::ok());
  parallelFor(call.pool, tasks, [&](int64_t t) {
    int64_t n0 = N * t / tasks, n1 = N * (t + 1) / tasks;
    auto slice = [&](TensorView &v) {
      if (!v.data)
        return;
      int64_t perImage = v.numElements() / v.shape[0];
      v.data = static_cast<float *>(v.data) + n0 * perImage;
      v.shape[0] = n1 - n0;
    };
    std::vector<TensorView> inputs(call.inputs, call.inputs + call.numInputs);
    std::vector<TensorView> outputs(call.outputs, call.outputs + call.numOutputs);
    slice(inputs[0]);
    if (inputs.size() > 3)
      slice(inputs[3]);
    slice(outputs[0]);
    thread_local Scratch scratch;
    KernelCall part{call.attrs,     inputs.data(), inputs.size(), outputs.data(),
                    outputs.size(), scratch,       nullptr,       nullptr};
    status[size_t(t)] = conv(part);
  });
  for (const Status &s : status)
    if (!s.isOk())
      return s;
  return Status::ok();
}

Status conv(const KernelCall &call) {
  if (call.attrs.getInt("channels_last", 0) != 0)
    return convChannelsLast(call);
  const char *op = "Conv";
  const TensorView *X = call.input(0), *Wt = call.input(1), *B = call.input(2);
  // ortc.fused_conv's residual (Y's shape) and activation.
  const TensorView *Z = call.input(3);
  if (Status s = checkFloats(op, {{X, "input X"}, {Wt, "input W"}}); !s.isOk())
    return s;
  if (Status s = checkOptionalFloat(op, B, "input B"); !s.isOk())
    return s;
  if (Status s = checkOptionalFloat(op, Z, "residual"); !s.isOk())
    return s;
  GemmEpilogue epilogue;
  if (Status s = convActivation(call, epilogue); !s.isOk())
    return s;
  if (Status s = checkSpatialIO(op, call, *X); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  size_t rank = X->shape.size();
  if (Wt->shape.size() != rank)
    return invalid(op, "W " + shapeToString(Wt->shape) + " and X " + shapeToString(X->shape) +
                           " differ in rank");
  int64_t N = X->shape[0], C = X->shape[1], M = Wt->shape[0];
  int64_t group = call.attrs.getInt("group", 1);
  if (group < 1 || C % group != 0 || M % group != 0 || Wt->shape[1] * group != C)
    return invalid(op, "group " + std::to_string(group) + " does not fit X " +
                           shapeToString(X->shape) + " and W " + shapeToString(Wt->shape));
  std::vector<int64_t> inSpatial(X->shape.begin() + 2, X->shape.end());
  std::vector<int64_t> kernel(Wt->shape.begin() + 2, Wt->shape.end());
  if (call.attrs.has("kernel_shape") && call.attrs.getInts("kernel_shape") != kernel)
    return invalid(op, "kernel_shape " + listToString(call.attrs.getInts("kernel_shape")) +
                           " differs from W " + shapeToString(Wt->shape));
  if (B && B->shape != std::vector<int64_t>{M})
    return invalid(op, "B must be [" + std::to_string(M) + "], got " + shapeToString(B->shape));
  Geometry g;
  if (Status s = computeGeometry(op, call.attrs, inSpatial, kernel, true, false, g); !s.isOk())
    return s;
  if (Status s = checkOutput(op, Y, N, M, g); !s.isOk())
    return s;
  if (Z && Z->shape != Y.shape)
    return invalid(op, "the residual " + shapeToString(Z->shape) + " differs from Y " +
                           shapeToString(Y.shape));

  const float *x = static_cast<const float *>(X->data);
  const float *w = static_cast<const float *>(Wt->data);
  const float *bias = B ? static_cast<const float *>(B->data) : nullptr;
  float *y = static_cast<float *>(Y.data);
  int64_t P = g.outSize();
  if (N == 0 || M == 0 || P == 0)
    return Status::ok();

  // Constant weights the plan stores packed: packed_w = 1 as packGemmA of
  // W as [M, K] ("gemm_a"), 2 as packGemmB of W^T ("gemm_bt", the
  // transposed product), 4 and 5 as Winograd F(2x2, 3x3)'s and F(4x4,
  // 3x3)'s transformed W ("winograd_f2x3", "winograd_f4x3":
  // packConvWeightsWinograd).
  int64_t packedW = call.attrs.getInt("packed_w", 0);
  if (packedW < 0 || packedW > 5 || packedW == 3)
    return invalid(op, "packed_w must be 0, 1, 2, 4 or 5, got " + std::to_string(packedW));
  bool winograd = packedW == 4 || packedW == 5;
  if (winograd && !(g.rank == 2 && g.k[1] == 3 && g.k[2] == 3 && g.s[1] == 1 && g.s[2] == 1 &&
                    g.d[1] == 1 && g.d[2] == 1))
    return invalid(op, "packed_w " + std::to_string(packedW) +
                           " (Winograd) needs a 2-D 3x3 kernel at stride 1 and dilation 1, got W " +
                           shapeToString(Wt->shape));
  bool prepacked = packedW == 1;
  if (packedW != 0 && (group != 1 || isDepthwiseConv(C, group)))
    return invalid(op, "packed_w needs group 1, got group " + std::to_string(group));
  // A batch of at least as many images as threads: each thread takes whole
  // images, and every path below runs on them serially (no split of an
  // image's positions, no wait on the threads per image). Depthwise convs
  // already share out the planes of every image.
  if (call.pool && call.pool->threads() > 1 && N >= call.pool->threads() &&
      !isDepthwiseConv(C, group))
    return convByImages(call, N);
  const float *residual = Z ? static_cast<const float *>(Z->data) : nullptr;
  if (winograd) {
    GemmEpilogue full = epilogue;
    full.rowBias = bias;
    full.residual = residual;
    full.ldr = P;
    return convWinograd(call, g, packedW == 5 ? 4 : 2, x, w, N, C, M, full, y);
  }
  if (packedW == 2) {
    GemmEpilogue full = epilogue;
    full.rowBias = bias;
    full.residual = residual;
    full.ldr = P;
    return convTransposedGemm(call, g, x, w, N, C, M, full, y);
  }
  if (isDepthwiseConv(C, group)) {
    depthwiseConv(call.pool, g, N, C, M, x, w, bias, residual, epilogue, y);
    return Status::ok();
  }

#if defined(__x86_64__) || defined(__i386__)
  if (packedW == 0 && group == 1 && g.rank == 2 && kernelIsa() != KernelIsa::Generic &&
      convRunsNarrow(C, g.k[1], g.k[2], g.s[1], g.s[2], g.d[1], g.d[2], g.out[2])) {
    GemmEpilogue full = epilogue;
    full.rowBias = bias;
    full.residual = residual;
    full.ldr = P;
    return convNarrow(call, g, x, w, N, C, M, full, y);
  }
#endif

  if (prepacked && g.rank == 2 &&
      convRunsDirect(C, g.k[1], g.k[2], g.s[1], g.s[2], g.d[1], g.d[2], g.out[1], g.out[2])) {
    DirectLayout layout(g);
    if (layout.fits(C)) {
      GemmEpilogue full = epilogue;
      full.rowBias = bias;
      full.residual = residual;
      full.ldr = P;
      return convDirect(call, g, layout, x, w, N, C, M, full, y);
    }
  }

  return convGemm(call, g, N, C, M, group, x, w, bias, residual, epilogue, prepacked, y);
}

namespace {

/// ortc.depthwise_block channels-first (x [N, C, H, W], y [N, P, OH, OW]):
/// the 1x1 expansion, the depthwise conv and the 1x1 projection (with its
/// residual), either pointwise conv absent, image by image: each image's
/// expansion and depthwise output go into scratch that the next conv reads
/// while it is still in cache. Run as convs over the whole batch, the
/// tensors between them go to memory and back: MobileNetV2's 16 -> 96
/// expansion at 112x112 is 38 MB at batch 8. With at least as many images
/// as threads each thread takes whole images (as conv does), else each
/// image's convs share out their own work. The pointwise W come packed as A
/// panels (packed_w 1) or are packed here.
Status depthwiseBlockPlanar(const KernelCall &call) {
  const char *op = "DepthwiseBlock";
  DepthwiseBlockOperands b;
  if (Status s = checkDepthwiseBlock(op, call, /*channelsLast=*/false, 1,
                                     std::numeric_limits<int64_t>::max(), b);
      !s.isOk())
    return s;
  const TensorView *W1 = b.W1, *W3 = b.W3;
  int64_t N = b.N, C = b.C, H = b.H, W = b.W, E = b.E, Pc = b.P;
  const Geometry &g = b.g;
  int64_t packedW = call.attrs.getInt("packed_w", 0);
  int64_t inPlane = H * W, P = g.outSize();
  float *y = b.y;
  const float *residual = b.residual;
  if (N == 0 || Pc == 0 || P == 0)
    return Status::ok();

  int64_t threads = call.pool ? call.pool->threads() : 1;
  bool byImages = threads > 1 && N >= threads;
  int64_t tasks = byImages ? threads : 1;
  // Per task: the image's expansion, then its depthwise output when a
  // projection reads it.
  int64_t expanded = W1 ? roundUpTo16(E * inPlane) : 0, between = W3 ? roundUpTo16(E * P) : 0;
  auto packedSize = [&](const TensorView *Wp, int64_t M, int64_t K) {
    return Wp && packedW != 1 ? roundUpTo16(int64_t(packedGemmASize(M, K))) : int64_t(0);
  };
  int64_t packed1 = packedSize(W1, E, C), packed3 = packedSize(W3, Pc, E);
  float *work = nullptr;
  if (Status s =
          allocScratch(call, op, size_t(packed1 + packed3 + tasks * (expanded + between)), work);
      !s.isOk())
    return s;
  auto packed = [&](const TensorView *Wp, int64_t M, int64_t K, float *into) -> const float * {
    if (!Wp || packedW == 1)
      return Wp ? static_cast<const float *>(Wp->data) : nullptr;
    packGemmA(static_cast<const float *>(Wp->data), K, M, K, into);
    return into;
  };
  const float *w1 = packed(W1, E, C, work), *w3 = packed(W3, Pc, E, work + packed1);
  auto floats = [](const TensorView *t) {
    return t ? static_cast<const float *>(t->data) : nullptr;
  };
  const float *x = floats(b.X), *w2 = floats(b.W2);
  const float *b1 = floats(b.B1), *b2 = floats(b.B2), *b3 = floats(b.B3);
  // The pointwise convs as convs of their own: 1x1 windows over the input's
  // and the output's planes.
  StepAttributes none;
  Geometry before, after;
  if (Status s = computeGeometry(op, none, {H, W}, {1, 1}, true, false, before); !s.isOk())
    return s;
  if (Status s = computeGeometry(op, none, {g.out[1], g.out[2]}, {1, 1}, true, false, after);
      !s.isOk())
    return s;

  std::vector<Status> status(size_t(tasks), Status::ok());
  auto images = [&](int64_t t, ThreadPool *pool) {
    // The GEMMs borrow scratch of their own: `work` holds the planes.
    thread_local Scratch gemmScratch;
    KernelCall inner{call.attrs,      call.inputs, call.numInputs, call.outputs,
                     call.numOutputs, gemmScratch, pool,           nullptr};
    float *planes = work + packed1 + packed3 + t * (expanded + between);
    float *depthwisePlanes = planes + expanded;
    Status &s = status[size_t(t)];
    for (int64_t n = N * t / tasks; n < N * (t + 1) / tasks && s.isOk(); ++n) {
      const float *in = x + n * C * inPlane;
      if (W1) {
        s = convGemm(inner, before, 1, C, E, 1, in, w1, b1, nullptr, b.expand, true, planes);
        if (!s.isOk())
          break;
        in = planes;
      }
      float *yn = y + n * Pc * P;
      depthwiseConv(pool, g, 1, E, E, in, w2, b2, nullptr, b.depthwise, W3 ? depthwisePlanes : yn);
      if (W3)
        s = convGemm(inner, after, 1, E, Pc, 1, depthwisePlanes, w3, b3,
                     residual ? residual + n * Pc * P : nullptr, b.project, true, yn);
    }
  };
  if (byImages)
    parallelFor(call.pool, tasks, [&](int64_t t) { images(t, nullptr); });
  else
    images(0, call.pool);
  for (const Status &s : status)
    if (!s.isOk())
      return s;
  return Status::ok();
}

} // namespace

Status checkDepthwiseBlock(const char *op, const KernelCall &call, bool channelsLast,
                           int64_t packedAs, int64_t maxKernelRows, DepthwiseBlockOperands &b) {
  const TensorView *X = b.X = call.input(0), *W1 = b.W1 = call.input(1), *B1 = b.B1 = call.input(2);
  const TensorView *W2 = b.W2 = call.input(3), *B2 = b.B2 = call.input(4),
                   *W3 = b.W3 = call.input(5);
  const TensorView *B3 = b.B3 = call.input(6), *Z = b.Z = call.input(7);
  if (Status s = checkFloats(op, {{X, "input X"}, {W2, "the depthwise W"}}); !s.isOk())
    return s;
  for (auto [t, what] : {std::pair{W1, "the expansion's W"},
                         {B1, "the expansion's B"},
                         {B2, "the depthwise B"},
                         {W3, "the projection's W"},
                         {B3, "the projection's B"},
                         {Z, "residual"}})
    if (Status s = checkOptionalFloat(op, t, what); !s.isOk())
      return s;
  if (Status s = checkSingleOutput(op, call); !s.isOk())
    return s;
  if (Status s = convActivation(call, b.expand, "expand_activation"); !s.isOk())
    return s;
  if (Status s = convActivation(call, b.depthwise); !s.isOk())
    return s;
  if (Status s = convActivation(call, b.project, "project_activation"); !s.isOk())
    return s;
  if (X->shape.size() != 4 || W2->shape.size() != 4)
    return invalid(op, std::string("a depthwise block needs X ") +
                           (channelsLast ? "[N,H,W,C]" : "[N,C,H,W]") +
                           " and the depthwise W [E,1,KH,KW], got X " + shapeToString(X->shape) +
                           " and W " + shapeToString(W2->shape));
  const std::vector<int64_t> &x = X->shape;
  b.N = x[0];
  b.C = channelsLast ? x[3] : x[1];
  b.H = channelsLast ? x[1] : x[2];
  b.W = channelsLast ? x[2] : x[3];
  int64_t E = b.E = W2->shape[0], P = b.P = W3 ? W3->shape[0] : E;
  bool fits = W2->shape[1] == 1 &&
              (W1 ? W1->shape == std::vector<int64_t>{E, b.C, 1, 1} : b.C == E) &&
              (!W3 || W3->shape == std::vector<int64_t>{P, E, 1, 1});
  if (!fits)
    return invalid(op, "the weights (" + (W1 ? shapeToString(W1->shape) : std::string("none")) +
                           ", " + shapeToString(W2->shape) + ", " +
                           (W3 ? shapeToString(W3->shape) : std::string("none")) +
                           ") do not fit X " + shapeToString(x) +
                           " ([E,C,1,1], [E,1,KH,KW], [P,E,1,1])");
  for (auto [B, size] : {std::pair{B1, E}, {B2, E}, {B3, P}})
    if (B && B->shape != std::vector<int64_t>{size})
      return invalid(op, "a bias of " + shapeToString(B->shape) + " where [" +
                             std::to_string(size) + "] is due");
  if ((B1 && !W1) || ((B3 || Z) && !W3))
    return invalid(op, "a bias or residual for a pointwise conv the block does not have");
  std::vector<int64_t> kernel = {W2->shape[2], W2->shape[3]};
  if (call.attrs.has("kernel_shape") && call.attrs.getInts("kernel_shape") != kernel)
    return invalid(op, "kernel_shape " + shapeToString(call.attrs.getInts("kernel_shape")) +
                           " differs from W " + shapeToString(W2->shape));
  if (call.attrs.getInt("group", E) != E)
    return invalid(op, "the depthwise conv's group must be " + std::to_string(E) + ", got " +
                           std::to_string(call.attrs.getInt("group", E)));
  if (Status s = computeGeometry(op, call.attrs, {b.H, b.W}, kernel, true, false, b.g); !s.isOk())
    return s;
  const Geometry &g = b.g;
  if (g.k[1] > maxKernelRows)
    return invalid(op, "a depthwise block takes kernels of at most " +
                           std::to_string(maxKernelRows) + " rows, got " + std::to_string(g.k[1]));
  std::vector<int64_t> yShape = channelsLast ? std::vector<int64_t>{b.N, g.out[1], g.out[2], P}
                                             : std::vector<int64_t>{b.N, P, g.out[1], g.out[2]};
  const TensorView &Y = call.outputs[0];
  if (Status s = checkOutputShape(op, Y, yShape); !s.isOk())
    return s;
  if (Z && Z->shape != yShape)
    return invalid(op, "the residual " + shapeToString(Z->shape) + " differs from Y " +
                           shapeToString(yShape));
  int64_t packedW = call.attrs.getInt("packed_w", 0);
  if (packedW != 0 && packedW != packedAs)
    return invalid(op, "a depthwise block reads packed_w 0 or " + std::to_string(packedAs) +
                           ", got " + std::to_string(packedW));
  b.y = static_cast<float *>(Y.data);
  b.residual = Z ? static_cast<const float *>(Z->data) : nullptr;
  size_t yFloats = size_t(b.N * g.out[1] * g.out[2] * P);
  if (b.residual && b.residual < b.y + yFloats && b.y < b.residual + yFloats)
    return invalid(op, "the residual overlaps Y");
  return Status::ok();
}

Status depthwiseBlock(const KernelCall &call) {
  if (call.attrs.getInt("channels_last", 0) != 0)
    return depthwiseBlockChannelsLast(call);
  return depthwiseBlockPlanar(call);
}

//===----------------------------------------------------------------------===//
// Pools
//===----------------------------------------------------------------------===//

namespace {

enum class PoolKind { Max, Average, Lp };

/// A 2-D float MaxPool at dilation 1, separably: per output row, the
/// maximum of the window's input rows (those inside) into a row padded with
/// `lowest` on both sides, then per output column the maximum of the
/// window's columns of that row. Each value is taken as the pool loop takes
/// it, v > m ? v : m (a NaN is passed over), so the two agree.
struct MaxPoolRows {
  const Geometry &g;
  /// Floats of the padded row: every window's columns, 16 of slack.
  int64_t width() const {
    return std::max(g.padBegin[2] + g.in[2], (g.out[2] - 1) * g.s[2] + g.k[2]) + 16;
  }
  static bool applies(const Geometry &g) { return g.rank == 2 && g.d[1] == 1 && g.d[2] == 1; }
  void plane(const float *x, float *y, float *row) const;
};

#if defined(__x86_64__) || defined(__i386__)
/// m = max(v, m) over whole vectors of the n floats (max_ps(v, m) is v > m
/// ? v : m); returns how many it took.
ORTC_AVX2 int64_t maxIntoAvx2(float *m, const float *v, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(m + i, _mm256_max_ps(_mm256_loadu_ps(v + i), _mm256_loadu_ps(m + i)));
  return i;
}

/// y[o] = the maximum of row[o s + k], k < kw, for whole vectors of the n
/// outputs (s 1 or 2; row has 16 floats of slack past the last window);
/// returns how many it took.
ORTC_AVX2 int64_t windowMaxAvx2(const float *row, int64_t n, int64_t s, int64_t kw, float *y) {
  int64_t o = 0;
  for (; o + 8 <= n; o += 8) {
    const float *at = row + o * s;
    __m256 m = _mm256_set1_ps(std::numeric_limits<float>::lowest());
    for (int64_t k = 0; k < kw; ++k) {
      __m256 v = s == 1 ? _mm256_loadu_ps(at + k)
                        : evenLanes(_mm256_loadu_ps(at + k), _mm256_loadu_ps(at + k + 8));
      m = _mm256_max_ps(v, m);
    }
    _mm256_storeu_ps(y + o, m);
  }
  return o;
}
#endif

void MaxPoolRows::plane(const float *x, float *y, float *row) const {
  const int64_t inH = g.in[1], inW = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t sh = g.s[1], sw = g.s[2], kh = g.k[1], kw = g.k[2], left = g.padBegin[2];
  const float lowest = std::numeric_limits<float>::lowest();
  bool vectors = false;
#if defined(__x86_64__) || defined(__i386__)
  vectors = kernelIsa() != KernelIsa::Generic;
#endif
  std::fill(row, row + width(), lowest);
  for (int64_t oh = 0; oh < OH; ++oh) {
    int64_t first = std::max<int64_t>(oh * sh - g.padBegin[1], 0);
    int64_t last = std::min(oh * sh - g.padBegin[1] + kh, inH);
    float *in = row + left;
    std::fill(in, in + inW, lowest);
    for (int64_t ih = first; ih < last; ++ih) {
      const float *src = x + ih * inW;
      int64_t iw = 0;
#if defined(__x86_64__) || defined(__i386__)
      if (vectors)
        iw = maxIntoAvx2(in, src, inW);
#endif
      for (; iw < inW; ++iw)
        in[iw] = src[iw] > in[iw] ? src[iw] : in[iw];
    }
    float *out = y + oh * OW;
    int64_t ow = 0;
#if defined(__x86_64__) || defined(__i386__)
    if (vectors && sw <= 2)
      ow = windowMaxAvx2(row, OW, sw, kw, out);
#endif
    for (; ow < OW; ++ow) {
      float m = lowest;
      for (int64_t k = 0; k < kw; ++k)
        m = row[ow * sw + k] > m ? row[ow * sw + k] : m;
      out[ow] = m;
    }
  }
}

Status pool(const KernelCall &call, const char *op, PoolKind kind) {
  const TensorView *X = call.input(0);
  if (Status s = checkFloat(op, X, "input X"); !s.isOk())
    return s;
  if (Status s = checkSpatialIO(op, call, *X); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  if (!call.attrs.has("kernel_shape"))
    return invalid(op, "missing kernel_shape");
  std::vector<int64_t> kernel = call.attrs.getInts("kernel_shape");
  std::vector<int64_t> inSpatial(X->shape.begin() + 2, X->shape.end());
  int64_t storageOrder = call.attrs.getInt("storage_order", 0);
  if (storageOrder != 0 && storageOrder != 1)
    return invalid(op, "storage_order must be 0 or 1");
  Geometry g;
  if (Status s = computeGeometry(op, call.attrs, inSpatial, kernel, true, true, g); !s.isOk())
    return s;
  int64_t p = call.attrs.getInt("p", 2);
  if (kind == PoolKind::Lp && p < 1)
    return invalid(op, "p must be >= 1, got " + std::to_string(p));
  int64_t N = X->shape[0], C = X->shape[1];
  if (Status s = checkOutput(op, Y, N, C, g); !s.isOk())
    return s;
  bool includePad = call.attrs.getInt("count_include_pad", 0) != 0;

  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(Y.data);
  int64_t inPlane = g.inSize(), outPlane = g.outSize(), OW = g.out[2];
  if (N * C == 0 || outPlane == 0)
    return Status::ok();

  if (kind == PoolKind::Max && MaxPoolRows::applies(g)) {
    // The planes shared out, each task with a padded row of its own.
    MaxPoolRows rows{g};
    int64_t planes = N * C, threads = call.pool ? call.pool->threads() : 1;
    int64_t tasks = std::min(
        planes, std::max<int64_t>(1, std::min(threads, planes * inPlane / kMinElementsPerBlock)));
    float *scratch;
    if (Status s = allocScratch(call, op, size_t(tasks * rows.width()), scratch); !s.isOk())
      return s;
    parallelFor(call.pool, tasks, [&](int64_t t) {
      for (int64_t plane = planes * t / tasks; plane < planes * (t + 1) / tasks; ++plane)
        rows.plane(x + plane * inPlane, y + plane * outPlane, scratch + t * rows.width());
    });
    return Status::ok();
  }

  // Per output column: how many of its window's (dilated) taps fall inside
  // the input, or inside the padded input (which ends at the end pad: a
  // ceil_mode overhang is not counted, as in onnxruntime).
  auto extent = [&](int i, int64_t o, bool padded) {
    int64_t start = o * g.s[i] - g.padBegin[i], d = g.d[i];
    int64_t lo = padded ? -g.padBegin[i] : 0, hi = padded ? g.in[i] + g.padEnd[i] : g.in[i];
    // Taps j in [0, k) with lo <= start + j*d < hi.
    int64_t first = start >= lo ? 0 : (lo - start + d - 1) / d;
    int64_t last = hi - 1 - start < 0 ? -1 : std::min(g.k[i] - 1, (hi - 1 - start) / d);
    return std::max<int64_t>(last - first + 1, 0);
  };
  float *colCount;
  if (Status s = allocScratch(call, op, size_t(OW), colCount); !s.isOk())
    return s;
  for (int64_t ow = 0; ow < OW; ++ow)
    colCount[ow] = float(extent(2, ow, includePad));

  // One output row at a time: each kernel tap updates the row's columns whose
  // input column is inside, a clipped strided loop that vectorizes.
  int64_t s = g.s[2];
  for (int64_t plane = 0; plane < N * C; ++plane) {
    const float *xp = x + plane * inPlane;
    float *yp = y + plane * outPlane;
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        float *row = yp + (od * g.out[1] + oh) * OW;
        std::fill(row, row + OW,
                  kind == PoolKind::Max ? std::numeric_limits<float>::lowest() : 0.f);
        forEachTap(xp, g, od, oh,
                   [&](const float *in, int64_t, int64_t base, int64_t lo, int64_t hi) {
                     if (kind == PoolKind::Max) {
                       for (int64_t ow = lo; ow < hi; ++ow) {
                         float v = in[ow * s + base];
                         row[ow] = v > row[ow] ? v : row[ow];
                       }
                     } else if (kind == PoolKind::Lp) {
                       for (int64_t ow = lo; ow < hi; ++ow) {
                         float v = std::fabs(in[ow * s + base]);
                         row[ow] += p == 1 ? v : p == 2 ? v * v : std::pow(v, float(p));
                       }
                     } else {
                       for (int64_t ow = lo; ow < hi; ++ow)
                         row[ow] += in[ow * s + base];
                     }
                   });
        if (kind == PoolKind::Lp && p != 1)
          for (int64_t ow = 0; ow < OW; ++ow)
            row[ow] = p == 2 ? std::sqrt(row[ow]) : std::pow(row[ow], 1.f / float(p));
        if (kind == PoolKind::Average) {
          float dh = float(extent(0, od, includePad) * extent(1, oh, includePad));
          for (int64_t ow = 0; ow < OW; ++ow) {
            float count = dh * colCount[ow];
            row[ow] = count > 0.f ? row[ow] / count : 0.f;
          }
        }
      }
  }
  return Status::ok();
}

Status globalPool(const KernelCall &call, const char *op, PoolKind kind) {
  const TensorView *X = call.input(0);
  if (Status s = checkFloat(op, X, "input X"); !s.isOk())
    return s;
  if (Status s = checkSingleOutput(op, call); !s.isOk())
    return s;
  const TensorView &Y = call.outputs[0];
  if (X->shape.size() < 3)
    return invalid(op, "X must be [N,C,D1..Dn], got " + shapeToString(X->shape));
  std::vector<int64_t> expect(X->shape.size(), 1);
  expect[0] = X->shape[0];
  expect[1] = X->shape[1];
  if (Status s = checkOutputShape(op, Y, expect); !s.isOk())
    return s;
  int64_t planes = X->shape[0] * X->shape[1];
  int64_t size = product(X->shape, 2, X->shape.size());
  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(Y.data);
  for (int64_t p = 0; p < planes; ++p) {
    const float *xp = x + p * size;
    if (kind == PoolKind::Max) {
      float m = std::numeric_limits<float>::lowest();
      for (int64_t i = 0; i < size; ++i)
        m = xp[i] > m ? xp[i] : m;
      y[p] = m;
    } else {
      float sum = 0.f;
      for (int64_t i = 0; i < size; ++i)
        sum += xp[i];
      y[p] = size ? sum / float(size) : 0.f;
    }
  }
  return Status::ok();
}

} // namespace

namespace {

/// MaxPool with the Indices output, or on int8/uint8 data: a direct loop over
/// every window. The first maximum in scan order wins; an index counts every
/// element of X before it (batch and channel included), its spatial part in
/// row-major order (storage_order 0) or column-major order (1).
template <typename T>
void maxPoolDirect(const T *x, T *y, int64_t *indices, int64_t planes, const Geometry &g,
                   bool columnMajor) {
  int64_t inPlane = g.inSize(), outPlane = g.outSize();
  int lead = kMaxSpatial - g.rank;
  for (int64_t plane = 0; plane < planes; ++plane) {
    const T *xp = x + plane * inPlane;
    for (int64_t o = 0; o < outPlane; ++o) {
      int64_t od = o / (g.out[1] * g.out[2]), oh = o / g.out[2] % g.out[1], ow = o % g.out[2];
      T best = T();
      int64_t bestAt[kMaxSpatial] = {0, 0, 0};
      bool found = false;
      for (int64_t kd = 0; kd < g.k[0]; ++kd) {
        int64_t id = od * g.s[0] - g.padBegin[0] + kd * g.d[0];
        if (!inside(id, g.in[0]))
          continue;
        for (int64_t kh = 0; kh < g.k[1]; ++kh) {
          int64_t ih = oh * g.s[1] - g.padBegin[1] + kh * g.d[1];
          if (!inside(ih, g.in[1]))
            continue;
          for (int64_t kw = 0; kw < g.k[2]; ++kw) {
            int64_t iw = ow * g.s[2] - g.padBegin[2] + kw * g.d[2];
            if (!inside(iw, g.in[2]))
              continue;
            T v = xp[(id * g.in[1] + ih) * g.in[2] + iw];
            if (!found || v > best) {
              best = v;
              bestAt[0] = id;
              bestAt[1] = ih;
              bestAt[2] = iw;
              found = true;
            }
          }
        }
      }
      y[plane * outPlane + o] = best;
      if (!indices)
        continue;
      int64_t at = 0;
      if (!found) {
        at = -1;
      } else if (columnMajor) {
        int64_t stride = 1;
        for (int i = lead; i < kMaxSpatial; ++i) {
          at += bestAt[i] * stride;
          stride *= g.in[i];
        }
        at += plane * inPlane;
      } else {
        at = plane * inPlane + (bestAt[0] * g.in[1] + bestAt[1]) * g.in[2] + bestAt[2];
      }
      indices[plane * outPlane + o] = at;
    }
  }
}

Status maxPoolGeneral(const KernelCall &call) {
  const char *op = "MaxPool";
  const TensorView *X = call.input(0);
  if (!X)
    return invalid(op, "missing input X");
  if (X->type != ElementType::Float && X->type != ElementType::UInt8 &&
      X->type != ElementType::Int8)
    return invalid(op, "X must be float32, int8 or uint8, got " + elementTypeName(X->type));
  if (call.numOutputs < 1 || call.outputs[0].type != X->type)
    return invalid(op, "Y must have X's element type");
  const TensorView &Y = call.outputs[0];
  const TensorView *I = call.numOutputs > 1 && call.outputs[1].data ? &call.outputs[1] : nullptr;
  if (I && I->type != ElementType::Int64)
    return invalid(op, "Indices must be int64, got " + elementTypeName(I->type));
  size_t rank = X->shape.size();
  if (rank < 3 || rank > 2 + kMaxSpatial)
    return invalid(op, "X must be [N,C,D1..Dn] with 1 <= n <= 3, got " + shapeToString(X->shape));
  if (!call.attrs.has("kernel_shape"))
    return invalid(op, "missing kernel_shape");
  int64_t storageOrder = call.attrs.getInt("storage_order", 0);
  if (storageOrder != 0 && storageOrder != 1)
    return invalid(op, "storage_order must be 0 or 1");
  std::vector<int64_t> inSpatial(X->shape.begin() + 2, X->shape.end());
  Geometry g;
  if (Status s = computeGeometry(op, call.attrs, inSpatial, call.attrs.getInts("kernel_shape"),
                                 true, true, g);
      !s.isOk())
    return s;
  int64_t N = X->shape[0], C = X->shape[1];
  if (Status s = checkOutput(op, Y, N, C, g); !s.isOk())
    return s;
  if (I)
    if (Status s = checkOutput(op, *I, N, C, g); !s.isOk())
      return s;
  int64_t *idx = I ? static_cast<int64_t *>(I->data) : nullptr;
  bool columnMajor = storageOrder == 1;
  if (X->type == ElementType::Float)
    maxPoolDirect(static_cast<const float *>(X->data), static_cast<float *>(Y.data), idx, N * C, g,
                  columnMajor);
  else if (X->type == ElementType::UInt8)
    maxPoolDirect(static_cast<const uint8_t *>(X->data), static_cast<uint8_t *>(Y.data), idx, N * C,
                  g, columnMajor);
  else
    maxPoolDirect(static_cast<const int8_t *>(X->data), static_cast<int8_t *>(Y.data), idx, N * C,
                  g, columnMajor);
  return Status::ok();
}

} // namespace

Status maxPool(const KernelCall &call) {
  const TensorView *X = call.input(0);
  bool indices = call.numOutputs > 1 && call.outputs[1].data;
  if (indices || (X && X->type != ElementType::Float))
    return maxPoolGeneral(call);
  return pool(call, "MaxPool", PoolKind::Max);
}
Status averagePool(const KernelCall &call) { return pool(call, "AveragePool", PoolKind::Average); }
Status lpPool(const KernelCall &call) { return pool(call, "LpPool", PoolKind::Lp); }
Status globalAveragePool(const KernelCall &call) {
  return globalPool(call, "GlobalAveragePool", PoolKind::Average);
}
Status globalMaxPool(const KernelCall &call) {
  return globalPool(call, "GlobalMaxPool", PoolKind::Max);
}

} // namespace ortc::cpu::kernels
