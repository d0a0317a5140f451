//===- RunCommand.cpp - ortc run ------------------------------------------===//
//
//   ortc run model_ctx.onnx [--input NAME=FILE ...] [--output-dir DIR]
//
// Loads the EPContext model with the runtime (no compiler involved), runs it
// once on .npy or TensorProto inputs (or random ones), writes each graph
// output to DIR, and prints a line per output.
//
//===----------------------------------------------------------------------===//

#include "tools/ortc/Commands.h"
#include "tools/ortc/TensorIo.h"

#include <filesystem>
#include <iostream>
#include <optional>

namespace ortc::cli {

void printRunHelp() {
  std::cout << R"(Usage: ortc run MODEL_ctx.onnx [--input NAME=FILE ...] [options]

Runs a model compiled by `ortc compile` with the ortc runtime: every EPContext
node's blob is loaded by the EP that wrote it; nothing is recompiled. Prints
each output's dtype, shape, file and min/max/mean.

Options:
)" << kInputOptionsHelp
            << runtimeEpOptionsHelp()
            << R"(  --output-dir DIR      Where to write each output as DIR/<name>.npy or .pb
                        (default: the current directory; created if missing).
  --output-format npy|pb
                        The outputs' format. Default: pb when every input is
                        a .pb file, else npy. A sequence or optional output
                        is a SequenceProto or OptionalProto .pb (pb only).
  -h, --help            Show this help.

Exit status: 0 on success, 1 when the model or an input is refused or a run
fails (the message names the file, node or input), 2 for a bad command line.
)";
}

namespace {

struct RunOptions {
  std::string model;
  std::string outputDir = ".";
  std::string outputFormat; // "", "npy" or "pb"
  InputOptions inputs;
};

// nullopt to go on, else the exit status (help, or a bad command line).
std::optional<int> parseRunOptions(const std::vector<std::string> &args, RunOptions &options) {
  OptionParser parser("run", printRunHelp);
  addInputOptions(parser, options.inputs);
  addOutputOptions(parser, options.outputDir, options.outputFormat);
  parser.elsewhere({"--runs", "--warmup", "--json"}, "'ortc bench'");
  parser.model(options.model);
  return parseWithInputOptions(parser, args, options.inputs);
}

} // namespace

int runRun(const std::vector<std::string> &args) {
  RunOptions options;
  if (std::optional<int> exit = parseRunOptions(args, options))
    return *exit;

  Result<std::unique_ptr<Session>> session = loadSession(options.model, options.inputs);
  if (!session.isOk()) {
    printError(session.status().message());
    return kExitFailed;
  }
  const Session &s = *session.value();
  Result<ModelInputs> inputs = prepareInputs(options.model, s.inputs(), options.inputs);
  if (!inputs.isOk()) {
    printError(inputs.status().message());
    return kExitFailed;
  }
  if (inputs.value().random)
    printRandomInputs(std::cout, s.inputs(), inputs.value(), options.inputs);

  std::vector<RunOutput> outputs(s.outputs().size());
  for (size_t i = 0; i < outputs.size(); ++i)
    outputs[i].index = i;
  if (Status ran = s.run(inputs.value().views(), outputs); !ran.isOk()) {
    printError(ran.message());
    return kExitFailed;
  }

  if (Status printed =
          printOutputs(std::cout, s.outputs(), outputs, options.outputDir,
                       outputFormatFor(options.outputFormat, inputs.value().allPb));
      !printed.isOk()) {
    printError(printed.message());
    return kExitFailed;
  }
  return kExitOk;
}

} // namespace ortc::cli
