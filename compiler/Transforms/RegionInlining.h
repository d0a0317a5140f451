//===- RegionInlining.h - replace an op by the body of one region -*- C++ -*-===//
//
// An If whose branch is known (a constant condition, or the branch
// onnx-specialize-branches keeps) becomes that branch: its ops move before
// the If and its terminator's operands replace the If's results.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_REGIONINLINING_H
#define ORTC_COMPILER_TRANSFORMS_REGIONINLINING_H

#include "mlir/IR/Operation.h"
#include "mlir/IR/Region.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/SmallVector.h"

namespace ortc {

/// Replaces `op` by the ops of `region` (one block, no arguments, a
/// terminator with one operand per result of `op`) and erases `op`.
inline void inlineRegionInPlaceOf(mlir::Operation *op, mlir::Region &region) {
  mlir::Block &block = region.front();
  mlir::Operation *terminator = block.getTerminator();
  llvm::SmallVector<mlir::Value> values(terminator->getOperands());
  terminator->erase();
  op->getBlock()->getOperations().splice(op->getIterator(), block.getOperations());
  for (auto [result, value] : llvm::zip(op->getResults(), values))
    result.replaceAllUsesWith(value);
  op->erase();
}

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_REGIONINLINING_H
