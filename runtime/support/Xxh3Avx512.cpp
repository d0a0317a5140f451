// XXH3-64 for AVX-512 (compiled with -mavx512f; see Xxh3.h).
#define ORTC_XXH3_NAME xxh3Avx512
#include "runtime/support/Xxh3Variant.inc"
