//===- ConstantValues.cpp --------------------------------------------------===//

#include "compiler/Transforms/ConstantValues.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Operation.h"

#include <cstring>

using namespace mlir;

namespace ortc {

std::optional<SmallVector<int64_t>> getConstantIntValues(Value value) {
  Operation *op = value.getDefiningOp();
  if (!op || op->getName().getStringRef() != "onnx.Constant")
    return std::nullopt;
  if (auto single = op->getAttrOfType<IntegerAttr>("value_int"))
    return SmallVector<int64_t>{single.getInt()};
  if (auto list = op->getAttrOfType<DenseI64ArrayAttr>("value_ints"))
    return SmallVector<int64_t>(list.asArrayRef());
  Attribute attr = op->getAttr("value");
  if (auto dense = dyn_cast_or_null<DenseIntElementsAttr>(attr)) {
    SmallVector<int64_t> out;
    for (const APInt &v : dense.getValues<APInt>())
      out.push_back(v.getSExtValue());
    return out;
  }
  auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(attr);
  if (!resource)
    return std::nullopt;
  AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  auto type = resource.getType();
  if (!blob || !type.hasStaticShape())
    return std::nullopt;
  unsigned width = type.getElementType().getIntOrFloatBitWidth();
  if (!type.getElementType().isInteger() || (width != 32 && width != 64))
    return std::nullopt;
  ArrayRef<char> data = blob->getData();
  int64_t count = type.getNumElements();
  if (static_cast<int64_t>(data.size()) != count * width / 8)
    return std::nullopt;
  SmallVector<int64_t> out;
  for (int64_t i = 0; i < count; ++i) {
    if (width == 64) {
      int64_t v;
      std::memcpy(&v, data.data() + i * 8, 8);
      out.push_back(v);
    } else {
      int32_t v;
      std::memcpy(&v, data.data() + i * 4, 4);
      out.push_back(v);
    }
  }
  return out;
}

} // namespace ortc
