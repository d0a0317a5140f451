//===- ControlFlowShapes.cpp - If, Loop and Scan ---------------------------===//

#include "compiler/Transforms/ShapeRules/ShapeRuleModels.h"
#include "compiler/Transforms/ShapeRules/SequenceTypes.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/OnnxOps.h"

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace ortc {
namespace {

/// If: a result both branches yield with the same element type and rank
/// has the dims the two agree on; where they differ, the branch taken at
/// run time decides (a data symbol).
LogicalResult inferIf(od::IfOp op, ShapeRuleContext &ctx) {
  SmallVector<Operation *, 2> yields;
  for (Region &r : op->getRegions()) {
    if (!r.hasOneBlock())
      return success();
    Operation *y = r.front().getTerminator();
    if (!y || y->getNumOperands() != op->getNumResults())
      return success();
    yields.push_back(y);
  }
  if (yields.size() != 2)
    return success();
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    Value a = yields[0]->getOperand(i), b = yields[1]->getOperand(i);
    // A branch that yields an empty sequence or optional bounds nothing.
    Type covering = coveringContainerType(a.getType(), b.getType());
    if (covering && isEmptyContainer(a))
      covering = b.getType();
    else if (covering && isEmptyContainer(b))
      covering = a.getType();
    if (covering) {
      ctx.setType(op->getResult(i), covering);
      continue;
    }
    Type element = ctx.elementType(a);
    if (!element || element != ctx.elementType(b))
      continue;
    const DimList *da = ctx.dims(a), *db = ctx.dims(b);
    if (!da || !db || da->size() != db->size()) {
      ctx.setUnranked(op->getResult(i), element);
      continue;
    }
    DimList out;
    for (size_t d = 0; d < da->size(); ++d)
      out.push_back((*da)[d] == (*db)[d] ? (*da)[d] : ctx.dataDim(op->getResult(i), unsigned(d)));
    ctx.setResult(op->getResult(i), element, out);
  }
  return success();
}

/// A value carried through a body (a Loop's carried value, a Scan's state):
/// it keeps the dims it came in with where the body yields them unchanged,
/// and gets data symbols for the dims that change (a growing sequence).
void setCarried(ShapeRuleContext &ctx, Value result, Value init, Value arg, Value yielded) {
  Type element = ctx.elementType(init);
  const DimList *in = ctx.dims(init), *inArg = ctx.dims(arg), *out = ctx.dims(yielded);
  if (!element || !in || !out || out->size() != in->size()) {
    ctx.setUnranked(result, element);
    return;
  }
  DimList dims;
  for (size_t d = 0; d < in->size(); ++d) {
    bool invariant = (inArg && (*inArg)[d] == (*out)[d]) || (*in)[d] == (*out)[d];
    dims.push_back(invariant ? (*in)[d] : ctx.dataDim(result, unsigned(d)));
  }
  ctx.setResult(result, element, dims);
}

/// A per-iteration value as its body yields it, each dim the body does not
/// fix a data symbol; nullopt (and the result unranked) without a rank.
std::optional<DimList> stackedDims(ShapeRuleContext &ctx, Value result, Value each,
                                   unsigned offset) {
  Type element = ctx.elementType(each);
  const DimList *dims = ctx.dims(each);
  if (!element || !dims) {
    ctx.setUnranked(result, element);
    return std::nullopt;
  }
  DimList out;
  for (size_t d = 0; d < dims->size(); ++d)
    out.push_back(ctx.constantValue((*dims)[d]) ? (*dims)[d]
                                                 : ctx.dataDim(result, unsigned(d) + offset));
  return out;
}

/// Loop: a carried value whose body yields it with the dims it came in with
/// keeps its initial dims; one the body reshapes (a growing sequence) gets
/// data symbols for the dims that change. A scan output stacks one value per
/// iteration: its leading dim, and every dim the body does not fix, is data.
LogicalResult inferLoop(od::LoopOp op, ShapeRuleContext &ctx) {
  Region &body = op.getBody();
  if (!body.hasOneBlock())
    return success();
  Block &block = body.front();
  Operation *yield = block.getTerminator();
  size_t carried = op.getVInitial().size();
  // Body: (iter_num, cond, carried...) -> (cond, carried..., scans...).
  if (!yield || block.getNumArguments() != carried + 2 ||
      yield->getNumOperands() != op->getNumResults() + 1 || op->getNumResults() < carried)
    return success();
  for (size_t i = 0; i < carried; ++i) {
    Value init = op.getVInitial()[i], yielded = yield->getOperand(i + 1);
    // A carried sequence holds what it starts with and what the body makes
    // of it (only the latter when it starts empty).
    if (containerKindOf(init.getType()) && *containerKindOf(init.getType()) != ContainerKind::None) {
      Type covering = isEmptySequence(init) && isa<od::SeqType>(yielded.getType())
                          ? yielded.getType()
                          : coveringContainerType(init.getType(), yielded.getType());
      if (covering)
        ctx.setType(op->getResult(i), covering);
      continue;
    }
    setCarried(ctx, op->getResult(i), init, block.getArgument(i + 2), yielded);
  }
  for (size_t k = carried; k < op->getNumResults(); ++k) {
    Value result = op->getResult(k), each = yield->getOperand(k + 1);
    std::optional<DimList> dims = stackedDims(ctx, result, each, 1);
    if (!dims)
      continue;
    dims->insert(dims->begin(), ctx.dataDim(result, 0));
    ctx.setResult(result, ctx.elementType(each), *dims);
  }
  return success();
}

/// Scan (opset 9+): a state keeps its initial dims where the body yields it
/// unchanged, else data symbols (as Loop's carried values); a scan output is
/// the body's per-step value with the sequence length (scan input 0's dim at
/// its axis) inserted at its scan_output_axes entry.
LogicalResult inferScan(od::ScanOp op, ShapeRuleContext &ctx) {
  Region &body = op.getBody();
  if (!body.hasOneBlock())
    return success();
  Block &block = body.front();
  Operation *yield = block.getTerminator();
  int64_t numScan = op.getNumScanInputs();
  auto operands = op.getInitialStateAndScanInputs();
  if (numScan < 1 || int64_t(operands.size()) < numScan || !yield)
    return success();
  size_t states = operands.size() - size_t(numScan);
  if (block.getNumArguments() != operands.size() ||
      yield->getNumOperands() != op->getNumResults() || op->getNumResults() < states)
    return success();
  for (size_t i = 0; i < states; ++i)
    setCarried(ctx, op->getResult(i), operands[i], block.getArgument(i), yield->getOperand(i));
  // The sequence length: scan input 0's dim at its axis.
  const DimList *first = ctx.dims(operands[states]);
  int32_t length = kUnknownDim;
  if (first) {
    int64_t axis = 0;
    if (auto axes = op.getScanInputAxes(); axes && !axes->empty())
      axis = (*axes)[0];
    if (std::optional<int64_t> a = normalizeAxis(axis, int64_t(first->size())))
      length = (*first)[*a];
  }
  for (size_t k = states; k < op->getNumResults(); ++k) {
    Value result = op->getResult(k), each = yield->getOperand(k);
    std::optional<DimList> dims = stackedDims(ctx, result, each, 0);
    if (!dims)
      continue;
    DimList &out = *dims;
    Type element = ctx.elementType(each);
    int64_t axis = 0;
    if (auto axes = op.getScanOutputAxes(); axes && size_t(k - states) < axes->size())
      axis = (*axes)[k - states];
    std::optional<int64_t> a = normalizeAxis(axis, int64_t(out.size()) + 1);
    if (!a)
      return ctx.fail("scan_output_axes entry " + Twine(axis) + " is out of range");
    out.insert(out.begin() + *a, length == kUnknownDim ? ctx.dataDim(result, unsigned(*a)) : length);
    ctx.setResult(result, element, out);
  }
  return success();
}

} // namespace

void attachControlFlowShapeRules(MLIRContext *context) {
  attachRule<inferScan, od::ScanOp>(context);
  attachRule<inferIf, od::IfOp>(context);
  attachRule<inferLoop, od::LoopOp>(context);
}

} // namespace ortc
