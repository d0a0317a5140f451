// RUN: ortc-opt %s -split-input-file -cuda-outline-kernels -onnx-lower-to-linalg -cuda-emit-kernel-source | FileCheck %s

// A broadcast add and a relu in one kernel: the batch comes from the output's
// dims (slot 3 of a0: [?,512], a1: [512], r0: [?,512]), the bias reads the
// innermost index, the input the element itself; the relu runs in registers.
// CHECK-LABEL: func.func private @bias_relu_k0
// CHECK-SAME: ortc.cuda.source = "struct bias_relu_k0_dims { long long v[5]; };
// CHECK-SAME: extern \22C\22 __global__ void __launch_bounds__(256) bias_relu_k0(const float *__restrict__ a0, const float *__restrict__ a1, float *__restrict__ r0, bias_relu_k0_dims d)
// CHECK-SAME: const long long n = d.v[3] * 512LL;
// CHECK-SAME: const long long i1 = rest % 512LL;
// CHECK-SAME: const float [[X:v[0-9]+]] = a0[i];
// CHECK-SAME: const float [[B:v[0-9]+]] = a1[i1];
// CHECK-SAME: const float [[S:v[0-9]+]] = ([[X]] + [[B]]);
// CHECK-SAME: ? [[S]] : 0.0f)
// CHECK-SAME: r0[i] =
// CHECK-SAME: ORTC_EMU_ENTRY(bias_relu_k0)
func.func @bias_relu(%x: tensor<?x512xf32>, %b: tensor<512xf32>) -> tensor<?x512xf32> {
  %0 = "onnx.Add"(%x, %b) : (tensor<?x512xf32>, tensor<512xf32>) -> tensor<?x512xf32>
  %1 = "onnx.Relu"(%0) : (tensor<?x512xf32>) -> tensor<?x512xf32>
  return %1 : tensor<?x512xf32>
}

// -----

// f16 is stored as its bits and computed in f32; a size-1 dim that
// broadcasts reads index 0 of its row.
// CHECK-LABEL: func.func private @half_k0
// CHECK-SAME: const unsigned short *__restrict__ a0, const unsigned short *__restrict__ a1, unsigned short *__restrict__ r0
// CHECK-SAME: = a1[(0LL) * 8LL + i1];
// CHECK-SAME: __int_as_float(
func.func @half(%x: tensor<4x8xf16>, %y: tensor<1x8xf16>) -> tensor<4x8xf16> {
  %0 = "onnx.Mul"(%x, %y) : (tensor<4x8xf16>, tensor<1x8xf16>) -> tensor<4x8xf16>
  return %0 : tensor<4x8xf16>
}

// -----

// Integers wrap through unsigned arithmetic; a comparison yields bool (of
// another element type: a kernel of its own).
// CHECK-LABEL: func.func private @ints_k0
// CHECK-SAME: const long long n = 16LL;
// CHECK-SAME: (int)((unsigned int)
// CHECK-LABEL: func.func private @ints_k1
// CHECK-SAME: bool *__restrict__ r0
func.func @ints(%x: tensor<16xi32>, %y: tensor<16xi32>) -> tensor<16xi1> {
  %0 = "onnx.Add"(%x, %y) : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi32>
  %1 = "onnx.Greater"(%0, %y) : (tensor<16xi32>, tensor<16xi32>) -> tensor<16xi1>
  return %1 : tensor<16xi1>
}
