"""Checks an EPContext model written by `ortc compile` and prints a summary
for FileCheck.

  check_epcontext.py MODEL            onnx.checker, then header, graph IO,
                                      nodes, attributes and sidecars
  check_epcontext.py --same-blobs A B the two models' nodes carry the same
                                      blob bytes (inline or in sidecars)

Exits non-zero (with a message) when the checker fails, a sidecar is missing,
or a node is not com.microsoft::EPContext with every attribute ortc writes.
"""
import os
import sys

import onnx
from onnx import AttributeProto, TensorProto

ATTRIBUTES = {
    "main_context": AttributeProto.INT,
    "ep_cache_context": AttributeProto.STRING,
    "embed_mode": AttributeProto.INT,
    "source": AttributeProto.STRING,
    "ep_sdk_version": AttributeProto.STRING,
    "hardware_architecture": AttributeProto.STRING,
    "partition_name": AttributeProto.STRING,
    "notes": AttributeProto.STRING,
}


def fail(message):
    print("check_epcontext: " + message, file=sys.stderr)
    sys.exit(1)


def type_text(value_info):
    tensor = value_info.type.tensor_type
    elem = TensorProto.DataType.Name(tensor.elem_type).lower()
    if not tensor.HasField("shape"):
        return elem + " unranked"
    dims = []
    for dim in tensor.shape.dim:
        if dim.HasField("dim_value"):
            dims.append(str(dim.dim_value))
        elif dim.HasField("dim_param"):
            dims.append(dim.dim_param)
        else:
            dims.append("?")
    return elem + " [" + ",".join(dims) + "]"


def blobs(path):
    """(node name, bytes, embedded) for every node, reading sidecars."""
    model = onnx.load(path, load_external_data=False)
    folder = os.path.dirname(os.path.abspath(path))
    out = []
    for node in model.graph.node:
        attrs = {a.name: onnx.helper.get_attribute_value(a) for a in node.attribute}
        if attrs["embed_mode"] == 1:
            out.append((node.name, attrs["ep_cache_context"], True))
        else:
            name = attrs["ep_cache_context"].decode()
            if os.path.basename(name) != name:
                fail(f"{node.name}: sidecar '{name}' is not a plain file name")
            with open(os.path.join(folder, name), "rb") as f:
                out.append((node.name, f.read(), False))
    return out


def summarize(path):
    onnx.checker.check_model(path)
    print("checker: ok")
    model = onnx.load(path, load_external_data=False)
    print(f"ir_version: {model.ir_version}")
    print(f"producer: {model.producer_name}")
    for opset in model.opset_import:
        print(f"opset: '{opset.domain}' {opset.version}")
    graph = model.graph
    print(f"initializers: {len(graph.initializer)}")
    for init in graph.initializer:
        elem = TensorProto.DataType.Name(init.data_type).lower()
        dims = ",".join(str(d) for d in init.dims)
        print(f"initializer {init.name}: {elem} [{dims}] = {init.raw_data.hex()}")
    for value in graph.input:
        print(f"input {value.name}: {type_text(value)}")
    for value in graph.output:
        print(f"output {value.name}: {type_text(value)}")
    for value in graph.value_info:
        print(f"value_info {value.name}: {type_text(value)}")
    folder = os.path.dirname(os.path.abspath(path))
    for node in graph.node:
        if node.domain != "com.microsoft" or node.op_type != "EPContext":
            fail(f"node {node.name} is {node.domain}::{node.op_type}")
        print(f"node {node.name}: {','.join(node.input)} -> {','.join(node.output)}")
        attrs = {}
        for attr in node.attribute:
            if attr.name in ATTRIBUTES and attr.type != ATTRIBUTES[attr.name]:
                fail(f"node {node.name}: attribute {attr.name} has type {attr.type}")
            attrs[attr.name] = onnx.helper.get_attribute_value(attr)
        missing = sorted(set(ATTRIBUTES) - set(attrs))
        if missing:
            fail(f"node {node.name}: missing attributes {missing}")
        for name in ATTRIBUTES:
            value = attrs[name]
            if name == "ep_cache_context" and attrs["embed_mode"] == 1:
                first = value.split(b"\n", 1)[0].decode(errors="replace")
                print(f"  {name}: {len(value)} bytes inline: {first}")
                continue
            if isinstance(value, bytes):
                value = value.decode()
            print(f"  {name}: {value}")
        if attrs["embed_mode"] == 0:
            sidecar = os.path.join(folder, attrs["ep_cache_context"].decode())
            with open(sidecar, "rb") as f:
                data = f.read()
            first = data.split(b"\n", 1)[0].decode(errors="replace")
            print(f"  sidecar: {len(data)} bytes: {first}")


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--same-blobs":
        a, b = blobs(sys.argv[2]), blobs(sys.argv[3])
        if [(n, d) for n, d, _ in a] != [(n, d) for n, d, _ in b]:
            fail("the two models' blobs differ")
        print(f"same blobs: {len(a)}")
        return
    if len(sys.argv) != 2:
        fail("usage: check_epcontext.py MODEL | --same-blobs A B")
    summarize(sys.argv[1])


if __name__ == "__main__":
    main()
