"""Compiles the C API tests' model with `ortc compile`, blob inline and in a
sidecar:

  y = Relu(x @ W + b)   x: float32[batch, 4], y: float32[batch, 3]
  z = y * s             s: float32[batch, 3], z: float32[batch, 3]

W[k][j] = (k - j) / 4 and b[j] = (j - 1) / 2. With inputs that are multiples
of 1/2 every result is exact in float32, whatever the summation order, so the
tests compare bit for bit with values they compute themselves.

a small CNN whose convolutions and GEMM spread over the session's threads (the
concurrency tests run it from many threads at once):

  logits = Gemm(Flatten(GlobalAveragePool(Relu(Conv(Relu(Conv(x)))))))
  x: float32[batch, 8, 16, 16], logits: float32[batch, 10]

and a model whose inputs and outputs are sequences and optionals:

  more = SequenceInsert(parts, extra)     parts: seq(float32), extra: float32[k]
  joined = ConcatFromSequence(more, 0)    float32[?]
  count = SequenceLength(more)            int64[]
  has = OptionalHasElement(maybe)         maybe: optional(float32), has: bool[]

Usage: capi_models.py --ortc ORTC --out DIR
Writes DIR/model.onnx, DIR/inline/model_ctx.onnx and DIR/sidecar/model_ctx.onnx
(+ its sidecar), DIR/parallel/model_ctx.onnx (+ its sidecar) and
DIR/sequence/model_ctx.onnx.
"""

import argparse
import os
import shutil
import subprocess
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build_model():
    w = np.array([[(k - j) / 4 for j in range(3)] for k in range(4)], np.float32)
    b = np.array([(j - 1) / 2 for j in range(3)], np.float32)
    nodes = [
        helper.make_node("MatMul", ["x", "W"], ["xw"], name="matmul"),
        helper.make_node("Add", ["xw", "b"], ["xwb"], name="bias"),
        helper.make_node("Relu", ["xwb"], ["y"], name="relu"),
        helper.make_node("Mul", ["y", "s"], ["z"], name="scale"),
    ]
    graph = helper.make_graph(
        nodes, "capi",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 4]),
         helper.make_tensor_value_info("s", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3]),
         helper.make_tensor_value_info("z", TensorProto.FLOAT, ["batch", 3])],
        [numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "b")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_parallel_model():
    rng = np.random.default_rng(7)
    w1 = rng.standard_normal((16, 8, 3, 3)).astype(np.float32) / 8
    w2 = rng.standard_normal((32, 16, 3, 3)).astype(np.float32) / 12
    fc = rng.standard_normal((32, 10)).astype(np.float32) / 6
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1, 1, 1, 1], name="conv1"),
        helper.make_node("Relu", ["c1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1, 1, 1, 1], name="conv2"),
        helper.make_node("Relu", ["c2"], ["r2"], name="relu2"),
        helper.make_node("GlobalAveragePool", ["r2"], ["pooled"], name="pool"),
        helper.make_node("Flatten", ["pooled"], ["flat"], name="flatten"),
        helper.make_node("MatMul", ["flat", "fc"], ["logits"], name="fc"),
    ]
    graph = helper.make_graph(
        nodes, "capi_parallel",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 8, 16, 16])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["batch", 10])],
        [numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2"),
         numpy_helper.from_array(fc, "fc")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def build_sequence_model():
    seq_f32 = helper.make_sequence_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    opt_f32 = helper.make_optional_type_proto(helper.make_tensor_type_proto(TensorProto.FLOAT, None))
    nodes = [
        helper.make_node("SequenceInsert", ["parts", "extra"], ["more"], name="insert"),
        helper.make_node("ConcatFromSequence", ["more"], ["joined"], axis=0, name="concat"),
        helper.make_node("SequenceLength", ["more"], ["count"], name="length"),
        helper.make_node("OptionalHasElement", ["maybe"], ["has"], name="has"),
    ]
    graph = helper.make_graph(
        nodes, "capi_sequences",
        [helper.make_value_info("parts", seq_f32),
         helper.make_tensor_value_info("extra", TensorProto.FLOAT, ["k"]),
         helper.make_value_info("maybe", opt_f32)],
        [helper.make_tensor_value_info("joined", TensorProto.FLOAT, [None]),
         helper.make_value_info("more", seq_f32),
         helper.make_tensor_value_info("count", TensorProto.INT64, []),
         helper.make_tensor_value_info("has", TensorProto.BOOL, [])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ortc", required=True)
    parser.add_argument("--out", required=True)
    args = parser.parse_args()

    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    source = os.path.join(args.out, "model.onnx")
    onnx.save(build_model(), source)
    for kind, extra in (("inline", []), ("sidecar", ["--no-embed"])):
        out = os.path.join(args.out, kind, "model_ctx.onnx")
        os.makedirs(os.path.dirname(out))
        result = subprocess.run([args.ortc, "compile", source, "-o", out] + extra)
        if result.returncode != 0:
            sys.exit(f"capi_models.py: ortc compile ({kind}) failed")
    source = os.path.join(args.out, "parallel_model.onnx")
    onnx.save(build_parallel_model(), source)
    out = os.path.join(args.out, "parallel", "model_ctx.onnx")
    os.makedirs(os.path.dirname(out))
    if subprocess.run([args.ortc, "compile", source, "-o", out, "--no-embed"]).returncode != 0:
        sys.exit("capi_models.py: ortc compile (parallel) failed")
    source = os.path.join(args.out, "sequence_model.onnx")
    onnx.save(build_sequence_model(), source)
    out = os.path.join(args.out, "sequence", "model_ctx.onnx")
    os.makedirs(os.path.dirname(out))
    if subprocess.run([args.ortc, "compile", source, "-o", out]).returncode != 0:
        sys.exit("capi_models.py: ortc compile (sequence) failed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
