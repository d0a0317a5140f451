//===- ExternalData.h - safe access to files beside a model -----*- C++ -*-===//
//
// ONNX external data and EPContext sidecars name files relative to the model's
// folder. Both the compiler and the runtime resolve them here, with the same
// rules: a plain relative path, no `..`, and no symlink that leads outside the
// folder. Plain C++17, no LLVM: the runtime links this.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_SUPPORT_EXTERNALDATA_H
#define ORTC_RUNTIME_SUPPORT_EXTERNALDATA_H

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace ortc {

/// Resolves `location` against `modelDir`. On success returns true and sets
/// `resolved` to the canonical path of an existing regular file inside the
/// folder; otherwise returns false with a one-line reason in `error`.
bool resolveFileBesideModel(const std::string &modelDir, const std::string &location,
                            std::string &resolved, std::string &error);

/// A read-only memory map of a whole file. Pages are touched only when read, so
/// mapping large weight files costs no resident memory up front.
class MappedFile {
public:
  static std::shared_ptr<MappedFile> open(const std::string &path, std::string &error);
  ~MappedFile();
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  const char *data() const { return static_cast<const char *>(base_); }
  std::uint64_t size() const { return size_; }
  const std::string &path() const { return path_; }

private:
  MappedFile() = default;
  void *base_ = nullptr;
  std::uint64_t size_ = 0;
  std::string path_;
};

} // namespace ortc

#endif // ORTC_RUNTIME_SUPPORT_EXTERNALDATA_H
