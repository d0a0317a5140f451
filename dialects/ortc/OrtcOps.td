//===- OrtcOps.td - the ortc dialect: fused ops and partitions -*- tablegen -*-===//
//
// Ops that ONNX spells as subgraphs but kernels want whole. The generic
// recognition pass (onnx-recognize-fused-ops) rewrites the exported patterns,
// and the ONNX ops that already mean the same (LayerNormalization-17,
// Gelu-20), into these, so that each EP claims one form.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_ORTC_OPS
#define ORTC_ORTC_OPS

include "mlir/IR/OpBase.td"
include "mlir/Interfaces/SideEffectInterfaces.td"

def Ortc_Dialect : Dialect {
  let name = "ortc";
  let cppNamespace = "::ortc::fused";
  let summary = "ortc's own ops: fused patterns that EPs claim whole";
}

class Ortc_Op<string mnemonic, list<Trait> traits = []>
    : Op<Ortc_Dialect, mnemonic, traits>;

def Ortc_LayerNormOp : Ortc_Op<"layer_norm", [Pure, AttrSizedOperandSegments]> {
  let summary = "normalize over the trailing dims from `axis`, then scale and shift";
  let description = [{
    y = (x - mean) / sqrt(var + epsilon) * scale + bias, with mean and var
    over dims [axis, rank). Same meaning as ONNX LayerNormalization-17.
  }];
  let arguments = (ins AnyTensor:$input, Optional<AnyTensor>:$scale,
                       Optional<AnyTensor>:$bias, I64Attr:$axis, F32Attr:$epsilon);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $input (`scale` $scale^ `:` type($scale))? (`bias` $bias^ `:` type($bias))? attr-dict
    `:` type($input) `->` type($output)
  }];
}

def Ortc_GeluOp : Ortc_Op<"gelu", [Pure]> {
  let summary = "Gaussian error linear unit";
  let description = [{
    approximate = "none": 0.5 x (1 + erf(x / sqrt 2));
    approximate = "tanh": 0.5 x (1 + tanh(sqrt(2 / pi) (x + 0.044715 x^3))).
  }];
  let arguments = (ins AnyTensor:$input, StrAttr:$approximate);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = "$input attr-dict `:` type($input) `->` type($output)";
}

def Ortc_AttentionOp : Ortc_Op<"attention", [Pure]> {
  let summary = "scaled dot-product attention: softmax(q k^T scale + mask) v";
  let description = [{
    q: [..., Sq, D], k: [..., Sk, D], v: [..., Sk, Dv]; the optional additive
    mask broadcasts to [..., Sq, Sk]; softmax runs over the last axis. With
    nan_to_zero, probabilities that are NaN (all of a row whose scores are
    all -inf, a fully masked query) are 0, as torch's SDPA export writes
    Where(IsNaN(p), 0, p) after the softmax. With sequence_first (rank 4),
    q, k, v and the output are [B, S, H, D] as the projections write them,
    and mean their [B, H, S, D] transposes (the mask keeps the scores'
    [B, H, Sq, Sk]): the Transposes around attention are not run.
  }];
  let arguments = (ins AnyTensor:$query, AnyTensor:$key, AnyTensor:$value,
                       Optional<AnyTensor>:$mask, F32Attr:$scale,
                       UnitAttr:$nan_to_zero, UnitAttr:$sequence_first);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $query `,` $key `,` $value (`mask` $mask^ `:` type($mask))? attr-dict
    `:` type($query) `,` type($key) `,` type($value) `->` type($output)
  }];
}

def Ortc_MatMulBiasOp : Ortc_Op<"matmul_bias", [Pure]> {
  let summary = "a matrix product, a bias over its last dim and an activation: one GEMM epilogue";
  let description = [{
    y = activation(alpha * MatMul(a, op(b)) + bias [+ residual]), with b a
    matrix ([K, N], or [N, K] when trans_b), bias [N] and the optional
    residual of y's shape (a transformer's skip connection, which the CPU
    EP folds in where the activation is "none"); activation is "none",
    "relu", "gelu" (ortc.gelu's erf form) or "gelu_tanh" (its tanh form).
    What cuBLASLt computes in one call with its BIAS, RELU_BIAS and
    GELU_BIAS epilogues (the CUDA EP's cuda-fold-gemm-epilogue makes it
    inside its partitions, never with "gelu"), and what the CPU EP's
    library MatMul applies to each GEMM tile (cpu-fuse-matmul-epilogue,
    b as it is, alpha 1).
  }];
  let arguments = (ins AnyTensor:$a, AnyTensor:$b, AnyTensor:$bias,
                       Optional<AnyTensor>:$residual, BoolAttr:$trans_b,
                       F32Attr:$alpha, StrAttr:$activation);
  let results = (outs AnyTensor:$output);
  let assemblyFormat = [{
    $a `,` $b `,` $bias (`residual` $residual^ `:` type($residual))? attr-dict `:` type($a) `,`
    type($b) `,` type($bias) `->` type($output)
  }];
  // One builder for every EP that makes the op: the epilogue's fields have
  // defaults, so a field added for one EP cannot leave another's call
  // building it with arguments in the wrong places.
  let skipDefaultBuilders = 1;
  let builders = [
    OpBuilder<(ins "::mlir::Type":$output, "::mlir::Value":$a, "::mlir::Value":$b,
                   "::mlir::Value":$bias, "const MatMulBiasEpilogue &":$epilogue)>
  ];
  let extraClassDeclaration = [{
    /// The epilogue this op applies: build a copy with a field changed.
    MatMulBiasEpilogue getEpilogue();
  }];
  let hasVerifier = 1;
}

def Ortc_FusedConvOp : Ortc_Op<"fused_conv", [Pure]> {
  let summary = "a convolution, a residual sum and an activation: one kernel with an epilogue";
  let description = [{
    y = activation(Conv(x, w, bias) + residual), ONNX Runtime's
    com.microsoft FusedConv with its Z as `residual`. bias and residual are
    `none` (onnx.NoValue) when absent; a residual has y's shape. The window
    attributes mean what they mean on onnx.Conv. activation is "none",
    "relu", "clip" (activation_params [min, max]) or "leaky_relu"
    ([alpha]). The CPU EP's cpu-fuse-conv-epilogue makes it inside its
    partitions, so that the sum and the activation happen while the
    convolution's output is in cache. With `channels_last` (2-D only, made
    by cpu-conv-channels-last), x is [N, H, W, C] and y and the residual
    [N, OH, OW, M]; w keeps ONNX's [M, C/group, KH, KW].
  }];
  let arguments = (ins AnyTensor:$x, AnyTensor:$w, AnyType:$bias, AnyType:$residual,
                       DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       DefaultValuedAttr<I64Attr, "1">:$group,
                       OptionalAttr<DenseI64ArrayAttr>:$kernel_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       StrAttr:$activation,
                       DenseF32ArrayAttr:$activation_params,
                       UnitAttr:$channels_last);
  let results = (outs AnyTensor:$y);
  let assemblyFormat = [{
    $x `,` $w `,` $bias `,` $residual attr-dict `:` type($x) `,` type($w) `,` type($bias) `,`
    type($residual) `->` type($y)
  }];
  let hasVerifier = 1;
}

def Ortc_DepthwiseBlockOp : Ortc_Op<"depthwise_block", [Pure]> {
  let summary = "a depthwise conv and the pointwise convs around it: one kernel";
  let description = [{
    y = project(depthwise(expand(x))) [+ residual] with x [N, H, W, C] and
    y [N, OH, OW, P] when `channels_last`, else (channels first) x
    [N, C, H, W] and y [N, P, OH, OW]. Each step is an ortc.fused_conv of
    its own in meaning:
    expand is the 1x1 stride-1 conv with expand_w [E, C, 1, 1],
    expand_bias and expand_activation (+ _params); depthwise the conv with
    depthwise_w [E, 1, KH, KW], group E, the window attributes (which mean
    what they mean on onnx.Conv), depthwise_bias and activation (+
    _params); project the 1x1 conv with project_w [P, E, 1, 1],
    project_bias, the residual of y's type, then project_activation (+
    _params). expand_w and project_w may be `none` (no such step: E = C,
    or P = E), and so may the biases and the residual (a residual needs
    project_w). MobileNet's inverted residual block is all three, a
    depthwise separable conv the last two. The CPU EP's
    cpu-fuse-depthwise-block makes it of fused_convs, so that the widest
    tensors of the block (the expansion, 6x its channels) stay in cache
    between the steps instead of going to memory and back.
  }];
  let arguments = (ins AnyTensor:$x, AnyType:$expand_w, AnyType:$expand_bias,
                       AnyTensor:$depthwise_w, AnyType:$depthwise_bias,
                       AnyType:$project_w, AnyType:$project_bias, AnyType:$residual,
                       DefaultValuedStrAttr<StrAttr, "none">:$expand_activation,
                       DefaultValuedAttr<DenseF32ArrayAttr, "{}">:$expand_activation_params,
                       DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       I64Attr:$group,
                       OptionalAttr<DenseI64ArrayAttr>:$kernel_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$strides,
                       DefaultValuedStrAttr<StrAttr, "none">:$activation,
                       DefaultValuedAttr<DenseF32ArrayAttr, "{}">:$activation_params,
                       DefaultValuedStrAttr<StrAttr, "none">:$project_activation,
                       DefaultValuedAttr<DenseF32ArrayAttr, "{}">:$project_activation_params,
                       UnitAttr:$channels_last);
  let results = (outs AnyTensor:$y);
  let assemblyFormat = [{
    $x `,` $expand_w `,` $expand_bias `,` $depthwise_w `,` $depthwise_bias `,` $project_w `,`
    $project_bias `,` $residual attr-dict `:` type($x) `,` type($expand_w) `,`
    type($expand_bias) `,` type($depthwise_w) `,` type($depthwise_bias) `,` type($project_w) `,`
    type($project_bias) `,` type($residual) `->` type($y)
  }];
  let hasVerifier = 1;
}

def Ortc_MaxPoolOp : Ortc_Op<"max_pool", [Pure]> {
  let summary = "2-D max pooling on a channels-last tensor";
  let description = [{
    onnx.MaxPool with no Indices output, its window attributes meaning what
    they mean there, over x [N, H, W, C] giving y [N, OH, OW, C]: the
    channels-last form cpu-conv-channels-last makes of a MaxPool inside a
    chain of convs (ResNet's stem), so that the chain keeps its layout.
  }];
  let arguments = (ins AnyTensor:$x,
                       DefaultValuedStrAttr<StrAttr, "NOTSET">:$auto_pad,
                       DefaultValuedAttr<I64Attr, "0">:$ceil_mode,
                       OptionalAttr<DenseI64ArrayAttr>:$dilations,
                       DenseI64ArrayAttr:$kernel_shape,
                       OptionalAttr<DenseI64ArrayAttr>:$pads,
                       OptionalAttr<DenseI64ArrayAttr>:$strides);
  let results = (outs AnyTensor:$y);
  let assemblyFormat = "$x attr-dict `:` type($x) `->` type($y)";
  let hasVerifier = 1;
}

def Ortc_CheckConditionOp : Ortc_Op<"check_condition", [MemoryEffects<[MemWrite]>]> {
  let summary = "refuse the run when a condition is not the value the compile assumed";
  let description = [{
    An If whose branches give different ranks cannot be compiled for both;
    onnx-specialize-branches compiles the branch under which the rest of
    the graph type-checks and leaves this check of its condition: a run
    whose `condition` (one element) differs from `expected` fails with
    `message`. It writes nothing the graph reads, so it is never removed.
  }];
  let arguments = (ins AnyTensor:$condition, BoolAttr:$expected, StrAttr:$message);
  let assemblyFormat = [{ $condition attr-dict `:` type($condition) }];
}

#endif // ORTC_ORTC_OPS
