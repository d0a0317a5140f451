//===- FunctionTypes.h - keep a function's type in step with its body -*- C++ -*-===//

#ifndef ORTC_COMPILER_TRANSFORMS_FUNCTIONTYPES_H
#define ORTC_COMPILER_TRANSFORMS_FUNCTIONTYPES_H

namespace mlir::func {
class FuncOp;
}

namespace ortc {

/// Passes that refine value types (shape inference, folding, upgrades) may
/// make a returned value more precise than the declared result: update the
/// function's result types to what it returns.
void syncFunctionResultTypes(mlir::func::FuncOp func);

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_FUNCTIONTYPES_H
