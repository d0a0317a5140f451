#!/usr/bin/env python3
"""ortc side by side with onnxruntime and OpenVINO (issue 16).

  python3 bench/peers.py                      # the full run (about an hour here)
  python3 bench/peers.py --quick              # batch 1 / seq 128, a few rounds
  python3 bench/peers.py --models mlp,resnet50 --threads 1 --no-write
  python3 bench/peers.py --export-only        # export and compile every variant, no timing
  python3 bench/peers.py --setup              # only create/complete the bench venv
  python3 bench/peers.py --report-from bench/out/peers/results.json   # rewrite the page
  python3 bench/peers.py --help               # every option (--rounds, --budget, --out, ...)

The bench needs torch, torchvision, transformers, onnxscript, onnxruntime,
OpenVINO and matplotlib, which the project itself never needs: they live in
their own venv, .venv-bench/ at the repository root, pinned by
bench/requirements-bench.txt. Run with any python3, this script creates or
completes that venv (again when the requirements file changes) and re-runs
itself with the venv's python. It needs the ortc build: build/tools/ortc/ortc
and libortc_runtime.so (--ortc, --lib to point elsewhere).

What it does, per model (MLP 4x1024, MobileNetV2, ResNet-50, BERT-base,
GPT-2 small without cache, ViT-B/16) and shape (batch 1 and 8 for the CNNs,
seq 128 and 512 for BERT and GPT-2, batch 1 for the MLP and ViT):
 1. exports it with torch.onnx.export (dynamo, opset 18, static shape, random
    weights; bench/peers_export.py in a subprocess) into WORKDIR/MODEL_SHAPE/,
    cached (redone when the export code or torch changes);
 2. compiles it with `ortc compile` (redone when the ortc binary is newer);
 3. for each thread count, starts one worker process per runtime
    (bench/peers_worker.py: ortc through the C API with ctypes, onnxruntime's
    InferenceSession, OpenVINO's compiled model) on the same .npy inputs,
    warms them up, then times them in interleaved rounds (each round runs each
    runtime K times, the order rotating), and collects load time, p50/p90,
    peak RSS and the outputs, which are compared with onnxruntime's;
 4. at 1 thread and the first shape, takes `ortc bench --profile` and keeps
    the top kernel shares.
It prints each model's tables as they come, saves WORKDIR/results.json, and
writes docs/performance.md and docs/performance_ratios.png (unless --no-write).
A failure of one model or runtime is a row saying so, not the end of the run.
"""
import argparse
import datetime
import hashlib
import json
import os
import platform
import select
import shlex
import shutil
import signal
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
VENV = os.path.join(ROOT, ".venv-bench")
REQUIREMENTS = os.path.join(BENCH, "requirements-bench.txt")
STAMP = os.path.join(VENV, ".peers-requirements.sha256")
WORKER = os.path.join(BENCH, "peers_worker.py")
EXPORTER = os.path.join(BENCH, "peers_export.py")
DEFAULT_WORKDIR = os.path.join(BENCH, "out", "peers")
PAGE = os.path.join(ROOT, "docs", "performance.md")
RUNTIMES = ("ortc", "onnxruntime", "openvino")

# --- the bench venv -------------------------------------------------------------


def venv_python():
    return os.path.join(VENV, "bin", "python")


def running_in_venv():
    return os.path.realpath(sys.prefix) == os.path.realpath(VENV)


def requirements_digest():
    with open(REQUIREMENTS, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def ensure_venv():
    """Creates .venv-bench if missing and installs bench/requirements-bench.txt
    unless the venv's stamp says this very file is installed already."""
    if not os.path.exists(venv_python()):
        print(f"peers.py: creating {VENV}", flush=True)
        if subprocess.run([sys.executable, "-m", "venv", VENV]).returncode != 0:
            sys.exit("peers.py: python3 -m venv failed (on Debian: apt-get install python3-venv)")
    digest = requirements_digest()
    if os.path.exists(STAMP) and open(STAMP).read().strip() == digest:
        return
    print(f"peers.py: installing {os.path.relpath(REQUIREMENTS, ROOT)} into {VENV} "
          "(torch and its libraries: several GB, minutes)", flush=True)
    pip = [venv_python(), "-m", "pip", "install", "-q", "--disable-pip-version-check", "-r",
           REQUIREMENTS]
    if subprocess.run(pip).returncode != 0:
        sys.exit("peers.py: pip install failed (see above)")
    with open(STAMP, "w") as f:
        f.write(digest + "\n")


def enter_venv(argv):
    """Makes sure the venv is complete and continues inside it (re-exec)."""
    ensure_venv()
    if not running_in_venv():
        os.execv(venv_python(), [venv_python(), os.path.abspath(__file__)] + argv)


# --- command line ------------------------------------------------------------------


def parse_args(argv):
    parser = argparse.ArgumentParser(
        description="ortc beside onnxruntime and OpenVINO: latency, load, memory, accuracy.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="See the module docstring (bench/peers.py) for what each step does.")
    parser.add_argument("--models", default="",
                        help="comma list of mlp,mobilenet_v2,resnet50,bert_base,gpt2,vit_b16 "
                             "(default: all)")
    parser.add_argument("--threads", default="1,2", help="comma list (default 1,2)")
    parser.add_argument("--quick", action="store_true",
                        help="batch 1 / seq 128 only, 5 rounds, ~2 s of runs per runtime")
    parser.add_argument("--rounds", type=int,
                        help="rounds per configuration (default 30, --quick 5); given, a slow "
                             "model is not cut to fewer")
    parser.add_argument("--runs-per-round", type=int, default=0,
                        help="runs of each runtime per round (default 0: chosen so the timed "
                             "runs of a runtime take about --budget seconds)")
    parser.add_argument("--budget", type=float,
                        help="seconds of timed runs per runtime and configuration "
                             "(default 45, --quick 2)")
    parser.add_argument("--min-rounds", type=int, default=10,
                        help="the fewest rounds a slow model is cut to (default 10)")
    parser.add_argument("--warmup", type=int, default=3, help="warm-up runs (default 3)")
    parser.add_argument("--settle-ms", type=float, default=10,
                        help="pause before a runtime's runs, after the previous runtime's "
                             "worker is idle (its threads that spin after a run, onnxruntime's "
                             "and OpenVINO's, have gone to sleep) (default 10)")
    parser.add_argument("--load-reps", type=int, default=3,
                        help="session creations per worker; the median is reported (default 3)")
    parser.add_argument("--profile-runs", type=int, default=0,
                        help="runs of `ortc bench --profile` (default: about 10 s worth)")
    parser.add_argument("--no-profile", action="store_true", help="skip `ortc bench --profile`")
    parser.add_argument("--export-only", action="store_true",
                        help="export and compile every variant, print the outcome, time nothing")
    parser.add_argument("--no-write", action="store_true",
                        help="leave docs/ alone (results.json is still written)")
    parser.add_argument("--out", default=PAGE,
                        help="the page to write (default docs/performance.md); the chart goes "
                             "beside it as NAME_ratios.png")
    parser.add_argument("--workdir", default=DEFAULT_WORKDIR,
                        help="exports, inputs, outputs, logs, results.json "
                             "(default bench/out/peers)")
    parser.add_argument("--ortc", default=os.path.join(ROOT, "build", "tools", "ortc", "ortc"))
    parser.add_argument("--lib", help="libortc_runtime.so (default: found under build/)")
    parser.add_argument("--timeout", type=float, default=1200,
                        help="seconds a worker may take to answer one request (default 1200)")
    parser.add_argument("--setup", action="store_true",
                        help="create/complete .venv-bench and exit")
    parser.add_argument("--report-from", metavar="RESULTS_JSON",
                        help="rewrite the page from a saved results.json and exit (with "
                             "--no-write: print the page's tables instead)")
    args = parser.parse_args(argv)
    args.rounds_given = args.rounds is not None
    if args.rounds is None:
        args.rounds = 5 if args.quick else 30
    if args.budget is None:
        args.budget = 2.0 if args.quick else 45.0
    args.warmup = max(1, args.warmup)
    args.thread_counts = [int(t) for t in args.threads.split(",") if t]
    return args


def find_library(args):
    """The libortc_runtime.so to load: --lib, else the one under build/."""
    if args.lib:
        return args.lib
    for folder, _, files in os.walk(os.path.join(ROOT, "build")):
        if "libortc_runtime.so" in files:
            return os.path.join(folder, "libortc_runtime.so")
    return os.path.join(ROOT, "build", "runtime", "capi", "libortc_runtime.so")


def exit_text(code):
    """"exit 1", or "killed by SIGSEGV" for a process a signal ended."""
    if isinstance(code, int) and code < 0:
        try:
            return f"killed by {signal.Signals(-code).name}"
        except ValueError:
            return f"killed by signal {-code}"
    return f"exit {code}"


def last_line(text, limit=400):
    """The last non-empty line of `text` (an error's one-line reason)."""
    lines = [line.strip() for line in (text or "").splitlines() if line.strip()]
    return (lines[-1] if lines else "(no message)")[:limit]


def failure(code, stderr):
    """A failed process as one line: how it ended and its last line of stderr."""
    line = last_line(stderr)
    return exit_text(code) + ("" if line == "(no message)" else f": {line}")


# --- the plan -------------------------------------------------------------------

# Rates of the slowest runtime on one core of this kind of machine (AVX-512
# EPYC), for the time estimate only.
GFLOPS_PER_CORE = {"mlp": 20.0, "cnn": 55.0, "text": 55.0, "vision": 60.0}
MOBILENET_GFLOPS = 45.0
TWO_THREAD_SPEEDUP = 1.8


class Variant:
    """One model at one shape, and its files in the workdir."""

    def __init__(self, spec, size, workdir):
        self.spec, self.size = spec, size
        self.tag = spec.tag(size)
        self.folder = os.path.join(workdir, f"{spec.name}_{self.tag}")
        self.onnx = os.path.join(self.folder, "model.onnx")
        self.ctx = os.path.join(self.folder, "ctx", "model_ctx.onnx")
        self.inputs = os.path.join(self.folder, "inputs")
        self.export = {}  # facts, or {"error": ...}
        self.compile = {}  # facts, or {"error": ...}

    def estimate_ms(self, threads):
        """A rough latency, for the time estimate."""
        rate = MOBILENET_GFLOPS if self.spec.name == "mobilenet_v2" else \
            GFLOPS_PER_CORE[self.spec.family]
        speedup = TWO_THREAD_SPEEDUP if threads >= 2 else 1.0
        return max(0.05, 1e3 * self.spec.gflop_at(self.size) / rate / speedup)


def plan_variants(args, models):
    """The variants to run, in order."""
    names = [n for n in args.models.split(",") if n] or list(models)
    unknown = [n for n in names if n not in models]
    if unknown:
        sys.exit(f"peers.py: unknown model {unknown[0]} (models: {','.join(models)})")
    variants = []
    for name in names:
        spec = models[name]
        sizes = spec.sizes[:1] if args.quick else spec.sizes
        variants += [Variant(spec, size, args.workdir) for size in sizes]
    return variants


def plan_rounds(latency_ms, args):
    """(rounds, runs per round) for a configuration whose slowest runtime takes
    `latency_ms` a run: K runs so that the timed runs take about --budget s,
    and fewer rounds (not under --min-rounds) when even one run a round
    would take over twice that, unless --rounds was given."""
    budget_ms = args.budget * 1e3
    rounds = args.rounds
    if args.runs_per_round:
        return rounds, args.runs_per_round
    runs = max(1, min(200, round(budget_ms / (rounds * max(latency_ms, 1e-3)))))
    if runs == 1 and not args.rounds_given and rounds * latency_ms > 2 * budget_ms:
        rounds = max(args.min_rounds, int(2 * budget_ms / latency_ms))
    return rounds, runs


def estimate_seconds(variants, args):
    """Rough seconds of each stage of the run, from nominal FLOP rates."""
    seconds = {"export": 0.0, "compile": 0.0, "timed runs": 0.0, "loads and warm-up": 0.0,
               "profile": 0.0}
    for v in variants:
        megabytes = 4 * v.spec.params_m
        if not export_is_cached(v):
            seconds["export"] += 8 + 0.015 * megabytes + 4 * v.estimate_ms(1) / 1e3
        if not compile_is_current(v, args.ortc):
            seconds["compile"] += 5 + 0.03 * megabytes
        for threads in ([] if args.export_only else args.thread_counts):
            latency = v.estimate_ms(threads)
            rounds, runs = plan_rounds(latency, args)
            seconds["timed runs"] += 3 * rounds * runs * latency / 1e3
            seconds["loads and warm-up"] += 3 * (
                1.5 + args.load_reps * (0.2 + 0.0015 * megabytes)
                + (args.warmup + 1) * latency / 1e3)
        if v.size == v.spec.sizes[0] and not (args.no_profile or args.export_only):
            seconds["profile"] += 12 + 0.004 * megabytes
    return seconds


def print_plan(variants, args):
    """What the run will do and roughly how long it takes."""
    kind = "export and compile only" if args.export_only else "timed"
    print(f"peers.py: {len(variants)} model shapes x threads {args.threads} x 3 runtimes ({kind})")
    for v in variants:
        cached = [text for text, done in (("export cached", export_is_cached(v)),
                                          ("compile cached", compile_is_current(v, args.ortc)))
                  if done]
        print(f"  {v.spec.name:13} {v.tag:7} ~{v.estimate_ms(1):8.1f} ms a run at 1 thread"
              + (f"  [{', '.join(cached)}]" if cached else ""))
    seconds = estimate_seconds(variants, args)
    parts = ", ".join(f"{k} {v / 60:.0f} min" for k, v in seconds.items() if v >= 30)
    budget = "" if args.export_only else \
        f"{args.budget:g} s of timed runs per runtime and configuration; "
    print(f"expected: about {sum(seconds.values()) / 60:.0f} min ({parts or 'under a minute'}); "
          f"{budget}rough, from nominal FLOP rates", flush=True)


# --- export and compile -----------------------------------------------------------


def write_inputs(variant, input_arrays):
    """The inputs of the variant as inputs/NAME.npy (fixed seed, every run)."""
    import numpy as np

    os.makedirs(variant.inputs, exist_ok=True)
    for name, array in input_arrays(variant.spec, variant.size).items():
        np.save(os.path.join(variant.inputs, f"{name}.npy"), array)


def export_is_cached(variant):
    """The facts of the variant's cached export if it is of this export code
    and this torch, else None."""
    from importlib.metadata import version

    import peers_export

    facts_path = os.path.join(variant.folder, "export.json")
    if not (os.path.exists(facts_path) and os.path.exists(variant.onnx)):
        return None
    with open(facts_path) as f:
        facts = json.load(f)
    same_torch = facts.get("torch", "").split("+")[0] == version("torch").split("+")[0]
    return facts if same_torch and facts.get("export_version") == \
        peers_export.EXPORT_VERSION else None


def compile_is_current(variant, ortc):
    """Whether the variant's model_ctx.onnx is newer than the ortc binary and
    the exported model."""
    facts_path = os.path.join(variant.folder, "compile.json")
    if not all(os.path.exists(p) for p in (variant.ctx, facts_path, ortc, variant.onnx)):
        return False
    newest_input = max(os.path.getmtime(ortc), os.path.getmtime(variant.onnx))
    return os.path.getmtime(variant.ctx) >= newest_input


def export_variant(variant):
    """Exports the variant (bench/peers_export.py in a subprocess) unless a
    cached export of this export code and torch is there."""
    facts_path = os.path.join(variant.folder, "export.json")
    cached = export_is_cached(variant)
    if cached:
        variant.export = dict(cached, cached=True)
        return True
    os.makedirs(variant.folder, exist_ok=True)
    for stale in ("model.onnx", "model.onnx.data", "export.json"):
        if os.path.exists(os.path.join(variant.folder, stale)):
            os.remove(os.path.join(variant.folder, stale))
    log_path = os.path.join(variant.folder, "export.log")
    command = [sys.executable, EXPORTER, variant.spec.name, str(variant.size), variant.onnx]
    try:
        with open(log_path, "w") as log:
            proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=log, text=True,
                                  timeout=3600)
    except subprocess.TimeoutExpired:
        variant.export = {"error": "export took over an hour"}
        return False
    if proc.returncode != 0 or not os.path.exists(variant.onnx):
        with open(log_path) as log:
            variant.export = {"error": failure(proc.returncode, log.read())}
        return False
    variant.export = json.loads(last_line(proc.stdout, limit=100000))
    with open(facts_path, "w") as f:
        json.dump(variant.export, f, indent=1)
    return True


def compile_variant(variant, ortc):
    """`ortc compile` of the variant unless its model_ctx.onnx is newer than
    both the ortc binary and the exported model."""
    facts_path = os.path.join(variant.folder, "compile.json")
    ctx_dir = os.path.dirname(variant.ctx)
    if not os.path.exists(ortc):
        variant.compile = {"error": f"no {ortc} (build the ortc target, or pass --ortc)"}
        return False
    if compile_is_current(variant, ortc):
        with open(facts_path) as f:
            variant.compile = dict(json.load(f), cached=True)
        return True
    shutil.rmtree(ctx_dir, ignore_errors=True)
    os.makedirs(ctx_dir)
    command = [ortc, "compile", variant.onnx, "-o", variant.ctx, "--quiet"]
    start = time.perf_counter()
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=3600)
    except subprocess.TimeoutExpired:
        variant.compile = {"error": "ortc compile took over an hour"}
        return False
    except OSError as error:
        variant.compile = {"error": f"cannot run {ortc}: {error.strerror}"}
        return False
    seconds = round(time.perf_counter() - start, 1)
    if proc.returncode != 0 or not os.path.exists(variant.ctx):
        variant.compile = {"error": failure(proc.returncode, proc.stderr)}
        return False
    files = {f: os.path.getsize(os.path.join(ctx_dir, f)) / 2**20 for f in sorted(os.listdir(ctx_dir))}
    variant.compile = {"seconds": seconds, "files": files}
    with open(facts_path, "w") as f:
        json.dump(variant.compile, f, indent=1)
    return True


def prepare_variant(variant, args, exporter):
    """Inputs, export and compile of one variant; failures stay in the variant."""
    os.makedirs(variant.folder, exist_ok=True)
    write_inputs(variant, exporter.input_arrays)
    print(f"[{variant.spec.name} {variant.tag}] export ...", end=" ", flush=True)
    if export_variant(variant):
        print("cached" if variant.export.get("cached") else f"{variant.export['seconds']} s",
              end="; compile ... ", flush=True)
        compile_variant(variant, args.ortc)
        if "error" in variant.compile:
            print("FAILED: " + variant.compile["error"], flush=True)
        else:
            print("cached" if variant.compile.get("cached") else
                  f"{variant.compile['seconds']} s", flush=True)
    else:
        print("FAILED: " + variant.export["error"], flush=True)


# --- workers -------------------------------------------------------------------


class WorkerError(RuntimeError):
    pass


class Worker:
    """One runtime in a subprocess (bench/peers_worker.py), spoken to in JSON lines."""

    def __init__(self, runtime, model, variant, threads, args, log_path):
        command = [sys.executable, WORKER, runtime, "--model", model, "--inputs", variant.inputs,
                   "--threads", str(threads), "--load-reps", str(args.load_reps)]
        if runtime == "ortc":
            command += ["--lib", args.library]
        self.runtime, self.timeout, self.log_path = runtime, args.timeout, log_path
        self.log = open(log_path, "w")
        self.process = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                        stderr=self.log, cwd=ROOT)
        self.pending = b""

    def _reason(self):
        """Why the worker went away: its exit status and its log's last line."""
        try:
            code = self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            return "the worker closed its output but did not exit"
        self.log.flush()
        with open(self.log_path, errors="replace") as log:
            return "worker " + failure(code, log.read())

    def read(self):
        """The worker's next reply; WorkerError for a failure, a crash or a timeout."""
        deadline = time.monotonic() + self.timeout
        fd = self.process.stdout.fileno()
        while b"\n" not in self.pending:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                self.kill()
                raise WorkerError(f"no answer within {self.timeout:.0f} s")
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                raise WorkerError(self._reason())
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        reply = json.loads(line)
        if not reply.get("ok"):
            raise WorkerError(reply.get("error", "failed"))
        return reply

    def request(self, message):
        """Sends one request and returns the reply."""
        try:
            self.process.stdin.write((json.dumps(message) + "\n").encode())
            self.process.stdin.flush()
        except BrokenPipeError:
            raise WorkerError(self._reason()) from None
        return self.read()

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()

    def close(self):
        """Ends the worker (it has answered "quit", or it failed)."""
        try:
            self.process.stdin.close()
        except OSError:
            pass
        try:
            self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.kill()
        self.log.close()


def start_workers(variant, threads, args, config):
    """One loaded worker per runtime that can run (started one after the
    other, so that loads do not compete); failures go into `config`."""
    workers = {}
    for runtime in RUNTIMES:
        if "error" in variant.export:
            config["runtimes"][runtime] = {"ok": False, "error": "export failed"}
            continue
        if runtime == "ortc" and "error" in variant.compile:
            config["runtimes"][runtime] = {"ok": False,
                                           "error": "compile failed: " + variant.compile["error"]}
            continue
        model = variant.ctx if runtime == "ortc" else variant.onnx
        log_path = os.path.join(variant.folder, f"worker_{runtime}_{threads}t.log")
        worker = Worker(runtime, model, variant, threads, args, log_path)
        try:
            hello = worker.read()
        except WorkerError as error:
            worker.close()
            config["runtimes"][runtime] = {"ok": False, "error": f"load: {error}"}
            continue
        config["runtimes"][runtime] = {"ok": True, "load_ms": hello["load_median_ms"],
                                       "load_all_ms": hello["load_ms"],
                                       "version": hello["version"], "info": hello["info"]}
        workers[runtime] = worker
    return workers


def drop(workers, config, runtime, stage, error):
    """Marks a runtime failed at `stage` and ends its worker."""
    config["runtimes"][runtime] = {"ok": False, "error": f"{stage}: {error}"}
    workers.pop(runtime).close()


def process_cpu_ns(pid):
    """CPU time of every thread of process `pid` so far, in ns (schedstat), or
    None where /proc does not say."""
    total = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                total += int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    return total


def wait_until_idle(pid, window_s=0.005, busy_share=0.05, longest_s=1.0):
    """Returns once process `pid` uses under `busy_share` of a CPU over a
    window, or after `longest_s`: a runtime's threads may spin for tens of
    milliseconds after its runs (onnxruntime's do at 2 threads), and would
    take the CPUs of the runtime timed next."""
    deadline = time.monotonic() + longest_s
    last = process_cpu_ns(pid)
    while last is not None and time.monotonic() < deadline:
        time.sleep(window_s)
        now = process_cpu_ns(pid)
        if now is None or now - last < busy_share * window_s * 1e9:
            return
        last = now


def time_workers(workers, args, config):
    """Warm-up, then interleaved rounds; returns each runtime's run times (ms)."""
    warm = {}
    for runtime in list(workers):
        try:
            times = workers[runtime].request({"cmd": "run", "n": args.warmup})["ms"]
            warm[runtime] = statistics.median(times[1:] or times)
        except WorkerError as error:
            drop(workers, config, runtime, "warm-up", error)
    if not warm:
        return {}
    rounds, runs = plan_rounds(max(warm.values()), args)
    config["rounds"], config["runs_per_round"] = rounds, runs
    samples = {runtime: [] for runtime in workers}
    order = list(workers)
    for index in range(rounds):
        shift = index % len(order)
        for runtime in order[shift:] + order[:shift]:
            if runtime not in workers:
                continue
            time.sleep(args.settle_ms / 1e3)
            try:
                samples[runtime] += workers[runtime].request({"cmd": "run", "n": runs})["ms"]
            except WorkerError as error:
                drop(workers, config, runtime, f"round {index + 1}", error)
                continue
            wait_until_idle(workers[runtime].process.pid)
    return {runtime: samples[runtime] for runtime in workers}


def finish_workers(workers, variant, threads, config):
    """Saves each runtime's outputs, ends the workers, records peak RSS;
    returns runtime -> outputs file."""
    outputs = {}
    for runtime in list(workers):
        path = os.path.join(variant.folder, f"outputs_{runtime}_{threads}t.npz")
        try:
            workers[runtime].request({"cmd": "save", "path": path})
            outputs[runtime] = path
            config["runtimes"][runtime]["peak_rss_mb"] = \
                workers[runtime].request({"cmd": "quit"})["peak_rss_mb"]
            workers.pop(runtime).close()
        except WorkerError as error:
            drop(workers, config, runtime, "outputs", error)
    return outputs


def compare(path, reference_path):
    """Max |a - ref| over every output, and that over max |ref|."""
    import numpy as np

    with np.load(path) as got, np.load(reference_path) as want:
        pairs = [(got[n], want[n]) for n in want.files if n in got.files]
        if len(pairs) != len(want.files):  # names differ: by position
            pairs = [(got[a], want[b]) for a, b in zip(got.files, want.files)]
        if not pairs:
            return {"error": "no outputs to compare"}
        max_abs, ref_abs = 0.0, 0.0
        for a, b in pairs:
            if a.shape != b.shape:
                return {"error": f"shape {list(a.shape)} vs onnxruntime's {list(b.shape)}"}
            a64, b64 = a.astype(np.float64), b.astype(np.float64)
            max_abs = max(max_abs, float(np.abs(a64 - b64).max()) if a.size else 0.0)
            ref_abs = max(ref_abs, float(np.abs(b64).max()) if b.size else 0.0)
    return {"max_abs": max_abs, "ort_max_abs": ref_abs,
            "rel": max_abs / ref_abs if ref_abs > 0 else max_abs}


def run_config(variant, threads, args):
    """One model, shape and thread count: every runtime, timed side by side."""
    import numpy as np

    start = time.perf_counter()
    config = {"model": variant.spec.name, "tag": variant.tag, "threads": threads,
              "rounds": 0, "runs_per_round": 0, "runtimes": {}, "errors": {}}
    workers = start_workers(variant, threads, args, config)
    try:
        samples = time_workers(workers, args, config)
        outputs = finish_workers(workers, variant, threads, config)
    finally:
        for worker in workers.values():
            worker.kill()
            worker.close()
    for runtime, times in samples.items():
        entry = config["runtimes"][runtime]
        if entry.get("ok") and times:
            entry.update(p50=float(np.percentile(times, 50)), p90=float(np.percentile(times, 90)),
                         mean=float(np.mean(times)), runs=len(times))
    if "onnxruntime" in outputs:
        for runtime in ("ortc", "openvino"):
            if runtime in outputs:
                config["errors"][runtime] = compare(outputs[runtime], outputs["onnxruntime"])
    config["seconds"] = round(time.perf_counter() - start, 1)
    return config


def summary_line(config):
    """One line about a finished configuration."""
    parts = []
    for runtime in RUNTIMES:
        entry = config["runtimes"].get(runtime, {})
        parts.append(f"{runtime} {entry['p50']:.3g} ms" if entry.get("p50") is not None
                     else f"{runtime} FAILED")
    return (f"[{config['model']} {config['tag']} {config['threads']}T] " + ", ".join(parts)
            + f" ({config['rounds']}x{config['runs_per_round']} runs, {config['seconds']:.0f} s)")


# --- profile ------------------------------------------------------------------------


def profile_groups(profile):
    """(key, share, ms) per step kind and op types, largest first: the
    profile's own "groups" where it has them, else its steps summed."""
    rows = profile.get("groups")
    if rows is None:
        rows = profile.get("steps", [])
    eps = {row.get("ep") or row.get("partition") for row in rows}
    groups = {}
    for row in rows:
        key = f"{row.get('kind', '?')} {row.get('ops') or row.get('callee') or '?'}"
        if len(eps) > 1 and row.get("ep"):
            key = f"{row['ep']}: {key}"
        share, ms = groups.get(key, (0.0, 0.0))
        groups[key] = (share + float(row.get("share", 0)), ms + float(row.get("ms", 0)))
    return sorted(((k, s, m) for k, (s, m) in groups.items()), key=lambda g: -g[1])


def longest_steps(profile, count=6):
    """The `count` longest single steps: what they run, on what output shape,
    for which nodes (a long list of node names cut short)."""
    steps = sorted(profile.get("steps", []), key=lambda step: -float(step.get("ms", 0)))
    out = []
    for step in steps[:count]:
        nodes = step.get("nodes", "")
        out.append({"kind": step.get("kind", "?"), "ops": step.get("ops") or step.get("callee"),
                    "shape": step.get("shape", ""),
                    "nodes": nodes if len(nodes) <= 40 else nodes[:37] + "...",
                    "share": float(step.get("share", 0)), "ms": float(step.get("ms", 0))})
    return out


def profile_model(variant, args, latency_ms):
    """`ortc bench --profile` at 1 thread: the top 8 (kind + op types) shares,
    or {"error"} ("profile unavailable" on the page) when ortc refuses."""
    if "error" in variant.export or "error" in variant.compile:
        return {"error": "the model did not export or compile"}
    # ortc bench times N runs, then profiles N more: about 10 s in all.
    runs = args.profile_runs or max(3, min(500, int(5000 / max(latency_ms or 100.0, 0.01))))
    out = os.path.join(variant.folder, "profile_1t.json")
    if os.path.exists(out):
        os.remove(out)
    command = [args.ortc, "bench", variant.ctx, "--profile", "--profile-json", out,
               "--threads", "1", "--runs", str(runs), "--json"]
    for name in sorted(os.listdir(variant.inputs)):
        command += ["--input", f"{name[:-4]}={os.path.join(variant.inputs, name)}"]
    try:
        proc = subprocess.run(command, capture_output=True, text=True, timeout=1800)
    except subprocess.TimeoutExpired:
        return {"error": "ortc bench --profile took over 30 min"}
    except OSError as error:
        return {"error": f"cannot run {args.ortc}: {error.strerror}"}
    if proc.returncode != 0 or not os.path.exists(out):
        return {"error": "`ortc bench --profile` " + failure(proc.returncode, proc.stderr)}
    with open(out) as f:
        profile = json.load(f)
    groups = profile_groups(profile)
    top = [{"key": k, "share": s, "ms": m} for k, s, m in groups[:8]]
    rest = groups[8:]
    return {"threads": 1, "shape": variant.spec.shape_text(variant.size),
            "runs": profile.get("runs", runs), "total_ms": profile.get("total_ms"), "top": top,
            "longest": longest_steps(profile),
            "rest_share": sum(s for _, s, _ in rest), "rest_ms": sum(m for _, _, m in rest),
            "outside_share": max(0.0, 1.0 - sum(s for _, s, _ in groups))}


# --- facts about the machine and the versions ----------------------------------------


def fma_peak_gflops(ortc):
    """This core's fp32 FMA peak in GFLOP/s, measured by ortc-bench-gemm
    --peak-only (built beside `ortc`: build/bench/), or None without it."""
    build = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(ortc))))
    tool = os.path.join(build, "bench", "ortc-bench-gemm")
    if not os.access(tool, os.X_OK):
        return None
    try:
        out = subprocess.run([tool, "--peak-only"], capture_output=True, text=True,
                             timeout=120).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    peaks = [json.loads(line).get("gflops") for line in out.splitlines()
             if line.startswith("{") and '"peak"' in line]
    peaks = [p for p in peaks if p]
    return max(peaks) if peaks else None


def machine_facts():
    """CPU model, flags, cores, memory and system."""
    info = {}
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            key, _, value = line.partition(":")
            info[key.strip()] = value.strip()
    except OSError:
        pass
    flags = set(info.get("Flags", "").split())
    with open("/proc/meminfo") as f:
        memory_kib = int(next(line for line in f if line.startswith("MemTotal")).split()[1])
    return {"model": info.get("Model name", platform.processor() or "?"),
            "cpus": os.cpu_count(), "threads_per_core": info.get("Thread(s) per core", "?"),
            "flags": {flag: flag in flags for flag in ("avx2", "fma", "avx512f")},
            "bf16": bool(flags & {"avx512_bf16", "amx_bf16"}),
            "memory_gib": memory_kib / 2**20,
            "system": f"{platform.system()} {platform.release()}"}


def versions(library_version=None):
    """ortc's git hash and the Python packages' versions."""
    from importlib.metadata import PackageNotFoundError, version

    def git(*command):
        return subprocess.run(["git", "-C", ROOT, *command], capture_output=True,
                              text=True).stdout.strip()

    found = {"ortc_git": git("rev-parse", "--short=12", "HEAD") or "?",
             "python": platform.python_version()}
    if git("status", "--porcelain", "--untracked-files=no"):
        found["ortc_git"] += " + uncommitted changes"
    if library_version:
        found["ortc_library"] = library_version
    for package in ("onnxruntime", "openvino", "torch", "torchvision", "transformers", "numpy"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            pass
    return found


# --- main ------------------------------------------------------------------------------


def write_page(results, path, report):
    """The page (docs/performance.md) and its chart beside it (NAME_ratios.png)."""
    chart_path = os.path.splitext(path)[0] + "_ratios.png"
    chart = os.path.basename(chart_path)
    try:
        if not report.write_chart(results, chart_path):
            chart = None
    except Exception as error:  # noqa: BLE001 - a page without its chart beats no page
        print(f"peers.py: no chart: {error}", file=sys.stderr)
        chart = None
    with open(path, "w") as f:
        f.write(report.page(results, chart))
    print(f"wrote {path}" + (f" and {chart_path}" if chart else ""))


def benchmark_model(name, variants, args, results, report):
    """Every variant and thread count of one model, then its profile."""
    for variant in variants:
        for threads in args.thread_counts:
            try:
                config = run_config(variant, threads, args)
            except Exception as error:  # noqa: BLE001 - a bug here must not cost the others
                reason = "peers.py: " + " ".join(f"{type(error).__name__}: {error}".split())
                config = {"model": variant.spec.name, "tag": variant.tag, "threads": threads,
                          "rounds": 0, "runs_per_round": 0, "errors": {}, "seconds": 0,
                          "runtimes": {r: {"ok": False, "error": reason} for r in RUNTIMES}}
            results["configs"].append(config)
            print(summary_line(config), flush=True)
    if not args.no_profile:
        first = variants[0]
        ortc = next((c["runtimes"]["ortc"] for c in results["configs"]
                     if c["model"] == name and c["tag"] == first.tag and c["threads"] == 1
                     and c["runtimes"].get("ortc", {}).get("ok")), {})
        print(f"[{name}] ortc bench --profile ...", end=" ", flush=True)
        profile = profile_model(first, args, ortc.get("p50"))
        results["models"][name]["profile"] = profile
        print(profile.get("error") or f"{len(profile['top'])} groups", flush=True)
    configs = [c for c in results["configs"] if c["model"] == name]
    print("\n" + report.console_tables(results, configs) + "\n", flush=True)


def main(argv):
    args = parse_args(argv)
    enter_venv(argv)
    if args.setup:
        print(f"peers.py: {VENV} is complete")
        return 0
    sys.path.insert(0, BENCH)
    import peers_export as exporter
    import peers_report as report

    if args.report_from:
        with open(args.report_from) as f:
            results = json.load(f)
        if args.no_write:
            print(report.page(results, None))
        else:
            write_page(results, args.out, report)
        return 0

    started = time.perf_counter()
    args.workdir = os.path.abspath(args.workdir)
    args.library = find_library(args)
    os.makedirs(args.workdir, exist_ok=True)
    variants = plan_variants(args, exporter.MODELS)
    print_plan(variants, args)
    results = {"meta": {}, "models": {}, "configs": []}
    by_model = {}
    for variant in variants:
        by_model.setdefault(variant.spec.name, []).append(variant)
    for name, model_variants in by_model.items():
        spec = model_variants[0].spec
        entry = results["models"][name] = {"title": spec.title, "strict": spec.strict,
                                           "variants": {}}
        for variant in model_variants:
            prepare_variant(variant, args, exporter)
            entry["variants"][variant.tag] = {"size": variant.size,
                                              "shape": spec.shape_text(variant.size),
                                              "gflop": spec.gflop_at(variant.size),
                                              "export": variant.export,
                                              "compile": variant.compile}
        if not args.export_only:
            benchmark_model(name, model_variants, args, results, report)
    if args.export_only:
        print("\n" + report.variants_table(results))
        return 0

    library_version = next((c["runtimes"]["ortc"].get("version") for c in results["configs"]
                            if c["runtimes"].get("ortc", {}).get("ok")), None)
    pinning = next((c["runtimes"]["openvino"]["info"].get("ENABLE_CPU_PINNING")
                    for c in results["configs"] if c["runtimes"].get("openvino", {}).get("ok")),
                   None)
    peak = fma_peak_gflops(args.ortc)
    results["meta"] = {
        "date": datetime.date.today().isoformat(),
        "command": "bench/peers.py " + " ".join(shlex.quote(a) for a in argv),
        "minutes": (time.perf_counter() - started) / 60,
        "machine": dict(machine_facts(), fma_peak_gflops=peak),
        "versions": versions(library_version),
        "openvino_pinning": pinning,
        "settings": {"opset": exporter.OPSET, "warmup": args.warmup, "budget_s": args.budget,
                     "rounds": args.rounds, "rounds_given": args.rounds_given,
                     "min_rounds": args.min_rounds,
                     "load_reps": args.load_reps, "settle_ms": args.settle_ms,
                     "threads": args.thread_counts},
    }
    results_path = os.path.join(args.workdir, "results.json")
    with open(results_path, "w") as f:
        json.dump(results, f, indent=1)
    print("\n" + report.targets_table(results) + "\n")
    print(f"saved {os.path.relpath(results_path, ROOT)}; "
          f"{results['meta']['minutes']:.1f} min in all")
    if not args.no_write:
        write_page(results, args.out, report)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
