#!/usr/bin/env python3
"""Conformance: the ONNX backend node tests through `ortc compile` and `ortc run`.

For every node case of the pinned onnx package (see node_data.py; --data for
another folder of cases), compile model.onnx with the default EPs (CPU) and
no --allow-unclaimed, run each test_data_set's input_k.pb with `ortc run`, and
compare every output_k.pb with onnx's backend-test tolerance (rtol 1e-3,
atol 1e-7, NaNs equal, bfloat16 at two ulps as onnx's runner does; dtype and
shape exact; bool and integers exact). Each case ends as exactly one of:

  passed           every output of every data set matches
  declined         no EP claimed some node (the decline reasons of
                   `ortc compile --report=json`), or the harness cannot feed or
                   compare its values (sequence, optional, map or string
                   inputs/outputs): declined_by "harness", reason "harness: ..."
  claim_failure    an EP claimed nodes, then the compile failed, crashed or timed
                   out: a claim-honesty bug
  compile_failure  the compile failed with no node claimed: before partitioning
                   (importer, generic passes) or with every node folded away
                   (the EPContext writer)
  run_failure      `ortc run` refused the compiled model or its inputs, failed,
                   timed out, or left an output unwritten
  wrong_numbers    an output's dtype, shape or values differ (max abs/rel error)
  no_cuda          (--ep cuda only) the model compiled, but the report places
                   none of its nodes on the CUDA EP: not run, neither passed
                   nor failed

--ep cuda compiles with `--ep=cuda,cpu` (the CUDA EP first, the CPU EP for
what it declines) and runs with `--ep-option cuda:device=emulation`: the CUDA
EP's host emulation, a test double that compiles the kernels' CUDA C++ with the
host C++ compiler ($ORTC_HOST_CXX or c++; kernels cached by content under
$TMPDIR/ortc-cuda-emulation) and runs them on the CPU. It checks the
generated kernels' numerics and the mixed CUDA/CPU placement, not a GPU.
Only the cases the CUDA EP claims at least one node of are run; the summary
and the report count them and how many pass.

Compiled models are cached by the model's sha256 under --cache, keyed by the
ortc binary's contents, this CPU's flags and the --ep mode, so reruns only run.

Usage: run_conformance.py [--ortc build/tools/ortc/ortc] [--ep cpu|cuda] [--filter REGEX]
           [--jobs N] [--check] [--write-profile] [--write-report [PATH]]
--check (ctest conformance_cpu, conformance_cuda) exits 1 when a case of
<ep>.expected no longer passes, or a case not in <ep>.known-failures is a claim
failure, run failure or wrong number or crashes the compiler; it prints newly
passing and fixed cases. --write-profile rewrites both lists from this run;
--write-report writes docs/conformance.md (--ep cuda: docs/conformance-cuda.md).
Exit status 2 when the harness cannot start.
"""

import argparse
import concurrent.futures
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import node_data  # noqa: E402
import report  # noqa: E402

RTOL = 1e-3
ATOL = 1e-7
BF16_RTOL = 2.0 ** -6
# Bump when the compile command or what compile.json records changes.
CACHE_SALT = "conformance-cache-v1"
CACHE_KEEP = 3
STATUSES = report.STATUSES
# Per --ep mode: the profile files, the report, what is added to the compile
# and run commands (nothing for cpu: its commands are those of before --ep).
MODES = {
    "cpu": {"profile": os.path.join(HERE, "cpu.expected"),
            "known": os.path.join(HERE, "cpu.known-failures"),
            "report": os.path.join(ROOT, "docs", "conformance.md"),
            "compile_args": [], "run_args": []},
    "cuda": {"profile": os.path.join(HERE, "cuda.expected"),
             "known": os.path.join(HERE, "cuda.known-failures"),
             "report": os.path.join(ROOT, "docs", "conformance-cuda.md"),
             "compile_args": ["--ep=cuda,cpu"],
             "run_args": ["--ep-option", "cuda:device=emulation"]},
}
# --dynamic: the same cases with every graph-input dim a fresh dim_param (the
# model compiled once for any sizes, then run on the case's data).
DYNAMIC_MODES = {
    "cpu": {"profile": os.path.join(HERE, "cpu-dynamic.expected"),
            "known": os.path.join(HERE, "cpu-dynamic.known-failures"),
            "report": os.path.join(ROOT, "docs", "conformance-dynamic.md")},
}
# What the dynamic pass count must reach, as a share of the static one.
DYNAMIC_FLOOR = 0.98
PROFILE = MODES["cpu"]["profile"]
KNOWN = MODES["cpu"]["known"]
REPORT = MODES["cpu"]["report"]
CUDA_EP = "cuda_ep"


# ---------------------------------------------------------------- the model


def case_info(node_dir, name):
    """What the harness needs of one case's model: op under test, ops, inputs, outputs."""
    model = onnx.load(os.path.join(node_dir, name, "model.onnx"), load_external_data=False)
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    nodes = list(graph.node)
    ops = sorted({qualified_op(n) for n in nodes})
    return {
        "op": op_under_test(node_dir, name, nodes),
        "ops": ops,
        "expanded": "_expanded" in name,
        "inputs": [(v.name, v.type) for v in graph.input if v.name not in initializers],
        "outputs": [(v.name, v.type) for v in graph.output],
    }


def qualified_op(node):
    return node.op_type if node.domain in ("", "ai.onnx") else f"{node.domain}::{node.op_type}"


def op_under_test(node_dir, name, nodes):
    """The operator a case tests: that of test_X for test_X_expanded*, else its one node's."""
    if "_expanded" in name:
        base = name.split("_expanded")[0]
        path = os.path.join(node_dir, base, "model.onnx")
        if os.path.isfile(path):
            base_nodes = onnx.load(path, load_external_data=False).graph.node
            if len(base_nodes) == 1:
                return qualified_op(base_nodes[0])
    if len(nodes) == 1:
        return qualified_op(nodes[0])
    return "+".join(sorted({qualified_op(n) for n in nodes}))


def container_tensor_type(value_type):
    """The tensor type a sequence of tensors or an optional (of a tensor or of
    such a sequence) holds, else None."""
    kind = value_type.WhichOneof("value")
    if kind == "optional_type":
        value_type = value_type.optional_type.elem_type
        kind = value_type.WhichOneof("value")
        if kind == "tensor_type":
            return value_type.tensor_type
    if kind == "sequence_type":
        inner = value_type.sequence_type.elem_type
        if inner.WhichOneof("value") == "tensor_type":
            return inner.tensor_type
    return None


def harness_limit(info):
    """Why the harness cannot feed or compare this case's values, or None."""
    for role, values in (("input", info["inputs"]), ("output", info["outputs"])):
        for value_name, value_type in values:
            kind = value_type.WhichOneof("value")
            held = container_tensor_type(value_type)
            if held is not None:
                if held.elem_type == onnx.TensorProto.STRING:
                    return f"harness: {role} '{value_name}' holds string tensors"
                continue
            if kind != "tensor_type":
                kind = kind.replace("_type", "")
                article = "an" if kind[0] in "aeiou" else "a"
                return f"harness: {role} '{value_name}' is {article} {kind}"
            if value_type.tensor_type.elem_type == onnx.TensorProto.STRING:
                return f"harness: {role} '{value_name}' is a string tensor"
    return None


def held_tensor_types(value_type):
    """The tensor types a value type holds: itself, or a container's element."""
    kind = value_type.WhichOneof("value")
    if kind == "tensor_type":
        return [value_type.tensor_type]
    held = container_tensor_type(value_type)
    return [held] if held is not None else []


# A 1-D int32/int64 input of at most this many elements keeps its length:
# such a vector is a shape, axes, pads or starts, whose length is a rank the
# compiled model fixes (ranks are static in ortc, docs/design.md), not a size.
SHAPE_VECTOR_MAX = 8


def is_shape_vector(tensor):
    dims = tensor.shape.dim if tensor.HasField("shape") else []
    return (tensor.elem_type in (onnx.TensorProto.INT64, onnx.TensorProto.INT32) and
            len(dims) == 1 and dims[0].HasField("dim_value") and
            dims[0].dim_value <= SHAPE_VECTOR_MAX)


def make_dims_symbolic(model):
    """Every dim of every graph input (and of the tensors a sequence or optional
    input holds) becomes a fresh dim_param, so that nothing about the sizes is
    known before the run, but the length of a shape vector (is_shape_vector);
    the outputs' dims and the graph's value_info shapes, which would give some
    of them back, are dropped (ranks kept)."""
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    for k, value in enumerate(graph.input):
        if value.name in initializers:
            continue
        for tensor in held_tensor_types(value.type):
            if tensor.HasField("shape") and not is_shape_vector(tensor):
                for d, dim in enumerate(tensor.shape.dim):
                    dim.Clear()
                    dim.dim_param = f"in{k}_d{d}"
    for value in graph.output:
        for tensor in held_tensor_types(value.type):
            if tensor.HasField("shape"):
                for dim in tensor.shape.dim:
                    dim.Clear()
    del graph.value_info[:]
    return model


def dynamic_model(case_dir, name, work):
    """The case's model with symbolic input dims (make_dims_symbolic), written
    once under work/dynamic-models; its path."""
    path = os.path.join(work, "dynamic-models", name, "model.onnx")
    if not os.path.isfile(path):
        model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.tmp{os.getpid()}_{time.monotonic_ns()}"
        with open(tmp, "wb") as f:
            f.write(make_dims_symbolic(model).SerializeToString())
        os.replace(tmp, path)
    return path


# ---------------------------------------------------------------- compiling


def ortc_identity(ortc, mode="cpu"):
    """A key for compiled models: the binary's contents, this CPU, the salt
    and, but for cpu (whose key is that of before --ep), the --ep mode."""
    digest = hashlib.sha256(CACHE_SALT.encode())
    if mode != "cpu":
        digest.update(f"\0ep={mode}\0".encode())
    with open(ortc, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line for line in f if line.startswith("flags")), "")
        digest.update(flags.encode())
    except OSError:
        pass
    return digest.hexdigest()[:16]


def prepare_cache(cache_root, identity):
    """The cache folder of this ortc; keeps only the CACHE_KEEP most recently used."""
    folder = os.path.join(cache_root, identity)
    os.makedirs(folder, exist_ok=True)
    os.utime(folder)
    others = sorted((os.path.join(cache_root, d) for d in os.listdir(cache_root)),
                    key=os.path.getmtime, reverse=True)
    for old in others[CACHE_KEEP:]:
        shutil.rmtree(old, ignore_errors=True)
    return folder


def parse_compile_output(stdout, stderr):
    """The partition part of the --report=json document on stdout (None when
    the compile stopped before partitioning, or crashed before writing it) and
    the error: the last line on stderr ("ortc: ..."), else the report's."""
    partition = None
    try:
        report = json.loads(stdout)
    except ValueError:
        report = None
    if isinstance(report, dict) and report.get("partitioned"):
        partition = {k: report.get(k, []) for k in ("placements", "partitions", "declines")}
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    error = lines[-1] if lines else ""
    if not error and isinstance(report, dict):
        error = report.get("error") or ""
    return partition, error


def compile_case(ortc, model_path, cache_dir, timeout, extra_args=()):
    """Compiles one model (or finds it in the cache); returns the compile record.
    extra_args (the --ep mode's) come after the others."""
    with open(model_path, "rb") as f:
        key = hashlib.sha256(f.read()).hexdigest()
    folder = os.path.join(cache_dir, key)
    record_path = os.path.join(folder, "compile.json")
    if os.path.isfile(record_path):
        with open(record_path) as f:
            record = json.load(f)
        record.update(cached=True, ctx=os.path.join(folder, "model_ctx.onnx"))
        return record

    tmp = f"{folder}.tmp{os.getpid()}_{time.monotonic_ns()}"
    os.makedirs(tmp)
    cmd = [ortc, "compile", model_path, "-o", os.path.join(tmp, "model_ctx.onnx"),
           "--report=json"] + list(extra_args)
    start = time.monotonic()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        shutil.rmtree(tmp, ignore_errors=True)
        return {"rc": None, "timed_out": True, "seconds": timeout, "partition": None,
                "error": f"compile timed out after {timeout} s", "cached": False, "ctx": None}
    partition, error = parse_compile_output(proc.stdout, proc.stderr)
    record = {"rc": proc.returncode, "timed_out": False,
              "seconds": round(time.monotonic() - start, 3),
              "partition": partition, "error": error}
    with open(os.path.join(tmp, "compile.json"), "w") as f:
        json.dump(record, f)
    try:
        os.rename(tmp, folder)
    except OSError:  # another worker compiled the same model first
        shutil.rmtree(tmp, ignore_errors=True)
    record.update(cached=False, ctx=os.path.join(folder, "model_ctx.onnx"))
    return record


def exit_text(rc):
    """'exit 1', or 'crashed with SIGSEGV' for a process killed by a signal."""
    if rc is not None and rc < 0:
        try:
            return f"crashed with {signal.Signals(-rc).name}"
        except ValueError:
            return f"killed by signal {-rc}"
    return f"exit {rc}"


def unclaimed_nodes(partition):
    return [p["node"] for p in partition.get("placements", []) if p.get("ep") is None]


def placed_on(partition, ep):
    """The nodes the report places on ep (partition may be None: none known)."""
    return [p["node"] for p in (partition or {}).get("placements", []) if p.get("ep") == ep]


def cuda_fields(record):
    """What a cuda-mode result records of the placement: the nodes on the CUDA EP
    and all the placed nodes (absent when the compile stopped before partitioning)."""
    partition = record["partition"]
    if partition is None:
        return {}
    return {"cuda_nodes": len(placed_on(partition, CUDA_EP)),
            "nodes": len(partition.get("placements", []))}


def classify_no_cuda(record):
    """For a compile that succeeded in cuda mode with no node on the CUDA EP: the
    no_cuda result fields (the CUDA EP's declines say why); else None."""
    partition = record["partition"] or {}
    if placed_on(partition, CUDA_EP):
        return None
    declines = [d for d in partition.get("declines", []) if d.get("ep") == CUDA_EP]
    nodes = len(partition.get("placements", []))
    if not nodes:
        reason = "no node left to place (the generic passes folded them all)"
    elif not declines:
        reason = f"the partitioner placed all its {nodes} node(s) on other EPs"
    else:
        more = f" (+{len(declines) - 1} more)" if len(declines) > 1 else ""
        reason = (f"the CUDA EP declines {len(declines)} of its {nodes} node(s) and runs "
                  f"none: {report.decline_text(declines[0])}{more}")
    return {"status": "no_cuda", "cuda_declines": declines, "reason": reason}


def classify_compile(record):
    """For a failed compile, the result fields that say why; None when it succeeded.

    declined: some node is unclaimed (the report's placements say so).
    claim_failure: an EP claimed nodes, then the compile failed, crashed or timed out.
    compile_failure: it failed before partitioning (no report), or with nothing
    claimed (every node folded away): the importer, a generic pass or the writer.
    """
    if record["timed_out"]:
        return {"status": "claim_failure", "reason": record["error"], "stage": "timeout"}
    if record["rc"] == 0:
        return None
    partition, how = record["partition"], exit_text(record["rc"])
    error = record["error"] or "(no message)"
    crashed = {"crashed": True} if record["rc"] < 0 else {}
    if partition is None:
        return dict(status="compile_failure", stage="import",
                    reason=f"before partitioning, {how}: {error}", **crashed)
    unclaimed = set(unclaimed_nodes(partition))
    if unclaimed:
        declines = [d for d in partition.get("declines", []) if d.get("node") in unclaimed]
        reason = "; ".join(report.decline_text(d) for d in declines) or error
        return {"status": "declined", "declined_by": "ep", "reason": reason,
                "declines": declines, "error_line": record["error"]}
    if not partition.get("placements"):
        return dict(status="compile_failure", stage="write",
                    reason=f"nothing to claim, then {how}: {error}", **crashed)
    return dict(status="claim_failure", stage="ep", reason=f"claimed, then {how}: {error}",
                **crashed)


# ---------------------------------------------------------------- running


def run_data_set(ortc, ctx, info, data_dir, out_dir, timeout, extra_args=()):
    """Runs one data set; returns an error line, or None with outputs in out_dir.
    extra_args (the --ep mode's) come after the inputs."""
    cmd = [ortc, "run", ctx, "--output-dir", out_dir, "--output-format", "pb", "--threads", "1"]
    for k, (name, _) in enumerate(info["inputs"]):
        path = os.path.join(data_dir, f"input_{k}.pb")
        if not os.path.isfile(path):
            return f"harness: {os.path.basename(data_dir)} has no input_{k}.pb for '{name}'"
        cmd += ["--input", f"{name}={path}"]
    cmd += list(extra_args)
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return f"run timed out after {timeout} s"
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        return f"{exit_text(proc.returncode)}: {lines[-1] if lines else '(no message)'}"
    return None


def output_file(out_dir, name):
    """Where ortc run writes output `name` (its outputFileStem rule)."""
    stem = re.sub(r"[^A-Za-z0-9_.-]", "_", name)
    if not stem or stem.startswith("."):
        stem = "_" + stem
    return os.path.join(out_dir, stem + ".pb")


def load_value(path, value_type):
    """A .pb as its declared type: an array, a list of arrays (a sequence), or
    an optional's value (None when empty)."""
    with open(path, "rb") as f:
        data = f.read()
    kind = value_type.WhichOneof("value")
    if kind == "sequence_type":
        proto = onnx.SequenceProto()
        proto.ParseFromString(data)
        return [numpy_helper.to_array(t) for t in proto.tensor_values]
    if kind == "optional_type":
        proto = onnx.OptionalProto()
        proto.ParseFromString(data)
        if proto.HasField("tensor_value"):
            return numpy_helper.to_array(proto.tensor_value)
        if proto.HasField("sequence_value"):
            return [numpy_helper.to_array(t) for t in proto.sequence_value.tensor_values]
        return None
    tensor = onnx.TensorProto()
    tensor.ParseFromString(data)
    return numpy_helper.to_array(tensor)


def compare_value(name, want, got):
    """compare() over a value of any kind (array, list of arrays, None)."""
    if isinstance(want, list) or isinstance(got, list):
        if not (isinstance(want, list) and isinstance(got, list)):
            return f"output '{name}': a sequence on one side only", None, None
        if len(want) != len(got):
            return (f"output '{name}': a sequence of {len(got)} tensors, expected {len(want)}",
                    None, None)
        for k, (w, g) in enumerate(zip(want, got)):
            mismatch = compare(f"{name}[{k}]", w, g)
            if mismatch:
                return mismatch
        return None
    if want is None or got is None:
        if want is None and got is None:
            return None
        return (f"output '{name}': {'empty' if got is None else 'a value'}, expected "
                f"{'empty' if want is None else 'a value'}", None, None)
    return compare(name, want, got)


def is_exact(dtype):
    return dtype.kind in "biuUSO" or dtype.name.startswith(("int", "uint"))


def compare(name, want, got):
    """None when got matches want, else (one-line reason, max abs err, max rel err)."""
    if got.dtype != want.dtype:
        return f"output '{name}': dtype {got.dtype}, expected {want.dtype}", None, None
    if got.shape != want.shape:
        return (f"output '{name}': shape {list(got.shape)}, expected {list(want.shape)}",
                None, None)
    if is_exact(want.dtype):
        bad = got != want
    else:
        rtol = max(RTOL, BF16_RTOL) if want.dtype.name == "bfloat16" else RTOL
        g, w = got.astype(np.float64), want.astype(np.float64)
        bad = ~np.isclose(g, w, rtol=rtol, atol=ATOL, equal_nan=True)
    if not bad.any():
        return None
    g, w = got.astype(np.float64)[bad], want.astype(np.float64)[bad]
    with np.errstate(all="ignore"):
        abs_err = np.abs(g - w)
        rel_err = abs_err / np.abs(w)
    max_abs = float(np.nanmax(abs_err)) if np.isfinite(abs_err).any() else float("inf")
    finite_rel = rel_err[np.isfinite(rel_err)]
    max_rel = float(finite_rel.max()) if finite_rel.size else float("inf")
    first = tuple(int(i) for i in np.argwhere(bad)[0]) if want.ndim else ()
    return (f"output '{name}': {int(bad.sum())}/{bad.size} differ, max abs {max_abs:.3g}, "
            f"max rel {max_rel:.3g}; first at {list(first)}: got {got[first]}, "
            f"expected {want[first]}", max_abs, max_rel)


def check_outputs(info, data_dir, out_dir):
    """(status, reason, max abs, max rel) after a successful run, or None when all match."""
    for k, (name, value_type) in enumerate(info["outputs"]):
        want_path = os.path.join(data_dir, f"output_{k}.pb")
        if not os.path.isfile(want_path):
            continue  # the suite does not check this output
        got_path = output_file(out_dir, name)
        if not os.path.isfile(got_path):
            return "run_failure", f"output '{name}' was not written", None, None
        try:
            got = load_value(got_path, value_type)
        except Exception as error:  # an unreadable output is ortc's fault
            return "run_failure", f"unreadable output '{name}': {error}", None, None
        want = load_value(want_path, value_type)
        mismatch = compare_value(name, want, got)
        if mismatch:
            return ("wrong_numbers",) + mismatch
    return None


# ---------------------------------------------------------------- one case


def run_case(name, opts):
    """Compiles, runs and checks one case; returns its result record."""
    case_dir = os.path.join(opts.node_dir, name)
    info = case_info(opts.node_dir, name)
    result = {"status": None, "op": info["op"], "ops": info["ops"],
              "expanded": info["expanded"], "reason": ""}
    model_path = os.path.join(case_dir, "model.onnx")
    if opts.dynamic:
        model_path = dynamic_model(case_dir, name, opts.work)
    record = compile_case(opts.ortc, model_path, opts.cache_dir,
                          opts.compile_timeout, MODES[opts.ep]["compile_args"])
    result.update(compile_s=record["seconds"], cached=record["cached"])
    if opts.ep == "cuda":
        result.update(cuda_fields(record))
    failed = classify_compile(record)
    if failed:
        result.update(failed)
        return result
    if opts.ep == "cuda":
        skipped = classify_no_cuda(record)
        if skipped:
            result.update(skipped)
            return result
    limit = harness_limit(info)
    if limit:
        result.update(status="declined", declined_by="harness", reason=limit)
        return result
    return run_and_check(result, info, case_dir, record["ctx"], opts)


def run_and_check(result, info, case_dir, ctx, opts):
    work = os.path.join(opts.work, os.path.basename(case_dir))
    shutil.rmtree(work, ignore_errors=True)
    start = time.monotonic()
    for data_dir in node_data.data_sets(case_dir):
        out_dir = os.path.join(work, os.path.basename(data_dir))
        error = run_data_set(opts.ortc, ctx, info, data_dir, out_dir, opts.run_timeout,
                             MODES[opts.ep]["run_args"])
        if error and error.startswith("harness:"):
            result.update(status="declined", declined_by="harness", reason=error)
            return result
        if error:
            result.update(status="run_failure", reason=error)
            return result
        checked = check_outputs(info, data_dir, out_dir)
        if checked:
            status, reason, max_abs, max_rel = checked
            result.update(status=status, reason=f"{os.path.basename(data_dir)}: {reason}")
            if max_abs is not None:
                result.update(max_abs_err=max_abs, max_rel_err=max_rel)
            return result
    result.update(status="passed", run_s=round(time.monotonic() - start, 3))
    if not opts.keep_work:
        shutil.rmtree(work, ignore_errors=True)
    return result


def run_all(names, opts):
    """Every case on opts.jobs workers; prints progress and each failure as it comes."""
    results = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=opts.jobs) as pool:
        futures = {pool.submit(run_case, name, opts): name for name in names}
        for done, future in enumerate(concurrent.futures.as_completed(futures), 1):
            name = futures[future]
            try:
                result = future.result()
            except Exception as error:  # a harness bug: say so, keep going
                result = {"status": "run_failure", "op": "?", "ops": [], "expanded": False,
                          "reason": f"harness error: {type(error).__name__}: {error}"}
            results[name] = result
            if result["status"] not in ("passed", "declined", "no_cuda"):
                print(f"  {result['status']:15} {name}: {report.short(result['reason'])}",
                      flush=True)
            if done % 200 == 0 or done == len(names):
                print(f"[{done}/{len(names)}]", flush=True)
    return dict(sorted(results.items()))


# ---------------------------------------------------------------- profile


def fails_check(result):
    """Whether --check fails on this result wherever the case is listed: a claim
    failure, run failure or wrong number (a claimed node that did not compile, run or
    compute right), or a compiler crash at any stage."""
    return result["status"] in report.BUGS or bool(result.get("crashed"))


def read_reasons(path):
    """{case: the comment after it} of a profile file."""
    reasons = {}
    try:
        with open(path) as f:
            for line in f:
                name, _, comment = line.partition("#")
                if name.strip():
                    reasons[name.split()[0]] = comment.strip()
    except FileNotFoundError:
        pass
    return reasons


def read_list(path):
    """The case names of a profile file (the first word of each line; # comments)."""
    try:
        with open(path) as f:
            lines = [line.split("#", 1)[0].split() for line in f]
    except FileNotFoundError:
        return []
    return [words[0] for words in lines if words]


PROFILE_HEADERS = {
    "cpu": ("# ONNX backend node tests that pass on the CPU EP (ortc compile + ortc run).\n"
            "# Written by test/conformance/run_conformance.py --write-profile; ctest\n"
            "# conformance_cpu fails when one of them stops passing.\n",
            "# Cases that fail --check today (claim failures, run failures, wrong numbers,\n"
            "# compiler crashes): bugs, listed in docs/conformance.md. --check tolerates\n"
            "# these and fails on any other; remove a line once its bug is fixed.\n"
            "# Written by test/conformance/run_conformance.py --write-profile.\n"),
    "cuda": ("# ONNX backend node tests that pass with the CUDA EP (ortc compile --ep=cuda,cpu,\n"
             "# ortc run --ep-option cuda:device=emulation): the CUDA EP claims at least one\n"
             "# node of each, run on its host emulation. Written by\n"
             "# test/conformance/run_conformance.py --ep cuda --write-profile; ctest\n"
             "# conformance_cuda fails when one of them stops passing (or stops being claimed).\n",
             "# Cases that fail --ep cuda --check today (claim failures, run failures, wrong\n"
             "# numbers, compiler crashes): bugs, listed in docs/conformance-cuda.md. --check\n"
             "# tolerates these and fails on any other; remove a line once its bug is fixed.\n"
             "# Written by test/conformance/run_conformance.py --ep cuda --write-profile.\n"),
}


PROFILE_HEADERS["cpu-dynamic"] = (
    "# ONNX backend node tests that pass on the CPU EP with every graph-input dim a\n"
    "# fresh dim_param (run_conformance.py --dynamic). Written by --dynamic\n"
    "# --write-profile; ctest conformance_cpu_dynamic fails when one stops passing.\n",
    "# Cases that fail --dynamic --check today (claim failures, run failures, wrong\n"
    "# numbers, compiler crashes): bugs, listed in docs/conformance-dynamic.md.\n"
    "# --check tolerates these and fails on any other; remove a line once fixed.\n"
    "# Written by test/conformance/run_conformance.py --dynamic --write-profile.\n")


def write_profile(expected_path, known_path, results, filter_re, mode="cpu"):
    """Writes the passing cases and today's known failures; returns their counts.
    With a filter, the lists' other cases are kept as they were."""
    def merged(path, names):
        kept = [n for n in read_list(path) if not filter_re.search(n)]
        return sorted(set(kept) | set(names))

    passed = merged(expected_path, [n for n, r in results.items() if r["status"] == "passed"])
    known = merged(known_path, [n for n, r in results.items() if fails_check(r)])
    old_reasons = read_reasons(known_path)
    expected_header, known_header = PROFILE_HEADERS[mode]
    with open(expected_path, "w") as f:
        f.write(expected_header)
        f.write("".join(name + "\n" for name in passed))
    with open(known_path, "w") as f:
        f.write(known_header)
        for name in known:
            # A written explanation ("note: ...") outlives the runs; else today's outcome.
            if old_reasons.get(name, "").startswith("note:") or name not in results:
                reason = old_reasons.get(name, "")
            else:
                reason = f"{results[name]['status']}: {report.short(results[name]['reason'], 150)}"
            f.write(f"{name}  # {reason}\n")
    return len(passed), len(known)


def status_line(result):
    return f"{result['status']}: {report.short(result['reason'])}"


def check_profile(results, expected, known, filter_re, profile_path=PROFILE, known_path=KNOWN):
    """Prints regressions, new failures, fixed and newly passing cases; returns the exit status.
    A listed case that is not passed regresses, whatever its status (in cuda mode,
    no_cuda too: the CUDA EP stopped claiming it)."""
    listed = [name for name in expected if filter_re.search(name)]
    missing = [name for name in listed if name not in results]
    regressed = [n for n in listed if n in results and results[n]["status"] != "passed"]
    known_set, listed_set = set(known), set(expected)
    bugs = [n for n, r in results.items() if fails_check(r) and n not in listed_set]
    new_bugs = [n for n in bugs if n not in known_set]
    fixed = [n for n in known if n in results and not fails_check(results[n])]
    new = [n for n, r in results.items() if r["status"] == "passed" and n not in listed_set]
    for name in missing:
        print(f"MISSING   {name}: listed in {os.path.basename(profile_path)} but not in the "
              "suite")
    for name in regressed:
        print(f"REGRESSED {name}: {status_line(results[name])}")
    for name in new_bugs:
        print(f"NEW BUG   {name}: {status_line(results[name])}")
    for name in bugs:
        if name in known_set:
            print(f"known     {name}: {results[name]['status']}")
    for name in fixed:
        print(f"FIXED     {name}: now {results[name]['status']}; remove it from "
              f"{os.path.basename(known_path)}")
    if new:
        print(f"{len(new)} case(s) pass that {os.path.basename(profile_path)} does not list; "
              "add them with --write-profile:")
        for name in new:
            print(f"  NEW PASS {name}")
    ok = not (missing or regressed or new_bugs)
    print(f"check: {len(listed)} listed case(s): {len(regressed)} regressed, {len(missing)} "
          f"missing; {len(new_bugs)} new and {len(bugs) - len(new_bugs)} known claim/run/"
          f"numbers failure(s) or crash(es); {len(new)} newly passing: "
          f"{'OK' if ok else 'FAILED'}")
    return 0 if ok else 1


# ---------------------------------------------------------------- main


def summarize(results, seconds, mode="cpu"):
    statuses = report.statuses_for(mode)
    counts = report.counts(results, mode)
    harness = sum(1 for r in results.values() if r.get("declined_by") == "harness")
    print(f"{len(results)} cases in {seconds:.0f} s: " +
          ", ".join(f"{counts[s]} {s}" for s in statuses) +
          f" ({harness} of the declines by the harness)")
    if mode == "cuda":
        summarize_cuda(results)
    return counts


def summarize_cuda(results):
    """The CUDA EP's share: the cases it claims a node of, how they ended, each failure."""
    claimed = report.cuda_claimed(results)
    by_status = report.cuda_counts(results)
    others = ", ".join(f"{n} {s}" for s, n in by_status.items() if s != "passed" and n)
    print(f"CUDA EP: claims at least one node of {len(claimed)} case(s) "
          f"({sum(r['cuda_nodes'] for r in claimed.values())} node(s) on cuda_ep); "
          f"{by_status['passed']} of them pass{' (' + others + ')' if others else ''}; "
          f"{report.counts(results, 'cuda')['no_cuda']} compiled case(s) with no node on "
          "cuda_ep not run (no_cuda)")
    failures = [(n, r) for n, r in claimed.items() if r["status"] not in ("passed", "declined")]
    if failures:
        print(f"failures in the cases with a node on cuda_ep: {len(failures)}")
    for name, r in failures:
        print(f"  {r['status']:15} {name}: {report.short(r['reason'])}")
    elsewhere = [(n, r) for n, r in results.items()
                 if n not in claimed and r["status"] in report.BUGS]
    if elsewhere:
        print(f"failures in the cases with no node on cuda_ep: {len(elsewhere)}")
        for name, r in elsewhere:
            print(f"  {r['status']:15} {name}: {report.short(r['reason'])}")


def parse_args():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--ortc", default=os.path.join(ROOT, "build", "tools", "ortc", "ortc"))
    ap.add_argument("--ep", choices=sorted(MODES), default="cpu",
                    help="cpu: the default EPs (the CPU EP); cuda: compile with --ep=cuda,cpu "
                         "and run with --ep-option cuda:device=emulation, only the cases the "
                         "CUDA EP claims a node of (default: %(default)s)")
    ap.add_argument("--dynamic", action="store_true",
                    help="every graph-input dim a fresh dim_param (outputs' dims and "
                         "value_info dropped): the model compiled once for any sizes, then "
                         "run on the case's data; its own profile, known failures and report "
                         "(cpu-dynamic.*, docs/conformance-dynamic.md). With --check it also "
                         f"fails when fewer than {DYNAMIC_FLOOR:.0%} of the static profile's "
                         "count pass (--ep cpu only)")
    ap.add_argument("--data", default=None,
                    help="a folder of node cases (default: written from the pinned onnx "
                         "package under --data-cache)")
    ap.add_argument("--data-cache", default=os.path.join(ROOT, "build", "conformance-data"))
    ap.add_argument("--cache", default=os.path.join(ROOT, "build", "conformance-cache"),
                    help="compiled models by content hash (default: %(default)s)")
    ap.add_argument("--work", default=os.path.join(ROOT, "build", "conformance-work"),
                    help="ortc run's outputs (default: %(default)s)")
    ap.add_argument("--results", default=os.path.join(ROOT, "build", "conformance-results.json"))
    ap.add_argument("--filter", default="", help="regex over case names (re.search)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--compile-timeout", type=int, default=120)
    ap.add_argument("--run-timeout", type=int, default=60)
    ap.add_argument("--keep-work", action="store_true",
                    help="keep the outputs of passing cases too")
    ap.add_argument("--check", action="store_true",
                    help="exit 1 when a case of --profile no longer passes, or a case not in "
                         "--known-failures is a claim failure, run failure or wrong number or "
                         "crashes the compiler")
    ap.add_argument("--profile", default=None,
                    help="the cases that pass (default: test/conformance/<ep>.expected)")
    ap.add_argument("--known-failures", default=None,
                    help="failures --check tolerates (default: "
                         "test/conformance/<ep>.known-failures)")
    ap.add_argument("--write-profile", action="store_true",
                    help="rewrite --profile and --known-failures from this run (with --filter, "
                         "only the cases it matches)")
    ap.add_argument("--write-report", nargs="?", const="", default=None, metavar="PATH",
                    help="write the markdown report (default path: docs/conformance.md, "
                         "--ep cuda: docs/conformance-cuda.md)")
    opts = ap.parse_args()
    mode = dict(MODES[opts.ep])
    if opts.dynamic:
        if opts.ep not in DYNAMIC_MODES:
            ap.error(f"--dynamic takes --ep {', '.join(sorted(DYNAMIC_MODES))}")
        mode.update(DYNAMIC_MODES[opts.ep])
    opts.profile = opts.profile or mode["profile"]
    opts.known_failures = opts.known_failures or mode["known"]
    if opts.write_report == "":
        opts.write_report = mode["report"]
    return opts


def main():
    opts = parse_args()
    if not os.access(opts.ortc, os.X_OK):
        sys.stderr.write(f"run_conformance.py: {opts.ortc} is not an executable (build ortc, "
                         "or pass --ortc)\n")
        return 2
    opts.ortc = os.path.abspath(opts.ortc)
    opts.node_dir = opts.data or node_data.ensure_suite(opts.data_cache)
    identity = ortc_identity(opts.ortc, opts.ep + ("-dynamic" if opts.dynamic else ""))
    opts.cache_dir = prepare_cache(opts.cache, identity)
    os.makedirs(opts.work, exist_ok=True)
    filter_re = re.compile(opts.filter)
    names = [n for n in node_data.list_cases(opts.node_dir) if filter_re.search(n)]
    version = subprocess.run([opts.ortc, "--version"], capture_output=True,
                             text=True).stdout.strip()
    mode_text = "" if opts.ep == "cpu" else (
        f"; --ep {opts.ep}: compile " + " ".join(MODES[opts.ep]["compile_args"]) +
        ", run " + " ".join(MODES[opts.ep]["run_args"]))
    print(f"{len(names)} case(s) from {opts.node_dir}; {version} ({identity}); "
          f"onnx {node_data.onnx_version()}; {opts.jobs} job(s){mode_text}", flush=True)

    start = time.monotonic()
    results = run_all(names, opts)
    seconds = time.monotonic() - start
    counts = summarize(results, seconds, opts.ep)
    meta = {"onnx": node_data.onnx_version(), "ortc": version, "ortc_identity": identity,
            "cases": len(results), "seconds": round(seconds, 1), "jobs": opts.jobs,
            "filter": opts.filter, "rtol": RTOL, "atol": ATOL, "counts": counts,
            "compiled": sum(1 for r in results.values() if "cached" in r),
            "cached": sum(1 for r in results.values() if r.get("cached"))}
    if opts.ep != "cpu":  # cpu mode's results file stays as it was
        meta.update(ep=opts.ep, compile_args=MODES[opts.ep]["compile_args"],
                    run_args=MODES[opts.ep]["run_args"])
    if opts.ep == "cuda":
        meta.update(cuda_claimed=len(report.cuda_claimed(results)),
                    cuda_counts=report.cuda_counts(results))
    os.makedirs(os.path.dirname(os.path.abspath(opts.results)), exist_ok=True)
    with open(opts.results, "w") as f:
        json.dump({"meta": meta, "cases": results}, f, indent=1)
    print(f"results: {opts.results}")
    report.print_summary(results)

    if opts.write_profile:
        passed, known = write_profile(opts.profile, opts.known_failures, results, filter_re,
                                      opts.ep + ("-dynamic" if opts.dynamic else ""))
        print(f"profile: {passed} passing case(s) -> {opts.profile}; {known} known "
              f"failure(s) -> {opts.known_failures}")
    static_passed = [n for n in read_list(MODES[opts.ep]["profile"]) if filter_re.search(n)]
    if opts.dynamic:
        for line in report.dynamic_summary_lines(results, static_passed, DYNAMIC_FLOOR)[:1]:
            print(line)
    if opts.write_report:
        notes = {n: c[len("note:"):].strip() for n, c in read_reasons(opts.known_failures).items()
                 if c.startswith("note:")}
        if opts.dynamic:
            report.write_dynamic(opts.write_report, MODES[opts.ep]["report"], results, meta,
                                 static_passed, DYNAMIC_FLOOR, notes)
        else:
            report.write(opts.write_report, results, meta, notes, opts.ep)
        print(f"report: {opts.write_report}")
    if opts.check:
        return check_profile(results, read_list(opts.profile), read_list(opts.known_failures),
                             filter_re, opts.profile, opts.known_failures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
