//===- CpuPartitionTest.cpp - compile a partition, load its blob, run it --===//
//
// The CPU EP's two halves without the ONNX files around them: an outlined
// partition compiled by CpuCompileEp, its blob loaded by CpuRuntimeEp from a
// memory-mapped file (weights used in place) or from unaligned bytes (copied
// once), and run at several batch sizes against a reference in the test.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/runtime/CpuRuntimeEp.h"
#include "runtime/support/ExternalData.h"

#include "test/unit/ScratchDir.h"
#include "test/unit/cpu/CompileCpuPartition.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <fstream>
#include <unistd.h>

using namespace mlir;

namespace {

// y = relu(x @ w + b) * 2 with a dynamic batch; w is 3x4, b is 4.
constexpr const char *kPartition = R"mlir(
func.func @cpu_ep_p0(%x: tensor<?x3xf32>) -> tensor<?x4xf32> attributes {ortc.ep = "cpu_ep"} {
  %w = "onnx.Constant"() {value = dense<[[1.0, 2.0, 3.0, 4.0], [-1.0, 0.5, 0.0, 2.0], [0.25, -2.0, 1.0, -1.0]]> : tensor<3x4xf32>} : () -> tensor<3x4xf32>
  %b = "onnx.Constant"() {value = dense<[0.5, -0.5, 0.0, 1.0]> : tensor<4xf32>} : () -> tensor<4xf32>
  %two = "onnx.Constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
  %0 = "onnx.MatMul"(%x, %w) : (tensor<?x3xf32>, tensor<3x4xf32>) -> tensor<?x4xf32> loc("matmul")
  %1 = "onnx.Add"(%0, %b) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32> loc("bias")
  %2 = "onnx.Relu"(%1) : (tensor<?x4xf32>) -> tensor<?x4xf32> loc("relu")
  %3 = "onnx.Mul"(%2, %two) : (tensor<?x4xf32>, tensor<f32>) -> tensor<?x4xf32> loc("double")
  return %3 : tensor<?x4xf32>
}
)mlir";

const float kW[3][4] = {{1, 2, 3, 4}, {-1, 0.5f, 0, 2}, {0.25f, -2, 1, -1}};
const float kB[4] = {0.5f, -0.5f, 0, 1};

std::vector<char> compileBlob(const char *source = kPartition) {
  std::optional<ortc::EpContextBlob> blob = ortc::cputest::compileCpuPartition(source);
  if (!blob)
    return {};
  EXPECT_EQ(blob->source, "ortc_cpu");
  EXPECT_NE(blob->notes.find("arena"), std::string::npos) << blob->notes;
  return blob->bytes;
}

void runAndCheck(ortc::LoadedPartition &partition, int64_t batch) {
  std::vector<float> x(batch * 3), y(batch * 4, -99.0f);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(float(i) * 0.7f) * 3;
  std::vector<ortc::TensorView> in{{x.data(), ortc::ElementType::Float, {batch, 3}}};
  auto shapes = partition.outputShapes(in);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().message();
  ASSERT_EQ(shapes.value()[0], (std::vector<int64_t>{batch, 4}));
  std::vector<ortc::TensorView> out{{y.data(), ortc::ElementType::Float, {batch, 4}}};
  ortc::Status status = partition.run(in, out);
  ASSERT_TRUE(status.isOk()) << status.message();
  for (int64_t r = 0; r < batch; ++r)
    for (int c = 0; c < 4; ++c) {
      float acc = kB[c];
      for (int k = 0; k < 3; ++k)
        acc += x[r * 3 + k] * kW[k][c];
      EXPECT_NEAR(y[r * 4 + c], std::max(acc, 0.0f) * 2, 1e-5) << "batch " << batch;
    }
}

TEST(CpuPartition, SidecarWeightsAreUsedInPlaceFromTheMapping) {
  std::vector<char> blob = compileBlob();
  ASSERT_FALSE(blob.empty());
  ortc::testutil::ScratchDir scratch("ortc-cpu-partition");
  std::string path = scratch.file("blob.bin");
  {
    std::ofstream out(path, std::ios::binary);
    out.write(blob.data(), std::streamsize(blob.size()));
  }
  std::string error;
  std::shared_ptr<ortc::MappedFile> mapped = ortc::MappedFile::open(path, error);
  ASSERT_TRUE(mapped) << error;
  ortc::EpContextView view;
  view.source = "ortc_cpu";
  view.partitionName = "cpu_ep_p0";
  view.data = mapped->data();
  view.size = mapped->size();
  auto loaded = ortc::cpu::PlanExecutor::load(view);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  EXPECT_TRUE(loaded.value()->weightsInPlace());
  // The batch grows and shrinks; the arena is laid out once per batch seen.
  for (int64_t batch : {1, 5, 2, 33, 5})
    runAndCheck(*loaded.value(), batch);
  EXPECT_EQ(loaded.value()->cachedLayouts(), 4u);
  auto arenaAt = [&](int64_t batch) {
    std::vector<float> x(size_t(batch) * 3);
    std::vector<ortc::TensorView> in{{x.data(), ortc::ElementType::Float, {batch, 3}}};
    return loaded.value()->arenaBytes(in).value();
  };
  EXPECT_GE(arenaAt(64), arenaAt(1));
}

TEST(CpuPartition, UnalignedBytesAreCopiedOnceAndStillRun) {
  std::vector<char> blob = compileBlob();
  ASSERT_FALSE(blob.empty());
  // An inline blob inside a protobuf may start at any address.
  std::vector<char> shifted(blob.size() + 1);
  std::memcpy(shifted.data() + 1, blob.data(), blob.size());
  ortc::cpu::CpuRuntimeEp ep;
  ortc::EpContextView view;
  view.source = "ortc_cpu";
  view.partitionName = "cpu_ep_p0";
  view.data = shifted.data() + 1;
  view.size = blob.size();
  auto loaded = ortc::cpu::PlanExecutor::load(view);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  EXPECT_FALSE(loaded.value()->weightsInPlace());
  std::fill(shifted.begin(), shifted.end(), 0); // the copy does not need them
  runAndCheck(*loaded.value(), 3);
}

TEST(CpuPartition, RefusesInputsThatDoNotMatchTheSignature) {
  std::vector<char> blob = compileBlob();
  ASSERT_FALSE(blob.empty());
  ortc::cpu::CpuRuntimeEp ep;
  ortc::EpContextView view;
  view.source = "ortc_cpu";
  view.partitionName = "cpu_ep_p0";
  view.data = blob.data();
  view.size = blob.size();
  auto loaded = ep.loadContext(view);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  ortc::LoadedPartition &p = *loaded.value();
  std::vector<float> x(12), y(16);
  auto run = [&](ortc::ElementType type, std::vector<int64_t> inShape,
                 std::vector<int64_t> outShape) {
    std::vector<ortc::TensorView> in{{x.data(), type, inShape}};
    std::vector<ortc::TensorView> out{{y.data(), ortc::ElementType::Float, outShape}};
    return p.run(in, out);
  };
  ortc::Status wrongType = run(ortc::ElementType::Double, {4, 3}, {4, 4});
  EXPECT_EQ(wrongType.code(), ortc::StatusCode::InvalidArgument);
  EXPECT_NE(wrongType.message().find("input 'input0' must be float32[?,3], got float64[4,3]"),
            std::string::npos)
      << wrongType.message();
  EXPECT_FALSE(run(ortc::ElementType::Float, {4, 2}, {4, 4}).isOk());
  EXPECT_FALSE(run(ortc::ElementType::Float, {4, 3}, {3, 4}).isOk()); // output batch differs
  EXPECT_FALSE(run(ortc::ElementType::Float, {4, 3, 1}, {4, 4}).isOk());
  EXPECT_TRUE(run(ortc::ElementType::Float, {4, 3}, {4, 4}).isOk());

  // Given the EPContext node's value names, messages use them.
  view.inputNames = {"features"};
  view.outputNames = {"logits"};
  auto named = ep.loadContext(view);
  ASSERT_TRUE(named.isOk()) << named.status().message();
  std::vector<ortc::TensorView> in{{x.data(), ortc::ElementType::Double, {4, 3}}};
  std::vector<ortc::TensorView> out{{y.data(), ortc::ElementType::Float, {4, 4}}};
  ortc::Status namedError = named.value()->run(in, out);
  EXPECT_NE(namedError.message().find("input 'features' must be float32[?,3]"), std::string::npos)
      << namedError.message();
  EXPECT_EQ(named.value()->outputs()[0].name, "logits");
}

TEST(CpuPartition, RefusesABlobOfAnotherEpOrACorruptedOne) {
  std::vector<char> blob = compileBlob();
  ASSERT_FALSE(blob.empty());
  ortc::EpContextView view;
  view.partitionName = "cpu_ep_p0";
  view.data = blob.data();
  view.size = blob.size() - 1;
  auto truncated = ortc::cpu::PlanExecutor::load(view);
  EXPECT_FALSE(truncated.isOk());
  std::vector<char> corrupted = blob;
  corrupted[corrupted.size() / 2] ^= 1;
  view.data = corrupted.data();
  view.size = corrupted.size();
  auto flipped = ortc::cpu::PlanExecutor::load(view);
  ASSERT_FALSE(flipped.isOk());
  EXPECT_NE(flipped.status().message().find("partition 'cpu_ep_p0'"), std::string::npos);
}

// The positive elements' positions, and the count times 2 summed by a Loop
// that runs n times: a data-sized output, and a Loop whose carried value is
// the loop-invariant sum.
constexpr const char *kDataSized = R"mlir(
func.func @cpu_ep_p0(%x: tensor<?xf32> {onnx.dim_params = ["n"]}, %n: tensor<i64>) -> (tensor<1x?xi64>, tensor<f32>) attributes {ortc.ep = "cpu_ep"} {
  %zero = "onnx.Constant"() {value = dense<0.0> : tensor<f32>} : () -> tensor<f32>
  %none = "onnx.NoValue"() : () -> none
  %pos = "onnx.Greater"(%x, %zero) : (tensor<?xf32>, tensor<f32>) -> tensor<?xi1> loc("pos")
  %nz = "onnx.NonZero"(%pos) : (tensor<?xi1>) -> tensor<1x?xi64> loc("nz")
  %sum = "onnx.Loop"(%n, %none, %zero) ({
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<f32>):
    %two = "onnx.Constant"() {value = dense<2.0> : tensor<f32>} : () -> tensor<f32>
    %next = "onnx.Add"(%acc, %two) : (tensor<f32>, tensor<f32>) -> tensor<f32>
    "onnx.Yield"(%c, %next) : (tensor<i1>, tensor<f32>) -> ()
  }) : (tensor<i64>, none, tensor<f32>) -> tensor<f32> loc("loop")
  return %nz, %sum : tensor<1x?xi64>, tensor<f32>
}
)mlir";

TEST(CpuPartition, DataSizedOutputsAreAllocatedWhenTheirStepHasRun) {
  std::vector<char> blob = compileBlob(kDataSized);
  ASSERT_FALSE(blob.empty());
  auto loaded = ortc::cputest::loadCpuBlob(blob);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  ortc::LoadedPartition &partition = *loaded.value();

  std::vector<float> x{1, -2, 3, 0, 5, -1};
  int64_t trips = 4;
  std::vector<ortc::TensorView> in{{x.data(), ortc::ElementType::Float, {6}},
                                   {&trips, ortc::ElementType::Int64, {}}};
  // The count is known only once NonZero has run.
  auto shapes = partition.outputShapes(in);
  ASSERT_TRUE(shapes.isOk()) << shapes.status().message();
  EXPECT_EQ(shapes.value()[0], (std::vector<int64_t>{1, -1}));
  EXPECT_EQ(shapes.value()[1], (std::vector<int64_t>{}));

  float sum = -1;
  std::vector<ortc::TensorView> out{{nullptr, ortc::ElementType::Int64, {1, -1}},
                                    {&sum, ortc::ElementType::Float, {}}};
  ortc::Status refused = partition.run(in, out);
  ASSERT_FALSE(refused.isOk());
  EXPECT_NE(refused.message().find("is sized by the data; run it with an output allocator"),
            std::string::npos)
      << refused.message();

  std::vector<int64_t> found(8, -7);
  std::vector<std::vector<int64_t>> asked;
  ortc::OutputAllocator allocate = [&](size_t i, const std::vector<int64_t> &shape)
      -> ortc::Result<void *> {
    EXPECT_EQ(i, 0u);
    asked.push_back(shape);
    return static_cast<void *>(found.data());
  };
  ortc::Status status = partition.run(in, out, allocate);
  ASSERT_TRUE(status.isOk()) << status.message();
  ASSERT_EQ(asked, (std::vector<std::vector<int64_t>>{{1, 3}}));
  EXPECT_EQ(std::vector<int64_t>(found.begin(), found.begin() + 3),
            (std::vector<int64_t>{0, 2, 4}));
  EXPECT_EQ(sum, 8.0f); // four iterations of + 2

  // None found and no iteration: an empty output, the initial value.
  std::vector<float> negative{-1, -2};
  trips = 0;
  std::vector<ortc::TensorView> in2{{negative.data(), ortc::ElementType::Float, {2}},
                                    {&trips, ortc::ElementType::Int64, {}}};
  asked.clear();
  status = partition.run(in2, out, allocate);
  ASSERT_TRUE(status.isOk()) << status.message();
  EXPECT_EQ(asked, (std::vector<std::vector<int64_t>>{{1, 0}}));
  EXPECT_EQ(sum, 0.0f);

  // The allocator's refusal is the run's.
  ortc::OutputAllocator refuse = [](size_t, const std::vector<int64_t> &) -> ortc::Result<void *> {
    return ortc::Status::error(ortc::StatusCode::InvalidArgument, "no room for it");
  };
  status = partition.run(in, out, refuse);
  ASSERT_FALSE(status.isOk());
  EXPECT_NE(status.message().find("no room for it"), std::string::npos) << status.message();
}

} // namespace
