//===- ImporterTest.cpp - ModelProto to MLIR, built in C++ ----------------===//

#include "compiler/Import/OnnxImporter.h"
#include "compiler/Transforms/ConstantValues.h"

#include "onnx/onnx_pb.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinDialect.h"
#include "mlir/IR/DialectResourceBlobManager.h"
#include "mlir/IR/MLIRContext.h"

#include "test/unit/ScratchDir.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <sstream>
#include <unistd.h>

namespace {

onnx::ValueInfoProto *addValue(google::protobuf::RepeatedPtrField<onnx::ValueInfoProto> *list,
                               const std::string &name, int elemType,
                               std::initializer_list<int64_t> dims) {
  onnx::ValueInfoProto *value = list->Add();
  value->set_name(name);
  auto *tensor = value->mutable_type()->mutable_tensor_type();
  tensor->set_elem_type(elemType);
  for (int64_t d : dims) {
    auto *dim = tensor->mutable_shape()->add_dim();
    if (d < 0)
      dim->set_dim_param("N");
    else
      dim->set_dim_value(d);
  }
  return value;
}

// y = Add(x, w) with w a 4-float initializer in raw_data.
/// The last op named `name` under `root` (the one walk found), or null.
mlir::Operation *lastOpNamed(mlir::Operation *root, llvm::StringRef name) {
  mlir::Operation *found = nullptr;
  root->walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef() == name)
      found = op;
  });
  return found;
}

onnx::ModelProto makeAddModel() {
  onnx::ModelProto model;
  model.set_ir_version(8);
  model.add_opset_import()->set_version(17);
  auto *graph = model.mutable_graph();
  graph->set_name("g");
  addValue(graph->mutable_input(), "x", onnx::TensorProto::FLOAT, {-1, 4});
  addValue(graph->mutable_output(), "y", onnx::TensorProto::FLOAT, {-1, 4});
  auto *w = graph->add_initializer();
  w->set_name("w");
  w->set_data_type(onnx::TensorProto::FLOAT);
  w->add_dims(4);
  float values[4] = {1, 2, 3, 4};
  w->set_raw_data(std::string(reinterpret_cast<char *>(values), sizeof(values)));
  auto *node = graph->add_node();
  node->set_name("add0");
  node->set_op_type("Add");
  node->add_input("x");
  node->add_input("w");
  node->add_output("y");
  return model;
}

TEST(ImporterTest, ImportsAddWithResourceBackedInitializer) {
  mlir::MLIRContext context;
  onnx::ModelProto model = makeAddModel();
  const char *rawBytes = model.graph().initializer(0).raw_data().data();
  std::string error;
  auto module = ortc::importOnnxModel(context, model, "mem.onnx", error);
  ASSERT_TRUE(module) << error;

  auto func = module->lookupSymbol<mlir::func::FuncOp>("main_graph");
  ASSERT_TRUE(func);
  EXPECT_EQ(func.getNumArguments(), 1u);
  auto argName = func.getArgAttrOfType<mlir::StringAttr>(0, "onnx.name");
  ASSERT_TRUE(argName);
  EXPECT_EQ(argName.getValue(), "x");
  auto params = func.getArgAttrOfType<mlir::ArrayAttr>(0, "onnx.dim_params");
  ASSERT_TRUE(params);
  EXPECT_EQ(mlir::cast<mlir::StringAttr>(params[0]).getValue(), "N");

  // The initializer's bytes moved into the resource: same address, no copy.
  mlir::Operation *constant = lastOpNamed(func, "onnx.Constant");
  ASSERT_NE(constant, nullptr);
  auto resource = mlir::dyn_cast<mlir::DenseResourceElementsAttr>(constant->getAttr("value"));
  ASSERT_TRUE(resource);
  mlir::AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  ASSERT_NE(blob, nullptr);
  EXPECT_EQ(blob->getData().data(), rawBytes);
  EXPECT_EQ(blob->getData().size(), 16u);
  EXPECT_FALSE(model.graph().initializer(0).has_raw_data());

  bool sawAdd = false;
  func.walk([&](mlir::Operation *op) { sawAdd |= op->getName().getStringRef() == "onnx.Add"; });
  EXPECT_TRUE(sawAdd);
}

TEST(ImporterTest, ErrorsNameTheNode) {
  mlir::MLIRContext context;
  onnx::ModelProto model = makeAddModel();
  model.mutable_graph()->mutable_node(0)->set_input(1, "missing");
  std::string error;
  EXPECT_FALSE(ortc::importOnnxModel(context, model, "m.onnx", error));
  EXPECT_NE(error.find("m.onnx"), std::string::npos) << error;
  EXPECT_NE(error.find("node 'add0' (Add)"), std::string::npos) << error;
  EXPECT_NE(error.find("'missing'"), std::string::npos) << error;
  EXPECT_EQ(error.find('\n'), std::string::npos) << error;
}

TEST(ImporterTest, RawDataSizeMismatchNamesTheInitializer) {
  mlir::MLIRContext context;
  onnx::ModelProto model = makeAddModel();
  model.mutable_graph()->mutable_initializer(0)->mutable_raw_data()->resize(15);
  std::string error;
  EXPECT_FALSE(ortc::importOnnxModel(context, model, "m.onnx", error));
  EXPECT_NE(error.find("initializer 'w'"), std::string::npos) << error;
  EXPECT_NE(error.find("15 bytes"), std::string::npos) << error;
}

TEST(ImporterTest, UnknownOpsBecomeGeneric) {
  mlir::MLIRContext context;
  onnx::ModelProto model = makeAddModel();
  auto *opset = model.add_opset_import();
  opset->set_domain("com.microsoft");
  opset->set_version(1);
  auto *node = model.mutable_graph()->mutable_node(0);
  node->set_domain("com.microsoft");
  node->set_op_type("FusedAdd");
  auto *attr = node->add_attribute();
  attr->set_name("alpha");
  attr->set_type(onnx::AttributeProto::FLOAT);
  attr->set_f(0.5f);
  std::string error;
  auto module = ortc::importOnnxModel(context, model, "m.onnx", error);
  ASSERT_TRUE(module) << error;
  mlir::Operation *generic = lastOpNamed(*module, "onnx.Generic");
  ASSERT_NE(generic, nullptr);
  EXPECT_EQ(mlir::cast<mlir::StringAttr>(generic->getAttr("op_type")).getValue(), "FusedAdd");
  EXPECT_EQ(mlir::cast<mlir::StringAttr>(generic->getAttr("domain")).getValue(), "com.microsoft");
  auto attrs = mlir::cast<mlir::DictionaryAttr>(generic->getAttr("onnx_attrs"));
  EXPECT_TRUE(attrs.get("alpha"));
}

// True if `ptr` lies in a mapping of a file whose path ends with `suffix`.
bool isInFileMapping(const void *ptr, const std::string &suffix) {
  std::ifstream maps("/proc/self/maps");
  std::string line;
  auto address = reinterpret_cast<uintptr_t>(ptr);
  while (std::getline(maps, line)) {
    std::istringstream fields(line);
    std::string range, perms, offset, dev, inode, path;
    fields >> range >> perms >> offset >> dev >> inode >> path;
    size_t dash = range.find('-');
    uintptr_t begin = std::stoull(range.substr(0, dash), nullptr, 16);
    uintptr_t end = std::stoull(range.substr(dash + 1), nullptr, 16);
    if (address >= begin && address < end)
      return path.size() >= suffix.size() &&
             path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
  }
  return false;
}

TEST(ImporterTest, ExternalDataIsMappedNotCopied) {
  // Declared first, so removed last: after the module has unmapped the file.
  ortc::testutil::ScratchDir scratch("ortc-import");
  std::string dir = scratch.path();
  float values[4] = {1, 2, 3, 4};
  std::ofstream(dir + "/weights.bin", std::ios::binary)
      .write(reinterpret_cast<char *>(values), sizeof(values));

  mlir::MLIRContext context;
  onnx::ModelProto model = makeAddModel();
  auto *w = model.mutable_graph()->mutable_initializer(0);
  w->clear_raw_data();
  w->set_data_location(onnx::TensorProto::EXTERNAL);
  auto *location = w->add_external_data();
  location->set_key("location");
  location->set_value("weights.bin");
  std::string error;
  auto module = ortc::importOnnxModel(context, model, dir + "/model.onnx", error);
  ASSERT_TRUE(module) << error;
  mlir::Operation *constant = lastOpNamed(*module, "onnx.Constant");
  ASSERT_NE(constant, nullptr);
  auto resource = mlir::cast<mlir::DenseResourceElementsAttr>(constant->getAttr("value"));
  mlir::AsmResourceBlob *blob = resource.getRawHandle().getBlob();
  ASSERT_NE(blob, nullptr);
  ASSERT_EQ(blob->getData().size(), sizeof(values));
  EXPECT_EQ(std::memcmp(blob->getData().data(), values, sizeof(values)), 0);
  EXPECT_TRUE(isInFileMapping(blob->getData().data(), "/weights.bin"));
  // The CPU EP reads such a constant where it is mapped: no copy.
  std::optional<ortc::ConstantBytes> bytes = ortc::constantBytesInPlace(constant);
  ASSERT_TRUE(bytes);
  EXPECT_EQ(bytes->data(), blob->getData().data());
  EXPECT_EQ(bytes->size(), sizeof(values));
}

// constantBytesInPlace: the resource's own bytes where they are aligned for
// the element type; a copy of the same values where they are not.
TEST(ImporterTest, ConstantBytesAreReadInPlaceOnlyWhereAligned) {
  mlir::MLIRContext context;
  onnx::ModelProto model = makeAddModel();
  std::string error;
  auto module = ortc::importOnnxModel(context, model, "model.onnx", error);
  ASSERT_TRUE(module) << error;
  mlir::Operation *constant = lastOpNamed(*module, "onnx.Constant");
  ASSERT_NE(constant, nullptr);
  auto resource = mlir::cast<mlir::DenseResourceElementsAttr>(constant->getAttr("value"));
  llvm::ArrayRef<char> held = resource.getRawHandle().getBlob()->getData();
  std::optional<ortc::ConstantBytes> inPlace = ortc::constantBytesInPlace(constant);
  ASSERT_TRUE(inPlace);
  EXPECT_EQ(inPlace->data(), held.data());

  alignas(8) char storage[17];
  std::memcpy(storage + 1, held.data(), 16);
  constant->setAttr("value", mlir::DenseResourceElementsAttr::get(
                                 resource.getType(), "odd",
                                 mlir::UnmanagedAsmResourceBlob::allocateWithAlign(
                                     llvm::ArrayRef<char>(storage + 1, 16), 1)));
  std::optional<ortc::ConstantBytes> copied = ortc::constantBytesInPlace(constant);
  ASSERT_TRUE(copied);
  EXPECT_NE(copied->data(), storage + 1);
  ASSERT_EQ(copied->size(), 16u);
  EXPECT_EQ(std::memcmp(copied->data(), storage + 1, 16), 0);
}

} // namespace
