//===- ModelFile.cpp -------------------------------------------------------===//

#include "runtime/support/ModelFile.h"

#include "onnx/onnx_pb.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <vector>

namespace ortc {

namespace {

/// Protobuf parses messages nested at most this deep (its default recursion
/// limit); a graph inside a node's attribute is three levels below the
/// graph that holds the node.
constexpr int kProtobufDepthLimit = 100;

/// How many graphs deep the subgraphs of the ModelProto bytes go (the main
/// graph is 1), read without recursion: only the fields that lead to a
/// subgraph (ModelProto.graph, GraphProto.node, NodeProto.attribute,
/// AttributeProto.g and .graphs) are entered, and reading stops at the
/// first byte that is not wire format.
int subgraphDepth(const uint8_t *data, size_t size) {
  enum Kind { Model, Graph, Node, Attribute };
  struct Open {
    Kind kind;
    size_t end;
  };
  std::vector<Open> open{{Model, size}};
  int graphs = 0, deepest = 0;
  size_t at = 0;
  auto varint = [&](uint64_t &value) {
    value = 0;
    for (int shift = 0; shift < 64 && at < size; shift += 7) {
      uint8_t byte = data[at++];
      value |= uint64_t(byte & 0x7f) << shift;
      if (!(byte & 0x80))
        return true;
    }
    return false;
  };
  while (!open.empty()) {
    if (at >= open.back().end) {
      graphs -= open.back().kind == Graph;
      open.pop_back();
      continue;
    }
    uint64_t key = 0, length = 0;
    if (!varint(key))
      break;
    switch (key & 7) {
    case 0:
      if (!varint(length))
        return deepest;
      continue;
    case 1:
      at += 8;
      continue;
    case 5:
      at += 4;
      continue;
    case 2:
      break;
    default:
      return deepest;
    }
    if (!varint(length) || length > open.back().end - at)
      break;
    uint64_t field = key >> 3;
    Kind kind = open.back().kind;
    bool entersGraph =
        (kind == Model && field == 7) || (kind == Attribute && (field == 6 || field == 11));
    if (entersGraph || (kind == Graph && field == 1) || (kind == Node && field == 5)) {
      Kind inner = entersGraph ? Graph : kind == Graph ? Node : Attribute;
      open.push_back({inner, at + length});
      if (inner == Graph)
        deepest = std::max(deepest, ++graphs);
      continue;
    }
    at += length;
  }
  return deepest;
}

bool checkParsed(bool parsed, const std::string &name, const onnx::ModelProto &model,
                 std::string &error, const void *data, size_t size) {
  if (!parsed) {
    // Each level of subgraphs is three messages (node, attribute, graph).
    int depth = subgraphDepth(static_cast<const uint8_t *>(data), size);
    if (3 * depth > kProtobufDepthLimit)
      error = name + ": graphs nested " + std::to_string(depth) +
              " deep (subgraphs in If/Loop/Scan attributes), more than the " +
              std::to_string(kProtobufDepthLimit / 3) + " levels ortc reads";
    else
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
  return checkParsed(parsed, name, model, error, data, size);
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
