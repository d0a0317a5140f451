//===- PassContext.h - verifier failures that name their pass ---*- C++ -*-===//
//
// Every PassManager of a compile (the driver's, the partitioner's, each
// EP's own) is set up by preparePassManager: the IR is verified after each
// pass, and while a pass's output is being verified, the pass is known to
// the diagnostic handler (passBeingVerified()). A verifier failure is a
// compiler bug: the driver reports it as one line naming the node and the
// pass that made the invalid IR, and the compile stops before anything
// reads that IR.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_EP_PASSCONTEXT_H
#define ORTC_COMPILER_EP_PASSCONTEXT_H

#include "llvm/ADT/StringRef.h"

namespace mlir {
class PassManager;
} // namespace mlir

namespace ortc {

/// Verifies the IR after every pass of `pm` and records which pass's
/// output is being verified (on the thread that runs the pass).
void preparePassManager(mlir::PassManager &pm);

/// The argument (command-line name) of the pass whose output the verifier
/// is checking on this thread; empty at any other time, the pass's own run
/// included.
llvm::StringRef passBeingVerified();

} // namespace ortc

#endif // ORTC_COMPILER_EP_PASSCONTEXT_H
