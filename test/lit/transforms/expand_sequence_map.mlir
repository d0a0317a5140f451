// RUN: ortc-opt %s -split-input-file -onnx-expand-sequence-map | FileCheck %s
// RUN: ortc-opt %s -split-input-file -onnx-expand-sequence-map -mlir-print-debuginfo | FileCheck %s --check-prefix=LOC

// SequenceMap becomes the Loop of its ONNX function: element i of each
// sequence input (a tensor input whole), the body, and one SequenceInsert
// per output into a sequence carried from SequenceEmpty.

// CHECK-LABEL: func.func @map_with_tensor
// CHECK-SAME: (%[[S:.*]]: !onnx.seq<tensor<?xf32>>, %[[T:.*]]: tensor<f32>)
// CHECK: %[[NONE:.*]] = "onnx.NoValue"
// CHECK: %[[N:.*]] = "onnx.SequenceLength"(%[[S]]) : (!onnx.seq<tensor<?xf32>>) -> tensor<i64>
// CHECK: %[[EMPTY:.*]] = "onnx.SequenceEmpty"() <{dtype = 1 : i64}> : () -> !onnx.seq<tensor<*xf32>>
// CHECK: %[[OUT:.*]] = "onnx.Loop"(%[[N]], %[[NONE]], %[[EMPTY]])
// CHECK: ^bb0(%[[I:.*]]: tensor<i64>, %[[C:.*]]: tensor<i1>, %[[ACC:.*]]: !onnx.seq<tensor<*xf32>>):
// CHECK: %[[E:.*]] = "onnx.SequenceAt"(%[[S]], %[[I]]) : (!onnx.seq<tensor<?xf32>>, tensor<i64>) -> tensor<*xf32>
// CHECK: %[[R:.*]] = "onnx.Add"(%[[E]], %[[T]])
// CHECK: %[[NEXT:.*]] = "onnx.SequenceInsert"(%[[ACC]], %[[R]], %[[NONE]])
// CHECK: "onnx.Yield"(%[[C]], %[[NEXT]])
// CHECK-NOT: onnx.SequenceMap
// CHECK: return %[[OUT]]
func.func @map_with_tensor(%s: !onnx.seq<tensor<?xf32>>, %t: tensor<f32>) -> !onnx.seq<tensor<?xf32>> {
  %r = "onnx.SequenceMap"(%s, %t) ({
  ^bb0(%e: tensor<?xf32>, %x: tensor<f32>):
    %sum = "onnx.Add"(%e, %x) : (tensor<?xf32>, tensor<f32>) -> tensor<?xf32>
    "onnx.Yield"(%sum) : (tensor<?xf32>) -> ()
  }) : (!onnx.seq<tensor<?xf32>>, tensor<f32>) -> !onnx.seq<tensor<?xf32>>
  return %r : !onnx.seq<tensor<?xf32>>
}

// -----

// Two sequences in, two out: element i of each, one carried sequence per
// output, each new op a node of its own name.
// CHECK-LABEL: func.func @two_sequences
// CHECK: "onnx.Loop"({{.*}}) ({
// CHECK: "onnx.SequenceAt"(%arg0, {{.*}})
// CHECK: "onnx.SequenceAt"(%arg1, {{.*}})
// CHECK: "onnx.SequenceInsert"
// CHECK: "onnx.SequenceInsert"
// CHECK: ) -> (!onnx.seq<tensor<*xf32>>, !onnx.seq<tensor<*xi64>>)
// CHECK: return {{.*}} : !onnx.seq<tensor<*xf32>>, !onnx.seq<tensor<*xi64>>
// LOC-LABEL: func.func @two_sequences
// LOC: "onnx.SequenceAt"(%arg0, {{.*}} loc(#[[AT0:loc[0-9]*]])
// LOC: "onnx.SequenceAt"(%arg1, {{.*}} loc(#[[AT1:loc[0-9]*]])
// LOC-DAG: #[[AT0]] = loc("map/SequenceAt0"
// LOC-DAG: #[[AT1]] = loc("map/SequenceAt1"
func.func @two_sequences(%a: !onnx.seq<tensor<?xf32>>, %b: !onnx.seq<tensor<?xi64>>) -> (!onnx.unknown, !onnx.unknown) {
  %r:2 = "onnx.SequenceMap"(%a, %b) ({
  ^bb0(%x: tensor<?xf32>, %y: tensor<?xi64>):
    "onnx.Yield"(%x, %y) : (tensor<?xf32>, tensor<?xi64>) -> ()
  }) : (!onnx.seq<tensor<?xf32>>, !onnx.seq<tensor<?xi64>>) -> (!onnx.unknown, !onnx.unknown) loc("map")
  return %r#0, %r#1 : !onnx.unknown, !onnx.unknown
}

// -----

// Negative: an output whose element type nothing states stays a SequenceMap.
// CHECK-LABEL: func.func @unknown_output
// CHECK: "onnx.SequenceMap"
// CHECK-NOT: "onnx.Loop"
func.func @unknown_output(%s: !onnx.seq<tensor<?xf32>>) -> !onnx.unknown {
  %r = "onnx.SequenceMap"(%s) ({
  ^bb0(%e: tensor<?xf32>):
    %u = "onnx.Generic"(%e) <{domain = "com.example", onnx_attrs = {}, op_type = "Mystery", since_version = 1 : i64}> : (tensor<?xf32>) -> !onnx.unknown
    "onnx.Yield"(%u) : (!onnx.unknown) -> ()
  }) : (!onnx.seq<tensor<?xf32>>) -> !onnx.unknown
  return %r : !onnx.unknown
}
