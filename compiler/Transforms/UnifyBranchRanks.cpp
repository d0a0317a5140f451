//===- UnifyBranchRanks.cpp - onnx-unify-branch-ranks ---------------------===//
//
// ONNX's own function bodies write special cases as an If whose branches
// yield one value in two ranks that only broadcasting tells apart
// (AffineGrid: "1 / (D - 1) if D == 1 else 0.0", a [1] or a []). A plan gives
// every value one rank. When the higher-rank branch's extra leading dims are
// static 1s and every user of the result broadcasts it with operands of at
// least that rank, the lower-rank branch's value may be Unsqueezed to the
// higher rank without changing anything that follows: broadcasting prepends
// those 1s anyway.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/OpQueries.h"
#include "compiler/Transforms/ShapeRules/BroadcastOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

#include <algorithm>

namespace ortc {
#define GEN_PASS_DEF_ONNXUNIFYBRANCHRANKS
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace {

/// Whether every user of `result` broadcasts it with other operands of at
/// least `rank` dims: the user's result then has their rank whether `result`
/// has `rank` dims or fewer, and leading 1s on it change nothing.
bool onlyBroadcastInto(Value result, int64_t rank) {
  for (Operation *user : result.getUsers()) {
    if (!ortc::isMultidirectionalBroadcast(user))
      return false;
    int64_t others = -1;
    for (Value operand : user->getOperands()) {
      if (operand == result)
        continue;
      auto type = dyn_cast<RankedTensorType>(operand.getType());
      if (!type)
        return false;
      others = std::max(others, type.getRank());
    }
    if (others < rank)
      return false;
  }
  return true;
}

/// Unsqueezes If result `i`'s lower-rank yield when the rule above allows;
/// whether it did.
bool unify(od::IfOp op, unsigned i) {
  Operation *yields[2] = {op.getThenBranch().front().getTerminator(),
                          op.getElseBranch().front().getTerminator()};
  auto a = dyn_cast<RankedTensorType>(yields[0]->getOperand(i).getType());
  auto b = dyn_cast<RankedTensorType>(yields[1]->getOperand(i).getType());
  if (!a || !b || a.getRank() == b.getRank() || a.getElementType() != b.getElementType())
    return false;
  unsigned low = a.getRank() < b.getRank() ? 0 : 1;
  RankedTensorType lowType = low == 0 ? a : b, highType = low == 0 ? b : a;
  int64_t extra = highType.getRank() - lowType.getRank();
  for (int64_t d = 0; d < extra; ++d)
    if (highType.getDimSize(d) != 1)
      return false;
  if (!onlyBroadcastInto(op->getResult(i), highType.getRank()))
    return false;

  // Unsqueeze(value, [0, ..., extra - 1]) before the lower-rank yield.
  Operation *yield = yields[low];
  OpBuilder builder(yield);
  Location loc = NameLoc::get(
      StringAttr::get(op->getContext(), ortc::nodeNameOf(op, "If") + "/unify_rank" +
                                            std::to_string(i)),
      yield->getLoc());
  SmallVector<int64_t> axes;
  for (int64_t d = 0; d < extra; ++d)
    axes.push_back(d);
  auto axesType = RankedTensorType::get({extra}, builder.getI64Type());
  OperationState constant(loc, "onnx.Constant");
  constant.addAttribute("value", DenseIntElementsAttr::get(axesType, axes));
  constant.addTypes(axesType);
  Value axesValue = builder.create(constant)->getResult(0);
  SmallVector<int64_t> shape(extra, 1);
  shape.append(lowType.getShape().begin(), lowType.getShape().end());
  OperationState unsqueeze(loc, "onnx.Unsqueeze");
  unsqueeze.addOperands({yield->getOperand(i), axesValue});
  unsqueeze.addTypes(RankedTensorType::get(shape, lowType.getElementType()));
  yield->setOperand(i, builder.create(unsqueeze)->getResult(0));
  // The result has the higher rank now; inference refines its dims.
  op->getResult(i).setType(
      RankedTensorType::get(SmallVector<int64_t>(highType.getRank(), ShapedType::kDynamic),
                            highType.getElementType()));
  return true;
}

struct OnnxUnifyBranchRanks : ortc::impl::OnnxUnifyBranchRanksBase<OnnxUnifyBranchRanks> {
  void runOnOperation() override {
    bool any = false;
    getOperation().walk([&](od::IfOp op) {
      if (!op.getThenBranch().hasOneBlock() || !op.getElseBranch().hasOneBlock())
        return;
      for (unsigned i = 0; i < op->getNumResults(); ++i)
        if (unify(op, i)) {
          ++numUnified;
          any = true;
        }
    });
    if (!any)
      return;
    unsigned refined = 0;
    if (failed(ortc::inferShapesIn(getOperation(), refined, /*strictShapes=*/false)))
      signalPassFailure();
  }
};

} // namespace
