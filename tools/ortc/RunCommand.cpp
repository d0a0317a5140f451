//===- RunCommand.cpp - ortc run ------------------------------------------===//
//
//   ortc run model_ctx.onnx --input NAME=FILE.npy ... [--output-dir DIR]
//
// Loads the EPContext model with the runtime (no compiler involved), runs it
// once, and writes each graph output to DIR/<output name>.npy.
//
//===----------------------------------------------------------------------===//

#include "tools/ortc/Commands.h"

#include "runtime/session/Session.h"
#include "runtime/support/Npy.h"

#include <cctype>
#include <iostream>
#include <map>

namespace ortc::cli {

void printRunHelp() {
  std::cout <<
      R"(Usage: ortc run MODEL_ctx.onnx --input NAME=FILE.npy ... [options]

Runs a model compiled by `ortc compile` with the ortc runtime: every EPContext
node's blob is loaded by the EP that wrote it; nothing is recompiled.

Options:
  --input NAME=FILE.npy  The value of graph input NAME (every input is needed).
  --output-dir DIR       Where to write each output as DIR/<name>.npy
                         (default: the current directory).
  -h, --help             Show this help.

Exit status: 0 on success, 1 when the model or an input is refused or a run
fails (the message names the file, node or input), 2 for a bad command line.
)";
}

int runRun(const std::vector<std::string> &args) {
  std::string model, outputDir = ".";
  std::map<std::string, std::string> inputFiles;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    auto value = [&](const std::string &flag, std::string &out) {
      if (arg == flag) {
        if (i + 1 >= args.size()) {
          printError(flag + " needs a value");
          return -1;
        }
        out = args[++i];
        return 1;
      }
      if (arg.rfind(flag + "=", 0) == 0) {
        out = arg.substr(flag.size() + 1);
        return 1;
      }
      return 0;
    };
    std::string v;
    if (arg == "-h" || arg == "--help") {
      printRunHelp();
      return kExitOk;
    }
    int got = value("--input", v);
    if (got < 0)
      return kExitUsage;
    if (got) {
      size_t eq = v.find('=');
      if (eq == std::string::npos || eq == 0) {
        printError("--input wants NAME=FILE.npy, got '" + v + "'");
        return kExitUsage;
      }
      inputFiles[v.substr(0, eq)] = v.substr(eq + 1);
      continue;
    }
    got = value("--output-dir", outputDir);
    if (got < 0)
      return kExitUsage;
    if (got)
      continue;
    if (!arg.empty() && arg[0] == '-') {
      printError("unknown option '" + arg + "' (see `ortc run --help`)");
      return kExitUsage;
    }
    if (!model.empty()) {
      printError("one model at a time: got '" + model + "' and '" + arg + "'");
      return kExitUsage;
    }
    model = arg;
  }
  if (model.empty()) {
    printError("no model given (see `ortc run --help`)");
    return kExitUsage;
  }

  Result<EpRegistry> registry = createDefaultEpRegistry();
  if (!registry.isOk()) {
    printError(registry.status().message());
    return kExitFailed;
  }
  Result<std::unique_ptr<Session>> session = Session::load(model, registry.takeValue());
  if (!session.isOk()) {
    printError(session.status().message());
    return kExitFailed;
  }
  Session &s = *session.value();

  std::vector<NpyArray> arrays;
  for (const TensorSignature &sig : s.inputs()) {
    auto file = inputFiles.find(sig.name);
    if (file == inputFiles.end()) {
      printError(model + ": input '" + sig.name + "' (" + elementTypeName(sig.type) +
                 shapeToString(sig.shape) + ") needs --input " + sig.name + "=FILE.npy");
      return kExitFailed;
    }
    Result<NpyArray> array = readNpy(file->second);
    if (!array.isOk()) {
      printError("input '" + sig.name + "': " + array.status().message());
      return kExitFailed;
    }
    arrays.push_back(array.takeValue());
    inputFiles.erase(file);
  }
  if (!inputFiles.empty()) {
    printError(model + " has no input named '" + inputFiles.begin()->first + "'");
    return kExitFailed;
  }
  std::vector<TensorView> views;
  for (NpyArray &array : arrays)
    views.push_back(array.view());
  Result<std::vector<OwnedTensor>> outputs = s.run(views);
  if (!outputs.isOk()) {
    printError(outputs.status().message());
    return kExitFailed;
  }
  for (size_t i = 0; i < s.outputs().size(); ++i) {
    // Output names come from the model: keep them from naming other paths.
    std::string file = s.outputs()[i].name;
    for (char &c : file)
      if (!(isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.'))
        c = '_';
    if (file.empty() || file[0] == '.')
      file = "_" + file;
    std::string path = outputDir + "/" + file + ".npy";
    Status written = writeNpy(path, outputs.value()[i].view());
    if (!written.isOk()) {
      printError(written.message());
      return kExitFailed;
    }
  }
  return kExitOk;
}

} // namespace ortc::cli
