// RUN: ortc-opt %s -split-input-file -onnx-shape-inference | FileCheck %s

// Quantization ops keep the element type the importer gave the result and
// take their shape from the data (MatMul rules for the integer matmuls,
// Conv rules for ConvInteger).
// CHECK-LABEL: func.func @quant
// CHECK: "onnx.QuantizeLinear"{{.*}} -> tensor<?x3xi8>
// CHECK: "onnx.DequantizeLinear"{{.*}} -> tensor<?x3xf32>
// CHECK: "onnx.DynamicQuantizeLinear"{{.*}} -> (tensor<?x3xui8>, tensor<f32>, tensor<ui8>)
// CHECK: "onnx.MatMulInteger"{{.*}} -> tensor<?x5xi32>
// CHECK: "onnx.QLinearMatMul"{{.*}} -> tensor<?x5xi8>
// CHECK: "onnx.ConvInteger"{{.*}} -> tensor<1x2x4x4xi32>
// CHECK: "onnx.QLinearConv"{{.*}} -> tensor<1x2x2x2xi8>
func.func @quant(%x: tensor<?x3xf32>, %s: tensor<f32>, %z: tensor<i8>, %b: tensor<3x5xi8>, %cx: tensor<1x1x3x3xui8>, %cw: tensor<2x1x2x2xui8>, %cz: tensor<ui8>) {
  %none = "onnx.NoValue"() : () -> none
  %q = "onnx.QuantizeLinear"(%x, %s, %z) : (tensor<?x3xf32>, tensor<f32>, tensor<i8>) -> tensor<*xi8>
  %d = "onnx.DequantizeLinear"(%q, %s, %z) : (tensor<*xi8>, tensor<f32>, tensor<i8>) -> tensor<*xf32>
  %y, %ys, %yz = "onnx.DynamicQuantizeLinear"(%d) : (tensor<*xf32>) -> (tensor<*xui8>, tensor<*xf32>, tensor<*xui8>)
  %m = "onnx.MatMulInteger"(%q, %b, %none, %none) : (tensor<*xi8>, tensor<3x5xi8>, none, none) -> tensor<*xi32>
  %l = "onnx.QLinearMatMul"(%q, %s, %z, %b, %s, %z, %s, %z) : (tensor<*xi8>, tensor<f32>, tensor<i8>, tensor<3x5xi8>, tensor<f32>, tensor<i8>, tensor<f32>, tensor<i8>) -> tensor<*xi8>
  %c = "onnx.ConvInteger"(%cx, %cw, %none, %none) {pads = array<i64: 1, 1, 1, 1>} : (tensor<1x1x3x3xui8>, tensor<2x1x2x2xui8>, none, none) -> tensor<*xi32>
  %qc = "onnx.QLinearConv"(%cx, %s, %cz, %cw, %s, %cz, %s, %z, %none) : (tensor<1x1x3x3xui8>, tensor<f32>, tensor<ui8>, tensor<2x1x2x2xui8>, tensor<f32>, tensor<ui8>, tensor<f32>, tensor<i8>, none) -> tensor<*xi8>
  return
}

// -----

// RNN, GRU, LSTM: Y [seq, dirs, batch, hidden] and the states [dirs, batch,
// hidden]; layout 1 puts the batch first.
// CHECK-LABEL: func.func @recurrent
// CHECK: "onnx.LSTM"{{.*}} -> (none, tensor<2x1x3xf32>, tensor<2x1x3xf32>)
// CHECK: "onnx.GRU"{{.*}} -> (tensor<1x5x1x3xf32>, tensor<1x1x3xf32>)
// CHECK: "onnx.RNN"{{.*}} -> (tensor<5x1x1x4xf32>, none)
func.func @recurrent(%x: tensor<5x1x2xf32>, %w: tensor<2x12x2xf32>, %r: tensor<2x12x3xf32>, %xb: tensor<1x5x2xf32>, %gw: tensor<1x9x2xf32>, %gr: tensor<1x9x3xf32>, %rw: tensor<1x4x2xf32>, %rr: tensor<1x4x4xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %y, %yh, %yc = "onnx.LSTM"(%x, %w, %r, %none, %none, %none, %none, %none) {direction = "bidirectional", hidden_size = 3 : i64} : (tensor<5x1x2xf32>, tensor<2x12x2xf32>, tensor<2x12x3xf32>, none, none, none, none, none) -> (none, tensor<*xf32>, tensor<*xf32>)
  %gy, %gyh = "onnx.GRU"(%xb, %gw, %gr, %none, %none, %none) {hidden_size = 3 : i64, layout = 1 : i64} : (tensor<1x5x2xf32>, tensor<1x9x2xf32>, tensor<1x9x3xf32>, none, none, none) -> (tensor<*xf32>, tensor<*xf32>)
  %ry, %ryh = "onnx.RNN"(%x, %rw, %rr, %none, %none, %none) : (tensor<5x1x2xf32>, tensor<1x4x2xf32>, tensor<1x4x4xf32>, none, none, none) -> (tensor<*xf32>, none)
  return
}
