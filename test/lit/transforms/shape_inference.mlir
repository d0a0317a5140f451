// RUN: ortc-opt %s -split-input-file -verify-diagnostics -onnx-shape-inference | FileCheck %s

// Elementwise ops broadcast; symbolic dims stay dynamic; MatMul and Gemm.
// CHECK-LABEL: func.func @mlp
// CHECK: "onnx.MatMul"{{.*}} -> tensor<?x16xf32>
// CHECK: "onnx.Add"{{.*}} -> tensor<?x16xf32>
// CHECK: "onnx.Relu"{{.*}} -> tensor<?x16xf32>
// CHECK: "onnx.Gemm"{{.*}} -> tensor<16x3xf32>
// CHECK: "onnx.Less"{{.*}} -> tensor<?x16xi1>
// CHECK: "onnx.Where"{{.*}} -> tensor<?x16xf32>
// CHECK: return {{.*}} : tensor<?x16xf32>, tensor<16x3xf32>
func.func @mlp(%x: tensor<?x8xf32>, %w: tensor<8x16xf32>, %b: tensor<16xf32>, %g: tensor<4x16xf32>, %h: tensor<4x3xf32>) -> (tensor<*xf32>, tensor<*xf32>) {
  %0 = "onnx.MatMul"(%x, %w) : (tensor<?x8xf32>, tensor<8x16xf32>) -> tensor<*xf32>
  %1 = "onnx.Add"(%0, %b) : (tensor<*xf32>, tensor<16xf32>) -> tensor<*xf32>
  %2 = "onnx.Relu"(%1) : (tensor<*xf32>) -> tensor<*xf32>
  %none = "onnx.NoValue"() : () -> none
  %3 = "onnx.Gemm"(%g, %h, %none) {transA = 1 : i64} : (tensor<4x16xf32>, tensor<4x3xf32>, none) -> tensor<*xf32>
  %4 = "onnx.Less"(%2, %b) : (tensor<*xf32>, tensor<16xf32>) -> tensor<*xi1>
  %5 = "onnx.Where"(%4, %2, %1) : (tensor<*xi1>, tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %5, %3 : tensor<*xf32>, tensor<*xf32>
}

// -----

// Batched MatMul with broadcasting and a vector operand.
// CHECK-LABEL: func.func @matmul_batch
// CHECK: "onnx.MatMul"{{.*}} -> tensor<5x2x3x7xf32>
// CHECK: "onnx.MatMul"{{.*}} -> tensor<2x3xf32>
func.func @matmul_batch(%a: tensor<2x3x4xf32>, %b: tensor<5x1x4x7xf32>, %v: tensor<4xf32>) {
  %0 = "onnx.MatMul"(%a, %b) : (tensor<2x3x4xf32>, tensor<5x1x4x7xf32>) -> tensor<*xf32>
  %1 = "onnx.MatMul"(%a, %v) : (tensor<2x3x4xf32>, tensor<4xf32>) -> tensor<*xf32>
  return
}

// -----

// Shape-changing ops with constant operands.
// CHECK-LABEL: func.func @shapes
// CHECK: "onnx.Reshape"{{.*}} -> tensor<6x4xf32>
// CHECK: "onnx.Reshape"{{.*}} -> tensor<2x12xf32>
// CHECK: "onnx.Transpose"{{.*}} -> tensor<4x2x3xf32>
// CHECK: "onnx.Flatten"{{.*}} -> tensor<6x4xf32>
// CHECK: "onnx.Unsqueeze"{{.*}} -> tensor<1x2x3x4x1xf32>
// CHECK: "onnx.Squeeze"{{.*}} -> tensor<2x3x4xf32>
// CHECK: "onnx.Concat"{{.*}} -> tensor<2x6x4xf32>
// CHECK: "onnx.Shape"{{.*}} -> tensor<3xi64>
// CHECK: "onnx.Gather"{{.*}} -> tensor<2x5x4xf32>
// CHECK: "onnx.Cast"{{.*}} -> tensor<2x3x4xf16>
func.func @shapes(%x: tensor<2x3x4xf32>, %idx: tensor<5xi64>) {
  %s = "onnx.Constant"() {value_ints = array<i64: -1, 4>} : () -> tensor<2xi64>
  %0 = "onnx.Reshape"(%x, %s) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  %s0 = "onnx.Constant"() {value_ints = array<i64: 0, -1>} : () -> tensor<2xi64>
  %1 = "onnx.Reshape"(%x, %s0) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  %2 = "onnx.Transpose"(%x) {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<*xf32>
  %3 = "onnx.Flatten"(%x) {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<*xf32>
  %axes = "onnx.Constant"() {value_ints = array<i64: 0, -1>} : () -> tensor<2xi64>
  %4 = "onnx.Unsqueeze"(%x, %axes) : (tensor<2x3x4xf32>, tensor<2xi64>) -> tensor<*xf32>
  %5 = "onnx.Squeeze"(%4, %axes) : (tensor<*xf32>, tensor<2xi64>) -> tensor<*xf32>
  %6 = "onnx.Concat"(%x, %x) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x3x4xf32>) -> tensor<*xf32>
  %7 = "onnx.Shape"(%x) : (tensor<2x3x4xf32>) -> tensor<*xi64>
  %8 = "onnx.Gather"(%x, %idx) {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<5xi64>) -> tensor<*xf32>
  %9 = "onnx.Cast"(%x) {to = 10 : i64} : (tensor<2x3x4xf32>) -> tensor<*xf16>
  return
}

// -----

// ConvTranspose: [N, W[1] * group, stride * (in - 1) + output_padding +
// (k - 1) * dilation + 1 - pads]; SAME auto_pad gives in * stride;
// output_shape gives the spatial dims; a dynamic spatial dim stays dynamic.
// CHECK-LABEL: func.func @conv_transpose
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<?x4x10x11xf32>
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<?x8x10x12xf32>
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<?x4x11x13xf32>
// CHECK: "onnx.ConvTranspose"{{.*}} -> tensor<?x4x?x12xf32>
func.func @conv_transpose(%x: tensor<?x2x5x6xf32>, %w: tensor<2x4x3x2xf32>, %d: tensor<?x2x?x6xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %0 = "onnx.ConvTranspose"(%x, %w, %none) {strides = array<i64: 2, 2>, pads = array<i64: 1, 0, 0, 1>} : (tensor<?x2x5x6xf32>, tensor<2x4x3x2xf32>, none) -> tensor<*xf32>
  %1 = "onnx.ConvTranspose"(%x, %w, %none) {strides = array<i64: 2, 2>, group = 2 : i64, auto_pad = "SAME_UPPER"} : (tensor<?x2x5x6xf32>, tensor<2x4x3x2xf32>, none) -> tensor<*xf32>
  %2 = "onnx.ConvTranspose"(%x, %w, %none) {strides = array<i64: 2, 2>, output_shape = array<i64: 11, 13>} : (tensor<?x2x5x6xf32>, tensor<2x4x3x2xf32>, none) -> tensor<*xf32>
  %3 = "onnx.ConvTranspose"(%d, %w, %none) {strides = array<i64: 2, 2>, output_padding = array<i64: 1, 0>} : (tensor<?x2x?x6xf32>, tensor<2x4x3x2xf32>, none) -> tensor<*xf32>
  return
}

// -----

// Convolution and pooling, with pads, strides, groups and auto_pad.
// CHECK-LABEL: func.func @cnn
// CHECK: "onnx.Conv"{{.*}} -> tensor<?x16x16x16xf32>
// CHECK: "onnx.MaxPool"{{.*}} -> (tensor<?x16x8x8xf32>, none)
// CHECK: "onnx.Conv"{{.*}} -> tensor<?x16x8x8xf32>
// CHECK: "onnx.AveragePool"{{.*}} -> tensor<?x16x3x3xf32>
// CHECK: "onnx.GlobalAveragePool"{{.*}} -> tensor<?x16x1x1xf32>
// CHECK: "onnx.ReduceMean"{{.*}} -> tensor<?x16xf32>
func.func @cnn(%x: tensor<?x3x32x32xf32>, %w: tensor<16x3x3x3xf32>, %dw: tensor<16x1x3x3xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %0 = "onnx.Conv"(%x, %w, %none) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<?x3x32x32xf32>, tensor<16x3x3x3xf32>, none) -> tensor<*xf32>
  %1:2 = "onnx.MaxPool"(%0) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<*xf32>) -> (tensor<*xf32>, none)
  %2 = "onnx.Conv"(%1#0, %dw, %none) {group = 16 : i64, auto_pad = "SAME_UPPER"} : (tensor<*xf32>, tensor<16x1x3x3xf32>, none) -> tensor<*xf32>
  %3 = "onnx.AveragePool"(%2) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>, ceil_mode = 1 : i64} : (tensor<*xf32>) -> tensor<*xf32>
  %4 = "onnx.GlobalAveragePool"(%3) : (tensor<*xf32>) -> tensor<*xf32>
  %axes = "onnx.Constant"() {value_ints = array<i64: 2, 3>} : () -> tensor<2xi64>
  %5 = "onnx.ReduceMean"(%4, %axes) {keepdims = 0 : i64} : (tensor<*xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

// ceil_mode: a last window that would start past the input and its begin
// pad is dropped (in 2, kernel 1, stride 2: ceil gives 2 windows, the second
// would start at 2, outside; 1 remains).
// CHECK-LABEL: func.func @ceil_last_window
// CHECK: "onnx.MaxPool"{{.*}} -> (tensor<1x1x1x1xf32>, none)
func.func @ceil_last_window(%x: tensor<1x1x2x2xf32>) {
  %0:2 = "onnx.MaxPool"(%x) {kernel_shape = array<i64: 1, 1>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x1x2x2xf32>) -> (tensor<*xf32>, none)
  return
}

// -----

// A declared static dim is kept; an unknown type is replaced.
// CHECK-LABEL: func.func @join
// CHECK: "onnx.Relu"{{.*}} -> tensor<2x3xf32>
// CHECK: "onnx.Neg"{{.*}} -> tensor<2x3xf32>
func.func @join(%x: tensor<?x3xf32>) {
  %0 = "onnx.Relu"(%x) : (tensor<?x3xf32>) -> tensor<2x3xf32>
  %1 = "onnx.Neg"(%0) : (tensor<2x3xf32>) -> !onnx.unknown
  return
}

// -----

// Negative: ops without a shape function, and unknown inputs, keep their types.
// CHECK-LABEL: func.func @unknowns
// CHECK: "onnx.Generic"{{.*}} -> !onnx.unknown
// CHECK: "onnx.Relu"{{.*}} -> tensor<*xf32>
// CHECK: "onnx.TopK"{{.*}} -> (tensor<*xf32>, tensor<*xi64>)
func.func @unknowns(%x: tensor<*xf32>, %k: tensor<1xi64>) {
  %0 = "onnx.Generic"(%x) <{domain = "com.microsoft", onnx_attrs = {}, op_type = "X", since_version = 1 : i64}> : (tensor<*xf32>) -> !onnx.unknown
  %1 = "onnx.Relu"(%x) : (tensor<*xf32>) -> tensor<*xf32>
  %2:2 = "onnx.TopK"(%x, %k) : (tensor<*xf32>, tensor<1xi64>) -> (tensor<*xf32>, tensor<*xi64>)
  return
}

// -----

func.func @broadcast_mismatch(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  // expected-error @+1 {{input shapes cannot be broadcast together}}
  %0 = "onnx.Add"(%a, %b) : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<*xf32>
  return
}

// -----

func.func @matmul_mismatch(%a: tensor<2x3xf32>, %b: tensor<4x5xf32>) {
  // expected-error @+1 {{inner dimensions differ: 3 and 4}}
  %0 = "onnx.MatMul"(%a, %b) : (tensor<2x3xf32>, tensor<4x5xf32>) -> tensor<*xf32>
  return
}

// -----

// A declared shape that contradicts inference: a warning, and the inferred
// type wins (with strict-shapes an error: declared_shapes.mlir).
// CHECK-LABEL: func.func @declared_contradiction
// CHECK: "onnx.Relu"{{.*}} -> tensor<2x3xf32>
func.func @declared_contradiction(%x: tensor<2x3xf32>) {
  // expected-warning @+1 {{result 0 is declared as 'tensor<3x2xf32>' but its inputs give 'tensor<2x3xf32>'; using the inferred shape}}
  %0 = "onnx.Relu"(%x) : (tensor<2x3xf32>) -> tensor<3x2xf32>
  return
}

// -----

func.func @reshape_bad(%x: tensor<2x3xf32>) {
  %s = "onnx.Constant"() {value_ints = array<i64: 4, -1>} : () -> tensor<2xi64>
  // expected-error @+1 {{cannot reshape 6 elements into the target shape}}
  %0 = "onnx.Reshape"(%x, %s) : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<*xf32>
  return
}

// -----

// Slice, Pad, Expand and Tile with constant operands.
// CHECK-LABEL: func.func @slicing
// CHECK: "onnx.Slice"{{.*}} -> tensor<2x2x4xf32>
// CHECK: "onnx.Slice"{{.*}} -> tensor<?x3xf32>
// CHECK: "onnx.Pad"{{.*}} -> tensor<2x5x4xf32>
// CHECK: "onnx.Expand"{{.*}} -> tensor<5x2x3x4xf32>
// CHECK: "onnx.Tile"{{.*}} -> tensor<4x3x8xf32>
func.func @slicing(%x: tensor<2x3x4xf32>, %d: tensor<?x6xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %s = "onnx.Constant"() {value_ints = array<i64: 1>} : () -> tensor<1xi64>
  %e = "onnx.Constant"() {value_ints = array<i64: 100>} : () -> tensor<1xi64>
  %a = "onnx.Constant"() {value_ints = array<i64: 1>} : () -> tensor<1xi64>
  %0 = "onnx.Slice"(%x, %s, %e, %a, %none) : (tensor<2x3x4xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, none) -> tensor<*xf32>
  %st = "onnx.Constant"() {value_ints = array<i64: -1>} : () -> tensor<1xi64>
  %en = "onnx.Constant"() {value_ints = array<i64: -7>} : () -> tensor<1xi64>
  %stp = "onnx.Constant"() {value_ints = array<i64: -2>} : () -> tensor<1xi64>
  %1 = "onnx.Slice"(%d, %st, %en, %a, %stp) : (tensor<?x6xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xf32>
  %pads = "onnx.Constant"() {value_ints = array<i64: 0, 1, 0, 0, 1, 0>} : () -> tensor<6xi64>
  %2 = "onnx.Pad"(%x, %pads, %none, %none) : (tensor<2x3x4xf32>, tensor<6xi64>, none, none) -> tensor<*xf32>
  %shape = "onnx.Constant"() {value_ints = array<i64: 5, 1, 1, 4>} : () -> tensor<4xi64>
  %3 = "onnx.Expand"(%x, %shape) : (tensor<2x3x4xf32>, tensor<4xi64>) -> tensor<*xf32>
  %reps = "onnx.Constant"() {value_ints = array<i64: 2, 1, 2>} : () -> tensor<3xi64>
  %4 = "onnx.Tile"(%x, %reps) : (tensor<2x3x4xf32>, tensor<3xi64>) -> tensor<*xf32>
  return
}

// -----

func.func @pad_bad(%x: tensor<2x3xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %pads = "onnx.Constant"() {value_ints = array<i64: 0, 1>} : () -> tensor<2xi64>
  // expected-error @+1 {{pads has 2 values for 2 axes}}
  %0 = "onnx.Pad"(%x, %pads, %none, %none) : (tensor<2x3xf32>, tensor<2xi64>, none, none) -> tensor<*xf32>
  return
}

// -----

// ceil_mode: a last window that would start in the end padding is dropped
// (in 2, pads 1+1, kernel 3, stride 3: ceil gives 2 windows, the second
// starts at padded index 3 = in + pad begin, so 1 remains); one that starts
// inside the input stays (in 6, kernel 3, stride 2, no pads: 2 -> 3).
// CHECK-LABEL: func.func @ceil_last_window
// CHECK: "onnx.AveragePool"{{.*}} -> tensor<1x3x1x1xf32>
// CHECK: "onnx.MaxPool"{{.*}} -> (tensor<1x3x3x3xf32>, none)
func.func @ceil_last_window(%x: tensor<1x3x2x2xf32>, %y: tensor<1x3x6x6xf32>) {
  %0 = "onnx.AveragePool"(%x) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, ceil_mode = 1 : i64} : (tensor<1x3x2x2xf32>) -> tensor<*xf32>
  %1:2 = "onnx.MaxPool"(%y) {kernel_shape = array<i64: 3, 3>, strides = array<i64: 2, 2>, ceil_mode = 1 : i64} : (tensor<1x3x6x6xf32>) -> (tensor<*xf32>, none)
  return
}

// -----

// Ops whose shape follows from constant operands: ConstantOfShape (its value
// attribute's element type, f32 without one; a rank from a static shape
// operand), Range, Expand with a target of static length only.
// CHECK-LABEL: func.func @constant_operands
// CHECK: "onnx.ConstantOfShape"(%{{.*}}) <{value = dense<1> : tensor<1xi64>}> : (tensor<2xi64>) -> tensor<2x3xi64>
// CHECK: "onnx.ConstantOfShape"(%{{.*}}) : (tensor<2xi64>) -> tensor<2x3xf32>
// CHECK: "onnx.ConstantOfShape"(%{{.*}}) : (tensor<3xi64>) -> tensor<?x?x?xf32>
// CHECK: "onnx.Range"{{.*}} -> tensor<4xi64>
// CHECK: "onnx.Range"{{.*}} -> tensor<3xf32>
// CHECK: "onnx.Range"{{.*}} -> tensor<0xi64>
// CHECK: "onnx.Range"{{.*}} -> tensor<?xi64>
// CHECK: "onnx.Expand"{{.*}} -> tensor<?x?x5xf32>
func.func @constant_operands(%s: tensor<3xi64>, %n: tensor<i64>, %x: tensor<1x5xf32>) {
  %shape = "onnx.Constant"() {value = dense<[2, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %0 = "onnx.ConstantOfShape"(%shape) {value = dense<1> : tensor<1xi64>} : (tensor<2xi64>) -> !onnx.unknown
  %1 = "onnx.ConstantOfShape"(%shape) : (tensor<2xi64>) -> !onnx.unknown
  %2 = "onnx.ConstantOfShape"(%s) : (tensor<3xi64>) -> !onnx.unknown
  %zero = "onnx.Constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %ten = "onnx.Constant"() {value = dense<10> : tensor<i64>} : () -> tensor<i64>
  %three = "onnx.Constant"() {value = dense<3> : tensor<i64>} : () -> tensor<i64>
  %3 = "onnx.Range"(%zero, %ten, %three) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<*xi64>
  %f0 = "onnx.Constant"() {value = dense<1.0> : tensor<f32>} : () -> tensor<f32>
  %f1 = "onnx.Constant"() {value = dense<2.5> : tensor<f32>} : () -> tensor<f32>
  %f2 = "onnx.Constant"() {value = dense<0.5> : tensor<f32>} : () -> tensor<f32>
  %4 = "onnx.Range"(%f0, %f1, %f2) : (tensor<f32>, tensor<f32>, tensor<f32>) -> tensor<*xf32>
  %5 = "onnx.Range"(%ten, %zero, %three) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<*xi64>
  %6 = "onnx.Range"(%zero, %n, %three) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<*xi64>
  %7 = "onnx.Expand"(%x, %s) : (tensor<1x5xf32>, tensor<3xi64>) -> tensor<*xf32>
  return
}

// -----

// Shape functions of ops that expanded function bodies use.
// CHECK-LABEL: func.func @more_ops
// CHECK: "onnx.GatherElements"{{.*}} -> tensor<2x2xf32>
// CHECK: "onnx.GatherND"{{.*}} -> tensor<2x4xf32>
// CHECK: "onnx.ArgMax"{{.*}} -> tensor<2x1xi64>
// CHECK: "onnx.ArgMin"{{.*}} -> tensor<4xi64>
// CHECK: "onnx.TopK"{{.*}} -> (tensor<2x2xf32>, tensor<2x2xi64>)
// CHECK: "onnx.Size"{{.*}} -> tensor<i64>
// CHECK: "onnx.IsNaN"{{.*}} -> tensor<2x4xi1>
// CHECK: "onnx.EyeLike"{{.*}} -> tensor<2x4xi64>
// CHECK: "onnx.Trilu"{{.*}} -> tensor<2x4xf32>
func.func @more_ops(%x: tensor<2x4xf32>, %i: tensor<2x2xi64>, %nd: tensor<2x1xi64>) {
  %0 = "onnx.GatherElements"(%x, %i) {axis = 1 : i64} : (tensor<2x4xf32>, tensor<2x2xi64>) -> tensor<*xf32>
  %1 = "onnx.GatherND"(%x, %nd) : (tensor<2x4xf32>, tensor<2x1xi64>) -> tensor<*xf32>
  %2 = "onnx.ArgMax"(%x) {axis = 1 : i64} : (tensor<2x4xf32>) -> tensor<*xi64>
  %3 = "onnx.ArgMin"(%x) {axis = 0 : i64, keepdims = 0 : i64} : (tensor<2x4xf32>) -> tensor<*xi64>
  %k = "onnx.Constant"() {value = dense<2> : tensor<1xi64>} : () -> tensor<1xi64>
  %4:2 = "onnx.TopK"(%x, %k) : (tensor<2x4xf32>, tensor<1xi64>) -> (tensor<*xf32>, tensor<*xi64>)
  %5 = "onnx.Size"(%x) : (tensor<2x4xf32>) -> tensor<*xi64>
  %6 = "onnx.IsNaN"(%x) : (tensor<2x4xf32>) -> tensor<*xi1>
  %7 = "onnx.EyeLike"(%x) {dtype = 7 : i64} : (tensor<2x4xf32>) -> tensor<*xi64>
  %none = "onnx.NoValue"() : () -> none
  %8 = "onnx.Trilu"(%x, %none) : (tensor<2x4xf32>, none) -> tensor<*xf32>
  return
}

// -----

// If: the type both branches yield, or the dims they agree on.
// CHECK-LABEL: func.func @if_branches
// CHECK: "onnx.If"{{.*}}
// CHECK: }) : (tensor<i1>) -> (tensor<2x3xf32>, tensor<2x?xf32>, tensor<*xf32>)
func.func @if_branches(%c: tensor<i1>, %a: tensor<2x3xf32>, %b: tensor<2x5xf32>, %v: tensor<4xf32>) {
  %0:3 = "onnx.If"(%c) ({
    "onnx.Yield"(%a, %a, %a) : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> ()
  }, {
    "onnx.Yield"(%a, %b, %v) : (tensor<2x3xf32>, tensor<2x5xf32>, tensor<4xf32>) -> ()
  }) : (tensor<i1>) -> (tensor<*xf32>, tensor<*xf32>, tensor<*xf32>)
  return
}

// -----

func.func @constant_of_shape_negative() {
  %shape = "onnx.Constant"() {value = dense<[2, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
  // expected-error @+1 {{the shape has a negative dim}}
  %0 = "onnx.ConstantOfShape"(%shape) : (tensor<2xi64>) -> !onnx.unknown
  return
}

// -----

func.func @range_zero_delta() {
  %zero = "onnx.Constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %ten = "onnx.Constant"() {value = dense<10> : tensor<i64>} : () -> tensor<i64>
  // expected-error @+1 {{delta is zero or the range is not finite}}
  %0 = "onnx.Range"(%zero, %ten, %zero) : (tensor<i64>, tensor<i64>, tensor<i64>) -> tensor<*xi64>
  return
}

// -----

// Swish and BitwiseNot keep their input's type; IsInf and IsNaN give bools.
// CHECK-LABEL: func.func @unary_more
// CHECK: "onnx.Swish"{{.*}} -> tensor<?x4xf16>
// CHECK: "onnx.BitwiseNot"{{.*}} -> tensor<3xui16>
// CHECK: "onnx.IsInf"{{.*}} -> tensor<?x4xi1>
// CHECK: "onnx.IsNaN"{{.*}} -> tensor<?x4xi1>
// CHECK: "onnx.SwiGLU"{{.*}} -> tensor<?x4xf16>
func.func @unary_more(%x: tensor<?x4xf16>, %u: tensor<3xui16>) {
  %0 = "onnx.Swish"(%x) : (tensor<?x4xf16>) -> tensor<*xf16>
  %1 = "onnx.BitwiseNot"(%u) : (tensor<3xui16>) -> tensor<*xui16>
  %2 = "onnx.IsInf"(%0) : (tensor<*xf16>) -> tensor<*xi1>
  %3 = "onnx.IsNaN"(%x) : (tensor<?x4xf16>) -> tensor<*xi1>
  %4 = "onnx.SwiGLU"(%x, %0) : (tensor<?x4xf16>, tensor<*xf16>) -> tensor<*xf16>
  return
}

// -----

// One rule gives the type and the expression: a Reshape target [Shape(x)[0],
// -1] leaves (b * 32) floordiv b, which is 32, so that dim is static in one
// sweep (no folding of the target needed).
// CHECK-LABEL: func.func @expression_folds_to_static
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?x32xf32>
func.func @expression_folds_to_static(%x: tensor<?x4x8xf32>) -> tensor<*xf32> {
  %s = "onnx.Shape"(%x) {end = 1 : i64} : (tensor<?x4x8xf32>) -> tensor<*xi64>
  %minus = "onnx.Constant"() {value = dense<-1> : tensor<1xi64>} : () -> tensor<1xi64>
  %t = "onnx.Concat"(%s, %minus) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %r = "onnx.Reshape"(%x, %t) : (tensor<?x4x8xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

// Slice with a negative step clamps its start into [0, dim - 1] (the spec,
// onnxruntime and the CPU kernel, one rule in SliceGeometry.h): a start
// before the axis still keeps element 0.
// CHECK-LABEL: func.func @slice_negative_step_start_before_axis
// CHECK: "onnx.Slice"{{.*}} -> tensor<1xf32>
func.func @slice_negative_step_start_before_axis(%x: tensor<5xf32>) -> tensor<*xf32> {
  %s = "onnx.Constant"() {value = dense<-10> : tensor<1xi64>} : () -> tensor<1xi64>
  %e = "onnx.Constant"() {value = dense<-100> : tensor<1xi64>} : () -> tensor<1xi64>
  %a = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
  %p = "onnx.Constant"() {value = dense<-1> : tensor<1xi64>} : () -> tensor<1xi64>
  %y = "onnx.Slice"(%x, %s, %e, %a, %p) : (tensor<5xf32>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>, tensor<1xi64>) -> tensor<*xf32>
  return %y : tensor<*xf32>
}
