"""Keeps docs/runtime-c-api.md's example honest: its C code must be
test/unit/capi_example.c byte for byte, and the built example must run the C
API tests' model and print what the model computes for inputs of ones.

Usage: check_capi_example.py DOC EXAMPLE_SOURCE EXAMPLE_BINARY MODEL
"""

import re
import subprocess
import sys

# capi_models.py's model with x and s all ones: y = Relu(1 @ W + b), z = y.
EXPECTED = "y: [1,3] 1 0.5 0\nz: [1,3] 1 0.5 0\n"


def main():
    if len(sys.argv) != 5:
        sys.exit(__doc__)
    doc, source, binary, model = sys.argv[1:]
    with open(doc) as f:
        blocks = re.findall(r"```c\n(.*?)```", f.read(), re.DOTALL)
    with open(source) as f:
        code = f.read()
    if code not in blocks:
        print(f"{doc}: no ```c block matches {source}; copy the file into the doc again",
              file=sys.stderr)
        return 1

    result = subprocess.run([binary, model], capture_output=True, text=True)
    sys.stdout.write(result.stdout)
    sys.stderr.write(result.stderr)
    if result.returncode != 0:
        print(f"{binary} exited with {result.returncode}", file=sys.stderr)
        return 1
    if result.stdout != EXPECTED:
        print(f"expected:\n{EXPECTED}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
