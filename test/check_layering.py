#!/usr/bin/env python3
"""EPs plug in at the leaves: generic code never names an EP.

Checks two things and prints what it checked:
  1. No file under compiler/, runtime/, dialects/ or tools/, nor a generic
     unit test (the files directly in test/unit/, not test/unit/<ep>/),
     includes a header from providers/ (grep of the sources).
  2. No target defined under those folders links a library of an EP folder
     (providers/<ep>/...) directly; they reach EPs only through the leaf
     targets defined in providers/ itself (OrtcCompileEps, OrtcRuntimeEps).
     The link interface comes from CMake (test/CMakeLists.txt writes each
     target's LINK_LIBRARIES at generate time).
Exit status 1 with one line per violation.
"""
import argparse
import os
import re
import sys

GENERIC = ("compiler", "runtime", "dialects", "tools")
GENERIC_TESTS = "test/unit"  # its own files only; test/unit/cpu tests the CPU EP
SOURCE_EXTENSIONS = (".h", ".hpp", ".cpp", ".cc", ".c", ".inc", ".td")
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"](providers/[^>"]+)[>"]')


def generic_sources(root):
    for area in GENERIC:
        for folder, _, files in os.walk(os.path.join(root, area)):
            for name in files:
                yield os.path.join(folder, name)
    tests = os.path.join(root, GENERIC_TESTS)
    if os.path.isdir(tests):
        for name in os.listdir(tests):
            yield os.path.join(tests, name)


def include_violations(root):
    found, scanned = [], 0
    for path in generic_sources(root):
        if not path.endswith(SOURCE_EXTENSIONS) or not os.path.isfile(path):
            continue
        scanned += 1
        with open(path, encoding="utf-8", errors="replace") as f:
            for number, line in enumerate(f, 1):
                match = INCLUDE.match(line)
                if match:
                    rel = os.path.relpath(path, root)
                    found.append(f"{rel}:{number}: includes {match.group(1)}")
    return found, scanned


def link_violations(links_path):
    targets = {}
    with open(links_path) as f:
        for line in f:
            parts = line.rstrip("\n").split("\t")
            if len(parts) == 3:
                name, folder, libs = parts
                targets[name] = (folder, [lib for lib in libs.split(";") if lib])
    # An EP library: a target whose folder is providers/<ep>/...
    ep_libraries = {name for name, (folder, _) in targets.items()
                    if folder.startswith("providers/")}
    leaves = {name for name, (folder, _) in targets.items() if folder == "providers"}
    found, checked = [], 0
    for name, (folder, libs) in sorted(targets.items()):
        if folder.split("/")[0] not in GENERIC:
            continue
        checked += 1
        for lib in libs:
            if lib in ep_libraries:
                found.append(f"target {name} ({folder}) links the EP library {lib}; "
                             f"link a leaf ({', '.join(sorted(leaves))}) instead")
    return found, checked, ep_libraries, leaves


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--source", required=True)
    parser.add_argument("--links", required=True)
    args = parser.parse_args()
    includes, scanned = include_violations(args.source)
    links, checked, ep_libraries, leaves = link_violations(args.links)
    if not leaves:
        print(f"layering: found no leaf targets in {args.links}; the check cannot run")
        return 1
    if not ep_libraries:
        print("layering: this build has no EP libraries; only the include check applies")
    print(f"layering: {scanned} source files under {', '.join(GENERIC)} and "
          f"{GENERIC_TESTS}/ scanned for "
          f"providers/ includes; {checked} generic targets checked against "
          f"{len(ep_libraries)} EP libraries (leaves: {', '.join(sorted(leaves))})")
    for line in includes + links:
        print(f"layering: {line}")
    if includes or links:
        print(f"layering: {len(includes) + len(links)} violations")
        return 1
    print("layering: ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
