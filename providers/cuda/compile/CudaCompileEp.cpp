//===- CudaCompileEp.cpp - the compile half of the CUDA EP ----------------===//

#include "providers/cuda/compile/CudaCompileEp.h"

#include "providers/cuda/blob/CudaBlob.h"
#include "providers/cuda/compile/CudaClaims.h"
#include "providers/cuda/compile/KernelEmitter.h"
#include "providers/cuda/compile/KernelGroups.h"
#include "providers/cuda/compile/Nvrtc.h"
#include "providers/cuda/compile/Passes.h"
#include "providers/cuda/compile/ReductionKernels.h"
#include "providers/cuda/compile/SpatialKernels.h"
#include "providers/cuda/compile/DataMovementKernels.h"

#include "compiler/EP/PassContext.h"
#include "compiler/Lowering/LowerToLinalg.h"
#include "compiler/Lowering/Passes.h"
#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/SymbolicShapes.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"
#include "runtime/ep/MemoryPlanner.h"
#include "runtime/ep/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/Pass/PassManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <map>
#include <sstream>

using namespace mlir;

namespace ortc::cuda {

namespace {

constexpr uint64_t kWeightAlignment = 64;
/// Arena slots start on 256 bytes, as cuMemAlloc's allocations do: cuBLAS
/// and vectorized kernels may rely on it.
constexpr uint64_t kArenaAlignment = 256;
/// Blocks of one elementwise launch at most (the grid's x limit); each thread
/// computes one element.
constexpr uint32_t kMaxBlocks = 2147483647u;

class CudaCompiledPartition final : public CompiledPartition {
public:
  std::vector<char> blob;
  std::string notes;
  std::string archs;
};

/// Builds one partition's plan, kernels and weights.
class PartitionCompiler {
public:
  PartitionCompiler(func::FuncOp fn, const CudaCompileOptions &options)
      : fn(fn), options(options) {}
  FailureOr<std::unique_ptr<CudaCompiledPartition>> run();

private:
  std::optional<std::vector<int64_t>> planShape(Value value) const { return shapes->planShape(value); }
  int64_t planDim(int32_t id) const { return shapes->planDim(id); }
  int addBuffer(fb::BufferKind kind, Value value, std::string name);
  /// The buffer of `value`: made earlier, or a weight for a constant; -1
  /// when neither (a claim bug).
  int bufferFor(Value value);
  int newStep(fb::StepKind kind, std::string node);
  LogicalResult emitKernel(const KernelGroup &group);
  LogicalResult emitView(Operation *op);
  LogicalResult emitGemm(Operation *op);
  /// cuBLAS's compute type for `op`'s products: the precision option for f32
  /// matrices, f32 accumulation for f16 and bf16 ones.
  fb::GemmCompute computeFor(Operation *op) const {
    if (!cast<RankedTensorType>(op->getResult(0).getType()).getElementType().isF32())
      return fb::GemmCompute::F32;
    switch (options.precision) {
    case GemmPrecision::Tf32: return fb::GemmCompute::F32Tf32;
    case GemmPrecision::Fp16: return fb::GemmCompute::F32F16;
    case GemmPrecision::Bf16: return fb::GemmCompute::F32Bf16;
    case GemmPrecision::Fp32: break;
    }
    return fb::GemmCompute::F32;
  }
  LogicalResult emitReduction(Operation *op);
  LogicalResult emitSpatial(Operation *op);
  LogicalResult emitDataMovement(Operation *op);
  /// `inputs`' buffers as the step's inputs and a new buffer for `op`'s
  /// result as its output.
  LogicalResult bindOperands(fb::StepT &step, Operation *op, ValueRange inputs);
  /// A launch of kernel `name` (CUDA C++ `source`) over `inputs` into a new
  /// buffer for `op`'s result.
  FailureOr<fb::StepT *> emitKernelStep(Operation *op, const std::string &name,
                                        const std::string &source, ArrayRef<Value> inputs,
                                        int threadsPerBlock);
  LogicalResult compileKernels(std::string &source, CudaBlobParts &parts, std::string &notes);
  /// Lays the arena buffers out (MemoryPlan in CudaPlan.fbs); a note for
  /// the partition's summary.
  std::string planMemory();

  func::FuncOp fn;
  const CudaCompileOptions &options;
  std::unique_ptr<SymbolicShapes> shapes;
  fb::PlanT plan;
  std::vector<char> weights;
  llvm::DenseMap<Value, int> buffers;
  OwningOpRef<ModuleOp> kernels;
  std::vector<std::string> kernelNames;
  int gemmCount = 0;
  std::map<std::string, std::string> directSources; // kernels written directly, by name
};


int PartitionCompiler::addBuffer(fb::BufferKind kind, Value value, std::string name) {
  std::optional<std::vector<int64_t>> shape = planShape(value);
  if (!shape)
    return -1;
  auto buffer = std::make_unique<fb::BufferT>();
  buffer->kind = kind;
  buffer->element_type = onnxElementCode(cast<RankedTensorType>(value.getType()).getElementType());
  bool symbolic = false;
  uint64_t count = 1;
  for (int64_t d : *shape) {
    symbolic |= d < 0;
    count *= d < 0 ? 1 : uint64_t(d);
  }
  buffer->size = symbolic ? 0 : count * elementSize(ElementType(buffer->element_type));
  buffer->shape = std::move(*shape);
  buffer->name = std::move(name);
  plan.buffers.push_back(std::move(buffer));
  return int(plan.buffers.size() - 1);
}

int PartitionCompiler::bufferFor(Value value) {
  auto found = buffers.find(value);
  if (found != buffers.end())
    return found->second;
  Operation *def = value.getDefiningOp();
  if (!def || def->getName().getStringRef() != "onnx.Constant")
    return -1;
  std::optional<std::vector<char>> bytes = constantBytes(def);
  if (!bytes)
    return -1;
  int id = addBuffer(fb::BufferKind::Weight, value, "constant");
  if (id < 0)
    return -1;
  uint64_t offset = (weights.size() + kWeightAlignment - 1) / kWeightAlignment * kWeightAlignment;
  weights.resize(offset);
  weights.insert(weights.end(), bytes->begin(), bytes->end());
  plan.buffers[id]->offset = offset;
  plan.buffers[id]->size = bytes->size();
  buffers[value] = id;
  return id;
}

int PartitionCompiler::newStep(fb::StepKind kind, std::string node) {
  auto step = std::make_unique<fb::StepT>();
  step->kind = kind;
  step->node = std::move(node);
  plan.steps.push_back(std::move(step));
  return int(plan.steps.size() - 1);
}

LogicalResult PartitionCompiler::emitKernel(const KernelGroup &group) {
  std::string name = fn.getSymName().str() + "_k" + std::to_string(kernelNames.size());
  buildKernelFunction(group, *kernels, name);
  std::string nodes;
  for (Operation *op : group.ops) {
    nodes += (nodes.empty() ? "" : ",") + onnxNodeName(op);
    for (const AssumedEqualDims &assumed : assumedEqualDims(op, *shapes)) {
      auto check = std::make_unique<fb::DimCheckT>();
      check->a = planDim(assumed.input);
      check->b = planDim(assumed.output);
      check->what = assumed.describe(op, *shapes);
      plan.checks.push_back(std::move(check));
    }
  }
  int index = newStep(fb::StepKind::Launch, nodes);
  fb::StepT &step = *plan.steps[index];
  step.kernel = uint32_t(kernelNames.size());
  step.threads_per_block = kElementwiseThreadsPerBlock;
  step.max_blocks = kMaxBlocks;
  kernelNames.push_back(name);
  for (Value v : group.inputs) {
    int id = bufferFor(v);
    if (id < 0)
      return group.ops.front()->emitError("cuda_ep: a kernel input has no buffer (a claim bug)");
    step.inputs.push_back(id);
  }
  for (Value v : group.outputs) {
    int id = addBuffer(fb::BufferKind::Arena, v, onnxNodeName(v.getDefiningOp()));
    if (id < 0)
      return group.ops.front()->emitError("cuda_ep: a dim of a kernel output has no expression");
    buffers[v] = id;
    step.outputs.push_back(id);
  }
  return success();
}

LogicalResult PartitionCompiler::emitView(Operation *op) {
  int source = bufferFor(op->getOperand(0));
  if (source < 0)
    return op->emitError("cuda_ep: the input of view '") << onnxNodeName(op) << "' has no buffer";
  int id = addBuffer(fb::BufferKind::Alias, op->getResult(0), onnxNodeName(op));
  if (id < 0)
    return op->emitError("cuda_ep: a dim of view '") << onnxNodeName(op) << "' has no expression";
  // Views of views share the first one's bytes.
  while (plan.buffers[source]->kind == fb::BufferKind::Alias)
    source = plan.buffers[source]->alias_of;
  plan.buffers[id]->alias_of = source;
  buffers[op->getResult(0)] = id;
  return success();
}

LogicalResult PartitionCompiler::emitGemm(Operation *op) {
  fb::StepT &step = *plan.steps[newStep(fb::StepKind::Gemm, onnxNodeName(op))];
  auto withBias = dyn_cast<fused::MatMulBiasOp>(op);
  // The CPU EP folds residuals in; cuda-fold-gemm-epilogue never does.
  if (withBias && withBias.getResidual())
    return op->emitError("cuda_ep: '") << onnxNodeName(op) << "' has a residual operand";
  if (failed(bindOperands(step, op, op->getOperands().take_front(withBias ? 3 : 2))))
    return failure();
  if (auto gemm = dyn_cast<onnx_dialect::GemmOp>(op)) {
    step.trans_a = gemm.getTransA() != 0;
    step.trans_b = gemm.getTransB() != 0;
    step.alpha = gemm.getAlpha().convertToFloat();
  }
  if (withBias) {
    step.trans_b = withBias.getTransB();
    step.alpha = withBias.getAlpha().convertToFloat();
    StringRef activation = withBias.getActivation();
    step.epilogue = activation == "relu"        ? fb::GemmEpilogue::BiasRelu
                    : activation == "gelu_tanh" ? fb::GemmEpilogue::BiasGeluTanh
                                                : fb::GemmEpilogue::Bias;
    if (activation != "none" && activation != "relu" && activation != "gelu_tanh")
      return op->emitError("cuda_ep: '") << onnxNodeName(op) << "' has activation '" << activation
                                         << "', which no cuBLASLt epilogue computes";
  }
  step.compute = computeFor(op);
  ++gemmCount;
  return success();
}

LogicalResult PartitionCompiler::bindOperands(fb::StepT &step, Operation *op,
                                              ValueRange inputs) {
  for (Value v : inputs) {
    int id = bufferFor(v);
    if (id < 0)
      return op->emitError("cuda_ep: an input of '") << onnxNodeName(op) << "' has no buffer";
    step.inputs.push_back(id);
  }
  int y = addBuffer(fb::BufferKind::Arena, op->getResult(0), onnxNodeName(op));
  if (y < 0)
    return op->emitError("cuda_ep: a dim of '") << onnxNodeName(op) << "' has no expression";
  buffers[op->getResult(0)] = y;
  step.outputs.push_back(y);
  return success();
}

FailureOr<fb::StepT *> PartitionCompiler::emitKernelStep(Operation *op, const std::string &name,
                                                         const std::string &source,
                                                         ArrayRef<Value> inputs,
                                                         int threadsPerBlock) {
  fb::StepT &step = *plan.steps[newStep(fb::StepKind::Launch, onnxNodeName(op))];
  step.kernel = uint32_t(kernelNames.size());
  step.threads_per_block = uint32_t(threadsPerBlock);
  step.max_blocks = kMaxBlocks;
  if (failed(bindOperands(step, op, inputs)))
    return failure();
  kernelNames.push_back(name);
  directSources[name] = source;
  return &step;
}

LogicalResult PartitionCompiler::emitReduction(Operation *op) {
  std::string name = fn.getSymName().str() + "_k" + std::to_string(kernelNames.size());
  FailureOr<ReductionKernel> kernel = emitReductionKernel(op, name);
  std::optional<std::vector<int64_t>> inputShape = planShape(op->getOperand(0));
  if (failed(kernel))
    return failure();
  if (!inputShape)
    return op->emitError("cuda_ep: a dim of '") << onnxNodeName(op) << "' has no expression";
  FailureOr<fb::StepT *> step =
      emitKernelStep(op, name, kernel->source, kernel->inputs, kReductionThreadsPerBlock);
  if (failed(step))
    return failure();
  for (int64_t j : kernel->gridDims)
    (*step)->grid_dims.push_back((*inputShape)[size_t(j)]);
  return success();
}

LogicalResult PartitionCompiler::emitDataMovement(Operation *op) {
  std::string name = fn.getSymName().str() + "_k" + std::to_string(kernelNames.size());
  FailureOr<DataMovementKernel> kernel = emitDataMovementKernel(op, name);
  if (failed(kernel))
    return failure();
  return success(succeeded(
      emitKernelStep(op, name, kernel->source, kernel->inputs, kElementwiseThreadsPerBlock)));
}

LogicalResult PartitionCompiler::emitSpatial(Operation *op) {
  bool conv = isa<onnx_dialect::ConvOp>(op);
  WindowAttrs w = windowAttrs(op);
  fb::StepT &step =
      *plan.steps[newStep(conv ? fb::StepKind::Conv : fb::StepKind::Pool, onnxNodeName(op))];
  step.window = {w.kernel[0],   w.kernel[1],   w.stride[0], w.stride[1], w.dilation[0],
                 w.dilation[1], w.padBegin[0], w.padBegin[1], w.padEnd[0], w.padEnd[1]};
  step.auto_pad = uint8_t(w.autoPad);
  step.ceil_mode = w.ceilMode;
  step.group = w.group;
  step.threads_per_block = kSpatialThreadsPerBlock;
  step.max_blocks = kMaxBlocks;
  step.compute = computeFor(op);
  std::string name = fn.getSymName().str() + "_k" + std::to_string(kernelNames.size());
  FailureOr<std::string> source = emitSpatialKernel(op, name);
  if (failed(source))
    return failure();
  if (!source->empty()) {
    step.kernel = uint32_t(kernelNames.size());
    step.has_kernel = true;
    kernelNames.push_back(name);
    directSources[name] = *source;
  }
  if (failed(bindOperands(step, op, op->getOperands().take_front(conv ? 2 : 1))))
    return failure();
  if (conv && step.has_kernel) {
    // The column matrix [C, KH, KW, OH, OW] in the arena, for this step.
    std::optional<std::vector<int64_t>> x = planShape(op->getOperand(0)),
                                        y = planShape(op->getResult(0));
    if (!x || !y || x->size() != 4 || y->size() != 4)
      return op->emitError("cuda_ep: Conv '") << onnxNodeName(op) << "' is not 4-D";
    auto scratch = std::make_unique<fb::BufferT>();
    scratch->kind = fb::BufferKind::Arena;
    scratch->element_type = plan.buffers[step.outputs[0]]->element_type;
    scratch->shape = {(*x)[1], w.kernel[0], w.kernel[1], (*y)[2], (*y)[3]};
    bool symbolic = llvm::any_of(scratch->shape, [](int64_t d) { return d < 0; });
    uint64_t count = 1;
    for (int64_t d : scratch->shape)
      count *= d < 0 ? 1 : uint64_t(d);
    scratch->size = symbolic ? 0 : count * elementSize(ElementType(scratch->element_type));
    scratch->name = onnxNodeName(op) + " columns";
    plan.buffers.push_back(std::move(scratch));
    step.scratch = int(plan.buffers.size() - 1);
  }
  if (conv)
    ++gemmCount;
  return success();
}

LogicalResult PartitionCompiler::compileKernels(std::string &source, CudaBlobParts &parts,
                                                std::string &notes) {
  PassManager pm(fn.getContext());
  preparePassManager(pm);
  OnnxLowerToLinalgOptions lower;
  lower.failOnUnlowered = true;
  pm.addNestedPass<func::FuncOp>(createOnnxLowerToLinalg(lower));
  pm.addPass(createCudaEmitKernelSource());
  if (failed(pm.run(*kernels)))
    return fn.emitError("cuda_ep: generating the kernels of ") << fn.getSymName() << " failed";
  source = kernelPrelude();
  for (const std::string &name : kernelNames) {
    auto direct = directSources.find(name);
    if (direct != directSources.end()) {
      source += "\n" + direct->second;
      continue;
    }
    auto kernel = kernels->lookupSymbol<func::FuncOp>(name);
    source += "\n" + kernel->getAttrOfType<StringAttr>("ortc.cuda.source").getValue().str();
  }
  for (const std::string &name : kernelNames) {
    auto k = std::make_unique<fb::KernelT>();
    k->name = name;
    plan.kernels.push_back(std::move(k));
  }
  if (kernelNames.empty())
    return success();

  std::string unit = fn.getSymName().str() + ".cu";
  for (auto [i, arch] : llvm::enumerate(options.archs)) {
    CudaBinary binary;
    std::string error;
    if (!compileCuda(source, unit, arch, binary, error))
      return fn.emitError("cuda_ep: ") << error;
    auto cubin = std::make_unique<fb::CubinT>();
    cubin->arch = uint32_t(arch.major * 10 + arch.minor);
    cubin->offset = parts.cubins.size();
    cubin->size = binary.cubin.size();
    parts.cubins.insert(parts.cubins.end(), binary.cubin.begin(), binary.cubin.end());
    plan.cubins.push_back(std::move(cubin));
    if (i != 0)
      continue;
    // PTX of the oldest architecture asked for runs on every newer GPU.
    parts.ptx = binary.ptx;
    plan.ptx_arch = uint32_t(arch.major * 10 + arch.minor);
    int64_t spills = 0;
    int maxRegisters = 0;
    for (const KernelResources &r : parsePtxasReport(binary.log)) {
      spills += r.spillStores + r.spillLoads;
      maxRegisters = std::max(maxRegisters, r.registers);
      for (auto &k : plan.kernels)
        if (k->name == r.kernel) {
          k->registers = r.registers;
          k->spill_bytes = r.spillStores + r.spillLoads;
        }
    }
    std::ostringstream text;
    text << kernelNames.size() << " kernel(s), at most " << maxRegisters << " registers, "
         << spills << " spill bytes (" << arch.name() << ")";
    notes = text.str();
  }
  return success();
}

std::string PartitionCompiler::planMemory() {
  auto rootOf = [&](int id) {
    const fb::BufferT &b = *plan.buffers[size_t(id)];
    return b.kind == fb::BufferKind::Alias ? b.alias_of : id;
  };
  // A Conv's scratch is written and read by its own step.
  auto io = [](const std::unique_ptr<fb::StepT> &step) {
    std::pair<std::vector<int32_t>, std::vector<int32_t>> ids(step->inputs, step->outputs);
    if (step->scratch >= 0) {
      ids.first.push_back(step->scratch);
      ids.second.push_back(step->scratch);
    }
    return ids;
  };
  std::vector<int> first, last;
  bufferLiveRanges(plan.steps, io, rootOf, plan.buffers.size(), first, last);
  std::vector<ArenaSlot> slots;
  std::vector<size_t> slotBuffer;
  bool symbolic = false;
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    const fb::BufferT &b = *plan.buffers[id];
    if (b.kind != fb::BufferKind::Arena)
      continue;
    symbolic |= llvm::any_of(b.shape, [](int64_t d) { return d < 0; });
    ArenaSlot slot;
    slot.size = b.size;
    slot.firstStep = std::max(first[id], 0);
    slot.lastStep = std::max(last[id], slot.firstStep);
    slots.push_back(slot);
    slotBuffer.push_back(id);
  }
  plan.memory = std::make_unique<fb::MemoryPlanT>();
  plan.memory->alignment = uint32_t(kArenaAlignment);
  plan.memory->symbolic = symbolic;
  if (slots.empty())
    return "no arena";
  if (symbolic)
    return std::to_string(slots.size()) + " arena buffer(s), laid out per shape at run time";
  ArenaPlan arena = planArena(slots, kArenaAlignment);
  for (size_t i = 0; i < slots.size(); ++i)
    plan.buffers[slotBuffer[i]]->offset = slots[i].offset;
  plan.memory->fixed_bytes = arena.bytes;
  plan.memory->naive_fixed_bytes = arena.naiveBytes;
  return "arena " + std::to_string(arena.bytes) + " bytes for " + std::to_string(slots.size()) +
         " buffer(s) (" + std::to_string(arena.naiveBytes) + " unshared)";
}

FailureOr<std::unique_ptr<CudaCompiledPartition>> PartitionCompiler::run() {
  kernels = ModuleOp::create(fn.getLoc());
  plan.format_version = kCudaPlanFormatVersion;
  plan.ep_name = kCudaEpName;
  plan.ep_version = kCudaEpVersion;
  plan.kernel_abi = kCudaKernelAbi;
  plan.compiler_versions = std::string("ortc ") + kCudaEpVersion + ", NVRTC " + nvrtcVersion();
  plan.partition_name = fn.getSymName().str();

  // Attention as GEMMs and a softmax; biases in cuBLASLt's epilogue where
  // it takes them, else as elementwise adds. Run as passes: the IR is
  // verified after each, and invalid IR names the pass that made it.
  PassManager rewrites(fn.getContext(), func::FuncOp::getOperationName());
  preparePassManager(rewrites);
  rewrites.addPass(createCudaExpandAttention());
  rewrites.addPass(createCudaSplitToSlices());
  rewrites.addPass(createCudaFoldGemmEpilogue());
  rewrites.addPass(createCudaSplitGemmBias());
  if (failed(rewrites.run(fn)))
    return failure();
  shapes = std::make_unique<SymbolicShapes>(fn);
  refineStaticResultTypes(fn, *shapes);
  auto signatureOf = [&](Value value, std::string name) -> std::unique_ptr<fb::TensorSignatureT> {
    std::optional<std::vector<int64_t>> shape = planShape(value);
    if (!shape)
      return nullptr;
    auto sig = std::make_unique<fb::TensorSignatureT>();
    sig->name = std::move(name);
    sig->element_type = onnxElementCode(cast<RankedTensorType>(value.getType()).getElementType());
    sig->shape = std::move(*shape);
    return sig;
  };
  for (BlockArgument arg : fn.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()))
      return fn.emitError("cuda_ep: partition input ") << arg.getArgNumber() << " is not a tensor";
    std::string name = "input" + std::to_string(arg.getArgNumber());
    plan.inputs.push_back(signatureOf(arg, name));
    int id = plan.inputs.back() ? addBuffer(fb::BufferKind::Input, arg, name) : -1;
    if (id < 0)
      return fn.emitError("cuda_ep: a dim of partition input ")
             << arg.getArgNumber() << " has no expression";
    plan.buffers[id]->index = arg.getArgNumber();
    buffers[arg] = id;
    // Elements that are symbols (a computed Reshape target) are bound from
    // the input's data.
    if (const SmallVector<int32_t> *elements = shapes->elements(arg))
      for (auto [k, element] : llvm::enumerate(*elements)) {
        const DimNode &node = shapes->table().node(element);
        if (node.op == DimOp::Symbol)
          plan.value_symbols.emplace_back(uint32_t(node.a), arg.getArgNumber(), uint32_t(k));
      }
  }

  // Steps in program order; a kernel runs at its group's last member.
  std::vector<KernelGroup> groups = formKernelGroups(fn, *shapes);
  llvm::DenseMap<Operation *, size_t> groupEndingAt;
  for (auto [i, group] : llvm::enumerate(groups))
    groupEndingAt[group.last()] = i;
  for (Operation &op : fn.getBody().front().without_terminator()) {
    StringRef opName = op.getName().getStringRef();
    if (opName == "onnx.Constant" || opName == "onnx.NoValue")
      continue;
    if (isKernelOp(&op)) {
      auto ending = groupEndingAt.find(&op);
      if (ending != groupEndingAt.end() && failed(emitKernel(groups[ending->second])))
        return failure();
      continue;
    }
    // Each family's emitter, for the op it claims.
    using Emitter = LogicalResult (PartitionCompiler::*)(Operation *);
    const std::pair<bool, Emitter> families[] = {
        {isCudaViewOp(&op), &PartitionCompiler::emitView},
        {isCudaGemmOp(&op), &PartitionCompiler::emitGemm},
        {isReductionKernelOp(&op), &PartitionCompiler::emitReduction},
        {isSpatialKernelOp(&op), &PartitionCompiler::emitSpatial},
        {isDataMovementKernelOp(&op), &PartitionCompiler::emitDataMovement},
    };
    auto family = llvm::find_if(families, [](const auto &f) { return f.first; });
    if (family != std::end(families)) {
      if (failed((this->*family->second)(&op)))
        return failure();
      continue;
    }
    return op.emitError("cuda_ep: node '")
           << onnxNodeName(&op) << "' was placed on cuda_ep, which has no kernel for it (a claim bug)";
  }

  // Outputs: a kernel's result lands in the caller's buffer directly;
  // anything else (an input, a weight, a view, a value returned twice) is
  // copied there.
  Operation *terminator = fn.getBody().front().getTerminator();
  llvm::SmallPtrSet<Value, 8> returned;
  for (auto [i, value] : llvm::enumerate(terminator->getOperands())) {
    std::string name = "output" + std::to_string(i);
    plan.outputs.push_back(signatureOf(value, name));
    int id = plan.outputs.back() ? bufferFor(value) : -1;
    if (id < 0)
      return fn.emitError("cuda_ep: partition output ") << i << " has no buffer";
    fb::BufferT &buffer = *plan.buffers[id];
    if (buffer.kind == fb::BufferKind::Arena && returned.insert(value).second) {
      buffer.kind = fb::BufferKind::Output;
      buffer.index = uint32_t(i);
      continue;
    }
    int out = addBuffer(fb::BufferKind::Output, value, name);
    plan.buffers[out]->index = uint32_t(i);
    int step = newStep(fb::StepKind::Copy, name);
    plan.steps[step]->inputs.push_back(id);
    plan.steps[step]->outputs.push_back(out);
  }
  plan.symbols = shapes->symbolNames();
  for (const DimNode &n : shapes->table().nodes())
    plan.dims.push_back(fb::DimNode(uint8_t(n.op), n.a, n.b));

  std::string memoryNote = planMemory();
  CudaBlobParts parts;
  std::string notes;
  if (failed(compileKernels(parts.source, parts, notes)))
    return failure();
  parts.weights = std::move(weights);
  Result<std::vector<char>> blob = writeCudaBlob(plan, parts);
  if (!blob.isOk())
    return fn.emitError("cuda_ep: ") << blob.status().message();
  auto compiled = std::make_unique<CudaCompiledPartition>();
  compiled->blob = blob.takeValue();
  compiled->notes = notes.empty() ? "no kernels" : notes;
  if (gemmCount)
    compiled->notes += "; " + std::to_string(gemmCount) + " cuBLAS GEMM(s)";
  compiled->notes += "; " + memoryNote;
  for (const CudaArch &arch : options.archs)
    compiled->archs += (compiled->archs.empty() ? "" : ",") + arch.name();
  return compiled;
}

class CudaCompileEp final : public CompileEp {
public:
  explicit CudaCompileEp(CudaCompileOptions options) : options_(std::move(options)) {
    identity_ = EpIdentity{kCudaEpName, DeviceType::Cuda, 0};
  }
  const EpIdentity &identity() const override { return identity_; }
  KernelMatch supportsOp(const NodeQuery &query) const override {
    return matchCudaOp(query, name());
  }
  /// Everything it supports, whatever the cost model says: a user who puts
  /// cuda before cpu in --ep wants the GPU to run what it can (as
  /// onnxruntime's CUDA EP does), except shape arithmetic: an op whose
  /// results are all tiny (rank 0 or 1, at most 16 elements) and read by an
  /// op it does not take is left to the cost model, which keeps such chains
  /// (Shape -> Gather -> Cast -> Range) on the host, as onnxruntime keeps
  /// them on the CPU: their values size later tensors there.
  std::vector<Operation *> claimNodes(func::FuncOp graph) const override {
    SymbolicShapes shapes(graph);
    std::vector<Operation *> ops;
    llvm::DenseSet<Operation *> claimed;
    for (Operation &op : graph.getBody().front().without_terminator()) {
      if (!isPlaceableOp(&op))
        continue;
      NodeQuery query = NodeQuery::fromOp(&op);
      query.shapes = &shapes;
      if (supportsOp(query).isSupported()) {
        ops.push_back(&op);
        claimed.insert(&op);
      }
    }
    auto tiny = [](Operation *op) {
      return llvm::all_of(op->getResults(), [](Value v) {
        auto t = dyn_cast<RankedTensorType>(v.getType());
        return t && t.hasStaticShape() && t.getRank() <= 1 && t.getNumElements() <= 16;
      });
    };
    // Backwards, so that a chain ending in a host op is released whole.
    for (Operation *op : llvm::reverse(ops)) {
      if (!tiny(op))
        continue;
      bool hostUser = false;
      for (Value v : op->getResults())
        for (Operation *user : v.getUsers())
          hostUser |= !claimed.count(user) && !isa<func::ReturnOp>(user);
      if (hostUser)
        claimed.erase(op);
    }
    std::vector<Operation *> out;
    for (Operation *op : ops)
      if (claimed.count(op))
        out.push_back(op);
    return out;
  }
  std::vector<std::string> contextSourceKeys() const override { return {kCudaContextSource}; }

  FailureOr<std::unique_ptr<CompiledPartition>> compilePartition(func::FuncOp partition) override {
    PartitionCompiler compiler(partition, options_);
    FailureOr<std::unique_ptr<CudaCompiledPartition>> compiled = compiler.run();
    if (failed(compiled))
      return failure();
    return std::unique_ptr<CompiledPartition>(std::move(*compiled));
  }

  FailureOr<EpContextBlob> saveContext(CompiledPartition &&compiled) override {
    auto &cuda = static_cast<CudaCompiledPartition &>(compiled);
    EpContextBlob out;
    out.source = kCudaContextSource;
    out.hardwareArchitecture = cuda.archs;
    out.epSdkVersion = std::string("ortc cuda_ep ") + kCudaEpVersion + " (kernel abi " +
                       std::to_string(kCudaKernelAbi) + ", NVRTC " + nvrtcVersion() + ")";
    out.notes = cuda.notes;
    out.bytes = std::move(cuda.blob); // hundreds of MiB: moved, not copied
    return out;
  }

private:
  EpIdentity identity_;
  CudaCompileOptions options_;
};

} // namespace

std::optional<GemmPrecision> parseGemmPrecision(const std::string &text) {
  if (text == "fp32")
    return GemmPrecision::Fp32;
  if (text == "tf32")
    return GemmPrecision::Tf32;
  if (text == "fp16")
    return GemmPrecision::Fp16;
  if (text == "bf16")
    return GemmPrecision::Bf16;
  return std::nullopt;
}

bool parseArchList(const std::string &text, std::vector<CudaArch> &out, std::string &error) {
  out.clear();
  size_t start = 0;
  while (start <= text.size()) {
    size_t comma = text.find(',', start);
    std::string item = text.substr(start, comma == std::string::npos ? std::string::npos
                                                                     : comma - start);
    std::optional<CudaArch> arch = parseCudaArch(item);
    if (!arch) {
      error = "'" + item + "' is not a CUDA architecture (sm_50 or newer, e.g. sm_90)";
      return false;
    }
    if (!llvm::is_contained(out, *arch))
      out.push_back(*arch);
    if (comma == std::string::npos)
      break;
    start = comma + 1;
  }
  // PTX comes from the first, which should be the oldest.
  llvm::sort(out, [](const CudaArch &a, const CudaArch &b) {
    return a.major * 10 + a.minor < b.major * 10 + b.minor;
  });
  return !out.empty();
}

std::unique_ptr<CompileEp> createCudaCompileEp(const CudaCompileOptions &options) {
  return std::make_unique<CudaCompileEp>(options);
}

CompileEpPlugin cudaCompileEpPlugin() {
  CompileEpPlugin plugin;
  plugin.name = kCudaEpName;
  plugin.aliases = {"cuda"};
  plugin.summary = "fused elementwise CUDA kernels from NVRTC (cubins + PTX), one blob per partition";
  plugin.options = {
      {"arch", "LIST",
       "The GPU architectures to build cubins for, comma separated (sm_80,sm_90); the "
       "blob also holds PTX for the oldest, which newer GPUs JIT-compile.",
       "sm_90"},
      {"precision", "fp32|tf32|fp16|bf16",
       "How MatMul and Gemm on f32 compute: fp32 exactly, or with the inputs rounded to "
       "tf32, fp16 or bf16 for the tensor cores (cuBLAS's compute types). f16 and bf16 "
       "matrices accumulate in f32 either way.",
       "fp32"},
  };
  plugin.create = [](const EpOptionMap &options, std::string &error) -> std::unique_ptr<CompileEp> {
    CudaCompileOptions cudaOptions;
    auto arch = options.find("arch");
    if (arch != options.end() && !parseArchList(arch->second, cudaOptions.archs, error)) {
      error = "cuda_ep: option arch='" + arch->second + "': " + error;
      return nullptr;
    }
    auto precision = options.find("precision");
    if (precision != options.end()) {
      std::optional<GemmPrecision> p = parseGemmPrecision(precision->second);
      if (!p) {
        error = "cuda_ep: option precision='" + precision->second +
                "': not a precision (fp32, tf32, fp16 or bf16)";
        return nullptr;
      }
      cudaOptions.precision = *p;
    }
    return createCudaCompileEp(cudaOptions);
  };
  plugin.registerPasses = [](mlir::DialectRegistry &) { registerOrtcCudaPasses(); };
  plugin.usedByDefault = false;
  return plugin;
}

} // namespace ortc::cuda
