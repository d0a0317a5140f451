#!/usr/bin/env python3
"""One runtime of bench/peers.py in a process of its own.

  python peers_worker.py RUNTIME --model PATH --inputs DIR --threads T
                         [--lib libortc_runtime.so] [--load-reps 3]

RUNTIME is ortc (the compiled model_ctx.onnx through the C API, ctypes on
libortc_runtime.so), onnxruntime (InferenceSession, CPU EP) or openvino
(read_model + compile_model on "CPU"). The inputs are DIR/NAME.npy, one file
per graph input, written by the parent.

The worker loads the model --load-reps times (each load but the last is
released; the load time reported is their median), then answers JSON lines on
stdin with one JSON line each on its stdout:

  {"cmd": "run", "n": K}        -> {"ok": true, "ms": [K run times]}
  {"cmd": "save", "path": P}    -> {"ok": true}   (the last run's outputs, .npz)
  {"cmd": "quit"}               -> {"ok": true, "peak_rss_mb": VmHWM}

Its first line is {"ok": true, "load_ms": [...], "version": ..., "info": {...}}.
A failure is {"ok": false, "error": "one line"}; the worker then exits.
Anything a library prints goes to stderr: the protocol has stdout to itself.
"""
import argparse
import ctypes
import json
import os
import statistics
import sys
import time

import numpy as np


def peak_rss_mb():
    """This process's peak resident set (VmHWM) in MiB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024.0
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def load_inputs(folder):
    """NAME -> array for every NAME.npy in `folder`."""
    return {f[:-4]: np.load(os.path.join(folder, f))
            for f in sorted(os.listdir(folder)) if f.endswith(".npy")}


# --- ortc through its C API ---------------------------------------------------

ORTC_OK = 0
# ONNX TensorProto.DataType codes <-> numpy
ONNX_TO_NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 5: np.int16, 6: np.int32, 7: np.int64,
                 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32, 13: np.uint64}


class OrtcError(RuntimeError):
    pass


class OrtcRunner:
    """A session of libortc_runtime.so: inputs wrapped once, outputs written in
    place after the first run (the C API's fast path: no allocation per run)."""

    def __init__(self, lib_path, model, inputs, threads, load_reps):
        self.lib = self._bind(ctypes.CDLL(lib_path))
        self.version = self.lib.ortc_version().decode()
        options = ctypes.c_void_p()
        self._check(self.lib.ortc_session_options_create(ctypes.byref(options)),
                    "ortc_session_options_create")
        try:
            self._check(self.lib.ortc_session_options_set_intra_op_threads(options, threads),
                        "ortc_session_options_set_intra_op_threads")
            self.load_ms = []
            for rep in range(load_reps):
                session = ctypes.c_void_p()
                start = time.perf_counter()
                self._check(self.lib.ortc_session_create(model.encode(), options,
                                                         ctypes.byref(session)),
                            "ortc_session_create")
                self.load_ms.append((time.perf_counter() - start) * 1e3)
                if rep + 1 < load_reps:
                    self.lib.ortc_session_release(session)
            self.session = session
        finally:
            self.lib.ortc_session_options_release(options)
        self._wrap_inputs(inputs)
        count = self.lib.ortc_session_output_count(self.session)
        self.outputs = (ctypes.c_void_p * count)()
        self.output_names = [self._info("output", i)[0] for i in range(count)]
        self.info = {"intra_op_threads": threads}

    @staticmethod
    def _bind(lib):
        """Declares the signatures of the functions used (ortc_runtime.h)."""
        p, vp, size = ctypes.POINTER, ctypes.c_void_p, ctypes.c_size_t
        signatures = {
            "ortc_last_error": ([], ctypes.c_char_p),
            "ortc_version": ([], ctypes.c_char_p),
            "ortc_session_options_create": ([p(vp)], ctypes.c_int),
            "ortc_session_options_release": ([vp], None),
            "ortc_session_options_set_intra_op_threads": ([vp, ctypes.c_int], ctypes.c_int),
            "ortc_session_create": ([ctypes.c_char_p, vp, p(vp)], ctypes.c_int),
            "ortc_session_release": ([vp], None),
            "ortc_session_input_count": ([vp], size),
            "ortc_session_output_count": ([vp], size),
            "ortc_session_input_info": ([vp, size, p(ctypes.c_char_p), p(ctypes.c_int32),
                                         p(p(ctypes.c_int64)), p(size)], ctypes.c_int),
            "ortc_session_output_info": ([vp, size, p(ctypes.c_char_p), p(ctypes.c_int32),
                                          p(p(ctypes.c_int64)), p(size)], ctypes.c_int),
            "ortc_tensor_wrap": ([ctypes.c_int32, p(ctypes.c_int64), size, vp, size, p(vp)],
                                 ctypes.c_int),
            "ortc_tensor_release": ([vp], None),
            "ortc_tensor_element_type": ([vp], ctypes.c_int32),
            "ortc_tensor_rank": ([vp], size),
            "ortc_tensor_shape": ([vp], p(ctypes.c_int64)),
            "ortc_tensor_data": ([vp], vp),
            "ortc_tensor_byte_size": ([vp], size),
            "ortc_session_run": ([vp, p(ctypes.c_char_p), p(vp), size, p(ctypes.c_char_p),
                                  p(vp), size], ctypes.c_int),
        }
        for name, (args, result) in signatures.items():
            function = getattr(lib, name)
            function.argtypes, function.restype = args, result
        return lib

    def _check(self, status, call):
        """Raises OrtcError with ortc_last_error() when `status` is not ORTC_OK."""
        if status != ORTC_OK:
            message = (self.lib.ortc_last_error() or b"").decode(errors="replace")
            raise OrtcError(f"{call} failed (status {status}): {message}")

    def _info(self, kind, index):
        """(name, element type) of input or output `index`."""
        name, element = ctypes.c_char_p(), ctypes.c_int32()
        function = getattr(self.lib, f"ortc_session_{kind}_info")
        self._check(function(self.session, index, ctypes.byref(name), ctypes.byref(element),
                             None, None), f"ortc_session_{kind}_info")
        return name.value.decode(), element.value

    def _wrap_inputs(self, arrays):
        """Wraps the arrays (converted to each input's element type) as tensors."""
        count = self.lib.ortc_session_input_count(self.session)
        self.arrays, names, tensors = [], [], []
        for i in range(count):
            name, element = self._info("input", i)
            if name not in arrays:
                raise OrtcError(f"no input file for graph input '{name}'")
            if element not in ONNX_TO_NUMPY:
                raise OrtcError(f"input '{name}' has element type {element}, not handled here")
            array = np.ascontiguousarray(arrays[name], dtype=ONNX_TO_NUMPY[element])
            shape = (ctypes.c_int64 * max(array.ndim, 1))(*array.shape)
            tensor = ctypes.c_void_p()
            self._check(self.lib.ortc_tensor_wrap(element, shape, array.ndim,
                                                  array.ctypes.data_as(ctypes.c_void_p),
                                                  array.nbytes, ctypes.byref(tensor)),
                        f"ortc_tensor_wrap({name})")
            self.arrays.append(array)  # the tensor borrows it
            names.append(name.encode())
            tensors.append(tensor.value)
        self.input_names = (ctypes.c_char_p * count)(*names)
        self.inputs = (ctypes.c_void_p * count)(*tensors)

    def run(self):
        """One run. The first allocates the outputs; later runs write them in place."""
        self._check(self.lib.ortc_session_run(self.session, self.input_names, self.inputs,
                                              len(self.inputs), None, self.outputs,
                                              len(self.outputs)), "ortc_session_run")

    def results(self):
        """The last run's outputs, copied into numpy arrays, by name."""
        results = {}
        for name, tensor in zip(self.output_names, self.outputs):
            element = self.lib.ortc_tensor_element_type(tensor)
            rank = self.lib.ortc_tensor_rank(tensor)
            shape_pointer = self.lib.ortc_tensor_shape(tensor)
            shape = tuple(shape_pointer[i] for i in range(rank))
            size = self.lib.ortc_tensor_byte_size(tensor)
            raw = ctypes.string_at(self.lib.ortc_tensor_data(tensor), size)
            results[name] = np.frombuffer(raw, dtype=ONNX_TO_NUMPY[element]).reshape(shape).copy()
        return results


# --- onnxruntime ----------------------------------------------------------------


class OnnxruntimeRunner:
    """An InferenceSession on the CPU EP: intra-op threads T, one inter-op
    thread, default graph optimizations."""

    def __init__(self, model, inputs, threads, load_reps):
        import onnxruntime

        self.version = onnxruntime.__version__
        options = onnxruntime.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        self.load_ms = []
        for _ in range(load_reps):
            self.session = None  # release the previous session before timing a new one
            start = time.perf_counter()
            self.session = onnxruntime.InferenceSession(model, options,
                                                        providers=["CPUExecutionProvider"])
            self.load_ms.append((time.perf_counter() - start) * 1e3)
        wanted = [i.name for i in self.session.get_inputs()]
        missing = [n for n in wanted if n not in inputs]
        if missing:
            raise RuntimeError(f"no input file for graph input '{missing[0]}'")
        self.feeds = {n: inputs[n] for n in wanted}
        self.output_names = [o.name for o in self.session.get_outputs()]
        self.last = None
        self.info = {"intra_op_num_threads": threads, "inter_op_num_threads": 1,
                     "graph_optimization_level": str(options.graph_optimization_level)}

    def run(self):
        self.last = self.session.run(None, self.feeds)

    def results(self):
        return dict(zip(self.output_names, self.last))


# --- OpenVINO -------------------------------------------------------------------


class OpenvinoRunner:
    """compile_model on "CPU" with the latency hint, one stream, T threads and
    f32 precision, and one infer request."""

    def __init__(self, model, inputs, threads, load_reps):
        import openvino

        self.version = openvino.get_version()
        core = openvino.Core()
        # f32 as ortc and onnxruntime: on a CPU with avx512_bf16 or AMX,
        # OpenVINO's default inference precision is bf16.
        config = {"PERFORMANCE_HINT": "LATENCY", "NUM_STREAMS": "1",
                  "INFERENCE_NUM_THREADS": str(threads), "INFERENCE_PRECISION_HINT": "f32"}
        self.load_ms = []
        for _ in range(load_reps):
            self.compiled = None
            start = time.perf_counter()
            self.compiled = core.compile_model(core.read_model(model), "CPU", config)
            self.load_ms.append((time.perf_counter() - start) * 1e3)
        self.request = self.compiled.create_infer_request()
        self.feeds = {}
        for port in self.compiled.inputs:
            name = next((n for n in port.get_names() if n in inputs), None)
            if name is None:
                raise RuntimeError(f"no input file for graph input '{port.get_any_name()}'")
            self.feeds[name] = inputs[name]
        self.output_names = [port.get_any_name() for port in self.compiled.outputs]
        self.info = {key: str(self.compiled.get_property(key))
                     for key in ("PERFORMANCE_HINT", "NUM_STREAMS", "INFERENCE_NUM_THREADS",
                                 "INFERENCE_PRECISION_HINT", "ENABLE_CPU_PINNING")
                     if key in self._supported()}

    def _supported(self):
        try:
            return set(self.compiled.get_property("SUPPORTED_PROPERTIES"))
        except Exception:  # noqa: BLE001 - an older OpenVINO: read what can be read
            return {"PERFORMANCE_HINT", "NUM_STREAMS", "INFERENCE_NUM_THREADS"}

    def run(self):
        self.request.infer(self.feeds, share_inputs=True, share_outputs=True)

    def results(self):
        return {name: np.array(self.request.get_output_tensor(i).data, copy=True)
                for i, name in enumerate(self.output_names)}


# --- the loop -------------------------------------------------------------------


def make_runner(args, inputs):
    """The runner of args.runtime, loaded."""
    if args.runtime == "ortc":
        return OrtcRunner(args.lib, args.model, inputs, args.threads, args.load_reps)
    if args.runtime == "onnxruntime":
        return OnnxruntimeRunner(args.model, inputs, args.threads, args.load_reps)
    return OpenvinoRunner(args.model, inputs, args.threads, args.load_reps)


def one_line(error):
    """An exception as one line of at most 400 characters."""
    text = " ".join(f"{type(error).__name__}: {error}".split())
    return text[:400]


def serve(runner, requests, reply):
    """Answers the parent's requests until "quit" or end of input."""
    for line in requests:
        request = json.loads(line)
        command = request.get("cmd")
        try:
            if command == "run":
                times = []
                for _ in range(int(request["n"])):
                    start = time.perf_counter()
                    runner.run()
                    times.append((time.perf_counter() - start) * 1e3)
                reply({"ok": True, "ms": times})
            elif command == "save":
                np.savez(request["path"], **runner.results())
                reply({"ok": True})
            elif command == "quit":
                reply({"ok": True, "peak_rss_mb": peak_rss_mb()})
                return 0
            else:
                reply({"ok": False, "error": f"unknown command {command!r}"})
        except Exception as error:  # noqa: BLE001 - every failure goes back as one line
            reply({"ok": False, "error": one_line(error)})
            return 1
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("runtime", choices=("ortc", "onnxruntime", "openvino"))
    parser.add_argument("--model", required=True)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--threads", type=int, required=True)
    parser.add_argument("--lib", help="libortc_runtime.so (ortc only)")
    parser.add_argument("--load-reps", type=int, default=3)
    args = parser.parse_args()

    # The protocol gets a private copy of stdout; fd 1 goes to stderr.
    protocol = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr

    def reply(message):
        protocol.write(json.dumps(message) + "\n")
        protocol.flush()

    try:
        runner = make_runner(args, load_inputs(args.inputs))
    except Exception as error:  # noqa: BLE001
        reply({"ok": False, "error": one_line(error)})
        return 1
    reply({"ok": True, "load_ms": runner.load_ms, "version": runner.version,
           "info": runner.info, "load_median_ms": statistics.median(runner.load_ms)})
    return serve(runner, sys.stdin, reply)


if __name__ == "__main__":
    sys.exit(main())
