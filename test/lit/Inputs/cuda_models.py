"""Writes small models for the CUDA EP's lit tests into a folder.

  cuda_models.py DIR

  matmul_norm.onnx  MatMul over a batched input, LayerNormalization, Softmax,
                    ReduceMean; a Slice (the CPU EP's) and Gemm with alpha,
                    beta and a bias, then Relu
  half.onnx         the same chain in float16, with Gemm transposed
"""
import os
import sys

import numpy as np
import onnx
from onnx import TensorProto as T
from onnx import helper as h
from onnx import numpy_helper


def model(dtype, elem, name, trans_b):
    rng = np.random.default_rng(0)

    def init(n, shape):
        return numpy_helper.from_array(rng.standard_normal(shape).astype(dtype), n)

    inits = [init("w", [32, 16]), init("g", [16]), init("bb", [16]),
             init("gw", [16, 16]), init("gc", [16]),
             h.make_tensor("axes", T.INT64, [1], [2]),
             h.make_tensor("s0", T.INT64, [1], [0]), h.make_tensor("s1", T.INT64, [1], [1]),
             h.make_tensor("s2", T.INT64, [1], [1])]
    nodes = [
        h.make_node("MatMul", ["x", "w"], ["m"], name="matmul"),
        h.make_node("LayerNormalization", ["m", "g", "bb"], ["ln"], name="ln", axis=-1,
                    epsilon=1e-5),
        h.make_node("Softmax", ["ln"], ["y"], name="softmax", axis=-1),
        h.make_node("ReduceMean", ["m", "axes"], ["z"], name="mean", keepdims=0),
        h.make_node("Slice", ["m", "s0", "s1", "s2"], ["sl"], name="slice"),
        h.make_node("Flatten", ["sl"], ["fl"], name="flatten", axis=1),
        h.make_node("Gemm", ["fl", "gw", "gc"], ["gg"], name="gemm", alpha=0.5, beta=2.0,
                    transB=1 if trans_b else 0),
        h.make_node("Relu", ["gg"], ["w2"], name="relu"),
    ]
    graph = h.make_graph(
        nodes, name,
        [h.make_tensor_value_info("x", elem, ["batch", 8, 32])],
        [h.make_tensor_value_info("y", elem, ["batch", 8, 16]),
         h.make_tensor_value_info("z", elem, ["batch", 8]),
         h.make_tensor_value_info("w2", elem, ["batch", 16])],
        initializer=inits)
    m = h.make_model(graph, opset_imports=[h.make_opsetid("", 18)])
    m.ir_version = 9
    onnx.checker.check_model(m)
    return m


def main():
    folder = sys.argv[1]
    os.makedirs(folder, exist_ok=True)
    onnx.save(model(np.float32, T.FLOAT, "matmul_norm", False),
              os.path.join(folder, "matmul_norm.onnx"))
    onnx.save(model(np.float16, T.FLOAT16, "half", True), os.path.join(folder, "half.onnx"))


if __name__ == "__main__":
    main()
