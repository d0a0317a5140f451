//===- ShapesFromInputs.cpp - onnx-shapes-from-inputs ---------------------===//
//
// Shape(v) reads only v's dims; when each of them is a constant or a dim of a
// graph input, the same values come from the inputs' Shapes. Rewritten so,
// the shape arithmetic after it depends on the graph inputs alone, and the
// partitioner can run it on the host before any device partition instead of
// between two halves of one (v need not be computed, or copied back, first).
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/SymbolicShapes.h"

#include "dialects/onnx/OnnxOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "llvm/ADT/DenseMap.h"

namespace ortc {
#define GEN_PASS_DEF_ONNXSHAPESFROMINPUTS
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
namespace onnx = ortc::onnx_dialect;

namespace {

/// One element of a rebuilt shape: a constant, or dim `axis` of `input`.
struct ShapeElement {
  int64_t constant = 0;
  Value input;
  int64_t axis = 0;
};

Value build(OpBuilder &b, Location loc, StringRef name, ValueRange operands, Type result,
            ArrayRef<NamedAttribute> attrs = {}) {
  OperationState state(loc, name);
  state.addOperands(operands);
  state.addTypes(result);
  state.addAttributes(attrs);
  return b.create(state)->getResult(0);
}

} // namespace

unsigned ortc::shapesFromInputsIn(func::FuncOp fn) {
  SymbolicShapes shapes(fn);
  const DimTable &table = shapes.table();
  // Each symbolic dim id's first place among the graph inputs' dims.
  llvm::DenseMap<int32_t, std::pair<Value, int64_t>> inputDim;
  for (BlockArgument arg : fn.getArguments())
    if (const SmallVector<int32_t> *dims = shapes.dims(arg))
      for (auto [axis, id] : llvm::enumerate(*dims))
        if (id != kUnknownDim && table.node(id).op != DimOp::Const)
          inputDim.try_emplace(id, std::make_pair(Value(arg), int64_t(axis)));

  SmallVector<std::pair<onnx::ShapeOp, SmallVector<ShapeElement>>> rewrites;
  fn.walk([&](onnx::ShapeOp op) {
    Value data = op.getData();
    auto result = dyn_cast<RankedTensorType>(op.getShape().getType());
    const SmallVector<int32_t> *dims = shapes.dims(data);
    if (isa<BlockArgument>(data) || !dims || !result || !result.hasStaticShape())
      return;
    int64_t rank = int64_t(dims->size());
    auto clamp = [&](int64_t i) { return std::clamp(i < 0 ? i + rank : i, int64_t(0), rank); };
    int64_t start = clamp(op.getStart()), end = op.getEnd() ? clamp(*op.getEnd()) : rank;
    SmallVector<ShapeElement> elements;
    bool symbolic = false;
    for (int64_t k = start; k < end; ++k) {
      int32_t id = (*dims)[size_t(k)];
      if (id == kUnknownDim)
        return;
      const DimNode &node = table.node(id);
      if (node.op == DimOp::Const) {
        elements.push_back({node.a, Value(), 0});
        continue;
      }
      auto found = inputDim.find(id);
      if (found == inputDim.end())
        return; // an expression of input dims: left as it is
      elements.push_back({0, found->second.first, found->second.second});
      symbolic = true;
    }
    // All constants fold without this pass; an empty shape has nothing to gain.
    if (symbolic && result.getDimSize(0) == int64_t(elements.size()))
      rewrites.push_back({op, std::move(elements)});
  });

  for (auto &[op, elements] : rewrites) {
    OpBuilder b(op);
    Location loc = op.getLoc();
    auto one = RankedTensorType::get({1}, b.getI64Type());
    SmallVector<Value> pieces;
    for (const ShapeElement &e : elements) {
      if (!e.input) {
        pieces.push_back(build(b, loc, "onnx.Constant", {}, one,
                               {b.getNamedAttr("value", DenseElementsAttr::get(
                                                            one, ArrayRef<int64_t>{e.constant}))}));
        continue;
      }
      pieces.push_back(build(b, loc, "onnx.Shape", {e.input}, one,
                             {b.getNamedAttr("start", b.getI64IntegerAttr(e.axis)),
                              b.getNamedAttr("end", b.getI64IntegerAttr(e.axis + 1))}));
    }
    Value shape = pieces.size() == 1
                      ? pieces.front()
                      : build(b, loc, "onnx.Concat", pieces, op.getShape().getType(),
                              {b.getNamedAttr("axis", b.getI64IntegerAttr(0))});
    op.getShape().replaceAllUsesWith(shape);
    op.erase();
  }
  return unsigned(rewrites.size());
}

namespace {

struct OnnxShapesFromInputs : ortc::impl::OnnxShapesFromInputsBase<OnnxShapesFromInputs> {
  void runOnOperation() override { numRewritten += ortc::shapesFromInputsIn(getOperation()); }
};

} // namespace
