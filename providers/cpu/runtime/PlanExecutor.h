//===- PlanExecutor.h - runs a CPU EP blob's execution plan -----*- C++ -*-===//
//
// A loaded CPU partition: the verified plan, the generated kernels loaded from
// the blob's shared object, and the weights (in place when the blob's bytes
// are 64-byte aligned, as a mapped sidecar is; otherwise the blob is copied
// once to an aligned buffer). The bodies of its control-flow steps are
// PlanExecutors too (sub-plans), sharing the code and the weights.
//
// Outputs sized by their data: a step that reports an output's shape binds
// the plan's data symbols in it; buffers whose shape reads one are allocated
// when their step runs (per buffer, kept for later runs, so repeated shapes
// allocate nothing), and partition outputs among them through the caller's
// OutputAllocator.
//
// Sequences and optionals (format 5): a container buffer is a SequenceValue
// the run state owns (or, at a sub-plan's boundary, the caller's, passed as
// the view's data); Sequence steps (SequenceSteps.cpp) make and read them,
// If branches and Loop bodies take and give them.
//
// Everything that can be resolved once is resolved at load: kernel symbols,
// library kernel functions, buffer placement rules. A run binds the plan's
// symbols from the inputs' dims, finds the layout for those values (every
// buffer's shape and arena offset; computed once per distinct set of values
// and cached), takes a run state (arena, scratch) from a pool, and walks the
// steps. Runs on several threads at once each hold their own state; what they
// share is read-only or behind a lock.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_RUNTIME_PLANEXECUTOR_H
#define ORTC_PROVIDERS_CPU_RUNTIME_PLANEXECUTOR_H

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/runtime/PlanLimits.h"
#include "runtime/ep/DimExpr.h"
#include "runtime/ep/RuntimeEp.h"
#include "runtime/ep/SequenceValue.h"
#include "runtime/support/BlobContainer.h"

namespace ortc::cpu::fb {
struct Plan;
}

#include <map>
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
                                                    std::shared_ptr<ThreadPool> pool = nullptr,
                                                    const PlanLimits &limits = {});
  ~PlanExecutor() override;

  const std::vector<TensorSignature> &inputs() const override { return inputs_; }
  const std::vector<TensorSignature> &outputs() const override { return outputs_; }
  Result<std::vector<std::vector<int64_t>>>
  outputShapes(const std::vector<TensorView> &inputs) const override;
  Status run(const std::vector<TensorView> &inputs,
             const std::vector<TensorView> &outputs) override;
  Status run(const std::vector<TensorView> &inputs, const std::vector<TensorView> &outputs,
             const OutputAllocator &allocate) override;

  /// Times each step of the root plan (a control-flow step's time includes
  /// its bodies).
  bool profileSteps(std::vector<StepProfile> *steps) override;

  /// Arena bytes a run with these inputs needs; whether the weights are used
  /// in place.
  Result<uint64_t> arenaBytes(const std::vector<TensorView> &inputs) const;
  bool weightsInPlace() const { return ownedBlob_.empty(); }
  /// How many distinct sets of symbol values have a cached layout.
  size_t cachedLayouts() const;

private:
  PlanExecutor() = default;
  /// Everything one plan (the root or a sub-plan) needs; code_ and weights_
  /// are set.
  Status init(const fb::Plan &plan, const EpContextView *context);

  enum class Kind { Input, Output, Weight, Arena, Alias };
  struct BufferInfo {
    Kind kind;
    ElementType type;
    std::vector<int64_t> shape; // d >= 0, or -(k + 1): dim node k
    uint64_t offset = 0;        // Arena: the plan's (static arenas)
    const char *weight = nullptr; // Weight: its bytes, in WGHT or ROWS
    int index = 0;              // Input/Output: signature position; Alias: root buffer
    int firstStep = 0, lastStep = 0; // Arena, when symbolicArena_: live range
    bool dynamic = false;            // the shape reads a data symbol
    ValueKind container = ValueKind::Tensor; // a container: the view's data is its SequenceValue
    std::string name;
  };
  /// Everything that follows from one set of symbol values.
  struct Layout {
    std::vector<int64_t> symbols;             // data symbols: 0 until bound
    std::vector<int64_t> dimValues;           // one per dim node
    std::vector<std::vector<int64_t>> shapes; // one per buffer
    std::vector<uint64_t> offsets;            // Arena buffers: in the arena
    uint64_t arenaBytes = 0;
  };
  enum class StepKind { Kernel, Library, If, Loop, Scan, Sequence };
  /// As the plan format names it (profiles).
  static const char *stepKindName(StepKind kind);
  struct StepInfo {
    StepKind kind = StepKind::Library;
    bool bindsData = false; // an output dim is a data symbol bound here
    std::vector<int> subplans;
    size_t carried = 0; // Loop: carried values
    void (*kernel)(void **) = nullptr;
    int64_t splitDim = -1; // Kernel: the dim its row blocks split (split_dim), or -1
    LibraryKernelFn library = nullptr;
    std::string callee, node, ops;
    std::vector<int> inputs, outputs;
    StepAttributes attrs;
    // Element symbols (Plan.element_symbols) read from an output once the
    // step has run: indices into elementSymbols_.
    std::vector<size_t> elementSymbols;
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
    // Plans with data symbols: this run's symbols and dims as steps bind them,
    // and the memory of the buffers sized then (one block per buffer).
    std::vector<int64_t> symbols, dimValues;
    std::vector<char> bound;
    std::vector<int64_t> shapeScratch, pendingShape; // reused shapes
    struct Block {
      char *data = nullptr;
      uint64_t capacity = 0;
      /// At least `bytes`, 64-byte aligned, the first `keep` bytes kept; false
      /// when out of memory.
      bool reserve(uint64_t bytes, uint64_t keep = 0);
    };
    std::vector<Block> dynamicMemory;
    std::vector<SequenceValue> containers; // per buffer: the Arena containers
    /// Per control-flow step: the views a body runs with, and for Loop and
    /// Scan the carried values of two iterations (one read, one written) and
    /// the stacked scan outputs, kept for later runs.
    struct LoopMemory {
      std::vector<TensorView> inputs, outputs, planned, next;
      std::vector<std::vector<int64_t>> scanShapes;
      std::vector<uint64_t> scanBytes;
      std::vector<Block> carried[2];
      std::vector<Block> scans;
      std::vector<Block> slices, stacked; // Scan: one step of each input; outputs in order
      std::vector<SequenceValue> sequences[2]; // Loop: carried containers, as `carried`
      /// Sizes the per-run record for `carried` values and `scans` outputs.
      void begin(size_t carriedValues, size_t scanOutputs);
      /// Memory for carried value `i` as iteration `index` makes it: the
      /// block the previous iteration did not write; next[i] becomes it.
      /// nullptr when out of memory.
      void *carry(size_t i, int64_t index, ElementType type, const std::vector<int64_t> &shape,
                  uint64_t bytes);
      /// Memory for scan value `k` of iteration `index`, appended to the
      /// others; nullptr with `why` set when the shape changed, the values
      /// stacked so far would pass `maxBytes` or memory ran out.
      void *appendScan(size_t k, int64_t index, const std::vector<int64_t> &shape, uint64_t bytes,
                       const char *unit, uint64_t maxBytes, std::string &why);
    };
    std::map<size_t, LoopMemory> loops;
    ~RunState();
  };
  class StepSizer;

  /// Checks the inputs against the signatures and returns their layout.
  Result<std::shared_ptr<const Layout>> bind(const std::vector<TensorView> &inputs) const;
  Result<std::shared_ptr<const Layout>> computeLayout(const std::vector<int64_t> &symbols) const;
  Status checkOutputs(const std::vector<TensorView> &outputs, const Layout &layout,
                      const OutputAllocator *allocate) const;
  std::vector<int64_t> evaluate(const std::vector<int64_t> &shape,
                                const std::vector<int64_t> &dimValues) const;
  std::unique_ptr<RunState> acquireState();
  void releaseState(std::unique_ptr<RunState> state);
  Status runSteps(RunState &state, const std::vector<TensorView> &inputs,
                  const std::vector<TensorView> &outputs, const Layout &layout,
                  const OutputAllocator *allocate) const;
  /// A Kernel step with a split_dim, run as row blocks of that dim on the
  /// pool (each block: the descriptors in `words` with the spanning operands'
  /// aligned pointer moved to the block and the dim's size cut to it);
  /// false (nothing run) when there is no pool, too little work, or shapes
  /// the kernel was not compiled for.
  bool runSplitKernel(const StepInfo &step, const std::vector<TensorView> &views,
                      const std::vector<int64_t> &words, const std::vector<size_t> &starts) const;
  /// One step; `anyLate`: some buffers are sized or placed as the run goes.
  Status runStep(RunState &state, const StepInfo &step, const Layout &layout, bool anyLate,
                 const OutputAllocator *allocate) const;
  /// Binds the data symbols among buffer `id`'s dims from `shape`, checks
  /// the others, and gives the buffer its memory.
  /// Binds element symbols `which` (indices into elementSymbols_) from their
  /// buffers' data, then re-evaluates the dims and makes the checks that wait
  /// for them; `node` names the step for a refusal.
  Status bindElementSymbols(RunState &state, const std::vector<size_t> &which,
                            const std::string &node) const;
  /// After symbols were bound: evaluates the dims again and makes the data
  /// checks whose symbols are all bound; false with `why` on a refusal (the
  /// caller names where, so a run that passes builds no message).
  bool rebindDims(RunState &state, std::string &why) const;
  Status sizeBuffer(RunState &state, int id, const std::vector<int64_t> &shape,
                    const OutputAllocator *allocate) const;
  Status runIf(RunState &state, const StepInfo &step, const OutputAllocator *allocate) const;
  Status runLoop(RunState &state, const StepInfo &step, const OutputAllocator *allocate) const;
  Status runScan(RunState &state, const StepInfo &step, const OutputAllocator *allocate) const;
  /// Writes `value` into step output `id`: sized now when the data sizes it,
  /// else checked against the plan's shape. A container is assigned.
  Status produce(RunState &state, const StepInfo &step, int id, const TensorView &value,
                 const OutputAllocator *allocate) const;
  /// The memory of tensor output `id` of `shape`: sized now when the data
  /// sizes it, else checked against the plan's; refuses another element type.
  Result<void *> outputTensor(RunState &state, const StepInfo &step, int id, ElementType type,
                              const std::vector<int64_t> &shape,
                              const OutputAllocator *allocate) const;
  /// A Sequence step (SequenceSteps.cpp).
  Status runSequence(RunState &state, const StepInfo &step, const OutputAllocator *allocate) const;
  std::string symbolText(const std::vector<int64_t> &symbols) const;

  std::string what_;
  std::vector<TensorSignature> inputs_, outputs_;            // symbolic dims as -1
  std::vector<std::vector<int64_t>> inputDims_, outputDims_; // as BufferInfo::shape
  std::vector<BufferInfo> buffers_;
  std::vector<StepInfo> steps_;
  std::vector<DimNode> dims_;
  std::vector<std::string> symbolNames_;
  // Dims a kernel takes as equal (Plan.checks): verified per layout.
  struct DimCheck {
    int64_t a, b;
    std::string what;
    std::vector<size_t> dataSymbols; // made once a step has bound these
  };
  std::vector<DimCheck> checks_;
  // Symbols bound from input data (Plan.value_symbols).
  struct ValueSymbol {
    uint32_t symbol, input, element;
  };
  std::vector<ValueSymbol> valueSymbols_;
  // Data symbols read from a computed small integer buffer (its root) after
  // the step that writes it (StepInfo::elementSymbols), or at the start of a
  // run for an input buffer (startElementSymbols_).
  struct ElementSymbol {
    uint32_t symbol, buffer, element;
  };
  std::vector<ElementSymbol> elementSymbols_;
  std::vector<size_t> startElementSymbols_;
  // Symbols steps bind (Plan.data_symbols), dim nodes that read one, and
  // the checks that then wait for them.
  std::vector<char> isDataSymbol_, readsData_;
  std::vector<char> shapeSymbols_; // read by a shape or a check: they key the layouts
  std::vector<DimCheck> dataChecks_;
  std::vector<std::unique_ptr<PlanExecutor>> subplans_;
  // Where each symbol is bound from: the first input dim that is it alone.
  std::vector<std::pair<int, int>> symbolSources_;
  // Input dims that are expressions rather than one symbol: (input, dim),
  // checked against the layout after binding.
  std::vector<std::pair<int, int>> derivedInputDims_;
  bool symbolicArena_ = false; // the arena is laid out per set of symbols
  uint64_t fixedBytes_ = 0;
  PlanLimits limits_;
  std::shared_ptr<const Layout> staticLayout_; // a plan without symbols
  mutable std::mutex layoutMutex_;
  mutable std::map<std::vector<int64_t>, std::shared_ptr<const Layout>> layouts_;
  std::shared_ptr<LoadedSharedObject> code_;
  const char *weights_ = nullptr;
  const char *rows_ = nullptr; // ROWS: the tables Gathers read row by row
  OwnedBlobBytes ownedBlob_; // the verified, page-aligned copy of an unaligned blob
  std::shared_ptr<ThreadPool> pool_;
  std::mutex idleMutex_;
  std::vector<std::unique_ptr<RunState>> idle_; // states no run holds now
  std::vector<StepProfile> *profile_ = nullptr;  // one entry per step while profiling
};

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_RUNTIME_PLANEXECUTOR_H
