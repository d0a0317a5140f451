//===- CudaCompileEp.h - the compile half of the CUDA EP --------*- C++ -*-===//
//
// The CUDA EP claims elementwise ops and views (CudaClaims.h) and compiles a
// partition into:
//  - fused kernels: the elementwise groups of KernelGroups.h, lowered by
//    onnx-lower-to-linalg and translated into CUDA C++ (KernelEmitter.h),
//    all in one translation unit compiled by NVRTC into a cubin for each
//    requested architecture plus PTX for the oldest one;
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
#include <string>
#include <vector>

namespace ortc::cuda {

struct CudaCompileOptions {
  std::vector<CudaArch> archs = {CudaArch{9, 0}}; // cubins for each; PTX for the first
};

/// Reads `arch=sm_80,sm_90`; false with a one-line `error`.
bool parseArchList(const std::string &text, std::vector<CudaArch> &out, std::string &error);

std::unique_ptr<CompileEp> createCudaCompileEp(const CudaCompileOptions &options);

/// The CUDA EP as the compiler's registry holds it (name cuda_ep, alias
/// cuda, option arch=LIST); providers/CompileEps.cpp lists it when
/// ORTC_ENABLE_CUDA is on.
CompileEpPlugin cudaCompileEpPlugin();

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_COMPILE_CUDACOMPILEEP_H
