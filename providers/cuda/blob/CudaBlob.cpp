//===- CudaBlob.cpp - the CUDA EP's EPContext blob ------------------------===//
//
// The reader trusts nothing: the envelope, FlatBuffers' verifier over META,
// then the plan's own promises (ids in range, sizes consistent with shapes,
// ranges inside their sections).
//
//===----------------------------------------------------------------------===//

#include "providers/cuda/blob/CudaBlob.h"

#include "runtime/ep/DimExpr.h"
#include "runtime/ep/Tensor.h"
#include "runtime/support/BlobContainer.h"

#include <cstring>

namespace ortc::cuda {
namespace {

constexpr const char *kMeta = "META", *kCubins = "CUBN", *kPtx = "PTX ", *kSource = "SRC ",
                      *kWeights = "WGHT";

Status invalid(const std::string &what, const std::string &message) {
  return Status::error(StatusCode::InvalidArgument, what + ": " + message);
}

bool inRange(uint64_t offset, uint64_t size, uint64_t limit) {
  return offset <= limit && size <= limit - offset;
}

/// Element type and dims of one tensor; `bytes` its size when static.
Status checkShape(const std::string &what, const std::string &name, int32_t type,
                  const flatbuffers::Vector<int64_t> *shape, size_t numDims, uint64_t *bytes) {
  if (!shape)
    return invalid(what, name + " has no shape");
  if (!isKnownElementType(ElementType(type)) || elementSize(ElementType(type)) == 0)
    return invalid(what, name + ": element type " + std::to_string(type) + " is not supported");
  uint64_t count = 1;
  bool symbolic = false;
  for (size_t i = 0; i < shape->size(); ++i) {
    int64_t d = shape->Get(i);
    if (d < 0) {
      if (uint64_t(-(d + 1)) >= numDims)
        return invalid(what, name + ": dim " + std::to_string(i) + " names no dim node");
      symbolic = true;
    } else if (__builtin_mul_overflow(count, uint64_t(d), &count)) {
      return invalid(what, name + ": shape overflows 64 bits");
    }
  }
  uint64_t total = 0;
  if (!symbolic && __builtin_mul_overflow(count, uint64_t(elementSize(ElementType(type))), &total))
    return invalid(what, name + ": shape overflows 64 bits");
  if (bytes)
    *bytes = symbolic ? 0 : total;
  return Status::ok();
}

bool checkNoSymbols(const flatbuffers::Vector<int64_t> *shape) {
  for (int64_t d : *shape)
    if (d < 0)
      return false;
  return true;
}

Status verifyPlan(const fb::Plan &plan, const CudaBlobView &view, const std::string &what) {
  if (plan.format_version() != kCudaPlanFormatVersion)
    return Status::error(StatusCode::Unsupported,
                         what + ": plan format " + std::to_string(plan.format_version()) +
                             " (this build reads " + std::to_string(kCudaPlanFormatVersion) + ")");
  if (plan.kernel_abi() != kCudaKernelAbi)
    return Status::error(StatusCode::Unsupported,
                         what + ": kernel abi " + std::to_string(plan.kernel_abi()) +
                             " (this build runs " + std::to_string(kCudaKernelAbi) + ")");
  if (plan.ep_name()->str() != kCudaEpName)
    return invalid(what, "the plan is for EP '" + plan.ep_name()->str().substr(0, 40) + "'");

  size_t numDims = plan.dims() ? plan.dims()->size() : 0;
  size_t numSymbols = plan.symbols() ? plan.symbols()->size() : 0;
  if (numDims) {
    std::vector<DimNode> nodes;
    for (const fb::DimNode *n : *plan.dims())
      nodes.push_back(DimNode{DimOp(n->op()), n->a(), n->b()});
    std::string why;
    if (!verifyDimNodes(nodes.data(), nodes.size(), numSymbols, why))
      return invalid(what, "dim nodes: " + why);
  }
  for (const fb::Cubin *c : *plan.cubins())
    if (!inRange(c->offset(), c->size(), view.cubinsSize) || c->size() == 0)
      return invalid(what, "the cubin for sm_" + std::to_string(c->arch()) +
                               " lies outside the CUBN section");
  if (plan.cubins()->size() == 0 && view.ptxSize == 0 && view.sourceSize == 0)
    return invalid(what, "the blob holds no code (no cubin, PTX or source)");
  for (const fb::Kernel *k : *plan.kernels())
    if (k->name()->size() == 0 || k->name()->size() > 200)
      return invalid(what, "a kernel has no usable name");

  const fb::MemoryPlan &memory = *plan.memory();
  uint32_t alignment = memory.alignment();
  if (alignment == 0 || (alignment & (alignment - 1)) || alignment > 4096)
    return invalid(what, "the arena alignment " + std::to_string(alignment) +
                             " is not a power of two up to 4096");
  size_t numBuffers = plan.buffers()->size();
  std::vector<bool> inputSeen(plan.inputs()->size()), outputSeen(plan.outputs()->size());
  for (size_t id = 0; id < numBuffers; ++id) {
    const fb::Buffer &b = *plan.buffers()->Get(id);
    std::string name = "buffer " + std::to_string(id);
    uint64_t bytes = 0;
    if (Status s = checkShape(what, name, b.element_type(), b.shape(), numDims, &bytes);
        !s.isOk())
      return s;
    switch (b.kind()) {
    case fb::BufferKind::Input:
    case fb::BufferKind::Output: {
      bool input = b.kind() == fb::BufferKind::Input;
      std::vector<bool> &seen = input ? inputSeen : outputSeen;
      if (b.index() >= seen.size() || seen[b.index()])
        return invalid(what, name + " claims " + (input ? "input " : "output ") +
                                 std::to_string(b.index()) + ", which is out of range or taken");
      seen[b.index()] = true;
      break;
    }
    case fb::BufferKind::Weight:
      if (bytes == 0 && b.size() != 0)
        return invalid(what, name + ": a weight with a symbolic shape");
      if (b.size() != bytes || !inRange(b.offset(), b.size(), view.weightsSize))
        return invalid(what, name + ": weight bytes lie outside WGHT or disagree with its shape");
      break;
    case fb::BufferKind::Arena:
      // A static arena's offsets were planned at compile time.
      if (memory.symbolic())
        break;
      if (!checkNoSymbols(b.shape()))
        return invalid(what, name + ": a symbolic buffer in a static arena");
      if (b.offset() % alignment || !inRange(b.offset(), bytes, memory.fixed_bytes()))
        return invalid(what, name + " lies outside the arena of " +
                                 std::to_string(memory.fixed_bytes()) + " bytes");
      break;
    case fb::BufferKind::Alias:
      if (b.alias_of() < 0 || size_t(b.alias_of()) >= id)
        return invalid(what, name + " aliases buffer " + std::to_string(b.alias_of()) +
                                 ", which does not precede it");
      break;
    default:
      return invalid(what, name + " has an unknown kind");
    }
  }
  for (size_t i = 0; i < inputSeen.size(); ++i)
    if (!inputSeen[i])
      return invalid(what, "no buffer holds input " + std::to_string(i));
  for (size_t i = 0; i < outputSeen.size(); ++i)
    if (!outputSeen[i])
      return invalid(what, "no buffer holds output " + std::to_string(i));
  for (const auto *signatures : {plan.inputs(), plan.outputs()})
    for (const fb::TensorSignature *sig : *signatures)
      if (Status s = checkShape(what, "tensor '" + sig->name()->str().substr(0, 80) + "'",
                                sig->element_type(), sig->shape(), numDims, nullptr);
          !s.isOk())
        return s;

  for (size_t n = 0; n < plan.steps()->size(); ++n) {
    const fb::Step &step = *plan.steps()->Get(n);
    std::string name = "step " + std::to_string(n);
    for (const auto *ids : {step.inputs(), step.outputs()})
      for (int32_t id : *ids)
        if (id < 0 || size_t(id) >= numBuffers)
          return invalid(what, name + " reads or writes buffer " + std::to_string(id) +
                                   " of " + std::to_string(numBuffers));
    if (step.kind() == fb::StepKind::Launch) {
      if (step.kernel() >= plan.kernels()->size())
        return invalid(what, name + " launches kernel " + std::to_string(step.kernel()) +
                                 " of " + std::to_string(plan.kernels()->size()));
      if (step.grid_dims())
        for (int64_t d : *step.grid_dims())
          if (d < 0 && uint64_t(-(d + 1)) >= numDims)
            return invalid(what, name + ": a grid dim names no dim node");
      if (step.outputs()->size() == 0 || step.threads_per_block() == 0 ||
          step.threads_per_block() > 1024 || step.max_blocks() == 0)
        return invalid(what, name + " has no output or an impossible launch shape");
    } else if (step.kind() == fb::StepKind::Copy) {
      if (step.inputs()->size() != 1 || step.outputs()->size() != 1)
        return invalid(what, name + " copies other than one buffer to one");
    } else if (step.kind() == fb::StepKind::Gemm) {
      bool epilogue = step.epilogue() != fb::GemmEpilogue::None;
      if (uint8_t(step.epilogue()) > uint8_t(fb::GemmEpilogue::BiasGeluTanh))
        return invalid(what, name + " has an unknown epilogue");
      if (step.inputs()->size() != (epilogue ? 3u : 2u) || step.outputs()->size() != 1)
        return invalid(what, name + ": a Gemm reads two buffers (three with an epilogue's bias) "
                                    "and writes one");
      const fb::Buffer *a = plan.buffers()->Get(uint32_t(step.inputs()->Get(0)));
      const fb::Buffer *b = plan.buffers()->Get(uint32_t(step.inputs()->Get(1)));
      const fb::Buffer *y = plan.buffers()->Get(uint32_t(step.outputs()->Get(0)));
      int32_t type = y->element_type();
      if (a->element_type() != type || b->element_type() != type ||
          (type != 1 && type != 10 && type != 16))
        return invalid(what, name + ": a Gemm over element types other than one of f32, f16, bf16");
      if (a->shape()->size() == 0 || b->shape()->size() == 0) // 1-D x 1-D gives a scalar
        return invalid(what, name + ": a Gemm of a scalar");
      if (epilogue) {
        const fb::Buffer *bias = plan.buffers()->Get(uint32_t(step.inputs()->Get(2)));
        if (bias->element_type() != type || bias->shape()->size() != 1 ||
            b->shape()->size() != 2 || y->shape()->size() == 0 ||
            bias->shape()->Get(0) != y->shape()->Get(y->shape()->size() - 1))
          return invalid(what, name + ": an epilogue's bias must be a vector over the output's "
                                      "last dim, and B a matrix");
      }
      if (uint8_t(step.compute()) > uint8_t(fb::GemmCompute::F32Bf16))
        return invalid(what, name + " has an unknown compute type");
    } else if (step.kind() == fb::StepKind::Conv || step.kind() == fb::StepKind::Pool) {
      bool conv = step.kind() == fb::StepKind::Conv;
      if (step.inputs()->size() != (conv ? 2u : 1u) || step.outputs()->size() != 1)
        return invalid(what, name + ": a " + (conv ? "Conv" : "Pool") + " with other operands");
      if (!step.window() || step.window()->size() != 10 || step.auto_pad() > 3 ||
          step.group() < 1 || ((!conv || step.has_kernel()) && step.kernel() >= plan.kernels()->size()))
        return invalid(what, name + " has an impossible window or kernel");
      for (size_t i = 0; i < 6; ++i)
        if (step.window()->Get(uint32_t(i)) < 1)
          return invalid(what, name + " has a window size, stride or dilation below 1");
      for (int32_t id : {step.inputs()->Get(0), step.outputs()->Get(0)})
        if (plan.buffers()->Get(uint32_t(id))->shape()->size() != 4)
          return invalid(what, name + " reads or writes a tensor that is not 4-D");
      if (conv && plan.buffers()->Get(uint32_t(step.inputs()->Get(1)))->shape()->size() != 4)
        return invalid(what, name + ": a Conv weight that is not 4-D");
      bool wantsScratch = conv && step.has_kernel();
      int32_t scratch = step.scratch();
      if (wantsScratch != (scratch >= 0) ||
          (scratch >= 0 && (size_t(scratch) >= numBuffers ||
                            plan.buffers()->Get(uint32_t(scratch))->kind() != fb::BufferKind::Arena ||
                            plan.buffers()->Get(uint32_t(scratch))->shape()->size() != 5)))
        return invalid(what, name + ": a Conv's column matrix must be one 5-D arena buffer");
    } else {
      return invalid(what, name + " has an unknown kind");
    }
  }
  if (plan.value_symbols())
    for (const fb::ValueSymbol *v : *plan.value_symbols()) {
      if (v->symbol() >= numSymbols || v->input() >= plan.inputs()->size())
        return invalid(what, "a value symbol names no symbol or input");
      const fb::TensorSignature *sig = plan.inputs()->Get(v->input());
      int32_t type = sig->element_type();
      uint64_t count = 1;
      for (int64_t d : *sig->shape())
        count *= d < 0 ? 0 : uint64_t(d);
      if ((type != 6 && type != 7) || sig->shape()->size() > 1 || v->element() >= count)
        return invalid(what, "a value symbol reads no element of a static int32/int64 input");
    }
  if (plan.checks())
    for (const fb::DimCheck *c : *plan.checks())
      for (int64_t d : {c->a(), c->b()})
        if (d < 0 && uint64_t(-(d + 1)) >= numDims)
          return invalid(what, "a dim check names no dim node");
  return Status::ok();
}

} // namespace

Result<std::vector<char>> writeCudaBlob(const fb::PlanT &plan, const CudaBlobParts &parts) {
  flatbuffers::FlatBufferBuilder builder;
  builder.Finish(fb::Plan::Pack(builder, &plan), "OCUD");
  std::vector<BlobSection> sections = {
      {kMeta, kCudaBlobAlignment, reinterpret_cast<const char *>(builder.GetBufferPointer()),
       builder.GetSize()},
      {kCubins, kCudaBlobAlignment, parts.cubins.data(), parts.cubins.size()},
      {kPtx, kCudaBlobAlignment, parts.ptx.data(), parts.ptx.size()},
      {kSource, kCudaBlobAlignment, parts.source.data(), parts.source.size()},
      {kWeights, kCudaBlobAlignment, parts.weights.data(), parts.weights.size()},
  };
  Result<std::vector<char>> blob = writeBlob(sections);
  if (!blob.isOk())
    return blob.status();
  // What the runtime would refuse is a compiler bug: say so now.
  Result<CudaBlobView> check =
      openCudaBlob(blob.value().data(), blob.value().size(), "the blob being written");
  if (!check.isOk())
    return Status::error(StatusCode::Internal, check.status().message());
  return blob;
}

Result<CudaBlobView> openCudaBlob(const char *data, size_t size, const std::string &what) {
  Result<BlobView> blob = openBlob(data, size, what);
  if (!blob.isOk())
    return blob.status();
  CudaBlobView view;
  const BlobSection *meta = blob.value().find(kMeta);
  if (!meta)
    return invalid(what, "no META section");
  auto section = [&](const char *tag, const char *&ptr, size_t &bytes) {
    if (const BlobSection *s = blob.value().find(tag)) {
      ptr = s->data;
      bytes = s->size;
    }
  };
  section(kCubins, view.cubins, view.cubinsSize);
  section(kPtx, view.ptx, view.ptxSize);
  section(kSource, view.source, view.sourceSize);
  section(kWeights, view.weights, view.weightsSize);
  if (view.ptx && std::memchr(view.ptx, 0, view.ptxSize))
    return invalid(what, "the PTX section holds a NUL byte");
  flatbuffers::Verifier verifier(reinterpret_cast<const uint8_t *>(meta->data), meta->size);
  if (!fb::PlanBufferHasIdentifier(meta->data) || !fb::VerifyPlanBuffer(verifier))
    return invalid(what, "META is not a CUDA EP plan (FlatBuffer verification failed)");
  view.plan = fb::GetPlan(meta->data);
  if (Status s = verifyPlan(*view.plan, view, what); !s.isOk())
    return s;
  return view;
}

} // namespace ortc::cuda
