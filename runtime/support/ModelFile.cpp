//===- ModelFile.cpp -------------------------------------------------------===//

#include "runtime/support/ModelFile.h"

#include "onnx/onnx_pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace ortc {

bool readModelFile(const std::string &path, onnx::ModelProto &model, std::string &error) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
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
  bool parsed;
  {
    google::protobuf::io::FileInputStream stream(fd);
    google::protobuf::io::CodedInputStream coded(&stream);
    coded.SetTotalBytesLimit(INT_MAX);
    parsed = model.ParseFromCodedStream(&coded) && coded.ConsumedEntireMessage();
  }
  ::close(fd);
  if (!parsed) {
    error = path + ": not a valid ONNX ModelProto (truncated or corrupted protobuf)";
    return false;
  }
  if (!model.has_graph()) {
    error = path + ": the model has no graph (is this an ONNX model?)";
    return false;
  }
  return true;
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
