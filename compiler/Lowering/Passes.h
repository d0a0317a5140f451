//===- Passes.h - lowering the onnx dialect for generated kernels -*- C++ -*-===//
//
// Declared in Passes.td.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_LOWERING_PASSES_H
#define ORTC_COMPILER_LOWERING_PASSES_H

#include "mlir/Pass/Pass.h"

#include <memory>

namespace mlir::func {
class FuncOp;
}

namespace ortc {

#define GEN_PASS_DECL
#include "compiler/Lowering/Passes.h.inc"

#define GEN_PASS_REGISTRATION
#include "compiler/Lowering/Passes.h.inc"

} // namespace ortc

#endif // ORTC_COMPILER_LOWERING_PASSES_H
