// RUN: ortc-opt %s -split-input-file -verify-diagnostics -onnx-check-tensor-sizes=max-bytes=4096 | FileCheck %s

// Within the limit (4096 bytes: 1024 floats), and dynamic dims, which the
// runtime checks at each run: nothing changes.
// CHECK-LABEL: func.func @within
// CHECK-SAME: (%[[X:.*]]: tensor<1024xf32>, %[[D:.*]]: tensor<?x1000000xf32>)
// CHECK-NEXT: %[[R:.*]] = "onnx.Relu"(%[[X]])
// CHECK-NEXT: %[[S:.*]] = "onnx.Relu"(%[[D]])
// CHECK-NEXT: return %[[R]], %[[S]]
func.func @within(%x: tensor<1024xf32>, %d: tensor<?x1000000xf32>) -> (tensor<1024xf32>, tensor<?x1000000xf32>) {
  %r = "onnx.Relu"(%x) : (tensor<1024xf32>) -> tensor<1024xf32>
  %s = "onnx.Relu"(%d) : (tensor<?x1000000xf32>) -> tensor<?x1000000xf32>
  return %r, %s : tensor<1024xf32>, tensor<?x1000000xf32>
}

// -----

// A graph input one float over, named by its ONNX name.
// expected-error @+1 {{graph input 'x' (tensor<1025xf32>) needs 4100 bytes, over the limit of 4096 for one tensor}}
func.func @input_over(%x: tensor<1025xf32> {onnx.name = "x"}) -> tensor<1025xf32> {
  %r = "onnx.Relu"(%x) : (tensor<1025xf32>) -> tensor<1025xf32>
  return %r : tensor<1025xf32>
}

// -----

// A graph output without a name: its position.
// expected-error @+1 {{graph output #0 (tensor<1024xf64>) needs 8192 bytes}}
func.func @output_over(%x: tensor<1024xf32>) -> tensor<1024xf64> {
  %r = "onnx.Cast"(%x) {to = 11 : i64} : (tensor<1024xf32>) -> tensor<1024xf64>
  return %r : tensor<1024xf64>
}

// -----

// A node whose result inference made too large: 2^40 elements, the issue's
// example, caught at the node.
func.func @node_over(%x: tensor<1xf32>) -> tensor<1xf32> {
  %s = "onnx.Constant"() {value_ints = array<i64: 1048576, 1048576>} : () -> tensor<2xi64>
  // expected-error @+1 {{result 0 (tensor<1048576x1048576xf32>) needs 4398046511104 bytes}}
  %e = "onnx.Expand"(%x, %s) : (tensor<1xf32>, tensor<2xi64>) -> tensor<1048576x1048576xf32>
  return %x : tensor<1xf32>
}

// -----

// Inside a subgraph too; sub-byte elements round up to whole bytes.
func.func @in_branch(%c: tensor<i1>, %x: tensor<4xi4>) -> tensor<4xi4> {
  %0 = "onnx.If"(%c) ({
    // expected-error @+1 {{result 0 (tensor<8193xi4>) needs 4097 bytes}}
    %big = "onnx.Constant"() {value_int = 0 : i64} : () -> tensor<8193xi4>
    "onnx.Yield"(%x) : (tensor<4xi4>) -> ()
  }, {
    "onnx.Yield"(%x) : (tensor<4xi4>) -> ()
  }) : (tensor<i1>) -> tensor<4xi4>
  return %0 : tensor<4xi4>
}
