//===- Npy.cpp - NumPy .npy files for tensors -----------------------------===//

#include "runtime/support/Npy.h"

#include <cstring>
#include <fstream>
#include <limits>

namespace ortc {

namespace {

struct Descr {
  const char *text;
  ElementType type;
};
// '|' for single bytes, '<' for little endian.
constexpr Descr kDescrs[] = {
    {"<f4", ElementType::Float},   {"<f8", ElementType::Double}, {"<f2", ElementType::Float16},
    {"|i1", ElementType::Int8},    {"|u1", ElementType::UInt8},  {"<i2", ElementType::Int16},
    {"<u2", ElementType::UInt16},  {"<i4", ElementType::Int32},  {"<u4", ElementType::UInt32},
    {"<i8", ElementType::Int64},   {"<u8", ElementType::UInt64}, {"|b1", ElementType::Bool},
};

/// The value of `'key': ` in the header dict, up to the next comma at depth 0.
bool findField(const std::string &header, const std::string &key, std::string &value) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return false;
  at = header.find(':', at);
  if (at == std::string::npos)
    return false;
  ++at;
  int depth = 0;
  size_t end = at;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    else if ((c == ',' || c == '}') && depth == 0)
      break;
  }
  value = header.substr(at, end - at);
  size_t b = value.find_first_not_of(" ");
  size_t e = value.find_last_not_of(" ");
  value = b == std::string::npos ? "" : value.substr(b, e - b + 1);
  return true;
}

} // namespace

Result<NpyArray> readNpy(const std::string &path) {
  auto fail = [&](const std::string &why) {
    return Status::error(StatusCode::InvalidArgument, path + ": " + why);
  };
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Status::error(StatusCode::NotFound, path + ": cannot open the file");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    return fail("not a .npy file (bad magic)");
  uint32_t headerLength = 0;
  if (magic[6] == 1) {
    unsigned char len[2];
    if (!in.read(reinterpret_cast<char *>(len), 2))
      return fail("truncated header");
    headerLength = len[0] | (len[1] << 8);
  } else if (magic[6] == 2 || magic[6] == 3) {
    unsigned char len[4];
    if (!in.read(reinterpret_cast<char *>(len), 4))
      return fail("truncated header");
    headerLength = len[0] | (len[1] << 8) | (len[2] << 16) | (uint32_t(len[3]) << 24);
  } else {
    return fail("unsupported .npy version " + std::to_string(int(magic[6])));
  }
  if (headerLength > (1u << 20))
    return fail("header of " + std::to_string(headerLength) + " bytes is too large");
  std::string header(headerLength, '\0');
  if (!in.read(header.data(), headerLength))
    return fail("truncated header");

  std::string descr, order, shape;
  if (!findField(header, "descr", descr) || !findField(header, "fortran_order", order) ||
      !findField(header, "shape", shape))
    return fail("header lacks descr, fortran_order or shape");
  if (order != "False")
    return fail("Fortran-order arrays are not supported");
  NpyArray array;
  std::string d = descr.size() >= 2 ? descr.substr(1, descr.size() - 2) : descr;
  for (const Descr &known : kDescrs)
    if (d == known.text || (d.size() == 3 && d[0] == '=' && d.substr(1) == known.text + 1))
      array.type = known.type;
  if (array.type == ElementType::Undefined)
    return fail("unsupported dtype " + descr);
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    return fail("bad shape " + shape);
  std::string dims = shape.substr(1, shape.size() - 2);
  int64_t count = 1;
  size_t pos = 0;
  while (pos < dims.size()) {
    size_t comma = dims.find(',', pos);
    std::string item = dims.substr(pos, comma == std::string::npos ? std::string::npos
                                                                   : comma - pos);
    pos = comma == std::string::npos ? dims.size() : comma + 1;
    size_t b = item.find_first_not_of(" ");
    if (b == std::string::npos)
      continue;
    item = item.substr(b);
    char *end = nullptr;
    long long dim = std::strtoll(item.c_str(), &end, 10);
    if (end == item.c_str() || dim < 0)
      return fail("bad shape " + shape);
    if (dim && count > std::numeric_limits<int64_t>::max() / dim)
      return fail("shape " + shape + " is too large");
    array.shape.push_back(dim);
    count *= dim;
  }
  // What the header promises is checked against what the file holds before
  // anything is allocated: a shape may claim far more than the file has.
  uint64_t bytes = 0;
  if (__builtin_mul_overflow(uint64_t(count), uint64_t(elementSize(array.type)), &bytes))
    return fail("shape " + shape + " is too large");
  std::streamoff dataStart = in.tellg();
  in.seekg(0, std::ios::end);
  std::streamoff fileEnd = in.tellg();
  if (dataStart < 0 || fileEnd < dataStart || !in.seekg(dataStart))
    return fail("cannot find the data after the header");
  uint64_t available = uint64_t(fileEnd - dataStart);
  if (bytes > available)
    return fail("truncated data: shape " + shape + " needs " + std::to_string(bytes) +
                " bytes, the file has " + std::to_string(available) + " after the header");
  array.data.resize(size_t(bytes));
  if (bytes && !in.read(array.data.data(), std::streamsize(bytes)))
    return fail("truncated data: expected " + std::to_string(bytes) + " bytes");
  return array;
}

Status writeNpy(const std::string &path, const TensorView &tensor) {
  const char *descr = nullptr;
  for (const Descr &known : kDescrs)
    if (known.type == tensor.type)
      descr = known.text;
  if (!descr)
    return Status::error(StatusCode::InvalidArgument,
                         path + ": cannot write " + elementTypeName(tensor.type) + " as .npy");
  std::string shape = "(";
  for (size_t i = 0; i < tensor.shape.size(); ++i)
    shape += std::to_string(tensor.shape[i]) + (tensor.shape.size() == 1 || i + 1 < tensor.shape.size() ? "," : "");
  shape += ")";
  std::string header =
      std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  // Pad so that the data starts on a 64-byte boundary, newline-terminated.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    return Status::error(StatusCode::InvalidArgument, path + ": cannot create the file");
  char prefix[10] = {'\x93', 'N', 'U', 'M', 'P', 'Y', 1, 0};
  prefix[8] = char(header.size() & 0xff);
  prefix[9] = char(header.size() >> 8);
  out.write(prefix, 10);
  out.write(header.data(), std::streamsize(header.size()));
  out.write(static_cast<const char *>(tensor.data), std::streamsize(tensor.byteSize()));
  if (!out)
    return Status::error(StatusCode::InvalidArgument, path + ": write failed");
  return Status::ok();
}

} // namespace ortc
