// RUN: ortc-opt %s -split-input-file -verify-diagnostics -cpu-emit-kernel-entries

// expected-error @+1 {{cpu kernel 'strided': argument 0 has type 'memref<4xf32, strided<[2]>>'; the packed entry takes memrefs with identity layouts}}
func.func @strided(%x: memref<4xf32, strided<[2]>>) attributes {ortc.kernel} {
  return
}

// -----

// expected-error @+1 {{cpu kernel 'result' must have a body and no results}}
func.func @result(%x: memref<4xf32>) -> f32 attributes {ortc.kernel} {
  %c = arith.constant 0.0 : f32
  return %c : f32
}
