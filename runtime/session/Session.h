//===- Session.h - run a compiled EPContext model ----------------*- C++ -*-===//
//
// Loads model_ctx.onnx (ContextModel.h), hands every EPContext node to the EP
// that holds its `source` key (load_context), and runs the nodes in order,
// copying values between the host and device EPs where partitions meet.
// Nothing is recompiled: the EPs load their blobs as written.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_SESSION_SESSION_H
#define ORTC_RUNTIME_SESSION_SESSION_H

#include "runtime/ep/EpRegistry.h"
#include "runtime/ep/SequenceValue.h"
#include "runtime/session/ContextModel.h"

#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace ortc {

struct SessionOptions {
  /// Threads one run may use inside an operator: 0 = one per core, 1 = none extra.
  int intraOpThreads = 0;
  /// Per-EP options (EpConfig::options), by EP name or alias. A name the
  /// registry lacks or a key its EP does not list fails the load.
  EpOptionsByEp epOptions;
};

/// One graph output a run produces: written into `into` when the caller gave a
/// buffer (its type and shape must be the output's exactly), else allocated
/// by the session as `result`. A sequence or optional output (its
/// signature's kind) comes as `sequence`; no buffer can be given for it.
struct RunOutput {
  size_t index = 0; // position in Session::outputs()
  std::optional<TensorView> into;
  OwnedTensor result;
  std::shared_ptr<SequenceValue> sequence;
};

/// A loaded model. run() may be called from several threads at once.
class Session {
public:
  /// Loads `path` and every partition in it; sidecars resolve beside `path`.
  static Result<std::unique_ptr<Session>> load(const std::string &path, EpRegistry registry,
                                               const SessionOptions &options = {});
  /// Loads a model held in memory (copied). Sidecars resolve in `baseDir`; an
  /// empty `baseDir` refuses them. `displayName` names the model in messages.
  static Result<std::unique_ptr<Session>> loadFromBuffer(const void *data, size_t size,
                                                         const std::string &displayName,
                                                         const std::string &baseDir,
                                                         EpRegistry registry,
                                                         const SessionOptions &options = {});

  const std::vector<TensorSignature> &inputs() const { return model_.inputs; }
  const std::vector<TensorSignature> &outputs() const { return model_.outputs; }
  const ContextModel &model() const { return model_; }

  /// Runs on `inputs` (in the order of inputs()); returns the graph outputs
  /// in the order of outputs(). Refuses a model with a sequence or optional
  /// output (the overload below gives those).
  Result<std::vector<OwnedTensor>> run(const std::vector<TensorView> &inputs) const;

  /// Runs on `inputs` (in the order of inputs()) and fills `outputs`: any
  /// subset of the graph outputs, each at most once. An input whose
  /// signature is a sequence or an optional is passed as a view whose data
  /// is a SequenceValue (its type the elements', its shape empty).
  Status run(const std::vector<TensorView> &inputs, std::vector<RunOutput> &outputs) const;

  /// Times later runs into `profile` (null: stop), per partition and, where
  /// its EP can, per step; resets it. Call with no run in flight; runs must
  /// not overlap while a profile is attached.
  void attachProfile(RunProfile *profile);

private:
  static Result<std::unique_ptr<Session>> loadPartitions(ContextModel model, EpRegistry registry,
                                                         const SessionOptions &options);
  Status runPartitions(const std::vector<TensorView> &inputs,
                       std::vector<RunOutput> &outputs) const;

  ContextModel model_;
  EpRegistry registry_;
  std::vector<std::unique_ptr<LoadedPartition>> partitions_;
  std::vector<RuntimeEp *> eps_; // the EP of each partition, owned by registry_
  RunProfile *profile_ = nullptr;
};

} // namespace ortc

#endif // ORTC_RUNTIME_SESSION_SESSION_H
