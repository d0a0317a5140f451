"""Checks that libortc_runtime.so stays small in what it links and exports.

Fails when the library
  - needs a forbidden shared library (LLVM, MLIR, NVRTC, the CUDA runtime or
    driver, cuBLAS),
  - has an undefined dynamic symbol in the llvm:: or mlir:: namespace (a
    static piece of LLVM pulled in, waiting for a libLLVM to satisfy it),
  - exports a defined symbol that is not ortc_* (the version script leaked).
Prints the NEEDED list and the stripped size (for information; the size
target is measured by the benchmarks).

Usage: check_runtime_deps.py LIBRARY
"""

import os
import re
import shutil
import subprocess
import sys
import tempfile

FORBIDDEN = re.compile(r"^lib(LLVM|MLIR|nvrtc|cudart|cuda|cublas)", re.IGNORECASE)


def run(*cmd):
    return subprocess.run(cmd, check=True, capture_output=True, text=True).stdout


def needed(library):
    out = run("readelf", "-d", "--wide", library)
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def dynamic_symbols(library):
    """(name, defined) for every dynamic symbol, names demangled."""
    symbols = []
    for line in run("nm", "-D", "--demangle", library).splitlines():
        # "ADDRESS TYPE NAME", or "         TYPE NAME" when undefined.
        fields = line.split(None, 1 if line.startswith(" ") else 2)
        kind, name = fields[-2], fields[-1]
        symbols.append((name, kind not in ("U", "w", "v")))
    return symbols


def stripped_size(library):
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, os.path.basename(library))
        shutil.copyfile(library, copy)
        run("strip", "--strip-all", copy)
        return os.path.getsize(copy)


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    library = sys.argv[1]
    problems = []

    libs = needed(library)
    print("NEEDED:", ", ".join(libs))
    problems += [f"links {lib}" for lib in libs if FORBIDDEN.match(lib)]

    for name, defined in dynamic_symbols(library):
        if not defined and re.search(r"(^|\W)(llvm|mlir)::", name):
            problems.append(f"needs {name}")
        if defined and not name.startswith("ortc_"):
            problems.append(f"exports {name}")

    size = stripped_size(library)
    print(f"stripped size: {size} bytes ({size / 1048576:.2f} MiB)")
    for problem in problems:
        print(f"{library}: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
