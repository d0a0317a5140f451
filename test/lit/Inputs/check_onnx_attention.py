"""Runs a compiled model on seeded random inputs with `ortc run` and compares
every output with onnx's reference implementation of the source model:
prints '<output>: ok' or the largest difference. Usage: MODEL CTX WORKDIR."""
import os
import subprocess
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.reference import ReferenceEvaluator

model_path, ctx_path, work = sys.argv[1:4]
model = onnx.load(model_path)
rng = np.random.default_rng(7)
feeds, args = {}, []
for value in model.graph.input:
    t = value.type.tensor_type
    shape = [d.dim_value for d in t.shape.dim]
    dtype = helper.tensor_dtype_to_np_dtype(t.elem_type)
    if dtype == np.bool_:
        array = rng.random(shape) < 0.7
    elif dtype == np.int64:
        array = rng.integers(0, 16, shape).astype(np.int64)
    else:
        array = rng.standard_normal(shape).astype(dtype)
    feeds[value.name] = array
    path = os.path.join(work, value.name + ".npy")
    np.save(path, array)
    args += ["--input", f"{value.name}={path}"]
out_dir = os.path.join(work, "out")
subprocess.run(["ortc", "run", ctx_path, "--output-dir", out_dir, "--threads", "2"] + args,
               check=True, stdout=subprocess.DEVNULL)
want = ReferenceEvaluator(model).run(None, feeds)
for value, expected in zip(model.graph.output, want):
    got = np.load(os.path.join(out_dir, value.name + ".npy"))
    if got.shape == expected.shape and np.allclose(got, expected, rtol=1e-4, atol=1e-6):
        print(f"{value.name}: ok")
    else:
        diff = np.abs(got - expected).max() if got.shape == expected.shape else "shape"
        print(f"{value.name}: differs ({diff}), shape {got.shape} vs {expected.shape}")
