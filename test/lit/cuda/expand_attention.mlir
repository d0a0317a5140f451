// RUN: ortc-opt %s -split-input-file -cuda-expand-attention | FileCheck %s

// Two GEMMs around a softmax: k is transposed, the scores scaled and masked.
// CHECK-LABEL: func.func @masked
// CHECK-SAME: (%[[Q:.*]]: tensor<2x4x8x16xf32>, %[[K:.*]]: tensor<2x4x10x16xf32>, %[[V:.*]]: tensor<2x4x10x32xf32>, %[[M:.*]]: tensor<1x1x8x10xf32>)
// CHECK: %[[KT:.*]] = "onnx.Transpose"(%[[K]]) <{perm = array<i64: 0, 1, 3, 2>}> : (tensor<2x4x10x16xf32>) -> tensor<2x4x16x10xf32>
// CHECK: %[[S:.*]] = "onnx.MatMul"(%[[Q]], %[[KT]]) : {{.*}} -> tensor<2x4x8x10xf32>
// CHECK: %[[C:.*]] = "onnx.Constant"() <{value = dense<2.500000e-01> : tensor<f32>}>
// CHECK: %[[SS:.*]] = "onnx.Mul"(%[[S]], %[[C]])
// CHECK: %[[SM:.*]] = "onnx.Add"(%[[SS]], %[[M]])
// CHECK: %[[P:.*]] = "onnx.Softmax"(%[[SM]]) <{axis = -1 : i64}>
// CHECK: %[[Y:.*]] = "onnx.MatMul"(%[[P]], %[[V]]) : {{.*}} -> tensor<2x4x8x32xf32>
// CHECK: return %[[Y]]
func.func @masked(%q: tensor<2x4x8x16xf32>, %k: tensor<2x4x10x16xf32>, %v: tensor<2x4x10x32xf32>, %m: tensor<1x1x8x10xf32>) -> tensor<2x4x8x32xf32> {
  %0 = ortc.attention %q, %k, %v mask %m : tensor<1x1x8x10xf32> {scale = 0.25 : f32} : tensor<2x4x8x16xf32>, tensor<2x4x10x16xf32>, tensor<2x4x10x32xf32> -> tensor<2x4x8x32xf32>
  return %0 : tensor<2x4x8x32xf32>
}

// -----

// Scale 1 and no mask: nothing between the product and the softmax.
// CHECK-LABEL: func.func @plain
// CHECK: %[[S:.*]] = "onnx.MatMul"
// CHECK-NOT: onnx.Mul
// CHECK-NOT: onnx.Add
// CHECK: "onnx.Softmax"(%[[S]])
// CHECK-NOT: onnx.IsNaN
func.func @plain(%q: tensor<?x8x16xf16>, %k: tensor<?x8x16xf16>, %v: tensor<?x8x16xf16>) -> tensor<?x8x16xf16> {
  %0 = ortc.attention %q, %k, %v {scale = 1.0 : f32} : tensor<?x8x16xf16>, tensor<?x8x16xf16>, tensor<?x8x16xf16> -> tensor<?x8x16xf16>
  return %0 : tensor<?x8x16xf16>
}

// -----

// nan_to_zero: the probabilities' NaNs (a fully masked row) become 0 before
// the second GEMM, as the SDPA export's Where(IsNaN(p), 0, p).
// CHECK-LABEL: func.func @nan_to_zero
// CHECK: %[[P:.*]] = "onnx.Softmax"
// CHECK: %[[Z:.*]] = "onnx.Constant"() <{value = dense<0.000000e+00> : tensor<f32>}>
// CHECK: %[[N:.*]] = "onnx.IsNaN"(%[[P]]) : (tensor<4x8x10xf32>) -> tensor<4x8x10xi1>
// CHECK: %[[G:.*]] = "onnx.Where"(%[[N]], %[[Z]], %[[P]])
// CHECK: %[[Y:.*]] = "onnx.MatMul"(%[[G]], %{{.*}})
// CHECK: return %[[Y]]
func.func @nan_to_zero(%q: tensor<4x8x16xf32>, %k: tensor<4x10x16xf32>, %v: tensor<4x10x16xf32>, %m: tensor<8x10xf32>) -> tensor<4x8x16xf32> {
  %0 = ortc.attention %q, %k, %v mask %m : tensor<8x10xf32> {nan_to_zero, scale = 0.25 : f32} : tensor<4x8x16xf32>, tensor<4x10x16xf32>, tensor<4x10x16xf32> -> tensor<4x8x16xf32>
  return %0 : tensor<4x8x16xf32>
}

// -----

// sequence_first: q, k and v transposed to [B, H, S, D] first, the product
// transposed back.
// CHECK-LABEL: func.func @sequence_first
// CHECK-SAME: (%[[Q:.*]]: tensor<1x8x4x16xf32>, %[[K:.*]]: tensor<1x8x4x16xf32>, %[[V:.*]]: tensor<1x8x4x32xf32>)
// CHECK: %[[QH:.*]] = "onnx.Transpose"(%[[Q]]) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x8x4x16xf32>) -> tensor<1x4x8x16xf32>
// CHECK: %[[KH:.*]] = "onnx.Transpose"(%[[K]]) <{perm = array<i64: 0, 2, 1, 3>}>
// CHECK: %[[VH:.*]] = "onnx.Transpose"(%[[V]]) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x8x4x32xf32>) -> tensor<1x4x8x32xf32>
// CHECK: %[[KT:.*]] = "onnx.Transpose"(%[[KH]]) <{perm = array<i64: 0, 1, 3, 2>}>
// CHECK: "onnx.MatMul"(%[[QH]], %[[KT]])
// CHECK: %[[P:.*]] = "onnx.Softmax"
// CHECK: %[[O:.*]] = "onnx.MatMul"(%[[P]], %[[VH]]) : {{.*}} -> tensor<1x4x8x32xf32>
// CHECK: %[[Y:.*]] = "onnx.Transpose"(%[[O]]) <{perm = array<i64: 0, 2, 1, 3>}> : (tensor<1x4x8x32xf32>) -> tensor<1x8x4x32xf32>
// CHECK: return %[[Y]]
func.func @sequence_first(%q: tensor<1x8x4x16xf32>, %k: tensor<1x8x4x16xf32>, %v: tensor<1x8x4x32xf32>) -> tensor<1x8x4x32xf32> {
  %0 = ortc.attention %q, %k, %v {scale = 0.25 : f32, sequence_first} : tensor<1x8x4x16xf32>, tensor<1x8x4x16xf32>, tensor<1x8x4x32xf32> -> tensor<1x8x4x32xf32>
  return %0 : tensor<1x8x4x32xf32>
}
