//===- SplitToSlices.cpp - cuda-split-to-slices ---------------------------===//
//
// A Split whose pieces are known at compile time becomes one Slice per
// output, each a data-movement kernel.
//
//===----------------------------------------------------------------------===//

#include "providers/cuda/compile/DataMovementKernels.h"
#include "providers/cuda/compile/OpBuilding.h"
#include "providers/cuda/compile/Passes.h"

#include "dialects/onnx/OnnxOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace ortc::cuda {
#define GEN_PASS_DEF_CUDASPLITTOSLICES
#include "providers/cuda/compile/Passes.h.inc"
} // namespace ortc::cuda

using namespace mlir;
namespace onnx = ortc::onnx_dialect;

unsigned ortc::cuda::splitToSlices(func::FuncOp fn) {
  SmallVector<std::pair<onnx::SplitOp, SplitPieces>> splits;
  fn.walk([&](onnx::SplitOp op) {
    if (std::optional<SplitPieces> pieces = splitPieces(op))
      splits.push_back({op, *pieces});
  });
  for (auto &[op, pieces] : splits) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto vector = RankedTensorType::get({1}, b.getI64Type());
    auto constant = [&](int64_t value) {
      return createOnnxOp(b, loc, "onnx.Constant", {}, vector,
                          {b.getNamedAttr("value", DenseElementsAttr::get(
                                                       vector, ArrayRef<int64_t>{value}))});
    };
    Value axes = constant(pieces.axis);
    for (auto [result, bounds] : llvm::zip(op.getResults(), pieces.bounds)) {
      if (result.use_empty())
        continue;
      Value slice = createOnnxOp(b, loc, "onnx.Slice",
                                 {op.getInput(), constant(bounds.first), constant(bounds.second),
                                  axes, createOnnxOp(b, loc, "onnx.NoValue", {}, b.getNoneType())},
                                 result.getType());
      result.replaceAllUsesWith(slice);
    }
    op.erase();
  }
  return unsigned(splits.size());
}

namespace {

struct CudaSplitToSlicesPass : ortc::cuda::impl::CudaSplitToSlicesBase<CudaSplitToSlicesPass> {
  void runOnOperation() override { numSplit += ortc::cuda::splitToSlices(getOperation()); }
};

} // namespace
