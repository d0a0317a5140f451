//===- KernelEmitter.h - CUDA C++ for one fused elementwise kernel -*- C++ -*-===//
//
// Input: a kernel function after onnx-lower-to-linalg,
//
//   func.func @p0_k0(%x: tensor<?x512xf16>, %b: tensor<512xf16>) -> tensor<?x512xf16>
//       attributes {ortc.cuda.kernel} {
//     %e = tensor.empty(...)
//     %s = linalg.generic {...} ins(%x, %b ...) outs(%e ...)   // add, in f32
//     %r = linalg.generic {...} ins(%s ...) outs(...)          // relu
//     return %r
//   }
//
// whose all-parallel generics share one iteration space: the shape of the
// first result. Output: one `extern "C" __global__` function of that name,
//
//   void p0_k0(const unsigned short *__restrict__ a0, ...,  // inputs
//              unsigned short *__restrict__ r0, ...,        // results
//              p0_k0_dims d)                                // every dim
//
// in which each thread computes one element of the space: the generics' bodies run in order in registers (a value one generic
// yields feeds the next as a scalar), each input is read through its
// indexing map (numpy broadcasting), and each result is stored. `d.v` holds
// the dims of every parameter in order (inputs, then results; rank-0
// parameters hold none), filled by the runtime from the buffers' shapes;
// static dims are also compiled in as constants. Element types are stored
// as in memory: f16/bf16 as their 16 bits (the bodies widen them with
// integer code), bool as one byte. Under ORTC_HOST_EMULATION the source
// also defines `void NAME__emulate(void **args)`, which unpacks
// cuLaunchKernel-style arguments for the host test double.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_COMPILE_KERNELEMITTER_H
#define ORTC_PROVIDERS_CUDA_COMPILE_KERNELEMITTER_H

#include "mlir/Support/LLVM.h"

#include <optional>
#include <string>

namespace mlir {
class Type;
namespace func {
class FuncOp;
}
} // namespace mlir

namespace ortc::cuda {

/// Threads per block of every elementwise kernel the emitter writes (its
/// __launch_bounds__); the plan launches them so.
constexpr int kElementwiseThreadsPerBlock = 256;

/// The C type a kernel stores an element type as ("float", "unsigned
/// short" for f16 and bf16, "bool", "long long", ...), or nullopt.
std::optional<std::string> cudaElementType(mlir::Type type);

/// For the kernels that compute f32, f16 and bf16 in f32 (reductions,
/// windows): the storage type ("float", "unsigned short"), `ref` read as a
/// float, and a float `value` converted for storing (through the prelude's
/// ortc_f16_to_f32 and friends).
std::string floatStorageType(mlir::Type type);
std::string loadAsFloat(mlir::Type type, const std::string &ref);
std::string storeFromFloat(mlir::Type type, const std::string &value);

/// What every emitted translation unit starts with: the few definitions
/// NVRTC needs without headers (and the host emulation replaces).
std::string kernelPrelude();

/// The CUDA C++ of `kernel` (see above), or failure with an error on the
/// op it cannot emit.
mlir::FailureOr<std::string> emitElementwiseKernel(mlir::func::FuncOp kernel);

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_COMPILE_KERNELEMITTER_H
