// RUN: ortc-opt %s -split-input-file -onnx-dce | FileCheck %s

// A dead chain goes, in any order of definition; live values stay.
// CHECK-LABEL: func.func @dead_chain
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-NEXT: %[[R:.*]] = "onnx.Relu"(%[[X]])
// CHECK-NEXT: return %[[R]]
func.func @dead_chain(%x: tensor<4xf32>) -> tensor<4xf32> {
  %c = "onnx.Constant"() {value_floats = array<f32: 1.0>} : () -> tensor<1xf32>
  %a = "onnx.Add"(%x, %c) : (tensor<4xf32>, tensor<1xf32>) -> tensor<4xf32>
  %n = "onnx.Neg"(%a) : (tensor<4xf32>) -> tensor<4xf32>
  %r = "onnx.Relu"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %none = "onnx.NoValue"() : () -> none
  return %r : tensor<4xf32>
}

// -----

// An op with regions is dead as a whole; values used only inside its regions
// die with it.
// CHECK-LABEL: func.func @dead_if
// CHECK-NOT: onnx.
// CHECK: return
func.func @dead_if(%c: tensor<i1>, %x: tensor<4xf32>) {
  %inner = "onnx.Abs"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %0 = "onnx.If"(%c) ({
    "onnx.Yield"(%inner) : (tensor<4xf32>) -> ()
  }, {
    %n = "onnx.Neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "onnx.Yield"(%n) : (tensor<4xf32>) -> ()
  }) : (tensor<i1>) -> tensor<4xf32>
  return
}

// -----

// Negative: ops used by a live region, by a multi-result op with one used
// result, and generic ops that are used, all stay; dead ops inside a live
// region go.
// CHECK-LABEL: func.func @live_uses
// CHECK: %[[A:.*]] = "onnx.Abs"
// CHECK: "onnx.If"
// CHECK-NOT: "onnx.Sqrt"
// CHECK: "onnx.Yield"(%[[A]])
// CHECK: "onnx.Dropout"
// CHECK: "onnx.Generic"
func.func @live_uses(%c: tensor<i1>, %x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %a = "onnx.Abs"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %0 = "onnx.If"(%c) ({
    %dead = "onnx.Sqrt"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "onnx.Yield"(%a) : (tensor<4xf32>) -> ()
  }, {
    "onnx.Yield"(%x) : (tensor<4xf32>) -> ()
  }) : (tensor<i1>) -> tensor<4xf32>
  %none = "onnx.NoValue"() : () -> none
  %d:2 = "onnx.Dropout"(%x, %none, %none) : (tensor<4xf32>, none, none) -> (tensor<4xf32>, tensor<4xi1>)
  %g = "onnx.Generic"(%x) <{domain = "com.microsoft", onnx_attrs = {}, op_type = "X", since_version = 1 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %d#0, %g : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
