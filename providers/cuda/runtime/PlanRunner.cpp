//===- PlanRunner.cpp - one loaded CUDA partition -------------------------===//

#include "providers/cuda/runtime/PlanRunner.h"

#include "providers/cuda/blob/CudaBlob.h"
#include "providers/cuda/runtime/CudaDevice.h"
#include "providers/cuda/runtime/DeviceMemoryPool.h"
#include "runtime/ep/MemoryPlanner.h"
#include "runtime/ep/WindowGeometry.h"

#include <algorithm>
#include <map>

namespace ortc::cuda {

namespace {
std::vector<int64_t> toVector(const flatbuffers::Vector<int64_t> *v) {
  return v ? std::vector<int64_t>(v->begin(), v->end()) : std::vector<int64_t>();
}
} // namespace

PlanRunner::~PlanRunner() {
  if (!device_)
    return;
  (void)device_->synchronize();
  graphs_.clear();
  if (arena_)
    (void)pool_->free(arena_);
  if (weights_)
    (void)device_->free(weights_);
}

Result<std::unique_ptr<PlanRunner>> PlanRunner::load(const EpContextView &context,
                                                     std::shared_ptr<DeviceMemoryPool> pool,
                                                     Options options) {
  CudaDevice *device = &pool->device();
  std::string what = "partition " + context.partitionName;
  // An inline blob starts anywhere inside its protobuf: verify an aligned copy.
  OwnedBlobBytes storage;
  Result<BlobView> envelope = copyAndOpenBlob(context.data, context.size, what, storage);
  if (!envelope.isOk())
    return envelope.status();
  Result<CudaBlobView> opened = openCudaBlob(storage.data(), storage.size(), what);
  if (!opened.isOk())
    return opened.status();
  const CudaBlobView &blob = opened.value();
  const fb::Plan &plan = *blob.plan;

  std::unique_ptr<PlanRunner> runner(new PlanRunner());
  runner->what_ = what;
  runner->pool_ = pool;
  runner->options_ = options;
  // The pool's device, shared: the pool lives as long as the runner.
  runner->device_ = std::shared_ptr<CudaDevice>(pool, device);

  std::vector<DimNode> nodes;
  if (plan.dims())
    for (const fb::DimNode *n : *plan.dims())
      nodes.push_back(DimNode{DimOp(n->op()), n->a(), n->b()});
  std::vector<std::string> symbols;
  if (plan.symbols())
    for (const flatbuffers::String *s : *plan.symbols())
      symbols.push_back(s->str());
  std::vector<TensorSignature> inputs;
  std::vector<std::vector<int64_t>> inputDims;
  for (size_t i = 0; i < plan.inputs()->size(); ++i) {
    const fb::TensorSignature *sig = plan.inputs()->Get(i);
    std::string name = i < context.inputNames.size() ? context.inputNames[i] : sig->name()->str();
    inputDims.push_back(toVector(sig->shape()));
    inputs.push_back(signatureFromDims(name, ElementType(sig->element_type()), inputDims.back(),
                                       nodes, symbols));
  }
  for (size_t i = 0; i < plan.outputs()->size(); ++i) {
    const fb::TensorSignature *sig = plan.outputs()->Get(i);
    std::string name = i < context.outputNames.size() ? context.outputNames[i] : sig->name()->str();
    runner->outputDims_.push_back(toVector(sig->shape()));
    runner->outputs_.push_back(signatureFromDims(name, ElementType(sig->element_type()),
                                                 runner->outputDims_.back(), nodes, symbols));
  }
  std::vector<DimBinding::Check> checks;
  if (plan.checks())
    for (const fb::DimCheck *c : *plan.checks())
      checks.push_back({c->a(), c->b(), c->what() ? c->what()->str() : std::string("dims")});
  // Every dim the plan sizes something by.
  std::vector<int64_t> used;
  for (const std::vector<int64_t> &dims : runner->outputDims_)
    used.insert(used.end(), dims.begin(), dims.end());
  for (const fb::Buffer *b : *plan.buffers())
    used.insert(used.end(), b->shape()->begin(), b->shape()->end());
  for (const fb::Step *s : *plan.steps())
    if (s->grid_dims())
      used.insert(used.end(), s->grid_dims()->begin(), s->grid_dims()->end());
  std::vector<DimBinding::ValueSource> valueSources;
  if (plan.value_symbols())
    for (const fb::ValueSymbol *v : *plan.value_symbols())
      valueSources.push_back({v->symbol(), v->input(), v->element()});
  Result<DimBinding> binding =
      DimBinding::create(std::move(nodes), std::move(symbols), std::move(inputs),
                         std::move(inputDims), std::move(checks), used, what,
                         std::move(valueSources));
  if (!binding.isOk())
    return binding.status();
  runner->binding_ = binding.takeValue();

  for (const fb::Buffer *b : *plan.buffers()) {
    Buffer buffer;
    buffer.kind = Kind(int(b->kind()));
    buffer.type = ElementType(b->element_type());
    buffer.dims = toVector(b->shape());
    buffer.index = b->index();
    buffer.offset = b->offset();
    buffer.aliasOf = b->alias_of();
    buffer.name = b->name() ? b->name()->str() : std::string();
    runner->buffers_.push_back(std::move(buffer));
  }

  // Code: every cubin, the PTX and the source; the device picks.
  ModuleImage image;
  image.what = what;
  for (const fb::Cubin *c : *plan.cubins())
    image.cubins.push_back({int(c->arch()), blob.cubins + c->offset(), size_t(c->size())});
  if (blob.ptxSize) {
    image.ptxArch = int(plan.ptx_arch());
    image.ptx.assign(blob.ptx, blob.ptxSize);
  }
  image.source.assign(blob.source, blob.sourceSize);
  if (plan.kernels()->size()) {
    Result<std::unique_ptr<CudaModule>> module = device->loadModule(image);
    if (!module.isOk())
      return module.status();
    runner->module_ = module.takeValue();
  }
  std::vector<void *> functions;
  for (const fb::Kernel *k : *plan.kernels()) {
    Result<void *> fn = runner->module_->function(k->name()->str());
    if (!fn.isOk())
      return Status::error(fn.status().code(), what + ": " + fn.status().message());
    functions.push_back(fn.value());
  }
  for (const fb::Step *s : *plan.steps()) {
    Step step;
    switch (s->kind()) {
    case fb::StepKind::Launch: step.kind = StepKind::Launch; break;
    case fb::StepKind::Copy: step.kind = StepKind::Copy; break;
    case fb::StepKind::Gemm: step.kind = StepKind::Gemm; break;
    case fb::StepKind::Conv: step.kind = StepKind::Conv; break;
    default: step.kind = StepKind::Pool; break;
    }
    step.hasKernel = s->has_kernel() || step.kind == StepKind::Launch || step.kind == StepKind::Pool;
    step.function = step.hasKernel && (step.kind == StepKind::Launch || step.kind == StepKind::Conv ||
                                       step.kind == StepKind::Pool)
                        ? functions[s->kernel()]
                        : nullptr;
    if (s->window())
      step.window.assign(s->window()->begin(), s->window()->end());
    step.autoPad = s->auto_pad();
    step.ceilMode = s->ceil_mode();
    step.group = s->group();
    step.scratch = s->scratch();
    if (s->grid_dims())
      step.gridDims.assign(s->grid_dims()->begin(), s->grid_dims()->end());
    step.transA = s->trans_a();
    step.transB = s->trans_b();
    step.alpha = s->alpha();
    step.compute = int(s->compute());
    step.epilogue = int(s->epilogue());
    step.node = s->node() ? s->node()->str() : std::string();
    step.inputs.assign(s->inputs()->begin(), s->inputs()->end());
    step.outputs.assign(s->outputs()->begin(), s->outputs()->end());
    step.threadsPerBlock = s->threads_per_block();
    step.maxBlocks = s->max_blocks();
    runner->steps_.push_back(std::move(step));
  }

  // The arena: the blob's static layout, or live ranges for the planner.
  const fb::MemoryPlan &memory = *plan.memory();
  runner->symbolicArena_ = memory.symbolic();
  runner->arenaAlignment_ = memory.alignment();
  std::vector<int> first, last;
  bufferLiveRanges(
      runner->steps_,
      [](const Step &step) {
        std::pair<std::vector<int>, std::vector<int>> ids(step.inputs, step.outputs);
        if (step.scratch >= 0) {
          ids.first.push_back(step.scratch);
          ids.second.push_back(step.scratch);
        }
        return ids;
      },
      [&](int id) {
        const Buffer &b = runner->buffers_[size_t(id)];
        return b.kind == Kind::Alias ? b.aliasOf : id;
      },
      runner->buffers_.size(), first, last);
  for (size_t id = 0; id < runner->buffers_.size(); ++id) {
    Buffer &b = runner->buffers_[id];
    b.firstStep = std::max(first[id], 0);
    b.lastStep = std::max(last[id], b.firstStep);
  }
  runner->staticLayout_.bytes = memory.fixed_bytes();
  runner->staticLayout_.offsets.assign(runner->buffers_.size(), 0);
  for (size_t id = 0; id < runner->buffers_.size(); ++id)
    runner->staticLayout_.offsets[id] = runner->buffers_[id].offset;

  if (blob.weightsSize) {
    Result<void *> weights = device->allocate(blob.weightsSize);
    if (!weights.isOk())
      return Status::error(weights.status().code(),
                           what + ": weights: " + weights.status().message());
    runner->weights_ = weights.value();
    std::lock_guard<std::mutex> order(device->streamOrder());
    if (Status s = device->copyToDevice(runner->weights_, blob.weights, blob.weightsSize);
        !s.isOk())
      return Status::error(s.code(), what + ": uploading the weights: " + s.message());
  }
  return runner;
}

Status PlanRunner::runGemm(const Step &step, const std::vector<void *> &address,
                          const std::vector<std::vector<int64_t>> &shape) {
  int ia = step.inputs[0], ib = step.inputs[1], iy = step.outputs[0];
  const std::vector<int64_t> &sa = shape[size_t(ia)], &sb = shape[size_t(ib)];
  auto fail = [&](const std::string &why) {
    return Status::error(StatusCode::InvalidArgument, what_ + ": node " + step.node + ": " + why);
  };
  // Row-major matrices: A [..., M, K] ([K, M] transposed), B [..., K, N].
  size_t ra = sa.size(), rb = sb.size();
  int64_t m = ra == 1 ? 1 : sa[ra - 2], k = sa[ra - 1];
  if (step.transA)
    std::swap(m, k);
  int64_t kb = rb == 1 ? sb[0] : sb[rb - 2], n = rb == 1 ? 1 : sb[rb - 1];
  if (step.transB)
    std::swap(kb, n);
  if (k != kb)
    return fail("the inner dims differ (" + std::to_string(k) + " and " + std::to_string(kb) + ")");
  auto product = [](const std::vector<int64_t> &s, size_t count) {
    int64_t p = 1;
    for (size_t i = 0; i < count; ++i)
      p *= s[i];
    return p;
  };
  int64_t batchA = ra > 2 ? product(sa, ra - 2) : 1, batchB = rb > 2 ? product(sb, rb - 2) : 1;
  GemmCall call;
  ElementType type = buffers_[size_t(iy)].type;
  call.type = type == ElementType::Float16    ? GemmCall::Type::F16
              : type == ElementType::BFloat16 ? GemmCall::Type::BF16
                                              : GemmCall::Type::F32;
  call.compute = GemmCall::Compute(step.compute);
  call.alpha = step.alpha;
  call.epilogue = GemmCall::Epilogue(step.epilogue);
  if (call.epilogue != GemmCall::Epilogue::None)
    call.bias = address[size_t(step.inputs[2])]; // one per column of Y, per row of Y^T
  // Column-major, Y^T = op(B)^T op(A)^T: cuBLAS's A is our B and its B our A.
  call.transA = step.transB;
  call.transB = step.transA;
  call.m = n;
  call.k = k;
  call.a = address[size_t(ib)];
  call.lda = step.transB ? k : n;
  call.b = address[size_t(ia)];
  call.ldb = step.transA ? m : k;
  call.c = address[size_t(iy)];
  call.ldc = n;
  if (batchB == 1 && !step.transA) {
    // One GEMM over every row of A's batch.
    call.n = batchA * m;
  } else {
    std::vector<int64_t> da(sa.begin(), sa.end() - std::min<size_t>(ra, 2)),
        db(sb.begin(), sb.end() - std::min<size_t>(rb, 2));
    if (batchA != 1 && batchB != 1 && da != db)
      return fail("batch dims that broadcast in part");
    call.n = m;
    call.batch = std::max(batchA, batchB);
    call.strideA = batchB == 1 ? 0 : k * n;
    call.strideB = batchA == 1 ? 0 : m * k;
    call.strideC = m * n;
  }
  if (call.m == 0 || call.n == 0)
    return Status::ok();
  if (Status s = device_->gemm(call); !s.isOk())
    return Status::error(s.code(), what_ + ": node " + step.node + ": " + s.message());
  return Status::ok();
}

Status PlanRunner::runWindow(const Step &step, const std::vector<void *> &address,
                             const std::vector<std::vector<int64_t>> &shape) {
  auto fail = [&](const std::string &why) {
    return Status::error(StatusCode::InvalidArgument, what_ + ": node " + step.node + ": " + why);
  };
  int ix = step.inputs[0], iy = step.outputs[0];
  const std::vector<int64_t> &sx = shape[size_t(ix)], &sy = shape[size_t(iy)];
  const std::vector<int64_t> &wnd = step.window;
  bool conv = step.kind == StepKind::Conv;
  // The pads as applied: auto_pad SAME depends on the input size.
  std::optional<WindowAxis> axes[2];
  for (int a = 0; a < 2; ++a) {
    axes[a] = windowAxis(sx[size_t(2 + a)], wnd[size_t(a)], wnd[size_t(2 + a)], wnd[size_t(4 + a)],
                         wnd[size_t(6 + a)], wnd[size_t(8 + a)], AutoPad(step.autoPad),
                         step.ceilMode);
    if (!axes[a] || axes[a]->out != sy[size_t(2 + a)])
      return fail("the window does not fit the input's spatial dims");
  }
  // ortc_window (SpatialKernels.h): n, c, h, w, oh, ow, kh, kw, sh, sw, dh,
  // dw, ph, pw, ph_end, pw_end, image.
  long long g[17] = {sx[0],        sx[1],        sx[2],   sx[3],   sy[2],   sy[3],
                     wnd[0],       wnd[1],       wnd[2],  wnd[3],  wnd[4],  wnd[5],
                     axes[0]->padBegin, axes[1]->padBegin, axes[0]->padEnd, axes[1]->padEnd, 0};
  size_t elem = elementSize(buffers_[size_t(iy)].type);
  auto launch = [&](void *x, void *y, int64_t threads) -> Status {
    if (threads == 0)
      return Status::ok();
    int64_t blocks = (threads + step.threadsPerBlock - 1) / step.threadsPerBlock;
    if (blocks > int64_t(step.maxBlocks))
      return fail(std::to_string(threads) + " threads need more blocks than a launch may have");
    void *args[3] = {&x, &y, g};
    KernelLaunch l;
    l.function = step.function;
    l.grid[0] = unsigned(blocks);
    l.block[0] = step.threadsPerBlock;
    l.args = args;
    return device_->launch(l);
  };
  if (!conv) {
    if (Status s = launch(address[size_t(ix)], address[size_t(iy)], sy[0] * sy[1] * sy[2] * sy[3]);
        !s.isOk())
      return Status::error(s.code(), what_ + ": node " + step.node + ": " + s.message());
    return Status::ok();
  }
  const std::vector<int64_t> &sw = shape[size_t(step.inputs[1])];
  int64_t groups = step.group, m = sw[0], c = sx[1];
  if (c != sw[1] * groups || m != sy[1] || m % groups)
    return fail("the weight's channels do not match the input's and output's");
  int64_t spatial = sy[2] * sy[3], kg = sw[1] * wnd[0] * wnd[1], mg = m / groups;
  void *col = step.hasKernel ? address[size_t(step.scratch)] : nullptr;
  ElementType type = buffers_[size_t(iy)].type;
  for (int64_t n = 0; n < sx[0]; ++n) {
    char *x = static_cast<char *>(address[size_t(ix)]);
    const void *columns = x + size_t(n * c * sx[2] * sx[3]) * elem;
    if (step.hasKernel) {
      g[16] = n;
      if (Status s = launch(x, col, c * wnd[0] * wnd[1] * spatial); !s.isOk())
        return Status::error(s.code(), what_ + ": node " + step.node + ": " + s.message());
      columns = col;
    }
    // Row-major Y_g [Mg, S] = W_g [Mg, Kg] x col_g [Kg, S]; column-major,
    // Y_g^T = col_g^T W_g^T: cuBLAS's A is the columns, its B the weight.
    GemmCall call;
    call.type = type == ElementType::Float16    ? GemmCall::Type::F16
                : type == ElementType::BFloat16 ? GemmCall::Type::BF16
                                                : GemmCall::Type::F32;
    call.compute = GemmCall::Compute(step.compute);
    call.m = spatial;
    call.n = mg;
    call.k = kg;
    call.a = columns;
    call.lda = spatial;
    call.strideA = kg * spatial;
    call.b = address[size_t(step.inputs[1])];
    call.ldb = kg;
    call.strideB = mg * kg;
    call.c = static_cast<char *>(address[size_t(iy)]) + size_t(n * m * spatial) * elem;
    call.ldc = spatial;
    call.strideC = mg * spatial;
    call.batch = groups;
    if (call.m == 0 || call.n == 0)
      continue;
    if (Status s = device_->gemm(call); !s.isOk())
      return Status::error(s.code(), what_ + ": node " + step.node + ": " + s.message());
  }
  return Status::ok();
}

DimBinding::ValueReader PlanRunner::valueReader(const std::vector<TensorView> &inputs) const {
  // A computed shape's few integers, copied back from the device once per
  // input and bind (the blob's verifier keeps such inputs small and static).
  return [this, &inputs, read = std::map<size_t, std::vector<int64_t>>()](
             size_t input, size_t element) mutable -> Result<int64_t> {
    auto found = read.find(input);
    if (found == read.end()) {
      const TensorView &view = inputs[input];
      size_t count = size_t(view.numElements());
      std::vector<int64_t> values(count);
      Status s = Status::ok();
      std::lock_guard<std::mutex> order(device_->streamOrder());
      if (view.type == ElementType::Int64) {
        s = device_->copyToHost(values.data(), view.data, count * 8);
      } else {
        std::vector<int32_t> narrow(count);
        s = device_->copyToHost(narrow.data(), view.data, count * 4);
        values.assign(narrow.begin(), narrow.end());
      }
      if (!s.isOk())
        return s;
      found = read.emplace(input, std::move(values)).first;
    }
    return found->second[element];
  };
}

Status PlanRunner::checkViews(const std::vector<int64_t> &values) const {
  auto count = [&](const Buffer &b) {
    int64_t n = 1;
    for (int64_t code : b.dims)
      n *= DimBinding::size(code, values);
    return n;
  };
  for (const Buffer &b : buffers_)
    if (b.kind == Kind::Alias) {
      int64_t have = count(buffers_[size_t(b.aliasOf)]), want = count(b);
      if (have != want)
        return Status::error(StatusCode::InvalidArgument,
                             what_ + ": node '" + b.name + "': a view of " + std::to_string(want) +
                                 " elements over " + std::to_string(have));
    }
  return Status::ok();
}

Result<std::vector<std::vector<int64_t>>>
PlanRunner::outputShapes(const std::vector<TensorView> &inputs) const {
  std::vector<int64_t> values;
  if (Status s = binding_.bind(inputs, values, valueReader(inputs)); !s.isOk())
    return s;
  if (Status s = checkViews(values); !s.isOk())
    return s;
  std::vector<std::vector<int64_t>> shapes;
  for (const std::vector<int64_t> &dims : outputDims_)
    shapes.push_back(DimBinding::shape(dims, values));
  return shapes;
}

Result<const PlanRunner::Layout *> PlanRunner::layoutFor(const std::vector<int64_t> &values) {
  if (!symbolicArena_)
    return &staticLayout_;
  auto found = layouts_.find(values);
  if (found != layouts_.end())
    return &found->second;
  if (layouts_.size() >= 64) // a bound on what many shapes keep
    layouts_.clear();
  Layout layout;
  layout.offsets.assign(buffers_.size(), 0);
  std::vector<ArenaSlot> slots;
  std::vector<size_t> slotBuffer;
  for (size_t id = 0; id < buffers_.size(); ++id) {
    const Buffer &b = buffers_[id];
    if (b.kind != Kind::Arena)
      continue;
    uint64_t count = 1;
    for (int64_t code : b.dims)
      if (__builtin_mul_overflow(count, uint64_t(DimBinding::size(code, values)), &count) ||
          count > (uint64_t(1) << 48))
        return Status::error(StatusCode::InvalidArgument,
                             what_ + ": intermediate '" + b.name + "' is too large for these inputs");
    ArenaSlot slot;
    slot.size = count * elementSize(b.type);
    slot.firstStep = b.firstStep;
    slot.lastStep = b.lastStep;
    slots.push_back(slot);
    slotBuffer.push_back(id);
  }
  ArenaPlan plan = planArena(slots, arenaAlignment_);
  for (size_t i = 0; i < slots.size(); ++i)
    layout.offsets[slotBuffer[i]] = slots[i].offset;
  layout.bytes = plan.bytes;
  return &layouts_.emplace(values, std::move(layout)).first->second;
}

Status PlanRunner::issueSteps(const std::vector<void *> &address,
                              const std::vector<std::vector<int64_t>> &shape,
                              const std::vector<int64_t> &values) {
  for (const Step &step : steps_) {
    if (step.kind == StepKind::Gemm) {
      if (Status s = runGemm(step, address, shape); !s.isOk())
        return s;
      continue;
    }
    if (step.kind == StepKind::Conv || step.kind == StepKind::Pool) {
      if (Status s = runWindow(step, address, shape); !s.isOk())
        return s;
      continue;
    }
    if (step.kind == StepKind::Copy) {
      int from = step.inputs[0], to = step.outputs[0];
      int64_t count = 1;
      for (int64_t d : shape[size_t(to)])
        count *= d;
      size_t bytes = size_t(count) * elementSize(buffers_[size_t(to)].type);
      if (bytes)
        if (Status s = device_->copyOnDevice(address[size_t(to)], address[size_t(from)], bytes);
            !s.isOk())
          return Status::error(s.code(), what_ + ": " + step.node + ": " + s.message());
      continue;
    }
    int64_t elements = 1;
    for (int64_t d : shape[size_t(step.outputs[0])])
      elements *= d;
    if (elements == 0)
      continue;
    // The kernel's parameters: each buffer's address, then every dim.
    std::vector<void *> pointers;
    std::vector<long long> dims;
    for (const std::vector<int> *ids : {&step.inputs, &step.outputs})
      for (int id : *ids) {
        pointers.push_back(address[size_t(id)]);
        for (int64_t d : shape[size_t(id)])
          dims.push_back(d);
      }
    if (dims.empty())
      dims.push_back(0);
    std::vector<void *> args;
    for (void *&p : pointers)
      args.push_back(&p);
    args.push_back(dims.data());
    KernelLaunch launch;
    launch.function = step.function;
    int64_t blocks = (elements + step.threadsPerBlock - 1) / step.threadsPerBlock;
    if (!step.gridDims.empty()) {
      blocks = 1;
      for (int64_t code : step.gridDims)
        blocks *= DimBinding::size(code, values);
      if (blocks == 0)
        continue;
    }
    if (blocks > int64_t(step.maxBlocks)) // each thread computes one element
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": node(s) " + step.node + ": " + std::to_string(elements) +
                               " elements need more blocks than a launch may have");
    launch.grid[0] = unsigned(blocks);
    launch.block[0] = step.threadsPerBlock;
    launch.args = args.data();
    if (Status s = device_->launch(launch); !s.isOk())
      return Status::error(s.code(), what_ + ": node(s) " + step.node + ": " + s.message());
  }
  return Status::ok();
}

PlanRunner::Stats PlanRunner::stats() const {
  std::lock_guard<std::mutex> lock(runMutex_);
  return stats_;
}

Status PlanRunner::run(const std::vector<TensorView> &inputs,
                       const std::vector<TensorView> &outputs) {
  std::vector<int64_t> values;
  if (Status s = binding_.bind(inputs, values, valueReader(inputs)); !s.isOk())
    return s;
  if (Status s = checkViews(values); !s.isOk())
    return s;
  if (outputs.size() != outputs_.size())
    return Status::error(StatusCode::InvalidArgument,
                         what_ + ": expected " + std::to_string(outputs_.size()) +
                             " outputs, got " + std::to_string(outputs.size()));
  for (size_t i = 0; i < outputs.size(); ++i)
    if (outputs[i].type != outputs_[i].type ||
        outputs[i].shape != DimBinding::shape(outputDims_[i], values))
      return Status::error(StatusCode::InvalidArgument,
                           what_ + ": output '" + outputs_[i].name +
                               "' does not have the shape and type the inputs make");

  std::lock_guard<std::mutex> lock(runMutex_);
  std::lock_guard<std::mutex> order(device_->streamOrder());
  Result<const Layout *> laidOut = layoutFor(values);
  if (!laidOut.isOk())
    return laidOut.status();
  const Layout &layout = *laidOut.value();
  if (layout.bytes > arenaBytes_) {
    // A bigger arena: the graphs captured with the old one go with it.
    graphs_.clear();
    if (arena_)
      (void)pool_->free(arena_);
    arena_ = nullptr;
    arenaBytes_ = 0;
    Result<void *> memory = pool_->allocate(layout.bytes);
    if (!memory.isOk())
      return Status::error(memory.status().code(), what_ + ": the arena (" +
                                                       std::to_string(layout.bytes) + " bytes): " +
                                                       memory.status().message());
    arena_ = memory.value();
    arenaBytes_ = layout.bytes;
    stats_.arenaBytes = arenaBytes_;
  }
  // Every buffer's address and shape for this run.
  std::vector<void *> address(buffers_.size(), nullptr);
  std::vector<std::vector<int64_t>> shape(buffers_.size());
  std::vector<void *> io;
  for (size_t id = 0; id < buffers_.size(); ++id) {
    const Buffer &b = buffers_[id];
    shape[id] = DimBinding::shape(b.dims, values);
    switch (b.kind) {
    case Kind::Input:
      address[id] = inputs[b.index].data;
      io.push_back(address[id]);
      break;
    case Kind::Output:
      address[id] = outputs[b.index].data;
      io.push_back(address[id]);
      break;
    case Kind::Weight:
      address[id] = static_cast<char *>(weights_) + b.offset;
      break;
    case Kind::Alias:
      address[id] = address[size_t(b.aliasOf)];
      break;
    case Kind::Arena:
      address[id] = static_cast<char *>(arena_) + layout.offsets[id];
      break;
    }
  }

  auto finish = [&]() -> Status {
    // Kernel faults surface here, with the partition named, rather than at
    // the next copy.
    if (Status s = device_->synchronize(); !s.isOk())
      return Status::error(s.code(), what_ + ": " + s.message());
    return Status::ok();
  };
  if (options_.graphs && stats_.graphsOff.empty()) {
    GraphKey key(values, io);
    auto found = graphs_.find(key);
    if (found != graphs_.end()) {
      if (Status s = found->second->launch(); !s.isOk())
        return Status::error(s.code(), what_ + ": " + s.message());
      ++stats_.graphReplays;
      return finish();
    }
    Status began = device_->beginCapture();
    if (began.isOk()) {
      Status issued = issueSteps(address, shape, values);
      Result<std::unique_ptr<CudaGraph>> graph = device_->endCapture();
      if (!issued.isOk())
        return issued;
      if (graph.isOk()) {
        if (graphs_.size() >= 32) // a bound on what many shapes keep
          graphs_.clear();
        CudaGraph &captured = *graph.value();
        graphs_.emplace(std::move(key), graph.takeValue());
        ++stats_.graphsCaptured;
        if (Status s = captured.launch(); !s.isOk())
          return Status::error(s.code(), what_ + ": " + s.message());
        return finish();
      }
      stats_.graphsOff = graph.status().message();
    } else {
      stats_.graphsOff = began.message();
    }
  }
  if (Status s = issueSteps(address, shape, values); !s.isOk())
    return s;
  ++stats_.streamRuns;
  return finish();
}

} // namespace ortc::cuda
