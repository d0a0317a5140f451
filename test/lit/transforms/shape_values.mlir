// RUN: ortc-opt %s -split-input-file -onnx-propagate-shapes -onnx-dce | FileCheck %s

// Shape arithmetic next to a dynamic batch (the elements SymbolicShapes.h gives shape values):
// an element of Shape(x) that is a static dim of x is known, so what is
// computed from known elements folds although x is not static.

// Gather of a static dim, then Cast and Range: all folds, the batch stays.
// CHECK-LABEL: func.func @static_dim_of_dynamic_input
// CHECK-SAME: (%[[X:.*]]: tensor<?x3x4x5xf32>)
// CHECK: %[[R:.*]] = "onnx.Constant"() <{value = dense<[0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<5xf32>}>
// CHECK-NEXT: %[[Y:.*]] = "onnx.Add"(%[[X]], %[[R]]) : (tensor<?x3x4x5xf32>, tensor<5xf32>) -> tensor<?x3x4x5xf32>
// CHECK-NEXT: return %[[Y]]
func.func @static_dim_of_dynamic_input(%x: tensor<?x3x4x5xf32>) -> tensor<*xf32> {
  %s = "onnx.Shape"(%x) : (tensor<?x3x4x5xf32>) -> tensor<*xi64>
  %k = "onnx.Constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
  %w = "onnx.Gather"(%s, %k) {axis = 0 : i64} : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %wf = "onnx.Cast"(%w) {to = 1 : i64} : (tensor<*xi64>) -> tensor<*xf32>
  %zero = "onnx.Constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %one = "onnx.Constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %r = "onnx.Range"(%zero, %wf, %one) : (tensor<f32>, tensor<*xf32>, tensor<f32>) -> tensor<*xf32>
  %y = "onnx.Add"(%x, %r) : (tensor<?x3x4x5xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// SAME-style pads from the height: (h - 6) / 2 with Sub and Div, made a
// vector with Unsqueeze and Concat, fold to the Pad's constant pads.
// CHECK-LABEL: func.func @pads_from_arithmetic
// CHECK: %[[P:.*]] = "onnx.Constant"() <{value = dense<[0, 0, 1, 1, 0, 0, 1, 1]> : tensor<8xi64>}>
// CHECK: "onnx.Pad"(%{{.*}}, %[[P]]{{.*}} -> tensor<?x3x10x10xf32>
func.func @pads_from_arithmetic(%x: tensor<?x3x8x8xf32>) -> tensor<*xf32> {
  %s = "onnx.Shape"(%x) : (tensor<?x3x8x8xf32>) -> tensor<*xi64>
  %i2 = "onnx.Constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
  %h = "onnx.Gather"(%s, %i2) {axis = 0 : i64} : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %six = "onnx.Constant"() {value = dense<6> : tensor<i64>} : () -> tensor<i64>
  %h6 = "onnx.Sub"(%h, %six) : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %p = "onnx.Div"(%h6, %i2) : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %ax = "onnx.Constant"() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %p1 = "onnx.Unsqueeze"(%p, %ax) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %z2 = "onnx.Constant"() {value = dense<0> : tensor<2xi64>} : () -> tensor<2xi64>
  %pads = "onnx.Concat"(%z2, %p1, %p1, %z2, %p1, %p1) {axis = 0 : i64} : (tensor<2xi64>, tensor<*xi64>, tensor<*xi64>, tensor<2xi64>, tensor<*xi64>, tensor<*xi64>) -> tensor<*xi64>
  %none = "onnx.NoValue"() : () -> none
  %y = "onnx.Pad"(%x, %pads, %none, %none) : (tensor<?x3x8x8xf32>, tensor<*xi64>, none, none) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// The dynamic dim itself is not known: Gather of dim 0 and arithmetic on it
// stay for run time.
// CHECK-LABEL: func.func @dynamic_dim_stays
// CHECK: %[[S:.*]] = "onnx.Shape"
// CHECK: %[[B:.*]] = "onnx.Gather"(%[[S]]
// CHECK: "onnx.Mul"(%[[B]]
func.func @dynamic_dim_stays(%x: tensor<?x3xf32>) -> tensor<*xi64> {
  %s = "onnx.Shape"(%x) : (tensor<?x3xf32>) -> tensor<*xi64>
  %i0 = "onnx.Constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %b = "onnx.Gather"(%s, %i0) {axis = 0 : i64} : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %three = "onnx.Constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
  %m = "onnx.Mul"(%b, %three) : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  return %m : tensor<*xi64>
}

// -----

// x.view(x.size(0), -1): the target's first element is dim 0 of the data
// itself, which is what 0 means in a Reshape target.
// CHECK-LABEL: func.func @reshape_keeps_own_batch
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x8xf32>)
// CHECK: %[[T:.*]] = "onnx.Constant"() <{value = dense<[0, -1]> : tensor<2xi64>}>
// CHECK-NEXT: %[[Y:.*]] = "onnx.Reshape"(%[[X]], %[[T]]){{.*}} : (tensor<?x4x8xf32>, tensor<2xi64>) -> tensor<?x32xf32>
// CHECK-NEXT: return %[[Y]]
func.func @reshape_keeps_own_batch(%x: tensor<?x4x8xf32>) -> tensor<*xf32> {
  %s = "onnx.Shape"(%x) {end = 1 : i64} : (tensor<?x4x8xf32>) -> tensor<*xi64>
  %m1 = "onnx.Constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %t = "onnx.Concat"(%s, %m1) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %y = "onnx.Reshape"(%x, %t) : (tensor<?x4x8xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}

// -----

// The batch of another value, or at another position, is not the data's
// own dim there: the target stays computed.
// CHECK-LABEL: func.func @reshape_by_other_batch
// CHECK: %[[S:.*]] = "onnx.Shape"(%{{.*}}) {{.*}} : (tensor<?x2xf32>)
// CHECK: %[[T:.*]] = "onnx.Concat"(%[[S]]
// CHECK: "onnx.Reshape"(%{{.*}}, %[[T]])
// CHECK-LABEL: func.func @reshape_batch_elsewhere
// CHECK: %[[T2:.*]] = "onnx.Concat"
// CHECK: "onnx.Reshape"(%{{.*}}, %[[T2]])
func.func @reshape_by_other_batch(%x: tensor<?x4x8xf32>, %z: tensor<?x2xf32>) -> tensor<*xf32> {
  %s = "onnx.Shape"(%z) {end = 1 : i64} : (tensor<?x2xf32>) -> tensor<*xi64>
  %m1 = "onnx.Constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %t = "onnx.Concat"(%s, %m1) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %y = "onnx.Reshape"(%x, %t) : (tensor<?x4x8xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}
func.func @reshape_batch_elsewhere(%x: tensor<?x4x8xf32>) -> tensor<*xf32> {
  %s = "onnx.Shape"(%x) {end = 1 : i64} : (tensor<?x4x8xf32>) -> tensor<*xi64>
  %m1 = "onnx.Constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %t = "onnx.Concat"(%m1, %s) {axis = 0 : i64} : (tensor<1xi64>, tensor<*xi64>) -> tensor<*xi64>
  %y = "onnx.Reshape"(%x, %t) : (tensor<?x4x8xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}
