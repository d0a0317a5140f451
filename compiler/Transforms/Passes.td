//===- Passes.td - generic passes over the onnx dialect -----*- tablegen -*-===//
//
// Passes that every model goes through before partitioning, whatever the EPs.
// One pass per file, patterns beside their pass, lit tests in
// test/lit/transforms/.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_PASSES
#define ORTC_COMPILER_TRANSFORMS_PASSES

include "mlir/Pass/PassBase.td"

def OnnxDeadCodeElimination : Pass<"onnx-dce", "mlir::func::FuncOp"> {
  let summary = "Remove onnx and ortc ops whose results are never used";
  let description = [{
    ONNX ops (and the fused ortc ops) have no side effects, so an op none of
    whose results is used
    (directly or through other dead ops, inside subgraph regions too) is
    removed. Values the function returns or that region terminators yield are
    live.
  }];
  let statistics = [
    Statistic<"numErased", "num-erased", "Number of dead ops removed">
  ];
}

def OnnxCheckTensorSizes : Pass<"onnx-check-tensor-sizes", "mlir::func::FuncOp"> {
  let summary = "Refuse a model with a tensor of a static shape larger than a limit";
  let description = [{
    Fails, naming the graph input, output or node, when a function argument,
    result or op result (inside subgraph regions too) has a static shape
    whose bytes pass `max-bytes`: such a model (a declared tensor of 2^40
    elements, or shapes that inference multiplies that far) is refused at
    compile time rather than by the runtime at load. Dynamic dims are the
    runtime's to check, at each run.
  }];
  let options = [
    Option<"maxBytes", "max-bytes", "int64_t", /*default=*/"17179869184",
           "Largest tensor, in bytes, a model may have (16 GiB)">,
  ];
}

def OnnxCanonicalize : Pass<"onnx-canonicalize", "mlir::func::FuncOp"> {
  let summary = "Local simplifications of onnx ops";
  let description = [{
    Applies, to a fixed point:
    - Identity whose input has the result's type is removed;
    - Transpose with the identity permutation is removed; Transpose of a
      Transpose becomes one Transpose with the composed permutation;
    - Reshape of a Reshape becomes one Reshape when the outer target shape is
      a constant with no 0 entries (a 0 would copy a dim of the inner result);
    - Cast to the input's own type is removed; Cast of a lossless Cast (such as
      f16 to f32, or i8 to i32) becomes one Cast, or nothing when it casts back.
    - CastLike becomes Cast to its second input's element type when that is
      known (then folded as a Cast).
    Rewrites never change a value's type: where the replacement's type differs
    the pattern does not apply.
  }];
  let dependentDialects = ["ortc::onnx_dialect::OnnxDialect"];
}

def OnnxShapeInference : Pass<"onnx-shape-inference", "mlir::func::FuncOp"> {
  let summary = "Infer static shapes and element types of onnx op results";
  let description = [{
    Propagates element types and shapes forward from the function's arguments
    and constants, refining each result to the most precise type the inputs
    allow (symbolic dims stay `?`). A declared shape that contradicts the
    inferred one is a warning naming the node, the declared and the inferred
    type, and the inferred type is used, as onnxruntime does; with
    `strict-shapes` it is an error. A contradicting element type is always an
    error. The function's result types are refined to match what it returns.
    Ops without a shape function keep their types.
  }];
  let options = [
    Option<"strictShapes", "strict-shapes", "bool", /*default=*/"false",
           "A declared shape that contradicts inference is an error, not a warning">,
  ];
  let statistics = [
    Statistic<"numRefined", "num-refined", "Number of results whose type was refined">
  ];
}

def OnnxFoldConstants : Pass<"onnx-fold-constants", "mlir::func::FuncOp"> {
  let summary = "Evaluate small constant subgraphs at compile time";
  let description = [{
    Replaces a single-result op by an onnx.Constant when its inputs are
    constants of f32, f64, i32, i64 or i1 with at most `max-elements`
    elements (and so is the result): Add, Sub, Mul, Div, Mod, Min, Max, Neg,
    Abs, Sqrt, Reciprocal, Floor, Ceil, Equal, Less, Greater, LessOrEqual,
    GreaterOrEqual, And, Or, Xor, Not, Where, Cast, CastLike, Concat, Gather,
    Slice, Range, ConstantOfShape, Expand, Tile, Transpose, ReduceSum,
    ReduceProd, ReduceMax, ReduceMin, ReduceMean, and the relabelling ops
    Identity, Reshape, Squeeze, Unsqueeze, Flatten (which need a static
    result type, from shape inference). Shape and Size fold whenever their
    input's shape is static. Ops whose result would be undefined (integer
    division by zero, out-of-range indices or casts, float Mod without fmod,
    NaN in Min/Max, the mean of nothing) are left for run time. An If whose
    condition is a constant is replaced by the ops of the branch it takes. A
    function argument of a static type with no elements (such as empty axes
    given as a graph input) is replaced, except where it is returned, by an
    empty constant.
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"65536",
           "Largest constant, in elements, that folding reads or writes">,
  ];
  let statistics = [
    Statistic<"numFolded", "num-folded", "Number of ops replaced by constants">
  ];
}

def OnnxPropagateShapes : Pass<"onnx-propagate-shapes", "mlir::func::FuncOp"> {
  let summary = "Shape inference and constant folding, alternated to a fixed point";
  let description = [{
    ONNX-style data propagation: runs onnx-shape-inference,
    onnx-fold-constants (with the same `max-elements`) and
    onnx-upgrade-generic-ops in turn until none changes anything, so that shape arithmetic on static inputs
    (Shape -> Gather/Slice/Concat/... -> Reshape/Expand/ConstantOfShape/Range)
    folds to constants and every type that follows from them is refined.
    Stops with an error after `max-rounds` rounds that still change something.
  }];
  let options = [
    Option<"maxElements", "max-elements", "int64_t", /*default=*/"65536",
           "Largest constant, in elements, that folding reads or writes">,
    Option<"maxRounds", "max-rounds", "unsigned", /*default=*/"100",
           "Most inference and folding rounds before giving up">,
    Option<"strictShapes", "strict-shapes", "bool", /*default=*/"false",
           "A declared shape that contradicts inference is an error, not a warning">,
  ];
  let statistics = [
    Statistic<"numRounds", "num-rounds", "Rounds of inference and folding run">,
    Statistic<"numRefined", "num-refined", "Number of results whose type was refined">,
    Statistic<"numFolded", "num-folded", "Number of ops replaced by constants">
  ];
}

def OnnxUpgradeScan8 : Pass<"onnx-upgrade-scan8", "mlir::func::FuncOp"> {
  let summary = "Scan-8 becomes a Loop over its batch of opset-9 Scans";
  let description = [{
    Scan-8 (imported as onnx.Generic) scans each batch element on its own:
    states and scan inputs have a leading batch dim, scan inputs their
    sequence dim second, results are stacked over the batch. Without
    sequence_lens it becomes a Loop over the batch (dim 0 of the first scan
    input) with no carried values, whose body takes element b of every input
    (Gather), runs an onnx.Scan with the Scan-8 body and its directions, and
    yields the Scan's results as the Loop's scan outputs (stacked along a
    new leading dim: the batch). A Scan-8 with sequence_lens, or with
    attributes other than num_scan_inputs and directions, is left alone.
  }];
  let statistics = [
    Statistic<"numUpgraded", "num-upgraded", "Number of Scan-8 ops rewritten">
  ];
}

def OnnxExpandSequenceMap : Pass<"onnx-expand-sequence-map", "mlir::func::FuncOp"> {
  let summary = "SequenceMap becomes the Loop of its ONNX function body";
  let description = [{
    SequenceMap applies its body to each element of its input sequence (and
    the elements at the same position of the other sequence inputs; tensor
    inputs are passed whole). It becomes what ONNX's function definition of
    it says: a Loop over SequenceLength of the first input whose body takes
    element i of each sequence input (SequenceAt), runs the SequenceMap body
    on them, and appends each result to a sequence it carries (starting from
    SequenceEmpty of the output's element type). The EPs then run the Loop
    and the sequence ops; nothing but this pass knows SequenceMap. A
    SequenceMap whose output element types are unknown is left alone.
  }];
  let statistics = [
    Statistic<"numExpanded", "num-expanded", "Number of SequenceMap ops expanded">
  ];
}

def OnnxUnifyBranchRanks : Pass<"onnx-unify-branch-ranks", "mlir::func::FuncOp"> {
  let summary = "An If whose branches yield ranks that only broadcasting tells apart yields the higher one from both";
  let description = [{
    For an If result yielded in rank r by one branch and r + k by the other,
    where the higher-rank value's first k dims are static 1s and every user
    of the result is a multidirectional-broadcasting op (BroadcastOps.h)
    whose other operands have at least r + k dims (so its result has their
    rank either way): the lower-rank branch yields its
    value Unsqueezed to r + k (leading 1s), which changes nothing any user
    computes, and the If's result has one rank. ONNX's AffineGrid function
    ("1 / (D - 1) if D == 1 else 0.0": a [1] or a []) is one. Shapes are
    inferred again after a change. Ifs that do not meet every condition are
    left to onnx-specialize-branches, or declined with both ranks named.
  }];
  let statistics = [
    Statistic<"numUnified", "num-unified", "Number of If results whose branch ranks were unified">
  ];
}

def OnnxSpecializeBranches : Pass<"onnx-specialize-branches", "mlir::func::FuncOp"> {
  let summary = "An If whose branches yield different ranks becomes the one branch under which the graph type-checks, with a run-time check of its condition";
  let description = [{
    A plan gives every value one rank. For an If with a condition not known
    at compile time whose branches yield some value in different ranks
    (torch's `x.squeeze(d)` on a dynamic dim: Squeeze if dim d is 1, else
    Identity), each branch is tried on a copy of the function: inlined,
    then shape inference, folding and upgrades to a fixed point, as
    onnx-propagate-shapes runs them. A branch comes through clean when
    inference reports no error (a later op given a rank it cannot take) and
    no If is left whose condition folded but whose branch contradicts its
    declared types. When exactly one branch is clean the If becomes it, and
    `ortc.check_condition` of the condition, expecting that branch, refuses
    at run time an input that would take the other (its message names the
    node and the other branch's error). One If at a time, outermost first,
    with shapes propagated after each; Ifs where both or neither branch is
    clean are left alone (their results stay unranked and EPs decline them).
  }];
  let dependentDialects = ["ortc::fused::OrtcDialect"];
  let options = [
    Option<"maxSpecializations", "max-specializations", "unsigned", /*default=*/"64",
           "Ifs specialized at most">
  ];
  let statistics = [
    Statistic<"numSpecialized", "num-specialized", "Number of Ifs specialized to one branch">
  ];
}

def OnnxShapesFromInputs : Pass<"onnx-shapes-from-inputs", "mlir::func::FuncOp"> {
  let summary = "Shape(v) of dims that are graph-input dims reads the graph inputs' Shapes";
  let description = [{
    A `Shape(v)` (with its start and end) whose every element is a constant
    or, by the symbolic shape analysis, a dim of a graph input becomes
    `Concat` of `Shape(input) {start = k, end = k + 1}` and constants (the
    one piece itself when there is one). The values are the same; the shape
    arithmetic after it then depends on the graph inputs alone, so the
    partitioner can run it on the host before any device partition rather
    than split one around it. A Shape of a graph input, of dims that are
    expressions (a product, a sum) or unknown, or of static dims only
    (those fold) is left alone.
  }];
  let statistics = [
    Statistic<"numRewritten", "num-rewritten", "Number of Shape ops rewritten">
  ];
}

def OnnxFuseMatMulAdd : Pass<"onnx-fuse-matmul-add", "mlir::func::FuncOp"> {
  let summary = "Fold a bias Add into a 2-D MatMul or Gemm";
  let description = [{
    Add(MatMul(A, B), C) becomes Gemm(A, B, C) when A and B are 2-D float
    tensors and C broadcasts one way to the [M, N] result; Add(Gemm(A, B), C)
    with no C and beta 1 takes C. The Add must not broadcast past [M, N] and
    the product must have no other user.
  }];
  let dependentDialects = ["ortc::onnx_dialect::OnnxDialect"];
}

def OnnxFoldConvBatchNorm : Pass<"onnx-fold-conv-bn", "mlir::func::FuncOp"> {
  let summary = "Fold inference BatchNormalization into the Conv before it";
  let description = [{
    When a BatchNormalization in inference mode reads a Conv used only there,
    and the Conv's weights and bias and the normalization's scale, B, mean and
    var are f32 constants, the per-channel affine transform is folded into new
    Conv weights and bias (new resource blobs) and the normalization goes.
  }];
  let dependentDialects = ["ortc::onnx_dialect::OnnxDialect"];
}

def OnnxRecognizeFusedOps : Pass<"onnx-recognize-fused-ops", "mlir::func::FuncOp"> {
  let summary = "Rewrite exported LayerNorm, GELU and attention subgraphs into ortc ops";
  let description = [{
    - (x - mean(x)) / sqrt(mean((x - mean(x))^2) + eps), optionally times a
      constant scale and plus a constant bias, over trailing axes, and
      onnx.LayerNormalization: ortc.layer_norm;
    - 0.5 * x * (1 + erf(x / sqrt 2)) and
      0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 x^3))) in their exported
      orders, and onnx.Gelu: ortc.gelu (approximate "none" or "tanh");
    - MatMul(Softmax(MatMul(q, Transpose(k)) scaled [+ mask]), v) with the
      softmax over the last axis and the transpose swapping the last two
      dims: ortc.attention.
    Only the subgraph's final value is replaced; run onnx-dce after.
  }];
  let dependentDialects = ["ortc::onnx_dialect::OnnxDialect", "ortc::fused::OrtcDialect"];
}

def OnnxUpgradeGenericOps : Pass<"onnx-upgrade-generic-ops", "mlir::func::FuncOp"> {
  let summary = "Turn older generic nodes into typed ops once their ranks are known";
  let description = [{
    Softmax, LogSoftmax and Hardmax before opset 13 (onnx.Generic) over the
    last axis of a ranked input become the typed op with axis = -1. Over
    another axis they normalize the input flattened to 2-D there, which is
    written out as Flatten(axis), the typed op over the last axis and a
    Reshape back to the input's dims (a constant, or the input's Shape when
    a dynamic dim is merged). Unranked inputs stay generic.
    onnx-propagate-shapes runs this between its rounds, as ranks become
    known.
  }];
  let statistics = [
    Statistic<"numUpgraded", "num-upgraded", "Number of generic ops made typed">
  ];
}

def OnnxUnrollControlFlow : Pass<"onnx-unroll-control-flow", "mlir::func::FuncOp"> {
  let summary = "Unroll Scan and Loop whose iteration count is known at compile time; If over constants becomes Where";
  let description = [{
    EPs cannot run subgraphs; a statically bounded Scan or Loop becomes
    straight-line code, one copy of the body per iteration, with the
    carried values threaded from copy to copy:
    - Scan (opset 9+) whose scan inputs have the same static length along
      their scan_input_axes: each copy reads Gather(x, t, axis) (t counted
      from the end for scan_input_directions 1); each scan output is the
      copies' values Unsqueezed at its scan_output_axes and Concatenated
      there (in reverse order for scan_output_directions 1);
    - Scan-8 (onnx.Generic) without sequence_lens whose inputs have a static
      batch and sequence length: the same per batch entry (Gather along
      dim 0), the per-batch results stacked along dim 0;
    - Loop whose trip count M is a constant, whose incoming condition is
      absent or a constant true, and whose body condition output is a
      constant true or the incoming condition (through Identity): copy i
      gets iteration number i; scan outputs stack along a new dim 0.
    Only when the count is 1 to `max-iterations` and the copies hold at most
    `max-ops` ops; everything else is left for the EPs to decline.
    If with a constant condition is inlined by onnx-fold-constants; an If
    with a one-element condition whose branches compute nothing (only
    onnx.Constant and Identity) and yield the same static types becomes
    Where(cond, then, else) over copies of both branches. The copies' ops
    are named "<node>[<iteration>]/<body node>"; their types are refined by
    shape inference run after this pass. When a sweep unrolled something and
    control flow is left (say a Scan inside an unrolled Loop body, whose
    copies' inputs only now have known shapes), the pass infers shapes and
    folds constants and sweeps again, up to `max-rounds` sweeps.
  }];
  let options = [
    Option<"maxIterations", "max-iterations", "int64_t", /*default=*/"64",
           "Most iterations (Scan-8: batch times sequence length) to unroll">,
    Option<"maxOps", "max-ops", "int64_t", /*default=*/"4096",
           "Most ops the unrolled copies of one body may hold">,
    Option<"maxRounds", "max-rounds", "unsigned", /*default=*/"8",
           "Most sweeps; between sweeps that unrolled something while control flow is left, shapes are inferred and constants folded">,
    Option<"strictShapes", "strict-shapes", "bool", /*default=*/"false",
           "In the inference between sweeps, a declared shape that contradicts inference is an error">,
  ];
  let statistics = [
    Statistic<"numUnrolled", "num-unrolled", "Number of Scan, Loop and If ops replaced">
  ];
}

def OrtcAnnotateSymbolicShapes : Pass<"ortc-annotate-symbolic-shapes", "mlir::func::FuncOp"> {
  let summary = "Attach the symbolic shape analysis' dims to every op (for tests)";
  let description = [{
    Runs the SymbolicShapes analysis (SymbolicShapes.h) and sets
    `ortc.dims` on each op with a ranked tensor result: one string per
    result, "[batch, 3, (height + -1) floordiv 2 + 1]", with "?" for a dim no
    rule reaches, and `ortc.elements` likewise on shape values whose
    elements are all known. The lit tests of the shape rules read these; the
    compiler's pipeline never runs it.
  }];
}

#endif // ORTC_COMPILER_TRANSFORMS_PASSES
