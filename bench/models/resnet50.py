#!/usr/bin/env python3
"""ResNet-50 v1 as an ONNX model with random weights, built with onnx.helper.

The torchvision layout: a 7x7/2 convolution, a 3x3/2 max pool, bottleneck
blocks 3-4-6-3 (1x1 -> 3x3 -> 1x1, the stride on the 3x3 as in torchvision's
"v1.5", a 1x1 projection on the first block of each stage), global average
pooling, flatten and a 1000-way Gemm. Each convolution is followed by its own
BatchNormalization node (no bias on the convolution), as exported models
have it; ortc's compiler folds them. 25.6 M parameters, ~102 MB of fp32.

Weights come from a fixed seed (He-normal convolutions, BatchNorm statistics
near their usual ranges, a small scale on each block's last BatchNorm so that
the residual stream stays in range over 16 blocks): the same arguments give
the same bytes.

Usage: .venv/bin/python bench/models/resnet50.py -o resnet50.onnx [--batch N|1]
           [--seed 0] [--external weights.bin]
"""
import argparse
import sys

import numpy as np

OPSET = 17
STAGES = ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2))  # (width, blocks, stride)
EXPANSION = 4
INPUT_NAME = "input"
OUTPUT_NAME = "logits"


def build(batch="N", seed=0):
    """Returns the ModelProto. `batch`: a dim name (symbolic) or an int."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    rng = np.random.default_rng(seed)
    nodes, inits = [], []

    def add_init(name, array):
        inits.append(numpy_helper.from_array(np.ascontiguousarray(array, dtype=np.float32), name))
        return name

    def conv_bn(x, name, cin, cout, k, stride, relu, gamma=(0.8, 1.2)):
        std = np.sqrt(2.0 / (cin * k * k))
        w = add_init(f"{name}.weight", rng.standard_normal((cout, cin, k, k), np.float32) * std)
        nodes.append(helper.make_node("Conv", [x, w], [f"{name}.conv"], name=name,
                                      kernel_shape=[k, k], strides=[stride, stride],
                                      pads=[k // 2] * 4))
        bn = name + ".bn"
        params = [add_init(f"{bn}.scale", rng.uniform(*gamma, cout)),
                  add_init(f"{bn}.bias", rng.standard_normal(cout) * 0.05),
                  add_init(f"{bn}.mean", rng.standard_normal(cout) * 0.05),
                  add_init(f"{bn}.var", rng.uniform(0.8, 1.2, cout))]
        nodes.append(helper.make_node("BatchNormalization", [f"{name}.conv"] + params,
                                      [f"{bn}.out"], name=bn, epsilon=1e-5))
        if not relu:
            return f"{bn}.out"
        nodes.append(helper.make_node("Relu", [f"{bn}.out"], [f"{name}.relu"],
                                      name=f"{name}.relu"))
        return f"{name}.relu"

    x = conv_bn(INPUT_NAME, "conv1", 3, 64, 7, 2, relu=True)
    nodes.append(helper.make_node("MaxPool", [x], ["pool1"], name="maxpool", kernel_shape=[3, 3],
                                  strides=[2, 2], pads=[1, 1, 1, 1]))
    x, cin = "pool1", 64
    for stage, (width, blocks, stride) in enumerate(STAGES, start=1):
        for b in range(blocks):
            p = f"layer{stage}.{b}"
            s = stride if b == 0 else 1
            cout = width * EXPANSION
            h = conv_bn(x, f"{p}.conv1", cin, width, 1, 1, relu=True)
            h = conv_bn(h, f"{p}.conv2", width, width, 3, s, relu=True)
            h = conv_bn(h, f"{p}.conv3", width, cout, 1, 1, relu=False, gamma=(0.2, 0.4))
            shortcut = x
            if b == 0:
                shortcut = conv_bn(x, f"{p}.downsample", cin, cout, 1, s, relu=False,
                                   gamma=(0.2, 0.4))
            nodes.append(helper.make_node("Add", [h, shortcut], [f"{p}.add"], name=f"{p}.add"))
            nodes.append(helper.make_node("Relu", [f"{p}.add"], [f"{p}.out"], name=f"{p}.relu"))
            x, cin = f"{p}.out", cout
    nodes.append(helper.make_node("GlobalAveragePool", [x], ["gap"], name="avgpool"))
    nodes.append(helper.make_node("Flatten", ["gap"], ["flat"], name="flatten", axis=1))
    fc_w = add_init("fc.weight", rng.standard_normal((1000, cin), np.float32) / np.sqrt(cin))
    fc_b = add_init("fc.bias", rng.standard_normal(1000) * 0.01)
    nodes.append(helper.make_node("Gemm", ["flat", fc_w, fc_b], [OUTPUT_NAME], name="fc",
                                  transB=1))

    graph = helper.make_graph(
        nodes, "resnet50",
        [helper.make_tensor_value_info(INPUT_NAME, TensorProto.FLOAT, [batch, 3, 224, 224])],
        [helper.make_tensor_value_info(OUTPUT_NAME, TensorProto.FLOAT, [batch, 1000])],
        initializer=inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)],
                              producer_name="ortc bench/models/resnet50.py")
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def weight_bytes(model):
    return sum(len(t.raw_data) for t in model.graph.initializer)


def save(model, path, external=None):
    """Writes `model` to `path`; with `external`, initializers go to that file
    beside it (ONNX external data)."""
    import onnx

    if external:
        onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                  location=external, size_threshold=1024)
    else:
        onnx.save(model, path)


def sample_input(batch=1, seed=1):
    return np.random.default_rng(seed).standard_normal((batch, 3, 224, 224), np.float32)


def main():
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", required=True, help="the .onnx file to write")
    ap.add_argument("--batch", default="N",
                    help="the batch dim: a name for a symbolic dim (default N) or a number")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--external", metavar="FILE",
                    help="store the weights as external data in FILE beside the model")
    opts = ap.parse_args()
    batch = int(opts.batch) if opts.batch.isdigit() else opts.batch
    model = build(batch, opts.seed)
    nbytes = weight_bytes(model)
    save(model, opts.output, opts.external)
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    print(f"{opts.output}: {len(model.graph.node)} nodes, {params / 1e6:.1f} M parameters, "
          f"{nbytes / 2**20:.1f} MiB of fp32 weights")
    return 0


if __name__ == "__main__":
    sys.exit(main())
