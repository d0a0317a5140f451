//===- Session.h - run a compiled EPContext model ----------------*- C++ -*-===//
//
// Loads model_ctx.onnx (ContextModel.h), hands every EPContext node to the EP
// that holds its `source` key (load_context), and runs the nodes in order on
// host tensors. Nothing is recompiled: the EPs load their blobs as written.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_SESSION_SESSION_H
#define ORTC_RUNTIME_SESSION_SESSION_H

#include "runtime/ep/EpRegistry.h"
#include "runtime/session/ContextModel.h"

#include <memory>
#include <string>
#include <vector>

namespace ortc {

/// A host tensor the session allocated (64-byte aligned).
struct OwnedTensor {
  std::shared_ptr<char> data;
  ElementType type = ElementType::Undefined;
  std::vector<int64_t> shape;

  static OwnedTensor allocate(ElementType type, std::vector<int64_t> shape);
  TensorView view() const { return TensorView{data.get(), type, shape}; }
};

/// The EPs this runtime build has (today: the CPU EP), registered by their
/// context source keys.
Result<EpRegistry> createDefaultEpRegistry();

class Session {
public:
  /// Loads `path` and every partition in it.
  static Result<std::unique_ptr<Session>> load(const std::string &path, EpRegistry registry);

  const std::vector<TensorSignature> &inputs() const { return model_.inputs; }
  const std::vector<TensorSignature> &outputs() const { return model_.outputs; }
  const ContextModel &model() const { return model_; }

  /// Runs on `inputs` (in the order of inputs()); returns the graph outputs
  /// in the order of outputs().
  Result<std::vector<OwnedTensor>> run(const std::vector<TensorView> &inputs);

private:
  ContextModel model_;
  EpRegistry registry_;
  std::vector<std::unique_ptr<LoadedPartition>> partitions_;
};

} // namespace ortc

#endif // ORTC_RUNTIME_SESSION_SESSION_H
