//===- DeadCodeElimination.cpp - onnx-dce ---------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "llvm/ADT/SetVector.h"

namespace ortc {
#define GEN_PASS_DEF_ONNXDEADCODEELIMINATION
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;

namespace {

bool isRemovableOnnxOp(Operation *op) {
  // ONNX ops and the fused ortc ops have no side effects; terminators keep
  // their operands live.
  StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
  // An op that declares a write (ortc.check_condition) stays.
  if (auto effects = dyn_cast<MemoryEffectOpInterface>(op))
    if (effects.hasEffect<MemoryEffects::Write>())
      return false;
  return (dialect == "onnx" || dialect == "ortc") && op->getName().getStringRef() != "onnx.Yield" &&
         op->use_empty();
}

struct OnnxDeadCodeElimination : ortc::impl::OnnxDeadCodeEliminationBase<OnnxDeadCodeElimination> {
  void runOnOperation() override {
    // Worklist: dead ops; erasing one may kill the producers of its operands.
    llvm::SetVector<Operation *> worklist;
    getOperation().walk([&](Operation *op) {
      if (isRemovableOnnxOp(op))
        worklist.insert(op);
    });
    while (!worklist.empty()) {
      Operation *op = worklist.pop_back_val();
      SmallVector<Operation *> producers;
      // Producers of values used here or inside this op's regions.
      op->walk([&](Operation *nested) {
        for (Value operand : nested->getOperands())
          if (Operation *producer = operand.getDefiningOp())
            if (!op->isAncestor(producer))
              producers.push_back(producer);
        if (nested != op)
          worklist.remove(nested);
      });
      op->erase();
      ++numErased;
      for (Operation *producer : producers)
        if (isRemovableOnnxOp(producer))
          worklist.insert(producer);
    }
  }
};

} // namespace
