# lit configuration for ortc. Tests are .mlir files (ortc-opt) and .textproto
# files: ONNX models written as protobuf text, encoded with protoc in the RUN
# line and compiled with `ortc compile`.
import os

import lit.formats

config.name = "ortc"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".mlir", ".textproto", ".test"]
config.excludes = ["Inputs", "lit.cfg.py", "lit.site.cfg.py"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ortc_obj_root, "test", "lit")

config.environment["PATH"] = os.pathsep.join(
    [os.path.join(config.ortc_tools_dir, "ortc"),
     os.path.join(config.ortc_tools_dir, "ortc-run"),
     os.path.join(config.ortc_tools_dir, "ortc-opt"),
     config.llvm_tools_dir,
     config.environment.get("PATH", os.environ.get("PATH", ""))])

onnx_proto_dir = "/usr/include/onnx"
# %onnx-encode: ModelProto text on stdin -> binary on stdout.
config.substitutions.append(
    ("%onnx-encode",
     f"{config.protoc} --encode=onnx.ModelProto -I{onnx_proto_dir} {onnx_proto_dir}/onnx.proto"))
config.substitutions.append(("%python", config.python))
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "Inputs")))
# The repository root, for the checkers under test/.
config.substitutions.append(
    ("%ortc_src", os.path.dirname(os.path.dirname(config.test_source_root))))

if os.path.exists(config.python):
    config.available_features.add("python-onnx")

# The CUDA EP is built where CMake found the toolkit (ORTC_ENABLE_CUDA=AUTO).
if config.ortc_cuda_ep in ("ON", "TRUE", "1"):
    config.available_features.add("cuda-ep")

# CPU features of the machine running the tests, for tests of code compiled
# for another CPU level.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((line.split(":", 1)[1].split() for line in cpuinfo
                      if line.startswith("flags")), [])
    if "avx512f" in flags:
        config.available_features.add("host-avx512f")
except OSError:
    pass
