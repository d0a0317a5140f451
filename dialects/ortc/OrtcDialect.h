//===- OrtcDialect.h - the ortc dialect -------------------------*- C++ -*-===//

#ifndef ORTC_DIALECTS_ORTC_ORTCDIALECT_H
#define ORTC_DIALECTS_ORTC_ORTCDIALECT_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"

#include "dialects/ortc/OrtcDialect.h.inc"

#define GET_OP_CLASSES
#include "dialects/ortc/OrtcOps.h.inc"

#endif // ORTC_DIALECTS_ORTC_ORTCDIALECT_H
