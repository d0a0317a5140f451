//===- Npy.h - NumPy .npy files for tensors ---------------------*- C++ -*-===//
//
// `ortc run` reads its inputs from and writes its outputs to .npy files
// (format 1.0/2.0/3.0, little endian, C order). Only what a tensor needs:
// no object arrays, no Fortran order, no structured dtypes.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_SUPPORT_NPY_H
#define ORTC_RUNTIME_SUPPORT_NPY_H

#include "runtime/ep/Status.h"
#include "runtime/ep/Tensor.h"

#include <string>
#include <vector>

namespace ortc {

struct NpyArray {
  ElementType type = ElementType::Undefined;
  std::vector<int64_t> shape;
  std::vector<char> data;

  TensorView view() { return TensorView{data.data(), type, shape}; }
};

/// Reads `path`; a truncated file, a header it cannot parse or a dtype it does
/// not handle is a one-line error naming the file.
Result<NpyArray> readNpy(const std::string &path);

/// Writes `tensor` to `path` (format 1.0).
Status writeNpy(const std::string &path, const TensorView &tensor);

} // namespace ortc

#endif // ORTC_RUNTIME_SUPPORT_NPY_H
