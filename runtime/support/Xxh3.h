//===- Xxh3.h - XXH3-64 at the widest vectors the CPU has -------*- C++ -*-===//
//
// Verifying a blob hashes every byte of it at load, so the hash runs at the
// speed of memory only with wide vectors: XXH3 built for SSE2 (what a
// portable x86-64 build gets) reaches 7.6 GB/s out of DRAM on an AVX-512
// Xeon, for AVX2 9.8 and AVX-512 10.9. The AVX2 and AVX-512 builds live in
// files of their own, compiled for those ISAs; xxh3() picks one once, by the
// features the CPU reports. Every build computes the same XXH3-64 value.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_SUPPORT_XXH3_H
#define ORTC_RUNTIME_SUPPORT_XXH3_H

#include <cstddef>
#include <cstdint>

namespace ortc {

/// XXH3-64 (seed 0) of `size` bytes at `data`.
uint64_t xxh3(const void *data, size_t size);

/// The ISA xxh3() uses on this CPU: "avx512", "avx2" or "portable".
const char *xxh3Isa();

namespace detail {
// One build of XXH3-64 each (Xxh3Variant.inc), behind xxh3().
uint64_t xxh3Portable(const void *data, size_t size);
uint64_t xxh3Avx2(const void *data, size_t size);
uint64_t xxh3Avx512(const void *data, size_t size);
} // namespace detail

} // namespace ortc

#endif // ORTC_RUNTIME_SUPPORT_XXH3_H
