//===- ShapeRuleContext.cpp - what a shape rule reads and sets ------------===//

#include "compiler/Transforms/ShapeRules/ShapeRuleContext.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/OpQueries.h"
#include "compiler/Transforms/SymbolicShapes.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

using namespace mlir;

namespace ortc {

ShapeRuleContext::ShapeRuleContext(SymbolicShapes &shapes, Operation *op, bool reportErrors)
    : shapes_(shapes), op_(op), reportErrors_(reportErrors), proposals_(op->getNumResults()) {}

DimTable &ShapeRuleContext::table() const { return shapes_.table(); }
int32_t ShapeRuleContext::dataDim(Value result, unsigned dim) {
  return shapes_.dataSymbol(op_, cast<OpResult>(result).getResultNumber(), dim);
}
int32_t ShapeRuleContext::constant(int64_t value) const { return table().constant(value); }
std::optional<int64_t> ShapeRuleContext::constantValue(int32_t id) const {
  return id == kUnknownDim ? std::nullopt : table().constantValue(id);
}

bool ShapeRuleContext::present(Value v) const { return v && !isAbsentOperand(v); }

const DimList *ShapeRuleContext::dims(Value v) const {
  return present(v) ? shapes_.operandDims(v) : nullptr;
}

const DimList *ShapeRuleContext::dimsOrUnranked(Value v, Value result, Type element) {
  const DimList *d = dims(v);
  if (!d)
    setUnranked(result, element);
  return d;
}

const DimList *ShapeRuleContext::elements(Value v) const {
  return present(v) ? shapes_.elements(v) : nullptr;
}

const DimList *ShapeRuleContext::bounds(Value v) {
  if (const DimList *e = elements(v))
    return e;
  auto values = constantInts(v);
  if (!values)
    return nullptr;
  DimList &out = scratch_.emplace_back();
  for (int64_t x : *values)
    out.push_back(constant(x));
  return &out;
}

std::optional<SmallVector<int64_t>> ShapeRuleContext::constantInts(Value v) const {
  return present(v) ? getConstantIntValues(v) : std::nullopt;
}

Type ShapeRuleContext::elementType(Value v) const {
  if (auto t = v ? dyn_cast<TensorType>(v.getType()) : nullptr)
    return t.getElementType();
  return nullptr;
}

int32_t ShapeRuleContext::product(ArrayRef<int32_t> dims) const { return shapes_.product(dims); }

ShapeRuleContext::Proposal *ShapeRuleContext::proposalFor(Value result) {
  auto r = dyn_cast_or_null<OpResult>(result);
  if (!r || r.getOwner() != op_ || isa<NoneType>(r.getType()))
    return nullptr;
  return &proposals_[r.getResultNumber()];
}

void ShapeRuleContext::setResult(Value result, Type element, DimList dims) {
  if (Proposal *p = proposalFor(result)) {
    p->element = element;
    p->dims = std::move(dims);
  }
}

void ShapeRuleContext::setUnranked(Value result, Type element) {
  if (Proposal *p = proposalFor(result)) {
    p->element = element;
    p->dims.reset();
  }
}

void ShapeRuleContext::setType(Value result, Type type) {
  if (Proposal *p = proposalFor(result))
    p->whole = type;
}

void ShapeRuleContext::setTakenFrom(Value result, TensorType type) {
  if (!type.hasRank()) {
    // Elements of unknown rank: the rank the model declares for the result
    // (the run refuses a tensor of another), its static dims, data for the
    // rest.
    auto declared = dyn_cast<RankedTensorType>(result.getType());
    if (!declared || declared.getElementType() != type.getElementType()) {
      setUnranked(result, type.getElementType());
      return;
    }
    type = declared;
  }
  DimList dims;
  for (int64_t d = 0; d < type.getRank(); ++d)
    dims.push_back(type.isDynamicDim(d) ? dataDim(result, unsigned(d))
                                        : constant(type.getDimSize(d)));
  setResult(result, type.getElementType(), dims);
}

void ShapeRuleContext::setDimsOf(Value result, Type element, Value like) {
  if (const DimList *d = dims(like))
    setResult(result, element, *d);
  else
    setUnranked(result, element);
}

void ShapeRuleContext::setLike(Value result, Value like) {
  setDimsOf(result, elementType(like), like);
}

void ShapeRuleContext::setElements(Value result, DimList elements) {
  if (Proposal *p = proposalFor(result))
    p->elements = std::move(elements);
}

LogicalResult ShapeRuleContext::fail(const Twine &message) {
  if (reportErrors_)
    op_->emitError(message);
  return failure();
}

void ShapeRuleContext::markFailed() {
  failed_ = true;
  proposals_.assign(op_->getNumResults(), Proposal());
}

FailureOr<std::optional<DimList>> broadcastDims(DimTable &t, ArrayRef<const DimList *> operands) {
  size_t rank = 0;
  for (const DimList *d : operands) {
    if (!d)
      return std::optional<DimList>();
    rank = std::max(rank, d->size());
  }
  DimList out(rank, t.constant(1));
  for (const DimList *d : operands)
    for (size_t i = 0; i < d->size(); ++i) {
      int32_t &o = out[rank - d->size() + i];
      int32_t x = (*d)[i];
      std::optional<int64_t> cx = x == kUnknownDim ? std::nullopt : t.constantValue(x);
      std::optional<int64_t> co = o == kUnknownDim ? std::nullopt : t.constantValue(o);
      if (cx == 1 || x == o)
        continue;
      if (co == 1) {
        o = x;
        continue;
      }
      if (cx && co)
        return failure(); // two static dims, neither 1, that differ
      if (co)
        continue; // a static dim other than 1 wins
      if (cx)
        o = x;
      else if (x == kUnknownDim || o == kUnknownDim)
        o = kUnknownDim;
      else
        o = t.max(o, x);
    }
  return std::optional<DimList>(std::move(out));
}

int32_t equalsConstant(DimTable &t, int32_t a, int64_t c) {
  // One expression per statement: ids follow creation, and C++ leaves the
  // order of arguments to the compiler.
  int32_t k = t.constant(c);
  int32_t atMost = t.ge(k, a);
  int32_t atLeast = t.ge(a, k);
  return t.mul(atLeast, atMost);
}

std::optional<int64_t> normalizeAxis(int64_t axis, int64_t rank) {
  if (axis < -rank || axis >= rank)
    return std::nullopt;
  return axis < 0 ? axis + rank : axis;
}

} // namespace ortc
