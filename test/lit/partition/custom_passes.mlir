// An EP's custom passes run on its partitions after partitioning, and only on
// its own: the Identity goes where cpu_ep canonicalizes, and stays with
// gpu_ep, which has no custom passes.
// RUN: ortc-opt %s -ortc-partition-spec="eps=cpu_ep@cpu:*=1:+onnx-canonicalize" | FileCheck %s --check-prefix=CPU
// RUN: ortc-opt %s -ortc-partition-spec="eps=gpu_ep@cuda:*=1,cpu_ep@cpu:Abs=1:+onnx-canonicalize" | FileCheck %s --check-prefix=GPU

// CPU-LABEL: func.func private @cpu_ep_p0
// CPU-NOT: "onnx.Identity"
// CPU: "onnx.Neg"
// GPU-LABEL: func.func private @gpu_ep_p0
// GPU: "onnx.Identity"
// GPU: "onnx.Neg"
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
func.func @main_graph(%x: tensor<4xf32>) -> tensor<4xf32> {
  %0 = "onnx.Identity"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  %1 = "onnx.Neg"(%0) : (tensor<4xf32>) -> tensor<4xf32>
  return %1 : tensor<4xf32>
}
}
