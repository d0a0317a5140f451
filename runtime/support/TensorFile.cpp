//===- TensorFile.cpp - ONNX TensorProto files for tensors ----------------===//

#include "runtime/support/TensorFile.h"

#include "onnx/onnx_pb.h"
#include "onnx/onnx-data_pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <limits>
#include <sys/stat.h>
#include <unistd.h>

namespace ortc {
namespace {

Status invalid(const std::string &path, const std::string &why) {
  return Status::error(StatusCode::InvalidArgument, path + ": " + why);
}

// Parses the file as a TensorProto; streamed like ModelFile.cpp so that a
// large tensor is in memory once.
Status parseFile(const std::string &path, google::protobuf::Message &proto, const char *kind) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::error(StatusCode::NotFound,
                         path + ": cannot open the file: " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return invalid(path, "not a regular file");
  }
  if (st.st_size >= INT_MAX) {
    ::close(fd);
    return invalid(path, std::to_string(st.st_size) + " bytes is over protobuf's 2 GB limit for " +
                             "a " + kind);
  }
  bool parsed;
  {
    google::protobuf::io::FileInputStream stream(fd);
    google::protobuf::io::CodedInputStream coded(&stream);
    coded.SetTotalBytesLimit(INT_MAX);
    parsed = proto.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  }
  ::close(fd);
  if (!parsed)
    return invalid(path, std::string("not an ONNX ") + kind + " (the protobuf does not parse)");
  return Status::ok();
}

// How many values each typed field holds, and the field the data type uses.
enum class TypedField { Float, Int32, Int64, Double, UInt64 };

TypedField typedFieldOf(ElementType type) {
  switch (type) {
  case ElementType::Float:
    return TypedField::Float;
  case ElementType::Int64:
    return TypedField::Int64;
  case ElementType::Double:
    return TypedField::Double;
  case ElementType::UInt32:
  case ElementType::UInt64:
    return TypedField::UInt64;
  default: // int8/16/32, uint8/16, bool; float16, bfloat16 and float8 bits;
           // packed bytes of the sub-byte types
    return TypedField::Int32;
  }
}

int typedCount(const onnx::TensorProto &proto) {
  return proto.float_data_size() + proto.int32_data_size() + proto.int64_data_size() +
         proto.double_data_size() + proto.uint64_data_size() + proto.string_data_size();
}

int typedCount(const onnx::TensorProto &proto, TypedField field) {
  switch (field) {
  case TypedField::Float:
    return proto.float_data_size();
  case TypedField::Int32:
    return proto.int32_data_size();
  case TypedField::Int64:
    return proto.int64_data_size();
  case TypedField::Double:
    return proto.double_data_size();
  case TypedField::UInt64:
    return proto.uint64_data_size();
  }
  return 0;
}

template <typename T> void store(char *out, int64_t i, T value) {
  std::memcpy(out + i * sizeof(T), &value, sizeof(T));
}

// Copies the typed values into `out`, narrowing int32_data and uint64_data
// to the element type as ONNX stores them (float16/bfloat16: the bits).
void copyTyped(const onnx::TensorProto &proto, ElementType type, char *out) {
  switch (typedFieldOf(type)) {
  case TypedField::Float:
    for (int i = 0; i < proto.float_data_size(); ++i)
      store(out, i, proto.float_data(i));
    return;
  case TypedField::Int64:
    for (int i = 0; i < proto.int64_data_size(); ++i)
      store(out, i, proto.int64_data(i));
    return;
  case TypedField::Double:
    for (int i = 0; i < proto.double_data_size(); ++i)
      store(out, i, proto.double_data(i));
    return;
  case TypedField::UInt64:
    for (int i = 0; i < proto.uint64_data_size(); ++i) {
      if (type == ElementType::UInt32)
        store(out, i, uint32_t(proto.uint64_data(i)));
      else
        store(out, i, uint64_t(proto.uint64_data(i)));
    }
    return;
  case TypedField::Int32:
    for (int i = 0; i < proto.int32_data_size(); ++i) {
      int32_t v = proto.int32_data(i);
      switch (elementSize(type)) {
      case 0: // packed sub-byte types: one byte per value
      case 1:
        store(out, i, uint8_t(type == ElementType::Bool ? v != 0 : v));
        break;
      case 2:
        store(out, i, uint16_t(v));
        break;
      default:
        store(out, i, v);
      }
    }
    return;
  }
}

} // namespace

Result<NpyArray> readTensorProto(const std::string &path, std::string *name) {
  onnx::TensorProto proto;
  Status parsed = parseFile(path, proto, "TensorProto");
  if (!parsed.isOk())
    return parsed;
  if (name)
    *name = proto.name();
  return tensorFromProto(proto, path);
}

Result<NpyArray> tensorFromProto(const onnx::TensorProto &proto, const std::string &path) {
  std::string what = proto.name().empty() ? "tensor" : "tensor '" + proto.name() + "'";
  auto fail = [&](const std::string &why) { return invalid(path, what + " " + why); };

  if (proto.data_location() == onnx::TensorProto::EXTERNAL || proto.external_data_size() > 0)
    return fail("keeps its data in an external file; save it with the data inside the .pb "
                "(onnx.numpy_helper.from_array)");
  if (proto.has_segment())
    return fail("is a segment of a larger tensor; segments are not supported");
  if (proto.data_type() == 0)
    return fail("has no data_type (is this an ONNX TensorProto?)");

  NpyArray array;
  array.type = static_cast<ElementType>(proto.data_type());
  if (!isKnownElementType(array.type))
    return fail("has data_type " + std::to_string(proto.data_type()) +
                ", which this runtime does not handle");
  // Sub-byte types: raw_data and int32_data hold packed bytes (ONNX's layout,
  // which is the runtime's too); other types one element per width bytes.
  bool packed = elementBits(array.type) < 8;
  size_t width = packed ? 1 : elementSize(array.type);
  int64_t count = 1;
  for (int64_t dim : proto.dims()) {
    if (dim < 0)
      return fail("has a negative dim " + std::to_string(dim));
    if (dim && count > std::numeric_limits<int64_t>::max() / dim)
      return fail("has dims whose product overflows");
    count *= dim;
    array.shape.push_back(dim);
  }
  std::string type = elementTypeName(array.type) + shapeToString(array.shape);

  if (count > std::numeric_limits<int64_t>::max() / 8)
    return fail("has dims whose product overflows");
  int64_t units = packed ? int64_t(tensorBytes(array.type, count)) : count;
  std::string layout = packed ? std::to_string(count) + " elements packed in " +
                                    std::to_string(units) + " bytes"
                              : std::to_string(count) + " elements of " +
                                    std::to_string(width) + " bytes";
  int typed = typedCount(proto);
  if (proto.has_raw_data()) {
    if (typed)
      return fail("holds both raw_data and typed values");
    size_t bytes = proto.raw_data().size();
    if (bytes % width != 0 || bytes / width != uint64_t(units))
      return fail("is " + type + " (" + layout + ") but its raw_data holds " +
                  std::to_string(bytes) + " bytes");
    array.data.assign(proto.raw_data().begin(), proto.raw_data().end());
  } else {
    int have = typedCount(proto, typedFieldOf(array.type));
    if (have != typed || have != units)
      return fail("is " + type + " (" + layout + ") but holds " + std::to_string(have) +
                  " values in its " + elementTypeName(array.type) + " field" +
                  (have != typed ? " and values in other fields" : ""));
    array.data.resize(size_t(units) * width);
    copyTyped(proto, array.type, array.data.data());
  }
  return array;
}

namespace {

/// The tensors of `protos` as elements of `element` type.
Status appendTensors(const google::protobuf::RepeatedPtrField<onnx::TensorProto> &protos,
                     ElementType element, const std::string &path, SequenceValue &value) {
  for (int k = 0; k < protos.size(); ++k) {
    Result<NpyArray> array = tensorFromProto(protos[k], path);
    if (!array.isOk())
      return array.status();
    if (array.value().type != element)
      return invalid(path, "tensor " + std::to_string(k) + " is " +
                               elementTypeName(array.value().type) + ", the input takes " +
                               elementTypeName(element));
    OwnedTensor t = OwnedTensor::allocate(element, array.value().shape);
    if (!t.data)
      return Status::error(StatusCode::Internal, path + ": out of memory for tensor " +
                                                     std::to_string(k));
    if (!array.value().data.empty())
      std::memcpy(t.data.get(), array.value().data.data(), array.value().data.size());
    value.elements.push_back(std::move(t));
  }
  return Status::ok();
}

/// A SequenceProto of tensors (an empty one may leave elem_type unset).
Status readSequence(const onnx::SequenceProto &proto, ElementType element,
                    const std::string &path, SequenceValue &value) {
  if (proto.elem_type() != onnx::SequenceProto::TENSOR &&
      !(proto.elem_type() == onnx::SequenceProto::UNDEFINED && proto.tensor_values_size() == 0))
    return invalid(path, "the sequence holds elem_type " + std::to_string(proto.elem_type()) +
                             "; sequences of tensors only");
  if (proto.sequence_values_size() || proto.map_values_size() || proto.optional_values_size() ||
      proto.sparse_tensor_values_size())
    return invalid(path, "the sequence holds values other than tensors");
  return appendTensors(proto.tensor_values(), element, path, value);
}

} // namespace

Result<SequenceValue> readContainerProto(const std::string &path, ValueKind kind,
                                         ElementType element, std::string *name) {
  SequenceValue value;
  if (kind == ValueKind::Sequence) {
    onnx::SequenceProto proto;
    if (Status s = parseFile(path, proto, "SequenceProto"); !s.isOk())
      return s;
    if (Status s = readSequence(proto, element, path, value); !s.isOk())
      return s;
    if (name)
      *name = proto.name();
    return value;
  }
  onnx::OptionalProto proto;
  if (Status s = parseFile(path, proto, "OptionalProto"); !s.isOk())
    return s;
  if (name)
    *name = proto.name();
  bool tensorKind = kind == ValueKind::OptionalTensor;
  if (proto.has_sparse_tensor_value() || proto.has_map_value() || proto.has_optional_value() ||
      (tensorKind ? proto.has_sequence_value() : proto.has_tensor_value()))
    return invalid(path, std::string("the optional holds something other than ") +
                             (tensorKind ? "a tensor" : "a sequence of tensors"));
  value.present = tensorKind ? proto.has_tensor_value() : proto.has_sequence_value();
  if (!value.present)
    return value;
  if (tensorKind) {
    google::protobuf::RepeatedPtrField<onnx::TensorProto> one;
    *one.Add() = proto.tensor_value();
    if (Status s = appendTensors(one, element, path, value); !s.isOk())
      return s;
  } else if (Status s = readSequence(proto.sequence_value(), element, path, value); !s.isOk()) {
    return s;
  }
  return value;
}

Status writeContainerProto(const std::string &path, const std::string &name, ValueKind kind,
                           const SequenceValue &value) {
  auto fill = [&](onnx::TensorProto &proto, const OwnedTensor &t) {
    proto.set_data_type(static_cast<int32_t>(t.type));
    for (int64_t dim : t.shape)
      proto.add_dims(dim);
    proto.set_raw_data(t.data.get(), t.view().byteSize());
  };
  size_t bytes = 0;
  for (const OwnedTensor &t : value.elements)
    bytes += t.view().byteSize();
  if (bytes >= size_t(INT_MAX))
    return invalid(path, "a value of " + std::to_string(bytes) +
                             " bytes is over protobuf's 2 GB limit");
  auto fillSequence = [&](onnx::SequenceProto &seq) {
    seq.set_elem_type(onnx::SequenceProto::TENSOR);
    for (const OwnedTensor &t : value.elements)
      fill(*seq.add_tensor_values(), t);
  };
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return invalid(path, "cannot create the file");
  bool written;
  if (kind == ValueKind::Sequence) {
    onnx::SequenceProto proto;
    proto.set_name(name);
    fillSequence(proto);
    written = proto.SerializeToOstream(&out);
  } else {
    onnx::OptionalProto proto;
    proto.set_name(name);
    bool tensorKind = kind == ValueKind::OptionalTensor;
    proto.set_elem_type(tensorKind ? onnx::OptionalProto::TENSOR : onnx::OptionalProto::SEQUENCE);
    if (value.present && tensorKind && !value.elements.empty())
      fill(*proto.mutable_tensor_value(), value.elements[0]);
    else if (value.present && !tensorKind)
      fillSequence(*proto.mutable_sequence_value());
    written = proto.SerializeToOstream(&out);
  }
  if (!written || !out.flush())
    return invalid(path, "write failed");
  return Status::ok();
}

Status writeTensorProto(const std::string &path, const std::string &name,
                        const TensorView &tensor) {
  if (!isKnownElementType(tensor.type))
    return invalid(path, "cannot write " + elementTypeName(tensor.type) + " as a TensorProto");
  if (tensor.byteSize() >= size_t(INT_MAX))
    return invalid(path, "a tensor of " + std::to_string(tensor.byteSize()) +
                             " bytes is over protobuf's 2 GB limit; write .npy instead");
  onnx::TensorProto proto;
  proto.set_name(name);
  proto.set_data_type(static_cast<int32_t>(tensor.type));
  for (int64_t dim : tensor.shape)
    proto.add_dims(dim);
  proto.set_raw_data(static_cast<const char *>(tensor.data), tensor.byteSize());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return invalid(path, "cannot create the file");
  if (!proto.SerializeToOstream(&out) || !out.flush())
    return invalid(path, "write failed");
  return Status::ok();
}

} // namespace ortc
