//===- InspectCommand.cpp - ortc inspect ----------------------------------===//
//
//   ortc inspect model_ctx.onnx [--json]
//
// Lists a compiled model's graph inputs and outputs and, per EPContext node,
// its attributes, the EP of this build that would load it, and what its blob
// envelope says. Reads the model with loadContextModel only: no EP loads a
// blob and no code is mapped, so a blob built for another CPU, or a corrupted
// one, can still be inspected (a bad checksum is reported, not refused).
//
//===----------------------------------------------------------------------===//

#include "tools/ortc/CliUtil.h"
#include "tools/ortc/Commands.h"

#include "runtime/session/Session.h"
#include "runtime/support/BlobContainer.h"

#include "onnx/onnx_pb.h"

#include <cstdio>
#include <iostream>
#include <optional>

namespace ortc::cli {

void printInspectHelp() {
  std::cout << R"(Usage: ortc inspect MODEL_ctx.onnx [--json]

Lists a compiled model without loading it: graph inputs and outputs, and per
EPContext node its partition, source and the EP of this build that holds it,
embed mode and sidecar, blob size, hardware architecture, EP SDK version,
inputs and outputs, and the blob envelope (format version, sections, whether
the checksum matches). No code is loaded, so a blob built for another CPU can
be inspected too.

Options:
  --json       Print one JSON object instead of text.
  -h, --help   Show this help.

Exit status: 0 when the model could be read (a corrupted blob is reported,
not an error), 1 when it cannot, 2 for a bad command line.
)";
}

namespace {

/// What inspect shows of one node's blob envelope.
struct EnvelopeReport {
  std::string error; // set when the header cannot be read at all
  BlobDescription blob;
  std::string verified = "ok"; // or why openBlob() refuses the blob
};

EnvelopeReport inspectEnvelope(const ContextNode &node) {
  EnvelopeReport report;
  const std::string what = "partition '" + node.context.partitionName + "'";
  auto withoutPrefix = [&](const std::string &message) {
    return message.compare(0, what.size() + 2, what + ": ") == 0 ? message.substr(what.size() + 2)
                                                                 : message;
  };
  Result<BlobDescription> blob = describeBlob(node.context.data, node.context.size, what);
  if (!blob.isOk()) {
    report.error = withoutPrefix(blob.status().message());
    return report;
  }
  report.blob = blob.takeValue();
  Result<BlobView> opened = openBlob(node.context.data, node.context.size, what);
  if (!opened.isOk())
    report.verified = withoutPrefix(opened.status().message());
  return report;
}

std::string hex(uint64_t value) {
  char buffer[24];
  std::snprintf(buffer, sizeof(buffer), "0x%016llx", static_cast<unsigned long long>(value));
  return buffer;
}

std::string join(const std::vector<std::string> &items) {
  std::string text;
  for (const std::string &item : items)
    text += (text.empty() ? "" : ", ") + item;
  return text;
}

std::string jsonStrings(const std::vector<std::string> &items) {
  std::string text = "[";
  for (size_t i = 0; i < items.size(); ++i)
    text += (i ? ", " : "") + jsonString(items[i]);
  return text + "]";
}

/// Everything inspect shows of one node.
struct NodeReport {
  const ContextNode *node = nullptr;
  std::string ep;      // the EP of this build holding the source, or ""
  std::string sidecar; // as the model names it, when not embedded
  EnvelopeReport envelope;
};

// Which node (or graph input, or constant) produces each graph output.
std::string producerOf(const ContextModel &model, const std::string &name) {
  for (const ContextNode &node : model.nodes)
    for (const std::string &output : node.outputs)
      if (output == name)
        return "node " + node.name;
  for (const TensorSignature &input : model.inputs)
    if (input.name == name)
      return "graph input";
  return "constant";
}

void printSignatures(const std::vector<TensorSignature> &signatures, const ContextModel *model) {
  std::vector<std::vector<std::string>> rows;
  for (const TensorSignature &signature : signatures) {
    rows.push_back(
        {signature.name, elementTypeName(signature.type) + shapeToString(signature.shape)});
    if (model)
      rows.back().push_back("from " + producerOf(*model, signature.name));
  }
  printTable(std::cout, rows);
}

void printText(const ContextModel &model, const std::vector<NodeReport> &nodes) {
  std::cout << "model " << escapeLineBreaks(model.path) << "\n";
  std::cout << "inputs:\n";
  printSignatures(model.inputs, nullptr);
  std::cout << "outputs:\n";
  printSignatures(model.outputs, &model);
  std::cout << "EPContext nodes: " << nodes.size() << "\n";
  for (const NodeReport &report : nodes) {
    const ContextNode &node = *report.node;
    const EpContextView &context = node.context;
    std::cout << "node " << escapeLineBreaks(node.name) << "\n";
    std::vector<std::vector<std::string>> rows = {
        {"partition_name", context.partitionName},
        {"source", context.source + " (" +
                       (report.ep.empty() ? "no EP in this build" : "EP " + report.ep) + ")"},
        {"embed_mode", node.embedded ? "1 (inline)" : "0 (sidecar " + report.sidecar + ")"},
        {"blob size", std::to_string(context.size) + " bytes"},
        {"hardware_architecture", context.hardwareArchitecture},
        {"ep_sdk_version", context.epSdkVersion},
        {"inputs", join(node.inputs)},
        {"outputs", join(node.outputs)}};
    if (!node.notes.empty())
      rows.push_back({"notes", node.notes});
    const EnvelopeReport &envelope = report.envelope;
    if (!envelope.error.empty()) {
      rows.push_back({"envelope", "unreadable: " + envelope.error});
      printTable(std::cout, rows);
      continue;
    }
    const BlobDescription &blob = envelope.blob;
    rows.push_back({"envelope", "version " + std::to_string(blob.version) + ", " +
                                    std::to_string(blob.declaredSize) + " bytes declared, " +
                                    std::to_string(blob.sections.size()) + " sections"});
    rows.push_back({"checksum", blob.checksumMatches()
                                    ? "ok (" + hex(blob.storedChecksum) + ")"
                                    : "MISMATCH (stored " + hex(blob.storedChecksum) +
                                          ", computed " + hex(blob.computedChecksum) + ")"});
    rows.push_back({"verified", envelope.verified});
    printTable(std::cout, rows);
    std::cout << "  sections:\n";
    std::vector<std::vector<std::string>> sections;
    for (const BlobDescription::Section &section : blob.sections)
      sections.push_back({section.tag, "offset " + std::to_string(section.offset),
                          "size " + std::to_string(section.size),
                          "align " + std::to_string(section.alignment) +
                              (section.flags & kBlobSectionReadSparsely ? ", read sparsely" : "")});
    printTable(std::cout, sections, "    ");
  }
}

std::string jsonSignatures(const std::vector<TensorSignature> &signatures,
                           const ContextModel *model) {
  std::string text = "[";
  for (size_t i = 0; i < signatures.size(); ++i) {
    const TensorSignature &signature = signatures[i];
    std::string shape;
    for (int64_t dim : signature.shape)
      shape += (shape.empty() ? "" : ", ") + std::to_string(dim);
    text += std::string(i ? ", " : "") + "{\"name\": " + jsonString(signature.name) +
            ", \"dtype\": " + jsonString(elementTypeName(signature.type)) + ", \"shape\": [" +
            shape + "]";
    if (model)
      text += ", \"from\": " + jsonString(producerOf(*model, signature.name));
    text += "}";
  }
  return text + "]";
}

std::string jsonEnvelope(const EnvelopeReport &envelope) {
  if (!envelope.error.empty())
    return "{\"error\": " + jsonString(envelope.error) + "}";
  const BlobDescription &blob = envelope.blob;
  std::string sections;
  for (const BlobDescription::Section &section : blob.sections)
    sections += std::string(sections.empty() ? "" : ", ") + "{\"tag\": " + jsonString(section.tag) +
                ", \"offset\": " + std::to_string(section.offset) +
                ", \"size\": " + std::to_string(section.size) +
                ", \"alignment\": " + std::to_string(section.alignment) + ", \"read_sparsely\": " +
                (section.flags & kBlobSectionReadSparsely ? "true" : "false") + "}";
  return "{\"version\": " + std::to_string(blob.version) +
         ", \"declared_size\": " + std::to_string(blob.declaredSize) +
         ", \"checksum\": " + (blob.checksumMatches() ? "\"ok\"" : "\"MISMATCH\"") +
         ", \"stored_checksum\": " + jsonString(hex(blob.storedChecksum)) +
         ", \"computed_checksum\": " + jsonString(hex(blob.computedChecksum)) +
         ", \"verified\": " + jsonString(envelope.verified) + ", \"sections\": [" + sections + "]}";
}

void printJson(const ContextModel &model, const std::vector<NodeReport> &nodes) {
  std::string text = "{\"model\": " + jsonString(model.path) +
                     ", \"inputs\": " + jsonSignatures(model.inputs, nullptr) +
                     ", \"outputs\": " + jsonSignatures(model.outputs, &model) + ", \"nodes\": [";
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ContextNode &node = *nodes[i].node;
    const EpContextView &context = node.context;
    text += std::string(i ? ", " : "") + "{\"name\": " + jsonString(node.name) +
            ", \"partition_name\": " + jsonString(context.partitionName) +
            ", \"source\": " + jsonString(context.source) +
            ", \"ep\": " + (nodes[i].ep.empty() ? "null" : jsonString(nodes[i].ep)) +
            ", \"embed_mode\": " + (node.embedded ? "1" : "0") +
            ", \"sidecar\": " + (node.embedded ? "null" : jsonString(nodes[i].sidecar)) +
            ", \"blob_size\": " + std::to_string(context.size) +
            ", \"hardware_architecture\": " + jsonString(context.hardwareArchitecture) +
            ", \"ep_sdk_version\": " + jsonString(context.epSdkVersion) +
            ", \"inputs\": " + jsonStrings(node.inputs) +
            ", \"outputs\": " + jsonStrings(node.outputs) +
            ", \"notes\": " + jsonString(node.notes) +
            ", \"envelope\": " + jsonEnvelope(nodes[i].envelope) + "}";
  }
  std::cout << text << "]}\n";
}

// The sidecar as the node's ep_cache_context names it (the ContextModel
// holds the resolved path). Nodes are the graph's nodes, in order.
std::string sidecarName(const ContextModel &model, size_t index) {
  const onnx::NodeProto &node = model.proto->graph().node(int(index));
  for (const onnx::AttributeProto &attr : node.attribute())
    if (attr.name() == "ep_cache_context")
      return attr.s();
  return model.nodes[index].sidecarPath;
}

} // namespace

int runInspect(const std::vector<std::string> &args) {
  std::string path;
  bool json = false;
  OptionParser parser("inspect", printInspectHelp);
  parser.flag("--json", json);
  parser.model(path);
  if (std::optional<int> exit = parser.parse(args))
    return *exit;

  Result<ContextModel> model = loadContextModel(path);
  if (!model.isOk()) {
    printError(model.status().message());
    return kExitFailed;
  }
  // Only to name the EP holding each source key: nothing is loaded.
  Result<EpRegistry> registry = createBuiltinEpRegistry();
  if (!registry.isOk()) {
    printError(registry.status().message());
    return kExitFailed;
  }
  std::vector<NodeReport> nodes;
  for (size_t i = 0; i < model.value().nodes.size(); ++i) {
    const ContextNode &node = model.value().nodes[i];
    NodeReport report;
    report.node = &node;
    Result<RuntimeEp *> ep = registry.value().findBySource(node.context.source);
    if (ep.isOk())
      report.ep = ep.value()->name();
    if (!node.embedded)
      report.sidecar = sidecarName(model.value(), i);
    report.envelope = inspectEnvelope(node);
    nodes.push_back(std::move(report));
  }
  if (json)
    printJson(model.value(), nodes);
  else
    printText(model.value(), nodes);
  return kExitOk;
}

} // namespace ortc::cli
