//===- OrtcDialect.cpp - the ortc dialect ---------------------------------===//

#include "dialects/ortc/OrtcDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/OpImplementation.h"

using namespace mlir;
using namespace ortc::fused;

#include "dialects/ortc/OrtcDialect.cpp.inc"

#define GET_OP_CLASSES
#include "dialects/ortc/OrtcOps.cpp.inc"

void OrtcDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "dialects/ortc/OrtcOps.cpp.inc"
      >();
}
