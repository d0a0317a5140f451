//===- OnnxImporter.cpp - ONNX ModelProto to the onnx dialect -------------===//

#include "compiler/Import/OnnxImporter.h"

#include "compiler/Import/OpsetUpgrade.h"
#include "compiler/Import/TensorImport.h"
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/OnnxSchema.h"
#include "runtime/support/ModelFile.h"

#include "onnx/onnx_pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/Verifier.h"
#include "llvm/ADT/ScopeExit.h"
#include "llvm/ADT/StringMap.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/raw_ostream.h"

#include <cstring>
#include <map>

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace ortc {
namespace {

// Where a node came from, for messages: "node 'conv1' (Conv)".
std::string describeNode(const onnx::NodeProto &node, int index) {
  std::string op = node.domain().empty() || node.domain() == "ai.onnx"
                       ? node.op_type()
                       : node.domain() + "::" + node.op_type();
  if (!node.name().empty())
    return "node '" + node.name() + "' (" + op + ")";
  return "node #" + std::to_string(index) + " (" + op + ", unnamed)";
}

/// The values of `value` when an onnx.Constant of at most 64 float32 elements
/// produces it (an initializer or a Constant node), for OpsetUpgrade.
std::optional<std::vector<float>> smallF32Constant(Value value) {
  Operation *op = value ? value.getDefiningOp() : nullptr;
  if (!op || op->getName().getStringRef() != "onnx.Constant")
    return std::nullopt;
  if (auto single = op->getAttrOfType<FloatAttr>("value_float"))
    if (single.getType().isF32())
      return std::vector<float>{float(single.getValueAsDouble())};
  if (auto list = op->getAttrOfType<DenseF32ArrayAttr>("value_floats"))
    return std::vector<float>(list.asArrayRef().begin(), list.asArrayRef().end());
  auto elements = dyn_cast_or_null<ElementsAttr>(op->getAttr("value"));
  if (!elements || !elements.getElementType().isF32() ||
      !elements.getShapedType().hasStaticShape() || elements.getNumElements() > 64)
    return std::nullopt;
  if (auto dense = dyn_cast<DenseFPElementsAttr>(elements)) {
    std::vector<float> out;
    for (const APFloat &v : dense.getValues<APFloat>())
      out.push_back(v.convertToFloat());
    return out;
  }
  auto resource = dyn_cast<DenseResourceElementsAttr>(elements);
  AsmResourceBlob *blob = resource ? resource.getRawHandle().getBlob() : nullptr;
  if (!blob)
    return std::nullopt;
  ArrayRef<char> data = blob->getData();
  std::vector<float> out(elements.getNumElements());
  if (data.size() != out.size() * sizeof(float))
    return std::nullopt;
  if (!out.empty())
    std::memcpy(out.data(), data.data(), data.size());
  return out;
}

class Importer {
public:
  Importer(MLIRContext &context, onnx::ModelProto &model, const std::string &path,
           const ImportOptions &options)
      : context(context), builder(&context), model(model), path(path), options(options),
        tensors(context, modelDirectory(path)) {}

  OwningOpRef<ModuleOp> run(std::string &error);

private:
  // One lexical scope of ONNX value names (the main graph or a subgraph).
  using Scope = llvm::StringMap<Value>;

  LogicalResult fail(const std::string &message) {
    if (firstError.empty())
      firstError = path + ": " + message;
    return failure();
  }

  Value lookup(llvm::StringRef name) const {
    for (auto it = scopes.rbegin(); it != scopes.rend(); ++it) {
      auto found = it->find(name);
      if (found != it->end())
        return found->second;
    }
    return nullptr;
  }
  LogicalResult define(llvm::StringRef name, Value value, const std::string &what) {
    if (lookup(name))
      return fail(what + " defines value '" + name.str() +
                  "' that is already defined (ONNX values have one producer)");
    scopes.back()[name] = value;
    return success();
  }

  LogicalResult importOpsets();
  LogicalResult importMainGraph(ModuleOp module);
  void collectValueInfo(const onnx::GraphProto &graph);
  LogicalResult importInitializers(onnx::GraphProto &graph);
  LogicalResult importNodes(onnx::GraphProto &graph);
  LogicalResult importNode(onnx::NodeProto &node, int index);
  FailureOr<SmallVector<Value>> importGraphBody(onnx::GraphProto &graph,
                                                const std::string &outputWhat);
  LogicalResult importSubgraph(onnx::GraphProto &graph, Region &region, const std::string &owner,
                               ArrayRef<Type> inputHints = {});
  SmallVector<Type> subgraphInputHints(const onnx::NodeProto &node, const std::string &domain,
                                       int64_t version, ArrayRef<Value> operands);
  FailureOr<Type> importValueType(const onnx::TypeProto &type, const std::string &what,
                                  SmallVectorImpl<Attribute> *dimParams);
  FailureOr<Attribute> importAttribute(const onnx::AttributeProto &attr, int kindOverride,
                                       const std::string &what);
  Type outputType(const onnx::NodeProto &node, unsigned index, const od::OnnxOpSchema *schema,
                  ArrayRef<Value> operands);
  Type constantType(const onnx::NodeProto &node);
  /// `type` as a hint for a result: null when unusable, never an error.
  /// Refuses an If, Loop or Scan whose subgraphs take or yield a number of
  /// values the node's inputs and outputs do not give them.
  LogicalResult checkSubgraphArity(const onnx::NodeProto &node, Operation *op,
                                   const std::string &what);
  Type typeHint(const onnx::TypeProto &type) {
    std::string saved = firstError;
    FailureOr<Type> imported = importValueType(type, "type hint", nullptr);
    firstError = saved;
    return succeeded(imported) ? *imported : Type();
  }
  DictionaryAttr interfaceAttrs(const std::string &name, ArrayRef<Attribute> dimParams);
  Location nodeLocation(const onnx::NodeProto &node, int index);

  MLIRContext &context;
  OpBuilder builder;
  onnx::ModelProto &model;
  std::string path;
  ImportOptions options;
  TensorImporter tensors;
  std::string firstError;
  std::map<std::string, int64_t> opsets;
  SmallVector<Scope> scopes;
  // value_info of every graph level, by name: the declared types of node outputs.
  std::map<std::string, const onnx::TypeProto *> declaredTypes;
  int numUpgradeConstants = 0;
  Value noValue;
};

//===----------------------------------------------------------------------===//
// Types
//===----------------------------------------------------------------------===//

FailureOr<Type> Importer::importValueType(const onnx::TypeProto &type, const std::string &what,
                                          SmallVectorImpl<Attribute> *dimParams) {
  switch (type.value_case()) {
  case onnx::TypeProto::kTensorType: {
    const auto &tensor = type.tensor_type();
    Type elem = tensorElementType(context, tensor.elem_type());
    if (!elem)
      return fail(what + " has unknown element type " + std::to_string(tensor.elem_type()));
    if (!tensor.has_shape())
      return Type(UnrankedTensorType::get(elem));
    SmallVector<int64_t> shape;
    bool anyParam = false;
    SmallVector<Attribute> params;
    for (const auto &dim : tensor.shape().dim()) {
      if (dim.has_dim_value() && dim.dim_value() < 0) {
        // Exporters (Paddle2ONNX) write -1 for a dynamic dim; onnxruntime
        // reads it so.
        std::string text = what + " has negative dimension " + std::to_string(dim.dim_value());
        if (options.strictShapes)
          return fail(text);
        emitWarning(builder.getUnknownLoc(), text + " at position " + std::to_string(shape.size()) +
                                                 "; it is read as a dynamic dim");
        shape.push_back(ShapedType::kDynamic);
        params.push_back(builder.getStringAttr(""));
      } else if (dim.has_dim_value()) {
        shape.push_back(dim.dim_value());
        params.push_back(builder.getStringAttr(""));
      } else {
        shape.push_back(ShapedType::kDynamic);
        params.push_back(builder.getStringAttr(dim.dim_param()));
        anyParam |= !dim.dim_param().empty();
      }
    }
    if (dimParams && anyParam)
      dimParams->assign(params.begin(), params.end());
    return Type(RankedTensorType::get(shape, elem));
  }
  case onnx::TypeProto::kSequenceType:
  case onnx::TypeProto::kOptionalType: {
    bool isSeq = type.value_case() == onnx::TypeProto::kSequenceType;
    bool hasElem =
        isSeq ? type.sequence_type().has_elem_type() : type.optional_type().has_elem_type();
    FailureOr<Type> elem = Type(od::UnknownType::get(&context));
    if (hasElem)
      elem = importValueType(isSeq ? type.sequence_type().elem_type()
                                   : type.optional_type().elem_type(),
                             what, nullptr);
    if (failed(elem))
      return failure();
    if (isSeq)
      return Type(od::SeqType::get(&context, *elem));
    return Type(od::OptType::get(&context, *elem));
  }
  case onnx::TypeProto::kMapType: {
    Type key = tensorElementType(context, type.map_type().key_type());
    if (!key)
      return fail(what + " has a map with unknown key type " +
                  std::to_string(type.map_type().key_type()));
    auto value = importValueType(type.map_type().value_type(), what, nullptr);
    if (failed(value))
      return failure();
    return Type(od::MapType::get(&context, key, *value));
  }
  case onnx::TypeProto::kSparseTensorType:
    return fail(what + " is a sparse tensor, which ortc does not import yet");
  default:
    return fail(what + " has no type");
  }
}

//===----------------------------------------------------------------------===//
// Attributes
//===----------------------------------------------------------------------===//

// Kinds of AttributeProto.type, mapped to the schema's AttrKind where one exists.
FailureOr<Attribute> Importer::importAttribute(const onnx::AttributeProto &attr, int kindOverride,
                                               const std::string &what) {
  using AP = onnx::AttributeProto;
  int kind = attr.type();
  if (kind == AP::UNDEFINED) {
    // Old exporters leave the type out; the field that is set tells it.
    if (attr.has_f())
      kind = AP::FLOAT;
    else if (attr.has_i())
      kind = AP::INT;
    else if (attr.has_s())
      kind = AP::STRING;
    else if (attr.has_t())
      kind = AP::TENSOR;
    else if (attr.has_g())
      kind = AP::GRAPH;
    else if (attr.floats_size())
      kind = AP::FLOATS;
    else if (attr.ints_size())
      kind = AP::INTS;
    else if (attr.strings_size())
      kind = AP::STRINGS;
    else if (attr.tensors_size())
      kind = AP::TENSORS;
    else if (attr.graphs_size())
      kind = AP::GRAPHS;
    else if (attr.has_tp())
      kind = AP::TYPE_PROTO;
    else if (attr.has_sparse_tensor())
      kind = AP::SPARSE_TENSOR;
  }
  if (kindOverride >= 0 && kind != kindOverride) {
    // An empty list carries no type information of its own.
    bool emptyList =
        (kind == AP::INTS || kind == AP::FLOATS || kind == AP::STRINGS) &&
        (kindOverride == AP::INTS || kindOverride == AP::FLOATS || kindOverride == AP::STRINGS) &&
        attr.ints_size() + attr.floats_size() + attr.strings_size() == 0;
    if (!emptyList)
      return fail(what + ": attribute '" + attr.name() + "' has type " +
                  AP::AttributeType_Name(static_cast<AP::AttributeType>(kind)) +
                  ", the schema expects " +
                  AP::AttributeType_Name(static_cast<AP::AttributeType>(kindOverride)));
    kind = kindOverride;
  }
  std::string attrWhat = what + ": attribute '" + attr.name() + "'";
  switch (kind) {
  case AP::INT:
    return Attribute(builder.getI64IntegerAttr(attr.i()));
  case AP::FLOAT:
    return Attribute(builder.getF32FloatAttr(attr.f()));
  case AP::STRING:
    return Attribute(builder.getStringAttr(attr.s()));
  case AP::INTS:
    return Attribute(
        builder.getDenseI64ArrayAttr(SmallVector<int64_t>(attr.ints().begin(), attr.ints().end())));
  case AP::FLOATS:
    return Attribute(builder.getDenseF32ArrayAttr(
        SmallVector<float>(attr.floats().begin(), attr.floats().end())));
  case AP::STRINGS: {
    SmallVector<StringRef> strings(attr.strings().begin(), attr.strings().end());
    return Attribute(builder.getStrArrayAttr(strings));
  }
  case AP::TENSOR: {
    auto tensor = tensors.importTensor(const_cast<onnx::TensorProto &>(attr.t()), attrWhat);
    if (failed(tensor))
      return fail(tensors.takeError());
    return Attribute(*tensor);
  }
  case AP::TENSORS: {
    SmallVector<Attribute> list;
    for (const auto &t : attr.tensors()) {
      auto tensor = tensors.importTensor(const_cast<onnx::TensorProto &>(t), attrWhat);
      if (failed(tensor))
        return fail(tensors.takeError());
      list.push_back(*tensor);
    }
    return Attribute(builder.getArrayAttr(list));
  }
  case AP::SPARSE_TENSOR: {
    auto &sparse = const_cast<onnx::SparseTensorProto &>(attr.sparse_tensor());
    auto values = tensors.importTensor(*sparse.mutable_values(), attrWhat + " values");
    if (failed(values))
      return fail(tensors.takeError());
    auto indices = tensors.importTensor(*sparse.mutable_indices(), attrWhat + " indices");
    if (failed(indices))
      return fail(tensors.takeError());
    SmallVector<int64_t> dims(sparse.dims().begin(), sparse.dims().end());
    return Attribute(builder.getDictionaryAttr({
        builder.getNamedAttr("dims", builder.getDenseI64ArrayAttr(dims)),
        builder.getNamedAttr("indices", *indices),
        builder.getNamedAttr("values", *values),
    }));
  }
  case AP::TYPE_PROTO: {
    auto type = importValueType(attr.tp(), attrWhat, nullptr);
    if (failed(type))
      return failure();
    return Attribute(TypeAttr::get(*type));
  }
  default:
    return fail(attrWhat + " has unsupported attribute type " + std::to_string(kind));
  }
}

//===----------------------------------------------------------------------===//
// Graphs and nodes
//===----------------------------------------------------------------------===//

LogicalResult Importer::importOpsets() {
  for (const auto &opset : model.opset_import()) {
    std::string domain = opset.domain() == "ai.onnx" ? "" : opset.domain();
    if (opsets.count(domain))
      return fail("opset_import lists domain '" + domain + "' twice");
    opsets[domain] = opset.version();
  }
  // IR version 1..2 models may omit opset_import; they mean opset 1.
  if (!opsets.count(""))
    opsets[""] = model.opset_import_size() == 0 ? 1 : 0;
  return success();
}

void Importer::collectValueInfo(const onnx::GraphProto &graph) {
  for (const auto &info : graph.value_info())
    if (info.has_type())
      declaredTypes[info.name()] = &info.type();
  for (const auto &info : graph.output())
    if (info.has_type())
      declaredTypes[info.name()] = &info.type();
}

Location Importer::nodeLocation(const onnx::NodeProto &node, int index) {
  std::string name =
      node.name().empty() ? node.op_type() + "#" + std::to_string(index) : node.name();
  return NameLoc::get(builder.getStringAttr(name), FileLineColLoc::get(&context, path, 0, 0));
}

LogicalResult Importer::importInitializers(onnx::GraphProto &graph) {
  for (auto &init : *graph.mutable_initializer()) {
    std::string what = "initializer '" + init.name() + "'";
    if (init.name().empty())
      return fail("an initializer has no name");
    // An initializer that is also a graph input is that input's default
    // (IR version < 4 style); the input already defines the name.
    if (lookup(init.name()) && scopes.back().count(init.name()))
      continue;
    auto value = tensors.importTensor(init, what);
    if (failed(value))
      return fail(tensors.takeError());
    auto loc =
        NameLoc::get(builder.getStringAttr(init.name()), FileLineColLoc::get(&context, path, 0, 0));
    OperationState state(loc, "onnx.Constant");
    state.addAttribute("value", *value);
    state.addTypes(cast<TypedAttr>(*value).getType());
    Operation *op = builder.create(state);
    if (failed(define(init.name(), op->getResult(0), what)))
      return failure();
  }
  for (const auto &sparse : graph.sparse_initializer())
    return fail("sparse initializer '" + sparse.values().name() + "' is not supported yet");
  return success();
}

LogicalResult Importer::importNodes(onnx::GraphProto &graph) {
  for (int i = 0; i < graph.node_size(); ++i)
    if (failed(importNode(*graph.mutable_node(i), i)))
      return failure();
  return success();
}

// The type a Constant node's value attribute gives its output.
Type Importer::constantType(const onnx::NodeProto &node) {
  for (const auto &attr : node.attribute()) {
    const std::string &name = attr.name();
    auto vector = [&](Type elem, int64_t n) { return RankedTensorType::get({n}, elem); };
    if (name == "value" && attr.has_t()) {
      Type elem = tensorElementType(context, attr.t().data_type());
      if (!elem)
        return nullptr;
      return RankedTensorType::get(
          SmallVector<int64_t>(attr.t().dims().begin(), attr.t().dims().end()), elem);
    }
    if (name == "sparse_value") {
      Type elem = tensorElementType(context, attr.sparse_tensor().values().data_type());
      if (!elem)
        return nullptr;
      return RankedTensorType::get(SmallVector<int64_t>(attr.sparse_tensor().dims().begin(),
                                                        attr.sparse_tensor().dims().end()),
                                   elem);
    }
    if (name == "value_float")
      return RankedTensorType::get({}, builder.getF32Type());
    if (name == "value_int")
      return RankedTensorType::get({}, builder.getI64Type());
    if (name == "value_string")
      return RankedTensorType::get({}, od::StringType::get(&context));
    if (name == "value_floats")
      return vector(builder.getF32Type(), attr.floats_size());
    if (name == "value_ints")
      return vector(builder.getI64Type(), attr.ints_size());
    if (name == "value_strings")
      return vector(od::StringType::get(&context), attr.strings_size());
  }
  return nullptr;
}

Type Importer::outputType(const onnx::NodeProto &node, unsigned index,
                          const od::OnnxOpSchema *schema, ArrayRef<Value> operands) {
  const std::string &name = node.output(index);
  auto declared = declaredTypes.find(name);
  if (declared != declaredTypes.end()) {
    if (Type type = typeHint(*declared->second))
      return type;
  }
  // Cast and friends state the element type in an attribute.
  if (schema && (node.op_type() == "Cast" || node.op_type() == "CastLike" ||
                 node.op_type() == "EyeLike" || node.op_type() == "RandomNormal" ||
                 node.op_type() == "RandomUniform" || node.op_type() == "RandomNormalLike" ||
                 node.op_type() == "RandomUniformLike" || node.op_type() == "Multinomial")) {
    for (const auto &attr : node.attribute())
      if (attr.name() == "to" || attr.name() == "dtype")
        if (Type elem = tensorElementType(context, attr.i()))
          return UnrankedTensorType::get(elem);
  }
  if (schema && node.op_type() == "Constant" && index == 0) {
    if (Type type = constantType(node))
      return type;
  }
  if (schema && node.op_type() == "Optional") {
    for (const auto &attr : node.attribute())
      if (attr.name() == "type") {
        if (Type type = typeHint(attr.tp()))
          return od::OptType::get(&context, type);
      }
    if (!operands.empty() && !isa<NoneType>(operands[0].getType()))
      return od::OptType::get(&context, operands[0].getType());
  }
  if (schema) {
    // Walk to the schema entry of this output (the last one repeats if variadic).
    const od::OnnxParamInfo *info = nullptr;
    unsigned n = 0;
    for (const od::OnnxParamInfo *p = schema->outputs; p->name; ++p, ++n) {
      info = p;
      if (n == index)
        break;
    }
    if (info && info->fixedElemType)
      if (Type elem = tensorElementType(context, info->fixedElemType))
        return UnrankedTensorType::get(elem);
    if (info && info->sameTypeAsInput >= 0 &&
        static_cast<size_t>(info->sameTypeAsInput) < operands.size()) {
      Type in = operands[info->sameTypeAsInput].getType();
      if (auto tensor = dyn_cast<TensorType>(in))
        return UnrankedTensorType::get(tensor.getElementType());
      if (!isa<NoneType>(in))
        return in;
    }
  }
  return od::UnknownType::get(&context);
}

LogicalResult Importer::importNode(onnx::NodeProto &originalNode, int index) {
  std::string what = describeNode(originalNode, index);
  std::string domain = originalNode.domain() == "ai.onnx" ? "" : originalNode.domain();
  auto opset = opsets.find(domain);
  if (opset == opsets.end())
    return fail(what + ": domain '" + domain + "' is not in the model's opset_import");
  int64_t version = opset->second;
  // Scatter (9 and 11, deprecated) is ScatterElements-11 without a reduction.
  if (domain.empty() && originalNode.op_type() == "Scatter")
    originalNode.set_op_type("ScatterElements");

  // Typed op when the node's opset is one the typed op stands for, or when an
  // older signature can be rewritten into it (OpsetUpgrade.h). A default-domain
  // op without a schema may be a deprecated one that an upgrade renames
  // (Upsample becomes Resize); the rewritten node's schema is looked up again.
  const od::OnnxOpSchema *schema = od::lookupOnnxSchema(domain, originalNode.op_type());
  onnx::NodeProto upgraded;
  bool isUpgraded = false;
  if ((schema && version < schema->compatibleSince) || (!schema && domain.empty())) {
    UpgradeInputInfo info;
    if (originalNode.input_size() > 0 && !originalNode.input(0).empty())
      if (Value first = lookup(originalNode.input(0))) {
        if (auto ranked = dyn_cast<RankedTensorType>(first.getType()))
          info.rank = ranked.getRank();
        if (auto tensor = dyn_cast<TensorType>(first.getType()))
          info.isF32 = tensor.getElementType().isF32();
      }
    for (const std::string &input : originalNode.input()) {
      info.f32Constants.push_back(input.empty() ? std::nullopt : smallF32Constant(lookup(input)));
      Value value = input.empty() ? Value() : lookup(input);
      auto ranked = value ? dyn_cast<RankedTensorType>(value.getType()) : RankedTensorType();
      info.ranks.push_back(ranked ? std::optional<int64_t>(ranked.getRank()) : std::nullopt);
    }
    std::vector<UpgradeConstant> constants;
    std::vector<UpgradeUnsqueeze> unsqueezes;
    isUpgraded = domain.empty() &&
                 upgradeOlderNode(originalNode, version, info, upgraded, constants, unsqueezes);
    schema = isUpgraded ? od::lookupOnnxSchema(domain, upgraded.op_type()) : nullptr;
    if (!schema) {
      isUpgraded = false;
      constants.clear();
      unsqueezes.clear();
    }
    for (UpgradeUnsqueeze &unsqueeze : unsqueezes) {
      Value source = lookup(upgraded.input(unsqueeze.index));
      auto axesType = RankedTensorType::get({int64_t(unsqueeze.axes.size())}, builder.getI64Type());
      OperationState axesState(nodeLocation(originalNode, index), "onnx.Constant");
      axesState.addAttribute("value", DenseIntElementsAttr::get(axesType, unsqueeze.axes));
      axesState.addTypes(axesType);
      Value axes = builder.create(axesState)->getResult(0);
      OperationState state(nodeLocation(originalNode, index), "onnx.Unsqueeze");
      state.addOperands({source, axes});
      state.addTypes(UnrankedTensorType::get(cast<TensorType>(source.getType()).getElementType()));
      std::string name = "__ortc_upgrade_" + std::to_string(numUpgradeConstants++);
      if (failed(define(name, builder.create(state)->getResult(0), what)))
        return failure();
      upgraded.set_input(unsqueeze.index, name);
    }
    for (UpgradeConstant &constant : constants) {
      auto value = tensors.importTensor(constant.value, what + ": upgraded attribute");
      if (failed(value))
        return fail(tensors.takeError());
      OperationState state(nodeLocation(originalNode, index), "onnx.Constant");
      state.addAttribute("value", *value);
      state.addTypes(cast<TypedAttr>(*value).getType());
      std::string name = "__ortc_upgrade_" + std::to_string(numUpgradeConstants++);
      if (failed(define(name, builder.create(state)->getResult(0), what)))
        return failure();
      while (upgraded.input_size() <= constant.index)
        upgraded.add_input("");
      upgraded.set_input(constant.index, name);
    }
  }
  onnx::NodeProto &node = isUpgraded ? upgraded : originalNode;
  if (schema) {
    for (const auto &attr : node.attribute()) {
      if (!schema->findAttribute(attr.name())) {
        schema = nullptr; // an attribute of another version: keep it generic
        break;
      }
    }
  }

  SmallVector<Value> operands;
  for (int i = 0; i < node.input_size(); ++i) {
    const std::string &name = node.input(i);
    if (name.empty()) {
      operands.push_back(noValue);
      continue;
    }
    Value value = lookup(name);
    if (!value)
      return fail(what + ": input '" + name +
                  "' is not a graph input, an initializer, or an output of an earlier node");
    operands.push_back(value);
  }

  Location loc = nodeLocation(node, index);
  SmallVector<Type> resultTypes;
  if (schema) {
    // Fill left-out trailing optional inputs; check the count against the schema.
    size_t fixed = 0;
    bool variadic = false;
    size_t required = 0;
    for (const od::OnnxParamInfo *p = schema->inputs; p->name; ++p) {
      if (p->kind == od::ParamKind::Variadic)
        variadic = true;
      else
        ++fixed;
      if (p->kind == od::ParamKind::Single)
        required = fixed;
    }
    if (operands.size() < required)
      return fail(what + ": has " + std::to_string(operands.size()) +
                  " inputs, the schema needs at least " + std::to_string(required));
    if (!variadic && operands.size() > fixed)
      return fail(what + ": has " + std::to_string(operands.size()) +
                  " inputs, the schema allows at most " + std::to_string(fixed));
    while (operands.size() < fixed)
      operands.push_back(noValue);

    size_t fixedOut = 0;
    bool variadicOut = false;
    for (const od::OnnxParamInfo *p = schema->outputs; p->name; ++p) {
      if (p->kind == od::ParamKind::Variadic)
        variadicOut = true;
      else
        ++fixedOut;
    }
    if (!variadicOut && static_cast<size_t>(node.output_size()) > fixedOut)
      return fail(what + ": has " + std::to_string(node.output_size()) +
                  " outputs, the schema allows at most " + std::to_string(fixedOut));
    size_t numResults = std::max<size_t>(node.output_size(), fixedOut);
    for (size_t i = 0; i < numResults; ++i) {
      if (i >= static_cast<size_t>(node.output_size()) || node.output(i).empty())
        resultTypes.push_back(builder.getNoneType());
      else
        resultTypes.push_back(outputType(node, i, schema, operands));
    }
  } else {
    for (int i = 0; i < node.output_size(); ++i)
      resultTypes.push_back(node.output(i).empty() ? Type(builder.getNoneType())
                                                   : outputType(node, i, nullptr, operands));
  }

  OperationState state(loc, schema ? schema->mlirName : "onnx.Generic");
  state.addOperands(operands);
  state.addTypes(resultTypes);

  SmallVector<NamedAttribute> attrs;
  SmallVector<std::pair<std::string, onnx::GraphProto *>> graphs;
  for (auto &attr : *node.mutable_attribute()) {
    if (attr.name().empty())
      return fail(what + ": an attribute has no name");
    using AP = onnx::AttributeProto;
    if (attr.type() == AP::GRAPH || attr.has_g()) {
      graphs.emplace_back(attr.name(), attr.mutable_g());
      continue;
    }
    if (attr.type() == AP::GRAPHS) {
      for (int g = 0; g < attr.graphs_size(); ++g)
        graphs.emplace_back(attr.name() + "[" + std::to_string(g) + "]", attr.mutable_graphs(g));
      continue;
    }
    if (!attr.ref_attr_name().empty())
      return fail(what + ": attribute '" + attr.name() +
                  "' refers to a function attribute outside of a function");
    int expected = -1;
    if (schema) {
      static const int kindToProto[] = {AP::INT,        AP::FLOAT,   AP::STRING, AP::INTS,
                                        AP::FLOATS,     AP::STRINGS, AP::TENSOR, AP::SPARSE_TENSOR,
                                        AP::TYPE_PROTO, AP::GRAPH};
      expected = kindToProto[static_cast<int>(schema->findAttribute(attr.name())->kind)];
    }
    auto value = importAttribute(attr, expected, what);
    if (failed(value))
      return failure();
    attrs.push_back(builder.getNamedAttr(attr.name(), *value));
  }
  if (schema) {
    for (const od::OnnxAttrInfo *a = schema->attributes; a->name; ++a) {
      if (!a->required)
        continue;
      bool present =
          llvm::any_of(node.attribute(), [&](const auto &attr) { return attr.name() == a->name; });
      if (!present)
        return fail(what + ": missing required attribute '" + std::string(a->name) + "'");
    }
    state.addAttributes(attrs);
  } else {
    state.addAttribute("op_type", builder.getStringAttr(node.op_type()));
    state.addAttribute("domain", builder.getStringAttr(domain));
    state.addAttribute("since_version", builder.getI64IntegerAttr(version));
    state.addAttribute("onnx_attrs", builder.getDictionaryAttr(attrs));
    if (!graphs.empty()) {
      SmallVector<StringRef> names;
      for (auto &g : graphs)
        names.push_back(g.first);
      state.addAttribute("region_names", builder.getStrArrayAttr(names));
    }
  }
  // Typed ops list their regions in attribute-name order, as the generator does.
  if (schema)
    llvm::sort(graphs, [](const auto &a, const auto &b) { return a.first < b.first; });
  for (size_t i = 0; i < graphs.size(); ++i)
    state.addRegion();
  SmallVector<Type> bodyHints = subgraphInputHints(node, domain, version, operands);
  Operation *op = builder.create(state);
  for (size_t i = 0; i < graphs.size(); ++i) {
    OpBuilder::InsertionGuard guard(builder);
    if (failed(importSubgraph(*graphs[i].second, op->getRegion(i),
                              what + " attribute '" + graphs[i].first + "'", bodyHints)))
      return failure();
  }
  // Every pass after import counts on the arity ONNX gives control flow's
  // subgraphs: check it here, once, naming the node and the attribute.
  if (schema && failed(checkSubgraphArity(node, op, what)))
    return failure();
  // An If whose outputs have no declared type takes its branches' types
  // where they agree: a dim of the same size, else dynamic; a rank they
  // disagree on is left unknown (the branch taken decides it).
  if (schema && node.op_type() == "If" && op->getNumRegions() == 2 &&
      !op->getRegion(0).empty() && !op->getRegion(1).empty()) {
    Operation *yields[2] = {op->getRegion(0).front().getTerminator(),
                            op->getRegion(1).front().getTerminator()};
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      if (!isa<od::UnknownType>(op->getResult(i).getType()) ||
          i >= yields[0]->getNumOperands() || i >= yields[1]->getNumOperands())
        continue;
      Type a = yields[0]->getOperand(i).getType(), b = yields[1]->getOperand(i).getType();
      auto ta = dyn_cast<TensorType>(a), tb = dyn_cast<TensorType>(b);
      if (a == b || !ta || !tb || ta.getElementType() != tb.getElementType()) {
        op->getResult(i).setType(a); // sequences, optionals: the first branch's
        continue;
      }
      if (!ta.hasRank() || !tb.hasRank() || ta.getRank() != tb.getRank()) {
        op->getResult(i).setType(UnrankedTensorType::get(ta.getElementType()));
        continue;
      }
      SmallVector<int64_t> dims;
      for (int64_t d = 0; d < ta.getRank(); ++d)
        dims.push_back(ta.getDimSize(d) == tb.getDimSize(d) ? ta.getDimSize(d)
                                                            : ShapedType::kDynamic);
      op->getResult(i).setType(RankedTensorType::get(dims, ta.getElementType()));
    }
  }
  for (int i = 0; i < node.output_size(); ++i) {
    if (node.output(i).empty())
      continue;
    if (failed(define(node.output(i), op->getResult(i), what)))
      return failure();
  }
  return success();
}

LogicalResult Importer::checkSubgraphArity(const onnx::NodeProto &node, Operation *op,
                                           const std::string &what) {
  const std::string &type = node.op_type();
  if (type != "If" && type != "Loop" && type != "Scan")
    return success();
  auto attrName = [&](unsigned region) {
    auto names = op->getAttrOfType<ArrayAttr>("region_names");
    if (names && region < names.size())
      return cast<StringAttr>(names[region]).str();
    return std::string(type == "If" ? (region == 0 ? "else_branch" : "then_branch") : "body");
  };
  size_t inputs = op->getNumOperands(), outputs = op->getNumResults();
  for (unsigned r = 0; r < op->getNumRegions(); ++r) {
    Block &body = op->getRegion(r).front();
    size_t bodyIn = body.getNumArguments(), bodyOut = body.getTerminator()->getNumOperands();
    // If: the branches yield the node's outputs. Loop(M, cond, v...): the
    // body takes (i, cond, v...) and yields (cond, v..., scans...). Scan: the
    // body takes the states and scan inputs, and yields the states and the
    // scan outputs.
    size_t wantIn = type == "If" ? 0 : inputs, wantOut = type == "Loop" ? outputs + 1 : outputs;
    bool ok = bodyIn == wantIn && bodyOut == wantOut;
    if (type == "Loop")
      ok = inputs >= 2 && bodyIn == inputs && bodyOut >= bodyIn - 1 && bodyOut == wantOut;
    if (!ok)
      return fail(what + ": attribute '" + attrName(r) + "' takes " + std::to_string(bodyIn) +
                  " inputs and yields " + std::to_string(bodyOut) + " values, where this " + type +
                  " (" + std::to_string(inputs) + " inputs, " + std::to_string(outputs) +
                  " outputs) needs " + std::to_string(wantIn) + " and " + std::to_string(wantOut));
  }
  return success();
}

// Imports a graph's initializers and nodes into the current block and returns
// the values of its outputs.
FailureOr<SmallVector<Value>> Importer::importGraphBody(onnx::GraphProto &graph,
                                                        const std::string &outputWhat) {
  if (failed(importInitializers(graph)) || failed(importNodes(graph)))
    return failure();
  SmallVector<Value> results;
  for (const auto &output : graph.output()) {
    Value value = lookup(output.name());
    if (!value)
      return fail(outputWhat + " '" + output.name() + "' is never produced");
    results.push_back(value);
  }
  return results;
}

// The types ONNX shape inference gives the body inputs of Loop and Scan when
// the body declares none (exporters of function bodies leave them out):
// Loop: (int64 scalar, bool scalar, each carried value's element type; its
// shape may change across iterations); Scan-9+: each state's type, each scan
// input's type without its scan axis; Scan-8: the same without the leading
// batch dim (and the sequence dim after it for scan inputs). Null where
// nothing is known.
SmallVector<Type> Importer::subgraphInputHints(const onnx::NodeProto &node,
                                               const std::string &domain, int64_t version,
                                               ArrayRef<Value> operands) {
  SmallVector<Type> hints;
  if (!domain.empty())
    return hints;
  auto intAttr = [&](llvm::StringRef name, int64_t fallback) {
    for (const auto &attr : node.attribute())
      if (attr.name() == name)
        return static_cast<int64_t>(attr.i());
    return fallback;
  };
  auto intsAttr = [&](llvm::StringRef name) {
    SmallVector<int64_t> values;
    for (const auto &attr : node.attribute())
      if (attr.name() == name)
        values.assign(attr.ints().begin(), attr.ints().end());
    return values;
  };
  // `type` without the dims at `drop` (sorted, non-negative after wrapping).
  auto dropDims = [&](Type type, SmallVector<int64_t> drop) -> Type {
    if (isa<UnrankedTensorType>(type))
      return type;
    auto ranked = dyn_cast<RankedTensorType>(type);
    if (!ranked)
      return isa<od::UnknownType>(type) ? type : Type();
    SmallVector<int64_t> shape(ranked.getShape());
    for (int64_t &d : drop)
      if (d < 0)
        d += ranked.getRank();
    llvm::sort(drop);
    for (auto it = drop.rbegin(); it != drop.rend(); ++it) {
      if (*it < 0 || *it >= static_cast<int64_t>(shape.size()))
        return UnrankedTensorType::get(ranked.getElementType());
      shape.erase(shape.begin() + *it);
    }
    return RankedTensorType::get(shape, ranked.getElementType());
  };
  if (node.op_type() == "Loop") {
    hints.push_back(RankedTensorType::get({}, builder.getI64Type()));
    hints.push_back(RankedTensorType::get({}, builder.getI1Type()));
    for (size_t i = 2; i < operands.size(); ++i) {
      Type type = operands[i].getType();
      if (auto tensor = dyn_cast<TensorType>(type))
        type = UnrankedTensorType::get(tensor.getElementType());
      hints.push_back(isa<NoneType>(type) ? Type() : type);
    }
  } else if (node.op_type() == "Scan") {
    int64_t numScan = intAttr("num_scan_inputs", 0);
    bool batched = version < 9; // Scan-8: operand 0 is sequence_lens, dim 0 is the batch
    size_t first = batched ? 1 : 0;
    if (numScan < 0 || operands.size() < first + numScan)
      return hints;
    size_t numState = operands.size() - first - numScan;
    SmallVector<int64_t> axes = intsAttr("scan_input_axes");
    for (size_t i = 0; i < numState; ++i) {
      Type type = operands[first + i].getType();
      hints.push_back(batched ? dropDims(type, {0}) : (isa<NoneType>(type) ? Type() : type));
    }
    for (int64_t j = 0; j < numScan; ++j) {
      Type type = operands[first + numState + j].getType();
      int64_t axis = static_cast<size_t>(j) < axes.size() ? axes[j] : 0;
      hints.push_back(batched ? dropDims(type, {0, 1}) : dropDims(type, {axis}));
    }
  }
  return hints;
}

LogicalResult Importer::importSubgraph(onnx::GraphProto &graph, Region &region,
                                       const std::string &owner, ArrayRef<Type> inputHints) {
  Block *block = builder.createBlock(&region);
  scopes.emplace_back();
  llvm::scope_exit popScope([&] { scopes.pop_back(); });
  collectValueInfo(graph);
  for (const auto &[index, input] : llvm::enumerate(graph.input())) {
    // ONNX lets a subgraph leave its inputs' types out (the node that runs it
    // gives them, as Loop's and Scan's state): typed from the outer node where
    // the caller knows them (inputHints), else !onnx.unknown.
    std::string inputWhat = owner + ": subgraph input '" + input.name() + "'";
    FailureOr<Type> type = failure();
    bool untyped = input.type().value_case() == onnx::TypeProto::VALUE_NOT_SET;
    if (untyped && index < inputHints.size() && inputHints[index])
      type = inputHints[index];
    else if (untyped)
      type = Type(od::UnknownType::get(&context));
    else
      type = importValueType(input.type(), inputWhat, nullptr);
    if (failed(type))
      return failure();
    Value arg = block->addArgument(*type, NameLoc::get(builder.getStringAttr(input.name())));
    if (failed(define(input.name(), arg, owner)))
      return failure();
  }
  auto results = importGraphBody(graph, owner + ": subgraph output");
  if (failed(results))
    return failure();
  OperationState yield(builder.getUnknownLoc(), "onnx.Yield");
  yield.addOperands(*results);
  builder.create(yield);
  return success();
}

// Attributes of a graph input or output: its ONNX name and dim_params.
DictionaryAttr Importer::interfaceAttrs(const std::string &name, ArrayRef<Attribute> dimParams) {
  SmallVector<NamedAttribute> attrs{builder.getNamedAttr("onnx.name", builder.getStringAttr(name))};
  if (!dimParams.empty())
    attrs.push_back(builder.getNamedAttr("onnx.dim_params", builder.getArrayAttr(dimParams)));
  return builder.getDictionaryAttr(attrs);
}

LogicalResult Importer::importMainGraph(ModuleOp module) {
  onnx::GraphProto &graph = *model.mutable_graph();
  collectValueInfo(graph);
  llvm::StringSet<> initializerNames;
  for (const auto &init : graph.initializer())
    initializerNames.insert(init.name());

  // Graph inputs that are also initializers are constants with an optional
  // override; we import them as constants (their initializer value).
  SmallVector<Type> argTypes;
  SmallVector<DictionaryAttr> argAttrs;
  SmallVector<const onnx::ValueInfoProto *> args;
  for (const auto &input : graph.input()) {
    if (initializerNames.contains(input.name()))
      continue;
    if (input.name().empty())
      return fail("a graph input has no name");
    SmallVector<Attribute> dimParams;
    auto type = importValueType(input.type(), "graph input '" + input.name() + "'", &dimParams);
    if (failed(type))
      return failure();
    argTypes.push_back(*type);
    argAttrs.push_back(interfaceAttrs(input.name(), dimParams));
    args.push_back(&input);
  }
  SmallVector<Type> resultTypes;
  SmallVector<DictionaryAttr> resultAttrs;
  for (const auto &output : graph.output()) {
    SmallVector<Attribute> dimParams;
    FailureOr<Type> type = Type();
    if (output.has_type()) // A graph output without a type takes its producer's.
      type = importValueType(output.type(), "graph output '" + output.name() + "'", &dimParams);
    if (failed(type))
      return failure();
    resultTypes.push_back(*type);
    resultAttrs.push_back(interfaceAttrs(output.name(), dimParams));
  }

  builder.setInsertionPointToEnd(module.getBody());
  auto loc = NameLoc::get(builder.getStringAttr(graph.name().empty() ? "main_graph" : graph.name()),
                          FileLineColLoc::get(&context, path, 0, 0));
  SmallVector<Type> provisionalResults;
  for (Type t : resultTypes)
    provisionalResults.push_back(t ? t : od::UnknownType::get(&context));
  auto func = func::FuncOp::create(builder, loc, "main_graph",
                                   builder.getFunctionType(argTypes, provisionalResults));
  func.setAllArgAttrs(argAttrs);
  func.setAllResultAttrs(resultAttrs);
  if (!graph.name().empty())
    func->setAttr("onnx.graph_name", builder.getStringAttr(graph.name()));
  Block *entry = func.addEntryBlock();
  builder.setInsertionPointToStart(entry);
  noValue = builder
                .create(OperationState(builder.getUnknownLoc(), "onnx.NoValue", ValueRange{},
                                       TypeRange{builder.getNoneType()}))
                ->getResult(0);

  scopes.emplace_back();
  for (size_t i = 0; i < args.size(); ++i) {
    entry->getArgument(i).setLoc(NameLoc::get(builder.getStringAttr(args[i]->name())));
    if (failed(define(args[i]->name(), entry->getArgument(i), "graph input")))
      return failure();
  }
  auto produced = importGraphBody(graph, "graph output");
  if (failed(produced))
    return failure();

  SmallVector<Value> results;
  for (int i = 0; i < graph.output_size(); ++i) {
    const onnx::ValueInfoProto &output = graph.output(i);
    Value value = (*produced)[i];
    Type &declared = resultTypes[results.size()];
    if (!declared)
      declared = value.getType();
    if (value.getType() != declared) {
      // The declared output type is the contract. A node result whose type
      // import only guessed takes it; anything else is a real mismatch.
      Operation *producer = value.getDefiningOp();
      bool guessed = producer && producer->getName().getStringRef() != "onnx.Constant" &&
                     (isa<od::UnknownType>(value.getType()) ||
                      (isa<TensorType>(value.getType()) && isa<TensorType>(declared) &&
                       cast<TensorType>(value.getType()).getElementType() ==
                           cast<TensorType>(declared).getElementType()));
      if (!guessed) {
        std::string have, want;
        llvm::raw_string_ostream(have) << value.getType();
        llvm::raw_string_ostream(want) << declared;
        return fail("graph output '" + output.name() + "' is declared as " + want +
                    " but its producer gives " + have);
      }
      value.setType(declared);
    }
    results.push_back(value);
  }
  func::ReturnOp::create(builder, builder.getUnknownLoc(), results);
  func.setFunctionType(builder.getFunctionType(argTypes, resultTypes));
  if (noValue.use_empty()) {
    noValue.getDefiningOp()->erase();
    noValue = nullptr;
  }
  return success();
}

OwningOpRef<ModuleOp> Importer::run(std::string &error) {
  loadImportDialects(context);
  auto fileLoc = FileLineColLoc::get(&context, path, 0, 0);
  OwningOpRef<ModuleOp> module = ModuleOp::create(fileLoc);
  auto finish = [&]() -> OwningOpRef<ModuleOp> {
    error = firstError;
    return nullptr;
  };
  if (failed(importOpsets()))
    return finish();

  SmallVector<NamedAttribute> opsetAttrs;
  for (const auto &[domain, version] : opsets)
    opsetAttrs.push_back(builder.getNamedAttr(domain.empty() ? "ai.onnx" : domain,
                                              builder.getI64IntegerAttr(version)));
  module.get()->setAttr("onnx.opset_import", builder.getDictionaryAttr(opsetAttrs));
  module.get()->setAttr("onnx.ir_version", builder.getI64IntegerAttr(model.ir_version()));
  if (!model.producer_name().empty())
    module.get()->setAttr(
        "onnx.producer",
        builder.getStringAttr(model.producer_name() + (model.producer_version().empty()
                                                           ? ""
                                                           : " " + model.producer_version())));
  if (model.functions_size()) {
    // Model-local functions are not inlined yet: their call sites import as
    // onnx.Generic with the function's domain, which must be in opset_import.
    for (const auto &fn : model.functions())
      if (!opsets.count(fn.domain()))
        opsets[fn.domain()] = 1;
  }

  if (failed(importMainGraph(*module)))
    return finish();

  // Verification failures carry the node's location; turn them into one line.
  std::string verifyMessage;
  {
    ScopedDiagnosticHandler handler(&context, [&](Diagnostic &diag) {
      if (verifyMessage.empty() && diag.getSeverity() == DiagnosticSeverity::Error) {
        std::string where;
        if (auto name = dyn_cast<NameLoc>(diag.getLocation()))
          where = "node '" + name.getName().str() + "': ";
        verifyMessage = where + diag.str();
      }
      return success();
    });
    if (failed(verify(*module))) {
      error =
          path + ": " + (verifyMessage.empty() ? "the imported IR does not verify" : verifyMessage);
      return nullptr;
    }
  }
  return module;
}

} // namespace

void loadImportDialects(MLIRContext &context) {
  context.getOrLoadDialect<func::FuncDialect>();
  context.getOrLoadDialect<od::OnnxDialect>();
}

OwningOpRef<ModuleOp> importOnnxModel(MLIRContext &context, onnx::ModelProto &model,
                                      const std::string &path, std::string &error,
                                      const ImportOptions &options) {
  Importer importer(context, model, path, options);
  return importer.run(error);
}

OwningOpRef<ModuleOp> importOnnxModelFile(MLIRContext &context, const std::string &path,
                                          std::string &error, const ImportOptions &options) {
  onnx::ModelProto model;
  if (!readModelFile(path, model, error))
    return nullptr;
  return importOnnxModel(context, model, path, error, options);
}

} // namespace ortc
