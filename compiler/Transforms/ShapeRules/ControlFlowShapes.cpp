//===- ControlFlowShapes.cpp - If -----------------------------------------===//

#include "compiler/Transforms/ShapeRules/ShapeRuleModels.h"

#include "dialects/onnx/OnnxOps.h"

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace ortc {
namespace {

/// If: a result both branches yield with the same element type and rank
/// has the dims the two agree on (unknown where they differ).
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
      out.push_back((*da)[d] == (*db)[d] ? (*da)[d] : kUnknownDim);
    ctx.setResult(op->getResult(i), element, out);
  }
  return success();
}

} // namespace

void attachControlFlowShapeRules(MLIRContext *context) {
  attachRule<inferIf, od::IfOp>(context);
}

} // namespace ortc
