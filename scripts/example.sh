#!/usr/bin/env bash
# README command 1: set up, build, and compile the bundled example model.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
echo "== ortc compile examples/tiny_mlp.onnx --emit=onnx-mlir"
"${ORTC_BUILD_DIR:-$ROOT/build}/tools/ortc/ortc" compile "$ROOT/examples/tiny_mlp.onnx" --emit=onnx-mlir
