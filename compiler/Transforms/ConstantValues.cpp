//===- ConstantValues.cpp --------------------------------------------------===//

#include "compiler/Transforms/ConstantValues.h"

#include "dialects/onnx/OnnxDialect.h"
#include "runtime/ep/Tensor.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Operation.h"

#include <algorithm>
#include <cstdint>
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

// The dialect's table is the one mapping; inverting it keeps import, export
// and the EPs' blobs in step.
int32_t onnxElementCode(Type elem) {
  MLIRContext *context = elem.getContext();
  bool onnxLoaded = context->getLoadedDialect("onnx") != nullptr;
  for (int code = 1; code <= 28; ++code) {
    if (code == 8 && !onnxLoaded) // onnx string type: needs the dialect
      continue;
    if (onnx_dialect::elementTypeForOnnxCode(context, code) == elem)
      return code;
  }
  return 0;
}

/// The bytes of a sub-byte constant, packed as the runtime keeps them (see
/// ElementType in runtime/ep/Tensor.h); the importer keeps one element per
/// byte.
static std::optional<std::vector<char>> packedConstantBytes(Operation *constant, RankedTensorType type,
                                                     ElementType elementType) {
  size_t bits = elementBits(elementType);
  int64_t count = type.getNumElements();
  std::vector<uint8_t> fields;
  fields.reserve(size_t(count));
  Attribute value = constant->getAttr("value");
  if (auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != size_t(count))
      return std::nullopt;
    for (char c : blob->getData())
      fields.push_back(uint8_t(c));
  } else if (auto dense = dyn_cast_or_null<DenseElementsAttr>(value)) {
    if (isa<IntegerType>(type.getElementType()))
      for (const APInt &v : dense.getValues<APInt>())
        fields.push_back(uint8_t(v.getZExtValue()));
    else
      for (const APFloat &v : dense.getValues<APFloat>())
        fields.push_back(uint8_t(v.bitcastToAPInt().getZExtValue()));
  } else {
    return std::nullopt;
  }
  if (fields.size() != size_t(count))
    return std::nullopt;
  std::vector<char> out(tensorBytes(elementType, count), 0);
  size_t perByte = 8 / bits;
  uint8_t mask = uint8_t((1u << bits) - 1);
  for (size_t i = 0; i < fields.size(); ++i)
    out[i / perByte] = char(uint8_t(out[i / perByte]) | (fields[i] & mask) << (i % perByte * bits));
  return out;
}

/// The bytes of an onnx.Constant, row-major, one byte per bool.
std::optional<std::vector<char>> constantBytes(Operation *constant) {
  auto type = dyn_cast<RankedTensorType>(constant->getResult(0).getType());
  if (!type || !type.hasStaticShape())
    return std::nullopt;
  int64_t count = type.getNumElements();
  ElementType elementType = ElementType(onnxElementCode(type.getElementType()));
  if (elementBits(elementType) && elementBits(elementType) < 8)
    return packedConstantBytes(constant, type, elementType);
  size_t elementBytes = elementSize(elementType);
  if (!elementBytes)
    return std::nullopt;
  std::vector<char> out(size_t(count) * elementBytes);
  Attribute value = constant->getAttr("value");
  if (auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(value)) {
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob || blob->getData().size() != out.size())
      return std::nullopt;
    if (!out.empty()) // an empty blob's data() may be null
      std::memcpy(out.data(), blob->getData().data(), out.size());
    return out;
  }
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(value)) {
    if (type.getElementType().isInteger(1)) {
      int64_t i = 0;
      for (bool b : dense.getValues<bool>())
        out[i++] = b ? 1 : 0;
      return out;
    }
    ArrayRef<char> raw = dense.getRawData();
    if (dense.isSplat()) {
      if (raw.size() < elementBytes)
        return std::nullopt;
      for (int64_t i = 0; i < count; ++i)
        std::memcpy(out.data() + i * elementBytes, raw.data(), elementBytes);
      return out;
    }
    if (raw.size() != out.size())
      return std::nullopt;
    if (!out.empty()) // an empty raw buffer's data() may be null
      std::memcpy(out.data(), raw.data(), out.size());
    return out;
  }
  if (auto f = constant->getAttrOfType<FloatAttr>("value_float")) {
    float v = float(f.getValueAsDouble());
    std::memcpy(out.data(), &v, 4);
    return out;
  }
  if (auto fs = constant->getAttrOfType<DenseF32ArrayAttr>("value_floats")) {
    std::memcpy(out.data(), fs.asArrayRef().data(), out.size());
    return out;
  }
  if (auto ints = getConstantIntValues(constant->getResult(0))) {
    std::memcpy(out.data(), ints->data(), out.size());
    return out;
  }
  return std::nullopt;
}

std::optional<ConstantBytes> constantBytesInPlace(Operation *constant) {
  auto type = dyn_cast<RankedTensorType>(constant->getResult(0).getType());
  if (type && type.hasStaticShape() && !type.getElementType().isInteger(1)) {
    ElementType elementType = ElementType(onnxElementCode(type.getElementType()));
    size_t elementBytes = elementSize(elementType);
    bool wholeBytes = elementBytes && !(elementBits(elementType) && elementBits(elementType) < 8);
    size_t size = size_t(type.getNumElements()) * elementBytes;
    // In place only where an element can be read where it lies: an external
    // data file's offsets need not be aligned.
    auto usable = [&](ArrayRef<char> bytes) {
      size_t alignment = std::min<size_t>(elementBytes, 8);
      return wholeBytes && size && bytes.size() == size &&
             reinterpret_cast<uintptr_t>(bytes.data()) % alignment == 0;
    };
    Attribute value = constant->getAttr("value");
    if (auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(value)) {
      AsmResourceBlob *blob = resource.getRawHandle().getBlob();
      if (blob && usable(blob->getData()))
        return ConstantBytes(blob->getData());
    } else if (auto dense = dyn_cast_or_null<DenseElementsAttr>(value)) {
      if (!dense.isSplat() && usable(dense.getRawData()))
        return ConstantBytes(dense.getRawData());
    }
  }
  if (std::optional<std::vector<char>> bytes = constantBytes(constant))
    return ConstantBytes(std::move(*bytes));
  return std::nullopt;
}

} // namespace ortc
