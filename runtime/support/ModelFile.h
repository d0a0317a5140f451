//===- ModelFile.h - read an ONNX ModelProto from disk ----------*- C++ -*-===//
//
// Streams the file through protobuf (no whole-file buffer, so a model with
// inline weights costs about its size once in memory) and turns every failure
// into a one-line message that names the file.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_SUPPORT_MODELFILE_H
#define ORTC_RUNTIME_SUPPORT_MODELFILE_H

#include <cstddef>
#include <string>

namespace onnx {
class ModelProto;
}

namespace ortc {

/// Parses `path` into `model`. Returns false with a one-line `error` when the
/// file is missing (then `*missing` is set, when given), empty, not a
/// ModelProto, or has no graph.
bool readModelFile(const std::string &path, onnx::ModelProto &model, std::string &error,
                   bool *missing = nullptr);

/// Parses `size` bytes at `data` into `model`; `name` stands for them in the
/// one-line `error` (the same checks as readModelFile).
bool parseModelBuffer(const void *data, size_t size, const std::string &name,
                      onnx::ModelProto &model, std::string &error);

/// The folder that relative paths in the model at `path` are resolved against.
std::string modelDirectory(const std::string &path);

} // namespace ortc

#endif // ORTC_RUNTIME_SUPPORT_MODELFILE_H
