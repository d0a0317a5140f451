// RUN: ortc-opt %s -split-input-file -cpu-conv-channels-last | FileCheck %s

// Two convs in a chain (a 3x3, then a depthwise fused_conv with a residual
// that is the chain's input): both run channels-last, the Transposes
// between them cancel, the residual is transposed in once more, and one
// Transpose leaves the chain. The dynamic batch stays dynamic.
// CHECK-LABEL: func.func @chain
// CHECK-SAME: (%[[X:.*]]: tensor<?x4x8x8xf32>)
// CHECK-DAG: %[[W1:.*]] = "onnx.Constant"() <{value = dense<5.000000e-01> : tensor<6x4x3x3xf32>}>
// CHECK-DAG: %[[W2:.*]] = "onnx.Constant"() <{value = dense<2.500000e-01> : tensor<6x1x3x3xf32>}>
// CHECK: %[[XT:.*]] = "onnx.Transpose"(%[[X]]) <{perm = array<i64: 0, 2, 3, 1>}> : (tensor<?x4x8x8xf32>) -> tensor<?x8x8x4xf32>
// CHECK: %[[A:.*]] = ortc.fused_conv %[[XT]], %[[W1]], %{{.*}}, %{{.*}} {activation = "relu", activation_params = array<f32>, channels_last, pads = array<i64: 1, 1, 1, 1>} : tensor<?x8x8x4xf32>, tensor<6x4x3x3xf32>, none, none -> tensor<?x8x8x6xf32>
// CHECK-NOT: "onnx.Transpose"(%[[A]])
// CHECK: %[[B:.*]] = ortc.fused_conv %[[A]], %[[W2]], %{{.*}}, %[[A]] {activation = "none", activation_params = array<f32>, channels_last, group = 6 : i64, pads = array<i64: 1, 1, 1, 1>}
// CHECK-SAME: -> tensor<?x8x8x6xf32>
// CHECK: %[[Y:.*]] = "onnx.Transpose"(%[[B]]) <{perm = array<i64: 0, 3, 1, 2>}> : (tensor<?x8x8x6xf32>) -> tensor<?x6x8x8xf32>
// CHECK-NOT: onnx.Transpose
// CHECK-NOT: onnx.Conv
// CHECK: return %[[Y]]
func.func @chain(%x: tensor<?x4x8x8xf32>) -> tensor<?x6x8x8xf32> {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<6x4x3x3xf32>} : () -> tensor<6x4x3x3xf32>
  %w2 = "onnx.Constant"() {value = dense<0.25> : tensor<6x1x3x3xf32>} : () -> tensor<6x1x3x3xf32>
  %none = "onnx.NoValue"() : () -> none
  %a = ortc.fused_conv %x, %w1, %none, %none {activation = "relu", activation_params = array<f32>, pads = array<i64: 1, 1, 1, 1>} : tensor<?x4x8x8xf32>, tensor<6x4x3x3xf32>, none, none -> tensor<?x6x8x8xf32>
  %b = ortc.fused_conv %a, %w2, %none, %a {activation = "none", activation_params = array<f32>, group = 6 : i64, pads = array<i64: 1, 1, 1, 1>} : tensor<?x6x8x8xf32>, tensor<6x1x3x3xf32>, none, tensor<?x6x8x8xf32> -> tensor<?x6x8x8xf32>
  return %b : tensor<?x6x8x8xf32>
}

// -----

// A plain onnx.Conv in a chain becomes a fused_conv with no epilogue; a
// MaxPool that reads it (its Indices unread) pools the channels-last tensor
// and goes back to NCHW after.
// CHECK-LABEL: func.func @plain_conv_and_pool
// CHECK: %[[P:.*]] = ortc.fused_conv %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}} {activation = "none", activation_params = array<f32>, channels_last}
// CHECK: %[[Q:.*]] = ortc.fused_conv %[[P]], {{.*}} channels_last
// CHECK: %[[QT:.*]] = "onnx.Transpose"(%[[Q]]) <{perm = array<i64: 0, 3, 1, 2>}>
// CHECK: %[[M:.*]] = ortc.max_pool %[[P]] {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : tensor<1x6x6x8xf32> -> tensor<1x3x3x8xf32>
// CHECK: %[[MT:.*]] = "onnx.Transpose"(%[[M]]) <{perm = array<i64: 0, 3, 1, 2>}> : (tensor<1x3x3x8xf32>) -> tensor<1x8x3x3xf32>
// CHECK-NOT: onnx.MaxPool
// CHECK: return %[[QT]], %[[MT]]
func.func @plain_conv_and_pool(%x: tensor<1x8x6x6xf32>) -> (tensor<1x8x6x6xf32>, tensor<1x8x3x3xf32>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %b = "onnx.Constant"() {value = dense<0.5> : tensor<8xf32>} : () -> tensor<8xf32>
  %p = "onnx.Conv"(%x, %w, %b) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
  %q = "onnx.Conv"(%p, %w, %b) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, tensor<8xf32>) -> tensor<1x8x6x6xf32>
  %m, %i = "onnx.MaxPool"(%p) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x6x6xf32>) -> (tensor<1x8x3x3xf32>, none)
  return %q, %m : tensor<1x8x6x6xf32>, tensor<1x8x3x3xf32>
}

// -----

// ResNet's stem: a conv, a MaxPool (padded, ceil_mode kept) and a conv form
// one chain: one Transpose in, one out, and nothing between.
// CHECK-LABEL: func.func @stem
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x16x16xf32>)
// CHECK: %[[XT:.*]] = "onnx.Transpose"(%[[X]]) <{perm = array<i64: 0, 2, 3, 1>}>
// CHECK: %[[S:.*]] = ortc.fused_conv %[[XT]], {{.*}} channels_last
// CHECK-SAME: -> tensor<2x8x8x8xf32>
// CHECK-NOT: onnx.Transpose
// CHECK: %[[M:.*]] = ortc.max_pool %[[S]] {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : tensor<2x8x8x8xf32> -> tensor<2x5x5x8xf32>
// CHECK-NOT: onnx.Transpose
// CHECK: %[[B:.*]] = ortc.fused_conv %[[M]], {{.*}} channels_last
// CHECK-NEXT: %[[Y:.*]] = "onnx.Transpose"(%[[B]]) <{perm = array<i64: 0, 3, 1, 2>}>
// CHECK-NEXT: return %[[Y]]
func.func @stem(%x: tensor<2x3x16x16xf32>) -> tensor<2x8x5x5xf32> {
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<8x3x3x3xf32>} : () -> tensor<8x3x3x3xf32>
  %w2 = "onnx.Constant"() {value = dense<0.5> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %s = "onnx.Conv"(%x, %w1, %none) {pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x3x16x16xf32>, tensor<8x3x3x3xf32>, none) -> tensor<2x8x8x8xf32>
  %m, %i = "onnx.MaxPool"(%s) {ceil_mode = 1 : i64, kernel_shape = array<i64: 3, 3>, pads = array<i64: 1, 1, 1, 1>, strides = array<i64: 2, 2>} : (tensor<2x8x8x8xf32>) -> (tensor<2x8x5x5xf32>, none)
  %b = "onnx.Conv"(%m, %w2, %none) : (tensor<2x8x5x5xf32>, tensor<8x8x1x1xf32>, none) -> tensor<2x8x5x5xf32>
  return %b : tensor<2x8x5x5xf32>
}

// -----

// Not converted: a MaxPool whose Indices are read, a MaxPool next to no
// conv of a chain, and so the conv before the first (alone then).
// CHECK-LABEL: func.func @pools_left_alone
// CHECK-NOT: ortc.max_pool
// CHECK-NOT: channels_last
// CHECK-COUNT-2: "onnx.MaxPool"
func.func @pools_left_alone(%x: tensor<1x8x6x6xf32>) -> (tensor<1x8x3x3xf32>, tensor<1x8x3x3xi64>, tensor<1x8x3x3xf32>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %c = "onnx.Conv"(%x, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %m, %i = "onnx.MaxPool"(%c) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x6x6xf32>) -> (tensor<1x8x3x3xf32>, tensor<1x8x3x3xi64>)
  %m2, %i2 = "onnx.MaxPool"(%x) {kernel_shape = array<i64: 2, 2>, strides = array<i64: 2, 2>} : (tensor<1x8x6x6xf32>) -> (tensor<1x8x3x3xf32>, none)
  return %m, %i, %m2 : tensor<1x8x3x3xf32>, tensor<1x8x3x3xi64>, tensor<1x8x3x3xf32>
}

// -----

// Not converted: a conv alone (two Transposes for one conv), a grouped conv
// that is not depthwise, a 1-D conv, a conv whose W is computed, and a
// depthwise conv with two outputs per channel. Each would read or feed
// another conv.
// CHECK-LABEL: func.func @left_alone
// CHECK-NOT: onnx.Transpose
// CHECK-NOT: channels_last
// CHECK: return
func.func @left_alone(%x: tensor<1x8x6x6xf32>, %x1: tensor<1x4x9xf32>, %wx: tensor<8x8x1x1xf32>) -> (tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x4x9xf32>, tensor<1x16x6x6xf32>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %wg = "onnx.Constant"() {value = dense<0.5> : tensor<8x4x1x1xf32>} : () -> tensor<8x4x1x1xf32>
  %w1 = "onnx.Constant"() {value = dense<0.5> : tensor<4x4x3xf32>} : () -> tensor<4x4x3xf32>
  %wm = "onnx.Constant"() {value = dense<0.5> : tensor<16x1x1x1xf32>} : () -> tensor<16x1x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %alone = "onnx.Conv"(%x, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %g = "onnx.Conv"(%x, %wg, %none) {group = 2 : i64} : (tensor<1x8x6x6xf32>, tensor<8x4x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %g2 = "onnx.Conv"(%g, %wx, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %c1 = "onnx.Conv"(%x1, %w1, %none) {pads = array<i64: 1, 1>} : (tensor<1x4x9xf32>, tensor<4x4x3xf32>, none) -> tensor<1x4x9xf32>
  %c2 = "onnx.Conv"(%c1, %w1, %none) {pads = array<i64: 1, 1>} : (tensor<1x4x9xf32>, tensor<4x4x3xf32>, none) -> tensor<1x4x9xf32>
  %m = "onnx.Conv"(%g2, %wm, %none) {group = 8 : i64} : (tensor<1x8x6x6xf32>, tensor<16x1x1x1xf32>, none) -> tensor<1x16x6x6xf32>
  return %alone, %g2, %c2, %m : tensor<1x8x6x6xf32>, tensor<1x8x6x6xf32>, tensor<1x4x9xf32>, tensor<1x16x6x6xf32>
}

// -----

// A Transpose pair the pass did not make still cancels when the second
// undoes the first; a pair that does not undo it stays.
// CHECK-LABEL: func.func @transpose_pairs
// CHECK-SAME: (%[[X:.*]]: tensor<2x3x4x5xf32>)
// CHECK: %[[T:.*]] = "onnx.Transpose"(%[[X]]) <{perm = array<i64: 0, 2, 3, 1>}>
// CHECK: %[[U:.*]] = "onnx.Transpose"(%[[T]]) <{perm = array<i64: 0, 2, 3, 1>}>
// CHECK: return %[[X]], %[[U]]
func.func @transpose_pairs(%x: tensor<2x3x4x5xf32>) -> (tensor<2x3x4x5xf32>, tensor<2x5x3x4xf32>) {
  %t = "onnx.Transpose"(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x3x4x5xf32>) -> tensor<2x4x5x3xf32>
  %back = "onnx.Transpose"(%t) {perm = array<i64: 0, 3, 1, 2>} : (tensor<2x4x5x3xf32>) -> tensor<2x3x4x5xf32>
  %again = "onnx.Transpose"(%t) {perm = array<i64: 0, 2, 3, 1>} : (tensor<2x4x5x3xf32>) -> tensor<2x5x3x4xf32>
  return %back, %again : tensor<2x3x4x5xf32>, tensor<2x5x3x4xf32>
}

// -----

// Two convs that read one value (a block and its projection shortcut)
// share one Transpose of it.
// CHECK-LABEL: func.func @shared_input
// CHECK-SAME: (%[[X:.*]]: tensor<1x8x6x6xf32>)
// CHECK: %[[XT:.*]] = "onnx.Transpose"(%[[X]]) <{perm = array<i64: 0, 2, 3, 1>}>
// CHECK-NOT: "onnx.Transpose"(%[[X]])
// CHECK: %[[A:.*]] = ortc.fused_conv %[[XT]], {{.*}} channels_last
// CHECK: %[[S:.*]] = ortc.fused_conv %[[XT]], {{.*}} channels_last
// CHECK: ortc.fused_conv %[[A]], %{{.*}}, %{{.*}}, %[[S]] {{.*}} channels_last
func.func @shared_input(%x: tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32> {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %none = "onnx.NoValue"() : () -> none
  %a = "onnx.Conv"(%x, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %s = "onnx.Conv"(%x, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %y = ortc.fused_conv %a, %w, %none, %s {activation = "relu", activation_params = array<f32>} : tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none, tensor<1x8x6x6xf32> -> tensor<1x8x6x6xf32>
  return %y : tensor<1x8x6x6xf32>
}

// -----

// A chain's end read only by a global mean (a CNN's head): the mean reads
// the channels-last tensor over its axes 1 and 2, and keepdims is a
// Reshape of [N,1,1,C] to [N,C,1,1] (a dynamic batch kept by its 0); the
// chain's last Transpose goes. Without keepdims the mean is [N,C] as it is;
// GlobalAveragePool is such a mean too.
// CHECK-LABEL: func.func @global_means
// CHECK: %[[A:.*]] = ortc.fused_conv %{{.*}} channels_last
// CHECK: %[[Y:.*]] = ortc.fused_conv %[[A]], {{.*}} channels_last
// CHECK-NOT: perm = array<i64: 0, 3, 1, 2>
// CHECK: %[[AX:.*]] = "onnx.Constant"() <{value = dense<[1, 2]> : tensor<2xi64>}>
// CHECK: %[[M:.*]] = "onnx.ReduceMean"(%[[Y]], %[[AX]]) <{keepdims = 1 : i64, noop_with_empty_axes = 0 : i64}> : (tensor<?x6x6x8xf32>, tensor<2xi64>) -> tensor<?x1x1x8xf32>
// CHECK: %[[S:.*]] = "onnx.Constant"() <{value = dense<[0, 8, 1, 1]> : tensor<4xi64>}>
// CHECK: %[[R:.*]] = "onnx.Reshape"(%[[M]], %[[S]]) <{allowzero = 0 : i64}> : (tensor<?x1x1x8xf32>, tensor<4xi64>) -> tensor<?x8x1x1xf32>
// CHECK: return %[[R]]
func.func @global_means(%x: tensor<?x8x6x6xf32>) -> tensor<?x8x1x1xf32> {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %axes = "onnx.Constant"() {value = dense<[-1, 2]> : tensor<2xi64>} : () -> tensor<2xi64>
  %none = "onnx.NoValue"() : () -> none
  %a = "onnx.Conv"(%x, %w, %none) : (tensor<?x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<?x8x6x6xf32>
  %y = "onnx.Conv"(%a, %w, %none) : (tensor<?x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<?x8x6x6xf32>
  %m = "onnx.ReduceMean"(%y, %axes) {keepdims = 1 : i64} : (tensor<?x8x6x6xf32>, tensor<2xi64>) -> tensor<?x8x1x1xf32>
  return %m : tensor<?x8x1x1xf32>
}

// -----

// CHECK-LABEL: func.func @mean_without_keepdims_and_global_pool
// CHECK-NOT: perm = array<i64: 0, 3, 1, 2>
// CHECK: "onnx.ReduceMean"(%{{.*}}, %{{.*}}) <{keepdims = 0 : i64, noop_with_empty_axes = 0 : i64}> : (tensor<1x6x6x8xf32>, tensor<2xi64>) -> tensor<1x8xf32>
// CHECK-NOT: perm = array<i64: 0, 3, 1, 2>
// CHECK: %[[G:.*]] = "onnx.ReduceMean"(%{{.*}}, %{{.*}}) <{keepdims = 1 : i64, noop_with_empty_axes = 0 : i64}> : (tensor<1x6x6x8xf32>, tensor<2xi64>) -> tensor<1x1x1x8xf32>
// CHECK: "onnx.Reshape"(%[[G]], %{{.*}}) <{allowzero = 0 : i64}> : (tensor<1x1x1x8xf32>, tensor<4xi64>) -> tensor<1x8x1x1xf32>
// CHECK-NOT: onnx.GlobalAveragePool
func.func @mean_without_keepdims_and_global_pool(%x: tensor<1x8x6x6xf32>) -> (tensor<1x8xf32>, tensor<1x8x1x1xf32>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %axes = "onnx.Constant"() {value = dense<[2, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %none = "onnx.NoValue"() : () -> none
  %a = "onnx.Conv"(%x, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %y = "onnx.Conv"(%a, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %m = "onnx.ReduceMean"(%y, %axes) {keepdims = 0 : i64} : (tensor<1x8x6x6xf32>, tensor<2xi64>) -> tensor<1x8xf32>
  %b = "onnx.Conv"(%x, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %c = "onnx.Conv"(%b, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %g = "onnx.GlobalAveragePool"(%c) : (tensor<1x8x6x6xf32>) -> tensor<1x8x1x1xf32>
  return %m, %g : tensor<1x8xf32>, tensor<1x8x1x1xf32>
}

// -----

// Left alone: a mean over H only, and a mean of a Transpose that another op
// reads too (the Transpose stays for it).
// CHECK-LABEL: func.func @means_left_alone
// CHECK: %[[T:.*]] = "onnx.Transpose"(%{{.*}}) <{perm = array<i64: 0, 3, 1, 2>}>
// CHECK: "onnx.ReduceMean"(%[[T]], %{{.*}})
// CHECK: %[[U:.*]] = "onnx.Transpose"(%{{.*}}) <{perm = array<i64: 0, 3, 1, 2>}>
// CHECK: "onnx.ReduceMean"(%[[U]], %{{.*}})
// CHECK: "onnx.Relu"(%[[U]])
func.func @means_left_alone(%x: tensor<1x8x6x6xf32>) -> (tensor<1x8x1x6xf32>, tensor<1x8x1x1xf32>, tensor<1x8x6x6xf32>) {
  %w = "onnx.Constant"() {value = dense<0.5> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %h = "onnx.Constant"() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
  %hw = "onnx.Constant"() {value = dense<[2, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %none = "onnx.NoValue"() : () -> none
  %a = "onnx.Conv"(%x, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %y = "onnx.Conv"(%a, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %m = "onnx.ReduceMean"(%y, %h) : (tensor<1x8x6x6xf32>, tensor<1xi64>) -> tensor<1x8x1x6xf32>
  %b = "onnx.Conv"(%x, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %c = "onnx.Conv"(%b, %w, %none) : (tensor<1x8x6x6xf32>, tensor<8x8x1x1xf32>, none) -> tensor<1x8x6x6xf32>
  %g = "onnx.ReduceMean"(%c, %hw) : (tensor<1x8x6x6xf32>, tensor<2xi64>) -> tensor<1x8x1x1xf32>
  %r = "onnx.Relu"(%c) : (tensor<1x8x6x6xf32>) -> tensor<1x8x6x6xf32>
  return %m, %g, %r : tensor<1x8x1x6xf32>, tensor<1x8x1x1xf32>, tensor<1x8x6x6xf32>
}
