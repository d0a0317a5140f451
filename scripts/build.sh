#!/usr/bin/env bash
# Configures and builds ortc in build/ (Ninja, ccache when present).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${ORTC_BUILD_DIR:-$ROOT/build}"
if [[ ! -f "$BUILD/build.ninja" ]]; then
  cmake -G Ninja -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
fi
# 2 cores and MLIR translation units that need ~1.5 GB each: two jobs.
cmake --build "$BUILD" -- -j"${ORTC_JOBS:-$(nproc)}"
