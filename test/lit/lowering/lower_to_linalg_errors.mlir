// RUN: ortc-opt %s -split-input-file -verify-diagnostics -onnx-lower-to-linalg="fail-on-unlowered=1"

// With fail-on-unlowered (as in the kernel pipeline), every onnx/ortc op
// that stays is an error that names it and says why (its node too, when the
// location has its name: node_name_error.mlir).
func.func @hardmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{kernel lowering: cannot lower 'onnx.Hardmax': not an elementwise op the kernel lowering takes}}
  %0 = "onnx.Hardmax"(%x) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @pow_uint(%x: tensor<4xui8>) -> tensor<4xui8> {
  // expected-error @+1 {{cannot lower 'onnx.Pow': base has element type ui8; onnx.Pow takes f32, f64, f16, bf16, i32, i64}}
  %0 = "onnx.Pow"(%x, %x) : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

func.func @i4(%x: tensor<4xi4>) -> tensor<4xi4> {
  // expected-error @+1 {{cannot lower 'onnx.Add': result element type i4 is not one of f32, f64, f16, bf16, i8, i16, i32, i64, ui8, ui16, ui32, ui64, i1}}
  %0 = "onnx.Add"(%x, %x) : (tensor<4xi4>, tensor<4xi4>) -> tensor<4xi4>
  return %0 : tensor<4xi4>
}

// -----

func.func @no_dim_source(%x: tensor<1x4xf32>) -> tensor<?x4xf32> {
  // expected-error @+1 {{cannot lower 'onnx.Relu': result dim 0 is ? but no input has ? there}}
  %0 = "onnx.Relu"(%x) : (tensor<1x4xf32>) -> tensor<?x4xf32>
  return %0 : tensor<?x4xf32>
}

// -----

func.func @gelu_mode(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot lower 'onnx.Gelu': Gelu approximate='erf' (takes none or tanh)}}
  %0 = "onnx.Gelu"(%x) {approximate = "erf"} : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @cast_f8(%x: tensor<4xf32>) -> tensor<4xf8E4M3FN> {
  // expected-error @+1 {{cannot lower 'onnx.Cast': result element type f8E4M3FN is not one of f32, f64, f16, bf16, i8, i16, i32, i64, ui8, ui16, ui32, ui64, i1}}
  %0 = "onnx.Cast"(%x) {to = 17 : i64} : (tensor<4xf32>) -> tensor<4xf8E4M3FN>
  return %0 : tensor<4xf8E4M3FN>
}

// -----

func.func @mod_fmod2(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot lower 'onnx.Mod': Mod fmod=2}}
  %0 = "onnx.Mod"(%x, %x) {fmod = 2 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @elided(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot lower 'onnx.Constant': constant resource has no data (elided) or the wrong size}}
  %c = "onnx.Constant"() {value = dense_resource<w__elided> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = "onnx.Add"(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @bitshift_direction(%x: tensor<4xui8>) -> tensor<4xui8> {
  // expected-error @+1 {{cannot lower 'onnx.BitShift': BitShift direction='UP'}}
  %0 = "onnx.BitShift"(%x, %x) {direction = "UP"} : (tensor<4xui8>, tensor<4xui8>) -> tensor<4xui8>
  return %0 : tensor<4xui8>
}

// -----

func.func @bitwise_float(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot lower 'onnx.BitwiseAnd': operand 0 has element type f32; onnx.BitwiseAnd takes i8, i16, i32, i64, ui8, ui16, ui32, ui64}}
  %0 = "onnx.BitwiseAnd"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @shrink_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{cannot lower 'onnx.Shrink': operand 0 has element type i32; onnx.Shrink takes f32, f64, f16, bf16}}
  %0 = "onnx.Shrink"(%x) : (tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @isinf_int(%x: tensor<4xi32>) -> tensor<4xi1> {
  // expected-error @+1 {{cannot lower 'onnx.IsInf': operand 0 has element type i32; onnx.IsInf takes f32, f64, f16, bf16}}
  %0 = "onnx.IsInf"(%x) : (tensor<4xi32>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

// PRelu broadcasts the slope to X only (unidirectional): X must have the
// result's shape.
func.func @prelu_x_broadcast(%x: tensor<4xf32>, %slope: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{cannot lower 'onnx.PRelu': input 0 shape tensor<4xf32> does not match the result's tensor<3x4xf32>}}
  %0 = "onnx.PRelu"(%x, %slope) : (tensor<4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
}

// -----

func.func @prelu_i8(%x: tensor<4xi8>) -> tensor<4xi8> {
  // expected-error @+1 {{cannot lower 'onnx.PRelu': operand 0 has element type i8; onnx.PRelu takes f32, f64, f16, bf16, i32, i64, ui32, ui64}}
  %0 = "onnx.PRelu"(%x, %x) : (tensor<4xi8>, tensor<4xi8>) -> tensor<4xi8>
  return %0 : tensor<4xi8>
}

// -----

func.func @compare_mixed(%x: tensor<4xui16>, %y: tensor<4xi16>) -> tensor<4xi1> {
  // expected-error @+1 {{cannot lower 'onnx.Less': operands have different element types (ui16, i16)}}
  %0 = "onnx.Less"(%x, %y) : (tensor<4xui16>, tensor<4xi16>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}

// -----

func.func @bitcast_width(%x: tensor<4xf32>) -> tensor<4xi64> {
  // expected-error @+1 {{cannot lower 'onnx.BitCast': BitCast from f32 to i64 (different widths)}}
  %0 = "onnx.BitCast"(%x) {to = 7 : i64} : (tensor<4xf32>) -> tensor<4xi64>
  return %0 : tensor<4xi64>
}

// -----

func.func @bitcast_to_bool(%x: tensor<4xui8>) -> tensor<4xi1> {
  // expected-error @+1 {{cannot lower 'onnx.BitCast': BitCast from ui8 to bool}}
  %0 = "onnx.BitCast"(%x) {to = 9 : i64} : (tensor<4xui8>) -> tensor<4xi1>
  return %0 : tensor<4xi1>
}
