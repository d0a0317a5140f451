// RUN: ortc-opt %s -split-input-file -onnx-lower-to-linalg -canonicalize -cpu-fuse-elementwise -canonicalize -cse | FileCheck %s

// A chain, and a DAG whose intermediate is read twice inside it (x * sigmoid(x)),
// become one generic; the splat constant is folded into the body.
// CHECK-LABEL: func.func @silu_chain
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[B:.*]]: tensor<8xf32>)
// CHECK: %[[R:.*]] = linalg.generic {{.*}} ins(%[[X]], %[[B]] : tensor<?x8xf32>, tensor<8xf32>)
// CHECK: ^bb0(%[[A:.*]]: f32, %[[BB:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[S:.*]] = arith.addf %[[A]], %[[BB]] : f32
// CHECK: math.exp
// CHECK: %[[SIG:.*]] = arith.divf
// CHECK: %[[M:.*]] = arith.mulf %[[S]], %[[SIG]] : f32
// CHECK: %[[M3:.*]] = arith.mulf %[[M]], %{{.*}} : f32
// CHECK: linalg.yield %[[M3]] : f32
// CHECK-NOT: linalg.generic
// CHECK: return %[[R]]
func.func @silu_chain(%x: tensor<?x8xf32>, %b: tensor<8xf32>) -> tensor<?x8xf32> {
  %0 = "onnx.Add"(%x, %b) : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %1 = "onnx.Sigmoid"(%0) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %2 = "onnx.Mul"(%0, %1) : (tensor<?x8xf32>, tensor<?x8xf32>) -> tensor<?x8xf32>
  %c = "onnx.Constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %3 = "onnx.Mul"(%2, %c) : (tensor<?x8xf32>, tensor<f32>) -> tensor<?x8xf32>
  return %3 : tensor<?x8xf32>
}

// -----

// Negative: a producer also used outside the consumer (here returned) is
// not fused, so exp is computed once.
// CHECK-LABEL: func.func @shared
// CHECK: %[[E:.*]] = linalg.generic
// CHECK: math.exp
// CHECK: %[[N:.*]] = linalg.generic {{.*}} ins(%[[E]] : tensor<8xf32>)
// CHECK-NOT: math.exp
// CHECK: arith.negf
// CHECK: return %[[E]], %[[N]]
func.func @shared(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = "onnx.Exp"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "onnx.Neg"(%0) : (tensor<8xf32>) -> tensor<8xf32>
  return %0, %1 : tensor<8xf32>, tensor<8xf32>
}

// -----

// Broadcasting producers fuse with composed maps: the bias read stays
// innermost-only, the row scale outer-only.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[IN:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-DAG: #[[ROW:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @bcast_fusion
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[IN]], #[[ROW]], #[[ID]]]
// CHECK-NOT: linalg.generic
func.func @bcast_fusion(%x: tensor<?x8xf32>, %b: tensor<8xf32>, %s: tensor<?x1xf32>) -> tensor<?x8xf32> {
  %0 = "onnx.Add"(%x, %b) : (tensor<?x8xf32>, tensor<8xf32>) -> tensor<?x8xf32>
  %1 = "onnx.Relu"(%0) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %2 = "onnx.Mul"(%1, %s) : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  return %2 : tensor<?x8xf32>
}
