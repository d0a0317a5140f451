// RUN: not ortc-opt %s -split-input-file -onnx-check-tensor-sizes 2>&1 | FileCheck %s --implicit-check-not=error:

// The default limit is 16 GiB: a 1 GiB tensor passes, a 4 TiB one (2^40
// elements) does not. (The error, on stderr, comes before the module.)
// CHECK: error: graph input 'x' (tensor<1048576x1048576xf32>) needs 4398046511104 bytes, over the limit of 17179869184 for one tensor (--max-tensor-bytes raises it)
// CHECK-LABEL: func.func @gigabyte
func.func @gigabyte(%x: tensor<16384x16384xf32>) -> tensor<16384x16384xf32> {
  return %x : tensor<16384x16384xf32>
}

// -----

func.func @four_tebibytes(%x: tensor<1048576x1048576xf32> {onnx.name = "x"}) -> tensor<1048576x1048576xf32> {
  return %x : tensor<1048576x1048576xf32>
}
