"""Control flow and outputs sized by their data, end to end against onnxruntime.

Each model is built with onnx.helper, compiled once with `ortc compile` (every
node must end up in an EPContext node: If runs as sub-plans of the CPU EP's
plan, Loop runs its body as one with carried values whose shapes change per
iteration, Scan runs its body once per step of a dynamic sequence (Scan-8
as a Loop over its batch of such Scans), NonZero/Compress/Unique/
NonMaxSuppression, and TopK and Range with bounds computed from data, report
their sizes), then
run with `ortc run` on several inputs whose data changes the shapes (which
branch an If takes, how many tokens a decoder Loop appends, how many elements
NonZero finds, how many boxes survive NMS), and
compared with onnxruntime's CPU EP on the same model.

Usage: control_flow.py --ortc build/tools/ortc/ortc [--work DIR] [--model NAME ...]
                       [--ep cpu|cuda]
Prints a row per model, input set and output, then `N passed, M failed`; exit
status 1 on any failure.
"""

import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(__file__))
from e2e_util import helper_models_main  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def make_model(name, nodes, inputs, outputs, initializers=(), opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs, list(initializers))
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)],
                              ir_version=8)
    onnx.checker.check_model(model)
    return model


def vi(name, elem, shape):
    return helper.make_tensor_value_info(name, elem, shape)


def const(name, array):
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(array, name))


# Each builder returns (model, [feeds, ...]).


def nonzero_chain(rng):
    # Positive elements found by NonZero, gathered, scaled, summed: a
    # data-sized intermediate feeding generated kernels and reductions, and
    # data-sized graph outputs.
    nodes = [
        const("zero", np.array(0, np.float32)),
        helper.make_node("Greater", ["x", "zero"], ["pos"]),
        helper.make_node("NonZero", ["pos"], ["nz"]),
        const("axis0", np.array([0], np.int64)),
        helper.make_node("Squeeze", ["nz", "axis0"], ["idx"]),
        helper.make_node("Gather", ["x", "idx"], ["g"], axis=0),
        const("two", np.array(2, np.float32)),
        helper.make_node("Mul", ["g", "two"], ["m"]),
        helper.make_node("Sigmoid", ["m"], ["y"]),
        helper.make_node("Shape", ["y"], ["ys"]),
        helper.make_node("ReduceSum", ["m"], ["s"], keepdims=0),
    ]
    model = make_model("nonzero_chain", nodes, [vi("x", F, ["n"])],
                       [vi("y", F, [None]), vi("ys", I64, [1]), vi("s", F, []),
                        vi("nz", I64, [1, None])])
    feeds = [{"x": rng.standard_normal(n).astype(np.float32)} for n in (7, 16, 1)]
    feeds.append({"x": -np.ones(5, np.float32)})  # none found: empty outputs
    return model, feeds


def if_on_data(rng):
    # The branch taken depends on an input's data, and the branches give
    # different shapes: then x * 2 ([n]), else x concatenated with itself
    # ([2n]); what follows reads whichever came.
    then_branch = helper.make_graph(
        [const("t2", np.array(2, np.float32)), helper.make_node("Mul", ["x", "t2"], ["tout"])],
        "then", [], [vi("tout", F, ["n"])])
    else_branch = helper.make_graph(
        [helper.make_node("Concat", ["x", "x"], ["eout"], axis=0)],
        "else", [], [vi("eout", F, [None])])
    nodes = [
        helper.make_node("ReduceSum", ["x"], ["sum"], keepdims=0),
        helper.make_node("Greater", ["sum", "limit"], ["cond"]),
        helper.make_node("If", ["cond"], ["chosen"], then_branch=then_branch,
                         else_branch=else_branch),
        helper.make_node("Relu", ["chosen"], ["y"]),
        helper.make_node("ReduceMax", ["chosen"], ["peak"], keepdims=0),
    ]
    model = make_model("if_on_data", nodes, [vi("x", F, ["n"]), vi("limit", F, [])],
                       [vi("y", F, [None]), vi("peak", F, [])])
    x = rng.standard_normal(6).astype(np.float32)
    feeds = [{"x": x, "limit": np.array(-100, np.float32)},
             {"x": x, "limit": np.array(100, np.float32)},
             {"x": rng.standard_normal(3).astype(np.float32), "limit": np.array(0, np.float32)}]
    return model, feeds


def nested_if(rng):
    # An If inside an If's branch; branches read outer values (x, w) and an
    # inner one finds elements with NonZero.
    inner_then = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["it"])], "inner_then", [],
        [vi("it", F, ["b", 4])])
    inner_else = helper.make_graph(
        [helper.make_node("Neg", ["x"], ["xn"]), helper.make_node("MatMul", ["xn", "w"], ["ie"])],
        "inner_else", [], [vi("ie", F, ["b", 4])])
    outer_then = helper.make_graph(
        [helper.make_node("If", ["c2"], ["ot"], then_branch=inner_then, else_branch=inner_else)],
        "outer_then", [], [vi("ot", F, ["b", 4])])
    outer_else = helper.make_graph(
        [const("z", np.array(0, np.float32)),
         helper.make_node("Greater", ["x", "z"], ["xp"]),
         helper.make_node("NonZero", ["xp"], ["nzi"]),
         helper.make_node("Cast", ["nzi"], ["nzf"], to=F),
         helper.make_node("ReduceSum", ["nzf"], ["rs"], axes=[1], keepdims=1),
         helper.make_node("Expand", ["rs", "shape_b4"], ["oe0"]),
         helper.make_node("Slice", ["oe0", "s0", "s1", "s2"], ["oe"])],
        "outer_else", [], [vi("oe", F, [None, 4])])
    nodes = [
        const("shape_b4", np.array([2, 4], np.int64)),
        const("s0", np.array([0], np.int64)),
        const("s1", np.array([1], np.int64)),
        const("s2", np.array([0], np.int64)),
        helper.make_node("If", ["c1"], ["y"], then_branch=outer_then, else_branch=outer_else),
    ]
    w = numpy_helper.from_array(rng.standard_normal((3, 4)).astype(np.float32), "w")
    model = make_model("nested_if", nodes,
                       [vi("x", F, ["b", 3]), vi("c1", B, []), vi("c2", B, [])],
                       [vi("y", F, [None, 4])], [w], opset=12)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    feeds = [{"x": x, "c1": np.array(c1), "c2": np.array(c2)}
             for c1, c2 in ((True, True), (True, False), (False, True))]
    return model, feeds


def nms_postprocess(rng):
    # YOLO-style post-processing: boxes decoded from the raw predictions
    # (centre and size to corners), scores thresholded, NMS, and the kept
    # boxes gathered: the detections' count follows from the scores.
    nodes = [
        const("s_lo", np.array([0], np.int64)), const("s_mid", np.array([2], np.int64)),
        const("s_hi", np.array([4], np.int64)), const("ax2", np.array([2], np.int64)),
        helper.make_node("Slice", ["pred", "s_lo", "s_mid", "ax2"], ["xy"]),
        helper.make_node("Slice", ["pred", "s_mid", "s_hi", "ax2"], ["wh"]),
        const("half", np.array(0.5, np.float32)),
        helper.make_node("Mul", ["wh", "half"], ["hwh"]),
        helper.make_node("Sub", ["xy", "hwh"], ["lo"]),
        helper.make_node("Add", ["xy", "hwh"], ["hi"]),
        helper.make_node("Concat", ["lo", "hi"], ["boxes"], axis=2),
        helper.make_node("Transpose", ["scores"], ["scores_t"], perm=[0, 2, 1]),
        const("max_out", np.array([5], np.int64)),
        const("iou", np.array([0.4], np.float32)),
        const("thr", np.array([0.3], np.float32)),
        helper.make_node("NonMaxSuppression", ["boxes", "scores_t", "max_out", "iou", "thr"],
                         ["selected"]),
        const("col2", np.array([2], np.int64)),
        helper.make_node("Gather", ["selected", "col2"], ["box_idx2"], axis=1),
        const("flat", np.array([-1], np.int64)),
        helper.make_node("Reshape", ["box_idx2", "flat"], ["box_idx"]),
        const("b0", np.array(0, np.int64)),
        helper.make_node("Gather", ["boxes", "b0"], ["boxes0"], axis=0),
        helper.make_node("Gather", ["boxes0", "box_idx"], ["kept"], axis=0),
    ]
    model = make_model("nms_postprocess", nodes,
                       [vi("pred", F, [1, "anchors", 4]), vi("scores", F, [1, "anchors", 2])],
                       [vi("selected", I64, [None, 3]), vi("kept", F, [None, 4])])
    feeds = []
    for anchors in (12, 30, 4):
        centres = rng.random((1, anchors, 2)).astype(np.float32) * 10
        sizes = rng.random((1, anchors, 2)).astype(np.float32) * 3 + 0.5
        feeds.append({"pred": np.concatenate([centres, sizes], axis=2),
                      "scores": rng.random((1, anchors, 2)).astype(np.float32)})
    return model, feeds


def unique_counts(rng):
    # Unique's four outputs (sorted, along an axis), then arithmetic on them.
    nodes = [
        helper.make_node("Unique", ["x"], ["u", "first", "inverse", "counts"], axis=0, sorted=1),
        helper.make_node("Cast", ["counts"], ["cf"], to=F),
        helper.make_node("ReduceSum", ["u"], ["usum"], axes=[1], keepdims=0),
        helper.make_node("Mul", ["usum", "cf"], ["weighted"]),
    ]
    model = make_model("unique_counts", nodes, [vi("x", F, ["n", 2])],
                       [vi("u", F, [None, 2]), vi("first", I64, [None]),
                        vi("inverse", I64, ["n"]), vi("weighted", F, [None])], opset=12)
    feeds = []
    for n in (6, 10, 1):
        x = rng.integers(0, 3, size=(n, 2)).astype(np.float32)
        feeds.append({"x": x})
    return model, feeds


def greedy_decoder(rng):
    # Greedy decoding with a GPT-style step in a Loop: the carried token
    # sequence grows by one per iteration (its shape changes every time), a
    # causal self-attention over the embedded sequence gives the next token
    # by ArgMax, the scan output collects the tokens, and the loop ends early
    # when the end token (an input) comes. The trip count is an input too.
    vocab, width = 11, 8
    body_nodes = [
        helper.make_node("Gather", ["embed", "seq"], ["h0"], axis=0),          # [1, t, D]
        helper.make_node("Shape", ["seq"], ["seq_shape"]),
        const("one_i", np.array([1], np.int64)), const("two_i", np.array([2], np.int64)),
        helper.make_node("Slice", ["seq_shape", "one_i", "two_i"], ["t"]),     # [1]
        const("zero_i", np.array([0], np.int64)),
        helper.make_node("Slice", ["pos", "zero_i", "t"], ["pos_t"]),          # [t, D]
        helper.make_node("Add", ["h0", "pos_t"], ["h"]),
        helper.make_node("MatMul", ["h", "wq"], ["q"]),
        helper.make_node("Transpose", ["h"], ["ht"], perm=[0, 2, 1]),
        helper.make_node("MatMul", ["q", "ht"], ["scores0"]),                  # [1, t, t]
        const("scale", np.array(1 / np.sqrt(width), np.float32)),
        helper.make_node("Mul", ["scores0", "scale"], ["scores1"]),
        helper.make_node("Shape", ["scores1"], ["sshape"]),
        helper.make_node("ConstantOfShape", ["sshape"], ["ones"],
                         value=numpy_helper.from_array(np.array([1], np.float32))),
        helper.make_node("Trilu", ["ones"], ["lower"], upper=0),
        const("one_f", np.array(1, np.float32)), const("big", np.array(1e4, np.float32)),
        helper.make_node("Sub", ["lower", "one_f"], ["masked0"]),
        helper.make_node("Mul", ["masked0", "big"], ["mask"]),
        helper.make_node("Add", ["scores1", "mask"], ["scores"]),
        helper.make_node("Softmax", ["scores"], ["attn"], axis=-1),
        helper.make_node("MatMul", ["attn", "h"], ["ctx"]),                    # [1, t, D]
        const("last", np.array(-1, np.int64)),
        helper.make_node("Gather", ["ctx", "last"], ["ctx_last"], axis=1),     # [1, D]
        helper.make_node("MatMul", ["ctx_last", "unembed"], ["logits"]),       # [1, V]
        helper.make_node("ArgMax", ["logits"], ["next"], axis=-1, keepdims=1),  # [1, 1]
        helper.make_node("Concat", ["seq", "next"], ["seq_out"], axis=1),
        helper.make_node("Equal", ["next", "eos"], ["is_eos"]),
        helper.make_node("Not", ["is_eos"], ["go_on1"]),
        helper.make_node("Squeeze", ["go_on1", "zero_i"], ["go_on0"]),
        helper.make_node("Squeeze", ["go_on0", "zero_i"], ["go_on"]),
        helper.make_node("Identity", ["logits"], ["step_logits"]),
    ]
    body = helper.make_graph(
        body_nodes, "step",
        [vi("i", I64, []), vi("c", B, []), vi("seq", I64, [1, "t"])],
        [vi("go_on", B, []), vi("seq_out", I64, [1, "t1"]),
         vi("step_logits", F, [1, vocab])])
    nodes = [
        const("keep_going", np.array(True)),
        helper.make_node("Loop", ["steps", "keep_going", "prompt"], ["tokens", "all_logits"],
                         body=body),
    ]
    inits = [numpy_helper.from_array(a, n) for n, a in [
        ("embed", rng.standard_normal((vocab, width)).astype(np.float32)),
        ("pos", rng.standard_normal((32, width)).astype(np.float32) * 0.1),
        ("wq", rng.standard_normal((width, width)).astype(np.float32)),
        ("unembed", rng.standard_normal((width, vocab)).astype(np.float32))]]
    model = make_model("greedy_decoder", nodes,
                       [vi("prompt", I64, [1, "p"]), vi("steps", I64, []), vi("eos", I64, [])],
                       [vi("tokens", I64, [1, None]), vi("all_logits", F, [None, 1, vocab])],
                       inits)
    feeds = [{"prompt": rng.integers(0, vocab, size=(1, p)).astype(np.int64),
              "steps": np.array(steps, np.int64), "eos": np.array(-1, np.int64)}
             for p, steps in ((1, 6), (4, 9), (7, 3), (2, 0))]
    # The same prompt again, with the third token the decoder makes (as
    # onnxruntime makes it) as the end token: the loop stops on the data,
    # at that token's first appearance.
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    tokens = session.run(None, feeds[1])[0]
    feeds.append(dict(feeds[1], eos=np.array(tokens[0, 4 + 2], np.int64)))
    return model, feeds


def scan_rnn(rng):
    # A hand-written RNN as a Scan over a dynamic number of steps: the state
    # h' = tanh(h W + x_t) is carried, the second scan input is read
    # backwards, and the per-step states are stacked along axis 1.
    width = 4
    body = helper.make_graph(
        [helper.make_node("MatMul", ["h", "w"], ["hw"]),
         helper.make_node("Add", ["hw", "xt"], ["pre"]),
         helper.make_node("Add", ["pre", "rt"], ["pre2"]),
         helper.make_node("Tanh", ["pre2"], ["h_out"]),
         helper.make_node("Identity", ["h_out"], ["each"])],
        "step", [vi("h", F, ["b", width]), vi("xt", F, ["b", width]), vi("rt", F, ["b", width])],
        [vi("h_out", F, ["b", width]), vi("each", F, ["b", width])])
    nodes = [helper.make_node("Scan", ["h0", "x", "r"], ["h_last", "hs"], body=body,
                              num_scan_inputs=2, scan_input_directions=[0, 1],
                              scan_output_axes=[1])]
    w = numpy_helper.from_array(rng.standard_normal((width, width)).astype(np.float32) * 0.5, "w")
    model = make_model("scan_rnn", nodes,
                       [vi("h0", F, ["b", width]), vi("x", F, ["t", "b", width]),
                        vi("r", F, ["t", "b", width])],
                       [vi("h_last", F, ["b", width]), vi("hs", F, ["b", "t", width])], [w])
    feeds = []
    for steps, batch in ((5, 2), (1, 3), (9, 1)):
        feeds.append({"h0": rng.standard_normal((batch, width)).astype(np.float32),
                      "x": rng.standard_normal((steps, batch, width)).astype(np.float32),
                      "r": rng.standard_normal((steps, batch, width)).astype(np.float32)})
    return model, feeds


def scan8_batch(rng):
    # Scan-8 (an opset-8 model): states and scan inputs have a leading batch
    # dim, each batch element is scanned on its own (the second scan input
    # backwards), and both batch and sequence length are dynamic.
    width = 3
    body = helper.make_graph(
        [helper.make_node("Add", ["s", "xt"], ["s1"]),
         helper.make_node("Mul", ["s1", "rt"], ["s_out"]),
         helper.make_node("Tanh", ["s_out"], ["each"])],
        "step", [vi("s", F, [width]), vi("xt", F, [width]), vi("rt", F, [width])],
        [vi("s_out", F, [width]), vi("each", F, [width])])
    nodes = [helper.make_node("Scan", ["", "s0", "x", "r"], ["s_last", "ys"], body=body,
                              num_scan_inputs=2, directions=[0, 1])]
    model = make_model("scan8_batch", nodes,
                       [vi("s0", F, ["b", width]), vi("x", F, ["b", "t", width]),
                        vi("r", F, ["b", "t", width])],
                       [vi("s_last", F, ["b", width]), vi("ys", F, ["b", "t", width])], opset=8)
    feeds = []
    for batch, steps in ((2, 5), (1, 3), (3, 1)):
        feeds.append({"s0": rng.standard_normal((batch, width)).astype(np.float32),
                      "x": rng.standard_normal((batch, steps, width)).astype(np.float32),
                      "r": (0.5 + rng.random((batch, steps, width))).astype(np.float32)})
    return model, feeds


def computed_bounds(rng):
    # TopK whose K is computed from the data (how many scores pass a
    # threshold) and a Range whose limit is (the largest index found): both
    # sized by the data at run time.
    nodes = [
        const("thr", np.array(0.5, np.float32)),
        helper.make_node("Greater", ["scores", "thr"], ["keep"]),
        helper.make_node("Cast", ["keep"], ["keep_f"], to=F),
        helper.make_node("ReduceSum", ["keep_f"], ["k_f"], keepdims=1),        # [1]
        helper.make_node("Cast", ["k_f"], ["k"], to=I64),
        helper.make_node("TopK", ["scores", "k"], ["top", "top_idx"], axis=0),
        helper.make_node("ReduceMax", ["top_idx"], ["limit"], keepdims=0),
        const("zero", np.array(0, np.int64)), const("one", np.array(1, np.int64)),
        helper.make_node("Range", ["zero", "limit", "one"], ["ramp"]),
        helper.make_node("Cast", ["ramp"], ["ramp_f"], to=F),
        helper.make_node("ReduceSum", ["ramp_f"], ["ramp_sum"], keepdims=0),
    ]
    model = make_model("computed_bounds", nodes, [vi("scores", F, ["n"])],
                       [vi("top", F, [None]), vi("top_idx", I64, [None]), vi("ramp", I64, [None]),
                        vi("ramp_sum", F, [])], opset=18)
    feeds = [{"scores": rng.random(n).astype(np.float32)} for n in (8, 20, 3)]
    return model, feeds


MODELS = {
    "nonzero_chain": nonzero_chain,
    "if_on_data": if_on_data,
    "nested_if": nested_if,
    "nms_postprocess": nms_postprocess,
    "unique_counts": unique_counts,
    "greedy_decoder": greedy_decoder,
    "scan_rnn": scan_rnn,
    "scan8_batch": scan8_batch,
    "computed_bounds": computed_bounds,
}


def main():
    return helper_models_main(
        __doc__.splitlines()[0], MODELS, 7, "ortc_control_flow_",
        ep_help="cuda: compile with --ep=cuda,cpu (the CUDA EP takes what it can, the CPU EP "
                "the control flow and data-sized ops) and run the CUDA partitions on the host "
                "emulation")


if __name__ == "__main__":
    sys.exit(main())
