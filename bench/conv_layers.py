#!/usr/bin/env python3
"""Conv layer by layer: ortc beside onnxruntime on every distinct conv shape of
ResNet-50 and MobileNetV2 (batch 1, 224x224, NCHW, fp32), so that a CNN's gap
in bench/peers.py can be traced to the shapes that make it.

  .venv/bin/python bench/conv_layers.py [--models resnet50,mobilenet_v2]
      [--threads 1] [--rounds 7] [--budget 0.15] [--out docs/perf-conv-layers.md]
      [--work bench/out/conv_layers] [--ortc build/tools/ortc/ortc] [--lib ...]

Per shape it writes a model of one Conv (random weights, a bias) and a Relu,
compiles it with `ortc compile` (default options, this CPU) and times it
beside onnxruntime's CPU EP (default optimizations, which run AVX2/AVX-512
convs as NCHWc), both in this process on the same input: after warm-up, the
rounds alternate the two runtimes, each running about --budget seconds a
round; a run's time is the calling thread's CPU time at 1 thread (both run
there; other processes on a shared machine then count less) and wall time
otherwise. The table gives the median, the GFLOP/s, the ratio, and each
shape's count in its model; the count-weighted sums estimate the model's conv
time. Two biases, so read the ratios as a guide to ortc's own kernels rather
than as the model's: a conv alone stays NCHW in ortc (on AVX-512 targets,
convs that feed one another run channels-last, cpu-conv-channels-last, which
this table does not show); and onnxruntime pays its NCHW <-> NCHWc reorders
at every layer here, where a model pays them once around a chain of convs.
Output: a markdown table on stdout and in --out.
"""
import argparse
import datetime
import os
import statistics
import subprocess
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
from peers import machine_facts, versions  # noqa: E402
from peers_worker import OnnxruntimeRunner, OrtcRunner  # noqa: E402

# (input channels, output channels, kernel, stride, input size, group, count)
# where group is 1 or the channels (depthwise); count: how often the model has it.
RESNET50 = [
    (3, 64, 7, 2, 224, 1, 1),
    (64, 64, 1, 1, 56, 1, 1), (64, 64, 3, 1, 56, 1, 3), (64, 256, 1, 1, 56, 1, 4),
    (256, 64, 1, 1, 56, 1, 2),
    (256, 128, 1, 1, 56, 1, 1), (128, 128, 3, 2, 56, 1, 1), (128, 512, 1, 1, 28, 1, 4),
    (256, 512, 1, 2, 56, 1, 1), (512, 128, 1, 1, 28, 1, 3), (128, 128, 3, 1, 28, 1, 3),
    (512, 256, 1, 1, 28, 1, 1), (256, 256, 3, 2, 28, 1, 1), (256, 1024, 1, 1, 14, 1, 6),
    (512, 1024, 1, 2, 28, 1, 1), (1024, 256, 1, 1, 14, 1, 5), (256, 256, 3, 1, 14, 1, 5),
    (1024, 512, 1, 1, 14, 1, 1), (512, 512, 3, 2, 14, 1, 1), (512, 2048, 1, 1, 7, 1, 3),
    (1024, 2048, 1, 2, 14, 1, 1), (2048, 512, 1, 1, 7, 1, 2), (512, 512, 3, 1, 7, 1, 2),
]
MOBILENET_V2 = [
    (3, 32, 3, 2, 224, 1, 1),
    (32, 32, 3, 1, 112, 32, 1), (96, 96, 3, 2, 112, 96, 1), (144, 144, 3, 1, 56, 144, 1),
    (144, 144, 3, 2, 56, 144, 1), (192, 192, 3, 1, 28, 192, 2), (192, 192, 3, 2, 28, 192, 1),
    (384, 384, 3, 1, 14, 384, 4), (576, 576, 3, 1, 14, 576, 2), (576, 576, 3, 2, 14, 576, 1),
    (960, 960, 3, 1, 7, 960, 3),
    (32, 16, 1, 1, 112, 1, 1), (16, 96, 1, 1, 112, 1, 1), (96, 24, 1, 1, 56, 1, 1),
    (24, 144, 1, 1, 56, 1, 2), (144, 24, 1, 1, 56, 1, 1), (144, 32, 1, 1, 28, 1, 1),
    (32, 192, 1, 1, 28, 1, 3), (192, 32, 1, 1, 28, 1, 2), (192, 64, 1, 1, 14, 1, 1),
    (64, 384, 1, 1, 14, 1, 4), (384, 64, 1, 1, 14, 1, 3), (384, 96, 1, 1, 14, 1, 1),
    (96, 576, 1, 1, 14, 1, 3), (576, 96, 1, 1, 14, 1, 2), (576, 160, 1, 1, 7, 1, 1),
    (160, 960, 1, 1, 7, 1, 3), (960, 160, 1, 1, 7, 1, 2), (960, 320, 1, 1, 7, 1, 1),
    (320, 1280, 1, 1, 7, 1, 1),
]
MODELS = {"resnet50": ("ResNet-50", RESNET50), "mobilenet_v2": ("MobileNetV2", MOBILENET_V2)}


def layer_name(c, m, k, s, size, group):
    kind = "dw " if group > 1 else ""
    return f"{kind}{c}->{m} {k}x{k}" + (f" s{s}" if s > 1 else "") + f" @{size}"


def out_size(size, k, s):
    return (size + 2 * (k // 2) - k) // s + 1


def mflop(c, m, k, s, size, group):
    return 2 * out_size(size, k, s) ** 2 * m * (c // group) * k * k / 1e6


def write_model(path, c, m, k, s, size, group, seed):
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    scale = 1 / np.sqrt(c // group * k * k)
    w = (rng.standard_normal((m, c // group, k, k)) * scale).astype(np.float32)
    b = (rng.standard_normal(m) * 0.1).astype(np.float32)
    conv = helper.make_node("Conv", ["x", "w", "b"], ["c"], kernel_shape=[k, k],
                            strides=[s, s], pads=[k // 2] * 4, group=group)
    relu = helper.make_node("Relu", ["c"], ["y"])
    o = out_size(size, k, s)
    graph = helper.make_graph(
        [conv, relu], "conv",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, c, size, size])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, m, o, o])],
        [numpy_helper.from_array(w, "w"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 9
    onnx.save(model, path)


def time_pair(runners, rounds, budget, cpu_time):
    """Median seconds a run of each runner, rounds alternating which goes first."""
    clock = time.thread_time if cpu_time else time.perf_counter
    for r in runners:
        for _ in range(3):
            r.run()
    start = time.perf_counter()
    runners[0].run()
    reps = max(1, int(budget / max(time.perf_counter() - start, 1e-6)))
    times = [[] for _ in runners]
    for round_ in range(rounds):
        order = range(len(runners)) if round_ % 2 == 0 else reversed(range(len(runners)))
        for i in order:
            for _ in range(reps):
                t0 = clock()
                runners[i].run()
                times[i].append(clock() - t0)
    return [statistics.median(t) for t in times]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="resnet50,mobilenet_v2")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--budget", type=float, default=0.15,
                        help="seconds each runtime runs a round (default 0.15)")
    parser.add_argument("--out", default=os.path.join(ROOT, "docs", "perf-conv-layers.md"))
    parser.add_argument("--work", default=os.path.join(ROOT, "bench", "out", "conv_layers"))
    parser.add_argument("--ortc", default=os.path.join(ROOT, "build", "tools", "ortc", "ortc"))
    parser.add_argument("--lib", default=os.path.join(ROOT, "build", "runtime", "capi",
                                                      "libortc_runtime.so"))
    args = parser.parse_args()
    for path in (args.ortc, args.lib):
        if not os.path.exists(path):
            sys.exit(f"conv_layers.py: {path} is missing: build first (scripts/build.sh)")
    wanted = args.models.split(",")
    unknown = [m for m in wanted if m not in MODELS]
    if unknown:
        sys.exit(f"conv_layers.py: unknown model '{unknown[0]}' (known: {', '.join(MODELS)})")
    os.makedirs(args.work, exist_ok=True)
    cpu_time = args.threads == 1
    import onnxruntime

    lines = ["| model | layer | count | MFLOP | ortc ms | GFLOP/s | onnxruntime ms | GFLOP/s "
             "| ortc / ort |", "|---|---|---:|---:|---:|---:|---:|---:|---:|"]
    totals = []
    print("\n".join(lines), flush=True)
    for key in wanted:
        title, layers = MODELS[key]
        sums = [0.0, 0.0]
        for index, (c, m, k, s, size, group, count) in enumerate(layers):
            name = layer_name(c, m, k, s, size, group)
            stem = os.path.join(args.work, f"{key}_{index:02d}")
            write_model(stem + ".onnx", c, m, k, s, size, group, index)
            subprocess.run([args.ortc, "compile", stem + ".onnx", "-o", stem + "_ctx.onnx"],
                           check=True, stdout=subprocess.DEVNULL)
            x = {"x": np.random.default_rng(index).random((1, c, size, size), np.float32)}
            ortc = OrtcRunner(args.lib, stem + "_ctx.onnx", x, args.threads, 1)
            ort = OnnxruntimeRunner(stem + ".onnx", x, args.threads, 1)
            ortc.run()
            ort.run()
            got, want = ortc.results()["y"], ort.results()["y"]
            error = float(np.max(np.abs(got - want)) / max(float(np.max(np.abs(want))), 1e-30))
            if error > 1e-4:
                sys.exit(f"conv_layers.py: {title} {name}: ortc's output is {error:.1e} "
                         "(relative) from onnxruntime's")
            a, b = time_pair([ortc, ort], args.rounds, args.budget, cpu_time)
            f = mflop(c, m, k, s, size, group)
            sums[0] += count * a
            sums[1] += count * b
            row = (f"| {title} | {name} | {count} | {f:.1f} | {a * 1e3:.3f} | {f / a / 1e3:.1f} "
                   f"| {b * 1e3:.3f} | {f / b / 1e3:.1f} | {a / b:.2f} |")
            lines.append(row)
            print(row, flush=True)
        totals.append(f"| {title} | {sum(l[-1] for l in layers)} convs | {sums[0] * 1e3:.2f} "
                      f"| {sums[1] * 1e3:.2f} | {sums[0] / sums[1]:.2f} |")

    summary = ["| model | convs | ortc ms (count-weighted sum) | onnxruntime ms | ortc / ort |",
               "|---|---:|---:|---:|---:|"] + totals
    print("\n" + "\n".join(summary))
    machine = machine_facts()
    isa = ", ".join(f"{x} {'yes' if on else 'no'}" for x, on in machine["flags"].items())
    found = versions()
    clock = "the calling thread's CPU time" if cpu_time else "wall time"
    page = [
        "# Conv layers: ortc beside onnxruntime",
        "",
        "Generated by `bench/conv_layers.py` (see its header for the method): every",
        "distinct conv shape of ResNet-50 and MobileNetV2 at batch 1, as a model of one",
        "Conv (with bias) and a Relu, NCHW fp32, compiled by `ortc compile` for this CPU",
        "and timed beside onnxruntime's CPU EP in one process, rounds alternating.",
        "",
        f"- CPU: {machine['model']}, {machine['cpus']} logical CPUs; {isa}",
        f"- ortc: git {found['ortc_git']}; onnxruntime {onnxruntime.__version__}; "
        f"threads {args.threads}; "
        f"{args.rounds} rounds of about {args.budget} s per runtime; medians of {clock}",
        f"- date: {datetime.date.today().isoformat()}",
        "- Two biases: a conv alone stays NCHW in ortc (on AVX-512, chains of convs run",
        "  channels-last, which this table does not show); onnxruntime runs these as NCHWc",
        "  convs and pays its NCHW <-> NCHWc reorders at every layer here, where a model",
        "  pays them once around a chain. So the sums favour ortc against the models'",
        "  times in docs/performance.md; compare ortc's GFLOP/s across shapes and runs.",
        "",
        "## Per model: the count-weighted sums",
        "",
    ] + summary + ["", "## Per layer", ""] + lines
    with open(args.out, "w") as f:
        f.write("\n".join(page) + "\n")
    print(f"\nconv_layers.py: wrote {os.path.relpath(args.out, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
