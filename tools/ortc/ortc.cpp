//===- ortc.cpp - the ortc command line -----------------------------------===//
//
//   ortc compile model.onnx [options]       (see `ortc compile --help`)
//   ortc run | inspect | bench model_ctx.onnx [options]
//
//===----------------------------------------------------------------------===//

#include "tools/ortc/Commands.h"

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
// Names in a hostile model may hold newlines or other line breaks; escape them
// so that every error stays on one line.
std::string escapeLineBreaks(const std::string &text) {
  std::string out;
  static const char hex[] = "0123456789abcdef";
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = text[i];
    unsigned char next = i + 1 < text.size() ? text[i + 1] : 0;
    unsigned char third = i + 2 < text.size() ? text[i + 2] : 0;
    if (c < 0x20 || c == 0x7f) {
      escape(c);
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) { // C1 controls, NEL
      escape(c);
      escape(next);
      ++i;
    } else if (c == 0xe2 && next == 0x80 && (third == 0xa8 || third == 0xa9)) { // U+2028/9
      escape(c);
      escape(next);
      escape(third);
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

void printError(const std::string &message) {
  std::cerr << "ortc: " << escapeLineBreaks(message) << "\n";
}
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
