//===- Session.cpp - run a compiled EPContext model -----------------------===//

#include "runtime/session/Session.h"

#include "providers/cpu/runtime/CpuRuntimeEp.h"

#include <cstdlib>
#include <cstring>
#include <map>

namespace ortc {

OwnedTensor OwnedTensor::allocate(ElementType type, std::vector<int64_t> shape) {
  OwnedTensor t;
  t.type = type;
  t.shape = std::move(shape);
  size_t bytes = (t.view().byteSize() + 63) / 64 * 64;
  t.data = std::shared_ptr<char>(static_cast<char *>(std::aligned_alloc(64, bytes ? bytes : 64)),
                                 [](char *p) { std::free(p); });
  return t;
}

Result<EpRegistry> createDefaultEpRegistry() {
  EpRegistry registry;
  Status added = registry.add(std::make_shared<cpu::CpuRuntimeEp>());
  if (!added.isOk())
    return added;
  return registry;
}

Result<std::unique_ptr<Session>> Session::load(const std::string &path, EpRegistry registry) {
  Result<ContextModel> model = loadContextModel(path);
  if (!model.isOk())
    return model.status();
  std::unique_ptr<Session> session(new Session());
  session->model_ = model.takeValue();
  session->registry_ = std::move(registry);
  for (const ContextNode &node : session->model_.nodes) {
    Result<RuntimeEp *> ep = session->registry_.findBySource(node.context.source);
    if (!ep.isOk())
      return Status::error(ep.status().code(),
                           path + ": node '" + node.name + "': " + ep.status().message());
    Result<std::unique_ptr<LoadedPartition>> loaded = ep.value()->loadContext(node.context);
    if (!loaded.isOk())
      return Status::error(loaded.status().code(),
                           path + ": " +
                               (node.embedded ? std::string()
                                              : "sidecar " + node.sidecarPath + ": ") +
                               loaded.status().message());
    std::unique_ptr<LoadedPartition> partition = loaded.takeValue();
    if (partition->inputs().size() != node.inputs.size() ||
        partition->outputs().size() != node.outputs.size())
      return Status::error(StatusCode::InvalidArgument,
                           path + ": node '" + node.name + "' has " +
                               std::to_string(node.inputs.size()) + " inputs and " +
                               std::to_string(node.outputs.size()) +
                               " outputs but its blob has " +
                               std::to_string(partition->inputs().size()) + " and " +
                               std::to_string(partition->outputs().size()));
    session->partitions_.push_back(std::move(partition));
  }
  return session;
}

Result<std::vector<OwnedTensor>> Session::run(const std::vector<TensorView> &inputs) {
  const std::string &path = model_.path;
  if (inputs.size() != model_.inputs.size())
    return Status::error(StatusCode::InvalidArgument,
                         path + ": expected " + std::to_string(model_.inputs.size()) +
                             " inputs, got " + std::to_string(inputs.size()));
  std::map<std::string, TensorView> values;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSignature &sig = model_.inputs[i];
    const TensorView &view = inputs[i];
    bool ok = view.type == sig.type && view.shape.size() == sig.shape.size();
    for (size_t d = 0; ok && d < sig.shape.size(); ++d)
      ok = view.shape[d] >= 0 && (sig.shape[d] < 0 || sig.shape[d] == view.shape[d]);
    if (!ok)
      return Status::error(StatusCode::InvalidArgument,
                           path + ": input '" + sig.name + "' must be " +
                               elementTypeName(sig.type) + shapeToString(sig.shape) + ", got " +
                               elementTypeName(view.type) + shapeToString(view.shape));
    values[sig.name] = view;
  }

  std::map<std::string, OwnedTensor> produced;
  for (size_t n = 0; n < partitions_.size(); ++n) {
    const ContextNode &node = model_.nodes[n];
    LoadedPartition &partition = *partitions_[n];
    std::vector<TensorView> nodeInputs;
    for (const std::string &name : node.inputs)
      nodeInputs.push_back(values.at(name));
    Result<std::vector<std::vector<int64_t>>> shapes = partition.outputShapes(nodeInputs);
    if (!shapes.isOk())
      return Status::error(shapes.status().code(), path + ": " + shapes.status().message());
    std::vector<TensorView> nodeOutputs;
    for (size_t i = 0; i < node.outputs.size(); ++i) {
      OwnedTensor tensor =
          OwnedTensor::allocate(partition.outputs()[i].type, shapes.value()[i]);
      nodeOutputs.push_back(tensor.view());
      values[node.outputs[i]] = tensor.view();
      produced[node.outputs[i]] = std::move(tensor);
    }
    Status status = partition.run(nodeInputs, nodeOutputs);
    if (!status.isOk())
      return Status::error(status.code(), path + ": " + status.message());
  }

  // Outputs: what a node produced, else a graph input passed through or a
  // constant the compiler folded; those two are copied so the caller owns
  // every output alike.
  std::vector<OwnedTensor> outputs;
  for (const TensorSignature &sig : model_.outputs) {
    auto found = produced.find(sig.name);
    if (found != produced.end()) {
      outputs.push_back(found->second);
      continue;
    }
    const char *bytes = nullptr;
    TensorView source;
    auto value = values.find(sig.name);
    if (value != values.end()) {
      source = value->second;
      bytes = static_cast<const char *>(source.data);
    } else {
      for (const ContextConstant &constant : model_.constants)
        if (constant.signature.name == sig.name) {
          source = TensorView{nullptr, constant.signature.type, constant.signature.shape};
          bytes = constant.data;
          if (source.byteSize() != constant.size)
            return Status::error(StatusCode::InvalidArgument,
                                 path + ": constant output '" + sig.name + "' holds " +
                                     std::to_string(constant.size) + " bytes, expected " +
                                     std::to_string(source.byteSize()));
        }
    }
    if (!bytes && source.byteSize() == 0 && source.type == ElementType::Undefined)
      return Status::error(StatusCode::Internal,
                           path + ": output '" + sig.name + "' was not produced");
    OwnedTensor copy = OwnedTensor::allocate(source.type, source.shape);
    if (source.byteSize())
      std::memcpy(copy.data.get(), bytes, source.byteSize());
    outputs.push_back(std::move(copy));
  }
  return outputs;
}

} // namespace ortc
