//===- MathShapes.cpp - matrix products, reductions and TopK --------------===//

#include "compiler/Transforms/ShapeRules/ShapeRuleModels.h"

#include "dialects/onnx/OnnxOps.h"

#include "llvm/ADT/Twine.h"

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace ortc {

LogicalResult inferMatMulOf(ShapeRuleContext &ctx, Value a, Value b, Value result, Type element) {
  const DimList *ad = ctx.dims(a), *bd = ctx.dims(b);
  if (!ad || !bd || ad->empty() || bd->empty()) {
    ctx.setUnranked(result, element);
    return success();
  }
  // A vector operand is a matrix with a 1 prepended (a) or appended (b),
  // which the result then drops.
  DimList as = *ad, bs = *bd;
  if (ad->size() == 1)
    as.insert(as.begin(), ctx.constant(1));
  if (bd->size() == 1)
    bs.push_back(ctx.constant(1));
  std::optional<int64_t> k1 = ctx.constantValue(as.back()), k2 = ctx.constantValue(bs[bs.size() - 2]);
  if (k1 && k2 && *k1 != *k2)
    return ctx.fail("inner dimensions differ: " + Twine(*k1) + " and " + Twine(*k2));
  DimList ab(as.begin(), as.end() - 2), bb(bs.begin(), bs.end() - 2);
  FailureOr<std::optional<DimList>> batch = broadcastDims(ctx.table(), {&ab, &bb});
  if (failed(batch))
    return ctx.fail("batch dimensions cannot be broadcast together");
  DimList out = **batch;
  if (ad->size() > 1)
    out.push_back(as[as.size() - 2]);
  if (bd->size() > 1)
    out.push_back(bs.back());
  ctx.setResult(result, element, out);
  return success();
}

namespace {

LogicalResult inferMatMul(od::MatMulOp op, ShapeRuleContext &ctx) {
  return inferMatMulOf(ctx, op.getA(), op.getB(), op.getY(), ctx.elementType(op.getA()));
}

LogicalResult inferGemm(od::GemmOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getA());
  const DimList *a = ctx.dims(op.getA()), *b = ctx.dims(op.getB());
  if (!a || !b || a->size() != 2 || b->size() != 2) {
    ctx.setUnranked(op.getY(), element);
    return success();
  }
  bool ta = op.getTransA() != 0, tb = op.getTransB() != 0;
  int32_t m = (*a)[ta ? 1 : 0], k1 = (*a)[ta ? 0 : 1];
  int32_t k2 = (*b)[tb ? 1 : 0], n = (*b)[tb ? 0 : 1];
  std::optional<int64_t> c1 = ctx.constantValue(k1), c2 = ctx.constantValue(k2);
  if (c1 && c2 && *c1 != *c2)
    return ctx.fail("inner dimensions differ: " + Twine(*c1) + " and " + Twine(*c2));
  ctx.setResult(op.getY(), element, {m, n});
  return success();
}

/// Keeps or drops (`keep`: as 1) the dims of `in` that `reduced` marks.
DimList reduceDims(ShapeRuleContext &ctx, const DimList &in, ArrayRef<bool> reduced, bool keep) {
  DimList out;
  for (size_t i = 0; i < in.size(); ++i)
    if (!reduced[i])
      out.push_back(in[i]);
    else if (keep)
      out.push_back(ctx.constant(1));
  return out;
}

/// The dims of a reduction over `axes` known only at run time (elements of
/// a shape value, such as an input's value symbols), as expressions: with
/// r_i = min(1, sum over axes a of [a == i] + [a == i - rank]), a kept dim is
/// d_i - (d_i - 1) * r_i; without keepdims, output dim j is the d_i that is
/// the j-th not reduced, sum over i of d_i * (1 - r_i) * [kept before i == j]
/// (the axes distinct, as ONNX requires; the kernel checks its output).
DimList reduceByRunTimeAxes(ShapeRuleContext &ctx, const DimList &in, ArrayRef<int32_t> axes,
                            bool keep) {
  int64_t rank = int64_t(in.size());
  if (llvm::is_contained(in, kUnknownDim) || int64_t(axes.size()) > rank)
    return DimList(keep ? rank : std::max<int64_t>(rank - int64_t(axes.size()), 0), kUnknownDim);
  DimTable &t = ctx.table();
  int32_t one = t.constant(1);
  DimList reduced;
  for (int64_t i = 0; i < rank; ++i) {
    int32_t hits = t.constant(0);
    for (int32_t a : axes) {
      int32_t fromEnd = equalsConstant(t, a, i - rank);
      int32_t fromStart = equalsConstant(t, a, i);
      hits = t.add(hits, t.add(fromStart, fromEnd));
    }
    reduced.push_back(t.min(hits, one));
  }
  DimList out;
  if (keep) {
    for (int64_t i = 0; i < rank; ++i)
      out.push_back(t.sub(in[i], t.mul(t.sub(in[i], one), reduced[i])));
    return out;
  }
  DimList keptBefore; // how many dims before i are not reduced
  int32_t count = t.constant(0);
  for (int64_t i = 0; i < rank; ++i) {
    keptBefore.push_back(count);
    count = t.add(count, t.sub(one, reduced[i]));
  }
  for (int64_t j = 0; j < rank - int64_t(axes.size()); ++j) {
    int32_t dim = t.constant(0);
    for (int64_t i = 0; i < rank; ++i) {
      int32_t isJ = equalsConstant(t, keptBefore[i], j);
      int32_t keptHere = t.mul(t.sub(one, reduced[i]), isJ);
      dim = t.add(dim, t.mul(in[i], keptHere));
    }
    out.push_back(dim);
  }
  return out;
}

/// Reduce*-18 (and ReduceSum-13): axes from input 1, all of them when
/// absent or empty unless noop_with_empty_axes.
template <typename ReduceOp> LogicalResult inferReduce(ReduceOp op, ShapeRuleContext &ctx) {
  Value data = op.getData(), result = op.getReduced();
  Type element = ctx.elementType(data);
  const DimList *in = ctx.dimsOrUnranked(data, result, element);
  if (!in)
    return success();
  int64_t rank = int64_t(in->size());
  std::optional<SmallVector<int64_t>> axes = SmallVector<int64_t>();
  if (ctx.present(op.getAxes())) {
    axes = ctx.constantInts(op.getAxes());
    const DimList *runTime = axes ? nullptr : ctx.elements(op.getAxes());
    if (runTime && !runTime->empty()) {
      ctx.setResult(result, element, reduceByRunTimeAxes(ctx, *in, *runTime, op.getKeepdims() != 0));
      return success();
    }
    if (!axes && !runTime) { // unknown axes: the rank is known only with keepdims
      if (op.getKeepdims())
        ctx.setResult(result, element, DimList(rank, kUnknownDim));
      else
        ctx.setUnranked(result, element);
      return success();
    }
    if (!axes)
      axes.emplace(); // run-time axes with no elements: as an empty constant
  }
  SmallVector<bool> reduced(rank, false);
  if (axes->empty()) {
    if (op.getNoopWithEmptyAxes()) {
      ctx.setLike(result, data);
      return success();
    }
    reduced.assign(rank, true);
  }
  for (int64_t a : *axes) {
    std::optional<int64_t> axis = normalizeAxis(a, rank);
    if (!axis)
      return ctx.fail("axis " + Twine(a) + " is out of range for rank " + Twine(rank));
    reduced[*axis] = true;
  }
  ctx.setResult(result, element, reduceDims(ctx, *in, reduced, op.getKeepdims() != 0));
  return success();
}

/// ArgMax/ArgMin: a reduction over `axis` giving int64.
template <typename ArgOp> LogicalResult inferArgReduce(ArgOp op, ShapeRuleContext &ctx) {
  Type i64 = IntegerType::get(op->getContext(), 64);
  const DimList *in = ctx.dimsOrUnranked(op.getData(), op.getReduced(), i64);
  if (!in)
    return success();
  std::optional<int64_t> axis = normalizeAxis(int64_t(op.getAxis()), int64_t(in->size()));
  if (!axis)
    return ctx.fail("axis is out of range for rank " + Twine(in->size()));
  SmallVector<bool> reduced(in->size(), false);
  reduced[*axis] = true;
  ctx.setResult(op.getReduced(), i64, reduceDims(ctx, *in, reduced, op.getKeepdims() != 0));
  return success();
}

/// TopK: values and int64 indices, `axis` cut to K (a constant or a shape
/// value; else computed from data, a data symbol the kernel reports).
LogicalResult inferTopK(od::TopKOp op, ShapeRuleContext &ctx) {
  const DimList *in = ctx.dims(op.getX());
  const DimList *k = ctx.bounds(op.getK());
  if (!in || (k && k->size() != 1))
    return success();
  std::optional<int64_t> axis = normalizeAxis(int64_t(op.getAxis()), int64_t(in->size()));
  if (!axis)
    return ctx.fail("axis is out of range for rank " + Twine(in->size()));
  DimList out = *in;
  out[*axis] = k ? (*k)[0] : ctx.dataDim(op.getValues(), unsigned(*axis));
  ctx.setResult(op.getValues(), ctx.elementType(op.getX()), out);
  ctx.setResult(op.getIndices(), IntegerType::get(op->getContext(), 64), out);
  return success();
}

/// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss: with reduction
/// "none" the loss has the target's dims [N, d1, ...], else it is a scalar;
/// SoftmaxCrossEntropyLoss's log_prob has the scores' dims.
template <typename LossOp>
LogicalResult inferLoss(LossOp op, Value scores, Value target, Value loss, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(scores);
  if (op.getReduction() != "none")
    ctx.setResult(loss, element, DimList{});
  else if (const DimList *t = ctx.dims(target))
    ctx.setResult(loss, element, *t);
  return success();
}
LogicalResult inferNllLoss(od::NegativeLogLikelihoodLossOp op, ShapeRuleContext &ctx) {
  return inferLoss(op, op.getInput(), op.getTarget(), op.getLoss(), ctx);
}
LogicalResult inferSoftmaxCrossEntropyLoss(od::SoftmaxCrossEntropyLossOp op,
                                           ShapeRuleContext &ctx) {
  ctx.setLike(op.getLogProb(), op.getScores());
  return inferLoss(op, op.getScores(), op.getLabels(), op.getOutput(), ctx);
}

/// Each op gets its own instance of its family's rule (the ops share names
/// of accessors, not a class).
template <typename... Ops> void attachReduceRules(MLIRContext *context) {
  (attachRule<inferReduce<Ops>, Ops>(context), ...);
}

} // namespace

void attachMathShapeRules(MLIRContext *context) {
  attachRule<inferMatMul, od::MatMulOp>(context);
  attachRule<inferGemm, od::GemmOp>(context);
  attachReduceRules<od::ReduceMeanOp, od::ReduceSumOp, od::ReduceMaxOp, od::ReduceMinOp,
                    od::ReduceProdOp, od::ReduceL1Op, od::ReduceL2Op, od::ReduceLogSumOp,
                    od::ReduceLogSumExpOp, od::ReduceSumSquareOp>(context);
  attachRule<inferArgReduce<od::ArgMaxOp>, od::ArgMaxOp>(context);
  attachRule<inferArgReduce<od::ArgMinOp>, od::ArgMinOp>(context);
  attachRule<inferTopK, od::TopKOp>(context);
  attachRule<inferNllLoss, od::NegativeLogLikelihoodLossOp>(context);
  attachRule<inferSoftmaxCrossEntropyLoss, od::SoftmaxCrossEntropyLossOp>(context);
}

} // namespace ortc
