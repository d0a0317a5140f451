#!/usr/bin/env bash
# README command 1: set up, build, and compile the bundled example model.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ORTC="${ORTC_BUILD_DIR:-$ROOT/build}/tools/ortc/ortc"
MODEL="$ROOT/examples/tiny_mlp.onnx"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
echo "== ortc compile examples/tiny_mlp.onnx --emit=onnx-mlir   (the imported model)"
"$ORTC" compile "$MODEL" --emit=onnx-mlir --elide-constants-above=16
echo
echo "== ortc compile examples/tiny_mlp.onnx --emit=optimized-mlir   (after the generic passes)"
"$ORTC" compile "$MODEL" --emit=optimized-mlir --elide-constants-above=16
echo
echo "== partitioning over two test EPs (the real CPU and CUDA EPs are not in this build yet)"
"$ORTC" compile "$MODEL" --emit=partitioned-mlir --elide-constants-above=16 --report \
  --test-ep='gpu_ep@cuda:Gemm=100:MatMul=100' --test-ep='cpu_ep@cpu:*=20000' 2>&1
