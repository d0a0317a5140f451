//===- UpgradeGenericOps.cpp - onnx-upgrade-generic-ops -------------------===//
//
// Some older nodes can become typed ops only once their input's rank is
// known: Softmax, LogSoftmax and Hardmax before opset 13 flatten to 2-D at
// `axis`, which equals the per-axis form of opset 13 exactly when `axis` is
// the last dim. The importer rewrites them when value_info gives the rank;
// after shape inference this pass does the rest.
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

struct OnnxUpgradeGenericOps : ortc::impl::OnnxUpgradeGenericOpsBase<OnnxUpgradeGenericOps> {
  void runOnOperation() override {
    SmallVector<Operation *> candidates;
    getOperation().walk([&](Operation *op) {
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
      if (axis != type.getRank() - 1)
        continue;
      OpBuilder builder(op);
      OperationState state(op->getLoc(), ("onnx." + name).str());
      state.addOperands(op->getOperand(0));
      state.addAttribute("axis", builder.getI64IntegerAttr(-1));
      Type result = op->getResult(0).getType();
      state.addTypes(isa<TensorType>(result) ? result : Type(type));
      Operation *typed = builder.create(state);
      op->getResult(0).replaceAllUsesWith(typed->getResult(0));
      op->erase();
      ++numUpgraded;
    }
    ortc::syncFunctionResultTypes(getOperation());
  }
};

} // namespace
