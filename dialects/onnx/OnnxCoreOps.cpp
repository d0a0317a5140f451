//===- OnnxCoreOps.cpp - NoValue, Yield and Generic -----------------------===//

#include "dialects/onnx/OnnxOps.h"

#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace ortc::onnx_dialect;

#define GET_OP_CLASSES
#include "dialects/onnx/OnnxCoreOps.cpp.inc"

LogicalResult GenericOp::verify() {
  if (getOpType().empty())
    return emitOpError("needs a non-empty op_type");
  size_t numNames = getRegionNames() ? getRegionNames()->size() : 0;
  if (numNames != getGraphs().size())
    return emitOpError("has ") << getGraphs().size() << " regions but " << numNames
                               << " region_names";
  return success();
}

void ortc::onnx_dialect::registerCoreOps(OnnxDialect &dialect) {
  dialect.addOpsFromShard<
#define GET_OP_LIST
#include "dialects/onnx/OnnxCoreOps.cpp.inc"
      >();
}
