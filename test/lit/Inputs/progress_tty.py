"""Runs `ortc compile` with stderr on a pseudo-terminal and prints what the
terminal received, one redraw per line, for the progress-line test.

    progress_tty.py OUT_DIR ORTC [compile options...]

Writes OUT_DIR/slow.onnx first: 500 elementwise kernels between MatMuls,
each scaling by a constant of its own (so no two kernels are alike and
none is compiled once for two steps), which takes the CPU EP well over a
second to generate, so the progress line must appear.
"""
import os
import pty
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper


def write_slow_model(path):
    nodes, scales, prev = [], [], "x"
    for i in range(500):
        op = ("Exp", "Sin", "Tanh")[i % 3]
        scales.append(helper.make_tensor(f"s{i}", TensorProto.FLOAT, [1], [1.0 + 1e-3 * i]))
        nodes.append(helper.make_node("Mul", [prev, f"s{i}"], [f"s{i}x"], name=f"mul{i}"))
        nodes.append(helper.make_node(op, [f"s{i}x"], [f"a{i}"], name=f"e{i}"))
        nodes.append(helper.make_node("MatMul", [f"a{i}", "w"], [f"m{i}"], name=f"mm{i}"))
        prev = f"m{i}"
    w = helper.make_tensor("w", TensorProto.FLOAT, [16, 16], np.eye(16, dtype=np.float32).ravel())
    graph = helper.make_graph(nodes, "slow", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 16])],
                              [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [4, 16])],
                              [w] + scales)
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


def main():
    out_dir, ortc, options = sys.argv[1], sys.argv[2], sys.argv[3:]
    model = os.path.join(out_dir, "slow.onnx")
    write_slow_model(model)
    master, slave = pty.openpty()
    proc = subprocess.Popen([ortc, "compile", model, "-o", os.path.join(out_dir, "slow_ctx.onnx")]
                            + options, stdout=subprocess.DEVNULL, stderr=slave)
    os.close(slave)
    received = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:  # the other side closed
            break
        if not chunk:
            break
        received += chunk
    proc.wait()
    print(f"exit {proc.returncode}")
    text = received.decode(errors="replace")
    # Each redraw starts with a carriage return and an erase-line.
    for redraw in text.split("\r\x1b[K"):
        if redraw:
            print(f"line: {redraw}")
    print("ends cleared" if text.endswith("\r\x1b[K") else "ends dirty" if text else "nothing")


if __name__ == "__main__":
    main()
