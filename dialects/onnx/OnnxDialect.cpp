//===- OnnxDialect.cpp - the onnx dialect ---------------------------------===//

#include "dialects/onnx/OnnxDialect.h"

#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
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

// TensorProto.DataType codes, as numbers so that the dialect needs no protobuf.
Type ortc::onnx_dialect::elementTypeForOnnxCode(MLIRContext *context, int code) {
  Builder b(context);
  switch (code) {
  // clang-format off
  case 1:  return b.getF32Type();                      // FLOAT
  case 2:  return b.getIntegerType(8, /*isSigned=*/false); // UINT8
  case 3:  return b.getIntegerType(8);                 // INT8
  case 4:  return b.getIntegerType(16, false);         // UINT16
  case 5:  return b.getIntegerType(16);                // INT16
  case 6:  return b.getIntegerType(32);                // INT32
  case 7:  return b.getIntegerType(64);                // INT64
  case 8:  return StringType::get(context);            // STRING
  case 9:  return b.getI1Type();                       // BOOL
  case 10: return b.getF16Type();                      // FLOAT16
  case 11: return b.getF64Type();                      // DOUBLE
  case 12: return b.getIntegerType(32, false);         // UINT32
  case 13: return b.getIntegerType(64, false);         // UINT64
  case 14: return ComplexType::get(b.getF32Type());    // COMPLEX64
  case 15: return ComplexType::get(b.getF64Type());    // COMPLEX128
  case 16: return b.getBF16Type();                     // BFLOAT16
  case 17: return Float8E4M3FNType::get(context);      // FLOAT8E4M3FN
  case 18: return Float8E4M3FNUZType::get(context);    // FLOAT8E4M3FNUZ
  case 19: return Float8E5M2Type::get(context);        // FLOAT8E5M2
  case 20: return Float8E5M2FNUZType::get(context);    // FLOAT8E5M2FNUZ
  case 21: return b.getIntegerType(4, false);          // UINT4
  case 22: return b.getIntegerType(4);                 // INT4
  case 23: return Float4E2M1FNType::get(context);      // FLOAT4E2M1
  case 24: return Float8E8M0FNUType::get(context);     // FLOAT8E8M0
  case 25: return b.getIntegerType(2, false);          // UINT2
  case 26: return b.getIntegerType(2);                 // INT2
  case 27: return Float6E2M3FNType::get(context);      // FLOAT6E2M3
  case 28: return Float6E3M2FNType::get(context);      // FLOAT6E3M2
  // clang-format on
  default:
    return nullptr;
  }
}
