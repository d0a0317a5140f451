//===- Einsum.h - parsing an Einsum equation against shapes -----*- C++ -*-===//
//
// Shared by the Einsum library kernel and the CPU EP's claim, so that the
// claim accepts exactly the equations the kernel computes.
//
// Plain C++17: the runtime links this, never MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_KERNELS_EINSUM_H
#define ORTC_PROVIDERS_CPU_KERNELS_EINSUM_H

#include <cstdint>
#include <string>
#include <vector>

namespace ortc::cpu {

/// An equation resolved against its input shapes. Labels are numbered in
/// ASCII order ('A'..'Z' are 0..25, 'a'..'z' 26..51); the dims an ellipsis
/// stands for are labels 52 and up, right-aligned across the inputs.
struct EinsumPlan {
  std::vector<std::vector<int>> inputLabels; ///< per input, the label of each axis
  std::vector<int> outputLabels;             ///< the output's axes, in order
  std::vector<int64_t> labelSizes;           ///< per label (broadcast size)
  std::vector<int64_t> outputShape;
};

/// Parses `equation` (numpy einsum syntax: letters, at most one "..." per
/// term, spaces ignored, optional "->" output; implicit output is the
/// ellipsis dims, then the letters used once, in ASCII order) for inputs of
/// `shapes`. A label repeated within a term takes that term's diagonal;
/// labels missing from the output are summed over; dims of size 1 broadcast.
/// False with `error` set when the equation does not fit the shapes.
bool planEinsum(const std::string &equation, const std::vector<std::vector<int64_t>> &shapes,
                EinsumPlan &plan, std::string &error);

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_KERNELS_EINSUM_H
