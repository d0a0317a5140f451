// RUN: ortc-opt %s -split-input-file -cuda-outline-kernels | FileCheck %s

// A chain over one shape is one kernel; the value used after it (%m, returned)
// and the last one are its results; the splat constant is cloned in, the
// bias stays an argument.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<?x64xf32>, %[[B:.*]]: tensor<64xf32>)
// CHECK: %[[K:.*]]:2 = call @chain_k0(%[[X]], %[[B]])
// CHECK: return %[[K]]#0, %[[K]]#1
// CHECK: func.func private @chain_k0(%[[KX:.*]]: tensor<?x64xf32>, %[[KB:.*]]: tensor<64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) attributes {ortc.cuda.kernel}
// CHECK: %[[C:.*]] = "onnx.Constant"
// CHECK: %[[S:.*]] = "onnx.Add"(%[[KX]], %[[KB]])
// CHECK: %[[M:.*]] = "onnx.Mul"(%[[S]], %[[C]])
// CHECK: %[[T:.*]] = "onnx.Tanh"(%[[M]])
// CHECK: return %[[M]], %[[T]]
func.func @chain(%x: tensor<?x64xf32>, %b: tensor<64xf32>) -> (tensor<?x64xf32>, tensor<?x64xf32>) {
  %c = "onnx.Constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "onnx.Add"(%x, %b) : (tensor<?x64xf32>, tensor<64xf32>) -> tensor<?x64xf32>
  %1 = "onnx.Mul"(%0, %c) : (tensor<?x64xf32>, tensor<f32>) -> tensor<?x64xf32>
  %2 = "onnx.Tanh"(%1) : (tensor<?x64xf32>) -> tensor<?x64xf32>
  return %1, %2 : tensor<?x64xf32>, tensor<?x64xf32>
}

// -----

// Siblings that read one input share a kernel; a non-splat constant is a
// weight, read as an argument.
// CHECK-LABEL: func.func @siblings
// CHECK-SAME: (%[[H:.*]]: tensor<4x8xf32>)
// CHECK: %[[W:.*]] = "onnx.Constant"() <{value = dense<{{\[}}
// CHECK: %[[K:.*]] = call @siblings_k0(%[[H]], %[[W]])
// CHECK: return %[[K]]
// CHECK: func.func private @siblings_k0({{.*}}) -> tensor<4x8xf32> attributes {ortc.cuda.kernel}
// CHECK: "onnx.Sigmoid"
// CHECK: "onnx.Tanh"
// CHECK: "onnx.Mul"
// CHECK: "onnx.Add"
// CHECK-NOT: func.func
func.func @siblings(%h: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %w = "onnx.Constant"() {value = dense<[1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0]> : tensor<8xf32>} : () -> tensor<8xf32>
  %0 = "onnx.Sigmoid"(%h) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "onnx.Tanh"(%h) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "onnx.Mul"(%0, %1) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %3 = "onnx.Add"(%2, %w) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %3 : tensor<4x8xf32>
}

// -----

// An op that is not elementwise stays and splits the chain: the kernel before
// it ends where it reads the group, a new one starts after it.
// CHECK-LABEL: func.func @split
// CHECK: %[[A:.*]] = call @split_k0(
// CHECK: %[[S:.*]] = "onnx.Softmax"(%[[A]])
// CHECK: %[[B:.*]] = call @split_k1(%[[S]])
// CHECK: return %[[B]]
// CHECK: func.func private @split_k0
// CHECK: "onnx.Exp"
// CHECK: func.func private @split_k1
// CHECK: "onnx.Neg"
func.func @split(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %0 = "onnx.Exp"(%x) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %1 = "onnx.Softmax"(%0) {axis = -1 : i64} : (tensor<2x16xf32>) -> tensor<2x16xf32>
  %2 = "onnx.Neg"(%1) : (tensor<2x16xf32>) -> tensor<2x16xf32>
  return %2 : tensor<2x16xf32>
}

// -----

// A result of another shape starts a new group.
// CHECK-LABEL: func.func @shapes
// CHECK: %[[A:.*]] = call @shapes_k0(
// CHECK: %[[B:.*]] = call @shapes_k1(%[[A]],
// CHECK: return %[[B]]
func.func @shapes(%x: tensor<8xf32>, %y: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "onnx.Relu"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "onnx.Add"(%0, %y) : (tensor<8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1 : tensor<4x8xf32>
}

// -----

// Nothing elementwise: nothing outlined.
// CHECK-LABEL: func.func @none
// CHECK-NOT: call
// CHECK: "onnx.Softmax"
// CHECK-NOT: ortc.cuda.kernel
func.func @none(%x: tensor<2x16xf32>) -> tensor<2x16xf32> {
  %0 = "onnx.Softmax"(%x) {axis = -1 : i64} : (tensor<2x16xf32>) -> tensor<2x16xf32>
  return %0 : tensor<2x16xf32>
}
