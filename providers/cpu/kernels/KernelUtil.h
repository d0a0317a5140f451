//===- KernelUtil.h - what the library kernels share ------------*- C++ -*-===//
//
// Internal to the *Kernels.cpp files of this folder: the argument checks every
// kernel makes, with the one wording of each error message, and the small
// shape arithmetic they all need. The plan's interface stays KernelApi.h.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_KERNELUTIL_H
#define ORTC_PROVIDERS_CPU_KERNELS_KERNELUTIL_H

#include "providers/cpu/kernels/KernelApi.h"

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

namespace ortc::cpu::kernels {

//===----------------------------------------------------------------------===//
// Errors and checks
//===----------------------------------------------------------------------===//

/// InvalidArgument "<op>: <what>".
Status invalid(const char *op, const std::string &what);

/// Internal "<op>: cannot allocate <bytes> bytes of scratch".
Status outOfMemory(const char *op, size_t bytes);

/// `t` is present and float32; errors name it by `role` ("input X").
Status checkFloat(const char *op, const TensorView *t, const char *role);

/// checkFloat on each (tensor, role) in turn; the first failure is returned.
Status checkFloats(const char *op,
                   std::initializer_list<std::pair<const TensorView *, const char *>> tensors);

/// checkFloat for an optional input: an absent one passes.
Status checkOptionalFloat(const char *op, const TensorView *t, const char *role);

/// Y has shape `expect`, or "output shape <Y> should be <expect>".
Status checkOutputShape(const char *op, const TensorView &Y, const std::vector<int64_t> &expect);

/// Output i with shape `shape`: allocated now when the executor left its size
/// to the kernel (KernelCall::sizer), else the preallocated view, which
/// must have that shape.
Result<TensorView> sizedOutput(const char *op, const KernelCall &call, size_t i,
                               const std::vector<int64_t> &shape);

/// Input i, or nullptr if omitted. An empty tensor counts as present even when
/// its data pointer is null (KernelCall::input would call it omitted).
const TensorView *dataInput(const KernelCall &call, size_t i);

//===----------------------------------------------------------------------===//
// Axes
//===----------------------------------------------------------------------===//

/// Normalizes a possibly negative axis; false if out of range.
inline bool normalizeAxis(int64_t &axis, size_t rank) {
  if (axis < 0)
    axis += int64_t(rank);
  return axis >= 0 && axis < int64_t(rank);
}

/// The "axis" attribute (default `fallback`) normalized against `rank`, or
/// "axis <a> out of range for rank <r>" (always so for rank 0).
Status readAxis(const char *op, const StepAttributes &attrs, int64_t fallback, size_t rank,
                int64_t &axis);

/// One entry of an axes list: normalizes `axis` against seen.size() and marks
/// it in `seen`, or "axis <a> is out of range or repeated".
Status claimAxis(const char *op, int64_t &axis, std::vector<bool> &seen);

//===----------------------------------------------------------------------===//
// Shapes and strides (in elements)
//===----------------------------------------------------------------------===//

/// The product of shape[begin, end): the outer or inner extent around an axis.
inline int64_t product(const std::vector<int64_t> &shape, size_t begin, size_t end) {
  int64_t n = 1;
  for (size_t i = begin; i < end; ++i)
    n *= shape[i];
  return n;
}

/// Row-major strides of a dense tensor of `shape`.
std::vector<int64_t> denseStrides(const std::vector<int64_t> &shape);

/// Strides that read a dense tensor of `shape` as if broadcast (numpy,
/// right-aligned) to `rank` dims: 0 on its size-1 dims and on the dims it
/// lacks. Leading dims beyond `rank` (size 1 when it broadcasts) are dropped.
std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape, size_t rank);

/// The element offset of row-major index `linear` over `dims`, read through
/// `strides` (which may be 0 where a dim broadcasts).
inline int64_t stridedOffset(int64_t linear, const int64_t *dims, const int64_t *strides,
                             size_t rank) {
  int64_t off = 0;
  for (size_t i = rank; i-- > 0;) {
    off += linear % dims[i] * strides[i];
    linear /= dims[i];
  }
  return off;
}

//===----------------------------------------------------------------------===//
// Scratch
//===----------------------------------------------------------------------===//

/// `count` Ts of the call's scratch in `out`, or outOfMemory.
template <typename T>
Status allocScratch(const KernelCall &call, const char *op, size_t count, T *&out) {
  size_t bytes = count * sizeof(T);
  out = static_cast<T *>(call.scratch.get(bytes));
  return out ? Status::ok() : outOfMemory(op, bytes);
}

} // namespace ortc::cpu::kernels

#endif // ORTC_PROVIDERS_CPU_KERNELS_KERNELUTIL_H
