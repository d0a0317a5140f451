//===- Passes.h - partitioning passes ---------------------------*- C++ -*-===//

#ifndef ORTC_COMPILER_PARTITION_PASSES_H
#define ORTC_COMPILER_PARTITION_PASSES_H

#include "mlir/Pass/Pass.h"

namespace ortc {

#define GEN_PASS_DECL
#include "compiler/Partition/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Partition/Passes.h.inc"

} // namespace ortc

#endif // ORTC_COMPILER_PARTITION_PASSES_H
