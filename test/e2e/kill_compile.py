"""Crash safety of `ortc compile`'s output: SIGKILL at random moments never
leaves a partial or unreadable model_ctx.onnx or sidecar.

Two models with the same input (MLPs of a few MiB of weights, compiled with
--no-embed so every compile writes a sidecar): A, the one being compiled, and
B, whose complete output is in the folder before the odd trials (a compile
over an earlier one); even trials start from an empty folder. Each trial
starts `ortc compile A`, kills it with SIGKILL after a random delay between 0
and 2 times a whole compile, and then requires of the folder:

  - model_ctx.onnx, when present, loads and runs, and its output is A's or
    B's exactly (never a model over the other's sidecar);
  - a sidecar at its final name is whole: its envelope's magic and declared
    size match the file (temporaries are hidden .NAME.tmp-* files, allowed).

After the trials, a whole compile of A into each trial's folder must give
A's output and leave no hidden temporary or moved-aside model (.NAME.tmp-*,
.NAME.old-*) that the killed compile left there.

Usage: kill_compile.py --ortc ORTC --work DIR [--trials 20] [--seed N]
"""

import argparse
import glob
import os
import random
import shutil
import signal
import struct
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from e2e_util import run, run_compiled


def mlp(seed, out_width, width=1024, layers=6):
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        cols = out_width if i == layers - 1 else width
        w = (rng.standard_normal((width, cols)) / np.sqrt(width)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("MatMul", [prev, f"w{i}"], [f"m{i}"]))
        out = "y" if i == layers - 1 else f"r{i}"
        nodes.append(helper.make_node("Relu", [f"m{i}"], [out]))
        prev = out
    graph = helper.make_graph(
        nodes, f"mlp{seed}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, width])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, out_width])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    return model


def compile_cmd(ortc, source, out):
    return [ortc, "compile", source, "-o", out, "--no-embed"]


def sidecar_is_whole(path):
    with open(path, "rb") as f:
        header = f.read(32)
    if len(header) < 32 or header[:8] != b"ORTCBLOB":
        return False
    declared = struct.unpack_from("<Q", header, 16)[0]
    return declared == os.path.getsize(path)


def hidden_leftovers(folder):
    return sorted(name for name in os.listdir(folder)
                  if name.startswith(".") and (".tmp-" in name or ".old-" in name))


def check_folder(ortc, folder, feeds, references, trial):
    """Raises when the folder holds a partial or unreadable output."""
    for path in glob.glob(os.path.join(folder, "*.bin")):
        if not sidecar_is_whole(path):
            raise RuntimeError(f"trial {trial}: {path} is not a whole blob")
    model = os.path.join(folder, "model_ctx.onnx")
    if not os.path.exists(model):
        return "no model"
    got = run_compiled(ortc, model, feeds, os.path.join(folder, "run"), ["y"])["y"]
    for name, want in references.items():
        if got.shape == want.shape and np.array_equal(got, want):
            return f"model {name}"
    raise RuntimeError(f"trial {trial}: {model} runs but its output is neither A's nor B's")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ortc", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--seed", type=int, default=int(time.time()))
    args = parser.parse_args()
    print(f"kill_compile: seed {args.seed}")
    rng = random.Random(args.seed)
    shutil.rmtree(args.work, ignore_errors=True)
    os.makedirs(args.work)

    sources = {}
    # B's output is narrower: a model of one over the other's sidecar cannot
    # pass for either.
    for name, seed, out_width in (("A", 1, 1024), ("B", 2, 256)):
        sources[name] = os.path.join(args.work, f"{name}.onnx")
        onnx.save(mlp(seed, out_width), sources[name])
    feeds = {"x": np.random.default_rng(3).standard_normal((4, 1024)).astype(np.float32)}

    # Whole compiles of each: the references, and how long one takes.
    references, whole = {}, {}
    for name in sources:
        folder = os.path.join(args.work, f"whole_{name}")
        os.makedirs(folder)
        out = os.path.join(folder, "model_ctx.onnx")
        start = time.monotonic()
        run(compile_cmd(args.ortc, sources[name], out))
        whole[name] = time.monotonic() - start
        references[name] = run_compiled(args.ortc, out, feeds, os.path.join(folder, "run"),
                                        ["y"])["y"]
    print(f"kill_compile: a whole compile takes {whole['A']:.2f} s")

    outcomes = {}
    for trial in range(args.trials):
        folder = os.path.join(args.work, f"trial{trial:02d}")
        if trial % 2:
            shutil.copytree(os.path.join(args.work, "whole_B"), folder,
                            ignore=shutil.ignore_patterns("run"))
        else:
            os.makedirs(folder)
        delay = rng.uniform(0, 2 * whole["A"])
        proc = subprocess.Popen(compile_cmd(args.ortc, sources["A"],
                                            os.path.join(folder, "model_ctx.onnx")),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        proc.send_signal(signal.SIGKILL)
        code = proc.wait()
        state = check_folder(args.ortc, folder, feeds, references, trial)
        killed = "killed" if code == -signal.SIGKILL else "finished"
        outcomes[state] = outcomes.get(state, 0) + 1
        print(f"trial {trial:2d}: {'over B' if trial % 2 else 'empty '} "
              f"{killed:8s} after {delay:5.2f} s: {state}")
    print(f"kill_compile: {args.trials} trials, every folder whole: "
          + ", ".join(f"{n} {s}" for s, n in sorted(outcomes.items())))

    left = 0
    for trial in range(args.trials):
        folder = os.path.join(args.work, f"trial{trial:02d}")
        left += len(hidden_leftovers(folder))
        run(compile_cmd(args.ortc, sources["A"], os.path.join(folder, "model_ctx.onnx")))
        if check_folder(args.ortc, folder, feeds, references, trial) != "model A":
            raise RuntimeError(f"trial {trial}: a whole compile over it does not give A")
        if hidden_leftovers(folder):
            raise RuntimeError(f"trial {trial}: a whole compile left {hidden_leftovers(folder)}")
    print(f"kill_compile: a whole compile over each folder gives A and removes the "
          f"{left} hidden files the killed ones left")
    return 0


if __name__ == "__main__":
    sys.exit(main())
