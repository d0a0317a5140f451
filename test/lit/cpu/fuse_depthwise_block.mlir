// RUN: ortc-opt %s -split-input-file -cpu-fuse-depthwise-block | FileCheck %s

// MobileNetV2's inverted residual block: an expansion (bias, clip) read only
// by a depthwise conv (bias, clip) read only by a projection that adds the
// block's input: one op with every conv's weights, bias and activation, the
// depthwise window and the residual.
// CHECK-LABEL: func.func @inverted_residual
// CHECK-SAME: (%[[X:.*]]: tensor<?x8x8x4xf32>)
// CHECK-DAG: %[[W1:.*]] = "onnx.Constant"() <{value = dense<5.000000e-01> : tensor<12x4x1x1xf32>}>
// CHECK-DAG: %[[B1:.*]] = "onnx.Constant"() <{value = dense<1.000000e-01> : tensor<12xf32>}>
// CHECK-DAG: %[[W2:.*]] = "onnx.Constant"() <{value = dense<2.500000e-01> : tensor<12x1x3x3xf32>}>
// CHECK-DAG: %[[B2:.*]] = "onnx.Constant"() <{value = dense<2.000000e-01> : tensor<12xf32>}>
// CHECK-DAG: %[[W3:.*]] = "onnx.Constant"() <{value = dense<1.250000e-01> : tensor<4x12x1x1xf32>}>
// CHECK-DAG: %[[B3:.*]] = "onnx.Constant"() <{value = dense<3.000000e-01> : tensor<4xf32>}>
// CHECK: %[[Y:.*]] = ortc.depthwise_block %[[X]], %[[W1]], %[[B1]], %[[W2]], %[[B2]], %[[W3]], %[[B3]], %[[X]]
// CHECK-SAME: activation = "clip", activation_params = array<f32: 0.000000e+00, 6.000000e+00>, channels_last,
// CHECK-SAME: expand_activation = "clip", expand_activation_params = array<f32: 0.000000e+00, 6.000000e+00>
// CHECK-SAME: group = 12 : i64, pads = array<i64: 1, 1, 1, 1>
// CHECK-SAME: : tensor<?x8x8x4xf32>, tensor<12x4x1x1xf32>, tensor<12xf32>, tensor<12x1x3x3xf32>, tensor<12xf32>, tensor<4x12x1x1xf32>, tensor<4xf32>, tensor<?x8x8x4xf32> -> tensor<?x8x8x4xf32>
// CHECK-NOT: ortc.fused_conv
// CHECK: return %[[Y]]
func.func @inverted_residual(%x: tensor<?x8x8x4xf32>) -> tensor<?x8x8x4xf32> {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<12x4x1x1xf32>} : () -> tensor<12x4x1x1xf32>
  %b1 = "onnx.Constant"() {value = dense<0.1> : tensor<12xf32>} : () -> tensor<12xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<12x1x3x3xf32>} : () -> tensor<12x1x3x3xf32>
  %b2 = "onnx.Constant"() {value = dense<0.2> : tensor<12xf32>} : () -> tensor<12xf32>
  %w3 = "onnx.Constant"() {value = dense<0.125> : tensor<4x12x1x1xf32>} : () -> tensor<4x12x1x1xf32>
  %b3 = "onnx.Constant"() {value = dense<0.3> : tensor<4xf32>} : () -> tensor<4xf32>
  %none = "onnx.NoValue"() : () -> none
  %e = ortc.fused_conv %x, %w1, %b1, %none {activation = "clip", activation_params = array<f32: 0.0, 6.0>, channels_last} : tensor<?x8x8x4xf32>, tensor<12x4x1x1xf32>, tensor<12xf32>, none -> tensor<?x8x8x12xf32>
  %d = ortc.fused_conv %e, %w2, %b2, %none {activation = "clip", activation_params = array<f32: 0.0, 6.0>, channels_last, group = 12 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<?x8x8x12xf32>, tensor<12x1x3x3xf32>, tensor<12xf32>, none -> tensor<?x8x8x12xf32>
  %p = ortc.fused_conv %d, %w3, %b3, %x {activation = "none", activation_params = array<f32>, channels_last} : tensor<?x8x8x12xf32>, tensor<4x12x1x1xf32>, tensor<4xf32>, tensor<?x8x8x4xf32> -> tensor<?x8x8x4xf32>
  return %p : tensor<?x8x8x4xf32>
}

// -----

// A strided expansion block whose depthwise output something else reads
// too: the expansion and the depthwise conv only, without biases; their
// absent operands stay none.
// CHECK-LABEL: func.func @expansion_only
// CHECK: %[[N:.*]] = "onnx.NoValue"
// CHECK: %[[D:.*]] = ortc.depthwise_block %{{.*}}, %{{.*}}, %[[N]], %{{.*}}, %[[N]], %{{.*}}, %{{.*}}, %{{.*}} {channels_last, expand_activation = "relu", group = 6 : i64, strides = array<i64: 2, 2>}
// CHECK-SAME: tensor<1x6x6x3xf32>, tensor<6x3x1x1xf32>, none, tensor<6x1x3x3xf32>, none, none, none, none -> tensor<1x2x2x6xf32>
// CHECK: %[[P:.*]] = ortc.fused_conv %[[D]]
// CHECK: return %[[D]], %[[P]]
func.func @expansion_only(%x: tensor<1x6x6x3xf32>) -> (tensor<1x2x2x6xf32>, tensor<1x2x2x3xf32>) {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<6x3x1x1xf32>} : () -> tensor<6x3x1x1xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<6x1x3x3xf32>} : () -> tensor<6x1x3x3xf32>
  %w3 = "onnx.Constant"() {value = dense<0.125> : tensor<3x6x1x1xf32>} : () -> tensor<3x6x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %e = ortc.fused_conv %x, %w1, %none, %none {activation = "relu", activation_params = array<f32>, channels_last} : tensor<1x6x6x3xf32>, tensor<6x3x1x1xf32>, none, none -> tensor<1x6x6x6xf32>
  %d = ortc.fused_conv %e, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 6 : i64, strides = array<i64: 2, 2>} : tensor<1x6x6x6xf32>, tensor<6x1x3x3xf32>, none, none -> tensor<1x2x2x6xf32>
  %p = ortc.fused_conv %d, %w3, %none, %none {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x2x2x6xf32>, tensor<3x6x1x1xf32>, none, none -> tensor<1x2x2x3xf32>
  return %d, %p : tensor<1x2x2x6xf32>, tensor<1x2x2x3xf32>
}

// -----

// A depthwise separable conv (MobileNetV2's first block: the depthwise conv
// reads the stem, not an expansion) and a chain of two: the pointwise conv
// between the depthwise convs is the first one's projection, and the second
// depthwise conv takes the next projection.
// CHECK-LABEL: func.func @separable_chain
// CHECK: %[[A:.*]] = ortc.depthwise_block %{{.*}} {channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>, project_activation = "relu"}
// CHECK-SAME: tensor<1x6x6x8xf32>, none, none, tensor<8x1x3x3xf32>, none, tensor<8x8x1x1xf32>, none, none -> tensor<1x6x6x8xf32>
// CHECK: %[[B:.*]] = ortc.depthwise_block %[[A]], {{.*}} {channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>}
// CHECK-SAME: tensor<1x6x6x8xf32>, none, none, tensor<8x1x3x3xf32>, none, tensor<4x8x1x1xf32>, none, none -> tensor<1x6x6x4xf32>
// CHECK-NOT: ortc.fused_conv
// CHECK: return %[[B]]
func.func @separable_chain(%x: tensor<1x6x6x8xf32>) -> tensor<1x6x6x4xf32> {
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<8x1x3x3xf32>} : () -> tensor<8x1x3x3xf32>
  %w3 = "onnx.Constant"() {value = dense<0.125> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %w4 = "onnx.Constant"() {value = dense<0.125> : tensor<4x8x1x1xf32>} : () -> tensor<4x8x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %d = ortc.fused_conv %x, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x6x6x8xf32>
  %p = ortc.fused_conv %d, %w3, %none, %none {activation = "relu", activation_params = array<f32>, channels_last} : tensor<1x6x6x8xf32>, tensor<8x8x1x1xf32>, none, none -> tensor<1x6x6x8xf32>
  %d2 = ortc.fused_conv %p, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x6x6x8xf32>
  %p2 = ortc.fused_conv %d2, %w4, %none, %none {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x6x6x8xf32>, tensor<4x8x1x1xf32>, none, none -> tensor<1x6x6x4xf32>
  return %p2 : tensor<1x6x6x4xf32>
}

// -----

// Left alone: the expansion has two depthwise readers (each depthwise conv
// still takes its projection-less self: nothing to fuse); a strided
// pointwise conv; a padded one; an expansion with a residual; a depthwise
// conv with a residual; a dense conv after the pointwise one; channels
// first with an expansion of less than 1 MiB an image (8 x 6 x 6).
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: ortc.depthwise_block
// CHECK-COUNT-15: ortc.fused_conv
// CHECK-NOT: ortc.depthwise_block
func.func @left_alone(%x: tensor<1x6x6x4xf32>, %r: tensor<1x6x6x8xf32>) -> (tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>, tensor<1x3x3x8xf32>, tensor<1x8x8x8xf32>, tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>, tensor<1x8x6x6xf32>) {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<8x4x1x1xf32>} : () -> tensor<8x4x1x1xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<8x1x3x3xf32>} : () -> tensor<8x1x3x3xf32>
  %w3 = "onnx.Constant"() {value = dense<0.25> : tensor<8x8x3x3xf32>} : () -> tensor<8x8x3x3xf32>
  %none = "onnx.NoValue"() : () -> none
  // Two depthwise readers.
  %a = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x6x6x4xf32>, tensor<8x4x1x1xf32>, none, none -> tensor<1x6x6x8xf32>
  %a1 = ortc.fused_conv %a, %w2, %none, %none {activation = "relu", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x6x6x8xf32>
  %a2 = ortc.fused_conv %a, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x6x6x8xf32>
  // A strided pointwise conv.
  %b = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>, channels_last, strides = array<i64: 2, 2>} : tensor<1x6x6x4xf32>, tensor<8x4x1x1xf32>, none, none -> tensor<1x3x3x8xf32>
  %b2 = ortc.fused_conv %b, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x3x3x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x3x3x8xf32>
  // A padded pointwise conv.
  %c = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>, channels_last, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x4xf32>, tensor<8x4x1x1xf32>, none, none -> tensor<1x8x8x8xf32>
  %c2 = ortc.fused_conv %c, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x8x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x8x8x8xf32>
  // An expansion with a residual.
  %d = ortc.fused_conv %x, %w1, %none, %r {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x6x6x4xf32>, tensor<8x4x1x1xf32>, none, tensor<1x6x6x8xf32> -> tensor<1x6x6x8xf32>
  %d2 = ortc.fused_conv %d, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x6x6x8xf32>
  // A depthwise conv with a residual.
  %e = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x6x6x4xf32>, tensor<8x4x1x1xf32>, none, none -> tensor<1x6x6x8xf32>
  %e2 = ortc.fused_conv %e, %w2, %none, %r {activation = "none", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x8xf32>, tensor<8x1x3x3xf32>, none, tensor<1x6x6x8xf32> -> tensor<1x6x6x8xf32>
  // A dense 3x3 after the pointwise conv.
  %f = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x6x6x4xf32>, tensor<8x4x1x1xf32>, none, none -> tensor<1x6x6x8xf32>
  %f2 = ortc.fused_conv %f, %w3, %none, %none {activation = "none", activation_params = array<f32>, channels_last, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x8xf32>, tensor<8x8x3x3xf32>, none, none -> tensor<1x6x6x8xf32>
  // Channels first.
  %xt = "onnx.Transpose"(%x) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x6x6x4xf32>) -> tensor<1x4x6x6xf32>
  %g = ortc.fused_conv %xt, %w1, %none, %none {activation = "none", activation_params = array<f32>} : tensor<1x4x6x6xf32>, tensor<8x4x1x1xf32>, none, none -> tensor<1x8x6x6xf32>
  %g2 = ortc.fused_conv %g, %w2, %none, %none {activation = "none", activation_params = array<f32>, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x8x6x6xf32>
  return %a1, %a2, %b2, %c2, %d2, %e2, %f2, %g2 : tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>, tensor<1x3x3x8xf32>, tensor<1x8x8x8xf32>, tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>, tensor<1x8x6x6xf32>
}

// -----

// The op prints and parses back unchanged.
// CHECK-LABEL: func.func @round_trip
// CHECK: ortc.depthwise_block %{{.*}} {channels_last, dilations = array<i64: 2, 2>, expand_activation = "leaky_relu", expand_activation_params = array<f32: 1.000000e-01>, group = 6 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 2, 2, 2, 2>, project_activation = "relu"} : tensor<1x6x6x3xf32>, tensor<6x3x1x1xf32>, none, tensor<6x1x3x3xf32>, none, tensor<3x6x1x1xf32>, none, tensor<1x6x6x3xf32> -> tensor<1x6x6x3xf32>
func.func @round_trip(%x: tensor<1x6x6x3xf32>) -> tensor<1x6x6x3xf32> {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<6x3x1x1xf32>} : () -> tensor<6x3x1x1xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<6x1x3x3xf32>} : () -> tensor<6x1x3x3xf32>
  %w3 = "onnx.Constant"() {value = dense<0.125> : tensor<3x6x1x1xf32>} : () -> tensor<3x6x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %y = ortc.depthwise_block %x, %w1, %none, %w2, %none, %w3, %none, %x {channels_last, dilations = array<i64: 2, 2>, expand_activation = "leaky_relu", expand_activation_params = array<f32: 0.1>, group = 6 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 2, 2, 2, 2>, project_activation = "relu"} : tensor<1x6x6x3xf32>, tensor<6x3x1x1xf32>, none, tensor<6x1x3x3xf32>, none, tensor<3x6x1x1xf32>, none, tensor<1x6x6x3xf32> -> tensor<1x6x6x3xf32>
  return %y : tensor<1x6x6x3xf32>
}

// -----

// Channels first (AVX2 targets keep NCHW): a depthwise conv whose input is
// 1 MiB or more an image (MobileNetV2's 96 x 112 x 112), its expansion and
// its projection, a plain onnx.Conv that cpu-fuse-conv-epilogue left as it
// was (nothing to fold), become a block without channels_last, whose kernel
// runs the three image by image.
// CHECK-LABEL: func.func @channels_first
// CHECK-SAME: (%[[X:.*]]: tensor<?x16x112x112xf32>)
// CHECK-DAG: %[[W1:.*]] = "onnx.Constant"() <{value = dense<5.000000e-01> : tensor<96x16x1x1xf32>}>
// CHECK-DAG: %[[B1:.*]] = "onnx.Constant"() <{value = dense<1.000000e-01> : tensor<96xf32>}>
// CHECK-DAG: %[[W2:.*]] = "onnx.Constant"() <{value = dense<2.500000e-01> : tensor<96x1x3x3xf32>}>
// CHECK-DAG: %[[W3:.*]] = "onnx.Constant"() <{value = dense<1.250000e-01> : tensor<24x96x1x1xf32>}>
// CHECK-DAG: %[[B3:.*]] = "onnx.Constant"() <{value = dense<3.000000e-01> : tensor<24xf32>}>
// CHECK: %[[D:.*]] = ortc.depthwise_block %[[X]], %[[W1]], %[[B1]], %[[W2]], %{{[0-9]+}}, %[[W3]], %[[B3]], %{{[0-9]+}}
// CHECK-SAME: {activation = "clip", activation_params = array<f32: 0.000000e+00, 6.000000e+00>, expand_activation = "clip", expand_activation_params = array<f32: 0.000000e+00, 6.000000e+00>, group = 96 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>}
// CHECK-SAME: none -> tensor<?x24x56x56xf32>
// CHECK-NOT: ortc.fused_conv
// CHECK-NOT: onnx.Conv
// CHECK: return %[[D]]
func.func @channels_first(%x: tensor<?x16x112x112xf32>) -> tensor<?x24x56x56xf32> {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<96x16x1x1xf32>} : () -> tensor<96x16x1x1xf32>
  %b1 = "onnx.Constant"() {value = dense<0.1> : tensor<96xf32>} : () -> tensor<96xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<96x1x3x3xf32>} : () -> tensor<96x1x3x3xf32>
  %w3 = "onnx.Constant"() {value = dense<0.125> : tensor<24x96x1x1xf32>} : () -> tensor<24x96x1x1xf32>
  %b3 = "onnx.Constant"() {value = dense<0.3> : tensor<24xf32>} : () -> tensor<24xf32>
  %none = "onnx.NoValue"() : () -> none
  %e = ortc.fused_conv %x, %w1, %b1, %none {activation = "clip", activation_params = array<f32: 0.0, 6.0>} : tensor<?x16x112x112xf32>, tensor<96x16x1x1xf32>, tensor<96xf32>, none -> tensor<?x96x112x112xf32>
  %d = ortc.fused_conv %e, %w2, %none, %none {activation = "clip", activation_params = array<f32: 0.0, 6.0>, group = 96 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<?x96x112x112xf32>, tensor<96x1x3x3xf32>, none, none -> tensor<?x96x56x56xf32>
  %p = "onnx.Conv"(%d, %w3, %b3) {auto_pad = "NOTSET", dilations = array<i64: 1, 1>, group = 1 : i64, kernel_shape = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, strides = array<i64: 1, 1>} : (tensor<?x96x56x56xf32>, tensor<24x96x1x1xf32>, tensor<24xf32>) -> tensor<?x24x56x56xf32>
  return %p : tensor<?x24x56x56xf32>
}

// -----

// Channels first, a depthwise separable conv with the residual its
// projection adds (no expansion): MobileNetV2's first block at 32 x 112 x 112.
// CHECK-LABEL: func.func @channels_first_separable
// CHECK-SAME: (%[[X:.*]]: tensor<1x32x112x112xf32>, %[[R:.*]]: tensor<1x16x112x112xf32>)
// CHECK: %[[D:.*]] = ortc.depthwise_block %[[X]], %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[R]] {group = 32 : i64, pads = array<i64: 1, 1, 1, 1>, project_activation = "relu"}
// CHECK-SAME: tensor<1x32x112x112xf32>, none, none, tensor<32x1x3x3xf32>, none, tensor<16x32x1x1xf32>, none, tensor<1x16x112x112xf32> -> tensor<1x16x112x112xf32>
// CHECK-NOT: ortc.fused_conv
// CHECK: return %[[D]]
func.func @channels_first_separable(%x: tensor<1x32x112x112xf32>, %r: tensor<1x16x112x112xf32>) -> tensor<1x16x112x112xf32> {
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<32x1x3x3xf32>} : () -> tensor<32x1x3x3xf32>
  %w3 = "onnx.Constant"() {value = dense<0.125> : tensor<16x32x1x1xf32>} : () -> tensor<16x32x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %d = ortc.fused_conv %x, %w2, %none, %none {activation = "none", activation_params = array<f32>, group = 32 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x32x112x112xf32>, tensor<32x1x3x3xf32>, none, none -> tensor<1x32x112x112xf32>
  %p = ortc.fused_conv %d, %w3, %none, %r {activation = "relu", activation_params = array<f32>} : tensor<1x32x112x112xf32>, tensor<16x32x1x1xf32>, none, tensor<1x16x112x112xf32> -> tensor<1x16x112x112xf32>
  return %p : tensor<1x16x112x112xf32>
}

// -----

// Channels first, left alone: a depthwise conv whose input is just under
// 1 MiB an image (96 x 52 x 52 floats), its expansion and its plain onnx.Conv
// projection (not made a fused_conv); pointwise weights that are not a
// constant, before and after; dynamic positions (the size is unknown); a
// channels-last expansion read by a channels-first depthwise conv (through a
// transpose) is not its block.
// CHECK-LABEL: func.func @channels_first_left_alone
// CHECK-NOT: ortc.depthwise_block
// CHECK-COUNT-2: ortc.fused_conv
// CHECK: onnx.Conv
// CHECK-COUNT-7: ortc.fused_conv
// CHECK-NOT: ortc.depthwise_block
func.func @channels_first_left_alone(%x: tensor<1x16x52x52xf32>, %big: tensor<1x16x112x112xf32>, %w: tensor<96x16x1x1xf32>, %wp: tensor<24x96x1x1xf32>, %dyn: tensor<1x16x?x?xf32>) -> (tensor<1x24x52x52xf32>, tensor<1x24x112x112xf32>, tensor<1x96x?x?xf32>, tensor<1x96x112x112xf32>) {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<96x16x1x1xf32>} : () -> tensor<96x16x1x1xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<96x1x3x3xf32>} : () -> tensor<96x1x3x3xf32>
  %w3 = "onnx.Constant"() {value = dense<0.125> : tensor<24x96x1x1xf32>} : () -> tensor<24x96x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  // Under 1 MiB an image.
  %a = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>} : tensor<1x16x52x52xf32>, tensor<96x16x1x1xf32>, none, none -> tensor<1x96x52x52xf32>
  %a2 = ortc.fused_conv %a, %w2, %none, %none {activation = "none", activation_params = array<f32>, group = 96 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x96x52x52xf32>, tensor<96x1x3x3xf32>, none, none -> tensor<1x96x52x52xf32>
  %a3 = "onnx.Conv"(%a2, %w3, %none) {auto_pad = "NOTSET", group = 1 : i64, kernel_shape = array<i64: 1, 1>} : (tensor<1x96x52x52xf32>, tensor<24x96x1x1xf32>, none) -> tensor<1x24x52x52xf32>
  // Weights that are not a constant.
  %b = ortc.fused_conv %big, %w, %none, %none {activation = "none", activation_params = array<f32>} : tensor<1x16x112x112xf32>, tensor<96x16x1x1xf32>, none, none -> tensor<1x96x112x112xf32>
  %b2 = ortc.fused_conv %b, %w2, %none, %none {activation = "none", activation_params = array<f32>, group = 96 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x96x112x112xf32>, tensor<96x1x3x3xf32>, none, none -> tensor<1x96x112x112xf32>
  %b3 = ortc.fused_conv %b2, %wp, %none, %none {activation = "none", activation_params = array<f32>} : tensor<1x96x112x112xf32>, tensor<24x96x1x1xf32>, none, none -> tensor<1x24x112x112xf32>
  // Dynamic positions.
  %c = ortc.fused_conv %dyn, %w1, %none, %none {activation = "none", activation_params = array<f32>} : tensor<1x16x?x?xf32>, tensor<96x16x1x1xf32>, none, none -> tensor<1x96x?x?xf32>
  %c2 = ortc.fused_conv %c, %w2, %none, %none {activation = "none", activation_params = array<f32>, group = 96 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x96x?x?xf32>, tensor<96x1x3x3xf32>, none, none -> tensor<1x96x?x?xf32>
  // Two layouts: a channels-last expansion, a channels-first depthwise conv.
  %bt = "onnx.Transpose"(%big) {perm = array<i64: 0, 2, 3, 1>} : (tensor<1x16x112x112xf32>) -> tensor<1x112x112x16xf32>
  %d = ortc.fused_conv %bt, %w1, %none, %none {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x112x112x16xf32>, tensor<96x16x1x1xf32>, none, none -> tensor<1x112x112x96xf32>
  %dt = "onnx.Transpose"(%d) {perm = array<i64: 0, 3, 1, 2>} : (tensor<1x112x112x96xf32>) -> tensor<1x96x112x112xf32>
  %d2 = ortc.fused_conv %dt, %w2, %none, %none {activation = "none", activation_params = array<f32>, group = 96 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x96x112x112xf32>, tensor<96x1x3x3xf32>, none, none -> tensor<1x96x112x112xf32>
  return %a3, %b3, %c2, %d2 : tensor<1x24x52x52xf32>, tensor<1x24x112x112xf32>, tensor<1x96x?x?xf32>, tensor<1x96x112x112xf32>
}

// -----

// A plain onnx.Conv that alone reads a depthwise conv of a block but is no
// 1x1 conv is not its projection, and stays the onnx.Conv it was; the
// expansion and the depthwise conv still make the block.
// CHECK-LABEL: func.func @dense_reader_stays
// CHECK: %[[BLOCK:.+]] = ortc.depthwise_block
// CHECK: %[[DENSE:.+]] = "onnx.Conv"(%[[BLOCK]],
// CHECK-NOT: ortc.fused_conv
// CHECK: return %[[DENSE]]
func.func @dense_reader_stays(%x: tensor<1x16x112x112xf32>) -> tensor<1x24x112x112xf32> {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<96x16x1x1xf32>} : () -> tensor<96x16x1x1xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<96x1x3x3xf32>} : () -> tensor<96x1x3x3xf32>
  %w3 = "onnx.Constant"() {value = dense<0.125> : tensor<24x96x3x3xf32>} : () -> tensor<24x96x3x3xf32>
  %none = "onnx.NoValue"() : () -> none
  %a = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>} : tensor<1x16x112x112xf32>, tensor<96x16x1x1xf32>, none, none -> tensor<1x96x112x112xf32>
  %a2 = ortc.fused_conv %a, %w2, %none, %none {activation = "none", activation_params = array<f32>, group = 96 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x96x112x112xf32>, tensor<96x1x3x3xf32>, none, none -> tensor<1x96x112x112xf32>
  %a3 = "onnx.Conv"(%a2, %w3, %none) {auto_pad = "NOTSET", group = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>} : (tensor<1x96x112x112xf32>, tensor<24x96x3x3xf32>, none) -> tensor<1x24x112x112xf32>
  return %a3 : tensor<1x24x112x112xf32>
}
