//===- SequenceSteps.cpp - the CPU plan's sequence and optional steps -----===//
//
// Sequence steps run in the executor rather than as library kernels: they
// make and read containers (SequenceValue), which no kernel sees. Which
// operands are containers the verifier checked per callee (CpuBlob.cpp);
// what the data decides (positions, element shapes, the number of pieces) is
// checked here, and a tensor taken out of a container is given the shape it
// has through the same sizing as data-sized outputs.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/runtime/PlanExecutor.h"

#include "providers/cpu/kernels/KernelUtil.h"

#include <cstring>

namespace ortc::cpu {

using kernels::product;

Status PlanExecutor::runSequence(RunState &state, const StepInfo &step,
                                 const OutputAllocator *allocate) const {
  const std::string &op = step.callee;
  auto refuse = [&](const std::string &why) {
    return Status::error(StatusCode::InvalidArgument,
                         what_ + ": node '" + step.node + "' (" + op + "): " + why);
  };
  auto present = [&](size_t k) { return k < step.inputs.size() && step.inputs[k] >= 0; };
  auto kindOf = [&](size_t k) { return buffers_[size_t(step.inputs[k])].container; };
  auto input = [&](size_t k) -> const TensorView & { return state.views[size_t(step.inputs[k])]; };
  auto containerIn = [&](size_t k) -> const SequenceValue & {
    return *static_cast<const SequenceValue *>(input(k).data);
  };
  auto containerOut = [&](size_t k) -> SequenceValue & {
    return *static_cast<SequenceValue *>(state.views[size_t(step.outputs[k])].data);
  };
  // A position input (a scalar int32 or int64), negative counting from the
  // end, within [lo, hi] of `n` elements.
  auto position = [&](size_t k, int64_t fallback, int64_t n, int64_t lo,
                      int64_t hi) -> Result<int64_t> {
    if (!present(k))
      return fallback;
    const TensorView &v = input(k);
    if (v.numElements() != 1 || !v.data)
      return refuse("the position holds " + std::to_string(v.numElements()) +
                    " elements, not one");
    int64_t p = v.type == ElementType::Int32 ? *static_cast<const int32_t *>(v.data)
                                             : *static_cast<const int64_t *>(v.data);
    int64_t given = p;
    if (p < 0)
      p += n;
    if (p < lo || p > hi)
      return refuse("position " + std::to_string(given) + " is out of range for a sequence of " +
                    std::to_string(n) + " tensors");
    return p;
  };
  auto take = [&](const TensorView &view) -> Result<OwnedTensor> {
    OwnedTensor t = OwnedTensor::copyOf(view);
    if (!t.data)
      return Status::error(StatusCode::Internal, "out of memory copying a " +
                                                     shapeToString(view.shape) + " tensor");
    return t;
  };
  // Tensor output `k` as `value` (a copy of its bytes).
  auto give = [&](size_t k, const TensorView &value) {
    return produce(state, step, step.outputs[k], value, allocate);
  };
  auto giveScalar = [&](size_t k, int64_t value) -> Status {
    int id = step.outputs[k];
    ElementType type = buffers_[size_t(id)].type;
    Result<void *> out = outputTensor(state, step, id, type, {}, allocate);
    if (!out.isOk())
      return out.status();
    if (type == ElementType::Bool)
      *static_cast<uint8_t *>(out.value()) = value != 0;
    else if (type == ElementType::Int64)
      *static_cast<int64_t *>(out.value()) = value;
    else
      return refuse("its output is " + elementTypeName(type) + ", not bool or int64");
    return Status::ok();
  };

  if (op == "SequenceEmpty") {
    containerOut(0).clear();
    return Status::ok();
  }
  if (op == "SequenceConstruct") {
    SequenceValue &out = containerOut(0);
    out.clear();
    for (size_t k = 0; k < step.inputs.size(); ++k) {
      Result<OwnedTensor> t = take(input(k));
      if (!t.isOk())
        return refuse(t.status().message());
      out.elements.push_back(t.takeValue());
    }
    return Status::ok();
  }
  if (op == "SequenceInsert") {
    const SequenceValue &in = containerIn(0);
    int64_t n = int64_t(in.elements.size());
    Result<int64_t> at = position(2, n, n, 0, n);
    if (!at.isOk())
      return at.status();
    Result<OwnedTensor> t = take(input(1));
    if (!t.isOk())
      return refuse(t.status().message());
    SequenceValue &out = containerOut(0);
    if (&out != &in)
      out = in;
    out.elements.insert(out.elements.begin() + at.value(), t.takeValue());
    return Status::ok();
  }
  if (op == "SequenceErase") {
    const SequenceValue &in = containerIn(0);
    int64_t n = int64_t(in.elements.size());
    if (n == 0)
      return refuse("the sequence is empty");
    Result<int64_t> at = position(1, n - 1, n, 0, n - 1);
    if (!at.isOk())
      return at.status();
    SequenceValue &out = containerOut(0);
    if (&out != &in)
      out = in;
    out.elements.erase(out.elements.begin() + at.value());
    return Status::ok();
  }
  if (op == "SequenceAt") {
    const SequenceValue &in = containerIn(0);
    int64_t n = int64_t(in.elements.size());
    Result<int64_t> at = position(1, 0, n, 0, n - 1);
    if (!at.isOk())
      return at.status();
    return give(0, in.elements[size_t(at.value())].view());
  }
  if (op == "SequenceLength")
    return giveScalar(0, int64_t(containerIn(0).elements.size()));

  if (op == "SplitToSequence") {
    const TensorView &x = input(0);
    int64_t rank = int64_t(x.shape.size());
    int64_t axis = step.attrs.getInt("axis", 0);
    if (axis < -rank || axis >= rank)
      return refuse("axis " + std::to_string(axis) + " is out of range for " +
                    shapeToString(x.shape));
    if (axis < 0)
      axis += rank;
    int64_t length = x.shape[size_t(axis)];
    bool keepdims = step.attrs.getInt("keepdims", 1) != 0;
    std::vector<int64_t> sizes;
    if (!present(1)) {
      sizes.assign(size_t(length), 1);
    } else {
      const TensorView &split = input(1);
      auto at = [&](int64_t i) {
        return split.type == ElementType::Int32 ? int64_t(static_cast<const int32_t *>(split.data)[i])
                                                : static_cast<const int64_t *>(split.data)[i];
      };
      keepdims = true; // ONNX: keepdims is ignored when split is given
      if (split.shape.empty()) {
        int64_t chunk = at(0);
        if (chunk <= 0)
          return refuse("split " + std::to_string(chunk) + " is not positive");
        for (int64_t done = 0; done < length; done += chunk)
          sizes.push_back(std::min(chunk, length - done));
      } else {
        int64_t total = 0;
        for (int64_t i = 0; i < split.numElements(); ++i) {
          int64_t size = at(i);
          if (size < 0)
            return refuse("split entry " + std::to_string(i) + " is negative");
          sizes.push_back(size);
          total += size;
        }
        if (total != length)
          return refuse("the splits sum to " + std::to_string(total) + ", the axis has " +
                        std::to_string(length));
      }
    }
    size_t elem = elementSize(x.type);
    int64_t outer = product(x.shape, 0, size_t(axis));
    size_t inner = size_t(product(x.shape, size_t(axis) + 1, x.shape.size())) * elem;
    SequenceValue &out = containerOut(0);
    out.clear();
    int64_t start = 0;
    for (int64_t size : sizes) {
      std::vector<int64_t> shape = x.shape;
      shape[size_t(axis)] = size;
      if (!keepdims)
        shape.erase(shape.begin() + axis);
      OwnedTensor piece = OwnedTensor::allocate(x.type, shape);
      if (!piece.data)
        return refuse("out of memory for a " + shapeToString(shape) + " piece");
      char *to = piece.data.get();
      const char *from = static_cast<const char *>(x.data);
      size_t row = size_t(size) * inner;
      for (int64_t o = 0; o < outer && row; ++o)
        std::memcpy(to + size_t(o) * row, from + (size_t(o * length + start)) * inner, row);
      out.elements.push_back(std::move(piece));
      start += size;
    }
    return Status::ok();
  }

  if (op == "ConcatFromSequence") {
    const SequenceValue &in = containerIn(0);
    if (in.elements.empty())
      return refuse("the sequence is empty; there is nothing to concatenate");
    const std::vector<int64_t> &first = in.elements[0].shape;
    bool newAxis = step.attrs.getInt("new_axis", 0) != 0;
    int64_t rank = int64_t(first.size()), outRank = rank + (newAxis ? 1 : 0);
    int64_t axis = step.attrs.getInt("axis", 0);
    if (axis < -outRank || axis >= outRank)
      return refuse("axis " + std::to_string(axis) + " is out of range for elements " +
                    shapeToString(first));
    if (axis < 0)
      axis += outRank;
    std::vector<int64_t> shape = first;
    if (newAxis)
      shape.insert(shape.begin() + axis, 0);
    else
      shape[size_t(axis)] = 0;
    for (size_t i = 0; i < in.elements.size(); ++i) {
      const OwnedTensor &e = in.elements[i];
      bool same = e.shape.size() == first.size() && e.type == in.elements[0].type;
      for (size_t d = 0; same && d < first.size(); ++d)
        same = e.shape[d] == first[d] || (!newAxis && int64_t(d) == axis);
      if (!same)
        return refuse("element " + std::to_string(i) + " " + shapeToString(e.shape) +
                      " does not concatenate with element 0 " + shapeToString(first) +
                      " on axis " + std::to_string(axis));
      shape[size_t(axis)] += newAxis ? 1 : e.shape[size_t(axis)];
    }
    ElementType type = in.elements[0].type;
    Result<void *> out = outputTensor(state, step, step.outputs[0], type, shape, allocate);
    if (!out.isOk())
      return out.status();
    // Per outer index, each element's rows from the axis on, in order.
    size_t elem = elementSize(type);
    int64_t outer = product(shape, 0, size_t(axis));
    char *to = static_cast<char *>(out.value());
    for (int64_t o = 0; o < outer; ++o)
      for (const OwnedTensor &e : in.elements) {
        // The element's dims from the axis on (with a new axis, the
        // element has no dim there: the same product).
        size_t row = size_t(product(e.shape, size_t(axis), e.shape.size())) * elem;
        if (row)
          std::memcpy(to, e.data.get() + size_t(o) * row, row);
        to += row;
      }
    return Status::ok();
  }

  if (op == "Optional") {
    SequenceValue &out = containerOut(0);
    out.clear();
    if (!present(0)) {
      out.present = false;
      return Status::ok();
    }
    if (kindOf(0) == ValueKind::Tensor) {
      Result<OwnedTensor> t = take(input(0));
      if (!t.isOk())
        return refuse(t.status().message());
      out.elements.push_back(t.takeValue());
    } else {
      out.elements = containerIn(0).elements;
    }
    return Status::ok();
  }
  if (op == "OptionalHasElement") {
    bool has = present(0) && (kindOf(0) == ValueKind::Tensor || kindOf(0) == ValueKind::Sequence ||
                              containerIn(0).present);
    return giveScalar(0, has);
  }
  if (op == "OptionalGetElement") {
    ValueKind kind = kindOf(0);
    if (kind == ValueKind::Tensor)
      return give(0, input(0));
    const SequenceValue &in = containerIn(0);
    if (!in.present)
      return refuse("the optional input is empty");
    if (kind == ValueKind::OptionalTensor) {
      if (in.elements.size() != 1)
        return refuse("the optional tensor holds " + std::to_string(in.elements.size()) +
                      " tensors");
      return give(0, in.elements[0].view());
    }
    SequenceValue &out = containerOut(0);
    out.present = true;
    out.elements = in.elements;
    return Status::ok();
  }
  if (op == "Identity")
    return give(0, input(0)); // a container: assigned
  return refuse("this runtime has no sequence step '" + op + "'");
}

} // namespace ortc::cpu
