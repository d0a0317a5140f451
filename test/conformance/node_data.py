"""The ONNX backend node tests of the pinned onnx package, as files.

The onnx wheel (1.23) ships the test cases as Python (onnx/backend/test/case/
node/*.py) but no longer the generated `onnx/backend/test/data/node/` folder.
`ensure_suite` writes that folder once, the way onnx's own `backend-test-tools
generate-data` does for the model cases (model.onnx, test_data_set_0/
input_k.pb, output_k.pb), with numpy's global generator seeded so that the
random inputs repeat. A folder of node cases from elsewhere (an onnx source
checkout's onnx/backend/test/data/node) can be used instead with --data.
"""

import json
import os
import shutil
import warnings

# Bump when the files written below change, so that old folders are rewritten.
GENERATOR_VERSION = 1
SEED = 0


def onnx_version():
    import onnx
    return onnx.__version__


def _write_value(path, value, value_type, name):
    """Serializes one input or output the way onnx's generate-data does."""
    import numpy as np
    from onnx import TensorProto, numpy_helper

    if value_type.HasField("map_type"):
        proto = numpy_helper.from_dict(value, name)
    elif value_type.HasField("sequence_type"):
        proto = numpy_helper.from_list(value, name)
    elif value_type.HasField("optional_type"):
        proto = numpy_helper.from_optional(value, name)
    elif isinstance(value, TensorProto):
        proto = value
    else:
        proto = numpy_helper.from_array(np.asarray(value), name)
    with open(path, "wb") as f:
        f.write(proto.SerializeToString())


def _write_case(root, case):
    folder = os.path.join(root, case.name)
    os.makedirs(folder)
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(case.model.SerializeToString())
    graph = case.model.graph
    for i, (inputs, outputs) in enumerate(case.data_sets):
        data_dir = os.path.join(folder, f"test_data_set_{i}")
        os.makedirs(data_dir)
        for j, value in enumerate(inputs):
            _write_value(os.path.join(data_dir, f"input_{j}.pb"), value,
                         graph.input[j].type, graph.input[j].name)
        for j, value in enumerate(outputs):
            _write_value(os.path.join(data_dir, f"output_{j}.pb"), value,
                         graph.output[j].type, graph.output[j].name)


def generate(root):
    """Writes every node case of the installed onnx under root; returns the count."""
    import numpy as np

    np.random.seed(SEED)
    with warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.node as node_cases
        cases = node_cases.collect_testcases()
    for case in cases:
        _write_case(root, case)
    return len(cases)


def ensure_suite(data_root):
    """The node-case folder for the installed onnx under data_root, written if missing."""
    version = onnx_version()
    folder = os.path.join(data_root, f"onnx-{version}")
    node_dir = os.path.join(folder, "node")
    stamp_path = os.path.join(folder, "stamp.json")
    stamp = {"onnx": version, "generator": GENERATOR_VERSION, "seed": SEED}
    try:
        with open(stamp_path) as f:
            written = json.load(f)
        if all(written.get(key) == value for key, value in stamp.items()) and \
                os.path.isdir(node_dir):
            return node_dir
    except (OSError, ValueError):
        pass
    shutil.rmtree(folder, ignore_errors=True)
    tmp = node_dir + ".tmp"
    os.makedirs(tmp)
    count = generate(tmp)
    os.rename(tmp, node_dir)
    with open(stamp_path, "w") as f:
        json.dump(dict(stamp, cases=count), f)
    return node_dir


def list_cases(node_dir):
    """Sorted names of the case folders (those holding a model.onnx)."""
    return sorted(name for name in os.listdir(node_dir)
                  if os.path.isfile(os.path.join(node_dir, name, "model.onnx")))


def data_sets(case_dir):
    """Sorted test_data_set_* folders of one case."""
    names = [n for n in os.listdir(case_dir) if n.startswith("test_data_set_")]
    names.sort(key=lambda n: int(n.rsplit("_", 1)[1]))
    return [os.path.join(case_dir, n) for n in names]


if __name__ == "__main__":
    # node_data.py DATA_ROOT: write the suite once (ctest's conformance_data).
    import sys
    if len(sys.argv) != 2:
        sys.stderr.write("usage: node_data.py DATA_ROOT\n")
        sys.exit(2)
    print(ensure_suite(sys.argv[1]))
