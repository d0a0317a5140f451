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
#include <memory>
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
  // 8-bit floats, one per byte.
  Float8E4M3FN = 17,
  Float8E4M3FNUZ = 18,
  Float8E5M2 = 19,
  Float8E5M2FNUZ = 20,
  // Sub-byte types, packed as ONNX stores them: element i of a tensor sits in
  // byte i / k at bit (i % k) * bits (k = 2 for 4-bit types, 4 for 2-bit
  // types, low bits first); the last byte's unused bits are zero.
  UInt4 = 21,
  Int4 = 22,
  Float4E2M1 = 23,
  Float8E8M0 = 24,
  UInt2 = 25,
  Int2 = 26,
};

/// Bytes per element; 0 for Undefined, for codes this runtime does not handle
/// and for the sub-byte types (whose size is elementBits; see tensorBytes).
size_t elementSize(ElementType type);
/// Bits per element: 8 * elementSize, 4 or 2 for the sub-byte types, 0 for
/// Undefined and codes this runtime does not handle.
size_t elementBits(ElementType type);
/// True for the types this runtime handles (elementBits != 0).
inline bool isKnownElementType(ElementType type) { return elementBits(type) != 0; }
/// Bytes that `count` packed elements take (rounded up to whole bytes).
inline size_t tensorBytes(ElementType type, int64_t count) {
  return (size_t(count) * elementBits(type) + 7) / 8;
}
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
  size_t byteSize() const { return tensorBytes(type, numElements()); }
};

/// What a value at a boundary is: a tensor, or a container of tensors
/// (SequenceValue.h) passed as a view whose data is the container. The codes
/// are the CPU plan's ContainerKind.
enum class ValueKind : int8_t {
  Tensor = 0,
  Sequence = 1,         // seq(tensor)
  OptionalTensor = 2,   // optional(tensor)
  OptionalSequence = 3, // optional(seq(tensor))
};
/// "a sequence of float32", "an optional float32 tensor", ...
std::string valueKindText(ValueKind kind, ElementType element);

/// A tensor at a partition's boundary. A dim of -1 is the batch dimension,
/// bound when the partition runs. A container has the element type of its
/// tensors and an empty shape.
struct TensorSignature {
  std::string name;
  ElementType type = ElementType::Undefined;
  std::vector<int64_t> shape;
  ValueKind kind = ValueKind::Tensor;
  /// A graph input's dim_param per dim ("" for none); dims of one name are
  /// one symbol, bound once per run. Empty when no dim is named.
  std::vector<std::string> dimNames;
};

/// A host tensor with its own bytes (64-byte aligned), shared by copies: what
/// a session allocates for an output, an element of a sequence.
struct OwnedTensor {
  std::shared_ptr<char> data; // null when allocate() ran out of memory
  ElementType type = ElementType::Undefined;
  std::vector<int64_t> shape;

  /// Uninitialized bytes for `shape` (at least 64, so data is set for an
  /// empty tensor too).
  static OwnedTensor allocate(ElementType type, std::vector<int64_t> shape);
  /// A copy of `view`'s bytes; data is null when memory ran out.
  static OwnedTensor copyOf(const TensorView &view);
  TensorView view() const { return TensorView{data.get(), type, shape}; }
};

/// "[?,3,224,224]" style text for messages.
std::string shapeToString(const std::vector<int64_t> &shape);

} // namespace ortc

#endif // ORTC_RUNTIME_EP_TENSOR_H
