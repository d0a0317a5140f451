"""End to end on the CPU EP: build each benchmark-family model, compile it with
`ortc compile`, run the EPContext model with `ortc run` at two batch sizes, and
compare every output with onnxruntime's CPU EP on the original model.

Usage: run_cpu_e2e.py --ortc build/tools/ortc/ortc [--work DIR] [--family NAME ...]
                      [--ep cuda]
With --ep cuda the models compile with --ep=cuda,cpu (inline blobs only) and
the CUDA partitions run on the host emulation.
Exit status 1 on any mismatch or failure; the table says which.
"""

import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort

sys.path.insert(0, os.path.dirname(__file__))
import cpu_models  # noqa: E402
from e2e_util import (ATOL, EP_ARGS, RTOL, check_only_epcontext, compare_run,  # noqa: E402
                      save_and_compile)


def check_family(name, ortc, work, embed, ep="cpu"):
    rng = np.random.default_rng(1234)
    model, feeds_for = cpu_models.FAMILIES[name](rng)
    compile_args, run_args = EP_ARGS[ep]
    folder = os.path.join(work, f"{name}_{'embed' if embed else 'sidecar'}")
    model_path, ctx_path = save_and_compile(ortc, model, name, folder,
                                            "--embed" if embed else "--no-embed", *compile_args)
    onnx.checker.check_model(check_only_epcontext(ctx_path))

    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    rows = []
    for batch in (1, 3):
        run_dir = os.path.join(folder, f"batch{batch}")
        for output_name, shape, err, ok in compare_run(ortc, ctx_path, session,
                                                       feeds_for(batch, rng), run_dir, run_args):
            rows.append((name, "embed" if embed else "sidecar", batch, output_name, shape, err,
                         ok))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ortc", required=True)
    parser.add_argument("--work", default=None)
    parser.add_argument("--family", action="append", choices=sorted(cpu_models.FAMILIES))
    parser.add_argument("--ep", choices=sorted(EP_ARGS), default="cpu")
    args = parser.parse_args()
    families = args.family or sorted(cpu_models.FAMILIES)
    work = args.work or tempfile.mkdtemp(prefix="ortc_e2e_")

    failures = 0
    print(f"{'family':12} {'blob':8} {'batch':5} {'output':10} {'result':18} "
          f"{'max |err|':>10}  ok")
    for family in families:
        for embed in ((True,) if args.ep == "cuda" else (True, False)):
            try:
                rows = check_family(family, args.ortc, work, embed, args.ep)
            except Exception as error:  # report and go on to the next family
                print(f"{family:12} {'embed' if embed else 'sidecar':8} FAILED: {error}")
                failures += 1
                continue
            for fam, blob, batch, out, shape, err, ok in rows:
                print(f"{fam:12} {blob:8} {batch:5} {out:10} {shape:18} {err:10.2e}  "
                      f"{'yes' if ok else 'NO'}")
                failures += 0 if ok else 1
    print(f"{failures} failure(s); tolerance rtol={RTOL} atol={ATOL}; work dir {work}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
