//===- Pipeline.cpp - the generic pass pipeline ---------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

void ortc::buildGenericOnnxPipeline(mlir::OpPassManager &pm,
                                    const GenericPipelineOptions &options) {
  auto &fn = pm.nest<mlir::func::FuncOp>();
  OnnxPropagateShapesOptions propagate;
  propagate.strictShapes = options.strictShapes;
  OnnxUnrollControlFlowOptions unroll;
  unroll.strictShapes = options.strictShapes;
  fn.addPass(createOnnxCanonicalize());
  // Scan-8 as a Loop of Scans, SequenceMap as the Loop its ONNX function is.
  fn.addPass(createOnnxUpgradeScan8());
  fn.addPass(createOnnxExpandSequenceMap());
  // Static shapes let shape arithmetic fold; folded shapes refine more types,
  // and known ranks make older generic nodes typed.
  fn.addPass(createOnnxPropagateShapes(propagate));
  // Scan/Loop lengths are known now; the unrolled copies need inference too.
  fn.addPass(createOnnxUnrollControlFlow(unroll));
  fn.addPass(createOnnxPropagateShapes(propagate));
  // An If whose branches differ in rank becomes the branch the graph
  // type-checks with, its condition checked at run time.
  fn.addPass(createOnnxSpecializeBranches());
  // Or, when both type-check, one rank if broadcasting cannot tell them apart.
  fn.addPass(createOnnxUnifyBranchRanks());
  // Shape arithmetic rooted at the graph inputs, not at intermediates.
  fn.addPass(createOnnxShapesFromInputs());
  fn.addPass(createOnnxFoldConvBatchNorm());
  fn.addPass(createOnnxFuseMatMulAdd());
  fn.addPass(createOnnxRecognizeFusedOps());
  // Shapes known now may let more patterns apply (identity Casts, Identity).
  fn.addPass(createOnnxCanonicalize());
  fn.addPass(createOnnxDeadCodeElimination());
  // Every shape static by now is one the EPs would plan memory for.
  OnnxCheckTensorSizesOptions sizes;
  sizes.maxBytes = options.maxTensorBytes;
  fn.addPass(createOnnxCheckTensorSizes(sizes));
}
