//===- ContextModelTest.cpp - reading EPContext models, and the writer ----===//
//
// loadContextModel on hand-built models (each refusal, inline and mapped
// blobs), then the writer's output read back by the loader.
//
//===----------------------------------------------------------------------===//

#include "runtime/session/ContextModel.h"

#include "compiler/EPContext/EpContextWriter.h"
#include "compiler/Import/OnnxImporter.h"

#include "onnx/onnx_pb.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Parser/Parser.h"

#include "test/unit/ScratchDir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <sys/stat.h>
#include <unistd.h>

namespace {

using ortc::ContextModel;
using ortc::loadContextModel;

void addValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> *list,
              const std::string &name, std::initializer_list<int64_t> dims) {
  onnx::ValueInfoProto *value = list->Add();
  value->set_name(name);
  auto *tensor = value->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(onnx::TensorProto::FLOAT);
  for (int64_t d : dims) {
    auto *dim = tensor->mutable_shape()->add_dim();
    if (d < 0)
      dim->set_dim_param("batch");
    else
      dim->set_dim_value(d);
  }
}

onnx::AttributeProto *setAttr(onnx::NodeProto *node, const std::string &name) {
  for (auto &attr : *node->mutable_attribute())
    if (attr.name() == name)
      return &attr;
  auto *attr = node->add_attribute();
  attr->set_name(name);
  return attr;
}

void setInt(onnx::NodeProto *node, const std::string &name, int64_t value) {
  auto *attr = setAttr(node, name);
  attr->set_type(onnx::AttributeProto::INT);
  attr->clear_s();
  attr->set_i(value);
}

void setString(onnx::NodeProto *node, const std::string &name, const std::string &value) {
  auto *attr = setAttr(node, name);
  attr->set_type(onnx::AttributeProto::STRING);
  attr->clear_i();
  attr->set_s(value);
}

void removeAttr(onnx::NodeProto *node, const std::string &name) {
  auto *attrs = node->mutable_attribute();
  for (int i = 0; i < attrs->size(); ++i)
    if (attrs->Get(i).name() == name) {
      attrs->DeleteSubrange(i, 1);
      return;
    }
}

onnx::NodeProto *addContextNode(onnx::GraphProto *graph, const std::string &name,
                                std::vector<std::string> inputs, std::vector<std::string> outputs,
                                const std::string &bytes) {
  auto *node = graph->add_node();
  node->set_name(name);
  node->set_op_type("EPContext");
  node->set_domain("com.microsoft");
  for (auto &i : inputs)
    node->add_input(i);
  for (auto &o : outputs)
    node->add_output(o);
  setInt(node, "main_context", 1);
  setString(node, "ep_cache_context", bytes);
  setInt(node, "embed_mode", 1);
  setString(node, "source", "cpu_ep");
  setString(node, "ep_sdk_version", "1.0");
  setString(node, "hardware_architecture", "x86_64");
  setString(node, "partition_name", name);
  setString(node, "notes", "");
  return node;
}

// x[batch,4] -> p0 -> t -> p1 -> y[batch,4], both blobs inline.
onnx::ModelProto makeTwoNodeModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  auto *ms = model.add_opset_import();
  ms->set_domain("com.microsoft");
  ms->set_version(1);
  auto *graph = model.mutable_graph();
  graph->set_name("g");
  addValue(graph->mutable_input(), "x", {-1, 4});
  addValue(graph->mutable_output(), "y", {-1, 4});
  addContextNode(graph, "p0", {"x"}, {"t"}, "blob zero");
  addContextNode(graph, "p1", {"t", "x"}, {"y"}, "blob one");
  return model;
}

class ContextModelTest : public ::testing::Test {
protected:
  void SetUp() override {
    root = scratch.path();
    dir = root + "/model";
    ASSERT_EQ(::mkdir(dir.c_str(), 0755), 0);
    path = dir + "/m_ctx.onnx";
  }

  static void writeFile(const std::string &file, const std::string &bytes) {
    std::ofstream(file, std::ios::binary) << bytes;
  }
  void save(const onnx::ModelProto &model) { writeFile(path, model.SerializeAsString()); }

  // Saves `model`, loads it and expects a refusal that names the file and
  // contains `expected`.
  void expectRefusal(const onnx::ModelProto &model, const std::string &expected) {
    save(model);
    auto result = loadContextModel(path);
    ASSERT_FALSE(result.isOk()) << "expected: " << expected;
    const std::string &message = result.status().message();
    EXPECT_EQ(message.rfind(path + ": ", 0), 0u) << message;
    EXPECT_NE(message.find(expected), std::string::npos) << message;
    EXPECT_EQ(message.find('\n'), std::string::npos) << message;
  }

  std::vector<std::string> listDir() {
    std::vector<std::string> names;
    DIR *d = ::opendir(dir.c_str());
    while (dirent *e = ::readdir(d))
      if (std::string(e->d_name) != "." && std::string(e->d_name) != "..")
        names.push_back(e->d_name);
    ::closedir(d);
    std::sort(names.begin(), names.end());
    return names;
  }

  ortc::testutil::ScratchDir scratch{"ortc-ctxmodel"};
  std::string root, dir, path;
};

std::string viewBytes(const ortc::EpContextView &view) { return std::string(view.data, view.size); }

TEST_F(ContextModelTest, ReadsInlineContexts) {
  save(makeTwoNodeModel());
  auto result = loadContextModel(path);
  ASSERT_TRUE(result.isOk()) << result.status().message();
  ContextModel model = result.takeValue();
  ASSERT_EQ(model.inputs.size(), 1u);
  EXPECT_EQ(model.inputs[0].name, "x");
  EXPECT_EQ(model.inputs[0].type, ortc::ElementType::Float);
  EXPECT_EQ(model.inputs[0].shape, (std::vector<int64_t>{-1, 4}));
  ASSERT_EQ(model.outputs.size(), 1u);
  EXPECT_EQ(model.outputs[0].name, "y");
  ASSERT_EQ(model.nodes.size(), 2u);
  const ortc::ContextNode &p1 = model.nodes[1];
  EXPECT_EQ(p1.name, "p1");
  EXPECT_EQ(p1.inputs, (std::vector<std::string>{"t", "x"}));
  EXPECT_EQ(p1.outputs, (std::vector<std::string>{"y"}));
  EXPECT_TRUE(p1.embedded);
  EXPECT_EQ(p1.context.source, "cpu_ep");
  EXPECT_EQ(p1.context.partitionName, "p1");
  EXPECT_EQ(p1.context.hardwareArchitecture, "x86_64");
  EXPECT_EQ(p1.context.epSdkVersion, "1.0");
  EXPECT_EQ(viewBytes(p1.context), "blob one");

  // Views stay valid in a copy after the original is gone.
  ContextModel copy;
  {
    ContextModel moved = std::move(model);
    copy = moved;
  }
  EXPECT_EQ(viewBytes(copy.nodes[0].context), "blob zero");
}

TEST_F(ContextModelTest, MapsSidecars) {
  onnx::ModelProto proto = makeTwoNodeModel();
  auto *node = proto.mutable_graph()->mutable_node(1);
  setInt(node, "embed_mode", 0);
  setString(node, "ep_cache_context", "m_ctx_cpu_ep.bin");
  writeFile(dir + "/m_ctx_cpu_ep.bin", std::string("side\0car", 8));
  save(proto);
  auto result = loadContextModel(path);
  ASSERT_TRUE(result.isOk()) << result.status().message();
  ContextModel model = result.takeValue();
  const ortc::ContextNode &p1 = model.nodes[1];
  EXPECT_FALSE(p1.embedded);
  EXPECT_NE(p1.sidecarPath.find("m_ctx_cpu_ep.bin"), std::string::npos);
  EXPECT_EQ(viewBytes(p1.context), std::string("side\0car", 8));
  EXPECT_EQ(model.sidecars.size(), 1u);
  // An empty sidecar is an empty blob, not an error.
  writeFile(dir + "/empty.bin", "");
  setString(node, "ep_cache_context", "empty.bin");
  save(proto);
  auto empty = loadContextModel(path);
  ASSERT_TRUE(empty.isOk()) << empty.status().message();
  EXPECT_EQ(empty.value().nodes[1].context.size, 0u);
}

TEST_F(ContextModelTest, RefusesBrokenFiles) {
  auto missing = loadContextModel(dir + "/nope.onnx");
  ASSERT_FALSE(missing.isOk());
  EXPECT_NE(missing.status().message().find("nope.onnx"), std::string::npos);
  writeFile(path, "\xff\xff\xff not a protobuf");
  auto broken = loadContextModel(path);
  ASSERT_FALSE(broken.isOk());
  EXPECT_NE(broken.status().message().find(path), std::string::npos);
}

TEST_F(ContextModelTest, RefusesOtherNodes) {
  onnx::ModelProto model = makeTwoNodeModel();
  auto *relu = model.mutable_graph()->mutable_node(1);
  relu->set_domain("");
  relu->set_op_type("Relu");
  expectRefusal(model, "node 'p1': is ai.onnx::Relu, not com.microsoft::EPContext");
}

TEST_F(ContextModelTest, RefusesMissingAndIllTypedAttributes) {
  for (const char *name : {"main_context", "ep_cache_context", "embed_mode", "source"}) {
    onnx::ModelProto model = makeTwoNodeModel();
    removeAttr(model.mutable_graph()->mutable_node(0), name);
    expectRefusal(model, std::string("node 'p0': missing attribute '") + name + "'");
  }
  onnx::ModelProto model = makeTwoNodeModel();
  setString(model.mutable_graph()->mutable_node(0), "embed_mode", "1");
  expectRefusal(model, "attribute 'embed_mode' must be an int");
  model = makeTwoNodeModel();
  setInt(model.mutable_graph()->mutable_node(0), "partition_name", 3);
  expectRefusal(model, "attribute 'partition_name' must be a string");
  model = makeTwoNodeModel();
  setInt(model.mutable_graph()->mutable_node(0), "ep_cache_context", 3);
  expectRefusal(model, "attribute 'ep_cache_context' must be a string");
}

TEST_F(ContextModelTest, RefusesBadModes) {
  onnx::ModelProto model = makeTwoNodeModel();
  setInt(model.mutable_graph()->mutable_node(1), "embed_mode", 2);
  expectRefusal(model, "node 'p1': embed_mode is 2");
  model = makeTwoNodeModel();
  setInt(model.mutable_graph()->mutable_node(1), "main_context", 0);
  expectRefusal(model, "node 'p1': main_context is 0");
}

TEST_F(ContextModelTest, RefusesMissingAndHostileSidecars) {
  writeFile(root + "/outside.bin", "secret");
  ASSERT_EQ(::symlink((root + "/outside.bin").c_str(), (dir + "/link.bin").c_str()), 0);
  const std::pair<std::string, std::string> cases[] = {
      {"absent.bin", "cannot open"},
      {root + "/outside.bin", "absolute path"},
      {"../outside.bin", "'..' component"},
      {"link.bin", "outside the model's folder"},
  };
  for (const auto &[location, expected] : cases) {
    onnx::ModelProto model = makeTwoNodeModel();
    auto *node = model.mutable_graph()->mutable_node(0);
    setInt(node, "embed_mode", 0);
    setString(node, "ep_cache_context", location);
    expectRefusal(model, "node 'p0': sidecar: ");
    expectRefusal(model, expected);
  }
}

TEST_F(ContextModelTest, RefusesBrokenDataflow) {
  onnx::ModelProto model = makeTwoNodeModel();
  model.mutable_graph()->mutable_node(0)->set_input(0, "nowhere");
  expectRefusal(
      model,
      "node 'p0': input 'nowhere' is produced by no graph input, initializer or earlier node");
  // Out of order: p1 reads t before p0 makes it.
  model = makeTwoNodeModel();
  model.mutable_graph()->mutable_node()->SwapElements(0, 1);
  expectRefusal(model, "node 'p1': input 't' is produced by no graph input");
  model = makeTwoNodeModel();
  model.mutable_graph()->mutable_node(1)->set_output(0, "t");
  expectRefusal(model, "node 'p1': output 't' is already produced");
  model = makeTwoNodeModel();
  model.mutable_graph()->mutable_output(0)->set_name("z");
  expectRefusal(model, "graph output 'z' is produced by no graph input, initializer or node");
  model = makeTwoNodeModel();
  model.mutable_graph()->mutable_input(0)->mutable_type()->mutable_tensor_type()->clear_shape();
  expectRefusal(model, "graph input 'x' has no shape");
}

//===----------------------------------------------------------------------===//
// The writer, read back.
//===----------------------------------------------------------------------===//

// Two EPs alternating: gpu_ep_p0 -> cpu_ep_p0 -> gpu_ep_p1, and a graph output
// that is a graph input.
constexpr const char *kPartitioned = R"mlir(
module attributes {onnx.opset_import = {ai.onnx = 17 : i64}, onnx.ir_version = 7 : i64} {
  func.func private @gpu_ep_p0(%x: tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>) attributes {ortc.ep = "gpu_ep"} {
    %0 = "onnx.Relu"(%x) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    %1 = "onnx.Neg"(%0) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    return %0, %1 : tensor<?x4xf32>, tensor<?x4xf32>
  }
  func.func private @cpu_ep_p0(%a: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {ortc.ep = "cpu_ep"} {
    %0 = "onnx.Relu"(%a) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    return %0 : tensor<?x4xf32>
  }
  func.func private @gpu_ep_p1(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> attributes {ortc.ep = "gpu_ep"} {
    %0 = "onnx.Add"(%a, %b) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %0 : tensor<?x4xf32>
  }
  func.func @main_graph(%x: tensor<?x4xf32> {onnx.name = "x", onnx.dim_params = ["batch", ""]})
      -> (tensor<?x4xf32> {onnx.name = "y", onnx.dim_params = ["batch", ""]},
          tensor<?x4xf32> {onnx.name = "relu_out"},
          tensor<?x4xf32> {onnx.name = "x"}) {
    %0:2 = call @gpu_ep_p0(%x) : (tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x4xf32>)
    %1 = call @cpu_ep_p0(%0#1) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    %2 = call @gpu_ep_p1(%1, %0#0) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    return %2, %0#0, %x : tensor<?x4xf32>, tensor<?x4xf32>, tensor<?x4xf32>
  }
}
)mlir";

ortc::EpContextBlob makeBlob(const std::string &source, const std::string &bytes) {
  ortc::EpContextBlob blob;
  blob.source = source;
  blob.hardwareArchitecture = "test";
  blob.epSdkVersion = "ortc-test";
  blob.notes = "n";
  blob.bytes.assign(bytes.begin(), bytes.end());
  return blob;
}

class EpContextWriterTest : public ContextModelTest {
protected:
  void SetUp() override {
    ContextModelTest::SetUp();
    ortc::loadImportDialects(context);
    module = mlir::parseSourceString<mlir::ModuleOp>(kPartitioned, &context);
    ASSERT_TRUE(module);
    blobs["gpu_ep_p0"] = makeBlob("gpu_ep", "zero");
    blobs["cpu_ep_p0"] = makeBlob("cpu_ep", std::string("o\0ne", 4));
    blobs["gpu_ep_p1"] = makeBlob("gpu_ep", "two");
    options.sourcePath = "in.onnx";
  }
  mlir::MLIRContext context;
  mlir::OwningOpRef<mlir::ModuleOp> module;
  ortc::EpContextBlobs blobs;
  ortc::EpContextWriteOptions options;
};

TEST_F(EpContextWriterTest, SidecarsRoundTrip) {
  options.embed = ortc::EmbedPolicy::Sidecar;
  std::string error;
  ASSERT_TRUE(ortc::writeEpContextModel(*module, blobs, path, options, error)) << error;
  EXPECT_EQ(listDir(), (std::vector<std::string>{"m_ctx.onnx", "m_ctx_cpu_ep.bin",
                                                 "m_ctx_gpu_ep.bin", "m_ctx_gpu_ep_1.bin"}));
  auto result = loadContextModel(path);
  ASSERT_TRUE(result.isOk()) << result.status().message();
  ContextModel model = result.takeValue();
  ASSERT_EQ(model.nodes.size(), 3u);
  EXPECT_EQ(model.nodes[0].name, "gpu_ep_p0");
  EXPECT_EQ(model.nodes[1].name, "cpu_ep_p0");
  EXPECT_EQ(model.nodes[2].name, "gpu_ep_p1");
  EXPECT_EQ(viewBytes(model.nodes[1].context), std::string("o\0ne", 4));
  EXPECT_EQ(viewBytes(model.nodes[2].context), "two");
  EXPECT_FALSE(model.nodes[2].embedded);
  // Boundary values keep their graph names; the one between partitions gets a
  // fresh name.
  EXPECT_EQ(model.nodes[0].inputs, (std::vector<std::string>{"x"}));
  EXPECT_EQ(model.nodes[0].outputs[0], "relu_out");
  EXPECT_EQ(model.nodes[0].outputs[1], "gpu_ep_p0_out1");
  EXPECT_EQ(model.nodes[2].inputs, (std::vector<std::string>{"cpu_ep_p0_out0", "relu_out"}));
  EXPECT_EQ(model.nodes[2].outputs, (std::vector<std::string>{"y"}));
  ASSERT_EQ(model.outputs.size(), 3u);
  EXPECT_EQ(model.outputs[2].name, "x");
  EXPECT_EQ(model.outputs[0].shape, (std::vector<int64_t>{-1, 4}));
  EXPECT_EQ(model.nodes[1].context.source, "cpu_ep");
  EXPECT_EQ(model.nodes[1].context.partitionName, "cpu_ep_p0");
  // IR version raised to what opset 17 needs.
  EXPECT_EQ(model.proto->ir_version(), 8);
}

TEST_F(EpContextWriterTest, EmbedsByDefaultWhenSmall) {
  std::string error;
  ASSERT_TRUE(ortc::writeEpContextModel(*module, blobs, path, options, error)) << error;
  EXPECT_EQ(listDir(), (std::vector<std::string>{"m_ctx.onnx"}));
  auto result = loadContextModel(path);
  ASSERT_TRUE(result.isOk()) << result.status().message();
  EXPECT_TRUE(result.value().nodes[0].embedded);
  EXPECT_EQ(viewBytes(result.value().nodes[0].context), "zero");
  // Over the automatic limit, sidecars.
  options.autoEmbedLimit = 4;
  ASSERT_TRUE(ortc::writeEpContextModel(*module, blobs, path, options, error)) << error;
  EXPECT_EQ(listDir().size(), 4u);
}

TEST_F(EpContextWriterTest, RefusesEmbeddingOverTheLimit) {
  options.embed = ortc::EmbedPolicy::Embed;
  options.maxEmbeddedBytes = 10;
  std::string error;
  EXPECT_FALSE(ortc::writeEpContextModel(*module, blobs, path, options, error));
  EXPECT_NE(error.find("in.onnx: the compiled partitions total 11 bytes, over protobuf's 2 GB"),
            std::string::npos)
      << error;
  EXPECT_TRUE(listDir().empty());
}

TEST_F(EpContextWriterTest, RefusesMissingBlobsAndUnplacedOps) {
  blobs.erase("cpu_ep_p0");
  std::string error;
  EXPECT_FALSE(ortc::writeEpContextModel(*module, blobs, path, options, error));
  EXPECT_EQ(error, "in.onnx: partition 'cpu_ep_p0' (cpu_ep) has no compiled context");

  const char *unplaced = R"mlir(
module {
  func.func @main_graph(%x: tensor<4xf32> {onnx.name = "x"}) -> (tensor<4xf32> {onnx.name = "y"}) {
    %0 = "onnx.Relu"(%x) : (tensor<4xf32>) -> tensor<4xf32> loc("act")
    return %0 : tensor<4xf32>
  }
}
)mlir";
  auto other = mlir::parseSourceString<mlir::ModuleOp>(unplaced, &context);
  ASSERT_TRUE(other);
  EXPECT_FALSE(ortc::writeEpContextModel(*other, blobs, path, options, error));
  EXPECT_NE(error.find("in.onnx: node 'act' (Relu) is in no partition"), std::string::npos)
      << error;
  EXPECT_TRUE(listDir().empty());
}

TEST_F(EpContextWriterTest, StoresConstantOutputsAsInitializers) {
  const char *folded = R"mlir(
module attributes {onnx.opset_import = {ai.onnx = 18 : i64}} {
  func.func private @cpu_ep_p0(%x: tensor<2xf32>) -> tensor<2xf32> attributes {ortc.ep = "cpu_ep"} {
    %0 = "onnx.Relu"(%x) : (tensor<2xf32>) -> tensor<2xf32>
    return %0 : tensor<2xf32>
  }
  func.func @main_graph(%x: tensor<2xf32> {onnx.name = "x"})
      -> (tensor<2xf32> {onnx.name = "y"}, tensor<2xi64> {onnx.name = "shape"},
          tensor<3xi1> {onnx.name = "mask"}, tensor<2xf32> {onnx.name = "floats"}) {
    %s = "onnx.Constant"() {value = dense<[7, -1]> : tensor<2xi64>} : () -> tensor<2xi64>
    %m = "onnx.Constant"() {value = dense<[true, false, true]> : tensor<3xi1>} : () -> tensor<3xi1>
    %f = "onnx.Constant"() {value_floats = array<f32: 1.0, 2.0>} : () -> tensor<2xf32>
    %0 = call @cpu_ep_p0(%x) : (tensor<2xf32>) -> tensor<2xf32>
    return %0, %s, %m, %f : tensor<2xf32>, tensor<2xi64>, tensor<3xi1>, tensor<2xf32>
  }
}
)mlir";
  auto other = mlir::parseSourceString<mlir::ModuleOp>(folded, &context);
  ASSERT_TRUE(other);
  blobs = {{"cpu_ep_p0", makeBlob("cpu_ep", "p")}};
  std::string error;
  ASSERT_TRUE(ortc::writeEpContextModel(*other, blobs, path, options, error)) << error;
  auto result = loadContextModel(path);
  ASSERT_TRUE(result.isOk()) << result.status().message();
  const ContextModel &model = result.value();
  EXPECT_EQ(model.proto->ir_version(), 8); // opset 18
  ASSERT_EQ(model.constants.size(), 3u);
  EXPECT_EQ(model.constants[0].signature.name, "shape");
  EXPECT_EQ(model.constants[0].signature.type, ortc::ElementType::Int64);
  EXPECT_EQ(model.constants[0].signature.shape, (std::vector<int64_t>{2}));
  int64_t shape[2];
  ASSERT_EQ(model.constants[0].size, sizeof(shape));
  std::memcpy(shape, model.constants[0].data, sizeof(shape));
  EXPECT_EQ(shape[0], 7);
  EXPECT_EQ(shape[1], -1);
  EXPECT_EQ(std::string(model.constants[1].data, model.constants[1].size),
            std::string("\1\0\1", 3));
  float floats[2];
  ASSERT_EQ(model.constants[2].size, sizeof(floats));
  std::memcpy(floats, model.constants[2].data, sizeof(floats));
  EXPECT_EQ(floats[1], 2.0f);
  EXPECT_EQ(model.outputs.size(), 4u);

  // The loader checks an initializer's size against its type and dims.
  onnx::ModelProto proto = *model.proto;
  proto.mutable_graph()->mutable_initializer(0)->add_dims(2);
  expectRefusal(proto, "initializer 'shape' holds 16 bytes of int64, not what its dims need");
}

TEST_F(EpContextWriterTest, LeavesNothingWhenAWriteFails) {
  options.embed = ortc::EmbedPolicy::Sidecar;
  // The third file cannot be put in place: a folder holds its name. The two
  // sidecars already renamed are taken back.
  ASSERT_EQ(::mkdir((dir + "/m_ctx_gpu_ep_1.bin").c_str(), 0755), 0);
  std::string error;
  EXPECT_FALSE(ortc::writeEpContextModel(*module, blobs, path, options, error));
  EXPECT_NE(error.find("m_ctx_gpu_ep_1.bin: cannot move the temporary file into place"),
            std::string::npos)
      << error;
  EXPECT_EQ(listDir(), (std::vector<std::string>{"m_ctx_gpu_ep_1.bin"}));

  // Earlier versions are restored, not lost.
  ::rmdir((dir + "/m_ctx_gpu_ep_1.bin").c_str());
  ASSERT_TRUE(ortc::writeEpContextModel(*module, blobs, path, options, error)) << error;
  std::ifstream before(dir + "/m_ctx_gpu_ep.bin");
  std::string old((std::istreambuf_iterator<char>(before)), {});
  ASSERT_EQ(old, "zero");
  // Now the model's own rename fails (a folder in its place), after the new
  // sidecars replaced the old ones: the old ones come back.
  blobs["gpu_ep_p0"] = makeBlob("gpu_ep", "changed");
  ASSERT_EQ(::unlink(path.c_str()), 0);
  ASSERT_EQ(::mkdir(path.c_str(), 0755), 0);
  EXPECT_FALSE(ortc::writeEpContextModel(*module, blobs, path, options, error));
  std::vector<std::string> left = listDir();
  EXPECT_EQ(left, (std::vector<std::string>{"m_ctx.onnx", "m_ctx_cpu_ep.bin", "m_ctx_gpu_ep.bin",
                                            "m_ctx_gpu_ep_1.bin"}));
  std::ifstream after(dir + "/m_ctx_gpu_ep.bin");
  EXPECT_EQ(std::string((std::istreambuf_iterator<char>(after)), {}), "zero");
  EXPECT_FALSE(ortc::writeEpContextModel(*module, blobs, dir + "/missing/m.onnx", options, error));
  EXPECT_NE(error.find("cannot write in"), std::string::npos) << error;
  EXPECT_EQ(listDir(), left);
}

} // namespace
