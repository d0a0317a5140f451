//===- OnnxDialect.cpp - the onnx dialect ---------------------------------===//

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/DialectImplementation.h"
#include "llvm/ADT/TypeSwitch.h"

using namespace mlir;
using namespace ortc::onnx_dialect;

#include "dialects/onnx/OnnxDialect.cpp.inc"

#define GET_TYPEDEF_CLASSES
#include "dialects/onnx/OnnxTypes.cpp.inc"

void OnnxDialect::registerTypes() {
  addTypes<
#define GET_TYPEDEF_LIST
#include "dialects/onnx/OnnxTypes.cpp.inc"
      >();
}

void OnnxDialect::initialize() {
  registerTypes();
  registerCoreOps(*this);
  registerOpsShard0(*this);
  registerOpsShard1(*this);
  registerOpsShard2(*this);
  registerOpsShard3(*this);
}
