// RUN: ortc-opt %s -split-input-file -onnx-fold-constants -onnx-dce | FileCheck %s
// RUN: ortc-opt %s -split-input-file -onnx-fold-constants="max-elements=2" -onnx-dce | FileCheck %s --check-prefix=LIMIT

// Exported shape arithmetic: the batch dim of a static input, computed with
// Shape/Gather/Unsqueeze/Concat, becomes a constant target shape.
// CHECK-LABEL: func.func @shape_arith
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[S:.*]] = "onnx.Constant"() <{value = dense<[2, 12]> : tensor<2xi64>}>
// CHECK-NEXT: %[[R:.*]] = "onnx.Reshape"(%[[X]], %[[S]])
// CHECK-NEXT: return %[[R]]
// LIMIT-LABEL: func.func @shape_arith
// LIMIT: "onnx.Shape"
// LIMIT: "onnx.Concat"
func.func @shape_arith(%x: tensor<2x3x4xf32>) -> tensor<*xf32> {
  %shape = "onnx.Shape"(%x) : (tensor<2x3x4xf32>) -> tensor<3xi64>
  %zero = "onnx.Constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %batch = "onnx.Gather"(%shape, %zero) {axis = 0 : i64} : (tensor<3xi64>, tensor<i64>) -> tensor<i64>
  %axes = "onnx.Constant"() {value_ints = array<i64: 0>} : () -> tensor<1xi64>
  %b1 = "onnx.Unsqueeze"(%batch, %axes) : (tensor<i64>, tensor<1xi64>) -> tensor<1xi64>
  %rest = "onnx.Constant"() {value_ints = array<i64: 12>} : () -> tensor<1xi64>
  %target = "onnx.Concat"(%b1, %rest) {axis = 0 : i64} : (tensor<1xi64>, tensor<1xi64>) -> tensor<2xi64>
  %r = "onnx.Reshape"(%x, %target) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

// Arithmetic with broadcasting, casts, comparisons, Where, Slice, Range and
// ConstantOfShape; f32 results are rounded to f32.
// CHECK-LABEL: func.func @arith
// CHECK-DAG: value = dense<[1.100000e+01, 2.200000e+01]> : tensor<2xf32>
// CHECK-DAG: value = dense<[3, -3]> : tensor<2xi64>
// CHECK-DAG: value = dense<[true, false]> : tensor<2xi1>
// CHECK-DAG: value = dense<[1, 7]> : tensor<2xi32>
// CHECK-DAG: value = dense<[30, 20, 10]> : tensor<3xi64>
// CHECK-DAG: value = dense<[0, 2, 4]> : tensor<3xi64>
// CHECK-DAG: value = dense<1.500000e+00> : tensor<2x2xf32>
// CHECK-DAG: value = dense<[3.33333325, 5.000000e-01]> : tensor<2xf32>
// CHECK-NOT: "onnx.Add"
// CHECK-NOT: "onnx.Div"
func.func @arith() -> (tensor<*xf32>, tensor<*xi64>, tensor<*xi1>, tensor<*xi32>, tensor<*xi64>, tensor<*xi64>, tensor<*xf32>, tensor<*xf32>) {
  %a = "onnx.Constant"() {value = dense<[1.0, 2.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %ten = "onnx.Constant"() {value = dense<10.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "onnx.Mul"(%a, %ten) : (tensor<2xf32>, tensor<f32>) -> tensor<*xf32>
  %1 = "onnx.Add"(%0, %a) : (tensor<*xf32>, tensor<2xf32>) -> tensor<*xf32>
  %i = "onnx.Constant"() {value = dense<[7, -7]> : tensor<2xi64>} : () -> tensor<2xi64>
  %two = "onnx.Constant"() {value = dense<2> : tensor<i64>} : () -> tensor<i64>
  %2 = "onnx.Div"(%i, %two) : (tensor<2xi64>, tensor<i64>) -> tensor<*xi64>
  %3 = "onnx.Greater"(%i, %2) : (tensor<2xi64>, tensor<*xi64>) -> tensor<*xi1>
  %f = "onnx.Constant"() {value = dense<[1.9, 7.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %4 = "onnx.Cast"(%f) {to = 6 : i64} : (tensor<2xf32>) -> tensor<*xi32>
  %s = "onnx.Constant"() {value = dense<[10, 20, 30]> : tensor<3xi64>} : () -> tensor<3xi64>
  %st = "onnx.Constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %en = "onnx.Constant"() {value = dense<[-4]> : tensor<1xi64>} : () -> tensor<1xi64>
  %sp = "onnx.Constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %ax = "onnx.Constant"() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %5 = "onnx.Slice"(%s, %st, %en, %ax, %sp) : (tensor<3xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xi64>
  %z = "onnx.Constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %l = "onnx.Constant"() {value = dense<5> : tensor<i64>} : () -> tensor<i64>
  %6 = "onnx.Range"(%z, %l, %two) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<*xi64>
  %shape = "onnx.Constant"() {value = dense<[2, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %7 = "onnx.ConstantOfShape"(%shape) {value = dense<1.5> : tensor<1xf32>} : (tensor<2xi64>) -> tensor<*xf32>
  %thr = "onnx.Constant"() {value = dense<[3.0, 0.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %d = "onnx.Div"(%ten, %thr) : (tensor<f32>, tensor<2xf32>) -> tensor<*xf32>
  %c = "onnx.Less"(%thr, %a) : (tensor<2xf32>, tensor<2xf32>) -> tensor<*xi1>
  %half = "onnx.Constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %8 = "onnx.Where"(%c, %half, %d) : (tensor<*xi1>, tensor<f32>, tensor<*xf32>) -> tensor<*xf32>
  return %1, %2, %3, %4, %5, %6, %7, %8 : tensor<*xf32>, tensor<*xi64>, tensor<*xi1>, tensor<*xi32>, tensor<*xi64>, tensor<*xi64>, tensor<*xf32>, tensor<*xf32>
}

// -----

// Negative: inputs that are not constants, dynamic shapes, integer division by
// zero and out-of-range gathers are left alone.
// CHECK-LABEL: func.func @kept
// CHECK: "onnx.Shape"
// CHECK: "onnx.Add"
// CHECK: "onnx.Div"
// CHECK: "onnx.Gather"
func.func @kept(%x: tensor<?x3xf32>, %y: tensor<2xi64>) -> (tensor<2xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>) {
  %0 = "onnx.Shape"(%x) : (tensor<?x3xf32>) -> tensor<2xi64>
  %1 = "onnx.Add"(%y, %y) : (tensor<2xi64>, tensor<2xi64>) -> tensor<*xi64>
  %c = "onnx.Constant"() {value = dense<[4, 5]> : tensor<2xi64>} : () -> tensor<2xi64>
  %zero = "onnx.Constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %2 = "onnx.Div"(%c, %zero) : (tensor<2xi64>, tensor<i64>) -> tensor<*xi64>
  %big = "onnx.Constant"() {value = dense<9> : tensor<i64>} : () -> tensor<i64>
  %3 = "onnx.Gather"(%c, %big) : (tensor<2xi64>, tensor<i64>) -> tensor<*xi64>
  return %0, %1, %2, %3 : tensor<2xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>
}
