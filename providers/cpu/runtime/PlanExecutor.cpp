//===- PlanExecutor.cpp - runs a CPU EP blob's execution plan -------------===//

#include "providers/cpu/runtime/PlanExecutor.h"

#include "providers/cpu/blob/CpuBlob.h"
#include "runtime/ep/MemoryPlanner.h"
#include "providers/cpu/kernels/ThreadPool.h"
#include "providers/cpu/runtime/HostCpu.h"
#include "providers/cpu/runtime/SharedObjectLoader.h"

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>

namespace ortc::cpu {

namespace {
constexpr uint64_t kAlignment = 64;

std::vector<int64_t> toVector(const flatbuffers::Vector<int64_t> *values) {
  std::vector<int64_t> out;
  if (values)
    out.assign(values->begin(), values->end());
  return out;
}

/// The symbols dim expressions read, walked with a stack and each node
/// visited once per walk: a blob's dims may nest deeper than the call stack
/// goes, and a shared operand would be walked once per path.
class SymbolReads {
public:
  explicit SymbolReads(const std::vector<DimNode> &dims) : dims_(dims), seen_(dims.size(), 0) {}

  /// Appends to `out` the symbols k with isSymbol[k] that node `root` reads
  /// and `out` lacks, operand a before b.
  void collect(size_t root, const std::vector<char> &isSymbol, std::vector<size_t> &out) {
    ++walk_; // 64 bits: never wraps, so no mark needs clearing
    stack_.assign(1, root);
    while (!stack_.empty()) {
      size_t n = stack_.back();
      stack_.pop_back();
      if (seen_[n] == walk_)
        continue;
      seen_[n] = walk_;
      const DimNode &node = dims_[n];
      if (node.op == DimOp::Symbol) {
        size_t k = size_t(node.a);
        if (isSymbol[k] && std::find(out.begin(), out.end(), k) == out.end())
          out.push_back(k);
      } else if (node.op != DimOp::Const) {
        stack_.push_back(size_t(node.b));
        stack_.push_back(size_t(node.a));
      }
    }
  }

private:
  const std::vector<DimNode> &dims_;
  std::vector<uint64_t> seen_;
  uint64_t walk_ = 0;
  std::vector<size_t> stack_;
};

std::string describe(const TensorView &view) {
  return elementTypeName(view.type) + shapeToString(view.shape);
}
std::string describe(const TensorSignature &sig) {
  return elementTypeName(sig.type) + shapeToString(sig.shape);
}
std::string arenaLimitText(uint64_t bytes, uint64_t limit) {
  return "the plan's memory arena needs " + std::to_string(bytes) +
         " bytes, over the session's limit of " + std::to_string(limit) +
         " (the CPU EP option max_arena_bytes raises it)";
}

/// The refusal of `bytes` for `name` over `limit` (PlanLimits::
/// maxTensorBytes). Callers compare first: layouts are computed per run.
std::string tensorLimitText(const std::string &name, uint64_t bytes, uint64_t limit) {
  return name + " needs " + std::to_string(bytes) + " bytes, over the session's limit of " +
         std::to_string(limit) + " for one tensor (the CPU EP option max_tensor_bytes raises it)";
}

} // namespace

PlanExecutor::~PlanExecutor() = default;

PlanExecutor::RunState::~RunState() {
  std::free(arena);
  for (Block &block : dynamicMemory)
    std::free(block.data);
  for (auto &[step, loop] : loops) {
    for (auto &slots : loop.carried)
      for (Block &block : slots)
        std::free(block.data);
    for (auto *blocks : {&loop.scans, &loop.slices, &loop.stacked})
      for (Block &block : *blocks)
        std::free(block.data);
  }
}

bool PlanExecutor::RunState::Block::reserve(uint64_t bytes, uint64_t keep) {
  if (bytes <= capacity)
    return true;
  uint64_t rounded = (std::max(bytes, capacity * 2) + kAlignment - 1) / kAlignment * kAlignment;
  char *grown = static_cast<char *>(std::aligned_alloc(kAlignment, rounded));
  if (!grown)
    return false;
  if (keep && data)
    std::memcpy(grown, data, std::min(keep, capacity));
  std::free(data);
  data = grown;
  capacity = rounded;
  return true;
}

void PlanExecutor::RunState::LoopMemory::begin(size_t carriedValues, size_t scanOutputs) {
  for (auto &slots : carried)
    slots.resize(carriedValues);
  next.resize(carriedValues);
  scans.resize(scanOutputs);
  scanShapes.resize(scanOutputs);
  scanBytes.assign(scanOutputs, 0);
}

void *PlanExecutor::RunState::LoopMemory::carry(size_t i, int64_t index, ElementType type,
                                                const std::vector<int64_t> &shape,
                                                uint64_t bytes) {
  Block &block = carried[index % 2][i];
  if (!block.reserve(std::max<uint64_t>(bytes, 1)))
    return nullptr;
  // Assigned in place: no allocation once the shape has been seen.
  next[i].data = block.data;
  next[i].type = type;
  next[i].shape = shape;
  return block.data;
}

void *PlanExecutor::RunState::LoopMemory::appendScan(size_t k, int64_t index,
                                                     const std::vector<int64_t> &shape,
                                                     uint64_t bytes, const char *unit,
                                                     uint64_t maxBytes, std::string &why) {
  if (index == 0) {
    scanShapes[k] = shape;
    scanBytes[k] = bytes;
  } else if (shape != scanShapes[k]) {
    why = "scan output " + std::to_string(k) + " is " + shapeToString(shape) + " at " + unit +
          " " + std::to_string(index) + ", " + shapeToString(scanShapes[k]) +
          " before; ONNX stacks values of one shape";
    return nullptr;
  }
  uint64_t offset = uint64_t(index) * bytes, end = 0;
  if (__builtin_add_overflow(offset, bytes, &end))
    end = UINT64_MAX;
  if (end > maxBytes) {
    why = tensorLimitText("scan output " + std::to_string(k) + " after " +
                              std::to_string(index + 1) + " " + unit + "s",
                          end, maxBytes);
    return nullptr;
  }
  if (!scans[k].reserve(std::max<uint64_t>(offset + bytes, 1), offset)) {
    why = "out of memory for scan output " + std::to_string(k);
    return nullptr;
  }
  return scans[k].data + offset;
}

Result<std::unique_ptr<PlanExecutor>> PlanExecutor::load(const EpContextView &context,
                                                         std::shared_ptr<ThreadPool> pool,
                                                         const PlanLimits &limits) {
  std::string what = "partition '" + context.partitionName + "'";
  // Sections are 64-byte aligned relative to the blob. A mapped sidecar starts
  // on a page, so its weights are used in place; bytes inside the protobuf
  // (an inline blob) may start anywhere, and then the blob is copied once,
  // and verified as it is copied (openCpuBlobCopy). The checksum, most of a
  // load's time, runs on the session's threads.
  std::unique_ptr<PlanExecutor> exec(new PlanExecutor());
  ParallelChunks parallel;
  if (pool)
    parallel = [&pool](size_t count, const std::function<void(size_t)> &body) {
      pool->parallelFor(int64_t(count), [&body](int64_t i) { body(size_t(i)); });
    };
  Result<CpuBlobView> opened =
      reinterpret_cast<uintptr_t>(context.data) % kAlignment == 0
          ? openCpuBlob(
                context.data, context.size, what, hostArchitecture(), hostCpuFeatures(), parallel,
                context.fileMapping ? BlobBacking::ReadOnlyFileMapping : BlobBacking::Memory)
          : openCpuBlobCopy(context.data, context.size, what, hostArchitecture(), hostCpuFeatures(),
                            exec->ownedBlob_, parallel);
  if (!opened.isOk())
    return opened.status();
  const CpuBlobView &blob = opened.value();
  // The code: loaded once, every kernel symbol resolved by init().
  Result<std::unique_ptr<LoadedSharedObject>> code =
      LoadedSharedObject::load(blob.code, blob.codeSize, what);
  if (!code.isOk())
    return code.status();
  exec->code_ = code.takeValue();
  exec->weights_ = blob.weights;
  exec->rows_ = blob.rows;
  exec->pool_ = std::move(pool);
  exec->what_ = what;
  exec->limits_ = limits;
  if (Status s = exec->init(*blob.plan, &context); !s.isOk())
    return s;
  return exec;
}

Status PlanExecutor::init(const fb::Plan &plan, const EpContextView *context) {
  PlanExecutor *exec = this;
  const std::string &what = what_;
  exec->dims_ = cpuPlanDimNodes(plan);
  SymbolReads symbolReads(exec->dims_);
  if (plan.symbols())
    for (const flatbuffers::String *name : *plan.symbols())
      exec->symbolNames_.push_back(name->str());
  // Data symbols, and the dim nodes (operands precede users) that read one.
  exec->isDataSymbol_.assign(exec->symbolNames_.size(), 0);
  if (plan.data_symbols())
    for (uint32_t k : *plan.data_symbols())
      exec->isDataSymbol_[k] = 1;
  exec->readsData_.assign(exec->dims_.size(), 0);
  for (size_t n = 0; n < exec->dims_.size(); ++n) {
    const DimNode &node = exec->dims_[n];
    if (node.op == DimOp::Symbol)
      exec->readsData_[n] = exec->isDataSymbol_[size_t(node.a)];
    else if (node.op != DimOp::Const)
      exec->readsData_[n] = exec->readsData_[size_t(node.a)] | exec->readsData_[size_t(node.b)];
  }
  auto readsData = [exec](int64_t d) { return d < 0 && exec->readsData_[size_t(-(d + 1))]; };
  if (plan.checks())
    for (const fb::DimCheck *check : *plan.checks()) {
      DimCheck c{check->a(), check->b(), check->what() ? check->what()->str() : std::string(), {}};
      for (int64_t d : {c.a, c.b})
        if (readsData(d))
          symbolReads.collect(size_t(-(d + 1)), exec->isDataSymbol_, c.dataSymbols);
      (c.dataSymbols.empty() ? exec->checks_ : exec->dataChecks_).push_back(c);
    }
  // Signatures show a symbolic dim as -1, named by its symbol.
  auto readSignatures = [&](const auto *list, std::vector<TensorSignature> &out,
                            std::vector<std::vector<int64_t>> &dims) {
    for (const fb::TensorSignature *sig : *list) {
      TensorSignature t{sig->name()->str(), ElementType(sig->element_type()),
                        toVector(sig->shape())};
      t.kind = ValueKind(sig->container());
      dims.push_back(t.shape);
      bool named = false;
      std::vector<std::string> names(t.shape.size());
      for (size_t d = 0; d < t.shape.size(); ++d) {
        if (t.shape[d] >= 0)
          continue;
        const DimNode &node = exec->dims_[size_t(-(t.shape[d] + 1))];
        if (node.op == DimOp::Symbol && size_t(node.a) < exec->symbolNames_.size()) {
          names[d] = exec->symbolNames_[size_t(node.a)];
          named = true;
        }
        t.shape[d] = -1;
      }
      if (named)
        t.dimNames = std::move(names);
      out.push_back(std::move(t));
    }
  };
  readSignatures(plan.inputs(), exec->inputs_, exec->inputDims_);
  readSignatures(plan.outputs(), exec->outputs_, exec->outputDims_);
  // Each symbol is bound from the first input dim that is that symbol alone.
  exec->symbolSources_.assign(exec->symbolNames_.size(), {-1, -1});
  for (size_t i = 0; i < exec->inputDims_.size(); ++i)
    for (size_t d = 0; d < exec->inputDims_[i].size(); ++d) {
      int64_t code = exec->inputDims_[i][d];
      if (code >= 0)
        continue;
      const DimNode &node = exec->dims_[size_t(-(code + 1))];
      if (node.op != DimOp::Symbol)
        exec->derivedInputDims_.push_back({int(i), int(d)});
      else if (exec->symbolSources_[size_t(node.a)].first < 0)
        exec->symbolSources_[size_t(node.a)] = {int(i), int(d)};
    }
  // (The verifier made sure each buffer's dims read only symbols a run binds.)
  if (plan.value_symbols())
    for (const fb::ValueSymbol *v : *plan.value_symbols())
      exec->valueSymbols_.push_back({v->symbol(), v->input(), v->element()});
  // (The verifier checked each names a data symbol and an element of a
  // static int32/int64 buffer that is no alias.)
  if (plan.element_symbols())
    for (const fb::ElementSymbol *e : *plan.element_symbols())
      exec->elementSymbols_.push_back({e->symbol(), e->buffer(), e->element()});
  // Messages name the graph's values, not the blob's internal "input0".
  auto rename = [](std::vector<TensorSignature> &sigs, const std::vector<std::string> &names) {
    if (names.size() == sigs.size())
      for (size_t i = 0; i < sigs.size(); ++i)
        sigs[i].name = names[i];
  };
  if (context) {
    rename(exec->inputs_, context->inputNames);
    rename(exec->outputs_, context->outputNames);
  }

  for (const fb::Buffer *b : *plan.buffers()) {
    BufferInfo info;
    info.type = ElementType(b->element_type());
    info.shape = toVector(b->shape());
    info.offset = b->offset();
    info.index = int(b->index());
    info.name = b->name() ? b->name()->str() : std::string();
    info.container = ValueKind(b->container());
    switch (b->kind()) {
    case fb::BufferKind::Input:
      info.kind = Kind::Input;
      break;
    case fb::BufferKind::Output:
      info.kind = Kind::Output;
      break;
    case fb::BufferKind::Weight:
      info.kind = Kind::Weight;
      info.weight = (b->row_table() ? exec->rows_ : exec->weights_) + b->offset();
      break;
    case fb::BufferKind::Arena:
      info.kind = Kind::Arena;
      break;
    case fb::BufferKind::Alias: {
      // Point straight at the root; the verifier made alias_of < own id.
      info.kind = Kind::Alias;
      int root = b->alias_of();
      if (exec->buffers_[root].kind == Kind::Alias)
        root = exec->buffers_[root].index;
      info.index = root;
      break;
    }
    }
    for (int64_t d : info.shape)
      info.dynamic |= readsData(d);
    exec->buffers_.push_back(std::move(info));
  }
  exec->symbolicArena_ = cpuPlanHasSymbolicArena(plan);
  exec->fixedBytes_ = plan.memory()->fixed_bytes();
  // What the plan fixes is refused now rather than at the first run: each
  // tensor of a static shape (a graph input or output by its graph name),
  // then the arena.
  for (const BufferInfo &b : exec->buffers_) {
    uint64_t count = 1;
    bool fixed = b.container == ValueKind::Tensor;
    for (int64_t d : b.shape)
      fixed = fixed && d >= 0 && !__builtin_mul_overflow(count, uint64_t(d), &count);
    uint64_t bytes = count > (uint64_t(1) << 56) ? UINT64_MAX : tensorBytes(b.type, int64_t(count));
    if (!fixed || bytes <= limits_.maxTensorBytes)
      continue;
    std::string name = b.kind == Kind::Input    ? "input '" + inputs_[size_t(b.index)].name + "'"
                       : b.kind == Kind::Output ? "output '" + outputs_[size_t(b.index)].name + "'"
                                                : "buffer '" + b.name + "'";
    return Status::error(
        StatusCode::InvalidArgument,
        what + ": " +
            tensorLimitText(name + " " + shapeToString(b.shape), bytes, limits_.maxTensorBytes));
  }
  if (!exec->symbolicArena_ && exec->fixedBytes_ > limits_.maxArenaBytes)
    return Status::error(StatusCode::InvalidArgument,
                         what + ": " + arenaLimitText(exec->fixedBytes_, limits_.maxArenaBytes));

  // Sub-plans share the code and the weights.
  if (plan.subplans())
    for (size_t k = 0; k < plan.subplans()->size(); ++k) {
      std::unique_ptr<PlanExecutor> sub(new PlanExecutor());
      sub->what_ = what + " sub-plan " + std::to_string(k);
      sub->code_ = code_;
      sub->weights_ = weights_;
      sub->rows_ = rows_;
      sub->pool_ = pool_;
      sub->limits_ = limits_;
      if (Status s = sub->init(*plan.subplans()->Get(flatbuffers::uoffset_t(k)), nullptr);
          !s.isOk())
        return s;
      subplans_.push_back(std::move(sub));
    }

  std::vector<char> dataBound(exec->symbolNames_.size(), 0);
  // An input's element symbols are read when the run starts.
  std::vector<char> elementBound(exec->elementSymbols_.size(), 0),
      isElementSymbol(exec->symbolNames_.size(), 0);
  for (const ElementSymbol &e : exec->elementSymbols_)
    isElementSymbol[e.symbol] = 1;
  for (size_t k = 0; k < exec->elementSymbols_.size(); ++k)
    if (exec->buffers_[exec->elementSymbols_[k].buffer].kind == Kind::Input) {
      exec->startElementSymbols_.push_back(k);
      elementBound[k] = 1;
      dataBound[exec->elementSymbols_[k].symbol] = 1;
    }
  for (const fb::Step *s : *plan.steps()) {
    StepInfo step;
    step.callee = s->callee()->str();
    step.node = s->node() ? s->node()->str() : std::string();
    step.ops = s->ops() ? s->ops()->str() : std::string();
    step.inputs.assign(s->inputs()->begin(), s->inputs()->end());
    step.outputs.assign(s->outputs()->begin(), s->outputs()->end());
    if (s->ints())
      for (const fb::IntsAttr *a : *s->ints())
        step.attrs.ints[a->name()->str()] = toVector(a->values());
    if (s->floats())
      for (const fb::FloatsAttr *a : *s->floats())
        step.attrs.floats[a->name()->str()].assign(a->values()->begin(), a->values()->end());
    if (s->strings())
      for (const fb::StringAttr *a : *s->strings())
        step.attrs.strings[a->name()->str()] = a->value()->str();
    // A step binds a data symbol when an output dim is one alone and no
    // earlier step bound it; every other one its outputs read must be bound
    // by then.
    for (int id : step.outputs)
      for (int64_t d : exec->buffers_[size_t(id)].shape)
        if (d < 0) {
          const DimNode &node = exec->dims_[size_t(-(d + 1))];
          if (node.op == DimOp::Symbol && exec->isDataSymbol_[size_t(node.a)] &&
              !dataBound[size_t(node.a)] && !isElementSymbol[size_t(node.a)]) {
            dataBound[size_t(node.a)] = 1;
            step.bindsData = true;
          }
        }
    for (int id : step.outputs) {
      std::vector<size_t> reads;
      for (int64_t d : exec->buffers_[size_t(id)].shape)
        if (readsData(d))
          symbolReads.collect(size_t(-(d + 1)), exec->isDataSymbol_, reads);
      for (size_t k : reads)
        if (!dataBound[k])
          return Status::error(StatusCode::InvalidArgument,
                               what + ": buffer '" + exec->buffers_[size_t(id)].name +
                                   "' reads data symbol '" + exec->symbolNames_[k] +
                                   "', which no step before it binds");
    }
    // The element symbols read from what this step writes.
    for (size_t k = 0; k < exec->elementSymbols_.size(); ++k)
      if (!elementBound[k] && std::find(step.outputs.begin(), step.outputs.end(),
                                        int(exec->elementSymbols_[k].buffer)) != step.outputs.end()) {
        step.elementSymbols.push_back(k);
        elementBound[k] = 1;
        dataBound[exec->elementSymbols_[k].symbol] = 1;
      }
    if (s->kind() == fb::StepKind::Kernel) {
      step.kind = StepKind::Kernel;
      Result<void *> symbol = exec->code_->symbol(step.callee);
      if (!symbol.isOk())
        return symbol.status();
      step.kernel = reinterpret_cast<void (*)(void **)>(symbol.value());
      // A kernel compiled with a `?` at split_dim in the values that span
      // it (CpuCompileEp): the rank is checked against the output at run
      // time, the one thing a block needs.
      step.splitDim = step.attrs.getInt("split_dim", -1);
      if (step.splitDim < -1 || step.outputs.empty())
        return Status::error(StatusCode::InvalidArgument,
                             what + ": kernel step for node '" + step.node + "' has split_dim " +
                                 std::to_string(step.splitDim));
    } else if (s->kind() == fb::StepKind::Sequence) {
      // The verifier checked the callee and which operands are containers.
      step.kind = StepKind::Sequence;
    } else if (s->kind() == fb::StepKind::If || s->kind() == fb::StepKind::Loop ||
               s->kind() == fb::StepKind::Scan) {
      // The verifier checked the sub-plans' count and signatures.
      step.kind = s->kind() == fb::StepKind::If     ? StepKind::If
                  : s->kind() == fb::StepKind::Loop ? StepKind::Loop
                                                    : StepKind::Scan;
      step.subplans.assign(step.attrs.ints["subplans"].begin(), step.attrs.ints["subplans"].end());
      step.carried = size_t(step.attrs.getInt("carried", 0));
    } else {
      step.library = findLibraryKernel(step.callee);
      if (!step.library)
        return Status::error(StatusCode::InvalidArgument,
                             what + ": step for node '" + step.node +
                                 "' calls library kernel '" + step.callee +
                                 "', which this runtime does not have");
    }
    exec->steps_.push_back(std::move(step));
  }
  for (size_t k = 0; k < exec->elementSymbols_.size(); ++k)
    if (!elementBound[k])
      return Status::error(StatusCode::InvalidArgument,
                           what + ": element symbol '" +
                               exec->symbolNames_[exec->elementSymbols_[k].symbol] +
                               "' reads buffer '" +
                               exec->buffers_[exec->elementSymbols_[k].buffer].name +
                               "', which no step writes");

  // A symbolic arena is laid out per set of symbol values, by live ranges.
  if (exec->symbolicArena_) {
    std::vector<int> first, last;
    bufferLiveRanges(
        exec->steps_, [](const StepInfo &step) { return std::tie(step.inputs, step.outputs); },
        [&](int id) {
          const BufferInfo &b = exec->buffers_[size_t(id)];
          return b.kind == Kind::Alias ? b.index : id;
        },
        exec->buffers_.size(), first, last);
    for (size_t id = 0; id < exec->buffers_.size(); ++id) {
      exec->buffers_[id].firstStep = std::max(first[id], 0);
      exec->buffers_[id].lastStep = std::max(last[id], exec->buffers_[id].firstStep);
    }
  }

  // The symbols some shape or check reads; the others key no layout.
  {
    std::vector<char> any(exec->symbolNames_.size(), 1);
    std::vector<size_t> read;
    auto collect = [&](const std::vector<int64_t> &dims) {
      for (int64_t d : dims)
        if (d < 0)
          symbolReads.collect(size_t(-(d + 1)), any, read);
    };
    for (const BufferInfo &b : exec->buffers_)
      collect(b.shape);
    for (const auto &dims : exec->inputDims_)
      collect(dims);
    for (const auto &dims : exec->outputDims_)
      collect(dims);
    for (const auto *checks : {&exec->checks_, &exec->dataChecks_})
      for (const DimCheck &c : *checks)
        collect({c.a, c.b});
    exec->shapeSymbols_.assign(exec->symbolNames_.size(), 0);
    for (size_t k : read)
      exec->shapeSymbols_[k] = 1;
  }
  if (exec->symbolNames_.empty()) {
    Result<std::shared_ptr<const Layout>> layout = exec->computeLayout({});
    if (!layout.isOk())
      return layout.status();
    exec->staticLayout_ = layout.takeValue();
  }
  return Status::ok();
}

std::vector<int64_t> PlanExecutor::evaluate(const std::vector<int64_t> &shape,
                                            const std::vector<int64_t> &dimValues) const {
  std::vector<int64_t> out = shape;
  for (int64_t &d : out)
    if (d < 0)
      d = dimValues[size_t(-(d + 1))];
  return out;
}

std::string PlanExecutor::symbolText(const std::vector<int64_t> &symbols) const {
  std::string text;
  for (size_t k = 0; k < symbols.size(); ++k)
    if (!isDataSymbol_[k])
      text += (text.empty() ? "" : ", ") + symbolNames_[k] + " = " + std::to_string(symbols[k]);
  return text;
}

Result<std::shared_ptr<const PlanExecutor::Layout>>
PlanExecutor::computeLayout(const std::vector<int64_t> &symbols) const {
  auto layout = std::make_shared<Layout>();
  layout->symbols = symbols;
  auto symbolText = [&]() { return this->symbolText(symbols); };
  layout->dimValues.resize(dims_.size());
  std::string why;
  if (!evaluateDimNodes(dims_.data(), dims_.size(), symbols.data(), symbols.size(),
                        layout->dimValues.data(), why))
    return Status::error(StatusCode::InvalidArgument, what_ + ": " + why + " at " + symbolText());
  for (const DimCheck &check : checks_) {
    auto value = [&](int64_t d) { return d >= 0 ? d : layout->dimValues[size_t(-(d + 1))]; };
    int64_t a = value(check.a), b = value(check.b);
    if (a != b)
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": " + check.what + " are " + std::to_string(a) + " and " +
                               std::to_string(b) + " at " + symbolText() +
                               "; the compiled kernel needs them equal");
  }
  std::vector<uint64_t> bytes(buffers_.size());
  layout->shapes.resize(buffers_.size());
  layout->offsets.assign(buffers_.size(), 0);
  std::vector<ArenaSlot> slots;
  std::vector<size_t> slotBuffer;
  for (size_t id = 0; id < buffers_.size(); ++id) {
    const BufferInfo &b = buffers_[id];
    if (b.dynamic || b.container != ValueKind::Tensor)
      continue; // sized when its step runs; a container has no bytes of its own
    std::vector<int64_t> &shape = layout->shapes[id] = evaluate(b.shape, layout->dimValues);
    uint64_t count = 1;
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] < 0)
        return Status::error(StatusCode::InvalidArgument,
                             what_ + ": buffer '" + b.name + "' dim " + std::to_string(d) + " is " +
                                 std::to_string(shape[d]) + " at " + symbolText());
      if (__builtin_mul_overflow(count, uint64_t(shape[d]), &count) || count > (uint64_t(1) << 56))
        return Status::error(StatusCode::InvalidArgument, what_ + ": buffer '" + b.name + "' " +
                                                              shapeToString(shape) +
                                                              " is too large at " + symbolText());
    }
    bytes[id] = tensorBytes(b.type, int64_t(count));
    if (bytes[id] > limits_.maxTensorBytes)
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": " +
                               tensorLimitText("buffer '" + b.name + "' " + shapeToString(shape),
                                               bytes[id], limits_.maxTensorBytes) +
                               " at " + symbolText());
    if (b.kind == Kind::Alias && bytes[id] != bytes[size_t(b.index)])
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": view '" + b.name + "' " + shapeToString(shape) +
                               " does not have the bytes of its source " +
                               shapeToString(layout->shapes[size_t(b.index)]) + " at " +
                               symbolText());
    if (b.kind != Kind::Arena)
      continue;
    if (!symbolicArena_) {
      layout->offsets[id] = b.offset;
      continue;
    }
    ArenaSlot slot;
    slot.size = bytes[id];
    slot.firstStep = b.firstStep;
    slot.lastStep = b.lastStep;
    slots.push_back(slot);
    slotBuffer.push_back(id);
  }
  if (symbolicArena_) {
    ArenaPlan plan = planArena(slots, kAlignment);
    for (size_t i = 0; i < slots.size(); ++i)
      layout->offsets[slotBuffer[i]] = slots[i].offset;
    layout->arenaBytes = plan.bytes;
    if (plan.bytes > limits_.maxArenaBytes)
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": " + arenaLimitText(plan.bytes, limits_.maxArenaBytes) +
                               " at " + symbolText());
  } else {
    layout->arenaBytes = fixedBytes_;
  }
  return std::shared_ptr<const Layout>(std::move(layout));
}

Result<std::shared_ptr<const PlanExecutor::Layout>>
PlanExecutor::bind(const std::vector<TensorView> &inputs) const {
  if (inputs.size() != inputs_.size())
    return Status::error(StatusCode::InvalidArgument,
                         what_ + ": expected " + std::to_string(inputs_.size()) +
                             " inputs, got " + std::to_string(inputs.size()));
  // Reused by every bind on this thread (a Loop's body binds per
  // iteration); bind never calls itself.
  thread_local std::vector<int64_t> symbols;
  thread_local std::vector<char> isBound;
  symbols.assign(symbolNames_.size(), 0);
  isBound.assign(symbolNames_.size(), 0);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorSignature &sig = inputs_[i];
    const std::vector<int64_t> &dims = inputDims_[i];
    const TensorView &view = inputs[i];
    if (view.type != sig.type || view.shape.size() != dims.size())
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": input '" + sig.name + "' must be " + describe(sig) +
                               ", got " + describe(view));
    for (size_t d = 0; d < dims.size(); ++d) {
      int64_t size = view.shape[d];
      if (dims[d] >= 0 ? size != dims[d] : size < 0)
        return Status::error(StatusCode::InvalidArgument, what_ + ": input '" + sig.name +
                                                              "' must be " + describe(sig) +
                                                              ", got " + describe(view));
      if (dims[d] >= 0)
        continue;
      const DimNode &node = dims_[size_t(-(dims[d] + 1))];
      if (node.op != DimOp::Symbol)
        continue;
      int64_t &bound = symbols[size_t(node.a)];
      if (!isBound[size_t(node.a)]) {
        bound = size;
        isBound[size_t(node.a)] = 1;
      } else if (bound != size) {
        auto [si, sd] = symbolSources_[size_t(node.a)];
        return Status::error(StatusCode::InvalidArgument,
                             what_ + ": input '" + sig.name + "' dim " + std::to_string(d) +
                                 " is " + std::to_string(size) + " but '" + inputs_[si].name +
                                 "' dim " + std::to_string(sd) + " (" +
                                 symbolNames_[size_t(node.a)] + ") is " + std::to_string(bound));
      }
    }
    if (!view.data && view.numElements() > 0)
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": input '" + sig.name + "' has no data");
  }
  // Value symbols: elements of small integer inputs (the verifier checked
  // the index and the element type).
  for (const ValueSymbol &v : valueSymbols_) {
    const TensorView &view = inputs[v.input];
    int64_t value = view.type == ElementType::Int64
                        ? static_cast<const int64_t *>(view.data)[v.element]
                        : static_cast<const int32_t *>(view.data)[v.element];
    if (isBound[v.symbol] && symbols[v.symbol] != value)
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": input '" + inputs_[v.input].name + "' element " +
                               std::to_string(v.element) + " is " + std::to_string(value) +
                               " but " + symbolNames_[v.symbol] + " is " +
                               std::to_string(symbols[v.symbol]));
    symbols[v.symbol] = value;
    isBound[v.symbol] = 1;
  }
  // A symbol no shape reads (a Loop body's iteration number) does not
  // change the layout: it is left out of the key, so that one layout
  // serves every iteration.
  for (size_t k = 0; k < symbols.size(); ++k)
    if (!shapeSymbols_[k])
      symbols[k] = 0;
  std::shared_ptr<const Layout> layout = staticLayout_;
  if (!layout) {
    std::lock_guard<std::mutex> lock(layoutMutex_);
    auto found = layouts_.find(symbols);
    if (found != layouts_.end()) {
      layout = found->second;
    } else {
      Result<std::shared_ptr<const Layout>> computed = computeLayout(symbols);
      if (!computed.isOk())
        return computed.status();
      layout = computed.takeValue();
      // Bounded: a caller feeding ever new shapes recomputes rather than grows.
      if (layouts_.size() >= 256)
        layouts_.clear();
      layouts_.emplace(symbols, layout);
    }
  }
  // A dim that is an expression of other inputs' dims must agree with them.
  for (auto [i, d] : derivedInputDims_) {
    int64_t want = layout->dimValues[size_t(-(inputDims_[i][d] + 1))];
    if (inputs[i].shape[d] != want)
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": input '" + inputs_[i].name + "' dim " + std::to_string(d) +
                               " is " + std::to_string(inputs[i].shape[d]) +
                               " but the other inputs make it " + std::to_string(want));
  }
  return layout;
}

Result<uint64_t> PlanExecutor::arenaBytes(const std::vector<TensorView> &inputs) const {
  Result<std::shared_ptr<const Layout>> layout = bind(inputs);
  if (!layout.isOk())
    return layout.status();
  return layout.value()->arenaBytes;
}

size_t PlanExecutor::cachedLayouts() const {
  std::lock_guard<std::mutex> lock(layoutMutex_);
  return layouts_.size();
}

Result<std::vector<std::vector<int64_t>>>
PlanExecutor::outputShapes(const std::vector<TensorView> &inputs) const {
  Result<std::shared_ptr<const Layout>> layout = bind(inputs);
  if (!layout.isOk())
    return layout.status();
  std::vector<std::vector<int64_t>> shapes;
  for (const std::vector<int64_t> &dims : outputDims_) {
    shapes.push_back(evaluate(dims, layout.value()->dimValues));
    for (size_t d = 0; d < dims.size(); ++d)
      if (dims[d] < 0 && readsData_[size_t(-(dims[d] + 1))])
        shapes.back()[d] = -1; // sized by the data
  }
  return shapes;
}

Status PlanExecutor::checkOutputs(const std::vector<TensorView> &outputs, const Layout &layout,
                                  const OutputAllocator *allocate) const {
  if (outputs.size() != outputs_.size())
    return Status::error(StatusCode::InvalidArgument,
                         what_ + ": expected " + std::to_string(outputs_.size()) +
                             " outputs, got " + std::to_string(outputs.size()));
  for (size_t i = 0; i < outputs.size(); ++i) {
    const TensorSignature &sig = outputs_[i];
    if (sig.kind != ValueKind::Tensor) {
      if (!outputs[i].data || outputs[i].type != sig.type)
        return Status::error(StatusCode::InvalidArgument,
                             what_ + ": output '" + sig.name + "' must be " +
                                 valueKindText(sig.kind, sig.type) + " the caller gives");
      continue;
    }
    // Allocated when its step runs.
    if (allocate && !outputs[i].data && outputs[i].type == sig.type)
      continue;
    std::vector<int64_t> shape = evaluate(outputDims_[i], layout.dimValues);
    bool sizedByData = false;
    for (int64_t d : outputDims_[i])
      sizedByData |= d < 0 && readsData_[size_t(-(d + 1))];
    if (sizedByData)
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": output '" + sig.name +
                               "' is sized by the data; run it with an output allocator");
    if (outputs[i].type != sig.type || outputs[i].shape != shape ||
        (!outputs[i].data && outputs[i].numElements() > 0))
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": output '" + sig.name + "' must be " +
                               elementTypeName(sig.type) + shapeToString(shape) + ", got " +
                               describe(outputs[i]));
  }
  return Status::ok();
}

std::unique_ptr<PlanExecutor::RunState> PlanExecutor::acquireState() {
  {
    std::lock_guard<std::mutex> lock(idleMutex_);
    if (!idle_.empty()) {
      std::unique_ptr<RunState> state = std::move(idle_.back());
      idle_.pop_back();
      return state;
    }
  }
  return std::make_unique<RunState>();
}

void PlanExecutor::releaseState(std::unique_ptr<RunState> state) {
  std::lock_guard<std::mutex> lock(idleMutex_);
  idle_.push_back(std::move(state));
}

Status PlanExecutor::run(const std::vector<TensorView> &inputs,
                         const std::vector<TensorView> &outputs) {
  return run(inputs, outputs, OutputAllocator());
}

Status PlanExecutor::run(const std::vector<TensorView> &inputs,
                         const std::vector<TensorView> &outputs, const OutputAllocator &allocate) {
  Result<std::shared_ptr<const Layout>> bound = bind(inputs);
  if (!bound.isOk())
    return bound.status();
  const Layout &layout = *bound.value();
  const OutputAllocator *allocator = allocate ? &allocate : nullptr;
  if (Status checked = checkOutputs(outputs, layout, allocator); !checked.isOk())
    return checked;

  // As many states exist as runs have overlapped; each keeps the largest
  // arena it needed.
  std::unique_ptr<RunState> state = acquireState();
  uint64_t needed = layout.arenaBytes;
  if (needed > state->capacity) {
    std::free(state->arena);
    state->arena = static_cast<char *>(std::aligned_alloc(kAlignment, needed));
    state->capacity = state->arena ? needed : 0;
    if (!state->arena) {
      releaseState(std::move(state));
      return Status::error(StatusCode::Internal, what_ + ": out of memory allocating a " +
                                                     std::to_string(needed) + "-byte arena");
    }
  }
  Status status = runSteps(*state, inputs, outputs, layout, allocator);
  // The run's sequences and optionals let go of their tensors; an idle
  // state keeps only memory that later runs reuse.
  for (SequenceValue &container : state->containers)
    container.clear();
  for (auto &[step, loop] : state->loops)
    for (std::vector<SequenceValue> &slots : loop.sequences)
      for (SequenceValue &container : slots)
        container.clear();
  releaseState(std::move(state));
  return status;
}

/// What a library step's kernel calls to size its pending outputs.
class PlanExecutor::StepSizer final : public OutputSizer {
public:
  StepSizer(const PlanExecutor &exec, RunState &state, const StepInfo &step,
            const OutputAllocator *allocate)
      : exec_(exec), state_(state), step_(step), allocate_(allocate) {}
  bool pending(size_t output) const override {
    return output < step_.outputs.size() && !state_.views[size_t(step_.outputs[output])].data &&
           exec_.buffers_[size_t(step_.outputs[output])].dynamic;
  }
  Result<void *> allocate(size_t output, const std::vector<int64_t> &shape) override {
    int id = step_.outputs[output];
    if (Status s = exec_.sizeBuffer(state_, id, shape, allocate_); !s.isOk())
      return s;
    state_.stepOutputs[output] = state_.views[size_t(id)]; // what KernelCall::outputs shows
    return state_.views[size_t(id)].data;
  }

private:
  const PlanExecutor &exec_;
  RunState &state_;
  const StepInfo &step_;
  const OutputAllocator *allocate_;
};

bool PlanExecutor::rebindDims(RunState &state, std::string &why) const {
  if (!evaluateDimNodes(dims_.data(), dims_.size(), state.symbols.data(), state.symbols.size(),
                        state.dimValues.data(), why))
    return false;
  for (const DimCheck &check : dataChecks_) {
    auto value = [&](int64_t d) { return d >= 0 ? d : state.dimValues[size_t(-(d + 1))]; };
    int64_t a = value(check.a), c = value(check.b);
    // A check is made once all the symbols it reads are bound; until then
    // an unbound one reads 0, which the plan never compares.
    bool ready = true;
    for (size_t k : check.dataSymbols)
      ready &= state.bound[k] != 0;
    if (ready && a != c) {
      why = check.what + " are " + std::to_string(a) + " and " + std::to_string(c) +
            "; the compiled kernel needs them equal";
      return false;
    }
  }
  return true;
}

Status PlanExecutor::bindElementSymbols(RunState &state, const std::vector<size_t> &which,
                                        const std::string &node) const {
  for (size_t k : which) {
    const ElementSymbol &e = elementSymbols_[k];
    const TensorView &v = state.views[e.buffer];
    if (!v.data || size_t(v.numElements()) <= e.element)
      return Status::error(StatusCode::Internal,
                           what_ + ": node '" + node + "': '" + buffers_[e.buffer].name +
                               "' has no element " + std::to_string(e.element) + " to read '" +
                               symbolNames_[e.symbol] + "' from");
    state.symbols[e.symbol] = v.type == ElementType::Int64
                                  ? static_cast<const int64_t *>(v.data)[e.element]
                                  : static_cast<const int32_t *>(v.data)[e.element];
    state.bound[e.symbol] = 1;
  }
  if (std::string why; !rebindDims(state, why))
    return Status::error(StatusCode::InvalidArgument, what_ + ": after node '" + node + "': " + why);
  return Status::ok();
}

Status PlanExecutor::sizeBuffer(RunState &state, int id, const std::vector<int64_t> &shape,
                                const OutputAllocator *allocate) const {
  const BufferInfo &b = buffers_[size_t(id)];
  auto refuse = [&](const std::string &why) {
    return Status::error(StatusCode::InvalidArgument, what_ + ": '" + b.name + "' " +
                                                          shapeToString(shape) + ": " + why);
  };
  if (shape.size() != b.shape.size())
    return refuse("the plan gives it rank " + std::to_string(b.shape.size()));
  // Bind the data symbols that are dims of it alone, then check every dim.
  bool newlyBound = false;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] < 0)
      return refuse("a negative dim");
    if (b.shape[d] >= 0)
      continue;
    const DimNode &node = dims_[size_t(-(b.shape[d] + 1))];
    if (node.op == DimOp::Symbol && isDataSymbol_[size_t(node.a)] && !state.bound[size_t(node.a)]) {
      state.symbols[size_t(node.a)] = shape[d];
      state.bound[size_t(node.a)] = 1;
      newlyBound = true;
    }
  }
  if (std::string why; newlyBound && !rebindDims(state, why))
    return refuse(why);
  std::vector<int64_t> &want = state.shapeScratch;
  want = b.shape;
  for (int64_t &d : want)
    if (d < 0)
      d = state.dimValues[size_t(-(d + 1))];
  if (want != shape)
    return refuse("the plan makes it " + shapeToString(want));
  uint64_t count = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(count, uint64_t(d), &count) || count > (uint64_t(1) << 56))
      return refuse("too large");
  uint64_t bytes = tensorBytes(b.type, int64_t(count));
  if (bytes > limits_.maxTensorBytes)
    return refuse(tensorLimitText("the tensor", bytes, limits_.maxTensorBytes));
  TensorView &v = state.views[size_t(id)];
  v.shape = shape;
  if (b.kind == Kind::Output) {
    if (!allocate)
      return refuse("an output sized by the data needs an output allocator");
    Result<void *> data = (*allocate)(size_t(b.index), shape);
    if (!data.isOk())
      return data.status();
    v.data = data.value();
    return Status::ok();
  }
  // Kept for later runs: a repeated shape allocates nothing.
  RunState::Block &block = state.dynamicMemory[size_t(id)];
  if (!block.reserve(std::max<uint64_t>(bytes, 1)))
    return Status::error(StatusCode::Internal, what_ + ": out of memory allocating " +
                                                   std::to_string(bytes) + " bytes for '" +
                                                   b.name + "'");
  v.data = block.data;
  return Status::ok();
}

Result<void *> PlanExecutor::outputTensor(RunState &state, const StepInfo &step, int id,
                                          ElementType type, const std::vector<int64_t> &shape,
                                          const OutputAllocator *allocate) const {
  const BufferInfo &b = buffers_[size_t(id)];
  TensorView &out = state.views[size_t(id)];
  if (type != b.type)
    return Status::error(StatusCode::InvalidArgument,
                         what_ + ": node '" + step.node + "': output '" + b.name + "' is " +
                             elementTypeName(type) + ", the plan makes it " +
                             elementTypeName(b.type));
  if (b.dynamic || !out.data) {
    if (Status s = sizeBuffer(state, id, shape, allocate); !s.isOk())
      return s;
  } else if (out.shape != shape) {
    return Status::error(StatusCode::InvalidArgument,
                         what_ + ": node '" + step.node + "': output '" + b.name + "' is " +
                             shapeToString(shape) + ", the plan makes it " +
                             shapeToString(out.shape));
  }
  return out.data;
}

Status PlanExecutor::produce(RunState &state, const StepInfo &step, int id,
                             const TensorView &value, const OutputAllocator *allocate) const {
  if (buffers_[size_t(id)].container != ValueKind::Tensor) {
    auto *to = static_cast<SequenceValue *>(state.views[size_t(id)].data);
    auto *from = static_cast<const SequenceValue *>(value.data);
    if (to != from)
      *to = *from; // the elements are shared, not copied
    return Status::ok();
  }
  Result<void *> out = outputTensor(state, step, id, value.type, value.shape, allocate);
  if (!out.isOk())
    return out.status();
  if (size_t bytes = value.byteSize())
    std::memcpy(out.value(), value.data, bytes);
  return Status::ok();
}

Status PlanExecutor::runLoop(RunState &state, const StepInfo &step,
                             const OutputAllocator *allocate) const {
  auto refuse = [&](const std::string &why) {
    return Status::error(StatusCode::InvalidArgument,
                         what_ + ": node '" + step.node + "' (Loop): " + why);
  };
  auto scalar = [&](int id, int64_t fallback) -> Result<int64_t> {
    if (id < 0)
      return fallback;
    const TensorView &v = state.views[size_t(id)];
    if (v.numElements() != 1 || !v.data)
      return refuse("the trip count and the condition hold one element each");
    switch (v.type) {
    case ElementType::Int64:
      return *static_cast<const int64_t *>(v.data);
    case ElementType::Int32:
      return int64_t(*static_cast<const int32_t *>(v.data));
    default:
      return int64_t(*static_cast<const uint8_t *>(v.data) != 0);
    }
  };
  Result<int64_t> trips = scalar(step.inputs[0], INT64_MAX);
  Result<int64_t> initialCond = scalar(step.inputs[1], 1);
  if (!trips.isOk())
    return trips.status();
  if (!initialCond.isOk())
    return initialCond.status();
  PlanExecutor &body = *subplans_[size_t(step.subplans[0])];
  size_t carried = step.carried, scans = step.outputs.size() - carried;
  RunState::LoopMemory &memory = state.loops[size_t(&step - steps_.data())];
  memory.begin(carried, scans);

  // Body inputs: (iteration, condition, carried..., read...).
  int64_t iteration = 0;
  uint8_t cond = initialCond.value() != 0, condOut = 0;
  std::vector<TensorView> inputs;
  inputs.push_back(TensorView{&iteration, ElementType::Int64, {}});
  inputs.push_back(TensorView{&cond, ElementType::Bool, {}});
  for (size_t i = 2; i < step.inputs.size(); ++i)
    inputs.push_back(state.views[size_t(step.inputs[i])]);
  // Body outputs: (condition, carried..., scans...), sized as it makes them.
  std::vector<TensorView> outputs;
  for (size_t i = 0; i < body.outputs_.size(); ++i)
    outputs.push_back(TensorView{nullptr, body.outputs_[i].type, {}});
  OutputAllocator allocateBody = [&](size_t i,
                                     const std::vector<int64_t> &shape) -> Result<void *> {
    ElementType type = body.outputs_[i].type;
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    uint64_t bytes = tensorBytes(type, count);
    if (i == 0) {
      if (count != 1)
        return refuse("the body's condition " + shapeToString(shape) + " is not one element");
      return static_cast<void *>(&condOut);
    }
    if (i <= carried) {
      if (void *data = memory.carry(i - 1, iteration, type, shape, bytes))
        return data;
      return refuse("out of memory for carried value " + std::to_string(i - 1));
    }
    std::string why;
    if (void *data = memory.appendScan(i - 1 - carried, iteration, shape, bytes, "iteration",
                                       limits_.maxTensorBytes, why))
      return data;
    return refuse(why);
  };
  // Carried containers alternate between two per value, as tensors do.
  for (std::vector<SequenceValue> &slots : memory.sequences)
    slots.resize(carried);
  auto isContainer = [&](size_t i) { return body.outputs_[1 + i].kind != ValueKind::Tensor; };
  constexpr int64_t kMaxIterations = int64_t(1) << 31;
  while (iteration < trips.value() && cond) {
    if (iteration >= kMaxIterations)
      return refuse("ran " + std::to_string(kMaxIterations) + " iterations without ending");
    for (size_t i = 0; i < carried; ++i)
      if (isContainer(i))
        outputs[1 + i].data = &memory.sequences[iteration & 1][i];
    Status status = body.run(inputs, outputs, allocateBody);
    if (!status.isOk())
      return Status::error(status.code(), what_ + ": node '" + step.node + "' (Loop) iteration " +
                                              std::to_string(iteration) + ": " + status.message());
    cond = condOut != 0;
    for (size_t i = 0; i < carried; ++i) {
      if (isContainer(i))
        inputs[2 + i].data = outputs[1 + i].data;
      else
        inputs[2 + i] = memory.next[i];
    }
    ++iteration;
  }
  // The last carried values (the initial ones when no iteration ran), then
  // the scans stacked along a new leading axis.
  for (size_t i = 0; i < carried; ++i)
    if (Status s = produce(state, step, step.outputs[i], inputs[2 + i], allocate); !s.isOk())
      return s;
  for (size_t k = 0; k < scans; ++k) {
    int id = step.outputs[carried + k];
    std::vector<int64_t> shape{iteration};
    if (iteration > 0) {
      shape.insert(shape.end(), memory.scanShapes[k].begin(), memory.scanShapes[k].end());
    } else {
      // No value came: the dims the plan fixes, 0 for those the data decides.
      const std::vector<int64_t> &planned = buffers_[size_t(id)].shape;
      for (size_t d = 1; d < planned.size(); ++d)
        shape.push_back(planned[d] >= 0 ? planned[d] : 0);
    }
    TensorView stacked{memory.scans[k].data, buffers_[size_t(id)].type, shape};
    if (Status s = produce(state, step, id, stacked, allocate); !s.isOk())
      return s;
  }
  return Status::ok();
}

Status PlanExecutor::runIf(RunState &state, const StepInfo &step,
                           const OutputAllocator *outerAllocate) const {
  const TensorView &cond = state.views[size_t(step.inputs[0])];
  if (cond.numElements() != 1 || !cond.data)
    return Status::error(StatusCode::InvalidArgument,
                         what_ + ": node '" + step.node + "': the condition holds " +
                             std::to_string(cond.numElements()) + " elements, not one");
  bool taken = elementSize(cond.type) == 1 ? *static_cast<const uint8_t *>(cond.data) != 0
                                            : *static_cast<const int64_t *>(cond.data) != 0;
  PlanExecutor &branch = *subplans_[size_t(step.subplans[taken ? 0 : 1])];
  // Views kept per step, so a repeated run assigns them without allocating.
  RunState::LoopMemory &memory = state.loops[size_t(&step - steps_.data())];
  memory.inputs.resize(step.inputs.size() - 1);
  for (size_t i = 1; i < step.inputs.size(); ++i)
    memory.inputs[i - 1] = state.views[size_t(step.inputs[i])];
  // Every output is given when the branch has made it: a planned buffer
  // must get the planned shape, a data-sized one takes the branch's.
  memory.outputs.resize(step.outputs.size());
  memory.planned.resize(step.outputs.size());
  for (size_t i = 0; i < step.outputs.size(); ++i) {
    int id = step.outputs[i];
    // A container output is the step's own: the branch writes it in place.
    memory.outputs[i].data =
        buffers_[size_t(id)].container != ValueKind::Tensor ? state.views[size_t(id)].data : nullptr;
    memory.outputs[i].type = buffers_[size_t(id)].type;
    memory.outputs[i].shape.clear();
    memory.planned[i] = state.views[size_t(id)];
  }
  // One pointer captured: the std::function holds it without allocating.
  struct Context {
    const PlanExecutor &exec;
    RunState &state;
    const StepInfo &step;
    RunState::LoopMemory &memory;
    const OutputAllocator *outerAllocate;
    bool taken;
  } context{*this, state, step, memory, outerAllocate, taken};
  OutputAllocator allocate = [c = &context](size_t i,
                                            const std::vector<int64_t> &shape) -> Result<void *> {
    int id = c->step.outputs[i];
    if (c->exec.buffers_[size_t(id)].dynamic) {
      if (Status s = c->exec.sizeBuffer(c->state, id, shape, c->outerAllocate); !s.isOk())
        return s;
      return c->state.views[size_t(id)].data;
    }
    const TensorView &planned = c->memory.planned[i];
    if (shape != planned.shape)
      return Status::error(StatusCode::InvalidArgument,
                           c->exec.what_ + ": node '" + c->step.node + "': the " +
                               (c->taken ? "then" : "else") + " branch gives output " +
                               std::to_string(i) + " as " + shapeToString(shape) +
                               ", the plan makes it " + shapeToString(planned.shape));
    return planned.data;
  };
  Status status = branch.run(memory.inputs, memory.outputs, allocate);
  if (!status.isOk())
    return Status::error(status.code(), what_ + ": node '" + step.node + "' (" +
                                            (taken ? "then" : "else") +
                                            " branch): " + status.message());
  return Status::ok();
}

Status PlanExecutor::runScan(RunState &state, const StepInfo &step,
                             const OutputAllocator *allocate) const {
  auto refuse = [&](const std::string &why) {
    return Status::error(StatusCode::InvalidArgument,
                         what_ + ": node '" + step.node + "' (Scan): " + why);
  };
  PlanExecutor &body = *subplans_[size_t(step.subplans[0])];
  size_t states = step.carried, scanIns = size_t(step.attrs.getInt("num_scan_inputs", 1));
  size_t scanOuts = step.outputs.size() - states;
  auto attr = [&](const char *name, size_t k, int64_t fallback) {
    std::vector<int64_t> values = step.attrs.getInts(name);
    return k < values.size() ? values[k] : fallback;
  };
  RunState::LoopMemory &memory = state.loops[size_t(&step - steps_.data())];
  memory.begin(states, scanOuts);
  memory.stacked.resize(scanOuts);
  memory.slices.resize(scanIns);

  // The sequence: every scan input's dim at its axis, which must agree.
  int64_t length = -1;
  std::vector<int64_t> axes(scanIns);
  for (size_t j = 0; j < scanIns; ++j) {
    const TensorView &in = state.views[size_t(step.inputs[states + j])];
    int64_t axis = attr("scan_input_axes", j, 0), rank = int64_t(in.shape.size());
    if (axis < -rank || axis >= rank)
      return refuse("scan_input_axes entry " + std::to_string(axis) + " is out of range for " +
                    "scan input " + std::to_string(j) + " " + shapeToString(in.shape));
    axes[j] = axis < 0 ? axis + rank : axis;
    if (length >= 0 && in.shape[size_t(axes[j])] != length)
      return refuse("scan input " + std::to_string(j) + " has " +
                    std::to_string(in.shape[size_t(axes[j])]) + " steps, scan input 0 has " +
                    std::to_string(length));
    length = in.shape[size_t(axes[j])];
  }

  std::vector<TensorView> inputs;
  for (size_t i = 0; i < states; ++i)
    inputs.push_back(state.views[size_t(step.inputs[i])]);
  for (size_t j = 0; j < scanIns; ++j) {
    const TensorView &in = state.views[size_t(step.inputs[states + j])];
    std::vector<int64_t> shape = in.shape;
    shape.erase(shape.begin() + axes[j]);
    inputs.push_back(TensorView{nullptr, in.type, shape});
  }
  for (size_t i = states + scanIns; i < step.inputs.size(); ++i)
    inputs.push_back(state.views[size_t(step.inputs[i])]);
  std::vector<TensorView> outputs;
  for (const TensorSignature &sig : body.outputs_)
    outputs.push_back(TensorView{nullptr, sig.type, {}});
  int64_t t = 0;
  OutputAllocator allocateBody = [&](size_t i,
                                     const std::vector<int64_t> &shape) -> Result<void *> {
    ElementType type = body.outputs_[i].type;
    int64_t count = 1;
    for (int64_t d : shape)
      count *= d;
    uint64_t bytes = tensorBytes(type, count);
    if (i < states) {
      if (void *data = memory.carry(i, t, type, shape, bytes))
        return data;
      return refuse("out of memory for state " + std::to_string(i));
    }
    std::string why;
    if (void *data =
            memory.appendScan(i - states, t, shape, bytes, "step", limits_.maxTensorBytes, why))
      return data;
    return refuse(why);
  };
  for (t = 0; t < length; ++t) {
    // One step of each scan input, copied out (backwards for direction 1).
    for (size_t j = 0; j < scanIns; ++j) {
      const TensorView &in = state.views[size_t(step.inputs[states + j])];
      int64_t at = attr("scan_input_directions", j, 0) ? length - 1 - t : t;
      size_t elem = elementSize(in.type);
      int64_t outer = 1, inner = 1;
      for (int64_t d = 0; d < axes[j]; ++d)
        outer *= in.shape[size_t(d)];
      for (size_t d = size_t(axes[j]) + 1; d < in.shape.size(); ++d)
        inner *= in.shape[d];
      size_t row = size_t(inner) * elem;
      RunState::Block &block = memory.slices[j];
      if (!block.reserve(std::max<uint64_t>(uint64_t(outer) * row, 1)))
        return refuse("out of memory for a step of scan input " + std::to_string(j));
      const char *src = static_cast<const char *>(in.data);
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(block.data + size_t(o) * row, src + (size_t(o * length + at)) * row, row);
      inputs[states + j].data = block.data;
    }
    Status status = body.run(inputs, outputs, allocateBody);
    if (!status.isOk())
      return Status::error(status.code(), what_ + ": node '" + step.node + "' (Scan) step " +
                                              std::to_string(t) + ": " + status.message());
    for (size_t i = 0; i < states; ++i)
      inputs[i] = memory.next[i];
  }
  for (size_t i = 0; i < states; ++i)
    if (Status s = produce(state, step, step.outputs[i], inputs[i], allocate); !s.isOk())
      return s;
  // Each scan output: the steps' values stacked at its axis, in order (or
  // backwards for direction 1).
  for (size_t k = 0; k < scanOuts; ++k) {
    int id = step.outputs[states + k];
    ElementType type = buffers_[size_t(id)].type;
    std::vector<int64_t> each = memory.scanShapes[k];
    if (length == 0) {
      // No value came: the dims the plan fixes, 0 for those the data decides.
      each.clear();
      const std::vector<int64_t> &planned = buffers_[size_t(id)].shape;
      for (size_t d = 0; d + 1 < planned.size(); ++d)
        each.push_back(planned[d] >= 0 ? planned[d] : 0);
    }
    int64_t axis = attr("scan_output_axes", k, 0), rank = int64_t(each.size()) + 1;
    if (axis < -rank || axis >= rank)
      return refuse("scan_output_axes entry " + std::to_string(axis) + " is out of range");
    if (axis < 0)
      axis += rank;
    std::vector<int64_t> shape = each;
    shape.insert(shape.begin() + axis, length);
    int64_t outer = 1, inner = 1;
    for (int64_t d = 0; d < axis; ++d)
      outer *= each[size_t(d)];
    for (size_t d = size_t(axis); d < each.size(); ++d)
      inner *= each[d];
    size_t row = size_t(inner) * elementSize(type);
    RunState::Block &block = memory.stacked[k];
    if (!block.reserve(std::max<uint64_t>(uint64_t(outer) * uint64_t(length) * row, 1)))
      return refuse("out of memory for scan output " + std::to_string(k));
    bool backwards = attr("scan_output_directions", k, 0) != 0;
    for (int64_t s = 0; s < length; ++s) {
      int64_t at = backwards ? length - 1 - s : s;
      const char *value = memory.scans[k].data + size_t(s) * size_t(memory.scanBytes[k]);
      for (int64_t o = 0; o < outer; ++o)
        std::memcpy(block.data + size_t(o * length + at) * row, value + size_t(o) * row, row);
    }
    if (Status s = produce(state, step, id, TensorView{block.data, type, shape}, allocate);
        !s.isOk())
      return s;
  }
  return Status::ok();
}

const char *PlanExecutor::stepKindName(StepKind kind) {
  switch (kind) {
  case StepKind::Kernel:
    return "Kernel";
  case StepKind::Library:
    return "Library";
  case StepKind::If:
    return "If";
  case StepKind::Loop:
    return "Loop";
  case StepKind::Scan:
    return "Scan";
  case StepKind::Sequence:
    return "Sequence";
  }
  return "?";
}

bool PlanExecutor::profileSteps(std::vector<StepProfile> *steps) {
  profile_ = steps;
  if (!steps)
    return true;
  steps->clear();
  for (const StepInfo &step : steps_) {
    StepProfile entry;
    entry.kind = stepKindName(step.kind);
    entry.callee = step.callee;
    entry.ops = step.ops;
    entry.nodes = step.node;
    steps->push_back(std::move(entry));
  }
  return true;
}

Status PlanExecutor::runSteps(RunState &state, const std::vector<TensorView> &inputs,
                              const std::vector<TensorView> &outputs, const Layout &layout,
                              const OutputAllocator *allocate) const {
  // Every buffer as a view with its concrete shape; those sized by the data,
  // and outputs the caller leaves to an allocator, wait for their step.
  std::vector<TensorView> &views = state.views;
  views.resize(buffers_.size());
  bool anyLate = false;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const BufferInfo &b = buffers_[i];
    TensorView &v = views[i];
    v.type = b.type;
    v.shape = layout.shapes[i];
    v.data = nullptr;
    if (b.dynamic) {
      anyLate = true;
      continue;
    }
    switch (b.kind) {
    case Kind::Input:
      v.data = inputs[b.index].data;
      break;
    case Kind::Output:
      v.data = outputs[b.index].data;
      anyLate |= !v.data;
      break;
    case Kind::Weight:
      v.data = const_cast<char *>(b.weight);
      break;
    case Kind::Arena:
      if (b.container != ValueKind::Tensor) {
        if (state.containers.size() < buffers_.size())
          state.containers.resize(buffers_.size());
        v.data = &state.containers[i];
      } else {
        v.data = state.arena + layout.offsets[i];
      }
      break;
    case Kind::Alias:
      v.data = views[b.index].data;
      break;
    }
  }
  anyLate |= !elementSymbols_.empty();
  if (anyLate) {
    state.symbols = layout.symbols;
    state.dimValues = layout.dimValues;
    state.bound.assign(symbolNames_.size(), 1);
    for (size_t k = 0; k < isDataSymbol_.size(); ++k)
      if (isDataSymbol_[k])
        state.bound[k] = 0;
    state.dynamicMemory.resize(buffers_.size());
    if (!startElementSymbols_.empty())
      if (Status s = bindElementSymbols(state, startElementSymbols_, "the inputs"); !s.isOk())
        return s;
  }

  for (size_t i = 0; i < steps_.size(); ++i) {
    const StepInfo &current = steps_[i];
    if (!profile_) {
      if (Status s = runStep(state, current, layout, anyLate, allocate); !s.isOk())
        return s;
      if (!current.elementSymbols.empty())
        if (Status s = bindElementSymbols(state, current.elementSymbols, current.node);
            !s.isOk())
          return s;
      continue;
    }
    auto started = std::chrono::steady_clock::now();
    Status s = runStep(state, steps_[i], layout, anyLate, allocate);
    StepProfile &entry = (*profile_)[i];
    entry.nanoseconds += uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                      std::chrono::steady_clock::now() - started)
                                      .count());
    ++entry.calls;
    if (!s.isOk())
      return s;
    if (!current.elementSymbols.empty())
      if (Status bound = bindElementSymbols(state, current.elementSymbols, current.node);
          !bound.isOk())
        return bound;
    const StepInfo &step = steps_[i];
    if (!step.outputs.empty() && entry.shape.empty())
      entry.shape = shapeToString(state.views[size_t(step.outputs[0])].shape);
  }
  return Status::ok();
}

bool PlanExecutor::runSplitKernel(const StepInfo &step, const std::vector<TensorView> &views,
                                  const std::vector<int64_t> &words,
                                  const std::vector<size_t> &starts) const {
  if (step.splitDim < 0 || !pool_ || pool_->threads() < 2)
    return false;
  const TensorView &out = views[size_t(step.outputs.front())];
  int64_t rank = int64_t(out.shape.size()), d = step.splitDim;
  if (d >= rank)
    return false;
  int64_t extent = out.shape[size_t(d)], elements = 1;
  for (int64_t size : out.shape)
    elements *= size;
  int64_t blocks = std::min<int64_t>({int64_t(pool_->threads()), extent,
                                      elements / kMinElementsPerBlock});
  if (blocks < 2)
    return false;
  // Which operands span the dim (their `?` there), in descriptor order.
  std::vector<int> operands(step.inputs.begin(), step.inputs.end());
  operands.insert(operands.end(), step.outputs.begin(), step.outputs.end());
  std::vector<int64_t> sizeWord(operands.size(), -1), rowElements(operands.size(), 0);
  for (size_t k = 0; k < operands.size(); ++k) {
    const TensorView &v = views[size_t(operands[k])];
    int64_t offset = d - (rank - int64_t(v.shape.size()));
    if (offset < 0 || v.shape[size_t(offset)] == 1)
      continue;
    if (v.shape[size_t(offset)] != extent)
      return false; // not what the kernel was compiled for: run it whole
    int64_t inner = int64_t(elementSize(v.type));
    if (inner == 0)
      return false; // sub-byte elements: a block may start mid-byte
    for (size_t i = size_t(offset) + 1; i < v.shape.size(); ++i)
      inner *= v.shape[i];
    sizeWord[k] = int64_t(starts[k]) + 3 + offset;
    rowElements[k] = inner; // bytes per index of the dim
  }
  int64_t per = (extent + blocks - 1) / blocks;
  pool_->parallelFor((extent + per - 1) / per, [&](int64_t b) {
    int64_t begin = b * per, count = std::min(per, extent - begin);
    std::vector<int64_t> local(words);
    std::vector<void *> pointers(starts.size());
    for (size_t k = 0; k < operands.size(); ++k) {
      if (sizeWord[k] >= 0) {
        // The block's first row: the aligned pointer moves, the dim shrinks.
        local[starts[k] + 1] += begin * rowElements[k];
        local[size_t(sizeWord[k])] = count;
      }
      pointers[k] = &local[starts[k]];
    }
    step.kernel(pointers.data());
  });
  return true;
}

Status PlanExecutor::runStep(RunState &state, const StepInfo &step, const Layout &layout,
                             bool anyLate, const OutputAllocator *allocate) const {
  std::vector<TensorView> &views = state.views;
  std::vector<TensorView> &stepInputs = state.stepInputs, &stepOutputs = state.stepOutputs;
  std::vector<int64_t> &descriptorWords = state.descriptorWords;
  std::vector<void *> &descriptorPointers = state.descriptorPointers;
  std::vector<size_t> &starts = state.starts;
  if (anyLate) {
    // Views of buffers sized since; outputs whose shape is known by now.
    for (int id : step.inputs) {
      if (id < 0)
        continue;
      const BufferInfo &b = buffers_[size_t(id)];
      if (b.kind == Kind::Alias) {
        views[size_t(id)].data = views[size_t(b.index)].data;
        if (b.dynamic) {
          std::vector<int64_t> &shape = views[size_t(id)].shape;
          shape = b.shape;
          for (int64_t &d : shape)
            if (d < 0)
              d = state.dimValues[size_t(-(d + 1))];
        }
      }
    }
    for (int id : step.outputs) {
      const BufferInfo &b = buffers_[size_t(id)];
      bool pendingOutput = b.kind == Kind::Output && !views[size_t(id)].data;
      if (!(b.dynamic || pendingOutput))
        continue;
      views[size_t(id)].data = nullptr;
      if (b.dynamic && (step.kind == StepKind::Loop || step.kind == StepKind::Scan ||
                        step.kind == StepKind::Sequence ||
                        (step.bindsData && step.kind != StepKind::Kernel)))
        continue; // the step sizes it
      std::vector<int64_t> &shape = state.pendingShape;
      shape = b.dynamic ? b.shape : layout.shapes[size_t(id)];
      for (int64_t &d : shape)
        if (d < 0)
          d = state.dimValues[size_t(-(d + 1))];
      if (Status s = sizeBuffer(state, id, shape, allocate); !s.isOk())
        return s;
    }
  }
  switch (step.kind) {
  case StepKind::Sequence:
    return runSequence(state, step, allocate);
  case StepKind::If:
    return runIf(state, step, allocate);
  case StepKind::Loop:
    return runLoop(state, step, allocate);
  case StepKind::Scan:
    return runScan(state, step, allocate);
  case StepKind::Kernel:
  case StepKind::Library:
    break;
  }
  if (step.kind == StepKind::Kernel) {
    // One memref descriptor per operand: {allocated, aligned, offset,
    // sizes[rank], strides[rank]}, inputs first, then outputs.
    descriptorWords.clear();
    starts.clear();
    auto addDescriptor = [&](const TensorView &v) {
      starts.push_back(descriptorWords.size());
      descriptorWords.push_back(int64_t(reinterpret_cast<intptr_t>(v.data)));
      descriptorWords.push_back(int64_t(reinterpret_cast<intptr_t>(v.data)));
      descriptorWords.push_back(0);
      for (int64_t d : v.shape)
        descriptorWords.push_back(d);
      int64_t stride = 1;
      size_t rank = v.shape.size();
      size_t base = descriptorWords.size();
      descriptorWords.resize(base + rank);
      for (size_t d = rank; d-- > 0;) {
        descriptorWords[base + d] = stride;
        stride *= v.shape[d];
      }
    };
    for (int id : step.inputs)
      addDescriptor(views[id]);
    for (int id : step.outputs)
      addDescriptor(views[id]);
    descriptorPointers.clear();
    for (size_t start : starts)
      descriptorPointers.push_back(&descriptorWords[start]);
    if (runSplitKernel(step, views, descriptorWords, starts))
      return Status::ok();
    step.kernel(descriptorPointers.data());
    return Status::ok();
  }
  // Assigned in place: the views' shape vectors keep their capacity, so a
  // run whose shapes repeat copies them without allocating.
  stepInputs.resize(step.inputs.size());
  stepOutputs.resize(step.outputs.size());
  for (size_t k = 0; k < step.inputs.size(); ++k) {
    int id = step.inputs[k];
    if (id < 0) {
      stepInputs[k].data = nullptr;
      stepInputs[k].type = ElementType::Undefined;
      stepInputs[k].shape.clear();
    } else {
      stepInputs[k] = views[size_t(id)];
    }
  }
  for (size_t k = 0; k < step.outputs.size(); ++k)
    stepOutputs[k] = views[size_t(step.outputs[k])];
  KernelCall call{step.attrs,         stepInputs.data(), stepInputs.size(),
                  stepOutputs.data(), stepOutputs.size(), state.scratch,
                  pool_.get()};
  StepSizer sizer(*this, state, step, allocate);
  if (step.bindsData)
    call.sizer = &sizer;
  Status status = step.library(call);
  if (!status.isOk())
    return Status::error(status.code(), what_ + ": node '" + step.node + "' (" + step.callee +
                                            "): " + status.message());
  if (step.bindsData)
    for (size_t i = 0; i < step.outputs.size(); ++i)
      if (sizer.pending(i))
        return Status::error(StatusCode::Internal, what_ + ": node '" + step.node + "' (" +
                                                       step.callee + ") did not size output " +
                                                       std::to_string(i));
  return Status::ok();
}

} // namespace ortc::cpu
