//===- TensorImport.cpp - ONNX TensorProto to MLIR attributes -------------===//

#include "compiler/Import/TensorImport.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/OnnxSchema.h"
#include "runtime/support/ExternalData.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/AsmState.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cstring>
#include <limits>

using namespace mlir;

namespace ortc {

Type tensorElementType(MLIRContext &context, int code) {
  return onnx_dialect::elementTypeForOnnxCode(&context, code);
}

namespace {

// How a data type is laid out: in our blobs (one element per `storageBytes`),
// and packed in ONNX raw data (`elementsPerRawByte` > 1 for sub-byte types).
struct Layout {
  size_t storageBytes = 0;
  unsigned elementsPerRawByte = 1;
};

Layout layoutOf(int code) {
  switch (code) {
  case 1:
  case 6:
  case 12:
    return {4, 1};
  case 2:
  case 3:
  case 9:
  case 17:
  case 18:
  case 19:
  case 20:
  case 24:
    return {1, 1};
  case 4:
  case 5:
  case 10:
  case 16:
    return {2, 1};
  case 7:
  case 11:
  case 13:
  case 14:
    return {8, 1};
  case 15:
    return {16, 1};
  case 21:
  case 22:
  case 23:
    return {1, 2};
  case 25:
  case 26:
    return {1, 4};
  default:
    return {0, 0}; // string, float6 (no packing defined here yet)
  }
}

// Resource keys must be bare identifiers; keep the tensor's name readable.
std::string blobKey(const std::string &name) {
  std::string key = name.empty() ? "tensor" : name;
  for (char &c : key)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_' && c != '.')
      c = '_';
  if (std::isdigit(static_cast<unsigned char>(key[0])) || key[0] == '.')
    key = "t_" + key;
  return key;
}

size_t alignmentFor(size_t storageBytes) { return std::min<size_t>(storageBytes, 8); }

bool isAligned(const void *ptr, size_t alignment) {
  return reinterpret_cast<uintptr_t>(ptr) % alignment == 0;
}

// Expands packed sub-byte elements to one per byte (low bits first, as ONNX packs).
void unpackSubByte(const uint8_t *src, uint8_t *dst, int64_t count, unsigned perByte) {
  unsigned bits = 8 / perByte;
  uint8_t mask = static_cast<uint8_t>((1u << bits) - 1);
  for (int64_t i = 0; i < count; ++i)
    dst[i] = (src[i / perByte] >> (bits * (i % perByte))) & mask;
}

} // namespace

TensorImporter::TensorImporter(MLIRContext &context, std::string modelDir)
    : context(context), modelDir(std::move(modelDir)) {}
TensorImporter::~TensorImporter() = default;

FailureOr<std::shared_ptr<MappedFile>> TensorImporter::mapExternal(const std::string &location,
                                                                   const std::string &what) {
  std::string resolved, reason;
  if (!resolveFileBesideModel(modelDir, location, resolved, reason))
    return fail(what + ": external data " + reason);
  auto found = mappedFiles.find(resolved);
  if (found != mappedFiles.end())
    return found->second;
  auto file = MappedFile::open(resolved, reason);
  if (!file)
    return fail(what + ": external data " + reason);
  mappedFiles[resolved] = file;
  return file;
}

FailureOr<Attribute> TensorImporter::importTensor(onnx::TensorProto &tensor,
                                                  const std::string &what) {
  int code = tensor.data_type();
  Type elem = tensorElementType(context, code);
  if (!elem || code == onnx::TensorProto::UNDEFINED)
    return fail(what + ": unknown element type " + std::to_string(code));
  SmallVector<int64_t> shape;
  int64_t count = 1;
  for (int64_t dim : tensor.dims()) {
    if (dim < 0)
      return fail(what + ": negative dimension " + std::to_string(dim));
    if (dim != 0 && count > std::numeric_limits<int64_t>::max() / 16 / dim)
      return fail(what + ": the element count overflows");
    count *= dim;
    shape.push_back(dim);
  }
  auto type = RankedTensorType::get(shape, elem);

  if (code == onnx::TensorProto::STRING) {
    if (tensor.data_location() == onnx::TensorProto::EXTERNAL)
      return fail(what + ": string tensors in external data are not supported");
    if (tensor.string_data_size() != count)
      return fail(what + ": has " + std::to_string(tensor.string_data_size()) +
                  " strings, the shape needs " + std::to_string(count));
    SmallVector<StringRef> strings(tensor.string_data().begin(), tensor.string_data().end());
    return Attribute(DenseStringElementsAttr::get(type, strings));
  }

  Layout layout = layoutOf(code);
  if (!layout.storageBytes)
    return fail(what + ": tensors of type " + onnx_dialect::onnxDataTypeName(code) +
                " cannot be imported yet");
  const size_t storageSize = static_cast<size_t>(count) * layout.storageBytes;
  const size_t rawSize = layout.elementsPerRawByte == 1
                             ? storageSize
                             : (count + layout.elementsPerRawByte - 1) / layout.elementsPerRawByte;
  const size_t alignment = alignmentFor(layout.storageBytes);
  std::string key = blobKey(tensor.name());

  // Builds the attribute over bytes that are already in ONNX's packed layout.
  auto fromRawBytes = [&](const char *data,
                          AsmResourceBlob::DeleterFn deleter) -> FailureOr<Attribute> {
    if (layout.elementsPerRawByte == 1 && isAligned(data, alignment)) {
      AsmResourceBlob blob(ArrayRef<char>(data, storageSize), alignment, std::move(deleter),
                           /*dataIsMutable=*/false);
      return Attribute(DenseResourceElementsAttr::get(type, key, std::move(blob)));
    }
    AsmResourceBlob copy = HeapAsmResourceBlob::allocate(storageSize, alignment);
    char *dst = copy.getMutableData().data();
    if (layout.elementsPerRawByte == 1)
      std::memcpy(dst, data, storageSize);
    else
      unpackSubByte(reinterpret_cast<const uint8_t *>(data), reinterpret_cast<uint8_t *>(dst),
                    count, layout.elementsPerRawByte);
    if (deleter)
      deleter(const_cast<char *>(data), rawSize, 1);
    return Attribute(DenseResourceElementsAttr::get(type, key, std::move(copy)));
  };

  if (tensor.data_location() == onnx::TensorProto::EXTERNAL) {
    std::string location;
    uint64_t offset = 0, length = 0;
    bool hasLength = false;
    for (const auto &entry : tensor.external_data()) {
      try {
        if (entry.key() == "location")
          location = entry.value();
        else if (entry.key() == "offset")
          offset = std::stoull(entry.value());
        else if (entry.key() == "length") {
          length = std::stoull(entry.value());
          hasLength = true;
        }
      } catch (const std::exception &) {
        return fail(what + ": external data field '" + entry.key() + "' is not a number: '" +
                    entry.value() + "'");
      }
    }
    if (location.empty())
      return fail(what + ": external data has no 'location'");
    auto file = mapExternal(location, what);
    if (failed(file))
      return failure();
    if (!hasLength)
      length = rawSize;
    if (length != rawSize)
      return fail(what + ": external data length " + std::to_string(length) +
                  " does not match the " + std::to_string(rawSize) +
                  " bytes its shape and type need");
    if (offset > (*file)->size() || length > (*file)->size() - offset)
      return fail(what + ": external data [" + std::to_string(offset) + ", +" +
                  std::to_string(length) + ") is past the end of '" + location + "' (" +
                  std::to_string((*file)->size()) + " bytes)");
    if (rawSize == 0)
      return Attribute(
          DenseResourceElementsAttr::get(type, key, HeapAsmResourceBlob::allocate(0, alignment)));
    std::shared_ptr<MappedFile> keepAlive = *file;
    return fromRawBytes((*file)->data() + offset,
                        [keepAlive](void *, size_t, size_t) mutable { keepAlive.reset(); });
  }

  if (tensor.has_raw_data()) {
    if (tensor.raw_data().size() != rawSize)
      return fail(what + ": raw_data has " + std::to_string(tensor.raw_data().size()) +
                  " bytes, its shape and type need " + std::to_string(rawSize));
    if (rawSize == 0)
      return Attribute(
          DenseResourceElementsAttr::get(type, key, HeapAsmResourceBlob::allocate(0, alignment)));
    // Take the bytes out of the proto: the blob owns them from here on.
    std::string *raw = tensor.release_raw_data();
    return fromRawBytes(raw->data(), [raw](void *, size_t, size_t) { delete raw; });
  }

  // Typed repeated fields: check the count before allocating anything (the
  // dims of a hostile tensor can claim any size), then convert.
  using TP = onnx::TensorProto;
  int64_t have = 0, want = count;
  const char *field = "int32_data";
  switch (code) {
  case TP::FLOAT:
  case TP::COMPLEX64:
    have = tensor.float_data_size(), field = "float_data";
    want = code == TP::FLOAT ? count : 2 * count;
    break;
  case TP::DOUBLE:
  case TP::COMPLEX128:
    have = tensor.double_data_size(), field = "double_data";
    want = code == TP::DOUBLE ? count : 2 * count;
    break;
  case TP::INT64:
    have = tensor.int64_data_size(), field = "int64_data";
    break;
  case TP::UINT32:
  case TP::UINT64:
    have = tensor.uint64_data_size(), field = "uint64_data";
    break;
  default:
    have = tensor.int32_data_size();
    want = layout.elementsPerRawByte == 1 ? count : static_cast<int64_t>(rawSize);
  }
  if (have != want)
    return fail(what + ": " + field + " has " + std::to_string(have) +
                " values, its shape and type need " + std::to_string(want));
  AsmResourceBlob blob = HeapAsmResourceBlob::allocate(storageSize, alignment);
  if (storageSize == 0) // an empty repeated field's data() may be null
    return Attribute(DenseResourceElementsAttr::get(type, key, std::move(blob)));
  char *dst = blob.getMutableData().data();
  using TP = onnx::TensorProto;
  switch (code) {
  case TP::FLOAT:
  case TP::COMPLEX64:
    std::memcpy(dst, tensor.float_data().data(), storageSize);
    break;
  case TP::DOUBLE:
  case TP::COMPLEX128:
    std::memcpy(dst, tensor.double_data().data(), storageSize);
    break;
  case TP::INT64:
    std::memcpy(dst, tensor.int64_data().data(), storageSize);
    break;
  case TP::UINT32:
  case TP::UINT64:
    for (int64_t i = 0; i < count; ++i) {
      uint64_t v = tensor.uint64_data(i);
      std::memcpy(dst + i * layout.storageBytes, &v, layout.storageBytes);
    }
    break;
  default: {
    // int32_data holds every narrower type, one element (or, for sub-byte
    // types, one packed byte) per entry, little end first.
    if (layout.elementsPerRawByte == 1) {
      for (int64_t i = 0; i < count; ++i) {
        int32_t v = tensor.int32_data(i);
        std::memcpy(dst + i * layout.storageBytes, &v, layout.storageBytes);
      }
    } else {
      std::vector<uint8_t> packed(rawSize);
      for (size_t i = 0; i < rawSize; ++i)
        packed[i] = static_cast<uint8_t>(tensor.int32_data(i));
      unpackSubByte(packed.data(), reinterpret_cast<uint8_t *>(dst), count,
                    layout.elementsPerRawByte);
    }
    break;
  }
  }
  return Attribute(DenseResourceElementsAttr::get(type, key, std::move(blob)));
}

} // namespace ortc
