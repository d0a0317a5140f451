//===- OnnxSchemaOps3.cpp - shard 3 of the generated ONNX ops ----------===//
//
// The typed ops are split in shards (see utils/gen_onnx_dialect.py) so that
// their generated C++ compiles in parallel and a change rebuilds one shard.
//
//===----------------------------------------------------------------------===//

#include "dialects/onnx/OnnxOps.h"

#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace ortc::onnx_dialect;

#define GET_OP_CLASSES
#include "dialects/onnx/OnnxSchemaOps3.cpp.inc"

void ortc::onnx_dialect::registerOpsShard3(OnnxDialect &dialect) {
  dialect.addOpsFromShard<
#define GET_OP_LIST
#include "dialects/onnx/OnnxSchemaOps3.cpp.inc"
      >();
}
