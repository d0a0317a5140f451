//===- CpuClaimHonestyTest.cpp - every node cpu_ep claims compiles --------===//
//
// The claim-honesty harness over the test models of the lit suite, after the
// generic pipeline (which is what the CPU EP sees in `ortc compile`): each
// node cpu_ep answers Supported for is outlined alone and compiled to a blob,
// and the blob is loaded by the runtime half and run, at batch 1 and 3 when
// the node has a dynamic batch: a claim must hold at every shape it admits.
//
//===----------------------------------------------------------------------===//

#include "compiler/Import/OnnxImporter.h"
#include "compiler/Partition/ClaimHonesty.h"
#include "compiler/Transforms/Passes.h"
#include "providers/cpu/compile/CpuCompileEp.h"
#include "providers/cpu/runtime/CpuRuntimeEp.h"
#include "runtime/session/Session.h"

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/PassManager.h"
#include "onnx/onnx_pb.h"

#include <google/protobuf/text_format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <sstream>

namespace {

using ortc::ElementType;

// Values a run may be fed without knowing what the node does: small floats,
// false for bools. Integer inputs may be indices, divisors or shapes, which
// only the model knows, so nodes that take them are compiled but not run.
bool fill(const ortc::TensorView &t, uint32_t seed) {
  int64_t n = t.numElements();
  if (t.type == ElementType::Float) {
    float *data = static_cast<float *>(t.data);
    for (int64_t i = 0; i < n; ++i)
      data[i] = float(int((seed + 7 * i) % 17) - 8) / 8.0f;
    return true;
  }
  if (t.type == ElementType::Bool) {
    std::memset(t.data, 0, t.byteSize());
    return true;
  }
  return false;
}

// Loads the compiled claim with the runtime half and runs it at each batch
// size its signature admits; "" when every run succeeds with the outputs
// shaped as outputShapes() said.
struct ClaimRunner {
  int ran = 0, skipped = 0, refusedData = 0;

  std::string operator()(ortc::CompileEp &ep, ortc::CompiledPartition &&compiled) {
    mlir::FailureOr<ortc::EpContextBlob> blob = ep.saveContext(std::move(compiled));
    if (mlir::failed(blob))
      return "saveContext failed";
    ortc::cpu::CpuRuntimeEp runtime;
    ortc::EpConfig config;
    config.intraOpThreads = 1;
    if (ortc::Status s = runtime.initialize(config); !s.isOk())
      return s.message();
    ortc::EpContextView view;
    view.source = blob->source;
    view.partitionName = "claim";
    view.hardwareArchitecture = blob->hardwareArchitecture;
    view.epSdkVersion = blob->epSdkVersion;
    view.data = blob->bytes.data();
    view.size = blob->bytes.size();
    auto loaded = runtime.loadContext(view);
    if (!loaded.isOk())
      return "loadContext: " + loaded.status().message();
    ortc::LoadedPartition &partition = *loaded.value();
    bool dynamic = false;
    for (const auto &sig : partition.inputs()) {
      // A sequence's tensors are data this runner cannot make up (their
      // shapes are not in the signature): compiled, not run.
      if (sig.kind != ortc::ValueKind::Tensor) {
        ++skipped;
        return "";
      }
      for (int64_t d : sig.shape)
        dynamic |= d < 0;
    }
    for (int64_t batch : dynamic ? std::vector<int64_t>{1, 3} : std::vector<int64_t>{1}) {
      std::vector<ortc::OwnedTensor> inputs;
      std::vector<ortc::TensorView> inputViews;
      for (const auto &sig : partition.inputs()) {
        std::vector<int64_t> shape = sig.shape;
        for (int64_t &d : shape)
          d = d < 0 ? batch : d;
        inputs.push_back(ortc::OwnedTensor::allocate(sig.type, shape));
        inputViews.push_back(inputs.back().view());
        if (!fill(inputViews.back(), uint32_t(batch) * 31 + uint32_t(inputs.size()))) {
          ++skipped;
          return "";
        }
      }
      auto shapes = partition.outputShapes(inputViews);
      if (!shapes.isOk())
        return "batch " + std::to_string(batch) + ": outputShapes: " + shapes.status().message();
      // Outputs sized by the data (a dim of -1) are allocated when asked;
      // a sequence output is a SequenceValue of its own.
      std::vector<ortc::OwnedTensor> outputs(partition.outputs().size());
      std::vector<ortc::SequenceValue> sequences(partition.outputs().size());
      std::vector<ortc::TensorView> outputViews;
      for (size_t i = 0; i < partition.outputs().size(); ++i) {
        const auto &sig = partition.outputs()[i];
        const std::vector<int64_t> &shape = shapes.value()[i];
        if (sig.kind != ortc::ValueKind::Tensor)
          outputViews.push_back(ortc::TensorView{&sequences[i], sig.type, {}});
        else if (std::find(shape.begin(), shape.end(), -1) != shape.end())
          outputViews.push_back(ortc::TensorView{nullptr, sig.type, shape});
        else {
          outputs[i] = ortc::OwnedTensor::allocate(sig.type, shape);
          outputViews.push_back(outputs[i].view());
        }
      }
      ortc::OutputAllocator allocate =
          [&](size_t i, const std::vector<int64_t> &shape) -> ortc::Result<void *> {
        outputs[i] = ortc::OwnedTensor::allocate(partition.outputs()[i].type, shape);
        return static_cast<void *>(outputs[i].data.get());
      };
      if (ortc::Status s = partition.run(inputViews, outputViews, allocate); !s.isOk()) {
        // An output the data sizes (Resize by run-time scales) may be refused
        // for made-up values (a negative scale): the claim compiled, and the
        // kernel's check is what the run met.
        bool dataSized = false;
        for (const std::vector<int64_t> &shape : shapes.value())
          dataSized |= std::find(shape.begin(), shape.end(), -1) != shape.end();
        if (dataSized && s.code() == ortc::StatusCode::InvalidArgument) {
          ++refusedData;
          return "";
        }
        return "batch " + std::to_string(batch) + ": run: " + s.message();
      }
    }
    ++ran;
    return "";
  }
};

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
  ClaimRunner runner;
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
    context.getDiagEngine().registerHandler(
        [](mlir::Diagnostic &) {}); // failures are reported below
    mlir::PassManager pm(&context);
    ortc::buildGenericOnnxPipeline(pm);
    if (mlir::failed(pm.run(*module)))
      continue;
    ++models;
    ortc::ClaimHonestyResult result =
        ortc::checkClaimHonesty(*module, eps, [&](ortc::CompileEp &ep, auto &&compiled) {
          return runner(ep, std::move(compiled));
        });
    claims += result.claims;
    for (const auto &f : result.failures)
      ADD_FAILURE() << file << ": cpu_ep claimed node '" << f.node << "' (" << f.op
                    << ") and failed to compile or run it: " << f.message;
  }
  EXPECT_GE(models, 10);
  EXPECT_GE(claims, 20);
  EXPECT_GE(runner.ran, 20);
  std::cout << "cpu_ep: " << claims << " claims over " << models << " models, all compiled; "
            << runner.ran << " loaded and run (at batch 1 and 3 where dynamic), " << runner.skipped
            << " with integer inputs compiled only, " << runner.refusedData
            << " sized by the data refused made-up inputs\n";
}

} // namespace
