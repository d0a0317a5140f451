// RUN: ortc-opt %s -split-input-file -onnx-unify-branch-ranks | FileCheck %s

// A [1] or a [] that only broadcasting reads (AffineGrid's "1 / (D - 1) if
// D == 1 else 0.0"): the scalar branch yields it Unsqueezed to [1].
// CHECK-LABEL: func.func @scalar_or_one
// CHECK: %[[IF:.*]] = "onnx.If"
// CHECK: "onnx.Yield"(%{{.*}}) : (tensor<1xf32>) -> ()
// CHECK: %[[AXES:.*]] = "onnx.Constant"() <{value = dense<0> : tensor<1xi64>}>
// CHECK: %[[U:.*]] = "onnx.Unsqueeze"(%[[ZERO:.*]], %[[AXES]]) : (tensor<f32>, tensor<1xi64>) -> tensor<1xf32>
// CHECK: "onnx.Yield"(%[[U]]) : (tensor<1xf32>) -> ()
// CHECK: }) : (tensor<1xi1>) -> tensor<1xf32>
// CHECK: "onnx.Mul"(%{{.*}}, %[[IF]]) : (tensor<?xf32>, tensor<1xf32>) -> tensor<?xf32>
func.func @scalar_or_one(%c: tensor<1xi1>, %d: tensor<1xf32>, %x: tensor<?xf32>) -> tensor<*xf32> {
  %zero = "onnx.Constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
  %one = "onnx.Constant"() <{value = dense<1.0> : tensor<f32>}> : () -> tensor<f32>
  %r = "onnx.If"(%c) ({
    %q = "onnx.Div"(%one, %d) : (tensor<f32>, tensor<1xf32>) -> tensor<1xf32>
    "onnx.Yield"(%q) : (tensor<1xf32>) -> ()
  }, {
    "onnx.Yield"(%zero) : (tensor<f32>) -> ()
  }) : (tensor<1xi1>) -> tensor<*xf32>
  %y = "onnx.Mul"(%x, %r) : (tensor<?xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// Negative: a user that is no broadcasting op (its result's rank would
// change) keeps the If as it is.
// CHECK-LABEL: func.func @not_broadcast
// CHECK-NOT: onnx.Unsqueeze
// CHECK: }) : (tensor<1xi1>) -> tensor<*xf32>
func.func @not_broadcast(%c: tensor<1xi1>, %d: tensor<1xf32>) -> tensor<*xf32> {
  %zero = "onnx.Constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
  %r = "onnx.If"(%c) ({
    "onnx.Yield"(%d) : (tensor<1xf32>) -> ()
  }, {
    "onnx.Yield"(%zero) : (tensor<f32>) -> ()
  }) : (tensor<1xi1>) -> tensor<*xf32>
  %y = "onnx.Neg"(%r) : (tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// Negative: the extra dim is not a static 1.
// CHECK-LABEL: func.func @extra_dim_not_one
// CHECK-NOT: onnx.Unsqueeze
func.func @extra_dim_not_one(%c: tensor<1xi1>, %d: tensor<3xf32>, %x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %zero = "onnx.Constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
  %r = "onnx.If"(%c) ({
    "onnx.Yield"(%d) : (tensor<3xf32>) -> ()
  }, {
    "onnx.Yield"(%zero) : (tensor<f32>) -> ()
  }) : (tensor<1xi1>) -> tensor<*xf32>
  %y = "onnx.Add"(%x, %r) : (tensor<2x3xf32>, tensor<*xf32>) -> tensor<2x3xf32>
  return %y : tensor<2x3xf32>
}

// -----

// Negative: a user whose other operand has fewer dims than the higher rank
// (the If's own rank would show in its result).
// CHECK-LABEL: func.func @result_rank_too_low
// CHECK-NOT: onnx.Unsqueeze
func.func @result_rank_too_low(%c: tensor<1xi1>, %d: tensor<1xf32>, %s: tensor<f32>) -> tensor<*xf32> {
  %zero = "onnx.Constant"() <{value = dense<0.0> : tensor<f32>}> : () -> tensor<f32>
  %r = "onnx.If"(%c) ({
    "onnx.Yield"(%d) : (tensor<1xf32>) -> ()
  }, {
    "onnx.Yield"(%zero) : (tensor<f32>) -> ()
  }) : (tensor<1xi1>) -> tensor<*xf32>
  %y = "onnx.Add"(%s, %r) : (tensor<f32>, tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}
