//===- HostTensor.cpp ------------------------------------------------------===//

#include "compiler/Transforms/HostTensor.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Operation.h"

#include <cstring>

using namespace mlir;

namespace ortc {

bool isHostElementType(Type type) {
  return type && (type.isF32() || type.isF64() || type.isSignlessInteger(64) ||
                  type.isSignlessInteger(32) || type.isSignlessInteger(1));
}

bool HostTensor::isFloat() const { return isa<FloatType>(elementType); }

int64_t HostTensor::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

HostTensor HostTensor::make(ArrayRef<int64_t> shape, Type elementType) {
  HostTensor t;
  t.shape.assign(shape.begin(), shape.end());
  t.elementType = elementType;
  if (t.isFloat())
    t.floats.resize(t.numElements());
  else
    t.ints.resize(t.numElements());
  return t;
}

Attribute HostTensor::toAttribute() const {
  auto type = RankedTensorType::get(shape, elementType);
  if (elementType.isF32()) {
    SmallVector<float> values(floats.begin(), floats.end());
    return DenseElementsAttr::get(type, ArrayRef<float>(values));
  }
  if (elementType.isF64())
    return DenseElementsAttr::get(type, ArrayRef<double>(floats));
  if (elementType.isSignlessInteger(1)) {
    SmallVector<bool> values;
    for (int64_t v : ints)
      values.push_back(v != 0);
    return DenseElementsAttr::get(type, ArrayRef<bool>(values));
  }
  if (elementType.isSignlessInteger(32)) {
    SmallVector<int32_t> values(ints.begin(), ints.end());
    return DenseElementsAttr::get(type, ArrayRef<int32_t>(values));
  }
  return DenseElementsAttr::get(type, ArrayRef<int64_t>(ints));
}

namespace {

// Reads `count` elements of `elem` from little-endian bytes.
void readRaw(HostTensor &t, const char *data, int64_t count) {
  Type elem = t.elementType;
  for (int64_t i = 0; i < count; ++i) {
    if (elem.isF32()) {
      float v;
      std::memcpy(&v, data + 4 * i, 4);
      t.floats[i] = v;
    } else if (elem.isF64()) {
      std::memcpy(&t.floats[i], data + 8 * i, 8);
    } else if (elem.isSignlessInteger(64)) {
      std::memcpy(&t.ints[i], data + 8 * i, 8);
    } else if (elem.isSignlessInteger(32)) {
      int32_t v;
      std::memcpy(&v, data + 4 * i, 4);
      t.ints[i] = v;
    } else { // i1, one byte each
      t.ints[i] = data[i] != 0;
    }
  }
}

size_t storageBytes(Type elem) {
  return elem.isSignlessInteger(1) ? 1 : elem.getIntOrFloatBitWidth() / 8;
}

} // namespace

std::optional<HostTensor> readHostTensor(Value v, int64_t maxElements) {
  Operation *op = v.getDefiningOp();
  if (!op || op->getName().getStringRef() != "onnx.Constant")
    return std::nullopt;
  Builder b(op->getContext());
  if (auto f = op->getAttrOfType<FloatAttr>("value_float")) {
    HostTensor t = HostTensor::make({}, b.getF32Type());
    t.floats[0] = f.getValueAsDouble();
    return t;
  }
  if (auto i = op->getAttrOfType<IntegerAttr>("value_int")) {
    HostTensor t = HostTensor::make({}, b.getI64Type());
    t.ints[0] = i.getInt();
    return t;
  }
  if (auto fs = op->getAttrOfType<DenseF32ArrayAttr>("value_floats")) {
    if (fs.size() > maxElements)
      return std::nullopt;
    HostTensor t = HostTensor::make({static_cast<int64_t>(fs.size())}, b.getF32Type());
    for (int64_t k = 0; k < fs.size(); ++k)
      t.floats[k] = fs[k];
    return t;
  }
  if (auto is = op->getAttrOfType<DenseI64ArrayAttr>("value_ints")) {
    if (is.size() > maxElements)
      return std::nullopt;
    HostTensor t = HostTensor::make({static_cast<int64_t>(is.size())}, b.getI64Type());
    for (int64_t k = 0; k < is.size(); ++k)
      t.ints[k] = is[k];
    return t;
  }
  return readHostAttribute(op->getAttr("value"), maxElements);
}

std::optional<HostTensor> readHostAttribute(Attribute value, int64_t maxElements) {
  auto attr = dyn_cast_or_null<ElementsAttr>(value);
  if (!attr)
    return std::nullopt;
  auto type = dyn_cast<RankedTensorType>(attr.getType());
  if (!type || !type.hasStaticShape() || !isHostElementType(type.getElementType()) ||
      type.getNumElements() > maxElements)
    return std::nullopt;
  HostTensor t = HostTensor::make(type.getShape(), type.getElementType());
  int64_t count = type.getNumElements();
  if (auto dense = dyn_cast<DenseElementsAttr>(attr)) {
    int64_t k = 0;
    if (t.isFloat())
      for (const APFloat &f : dense.getValues<APFloat>())
        t.floats[k++] = f.convertToDouble();
    else if (t.elementType.isSignlessInteger(1))
      for (bool bit : dense.getValues<bool>())
        t.ints[k++] = bit;
    else
      for (const APInt &i : dense.getValues<APInt>())
        t.ints[k++] = i.getSExtValue();
    return t;
  }
  if (auto resource = dyn_cast<DenseResourceElementsAttr>(attr)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != count * storageBytes(t.elementType))
      return std::nullopt;
    readRaw(t, blob->getData().data(), count);
    return t;
  }
  return std::nullopt;
}

} // namespace ortc
