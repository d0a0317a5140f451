// RUN: ortc-opt %s -split-input-file -onnx-lower-to-linalg | FileCheck %s

// Broadcast of a vector over a dynamic batch: the `?` comes from the input
// that has it; the bias reads only the innermost loop.
// CHECK-DAG: #[[ID2:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[INNER:.*]] = affine_map<(d0, d1) -> (d1)>
// CHECK-LABEL: func.func @add_bcast
// CHECK-SAME: (%[[X:.*]]: tensor<?x512xf32>, %[[B:.*]]: tensor<512xf32>)
// CHECK: %[[C0:.*]] = arith.constant 0 : index
// CHECK: %[[N:.*]] = tensor.dim %[[X]], %[[C0]] : tensor<?x512xf32>
// CHECK: %[[INIT:.*]] = tensor.empty(%[[N]]) : tensor<?x512xf32>
// CHECK: %[[R:.*]] = linalg.generic {indexing_maps = [#[[ID2]], #[[INNER]], #[[ID2]]], iterator_types = ["parallel", "parallel"]}
// CHECK-SAME: ins(%[[X]], %[[B]] : tensor<?x512xf32>, tensor<512xf32>) outs(%[[INIT]] : tensor<?x512xf32>)
// CHECK: ^bb0(%[[A:.*]]: f32, %[[BB:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[S:.*]] = arith.addf %[[A]], %[[BB]] : f32
// CHECK: linalg.yield %[[S]] : f32
// CHECK: return %[[R]]
func.func @add_bcast(%x: tensor<?x512xf32>, %b: tensor<512xf32>) -> tensor<?x512xf32> {
  %0 = "onnx.Add"(%x, %b) : (tensor<?x512xf32>, tensor<512xf32>) -> tensor<?x512xf32>
  return %0 : tensor<?x512xf32>
}

// -----

// Size-1 dims that broadcast read index 0; a size-1 dim of the result stays.
// CHECK-DAG: #[[ID3:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[B13:.*]] = affine_map<(d0, d1, d2) -> (0, d1, 0)>
// CHECK-LABEL: func.func @unit_dims
// CHECK: linalg.generic {indexing_maps = [#[[ID3]], #[[B13]], #[[ID3]]]
// CHECK: arith.mulf
func.func @unit_dims(%x: tensor<2x3x4xf32>, %b: tensor<1x3x1xf32>) -> tensor<2x3x4xf32> {
  %0 = "onnx.Mul"(%x, %b) : (tensor<2x3x4xf32>, tensor<1x3x1xf32>) -> tensor<2x3x4xf32>
  return %0 : tensor<2x3x4xf32>
}

// -----

// A ?x1 input broadcasts along the inner dim; the result's 1 is kept.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-DAG: #[[COL:.*]] = affine_map<(d0, d1) -> (d0, 0)>
// CHECK-LABEL: func.func @column_bcast
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[COL]], #[[ID]]]
// CHECK: arith.subf
func.func @column_bcast(%x: tensor<?x8xf32>, %m: tensor<?x1xf32>) -> tensor<?x8xf32> {
  %0 = "onnx.Sub"(%x, %m) : (tensor<?x8xf32>, tensor<?x1xf32>) -> tensor<?x8xf32>
  return %0 : tensor<?x8xf32>
}

// -----

// Scalar (rank-0) constants and value_float become arith.constant; Pow by 2
// is a multiplication, by anything else math.powf.
// CHECK-DAG: #[[SC:.*]] = affine_map<(d0) -> ()>
// CHECK-LABEL: func.func @pow
// CHECK-DAG: %[[TWO:.*]] = arith.constant dense<2.000000e+00> : tensor<f32>
// CHECK-DAG: %[[K:.*]] = arith.constant dense<2.500000e+00> : tensor<f32>
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[TWO]] : tensor<8xf32>, tensor<f32>)
// CHECK: ^bb0(%[[A:.*]]: f32, %{{.*}}: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[SQ:.*]] = arith.mulf %[[A]], %[[A]] : f32
// CHECK-NEXT: linalg.yield %[[SQ]]
// CHECK: linalg.generic {{.*}} ins(%{{.*}}, %[[K]] : tensor<8xf32>, tensor<f32>)
// CHECK: math.powf
// CHECK-NOT: onnx.
func.func @pow(%x: tensor<8xf32>) -> tensor<8xf32> {
  %two = "onnx.Constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %k = "onnx.Constant"() {value_float = 2.5 : f32} : () -> tensor<f32>
  %0 = "onnx.Pow"(%x, %two) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %1 = "onnx.Pow"(%0, %k) : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  return %1 : tensor<8xf32>
}

// -----

// A float base with an integer exponent converts the exponent.
// CHECK-LABEL: func.func @pow_int_exponent
// CHECK: ^bb0(%[[A:.*]]: f32, %[[E:.*]]: i64, %{{.*}}: f32):
// CHECK: %[[EF:.*]] = arith.sitofp %[[E]] : i64 to f32
// CHECK: math.powf %[[A]], %[[EF]] : f32
func.func @pow_int_exponent(%x: tensor<8xf32>, %e: tensor<8xi64>) -> tensor<8xf32> {
  %0 = "onnx.Pow"(%x, %e) : (tensor<8xf32>, tensor<8xi64>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// Pow with an integer base: square and multiply over the exponent's bits
// (exact, wrapping), with trunc(x^e) for a negative exponent.
// CHECK-LABEL: func.func @pow_int_base
// CHECK: ^bb0(%[[X:.*]]: i32, %[[E:.*]]: i32, %{{.*}}: i32):
// CHECK: arith.trunci %[[E]] : i32 to i1
// CHECK: arith.muli %[[X]], %[[X]] : i32
// CHECK: arith.cmpi slt, %[[E]]
// CHECK-NOT: math.powf
// CHECK: linalg.yield
func.func @pow_int_base(%x: tensor<8xi32>, %e: tensor<8xi32>) -> tensor<8xi32> {
  %0 = "onnx.Pow"(%x, %e) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

// An integer base with a float exponent computes in f64 and truncates.
// CHECK-LABEL: func.func @pow_int_float
// CHECK: arith.sitofp %{{.*}} : i64 to f64
// CHECK: arith.extf %{{.*}} : f32 to f64
// CHECK: %[[P:.*]] = math.powf %{{.*}}, %{{.*}} : f64
// CHECK: arith.fptosi %[[P]] : f64 to i64
func.func @pow_int_float(%x: tensor<8xi64>, %e: tensor<8xf32>) -> tensor<8xi64> {
  %0 = "onnx.Pow"(%x, %e) : (tensor<8xi64>, tensor<8xf32>) -> tensor<8xi64>
  return %0 : tensor<8xi64>
}

// -----

// Negative: Pow with an unsigned base is not lowered (and neither is
// anything the predicate refuses); the op stays as it was.
// CHECK-LABEL: func.func @pow_uint_base
// CHECK: "onnx.Pow"(%{{.*}}, %{{.*}}) : (tensor<8xui8>, tensor<8xui8>) -> tensor<8xui8>
// CHECK-NOT: linalg.generic
func.func @pow_uint_base(%x: tensor<8xui8>, %e: tensor<8xui8>) -> tensor<8xui8> {
  %0 = "onnx.Pow"(%x, %e) : (tensor<8xui8>, tensor<8xui8>) -> tensor<8xui8>
  return %0 : tensor<8xui8>
}

// -----

// Negative: unsupported ops, element types and shapes stay; the lowerable
// op next to them is lowered.
// CHECK-LABEL: func.func @unsupported
// CHECK: "onnx.Hardmax"
// CHECK: "onnx.Add"(%{{.*}}, %{{.*}}) : (tensor<4xi4>, tensor<4xi4>)
// CHECK: "onnx.Add"(%{{.*}}, %{{.*}}) : (tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>)
// CHECK: "onnx.Add"(%{{.*}}, %{{.*}}) : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
// CHECK: "onnx.Add"(%{{.*}}, %{{.*}}) : (tensor<*xf32>, tensor<4xf32>)
// CHECK: "onnx.Gelu"(%{{.*}}) <{approximate = "erf"}>
// CHECK: "onnx.Mod"(%{{.*}}, %{{.*}}) <{fmod = 2 : i64}> : (tensor<4xf32>, tensor<4xf32>)
// CHECK: "onnx.Cast"(%{{.*}}) <{{.*}}to = 17 : i64}>
// CHECK: %[[OK:.*]] = linalg.generic
// CHECK: arith.negf
func.func @unsupported(%a: tensor<4x8xf32>, %i: tensor<4xi4>, %h: tensor<4xf8E4M3FN>, %d: tensor<2x4xf32>,
                       %s: tensor<3x4xf32>, %u: tensor<*xf32>, %f: tensor<4xf32>)
    -> (tensor<4x8xf32>, tensor<4xi4>, tensor<4xf8E4M3FN>, tensor<3x4xf32>, tensor<4xf32>,
        tensor<4xf32>, tensor<4xf32>, tensor<4xf8E4M3FN>, tensor<4xf32>) {
  %0 = "onnx.Hardmax"(%a) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  %1 = "onnx.Add"(%i, %i) : (tensor<4xi4>, tensor<4xi4>) -> tensor<4xi4>
  %2 = "onnx.Add"(%h, %h) : (tensor<4xf8E4M3FN>, tensor<4xf8E4M3FN>) -> tensor<4xf8E4M3FN>
  %3 = "onnx.Add"(%d, %s) : (tensor<2x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  %4 = "onnx.Add"(%u, %f) : (tensor<*xf32>, tensor<4xf32>) -> tensor<4xf32>
  %5 = "onnx.Gelu"(%f) {approximate = "erf"} : (tensor<4xf32>) -> tensor<4xf32>
  %6 = "onnx.Mod"(%f, %f) {fmod = 2 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %7 = "onnx.Cast"(%f) {to = 17 : i64} : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  %8 = "onnx.Neg"(%f) : (tensor<4xf32>) -> tensor<4xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8 : tensor<4x8xf32>, tensor<4xi4>, tensor<4xf8E4M3FN>,
      tensor<3x4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf8E4M3FN>, tensor<4xf32>
}

// -----

// Integer Div truncates, with 0 for a zero divisor and wrapping negation for
// a divisor of -1 (no trap).
// CHECK-LABEL: func.func @div_i32
// CHECK: ^bb0(%[[X:.*]]: i32, %[[Y:.*]]: i32, %{{.*}}: i32):
// CHECK-DAG: %[[Z:.*]] = arith.constant 0 : i32
// CHECK-DAG: %[[M1:.*]] = arith.constant -1 : i32
// CHECK-DAG: %[[YZ:.*]] = arith.cmpi eq, %[[Y]], %[[Z]] : i32
// CHECK-DAG: %[[YM1:.*]] = arith.cmpi eq, %[[Y]], %[[M1]] : i32
// CHECK: %[[Q:.*]] = arith.divsi %[[X]], %{{.*}} : i32
// CHECK: %[[NEG:.*]] = arith.subi %[[Z]], %[[X]] : i32
// CHECK: %[[R1:.*]] = arith.select %[[YM1]], %[[NEG]], %[[Q]] : i32
// CHECK: %[[R2:.*]] = arith.select %[[YZ]], %[[Z]], %[[R1]] : i32
// CHECK: linalg.yield %[[R2]] : i32
func.func @div_i32(%x: tensor<8xi32>, %y: tensor<8xi32>) -> tensor<8xi32> {
  %0 = "onnx.Div"(%x, %y) : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

// Comparisons and logic give i1; Where selects.
// CHECK-LABEL: func.func @compare_where
// CHECK: arith.cmpf olt
// CHECK: arith.cmpi sge
// CHECK: ^bb0(%[[P:.*]]: i1, %[[Q:.*]]: i1, %{{.*}}: i1):
// CHECK: arith.andi %[[P]], %[[Q]] : i1
// CHECK: ^bb0(%[[C:.*]]: i1, %[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK: arith.select %[[C]], %[[A]], %[[B]] : f32
func.func @compare_where(%a: tensor<?x4xf32>, %b: tensor<4xf32>, %i: tensor<?x4xi64>, %j: tensor<1x4xi64>)
    -> tensor<?x4xf32> {
  %lt = "onnx.Less"(%a, %b) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xi1>
  %ge = "onnx.GreaterOrEqual"(%i, %j) : (tensor<?x4xi64>, tensor<1x4xi64>) -> tensor<?x4xi1>
  %both = "onnx.And"(%lt, %ge) : (tensor<?x4xi1>, tensor<?x4xi1>) -> tensor<?x4xi1>
  %0 = "onnx.Where"(%both, %a, %b) : (tensor<?x4xi1>, tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

// Clip: omitted bounds (onnx.NoValue) are left out of the generic.
// CHECK-LABEL: func.func @clip
// CHECK-SAME: (%[[X:.*]]: tensor<8xi32>, %[[LO:.*]]: tensor<i32>)
// CHECK: linalg.generic {{.*}} ins(%[[X]], %[[LO]] : tensor<8xi32>, tensor<i32>)
// CHECK: ^bb0(%[[A:.*]]: i32, %[[L:.*]]: i32, %{{.*}}: i32):
// CHECK-NEXT: %[[M:.*]] = arith.maxsi %[[A]], %[[L]] : i32
// CHECK-NEXT: linalg.yield %[[M]]
// CHECK-NOT: onnx.NoValue
func.func @clip(%x: tensor<8xi32>, %lo: tensor<i32>) -> tensor<8xi32> {
  %n = "onnx.NoValue"() : () -> none
  %0 = "onnx.Clip"(%x, %lo, %n) : (tensor<8xi32>, tensor<i32>, none) -> tensor<8xi32>
  return %0 : tensor<8xi32>
}

// -----

// Cast: float to int truncates toward zero (narrow targets through i32),
// to bool compares with 0, unsigned sources convert as unsigned (through
// unrealized casts: arith works on signless integers).
// CHECK-LABEL: func.func @casts
// CHECK: arith.fptosi %{{.*}} : f32 to i32
// CHECK: ^bb0(%[[F:.*]]: f32, %{{.*}}: i8):
// CHECK: %[[W:.*]] = arith.fptosi %[[F]] : f32 to i32
// CHECK: arith.trunci %[[W]] : i32 to i8
// CHECK: arith.cmpf une, %{{.*}}, %{{.*}} : f32
// CHECK: ^bb0(%[[U:.*]]: ui8, %{{.*}}: f32):
// CHECK: %[[S:.*]] = builtin.unrealized_conversion_cast %[[U]] : ui8 to i8
// CHECK: arith.uitofp %[[S]] : i8 to f32
// CHECK: ^bb0(%[[B:.*]]: i1, %{{.*}}: i64):
// CHECK: arith.extui %[[B]] : i1 to i64
// CHECK: ^bb0(%{{.*}}: i64, %{{.*}}: ui8):
// CHECK: %[[T:.*]] = arith.trunci %{{.*}} : i64 to i8
// CHECK: %[[TU:.*]] = builtin.unrealized_conversion_cast %[[T]] : i8 to ui8
// CHECK: linalg.yield %[[TU]] : ui8
func.func @casts(%f: tensor<8xf32>, %u: tensor<8xui8>, %b: tensor<8xi1>, %l: tensor<8xi64>)
    -> (tensor<8xi32>, tensor<8xi8>, tensor<8xi1>, tensor<8xf32>, tensor<8xi64>, tensor<8xui8>) {
  %0 = "onnx.Cast"(%f) {to = 6 : i64} : (tensor<8xf32>) -> tensor<8xi32>
  %1 = "onnx.Cast"(%f) {to = 3 : i64} : (tensor<8xf32>) -> tensor<8xi8>
  %2 = "onnx.Cast"(%f) {to = 9 : i64} : (tensor<8xf32>) -> tensor<8xi1>
  %3 = "onnx.Cast"(%u) {to = 1 : i64} : (tensor<8xui8>) -> tensor<8xf32>
  %4 = "onnx.Cast"(%b) {to = 7 : i64} : (tensor<8xi1>) -> tensor<8xi64>
  %5 = "onnx.Cast"(%l) {to = 2 : i64} : (tensor<8xi64>) -> tensor<8xui8>
  return %0, %1, %2, %3, %4, %5 : tensor<8xi32>, tensor<8xi8>, tensor<8xi1>, tensor<8xf32>, tensor<8xi64>, tensor<8xui8>
}

// -----

// Gelu: the erf form as 0.5 x erfc(-x/sqrt2), the tanh form as
// x / (1 + exp(-2u)); ortc.gelu the same.
// CHECK-LABEL: func.func @gelu
// CHECK: math.erfc
// CHECK: math.exp
// CHECK: arith.divf
// CHECK: math.erfc
// CHECK-NOT: onnx.Gelu
// CHECK-NOT: ortc.gelu
func.func @gelu(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = "onnx.Gelu"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "onnx.Gelu"(%x) {approximate = "tanh"} : (tensor<8xf32>) -> tensor<8xf32>
  %2 = ortc.gelu %x {approximate = "none"} : tensor<8xf32> -> tensor<8xf32>
  return %0, %1, %2 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Variadic ops fold left; Mean divides by the count.
// CHECK-LABEL: func.func @variadic
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %[[C:.*]]: f32, %{{.*}}: f32):
// CHECK-NEXT: %[[M1:.*]] = arith.maximumf %[[A]], %[[B]] : f32
// CHECK-NEXT: %[[M2:.*]] = arith.maximumf %[[M1]], %[[C]] : f32
// CHECK: ^bb0(%[[D:.*]]: f32, %[[E:.*]]: f32, %{{.*}}: f32):
// CHECK-DAG: %[[S:.*]] = arith.addf %[[D]], %[[E]] : f32
// CHECK-DAG: %[[TWO:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: arith.divf %[[S]], %[[TWO]] : f32
// CHECK: arith.minui
func.func @variadic(%a: tensor<4xf32>, %b: tensor<4xf32>, %c: tensor<4xf32>, %u: tensor<4xui8>)
    -> (tensor<4xf32>, tensor<4xf32>, tensor<4xui8>) {
  %0 = "onnx.Max"(%a, %b, %c) : (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %1 = "onnx.Mean"(%a, %b) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  %2 = "onnx.Min"(%u, %u) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0, %1, %2 : tensor<4xf32>, tensor<4xf32>, tensor<4xui8>
}

// -----

// Identity forwards its input (a tensor.cast where only the shape's
// knowledge differs); constants of every form become arith.constant,
// resources included.
// CHECK-LABEL: func.func @identity_constants
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>)
// CHECK-DAG: %[[CAST:.*]] = tensor.cast %[[X]] : tensor<4xf32> to tensor<?xf32>
// CHECK-DAG: arith.constant dense<[1, 2, 3]> : tensor<3xi64>
// CHECK-DAG: arith.constant dense<[true, false]> : tensor<2xi1>
// CHECK-DAG: arith.constant dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>
// CHECK: return %[[X]], %[[CAST]]
func.func @identity_constants(%x: tensor<4xf32>)
    -> (tensor<4xf32>, tensor<?xf32>, tensor<3xi64>, tensor<2xi1>, tensor<4xf32>) {
  %0 = "onnx.Identity"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "onnx.Identity"(%x) : (tensor<4xf32>) -> tensor<?xf32>
  %2 = "onnx.Constant"() {value_ints = array<i64: 1, 2, 3>} : () -> tensor<3xi64>
  %3 = "onnx.Constant"() {value = dense<[true, false]> : tensor<2xi1>} : () -> tensor<2xi1>
  %4 = "onnx.Constant"() {value = dense_resource<w> : tensor<4xf32>} : () -> tensor<4xf32>
  return %0, %1, %2, %3, %4 : tensor<4xf32>, tensor<?xf32>, tensor<3xi64>, tensor<2xi1>, tensor<4xf32>
}

{-#
  dialect_resources: {
    builtin: {
      w: "0x040000000000803F000000400000404000008040"
    }
  }
#-}

// -----

// The kernel form: to_tensor / materialize_in_destination around the ops.
// CHECK-LABEL: func.func @kernel
// CHECK: %[[T:.*]] = bufferization.to_tensor %{{.*}} restrict : memref<?x16xf32> to tensor<?x16xf32>
// CHECK: %[[G:.*]] = linalg.generic
// CHECK: math.tanh
// CHECK: bufferization.materialize_in_destination %[[G]] in restrict writable
func.func @kernel(%x: memref<?x16xf32>, %out: memref<?x16xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<?x16xf32> to tensor<?x16xf32>
  %r = "onnx.Tanh"(%tx) : (tensor<?x16xf32>) -> tensor<?x16xf32>
  bufferization.materialize_in_destination %r in restrict writable %out
      : (tensor<?x16xf32>, memref<?x16xf32>) -> ()
  return
}

// -----

// A `?` against a static size is read as equal (identity map): the CPU plan
// checks the two at run time. Only a static 1 broadcasts.
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1) -> (d0, d1)>
// CHECK-LABEL: func.func @dynamic_against_static
// CHECK: %[[INIT:.*]] = tensor.empty() : tensor<3x4xf32>
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[ID]], #[[ID]]]
// CHECK-SAME: ins(%{{.*}}, %{{.*}} : tensor<?x4xf32>, tensor<3x4xf32>) outs(%[[INIT]] : tensor<3x4xf32>)
func.func @dynamic_against_static(%x: tensor<?x4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  %0 = "onnx.Add"(%x, %y) : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}
