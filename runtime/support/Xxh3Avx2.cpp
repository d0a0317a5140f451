// XXH3-64 for AVX2 (compiled with -mavx2; see Xxh3.h).
#define ORTC_XXH3_NAME xxh3Avx2
#include "runtime/support/Xxh3Variant.inc"
