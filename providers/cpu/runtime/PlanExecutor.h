//===- PlanExecutor.h - runs a CPU EP blob's execution plan -----*- C++ -*-===//
//
// A loaded CPU partition: the verified plan, the generated kernels loaded from
// the blob's shared object, the weights (in place when the blob's bytes are
// 64-byte aligned, as a mapped sidecar is; otherwise the blob is copied once
// to an aligned buffer) and an arena
// sized by the memory plan for the largest batch seen so far.
//
// Everything that can be resolved once is resolved at load: kernel symbols,
// library kernel functions, buffer placement rules. A run binds the batch
// dimension from the inputs, lays the arena out, and walks the steps.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_RUNTIME_PLANEXECUTOR_H
#define ORTC_PROVIDERS_CPU_RUNTIME_PLANEXECUTOR_H

#include "providers/cpu/kernels/KernelApi.h"
#include "runtime/ep/RuntimeEp.h"

#include <memory>
#include <string>
#include <vector>

namespace ortc::cpu {

class LoadedSharedObject;

class PlanExecutor final : public LoadedPartition {
public:
  /// Verifies the blob and prepares it to run. `context.data` must stay valid
  /// for the life of the executor (weights may be used in place).
  static Result<std::unique_ptr<PlanExecutor>> load(const EpContextView &context);
  ~PlanExecutor() override;

  const std::vector<TensorSignature> &inputs() const override { return inputs_; }
  const std::vector<TensorSignature> &outputs() const override { return outputs_; }
  Result<std::vector<std::vector<int64_t>>>
  outputShapes(const std::vector<TensorView> &inputs) const override;
  Status run(const std::vector<TensorView> &inputs,
             const std::vector<TensorView> &outputs) override;

  /// Arena bytes for `batch`; whether the weights are used in place.
  uint64_t arenaBytes(int64_t batch) const;
  bool weightsInPlace() const { return ownedBlob_ == nullptr; }

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

  Result<int64_t> bindBatch(const std::vector<TensorView> &inputs) const;

  std::string what_;
  std::vector<TensorSignature> inputs_, outputs_;
  std::vector<BufferInfo> buffers_;
  std::vector<StepInfo> steps_;
  uint64_t scaledBytes_ = 0, fixedBytes_ = 0;
  std::unique_ptr<LoadedSharedObject> code_;
  const char *weights_ = nullptr;
  char *ownedBlob_ = nullptr; // a 64-byte aligned copy of an unaligned blob
  char *arena_ = nullptr;
  uint64_t arenaCapacity_ = 0;
  Scratch scratch_;
};

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_RUNTIME_PLANEXECUTOR_H
