//===- ShapeInferenceOpInterface.h - an op's shape rule ---------*- C++ -*-===//
//
// Lean on purpose: the interface class only. The rules' vocabulary is in
// ShapeRuleContext.h; attaching them to the ops is ShapeRules.h.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPEINFERENCEOPINTERFACE_H
#define ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPEINFERENCEOPINTERFACE_H

#include "mlir/IR/OpDefinition.h"

namespace ortc {
class ShapeRuleContext;
} // namespace ortc

#include "compiler/Transforms/ShapeRules/ShapeInferenceOpInterface.h.inc"

#endif // ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPEINFERENCEOPINTERFACE_H
