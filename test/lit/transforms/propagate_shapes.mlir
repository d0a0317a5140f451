// RUN: ortc-opt %s -split-input-file -onnx-propagate-shapes -onnx-dce | FileCheck %s
// RUN: not ortc-opt %s -split-input-file -onnx-propagate-shapes="max-rounds=1" 2>&1 | FileCheck %s --check-prefix=ROUNDS
// RUN: ortc-opt %s -split-input-file -onnx-propagate-shapes="max-elements=4" -onnx-dce | FileCheck %s --check-prefix=LIMIT

// Shape arithmetic over a static input that needs inference between folds:
// the Reshape's -1 is resolved only once ConstantOfShape's shape is a
// constant, and only then can the Reshape fold (round 2); the Expand and
// the Mul after it get static types from the folded target (round 3).
// CHECK-LABEL: func.func @rounds
// CHECK-SAME: (%[[X:.*]]: tensor<2x3xf32>)
// CHECK-DAG: %[[T:.*]] = "onnx.Constant"() <{value = dense<7> : tensor<6xi64>}>
// CHECK: %[[E:.*]] = "onnx.Expand"(%[[X]], %{{.*}}) : (tensor<2x3xf32>, tensor<3xi64>) -> tensor<4x2x3xf32>
// CHECK: %[[M:.*]] = "onnx.Mul"(%[[E]], %[[E]]) : (tensor<4x2x3xf32>, tensor<4x2x3xf32>) -> tensor<4x2x3xf32>
// CHECK: return %[[T]], %[[M]] : tensor<6xi64>, tensor<4x2x3xf32>
// ROUNDS: error: shapes and constants still change after 1 rounds of inference and folding
// LIMIT-LABEL: func.func @rounds
// LIMIT: "onnx.ConstantOfShape"
// LIMIT: "onnx.Reshape"{{.*}} -> tensor<6xi64>
func.func @rounds(%x: tensor<2x3xf32>) -> (tensor<*xi64>, tensor<*xf32>) {
  %s = "onnx.Shape"(%x) : (tensor<2x3xf32>) -> tensor<*xi64>
  %c = "onnx.ConstantOfShape"(%s) {value = dense<7> : tensor<1xi64>} : (tensor<*xi64>) -> !onnx.unknown
  %flat = "onnx.Constant"() {value = dense<[-1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %r = "onnx.Reshape"(%c, %flat) : (!onnx.unknown, tensor<1xi64>) -> tensor<*xi64>
  %n = "onnx.Size"(%r) : (tensor<*xi64>) -> tensor<*xi64>
  %zero = "onnx.Constant"() {value = dense<0> : tensor<1xi64>} : () -> tensor<1xi64>
  %nu = "onnx.Unsqueeze"(%n, %zero) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %two = "onnx.Constant"() {value = dense<[2]> : tensor<1xi64>} : () -> tensor<1xi64>
  %four = "onnx.Sub"(%nu, %two) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %target = "onnx.Concat"(%four, %s) {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>) -> tensor<*xi64>
  %e = "onnx.Expand"(%x, %target) : (tensor<2x3xf32>, tensor<*xi64>) -> tensor<*xf32>
  %m = "onnx.Mul"(%e, %e) : (tensor<*xf32>, tensor<*xf32>) -> tensor<*xf32>
  return %r, %m : tensor<*xi64>, tensor<*xf32>
}

// -----

// Negative: a dynamic input dim keeps the shape arithmetic; the rank is all
// that inference learns.
// CHECK-LABEL: func.func @dynamic
// CHECK: "onnx.Shape"
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?x?xf32>
func.func @dynamic(%x: tensor<?x3xf32>) -> tensor<*xf32> {
  %s = "onnx.Shape"(%x) : (tensor<?x3xf32>) -> tensor<*xi64>
  %r = "onnx.Reshape"(%x, %s) : (tensor<?x3xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}
