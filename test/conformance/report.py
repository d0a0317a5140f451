"""Tables over run_conformance.py's results: totals, decline reasons, what
would unlock the most cases, per-operator counts, the decline reasons checked
against the EP contract's format, and docs/conformance.md (--ep cuda:
docs/conformance-cuda.md, with the cases the CUDA EP claims a node of).

Every count is of cases (a case with five declined CastLike nodes counts once
for CastLike), never of operator names or nodes.
"""

import collections
import datetime
import re

STATUSES = ("passed", "declined", "claim_failure", "compile_failure", "run_failure",
            "wrong_numbers", "no_cuda")
BUGS = ("claim_failure", "run_failure", "wrong_numbers")
# no_cuda (--ep cuda only): compiled, but no node on the CUDA EP, so not run.
# Neither a pass nor a failure; the CPU-only run covers those cases.
CUDA_ONLY = ("no_cuda",)
# The statuses of a case whose model compiled (every node claimed by some EP).
COMPILED = ("passed", "run_failure", "wrong_numbers", "no_cuda")
# A decline reason whose "rejected" is this names no dtype, shape or attribute.
GENERIC_OP_REJECT = re.compile(r"^no CPU kernel (or lowering )?for \S+( with these element types and attributes)?$")
DOC_POINTER = re.compile(r"\.md\b|docs/")
REQUIRED = ("node", "op", "domain", "opset", "ep", "kind", "rejected", "accepts")


def decline_text(d):
    """The one line ortc prints for a decline (DeclineReason::format)."""
    text = (f"{d.get('ep')} declines node '{d.get('node')}' ({d.get('domain')}::{d.get('op')}, "
            f"opset {d.get('opset')}): {d.get('kind')}: {d.get('rejected')}; "
            f"accepts {d.get('accepts')}")
    if d.get("remediation"):
        text += f"; remediation: {d['remediation']}"
    return text


def short(text, limit=300):
    """One line, the suite's folder and the compile cache's left out of paths, at most
    limit characters."""
    text = re.sub(r"\S*/node/(test_[A-Za-z0-9_]+)/", r"\1/", " ".join(str(text).split()))
    text = re.sub(r"\S*/[0-9a-f]{16}/[0-9a-f]{64}/(model_ctx\.onnx)", r"\1", text)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def md(text):
    return str(text).replace("|", "\\|")


# ---------------------------------------------------------------- declines


def _norm_tensor(match):
    body = match.group(1)
    if body.startswith("*"):
        return "tensor<*xT>"
    dims = body.split("x")[:-1]
    return "tensor<" + "".join("?x" if d == "?" else "Nx" for d in dims) + "T>"


def normalize_rejected(d):
    """The rejected thing with value positions, dims and element types generalized."""
    text = d.get("rejected", "")
    text = re.sub(r"\b(input|output|result) \d+", r"\1 N", text)
    text = re.sub(r"tensor<([^<>]*)>", _norm_tensor, text)
    text = re.sub(r"!onnx\.(seq|opt)<.*>", r"!onnx.\1<...>", text)
    return text


def reason_key(d):
    return f"{d.get('kind')}: {normalize_rejected(d)}; accepts {d.get('accepts')}"


def declined_by_ep(results, field="declines"):
    return {name: r for name, r in results.items() if r.get(field)}


def top_reasons(results, field="declines"):
    """[(reason, cases, Counter of ops)] by cases, most first. field "cuda_declines":
    the CUDA EP's reasons in the no_cuda cases."""
    cases, ops = collections.Counter(), collections.defaultdict(collections.Counter)
    for r in declined_by_ep(results, field).values():
        keys = {}
        for d in r[field]:
            keys.setdefault(reason_key(d), set()).add(d["op"])
        for key, key_ops in keys.items():
            cases[key] += 1
            for op in key_ops:
                ops[key][op] += 1
    return [(key, n, ops[key]) for key, n in cases.most_common()]


def unlock_table(results):
    """[(op, cases it declines in, cases where it is the only declined op, top kind)]."""
    blocks, only, kinds = collections.Counter(), collections.Counter(), collections.defaultdict(
        collections.Counter)
    for r in declined_by_ep(results).values():
        case_ops = {}
        for d in r["declines"]:
            op = d["op"] if d.get("domain") in ("ai.onnx", "") else f"{d['domain']}::{d['op']}"
            case_ops.setdefault(op, set()).add(d["kind"])
        for op, op_kinds in case_ops.items():
            blocks[op] += 1
            for kind in op_kinds:
                kinds[op][kind] += 1
        if len(case_ops) == 1:
            only[next(iter(case_ops))] += 1
    rows = [(op, n, only[op], ", ".join(f"{k} {c}" for k, c in kinds[op].most_common()))
            for op, n in blocks.items()]
    return sorted(rows, key=lambda row: (-row[2], -row[1], row[0]))


# ---------------------------------------------------------------- contract format


def claimed_ops(results):
    """Op types that the CPU EP claimed somewhere in the suite (cases that compiled)."""
    ops = set()
    for r in results.values():
        if r["status"] in COMPILED:
            ops.update(op.split("::")[-1] for op in r["ops"])
    return ops


def format_findings(results, field="declines"):
    """{finding: [(case, decline)]} for declines that fall short of the contract's format
    (field "cuda_declines": the CUDA EP's in the no_cuda cases, which have no error line)."""
    claimed = claimed_ops(results)
    findings = collections.defaultdict(list)
    for name, r in declined_by_ep(results, field).items():
        for d in r[field]:
            missing = [f for f in REQUIRED if d.get(f) in (None, "", 0)]
            if missing:
                findings["missing field(s): " + ", ".join(missing)].append((name, d))
            if d.get("kind") == "op" and GENERIC_OP_REJECT.match(d.get("rejected", "")) and \
                    d["op"] in claimed:
                findings["kind 'op' for an op the CPU EP claims in other cases: the reason does "
                         "not name the rejected dtype, shape or attribute"].append((name, d))
            if d.get("kind") == "dtype" and re.search(r"\b(is|has type) (tensor<\*x|!onnx\.unknown)",
                                                      d.get("rejected", "")):
                findings["kind 'dtype' for a missing rank or type (an unranked tensor or "
                         "!onnx.unknown): the element type is accepted, the shape is what is "
                         "rejected"].append((name, d))
            if DOC_POINTER.search(d.get("accepts", "")):
                findings["'accepts' points to a document instead of saying what the EP "
                         "accepts"].append((name, d))
        line = r.get("error_line", "") if field == "declines" else ""
        if line and not any(decline_text(d) in line for d in r["declines"]):
            findings["the one-line error does not carry any of the report's decline "
                     "reasons verbatim"].append((name, r["declines"][0]))
    return findings


def remediation_count(results, field="declines"):
    total = given = 0
    for r in declined_by_ep(results, field).values():
        for d in r[field]:
            total += 1
            given += bool(d.get("remediation"))
    return given, total


# ---------------------------------------------------------------- per operator


def per_operator(results):
    """{op under test: Counter} with cases/passed/declined/no_cuda/other, direct and
    expanded, and (cuda mode) cuda: the cases with a node on the CUDA EP."""
    table = collections.defaultdict(collections.Counter)
    for r in results.values():
        row = table[r["op"]]
        prefix = "exp_" if r.get("expanded") else ""
        row[prefix + "cases"] += 1
        bucket = r["status"] if r["status"] in ("passed", "declined", "no_cuda") else "failed"
        row[prefix + bucket] += 1
        if r.get("cuda_nodes"):
            row[prefix + "cuda"] += 1
    return dict(sorted(table.items()))


def statuses_for(mode):
    """The statuses a --ep mode can give, in STATUSES's order (no_cuda: cuda only)."""
    return tuple(s for s in STATUSES if mode == "cuda" or s not in CUDA_ONLY)


def counts(results, mode="cpu"):
    c = collections.Counter(r["status"] for r in results.values())
    return {s: c.get(s, 0) for s in statuses_for(mode)}


def cuda_claimed(results):
    """The cases the CUDA EP claims at least one node of (the compile report's
    placements; a compile that stopped before partitioning claims nothing)."""
    return {name: r for name, r in results.items() if r.get("cuda_nodes")}


def cuda_counts(results):
    """{status: cases} over the cases the CUDA EP claims a node of (no_cuda is 0 there)."""
    c = collections.Counter(r["status"] for r in cuda_claimed(results).values())
    return {s: c.get(s, 0) for s in STATUSES if s not in CUDA_ONLY}


# ---------------------------------------------------------------- output


def print_summary(results, top=10):
    reasons = top_reasons(results)
    print(f"top {min(top, len(reasons))} decline reasons (cases):")
    for key, n, ops in reasons[:top]:
        print(f"  {n:5}  {key}  [{', '.join(op for op, _ in ops.most_common(3))}]")
    unlock = unlock_table(results)[:top]
    print("declined ops, by the cases where they are the only declined op:")
    for op, n, only, kinds in unlock:
        print(f"  {op:28} only blocker in {only:4}, declines in {n:4} ({kinds})")
    findings = format_findings(results)
    for finding, items in sorted(findings.items()):
        print(f"contract format: {len(items)} decline(s): {finding}")


def _bug_section(results, lines, notes, mode="cpu"):
    bugs = [(name, r) for name, r in results.items() if r["status"] in BUGS]
    lines += ["## Claim failures, run failures, wrong numbers", ""]
    if not bugs:
        lines += ["None.", ""]
        return
    lines += ["Each is a bug (a node was claimed and then not compiled, run or computed "
              f"correctly) unless its note in `test/conformance/{mode}.known-failures` says "
              "otherwise."]
    if mode == "cuda":
        lines += ["", "*cuda nodes*: of the case's nodes, those placed on cuda_ep (0: the "
                  "CPU EP alone claimed them, so the failure is not the CUDA EP's)."]
        lines += ["", "| case | status | op | cuda nodes | error | note |",
                  "|---|---|---|---|---|---|"]
        for name, r in bugs:
            placed = f"{r['cuda_nodes']} of {r['nodes']}" if "nodes" in r else "?"
            lines.append(f"| {name} | {r['status']} | {md(r['op'])} | {placed} | "
                         f"{md(short(r['reason']))} | {md(notes.get(name, ''))} |")
        lines.append("")
        return
    lines += ["", "| case | status | op | error | note |", "|---|---|---|---|---|"]
    for name, r in bugs:
        lines.append(f"| {name} | {r['status']} | {md(r['op'])} | {md(short(r['reason']))} | "
                     f"{md(notes.get(name, ''))} |")
    lines.append("")


def _cuda_section(results, lines):
    """The cases the CUDA EP claims a node of: how they ended, by status and by op."""
    claimed = cuda_claimed(results)
    c = cuda_counts(results)
    compiled = sum(1 for r in results.values() if r["status"] in COMPILED)
    nodes = sum(r["cuda_nodes"] for r in claimed.values())
    all_nodes = sum(r["nodes"] for r in claimed.values())
    lines += ["## The CUDA EP's cases", "",
              f"The CUDA EP claims at least one node of **{len(claimed)}** cases "
              f"({nodes} of their {all_nodes} nodes; the CPU EP runs the others); "
              f"**{c['passed']}** of them pass. Of the {compiled} cases that compiled, "
              f"{counts(results, 'cuda')['no_cuda']} have no node on the CUDA EP and are not "
              "run (no_cuda).", "",
              "| status of the claimed cases | cases |", "|---|---|"]
    for status, n in c.items():
        lines.append(f"| {status} | {n} |")
    lines += [f"| total | {len(claimed)} |", ""]
    ops = collections.Counter()
    for r in claimed.values():
        ops[r["op"]] += 1
    lines += ["Claimed cases by the operator they test (most first): " +
              ", ".join(f"{md(op)} ({n})" for op, n in sorted(ops.items(),
                                                               key=lambda kv: (-kv[1], kv[0]))) +
              ".", ""]


def _compile_failure_section(results, lines):
    failures = [(name, r) for name, r in results.items() if r["status"] == "compile_failure"]
    lines += ["## Compile failures before any claim", "",
              "The importer or the generic passes refused the model, or no node was left "
              "to claim and the EPContext writer refused it. No EP claimed anything, so "
              "these are not claim-honesty bugs, but each is a valid model that "
              "`ortc compile` does not compile.", ""]
    if not failures:
        lines += ["None.", ""]
        return
    lines += ["| case | op | stage | error |", "|---|---|---|---|"]
    for name, r in failures:
        lines.append(f"| {name} | {md(r['op'])} | {r.get('stage', '')} | "
                     f"{md(short(r['reason']))} |")
    lines.append("")


def _reasons_section(results, lines, top=25, field="declines", title="Top decline reasons",
                     intro=""):
    lines += [f"## {title}", "", intro +
              "Normalized: value positions (`input N`), dims (`N`, `?`), element types in "
              "tensor types (`T`) are generalized. A case "
              "counts once per reason however many of its nodes give it.", "",
              "| # | cases | reason (kind: rejected; accepts) | ops (cases) |", "|---|---|---|---|"]
    for i, (key, n, ops) in enumerate(top_reasons(results, field)[:top], 1):
        op_text = ", ".join(f"{op} ({c})" for op, c in ops.most_common(4))
        if len(ops) > 4:
            op_text += f", +{len(ops) - 4} more"
        lines.append(f"| {i} | {n} | {md(list_abbreviated(key))} | {md(op_text)} |")
    lines.append("")


def list_abbreviated(text):
    """A decline's list of every op type the EP runs, as its count (the table stays readable;
    the list is in the JSON report and the one-line error)."""
    m = re.search(r"(the op types the CPU EP runs: )(.*)$", text)
    if not m:
        return text
    return text[:m.start(2)] + f"{len(m.group(2).split(', '))} op types, listed in full in the error"


def _unlock_section(results, lines, top=30):
    lines += ["## Declined ops: what would unlock the most cases", "",
              "For each op type that some EP declined: the cases in which it is the *only* "
              "declined op type (supporting it, as those cases use it, would let them "
              "compile), and all the cases in which it declines. The kinds say what was "
              "rejected (`dtype` on `tensor<*x...>` is a missing rank: shape inference, "
              "not the kernel, is what to fix there).", "",
              "| op | only declined op in | declines in | kinds (cases) |", "|---|---|---|---|"]
    for op, n, only, kinds in unlock_table(results)[:top]:
        lines.append(f"| {md(op)} | {only} | {n} | {kinds} |")
    lines.append("")


def _format_section(results, lines, field="declines"):
    findings = format_findings(results, field)
    given, total = remediation_count(results, field)
    if field == "declines":
        lines += ["## Decline reasons against the contract's format", "",
                  "The contract (docs/design.md): an Unsupported result names node, op, domain, "
                  "opset; the rejected dtype, shape, layout or attribute; the EP; what the EP "
                  "accepts; and a remediation where there is one. Checked on every decline of "
                  "`ortc compile --report=json` and on the one-line error.", ""]
    else:
        lines += ["The same check on the CUDA EP's declines in the no_cuda cases (the CPU EP "
                  "claimed those nodes, so there is no one-line error):", ""]
    lines.append(f"- {total} declines in {len(declined_by_ep(results, field))} cases; "
                 f"{given} carry a remediation.")
    if not findings:
        lines += ["- Every decline names all the required fields.", ""]
        return
    for finding, items in sorted(findings.items(), key=lambda kv: -len(kv[1])):
        case_count = len({name for name, _ in items})
        examples = collections.OrderedDict()
        for name, d in items:
            examples.setdefault(d["op"], (name, d))
        shown = list(examples.values())[:6]
        op_list = ", ".join(sorted(examples))
        if len(op_list) > 600:
            op_list = op_list[:op_list.rindex(", ", 0, 600)] + ", ..."
        lines.append(f"- **{len(items)} declines in {case_count} cases**: {finding}. "
                     f"Ops: {op_list}. For example:")
        for name, d in shown[:3]:
            lines.append(f"  - `{name}`: {md(decline_text(d))}")
    lines.append("")


def _operator_section(results, lines, mode="cpu"):
    if mode == "cuda":
        _cuda_operator_section(results, lines)
        return
    lines += ["## Per operator", "",
              "Cases by the operator they test (`test_X_expanded*`, the function-expanded "
              "form, under X's operator but counted apart). *other*: claim failures, "
              "compile failures, run failures and wrong numbers.", "",
              "| op | direct cases | passed | declined | other | expanded cases | "
              "expanded passed |",
              "|---|---|---|---|---|---|---|"]
    for op, c in per_operator(results).items():
        lines.append(f"| {md(op)} | {c['cases']} | {c['passed']} | {c['declined']} | "
                     f"{c['failed']} | {c['exp_cases']} | {c['exp_passed']} |")
    lines.append("")


def _cuda_operator_section(results, lines):
    lines += ["## Per operator", "",
              "Cases by the operator they test (`test_X_expanded*`, the function-expanded "
              "form, under X's operator but counted apart). *cuda*: cases with a node on the "
              "CUDA EP; *no_cuda*: compiled with no node on it, not run; *other*: claim "
              "failures, compile failures, run failures and wrong numbers.", "",
              "| op | direct cases | cuda | passed | no_cuda | declined | other | "
              "expanded cases | expanded cuda | expanded passed |",
              "|---|---|---|---|---|---|---|---|---|---|"]
    for op, c in per_operator(results).items():
        lines.append(f"| {md(op)} | {c['cases']} | {c['cuda']} | {c['passed']} | "
                     f"{c['no_cuda']} | {c['declined']} | {c['failed']} | {c['exp_cases']} | "
                     f"{c['exp_cuda']} | {c['exp_passed']} |")
    lines.append("")


DYNAMIC_BEGIN = "<!-- dynamic-conformance: written by run_conformance.py --dynamic -->"
DYNAMIC_END = "<!-- end dynamic-conformance -->"


def dynamic_gap(results, static_passed):
    """The cases that pass with static shapes but not with symbolic ones:
    [(name, result)] in name order."""
    return [(n, results[n]) for n in sorted(static_passed)
            if n in results and results[n]["status"] != "passed"]


def dynamic_summary_lines(results, static_passed, floor):
    """The dynamic run against the static profile, and each case it loses."""
    passed = sum(1 for r in results.values() if r["status"] == "passed")
    gap = dynamic_gap(results, static_passed)
    share = passed / max(len(static_passed), 1)
    lines = [f"With every graph-input dim symbolic, {passed} cases pass: "
             f"{100.0 * share:.1f}% of the {len(static_passed)} that pass with the "
             f"declared shapes (the target is {100.0 * floor:.0f}%; "
             f"{'met' if share >= floor else 'not met yet'}). "
             f"{len(gap)} cases pass static and fail dynamic:", "",
             "| case | status | op | reason |", "|---|---|---|---|"]
    for name, r in gap:
        lines.append(f"| {name} | {r['status']} | {md(r['op'])} | {md(short(r['reason'], 240))} |")
    lines.append("")
    return lines


def write_dynamic(path, static_doc, results, meta, static_passed, floor, case_notes=None):
    """Writes docs/conformance-dynamic.md (the whole report of the dynamic run)
    and replaces the dynamic section of docs/conformance.md (static_doc)."""
    summary = dynamic_summary_lines(results, static_passed, floor)
    tmp = path + ".tmp"
    write(tmp, results, meta, case_notes, "cpu")
    with open(tmp) as f:
        body = f.read().split("\n")
    import os
    os.remove(tmp)
    body[0] = "# Conformance: the ONNX backend node tests on the CPU EP, every input dim symbolic"
    intro = ["", "Generated by `test/conformance/run_conformance.py --dynamic --write-report`: "
             "each case's model with every graph-input dim replaced by a fresh `dim_param` "
             "(a 1-D int32/int64 input of at most 8 elements keeps its length, which is a rank, "
             "not a size; the outputs' dims and the graph's `value_info` shapes are dropped), "
             "compiled once and run on the case's data. `test/conformance/cpu-dynamic.expected` "
             "lists the cases that pass; ctest `conformance_cpu_dynamic` fails when one stops "
             "passing.", "", "## Against the static run", ""] + summary
    with open(path, "w") as f:
        f.write("\n".join(body[:1] + intro + body[1:]))
    try:
        with open(static_doc) as f:
            text = f.read()
    except FileNotFoundError:
        return
    section = "\n".join([DYNAMIC_BEGIN, "## Every input dim symbolic", ""] + summary[:1] +
                         ["", "The cases, with their reasons: "
                          "[conformance-dynamic.md](conformance-dynamic.md).", DYNAMIC_END])
    if DYNAMIC_BEGIN in text and DYNAMIC_END in text:
        head, rest = text.split(DYNAMIC_BEGIN, 1)
        text = head + section + rest.split(DYNAMIC_END, 1)[1]
    else:
        text = text.rstrip("\n") + "\n\n" + section + "\n"
    with open(static_doc, "w") as f:
        f.write(text)


def write(path, results, meta, case_notes=None, mode="cpu"):
    """Writes docs/conformance.md (mode cuda: docs/conformance-cuda.md)."""
    if mode == "cuda":
        _write_cuda(path, results, meta, case_notes)
        return
    c = counts(results)
    harness = sum(1 for r in results.values() if r.get("declined_by") == "harness")
    n = len(results)
    lines = [
        "# Conformance: the ONNX backend node tests on the CPU EP", "",
        f"Generated by `test/conformance/run_conformance.py --write-report` on "
        f"{datetime.date.today().isoformat()}: {meta['ortc']}, onnx {meta['onnx']} "
        f"({n} node cases{', filter ' + repr(meta['filter']) if meta['filter'] else ''}), "
        f"{meta['seconds']:.0f} s with {meta['jobs']} jobs ({meta['cached']} of "
        f"{meta['compiled']} compiles from the cache). The onnx wheel ships the node "
        "tests as Python, not as files: the script writes them once from the pinned "
        "package (`test/conformance/node_data.py`, numpy seeded), as onnx's "
        "`backend-test-tools generate-data` does.", "",
        "Each case is compiled with `ortc compile` (default EPs: CPU; no "
        "`--allow-unclaimed`) and each data set run with `ortc run`; outputs are compared "
        f"with rtol {meta['rtol']:g}, atol {meta['atol']:g} (onnx's backend-test default; "
        "bfloat16 at two ulps as onnx's runner does; NaNs equal), dtype and shape exactly, "
        "bool and integers exactly. `test/conformance/cpu.expected` lists the cases that "
        "pass; ctest `conformance_cpu` fails when one stops passing or a new claim "
        "failure, run failure or wrong number appears.", "",
        "## Totals", "",
        "| status | cases | share |", "|---|---|---|"]
    notes = {
        "passed": "every output of every data set matches",
        "declined": f"{c['declined'] - harness} with a node no EP claims, {harness} that the "
                    "harness cannot feed or compare: sequence, optional, map or string values",
        "claim_failure": "nodes were claimed, then the compile failed, crashed or timed out",
        "compile_failure": "refused before any claim (importer, generic passes, writer)",
        "run_failure": "`ortc run` failed on the compiled model",
        "wrong_numbers": "outputs differ beyond the tolerance",
    }
    for status in statuses_for("cpu"):
        lines.append(f"| {status} ({notes[status]}) | {c[status]} | "
                     f"{100.0 * c[status] / max(n, 1):.1f}% |")
    lines += [f"| total | {n} | |", ""]
    _bug_section(results, lines, case_notes or {})
    _compile_failure_section(results, lines)
    _reasons_section(results, lines)
    _unlock_section(results, lines)
    _format_section(results, lines)
    _operator_section(results, lines)
    with open(path, "w") as f:
        f.write("\n".join(lines))


def _write_cuda(path, results, meta, case_notes=None):
    """Writes docs/conformance-cuda.md: the same suite with --ep=cuda,cpu on the host emulation."""
    c = counts(results, "cuda")
    harness = sum(1 for r in results.values() if r.get("declined_by") == "harness")
    n = len(results)
    lines = [
        "# Conformance: the ONNX backend node tests on the CUDA EP (host emulation)", "",
        f"Generated by `test/conformance/run_conformance.py --ep cuda --write-report` on "
        f"{datetime.date.today().isoformat()}: {meta['ortc']}, onnx {meta['onnx']} "
        f"({n} node cases{', filter ' + repr(meta['filter']) if meta['filter'] else ''}), "
        f"{meta['seconds']:.0f} s with {meta['jobs']} jobs ({meta['cached']} of "
        f"{meta['compiled']} compiles from the cache). The cases are those of "
        "`docs/conformance.md` (`test/conformance/node_data.py`).", "",
        "Each case is compiled with `ortc compile --ep=cuda,cpu` (the CUDA EP first, the "
        "CPU EP for the nodes it declines; no `--allow-unclaimed`). A case whose compiled "
        "model has no node on the CUDA EP (the report's placements) is not run: *no_cuda*, "
        "neither a pass nor a failure (the CPU EP's run, `docs/conformance.md`, covers it). "
        "The others are run with `ortc run --ep-option cuda:device=emulation`: the CUDA "
        "EP's host emulation, a test double that compiles each kernel's CUDA C++ with the "
        "host C++ compiler and runs its blocks and threads on the CPU, with the CPU EP "
        "running the nodes placed on it. It checks the generated kernels' numerics, the "
        "launch plan and the CUDA/CPU transfers; it does not check a GPU, NVRTC's "
        "cubins, the driver or speed. Outputs are compared "
        f"with rtol {meta['rtol']:g}, atol {meta['atol']:g} (onnx's backend-test default; "
        "bfloat16 at two ulps as onnx's runner does; NaNs equal), dtype and shape exactly, "
        "bool and integers exactly. `test/conformance/cuda.expected` lists the cases that "
        "pass; ctest `conformance_cuda` (built with the CUDA EP) fails when one stops "
        "passing or stops being claimed, or a new claim failure, run failure or wrong "
        "number appears.", ""]
    _cuda_section(results, lines)
    lines += ["## Totals", "", "| status | cases | share |", "|---|---|---|"]
    notes = {
        "passed": "the CUDA EP claims a node; every output of every data set matches",
        "declined": f"{c['declined'] - harness} with a node neither EP claims, {harness} "
                    "that the harness cannot feed or compare: sequence, optional, map or "
                    "string values",
        "claim_failure": "nodes were claimed, then the compile failed, crashed or timed out",
        "compile_failure": "refused before any claim (importer, generic passes, writer)",
        "run_failure": "`ortc run` failed on the compiled model",
        "wrong_numbers": "outputs differ beyond the tolerance",
        "no_cuda": "compiled with every node on the CPU EP: not run",
    }
    for status in statuses_for("cuda"):
        lines.append(f"| {status} ({notes[status]}) | {c[status]} | "
                     f"{100.0 * c[status] / max(n, 1):.1f}% |")
    lines += [f"| total | {n} | |", ""]
    _bug_section(results, lines, case_notes or {}, "cuda")
    _compile_failure_section(results, lines)
    _reasons_section(results, lines, field="cuda_declines",
                     title="Why the CUDA EP claims nothing: its decline reasons in the no_cuda "
                           "cases",
                     intro="The CUDA EP's reasons for the nodes of the cases it claims no node "
                           "of (the CPU EP runs them). ")
    _reasons_section(results, lines,
                     intro="The declines of the nodes that neither EP claims (cases "
                           "*declined*): each EP's reason. ")
    _unlock_section(results, lines)
    _format_section(results, lines)
    _format_section(results, lines, "cuda_declines")
    _operator_section(results, lines, "cuda")
    with open(path, "w") as f:
        f.write("\n".join(lines))
