#!/usr/bin/env bash
# Configures and builds ortc in build/ (Ninja, ccache when present).
# ORTC_BUILD_DIR picks another folder; ORTC_SANITIZER=address|thread makes a
# sanitizer build there with clang-22 (address also builds the fuzz targets).
# ORTC_BUILD_TARGETS builds only those targets; ORTC_CMAKE_ARGS adds -D
# settings to the configuration.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${ORTC_BUILD_DIR:-$ROOT/build}"
SANITIZER="${ORTC_SANITIZER:-}"
# One cache for every clone of the tree: paths under the root are hashed
# relative to it, and the compiler's working folder is left out of the hash.
export CCACHE_BASEDIR="$ROOT"
export CCACHE_NOHASHDIR=1
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-12G}"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  config=(-DCMAKE_BUILD_TYPE=Release)
  if [[ -n "$SANITIZER" ]]; then
    # Conformance on a sample: the cases of four letters, about a sixth.
    config+=(-DCMAKE_C_COMPILER=clang-22 -DCMAKE_CXX_COMPILER=clang++-22
             -DORTC_SANITIZER="$SANITIZER" "-DORTC_CONFORMANCE_FILTER=^test_(b|g|m|t)")
    [[ "$SANITIZER" == address ]] && config+=(-DORTC_FUZZ=ON)
  fi
  cmake -G Ninja -S "$ROOT" -B "$BUILD" "${config[@]}"
fi
# Extra configuration (ORTC_CMAKE_ARGS) applies to a configured folder too.
if [[ -n "${ORTC_CMAKE_ARGS:-}" ]]; then
  read -r -a extra <<< "$ORTC_CMAKE_ARGS"
  cmake "$BUILD" "${extra[@]}" > /dev/null
fi
# Only some targets (ORTC_BUILD_TARGETS, space-separated), or all of them.
targets=()
for target in ${ORTC_BUILD_TARGETS:-}; do
  targets+=(--target "$target")
done
# 2 cores and MLIR translation units that need ~1.5 GB each: two jobs.
cmake --build "$BUILD" "${targets[@]}" -- -j"${ORTC_JOBS:-$(nproc)}"
