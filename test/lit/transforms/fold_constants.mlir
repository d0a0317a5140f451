// RUN: ortc-opt %s -split-input-file -onnx-fold-constants -onnx-dce | FileCheck %s
// RUN: ortc-opt %s -split-input-file -onnx-fold-constants="max-elements=2" -onnx-dce | FileCheck %s --check-prefix=LIMIT

// Exported shape arithmetic: the batch dim of a static input, computed with
// Shape/Gather/Unsqueeze/Concat, becomes a constant target shape.
// CHECK-LABEL: func.func @shape_arith
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK-NEXT: %[[S:.*]] = "onnx.Constant"() <{value = dense<[2, 12]> : tensor<2xi64>}>
// CHECK-NEXT: %[[R:.*]] = "onnx.Reshape"(%[[X]], %[[S]])
// CHECK-NEXT: return %[[R]]
// With at most 2 elements per folded tensor the 3-element Shape is never
// materialized, but the 2-element target is still known from it.
// LIMIT-LABEL: func.func @shape_arith
// LIMIT-NOT: dense<[2, 3, 4]>
// LIMIT: dense<[2, 12]> : tensor<2xi64>
// LIMIT-NOT: dense<[2, 3, 4]>
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

// -----

// Logic, comparisons, Mod (Python's sign with fmod 0, C's with fmod 1),
// Min/Max, Abs, Sqrt, Not, Expand, Tile, Transpose, CastLike.
// CHECK-LABEL: func.func @more_folds
// CHECK-DAG: value = dense<[true, false, false, false]> : tensor<4xi1>
// CHECK-DAG: value = dense<[true, true, true, false]> : tensor<4xi1>
// CHECK-DAG: value = dense<[false, true, true, false]> : tensor<4xi1>
// CHECK-DAG: value = dense<[false, false, true, true]> : tensor<4xi1>
// CHECK-DAG: value = dense<[true, false, true, false]> : tensor<4xi1>
// CHECK-DAG: value = dense<[false, true, true, true]> : tensor<4xi1>
// CHECK-DAG: value = dense<[1, -1, 0, 1]> : tensor<4xi64>
// CHECK-DAG: value = dense<[-2, 1, 0, 1]> : tensor<4xi64>
// CHECK-DAG: value = dense<[3, 3, 3, 4]> : tensor<4xi64>
// CHECK-DAG: value = dense<[-5, -2, 3, 3]> : tensor<4xi64>
// CHECK-DAG: value = dense<[5, 3, 3, 4]> : tensor<4xi64>
// CHECK-DAG: value = dense<[2.000000e+00, 3.000000e+00]> : tensor<2xf32>
// CHECK-DAG: value = dense<[false, true]> : tensor<2xi1>
// CHECK-DAG: value = dense<{{\[}}[1, 2], [1, 2], [1, 2]]> : tensor<3x2xi64>
// CHECK-DAG: value = dense<{{\[}}[1, 2, 1, 2]]> : tensor<1x4xi64>
// CHECK-DAG: value = dense<{{\[}}[1], [2]]> : tensor<2x1xi64>
// CHECK-DAG: value = dense<[4.000000e+00, 9.000000e+00]> : tensor<2xf32>
// CHECK-NOT: "onnx.{{And|Or|Xor|Not|Mod|Max|Min|Abs|Sqrt|Expand|Tile|Transpose|CastLike|LessOrEqual|GreaterOrEqual}}"
func.func @more_folds(%like: tensor<3xf32>) -> (tensor<*xi1>, tensor<*xi1>, tensor<*xi1>, tensor<*xi1>, tensor<*xi1>, tensor<*xi1>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xf32>, tensor<*xi1>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xf32>) {
  %p = "onnx.Constant"() {value = dense<[true, true, false, false]> : tensor<4xi1>} : () -> tensor<4xi1>
  %q = "onnx.Constant"() {value = dense<[true, false, true, false]> : tensor<4xi1>} : () -> tensor<4xi1>
  %0 = "onnx.And"(%p, %q) : (tensor<4xi1>, tensor<4xi1>) -> tensor<*xi1>
  %1 = "onnx.Or"(%p, %q) : (tensor<4xi1>, tensor<4xi1>) -> tensor<*xi1>
  %2 = "onnx.Xor"(%p, %q) : (tensor<4xi1>, tensor<4xi1>) -> tensor<*xi1>
  %3 = "onnx.Not"(%p) : (tensor<4xi1>) -> tensor<*xi1>
  %a = "onnx.Constant"() {value = dense<[-5, 3, 3, 4]> : tensor<4xi64>} : () -> tensor<4xi64>
  %b = "onnx.Constant"() {value = dense<[3, -2, 3, 3]> : tensor<4xi64>} : () -> tensor<4xi64>
  %4 = "onnx.LessOrEqual"(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<*xi1>
  %5 = "onnx.GreaterOrEqual"(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<*xi1>
  %6 = "onnx.Mod"(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<*xi64>
  %7 = "onnx.Mod"(%a, %b) {fmod = 1 : i64} : (tensor<4xi64>, tensor<4xi64>) -> tensor<*xi64>
  %8 = "onnx.Max"(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<*xi64>
  %9 = "onnx.Min"(%a, %b) : (tensor<4xi64>, tensor<4xi64>) -> tensor<*xi64>
  %10 = "onnx.Abs"(%a) : (tensor<4xi64>) -> tensor<*xi64>
  %f = "onnx.Constant"() {value = dense<[4.0, 9.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %11 = "onnx.Sqrt"(%f) : (tensor<2xf32>) -> tensor<*xf32>
  %fb = "onnx.Constant"() {value = dense<[0.0, 2.5]> : tensor<2xf32>} : () -> tensor<2xf32>
  %12 = "onnx.CastLike"(%fb, %p) : (tensor<2xf32>, tensor<4xi1>) -> tensor<*xi1>
  %row = "onnx.Constant"() {value = dense<[[1, 2]]> : tensor<1x2xi64>} : () -> tensor<1x2xi64>
  %to = "onnx.Constant"() {value = dense<[3, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %13 = "onnx.Expand"(%row, %to) : (tensor<1x2xi64>, tensor<2xi64>) -> tensor<*xi64>
  %reps = "onnx.Constant"() {value = dense<[1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %14 = "onnx.Tile"(%row, %reps) : (tensor<1x2xi64>, tensor<2xi64>) -> tensor<*xi64>
  %15 = "onnx.Transpose"(%row) : (tensor<1x2xi64>) -> tensor<*xi64>
  %16 = "onnx.CastLike"(%f, %like) : (tensor<2xf32>, tensor<3xf32>) -> tensor<*xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16 : tensor<*xi1>, tensor<*xi1>, tensor<*xi1>, tensor<*xi1>, tensor<*xi1>, tensor<*xi1>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xf32>, tensor<*xi1>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xf32>
}

// -----

// Reductions with constant axes (and none: all axes), keepdims both ways.
// CHECK-LABEL: func.func @reductions
// CHECK-DAG: value = dense<[5, 7, 9]> : tensor<3xi64>
// CHECK-DAG: value = dense<720> : tensor<1x1xi64>
// CHECK-DAG: value = dense<{{\[}}[3], [6]]> : tensor<2x1xi64>
// CHECK-DAG: value = dense<[1, 4]> : tensor<2xi64>
// CHECK-DAG: value = dense<[2.000000e+00, 5.000000e+00]> : tensor<2xf32>
// CHECK-NOT: "onnx.Reduce
func.func @reductions() -> (tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xf32>) {
  %x = "onnx.Constant"() {value = dense<[[1, 2, 3], [4, 5, 6]]> : tensor<2x3xi64>} : () -> tensor<2x3xi64>
  %none = "onnx.NoValue"() : () -> none
  %ax0 = "onnx.Constant"() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %ax1 = "onnx.Constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %0 = "onnx.ReduceSum"(%x, %ax0) {keepdims = 0 : i64} : (tensor<2x3xi64>, tensor<1xi64>) -> tensor<*xi64>
  %1 = "onnx.ReduceProd"(%x, %none) : (tensor<2x3xi64>, none) -> tensor<*xi64>
  %2 = "onnx.ReduceMax"(%x, %ax1) : (tensor<2x3xi64>, tensor<1xi64>) -> tensor<*xi64>
  %3 = "onnx.ReduceMin"(%x, %ax1) {keepdims = 0 : i64} : (tensor<2x3xi64>, tensor<1xi64>) -> tensor<*xi64>
  %f = "onnx.Constant"() {value = dense<[[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]> : tensor<2x3xf32>} : () -> tensor<2x3xf32>
  %4 = "onnx.ReduceMean"(%f, %ax1) {keepdims = 0 : i64} : (tensor<2x3xf32>, tensor<1xi64>) -> tensor<*xf32>
  return %0, %1, %2, %3, %4 : tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xi64>, tensor<*xf32>
}

// -----

// ConstantOfShape whose value is a resource blob (as the importer makes it).
// CHECK-LABEL: func.func @fill_from_resource
// CHECK: value = dense<1> : tensor<2x3xi64>
// CHECK-NOT: "onnx.ConstantOfShape"
func.func @fill_from_resource() -> tensor<*xi64> {
  %shape = "onnx.Constant"() {value = dense<[2, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "onnx.ConstantOfShape"(%shape) {value = dense_resource<one> : tensor<1xi64>} : (tensor<2xi64>) -> tensor<*xi64>
  return %0 : tensor<*xi64>
}

{-#
  dialect_resources: {
    builtin: {
      one: "0x080000000100000000000000"
    }
  }
#-}

// -----

// If on a constant condition becomes the branch it takes (the typed If's
// regions are else, then); on a condition known only at run time it stays.
// CHECK-LABEL: func.func @constant_if
// CHECK-SAME: (%[[X:.*]]: tensor<2xf32>, %[[C:.*]]: tensor<i1>)
// CHECK: %[[N:.*]] = "onnx.Neg"(%[[X]])
// CHECK: "onnx.If"(%[[C]])
// CHECK: "onnx.Relu"
// CHECK-NOT: "onnx.Abs"
// CHECK: return %[[N]],
func.func @constant_if(%x: tensor<2xf32>, %c: tensor<i1>) -> (tensor<*xf32>, tensor<*xf32>) {
  %t = "onnx.Constant"() {value = dense<true> : tensor<i1>} : () -> tensor<i1>
  %0 = "onnx.If"(%t) ({
    %a = "onnx.Abs"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    "onnx.Yield"(%a) : (tensor<2xf32>) -> ()
  }, {
    %n = "onnx.Neg"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    "onnx.Yield"(%n) : (tensor<2xf32>) -> ()
  }) : (tensor<i1>) -> tensor<*xf32>
  %1 = "onnx.If"(%c) ({
    %a = "onnx.Abs"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    "onnx.Yield"(%a) : (tensor<2xf32>) -> ()
  }, {
    %r = "onnx.Relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    "onnx.Yield"(%r) : (tensor<2xf32>) -> ()
  }) : (tensor<i1>) -> tensor<*xf32>
  return %0, %1 : tensor<*xf32>, tensor<*xf32>
}

// -----

// A graph input with no elements is a constant (empty axes fed as an input);
// a returned one stays an argument.
// CHECK-LABEL: func.func @empty_argument
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>, %[[A:.*]]: tensor<0xi64>)
// CHECK: %[[E:.*]] = "onnx.Constant"() <{value = dense<> : tensor<0xi64>}>
// CHECK: "onnx.ReduceSum"(%[[X]], %[[E]])
// CHECK: return {{.*}}, %[[A]]
func.func @empty_argument(%x: tensor<2x3xf32>, %axes: tensor<0xi64>) -> (tensor<*xf32>, tensor<0xi64>) {
  %0 = "onnx.ReduceSum"(%x, %axes) : (tensor<2x3xf32>, tensor<0xi64>) -> tensor<*xf32>
  return %0, %axes : tensor<*xf32>, tensor<0xi64>
}

// -----

// Negative: float Mod without fmod, Max with a NaN, a mean over nothing and a
// Sqrt of an i64 are left for run time.
// CHECK-LABEL: func.func @kept_more
// CHECK: "onnx.Mod"
// CHECK: "onnx.Max"
// CHECK: "onnx.ReduceMean"
// CHECK: "onnx.Sqrt"
func.func @kept_more() -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xi64>) {
  %a = "onnx.Constant"() {value = dense<[5.0, 0x7FC00000]> : tensor<2xf32>} : () -> tensor<2xf32>
  %b = "onnx.Constant"() {value = dense<[2.0, 1.0]> : tensor<2xf32>} : () -> tensor<2xf32>
  %0 = "onnx.Mod"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<*xf32>
  %1 = "onnx.Max"(%a, %b) : (tensor<2xf32>, tensor<2xf32>) -> tensor<*xf32>
  %e = "onnx.Constant"() {value = dense<> : tensor<0x2xf32>} : () -> tensor<0x2xf32>
  %ax = "onnx.Constant"() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %2 = "onnx.ReduceMean"(%e, %ax) : (tensor<0x2xf32>, tensor<1xi64>) -> tensor<*xf32>
  %i = "onnx.Constant"() {value = dense<[4]> : tensor<1xi64>} : () -> tensor<1xi64>
  %3 = "onnx.Sqrt"(%i) : (tensor<1xi64>) -> tensor<*xi64>
  return %0, %1, %2, %3 : tensor<*xf32>, tensor<*xf32>, tensor<*xf32>, tensor<*xi64>
}
