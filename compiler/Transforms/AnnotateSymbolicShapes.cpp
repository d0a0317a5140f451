//===- AnnotateSymbolicShapes.cpp - ortc-annotate-symbolic-shapes ---------===//
//
// Makes the symbolic shape analysis visible to lit: each op's result dims
// (and the elements of shape values) as strings in attributes.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/SymbolicShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace ortc {
#define GEN_PASS_DEF_ORTCANNOTATESYMBOLICSHAPES
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;

namespace {

struct OrtcAnnotateSymbolicShapes
    : ortc::impl::OrtcAnnotateSymbolicShapesBase<OrtcAnnotateSymbolicShapes> {
  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    ortc::SymbolicShapes shapes(fn);
    Builder builder(fn.getContext());
    auto printElements = [&](ArrayRef<int32_t> elements) {
      std::string text = "[";
      for (size_t i = 0; i < elements.size(); ++i)
        text += (i ? ", " : "") + shapes.print(elements[i]);
      return text + "]";
    };
    fn.walk([&](Operation *op) {
      if (op->getParentOp() != fn.getOperation())
        return;
      SmallVector<Attribute> dims, elements;
      for (Value result : op->getResults()) {
        if (shapes.dims(result))
          dims.push_back(builder.getStringAttr(shapes.print(result)));
        if (const SmallVector<int32_t> *e = shapes.elements(result))
          elements.push_back(builder.getStringAttr(printElements(*e)));
      }
      if (!dims.empty())
        op->setAttr("ortc.dims", builder.getArrayAttr(dims));
      if (!elements.empty())
        op->setAttr("ortc.elements", builder.getArrayAttr(elements));
    });
  }
};

} // namespace
