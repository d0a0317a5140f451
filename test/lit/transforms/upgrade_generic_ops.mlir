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

// Another axis: the input flattened to 2-D there, the typed op over the last
// axis, and a Reshape back; a dynamic batch is copied (0) when axis is 1.
// CHECK-LABEL: func.func @softmax_other_axis
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>, %[[B:.*]]: tensor<?x3x4xf32>)
// CHECK: %[[F:.*]] = "onnx.Flatten"(%[[X]]) <{axis = 1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x12xf32>
// CHECK: %[[S:.*]] = "onnx.Softmax"(%[[F]]) <{axis = -1 : i64}> : (tensor<2x12xf32>) -> tensor<2x12xf32>
// CHECK: %[[T:.*]] = "onnx.Constant"() <{value = dense<[2, 3, 4]> : tensor<3xi64>}>
// CHECK: %[[R:.*]] = "onnx.Reshape"(%[[S]], %[[T]]) <{allowzero = 0 : i64}> : (tensor<2x12xf32>, tensor<3xi64>) -> tensor<2x3x4xf32>
// CHECK: %[[FB:.*]] = "onnx.Flatten"(%[[B]]) <{axis = 1 : i64}> : (tensor<?x3x4xf32>) -> tensor<?x12xf32>
// CHECK: %[[H:.*]] = "onnx.Hardmax"(%[[FB]]) <{axis = -1 : i64}>
// CHECK: %[[TB:.*]] = "onnx.Constant"() <{value = dense<[0, 3, 4]> : tensor<3xi64>}>
// CHECK: %[[RB:.*]] = "onnx.Reshape"(%[[H]], %[[TB]]){{.*}} -> tensor<?x3x4xf32>
// CHECK: %[[F0:.*]] = "onnx.Flatten"(%[[X]]) <{axis = 0 : i64}> : (tensor<2x3x4xf32>) -> tensor<1x24xf32>
// CHECK: "onnx.LogSoftmax"(%[[F0]]) <{axis = -1 : i64}>
// CHECK: return %[[R]], %[[RB]]
func.func @softmax_other_axis(%x: tensor<2x3x4xf32>, %b: tensor<?x3x4xf32>) -> (tensor<2x3x4xf32>, tensor<?x3x4xf32>, tensor<2x3x4xf32>) {
  %0 = "onnx.Generic"(%x) <{domain = "", onnx_attrs = {axis = 1 : i64}, op_type = "Softmax", since_version = 11 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %1 = "onnx.Generic"(%b) <{domain = "", onnx_attrs = {}, op_type = "Hardmax", since_version = 11 : i64}> : (tensor<?x3x4xf32>) -> tensor<?x3x4xf32>
  %2 = "onnx.Generic"(%x) <{domain = "", onnx_attrs = {axis = 0 : i64}, op_type = "LogSoftmax", since_version = 1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return %0, %1, %2 : tensor<2x3x4xf32>, tensor<?x3x4xf32>, tensor<2x3x4xf32>
}

// -----

// Another axis over a dynamic dim that Flatten merges: the Reshape back takes
// the input's Shape (the symbolic shape analysis reads it as the input's dims).
// CHECK-LABEL: func.func @softmax_dynamic_axis
// CHECK-SAME: (%[[D:.*]]: tensor<?x3x4x5xf32>, %[[I:.*]]: tensor<2x?x4xf32>)
// CHECK: %[[FD:.*]] = "onnx.Flatten"(%[[D]]) <{axis = 2 : i64}> : (tensor<?x3x4x5xf32>) -> tensor<?x20xf32>
// CHECK: %[[SD:.*]] = "onnx.Softmax"(%[[FD]]) <{axis = -1 : i64}> : (tensor<?x20xf32>) -> tensor<?x20xf32>
// CHECK: %[[TD:.*]] = "onnx.Shape"(%[[D]]){{.*}} : (tensor<?x3x4x5xf32>) -> tensor<4xi64>
// CHECK: %[[RD:.*]] = "onnx.Reshape"(%[[SD]], %[[TD]]){{.*}} -> tensor<?x3x4x5xf32>
// CHECK: %[[FI:.*]] = "onnx.Flatten"(%[[I]]) <{axis = 1 : i64}> : (tensor<2x?x4xf32>) -> tensor<2x?xf32>
// CHECK: %[[TI:.*]] = "onnx.Shape"(%[[I]])
// CHECK: return %[[RD]]
func.func @softmax_dynamic_axis(%d: tensor<?x3x4x5xf32>, %i: tensor<2x?x4xf32>) -> (tensor<?x3x4x5xf32>, tensor<2x?x4xf32>) {
  %0 = "onnx.Generic"(%d) <{domain = "", onnx_attrs = {axis = 2 : i64}, op_type = "Softmax", since_version = 11 : i64}> : (tensor<?x3x4x5xf32>) -> tensor<?x3x4x5xf32>
  %1 = "onnx.Generic"(%i) <{domain = "", onnx_attrs = {axis = 1 : i64}, op_type = "Softmax", since_version = 11 : i64}> : (tensor<2x?x4xf32>) -> tensor<2x?x4xf32>
  return %0, %1 : tensor<?x3x4x5xf32>, tensor<2x?x4xf32>
}

// -----

// Negative: an unranked input, opset 13 (already typed when imported), and
// other domains stay generic.
// CHECK-LABEL: func.func @kept
// CHECK-COUNT-3: "onnx.Generic"
func.func @kept(%x: tensor<2x3x4xf32>, %u: tensor<*xf32>) {
  %1 = "onnx.Generic"(%u) <{domain = "", onnx_attrs = {axis = -1 : i64}, op_type = "Softmax", since_version = 11 : i64}> : (tensor<*xf32>) -> tensor<*xf32>
  %2 = "onnx.Generic"(%x) <{domain = "", onnx_attrs = {axis = 2 : i64}, op_type = "Softmax", since_version = 13 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %3 = "onnx.Generic"(%x) <{domain = "com.microsoft", onnx_attrs = {axis = 2 : i64}, op_type = "Softmax", since_version = 1 : i64}> : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  return
}
