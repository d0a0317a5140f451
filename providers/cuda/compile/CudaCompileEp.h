//===- CudaCompileEp.h - the compile half of the CUDA EP --------*- C++ -*-===//
//
// The CUDA EP claims elementwise ops and views (CudaClaims.h) and compiles a
// partition into:
//  - fused kernels: the elementwise groups of KernelGroups.h, lowered by
//    onnx-lower-to-linalg and translated into CUDA C++ (KernelEmitter.h),
//    all in one translation unit compiled by NVRTC into a cubin for each
//    requested architecture plus PTX for the oldest one;
//  - cuBLAS GEMMs for MatMul and Gemm, their descriptors fixed here and
//    their sizes taken from the dims at run time;
//  - views sharing their input's device bytes, copies for outputs that are
//    an input, a weight or a view;
//  - a launch plan whose grids follow the dims at run time;
// in one blob (blob/CudaBlob.h).
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_COMPILE_CUDACOMPILEEP_H
#define ORTC_PROVIDERS_CUDA_COMPILE_CUDACOMPILEEP_H

#include "compiler/EP/CompileEpRegistry.h"
#include "providers/cuda/compile/Nvrtc.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ortc::cuda {

/// How MatMul and Gemm on f32 compute (cuBLAS's compute types): fp32 exact,
/// or the inputs rounded to tf32, fp16 or bf16 for the tensor cores. f16 and
/// bf16 matrices always accumulate in f32.
enum class GemmPrecision { Fp32, Tf32, Fp16, Bf16 };

struct CudaCompileOptions {
  std::vector<CudaArch> archs = {CudaArch{9, 0}}; // cubins for each; PTX for the first
  GemmPrecision precision = GemmPrecision::Fp32;
};

/// Reads `precision=fp32|tf32|fp16|bf16`.
std::optional<GemmPrecision> parseGemmPrecision(const std::string &text);

/// Reads `arch=sm_80,sm_90`; false with a one-line `error`.
bool parseArchList(const std::string &text, std::vector<CudaArch> &out, std::string &error);

std::unique_ptr<CompileEp> createCudaCompileEp(const CudaCompileOptions &options);

/// The CUDA EP as the compiler's registry holds it (name cuda_ep, alias
/// cuda, option arch=LIST); providers/CompileEps.cpp lists it when
/// ORTC_ENABLE_CUDA is on.
CompileEpPlugin cudaCompileEpPlugin();

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_COMPILE_CUDACOMPILEEP_H
