"""Checks `ortc run` outputs against onnx's reference evaluator.

  reference_check.py inputs MODEL DIR BATCH   writes DIR/<input>.npy for every
                                              graph input of MODEL, dynamic dims
                                              set to BATCH: floats in [-2, 2),
                                              integers in [0, 2) (valid indices,
                                              lengths and counts for small dims)
  reference_check.py compare MODEL IN OUT [RTOL ATOL]
                                              runs MODEL on IN/<input>.npy with
                                              onnx.reference and prints
                                              "<output>: ok" or the mismatch for
                                              each OUT/<output>.npy (default
                                              rtol 1e-5, atol 1e-6)
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper
from onnx.reference import ReferenceEvaluator


def inputs(model_path, folder, batch):
    model = onnx.load(model_path)
    rng = np.random.default_rng(0)
    os.makedirs(folder, exist_ok=True)
    initializers = {t.name for t in model.graph.initializer}
    for value in model.graph.input:
        if value.name in initializers:
            continue
        tensor = value.type.tensor_type
        shape = [d.dim_value if d.HasField("dim_value") else batch for d in tensor.shape.dim]
        dtype = helper.tensor_dtype_to_np_dtype(tensor.elem_type)
        if np.issubdtype(dtype, np.floating):
            array = rng.uniform(-2, 2, shape).astype(dtype)
        else:
            array = rng.integers(0, 2, shape).astype(dtype)
        np.save(os.path.join(folder, value.name + ".npy"), array)


def compare(model_path, in_folder, out_folder, rtol=1e-5, atol=1e-6):
    model = onnx.load(model_path)
    initializers = {t.name for t in model.graph.initializer}
    feeds = {
        v.name: np.load(os.path.join(in_folder, v.name + ".npy"))
        for v in model.graph.input
        if v.name not in initializers
    }
    names = [o.name for o in model.graph.output]
    for name, want in zip(names, ReferenceEvaluator(model).run(None, feeds)):
        got = np.load(os.path.join(out_folder, name + ".npy"))
        if got.dtype != want.dtype or got.shape != want.shape:
            print(f"{name}: got {got.dtype}{list(got.shape)}, want {want.dtype}{list(want.shape)}")
        elif not np.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True):
            print(f"{name}: values differ by up to {np.max(np.abs(got - want))}")
        else:
            print(f"{name}: ok")


if __name__ == "__main__":
    if sys.argv[1] == "inputs":
        inputs(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    elif sys.argv[1] == "compare":
        tolerances = [float(t) for t in sys.argv[5:7]]
        compare(sys.argv[2], sys.argv[3], sys.argv[4], *tolerances)
    else:
        sys.exit(f"unknown command {sys.argv[1]}")
