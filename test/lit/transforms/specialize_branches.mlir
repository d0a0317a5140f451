// RUN: ortc-opt %s -split-input-file -onnx-propagate-shapes -onnx-specialize-branches | FileCheck %s

// torch's x.squeeze(-1) on a dynamic dim: Squeeze if the last dim is 1, else
// x itself. The LSTM after it takes rank 3 only, which rules the rank-3
// branch out (its X would be rank 3 only squeezed): the If becomes the
// Squeeze, and the condition is checked at run time.
// CHECK-LABEL: func.func @squeeze_if_one
// CHECK: %[[COND:.*]] = "onnx.Equal"
// CHECK: ortc.check_condition %[[COND]] {expected = true, message = "node 'sq_if' was compiled for its then_branch, its branches giving different ranks (under the else_branch the graph does not type-check: X has rank 4; it must be [seq, batch, input] (rank 3)); this input's condition takes the else_branch"} : tensor<1xi1>
// CHECK-NOT: onnx.If
// CHECK: %[[SQ:.*]] = "onnx.Squeeze"(%arg0
// CHECK: "onnx.Unsqueeze"(%[[SQ]]
// CHECK: "onnx.LSTM"
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
func.func @squeeze_if_one(%x: tensor<2x3x?xf32>, %w: tensor<1x16x3xf32>, %r: tensor<1x16x4xf32>) -> tensor<1x2x4xf32> {
  %none = "onnx.NoValue"() : () -> none
  %m1 = "onnx.Constant"() {value = dense<-1> : tensor<1xi64>} : () -> tensor<1xi64>
  %one = "onnx.Constant"() {value = dense<1> : tensor<1xi64>} : () -> tensor<1xi64>
  %zero = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
  %s = "onnx.Shape"(%x) : (tensor<2x3x?xf32>) -> tensor<3xi64>
  %d = "onnx.Gather"(%s, %m1) {axis = 0 : i64} : (tensor<3xi64>, tensor<1xi64>) -> tensor<1xi64>
  %c = "onnx.Equal"(%d, %one) : (tensor<1xi64>, tensor<1xi64>) -> tensor<1xi1>
  %y = "onnx.If"(%c) ({
    "onnx.Yield"(%x) : (tensor<2x3x?xf32>) -> ()
  }, {
    %sq = "onnx.Squeeze"(%x, %m1) : (tensor<2x3x?xf32>, tensor<1xi64>) -> tensor<2x3xf32>
    "onnx.Yield"(%sq) : (tensor<2x3xf32>) -> ()
  }) : (tensor<1xi1>) -> tensor<*xf32> loc("sq_if")
  %u = "onnx.Unsqueeze"(%y, %zero) : (tensor<*xf32>, tensor<1xi64>) -> tensor<*xf32>
  %Y, %Yh, %Yc = "onnx.LSTM"(%u, %w, %r, %none, %none, %none, %none, %none) {direction = "forward", hidden_size = 4 : i64, input_forget = 0 : i64, layout = 0 : i64} : (tensor<*xf32>, tensor<1x16x3xf32>, tensor<1x16x4xf32>, none, none, none, none, none) -> (tensor<*xf32>, tensor<1x2x4xf32>, none)
  return %Yh : tensor<1x2x4xf32>
}
}

// -----

// Negative: both branches type-check (nothing after the If needs a rank),
// so the If stays, unranked, for the EPs to decline with both ranks named.
// CHECK-LABEL: func.func @either_rank
// CHECK-NOT: ortc.check_condition
// CHECK: "onnx.If"
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
func.func @either_rank(%x: tensor<2x?xf32>, %c: tensor<i1>) -> tensor<*xf32> {
  %zero = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
  %y = "onnx.If"(%c) ({
    "onnx.Yield"(%x) : (tensor<2x?xf32>) -> ()
  }, {
    %u = "onnx.Unsqueeze"(%x, %zero) : (tensor<2x?xf32>, tensor<1xi64>) -> tensor<1x2x?xf32>
    "onnx.Yield"(%u) : (tensor<1x2x?xf32>) -> ()
  }) : (tensor<i1>) -> tensor<*xf32>
  %r = "onnx.Relu"(%y) : (tensor<*xf32>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}
}

// -----

// Negative: branches of one rank are an If the EPs run as it is.
// CHECK-LABEL: func.func @same_rank
// CHECK-NOT: ortc.check_condition
// CHECK: "onnx.If"
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
func.func @same_rank(%x: tensor<4xf32>, %c: tensor<i1>) -> tensor<?xf32> {
  %y = "onnx.If"(%c) ({
    %n = "onnx.Neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "onnx.Yield"(%n) : (tensor<4xf32>) -> ()
  }, {
    %d = "onnx.Concat"(%x, %x) {axis = 0 : i64} : (tensor<4xf32>, tensor<4xf32>) -> tensor<8xf32>
    "onnx.Yield"(%d) : (tensor<8xf32>) -> ()
  }) : (tensor<i1>) -> tensor<?xf32>
  return %y : tensor<?xf32>
}
}
