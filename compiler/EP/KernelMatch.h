//===- KernelMatch.h - an EP's answer to "can you run this node?" -*- C++ -*-===//
//
// Supported carries a cost (compute, memory, transfer, launch; in estimated
// nanoseconds) and any input layouts the kernel needs. Unsupported carries a
// DeclineReason that says everything the contract asks: node, op, domain and
// opset; what was rejected; the EP; what the EP accepts; and a remediation
// where one exists. Plain C++: no MLIR here.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_EP_KERNELMATCH_H
#define ORTC_COMPILER_EP_KERNELMATCH_H

#include <cstdint>
#include <string>
#include <vector>

namespace ortc {

enum class TensorLayout { RowMajor, NHWC, Blocked };
const char *tensorLayoutName(TensorLayout layout);

struct KernelCost {
  double computeNs = 0;
  double memoryNs = 0;
  double transferNs = 0;
  double launchNs = 0;
  double total() const { return computeNs + memoryNs + transferNs + launchNs; }
};

/// What a decline is about.
enum class RejectedKind { DType, Shape, Layout, Attribute, OpType, Opset, Domain };
const char *rejectedKindName(RejectedKind kind);

struct DeclineReason {
  // The node.
  std::string node;   // its name (or "<OpType>#<index>")
  std::string op;     // op type, e.g. "Conv"
  std::string domain; // "ai.onnx" for the default domain
  int64_t opset = 0;
  // Who declines, and why.
  std::string ep;
  RejectedKind kind = RejectedKind::OpType;
  std::string rejected;    // e.g. "input 'X' has dtype f64"
  std::string accepts;     // e.g. "f32 and f16 inputs"
  std::string remediation; // optional, e.g. "insert a Cast to f32"

  /// True when every field the contract requires is filled in.
  bool isComplete() const;
  /// One line: "cpu_ep declines node 'conv1' (ai.onnx::Conv, opset 17): dtype:
  /// input 'X' has dtype f64; accepts f32 and f16 inputs; remediation: ..."
  std::string format() const;
  /// The same fields as a JSON object.
  std::string toJson() const;
};

class KernelMatch {
public:
  static KernelMatch supported(KernelCost cost, std::vector<TensorLayout> inputLayouts = {}) {
    KernelMatch m;
    m.supported_ = true;
    m.cost_ = cost;
    m.inputLayouts_ = std::move(inputLayouts);
    return m;
  }
  static KernelMatch unsupported(DeclineReason reason) {
    KernelMatch m;
    m.reason_ = std::move(reason);
    return m;
  }
  bool isSupported() const { return supported_; }
  const KernelCost &cost() const { return cost_; }
  const std::vector<TensorLayout> &inputLayouts() const { return inputLayouts_; }
  const DeclineReason &reason() const { return reason_; }

private:
  bool supported_ = false;
  KernelCost cost_;
  std::vector<TensorLayout> inputLayouts_;
  DeclineReason reason_;
};

/// Escapes `text` for a JSON string literal (without the quotes).
std::string jsonEscape(const std::string &text);

} // namespace ortc

#endif // ORTC_COMPILER_EP_KERNELMATCH_H
