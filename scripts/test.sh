#!/usr/bin/env bash
# README command 2: set up, build, and run every test (lit + GoogleTest via ctest).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
BUILD="${ORTC_BUILD_DIR:-$ROOT/build}"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
# The generated dialect must match the pinned onnx schemas.
"$ROOT/.venv/bin/python" "$ROOT/utils/gen_onnx_dialect.py" --check
cd "$BUILD"
ctest --output-on-failure
