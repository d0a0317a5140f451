// RUN: not ortc-opt %s -cpu-kernel-pipeline 2>&1 | FileCheck %s

// An op the CPU kernels cannot lower stops the pipeline with an error that
// names it; nothing else is reported.
// CHECK: error: {{.*}}kernel lowering: cannot lower 'onnx.Hardmax' (node 'head/hardmax'): not an elementwise op the kernel lowering takes
// CHECK-NOT: error
func.func @k(%x: memref<?x8xf32>, %out: memref<?x8xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<?x8xf32> to tensor<?x8xf32>
  %r = "onnx.Relu"(%tx) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %s = "onnx.Hardmax"(%r) {axis = -1 : i64} : (tensor<?x8xf32>) -> tensor<?x8xf32> loc("head/hardmax")
  bufferization.materialize_in_destination %s in restrict writable %out
      : (tensor<?x8xf32>, memref<?x8xf32>) -> ()
  return
}
