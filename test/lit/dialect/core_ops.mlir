// The hand-written ops and the dialect's types parse, verify and print back.
// RUN: ortc-opt %s -split-input-file | FileCheck %s
// RUN: ortc-opt %s -split-input-file | ortc-opt -split-input-file | FileCheck %s

// CHECK-LABEL: func.func @generic_with_regions
// CHECK-SAME: (%[[X:.*]]: !onnx.seq<tensor<?xf32>>, %[[M:.*]]: !onnx.map<i64, !onnx.opt<tensor<*x!onnx.string>>>)
func.func @generic_with_regions(%x: !onnx.seq<tensor<?xf32>>, %m: !onnx.map<i64, !onnx.opt<tensor<*x!onnx.string>>>) -> !onnx.unknown {
  // CHECK: %[[NONE:.*]] = "onnx.NoValue"() : () -> none
  %none = "onnx.NoValue"() : () -> none
  // CHECK: %[[G:.*]] = "onnx.Generic"(%[[X]], %[[NONE]], %[[M]]) <{domain = "com.microsoft", onnx_attrs = {k = 1 : i64}, op_type = "Custom", region_names = ["a", "b"], since_version = 1 : i64}> ({
  // CHECK:   "onnx.Yield"(%[[X]])
  // CHECK: }, {
  // CHECK:   "onnx.Yield"() : () -> ()
  // CHECK: })
  %r = "onnx.Generic"(%x, %none, %m) <{domain = "com.microsoft", onnx_attrs = {k = 1 : i64}, op_type = "Custom", region_names = ["a", "b"], since_version = 1 : i64}> ({
    "onnx.Yield"(%x) : (!onnx.seq<tensor<?xf32>>) -> ()
  }, {
    "onnx.Yield"() : () -> ()
  }) : (!onnx.seq<tensor<?xf32>>, none, !onnx.map<i64, !onnx.opt<tensor<*x!onnx.string>>>) -> !onnx.unknown
  // CHECK: return %[[G]]
  return %r : !onnx.unknown
}

// -----

// A generic op with no inputs, outputs or regions is still well formed.
// CHECK-LABEL: func.func @generic_bare
// CHECK: "onnx.Generic"() <{domain = "", onnx_attrs = {}, op_type = "Nop", since_version = 1 : i64}> : () -> ()
func.func @generic_bare() {
  "onnx.Generic"() <{domain = "", onnx_attrs = {}, op_type = "Nop", since_version = 1 : i64}> : () -> ()
  return
}
