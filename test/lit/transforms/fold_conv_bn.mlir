// RUN: ortc-opt %s -split-input-file -onnx-fold-conv-bn | FileCheck %s

// s = scale / sqrt(var + eps) = 2 / sqrt(0 + 0.25) = 4, so W' = 4 W and
// B' = (B - mean) * 4 + shift = (0.5 - 0.5) * 4 + 1 = 1.
// CHECK-LABEL: func.func @conv_bn
// CHECK-SAME: (%[[X:.*]]: tensor<1x1x3x3xf32>)
// CHECK-DAG: %[[W:.*]] = "onnx.Constant"() <{value = dense_resource<conv_bn_weight> : tensor<1x1x2x2xf32>}>
// CHECK-DAG: %[[B:.*]] = "onnx.Constant"() <{value = dense_resource<conv_bn_bias> : tensor<1xf32>}>
// CHECK: %[[Y:.*]] = "onnx.Conv"(%[[X]], %[[W]], %[[B]]) {{.*}} -> tensor<1x1x2x2xf32>
// CHECK-NOT: "onnx.BatchNormalization"
// CHECK: return %[[Y]]
// CHECK: conv_bn_weight: "0x040000000000804000000041000040410000804
// CHECK-SAME: 1"
// CHECK: conv_bn_bias: "0x040000000000803F"
func.func @conv_bn(%x: tensor<1x1x3x3xf32>) -> tensor<1x1x2x2xf32> {
  %w = "onnx.Constant"() {value = dense<[[[[1.0, 2.0], [3.0, 4.0]]]]> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %b = "onnx.Constant"() {value = dense<[0.5]> : tensor<1xf32>} : () -> tensor<1xf32>
  %scale = "onnx.Constant"() {value = dense<[2.0]> : tensor<1xf32>} : () -> tensor<1xf32>
  %shift = "onnx.Constant"() {value = dense<[1.0]> : tensor<1xf32>} : () -> tensor<1xf32>
  %mean = "onnx.Constant"() {value = dense<[0.5]> : tensor<1xf32>} : () -> tensor<1xf32>
  %var = "onnx.Constant"() {value = dense<[0.0]> : tensor<1xf32>} : () -> tensor<1xf32>
  %c = "onnx.Conv"(%x, %w, %b) : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>, tensor<1xf32>) -> tensor<*xf32>
  %y:3 = "onnx.BatchNormalization"(%c, %scale, %shift, %mean, %var) {epsilon = 0.25 : f32} : (tensor<*xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<1x1x2x2xf32>, none, none)
  return %y#0 : tensor<1x1x2x2xf32>
}

// -----

// Negative: statistics that are graph inputs, and a Conv with another user.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-2: "onnx.BatchNormalization"
func.func @kept(%x: tensor<1x1x3x3xf32>, %var: tensor<1xf32>) -> (tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>) {
  %w = "onnx.Constant"() {value = dense<1.0> : tensor<1x1x2x2xf32>} : () -> tensor<1x1x2x2xf32>
  %one = "onnx.Constant"() {value = dense<[1.0]> : tensor<1xf32>} : () -> tensor<1xf32>
  %none = "onnx.NoValue"() : () -> none
  %c0 = "onnx.Conv"(%x, %w, %none) : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>, none) -> tensor<1x1x2x2xf32>
  %y0:3 = "onnx.BatchNormalization"(%c0, %one, %one, %one, %var) : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<1x1x2x2xf32>, none, none)
  %c1 = "onnx.Conv"(%x, %w, %none) : (tensor<1x1x3x3xf32>, tensor<1x1x2x2xf32>, none) -> tensor<1x1x2x2xf32>
  %y1:3 = "onnx.BatchNormalization"(%c1, %one, %one, %one, %one) : (tensor<1x1x2x2xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>, tensor<1xf32>) -> (tensor<1x1x2x2xf32>, none, none)
  return %y0#0, %y1#0, %c1 : tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>, tensor<1x1x2x2xf32>
}
