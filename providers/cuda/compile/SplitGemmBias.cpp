//===- SplitGemmBias.cpp - cuda-split-gemm-bias ---------------------------===//
//
// Gemm's and Conv's biases join the elementwise ops after them.
//
//===----------------------------------------------------------------------===//

#include "providers/cuda/compile/OpBuilding.h"
#include "providers/cuda/compile/Passes.h"

#include "dialects/onnx/OnnxOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace ortc::cuda {
#define GEN_PASS_DEF_CUDASPLITGEMMBIAS
#include "providers/cuda/compile/Passes.h.inc"
} // namespace ortc::cuda

using namespace mlir;
namespace onnx = ortc::onnx_dialect;

unsigned ortc::cuda::splitGemmBias(func::FuncOp fn) {
  SmallVector<onnx::GemmOp> gemms;
  fn.walk([&](onnx::GemmOp op) {
    if (!isa_and_nonnull<onnx::NoValueOp>(op.getC().getDefiningOp()))
      gemms.push_back(op);
  });
  for (onnx::GemmOp op : gemms) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value c = op.getC();
    float beta = op.getBeta().convertToFloat();
    Value none = ortc::cuda::createOnnxOp(b, loc, "onnx.NoValue", {}, b.getNoneType());
    Operation *product = b.clone(*op);
    product->setOperand(2, none);
    product->setAttr("beta", b.getF32FloatAttr(1.0f));
    Value result = product->getResult(0);
    if (beta != 0) {
      Type cType = c.getType();
      if (beta != 1) {
        auto elem = cast<RankedTensorType>(cType).getElementType();
        auto scalar = RankedTensorType::get({}, elem);
        Attribute value = DenseElementsAttr::get(
            scalar, b.getFloatAttr(elem, double(beta)).getValue());
        Value betaValue = ortc::cuda::createOnnxOp(b, loc, "onnx.Constant", {}, scalar,
                                   {b.getNamedAttr("value", value)});
        c = ortc::cuda::createOnnxOp(b, loc, "onnx.Mul", {c, betaValue}, cType);
      }
      result = ortc::cuda::createOnnxOp(b, loc, "onnx.Add", {result, c}, op.getResult().getType());
    }
    op.getResult().replaceAllUsesWith(result);
    op.erase();
  }
  // Conv(X, W, B): B [M] joins as Add(Conv(X, W), Unsqueeze(B, [1, 2])).
  SmallVector<onnx::ConvOp> convs;
  fn.walk([&](onnx::ConvOp op) {
    auto y = dyn_cast<RankedTensorType>(op.getY().getType());
    if (!isa_and_nonnull<onnx::NoValueOp>(op.getB().getDefiningOp()) && y && y.getRank() == 4)
      convs.push_back(op);
  });
  for (onnx::ConvOp op : convs) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    Value bias = op.getB();
    auto biasType = cast<RankedTensorType>(bias.getType());
    Value none = ortc::cuda::createOnnxOp(b, loc, "onnx.NoValue", {}, b.getNoneType());
    Operation *conv = b.clone(*op);
    conv->setOperand(2, none);
    auto axesType = RankedTensorType::get({2}, b.getI64Type());
    Value axes = ortc::cuda::createOnnxOp(b, loc, "onnx.Constant", {}, axesType,
                          {b.getNamedAttr("value", DenseElementsAttr::get(
                                                       axesType, ArrayRef<int64_t>{1, 2}))});
    SmallVector<int64_t> shape(biasType.getShape());
    shape.append({1, 1});
    Value column = ortc::cuda::createOnnxOp(b, loc, "onnx.Unsqueeze", {bias, axes},
                            RankedTensorType::get(shape, biasType.getElementType()));
    Value sum = ortc::cuda::createOnnxOp(b, loc, "onnx.Add", {conv->getResult(0), column}, op.getY().getType());
    op.getY().replaceAllUsesWith(sum);
    op.erase();
  }
  return gemms.size() + convs.size();
}

namespace {

struct CudaSplitGemmBiasPass : ortc::cuda::impl::CudaSplitGemmBiasBase<CudaSplitGemmBiasPass> {
  void runOnOperation() override { numSplit += ortc::cuda::splitGemmBias(getOperation()); }
};

} // namespace
