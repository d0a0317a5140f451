// RUN: ortc-opt %s -split-input-file -verify-diagnostics -onnx-shape-inference | FileCheck %s

// Shape rules of the attention, decoder-state, normalization, sampling and
// loss ops: each result follows from the inputs' dims and attributes, so the
// static dims below come out static and the dynamic ones stay `?` (with an
// expression for the symbolic analysis) rather than unknown.

// Attention, 4-D with a past of P positions: Y [B, Hq, Sq, Dv], present
// key/value [B, Hkv, P + Skv, D], qk output [B, Hq, Sq, P + Skv].
// CHECK-LABEL: func.func @attention_4d_past
// CHECK: "onnx.Attention"{{.*}} -> (tensor<?x8x?x32xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x32xf32>, tensor<?x8x?x?xf32>)
func.func @attention_4d_past(%q: tensor<?x8x?x64xf32>, %k: tensor<?x2x?x64xf32>, %v: tensor<?x2x?x32xf32>, %pk: tensor<?x2x?x64xf32>, %pv: tensor<?x2x?x32xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %y:4 = "onnx.Attention"(%q, %k, %v, %none, %pk, %pv, %none) {qk_matmul_output_mode = 0 : i64} : (tensor<?x8x?x64xf32>, tensor<?x2x?x64xf32>, tensor<?x2x?x32xf32>, none, tensor<?x2x?x64xf32>, tensor<?x2x?x32xf32>, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return %y#0, %y#1, %y#2, %y#3 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// -----

// Attention, 3-D: the head counts split the hidden sizes; without a past
// the present key and value have the new positions alone.
// CHECK-LABEL: func.func @attention_3d
// CHECK: "onnx.Attention"{{.*}} -> (tensor<2x?x96xf32>, tensor<2x3x5x16xf32>, tensor<2x3x5x8xf32>, none)
func.func @attention_3d(%q: tensor<2x?x192xf32>, %k: tensor<2x5x48xf32>, %v: tensor<2x5x24xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %y:4 = "onnx.Attention"(%q, %k, %v, %none, %none, %none, %none) {q_num_heads = 12 : i64, kv_num_heads = 3 : i64} : (tensor<2x?x192xf32>, tensor<2x5x48xf32>, tensor<2x5x24xf32>, none, none, none, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, none)
  return %y#0, %y#1, %y#2 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// -----

// Negative: Q, K and V of different ranks.
func.func @attention_ranks(%q: tensor<2x4x8xf32>, %k: tensor<2x1x4x8xf32>) -> tensor<*xf32> {
  %none = "onnx.NoValue"() : () -> none
  // expected-error @+1 {{Q, K and V must all be rank 4 [B, H, S, D] or all rank 3 [B, S, H*D]}}
  %y:4 = "onnx.Attention"(%q, %k, %k, %none, %none, %none, %none) : (tensor<2x4x8xf32>, tensor<2x1x4x8xf32>, tensor<2x1x4x8xf32>, none, none, none, none) -> (tensor<*xf32>, none, none, none)
  return %y#0 : tensor<*xf32>
}

// -----

// LinearAttention and CausalConvWithState: the outputs and their states.
// CHECK-LABEL: func.func @decoder_state
// CHECK: "onnx.LinearAttention"{{.*}} -> (tensor<?x?x64xf32>, tensor<?x2x16x16xf32>)
// CHECK: "onnx.CausalConvWithState"{{.*}} -> (tensor<?x6x?xf32>, tensor<?x6x3xf32>)
func.func @decoder_state(%q: tensor<?x?x64xf32>, %k: tensor<?x?x32xf32>, %v: tensor<?x?x32xf32>, %x: tensor<?x6x?xf32>, %w: tensor<6x1x4xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %o:2 = "onnx.LinearAttention"(%q, %k, %v, %none, %none, %none) {q_num_heads = 4 : i64, kv_num_heads = 2 : i64, update_rule = "linear"} : (tensor<?x?x64xf32>, tensor<?x?x32xf32>, tensor<?x?x32xf32>, none, none, none) -> (tensor<*xf32>, tensor<*xf32>)
  %c:2 = "onnx.CausalConvWithState"(%x, %w, %none, %none) : (tensor<?x6x?xf32>, tensor<6x1x4xf32>, none, none) -> (tensor<*xf32>, tensor<*xf32>)
  return %o#0, %o#1, %c#0, %c#1 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// -----

// LayerNormalization's statistics keep the dims before the axis; RMS
// normalization, LRN and CumProd keep their input's.
// CHECK-LABEL: func.func @normalizations
// CHECK: "onnx.LayerNormalization"{{.*}} -> (tensor<?x5x8xf32>, tensor<?x1x1xf32>, tensor<?x1x1xf32>)
// CHECK: "onnx.RMSNormalization"{{.*}} -> tensor<?x5x8xf32>
// CHECK: "onnx.LRN"{{.*}} -> tensor<?x5x8xf32>
// CHECK: "onnx.CumProd"{{.*}} -> tensor<?x5x8xf32>
func.func @normalizations(%x: tensor<?x5x8xf32>, %s: tensor<5x8xf32>, %axis: tensor<i64>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %ln:3 = "onnx.LayerNormalization"(%x, %s, %none) {axis = 1 : i64} : (tensor<?x5x8xf32>, tensor<5x8xf32>, none) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  %rms = "onnx.RMSNormalization"(%x, %s) {axis = 1 : i64} : (tensor<?x5x8xf32>, tensor<5x8xf32>) -> tensor<*xf32>
  %lrn = "onnx.LRN"(%x) {size = 3 : i64} : (tensor<?x5x8xf32>) -> tensor<*xf32>
  %cp = "onnx.CumProd"(%x, %axis) : (tensor<?x5x8xf32>, tensor<i64>) -> tensor<*xf32>
  return %ln#0, %ln#1, %ln#2, %rms, %lrn, %cp : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// -----

// GridSample takes the grid's positions, AffineGrid the size's, the block
// rearrangements scale channels against positions, RoiAlign gives one
// window per region.
// CHECK-LABEL: func.func @sampling
// CHECK: "onnx.GridSample"{{.*}} -> tensor<?x3x7x9xf32>
// CHECK: "onnx.AffineGrid"{{.*}} -> tensor<2x6x10x2xf32>
// CHECK: "onnx.SpaceToDepth"{{.*}} -> tensor<?x12x3x?xf32>
// CHECK: "onnx.DepthToSpace"{{.*}} -> tensor<?x1x12x?xf32>
// CHECK: "onnx.RoiAlign"{{.*}} -> tensor<?x3x4x5xf32>
func.func @sampling(%x: tensor<?x3x6x?xf32>, %grid: tensor<?x7x9x2xf32>, %theta: tensor<2x2x3xf32>, %rois: tensor<?x4xf32>, %idx: tensor<?xi64>, %d: tensor<?x4x6x?xf32>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %size = "onnx.Constant"() {value = dense<[2, 3, 6, 10]> : tensor<4xi64>} : () -> tensor<4xi64>
  %g = "onnx.GridSample"(%x, %grid) : (tensor<?x3x6x?xf32>, tensor<?x7x9x2xf32>) -> tensor<*xf32>
  %a = "onnx.AffineGrid"(%theta, %size) : (tensor<2x2x3xf32>, tensor<4xi64>) -> tensor<*xf32>
  %s = "onnx.SpaceToDepth"(%x) {blocksize = 2 : i64} : (tensor<?x3x6x?xf32>) -> tensor<*xf32>
  %t = "onnx.DepthToSpace"(%d) {blocksize = 2 : i64} : (tensor<?x4x6x?xf32>) -> tensor<*xf32>
  %r = "onnx.RoiAlign"(%x, %rois, %idx) {output_height = 4 : i64, output_width = 5 : i64} : (tensor<?x3x6x?xf32>, tensor<?x4xf32>, tensor<?xi64>) -> tensor<*xf32>
  return %g, %a, %s, %t, %r : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}

// -----

// The losses: the target's dims without a reduction, a scalar with one;
// SoftmaxCrossEntropyLoss's log_prob has the scores' dims.
// CHECK-LABEL: func.func @losses
// CHECK: "onnx.NegativeLogLikelihoodLoss"{{.*}} -> tensor<?x7xf32>
// CHECK: "onnx.SoftmaxCrossEntropyLoss"{{.*}} -> (tensor<f32>, tensor<?x5x7xf32>)
func.func @losses(%x: tensor<?x5x7xf32>, %t: tensor<?x7xi64>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %l = "onnx.NegativeLogLikelihoodLoss"(%x, %t, %none) {reduction = "none"} : (tensor<?x5x7xf32>, tensor<?x7xi64>, none) -> tensor<*xf32>
  %s:2 = "onnx.SoftmaxCrossEntropyLoss"(%x, %t, %none) : (tensor<?x5x7xf32>, tensor<?x7xi64>, none) -> (tensor<*xf32>, tensor<*xf32>)
  return %l, %s#0, %s#1 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>
}
