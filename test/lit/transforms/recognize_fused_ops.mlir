// RUN: ortc-opt %s -split-input-file -onnx-recognize-fused-ops -onnx-dce | FileCheck %s
// The ortc ops print and parse back.
// RUN: ortc-opt %s -split-input-file -onnx-recognize-fused-ops -onnx-dce | ortc-opt -split-input-file | FileCheck %s

// LayerNorm as PyTorch exports it before opset 17 (axes as an input, opset 18).
// CHECK-LABEL: func.func @layer_norm
// CHECK-SAME: (%[[X:.*]]: tensor<2x8x16xf32>)
// CHECK-DAG: %[[G:.*]] = "onnx.Constant"() <{value = dense<2.000000e+00> : tensor<16xf32>}>
// CHECK-DAG: %[[B:.*]] = "onnx.Constant"() <{value = dense<1.000000e+00> : tensor<16xf32>}>
// CHECK: %[[LN:.*]] = ortc.layer_norm %[[X]] scale %[[G]] : tensor<16xf32> bias %[[B]] : tensor<16xf32> {axis = 2 : i64, epsilon = 9.99999974E-6 : f32} : tensor<2x8x16xf32> -> tensor<2x8x16xf32>
// CHECK-NOT: "onnx.ReduceMean"
// CHECK-NOT: "onnx.Sqrt"
// CHECK: return %[[LN]]
func.func @layer_norm(%x: tensor<2x8x16xf32>) -> tensor<2x8x16xf32> {
  %axes = "onnx.Constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %mean = "onnx.ReduceMean"(%x, %axes) : (tensor<2x8x16xf32>, tensor<1xi64>) -> tensor<2x8x1xf32>
  %d = "onnx.Sub"(%x, %mean) : (tensor<2x8x16xf32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  %two = "onnx.Constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %sq = "onnx.Pow"(%d, %two) : (tensor<2x8x16xf32>, tensor<f32>) -> tensor<2x8x16xf32>
  %var = "onnx.ReduceMean"(%sq, %axes) : (tensor<2x8x16xf32>, tensor<1xi64>) -> tensor<2x8x1xf32>
  %eps = "onnx.Constant"() {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %ve = "onnx.Add"(%var, %eps) : (tensor<2x8x1xf32>, tensor<f32>) -> tensor<2x8x1xf32>
  %std = "onnx.Sqrt"(%ve) : (tensor<2x8x1xf32>) -> tensor<2x8x1xf32>
  %n = "onnx.Div"(%d, %std) : (tensor<2x8x16xf32>, tensor<2x8x1xf32>) -> tensor<2x8x16xf32>
  %g = "onnx.Constant"() {value = dense<2.0> : tensor<16xf32>} : () -> tensor<16xf32>
  %y = "onnx.Mul"(%n, %g) : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  %b = "onnx.Constant"() {value = dense<1.0> : tensor<16xf32>} : () -> tensor<16xf32>
  %z = "onnx.Add"(%y, %b) : (tensor<2x8x16xf32>, tensor<16xf32>) -> tensor<2x8x16xf32>
  return %z : tensor<2x8x16xf32>
}

// -----

// Negative: a mean over a leading axis is not a layer norm; neither is a
// normalization whose variance uses another centring.
// CHECK-LABEL: func.func @not_layer_norm
// CHECK-NOT: ortc.layer_norm
// CHECK: "onnx.Div"
func.func @not_layer_norm(%x: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %axes = "onnx.Constant"() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %mean = "onnx.ReduceMean"(%x, %axes) : (tensor<2x8xf32>, tensor<1xi64>) -> tensor<1x8xf32>
  %d = "onnx.Sub"(%x, %mean) : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  %sq = "onnx.Mul"(%d, %d) : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  %var = "onnx.ReduceMean"(%sq, %axes) : (tensor<2x8xf32>, tensor<1xi64>) -> tensor<1x8xf32>
  %eps = "onnx.Constant"() {value = dense<1.0e-5> : tensor<f32>} : () -> tensor<f32>
  %ve = "onnx.Add"(%var, %eps) : (tensor<1x8xf32>, tensor<f32>) -> tensor<1x8xf32>
  %std = "onnx.Sqrt"(%ve) : (tensor<1x8xf32>) -> tensor<1x8xf32>
  %n = "onnx.Div"(%d, %std) : (tensor<2x8xf32>, tensor<1x8xf32>) -> tensor<2x8xf32>
  return %n : tensor<2x8xf32>
}

// -----

// The ONNX ops with the same meaning convert directly.
// CHECK-LABEL: func.func @onnx_ops
// CHECK: ortc.layer_norm %{{.*}} scale %{{.*}} : tensor<16xf32> {axis = -1 : i64, epsilon = 1.000000e-03 : f32}
// CHECK: ortc.gelu %{{.*}} {approximate = "tanh"}
func.func @onnx_ops(%x: tensor<4x16xf32>, %g: tensor<16xf32>) -> (tensor<4x16xf32>, tensor<4x16xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %0:3 = "onnx.LayerNormalization"(%x, %g, %none) {epsilon = 1.0e-3 : f32} : (tensor<4x16xf32>, tensor<16xf32>, none) -> (tensor<4x16xf32>, none, none)
  %1 = "onnx.Gelu"(%x) {approximate = "tanh"} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  return %0#0, %1 : tensor<4x16xf32>, tensor<4x16xf32>
}

// -----

// GELU with erf in the three orders converters emit.
// CHECK-LABEL: func.func @gelu
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK: %[[G1:.*]] = ortc.gelu %[[X]] {approximate = "none"}
// CHECK: %[[G2:.*]] = ortc.gelu %[[X]] {approximate = "none"}
// CHECK: %[[G3:.*]] = ortc.gelu %[[X]] {approximate = "none"}
// CHECK-NOT: "onnx.Erf"
// CHECK: return %[[G1]], %[[G2]], %[[G3]]
func.func @gelu(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %sqrt2 = "onnx.Constant"() {value = dense<1.41421354> : tensor<f32>} : () -> tensor<f32>
  %inv = "onnx.Constant"() {value = dense<0.707106769> : tensor<f32>} : () -> tensor<f32>
  %one = "onnx.Constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = "onnx.Constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  // (x * (1 + erf(x / sqrt2))) * 0.5
  %a0 = "onnx.Div"(%x, %sqrt2) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %a1 = "onnx.Erf"(%a0) : (tensor<8xf32>) -> tensor<8xf32>
  %a2 = "onnx.Add"(%a1, %one) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %a3 = "onnx.Mul"(%x, %a2) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %a4 = "onnx.Mul"(%a3, %half) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  // (0.5 * x) * (1 + erf(x * 1/sqrt2))
  %b0 = "onnx.Mul"(%x, %inv) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %b1 = "onnx.Erf"(%b0) : (tensor<8xf32>) -> tensor<8xf32>
  %b2 = "onnx.Add"(%one, %b1) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %bh = "onnx.Mul"(%x, %half) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %b3 = "onnx.Mul"(%bh, %b2) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  // ((1 + erf(x / sqrt2)) * 0.5) * x
  %c0 = "onnx.Div"(%x, %sqrt2) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %c1 = "onnx.Erf"(%c0) : (tensor<8xf32>) -> tensor<8xf32>
  %c2 = "onnx.Add"(%c1, %one) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %c3 = "onnx.Mul"(%c2, %half) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %c4 = "onnx.Mul"(%c3, %x) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %a4, %b3, %c4 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Negative: erf(x / 2) is not GELU.
// CHECK-LABEL: func.func @not_gelu
// CHECK-NOT: ortc.gelu
// CHECK: "onnx.Erf"
func.func @not_gelu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %c2 = "onnx.Constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %one = "onnx.Constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = "onnx.Constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %0 = "onnx.Div"(%x, %c2) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = "onnx.Erf"(%0) : (tensor<8xf32>) -> tensor<8xf32>
  %2 = "onnx.Add"(%1, %one) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %3 = "onnx.Mul"(%x, %2) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %4 = "onnx.Mul"(%3, %half) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %4 : tensor<8xf32>
}

// -----

// Attention: softmax(q k^T / sqrt(d) + mask) v.
// CHECK-LABEL: func.func @attention
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8x16xf32>, %[[K:.*]]: tensor<2x4x8x16xf32>, %[[V:.*]]: tensor<2x4x8x16xf32>, %[[M:.*]]: tensor<2x1x1x8xf32>)
// CHECK: %[[A:.*]] = ortc.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] : tensor<2x1x1x8xf32> {scale = 2.500000e-01 : f32}
// CHECK-NOT: "onnx.Softmax"
// CHECK: return %[[A]]
func.func @attention(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x8x16xf32>, %v: tensor<2x4x8x16xf32>, %mask: tensor<2x1x1x8xf32>) -> tensor<2x4x8x16xf32> {
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<2x4x8x16xf32>) -> tensor<2x4x16x8xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<2x4x8x16xf32>, tensor<2x4x16x8xf32>) -> tensor<2x4x8x8xf32>
  %four = "onnx.Constant"() {value = dense<4.0> : tensor<f32>} : () -> tensor<f32>
  %scaled = "onnx.Div"(%s, %four) : (tensor<2x4x8x8xf32>, tensor<f32>) -> tensor<2x4x8x8xf32>
  %masked = "onnx.Add"(%scaled, %mask) : (tensor<2x4x8x8xf32>, tensor<2x1x1x8xf32>) -> tensor<2x4x8x8xf32>
  %p = "onnx.Softmax"(%masked) {axis = -1 : i64} : (tensor<2x4x8x8xf32>) -> tensor<2x4x8x8xf32>
  %o = "onnx.MatMul"(%p, %v) : (tensor<2x4x8x8xf32>, tensor<2x4x8x16xf32>) -> tensor<2x4x8x16xf32>
  return %o : tensor<2x4x8x16xf32>
}

// -----

// Negative: a softmax over another axis, and a transpose that is not of the
// last two dims, are not attention.
// CHECK-LABEL: func.func @not_attention
// CHECK-NOT: ortc.attention
// CHECK-COUNT-2: "onnx.Softmax"
func.func @not_attention(%q: tensor<4x8x16xf32>, %k: tensor<4x8x16xf32>, %v: tensor<4x8x16xf32>, %k2: tensor<8x4x16xf32>) -> (tensor<4x8x16xf32>, tensor<4x8x16xf32>) {
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  %p = "onnx.Softmax"(%s) {axis = 1 : i64} : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %o = "onnx.MatMul"(%p, %v) : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  %kt2 = "onnx.Transpose"(%k2) {perm = array<i64: 1, 2, 0>} : (tensor<8x4x16xf32>) -> tensor<4x16x8xf32>
  %s2 = "onnx.MatMul"(%q, %kt2) : (tensor<4x8x16xf32>, tensor<4x16x8xf32>) -> tensor<4x8x8xf32>
  %p2 = "onnx.Softmax"(%s2) {axis = -1 : i64} : (tensor<4x8x8xf32>) -> tensor<4x8x8xf32>
  %o2 = "onnx.MatMul"(%p2, %v) : (tensor<4x8x8xf32>, tensor<4x8x16xf32>) -> tensor<4x8x16xf32>
  return %o, %o2 : tensor<4x8x16xf32>, tensor<4x8x16xf32>
}

// -----

// Attention as torch's SDPA export writes it (dynamo, opset 18): q and k^T
// each scaled by sqrt(scale), k^T through Reshape-Transpose-Reshape over the
// merged heads, and the probabilities' NaNs (fully masked rows) set to 0.
// CHECK-LABEL: func.func @sdpa_export
// CHECK-SAME: (%[[Q:.*]]: tensor<1x4x8x16xf32>, %[[K:.*]]: tensor<1x4x8x16xf32>, %[[V:.*]]: tensor<1x4x8x16xf32>, %[[M:.*]]: tensor<1x1x8x8xf32>)
// CHECK: %[[A:.*]] = ortc.attention %[[Q]], %[[K]], %[[V]] mask %[[M]] : tensor<1x1x8x8xf32> {nan_to_zero, scale = 2.500000e-01 : f32}
// CHECK-NOT: "onnx.Softmax"
// CHECK-NOT: "onnx.IsNaN"
// CHECK: return %[[A]]
func.func @sdpa_export(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>, %mask: tensor<1x1x8x8xf32>) -> tensor<1x4x8x16xf32> {
  %merged = "onnx.Constant"() {value = dense<[4, 8, 16]> : tensor<3xi64>} : () -> tensor<3xi64>
  %split = "onnx.Constant"() {value = dense<[1, 4, 16, 8]> : tensor<4xi64>} : () -> tensor<4xi64>
  %root = "onnx.Constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %zero = "onnx.Constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %k3 = "onnx.Reshape"(%k, %merged) : (tensor<1x4x8x16xf32>, tensor<3xi64>) -> tensor<4x8x16xf32>
  %kt3 = "onnx.Transpose"(%k3) {perm = array<i64: 0, 2, 1>} : (tensor<4x8x16xf32>) -> tensor<4x16x8xf32>
  %kt = "onnx.Reshape"(%kt3, %split) : (tensor<4x16x8xf32>, tensor<4xi64>) -> tensor<1x4x16x8xf32>
  %qs = "onnx.Mul"(%q, %root) : (tensor<1x4x8x16xf32>, tensor<f32>) -> tensor<1x4x8x16xf32>
  %kts = "onnx.Mul"(%kt, %root) : (tensor<1x4x16x8xf32>, tensor<f32>) -> tensor<1x4x16x8xf32>
  %s = "onnx.MatMul"(%qs, %kts) : (tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
  %masked = "onnx.Add"(%s, %mask) : (tensor<1x4x8x8xf32>, tensor<1x1x8x8xf32>) -> tensor<1x4x8x8xf32>
  %p = "onnx.Softmax"(%masked) {axis = -1 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %nan = "onnx.IsNaN"(%p) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xi1>
  %guarded = "onnx.Where"(%nan, %zero, %p) : (tensor<1x4x8x8xi1>, tensor<f32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o = "onnx.MatMul"(%guarded, %v) : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// The heads split out of the projections ([B, S, H, D] transposed to
// [B, H, S, D]) and merged back after: attention reads and writes the
// untransposed tensors (sequence_first) and no Transpose is left.
// CHECK-LABEL: func.func @sequence_first
// CHECK-SAME: (%[[Q:.*]]: tensor<1x8x4x16xf32>, %[[K:.*]]: tensor<1x8x4x16xf32>, %[[V:.*]]: tensor<1x8x4x16xf32>)
// CHECK: %[[A:.*]] = ortc.attention %[[Q]], %[[K]], %[[V]] {scale = 2.500000e-01 : f32, sequence_first} : tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32> -> tensor<1x8x4x16xf32>
// CHECK-NOT: onnx.Transpose
// CHECK: return %[[A]]
func.func @sequence_first(%q: tensor<1x8x4x16xf32>, %k: tensor<1x8x4x16xf32>, %v: tensor<1x8x4x16xf32>) -> tensor<1x8x4x16xf32> {
  %qh = "onnx.Transpose"(%q) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
  %kh = "onnx.Transpose"(%k) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
  %vh = "onnx.Transpose"(%v) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
  %kt = "onnx.Transpose"(%kh) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x8x16xf32>) -> tensor<1x4x16x8xf32>
  %s = "onnx.MatMul"(%qh, %kt) : (tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
  %four = "onnx.Constant"() {value = dense<4.0> : tensor<f32>} : () -> tensor<f32>
  %scaled = "onnx.Div"(%s, %four) : (tensor<1x4x8x8xf32>, tensor<f32>) -> tensor<1x4x8x8xf32>
  %p = "onnx.Softmax"(%scaled) {axis = -1 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o = "onnx.MatMul"(%p, %vh) : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %ot = "onnx.Transpose"(%o) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x4x8x16xf32>) -> tensor<1x8x4x16xf32>
  return %ot : tensor<1x8x4x16xf32>
}

// -----

// The output read as it is (no Transpose back): heads-first as before.
// CHECK-LABEL: func.func @heads_first_output
// CHECK: ortc.attention
// CHECK-NOT: sequence_first
// CHECK-SAME: -> tensor<1x4x8x16xf32>
func.func @heads_first_output(%q: tensor<1x8x4x16xf32>, %k: tensor<1x8x4x16xf32>, %v: tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32> {
  %qh = "onnx.Transpose"(%q) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
  %kh = "onnx.Transpose"(%k) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
  %vh = "onnx.Transpose"(%v) {perm = array<i64: 0, 2, 1, 3>} : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
  %kt = "onnx.Transpose"(%kh) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x8x16xf32>) -> tensor<1x4x16x8xf32>
  %s = "onnx.MatMul"(%qh, %kt) : (tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
  %p = "onnx.Softmax"(%s) {axis = -1 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o = "onnx.MatMul"(%p, %vh) : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o : tensor<1x4x8x16xf32>
}

// -----

// Negative: a guard that puts something other than 0 for NaN, a k^T whose
// reshapes move elements between the last dims, and a q that broadcasts
// over k's heads are not attention.
// CHECK-LABEL: func.func @not_sdpa
// CHECK-NOT: ortc.attention
// CHECK-COUNT-3: "onnx.Softmax"
func.func @not_sdpa(%q: tensor<1x4x8x16xf32>, %k: tensor<1x4x8x16xf32>, %v: tensor<1x4x8x16xf32>, %q1: tensor<1x1x8x16xf32>) -> (tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>) {
  %one = "onnx.Constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %kt = "onnx.Transpose"(%k) {perm = array<i64: 0, 1, 3, 2>} : (tensor<1x4x8x16xf32>) -> tensor<1x4x16x8xf32>
  %s = "onnx.MatMul"(%q, %kt) : (tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
  %p = "onnx.Softmax"(%s) {axis = -1 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %nan = "onnx.IsNaN"(%p) : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xi1>
  %guarded = "onnx.Where"(%nan, %one, %p) : (tensor<1x4x8x8xi1>, tensor<f32>, tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o = "onnx.MatMul"(%guarded, %v) : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %flat = "onnx.Constant"() {value = dense<[4, 16, 8]> : tensor<3xi64>} : () -> tensor<3xi64>
  %split = "onnx.Constant"() {value = dense<[1, 4, 16, 8]> : tensor<4xi64>} : () -> tensor<4xi64>
  %k3 = "onnx.Reshape"(%k, %flat) : (tensor<1x4x8x16xf32>, tensor<3xi64>) -> tensor<4x16x8xf32>
  %kt3 = "onnx.Transpose"(%k3) {perm = array<i64: 0, 2, 1>} : (tensor<4x16x8xf32>) -> tensor<4x8x16xf32>
  %kt2 = "onnx.Reshape"(%kt3, %split) : (tensor<4x8x16xf32>, tensor<4xi64>) -> tensor<1x4x16x8xf32>
  %s2 = "onnx.MatMul"(%q, %kt2) : (tensor<1x4x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
  %p2 = "onnx.Softmax"(%s2) {axis = -1 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o2 = "onnx.MatMul"(%p2, %v) : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  %s3 = "onnx.MatMul"(%q1, %kt) : (tensor<1x1x8x16xf32>, tensor<1x4x16x8xf32>) -> tensor<1x4x8x8xf32>
  %p3 = "onnx.Softmax"(%s3) {axis = -1 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  %o3 = "onnx.MatMul"(%p3, %v) : (tensor<1x4x8x8xf32>, tensor<1x4x8x16xf32>) -> tensor<1x4x8x16xf32>
  return %o, %o2, %o3 : tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>, tensor<1x4x8x16xf32>
}

// -----

// GELU with tanh, as exported for gelu_new / gelu_pytorch_tanh.
// CHECK-LABEL: func.func @tanh_gelu
// CHECK-SAME: (%[[X:.*]]: tensor<8xf32>)
// CHECK: %[[G:.*]] = ortc.gelu %[[X]] {approximate = "tanh"}
// CHECK-NOT: "onnx.Tanh"
// CHECK: return %[[G]]
func.func @tanh_gelu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %three = "onnx.Constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %c = "onnx.Constant"() {value = dense<0.044715> : tensor<f32>} : () -> tensor<f32>
  %k = "onnx.Constant"() {value = dense<0.797884583> : tensor<f32>} : () -> tensor<f32>
  %one = "onnx.Constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = "onnx.Constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %0 = "onnx.Pow"(%x, %three) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = "onnx.Mul"(%c, %0) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = "onnx.Add"(%x, %1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %3 = "onnx.Mul"(%k, %2) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %4 = "onnx.Tanh"(%3) : (tensor<8xf32>) -> tensor<8xf32>
  %5 = "onnx.Add"(%one, %4) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %6 = "onnx.Mul"(%half, %x) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %7 = "onnx.Mul"(%6, %5) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %7 : tensor<8xf32>
}

// -----

// Negative: a cubic coefficient other than 0.044715 is not GELU.
// CHECK-LABEL: func.func @not_tanh_gelu
// CHECK-NOT: ortc.gelu
// CHECK: "onnx.Tanh"
func.func @not_tanh_gelu(%x: tensor<8xf32>) -> tensor<8xf32> {
  %three = "onnx.Constant"() {value = dense<3.0> : tensor<f32>} : () -> tensor<f32>
  %c = "onnx.Constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %k = "onnx.Constant"() {value = dense<0.797884583> : tensor<f32>} : () -> tensor<f32>
  %one = "onnx.Constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %half = "onnx.Constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %0 = "onnx.Pow"(%x, %three) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = "onnx.Mul"(%c, %0) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %2 = "onnx.Add"(%x, %1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %3 = "onnx.Mul"(%k, %2) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %4 = "onnx.Tanh"(%3) : (tensor<8xf32>) -> tensor<8xf32>
  %5 = "onnx.Add"(%one, %4) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %6 = "onnx.Mul"(%half, %x) : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %7 = "onnx.Mul"(%6, %5) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %7 : tensor<8xf32>
}
