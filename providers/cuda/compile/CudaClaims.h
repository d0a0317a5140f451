//===- CudaClaims.h - what the CUDA EP runs --------------------*- C++ -*-===//
//
// Exactly what the partition compiler can compile, so that it never finds an
// ordinary limit after claiming:
//  - elementwise ops: what onnx-lower-to-linalg lowers (every element type it
//    takes; f16/bf16 compute in f32), fused into generated kernels, with every
//    dim of the op's operands and result an expression of the inputs' dims;
//  - views: Reshape (its target a constant or computed: the runtime reads a
//    computed target's values back to bind the dims), Flatten, Squeeze and
//    Unsqueeze with constant axes, whose result dims are known; they share
//    their input's device bytes;
//  - MatMul and Gemm of f32, f16 or bf16 through cuBLAS: MatMul's batch dims
//    equal on both sides or all 1s on one (a strided-batched GEMM), Gemm's
//    C becomes an elementwise add after it (cuda-split-gemm-bias).
// Everything else is declined with the reason, for the next EP
// (`--ep=cuda,cpu`). What the EP claims regardless of cost leaves out shape
// arithmetic (CudaCompileEp.cpp's claimNodes).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_COMPILE_CUDACLAIMS_H
#define ORTC_PROVIDERS_CUDA_COMPILE_CUDACLAIMS_H

#include "compiler/EP/CompileEp.h"

#include <string>

namespace ortc::cuda {

/// Whether `op` is a view the CUDA EP claims (see above), given it passed
/// the claim.
bool isCudaViewOp(mlir::Operation *op);

/// Whether `op` is a MatMul or Gemm (a cuBLAS call), given it passed the claim.
bool isCudaGemmOp(mlir::Operation *op);

/// Whether `op` is an ortc.attention (expanded by cuda-expand-attention).
bool isCudaAttentionOp(mlir::Operation *op);

/// The CUDA EP's answer for one node.
KernelMatch matchCudaOp(const NodeQuery &query, const std::string &epName);

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_COMPILE_CUDACLAIMS_H
