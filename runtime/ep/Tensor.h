//===- Tensor.h - element types and tensor views at run time ----*- C++ -*-===//
//
// What the runtime hands to and gets back from a loaded partition: a borrowed
// pointer with an element type and a shape. Element types use ONNX's
// TensorProto.DataType codes so that signatures read straight from the model.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_TENSOR_H
#define ORTC_RUNTIME_EP_TENSOR_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace ortc {

enum class ElementType : int32_t {
  Undefined = 0,
  Float = 1,
  UInt8 = 2,
  Int8 = 3,
  UInt16 = 4,
  Int16 = 5,
  Int32 = 6,
  Int64 = 7,
  Bool = 9,
  Float16 = 10,
  Double = 11,
  UInt32 = 12,
  UInt64 = 13,
  BFloat16 = 16,
};

/// Bytes per element; 0 for Undefined and codes this runtime does not handle.
size_t elementSize(ElementType type);
/// "float32", "int64", ...; "type <code>" for others.
std::string elementTypeName(ElementType type);

/// A tensor the caller owns; the view never extends its life.
struct TensorView {
  void *data = nullptr;
  ElementType type = ElementType::Undefined;
  std::vector<int64_t> shape;

  int64_t numElements() const {
    int64_t n = 1;
    for (int64_t d : shape)
      n *= d;
    return n;
  }
  size_t byteSize() const { return size_t(numElements()) * elementSize(type); }
};

/// A tensor at a partition's boundary. A dim of -1 is the batch dimension,
/// bound when the partition runs.
struct TensorSignature {
  std::string name;
  ElementType type = ElementType::Undefined;
  std::vector<int64_t> shape;
};

/// "[?,3,224,224]" style text for messages.
std::string shapeToString(const std::vector<int64_t> &shape);

} // namespace ortc

#endif // ORTC_RUNTIME_EP_TENSOR_H
