// RUN: ortc-opt %s -split-input-file -cuda-split-to-slices | FileCheck %s

// GPT-2's query/key/value split: three Slices over the last axis.
// CHECK-LABEL: func.func @qkv
// CHECK-SAME: (%[[X:.*]]: tensor<?x128x2304xf32>)
// CHECK-DAG: %[[AXES:.*]] = "onnx.Constant"() <{value = dense<2> : tensor<1xi64>}>
// CHECK-DAG: %[[S0:.*]] = "onnx.Constant"() <{value = dense<0> : tensor<1xi64>}>
// CHECK-DAG: %[[E0:.*]] = "onnx.Constant"() <{value = dense<768> : tensor<1xi64>}>
// CHECK: %[[Q:.*]] = "onnx.Slice"(%[[X]], %[[S0]], %[[E0]], %[[AXES]], %{{.*}}) : (tensor<?x128x2304xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<?x128x768xf32>
// CHECK: %[[K:.*]] = "onnx.Slice"
// CHECK: %[[V:.*]] = "onnx.Slice"
// CHECK-NOT: onnx.Split
// CHECK: return %[[Q]], %[[K]], %[[V]]
func.func @qkv(%x: tensor<?x128x2304xf32>) -> (tensor<?x128x768xf32>, tensor<?x128x768xf32>, tensor<?x128x768xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %0:3 = "onnx.Split"(%x, %none) {axis = 2 : i64, num_outputs = 3 : i64} : (tensor<?x128x2304xf32>, none) -> (tensor<?x128x768xf32>, tensor<?x128x768xf32>, tensor<?x128x768xf32>)
  return %0#0, %0#1, %0#2 : tensor<?x128x768xf32>, tensor<?x128x768xf32>, tensor<?x128x768xf32>
}

// -----

// Constant sizes; an unread output gets no Slice.
// CHECK-LABEL: func.func @sizes
// CHECK-DAG: %[[S:.*]] = "onnx.Constant"() <{value = dense<2> : tensor<1xi64>}>
// CHECK-DAG: %[[E:.*]] = "onnx.Constant"() <{value = dense<5> : tensor<1xi64>}>
// CHECK: %[[B:.*]] = "onnx.Slice"(%{{.*}}, %[[S]], %[[E]], %{{.*}}, %{{.*}}) {{.*}} -> tensor<3x4xf16>
// CHECK-NOT: onnx.Slice
// CHECK: return %[[B]]
func.func @sizes(%x: tensor<5x4xf16>) -> tensor<3x4xf16> {
  %split = "onnx.Constant"() {value = dense<[2, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0:2 = "onnx.Split"(%x, %split) {axis = 0 : i64} : (tensor<5x4xf16>, tensor<2xi64>) -> (tensor<2x4xf16>, tensor<3x4xf16>)
  return %0#1 : tensor<3x4xf16>
}

// -----

// Left alone: a dynamic split axis, and sizes from an input.
// CHECK-LABEL: func.func @not_split
// CHECK-COUNT-2: onnx.Split
// CHECK-NOT: onnx.Slice
func.func @not_split(%x: tensor<?x4xf32>, %y: tensor<6x4xf32>, %s: tensor<2xi64>) -> (tensor<?x4xf32>, tensor<?x4xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %0:2 = "onnx.Split"(%x, %none) {axis = 0 : i64, num_outputs = 2 : i64} : (tensor<?x4xf32>, none) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  %1:2 = "onnx.Split"(%y, %s) {axis = 0 : i64} : (tensor<6x4xf32>, tensor<2xi64>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
  return %0#0, %1#1 : tensor<?x4xf32>, tensor<?x4xf32>
}
