//===- ClaimHonesty.h - claimed nodes must compile --------------*- C++ -*-===//
//
// The contract's first rule: an EP that answers Supported for a node must
// compile and run it. This check offers every node of @main_graph to every
// EP, and for each Supported answer outlines that node alone into a
// partition and asks the EP to compile it. A failure is a claim-honesty bug
// of that EP. Tests run it over the generated test models for each real EP.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_PARTITION_CLAIMHONESTY_H
#define ORTC_COMPILER_PARTITION_CLAIMHONESTY_H

#include "compiler/EP/CompileEp.h"

#include <functional>
#include <string>
#include <vector>

namespace mlir {
class ModuleOp;
}

namespace ortc {

struct ClaimHonestyFailure {
  std::string ep;
  std::string node;
  std::string op;
  std::string message; // what compilePartition reported
};

struct ClaimHonestyResult {
  int claims = 0; // (node, EP) pairs answered Supported and compiled
  std::vector<ClaimHonestyFailure> failures;
};

/// After a claimed node compiled: more checks of what it compiled to (the
/// CPU EP's tests load and run it at several batch sizes). An empty string
/// passes; anything else is the failure's message. It may take the partition's
/// bytes (saveContext).
using CompiledClaimCheck = std::function<std::string(CompileEp &, CompiledPartition &&)>;

/// Leaves `module` unchanged; each node is compiled from a fresh module, then
/// given to `check` when there is one.
ClaimHonestyResult checkClaimHonesty(mlir::ModuleOp module, llvm::ArrayRef<CompileEp *> eps,
                                     const CompiledClaimCheck &check = nullptr);

} // namespace ortc

#endif // ORTC_COMPILER_PARTITION_CLAIMHONESTY_H
