#!/usr/bin/env python3
"""Where a model's gap to onnxruntime is, node by node: ortc's steps beside
onnxruntime's own per-node profile, in the same model at the same threads.

  python3 bench/node_gaps.py MODEL.onnx CTX.onnx [--threads 1] [--runs 30]
      [--top 25] [--ortc build/tools/ortc/ortc] [--batch 1]

MODEL.onnx is the model as exported (what onnxruntime runs), CTX.onnx what
`ortc compile` made of it. The script runs `ortc bench CTX --profile-json`
(random inputs of the declared shapes) and onnxruntime's CPU EP (default
optimizations, SessionOptions.enable_profiling) on random inputs of the same
shapes, and pairs each ortc step with the onnxruntime node that computes the
same result: onnxruntime fuses a Conv with the Add, Relu or Clip after it and
names the fused node after the last output (NAME_nchwc on NCHWc CPUs), so a
step is paired through the chain of single-consumer elementwise nodes that
follow its first node. Both sides are medians per run, in ms. Steps with no
partner (onnxruntime's reorders, steps it fused away) are listed apart. The
two profiles run one after the other, not interleaved: run it on a quiet
machine, and judge a change by its own ortc times before and after.

Run with the bench venv (bench/peers.py --setup makes it): the script
re-executes itself there, as peers.py does. It prints, never writes docs/:
it is for finding the next thing to fix, and its pairs are as good as the
naming heuristics above (a pair is named, so a wrong one shows).
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import peers  # noqa: E402

# Ops onnxruntime folds into the node before them (a conv's epilogue).
FUSED_AFTER = {"Relu", "Add", "Clip", "BatchNormalization", "Sigmoid", "Mul", "HardSigmoid"}


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("model", help="the exported model onnxruntime runs")
    parser.add_argument("ctx", help="ortc compile's output for it")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--batch", type=int, default=1, help="the value of dynamic dims")
    parser.add_argument("--top", type=int, default=25, help="pairs listed (largest gap first)")
    parser.add_argument("--ortc", default=os.path.join(ROOT, "build", "tools", "ortc", "ortc"))
    return parser.parse_args(argv)


def ortc_profile(args):
    """`ortc bench --profile-json`: {first node name: (ms a run, step)}."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "profile.json")
        cmd = [args.ortc, "bench", args.ctx, "--threads", str(args.threads), "--runs",
               str(args.runs), "--batch", str(args.batch), "--profile-json", out, "--json"]
        done = subprocess.run(cmd, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"node_gaps.py: {' '.join(cmd)} failed: {done.stderr.strip()[-400:]}")
        with open(out) as f:
            profile = json.load(f)
    return {step["nodes"].split(",")[0].strip(): step for step in profile["steps"]}


def onnxruntime_profile(args):
    """onnxruntime's per-node kernel time: {node name: median ms a run}."""
    import numpy as np
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = args.threads
    options.enable_profiling = True
    with tempfile.TemporaryDirectory() as tmp:
        options.profile_file_prefix = os.path.join(tmp, "ort")
        session = ort.InferenceSession(args.model, options, providers=["CPUExecutionProvider"])
        rng = np.random.default_rng(0)
        feeds = {}
        for i in session.get_inputs():
            shape = [d if isinstance(d, int) else args.batch for d in i.shape]
            kind = {"tensor(float)": np.float32, "tensor(int64)": np.int64}.get(i.type)
            if kind is None:
                sys.exit(f"node_gaps.py: input {i.name} is {i.type}; only float and int64 "
                         "inputs get random values")
            feeds[i.name] = (rng.random(shape).astype(kind) if kind == np.float32
                             else np.zeros(shape, kind))
        for _ in range(args.runs + 3):
            session.run(None, feeds)
        with open(session.end_profiling()) as f:
            events = json.load(f)
    times = collections.defaultdict(list)
    for e in events:
        name = e.get("name", "")
        if e.get("cat") == "Node" and name.endswith("_kernel_time"):
            times[name[: -len("_kernel_time")]].append(e["dur"] / 1e3)
    # The first 3 runs are warm-up: drop each node's first three events.
    return {k: float(np.median(v[3:] or v)) for k, v in times.items()}


def partner_names(model, node_name):
    """onnxruntime node names that may compute what `node_name` starts."""
    consumers = collections.defaultdict(list)
    by_name = {}
    for node in model.graph.node:
        by_name[node.name] = node
        for value in node.input:
            consumers[value].append(node)
    node = by_name.get(node_name)
    if node is None:
        return [node_name]
    names = [node.name]
    output = node.output[0] if node.output else None
    while output is not None:
        names += [output + "_nchwc", output]
        after = consumers.get(output, [])
        if len(after) != 1 or after[0].op_type not in FUSED_AFTER:
            break
        names.append(after[0].name)
        output = after[0].output[0]
    return list(reversed(names))  # the fused chain's last name first


def main(argv):
    args = parse_args(argv)
    for path in (args.model, args.ctx, args.ortc):
        if not os.path.isfile(path):
            sys.exit(f"node_gaps.py: {path}: no such file")
    import onnx

    model = onnx.load(args.model, load_external_data=False)
    steps = ortc_profile(args)
    ort_ms = onnxruntime_profile(args)
    pairs, alone, used = [], [], set()
    for first, step in steps.items():
        partner = next((n for n in partner_names(model, first) if n in ort_ms), None)
        if partner is None or partner in used:
            alone.append(step)
            continue
        used.add(partner)
        pairs.append((step["ms"], ort_ms[partner], step, partner))
    ortc_sum, ort_sum = sum(p[0] for p in pairs), sum(p[1] for p in pairs)
    print(f"{os.path.basename(args.model)}, {args.threads} thread(s), {args.runs} runs: "
          f"{len(pairs)} pairs, ortc {ortc_sum:.3f} ms, onnxruntime {ort_sum:.3f} ms"
          + (f", ortc / onnxruntime {ortc_sum / ort_sum:.3f}" if ort_sum else ""))
    print(f"\n| ortc ms | onnxruntime ms | gap ms | ortc step | output | onnxruntime node |")
    print("|---:|---:|---:|---|---|---|")
    for o, r, step, partner in sorted(pairs, key=lambda p: p[1] - p[0])[: args.top]:
        print(f"| {o:.3f} | {r:.3f} | {o - r:+.3f} | {step['kind']} {step['ops']} "
              f"{step['nodes']} | {step['shape']} | {partner} |")
    if alone:
        print(f"\nortc steps with no onnxruntime partner: {len(alone)}, "
              f"{sum(s['ms'] for s in alone):.3f} ms")
    left = {k: v for k, v in ort_ms.items() if k not in used}
    if left:
        print(f"onnxruntime nodes with no ortc partner: {len(left)}, "
              f"{sum(left.values()):.3f} ms (largest: "
              + ", ".join(f"{k} {v:.3f}" for k, v in sorted(left.items(), key=lambda kv: -kv[1])[:4])
              + ")")


if __name__ == "__main__":
    if not peers.running_in_venv():
        peers.ensure_venv()
        os.execv(peers.venv_python(), [peers.venv_python(), os.path.abspath(__file__)]
                 + sys.argv[1:])
    main(sys.argv[1:])
