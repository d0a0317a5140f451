// RUN: ortc-opt %s -split-input-file -verify-diagnostics -onnx-shape-inference | FileCheck %s
// RUN: not ortc-opt %s -split-input-file -onnx-shape-inference="strict-shapes=1" 2>&1 | FileCheck %s --check-prefix=STRICT

// Declared shapes as onnxruntime treats them: one that contradicts what the
// graph computes is a warning and the computed shape wins; with
// strict-shapes it is an error. A declared static dim where inference has a
// dynamic one refines it either way.

// A declared rank that the graph does not produce.
// CHECK-LABEL: func.func @declared_rank
// CHECK: %[[R:.*]] = "onnx.Relu"(%{{.*}}) : (tensor<?x4x8xf32>) -> tensor<?x4x8xf32>
// CHECK: return %[[R]] : tensor<?x4x8xf32>
// STRICT: error: result 0 is declared as 'tensor<1x?xf32>' but its inputs give 'tensor<?x4x8xf32>'{{$}}
func.func @declared_rank(%x: tensor<?x4x8xf32>) -> tensor<1x?xf32> {
  // expected-warning @+1 {{result 0 is declared as 'tensor<1x?xf32>' but its inputs give 'tensor<?x4x8xf32>'; using the inferred shape}}
  %0 = "onnx.Relu"(%x) : (tensor<?x4x8xf32>) -> tensor<1x?xf32>
  return %0 : tensor<1x?xf32>
}

// -----

// A declared static dim refines a dynamic one: no warning.
// CHECK-LABEL: func.func @declared_refines
// CHECK: "onnx.Relu"{{.*}} -> tensor<2x4xf32>
// STRICT-NOT: error: {{.*}}tensor<2x4xf32>
func.func @declared_refines(%x: tensor<?x4xf32>) -> tensor<2x4xf32> {
  %0 = "onnx.Relu"(%x) : (tensor<?x4xf32>) -> tensor<2x4xf32>
  return %0 : tensor<2x4xf32>
}

// -----

// Negative: an element type that contradicts inference is an error always.
// STRICT: error: result 0 is declared as 'tensor<2xi64>' but its inputs give 'tensor<2xf32>'
func.func @declared_element_type(%x: tensor<2xf32>) {
  // expected-error @+1 {{result 0 is declared as 'tensor<2xi64>' but its inputs give 'tensor<2xf32>'}}
  %0 = "onnx.Relu"(%x) : (tensor<2xf32>) -> tensor<2xi64>
  return
}
