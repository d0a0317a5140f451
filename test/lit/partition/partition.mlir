// RUN: ortc-opt %s -split-input-file -verify-diagnostics -ortc-partition-spec="eps=gpu_ep@cuda:MatMul=100:Add=100,cpu_ep@cpu:*=20000" | FileCheck %s

// Overlapping support, placed by cost with transfers: MatMul and Add are
// cheaper on the GPU, Relu only runs on the CPU. The second GPU group cannot
// join the first: it depends on the CPU partition, which depends on the first.
// CHECK-LABEL: func.func private @gpu_ep_p0
// CHECK-SAME: (%[[X:.*]]: tensor<4x8xf32>, %[[W:.*]]: tensor<8x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>) attributes {ortc.ep = "gpu_ep"}
// CHECK: %[[C:.*]] = "onnx.Constant"
// CHECK: %[[MM:.*]] = "onnx.MatMul"(%[[X]], %[[W]])
// CHECK: %[[ADD:.*]] = "onnx.Add"(%[[MM]], %[[C]])
// CHECK: return %[[MM]], %[[ADD]]
// CHECK-LABEL: func.func private @cpu_ep_p0
// CHECK-SAME: attributes {ortc.ep = "cpu_ep"}
// CHECK: "onnx.Relu"
// CHECK-LABEL: func.func private @gpu_ep_p1
// CHECK-SAME: (%[[R:.*]]: tensor<4x8xf32>, %[[W1:.*]]: tensor<8x8xf32>, %[[MM0:.*]]: tensor<4x8xf32>)
// CHECK: %[[MM1:.*]] = "onnx.MatMul"(%[[R]], %[[W1]])
// CHECK: "onnx.Add"(%[[MM1]], %[[MM0]])
// CHECK-LABEL: func.func @main_graph
// CHECK-SAME: (%[[GX:.*]]: tensor<4x8xf32>, %[[GW:.*]]: tensor<8x8xf32>)
// CHECK-NEXT: %[[P0:.*]]:2 = call @gpu_ep_p0(%[[GX]], %[[GW]])
// CHECK-NEXT: %[[P1:.*]] = call @cpu_ep_p0(%[[P0]]#1)
// CHECK-NEXT: %[[P2:.*]] = call @gpu_ep_p1(%[[P1]], %[[GW]], %[[P0]]#0)
// CHECK-NEXT: return %[[P2]]
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
func.func @main_graph(%x: tensor<4x8xf32>, %w: tensor<8x8xf32>) -> tensor<4x8xf32> {
  %c = "onnx.Constant"() {value_floats = array<f32: 1.0>} : () -> tensor<1xf32>
  %0 = "onnx.MatMul"(%x, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm0")
  %1 = "onnx.Add"(%0, %c) : (tensor<4x8xf32>, tensor<1xf32>) -> tensor<4x8xf32> loc("add0")
  %2 = "onnx.Relu"(%1) : (tensor<4x8xf32>) -> tensor<4x8xf32> loc("relu0")
  %3 = "onnx.MatMul"(%2, %w) : (tensor<4x8xf32>, tensor<8x8xf32>) -> tensor<4x8xf32> loc("mm1")
  %4 = "onnx.Add"(%3, %0) : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> loc("add1")
  return %4 : tensor<4x8xf32>
}
}

// -----

// The cost model keeps a cheap op next to its neighbours: on the GPU this Add
// costs 100 ns plus moving 4 MB from the CPU-only Relu before it (~200 us);
// on the CPU it costs 20 us and moves nothing.
// CHECK-LABEL: func.func private @cpu_ep_p0
// CHECK: "onnx.Relu"
// CHECK: "onnx.Add"
// CHECK: "onnx.Relu"
// CHECK-NOT: gpu_ep
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
func.func @main_graph(%x: tensor<1000000xf32>) -> tensor<1000000xf32> {
  %0 = "onnx.Relu"(%x) : (tensor<1000000xf32>) -> tensor<1000000xf32>
  %1 = "onnx.Add"(%0, %0) : (tensor<1000000xf32>, tensor<1000000xf32>) -> tensor<1000000xf32>
  %2 = "onnx.Relu"(%1) : (tensor<1000000xf32>) -> tensor<1000000xf32>
  return %2 : tensor<1000000xf32>
}
}

// -----

// An If is placed whole; the outer values its regions read become inputs.
// CHECK-LABEL: func.func private @cpu_ep_p0
// CHECK-SAME: (%[[C:.*]]: tensor<i1>, %[[X:.*]]: tensor<4xf32>)
// CHECK: "onnx.If"(%[[C]])
// CHECK: "onnx.Neg"(%[[X]])
// CHECK-LABEL: func.func @main_graph
// CHECK: call @cpu_ep_p0
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
func.func @main_graph(%c: tensor<i1>, %x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "onnx.If"(%c) ({
    %n = "onnx.Neg"(%x) : (tensor<4xf32>) -> tensor<4xf32>
    "onnx.Yield"(%n) : (tensor<4xf32>) -> ()
  }, {
    "onnx.Yield"(%x) : (tensor<4xf32>) -> ()
  }) : (tensor<i1>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
}

// -----

module attributes {onnx.opset_import = {ai.onnx = 17 : i64, com.microsoft = 1 : i64}} {
func.func @main_graph(%x: tensor<4xf32>) -> tensor<4xf32> {
  // expected-error @+1 {{no EP claims this node; gpu_ep declines node 'FusedGelu' (com.microsoft::FusedGelu, opset 1): op: op com.microsoft::FusedGelu has no kernel; accepts ai.onnx and ortc ops Add, MatMul; cpu_ep declines node 'FusedGelu' (com.microsoft::FusedGelu, opset 1): op: op com.microsoft::FusedGelu has no kernel; accepts ai.onnx and ortc ops *}}
  %0 = "onnx.Generic"(%x) <{domain = "com.microsoft", onnx_attrs = {}, op_type = "FusedGelu", since_version = 1 : i64}> : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
}

// -----

// Fused ortc ops are placed like onnx ops; a spec EP names them by mnemonic.
// CHECK-LABEL: func.func private @cpu_ep_p0
// CHECK: ortc.gelu
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
func.func @main_graph(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = ortc.gelu %x {approximate = "none"} : tensor<4xf32> -> tensor<4xf32>
  return %0 : tensor<4xf32>
}
}

// -----

// Two GPU ops that start apart merge through the op that reads both: the
// partitions are maximal, not just grown from one producer.
// CHECK-LABEL: func.func private @gpu_ep_p0
// CHECK-COUNT-3: "onnx.MatMul"
// CHECK-NOT: func.func private @gpu_ep_p1
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
func.func @main_graph(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "onnx.MatMul"(%x, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "onnx.MatMul"(%x, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "onnx.MatMul"(%0, %1) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}
}

// -----

// Negative: a GPU -> CPU -> GPU path forbids merging the GPU partitions even
// though a direct edge joins them too.
// CHECK-LABEL: func.func private @gpu_ep_p0
// CHECK: "onnx.MatMul"
// CHECK-NOT: "onnx.MatMul"
// CHECK-LABEL: func.func private @cpu_ep_p0
// CHECK: "onnx.Relu"
// CHECK-LABEL: func.func private @gpu_ep_p1
// CHECK: "onnx.Add"
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
func.func @main_graph(%x: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = "onnx.MatMul"(%x, %x) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  %1 = "onnx.Relu"(%0) : (tensor<4x4xf32>) -> tensor<4x4xf32>
  %2 = "onnx.Add"(%0, %1) : (tensor<4x4xf32>, tensor<4x4xf32>) -> tensor<4x4xf32>
  return %2 : tensor<4x4xf32>
}
}
