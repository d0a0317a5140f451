//===- PlanRunner.h - one loaded CUDA partition -----------------*- C++ -*-===//
//
// Loading verifies the blob, loads its code on the device (the cubin for the
// device's architecture, else the PTX, or the source on the emulator),
// resolves every kernel and uploads the weights. A run binds the dims from
// the inputs' shapes, sizes the intermediates (kept between runs and grown
// when a shape needs more), and issues the steps in order on the device's
// stream: each launch's grid follows its output's element count. Tensors
// are device pointers.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_RUNTIME_PLANRUNNER_H
#define ORTC_PROVIDERS_CUDA_RUNTIME_PLANRUNNER_H

#include "runtime/ep/DimBinding.h"
#include "runtime/ep/RuntimeEp.h"
#include "runtime/support/BlobContainer.h"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ortc::cuda {

class CudaDevice;
class CudaModule;

class PlanRunner final : public LoadedPartition {
public:
  static Result<std::unique_ptr<PlanRunner>> load(const EpContextView &context,
                                                  std::shared_ptr<CudaDevice> device);
  ~PlanRunner() override;

  const std::vector<TensorSignature> &inputs() const override { return binding_.inputs(); }
  const std::vector<TensorSignature> &outputs() const override { return outputs_; }
  Result<std::vector<std::vector<int64_t>>>
  outputShapes(const std::vector<TensorView> &inputs) const override;
  Status run(const std::vector<TensorView> &inputs, const std::vector<TensorView> &outputs) override;

private:
  PlanRunner() = default;

  enum class Kind { Input, Output, Weight, Arena, Alias };
  struct Buffer {
    Kind kind = Kind::Arena;
    ElementType type = ElementType::Undefined;
    std::vector<int64_t> dims; // codes (DimBinding)
    uint32_t index = 0;        // Input, Output
    uint64_t offset = 0;       // Weight: in the uploaded weights
    int aliasOf = -1;
    std::string name;
  };
  enum class StepKind { Launch, Copy, Gemm, Conv, Pool };
  struct Step {
    StepKind kind = StepKind::Launch;
    void *function = nullptr;
    std::string node;
    std::vector<int> inputs, outputs;
    unsigned threadsPerBlock = 0, maxBlocks = 0;
    std::vector<int64_t> gridDims; // a reduction: one block per element of their product
    bool transA = false, transB = false; // Gemm
    float alpha = 1;
    int compute = 0;
    std::vector<int64_t> window; // Conv, Pool: see CudaPlan.fbs
    int autoPad = 0;
    bool ceilMode = false;
    int64_t group = 1;
    bool hasKernel = false;
    size_t index = 0; // in steps_, for its scratch memory
  };

  /// One Conv or Pool step.
  Status runWindow(const Step &step, const std::vector<void *> &address,
                   const std::vector<std::vector<int64_t>> &shape);
  /// Scratch memory of step `index` of at least `bytes`, kept between runs.
  Result<void *> scratch(size_t index, size_t bytes);

  /// Refuses a run in which a view's element count differs from the bytes
  /// it shares (a computed Reshape target that does not fit).
  Status checkViews(const std::vector<int64_t> &values) const;

  /// Reads the elements of this run's small integer inputs that bind value
  /// symbols (a computed Reshape target) from the device.
  DimBinding::ValueReader valueReader(const std::vector<TensorView> &inputs) const;

  /// One GEMM step with this run's shapes and addresses.
  Status runGemm(const Step &step, const std::vector<void *> &address,
                 const std::vector<std::vector<int64_t>> &shape);

  std::string what_;
  std::shared_ptr<CudaDevice> device_;
  std::unique_ptr<CudaModule> module_;
  DimBinding binding_;
  std::vector<TensorSignature> outputs_;
  std::vector<std::vector<int64_t>> outputDims_;
  std::vector<Buffer> buffers_;
  std::vector<Step> steps_;
  void *weights_ = nullptr;

  // Intermediates, one allocation per arena buffer, kept between runs.
  std::mutex runMutex_;
  std::vector<void *> arena_;
  std::vector<size_t> arenaBytes_;
  std::vector<void *> scratch_; // per step (im2col columns)
  std::vector<size_t> scratchBytes_;
};

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_RUNTIME_PLANRUNNER_H
