// Negative cases: the verifiers reject malformed onnx ops.
// RUN: ortc-opt %s -split-input-file -verify-diagnostics

func.func @generic_region_names_mismatch(%x: tensor<f32>) {
  // expected-error @+1 {{'onnx.Generic' op has 1 regions but 0 region_names}}
  "onnx.Generic"(%x) <{domain = "", onnx_attrs = {}, op_type = "X", since_version = 1 : i64}> ({
    "onnx.Yield"() : () -> ()
  }) : (tensor<f32>) -> ()
  return
}

// -----

func.func @generic_empty_op_type() {
  // expected-error @+1 {{'onnx.Generic' op needs a non-empty op_type}}
  "onnx.Generic"() <{domain = "", onnx_attrs = {}, op_type = "", since_version = 1 : i64}> : () -> ()
  return
}

// -----

func.func @typed_missing_required_attribute(%x: tensor<2xf32>) {
  // expected-error @+1 {{'onnx.Concat' op requires attribute 'axis'}}
  %0 = "onnx.Concat"(%x, %x) : (tensor<2xf32>, tensor<2xf32>) -> tensor<4xf32>
  return
}

// -----

func.func @typed_wrong_operand_count(%x: tensor<2xf32>) {
  // expected-error @+1 {{'onnx.Add' op expected 2 operands, but found 1}}
  %0 = "onnx.Add"(%x) : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @typed_wrong_attribute_kind(%x: tensor<2xf32>) {
  // expected-error @+1 {{'onnx.LeakyRelu' op attribute 'alpha' failed to satisfy constraint: 32-bit float attribute}}
  %0 = "onnx.LeakyRelu"(%x) {alpha = 1 : i64} : (tensor<2xf32>) -> tensor<2xf32>
  return
}

// -----

func.func @novalue_must_be_none() {
  // expected-error @+1 {{'onnx.NoValue' op result #0 must be none type}}
  %0 = "onnx.NoValue"() : () -> tensor<f32>
  return
}

// -----

func.func @region_needs_terminator(%c: tensor<i1>, %x: tensor<f32>) {
  %0 = "onnx.If"(%c) ({
    // expected-error @+1 {{block with no terminator}}
    %1 = "onnx.Neg"(%x) : (tensor<f32>) -> tensor<f32>
  }, {
    "onnx.Yield"(%x) : (tensor<f32>) -> ()
  }) : (tensor<i1>) -> tensor<f32>
  return
}

// -----

func.func @fused_conv_unknown_activation(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.fused_conv' op unknown activation 'swish'}}
  %y = ortc.fused_conv %x, %w, %none, %none {activation = "swish", activation_params = array<f32>} : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none, none -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

func.func @fused_conv_clip_params(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.fused_conv' op activation 'clip' takes 2 activation_params, got 1}}
  %y = ortc.fused_conv %x, %w, %none, %none {activation = "clip", activation_params = array<f32: 6.0>} : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none, none -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

func.func @fused_conv_channels_last_rank(%x: tensor<1x2x4xf32>, %w: tensor<2x2x1xf32>) -> tensor<1x2x4xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.fused_conv' op channels_last needs x [N, H, W, C] and w [M, C/group, KH, KW]}}
  %y = ortc.fused_conv %x, %w, %none, %none {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x2x4xf32>, tensor<2x2x1xf32>, none, none -> tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}

// -----

func.func @fused_conv_residual_shape(%x: tensor<1x2x4x4xf32>, %w: tensor<2x2x1x1xf32>, %r: tensor<1x2x1x1xf32>) -> tensor<1x2x4x4xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.fused_conv' op residual 'tensor<1x2x1x1xf32>' differs from the output 'tensor<1x2x4x4xf32>'}}
  %y = ortc.fused_conv %x, %w, %none, %r {activation = "none", activation_params = array<f32>} : tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none, tensor<1x2x1x1xf32> -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

func.func @max_pool_rank(%x: tensor<1x4x4xf32>) -> tensor<1x2x4xf32> {
  // expected-error@+1 {{'ortc.max_pool' op needs x and y [N, H, W, C], got 'tensor<1x4x4xf32>'}}
  %y = ortc.max_pool %x {kernel_shape = array<i64: 2, 2>} : tensor<1x4x4xf32> -> tensor<1x2x4xf32>
  return %y : tensor<1x2x4xf32>
}

// -----

func.func @max_pool_kernel(%x: tensor<1x4x4x2xf32>) -> tensor<1x3x4x2xf32> {
  // expected-error@+1 {{'ortc.max_pool' op needs a 2-D kernel_shape, got 1 dims}}
  %y = ortc.max_pool %x {kernel_shape = array<i64: 2>} : tensor<1x4x4x2xf32> -> tensor<1x3x4x2xf32>
  return %y : tensor<1x3x4x2xf32>
}

// -----

func.func @depthwise_block_group(%x: tensor<1x4x4x2xf32>, %w1: tensor<6x2x1x1xf32>, %w2: tensor<6x1x3x3xf32>) -> tensor<1x2x2x6xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.depthwise_block' op the weights do not fit x 'tensor<1x4x4x2xf32>' (expand_w [E, C, 1, 1], depthwise_w [E, 1, KH, KW] with group E, project_w [P, E, 1, 1])}}
  %y = ortc.depthwise_block %x, %w1, %none, %w2, %none, %none, %none, %none {channels_last, group = 3 : i64} : tensor<1x4x4x2xf32>, tensor<6x2x1x1xf32>, none, tensor<6x1x3x3xf32>, none, none, none, none -> tensor<1x2x2x6xf32>
  return %y : tensor<1x2x2x6xf32>
}

// -----

func.func @depthwise_block_channels(%x: tensor<1x4x4x3xf32>, %w2: tensor<6x1x3x3xf32>) -> tensor<1x2x2x6xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.depthwise_block' op the weights do not fit x 'tensor<1x4x4x3xf32>'}}
  %y = ortc.depthwise_block %x, %none, %none, %w2, %none, %none, %none, %none {channels_last, group = 6 : i64} : tensor<1x4x4x3xf32>, none, none, tensor<6x1x3x3xf32>, none, none, none, none -> tensor<1x2x2x6xf32>
  return %y : tensor<1x2x2x6xf32>
}

// -----

func.func @depthwise_block_rank(%x: tensor<4x4x2xf32>, %w1: tensor<6x2x1x1xf32>, %w2: tensor<6x1x3x3xf32>) -> tensor<2x2x6xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.depthwise_block' op needs x [N, H, W, C] and static 4-D weights}}
  %y = ortc.depthwise_block %x, %w1, %none, %w2, %none, %none, %none, %none {channels_last, group = 6 : i64} : tensor<4x4x2xf32>, tensor<6x2x1x1xf32>, none, tensor<6x1x3x3xf32>, none, none, none, none -> tensor<2x2x6xf32>
  return %y : tensor<2x2x6xf32>
}

// -----

func.func @depthwise_block_activation(%x: tensor<1x4x4x2xf32>, %w1: tensor<6x2x1x1xf32>, %w2: tensor<6x1x3x3xf32>) -> tensor<1x2x2x6xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.depthwise_block' op expand_activation 'clip' takes 2 expand_activation_params, got 1}}
  %y = ortc.depthwise_block %x, %w1, %none, %w2, %none, %none, %none, %none {channels_last, expand_activation = "clip", expand_activation_params = array<f32: 6.0>, group = 6 : i64} : tensor<1x4x4x2xf32>, tensor<6x2x1x1xf32>, none, tensor<6x1x3x3xf32>, none, none, none, none -> tensor<1x2x2x6xf32>
  return %y : tensor<1x2x2x6xf32>
}

// -----

func.func @depthwise_block_residual(%x: tensor<1x4x4x2xf32>, %w1: tensor<6x2x1x1xf32>, %w2: tensor<6x1x3x3xf32>, %r: tensor<1x2x2x6xf32>) -> tensor<1x2x2x6xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.depthwise_block' op a residual needs project_w}}
  %y = ortc.depthwise_block %x, %w1, %none, %w2, %none, %none, %none, %r {channels_last, group = 6 : i64} : tensor<1x4x4x2xf32>, tensor<6x2x1x1xf32>, none, tensor<6x1x3x3xf32>, none, none, none, tensor<1x2x2x6xf32> -> tensor<1x2x2x6xf32>
  return %y : tensor<1x2x2x6xf32>
}

// -----

func.func @depthwise_block_channels_first_residual(%x: tensor<1x2x4x4xf32>, %w1: tensor<6x2x1x1xf32>, %w2: tensor<6x1x3x3xf32>, %r: tensor<1x6x2x2xf32>) -> tensor<1x6x2x2xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.depthwise_block' op a residual needs project_w}}
  %y = ortc.depthwise_block %x, %w1, %none, %w2, %none, %none, %none, %r {group = 6 : i64, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>} : tensor<1x2x4x4xf32>, tensor<6x2x1x1xf32>, none, tensor<6x1x3x3xf32>, none, none, none, tensor<1x6x2x2xf32> -> tensor<1x6x2x2xf32>
  return %y : tensor<1x6x2x2xf32>
}

// -----

func.func @depthwise_block_channels_first_rank(%x: tensor<2x4x4xf32>, %w1: tensor<6x2x1x1xf32>, %w2: tensor<6x1x3x3xf32>) -> tensor<6x2x2xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.depthwise_block' op needs x [N, C, H, W] and static 4-D weights}}
  %y = ortc.depthwise_block %x, %w1, %none, %w2, %none, %none, %none, %none {group = 6 : i64} : tensor<2x4x4xf32>, tensor<6x2x1x1xf32>, none, tensor<6x1x3x3xf32>, none, none, none, none -> tensor<6x2x2xf32>
  return %y : tensor<6x2x2xf32>
}

// -----

func.func @depthwise_block_channels_first_channels(%x: tensor<1x3x4x4xf32>, %w1: tensor<6x2x1x1xf32>, %w2: tensor<6x1x3x3xf32>) -> tensor<1x6x2x2xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error@+1 {{'ortc.depthwise_block' op the weights do not fit x 'tensor<1x3x4x4xf32>'}}
  %y = ortc.depthwise_block %x, %w1, %none, %w2, %none, %none, %none, %none {group = 6 : i64} : tensor<1x3x4x4xf32>, tensor<6x2x1x1xf32>, none, tensor<6x1x3x3xf32>, none, none, none, none -> tensor<1x6x2x2xf32>
  return %y : tensor<1x6x2x2xf32>
}
