//===- Session.cpp - run a compiled EPContext model -----------------------===//
//
// A run walks the EPContext nodes in graph order (the compiler writes them
// topologically sorted, and the loader checked that every input exists before
// its consumer). Values live on the host or on one device EP; a partition on a
// device gets its inputs copied there (copy_async, then the fences are
// waited on before it runs), and a host partition or a graph output gets
// device values copied back. Each transfer happens once per run per value.
//
//===----------------------------------------------------------------------===//

#include "runtime/session/Session.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <map>

namespace ortc {

Result<std::unique_ptr<Session>> Session::load(const std::string &path, EpRegistry registry,
                                               const SessionOptions &options) {
  Result<ContextModel> model = loadContextModel(path);
  if (!model.isOk())
    return model.status();
  return loadPartitions(model.takeValue(), std::move(registry), options);
}

Result<std::unique_ptr<Session>> Session::loadFromBuffer(const void *data, size_t size,
                                                         const std::string &displayName,
                                                         const std::string &baseDir,
                                                         EpRegistry registry,
                                                         const SessionOptions &options) {
  Result<ContextModel> model = loadContextModelFromBuffer(data, size, displayName, baseDir);
  if (!model.isOk())
    return model.status();
  return loadPartitions(model.takeValue(), std::move(registry), options);
}

Result<std::unique_ptr<Session>> Session::loadPartitions(ContextModel model, EpRegistry registry,
                                                         const SessionOptions &options) {
  std::unique_ptr<Session> session(new Session());
  session->model_ = std::move(model);
  session->registry_ = std::move(registry);
  const std::string &path = session->model_.path;
  if (options.intraOpThreads < 0)
    return Status::error(StatusCode::InvalidArgument, path + ": intra-op thread count " +
                                                          std::to_string(options.intraOpThreads) +
                                                          " is negative");
  // Options for an EP the registry lacks, or keys it does not list, are
  // refused even when the model does not use that EP: they are mistakes.
  Status checked = session->registry_.checkOptions(options.epOptions);
  if (!checked.isOk())
    return checked;

  // Only the EPs this model uses are started.
  std::vector<RuntimeEp *> initialized;
  for (const ContextNode &node : session->model_.nodes) {
    Result<RuntimeEp *> ep = session->registry_.findBySource(node.context.source);
    if (!ep.isOk())
      return Status::error(ep.status().code(),
                           path + ": node '" + node.name + "': " + ep.status().message());
    RuntimeEp *owner = ep.value();
    if (std::find(initialized.begin(), initialized.end(), owner) == initialized.end()) {
      EpConfig config;
      config.intraOpThreads = options.intraOpThreads;
      config.options = session->registry_.optionsFor(*owner, options.epOptions);
      Status started = owner->initialize(config);
      if (!started.isOk())
        return Status::error(started.code(), path + ": " + started.message());
      initialized.push_back(owner);
    }
    Result<std::unique_ptr<LoadedPartition>> loaded = owner->loadContext(node.context);
    if (!loaded.isOk())
      return Status::error(
          loaded.status().code(),
          path + ": " + (node.embedded ? std::string() : "sidecar " + node.sidecarPath + ": ") +
              loaded.status().message());
    std::unique_ptr<LoadedPartition> partition = loaded.takeValue();
    if (partition->inputs().size() != node.inputs.size() ||
        partition->outputs().size() != node.outputs.size())
      return Status::error(StatusCode::InvalidArgument,
                           path + ": node '" + node.name + "' has " +
                               std::to_string(node.inputs.size()) + " inputs and " +
                               std::to_string(node.outputs.size()) + " outputs but its blob has " +
                               std::to_string(partition->inputs().size()) + " and " +
                               std::to_string(partition->outputs().size()));
    session->partitions_.push_back(std::move(partition));
    session->eps_.push_back(owner);
  }
  return session;
}

namespace {

/// A value of one run: host memory, or a buffer of the device EP `device`.
struct Value {
  TensorView view;
  RuntimeEp *device = nullptr;
};

/// Device buffers of one run, each released through its owner exactly once,
/// whichever way the run ends.
class DeviceAllocations {
public:
  ~DeviceAllocations() {
    for (auto &[ep, buffer] : buffers_)
      (void)ep->deallocate(std::move(buffer));
  }
  Result<void *> allocate(RuntimeEp &ep, size_t bytes) {
    Result<DeviceBuffer> buffer = ep.allocate(bytes ? bytes : 1, 64);
    if (!buffer.isOk())
      return buffer.status();
    void *data = buffer.value().data();
    buffers_.emplace_back(&ep, buffer.takeValue());
    return data;
  }

private:
  std::vector<std::pair<RuntimeEp *, DeviceBuffer>> buffers_;
};

/// Whether the caller's buffer `into` can hold output `name`, made as `made`.
Status checkCallerBuffer(const std::string &name, const TensorView &into, const TensorView &made) {
  if (into.type != made.type || into.shape != made.shape)
    return Status::error(StatusCode::InvalidArgument,
                         "output '" + name + "' must be " + elementTypeName(made.type) +
                             shapeToString(made.shape) + ", but the buffer given for it is " +
                             elementTypeName(into.type) + shapeToString(into.shape));
  if (!into.data && into.byteSize() > 0)
    return Status::error(StatusCode::InvalidArgument,
                         "the buffer given for output '" + name + "' has no data");
  return Status::ok();
}

/// A sequence or optional input: a SequenceValue whose tensors are of the
/// signature's element type, each with its bytes.
Status checkContainerInput(const TensorSignature &sig, const TensorView &view) {
  std::string want = valueKindText(sig.kind, sig.type);
  if (!view.data || view.type != sig.type || !view.shape.empty())
    return Status::error(StatusCode::InvalidArgument,
                         "input '" + sig.name + "' must be " + want);
  const auto &value = *static_cast<const SequenceValue *>(view.data);
  bool optional = sig.kind == ValueKind::OptionalTensor || sig.kind == ValueKind::OptionalSequence;
  if (!value.present && !optional)
    return Status::error(StatusCode::InvalidArgument,
                         "input '" + sig.name + "' is " + want + " and cannot be empty (none)");
  if (sig.kind == ValueKind::OptionalTensor && value.present && value.elements.size() != 1)
    return Status::error(StatusCode::InvalidArgument,
                         "input '" + sig.name + "' is " + want + " but holds " +
                             std::to_string(value.elements.size()) + " tensors");
  for (size_t k = 0; k < value.elements.size(); ++k) {
    TensorView element = value.elements[k].view();
    bool ok = element.type == sig.type;
    for (int64_t d : element.shape)
      ok = ok && d >= 0;
    if (!ok || (!element.data && element.byteSize() > 0))
      return Status::error(StatusCode::InvalidArgument,
                           "input '" + sig.name + "' tensor " + std::to_string(k) + " is " +
                               elementTypeName(element.type) + shapeToString(element.shape) +
                               (ok ? " without data" : "") + "; it must be " + want);
  }
  return Status::ok();
}

bool isHost(const RuntimeEp &ep) { return ep.identity().deviceType == DeviceType::Cpu; }

DeviceBuffer viewOf(const Value &value) {
  return value.device
             ? DeviceBuffer::borrowed(value.view.data, value.view.byteSize(),
                                      value.device->identity().deviceType,
                                      value.device->identity().deviceId)
             : DeviceBuffer::borrowed(value.view.data, value.view.byteSize(), DeviceType::Cpu);
}

/// Copies a device value into host memory at `into`.
Status copyToHost(const Value &value, void *into) {
  DeviceBuffer src = viewOf(value);
  DeviceBuffer dst = DeviceBuffer::borrowed(into, value.view.byteSize(), DeviceType::Cpu);
  return value.device->copy(src, dst, value.view.byteSize());
}

} // namespace

Result<std::vector<OwnedTensor>> Session::run(const std::vector<TensorView> &inputs) const {
  for (const TensorSignature &sig : model_.outputs)
    if (sig.kind != ValueKind::Tensor)
      return Status::error(StatusCode::InvalidArgument,
                           model_.path + ": output '" + sig.name + "' is " +
                               valueKindText(sig.kind, sig.type) +
                               ", which this call cannot return; run it with RunOutputs");
  std::vector<RunOutput> outputs(model_.outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    outputs[i].index = i;
  Status status = run(inputs, outputs);
  if (!status.isOk())
    return status;
  std::vector<OwnedTensor> results;
  for (RunOutput &output : outputs)
    results.push_back(std::move(output.result));
  return results;
}

void Session::attachProfile(RunProfile *profile) {
  if (profile_)
    for (std::unique_ptr<LoadedPartition> &partition : partitions_)
      partition->profileSteps(nullptr);
  profile_ = profile;
  if (!profile)
    return;
  *profile = RunProfile();
  for (size_t n = 0; n < partitions_.size(); ++n) {
    PartitionProfile entry;
    entry.name = model_.nodes[n].name;
    entry.ep = eps_[n]->name();
    profile->partitions.push_back(std::move(entry));
  }
  // After the vector is complete: the partitions keep pointers into it.
  for (size_t n = 0; n < partitions_.size(); ++n)
    partitions_[n]->profileSteps(&profile->partitions[n].steps);
}

Status Session::run(const std::vector<TensorView> &inputs, std::vector<RunOutput> &outputs) const {
  auto start = std::chrono::steady_clock::now();
  Status status = runPartitions(inputs, outputs);
  if (profile_ && status.isOk()) {
    profile_->nanoseconds += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                          std::chrono::steady_clock::now() - start)
                                          .count());
    ++profile_->runs;
  }
  if (!status.isOk())
    for (RunOutput &output : outputs) {
      output.result = OwnedTensor(); // nothing half-made reaches the caller
      output.sequence.reset();
    }
  return status;
}

Status Session::runPartitions(const std::vector<TensorView> &inputs,
                              std::vector<RunOutput> &outputs) const {
  const std::string &path = model_.path;
  auto invalid = [&](const std::string &message) {
    return Status::error(StatusCode::InvalidArgument, path + ": " + message);
  };
  auto outOfMemory = [&](const std::string &what) {
    return Status::error(StatusCode::Internal, path + ": out of memory allocating " + what);
  };
  if (inputs.size() != model_.inputs.size())
    return invalid("expected " + std::to_string(model_.inputs.size()) + " inputs, got " +
                   std::to_string(inputs.size()));
  std::map<std::string, Value> values; // host values by name
  // A dim_param names one symbol across the graph inputs: the first input
  // that has it binds it, every other must agree.
  struct Binding {
    int64_t value;
    const std::string *input;
    size_t dim;
  };
  std::map<std::string, Binding> symbols;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSignature &sig = model_.inputs[i];
    const TensorView &view = inputs[i];
    if (sig.kind != ValueKind::Tensor) {
      if (Status s = checkContainerInput(sig, view); !s.isOk())
        return invalid(s.message());
      values[sig.name] = Value{view, nullptr};
      continue;
    }
    bool ok = view.type == sig.type && view.shape.size() == sig.shape.size();
    for (size_t d = 0; ok && d < sig.shape.size(); ++d)
      ok = view.shape[d] >= 0 && (sig.shape[d] < 0 || sig.shape[d] == view.shape[d]);
    if (!ok)
      return invalid("input '" + sig.name + "' must be " + elementTypeName(sig.type) +
                     shapeToString(sig.shape) + ", got " + elementTypeName(view.type) +
                     shapeToString(view.shape));
    if (!view.data && view.byteSize() > 0)
      return invalid("input '" + sig.name + "' has no data");
    for (size_t d = 0; d < sig.dimNames.size() && d < view.shape.size(); ++d) {
      const std::string &symbol = sig.dimNames[d];
      if (symbol.empty())
        continue;
      auto [bound, fresh] = symbols.emplace(symbol, Binding{view.shape[d], &sig.name, d});
      if (!fresh && bound->second.value != view.shape[d])
        return invalid("input '" + sig.name + "' dim " + std::to_string(d) + " is " +
                       std::to_string(view.shape[d]) + " but '" + *bound->second.input + "' dim " +
                       std::to_string(bound->second.dim) + " (" + symbol + ") is " +
                       std::to_string(bound->second.value));
    }
    values[sig.name] = Value{view, nullptr};
  }

  // Which requested output each graph output name goes to.
  std::map<std::string, RunOutput *> requested;
  for (RunOutput &output : outputs) {
    if (output.index >= model_.outputs.size())
      return invalid("there is no output #" + std::to_string(output.index) + " (the model has " +
                     std::to_string(model_.outputs.size()) + ")");
    const TensorSignature &sig = model_.outputs[output.index];
    if (!requested.emplace(sig.name, &output).second)
      return invalid("output '" + sig.name + "' is requested twice");
    output.result = OwnedTensor();
    output.sequence.reset();
    if (sig.kind != ValueKind::Tensor && output.into)
      return invalid("output '" + sig.name + "' is " + valueKindText(sig.kind, sig.type) +
                     "; the session makes it (give no buffer for it)");
  }

  DeviceAllocations deviceMemory;
  std::map<std::string, OwnedTensor> hostCopies; // session-allocated host values
  // Sequences and optionals the partitions make (host values only).
  std::map<std::string, std::shared_ptr<SequenceValue>> containers;
  // Values copied to a device EP in this run, by (name, EP).
  std::map<std::pair<std::string, RuntimeEp *>, Value> onDevice;

  auto isContainerValue = [&](const std::string &name) {
    if (containers.count(name))
      return true;
    for (const TensorSignature &sig : model_.inputs)
      if (sig.name == name)
        return sig.kind != ValueKind::Tensor;
    return false;
  };
  for (size_t n = 0; n < partitions_.size(); ++n) {
    const ContextNode &node = model_.nodes[n];
    LoadedPartition &partition = *partitions_[n];
    RuntimeEp &ep = *eps_[n];
    bool host = isHost(ep);

    // Inputs where this partition reads them.
    std::vector<TensorView> nodeInputs;
    std::vector<std::unique_ptr<Fence>> fences;
    // A device value brought to the host: later host readers use the copy,
    // later readers on its device still find the original.
    auto bringToHost = [&](const std::string &name, Value &value) -> Status {
      OwnedTensor copy = OwnedTensor::allocate(value.view.type, value.view.shape);
      if (!copy.data)
        return outOfMemory("a host copy of '" + name + "'");
      if (Status s = copyToHost(value, copy.data.get()); !s.isOk())
        return invalid("copying '" + name + "' to the host: " + s.message());
      onDevice[{name, value.device}] = value;
      value = Value{copy.view(), nullptr};
      values[name] = value;
      hostCopies[name] = std::move(copy);
      return Status::ok();
    };
    for (const std::string &name : node.inputs) {
      Value value = values.at(name);
      if (!host && isContainerValue(name)) 
        return invalid("node '" + node.name + "': input '" + name +
                       "' is a sequence or optional, which device EP " + ep.name() +
                       " cannot take");
      if (host && value.device) {
        if (Status s = bringToHost(name, value); !s.isOk())
          return s;
      } else if (!host && value.device != &ep) {
        auto key = std::make_pair(name, &ep);
        auto cached = onDevice.find(key);
        if (cached != onDevice.end()) {
          value = cached->second;
        } else {
          if (value.device) // from another device: through the host
            if (Status s = bringToHost(name, value); !s.isOk())
              return s;
          Result<void *> buffer = deviceMemory.allocate(ep, value.view.byteSize());
          if (!buffer.isOk())
            return invalid("node '" + node.name + "': input '" + name +
                           "': " + buffer.status().message());
          Value moved{TensorView{buffer.value(), value.view.type, value.view.shape}, &ep};
          DeviceBuffer src = viewOf(value), dst = viewOf(moved);
          Result<std::unique_ptr<Fence>> fence = ep.copyAsync(src, dst, value.view.byteSize());
          if (!fence.isOk())
            return invalid("node '" + node.name + "': copying input '" + name +
                           "' to the device: " + fence.status().message());
          fences.push_back(fence.takeValue());
          onDevice[key] = moved;
          value = moved;
        }
      }
      nodeInputs.push_back(value.view);
    }
    for (std::unique_ptr<Fence> &fence : fences)
      if (Status s = fence->wait(); !s.isOk())
        return invalid("node '" + node.name + "': waiting for an input transfer: " + s.message());

    Result<std::vector<std::vector<int64_t>>> shapes = partition.outputShapes(nodeInputs);
    if (!shapes.isOk())
      return Status::error(shapes.status().code(), path + ": " + shapes.status().message());

    // Outputs: a caller's buffer when a host partition makes a requested
    // graph output, else fresh host or device memory. An output sized by
    // the data (a dim of -1) is allocated when the partition asks.
    std::vector<TensorView> nodeOutputs;
    bool anySizedByData = false;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      const std::string &name = node.outputs[i];
      TensorView view{nullptr, partition.outputs()[i].type, shapes.value()[i]};
      if (partition.outputs()[i].kind != ValueKind::Tensor) {
        if (!host)
          return Status::error(StatusCode::Internal,
                               path + ": node '" + node.name + "': output '" + name +
                                   "' is a sequence or optional on device EP " + ep.name());
        auto made = std::make_shared<SequenceValue>();
        view = TensorView{made.get(), partition.outputs()[i].type, {}};
        containers[name] = std::move(made);
        values[name] = Value{view, nullptr};
        nodeOutputs.push_back(view);
        continue;
      }
      if (std::find(view.shape.begin(), view.shape.end(), -1) != view.shape.end()) {
        if (!host)
          return Status::error(StatusCode::Internal,
                               path + ": node '" + node.name + "': output '" + name +
                                   "' is sized by the data on device EP " + ep.name());
        anySizedByData = true;
        nodeOutputs.push_back(view);
        continue;
      }
      auto want = requested.find(name);
      if (host && want != requested.end() && want->second->into) {
        const TensorView &into = *want->second->into;
        if (Status s = checkCallerBuffer(name, into, view); !s.isOk())
          return invalid(s.message());
        view.data = into.data;
        values[name] = Value{view, nullptr};
      } else if (host) {
        OwnedTensor tensor = OwnedTensor::allocate(view.type, view.shape);
        if (!tensor.data)
          return outOfMemory("output '" + name + "' (" + std::to_string(view.byteSize()) +
                             " bytes)");
        view.data = tensor.data.get();
        values[name] = Value{view, nullptr};
        hostCopies[name] = std::move(tensor);
      } else {
        Result<void *> buffer = deviceMemory.allocate(ep, view.byteSize());
        if (!buffer.isOk())
          return invalid("node '" + node.name + "': output '" + name +
                         "': " + buffer.status().message());
        view.data = buffer.value();
        values[name] = Value{view, &ep};
      }
      nodeOutputs.push_back(view);
    }
    OutputAllocator allocate;
    if (anySizedByData)
      allocate = [&](size_t i, const std::vector<int64_t> &shape) -> Result<void *> {
        if (i >= node.outputs.size())
          return Status::error(StatusCode::Internal, "no output #" + std::to_string(i));
        const std::string &name = node.outputs[i];
        TensorView view{nullptr, partition.outputs()[i].type, shape};
        auto want = requested.find(name);
        if (want != requested.end() && want->second->into) {
          if (Status s = checkCallerBuffer(name, *want->second->into, view); !s.isOk())
            return invalid(s.message());
          view.data = want->second->into->data;
        } else {
          OwnedTensor tensor = OwnedTensor::allocate(view.type, view.shape);
          if (!tensor.data)
            return outOfMemory("output '" + name + "' (" + std::to_string(view.byteSize()) +
                               " bytes)");
          view.data = tensor.data.get();
          hostCopies[name] = std::move(tensor);
        }
        values[name] = Value{view, nullptr};
        return view.data;
      };
    auto started = std::chrono::steady_clock::now();
    Status status = anySizedByData ? partition.run(nodeInputs, nodeOutputs, allocate)
                                   : partition.run(nodeInputs, nodeOutputs);
    if (profile_) {
      PartitionProfile &entry = profile_->partitions[n];
      entry.nanoseconds += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                        std::chrono::steady_clock::now() - started)
                                        .count());
      ++entry.runs;
    }
    if (!status.isOk())
      return Status::error(status.code(), path + ": " + status.message());
    for (const std::string &name : node.outputs)
      if (!values.count(name))
        return Status::error(StatusCode::Internal, path + ": node '" + node.name +
                                                       "' did not produce output '" + name + "'");
  }

  // Requested outputs not yet in place: a value still on a device, one the
  // session allocated, a graph input passed through, or a folded constant.
  for (RunOutput &output : outputs) {
    const TensorSignature &sig = model_.outputs[output.index];
    if (sig.kind != ValueKind::Tensor) {
      // Made by a partition (handed over), or a graph input passed through.
      auto made = containers.find(sig.name);
      auto value = values.find(sig.name);
      if (made != containers.end())
        output.sequence = made->second;
      else if (value != values.end())
        output.sequence = std::make_shared<SequenceValue>(
            *static_cast<const SequenceValue *>(value->second.view.data));
      else
        return Status::error(StatusCode::Internal,
                             path + ": output '" + sig.name + "' was not produced");
      continue;
    }
    Value source;
    const char *constantBytes = nullptr;
    auto value = values.find(sig.name);
    if (value != values.end()) {
      source = value->second;
      if (output.into && !source.device && source.view.data == output.into->data)
        continue; // written in place by its partition
      auto owned = hostCopies.find(sig.name);
      if (!output.into && !source.device && owned != hostCopies.end()) {
        output.result = owned->second; // hand over without a copy
        continue;
      }
    } else {
      // loadContextModel checked that each constant holds what its dims need.
      for (const ContextConstant &constant : model_.constants)
        if (constant.signature.name == sig.name) {
          source.view = TensorView{nullptr, constant.signature.type, constant.signature.shape};
          constantBytes = constant.data;
          break;
        }
      if (!constantBytes && source.view.type == ElementType::Undefined)
        return Status::error(StatusCode::Internal,
                             path + ": output '" + sig.name + "' was not produced");
    }

    void *destination;
    if (output.into) {
      if (Status s = checkCallerBuffer(sig.name, *output.into, source.view); !s.isOk())
        return invalid(s.message());
      destination = output.into->data;
    } else {
      output.result = OwnedTensor::allocate(source.view.type, source.view.shape);
      if (!output.result.data)
        return outOfMemory("output '" + sig.name + "'");
      destination = output.result.data.get();
    }
    size_t bytes = source.view.byteSize();
    if (source.device) {
      if (Status s = copyToHost(source, destination); !s.isOk())
        return invalid("copying output '" + sig.name + "' to the host: " + s.message());
    } else if (bytes) {
      std::memcpy(destination, constantBytes ? constantBytes : source.view.data, bytes);
    }
  }
  return Status::ok();
}

} // namespace ortc
