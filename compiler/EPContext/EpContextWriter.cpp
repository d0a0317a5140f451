//===- EpContextWriter.cpp ------------------------------------------------===//

#include "compiler/EPContext/EpContextWriter.h"
#include "compiler/Transforms/ConstantValues.h"

#include "dialects/onnx/OnnxDialect.h"
#include "runtime/support/BlobContainer.h"
#include "runtime/support/ModelFile.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "llvm/ADT/DenseMap.h"
#include "llvm/ADT/STLExtras.h"
#include "llvm/ADT/StringExtras.h"
#include "llvm/ADT/StringSet.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/Signals.h"
#include "llvm/Support/raw_ostream.h"

#include "onnx/onnx_pb.h"

#include <google/protobuf/io/zero_copy_stream_impl.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <set>
#include <sys/file.h>
#include <unistd.h>

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace ortc {

EpContextOutput::EpContextOutput() = default;
EpContextOutput::~EpContextOutput() = default;
EpContextOutput::EpContextOutput(EpContextOutput &&) = default;
EpContextOutput &EpContextOutput::operator=(EpContextOutput &&) = default;

namespace {

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream(text) << type;
  return text;
}

// Fills `proto` with a tensor type; `dimParams` names the `?` dims when it has
// one entry per dim. Returns false with the reason in `why`.
bool setTensorType(Type type, ArrayAttr dimParams, onnx::TypeProto &proto, std::string &why) {
  // A sequence or an optional (of a tensor or a sequence of tensors).
  if (auto seq = dyn_cast<od::SeqType>(type))
    return isa<TensorType>(seq.getElementType())
               ? setTensorType(seq.getElementType(), nullptr,
                               *proto.mutable_sequence_type()->mutable_elem_type(), why)
               : (why = "has type " + typeText(type) +
                        ", which an EPContext model cannot declare (sequences of tensors only)",
                  false);
  if (auto opt = dyn_cast<od::OptType>(type))
    return setTensorType(opt.getElementType(), nullptr,
                         *proto.mutable_optional_type()->mutable_elem_type(), why);
  auto tensor = dyn_cast<TensorType>(type);
  if (!tensor) {
    why = "has type " + typeText(type) +
          ", which an EPContext model cannot declare (tensors, sequences and optionals only)";
    return false;
  }
  int code = onnxElementCode(tensor.getElementType());
  if (!code) {
    why = "has element type " + typeText(tensor.getElementType()) + ", which ONNX cannot name";
    return false;
  }
  onnx::TypeProto::Tensor *t = proto.mutable_tensor_type();
  t->set_elem_type(code);
  auto ranked = dyn_cast<RankedTensorType>(type);
  if (!ranked)
    return true; // rank unknown: no shape at all
  if (dimParams && dimParams.size() != static_cast<size_t>(ranked.getRank()))
    dimParams = nullptr; // the passes changed the rank: the names no longer apply
  onnx::TensorShapeProto *shape = t->mutable_shape();
  for (auto [i, d] : llvm::enumerate(ranked.getShape())) {
    onnx::TensorShapeProto::Dimension *dim = shape->add_dim();
    if (!ShapedType::isDynamic(d)) {
      dim->set_dim_value(d);
      continue;
    }
    if (dimParams)
      if (auto name = dyn_cast<StringAttr>(dimParams[i]); name && !name.getValue().empty())
        dim->set_dim_param(name.str());
  }
  return true;
}

// Bytes per element in ONNX raw_data, or 0 for types stored otherwise
// (strings, sub-byte packing).
unsigned rawElementBytes(Type elem) {
  if (elem.isInteger(1))
    return 1;
  if (auto complex = dyn_cast<ComplexType>(elem))
    return 2 * rawElementBytes(complex.getElementType());
  if (!elem.isIntOrFloat())
    return 0;
  unsigned bits = elem.getIntOrFloatBitWidth();
  return bits % 8 == 0 ? bits / 8 : 0;
}

void appendLittleEndian(std::string &bytes, const llvm::APInt &value, unsigned byteWidth) {
  if (value.getBitWidth() == 1) {
    bytes.push_back(value.getBoolValue() ? 1 : 0);
    return;
  }
  for (unsigned b = 0; b < byteWidth; ++b)
    bytes.push_back(static_cast<char>(value.extractBitsAsZExtValue(8, b * 8)));
}

// The value of an onnx.Constant as an initializer (raw_data), for a graph
// output that constant folding left as a constant. False with `why` for
// forms we do not encode (strings, sparse, sub-byte types).
bool constantToInitializer(Operation *constant, onnx::TensorProto &tensor, std::string &why) {
  // The value's own type when the result's declared one is less precise (a
  // graph output declared with unknown dims).
  auto type = dyn_cast<RankedTensorType>(constant->getResult(0).getType());
  if (auto typed = dyn_cast_or_null<TypedAttr>(constant->getAttr("value")))
    if (auto valueType = dyn_cast<RankedTensorType>(typed.getType());
        valueType && valueType.hasStaticShape())
      type = valueType;
  if (!type || !type.hasStaticShape()) {
    why = "has no static shape";
    return false;
  }
  Type elem = type.getElementType();
  unsigned elemBytes = rawElementBytes(elem);
  int code = onnxElementCode(elem);
  if (!elemBytes || !code) {
    why = "has element type " + typeText(elem) + ", which the writer cannot store as raw data";
    return false;
  }
  tensor.set_data_type(code);
  for (int64_t d : type.getShape())
    tensor.add_dims(d);
  std::string &bytes = *tensor.mutable_raw_data();
  Attribute value = constant->getAttr("value");
  if (auto dense = dyn_cast_or_null<DenseElementsAttr>(value)) {
    if (isa<IntegerType>(elem)) {
      for (const llvm::APInt &v : dense.getValues<llvm::APInt>())
        appendLittleEndian(bytes, v, elemBytes);
    } else if (isa<FloatType>(elem)) {
      for (const llvm::APFloat &v : dense.getValues<llvm::APFloat>())
        appendLittleEndian(bytes, v.bitcastToAPInt(), elemBytes);
    } else {
      why = "is a dense " + typeText(elem) + " attribute, which the writer cannot encode";
      return false;
    }
  } else if (auto resource = dyn_cast_or_null<DenseResourceElementsAttr>(value)) {
    // The importer's resource layout is ONNX's raw layout for byte-sized types.
    AsmResourceBlob *blob = resource.getRawHandle().getBlob();
    if (!blob) {
      why = "has no bytes loaded (resource '" + resource.getRawHandle().getKey().str() + "')";
      return false;
    }
    bytes.assign(blob->getData().data(), blob->getData().size());
  } else if (auto f = constant->getAttrOfType<FloatAttr>("value_float")) {
    appendLittleEndian(bytes, llvm::APFloat(float(f.getValueAsDouble())).bitcastToAPInt(), 4);
  } else if (auto fs = constant->getAttrOfType<DenseF32ArrayAttr>("value_floats")) {
    for (float v : fs.asArrayRef())
      appendLittleEndian(bytes, llvm::APFloat(v).bitcastToAPInt(), 4);
  } else if (auto i = constant->getAttrOfType<IntegerAttr>("value_int")) {
    appendLittleEndian(bytes, llvm::APInt(64, i.getInt(), /*isSigned=*/true), 8);
  } else if (auto is = constant->getAttrOfType<DenseI64ArrayAttr>("value_ints")) {
    for (int64_t v : is.asArrayRef())
      appendLittleEndian(bytes, llvm::APInt(64, v, /*isSigned=*/true), 8);
  } else {
    why = "is a string or sparse constant, which the writer cannot store";
    return false;
  }
  if (bytes.size() != static_cast<size_t>(type.getNumElements()) * elemBytes) {
    why = "holds " + std::to_string(bytes.size()) + " bytes, not the " +
          std::to_string(type.getNumElements() * elemBytes) + " its type needs";
    return false;
  }
  return true;
}

void addAttribute(onnx::NodeProto &node, const std::string &name, int64_t value) {
  onnx::AttributeProto *attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->set_i(value);
}

void addAttribute(onnx::NodeProto &node, const std::string &name, const char *data, size_t size) {
  onnx::AttributeProto *attr = node.add_attribute();
  attr->set_name(name);
  attr->set_type(onnx::AttributeProto::STRING);
  attr->mutable_s()->assign(data, size);
}

void addAttribute(onnx::NodeProto &node, const std::string &name, const std::string &value) {
  addAttribute(node, name, value.data(), value.size());
}

// The IR version that onnx.checker expects for a default-domain opset
// (onnx.helper.VERSION_TABLE).
int64_t minIrVersionForOpset(int64_t opset) {
  static const std::pair<int64_t, int64_t> table[] = {
      {9, 4},   {10, 5},  {11, 6},  {12, 7},  {15, 8},  {19, 9},
      {21, 10}, {23, 11}, {24, 12}, {25, 13}, {28, 14},
  };
  int64_t ir = 3;
  for (auto [since, version] : table)
    if (opset >= since)
      ir = version;
  return ir;
}

std::string fileNameOf(const std::string &path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

std::string stemOf(const std::string &path) {
  std::string name = fileNameOf(path);
  if (name.size() > 5 && name.compare(name.size() - 5, 5, ".onnx") == 0)
    name.resize(name.size() - 5);
  return name;
}

std::string joinPath(const std::string &dir, const std::string &name) {
  return dir == "/" ? "/" + name : dir + "/" + name;
}

} // namespace

std::string sidecarFileName(const std::string &outputPath, const std::string &ep, int index) {
  // A sidecar must stay a plain file name beside the model, whatever the EP
  // is called.
  std::string safeEp = ep;
  for (char &c : safeEp)
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      c = '_';
  std::string name = stemOf(outputPath) + "_" + safeEp;
  if (index > 0)
    name += "_" + std::to_string(index);
  return name + ".bin";
}

bool buildEpContextModel(ModuleOp module, const EpContextBlobs &blobs,
                         const std::string &outputPath, const EpContextWriteOptions &options,
                         EpContextOutput &output, std::string &error) {
  const std::string &file = options.sourcePath.empty() ? outputPath : options.sourcePath;
  auto fail = [&](const std::string &what) {
    error = file + ": " + what;
    return false;
  };
  auto main = module.lookupSymbol<func::FuncOp>("main_graph");
  if (!main || main.getBody().empty())
    return fail("no @main_graph function to write");
  Block &body = main.getBody().front();

  auto model = std::make_unique<onnx::ModelProto>();
  onnx::GraphProto *graph = model->mutable_graph();
  auto graphName = main->getAttrOfType<StringAttr>("onnx.graph_name");
  graph->set_name(graphName ? graphName.str() : "main_graph");

  llvm::DenseMap<Value, std::string> names;
  llvm::StringSet<> taken; // value names in use
  std::string why;

  for (BlockArgument arg : body.getArguments()) {
    unsigned i = arg.getArgNumber();
    auto name = main.getArgAttrOfType<StringAttr>(i, "onnx.name");
    if (!name || name.getValue().empty())
      return fail("graph input #" + std::to_string(i) + " has no onnx.name");
    onnx::ValueInfoProto *info = graph->add_input();
    info->set_name(name.str());
    if (!setTensorType(arg.getType(), main.getArgAttrOfType<ArrayAttr>(i, "onnx.dim_params"),
                       *info->mutable_type(), why))
      return fail("graph input '" + name.str() + "' " + why);
    if (!taken.insert(name.getValue()).second)
      return fail("two graph inputs are named '" + name.str() + "'");
    names[arg] = name.str();
  }

  // Whatever is not a partition call has no place in an EPContext model.
  SmallVector<func::CallOp> calls;
  for (Operation &op : body) {
    if (auto call = dyn_cast<func::CallOp>(op)) {
      calls.push_back(call);
      continue;
    }
    if (isa<func::ReturnOp>(op) || isFreeOnnxOp(&op))
      continue; // constants are checked where they are used
    auto [opType, domain] = onnxOpTypeAndDomain(&op);
    return fail("node '" + onnxNodeName(&op) + "' (" +
                (opType.empty() ? op.getName().getStringRef().str() : opType) +
                ") is in no partition (left unclaimed); an EPContext model holds partitions only");
  }

  // Graph outputs name the values they return.
  auto ret = cast<func::ReturnOp>(body.getTerminator());
  for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
    auto name = main.getResultAttrOfType<StringAttr>(i, "onnx.name");
    if (!name || name.getValue().empty())
      return fail("graph output #" + std::to_string(i) + " has no onnx.name");
    std::string outName = name.str();
    if (auto arg = dyn_cast<BlockArgument>(value)) {
      if (names[arg] != outName)
        return fail("graph output '" + outName + "' is graph input '" + names[arg] +
                    "' under another name; an EPContext model has no node to rename it");
    } else if (value.getDefiningOp<func::CallOp>()) {
      auto it = names.find(value);
      if (it != names.end())
        return fail("graph outputs '" + it->second + "' and '" + outName +
                    "' are the same value; an EPContext node output has one name");
      if (!taken.insert(outName).second)
        return fail("graph output '" + outName + "' has the name of another graph value");
      names[value] = outName;
    } else if (Operation *def = value.getDefiningOp();
               def->getName().getStringRef() == "onnx.Constant") {
      // Folded to a constant: the model stores the value itself.
      if (!taken.insert(outName).second)
        return fail("graph output '" + outName + "' has the name of another graph value");
      onnx::TensorProto *init = graph->add_initializer();
      init->set_name(outName);
      if (!constantToInitializer(def, *init, why))
        return fail("graph output '" + outName + "' is a constant that " + why);
    } else {
      return fail("graph output '" + outName + "' is produced by node '" + onnxNodeName(def) +
                  "' (" + def->getName().getStringRef().str() +
                  ") outside every partition; an EPContext model has no node to produce it");
    }
    onnx::ValueInfoProto *info = graph->add_output();
    info->set_name(outName);
    if (!setTensorType(main.getFunctionType().getResult(i),
                       main.getResultAttrOfType<ArrayAttr>(i, "onnx.dim_params"),
                       *info->mutable_type(), why))
      return fail("graph output '" + outName + "' " + why);
  }

  // Which partitions, and inline or in sidecars.
  SmallVector<std::pair<func::FuncOp, const EpContextBlob *>> parts;
  uint64_t total = 0;
  for (func::CallOp call : calls) {
    auto callee = module.lookupSymbol<func::FuncOp>(call.getCalleeAttr());
    auto ep = callee ? callee->getAttrOfType<StringAttr>("ortc.ep") : StringAttr();
    if (!ep)
      return fail("@main_graph calls '@" + call.getCallee().str() +
                  "', which is not a partition (no ortc.ep)");
    auto blob = blobs.find(callee.getSymName().str());
    if (blob == blobs.end())
      return fail("partition '" + callee.getSymName().str() + "' (" + ep.str() +
                  ") has no compiled context");
    parts.push_back({callee, &blob->second});
    total += blob->second.bytes.size();
  }
  bool embed = options.embed == EmbedPolicy::Embed ||
               (options.embed == EmbedPolicy::Auto && total <= options.autoEmbedLimit);
  if (embed && total > options.maxEmbeddedBytes)
    return fail("the compiled partitions total " + std::to_string(total) +
                " bytes, over protobuf's 2 GB limit for a model with embedded blobs; write "
                "them as sidecar files (--no-embed)");

  std::map<std::string, int> perEp;
  std::map<std::string, std::string> sidecarOwner;
  auto freshName = [&](const std::string &base) {
    std::string name = base;
    for (int n = 1; taken.contains(name); ++n)
      name = base + "_" + std::to_string(n);
    taken.insert(name);
    return name;
  };
  for (auto [call, part] : llvm::zip(calls, parts)) {
    auto [fn, blob] = part;
    std::string partition = fn.getSymName().str();
    std::string ep = fn->getAttrOfType<StringAttr>("ortc.ep").str();
    onnx::NodeProto *node = graph->add_node();
    node->set_name(partition);
    node->set_op_type("EPContext");
    node->set_domain("com.microsoft");
    for (Value operand : call.getOperands()) {
      auto it = names.find(operand);
      if (it != names.end()) {
        node->add_input(it->second);
        continue;
      }
      Operation *def = operand.getDefiningOp();
      return fail("partition '" + partition + "' reads the result of node '" + onnxNodeName(def) +
                  "' (" + def->getName().getStringRef().str() +
                  "), which no partition or graph input provides");
    }
    for (auto [k, result] : llvm::enumerate(call.getResults())) {
      auto it = names.find(result);
      if (it == names.end()) {
        it = names.try_emplace(result, freshName(partition + "_out" + std::to_string(k))).first;
        // Types of the values between partitions, for tools and the runtime.
        onnx::ValueInfoProto info;
        info.set_name(it->second);
        if (setTensorType(result.getType(), nullptr, *info.mutable_type(), why))
          *graph->add_value_info() = std::move(info);
      }
      node->add_output(it->second);
    }

    addAttribute(*node, "main_context", 1);
    if (embed) {
      addAttribute(*node, "ep_cache_context", blob->bytes.data(), blob->bytes.size());
    } else {
      std::string sidecar = sidecarFileName(outputPath, ep, perEp[ep]++);
      auto [owner, fresh] = sidecarOwner.emplace(sidecar, partition);
      if (!fresh)
        return fail("partitions '" + owner->second + "' and '" + partition +
                    "' would both write sidecar '" + sidecar + "'");
      addAttribute(*node, "ep_cache_context", sidecar);
      output.sidecars.push_back({sidecar, &blob->bytes});
    }
    addAttribute(*node, "embed_mode", embed ? 1 : 0);
    addAttribute(*node, "source", blob->source);
    addAttribute(*node, "ep_sdk_version", blob->epSdkVersion);
    addAttribute(*node, "hardware_architecture", blob->hardwareArchitecture);
    addAttribute(*node, "partition_name", partition);
    addAttribute(*node, "notes", blob->notes);
  }

  // Header: the default-domain opset of the source model plus com.microsoft.
  int64_t defaultOpset = 0;
  if (auto opsets = module->getAttrOfType<DictionaryAttr>("onnx.opset_import"))
    if (auto version = opsets.getAs<IntegerAttr>("ai.onnx"))
      defaultOpset = version.getInt();
  int64_t irVersion = 0;
  if (auto ir = module->getAttrOfType<IntegerAttr>("onnx.ir_version"))
    irVersion = ir.getInt();
  model->set_ir_version(std::max(irVersion, minIrVersionForOpset(defaultOpset)));
  model->set_producer_name("ortc");
  if (defaultOpset > 0) {
    onnx::OperatorSetIdProto *opset = model->add_opset_import();
    opset->set_domain("");
    opset->set_version(defaultOpset);
  }
  onnx::OperatorSetIdProto *msOpset = model->add_opset_import();
  msOpset->set_domain("com.microsoft");
  msOpset->set_version(1);

  if (model->ByteSizeLong() > static_cast<size_t>(INT_MAX))
    return fail(
        "the EPContext model would be " + std::to_string(model->ByteSizeLong()) +
        " bytes, over protobuf's 2 GB limit; write the blobs as sidecar files (--no-embed)");
  output.model = std::move(model);
  return true;
}

namespace {

// One file being written: a temporary beside its target until the rename,
// and a hard link to the target's previous version so a failure can restore it.
struct PendingFile {
  std::string target;
  std::string temp;
  std::string backup; // empty: no previous version kept
  bool renamed = false;
  bool movedAside = false; // the previous version is only at `backup`
};

// Creates a temporary file beside `target` and fills it through `fill`, which
// owns the descriptor. Returns false with a reason in `error`.
template <typename Fill>
bool writeTemp(PendingFile &file, const std::string &dir, Fill fill, std::string &error) {
  int fd = -1;
  llvm::SmallString<256> temp;
  std::string pattern = joinPath(dir, "." + fileNameOf(file.target) + ".tmp-%%%%%%%%");
  if (std::error_code ec = llvm::sys::fs::createUniqueFile(pattern, fd, temp)) {
    error = file.target + ": cannot write in '" + dir + "': " + ec.message();
    return false;
  }
  file.temp = temp.str().str();
  llvm::sys::RemoveFileOnSignal(file.temp);
  if (!fill(fd, error)) {
    error = file.target + ": write failed: " + error;
    return false;
  }
  return true;
}

void removeQuietly(const std::string &path) {
  if (!path.empty())
    ::unlink(path.c_str());
}

// An exclusive flock on the output folder for as long as it lives: writers
// into one folder take turns, so while it is held every hidden temporary or
// backup of our targets belongs to a writer that died (SIGKILL, power loss).
// Best effort: where the folder cannot be locked within kWaitMs (another
// writer stopped or hung while holding it), the write goes ahead unlocked,
// as writes always did, and nothing is cleaned up.
class FolderLock {
public:
  explicit FolderLock(const std::string &dir) {
    constexpr int kWaitMs = 10000, kStepMs = 10;
    fd_ = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd_ < 0)
      return;
    for (int waited = 0; ::flock(fd_, LOCK_EX | LOCK_NB) != 0; waited += kStepMs) {
      if ((errno != EWOULDBLOCK && errno != EINTR) || waited >= kWaitMs) {
        ::close(fd_);
        fd_ = -1;
        return;
      }
      ::usleep(kStepMs * 1000);
    }
  }
  ~FolderLock() {
    if (fd_ >= 0)
      ::close(fd_);
  }
  FolderLock(const FolderLock &) = delete;
  FolderLock &operator=(const FolderLock &) = delete;
  bool held() const { return fd_ >= 0; }

private:
  int fd_ = -1;
};

// Removes what killed writers left beside `targets`: .NAME.tmp-XXXXXXXX and
// .NAME.old-XXXXXXXX (writeTemp's and keepPrevious's names). Called under
// the FolderLock, after a whole write, so an old model moved aside by a
// writer killed mid-way stays until a new one is in place.
void removeStaleFiles(const std::string &dir, const std::vector<std::string> &targets) {
  std::vector<std::string> prefixes;
  for (const std::string &target : targets)
    prefixes.push_back("." + fileNameOf(target));
  std::error_code ec;
  std::vector<std::string> stale;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    llvm::StringRef name = llvm::sys::path::filename(it->path());
    for (const std::string &prefix : prefixes) {
      llvm::StringRef rest = name;
      if (!rest.consume_front(prefix) ||
          !(rest.consume_front(".tmp-") || rest.consume_front(".old-")) || rest.size() != 8 ||
          !llvm::all_of(rest, llvm::isHexDigit))
        continue;
      stale.push_back(it->path());
      break;
    }
  }
  for (const std::string &path : stale)
    removeQuietly(path);
}

} // namespace

bool writeEpContextOutput(const EpContextOutput &output, const std::string &outputPath,
                          std::string &error) {
  if (!output.model) {
    error = outputPath + ": no model to write";
    return false;
  }
  std::string dir = modelDirectory(outputPath);
  FolderLock lock(dir);
  // Sidecars first and the model last, so that a model on disk never names a
  // sidecar that is not there yet.
  std::vector<PendingFile> files;
  for (const auto &sidecar : output.sidecars)
    files.push_back({joinPath(dir, sidecar.fileName), "", "", false, false});
  files.push_back({outputPath, "", "", false, false});

  auto rollback = [&]() {
    for (PendingFile &file : files) {
      if (file.renamed) {
        if (file.backup.empty() || ::rename(file.backup.c_str(), file.target.c_str()) != 0)
          removeQuietly(file.target);
      } else {
        removeQuietly(file.temp);
        // A model moved aside goes back; if it cannot, its backup stays.
        if (file.movedAside && ::rename(file.backup.c_str(), file.target.c_str()) != 0)
          file.backup.clear();
      }
      removeQuietly(file.backup);
      llvm::sys::DontRemoveFileOnSignal(file.temp);
    }
    return false;
  };

  for (size_t i = 0; i < output.sidecars.size(); ++i) {
    const std::vector<char> &bytes = *output.sidecars[i].bytes;
    auto fill = [&](int fd, std::string &why) {
      llvm::raw_fd_ostream os(fd, /*shouldClose=*/true);
      // Piece by piece, unbuffered: a blob's sparsely read tables go in small
      // writes so that the page cache keeps them in small folios.
      os.SetUnbuffered();
      for (auto [offset, length] : blobWritePieces(bytes.data(), bytes.size()))
        os.write(bytes.data() + offset, length);
      os.close();
      if (os.has_error()) {
        why = os.error().message();
        os.clear_error();
        return false;
      }
      return true;
    };
    if (!writeTemp(files[i], dir, fill, error))
      return rollback();
  }
  auto fillModel = [&](int fd, std::string &why) {
    google::protobuf::io::FileOutputStream stream(fd);
    bool ok = output.model->SerializeToZeroCopyStream(&stream);
    ok = stream.Close() && ok;
    if (!ok)
      why = stream.GetErrno() ? std::strerror(stream.GetErrno()) : "protobuf serialization failed";
    return ok;
  };
  if (!writeTemp(files.back(), dir, fillModel, error))
    return rollback();

  // Keep each previous version until everything is in place: the sidecars'
  // as hard links, the model's moved aside before any sidecar is replaced.
  // So a model on disk never names sidecars it was not written with, even
  // when the process is killed between two renames: then there is no model
  // (the old one waits as .NAME.old-XXXXXXXX) rather than an old model over
  // new sidecars.
  auto keepPrevious = [&](PendingFile &file, bool moveAside) {
    if (!llvm::sys::fs::is_regular_file(file.target))
      return true;
    llvm::SmallString<256> backup;
    llvm::sys::fs::createUniquePath(joinPath(dir, "." + fileNameOf(file.target) + ".old-%%%%%%%%"),
                                    backup, /*MakeAbsolute=*/false);
    if (moveAside) {
      if (llvm::sys::fs::rename(file.target, backup))
        return false;
      file.backup = backup.str().str();
      file.movedAside = true;
    } else if (!llvm::sys::fs::create_hard_link(file.target, backup)) {
      file.backup = backup.str().str();
    }
    return true;
  };
  if (!output.sidecars.empty() && !keepPrevious(files.back(), /*moveAside=*/true)) {
    error = outputPath + ": cannot move the previous model aside";
    return rollback();
  }
  for (PendingFile &file : files) {
    if (!file.movedAside)
      keepPrevious(file, /*moveAside=*/false);
    if (std::error_code ec = llvm::sys::fs::rename(file.temp, file.target)) {
      error = file.target + ": cannot move the temporary file into place: " + ec.message();
      return rollback();
    }
    file.renamed = true;
  }
  std::vector<std::string> targets;
  for (PendingFile &file : files) {
    llvm::sys::DontRemoveFileOnSignal(file.temp);
    removeQuietly(file.backup);
    targets.push_back(file.target);
  }
  if (lock.held())
    removeStaleFiles(dir, targets);
  return true;
}

bool writeEpContextModel(ModuleOp module, const EpContextBlobs &blobs,
                         const std::string &outputPath, const EpContextWriteOptions &options,
                         std::string &error) {
  EpContextOutput output;
  return buildEpContextModel(module, blobs, outputPath, options, output, error) &&
         writeEpContextOutput(output, outputPath, error);
}

} // namespace ortc
