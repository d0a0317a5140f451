//===- KernelUtil.cpp - what the library kernels share --------------------===//

#include "providers/cpu/kernels/KernelUtil.h"

#include <algorithm>

namespace ortc::cpu::kernels {

Status invalid(const char *op, const std::string &what) {
  return Status::error(StatusCode::InvalidArgument, std::string(op) + ": " + what);
}

Status outOfMemory(const char *op, size_t bytes) {
  return Status::error(StatusCode::Internal, std::string(op) + ": cannot allocate " +
                                                 std::to_string(bytes) + " bytes of scratch");
}

Status checkFloat(const char *op, const TensorView *t, const char *role) {
  if (!t)
    return invalid(op, std::string("missing ") + role);
  if (t->type != ElementType::Float)
    return invalid(op, std::string(role) + " must be float32, got " + elementTypeName(t->type));
  return Status::ok();
}

Status checkFloats(const char *op,
                   std::initializer_list<std::pair<const TensorView *, const char *>> tensors) {
  for (const auto &[t, role] : tensors)
    if (Status s = checkFloat(op, t, role); !s.isOk())
      return s;
  return Status::ok();
}

Status checkOptionalFloat(const char *op, const TensorView *t, const char *role) {
  return t ? checkFloat(op, t, role) : Status::ok();
}

Status checkOutputShape(const char *op, const TensorView &Y, const std::vector<int64_t> &expect) {
  if (Y.shape != expect)
    return invalid(op, "output shape " + shapeToString(Y.shape) + " should be " +
                           shapeToString(expect));
  return Status::ok();
}

Result<TensorView> sizedOutput(const char *op, const KernelCall &call, size_t i,
                               const std::vector<int64_t> &shape) {
  if (i >= call.numOutputs)
    return invalid(op, "missing output " + std::to_string(i));
  TensorView out = call.outputs[i];
  if (call.sizer && call.sizer->pending(i)) {
    Result<void *> data = call.sizer->allocate(i, shape);
    if (!data.isOk())
      return data.status();
    out.data = data.value();
    out.shape = shape;
    return out;
  }
  if (Status s = checkOutputShape(op, out, shape); !s.isOk())
    return s;
  return out;
}

const TensorView *dataInput(const KernelCall &call, size_t i) {
  if (i >= call.numInputs)
    return nullptr;
  const TensorView &t = call.inputs[i];
  bool empty = std::find(t.shape.begin(), t.shape.end(), 0) != t.shape.end();
  return t.data || empty ? &t : nullptr;
}

Status readAxis(const char *op, const StepAttributes &attrs, int64_t fallback, size_t rank,
                int64_t &axis) {
  axis = attrs.getInt("axis", fallback);
  int64_t given = axis;
  if (!normalizeAxis(axis, rank))
    return invalid(op, "axis " + std::to_string(given) + " out of range for rank " +
                           std::to_string(rank));
  return Status::ok();
}

Status claimAxis(const char *op, int64_t &axis, std::vector<bool> &seen) {
  int64_t given = axis;
  if (!normalizeAxis(axis, seen.size()) || seen[axis])
    return invalid(op, "axis " + std::to_string(given) + " is out of range or repeated");
  seen[axis] = true;
  return Status::ok();
}

std::vector<int64_t> denseStrides(const std::vector<int64_t> &shape) {
  std::vector<int64_t> strides(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    strides[i] = s;
    s *= shape[i];
  }
  return strides;
}

std::vector<int64_t> broadcastStrides(const std::vector<int64_t> &shape, size_t rank) {
  std::vector<int64_t> strides(rank, 0);
  int64_t step = 1;
  for (size_t i = 0; i < shape.size() && i < rank; ++i) {
    int64_t d = shape[shape.size() - 1 - i];
    strides[rank - 1 - i] = d == 1 ? 0 : step;
    step *= d;
  }
  return strides;
}

} // namespace ortc::cpu::kernels
