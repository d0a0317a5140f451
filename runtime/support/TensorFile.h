//===- TensorFile.h - ONNX TensorProto files for tensors --------*- C++ -*-===//
//
// `ortc run` also reads and writes tensors as serialized onnx.TensorProto
// messages, the format of the ONNX backend tests' test_data_set_*/input_0.pb.
// Reading takes raw_data or the typed field the data type uses
// (float_data, int32_data, int64_data, double_data, uint64_data); writing
// always uses raw_data. The array type is Npy.h's, so callers handle both
// formats alike. Sub-byte types (int4, uint4, float4e2m1, int2, uint2) stay
// packed as ONNX stores them, which is the runtime's layout too.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_SUPPORT_TENSORFILE_H
#define ORTC_RUNTIME_SUPPORT_TENSORFILE_H

#include "runtime/ep/Status.h"
#include "runtime/ep/SequenceValue.h"
#include "runtime/ep/Tensor.h"
#include "runtime/support/Npy.h"

#include <string>

namespace onnx {
class TensorProto;
}

namespace ortc {

/// Reads the TensorProto in `path`. Refuses, with one line naming the file: a
/// file that is missing, not a regular file or over protobuf's 2 GB; bytes
/// that do not parse; a tensor without a data type or of one this runtime
/// does not handle (strings, complex, float6, ...); external data;
/// segments; a negative dim; a value count or raw_data size that does not
/// match the dims; both raw_data and typed values. `name`, when given,
/// receives the tensor's name (may be empty).
Result<NpyArray> readTensorProto(const std::string &path, std::string *name = nullptr);

/// Writes `tensor` as a TensorProto named `name` (dims, data_type, raw_data,
/// little endian) to `path`.
Status writeTensorProto(const std::string &path, const std::string &name, const TensorView &tensor);

/// The checks of readTensorProto on a parsed message; `path` names it in
/// messages.
Result<NpyArray> tensorFromProto(const onnx::TensorProto &proto, const std::string &path);

/// Reads a sequence (a SequenceProto of tensors) or an optional (an
/// OptionalProto of a tensor or of such a sequence) as the value of an input
/// of `kind` whose tensors are `element`s, with readTensorProto's checks on
/// each tensor and one line naming the file on any refusal.
Result<SequenceValue> readContainerProto(const std::string &path, ValueKind kind,
                                         ElementType element, std::string *name = nullptr);

/// Writes `value` as a SequenceProto (kind Sequence) or OptionalProto (the
/// optional kinds) named `name`, its tensors as raw_data.
Status writeContainerProto(const std::string &path, const std::string &name, ValueKind kind,
                           const SequenceValue &value);

} // namespace ortc

#endif // ORTC_RUNTIME_SUPPORT_TENSORFILE_H
