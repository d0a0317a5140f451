#!/usr/bin/env bash
# README command 1: set up, build, compile the bundled example model for the
# CPU EP, run the compiled model with the runtime, and compare with onnxruntime.
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
echo "== ortc run on a batch of 4, compared with onnxruntime on the original model"
"$ROOT/.venv/bin/python" - "$MODEL" "$OUT" "$ORTC" <<'PY'
import subprocess, sys
import numpy as np, onnx, onnxruntime as ort
model, out, ortc = sys.argv[1:]
x = np.random.default_rng(0).standard_normal((4, 8), dtype=np.float32)
np.save(f"{out}/x.npy", x)
subprocess.run([ortc, "run", f"{out}/tiny_mlp_ctx.onnx", "--input", f"x={out}/x.npy",
                "--output-dir", out], check=True)
compiled = onnx.load(f"{out}/tiny_mlp_ctx.onnx")
onnx.checker.check_model(compiled)
print("EPContext nodes:", [(n.name, n.op_type) for n in compiled.graph.node])
session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
for meta, want in zip(session.get_outputs(), session.run(None, {"x": x})):
    got = np.load(f"{out}/{meta.name}.npy")
    err = float(np.max(np.abs(got - want)))
    print(f"output {meta.name}: shape {list(got.shape)}, max |ortc - onnxruntime| = {err:.2e}")
    assert np.allclose(got, want, rtol=1e-4, atol=1e-5), "mismatch with onnxruntime"
PY
