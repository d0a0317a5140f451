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

// A dynamic batch: the shape arithmetic stays for run time, but the dims it
// takes from static input dims are known (ONNX's partial data propagation
// through Shape, Gather, Slice, Unsqueeze, Concat and Cast).
// CHECK-LABEL: func.func @dynamic_batch
// CHECK: "onnx.Shape"
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?x2x3xf32>
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?x3x2xf32>
// CHECK: "onnx.ConstantOfShape"{{.*}} -> tensor<?x2x3xf32>
// CHECK: "onnx.Expand"{{.*}} -> tensor<?x6xf32>
func.func @dynamic_batch(%x: tensor<?x6xf32>, %v: tensor<1x6xf32>) -> (tensor<*xf32>, tensor<*xf32>, !onnx.unknown, tensor<*xf32>) {
  %s = "onnx.Shape"(%x) : (tensor<?x6xf32>) -> tensor<*xi64>
  %zero = "onnx.Constant"() {value = dense<0> : tensor<i64>} : () -> tensor<i64>
  %b = "onnx.Gather"(%s, %zero) {axis = 0 : i64} : (tensor<*xi64>, tensor<i64>) -> tensor<*xi64>
  %ax = "onnx.Constant"() {value = dense<[0]> : tensor<1xi64>} : () -> tensor<1xi64>
  %b1 = "onnx.Unsqueeze"(%b, %ax) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %rest = "onnx.Constant"() {value = dense<[2, 3]> : tensor<2xi64>} : () -> tensor<2xi64>
  %t = "onnx.Concat"(%b1, %rest) {axis = 0 : i64} : (tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
  %t32 = "onnx.Cast"(%t) {to = 7 : i64} : (tensor<*xi64>) -> tensor<*xi64>
  %one = "onnx.Constant"() {value = dense<[1]> : tensor<1xi64>} : () -> tensor<1xi64>
  %neg = "onnx.Constant"() {value = dense<[-2]> : tensor<1xi64>} : () -> tensor<1xi64>
  %none = "onnx.NoValue"() : () -> none
  %big = "onnx.Constant"() {value = dense<[9]> : tensor<1xi64>} : () -> tensor<1xi64>
  %last2 = "onnx.Slice"(%t32, %neg, %big, %none, %none) : (tensor<*xi64>, tensor<1xi64>, tensor<1xi64>, none, none) -> tensor<*xi64>
  %bt = "onnx.Concat"(%b1, %last2) {axis = 0 : i64} : (tensor<*xi64>, tensor<*xi64>) -> tensor<*xi64>
  %0 = "onnx.Reshape"(%x, %bt) : (tensor<?x6xf32>, tensor<*xi64>) -> tensor<*xf32>
  %rev = "onnx.Constant"() {value = dense<[0, 2, 1]> : tensor<3xi64>} : () -> tensor<3xi64>
  %perm = "onnx.Gather"(%t32, %rev) {axis = 0 : i64} : (tensor<*xi64>, tensor<3xi64>) -> tensor<*xi64>
  %1 = "onnx.Reshape"(%x, %perm) : (tensor<?x6xf32>, tensor<*xi64>) -> tensor<*xf32>
  %2 = "onnx.ConstantOfShape"(%bt) : (tensor<*xi64>) -> !onnx.unknown
  %tgt = "onnx.Concat"(%b1, %one) {axis = 0 : i64} : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %3 = "onnx.Expand"(%v, %tgt) : (tensor<1x6xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %0, %1, %2, %3 : tensor<*xf32>, tensor<*xf32>, !onnx.unknown, tensor<*xf32>
}

// -----

// Negative: an element computed from a dynamic dim (here s * 3) is known
// only at run time, so the Mul stays and the Reshape's dim stays dynamic.
// CHECK-LABEL: func.func @untracked
// CHECK: "onnx.Mul"
// CHECK: "onnx.Reshape"{{.*}} -> tensor<?xf32>
func.func @untracked(%x: tensor<?x3xf32>) -> tensor<*xf32> {
  %s = "onnx.Shape"(%x) {end = 1 : i64} : (tensor<?x3xf32>) -> tensor<*xi64>
  %three = "onnx.Constant"() {value = dense<[3]> : tensor<1xi64>} : () -> tensor<1xi64>
  %m = "onnx.Mul"(%s, %three) : (tensor<*xi64>, tensor<1xi64>) -> tensor<*xi64>
  %r = "onnx.Reshape"(%x, %m) : (tensor<?x3xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}

// -----

// Shape(x) * [1, 1] is x's dims as expressions: the dynamic one at its own
// position is a Reshape target's 0 (copy the dim), so the target folds.
// CHECK-LABEL: func.func @times_one
// CHECK-SAME: (%[[X:.*]]: tensor<?x3xf32>)
// CHECK: %[[T:.*]] = "onnx.Constant"() <{value = dense<[0, 3]> : tensor<2xi64>}>
// CHECK-NEXT: "onnx.Reshape"(%[[X]], %[[T]]){{.*}} -> tensor<?x3xf32>
func.func @times_one(%x: tensor<?x3xf32>) -> tensor<*xf32> {
  %s = "onnx.Shape"(%x) : (tensor<?x3xf32>) -> tensor<*xi64>
  %ones = "onnx.Constant"() {value = dense<[1, 1]> : tensor<2xi64>} : () -> tensor<2xi64>
  %m = "onnx.Mul"(%s, %ones) : (tensor<*xi64>, tensor<2xi64>) -> tensor<*xi64>
  %r = "onnx.Reshape"(%x, %m) : (tensor<?x3xf32>, tensor<*xi64>) -> tensor<*xf32>
  return %r : tensor<*xf32>
}
