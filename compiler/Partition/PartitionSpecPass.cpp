//===- PartitionSpecPass.cpp - ortc-partition-spec ------------------------===//

#include "compiler/Partition/Passes.h"

#include "compiler/Partition/Partitioner.h"
#include "compiler/Partition/SpecEp.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/Support/raw_ostream.h"

namespace ortc {
#define GEN_PASS_DEF_ORTCPARTITIONWITHSPECEPS
#include "compiler/Partition/Passes.h.inc"
} // namespace ortc

using namespace mlir;

namespace {

struct OrtcPartitionWithSpecEps
    : ortc::impl::OrtcPartitionWithSpecEpsBase<OrtcPartitionWithSpecEps> {
  using Base::Base;

  void runOnOperation() override {
    std::vector<std::unique_ptr<ortc::SpecEp>> owned;
    for (const std::string &spec : epSpecs) {
      std::string error;
      auto ep = ortc::SpecEp::parse(spec, error);
      if (!ep) {
        getOperation().emitError(error);
        return signalPassFailure();
      }
      owned.push_back(std::move(ep));
    }
    for (const std::string &claim : claimSpecs) {
      auto [epName, opType] = StringRef(claim).split(':');
      auto it = llvm::find_if(owned, [&](const auto &ep) { return ep->name() == epName; });
      if (it == owned.end() || opType.empty()) {
        getOperation().emitError("claim '" + claim + "' does not name an EP and an op type");
        return signalPassFailure();
      }
      (*it)->claims.insert(opType.str());
    }
    std::vector<ortc::CompileEp *> eps;
    for (auto &ep : owned)
      eps.push_back(ep.get());
    ortc::PartitionOptions options;
    options.allowUnclaimed = allowUnclaimed;
    ortc::PartitionReport report;
    LogicalResult result = ortc::partitionModule(getOperation(), eps, options, report);
    if (reportFormat == "text")
      llvm::errs() << report.formatText();
    else if (reportFormat == "json")
      llvm::errs() << report.formatJson() << "\n";
    if (failed(result) || failed(ortc::runEpCustomPasses(getOperation(), eps)))
      signalPassFailure();
  }
};

} // namespace
