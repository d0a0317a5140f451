//===- Pipeline.cpp - the generic pass pipeline ---------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

void ortc::buildGenericOnnxPipeline(mlir::OpPassManager &pm) {
  auto &fn = pm.nest<mlir::func::FuncOp>();
  fn.addPass(createOnnxCanonicalize());
  // Static shapes let shape arithmetic fold; folded shapes refine more types.
  fn.addPass(createOnnxPropagateShapes());
  fn.addPass(createOnnxUpgradeGenericOps());
  fn.addPass(createOnnxPropagateShapes());
  // Scan/Loop lengths are known now; the unrolled copies need inference too.
  fn.addPass(createOnnxUnrollControlFlow());
  fn.addPass(createOnnxPropagateShapes());
  fn.addPass(createOnnxFoldConvBatchNorm());
  fn.addPass(createOnnxFuseMatMulAdd());
  fn.addPass(createOnnxRecognizeFusedOps());
  // Shapes known now may let more patterns apply (identity Casts, Identity).
  fn.addPass(createOnnxCanonicalize());
  fn.addPass(createOnnxDeadCodeElimination());
}
