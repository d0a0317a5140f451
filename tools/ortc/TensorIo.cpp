//===- TensorIo.cpp - inputs and outputs of `ortc run` and `bench` --------===//

#include "tools/ortc/TensorIo.h"

#include "runtime/ep/ElementCast.h"
#include "runtime/support/TensorFile.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <new>
#include <ostream>
#include <random>

namespace ortc::cli {

const char *const kInputOptionsHelp =
    R"(  --input NAME=FILE     The value of graph input NAME: a .npy file or an ONNX
                        TensorProto .pb file (as in the ONNX backend tests'
                        input_0.pb; raw_data or typed values, no external
                        data). A sequence input takes a SequenceProto .pb,
                        an optional one an OptionalProto .pb. Give every
                        input, or none: with no --input, each tensor input
                        is filled with random values of its declared shape.
  --batch N             Random inputs: the value of every dynamic dim
                        (default 1).
  --seed N              Random inputs: the generator's seed (default 0, so
                        runs repeat).
  --threads N           Threads a run may use inside an operator (default 0:
                        one per core; 1: no extra threads).
  --ep-option EP:KEY=VALUE
                        An option of one of the runtime's EPs; repeat for
                        more. An unknown EP or key, or a bad value, is
                        refused. The EPs of this build take:
)";

std::string runtimeEpOptionsHelp() {
  std::string text;
  for (const RuntimeEpFactory &factory : builtinRuntimeEpFactories()) {
    std::shared_ptr<RuntimeEp> ep = factory.create();
    std::string name = factory.aliases.empty() ? factory.name : factory.aliases.front();
    std::vector<EpOptionSpec> specs = ep ? ep->options() : std::vector<EpOptionSpec>();
    text += specs.empty() ? "    " + factory.name + ": no options\n"
                          : formatEpOptionsHelp(name, specs, "    ");
  }
  return text;
}

void addInputOptions(OptionParser &parser, InputOptions &options) {
  parser.value("--input", [&options](const std::string &value) {
    size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) {
      printError("--input wants NAME=FILE, got '" + value + "'");
      return false;
    }
    options.files.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    return true;
  });
  parser.value("--batch", [&options](const std::string &value) {
    options.randomOptionGiven = true;
    return parseInteger("--batch", value, 1, int64_t(1) << 32, options.batch);
  });
  parser.value("--seed", [&options](const std::string &value) {
    options.randomOptionGiven = true;
    int64_t seed = 0;
    bool ok = parseInteger("--seed", value, 0, std::numeric_limits<int64_t>::max(), seed);
    options.seed = uint64_t(seed);
    return ok;
  });
  parser.value("--threads", [&options](const std::string &value) {
    int64_t threads = 0;
    bool ok = parseInteger("--threads", value, 0, 4096, threads);
    options.threads = int(threads);
    return ok;
  });
  parser.value("--ep-option", [&options](const std::string &value) {
    Status parsed = parseEpOptionArgument(value, options.epOptions);
    if (!parsed.isOk())
      printError(parsed.message());
    return parsed.isOk();
  });
}

bool checkInputOptions(const InputOptions &options) {
  if (options.randomOptionGiven && !options.files.empty()) {
    printError("--batch and --seed shape random inputs; they cannot be combined with --input");
    return false;
  }
  for (size_t i = 0; i < options.files.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (options.files[i].first == options.files[j].first) {
        printError("--input " + options.files[i].first + " is given twice");
        return false;
      }
  return true;
}

std::optional<int> parseWithInputOptions(OptionParser &parser, const std::vector<std::string> &args,
                                         const InputOptions &inputs) {
  if (std::optional<int> exit = parser.parse(args))
    return exit;
  if (!checkInputOptions(inputs))
    return kExitUsage;
  return std::nullopt;
}

SessionOptions sessionOptions(const InputOptions &options) {
  SessionOptions session;
  session.intraOpThreads = options.threads;
  session.epOptions = options.epOptions;
  return session;
}

Result<std::unique_ptr<Session>> loadSession(const std::string &model,
                                             const InputOptions &options) {
  Result<EpRegistry> registry = createBuiltinEpRegistry();
  if (!registry.isOk())
    return registry.status();
  return Session::load(model, registry.takeValue(), sessionOptions(options));
}

std::vector<TensorView> ModelInputs::views() {
  std::vector<TensorView> result;
  for (size_t i = 0; i < arrays.size(); ++i)
    result.push_back(i < kinds.size() && kinds[i] != ValueKind::Tensor
                         ? TensorView{&sequences[i], arrays[i].type, {}}
                         : arrays[i].view());
  return result;
}

namespace {

bool endsWith(const std::string &text, const std::string &suffix) {
  return text.size() >= suffix.size() &&
         text.compare(text.size() - suffix.size(), suffix.size(), suffix) == 0;
}

bool isFloatType(ElementType type) {
  switch (type) {
  case ElementType::Float:
  case ElementType::Double:
  case ElementType::Float16:
  case ElementType::BFloat16:
  case ElementType::Float8E4M3FN:
  case ElementType::Float8E4M3FNUZ:
  case ElementType::Float8E5M2:
  case ElementType::Float8E5M2FNUZ:
  case ElementType::Float8E8M0:
  case ElementType::Float4E2M1:
    return true;
  default:
    return false;
  }
}

/// Random integers lie in [0, this): 10, or less where the type ends sooner.
uint64_t randomIntegerBound(ElementType type) {
  switch (type) {
  case ElementType::Int4:
    return 8;
  case ElementType::UInt2:
    return 4;
  case ElementType::Int2:
    return 2;
  default:
    return 10;
  }
}

// Floats uniform in [-1, 1) (cast to the type: the narrow floats round, and
// float8e8m0 has no sign); integers in [0, 10), valid for every integer type
// of 8 bits or more and small enough to index most tables (less for the 2-
// and 4-bit types); bools either way.
void fillRandom(NpyArray &array, int64_t count, std::mt19937_64 &rng) {
  char *data = array.data.data();
  auto uniform = [&] { return double(rng() >> 11) * 0x1.0p-53 * 2.0 - 1.0; };
  CastOptions options;
  for (int64_t i = 0; i < count; ++i) {
    ElementValue value;
    if (array.type == ElementType::Bool)
      value = ElementValue::ofUnsigned(rng() & 1);
    else if (array.type == ElementType::Double)
      value = ElementValue::ofFloat(uniform());
    else if (isFloatType(array.type)) // through float32, as these always were
      value = ElementValue::ofFloat(float(uniform()));
    else
      value = ElementValue::ofUnsigned(rng() % randomIntegerBound(array.type));
    writeElementBits(array.type, data, i, encodeElement(array.type, value, options));
  }
}

// Random inputs beyond this are almost certainly a mistaken --batch.
constexpr uint64_t kMaxRandomBytes = uint64_t(1) << 32;

Result<NpyArray> randomInput(const TensorSignature &signature, const InputOptions &options,
                             std::mt19937_64 &rng) {
  NpyArray array;
  array.type = signature.type;
  if (!isKnownElementType(signature.type))
    return Status::error(StatusCode::Unsupported,
                         "input '" + signature.name + "' is " + elementTypeName(signature.type) +
                             ", which random inputs do not cover; give --input files");
  const std::vector<int64_t> *given = nullptr;
  for (const auto &[name, shape] : options.shapes)
    if (name == signature.name)
      given = &shape;
  if (given) {
    if (given->size() != signature.shape.size())
      return Status::error(StatusCode::InvalidArgument,
                           "input '" + signature.name + "' is " +
                               elementTypeName(signature.type) + shapeToString(signature.shape) +
                               " (rank " + std::to_string(signature.shape.size()) +
                               "); --shape gives rank " + std::to_string(given->size()));
    for (size_t d = 0; d < given->size(); ++d)
      if (signature.shape[d] >= 0 && signature.shape[d] != (*given)[d])
        return Status::error(StatusCode::InvalidArgument,
                             "input '" + signature.name + "' is " +
                                 elementTypeName(signature.type) +
                                 shapeToString(signature.shape) + "; --shape gives dim " +
                                 std::to_string(d) + " = " + std::to_string((*given)[d]));
  }
  uint64_t count = 1;
  for (size_t d = 0; d < signature.shape.size(); ++d) {
    int64_t dim = signature.shape[d];
    int64_t bound = given ? (*given)[d] : dim < 0 ? options.batch : dim;
    array.shape.push_back(bound);
    if (bound && count > kMaxRandomBytes / uint64_t(bound))
      count = kMaxRandomBytes + 1;
    else
      count *= uint64_t(bound);
  }
  uint64_t bytes = count > kMaxRandomBytes ? count : tensorBytes(signature.type, int64_t(count));
  if (bytes > kMaxRandomBytes)
    return Status::error(StatusCode::InvalidArgument,
                         "input '" + signature.name + "': random " +
                             elementTypeName(signature.type) + shapeToString(array.shape) +
                             " would take over 4 GiB; give a smaller --batch");
  try {
    array.data.resize(size_t(bytes));
  } catch (const std::bad_alloc &) {
    return Status::error(StatusCode::InvalidArgument,
                         "input '" + signature.name + "': cannot allocate " +
                             std::to_string(bytes) + " bytes of random values");
  }
  fillRandom(array, int64_t(count), rng);
  return array;
}

} // namespace

Result<NpyArray> readTensorFile(const std::string &path, TensorFormat &format) {
  if (endsWith(path, ".npy"))
    format = TensorFormat::Npy;
  else if (endsWith(path, ".pb"))
    format = TensorFormat::Pb;
  else {
    // Any other name: .npy files start with their magic; anything else is
    // read as a TensorProto.
    char magic[6] = {};
    std::ifstream in(path, std::ios::binary);
    in.read(magic, 6);
    format = std::memcmp(magic, "\x93NUMPY", 6) == 0 ? TensorFormat::Npy : TensorFormat::Pb;
  }
  return format == TensorFormat::Npy ? readNpy(path) : readTensorProto(path);
}

Result<ModelInputs> prepareInputs(const std::string &model,
                                  const std::vector<TensorSignature> &signatures,
                                  const InputOptions &options) {
  ModelInputs inputs;
  if (options.files.empty()) {
    for (const auto &[name, shape] : options.shapes) {
      bool known = false;
      for (const TensorSignature &signature : signatures)
        known = known || signature.name == name;
      if (!known)
        return Status::error(StatusCode::InvalidArgument,
                             model + " has no input named '" + name + "' (--shape)");
    }
    inputs.random = true;
    std::mt19937_64 rng(options.seed);
    for (const TensorSignature &signature : signatures) {
      if (signature.kind != ValueKind::Tensor)
        return Status::error(StatusCode::InvalidArgument,
                             model + ": input '" + signature.name + "' is " +
                                 valueKindText(signature.kind, signature.type) +
                                 ", which takes no random values; give it with --input " +
                                 signature.name + "=FILE.pb (a SequenceProto or OptionalProto)");
      Result<NpyArray> array = randomInput(signature, options, rng);
      if (!array.isOk())
        return Status::error(array.status().code(), model + ": " + array.status().message());
      inputs.arrays.push_back(array.takeValue());
    }
    return inputs;
  }
  inputs.allPb = true;
  for (const TensorSignature &signature : signatures) {
    auto file = std::find_if(options.files.begin(), options.files.end(),
                             [&](const auto &entry) { return entry.first == signature.name; });
    if (file == options.files.end())
      return Status::error(StatusCode::InvalidArgument,
                           model + ": input '" + signature.name + "' (" +
                               elementTypeName(signature.type) + shapeToString(signature.shape) +
                               ") needs --input " + signature.name +
                               "=FILE (or give no --input for random values)");
    inputs.kinds.push_back(signature.kind);
    inputs.sequences.emplace_back();
    if (signature.kind != ValueKind::Tensor) {
      Result<SequenceValue> value =
          readContainerProto(file->second, signature.kind, signature.type);
      if (!value.isOk())
        return Status::error(value.status().code(),
                             "input '" + signature.name + "': " + value.status().message());
      inputs.sequences.back() = value.takeValue();
      NpyArray none;
      none.type = signature.type;
      inputs.arrays.push_back(std::move(none));
      continue;
    }
    TensorFormat format;
    Result<NpyArray> array = readTensorFile(file->second, format);
    if (!array.isOk())
      return Status::error(array.status().code(),
                           "input '" + signature.name + "': " + array.status().message());
    inputs.allPb = inputs.allPb && format == TensorFormat::Pb;
    inputs.arrays.push_back(array.takeValue());
  }
  for (const auto &[name, file] : options.files) {
    bool known = false;
    for (const TensorSignature &signature : signatures)
      known = known || signature.name == name;
    if (!known)
      return Status::error(StatusCode::InvalidArgument,
                           model + " has no input named '" + name + "'");
  }
  return inputs;
}

void printRandomInputs(std::ostream &os, const std::vector<TensorSignature> &signatures,
                       const ModelInputs &inputs, const InputOptions &options) {
  os << "no --input: random inputs (seed " << options.seed << ", dynamic dims = " << options.batch
     << ")\n";
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < signatures.size(); ++i) {
    const NpyArray &array = inputs.arrays[i];
    std::string values =
        isFloatType(array.type) ? "uniform in [-1, 1)"
        : array.type == ElementType::Bool
            ? "false or true"
            : "integers in [0, " + std::to_string(randomIntegerBound(array.type)) + ")";
    rows.push_back(
        {signatures[i].name, elementTypeName(array.type) + shapeToString(array.shape), values});
  }
  printTable(os, rows);
}

std::string describeInputs(const ModelInputs &inputs, const InputOptions &options) {
  if (!inputs.random)
    return "files";
  return "random (seed " + std::to_string(options.seed) +
         ", dynamic dims = " + std::to_string(options.batch) + ")";
}

std::string outputFileStem(const std::string &name) {
  // Output names come from the model: keep them from naming other paths.
  std::string file = name;
  for (char &c : file)
    if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
      c = '_';
  if (file.empty() || file[0] == '.')
    file = "_" + file;
  return file;
}

Result<std::string> writeOutput(const std::string &dir, const std::string &name,
                                const TensorView &tensor, TensorFormat format) {
  std::string file = outputFileStem(name);
  std::string path = dir + "/" + file + (format == TensorFormat::Pb ? ".pb" : ".npy");
  // numpy has no 8-bit floats or packed 4- and 2-bit types (ml_dtypes does,
  // outside the .npy format); a TensorProto holds them.
  if (format == TensorFormat::Npy && int(tensor.type) >= int(ElementType::Float8E4M3FN) &&
      isKnownElementType(tensor.type))
    return Status::error(StatusCode::InvalidArgument,
                         "output '" + name + "' is " + elementTypeName(tensor.type) +
                             ", which .npy cannot hold; use --output-format pb");
  Status written =
      format == TensorFormat::Pb ? writeTensorProto(path, name, tensor) : writeNpy(path, tensor);
  if (!written.isOk())
    return Status::error(written.code(), "output '" + name + "': " + written.message());
  return path;
}

namespace {

double valueAt(const TensorView &tensor, int64_t i) {
  return readElement(tensor.type, tensor.data, i).toDouble();
}

} // namespace

std::string summarizeValues(const TensorView &tensor) {
  int64_t count = tensor.numElements();
  if (count == 0 || !isKnownElementType(tensor.type))
    return "";
  if (tensor.type == ElementType::Bool) {
    int64_t trues = 0;
    for (int64_t i = 0; i < count; ++i)
      trues += valueAt(tensor, i) != 0;
    return "true " + std::to_string(trues) + " of " + std::to_string(count);
  }
  double min = std::numeric_limits<double>::infinity(), max = -min, sum = 0;
  int64_t nans = 0;
  for (int64_t i = 0; i < count; ++i) {
    double value = valueAt(tensor, i);
    if (std::isnan(value)) {
      ++nans;
      continue;
    }
    min = std::min(min, value);
    max = std::max(max, value);
    sum += value;
  }
  std::string text;
  if (nans < count)
    text = "min " + formatNumber(min) + "  max " + formatNumber(max) + "  mean " +
           formatNumber(sum / double(count - nans));
  if (nans)
    text += std::string(text.empty() ? "" : "  ") + "nan " + std::to_string(nans);
  return text;
}

TensorFormat outputFormatFor(const std::string &requested, bool inputsAllPb) {
  if (requested == "pb")
    return TensorFormat::Pb;
  if (requested == "npy")
    return TensorFormat::Npy;
  return inputsAllPb ? TensorFormat::Pb : TensorFormat::Npy;
}

void addOutputOptions(OptionParser &parser, std::string &dir, std::string &format) {
  parser.value("--output-dir", dir);
  parser.value("--output-format", [&format](const std::string &value) {
    if (value != "npy" && value != "pb") {
      printError("--output-format takes npy or pb, got '" + value + "'");
      return false;
    }
    format = value;
    return true;
  });
}

Status printOutputs(std::ostream &os, const std::vector<TensorSignature> &signatures,
                    const std::vector<OwnedTensor> &outputs, const std::string &dir,
                    TensorFormat format) {
  std::vector<RunOutput> runOutputs(outputs.size());
  for (size_t i = 0; i < outputs.size(); ++i)
    runOutputs[i].result = outputs[i];
  return printOutputs(os, signatures, runOutputs, dir, format);
}

Status printOutputs(std::ostream &os, const std::vector<TensorSignature> &signatures,
                    const std::vector<RunOutput> &outputs, const std::string &dir,
                    TensorFormat format) {
  if (!dir.empty())
    if (Status made = createOutputDir(dir); !made.isOk())
      return made;
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < signatures.size(); ++i) {
    const std::string &name = signatures[i].name;
    if (signatures[i].kind != ValueKind::Tensor) {
      // A sequence or optional: one .pb (its protobuf message), and the
      // tensors it holds as the summary.
      const SequenceValue empty;
      const SequenceValue &value = outputs[i].sequence ? *outputs[i].sequence : empty;
      std::vector<std::string> row = {name, valueKindText(signatures[i].kind, signatures[i].type)};
      if (!dir.empty()) {
        if (format != TensorFormat::Pb)
          return Status::error(StatusCode::InvalidArgument,
                               "output '" + name + "' is " +
                                   valueKindText(signatures[i].kind, signatures[i].type) +
                                   ", which .npy cannot hold; use --output-format pb");
        std::string path = dir + "/" + outputFileStem(name) + ".pb";
        if (Status s = writeContainerProto(path, name, signatures[i].kind, value); !s.isOk())
          return Status::error(s.code(), "output '" + name + "': " + s.message());
        row.push_back(path);
      }
      std::string held = value.present ? std::to_string(value.elements.size()) + " tensor(s):"
                                       : std::string("none");
      for (const OwnedTensor &t : value.elements)
        held += " " + shapeToString(t.shape);
      row.push_back(held);
      rows.push_back(std::move(row));
      continue;
    }
    TensorView view = outputs[i].result.view();
    std::vector<std::string> row = {name, elementTypeName(view.type) + shapeToString(view.shape)};
    if (!dir.empty()) {
      Result<std::string> path = writeOutput(dir, name, view, format);
      if (!path.isOk())
        return path.status();
      row.push_back(path.value());
    }
    row.push_back(summarizeValues(view));
    rows.push_back(std::move(row));
  }
  os << "outputs:\n";
  printTable(os, rows);
  return Status::ok();
}

Status createOutputDir(const std::string &dir) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec)
    return Status::error(StatusCode::InvalidArgument,
                         dir + ": cannot create the output folder: " + ec.message());
  return Status::ok();
}

} // namespace ortc::cli
