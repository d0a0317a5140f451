//===- DimExpr.h - symbolic tensor dims, built once, evaluated at run time ===//
//
// A dynamic dim is an expression over symbols (the graph's dim_params, or a
// fresh symbol for an unnamed dim): integers, symbols, + - * floordiv ceildiv
// mod min max, and `ge` (1 when a >= b, else 0; the window rule's ceil_mode
// needs it). The compiler builds the expressions in a DimTable, where equal
// expressions get equal ids (sums and products are kept in a normal form), so
// "are these two dims the same" is an id comparison. The table's nodes go into
// an EP's blob as they are; the runtime binds the symbols from the inputs and
// evaluates every node in one pass, in order (an operand always precedes its
// user).
//
// Shape rules are written once, as templates over the dim type: `int64_t`
// (what a kernel sees at run time) or SymDim (what the compiler infers).
// Plain C++17, no MLIR.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_DIMEXPR_H
#define ORTC_RUNTIME_EP_DIMEXPR_H

#include <cstdint>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <vector>

namespace ortc {

/// Whether an ONNX dim_param names a symbol (dims of one name are one size):
/// not "" and not "?", which some exporters (Paddle2ONNX) write for an
/// unknown dim.
inline bool dimParamNamesSymbol(const std::string &dimParam) {
  return !dimParam.empty() && dimParam != "?";
}

enum class DimOp : uint8_t {
  Const = 0,  // a: the value
  Symbol = 1, // a: the symbol's index
  Add = 2,    // a, b: node ids
  Mul = 3,
  FloorDiv = 4,
  CeilDiv = 5,
  Mod = 6, // floor modulo
  Min = 7,
  Max = 8,
  Ge = 9, // 1 when a >= b, else 0
};
constexpr uint8_t kLastDimOp = uint8_t(DimOp::Ge);

struct DimNode {
  DimOp op;
  int64_t a;
  int64_t b;
};

/// Expressions in normal form, shared by id. Not thread-safe.
class DimTable {
public:
  int32_t constant(int64_t value);
  int32_t symbol(int64_t index);
  /// Symbol `index` may be negative: it stands for a value (an element of a
  /// small integer input, e.g. a window length or a pad), not a size.
  void markSigned(int64_t index) { signed_.insert(index); }
  bool isSigned(int64_t index) const { return signed_.count(index) != 0; }
  /// Whether expression `id` reads a signed symbol.
  bool readsSigned(int32_t id) const;
  int32_t add(int32_t a, int32_t b);
  int32_t sub(int32_t a, int32_t b);
  int32_t mul(int32_t a, int32_t b);
  int32_t floorDiv(int32_t a, int32_t b);
  int32_t ceilDiv(int32_t a, int32_t b);
  int32_t mod(int32_t a, int32_t b);
  int32_t min(int32_t a, int32_t b);
  int32_t max(int32_t a, int32_t b);
  int32_t ge(int32_t a, int32_t b);

  /// A value every assignment of the symbols (sizes, so >= 0, unless marked
  /// signed) gives at least; nullopt when the table cannot tell (a negative
  /// coefficient, a signed symbol).
  std::optional<int64_t> lowerBound(int32_t id) const;

  const std::vector<DimNode> &nodes() const { return nodes_; }
  const DimNode &node(int32_t id) const { return nodes_[size_t(id)]; }
  std::optional<int64_t> constantValue(int32_t id) const;

  /// "batch", "(height + -1) floordiv 2 + 1"; symbols by `symbolNames`
  /// (s<k> past its end).
  std::string print(int32_t id, const std::vector<std::string> &symbolNames) const;

private:
  int32_t intern(DimOp op, int64_t a, int64_t b);
  // Sums: a constant plus coefficient * term, terms sorted by id.
  struct Sum {
    int64_t constant = 0;
    std::map<int32_t, int64_t> terms;
  };
  Sum sumOf(int32_t id) const;
  int32_t fromSum(const Sum &sum);
  // Products: a coefficient times factors (with repeats), sorted by id.
  struct Product {
    int64_t coefficient = 1;
    std::vector<int32_t> factors;
  };
  Product productOf(int32_t id) const;
  int32_t fromProduct(const Product &product);
  int32_t divide(DimOp op, int32_t a, int32_t b);
  /// q when sum `a` is sum `b` times a product q, term by term.
  std::optional<int32_t> exactQuotient(int32_t a, int32_t b);
  int32_t extremum(DimOp op, int32_t a, int32_t b); // Min or Max

  std::vector<DimNode> nodes_;
  std::map<std::tuple<uint8_t, int64_t, int64_t>, int32_t> ids_;
  std::set<int64_t> signed_;
};

/// Evaluates `count` nodes in order into `out` (one value per node) with the
/// symbols' values. False, with `why`, on a division by zero or an overflow;
/// the nodes must have passed verifyDimNodes.
bool evaluateDimNodes(const DimNode *nodes, size_t count, const int64_t *symbols, size_t numSymbols,
                      int64_t *out, std::string &why);

/// Whether `count` nodes form a valid table: known ops, operands before their
/// user, symbol indices below `numSymbols`. Says what is wrong in `why`.
bool verifyDimNodes(const DimNode *nodes, size_t count, size_t numSymbols, std::string &why);

/// One dim as the compiler's shape rules handle it: an expression in a table.
struct SymDim {
  DimTable *table = nullptr;
  int32_t id = -1;

  std::optional<int64_t> constant() const { return table->constantValue(id); }
  friend bool operator==(SymDim x, SymDim y) { return x.id == y.id && x.table == y.table; }
  friend bool operator!=(SymDim x, SymDim y) { return !(x == y); }
};

inline SymDim lift(SymDim like, int64_t v) { return {like.table, like.table->constant(v)}; }
inline SymDim operator+(SymDim x, SymDim y) { return {x.table, x.table->add(x.id, y.id)}; }
inline SymDim operator-(SymDim x, SymDim y) { return {x.table, x.table->sub(x.id, y.id)}; }
inline SymDim operator*(SymDim x, SymDim y) { return {x.table, x.table->mul(x.id, y.id)}; }
inline SymDim operator+(SymDim x, int64_t y) { return x + lift(x, y); }
inline SymDim operator-(SymDim x, int64_t y) { return x - lift(x, y); }
inline SymDim operator*(SymDim x, int64_t y) { return x * lift(x, y); }
inline SymDim floorDiv(SymDim x, SymDim y) { return {x.table, x.table->floorDiv(x.id, y.id)}; }
inline SymDim floorDiv(SymDim x, int64_t y) { return floorDiv(x, lift(x, y)); }
inline SymDim ceilDiv(SymDim x, int64_t y) {
  return {x.table, x.table->ceilDiv(x.id, x.table->constant(y))};
}
inline SymDim dimMax(SymDim x, int64_t y) {
  return {x.table, x.table->max(x.id, x.table->constant(y))};
}
inline SymDim dimGe(SymDim x, SymDim y) { return {x.table, x.table->ge(x.id, y.id)}; }

// The same operations on integers, so that one template serves both.
inline int64_t floorDiv(int64_t x, int64_t y) {
  int64_t q = x / y;
  return (x % y != 0 && ((x < 0) != (y < 0))) ? q - 1 : q;
}
inline int64_t ceilDiv(int64_t x, int64_t y) { return -floorDiv(-x, y); }
inline int64_t dimMax(int64_t x, int64_t y) { return x > y ? x : y; }
inline int64_t dimGe(int64_t x, int64_t y) { return x >= y ? 1 : 0; }

} // namespace ortc

#endif // ORTC_RUNTIME_EP_DIMEXPR_H
