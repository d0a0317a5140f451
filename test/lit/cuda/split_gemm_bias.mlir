// RUN: ortc-opt %s -split-input-file -cuda-split-gemm-bias | FileCheck %s

// The bias leaves the Gemm: cuBLAS computes alpha * A B^T, beta scales C in
// an elementwise Mul, and the Add joins what follows.
// CHECK-LABEL: func.func @gemm_bias
// CHECK-SAME: (%[[A:.*]]: tensor<?x64xf32>, %[[B:.*]]: tensor<32x64xf32>, %[[C:.*]]: tensor<32xf32>)
// CHECK: %[[NONE:.*]] = "onnx.NoValue"() : () -> none
// CHECK: %[[P:.*]] = "onnx.Gemm"(%[[A]], %[[B]], %[[NONE]]) <{alpha = 5.000000e-01 : f32, beta = 1.000000e+00 : f32, transA = 0 : i64, transB = 1 : i64}>
// CHECK: %[[BETA:.*]] = "onnx.Constant"() <{value = dense<2.000000e+00> : tensor<f32>}>
// CHECK: %[[SC:.*]] = "onnx.Mul"(%[[C]], %[[BETA]]) : (tensor<32xf32>, tensor<f32>) -> tensor<32xf32>
// CHECK: %[[Y:.*]] = "onnx.Add"(%[[P]], %[[SC]]) : (tensor<?x32xf32>, tensor<32xf32>) -> tensor<?x32xf32>
// CHECK: %[[R:.*]] = "onnx.Relu"(%[[Y]])
// CHECK: return %[[R]]
func.func @gemm_bias(%a: tensor<?x64xf32>, %b: tensor<32x64xf32>, %c: tensor<32xf32>) -> tensor<?x32xf32> {
  %0 = "onnx.Gemm"(%a, %b, %c) {alpha = 0.5 : f32, beta = 2.0 : f32, transB = 1 : i64} : (tensor<?x64xf32>, tensor<32x64xf32>, tensor<32xf32>) -> tensor<?x32xf32>
  %1 = "onnx.Relu"(%0) : (tensor<?x32xf32>) -> tensor<?x32xf32>
  return %1 : tensor<?x32xf32>
}

// -----

// beta 1: no Mul; f16 keeps its type.
// CHECK-LABEL: func.func @beta_one
// CHECK: %[[P:.*]] = "onnx.Gemm"
// CHECK-NOT: onnx.Mul
// CHECK: "onnx.Add"(%[[P]], %{{.*}}) : (tensor<4x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
func.func @beta_one(%a: tensor<4x16xf16>, %b: tensor<16x8xf16>, %c: tensor<4x8xf16>) -> tensor<4x8xf16> {
  %0 = "onnx.Gemm"(%a, %b, %c) : (tensor<4x16xf16>, tensor<16x8xf16>, tensor<4x8xf16>) -> tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

// beta 0 drops C; a Gemm without C is left alone.
// CHECK-LABEL: func.func @beta_zero
// CHECK: %[[P:.*]] = "onnx.Gemm"
// CHECK-NOT: onnx.Add
// CHECK: return %[[P]]
func.func @beta_zero(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>, %c: tensor<8xf32>) -> tensor<4x8xf32> {
  %0 = "onnx.Gemm"(%a, %b, %c) {beta = 0.0 : f32} : (tensor<4x16xf32>, tensor<16x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

// CHECK-LABEL: func.func @no_bias
// CHECK: %[[N:.*]] = "onnx.NoValue"
// CHECK-NEXT: %[[P:.*]] = "onnx.Gemm"(%{{.*}}, %{{.*}}, %[[N]])
// CHECK-NEXT: return %[[P]]
func.func @no_bias(%a: tensor<4x16xf32>, %b: tensor<16x8xf32>) -> tensor<4x8xf32> {
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.Gemm"(%a, %b, %n) : (tensor<4x16xf32>, tensor<16x8xf32>, none) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}
