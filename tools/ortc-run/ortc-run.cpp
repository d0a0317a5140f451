//===- ortc-run.cpp - the runtime-only runner -----------------------------===//
//
//   ortc-run MODEL_ctx.onnx [--input NAME=FILE ...] [--check NAME=FILE ...]
//            [--iterations M [--warmup N]] [options]
//
// Runs a model compiled by `ortc compile` with the runtime alone: it links
// the session and the runtime EPs (OrtcToolSupport), never the compiler,
// MLIR, LLVM or NVRTC, and the CUDA EP reaches the driver and cuBLAS through
// dlopen. So the binary and its few shared libraries (protobuf, ONNX's
// messages) can be copied to a machine that has a GPU and nothing else of
// ortc's toolchain (scripts/gpu-check.sh does that). One run on .npy/.pb or
// random inputs; optionally every output checked against a reference file
// (max abs/rel error, ok or MISMATCH), and optionally timed runs.
//
//===----------------------------------------------------------------------===//

#include "tools/ortc/CliUtil.h"
#include "tools/ortc/TensorIo.h"

#include "runtime/ep/ElementCast.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <limits>
#include <optional>
#include <sys/stat.h>

using namespace ortc;
using namespace ortc::cli;

namespace {

constexpr const char *kVersion = "0.1.0";

void printHelp() {
  std::cout << R"help(Usage: ortc-run MODEL_ctx.onnx [--input NAME=FILE ...] [options]

The runtime-only runner: runs a model compiled by `ortc compile` with the ortc
runtime and nothing else (no compiler, MLIR, LLVM or NVRTC is linked; the CUDA
EP loads libcuda.so.1 and libcublas.so.13 at run time), so that it can be
copied with its few shared libraries to a machine with a GPU. It runs the
model once and prints each output's dtype, shape and min/max/mean; with
--check it compares the outputs with reference files, with --iterations it
times further runs.

Inputs and the session:
)help" << kInputOptionsHelp
            << runtimeEpOptionsHelp()
            << R"help(  --shape NAME=D0,D1,...
                        Random inputs: the whole shape of input NAME (its
                        static dims must agree); repeat for more. Inputs
                        without one take --batch for their dynamic dims.

Outputs:
  --output-dir DIR      Write each output as DIR/<name>.npy or .pb (created
                        if missing). Default: outputs are not written.
  --output-format npy|pb
                        The written outputs' format. Default: pb when every
                        input is a .pb file, else npy.

Checking (the first run's outputs):
  --check NAME=FILE     Compare output NAME with the reference FILE (.npy or
                        TensorProto .pb); repeat for more outputs.
  --check-dir DIR       Compare every output with DIR/<name>.npy (or .pb;
                        <name> as --output-dir writes it); each must exist.
  --rtol X              Relative tolerance (default 0.001).
  --atol X              Absolute tolerance (default 1e-07). An element
                        matches when |got - want| <= atol + rtol * |want|;
                        NaN matches NaN and an infinity the same infinity
                        (numpy's isclose with equal_nan); integers and bools
                        must be equal. The defaults are the ONNX backend
                        tests'. Dtype and shape must be the reference's.
                        Each checked output prints its max abs error, its max
                        rel error (over the elements whose reference is not
                        0) and ok or MISMATCH (how many elements differ, the
                        first one); then one line "check: ok (...)" or
                        "check: MISMATCH (...)".

Timing:
  --iterations M        After the first run, M timed runs (default 0: none);
                        --runs M is the same. Prints "latency: median X ms,
                        p90 Y ms, mean, min, max" (nearest-rank percentiles;
                        each run includes copying the inputs in and the
                        outputs out).
  --warmup N            Untimed runs before the timed ones (default 5).

Other:
  -h, --help            Show this help.
  --version             Print the version.

Exit status: 0 on success; 1 when the model, an input or a reference file is
refused, a run fails, or a checked output does not match; 2 for a bad command
line. Every error is one line on stderr, "ortc-run: <message>".
)help";
}

struct RunnerOptions {
  std::string model;
  InputOptions inputs;
  std::string outputDir;
  std::string outputFormat; // "", "npy" or "pb"
  std::vector<std::pair<std::string, std::string>> checks;
  std::string checkDir;
  double rtol = 1e-3;
  double atol = 1e-7;
  bool toleranceGiven = false;
  int64_t iterations = 0;
  int64_t warmup = 5;
  bool warmupGiven = false;
};

bool parseTolerance(const std::string &name, const std::string &text, double &into) {
  errno = 0;
  char *end = nullptr;
  double value = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size() || errno != 0 || !std::isfinite(value) ||
      value < 0) {
    printError(name + " wants a number >= 0, got '" + text + "'");
    return false;
  }
  into = value;
  return true;
}

// "NAME=D0,D1,..." into options.shapes.
bool parseShape(const std::string &text, InputOptions &options) {
  size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0) {
    printError("--shape wants NAME=D0,D1,... (e.g. images=8,3,224,224), got '" + text + "'");
    return false;
  }
  std::string name = text.substr(0, eq);
  std::vector<int64_t> dims;
  std::string rest = text.substr(eq + 1);
  if (!rest.empty()) { // "NAME=" is a scalar
    size_t start = 0;
    while (true) {
      size_t comma = rest.find(',', start);
      std::string dim = rest.substr(start, comma == std::string::npos ? std::string::npos
                                                                      : comma - start);
      int64_t value = 0;
      if (!parseInteger("--shape " + name + " dim " + std::to_string(dims.size()), dim, 0,
                        int64_t(1) << 32, value))
        return false;
      dims.push_back(value);
      if (comma == std::string::npos)
        break;
      start = comma + 1;
    }
  }
  for (const auto &entry : options.shapes)
    if (entry.first == name) {
      printError("--shape " + name + " is given twice");
      return false;
    }
  options.shapes.emplace_back(name, dims);
  options.randomOptionGiven = true;
  return true;
}

// nullopt to go on, else the exit status (help, or a bad command line).
std::optional<int> parseOptions(const std::vector<std::string> &args, RunnerOptions &options) {
  OptionParser parser("", printHelp);
  addInputOptions(parser, options.inputs);
  parser.value("--shape",
               [&options](const std::string &value) { return parseShape(value, options.inputs); });
  addOutputOptions(parser, options.outputDir, options.outputFormat);
  parser.value("--check", [&options](const std::string &value) {
    size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0 || eq + 1 == value.size()) {
      printError("--check wants NAME=FILE, got '" + value + "'");
      return false;
    }
    for (const auto &entry : options.checks)
      if (entry.first == value.substr(0, eq)) {
        printError("--check " + entry.first + " is given twice");
        return false;
      }
    options.checks.emplace_back(value.substr(0, eq), value.substr(eq + 1));
    return true;
  });
  parser.value("--check-dir", [&options](const std::string &value) {
    if (value.empty()) {
      printError("--check-dir needs a folder");
      return false;
    }
    options.checkDir = value;
    return true;
  });
  parser.value("--rtol", [&options](const std::string &value) {
    options.toleranceGiven = true;
    return parseTolerance("--rtol", value, options.rtol);
  });
  parser.value("--atol", [&options](const std::string &value) {
    options.toleranceGiven = true;
    return parseTolerance("--atol", value, options.atol);
  });
  parser.value(std::vector<std::string>{"--iterations", "--runs"},
               [&options](const std::string &value) {
                 return parseInteger("--iterations", value, 0, 100000000, options.iterations);
               });
  parser.value("--warmup", [&options](const std::string &value) {
    options.warmupGiven = true;
    return parseInteger("--warmup", value, 0, 100000000, options.warmup);
  });
  parser.model(options.model);
  if (std::optional<int> exit = parser.parse(args))
    return exit;
  if (!options.inputs.shapes.empty() && !options.inputs.files.empty()) {
    printError("--shape shapes random inputs; it cannot be combined with --input");
    return kExitUsage;
  }
  if (!checkInputOptions(options.inputs))
    return kExitUsage;
  if (!options.checks.empty() && !options.checkDir.empty()) {
    printError("give --check NAME=FILE or --check-dir DIR, not both");
    return kExitUsage;
  }
  if (options.toleranceGiven && options.checks.empty() && options.checkDir.empty()) {
    printError("--rtol and --atol need --check or --check-dir");
    return kExitUsage;
  }
  if (options.warmupGiven && options.iterations == 0) {
    printError("--warmup needs --iterations");
    return kExitUsage;
  }
  return std::nullopt;
}

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

bool isExactType(ElementType type) {
  switch (type) {
  case ElementType::Bool:
  case ElementType::UInt8:
  case ElementType::Int8:
  case ElementType::UInt16:
  case ElementType::Int16:
  case ElementType::Int32:
  case ElementType::Int64:
  case ElementType::UInt32:
  case ElementType::UInt64:
  case ElementType::UInt4:
  case ElementType::Int4:
  case ElementType::UInt2:
  case ElementType::Int2:
    return true;
  default:
    return false;
  }
}

std::string indexText(int64_t flat, const std::vector<int64_t> &shape) {
  std::vector<int64_t> index(shape.size());
  for (size_t d = shape.size(); d-- > 0;) {
    int64_t dim = std::max<int64_t>(shape[d], 1);
    index[d] = flat % dim;
    flat /= dim;
  }
  std::string text = "[";
  for (size_t d = 0; d < index.size(); ++d)
    text += (d ? ", " : "") + std::to_string(index[d]);
  return text + "]";
}

std::string valueText(const ElementValue &value) {
  switch (value.kind) {
  case ElementValue::Signed:
    return std::to_string(value.i);
  case ElementValue::Unsigned:
    return std::to_string(value.u);
  default:
    return formatNumber(value.f, 8);
  }
}

struct Comparison {
  bool ok = true;
  std::string problem; // why not ok
  double maxAbs = 0;
  double maxRel = 0;
};

Comparison compare(const TensorView &got, const TensorView &want, double rtol, double atol) {
  Comparison result;
  if (got.type != want.type) {
    result.ok = false;
    result.problem = "dtype " + elementTypeName(got.type) + ", expected " +
                     elementTypeName(want.type);
    return result;
  }
  if (got.shape != want.shape) {
    result.ok = false;
    result.problem =
        "shape " + shapeToString(got.shape) + ", expected " + shapeToString(want.shape);
    return result;
  }
  if (!isKnownElementType(got.type)) {
    result.ok = false;
    result.problem = "cannot compare " + elementTypeName(got.type) + " values";
    return result;
  }
  bool exact = isExactType(got.type);
  int64_t count = got.numElements(), differ = 0, first = -1;
  for (int64_t i = 0; i < count; ++i) {
    ElementValue g = readElement(got.type, got.data, i);
    ElementValue w = readElement(want.type, want.data, i);
    double gd = g.toDouble(), wd = w.toDouble();
    bool match;
    double err;
    if (exact) {
      match = g.kind == w.kind && g.i == w.i && g.u == w.u;
      err = match ? 0 : std::fabs(gd - wd);
    } else if (std::isnan(gd) || std::isnan(wd)) {
      match = std::isnan(gd) && std::isnan(wd);
      err = match ? 0 : std::numeric_limits<double>::infinity();
    } else if (gd == wd) { // the same infinity, too
      match = true;
      err = 0;
    } else {
      err = std::fabs(gd - wd); // inf when one is infinite
      match = err <= atol + rtol * std::fabs(wd);
    }
    result.maxAbs = std::max(result.maxAbs, err);
    if (wd != 0 && std::isfinite(wd))
      result.maxRel = std::max(result.maxRel, err / std::fabs(wd));
    if (!match) {
      if (first < 0)
        first = i;
      ++differ;
    }
  }
  if (differ) {
    result.ok = false;
    result.problem = std::to_string(differ) + "/" + std::to_string(count) +
                     " differ; first at " + indexText(first, got.shape) + ": got " +
                     valueText(readElement(got.type, got.data, first)) + ", expected " +
                     valueText(readElement(want.type, want.data, first));
  }
  return result;
}

bool isFile(const std::string &path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The references for the outputs to check, by output index.
struct Reference {
  size_t output;
  std::string path;
  NpyArray array;
};

Result<std::vector<Reference>> readReferences(const RunnerOptions &options,
                                              const std::vector<TensorSignature> &outputs) {
  std::vector<Reference> references;
  if (!options.checkDir.empty()) {
    struct stat st;
    if (::stat(options.checkDir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return Status::error(StatusCode::NotFound,
                           options.checkDir + ": --check-dir: no such folder");
    for (size_t i = 0; i < outputs.size(); ++i) {
      std::string stem = options.checkDir + "/" + outputFileStem(outputs[i].name);
      std::string path = isFile(stem + ".npy") ? stem + ".npy" : stem + ".pb";
      if (!isFile(path))
        return Status::error(StatusCode::NotFound,
                             "output '" + outputs[i].name + "': no reference " + stem +
                                 ".npy or .pb (--check-dir)");
      references.push_back({i, path, {}});
    }
  }
  for (const auto &[name, path] : options.checks) {
    size_t index = outputs.size();
    for (size_t i = 0; i < outputs.size(); ++i)
      if (outputs[i].name == name)
        index = i;
    if (index == outputs.size()) {
      std::string names;
      for (const TensorSignature &output : outputs)
        names += (names.empty() ? "" : ", ") + output.name;
      return Status::error(StatusCode::InvalidArgument,
                           options.model + " has no output named '" + name + "' (--check; " +
                               "its outputs: " + names + ")");
    }
    references.push_back({index, path, {}});
  }
  for (Reference &reference : references) {
    TensorFormat format;
    Result<NpyArray> array = readTensorFile(reference.path, format);
    if (!array.isOk())
      return Status::error(array.status().code(), "reference for output '" +
                                                      outputs[reference.output].name +
                                                      "': " + array.status().message());
    reference.array = array.takeValue();
  }
  return references;
}

// Nearest rank: the smallest time at or above p percent of the runs.
double percentile(const std::vector<double> &sorted, double p) {
  size_t rank = size_t(std::ceil(p / 100.0 * double(sorted.size())));
  return sorted[std::min(sorted.size(), std::max<size_t>(rank, 1)) - 1];
}

int run(const RunnerOptions &options) {
  Clock::time_point start = Clock::now();
  Result<std::unique_ptr<Session>> session = loadSession(options.model, options.inputs);
  double loadMs = millisecondsSince(start);
  if (!session.isOk()) {
    printError(session.status().message());
    return kExitFailed;
  }
  const Session &s = *session.value();
  Result<std::vector<Reference>> references = readReferences(options, s.outputs());
  if (!references.isOk()) {
    printError(references.status().message());
    return kExitFailed;
  }
  Result<ModelInputs> inputs = prepareInputs(options.model, s.inputs(), options.inputs);
  if (!inputs.isOk()) {
    printError(inputs.status().message());
    return kExitFailed;
  }
  if (inputs.value().random)
    printRandomInputs(std::cout, s.inputs(), inputs.value(), options.inputs);
  std::vector<TensorView> views = inputs.value().views();

  start = Clock::now();
  Result<std::vector<OwnedTensor>> outputs = s.run(views);
  double firstRunMs = millisecondsSince(start);
  if (!outputs.isOk()) {
    printError(outputs.status().message());
    return kExitFailed;
  }
  std::cout << "model: " << escapeLineBreaks(options.model) << " (load "
            << formatNumber(loadMs, 4) << " ms, first run " << formatNumber(firstRunMs, 4)
            << " ms)\n";

  // The outputs, written if asked.
  if (Status printed =
          printOutputs(std::cout, s.outputs(), outputs.value(), options.outputDir,
                       outputFormatFor(options.outputFormat, inputs.value().allPb));
      !printed.isOk()) {
    printError(printed.message());
    return kExitFailed;
  }

  // The check.
  bool mismatch = false;
  if (!references.value().empty()) {
    std::cout << "check (rtol " << formatNumber(options.rtol) << ", atol "
              << formatNumber(options.atol) << "):\n";
    std::vector<std::vector<std::string>> rows;
    double maxAbs = 0, maxRel = 0;
    size_t bad = 0;
    for (Reference &reference : references.value()) {
      TensorView got = outputs.value()[reference.output].view();
      Comparison c = compare(got, reference.array.view(), options.rtol, options.atol);
      maxAbs = std::max(maxAbs, c.maxAbs);
      maxRel = std::max(maxRel, c.maxRel);
      bad += !c.ok;
      rows.push_back({s.outputs()[reference.output].name,
                      elementTypeName(got.type) + shapeToString(got.shape),
                      "max abs " + formatNumber(c.maxAbs, 3), "max rel " + formatNumber(c.maxRel, 3),
                      c.ok ? "ok" : "MISMATCH: " + c.problem});
    }
    printTable(std::cout, rows);
    size_t checked = references.value().size();
    std::string errors = "max abs " + formatNumber(maxAbs, 3) + ", max rel " +
                         formatNumber(maxRel, 3);
    if (bad)
      std::cout << "check: MISMATCH (" << bad << " of " << checked << " checked outputs differ; "
                << errors << ")\n";
    else
      std::cout << "check: ok (" << checked << " output" << (checked == 1 ? "" : "s") << ", "
                << errors << ")\n";
    mismatch = bad != 0;
  }

  // The timing.
  if (options.iterations > 0) {
    for (int64_t i = 0; i < options.warmup; ++i) {
      Result<std::vector<OwnedTensor>> again = s.run(views);
      if (!again.isOk()) {
        printError(again.status().message());
        return kExitFailed;
      }
    }
    std::vector<double> ms;
    ms.reserve(size_t(options.iterations));
    for (int64_t i = 0; i < options.iterations; ++i) {
      start = Clock::now();
      Result<std::vector<OwnedTensor>> again = s.run(views);
      ms.push_back(millisecondsSince(start));
      if (!again.isOk()) {
        printError(again.status().message());
        return kExitFailed;
      }
    }
    std::sort(ms.begin(), ms.end());
    double sum = 0;
    for (double value : ms)
      sum += value;
    auto text = [](double value) { return formatNumber(value, 4) + " ms"; };
    std::cout << "latency: median " << text(percentile(ms, 50)) << ", p90 "
              << text(percentile(ms, 90)) << ", mean " << text(sum / double(ms.size()))
              << ", min " << text(ms.front()) << ", max " << text(ms.back()) << " ("
              << options.iterations << " runs after " << options.warmup << " warm-up)\n";
  }
  return mismatch ? kExitFailed : kExitOk;
}

} // namespace

int main(int argc, char **argv) {
  setProgramName("ortc-run");
  std::vector<std::string> args(argv + 1, argv + argc);
  if (std::find(args.begin(), args.end(), "--version") != args.end()) {
    std::cout << "ortc-run " << kVersion << "\n";
    return kExitOk;
  }
  RunnerOptions options;
  if (std::optional<int> exit = parseOptions(args, options))
    return *exit;
  return run(options);
}
