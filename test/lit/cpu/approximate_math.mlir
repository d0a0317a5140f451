// RUN: ortc-opt %s -cpu-approximate-math | FileCheck %s

// The libm functions that f64_libm (below) calls are declared first.
// CHECK-DAG: func.func private @erf(f64) -> f64
// CHECK-DAG: func.func private @expm1(f64) -> f64
// CHECK-DAG: func.func private @log1p(f64) -> f64

// f32 exp/expm1/log/log1p/tanh/erf/erfc become polynomials (no math op, no
// call left); fma becomes a contractible mul + add.
// CHECK-LABEL: func.func @f32_polynomials
// CHECK-NOT: math.exp
// CHECK-NOT: math.tanh
// CHECK-NOT: math.erf
// CHECK-NOT: math.log
// CHECK-NOT: math.fma
// CHECK-NOT: call
// CHECK: arith.mulf %{{.*}} fastmath<contract> : vector<16xf32>
// CHECK: return
func.func @f32_polynomials(%x: vector<16xf32>, %s: f32) -> (vector<16xf32>, vector<16xf32>, vector<16xf32>, f32, f32, f32, f32) {
  %0 = math.exp %x : vector<16xf32>
  %1 = math.tanh %x : vector<16xf32>
  %2 = math.erf %x : vector<16xf32>
  %3 = math.log %s : f32
  %4 = math.log1p %s : f32
  %5 = math.expm1 %s : f32
  %6 = math.erfc %s : f32
  return %0, %1, %2, %3, %4, %5, %6 : vector<16xf32>, vector<16xf32>, vector<16xf32>, f32, f32, f32, f32
}

// f64 expm1/log1p/erf/erfc call libm (vectors one lane at a time); the rest
// is left for math-to-llvm (intrinsics).
// CHECK-LABEL: func.func @f64_libm
// CHECK-SAME: (%[[V:.*]]: vector<2xf64>, %[[S:.*]]: f64)
// CHECK: %[[E0:.*]] = vector.extract %[[V]][0] : f64 from vector<2xf64>
// CHECK: call @erf(%[[E0]]) : (f64) -> f64
// CHECK: %[[E1:.*]] = vector.extract %[[V]][1] : f64 from vector<2xf64>
// CHECK: call @erf(%[[E1]]) : (f64) -> f64
// CHECK: call @expm1(%[[S]]) : (f64) -> f64
// CHECK: call @log1p(%[[S]]) : (f64) -> f64
// CHECK: math.sin %[[S]] : f64
// CHECK: math.exp %[[S]] : f64
func.func @f64_libm(%v: vector<2xf64>, %s: f64) -> (vector<2xf64>, f64, f64, f64, f64) {
  %0 = math.erf %v : vector<2xf64>
  %1 = math.expm1 %s : f64
  %2 = math.log1p %s : f64
  %3 = math.sin %s : f64
  %4 = math.exp %s : f64
  return %0, %1, %2, %3, %4 : vector<2xf64>, f64, f64, f64, f64
}
