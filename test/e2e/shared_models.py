#!/usr/bin/env python3
"""The models in ../shared/models (exported by torch.onnx.export with dynamic
axes) compile as shipped, once each, and match onnxruntime and torch's own
outputs at every shape the manifest lists.

A model that does not compile yet is reported as such, with ortc's error; the
test fails unless it is in --expect-fail (the models whose support is still
being built). One line per model and shape; exit 1 on any unexpected result.
"""

import argparse
import json
import os
import sys

import numpy as np
import onnxruntime as ort

from e2e_util import EP_ARGS, compare, compile_listed, finish, partition_summary, run_compiled


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ortc", required=True)
    parser.add_argument("--models", required=True, help="the folder with manifest.json")
    parser.add_argument("--work", required=True)
    parser.add_argument("--expect-fail", default="", help="comma-separated model names")
    parser.add_argument("--ep", choices=sorted(EP_ARGS), default="cpu",
                        help="cuda: compile with --ep=cuda,cpu and run on the CUDA EP's host "
                             "emulation")
    args = parser.parse_args()
    compile_args, run_args = EP_ARGS[args.ep]
    expect_fail = {n for n in args.expect_fail.split(",") if n}
    if not os.path.exists(os.path.join(args.models, "manifest.json")):
        print(f"SKIPPED: no {args.models}/manifest.json (the shared test models)")
        return 77

    manifest = json.load(open(os.path.join(args.models, "manifest.json")))
    failures = []
    for entry in manifest["models"]:
        name = entry["name"]
        model = os.path.join(args.models, entry["file"])
        ctx = os.path.join(args.work, f"{name}_ctx.onnx")
        os.makedirs(args.work, exist_ok=True)
        if not compile_listed(args.ortc, model, ctx, name, expect_fail, failures, compile_args):
            continue
        if args.ep != "cpu":
            print(f"{name}: {partition_summary(ctx)}")
        data = np.load(os.path.join(args.models, entry["data"]))
        session = ort.InferenceSession(model, providers=["CPUExecutionProvider"])
        for k, shapes in enumerate(entry["shapes"]):
            feeds = {i: data[f"in_{k}_{i}"] for i in entry["inputs"]}
            got = run_compiled(args.ortc, ctx, feeds, os.path.join(args.work, f"{name}_{k}"),
                               entry["outputs"], run_args)
            want_ort = session.run(entry["outputs"], feeds)
            for out, reference in zip(entry["outputs"], want_ort):
                err_ort, ok_ort = compare(got[out], reference)
                err_torch, ok_torch = compare(got[out], data[f"out_{k}_{out}"])
                ok = ok_ort and ok_torch
                print(f"{name} {shapes}: {out} {got[out].dtype}{list(got[out].shape)} "
                      f"max|err| vs onnxruntime {err_ort:.2e}, vs torch {err_torch:.2e}: "
                      f"{'ok' if ok else 'MISMATCH'}")
                if not ok:
                    failures.append(f"{name} {shapes}")
    return finish(failures)


if __name__ == "__main__":
    sys.exit(main())
