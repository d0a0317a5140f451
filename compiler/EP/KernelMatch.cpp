//===- KernelMatch.cpp -----------------------------------------------------===//

#include "compiler/EP/KernelMatch.h"

#include <cstdio>

namespace ortc {

const char *tensorLayoutName(TensorLayout layout) {
  switch (layout) {
  case TensorLayout::RowMajor:
    return "row-major";
  case TensorLayout::NHWC:
    return "nhwc";
  case TensorLayout::Blocked:
    return "blocked";
  }
  return "unknown";
}

const char *rejectedKindName(RejectedKind kind) {
  switch (kind) {
  case RejectedKind::DType:
    return "dtype";
  case RejectedKind::Shape:
    return "shape";
  case RejectedKind::Layout:
    return "layout";
  case RejectedKind::Attribute:
    return "attribute";
  case RejectedKind::OpType:
    return "op";
  case RejectedKind::Opset:
    return "opset";
  case RejectedKind::Domain:
    return "domain";
  }
  return "unknown";
}

bool DeclineReason::isComplete() const {
  return !node.empty() && !op.empty() && !domain.empty() && opset > 0 && !ep.empty() &&
         !rejected.empty() && !accepts.empty();
}

std::string DeclineReason::format() const {
  std::string text = ep + " declines node '" + node + "' (" + domain + "::" + op + ", opset " +
                     std::to_string(opset) + "): " + rejectedKindName(kind) + ": " + rejected +
                     "; accepts " + accepts;
  if (!remediation.empty())
    text += "; remediation: " + remediation;
  return text;
}

std::string jsonEscape(const std::string &text) {
  std::string out;
  for (unsigned char c : text) {
    switch (c) {
    case '"':
      out += "\\\"";
      break;
    case '\\':
      out += "\\\\";
      break;
    case '\n':
      out += "\\n";
      break;
    case '\t':
      out += "\\t";
      break;
    default:
      if (c < 0x20) {
        char buffer[8];
        std::snprintf(buffer, sizeof(buffer), "\\u%04x", c);
        out += buffer;
      } else {
        out += static_cast<char>(c);
      }
    }
  }
  return out;
}

std::string DeclineReason::toJson() const {
  auto field = [](const char *key, const std::string &value) {
    return std::string("\"") + key + "\": \"" + jsonEscape(value) + "\"";
  };
  return "{" + field("node", node) + ", " + field("op", op) + ", " + field("domain", domain) +
         ", \"opset\": " + std::to_string(opset) + ", " + field("ep", ep) + ", " +
         field("kind", rejectedKindName(kind)) + ", " + field("rejected", rejected) + ", " +
         field("accepts", accepts) + ", " + field("remediation", remediation) + "}";
}

} // namespace ortc
