#!/usr/bin/env python3
"""No compile ever crashes: every model the tests have, compiled with every EP
list the build supports, compile only.

The models: the e2e families (test/e2e: cpu_models, control_flow, sequences,
old_opsets), the torch exports of ../shared/models, the trained models of
../shared/realmodels (both manifests, fetched into the cache by their
fetch.sh), examples/, the ONNX backend node cases of the pinned onnx
package, and every .onnx under the folders given with --extra (models from
elsewhere). Each is compiled with `ortc compile --ep=LIST` for each LIST.

Outcomes:
  compiled   exit 0 and the output written;
  declined   exit 1 or 2, the last line on stderr the error ("ortc: ..."; the
             partition report may come before it), and no output file left
             behind (a decline, a refusal of bad input);
  crashed    anything else: killed by a signal, an abort, a sanitizer report,
             an MLIR verifier failure ("invalid IR after pass"), an LLVM stack
             dump, no error line, a partial output left by a failed compile,
             or no exit within the timeout (a hang).

One row per source and EP list with the counts, then every crash with the
command and its stderr; exits 1 when anything crashed. --sample K compiles
every K-th backend node case (and every model of the other sources), for the
sanitizer build. --backend-lists restricts the node cases to some EP lists
(conformance_cpu and conformance_cuda already compile them with cpu and
cuda,cpu and fail on a crash).
"""

import argparse
import concurrent.futures
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "conformance"))

# What a crash or an internal error leaves on stderr, whatever the exit code.
CRASH_MARKS = ("AddressSanitizer", "LeakSanitizer", "UndefinedBehaviorSanitizer",
               "ThreadSanitizer", "runtime error:", "Stack dump", "PLEASE submit a bug report",
               "invalid IR after pass", "failed to verify", "Assertion", "terminate called",
               "Segmentation fault")


def family_models(work):
    """The e2e scripts' onnx.helper models, written under work: (name, path)."""
    import numpy as np
    import onnx

    import control_flow
    import cpu_models
    import old_opsets
    import sequences

    builders = {f"cpu_models/{n}": f for n, f in cpu_models.FAMILIES.items()}
    builders.update({f"control_flow/{n}": f for n, f in control_flow.MODELS.items()})
    builders.update({f"sequences/{n}": f for n, f in sequences.MODELS.items()})
    builders.update({f"old_opsets/{n}": f for n, (_, f) in old_opsets.MODELS.items()})
    folder = os.path.join(work, "families")
    os.makedirs(folder, exist_ok=True)
    models = []
    for name, build in builders.items():
        model = build(np.random.default_rng(7))[0]
        path = os.path.join(folder, name.replace("/", "__") + ".onnx")
        onnx.save(model, path)
        models.append((name, path))
    return models


def folder_models(folder):
    if not os.path.isdir(folder):
        return []
    return [(f, os.path.join(folder, f)) for f in sorted(os.listdir(folder)) if f.endswith(".onnx")]


def real_models(manifests, cache):
    """(id, path) of every model of the manifests, fetched into cache first."""
    models = []
    for manifest in manifests:
        if not os.path.exists(manifest):
            continue
        fetch = os.path.join(os.path.dirname(os.path.abspath(manifest)), "fetch.sh")
        env = dict(os.environ, PYTHON=sys.executable, MANIFEST=os.path.abspath(manifest))
        fetched = subprocess.run(["bash", fetch, cache], env=env, capture_output=True, text=True)
        if fetched.returncode != 0:
            raise RuntimeError(f"{fetch} {cache} failed:\n{fetched.stdout[-2000:]}"
                               f"{fetched.stderr[-2000:]}")
        for entry in json.load(open(manifest))["models"]:
            archive = entry["archive"]
            for suffix in (".whl", ".tar.gz"):
                if archive.endswith(suffix):
                    archive = archive[: -len(suffix)]
            models.append((entry["id"], os.path.join(cache, "extracted", archive,
                                                      entry["member"])))
    return models


def backend_cases(data_cache, sample):
    import node_data

    node_dir = node_data.ensure_suite(data_cache)
    names = node_data.list_cases(node_dir)[::sample]
    return [(n, os.path.join(node_dir, n, "model.onnx")) for n in names]


def classify(rc, stderr, output_left, timed_out):
    """'compiled', 'declined' or 'crashed', with a reason for a crash."""
    if timed_out:
        return "crashed", "no exit within the timeout (a hang?)"
    marks = [m for m in CRASH_MARKS if m in stderr]
    if rc < 0:
        return "crashed", f"killed by signal {-rc}"
    if marks:
        return "crashed", f"stderr has {marks[0]!r}"
    if rc == 0:
        return ("compiled", "") if output_left else ("crashed", "exit 0 without an output file")
    lines = [line for line in stderr.splitlines() if line.strip()]
    if rc not in (1, 2):
        return "crashed", f"exit {rc}"
    if output_left:
        return "crashed", f"exit {rc} left an output file behind"
    # The partition report may come first; the error is the last line.
    if not lines or not lines[-1].startswith("ortc: "):
        return "crashed", f"exit {rc} without an 'ortc: ' error line last"
    return "declined", ""


def compile_one(ortc, source, name, path, ep_list, work, timeout):
    out_dir = tempfile.mkdtemp(prefix="sweep-", dir=work)
    output = os.path.join(out_dir, "model_ctx.onnx")
    cmd = [ortc, "compile", path, f"--ep={ep_list}", "-o", output, "--quiet"]
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                              errors="replace")
        rc, stderr, timed_out = proc.returncode, proc.stderr, False
    except subprocess.TimeoutExpired as expired:
        rc, timed_out = None, True
        stderr = expired.stderr.decode(errors="replace") if expired.stderr else ""
    # A failed compile must not leave a model or a sidecar behind.
    left = os.listdir(out_dir)
    outcome, reason = classify(rc, stderr, os.path.exists(output) if rc == 0 else bool(left),
                               timed_out)
    shutil.rmtree(out_dir, ignore_errors=True)
    return {"source": source, "model": name, "eps": ep_list, "outcome": outcome,
            "reason": reason, "rc": rc, "seconds": round(time.monotonic() - start, 2),
            "command": " ".join(cmd), "stderr": stderr[-4000:]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ortc", required=True)
    parser.add_argument("--work", required=True)
    parser.add_argument("--ep-lists", required=True,
                        help="space-separated EP lists, e.g. 'cpu cuda,cpu cuda'")
    parser.add_argument("--backend-lists", default=None,
                        help="EP lists for the backend node cases (default: --ep-lists)")
    parser.add_argument("--shared", default=os.path.join(HERE, "..", "..", "..", "shared"))
    parser.add_argument("--examples", default=os.path.join(HERE, "..", "..", "examples"))
    parser.add_argument("--model-cache", required=True, help="the real models' fetch cache")
    parser.add_argument("--data-cache", required=True, help="the backend node cases' folder")
    parser.add_argument("--sample", type=int, default=1, help="every K-th backend node case")
    parser.add_argument("--source", action="append",
                        choices=["families", "shared", "real", "examples", "backend", "extra"])
    parser.add_argument("--extra", action="append", default=[],
                        help="a folder of other models: every .onnx under it (source 'extra')")
    parser.add_argument("--timeout", type=int, default=600)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--results", default=None, help="write every outcome here (JSON)")
    args = parser.parse_args()
    ep_lists = args.ep_lists.split()
    backend_lists = args.backend_lists.split() if args.backend_lists is not None else ep_lists
    sources = args.source or ["families", "shared", "real", "examples", "backend"]
    if args.extra and "extra" not in sources:
        sources.append("extra")
    os.makedirs(args.work, exist_ok=True)

    models = {}
    if "families" in sources:
        models["families"] = family_models(args.work)
    if "shared" in sources:
        models["shared"] = folder_models(os.path.join(args.shared, "models"))
    if "real" in sources:
        realmodels = os.path.join(args.shared, "realmodels")
        models["real"] = real_models([os.path.join(realmodels, "manifest.json"),
                                      os.path.join(realmodels, "manifest-quantized.json")],
                                     args.model_cache)
    if "examples" in sources:
        models["examples"] = folder_models(args.examples)
    if "backend" in sources and backend_lists:
        models["backend"] = backend_cases(args.data_cache, max(1, args.sample))

    if "extra" in sources:
        models["extra"] = [(os.path.relpath(os.path.join(root, f), folder),
                            os.path.join(root, f))
                           for folder in args.extra for root, _, files in os.walk(folder)
                           for f in sorted(files) if f.endswith(".onnx")]

    jobs = []
    for source, listed in models.items():
        for ep_list in (backend_lists if source == "backend" else ep_lists):
            jobs += [(source, name, path, ep_list) for name, path in listed]
    start = time.monotonic()
    with concurrent.futures.ThreadPoolExecutor(max_workers=args.jobs) as pool:
        results = list(pool.map(
            lambda job: compile_one(args.ortc, *job, args.work, args.timeout), jobs))
    seconds = time.monotonic() - start

    print(f"{'source':9} {'EP list':9} {'models':>6} {'compiled':>8} {'declined':>8} "
          f"{'crashed':>7}")
    keys = sorted({(r["source"], r["eps"]) for r in results},
                  key=lambda k: (sources.index(k[0]), k[1]))
    for source, ep_list in keys:
        rows = [r for r in results if r["source"] == source and r["eps"] == ep_list]
        count = {o: sum(r["outcome"] == o for r in rows) for o in ("compiled", "declined",
                                                                    "crashed")}
        print(f"{source:9} {ep_list:9} {len(rows):6} {count['compiled']:8} "
              f"{count['declined']:8} {count['crashed']:7}")
    crashed = [r for r in results if r["outcome"] == "crashed"]
    total = {o: sum(r["outcome"] == o for r in results) for o in ("compiled", "declined")}
    print(f"{len(results)} compiles of {sum(len(v) for v in models.values())} models in "
          f"{seconds:.0f} s: {total['compiled']} compiled, {total['declined']} declined, "
          f"{len(crashed)} crashed")
    for r in crashed:
        print(f"\nCRASH {r['source']}/{r['model']} --ep={r['eps']}: {r['reason']}\n"
              f"  {r['command']}\n  stderr: {r['stderr'].strip()[-2000:]}")
    if args.results:
        with open(args.results, "w") as f:
            json.dump(results, f, indent=1)
    missing = [s for s in ("shared", "real") if s in models and not models[s]]
    if missing:
        print(f"note: no models found for {', '.join(missing)} (../shared not beside the tree?)")
    return 1 if crashed else 0


if __name__ == "__main__":
    sys.exit(main())
