// ortc.matmul_bias's verifier: what every EP that builds the op (the CPU
// EP's cpu-fuse-matmul-epilogue, the CUDA EP's cuda-fold-gemm-epilogue)
// must make, checked after each of their passes.
// RUN: ortc-opt %s -split-input-file -verify-diagnostics | FileCheck %s

// CHECK-LABEL: func.func @valid
// CHECK: ortc.matmul_bias %{{.*}}, %{{.*}}, %{{.*}} residual %{{.*}} : tensor<?x4xf32> {activation = "gelu_tanh", alpha = 5.000000e-01 : f32, trans_b = true}
func.func @valid(%a: tensor<?x8xf32>, %b: tensor<4x8xf32>, %bias: tensor<4xf32>, %r: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %0 = ortc.matmul_bias %a, %b, %bias residual %r : tensor<?x4xf32> {activation = "gelu_tanh", alpha = 0.5 : f32, trans_b = true} : tensor<?x8xf32>, tensor<4x8xf32>, tensor<4xf32> -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @unknown_activation(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>, %bias: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'ortc.matmul_bias' op unknown activation 'sigmoid' (none, relu, gelu or gelu_tanh)}}
  %0 = ortc.matmul_bias %a, %b, %bias {activation = "sigmoid", alpha = 1.0 : f32, trans_b = false} : tensor<2x8xf32>, tensor<8x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// With trans_b, N is b's first dim: a bias of b's last dim is wrong.
func.func @bias_of_the_wrong_dim(%a: tensor<2x8xf32>, %b: tensor<4x8xf32>, %bias: tensor<8xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'ortc.matmul_bias' op has a bias of 8 elements for N = 4 (b's dim -2, trans_b)}}
  %0 = ortc.matmul_bias %a, %b, %bias {activation = "none", alpha = 1.0 : f32, trans_b = true} : tensor<2x8xf32>, tensor<4x8xf32>, tensor<8xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @bias_not_a_vector(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>, %bias: tensor<2x4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'ortc.matmul_bias' op needs a bias [N], got 'tensor<2x4xf32>'}}
  %0 = ortc.matmul_bias %a, %b, %bias {activation = "none", alpha = 1.0 : f32, trans_b = false} : tensor<2x8xf32>, tensor<8x4xf32>, tensor<2x4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @residual_of_another_type(%a: tensor<2x8xf32>, %b: tensor<8x4xf32>, %bias: tensor<4xf32>, %r: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'ortc.matmul_bias' op needs a residual of the output's type 'tensor<2x4xf32>', got 'tensor<4xf32>'}}
  %0 = ortc.matmul_bias %a, %b, %bias residual %r : tensor<4xf32> {activation = "none", alpha = 1.0 : f32, trans_b = false} : tensor<2x8xf32>, tensor<8x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @mixed_element_types(%a: tensor<2x8xf16>, %b: tensor<8x4xf32>, %bias: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'ortc.matmul_bias' op needs a, b and bias of the output's element type 'f32', got 'tensor<2x8xf16>'}}
  %0 = ortc.matmul_bias %a, %b, %bias {activation = "none", alpha = 1.0 : f32, trans_b = false} : tensor<2x8xf16>, tensor<8x4xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

func.func @b_a_vector(%a: tensor<2x8xf32>, %b: tensor<8xf32>, %bias: tensor<4xf32>) -> tensor<2x4xf32> {
  // expected-error @+1 {{'ortc.matmul_bias' op needs b of rank 2 or more, got 'tensor<8xf32>'}}
  %0 = ortc.matmul_bias %a, %b, %bias {activation = "none", alpha = 1.0 : f32, trans_b = false} : tensor<2x8xf32>, tensor<8xf32>, tensor<4xf32> -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}
