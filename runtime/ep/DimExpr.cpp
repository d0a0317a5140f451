//===- DimExpr.cpp - symbolic tensor dims ---------------------------------===//

#include "runtime/ep/DimExpr.h"

#include <algorithm>
#include <numeric>

namespace ortc {

int32_t DimTable::intern(DimOp op, int64_t a, int64_t b) {
  auto key = std::make_tuple(uint8_t(op), a, b);
  auto found = ids_.find(key);
  if (found != ids_.end())
    return found->second;
  nodes_.push_back(DimNode{op, a, b});
  int32_t id = int32_t(nodes_.size()) - 1;
  ids_.emplace(key, id);
  return id;
}

int32_t DimTable::constant(int64_t value) { return intern(DimOp::Const, value, 0); }
int32_t DimTable::symbol(int64_t index) { return intern(DimOp::Symbol, index, 0); }

std::optional<int64_t> DimTable::constantValue(int32_t id) const {
  const DimNode &n = node(id);
  if (n.op == DimOp::Const)
    return n.a;
  return std::nullopt;
}

// Sums and products are rebuilt from their parts in one order, so that equal
// parts give equal ids: terms by id, then the constant; factors by id, with
// the coefficient first.

DimTable::Product DimTable::productOf(int32_t id) const {
  Product p;
  const DimNode &n = node(id);
  if (n.op == DimOp::Const) {
    p.coefficient = n.a;
  } else if (n.op == DimOp::Mul) {
    Product a = productOf(int32_t(n.a)), b = productOf(int32_t(n.b));
    p.coefficient = a.coefficient * b.coefficient;
    p.factors = a.factors;
    p.factors.insert(p.factors.end(), b.factors.begin(), b.factors.end());
    std::sort(p.factors.begin(), p.factors.end());
  } else {
    p.factors.push_back(id);
  }
  return p;
}

int32_t DimTable::fromProduct(const Product &p) {
  if (p.coefficient == 0 || p.factors.empty())
    return constant(p.factors.empty() ? p.coefficient : 0);
  int32_t acc = p.factors[0];
  for (size_t i = 1; i < p.factors.size(); ++i)
    acc = intern(DimOp::Mul, acc, p.factors[i]);
  if (p.coefficient != 1)
    acc = intern(DimOp::Mul, constant(p.coefficient), acc);
  return acc;
}

DimTable::Sum DimTable::sumOf(int32_t id) const {
  Sum s;
  const DimNode &n = node(id);
  if (n.op == DimOp::Const) {
    s.constant = n.a;
  } else if (n.op == DimOp::Add) {
    Sum a = sumOf(int32_t(n.a)), b = sumOf(int32_t(n.b));
    s = a;
    s.constant += b.constant;
    for (auto [term, c] : b.terms)
      s.terms[term] += c;
  } else {
    Product p = productOf(id);
    if (p.coefficient != 1) {
      // The unit product is a sub-node of `id` (fromProduct built it), so
      // it is looked up rather than built: this function is const.
      int32_t acc = p.factors[0];
      for (size_t i = 1; i < p.factors.size(); ++i)
        acc = ids_.at(std::make_tuple(uint8_t(DimOp::Mul), int64_t(acc), int64_t(p.factors[i])));
      s.terms[acc] = p.coefficient;
    } else {
      s.terms[id] = 1;
    }
  }
  return s;
}

int32_t DimTable::fromSum(const Sum &s) {
  int32_t acc = -1;
  for (auto [term, c] : s.terms) {
    if (c == 0)
      continue;
    Product p = productOf(term);
    p.coefficient *= c;
    int32_t t = fromProduct(p);
    acc = acc < 0 ? t : intern(DimOp::Add, acc, t);
  }
  if (acc < 0)
    return constant(s.constant);
  if (s.constant != 0)
    acc = intern(DimOp::Add, acc, constant(s.constant));
  return acc;
}

int32_t DimTable::add(int32_t a, int32_t b) {
  Sum s = sumOf(a), t = sumOf(b);
  s.constant += t.constant;
  for (auto [term, c] : t.terms)
    s.terms[term] += c;
  return fromSum(s);
}

int32_t DimTable::sub(int32_t a, int32_t b) {
  Sum s = sumOf(a), t = sumOf(b);
  s.constant -= t.constant;
  for (auto [term, c] : t.terms)
    s.terms[term] -= c;
  return fromSum(s);
}

int32_t DimTable::mul(int32_t a, int32_t b) {
  std::optional<int64_t> ca = constantValue(a), cb = constantValue(b);
  if (cb && !ca) {
    std::swap(a, b);
    std::swap(ca, cb);
  }
  if (ca) {
    // A constant scales a sum term by term: 2 * (x + 1) is 2 * x + 2.
    Sum s = sumOf(b);
    s.constant *= *ca;
    for (auto &[term, c] : s.terms)
      c *= *ca;
    return fromSum(s);
  }
  Product p = productOf(a), q = productOf(b);
  p.coefficient *= q.coefficient;
  p.factors.insert(p.factors.end(), q.factors.begin(), q.factors.end());
  std::sort(p.factors.begin(), p.factors.end());
  return fromProduct(p);
}

int32_t DimTable::divide(DimOp op, int32_t a, int32_t b) {
  std::optional<int64_t> ca = constantValue(a), cb = constantValue(b);
  if (ca && cb && *cb != 0) {
    if (op == DimOp::FloorDiv)
      return constant(ortc::floorDiv(*ca, *cb));
    if (op == DimOp::CeilDiv)
      return constant(ortc::ceilDiv(*ca, *cb));
    return constant(*ca - ortc::floorDiv(*ca, *cb) * *cb);
  }
  if (cb && *cb == 1)
    return op == DimOp::Mod ? constant(0) : a;
  // Exact division by a constant: every part of the sum divides.
  if (cb && *cb != 0) {
    Sum s = sumOf(a);
    bool exact = s.constant % *cb == 0;
    for (auto [term, c] : s.terms)
      exact = exact && c % *cb == 0;
    if (exact) {
      if (op == DimOp::Mod)
        return constant(0);
      s.constant /= *cb;
      for (auto &[term, c] : s.terms)
        c /= *cb;
      return fromSum(s);
    }
    // A factor common to every part and the divisor cancels from a floor or
    // ceiling ((4 * s) floordiv 6 is (2 * s) floordiv 3).
    int64_t g = std::gcd(s.constant, *cb);
    for (auto [term, c] : s.terms)
      g = std::gcd(g, c);
    if (op != DimOp::Mod && g > 1) {
      s.constant /= g;
      for (auto &[term, c] : s.terms)
        c /= g;
      return divide(op, fromSum(s), constant(*cb / g));
    }
  }
  // Exact division of sums: a is the divisor times one product q, term by
  // term ((1024 * h + 1024) floordiv (h + 1) is 1024).
  if (!cb && node(b).op == DimOp::Add)
    if (std::optional<int32_t> q = exactQuotient(a, b))
      return op == DimOp::Mod ? constant(0) : *q;
  // Exact division of products: the divisor's factors cancel (dims are
  // positive, so a factor that cancels is not zero when the result is used).
  if (!cb && node(a).op != DimOp::Add) {
    Product p = productOf(a), q = productOf(b);
    bool exact = q.coefficient != 0 && p.coefficient % q.coefficient == 0;
    for (int32_t f : q.factors) {
      auto it = std::find(p.factors.begin(), p.factors.end(), f);
      if (it == p.factors.end()) {
        exact = false;
        break;
      }
      p.factors.erase(it);
    }
    if (exact) {
      if (op == DimOp::Mod)
        return constant(0);
      p.coefficient /= q.coefficient;
      return fromProduct(p);
    }
    // Not exact, but common factors still cancel from a floor or ceiling
    // of a quotient ((b * s) floordiv (2 * b) is s floordiv 2): the real
    // quotient is unchanged.
    if (op != DimOp::Mod && q.coefficient != 0) {
      Product num = productOf(a), den = productOf(b);
      bool cancelled = false;
      for (auto it = den.factors.begin(); it != den.factors.end();) {
        auto match = std::find(num.factors.begin(), num.factors.end(), *it);
        if (match == num.factors.end()) {
          ++it;
          continue;
        }
        num.factors.erase(match);
        it = den.factors.erase(it);
        cancelled = true;
      }
      int64_t g = std::gcd(num.coefficient, den.coefficient);
      if (g > 1) {
        num.coefficient /= g;
        den.coefficient /= g;
        cancelled = true;
      }
      if (cancelled)
        return divide(op, fromProduct(num), fromProduct(den));
    }
  }
  return intern(op, a, b);
}

std::optional<int32_t> DimTable::exactQuotient(int32_t a, int32_t b) {
  Sum dividend = sumOf(a), divisor = sumOf(b);
  if (divisor.terms.empty())
    return std::nullopt;
  // The divisor's first term times q must be one of the dividend's terms
  // (or its constant, when q is a constant over a constant term).
  auto [leadTerm, leadCoefficient] = *divisor.terms.begin();
  Product lead = productOf(leadTerm);
  lead.coefficient *= leadCoefficient;
  for (auto [term, coefficient] : dividend.terms) {
    Product p = productOf(term);
    p.coefficient *= coefficient;
    // q = p / lead, when lead's factors and coefficient divide p's.
    if (lead.coefficient == 0 || p.coefficient % lead.coefficient != 0)
      continue;
    Product q{p.coefficient / lead.coefficient, p.factors};
    bool divides = true;
    for (int32_t f : lead.factors) {
      auto it = std::find(q.factors.begin(), q.factors.end(), f);
      if (it == q.factors.end()) {
        divides = false;
        break;
      }
      q.factors.erase(it);
    }
    if (!divides)
      continue;
    // divisor * q, distributed, must be the dividend.
    Sum product;
    auto addTerm = [&](Product t) {
      if (t.factors.empty()) {
        product.constant += t.coefficient;
        return;
      }
      int64_t c = t.coefficient;
      t.coefficient = 1;
      product.terms[fromProduct(t)] += c;
    };
    for (auto [t, c] : divisor.terms) {
      Product f = productOf(t);
      f.coefficient *= c * q.coefficient;
      f.factors.insert(f.factors.end(), q.factors.begin(), q.factors.end());
      std::sort(f.factors.begin(), f.factors.end());
      addTerm(f);
    }
    addTerm(Product{divisor.constant * q.coefficient, q.factors});
    for (auto it = product.terms.begin(); it != product.terms.end();)
      it = it->second == 0 ? product.terms.erase(it) : std::next(it);
    Sum want = dividend;
    for (auto it = want.terms.begin(); it != want.terms.end();)
      it = it->second == 0 ? want.terms.erase(it) : std::next(it);
    if (product.constant == want.constant && product.terms == want.terms)
      return fromProduct(q);
  }
  return std::nullopt;
}

int32_t DimTable::floorDiv(int32_t a, int32_t b) { return divide(DimOp::FloorDiv, a, b); }
int32_t DimTable::ceilDiv(int32_t a, int32_t b) { return divide(DimOp::CeilDiv, a, b); }
int32_t DimTable::mod(int32_t a, int32_t b) { return divide(DimOp::Mod, a, b); }

std::optional<int64_t> DimTable::lowerBound(int32_t id) const {
  const DimNode &n = node(id);
  auto operands = [&]() {
    return std::make_pair(lowerBound(int32_t(n.a)), lowerBound(int32_t(n.b)));
  };
  switch (n.op) {
  case DimOp::Const:
    return n.a;
  case DimOp::Symbol:
    return isSigned(n.a) ? std::nullopt : std::optional<int64_t>(0);
  case DimOp::Add: {
    auto [a, b] = operands();
    int64_t sum;
    if (a && b && !__builtin_add_overflow(*a, *b, &sum))
      return sum;
    return std::nullopt;
  }
  case DimOp::Mul: {
    auto [a, b] = operands();
    int64_t product;
    if (a && b && *a >= 0 && *b >= 0 && !__builtin_mul_overflow(*a, *b, &product))
      return product;
    return std::nullopt;
  }
  case DimOp::FloorDiv:
  case DimOp::CeilDiv: {
    std::optional<int64_t> a = lowerBound(int32_t(n.a)), divisor = constantValue(int32_t(n.b));
    if (!a || !divisor || *divisor <= 0)
      return std::nullopt;
    return n.op == DimOp::FloorDiv ? ortc::floorDiv(*a, *divisor) : ortc::ceilDiv(*a, *divisor);
  }
  case DimOp::Mod: {
    std::optional<int64_t> divisor = constantValue(int32_t(n.b));
    return divisor && *divisor > 0 ? std::optional<int64_t>(0) : std::nullopt;
  }
  case DimOp::Min: {
    auto [a, b] = operands();
    return a && b ? std::optional<int64_t>(std::min(*a, *b)) : std::nullopt;
  }
  case DimOp::Max: {
    auto [a, b] = operands();
    if (a && b)
      return std::max(*a, *b);
    return a ? a : b;
  }
  case DimOp::Ge:
    return 0;
  }
  return std::nullopt;
}

bool DimTable::readsSigned(int32_t id) const {
  const DimNode &n = node(id);
  if (n.op == DimOp::Const)
    return false;
  if (n.op == DimOp::Symbol)
    return isSigned(n.a);
  return readsSigned(int32_t(n.a)) || readsSigned(int32_t(n.b));
}

int32_t DimTable::extremum(DimOp op, int32_t a, int32_t b) {
  std::optional<int64_t> ca = constantValue(a), cb = constantValue(b);
  if (ca && cb)
    return constant(op == DimOp::Min ? std::min(*ca, *cb) : std::max(*ca, *cb));
  if (a == b)
    return a;
  if (ca && !cb) {
    std::swap(a, b);
    std::swap(ca, cb);
  }
  // Sizes are never negative: max(x, 0) is x and min(x, 0) is 0, and so for
  // any bound x is known to reach.
  if (cb) {
    std::optional<int64_t> low = lowerBound(a);
    if (low && *low >= *cb)
      return op == DimOp::Max ? a : b;
  }
  DimOp dual = op == DimOp::Max ? DimOp::Min : DimOp::Max;
  for (auto [x, y] : {std::make_pair(a, b), std::make_pair(b, a)}) {
    const DimNode &ny = node(y);
    bool hasX = ny.a == x || ny.b == x;
    // max(x, min(x, z)) is x; max(x, max(x, z)) is max(x, z).
    if (hasX && ny.op == dual)
      return x;
    if (hasX && ny.op == op)
      return y;
  }
  return intern(op, std::min(a, b), std::max(a, b));
}

int32_t DimTable::min(int32_t a, int32_t b) { return extremum(DimOp::Min, a, b); }
int32_t DimTable::max(int32_t a, int32_t b) { return extremum(DimOp::Max, a, b); }

int32_t DimTable::ge(int32_t a, int32_t b) {
  std::optional<int64_t> ca = constantValue(a), cb = constantValue(b);
  if (ca && cb)
    return constant(*ca >= *cb ? 1 : 0);
  if (a == b)
    return constant(1);
  return intern(DimOp::Ge, a, b);
}

std::string DimTable::print(int32_t id, const std::vector<std::string> &symbolNames) const {
  const DimNode &n = node(id);
  auto operand = [&](int64_t child) {
    DimOp op = node(int32_t(child)).op;
    std::string text = print(int32_t(child), symbolNames);
    bool atom = op == DimOp::Const || op == DimOp::Symbol || op == DimOp::Min || op == DimOp::Max ||
                op == DimOp::Ge;
    return atom ? text : "(" + text + ")";
  };
  switch (n.op) {
  case DimOp::Const:
    return std::to_string(n.a);
  case DimOp::Symbol:
    return size_t(n.a) < symbolNames.size() ? symbolNames[size_t(n.a)] : "s" + std::to_string(n.a);
  case DimOp::Add: {
    // A sum reads left to right without inner parentheses.
    std::string left =
        node(int32_t(n.a)).op == DimOp::Add ? print(int32_t(n.a), symbolNames) : operand(n.a);
    return left + " + " + operand(n.b);
  }
  case DimOp::Mul: {
    std::string left =
        node(int32_t(n.a)).op == DimOp::Mul ? print(int32_t(n.a), symbolNames) : operand(n.a);
    return left + " * " + operand(n.b);
  }
  case DimOp::FloorDiv:
    return operand(n.a) + " floordiv " + operand(n.b);
  case DimOp::CeilDiv:
    return operand(n.a) + " ceildiv " + operand(n.b);
  case DimOp::Mod:
    return operand(n.a) + " mod " + operand(n.b);
  case DimOp::Min:
  case DimOp::Max:
  case DimOp::Ge: {
    const char *fn = n.op == DimOp::Min ? "min(" : n.op == DimOp::Max ? "max(" : "ge(";
    return fn + print(int32_t(n.a), symbolNames) + ", " + print(int32_t(n.b), symbolNames) + ")";
  }
  }
  return "?";
}

bool verifyDimNodes(const DimNode *nodes, size_t count, size_t numSymbols, std::string &why) {
  for (size_t i = 0; i < count; ++i) {
    const DimNode &n = nodes[i];
    if (uint8_t(n.op) > kLastDimOp) {
      why = "dim node " + std::to_string(i) + " has unknown op " + std::to_string(int(n.op));
      return false;
    }
    if (n.op == DimOp::Const)
      continue;
    if (n.op == DimOp::Symbol) {
      if (n.a < 0 || uint64_t(n.a) >= numSymbols) {
        why = "dim node " + std::to_string(i) + " names symbol " + std::to_string(n.a) + " of " +
              std::to_string(numSymbols);
        return false;
      }
      continue;
    }
    if (n.a < 0 || n.b < 0 || uint64_t(n.a) >= i || uint64_t(n.b) >= i) {
      why = "dim node " + std::to_string(i) + " reads a node that does not precede it";
      return false;
    }
  }
  return true;
}

bool evaluateDimNodes(const DimNode *nodes, size_t count, const int64_t *symbols, size_t numSymbols,
                      int64_t *out, std::string &why) {
  for (size_t i = 0; i < count; ++i) {
    const DimNode &n = nodes[i];
    if (n.op == DimOp::Const) {
      out[i] = n.a;
      continue;
    }
    if (n.op == DimOp::Symbol) {
      if (uint64_t(n.a) >= numSymbols) {
        why = "dim node " + std::to_string(i) + " names an unbound symbol";
        return false;
      }
      out[i] = symbols[n.a];
      continue;
    }
    int64_t a = out[n.a], b = out[n.b], r = 0;
    bool overflow = false;
    switch (n.op) {
    case DimOp::Add:
      overflow = __builtin_add_overflow(a, b, &r);
      break;
    case DimOp::Mul:
      overflow = __builtin_mul_overflow(a, b, &r);
      break;
    case DimOp::FloorDiv:
    case DimOp::CeilDiv:
    case DimOp::Mod:
      if (b == 0) {
        why = "a dim divides by zero";
        return false;
      }
      overflow = a == INT64_MIN && b == -1;
      if (!overflow)
        r = n.op == DimOp::FloorDiv  ? floorDiv(a, b)
            : n.op == DimOp::CeilDiv ? ceilDiv(a, b)
                                     : a - floorDiv(a, b) * b;
      break;
    case DimOp::Min:
      r = std::min(a, b);
      break;
    case DimOp::Max:
      r = std::max(a, b);
      break;
    case DimOp::Ge:
      r = a >= b ? 1 : 0;
      break;
    default:
      why = "dim node " + std::to_string(i) + " has unknown op";
      return false;
    }
    if (overflow) {
      why = "a dim overflows 64 bits";
      return false;
    }
    out[i] = r;
  }
  return true;
}

} // namespace ortc
