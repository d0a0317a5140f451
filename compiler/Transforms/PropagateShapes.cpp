//===- PropagateShapes.cpp - onnx-propagate-shapes ------------------------===//
//
// Shape inference refines types, which lets Shape, Size and the shape
// arithmetic after them fold to constants, which lets inference refine the
// ops that read those constants (Reshape, Expand, ConstantOfShape, Range,
// ...). Ranks known now also let older generic nodes become typed ops
// (onnx-upgrade-generic-ops), whose results refine what follows them.
// Alternate the three until nothing changes.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace ortc {
#define GEN_PASS_DEF_ONNXPROPAGATESHAPES
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;

namespace {

struct OnnxPropagateShapes : ortc::impl::OnnxPropagateShapesBase<OnnxPropagateShapes> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    for (unsigned round = 0; round < maxRounds; ++round) {
      ++numRounds;
      unsigned refined = 0;
      if (failed(ortc::inferShapesIn(func, refined, strictShapes)))
        return signalPassFailure();
      unsigned folded = ortc::foldConstantsIn(func, maxElements);
      unsigned upgraded = ortc::upgradeGenericOpsIn(func);
      numRefined += refined;
      numFolded += folded;
      if (refined == 0 && folded == 0 && upgraded == 0)
        return;
    }
    func.emitError("shapes and constants still change after ")
        << maxRounds.getValue() << " rounds of inference and folding";
    signalPassFailure();
  }
};

} // namespace
