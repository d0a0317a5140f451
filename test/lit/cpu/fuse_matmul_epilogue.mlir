// RUN: ortc-opt %s -split-input-file -cpu-fuse-matmul-epilogue | FileCheck %s
// The ortc ops print and parse back.
// RUN: ortc-opt %s -split-input-file -cpu-fuse-matmul-epilogue | ortc-opt -split-input-file | FileCheck %s

// A transformer's feed-forward: MatMul by a [K, N] weight, the bias [N]
// added, then GELU: one matmul_bias with a gelu epilogue.
// CHECK-LABEL: func.func @matmul_bias_gelu
// CHECK-SAME: (%[[A:.*]]: tensor<1x?x8xf32>)
// CHECK-DAG: %[[W:.*]] = "onnx.Constant"() <{value = dense<5.000000e-01> : tensor<8x16xf32>}>
// CHECK-DAG: %[[B:.*]] = "onnx.Constant"() <{value = dense<2.500000e-01> : tensor<16xf32>}>
// CHECK: %[[Y:.*]] = ortc.matmul_bias %[[A]], %[[W]], %[[B]] {activation = "gelu", alpha = 1.000000e+00 : f32, trans_b = false}
// CHECK-NOT: onnx.MatMul
// CHECK-NOT: onnx.Add
// CHECK-NOT: ortc.gelu
// CHECK: return %[[Y]]
func.func @matmul_bias_gelu(%a: tensor<1x?x8xf32>) -> tensor<1x?x16xf32> {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x16xf32>} : () -> tensor<8x16xf32>
  %b = "onnx.Constant"() {value = dense<0.25> : tensor<16xf32>} : () -> tensor<16xf32>
  %m = "onnx.MatMul"(%a, %w) : (tensor<1x?x8xf32>, tensor<8x16xf32>) -> tensor<1x?x16xf32>
  %s = "onnx.Add"(%m, %b) : (tensor<1x?x16xf32>, tensor<16xf32>) -> tensor<1x?x16xf32>
  %y = ortc.gelu %s {approximate = "none"} : tensor<1x?x16xf32> -> tensor<1x?x16xf32>
  return %y : tensor<1x?x16xf32>
}

// -----

// The bias first in the Add, GELU's tanh form (GPT-2), and a bias with no
// activation after it (the attention projections).
// CHECK-LABEL: func.func @tanh_form_and_plain_bias
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<16xf32>, %[[C:.*]]: tensor<16xf32>)
// CHECK: %[[G:.*]] = ortc.matmul_bias %[[A]], %{{.*}}, %[[B]] {activation = "gelu_tanh", alpha = 1.000000e+00 : f32, trans_b = false}
// CHECK: %[[P:.*]] = ortc.matmul_bias %[[A]], %{{.*}}, %[[C]] {activation = "none", alpha = 1.000000e+00 : f32, trans_b = false}
// CHECK: return %[[G]], %[[P]]
func.func @tanh_form_and_plain_bias(%a: tensor<4x8xf32>, %b: tensor<16xf32>, %c: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x16xf32>} : () -> tensor<8x16xf32>
  %m = "onnx.MatMul"(%a, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = "onnx.Add"(%b, %m) : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %g = ortc.gelu %s {approximate = "tanh"} : tensor<4x16xf32> -> tensor<4x16xf32>
  %m2 = "onnx.MatMul"(%a, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %p = "onnx.Add"(%m2, %c) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  return %g, %p : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Relu after the sum; a GELU that another op also reads stays apart (the
// sum is still the product's epilogue).
// CHECK-LABEL: func.func @relu_and_shared_sum
// CHECK: %[[R:.*]] = ortc.matmul_bias %{{.*}} {activation = "relu"
// CHECK: %[[S:.*]] = ortc.matmul_bias %{{.*}} {activation = "none"
// CHECK: %[[G:.*]] = ortc.gelu %[[S]]
// CHECK: "onnx.Mul"(%[[S]], %[[G]])
func.func @relu_and_shared_sum(%a: tensor<4x8xf32>, %b: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x16xf32>} : () -> tensor<8x16xf32>
  %m = "onnx.MatMul"(%a, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = "onnx.Add"(%m, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %r = "onnx.Relu"(%s) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %m2 = "onnx.MatMul"(%a, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s2 = "onnx.Add"(%m2, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %g = ortc.gelu %s2 {approximate = "none"} : tensor<4x16xf32> -> tensor<4x16xf32>
  %u = "onnx.Mul"(%s2, %g) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %r, %u : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Left alone: a product another op reads too, a bias that broadcasts
// across rows instead of the last dim, a batched B, and a bias [N] whose N
// is not the product's.
// CHECK-LABEL: func.func @not_fused
// CHECK-NOT: ortc.matmul_bias
// CHECK: return
func.func @not_fused(%a: tensor<4x8xf32>, %a3: tensor<2x4x8xf32>, %w3: tensor<2x8x16xf32>,
                     %b: tensor<16xf32>, %col: tensor<4x1xf32>, %one: tensor<1xf32>)
    -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<2x4x16xf32>, tensor<4x16xf32>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x16xf32>} : () -> tensor<8x16xf32>
  %m = "onnx.MatMul"(%a, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = "onnx.Add"(%m, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %m2 = "onnx.MatMul"(%a, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s2 = "onnx.Add"(%m2, %col) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  %m3 = "onnx.MatMul"(%a3, %w3) : (tensor<2x4x8xf32>, tensor<2x8x16xf32>) -> tensor<2x4x16xf32>
  %s3 = "onnx.Add"(%m3, %b) : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %m4 = "onnx.MatMul"(%a, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s4 = "onnx.Add"(%m4, %one) : (tensor<4x16xf32>, tensor<1xf32>) -> tensor<4x16xf32>
  return %m, %s, %s2, %s3, %s4 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<2x4x16xf32>, tensor<4x16xf32>
}

// -----

// GPT-2's Conv1D: a Gemm with no C, reshaped, then GELU (tanh form): the
// GELU goes into a matmul_bias with a zero bias that the Reshape reads; a
// Gemm with C [N] read by a Relu takes C as its bias.
// CHECK-LABEL: func.func @gemm_activation
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[C:.*]]: tensor<16xf32>)
// CHECK-DAG: %[[W:.*]] = "onnx.Constant"() <{value = dense<5.000000e-01> : tensor<8x16xf32>}>
// CHECK-DAG: %[[Z:.*]] = "onnx.Constant"() <{value = dense<0.000000e+00> : tensor<16xf32>}>
// CHECK: %[[G:.*]] = ortc.matmul_bias %[[A]], %[[W]], %[[Z]] {activation = "gelu_tanh", alpha = 1.000000e+00 : f32, trans_b = false} : tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
// CHECK: %[[R:.*]] = "onnx.Reshape"(%[[G]], %{{.*}}) <{allowzero = 0 : i64}> : (tensor<4x16xf32>, tensor<3xi64>) -> tensor<1x4x16xf32>
// CHECK: %[[P:.*]] = ortc.matmul_bias %[[A]], %[[W]], %[[C]] {activation = "relu", alpha = 1.000000e+00 : f32, trans_b = false}
// CHECK-NOT: onnx.Gemm
// CHECK-NOT: ortc.gelu
// CHECK-NOT: onnx.Relu
// CHECK: return %[[R]], %[[P]]
func.func @gemm_activation(%a: tensor<4x8xf32>, %c: tensor<16xf32>) -> (tensor<1x4x16xf32>, tensor<4x16xf32>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x16xf32>} : () -> tensor<8x16xf32>
  %shape = "onnx.Constant"() {value = dense<[1, 4, 16]> : tensor<3xi64>} : () -> tensor<3xi64>
  %none = "onnx.NoValue"() : () -> none
  %g = "onnx.Gemm"(%a, %w, %none) {alpha = 1.0 : f32, beta = 1.0 : f32, transA = 0 : i64, transB = 0 : i64} : (tensor<4x8xf32>, tensor<8x16xf32>, none) -> tensor<4x16xf32>
  %r = "onnx.Reshape"(%g, %shape) : (tensor<4x16xf32>, tensor<3xi64>) -> tensor<1x4x16xf32>
  %y = ortc.gelu %r {approximate = "tanh"} : tensor<1x4x16xf32> -> tensor<1x4x16xf32>
  %p = "onnx.Gemm"(%a, %w, %c) {alpha = 1.0 : f32, beta = 1.0 : f32} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %q = "onnx.Relu"(%p) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y, %q : tensor<1x4x16xf32>, tensor<4x16xf32>
}

// -----

// torch's Linear: a Gemm with transB (B [N, K], here K != N) and C [N],
// read by a Relu, becomes a matmul_bias with trans_b, N taken from B's
// first dim.
// CHECK-LABEL: func.func @gemm_trans_b
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[WT:.*]]: tensor<16x8xf32>, %[[C:.*]]: tensor<16xf32>)
// CHECK: %[[Y:.*]] = ortc.matmul_bias %[[A]], %[[WT]], %[[C]] {activation = "relu", alpha = 1.000000e+00 : f32, trans_b = true} : tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32> -> tensor<4x16xf32>
// CHECK-NOT: onnx.Gemm
// CHECK-NOT: onnx.Relu
// CHECK: return %[[Y]]
func.func @gemm_trans_b(%a: tensor<4x8xf32>, %wt: tensor<16x8xf32>, %c: tensor<16xf32>) -> tensor<4x16xf32> {
  %g = "onnx.Gemm"(%a, %wt, %c) {transB = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %y = "onnx.Relu"(%g) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// Left as they are: a Gemm with transA, one with alpha 2, one with C of
// [M, N], one whose Reshape has a second reader, and one with no activation.
// CHECK-LABEL: func.func @gemm_left_alone
// CHECK-NOT: ortc.matmul_bias
// CHECK-COUNT-5: "onnx.Gemm"
func.func @gemm_left_alone(%a: tensor<4x8xf32>, %at: tensor<8x4xf32>, %w: tensor<8x16xf32>, %c2: tensor<4x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<4x16xf32>) {
  %shape = "onnx.Constant"() {value = dense<[1, 4, 16]> : tensor<3xi64>} : () -> tensor<3xi64>
  %none = "onnx.NoValue"() : () -> none
  %t = "onnx.Gemm"(%at, %w, %none) {transA = 1 : i64} : (tensor<8x4xf32>, tensor<8x16xf32>, none) -> tensor<4x16xf32>
  %t1 = "onnx.Relu"(%t) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %s = "onnx.Gemm"(%a, %w, %none) {alpha = 2.0 : f32} : (tensor<4x8xf32>, tensor<8x16xf32>, none) -> tensor<4x16xf32>
  %s1 = "onnx.Relu"(%s) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %m = "onnx.Gemm"(%a, %w, %c2) : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %m1 = "onnx.Relu"(%m) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %g = "onnx.Gemm"(%a, %w, %none) : (tensor<4x8xf32>, tensor<8x16xf32>, none) -> tensor<4x16xf32>
  %r = "onnx.Reshape"(%g, %shape) : (tensor<4x16xf32>, tensor<3xi64>) -> tensor<1x4x16xf32>
  %y = ortc.gelu %r {approximate = "tanh"} : tensor<1x4x16xf32> -> tensor<1x4x16xf32>
  %n = "onnx.Gemm"(%a, %w, %none) : (tensor<4x8xf32>, tensor<8x16xf32>, none) -> tensor<4x16xf32>
  return %t1, %s1, %m1, %y, %r, %n : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<4x16xf32>
}

// -----

// A transformer's skip connection: the projection's product, its bias, then
// the Add of the layer's input: one matmul_bias with the input as residual,
// made at the Add (the residual may be defined after the product).
// CHECK-LABEL: func.func @residual
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<16xf32>, %[[R:.*]]: tensor<4x16xf32>)
// CHECK: %[[Y:.*]] = ortc.matmul_bias %[[A]], %{{.*}}, %[[B]] residual %[[R]] : tensor<4x16xf32> {activation = "none", alpha = 1.000000e+00 : f32, trans_b = false} : tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32> -> tensor<4x16xf32>
// CHECK-NOT: onnx.Add
// CHECK: return %[[Y]]
func.func @residual(%a: tensor<4x8xf32>, %b: tensor<16xf32>, %r: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x16xf32>} : () -> tensor<8x16xf32>
  %m = "onnx.MatMul"(%a, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s = "onnx.Add"(%m, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %y = "onnx.Add"(%r, %s) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y : tensor<4x16xf32>
}

// -----

// No residual: after an activation (it would come before it), an Add that
// broadcasts, and a product the Add reads twice.
// CHECK-LABEL: func.func @no_residual
// CHECK-NOT: residual
// CHECK-COUNT-3: "onnx.Add"
func.func @no_residual(%a: tensor<4x8xf32>, %b: tensor<16xf32>, %r: tensor<4x16xf32>, %row: tensor<1x16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x16xf32>} : () -> tensor<8x16xf32>
  %m1 = "onnx.MatMul"(%a, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s1 = "onnx.Add"(%m1, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %g1 = "onnx.Relu"(%s1) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %y1 = "onnx.Add"(%g1, %r) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  %m2 = "onnx.MatMul"(%a, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s2 = "onnx.Add"(%m2, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %y2 = "onnx.Add"(%s2, %row) : (tensor<4x16xf32>, tensor<1x16xf32>) -> tensor<4x16xf32>
  %m3 = "onnx.MatMul"(%a, %w) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %s3 = "onnx.Add"(%m3, %b) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %y3 = "onnx.Add"(%s3, %s3) : (tensor<4x16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %y1, %y2, %y3 : tensor<4x16xf32>, tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// Two vector-matrix products of [N] results added: each is a bias for the
// other's product. The first match takes the Add and the other product
// stays a MatMul that feeds it (rewriting both erased the Add twice).
// CHECK-LABEL: func.func @shared_add
// CHECK-SAME: (%[[U:.*]]: tensor<8xf32>, %[[V:.*]]: tensor<8xf32>, %[[W:.*]]: tensor<8x8xf32>)
// CHECK-DAG: %[[Q:.*]] = "onnx.MatMul"(%[[V]], %[[W]])
// CHECK-DAG: %[[S:.*]] = ortc.matmul_bias %[[U]], %[[W]], %[[Q]] {activation = "relu"
// CHECK-NOT: onnx.Add
// CHECK: return %[[S]]
func.func @shared_add(%u: tensor<8xf32>, %v: tensor<8xf32>, %w: tensor<8x8xf32>) -> tensor<8xf32> {
  %0 = "onnx.MatMul"(%u, %w) : (tensor<8xf32>, tensor<8x8xf32>) -> tensor<8xf32>
  %1 = "onnx.MatMul"(%v, %w) : (tensor<8xf32>, tensor<8x8xf32>) -> tensor<8xf32>
  %2 = "onnx.Add"(%0, %1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %3 = "onnx.Relu"(%2) : (tensor<8xf32>) -> tensor<8xf32>
  return %3 : tensor<8xf32>
}
