// RUN: ortc-opt %s -split-input-file -onnx-upgrade-generic-ops | FileCheck %s

// Softmax-11 over the last axis of a ranked input is Softmax-13 with axis -1.
// CHECK-LABEL: func.func @softmax_last_axis
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[S:.*]] = "onnx.Softmax"(%[[X]]) <{axis = -1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK: %[[L:.*]] = "onnx.LogSoftmax"(%[[X]]) <{axis = -1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK: return %[[S]], %[[L]]
func.func @softmax_last_axis(%x: tensor<2x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<2x3x4xf32>) {
  %0 = "onnx.Generic"(%x) <{domain = "", onnx_attrs = {axis = 2 : i64}, op_type = "Softmax", since_version = 11 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = "onnx.Generic"(%x) <{domain = "", onnx_attrs = {axis = -1 : i64}, op_type = "LogSoftmax", since_version = 12 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0, %1 : tensor<2x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// The default axis (1) is the last one for rank 2.
// CHECK-LABEL: func.func @softmax_default_axis
// CHECK-SAME: -> tensor<2x3xf32>
// CHECK: "onnx.Softmax"{{.*}}axis = -1
func.func @softmax_default_axis(%x: tensor<2x3xf32>) -> !onnx.unknown {
  %0 = "onnx.Generic"(%x) <{domain = "", onnx_attrs = {}, op_type = "Softmax", since_version = 11 : i64}> : (tensor<2x3xf32>) -> !onnx.unknown
  return %0 : !onnx.unknown
}

// -----

// Negative: another axis (2-D flattening differs), an unranked input, opset
// 13 (already typed when imported), and other domains stay generic.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-4: "onnx.Generic"
func.func @kept(%x: tensor<2x3x4xf32>, %u: tensor<*xf32>) {
  %0 = "onnx.Generic"(%x) <{domain = "", onnx_attrs = {axis = 1 : i64}, op_type = "Softmax", since_version = 11 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = "onnx.Generic"(%u) <{domain = "", onnx_attrs = {axis = -1 : i64}, op_type = "Softmax", since_version = 11 : i64}> : (tensor<*xf32>) -> tensor<*xf32>
  %2 = "onnx.Generic"(%x) <{domain = "", onnx_attrs = {axis = 2 : i64}, op_type = "Softmax", since_version = 13 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %3 = "onnx.Generic"(%x) <{domain = "com.microsoft", onnx_attrs = {axis = 2 : i64}, op_type = "Softmax", since_version = 1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return
}
