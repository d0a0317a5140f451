//===- CudaBlob.h - the CUDA EP's EPContext blob ----------------*- C++ -*-===//
//
// The generic envelope (runtime/support/BlobContainer.h) with five sections:
//   "META"  the plan, a FlatBuffer (CudaPlan.fbs, identifier "OCUD")
//   "CUBN"  the cubins, one per architecture (Plan.cubins says where)
//   "PTX "  PTX for Plan.ptx_arch (may be empty)
//   "SRC "  the CUDA C++ the kernels were compiled from
//   "WGHT"  the weights, uploaded to the device at load
// openCudaBlob() verifies everything the plan runner relies on, so that it
// indexes buffers, kernels and sections unchecked. Plain C++: both halves.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_BLOB_CUDABLOB_H
#define ORTC_PROVIDERS_CUDA_BLOB_CUDABLOB_H

#include "providers/cuda/blob/CudaPlan_generated.h"
#include "runtime/ep/Status.h"

#include <cstddef>
#include <string>
#include <vector>

namespace ortc::cuda {

constexpr uint32_t kCudaPlanFormatVersion = 2;
/// The kernels' parameter convention (KernelEmitter.h).
constexpr uint32_t kCudaKernelAbi = 1;
constexpr const char *kCudaEpName = "cuda_ep";
constexpr const char *kCudaEpVersion = "0.1.0";
constexpr const char *kCudaContextSource = "ortc_cuda";
constexpr uint32_t kCudaBlobAlignment = 64;

struct CudaBlobParts {
  std::vector<char> cubins; // concatenated; Plan.cubins gives offsets
  std::string ptx, source;
  std::vector<char> weights;
};

/// Serializes `plan` with `parts` and verifies the result as openCudaBlob
/// would, so that a compiler bug fails at compile time.
Result<std::vector<char>> writeCudaBlob(const fb::PlanT &plan, const CudaBlobParts &parts);

struct CudaBlobView {
  const fb::Plan *plan = nullptr;
  const char *cubins = nullptr;
  size_t cubinsSize = 0;
  const char *ptx = nullptr;
  size_t ptxSize = 0;
  const char *source = nullptr;
  size_t sourceSize = 0;
  const char *weights = nullptr;
  size_t weightsSize = 0;
};

/// Verifies and opens `size` bytes at `data` (8-byte aligned). `what` names
/// the blob in errors. Unsupported for versions this build does not read,
/// InvalidArgument for a corrupt or inconsistent blob; one line each.
Result<CudaBlobView> openCudaBlob(const char *data, size_t size, const std::string &what);

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_BLOB_CUDABLOB_H
