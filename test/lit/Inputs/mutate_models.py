#!/usr/bin/env python3
"""Mutation smoke test for hostile input: flips, drops and inserts bytes in
valid models (and in their textproto field values), runs `ortc compile` on
each, and fails if any run crashes (dies by a signal), hangs, exits with a
status other than 0 or 1, or prints an error that is not one line naming the
file. Deterministic for a given seed.

usage: mutate_models.py ORTC WORKDIR COUNT SEED EMIT MODEL.onnx [MODEL.onnx ...]
EMIT is the --emit kind (onnx-mlir imports only; optimized-mlir runs the
generic passes too).
"""
import os
import random
import subprocess
import sys


def mutate(data, rng):
    data = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        kind = rng.randrange(4)
        pos = rng.randrange(len(data)) if data else 0
        if kind == 0 and data:
            data[pos] ^= 1 << rng.randrange(8)
        elif kind == 1 and data:
            data[pos] = rng.randrange(256)
        elif kind == 2 and data:
            del data[pos:pos + rng.randint(1, 8)]
        else:
            data[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.randint(1, 4)))
    return bytes(data)


def main():
    ortc, workdir, count, seed = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    emit = sys.argv[5]
    models = [open(p, "rb").read() for p in sys.argv[6:]]
    rng = random.Random(seed)
    os.makedirs(workdir, exist_ok=True)
    path = os.path.join(workdir, "mutant.onnx")
    outcomes = {0: 0, 1: 0}
    for i in range(count):
        with open(path, "wb") as f:
            f.write(mutate(rng.choice(models), rng))
        try:
            proc = subprocess.run([ortc, "compile", path, "--emit=" + emit, "-o",
                                   os.path.join(workdir, "out.mlir")],
                                  capture_output=True, timeout=30)
        except subprocess.TimeoutExpired:
            print(f"mutant {i}: hang (kept at {path})")
            return 1
        err = proc.stderr.decode(errors="replace")
        if proc.returncode not in (0, 1):
            print(f"mutant {i}: exit status {proc.returncode}: {err[:500]}")
            return 1
        if proc.returncode == 1:
            lines = err.strip().splitlines()
            if len(lines) != 1 or path not in lines[0] or not lines[0].startswith("ortc: "):
                print(f"mutant {i}: error is not one line naming the file: {err[:500]!r}")
                return 1
            if os.path.exists(os.path.join(workdir, "out.mlir")):
                os.remove(os.path.join(workdir, "out.mlir"))
        outcomes[proc.returncode] += 1
    print(f"{count} mutants: {outcomes[0]} compiled, {outcomes[1]} refused with one-line errors, "
          "0 crashes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
