#!/usr/bin/env python3
"""How `ortc compile`'s time grows with the size of the graph (issue 16).

  .venv/bin/python bench/compile_scaling.py            # the table, docs/compile-scaling.md
  .venv/bin/python bench/compile_scaling.py --quick    # the smaller sizes only, nothing written
  .venv-bench/bin/python bench/compile_scaling.py      # the same, plus the chart (matplotlib)

Three families of models, made here with onnx.helper:
  relu chain   N Relu nodes in a chain on a [4] tensor: the elementwise
               fusion and the kernels it makes (all alike);
  distinct     N/2 times Add(a constant of its own) then Tanh, on [4]: every
               kernel has a body of its own, so nothing is compiled once for
               two steps (the cost of code generation per node);
  blocks       B repeats of MatMul(x, W_i) + b_i -> Tanh on [1, 64] (3 nodes
               a block, each block its own weights): BERT-like repetition.
Each is compiled once per size, best of 5 under 0.5 s and of 3 under 2 s
(`ortc compile --report=json`); the table gives
the wall time, the codegen stage's share and the time per node, which should
stay flat as the graph grows. Run it on a quiet machine: it times one compile
per size.
"""
import argparse
import datetime
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ORTC = os.path.join(ROOT, "build", "tools", "ortc", "ortc")
PAGE = os.path.join(ROOT, "docs", "compile-scaling.md")
CHART = os.path.join(ROOT, "docs", "compile_scaling.png")

FULL = {
    "relu chain": [1000, 2000, 4000, 8000, 16000, 32000, 64000],
    "distinct": [1000, 2000, 4000, 8000, 16000],
    "blocks": [250, 500, 1000, 2000, 4000, 8000],
}
QUICK = {"relu chain": [1000, 4000, 16000], "distinct": [1000, 4000], "blocks": [250, 1000]}


def relu_chain(n):
    nodes, prev = [], "x"
    for i in range(n):
        nodes.append(helper.make_node("Relu", [prev], [f"t{i}"], name=f"relu{i}"))
        prev = f"t{i}"
    return nodes, [], [4], prev


def distinct_chain(n):
    nodes, inits, prev = [], [], "x"
    for i in range(n):
        if i % 2 == 0:
            inits.append(numpy_helper.from_array(np.array([1e-3 * i], np.float32), f"c{i}"))
            nodes.append(helper.make_node("Add", [prev, f"c{i}"], [f"t{i}"], name=f"add{i}"))
        else:
            nodes.append(helper.make_node("Tanh", [prev], [f"t{i}"], name=f"tanh{i}"))
        prev = f"t{i}"
    return nodes, inits, [4], prev


def blocks(b):
    rng = np.random.default_rng(0)
    nodes, inits, prev = [], [], "x"
    for i in range(b):
        inits.append(numpy_helper.from_array(
            (rng.standard_normal((64, 64)) * 0.1).astype(np.float32), f"w{i}"))
        inits.append(numpy_helper.from_array(
            (rng.standard_normal(64) * 0.1).astype(np.float32), f"b{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"], name=f"matmul{i}"))
        nodes.append(helper.make_node("Add", [f"m{i}", f"b{i}"], [f"a{i}"], name=f"add{i}"))
        nodes.append(helper.make_node("Tanh", [f"a{i}"], [f"t{i}"], name=f"tanh{i}"))
        prev = f"t{i}"
    return nodes, inits, [1, 64], prev


FAMILIES = {"relu chain": relu_chain, "distinct": distinct_chain, "blocks": blocks}


def write_model(family, size, path):
    nodes, inits, shape, out = FAMILIES[family](size)
    graph = helper.make_graph(nodes, family.replace(" ", "_"),
                              [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
                              [helper.make_tensor_value_info(out, TensorProto.FLOAT, shape)],
                              inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.save(model, path)
    return len(nodes)


def compile_once(model, out):
    """(wall seconds, the report) of one `ortc compile`."""
    start = time.perf_counter()
    proc = subprocess.run([ORTC, "compile", model, "-o", out, "--report=json"],
                          capture_output=True, text=True)
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"ortc compile {model} failed: {proc.stderr.strip()}")
    return wall, json.loads(proc.stdout)


def fixed_cost(workdir):
    """Seconds a compile takes whatever the graph (a one-node model: process
    start, loading LLVM and MLIR, the pipelines' setup), best of 5, after a
    warm-up compile."""
    model = os.path.join(workdir, "one_node.onnx")
    write_model("relu chain", 1, model)
    times = [compile_once(model, model.replace(".onnx", "_ctx.onnx"))[0] for _ in range(6)]
    return min(times[1:])


def measure(sizes, workdir):
    fixed = fixed_cost(workdir)
    print(f"fixed cost of a compile (one node): {fixed:.3f} s", flush=True)
    rows = []
    for family, counts in sizes.items():
        for size in counts:
            model = os.path.join(workdir, f"{family.replace(' ', '_')}_{size}.onnx")
            nodes = write_model(family, size, model)
            # Short compiles are at the mercy of the machine's noise: best of 5
            # under half a second (a tenth of a second of noise is a Relu
            # chain's whole marginal time at 1,000 nodes), of 3 under 2 s.
            wall, report = compile_once(model, model.replace(".onnx", "_ctx.onnx"))
            for _ in range(4 if wall < 0.5 else 2 if wall < 2.0 else 0):
                again = compile_once(model, model.replace(".onnx", "_ctx.onnx"))
                if again[0] < wall:
                    wall, report = again
            stages = {s["name"]: s["ms"] for s in report["stages"]}
            row = {"family": family, "size": size, "nodes": nodes, "seconds": wall,
                   "codegen_s": stages.get("codegen", 0.0) / 1e3,
                   "ms_per_node": 1e3 * wall / nodes,
                   "marginal_ms_per_node": 1e3 * max(wall - fixed, 0.0) / nodes}
            rows.append(row)
            print(f"{family:10s} {size:6d} {nodes:6d} nodes  {wall:7.2f} s  "
                  f"codegen {row['codegen_s']:6.2f} s  {row['ms_per_node']:.3f} ms/node  "
                  f"{row['marginal_ms_per_node']:.3f} beyond the fixed cost", flush=True)
            for path in (model, model.replace(".onnx", "_ctx.onnx")):
                if os.path.exists(path):
                    os.remove(path)
    return rows, fixed


def table(rows):
    lines = ["| family | size | nodes | compile s | codegen s | ms per node | ms per node beyond the fixed cost |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['family']} | {r['size']} | {r['nodes']} | {r['seconds']:.2f} | "
                     f"{r['codegen_s']:.2f} | {r['ms_per_node']:.3f} | "
                     f"{r['marginal_ms_per_node']:.4f} |")
    return "\n".join(lines)


def flatness(rows, key="marginal_ms_per_node"):
    """Per family: the largest over the smallest time per node."""
    out = {}
    for family in dict.fromkeys(r["family"] for r in rows):
        per = [r[key] for r in rows if r["family"] == family]
        out[family] = max(per) / min(per) if min(per) > 0 else float("inf")
    return out


def growth(rows, key="marginal_ms_per_node"):
    """Per family: the time per node at the largest size over that at the
    smallest (below 1: it falls as the graph grows)."""
    out = {}
    for family in dict.fromkeys(r["family"] for r in rows):
        per = [r[key] for r in sorted(rows, key=lambda r: r["nodes"]) if r["family"] == family]
        out[family] = per[-1] / per[0] if per[0] > 0 else float("inf")
    return out


def chart(rows, path):
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return False
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for family in dict.fromkeys(r["family"] for r in rows):
        pts = [(r["nodes"], r["seconds"]) for r in rows if r["family"] == family]
        ax.loglog([p[0] for p in pts], [p[1] for p in pts], marker="o", label=family)
    ax.set_xlabel("nodes")
    ax.set_ylabel("ortc compile, seconds (wall)")
    ax.set_title("Compile time against graph size")
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    return True


def machine():
    model = "unknown CPU"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return f"{model}, {os.cpu_count()} cores"


def write_page(rows, fixed, charted):
    git = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"],
                         capture_output=True, text=True).stdout.strip()
    flat = flatness(rows)
    relu = [r for r in rows if r["family"] == "relu chain"]
    biggest = max(relu, key=lambda r: r["nodes"]) if relu else None
    lines = [
        "# Compile time against graph size",
        "",
        f"Generated by `bench/compile_scaling.py` on {datetime.date.today()} ({machine()}, "
        f"ortc {git}): `ortc compile` per model, wall time (best of 5 under 0.5 s, of 3 under 2 s). The models are made by the "
        "script (see its docstring): a chain of Relu nodes on a [4] tensor, a chain whose "
        "kernels all differ (Add of a constant of its own, then Tanh), and repeated "
        "MatMul + Add + Tanh blocks with their own weights.",
        "",
        f"Every compile costs {fixed:.2f} s whatever the graph (a one-node model, best of 5 "
        "after a warm-up: starting the process, loading LLVM and MLIR, setting up the "
        "pipelines); the last column takes it away, so that it shows what each node adds.",
        "",
        table(rows),
        "",
        "Time per node beyond the fixed cost, largest over smallest within a family "
        "(issue 16 wants it within 2x from 1,000 to 64,000 nodes): " +
        ", ".join(f"{k} {v:.2f}x" for k, v in flat.items()) + "; with the fixed cost "
        "left in: " + ", ".join(f"{k} {v:.2f}x" for k, v in flatness(rows, "ms_per_node").items())
        + " (the small graphs are mostly the fixed cost). "
        "From the smallest size to the largest it goes " +
        ", ".join(f"{k} {v:.2f}x" for k, v in growth(rows).items()) +
        ": where the largest ratio is at the smallest size, the time per node falls as the "
        "graph grows (the Relu chain's 1,000 nodes pay for generating its one 64-Relu "
        "kernel, as the codegen column shows, which its 64,000 nodes share).",
    ]
    if biggest:
        lines.append(f"The {biggest['nodes']:,}-node Relu chain compiles in "
                     f"{biggest['seconds']:.2f} s (target: under 10 s).")
    lines += [
        "",
        "Why it is linear: an elementwise group holds at most 64 ops (fusion clones a "
        "growing body per op it fuses, so a kernel's compile time is the square of its "
        "length); kernels whose printed bodies are equal are compiled once and shared by "
        "their steps (the Relu chain and the blocks compile a handful of kernels whatever "
        "their length); the kernels are lowered on every core. The distinct chain has no "
        "two kernels alike: its time per node is the cost of generating code for a Tanh "
        "and an Add (MLIR lowering and LLVM -O3). The arena planner (`planArena`) checks "
        "each buffer against the placed ones live with it, found through an interval "
        "tree, not against every placed buffer; the weights are packed where the blob "
        "holds them, not copied into it.",
    ]
    if charted:
        lines += ["", "![compile time against nodes](compile_scaling.png)"]
    with open(PAGE, "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    global ORTC
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--quick", action="store_true", help="smaller sizes; writes nothing")
    parser.add_argument("--no-write", action="store_true", help="print the table only")
    parser.add_argument("--ortc", default=ORTC, help="the ortc binary")
    args = parser.parse_args()
    ORTC = args.ortc
    if not os.path.exists(ORTC):
        sys.exit(f"compile_scaling: {ORTC} not found (build first: scripts/build.sh)")
    with tempfile.TemporaryDirectory(prefix="ortc-compile-scaling-") as workdir:
        rows, fixed = measure(QUICK if args.quick else FULL, workdir)
    print()
    print(table(rows))
    print("time per node beyond the fixed cost, max/min:",
          {k: round(v, 2) for k, v in flatness(rows).items()},
          "largest size over smallest:", {k: round(v, 2) for k, v in growth(rows).items()})
    if not (args.quick or args.no_write):
        write_page(rows, fixed, chart(rows, CHART))
        print(f"wrote {PAGE}")


if __name__ == "__main__":
    main()
