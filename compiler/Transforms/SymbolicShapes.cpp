//===- SymbolicShapes.cpp - every dynamic dim as an expression ------------===//
//
// The walk: each op's rule (ShapeInferenceOpInterface) proposes its results,
// a refiner (shape inference) may turn the proposals into types, and the
// results are recorded, a static dim of the type winning over the rule.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/SymbolicShapes.h"

#include "compiler/Transforms/ConstantValues.h"
#include "compiler/Transforms/HostTensor.h"
#include "compiler/Transforms/OpQueries.h"
#include "compiler/Transforms/ShapeRules/ShapeInferenceOpInterface.h"
#include "compiler/Transforms/ShapeRules/ShapeRuleContext.h"
#include "compiler/Transforms/ShapeRules/ShapeRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <cmath>
#include <set>

using namespace mlir;

namespace ortc {

namespace {

using Dims = SmallVector<int32_t>;

/// Whether `type` can hold a shape value: a scalar or short vector of
/// integers (int32 as Paddle2ONNX casts shapes, int64) or of whole floats
/// (YOLO's float Range over a grid).
bool isShapeValueType(Type t) {
  auto type = dyn_cast<RankedTensorType>(t);
  if (!type || type.getRank() > 1 || !type.hasStaticShape() || type.getNumElements() > 64)
    return false;
  Type e = type.getElementType();
  return ((e.isInteger(64) || e.isInteger(32)) && !e.isUnsignedInteger()) || e.isF32() ||
         e.isF64();
}

/// The elements of a constant shape value: integers, or floats that are
/// whole numbers.
std::optional<Dims> constantElements(Value v, DimTable &table) {
  if (auto values = getConstantIntValues(v)) {
    Dims e;
    for (int64_t x : *values)
      e.push_back(table.constant(x));
    return e;
  }
  auto type = cast<RankedTensorType>(v.getType());
  if (!type.getElementType().isIntOrIndex()) {
    std::optional<HostTensor> values = readHostTensor(v, 64);
    if (!values)
      return std::nullopt;
    Dims e;
    for (int64_t i = 0; i < values->numElements(); ++i) {
      double x = values->floatAt(i);
      if (x != std::floor(x) || std::abs(x) > double(int64_t(1) << 40))
        return std::nullopt;
      e.push_back(table.constant(int64_t(x)));
    }
    return e;
  }
  return std::nullopt;
}

} // namespace

SymbolicShapes::SymbolicShapes(func::FuncOp fn, Walk walk, ResultTypeRefiner *refiner)
    : refiner_(refiner), withRegions_(refiner || walk == Walk::WithRegions) {
  ensureShapeRules(fn.getContext());
  std::set<int64_t> dimSymbols, valueSymbols;
  for (unsigned i = 0; i < fn.getNumArguments(); ++i)
    seedArgument(fn, i, dimSymbols, valueSymbols);
  // A value may be negative (a pad, an axis); one that is also a dim is not.
  for (int64_t k : valueSymbols)
    if (!dimSymbols.count(k))
      table_.markSigned(k);
  // A region's arguments (a Loop body's iteration number, condition and
  // carried values) are bound per run of the region, as a function's are
  // per call: fresh symbols for their dynamic dims, and the elements of a
  // small integer one (the iteration number) are values.
  if (withRegions_)
    fn.walk([&](Block *block) {
      if (block->getParentOp() == fn.getOperation())
        return;
      for (BlockArgument arg : block->getArguments()) {
        auto type = dyn_cast<RankedTensorType>(arg.getType());
        if (!type || dims_.count(arg))
          continue;
        operandDims(arg);
        if (!isValueSymbolCarrier(type))
          continue;
        // A Loop's iteration number counts from 0: a size, not a signed value.
        bool iteration = arg.getArgNumber() == 0 &&
                         block->getParentOp()->getName().getStringRef() == "onnx.Loop";
        Dims &elements = elements_[arg];
        for (int64_t k = 0; k < type.getNumElements(); ++k) {
          elements.push_back(symbolNamed("?" + std::to_string(symbolNames_.size()) + "[]"));
          if (!iteration)
            table_.markSigned(table_.node(elements.back()).a);
        }
      }
    });
  // Post-order: a region's ops before the op that holds it (If reads what
  // its branches yield).
  fn.walk([&](Operation *op) {
    if (op != fn.getOperation() && (withRegions_ || op->getParentOp() == fn.getOperation()))
      visit(op);
  });
}

void SymbolicShapes::visit(Operation *op) {
  ShapeRuleContext ctx(*this, op, /*reportErrors=*/refiner_ != nullptr);
  auto rule = dyn_cast<ShapeInferenceOpInterface>(op);
  // A rule that fails proposes nothing (inference has reported why).
  if (rule && failed(rule.inferShapes(ctx)))
    ctx.markFailed();
  if (refiner_)
    refiner_->refine(op, ctx);
  for (unsigned i = 0; i < op->getNumResults(); ++i) {
    const ShapeRuleContext::Proposal &p = ctx.proposals()[i];
    record(op, i, p.dims, p.elements, /*leadingFallback=*/!rule);
  }
}

void SymbolicShapes::record(Operation *op, unsigned result, const std::optional<Dims> &dims,
                            const std::optional<Dims> &elements, bool leadingFallback) {
  Value v = op->getResult(result);
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!type)
    return;
  Dims &out = dims_[v];
  out.assign(type.getRank(), kUnknownDim);
  // A static dim of the type wins; a rule fills only the dynamic ones.
  for (int64_t i = 0; i < type.getRank(); ++i) {
    if (!type.isDynamicDim(i))
      out[i] = table_.constant(type.getDimSize(i));
    else if (dims && dims->size() == size_t(type.getRank()))
      out[i] = (*dims)[i];
  }
  if (isShapeValueType(type)) {
    size_t count = size_t(std::max<int64_t>(type.getNumElements(), 1));
    if (std::optional<Dims> constant = constantElements(v, table_))
      elements_[v] = *constant;
    else if (elements && elements->size() == count && !llvm::is_contained(*elements, kUnknownDim))
      elements_[v] = *elements;
    else if (isValueSymbolCarrier(type) && type.getNumElements() > 0) {
      // Computed from data (a Where over shape values, a Gather from a
      // tensor): each element is a data symbol the runtime reads from the
      // value once its step has run, so sizes built from it (an Expand or
      // Reshape target) are expressions like any other.
      Dims &symbols = elements_[v];
      for (int64_t k = 0; k < type.getNumElements(); ++k)
        symbols.push_back(elementSymbol(op, result, unsigned(k)));
    }
  }
  // Without a rule, a leading dynamic dim alone is the inputs' leading one
  // when they agree on it (the batch an op carries through), as the CPU EP's
  // batch-only claims have always read it.
  if (!leadingFallback || type.getRank() == 0 || out[0] != kUnknownDim)
    return;
  for (int64_t i = 1; i < type.getRank(); ++i)
    if (out[i] == kUnknownDim)
      return;
  int32_t lead = kUnknownDim;
  for (Value operand : op->getOperands()) {
    auto t = dyn_cast<RankedTensorType>(operand.getType());
    if (!t || t.getRank() == 0 || !t.isDynamicDim(0))
      continue;
    const Dims *d = this->dims(operand);
    if (!d || (*d)[0] == kUnknownDim || (lead != kUnknownDim && lead != (*d)[0]))
      return;
    lead = (*d)[0];
  }
  out[0] = lead;
}

const Dims *SymbolicShapes::operandDims(Value v) {
  if (const Dims *d = dims(v))
    return d;
  auto type = dyn_cast<RankedTensorType>(v.getType());
  if (!withRegions_ || !type)
    return nullptr;
  Dims &out = dims_[v];
  for (int64_t i = 0; i < type.getRank(); ++i)
    out.push_back(type.isDynamicDim(i)
                      ? symbolNamed("?" + std::to_string(symbolNames_.size()))
                      : table_.constant(type.getDimSize(i)));
  return &out;
}

int32_t SymbolicShapes::freshDataSymbol(Operation *op, unsigned result, const std::string &where) {
  // Named after the node; two nodes of one name (ONNX does not make names
  // unique) get "#2", "#3", ...
  std::string base =
      nodeNameOf(op, op->getName().stripDialect().str()) + "." + std::to_string(result) + where;
  std::string name = base;
  for (int k = 2; std::find(symbolNames_.begin(), symbolNames_.end(), name) != symbolNames_.end();
       ++k)
    name = base + "#" + std::to_string(k);
  int32_t id = symbolNamed(name);
  dataSymbols_.insert(table_.node(id).a);
  return id;
}

int32_t SymbolicShapes::dataSymbol(Operation *op, unsigned result, unsigned dim) {
  // One symbol per op result dim.
  auto key = std::make_tuple(op, result, dim);
  if (auto found = dataSymbolIds_.find(key); found != dataSymbolIds_.end())
    return found->second;
  int32_t id = freshDataSymbol(op, result, "[" + std::to_string(dim) + "]");
  dataSymbolIds_[key] = id;
  return id;
}

int32_t SymbolicShapes::elementSymbol(Operation *op, unsigned result, unsigned element) {
  auto key = std::make_tuple(op, result, element);
  if (auto found = elementSymbolIds_.find(key); found != elementSymbolIds_.end())
    return found->second;
  int32_t id = freshDataSymbol(op, result, "{" + std::to_string(element) + "}");
  int64_t index = table_.node(id).a;
  table_.markSigned(index); // a value, which may be negative
  elementSymbolIds_[key] = id;
  elementSymbolSources_[index] = {op->getResult(result), element};
  return id;
}

std::optional<std::pair<Value, unsigned>>
SymbolicShapes::elementSymbolSource(int64_t index) const {
  auto found = elementSymbolSources_.find(index);
  if (found == elementSymbolSources_.end())
    return std::nullopt;
  return found->second;
}

bool SymbolicShapes::readsDataSymbol(int32_t id) const {
  if (id < 0 || dataSymbols_.empty())
    return false;
  const DimNode &n = table_.node(id);
  switch (n.op) {
  case DimOp::Const:
    return false;
  case DimOp::Symbol:
    return dataSymbols_.count(n.a) != 0;
  default:
    return readsDataSymbol(int32_t(n.a)) || readsDataSymbol(int32_t(n.b));
  }
}

void SymbolicShapes::collectDataSymbols(int32_t id, std::set<int64_t> &out) const {
  if (id < 0 || !readsDataSymbol(id))
    return;
  const DimNode &n = table_.node(id);
  if (n.op == DimOp::Symbol) {
    out.insert(n.a);
    return;
  }
  collectDataSymbols(int32_t(n.a), out);
  collectDataSymbols(int32_t(n.b), out);
}

int32_t SymbolicShapes::symbolNamed(const std::string &name) {
  auto found = std::find(symbolNames_.begin(), symbolNames_.end(), name);
  if (found != symbolNames_.end())
    return table_.symbol(found - symbolNames_.begin());
  symbolNames_.push_back(name);
  return table_.symbol(int64_t(symbolNames_.size()) - 1);
}

void SymbolicShapes::seedArgument(func::FuncOp fn, unsigned index, std::set<int64_t> &dimSymbols,
                                  std::set<int64_t> &valueSymbols) {
  Value arg = fn.getArgument(index);
  auto type = dyn_cast<RankedTensorType>(arg.getType());
  if (!type)
    return;
  ArrayAttr names = fn.getArgAttrOfType<ArrayAttr>(index, "ortc.dim_symbols");
  if (!names)
    names = fn.getArgAttrOfType<ArrayAttr>(index, "onnx.dim_params");
  if (names && names.size() != size_t(type.getRank()))
    names = nullptr;
  auto argName = fn.getArgAttrOfType<StringAttr>(index, "onnx.name");
  Dims &dims = dims_[arg];
  for (int64_t d = 0; d < type.getRank(); ++d) {
    if (!type.isDynamicDim(d)) {
      dims.push_back(table_.constant(type.getDimSize(d)));
      continue;
    }
    std::string name;
    if (names)
      if (auto s = dyn_cast<StringAttr>(names[d]))
        name = s.str();
    if (!dimParamNamesSymbol(name))
      name = (argName ? argName.str() : "arg" + std::to_string(index)) + "." + std::to_string(d);
    dims.push_back(symbolNamed(name));
    dimSymbols.insert(table_.node(dims.back()).a);
  }
  // A small integer input (a window length, a target shape, pads) is a shape
  // value whose elements are symbols bound from its data at run time: "x[]"
  // for a scalar, "x[k]" for an element; a partition argument's are the
  // caller's expressions (ortc.value_symbols), integers for constants.
  if (!isValueSymbolCarrier(type))
    return;
  int64_t count = type.getNumElements();
  auto texts = fn.getArgAttrOfType<ArrayAttr>(index, "ortc.value_symbols");
  if (texts && int64_t(texts.size()) != count)
    texts = nullptr;
  std::string base = argName ? argName.str() : "arg" + std::to_string(index);
  Dims &elements = elements_[arg];
  for (int64_t k = 0; k < count; ++k) {
    std::string text = type.getRank() == 0 ? base + "[]" : base + "[" + std::to_string(k) + "]";
    if (texts)
      if (auto t = dyn_cast<StringAttr>(texts[k]))
        text = t.str();
    int64_t constant;
    if (!StringRef(text).getAsInteger(10, constant)) {
      elements.push_back(table_.constant(constant));
      continue;
    }
    elements.push_back(symbolNamed(text));
    // A Loop body's iteration number (ortc.nonnegative) is a count.
    if (!fn.getArgAttr(index, "ortc.nonnegative"))
      valueSymbols.insert(table_.node(elements.back()).a);
  }
}

bool isValueSymbolCarrier(RankedTensorType type) {
  Type e = type.getElementType();
  return (e.isInteger(64) || e.isInteger(32)) && !e.isUnsignedInteger() &&
         type.hasStaticShape() && type.getRank() <= 1 && type.getNumElements() <= 8;
}

const SmallVector<int32_t> *SymbolicShapes::dims(Value value) const {
  auto found = dims_.find(value);
  return found == dims_.end() ? nullptr : &found->second;
}

bool SymbolicShapes::known(Value value) const {
  const Dims *d = dims(value);
  return d && !llvm::is_contained(*d, kUnknownDim);
}

int32_t SymbolicShapes::product(ArrayRef<int32_t> dims) const {
  int32_t p = table_.constant(1);
  for (int32_t d : dims) {
    if (d == kUnknownDim)
      return kUnknownDim;
    p = table_.mul(p, d);
  }
  return p;
}

int32_t SymbolicShapes::numElements(Value value) const {
  const Dims *d = dims(value);
  return d ? product(*d) : kUnknownDim;
}

const SmallVector<int32_t> *SymbolicShapes::elements(Value value) const {
  auto found = elements_.find(value);
  return found == elements_.end() ? nullptr : &found->second;
}

std::string SymbolicShapes::print(int32_t dim) const {
  return dim == kUnknownDim ? "?" : table_.print(dim, symbolNames_);
}

std::string SymbolicShapes::print(Value value) const {
  const Dims *d = dims(value);
  if (!d)
    return "(unranked)";
  std::string text = "[";
  for (size_t i = 0; i < d->size(); ++i)
    text += (i ? ", " : "") + print((*d)[i]);
  return text + "]";
}

std::vector<std::string> dimSymbolsFor(const SymbolicShapes &shapes, Value value) {
  const Dims *d = shapes.dims(value);
  if (!d || !shapes.known(value))
    return {};
  std::vector<std::string> out;
  bool anySymbolic = false;
  for (int32_t id : *d) {
    bool symbolic = !shapes.table().constantValue(id);
    anySymbolic |= symbolic;
    out.push_back(symbolic ? shapes.print(id) : std::string());
  }
  return anySymbolic ? out : std::vector<std::string>{};
}

void annotateDimSymbols(func::FuncOp fn, ArrayRef<Value> callerValues,
                        const SymbolicShapes &shapes) {
  Builder builder(fn.getContext());
  for (auto [i, value] : llvm::enumerate(callerValues)) {
    std::vector<std::string> symbols = dimSymbolsFor(shapes, value);
    if (!symbols.empty()) {
      SmallVector<Attribute> names;
      for (const std::string &name : symbols)
        names.push_back(builder.getStringAttr(name));
      fn.setArgAttr(unsigned(i), "ortc.dim_symbols", builder.getArrayAttr(names));
    }
    // A small integer value: its elements as the caller knows them. (The
    // type is the partition's own: `value` may be of an op already outlined.)
    auto type = dyn_cast<RankedTensorType>(fn.getFunctionType().getInput(unsigned(i)));
    const SmallVector<int32_t> *elements = shapes.elements(value);
    if (!type || !isValueSymbolCarrier(type) || !elements)
      continue;
    SmallVector<Attribute> texts;
    for (int32_t id : *elements)
      texts.push_back(builder.getStringAttr(shapes.print(id)));
    fn.setArgAttr(unsigned(i), "ortc.value_symbols", builder.getArrayAttr(texts));
  }
}

void refineStaticResultTypes(func::FuncOp fn, const SymbolicShapes &shapes) {
  Operation *terminator = fn.getBody().front().getTerminator();
  llvm::SmallPtrSet<Value, 8> returned(terminator->operand_begin(), terminator->operand_end());
  for (Operation &op : fn.getBody().front().without_terminator())
    for (Value result : op.getResults()) {
      auto type = dyn_cast<RankedTensorType>(result.getType());
      const SmallVector<int32_t> *dims = shapes.dims(result);
      if (!type || type.hasStaticShape() || !dims || returned.contains(result))
        continue;
      SmallVector<int64_t> shape(type.getShape());
      bool refined = false;
      for (auto [d, id] : llvm::enumerate(*dims)) {
        std::optional<int64_t> constant =
            id == kUnknownDim ? std::nullopt : shapes.table().constantValue(id);
        if (ShapedType::isDynamic(shape[d]) && constant && *constant >= 0) {
          shape[d] = *constant;
          refined = true;
        }
      }
      if (refined)
        result.setType(RankedTensorType::get(shape, type.getElementType(), type.getEncoding()));
    }
}

std::optional<std::vector<int64_t>> SymbolicShapes::planShape(Value value) const {
  auto tensor = cast<RankedTensorType>(value.getType());
  const SmallVector<int32_t> *ids = dims(value);
  std::vector<int64_t> shape;
  for (int64_t i = 0; i < tensor.getRank(); ++i) {
    if (!tensor.isDynamicDim(i)) {
      shape.push_back(tensor.getDimSize(i));
      continue;
    }
    int32_t id = ids ? (*ids)[size_t(i)] : kUnknownDim;
    if (id == kUnknownDim)
      return std::nullopt;
    shape.push_back(planDim(id));
  }
  return shape;
}

} // namespace ortc
