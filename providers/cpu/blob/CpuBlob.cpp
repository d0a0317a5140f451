//===- CpuBlob.cpp - the CPU EP's EPContext blob ---------------------------===//
//
// The reader trusts nothing: the envelope first, then FlatBuffers' verifier
// over META, then the plan's own promises (ids in range, sizes consistent with
// shapes, every range inside its section or region), so that the executor can
// index and copy without checks of its own.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/blob/CpuBlob.h"

#include "providers/cpu/kernels/Gemm.h"
#include "runtime/ep/Tensor.h"
#include "runtime/support/BlobContainer.h"

#include <algorithm>
#include <cstring>

namespace ortc::cpu {
namespace {

constexpr uint64_t kMaxAlignment = 4096;

Status invalid(const std::string &what, const std::string &message) {
  return Status::error(StatusCode::InvalidArgument, what + ": " + message);
}

Status unsupported(const std::string &what, const std::string &message) {
  return Status::error(StatusCode::Unsupported, what + ": " + message);
}

// Strings from the blob go into one-line messages: non-printable bytes become
// '?' and long ones are cut.
std::string printable(const char *text, size_t size) {
  constexpr size_t kMax = 80;
  std::string out;
  for (size_t i = 0; i < size && i < kMax; ++i)
    out += (text[i] >= 0x20 && text[i] <= 0x7e) ? text[i] : '?';
  if (size > kMax)
    out += "...";
  return out;
}

std::string printable(const flatbuffers::String *s) {
  return s ? printable(s->c_str(), s->size()) : std::string();
}

std::string printable(const std::string &s) { return printable(s.data(), s.size()); }

bool isPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

std::string shapeText(const flatbuffers::Vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      text += ",";
    if (i == 16) { // a hostile rank must not make a huge message
      text += "...";
      break;
    }
    int64_t d = shape[i];
    text += d < 0 ? "d" + std::to_string(-(d + 1)) : std::to_string(d);
  }
  return text + "]";
}

bool sameShape(const flatbuffers::Vector<int64_t> &a, const flatbuffers::Vector<int64_t> &b) {
  if (a.size() != b.size())
    return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i] != b[i])
      return false;
  return true;
}

std::string typeText(int32_t type) { return elementTypeName(ElementType(type)); }

// A FlatBuffer may point many tables at one vector or string, which the
// verifier allows, and walking them all would take quadratic time (here and in
// the executor). A plan built without sharing holds fewer vector elements and
// string words than META has 4-byte words, so every vector and string is paid
// for from that budget.
bool spend(uint64_t &budget, uint64_t elements) {
  if (elements > budget)
    return false;
  budget -= elements;
  return true;
}

bool spendString(uint64_t &budget, const flatbuffers::String *s) {
  return !s || spend(budget, s->size() / 4 + 1);
}

Status overBudget(const std::string &what) {
  return invalid(what, "META's vectors and strings hold more than its size allows (shared "
                       "vectors); refusing the plan");
}

// The verifier checks a vector's length word, not its elements' alignment;
// 8-byte elements are read in place.
template <typename T> bool elementsAligned(const flatbuffers::Vector<T> &v) {
  // An empty vector is never read, and FlatBuffers does not pad its data.
  return v.size() == 0 || reinterpret_cast<uintptr_t>(v.data()) % alignof(T) == 0;
}

/// Checks a shape's dims and element type; on success `bytes` is its size,
/// or 0 with `symbolic` set when a dim is one of the plan's `numDims`
/// expressions (its size is known at run time).
Status checkTensor(const std::string &what, const std::string &name, int32_t type,
                   const flatbuffers::Vector<int64_t> &shape, size_t numDims, uint64_t &bytes,
                   bool &symbolic, uint64_t &budget) {
  if (!spend(budget, shape.size()))
    return overBudget(what);
  if (!elementsAligned(shape))
    return invalid(what, name + ": shape vector is not 8-byte aligned in META");
  if (!isKnownElementType(ElementType(type)))
    return invalid(what, name + ": element type " + std::to_string(type) + " is not supported");
  symbolic = false;
  // Bytes per element, or for the sub-byte types elements first, then bytes
  // (rounded up to whole bytes).
  size_t elemSize = elementSize(ElementType(type));
  uint64_t count = elemSize ? elemSize : 1;
  for (size_t i = 0; i < shape.size(); ++i) {
    int64_t d = shape[i];
    if (d < 0) {
      if (uint64_t(-(d + 1)) >= numDims)
        return invalid(what, name + ": dim " + std::to_string(i) + " is " + std::to_string(d) +
                                 " (dims are >= 0, or -(k + 1) for dim node k of " +
                                 std::to_string(numDims) + ")");
      symbolic = true;
      continue;
    }
    if (__builtin_mul_overflow(count, uint64_t(d), &count))
      return invalid(what, name + ": shape " + shapeText(shape) + " overflows 64 bits");
  }
  uint64_t perByte = 8 / elementBits(ElementType(type));
  bytes = symbolic ? 0 : elemSize ? count : count / perByte + (count % perByte != 0);
  return Status::ok();
}

// The checks that depend only on META's bytes: structure, identity, versions.
Status checkMeta(const char *meta, size_t metaSize, const std::string &what,
                 const fb::Plan *&plan) {
  // FlatBuffers' own limit; its verifier asserts on larger buffers.
  if (metaSize >= FLATBUFFERS_MAX_BUFFER_SIZE)
    return invalid(what, "META section of " + std::to_string(metaSize) + " bytes is too large");
  // One table costs at least 4 bytes, so this bound never refuses a real plan.
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t *>(meta), metaSize,
                                 /*max_depth=*/64,
                                 /*max_tables=*/flatbuffers::uoffset_t(metaSize / 4 + 1));
  if (!fb::VerifyPlanBuffer(verifier))
    return invalid(what, "META section is not a valid CPU plan (FlatBuffer 'OCPU' verification "
                         "failed)");
  plan = fb::GetPlan(meta);
  if (plan->ep_name()->str() != kCpuEpName)
    return invalid(what, "blob belongs to EP '" + printable(plan->ep_name()) + "', not '" +
                             kCpuEpName + "'");
  if (plan->format_version() != kCpuPlanFormatVersion)
    return unsupported(what, "plan format_version " + std::to_string(plan->format_version()) +
                                 " is not supported (this build reads " +
                                 std::to_string(kCpuPlanFormatVersion) + "); recompile the model");
  if (plan->kernel_abi() != kCpuKernelAbi)
    return unsupported(what, "kernel_abi " + std::to_string(plan->kernel_abi()) +
                                 " is not supported (this build's kernels are ABI " +
                                 std::to_string(kCpuKernelAbi) + "); recompile the model");
  return Status::ok();
}

Status checkHost(const fb::Plan &plan, const std::string &what, const std::string &hostArch,
                 const std::vector<std::string> &hostFeatures) {
  std::string hardware = plan.hardware_architecture()->str();
  std::string arch = hardware.substr(0, hardware.find('+'));
  if (arch != hostArch)
    return unsupported(what, "compiled for '" + printable(hardware) + "', but the host is '" +
                                 printable(hostArch) + "'");
  std::string missing;
  if (const auto *features = plan.cpu_features())
    for (const flatbuffers::String *feature : *features)
      if (std::find(hostFeatures.begin(), hostFeatures.end(), feature->str()) == hostFeatures.end())
        missing += (missing.empty() ? "" : ", ") + printable(feature);
  if (!missing.empty())
    return unsupported(what, "compiled for '" + printable(hardware) +
                                 "', and the host CPU lacks: " + missing);
  return Status::ok();
}

Status checkCode(const char *code, size_t codeSize, const std::string &what) {
  static const char kElfMagic[4] = {0x7f, 'E', 'L', 'F'};
  if (codeSize < 4 || std::memcmp(code, kElfMagic, 4) != 0)
    return invalid(what, "CODE section is not an ELF shared object (no ELF magic)");
  return Status::ok();
}

// A container (format 5) has no bytes of its own: an empty shape, and
// elements of whole bytes (the sequence steps copy them bytewise).
Status checkContainer(const std::string &what, const std::string &name, fb::ContainerKind kind,
                      int32_t elementType, const flatbuffers::Vector<int64_t> &shape) {
  if (kind < fb::ContainerKind::MIN || kind > fb::ContainerKind::MAX)
    return invalid(what, name + ": unknown container kind " + std::to_string(int(kind)));
  if (kind == fb::ContainerKind::None)
    return Status::ok();
  if (shape.size() != 0)
    return invalid(what, name + ": a container (" + fb::EnumNameContainerKind(kind) +
                             ") has an empty shape, not " + shapeText(shape));
  if (elementSize(ElementType(elementType)) == 0)
    return invalid(what, name + ": a container's elements are whole-byte tensors, not " +
                             typeText(elementType));
  return Status::ok();
}

Status checkSignatures(const flatbuffers::Vector<flatbuffers::Offset<fb::TensorSignature>> &sigs,
                       const char *side, size_t numDims, const std::string &what,
                       uint64_t &budget) {
  for (size_t i = 0; i < sigs.size(); ++i) {
    const fb::TensorSignature *sig = sigs[i];
    if (!spendString(budget, sig->name()))
      return overBudget(what);
    std::string name =
        std::string(side) + " " + std::to_string(i) + " '" + printable(sig->name()) + "'";
    uint64_t bytes;
    bool symbolic;
    if (Status s = checkTensor(what, name, sig->element_type(), *sig->shape(), numDims, bytes,
                               symbolic, budget);
        !s.isOk())
      return s;
    if (Status s = checkContainer(what, name, sig->container(), sig->element_type(), *sig->shape());
        !s.isOk())
      return s;
  }
  return Status::ok();
}

// The symbolic dims: names for the symbols, a valid expression table.
Status checkDims(const fb::Plan &plan, const std::string &what, uint64_t &budget) {
  size_t numSymbols = plan.symbols() ? plan.symbols()->size() : 0;
  if (plan.symbols())
    for (const flatbuffers::String *name : *plan.symbols())
      if (!spendString(budget, name))
        return overBudget(what);
  if (!plan.dims())
    return Status::ok();
  const auto &dims = *plan.dims();
  if (!spend(budget, uint64_t(dims.size()) * 3))
    return overBudget(what);
  if (!elementsAligned(dims))
    return invalid(what, "dims vector is not 8-byte aligned in META");
  std::vector<DimNode> nodes = cpuPlanDimNodes(plan);
  std::string why;
  if (!verifyDimNodes(nodes.data(), nodes.size(), numSymbols, why))
    return invalid(what, "dims: " + why);
  return Status::ok();
}

// Each value symbol names a symbol and an element of a static int32/int64
// input.
Status checkValueSymbols(const fb::Plan &plan, const std::string &what, uint64_t &budget) {
  if (!plan.value_symbols())
    return Status::ok();
  size_t numSymbols = plan.symbols() ? plan.symbols()->size() : 0;
  const auto &inputs = *plan.inputs();
  for (const fb::ValueSymbol *v : *plan.value_symbols()) {
    if (!spend(budget, 3))
      return overBudget(what);
    std::string name = "value symbol " + std::to_string(v->symbol());
    if (v->symbol() >= numSymbols || v->input() >= inputs.size())
      return invalid(what, name + " names symbol " + std::to_string(v->symbol()) + " of " +
                               std::to_string(numSymbols) + " or input " +
                               std::to_string(v->input()) + " of " +
                               std::to_string(inputs.size()));
    const fb::TensorSignature &sig = *inputs[v->input()];
    ElementType type = ElementType(sig.element_type());
    // Read before checkTensor has seen the signature.
    if (!elementsAligned(*sig.shape()))
      return invalid(what, name + " reads input " + std::to_string(v->input()) +
                               ", whose shape vector is not 8-byte aligned in META");
    uint64_t count = 1;
    for (int64_t d : *sig.shape()) {
      if (d < 0 || d > (int64_t(1) << 20))
        return invalid(what, name + " reads input " + std::to_string(v->input()) +
                                 ", whose shape is not static and small");
      count *= uint64_t(d);
    }
    if ((type != ElementType::Int64 && type != ElementType::Int32) || v->element() >= count)
      return invalid(what, name + " reads element " + std::to_string(v->element()) +
                               " of input " + std::to_string(v->input()) + " (" +
                               typeText(sig.element_type()) + " " + shapeText(*sig.shape()) +
                               "), not an int32 or int64 element");
  }
  return Status::ok();
}

// Each check compares two dims of the table (or sizes).
Status checkDimChecks(const fb::Plan &plan, const std::string &what, uint64_t &budget) {
  if (!plan.checks())
    return Status::ok();
  size_t numDims = plan.dims() ? plan.dims()->size() : 0;
  for (const fb::DimCheck *check : *plan.checks()) {
    if (!spend(budget, 3) || !spendString(budget, check->what()))
      return overBudget(what);
    for (int64_t d : {check->a(), check->b()})
      if (d < 0 && uint64_t(-(d + 1)) >= numDims)
        return invalid(what, "check '" + printable(check->what()) + "' names dim node " +
                                 std::to_string(-(d + 1)) + " of " + std::to_string(numDims));
  }
  return Status::ok();
}

// Attributes are the executor's to interpret; here only what reading them
// needs: alignment, and the budget.
Status checkAttributes(const fb::Step &step, const std::string &name, const std::string &what,
                       uint64_t &budget) {
  if (const auto *ints = step.ints())
    for (const fb::IntsAttr *attr : *ints) {
      if (!spendString(budget, attr->name()) || !spend(budget, attr->values()->size()))
        return overBudget(what);
      if (!elementsAligned(*attr->values()))
        return invalid(what, name + ": attribute '" + printable(attr->name()) +
                                 "' values are not 8-byte aligned in META");
    }
  if (const auto *floats = step.floats())
    for (const fb::FloatsAttr *attr : *floats)
      if (!spendString(budget, attr->name()) || !spend(budget, attr->values()->size()))
        return overBudget(what);
  if (const auto *strings = step.strings())
    for (const fb::StringAttr *attr : *strings)
      if (!spendString(budget, attr->name()) || !spendString(budget, attr->value()))
        return overBudget(what);
  return Status::ok();
}

// A packed weight's size in bytes, from its packing and logical shape.
Status packedSize(const fb::Buffer &buffer, fb::BufferKind kind, const std::string &name,
                  const std::string &what, uint64_t &bytes) {
  std::string packing = printable(buffer.packing());
  if (kind != fb::BufferKind::Weight)
    return invalid(what, name + ": packing '" + packing + "' applies to Weight buffers only");
  const auto &shape = *buffer.shape();
  if (packing == "gemm_a" || packing == "gemm_bt" || packing == "gemm_bt_hwc") {
    // Conv's W as [M, K]: packedGemmASize() (Gemm.h), M rounded up to whole
    // row panels of K; or packedGemmBSize() of W^T, K rows of M rounded up
    // to whole column panels (gemm_bt_hwc: the same size, k in another
    // order).
    if (ElementType(buffer.element_type()) != ElementType::Float || shape.size() < 2)
      return invalid(what, name + ": packing '" + packing +
                               "' needs a float32 weight of rank >= 2, not " +
                               typeText(buffer.element_type()) + " " + shapeText(shape));
    uint64_t M = uint64_t(shape[0]), K = 1;
    for (size_t d = 1; d < shape.size(); ++d)
      if (shape[d] < 0 || __builtin_mul_overflow(K, uint64_t(shape[d]), &K))
        return invalid(what, name + ": packed shape " + shapeText(shape) + " is not static");
    uint64_t panel = uint64_t(packing == "gemm_a" ? kGemmPanelHeight : kGemmPanelWidth);
    uint64_t rows = (M / panel + (M % panel != 0)) * panel;
    if (shape[0] < 0 || __builtin_mul_overflow(rows, K, &bytes) ||
        __builtin_mul_overflow(bytes, uint64_t(sizeof(float)), &bytes))
      return invalid(what, name + ": packed shape " + shapeText(shape) + " overflows 64 bits");
    return Status::ok();
  }
  bool winogradA = packing == "winograd_f2x3" || packing == "winograd_f4x3";
  bool winogradBt = packing == "winograd_f2x3_bt" || packing == "winograd_f4x3_bt";
  if (winogradA || winogradBt) {
    // Conv's 3x3 W [M, C, 3, 3] as (T + 2)^2 matrices U_xi [M, C] each
    // packed as by gemm_a (packedWinogradSize(), Gemm.h), or each U_xi^T
    // [C, M] as by gemm_b (the _bt packings: packedWinogradChannelsLastSize()).
    if (ElementType(buffer.element_type()) != ElementType::Float || shape.size() != 4 ||
        shape[0] < 0 || shape[1] < 0 || shape[2] != 3 || shape[3] != 3)
      return invalid(what, name + ": packing '" + packing +
                               "' needs a float32 [M,C,3,3] weight, not " +
                               typeText(buffer.element_type()) + " " + shapeText(shape));
    uint64_t M = uint64_t(shape[0]), C = uint64_t(shape[1]);
    uint64_t panel = uint64_t(winogradA ? kGemmPanelHeight : kGemmPanelWidth);
    uint64_t rows = (M / panel + (M % panel != 0)) * panel;
    uint64_t elements = packing == "winograd_f2x3" || packing == "winograd_f2x3_bt" ? 16 : 36;
    if (__builtin_mul_overflow(rows, C, &bytes) ||
        __builtin_mul_overflow(bytes, elements * sizeof(float), &bytes))
      return invalid(what, name + ": packed shape " + shapeText(shape) + " overflows 64 bits");
    return Status::ok();
  }
  if (packing != "gemm_b")
    return invalid(what, name + ": unknown packing '" + packing + "'");
  if (ElementType(buffer.element_type()) != ElementType::Float || shape.size() != 2 ||
      shape[0] < 0 || shape[1] < 0)
    return invalid(what, name + ": packing 'gemm_b' needs a float32 [K,N] weight, not " +
                             typeText(buffer.element_type()) + " " + shapeText(shape));
  // packedGemmBSize() (Gemm.h): K rows of N rounded up to whole panels; kept
  // in step with it by kCpuKernelAbi and by CpuBlobTest.
  uint64_t K = uint64_t(shape[0]), N = uint64_t(shape[1]);
  uint64_t width = uint64_t(kGemmPanelWidth);
  uint64_t columns = (N / width + (N % width != 0)) * width;
  if (__builtin_mul_overflow(columns, K, &bytes) ||
      __builtin_mul_overflow(bytes, uint64_t(sizeof(float)), &bytes))
    return invalid(what, name + ": packed shape " + shapeText(shape) + " overflows 64 bits");
  return Status::ok();
}

const fb::IntsAttr *findInts(const fb::Step &step, const char *attr) {
  if (const auto *ints = step.ints())
    for (const fb::IntsAttr *a : *ints)
      if (a->name()->str() == attr)
        return a;
  return nullptr;
}

// A step that reads a packed weight says so, and only so: packed_b = 1 takes
// a "gemm_b" weight as input 1, packed_w = 1 a "gemm_a" one, packed_w = 2
// a "gemm_bt" one, packed_w = 3 a "gemm_bt_hwc" one, packed_w = 4 a
// "winograd_f2x3" one, packed_w = 5 a "winograd_f4x3" one, packed_w = 6 and
// 7 a "winograd_f2x3_bt" and "winograd_f4x3_bt" one (or one as each of
// the inputs `packed_inputs` lists that is present: a depthwise block's
// two pointwise weights); a packed weight is read nowhere else (the kernel
// would read its panels as rows, or rows as panels past their end).
Status checkPackedOperands(const fb::Step &step,
                           const flatbuffers::Vector<flatbuffers::Offset<fb::Buffer>> &buffers,
                           const std::string &name, const std::string &what) {
  auto flag = [&](const char *attr) -> int64_t {
    if (const auto *ints = step.ints())
      for (const fb::IntsAttr *a : *ints)
        if (a->name()->str() == attr && a->values()->size() == 1)
          return a->values()->Get(0);
    return 0;
  };
  int64_t packedW = flag("packed_w");
  std::string want = flag("packed_b") != 0 ? "gemm_b"
                     : packedW == 1        ? "gemm_a"
                     : packedW == 2        ? "gemm_bt"
                     : packedW == 3        ? "gemm_bt_hwc"
                     : packedW == 4        ? "winograd_f2x3"
                     : packedW == 5        ? "winograd_f4x3"
                     : packedW == 6        ? "winograd_f2x3_bt"
                     : packedW == 7        ? "winograd_f4x3_bt"
                                           : "";
  std::vector<int64_t> packedInputs = {1};
  if (const fb::IntsAttr *listed = findInts(step, "packed_inputs"))
    packedInputs.assign(listed->values()->begin(), listed->values()->end());
  const auto &ins = *step.inputs();
  bool anyPacked = false;
  for (size_t i = 0; i < ins.size(); ++i) {
    bool present = ins[i] >= 0;
    std::string packing =
        present && buffers[ins[i]]->packing() ? buffers[ins[i]]->packing()->str() : std::string();
    bool listed =
        std::find(packedInputs.begin(), packedInputs.end(), int64_t(i)) != packedInputs.end();
    std::string expected = listed && present ? want : "";
    anyPacked |= !expected.empty();
    if (packing != expected)
      return invalid(what, name + ": input " + std::to_string(i) + " is " +
                               (packing.empty() ? "not packed" : "packed as '" + packing + "'") +
                               (expected.empty() ? std::string(", which this step does not read")
                                                 : ", the step reads it as '" + expected + "'"));
  }
  if (!want.empty() && !anyPacked) {
    std::string inputs;
    for (int64_t i : packedInputs)
      inputs += (inputs.empty() ? "" : " or ") + std::to_string(i);
    return invalid(what, name + ": a step that reads a packed weight takes it as input " + inputs);
  }
  return Status::ok();
}

// Control flow nests at most this deep (sub-plans of sub-plans).
constexpr int kMaxSubplanDepth = 32;

bool sameValueType(const fb::Buffer &buffer, const fb::TensorSignature &sig) {
  return buffer.element_type() == sig.element_type() && buffer.container() == sig.container();
}
template <typename BufferOrSignature> bool isContainer(const BufferOrSignature &value) {
  return value.container() != fb::ContainerKind::None;
}

// Step inputs from `firstInput` and outputs match the body's signature
// (from `bodyInput`, `bodyOutput`) element type for element type; a step
// input must be present.
Status checkBodyTypes(const fb::Plan &plan, const fb::Step &step, const fb::Plan &body,
                      size_t firstInput, size_t bodyInput, size_t bodyOutput,
                      const std::string &name, const std::string &what) {
  const auto &buffers = *plan.buffers();
  const auto &ins = *step.inputs();
  const auto &outs = *step.outputs();
  for (size_t i = firstInput; i < ins.size(); ++i)
    if (ins[i] < 0 || !sameValueType(*buffers[ins[i]],
                                     *body.inputs()->Get(
                                         flatbuffers::uoffset_t(i - firstInput + bodyInput))))
      return invalid(what, name + ": body input " + std::to_string(i - firstInput + bodyInput) +
                               " differs in element type or container kind from the step's");
  for (size_t i = 0; i < outs.size(); ++i)
    if (!sameValueType(*buffers[outs[i]],
                       *body.outputs()->Get(flatbuffers::uoffset_t(i + bodyOutput))))
      return invalid(what, name + ": body output " + std::to_string(i + bodyOutput) +
                               " differs in element type or container kind from the step's");
  return Status::ok();
}

// A Loop step's one sub-plan takes (iteration, condition, carried...,
// read...) and gives (condition, carried..., scans...).
Status checkLoopStep(const fb::Plan &plan, const fb::Step &step, const std::string &name,
                     const std::string &what) {
  const fb::IntsAttr *subplans = findInts(step, "subplans");
  const fb::IntsAttr *carriedAttr = findInts(step, "carried");
  size_t count = plan.subplans() ? plan.subplans()->size() : 0;
  if (!subplans || subplans->values()->size() != 1 || !carriedAttr ||
      carriedAttr->values()->size() != 1)
    return invalid(what, name + ": a Loop step needs one sub-plan and its carried count");
  int64_t index = subplans->values()->Get(0), carried = carriedAttr->values()->Get(0);
  if (index < 0 || uint64_t(index) >= count)
    return invalid(what, name + ": sub-plan " + std::to_string(index) + " of " +
                             std::to_string(count));
  const auto &ins = *step.inputs();
  const auto &outs = *step.outputs();
  const fb::Plan &body = *plan.subplans()->Get(flatbuffers::uoffset_t(index));
  if (carried < 0 || uint64_t(carried) > outs.size() || uint64_t(carried) + 2 > ins.size() ||
      body.inputs()->size() != ins.size() || body.outputs()->size() != outs.size() + 1)
    return invalid(what, name + ": its body takes " + std::to_string(body.inputs()->size()) +
                             " inputs and gives " + std::to_string(body.outputs()->size()) +
                             " outputs; the step has " + std::to_string(ins.size()) + " and " +
                             std::to_string(outs.size()) + " with " + std::to_string(carried) +
                             " carried");
  const auto &buffers = *plan.buffers();
  for (size_t i = 0; i < 2; ++i)
    if (ins[i] >= 0 && isContainer(*buffers[ins[i]]))
      return invalid(what, name + ": the trip count and the condition are tensors");
  for (size_t i = size_t(carried); i < outs.size(); ++i)
    if (isContainer(*buffers[outs[i]]))
      return invalid(what, name + ": scan output " + std::to_string(i - size_t(carried)) +
                               " is a container; scan outputs are tensors");
  if (isContainer(*body.outputs()->Get(0)))
    return invalid(what, name + ": the body's condition is a container");
  // A carried value stays a tensor or a container: the executor feeds each
  // iteration's output back as the next one's input. (Container kinds may
  // differ: an optional sequence that starts empty and comes back a
  // sequence is one SequenceValue either way.)
  for (size_t i = 0; i < size_t(carried); ++i)
    if (ins[2 + i] < 0 || isContainer(*buffers[ins[2 + i]]) != isContainer(*buffers[outs[i]]))
      return invalid(what, name + ": carried value " + std::to_string(i) +
                               " starts and ends as different kinds (tensor, container)");
  return checkBodyTypes(plan, step, body, 2, 2, 1, name, what);
}

// A Scan step's one sub-plan takes (states..., slices..., read...) and gives
// (states..., scan values...).
Status checkScanStep(const fb::Plan &plan, const fb::Step &step, const std::string &name,
                     const std::string &what) {
  const fb::IntsAttr *subplans = findInts(step, "subplans");
  const fb::IntsAttr *carriedAttr = findInts(step, "carried");
  const fb::IntsAttr *scansAttr = findInts(step, "num_scan_inputs");
  size_t count = plan.subplans() ? plan.subplans()->size() : 0;
  if (!subplans || subplans->values()->size() != 1 || !carriedAttr ||
      carriedAttr->values()->size() != 1 || !scansAttr || scansAttr->values()->size() != 1)
    return invalid(what, name + ": a Scan step needs one sub-plan, its state count and "
                                "num_scan_inputs");
  int64_t index = subplans->values()->Get(0), states = carriedAttr->values()->Get(0),
          scans = scansAttr->values()->Get(0);
  if (index < 0 || uint64_t(index) >= count)
    return invalid(what, name + ": sub-plan " + std::to_string(index) + " of " +
                             std::to_string(count));
  const auto &ins = *step.inputs();
  const auto &outs = *step.outputs();
  const fb::Plan &body = *plan.subplans()->Get(flatbuffers::uoffset_t(index));
  if (states < 0 || scans < 1 || uint64_t(states) > outs.size() ||
      uint64_t(states + scans) > ins.size() || body.inputs()->size() != ins.size() ||
      body.outputs()->size() != outs.size())
    return invalid(what, name + ": its body takes " + std::to_string(body.inputs()->size()) +
                             " inputs and gives " + std::to_string(body.outputs()->size()) +
                             " outputs; the step has " + std::to_string(ins.size()) + " and " +
                             std::to_string(outs.size()) + " with " + std::to_string(states) +
                             " states and " + std::to_string(scans) + " scan inputs");
  // Scan slices and stacks tensors; containers do not travel through it.
  for (int32_t id : ins)
    if (id >= 0 && isContainer(*plan.buffers()->Get(flatbuffers::uoffset_t(id))))
      return invalid(what, name + ": a Scan step takes tensors only");
  for (int32_t id : outs)
    if (isContainer(*plan.buffers()->Get(flatbuffers::uoffset_t(id))))
      return invalid(what, name + ": a Scan step gives tensors only");
  return checkBodyTypes(plan, step, body, 0, 0, 0, name, what);
}

// A control-flow step names sub-plans whose signatures take its operands.
Status checkControlFlowStep(const fb::Plan &plan, const fb::Step &step, const std::string &name,
                            const std::string &what) {
  if (step.kind() == fb::StepKind::Loop)
    return checkLoopStep(plan, step, name, what);
  if (step.kind() == fb::StepKind::Scan)
    return checkScanStep(plan, step, name, what);
  const fb::IntsAttr *subplans = findInts(step, "subplans");
  size_t count = plan.subplans() ? plan.subplans()->size() : 0;
  if (!subplans || subplans->values()->size() != 2)
    return invalid(what, name + ": an If step needs two sub-plans (then, else)");
  const auto &buffers = *plan.buffers();
  const auto &ins = *step.inputs();
  const auto &outs = *step.outputs();
  if (ins.size() == 0 || ins[0] < 0 || isContainer(*buffers[ins[0]]))
    return invalid(what, name + ": an If step needs its condition (a tensor) as input 0");
  for (int64_t index : *subplans->values()) {
    if (index < 0 || uint64_t(index) >= count)
      return invalid(what, name + ": sub-plan " + std::to_string(index) + " of " +
                               std::to_string(count));
    const fb::Plan &sub = *plan.subplans()->Get(flatbuffers::uoffset_t(index));
    std::string subName = name + ": sub-plan " + std::to_string(index);
    if (sub.inputs()->size() != ins.size() - 1 || sub.outputs()->size() != outs.size())
      return invalid(what, subName + " takes " + std::to_string(sub.inputs()->size()) +
                               " inputs and gives " + std::to_string(sub.outputs()->size()) +
                               " outputs, the step has " + std::to_string(ins.size() - 1) +
                               " and " + std::to_string(outs.size()));
    for (size_t i = 1; i < ins.size(); ++i)
      if (ins[i] < 0 || !sameValueType(*buffers[ins[i]], *sub.inputs()->Get(flatbuffers::uoffset_t(i - 1))))
        return invalid(what, subName + " input " + std::to_string(i - 1) +
                                 " differs in element type or container kind from the step's");
    for (size_t i = 0; i < outs.size(); ++i)
      if (!sameValueType(*buffers[outs[i]], *sub.outputs()->Get(flatbuffers::uoffset_t(i))))
        return invalid(what, subName + " output " + std::to_string(i) +
                                 " differs in element type or container kind from the step's");
  }
  return Status::ok();
}

// A Sequence step: its callee is one the executor runs, with containers
// exactly where that op takes and gives them (the executor relies on it),
// and positions and splits as int32 or int64 tensors.
Status checkSequenceStep(const fb::Plan &plan, const fb::Step &step, const std::string &name,
                         const std::string &what) {
  using K = fb::ContainerKind;
  const auto &buffers = *plan.buffers();
  const auto &ins = *step.inputs();
  const auto &outs = *step.outputs();
  std::string op = step.callee()->str();
  auto kindIn = [&](size_t k) {
    return k >= ins.size() || ins[k] < 0 ? K::None : buffers[ins[k]]->container();
  };
  // `all` below evaluates every check it is given before it looks at the
  // first, so each must hold up on a step of any arity: an index past the
  // step's inputs or outputs is refused, never read.
  auto kindOut = [&](size_t k) {
    return k < outs.size() ? buffers[outs[k]]->container() : K::None;
  };
  auto bad = [&](const std::string &why) { return invalid(what, name + ": " + why); };
  auto arity = [&](size_t minIn, size_t maxIn, size_t numOut) -> Status {
    if (ins.size() < minIn || ins.size() > maxIn || outs.size() != numOut)
      return bad(op + " takes " + std::to_string(minIn) +
                 (maxIn != minIn ? "-" + (maxIn == SIZE_MAX ? std::string("N")
                                                           : std::to_string(maxIn))
                                 : std::string()) +
                 " inputs and gives " + std::to_string(numOut) + "; the step has " +
                 std::to_string(ins.size()) + " and " + std::to_string(outs.size()));
    return Status::ok();
  };
  // Input k is required (present) and of `want` kind.
  auto needIn = [&](size_t k, K want, bool required = true) -> Status {
    if (k >= ins.size() || ins[k] < 0)
      return required ? bad(op + " input " + std::to_string(k) + " is required") : Status::ok();
    if (kindIn(k) != want)
      return bad(op + " input " + std::to_string(k) + " is " +
                 fb::EnumNameContainerKind(kindIn(k)) + ", not " + fb::EnumNameContainerKind(want));
    return Status::ok();
  };
  auto needOut = [&](size_t k, K want) -> Status {
    if (k >= outs.size())
      return bad(op + " output " + std::to_string(k) + " is missing");
    if (kindOut(k) != want)
      return bad(op + " output " + std::to_string(k) + " is " +
                 fb::EnumNameContainerKind(kindOut(k)) + ", not " + fb::EnumNameContainerKind(want));
    return Status::ok();
  };
  auto needIndex = [&](size_t k) -> Status {
    if (k >= ins.size() || ins[k] < 0)
      return Status::ok();
    if (Status s = needIn(k, K::None); !s.isOk())
      return s;
    auto type = ElementType(buffers[ins[k]]->element_type());
    if (type != ElementType::Int32 && type != ElementType::Int64)
      return bad(op + " input " + std::to_string(k) + " is " + elementTypeName(type) +
                 "; positions and splits are int32 or int64");
    return Status::ok();
  };
  auto all = [](std::initializer_list<Status> checks) {
    for (const Status &s : checks)
      if (!s.isOk())
        return s;
    return Status::ok();
  };
  if (op == "SequenceEmpty")
    return all({arity(0, 0, 1), needOut(0, K::Sequence)});
  if (op == "SequenceConstruct") {
    if (Status s = arity(1, SIZE_MAX, 1); !s.isOk())
      return s;
    for (size_t k = 0; k < ins.size(); ++k)
      if (Status s = needIn(k, K::None); !s.isOk())
        return s;
    return needOut(0, K::Sequence);
  }
  if (op == "SequenceInsert")
    return all({arity(2, 3, 1), needIn(0, K::Sequence), needIn(1, K::None), needIndex(2),
                needOut(0, K::Sequence)});
  if (op == "SequenceErase")
    return all({arity(1, 2, 1), needIn(0, K::Sequence), needIndex(1), needOut(0, K::Sequence)});
  if (op == "SequenceAt")
    return all({arity(2, 2, 1), needIn(0, K::Sequence), needIn(1, K::None), needIndex(1),
                needOut(0, K::None)});
  if (op == "SequenceLength" || op == "ConcatFromSequence")
    return all({arity(1, 1, 1), needIn(0, K::Sequence), needOut(0, K::None)});
  if (op == "SplitToSequence")
    return all({arity(1, 2, 1), needIn(0, K::None), needIndex(1), needOut(0, K::Sequence)});
  if (op == "Optional") {
    if (Status s = arity(0, 1, 1); !s.isOk())
      return s;
    K in = ins.size() ? kindIn(0) : K::None;
    bool absent = ins.size() == 0 || ins[0] < 0;
    if (in == K::OptionalTensor || in == K::OptionalSequence)
      return bad("Optional input 0 is already an optional");
    if (absent)
      return kindOut(0) == K::OptionalTensor || kindOut(0) == K::OptionalSequence
                 ? Status::ok()
                 : bad("Optional output 0 is " + std::string(fb::EnumNameContainerKind(kindOut(0))) +
                       ", not an optional");
    return needOut(0, in == K::Sequence ? K::OptionalSequence : K::OptionalTensor);
  }
  if (op == "OptionalHasElement")
    return all({arity(0, 1, 1), needOut(0, K::None)});
  if (op == "OptionalGetElement") {
    if (Status s = arity(1, 1, 1); !s.isOk())
      return s;
    if (ins[0] < 0)
      return bad("OptionalGetElement input 0 is required");
    K in = kindIn(0);
    return needOut(0, in == K::OptionalTensor   ? K::None
                      : in == K::OptionalSequence ? K::Sequence
                                                  : in);
  }
  if (op == "Identity") {
    if (Status s = arity(1, 1, 1); !s.isOk())
      return s;
    if (ins[0] < 0 || kindIn(0) == K::None)
      return bad("a sequence step's Identity copies a container");
    return needOut(0, kindIn(0));
  }
  return bad("no sequence step '" + printable(step.callee()) + "'");
}

/// Every buffer's dims can be bound by a run: no dim reads a symbol that no
/// input dim is alone, no input value gives (value_symbols) and no step
/// reports (data_symbols). The plan's symbol table may list such a symbol
/// (the analysis of a body the plan runs as a sub-plan), but no buffer may
/// read one, or every run would be refused. One pass over the dim nodes
/// (operands precede users), so a deep or shared expression costs nothing.
Status checkSymbolsBindable(const fb::Plan &plan, const std::string &what) {
  size_t numSymbols = plan.symbols() ? plan.symbols()->size() : 0;
  std::vector<DimNode> dims = cpuPlanDimNodes(plan);
  std::vector<char> bindable(numSymbols, 0);
  if (const auto *data = plan.data_symbols())
    for (uint32_t k : *data)
      bindable[k] = 1;
  if (const auto *values = plan.value_symbols())
    for (const fb::ValueSymbol *v : *values)
      bindable[v->symbol()] = 1;
  for (const fb::TensorSignature *sig : *plan.inputs())
    for (int64_t d : *sig->shape())
      if (d < 0 && dims[size_t(-(d + 1))].op == DimOp::Symbol)
        bindable[size_t(dims[size_t(-(d + 1))].a)] = 1;
  // Per node: a symbol it reads that nothing binds, or -1.
  std::vector<int64_t> unbound(dims.size(), -1);
  for (size_t n = 0; n < dims.size(); ++n) {
    const DimNode &node = dims[n];
    if (node.op == DimOp::Symbol)
      unbound[n] = bindable[size_t(node.a)] ? -1 : node.a;
    else if (node.op != DimOp::Const)
      unbound[n] = unbound[size_t(node.a)] >= 0 ? unbound[size_t(node.a)] : unbound[size_t(node.b)];
  }
  const auto &buffers = *plan.buffers();
  for (size_t id = 0; id < buffers.size(); ++id)
    for (int64_t d : *buffers[flatbuffers::uoffset_t(id)]->shape())
      if (d < 0 && unbound[size_t(-(d + 1))] >= 0)
        return invalid(
            what,
            "buffer " + std::to_string(id) + " '" +
                printable(buffers[flatbuffers::uoffset_t(id)]->name()) + "' reads symbol '" +
                printable(plan.symbols()->Get(flatbuffers::uoffset_t(unbound[size_t(-(d + 1))]))) +
                "', which is no input's dim or value, so no run can bind it");
  return Status::ok();
}

// The bytes of the two sections weights lie in.
struct WeightSizes {
  size_t weights = 0; // WGHT
  size_t rows = 0;    // ROWS
};

Status checkConsistency(const fb::Plan &plan, WeightSizes sizes, const std::string &what,
                        uint64_t &budget, int depth);

// The plan's promises to the executor; see README.md for the list.
Status checkConsistency(const fb::Plan &plan, size_t metaSize, WeightSizes sizes,
                        const std::string &what) {
  uint64_t budget = metaSize / 4;
  return checkConsistency(plan, sizes, what, budget, 0);
}

Status checkConsistency(const fb::Plan &plan, WeightSizes sizes, const std::string &what,
                        uint64_t &budget, int depth) {
  if (depth > kMaxSubplanDepth)
    return invalid(what, "sub-plans nest deeper than " + std::to_string(kMaxSubplanDepth));
  const auto &inputs = *plan.inputs();
  const auto &outputs = *plan.outputs();
  const auto &buffers = *plan.buffers();
  const auto &steps = *plan.steps();
  const fb::MemoryPlan &memory = *plan.memory();
  if (Status s = checkDims(plan, what, budget); !s.isOk())
    return s;
  if (Status s = checkDimChecks(plan, what, budget); !s.isOk())
    return s;
  if (Status s = checkValueSymbols(plan, what, budget); !s.isOk())
    return s;
  if (const auto *data = plan.data_symbols()) {
    size_t numSymbols = plan.symbols() ? plan.symbols()->size() : 0;
    if (!spend(budget, data->size()))
      return overBudget(what);
    for (uint32_t k : *data)
      if (k >= numSymbols)
        return invalid(what, "data symbol " + std::to_string(k) + " of " +
                                 std::to_string(numSymbols) + " symbols");
  }
  if (const auto *elements = plan.element_symbols()) {
    // Each reads an element of a static int32/int64 buffer that is no alias
    // or weight, into one of the data symbols.
    size_t numSymbols = plan.symbols() ? plan.symbols()->size() : 0;
    std::vector<char> isData(numSymbols, 0);
    if (const auto *data = plan.data_symbols())
      for (uint32_t k : *data)
        isData[k] = 1;
    for (const fb::ElementSymbol *e : *elements) {
      if (!spend(budget, 3))
        return overBudget(what);
      std::string name = "element symbol " + std::to_string(e->symbol());
      if (e->symbol() >= numSymbols || !isData[e->symbol()] || e->buffer() >= buffers.size())
        return invalid(what, name + " names no data symbol of " + std::to_string(numSymbols) +
                                 " or buffer " + std::to_string(e->buffer()) + " of " +
                                 std::to_string(buffers.size()));
      const fb::Buffer &b = *buffers[e->buffer()];
      ElementType type = ElementType(b.element_type());
      uint64_t count = 1;
      bool fixed = b.shape() != nullptr;
      if (fixed)
        for (int64_t d : *b.shape()) {
          fixed = fixed && d >= 0 && d <= (int64_t(1) << 20);
          if (fixed)
            count *= uint64_t(d);
        }
      if (b.kind() == fb::BufferKind::Alias || b.kind() == fb::BufferKind::Weight || !fixed ||
          (type != ElementType::Int64 && type != ElementType::Int32) || e->element() >= count)
        return invalid(what, name + " reads element " + std::to_string(e->element()) +
                                 " of buffer " + std::to_string(e->buffer()) +
                                 ", not an int32 or int64 element of a static computed tensor");
    }
  }
  if (const auto *subplans = plan.subplans())
    for (size_t k = 0; k < subplans->size(); ++k)
      if (Status s = checkConsistency(*subplans->Get(flatbuffers::uoffset_t(k)), sizes, what,
                                      budget, depth + 1);
          !s.isOk()) {
        // "<what>: <why>" becomes "<what>: sub-plan k: <why>".
        std::string why = s.message();
        if (why.rfind(what + ": ", 0) == 0)
          why = why.substr(what.size() + 2);
        return Status::error(s.code(), what + ": sub-plan " + std::to_string(k) + ": " + why);
      }
  size_t numDims = plan.dims() ? plan.dims()->size() : 0;
  if (Status s = checkSignatures(inputs, "input", numDims, what, budget); !s.isOk())
    return s;
  if (Status s = checkSignatures(outputs, "output", numDims, what, budget); !s.isOk())
    return s;

  uint64_t alignment = memory.alignment();
  if (!isPowerOfTwo(alignment) || alignment > kMaxAlignment)
    return invalid(what, "memory plan: alignment " + std::to_string(alignment) +
                             " is not a power of two up to 4096");

  if (buffers.size() > uint32_t(INT32_MAX))
    return invalid(what, "too many buffers (" + std::to_string(buffers.size()) + ")");
  int32_t numBuffers = int32_t(buffers.size());
  // cpuPlanHasSymbolicArena reads the Arena buffers' shapes before
  // checkTensor has (fuzz_cpu_blob).
  for (int32_t id = 0; id < numBuffers; ++id)
    if (buffers[id]->kind() == fb::BufferKind::Arena && !elementsAligned(*buffers[id]->shape()))
      return invalid(what, "buffer " + std::to_string(id) + " '" + printable(buffers[id]->name()) +
                               "' (Arena): shape vector is not 8-byte aligned in META");
  bool symbolicArena = cpuPlanHasSymbolicArena(plan);
  // The buffer whose bytes each buffer is, following aliases.
  std::vector<int32_t> root(buffers.size());
  std::vector<char> symbolicBuffer(buffers.size(), 0);
  for (int32_t id = 0; id < numBuffers; ++id) {
    const fb::Buffer &buffer = *buffers[id];
    if (!spendString(budget, buffer.name()))
      return overBudget(what);
    std::string name = "buffer " + std::to_string(id) + " '" + printable(buffer.name()) + "'";
    fb::BufferKind kind = buffer.kind();
    if (kind < fb::BufferKind::MIN || kind > fb::BufferKind::MAX)
      return invalid(what, name + ": unknown kind " + std::to_string(int(kind)));
    name += " (" + std::string(fb::EnumNameBufferKind(kind)) + ")";
    uint64_t bytes;
    bool symbolic;
    if (Status s = checkTensor(what, name, buffer.element_type(), *buffer.shape(), numDims, bytes,
                               symbolic, budget);
        !s.isOk())
      return s;
    if (buffer.container() != fb::ContainerKind::None)
      bytes = 0; // a container's tensors are the run state's, not the plan's
    if (buffer.row_table() && kind != fb::BufferKind::Weight)
      return invalid(what, name + ": row_table applies to Weight buffers only");
    std::string layout;
    if (buffer.packing() && buffer.packing()->size()) {
      if (!spendString(budget, buffer.packing()))
        return overBudget(what);
      if (Status s = packedSize(buffer, kind, name, what, bytes); !s.isOk())
        return s;
      layout = " packed as '" + buffer.packing()->str() + "'";
    }
    if (buffer.size() != bytes)
      return invalid(what, name + ": size " + std::to_string(buffer.size()) + " bytes, but " +
                               typeText(buffer.element_type()) + " " + shapeText(*buffer.shape()) +
                               layout + " needs " + std::to_string(bytes) +
                               (symbolic ? " (0: its size is known at run time)" : ""));
    if (Status s = checkContainer(what, name, buffer.container(), buffer.element_type(),
                                  *buffer.shape());
        !s.isOk())
      return s;
    if (isContainer(buffer) && kind != fb::BufferKind::Input && kind != fb::BufferKind::Output &&
        kind != fb::BufferKind::Arena)
      return invalid(what, name + ": a container is an Input, an Output or an Arena buffer");
    root[id] = id;
    symbolicBuffer[size_t(id)] = symbolic;
    switch (kind) {
    case fb::BufferKind::Input:
    case fb::BufferKind::Output: {
      bool isInput = kind == fb::BufferKind::Input;
      const auto &sigs = isInput ? inputs : outputs;
      const char *side = isInput ? "input" : "output";
      if (buffer.index() >= sigs.size())
        return invalid(what, name + ": index " + std::to_string(buffer.index()) +
                                 " is out of range (the partition has " +
                                 std::to_string(sigs.size()) + " " + side + "s)");
      const fb::TensorSignature &sig = *sigs[buffer.index()];
      if (!sameValueType(buffer, sig) || !sameShape(*sig.shape(), *buffer.shape()))
        return invalid(what, name + ": " + typeText(buffer.element_type()) + " " +
                                 shapeText(*buffer.shape()) + " differs from " + side + " " +
                                 std::to_string(buffer.index()) + " '" + printable(sig.name()) +
                                 "', " + typeText(sig.element_type()) + " " +
                                 shapeText(*sig.shape()));
      break;
    }
    case fb::BufferKind::Weight:
      if (symbolic)
        return invalid(what, name + ": a weight cannot have a symbolic dim");
      {
        const char *section = buffer.row_table() ? kCpuRowsSection : kCpuWeightsSection;
        size_t sectionSize = buffer.row_table() ? sizes.rows : sizes.weights;
        if (buffer.offset() % kCpuBlobAlignment != 0)
          return invalid(what, name + ": offset " + std::to_string(buffer.offset()) + " in " +
                                   section + " is not 64-byte aligned");
        if (buffer.offset() > sectionSize || buffer.size() > sectionSize - buffer.offset())
          return invalid(what, name + ": bytes [" + std::to_string(buffer.offset()) + ", +" +
                                   std::to_string(buffer.size()) + ") lie outside " + section +
                                   " (" + std::to_string(sectionSize) + " bytes)");
        break;
      }
    case fb::BufferKind::Arena: {
      // With a symbolic slot the runtime lays out the whole arena itself.
      if (symbolicArena)
        break;
      uint64_t region = memory.fixed_bytes();
      const char *regionName = "fixed_bytes";
      if (buffer.offset() % alignment != 0)
        return invalid(what, name + ": arena offset " + std::to_string(buffer.offset()) +
                                 " is not a multiple of the alignment " +
                                 std::to_string(alignment));
      if (buffer.offset() > region || buffer.size() > region - buffer.offset())
        return invalid(what, name + ": arena bytes [" + std::to_string(buffer.offset()) + ", +" +
                                 std::to_string(buffer.size()) + ") lie outside the " + regionName +
                                 " region (" + std::to_string(region) + " bytes)");
      break;
    }
    case fb::BufferKind::Alias: {
      int32_t target = buffer.alias_of();
      if (target < 0 || target >= id)
        return invalid(what,
                       name + ": alias_of " + std::to_string(target) + " is not an earlier buffer");
      const fb::Buffer &of = *buffers[target];
      // Symbolic sizes are compared at run time, once per set of symbols
      // (a Squeeze of a dim not provably 1 is a static view of a symbolic
      // buffer).
      if (!symbolicBuffer[size_t(target)] && of.size() != buffer.size())
        return invalid(what, name + ": " + std::to_string(buffer.size()) +
                                 " bytes differs from buffer " + std::to_string(target) +
                                 ", its alias_of, with " + std::to_string(of.size()));
      root[id] = root[target];
      break;
    }
    }
  }

  for (size_t index = 0; index < steps.size(); ++index) {
    const fb::Step &step = *steps[index];
    if (!spendString(budget, step.callee()) || !spendString(budget, step.node()))
      return overBudget(what);
    std::string name = "step " + std::to_string(index) + " '" + printable(step.callee()) + "'";
    if (step.node())
      name += " (node '" + printable(step.node()) + "')";
    if (step.kind() < fb::StepKind::MIN || step.kind() > fb::StepKind::MAX)
      return invalid(what, name + ": unknown kind " + std::to_string(int(step.kind())));
    if (step.callee()->size() == 0)
      return invalid(what, name + ": empty callee");
    const auto &ins = *step.inputs();
    const auto &outs = *step.outputs();
    if (!spend(budget, uint64_t(ins.size()) + outs.size()))
      return overBudget(what);
    for (size_t i = 0; i < ins.size(); ++i)
      if (ins[i] < -1 || ins[i] >= numBuffers)
        return invalid(what, name + ": input " + std::to_string(i) + " is buffer " +
                                 std::to_string(ins[i]) + ", out of range [-1, " +
                                 std::to_string(numBuffers) + ")");
    for (size_t i = 0; i < outs.size(); ++i) {
      int32_t id = outs[i];
      if (id < 0 || id >= numBuffers)
        return invalid(what, name + ": output " + std::to_string(i) + " is buffer " +
                                 std::to_string(id) + ", out of range [0, " +
                                 std::to_string(numBuffers) + ")");
      const fb::Buffer &written = *buffers[root[id]];
      if (written.kind() == fb::BufferKind::Input || written.kind() == fb::BufferKind::Weight) {
        std::string viewOf;
        if (root[id] != id)
          viewOf = ", a view of buffer " + std::to_string(root[id]) + " '" +
                   printable(written.name()) + "'";
        return invalid(what,
                       name + ": output " + std::to_string(i) + " is buffer " + std::to_string(id) +
                           " '" + printable(buffers[id]->name()) + "'" + viewOf + ", " +
                           (written.kind() == fb::BufferKind::Input ? "an Input" : "a Weight") +
                           ": inputs and weights are read-only");
      }
    }
    if (Status s = checkAttributes(step, name, what, budget); !s.isOk())
      return s;
    if (step.kind() == fb::StepKind::If || step.kind() == fb::StepKind::Loop ||
        step.kind() == fb::StepKind::Scan) {
      if (Status s = checkControlFlowStep(plan, step, name, what); !s.isOk())
        return s;
    } else if (step.kind() == fb::StepKind::Sequence) {
      if (Status s = checkSequenceStep(plan, step, name, what); !s.isOk())
        return s;
    } else {
      if (Status s = checkPackedOperands(step, buffers, name, what); !s.isOk())
        return s;
      // Kernels read and write bytes: a container is no operand of theirs.
      for (const auto *ids : {&ins, &outs})
        for (int32_t id : *ids)
          if (id >= 0 && isContainer(*buffers[id]))
            return invalid(what, name + ": buffer " + std::to_string(id) + " '" +
                                     printable(buffers[id]->name()) +
                                     "' is a container, which only sequence and control-flow "
                                     "steps take");
    }
  }
  return checkSymbolsBindable(plan, what);
}

// Everything but the host checks, in the order openCpuBlob documents.
Status checkContents(const char *meta, size_t metaSize, const char *code, size_t codeSize,
                     WeightSizes sizes, const std::string &what, const std::string *hostArch,
                     const std::vector<std::string> *hostFeatures, const fb::Plan *&plan) {
  if (Status s = checkMeta(meta, metaSize, what, plan); !s.isOk())
    return s;
  if (hostArch)
    if (Status s = checkHost(*plan, what, *hostArch, *hostFeatures); !s.isOk())
      return s;
  if (Status s = checkCode(code, codeSize, what); !s.isOk())
    return s;
  return checkConsistency(*plan, metaSize, sizes, what);
}

// Everything openCpuBlob checks after the envelope.
Result<CpuBlobView> openCpuSections(const BlobView &view, const std::string &what,
                                    const std::string &hostArchitecture,
                                    const std::vector<std::string> &hostCpuFeatures) {
  const BlobSection *meta = view.find(kCpuMetaSection);
  const BlobSection *code = view.find(kCpuCodeSection);
  const BlobSection *weights = view.find(kCpuWeightsSection);
  const BlobSection *rows = view.find(kCpuRowsSection); // may be absent: no row tables
  std::string missing;
  for (auto [section, tag] : {std::pair{meta, kCpuMetaSection}, std::pair{code, kCpuCodeSection},
                              std::pair{weights, kCpuWeightsSection}})
    if (!section)
      missing += (missing.empty() ? "" : ", ") + std::string(tag);
  if (!missing.empty())
    return invalid(what, "blob lacks the section(s) " + missing + " of a cpu_ep blob");
  // The plan is read in place and weights are used in place: both need it.
  for (const BlobSection *section : {meta, code, weights, rows})
    if (section && section->alignment < kCpuBlobAlignment)
      return invalid(what, "section '" + section->tag + "' is aligned to " +
                               std::to_string(section->alignment) + " bytes, a cpu_ep blob needs " +
                               std::to_string(kCpuBlobAlignment));

  CpuBlobView result;
  WeightSizes sizes{weights->size, rows ? rows->size : 0};
  if (Status s = checkContents(meta->data, meta->size, code->data, code->size, sizes, what,
                               &hostArchitecture, &hostCpuFeatures, result.plan);
      !s.isOk())
    return s;
  result.code = code->data;
  result.codeSize = code->size;
  result.weights = weights->data;
  result.weightsSize = weights->size;
  if (rows) {
    result.rows = rows->data;
    result.rowsSize = rows->size;
  }
  return result;
}

} // namespace

std::vector<DimNode> cpuPlanDimNodes(const fb::Plan &plan) {
  std::vector<DimNode> nodes;
  if (plan.dims())
    for (const fb::DimNode *n : *plan.dims())
      nodes.push_back(DimNode{DimOp(n->op()), n->a(), n->b()});
  return nodes;
}

bool cpuPlanHasSymbolicArena(const fb::Plan &plan) {
  for (const fb::Buffer *b : *plan.buffers())
    if (b->kind() == fb::BufferKind::Arena)
      for (int64_t d : *b->shape())
        if (d < 0)
          return true;
  return false;
}

Result<std::vector<char>> writeCpuBlob(const fb::PlanT &plan, const char *code, size_t codeSize,
                                       const char *weights, size_t weightsSize, const char *rows,
                                       size_t rowsSize) {
  std::vector<char> storage(kBlobHeadRoom);
  if (weightsSize)
    storage.insert(storage.end(), weights, weights + weightsSize);
  return writeCpuBlob(plan, code, codeSize, std::move(storage), rows, rowsSize);
}

Result<std::vector<char>> writeCpuBlob(const fb::PlanT &plan, const char *code, size_t codeSize,
                                       std::vector<char> weightsInPlace, const char *rows,
                                       size_t rowsSize) {
  std::string what = "cpu_ep blob of partition '" + printable(plan.partition_name) + "'";
  if (weightsInPlace.size() < kBlobHeadRoom)
    return invalid(what, "the weights have no head room before them");
  size_t weightsSize = weightsInPlace.size() - kBlobHeadRoom;
  // Pack() dereferences these; a missing one is a caller bug, not a crash.
  if (!plan.memory)
    return invalid(what, "the plan has no memory plan");
  for (const auto &buffer : plan.buffers)
    if (!buffer)
      return invalid(what, "the plan has a null buffer");
  for (const auto &step : plan.steps) {
    if (!step)
      return invalid(what, "the plan has a null step");
    for (const auto &attr : step->ints)
      if (!attr)
        return invalid(what, "the plan has a null attribute");
    for (const auto &attr : step->floats)
      if (!attr)
        return invalid(what, "the plan has a null attribute");
    for (const auto &attr : step->strings)
      if (!attr)
        return invalid(what, "the plan has a null attribute");
  }
  for (const auto *sigs : {&plan.inputs, &plan.outputs})
    for (const auto &sig : *sigs)
      if (!sig)
        return invalid(what, "the plan has a null signature");

  flatbuffers::FlatBufferBuilder builder;
  fb::FinishPlanBuffer(builder, fb::Plan::Pack(builder, &plan));
  const char *meta = reinterpret_cast<const char *>(builder.GetBufferPointer());
  size_t metaSize = builder.GetSize();
  const fb::Plan *packed = nullptr;
  if (Status s = checkContents(meta, metaSize, code, codeSize, {weightsSize, rowsSize}, what,
                               nullptr, nullptr, packed);
      !s.isOk())
    return s;

  // WGHT first, where the compiler laid it down; the directory order is not
  // the readers' concern.
  std::vector<BlobSection> sections(3);
  sections[0] = {kCpuWeightsSection, kCpuBlobAlignment, nullptr, 0};
  sections[1] = {kCpuMetaSection, kCpuBlobAlignment, meta, metaSize};
  sections[2] = {kCpuCodeSection, kCpuBlobAlignment, code, codeSize};
  // On pages of its own, so that giving its pages back spares WGHT's.
  if (rowsSize)
    sections.push_back({kCpuRowsSection, 4096, rows, rowsSize, kBlobSectionReadSparsely});
  return writeBlobAround(std::move(weightsInPlace), std::move(sections));
}

Result<CpuBlobView> openCpuBlob(const char *data, size_t size, const std::string &what,
                                const std::string &hostArchitecture,
                                const std::vector<std::string> &hostCpuFeatures,
                                const ParallelChunks &parallel, BlobBacking backing) {
  // Sections are aligned relative to the blob; FlatBuffers also needs the base
  // aligned for its in-place scalar reads.
  if (reinterpret_cast<uintptr_t>(data) % 8 != 0)
    return invalid(what, "blob bytes are not 8-byte aligned in memory; copy them into an "
                         "aligned buffer first");
  Result<BlobView> blob = openBlob(data, size, what, parallel, backing);
  if (!blob.isOk())
    return blob.status();
  return openCpuSections(blob.value(), what, hostArchitecture, hostCpuFeatures);
}

Result<CpuBlobView> openCpuBlobCopy(const char *data, size_t size, const std::string &what,
                                    const std::string &hostArchitecture,
                                    const std::vector<std::string> &hostCpuFeatures,
                                    OwnedBlobBytes &storage, const ParallelChunks &parallel) {
  Result<BlobView> blob = copyAndOpenBlob(data, size, what, storage, parallel);
  if (!blob.isOk())
    return blob.status();
  Result<CpuBlobView> opened =
      openCpuSections(blob.value(), what, hostArchitecture, hostCpuFeatures);
  if (!opened.isOk())
    storage = OwnedBlobBytes();
  return opened;
}

} // namespace ortc::cpu
