//===- ClaimHonesty.cpp ----------------------------------------------------===//

#include "compiler/Partition/ClaimHonesty.h"

#include "compiler/Transforms/SymbolicShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/IRMapping.h"
#include "llvm/ADT/SetVector.h"

using namespace mlir;

namespace ortc {
namespace {

/// A module holding `op` alone in `@<ep>_claim`, with its non-constant inputs
/// as arguments and its results returned.
OwningOpRef<ModuleOp> outlineSingleNode(ModuleOp original, Operation *op, StringRef ep,
                                        const SymbolicShapes &shapes, func::FuncOp &fn) {
  OpBuilder builder(op->getContext());
  OwningOpRef<ModuleOp> module = ModuleOp::create(op->getLoc());
  module->getOperation()->setAttrs(original->getAttrDictionary());
  llvm::SetVector<Value> inputs;
  llvm::SetVector<Operation *> constants;
  op->walk([&](Operation *nested) {
    for (Value v : nested->getOperands()) {
      Operation *def = v.getDefiningOp();
      if (def && (def == op || op->isAncestor(def)))
        continue;
      if (!def && op->isAncestor(v.getParentBlock()->getParentOp()))
        continue;
      if (def && isFreeOnnxOp(def))
        constants.insert(def);
      else
        inputs.insert(v);
    }
  });
  builder.setInsertionPointToEnd(module->getBody());
  // Omitted outputs (type none) carry no value; a partition never returns them.
  SmallVector<Type> resultTypes;
  for (Type type : op->getResultTypes())
    if (!isa<NoneType>(type))
      resultTypes.push_back(type);
  fn = func::FuncOp::create(builder, op->getLoc(), (ep + "_claim").str(),
                            builder.getFunctionType(TypeRange(inputs.getArrayRef()), resultTypes));
  fn->setAttr("ortc.ep", builder.getStringAttr(ep));
  annotateDimSymbols(fn, inputs.getArrayRef(), shapes); // as the partitioner does
  Block *entry = fn.addEntryBlock();
  IRMapping mapping;
  for (auto [value, arg] : llvm::zip(inputs, entry->getArguments()))
    mapping.map(value, arg);
  builder.setInsertionPointToStart(entry);
  for (Operation *constant : constants)
    builder.clone(*constant, mapping);
  Operation *copy = builder.clone(*op, mapping);
  SmallVector<Value> results;
  for (Value result : copy->getResults())
    if (!isa<NoneType>(result.getType()))
      results.push_back(result);
  func::ReturnOp::create(builder, op->getLoc(), results);
  return module;
}

} // namespace

ClaimHonestyResult checkClaimHonesty(ModuleOp module, ArrayRef<CompileEp *> eps,
                                     const CompiledClaimCheck &check) {
  ClaimHonestyResult result;
  auto main = module.lookupSymbol<func::FuncOp>("main_graph");
  if (!main || main.getBody().empty())
    return result;
  SymbolicShapes shapes(main);
  for (Operation &op : main.getBody().front()) {
    if (!isPlaceableOp(&op))
      continue;
    NodeQuery query = NodeQuery::fromOp(&op);
    query.shapes = &shapes;
    for (CompileEp *ep : eps) {
      if (!ep->supportsOp(query).isSupported())
        continue;
      ++result.claims;
      func::FuncOp fn;
      OwningOpRef<ModuleOp> single = outlineSingleNode(module, &op, ep->name(), shapes, fn);
      std::string message;
      ScopedDiagnosticHandler handler(module.getContext(), [&](Diagnostic &diag) {
        if (message.empty())
          message = diag.str();
        return success();
      });
      FailureOr<std::unique_ptr<CompiledPartition>> compiled = ep->compilePartition(fn);
      if (failed(compiled) || !*compiled) {
        result.failures.push_back({ep->name(), query.node, query.opType,
                                   message.empty() ? "compilePartition failed" : message});
        continue;
      }
      if (check) {
        std::string failure = check(*ep, std::move(**compiled));
        if (!failure.empty())
          result.failures.push_back({ep->name(), query.node, query.opType, failure});
      }
    }
  }
  return result;
}

} // namespace ortc
