// RUN: ortc-opt %s -split-input-file -verify-diagnostics -onnx-shape-inference | FileCheck %s
// RUN: not ortc-opt %s -split-input-file -onnx-shape-inference="strict-shapes=1" 2>&1 | FileCheck %s --check-prefix=STRICT

// Declared types as onnxruntime treats them: one that contradicts what the
// graph computes is a warning and the computed type wins (in a body too;
// a graph output's element type excepted); with strict-shapes it is an error. A declared static dim where inference has a
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

// An intermediate's declared element type is a hint too: the inferred type
// wins (the declared one is still an error under strict-shapes).
// CHECK-LABEL: func.func @declared_element_type
// CHECK: %[[R:.*]] = "onnx.Relu"(%{{.*}}) : (tensor<2xf32>) -> tensor<2xf32>
// CHECK: "onnx.Neg"(%[[R]]) : (tensor<2xf32>) -> tensor<2xf32>
// STRICT: error: result 0 is declared as 'tensor<2xi64>' but its inputs give 'tensor<2xf32>'
func.func @declared_element_type(%x: tensor<2xf32>) -> tensor<*xf32> {
  // expected-warning @+1 {{result 0 is declared as 'tensor<2xi64>' but its inputs give 'tensor<2xf32>'; using the inferred type}}
  %0 = "onnx.Relu"(%x) : (tensor<2xf32>) -> tensor<2xi64>
  %1 = "onnx.Neg"(%0) : (tensor<2xi64>) -> tensor<*xf32>
  return %1 : tensor<*xf32>
}

// -----

// A Loop result declared with another element type and no rank (as
// converters write a while loop's outputs): what the body yields wins. Its scan
// output stacks the rows the body yields.
// CHECK-LABEL: func.func @declared_loop_result
// CHECK: %[[L:.*]]:2 = "onnx.Loop"
// CHECK: -> (tensor<i64>, tensor<?x?x3xf32>)
// CHECK: "onnx.Relu"(%[[L]]#1) : (tensor<?x?x3xf32>) -> tensor<?x?x3xf32>
// STRICT: error: result 1 is declared as 'tensor<*xi32>' but its inputs give 'tensor<?x?x3xf32>'
func.func @declared_loop_result(%x: tensor<?x3xf32>, %n: tensor<i64>) -> tensor<*xf32> {
  %true = "onnx.Constant"() <{value = dense<true> : tensor<i1>}> : () -> tensor<i1>
  %zero = "onnx.Constant"() <{value = dense<0> : tensor<i64>}> : () -> tensor<i64>
  // expected-warning @+1 {{result 1 is declared as 'tensor<*xi32>' but its inputs give 'tensor<?x?x3xf32>'; using the inferred type}}
  %l:2 = "onnx.Loop"(%n, %true, %zero) ({
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<i64>):
    %y = "onnx.Relu"(%x) : (tensor<?x3xf32>) -> tensor<*xf32>
    "onnx.Yield"(%c, %acc, %y) : (tensor<i1>, tensor<i64>, tensor<*xf32>) -> ()
  }) : (tensor<i64>, tensor<i1>, tensor<i64>) -> (tensor<i64>, tensor<*xi32>)
  %r = "onnx.Relu"(%l#1) : (tensor<*xi32>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

// Negative: a graph output's element type is the compiled model's contract,
// so a contradiction there is an error always.
// STRICT: error: result 0 is declared as 'tensor<2xi64>' but its inputs give 'tensor<2xf32>'
func.func @declared_output_element_type(%x: tensor<2xf32>) -> tensor<2xi64> {
  // expected-error @+1 {{result 0 is declared as 'tensor<2xi64>' but its inputs give 'tensor<2xf32>'}}
  %0 = "onnx.Relu"(%x) : (tensor<2xf32>) -> tensor<2xi64>
  return %0 : tensor<2xi64>
}
