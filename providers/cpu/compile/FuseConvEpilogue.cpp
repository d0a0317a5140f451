//===- FuseConvEpilogue.cpp - cpu-fuse-conv-epilogue ----------------------===//
//
// A float32 Conv whose output only a residual Add and/or an activation read
// becomes ortc.fused_conv: the library Conv adds the residual and applies the
// activation to each block of its output while the block is in cache, instead
// of a generated kernel reading and writing the whole tensor again.
//
//   Conv -> Relu | Clip(const, const) | LeakyRelu          (MobileNet, VGG)
//   Conv -> Add(other) [-> activation]                      (ResNet, MobileNetV2)
//
// The residual must have the Conv output's dims, as the symbolic analysis
// proves them, so that the Add broadcasts nothing.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/Passes.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/SymbolicShapes.h"
#include "compiler/Transforms/OpQueries.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

#include <cstring>

namespace ortc::cpu {
#define GEN_PASS_DEF_CPUFUSECONVEPILOGUE
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

using namespace mlir;
namespace onnx = ortc::onnx_dialect;
namespace fused = ortc::fused;
using ortc::isF32Tensor;

namespace {

/// A one-element f32 onnx.Constant's value; `fallback` for an omitted input.
std::optional<float> scalarOrOmitted(Value v, float fallback) {
  Operation *def = v.getDefiningOp();
  if (isa_and_nonnull<onnx::NoValueOp>(def))
    return fallback;
  if (!isa_and_nonnull<onnx::ConstantOp>(def) || !isF32Tensor(v.getType()))
    return std::nullopt;
  std::optional<std::vector<char>> bytes = ortc::constantBytes(def);
  if (!bytes || bytes->size() != sizeof(float))
    return std::nullopt;
  float value;
  std::memcpy(&value, bytes->data(), sizeof value);
  return value;
}

struct Activation {
  std::string name = "none";
  SmallVector<float, 2> params;
};

/// The activation `op` applies to its input 0, when the epilogue has it.
std::optional<Activation> activationOf(Operation *op) {
  if (op->getNumResults() != 1 || op->getResult(0).getType() != op->getOperand(0).getType())
    return std::nullopt;
  if (isa<onnx::ReluOp>(op))
    return Activation{"relu", {}};
  if (auto leaky = dyn_cast<onnx::LeakyReluOp>(op))
    return Activation{"leaky_relu", {leaky.getAlpha().convertToFloat()}};
  if (auto clip = dyn_cast<onnx::ClipOp>(op)) {
    std::optional<float> lo = scalarOrOmitted(clip.getMin(), -INFINITY);
    std::optional<float> hi = scalarOrOmitted(clip.getMax(), INFINITY);
    // NaN bounds are ONNX's to define, not the epilogue's.
    if (!lo || !hi || std::isnan(*lo) || std::isnan(*hi))
      return std::nullopt;
    return Activation{"clip", {*lo, *hi}};
  }
  return std::nullopt;
}

/// What one Conv's epilogue absorbs.
struct Match {
  onnx::ConvOp conv;
  Operation *add = nullptr;        // the residual Add
  unsigned residualOperand = 0;    // its other operand (read when rewriting:
                                   // an earlier rewrite may have replaced it)
  Operation *activationOp = nullptr;
  Activation activation;
};

std::optional<Match> matchConv(onnx::ConvOp conv, const ortc::SymbolicShapes &shapes) {
  Value y = conv.getY();
  if (!isF32Tensor(y.getType()) || !isF32Tensor(conv.getX().getType()) ||
      !isF32Tensor(conv.getW().getType()))
    return std::nullopt;
  Match m{conv};
  Value last = y;
  Operation *user = ortc::soleUser(last);
  if (auto add = dyn_cast_or_null<onnx::AddOp>(user)) {
    unsigned otherIndex = add.getA() == last ? 1 : 0;
    Value other = add->getOperand(otherIndex);
    const SmallVector<int32_t> *outDims = shapes.dims(y), *otherDims = shapes.dims(other);
    bool sameDims = other != last && other.getType() == y.getType() &&
                    add.getC().getType() == y.getType() && outDims && otherDims &&
                    *outDims == *otherDims && shapes.known(y);
    if (sameDims) {
      m.add = add;
      m.residualOperand = otherIndex;
      last = add.getC();
      user = ortc::soleUser(last);
    }
  }
  if (user)
    if (std::optional<Activation> activation = activationOf(user)) {
      m.activationOp = user;
      m.activation = *activation;
    }
  if (!m.add && !m.activationOp)
    return std::nullopt;
  return m;
}

/// Replaces the matched chain with one ortc.fused_conv.
void rewrite(Match m) {
  Operation *last = m.activationOp ? m.activationOp : m.add;
  SmallVector<Location, 3> locations = {m.conv.getLoc()}; // messages name the Conv
  SmallVector<Operation *, 3> chain = {m.conv};
  for (Operation *op : {m.add, m.activationOp})
    if (op) {
      locations.push_back(op->getLoc());
      chain.push_back(op);
    }
  OpBuilder b(last);
  Value residual = m.add ? m.add->getOperand(m.residualOperand) : Value();
  if (!residual)
    residual = onnx::NoValueOp::create(b, m.conv.getLoc(), b.getNoneType()).getResult();
  auto convAttr = [&](StringRef name) { return m.conv->getAttr(name); };
  OperationState state(b.getFusedLoc(locations), fused::FusedConvOp::getOperationName());
  state.addOperands({m.conv.getX(), m.conv.getW(), m.conv.getB(), residual});
  state.addTypes(last->getResult(0).getType());
  for (StringRef name : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"})
    if (Attribute attr = convAttr(name))
      state.addAttribute(name, attr);
  state.addAttribute("activation", b.getStringAttr(m.activation.name));
  state.addAttribute("activation_params", b.getDenseF32ArrayAttr(m.activation.params));
  Operation *fusedConv = b.create(state);
  last->getResult(0).replaceAllUsesWith(fusedConv->getResult(0));
  // From the last op back: each has no readers left.
  for (Operation *op : llvm::reverse(chain))
    op->erase();
}

struct CpuFuseConvEpiloguePass
    : ortc::cpu::impl::CpuFuseConvEpilogueBase<CpuFuseConvEpiloguePass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    std::vector<Match> matches;
    {
      ortc::SymbolicShapes shapes(fn);
      // Two Convs may meet in one Add (ResNet's projection shortcut): the
      // first takes it, the other's output is its residual.
      llvm::SmallPtrSet<Operation *, 32> taken;
      fn.walk([&](onnx::ConvOp conv) {
        std::optional<Match> m = matchConv(conv, shapes);
        if (!m || (m->add && taken.count(m->add)))
          return;
        for (Operation *op : {m->add, m->activationOp})
          if (op)
            taken.insert(op);
        matches.push_back(*m);
      });
    }
    for (Match &m : matches)
      rewrite(m);
    numFused += matches.size();
  }
};

} // namespace
