//===- ortc.cpp - the ortc command line -----------------------------------===//
//
//   ortc compile model.onnx [options]       (see `ortc compile --help`)
//   ortc run | inspect | bench model_ctx.onnx [options]
//
//===----------------------------------------------------------------------===//

#include "tools/ortc/Commands.h"

#include "compiler/EP/KernelMatch.h"

#include <cstdio>
#include <cstring>
#include <iostream>

using namespace ortc::cli;

namespace {

void printHelp() {
  std::cout <<
      R"(ortc: an ahead-of-time compiler for ONNX models

Usage: ortc <command> [options]

Commands:
  compile   Compile model.onnx into model_ctx.onnx: one EPContext node per
            partition, each EP's blob inline or in a sidecar file. Or print
            the IR after import, the generic passes or partitioning
            (--emit=onnx-mlir, optimized-mlir, partitioned-mlir).
  run       Run a compiled model (model_ctx.onnx) with the runtime on .npy or
            TensorProto .pb inputs, or random ones; write and summarize the
            outputs.
  inspect   List a compiled model's inputs, outputs, EPContext nodes and
            blobs (sections, checksum) without loading any code.
  bench     Time loading a compiled model, its first run, and the latency
            percentiles over many runs.
  help      Show this help, or `ortc help <command>`; every command also
            takes --help.

Options:
  -h, --help     Show this help.
  --version      Print the version.

Exit status: 0 on success, 1 when a model or input is refused or a run fails
(the message names the file and node), 2 for a bad command line or a feature
that is not available yet.
)";
}

} // namespace

namespace ortc::cli {
std::string jsonString(const std::string &text) { return "\"" + jsonEscape(text) + "\""; }
} // namespace ortc::cli

int main(int argc, char **argv) {
  if (argc < 2) {
    printHelp();
    return kExitUsage;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "-h" || command == "--help") {
    printHelp();
    return kExitOk;
  }
  if (command == "--version") {
    std::cout << "ortc " << kOrtcVersion << "\n";
    return kExitOk;
  }
  struct Command {
    const char *name;
    int (*run)(const std::vector<std::string> &);
    void (*help)();
  };
  static const Command commands[] = {{"compile", runCompile, printCompileHelp},
                                     {"run", runRun, printRunHelp},
                                     {"inspect", runInspect, printInspectHelp},
                                     {"bench", runBench, printBenchHelp}};
  if (command == "help") {
    for (const Command &known : commands)
      if (!args.empty() && args[0] == known.name) {
        known.help();
        return kExitOk;
      }
    printHelp();
    return kExitOk;
  }
  for (const Command &known : commands)
    if (command == known.name)
      return known.run(args);
  printError("unknown command '" + command + "' (try 'ortc --help')");
  return kExitUsage;
}
