// RUN: ortc-opt %s -split-input-file -verify-diagnostics -cpu-lower-to-linalg="fail-on-unlowered=1"

// With fail-on-unlowered (as in the kernel pipeline), every onnx/ortc op
// that stays is an error that names it and says why (its node too, when the
// location has its name: node_name_error.mlir).
func.func @hardmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  // expected-error @+1 {{cpu kernel lowering: cannot lower 'onnx.Hardmax': not an elementwise op the CPU kernels lower}}
  %0 = "onnx.Hardmax"(%x) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32>
  return %0 : tensor<4x8xf32>
}

// -----

func.func @pow_int(%x: tensor<4xi32>) -> tensor<4xi32> {
  // expected-error @+1 {{cannot lower 'onnx.Pow': base has element type i32; onnx.Pow takes f32, f64}}
  %0 = "onnx.Pow"(%x, %x) : (tensor<4xi32>, tensor<4xi32>) -> tensor<4xi32>
  return %0 : tensor<4xi32>
}

// -----

func.func @i16(%x: tensor<4xi16>) -> tensor<4xi16> {
  // expected-error @+1 {{cannot lower 'onnx.Add': result element type i16 is not one of f32, f64, i8, i32, i64, ui8, i1}}
  %0 = "onnx.Add"(%x, %x) : (tensor<4xi16>, tensor<4xi16>) -> tensor<4xi16>
  return %0 : tensor<4xi16>
}

// -----

func.func @static_vs_dynamic(%x: tensor<?x4xf32>, %y: tensor<3x4xf32>) -> tensor<3x4xf32> {
  // expected-error @+1 {{cannot lower 'onnx.Add': operand 0 has ? at dim 0 where the result has 3}}
  %0 = "onnx.Add"(%x, %y) : (tensor<?x4xf32>, tensor<3x4xf32>) -> tensor<3x4xf32>
  return %0 : tensor<3x4xf32>
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

func.func @cast_f16(%x: tensor<4xf32>) -> tensor<4xf16> {
  // expected-error @+1 {{cannot lower 'onnx.Cast': result element type f16 is not one of f32, f64, i8, i32, i64, ui8, i1}}
  %0 = "onnx.Cast"(%x) {to = 10 : i64} : (tensor<4xf32>) -> tensor<4xf16>
  return %0 : tensor<4xf16>
}

// -----

func.func @float_mod(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot lower 'onnx.Mod': Mod of floats needs fmod=1}}
  %0 = "onnx.Mod"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

func.func @elided(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{cannot lower 'onnx.Constant': constant resource has no data (elided) or the wrong size}}
  %c = "onnx.Constant"() {value = dense_resource<w__elided> : tensor<4xf32>} : () -> tensor<4xf32>
  %0 = "onnx.Add"(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
