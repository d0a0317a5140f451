#!/usr/bin/env python3
"""Import benchmark: time and peak RSS of `ortc compile --emit=onnx-mlir` on a
generated model with >= 200 MB of fp32 initializers, stored inline and as
external data. Target (issue 2): peak RSS below 1.5x the initializer bytes.

Usage: .venv/bin/python bench/import_large.py [--ortc build/tools/ortc/ortc]
                                              [--layers 9] [--width 2560]
Prints a table and writes it to docs/perf-import.md.
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def build_model(layers, width):
    # Imported here: the measuring process must stay small, because a child's
    # ru_maxrss starts from the parent's resident set at fork.
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(0)
    inits, nodes = [], []
    prev = "x"
    for i in range(layers):
        w = rng.standard_normal((width, width), dtype=np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"h{i}"], name=f"fc{i}"))
        nodes.append(helper.make_node("Relu", [f"h{i}"], [f"a{i}"], name=f"relu{i}"))
        prev = f"a{i}"
    nodes.append(helper.make_node("Identity", [prev], ["y"], name="out"))
    graph = helper.make_graph(
        nodes, "large_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", width])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model, layers * width * width * 4


def generate(tmp, layers, width):
    import onnx

    model, _ = build_model(layers, width)
    for sub in ("inline", "external"):
        os.makedirs(os.path.join(tmp, sub), exist_ok=True)
    onnx.save(model, os.path.join(tmp, "inline", "model.onnx"))
    onnx.save(model, os.path.join(tmp, "external", "model.onnx"), save_as_external_data=True,
              all_tensors_to_one_file=True, location="weights.bin", size_threshold=0)


def run_measured(cmd):
    """Runs cmd; returns (seconds, peak RSS bytes) of that child alone."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.perf_counter() - start
    err = proc.stderr.read().decode()
    proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({code}): {err}")
    return elapsed, usage.ru_maxrss * 1024


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ortc", default=os.path.join(ROOT, "build", "tools", "ortc", "ortc"))
    ap.add_argument("--layers", type=int, default=9)
    ap.add_argument("--width", type=int, default=2560)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "perf-import.md"))
    ap.add_argument("--generate", metavar="DIR", help=argparse.SUPPRESS)
    opts = ap.parse_args()

    if opts.generate:
        generate(opts.generate, opts.layers, opts.width)
        return 0

    init_bytes = opts.layers * opts.width * opts.width * 4
    with tempfile.TemporaryDirectory(prefix="ortc-bench-") as tmp:
        subprocess.run([sys.executable, __file__, "--generate", tmp, "--layers",
                        str(opts.layers), "--width", str(opts.width)], check=True)
        inline = os.path.join(tmp, "inline", "model.onnx")
        external = os.path.join(tmp, "external", "model.onnx")
        tiny = os.path.join(ROOT, "examples", "tiny_mlp.onnx")

        rows = []
        for label, path in [("tiny_mlp (baseline: tool + libMLIR)", tiny),
                            ("inline initializers", inline),
                            ("external data (one file)", external)]:
            out = os.path.join(tmp, "out.mlir")
            cmd = [opts.ortc, "compile", path, "--emit=onnx-mlir", "-o", out]
            runs = [run_measured(cmd) for _ in range(opts.repeat)]
            secs = sorted(r[0] for r in runs)[len(runs) // 2]
            rss = max(r[1] for r in runs)
            size = os.path.getsize(path)
            rows.append((label, size, secs, rss))

    table = ["| model | file bytes | import time (median) | peak RSS | peak RSS / initializer bytes |",
             "|---|---:|---:|---:|---:|"]
    for label, size, secs, rss in rows:
        ratio = rss / init_bytes
        table.append(f"| {label} | {size / 2**20:.1f} MiB | {secs:.3f} s | "
                     f"{rss / 2**20:.1f} MiB | {ratio:.2f}x |")
    worst = max(r[3] for r in rows[1:]) / init_bytes
    verdict = "PASS" if worst < 1.5 else "FAIL"
    header = [
        "# Import benchmark",
        "",
        "Generated by `bench/import_large.py`: `ortc compile MODEL --emit=onnx-mlir -o out.mlir`",
        f"on an MLP of {opts.layers} MatMul layers of {opts.width}x{opts.width} fp32 "
        f"({init_bytes / 2**20:.1f} MiB of initializers), median of {opts.repeat} runs; peak RSS is",
        "the child's own `ru_maxrss`. Target: peak RSS below 1.5x the initializer bytes.",
        f"Machine: {platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}.",
        "",
    ]
    footer = ["", f"Worst ratio over the large models: {worst:.2f}x ({verdict}; target < 1.5x).", ""]
    text = "\n".join(header + table + footer)
    print(text)
    with open(opts.out, "w") as f:
        f.write(text)
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
