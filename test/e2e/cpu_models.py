"""Models of the CPU EP's benchmark families (MLP, CNN, transformer encoder),
built with onnx.helper, each with a dynamic batch dimension.

Each builder returns (model, feeds_for_batch) where feeds_for_batch(batch, rng)
gives the input arrays for one run.
"""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OPSET = 18


def _init(name, array):
    return numpy_helper.from_array(np.asarray(array), name)


def _model(nodes, inputs, outputs, initializers, name, opset=OPSET):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def mlp(rng):
    """MatMul, Gemm, Add, Relu, Sigmoid, Tanh, Softmax."""
    w1 = rng.standard_normal((64, 128), dtype=np.float32) * 0.1
    b1 = rng.standard_normal((128,), dtype=np.float32) * 0.1
    w2 = rng.standard_normal((96, 128), dtype=np.float32) * 0.1  # Gemm with transB
    b2 = rng.standard_normal((96,), dtype=np.float32) * 0.1
    w3 = rng.standard_normal((96, 10), dtype=np.float32) * 0.1
    nodes = [
        helper.make_node("MatMul", ["x", "w1"], ["h1"], name="fc1"),
        helper.make_node("Add", ["h1", "b1"], ["h1b"], name="fc1_bias"),
        helper.make_node("Relu", ["h1b"], ["a1"], name="relu1"),
        helper.make_node("Gemm", ["a1", "w2", "b2"], ["h2"], name="fc2", transB=1, alpha=0.5,
                         beta=2.0),
        helper.make_node("Sigmoid", ["h2"], ["s2"], name="sigmoid2"),
        helper.make_node("Tanh", ["h2"], ["t2"], name="tanh2"),
        helper.make_node("Mul", ["s2", "t2"], ["a2"], name="gate"),
        helper.make_node("MatMul", ["a2", "w3"], ["logits"], name="fc3"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 64])],
        [helper.make_tensor_value_info("probs", TensorProto.FLOAT, ["batch", 10]),
         helper.make_tensor_value_info("h2", TensorProto.FLOAT, ["batch", 96])],
        [_init("w1", w1), _init("b1", b1), _init("w2", w2), _init("b2", b2), _init("w3", w3)],
        "mlp")
    return model, lambda batch, r: {"x": r.standard_normal((batch, 64), dtype=np.float32)}


def cnn(rng):
    """Conv (groups, strides, pads, dilations), BatchNormalization, Relu, Clip (Relu6),
    MaxPool, AveragePool, Concat, Resize nearest, GlobalAveragePool, Flatten, Gemm."""
    def conv_w(cout, cin, k):
        return rng.standard_normal((cout, cin, k, k), dtype=np.float32) * 0.2

    inits = [
        _init("w1", conv_w(8, 3, 3)), _init("b1", rng.standard_normal(8).astype(np.float32)),
        _init("bn_scale", rng.uniform(0.5, 1.5, 8).astype(np.float32)),
        _init("bn_bias", rng.standard_normal(8).astype(np.float32) * 0.1),
        _init("bn_mean", rng.standard_normal(8).astype(np.float32) * 0.1),
        _init("bn_var", rng.uniform(0.5, 1.5, 8).astype(np.float32)),
        _init("w2", conv_w(8, 2, 3)),  # group 4
        _init("w3", conv_w(8, 1, 3)),  # depthwise, dilation 2
        _init("w4", conv_w(16, 16, 1)),
        _init("relu6_min", np.array(0.0, np.float32)),
        _init("relu6_max", np.array(6.0, np.float32)),
        _init("resize_scales", np.array([1, 1, 2, 2], np.float32)),
        _init("fc_w", rng.standard_normal((16, 5), dtype=np.float32) * 0.3),
        _init("fc_b", rng.standard_normal(5).astype(np.float32)),
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], name="conv1", pads=[1, 1, 1, 1],
                         strides=[2, 2]),
        helper.make_node("BatchNormalization", ["c1", "bn_scale", "bn_bias", "bn_mean", "bn_var"],
                         ["n1"], name="bn1", epsilon=1e-3),
        helper.make_node("Relu", ["n1"], ["r1"], name="relu1"),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], name="conv_grouped", group=4,
                         pads=[1, 1, 1, 1]),
        helper.make_node("Clip", ["c2", "relu6_min", "relu6_max"], ["r2"], name="relu6"),
        helper.make_node("Conv", ["r1", "w3"], ["c3"], name="conv_depthwise", group=8,
                         dilations=[2, 2], pads=[2, 2, 2, 2]),
        helper.make_node("Concat", ["r2", "c3"], ["cat"], name="concat", axis=1),
        helper.make_node("MaxPool", ["cat"], ["p1"], name="maxpool", kernel_shape=[3, 3],
                         strides=[2, 2], pads=[1, 1, 1, 1]),
        helper.make_node("Resize", ["p1", "", "resize_scales"], ["up"], name="upsample",
                         mode="nearest"),
        helper.make_node("AveragePool", ["up"], ["p2"], name="avgpool", kernel_shape=[2, 2],
                         strides=[2, 2]),
        helper.make_node("Conv", ["p2", "w4"], ["c4"], name="conv_pointwise"),
        helper.make_node("GlobalAveragePool", ["c4"], ["g"], name="gap"),
        helper.make_node("Flatten", ["g"], ["f"], name="flatten", axis=1),
        helper.make_node("Gemm", ["f", "fc_w", "fc_b"], ["y"], name="fc"),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 32, 32])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 5])],
        inits, "cnn")
    return model, lambda batch, r: {"x": r.standard_normal((batch, 3, 32, 32), dtype=np.float32)}


def transformer(rng, seq=16, hidden=64, heads=4):
    """One encoder block: LayerNormalization, the attention pattern (MatMul, Reshape,
    Transpose, Div, Softmax, MatMul), Gelu written with Erf, Split, Slice, Gather, Where,
    Cast, Shape, Unsqueeze/Squeeze, ReduceMean, Pow, Sqrt, Div."""
    head = hidden // heads
    f32 = np.float32

    def w(*shape, scale=0.1):
        return rng.standard_normal(shape, dtype=f32) * scale

    inits = [
        _init("ln1_scale", rng.uniform(0.5, 1.5, hidden).astype(f32)),
        _init("ln1_bias", w(hidden)),
        _init("w_qkv", w(hidden, 3 * hidden)), _init("b_qkv", w(3 * hidden)),
        _init("split_sizes", np.array([hidden, hidden, hidden], np.int64)),
        _init("heads_shape", np.array([0, seq, heads, head], np.int64)),
        _init("merge_shape", np.array([0, seq, hidden], np.int64)),
        _init("sqrt_d", np.array(np.sqrt(head), f32)),
        _init("w_o", w(hidden, hidden)), _init("b_o", w(hidden)),
        _init("two", np.array(2.0, f32)), _init("eps", np.array(1e-5, f32)),
        _init("ln2_scale", rng.uniform(0.5, 1.5, hidden).astype(f32)),
        _init("ln2_bias", w(hidden)),
        _init("w_ff1", w(hidden, 4 * hidden)), _init("b_ff1", w(4 * hidden)),
        _init("w_ff2", w(4 * hidden, hidden)), _init("b_ff2", w(hidden)),
        _init("half", np.array(0.5, f32)), _init("one", np.array(1.0, f32)),
        _init("inv_sqrt2", np.array(1 / np.sqrt(2), f32)),
        _init("axes_last", np.array([-1], np.int64)),
        _init("mask_bias", np.array(-1e4, f32)), _init("zero", np.array(0.0, f32)),
        _init("cls_index", np.array(0, np.int64)),
        _init("slice_starts", np.array([0], np.int64)),
        _init("slice_ends", np.array([hidden // 2], np.int64)),
        _init("slice_axes", np.array([2], np.int64)),
        _init("axis1", np.array([1], np.int64)),
    ]
    n = helper.make_node
    nodes = [
        # Pre-norm with onnx LayerNormalization.
        n("LayerNormalization", ["x", "ln1_scale", "ln1_bias"], ["ln1"], name="ln1", axis=-1,
          epsilon=1e-5),
        n("MatMul", ["ln1", "w_qkv"], ["qkv0"], name="qkv"),
        n("Add", ["qkv0", "b_qkv"], ["qkv"], name="qkv_bias"),
        n("Split", ["qkv", "split_sizes"], ["q0", "k0", "v0"], name="split_qkv", axis=2),
        n("Reshape", ["q0", "heads_shape"], ["q1"], name="q_heads"),
        n("Transpose", ["q1"], ["q"], name="q_t", perm=[0, 2, 1, 3]),
        n("Reshape", ["k0", "heads_shape"], ["k1"], name="k_heads"),
        n("Transpose", ["k1"], ["kt"], name="k_t", perm=[0, 2, 3, 1]),
        n("Reshape", ["v0", "heads_shape"], ["v1"], name="v_heads"),
        n("Transpose", ["v1"], ["v"], name="v_t", perm=[0, 2, 1, 3]),
        n("MatMul", ["q", "kt"], ["scores0"], name="scores"),
        n("Div", ["scores0", "sqrt_d"], ["scores1"], name="scale"),
        # Padding mask from the input: positions where mask == 0 get -1e4.
        n("Cast", ["mask"], ["mask_b"], name="mask_bool", to=TensorProto.BOOL),
        n("Where", ["mask_b", "zero", "mask_bias"], ["mask_add0"], name="mask_where"),
        n("Unsqueeze", ["mask_add0", "axis1"], ["mask_add1"], name="mask_unsq1"),
        n("Unsqueeze", ["mask_add1", "axis1"], ["mask_add"], name="mask_unsq2"),
        n("Add", ["scores1", "mask_add"], ["scores"], name="mask_add"),
        n("Softmax", ["scores"], ["probs"], name="softmax", axis=-1),
        n("MatMul", ["probs", "v"], ["ctx0"], name="context"),
        n("Transpose", ["ctx0"], ["ctx1"], name="ctx_t", perm=[0, 2, 1, 3]),
        n("Reshape", ["ctx1", "merge_shape"], ["ctx"], name="ctx_merge"),
        n("MatMul", ["ctx", "w_o"], ["attn0"], name="out_proj"),
        n("Add", ["attn0", "b_o"], ["attn"], name="out_bias"),
        n("Add", ["x", "attn"], ["res1"], name="residual1"),
        # Second norm written out: ReduceMean, Sub, Pow, Sqrt, Div.
        n("ReduceMean", ["res1", "axes_last"], ["mu"], name="ln2_mean"),
        n("Sub", ["res1", "mu"], ["xc"], name="ln2_center"),
        n("Pow", ["xc", "two"], ["sq"], name="ln2_square"),
        n("ReduceMean", ["sq", "axes_last"], ["var"], name="ln2_var"),
        n("Add", ["var", "eps"], ["var_eps"], name="ln2_eps"),
        n("Sqrt", ["var_eps"], ["std"], name="ln2_std"),
        n("Div", ["xc", "std"], ["xn"], name="ln2_norm"),
        n("Mul", ["xn", "ln2_scale"], ["xs"], name="ln2_scale"),
        n("Add", ["xs", "ln2_bias"], ["ln2"], name="ln2_shift"),
        # Feed-forward with Gelu from Erf.
        n("MatMul", ["ln2", "w_ff1"], ["ff0"], name="ff1"),
        n("Add", ["ff0", "b_ff1"], ["ff1"], name="ff1_bias"),
        n("Mul", ["ff1", "inv_sqrt2"], ["g0"], name="gelu_scale"),
        n("Erf", ["g0"], ["g1"], name="gelu_erf"),
        n("Add", ["g1", "one"], ["g2"], name="gelu_add"),
        n("Mul", ["ff1", "g2"], ["g3"], name="gelu_mul"),
        n("Mul", ["g3", "half"], ["gelu"], name="gelu_half"),
        n("MatMul", ["gelu", "w_ff2"], ["ff2"], name="ff2"),
        n("Add", ["ff2", "b_ff2"], ["ff"], name="ff2_bias"),
        n("Add", ["res1", "ff"], ["y"], name="residual2"),
        # Heads on the output: the first token (Gather), half the features (Slice).
        n("Gather", ["y", "cls_index"], ["cls"], name="cls_token", axis=1),
        n("Slice", ["y", "slice_starts", "slice_ends", "slice_axes"], ["y_half"],
          name="half_features"),
        n("Shape", ["y_half"], ["y_shape"], name="shape", start=1),
        n("Squeeze", ["mask_add1", "axis1"], ["mask_sq"], name="mask_squeeze"),
        # RMS of each token: ReduceMean, Pow and Sqrt that no fusion takes.
        n("Pow", ["y", "two"], ["y_sq"], name="rms_square"),
        n("ReduceMean", ["y_sq", "axes_last"], ["y_ms"], name="rms_mean", keepdims=0),
        n("Sqrt", ["y_ms"], ["rms"], name="rms_sqrt"),
    ]
    model = _model(
        nodes,
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", seq, hidden]),
         helper.make_tensor_value_info("mask", TensorProto.INT64, ["batch", seq])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", seq, hidden]),
         helper.make_tensor_value_info("cls", TensorProto.FLOAT, ["batch", hidden]),
         helper.make_tensor_value_info("y_half", TensorProto.FLOAT, ["batch", seq, hidden // 2]),
         helper.make_tensor_value_info("y_shape", TensorProto.INT64, [2]),
         helper.make_tensor_value_info("mask_sq", TensorProto.FLOAT, ["batch", seq]),
         helper.make_tensor_value_info("rms", TensorProto.FLOAT, ["batch", seq])],
        inits, "transformer")

    def feeds(batch, r):
        mask = np.ones((batch, seq), np.int64)
        for b in range(batch):
            mask[b, seq - 1 - (b % 4):] = 0
        return {"x": r.standard_normal((batch, seq, hidden), dtype=f32), "mask": mask}

    return model, feeds


def attention(rng, heads=2, seq=8, head=16):
    """Scaled dot-product attention as exporters write it (Transpose of K over
    the last two dims, MatMul, Div, Softmax, MatMul); the compiler fuses it into
    ortc.attention, which the CPU EP runs as one library kernel."""
    f32 = np.float32
    n = helper.make_node
    nodes = [
        n("Transpose", ["k"], ["kt"], name="k_t", perm=[0, 1, 3, 2]),
        n("MatMul", ["q", "kt"], ["s"], name="qk"),
        n("Div", ["s", "sqrt_d"], ["ss"], name="scale"),
        n("Softmax", ["ss"], ["p"], name="softmax", axis=-1),
        n("MatMul", ["p", "v"], ["y"], name="pv"),
    ]
    shape = ["batch", heads, seq, head]
    model = _model(
        nodes,
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name in "qkv"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, shape)],
        [_init("sqrt_d", np.array(np.sqrt(head), f32))], "attention")
    return model, lambda batch, r: {
        name: r.standard_normal((batch, heads, seq, head), dtype=f32) for name in "qkv"}


def shape_arith(rng):
    """Shape arithmetic next to a dynamic batch, as exporters write it: a
    Range over a static dim read with Shape -> Gather -> Cast, SAME-style pads
    computed from Shape with Sub and Div, and a Reshape to [batch, -1] built
    from Shape. The static entries fold at compile time, the batch stays
    dynamic."""
    f32, i64 = np.float32, np.int64
    n = helper.make_node
    nodes = [
        n("Shape", ["x"], ["s"], name="shape"),
        n("Gather", ["s", "i3"], ["w"], name="width", axis=0),
        n("Cast", ["w"], ["wf"], name="width_f", to=TensorProto.FLOAT),
        n("Range", ["zero", "wf", "one"], ["r"], name="range"),
        n("Add", ["x", "r"], ["xr"], name="add_range"),
        n("Gather", ["s", "i2"], ["h"], name="height", axis=0),
        n("Sub", ["h", "six"], ["h6"], name="pad_sub"),
        n("Div", ["h6", "two"], ["p"], name="pad_div"),
        n("Unsqueeze", ["p", "ax0"], ["p1"], name="pad_vec"),
        n("Concat", ["z2", "p1", "p1", "z2", "p1", "p1"], ["pads"], name="pads", axis=0),
        n("Pad", ["xr", "pads"], ["xp"], name="pad"),
        n("Conv", ["xp", "w3"], ["c"], name="conv", kernel_shape=[3, 3]),
        n("Shape", ["c"], ["cs"], name="conv_shape"),
        n("Slice", ["cs", "s0", "s1"], ["b"], name="batch_dim"),
        n("Concat", ["b", "minus1"], ["flat"], name="flat_shape", axis=0),
        n("Reshape", ["c", "flat"], ["y"], name="flatten"),
    ]
    model = _model(
        nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 8, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 4 * 8 * 8])],
        [_init("i3", np.array(3, i64)), _init("i2", np.array(2, i64)),
         _init("zero", np.array(0, f32)), _init("one", np.array(1, f32)),
         _init("six", np.array(6, i64)), _init("two", np.array(2, i64)),
         _init("ax0", np.array([0], i64)), _init("z2", np.zeros(2, i64)),
         _init("w3", (rng.standard_normal((4, 3, 3, 3)) * 0.3).astype(f32)),
         _init("s0", np.array([0], i64)), _init("s1", np.array([1], i64)),
         _init("minus1", np.array([-1], i64))], "shape_arith")
    return model, lambda batch, r: {"x": r.standard_normal((batch, 3, 8, 8), dtype=f32)}


def declared_shapes(rng):
    """Declared shapes as exporters get them wrong: a graph input whose batch
    is dim_value -1 (Paddle2ONNX's "dynamic") and a graph output declared with
    a rank the graph does not produce. onnxruntime warns and runs; so does
    ortc, with the computed shapes."""
    f32 = np.float32
    x = onnx.ValueInfoProto()
    x.name = "x"
    x.type.tensor_type.elem_type = TensorProto.FLOAT
    for dim in (-1, 4):
        x.type.tensor_type.shape.dim.add().dim_value = dim
    nodes = [helper.make_node("MatMul", ["x", "w"], ["m"], name="mm"),
             helper.make_node("Relu", ["m"], ["y"], name="act")]
    model = _model(nodes, [x], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, "seq", 2])],
                   [_init("w", rng.standard_normal((4, 8)).astype(f32))], "declared_shapes")
    return model, lambda batch, r: {"x": r.standard_normal((batch, 4), dtype=f32)}


def softmax_opset11(rng):
    """Softmax of opset 11 over axis 1 of an NCHW tensor with a dynamic batch
    (Paddle2ONNX's segmentation heads) and LogSoftmax-11 over axis 2 of a
    static one: they normalize over the input flattened to 2-D at the axis,
    not over the axis alone."""
    f32 = np.float32
    nodes = [helper.make_node("Softmax", ["x"], ["s"], name="softmax", axis=1),
             helper.make_node("LogSoftmax", ["z"], ["l"], name="log_softmax", axis=2),
             helper.make_node("Relu", ["s"], ["y"], name="act")]
    model = _model(nodes, [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3, 4, 5]),
                           helper.make_tensor_value_info("z", TensorProto.FLOAT, [2, 3, 4, 5])],
                   [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", 3, 4, 5]),
                    helper.make_tensor_value_info("l", TensorProto.FLOAT, [2, 3, 4, 5])],
                   [], "softmax_opset11", opset=11)
    return model, lambda batch, r: {"x": r.standard_normal((batch, 3, 4, 5), dtype=f32),
                                    "z": r.standard_normal((2, 3, 4, 5), dtype=f32)}


FAMILIES = {"mlp": mlp, "cnn": cnn, "transformer": transformer, "attention": attention,
            "shape_arith": shape_arith, "declared_shapes": declared_shapes,
            "softmax_opset11": softmax_opset11}
