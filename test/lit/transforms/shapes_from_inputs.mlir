// RUN: ortc-opt %s -split-input-file -onnx-shapes-from-inputs | FileCheck %s

// The Shape of an intermediate whose dims are the inputs' (b, s) and a
// constant reads the inputs' Shapes instead: the Reshape target no longer
// depends on the MatMul.
// CHECK-LABEL: func.func @intermediate
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>{{.*}}, %[[W:.*]]: tensor<64x64xf32>)
// CHECK: %[[Y:.*]] = "onnx.MatMul"(%[[X]], %[[W]])
// CHECK-DAG: %[[B:.*]] = "onnx.Shape"(%[[X]]) <{end = 1 : i64, start = 0 : i64}> : (tensor<?x?x64xf32>) -> tensor<1xi64>
// CHECK-DAG: %[[S:.*]] = "onnx.Shape"(%[[X]]) <{end = 2 : i64, start = 1 : i64}> : (tensor<?x?x64xf32>) -> tensor<1xi64>
// CHECK-DAG: %[[C:.*]] = "onnx.Constant"() <{value = dense<64> : tensor<1xi64>}>
// CHECK: %[[T:.*]] = "onnx.Concat"(%[[B]], %[[S]], %[[C]]) <{axis = 0 : i64}> : (tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<3xi64>
// CHECK-NOT: "onnx.Shape"(%[[Y]])
// CHECK: "onnx.Reshape"(%{{.*}}, %[[T]])
func.func @intermediate(%x: tensor<?x?x64xf32> {onnx.dim_params = ["b", "s", ""]}, %w: tensor<64x64xf32>) -> tensor<?x?x64xf32> {
  %y = "onnx.MatMul"(%x, %w) : (tensor<?x?x64xf32>, tensor<64x64xf32>) -> tensor<?x?x64xf32>
  %shape = "onnx.Shape"(%y) : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %r = "onnx.Reshape"(%x, %shape) : (tensor<?x?x64xf32>, tensor<3xi64>) -> tensor<?x?x64xf32>
  return %r : tensor<?x?x64xf32>
}

// -----

// start and end (negative too) pick the elements; one element is the
// input's Shape itself, without a Concat.
// CHECK-LABEL: func.func @start_end
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>
// CHECK: %[[S:.*]] = "onnx.Shape"(%[[X]]) <{end = 2 : i64, start = 1 : i64}>
// CHECK-NOT: onnx.Concat
// CHECK: return %[[S]]
func.func @start_end(%x: tensor<?x?x64xf32> {onnx.dim_params = ["b", "s", ""]}) -> tensor<1xi64> {
  %y = "onnx.Relu"(%x) : (tensor<?x?x64xf32>) -> tensor<?x?x64xf32>
  %shape = "onnx.Shape"(%y) {start = -2 : i64, end = -1 : i64} : (tensor<?x?x64xf32>) -> tensor<1xi64>
  return %shape : tensor<1xi64>
}

// -----

// Left alone: the Shape of a graph input, of a dim that is an expression
// (b * s), and of static dims only.
// CHECK-LABEL: func.func @left_alone
// CHECK: "onnx.Shape"(%arg0)
// CHECK: %[[F:.*]] = "onnx.Flatten"
// CHECK: "onnx.Shape"(%[[F]]) {{.*}}: (tensor<?x64xf32>)
// CHECK: %[[R:.*]] = "onnx.Relu"
// CHECK: "onnx.Shape"(%[[R]]) {{.*}}: (tensor<4x64xf32>)
// CHECK-NOT: onnx.Concat
func.func @left_alone(%x: tensor<?x?x64xf32> {onnx.dim_params = ["b", "s", ""]}, %z: tensor<4x64xf32>) -> (tensor<3xi64>, tensor<2xi64>, tensor<2xi64>) {
  %0 = "onnx.Shape"(%x) : (tensor<?x?x64xf32>) -> tensor<3xi64>
  %f = "onnx.Flatten"(%x) {axis = 2 : i64} : (tensor<?x?x64xf32>) -> tensor<?x64xf32>
  %1 = "onnx.Shape"(%f) : (tensor<?x64xf32>) -> tensor<2xi64>
  %r = "onnx.Relu"(%z) : (tensor<4x64xf32>) -> tensor<4x64xf32>
  %2 = "onnx.Shape"(%r) : (tensor<4x64xf32>) -> tensor<2xi64>
  return %0, %1, %2 : tensor<3xi64>, tensor<2xi64>, tensor<2xi64>
}
