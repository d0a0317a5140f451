//===- EpPluginTest.cpp - an EP plugged in through the registries alone ---===//
//
// A toy EP (Add, Mul and Relu on float32, "compiled" into a little program
// text, run by an interpreter) is registered through the public registry
// APIs only, on both sides: CompileEpRegistry for the compile driver and a
// RuntimeEpFactory list for the session. A model is compiled with it into
// model_ctx.onnx and run, and its option reaches both halves. This binary
// links no EP library: what it runs comes from the toy EP alone.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/CompileReport.h"
#include "compiler/Driver/Driver.h"
#include "compiler/EP/CompileEpRegistry.h"
#include "runtime/ep/EpRegistry.h"
#include "runtime/session/Session.h"

#include "test/unit/ScratchDir.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassManager.h"
#include "onnx/onnx_pb.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

namespace {

using namespace ortc;

constexpr const char *kToySource = "toy_program";

// --- compile half ------------------------------------------------------------

class ToyCompiled final : public CompiledPartition {
public:
  std::string program;
};

// Claims float32 Add, Mul and Relu; a partition becomes lines of
// "OP OUT IN0 [IN1]" over value numbers (inputs first), then "outputs ...".
/// A pass with a bug: it gives each Relu a second operand, which the op's
/// verifier refuses. The driver must stop with one line naming the node and
/// this pass, never hand the invalid IR to compilePartition.
struct BreakReluPass : mlir::PassWrapper<BreakReluPass, mlir::OperationPass<mlir::func::FuncOp>> {
  llvm::StringRef getArgument() const override { return "toy-break-relu"; }
  void runOnOperation() override {
    getOperation().walk([](mlir::Operation *op) {
      if (op->getName().getStringRef() == "onnx.Relu")
        op->insertOperands(1, op->getOperand(0));
    });
  }
};

class ToyCompileEp final : public CompileEp {
public:
  ToyCompileEp(float scale, bool breakIr) : scale_(scale), breakIr_(breakIr) {}

  void addCustomPasses(mlir::OpPassManager &pm) const override {
    if (breakIr_)
      pm.addPass(std::make_unique<BreakReluPass>());
  }
  const EpIdentity &identity() const override { return identity_; }
  std::vector<std::string> contextSourceKeys() const override { return {kToySource}; }

  KernelMatch supportsOp(const NodeQuery &query) const override {
    bool known = query.domain == "ai.onnx" &&
                 (query.opType == "Add" || query.opType == "Mul" || query.opType == "Relu");
    if (!known)
      return KernelMatch::unsupported(query.decline(name(), RejectedKind::OpType,
                                                    "op " + query.opType + " has no kernel",
                                                    "Add, Mul and Relu"));
    for (mlir::Type type : query.inputTypes) {
      auto tensor = mlir::dyn_cast<mlir::RankedTensorType>(type);
      if (!tensor || !tensor.getElementType().isF32() || !tensor.hasStaticShape())
        return KernelMatch::unsupported(query.decline(name(), RejectedKind::DType,
                                                      "an input is not a static f32 tensor",
                                                      "static float32 tensors"));
    }
    KernelCost cost;
    cost.computeNs = 1;
    return KernelMatch::supported(cost);
  }

  mlir::FailureOr<std::unique_ptr<CompiledPartition>>
  compilePartition(mlir::func::FuncOp partition) override {
    std::map<void *, int> numbers;
    auto number = [&](mlir::Value value) {
      return numbers.emplace(value.getAsOpaquePointer(), int(numbers.size())).first->second;
    };
    auto compiled = std::make_unique<ToyCompiled>();
    std::ostringstream program;
    program << "scale " << scale_ << "\n";
    for (mlir::BlockArgument arg : partition.getArguments())
      number(arg);
    mlir::Block &body = partition.getBody().front();
    for (mlir::Operation &op : body.without_terminator()) {
      std::string type = op.getName().stripDialect().str();
      program << type << " " << number(op.getResult(0));
      for (mlir::Value operand : op.getOperands())
        program << " " << number(operand);
      program << "\n";
    }
    program << "outputs";
    for (mlir::Value value : body.getTerminator()->getOperands())
      program << " " << number(value);
    compiled->program = program.str();
    reportWork("ops", 1, 1);
    return std::unique_ptr<CompiledPartition>(std::move(compiled));
  }

  mlir::FailureOr<EpContextBlob> saveContext(CompiledPartition &&compiled) override {
    const auto &toy = static_cast<const ToyCompiled &>(compiled);
    EpContextBlob blob;
    blob.source = kToySource;
    blob.hardwareArchitecture = "toy";
    blob.epSdkVersion = "toy 1";
    blob.notes = "program of " + std::to_string(toy.program.size()) + " bytes";
    blob.bytes.assign(toy.program.begin(), toy.program.end());
    return blob;
  }

private:
  EpIdentity identity_{"toy_ep", DeviceType::Cpu, 0};
  float scale_;
  bool breakIr_;
};

bool parseScale(const std::string &text, float &scale) {
  char *end = nullptr;
  scale = std::strtof(text.c_str(), &end);
  return !text.empty() && *end == '\0' && std::isfinite(scale);
}

CompileEpPlugin toyCompilePlugin() {
  CompileEpPlugin plugin;
  plugin.name = "toy_ep";
  plugin.aliases = {"toy"};
  plugin.summary = "a test EP";
  plugin.options = {{"scale", "X", "Multiplies the partition's outputs by X.", "1"},
                    {"break_ir", "0|1", "Runs a pass that makes invalid IR.", "0"}};
  plugin.create = [](const EpOptionMap &options, std::string &error) -> std::unique_ptr<CompileEp> {
    float scale = 1;
    auto given = options.find("scale");
    if (given != options.end() && !parseScale(given->second, scale)) {
      error = badEpOptionValue("toy_ep", "scale", given->second, "not a number", "a finite float")
                  .message();
      return nullptr;
    }
    auto breakIr = options.find("break_ir");
    return std::make_unique<ToyCompileEp>(scale,
                                          breakIr != options.end() && breakIr->second == "1");
  };
  return plugin;
}

// --- runtime half --------------------------------------------------------------

struct ToyStep {
  std::string op;
  int out = 0;
  std::vector<int> ins;
};

class ToyPartition final : public LoadedPartition {
public:
  ToyPartition(std::vector<TensorSignature> inputs, std::vector<TensorSignature> outputs,
               std::vector<ToyStep> steps, std::vector<int> results, float scale, float bias)
      : inputs_(std::move(inputs)), outputs_(std::move(outputs)), steps_(std::move(steps)),
        results_(std::move(results)), scale_(scale), bias_(bias) {}
  const std::vector<TensorSignature> &inputs() const override { return inputs_; }
  const std::vector<TensorSignature> &outputs() const override { return outputs_; }
  Result<std::vector<std::vector<int64_t>>>
  outputShapes(const std::vector<TensorView> &inputs) const override {
    std::vector<std::vector<int64_t>> shapes;
    for (const TensorSignature &out : outputs_)
      shapes.push_back(out.shape);
    return shapes;
  }
  Status run(const std::vector<TensorView> &inputs,
             const std::vector<TensorView> &outputs) override {
    size_t n = size_t(inputs.at(0).numElements());
    std::map<int, std::vector<float>> values;
    for (size_t i = 0; i < inputs.size(); ++i) {
      const float *data = static_cast<const float *>(inputs[i].data);
      values[int(i)].assign(data, data + n);
    }
    for (const ToyStep &step : steps_) {
      std::vector<float> &out = values[step.out];
      out.resize(n);
      for (size_t e = 0; e < n; ++e) {
        float a = values.at(step.ins.at(0))[e];
        if (step.op == "Relu")
          out[e] = a > 0 ? a : 0;
        else if (step.op == "Add")
          out[e] = a + values.at(step.ins.at(1))[e];
        else if (step.op == "Mul")
          out[e] = a * values.at(step.ins.at(1))[e];
        else
          return Status::error(StatusCode::InvalidArgument, "toy_ep: unknown op " + step.op);
      }
    }
    for (size_t i = 0; i < outputs.size(); ++i) {
      float *out = static_cast<float *>(outputs[i].data);
      const std::vector<float> &value = values.at(results_.at(i));
      for (size_t e = 0; e < n; ++e)
        out[e] = value[e] * scale_ + bias_;
    }
    return Status::ok();
  }

private:
  std::vector<TensorSignature> inputs_, outputs_;
  std::vector<ToyStep> steps_;
  std::vector<int> results_;
  float scale_, bias_;
};

// Host memory; the runtime option bias=X is added to every output.
class ToyRuntimeEp final : public RuntimeEp {
public:
  const EpIdentity &identity() const override { return identity_; }
  std::vector<EpOptionSpec> options() const override {
    return {{"bias", "X", "Added to every output.", "0"}};
  }
  Status initialize(const EpConfig &config) override {
    auto bias = config.options.find("bias");
    if (bias != config.options.end() && !parseScale(bias->second, bias_))
      return badEpOptionValue(name(), "bias", bias->second, "not a number", "a finite float");
    return Status::ok();
  }
  Status shutdown() override { return Status::ok(); }
  Result<DeviceBuffer> allocate(size_t, size_t) override {
    return Status::error(StatusCode::Unsupported, "toy_ep: host memory only");
  }
  Status deallocate(DeviceBuffer &&buffer) override { return checkOwnership(buffer); }
  Status copy(const DeviceBuffer &, DeviceBuffer &, size_t) override {
    return Status::error(StatusCode::Unsupported, "toy_ep: no transfers");
  }
  Result<std::unique_ptr<Fence>> copyAsync(const DeviceBuffer &, DeviceBuffer &, size_t) override {
    return Status::error(StatusCode::Unsupported, "toy_ep: no transfers");
  }
  Status sync() override { return Status::ok(); }
  std::vector<std::string> contextSourceKeys() const override { return {kToySource}; }

  Result<std::unique_ptr<LoadedPartition>> loadContext(const EpContextView &context) override {
    std::istringstream program(std::string(context.data, context.size));
    std::string word;
    float scale = 1;
    std::vector<ToyStep> steps;
    std::vector<int> results;
    while (program >> word) {
      if (word == "scale") {
        program >> scale;
      } else if (word == "outputs") {
        int id;
        while (program >> id)
          results.push_back(id);
      } else {
        ToyStep step;
        step.op = word;
        program >> step.out;
        int arity = word == "Relu" ? 1 : 2;
        for (int i = 0; i < arity; ++i) {
          int id;
          program >> id;
          step.ins.push_back(id);
        }
        steps.push_back(step);
      }
    }
    if (!program.eof() || results.size() != context.outputNames.size())
      return Status::error(StatusCode::InvalidArgument, "toy_ep: a malformed program");
    std::vector<TensorSignature> inputs, outputs;
    for (const std::string &name : context.inputNames)
      inputs.push_back({name, ElementType::Float, {2, 3}});
    for (const std::string &name : context.outputNames)
      outputs.push_back({name, ElementType::Float, {2, 3}});
    return std::unique_ptr<LoadedPartition>(new ToyPartition(
        std::move(inputs), std::move(outputs), std::move(steps), std::move(results), scale, bias_));
  }

private:
  EpIdentity identity_{"toy_ep", DeviceType::Cpu, 0};
  float bias_ = 0;
};

std::vector<RuntimeEpFactory> toyRuntimeFactories() {
  return {RuntimeEpFactory{"toy_ep", {"toy"}, [] { return std::make_shared<ToyRuntimeEp>(); }}};
}

// --- the model: out = Relu(x + y) * x over float32[2, 3] -----------------------

void writeModel(const std::string &path) {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(18);
  onnx::GraphProto *graph = model.mutable_graph();
  graph->set_name("toy");
  auto tensor = [](onnx::ValueInfoProto *info, const char *name) {
    info->set_name(name);
    auto *type = info->mutable_type()->mutable_tensor_type();
    type->set_elem_type(onnx::TensorProto::FLOAT);
    type->mutable_shape()->add_dim()->set_dim_value(2);
    type->mutable_shape()->add_dim()->set_dim_value(3);
  };
  tensor(graph->add_input(), "x");
  tensor(graph->add_input(), "y");
  tensor(graph->add_output(), "out");
  auto node = [&](const char *op, const char *name, std::vector<const char *> ins,
                  const char *out) {
    onnx::NodeProto *n = graph->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const char *in : ins)
      n->add_input(in);
    n->add_output(out);
  };
  node("Add", "add", {"x", "y"}, "s");
  node("Relu", "relu", {"s"}, "r");
  node("Mul", "mul", {"r", "x"}, "out");
  std::ofstream file(path, std::ios::binary);
  ASSERT_TRUE(model.SerializeToOstream(&file));
}

class EpPluginTest : public ::testing::Test {
protected:
  void SetUp() override {
    std::string error;
    ASSERT_TRUE(compileEps.add(toyCompilePlugin(), error)) << error;
    modelPath = scratch.path() + "/toy.onnx";
    writeModel(modelPath);
  }
  ortc::testutil::ScratchDir scratch{"ortc-plugin"};
  CompileEpRegistry compileEps;
  std::string modelPath;
};

TEST_F(EpPluginTest, CompilesAndRunsAModelThroughTheRegistriesAlone) {
  DriverOptions options;
  options.input = modelPath;
  options.output = scratch.path() + "/toy_ctx.onnx";
  options.epOptions["toy"]["scale"] = "2"; // by alias
  DriverResult result = compileModel(compileEps, options);
  ASSERT_TRUE(result.ok()) << result.error;
  ASSERT_EQ(result.compiled.size(), 1u);
  EXPECT_EQ(result.compiled[0].ep, "toy_ep");
  EXPECT_EQ(result.compiled[0].source, kToySource);
  ASSERT_EQ(result.eps.size(), 1u);
  EXPECT_EQ(result.eps[0].options.at("scale"), "2");
  std::vector<std::string> stages;
  for (const StageTiming &stage : result.stages)
    stages.push_back(stage.name);
  EXPECT_EQ(stages, (std::vector<std::string>{"import", "generic-passes", "partition", "ep-passes",
                                              "codegen", "write"}));

  Result<EpRegistry> registry = EpRegistry::fromFactories(toyRuntimeFactories());
  ASSERT_TRUE(registry.isOk()) << registry.status().message();
  SessionOptions sessionOptions;
  sessionOptions.epOptions["toy_ep"]["bias"] = "0.5";
  Result<std::unique_ptr<Session>> session =
      Session::load(options.output, registry.takeValue(), sessionOptions);
  ASSERT_TRUE(session.isOk()) << session.status().message();

  std::vector<float> x = {1, -2, 3, -4, 5, 0.5f}, y = {1, 1, -5, 1, 1, 1};
  std::vector<TensorView> inputs = {{x.data(), ElementType::Float, {2, 3}},
                                    {y.data(), ElementType::Float, {2, 3}}};
  Result<std::vector<OwnedTensor>> outputs = session.value()->run(inputs);
  ASSERT_TRUE(outputs.isOk()) << outputs.status().message();
  const float *out = reinterpret_cast<const float *>(outputs.value()[0].data.get());
  for (size_t i = 0; i < x.size(); ++i) {
    float relu = std::max(x[i] + y[i], 0.0f);
    EXPECT_FLOAT_EQ(out[i], relu * x[i] * 2 + 0.5f) << i; // compile scale, runtime bias
  }
}

TEST_F(EpPluginTest, InvalidIrFromAnEpPassIsOneLineNamingTheNodeAndThePass) {
  DriverOptions options;
  options.input = modelPath;
  options.output = scratch.path() + "/broken_ctx.onnx";
  options.epOptions["toy"]["break_ir"] = "1";
  DriverResult result = compileModel(compileEps, options);
  ASSERT_FALSE(result.ok());
  EXPECT_EQ(result.failedStage, "ep-passes") << result.error;
  EXPECT_EQ(result.error.find('\n'), std::string::npos) << result.error;
  for (const char *part : {"node 'relu'", "invalid IR after pass toy-break-relu", "onnx.Relu"})
    EXPECT_NE(result.error.find(part), std::string::npos) << part << " in " << result.error;
  std::ifstream written(options.output);
  EXPECT_FALSE(written.good()) << "a failed compile wrote " << options.output;
}

TEST_F(EpPluginTest, TheJsonReportNamesTheEpAndItsWork) {
  DriverOptions options;
  options.input = modelPath;
  options.output = scratch.path() + "/toy_ctx.onnx";
  DriverResult result = compileModel(compileEps, options);
  ASSERT_TRUE(result.ok()) << result.error;
  std::string json = formatCompileReportJson(options, result, "test");
  for (const char *field :
       {"\"status\": \"ok\"", "\"ep\": \"toy_ep\"", "\"source\": \"toy_program\"",
        "\"stages\": [{\"name\": \"import\"", "\"placements\": ["})
    EXPECT_NE(json.find(field), std::string::npos) << field << " in " << json;
}

TEST_F(EpPluginTest, RefusesUnknownEpsKeysAndValuesBeforeWork) {
  DriverOptions options;
  options.input = scratch.path() + "/missing.onnx"; // never read: the EPs fail first
  options.eps = {"toy"};
  options.epOptions["toy"]["speed"] = "11";
  DriverResult result = compileModel(compileEps, options);
  EXPECT_EQ(result.outcome, DriverResult::Outcome::Usage);
  EXPECT_EQ(result.error,
            "--ep-option: toy_ep: unknown option 'speed' (toy_ep accepts scale=X, break_ir=0|1)");
  EXPECT_TRUE(result.stages.empty());

  options.epOptions = {{"toy", {{"scale", "fast"}}}};
  result = compileModel(compileEps, options);
  EXPECT_EQ(result.error,
            "--ep-option: toy_ep: option scale='fast': not a number (accepts a finite float)");

  options.epOptions = {{"gpu", {{"scale", "1"}}}};
  result = compileModel(compileEps, options);
  EXPECT_EQ(result.error,
            "--ep-option: no EP named 'gpu' in this build (available: toy_ep (alias toy))");

  options.epOptions = {{"toy", {{"scale", "1"}}}, {"toy_ep", {{"scale", "2"}}}};
  result = compileModel(compileEps, options);
  EXPECT_EQ(result.error, "--ep-option: toy_ep: option scale is given under two of its names");

  options.epOptions.clear();
  options.eps = {"gpu"};
  result = compileModel(compileEps, options);
  EXPECT_EQ(result.error, "--ep: no EP named 'gpu' in this build (available: toy_ep (alias toy))");
}

TEST_F(EpPluginTest, RefusesAnUnwritableOutputBeforeWork) {
  DriverOptions options;
  options.input = scratch.path() + "/missing.onnx";
  options.output = scratch.path() + "/no/such/folder/m_ctx.onnx";
  DriverResult result = compileModel(compileEps, options);
  EXPECT_EQ(result.outcome, DriverResult::Outcome::Failed);
  EXPECT_NE(result.error.find("does not exist"), std::string::npos) << result.error;
  EXPECT_TRUE(result.stages.empty()); // nothing was imported
  options.output = scratch.path();
  result = compileModel(compileEps, options);
  EXPECT_NE(result.error.find("is a directory"), std::string::npos) << result.error;
}

TEST_F(EpPluginTest, RegistriesRefuseTakenNamesAndUnknownRuntimeOptions) {
  std::string error;
  CompileEpPlugin twin = toyCompilePlugin();
  twin.name = "other_ep"; // alias "toy" is taken
  EXPECT_FALSE(compileEps.add(twin, error));
  EXPECT_NE(error.find("'toy'"), std::string::npos) << error;

  std::vector<RuntimeEpFactory> factories = toyRuntimeFactories();
  factories.push_back(factories.front());
  Result<EpRegistry> twice = EpRegistry::fromFactories(factories);
  ASSERT_FALSE(twice.isOk());
  EXPECT_NE(twice.status().message().find("already registered"), std::string::npos);

  Result<EpRegistry> registry = EpRegistry::fromFactories(toyRuntimeFactories());
  ASSERT_TRUE(registry.isOk());
  EXPECT_EQ(registry.value().findByName("toy"), registry.value().findByName("toy_ep"));
  Status unknownKey = registry.value().checkOptions({{"toy", {{"speed", "1"}}}});
  EXPECT_EQ(unknownKey.message(), "toy_ep: unknown option 'speed' (toy_ep accepts bias=X)");
  Status bothNames =
      registry.value().checkOptions({{"toy", {{"bias", "1"}}}, {"toy_ep", {{"bias", "2"}}}});
  EXPECT_EQ(bothNames.message(), "toy_ep: option bias is given as toy:bias and as toy_ep:bias");
  Status unknownEp = registry.value().checkOptions({{"gpu", {{"bias", "1"}}}});
  EXPECT_NE(unknownEp.message().find("'gpu'"), std::string::npos) << unknownEp.message();
}

} // namespace
