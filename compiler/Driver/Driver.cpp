//===- Driver.cpp - the compile driver -------------------------------------===//

#include "compiler/Driver/Driver.h"

#include "compiler/EP/CompileEpRegistry.h"
#include "compiler/EP/PassContext.h"
#include "compiler/Import/OnnxImporter.h"
#include "compiler/Partition/Passes.h"
#include "compiler/Partition/SpecEp.h"
#include "compiler/Transforms/Passes.h"
#include "compiler/Transforms/ShapeRules/ShapeRules.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/IR/OperationSupport.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "llvm/Support/raw_ostream.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fcntl.h>
#include <memory>
#include <unistd.h>

namespace ortc {

namespace {

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

constexpr struct {
  EmitKind kind;
  const char *name;
} kEmitKinds[] = {{EmitKind::OnnxMlir, "onnx-mlir"},
                  {EmitKind::OptimizedMlir, "optimized-mlir"},
                  {EmitKind::PartitionedMlir, "partitioned-mlir"},
                  {EmitKind::EpContext, "epcontext"}};

// One stage: its timing goes into the result, its name to the progress sink.
class StageClock {
public:
  StageClock(DriverResult &result, CompileProgress *progress)
      : result(result), progress(progress) {}
  void begin(const std::string &name) {
    end();
    current = name;
    start = Clock::now();
    if (progress)
      progress->stage(name);
  }
  void end() {
    if (current.empty())
      return;
    result.stages.push_back({current, millisecondsSince(start)});
    current.clear();
  }
  const std::string &name() const { return current; }

private:
  DriverResult &result;
  CompileProgress *progress;
  std::string current;
  Clock::time_point start;
};

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

// The ONNX node a diagnostic's location names: a NameLoc, or the first one
// inside a fused location (an op that replaced several nodes).
std::optional<std::string> nodeNameOf(mlir::Location loc) {
  std::optional<std::string> name;
  loc->walk([&](mlir::Location inner) {
    if (auto named = mlir::dyn_cast<mlir::NameLoc>(inner)) {
      name = named.getName().str();
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return name;
}

// The driver's state for one compile.
class Compilation {
public:
  Compilation(const CompileEpRegistry &registry, const DriverOptions &options, DriverResult &result)
      : registry(registry), options(options), result(result), clock(result, options.progress) {}

  void run();

private:
  bool fail(DriverResult::Outcome outcome, const std::string &message) {
    result.outcome = outcome;
    result.error = message;
    result.failedStage = clock.name();
    clock.end();
    return false;
  }
  bool usage(const std::string &message) { return fail(DriverResult::Outcome::Usage, message); }
  bool failed(const std::string &fallback) {
    return fail(DriverResult::Outcome::Failed, firstError.empty() ? fallback : firstError);
  }

  bool createEps();
  bool compileAndWrite(mlir::ModuleOp module);
  bool printModule(mlir::ModuleOp module);

  const CompileEpRegistry &registry;
  const DriverOptions &options;
  DriverResult &result;
  StageClock clock;
  std::vector<std::unique_ptr<CompileEp>> eps;
  std::string firstError; // the first error diagnostic, as one line
};

bool Compilation::createEps() {
  if (!partitions(options.emit)) {
    if (!options.eps.empty() || !options.testEps.empty() || !options.epOptions.empty() ||
        options.allowUnclaimed)
      return usage("--ep, --ep-option, --test-ep and --allow-unclaimed need "
                   "--emit=partitioned-mlir or epcontext");
    return true;
  }
  std::vector<std::string> names = options.eps;
  if (names.empty() && options.testEps.empty())
    names = registry.defaultNames();
  // Options must belong to a selected EP: anything else is a typo.
  for (const auto &[name, map] : options.epOptions) {
    const CompileEpPlugin *plugin = registry.find(name);
    if (!plugin)
      return usage("--ep-option: no EP named '" + name +
                   "' in this build (available: " + registry.describe() + ")");
    bool selected = std::any_of(names.begin(), names.end(),
                                [&](const std::string &n) { return registry.find(n) == plugin; });
    if (!selected)
      return usage("--ep-option: options for " + plugin->name +
                   ", which is not among the selected EPs (--ep)");
  }
  for (const std::string &name : names) {
    const CompileEpPlugin *plugin = registry.find(name);
    EpOptionMap epOptions;
    for (const auto &[given, map] : options.epOptions) {
      if (!plugin || registry.find(given) != plugin)
        continue;
      for (const auto &[key, value] : map)
        if (!epOptions.emplace(key, value).second)
          return usage("--ep-option: " + plugin->name + ": option " + key +
                       " is given under two of its names");
    }
    std::string error;
    std::unique_ptr<CompileEp> ep = registry.create(name, epOptions, error);
    if (!ep)
      return usage((options.epOptions.empty() ? "--ep: " : "--ep-option: ") + error);
    bool twice = std::any_of(eps.begin(), eps.end(),
                             [&](const auto &other) { return other->name() == ep->name(); });
    if (twice)
      return usage("--ep: " + ep->name() + " is listed twice");
    result.eps.push_back({ep->name(), epOptions, false});
    eps.push_back(std::move(ep));
  }
  for (const std::string &spec : options.testEps) {
    std::string error;
    std::unique_ptr<SpecEp> ep = SpecEp::parse(spec, error);
    if (!ep)
      return usage("--test-ep: " + error);
    result.eps.push_back({ep->name(), {}, true});
    eps.push_back(std::move(ep));
  }
  if (eps.empty())
    return usage(std::string("--emit=") + emitKindName(options.emit) +
                 " needs at least one EP, and this build has none (ortc is configured with an "
                 "ORTC_ENABLE_<EP> option per EP)");
  return true;
}

void Compilation::run() {
  // Everything that can be refused without reading the model is refused first.
  if (!createEps())
    return;
  bool toText =
      options.emit != EmitKind::EpContext && (options.output.empty() || options.output == "-");
  if (options.emit == EmitKind::EpContext && options.output == "-") {
    usage("--emit=epcontext writes a model and its sidecar files; it cannot go to stdout (-o -)");
    return;
  }
  if (!toText) {
    result.outputPath = options.output.empty() ? defaultContextPath(options.input) : options.output;
    std::string error;
    if (!checkOutputPath(result.outputPath, "output", error)) {
      fail(DriverResult::Outcome::Failed, error);
      return;
    }
  }

  mlir::DialectRegistry registry;
  registerShapeRules(registry); // each op's ShapeInferenceOpInterface
  mlir::MLIRContext context(registry);
  context.disableMultithreading(); // import is serial; spare the thread pool
  // Pass diagnostics carry the node's location; report the first as one line.
  mlir::ScopedDiagnosticHandler handler(&context, [&](mlir::Diagnostic &diag) {
    std::string where;
    if (std::optional<std::string> node = nodeNameOf(diag.getLocation()))
      where = "node '" + *node + "': ";
    // Invalid IR is a compiler bug: say which pass made it.
    if (llvm::StringRef pass = passBeingVerified(); !pass.empty())
      where += "invalid IR after pass " + pass.str() + " (a compiler bug): ";
    std::string line = options.input + ": " + where + diag.str();
    if (diag.getSeverity() == mlir::DiagnosticSeverity::Error && firstError.empty())
      firstError = line;
    else if (diag.getSeverity() == mlir::DiagnosticSeverity::Warning)
      result.warnings.push_back(line);
    return mlir::success();
  });

  clock.begin("import");
  std::string error;
  ImportOptions importOptions;
  importOptions.strictShapes = options.strictShapes;
  mlir::OwningOpRef<mlir::ModuleOp> module =
      importOnnxModelFile(context, options.input, error, importOptions);
  if (!module) {
    fail(DriverResult::Outcome::Failed, error);
    return;
  }
  if (options.emit != EmitKind::OnnxMlir) {
    clock.begin("generic-passes");
    mlir::PassManager pm(&context);
    preparePassManager(pm);
    GenericPipelineOptions pipelineOptions;
    pipelineOptions.strictShapes = options.strictShapes;
    pipelineOptions.maxTensorBytes = options.maxTensorBytes;
    buildGenericOnnxPipeline(pm, pipelineOptions);
    if (mlir::failed(pm.run(*module))) {
      failed(options.input + ": the generic passes failed");
      return;
    }
  }
  std::vector<CompileEp *> epList;
  for (auto &ep : eps)
    epList.push_back(ep.get());
  if (partitions(options.emit)) {
    clock.begin("partition");
    PartitionOptions partitionOptions;
    partitionOptions.allowUnclaimed = options.allowUnclaimed;
    bool ok =
        mlir::succeeded(partitionModule(*module, epList, partitionOptions, result.partitions));
    result.partitioned = true;
    if (!ok) {
      failed(options.input + ": partitioning failed");
      return;
    }
    clock.begin("ep-passes");
    if (mlir::failed(runEpCustomPasses(*module, epList))) {
      failed(options.input + ": an EP's passes failed");
      return;
    }
  }
  if (options.emit == EmitKind::EpContext)
    compileAndWrite(*module);
  else
    printModule(*module);
  clock.end();
}

bool Compilation::compileAndWrite(mlir::ModuleOp module) {
  clock.begin("codegen");
  auto main = module.lookupSymbol<mlir::func::FuncOp>("main_graph");
  std::vector<std::pair<mlir::func::FuncOp, CompileEp *>> partitions;
  for (auto call : main.getBody().front().getOps<mlir::func::CallOp>()) {
    auto fn = module.lookupSymbol<mlir::func::FuncOp>(call.getCalleeAttr());
    auto tag = fn ? fn->getAttrOfType<mlir::StringAttr>("ortc.ep") : mlir::StringAttr();
    if (!tag)
      continue; // the writer names it
    auto owner = llvm::find_if(eps, [&](const auto &ep) { return ep->name() == tag.getValue(); });
    if (owner == eps.end())
      return fail(DriverResult::Outcome::Failed,
                  options.input + ": partition '" + fn.getSymName().str() + "' is tagged for EP '" +
                      tag.str() + "', which is not among the selected EPs");
    partitions.push_back({fn, owner->get()});
  }
  EpContextBlobs blobs;
  for (size_t i = 0; i < partitions.size(); ++i) {
    auto [fn, ep] = partitions[i];
    std::string name = fn.getSymName().str();
    if (options.progress)
      options.progress->partition(int(i), int(partitions.size()), name, ep->name());
    auto failedTo = [&](const std::string &what) {
      return failed(options.input + ": " + ep->name() + " " + what + " partition '" + name + "'");
    };
    Clock::time_point start = Clock::now();
    ep->setProgress(options.progress);
    auto compiled = ep->compilePartition(fn);
    ep->setProgress(nullptr);
    if (mlir::failed(compiled) || !*compiled)
      return failedTo("could not compile");
    auto blob = ep->saveContext(std::move(**compiled));
    if (mlir::failed(blob))
      return failedTo("could not save the context of");
    // The runtime finds the EP by the blob's source key, so it must be one
    // the EP declares.
    std::vector<std::string> keys = ep->contextSourceKeys();
    if (blob->source.empty() ||
        (!keys.empty() && std::find(keys.begin(), keys.end(), blob->source) == keys.end()))
      return fail(DriverResult::Outcome::Failed,
                  options.input + ": " + ep->name() + " saved partition '" + name +
                      "' with source key '" + blob->source +
                      "', which is not one of its context source keys");
    result.compiled.push_back({name, ep->name(), blob->source, blob->hardwareArchitecture,
                               blob->epSdkVersion, blob->notes, uint64_t(blob->bytes.size()),
                               millisecondsSince(start)});
    blobs[name] = std::move(*blob);
  }

  clock.begin("write");
  EpContextWriteOptions writeOptions;
  writeOptions.sourcePath = options.input;
  writeOptions.embed = options.embed;
  std::string error;
  if (!writeEpContextModel(module, blobs, result.outputPath, writeOptions, error))
    return fail(DriverResult::Outcome::Failed, error);
  return true;
}

bool Compilation::printModule(mlir::ModuleOp module) {
  clock.begin("write");
  mlir::OpPrintingFlags flags;
  if (options.elideConstantsAbove >= 0)
    elideLargeConstants(module, options.elideConstantsAbove);
  if (options.printLocations)
    flags.enableDebugInfo(/*enable=*/true, /*prettyForm=*/false);
  std::string text;
  llvm::raw_string_ostream os(text);
  module->print(os, flags);
  os.flush();
  if (result.outputPath.empty()) {
    result.text = std::move(text);
    return true;
  }
  std::string error;
  if (!writeFileAtomically(result.outputPath, text, error))
    return fail(DriverResult::Outcome::Failed, error);
  return true;
}

} // namespace

std::optional<EmitKind> parseEmitKind(const std::string &name) {
  for (const auto &entry : kEmitKinds)
    if (name == entry.name)
      return entry.kind;
  return std::nullopt;
}

const char *emitKindName(EmitKind kind) {
  for (const auto &entry : kEmitKinds)
    if (kind == entry.kind)
      return entry.name;
  return "?";
}

std::string defaultContextPath(const std::string &input) {
  std::string stem = input;
  if (stem.size() > 5 && stem.compare(stem.size() - 5, 5, ".onnx") == 0)
    stem.resize(stem.size() - 5);
  return stem + "_ctx.onnx";
}

bool writeFileAtomically(const std::string &path, const std::string &text, std::string &error) {
  std::string tmp = path + ".tmp-ortc";
  {
    std::error_code ec;
    llvm::raw_fd_ostream os(tmp, ec, llvm::sys::fs::OF_None);
    if (ec) {
      error = path + ": cannot write: " + ec.message();
      return false;
    }
    os << text;
    os.close();
    if (os.has_error()) {
      error = path + ": write failed: " + os.error().message();
      os.clear_error();
      std::remove(tmp.c_str());
      return false;
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    error = path + ": cannot rename the temporary file into place";
    std::remove(tmp.c_str());
    return false;
  }
  return true;
}

bool checkOutputPath(const std::string &path, const std::string &what, std::string &error) {
  if (llvm::sys::fs::is_directory(path)) {
    error = path + ": the " + what + " path is a directory; name a file in it";
    return false;
  }
  std::string folder = llvm::sys::path::parent_path(path).str();
  if (folder.empty())
    folder = ".";
  if (!llvm::sys::fs::is_directory(folder)) {
    error = path + ": the " + what + " folder '" + folder + "' " +
            (llvm::sys::fs::exists(folder) ? "is not a folder" : "does not exist");
    return false;
  }
  // Root passes every permission check, so try: create and remove a file.
  std::string probe = folder + "/.ortc-probe-XXXXXX";
  int fd = ::mkstemp(probe.data());
  if (fd < 0) {
    error = path + ": cannot write in the " + what + " folder '" + folder + "'";
    return false;
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return true;
}

DriverResult compileModel(const CompileEpRegistry &registry, const DriverOptions &options) {
  DriverResult result;
  Clock::time_point start = Clock::now();
  Compilation(registry, options, result).run();
  result.totalMilliseconds = millisecondsSince(start);
  return result;
}

void registerDriverPipelines() {
  registerOnnxGenericPasses();
  registerOrtcPartitionPasses();
  mlir::PassPipelineRegistration<>(
      "ortc-generic-pipeline",
      "The generic passes of `ortc compile` (--emit=optimized-mlir): canonicalize, shape "
      "inference, constant folding, fusions, dead-code elimination",
      [](mlir::OpPassManager &pm) { buildGenericOnnxPipeline(pm); });
}

} // namespace ortc
