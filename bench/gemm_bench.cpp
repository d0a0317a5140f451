//===- gemm_bench.cpp - single-thread fp32 GEMM throughput vs. FMA peak ----===//
//
// Measures this core's fp32 FMA peak empirically (many independent 256-bit
// FMA chains, and 512-bit ones where AVX-512F is there: the faster counts,
// since some CPUs run 512-bit FMAs at twice the 256-bit rate) and the median GFLOP/s of sgemmPacked (B prepacked; packing is
// not timed) for each shape, single thread. Prints one JSON object per line
// so that bench/gemm.py can parse it:
//
//   {"kind":"peak","when":"before","isa":"avx2+fma","gflops":...}
//   {"kind":"gemm","M":..,"N":..,"K":..,"variant":"avx2","reps":..,
//    "median_ms":..,"median_gflops":..,"best_gflops":..,"on_cpu":..,
//    "pack_ms":..}
//   {"kind":"peak","when":"after",...}
//
// on_cpu is the timed thread's CPU time over wall time (1 on an idle core);
// pack_ms is packGemmB's median time for the shape's B.
//
// Usage: ortc-bench-gemm [--variant=V] [--min-time=SECONDS]
//                        [--no-peak | --peak-only] [MxNxK ...]
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/Gemm.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

using namespace ortc::cpu;

namespace {

// Times are this thread's CPU time: the machine is shared (builds, other
// benchmarks), and CPU time leaves out the slices other processes get, which
// would otherwise swamp the measurement. On an idle core it equals wall time,
// which is reported beside it.
double threadSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

double wallSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// 12 independent chains: more than FMA latency (4-5) times FMA ports (2), so
// the loop is throughput-bound. The result feeds the return value so nothing
// is dead.
constexpr int kChains = 12;

#if defined(__x86_64__)
__attribute__((target("avx2,fma"))) float fmaChainsAvx2(int64_t iters) {
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm256_set1_ps(0.001f * c);
  // Values stay bounded: x*0.999 + 0.0001 converges.
  const __m256 mul = _mm256_set1_ps(0.999f), add = _mm256_set1_ps(0.0001f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c)
      acc[c] = _mm256_fmadd_ps(acc[c], mul, add);
  }
  __m256 sum = acc[0];
  for (int c = 1; c < kChains; ++c)
    sum = _mm256_add_ps(sum, acc[c]);
  float out[8];
  _mm256_storeu_ps(out, sum);
  return out[0];
}

__attribute__((target("avx512f"))) float fmaChainsAvx512(int64_t iters) {
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = _mm512_set1_ps(0.001f * c);
  const __m512 mul = _mm512_set1_ps(0.999f), add = _mm512_set1_ps(0.0001f);
  for (int64_t i = 0; i < iters; ++i) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c)
      acc[c] = _mm512_fmadd_ps(acc[c], mul, add);
  }
  __m512 sum = acc[0];
  for (int c = 1; c < kChains; ++c)
    sum = _mm512_add_ps(sum, acc[c]);
  float out[16];
  _mm512_storeu_ps(out, sum);
  return out[0];
}
#endif

// Portable stand-in: 8-wide vector multiply-adds at the build's baseline ISA.
float fmaChainsPortable(int64_t iters) {
  typedef float v8 __attribute__((vector_size(32)));
  v8 acc[kChains];
  for (int c = 0; c < kChains; ++c)
    acc[c] = v8{} + 0.001f * c;
  v8 mul = v8{} + 0.999f, add = v8{} + 0.0001f;
  for (int64_t i = 0; i < iters; ++i)
    for (int c = 0; c < kChains; ++c)
      acc[c] = acc[c] * mul + add;
  v8 sum = acc[0];
  for (int c = 1; c < kChains; ++c)
    sum += acc[c];
  return sum[0];
}

/// Best of several timed runs of the FMA chains, in GFLOP/s (an FMA = 2 flops).
double measurePeakOf(float (*run)(int64_t), int lanes) {
  volatile float sink = 0;
  int64_t iters = 1 << 20;
  // Grow the loop until one run takes 0.1 s, then keep the best of 7.
  for (;;) {
    double start = threadSeconds();
    sink = sink + run(iters);
    if (threadSeconds() - start > 0.1)
      break;
    iters *= 2;
  }
  double best = 0;
  for (int t = 0; t < 7; ++t) {
    double start = threadSeconds();
    sink = sink + run(iters);
    double s = threadSeconds() - start;
    best = std::max(best, 2.0 * lanes * kChains * static_cast<double>(iters) / s * 1e-9);
  }
  return best;
}

/// The faster of the 256-bit and 512-bit chains, in GFLOP/s.
double measurePeak(const char **isa) {
  *isa = "portable";
  double best = 0;
#if defined(__x86_64__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    *isa = "avx2+fma";
    best = measurePeakOf(fmaChainsAvx2, 8);
    if (__builtin_cpu_supports("avx512f")) {
      double wide = measurePeakOf(fmaChainsAvx512, 16);
      if (wide > best * 1.1) {
        *isa = "avx512f";
        best = wide;
      }
    }
    return best;
  }
#endif
  return measurePeakOf(fmaChainsPortable, 8);
}

struct Shape {
  int64_t M, N, K;
};

void benchShape(const Shape &s, double minTime) {
  std::vector<float> A(s.M * s.K), B(s.K * s.N), C(s.M * s.N);
  uint32_t x = 12345;
  auto next = [&] {
    x = x * 1664525u + 1013904223u;
    return static_cast<float>(x >> 8) / 16777216.0f - 0.5f;
  };
  for (float &v : A)
    v = next();
  for (float &v : B)
    v = next();
  std::vector<float> packed(packedGemmBSize(s.K, s.N));
  // Packing is reported but not part of the GEMM time (constant B is packed
  // at compile time).
  std::vector<double> packTimes;
  for (int r = 0; r < 5; ++r) {
    double start = threadSeconds();
    packGemmB(B.data(), s.N, false, s.K, s.N, 1.0f, packed.data());
    packTimes.push_back(threadSeconds() - start);
  }
  std::sort(packTimes.begin(), packTimes.end());

  auto once = [&] {
    double start = threadSeconds();
    sgemmPacked(s.M, s.N, s.K, A.data(), s.K, false, packed.data(), C.data(), s.N, false);
    return threadSeconds() - start;
  };
  // Warm caches, page in C and the packing scratch, settle the clock.
  double first = once();
  for (double spent = first; spent < std::min(0.05, minTime);)
    spent += once();
  // Same policy as bench/gemm.py uses for onnxruntime: enough repetitions to
  // fill minTime, at least 5, at most 200; the median is reported.
  int reps = static_cast<int>(std::clamp(minTime / std::max(first, 1e-6), 5.0, 200.0));
  std::vector<double> times;
  double wallStart = wallSeconds(), cpuStart = threadSeconds();
  for (int r = 0; r < reps; ++r)
    times.push_back(once());
  // Share of the wall time this thread was on a CPU: near 1 on a quiet machine.
  double onCpu = (threadSeconds() - cpuStart) / (wallSeconds() - wallStart);
  std::sort(times.begin(), times.end());
  double median = times[times.size() / 2];
  double flops = 2.0 * s.M * s.N * s.K;
  std::printf("{\"kind\":\"gemm\",\"M\":%lld,\"N\":%lld,\"K\":%lld,\"variant\":\"%s\","
              "\"reps\":%d,\"median_ms\":%.4f,\"median_gflops\":%.2f,\"best_gflops\":%.2f,"
              "\"on_cpu\":%.3f,\"pack_ms\":%.4f}\n",
              static_cast<long long>(s.M), static_cast<long long>(s.N),
              static_cast<long long>(s.K), sgemmVariant(), reps, median * 1e3,
              flops / median * 1e-9, flops / times.front() * 1e-9, onCpu, packTimes[2] * 1e3);
  std::fflush(stdout);
}

bool parseShape(const char *text, Shape &s) {
  long long m, n, k;
  char tail;
  if (std::sscanf(text, "%lldx%lldx%lld%c", &m, &n, &k, &tail) != 3 || m <= 0 || n <= 0 ||
      k <= 0)
    return false;
  s = {m, n, k};
  return true;
}

} // namespace

int main(int argc, char **argv) {
  double minTime = 1.0;
  bool wantPeak = true, wantGemms = true;
  std::vector<Shape> shapes;
  for (int i = 1; i < argc; ++i) {
    const char *arg = argv[i];
    Shape s;
    if (std::strncmp(arg, "--variant=", 10) == 0) {
      if (!setSgemmVariant(arg + 10)) {
        std::fprintf(stderr, "ortc-bench-gemm: variant '%s' cannot run here\n", arg + 10);
        return 2;
      }
    } else if (std::strcmp(arg, "--no-peak") == 0) {
      wantPeak = false;
    } else if (std::strcmp(arg, "--peak-only") == 0) {
      wantGemms = false;
    } else if (std::strncmp(arg, "--min-time=", 11) == 0) {
      minTime = std::atof(arg + 11);
    } else if (parseShape(arg, s)) {
      shapes.push_back(s);
    } else {
      std::fprintf(stderr,
                   "usage: ortc-bench-gemm [--variant=generic|avx2|avx512] [--min-time=SECONDS] "
                   "[--no-peak | --peak-only] [MxNxK ...]\n");
      return 2;
    }
  }
  if (shapes.empty())
    // Square; transformer MLP (128 tokens, 768 <-> 3072); a 3x3 conv as an
    // im2col GEMM (56x56 pixels, 64 -> 64 channels, NHWC); a GEMV.
    shapes = {{1024, 1024, 1024}, {512, 512, 512},   {256, 1024, 1024}, {128, 3072, 768},
              {128, 768, 3072},   {3136, 64, 576},   {1, 4096, 4096}};

  // The peak before and after the shapes: the clock drifts with the other
  // core's load, and readers take the higher one.
  auto printPeak = [](const char *when) {
    const char *isa;
    double peak = measurePeak(&isa);
    std::printf("{\"kind\":\"peak\",\"when\":\"%s\",\"isa\":\"%s\",\"gflops\":%.2f}\n", when,
                isa, peak);
    std::fflush(stdout);
  };
  if (wantPeak)
    printPeak("before");
  if (wantGemms) {
    for (const Shape &s : shapes)
      benchShape(s, minTime);
    if (wantPeak)
      printPeak("after");
  }
  return 0;
}
