// RUN: ortc-opt %s -split-input-file -cpu-kernel-pipeline | FileCheck %s
// RUN: ortc-opt %s -split-input-file -cpu-kernel-pipeline | FileCheck %s --check-prefix=NONE

// The whole pipeline, to the LLVM dialect: nothing of the input dialects is
// left (NONE), each kernel is an exported `void name(void **args)` around an
// internal body with the expanded descriptors.
// NONE-NOT: onnx.
// NONE-NOT: ortc.gelu
// NONE-NOT: linalg.
// NONE-NOT: tensor.
// NONE-NOT: bufferization.
// NONE-NOT: memref.
// NONE-NOT: vector.
// NONE-NOT: scf.
// NONE-NOT: arith.
// NONE-NOT: math.
// NONE-NOT: func.func
// NONE-NOT: unrealized_conversion_cast

// CHECK-LABEL: llvm.func internal @__ortc_kernel_impl_chain(
// CHECK-SAME: %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: !llvm.ptr, %{{[^:]*}}: i64, %[[N:[^:]*]]: i64,
// CHECK: llvm.icmp "slt" %{{.*}}, %[[N]] : i64
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<16xf32>
// CHECK: llvm.fadd %{{.*}} : vector<16xf32>
// CHECK: llvm.store %{{.*}} : vector<16xf32>, !llvm.ptr
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> vector<5xf32>
// CHECK: llvm.store %{{.*}} : vector<5xf32>, !llvm.ptr
// CHECK-LABEL: llvm.func @chain(
// CHECK-SAME: %[[ARGS:.*]]: !llvm.ptr) attributes {ortc.kernel_entry} {
// CHECK: %[[D0P:.*]] = llvm.load %[[ARGS]] : !llvm.ptr -> !llvm.ptr
// CHECK: llvm.load %[[D0P]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: llvm.getelementptr %[[ARGS]][1] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<1 x i64>, array<1 x i64>)>
// CHECK: llvm.getelementptr %[[ARGS]][2] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: llvm.call @__ortc_kernel_impl_chain(
// CHECK-NEXT: llvm.return
func.func @chain(%x: memref<?x37xf32>, %b: memref<37xf32>, %out: memref<?x37xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<?x37xf32> to tensor<?x37xf32>
  %tb = bufferization.to_tensor %b restrict : memref<37xf32> to tensor<37xf32>
  %s = "onnx.Add"(%tx, %tb) : (tensor<?x37xf32>, tensor<37xf32>) -> tensor<?x37xf32>
  %r = "onnx.Relu"(%s) : (tensor<?x37xf32>) -> tensor<?x37xf32>
  %g = ortc.gelu %r {approximate = "tanh"} : tensor<?x37xf32> -> tensor<?x37xf32>
  bufferization.materialize_in_destination %g in restrict writable %out
      : (tensor<?x37xf32>, memref<?x37xf32>) -> ()
  return
}

// -----

// An intermediate two outputs read is computed once into a temporary, which
// is freed; a non-splat constant is an internal global; f64 erf calls libm.
// CHECK-DAG: llvm.mlir.global private constant @{{.*}}(dense<[1.000000e+00, 2.000000e+00, 3.000000e+00, 4.000000e+00]> : tensor<4xf32>)
// CHECK-DAG: llvm.func @malloc(i64) -> !llvm.ptr
// CHECK-DAG: llvm.func @free(!llvm.ptr)
// CHECK-DAG: llvm.func @erf(f64) -> f64
// CHECK-LABEL: llvm.func internal @__ortc_kernel_impl_temp(
// CHECK: %[[BUF:.*]] = llvm.call @malloc(
// CHECK: llvm.call @free(%[[BUF]])
// CHECK-LABEL: llvm.func @temp(
// CHECK-LABEL: llvm.func internal @__ortc_kernel_impl_table(
// CHECK: llvm.mlir.addressof
// CHECK-LABEL: llvm.func @table(
// CHECK-LABEL: llvm.func internal @__ortc_kernel_impl_erf64(
// CHECK: llvm.call @erf(
// CHECK-LABEL: llvm.func @erf64(
func.func @temp(%x: memref<?x8xf32>, %o1: memref<?x8xf32>, %o2: memref<?x8xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<?x8xf32> to tensor<?x8xf32>
  %e = "onnx.Exp"(%tx) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %a = "onnx.Neg"(%e) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  %b = "onnx.Sqrt"(%e) : (tensor<?x8xf32>) -> tensor<?x8xf32>
  bufferization.materialize_in_destination %a in restrict writable %o1 : (tensor<?x8xf32>, memref<?x8xf32>) -> ()
  bufferization.materialize_in_destination %b in restrict writable %o2 : (tensor<?x8xf32>, memref<?x8xf32>) -> ()
  return
}
func.func @table(%x: memref<3x4xf32>, %o: memref<3x4xf32>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<3x4xf32> to tensor<3x4xf32>
  %c = "onnx.Constant"() {value = dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %a = "onnx.Mul"(%tx, %c) : (tensor<3x4xf32>, tensor<4xf32>) -> tensor<3x4xf32>
  bufferization.materialize_in_destination %a in restrict writable %o : (tensor<3x4xf32>, memref<3x4xf32>) -> ()
  return
}
func.func @erf64(%x: memref<?x3xf64>, %o: memref<?x3xf64>) attributes {ortc.kernel} {
  %tx = bufferization.to_tensor %x restrict : memref<?x3xf64> to tensor<?x3xf64>
  %a = "onnx.Erf"(%tx) : (tensor<?x3xf64>) -> tensor<?x3xf64>
  bufferization.materialize_in_destination %a in restrict writable %o : (tensor<?x3xf64>, memref<?x3xf64>) -> ()
  return
}

// -----

// Bool and unsigned buffers, scalar loops: i1 loads and stores stay bytes.
// CHECK-LABEL: llvm.func internal @__ortc_kernel_impl_masks(
// CHECK: llvm.load %{{.*}} : !llvm.ptr -> i8
// CHECK: llvm.uitofp %{{.*}} : i8 to f32
// CHECK: llvm.store %{{.*}} : i1, !llvm.ptr
// CHECK-LABEL: llvm.func @masks(
func.func @masks(%u: memref<?x4xui8>, %f: memref<?x4xf32>, %m: memref<?x4xi1>) attributes {ortc.kernel} {
  %tu = bufferization.to_tensor %u restrict : memref<?x4xui8> to tensor<?x4xui8>
  %c = "onnx.Cast"(%tu) {to = 1 : i64} : (tensor<?x4xui8>) -> tensor<?x4xf32>
  %h = "onnx.Constant"() {value = dense<100.0> : tensor<f32>} : () -> tensor<f32>
  %g = "onnx.Greater"(%c, %h) : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x4xi1>
  bufferization.materialize_in_destination %c in restrict writable %f : (tensor<?x4xf32>, memref<?x4xf32>) -> ()
  bufferization.materialize_in_destination %g in restrict writable %m : (tensor<?x4xi1>, memref<?x4xi1>) -> ()
  return
}
