// RUN: ortc-opt %s -split-input-file -verify-diagnostics -cuda-emit-kernel-source -o /dev/null

// Not lowered yet: an onnx op left in a kernel is an error naming it.
func.func private @raw(%x: tensor<4xf32>) -> tensor<4xf32> attributes {ortc.cuda.kernel} {
  // expected-error @+1 {{cuda kernel emitter: in kernel 'raw': 'onnx.Exp' outside a linalg.generic}}
  %0 = "onnx.Exp"(%x) : (tensor<4xf32>) -> tensor<4xf32>
  return %0 : tensor<4xf32>
}

// -----

// A reduction is not an elementwise kernel.
#id = affine_map<(d0) -> (d0)>
#none = affine_map<(d0) -> ()>
func.func private @reduce(%x: tensor<4xf32>, %init: tensor<f32>) -> tensor<f32> attributes {ortc.cuda.kernel} {
  // expected-error @+1 {{a linalg.generic with a reduction iterator}}
  %0 = linalg.generic {indexing_maps = [#id, #none], iterator_types = ["reduction"]} ins(%x : tensor<4xf32>) outs(%init : tensor<f32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %a, %acc : f32
    linalg.yield %s : f32
  } -> tensor<f32>
  return %0 : tensor<f32>
}
