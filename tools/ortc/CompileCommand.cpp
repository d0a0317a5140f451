//===- CompileCommand.cpp - `ortc compile` --------------------------------===//

#include "tools/ortc/Commands.h"

#include "compiler/EP/AvailableEps.h"
#include "compiler/EP/KernelMatch.h"
#include "compiler/EPContext/EpContextWriter.h"
#include "compiler/Import/OnnxImporter.h"
#include "compiler/Partition/Partitioner.h"
#include "compiler/Partition/SpecEp.h"
#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Pass/PassManager.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
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
  std::string embed; // "", "--embed" or "--no-embed"
  std::string cpu = "host";
};

// Options of `ortc run` and `ortc bench` given to compile by mistake: say
// where they belong rather than "unknown option".
constexpr const char *kRunOptions[] = {"--threads", "--input", "--batch"};

} // namespace

void printCompileHelp() {
  std::cout <<
      R"(Usage: ortc compile MODEL.onnx [options]

Imports MODEL.onnx (inline or external weights), runs the compiler pipeline
and writes the result.

Options:
  -o, --output PATH     Where to write. Default: stdout for the MLIR kinds,
                        MODEL_ctx.onnx beside the input for --emit=epcontext.
                        Files are written whole or not at all: a failed
                        compile leaves no model, sidecar or temporary file.
  --emit=KIND           What to produce:
                          onnx-mlir        the imported IR in the onnx dialect
                          optimized-mlir   after the generic passes (canonicalize,
                                           shape inference, constant folding,
                                           fusions, dead-code elimination)
                          partitioned-mlir after partitioning over --ep: one
                                           function per partition
                          epcontext        the default: an ONNX model with one
                                           com.microsoft::EPContext node per
                                           partition, each EP's compiled blob
                                           inline or in a sidecar file
  --elide-constants-above=N
                        In MLIR output, print constants of more than N
                        elements (default 4096) as dense_resource<NAME__elided>
                        without their bytes, which are then not even read
                        from disk. -1 prints every constant in full.
  --print-locations     Print locations: each op's is its ONNX node name.
  --ep=LIST             EPs in priority order, e.g. cuda,cpu. Default: every
                        EP this build has (today: cpu, alias cpu_ep).
  --test-ep=SPEC        For testing: an EP described by SPEC, e.g.
                        gpu_ep@cuda:MatMul=100:*=4000 (op costs in ns; see
                        compiler/Partition/SpecEp.h). Repeat for more EPs; they
                        come after --ep in priority. Its "blob" is the
                        partition's IR; :!compile makes it fail.
  --report[=text|json]  Print the placements, partitions and decline reasons
                        to stderr (needs --emit=partitioned-mlir or epcontext);
                        with epcontext, also what each EP compiled: for the
                        CPU EP the memory plan's arena bytes (per batch item
                        and fixed), kernels, weights and code size.
  --allow-unclaimed     Keep nodes no EP supports as plain ONNX nodes instead
                        of stopping with the decline table (partitioned-mlir
                        only: an EPContext model cannot hold them).
  --embed, --no-embed   --emit=epcontext: blobs inline in the model (refused
                        over 2 GB in all) or each in a sidecar file beside
                        it, OUT_<ep>.bin, then OUT_<ep>_1.bin, ... (OUT: the
                        output's name without .onnx). Default: inline unless
                        the blobs total over 64 MiB.
  --cpu=NAME            The CPU EP's target: host (default: this machine's
                        CPU and features), x86-64, x86-64-v2, x86-64-v3,
                        x86-64-v4, or an LLVM CPU name such as znver3. The
                        blob records the CPU features its code needs; the
                        runtime refuses it on a CPU without them.
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

// The default output of --emit=epcontext: MODEL_ctx.onnx beside MODEL.onnx.
std::string defaultContextPath(const std::string &input) {
  std::string stem = input;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".onnx") == 0)
    stem.resize(stem.size() - 5);
  return stem + "_ctx.onnx";
}

// Compiles every partition with the EP that owns it, in call order, and
// writes the EPContext model. `firstError` holds the first diagnostic.
int emitEpContext(mlir::ModuleOp module, llvm::ArrayRef<CompileEp *> eps,
                  const CompileOptions &options, const std::string &firstError) {
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main_graph");
  std::vector<std::pair<mlir::func::FuncOp, CompileEp *>> partitions;
  for (auto call : main.getBody().front().getOps<mlir::func::CallOp>()) {
    auto fn = module.lookupSymbol<mlir::func::FuncOp>(call.getCalleeAttr());
    auto tag = fn ? fn->getAttrOfType<mlir::StringAttr>("ortc.ep") : mlir::StringAttr();
    if (!tag)
      continue; // the writer names it
    auto owner = llvm::find_if(eps, [&](CompileEp *ep) { return ep->name() == tag.getValue(); });
    if (owner == eps.end()) {
      printError(options.input + ": partition '" + fn.getSymName().str() + "' is tagged for EP '" +
                 tag.str() + "', which is not among the selected EPs");
      return kExitFailed;
    }
    partitions.push_back({fn, *owner});
  }
  EpContextBlobs blobs;
  struct CompiledLine {
    std::string partition, ep, notes;
  };
  std::vector<CompiledLine> compiledLines;
  for (auto [fn, ep] : partitions) {
    std::string name = fn.getSymName().str();
    auto failedTo = [&](const std::string &what) {
      printError(firstError.empty()
                     ? options.input + ": " + ep->name() + " " + what + " partition '" + name + "'"
                     : firstError);
      return kExitFailed;
    };
    auto compiled = ep->compilePartition(fn);
    if (mlir::failed(compiled) || !*compiled)
      return failedTo("could not compile");
    auto blob = ep->saveContext(**compiled);
    if (mlir::failed(blob))
      return failedTo("could not save the context of");
    // The runtime finds the EP by the blob's source key, so it must be one
    // the EP declares.
    std::vector<std::string> keys = ep->contextSourceKeys();
    if (blob->source.empty() ||
        (!keys.empty() && std::find(keys.begin(), keys.end(), blob->source) == keys.end())) {
      printError(options.input + ": " + ep->name() + " saved partition '" + name +
                 "' with source key '" + blob->source +
                 "', which is not one of its context "
                 "source keys");
      return kExitFailed;
    }
    if (!options.report.empty())
      compiledLines.push_back({name, ep->name(), blob->notes});
    blobs[name] = std::move(*blob);
  }
  // --report: what each EP made of its partitions (the CPU EP: the memory
  // plan's peak bytes, kernels, weights, code).
  if (options.report == "json") {
    std::string json = "{\"compiled\": [";
    for (size_t i = 0; i < compiledLines.size(); ++i)
      json += std::string(i ? ", " : "") + "{\"partition\": \"" +
              jsonEscape(compiledLines[i].partition) + "\", \"ep\": \"" +
              jsonEscape(compiledLines[i].ep) + "\", \"notes\": \"" +
              jsonEscape(compiledLines[i].notes) + "\"}";
    std::cerr << json << "]}\n";
  } else if (!options.report.empty()) {
    for (const CompiledLine &line : compiledLines)
      std::cerr << "compiled " << line.partition << " (" << line.ep << "): " << line.notes << "\n";
  }

  EpContextWriteOptions writeOptions;
  writeOptions.sourcePath = options.input;
  if (options.embed == "--embed")
    writeOptions.embed = EmbedPolicy::Embed;
  else if (options.embed == "--no-embed")
    writeOptions.embed = EmbedPolicy::Sidecar;
  std::string output = options.output.empty() ? defaultContextPath(options.input) : options.output;
  std::string error;
  if (!writeEpContextModel(module, blobs, output, writeOptions, error)) {
    printError(error);
    return kExitFailed;
  }
  return kExitOk;
}

} // namespace

int runCompile(const std::vector<std::string> &args) {
  // EPs name their custom passes; make ours known by name.
  registerOnnxGenericPasses();
  CompileOptions options;
  bool emitGiven = false;
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
      emitGiven = true;
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
    if (takeValue(args, i, "--cpu", value)) {
      options.cpu = value;
      continue;
    }
    if (arg == "--embed" || arg == "--no-embed") {
      if (!options.embed.empty() && options.embed != arg) {
        printError("--embed and --no-embed contradict each other");
        return kExitUsage;
      }
      options.embed = arg;
      continue;
    }
    for (const char *option : kRunOptions) {
      if (!matches(arg, option))
        continue;
      printError(std::string("option ") + option +
                 " is for 'ortc run' and 'ortc bench', not 'ortc compile'");
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
  bool epContext = options.emit == "epcontext";
  bool partition = options.emit == "partitioned-mlir" || epContext;
  if (options.emit != "onnx-mlir" && options.emit != "optimized-mlir" && !partition) {
    printError("unknown --emit kind '" + options.emit +
               "' (onnx-mlir, optimized-mlir, partitioned-mlir, epcontext)");
    return kExitUsage;
  }
  std::string emitText =
      "--emit=" + options.emit + (epContext && !emitGiven ? " (the default)" : "");
  if (!partition && (!options.report.empty() || options.allowUnclaimed || !options.eps.empty() ||
                     !options.testEps.empty())) {
    printError("--ep, --test-ep, --report and --allow-unclaimed need --emit=partitioned-mlir "
               "or epcontext");
    return kExitUsage;
  }
  if (!epContext && !options.embed.empty()) {
    printError(options.embed + " needs --emit=epcontext");
    return kExitUsage;
  }
  if (epContext && options.output == "-") {
    printError(emitText + " writes a model and its sidecar files; it cannot go to stdout (-o -)");
    return kExitUsage;
  }
  // Resolve the EPs before the (possibly long) import.
  std::vector<std::unique_ptr<CompileEp>> eps;
  EpOptions epOptions;
  epOptions.cpu = options.cpu;
  // No --ep and no --test-ep: every EP this build has.
  if (partition && options.eps.empty() && options.testEps.empty())
    options.eps = availableCompileEps();
  for (const std::string &name : options.eps) {
    std::string error;
    auto ep = createCompileEp(name, epOptions, error);
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
    printError(emitText + " needs at least one EP (--ep=...)");
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
  std::vector<CompileEp *> epList;
  for (auto &ep : eps)
    epList.push_back(ep.get());
  if (partition) {
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
  if (epContext)
    return emitEpContext(*module, epList, options, firstError);

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
