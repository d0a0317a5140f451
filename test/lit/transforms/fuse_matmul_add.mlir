// RUN: ortc-opt %s -split-input-file -onnx-fuse-matmul-add | FileCheck %s

// CHECK-LABEL: func.func @matmul_bias
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<8x16xf32>, %[[C:.*]]: tensor<16xf32>)
// CHECK-NEXT: %[[G:.*]] = "onnx.Gemm"(%[[A]], %[[B]], %[[C]]) {{.*}}: (tensor<4x8xf32>, tensor<8x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT: return %[[G]]
func.func @matmul_bias(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16xf32>) -> tensor<4x16xf32> {
  %0 = "onnx.MatMul"(%a, %b) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %1 = "onnx.Add"(%c, %0) : (tensor<16xf32>, tensor<4x16xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

// A Gemm without C takes the bias.
// CHECK-LABEL: func.func @gemm_bias
// CHECK-SAME: (%[[A:.*]]: tensor<4x8xf32>, %[[B:.*]]: tensor<16x8xf32>, %[[C:.*]]: tensor<4x1xf32>)
// CHECK: %[[G:.*]] = "onnx.Gemm"(%[[A]], %[[B]], %[[C]]) <{alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64}>
// CHECK-NOT: "onnx.Add"
// CHECK: return %[[G]]
func.func @gemm_bias(%a: tensor<4x8xf32>, %b: tensor<16x8xf32>, %c: tensor<4x1xf32>) -> tensor<4x16xf32> {
  %none = "onnx.NoValue"() : () -> none
  %0 = "onnx.Gemm"(%a, %b, %none) {transB = 1 : i64, alpha = 0.5 : f32} : (tensor<4x8xf32>, tensor<16x8xf32>, none) -> tensor<4x16xf32>
  %1 = "onnx.Add"(%0, %c) : (tensor<4x16xf32>, tensor<4x1xf32>) -> tensor<4x16xf32>
  return %1 : tensor<4x16xf32>
}

// -----

// Negative: batched (3-D) MatMul, a product with a second user, an Add that
// broadcasts past [M, N], integer types, and unknown shapes all stay.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: "onnx.Gemm"
// CHECK-COUNT-5: "onnx.Add"
func.func @kept(%a3: tensor<2x4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<16xf32>, %a: tensor<4x8xf32>, %big: tensor<3x4x16xf32>, %ai: tensor<4x8xi32>, %bi: tensor<8x16xi32>, %ci: tensor<16xi32>, %au: tensor<?x8xf32>, %cu: tensor<*xf32>) {
  %0 = "onnx.MatMul"(%a3, %b) : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %1 = "onnx.Add"(%0, %c) : (tensor<2x4x16xf32>, tensor<16xf32>) -> tensor<2x4x16xf32>
  %2 = "onnx.MatMul"(%a, %b) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %3 = "onnx.Add"(%2, %c) : (tensor<4x16xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %4 = "onnx.Relu"(%2) : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %5 = "onnx.MatMul"(%a, %b) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %6 = "onnx.Add"(%5, %big) : (tensor<4x16xf32>, tensor<3x4x16xf32>) -> tensor<3x4x16xf32>
  %7 = "onnx.MatMul"(%ai, %bi) : (tensor<4x8xi32>, tensor<8x16xi32>) -> tensor<4x16xi32>
  %8 = "onnx.Add"(%7, %ci) : (tensor<4x16xi32>, tensor<16xi32>) -> tensor<4x16xi32>
  %9 = "onnx.MatMul"(%au, %b) : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<?x16xf32>
  %10 = "onnx.Add"(%9, %cu) : (tensor<?x16xf32>, tensor<*xf32>) -> tensor<*xf32>
  return
}
