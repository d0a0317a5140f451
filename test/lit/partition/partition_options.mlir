// Claims, allow-unclaimed, priority ties and the report.
// RUN: ortc-opt %s -split-input-file -ortc-partition-spec="eps=gpu_ep@cuda:*=1,cpu_ep@cpu:*=100000 claims=cpu_ep:Relu report=text" 2> %t.claims | FileCheck %s --check-prefix=CLAIM
// RUN: FileCheck %s --check-prefix=CLAIM-REPORT < %t.claims
// RUN: ortc-opt %s -split-input-file -ortc-partition-spec="eps=a_ep@cpu:Add=5:Neg=5,b_ep@cpu:Add=5:Relu=5 allow-unclaimed=1 report=json" 2> %t.json | FileCheck %s --check-prefix=UNCLAIMED
// RUN: FileCheck %s --check-prefix=JSON < %t.json

// claimNodes bypasses the cost model: the CPU takes Relu although the GPU is
// far cheaper.
// CLAIM-LABEL: func.func private @gpu_ep_p0
// CLAIM: "onnx.Add"
// CLAIM: "onnx.Sqrt"
// CLAIM-LABEL: func.func private @cpu_ep_p0
// CLAIM: "onnx.Relu"
// CLAIM-REPORT: placements (3 nodes):
// CLAIM-REPORT-NEXT: node op ep placed by partition
// CLAIM-REPORT-NEXT: add Add gpu_ep cost {{.*}} ns gpu_ep_p0
// CLAIM-REPORT-NEXT: sqrt Sqrt gpu_ep cost {{.*}} ns gpu_ep_p0
// CLAIM-REPORT-NEXT: relu Relu cpu_ep claimed cpu_ep_p0
// CLAIM-REPORT-NEXT: partitions (2):
// CLAIM-REPORT-NEXT: gpu_ep_p0 on gpu_ep: 2 ops, 1 inputs, 1 outputs
// CLAIM-REPORT-NEXT: cpu_ep_p0 on cpu_ep: 1 ops, 1 inputs, 1 outputs
// CLAIM-REPORT-NEXT: declines (0):

// Equal costs on one device: the EP earlier in the list wins (a_ep for Add).
// Nodes no EP supports stay in @main_graph with allow-unclaimed.
// UNCLAIMED-LABEL: func.func private @a_ep_p0
// UNCLAIMED: "onnx.Add"
// UNCLAIMED-LABEL: func.func private @b_ep_p0
// UNCLAIMED: "onnx.Relu"
// UNCLAIMED-LABEL: func.func @main_graph
// UNCLAIMED: %[[A:.*]] = call @a_ep_p0
// UNCLAIMED: %[[S:.*]] = "onnx.Sqrt"(%[[A]])
// UNCLAIMED: call @b_ep_p0(%[[S]])
// JSON: {"placements": [{"node": "add", "op": "Add", "ep": "a_ep", "how": "cost", "partition": "a_ep_p0", "score_ns": 5.0}, {"node": "sqrt", "op": "Sqrt", "ep": null, "how": "unclaimed", "partition": null, "score_ns": 0.0}, {"node": "relu", "op": "Relu", "ep": "b_ep", "how": "cost", "partition": "b_ep_p0", "score_ns": 5.0}], "partitions": [{"name": "a_ep_p0", "ep": "a_ep", "ops": 1, "inputs": 1, "outputs": 1}, {"name": "b_ep_p0", "ep": "b_ep", "ops": 1, "inputs": 1, "outputs": 1}], "declines": [
// JSON-SAME: {"node": "sqrt", "op": "Sqrt", "domain": "ai.onnx", "opset": 17, "ep": "a_ep", "kind": "op", "rejected": "op ai.onnx::Sqrt has no kernel", "accepts": "ai.onnx and ortc ops Add, Neg", "remediation": ""}
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
func.func @main_graph(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "onnx.Add"(%x, %x) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("add")
  %1 = "onnx.Sqrt"(%0) : (tensor<4xf32>) -> tensor<4xf32> loc("sqrt")
  %2 = "onnx.Relu"(%1) : (tensor<4xf32>) -> tensor<4xf32> loc("relu")
  return %2 : tensor<4xf32>
}
}
