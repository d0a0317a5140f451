// RUN: not ortc-opt %s -onnx-lower-to-linalg="fail-on-unlowered=1" 2>&1 | FileCheck %s

// The error names the op and its node (the importer's NameLoc).
// CHECK: error: {{.*}}kernel lowering: cannot lower 'onnx.Hardmax' (node 'attn/hardmax'): not an elementwise op the kernel lowering takes
// CHECK-NOT: error
func.func @hardmax(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %0 = "onnx.Hardmax"(%x) {axis = -1 : i64} : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("attn/hardmax")
  %1 = "onnx.Relu"(%0) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu")
  return %1 : tensor<4x8xf32>
}
