//===- SpecEp.h - an EP described by a spec string, for tests ---*- C++ -*-===//
//
// Lit tests of partitioning need EPs with chosen claims and costs. A spec
// "gpu_ep@cuda:MatMul=1:Add=2:*=50" supports MatMul at cost 1, Add at 2 and
// every other op at 50; ops it does not list (with no `*`) are declined with a
// complete DeclineReason. An op may be declined for one dtype only:
// "cpu_ep@cpu:Conv=5:!f64" declines any node with an f64 input.
// "+<pass>" adds a custom pass by name: "cpu_ep@cpu:*=1:+onnx-canonicalize".
// compilePartition makes a test blob, so that the EPContext writer can be
// tested end to end: the partition's printed IR, source key = the EP name,
// hardware_architecture "test", ep_sdk_version "ortc-test". "blob=N" pads (or
// cuts) the blob to exactly N bytes; "!compile" makes compilePartition fail.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_PARTITION_SPECEP_H
#define ORTC_COMPILER_PARTITION_SPECEP_H

#include "compiler/EP/CompileEp.h"

#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

namespace ortc {

class SpecEp : public CompileEp {
public:
  /// Parses a spec; on error returns null and a message in `error`.
  static std::unique_ptr<SpecEp> parse(const std::string &spec, std::string &error);

  const EpIdentity &identity() const override { return identity_; }
  KernelMatch supportsOp(const NodeQuery &query) const override;
  std::vector<mlir::Operation *> claimNodes(mlir::func::FuncOp graph) const override;
  mlir::FailureOr<std::unique_ptr<CompiledPartition>>
  compilePartition(mlir::func::FuncOp partition) override;
  mlir::FailureOr<EpContextBlob> saveContext(CompiledPartition &&compiled) override;
  std::vector<std::string> contextSourceKeys() const override { return {name()}; }
  void addCustomPasses(mlir::OpPassManager &pm) const override;

  /// Op types this EP claims regardless of cost.
  std::set<std::string> claims;

private:
  EpIdentity identity_;
  std::map<std::string, double> costs; // op type (or "*") -> compute cost
  std::set<std::string> rejectedDTypes;
  std::vector<std::string> customPasses;
  bool failCompile = false;
  int64_t blobSize = -1; // -1: the IR as printed
};

} // namespace ortc

#endif // ORTC_COMPILER_PARTITION_SPECEP_H
