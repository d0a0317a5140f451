//===- Partitioner.h - place nodes on EPs and outline partitions -*- C++ -*-===//
//
// 1. Every onnx op of @main_graph (except constants and NoValue, which follow
//    their users) is offered to each EP: supportsOp gives a KernelMatch.
// 2. claimNodes results are placed first, bypassing the cost model (the
//    highest-priority claimer wins).
// 3. The rest, in program order, go to the supporting EP with the lowest
//    score: its kernel cost plus the transfer cost of inputs produced on an EP
//    with another device type. Ties go to the EP earlier in the priority list.
// 4. Ops of one EP are grouped into partitions that are connected and whose
//    merge never creates a cycle through another partition.
// 5. Each partition is outlined into `func.func private @<ep>_p<N>` with
//    {ortc.ep = "<ep>"} and explicit arguments and results; @main_graph calls it.
// A node no EP supports stops partitioning with every decline, unless
// allowUnclaimed, which leaves it in @main_graph as a plain onnx op.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_PARTITION_PARTITIONER_H
#define ORTC_COMPILER_PARTITION_PARTITIONER_H

#include "compiler/EP/CompileEp.h"

#include "mlir/Support/LLVM.h"

#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
}

namespace ortc {

struct PartitionOptions {
  bool allowUnclaimed = false;
};

/// Where one node went and why.
struct Placement {
  std::string node;
  std::string op;
  std::string ep;                      // empty: left unclaimed
  std::string how;                     // "claimed", "cost", "unclaimed"
  int partition = -1;                  // index into PartitionReport::partitions
  double score = 0;                    // the winning EP's cost plus transfers
  std::vector<DeclineReason> declines; // every EP that said no
};

struct PartitionInfo {
  std::string name; // the outlined function
  std::string ep;
  int numOps = 0;
  int numInputs = 0;
  int numOutputs = 0;
};

struct PartitionReport {
  std::vector<Placement> placements;
  std::vector<PartitionInfo> partitions;

  /// A table of placements, then the declines.
  std::string formatText() const;
  std::string formatJson() const;
  /// The members of formatJson's object ("placements", "partitions",
  /// "declines") without the braces, for reports that hold more.
  std::string formatJsonFields() const;
};

/// Partitions @main_graph of `module` over `eps` (in priority order). On
/// failure, errors have been emitted on the offending ops; `report` still
/// lists every placement and decline found.
mlir::LogicalResult partitionModule(mlir::ModuleOp module, llvm::ArrayRef<CompileEp *> eps,
                                    const PartitionOptions &options, PartitionReport &report);

/// Runs each EP's custom passes (CompileEp::addCustomPasses) on the
/// partitions tagged with its name, after partitioning.
mlir::LogicalResult runEpCustomPasses(mlir::ModuleOp module, llvm::ArrayRef<CompileEp *> eps);

} // namespace ortc

#endif // ORTC_COMPILER_PARTITION_PARTITIONER_H
