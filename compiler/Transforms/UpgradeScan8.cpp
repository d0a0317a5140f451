//===- UpgradeScan8.cpp - onnx-upgrade-scan8 ------------------------------===//
//
// Scan-8 runs its body over a batch: every state and scan input has a
// leading batch dim, each batch element is scanned on its own (scan inputs'
// sequence dim second), and the results are stacked over the batch. Without
// sequence_lens that is a Loop over the batch whose body takes element b of
// every input and runs a Scan (opset 9 semantics) on it; the Loop's scan
// outputs stack the per-element results along a new leading dim, which is
// the batch dim Scan-8 gives. Then If/Loop/Scan run as sub-plans (or unroll
// where static), and nothing after this pass knows Scan-8.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/OpQueries.h"
#include "compiler/Transforms/Scan8Form.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"

namespace ortc {
#define GEN_PASS_DEF_ONNXUPGRADESCAN8
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace {

/// `type` without its leading (batch) dim; unranked when it has no rank.
Type perElementType(Type type) {
  if (auto ranked = dyn_cast<RankedTensorType>(type); ranked && ranked.getRank() > 0)
    return RankedTensorType::get(ranked.getShape().drop_front(), ranked.getElementType());
  if (auto tensor = dyn_cast<TensorType>(type))
    return UnrankedTensorType::get(tensor.getElementType());
  return type;
}

bool upgrade(Operation *op) {
  // With sequence_lens the length varies per batch element: not here.
  std::optional<ortc::Scan8Form> form = ortc::readScan8(op);
  if (!form)
    return false;
  int64_t numScan = form->numScan, numState = form->numState;
  const SmallVector<int64_t> &directions = form->directions;

  MLIRContext *ctx = op->getContext();
  std::string base = ortc::nodeNameOf(op, "Scan");
  auto named = [&](const std::string &what) {
    return Location(NameLoc::get(StringAttr::get(ctx, base + "/" + what), op->getLoc()));
  };
  auto make = [](OpBuilder &b, Location loc, StringRef name, ValueRange operands,
                 TypeRange results, ArrayRef<NamedAttribute> named = {}) {
    OperationState state(loc, name);
    state.addOperands(operands);
    state.addTypes(results);
    state.addAttributes(named);
    return b.create(state);
  };
  OpBuilder b(op);
  Type i64 = RankedTensorType::get({}, b.getI64Type());
  Type i1 = RankedTensorType::get({}, b.getI1Type());
  // The batch: dim 0 of the first scan input.
  Value firstScan = op->getOperand(1 + numState);
  Value shape = make(b, named("batch_shape"), "onnx.Shape", {firstScan},
                     {RankedTensorType::get({ShapedType::kDynamic}, b.getI64Type())},
                     {b.getNamedAttr("start", b.getI64IntegerAttr(0))})
                    ->getResult(0);
  auto zeroType = RankedTensorType::get({}, b.getI64Type());
  Value zero = make(b, named("batch_index"), "onnx.Constant", {}, {zeroType},
                    {b.getNamedAttr("value", DenseIntElementsAttr::get(zeroType, int64_t(0)))})
                   ->getResult(0);
  Value batch = make(b, named("batch"), "onnx.Gather", {shape, zero}, {i64},
                     {b.getNamedAttr("axis", b.getI64IntegerAttr(0))})
                    ->getResult(0);
  Value none = make(b, named("no_condition"), "onnx.NoValue", {}, {b.getNoneType()})->getResult(0);

  // Loop(batch) with no carried values: every Scan-8 result is a scan output.
  OperationState loopState(named("batch_loop"), "onnx.Loop");
  loopState.addOperands({batch, none});
  loopState.addTypes(op->getResultTypes());
  loopState.addRegion();
  Operation *loop = b.create(loopState);
  Block *loopBody = b.createBlock(&loop->getRegion(0));
  Value index = loopBody->addArgument(i64, op->getLoc());
  Value cond = loopBody->addArgument(i1, op->getLoc());
  b.setInsertionPointToStart(loopBody);
  SmallVector<Value> elements;
  for (auto [k, input] : llvm::enumerate(op->getOperands().drop_front())) {
    elements.push_back(make(b, named("element" + std::to_string(k)), "onnx.Gather",
                            {input, index}, {perElementType(input.getType())},
                            {b.getNamedAttr("axis", b.getI64IntegerAttr(0))})
                           ->getResult(0));
  }
  SmallVector<Type> perElement;
  for (Type t : op->getResultTypes())
    perElement.push_back(perElementType(t));
  SmallVector<NamedAttribute> scanAttrs{
      b.getNamedAttr("num_scan_inputs", b.getI64IntegerAttr(numScan))};
  if (!directions.empty())
    scanAttrs.push_back(
        b.getNamedAttr("scan_input_directions", b.getDenseI64ArrayAttr(directions)));
  OperationState scanState(named("scan"), "onnx.Scan");
  scanState.addOperands(elements);
  scanState.addTypes(perElement);
  scanState.addAttributes(scanAttrs);
  Region *scanBody = scanState.addRegion();
  scanBody->takeBody(op->getRegion(0));
  Operation *scan = b.create(scanState);
  SmallVector<Value> yielded{cond};
  yielded.append(scan->getResults().begin(), scan->getResults().end());
  make(b, named("yield"), "onnx.Yield", yielded, {});

  op->replaceAllUsesWith(loop->getResults());
  op->erase();
  return true;
}

struct OnnxUpgradeScan8 : ortc::impl::OnnxUpgradeScan8Base<OnnxUpgradeScan8> {
  void runOnOperation() override {
    SmallVector<Operation *> scans;
    getOperation().walk([&](Operation *op) {
      if (ortc::isScan8(op))
        scans.push_back(op);
    });
    // Post-order: a Scan-8 inside another's body is upgraded before that
    // body moves into the new Scan.
    for (Operation *op : scans)
      numUpgraded += upgrade(op);
  }
};

} // namespace
