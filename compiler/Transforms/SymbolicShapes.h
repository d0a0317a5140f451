//===- SymbolicShapes.h - every dynamic dim as an expression ----*- C++ -*-===//
//
// Shape inference leaves a dynamic dim as `?`; this analysis says which `?`:
// an expression over symbols (runtime/ep/DimExpr.h). A function argument's
// dims are symbols named by its `onnx.dim_params` (a graph input: dims of one
// name are one symbol) or its `ortc.dim_symbols` (a partition input: the text
// of the caller's expression), or fresh ones; each op's results follow from its
// rule. Shape values (small int tensors computed from shapes: Shape, Gather,
// Slice, Concat, arithmetic...) carry expressions per element, so a Reshape or
// Expand target built from Shape(x) resolves to x's dims. A small integer
// argument is a shape value of its own: its elements are symbols ("n[]",
// "shape[1]") that the runtime binds from its data, and that may be negative.
//
// Each op's rule is its ShapeInferenceOpInterface (ShapeRules/): the same
// rules give shape inference its result types (ShapeInference.cpp walks with
// a ResultTypeRefiner). A dim no rule reaches has no expression
// (kUnknownDim): an EP that must know sizes before the run declines such a
// value.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_TRANSFORMS_SYMBOLICSHAPES_H
#define ORTC_COMPILER_TRANSFORMS_SYMBOLICSHAPES_H

#include "runtime/ep/DimExpr.h"

#include "mlir/IR/Value.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/SmallVector.h"

#include <map>
#include <optional>
#include <utility>
#include <set>
#include <tuple>
#include <string>
#include <vector>

namespace mlir {
class Operation;
class RankedTensorType;
namespace func {
class FuncOp;
}
} // namespace mlir

namespace ortc {

constexpr int32_t kUnknownDim = -1;

class ShapeRuleContext;

/// What shape inference does with each op's rule before the analysis
/// records the op's results: it refines their types from the proposals.
class ResultTypeRefiner {
public:
  virtual ~ResultTypeRefiner() = default;
  virtual void refine(mlir::Operation *op, const ShapeRuleContext &rule) = 0;
};

class SymbolicShapes {
public:
  /// Which ops the analysis visits: `fn`'s own (what partitions see), or
  /// those in regions too, whose region arguments then get fresh symbols.
  enum class Walk { TopLevel, WithRegions };

  /// The analysis of `fn`. With a `refiner` (shape inference: regions
  /// included), rule errors are reported on their ops.
  explicit SymbolicShapes(mlir::func::FuncOp fn, Walk walk = Walk::TopLevel,
                          ResultTypeRefiner *refiner = nullptr);

  /// The dims of a ranked tensor value (kUnknownDim where no rule reaches),
  /// or nullptr for a value that is not a ranked tensor of this function.
  const llvm::SmallVector<int32_t> *dims(mlir::Value value) const;
  /// Whether every dim of `value` has an expression.
  bool known(mlir::Value value) const;
  /// The elements of a shape value, when every one has an expression.
  const llvm::SmallVector<int32_t> *elements(mlir::Value value) const;

  /// The product of `dims`, or kUnknownDim when one is unknown.
  int32_t product(llvm::ArrayRef<int32_t> dims) const;
  /// The element count of a ranked tensor value, or kUnknownDim.
  int32_t numElements(mlir::Value value) const;

  /// The expressions; new ones may be added (equal ones share an id), which
  /// is why a const analysis hands it out mutable.
  DimTable &table() const { return table_; }
  /// A dim as the EPs' plans write it: its size, or -(id + 1) for dim node
  /// `id` of the table (runtime/ep/DimBinding.h reads it).
  int64_t planDim(int32_t id) const {
    std::optional<int64_t> constant = table_.constantValue(id);
    return constant ? *constant : -(int64_t(id) + 1);
  }
  /// `value`'s shape in planDim's terms (static dims from its type);
  /// nullopt when a dynamic dim has no expression.
  std::optional<std::vector<int64_t>> planShape(mlir::Value value) const;
  const std::vector<std::string> &symbolNames() const { return symbolNames_; }
  /// A fresh symbol for dim `dim` of `op`'s result `result` whose size
  /// follows from the data (NonZero's count): the runtime binds it when the
  /// op's step reports its output's shape. The same (op, result, dim) gives
  /// the same symbol.
  int32_t dataSymbol(mlir::Operation *op, unsigned result, unsigned dim);
  /// A data symbol for element `element` of `op`'s small integer result
  /// `result` that no rule computes (a Where over shape values): the runtime
  /// reads it from the value's buffer after the step that writes it. The
  /// same (op, result, element) gives the same symbol; it may be negative.
  int32_t elementSymbol(mlir::Operation *op, unsigned result, unsigned element);
  /// The value and element an element symbol (elementSymbol) is read from.
  std::optional<std::pair<mlir::Value, unsigned>> elementSymbolSource(int64_t index) const;
  /// Whether symbol `index` is bound by a step at run time (dataSymbol).
  bool isDataSymbol(int64_t index) const { return dataSymbols_.count(index) != 0; }
  /// Whether expression `id` reads a data symbol.
  bool readsDataSymbol(int32_t id) const;
  /// The data symbols expression `id` reads, added to `out`.
  void collectDataSymbols(int32_t id, std::set<int64_t> &out) const;
  const std::set<int64_t> &dataSymbols() const { return dataSymbols_; }
  std::string print(int32_t dim) const;
  /// "[batch, 3, (height + -1) floordiv 2 + 1]"
  std::string print(mlir::Value value) const;

private:
  int32_t symbolNamed(const std::string &name);
  /// A new data symbol named "<node>.<result><where>".
  int32_t freshDataSymbol(mlir::Operation *op, unsigned result, const std::string &where);
  void seedArgument(mlir::func::FuncOp fn, unsigned index, std::set<int64_t> &dimSymbols,
                    std::set<int64_t> &valueSymbols);
  void visit(mlir::Operation *op);
  /// Records result `i` of `op`: the type's static dims, the proposal's
  /// expressions for the dynamic ones.
  void record(mlir::Operation *op, unsigned i, const std::optional<llvm::SmallVector<int32_t>> &dims,
              const std::optional<llvm::SmallVector<int32_t>> &elements, bool leadingFallback);
  /// dims(v) for a rule; when refining, a value no op set (a region's
  /// argument) gets its type's dims, fresh symbols for the dynamic ones.
  const llvm::SmallVector<int32_t> *operandDims(mlir::Value v);

  ResultTypeRefiner *refiner_ = nullptr;
  bool withRegions_ = false;

  mutable DimTable table_;
  std::vector<std::string> symbolNames_;
  llvm::DenseMap<mlir::Value, llvm::SmallVector<int32_t>> dims_;
  llvm::DenseMap<mlir::Value, llvm::SmallVector<int32_t>> elements_;
  std::set<int64_t> dataSymbols_;
  std::map<std::tuple<mlir::Operation *, unsigned, unsigned>, int32_t> dataSymbolIds_;
  std::map<std::tuple<mlir::Operation *, unsigned, unsigned>, int32_t> elementSymbolIds_;
  std::map<int64_t, std::pair<mlir::Value, unsigned>> elementSymbolSources_;

  friend class ShapeRuleContext;
};

/// Whether a function argument of `type` carries value symbols: an int32 or
/// int64 scalar or vector of at most 8 elements, whose elements the runtime
/// binds from its data (SymbolicShapes::elements gives them as symbols).
bool isValueSymbolCarrier(mlir::RankedTensorType type);

/// The `ortc.dim_symbols` a partition argument gets for `value` of the
/// caller: one string per dim, "" for a static dim, else the expression's
/// text (equal texts are one symbol in the partition). Empty when `value`
/// has no dynamic dim or a dim without an expression.
std::vector<std::string> dimSymbolsFor(const SymbolicShapes &shapes, mlir::Value value);

/// Sets `ortc.dim_symbols` (and `ortc.value_symbols` on small integer
/// arguments) on each argument of `fn` (an outlined partition) from the
/// caller's value it stands for, `callerValues[i]`, which is used only as a
/// key of `shapes` (its op may have been outlined already).
void annotateDimSymbols(mlir::func::FuncOp fn, llvm::ArrayRef<mlir::Value> callerValues,
                        const SymbolicShapes &shapes);

/// Gives each intermediate value of `fn` the static dims `shapes` proves (a
/// Slice of [1, 4] to [1, min(s, 4)] is typed ?x? by shape inference): a
/// generated kernel broadcasts by its types' static 1s, and static sizes
/// compile better. Returned values keep the function's result types.
void refineStaticResultTypes(mlir::func::FuncOp fn, const SymbolicShapes &shapes);

} // namespace ortc

#endif // ORTC_COMPILER_TRANSFORMS_SYMBOLICSHAPES_H
