//===- CpuClaimHonestyTest.cpp - every node cpu_ep claims compiles --------===//
//
// The claim-honesty harness over the test models of the lit suite, after the
// generic pipeline (which is what the CPU EP sees in `ortc compile`): each
// node cpu_ep answers Supported for is outlined alone and compiled to a blob.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/OnnxImporter.h"
#include "compiler/Partition/ClaimHonesty.h"
#include "compiler/Transforms/Passes.h"
#include "providers/cpu/compile/CpuCompileEp.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "onnx/onnx_pb.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <dirent.h>
#include <fstream>
#include <sstream>

namespace {

std::vector<std::string> textprotos(const std::string &dir) {
  std::vector<std::string> files;
  if (DIR *d = opendir(dir.c_str())) {
    while (dirent *entry = readdir(d)) {
      std::string name = entry->d_name;
      if (name.size() > 10 && name.compare(name.size() - 10, 10, ".textproto") == 0)
        files.push_back(dir + "/" + name);
    }
    closedir(d);
  }
  return files;
}

TEST(CpuClaimHonestyTest, EveryClaimedNodeOfTheTestModelsCompiles) {
  std::string root = std::string(ORTC_SOURCE_DIR) + "/test/lit/";
  std::vector<std::string> files;
  for (const char *dir : {"import", "pipeline", "epcontext"}) {
    std::vector<std::string> more = textprotos(root + dir);
    files.insert(files.end(), more.begin(), more.end());
  }
  ASSERT_GE(files.size(), 10u);

  std::string error;
  std::unique_ptr<ortc::CompileEp> cpu = ortc::cpu::createCpuCompileEp({}, error);
  ASSERT_TRUE(cpu) << error;
  std::vector<ortc::CompileEp *> eps{cpu.get()};

  int models = 0, claims = 0;
  for (const std::string &file : files) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    onnx::ModelProto model;
    if (!google::protobuf::TextFormat::ParseFromString(text.str(), &model))
      continue; // deliberately broken inputs of error tests
    mlir::MLIRContext context;
    auto module = ortc::importOnnxModel(context, model, file, error);
    if (!module)
      continue; // a model that needs files beside it (external data)
    context.getDiagEngine().registerHandler([](mlir::Diagnostic &) {}); // failures are reported below
    mlir::PassManager pm(&context);
    ortc::buildGenericOnnxPipeline(pm);
    if (mlir::failed(pm.run(*module)))
      continue;
    ++models;
    ortc::ClaimHonestyResult result = ortc::checkClaimHonesty(*module, eps);
    claims += result.claims;
    for (const auto &f : result.failures)
      ADD_FAILURE() << file << ": cpu_ep claimed node '" << f.node << "' (" << f.op
                    << ") and failed to compile it: " << f.message;
  }
  EXPECT_GE(models, 10);
  EXPECT_GE(claims, 20);
  std::cout << "cpu_ep: " << claims << " claims over " << models << " models, all compiled\n";
}

} // namespace
