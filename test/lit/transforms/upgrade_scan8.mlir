// RUN: ortc-opt %s -split-input-file -onnx-upgrade-scan8 | FileCheck %s

// Scan-8 over a batch: a Loop over dim 0 of the first scan input whose body
// takes element b of each input and runs an opset-9 Scan on it; the Loop's
// scan outputs stack the results over the batch.
// CHECK-LABEL: func.func @scan8
// CHECK-SAME: (%[[S0:.*]]: tensor<?x3xf32>, %[[X:.*]]: tensor<?x?x3xf32>, %[[R:.*]]: tensor<?x?x3xf32>)
// CHECK: %[[SHAPE:.*]] = "onnx.Shape"(%[[X]])
// CHECK: %[[B:.*]] = "onnx.Gather"(%[[SHAPE]], %{{.*}}) <{axis = 0 : i64}> : (tensor<?xi64>, tensor<i64>) -> tensor<i64>
// CHECK: %[[OUT:.*]]:2 = "onnx.Loop"(%[[B]], %{{.*}}) ({
// CHECK: ^bb0(%[[I:.*]]: tensor<i64>, %[[C:.*]]: tensor<i1>):
// CHECK: %[[ES:.*]] = "onnx.Gather"(%[[S0]], %[[I]]) <{axis = 0 : i64}> : (tensor<?x3xf32>, tensor<i64>) -> tensor<3xf32>
// CHECK: %[[EX:.*]] = "onnx.Gather"(%[[X]], %[[I]]) <{axis = 0 : i64}> : (tensor<?x?x3xf32>, tensor<i64>) -> tensor<?x3xf32>
// CHECK: %[[ER:.*]] = "onnx.Gather"(%[[R]], %[[I]])
// CHECK: %[[SCAN:.*]]:2 = "onnx.Scan"(%[[ES]], %[[EX]], %[[ER]]) <{num_scan_inputs = 2 : i64, scan_input_directions = array<i64: 0, 1>}> ({
// CHECK: "onnx.Add"
// CHECK: }) : (tensor<3xf32>, tensor<?x3xf32>, tensor<?x3xf32>) -> (tensor<3xf32>, tensor<?x3xf32>)
// CHECK: "onnx.Yield"(%[[C]], %[[SCAN]]#0, %[[SCAN]]#1)
// CHECK: }) : (tensor<i64>, none) -> (tensor<?x3xf32>, tensor<?x?x3xf32>)
// CHECK-NOT: onnx.Generic
// CHECK: return %[[OUT]]#0, %[[OUT]]#1
func.func @scan8(%s0: tensor<?x3xf32>, %x: tensor<?x?x3xf32>, %r: tensor<?x?x3xf32>) -> (tensor<?x3xf32>, tensor<?x?x3xf32>) {
  %none = "onnx.NoValue"() : () -> none
  %out:2 = "onnx.Generic"(%none, %s0, %x, %r) <{domain = "", onnx_attrs = {directions = array<i64: 0, 1>, num_scan_inputs = 2 : i64}, op_type = "Scan", region_names = ["body"], since_version = 8 : i64}> ({
  ^bb0(%s: tensor<3xf32>, %xt: tensor<3xf32>, %rt: tensor<3xf32>):
    %a = "onnx.Add"(%s, %xt) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    %m = "onnx.Mul"(%a, %rt) : (tensor<3xf32>, tensor<3xf32>) -> tensor<3xf32>
    "onnx.Yield"(%m, %m) : (tensor<3xf32>, tensor<3xf32>) -> ()
  }) : (none, tensor<?x3xf32>, tensor<?x?x3xf32>, tensor<?x?x3xf32>) -> (tensor<?x3xf32>, tensor<?x?x3xf32>)
  return %out#0, %out#1 : tensor<?x3xf32>, tensor<?x?x3xf32>
}

// -----

// Negative: with sequence_lens the length varies per batch element; left
// alone.
// CHECK-LABEL: func.func @with_sequence_lens
// CHECK: "onnx.Generic"
// CHECK-NOT: "onnx.Loop"
func.func @with_sequence_lens(%lens: tensor<?xi64>, %x: tensor<?x?x3xf32>) -> tensor<?x?x3xf32> {
  %out = "onnx.Generic"(%lens, %x) <{domain = "", onnx_attrs = {num_scan_inputs = 1 : i64}, op_type = "Scan", region_names = ["body"], since_version = 8 : i64}> ({
  ^bb0(%xt: tensor<3xf32>):
    "onnx.Yield"(%xt) : (tensor<3xf32>) -> ()
  }) : (tensor<?xi64>, tensor<?x?x3xf32>) -> tensor<?x?x3xf32>
  return %out : tensor<?x?x3xf32>
}
