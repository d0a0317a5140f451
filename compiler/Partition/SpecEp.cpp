//===- SpecEp.cpp ----------------------------------------------------------===//

#include "compiler/Partition/SpecEp.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/raw_ostream.h"

using namespace mlir;

namespace ortc {

std::unique_ptr<SpecEp> SpecEp::parse(const std::string &spec, std::string &error) {
  SmallVector<StringRef> parts;
  StringRef(spec).split(parts, ':');
  auto ep = std::make_unique<SpecEp>();
  auto [name, device] = parts[0].split('@');
  if (name.empty() || (device != "cpu" && device != "cuda")) {
    error = "EP spec '" + spec + "' must start with <name>@cpu or <name>@cuda";
    return nullptr;
  }
  ep->identity_ = {name.str(), device == "cuda" ? DeviceType::Cuda : DeviceType::Cpu, 0};
  for (StringRef part : llvm::drop_begin(parts)) {
    if (part.consume_front("+")) {
      ep->customPasses.push_back(part.str());
      continue;
    }
    if (part == "!compile") {
      ep->failCompile = true;
      continue;
    }
    if (part.consume_front("!")) {
      ep->rejectedDTypes.insert(part.str());
      continue;
    }
    auto [op, cost] = part.split('=');
    if (op == "blob") {
      if (cost.getAsInteger(10, ep->blobSize) || ep->blobSize < 0) {
        error = "EP spec '" + spec + "': '" + part.str() + "' needs a byte count: blob=<N>";
        return nullptr;
      }
      continue;
    }
    double value;
    if (op.empty() || cost.getAsDouble(value)) {
      error = "EP spec '" + spec + "': '" + part.str() +
              "' is not <Op>=<cost>, !<dtype>, !compile, blob=<N> or +<pass>";
      return nullptr;
    }
    ep->costs[op.str()] = value;
  }
  return ep;
}

KernelMatch SpecEp::supportsOp(const NodeQuery &query) const {
  for (Type type : query.inputTypes) {
    auto tensor = dyn_cast<TensorType>(type);
    if (!tensor)
      continue;
    std::string dtype;
    llvm::raw_string_ostream(dtype) << tensor.getElementType();
    if (rejectedDTypes.count(dtype)) {
      std::string accepts;
      for (const auto &[op, cost] : costs)
        accepts += (accepts.empty() ? "" : ", ") + op;
      return KernelMatch::unsupported(query.decline(
          name(), RejectedKind::DType, "an input has dtype " + dtype,
          "these ops without " + dtype + " inputs: " + accepts, "cast the input to f32"));
    }
  }
  auto cost = costs.find(query.opType);
  if (cost == costs.end())
    cost = costs.find("*");
  if (cost == costs.end() || (query.domain != "ai.onnx" && query.domain != "ortc")) {
    std::string accepts;
    for (const auto &[op, c] : costs)
      accepts += (accepts.empty() ? "" : ", ") + op;
    return KernelMatch::unsupported(query.decline(
        name(), RejectedKind::OpType, "op " + query.domain + "::" + query.opType + " has no kernel",
        "ai.onnx and ortc ops " + (accepts.empty() ? std::string("(none)") : accepts)));
  }
  KernelCost k;
  k.computeNs = cost->second;
  return KernelMatch::supported(k);
}

std::vector<Operation *> SpecEp::claimNodes(func::FuncOp graph) const {
  std::vector<Operation *> claimed;
  for (Operation &op : graph.getBody().front())
    if (claims.count(onnxOpTypeAndDomain(&op).first))
      claimed.push_back(&op);
  return claimed;
}

namespace {
// A test EP's "compiled" partition: its IR as text.
class SpecCompiledPartition : public CompiledPartition {
public:
  std::string partition;
  std::string text;
};
} // namespace

FailureOr<std::unique_ptr<CompiledPartition>> SpecEp::compilePartition(func::FuncOp partition) {
  if (failCompile)
    return partition.emitError(name() + " fails to compile " + partition.getSymName().str() +
                               " (test EP spec !compile)");
  auto compiled = std::make_unique<SpecCompiledPartition>();
  compiled->partition = partition.getSymName().str();
  llvm::raw_string_ostream os(compiled->text);
  partition->print(os, OpPrintingFlags().elideLargeElementsAttrs(16).elideLargeResourceString(16));
  os.flush();
  if (blobSize >= 0)
    compiled->text.resize(static_cast<size_t>(blobSize), '.');
  return std::unique_ptr<CompiledPartition>(std::move(compiled));
}

void SpecEp::addCustomPasses(OpPassManager &pm) const {
  for (const std::string &pass : customPasses)
    if (failed(parsePassPipeline(pass, pm)))
      llvm::errs() << name() << ": unknown custom pass '" << pass << "'\n";
}

FailureOr<EpContextBlob> SpecEp::saveContext(CompiledPartition &&compiled) {
  // Only this EP's compilePartition makes the partitions it is handed back.
  const auto &partition = static_cast<const SpecCompiledPartition &>(compiled);
  EpContextBlob blob;
  blob.source = name();
  blob.hardwareArchitecture = "test";
  blob.epSdkVersion = "ortc-test";
  blob.notes = "test EP " + name() + ": the printed IR of " + partition.partition;
  blob.bytes.assign(partition.text.begin(), partition.text.end());
  return blob;
}

} // namespace ortc
