//===- CompileEp.cpp -------------------------------------------------------===//

#include "compiler/EP/CompileEp.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Location.h"

using namespace mlir;

namespace ortc {

std::vector<Operation *> CompileEp::claimNodes(func::FuncOp) const { return {}; }

std::pair<std::string, std::string> onnxOpTypeAndDomain(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (name == "onnx.Generic") {
    auto type = op->getAttrOfType<StringAttr>("op_type");
    auto domain = op->getAttrOfType<StringAttr>("domain");
    std::string d = domain ? domain.getValue().str() : "";
    return {type ? type.getValue().str() : "", d.empty() ? "ai.onnx" : d};
  }
  if (name.consume_front("ortc."))
    return {name.str(), "ortc"};
  if (name.consume_front("onnx.ml."))
    return {name.str(), "ai.onnx.ml"};
  if (name.consume_front("onnx."))
    return {name.str(), "ai.onnx"};
  return {name.str(), op->getName().getDialectNamespace().str()};
}

bool isFreeOnnxOp(Operation *op) {
  StringRef name = op->getName().getStringRef();
  return name == "onnx.Constant" || name == "onnx.NoValue";
}

bool isPlaceableOp(Operation *op) {
  StringRef dialect = op->getDialect() ? op->getDialect()->getNamespace() : "";
  return (dialect == "onnx" || dialect == "ortc") && !isFreeOnnxOp(op) &&
         !op->hasTrait<OpTrait::IsTerminator>();
}

std::string onnxNodeName(Operation *op) {
  Location loc = op->getLoc();
  if (auto fused = dyn_cast<FusedLoc>(loc))
    for (Location inner : fused.getLocations())
      if (isa<NameLoc>(inner)) {
        loc = inner;
        break;
      }
  if (auto named = dyn_cast<NameLoc>(loc))
    return named.getName().str();
  return onnxOpTypeAndDomain(op).first;
}

NodeQuery NodeQuery::fromOp(Operation *op) {
  NodeQuery q;
  q.op = op;
  q.node = onnxNodeName(op);
  std::tie(q.opType, q.domain) = onnxOpTypeAndDomain(op);
  if (auto since = op->getAttrOfType<IntegerAttr>("since_version")) {
    q.opset = since.getInt();
  } else if (auto module = op->getParentOfType<ModuleOp>()) {
    if (auto opsets = module->getAttrOfType<DictionaryAttr>("onnx.opset_import"))
      if (auto version = opsets.getAs<IntegerAttr>(q.domain))
        q.opset = version.getInt();
  }
  if (q.opset == 0 && q.domain == "ortc")
    q.opset = 1; // ortc's own (fused) ops: version 1, no opset import names them
  for (Value operand : op->getOperands()) {
    q.inputTypes.push_back(operand.getType());
    q.inputLayouts.push_back(TensorLayout::RowMajor);
  }
  return q;
}

DeclineReason NodeQuery::decline(const std::string &ep, RejectedKind kind, std::string rejected,
                                 std::string accepts, std::string remediation) const {
  DeclineReason r;
  r.node = node;
  r.op = opType;
  r.domain = domain;
  r.opset = opset;
  r.ep = ep;
  r.kind = kind;
  r.rejected = std::move(rejected);
  r.accepts = std::move(accepts);
  r.remediation = std::move(remediation);
  return r;
}

} // namespace ortc
