//===- Xxh3.cpp - XXH3-64 dispatched on CPU features ----------------------===//

#include "runtime/support/Xxh3.h"

#define ORTC_XXH3_NAME xxh3Portable
#include "runtime/support/Xxh3Variant.inc"

namespace ortc {
namespace {

using Xxh3Fn = uint64_t (*)(const void *, size_t);

struct Xxh3Choice {
  Xxh3Fn fn;
  const char *isa;
};

Xxh3Choice chooseXxh3() {
#if defined(ORTC_XXH3_X86_VARIANTS)
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return {detail::xxh3Avx512, "avx512"};
  if (__builtin_cpu_supports("avx2"))
    return {detail::xxh3Avx2, "avx2"};
#endif
  return {detail::xxh3Portable, "portable"};
}

const Xxh3Choice &xxh3Choice() {
  static const Xxh3Choice choice = chooseXxh3();
  return choice;
}

} // namespace

uint64_t xxh3(const void *data, size_t size) { return xxh3Choice().fn(data, size); }

const char *xxh3Isa() { return xxh3Choice().isa; }

} // namespace ortc
