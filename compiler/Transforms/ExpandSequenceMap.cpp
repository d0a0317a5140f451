//===- ExpandSequenceMap.cpp - onnx-expand-sequence-map -------------------===//
//
// SequenceMap(s0, extra...) { body } is, by ONNX's function definition of it:
//
//   n = SequenceLength(s0)
//   outs = Loop(n, <no cond>, SequenceEmpty(T_k)...) {
//     (i, cond, acc_k...):
//       e_j = SequenceAt(s_j, i) for each sequence input, t_j for a tensor one
//       r_k = body(e_j...)
//       yield cond, SequenceInsert(acc_k, r_k)...
//   }
//
// The Loop and the sequence ops are what the EPs run.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/FunctionTypes.h"
#include "compiler/Transforms/OpQueries.h"
#include "compiler/Transforms/ShapeRules/SequenceTypes.h"
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/OnnxOps.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/IRMapping.h"

namespace ortc {
#define GEN_PASS_DEF_ONNXEXPANDSEQUENCEMAP
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace {

/// An op by name, as the importer makes them; `loc` names the node.
Operation *makeOp(OpBuilder &b, Location loc, StringRef name, ValueRange operands,
                  TypeRange results, ArrayRef<NamedAttribute> attrs = {}, unsigned regions = 0) {
  OperationState state(loc, name);
  state.addOperands(operands);
  state.addTypes(results);
  state.addAttributes(attrs);
  for (unsigned r = 0; r < regions; ++r)
    state.addRegion();
  return b.create(state);
}

/// The element type of SequenceMap output `k`: the declared sequence's, else
/// what the body yields; null when neither says.
Type outputElement(Operation *op, unsigned k, Operation *yield) {
  if (TensorType t = ortc::containerElementType(op->getResult(k).getType());
      t && !isa<TensorType>(op->getResult(k).getType()))
    return t.getElementType();
  if (auto t = dyn_cast<TensorType>(yield->getOperand(k).getType()))
    return t.getElementType();
  return nullptr;
}

/// Expands one SequenceMap; false (nothing changed) when a type is unknown.
bool expand(Operation *op) {
  Region &region = op->getRegion(0);
  if (!region.hasOneBlock() || op->getNumOperands() == 0)
    return false;
  Block &body = region.front();
  Operation *yield = body.getTerminator();
  if (body.getNumArguments() != op->getNumOperands() || !yield ||
      yield->getNumOperands() != op->getNumResults())
    return false;
  MLIRContext *ctx = op->getContext();
  // Each new op is a node of its own name (symbols the data decides are
  // named by their node): "<map>/SequenceAt1", ...
  std::string base = ortc::nodeNameOf(op, "SequenceMap");
  auto named = [&](const std::string &what) {
    return Location(NameLoc::get(StringAttr::get(ctx, base + "/" + what), op->getLoc()));
  };
  Location loc = named("Loop");
  SmallVector<Type> accTypes;
  SmallVector<int64_t> codes;
  for (unsigned k = 0; k < op->getNumResults(); ++k) {
    Type element = outputElement(op, k, yield);
    int code = element ? ortc::onnxElementCode(element) : 0;
    if (!code)
      return false;
    accTypes.push_back(od::SeqType::get(ctx, UnrankedTensorType::get(element)));
    codes.push_back(code);
  }
  for (Value v : op->getOperands())
    if (!isa<od::SeqType>(v.getType()) && !isa<TensorType>(v.getType()))
      return false; // an unknown input: sequence or tensor?

  OpBuilder b(op);
  Type i64 = RankedTensorType::get({}, b.getI64Type());
  Type i1 = RankedTensorType::get({}, b.getI1Type());
  Value none = makeOp(b, loc, "onnx.NoValue", {}, {b.getNoneType()})->getResult(0);
  Value length = makeOp(b, named("SequenceLength"), "onnx.SequenceLength", {op->getOperand(0)},
                        {i64})
                     ->getResult(0);
  SmallVector<Value> loopOperands{length, none};
  for (auto [k, type, code] : llvm::enumerate(accTypes, codes))
    loopOperands.push_back(
        makeOp(b, named("SequenceEmpty" + std::to_string(k)), "onnx.SequenceEmpty", {}, {type},
               {b.getNamedAttr("dtype", b.getI64IntegerAttr(code))})
            ->getResult(0));
  Operation *loop = makeOp(b, loc, "onnx.Loop", loopOperands, accTypes, {}, 1);
  Block *loopBody = b.createBlock(&loop->getRegion(0));
  Value index = loopBody->addArgument(i64, loc);
  Value cond = loopBody->addArgument(i1, loc);
  SmallVector<Value> accs;
  for (Type t : accTypes)
    accs.push_back(loopBody->addArgument(t, loc));

  // Element i of each sequence input, a tensor input whole; then the body.
  b.setInsertionPointToStart(loopBody);
  IRMapping mapping;
  for (auto [j, arg, input] : llvm::enumerate(body.getArguments(), op->getOperands())) {
    Value element = input;
    if (isa<od::SeqType>(input.getType()))
      element = makeOp(b, named("SequenceAt" + std::to_string(j)), "onnx.SequenceAt",
                       {input, index},
                       {UnrankedTensorType::get(
                           ortc::containerElementType(input.getType()).getElementType())})
                    ->getResult(0);
    mapping.map(arg, element);
  }
  for (Operation &nested : body.without_terminator())
    b.clone(nested, mapping);
  SmallVector<Value> yielded{cond};
  for (auto [k, acc] : llvm::enumerate(accs))
    yielded.push_back(makeOp(b, named("SequenceInsert" + std::to_string(k)), "onnx.SequenceInsert",
                             {acc, mapping.lookupOrDefault(yield->getOperand(k)), none},
                             {acc.getType()})
                          ->getResult(0));
  makeOp(b, loc, "onnx.Yield", yielded, {});
  // The Loop's results are sequences of unknown element shape; inference
  // refines them (and keeps the declared types where they say more).
  for (auto [result, replacement] : llvm::zip(op->getResults(), loop->getResults())) {
    if (result.getType() != replacement.getType() && !isa<od::UnknownType>(result.getType()))
      replacement.setType(result.getType());
    result.replaceAllUsesWith(replacement);
  }
  op->erase();
  return true;
}

struct OnnxExpandSequenceMap
    : ortc::impl::OnnxExpandSequenceMapBase<OnnxExpandSequenceMap> {
  void runOnOperation() override {
    SmallVector<Operation *> maps;
    getOperation().walk([&](Operation *op) {
      if (op->getName().getStringRef() == "onnx.SequenceMap")
        maps.push_back(op);
    });
    // Inner ones first (the walk is post-order), so that a body cloned into
    // a Loop holds no SequenceMap left to find.
    bool any = false;
    for (Operation *op : maps)
      if (expand(op)) {
        ++numExpanded;
        any = true;
      }
    // A map returned by the function may now have a more precise type.
    if (any)
      ortc::syncFunctionResultTypes(getOperation());
  }
};

} // namespace
