//===- PlanRunner.h - one loaded CUDA partition -----------------*- C++ -*-===//
//
// Loading verifies the blob, loads its code on the device (the cubin for the
// device's architecture, else the PTX, or the source on the emulator),
// resolves every kernel and uploads the weights. A run binds the dims from
// the inputs' shapes, lays the intermediates out in the partition's arena
// (the blob's offsets, or, with symbolic dims, the same planner once per
// set of dim values), and issues the steps in order on the device's stream:
// each launch's grid follows its output's element count. The arena is one
// block of the EP's memory pool, kept between runs and grown when a shape
// needs more. Tensors are device pointers.
//
// CUDA graphs: the first run with a set of dim values and input and output
// addresses is captured into a graph and launched; a later run with the
// same ones replays it. A capture that fails (the device cannot capture a
// call) turns graphs off for the partition, and it runs on the stream.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CUDA_RUNTIME_PLANRUNNER_H
#define ORTC_PROVIDERS_CUDA_RUNTIME_PLANRUNNER_H

#include "runtime/ep/DimBinding.h"
#include "runtime/ep/RuntimeEp.h"
#include "runtime/support/BlobContainer.h"

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace ortc::cuda {

class CudaDevice;
class CudaGraph;
class CudaModule;
class DeviceMemoryPool;

class PlanRunner final : public LoadedPartition {
public:
  struct Options {
    bool graphs = true;
  };
  static Result<std::unique_ptr<PlanRunner>> load(const EpContextView &context,
                                                  std::shared_ptr<DeviceMemoryPool> pool,
                                                  Options options);
  ~PlanRunner() override;

  /// How the runs went (for tests).
  struct Stats {
    size_t graphsCaptured = 0, graphReplays = 0, streamRuns = 0;
    std::string graphsOff; // why graphs are off, when they are
    uint64_t arenaBytes = 0; // the arena block this partition holds
  };
  Stats stats() const;

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
    uint64_t offset = 0;       // Weight: in the uploaded weights; Arena: in a static arena
    int aliasOf = -1;
    std::string name;
    int firstStep = 0, lastStep = 0; // Arena: its live range
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
    int epilogue = 0; // GemmCall::Epilogue
    std::vector<int64_t> window; // Conv, Pool: see CudaPlan.fbs
    int autoPad = 0;
    bool ceilMode = false;
    int64_t group = 1;
    bool hasKernel = false;
    int scratch = -1; // Conv: the arena buffer of its column matrix
  };
  /// Each buffer's offset in the arena, and the arena's size, for one set
  /// of dim values.
  struct Layout {
    std::vector<uint64_t> offsets;
    uint64_t bytes = 0;
  };
  /// A captured run: the dim values and every input's and output's address.
  using GraphKey = std::pair<std::vector<int64_t>, std::vector<void *>>;

  /// The layout for `values` (under runMutex_).
  Result<const Layout *> layoutFor(const std::vector<int64_t> &values);
  /// Issues every step on the stream (or into the capture).
  Status issueSteps(const std::vector<void *> &address,
                    const std::vector<std::vector<int64_t>> &shape,
                    const std::vector<int64_t> &values);
  /// One Conv or Pool step.
  Status runWindow(const Step &step, const std::vector<void *> &address,
                   const std::vector<std::vector<int64_t>> &shape);

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
  std::shared_ptr<DeviceMemoryPool> pool_;
  std::shared_ptr<CudaDevice> device_;
  std::unique_ptr<CudaModule> module_;
  DimBinding binding_;
  std::vector<TensorSignature> outputs_;
  std::vector<std::vector<int64_t>> outputDims_;
  std::vector<Buffer> buffers_;
  std::vector<Step> steps_;
  void *weights_ = nullptr;
  Options options_;
  bool symbolicArena_ = false;
  uint64_t arenaAlignment_ = 256;
  Layout staticLayout_;

  // Run state, under runMutex_.
  mutable std::mutex runMutex_;
  std::map<std::vector<int64_t>, Layout> layouts_; // symbolic arenas, by dim values
  void *arena_ = nullptr;                          // from pool_
  size_t arenaBytes_ = 0;
  std::map<GraphKey, std::unique_ptr<CudaGraph>> graphs_; // captured with arena_
  Stats stats_;
};

} // namespace ortc::cuda

#endif // ORTC_PROVIDERS_CUDA_RUNTIME_PLANRUNNER_H
