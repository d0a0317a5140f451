//===- CompileCommand.cpp - `ortc compile` --------------------------------===//
//
// Parses the command line into DriverOptions, runs the compile driver
// (compiler/Driver), and prints: errors as one line, the text report on
// stderr, the JSON report on stdout or into --report-file, the progress line.
//
//===----------------------------------------------------------------------===//

#include "tools/ortc/Commands.h"

#include "tools/ortc/CliUtil.h"
#include "tools/ortc/CompileProgressLine.h"

#include "compiler/Driver/CompileReport.h"
#include "compiler/Driver/Driver.h"
#include "compiler/EP/CompileEpRegistry.h"
#include "compiler/Transforms/Passes.h"

#include <cstdio>
#include <iostream>
#include <memory>
#include <optional>
#include <unistd.h>

namespace ortc::cli {

namespace {

struct CompileCommandOptions {
  DriverOptions driver;
  std::string report;     // "", "text" or "json"
  std::string reportFile; // the JSON report's file, or "" for stdout
  std::string cpuAlias;   // --cpu=NAME, the same as --ep-option cpu:target=NAME
  std::string embed;      // "", "--embed" or "--no-embed"
  bool quiet = false, progress = false;
};

// The EPs of the build and their options, from the registry.
std::string epHelp() {
  std::string text;
  for (const CompileEpPlugin &plugin : builtinCompileEps().plugins()) {
    std::string name = plugin.name;
    for (const std::string &alias : plugin.aliases)
      name += ", " + alias;
    text += "  " + name + ": " + plugin.summary + "\n";
    std::string shortName = plugin.aliases.empty() ? plugin.name : plugin.aliases.front();
    text += plugin.options.empty() ? "    no options\n"
                                   : formatEpOptionsHelp(shortName, plugin.options, "    ");
  }
  return text.empty() ? "  (this build has no EPs)\n" : text;
}

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
                        A folder that is missing or cannot be written is
                        refused before any work.
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
                        EP this build has (listed below) but the device EPs
                        (cuda), which run only where --ep names them.
  --ep-option EP:KEY=VALUE
                        An option of one EP (listed below), e.g.
                        cpu:target=x86-64-v3. Repeat for more. An unknown EP
                        or key, or a value the EP refuses, stops with one
                        line that says what it accepts.
  --cpu=NAME            The same as --ep-option cpu:target=NAME.
  --test-ep=SPEC        For testing: an EP described by SPEC, e.g.
                        gpu_ep@cuda:MatMul=100:*=4000 (op costs in ns; see
                        compiler/Partition/SpecEp.h). Repeat for more EPs; they
                        come after --ep in priority. Its "blob" is the
                        partition's IR; :!compile makes it fail.
  --report[=text|json]  text (the default): the placements, partitions,
                        decline reasons, what each EP compiled (the CPU EP:
                        arena bytes (or "planned at run time"), kernels,
                        weights, code size) and each stage's wall time, on
                        stderr. json: the same as one JSON document (fields
                        in docs/compile-report.md) on stdout, or in
                        --report-file. Needs --emit=partitioned-mlir or
                        epcontext for the placements.
  --report-file=PATH    Write the JSON report to PATH (implies --report=json
                        unless --report=text is given, which then goes to
                        stderr as well). Written on failure too.
  --allow-unclaimed     Keep nodes no EP supports as plain ONNX nodes instead
                        of stopping with the decline table (partitioned-mlir
                        only: an EPContext model cannot hold them).
  --strict-shapes       Take declared types as written: a negative
                        dim_value and a declared shape or element type that
                        contradicts what the graph computes are errors. By
                        default, as in onnxruntime, -1 is a dynamic dim and
                        the computed type wins (a graph output's element
                        type excepted), each with a warning on stderr.
  --max-tensor-bytes=N  The largest tensor of a static shape the model may
                        have, in bytes (default 17179869184, 16 GiB); a
                        larger one is refused, naming its node. The runtime
                        holds runs to the same default (its CPU EP option
                        max_tensor_bytes).
  --embed, --no-embed   --emit=epcontext: blobs inline in the model (refused
                        over 2 GB in all) or each in a sidecar file beside
                        it, OUT_<ep>.bin, then OUT_<ep>_1.bin, ... (OUT: the
                        output's name without .onnx). Default: inline unless
                        the blobs total over 1 MiB (a sidecar is mapped and
                        used in place at load; inline bytes are copied).
  --progress            Show the stage, partition and kernels done, also
                        when stderr is not a terminal (one line per change).
  --quiet               No progress line. By default a terminal shows one
                        once a compile runs for over a second.
  -h, --help            Show this help.

EPs of this build and their options (--ep-option EP:KEY=VALUE):
)" << epHelp()
            << R"(
Errors are one line naming the file and the node, initializer or value, with
exit status 1; command-line errors and options not available yet exit with 2.
)";
}

namespace {

// nullopt to go on, else the exit status (help, or a bad command line).
std::optional<int> parseCompileOptions(const std::vector<std::string> &args,
                                       CompileCommandOptions &options) {
  DriverOptions &driver = options.driver;
  OptionParser parser("compile", printCompileHelp);
  parser.value(std::vector<std::string>{"-o", "--output"}, [&](const std::string &value) {
    driver.output = value;
    return true;
  });
  parser.value("--emit", [&](const std::string &value) {
    std::optional<EmitKind> kind = parseEmitKind(value);
    if (!kind) {
      printError("unknown --emit kind '" + value +
                 "' (onnx-mlir, optimized-mlir, partitioned-mlir, epcontext)");
      return false;
    }
    driver.emit = *kind;
    return true;
  });
  parser.integer("--elide-constants-above", -1, INT64_MAX, driver.elideConstantsAbove);
  parser.flag("--print-locations", driver.printLocations);
  parser.value("--ep", [&](const std::string &value) {
    size_t start = 0;
    while (true) {
      size_t comma = value.find(',', start);
      std::string name =
          value.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
      if (name.empty()) {
        printError("--ep needs a comma-separated list of EP names, got '" + value + "'");
        return false;
      }
      driver.eps.push_back(name);
      if (comma == std::string::npos)
        return true;
      start = comma + 1;
    }
  });
  parser.value("--ep-option", [&](const std::string &value) {
    Status parsed = parseEpOptionArgument(value, driver.epOptions);
    if (!parsed.isOk())
      printError(parsed.message());
    return parsed.isOk();
  });
  parser.value("--cpu", options.cpuAlias);
  parser.value("--test-ep", [&](const std::string &value) {
    driver.testEps.push_back(value);
    return true;
  });
  parser.optionalValue("--report", [&](const std::string &value) {
    if (!value.empty() && value != "text" && value != "json") {
      printError("--report takes text or json, got '" + value + "'");
      return false;
    }
    options.report = value.empty() ? "text" : value;
    return true;
  });
  parser.value("--report-file", options.reportFile);
  parser.flag("--allow-unclaimed", driver.allowUnclaimed);
  parser.flag("--strict-shapes", driver.strictShapes);
  parser.integer("--max-tensor-bytes", 1, INT64_MAX, driver.maxTensorBytes);
  for (const char *embed : {"--embed", "--no-embed"})
    parser.flag(embed, [&options, embed] {
      if (!options.embed.empty() && options.embed != embed) {
        printError("--embed and --no-embed contradict each other");
        return false;
      }
      options.embed = embed;
      return true;
    });
  parser.flag("--progress", options.progress);
  parser.flag("--quiet", options.quiet);
  // Options of `ortc run` and `ortc bench` given to compile by mistake: say
  // where they belong rather than "unknown option".
  parser.elsewhere({"--threads", "--input", "--batch"}, "'ortc run' and 'ortc bench'");
  parser.model(driver.input);
  if (std::optional<int> exit = parser.parse(args))
    return exit;

  // The options together.
  bool epContext = driver.emit == EmitKind::EpContext;
  bool partition = partitions(driver.emit);
  if (!options.cpuAlias.empty()) {
    const CompileEpPlugin *cpu = builtinCompileEps().find("cpu");
    std::string key = cpu ? cpu->name : "cpu";
    for (const auto &[name, map] : driver.epOptions)
      if (builtinCompileEps().find(name) == cpu && map.count("target")) {
        printError("--cpu and --ep-option " + name + ":target both set the CPU target");
        return kExitUsage;
      }
    driver.epOptions["cpu"]["target"] = options.cpuAlias;
  }
  if (!options.reportFile.empty() && options.report.empty())
    options.report = "json";
  if (!partition && !options.report.empty()) {
    printError("--report needs --emit=partitioned-mlir or epcontext");
    return kExitUsage;
  }
  if (!epContext && !options.embed.empty()) {
    printError(options.embed + " needs --emit=epcontext");
    return kExitUsage;
  }
  driver.embed = options.embed == "--embed"      ? EmbedPolicy::Embed
                 : options.embed == "--no-embed" ? EmbedPolicy::Sidecar
                                                 : EmbedPolicy::Auto;
  bool textToStdout = !epContext && (driver.output.empty() || driver.output == "-");
  if (options.report == "json" && options.reportFile.empty() && textToStdout) {
    printError("--report=json goes to stdout, which the MLIR output uses: give -o PATH or "
               "--report-file=PATH");
    return kExitUsage;
  }
  if (options.progress && options.quiet) {
    printError("--progress and --quiet contradict each other");
    return kExitUsage;
  }
  return std::nullopt;
}

} // namespace

int runCompile(const std::vector<std::string> &args) {
  CompileCommandOptions options;
  if (std::optional<int> exit = parseCompileOptions(args, options))
    return *exit;
  if (!options.reportFile.empty()) {
    std::string error;
    if (!checkOutputPath(options.reportFile, "report", error)) {
      printError(error);
      return kExitFailed;
    }
  }
  // EPs name their custom passes (--test-ep's +<pass>); make ours known.
  registerOnnxGenericPasses();

  std::unique_ptr<CompileProgressLine> progress;
  if (options.progress)
    progress = std::make_unique<CompileProgressLine>(
        ::isatty(2) ? CompileProgressLine::Mode::Terminal : CompileProgressLine::Mode::Lines);
  else if (!options.quiet && ::isatty(2))
    progress = std::make_unique<CompileProgressLine>(CompileProgressLine::Mode::Terminal);
  options.driver.progress = progress.get();

  DriverResult result = compileModel(builtinCompileEps(), options.driver);
  if (progress)
    progress->finish();
  for (const std::string &warning : result.warnings)
    printError("warning: " + warning);

  // A refusal shows the whole decline table, whatever --report says.
  bool declined = result.failedStage == "partition";
  if (options.report == "text" || (declined && options.report.empty()))
    std::cerr << formatCompileReportText(result);
  bool reportOk = true;
  if (options.report == "json" || !options.reportFile.empty()) {
    std::string json = formatCompileReportJson(options.driver, result, kOrtcVersion);
    if (options.reportFile.empty())
      std::cout << json << "\n" << std::flush;
    else if (std::string error; !writeFileAtomically(options.reportFile, json + "\n", error)) {
      printError(error);
      reportOk = false;
    }
  }
  if (!result.ok()) {
    printError(result.error);
    return result.outcome == DriverResult::Outcome::Usage ? kExitUsage : kExitFailed;
  }
  if (result.outputPath.empty()) {
    std::cout << result.text;
    std::cout.flush();
    if (!std::cout)
      return kExitFailed;
  }
  return reportOk ? kExitOk : kExitFailed;
}

} // namespace ortc::cli
