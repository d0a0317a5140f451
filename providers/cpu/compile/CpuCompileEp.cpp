//===- CpuCompileEp.cpp - the compile half of the CPU EP ------------------===//

#include "providers/cpu/compile/CpuCompileEp.h"

#include "compiler/Lowering/LowerToLinalg.h"
#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/ShapeRules/SequenceTypes.h"
#include "compiler/Transforms/SymbolicShapes.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"
#include "providers/cpu/blob/CpuBlob.h"
#include "providers/cpu/blob/CpuPlan_generated.h"
#include "providers/cpu/compile/CpuClaims.h"
#include "providers/cpu/compile/KernelPipeline.h"
#include "providers/cpu/compile/Passes.h"
#include "providers/cpu/compile/SharedObjectEmitter.h"
#include "providers/cpu/compile/TargetCpu.h"
#include "providers/cpu/kernels/Gemm.h"
#include "providers/cpu/kernels/ThreadPool.h"
#include "providers/cpu/runtime/CpuRuntimeEp.h"
#include "runtime/ep/MemoryPlanner.h"

#include "llvm/ADT/STLExtras.h"

#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/IRMapping.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Transforms/RegionUtils.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/DenseSet.h"
#include "llvm/ADT/SmallPtrSet.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/SetVector.h"
#include "llvm/IR/LLVMContext.h"
#include "llvm/IR/Module.h"
#include "llvm/Support/FormatVariadic.h"

#include <cstring>
#include <functional>
#include <optional>

using namespace mlir;

namespace ortc::cpu {

namespace {

constexpr uint64_t kAlignment = 64;
/// Constants up to this many elements are baked into generated kernels.
constexpr int64_t kInlineConstantElements = 16;
/// Most ops one generated kernel fuses: elementwise fusion clones a growing
/// body per op it fuses, so a kernel costs the square of its length to
/// compile; capped, a chain compiles in time linear in its length, at one
/// more pass over memory per this many ops.
constexpr size_t kMaxKernelOps = 64;
constexpr const char *kCpuEpVersion = "0.1.0";

uint64_t alignUp(uint64_t v, uint64_t a) { return (v + a - 1) / a * a; }

std::string formatBytes(uint64_t bytes) {
  if (bytes >= (1u << 20))
    return llvm::formatv("{0:F1} MiB", double(bytes) / (1u << 20)).str();
  if (bytes >= 1024)
    return llvm::formatv("{0:F1} KiB", double(bytes) / 1024).str();
  return std::to_string(bytes) + " B";
}

bool isConstantOp(Operation *op) { return op && op->getName().getStringRef() == "onnx.Constant"; }
bool isNoValueOp(Operation *op) { return op && op->getName().getStringRef() == "onnx.NoValue"; }

/// Element i of op's i64 array attribute `name`, or 1 where it has none
/// (strides and dilations).
int64_t intsAttrAt(Operation *op, StringRef name, int64_t i) {
  auto a = op->getAttrOfType<DenseI64ArrayAttr>(name);
  return a && int64_t(a.size()) > i ? a[i] : 1;
}

/// The bits of a one-element tensor attribute of at most 64 bits (bool: 0 or
/// 1), or nullopt.
std::optional<uint64_t> scalarTensorBits(Attribute attr) {
  auto elements = dyn_cast<ElementsAttr>(attr);
  if (!elements || elements.getNumElements() != 1)
    return std::nullopt;
  Type elem = elements.getElementType();
  if (!elem.isIntOrFloat() || elem.getIntOrFloatBitWidth() > 64)
    return std::nullopt;
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    if (isa<FloatType>(elem))
      return (*dense.getValues<APFloat>().begin()).bitcastToAPInt().getZExtValue();
    return (*dense.getValues<APInt>().begin()).getZExtValue();
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    size_t bytes = elem.isInteger(1) ? 1 : elem.getIntOrFloatBitWidth() / 8;
    if (!blob || blob->getData().size() != bytes)
      return std::nullopt;
    uint64_t value = 0;
    std::memcpy(&value, blob->getData().data(), bytes);
    return value;
  }
  return std::nullopt;
}

/// Step attributes from an op's ONNX attributes.
void addAttributes(Operation *op, fb::StepT &step) {
  for (NamedAttribute named : op->getAttrs()) {
    std::string name = named.getName().str();
    if (name == "operandSegmentSizes" || name == "resultSegmentSizes" ||
        name.find('.') != std::string::npos)
      continue;
    Attribute attr = named.getValue();
    if (isa<UnitAttr>(attr)) {
      // A flag (fused_conv's channels_last): 1.
      auto a = std::make_unique<fb::IntsAttrT>();
      a->name = name;
      a->values = {1};
      step.ints.push_back(std::move(a));
    } else if (auto i = dyn_cast<IntegerAttr>(attr)) {
      auto a = std::make_unique<fb::IntsAttrT>();
      a->name = name;
      a->values = {i.getInt()};
      step.ints.push_back(std::move(a));
    } else if (auto f = dyn_cast<FloatAttr>(attr)) {
      auto a = std::make_unique<fb::FloatsAttrT>();
      a->name = name;
      a->values = {float(f.getValueAsDouble())};
      step.floats.push_back(std::move(a));
    } else if (auto s = dyn_cast<StringAttr>(attr)) {
      auto a = std::make_unique<fb::StringAttrT>();
      a->name = name;
      a->value = s.str();
      step.strings.push_back(std::move(a));
    } else if (auto ints = dyn_cast<DenseI64ArrayAttr>(attr)) {
      auto a = std::make_unique<fb::IntsAttrT>();
      a->name = name;
      a->values.assign(ints.asArrayRef().begin(), ints.asArrayRef().end());
      step.ints.push_back(std::move(a));
    } else if (auto floats = dyn_cast<DenseF32ArrayAttr>(attr)) {
      auto a = std::make_unique<fb::FloatsAttrT>();
      a->name = name;
      a->values.assign(floats.asArrayRef().begin(), floats.asArrayRef().end());
      step.floats.push_back(std::move(a));
    } else if (auto array = dyn_cast<ArrayAttr>(attr)) {
      auto a = std::make_unique<fb::IntsAttrT>();
      a->name = name;
      for (Attribute e : array)
        if (auto ie = dyn_cast<IntegerAttr>(e))
          a->values.push_back(ie.getInt());
      step.ints.push_back(std::move(a));
    } else if (auto bits = scalarTensorBits(attr)) {
      // A one-element tensor attribute (ConstantOfShape's value): its bits,
      // little endian, as `<name>_bits`.
      auto a = std::make_unique<fb::IntsAttrT>();
      a->name = name + "_bits";
      a->values = {int64_t(*bits)};
      step.ints.push_back(std::move(a));
    }
  }
}

/// Sets (or replaces) the ints attribute `name` of `step`.
void setInts(fb::StepT &step, const std::string &name, std::vector<int64_t> values) {
  for (auto &a : step.ints)
    if (a->name == name) {
      a->values = std::move(values);
      return;
    }
  auto a = std::make_unique<fb::IntsAttrT>();
  a->name = name;
  a->values = std::move(values);
  step.ints.push_back(std::move(a));
}

void setInt(fb::StepT &step, const std::string &name, int64_t value) {
  setInts(step, name, {value});
}

class CpuCompiledPartition final : public CompiledPartition {
public:
  std::vector<char> blob;
  CpuPartitionSummary summary;
};

/// What a partition's plan and its sub-plans (If branches) build together:
/// one module of generated kernels, one weights section.
struct SharedOutputs {
  ModuleOp kernels;
  int kernelCount = 0;
  /// Kernels by their printed body (name left out): a kernel with the body
  /// and shapes of one already made is that one, compiled once.
  llvm::StringMap<std::string> kernelsByBody;
  /// The WGHT section where the blob will hold it: kBlobHeadRoom bytes for
  /// the blob's header, then the weights (writeCpuBlob writes the blob around
  /// them, so hundreds of MiB are packed once and never copied).
  std::vector<char> weights = std::vector<char>(kBlobHeadRoom);
  /// Tables that only Gathers on axis 0 read: the ROWS section.
  std::vector<char> rowTables;
};

/// Room for `size` zeroed bytes at the next kAlignment offset of a section
/// that begins `base` bytes into `storage`: the offset in the section.
uint64_t appendToSection(std::vector<char> &storage, size_t base, size_t size) {
  uint64_t offset = alignUp(storage.size() - base, kAlignment);
  storage.resize(base + offset + size);
  return offset;
}

/// Builds one partition's plan, kernels and weights.
class PartitionCompiler {
public:
  /// `progress(what, done, total)`: ops planned, then kernels generated.
  using Progress = std::function<void(const std::string &, int, int)>;
  PartitionCompiler(func::FuncOp fn, const CpuTarget &target, Progress progress,
                    SharedOutputs &shared)
      : fn(fn), target(target), progress(std::move(progress)), shared(shared),
        weights(shared.weights), kernels(shared.kernels), kernelCount(shared.kernelCount),
        kernelsByBody(shared.kernelsByBody) {}
  /// The plan of `fn`, its kernels added to the shared module.
  LogicalResult buildPlan();
  /// buildPlan, then the code and the blob (the root partition).
  FailureOr<std::unique_ptr<CpuCompiledPartition>> run();

  fb::PlanT plan;

private:
  /// A buffer of `element`s; its size is 0 when a dim is symbolic (< 0).
  int addBuffer(fb::BufferKind kind, Type element, std::vector<int64_t> shape, std::string name);
  int addBuffer(fb::BufferKind kind, Type staticType, std::string name);
  /// A buffer shaped as `value`; -1 when a dim has no expression (a claim bug).
  int addBuffer(fb::BufferKind kind, Value value, std::string name);
  std::optional<std::vector<int64_t>> planShape(Value value) const { return shapes->planShape(value); }
  bool sameDims(Value a, Value b) const { return *shapes->dims(a) == *shapes->dims(b); }
  int64_t planDim(int32_t id) const { return shapes->planDim(id); }
  /// Plan checks for the input dims of elementwise `op` that its kernel
  /// reads as the output's own without the compiler knowing them equal.
  void addBroadcastChecks(Operation *op);
  /// Plan.element_symbols: where the runtime reads each data symbol that
  /// stands for an element of a computed small integer value.
  LogicalResult addElementSymbols();
  int bufferFor(Value value);
  int weightFor(Value value);
  int packedGemmWeight(Value b, bool transB, float alpha);
  /// Conv's constant weights [M, ...] packed as GEMM A panels of [M, K], or
  /// when `transposed` as B panels of W^T [K, M] (convPrefersTransposedGemm).
  int packedConvWeight(Value w, bool transposed);
  /// A 3x3 Conv's constant W [M, C, 3, 3] transformed for Winograd
  /// F(tile x tile, 3x3): packConvWeightsWinograd, or for a channels-last
  /// conv packConvWeightsWinogradChannelsLast.
  int packedConvWeightWinograd(Value w, int64_t tile, bool channelsLast);
  /// A channels-last Conv's constant W [M, C, KH, KW] as B panels of W^T
  /// with k in (kh, kw, c) order (packConvWeightsChannelsLast).
  int packedConvWeightChannelsLast(Value w);
  /// A Weight buffer of `logicalType` whose `floats` floats `pack` writes
  /// in place in WGHT (`packing`).
  int addPackedWeight(Type logicalType, std::string name, size_t floats, const char *packing,
                      llvm::function_ref<void(float *)> pack);
  LogicalResult emitLibraryStep(Operation *op);
  /// The buffer `op`'s result may be written over: a channels-last conv's
  /// residual that nothing reads afterwards (-1: none).
  int overwritableResidual(Operation *op);
  LogicalResult emitView(Operation *op);
  LogicalResult emitIf(Operation *op);
  /// A sequence or optional op as a Sequence step the executor runs.
  LogicalResult emitSequenceStep(Operation *op);
  /// Every result of `op` as an Arena buffer written by `step`.
  LogicalResult addStepOutputs(Operation *op, fb::StepT &step);
  LogicalResult emitLoop(Operation *op);
  LogicalResult emitScan(Operation *op);
  /// A step of `kind` running `subplans`, reading `operands`; its outputs
  /// are `op`'s results.
  LogicalResult emitControlFlowStep(Operation *op, fb::StepKind kind,
                                    std::vector<int64_t> subplans, ArrayRef<Value> operands);
  /// Region `region` of `op` as a function of the values it reads from
  /// outside (`captured`), compiled into a sub-plan; its index.
  FailureOr<int64_t> buildSubplan(Operation *op, Region &region, ArrayRef<Value> captured,
                                  const std::string &suffix);
  LogicalResult closeKernel();
  /// A step running `ops` (their op types go into the plan for profiles).
  int newStep(fb::StepKind kind, std::string callee, std::string node,
              llvm::ArrayRef<Operation *> ops = {});
  int rootOf(int buffer) const;

  func::FuncOp fn;
  const CpuTarget &target;
  Progress progress;
  SharedOutputs &shared;
  std::vector<char> &weights;
  llvm::DenseMap<Value, int> buffers;
  std::unique_ptr<SymbolicShapes> shapes;
  int opsTotal = 0;
  bool arenaAtRunTime = false;

  // The elementwise group being formed: its ops in order, the same as a set,
  // the values they read, and its result.
  std::vector<Operation *> group;
  llvm::SmallPtrSet<Operation *, 16> groupMembers;
  llvm::DenseSet<Value> groupReads;
  Value groupResult;
  ModuleOp &kernels;
  int &kernelCount;
  llvm::StringMap<std::string> &kernelsByBody;
};

int PartitionCompiler::addBuffer(fb::BufferKind kind, Type element, std::vector<int64_t> shape,
                                 std::string name) {
  auto buffer = std::make_unique<fb::BufferT>();
  buffer->kind = kind;
  buffer->element_type = onnxElementCode(element);
  int64_t count = 1;
  bool symbolic = false;
  for (int64_t d : shape) {
    symbolic |= d < 0;
    count *= d < 0 ? 1 : d;
  }
  // Sub-byte types round up; the runtime sizes a symbolic buffer.
  buffer->size = symbolic ? 0 : tensorBytes(ElementType(buffer->element_type), count);
  buffer->shape = std::move(shape);
  buffer->name = std::move(name);
  plan.buffers.push_back(std::move(buffer));
  return int(plan.buffers.size()) - 1;
}

int PartitionCompiler::addBuffer(fb::BufferKind kind, Type staticType, std::string name) {
  auto tensor = cast<RankedTensorType>(staticType);
  return addBuffer(kind, tensor.getElementType(),
                   std::vector<int64_t>(tensor.getShape().begin(), tensor.getShape().end()),
                   std::move(name));
}

int PartitionCompiler::addBuffer(fb::BufferKind kind, Value value, std::string name) {
  // A container: its tensors' element type, no shape, no bytes.
  if (std::optional<ContainerKind> container = containerKindOf(value.getType());
      container && *container != ContainerKind::None) {
    int id = addBuffer(kind, containerElementType(value.getType()).getElementType(), {},
                       std::move(name));
    plan.buffers[id]->size = 0;
    plan.buffers[id]->container = fb::ContainerKind(*container);
    return id;
  }
  std::optional<std::vector<int64_t>> shape = planShape(value);
  if (!shape)
    return -1;
  return addBuffer(kind, cast<RankedTensorType>(value.getType()).getElementType(),
                   std::move(*shape), std::move(name));
}


LogicalResult PartitionCompiler::addElementSymbols() {
  // Each element symbol is read from the first buffer, in step order, whose
  // value holds it at some element (a Cast of the value it was made for
  // holds it too, when that value is fused into a kernel and has no buffer).
  std::set<int64_t> pending;
  for (int64_t k : shapes->dataSymbols())
    if (shapes->elementSymbolSource(k))
      pending.insert(k);
  if (pending.empty())
    return success();
  // The values each root buffer holds: its own and its views'.
  llvm::DenseMap<int, SmallVector<Value, 1>> valuesOf;
  for (auto [value, id] : buffers)
    valuesOf[rootOf(id)].push_back(value);
  auto take = [&](int root) {
    for (Value value : valuesOf.lookup(root)) {
      const SmallVector<int32_t> *elements = shapes->elements(value);
      if (!elements)
        continue;
      for (auto [k, element] : llvm::enumerate(*elements)) {
        const DimNode &node = shapes->table().node(element);
        if (node.op != DimOp::Symbol || !pending.count(node.a))
          continue;
        pending.erase(node.a);
        plan.element_symbols.emplace_back(uint32_t(node.a), uint32_t(root), uint32_t(k));
      }
    }
  };
  for (const std::unique_ptr<fb::BufferT> &b : plan.buffers)
    if (b->kind == fb::BufferKind::Input)
      take(int(&b - plan.buffers.data()));
  for (const std::unique_ptr<fb::StepT> &step : plan.steps)
    for (int id : step->outputs)
      take(id);
  // A symbol no buffer holds is one no shape of this plan reads (it was
  // made for a value fused away); a buffer reading one fails the plan's
  // load, so say it here.
  for (const std::unique_ptr<fb::BufferT> &b : plan.buffers)
    for (int64_t d : b->shape)
      if (d < 0) {
        std::set<int64_t> reads;
        shapes->collectDataSymbols(int32_t(-(d + 1)), reads);
        for (int64_t k : reads)
          if (pending.count(k))
            return fn.emitError("cpu_ep: '")
                   << b->name << "' reads '" << shapes->symbolNames()[size_t(k)]
                   << "', a value no buffer of the plan holds (a compiler bug)";
      }
  return success();
}

void PartitionCompiler::addBroadcastChecks(Operation *op) {
  for (const AssumedEqualDims &assumed : assumedEqualDims(op, *shapes)) {
    auto check = std::make_unique<fb::DimCheckT>();
    check->a = planDim(assumed.input);
    check->b = planDim(assumed.output);
    check->what = assumed.describe(op, *shapes);
    plan.checks.push_back(std::move(check));
  }
}

int PartitionCompiler::rootOf(int buffer) const {
  while (plan.buffers[buffer]->kind == fb::BufferKind::Alias)
    buffer = plan.buffers[buffer]->alias_of;
  return buffer;
}

/// A constant of at least 1 MiB that only Gathers on axis 0 read as their
/// data (an embedding table): a run reads the rows its indices name, so the
/// table goes to the ROWS section, whose pages the loader gives back once
/// verified (runtime/support/BlobContainer.h).
static bool isRowTable(Value value, size_t bytes) {
  if (bytes < (size_t(1) << 20) || value.use_empty())
    return false;
  for (OpOperand &use : value.getUses()) {
    auto gather = dyn_cast<onnx_dialect::GatherOp>(use.getOwner());
    if (!gather || use.getOperandNumber() != 0)
      return false;
    int64_t axis = int64_t(gather.getAxis());
    if (axis != 0 && axis != -cast<RankedTensorType>(value.getType()).getRank())
      return false;
  }
  return true;
}

int PartitionCompiler::weightFor(Value value) {
  auto found = buffers.find(value);
  if (found != buffers.end())
    return found->second;
  std::optional<ConstantBytes> bytes = constantBytesInPlace(value.getDefiningOp());
  if (!bytes)
    return -2;
  int id = addBuffer(fb::BufferKind::Weight, value.getType(), onnxNodeName(value.getDefiningOp()));
  bool rowTable = isRowTable(value, bytes->size());
  std::vector<char> &section = rowTable ? shared.rowTables : weights;
  size_t base = rowTable ? 0 : kBlobHeadRoom;
  uint64_t offset = appendToSection(section, base, bytes->size());
  if (bytes->size())
    std::memcpy(section.data() + base + offset, bytes->data(), bytes->size());
  plan.buffers[id]->offset = offset;
  plan.buffers[id]->row_table = rowTable;
  buffers[value] = id;
  return id;
}

int PartitionCompiler::packedGemmWeight(Value b, bool transB, float alpha) {
  // Packed per user: transB and alpha are folded in, so users rarely share.
  auto type = cast<RankedTensorType>(b.getType());
  std::optional<ConstantBytes> bytes = constantBytesInPlace(b.getDefiningOp());
  if (!bytes)
    return -2;
  int64_t rows = type.getDimSize(0), cols = type.getDimSize(1);
  int64_t K = transB ? cols : rows, N = transB ? rows : cols;
  return addPackedWeight(RankedTensorType::get({K, N}, type.getElementType()),
                         onnxNodeName(b.getDefiningOp()), packedGemmBSize(K, N), "gemm_b",
                         [&](float *packed) {
                           packGemmB(reinterpret_cast<const float *>(bytes->data()), cols, transB,
                                     K, N, alpha, packed);
                         });
}

int PartitionCompiler::addPackedWeight(Type logicalType, std::string name, size_t floats,
                                       const char *packing,
                                       llvm::function_ref<void(float *)> pack) {
  int id = addBuffer(fb::BufferKind::Weight, logicalType, std::move(name));
  plan.buffers[id]->packing = packing;
  plan.buffers[id]->size = floats * sizeof(float);
  uint64_t offset = appendToSection(weights, kBlobHeadRoom, floats * sizeof(float));
  // kBlobHeadRoom and the offset are multiples of kAlignment: float aligned.
  pack(reinterpret_cast<float *>(weights.data() + kBlobHeadRoom + offset));
  plan.buffers[id]->offset = offset;
  return id;
}

int PartitionCompiler::packedConvWeight(Value w, bool transposed) {
  auto type = cast<RankedTensorType>(w.getType());
  std::optional<ConstantBytes> bytes = constantBytesInPlace(w.getDefiningOp());
  if (!bytes)
    return -2;
  int64_t M = type.getDimSize(0), K = type.getNumElements() / std::max<int64_t>(M, 1);
  const float *data = reinterpret_cast<const float *>(bytes->data());
  // The logical shape stays W's (the kernel checks it); the bytes are panels.
  if (transposed) // W^T [K, M] as B panels: W's rows are W^T's columns.
    return addPackedWeight(
        type, onnxNodeName(w.getDefiningOp()), packedGemmBSize(K, M), "gemm_bt",
        [&](float *packed) { packGemmB(data, K, /*transB=*/true, K, M, 1.0f, packed); });
  return addPackedWeight(type, onnxNodeName(w.getDefiningOp()), packedGemmASize(M, K), "gemm_a",
                         [&](float *packed) { packGemmA(data, K, M, K, packed); });
}

int PartitionCompiler::packedConvWeightWinograd(Value w, int64_t tile, bool channelsLast) {
  auto type = cast<RankedTensorType>(w.getType());
  std::optional<ConstantBytes> bytes = constantBytesInPlace(w.getDefiningOp());
  if (!bytes)
    return -2;
  int64_t M = type.getDimSize(0), C = type.getDimSize(1);
  const auto *data = reinterpret_cast<const float *>(bytes->data());
  size_t floats =
      channelsLast ? packedWinogradChannelsLastSize(M, C, tile) : packedWinogradSize(M, C, tile);
  const char *packing = channelsLast ? (tile == 4 ? "winograd_f4x3_bt" : "winograd_f2x3_bt")
                                     : (tile == 4 ? "winograd_f4x3" : "winograd_f2x3");
  return addPackedWeight(type, onnxNodeName(w.getDefiningOp()), floats, packing,
                         [&](float *packed) {
                           if (channelsLast)
                             packConvWeightsWinogradChannelsLast(data, M, C, tile, packed);
                           else
                             packConvWeightsWinograd(data, M, C, tile, packed);
                         });
}

int PartitionCompiler::packedConvWeightChannelsLast(Value w) {
  auto type = dyn_cast<RankedTensorType>(w.getType());
  std::optional<ConstantBytes> bytes = constantBytesInPlace(w.getDefiningOp());
  if (!type || type.getRank() != 4 || !type.hasStaticShape() || !type.getElementType().isF32() ||
      !bytes)
    return -2;
  int64_t M = type.getDimSize(0), C = type.getDimSize(1);
  int64_t kSize = type.getDimSize(2) * type.getDimSize(3);
  return addPackedWeight(type, onnxNodeName(w.getDefiningOp()), packedGemmBSize(C * kSize, M),
                         "gemm_bt_hwc", [&](float *packed) {
                           packConvWeightsChannelsLast(
                               reinterpret_cast<const float *>(bytes->data()), M, C, kSize, packed);
                         });
}

int PartitionCompiler::bufferFor(Value value) {
  auto found = buffers.find(value);
  if (found != buffers.end())
    return found->second;
  Operation *def = value.getDefiningOp();
  if (isNoValueOp(def) || isa<NoneType>(value.getType()))
    return -1;
  if (isConstantOp(def))
    return weightFor(value);
  return -2; // not produced yet: a bug in step order
}

int PartitionCompiler::newStep(fb::StepKind kind, std::string callee, std::string node,
                               llvm::ArrayRef<Operation *> ops) {
  auto step = std::make_unique<fb::StepT>();
  step->kind = kind;
  step->callee = std::move(callee);
  step->node = std::move(node);
  for (Operation *op : ops)
    step->ops += (step->ops.empty() ? "" : ",") + onnxOpTypeAndDomain(op).first;
  plan.steps.push_back(std::move(step));
  return int(plan.steps.size()) - 1;
}

LogicalResult PartitionCompiler::emitView(Operation *op) {
  int source = bufferFor(op->getOperand(0));
  if (source < 0)
    return op->emitError("cpu_ep: the input of a view has no buffer");
  int id = addBuffer(fb::BufferKind::Alias, op->getResult(0), onnxNodeName(op));
  if (id < 0)
    return op->emitError("cpu_ep: a dim of the view has no expression (a claim bug)");
  plan.buffers[id]->alias_of = rootOf(source);
  buffers[op->getResult(0)] = id;
  // Squeezed dims the compiler cannot prove 1 are checked per run.
  if (auto squeezed = squeezedDynamicDims(op, *shapes)) {
    for (int32_t d : *squeezed) {
      auto check = std::make_unique<fb::DimCheckT>();
      check->a = planDim(d);
      check->b = 1;
      check->what = "node '" + onnxNodeName(op) + "' squeezes a dim (" + shapes->print(d) +
                    ") that must be 1; it and 1";
      plan.checks.push_back(std::move(check));
    }
    return success();
  }
  // An element count the algebra cannot prove equal to the input's (a
  // target computed from the dims) is checked per run: a view of other
  // inputs would read past its bytes.
  int32_t inCount = shapes->numElements(op->getOperand(0));
  int32_t outCount = shapes->numElements(op->getResult(0));
  if (inCount != outCount) {
    if (inCount == kUnknownDim || outCount == kUnknownDim)
      return op->emitError("cpu_ep: a view's element count has no expression (a claim bug)");
    auto check = std::make_unique<fb::DimCheckT>();
    check->a = planDim(inCount);
    check->b = planDim(outCount);
    check->what = "node '" + onnxNodeName(op) + "' (" + onnxOpTypeAndDomain(op).first +
                  ") makes " + shapes->print(op->getResult(0)) + " of " +
                  shapes->print(op->getOperand(0)) + "; their element counts";
    plan.checks.push_back(std::move(check));
  }
  return success();
}

LogicalResult PartitionCompiler::emitLibraryStep(Operation *op) {
  std::string callee = libraryKernelFor(op);
  int index = newStep(fb::StepKind::Library, callee, onnxNodeName(op), op);
  fb::StepT &step = *plan.steps[index];
  addAttributes(op, step);

  // Constant GEMM weights (input 1) are packed now; the kernel skips packing.
  auto isPackable = [](Value b) {
    auto type = dyn_cast<RankedTensorType>(b.getType());
    return isConstantOp(b.getDefiningOp()) && type && type.getRank() == 2 &&
           type.hasStaticShape() && type.getElementType().isF32();
  };
  std::optional<int> packedWeight;
  if (callee == "MatMul" && isPackable(op->getOperand(1))) {
    // ortc.matmul_bias's trans_b (a transB Gemm's) is packed in.
    auto transB = op->getAttrOfType<BoolAttr>("trans_b");
    packedWeight = packedGemmWeight(op->getOperand(1), transB && transB.getValue(), 1.0f);
  } else if (callee == "Gemm" && isPackable(op->getOperand(1))) {
    auto transB = op->getAttrOfType<IntegerAttr>("transB");
    auto alpha = op->getAttrOfType<FloatAttr>("alpha");
    packedWeight = packedGemmWeight(op->getOperand(1), transB && transB.getInt(),
                               alpha ? float(alpha.getValueAsDouble()) : 1.0f);
  }
  if (packedWeight) {
    if (*packedWeight < 0)
      return op->emitError("cpu_ep: cannot read the constant B of ") << callee;
    setInt(step, "packed_b", 1);
  }
  // A group-1, non-depthwise Conv's constant weights: packed once here
  // rather than per tile of every run; a channels-last one's as W^T in
  // (kh, kw, c) order, the only packing its kernel reads.
  auto group = op->getAttrOfType<IntegerAttr>("group");
  bool channelsLast = op->hasAttr("channels_last");
  // A depthwise block's pointwise weights (inputs 1 and 5, either absent)
  // are packed the same way (a channels-first block's as A panels).
  std::optional<int> packedProjection;
  if (callee == "DepthwiseBlock") {
    for (unsigned i : {1u, 5u}) {
      Value w = op->getOperand(i);
      if (isa<NoneType>(w.getType()))
        continue;
      if (!isConstantOp(w.getDefiningOp()))
        return op->emitError("cpu_ep: the pointwise weights of a depthwise block must be "
                             "constants");
      int id = channelsLast ? packedConvWeightChannelsLast(w)
                            : packedConvWeight(w, /*transposed=*/false);
      if (id < 0)
        return op->emitError("cpu_ep: cannot read the constant W of Conv");
      (i == 1 ? packedWeight : packedProjection) = id;
    }
    setInt(step, "packed_w", channelsLast ? 3 : 1);
    setInts(step, "packed_inputs", {1, 5});
  } else if (callee == "Conv" && channelsLast && (!group || group.getInt() == 1) &&
             isConstantOp(op->getOperand(1).getDefiningOp())) {
    // A 3x3 at stride 1 with enough channels: Winograd, one GEMM row per
    // tile; else W^T in (kh, kw, c) order.
    auto w = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
    auto y = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    bool winograd = w && y && w.hasStaticShape() && w.getRank() == 4 && y.getRank() == 4 &&
                    !y.isDynamicDim(1) && !y.isDynamicDim(2) &&
                    convRunsWinogradChannelsLast(
                        w.getDimSize(1), w.getDimSize(0), w.getDimSize(2), w.getDimSize(3),
                        intsAttrAt(op, "strides", 0), intsAttrAt(op, "strides", 1),
                        intsAttrAt(op, "dilations", 0), intsAttrAt(op, "dilations", 1),
                        y.getDimSize(1), y.getDimSize(2));
    int64_t tile = winograd ? winogradOutputTileChannelsLast(y.getDimSize(1), y.getDimSize(2)) : 0;
    packedWeight = winograd ? packedConvWeightWinograd(op->getOperand(1), tile, true)
                            : packedConvWeightChannelsLast(op->getOperand(1));
    if (*packedWeight < 0)
      return op->emitError("cpu_ep: cannot read the constant W of Conv");
    setInt(step, "packed_w", winograd ? (tile == 4 ? 7 : 6) : 3);
  } else if (callee == "Conv" && isConstantOp(op->getOperand(1).getDefiningOp()) &&
             (!group || group.getInt() == 1)) {
    auto w = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
    if (w && w.hasStaticShape() && w.getElementType().isF32() && w.getRank() >= 3) {
      // A 3x3 at stride 1 with enough channels: Winograd (W transformed).
      // Few output positions per image (a static output shape says how
      // many): the transposed product, W packed as B panels of W^T.
      auto y = dyn_cast<RankedTensorType>(op->getResult(0).getType());
      auto ints = [&](StringRef name, int64_t i) { return intsAttrAt(op, name, i); };
      bool planar =
          w.getRank() == 4 && y && y.getRank() == 4 && !y.isDynamicDim(2) && !y.isDynamicDim(3);
      // Few products per output: the kernel reads W as it is (packed_w 0).
      bool narrow =
          planar && convRunsNarrow(w.getDimSize(1), w.getDimSize(2), w.getDimSize(3),
                                   ints("strides", 0), ints("strides", 1), ints("dilations", 0),
                                   ints("dilations", 1), y.getDimSize(3));
      bool winograd =
          planar &&
          convRunsWinograd(w.getDimSize(1), w.getDimSize(0), w.getDimSize(2), w.getDimSize(3),
                           ints("strides", 0), ints("strides", 1), ints("dilations", 0),
                           ints("dilations", 1), y.getDimSize(2), y.getDimSize(3));
      // Else W as A panels: the kernel runs it directly over the padded
      // input (convRunsDirect) or over im2col tiles. The transposed product
      // goes first: where it is cheaper than panels it also beats the
      // direct one, which pads positions to panels as well (ResNet-50's
      // 512->512 3x3 at stride 2 onto 7x7: 11% faster, AMD EPYC).
      bool transposed =
          !winograd && y && y.hasStaticShape() && y.getRank() >= 3 &&
          convPrefersTransposedGemm(w.getDimSize(0), w.getNumElements() / w.getDimSize(0),
                                    y.getNumElements() / (y.getDimSize(0) * y.getDimSize(1)));
      int64_t tile = winograd ? winogradOutputTile(y.getDimSize(2), y.getDimSize(3)) : 0;
      if (!narrow) {
        packedWeight = winograd ? packedConvWeightWinograd(op->getOperand(1), tile, false)
                                : packedConvWeight(op->getOperand(1), transposed);
        if (*packedWeight < 0)
          return op->emitError("cpu_ep: cannot read the constant W of Conv");
        setInt(step, "packed_w", winograd ? (tile == 4 ? 5 : 4) : transposed ? 2 : 1);
      }
    }
  }

  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    int id = (i == 1 && packedWeight)       ? *packedWeight
             : (i == 5 && packedProjection) ? *packedProjection
                                            : bufferFor(operand);
    if (id == -2)
      return op->emitError("cpu_ep: operand ") << i << " has no buffer";
    step.inputs.push_back(id);
  }
  std::vector<int64_t> slots;
  int overwritten = overwritableResidual(op);
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    if (isa<NoneType>(result.getType()))
      continue;
    int id = addBuffer(overwritten >= 0 ? fb::BufferKind::Alias : fb::BufferKind::Arena, result,
                       onnxNodeName(op));
    if (id < 0)
      return op->emitError("cpu_ep: a dim of output ") << i << " has no expression (a claim bug)";
    if (overwritten >= 0)
      plan.buffers[id]->alias_of = overwritten;
    buffers[result] = id;
    step.outputs.push_back(id);
    slots.push_back(int64_t(i));
  }
  // Outputs the node leaves out are not in the step; when one comes before a
  // present output, `output_slots` gives each step output's ONNX index.
  if (!slots.empty() && slots.back() != int64_t(slots.size()) - 1)
    setInts(step, "output_slots", std::move(slots));
  return success();
}

// The sum lands over the residual, as onnxruntime's NCHWc conv does: y is
// not a buffer of its own but the residual's bytes, which nothing reads after
// this conv. The channels-last kernel then adds its GEMM onto y. Only static
// shapes, and never a value the partition returns (its output buffer is the
// caller's). Every other reader of the residual must have run already: an
// earlier step, not a member of the elementwise group still open (emitted
// after this step), and not a view whose bytes live on.
int PartitionCompiler::overwritableResidual(Operation *op) {
  auto conv = dyn_cast<ortc::fused::FusedConvOp>(op);
  if (!conv || !conv.getChannelsLast())
    return -1;
  Value residual = conv.getResidual(), y = conv.getY();
  auto type = dyn_cast<RankedTensorType>(y.getType());
  if (!type || !type.hasStaticShape() || residual.getType() != y.getType())
    return -1;
  if (llvm::any_of(y.getUsers(),
                   [](Operation *user) { return user->hasTrait<OpTrait::IsTerminator>(); }))
    return -1;
  auto found = buffers.find(residual);
  if (found == buffers.end())
    return -1;
  int root = rootOf(found->second);
  const fb::BufferT &buffer = *plan.buffers[root];
  if (buffer.kind != fb::BufferKind::Arena || buffer.container != fb::ContainerKind::None)
    return -1;
  for (OpOperand &use : residual.getUses()) {
    Operation *user = use.getOwner();
    if (user == op) {
      if (use.getOperandNumber() != conv.getResidualMutable().getOperandNumber())
        return -1; // also read as x, w or bias
      continue;
    }
    if (user->getBlock() != op->getBlock() || !user->isBeforeInBlock(op) ||
        groupMembers.contains(user))
      return -1;
    for (Value result : user->getResults()) {
      auto view = buffers.find(result);
      if (view != buffers.end() && rootOf(view->second) == root)
        return -1;
    }
  }
  return root;
}

FailureOr<int64_t> PartitionCompiler::buildSubplan(Operation *op, Region &region,
                                                  ArrayRef<Value> captured,
                                                  const std::string &suffix) {
  // The body as a function: its block's arguments (a Loop body's
  // iteration number, condition and carried values), then the captured
  // values are its arguments; constants it reads from outside are copied
  // in, Yield is the return.
  Block &block = region.front();
  Operation *yield = block.getTerminator();
  OpBuilder builder(op->getContext());
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(op->getLoc());
  builder.setInsertionPointToEnd(scratch->getBody());
  SmallVector<Value> arguments(block.getArguments().begin(), block.getArguments().end());
  arguments.append(captured.begin(), captured.end());
  SmallVector<Type> argTypes;
  for (Value v : arguments)
    argTypes.push_back(v.getType());
  auto subFn = func::FuncOp::create(
      builder, op->getLoc(), fn.getSymName().str() + "_" + suffix,
      builder.getFunctionType(argTypes, TypeRange(yield->getOperandTypes())));
  Block *entry = subFn.addEntryBlock();
  IRMapping mapping;
  for (auto [v, arg] : llvm::zip(arguments, entry->getArguments()))
    mapping.map(v, arg);
  builder.setInsertionPointToStart(entry);
  llvm::SetVector<Value> above;
  getUsedValuesDefinedAbove(region, above);
  for (Value v : above)
    if (Operation *def = v.getDefiningOp(); def && (isConstantOp(def) || isNoValueOp(def)))
      builder.clone(*def, mapping);
  for (Operation &nested : block.without_terminator())
    builder.clone(nested, mapping);
  SmallVector<Value> returned;
  for (Value v : yield->getOperands())
    returned.push_back(mapping.lookupOrDefault(v));
  func::ReturnOp::create(builder, op->getLoc(), returned);
  // Its arguments' dims are the caller's expressions, as a partition's are
  // (a block argument's are symbols of its own, bound per iteration).
  annotateDimSymbols(subFn, arguments, *shapes);
  if (isa<onnx_dialect::LoopOp>(op))
    subFn.setArgAttr(0, "ortc.nonnegative", builder.getUnitAttr());

  PartitionCompiler sub(subFn, target, [](const std::string &, int, int) {}, shared);
  if (failed(sub.buildPlan()))
    return op->emitError("cpu_ep: the ") << suffix << " of node '" << onnxNodeName(op)
                                         << "' did not compile";
  auto subplan = std::make_unique<fb::PlanT>(std::move(sub.plan));
  plan.subplans.push_back(std::move(subplan));
  return int64_t(plan.subplans.size()) - 1;
}

/// What `op`'s regions read from outside, other than constants (which the
/// sub-plans copy in).
SmallVector<Value> capturedValues(Operation *op) {
  llvm::SetVector<Value> above;
  for (Region &region : op->getRegions())
    getUsedValuesDefinedAbove(region, above);
  SmallVector<Value> captured;
  for (Value v : above) {
    Operation *def = v.getDefiningOp();
    if (!(def && (isConstantOp(def) || isNoValueOp(def))))
      captured.push_back(v);
  }
  return captured;
}

LogicalResult PartitionCompiler::emitControlFlowStep(Operation *op, fb::StepKind kind,
                                                     std::vector<int64_t> subplans,
                                                     ArrayRef<Value> operands) {
  int index = newStep(kind, fb::EnumNameStepKind(kind), onnxNodeName(op), op);
  fb::StepT &step = *plan.steps[index];
  auto a = std::make_unique<fb::IntsAttrT>();
  a->name = "subplans";
  a->values = std::move(subplans);
  step.ints.push_back(std::move(a));
  for (Value v : operands) {
    int id = bufferFor(v);
    if (id == -2)
      return op->emitError("cpu_ep: an input of node '") << onnxNodeName(op) << "' has no buffer";
    step.inputs.push_back(id);
  }
  return addStepOutputs(op, step);
}

LogicalResult PartitionCompiler::emitLoop(Operation *op) {
  // Step inputs: M, cond (-1 when left out), the initial carried values,
  // then what the body reads from outside; the body takes (iteration
  // number, condition, carried..., captured...).
  auto loop = cast<onnx_dialect::LoopOp>(op);
  SmallVector<Value> captured = capturedValues(op);
  FailureOr<int64_t> body = buildSubplan(op, loop.getBody(), captured, "body");
  if (failed(body))
    return failure();
  SmallVector<Value> operands(op->getOperands().begin(), op->getOperands().end());
  operands.append(captured.begin(), captured.end());
  if (failed(emitControlFlowStep(op, fb::StepKind::Loop, {*body}, operands)))
    return failure();
  setInt(*plan.steps.back(), "carried", int64_t(loop.getVInitial().size()));
  return success();
}

LogicalResult PartitionCompiler::emitScan(Operation *op) {
  // Step inputs: the initial states, the scan inputs, then what the body
  // reads from outside; the body takes (states..., one slice of each scan
  // input..., captured...). The axes and directions travel as attributes.
  auto scan = cast<onnx_dialect::ScanOp>(op);
  SmallVector<Value> captured = capturedValues(op);
  FailureOr<int64_t> body = buildSubplan(op, scan.getBody(), captured, "body");
  if (failed(body))
    return failure();
  SmallVector<Value> operands(op->getOperands().begin(), op->getOperands().end());
  operands.append(captured.begin(), captured.end());
  if (failed(emitControlFlowStep(op, fb::StepKind::Scan, {*body}, operands)))
    return failure();
  fb::StepT &step = *plan.steps.back();
  addAttributes(op, step);
  int64_t numScan = scan.getNumScanInputs();
  setInt(step, "carried", int64_t(scan.getInitialStateAndScanInputs().size()) - numScan);
  return success();
}

LogicalResult PartitionCompiler::emitIf(Operation *op) {
  SmallVector<Value> captured = capturedValues(op);
  // The step names [then, else].
  auto ifOp = cast<onnx_dialect::IfOp>(op);
  std::vector<int64_t> subplans;
  for (auto [region, name] : {std::pair<Region *, const char *>{&ifOp.getThenBranch(), "then_branch"},
                              {&ifOp.getElseBranch(), "else_branch"}}) {
    if (!region->hasOneBlock())
      return op->emitError("cpu_ep: the ") << name << " of node '" << onnxNodeName(op)
                                           << "' has no body";
    FailureOr<int64_t> index = buildSubplan(op, *region, captured, name);
    if (failed(index))
      return failure();
    subplans.push_back(*index);
  }
  SmallVector<Value> operands{op->getOperand(0)};
  operands.append(captured.begin(), captured.end());
  return emitControlFlowStep(op, fb::StepKind::If, subplans, operands);
}

LogicalResult PartitionCompiler::addStepOutputs(Operation *op, fb::StepT &step) {
  for (auto [i, result] : llvm::enumerate(op->getResults())) {
    int id = addBuffer(fb::BufferKind::Arena, result, onnxNodeName(op));
    if (id < 0)
      return op->emitError("cpu_ep: a dim of output ") << i << " has no expression (a claim bug)";
    buffers[result] = id;
    step.outputs.push_back(id);
  }
  return success();
}

LogicalResult PartitionCompiler::emitSequenceStep(Operation *op) {
  int index = newStep(fb::StepKind::Sequence, onnxOpTypeAndDomain(op).first, onnxNodeName(op), op);
  fb::StepT &step = *plan.steps[index];
  addAttributes(op, step);
  // Inputs a node leaves out are -1 (an Optional or OptionalHasElement of
  // nothing, SequenceInsert at the end).
  for (auto [i, operand] : llvm::enumerate(op->getOperands())) {
    int id = bufferFor(operand);
    if (id == -2)
      return op->emitError("cpu_ep: operand ") << i << " has no buffer";
    step.inputs.push_back(id);
  }
  while (!step.inputs.empty() && step.inputs.back() == -1)
    step.inputs.pop_back();
  return addStepOutputs(op, step);
}

/// The rank of an elementwise group's iteration space (every member's result
/// has the group's shape).
static int64_t kernelRank(ArrayRef<Operation *> ops) {
  return cast<RankedTensorType>(ops.front()->getResult(0).getType()).getRank();
}

/// The dim a kernel splits over (PlanExecutor runs row blocks of it in
/// parallel), for kernels big enough for two blocks: the first dim of the
/// output's static shape that is not 1, when every dim before it is 1 (a
/// block is then contiguous in every value that spans the dim) and every
/// input and inlined constant either spans it or broadcasts over it. The
/// kernel is an elementwise group, or a lone Transpose that keeps that dim
/// in place (the layout Transposes around a channels-last conv chain keep
/// the batch). None for other kernels.
static std::optional<int64_t> kernelSplitDim(ArrayRef<Operation *> ops,
                                             const llvm::SetVector<Value> &inputs,
                                             const llvm::SetVector<Operation *> &inlined) {
  std::optional<SmallVector<int64_t>> perm;
  if (ops.size() == 1)
    perm = transposePermutation(ops.front());
  if (!perm)
    for (Operation *op : ops)
      if (classifyCpuOp(op) != CpuOpClass::Elementwise || op->getNumResults() != 1)
        return std::nullopt;
  auto shape = cast<RankedTensorType>(ops.front()->getResult(0).getType());
  if (!shape.hasStaticShape() || shape.getNumElements() < 2 * kMinElementsPerBlock)
    return std::nullopt;
  int64_t rank = shape.getRank(), d = 0;
  while (d < rank && shape.getDimSize(d) == 1)
    ++d;
  if (d == rank || (perm && (*perm)[d] != d))
    return std::nullopt;
  int64_t extent = shape.getDimSize(d);
  auto fits = [&](Type type) {
    auto t = dyn_cast<RankedTensorType>(type);
    if (!t || !t.hasStaticShape() || t.getRank() > rank)
      return false;
    int64_t offset = d - (rank - t.getRank());
    return offset < 0 || t.getDimSize(offset) == 1 || t.getDimSize(offset) == extent;
  };
  for (Value v : inputs)
    if (!fits(v.getType()))
      return std::nullopt;
  for (Operation *c : inlined) {
    for (Value v : c->getResults()) {
      auto t = dyn_cast<RankedTensorType>(v.getType());
      int64_t offset = t ? d - (rank - t.getRank()) : -1;
      // An inlined constant is not sliced: it must broadcast over the dim.
      if (t && offset >= 0 && t.getDimSize(offset) != 1)
        return std::nullopt;
    }
  }
  // Every member has the group's shape (groupAccepts), so every result
  // spans the dim.
  return d;
}

LogicalResult PartitionCompiler::closeKernel() {
  if (group.empty())
    return success();
  std::vector<Operation *> ops = std::move(group);
  llvm::SmallPtrSet<Operation *, 16> members = std::move(groupMembers);
  group.clear();
  groupMembers.clear();
  groupReads.clear();

  // Inputs: values from outside the group other than small constants;
  // outputs: results used outside the group or returned.
  llvm::SetVector<Value> inputs, outputs;
  llvm::SetVector<Operation *> inlined;
  for (Operation *op : ops)
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && members.count(def))
        continue;
      if (isNoValueOp(def)) {
        inlined.insert(def);
        continue;
      }
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (isConstantOp(def) && type && type.hasStaticShape() &&
          type.getNumElements() <= kInlineConstantElements) {
        inlined.insert(def);
        continue;
      }
      inputs.insert(operand);
    }
  for (Operation *op : ops)
    for (Value result : op->getResults())
      for (Operation *user : result.getUsers())
        if (!members.count(user)) {
          outputs.insert(result);
          break;
        }

  // A kernel that splits (kernelSplitDim) runs as row blocks on the pool's
  // threads. The values that span the dim take it as `?` in the kernel (a
  // `?` never broadcasts, LowerToLinalg), so the loops run over the block the
  // call passes.
  std::optional<int64_t> splitDim = kernelSplitDim(ops, inputs, inlined);
  auto splitType = [&](Type type) -> Type {
    auto t = cast<RankedTensorType>(type);
    int64_t offset = splitDim ? *splitDim - (kernelRank(ops) - t.getRank()) : -1;
    if (!splitDim || offset < 0 || t.getDimSize(offset) == 1)
      return t;
    SmallVector<int64_t> shape(t.getShape());
    shape[offset] = ShapedType::kDynamic;
    return RankedTensorType::get(shape, t.getElementType());
  };

  std::string name = "ortc_k" + std::to_string(kernelCount++);
  OpBuilder builder(kernels.getBodyRegion());
  builder.setInsertionPointToEnd(kernels.getBody());
  Location loc = ops.front()->getLoc();
  SmallVector<Type> argTypes;
  auto memrefOf = [&](Value v) {
    auto t = cast<RankedTensorType>(splitType(v.getType()));
    return MemRefType::get(t.getShape(), t.getElementType());
  };
  for (Value v : inputs)
    argTypes.push_back(memrefOf(v));
  for (Value v : outputs)
    argTypes.push_back(memrefOf(v));
  auto kernel = func::FuncOp::create(builder, loc, name, builder.getFunctionType(argTypes, {}));
  kernel->setAttr("ortc.kernel", builder.getUnitAttr());
  Block *body = kernel.addEntryBlock();
  builder.setInsertionPointToStart(body);
  IRMapping mapping;
  for (auto [i, v] : llvm::enumerate(inputs))
    mapping.map(v, bufferization::ToTensorOp::create(builder, loc, splitType(v.getType()),
                                                     body->getArgument(i),
                                                     /*restrict=*/true, /*writable=*/false)
                       .getResult());
  for (Operation *c : inlined)
    builder.clone(*c, mapping);
  for (Operation *op : ops) {
    Operation *copy = builder.clone(*op, mapping);
    for (Value result : copy->getResults())
      result.setType(splitType(result.getType()));
  }
  for (auto [i, v] : llvm::enumerate(outputs))
    bufferization::MaterializeInDestinationOp::create(builder, loc, Type(), mapping.lookup(v),
                                                      body->getArgument(inputs.size() + i),
                                                      /*restrict=*/true, /*writable=*/true);
  func::ReturnOp::create(builder, loc);

  // The same body as an earlier kernel: call that one instead.
  std::string printed;
  {
    llvm::raw_string_ostream os(printed);
    kernel.setSymName("kernel");
    kernel->print(os, OpPrintingFlags().useLocalScope());
    kernel.setSymName(name);
  }
  auto [known, added] = kernelsByBody.try_emplace(printed, name);
  if (!added) {
    kernel.erase();
    name = known->second;
  }

  std::string nodes;
  for (Operation *op : ops)
    nodes += (nodes.empty() ? "" : ",") + onnxNodeName(op);
  for (Operation *op : ops)
    addBroadcastChecks(op);
  int index = newStep(fb::StepKind::Kernel, name, nodes, ops);
  fb::StepT &step = *plan.steps[index];
  if (splitDim)
    setInt(step, "split_dim", *splitDim);
  for (Value v : inputs) {
    int id = bufferFor(v);
    if (id < 0)
      return ops.front()->emitError("cpu_ep: a kernel input has no buffer");
    step.inputs.push_back(id);
  }
  for (Value v : outputs) {
    int id = addBuffer(fb::BufferKind::Arena, v, onnxNodeName(v.getDefiningOp()));
    if (id < 0)
      return ops.front()->emitError("cpu_ep: a dim of a kernel output has no expression");
    buffers[v] = id;
    step.outputs.push_back(id);
  }
  return success();
}

LogicalResult PartitionCompiler::buildPlan() {
  plan.format_version = kCpuPlanFormatVersion;
  plan.ep_name = kCpuEpName;
  plan.ep_version = kCpuEpVersion;
  plan.hardware_architecture = target.hardwareArchitecture;
  plan.cpu_features = target.requiredFeatures;
  plan.compiler_versions = std::string("ortc ") + kCpuEpVersion + ", LLVM " LLVM_VERSION_STRING;
  plan.kernel_abi = kCpuKernelAbi;
  plan.partition_name = fn.getSymName().str();
  plan.memory = std::make_unique<fb::MemoryPlanT>();

  // Signature and input buffers. Regions too: an If's results follow from
  // what its branches yield.
  shapes = std::make_unique<SymbolicShapes>(fn, SymbolicShapes::Walk::WithRegions);
  refineStaticResultTypes(fn, *shapes);
  // The signature of a partition input or output; null when a dim has no
  // expression.
  auto signatureOf = [&](Value value, std::string name) -> std::unique_ptr<fb::TensorSignatureT> {
    if (std::optional<ContainerKind> container = containerKindOf(value.getType());
        container && *container != ContainerKind::None) {
      auto sig = std::make_unique<fb::TensorSignatureT>();
      sig->name = std::move(name);
      sig->element_type =
          onnxElementCode(containerElementType(value.getType()).getElementType());
      sig->container = fb::ContainerKind(*container);
      return sig;
    }
    std::optional<std::vector<int64_t>> shape = planShape(value);
    if (!shape)
      return nullptr;
    auto sig = std::make_unique<fb::TensorSignatureT>();
    sig->name = std::move(name);
    sig->element_type = onnxElementCode(cast<RankedTensorType>(value.getType()).getElementType());
    sig->shape = std::move(*shape);
    return sig;
  };
  auto isContainer = [](Value v) {
    std::optional<ContainerKind> kind = containerKindOf(v.getType());
    return kind && *kind != ContainerKind::None;
  };
  for (BlockArgument arg : fn.getArguments()) {
    if (!isa<RankedTensorType>(arg.getType()) && !isContainer(arg))
      return fn.emitError("cpu_ep: partition input ") << arg.getArgNumber() << " is not a tensor";
    std::string name = "input" + std::to_string(arg.getArgNumber());
    plan.inputs.push_back(signatureOf(arg, name));
    if (!plan.inputs.back())
      return fn.emitError("cpu_ep: a dim of partition input ")
             << arg.getArgNumber() << " has no expression";
    int id = addBuffer(fb::BufferKind::Input, arg, name);
    plan.buffers[id]->index = arg.getArgNumber();
    buffers[arg] = id;
    // Elements that are symbols are bound from the input's data.
    if (const SmallVector<int32_t> *elements = shapes->elements(arg))
      for (auto [k, element] : llvm::enumerate(*elements)) {
        const DimNode &node = shapes->table().node(element);
        if (node.op == DimOp::Symbol)
          plan.value_symbols.emplace_back(uint32_t(node.a), arg.getArgNumber(), uint32_t(k));
      }
  }

  // An op joins the open group when it has the group's result shape (its
  // element type may differ: IsNaN's bool feeds Where's float in one loop)
  // and reads a value the group produces or reads a non-constant value a
  // member reads (siblings such as Sigmoid(h) and Tanh(h) share one loop).
  auto sameShape = [](Value a, Value b) {
    return cast<ShapedType>(a.getType()).getShape() == cast<ShapedType>(b.getType()).getShape();
  };
  auto groupAccepts = [&](Operation *op) {
    if (group.empty())
      return true;
    if (group.size() >= kMaxKernelOps || !sameShape(op->getResult(0), groupResult) ||
        !sameDims(op->getResult(0), groupResult))
      return false;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && groupMembers.contains(def))
        return true;
      if (isConstantOp(def) || isNoValueOp(def))
        continue;
      if (groupReads.contains(operand))
        return true;
    }
    return false;
  };
  auto consumesGroup = [&](Operation *op) {
    for (Value operand : op->getOperands())
      if (Operation *def = operand.getDefiningOp())
        if (groupMembers.contains(def))
          return true;
    return false;
  };
  auto joinGroup = [&](Operation *op) {
    group.push_back(op);
    groupMembers.insert(op);
    groupReads.insert(op->operand_begin(), op->operand_end());
  };

  Operation *terminator = fn.getBody().front().getTerminator();
  int opsDone = 0;
  for (Operation &op : fn.getBody().front().without_terminator())
    opsTotal += !isConstantOp(&op) && !isNoValueOp(&op);
  for (Operation &op : fn.getBody().front().without_terminator()) {
    if (isConstantOp(&op) || isNoValueOp(&op))
      continue;
    progress("ops", opsDone++, opsTotal);
    CpuOpClass kind = classifyCpuOp(&op);
    if (kind == CpuOpClass::Elementwise) {
      if (!groupAccepts(&op) && failed(closeKernel()))
        return failure();
      if (group.empty())
        groupResult = op.getResult(0);
      joinGroup(&op);
      continue;
    }
    if (consumesGroup(&op) && failed(closeKernel()))
      return failure();
    if (kind == CpuOpClass::Structured) {
      // A kernel of its own, emitted after the open group (which it does
      // not read, or the group was just closed).
      if (failed(closeKernel()))
        return failure();
      joinGroup(&op);
      if (failed(closeKernel()))
        return failure();
      continue;
    }
    if (kind == CpuOpClass::View) {
      if (failed(emitView(&op)))
        return failure();
    } else if (kind == CpuOpClass::Library) {
      if (failed(emitLibraryStep(&op)))
        return failure();
    } else if (kind == CpuOpClass::Sequence) {
      if (failed(emitSequenceStep(&op)))
        return failure();
    } else if (kind == CpuOpClass::ControlFlow) {
      LogicalResult emitted = isa<onnx_dialect::LoopOp>(op)   ? emitLoop(&op)
                              : isa<onnx_dialect::ScanOp>(op) ? emitScan(&op)
                                                              : emitIf(&op);
      if (failed(emitted))
        return failure();
    } else {
      return op.emitError("cpu_ep: node '") << onnxNodeName(&op) << "' was placed on cpu_ep, "
                                            << "which has no kernel for it (a claim bug)";
    }
  }
  if (failed(closeKernel()))
    return failure();

  // Outputs: a result lands in the caller's buffer directly when its producer
  // wrote an arena slot of its own; otherwise (an input, a weight, a view, a
  // value returned twice) a Copy step fills it.
  llvm::SmallPtrSet<Value, 8> returned;
  for (auto [i, value] : llvm::enumerate(terminator->getOperands())) {
    if (!isa<RankedTensorType>(value.getType()) && !isContainer(value))
      return fn.emitError("cpu_ep: partition output ") << i << " is not a ranked tensor";
    std::string name = "output" + std::to_string(i);
    plan.outputs.push_back(signatureOf(value, name));
    if (!plan.outputs.back())
      return fn.emitError("cpu_ep: a dim of partition output ") << i << " has no expression";
    int id = bufferFor(value);
    if (id < 0)
      return fn.emitError("cpu_ep: partition output ") << i << " has no producer";
    fb::BufferT &buffer = *plan.buffers[id];
    if (buffer.kind == fb::BufferKind::Arena && returned.insert(value).second) {
      buffer.kind = fb::BufferKind::Output;
      buffer.index = i;
      continue;
    }
    int out = addBuffer(fb::BufferKind::Output, value, name);
    plan.buffers[out]->index = i;
    // A container is copied by the executor (its elements shared).
    int step = isContainer(value)
                   ? newStep(fb::StepKind::Sequence, "Identity", "output" + std::to_string(i))
                   : newStep(fb::StepKind::Library, "Copy", "output" + std::to_string(i));
    plan.steps[step]->inputs.push_back(id);
    plan.steps[step]->outputs.push_back(out);
  }

  // Every symbolic dim is an expression of the table; the plan carries it whole.
  plan.symbols = shapes->symbolNames();
  plan.data_symbols.assign(shapes->dataSymbols().begin(), shapes->dataSymbols().end());
  if (failed(addElementSymbols()))
    return failure();
  for (const DimNode &n : shapes->table().nodes())
    plan.dims.push_back(fb::DimNode(uint8_t(n.op), n.a, n.b));

  // Memory plan over the arena slots: live from the writing step to the last
  // step reading them or a view of them. An arena with a symbolic slot is laid
  // out by the runtime, per set of symbol values, with the same planner.
  std::vector<int> first, last;
  bufferLiveRanges(
      plan.steps,
      [](const std::unique_ptr<fb::StepT> &step) { return std::tie(step->inputs, step->outputs); },
      [&](int id) { return rootOf(id); }, plan.buffers.size(), first, last);
  std::vector<ArenaSlot> slots;
  std::vector<int> slotBuffer;
  bool &symbolicArena = arenaAtRunTime;
  for (size_t id = 0; id < plan.buffers.size(); ++id) {
    fb::BufferT &b = *plan.buffers[id];
    if (b.kind != fb::BufferKind::Arena)
      continue;
    symbolicArena |= llvm::any_of(b.shape, [](int64_t d) { return d < 0; });
    ArenaSlot slot;
    slot.size = b.size;
    slot.firstStep = std::max(first[id], 0);
    slot.lastStep = std::max(last[id], slot.firstStep);
    slots.push_back(slot);
    slotBuffer.push_back(int(id));
  }
  ArenaPlan arena;
  if (!symbolicArena) {
    arena = planArena(slots, kAlignment);
    for (size_t i = 0; i < slots.size(); ++i)
      plan.buffers[slotBuffer[i]]->offset = slots[i].offset;
  }
  plan.memory->alignment = kAlignment;
  plan.memory->fixed_bytes = arena.bytes;
  plan.memory->naive_fixed_bytes = arena.naiveBytes;
  return success();
}

FailureOr<std::unique_ptr<CpuCompiledPartition>> PartitionCompiler::run() {
  // The kernel functions are built with these before any pass loads them.
  fn.getContext()->loadDialect<bufferization::BufferizationDialect, func::FuncDialect>();
  OwningOpRef<ModuleOp> kernelModule = ModuleOp::create(fn.getLoc());
  kernels = *kernelModule;
  // Room for every constant at once (packed GEMM panels round up a little):
  // growing a vector of hundreds of MiB step by step copies it each time.
  uint64_t constantBytes = 0;
  fn.walk([&](Operation *op) {
    if (!isConstantOp(op))
      return;
    auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (type && type.hasStaticShape() && type.getElementType().isIntOrFloat())
      constantBytes += alignUp(uint64_t(type.getNumElements()) *
                                   std::max<uint64_t>(type.getElementTypeBitWidth() / 8, 1),
                               kAlignment);
  });
  weights.reserve(kBlobHeadRoom + constantBytes + constantBytes / 16);
  if (failed(buildPlan()))
    return failure();
  bool symbolicArena = arenaAtRunTime;
  uint64_t arenaBytes = plan.memory->fixed_bytes, naiveBytes = plan.memory->naive_fixed_bytes;

  // Code: the kernels through MLIR and LLVM, linked into a shared object.
  llvm::LLVMContext llvmContext;
  // Tiles as wide as the target's vector registers.
  KernelPipelineOptions pipelineOptions;
  const std::vector<std::string> &features = target.requiredFeatures;
  if (llvm::is_contained(features, "avx512f"))
    pipelineOptions.vectorWidth = 16;
  else if (!llvm::is_contained(features, "avx"))
    pipelineOptions.vectorWidth = 4;
  progress("ops", opsTotal, opsTotal);
  progress("kernels", 0, kernelCount);
  FailureOr<std::unique_ptr<llvm::Module>> llvmModule =
      lowerKernelsToLLVMIR(kernels, llvmContext, pipelineOptions);
  if (failed(llvmModule))
    return fn.emitError("cpu_ep: lowering the generated kernels of ")
           << fn.getSymName() << " failed";
  llvm::Expected<std::vector<char>> code = emitSharedObject(**llvmModule, target);
  if (!code)
    return fn.emitError("cpu_ep: ") << llvm::toString(code.takeError());
  progress("kernels", kernelCount, kernelCount);

  uint64_t weightBytes = weights.size() - kBlobHeadRoom;
  Result<std::vector<char>> blob =
      writeCpuBlob(plan, code->data(), code->size(), std::move(weights), shared.rowTables.data(),
                   shared.rowTables.size());
  if (!blob.isOk())
    return fn.emitError("cpu_ep: ") << blob.status().message();

  auto compiled = std::make_unique<CpuCompiledPartition>();
  compiled->blob = blob.takeValue();
  CpuPartitionSummary &summary = compiled->summary;
  summary.arenaPlannedAtRunTime = symbolicArena;
  summary.arenaBytes = arenaBytes;
  summary.naiveBytes = naiveBytes;
  summary.weightBytes = weightBytes + shared.rowTables.size();
  summary.codeBytes = code->size();
  std::function<void(const fb::PlanT &)> count = [&](const fb::PlanT &p) {
    for (auto &step : p.steps)
      if (step->kind == fb::StepKind::Kernel || step->kind == fb::StepKind::Library)
        (step->kind == fb::StepKind::Kernel ? summary.kernelSteps : summary.librarySteps)++;
    for (auto &sub : p.subplans) {
      ++summary.subplans;
      count(*sub);
    }
  };
  count(plan);
  return compiled;
}

class CpuCompileEp final : public CompileEp {
public:
  explicit CpuCompileEp(CpuTarget target) : target_(std::move(target)) {
    identity_ = EpIdentity{kCpuEpName, DeviceType::Cpu, 0};
  }
  const EpIdentity &identity() const override { return identity_; }
  KernelMatch supportsOp(const NodeQuery &query) const override {
    return matchCpuOp(query, name());
  }
  std::vector<std::string> contextSourceKeys() const override { return {kCpuContextSource}; }
  /// Epilogues folded into library Convs and MatMuls, inside this EP's
  /// partitions only.
  void addCustomPasses(OpPassManager &pm) const override {
    pm.addPass(createCpuFuseConvEpilogue());
    // Channels-last chains pay where the GEMM's tiles read their rows in
    // place (AVX-512). With AVX2 the im2col copies and the 8-lane depthwise
    // rows make them no faster than NCHW as a whole (kernel_isa=avx2 on an
    // Intel Xeon: 3x3 64@56 1.17x of NCHW, the stems 1.3x, stride-1
    // depthwise 1.15-1.5x, stride-2 depthwise 0.5-0.8x), so an AVX2 target
    // keeps NCHW.
    if (llvm::is_contained(target_.requiredFeatures, "avx512f"))
      pm.addPass(createCpuConvChannelsLast());
    pm.addPass(createCpuFuseDepthwiseBlock());
    pm.addPass(createCpuFuseMatMulEpilogue());
  }

  FailureOr<std::unique_ptr<CompiledPartition>> compilePartition(func::FuncOp partition) override {
    SharedOutputs shared;
    PartitionCompiler compiler(
        partition, target_,
        [this](const std::string &what, int done, int total) { reportWork(what, done, total); },
        shared);
    FailureOr<std::unique_ptr<CpuCompiledPartition>> compiled = compiler.run();
    if (failed(compiled))
      return failure();
    return std::unique_ptr<CompiledPartition>(std::move(*compiled));
  }

  FailureOr<EpContextBlob> saveContext(CompiledPartition &&compiled) override {
    auto &cpu = static_cast<CpuCompiledPartition &>(compiled);
    EpContextBlob out;
    out.source = kCpuContextSource;
    out.hardwareArchitecture = target_.hardwareArchitecture;
    out.epSdkVersion = std::string("ortc cpu_ep ") + kCpuEpVersion + " (kernel abi " +
                       std::to_string(kCpuKernelAbi) + ")";
    out.notes = cpu.summary.describe();
    out.bytes = std::move(cpu.blob); // hundreds of MiB: moved, not copied
    return out;
  }

private:
  EpIdentity identity_;
  CpuTarget target_;
};

} // namespace

std::string CpuPartitionSummary::describe() const {
  std::string arena = arenaPlannedAtRunTime
                          ? std::string("arena planned at run time per input shape")
                          : "arena " + formatBytes(arenaBytes) +
                                " (one buffer per value: " + formatBytes(naiveBytes) + ")";
  std::string bodies =
      subplans ? " (" + std::to_string(subplans) + " control-flow bodies included)" : "";
  return arena + "; " + std::to_string(kernelSteps) + " generated kernels, " +
         std::to_string(librarySteps) + " library calls" + bodies + "; weights " +
         formatBytes(weightBytes) + "; code " + formatBytes(codeBytes);
}

std::unique_ptr<CompileEp> createCpuCompileEp(const CpuCompileOptions &options,
                                              std::string &error) {
  llvm::Expected<CpuTarget> target = resolveCpuTarget(options.cpu);
  if (!target) {
    error = llvm::toString(target.takeError());
    return nullptr;
  }
  return std::make_unique<CpuCompileEp>(std::move(*target));
}

} // namespace ortc::cpu
