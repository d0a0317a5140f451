//===- HostEmulation.h - CUDA C++ kernels compiled for the host -*- C++ -*-===//
//
// Test-only. The emulated device (runtime/EmulatedDevice.cpp) compiles a
// partition's CUDA C++ with the host compiler, -std=c++17
// -DORTC_HOST_EMULATION -include HostEmulation.h, into a shared object it
// dlopens. This header turns the CUDA dialect into plain C++:
//  - qualifiers (__global__, __device__, ...) vanish; __shared__ is `static`:
//    the emulator runs one block at a time on one OS thread, so a static is
//    the block's shared memory (not zeroed between blocks, like a GPU's);
//  - dynamic shared memory is ORTC_DYNAMIC_SHARED(type, name), which the
//    emitter defines as `extern __shared__ type name[]` for NVRTC; here it
//    points at the launch's buffer (filled with 0xCD for each block);
//  - threadIdx, blockIdx, blockDim and gridDim read the state the emulator
//    writes before it runs (or resumes) a thread;
//  - barriers, shuffles and votes call the emulator through a hook table,
//    because the threads of a cooperative kernel are fibers it schedules;
//  - atomics are plain operations: every thread runs on one OS thread and
//    none switches inside an atomic.
//
// The contract with the emulator is the first part (namespace ortc_emu,
// `ortc_emu_bind`); EmulatedDevice.cpp includes it alone with
// ORTC_EMU_ABI_ONLY. Everything else has internal linkage: each kernel .so
// has its own state, and nothing but the kernels and the bind function is
// exported.
//
// Per kernel NAME the source provides, under #ifdef ORTC_HOST_EMULATION,
// `extern "C" void NAME__emulate(void **args)` (args as cuLaunchKernel's
// kernelParams) and `extern "C" const unsigned *NAME__params()` (their
// sizes; ORTC_EMU_ENTRY(NAME) writes both) and, when the kernel uses
// __syncthreads, shuffles, votes or __syncwarp,
// `extern "C" const int NAME__cooperative = 1;` (ORTC_EMU_COOPERATIVE(NAME)).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_EMULATION_HOSTEMULATION_H
#define ORTC_PROVIDERS_CUDA_EMULATION_HOSTEMULATION_H

namespace ortc_emu {

/// Bumped whenever Context or Hooks change.
constexpr unsigned kAbiVersion = 2;

struct Uint3 {
  unsigned x, y, z;
};

enum WarpOp : int {
  kSyncwarp,
  kShflIdx,
  kShflUp,
  kShflDown,
  kShflXor,
  kBallot,
  kAny,
  kAll,
  kWarpOpCount
};

/// Filled by the emulator; called by the kernel's threads.
struct Hooks {
  /// Blocks the calling thread until every live thread of its block arrived.
  void (*syncthreads)(void *emulator);
  /// A warp collective: `value` is this lane's operand (up to 8 bytes),
  /// `arg` the lane / delta / xor mask of a shuffle, `width` its segment.
  /// Returns this lane's result once every lane of `mask` arrived.
  unsigned long long (*warp)(void *emulator, int op, unsigned mask, unsigned long long value,
                             int arg, int width);
};

/// A kernel .so's state. The emulator writes the indices before it runs or
/// resumes a thread, and the rest before each launch.
struct Context {
  Uint3 threadIdx, blockIdx, blockDim, gridDim;
  void *dynamicShared;
  const Hooks *hooks;
  void *emulator;
};

/// `ortc_emu_bind`: the .so's Context, or null when its ABI version differs.
using BindFunction = Context *(*)(unsigned abiVersion);
/// `NAME__emulate`.
using EntryFunction = void (*)(void **args);
/// `NAME__params`: the number of parameters, then each one's size in bytes
/// (what a captured launch copies, as cuLaunchKernel does).
using ParamsFunction = const unsigned *(*)();

} // namespace ortc_emu

#ifndef ORTC_EMU_ABI_ONLY

// Everything a kernel may include, first, so that the macros below cannot
// reach into the standard headers.
#include <cfloat>
#include <climits>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <type_traits>
#include <utility>

namespace ortc_emu {
namespace {

Context context;

inline void *dynamicShared() { return context.dynamicShared; }

template <typename T> inline T warpOp(int op, unsigned mask, T value, int arg, int width) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value,
                "warp operations move at most 8 bytes");
  unsigned long long bits = 0;
  std::memcpy(&bits, &value, sizeof(T));
  bits = context.hooks->warp(context.emulator, op, mask, bits, arg, width);
  std::memcpy(&value, &bits, sizeof(T));
  return value;
}

template <typename To, typename From> inline To bitCast(From from) {
  static_assert(sizeof(To) == sizeof(From), "bit casts keep the size");
  To to;
  std::memcpy(&to, &from, sizeof(To));
  return to;
}

/// Calls `kernel` with its parameters read from cuLaunchKernel-style args.
template <typename... P, size_t... I>
inline void invokeWith(void (*kernel)(P...), void **args, std::index_sequence<I...>) {
  kernel(*static_cast<std::remove_cv_t<std::remove_reference_t<P>> *>(args[I])...);
}
template <typename... P> inline void invoke(void (*kernel)(P...), void **args) {
  invokeWith(kernel, args, std::index_sequence_for<P...>{});
}

template <typename... P> struct ParamSizes {
  static constexpr unsigned value[] = {
      unsigned(sizeof...(P)), unsigned(sizeof(std::remove_cv_t<std::remove_reference_t<P>>))...};
};
template <typename... P> inline const unsigned *paramSizes(void (*)(P...)) {
  return ParamSizes<P...>::value;
}

} // namespace
} // namespace ortc_emu

extern "C" __attribute__((visibility("default"), used)) ortc_emu::Context *
ortc_emu_bind(unsigned abiVersion) {
  return abiVersion == ortc_emu::kAbiVersion ? &ortc_emu::context : nullptr;
}

#define ORTC_EMU_ENTRY(name)                                                                       \
  extern "C" void name##__emulate(void **args) { ortc_emu::invoke(name, args); }                   \
  extern "C" const unsigned *name##__params() { return ortc_emu::paramSizes(name); }
#define ORTC_EMU_COOPERATIVE(name) extern "C" const int name##__cooperative = 1

// Qualifiers. __restrict__ is the host compiler's own; __noinline__ is left
// alone because the standard headers spell attributes with it.
#define __global__
#define __device__
#define __host__
#define __constant__
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(...)
#define __align__(n) __attribute__((aligned(n)))
#define __shared__ static

#define ORTC_DYNAMIC_SHARED(type, name) type *name = (type *)ortc_emu::dynamicShared()

// Built-in variables.
using uint3 = ortc_emu::Uint3;
struct dim3 {
  unsigned x, y, z;
  constexpr dim3(unsigned x = 1, unsigned y = 1, unsigned z = 1) : x(x), y(y), z(z) {}
  constexpr dim3(uint3 v) : x(v.x), y(v.y), z(v.z) {}
  constexpr operator uint3() const { return {x, y, z}; }
};
#define threadIdx (ortc_emu::context.threadIdx)
#define blockIdx (ortc_emu::context.blockIdx)
#define blockDim (ortc_emu::context.blockDim)
#define gridDim (ortc_emu::context.gridDim)
static constexpr int warpSize = 32;

// Vector types (CUDA's alignments).
struct __attribute__((aligned(8))) float2 {
  float x, y;
};
struct float3 {
  float x, y, z;
};
struct __attribute__((aligned(16))) float4 {
  float x, y, z, w;
};
struct __attribute__((aligned(8))) int2 {
  int x, y;
};
struct int3 {
  int x, y, z;
};
struct __attribute__((aligned(16))) int4 {
  int x, y, z, w;
};
struct __attribute__((aligned(8))) uint2 {
  unsigned x, y;
};
struct __attribute__((aligned(16))) uint4 {
  unsigned x, y, z, w;
};
struct __attribute__((aligned(16))) double2 {
  double x, y;
};
static inline float2 make_float2(float x, float y) { return {x, y}; }
static inline float3 make_float3(float x, float y, float z) { return {x, y, z}; }
static inline float4 make_float4(float x, float y, float z, float w) { return {x, y, z, w}; }
static inline int2 make_int2(int x, int y) { return {x, y}; }
static inline int3 make_int3(int x, int y, int z) { return {x, y, z}; }
static inline int4 make_int4(int x, int y, int z, int w) { return {x, y, z, w}; }
static inline uint2 make_uint2(unsigned x, unsigned y) { return {x, y}; }
static inline uint3 make_uint3(unsigned x, unsigned y, unsigned z) { return {x, y, z}; }
static inline uint4 make_uint4(unsigned x, unsigned y, unsigned z, unsigned w) {
  return {x, y, z, w};
}
static inline double2 make_double2(double x, double y) { return {x, y}; }

// Barriers and fences.
static inline void __syncthreads() {
  ortc_emu::context.hooks->syncthreads(ortc_emu::context.emulator);
}
static inline void __syncwarp(unsigned mask = 0xffffffffu) {
  ortc_emu::warpOp(ortc_emu::kSyncwarp, mask, 0, 0, 32);
}
static inline void __threadfence() {}
static inline void __threadfence_block() {}
static inline void __threadfence_system() {}

// Shuffles and votes.
template <typename T>
static inline T __shfl_sync(unsigned mask, T var, int srcLane, int width = warpSize) {
  return ortc_emu::warpOp(ortc_emu::kShflIdx, mask, var, srcLane, width);
}
template <typename T>
static inline T __shfl_up_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ortc_emu::warpOp(ortc_emu::kShflUp, mask, var, (int)delta, width);
}
template <typename T>
static inline T __shfl_down_sync(unsigned mask, T var, unsigned delta, int width = warpSize) {
  return ortc_emu::warpOp(ortc_emu::kShflDown, mask, var, (int)delta, width);
}
template <typename T>
static inline T __shfl_xor_sync(unsigned mask, T var, int laneMask, int width = warpSize) {
  return ortc_emu::warpOp(ortc_emu::kShflXor, mask, var, laneMask, width);
}
static inline unsigned __ballot_sync(unsigned mask, int predicate) {
  return ortc_emu::warpOp(ortc_emu::kBallot, mask, 0u + (predicate != 0), 0, warpSize);
}
static inline int __any_sync(unsigned mask, int predicate) {
  return ortc_emu::warpOp(ortc_emu::kAny, mask, 0u + (predicate != 0), 0, warpSize) != 0;
}
static inline int __all_sync(unsigned mask, int predicate) {
  return ortc_emu::warpOp(ortc_emu::kAll, mask, 0u + (predicate != 0), 0, warpSize) != 0;
}

// Atomics: plain read-modify-writes (see the file comment).
#define ORTC_EMU_ATOMIC(name, T, expr)                                                             \
  static inline T name(T *address, T val) {                                                        \
    T old = *address;                                                                              \
    *address = (expr);                                                                             \
    return old;                                                                                    \
  }
ORTC_EMU_ATOMIC(atomicAdd, int, (int)((unsigned)old + (unsigned)val))
ORTC_EMU_ATOMIC(atomicAdd, unsigned, old + val)
ORTC_EMU_ATOMIC(atomicAdd, unsigned long long, old + val)
ORTC_EMU_ATOMIC(atomicAdd, float, old + val)
ORTC_EMU_ATOMIC(atomicAdd, double, old + val)
ORTC_EMU_ATOMIC(atomicSub, int, (int)((unsigned)old - (unsigned)val))
ORTC_EMU_ATOMIC(atomicSub, unsigned, old - val)
ORTC_EMU_ATOMIC(atomicMax, int, old > val ? old : val)
ORTC_EMU_ATOMIC(atomicMax, unsigned, old > val ? old : val)
ORTC_EMU_ATOMIC(atomicMax, long long, old > val ? old : val)
ORTC_EMU_ATOMIC(atomicMax, unsigned long long, old > val ? old : val)
ORTC_EMU_ATOMIC(atomicMin, int, old < val ? old : val)
ORTC_EMU_ATOMIC(atomicMin, unsigned, old < val ? old : val)
ORTC_EMU_ATOMIC(atomicMin, long long, old < val ? old : val)
ORTC_EMU_ATOMIC(atomicMin, unsigned long long, old < val ? old : val)
ORTC_EMU_ATOMIC(atomicAnd, int, (old & val))
ORTC_EMU_ATOMIC(atomicAnd, unsigned, (old & val))
ORTC_EMU_ATOMIC(atomicAnd, unsigned long long, (old & val))
ORTC_EMU_ATOMIC(atomicOr, int, (old | val))
ORTC_EMU_ATOMIC(atomicOr, unsigned, (old | val))
ORTC_EMU_ATOMIC(atomicOr, unsigned long long, (old | val))
ORTC_EMU_ATOMIC(atomicXor, int, (old ^ val))
ORTC_EMU_ATOMIC(atomicXor, unsigned, (old ^ val))
ORTC_EMU_ATOMIC(atomicXor, unsigned long long, (old ^ val))
ORTC_EMU_ATOMIC(atomicExch, int, val)
ORTC_EMU_ATOMIC(atomicExch, unsigned, val)
ORTC_EMU_ATOMIC(atomicExch, unsigned long long, val)
ORTC_EMU_ATOMIC(atomicExch, float, val)
#undef ORTC_EMU_ATOMIC
#define ORTC_EMU_ATOMIC_CAS(T)                                                                     \
  static inline T atomicCAS(T *address, T compare, T val) {                                        \
    T old = *address;                                                                              \
    if (old == compare)                                                                            \
      *address = val;                                                                              \
    return old;                                                                                    \
  }
ORTC_EMU_ATOMIC_CAS(int)
ORTC_EMU_ATOMIC_CAS(unsigned)
ORTC_EMU_ATOMIC_CAS(unsigned long long)
ORTC_EMU_ATOMIC_CAS(unsigned short)
#undef ORTC_EMU_ATOMIC_CAS

// Loads and bits.
template <typename T> static inline T __ldg(const T *address) { return *address; }
static inline int __popc(unsigned x) { return __builtin_popcount(x); }
static inline int __popcll(unsigned long long x) { return __builtin_popcountll(x); }
static inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
static inline int __clzll(long long x) {
  return x == 0 ? 64 : __builtin_clzll((unsigned long long)x);
}
static inline int __ffs(int x) { return __builtin_ffs(x); }
static inline int __ffsll(long long x) { return __builtin_ffsll(x); }
static inline unsigned __brev(unsigned x) {
  unsigned r = 0;
  for (int i = 0; i < 32; ++i, x >>= 1)
    r = (r << 1) | (x & 1);
  return r;
}
static inline int __mulhi(int a, int b) { return (int)(((long long)a * b) >> 32); }
static inline unsigned __umulhi(unsigned a, unsigned b) {
  return (unsigned)(((unsigned long long)a * b) >> 32);
}
static inline int __float_as_int(float x) { return ortc_emu::bitCast<int>(x); }
static inline float __int_as_float(int x) { return ortc_emu::bitCast<float>(x); }
static inline unsigned __float_as_uint(float x) { return ortc_emu::bitCast<unsigned>(x); }
static inline float __uint_as_float(unsigned x) { return ortc_emu::bitCast<float>(x); }
static inline long long __double_as_longlong(double x) { return ortc_emu::bitCast<long long>(x); }
static inline double __longlong_as_double(long long x) { return ortc_emu::bitCast<double>(x); }

// Fast and rounded math: the host's accurate functions (tests compare with
// tolerances that cover the GPU's approximations).
static inline float __fdividef(float a, float b) { return a / b; }

// glibc declares (without exporting) its own __expf, __sinf, ...: these are
// macros so that they neither clash with those declarations nor call them.
namespace ortc_emu {
namespace {
inline float exp10(float x) { return std::pow(10.0f, x); }
inline void sincos(float x, float *s, float *c) {
  *s = std::sin(x);
  *c = std::cos(x);
}
} // namespace
} // namespace ortc_emu

#define __expf(x) std::exp((float)(x))
#define __exp10f(x) ortc_emu::exp10((float)(x))
#define __logf(x) std::log((float)(x))
#define __log2f(x) std::log2((float)(x))
#define __log10f(x) std::log10((float)(x))
#define __sinf(x) std::sin((float)(x))
#define __cosf(x) std::cos((float)(x))
#define __tanf(x) std::tan((float)(x))
#define __sincosf(x, s, c) ortc_emu::sincos((float)(x), (s), (c))
#define __powf(a, b) std::pow((float)(a), (float)(b))

static inline float __saturatef(float x) { return x > 0.0f ? (x < 1.0f ? x : 1.0f) : 0.0f; }
static inline float __fadd_rn(float a, float b) { return a + b; }
static inline float __fmul_rn(float a, float b) { return a * b; }
static inline float __fdiv_rn(float a, float b) { return a / b; }
static inline float __fmaf_rn(float a, float b, float c) { return std::fma(a, b, c); }
static inline float __frcp_rn(float x) { return 1.0f / x; }
static inline float __fsqrt_rn(float x) { return std::sqrt(x); }
static inline float rsqrtf(float x) { return 1.0f / std::sqrt(x); }
static inline double rsqrt(double x) { return 1.0 / std::sqrt(x); }

// CUDA's min and max overloads: non-templates, so they win over std::min and
// std::max for these types even under `using namespace std`.
#define ORTC_EMU_MINMAX(A, B, R)                                                                   \
  static inline R min(A a, B b) { return (R)a < (R)b ? (R)a : (R)b; }                              \
  static inline R max(A a, B b) { return (R)a > (R)b ? (R)a : (R)b; }
ORTC_EMU_MINMAX(int, int, int)
ORTC_EMU_MINMAX(unsigned, unsigned, unsigned)
ORTC_EMU_MINMAX(int, unsigned, unsigned)
ORTC_EMU_MINMAX(unsigned, int, unsigned)
ORTC_EMU_MINMAX(long, long, long)
ORTC_EMU_MINMAX(unsigned long, unsigned long, unsigned long)
ORTC_EMU_MINMAX(long, unsigned long, unsigned long)
ORTC_EMU_MINMAX(unsigned long, long, unsigned long)
ORTC_EMU_MINMAX(long long, long long, long long)
ORTC_EMU_MINMAX(unsigned long long, unsigned long long, unsigned long long)
ORTC_EMU_MINMAX(long long, unsigned long long, unsigned long long)
ORTC_EMU_MINMAX(unsigned long long, long long, unsigned long long)
#undef ORTC_EMU_MINMAX
static inline float min(float a, float b) { return std::fmin(a, b); }
static inline float max(float a, float b) { return std::fmax(a, b); }
static inline double min(double a, double b) { return std::fmin(a, b); }
static inline double max(double a, double b) { return std::fmax(a, b); }
static inline double min(float a, double b) { return std::fmin((double)a, b); }
static inline double max(float a, double b) { return std::fmax((double)a, b); }
static inline double min(double a, float b) { return std::fmin(a, (double)b); }
static inline double max(double a, float b) { return std::fmax(a, (double)b); }

#endif // ORTC_EMU_ABI_ONLY

#endif // ORTC_PROVIDERS_CUDA_EMULATION_HOSTEMULATION_H
