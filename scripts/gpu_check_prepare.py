#!/usr/bin/env python3
"""The prepare phase of scripts/gpu-check.sh: everything a GPU machine needs
to check and time ortc's CUDA EP with nothing but bash and the files written
here (see gpu-check.sh for the layout of OUT_DIR and how to run it).

Here, on the build machine: compiles with `ortc compile --ep=cuda,cpu`
  - the shared test models (../shared/models, manifest.json): each is checked
    there against torch's outputs (the .npz) at every shape the manifest
    lists, and timed at batch 1 and 8 (checked against ortc's own CPU EP
    outputs, computed here from a compile with --ep=cpu);
  - the ONNX backend node cases the CUDA EP passes on its host emulation
    (test/conformance/cuda.expected), checked against onnx's expected outputs
    (test_data_set_0, as .npy where numpy holds the dtype, else .pb);
  - GEMM models: a small MatMul per precision (f32 with cuda:precision=fp32
    and tf32, f16) checked against the CPU EP, and a 4096x4096x4096 benchmark
    (f32 fp32/tf32, f16) whose TFLOP/s run.sh reports, with a baseline model
    that does all of the benchmark's work but the GEMMs;
and writes rows.tsv, args/<row> (ortc-run's arguments, one a line), the
inputs and references, bin/ortc-run and the shared libraries it needs.

Usage: gpu_check_prepare.py --ortc ORTC --ortc-run ORTC_RUN --out OUT_DIR
           [--models DIR] [--conformance-data DIR] [--expected FILE]
           [--conformance all|N|REGEX] [--jobs N]
"""

import argparse
import concurrent.futures
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "test", "e2e"))
from e2e_util import output_file, partition_summary  # noqa: E402

# Conformance: onnx's backend-test tolerance (test/conformance/run_conformance.py).
CONF_RTOL, CONF_ATOL, BF16_RTOL = 1e-3, 1e-7, 2.0 ** -6
# Models against torch and against ortc's CPU EP: the e2e tolerance
# (test/e2e/e2e_util.py).
MODEL_RTOL, MODEL_ATOL = 1e-4, 1e-4
# Timing shapes per model (batch B): sequences of 128, images of 224x224
# where the model takes any size (ViT's 64x64 is fixed).
TIMING_BATCHES = (1, 8)
TIMING_SHAPES = {
    "bert_tiny": lambda b: {"input_ids": [b, 128], "attention_mask": [b, 128]},
    "gpt2_tiny": lambda b: {"input_ids": [b, 128], "attention_mask": [b, 128]},
    "vit_tiny": lambda b: {"images": [b, 3, 64, 64]},
    "mobilenetv2_half": lambda b: {"images": [b, 3, 224, 224]},
    "squeezenet": lambda b: {"images": [b, 3, 224, 224]},
}
# Inputs above this many bytes are not shipped: ortc-run makes them (--shape,
# seed 0; the same values on every machine) and the CPU reference is computed
# here from the same ones.
MAX_SHIPPED_INPUT = 256 * 1024
# The GEMM benchmark: M = N = K, a chain of GEMM_CHAIN products per run.
GEMM_SIZE, GEMM_CHAIN, GEMM_EMULATED_SIZE = 4096, 4, 256
# How everything is compiled for the GPU machine: the CUDA EP first, the CPU
# EP for the rest, its code for any AVX2+FMA x86-64 (the GPU machine's CPU is
# not this one; the default, host, could use instructions it lacks).
GPU_COMPILE = ["--ep=cuda,cpu", "--ep-option", "cpu:target=x86-64-v3"]
# Shared libraries a bare machine has (glibc), never copied; the C++ runtime
# goes to lib/compat, used only when the machine's is missing or too old.
GLIBC = re.compile(r"^(linux-vdso|ld-linux|libc\.|libm\.|libdl\.|libpthread\.|librt\.|"
                   r"libresolv\.|libutil\.)")
COMPAT = re.compile(r"^(libstdc\+\+|libgcc_s)\.")
NUMPY_DTYPES = {"bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                "uint64", "float16", "float32", "float64"}


def log(text):
    print(f"prepare: {text}", flush=True)


def run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        lines = [line for line in (result.stderr or result.stdout).splitlines() if line.strip()]
        raise RuntimeError(lines[-1] if lines else f"{cmd[0]} exited {result.returncode}")
    return result


class Rows:
    """rows.tsv and args/<id>: one ortc-run invocation per row.

    Columns: id, phase (model, time, gemm, conformance), modes (gpu,
    emulation or both), timing (none, light, full, bench: how many runs
    run.sh times), flops (0 unless a GEMM benchmark), pair (a GEMM benchmark
    and its baseline share one; else -), label, note (- for none). An empty
    args file: the row could not be prepared (the note says why)."""

    def __init__(self, out):
        self.out = out
        self.lines = []
        os.makedirs(os.path.join(out, "args"), exist_ok=True)

    def add(self, phase, label, args, modes="both", timing="none", flops=0, pair="-", note=""):
        row_id = f"{len(self.lines):04d}"
        with open(os.path.join(self.out, "args", row_id), "w") as f:
            for arg in args:
                if "\n" in arg:
                    raise ValueError(f"argument with a line break: {arg!r}")
                f.write(arg + "\n")
        for text in (label, note):
            if "\t" in text or "\n" in text:
                raise ValueError(f"tab or line break in {text!r}")
        self.lines.append("\t".join([row_id, phase, modes, timing, str(flops), pair, label,
                                     note or "-"]))
        return row_id

    def write(self):
        with open(os.path.join(self.out, "rows.tsv"), "w") as f:
            f.write("# id\tphase\tmodes\ttiming\tflops\tpair\tlabel\tnote\n")
            for line in self.lines:
                f.write(line + "\n")


def rel(out, path):
    return os.path.relpath(path, out)


def shape_text(shapes):
    """{'input_ids': [1, 7], ...} -> "input_ids 1x7, attention_mask 1x7"."""
    return ", ".join(f"{name} {'x'.join(map(str, dims))}" for name, dims in shapes.items())


def generate(generator, shape, rng, dtype):
    kind = generator["kind"]
    if kind == "randint":
        return rng.integers(generator["low"], generator["high"], shape).astype(dtype)
    if kind == "mask_tail":
        mask = np.ones(shape, dtype)
        if len(shape) == 2 and shape[0] > 1:
            mask[1:, shape[1] - shape[1] // 4:] = 0
        return mask
    if kind == "normal":
        return rng.standard_normal(shape).astype(dtype)
    raise ValueError(f"unknown generator {kind}")


def compile_model(ortc, model, ctx, extra=()):
    run([ortc, "compile", model, "-o", ctx, "--quiet", *extra])


# ---------------------------------------------------------------- models


def prepare_models(opts, rows):
    manifest_path = os.path.join(opts.models, "manifest.json")
    if not os.path.isfile(manifest_path):
        log(f"no {manifest_path}: no shared models")
        return
    manifest = json.load(open(manifest_path))
    work = os.path.join(opts.work, "models")
    os.makedirs(work, exist_ok=True)
    for entry in manifest["models"]:
        name = entry["name"]
        source = os.path.join(opts.models, entry["file"])
        ctx = os.path.join(opts.out, "models", f"{name}_ctx.onnx")
        cpu_ctx = os.path.join(work, f"{name}_cpu_ctx.onnx")
        os.makedirs(os.path.dirname(ctx), exist_ok=True)
        started = time.time()
        try:
            compile_model(opts.ortc, source, ctx, GPU_COMPILE)
            compile_model(opts.ortc, source, cpu_ctx, ["--ep=cpu"])
        except RuntimeError as error:
            log(f"{name}: does not compile: {error}")
            # No arguments: run.sh reports the row as not prepared.
            rows.add("model", f"{name}: compile", [], note=f"prepare: {error}"[:200])
            continue
        placement = partition_summary(ctx)
        log(f"{name}: compiled in {time.time() - started:.1f} s ({placement})")
        data = np.load(os.path.join(opts.models, entry["data"]))
        base = os.path.join(opts.out, "data", name)
        # Every shape of the manifest, against torch's outputs.
        for k, shapes in enumerate(entry["shapes"]):
            folder = os.path.join(base, f"shape{k}")
            os.makedirs(os.path.join(folder, "ref"), exist_ok=True)
            args = [rel(opts.out, ctx)]
            for input_name in entry["inputs"]:
                path = os.path.join(folder, f"{output_file(input_name)}.npy")
                np.save(path, data[f"in_{k}_{input_name}"])
                args += ["--input", f"{input_name}={rel(opts.out, path)}"]
            for output_name in entry["outputs"]:
                np.save(os.path.join(folder, "ref", f"{output_file(output_name)}.npy"),
                        data[f"out_{k}_{output_name}"])
                args += ["--check", f"{output_name}={rel(opts.out, os.path.join(folder, 'ref', output_file(output_name) + '.npy'))}"]
            args += ["--rtol", str(MODEL_RTOL), "--atol", str(MODEL_ATOL)]
            rows.add("model", f"{name} {shape_text(shapes)} vs torch", args, timing="light",
                     note=placement if k == 0 else "")
        # Batch 1 and 8, against ortc's CPU EP on the same inputs.
        rng = np.random.default_rng(0)
        for batch in TIMING_BATCHES:
            shapes = TIMING_SHAPES.get(name, lambda b: {
                i: [b] + list(data[f"in_0_{i}"].shape[1:]) for i in entry["inputs"]})(batch)
            folder = os.path.join(base, f"batch{batch}")
            os.makedirs(os.path.join(folder, "ref"), exist_ok=True)
            arrays = {i: generate(entry["generators"][i], shapes[i], rng,
                                  np.dtype(entry["inputs"][i])) for i in entry["inputs"]}
            shipped = sum(a.nbytes for a in arrays.values()) <= MAX_SHIPPED_INPUT
            input_args, reference_args = [], []
            for input_name, array in arrays.items():
                if shipped:
                    path = os.path.join(folder, f"{output_file(input_name)}.npy")
                    np.save(path, array)
                    input_args += ["--input", f"{input_name}={rel(opts.out, path)}"]
                    reference_args += ["--input", f"{input_name}={path}"]
                else:
                    dims = ",".join(map(str, shapes[input_name]))
                    input_args += ["--shape", f"{input_name}={dims}"]
                    reference_args += ["--shape", f"{input_name}={dims}"]
            # The CPU EP's outputs on the same inputs are the reference.
            ref_dir = os.path.join(folder, "ref")
            try:
                run([opts.ortc_run, cpu_ctx, *reference_args, "--output-dir", ref_dir])
            except RuntimeError as error:
                log(f"{name} batch {batch}: the CPU reference failed: {error}")
                continue
            args = [rel(opts.out, ctx), *input_args, "--check-dir", rel(opts.out, ref_dir),
                    "--rtol", str(MODEL_RTOL), "--atol", str(MODEL_ATOL)]
            how = "files" if shipped else "random, seed 0"
            rows.add("time", f"{name} batch {batch}: {shape_text(shapes)} vs ortc cpu", args,
                     timing="full", note=f"inputs: {how}")
            if batch == 1:  # what the CUDA graphs save: the same run on the stream
                rows.add("time", f"{name} batch 1: graphs off", [*args, "--ep-option",
                                                                  "cuda:graphs=off"],
                         timing="full", note="cuda:graphs=off")


# ---------------------------------------------------------------- GEMMs


def gemm_check_model(dtype):
    """y = MatMul(a, b): a [256, 512], b [512, 384]."""
    elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["a", "b"], ["y"], name="matmul")], "gemm_check",
        [helper.make_tensor_value_info("a", elem, [256, 512]),
         helper.make_tensor_value_info("b", elem, [512, 384])],
        [helper.make_tensor_value_info("y", elem, [256, 384])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def gemm_bench_model(dtype, size, chain, with_gemm=True):
    """The benchmark: the matrices are made on the device from four small inputs
    (so a run copies kilobytes, not the 64 MB matrices):
        A = Sin(37 * a_rows x a_cols)              [M, K]
        B = Sin(37 * b_rows x b_cols) * sqrt(2/K)  [K, N]  (keeps the chain's scale)
        C = A B B ... B (chain GEMMs)              [M, N]
        y = ReduceSum(C, axis 1)                   [M]
    The baseline (with_gemm=False) does the same but the GEMMs: y =
    ReduceSum(A + B, axis 1); its time is the overhead run.sh subtracts."""
    elem = TensorProto.FLOAT16 if dtype == np.float16 else TensorProto.FLOAT
    m = n = k = size
    consts = [
        numpy_helper.from_array(np.array(37.0, dtype), "phase"),
        numpy_helper.from_array(np.array(np.sqrt(2.0 / k), dtype), "scale"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
    ]
    nodes = [
        helper.make_node("Mul", ["a_rows", "a_cols"], ["a_outer"]),
        helper.make_node("Mul", ["a_outer", "phase"], ["a_phase"]),
        helper.make_node("Sin", ["a_phase"], ["A"]),
        helper.make_node("Mul", ["b_rows", "b_cols"], ["b_outer"]),
        helper.make_node("Mul", ["b_outer", "phase"], ["b_phase"]),
        helper.make_node("Sin", ["b_phase"], ["b_sin"]),
        helper.make_node("Mul", ["b_sin", "scale"], ["B"]),
    ]
    if with_gemm:
        last = "A"
        for i in range(chain):
            nodes.append(helper.make_node("MatMul", [last, "B"], [f"C{i}"], name=f"gemm{i}"))
            last = f"C{i}"
    else:
        nodes.append(helper.make_node("Add", ["A", "B"], ["AB"]))
        last = "AB"
    nodes.append(helper.make_node("ReduceSum", [last, "axis1"], ["y"], keepdims=0))
    graph = helper.make_graph(
        nodes, "gemm_bench" if with_gemm else "gemm_baseline",
        [helper.make_tensor_value_info("a_rows", elem, [m, 1]),
         helper.make_tensor_value_info("a_cols", elem, [1, k]),
         helper.make_tensor_value_info("b_rows", elem, [k, 1]),
         helper.make_tensor_value_info("b_cols", elem, [1, n])],
        [helper.make_tensor_value_info("y", elem, [m])], initializer=consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def prepare_gemms(opts, rows):
    work = os.path.join(opts.work, "gemm")
    models = os.path.join(opts.out, "models")
    os.makedirs(work, exist_ok=True)
    os.makedirs(models, exist_ok=True)
    rng = np.random.default_rng(1)
    # Numerics: a small MatMul per precision, against the CPU EP for f32
    # (fp32 exactly; tf32 rounds the inputs to 10 mantissa bits: |error| ~
    # 0.01 at K = 512) and numpy for f16 (which the CPU EP's MatMul does not
    # take): the f16 inputs multiplied in f32, rounded to f16 once.
    checks = [("f32 precision=fp32", np.float32, "fp32", 1e-4, 1e-4),
              ("f32 precision=tf32", np.float32, "tf32", 1e-2, 5e-2),
              ("f16", np.float16, None, 2e-3, 2e-2)]
    for label, dtype, precision, rtol, atol in checks:
        tag = "f16" if dtype == np.float16 else f"f32_{precision}"
        source = os.path.join(work, f"gemm_check_{tag}.onnx")
        onnx.save(gemm_check_model(dtype), source)
        ctx = os.path.join(models, f"gemm_check_{tag}_ctx.onnx")
        extra = GPU_COMPILE + (["--ep-option", f"cuda:precision={precision}"]
                                     if precision else [])
        compile_model(opts.ortc, source, ctx, extra)
        folder = os.path.join(opts.out, "data", f"gemm_check_{tag}")
        ref_dir = os.path.join(folder, "ref")
        os.makedirs(ref_dir, exist_ok=True)
        inputs, input_args, arrays = [], [], {}
        for name, shape in (("a", [256, 512]), ("b", [512, 384])):
            path = os.path.join(folder, f"{name}.npy")
            arrays[name] = rng.uniform(-1, 1, shape).astype(dtype)
            np.save(path, arrays[name])
            inputs += ["--input", f"{name}={path}"]
            input_args += ["--input", f"{name}={rel(opts.out, path)}"]
        if dtype == np.float16:
            reference = "numpy"
            product = arrays["a"].astype(np.float32) @ arrays["b"].astype(np.float32)
            np.save(os.path.join(ref_dir, "y.npy"), product.astype(np.float16))
        else:
            reference = "ortc cpu"
            cpu_ctx = os.path.join(work, f"gemm_check_{tag}_cpu_ctx.onnx")
            compile_model(opts.ortc, source, cpu_ctx, ["--ep=cpu"])
            run([opts.ortc, "run", cpu_ctx, *inputs, "--output-dir", ref_dir])
        args = [rel(opts.out, ctx), *input_args]
        args += ["--check-dir", rel(opts.out, ref_dir), "--rtol", str(rtol), "--atol", str(atol)]
        rows.add("gemm", f"gemm check 256x512x384 {label} vs {reference}", args, timing="light",
                 note=partition_summary(ctx))
    # The benchmark: 4096 on the GPU; the same models at 256 on the emulation
    # (the host's reference GEMM would take minutes at 4096).
    for size, modes in ((GEMM_SIZE, "gpu"), (GEMM_EMULATED_SIZE, "emulation")):
        flops = 2 * size ** 3 * GEMM_CHAIN
        for label, dtype, precision in (("f32 precision=fp32", np.float32, "fp32"),
                                        ("f32 precision=tf32", np.float32, "tf32"),
                                        ("f16", np.float16, None)):
            tag = f"{size}_" + ("f16" if dtype == np.float16 else f"f32_{precision}")
            source = os.path.join(work, f"gemm_bench_{tag}.onnx")
            onnx.save(gemm_bench_model(dtype, size, GEMM_CHAIN), source)
            ctx = os.path.join(models, f"gemm_bench_{tag}_ctx.onnx")
            extra = GPU_COMPILE + (["--ep-option", f"cuda:precision={precision}"]
                                         if precision else [])
            compile_model(opts.ortc, source, ctx, extra)
            pair = f"{size}_{'f16' if dtype == np.float16 else 'f32'}"
            rows.add("gemm", f"gemm {size}^3 x{GEMM_CHAIN} {label}", [rel(opts.out, ctx)],
                     modes=modes, timing="bench", flops=flops, pair=pair,
                     note=partition_summary(ctx))
        for label, dtype in (("f32", np.float32), ("f16", np.float16)):
            tag = f"{size}_{label}"
            source = os.path.join(work, f"gemm_baseline_{tag}.onnx")
            onnx.save(gemm_bench_model(dtype, size, GEMM_CHAIN, with_gemm=False), source)
            ctx = os.path.join(models, f"gemm_baseline_{tag}_ctx.onnx")
            compile_model(opts.ortc, source, ctx, GPU_COMPILE)
            rows.add("gemm", f"gemm {size} baseline {label} (all but the GEMMs)",
                     [rel(opts.out, ctx)], modes=modes, timing="bench", pair=tag,
                     note=partition_summary(ctx))
    log(f"gemm: compiled (benchmark {GEMM_SIZE}^3 x{GEMM_CHAIN}, "
        f"{GEMM_EMULATED_SIZE}^3 for the emulation)")


# ---------------------------------------------------------------- conformance


def select_cases(expected, selection):
    names = [line.split("#")[0].strip() for line in open(expected)]
    names = [n for n in names if n]
    if selection == "all":
        return names
    if selection.isdigit():
        # Every n-th case, so that the sample spans the whole list.
        count = int(selection)
        if count >= len(names):
            return names
        step = len(names) / count
        return [names[int(i * step)] for i in range(count)]
    pattern = re.compile(selection)
    return [n for n in names if pattern.search(n)]


def tensor_file(src, dst_stem):
    """Writes the TensorProto at `src` as dst_stem.npy where numpy holds its
    dtype, else copies it as dst_stem.pb; returns (path, dtype name)."""
    tensor = onnx.load_tensor(src)
    array = numpy_helper.to_array(tensor)
    if array.dtype.name in NUMPY_DTYPES:
        np.save(dst_stem + ".npy", array)
        return dst_stem + ".npy", array.dtype.name
    shutil.copyfile(src, dst_stem + ".pb")
    return dst_stem + ".pb", array.dtype.name


def prepare_case(opts, name):
    """(row args, note) for one conformance case, or raises."""
    case_dir = os.path.join(opts.conformance_data, name)
    model = onnx.load(os.path.join(case_dir, "model.onnx"), load_external_data=False)
    data = os.path.join(case_dir, "test_data_set_0")
    folder = os.path.join(opts.out, "cases", name)  # one folder a case: fewer is smaller
    os.makedirs(folder, exist_ok=True)
    ctx = os.path.join(folder, "model_ctx.onnx")
    compile_model(opts.ortc, os.path.join(case_dir, "model.onnx"), ctx, GPU_COMPILE)
    initializers = {t.name for t in model.graph.initializer}
    args = [rel(opts.out, ctx)]
    inputs = [v.name for v in model.graph.input if v.name not in initializers]
    for k, input_name in enumerate(inputs):
        src = os.path.join(data, f"input_{k}.pb")
        if not os.path.isfile(src):
            raise RuntimeError(f"no input_{k}.pb for '{input_name}'")
        path, _ = tensor_file(src, os.path.join(folder, f"in{k}"))
        args += ["--input", f"{input_name}={rel(opts.out, path)}"]
    rtol = CONF_RTOL
    for k, output in enumerate(model.graph.output):
        src = os.path.join(data, f"output_{k}.pb")
        if not os.path.isfile(src):
            continue  # the suite does not check this output
        path, dtype = tensor_file(src, os.path.join(folder, f"out{k}"))
        if dtype == "bfloat16":
            rtol = max(rtol, BF16_RTOL)
        args += ["--check", f"{output.name}={rel(opts.out, path)}"]
    args += ["--rtol", repr(rtol), "--atol", repr(CONF_ATOL)]
    return args


def op_key(node_dir, name):
    """What a case tests: the op of test_X for test_X_expanded*, else its ops."""
    base = name.split("_expanded")[0]
    for case in ((base, name) if base != name else (name,)):
        path = os.path.join(node_dir, case, "model.onnx")
        if os.path.isfile(path):
            nodes = onnx.load(path, load_external_data=False).graph.node
            if len(nodes) == 1 or case == name:
                return "+".join(sorted({n.op_type for n in nodes}))
    return name


def by_priority(node_dir, names):
    """Round robin over the ops the cases test, so that a size cap keeps every
    op before it keeps a second case of any."""
    groups = {}
    for name in names:
        groups.setdefault(op_key(node_dir, name), []).append(name)
    ordered, depth = [], 0
    while len(ordered) < len(names):
        for group in groups.values():
            if depth < len(group):
                ordered.append(group[depth])
        depth += 1
    return ordered


def prepare_conformance(opts, rows):
    if not os.path.isdir(opts.conformance_data):
        log(f"no {opts.conformance_data} (ctest conformance_cpu writes it): no conformance cases")
        return ""
    names = select_cases(opts.expected, opts.conformance)
    started = time.time()
    results = {}
    with concurrent.futures.ThreadPoolExecutor(opts.jobs) as pool:
        futures = {pool.submit(prepare_case, opts, name): name for name in names}
        for future in concurrent.futures.as_completed(futures):
            name = futures[future]
            try:
                results[name] = (future.result(), "")
            except Exception as error:  # a case that no longer compiles is a row too
                results[name] = (None, f"prepare: {str(error)[:160]}")
    # The size cap: cases by priority while they fit beside everything else.
    room = opts.size_cap * 2 ** 20 - folder_bytes(opts.out, skip="cases") - 512 * len(names)
    kept, dropped = set(), 0
    for name in by_priority(opts.conformance_data, names):
        size = folder_bytes(os.path.join(opts.out, "cases", name))
        if size <= room:
            kept.add(name)
            room -= size
        else:
            dropped += 1
            shutil.rmtree(os.path.join(opts.out, "cases", name), ignore_errors=True)
    failed = 0
    for name in names:
        if name not in kept:
            continue
        args, note = results[name]
        if args is None:
            failed += 1
            rows.add("conformance", name, [], note=note)
        else:
            rows.add("conformance", name, args, note=note)
    summary = (f"conformance: {len(kept)} of the {len(names)} cases selected from "
               f"{os.path.basename(opts.expected)}")
    if dropped:
        summary += (f" ({dropped} left out to keep OUT_DIR under {opts.size_cap} MiB; every op "
                    f"the list tests kept once before any twice)")
    log(f"{summary}; compiled in {time.time() - started:.0f} s, {failed} did not compile")
    return summary


# ---------------------------------------------------------------- binaries


def copy_binaries(opts):
    bin_dir = os.path.join(opts.out, "bin")
    lib_dir = os.path.join(opts.out, "lib")
    compat = os.path.join(lib_dir, "compat")
    os.makedirs(bin_dir, exist_ok=True)
    os.makedirs(compat, exist_ok=True)
    shutil.copy2(opts.ortc_run, os.path.join(bin_dir, "ortc-run"))
    subprocess.run(["strip", "--strip-unneeded", os.path.join(bin_dir, "ortc-run")], check=False)
    ldd = run(["ldd", opts.ortc_run]).stdout
    copied = []
    for line in ldd.splitlines():
        match = re.match(r"\s*(\S+)\s+=>\s+(\S+)", line)
        if not match:
            continue
        soname, path = match.groups()
        if re.search(r"lib(LLVM|MLIR|nvrtc|cuda|cublas)", soname, re.IGNORECASE):
            raise RuntimeError(f"ortc-run needs {soname}: it must link the runtime only")
        if GLIBC.match(soname):
            continue
        target = os.path.join(compat if COMPAT.match(soname) else lib_dir, soname)
        shutil.copy2(os.path.realpath(path), target)
        copied.append(os.path.relpath(target, opts.out))
    log(f"bin/ortc-run and {', '.join(copied)}")


def folder_bytes(path, skip=None):
    """The bytes of the files under `path`, less its subfolder `skip`."""
    total = 0
    for folder, subfolders, files in os.walk(path):
        if skip and folder == path and skip in subfolders:
            subfolders.remove(skip)
        total += sum(os.path.getsize(os.path.join(folder, f)) for f in files)
    return total


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ortc", required=True)
    parser.add_argument("--ortc-run", required=True)
    parser.add_argument("--out", required=True)
    parser.add_argument("--models", default=os.path.join(ROOT, "..", "shared", "models"))
    parser.add_argument("--conformance-data",
                        default=os.path.join(ROOT, "build", "conformance-data",
                                             f"onnx-{onnx.__version__}", "node"))
    parser.add_argument("--expected",
                        default=os.path.join(ROOT, "test", "conformance", "cuda.expected"))
    parser.add_argument("--conformance", default="all",
                        help="all, a count (spread over the list) or a regex of case names")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    parser.add_argument("--size-cap", type=int, default=50,
                        help="MiB: conformance cases are left out (by priority) beyond it; the "
                             "device tool carries 64 MiB with the repository")
    opts = parser.parse_args()
    opts.out = os.path.abspath(opts.out)
    opts.work = os.path.join(opts.out + ".work")
    for path in (opts.out, opts.work):
        if os.path.exists(path):
            shutil.rmtree(path)
    os.makedirs(opts.out)
    os.makedirs(opts.work)
    # Private copies: one build of each tool for the whole run, even if build/
    # is relinked meanwhile.
    for attr in ("ortc", "ortc_run"):
        copy = os.path.join(opts.work, os.path.basename(getattr(opts, attr)))
        shutil.copy2(getattr(opts, attr), copy)
        setattr(opts, attr, copy)
    started = time.time()
    rows = Rows(opts.out)
    copy_binaries(opts)
    prepare_models(opts, rows)
    prepare_gemms(opts, rows)
    conformance = prepare_conformance(opts, rows)
    rows.write()
    shutil.copy2(os.path.join(HERE, "gpu-check-run.sh"), os.path.join(opts.out, "run.sh"))
    os.chmod(os.path.join(opts.out, "run.sh"), 0o755)
    shutil.copy2(os.path.join(HERE, "gpu_check_torch.py"), os.path.join(opts.out, "torch_gemm.py"))
    commit = subprocess.run(["git", "-C", ROOT, "describe", "--always", "--dirty"],
                            capture_output=True, text=True).stdout.strip()
    with open(os.path.join(opts.out, "prepared.txt"), "w") as f:
        f.write(f"prepared {time.strftime('%Y-%m-%d %H:%M:%S %Z')} from ortc {commit}; "
                f"{len(rows.lines)} rows; {conformance or 'no conformance cases'}\n")
    shutil.rmtree(opts.work)
    size = folder_bytes(opts.out)
    log(f"{opts.out}: {len(rows.lines)} rows, {size / 2 ** 20:.1f} MiB, "
        f"in {time.time() - started:.0f} s")
    if size > opts.size_cap * 2 ** 20:
        log(f"warning: over {opts.size_cap} MiB; the device tool copies at most 64 MiB with the "
            f"repository")


if __name__ == "__main__":
    sys.exit(main())
