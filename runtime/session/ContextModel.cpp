//===- ContextModel.cpp ---------------------------------------------------===//

#include "runtime/session/ContextModel.h"

#include "runtime/ep/DimExpr.h"

#include "runtime/support/ExternalData.h"
#include "runtime/support/ModelFile.h"

#include "onnx/onnx_pb.h"

#include <cerrno>
#include <map>
#include <set>
#include <sys/stat.h>

namespace ortc {
namespace {

Status invalid(const std::string &message) {
  return Status::error(StatusCode::InvalidArgument, message);
}

Result<ContextModel> buildContextModel(std::shared_ptr<onnx::ModelProto> proto,
                                       const std::string &path, const std::string &modelDir);

// A graph input or output as a signature; false with `why` when it is not a
// tensor with a known element type and rank.
bool readSignature(const onnx::ValueInfoProto &info, TensorSignature &signature, std::string &why) {
  signature.name = info.name();
  if (info.name().empty()) {
    why = "has no name";
    return false;
  }
  // A sequence of tensors, or an optional of a tensor or of such a
  // sequence: the signature has the tensors' element type and no shape.
  const onnx::TypeProto *inner = &info.type();
  if (inner->has_sequence_type()) {
    signature.kind = ValueKind::Sequence;
    inner = &inner->sequence_type().elem_type();
  } else if (inner->has_optional_type()) {
    inner = &inner->optional_type().elem_type();
    signature.kind = ValueKind::OptionalTensor;
    if (inner->has_sequence_type()) {
      signature.kind = ValueKind::OptionalSequence;
      inner = &inner->sequence_type().elem_type();
    }
  }
  if (signature.kind != ValueKind::Tensor) {
    if (!inner->has_tensor_type() || inner->tensor_type().elem_type() == 0) {
      why = "is a sequence or optional of something other than typed tensors";
      return false;
    }
    signature.type = static_cast<ElementType>(inner->tensor_type().elem_type());
    return true;
  }
  if (!info.type().has_tensor_type()) {
    why = "is not a tensor, a sequence of tensors or an optional";
    return false;
  }
  const onnx::TypeProto::Tensor &tensor = info.type().tensor_type();
  if (tensor.elem_type() == 0) {
    why = "has no element type";
    return false;
  }
  signature.type = static_cast<ElementType>(tensor.elem_type());
  if (!tensor.has_shape()) {
    why = "has no shape (unknown rank)";
    return false;
  }
  bool named = false;
  for (const auto &dim : tensor.shape().dim()) {
    bool dynamic = !(dim.has_dim_value() && dim.dim_value() >= 0);
    signature.shape.push_back(dynamic ? -1 : dim.dim_value());
    bool symbol = dynamic && dimParamNamesSymbol(dim.dim_param());
    signature.dimNames.push_back(symbol ? dim.dim_param() : "");
    named |= !signature.dimNames.back().empty();
  }
  if (!named)
    signature.dimNames.clear();
  return true;
}

} // namespace

Result<ContextModel> loadContextModel(const std::string &path) {
  auto proto = std::make_shared<onnx::ModelProto>();
  std::string error;
  bool missing = false;
  if (!readModelFile(path, *proto, error, &missing))
    return Status::error(missing ? StatusCode::NotFound : StatusCode::InvalidArgument, error);
  return buildContextModel(std::move(proto), path, modelDirectory(path));
}

Result<ContextModel> loadContextModelFromBuffer(const void *data, size_t size,
                                                const std::string &displayName,
                                                const std::string &baseDir) {
  auto proto = std::make_shared<onnx::ModelProto>();
  std::string error;
  if (!parseModelBuffer(data, size, displayName, *proto, error))
    return invalid(error);
  return buildContextModel(std::move(proto), displayName, baseDir);
}

namespace {

// Reads the parsed model; `path` names it in messages and sidecars resolve in
// `modelDir` (none when empty).
Result<ContextModel> buildContextModel(std::shared_ptr<onnx::ModelProto> proto,
                                       const std::string &path, const std::string &modelDir) {
  std::string error;
  ContextModel model;
  model.path = path;
  const onnx::GraphProto &graph = proto->graph();
  std::set<std::string> produced;

  for (const auto &input : graph.input()) {
    TensorSignature signature;
    if (!readSignature(input, signature, error))
      return invalid(path + ": graph input '" + input.name() + "' " + error);
    if (!produced.insert(input.name()).second)
      return invalid(path + ": graph input '" + input.name() + "' is declared twice");
    model.inputs.push_back(std::move(signature));
  }

  // Graph outputs folded to constants.
  for (const auto &init : graph.initializer()) {
    auto fail = [&](const std::string &what) {
      return invalid(path + ": initializer '" + init.name() + "' " + what);
    };
    ContextConstant constant;
    constant.signature.name = init.name();
    constant.signature.type = static_cast<ElementType>(init.data_type());
    constant.signature.shape.assign(init.dims().begin(), init.dims().end());
    if (init.name().empty())
      return fail("has no name");
    if (!init.has_raw_data() || init.data_location() == onnx::TensorProto::EXTERNAL)
      return fail("is not stored as raw data in the model");
    int64_t count = 1;
    for (int64_t d : constant.signature.shape) {
      if (d < 0)
        return fail("has a negative dimension");
      count *= d;
    }
    if (!isKnownElementType(constant.signature.type) ||
        init.raw_data().size() != tensorBytes(constant.signature.type, count))
      return fail("holds " + std::to_string(init.raw_data().size()) + " bytes of " +
                  elementTypeName(constant.signature.type) + ", not what its dims need");
    constant.data = init.raw_data().data();
    constant.size = init.raw_data().size();
    if (!produced.insert(init.name()).second)
      return fail("has the name of a graph input or another initializer");
    model.constants.push_back(std::move(constant));
  }

  std::map<std::string, std::shared_ptr<MappedFile>> mapped; // by resolved path
  for (int n = 0; n < graph.node_size(); ++n) {
    const onnx::NodeProto &nodeProto = graph.node(n);
    std::string where = path + ": node '" +
                        (nodeProto.name().empty() ? "#" + std::to_string(n) : nodeProto.name()) +
                        "'";
    auto fail = [&](const std::string &what) { return invalid(where + ": " + what); };
    if (nodeProto.domain() != "com.microsoft" || nodeProto.op_type() != "EPContext")
      return fail("is " +
                  (nodeProto.domain().empty() ? std::string("ai.onnx") : nodeProto.domain()) +
                  "::" + nodeProto.op_type() +
                  ", not com.microsoft::EPContext; this runtime runs compiled models only");

    ContextNode node;
    node.name = nodeProto.name();
    std::map<std::string, const onnx::AttributeProto *> attrs;
    for (const auto &attr : nodeProto.attribute())
      if (!attrs.emplace(attr.name(), &attr).second)
        return fail("attribute '" + attr.name() + "' is given twice");
    auto find = [&](const char *name, onnx::AttributeProto::AttributeType type, bool required,
                    const onnx::AttributeProto *&attr) -> Status {
      auto it = attrs.find(name);
      attr = nullptr;
      if (it == attrs.end())
        return required ? invalid(where + ": missing attribute '" + name + "'") : Status::ok();
      // An attribute without its type field set is read by which value it has.
      bool typed =
          it->second->type() == type ||
          (it->second->type() == onnx::AttributeProto::UNDEFINED &&
           (type == onnx::AttributeProto::INT ? it->second->has_i() : it->second->has_s()));
      if (!typed)
        return invalid(where + ": attribute '" + name + "' must be " +
                       (type == onnx::AttributeProto::INT ? "an int" : "a string"));
      attr = it->second;
      return Status::ok();
    };
    const onnx::AttributeProto *mainContext, *cache, *embedMode, *source, *sdk, *arch, *partition,
        *notes;
    for (Status status : {find("main_context", onnx::AttributeProto::INT, true, mainContext),
                          find("ep_cache_context", onnx::AttributeProto::STRING, true, cache),
                          find("embed_mode", onnx::AttributeProto::INT, true, embedMode),
                          find("source", onnx::AttributeProto::STRING, true, source),
                          find("ep_sdk_version", onnx::AttributeProto::STRING, false, sdk),
                          find("hardware_architecture", onnx::AttributeProto::STRING, false, arch),
                          find("partition_name", onnx::AttributeProto::STRING, false, partition),
                          find("notes", onnx::AttributeProto::STRING, false, notes)})
      if (!status.isOk())
        return status;
    if (mainContext->i() != 1)
      return fail("main_context is " + std::to_string(mainContext->i()) +
                  "; only main contexts (1) are supported");
    if (embedMode->i() != 0 && embedMode->i() != 1)
      return fail("embed_mode is " + std::to_string(embedMode->i()) +
                  "; it must be 1 (inline) or 0 (sidecar file)");
    if (source->s().empty())
      return fail("attribute 'source' is empty");

    node.context.source = source->s();
    node.context.partitionName = partition ? partition->s() : node.name;
    node.context.hardwareArchitecture = arch ? arch->s() : "";
    node.context.epSdkVersion = sdk ? sdk->s() : "";
    node.notes = notes ? notes->s() : "";
    node.embedded = embedMode->i() == 1;
    if (node.embedded) {
      // Points into `proto`, which the ContextModel keeps.
      node.context.data = cache->s().data();
      node.context.size = cache->s().size();
    } else {
      if (modelDir.empty())
        return fail("sidecar '" + cache->s() +
                    "': the model was loaded from memory without a base directory to "
                    "resolve sidecar files in");
      std::string resolved;
      if (!resolveFileBesideModel(modelDir, cache->s(), resolved, error)) {
        struct stat st;
        bool missing = ::lstat((modelDir + "/" + cache->s()).c_str(), &st) != 0 && errno == ENOENT;
        return Status::error(missing ? StatusCode::NotFound : StatusCode::InvalidArgument,
                             where + ": sidecar: " + error);
      }
      auto &file = mapped[resolved];
      if (!file) {
        file = MappedFile::open(resolved, error);
        if (!file)
          return fail("sidecar: " + error);
        model.sidecars.push_back(file);
      }
      node.sidecarPath = resolved;
      node.context.data = file->data();
      node.context.size = static_cast<size_t>(file->size());
      node.context.fileMapping = true;
    }

    for (const std::string &input : nodeProto.input()) {
      if (input.empty())
        return fail("has an empty input name");
      if (!produced.count(input))
        return fail("input '" + input +
                    "' is produced by no graph input, initializer or earlier node");
      node.inputs.push_back(input);
    }
    for (const std::string &output : nodeProto.output()) {
      if (output.empty())
        return fail("has an empty output name");
      if (!produced.insert(output).second)
        return fail("output '" + output + "' is already produced by a graph input or earlier node");
      node.outputs.push_back(output);
    }
    node.context.inputNames = node.inputs;
    node.context.outputNames = node.outputs;
    model.nodes.push_back(std::move(node));
  }

  for (const auto &output : graph.output()) {
    TensorSignature signature;
    if (!readSignature(output, signature, error))
      return invalid(path + ": graph output '" + output.name() + "' " + error);
    if (!produced.count(output.name()))
      return invalid(path + ": graph output '" + output.name() +
                     "' is produced by no graph input, initializer or node");
    model.outputs.push_back(std::move(signature));
  }
  model.proto = std::move(proto);
  return Result<ContextModel>(std::move(model));
}

} // namespace

} // namespace ortc
