"""Writes the fuzz targets' seed corpora (test/fuzz/corpus/<target>/), small
files made from small models: run again when a format changes, and commit the
result. Needs the project's .venv (onnx, numpy) and a plain build's `ortc`
to compile the EPContext seeds.

Usage: make_corpus.py --ortc build/tools/ortc/ortc [--out test/fuzz/corpus]
"""

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

HERE = os.path.dirname(os.path.abspath(__file__))
# The name libFuzzer gives an input it adds to a corpus: its SHA-1.
GROWN = re.compile(r"[0-9a-f]{40}")
LIT_INPUTS = os.path.join(HERE, "..", "lit", "Inputs")


def small_models():
    """(name, ModelProto): a spread of what the importer handles."""
    f = TensorProto.FLOAT
    models = []

    def model(name, nodes, inputs, outputs, inits=(), opset=18):
        graph = helper.make_graph(nodes, name, inputs, outputs, list(inits))
        m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
        m.ir_version = 8
        models.append((name, m))

    x = helper.make_tensor_value_info("x", f, ["batch", 4])
    y = helper.make_tensor_value_info("y", f, ["batch", 3])
    w = numpy_helper.from_array(np.arange(12, dtype=np.float32).reshape(4, 3) / 8, "w")
    b = numpy_helper.from_array(np.array([0.5, -1, 2], np.float32), "b")
    model("mlp", [helper.make_node("MatMul", ["x", "w"], ["h"]),
                  helper.make_node("Add", ["h", "b"], ["a"]),
                  helper.make_node("Relu", ["a"], ["y"])], [x], [y], [w, b])

    img = helper.make_tensor_value_info("img", f, [1, 3, "h", "w"])
    out = helper.make_tensor_value_info("out", f, None)
    cw = numpy_helper.from_array(np.ones((4, 3, 3, 3), np.float32) / 27, "cw")
    model("conv", [helper.make_node("Conv", ["img", "cw"], ["c"], pads=[1, 1, 1, 1]),
                   helper.make_node("Relu", ["c"], ["r"]),
                   helper.make_node("GlobalAveragePool", ["r"], ["out"])],
          [img], [out], [cw])

    # Shape arithmetic next to a dynamic batch.
    s = helper.make_tensor_value_info("s", f, ["n", 6])
    r = helper.make_tensor_value_info("r", f, None)
    model("reshape", [helper.make_node("Shape", ["s"], ["shp"]),
                      helper.make_node("Gather", ["shp", "zero"], ["n0"], axis=0),
                      helper.make_node("Unsqueeze", ["n0", "ax"], ["n1"]),
                      helper.make_node("Concat", ["n1", "rest"], ["newshape"], axis=0),
                      helper.make_node("Reshape", ["s", "newshape"], ["r"])],
          [s], [r], [numpy_helper.from_array(np.array(0, np.int64), "zero"),
                     numpy_helper.from_array(np.array([0], np.int64), "ax"),
                     numpy_helper.from_array(np.array([2, 3], np.int64), "rest")])

    # Control flow on data.
    c = helper.make_tensor_value_info("c", TensorProto.BOOL, [])
    v = helper.make_tensor_value_info("v", f, [2])
    o = helper.make_tensor_value_info("o", f, [2])
    then = helper.make_graph([helper.make_node("Neg", ["v"], ["t"])], "then", [],
                             [helper.make_tensor_value_info("t", f, [2])])
    other = helper.make_graph([helper.make_node("Abs", ["v"], ["e"])], "else", [],
                              [helper.make_tensor_value_info("e", f, [2])])
    model("if", [helper.make_node("If", ["c"], ["o"], then_branch=then, else_branch=other)],
          [c, v], [o])

    trip = helper.make_tensor_value_info("trip", TensorProto.INT64, [])
    acc = helper.make_tensor_value_info("acc", f, [2])
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]),
         helper.make_node("Add", ["acc_in", "acc_in"], ["acc_out"])], "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_in", f, [2])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("acc_out", f, [2])])
    model("loop", [helper.make_node("Loop", ["trip", "", "acc"], ["total"], body=body)],
          [trip, acc], [helper.make_tensor_value_info("total", f, [2])])

    # An older opset the importer upgrades.
    bx = helper.make_tensor_value_info("bx", f, [1, 2, 2, 2])
    bn = [numpy_helper.from_array(np.array(v, np.float32), n)
          for n, v in (("sc", [1, 2]), ("bi", [0, 1]), ("me", [0.5, 0]), ("va", [1, 4]))]
    model("batchnorm7", [helper.make_node("BatchNormalization", ["bx", "sc", "bi", "me", "va"],
                                          ["by"])],
          [bx], [helper.make_tensor_value_info("by", f, [1, 2, 2, 2])], bn, opset=7)

    # External data: 64 floats at offset 128 of the target's weights.bin.
    ew = TensorProto(name="ew", data_type=f, dims=[4, 16])
    ew.data_location = TensorProto.EXTERNAL
    for key, value in (("location", "weights.bin"), ("offset", "128"), ("length", "256")):
        entry = ew.external_data.add()
        entry.key, entry.value = key, value
    ex = helper.make_tensor_value_info("ex", f, [4, 16])
    model("external", [helper.make_node("Add", ["ex", "ew"], ["ey"])], [ex],
          [helper.make_tensor_value_info("ey", f, [4, 16])], [ew])
    return models


def lit_models():
    """The lit tests' text-format models, as binary."""
    from google.protobuf import text_format
    out = []
    for name in sorted(os.listdir(LIT_INPUTS)):
        if name.endswith(".txtpb"):
            with open(os.path.join(LIT_INPUTS, name)) as f:
                m = text_format.Parse(f.read(), onnx.ModelProto())
            out.append((name[:-len(".txtpb")], m))
    return out


def write(folder, name, data):
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def compile_contexts(ortc, models, out):
    """Compiles each model that the CPU EP takes; writes the context models
    (blob inline) to session/ and their blobs to cpu_blob/."""
    with tempfile.TemporaryDirectory() as tmp:
        for name, m in models:
            path = os.path.join(tmp, name + ".onnx")
            if any(t.data_location == TensorProto.EXTERNAL for t in m.graph.initializer):
                continue
            onnx.save(m, path)
            ctx = os.path.join(tmp, name + "_ctx.onnx")
            run = subprocess.run([ortc, "compile", path, "-o", ctx, "--embed"],
                                 capture_output=True, text=True)
            if run.returncode != 0:
                continue
            with open(ctx, "rb") as f:
                data = f.read()
            write(os.path.join(out, "session"), name, data)
            ctx_model = onnx.load_from_string(data)
            for node in ctx_model.graph.node:
                for attr in node.attribute:
                    if attr.name == "ep_cache_context" and attr.s[:8] == b"ORTCBLOB":
                        write(os.path.join(out, "cpu_blob"), name + "_" + node.name, attr.s)


def tensor_seeds(out):
    npy = os.path.join(out, "npy")
    pb = os.path.join(out, "tensor_proto")
    arrays = {
        "f32_2x3": np.arange(6, dtype=np.float32).reshape(2, 3),
        "i64_scalar": np.array(7, np.int64),
        "bool_4": np.array([True, False, True, True]),
        "f16_empty": np.zeros((0, 3), np.float16),
        "u8_2x2x2": np.arange(8, dtype=np.uint8).reshape(2, 2, 2),
        "f64_1": np.array([1.5]),
    }
    with tempfile.TemporaryDirectory() as tmp:
        for name, a in arrays.items():
            path = os.path.join(tmp, name + ".npy")
            np.save(path, a)
            with open(path, "rb") as f:
                write(npy, name, f.read())
            write(pb, name + "_raw", numpy_helper.from_array(a, name).SerializeToString())
    typed = helper.make_tensor("typed", TensorProto.FLOAT, [3], [1.0, 2.0, 3.0])
    write(pb, "f32_typed", typed.SerializeToString())
    ints = helper.make_tensor("ints", TensorProto.INT64, [2], [5, -6])
    write(pb, "i64_typed", ints.SerializeToString())
    seq = onnx.SequenceProto(name="seq", elem_type=onnx.SequenceProto.TENSOR)
    seq.tensor_values.extend([numpy_helper.from_array(np.ones(2, np.float32) * k)
                              for k in range(3)])
    write(pb, "sequence", seq.SerializeToString())
    opt = onnx.OptionalProto(name="opt", elem_type=onnx.OptionalProto.TENSOR)
    opt.tensor_value.CopyFrom(numpy_helper.from_array(np.ones(2, np.float32)))
    write(pb, "optional_tensor", opt.SerializeToString())
    opt_seq = onnx.OptionalProto(name="opt_seq", elem_type=onnx.OptionalProto.SEQUENCE)
    opt_seq.sequence_value.CopyFrom(seq)
    write(pb, "optional_sequence", opt_seq.SerializeToString())


PATHS = ["weights.bin", "sub/deeper/w.bin", "./weights.bin", "sub/../weights.bin",
         "../outside.bin", "out.bin", "absolute_out.bin", "inside.bin", "loop.bin", "pipe",
         "folder", "empty.bin", "/etc/passwd", "sub//deeper/./w.bin", "missing.bin", ""]


# (intra-op threads + 1, [(ep, key, value)]) for fuzz_ep_options.
EP_OPTIONS = [
    (1, []),
    (2, [(b"cpu", b"threads", b"2")]),
    (0, [(b"cpu", b"kernel_isa", b"avx2"), (b"cpu", b"threads", b"1")]),
    (1, [(b"cpu", b"max_tensor_bytes", b"4"), (b"cpu", b"max_arena_bytes", b"1000000")]),
    (1, [(b"cpu_ep", b"kernel_isa", b"generic")]),
    (3, [(b"cpu", b"threads", b"-1")]),
    (1, [(b"cuda", b"graphs", b"off")]),
    (1, [(b"nope", b"threads", b"1")]),
]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ortc", required=True)
    parser.add_argument("--out", default=os.path.join(HERE, "corpus"))
    args = parser.parse_args()
    # Inputs a target once crashed on (regression-*) and inputs a fuzzing run
    # added (libFuzzer names them by their SHA-1) are no seeds to remake:
    # they are kept as they are.
    regressions = {}
    if os.path.isdir(args.out):
        for folder, _, files in os.walk(args.out):
            for f in files:
                if f.startswith("regression-") or GROWN.fullmatch(f):
                    with open(os.path.join(folder, f), "rb") as data:
                        regressions[os.path.relpath(os.path.join(folder, f), args.out)] = data.read()
        shutil.rmtree(args.out)
    models = small_models() + lit_models()
    for name, m in models:
        write(os.path.join(args.out, "import"), name, m.SerializeToString())
    compile_contexts(args.ortc, models, args.out)
    tensor_seeds(args.out)
    for i, p in enumerate(PATHS):
        write(os.path.join(args.out, "paths"), "%02d" % i, p.encode())
    for i, (threads, triples) in enumerate(EP_OPTIONS):
        data = bytes([threads]) + b"".join(b"%s\0%s\0%s\0" % t for t in triples)
        write(os.path.join(args.out, "ep_options"), "%02d" % i, data)
    for rel, data in regressions.items():
        write(os.path.join(args.out, os.path.dirname(rel)), os.path.basename(rel), data)
    for target in sorted(os.listdir(args.out)):
        files = os.listdir(os.path.join(args.out, target))
        size = sum(os.path.getsize(os.path.join(args.out, target, f)) for f in files)
        print("%-13s %3d files, %7d bytes" % (target, len(files), size))


if __name__ == "__main__":
    sys.exit(main())
