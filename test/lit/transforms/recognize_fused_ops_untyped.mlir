// RUN: ortc-opt %s -split-input-file -onnx-recognize-fused-ops -onnx-dce | FileCheck %s

// Every fused-op pattern, fed a value whose type inference did not reach
// (!onnx.unknown): the fused ops take tensors only, so the plain ops stay
// (and the EPs judge them) rather than the rewrite producing invalid IR.

// The layer norm subgraph whose final value has no type.
// CHECK-LABEL: func.func @layer_norm_untyped_result
// CHECK-NOT: ortc.layer_norm
// CHECK: %[[N:.*]] = "onnx.Div"
// CHECK: "onnx.Mul"(%[[N]], %{{.*}}) : (tensor<2x8x16xf32>, tensor<16xf32>) -> !onnx.unknown
func.func @layer_norm_untyped_result(%x: tensor<2x8x16xf32>) -> !onnx.unknown {
  %axes = "onnx.Constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %mean = "onnx.ReduceMean"(%x, %axes) : (tensor<2x8x16xf32>, tensor<1xi64>) -> tensor<2x8x1xf32>
  %d = "onnx.Sub"(%x, %mean) : (tensor<2x8x16xf32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  %sq = "onnx.Mul"(%d, %d) : (tensor<2x8x16xf32>, tensor<2x8x16xf32>) -> tensor<2x8x16xf32>
  %var = "onnx.ReduceMean"(%sq, %axes) : (tensor<2x8x16xf32>, tensor<1xi64>) -> tensor<2x8x1xf32>
  %eps = "onnx.Constant"() {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %ve = "onnx.Add"(%var, %eps) : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %std = "onnx.Sqrt"(%ve) : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %n = "onnx.Div"(%d, %std) : (tensor<2x8x16xf32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  %g = "onnx.Constant"() {value = dense<2.0> : tensor<16xf32>} : () -> tensor<16xf32>
  %y = "onnx.Mul"(%n, %g) : (tensor<2x8x16xf32>, tensor<16xf32>) -> !onnx.unknown
  return %y : !onnx.unknown
}

// -----

// The ONNX ops whose input has no type.
// CHECK-LABEL: func.func @onnx_ops_untyped
// CHECK-NOT: ortc.
// CHECK: "onnx.LayerNormalization"
// CHECK: "onnx.Gelu"
func.func @onnx_ops_untyped(%x: !onnx.unknown, %g: tensor<16xf32>) -> (!onnx.unknown, !onnx.unknown) {
  %none = "onnx.NoValue"() : () -> none
  %0:3 = "onnx.LayerNormalization"(%x, %g, %none) {epsilon = 1.0e-3 : f32} : (!onnx.unknown, tensor<16xf32>, none) -> (!onnx.unknown, none, none)
  %1 = "onnx.Gelu"(%x) {approximate = "tanh"} : (!onnx.unknown) -> !onnx.unknown
  return %0#0, %1 : !onnx.unknown, !onnx.unknown
}

// -----

// GELU with erf and with tanh over an untyped x.
// CHECK-LABEL: func.func @gelu_untyped
// CHECK-NOT: ortc.gelu
// CHECK: "onnx.Erf"
// CHECK: "onnx.Tanh"
func.func @gelu_untyped(%x: !onnx.unknown) -> (!onnx.unknown, !onnx.unknown) {
  %sqrt2 = "onnx.Constant"() {value = dense<1.41421354> : tensor<f32>} : () -> tensor<f32>
  %one = "onnx.Constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = "onnx.Constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %a0 = "onnx.Div"(%x, %sqrt2) : (!onnx.unknown, tensor<f32>) -> !onnx.unknown
  %a1 = "onnx.Erf"(%a0) : (!onnx.unknown) -> !onnx.unknown
  %a2 = "onnx.Add"(%a1, %one) : (!onnx.unknown, tensor<f32>) -> !onnx.unknown
  %a3 = "onnx.Mul"(%x, %a2) : (!onnx.unknown, !onnx.unknown) -> !onnx.unknown
  %a4 = "onnx.Mul"(%a3, %half) : (!onnx.unknown, tensor<f32>) -> !onnx.unknown
  %three = "onnx.Constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %c = "onnx.Constant"() {value = dense<0.044715> : tensor<f32>} : () -> tensor<f32>
  %k = "onnx.Constant"() {value = dense<0.797884583> : tensor<f32>} : () -> tensor<f32>
  %0 = "onnx.Pow"(%x, %three) : (!onnx.unknown, tensor<f32>) -> !onnx.unknown
  %1 = "onnx.Mul"(%c, %0) : (tensor<f32>, !onnx.unknown) -> !onnx.unknown
  %2 = "onnx.Add"(%x, %1) : (!onnx.unknown, !onnx.unknown) -> !onnx.unknown
  %3 = "onnx.Mul"(%k, %2) : (tensor<f32>, !onnx.unknown) -> !onnx.unknown
  %4 = "onnx.Tanh"(%3) : (!onnx.unknown) -> !onnx.unknown
  %5 = "onnx.Add"(%one, %4) : (tensor<f32>, !onnx.unknown) -> !onnx.unknown
  %6 = "onnx.Mul"(%half, %x) : (tensor<f32>, !onnx.unknown) -> !onnx.unknown
  %7 = "onnx.Mul"(%6, %5) : (!onnx.unknown, !onnx.unknown) -> !onnx.unknown
  return %a4, %7 : !onnx.unknown, !onnx.unknown
}

// -----

// Attention whose mask and output have no type.
// CHECK-LABEL: func.func @attention_untyped_mask
// CHECK-NOT: ortc.attention
// CHECK: "onnx.Softmax"
func.func @attention_untyped_mask(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>, %mask: !onnx.unknown) -> !onnx.unknown {
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x8x16xf32>) -> tensor<2x4x16x8xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %four = "onnx.Constant"() {value = dense<4.0> : tensor<f32>} : () -> tensor<f32>
  %scaled = "onnx.Div"(%s, %four) : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %masked = "onnx.Add"(%scaled, %mask) : (tensor<2x4x8x8xf32>, !onnx.unknown) -> tensor<2x4x8x8xf32>
  %p = "onnx.Softmax"(%masked) {axis = -1 : i64} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %o = "onnx.MatMul"(%p, %v) : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> !onnx.unknown
  return %o : !onnx.unknown
}
