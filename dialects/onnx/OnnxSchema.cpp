//===- OnnxSchema.cpp - lookup in the generated schema table --------------===//

#include "dialects/onnx/OnnxSchema.h"

#include <algorithm>
#include <cstring>
#include <iterator>

namespace ortc::onnx_dialect {
namespace {
#include "dialects/onnx/OnnxSchemaTable.inc"
} // namespace

const OnnxAttrInfo *OnnxOpSchema::findAttribute(std::string_view name) const {
  for (const OnnxAttrInfo *a = attributes; a->name; ++a)
    if (name == a->name)
      return a;
  return nullptr;
}

const OnnxOpSchema *lookupOnnxSchema(std::string_view domain, std::string_view opType) {
  if (domain == "ai.onnx")
    domain = "";
  // The table is sorted by (domain, opType).
  auto less = [](const OnnxOpSchema &s, std::pair<std::string_view, std::string_view> key) {
    int c = key.first.compare(s.domain);
    if (c != 0)
      return c > 0;
    return key.second.compare(s.opType) > 0;
  };
  auto key = std::make_pair(domain, opType);
  auto *it = std::lower_bound(std::begin(kOnnxOpSchemas), std::end(kOnnxOpSchemas), key, less);
  if (it != std::end(kOnnxOpSchemas) && domain == it->domain && opType == it->opType)
    return it;
  return nullptr;
}

const char *onnxDataTypeName(int code) {
  static const char *const names[] = {
      "UNDEFINED",      "FLOAT",      "UINT8",          "INT8",       "UINT16",    "INT16",
      "INT32",          "INT64",      "STRING",         "BOOL",       "FLOAT16",   "DOUBLE",
      "UINT32",         "UINT64",     "COMPLEX64",      "COMPLEX128", "BFLOAT16",  "FLOAT8E4M3FN",
      "FLOAT8E4M3FNUZ", "FLOAT8E5M2", "FLOAT8E5M2FNUZ", "UINT4",      "INT4",      "FLOAT4E2M1",
      "FLOAT8E8M0",     "UINT2",      "INT2",           "FLOAT6E2M3", "FLOAT6E3M2"};
  if (code < 0 || code >= static_cast<int>(std::size(names)))
    return nullptr;
  return names[code];
}

} // namespace ortc::onnx_dialect
