// RUN: ortc-opt %s -split-input-file -cuda-fold-gemm-epilogue | FileCheck %s

// A Linear of a torch export: MatMul by a weight matrix, then the bias over
// the last dim, then a ReLU: one GEMM with the RELU_BIAS epilogue.
// CHECK-LABEL: func.func @matmul_bias_relu
// CHECK-SAME: (%[[X:.*]]: tensor<?x?x64xf32>, %[[W:.*]]: tensor<64x32xf32>, %[[B:.*]]: tensor<32xf32>)
// CHECK: %[[Y:.*]] = ortc.matmul_bias %[[X]], %[[W]], %[[B]] {activation = "relu", alpha = 1.000000e+00 : f32, trans_b = false}
// CHECK-NOT: onnx.
// CHECK: return %[[Y]]
func.func @matmul_bias_relu(%x: tensor<?x?x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<?x?x32xf32> {
  %0 = "onnx.MatMul"(%x, %w) : (tensor<?x?x64xf32>, tensor<64x32xf32>) -> tensor<?x?x32xf32>
  %1 = "onnx.Add"(%b, %0) : (tensor<32xf32>, tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %2 = "onnx.Relu"(%1) : (tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  return %2 : tensor<?x?x32xf32>
}

// -----

// Gemm with a [N] C, beta 1 and trans_b: the bias epilogue keeps alpha and
// the transpose; the tanh GELU after it joins; f16 keeps its type.
// CHECK-LABEL: func.func @gemm_bias_gelu_tanh
// CHECK: %[[Y:.*]] = ortc.matmul_bias %{{.*}}, %{{.*}}, %{{.*}} {activation = "gelu_tanh", alpha = 5.000000e-01 : f32, trans_b = true} : tensor<8x16xf16>, tensor<4x16xf16>, tensor<4xf16> -> tensor<8x4xf16>
// CHECK-NOT: onnx.Gemm
// CHECK: return %[[Y]]
func.func @gemm_bias_gelu_tanh(%a: tensor<8x16xf16>, %b: tensor<4x16xf16>, %c: tensor<4xf16>) -> tensor<8x4xf16> {
  %0 = "onnx.Gemm"(%a, %b, %c) {alpha = 0.5 : f32, transB = 1 : i64} : (tensor<8x16xf16>, tensor<4x16xf16>, tensor<4xf16>) -> tensor<8x4xf16>
  %1 = ortc.gelu %0 {approximate = "tanh"} : tensor<8x4xf16> -> tensor<8x4xf16>
  return %1 : tensor<8x4xf16>
}

// -----

// torch's addmm: Gemm(A, B) without C, then the bias.
// CHECK-LABEL: func.func @addmm
// CHECK-SAME: (%[[A:.*]]: tensor<?x16xf32>, %[[B:.*]]: tensor<16x4xf32>, %[[C:.*]]: tensor<4xf32>)
// CHECK: %[[Y:.*]] = ortc.matmul_bias %[[A]], %[[B]], %[[C]] {activation = "none", alpha = 1.000000e+00 : f32, trans_b = false}
// CHECK-NEXT: return %[[Y]]
func.func @addmm(%a: tensor<?x16xf32>, %b: tensor<16x4xf32>, %c: tensor<4xf32>) -> tensor<?x4xf32> {
  %none = "onnx.NoValue"() : () -> none
  %0 = "onnx.Gemm"(%a, %b, %none) : (tensor<?x16xf32>, tensor<16x4xf32>, none) -> tensor<?x4xf32>
  %1 = "onnx.Add"(%0, %c) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %1 : tensor<?x4xf32>
}

// -----

// The erf GELU is not what cuBLASLt computes: it stays after a BIAS epilogue.
// CHECK-LABEL: func.func @erf_gelu_stays
// CHECK: %[[P:.*]] = ortc.matmul_bias {{.*}} {activation = "none"
// CHECK: %[[G:.*]] = ortc.gelu %[[P]] {approximate = "none"}
// CHECK: return %[[G]]
func.func @erf_gelu_stays(%x: tensor<4x64xf32>, %w: tensor<64x32xf32>, %b: tensor<32xf32>) -> tensor<4x32xf32> {
  %0 = "onnx.MatMul"(%x, %w) : (tensor<4x64xf32>, tensor<64x32xf32>) -> tensor<4x32xf32>
  %1 = "onnx.Add"(%0, %b) : (tensor<4x32xf32>, tensor<32xf32>) -> tensor<4x32xf32>
  %2 = ortc.gelu %1 {approximate = "none"} : tensor<4x32xf32> -> tensor<4x32xf32>
  return %2 : tensor<4x32xf32>
}

// -----

// Left alone: a bias that is not [N] (a full matrix), a product read twice,
// a batched B, an integer product, a Gemm with beta 2 or a transposed A, and
// an activation whose input is read elsewhere (the sum is folded, the Relu stays).
// CHECK-LABEL: func.func @not_epilogues
// CHECK-COUNT-4: onnx.MatMul
// CHECK-COUNT-2: onnx.Gemm
// CHECK: %[[S:.*]] = ortc.matmul_bias {{.*}} {activation = "none"
// CHECK: "onnx.Relu"(%[[S]])
func.func @not_epilogues(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>, %m: tensor<4x8xf32>, %v: tensor<8xf32>,
                         %bx: tensor<2x4x8xf32>, %bw: tensor<2x8x8xf32>, %ix: tensor<4x8xi32>, %iw: tensor<8x8xi32>, %iv: tensor<8xi32>)
    -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xi32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %0 = "onnx.MatMul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %1 = "onnx.Add"(%0, %m) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  %2 = "onnx.MatMul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %3 = "onnx.Add"(%2, %v) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %4 = "onnx.MatMul"(%bx, %bw) : (tensor<2x4x8xf32>, tensor<2x8x8xf32>) -> tensor<2x4x8xf32>
  %5 = "onnx.Add"(%4, %v) : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4x8xf32>
  %6 = "onnx.MatMul"(%ix, %iw) : (tensor<4x8xi32>, tensor<8x8xi32>) -> tensor<4x8xi32>
  %7 = "onnx.Add"(%6, %iv) : (tensor<4x8xi32>, tensor<8xi32>) -> tensor<4x8xi32>
  %8 = "onnx.Gemm"(%x, %w, %v) {beta = 2.0 : f32} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %9 = "onnx.Gemm"(%m, %w, %v) {transA = 1 : i64} : (tensor<4x8xf32>, tensor<8x8xf32>, tensor<8xf32>) -> tensor<8x8xf32>
  %10 = "onnx.MatMul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32>
  %11 = "onnx.Add"(%10, %v) : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  %12 = "onnx.Relu"(%11) : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %1, %3, %2, %5, %7, %8, %9, %11, %12 : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>, tensor<2x4x8xf32>, tensor<4x8xi32>, tensor<4x8xf32>, tensor<8x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}

// -----

// Two Linear + ReLU layers in a row (examples/tiny_mlp.onnx): the second
// MatMul reads the first layer's Relu, which folding the first layer
// replaces; the second fold must read its operand from the op, not a value
// kept from before (it crashed on the README's example).
// CHECK-LABEL: func.func @two_layers
// CHECK-SAME: (%[[X:.*]]: tensor<?x8xf32>, %[[W1:.*]]: tensor<8x16xf32>, %[[B1:.*]]: tensor<16xf32>, %[[W2:.*]]: tensor<16x4xf32>, %[[B2:.*]]: tensor<4xf32>)
// CHECK: %[[H:.*]] = ortc.matmul_bias %[[X]], %[[W1]], %[[B1]] {activation = "relu"
// CHECK: %[[Y:.*]] = ortc.matmul_bias %[[H]], %[[W2]], %[[B2]] {activation = "relu"
// CHECK-NOT: onnx.
// CHECK: return %[[Y]]
func.func @two_layers(%x: tensor<?x8xf32>, %w1: tensor<8x16xf32>, %b1: tensor<16xf32>, %w2: tensor<16x4xf32>, %b2: tensor<4xf32>) -> tensor<?x4xf32> {
  %0 = "onnx.MatMul"(%x, %w1) : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %1 = "onnx.Add"(%0, %b1) : (tensor<?x16xf32>, tensor<16xf32>) -> tensor<?x16xf32>
  %2 = "onnx.Relu"(%1) : (tensor<?x16xf32>) -> tensor<?x16xf32>
  %3 = "onnx.Gemm"(%2, %w2, %b2) : (tensor<?x16xf32>, tensor<16x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  %4 = "onnx.Relu"(%3) : (tensor<?x4xf32>) -> tensor<?x4xf32>
  return %4 : tensor<?x4xf32>
}

// -----

// Two vector-matrix products of [N] results added: each Add operand is a
// bias for the other's product. The first product takes the Add; the
// second stays a MatMul and is that epilogue's bias. An Add of a product to
// itself is no bias.
// CHECK-LABEL: func.func @shared_add
// CHECK-SAME: (%[[U:.*]]: tensor<8xf32>, %[[V:.*]]: tensor<8xf32>, %[[W:.*]]: tensor<8x8xf32>)
// CHECK: %[[Q:.*]] = "onnx.MatMul"(%[[V]], %[[W]])
// CHECK: %[[S:.*]] = ortc.matmul_bias %[[U]], %[[W]], %[[Q]] {activation = "none"
// CHECK: %[[P:.*]] = "onnx.MatMul"(%[[U]], %[[W]])
// CHECK: %[[D:.*]] = "onnx.Add"(%[[P]], %[[P]])
// CHECK: return %[[S]], %[[D]]
func.func @shared_add(%u: tensor<8xf32>, %v: tensor<8xf32>, %w: tensor<8x8xf32>) -> (tensor<8xf32>, tensor<8xf32>) {
  %0 = "onnx.MatMul"(%u, %w) : (tensor<8xf32>, tensor<8x8xf32>) -> tensor<8xf32>
  %1 = "onnx.MatMul"(%v, %w) : (tensor<8xf32>, tensor<8x8xf32>) -> tensor<8xf32>
  %2 = "onnx.Add"(%0, %1) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %3 = "onnx.MatMul"(%u, %w) : (tensor<8xf32>, tensor<8x8xf32>) -> tensor<8xf32>
  %4 = "onnx.Add"(%3, %3) : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %2, %4 : tensor<8xf32>, tensor<8xf32>
}
