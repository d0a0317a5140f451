//===- Passes.td - the CUDA EP's passes --------------------*- tablegen -*-===//
//
// The passes that take a CUDA partition to CUDA C++: fused kernels are
// outlined from the partition (cuda-outline-kernels), lowered by the generic
// onnx-lower-to-linalg, and translated (cuda-emit-kernel-source).
// CudaCompileEp.cpp runs the same steps; lit tests in test/lit/cuda/.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_COMPILE_PASSES
#define ORTC_PROVIDERS_CUDA_COMPILE_PASSES

include "mlir/Pass/PassBase.td"

def CudaFoldGemmEpilogue : Pass<"cuda-fold-gemm-epilogue", "mlir::func::FuncOp"> {
  let summary = "A matrix product with a bias (and ReLU or tanh GELU) becomes ortc.matmul_bias";
  let description = [{
    cuBLASLt adds a bias vector and applies ReLU or the tanh GELU in the
    GEMM's epilogue. `Add(MatMul(a, b), bias)` with b a matrix and bias
    [N] of the result's type (N its static last dim), and `Gemm(a, b, c)`
    with trans_a 0, beta 1 and c such a bias, become
    `ortc.matmul_bias(a, b, bias) {trans_b, alpha, activation = "none"}`;
    when the sum's one reader is a Relu or an `ortc.gelu` with approximate
    "tanh", it joins as the activation. f32, f16 and bf16 only; the erf
    GELU stays an elementwise kernel (cuBLASLt's GELU is the tanh form).
    Runs before cuda-split-gemm-bias, which leaves ortc.matmul_bias alone.
  }];
  let dependentDialects = ["ortc::fused::OrtcDialect"];
  let statistics = [
    Statistic<"numFolded", "num-folded", "Number of products given an epilogue">
  ];
}

def CudaSplitGemmBias : Pass<"cuda-split-gemm-bias", "mlir::func::FuncOp"> {
  let summary = "Gemm and Conv with a bias become the op without it and an elementwise add";
  let description = [{
    cuBLAS computes alpha * op(A) op(B); the bias joins the elementwise ops
    around it instead: `Gemm(A, B, C)` becomes `Gemm(A, B)` (same alpha and
    transposes), `Mul(C, beta)` when beta is not 1, and `Add`, which
    cuda-outline-kernels then fuses with what follows (a Relu, a GELU).
    Gemm without C, or with beta 0, loses only its C. Likewise a 2-D
    `Conv(X, W, B)` becomes `Add(Conv(X, W), Unsqueeze(B, [1, 2]))`: the
    bias broadcasts over the output's spatial dims.
  }];
  let statistics = [
    Statistic<"numSplit", "num-split", "Number of Gemm and Conv ops split">
  ];
}

def CudaSplitToSlices : Pass<"cuda-split-to-slices", "mlir::func::FuncOp"> {
  let summary = "A Split with pieces known at compile time becomes one Slice per output";
  let description = [{
    `Split(x, split) {axis}` over a static axis dim, with constant sizes
    (or none: num_outputs, else the output count, divides the dim as ONNX
    says) becomes, for each output that is read, `Slice(x, [start], [end],
    [axis])` of the output's type: each a data-movement kernel reading its
    piece (DataMovementKernels.h's splitPieces is the claim's rule too).
    A Split that does not qualify is left alone (the claim declines it).
  }];
  let dependentDialects = ["ortc::onnx_dialect::OnnxDialect"];
  let statistics = [
    Statistic<"numSplit", "num-split", "Number of Splits rewritten">
  ];
}

def CudaExpandAttention : Pass<"cuda-expand-attention", "mlir::func::FuncOp"> {
  let summary = "ortc.attention becomes two cuBLAS GEMMs around a fused softmax";
  let description = [{
    `ortc.attention(q, k, v, mask) {scale}` becomes
    `MatMul(Softmax(MatMul(q, Transpose(k)) * scale + mask), v)`: the
    products run as strided-batched cuBLAS GEMMs, the scale and the mask as
    one elementwise kernel, the softmax as a reduction kernel over the last
    axis. (A fused attention kernel is future work.) The CUDA EP claims the
    op only where both products are GEMMs it can batch.
  }];
  let dependentDialects = ["ortc::onnx_dialect::OnnxDialect"];
  let statistics = [
    Statistic<"numExpanded", "num-expanded", "Number of attention ops expanded">
  ];
}

def CudaOutlineKernels : Pass<"cuda-outline-kernels", "mlir::ModuleOp"> {
  let summary = "Group elementwise chains into fused kernels, one function each";
  let description = [{
    In every function without `ortc.cuda.kernel`, the top-level elementwise
    ops (those onnx-lower-to-linalg lowers) are grouped as KernelGroups.h
    says: an op joins the open group when its result has the group's type
    and symbolic dims and it reads a value the group makes or a
    non-constant value a member reads; a group closes before any other op
    reads one of its values. Each group becomes
    `func.func private @<fn>_k<N>` with `ortc.cuda.kernel`, taking the
    values it reads from outside (splat constants are cloned in; other
    constants stay arguments, read from memory as weights) and returning
    those used after it; the members are replaced by one `func.call` placed
    at the last member.
  }];
  let dependentDialects = ["mlir::func::FuncDialect"];
  let statistics = [
    Statistic<"numKernels", "num-kernels", "Number of kernels outlined">,
    Statistic<"numFused", "num-fused", "Number of ops placed in kernels">
  ];
}

def CudaEmitKernelSource : Pass<"cuda-emit-kernel-source", "mlir::ModuleOp"> {
  let summary = "Translate each lowered kernel function into CUDA C++";
  let description = [{
    Every `ortc.cuda.kernel` function, after onnx-lower-to-linalg, gets
    `ortc.cuda.source`: its `extern "C" __global__` CUDA C++
    (KernelEmitter.h: one thread per element of the iteration space, the
    generics' bodies evaluated in registers, inputs read through their
    indexing maps, sizes from a by-value struct of dims). A kernel with an
    op the emitter cannot translate is an error naming the op and the
    kernel, and the pass fails.
  }];
}

#endif // ORTC_PROVIDERS_CUDA_COMPILE_PASSES
