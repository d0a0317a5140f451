// RUN: ortc-opt %s -split-input-file -cpu-fuse-pointwise-depthwise | FileCheck %s

// MobileNetV2's expansion: a pointwise conv (bias, clip) read only by a
// strided depthwise conv (bias, clip) becomes one op with both convs'
// weights, biases and activations and the depthwise conv's window.
// CHECK-LABEL: func.func @expansion
// CHECK-SAME: (%[[X:.*]]: tensor<?x8x8x4xf32>)
// CHECK-DAG: %[[W1:.*]] = "onnx.Constant"() <{value = dense<5.000000e-01> : tensor<12x4x1x1xf32>}>
// CHECK-DAG: %[[B1:.*]] = "onnx.Constant"() <{value = dense<1.000000e-01> : tensor<12xf32>}>
// CHECK-DAG: %[[W2:.*]] = "onnx.Constant"() <{value = dense<2.500000e-01> : tensor<12x1x3x3xf32>}>
// CHECK-DAG: %[[B2:.*]] = "onnx.Constant"() <{value = dense<2.000000e-01> : tensor<12xf32>}>
// CHECK: %[[Y:.*]] = ortc.pointwise_depthwise_conv %[[X]], %[[W1]], %[[B1]], %[[W2]], %[[B2]]
// CHECK-SAME: activation = "clip", activation_params = array<f32: 0.000000e+00, 6.000000e+00>
// CHECK-SAME: group = 12 : i64, pads = array<i64: 1, 1, 1, 1>
// CHECK-SAME: pointwise_activation = "clip", pointwise_activation_params = array<f32: 0.000000e+00, 6.000000e+00>
// CHECK-SAME: strides = array<i64: 2, 2>
// CHECK-SAME: : tensor<?x8x8x4xf32>, tensor<12x4x1x1xf32>, tensor<12xf32>, tensor<12x1x3x3xf32>, tensor<12xf32> -> tensor<?x4x4x12xf32>
// CHECK-NOT: ortc.fused_conv
// CHECK: return %[[Y]]
func.func @expansion(%x: tensor<?x8x8x4xf32>) -> tensor<?x4x4x12xf32> {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<12x4x1x1xf32>} : () -> tensor<12x4x1x1xf32>
  %b1 = "onnx.Constant"() {value = dense<0.1> : tensor<12xf32>} : () -> tensor<12xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<12x1x3x3xf32>} : () -> tensor<12x1x3x3xf32>
  %b2 = "onnx.Constant"() {value = dense<0.2> : tensor<12xf32>} : () -> tensor<12xf32>
  %none = "onnx.NoValue"() : () -> none
  %e = ortc.fused_conv %x, %w1, %b1, %none {activation = "clip", activation_params = array<f32: 0.0, 6.0>, channels_last} : tensor<?x8x8x4xf32>, tensor<12x4x1x1xf32>, tensor<12xf32>, none -> tensor<?x8x8x12xf32>
  %d = ortc.fused_conv %e, %w2, %b2, %none {activation = "clip", activation_params = array<f32: 0.0, 6.0>, channels_last, group = 12 : i64, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<?x8x8x12xf32>, tensor<12x1x3x3xf32>, tensor<12xf32>, none -> tensor<?x4x4x12xf32>
  return %d : tensor<?x4x4x12xf32>
}

// -----

// Without biases or activations the pair still fuses; its absent biases
// stay none.
// CHECK-LABEL: func.func @no_epilogue
// CHECK: %[[N:.*]] = "onnx.NoValue"
// CHECK: ortc.pointwise_depthwise_conv %{{.*}}, %{{.*}}, %[[N]], %{{.*}}, %[[N]] {activation = "none", activation_params = array<f32>, group = 6 : i64, pointwise_activation = "relu", pointwise_activation_params = array<f32>}
// CHECK-SAME: -> tensor<1x4x4x6xf32>
func.func @no_epilogue(%x: tensor<1x6x6x3xf32>) -> tensor<1x4x4x6xf32> {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<6x3x1x1xf32>} : () -> tensor<6x3x1x1xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<6x1x3x3xf32>} : () -> tensor<6x1x3x3xf32>
  %none = "onnx.NoValue"() : () -> none
  %e = ortc.fused_conv %x, %w1, %none, %none {activation = "relu", activation_params = array<f32>, channels_last} : tensor<1x6x6x3xf32>, tensor<6x3x1x1xf32>, none, none -> tensor<1x6x6x6xf32>
  %d = ortc.fused_conv %e, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 6 : i64} : tensor<1x6x6x6xf32>, tensor<6x1x3x3xf32>, none, none -> tensor<1x4x4x6xf32>
  return %d : tensor<1x4x4x6xf32>
}

// -----

// Left alone: the pointwise output has two depthwise readers; the pointwise conv
// is strided; it has padding; it adds a residual; the depthwise conv adds
// a residual; the second conv is not depthwise; the convs are not
// channels-last.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: ortc.pointwise_depthwise_conv
// CHECK-COUNT-15: ortc.fused_conv
// CHECK-NOT: ortc.pointwise_depthwise_conv
func.func @left_alone(%x: tensor<1x6x6x4xf32>, %r: tensor<1x6x6x8xf32>) -> (tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>, tensor<1x3x3x8xf32>, tensor<1x8x8x8xf32>, tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>, tensor<1x6x6x8xf32>, tensor<1x8x6x6xf32>) {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<8x4x1x1xf32>} : () -> tensor<8x4x1x1xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<8x1x3x3xf32>} : () -> tensor<8x1x3x3xf32>
  %w3 = "onnx.Constant"() {value = dense<0.25> : tensor<8x8x3x3xf32>} : () -> tensor<8x8x3x3xf32>
  %none = "onnx.NoValue"() : () -> none
  // Two readers, both depthwise convs.
  %a = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x6x6x4xf32>, tensor<8x4x1x1xf32>, none, none -> tensor<1x6x6x8xf32>
  %a1 = ortc.fused_conv %a, %w2, %none, %none {activation = "relu", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x6x6x8xf32>
  %a2 = ortc.fused_conv %a, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x6x6x8xf32>
  // Strided pointwise.
  %b = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>, channels_last, strides = array<i64: 2, 2>} : tensor<1x6x6x4xf32>, tensor<8x4x1x1xf32>, none, none -> tensor<1x3x3x8xf32>
  %b2 = ortc.fused_conv %b, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x3x3x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x3x3x8xf32>
  // Padded pointwise.
  %c = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>, channels_last, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x4xf32>, tensor<8x4x1x1xf32>, none, none -> tensor<1x8x8x8xf32>
  %c2 = ortc.fused_conv %c, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x8x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x8x8x8xf32>
  // A residual on the pointwise conv.
  %d = ortc.fused_conv %x, %w1, %none, %r {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x6x6x4xf32>, tensor<8x4x1x1xf32>, none, tensor<1x6x6x8xf32> -> tensor<1x6x6x8xf32>
  %d2 = ortc.fused_conv %d, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last, group = 8 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<1x6x6x8xf32>, tensor<8x1x3x3xf32>, none, none -> tensor<1x6x6x8xf32>
  // A residual on the depthwise conv.
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

// The fused op prints and parses back unchanged.
// CHECK-LABEL: func.func @round_trip
// CHECK: ortc.pointwise_depthwise_conv %{{.*}} {activation = "relu", activation_params = array<f32>, dilations = array<i64: 2, 2>, group = 6 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 2, 2, 2, 2>, pointwise_activation = "leaky_relu", pointwise_activation_params = array<f32: 1.000000e-01>} : tensor<1x6x6x3xf32>, tensor<6x3x1x1xf32>, none, tensor<6x1x3x3xf32>, none -> tensor<1x6x6x6xf32>
func.func @round_trip(%x: tensor<1x6x6x3xf32>) -> tensor<1x6x6x6xf32> {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<6x3x1x1xf32>} : () -> tensor<6x3x1x1xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<6x1x3x3xf32>} : () -> tensor<6x1x3x3xf32>
  %none = "onnx.NoValue"() : () -> none
  %y = ortc.pointwise_depthwise_conv %x, %w1, %none, %w2, %none {activation = "relu", activation_params = array<f32>, dilations = array<i64: 2, 2>, group = 6 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 2, 2, 2, 2>, pointwise_activation = "leaky_relu", pointwise_activation_params = array<f32: 0.1>} : tensor<1x6x6x3xf32>, tensor<6x3x1x1xf32>, none, tensor<6x1x3x3xf32>, none -> tensor<1x6x6x6xf32>
  return %y : tensor<1x6x6x6xf32>
}
