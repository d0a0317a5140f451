"""Tables, targets, chart and page of bench/peers.py.

Everything here reads the results document that bench/peers.py builds (and
saves as WORKDIR/results.json), so a page can be rewritten from a saved run:
  .venv-bench/bin/python bench/peers.py --report-from bench/out/peers/results.json

The results document:
  {"meta": {...machine, versions, settings...},
   "models": {NAME: {"title", "strict", "variants": {TAG: VARIANT}, "profile": PROFILE}},
   "configs": [CONFIG, ...]}
  VARIANT: {"size", "shape", "export": {...} | {"error"}, "compile": {...} | {"error"}}
  CONFIG:  {"model", "tag", "threads", "rounds", "runs_per_round",
            "runtimes": {RUNTIME: {"ok", "error", "load_ms", "p50", "p90", "runs",
                                   "peak_rss_mb", "version"}},
            "errors": {RUNTIME: {"max_abs", "rel", "ort_max_abs"} | {"error"}}}
"""
RUNTIMES = ("ortc", "onnxruntime", "openvino")
PEERS = ("onnxruntime", "openvino")
LABEL = {"ortc": "ortc", "onnxruntime": "onnxruntime", "openvino": "OpenVINO"}

# The targets of issue 16.
RATIO_TARGET = 1.0
STRICT_RATIO_TARGET = 0.85
LOAD_SPEEDUP_TARGET = 10.0
REL_ERROR_TARGET = 1e-4


# --- numbers of one configuration ---------------------------------------------


def timing(config, runtime):
    """The runtime's entry of `config` if it ran, else None."""
    entry = config["runtimes"].get(runtime)
    return entry if entry and entry.get("ok") else None


def ratio(config, peer):
    """ortc p50 / the peer's p50, or None."""
    ortc, other = timing(config, "ortc"), timing(config, peer)
    if not ortc or not other or "p50" not in ortc or "p50" not in other:
        return None
    return ortc["p50"] / other["p50"]


def best_ratio(config):
    """ortc p50 / the faster peer's p50 (the largest of the ratios), or None
    when no peer ran."""
    ratios = [r for r in (ratio(config, p) for p in PEERS) if r is not None]
    return max(ratios) if ratios else None


def ratio_target(results, config):
    """The latency target of the configuration's model."""
    strict = results["models"][config["model"]]["strict"]
    return STRICT_RATIO_TARGET if strict else RATIO_TARGET


def load_speedup(config):
    """onnxruntime's load time / ortc's, or None."""
    ortc, ort = timing(config, "ortc"), timing(config, "onnxruntime")
    if not ortc or not ort or "load_ms" not in ortc or "load_ms" not in ort:
        return None
    return ort["load_ms"] / ortc["load_ms"]


def shape_of(results, config):
    """The printed shape of the configuration's variant."""
    return results["models"][config["model"]]["variants"][config["tag"]]["shape"]


def title_of(results, config):
    return results["models"][config["model"]]["title"]


# --- formatting --------------------------------------------------------------


def ms(value):
    """Milliseconds with three significant digits."""
    if value is None:
        return "-"
    if value >= 100:
        return f"{value:.0f}"
    if value >= 10:
        return f"{value:.1f}"
    if value >= 1:
        return f"{value:.2f}"
    return f"{value:.3f}"


def times(value):
    return "-" if value is None else f"{value:.2f}"


def sci(value):
    return "-" if value is None else f"{value:.1e}"


def size_text(mib):
    """A file size given in MiB, in MiB or KiB."""
    return f"{mib:.1f} MiB" if mib >= 1 else f"{mib * 1024:.0f} KiB"


def table(header, rows, align=None):
    """A markdown table; `align` is one of 'l'/'r' per column (default: first
    column left, the others right)."""
    align = align or ["l"] + ["r"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if a == "l" else "---:" for a in align) + "|"]
    lines += ["| " + " | ".join(str(c).replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def failure_text(config, runtime):
    """"failed: reason" for a runtime that did not run, else None."""
    entry = config["runtimes"].get(runtime)
    if entry is None:
        return "not run"
    if not entry.get("ok"):
        return "failed: " + entry.get("error", "?")
    return None


def verdict(value, target, lower_is_better=True):
    """"met", or by how much it was missed: "missed by 12%" (over a limit) or
    "missed: 3.1x short" (under a minimum)."""
    if value is None:
        return "n/a"
    if lower_is_better:
        return "met" if value <= target else f"missed by {100 * (value / target - 1):.0f}%"
    return "met" if value >= target else f"missed: {target / value:.1f}x short"


# --- the tables ---------------------------------------------------------------


def latency_table(results, configs):
    """Latency: p50/p90 per runtime, the ratios and the target, one row per config."""
    header = ["model", "shape", "threads", "ortc p50 ms", "p90", "onnxruntime p50", "p90",
              "OpenVINO p50", "p90", "ortc/ort", "ortc/OV", "ortc/best", "target"]
    rows, notes = [], []
    for config in configs:
        cells = [title_of(results, config), shape_of(results, config), config["threads"]]
        for runtime in RUNTIMES:
            entry = timing(config, runtime)
            cells += [ms(entry.get("p50")), ms(entry.get("p90"))] if entry else ["failed", "-"]
            failure = failure_text(config, runtime)
            if failure:
                notes.append(f"{title_of(results, config)} {config['tag']} {config['threads']}T, "
                             f"{LABEL[runtime]}: {failure}")
        best = best_ratio(config)
        target = ratio_target(results, config)
        cells += [times(ratio(config, "onnxruntime")), times(ratio(config, "openvino")),
                  times(best), f"<= {target}: {verdict(best, target)}"]
        rows.append(cells)
    text = table(header, rows, ["l", "l"] + ["r"] * (len(header) - 2))
    if notes:
        text += "\n\n" + "\n".join(f"- {note}" for note in notes)
    return text


def resources_table(results, configs):
    """Load time, peak RSS and the error against onnxruntime, one row per config."""
    header = ["model", "shape", "threads", "load ortc ms", "onnxruntime", "OpenVINO",
              "ort/ortc", "peak RSS ortc MiB", "onnxruntime", "OpenVINO",
              "ortc max abs err", "ortc rel err", "OpenVINO rel err"]
    rows = []
    for config in configs:
        cells = [title_of(results, config), shape_of(results, config), config["threads"]]
        cells += [ms((timing(config, r) or {}).get("load_ms")) for r in RUNTIMES]
        cells.append(times(load_speedup(config)))
        cells += [ms((timing(config, r) or {}).get("peak_rss_mb")) for r in RUNTIMES]
        ortc_error = config.get("errors", {}).get("ortc", {})
        ov_error = config.get("errors", {}).get("openvino", {})
        cells += [sci(ortc_error.get("max_abs")), sci(ortc_error.get("rel")),
                  sci(ov_error.get("rel"))]
        rows.append(cells)
    return table(header, rows, ["l", "l"] + ["r"] * (len(header) - 2))


def variants_table(results):
    """Export and compile of every variant: facts or the failure."""
    header = ["model", "shape", "export", "torch output max abs / std", "ortc compile",
              "compiled files"]
    rows = []
    for name, model in results["models"].items():
        for tag, variant in model["variants"].items():
            export = variant.get("export", {})
            compiled = variant.get("compile", {})
            if "error" in export:
                export_cell, stats = "failed: " + export["error"], "-"
            else:
                export_cell = f"{export.get('seconds', '?')} s"
                stats = (f"{export.get('torch_output_max_abs', 0):.3g} / "
                         f"{export.get('torch_output_std', 0):.3g}")
            if "error" in compiled:
                compile_cell, files = "failed: " + compiled["error"], "-"
            elif compiled:
                compile_cell = f"{compiled.get('seconds', '?')} s"
                files = ", ".join(f"{f} ({size_text(mb)})"
                                  for f, mb in compiled.get("files", {}).items())
            else:
                compile_cell, files = "-", "-"
            rows.append([model["title"], variant["shape"], export_cell, stats, compile_cell, files])
    return table(header, rows, ["l", "l", "l", "r", "l", "l"])


def profile_section(results):
    """"Where the time goes": the top kernel shares of each model."""
    parts = []
    for name, model in results["models"].items():
        profile = model.get("profile")
        if not profile:
            continue
        heading = f"### {model['title']}"
        if profile.get("error"):
            parts.append(f"{heading}\n\nprofile unavailable: {profile['error']}")
            continue
        intro = (f"{heading}\n\n`ortc bench --profile` at {profile['shape']}, "
                 f"{profile['threads']} thread, {profile['runs']} runs: "
                 f"{ms(profile['total_ms'])} ms a run.")
        rows = [[step["key"], f"{100 * step['share']:.1f}%", ms(step["ms"])]
                for step in profile["top"]]
        if profile.get("rest_share", 0) > 0:
            rows.append(["(the other steps)", f"{100 * profile['rest_share']:.1f}%",
                         ms(profile.get("rest_ms"))])
        if profile.get("outside_share", 0) > 0.0005:
            outside = profile["outside_share"]
            rows.append(["(outside the steps: the session's own work)", f"{100 * outside:.1f}%",
                         ms(outside * profile["total_ms"])])
        text = intro + "\n\n" + table(["kind and ops", "share", "ms a run"], rows)
        longest = profile.get("longest")
        if longest:
            text += "\n\nThe longest steps:\n\n" + table(
                ["step", "output", "nodes", "share", "ms a run"],
                [[f"{step['kind']} {step['ops']}", step["shape"], step["nodes"],
                  f"{100 * step['share']:.1f}%", ms(step["ms"])] for step in longest])
        parts.append(text)
    return "\n\n".join(parts) if parts else "No profile was taken."


# --- targets -------------------------------------------------------------------


def _worst(items):
    """(value, label) of the largest value, or None."""
    items = [i for i in items if i[0] is not None]
    return max(items) if items else None


def targets_table(results):
    """One row per target of issue 16: the worst case and met / missed."""
    configs = results["configs"]

    def label(config):
        return f"{title_of(results, config)} {shape_of(results, config)}, {config['threads']}T"

    rows = []
    for strict, text, target in ((False, "ortc / best(onnxruntime, OpenVINO), every model",
                                  RATIO_TARGET),
                                 (True, "the same on MLP, BERT-base, GPT-2, ViT-B/16",
                                  STRICT_RATIO_TARGET)):
        chosen = [c for c in configs if not strict or results["models"][c["model"]]["strict"]]
        values = [(best_ratio(c), label(c)) for c in chosen]
        rows.append(_target_row(text, f"<= {target}", values, target, True))
    speedups = [(load_speedup(c), label(c)) for c in configs]
    rows.append(_target_row("load: onnxruntime session creation / ortc session create",
                            f">= {LOAD_SPEEDUP_TARGET:.0f}x", speedups, LOAD_SPEEDUP_TARGET,
                            False))
    rss = []
    for c in configs:
        ortc, ort = timing(c, "ortc"), timing(c, "onnxruntime")
        if ortc and ort and ortc.get("peak_rss_mb") and ort.get("peak_rss_mb"):
            rss.append((ortc["peak_rss_mb"] / ort["peak_rss_mb"], label(c)))
    rows.append(_target_row("peak RSS: ortc worker / onnxruntime worker", "<= 1.0", rss, 1.0,
                            True))
    errors = [(c.get("errors", {}).get("ortc", {}).get("rel"), label(c)) for c in configs]
    rows.append(_target_row("max abs(ortc - ort) / max abs(ort)", f"< {REL_ERROR_TARGET:g}", errors,
                            REL_ERROR_TARGET, True, scientific=True))
    return table(["target", "wanted", "worst", "where", "configurations met", "verdict"], rows,
                 ["l", "l", "r", "l", "r", "l"])


def _target_row(text, wanted, values, target, lower_is_better, scientific=False):
    """A row of targets_table over (value, label) pairs."""
    measured = [(v, l) for v, l in values if v is not None]
    if not measured:
        return [text, wanted, "-", "-", "0 of 0", "n/a (nothing measured)"]
    if lower_is_better:
        value, where = max(measured)
        met = sum(1 for v, _ in measured if v <= target)
    else:
        value, where = min(measured)
        met = sum(1 for v, _ in measured if v >= target)
    shown = sci(value) if scientific else f"{value:.2f}"
    return [text, wanted, shown, where, f"{met} of {len(measured)}",
            verdict(value, target, lower_is_better)]


# --- chart --------------------------------------------------------------------


def write_chart(results, path):
    """A bar chart of ortc/onnxruntime and ortc/OpenVINO per configuration, one
    panel per thread count, with the 1.0 and 0.85 targets drawn."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    threads = sorted({c["threads"] for c in results["configs"]})
    if not threads:
        return False
    figure, axes = plt.subplots(len(threads), 1, figsize=(12, 3.8 * len(threads)), squeeze=False)
    for axis, count in zip(axes[:, 0], threads):
        configs = [c for c in results["configs"] if c["threads"] == count]
        width, highest = 0.38, 1.0
        for k, (peer, color) in enumerate((("onnxruntime", "#4c72b0"), ("openvino", "#dd8452"))):
            values = [ratio(c, peer) for c in configs]
            positions = [i + (k - 0.5) * width for i in range(len(configs))]
            axis.bar(positions, [v or 0 for v in values], width, label=f"ortc / {LABEL[peer]}",
                     color=color)
            for x, v in zip(positions, values):
                axis.text(x, v or 0.02, f"{v:.2f}" if v else "failed", ha="center",
                          va="bottom", fontsize=7, rotation=0 if v else 90)
                highest = max(highest, v or 0)
        axis.axhline(RATIO_TARGET, color="black", linestyle="--", linewidth=1,
                     label=f"target {RATIO_TARGET}")
        axis.axhline(STRICT_RATIO_TARGET, color="gray", linestyle=":", linewidth=1,
                     label=f"target {STRICT_RATIO_TARGET}\n(MLP, BERT, GPT-2, ViT)")
        axis.set_ylim(0, highest * 1.15)
        axis.set_xticks(range(len(configs)))
        axis.set_xticklabels([f"{title_of(results, c)}\n{c['tag']}" for c in configs], fontsize=8)
        axis.set_ylabel("p50 latency ratio")
        axis.set_title(f"{count} thread{'s' if count > 1 else ''}: below 1, ortc is faster",
                       fontsize=10)
        axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return True


# --- the page -------------------------------------------------------------------


def rate_section(results):
    """Each 1-thread configuration's nominal GFLOP over each runtime's p50,
    as GFLOP/s and as a share of the core's measured fp32 FMA peak; for the
    models held to <= 0.85, the share that ratio to the faster peer needs."""
    peak = results["meta"]["machine"].get("fma_peak_gflops")
    if not peak:
        return "The FMA peak was not measured (no ortc-bench-gemm beside ortc)."
    header = ["model", "shape", "nominal GFLOP", "ortc GFLOP/s", "onnxruntime", "OpenVINO",
              "ortc needs for its target"]
    rows = []
    for config in results["configs"]:
        model = results["models"].get(config["model"], {})
        gflop = model.get("variants", {}).get(config["tag"], {}).get("gflop")
        if config["threads"] != 1 or not gflop:
            continue
        cells = [title_of(results, config), shape_of(results, config), f"{gflop:.3g}"]
        best = None
        for runtime in RUNTIMES:
            p50 = (timing(config, runtime) or {}).get("p50")
            if not p50:
                cells.append("-")
                continue
            rate = gflop / (p50 / 1e3)
            cells.append(f"{rate:.1f} ({100 * rate / peak:.0f}%)")
            if runtime != "ortc":
                best = p50 if best is None else min(best, p50)
        target = ratio_target(results, config)
        if best:
            needed = gflop / (target * best / 1e3)
            cells.append(f"{needed:.1f} ({100 * needed / peak:.0f}%)")
        else:
            cells.append("-")
        rows.append(cells)
    return (f"The nominal FLOPs of each model (a direct convolution's for the CNNs: Winograd "
            f"does fewer) over each runtime's p50 at 1 thread, beside this core's fp32 FMA "
            f"peak, {peak:.1f} GFLOP/s (`ortc-bench-gemm --peak-only`: 12 independent FMA "
            f"chains). The last column is the rate ortc would need for its latency target "
            f"against the faster peer: above 100% the target cannot be met in fp32 on this "
            f"core. The MLP at batch 1 is bound by reading its 16 MB of weights (from L3), "
            f"not by its FMAs.\n\n"
            + table(header, rows, ["l", "l"] + ["r"] * (len(header) - 2)))


def machine_lines(meta):
    """The bullet lines about the machine and the versions."""
    machine = meta["machine"]
    flags = ", ".join(f"{flag} {'yes' if have else 'no'}" for flag, have in machine["flags"].items())
    versions = meta["versions"]
    return [
        f"- CPU: {machine['model']}, {machine['cpus']} logical CPUs "
        f"({machine['threads_per_core']} thread(s) per core); {flags}; "
        f"{machine['memory_gib']:.0f} GiB memory; {machine['system']}",
        f"- ortc: git {versions['ortc_git']} (runtime library {versions.get('ortc_library', '?')}); "
        f"onnxruntime {versions.get('onnxruntime', '?')}; OpenVINO {versions.get('openvino', '?')}; "
        f"torch {versions.get('torch', '?')}, torchvision {versions.get('torchvision', '?')}, "
        f"transformers {versions.get('transformers', '?')}; Python {versions['python']}",
        f"- date: {meta['date']}; command: `{meta['command']}`; the whole run took "
        f"{meta.get('minutes', 0):.{0 if meta.get('minutes', 0) >= 10 else 1}f} min",
    ]


def method_text(meta):
    """How the numbers were taken, one bullet per part."""
    settings = meta["settings"]
    return "\n".join([
        "- **Models**: exported from PyTorch by `torch.onnx.export(dynamo=True, "
        f"opset_version={settings['opset']})` at a static shape, random weights from a fixed "
        "seed (torchvision's and transformers' default configurations); the CNNs' "
        "BatchNorm statistics are re-estimated on random images (train mode, cumulative "
        "average) so that their outputs are not degenerate.",
        "- **ortc**: the `model_ctx.onnx` that `ortc compile` wrote (default options), run "
        "in-process through the C API (ctypes on `libortc_runtime.so`, "
        "`ortc_session_options_set_intra_op_threads(T)`, inputs wrapped once, outputs "
        "written in place).",
        "- **onnxruntime**: `InferenceSession` on the exported model, CPU EP, "
        "intra-op threads T, one inter-op thread, default graph optimizations.",
        "- **OpenVINO**: `compile_model(model, \"CPU\", {PERFORMANCE_HINT: LATENCY, "
        "NUM_STREAMS: 1, INFERENCE_NUM_THREADS: T, INFERENCE_PRECISION_HINT: f32})` and one "
        "infer request. f32 like the others: on a CPU with bf16 instructions "
        f"({'as this one' if meta['machine'].get('bf16') else 'not this one'}), OpenVINO's "
        "default precision is bf16, 1e-3 to 1e-1 away from onnxruntime's output.",
        "- **Timing**: each runtime in its own worker process, all on the same inputs (.npy, "
        f"fixed seed). After {settings['warmup']} warm-up runs each, rounds interleave the "
        "runtimes (the order rotating each round), each round running every runtime K "
        "times in turn; after a runtime's K runs the next waits until that worker "
        "process is idle (under 5% of a CPU over 5 ms, by its threads' schedstat; "
        "onnxruntime's threads spin about 48 ms after its runs at 2 threads, which a fixed "
        f"10 ms pause let into the next runtime's time) and then {settings.get('settle_ms', 0):g}"
        " ms more, so that the noise of a shared machine falls on all alike and no runtime "
        "runs beside another's spinning threads. K is "
        f"chosen so that a runtime's timed runs take about {settings['budget_s']:g} s over "
        f"{settings['rounds']} rounds"
        + ("" if settings.get("rounds_given") else
           f" (a slow model: fewer rounds, at least {settings['min_rounds']})")
        + "; the rounds and K are under each latency table. p50 and p90 are over all timed "
        "runs.",
        f"- **Load**: the median of {settings['load_reps']} creations in the worker, files in "
        "the page cache: ortc `ortc_session_create` on `model_ctx.onnx`; onnxruntime "
        "`InferenceSession(...)`; OpenVINO `read_model` + `compile_model`.",
        "- **Peak RSS**: each worker's VmHWM at its end (Python and numpy included, alike "
        "for all).",
        "- **Errors**: the max absolute difference to onnxruntime's output, and that over "
        "the largest absolute value of onnxruntime's output.",
        "- **Threads**: the benchmark pins nothing, the OS schedules (OpenVINO's own "
        f"ENABLE_CPU_PINNING: {meta.get('openvino_pinning', '?')}). This machine has "
        f"{meta['machine']['cpus']} cores: at 2 threads a runtime has all of it, and "
        "anything else running shows.",
    ])


def page(results, chart_name):
    """The whole of docs/performance.md."""
    meta = results["meta"]
    threads = sorted({c["threads"] for c in results["configs"]})
    sections = [
        "# Performance against onnxruntime and OpenVINO",
        "Generated by `bench/peers.py` (issue 16): latency, load time, peak memory "
        "and accuracy of ortc beside onnxruntime and OpenVINO on "
        f"{len(results['models'])} models, at {' and '.join(str(t) for t in threads)} "
        f"thread{'s' if threads != [1] else ''}.",
        "\n".join(machine_lines(meta)),
        "## Targets",
        targets_table(results),
    ]
    for count in threads:
        configs = [c for c in results["configs"] if c["threads"] == count]
        sections += [f"## Latency, {count} thread{'s' if count > 1 else ''}",
                     latency_table(results, configs),
                     "Rounds x runs per round: " + ", ".join(
                         f"{title_of(results, c)} {c['tag']} {c['rounds']}x{c['runs_per_round']}"
                         for c in configs) + "."]
    if chart_name:
        sections.append(f"![ortc's latency over each peer's]({chart_name})")
    sections += ["## Load time, peak memory and accuracy",
                 resources_table(results, results["configs"]),
                 "## How it was measured", method_text(meta),
                 "## Models", variants_table(results),
                 "## Where the time goes", rate_section(results), profile_section(results)]
    return "\n\n".join(sections) + "\n"


def console_tables(results, configs):
    """The two tables of `configs`, for stdout."""
    return (latency_table(results, configs) + "\n\n" + resources_table(results, configs))

