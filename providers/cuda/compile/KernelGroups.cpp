//===- KernelGroups.cpp - which ops of a partition share a CUDA kernel ----===//

#include "providers/cuda/compile/KernelGroups.h"

#include "compiler/Lowering/LowerToLinalg.h"
#include "compiler/Transforms/SymbolicShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/IRMapping.h"

using namespace mlir;

namespace ortc::cuda {

namespace {
bool isConstant(Operation *op) { return op && op->getName().getStringRef() == "onnx.Constant"; }
bool isNoValue(Operation *op) { return op && op->getName().getStringRef() == "onnx.NoValue"; }

/// Whether the onnx.Constant's value is one repeated element.
bool isSplatConstant(Operation *op) {
  if (!isConstant(op))
    return false;
  if (op->getAttr("value_float") || op->getAttr("value_int"))
    return true;
  auto type = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (type && type.hasStaticShape() && type.getNumElements() == 1)
    return true;
  auto dense = dyn_cast_or_null<DenseElementsAttr>(op->getAttr("value"));
  return dense && dense.isSplat();
}
} // namespace

bool isKernelOp(Operation *op) {
  return !isConstant(op) && !isNoValue(op) && isLowerableElementwiseOp(op);
}

bool isInlinedConstant(Value value) { return isSplatConstant(value.getDefiningOp()); }

std::vector<KernelGroup> formKernelGroups(func::FuncOp fn, const SymbolicShapes &shapes) {
  std::vector<KernelGroup> groups;
  KernelGroup open;
  llvm::SmallPtrSet<Operation *, 16> members;
  auto close = [&] {
    if (open.ops.empty())
      return;
    for (Operation *op : open.ops)
      for (Value operand : op->getOperands()) {
        Operation *def = operand.getDefiningOp();
        if (def && members.count(def))
          continue;
        if (isNoValue(def) || isInlinedConstant(operand))
          open.inlined.insert(def);
        else
          open.inputs.insert(operand);
      }
    for (Operation *op : open.ops)
      for (Value result : op->getResults())
        for (Operation *user : result.getUsers())
          if (!members.count(user)) {
            open.outputs.insert(result);
            break;
          }
    groups.push_back(std::move(open));
    open = KernelGroup();
    members.clear();
  };
  auto sameDims = [&](Value a, Value b) {
    const auto *da = shapes.dims(a), *db = shapes.dims(b);
    return da && db && *da == *db;
  };
  auto accepts = [&](Operation *op) {
    if (open.ops.empty())
      return true;
    Value groupResult = open.ops.front()->getResult(0);
    if (op->getResult(0).getType() != groupResult.getType() ||
        !sameDims(op->getResult(0), groupResult))
      return false;
    for (Value operand : op->getOperands()) {
      Operation *def = operand.getDefiningOp();
      if (def && members.count(def))
        return true;
      if (isConstant(def) || isNoValue(def))
        continue;
      for (Operation *member : open.ops)
        if (llvm::is_contained(member->getOperands(), operand))
          return true;
    }
    return false;
  };
  for (Operation &op : fn.getBody().front().without_terminator()) {
    if (isConstant(&op) || isNoValue(&op))
      continue;
    if (isKernelOp(&op)) {
      if (!accepts(&op))
        close();
      open.ops.push_back(&op);
      members.insert(&op);
      continue;
    }
    bool readsGroup = llvm::any_of(op.getOperands(), [&](Value v) {
      Operation *def = v.getDefiningOp();
      return def && members.count(def);
    });
    if (readsGroup)
      close();
  }
  close();
  return groups;
}

func::FuncOp buildKernelFunction(const KernelGroup &group, ModuleOp module, StringRef name) {
  OpBuilder builder(module.getBodyRegion());
  builder.setInsertionPointToEnd(module.getBody());
  Location loc = group.ops.front()->getLoc();
  SmallVector<Type> argTypes, resultTypes;
  for (Value v : group.inputs)
    argTypes.push_back(v.getType());
  for (Value v : group.outputs)
    resultTypes.push_back(v.getType());
  auto kernel =
      func::FuncOp::create(builder, loc, name, builder.getFunctionType(argTypes, resultTypes));
  kernel.setPrivate();
  kernel->setAttr("ortc.cuda.kernel", builder.getUnitAttr());
  Block *body = kernel.addEntryBlock();
  builder.setInsertionPointToStart(body);
  IRMapping mapping;
  for (auto [i, v] : llvm::enumerate(group.inputs))
    mapping.map(v, body->getArgument(i));
  for (Operation *c : group.inlined)
    builder.clone(*c, mapping);
  for (Operation *op : group.ops)
    builder.clone(*op, mapping);
  SmallVector<Value> results;
  for (Value v : group.outputs)
    results.push_back(mapping.lookup(v));
  func::ReturnOp::create(builder, loc, results);
  return kernel;
}

} // namespace ortc::cuda
