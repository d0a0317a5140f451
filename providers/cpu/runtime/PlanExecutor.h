//===- PlanExecutor.h - runs a CPU EP blob's execution plan -----*- C++ -*-===//
//
// A loaded CPU partition: the verified plan, the generated kernels loaded from
// the blob's shared object, and the weights (in place when the blob's bytes
// are 64-byte aligned, as a mapped sidecar is; otherwise the blob is copied
// once to an aligned buffer).
//
// Everything that can be resolved once is resolved at load: kernel symbols,
// library kernel functions, buffer placement rules. A run binds the batch
// dimension from the inputs, takes a run state (an arena sized by the memory
// plan, scratch) from a pool, lays the arena out, and walks the steps. Runs
// on several threads at once each hold their own state; what they share is
// read-only.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_RUNTIME_PLANEXECUTOR_H
#define ORTC_PROVIDERS_CPU_RUNTIME_PLANEXECUTOR_H

#include "providers/cpu/kernels/KernelApi.h"
#include "runtime/ep/RuntimeEp.h"
#include "runtime/support/BlobContainer.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ortc::cpu {

class LoadedSharedObject;
class ThreadPool;

class PlanExecutor final : public LoadedPartition {
public:
  /// Verifies the blob and prepares it to run. `context.data` must stay valid
  /// for the life of the executor (weights may be used in place). Library
  /// kernels share their loops out over `pool` (null: one thread).
  static Result<std::unique_ptr<PlanExecutor>> load(const EpContextView &context,
                                                    std::shared_ptr<ThreadPool> pool = nullptr);
  ~PlanExecutor() override;

  const std::vector<TensorSignature> &inputs() const override { return inputs_; }
  const std::vector<TensorSignature> &outputs() const override { return outputs_; }
  Result<std::vector<std::vector<int64_t>>>
  outputShapes(const std::vector<TensorView> &inputs) const override;
  Status run(const std::vector<TensorView> &inputs,
             const std::vector<TensorView> &outputs) override;

  /// Arena bytes for `batch`; whether the weights are used in place.
  uint64_t arenaBytes(int64_t batch) const;
  bool weightsInPlace() const { return ownedBlob_.empty(); }

private:
  PlanExecutor() = default;

  enum class Kind { Input, Output, Weight, Arena, Alias };
  struct BufferInfo {
    Kind kind;
    ElementType type;
    std::vector<int64_t> shape; // -1: the batch dimension
    uint64_t offset = 0;        // Weight: in weights; Arena: in its region
    bool batchScaled = false;
    int index = 0;              // Input/Output: signature position; Alias: root buffer
    std::string name;
  };
  struct StepInfo {
    bool isKernel = false;
    void (*kernel)(void **) = nullptr;
    LibraryKernelFn library = nullptr;
    std::string callee, node;
    std::vector<int> inputs, outputs;
    StepAttributes attrs;
  };

  /// What one run needs for itself; reused by later runs.
  struct RunState {
    char *arena = nullptr;
    uint64_t capacity = 0;
    Scratch scratch;
    std::vector<TensorView> views, stepInputs, stepOutputs;
    std::vector<int64_t> descriptorWords;
    std::vector<void *> descriptorPointers;
    std::vector<size_t> starts;
    ~RunState();
  };

  Result<int64_t> bindBatch(const std::vector<TensorView> &inputs) const;
  Status checkOutputs(const std::vector<TensorView> &outputs, int64_t batch) const;
  std::unique_ptr<RunState> acquireState();
  void releaseState(std::unique_ptr<RunState> state);
  Status runSteps(RunState &state, const std::vector<TensorView> &inputs,
                  const std::vector<TensorView> &outputs, int64_t batch) const;

  std::string what_;
  std::vector<TensorSignature> inputs_, outputs_;
  std::vector<BufferInfo> buffers_;
  std::vector<StepInfo> steps_;
  uint64_t scaledBytes_ = 0, fixedBytes_ = 0;
  std::unique_ptr<LoadedSharedObject> code_;
  const char *weights_ = nullptr;
  OwnedBlobBytes ownedBlob_; // the verified, page-aligned copy of an unaligned blob
  std::shared_ptr<ThreadPool> pool_;
  std::mutex idleMutex_;
  std::vector<std::unique_ptr<RunState>> idle_; // states no run holds now
};

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_RUNTIME_PLANEXECUTOR_H
