//===- FuzzCompile.cpp - ModelProto bytes through the whole compile -------===//
//
// What fuzz_import stops short of: the bytes as a model file, compiled by
// the driver as `ortc compile` does (import, generic passes, partitioning,
// each EP's passes, compilePartition, the EPContext writer) with every EP
// list of this build: cpu, and cuda,cpu where the CUDA EP is built (its
// NVRTC compile included). Each pass's output is verified; a refusal must
// be an error, never a crash, and a failed compile must leave no output.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/Driver.h"
#include "compiler/EP/CompileEpRegistry.h"
#include "test/fuzz/FuzzSupport.h"

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace {

/// The EP lists `ortc compile` accepts in this build, each one compile.
std::vector<std::vector<std::string>> epLists() {
  std::vector<std::vector<std::string>> lists;
  const ortc::CompileEpRegistry &eps = ortc::builtinCompileEps();
  if (eps.find("cpu"))
    lists.push_back({"cpu"});
  if (eps.find("cuda") && eps.find("cpu"))
    lists.push_back({"cuda", "cpu"});
  return lists;
}

bool exists(const std::string &path) {
  struct stat info;
  return ::stat(path.c_str(), &info) == 0;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const std::string modelPath = ortc::fuzz::modelInScratchFolder("compile");
  static const std::string outputPath = modelPath.substr(0, modelPath.size() - 5) + "_ctx.onnx";
  static const std::vector<std::vector<std::string>> lists = epLists();
  ortc::fuzz::writeWholeFile(modelPath, data, size);
  for (const std::vector<std::string> &eps : lists) {
    std::remove(outputPath.c_str());
    ortc::DriverOptions options;
    options.input = modelPath;
    options.output = outputPath;
    options.eps = eps;
    // Small shapes keep each input quick; larger ones are refused cleanly.
    options.maxTensorBytes = int64_t(1) << 26;
    ortc::DriverResult result = ortc::compileModel(ortc::builtinCompileEps(), options);
    if (!result.ok() && exists(outputPath)) {
      std::fprintf(stderr, "fuzz_compile: a failed compile (%s) left %s behind\n",
                   result.error.c_str(), outputPath.c_str());
      std::abort();
    }
    if (!result.ok() && result.error.find("invalid IR after pass") != std::string::npos) {
      std::fprintf(stderr, "fuzz_compile: %s\n", result.error.c_str());
      std::abort();
    }
  }
  return 0;
}
