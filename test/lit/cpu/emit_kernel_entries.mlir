// RUN: ortc-opt %s -cpu-emit-kernel-entries | FileCheck %s

// Each ortc.kernel becomes internal `__ortc_kernel_impl_<name>`, and
// `<name>(!llvm.ptr)` loads args[i] -> descriptor i and calls it. Other
// functions become internal; declarations stay external.
// CHECK-LABEL: func.func private @__ortc_kernel_impl_k(
// CHECK-SAME: %{{.*}}: memref<?x8xf32>, %{{.*}}: memref<f32>, %{{.*}}: memref<?x8xi1>)
// CHECK-SAME: attributes {llvm.linkage = #llvm.linkage<internal>, ortc.kernel}
// CHECK: call @helper
// CHECK-LABEL: func.func @k(
// CHECK-SAME: %[[ARGS:.*]]: !llvm.ptr) attributes {ortc.kernel_entry}
// CHECK: %[[P0:.*]] = llvm.getelementptr %[[ARGS]][0] : (!llvm.ptr) -> !llvm.ptr, !llvm.ptr
// CHECK: %[[D0P:.*]] = llvm.load %[[P0]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[D0:.*]] = llvm.load %[[D0P]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)>
// CHECK: %[[M0:.*]] = builtin.unrealized_conversion_cast %[[D0]] : !llvm.struct<(ptr, ptr, i64, array<2 x i64>, array<2 x i64>)> to memref<?x8xf32>
// CHECK: %[[P1:.*]] = llvm.getelementptr %[[ARGS]][1]
// CHECK: %[[D1P:.*]] = llvm.load %[[P1]] : !llvm.ptr -> !llvm.ptr
// CHECK: %[[D1:.*]] = llvm.load %[[D1P]] : !llvm.ptr -> !llvm.struct<(ptr, ptr, i64)>
// CHECK: %[[M1:.*]] = builtin.unrealized_conversion_cast %[[D1]] : !llvm.struct<(ptr, ptr, i64)> to memref<f32>
// CHECK: %[[P2:.*]] = llvm.getelementptr %[[ARGS]][2]
// CHECK: %[[M2:.*]] = builtin.unrealized_conversion_cast %{{.*}} to memref<?x8xi1>
// CHECK: call @__ortc_kernel_impl_k(%[[M0]], %[[M1]], %[[M2]])
// CHECK: return
// CHECK: func.func @helper() attributes {llvm.linkage = #llvm.linkage<internal>}
// CHECK: func.func private @external(f32) -> f32
// CHECK-NOT: llvm.linkage
func.func @k(%x: memref<?x8xf32>, %s: memref<f32>, %out: memref<?x8xi1>) attributes {ortc.kernel} {
  func.call @helper() : () -> ()
  return
}
func.func @helper() {
  return
}
func.func private @external(f32) -> f32
