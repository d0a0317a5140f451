//===- ConvChannelsLast.cpp - cpu-conv-channels-last ----------------------===//
//
// Chains of 2-D convolutions run on channels-last tensors: in NHWC a group-1
// conv is one GEMM whose columns are the output channels (W packed once as
// W^T, no per-run packing of X and no transposed product) and a depthwise
// conv uses every vector lane at any width and stride (ConvChannelsLast.cpp
// in the kernels). Each eligible conv becomes its channels_last
// ortc.fused_conv between two onnx.Transpose ops,
//
//   x -> Transpose[0,2,3,1] -> fused_conv{channels_last} -> Transpose[0,3,1,2]
//
// and a Transpose of a Transpose that undoes it is its input, so between
// two convs of a chain (and into a residual read by a conv of the chain) no
// copy is left; the chain's ends keep one Transpose each. A chain that ends
// in a global mean (ReduceMean over H and W, GlobalAveragePool: a CNN's
// head) loses that one too: the mean reads the channels-last tensor over
// its axes 1 and 2, and [N,1,1,C] is [N,C,1,1]'s bytes (a Reshape).
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/Passes.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/OpQueries.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SetVector.h"

namespace ortc::cpu {
#define GEN_PASS_DEF_CPUCONVCHANNELSLAST
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

using namespace mlir;
namespace onnx = ortc::onnx_dialect;
namespace fused = ortc::fused;
using ortc::isF32Tensor;

namespace {

constexpr int64_t kToChannelsLast[] = {0, 2, 3, 1};
constexpr int64_t kToChannelsFirst[] = {0, 3, 1, 2};

/// A conv's operands, whether it is onnx.Conv or ortc.fused_conv.
struct ConvView {
  Operation *op;
  Value x, w, bias, residual, y;
};

std::optional<ConvView> viewConv(Operation *op) {
  if (auto conv = dyn_cast<onnx::ConvOp>(op))
    return ConvView{op, conv.getX(), conv.getW(), conv.getB(), Value(), conv.getY()};
  if (auto conv = dyn_cast<fused::FusedConvOp>(op))
    if (!conv.getChannelsLast())
      return ConvView{op,         conv.getX(), conv.getW(), conv.getBias(), conv.getResidual(),
                      conv.getY()};
  return std::nullopt;
}

/// Whether the channels-last kernel takes `conv`: float32, 2-D, a constant
/// W, and group 1 or one output channel per input channel (depthwise).
bool runsChannelsLast(const ConvView &conv) {
  auto x = dyn_cast<RankedTensorType>(conv.x.getType());
  auto w = dyn_cast<RankedTensorType>(conv.w.getType());
  auto y = dyn_cast<RankedTensorType>(conv.y.getType());
  if (!x || !w || !y || !isF32Tensor(x) || !isF32Tensor(w) || !isF32Tensor(y) || x.getRank() != 4 ||
      w.getRank() != 4 || y.getRank() != 4 || !w.hasStaticShape() ||
      !isa_and_nonnull<onnx::ConstantOp>(conv.w.getDefiningOp()) || x.isDynamicDim(1))
    return false;
  for (Value optional : {conv.bias, conv.residual})
    if (!ortc::isAbsentOperand(optional) && !isF32Tensor(optional.getType()))
      return false;
  int64_t group = ortc::intAttrOr(conv.op, "group", 1);
  int64_t C = x.getDimSize(1), M = w.getDimSize(0);
  bool depthwise = group > 1 && group == C && M == C && w.getDimSize(1) == 1;
  return (group == 1 && w.getDimSize(1) == C) || depthwise;
}

/// Whether the channels-last MaxPool kernel takes `pool`: float32 x of rank
/// 4 with static channels, an explicit 2-D kernel_shape, and no Indices
/// output anything reads.
bool runsChannelsLast(onnx::MaxPoolOp pool) {
  auto x = dyn_cast<RankedTensorType>(pool.getX().getType());
  auto y = dyn_cast<RankedTensorType>(pool.getY().getType());
  auto kernel = pool->getAttrOfType<DenseI64ArrayAttr>("kernel_shape");
  return x && y && isF32Tensor(x) && isF32Tensor(y) && x.getRank() == 4 && y.getRank() == 4 &&
         !x.isDynamicDim(1) && kernel && kernel.size() == 2 && pool.getIndices().use_empty();
}

/// `type` (rank 4) with its dims in `perm`'s order.
RankedTensorType permuted(RankedTensorType type, ArrayRef<int64_t> perm) {
  SmallVector<int64_t, 4> shape;
  for (int64_t d : perm)
    shape.push_back(type.getDimSize(d));
  return RankedTensorType::get(shape, type.getElementType());
}

Value transpose(OpBuilder &b, Location loc, Value v, ArrayRef<int64_t> perm) {
  auto type = permuted(cast<RankedTensorType>(v.getType()), perm);
  return onnx::TransposeOp::create(b, loc, type, v, b.getDenseI64ArrayAttr(perm)).getResult();
}

/// The channels-last Transposes made so far, by the value they transpose:
/// two convs that read one value (ResNet's first block and its projection
/// shortcut) share one.
using TransposeCache = llvm::DenseMap<Value, Value>;

/// `v` channels-last: a Transpose made before `at`, or one made earlier in
/// the same block.
Value channelsLastOf(OpBuilder &b, Location loc, Value v, Operation *at, TransposeCache &cache) {
  if (Value cached = cache.lookup(v))
    if (cached.getDefiningOp()->getBlock() == at->getBlock())
      return cached;
  Value t = transpose(b, loc, v, kToChannelsLast);
  cache[v] = t;
  return t;
}

/// Replaces conv `op` with its channels_last fused_conv between Transposes.
void rewrite(Operation *op, TransposeCache &cache) {
  ConvView conv = *viewConv(op);
  OpBuilder b(op);
  Location loc = op->getLoc();
  // The Transposes under names of their own, so that profiles tell them
  // from the conv.
  std::string name = ortc::nodeNameOf(op, "Conv");
  Location into = NameLoc::get(b.getStringAttr(name + "/to_channels_last"), loc);
  Location outOf = NameLoc::get(b.getStringAttr(name + "/to_channels_first"), loc);
  Value x = channelsLastOf(b, into, conv.x, op, cache);
  // onnx.Conv has no residual operand; a fused_conv's absent one is kept.
  Value residual = conv.residual;
  if (!residual)
    residual = onnx::NoValueOp::create(b, loc, b.getNoneType()).getResult();
  else if (!ortc::isAbsentOperand(residual))
    residual = channelsLastOf(b, into, residual, op, cache);
  auto yType = cast<RankedTensorType>(conv.y.getType());
  OperationState state(loc, fused::FusedConvOp::getOperationName());
  state.addOperands({x, conv.w, conv.bias, residual});
  state.addTypes(permuted(yType, kToChannelsLast));
  for (StringRef name : {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides",
                         "activation", "activation_params"})
    if (Attribute attr = op->getAttr(name))
      state.addAttribute(name, attr);
  if (!op->getAttr("activation")) {
    state.addAttribute("activation", b.getStringAttr("none"));
    state.addAttribute("activation_params", b.getDenseF32ArrayAttr({}));
  }
  state.addAttribute("channels_last", b.getUnitAttr());
  Operation *channelsLast = b.create(state);
  Value y = transpose(b, outOf, channelsLast->getResult(0), kToChannelsFirst);
  conv.y.replaceAllUsesWith(y);
  op->erase();
}

/// Replaces MaxPool `pool` with its channels-last ortc.max_pool between
/// Transposes.
void rewritePool(onnx::MaxPoolOp pool, TransposeCache &cache) {
  OpBuilder b(pool);
  Location loc = pool.getLoc();
  std::string name = ortc::nodeNameOf(pool, "MaxPool");
  Location into = NameLoc::get(b.getStringAttr(name + "/to_channels_last"), loc);
  Location outOf = NameLoc::get(b.getStringAttr(name + "/to_channels_first"), loc);
  Value x = channelsLastOf(b, into, pool.getX(), pool, cache);
  auto yType = cast<RankedTensorType>(pool.getY().getType());
  OperationState state(loc, fused::MaxPoolOp::getOperationName());
  state.addOperands(x);
  state.addTypes(permuted(yType, kToChannelsLast));
  for (StringRef attr : {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "strides"})
    if (Attribute value = pool->getAttr(attr))
      state.addAttribute(attr, value);
  Operation *channelsLast = b.create(state);
  Value y = transpose(b, outOf, channelsLast->getResult(0), kToChannelsFirst);
  pool.getY().replaceAllUsesWith(y);
  pool.erase();
}

/// Whether `t` undoes the Transpose that produced its input.
bool undoesItsInput(onnx::TransposeOp t) {
  auto inner = t.getData().getDefiningOp<onnx::TransposeOp>();
  if (!inner || !t.getPerm() || !inner.getPerm() || t.getPerm()->size() != inner.getPerm()->size())
    return false;
  ArrayRef<int64_t> outer = *t.getPerm(), first = *inner.getPerm();
  for (size_t i = 0; i < outer.size(); ++i)
    if (outer[i] < 0 || outer[i] >= int64_t(first.size()) || first[outer[i]] != int64_t(i))
      return false;
  return inner.getData().getType() == t.getType();
}

/// Whether `t` (rank 4) moves channels last to first.
bool toChannelsFirst(onnx::TransposeOp t) {
  return t.getPerm() && llvm::equal(*t.getPerm(), kToChannelsFirst);
}

/// An i64 constant of `values` at `b`'s insertion point.
Value i64Constant(OpBuilder &b, Location loc, ArrayRef<int64_t> values) {
  auto type = RankedTensorType::get({int64_t(values.size())}, b.getI64Type());
  OperationState state(loc, onnx::ConstantOp::getOperationName());
  state.addAttribute("value", DenseIntElementsAttr::get(type, values));
  state.addTypes(type);
  return b.create(state)->getResult(0);
}

/// The mean over H and W that `op` takes of a rank-4 NCHW tensor (a
/// ReduceMean over axes 2 and 3, or a GlobalAveragePool) with its keepdims,
/// else nothing.
std::optional<bool> globalMeanKeepsDims(Operation *op) {
  if (isa<onnx::GlobalAveragePoolOp>(op))
    return true;
  auto mean = dyn_cast<onnx::ReduceMeanOp>(op);
  if (!mean)
    return std::nullopt;
  std::optional<SmallVector<int64_t>> axes = ortc::getConstantIntValues(mean.getAxes());
  if (!axes || axes->size() != 2)
    return std::nullopt;
  SmallVector<int64_t, 2> normalized;
  for (int64_t axis : *axes)
    normalized.push_back(axis < 0 ? axis + 4 : axis);
  llvm::sort(normalized);
  if (normalized[0] != 2 || normalized[1] != 3)
    return std::nullopt;
  return mean.getKeepdims() != 0;
}

/// Replaces the global mean that alone reads to-channels-first Transpose
/// `t` with one over the channels-last tensor t reads: ReduceMean over axes
/// 1 and 2, then (keepdims) a Reshape of [N,1,1,C] to [N,C,1,1].
bool meanOverChannelsLast(onnx::TransposeOp t) {
  Operation *mean = ortc::soleUser(t.getTransposed());
  std::optional<bool> keepDims = mean ? globalMeanKeepsDims(mean) : std::nullopt;
  if (!keepDims || mean->getOperand(0) != t.getTransposed() || !toChannelsFirst(t))
    return false;
  auto x = dyn_cast<RankedTensorType>(t.getData().getType());
  auto y = dyn_cast<RankedTensorType>(mean->getResult(0).getType());
  if (!x || x.getRank() != 4 || x.isDynamicDim(3) || !y)
    return false;
  OpBuilder b(mean);
  Location loc = mean->getLoc();
  int64_t N = x.getDimSize(0), C = x.getDimSize(3);
  SmallVector<int64_t, 4> reduced = {N, C};
  if (*keepDims)
    reduced = {N, 1, 1, C};
  auto reducedType = RankedTensorType::get(reduced, x.getElementType());
  Value axes = i64Constant(b, loc, {1, 2});
  Value m =
      onnx::ReduceMeanOp::create(b, loc, reducedType, t.getData(), axes,
                                 b.getI64IntegerAttr(*keepDims ? 1 : 0), b.getI64IntegerAttr(0))
          .getResult();
  if (*keepDims) {
    // 0: N as it is (a dynamic batch too).
    Value shape = i64Constant(b, loc, {0, C, 1, 1});
    m = onnx::ReshapeOp::create(b, loc, y, m, shape, b.getI64IntegerAttr(0)).getResult();
  }
  mean->getResult(0).replaceAllUsesWith(m);
  mean->erase();
  return true;
}

struct CpuConvChannelsLastPass : ortc::cpu::impl::CpuConvChannelsLastBase<CpuConvChannelsLastPass> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    llvm::SetVector<Operation *> eligible, pools;
    fn.walk([&](Operation *op) {
      if (std::optional<ConvView> conv = viewConv(op); conv && runsChannelsLast(*conv))
        eligible.insert(op);
    });
    // A MaxPool that reads or feeds an eligible conv keeps the chain in its
    // layout (ResNet's stem: conv, MaxPool, then the blocks).
    fn.walk([&](onnx::MaxPoolOp pool) {
      if (!runsChannelsLast(pool))
        return;
      Operation *producer = pool.getX().getDefiningOp();
      bool nextToConv = producer && eligible.contains(producer);
      for (Operation *user : pool.getY().getUsers())
        nextToConv |= eligible.contains(user);
      if (nextToConv)
        pools.insert(pool);
    });
    // A conv joins when it reads or feeds another eligible conv (or such a
    // MaxPool) directly: a conv alone would pay two transposes for what its
    // layout saves.
    SmallVector<Operation *> chained;
    for (Operation *op : eligible) {
      ConvView conv = *viewConv(op);
      bool linked = false;
      for (Value in : {conv.x, conv.residual})
        if (Operation *producer = in ? in.getDefiningOp() : nullptr)
          linked |= eligible.contains(producer) || pools.contains(producer);
      for (Operation *user : conv.y.getUsers())
        linked |= eligible.contains(user) || pools.contains(user);
      if (linked)
        chained.push_back(op);
    }
    // Each view is taken as its op is rewritten: an earlier rewrite
    // replaces the value a later one reads.
    TransposeCache cache;
    for (Operation *op : chained)
      rewrite(op, cache);
    for (Operation *pool : pools)
      rewritePool(cast<onnx::MaxPoolOp>(pool), cache);
    numConverted += chained.size();
    numPools += pools.size();

    // Transpose pairs that cancel: readers take the original value; the
    // Transposes nothing reads any more go.
    SmallVector<onnx::TransposeOp> transposes;
    fn.walk([&](onnx::TransposeOp t) { transposes.push_back(t); });
    for (onnx::TransposeOp t : transposes)
      if (undoesItsInput(t)) {
        t.getTransposed().replaceAllUsesWith(t.getData().getDefiningOp()->getOperand(0));
        ++numCancelled;
      }
    // A chain's end read only by a global mean: the mean reads it channels
    // last.
    for (onnx::TransposeOp t : transposes)
      if (!t->use_empty() && meanOverChannelsLast(t))
        ++numMeans;
    for (onnx::TransposeOp t : llvm::reverse(transposes))
      if (t->use_empty())
        t->erase();
  }
};

} // namespace
