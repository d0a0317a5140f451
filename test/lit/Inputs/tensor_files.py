"""Tensor files for the `ortc run` and `ortc bench` tests.

  tensor_files.py make DIR     writes, for the add model's input x = [3, 4]:
                                 x.npy, x.pb (raw_data), x_typed.pb (float_data),
                               for cast_greater's input i = [[1, 5, 7, 2]]:
                                 i_typed.pb (int64_data),
                               and files `ortc run` must refuse:
                                 garbage.pb (not a protobuf), external.pb
                                 (external data), short.pb (raw_data of 3
                                 floats for dims [2]), string.pb (a string
                                 tensor), both.pb (raw_data and float_data)
  tensor_files.py show FILE    prints a .npy or .pb file's name (pb only),
                               dtype, shape and values
  tensor_files.py same A B     prints "same" when two tensor files hold the
                               same values, else "different"
"""
import os
import sys

import numpy as np
from onnx import TensorProto, helper, numpy_helper


def write(path, tensor):
    with open(path, "wb") as f:
        f.write(tensor.SerializeToString())


def make(folder):
    x = np.array([3, 4], np.float32)
    np.save(os.path.join(folder, "x.npy"), x)
    write(os.path.join(folder, "x.pb"), numpy_helper.from_array(x, "x"))
    write(os.path.join(folder, "x_typed.pb"),
          helper.make_tensor("x", TensorProto.FLOAT, [2], [3.0, 4.0], raw=False))
    write(os.path.join(folder, "i_typed.pb"),
          helper.make_tensor("i", TensorProto.INT64, [1, 4], [1, 5, 7, 2], raw=False))
    with open(os.path.join(folder, "garbage.pb"), "wb") as f:
        f.write(b"\xff\xff\xff\xff")
    external = helper.make_tensor("x", TensorProto.FLOAT, [2], [3.0, 4.0], raw=False)
    del external.float_data[:]
    external.data_location = TensorProto.EXTERNAL
    entry = external.external_data.add()
    entry.key, entry.value = "location", "x.bin"
    write(os.path.join(folder, "external.pb"), external)
    short = numpy_helper.from_array(np.array([3, 4, 5], np.float32), "x")
    del short.dims[:]
    short.dims.append(2)
    write(os.path.join(folder, "short.pb"), short)
    write(os.path.join(folder, "string.pb"),
          helper.make_tensor("s", TensorProto.STRING, [1], [b"a"]))
    both = numpy_helper.from_array(x, "x")
    both.float_data.extend([3.0, 4.0])
    write(os.path.join(folder, "both.pb"), both)


def load(path):
    if path.endswith(".npy"):
        return "", np.load(path)
    tensor = TensorProto()
    with open(path, "rb") as f:
        tensor.ParseFromString(f.read())
    return tensor.name, numpy_helper.to_array(tensor)


def main():
    if sys.argv[1] == "make":
        make(sys.argv[2])
    elif sys.argv[1] == "show":
        name, array = load(sys.argv[2])
        print(f"name={name!r} dtype={array.dtype} shape={list(array.shape)} "
              f"values={array.ravel().tolist()}")
    elif sys.argv[1] == "same":
        same = np.array_equal(load(sys.argv[2])[1], load(sys.argv[3])[1])
        print("same" if same else "different")


if __name__ == "__main__":
    main()
