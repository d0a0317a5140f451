//===- Tensor.cpp - element types and tensor views ------------------------===//

#include "runtime/ep/Tensor.h"

#include <cstdlib>
#include <cstring>

namespace ortc {

size_t elementSize(ElementType type) {
  switch (type) {
  case ElementType::Float:
  case ElementType::Int32:
  case ElementType::UInt32:
    return 4;
  case ElementType::UInt8:
  case ElementType::Int8:
  case ElementType::Bool:
  case ElementType::Float8E4M3FN:
  case ElementType::Float8E4M3FNUZ:
  case ElementType::Float8E5M2:
  case ElementType::Float8E5M2FNUZ:
  case ElementType::Float8E8M0:
    return 1;
  case ElementType::UInt16:
  case ElementType::Int16:
  case ElementType::Float16:
  case ElementType::BFloat16:
    return 2;
  case ElementType::Int64:
  case ElementType::Double:
  case ElementType::UInt64:
    return 8;
  case ElementType::UInt4:
  case ElementType::Int4:
  case ElementType::Float4E2M1:
  case ElementType::UInt2:
  case ElementType::Int2:
  case ElementType::Undefined:
    return 0;
  }
  return 0;
}

size_t elementBits(ElementType type) {
  switch (type) {
  case ElementType::UInt4:
  case ElementType::Int4:
  case ElementType::Float4E2M1:
    return 4;
  case ElementType::UInt2:
  case ElementType::Int2:
    return 2;
  default:
    return 8 * elementSize(type);
  }
}

std::string elementTypeName(ElementType type) {
  switch (type) {
  case ElementType::Float:
    return "float32";
  case ElementType::UInt8:
    return "uint8";
  case ElementType::Int8:
    return "int8";
  case ElementType::UInt16:
    return "uint16";
  case ElementType::Int16:
    return "int16";
  case ElementType::Int32:
    return "int32";
  case ElementType::Int64:
    return "int64";
  case ElementType::Bool:
    return "bool";
  case ElementType::Float16:
    return "float16";
  case ElementType::Double:
    return "float64";
  case ElementType::UInt32:
    return "uint32";
  case ElementType::UInt64:
    return "uint64";
  case ElementType::BFloat16:
    return "bfloat16";
  case ElementType::Float8E4M3FN:
    return "float8e4m3fn";
  case ElementType::Float8E4M3FNUZ:
    return "float8e4m3fnuz";
  case ElementType::Float8E5M2:
    return "float8e5m2";
  case ElementType::Float8E5M2FNUZ:
    return "float8e5m2fnuz";
  case ElementType::UInt4:
    return "uint4";
  case ElementType::Int4:
    return "int4";
  case ElementType::Float4E2M1:
    return "float4e2m1";
  case ElementType::Float8E8M0:
    return "float8e8m0";
  case ElementType::UInt2:
    return "uint2";
  case ElementType::Int2:
    return "int2";
  case ElementType::Undefined:
    break;
  }
  return "type " + std::to_string(int(type));
}

std::string shapeToString(const std::vector<int64_t> &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i)
      s += ",";
    s += shape[i] < 0 ? "?" : std::to_string(shape[i]);
  }
  return s + "]";
}

OwnedTensor OwnedTensor::allocate(ElementType type, std::vector<int64_t> shape) {
  OwnedTensor t;
  t.type = type;
  t.shape = std::move(shape);
  size_t bytes = (t.view().byteSize() + 63) / 64 * 64;
  char *data = static_cast<char *>(std::aligned_alloc(64, bytes ? bytes : 64));
  if (data)
    t.data = std::shared_ptr<char>(data, [](char *p) { std::free(p); });
  return t;
}

OwnedTensor OwnedTensor::copyOf(const TensorView &view) {
  OwnedTensor t = allocate(view.type, view.shape);
  if (t.data && view.byteSize())
    std::memcpy(t.data.get(), view.data, view.byteSize());
  return t;
}

std::string valueKindText(ValueKind kind, ElementType element) {
  switch (kind) {
  case ValueKind::Tensor:
    return "a " + elementTypeName(element) + " tensor";
  case ValueKind::Sequence:
    return "a sequence of " + elementTypeName(element) + " tensors";
  case ValueKind::OptionalTensor:
    return "an optional " + elementTypeName(element) + " tensor";
  case ValueKind::OptionalSequence:
    return "an optional sequence of " + elementTypeName(element) + " tensors";
  }
  return "a value of unknown kind";
}

} // namespace ortc
