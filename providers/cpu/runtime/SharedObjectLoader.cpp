//===- SharedObjectLoader.cpp - load a compiled kernel .so from bytes -----===//
//
// Nothing is handed to the OS before the header checks pass. The memfd is
// sealed against writes and size changes before dlopen(), so the mapped code
// cannot change (or shrink under the mapping, which would be SIGBUS) later.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/runtime/SharedObjectLoader.h"

#include <cerrno>
#include <cstring>
#include <string>

#include <dlfcn.h>
#include <elf.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

namespace ortc::cpu {
namespace {

#if defined(__x86_64__)
constexpr uint16_t kHostMachine = EM_X86_64;
#elif defined(__aarch64__)
constexpr uint16_t kHostMachine = EM_AARCH64;
#else
constexpr uint16_t kHostMachine = EM_NONE; // refuses every blob
#endif

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "the ELF header is read in host order, which must be little endian");

Status invalid(const std::string &what, const std::string &problem) {
  return Status::error(StatusCode::InvalidArgument, what + ": " + problem);
}

std::string machineName(uint16_t machine) {
  switch (machine) {
  case EM_X86_64:
    return "x86_64";
  case EM_AARCH64:
    return "aarch64";
  case EM_386:
    return "i386";
  case EM_RISCV:
    return "riscv";
  case EM_PPC64:
    return "ppc64";
  default:
    return "machine " + std::to_string(machine);
  }
}

/// [offset, offset + count * entrySize) lies inside `size` bytes, without
/// overflowing.
bool rangeInside(uint64_t offset, uint64_t count, uint64_t entrySize, size_t size) {
  if (offset > size)
    return false;
  if (entrySize != 0 && count > (size - offset) / entrySize)
    return false;
  return true;
}

/// dlerror() text on one line (it has none today; a future glibc might).
std::string lastDlError() {
  const char *text = dlerror();
  std::string line = text ? text : "unknown dlerror";
  for (char &c : line)
    if (c == '\n' || c == '\r')
      c = ' ';
  return line;
}

Status writeAll(int fd, const char *data, size_t size, const std::string &what) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return Status::error(StatusCode::Internal, what + ": writing the shared object to a memfd: " +
                                                     std::strerror(n < 0 ? errno : EIO));
    data += n;
    size -= size_t(n);
  }
  return Status::ok();
}

} // namespace

Status checkSharedObjectHeader(const char *data, size_t size, const std::string &what) {
  if (!data || size < SELFMAG || std::memcmp(data, ELFMAG, SELFMAG) != 0)
    return invalid(what, "the kernel code is not an ELF file (bad magic)");
  Elf64_Ehdr header;
  if (size < sizeof(header))
    return invalid(what, "the kernel code is truncated: " + std::to_string(size) +
                             " bytes, shorter than an ELF header");
  std::memcpy(&header, data, sizeof(header));
  if (header.e_ident[EI_CLASS] != ELFCLASS64)
    return invalid(what, "the kernel code is not a 64-bit ELF file");
  if (header.e_ident[EI_DATA] != ELFDATA2LSB)
    return invalid(what, "the kernel code is not a little-endian ELF file");
  if (header.e_ident[EI_VERSION] != EV_CURRENT || header.e_version != EV_CURRENT)
    return invalid(what, "the kernel code has an unknown ELF version");
  if (header.e_type != ET_DYN)
    return invalid(what, "the kernel code is not an ELF shared object (e_type " +
                             std::to_string(header.e_type) + ")");
  if (header.e_machine != kHostMachine)
    return invalid(what, "the kernel code is for " + machineName(header.e_machine) +
                             ", but this host is " + machineName(kHostMachine));
  if (header.e_phentsize != sizeof(Elf64_Phdr) || header.e_phnum == 0)
    return invalid(what, "the kernel code has no valid ELF program headers");
  if (!rangeInside(header.e_phoff, header.e_phnum, sizeof(Elf64_Phdr), size))
    return invalid(what, "the kernel code is truncated: its program headers end past its " +
                             std::to_string(size) + " bytes");
  for (uint16_t i = 0; i < header.e_phnum; ++i) {
    Elf64_Phdr segment;
    std::memcpy(&segment, data + header.e_phoff + uint64_t(i) * sizeof(Elf64_Phdr),
                sizeof(segment));
    if (!rangeInside(segment.p_offset, 1, segment.p_filesz, size))
      return invalid(what, "the kernel code is truncated: segment " + std::to_string(i) +
                               " ends past its " + std::to_string(size) + " bytes");
  }
  // The dynamic loader never reads section headers, but they end the file,
  // which makes them the first thing a truncation cuts off.
  if (header.e_shoff != 0) {
    if (header.e_shentsize != sizeof(Elf64_Shdr))
      return invalid(what, "the kernel code has malformed ELF section headers");
    uint64_t count = header.e_shnum == 0 ? 1 : header.e_shnum; // 0: extended numbering
    if (!rangeInside(header.e_shoff, count, sizeof(Elf64_Shdr), size))
      return invalid(what, "the kernel code is truncated: its section headers end past its " +
                               std::to_string(size) + " bytes");
  }
  return Status::ok();
}

Result<std::unique_ptr<LoadedSharedObject>>
LoadedSharedObject::load(const char *data, size_t size, const std::string &what) {
  if (Status checked = checkSharedObjectHeader(data, size, what); !checked.isOk())
    return checked;

  int fd = ::memfd_create("ortc-cpu-kernels", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  if (fd < 0)
    return Status::error(StatusCode::Internal,
                         what + ": memfd_create failed: " + std::strerror(errno));
  if (Status written = writeAll(fd, data, size, what); !written.isOk()) {
    ::close(fd);
    return written;
  }
  // Best effort: a kernel without sealing still loads correctly.
  (void)::fcntl(fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL);

  std::string path = "/proc/self/fd/" + std::to_string(fd);
  // glibc matches loaded objects by name first; an object loaded earlier
  // through a recycled fd number that dlclose() could not unload would be
  // returned instead of ours. Move to a fresh fd number until none is.
  for (int attempt = 0; void *stale = ::dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD);) {
    ::dlclose(stale);
    int moved = ::fcntl(fd, F_DUPFD_CLOEXEC, fd + 1);
    ::close(fd);
    if (moved < 0 || ++attempt == 16) {
      if (moved >= 0)
        ::close(moved);
      return Status::error(StatusCode::Internal,
                           what + ": no fresh file descriptor to load the kernel code from");
    }
    fd = moved;
    path = "/proc/self/fd/" + std::to_string(fd);
  }

  dlerror(); // clear a stale error
  void *handle = ::dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!handle) {
    std::string error = lastDlError();
    ::close(fd);
    return invalid(what, "loading the kernel code failed: " + error);
  }
  return std::unique_ptr<LoadedSharedObject>(new LoadedSharedObject(handle, fd, what));
}

Result<void *> LoadedSharedObject::symbol(const std::string &name) const {
  dlerror();
  void *address = ::dlsym(handle_, name.c_str());
  if (!address)
    return Status::error(StatusCode::NotFound, what_ + ": the kernel code has no symbol '" + name +
                                                   "': " + lastDlError());
  return address;
}

LoadedSharedObject::~LoadedSharedObject() {
  ::dlclose(handle_);
  ::close(fd_);
}

} // namespace ortc::cpu
