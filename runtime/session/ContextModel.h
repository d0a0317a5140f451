//===- ContextModel.h - reading a compiled EPContext model ------*- C++ -*-===//
//
// The runtime's view of model_ctx.onnx: the graph's input and output
// signatures and its com.microsoft::EPContext nodes in order, each with the
// blob bytes ready for its EP's loadContext. Inline blobs point into the
// parsed model; sidecars are memory-mapped. The ContextModel owns both, so
// every EpContextView stays valid while it (or a copy of it) lives.
//
// Protobuf and runtime/support only: never MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_SESSION_CONTEXTMODEL_H
#define ORTC_RUNTIME_SESSION_CONTEXTMODEL_H

#include "runtime/ep/RuntimeEp.h"
#include "runtime/ep/Status.h"
#include "runtime/ep/Tensor.h"

#include <memory>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
}

namespace ortc {

class MappedFile;

/// One EPContext node.
struct ContextNode {
  std::string name;
  std::vector<std::string> inputs; // graph inputs or earlier nodes' outputs
  std::vector<std::string> outputs;
  bool embedded = true;
  std::string sidecarPath; // the resolved sidecar when !embedded
  std::string notes;
  EpContextView context; // source, partition name, ..., and the bytes
};

/// An initializer: a graph output that the compiler folded to a constant.
struct ContextConstant {
  TensorSignature signature;
  const char *data = nullptr; // little-endian raw data, inside the model
  size_t size = 0;
};

struct ContextModel {
  std::string path;
  std::vector<TensorSignature> inputs; // a symbolic or unknown dim is -1
  std::vector<TensorSignature> outputs;
  std::vector<ContextConstant> constants;
  std::vector<ContextNode> nodes; // in graph order, which is execution order

  /// What the views point into.
  std::shared_ptr<const onnx::ModelProto> proto;
  std::vector<std::shared_ptr<MappedFile>> sidecars;
};

/// Reads the EPContext model at `path`. Refuses, with one line naming the file
/// and the node: an unreadable file or broken protobuf; a node that is not
/// com.microsoft::EPContext; a missing or ill-typed attribute (main_context,
/// ep_cache_context, embed_mode and source are required; ep_sdk_version,
/// hardware_architecture, partition_name and notes must be strings when
/// present); embed_mode other than 0 or 1; main_context other than 1; a
/// sidecar that is missing or not a plain relative path inside the model's
/// folder; a node input that no graph input, initializer or earlier node
/// produces; a value produced twice; a graph output nothing produces; a graph
/// input or output that is not a tensor with a shape; an initializer that is
/// not raw data of the size its type and dims need. A missing model file or
/// sidecar is NotFound; every other refusal is InvalidArgument.
Result<ContextModel> loadContextModel(const std::string &path);

/// The same for a model held in memory (parsed into the ContextModel, so the
/// buffer may go once this returns). `displayName` names it in messages;
/// sidecars resolve in `baseDir`, and an empty `baseDir` refuses them.
Result<ContextModel> loadContextModelFromBuffer(const void *data, size_t size,
                                                const std::string &displayName,
                                                const std::string &baseDir);

} // namespace ortc

#endif // ORTC_RUNTIME_SESSION_CONTEXTMODEL_H
