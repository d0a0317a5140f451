//===- Scan8Form.h - what a Scan-8 node says ---------------------*- C++ -*-===//
//
// Scan-8 has no typed op (its signature differs from opset 9's): it imports
// as onnx.Generic. The passes that rewrite it (onnx-upgrade-scan8,
// onnx-unroll-control-flow) read it here, one way.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_SCAN8FORM_H
#define ORTC_COMPILER_TRANSFORMS_SCAN8FORM_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"
#include "llvm/ADT/SmallVector.h"

#include <optional>

namespace ortc {

/// Whether `op` is an ai.onnx Scan of opset 8 (onnx.Generic).
inline bool isScan8(mlir::Operation *op) {
  if (op->getName().getStringRef() != "onnx.Generic")
    return false;
  auto type = op->getAttrOfType<mlir::StringAttr>("op_type");
  auto domain = op->getAttrOfType<mlir::StringAttr>("domain");
  auto since = op->getAttrOfType<mlir::IntegerAttr>("since_version");
  return type && type.getValue() == "Scan" && domain && domain.getValue().empty() && since &&
         since.getInt() == 8;
}

/// A Scan-8 without sequence_lens (operand 0 left out) whose attributes are
/// num_scan_inputs and directions only, and whose one-block body takes the
/// states and one element of each scan input and gives the results.
struct Scan8Form {
  int64_t numScan = 0, numState = 0;
  llvm::SmallVector<int64_t> directions; // empty: all forward
  mlir::Block *body = nullptr;
};

inline std::optional<Scan8Form> readScan8(mlir::Operation *op) {
  auto attrs = op->getAttrOfType<mlir::DictionaryAttr>("onnx_attrs");
  if (!isScan8(op) || !attrs || op->getNumOperands() < 2 ||
      !mlir::isa<mlir::NoneType>(op->getOperand(0).getType()) || op->getNumRegions() != 1 ||
      !op->getRegion(0).hasOneBlock())
    return std::nullopt;
  for (mlir::NamedAttribute a : attrs)
    if (a.getName() != "num_scan_inputs" && a.getName() != "directions" && a.getName() != "body")
      return std::nullopt;
  auto numScan = attrs.getAs<mlir::IntegerAttr>("num_scan_inputs");
  if (!numScan)
    return std::nullopt;
  Scan8Form form;
  form.numScan = numScan.getInt();
  form.numState = int64_t(op->getNumOperands()) - 1 - form.numScan;
  form.body = &op->getRegion(0).front();
  if (form.numScan < 1 || form.numState < 0 ||
      form.body->getNumArguments() != uint64_t(form.numState + form.numScan) ||
      form.body->getTerminator()->getNumOperands() != op->getNumResults())
    return std::nullopt;
  if (mlir::Attribute dirs = attrs.get("directions")) {
    if (auto dense = mlir::dyn_cast<mlir::DenseI64ArrayAttr>(dirs)) {
      form.directions.assign(dense.asArrayRef().begin(), dense.asArrayRef().end());
    } else if (auto array = mlir::dyn_cast<mlir::ArrayAttr>(dirs)) {
      for (mlir::Attribute d : array) {
        auto i = mlir::dyn_cast<mlir::IntegerAttr>(d);
        if (!i)
          return std::nullopt;
        form.directions.push_back(i.getInt());
      }
    } else {
      return std::nullopt;
    }
  }
  return form;
}

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_SCAN8FORM_H
