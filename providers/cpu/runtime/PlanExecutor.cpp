//===- PlanExecutor.cpp - runs a CPU EP blob's execution plan -------------===//

#include "providers/cpu/runtime/PlanExecutor.h"

#include "providers/cpu/blob/CpuBlob.h"
#include "providers/cpu/runtime/HostCpu.h"
#include "providers/cpu/runtime/SharedObjectLoader.h"

#include <cstdlib>
#include <cstring>

namespace ortc::cpu {

namespace {
constexpr uint64_t kAlignment = 64;

std::vector<int64_t> toVector(const flatbuffers::Vector<int64_t> *values) {
  std::vector<int64_t> out;
  if (values)
    out.assign(values->begin(), values->end());
  return out;
}

std::vector<int64_t> bindShape(const std::vector<int64_t> &shape, int64_t batch) {
  std::vector<int64_t> out = shape;
  for (int64_t &d : out)
    if (d < 0)
      d = batch;
  return out;
}

std::string describe(const TensorView &view) {
  return elementTypeName(view.type) + shapeToString(view.shape);
}
std::string describe(const TensorSignature &sig) {
  return elementTypeName(sig.type) + shapeToString(sig.shape);
}
} // namespace

PlanExecutor::~PlanExecutor() = default;

PlanExecutor::RunState::~RunState() { std::free(arena); }

Result<std::unique_ptr<PlanExecutor>> PlanExecutor::load(const EpContextView &context,
                                                         std::shared_ptr<ThreadPool> pool) {
  std::string what = "partition '" + context.partitionName + "'";
  // Sections are 64-byte aligned relative to the blob. A mapped sidecar starts
  // on a page, so its weights are used in place; bytes inside the protobuf
  // (an inline blob) may start anywhere, and then the blob is copied once,
  // and verified as it is copied (openCpuBlobCopy).
  std::unique_ptr<PlanExecutor> exec(new PlanExecutor());
  Result<CpuBlobView> opened =
      reinterpret_cast<uintptr_t>(context.data) % kAlignment == 0
          ? openCpuBlob(context.data, context.size, what, hostArchitecture(), hostCpuFeatures())
          : openCpuBlobCopy(context.data, context.size, what, hostArchitecture(),
                            hostCpuFeatures(), exec->ownedBlob_);
  if (!opened.isOk())
    return opened.status();
  const CpuBlobView &blob = opened.value();
  const fb::Plan &plan = *blob.plan;

  exec->what_ = what;
  auto readSignatures = [](const auto *list, std::vector<TensorSignature> &out) {
    for (const fb::TensorSignature *sig : *list)
      out.push_back(TensorSignature{sig->name()->str(), ElementType(sig->element_type()),
                                    toVector(sig->shape())});
  };
  readSignatures(plan.inputs(), exec->inputs_);
  readSignatures(plan.outputs(), exec->outputs_);
  // Messages name the graph's values, not the blob's internal "input0".
  auto rename = [](std::vector<TensorSignature> &sigs, const std::vector<std::string> &names) {
    if (names.size() == sigs.size())
      for (size_t i = 0; i < sigs.size(); ++i)
        sigs[i].name = names[i];
  };
  rename(exec->inputs_, context.inputNames);
  rename(exec->outputs_, context.outputNames);

  for (const fb::Buffer *b : *plan.buffers()) {
    BufferInfo info;
    info.type = ElementType(b->element_type());
    info.shape = toVector(b->shape());
    info.offset = b->offset();
    info.batchScaled = b->batch_scaled();
    info.index = int(b->index());
    info.name = b->name() ? b->name()->str() : std::string();
    switch (b->kind()) {
    case fb::BufferKind::Input:
      info.kind = Kind::Input;
      break;
    case fb::BufferKind::Output:
      info.kind = Kind::Output;
      break;
    case fb::BufferKind::Weight:
      info.kind = Kind::Weight;
      break;
    case fb::BufferKind::Arena:
      info.kind = Kind::Arena;
      break;
    case fb::BufferKind::Alias: {
      // Point straight at the root; the verifier made alias_of < own id.
      info.kind = Kind::Alias;
      int root = b->alias_of();
      if (exec->buffers_[root].kind == Kind::Alias)
        root = exec->buffers_[root].index;
      info.index = root;
      break;
    }
    }
    exec->buffers_.push_back(std::move(info));
  }
  exec->scaledBytes_ = plan.memory()->batch_scaled_bytes();
  exec->fixedBytes_ = plan.memory()->fixed_bytes();

  // The code: loaded once, every kernel symbol resolved now.
  Result<std::unique_ptr<LoadedSharedObject>> code =
      LoadedSharedObject::load(blob.code, blob.codeSize, what);
  if (!code.isOk())
    return code.status();
  exec->code_ = code.takeValue();

  for (const fb::Step *s : *plan.steps()) {
    StepInfo step;
    step.callee = s->callee()->str();
    step.node = s->node() ? s->node()->str() : std::string();
    step.inputs.assign(s->inputs()->begin(), s->inputs()->end());
    step.outputs.assign(s->outputs()->begin(), s->outputs()->end());
    if (s->ints())
      for (const fb::IntsAttr *a : *s->ints())
        step.attrs.ints[a->name()->str()] = toVector(a->values());
    if (s->floats())
      for (const fb::FloatsAttr *a : *s->floats())
        step.attrs.floats[a->name()->str()].assign(a->values()->begin(), a->values()->end());
    if (s->strings())
      for (const fb::StringAttr *a : *s->strings())
        step.attrs.strings[a->name()->str()] = a->value()->str();
    if (s->kind() == fb::StepKind::Kernel) {
      step.isKernel = true;
      Result<void *> symbol = exec->code_->symbol(step.callee);
      if (!symbol.isOk())
        return symbol.status();
      step.kernel = reinterpret_cast<void (*)(void **)>(symbol.value());
    } else {
      step.library = findLibraryKernel(step.callee);
      if (!step.library)
        return Status::error(StatusCode::InvalidArgument,
                             what + ": step for node '" + step.node +
                                 "' calls library kernel '" + step.callee +
                                 "', which this runtime does not have");
    }
    exec->steps_.push_back(std::move(step));
  }

  exec->weights_ = blob.weights;
  exec->pool_ = std::move(pool);
  return exec;
}

uint64_t PlanExecutor::arenaBytes(int64_t batch) const {
  return scaledBytes_ * uint64_t(batch) + fixedBytes_;
}

Result<int64_t> PlanExecutor::bindBatch(const std::vector<TensorView> &inputs) const {
  if (inputs.size() != inputs_.size())
    return Status::error(StatusCode::InvalidArgument,
                         what_ + ": expected " + std::to_string(inputs_.size()) +
                             " inputs, got " + std::to_string(inputs.size()));
  int64_t batch = -1;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSignature &sig = inputs_[i];
    const TensorView &view = inputs[i];
    auto mismatch = [&]() {
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": input '" + sig.name + "' must be " + describe(sig) +
                               ", got " + describe(view));
    };
    if (view.type != sig.type || view.shape.size() != sig.shape.size())
      return mismatch();
    for (size_t d = 0; d < sig.shape.size(); ++d) {
      if (sig.shape[d] >= 0) {
        if (view.shape[d] != sig.shape[d])
          return mismatch();
      } else if (view.shape[d] < 0) {
        return mismatch();
      } else if (batch < 0) {
        batch = view.shape[d];
      } else if (batch != view.shape[d]) {
        return Status::error(StatusCode::InvalidArgument,
                             what_ + ": input '" + sig.name + "' has batch " +
                                 std::to_string(view.shape[d]) + " but an earlier input has " +
                                 std::to_string(batch));
      }
    }
    if (!view.data && view.numElements() > 0)
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": input '" + sig.name + "' has no data");
  }
  return batch < 0 ? int64_t(1) : batch;
}

Result<std::vector<std::vector<int64_t>>>
PlanExecutor::outputShapes(const std::vector<TensorView> &inputs) const {
  Result<int64_t> batch = bindBatch(inputs);
  if (!batch.isOk())
    return batch.status();
  std::vector<std::vector<int64_t>> shapes;
  for (const TensorSignature &sig : outputs_)
    shapes.push_back(bindShape(sig.shape, batch.value()));
  return shapes;
}

Status PlanExecutor::checkOutputs(const std::vector<TensorView> &outputs, int64_t batch) const {
  if (outputs.size() != outputs_.size())
    return Status::error(StatusCode::InvalidArgument,
                         what_ + ": expected " + std::to_string(outputs_.size()) +
                             " outputs, got " + std::to_string(outputs.size()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorSignature &sig = outputs_[i];
    std::vector<int64_t> shape = bindShape(sig.shape, batch);
    if (outputs[i].type != sig.type || outputs[i].shape != shape ||
        (!outputs[i].data && outputs[i].numElements() > 0))
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": output '" + sig.name + "' must be " +
                               elementTypeName(sig.type) + shapeToString(shape) + ", got " +
                               describe(outputs[i]));
  }
  return Status::ok();
}

std::unique_ptr<PlanExecutor::RunState> PlanExecutor::acquireState() {
  {
    std::lock_guard<std::mutex> lock(idleMutex_);
    if (!idle_.empty()) {
      std::unique_ptr<RunState> state = std::move(idle_.back());
      idle_.pop_back();
      return state;
    }
  }
  return std::make_unique<RunState>();
}

void PlanExecutor::releaseState(std::unique_ptr<RunState> state) {
  std::lock_guard<std::mutex> lock(idleMutex_);
  idle_.push_back(std::move(state));
}

Status PlanExecutor::run(const std::vector<TensorView> &inputs,
                         const std::vector<TensorView> &outputs) {
  Result<int64_t> bound = bindBatch(inputs);
  if (!bound.isOk())
    return bound.status();
  int64_t batch = bound.value();
  if (Status checked = checkOutputs(outputs, batch); !checked.isOk())
    return checked;

  // As many states exist as runs have overlapped; each keeps the largest
  // arena it needed.
  std::unique_ptr<RunState> state = acquireState();
  uint64_t needed = arenaBytes(batch);
  if (needed > state->capacity) {
    std::free(state->arena);
    state->arena = static_cast<char *>(std::aligned_alloc(kAlignment, needed));
    state->capacity = state->arena ? needed : 0;
    if (!state->arena) {
      releaseState(std::move(state));
      return Status::error(StatusCode::Internal, what_ + ": out of memory allocating a " +
                                                     std::to_string(needed) + "-byte arena");
    }
  }
  Status status = runSteps(*state, inputs, outputs, batch);
  releaseState(std::move(state));
  return status;
}

Status PlanExecutor::runSteps(RunState &state, const std::vector<TensorView> &inputs,
                              const std::vector<TensorView> &outputs, int64_t batch) const {
  // Every buffer as a view with its concrete shape.
  std::vector<TensorView> &views = state.views;
  views.resize(buffers_.size());
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const BufferInfo &b = buffers_[i];
    TensorView &v = views[i];
    v.type = b.type;
    v.shape = bindShape(b.shape, batch);
    switch (b.kind) {
    case Kind::Input:
      v.data = inputs[b.index].data;
      break;
    case Kind::Output:
      v.data = outputs[b.index].data;
      break;
    case Kind::Weight:
      v.data = const_cast<char *>(weights_) + b.offset;
      break;
    case Kind::Arena:
      v.data = state.arena + (b.batchScaled ? b.offset * uint64_t(batch)
                                            : scaledBytes_ * uint64_t(batch) + b.offset);
      break;
    case Kind::Alias:
      v.data = views[b.index].data;
      break;
    }
  }

  std::vector<TensorView> &stepInputs = state.stepInputs, &stepOutputs = state.stepOutputs;
  std::vector<int64_t> &descriptorWords = state.descriptorWords;
  std::vector<void *> &descriptorPointers = state.descriptorPointers;
  std::vector<size_t> &starts = state.starts;
  for (const StepInfo &step : steps_) {
    if (step.isKernel) {
      // One memref descriptor per operand: {allocated, aligned, offset,
      // sizes[rank], strides[rank]}, inputs first, then outputs.
      descriptorWords.clear();
      starts.clear();
      auto addDescriptor = [&](const TensorView &v) {
        starts.push_back(descriptorWords.size());
        descriptorWords.push_back(int64_t(reinterpret_cast<intptr_t>(v.data)));
        descriptorWords.push_back(int64_t(reinterpret_cast<intptr_t>(v.data)));
        descriptorWords.push_back(0);
        for (int64_t d : v.shape)
          descriptorWords.push_back(d);
        int64_t stride = 1;
        size_t rank = v.shape.size();
        size_t base = descriptorWords.size();
        descriptorWords.resize(base + rank);
        for (size_t d = rank; d-- > 0;) {
          descriptorWords[base + d] = stride;
          stride *= v.shape[d];
        }
      };
      for (int id : step.inputs)
        addDescriptor(views[id]);
      for (int id : step.outputs)
        addDescriptor(views[id]);
      descriptorPointers.clear();
      for (size_t start : starts)
        descriptorPointers.push_back(&descriptorWords[start]);
      step.kernel(descriptorPointers.data());
      continue;
    }
    stepInputs.clear();
    stepOutputs.clear();
    for (int id : step.inputs)
      stepInputs.push_back(id < 0 ? TensorView{} : views[id]);
    for (int id : step.outputs)
      stepOutputs.push_back(views[id]);
    KernelCall call{step.attrs,         stepInputs.data(), stepInputs.size(),
                    stepOutputs.data(), stepOutputs.size(), state.scratch,
                    pool_.get()};
    Status status = step.library(call);
    if (!status.isOk())
      return Status::error(status.code(), what_ + ": node '" + step.node + "' (" + step.callee +
                                              "): " + status.message());
  }
  return Status::ok();
}

} // namespace ortc::cpu
