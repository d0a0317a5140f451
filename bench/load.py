#!/usr/bin/env python3
"""Load-time benchmark: creating a session on a compiled ResNet-50 (~98 MiB of
fp32 weights) with ortc's runtime (C API, libortc_runtime.so, through ctypes)
against onnxruntime's session creation on the original model, side by side in
one process. Target (runtime issue): ortc's load of the model as
`ortc compile` writes it by default (a sidecar blob: the blobs are over
1 MiB) at least 10x faster than onnxruntime's session creation; the
stripped libortc_runtime.so (CPU EP only) under 2 MB.

Usage: .venv/bin/python bench/load.py [--lib build/runtime/capi/libortc_runtime.so]
           [--ortc build/tools/ortc/ortc] [--ortc-bench build/bench/ortc-bench-load]
           [--out docs/perf-load.md] [--reps 11] [--workdir DIR]
Prints a markdown table, writes it to --out, and exits 1 when the ratio falls
below 10x (2 when a tool fails or ortc's outputs differ from onnxruntime's).

Steps: bench/models/resnet50.py writes the model (symbolic batch, fixed seed)
into --workdir (default: a temporary folder); `ortc compile` writes it twice,
with a sidecar blob (--no-embed, the default for this size) and inline
(--embed). Then, in one fresh Python process (whose heap building the model
has not grown): the first session of each kind (first-run latency: the first
ortc_session_create after loading the library, the first InferenceSession
after importing onnxruntime), then --reps rounds that each
create and release one session of every kind in turn, so that all kinds see
the same machine. Times are wall clock (a load is mostly page faults, memory
and file reads, which a thread's CPU time leaves partly out); the share of the
wall time the process was on a CPU is reported beside them. onnxruntime runs
twice: with default options, and single-threaded (one intra- and inter-op
thread, sequential), which creates no thread pool; the ratio is taken against
the faster of the two. Last, both runtimes run the model on the same input
and the outputs are compared (rtol = atol = 1e-3).

With --ortc-bench (built by default as ortc-bench-load), the table is
followed by where ortc's load time goes, step by step, for both layouts.
"""
import argparse
import ctypes
import datetime
import gc
import importlib.util
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TARGET_RATIO = 10.0
TARGET_SO_BYTES = 2 * 1000 * 1000
ORTC_OK = 0


def fail(message, code=2):
    sys.stderr.write(f"load.py: {message}\n")
    sys.exit(code)


def load_resnet50_module():
    path = os.path.join(ROOT, "bench", "models", "resnet50.py")
    spec = importlib.util.spec_from_file_location("resnet50", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def prepare(workdir, ortc):
    """Writes the model and compiles it both ways; returns paths and sizes."""
    resnet50 = load_resnet50_module()
    model = resnet50.build("N", seed=0)
    weights = resnet50.weight_bytes(model)
    nodes = len(model.graph.node)
    original = os.path.join(workdir, "resnet50.onnx")
    resnet50.save(model, original)
    del model
    gc.collect()
    paths = {"original": original}
    for layout, flag in (("sidecar", "--no-embed"), ("inline", "--embed")):
        out_dir = os.path.join(workdir, layout)
        os.makedirs(out_dir, exist_ok=True)
        out = os.path.join(out_dir, "resnet50_ctx.onnx")
        cmd = [ortc, "compile", original, "-o", out, flag]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True)
        except OSError as e:
            fail(f"cannot run {ortc}: {e.strerror} (build the ortc target, or pass --ortc)")
        if proc.returncode != 0:
            fail(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
        paths[layout] = out
    files = {name: sum(os.path.getsize(os.path.join(os.path.dirname(p), f))
                       for f in os.listdir(os.path.dirname(p)))
             for name, p in paths.items() if name != "original"}
    files["original"] = os.path.getsize(original)
    return paths, {"weights": weights, "nodes": nodes, "files": files}


class OrtcApi:
    """The few C API functions the benchmark needs (runtime/capi/ortc_runtime.h)."""

    def __init__(self, lib_path):
        start = time.perf_counter()
        try:
            lib = ctypes.CDLL(lib_path)
        except OSError as e:
            fail(f"cannot load {lib_path}: {e} (build the ortc_runtime target, or pass --lib)")
        self.load_seconds = time.perf_counter() - start
        p, vp = ctypes.POINTER, ctypes.c_void_p
        sigs = {
            "ortc_last_error": ([], ctypes.c_char_p),
            "ortc_version": ([], ctypes.c_char_p),
            "ortc_session_create": ([ctypes.c_char_p, vp, p(vp)], ctypes.c_int),
            "ortc_session_release": ([vp], None),
            "ortc_session_output_count": ([vp], ctypes.c_size_t),
            "ortc_tensor_wrap": ([ctypes.c_int32, p(ctypes.c_int64), ctypes.c_size_t, vp,
                                  ctypes.c_size_t, p(vp)], ctypes.c_int),
            "ortc_tensor_release": ([vp], None),
            "ortc_tensor_rank": ([vp], ctypes.c_size_t),
            "ortc_tensor_shape": ([vp], p(ctypes.c_int64)),
            "ortc_tensor_data": ([vp], vp),
            "ortc_tensor_byte_size": ([vp], ctypes.c_size_t),
            "ortc_session_run": ([vp, p(ctypes.c_char_p), p(vp), ctypes.c_size_t,
                                  p(ctypes.c_char_p), p(vp), ctypes.c_size_t], ctypes.c_int),
        }
        for name, (args, res) in sigs.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                fail(f"{lib_path} does not export {name}")
            fn.argtypes, fn.restype = args, res
        self.lib = lib

    def error(self):
        return (self.lib.ortc_last_error() or b"").decode(errors="replace")

    def create(self, path):
        session = ctypes.c_void_p()
        status = self.lib.ortc_session_create(path.encode(), None, ctypes.byref(session))
        if status != ORTC_OK:
            fail(f"ortc_session_create({path}) failed ({status}): {self.error()}")
        return session

    def release(self, session):
        self.lib.ortc_session_release(session)

    def run(self, session, name, x):
        """Runs the one-input model on float32 `x`; returns its first output."""
        import numpy as np

        x = np.ascontiguousarray(x, dtype=np.float32)
        shape = (ctypes.c_int64 * x.ndim)(*x.shape)
        tensor = ctypes.c_void_p()
        if self.lib.ortc_tensor_wrap(1, shape, x.ndim, x.ctypes.data, x.nbytes,
                                     ctypes.byref(tensor)) != ORTC_OK:
            fail(f"ortc_tensor_wrap failed: {self.error()}")
        count = self.lib.ortc_session_output_count(session)
        outputs = (ctypes.c_void_p * count)()
        names = (ctypes.c_char_p * 1)(name.encode())
        inputs = (ctypes.c_void_p * 1)(tensor)
        status = self.lib.ortc_session_run(session, names, inputs, 1, None, outputs, count)
        self.lib.ortc_tensor_release(tensor)
        if status != ORTC_OK:
            fail(f"ortc_session_run failed ({status}): {self.error()}")
        out = outputs[0]
        rank = self.lib.ortc_tensor_rank(out)
        dims = self.lib.ortc_tensor_shape(out)
        result_shape = tuple(dims[i] for i in range(rank))
        nbytes = self.lib.ortc_tensor_byte_size(out)
        data = ctypes.string_at(self.lib.ortc_tensor_data(out), nbytes)
        result = np.frombuffer(data, dtype=np.float32).reshape(result_shape).copy()
        for i in range(count):
            self.lib.ortc_tensor_release(outputs[i])
        return result


def ort_options(ort, single_thread):
    so = ort.SessionOptions()
    if single_thread:
        so.intra_op_num_threads = 1
        so.inter_op_num_threads = 1
        so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return so


def timed(create, release):
    """(create seconds, release seconds, process CPU seconds of both)."""
    cpu0 = time.process_time()
    t0 = time.perf_counter()
    handle = create()
    t1 = time.perf_counter()
    release(handle)
    t2 = time.perf_counter()
    return t1 - t0, t2 - t1, time.process_time() - cpu0


def measure(api, paths, reps):
    """First-run and alternated timings of every kind, in this process."""
    start = time.perf_counter()
    import onnxruntime as ort
    import_seconds = time.perf_counter() - start
    providers = ["CPUExecutionProvider"]
    kinds = {
        "ortc, sidecar blob": (lambda: api.create(paths["sidecar"]), api.release),
        "ortc, inline blob": (lambda: api.create(paths["inline"]), api.release),
    }
    # An InferenceSession is released when its last reference goes: create
    # returns it in a list, and release empties the list.
    for label, single in (("onnxruntime, default options", False),
                          ("onnxruntime, 1 thread", True)):
        so = ort_options(ort, single)
        kinds[label] = (lambda so=so: [ort.InferenceSession(paths["original"], so,
                                                            providers=providers)],
                        lambda holder: holder.clear())
    results = {k: {"create": [], "release": [], "cpu": []} for k in kinds}
    first = {}
    for label, (create, release) in kinds.items():
        gc.collect()
        first[label] = timed(create, release)[0]
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for _ in range(reps):
        for label, (create, release) in kinds.items():
            gc.collect()
            c, r, cpu = timed(create, release)
            results[label]["create"].append(c)
            results[label]["release"].append(r)
            results[label]["cpu"].append(cpu)
    on_cpu = (time.process_time() - cpu0) / (time.perf_counter() - wall0)
    return {"ort": ort, "import_seconds": import_seconds, "first": first,
            "results": results, "on_cpu": on_cpu}


def check_outputs(api, paths, resnet50, ort):
    """Runs both runtimes on one input; returns the largest absolute
    difference per layout and the largest |output| of onnxruntime."""
    import numpy as np

    x = resnet50.sample_input(2, seed=1)
    ref = ort.InferenceSession(paths["original"], providers=["CPUExecutionProvider"]).run(
        None, {resnet50.INPUT_NAME: x})[0]
    worst = {}
    for layout in ("sidecar", "inline"):
        session = api.create(paths[layout])
        got = api.run(session, resnet50.INPUT_NAME, x)
        api.release(session)
        if got.shape != ref.shape or not np.allclose(got, ref, rtol=1e-3, atol=1e-3):
            diff = np.abs(got - ref).max() if got.shape == ref.shape else float("nan")
            fail(f"ortc's output ({layout}) differs from onnxruntime's: shape {got.shape} vs "
                 f"{ref.shape}, max abs diff {diff:.3g}")
        worst[layout] = float(np.abs(got - ref).max())
    return worst, float(np.abs(ref).max())


def stripped_size(lib_path, workdir):
    strip = shutil.which("strip")
    if not strip:
        return None, []
    copy = os.path.join(workdir, "libortc_runtime.stripped.so")
    shutil.copyfile(lib_path, copy)
    subprocess.run([strip, "--strip-all", copy], check=True)
    needed = []
    readelf = shutil.which("readelf")
    if readelf:
        out = subprocess.run([readelf, "-d", lib_path], capture_output=True, text=True).stdout
        needed = [line.split("[", 1)[1].rstrip("]") for line in out.splitlines()
                  if "(NEEDED)" in line]
    return os.path.getsize(copy), needed


def breakdown(bench, paths, reps):
    """ortc-bench-load's phases for both layouts, or None without the tool."""
    if not bench or not os.path.exists(bench):
        return None
    rows = {}
    for layout in ("sidecar", "inline"):
        cmd = [bench, f"--reps={reps}", paths[layout]]
        proc = subprocess.run(cmd, capture_output=True, text=True)
        if proc.returncode != 0:
            fail(f"{' '.join(cmd)} failed ({proc.returncode}): {proc.stderr.strip()}")
        rows[layout] = {}
        for line in proc.stdout.splitlines():
            rec = json.loads(line)
            if rec["kind"] == "phase":
                rows[layout][rec["name"]] = rec
    return rows


PHASES = [
    ("parse", "protobuf parse of model_ctx.onnx (readModelFile)"),
    ("context", "EPContext model: parse + checks + sidecar mmap (loadContextModel)"),
    ("realign", "inline blob copied to 64-byte alignment (aligned_alloc + memcpy; the old path, for comparison)"),
    ("checksum", "XXH3-64 over the blob (faults in the mapped pages)"),
    ("envelope", "openBlob: checksum + section directory"),
    ("open_cpu_blob", "openCpuBlob: envelope + FlatBuffer verifier + plan checks"),
    ("copy_verify", "openCpuBlobCopy: copy + checksum in one pass, huge pages (inline only)"),
    ("code", "kernel shared object: header checks + memfd + dlopen"),
    ("partition", "CpuRuntimeEp::loadContext: the whole partition load"),
    ("session", "Session::load + release: the whole load"),
]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def ms(seconds):
    return f"{seconds * 1e3:.1f}"


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--lib", default=os.path.join(ROOT, "build", "runtime", "capi",
                                                  "libortc_runtime.so"))
    ap.add_argument("--ortc", default=os.path.join(ROOT, "build", "tools", "ortc", "ortc"))
    ap.add_argument("--ortc-bench", default=os.path.join(ROOT, "build", "bench", "ortc-bench-load"),
                    help="the load-phase driver (skipped when missing)")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "perf-load.md"))
    ap.add_argument("--reps", type=int, default=11,
                    help="alternated rounds after the first runs (default 11)")
    ap.add_argument("--workdir", help="where the models go (kept); default: a temporary folder")
    ap.add_argument("--measure", metavar="PATHS_JSON", help=argparse.SUPPRESS)
    opts = ap.parse_args()
    if opts.reps < 1:
        ap.error("--reps must be at least 1")
    if opts.measure:
        return measure_process(opts.lib, json.loads(opts.measure), opts.reps)

    tmp = None
    if opts.workdir:
        os.makedirs(opts.workdir, exist_ok=True)
        workdir = opts.workdir
    else:
        tmp = tempfile.TemporaryDirectory(prefix="ortc-load-")
        workdir = tmp.name
    try:
        return run(opts, workdir)
    finally:
        if tmp:
            tmp.cleanup()


def measure_process(lib, paths, reps):
    """The timed part, in a process of its own (--measure): a heap that
    building the model has not already grown and faulted in, as an
    application's would be. Prints one JSON object."""
    api = OrtcApi(lib)
    m = measure(api, paths, reps)
    worst, ref_max = check_outputs(api, paths, load_resnet50_module(), m["ort"])
    print(json.dumps({"import_seconds": m["import_seconds"], "lib_seconds": api.load_seconds,
                      "first": m["first"], "results": m["results"], "on_cpu": m["on_cpu"],
                      "ort_version": m["ort"].__version__, "worst": worst,
                      "ref_max": ref_max}))
    return 0


def run(opts, workdir):
    paths, facts = prepare(workdir, opts.ortc)
    cmd = [sys.executable, os.path.abspath(__file__), "--measure", json.dumps(paths),
           "--lib", opts.lib, "--reps", str(opts.reps)]
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    if proc.returncode != 0:
        sys.exit(proc.returncode)
    m = json.loads(proc.stdout)
    so_bytes, needed = stripped_size(opts.lib, workdir)
    phases = breakdown(opts.ortc_bench, paths, max(3, opts.reps // 2))

    res = m["results"]
    med = {k: statistics.median(v["create"]) for k, v in res.items()}
    ort_labels = [k for k in res if k.startswith("onnxruntime")]
    ort_best = min(ort_labels, key=lambda k: med[k])
    ratio = {k: med[ort_best] / med[k] for k in res if k.startswith("ortc")}
    gate = ratio["ortc, sidecar blob"]
    verdict = "PASS" if gate >= TARGET_RATIO else "FAIL"
    so_verdict = ("not measured (no strip)" if so_bytes is None else
                  "PASS" if so_bytes < TARGET_SO_BYTES else "FAIL")

    table = ["| session creation | median | min | first run | release (median) | "
             "process CPU (median) | onnxruntime's best / this |",
             "|---|---:|---:|---:|---:|---:|---:|"]
    for label, r in res.items():
        speed = f"{ratio[label]:.1f}x" if label in ratio else (
            "1.0x (reference)" if label == ort_best else f"{med[ort_best] / med[label]:.2f}x")
        table.append(f"| {label} | {ms(med[label])} ms | {ms(min(r['create']))} ms | "
                     f"{ms(m['first'][label])} ms | {ms(statistics.median(r['release']))} ms | "
                     f"{ms(statistics.median(r['cpu']))} ms | {speed} |")

    mib = 2 ** 20
    rel_out = os.path.relpath(opts.out, ROOT)
    header = [
        "# Load benchmark",
        "",
        "Generated by `bench/load.py`: the time to create a session on a compiled ResNet-50 v1",
        f"(`bench/models/resnet50.py`: {facts['nodes']} nodes, Conv and BatchNormalization apart,",
        f"{facts['weights'] / mib:.1f} MiB of fp32 weights, symbolic batch, random weights from a",
        "fixed seed) with ortc's runtime, `ortc_session_create` + `ortc_session_release` through",
        "ctypes on libortc_runtime.so (default options), beside onnxruntime",
        f"{m['ort_version']}'s `InferenceSession` on the original model (CPU EP, default",
        "options, and single-threaded: one intra- and one inter-op thread, sequential). One",
        "fresh Python process (the model is built and compiled before, in another); after a",
        "first run of each kind, "
        f"{opts.reps} rounds each create and release one session of",
        "every kind in turn; medians of wall time. The files are in the page cache (warm",
        "loads). ortc loads the blob as `ortc compile` wrote it: every load verifies the",
        "whole blob (XXH3-64 checksum on the session's threads, FlatBuffer verifier, plan checks, ELF checks) before",
        "it trusts a byte.",
        "",
        f"- CPU: {cpu_model()}, {os.cpu_count()} cores; {platform.system()} "
        f"{platform.release()}; Python {platform.python_version()}",
        f"- files: original {facts['files']['original'] / mib:.1f} MiB; compiled with a sidecar "
        f"{facts['files']['sidecar'] / mib:.1f} MiB (model + `_cpu_ep.bin`, the default above "
        f"1 MiB of blobs); inline {facts['files']['inline'] / mib:.1f} MiB",
        f"- date: {datetime.date.today().isoformat()}; share of wall time this process was on a "
        f"CPU during the rounds: {m['on_cpu']:.2f}; `import onnxruntime` took "
        f"{ms(m['import_seconds'])} ms, loading libortc_runtime.so {ms(m['lib_seconds'])} ms "
        "(neither is in the table)",
        f"- outputs (batch 2) against onnxruntime: max abs difference "
        f"{m['worst']['sidecar']:.2g} (sidecar), {m['worst']['inline']:.2g} (inline), outputs up "
        f"to {m['ref_max']:.2g}",
        "",
        "On a shared machine single loads vary by tens of percent; compare the rows of one run.",
        "",
    ]
    footer = [
        "",
        f"Target: ortc's load of the model as compiled by default (sidecar) at least "
        f"{TARGET_RATIO:.0f}x faster than onnxruntime's session creation (the faster of its two "
        f"rows). Measured: {gate:.1f}x ({verdict}). The inline blob: {ratio['ortc, inline blob']:.1f}x.",
        "",
        "A sidecar is memory-mapped and its weights are used in place, so its load is about one",
        "read of the blob: the checksum, which runs at the speed of memory, in 1 MiB chunks on the",
        "session's threads (container version 2). An inline blob is",
        "copied twice: protobuf copies it out of the file into a string while parsing the",
        "model, and the executor copies it to page-aligned memory, hashing it as it copies. On this",
        "machine, memory a process has not touched before costs more to fault in than to copy",
        "(a virtual machine), so those copies dominate; see the steps below.",
        "",
    ]
    if so_bytes is not None:
        footer += [
            f"libortc_runtime.so, stripped (`strip --strip-all` on a copy): {so_bytes / 1e6:.2f} MB "
            f"({so_bytes} bytes; target < {TARGET_SO_BYTES / 1e6:.0f} MB: {so_verdict}). "
            f"It needs: {', '.join(needed) if needed else '(unknown)'}.",
            "",
        ]
    if phases:
        footer += [
            "## Where ortc's load time goes",
            "",
            "`ortc-bench-load` times each step of the load path on its own (median of "
            f"{max(3, opts.reps // 2)} runs, ms; a sidecar is mapped afresh each run). The rows "
            "nest: `session` holds `context` and `partition`; `partition` holds "
            "`open_cpu_blob` (or, for an inline blob, `copy_verify`) and `code`; "
            "`open_cpu_blob` holds `envelope`, which is mostly `checksum`. `copy_verify`, "
            "what the executor runs for an inline blob, replaced `realign` + `envelope`.",
            "",
            "| step | sidecar | inline |",
            "|---|---:|---:|",
        ]
        for name, text in PHASES:
            cells = []
            for layout in ("sidecar", "inline"):
                rec = phases[layout].get(name)
                cells.append(f"{rec['median_ms']:.1f}" if rec else "-")
            footer.append(f"| `{name}`: {text} | {cells[0]} | {cells[1]} |")
        footer.append("")
    footer += [
        "Reproduce:",
        "",
        "```sh",
        "cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release",
        "ninja -C build ortc ortc_runtime ortc-bench-load",
        f".venv/bin/python bench/load.py --out {rel_out}",
        "```",
        "",
    ]
    text = "\n".join(header + table + footer)
    print(text)
    with open(opts.out, "w") as f:
        f.write(text)
    return 0 if verdict == "PASS" else 1


if __name__ == "__main__":
    sys.exit(main())
