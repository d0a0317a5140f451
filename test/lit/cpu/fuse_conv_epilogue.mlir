// RUN: ortc-opt %s -split-input-file -cpu-fuse-conv-epilogue | FileCheck %s

// Conv then Relu, with a dynamic batch: one fused_conv with a relu epilogue.
// CHECK-LABEL: func.func @conv_relu
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x8x8xf32>)
// CHECK-DAG: %[[W:.*]] = "onnx.Constant"
// CHECK-DAG: %[[B:.*]] = "onnx.Constant"
// CHECK-DAG: %[[NONE:.*]] = "onnx.NoValue"
// CHECK: %[[Y:.*]] = ortc.fused_conv %[[X]], %[[W]], %[[B]], %[[NONE]] {activation = "relu", activation_params = array<f32>, pads = array<i64: 1, 1, 1, 1>}
// CHECK-NOT: onnx.Relu
// CHECK-NOT: onnx.Conv
// CHECK: return %[[Y]]
func.func @conv_relu(%x: tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32> {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<4x4x3x3xf32>} : () -> tensor<4x4x3x3xf32>
  %b = "onnx.Constant"() {value = dense<0.25> : tensor<4xf32>} : () -> tensor<4xf32>
  %c = "onnx.Conv"(%x, %w, %b) {pads = array<i64: 1, 1, 1, 1>} : (tensor<?x4x8x8xf32>, tensor<4x4x3x3xf32>, tensor<4xf32>) -> tensor<?x4x8x8xf32>
  %y = "onnx.Relu"(%c) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  return %y : tensor<?x4x8x8xf32>
}

// -----

// ResNet's block end: Conv, Add of the block's input (the same dims, the
// same batch symbol), Relu; the residual may be either Add operand.
// CHECK-LABEL: func.func @residual_relu
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x8x8xf32>)
// CHECK: %[[Y:.*]] = ortc.fused_conv %[[X]], %{{.*}}, %{{.*}}, %[[X]] {activation = "relu", activation_params = array<f32>}
// CHECK-NOT: onnx.Add
// CHECK: return %[[Y]]
func.func @residual_relu(%x: tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32> {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<4x4x1x1xf32>} : () -> tensor<4x4x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %c = "onnx.Conv"(%x, %w, %none) : (tensor<?x4x8x8xf32>, tensor<4x4x1x1xf32>, none) -> tensor<?x4x8x8xf32>
  %s = "onnx.Add"(%x, %c) : (tensor<?x4x8x8xf32>, tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  %y = "onnx.Relu"(%s) : (tensor<?x4x8x8xf32>) -> tensor<?x4x8x8xf32>
  return %y : tensor<?x4x8x8xf32>
}

// -----

// MobileNetV2: Relu6 as Clip(0, 6) after a depthwise Conv, and a projection
// whose residual sum has no activation after it.
// CHECK-LABEL: func.func @clip_and_residual
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x4x4xf32>)
// CHECK: %[[D:.*]] = ortc.fused_conv %[[X]], {{.*}} {activation = "clip", activation_params = array<f32: 0.000000e+00, 6.000000e+00>, group = 8 : i64}
// CHECK: %[[P:.*]] = ortc.fused_conv %[[D]], %{{.*}}, %{{.*}}, %[[X]] {activation = "none", activation_params = array<f32>}
// CHECK-NOT: onnx.Clip
// CHECK-NOT: onnx.Add
// CHECK: return %[[P]]
func.func @clip_and_residual(%x: tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32> {
  %dw = "onnx.Constant"() {value = dense<0.5> : tensor<8x1x1x1xf32>} : () -> tensor<8x1x1x1xf32>
  %pw = "onnx.Constant"() {value = dense<0.5> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %lo = "onnx.Constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %hi = "onnx.Constant"() {value = dense<6.0> : tensor<f32>} : () -> tensor<f32>
  %none = "onnx.NoValue"() : () -> none
  %d = "onnx.Conv"(%x, %dw, %none) {group = 8 : i64} : (tensor<1x8x4x4xf32>, tensor<8x1x1x1xf32>, none) -> tensor<1x8x4x4xf32>
  %d6 = "onnx.Clip"(%d, %lo, %hi) : (tensor<1x8x4x4xf32>, tensor<f32>, tensor<f32>) -> tensor<1x8x4x4xf32>
  %p = "onnx.Conv"(%d6, %pw, %none) : (tensor<1x8x4x4xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x4x4xf32>
  %y = "onnx.Add"(%p, %x) : (tensor<1x8x4x4xf32>, tensor<1x8x4x4xf32>) -> tensor<1x8x4x4xf32>
  return %y : tensor<1x8x4x4xf32>
}

// -----

// A Clip without max is bounded above by +inf; LeakyRelu keeps its alpha.
// CHECK-LABEL: func.func @open_clip_and_leaky
// CHECK: ortc.fused_conv {{.*}} {activation = "clip", activation_params = array<f32: 0.000000e+00, 0x7F800000>}
// CHECK: ortc.fused_conv {{.*}} {activation = "leaky_relu", activation_params = array<f32: 1.000000e-01>}
func.func @open_clip_and_leaky(%x: tensor<1x2x4x4xf32>) -> (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
  %lo = "onnx.Constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %none = "onnx.NoValue"() : () -> none
  %c0 = "onnx.Conv"(%x, %w, %none) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %y0 = "onnx.Clip"(%c0, %lo, %none) : (tensor<1x2x4x4xf32>, tensor<f32>, none) -> tensor<1x2x4x4xf32>
  %c1 = "onnx.Conv"(%x, %w, %none) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %y1 = "onnx.LeakyRelu"(%c1) {alpha = 0.1 : f32} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %y0, %y1 : tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>
}

// -----

// An Add after the Conv is taken, a Sigmoid after it is not (no such
// epilogue): it stays, reading the fused result.
// CHECK-LABEL: func.func @add_then_sigmoid
// CHECK: %[[F:.*]] = ortc.fused_conv {{.*}} {activation = "none"
// CHECK: %[[S:.*]] = "onnx.Sigmoid"(%[[F]])
// CHECK: return %[[S]]
func.func @add_then_sigmoid(%x: tensor<1x2x4x4xf32>, %r: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %c = "onnx.Conv"(%x, %w, %none) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %s = "onnx.Add"(%c, %r) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = "onnx.Sigmoid"(%s) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// Negatives: a Conv whose output is also returned; an Add that broadcasts;
// an Add of a value whose batch may differ (another input's symbol); a Clip
// with a computed bound; a float16 Conv. Nothing changes.
// CHECK-LABEL: func.func @kept
// CHECK-NOT: ortc.fused_conv
// CHECK-COUNT-5: "onnx.Conv"
// CHECK-NOT: ortc.fused_conv
func.func @kept(%x: tensor<?x2x4x4xf32>, %other: tensor<?x2x4x4xf32>, %bound: tensor<f32>, %h: tensor<1x2x4x4xf16>)
    -> (tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<1x2x4x4xf16>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
  %wh = "onnx.Constant"() {value = dense<0.5> : tensor<2x2x1x1xf16>} : () -> tensor<2x2x1x1xf16>
  %bias = "onnx.Constant"() {value = dense<0.5> : tensor<2x1x1xf32>} : () -> tensor<2x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %c0 = "onnx.Conv"(%x, %w, %none) : (tensor<?x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<?x2x4x4xf32>
  %y0 = "onnx.Relu"(%c0) : (tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32>
  %c1 = "onnx.Conv"(%x, %w, %none) : (tensor<?x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<?x2x4x4xf32>
  %y1 = "onnx.Add"(%c1, %bias) : (tensor<?x2x4x4xf32>, tensor<2x1x1xf32>) -> tensor<?x2x4x4xf32>
  %c2 = "onnx.Conv"(%x, %w, %none) : (tensor<?x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<?x2x4x4xf32>
  %y2 = "onnx.Add"(%c2, %other) : (tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>) -> tensor<?x2x4x4xf32>
  %c3 = "onnx.Conv"(%x, %w, %none) : (tensor<?x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<?x2x4x4xf32>
  %y3 = "onnx.Clip"(%c3, %bound, %none) : (tensor<?x2x4x4xf32>, tensor<f32>, none) -> tensor<?x2x4x4xf32>
  %c4 = "onnx.Conv"(%h, %wh, %none) : (tensor<1x2x4x4xf16>, tensor<2x2x1x1xf16>, none) -> tensor<1x2x4x4xf16>
  %y4 = "onnx.Relu"(%c4) : (tensor<1x2x4x4xf16>) -> tensor<1x2x4x4xf16>
  return %c0, %y0, %y1, %y2, %y3, %y4 : tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<?x2x4x4xf32>, tensor<1x2x4x4xf16>
}


// -----

// ResNet's projection shortcut: two Convs meet in one Add. The first takes
// the Add and the Relu; the other's output is its residual.
// CHECK-LABEL: func.func @two_convs_one_add
// CHECK: %[[A:.*]] = "onnx.Conv"
// CHECK: %[[Y:.*]] = ortc.fused_conv %{{.*}}, %{{.*}}, %{{.*}}, %[[A]] {activation = "relu"
// CHECK-NOT: onnx.Add
// CHECK: return %[[Y]]
func.func @two_convs_one_add(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %a = "onnx.Conv"(%x, %w, %none) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %b = "onnx.Conv"(%x, %w, %none) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %s = "onnx.Add"(%a, %b) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = "onnx.Relu"(%s) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}

// -----

// Residual blocks in a row: the second block's residual is the first
// block's sum, which the first rewrite replaces by its fused_conv.
// CHECK-LABEL: func.func @chained_blocks
// CHECK-SAME: (%[[X:.*]]: tensor<1x2x4x4xf32>)
// CHECK: %[[A:.*]] = ortc.fused_conv %[[X]], %{{.*}}, %{{.*}}, %[[X]] {activation = "none"
// CHECK: %[[B:.*]] = ortc.fused_conv %[[A]], %{{.*}}, %{{.*}}, %[[A]] {activation = "relu"
// CHECK: return %[[B]]
func.func @chained_blocks(%x: tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32> {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<2x2x1x1xf32>} : () -> tensor<2x2x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %a = "onnx.Conv"(%x, %w, %none) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %s = "onnx.Add"(%a, %x) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %b = "onnx.Conv"(%s, %w, %none) : (tensor<1x2x4x4xf32>, tensor<2x2x1x1xf32>, none) -> tensor<1x2x4x4xf32>
  %t = "onnx.Add"(%s, %b) : (tensor<1x2x4x4xf32>, tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %y = "onnx.Relu"(%t) : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  return %y : tensor<1x2x4x4xf32>
}
