"""What the end-to-end scripts share: running ortc, running a compiled model
on numpy inputs, and comparing an output with the reference.

The tolerance is for fp32 computed with different summation orders and
erf/tanh/exp implementations.
"""

import os
import subprocess

import numpy as np
import onnx

RTOL = 1e-4
ATOL = 1e-4


def run(cmd):
    """Runs `cmd`; raises with its stderr when it fails."""
    result = subprocess.run(cmd, capture_output=True, text=True)
    if result.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {result.returncode}: "
                           f"{result.stderr.strip()}")
    return result


def check_only_epcontext(ctx_path):
    """Every node of the compiled model is an EPContext node (all claimed)."""
    compiled = onnx.load(ctx_path, load_external_data=False)
    ops = {node.op_type for node in compiled.graph.node}
    if ops != {"EPContext"}:
        raise RuntimeError(f"{ctx_path} holds {sorted(ops)}, expected only EPContext nodes")
    return compiled


def run_compiled(ortc, ctx_path, feeds, run_dir, output_names, extra=()):
    """`ortc run` on `feeds` (name -> array) in `run_dir`, with `extra`
    arguments; the outputs by name."""
    os.makedirs(run_dir, exist_ok=True)
    cmd = [ortc, "run", ctx_path, "--output-dir", run_dir, *extra]
    for input_name, array in feeds.items():
        path = os.path.join(run_dir, f"in_{input_name}.npy")
        np.save(path, array)
        cmd += ["--input", f"{input_name}={path}"]
    run(cmd)
    return {name: np.load(os.path.join(run_dir, output_file(name) + ".npy"))
            for name in output_names}


def output_file(name):
    """The file stem `ortc run` gives an output (tools/ortc/TensorIo.cpp's
    writeOutput): characters other than letters, digits, _ - . become _."""
    stem = "".join(c if c.isascii() and (c.isalnum() or c in "_-.") else "_" for c in name)
    return "_" + stem if not stem or stem[0] == "." else stem


def compare(got, want):
    """(max |error|, within tolerance with the same dtype and shape)."""
    ok = got.shape == want.shape and got.dtype == want.dtype
    err = float(np.max(np.abs(got.astype(np.float64) - want))) if ok and got.size else 0.0
    if ok:
        ok = bool(np.allclose(got, want, rtol=RTOL, atol=ATOL))
    return err, ok


def save_and_compile(ortc, model, name, folder, *flags):
    """Saves `model` as FOLDER/NAME.onnx and compiles it into FOLDER/NAME_ctx.onnx;
    returns both paths."""
    os.makedirs(folder, exist_ok=True)
    model_path = os.path.join(folder, f"{name}.onnx")
    onnx.save(model, model_path)
    ctx_path = os.path.join(folder, f"{name}_ctx.onnx")
    run([ortc, "compile", model_path, "-o", ctx_path, *flags])
    return model_path, ctx_path


def compare_run(ortc, ctx_path, session, feeds, run_dir, extra=()):
    """Runs the compiled model (`ortc run` with `extra` arguments) and
    onnxruntime's `session` on `feeds`; per output: (name, "dtype[shape]" of
    ortc's, max |error|, within tolerance)."""
    names = [o.name for o in session.get_outputs()]
    expected = session.run(None, feeds)
    outputs = run_compiled(ortc, ctx_path, feeds, run_dir, names, extra)
    rows = []
    for name, want in zip(names, expected):
        got = outputs[name]
        err, ok = compare(got, want)
        rows.append((name, f"{got.dtype}{list(got.shape)}", err, ok))
    return rows


def compile_listed(ortc, model, ctx, name, expect_fail, failures, extra=()):
    """Compiles `model` into `ctx` (with `extra` arguments) for a test over a
    list of models; whether to go on and run it. A model that does not
    compile is a failure unless it is in `expect_fail`; one in `expect_fail`
    that compiles is a failure too, so the list stays true. Failures are
    appended to `failures` by name."""
    try:
        run([ortc, "compile", model, "-o", ctx, "--quiet", *extra])
    except RuntimeError as error:
        status = "expected failure" if name in expect_fail else "FAIL"
        print(f"{name}: does not compile ({status}): {str(error).splitlines()[-1][:300]}")
        if name not in expect_fail:
            failures.append(name)
        return False
    if name in expect_fail:
        print(f"{name}: compiles now; remove it from --expect-fail")
        failures.append(name)
    return True


def finish(failures):
    """A model-list test's exit status, after a line naming its failures."""
    if failures:
        print("failed: " + ", ".join(failures))
        return 1
    return 0


# `--ep cuda`: the CUDA EP first, the CPU EP for what it declines, run on the
# CUDA EP's host emulation (a test double: no GPU needed).
EP_ARGS = {
    "cpu": ((), ()),
    "cuda": (("--ep=cuda,cpu",), ("--ep-option", "cuda:device=emulation")),
}


def partition_summary(ctx):
    """"cuda_ep: 3 partitions, 12 kernels, 4 cuBLAS GEMMs; cpu_ep: 2 partitions"
    from the EPContext nodes' notes."""
    import collections
    import re

    import onnx
    model = onnx.load(ctx, load_external_data=False)
    eps = collections.OrderedDict()
    for node in model.graph.node:
        attrs = {a.name: a for a in node.attribute}
        source = attrs["source"].s.decode() if "source" in attrs else "?"
        notes = attrs["notes"].s.decode() if "notes" in attrs else ""
        ep = {"ortc_cuda": "cuda_ep", "ortc_cpu": "cpu_ep"}.get(source, source)
        stats = eps.setdefault(ep, [0, 0, 0])
        stats[0] += 1
        kernels = re.search(r"(\d+) kernel\(s\)", notes)
        gemms = re.search(r"(\d+) cuBLAS GEMM", notes)
        stats[1] += int(kernels.group(1)) if kernels else 0
        stats[2] += int(gemms.group(1)) if gemms else 0
    parts = []
    for ep, (partitions, kernels, gemms) in eps.items():
        text = f"{ep}: {partitions} partition(s)"
        if ep == "cuda_ep":
            text += f", {kernels} kernel(s), {gemms} cuBLAS GEMM(s)"
        parts.append(text)
    return "; ".join(parts)


def check_helper_model(name, build, ortc, work, ep, seed):
    """Builds a model with `build(rng)` -> (model, [feeds, ...]), compiles it
    once (EPContext nodes only) and compares `ortc run` with onnxruntime on
    each feed; per output of each feed: (name, set, output, shape, err, ok)."""
    import onnxruntime as ort

    model, feeds = build(np.random.default_rng(seed))
    folder = os.path.join(work, name)
    compile_args, run_args = EP_ARGS[ep]
    model_path, ctx_path = save_and_compile(ortc, model, name, folder, "--quiet", *compile_args)
    check_only_epcontext(ctx_path)
    session = ort.InferenceSession(model_path, providers=["CPUExecutionProvider"])
    rows = []
    for k, feed in enumerate(feeds):
        for out, shape, err, ok in compare_run(ortc, ctx_path, session, feed,
                                               os.path.join(folder, f"run{k}"), run_args):
            rows.append((name, k, out, shape, err, ok))
    return rows


def helper_models_main(description, models, seed, work_prefix, ep_help=None):
    """The command line of a script of onnx.helper models (control_flow.py,
    sequences.py): --ortc, --work, --model, --ep; a row per output, then
    `N passed, M failed`; the exit status."""
    import argparse
    import tempfile

    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--ortc", required=True)
    parser.add_argument("--work", default=None)
    parser.add_argument("--model", action="append", choices=sorted(models))
    parser.add_argument("--ep", choices=sorted(EP_ARGS), default="cpu", help=ep_help)
    args = parser.parse_args()
    names = args.model or list(models)
    work = args.work or tempfile.mkdtemp(prefix=work_prefix)
    width = max(len(n) for n in models) + 1
    passed = failed = 0
    print(f"{'model':{width}} {'set':3} {'output':11} {'result':18} {'max |err|':>10}  ok")
    for name in names:
        try:
            rows = check_helper_model(name, models[name], args.ortc, work, args.ep, seed)
        except Exception as error:  # report and go on to the next model
            print(f"{name:{width}} FAILED: {error}")
            failed += 1
            continue
        for model, k, out, shape, err, ok in rows:
            print(f"{model:{width}} {k:3} {out:11} {shape:18} {err:10.2e}  "
                  f"{'yes' if ok else 'NO'}")
            passed += ok
            failed += not ok
    print(f"{passed} passed, {failed} failed; work dir {work}")
    return 1 if failed else 0
