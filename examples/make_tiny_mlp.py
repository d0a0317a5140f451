#!/usr/bin/env python3
"""Writes examples/tiny_mlp.onnx, the model the README compiles.

x[N,8] -> MatMul(w1[8,16]) -> Add(b1) -> Relu -> MatMul(w2[16,4]) -> Add(b2) -> Softmax
Weights are seeded random numbers, stored inline as raw_data.
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def build():
    rng = np.random.default_rng(7)
    w1 = numpy_helper.from_array(rng.standard_normal((8, 16)).astype(np.float32), "w1")
    b1 = numpy_helper.from_array(rng.standard_normal(16).astype(np.float32), "b1")
    w2 = numpy_helper.from_array(rng.standard_normal((16, 4)).astype(np.float32), "w2")
    b2 = numpy_helper.from_array(rng.standard_normal(4).astype(np.float32), "b2")
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h0"], name="fc1"),
        helper.make_node("Add", ["h0", "b1"], ["h1"], name="fc1_bias"),
        helper.make_node("Relu", ["h1"], ["h2"], name="relu1"),
        helper.make_node("MatMul", ["h2", "w2"], ["h3"], name="fc2"),
        helper.make_node("Add", ["h3", "b2"], ["logits"], name="fc2_bias"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    graph = helper.make_graph(
        nodes, "tiny_mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", 8])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["N", 4])],
        initializer=[w1, b1, w2, b2])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)],
                              producer_name="ortc-examples")
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=True)
    return model


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "tiny_mlp.onnx")
    onnx.save(build(), out)
    print(out)
