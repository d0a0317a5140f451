"""Sequences and optionals inside a partition, end to end against onnxruntime.

Each model is built with onnx.helper in the forms exporters write (a Loop
that appends to a sequence started by SequenceEmpty and a ConcatFromSequence
after it, as torch.jit-scripted list appends export; SplitToSequence read at
a data-dependent position; sequences built and edited in If branches; an
optional that gates a branch), compiled once with `ortc compile` (every node
must end up in an EPContext node), run with `ortc run` on several inputs
whose data changes the sequences' lengths and element shapes, and compared
with onnxruntime's CPU EP. The graphs' inputs and outputs are tensors: a
sequence or optional does not cross a partition boundary.

Usage: sequences.py --ortc build/tools/ortc/ortc [--work DIR] [--model NAME ...]
Prints a row per model, input set and output, then `N passed, M failed`; exit
status 1 on any failure.
"""

import os
import sys

import numpy as np
from onnx import TensorProto, helper

sys.path.insert(0, os.path.dirname(__file__))
from control_flow import const, make_model, vi  # noqa: E402
from e2e_util import helper_models_main  # noqa: E402

F, I64, B = TensorProto.FLOAT, TensorProto.INT64, TensorProto.BOOL


def seq_vi(name, elem, shape=None):
    return helper.make_tensor_sequence_value_info(name, elem, shape)


# Each builder returns (model, [feeds, ...]).


def loop_append(rng):
    # for i in range(n): rows.append(x[i] * 2 + i); y = cat(rows); also
    # stacked along a new axis, and the length.
    body = helper.make_graph(
        [
            helper.make_node("Gather", ["x", "i"], ["row"], axis=0),
            helper.make_node("Cast", ["i"], ["fi"], to=F),
            helper.make_node("Mul", ["row", "two"], ["scaled"]),
            helper.make_node("Add", ["scaled", "fi"], ["shifted"]),
            helper.make_node("Unsqueeze", ["shifted", "zero_axis"], ["one_row"]),
            helper.make_node("SequenceInsert", ["rows_in", "one_row"], ["rows_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("cond_in", B, []), seq_vi("rows_in", F)],
        [vi("cond_out", B, []), seq_vi("rows_out", F)],
    )
    nodes = [
        const("two", np.array(2.0, np.float32)),
        const("zero_axis", np.array([0], np.int64)),
        const("zero", np.array(0, np.int64)),
        helper.make_node("Shape", ["x"], ["shape"]),
        helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
        const("true", np.array(True)),
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
        helper.make_node("Loop", ["n", "true", "empty"], ["rows"], body=body),
        helper.make_node("ConcatFromSequence", ["rows"], ["y"], axis=0),
        helper.make_node("ConcatFromSequence", ["rows"], ["stacked"], axis=1, new_axis=1),
        helper.make_node("SequenceLength", ["rows"], ["count"]),
    ]
    model = make_model("loop_append", nodes, [vi("x", F, ["n", 4])],
                       [vi("y", F, [None, 4]), vi("stacked", F, [1, None, 4]), vi("count", I64, [])])
    feeds = [{"x": rng.standard_normal((n, 4)).astype(np.float32)} for n in (3, 1, 6)]
    return model, feeds


def split_pick(rng):
    # Pieces of x along axis 0 (sizes from data), one picked by a position
    # input (negative too), the last erased and the rest concatenated, one
    # inserted at the front again.
    nodes = [
        const("front", np.array(0, np.int64)),
        helper.make_node("SplitToSequence", ["x", "split"], ["pieces"], axis=0),
        helper.make_node("SequenceAt", ["pieces", "pos"], ["picked"]),
        helper.make_node("SequenceLength", ["pieces"], ["count"]),
        helper.make_node("SequenceErase", ["pieces"], ["but_last"]),
        helper.make_node("SequenceInsert", ["but_last", "picked", "front"], ["again"]),
        helper.make_node("ConcatFromSequence", ["again"], ["joined"], axis=0),
        helper.make_node("SplitToSequence", ["x"], ["rows"], axis=1, keepdims=0),
        helper.make_node("ConcatFromSequence", ["rows"], ["transposed"], axis=0, new_axis=1),
    ]
    model = make_model("split_pick", nodes,
                       [vi("x", F, ["n", 3]), vi("split", I64, ["k"]), vi("pos", I64, [])],
                       [vi("picked", F, [None, 3]), vi("count", I64, []), vi("joined", F, [None, 3]),
                        vi("transposed", F, [3, None])])
    feeds = [
        {"x": rng.standard_normal((6, 3)).astype(np.float32),
         "split": np.array([1, 2, 3], np.int64), "pos": np.array(1, np.int64)},
        {"x": rng.standard_normal((5, 3)).astype(np.float32),
         "split": np.array([4, 1], np.int64), "pos": np.array(-2, np.int64)},
        {"x": rng.standard_normal((4, 3)).astype(np.float32),
         "split": np.array([1, 1, 1, 1], np.int64), "pos": np.array(3, np.int64)},
    ]
    return model, feeds


def branch_edit(rng):
    # A sequence of three differently shaped tensors, edited in an If on the
    # data (an insert in one branch, an erase in the other; the branches read
    # the sequence from outside), then concatenated and one element read.
    then_branch = helper.make_graph(
        [helper.make_node("SequenceInsert", ["parts", "d"], ["edited_then"])],
        "then", [], [seq_vi("edited_then", F, None)])
    else_branch = helper.make_graph(
        [helper.make_node("SequenceErase", ["parts", "first"], ["edited_else"])],
        "else", [], [seq_vi("edited_else", F, None)])
    nodes = [
        const("first", np.array(0, np.int64)),
        const("last", np.array(-1, np.int64)),
        helper.make_node("SequenceConstruct", ["a", "b", "c"], ["parts"]),
        helper.make_node("ReduceSum", ["a"], ["total"], keepdims=0),
        const("zero", np.array(0.0, np.float32)),
        helper.make_node("Greater", ["total", "zero"], ["positive"]),
        helper.make_node("If", ["positive"], ["edited"], then_branch=then_branch,
                         else_branch=else_branch),
        helper.make_node("ConcatFromSequence", ["edited"], ["joined"], axis=0),
        helper.make_node("SequenceAt", ["edited", "last"], ["tail"]),
    ]
    model = make_model("branch_edit", nodes,
                       [vi("a", F, [2, 3]), vi("b", F, ["m", 3]), vi("c", F, [1, 3]),
                        vi("d", F, ["k", 3])],
                       [vi("joined", F, [None, 3]), vi("tail", F, [None, 3])])
    feeds = []
    for sign, m, k in ((1, 4, 2), (-1, 2, 5), (1, 1, 1)):
        feeds.append({"a": (sign * np.abs(rng.standard_normal((2, 3)))).astype(np.float32),
                      "b": rng.standard_normal((m, 3)).astype(np.float32),
                      "c": rng.standard_normal((1, 3)).astype(np.float32),
                      "d": rng.standard_normal((k, 3)).astype(np.float32)})
    return model, feeds


def optional_gate(rng):
    # An optional that holds x only when the flag says so; what follows asks
    # it whether it has an element and takes it out in a branch.
    make_then = helper.make_graph([helper.make_node("Optional", ["x"], ["some"])], "some", [],
                                  [helper.make_value_info(
                                      "some", helper.make_optional_type_proto(
                                          helper.make_tensor_type_proto(F, None)))])
    make_else = helper.make_graph(
        [helper.make_node("Optional", [], ["none"],
                          type=helper.make_tensor_type_proto(F, None))], "none", [],
        [helper.make_value_info("none", helper.make_optional_type_proto(
            helper.make_tensor_type_proto(F, None)))])
    use_then = helper.make_graph(
        [helper.make_node("OptionalGetElement", ["maybe"], ["value"]),
         helper.make_node("Add", ["value", "one"], ["used"])], "use", [], [vi("used", F, None)])
    use_else = helper.make_graph([helper.make_node("Neg", ["x"], ["used_else"])], "skip", [],
                                 [vi("used_else", F, None)])
    nodes = [
        const("one", np.array(1.0, np.float32)),
        helper.make_node("If", ["flag"], ["maybe"], then_branch=make_then, else_branch=make_else),
        helper.make_node("OptionalHasElement", ["maybe"], ["has"]),
        helper.make_node("If", ["has"], ["y"], then_branch=use_then, else_branch=use_else),
    ]
    model = make_model("optional_gate", nodes, [vi("x", F, ["n", 2]), vi("flag", B, [])],
                       [vi("y", F, [None, 2]), vi("has", B, [])], opset=18)
    feeds = [{"x": rng.standard_normal((n, 2)).astype(np.float32), "flag": np.array(flag)}
             for n, flag in ((3, True), (2, False), (5, True))]
    return model, feeds


def loop_map(rng):
    # SequenceMap as onnx expands it: a Loop over a sequence's length reads
    # element i of a sequence it captures, maps it, and appends the result
    # to the sequence it carries.
    body = helper.make_graph(
        [
            helper.make_node("SequenceAt", ["pieces", "i"], ["piece"]),
            helper.make_node("ReduceMax", ["piece", "axes"], ["peak"], keepdims=1),
            helper.make_node("Sub", ["piece", "peak"], ["centred"]),
            helper.make_node("SequenceInsert", ["mapped_in", "centred"], ["mapped_out"]),
            helper.make_node("Identity", ["cond_in"], ["cond_out"]),
        ],
        "body",
        [vi("i", I64, []), vi("cond_in", B, []), seq_vi("mapped_in", F)],
        [vi("cond_out", B, []), seq_vi("mapped_out", F)],
    )
    nodes = [
        const("axes", np.array([0], np.int64)),
        const("true", np.array(True)),
        helper.make_node("SplitToSequence", ["x", "chunk"], ["pieces"], axis=0),
        helper.make_node("SequenceLength", ["pieces"], ["n"]),
        helper.make_node("SequenceEmpty", [], ["empty"], dtype=F),
        helper.make_node("Loop", ["n", "true", "empty"], ["mapped"], body=body),
        helper.make_node("ConcatFromSequence", ["mapped"], ["y"], axis=0),
    ]
    model = make_model("loop_map", nodes, [vi("x", F, ["n", 3]), vi("chunk", I64, [])],
                       [vi("y", F, [None, 3])], opset=18)
    feeds = [{"x": rng.standard_normal((n, 3)).astype(np.float32),
              "chunk": np.array(c, np.int64)} for n, c in ((7, 3), (4, 4), (5, 1))]
    return model, feeds


def cross_partition(rng):
    # A sequence made in one partition and read in another: with
    # --ep=cuda,cpu the matrix work between the sequence ops goes to the CUDA
    # EP, so the CPU EP's sequence crosses the boundary through the session.
    w = rng.standard_normal((256, 256)).astype(np.float32) / 16
    nodes = [
        const("w", w),
        const("first", np.array(0, np.int64)),
        helper.make_node("SplitToSequence", ["x", "chunk"], ["pieces"], axis=0),
        helper.make_node("SequenceAt", ["pieces", "first"], ["head"]),
        helper.make_node("MatMul", ["head", "w"], ["h1"]),
        helper.make_node("Relu", ["h1"], ["h2"]),
        helper.make_node("MatMul", ["h2", "w"], ["h3"]),
        helper.make_node("SequenceInsert", ["pieces", "h3"], ["more"]),
        helper.make_node("ConcatFromSequence", ["more"], ["y"], axis=0),
    ]
    model = make_model("cross_partition", nodes, [vi("x", F, ["n", 256]), vi("chunk", I64, [])],
                       [vi("y", F, [None, 256])])
    feeds = [{"x": rng.standard_normal((n, 256)).astype(np.float32),
              "chunk": np.array(c, np.int64)} for n, c in ((64, 32), (48, 48), (40, 16))]
    return model, feeds


MODELS = {
    "loop_append": loop_append,
    "split_pick": split_pick,
    "branch_edit": branch_edit,
    "optional_gate": optional_gate,
    "loop_map": loop_map,
    "cross_partition": cross_partition,
}


def main():
    return helper_models_main(__doc__.splitlines()[0], MODELS, 11, "ortc_sequences_")


if __name__ == "__main__":
    sys.exit(main())
