// RUN: ortc-opt %s -split-input-file -cpu-tile-and-vectorize -canonicalize -cse | FileCheck %s
// RUN: ortc-opt %s -split-input-file -cpu-tile-and-vectorize="vector-width=16 unroll=1" -canonicalize -cse | FileCheck %s --check-prefix=W16

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#in2 = affine_map<(d0, d1) -> (d1)>

// Static innermost dim, dynamic batch: rows one at a time, 16 f32 (two AVX2
// registers) per step, the bias broadcast along rows; no remainder.
// CHECK-LABEL: func.func @static_inner
// CHECK-DAG: %[[C16:.*]] = arith.constant 16 : index
// CHECK-DAG: %[[C512:.*]] = arith.constant 512 : index
// CHECK: %[[N:.*]] = memref.dim %arg0, %{{.*}} : memref<?x512xf32>
// CHECK: scf.for %[[I:.*]] = %{{.*}} to %[[N]] step %{{.*}} {
// CHECK: scf.for %[[J:.*]] = %{{.*}} to %[[C512]] step %[[C16]] {
// CHECK: %[[A:.*]] = vector.load %{{.*}} : memref<16xf32, {{.*}}>, vector<16xf32>
// CHECK: %[[B:.*]] = vector.load %{{.*}} : memref<16xf32, {{.*}}>, vector<16xf32>
// CHECK: %[[S:.*]] = arith.addf %[[A]], %[[B]] : vector<16xf32>
// CHECK: vector.store %[[S]], %{{.*}} : memref<16xf32, {{.*}}>, vector<16xf32>
// CHECK-NOT: linalg.generic
// CHECK-NOT: vector.transfer
// W16-LABEL: func.func @static_inner
// W16: vector.load {{.*}} vector<16xf32>
func.func @static_inner(%x: memref<?x512xf32>, %b: memref<512xf32>, %out: memref<?x512xf32>) {
  linalg.generic {indexing_maps = [#id2, #in2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %b : memref<?x512xf32>, memref<512xf32>) outs(%out : memref<?x512xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.addf %a, %c : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0, 0)>

// An odd innermost dim (37): whole tiles of 16 over [0, 32), then the
// remainder [32, 37) as one vector<5xf32>; the row scale is broadcast.
// CHECK-LABEL: func.func @odd_inner
// CHECK-DAG: %[[C32:.*]] = arith.constant 32 : index
// CHECK: scf.for
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[C32]] step %{{.*}} {
// CHECK: vector.load {{.*}} vector<16xf32>
// CHECK: vector.broadcast %{{.*}} : f32 to vector<16xf32>
// CHECK: arith.mulf {{.*}} : vector<16xf32>
// CHECK: memref.subview %arg0[0, 32] [%{{.*}}, 5]
// CHECK: scf.for
// CHECK: vector.load {{.*}} vector<5xf32>
// CHECK: arith.mulf {{.*}} : vector<5xf32>
// CHECK: vector.store {{.*}} vector<5xf32>
// W16-LABEL: func.func @odd_inner
// W16: vector<16xf32>
// W16: vector<5xf32>
func.func @odd_inner(%x: memref<?x37xf32>, %s: memref<?x1xf32>, %out: memref<?x37xf32>) {
  linalg.generic {indexing_maps = [#id2, #row, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : memref<?x37xf32>, memref<?x1xf32>) outs(%out : memref<?x37xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.mulf %a, %c : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>

// All-static, contiguous: the dims collapse into one of 60 = 3 x 16 + 12.
// CHECK-LABEL: func.func @collapse
// CHECK: %[[X:.*]] = memref.collapse_shape %arg0 {{\[}}[0, 1, 2]] : memref<4x3x5xf32> into memref<60xf32>
// CHECK: scf.for
// CHECK: arith.negf %{{.*}} : vector<16xf32>
// CHECK: arith.negf %{{.*}} : vector<12xf32>
// W16-LABEL: func.func @collapse
// W16: vector<16xf32>
// W16: vector<12xf32>
func.func @collapse(%x: memref<4x3x5xf32>, %out: memref<4x3x5xf32>) {
  linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : memref<4x3x5xf32>) outs(%out : memref<4x3x5xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#inner = affine_map<(d0, d1, d2) -> (d2)>

// Dims that a broadcast operand does not read contiguously stay apart: only
// the innermost is vectorized (a batch of 2x3 rows of 8).
// CHECK-LABEL: func.func @no_collapse_across_bcast
// CHECK-NOT: memref.collapse_shape
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.addf %{{.*}} : vector<8xf32>
func.func @no_collapse_across_bcast(%x: memref<2x3x8xf32>, %b: memref<8xf32>, %out: memref<2x3x8xf32>) {
  linalg.generic {indexing_maps = [#id3, #inner, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %b : memref<2x3x8xf32>, memref<8xf32>) outs(%out : memref<2x3x8xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.addf %a, %c : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
#scalar = affine_map<(d0, d1, d2) -> (0)>
#unit3 = affine_map<(d0, d1, d2) -> (0, 0, 0)>

// Size-1 operands broadcast through constant-0 results (f32[1] and
// f32[1,1,1] against [3,2,5]): nothing collapses, since the collapsed op
// would fold the operand's unit dims with the others' (this crashed, or read
// the wrong elements).
// CHECK-LABEL: func.func @no_collapse_with_unit_bcast
// CHECK-NOT: memref.collapse_shape
// CHECK: scf.for
// CHECK: scf.for
// CHECK: arith.divf %{{.*}} : vector<5xf32>
// CHECK: arith.addf %{{.*}} : vector<5xf32>
func.func @no_collapse_with_unit_bcast(%x: memref<3x2x5xf32>, %q: memref<1x1x1xf32>, %y: memref<1xf32>, %out: memref<3x2x5xf32>, %out2: memref<3x2x5xf32>) {
  linalg.generic {indexing_maps = [#id3, #unit3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %q : memref<3x2x5xf32>, memref<1x1x1xf32>) outs(%out : memref<3x2x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.divf %a, %c : f32
    linalg.yield %r : f32
  }
  linalg.generic {indexing_maps = [#id3, #scalar, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x, %y : memref<3x2x5xf32>, memref<1xf32>) outs(%out2 : memref<3x2x5xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %r = arith.addf %a, %c : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id1 = affine_map<(d0) -> (d0)>

// A dynamic innermost dim: whole tiles of 16 up to n floordiv 16 * 16 as
// full vectors (no masks: every tile is whole), the remainder as a scalar loop.
// CHECK-DAG: #[[MAIN:.*]] = affine_map<()[s0, s1] -> ((s0 floordiv 16) * 16, s1)>
// CHECK-LABEL: func.func @dynamic_inner
// CHECK: %[[N:.*]] = memref.dim %arg0
// CHECK: %[[M:.*]] = affine.min #[[MAIN]]()
// CHECK: scf.for %{{.*}} = %{{.*}} to %[[M]] step %{{.*}} {
// CHECK: %[[V:.*]] = vector.load {{.*}} vector<16xf32>
// CHECK: %[[R:.*]] = arith.negf %[[V]] : vector<16xf32>
// CHECK: vector.store %[[R]]
// CHECK: scf.for %{{.*}} = %{{.*}} to %{{.*}} step %{{.*}} {
// CHECK: %[[S:.*]] = memref.load
// CHECK: arith.negf %[[S]] : f32
// CHECK-NOT: vector.
func.func @dynamic_inner(%x: memref<?xf32>, %out: memref<?xf32>) {
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%x : memref<?xf32>) outs(%out : memref<?xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.negf %a : f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>

// Negative: i1 buffers hold a byte per element but vector<Nxi1> is bits,
// so a generic that touches one becomes scalar loops.
// CHECK-LABEL: func.func @bool_buffers
// CHECK: scf.for
// CHECK: scf.for
// CHECK: memref.load %{{.*}} : memref<?x8xi1>
// CHECK: arith.xori %{{.*}} : i1
// CHECK-NOT: vector.
func.func @bool_buffers(%x: memref<?x8xi1>, %out: memref<?x8xi1>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x8xi1>) outs(%out : memref<?x8xi1>) {
  ^bb0(%a: i1, %o: i1):
    %t = arith.constant true
    %r = arith.xori %a, %t : i1
    linalg.yield %r : i1
  }
  return
}

// -----

#id1 = affine_map<(d0) -> (d0)>

// Negative: unsigned buffers (through unrealized casts) become loops too.
// CHECK-LABEL: func.func @unsigned
// CHECK: scf.for
// CHECK: builtin.unrealized_conversion_cast
// CHECK-NOT: vector.
func.func @unsigned(%x: memref<64xui8>, %out: memref<64xf32>) {
  linalg.generic {indexing_maps = [#id1, #id1], iterator_types = ["parallel"]}
      ins(%x : memref<64xui8>) outs(%out : memref<64xf32>) {
  ^bb0(%a: ui8, %o: f32):
    %s = builtin.unrealized_conversion_cast %a : ui8 to i8
    %r = arith.uitofp %s : i8 to f32
    linalg.yield %r : f32
  }
  return
}

// -----

#id2 = affine_map<(d0, d1) -> (d0, d1)>

// The tile follows the widest element type: f64 gets half the f32 lanes
// (8 = 4 x 2), i8 alone four times as many (64).
// CHECK-LABEL: func.func @widths
// CHECK: arith.addf %{{.*}} : vector<8xf64>
// CHECK: arith.addf %{{.*}} : vector<4xf64>
// CHECK: arith.addi %{{.*}} : vector<64xi8>
// W16-LABEL: func.func @widths
// W16: vector<8xf64>
// W16: vector<4xf64>
// W16: vector<64xi8>
func.func @widths(%x: memref<?x20xf64>, %out: memref<?x20xf64>, %i: memref<?x64xi8>, %o: memref<?x64xi8>) {
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : memref<?x20xf64>) outs(%out : memref<?x20xf64>) {
  ^bb0(%a: f64, %z: f64):
    %r = arith.addf %a, %a : f64
    linalg.yield %r : f64
  }
  linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%i : memref<?x64xi8>) outs(%o : memref<?x64xi8>) {
  ^bb0(%a: i8, %z: i8):
    %r = arith.addi %a, %a : i8
    linalg.yield %r : i8
  }
  return
}
