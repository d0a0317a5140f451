//===- ModelFile.cpp -------------------------------------------------------===//

#include "runtime/support/ModelFile.h"

#include "onnx/onnx_pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ortc {

namespace {
bool checkParsed(bool parsed, const std::string &name, const onnx::ModelProto &model,
                 std::string &error) {
  if (!parsed) {
    error = name + ": not a valid ONNX ModelProto (truncated or corrupted protobuf)";
    return false;
  }
  if (!model.has_graph()) {
    error = name + ": the model has no graph (is this an ONNX model?)";
    return false;
  }
  return true;
}
} // namespace

bool readModelFile(const std::string &path, onnx::ModelProto &model, std::string &error,
                   bool *missing) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (missing)
      *missing = errno == ENOENT;
    error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    error = path + ": not a regular file";
    ::close(fd);
    return false;
  }
  if (st.st_size == 0) {
    error = path + ": empty file, not an ONNX model";
    ::close(fd);
    return false;
  }
  if (st.st_size >= INT_MAX) {
    error = path + ": " + std::to_string(st.st_size) +
            " bytes is over protobuf's 2 GB limit; store large tensors as external data";
    ::close(fd);
    return false;
  }
  // Parsed from a read-only map of the whole file: protobuf then copies each
  // bytes field (an inline EPContext blob) once, at its final size. From a
  // FileInputStream it reserves at most 50 MB up front and grows the string
  // as it reads, which on ResNet-50's 98 MiB inline blob takes twice as long.
  // (A file truncated by another process during the parse would fault; the
  // sidecars' maps share that exposure.)
  void *base = ::mmap(nullptr, size_t(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
  ::close(fd);
  if (base == MAP_FAILED) {
    error = path + ": cannot map: " + std::strerror(errno);
    return false;
  }
  bool parsed = parseModelBuffer(base, size_t(st.st_size), path, model, error);
  ::munmap(base, size_t(st.st_size));
  return parsed;
}

bool parseModelBuffer(const void *data, size_t size, const std::string &name,
                      onnx::ModelProto &model, std::string &error) {
  if (size == 0) {
    error = name + ": empty buffer, not an ONNX model";
    return false;
  }
  if (size >= INT_MAX) {
    error = name + ": " + std::to_string(size) +
            " bytes is over protobuf's 2 GB limit; store large tensors as external data";
    return false;
  }
  google::protobuf::io::ArrayInputStream stream(data, int(size));
  google::protobuf::io::CodedInputStream coded(&stream);
  coded.SetTotalBytesLimit(INT_MAX);
  bool parsed = model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  return checkParsed(parsed, name, model, error);
}

std::string modelDirectory(const std::string &path) {
  size_t slash = path.rfind('/');
  if (slash == std::string::npos)
    return ".";
  if (slash == 0)
    return "/";
  return path.substr(0, slash);
}

} // namespace ortc
