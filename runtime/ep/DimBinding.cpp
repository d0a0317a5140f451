//===- DimBinding.cpp - a plan's symbolic dims bound from its inputs ------===//

#include "runtime/ep/DimBinding.h"

namespace ortc {

namespace {
Status invalid(const std::string &message) {
  return Status::error(StatusCode::InvalidArgument, message);
}

std::string shapeText(const std::vector<int64_t> &shape) {
  std::string text = "[";
  for (size_t i = 0; i < shape.size() && i < 16; ++i)
    text += (i ? "," : "") + (shape[i] < 0 ? std::string("?") : std::to_string(shape[i]));
  return text + (shape.size() > 16 ? ",...]" : "]");
}
} // namespace

TensorSignature signatureFromDims(std::string name, ElementType type,
                                  const std::vector<int64_t> &dims,
                                  const std::vector<DimNode> &nodes,
                                  const std::vector<std::string> &symbols) {
  TensorSignature sig{std::move(name), type, dims};
  std::vector<std::string> names(dims.size());
  bool named = false;
  for (size_t d = 0; d < dims.size(); ++d) {
    if (dims[d] >= 0)
      continue;
    const DimNode &node = nodes[size_t(-(dims[d] + 1))];
    if (node.op == DimOp::Symbol && size_t(node.a) < symbols.size()) {
      names[d] = symbols[size_t(node.a)];
      named = true;
    }
    sig.shape[d] = -1;
  }
  if (named)
    sig.dimNames = std::move(names);
  return sig;
}

Result<DimBinding> DimBinding::create(std::vector<DimNode> nodes, std::vector<std::string> symbols,
                                      std::vector<TensorSignature> inputs,
                                      std::vector<std::vector<int64_t>> inputDims,
                                      std::vector<Check> checks, const std::vector<int64_t> &used,
                                      std::string what, std::vector<ValueSource> values) {
  // The nodes some used code reaches (operands precede their users).
  std::vector<char> live(nodes.size(), 0);
  auto mark = [&](int64_t code) {
    if (code < 0)
      live[size_t(-(code + 1))] = 1;
  };
  for (int64_t code : used)
    mark(code);
  for (const std::vector<int64_t> &dims : inputDims)
    for (int64_t code : dims)
      mark(code);
  for (const Check &c : checks) {
    mark(c.a);
    mark(c.b);
  }
  for (size_t k = nodes.size(); k-- > 0;) {
    const DimNode &n = nodes[k];
    if (!live[k] || n.op == DimOp::Const || n.op == DimOp::Symbol)
      continue;
    live[size_t(n.a)] = 1;
    live[size_t(n.b)] = 1;
  }
  std::vector<char> symbolUsed(symbols.size(), 0);
  for (size_t k = 0; k < nodes.size(); ++k) {
    if (!live[k])
      nodes[k] = DimNode{DimOp::Const, 0, 0}; // never read
    else if (nodes[k].op == DimOp::Symbol)
      symbolUsed[size_t(nodes[k].a)] = 1;
  }
  DimBinding b;
  b.sources_.assign(symbols.size(), {-1, -1});
  for (size_t i = 0; i < inputDims.size(); ++i)
    for (size_t d = 0; d < inputDims[i].size(); ++d) {
      int64_t code = inputDims[i][d];
      if (code >= 0)
        continue;
      const DimNode &node = nodes[size_t(-(code + 1))];
      if (node.op == DimOp::Symbol && b.sources_[size_t(node.a)].first < 0)
        b.sources_[size_t(node.a)] = {int(i), int(d)};
    }
  // Only the values some used node reads are read at each run.
  std::vector<char> fromValue(symbols.size(), 0);
  for (const ValueSource &v : values)
    if (v.symbol < fromValue.size() && symbolUsed[v.symbol] && !fromValue[v.symbol]) {
      fromValue[v.symbol] = 1;
      b.valueSources_.push_back(v);
    }
  for (size_t k = 0; k < symbols.size(); ++k)
    if (b.sources_[k].first < 0 && !fromValue[k] && symbolUsed[k])
      return invalid(what + ": symbol '" + symbols[k].substr(0, 80) +
                     "' is no input's dim, so no run can bind it");
  b.nodes_ = std::move(nodes);
  b.symbols_ = std::move(symbols);
  b.inputs_ = std::move(inputs);
  b.inputDims_ = std::move(inputDims);
  b.checks_ = std::move(checks);
  b.what_ = std::move(what);
  return b;
}

std::string DimBinding::describe(size_t input) const {
  return elementTypeName(inputs_[input].type) + shapeText(inputs_[input].shape);
}

Status DimBinding::bind(const std::vector<TensorView> &views, std::vector<int64_t> &values,
                        const ValueReader &read) const {
  if (views.size() != inputs_.size())
    return invalid(what_ + ": expected " + std::to_string(inputs_.size()) + " inputs, got " +
                   std::to_string(views.size()));
  std::vector<int64_t> symbols(symbols_.size(), 0);
  for (size_t k = 0; k < symbols_.size(); ++k) {
    auto [i, d] = sources_[k];
    if (i >= 0) // else no used node reads it
      symbols[k] = views[size_t(i)].shape.size() > size_t(d) ? views[size_t(i)].shape[size_t(d)] : 0;
  }
  for (size_t i = 0; i < views.size(); ++i) {
    const TensorView &view = views[i];
    const std::vector<int64_t> &dims = inputDims_[i];
    std::string got = elementTypeName(view.type) + shapeText(view.shape);
    if (view.type != inputs_[i].type || view.shape.size() != dims.size())
      return invalid(what_ + ": input '" + inputs_[i].name + "' must be " + describe(i) +
                     ", got " + got);
    for (size_t d = 0; d < dims.size(); ++d)
      if (view.shape[d] < 0 || (dims[d] >= 0 && view.shape[d] != dims[d]))
        return invalid(what_ + ": input '" + inputs_[i].name + "' must be " + describe(i) +
                       ", got " + got);
    if (!view.data && view.numElements() > 0)
      return invalid(what_ + ": input '" + inputs_[i].name + "' has no data");
  }
  // Symbols that are values of small integer inputs; one that is also a
  // dim must agree with it.
  for (const ValueSource &v : valueSources_) {
    if (!read)
      return invalid(what_ + ": symbol '" + symbols_[v.symbol] +
                     "' is a value of an input, which this runtime cannot read");
    Result<int64_t> value = read(v.input, v.element);
    if (!value.isOk())
      return Status::error(value.status().code(),
                           what_ + ": reading input '" + inputs_[v.input].name + "': " +
                               value.status().message());
    if (sources_[v.symbol].first >= 0 && symbols[v.symbol] != value.value())
      return invalid(what_ + ": input '" + inputs_[v.input].name + "' element " +
                     std::to_string(v.element) + " is " + std::to_string(value.value()) +
                     " but " + symbols_[v.symbol] + " is " + std::to_string(symbols[v.symbol]));
    symbols[v.symbol] = value.value();
  }
  values.assign(nodes_.size(), 0);
  std::string why;
  if (!evaluateDimNodes(nodes_.data(), nodes_.size(), symbols.data(), symbols.size(),
                        values.data(), why))
    return invalid(what_ + ": " + why);
  // Every symbolic input dim (a repeated symbol, or one derived from
  // others) must be what the bound symbols make it.
  for (size_t i = 0; i < views.size(); ++i)
    for (size_t d = 0; d < inputDims_[i].size(); ++d) {
      int64_t code = inputDims_[i][d];
      if (code < 0 && views[i].shape[d] != size(code, values))
        return invalid(what_ + ": input '" + inputs_[i].name + "' dim " + std::to_string(d) +
                       " is " + std::to_string(views[i].shape[d]) + " but the other inputs make it " +
                       std::to_string(size(code, values)));
    }
  for (const Check &check : checks_) {
    int64_t a = size(check.a, values), b = size(check.b, values);
    if (a != b)
      return invalid(what_ + ": " + check.what + " are " + std::to_string(a) + " and " +
                     std::to_string(b) + ", which this kernel needs equal");
  }
  return Status::ok();
}

} // namespace ortc
