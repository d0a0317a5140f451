//===- ClaimHonestyTest.cpp - claimed nodes must compile ------------------===//

#include "compiler/Partition/ClaimHonesty.h"
#include "compiler/Import/OnnxImporter.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "onnx/onnx_pb.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <dirent.h>
#include <fstream>
#include <sstream>

using namespace mlir;

namespace {

// Claims Add and Relu; `honest` controls whether it declines f64 up front or
// discovers the missing f64 kernel only when compiling (the bug to catch).
class TestEp : public ortc::CompileEp {
public:
  TestEp(std::string name, bool honest) : id_{std::move(name)}, honest_(honest) {}
  const ortc::EpIdentity &identity() const override { return id_; }
  ortc::KernelMatch supportsOp(const ortc::NodeQuery &q) const override {
    if (q.opType != "Add" && q.opType != "Relu")
      return ortc::KernelMatch::unsupported(q.decline(
          name(), ortc::RejectedKind::OpType, "op " + q.opType + " has no kernel", "Add, Relu"));
    if (honest_ && hasF64(q.inputTypes))
      return ortc::KernelMatch::unsupported(q.decline(
          name(), ortc::RejectedKind::DType, "an input is f64", "f32 inputs", "cast to f32"));
    return ortc::KernelMatch::supported({});
  }
  FailureOr<std::unique_ptr<ortc::CompiledPartition>>
  compilePartition(func::FuncOp partition) override {
    ++compiled;
    if (hasF64(SmallVector<Type>(partition.getArgumentTypes())))
      return partition.emitError("no f64 kernel");
    return std::make_unique<ortc::CompiledPartition>();
  }
  FailureOr<ortc::EpContextBlob> saveContext(ortc::CompiledPartition &&) override {
    return ortc::EpContextBlob{};
  }
  int compiled = 0;

private:
  static bool hasF64(ArrayRef<Type> types) {
    return llvm::any_of(types, [](Type t) {
      auto tensor = dyn_cast<TensorType>(t);
      return tensor && tensor.getElementType().isF64();
    });
  }
  ortc::EpIdentity id_;
  bool honest_;
};

constexpr const char *kModel = R"mlir(
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}} {
  func.func @main_graph(%x: tensor<4xf32>, %d: tensor<4xf64>) -> (tensor<4xf32>, tensor<4xf64>) {
    %c = "onnx.Constant"() {value = dense<1.0> : tensor<4xf32>} : () -> tensor<4xf32>
    %0 = "onnx.Add"(%x, %c) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> loc("add_f32")
    %1 = "onnx.Relu"(%0) : (tensor<4xf32>) -> tensor<4xf32> loc("relu")
    %2 = "onnx.Add"(%d, %d) : (tensor<4xf64>, tensor<4xf64>) -> tensor<4xf64> loc("add_f64")
    %3 = "onnx.Sqrt"(%d) : (tensor<4xf64>) -> tensor<4xf64> loc("sqrt")
    return %1, %2 : tensor<4xf32>, tensor<4xf64>
  }
}
)mlir";

TEST(ClaimHonestyTest, FindsNodesClaimedThenNotCompiled) {
  MLIRContext context;
  context.loadDialect<func::FuncDialect, ortc::onnx_dialect::OnnxDialect>();
  OwningOpRef<ModuleOp> module = parseSourceString<ModuleOp>(kModel, &context);
  ASSERT_TRUE(module);

  TestEp honest("honest_ep", true), lying("lying_ep", false);
  std::vector<ortc::CompileEp *> eps{&honest, &lying};
  ortc::ClaimHonestyResult result = ortc::checkClaimHonesty(*module, eps);

  // honest_ep claims add_f32 and relu; lying_ep also claims add_f64.
  EXPECT_EQ(result.claims, 5);
  EXPECT_EQ(honest.compiled, 2);
  EXPECT_EQ(lying.compiled, 3);
  ASSERT_EQ(result.failures.size(), 1u);
  EXPECT_EQ(result.failures[0].ep, "lying_ep");
  EXPECT_EQ(result.failures[0].node, "add_f64");
  EXPECT_EQ(result.failures[0].op, "Add");
  EXPECT_EQ(result.failures[0].message, "no f64 kernel");
  // The module is untouched.
  EXPECT_EQ(std::distance(module->getBody()->begin(), module->getBody()->end()), 1);
}

// Every test model of the import suite, through the claims and compiles of
// an honest EP and a float-only one: the harness as the EP issues will run it.
TEST(ClaimHonestyTest, RunsOverTheTestModels) {
  std::string dir = std::string(ORTC_SOURCE_DIR) + "/test/lit/import";
  DIR *d = opendir(dir.c_str());
  ASSERT_NE(d, nullptr) << dir;
  std::vector<std::string> files;
  while (dirent *entry = readdir(d)) {
    std::string name = entry->d_name;
    if (name.size() > 10 && name.compare(name.size() - 10, 10, ".textproto") == 0)
      files.push_back(dir + "/" + name);
  }
  closedir(d);
  ASSERT_GE(files.size(), 5u);

  int models = 0, claims = 0;
  for (const std::string &file : files) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    onnx::ModelProto model;
    ASSERT_TRUE(google::protobuf::TextFormat::ParseFromString(text.str(), &model)) << file;
    MLIRContext context;
    std::string error;
    auto module = ortc::importOnnxModel(context, model, file, error);
    if (!module)
      continue; // a model that needs files beside it (external data)
    ++models;
    TestEp honest("honest_ep", true);
    std::vector<ortc::CompileEp *> eps{&honest};
    ortc::ClaimHonestyResult result = ortc::checkClaimHonesty(*module, eps);
    claims += result.claims;
    for (const auto &f : result.failures)
      ADD_FAILURE() << file << ": " << f.ep << " claimed node '" << f.node << "' (" << f.op
                    << ") and failed to compile it: " << f.message;
  }
  EXPECT_GE(models, 5);
  EXPECT_GT(claims, 0);
}

} // namespace
