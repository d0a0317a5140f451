//===- CompileCommand.cpp - `ortc compile` --------------------------------===//

#include "tools/ortc/Commands.h"

#include "compiler/EP/AvailableEps.h"
#include "compiler/Import/OnnxImporter.h"
#include "compiler/Partition/Partitioner.h"
#include "compiler/Partition/SpecEp.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Pass/PassManager.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <cstdio>
#include <iostream>
#include <optional>

namespace ortc::cli {
namespace {

struct CompileOptions {
  std::string input;
  std::string output;
  std::string emit = "epcontext";
  int64_t elideConstantsAbove = 4096;
  bool printLocations = false;
  std::vector<std::string> eps;     // --ep, in priority order
  std::vector<std::string> testEps; // --test-ep specs, after --ep
  std::string report;               // "", "text" or "json"
  bool allowUnclaimed = false;
};

// Options that later issues implement. Accepted on the command line so that the
// message can say what is missing rather than "unknown option".
struct PlannedOption {
  const char *name;
  const char *arrivesWith;
};
constexpr PlannedOption kPlannedOptions[] = {
    {"--embed", "the CPU EP and EPContext writer issue"},
    {"--no-embed", "the CPU EP and EPContext writer issue"},
    {"--cpu", "the CPU EP issue"},
};

} // namespace

void printCompileHelp() {
  std::cout <<
      R"(Usage: ortc compile MODEL.onnx [options]

Imports MODEL.onnx (inline or external weights), runs the compiler pipeline
and writes the result.

Options:
  -o, --output PATH     Where to write. Default: stdout for --emit=onnx-mlir,
                        MODEL_ctx.onnx beside the input for --emit=epcontext.
                        Files are written whole or not at all.
  --emit=KIND           What to produce:
                          onnx-mlir        the imported IR in the onnx dialect
                          optimized-mlir   after the generic passes (canonicalize,
                                           shape inference, constant folding,
                                           fusions, dead-code elimination)
                          partitioned-mlir after partitioning over --ep: one
                                           function per partition
                          epcontext        model_ctx.onnx with EPContext nodes;
                                           the default                (not available yet)
  --elide-constants-above=N
                        In MLIR output, print constants of more than N
                        elements (default 4096) as dense_resource<NAME__elided>
                        without their bytes, which are then not even read
                        from disk. -1 prints every constant in full.
  --print-locations     Print locations: each op's is its ONNX node name.
  --ep=LIST             EPs in priority order, e.g. cuda,cpu. This build
                        has none yet: the CPU and CUDA EPs arrive with their
                        issues, and naming one says so.
  --test-ep=SPEC        For testing the partitioner: an EP described by SPEC,
                        e.g. gpu_ep@cuda:MatMul=100:*=4000 (op costs in ns; see
                        compiler/Partition/SpecEp.h). Repeat for more EPs; they
                        come after --ep in priority. It compiles nothing.
  --report[=text|json]  Print the placements, partitions and decline reasons
                        to stderr (needs --emit=partitioned-mlir or later).
  --allow-unclaimed     Keep nodes no EP supports as plain ONNX nodes instead
                        of stopping with the decline table.
  --embed, --no-embed   Blobs inline in the model or in sidecar files. (not available yet)
  --cpu=NAME            Target CPU: host, x86-64-v3, x86-64-v4.     (not available yet)
  -h, --help            Show this help.

Errors are one line naming the file and the node, initializer or value, with
exit status 1; command-line errors and options not available yet exit with 2.
)";
}

namespace {

// Splits "--name=value" or takes the value from the next argument.
bool takeValue(const std::vector<std::string> &args, size_t &i, const std::string &name,
               std::string &value) {
  const std::string &arg = args[i];
  if (arg.size() > name.size() && arg.compare(0, name.size() + 1, name + "=") == 0) {
    value = arg.substr(name.size() + 1);
    return true;
  }
  if (arg == name) {
    if (i + 1 >= args.size()) {
      printError("option " + name + " needs a value");
      return false;
    }
    value = args[++i];
    return true;
  }
  return false;
}

bool matches(const std::string &arg, const std::string &name) {
  return arg == name || arg.compare(0, name.size() + 1, name + "=") == 0;
}

// Writes `text` to `path` through a temporary file and a rename, so that a
// failure never leaves a partial output behind.
bool writeFileAtomically(const std::string &path, const std::string &text) {
  std::string tmp = path + ".tmp-ortc";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec, llvm::sys::fs::OF_None);
    if (ec) {
      printError(path + ": cannot write: " + ec.message());
      return false;
    }
    os << text;
    os.close();
    if (os.has_error()) {
      printError(path + ": write failed: " + os.error().message());
      os.clear_error();
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    printError(path + ": cannot rename the temporary file into place");
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

// Points every constant of more than `limit` elements at a fresh resource
// handle with no blob (key "<name>__elided"), so that the printer neither
// prints nor reads its bytes: mapped external weights stay on disk. MLIR's own
// eliding flags render a blob to hex before dropping it.
void elideLargeConstants(mlir::ModuleOp module, int64_t limit) {
  auto &manager = mlir::DenseResourceElementsHandle::getManagerInterface(module.getContext());
  module.walk([&](mlir::Operation *op) {
    for (mlir::NamedAttribute named : op->getAttrDictionary()) {
      auto resource = mlir::dyn_cast<mlir::DenseResourceElementsAttr>(named.getValue());
      if (!resource || resource.getNumElements() <= limit)
        continue;
      std::string key = resource.getRawHandle().getKey().str() + "__elided";
      auto handle = manager.insert(key);
      op->setAttr(named.getName(),
                  mlir::DenseResourceElementsAttr::get(resource.getType(), handle));
    }
  });
}

} // namespace

int runCompile(const std::vector<std::string> &args) {
  // EPs name their custom passes; make ours known by name.
  registerOnnxGenericPasses();
  CompileOptions options;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    std::string value;
    if (arg == "-h" || arg == "--help") {
      printCompileHelp();
      return kExitOk;
    }
    if (takeValue(args, i, "-o", value) || takeValue(args, i, "--output", value)) {
      options.output = value;
      continue;
    }
    if (takeValue(args, i, "--emit", value)) {
      options.emit = value;
      continue;
    }
    if (takeValue(args, i, "--elide-constants-above", value)) {
      try {
        size_t used = 0;
        options.elideConstantsAbove = std::stoll(value, &used);
        if (used != value.size())
          throw std::invalid_argument(value);
      } catch (const std::exception &) {
        printError("--elide-constants-above needs an integer, got '" + value + "'");
        return kExitUsage;
      }
      continue;
    }
    if (arg == "--print-locations") {
      options.printLocations = true;
      continue;
    }
    if (takeValue(args, i, "--ep", value)) {
      size_t start = 0;
      while (start <= value.size()) {
        size_t comma = value.find(',', start);
        std::string name =
            value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
        if (name.empty()) {
          printError("--ep needs a comma-separated list of EP names, got '" + value + "'");
          return kExitUsage;
        }
        options.eps.push_back(name);
        if (comma == std::string::npos)
          break;
        start = comma + 1;
      }
      continue;
    }
    if (takeValue(args, i, "--test-ep", value)) {
      options.testEps.push_back(value);
      continue;
    }
    if (arg == "--report" || arg == "--report=text" || arg == "--report=json") {
      options.report = arg == "--report=json" ? "json" : "text";
      continue;
    }
    if (arg.compare(0, 9, "--report=") == 0) {
      printError("--report takes text or json, got '" + arg.substr(9) + "'");
      return kExitUsage;
    }
    if (arg == "--allow-unclaimed") {
      options.allowUnclaimed = true;
      continue;
    }
    for (const PlannedOption &option : kPlannedOptions) {
      if (!matches(arg, option.name))
        continue;
      printError(std::string("option ") + option.name + " is not available yet (it arrives with " +
                 option.arrivesWith + ")");
      return kExitUsage;
    }
    if (!arg.empty() && arg[0] == '-') {
      printError("unknown option '" + arg + "' for 'ortc compile' (try 'ortc compile --help')");
      return kExitUsage;
    }
    if (!options.input.empty()) {
      printError("more than one input model: '" + options.input + "' and '" + arg + "'");
      return kExitUsage;
    }
    options.input = arg;
  }
  if (options.input.empty()) {
    printError("no input model (usage: ortc compile MODEL.onnx [options])");
    return kExitUsage;
  }
  if (options.emit == "epcontext") {
    printError("--emit=" + options.emit + (options.emit == "epcontext" ? " (the default)" : "") +
               " is not available yet; this build can --emit=onnx-mlir, optimized-mlir or "
               "partitioned-mlir");
    return kExitUsage;
  }
  bool partition = options.emit == "partitioned-mlir";
  if (!partition && (!options.report.empty() || options.allowUnclaimed || !options.eps.empty() ||
                     !options.testEps.empty())) {
    printError("--ep, --test-ep, --report and --allow-unclaimed need --emit=partitioned-mlir");
    return kExitUsage;
  }
  // Resolve the EPs before the (possibly long) import.
  std::vector<std::unique_ptr<CompileEp>> eps;
  for (const std::string &name : options.eps) {
    std::string error;
    auto ep = createCompileEp(name, error);
    if (!ep) {
      printError("--ep: " + error);
      return kExitUsage;
    }
    eps.push_back(std::move(ep));
  }
  for (const std::string &spec : options.testEps) {
    std::string error;
    auto ep = SpecEp::parse(spec, error);
    if (!ep) {
      printError("--test-ep: " + error);
      return kExitUsage;
    }
    eps.push_back(std::move(ep));
  }
  if (partition && eps.empty()) {
    printError("--emit=partitioned-mlir needs at least one EP (--ep=...)");
    return kExitUsage;
  }
  if (options.emit != "onnx-mlir" && options.emit != "optimized-mlir" && !partition) {
    printError("unknown --emit kind '" + options.emit +
               "' (onnx-mlir, optimized-mlir, partitioned-mlir, epcontext)");
    return kExitUsage;
  }

  mlir::MLIRContext context;
  context.disableMultithreading(); // import is serial; spare the thread pool
  std::string error;
  auto module = importOnnxModelFile(context, options.input, error);
  if (!module) {
    printError(error);
    return kExitFailed;
  }

  // Pass diagnostics carry the node's location; report the first as one line.
  std::string firstError;
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error && firstError.empty()) {
      std::string where;
      if (auto name = mlir::dyn_cast<mlir::NameLoc>(diag.getLocation()))
        where = "node '" + name.getName().str() + "': ";
      firstError = options.input + ": " + where + diag.str();
    }
    return mlir::success();
  });
  if (options.emit != "onnx-mlir") {
    mlir::PassManager pm(&context);
    buildGenericOnnxPipeline(pm);
    if (mlir::failed(pm.run(*module))) {
      printError(firstError.empty() ? options.input + ": the generic passes failed" : firstError);
      return kExitFailed;
    }
  }
  if (partition) {
    std::vector<CompileEp *> epList;
    for (auto &ep : eps)
      epList.push_back(ep.get());
    PartitionOptions partitionOptions;
    partitionOptions.allowUnclaimed = options.allowUnclaimed;
    PartitionReport report;
    bool ok = mlir::succeeded(partitionModule(*module, epList, partitionOptions, report));
    // A refusal shows the whole decline table, whatever --report says.
    if (options.report == "json")
      std::cerr << report.formatJson() << "\n";
    else if (!options.report.empty() || !ok)
      std::cerr << report.formatText();
    if (!ok) {
      printError(firstError.empty() ? options.input + ": partitioning failed" : firstError);
      return kExitFailed;
    }
    if (mlir::failed(runEpCustomPasses(*module, epList))) {
      printError(firstError.empty() ? options.input + ": an EP's passes failed" : firstError);
      return kExitFailed;
    }
  }

  mlir::OpPrintingFlags flags;
  if (options.elideConstantsAbove >= 0)
    elideLargeConstants(*module, options.elideConstantsAbove);
  if (options.printLocations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, flags);
  os.flush();
  if (options.output.empty() || options.output == "-") {
    std::cout << text;
    std::cout.flush();
    return std::cout ? kExitOk : kExitFailed;
  }
  return writeFileAtomically(options.output, text) ? kExitOk : kExitFailed;
}

} // namespace ortc::cli
