//===- ExternalData.cpp ----------------------------------------------------===//

#include "runtime/support/ExternalData.h"

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ortc {
namespace {

std::string realPath(const std::string &path) {
  char buffer[PATH_MAX];
  if (!::realpath(path.c_str(), buffer))
    return {};
  return buffer;
}

bool hasDotDotComponent(const std::string &location) {
  size_t start = 0;
  while (start <= location.size()) {
    size_t end = location.find('/', start);
    if (end == std::string::npos)
      end = location.size();
    if (location.compare(start, end - start, "..") == 0 && end - start == 2)
      return true;
    start = end + 1;
  }
  return false;
}

} // namespace

bool resolveFileBesideModel(const std::string &modelDir, const std::string &location,
                            std::string &resolved, std::string &error) {
  if (location.empty()) {
    error = "empty location";
    return false;
  }
  if (location.find('\0') != std::string::npos) {
    error = "location contains a NUL byte";
    return false;
  }
  if (location.front() == '/' || location.front() == '\\') {
    error = "location '" + location +
            "' is an absolute path; only paths relative to "
            "the model's folder are allowed";
    return false;
  }
  if (location.find('\\') != std::string::npos) {
    error = "location '" + location + "' contains a backslash; use '/' separators";
    return false;
  }
  if (hasDotDotComponent(location)) {
    error = "location '" + location +
            "' contains a '..' component; it must stay in "
            "the model's folder";
    return false;
  }
  std::string dir = realPath(modelDir.empty() ? "." : modelDir);
  if (dir.empty()) {
    error = "cannot resolve the model's folder '" + modelDir + "': " + std::strerror(errno);
    return false;
  }
  std::string joined = dir + "/" + location;
  std::string target = realPath(joined);
  if (target.empty()) {
    error = "cannot open '" + joined + "': " + std::strerror(errno);
    return false;
  }
  if (target.compare(0, dir.size(), dir) != 0 ||
      (target.size() > dir.size() && target[dir.size()] != '/' && dir != "/")) {
    error = "location '" + location + "' resolves to '" + target +
            "', outside the model's folder '" + dir + "' (through a symlink)";
    return false;
  }
  struct stat st;
  if (::stat(target.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
    error = "location '" + location + "' is not a regular file";
    return false;
  }
  resolved = target;
  return true;
}

std::shared_ptr<MappedFile> MappedFile::open(const std::string &path, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    error = "cannot open '" + path + "': " + std::strerror(errno);
    return nullptr;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    error = "cannot stat '" + path + "': " + std::strerror(errno);
    ::close(fd);
    return nullptr;
  }
  std::shared_ptr<MappedFile> file(new MappedFile());
  file->path_ = path;
  file->size_ = static_cast<std::uint64_t>(st.st_size);
  if (file->size_ > 0) {
    void *base = ::mmap(nullptr, file->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (base == MAP_FAILED) {
      error = "cannot map '" + path + "': " + std::strerror(errno);
      ::close(fd);
      return nullptr;
    }
    file->base_ = base;
  }
  ::close(fd);
  return file;
}

MappedFile::~MappedFile() {
  if (base_)
    ::munmap(base_, size_);
}

} // namespace ortc
