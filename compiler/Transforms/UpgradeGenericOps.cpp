//===- UpgradeGenericOps.cpp - onnx-upgrade-generic-ops -------------------===//
//
// Some older nodes can become typed ops only once their input's rank is
// known: Softmax, LogSoftmax and Hardmax before opset 13 flatten to 2-D at
// `axis`, which equals the per-axis form of opset 13 exactly when `axis` is
// the last dim. The importer rewrites them when value_info gives the rank;
// after shape inference this pass does the rest, and spells the other axes
// out as Flatten, the typed op and a Reshape back.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/FunctionTypes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

namespace ortc {
#define GEN_PASS_DEF_ONNXUPGRADEGENERICOPS
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;

namespace {

/// Softmax-11 at a non-last `axis` normalizes over the input flattened to 2-D
/// at `axis`: Flatten(axis), the typed op over the last axis, and a Reshape
/// back. The Reshape's target is a constant when it can be (the input's dims,
/// with 0 (copy) for a dynamic dim 0 when axis is 1, where the flattened dim
/// 0 is that dim), else the input's Shape, which the symbolic shape analysis
/// reads as the input's dims.
void upgradeThroughFlatten(Operation *op, StringRef name, RankedTensorType type, int64_t axis) {
  ArrayRef<int64_t> dims = type.getShape();
  int64_t outer = 1, inner = 1;
  SmallVector<int64_t> target;
  bool constantTarget = true;
  for (int64_t d = 0; d < type.getRank(); ++d) {
    bool dynamic = ShapedType::isDynamic(dims[d]);
    constantTarget &= !dynamic || (d == 0 && axis == 1);
    target.push_back(dynamic ? 0 : dims[d]);
    int64_t &part = d < axis ? outer : inner;
    part = dynamic || ShapedType::isDynamic(part) ? ShapedType::kDynamic : part * dims[d];
  }
  OpBuilder builder(op);
  Location loc = op->getLoc();
  auto flatType = RankedTensorType::get({outer, inner}, type.getElementType());
  OperationState flatten(loc, "onnx.Flatten");
  flatten.addOperands(op->getOperand(0));
  flatten.addAttribute("axis", builder.getI64IntegerAttr(axis));
  flatten.addTypes(flatType);
  Operation *flat = builder.create(flatten);

  OperationState normalize(loc, ("onnx." + name).str());
  normalize.addOperands(flat->getResult(0));
  normalize.addAttribute("axis", builder.getI64IntegerAttr(-1));
  normalize.addTypes(flatType);
  Operation *typed = builder.create(normalize);

  auto targetType = RankedTensorType::get({type.getRank()}, builder.getI64Type());
  OperationState targetState(loc, constantTarget ? "onnx.Constant" : "onnx.Shape");
  if (constantTarget)
    targetState.addAttribute("value", DenseIntElementsAttr::get(targetType, target));
  else
    targetState.addOperands(op->getOperand(0));
  targetState.addTypes(targetType);
  Operation *shape = builder.create(targetState);

  OperationState reshape(loc, "onnx.Reshape");
  reshape.addOperands({typed->getResult(0), shape->getResult(0)});
  reshape.addAttribute("allowzero", builder.getI64IntegerAttr(0));
  reshape.addTypes(type);
  Operation *back = builder.create(reshape);
  op->getResult(0).replaceAllUsesWith(back->getResult(0));
  op->erase();
}

} // namespace

unsigned ortc::upgradeGenericOpsIn(func::FuncOp func) {
  unsigned upgraded = 0;
    SmallVector<Operation *> candidates;
  func.walk([&](Operation *op) {
    if (op->getName().getStringRef() == "onnx.Generic")
      candidates.push_back(op);
  });
  for (Operation *op : candidates) {
    auto opType = op->getAttrOfType<StringAttr>("op_type");
    auto domain = op->getAttrOfType<StringAttr>("domain");
    auto since = op->getAttrOfType<IntegerAttr>("since_version");
    auto attrs = op->getAttrOfType<DictionaryAttr>("onnx_attrs");
    if (!opType || !domain || !since || !attrs || !domain.getValue().empty() ||
        since.getInt() >= 13 || op->getNumOperands() != 1 || op->getNumResults() != 1 ||
        op->getNumRegions() != 0)
      continue;
    StringRef name = opType.getValue();
    if (name != "Softmax" && name != "LogSoftmax" && name != "Hardmax")
      continue;
    auto type = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    if (!type || type.getRank() == 0 || attrs.size() > 1 ||
        (attrs.size() == 1 && !attrs.get("axis")))
      continue;
    int64_t axis = 1;
    if (auto a = attrs.getAs<IntegerAttr>("axis"))
      axis = a.getInt();
    if (axis < 0)
      axis += type.getRank();
    if (axis < 0 || axis >= type.getRank())
      continue;
    if (axis != type.getRank() - 1) {
      upgradeThroughFlatten(op, name, type, axis);
      ++upgraded;
      continue;
    }
    OpBuilder builder(op);
    OperationState state(op->getLoc(), ("onnx." + name).str());
    state.addOperands(op->getOperand(0));
    state.addAttribute("axis", builder.getI64IntegerAttr(-1));
    Type result = op->getResult(0).getType();
    state.addTypes(isa<TensorType>(result) ? result : Type(type));
    Operation *typed = builder.create(state);
    op->getResult(0).replaceAllUsesWith(typed->getResult(0));
    op->erase();
    ++upgraded;
  }
  if (upgraded)
    ortc::syncFunctionResultTypes(func);
  return upgraded;
}

namespace {

struct OnnxUpgradeGenericOps : ortc::impl::OnnxUpgradeGenericOpsBase<OnnxUpgradeGenericOps> {
  void runOnOperation() override { numUpgraded += ortc::upgradeGenericOpsIn(getOperation()); }
};
} // namespace
