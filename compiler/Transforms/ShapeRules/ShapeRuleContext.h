//===- ShapeRuleContext.h - what a shape rule reads and sets ----*- C++ -*-===//
//
// A shape rule (ShapeInferenceOpInterface::inferShapes) sees its op through
// this context: the operands' dims as expressions in the function's DimTable
// (runtime/ep/DimExpr.h: constants for static dims, symbols and their
// arithmetic for dynamic ones, kUnknownDim where nothing is known), the
// elements of shape-valued operands, and constants. It proposes each
// result's element type and dims; shape inference turns a proposal into a
// result type (a constant dim is static), the symbolic analysis keeps the
// expressions. One rule per op serves both.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPERULECONTEXT_H
#define ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPERULECONTEXT_H

#include "runtime/ep/DimExpr.h"

#include "mlir/IR/Operation.h"
#include "mlir/Support/LogicalResult.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/Twine.h"

#include <deque>
#include <optional>

namespace mlir {
class TensorType;
}

namespace ortc {

class SymbolicShapes;

/// Dim expressions (DimTable ids); kUnknownDim (SymbolicShapes.h) where no
/// rule reaches.
using DimList = llvm::SmallVector<int32_t>;

class ShapeRuleContext {
public:
  /// What a rule proposed for one result: nothing (no element type), an
  /// element type alone (rank unknown), or dims too; and, for a small
  /// integer result, its elements.
  struct Proposal {
    mlir::Type element;
    std::optional<DimList> dims;
    std::optional<DimList> elements;
    /// A result that is no tensor (a sequence, an optional): its whole type.
    mlir::Type whole;
  };

  ShapeRuleContext(SymbolicShapes &shapes, mlir::Operation *op, bool reportErrors);

  mlir::Operation *op() const { return op_; }
  DimTable &table() const;
  int32_t constant(int64_t value) const;
  SymDim dim(int32_t id) const { return {&table(), id}; }
  std::optional<int64_t> constantValue(int32_t id) const;

  //===--- Operands (any value the op reads) ------------------------------===//
  /// Whether `v` exists and was not left out (onnx.NoValue).
  bool present(mlir::Value v) const;
  /// The dims of `v`, or nullptr when it is absent or not ranked.
  const DimList *dims(mlir::Value v) const;
  /// dims(v); when `v` has none, `result` is set to `element` of unknown
  /// rank and nullptr returned, for the rule to stop there.
  const DimList *dimsOrUnranked(mlir::Value v, mlir::Value result, mlir::Type element);
  /// The elements of `v` when it is a shape value.
  const DimList *elements(mlir::Value v) const;
  /// elements(v), or the values of an integer constant as constant dims.
  const DimList *bounds(mlir::Value v);
  /// The values of `v` when it is an integer constant.
  std::optional<llvm::SmallVector<int64_t>> constantInts(mlir::Value v) const;
  /// The element type of `v` (null when it is not a tensor).
  mlir::Type elementType(mlir::Value v) const;
  /// The product of `dims`, kUnknownDim when one is unknown.
  int32_t product(llvm::ArrayRef<int32_t> dims) const;

  //===--- Results (an OpResult of op(); a `none` result is left alone) ---===//
  void setResult(mlir::Value result, mlir::Type element, DimList dims);
  /// The element type of `result`; its rank is unknown.
  void setUnranked(mlir::Value result, mlir::Type element);
  /// `result` as `element` with the dims of `like` (rank unknown when it
  /// has none).
  void setDimsOf(mlir::Value result, mlir::Type element, mlir::Value like);
  /// `result` has the type and dims of `like`.
  void setLike(mlir::Value result, mlir::Value like);
  void setElements(mlir::Value result, DimList elements);
  /// `result` is `type`, a sequence or an optional (no dims to track).
  void setType(mlir::Value result, mlir::Type type);
  /// `result` is the tensor `type` (an element taken out of a container):
  /// its static dims, a data symbol for each dynamic one. Of unknown rank,
  /// the rank `result` is declared with (the run checks it), else unranked.
  void setTakenFrom(mlir::Value result, mlir::TensorType type);
  /// A dim of `result` that the data decides (NonZero's count): a symbol
  /// the runtime binds when the op's kernel reports the shape.
  int32_t dataDim(mlir::Value result, unsigned dim);
  /// The inputs cannot be valid: with reporting on (shape inference), an
  /// error on the op. Returns failure for the rule to return.
  mlir::LogicalResult fail(const llvm::Twine &message);

  llvm::ArrayRef<Proposal> proposals() const { return proposals_; }
  /// After a rule failed: it proposes nothing.
  void markFailed();
  bool failedRule() const { return failed_; }

private:
  Proposal *proposalFor(mlir::Value result);

  SymbolicShapes &shapes_;
  mlir::Operation *op_;
  bool reportErrors_;
  bool failed_ = false;
  llvm::SmallVector<Proposal, 2> proposals_;
  std::deque<DimList> scratch_;
};

//===--- Rules shared by several op families ------------------------------===//

/// numpy broadcasting of `operands` (nullptr: rank unknown, so nullopt): a
/// dim against 1 or its equal is itself, a static dim other than 1 wins
/// (the only value valid inputs can give), two symbols give their max.
/// Failure when two static dims differ and neither is 1.
mlir::FailureOr<std::optional<DimList>> broadcastDims(DimTable &table,
                                                      llvm::ArrayRef<const DimList *> operands);

/// [a == c] as a dim expression: 1 or 0 (ge(a, c) * ge(c, a)), for rules
/// whose result depends on the run-time value of a shape-value element.
int32_t equalsConstant(DimTable &table, int32_t a, int64_t c);

/// `axis` normalized against `rank`, nullopt when out of [-rank, rank).
std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank);

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_SHAPERULES_SHAPERULECONTEXT_H
