"""Older operator versions that the importer rewrites into the typed ops
(compiler/Import/OpsetUpgrade.cpp), end to end against onnxruntime.

Each model is built with onnx.helper at the old opset, compiled with
`ortc compile` (every node must end up in an EPContext node, i.e. the upgraded
ops are typed and claimed), run with `ortc run`, and compared with
onnxruntime's CPU EP on the original model (which runs every opset).

Usage: old_opsets.py --ortc build/tools/ortc/ortc [--work DIR] [--model NAME ...]
Prints a row per model, batch and output, then `N passed, M failed`; exit
status 1 on any failure.
"""

import argparse
import os
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper, version_converter

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import ATOL, RTOL, check_only_epcontext, compare_run, save_and_compile  # noqa: E402


def make_model(name, opset, nodes, inputs, outputs, initializers=()):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    # IR 3 is what opset 7 and 8 were released with; 4 allows initializers
    # that are not graph inputs, which these models use.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=4 if opset < 9 else 7)
    onnx.checker.check_model(model)
    return model


def f32(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def init(name, array):
    return numpy_helper.from_array(array, name)


def randn(rng, shape):
    return rng.standard_normal(shape).astype(np.float32)


# Each builder returns (model, {input: shape for a batch}, batches), and
# optionally a model for onnxruntime to run instead of the first.


def conv_batchnorm_relu(opset, bn_attrs):
    def build(rng):
        c = 4
        nodes = [
            helper.make_node("Conv", ["x", "w", "cb"], ["c"], kernel_shape=[3, 3], pads=[1] * 4),
            helper.make_node("BatchNormalization", ["c", "scale", "b", "mean", "var"], ["n"],
                             epsilon=1e-3, **bn_attrs),
            helper.make_node("Relu", ["n"], ["y"]),
        ]
        inits = [init("w", randn(rng, (c, 3, 3, 3))), init("cb", randn(rng, (c,))),
                 init("scale", randn(rng, (c,))), init("b", randn(rng, (c,))),
                 init("mean", randn(rng, (c,))),
                 init("var", (rng.random(c) + 0.5).astype(np.float32))]
        model = make_model(f"bn{opset}", opset, nodes, [f32("x", ["N", 3, 6, 7])],
                           [f32("y", ["N", c, 6, 7])], inits)
        return model, lambda n: {"x": (n, 3, 6, 7)}, (1, 3)
    return build


def batchnorm_training_outputs_left_out(rng):
    # BatchNormalization-9 whose training outputs are named "" (inference).
    # onnxruntime 1.31 crashes running that node, so the reference is the same
    # node with Y alone.
    c = 3
    inits = [init("scale", randn(rng, (c,))), init("b", randn(rng, (c,))),
             init("mean", randn(rng, (c,))), init("var", (rng.random(c) + 0.5).astype(np.float32))]
    models = []
    for outputs in (["y", "", "", "", ""], ["y"]):
        nodes = [helper.make_node("BatchNormalization", ["x", "scale", "b", "mean", "var"],
                                  outputs)]
        models.append(make_model("bn9_empty_outputs", 9, nodes, [f32("x", [2, c, 5])],
                                 [f32("y", [2, c, 5])], inits))
    return models[0], lambda n: {"x": (2, c, 5)}, (None,), models[1]


def grid_sample(mode, padding_mode, align_corners):
    def build(rng):
        nodes = [helper.make_node("GridSample", ["x", "grid"], ["y"], mode=mode,
                                  padding_mode=padding_mode, align_corners=align_corners)]
        model = make_model(f"gs16_{mode}", 16, nodes,
                           [f32("x", ["N", 2, 5, 6]), f32("grid", ["N", 4, 7, 2])],
                           [f32("y", ["N", 2, 4, 7])])
        return model, lambda n: {"x": (n, 2, 5, 6), "grid": (n, 4, 7, 2)}, (1, 3)
    return build


def topk1(rng):
    nodes = [helper.make_node("TopK", ["x"], ["values", "indices"], k=3, axis=1)]
    model = make_model("topk1", 9, nodes, [f32("x", ["N", 8])],
                       [f32("values", ["N", 3]),
                        helper.make_tensor_value_info("indices", TensorProto.INT64, ["N", 3])])
    return model, lambda n: {"x": (n, 8)}, (1, 3)


def upsample7(mode, scales):
    def build(rng):
        nodes = [helper.make_node("Upsample", ["x"], ["y"], mode=mode, scales=scales)]
        out = [int(np.floor(d * s)) for d, s in zip((2, 3, 5), scales[1:])]
        model = make_model(f"up7_{mode}", 7, nodes, [f32("x", ["N", 2, 3, 5])],
                           [f32("y", ["N"] + out)])
        return model, lambda n: {"x": (n, 2, 3, 5)}, (1, 3)
    return build


def scales_input(op, opset, mode, scales, shape):
    def build(rng):
        nodes = [helper.make_node(op, ["x", "scales"], ["y"], mode=mode)]
        out = [int(np.floor(d * s)) for d, s in zip(shape, scales)]
        model = make_model(f"{op.lower()}{opset}_{mode}", opset, nodes, [f32("x", list(shape))],
                           [f32("y", out)],
                           [init("scales", np.array(scales, dtype=np.float32))])
        return model, lambda n: {"x": shape}, (None,)
    return build


def legacy_broadcast(op, b_shape, axis, b_constant):
    """A binary op at opset 6 with broadcast=1 (and `axis`): onnxruntime does
    not run opset 6 and onnx's version converter refuses these axes, so the
    reference is the same computation at opset 7, B given its trailing 1s
    (the opset-6 rule: B's dims are A's from `axis` on)."""
    def build(rng):
        a_shape = ["N", 3, 4, 5]
        b = randn(rng, b_shape) + (2.0 if op == "Div" else 0.0)
        attrs = {"broadcast": 1, **({"axis": axis} if axis is not None else {})}
        start = 4 - len(b_shape) if axis is None else axis
        trailing = 4 - start - len(b_shape)
        inputs = [f32("a", a_shape)] + ([] if b_constant else [f32("b", b_shape)])
        inits = [init("b", b)] if b_constant else []
        model = make_model(f"{op.lower()}6", 6, [helper.make_node(op, ["a", "b"], ["y"], **attrs)],
                           inputs, [f32("y", a_shape)], inits)
        ref_nodes = [helper.make_node("Unsqueeze", ["b"], ["b1"], axes=list(
            range(len(b_shape), len(b_shape) + trailing)))] if trailing else []
        ref_nodes.append(helper.make_node(op, ["a", "b1" if trailing else "b"], ["y"]))
        reference = make_model(f"{op.lower()}6_reference", 7, ref_nodes, inputs,
                               [f32("y", a_shape)], inits)
        shapes = (lambda n: {"a": (n, 3, 4, 5)}) if b_constant else \
            (lambda n: {"a": (n, 3, 4, 5), "b": tuple(b_shape)})
        return model, shapes, (1, 3), reference
    return build


def converted_reference(build_old, opset):
    """An old model whose reference is onnx's version converter's rewrite of
    it to `opset`, run by onnxruntime."""
    def build(rng):
        model, shapes, batches, *_ = build_old(rng)
        # The converter wants static dims: convert with N = 1, then make N a
        # dim_param again.
        fixed = onnx.ModelProto()
        fixed.CopyFrom(model)
        for value in list(fixed.graph.input) + list(fixed.graph.output):
            for dim in value.type.tensor_type.shape.dim:
                if dim.dim_param == "N":
                    dim.Clear()
                    dim.dim_value = 1
        converted = version_converter.convert_version(fixed, opset)
        types = {v.name: v.type for v in list(model.graph.input) + list(model.graph.output)}
        for value in list(converted.graph.input) + list(converted.graph.output):
            value.type.CopyFrom(types[value.name])
        del converted.graph.value_info[:]
        return model, shapes, batches, converted
    return build


def gemm6(rng):
    nodes = [helper.make_node("Gemm", ["x", "w", "c"], ["y"], broadcast=1, transB=1, alpha=0.5)]
    model = make_model("gemm6", 6, nodes, [f32("x", ["N", 4])], [f32("y", ["N", 3])],
                       [init("w", randn(rng, (3, 4))), init("c", randn(rng, (3,)))])
    return model, lambda n: {"x": (n, 4)}, (1, 3)


MODELS = {
    "add6_axis1_bias": (6, legacy_broadcast("Add", [3], 1, True)),
    "mul6_axis1_input": (6, legacy_broadcast("Mul", [3, 4], 1, False)),
    "div6_axis0": (6, legacy_broadcast("Div", [1, 3], 0, True)),
    "sub6_trailing": (6, converted_reference(legacy_broadcast("Sub", [4, 5], None, True), 7)),
    "gemm6_broadcast": (6, converted_reference(gemm6, 7)),
    "bn6_is_test": (6, converted_reference(conv_batchnorm_relu(6, {"is_test": 1}), 7)),
    "bn7_spatial1": (7, conv_batchnorm_relu(7, {"spatial": 1})),
    "bn9": (9, conv_batchnorm_relu(9, {})),
    "bn13": (13, conv_batchnorm_relu(13, {})),
    "bn9_empty_outputs": (9, batchnorm_training_outputs_left_out),
    "gs16_bilinear": (16, grid_sample("bilinear", "border", 0)),
    # Not bicubic with border padding: there onnxruntime differs from the ONNX
    # reference, which the CPU EP follows, at opset 20 as well.
    "gs16_bicubic": (16, grid_sample("bicubic", "reflection", 1)),
    "gs16_nearest": (16, grid_sample("nearest", "zeros", 0)),
    "topk1": (9, topk1),
    "up7_nearest": (7, upsample7("nearest", [1.0, 1.0, 2.0, 1.7])),
    "up7_linear": (7, upsample7("linear", [1.0, 1.0, 2.5, 1.5])),
    "up9_nearest": (9, scales_input("Upsample", 9, "nearest", [1.0, 1.0, 1.5, 3.0], (2, 3, 5, 4))),
    "up9_linear": (9, scales_input("Upsample", 9, "linear", [1.0, 1.0, 1.7, 2.0], (1, 2, 5, 6))),
    "resize10_nearest": (10, scales_input("Resize", 10, "nearest", [1.0, 1.0, 2.2, 1.3],
                                          (2, 3, 5, 7))),
    # Linear Resize-10 also downsamples the same way as Resize-11 asymmetric.
    "resize10_linear": (10, scales_input("Resize", 10, "linear", [1.0, 1.0, 0.6, 1.7],
                                         (2, 3, 5, 7))),
}


def check_model(name, ortc, work):
    rng = np.random.default_rng(1234)
    opset, build = MODELS[name]
    model, shapes_for, batches, *reference = build(rng)
    folder = os.path.join(work, name)
    model_path, ctx_path = save_and_compile(ortc, model, name, folder)
    check_only_epcontext(ctx_path)

    options = ort.SessionOptions()
    options.log_severity_level = 3  # no warnings about opsets below 7
    reference_path = model_path
    if reference:
        reference_path = os.path.join(folder, f"{name}_reference.onnx")
        onnx.save(reference[0], reference_path)
    session = ort.InferenceSession(reference_path, options, providers=["CPUExecutionProvider"])
    rows = []
    for batch in batches:
        feeds = {k: randn(rng, shape) for k, shape in shapes_for(batch).items()}
        if "grid" in feeds:  # sample inside and a little outside [-1, 1]
            feeds["grid"] = (rng.random(feeds["grid"].shape) * 2.4 - 1.2).astype(np.float32)
        run_dir = os.path.join(folder, f"batch{batch}")
        for output_name, shape, err, ok in compare_run(ortc, ctx_path, session, feeds, run_dir):
            rows.append((name, opset, "-" if batch is None else batch, output_name, shape, err, ok))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ortc", required=True)
    parser.add_argument("--work", default=None)
    parser.add_argument("--model", action="append", choices=sorted(MODELS))
    args = parser.parse_args()
    names = args.model or list(MODELS)
    work = args.work or tempfile.mkdtemp(prefix="ortc_old_opsets_")

    passed = failed = 0
    print(f"{'model':18} {'opset':5} {'batch':5} {'output':8} {'result':20} {'max |err|':>10}  ok")
    for name in names:
        try:
            rows = check_model(name, args.ortc, work)
        except Exception as error:  # report and go on to the next model
            print(f"{name:18} {MODELS[name][0]:5} FAILED: {error}")
            failed += 1
            continue
        for model, opset, batch, out, shape, err, ok in rows:
            print(f"{model:18} {opset:5} {batch!s:5} {out:8} {shape:20} {err:10.2e}  "
                  f"{'yes' if ok else 'NO'}")
            if ok:
                passed += 1
            else:
                failed += 1
    print(f"{passed} passed, {failed} failed; tolerance rtol={RTOL} atol={ATOL}; work dir {work}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
