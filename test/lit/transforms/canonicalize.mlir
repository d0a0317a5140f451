// RUN: ortc-opt %s -split-input-file -onnx-canonicalize -onnx-dce | FileCheck %s

// CHECK-LABEL: func.func @identity
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @identity(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %0 = "onnx.Identity"(%x) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Negative: an Identity that changes the type stays (shape inference first).
// CHECK-LABEL: func.func @identity_type_change
// CHECK: "onnx.Identity"
func.func @identity_type_change(%x: tensor<*xf32>) -> tensor<2x3xf32> {
  %0 = "onnx.Identity"(%x) : (tensor<*xf32>) -> tensor<2x3xf32>
  return %0 : tensor<2x3xf32>
}

// -----

// Two transposes compose; composing to the identity removes both.
// CHECK-LABEL: func.func @transposes
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[T:.*]] = "onnx.Transpose"(%[[X]]) <{perm = array<i64: 2, 0, 1>}> : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NOT: "onnx.Transpose"
// CHECK: return %[[T]], %[[X]]
func.func @transposes(%x: tensor<2x3x4xf32>) -> (tensor<4x2x3xf32>, tensor<2x3x4xf32>) {
  %a = "onnx.Transpose"(%x) {perm = array<i64: 1, 0, 2>} : (tensor<2x3x4xf32>) -> tensor<3x2x4xf32>
  %b = "onnx.Transpose"(%a) {perm = array<i64: 2, 1, 0>} : (tensor<3x2x4xf32>) -> tensor<4x2x3xf32>
  %c = "onnx.Transpose"(%x) {perm = array<i64: 0, 2, 1>} : (tensor<2x3x4xf32>) -> tensor<2x4x3xf32>
  %d = "onnx.Transpose"(%c) {perm = array<i64: 0, 2, 1>} : (tensor<2x4x3xf32>) -> tensor<2x3x4xf32>
  return %b, %d : tensor<4x2x3xf32>, tensor<2x3x4xf32>
}

// -----

// A missing perm reverses the dims.
// CHECK-LABEL: func.func @transpose_default_perm
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-NEXT: return %[[X]]
func.func @transpose_default_perm(%x: tensor<2x3xf32>) -> tensor<2x3xf32> {
  %a = "onnx.Transpose"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  %b = "onnx.Transpose"(%a) : (tensor<3x2xf32>) -> tensor<2x3xf32>
  return %b : tensor<2x3xf32>
}

// -----

// CHECK-LABEL: func.func @reshapes
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4xf32>)
// CHECK: %[[S2:.*]] = "onnx.Constant"() <{value_ints = array<i64: 4, -1>}>
// CHECK: %[[R:.*]] = "onnx.Reshape"(%[[X]], %[[S2]])
// CHECK-NOT: "onnx.Reshape"
// CHECK: return %[[R]]
func.func @reshapes(%x: tensor<2x3x4xf32>) -> tensor<4x6xf32> {
  %s1 = "onnx.Constant"() {value_ints = array<i64: 6, 4>} : () -> tensor<2xi64>
  %s2 = "onnx.Constant"() {value_ints = array<i64: 4, -1>} : () -> tensor<2xi64>
  %a = "onnx.Reshape"(%x, %s1) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %b = "onnx.Reshape"(%a, %s2) : (tensor<6x4xf32>, tensor<2xi64>) -> tensor<4x6xf32>
  return %b : tensor<4x6xf32>
}

// -----

// Negative: a 0 in the outer shape copies a dim of the inner result, and a
// shape that is not a constant is unknown: both chains stay.
// CHECK-LABEL: func.func @reshapes_kept
// CHECK-COUNT-4: "onnx.Reshape"
func.func @reshapes_kept(%x: tensor<2x3x4xf32>, %s: tensor<2xi64>) -> (tensor<6x4xf32>, tensor<?x?xf32>) {
  %s1 = "onnx.Constant"() {value_ints = array<i64: 6, 4>} : () -> tensor<2xi64>
  %s2 = "onnx.Constant"() {value_ints = array<i64: 0, -1>} : () -> tensor<2xi64>
  %a = "onnx.Reshape"(%x, %s1) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %b = "onnx.Reshape"(%a, %s2) : (tensor<6x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %c = "onnx.Reshape"(%x, %s1) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<6x4xf32>
  %d = "onnx.Reshape"(%c, %s) : (tensor<6x4xf32>, tensor<2xi64>) -> tensor<?x?xf32>
  return %b, %d : tensor<6x4xf32>, tensor<?x?xf32>
}

// -----

// to = 1 is FLOAT, 11 is DOUBLE, 10 is FLOAT16, 6 is INT32, 3 is INT8.
// CHECK-LABEL: func.func @casts
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[H:.*]]: tensor<4xf16>, %[[I:.*]]: tensor<4xi8>)
// CHECK: %[[HD:.*]] = "onnx.Cast"(%[[H]]) <{{{.*}}to = 11 : i64}> : (tensor<4xf16>) -> tensor<4xf64>
// CHECK-NOT: "onnx.Cast"
// CHECK: return %[[X]], %[[HD]], %[[I]]
func.func @casts(%x: tensor<4xf32>, %h: tensor<4xf16>, %i: tensor<4xi8>) -> (tensor<4xf32>, tensor<4xf64>, tensor<4xi8>) {
  // Cast to its own type.
  %a = "onnx.Cast"(%x) {to = 1 : i64} : (tensor<4xf32>) -> tensor<4xf32>
  // f16 -> f32 is exact, so f16 -> f32 -> f64 is f16 -> f64.
  %b = "onnx.Cast"(%h) {to = 1 : i64} : (tensor<4xf16>) -> tensor<4xf32>
  %c = "onnx.Cast"(%b) {to = 11 : i64} : (tensor<4xf32>) -> tensor<4xf64>
  // i8 -> i32 -> i8 round-trips.
  %d = "onnx.Cast"(%i) {to = 6 : i64} : (tensor<4xi8>) -> tensor<4xi32>
  %e = "onnx.Cast"(%d) {to = 3 : i64} : (tensor<4xi32>) -> tensor<4xi8>
  return %a, %c, %e : tensor<4xf32>, tensor<4xf64>, tensor<4xi8>
}

// -----

// Negative: f32 -> f16 -> f32 rounds, and f32 -> i32 -> f32 truncates; both stay.
// CHECK-LABEL: func.func @lossy_casts_kept
// CHECK-COUNT-4: "onnx.Cast"
func.func @lossy_casts_kept(%x: tensor<4xf32>) -> (tensor<4xf32>, tensor<4xf32>) {
  %a = "onnx.Cast"(%x) {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
  %b = "onnx.Cast"(%a) {to = 1 : i64} : (tensor<4xf16>) -> tensor<4xf32>
  %c = "onnx.Cast"(%x) {to = 6 : i64} : (tensor<4xf32>) -> tensor<4xi32>
  %d = "onnx.Cast"(%c) {to = 1 : i64} : (tensor<4xi32>) -> tensor<4xf32>
  return %b, %d : tensor<4xf32>, tensor<4xf32>
}

// -----

// CastLike takes its target from the second input's element type: to f16 it
// becomes a Cast (to = 10); to the input's own type it disappears.
// CHECK-LABEL: func.func @cast_like
// CHECK-SAME: (%[[X:.*]]: tensor<4xf32>, %[[H:.*]]: tensor<2xf16>, %[[F:.*]]: tensor<f32>)
// CHECK: %[[C:.*]] = "onnx.Cast"(%[[X]]) <{{{.*}}to = 10 : i64}> : (tensor<4xf32>) -> tensor<4xf16>
// CHECK-NOT: "onnx.CastLike"
// CHECK: return %[[C]], %[[X]]
func.func @cast_like(%x: tensor<4xf32>, %h: tensor<2xf16>, %f: tensor<f32>) -> (tensor<4xf16>, tensor<4xf32>) {
  %a = "onnx.CastLike"(%x, %h) : (tensor<4xf32>, tensor<2xf16>) -> tensor<4xf16>
  %b = "onnx.CastLike"(%x, %f) : (tensor<4xf32>, tensor<f32>) -> tensor<4xf32>
  return %a, %b : tensor<4xf16>, tensor<4xf32>
}

// -----

// Negative: a target of unknown type stays a CastLike.
// CHECK-LABEL: func.func @cast_like_unknown_target
// CHECK: "onnx.CastLike"
func.func @cast_like_unknown_target(%x: tensor<4xf32>, %t: !onnx.unknown) -> tensor<*xf32> {
  %a = "onnx.CastLike"(%x, %t) : (tensor<4xf32>, !onnx.unknown) -> tensor<*xf32>
  return %a : tensor<*xf32>
}
