#!/usr/bin/env bash
# README command 1: set up, build, compile the bundled example model for the
# CPU EP (and, where the build has the CUDA EP, for --ep=cuda,cpu too), run the
# compiled models with the runtime (the CUDA partition on the host emulation
# without a GPU), and compare with onnxruntime.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
ORTC="${ORTC_BUILD_DIR:-$ROOT/build}/tools/ortc/ortc"
MODEL="$ROOT/examples/tiny_mlp.onnx"
OUT="$ROOT/build/example"
"$ROOT/scripts/setup.sh"
"$ROOT/scripts/build.sh"
mkdir -p "$OUT"
echo "== ortc compile examples/tiny_mlp.onnx --emit=optimized-mlir   (after the generic passes)"
"$ORTC" compile "$MODEL" --emit=optimized-mlir --elide-constants-above=16
echo
echo "== ortc compile examples/tiny_mlp.onnx -o $OUT/tiny_mlp_ctx.onnx --report"
"$ORTC" compile "$MODEL" -o "$OUT/tiny_mlp_ctx.onnx" --report 2>&1
echo
# With the CUDA EP in the build (the toolkit was found), the same model for
# --ep=cuda,cpu too; without a GPU its partition runs on the host emulation
# (the kernels' CUDA C++ built for the host, cuBLAS plans on a host GEMM).
RUNS=("$OUT/tiny_mlp_ctx.onnx")
if "$ORTC" compile --help 2>&1 | grep -q '^  cuda_ep, cuda:'; then
  echo
  echo "== ortc compile examples/tiny_mlp.onnx --ep=cuda,cpu -o $OUT/tiny_mlp_cuda_ctx.onnx"
  "$ORTC" compile "$MODEL" --ep=cuda,cpu -o "$OUT/tiny_mlp_cuda_ctx.onnx" --quiet
  RUNS+=("$OUT/tiny_mlp_cuda_ctx.onnx")
fi
echo
echo "== ortc run on a batch of 4, compared with onnxruntime on the original model"
"$ROOT/.venv/bin/python" - "$MODEL" "$OUT" "$ORTC" "${RUNS[@]}" <<'PY'
import os, subprocess, sys
import numpy as np, onnx, onnxruntime as ort
model, out, ortc, *contexts = sys.argv[1:]
x = np.random.default_rng(0).standard_normal((4, 8), dtype=np.float32)
np.save(f"{out}/x.npy", x)
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
wants = session.run(None, {"x": x})
for ctx in contexts:
    compiled = onnx.load(ctx)
    onnx.checker.check_model(compiled)
    cuda = any(a.s.startswith(b"ortc_cuda") for n in compiled.graph.node for a in n.attribute
               if a.name == "source")
    # Without a GPU the CUDA partitions run on the host emulation.
    extra = ["--ep-option", "cuda:device=emulation"] if cuda else []
    run_dir = os.path.join(out, "cuda_run" if cuda else "cpu_run")
    subprocess.run([ortc, "run", ctx, "--input", f"x={out}/x.npy", "--output-dir", run_dir,
                    *extra], check=True)
    print(f"{os.path.basename(ctx)}: EPContext nodes:",
          [(n.name, n.op_type) for n in compiled.graph.node])
    for meta, want in zip(session.get_outputs(), wants):
        got = np.load(f"{run_dir}/{meta.name}.npy")
        err = float(np.max(np.abs(got - want)))
        print(f"  output {meta.name}: shape {list(got.shape)}, "
              f"max |ortc - onnxruntime| = {err:.2e}")
        assert np.allclose(got, want, rtol=1e-4, atol=1e-5), "mismatch with onnxruntime"
PY
