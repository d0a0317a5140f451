//===- Passes.td - lowering the onnx dialect for generated kernels -*- tablegen -*-===//
//
// Passes shared by the EPs that generate kernels (the CPU EP through LLVM,
// the CUDA EP through CUDA C++): the scalar meaning of each elementwise op
// is written once, here, as linalg.generic bodies. Lit tests in
// test/lit/lowering/.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_LOWERING_PASSES
#define ORTC_COMPILER_LOWERING_PASSES

include "mlir/Pass/PassBase.td"

def OnnxLowerToLinalg : Pass<"onnx-lower-to-linalg", "mlir::func::FuncOp"> {
  let summary = "Lower onnx/ortc elementwise ops to linalg.generic on tensors";
  let description = [{
    Each elementwise op that `isLowerableElementwiseOp`
    (compiler/Lowering/LowerToLinalg.h) accepts becomes one
    `linalg.generic` over its result's shape, all loops parallel, with numpy
    broadcasting expressed in the indexing maps: an input is aligned to the
    right, its missing leading dims are dropped from its map and its
    size-1 dims that broadcast read index 0. The output is a `tensor.empty`
    whose `?` dims come from `tensor.dim` of an input with `?` at that
    position. Bodies are scalar arith/math. Small `onnx.Constant`s become
    `arith.constant`; `Identity` forwards its input.

    An op the predicate refuses is left alone. With `fail-on-unlowered`
    (which the EPs' kernel pipelines set), every op of the onnx or ortc dialect
    that is left is an error naming the op, the node and why, and the pass
    fails.
  }];
  let options = [
    Option<"failOnUnlowered", "fail-on-unlowered", "bool", /*default=*/"false",
           "Fail with an error naming each onnx/ortc op that stays">,
  ];
  let dependentDialects = [
    "mlir::arith::ArithDialect", "mlir::linalg::LinalgDialect",
    "mlir::math::MathDialect", "mlir::tensor::TensorDialect"
  ];
  let statistics = [
    Statistic<"numLowered", "num-lowered", "Number of ops lowered">
  ];
}

#endif // ORTC_COMPILER_LOWERING_PASSES
