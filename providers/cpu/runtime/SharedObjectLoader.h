//===- SharedObjectLoader.h - load a compiled kernel .so from bytes -*- C++ -*-===//
//
// The CPU blob carries its kernels as an ELF shared object. The loader checks
// the ELF header and that every header and loadable segment lies inside the
// bytes (the dynamic loader maps segments straight from the file, so a short
// file would fault later, not fail now), copies the bytes into a sealed
// memfd and dlopen()s it through /proc/self/fd: no file on disk, no LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_PROVIDERS_CPU_RUNTIME_SHAREDOBJECTLOADER_H
#define ORTC_PROVIDERS_CPU_RUNTIME_SHAREDOBJECTLOADER_H

#include "runtime/ep/Status.h"

#include <cstddef>
#include <memory>
#include <string>

namespace ortc::cpu {

/// One dlopen()ed shared object; unloaded when destroyed. Each load() is a
/// separate copy with its own globals, even for the same bytes.
class LoadedSharedObject {
public:
  /// Loads `size` bytes at `data` (not kept after the call). `what` names the
  /// bytes in error messages, for example "model_ctx.onnx: partition 'p0'".
  static Result<std::unique_ptr<LoadedSharedObject>> load(const char *data, size_t size,
                                                          const std::string &what);

  /// The address of an exported symbol; NotFound if there is none.
  Result<void *> symbol(const std::string &name) const;

  const std::string &what() const { return what_; }

  ~LoadedSharedObject();
  LoadedSharedObject(const LoadedSharedObject &) = delete;
  LoadedSharedObject &operator=(const LoadedSharedObject &) = delete;

private:
  LoadedSharedObject(void *handle, int fd, std::string what)
      : handle_(handle), fd_(fd), what_(std::move(what)) {}

  void *handle_;
  int fd_;
  std::string what_;
};

/// Checks what load() checks before touching the OS: an ELF shared object
/// for this machine, 64-bit, little endian, whose headers and segments lie
/// inside the bytes.
Status checkSharedObjectHeader(const char *data, size_t size, const std::string &what);

} // namespace ortc::cpu

#endif // ORTC_PROVIDERS_CPU_RUNTIME_SHAREDOBJECTLOADER_H
