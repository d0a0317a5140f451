#!/usr/bin/env python3
"""Parity with onnxruntime: the benchmark model families through ortc, output by output.

For each family (the MLP, CNN, transformer encoder and attention models of
test/e2e/cpu_models.py, and ResNet-50 from bench/models/resnet50.py), build the
model, compile it once with `ortc compile`, then for several random input sets
(seeds) and batch sizes run the EPContext model with `ortc run` and the original
model with onnxruntime's CPU EP, and record for every output:

  max |err|   max over elements of |ortc - ort|
  max rel     max over elements of |ortc - ort| / |ort|, over the elements with
              |ort| >= 1e-3 * max|ort| (elements near zero have no useful
              relative error; the absolute column covers them)

It prints the table and writes it to docs/parity.md (--report). Exit status 1
when a compile or run fails or an output's dtype/shape differs; the errors are
reported, not judged (the e2e_cpu ctest holds the tolerance).

Usage: .venv/bin/python bench/parity.py [--ortc build/tools/ortc/ortc]
           [--family NAME ...] [--seeds 3] [--batch 1 --batch 4] [--report [PATH]]
"""

import argparse
import datetime
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
sys.path.insert(0, os.path.join(ROOT, "bench", "models"))
import cpu_models  # noqa: E402
import resnet50  # noqa: E402

REPORT = os.path.join(ROOT, "docs", "parity.md")


def resnet50_family(rng):
    model = resnet50.build(batch="N", seed=0)
    return model, lambda batch, r: {
        resnet50.INPUT_NAME: r.standard_normal((batch, 3, 224, 224), dtype=np.float32)}


FAMILIES = dict(cpu_models.FAMILIES, resnet50=resnet50_family)
DESCRIPTIONS = {
    "mlp": "MatMul, Gemm, Add, Relu, Sigmoid, Tanh, Softmax",
    "cnn": "Conv (grouped, depthwise, dilated, strided), BN, Relu6, pools, Concat, Resize, GAP, Gemm",
    "transformer": "one encoder block: LayerNorm, attention pattern with mask, Gelu via Erf, ...",
    "attention": "scaled dot-product attention as exporters write it (fused by ortc)",
    "resnet50": "ResNet-50 v1.5, random weights (bench/models/resnet50.py)",
}


def run(cmd):
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {result.returncode}: "
                           f"{result.stderr.strip()}")


def errors(got, want):
    """(max abs, max rel) as the module docstring defines them."""
    if got.size == 0:
        return 0.0, 0.0
    if got.dtype.kind not in "fc":
        diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
        return float(diff.max()), 0.0
    g = got.astype(np.float64)
    w = want.astype(np.float64)
    diff = np.abs(g - w)
    scale = np.abs(w)
    significant = scale >= 1e-3 * scale.max()
    rel = float((diff[significant] / scale[significant]).max()) if significant.any() else 0.0
    return float(diff.max()), rel


def check_family(name, ortc, work, seeds, batches):
    model, feeds_for = FAMILIES[name](np.random.default_rng(1234))
    folder = os.path.join(work, name)
    os.makedirs(folder, exist_ok=True)
    model_path = os.path.join(folder, f"{name}.onnx")
    onnx.save(model, model_path)
    ctx_path = os.path.join(folder, f"{name}_ctx.onnx")
    run([ortc, "compile", model_path, "-o", ctx_path])
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    # per (output, batch): [max abs, max rel, dtype/shape text, mismatch]
    stats = {}
    for batch in batches:
        for seed in range(seeds):
            feeds = feeds_for(batch, np.random.default_rng(seed))
            expected = session.run(None, feeds)
            run_dir = os.path.join(folder, f"b{batch}_s{seed}")
            os.makedirs(run_dir, exist_ok=True)
            cmd = [ortc, "run", ctx_path, "--output-dir", run_dir]
            for input_name, array in feeds.items():
                path = os.path.join(run_dir, f"in_{input_name}.npy")
                np.save(path, array)
                cmd += ["--input", f"{input_name}={path}"]
            run(cmd)
            for output_name, want in zip(names, expected):
                got = np.load(os.path.join(run_dir, f"{output_name}.npy"))
                entry = stats.setdefault((output_name, batch),
                                         [0.0, 0.0, f"{want.dtype}{list(want.shape)}", False])
                if got.shape != want.shape or got.dtype != want.dtype:
                    entry[3] = True
                    continue
                abs_err, rel_err = errors(got, want)
                entry[0] = max(entry[0], abs_err)
                entry[1] = max(entry[1], rel_err)
    return [(name, out, batch, *entry) for (out, batch), entry in stats.items()]


def write_report(path, rows, failures, seeds, batches):
    lines = [
        "# Parity with onnxruntime on the benchmark model families",
        "",
        f"Generated by `bench/parity.py --report` on {datetime.date.today().isoformat()}: "
        f"onnxruntime {ort.__version__} (CPU EP) on the original model against "
        f"`ortc compile` + `ortc run` on the EPContext model, {seeds} random input sets "
        f"(seeds 0..{seeds - 1}, standard normal) per batch size {', '.join(map(str, batches))}. "
        "Each row is the worst over the input sets.",
        "",
        "- **max |err|**: max over elements of |ortc - ort|.",
        "- **max rel**: max over elements of |ortc - ort| / |ort|, over the elements with "
        "|ort| >= 1e-3 max|ort| (relative error near zero says nothing).",
        "",
        "Both run fp32 with different summation orders (ortc's packed GEMM and Conv, "
        "onnxruntime's MLAS) and different exp/erf/tanh implementations, so differences "
        "of a few ulps per accumulation are expected; the `e2e_cpu` ctest holds these "
        "families to rtol = atol = 1e-4.",
        "",
        "| family | what it covers |",
        "|---|---|",
    ]
    for name in sorted({r[0] for r in rows}):
        lines.append(f"| {name} | {DESCRIPTIONS.get(name, '')} |")
    lines += ["", "| family | output | batch | dtype/shape | max \\|err\\| | max rel |",
              "|---|---|---|---|---|---|"]
    for name, out, batch, abs_err, rel_err, shape, mismatch in rows:
        value = "dtype/shape differ" if mismatch else f"{abs_err:.2e} | {rel_err:.2e}"
        lines.append(f"| {name} | {out} | {batch} | {shape} | {value} |")
    if failures:
        lines += ["", "## Failures", ""] + [f"- {f}" for f in failures]
    with open(path, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--ortc", default=os.path.join(ROOT, "build", "tools", "ortc", "ortc"))
    ap.add_argument("--family", action="append", choices=sorted(FAMILIES))
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--batch", type=int, action="append")
    ap.add_argument("--work", default=None)
    ap.add_argument("--report", nargs="?", const=REPORT, default=None, metavar="PATH")
    args = ap.parse_args()
    families = args.family or ["mlp", "cnn", "transformer", "attention", "resnet50"]
    batches = args.batch or [1, 4]
    work = args.work or tempfile.mkdtemp(prefix="ortc_parity_")

    rows, failures = [], []
    for name in families:
        try:
            rows += check_family(name, args.ortc, work, args.seeds, batches)
        except Exception as error:  # report and go on to the next family
            failures.append(f"{name}: {error}")
    print(f"{'family':12} {'output':10} {'batch':>5} {'dtype/shape':24} {'max |err|':>10} "
          f"{'max rel':>10}")
    for name, out, batch, abs_err, rel_err, shape, mismatch in rows:
        tail = "dtype/shape differ" if mismatch else f"{abs_err:10.2e} {rel_err:10.2e}"
        print(f"{name:12} {out:10} {batch:5} {shape:24} {tail}")
    for f in failures:
        print(f"FAILED {f}")
    if args.report:
        write_report(args.report, rows, failures, args.seeds, batches)
        print(f"wrote {args.report}")
    bad = failures or any(r[6] for r in rows)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
