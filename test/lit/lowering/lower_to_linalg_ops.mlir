// RUN: ortc-opt %s -split-input-file -onnx-lower-to-linalg | FileCheck %s

// f16 computes in f32: the bits are widened with integer code (exact), the
// f32 result rounded back to nearest even (no extf/truncf on f16, which
// LLVM may turn into compiler-rt calls).
// CHECK-LABEL: func.func @add_f16
// CHECK: ^bb0(%[[A:.*]]: f16, %[[B:.*]]: f16, %{{.*}}: f16):
// CHECK: %[[AB:.*]] = arith.bitcast %[[A]] : f16 to i16
// CHECK: arith.extui %[[AB]] : i16 to i32
// CHECK: arith.uitofp
// CHECK: %[[AF:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: %[[BF:.*]] = arith.bitcast %{{.*}} : i32 to f32
// CHECK: %[[S:.*]] = arith.addf %[[AF]], %[[BF]] : f32
// CHECK: arith.bitcast %[[S]] : f32 to i32
// CHECK: %[[T:.*]] = arith.trunci %{{.*}} : i32 to i16
// CHECK: %[[H:.*]] = arith.bitcast %[[T]] : i16 to f16
// CHECK: linalg.yield %[[H]] : f16
// CHECK-NOT: arith.extf
// CHECK-NOT: arith.truncf
func.func @add_f16(%x: tensor<8xf16>, %y: tensor<8xf16>) -> tensor<8xf16> {
  %0 = "onnx.Add"(%x, %y) : (tensor<8xf16>, tensor<8xf16>) -> tensor<8xf16>
  return %0 : tensor<8xf16>
}

// -----

// bf16 widens by a shift; rounding adds 0x7fff plus the lowest kept bit.
// CHECK-LABEL: func.func @mul_bf16
// CHECK: %[[C16:.*]] = arith.constant 16 : i32
// CHECK: arith.shli %{{.*}}, %[[C16]] : i32
// CHECK: arith.mulf %{{.*}}, %{{.*}} : f32
// CHECK: arith.constant 32767 : i32
// CHECK: arith.trunci %{{.*}} : i32 to i16
// CHECK: arith.bitcast %{{.*}} : i16 to bf16
func.func @mul_bf16(%x: tensor<8xbf16>, %y: tensor<8xbf16>) -> tensor<8xbf16> {
  %0 = "onnx.Mul"(%x, %y) : (tensor<8xbf16>, tensor<8xbf16>) -> tensor<8xbf16>
  return %0 : tensor<8xbf16>
}

// -----

// Where only moves values: f16 bits are selected as they are.
// CHECK-LABEL: func.func @where_f16
// CHECK: ^bb0(%[[C:.*]]: i1, %[[X:.*]]: f16, %[[Y:.*]]: f16, %{{.*}}: f16):
// CHECK: %[[XB:.*]] = arith.bitcast %[[X]] : f16 to i16
// CHECK: %[[YB:.*]] = arith.bitcast %[[Y]] : f16 to i16
// CHECK: %[[S:.*]] = arith.select %[[C]], %[[XB]], %[[YB]] : i16
// CHECK: %[[R:.*]] = arith.bitcast %[[S]] : i16 to f16
// CHECK: linalg.yield %[[R]] : f16
func.func @where_f16(%c: tensor<8xi1>, %x: tensor<8xf16>, %y: tensor<8xf16>) -> tensor<8xf16> {
  %0 = "onnx.Where"(%c, %x, %y) : (tensor<8xi1>, tensor<8xf16>, tensor<8xf16>) -> tensor<8xf16>
  return %0 : tensor<8xf16>
}

// -----

// A Cast from f64 to f16 rounds to f32 "to odd" first, so that the f16
// rounding is the only one that counts.
// CHECK-LABEL: func.func @cast_f64_f16
// CHECK: %[[T:.*]] = arith.truncf %{{.*}} : f64 to f32
// CHECK: %[[BACK:.*]] = arith.extf %[[T]] : f32 to f64
// CHECK: arith.cmpf one, %[[BACK]]
// CHECK: arith.ori
// CHECK: arith.bitcast %{{.*}} : i16 to f16
func.func @cast_f64_f16(%x: tensor<8xf64>) -> tensor<8xf16> {
  %0 = "onnx.Cast"(%x) {to = 10 : i64} : (tensor<8xf64>) -> tensor<8xf16>
  return %0 : tensor<8xf16>
}

// -----

// Unsigned compare, divide and max use the unsigned arith ops.
// CHECK-LABEL: func.func @uints
// CHECK: ^bb0(%[[A:.*]]: ui16, %[[B:.*]]: ui16, %{{.*}}: i1):
// CHECK: %[[SA:.*]] = builtin.unrealized_conversion_cast %[[A]] : ui16 to i16
// CHECK: %[[SB:.*]] = builtin.unrealized_conversion_cast %[[B]] : ui16 to i16
// CHECK: arith.cmpi ult, %[[SA]], %[[SB]] : i16
// CHECK: arith.divui %{{.*}}, %{{.*}} : i32
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : i32 to ui32
// CHECK: arith.maxui %{{.*}}, %{{.*}} : i64
// CHECK: arith.remui %{{.*}}, %{{.*}} : i16
func.func @uints(%a: tensor<8xui16>, %b: tensor<8xui32>, %c: tensor<8xui64>)
    -> (tensor<8xi1>, tensor<8xui32>, tensor<8xui64>, tensor<8xui16>) {
  %0 = "onnx.Less"(%a, %a) : (tensor<8xui16>, tensor<8xui16>) -> tensor<8xi1>
  %1 = "onnx.Div"(%b, %b) : (tensor<8xui32>, tensor<8xui32>) -> tensor<8xui32>
  %2 = "onnx.Max"(%c, %c) : (tensor<8xui64>, tensor<8xui64>) -> tensor<8xui64>
  %3 = "onnx.Mod"(%a, %a) : (tensor<8xui16>, tensor<8xui16>) -> tensor<8xui16>
  return %0, %1, %2, %3 : tensor<8xi1>, tensor<8xui32>, tensor<8xui64>, tensor<8xui16>
}

// -----

// i16 is an ordinary signless integer.
// CHECK-LABEL: func.func @i16
// CHECK: arith.subi %{{.*}}, %{{.*}} : i16
// CHECK: arith.cmpi sge, %{{.*}}, %{{.*}} : i16
func.func @i16(%a: tensor<8xi16>, %b: tensor<8xi16>) -> (tensor<8xi16>, tensor<8xi1>) {
  %0 = "onnx.Sub"(%a, %b) : (tensor<8xi16>, tensor<8xi16>) -> tensor<8xi16>
  %1 = "onnx.GreaterOrEqual"(%a, %b) : (tensor<8xi16>, tensor<8xi16>) -> tensor<8xi1>
  return %0, %1 : tensor<8xi16>, tensor<8xi1>
}

// -----

// BitShift: an amount out of [0, width) (an unsigned compare, so negative
// amounts too) gives what the sign fill alone gives: 0, or for a signed
// right shift the shift by width - 1.
// CHECK-LABEL: func.func @bitshift
// CHECK: %[[L:.*]] = builtin.unrealized_conversion_cast %{{.*}} : ui8 to i8
// CHECK: %[[Y:.*]] = builtin.unrealized_conversion_cast %{{.*}} : ui8 to i8
// CHECK: %[[OK:.*]] = arith.cmpi ult, %[[Y]], %{{.*}} : i8
// CHECK: %[[AMT:.*]] = arith.select %[[OK]], %[[Y]], %{{.*}} : i8
// CHECK: %[[SH:.*]] = arith.shli %[[L]], %[[AMT]] : i8
// CHECK: arith.select %[[OK]], %[[SH]], %{{.*}} : i8
// CHECK: ^bb0(%[[X:.*]]: i32, %[[N:.*]]: i32, %{{.*}}: i32):
// CHECK: %[[IN:.*]] = arith.cmpi ult, %[[N]], %{{.*}} : i32
// CHECK: %[[A2:.*]] = arith.select %[[IN]], %[[N]], %{{.*}} : i32
// CHECK: arith.shrsi %[[X]], %[[A2]] : i32
// CHECK: arith.shrui %{{.*}}, %{{.*}} : i16
func.func @bitshift(%a: tensor<8xui8>, %b: tensor<8xi32>, %c: tensor<8xui16>)
    -> (tensor<8xui8>, tensor<8xi32>, tensor<8xui16>) {
  %0 = "onnx.BitShift"(%a, %a) {direction = "LEFT"} : (tensor<8xui8>, tensor<8xui8>) -> tensor<8xui8>
  %1 = "onnx.BitShift"(%b, %b) {direction = "RIGHT"} : (tensor<8xi32>, tensor<8xi32>) -> tensor<8xi32>
  %2 = "onnx.BitShift"(%c, %c) {direction = "RIGHT"} : (tensor<8xui16>, tensor<8xui16>) -> tensor<8xui16>
  return %0, %1, %2 : tensor<8xui8>, tensor<8xi32>, tensor<8xui16>
}

// -----

// CHECK-LABEL: func.func @bitwise
// CHECK: arith.andi %{{.*}}, %{{.*}} : i16
// CHECK: arith.ori %{{.*}}, %{{.*}} : i64
// CHECK: arith.xori %{{.*}}, %{{.*}} : i8
// CHECK: %[[M1:.*]] = arith.constant -1 : i32
// CHECK: arith.xori %{{.*}}, %[[M1]] : i32
func.func @bitwise(%a: tensor<8xi16>, %b: tensor<4x8xui64>, %c: tensor<8xui64>, %d: tensor<8xui8>,
                   %e: tensor<8xi32>)
    -> (tensor<8xi16>, tensor<4x8xui64>, tensor<8xui8>, tensor<8xi32>) {
  %0 = "onnx.BitwiseAnd"(%a, %a) : (tensor<8xi16>, tensor<8xi16>) -> tensor<8xi16>
  %1 = "onnx.BitwiseOr"(%b, %c) : (tensor<4x8xui64>, tensor<8xui64>) -> tensor<4x8xui64>
  %2 = "onnx.BitwiseXor"(%d, %d) : (tensor<8xui8>, tensor<8xui8>) -> tensor<8xui8>
  %3 = "onnx.BitwiseNot"(%e) : (tensor<8xi32>) -> tensor<8xi32>
  return %0, %1, %2, %3 : tensor<8xi16>, tensor<4x8xui64>, tensor<8xui8>, tensor<8xi32>
}

// -----

// Float Mod with fmod=0 takes the divisor's sign: fmod, then r + y where a
// nonzero r has the other sign, and a zero r gets y's sign.
// CHECK-LABEL: func.func @mod_fmod0
// CHECK: ^bb0(%[[X:.*]]: f32, %[[Y:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[R:.*]] = arith.remf %[[X]], %[[Y]] : f32
// CHECK: arith.xori
// CHECK: %[[SUM:.*]] = arith.addf %[[R]], %[[Y]] : f32
// CHECK: %[[FIXED:.*]] = arith.select %{{.*}}, %[[SUM]], %[[R]] : f32
// CHECK: %[[CS:.*]] = math.copysign %[[R]], %[[Y]] : f32
// CHECK: %[[Z:.*]] = arith.cmpf oeq, %[[R]], %{{.*}} : f32
// CHECK: arith.select %[[Z]], %[[CS]], %[[FIXED]] : f32
func.func @mod_fmod0(%a: tensor<8xf32>, %b: tensor<8xf32>) -> tensor<8xf32> {
  %0 = "onnx.Mod"(%a, %b) {fmod = 0 : i64} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  return %0 : tensor<8xf32>
}

// -----

// CHECK-LABEL: func.func @classify
// CHECK: %[[INF:.*]] = arith.constant 0x7F800000 : f32
// CHECK: arith.cmpf oeq, %{{.*}}, %[[INF]] : f32
// CHECK: arith.cmpf uno, %[[V:.*]], %[[V]] : f32
// CHECK: %[[NINF:.*]] = arith.constant 0xFFF0000000000000 : f64
// CHECK: arith.cmpf oeq, %{{.*}}, %[[NINF]] : f64
func.func @classify(%a: tensor<8xf32>, %b: tensor<8xf64>) -> (tensor<8xi1>, tensor<8xi1>, tensor<8xi1>) {
  %0 = "onnx.IsInf"(%a) {detect_negative = 0 : i64} : (tensor<8xf32>) -> tensor<8xi1>
  %1 = "onnx.IsNaN"(%a) : (tensor<8xf32>) -> tensor<8xi1>
  %2 = "onnx.IsInf"(%b) {detect_positive = 0 : i64} : (tensor<8xf64>) -> tensor<8xi1>
  return %0, %1, %2 : tensor<8xi1>, tensor<8xi1>, tensor<8xi1>
}

// -----

// PRelu: the slope broadcasts to X (here 3x1 over 2x3x4).
// CHECK-DAG: #[[ID:.*]] = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
// CHECK-DAG: #[[SL:.*]] = affine_map<(d0, d1, d2) -> (d1, 0)>
// CHECK-LABEL: func.func @prelu
// CHECK: linalg.generic {indexing_maps = [#[[ID]], #[[SL]], #[[ID]]]
// CHECK: ^bb0(%[[X:.*]]: f32, %[[S:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[M:.*]] = arith.mulf %[[S]], %[[X]] : f32
// CHECK: %[[NEG:.*]] = arith.cmpf olt, %[[X]], %{{.*}} : f32
// CHECK: arith.select %[[NEG]], %[[M]], %[[X]] : f32
// CHECK: arith.muli
// CHECK: arith.cmpi slt
func.func @prelu(%x: tensor<2x3x4xf32>, %s: tensor<3x1xf32>, %i: tensor<4xi64>)
    -> (tensor<2x3x4xf32>, tensor<4xi64>) {
  %0 = "onnx.PRelu"(%x, %s) : (tensor<2x3x4xf32>, tensor<3x1xf32>) -> tensor<2x3x4xf32>
  %1 = "onnx.PRelu"(%i, %i) : (tensor<4xi64>, tensor<4xi64>) -> tensor<4xi64>
  return %0, %1 : tensor<2x3x4xf32>, tensor<4xi64>
}

// -----

// Float math: the trigonometric and hyperbolic functions, Round (half to
// even) and the activations.
// CHECK-LABEL: func.func @float_math
// CHECK: math.tan
// CHECK: math.asin
// CHECK: math.acos
// CHECK: math.atan
// CHECK: math.sinh
// CHECK: math.cosh
// CHECK: math.asinh
// CHECK: math.acosh
// CHECK: math.atanh
// CHECK: math.roundeven
// CHECK: math.absf
// CHECK: arith.divf
// CHECK: math.log1p
// CHECK: math.tanh
// CHECK: math.exp
// CHECK: arith.maximumf
// CHECK: math.expm1
// CHECK: arith.minimumf
func.func @float_math(%x: tensor<8xf32>) -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
    tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
    tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) {
  %0 = "onnx.Tan"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "onnx.Asin"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %2 = "onnx.Acos"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %3 = "onnx.Atan"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %4 = "onnx.Sinh"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %5 = "onnx.Cosh"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %6 = "onnx.Asinh"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %7 = "onnx.Acosh"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %8 = "onnx.Atanh"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %9 = "onnx.Round"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %10 = "onnx.Softsign"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %11 = "onnx.Mish"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %12 = "onnx.Swish"(%x) {alpha = 0.5 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  %13 = "onnx.Celu"(%x) {alpha = 2.0 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  return %0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13 : tensor<8xf32>, tensor<8xf32>,
      tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>,
      tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>
}

// -----

// Shrink and ThresholdedRelu compare with their attributes; Sign keeps +-0
// and NaN (floats) and is 0/1 for unsigned integers.
// CHECK-LABEL: func.func @thresholds
// CHECK: %[[L:.*]] = arith.constant 1.500000e+00 : f32
// CHECK: arith.cmpf ogt, %{{.*}}, %[[L]] : f32
// CHECK: %[[NL:.*]] = arith.constant -1.500000e+00 : f32
// CHECK: arith.cmpf olt, %{{.*}}, %[[NL]] : f32
// CHECK: %[[A:.*]] = arith.constant 2.000000e+00 : f32
// CHECK: arith.cmpf ogt, %{{.*}}, %[[A]] : f32
// CHECK: arith.cmpf ogt
// CHECK: arith.cmpf olt
// CHECK: arith.cmpi ne, %{{.*}}, %{{.*}} : i32
func.func @thresholds(%x: tensor<8xf32>, %u: tensor<8xui32>)
    -> (tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xui32>) {
  %0 = "onnx.Shrink"(%x) {lambd = 1.5 : f32, bias = 0.25 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  %1 = "onnx.ThresholdedRelu"(%x) {alpha = 2.0 : f32} : (tensor<8xf32>) -> tensor<8xf32>
  %2 = "onnx.Sign"(%x) : (tensor<8xf32>) -> tensor<8xf32>
  %3 = "onnx.Sign"(%u) : (tensor<8xui32>) -> tensor<8xui32>
  return %0, %1, %2, %3 : tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xui32>
}

// -----

// An unsigned constant is a signless arith.constant and a generic that
// views its values as unsigned, so that folding it into a consumer's body
// makes a valid (signless) scalar constant.
// CHECK-LABEL: func.func @unsigned_constant
// CHECK: %[[C:.*]] = arith.constant dense<[1, 2, -1]> : tensor<3xi64>
// CHECK: linalg.generic {{.*}} ins(%[[C]] : tensor<3xi64>) outs(%{{.*}} : tensor<3xui64>)
// CHECK: builtin.unrealized_conversion_cast %{{.*}} : i64 to ui64
func.func @unsigned_constant(%x: tensor<3xui64>) -> tensor<3xui64> {
  %c = "onnx.Constant"() {value = dense<[1, 2, 18446744073709551615]> : tensor<3xui64>} : () -> tensor<3xui64>
  %0 = "onnx.Add"(%x, %c) : (tensor<3xui64>, tensor<3xui64>) -> tensor<3xui64>
  return %0 : tensor<3xui64>
}

// -----

// BitCast moves bits: arith.bitcast between widths that match, f16 as its
// i16 bits, a bool as its byte, unsigned through the signless view.
// CHECK-LABEL: func.func @bitcasts
// CHECK: arith.bitcast %{{.*}} : f32 to i32
// CHECK: %[[H:.*]] = arith.bitcast %{{.*}} : f16 to i16
// CHECK: builtin.unrealized_conversion_cast %[[H]] : i16 to ui16
// CHECK: %[[B:.*]] = arith.extui %{{.*}} : i1 to i8
// CHECK: builtin.unrealized_conversion_cast %[[B]] : i8 to ui8
// CHECK: %[[U:.*]] = builtin.unrealized_conversion_cast %{{.*}} : ui64 to i64
// CHECK: arith.bitcast %[[U]] : i64 to f64
func.func @bitcasts(%f: tensor<4xf32>, %h: tensor<4xf16>, %b: tensor<4xi1>, %u: tensor<4xui64>)
    -> (tensor<4xi32>, tensor<4xui16>, tensor<4xui8>, tensor<4xf64>) {
  %0 = "onnx.BitCast"(%f) {to = 6 : i64} : (tensor<4xf32>) -> tensor<4xi32>
  %1 = "onnx.BitCast"(%h) {to = 4 : i64} : (tensor<4xf16>) -> tensor<4xui16>
  %2 = "onnx.BitCast"(%b) {to = 2 : i64} : (tensor<4xi1>) -> tensor<4xui8>
  %3 = "onnx.BitCast"(%u) {to = 11 : i64} : (tensor<4xui64>) -> tensor<4xf64>
  return %0, %1, %2, %3 : tensor<4xi32>, tensor<4xui16>, tensor<4xui8>, tensor<4xf64>
}

// -----

// SwiGLU: Swish_alpha(A) * B.
// CHECK-LABEL: func.func @swiglu
// CHECK: ^bb0(%[[A:.*]]: f32, %[[B:.*]]: f32, %{{.*}}: f32):
// CHECK: %[[NA:.*]] = arith.constant -5.000000e-01 : f32
// CHECK: %[[AA:.*]] = arith.mulf %[[NA]], %[[A]] : f32
// CHECK: math.exp %[[AA]]
// CHECK: %[[G:.*]] = arith.divf %[[A]], %{{.*}} : f32
// CHECK: arith.mulf %[[G]], %[[B]] : f32
func.func @swiglu(%a: tensor<2x8xf32>, %b: tensor<2x8xf32>) -> tensor<2x8xf32> {
  %0 = "onnx.SwiGLU"(%a, %b) {alpha = 0.5 : f32} : (tensor<2x8xf32>, tensor<2x8xf32>) -> tensor<2x8xf32>
  return %0 : tensor<2x8xf32>
}
