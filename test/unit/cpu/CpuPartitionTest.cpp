//===- CpuPartitionTest.cpp - compile a partition, load its blob, run it --===//
//
// The CPU EP's two halves without the ONNX files around them: an outlined
// partition compiled by CpuCompileEp, its blob loaded by CpuRuntimeEp from a
// memory-mapped file (weights used in place) or from unaligned bytes (copied
// once), and run at several batch sizes against a reference in the test.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/blob/CpuBlob.h"
#include "providers/cpu/kernels/ThreadPool.h"
#include "providers/cpu/runtime/CpuRuntimeEp.h"
#include "providers/cpu/runtime/HostCpu.h"
#include "runtime/support/ExternalData.h"

#include "runtime/support/BlobContainer.h"
#include "test/unit/ScratchDir.h"
#include "test/unit/common/MappedPages.h"
#include "test/unit/cpu/CompileCpuPartition.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
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

// A constant [rows, 256] of float32 whose element (r, c) is sign * (r * 256 + c),
// as a hex dense literal.
std::string tableLiteral(int64_t rows, float sign) {
  static const char digits[] = "0123456789ABCDEF";
  std::string text = "dense<\"0x";
  for (int64_t i = 0; i < rows * 256; ++i) {
    float v = sign * float(i);
    unsigned char bytes[4];
    std::memcpy(bytes, &v, 4);
    for (unsigned char b : bytes) {
      text += digits[b >> 4];
      text += digits[b & 15];
    }
  }
  return text + "\"> : tensor<" + std::to_string(rows) + "x256xf32>";
}

TEST(CpuPartition, GatheredTablesLieInRowsWhosePagesComeBackByTheRow) {
  // `table` (1 MiB) is only gathered on axis 0: a row table. `columns` is
  // gathered on axis 1, which reads every row, and `small` is under 1 MiB:
  // both stay in WGHT.
  std::string source = R"mlir(
func.func @cpu_ep_p0(%ids: tensor<3xi64>, %few: tensor<2xi64>) -> (tensor<3x256xf32>, tensor<1024x2xf32>, tensor<2x256xf32>) attributes {ortc.ep = "cpu_ep"} {
  %t = "onnx.Constant"() {value = TABLE} : () -> tensor<1024x256xf32> loc("table")
  %u = "onnx.Constant"() {value = COLUMNS} : () -> tensor<1024x256xf32> loc("columns")
  %s = "onnx.Constant"() {value = SMALL} : () -> tensor<16x256xf32> loc("small")
  %0 = "onnx.Gather"(%t, %ids) {axis = 0 : i64} : (tensor<1024x256xf32>, tensor<3xi64>) -> tensor<3x256xf32> loc("rows")
  %1 = "onnx.Gather"(%u, %few) {axis = 1 : i64} : (tensor<1024x256xf32>, tensor<2xi64>) -> tensor<1024x2xf32> loc("cols")
  %2 = "onnx.Gather"(%s, %few) {axis = 0 : i64} : (tensor<16x256xf32>, tensor<2xi64>) -> tensor<2x256xf32> loc("few")
  return %0, %1, %2 : tensor<3x256xf32>, tensor<1024x2xf32>, tensor<2x256xf32>
}
)mlir";
  for (auto [key, value] :
       std::vector<std::pair<std::string, std::string>>{{"TABLE", tableLiteral(1024, 1)},
                                                        {"COLUMNS", tableLiteral(1024, -1)},
                                                        {"SMALL", tableLiteral(16, 2)}})
    source.replace(source.find(key), key.size(), value);
  std::vector<char> blob = compileBlob(source.c_str());
  ASSERT_FALSE(blob.empty());
  auto view = ortc::cpu::openCpuBlob(blob.data(), blob.size(), "test",
                                     ortc::cpu::hostArchitecture(), ortc::cpu::hostCpuFeatures());
  ASSERT_TRUE(view.isOk()) << view.status().message();
  EXPECT_EQ(view.value().rowsSize, size_t(1) << 20);
  for (const auto *buffer : *view.value().plan->buffers()) {
    std::string name = buffer->name() ? buffer->name()->str() : "";
    if (buffer->kind() == ortc::cpu::fb::BufferKind::Weight)
      EXPECT_EQ(buffer->row_table(), name == "table") << name;
  }

  // Written as the EPContext writer writes sidecars and mapped as the
  // runtime maps them: the load gives ROWS' pages back as it hashes them
  // (all but those across a checksum chunk's edge); a run maps back the rows
  // it reads and little around them.
  ortc::testutil::ScratchDir scratch("ortc-cpu-partition");
  std::string path = scratch.file("blob.bin");
  {
    std::ofstream out(path, std::ios::binary);
    for (auto [offset, length] : ortc::blobWritePieces(blob.data(), blob.size()))
      out.write(blob.data() + offset, std::streamsize(length));
  }
  std::string error;
  std::shared_ptr<ortc::MappedFile> mapped = ortc::MappedFile::open(path, error);
  ASSERT_TRUE(mapped) << error;
  ortc::EpContextView context;
  context.source = "ortc_cpu";
  context.partitionName = "cpu_ep_p0";
  context.data = mapped->data();
  context.size = mapped->size();
  context.fileMapping = true;
  auto loaded = ortc::cpu::PlanExecutor::load(context);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  const char *base = static_cast<const char *>(mapped->data());
  const char *rows = base + (view.value().rows - blob.data());
  long loadedPages = ortc::testutil::presentPages(rows, view.value().rowsSize);
  if (loadedPages >= 0)
    EXPECT_LE(loadedPages, 3) << "ROWS pages mapped after the load";

  std::vector<int64_t> ids = {1000, 7, 513}, few = {15, 0};
  std::vector<float> y0(3 * 256), y1(1024 * 2), y2(2 * 256);
  std::vector<ortc::TensorView> in{{ids.data(), ortc::ElementType::Int64, {3}},
                                   {few.data(), ortc::ElementType::Int64, {2}}};
  std::vector<ortc::TensorView> out{{y0.data(), ortc::ElementType::Float, {3, 256}},
                                    {y1.data(), ortc::ElementType::Float, {1024, 2}},
                                    {y2.data(), ortc::ElementType::Float, {2, 256}}};
  ortc::Status status = loaded.value()->run(in, out);
  ASSERT_TRUE(status.isOk()) << status.message();
  for (int i = 0; i < 3; ++i)
    for (int c = 0; c < 256; ++c)
      ASSERT_EQ(y0[i * 256 + c], float(ids[i] * 256 + c)) << i << "," << c;
  for (int i = 0; i < 2; ++i) {
    for (int c = 0; c < 256; ++c)
      ASSERT_EQ(y2[i * 256 + c], 2 * float(few[i] * 256 + c)) << i << "," << c;
    for (int r = 0; r < 1024; ++r)
      ASSERT_EQ(y1[size_t(r) * 2 + i], -float(r * 256 + few[i])) << r << "," << i;
  }
  long ranPages = ortc::testutil::presentPages(rows, view.value().rowsSize);
  if (ranPages >= 0)
    EXPECT_LE(ranPages, 3 + 3 * 16) << "ROWS pages mapped after gathering 3 rows";
  else
    std::printf("note: /proc/self/pagemap cannot be read here; residency not checked\n");
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

// Kernels with one body are compiled once: two groups that add the same
// constant and apply Relu call one generated function, a group with
// another constant its own; a chain longer than a kernel may fuse is cut
// into kernels (130 Negs of x: 64, 64 and 2, the first two one function).
// The profile names every step and its output shape; the numbers are
// what the ops compute.
TEST(CpuPartition, KernelsWithOneBodyAreCompiledOnce) {
  const char *source = R"mlir(
func.func @main(%x: tensor<2x8xf32>, %w: tensor<8x8xf32>) -> (tensor<2x8xf32>, tensor<2x8xf32>) {
  %c = "onnx.Constant"() {value = dense<0.5> : tensor<8xf32>} : () -> tensor<8xf32>
  %d = "onnx.Constant"() {value = dense<0.25> : tensor<8xf32>} : () -> tensor<8xf32>
  %a0 = "onnx.Add"(%x, %c) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %r0 = "onnx.Relu"(%a0) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %m0 = "onnx.MatMul"(%r0, %w) : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %a1 = "onnx.Add"(%m0, %c) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %r1 = "onnx.Relu"(%a1) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %m1 = "onnx.MatMul"(%r1, %w) : (tensor<2x8xf32>, tensor<8x8xf32>) -> tensor<2x8xf32>
  %a2 = "onnx.Add"(%m1, %d) : (tensor<2x8xf32>, tensor<8xf32>) -> tensor<2x8xf32>
  %r2 = "onnx.Relu"(%a2) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n0 = "onnx.Neg"(%x) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n1 = "onnx.Neg"(%n0) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n2 = "onnx.Neg"(%n1) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n3 = "onnx.Neg"(%n2) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n4 = "onnx.Neg"(%n3) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n5 = "onnx.Neg"(%n4) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n6 = "onnx.Neg"(%n5) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n7 = "onnx.Neg"(%n6) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n8 = "onnx.Neg"(%n7) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n9 = "onnx.Neg"(%n8) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n10 = "onnx.Neg"(%n9) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n11 = "onnx.Neg"(%n10) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n12 = "onnx.Neg"(%n11) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n13 = "onnx.Neg"(%n12) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n14 = "onnx.Neg"(%n13) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n15 = "onnx.Neg"(%n14) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n16 = "onnx.Neg"(%n15) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n17 = "onnx.Neg"(%n16) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n18 = "onnx.Neg"(%n17) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n19 = "onnx.Neg"(%n18) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n20 = "onnx.Neg"(%n19) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n21 = "onnx.Neg"(%n20) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n22 = "onnx.Neg"(%n21) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n23 = "onnx.Neg"(%n22) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n24 = "onnx.Neg"(%n23) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n25 = "onnx.Neg"(%n24) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n26 = "onnx.Neg"(%n25) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n27 = "onnx.Neg"(%n26) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n28 = "onnx.Neg"(%n27) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n29 = "onnx.Neg"(%n28) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n30 = "onnx.Neg"(%n29) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n31 = "onnx.Neg"(%n30) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n32 = "onnx.Neg"(%n31) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n33 = "onnx.Neg"(%n32) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n34 = "onnx.Neg"(%n33) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n35 = "onnx.Neg"(%n34) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n36 = "onnx.Neg"(%n35) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n37 = "onnx.Neg"(%n36) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n38 = "onnx.Neg"(%n37) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n39 = "onnx.Neg"(%n38) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n40 = "onnx.Neg"(%n39) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n41 = "onnx.Neg"(%n40) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n42 = "onnx.Neg"(%n41) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n43 = "onnx.Neg"(%n42) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n44 = "onnx.Neg"(%n43) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n45 = "onnx.Neg"(%n44) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n46 = "onnx.Neg"(%n45) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n47 = "onnx.Neg"(%n46) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n48 = "onnx.Neg"(%n47) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n49 = "onnx.Neg"(%n48) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n50 = "onnx.Neg"(%n49) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n51 = "onnx.Neg"(%n50) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n52 = "onnx.Neg"(%n51) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n53 = "onnx.Neg"(%n52) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n54 = "onnx.Neg"(%n53) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n55 = "onnx.Neg"(%n54) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n56 = "onnx.Neg"(%n55) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n57 = "onnx.Neg"(%n56) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n58 = "onnx.Neg"(%n57) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n59 = "onnx.Neg"(%n58) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n60 = "onnx.Neg"(%n59) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n61 = "onnx.Neg"(%n60) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n62 = "onnx.Neg"(%n61) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n63 = "onnx.Neg"(%n62) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n64 = "onnx.Neg"(%n63) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n65 = "onnx.Neg"(%n64) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n66 = "onnx.Neg"(%n65) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n67 = "onnx.Neg"(%n66) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n68 = "onnx.Neg"(%n67) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n69 = "onnx.Neg"(%n68) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n70 = "onnx.Neg"(%n69) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n71 = "onnx.Neg"(%n70) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n72 = "onnx.Neg"(%n71) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n73 = "onnx.Neg"(%n72) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n74 = "onnx.Neg"(%n73) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n75 = "onnx.Neg"(%n74) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n76 = "onnx.Neg"(%n75) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n77 = "onnx.Neg"(%n76) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n78 = "onnx.Neg"(%n77) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n79 = "onnx.Neg"(%n78) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n80 = "onnx.Neg"(%n79) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n81 = "onnx.Neg"(%n80) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n82 = "onnx.Neg"(%n81) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n83 = "onnx.Neg"(%n82) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n84 = "onnx.Neg"(%n83) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n85 = "onnx.Neg"(%n84) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n86 = "onnx.Neg"(%n85) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n87 = "onnx.Neg"(%n86) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n88 = "onnx.Neg"(%n87) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n89 = "onnx.Neg"(%n88) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n90 = "onnx.Neg"(%n89) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n91 = "onnx.Neg"(%n90) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n92 = "onnx.Neg"(%n91) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n93 = "onnx.Neg"(%n92) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n94 = "onnx.Neg"(%n93) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n95 = "onnx.Neg"(%n94) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n96 = "onnx.Neg"(%n95) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n97 = "onnx.Neg"(%n96) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n98 = "onnx.Neg"(%n97) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n99 = "onnx.Neg"(%n98) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n100 = "onnx.Neg"(%n99) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n101 = "onnx.Neg"(%n100) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n102 = "onnx.Neg"(%n101) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n103 = "onnx.Neg"(%n102) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n104 = "onnx.Neg"(%n103) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n105 = "onnx.Neg"(%n104) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n106 = "onnx.Neg"(%n105) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n107 = "onnx.Neg"(%n106) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n108 = "onnx.Neg"(%n107) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n109 = "onnx.Neg"(%n108) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n110 = "onnx.Neg"(%n109) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n111 = "onnx.Neg"(%n110) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n112 = "onnx.Neg"(%n111) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n113 = "onnx.Neg"(%n112) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n114 = "onnx.Neg"(%n113) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n115 = "onnx.Neg"(%n114) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n116 = "onnx.Neg"(%n115) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n117 = "onnx.Neg"(%n116) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n118 = "onnx.Neg"(%n117) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n119 = "onnx.Neg"(%n118) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n120 = "onnx.Neg"(%n119) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n121 = "onnx.Neg"(%n120) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n122 = "onnx.Neg"(%n121) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n123 = "onnx.Neg"(%n122) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n124 = "onnx.Neg"(%n123) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n125 = "onnx.Neg"(%n124) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n126 = "onnx.Neg"(%n125) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n127 = "onnx.Neg"(%n126) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n128 = "onnx.Neg"(%n127) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %n129 = "onnx.Neg"(%n128) : (tensor<2x8xf32>) -> tensor<2x8xf32>
  return %r2, %n129 : tensor<2x8xf32>, tensor<2x8xf32>
}
)mlir";
  std::optional<ortc::EpContextBlob> blob = ortc::cputest::compileCpuPartition(source);
  ASSERT_TRUE(blob);
  auto loaded = ortc::cputest::loadCpuBlob(blob->bytes);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  ortc::cpu::PlanExecutor &partition = *loaded.value();
  std::vector<ortc::StepProfile> steps;
  ASSERT_TRUE(partition.profileSteps(&steps));
  std::vector<const ortc::StepProfile *> kernels;
  for (const ortc::StepProfile &step : steps)
    if (step.kind == "Kernel")
      kernels.push_back(&step);
  // Add+Relu x3, then the Neg chain in three kernels.
  ASSERT_EQ(kernels.size(), 6u);
  EXPECT_EQ(kernels[0]->ops, "Add,Relu");
  EXPECT_EQ(kernels[0]->callee, kernels[1]->callee);
  EXPECT_NE(kernels[0]->callee, kernels[2]->callee);
  EXPECT_EQ(kernels[3]->callee, kernels[4]->callee);
  EXPECT_NE(kernels[3]->callee, kernels[5]->callee);
  EXPECT_EQ(std::count(kernels[3]->ops.begin(), kernels[3]->ops.end(), ',') + 1, 64);
  EXPECT_EQ(kernels[5]->ops, "Neg,Neg");

  std::vector<float> x(16), w(64), y0(16), y1(16);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(int(i % 7) - 3) * 0.5f;
  for (size_t i = 0; i < w.size(); ++i)
    w[i] = float(int(i % 5) - 2) * 0.25f;
  std::vector<ortc::TensorView> in{{x.data(), ortc::ElementType::Float, {2, 8}},
                                   {w.data(), ortc::ElementType::Float, {8, 8}}};
  std::vector<ortc::TensorView> out{{y0.data(), ortc::ElementType::Float, {2, 8}},
                                    {y1.data(), ortc::ElementType::Float, {2, 8}}};
  ortc::Status status = partition.run(in, out);
  ASSERT_TRUE(status.isOk()) << status.message();
  auto addRelu = [](std::vector<float> v, float c) {
    for (float &e : v)
      e = std::max(e + c, 0.f);
    return v;
  };
  auto matmul = [&](const std::vector<float> &a) {
    std::vector<float> r(16, 0.f);
    for (int i = 0; i < 2; ++i)
      for (int j = 0; j < 8; ++j)
        for (int k = 0; k < 8; ++k)
          r[i * 8 + j] += a[i * 8 + k] * w[k * 8 + j];
    return r;
  };
  std::vector<float> want = addRelu(matmul(addRelu(matmul(addRelu(x, 0.5f)), 0.5f)), 0.25f);
  for (size_t i = 0; i < 16; ++i) {
    EXPECT_NEAR(y0[i], want[i], 1e-5) << i;
    EXPECT_EQ(y1[i], x[i]) << i; // an even number of Negs of x
  }
  for (const ortc::StepProfile &step : steps) {
    EXPECT_EQ(step.calls, 1u) << step.callee;
    EXPECT_EQ(step.shape, "[2,8]") << step.callee;
  }
  partition.profileSteps(nullptr);
  ASSERT_TRUE(partition.run(in, out).isOk());
  EXPECT_EQ(steps[0].calls, 1u); // no longer timed
}

// An elementwise kernel over [1, 96, 1024] splits over dim 1 (split_dim 1,
// the leading non-1 dim): on a pool of 3 threads it runs as row blocks, the
// [96, 1] and [1024] inputs broadcasting into each block and the [1, 96, 1024]
// ones sliced, and gives the values of the whole-kernel run without a pool
// and of the reference; a [7, 96, 1024] kernel (dim 0) too.
TEST(CpuPartition, ElementwiseKernelsSplitIntoRowBlocksOnAPool) {
  const char *source = R"mlir(
func.func @main(%x: tensor<1x96x1024xf32>, %s: tensor<96x1xf32>, %b: tensor<1024xf32>,
                %z: tensor<7x96x1024xf32>) -> (tensor<1x96x1024xf32>, tensor<1x96x1024xi1>,
                                               tensor<7x96x1024xf32>) {
  %m = "onnx.Mul"(%x, %s) : (tensor<1x96x1024xf32>, tensor<96x1xf32>) -> tensor<1x96x1024xf32>
  %a = "onnx.Add"(%m, %b) : (tensor<1x96x1024xf32>, tensor<1024xf32>) -> tensor<1x96x1024xf32>
  %t = "onnx.Tanh"(%a) : (tensor<1x96x1024xf32>) -> tensor<1x96x1024xf32>
  %n = "onnx.IsNaN"(%t) : (tensor<1x96x1024xf32>) -> tensor<1x96x1024xi1>
  %z2 = "onnx.Add"(%z, %x) : (tensor<7x96x1024xf32>, tensor<1x96x1024xf32>) -> tensor<7x96x1024xf32>
  %z3 = "onnx.Relu"(%z2) : (tensor<7x96x1024xf32>) -> tensor<7x96x1024xf32>
  return %t, %n, %z3 : tensor<1x96x1024xf32>, tensor<1x96x1024xi1>, tensor<7x96x1024xf32>
}
)mlir";
  std::optional<ortc::EpContextBlob> blob = ortc::cputest::compileCpuPartition(source);
  ASSERT_TRUE(blob);
  ortc::EpContextView view;
  view.source = "ortc_cpu";
  view.partitionName = "cpu_ep_p0";
  view.data = blob->bytes.data();
  view.size = blob->bytes.size();
  auto serial = ortc::cpu::PlanExecutor::load(view);
  auto pooled = ortc::cpu::PlanExecutor::load(view, std::make_shared<ortc::cpu::ThreadPool>(3));
  ASSERT_TRUE(serial.isOk()) << serial.status().message();
  ASSERT_TRUE(pooled.isOk()) << pooled.status().message();

  const int64_t R = 96, C = 1024, B = 7;
  std::vector<float> x(R * C), s(R), b(C), z(B * R * C);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(int(i * 37 % 101) - 50) * 0.02f;
  for (size_t i = 0; i < s.size(); ++i)
    s[i] = float(int(i % 9) - 4) * 0.5f;
  for (size_t i = 0; i < b.size(); ++i)
    b[i] = float(int(i % 13) - 6) * 0.1f;
  for (size_t i = 0; i < z.size(); ++i)
    z[i] = float(int(i * 11 % 23) - 11) * 0.05f;
  std::vector<ortc::TensorView> in{{x.data(), ortc::ElementType::Float, {1, R, C}},
                                   {s.data(), ortc::ElementType::Float, {R, 1}},
                                   {b.data(), ortc::ElementType::Float, {C}},
                                   {z.data(), ortc::ElementType::Float, {B, R, C}}};
  struct Outputs {
    std::vector<float> t = std::vector<float>(96 * 1024), z3 = std::vector<float>(7 * 96 * 1024);
    std::vector<uint8_t> n = std::vector<uint8_t>(96 * 1024, 7);
  };
  auto runOn = [&](ortc::cpu::PlanExecutor &partition, Outputs &o) {
    std::vector<ortc::TensorView> out{{o.t.data(), ortc::ElementType::Float, {1, R, C}},
                                      {o.n.data(), ortc::ElementType::Bool, {1, R, C}},
                                      {o.z3.data(), ortc::ElementType::Float, {B, R, C}}};
    ortc::Status status = partition.run(in, out);
    ASSERT_TRUE(status.isOk()) << status.message();
  };
  Outputs whole, blocks;
  runOn(*serial.value(), whole);
  runOn(*pooled.value(), blocks);
  EXPECT_EQ(blocks.t, whole.t);
  EXPECT_EQ(blocks.n, whole.n);
  EXPECT_EQ(blocks.z3, whole.z3);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) {
      float want = std::tanh(x[r * C + c] * s[r] + b[c]);
      ASSERT_NEAR(blocks.t[r * C + c], want, 1e-5) << r << "," << c;
      ASSERT_EQ(blocks.n[r * C + c], 0) << r << "," << c;
    }
  for (int64_t i = 0; i < B * R * C; ++i)
    ASSERT_EQ(blocks.z3[i], std::max(z[i] + x[i % (R * C)], 0.f)) << i;

  // Both kernels carry split_dim (the plan stores attribute names as
  // strings): the pooled run did take the block path.
  std::string bytes(blob->bytes.begin(), blob->bytes.end());
  size_t marks = 0;
  for (size_t at = bytes.find("split_dim"); at != std::string::npos;
       at = bytes.find("split_dim", at + 1))
    ++marks;
  EXPECT_EQ(marks, 2u);
  std::vector<ortc::StepProfile> steps;
  ASSERT_TRUE(pooled.value()->profileSteps(&steps));
  std::vector<std::string> kernels;
  for (const ortc::StepProfile &step : steps)
    if (step.kind == "Kernel")
      kernels.push_back(step.ops);
  EXPECT_EQ(kernels, (std::vector<std::string>{"Mul,Add,Tanh,IsNaN", "Add,Relu"}));
}

// A chain of channels-last 1x1 convs, a = conv(x), b = conv(a), c =
// relu(conv(b) + a), whose last conv writes over its residual a where
// nothing reads a after it (the plan's buffer for c is an Alias of a's), and
// where something does, gets its own buffer; every variant computes the
// same values. TAIL is what follows c: its uses and the return (never c
// itself: a returned value is written to the caller's buffer).
const char *kResidualChain = R"mlir(
func.func @cpu_ep_p0(%x: tensor<1x4x4x8xf32>) -> RESULTS attributes {ortc.ep = "cpu_ep"} {
  %none = "onnx.NoValue"() : () -> none
  %w1 = "onnx.Constant"() {value = dense<0.125> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %w2 = "onnx.Constant"() {value = dense<-0.0625> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %w3 = "onnx.Constant"() {value = dense<0.5> : tensor<8x8x1x1xf32>} : () -> tensor<8x8x1x1xf32>
  %a = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x4x4x8xf32>, tensor<8x8x1x1xf32>, none, none -> tensor<1x4x4x8xf32> loc("conv_a")
  BEFORE
  %b = ortc.fused_conv %a, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x4x4x8xf32>, tensor<8x8x1x1xf32>, none, none -> tensor<1x4x4x8xf32> loc("conv_b")
  %c = ortc.fused_conv %b, %w3, %none, RESIDUAL {activation = "relu", activation_params = array<f32>, channels_last} : tensor<1x4x4x8xf32>, tensor<8x8x1x1xf32>, none, tensor<1x4x4x8xf32> -> tensor<1x4x4x8xf32> loc("conv_c")
  TAIL
}
)mlir";

TEST(CpuPartition, ChannelsLastConvWritesOverADeadResidual) {
  struct Case {
    const char *name, *before, *residual, *tail, *results;
    bool overwrites;
  };
  const char *t = "tensor<1x4x4x8xf32>";
  for (const Case &c : std::vector<Case>{
           {"a dies at c", "", "%a",
            "%d = \"onnx.Relu\"(%c) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>\n  return %d : "
            "tensor<1x4x4x8xf32>",
            t, true},
           {"a read after c", "", "%a",
            "%d = \"onnx.Add\"(%c, %a) : (tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>) -> "
            "tensor<1x4x4x8xf32>\n  return %d : tensor<1x4x4x8xf32>",
            t, false},
           {"a returned", "", "%a",
            "%d = \"onnx.Relu\"(%c) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>\n  return %d, "
            "%a : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>",
            "(tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>)", false},
           {"the residual is the partition's input", "", "%x",
            "%d = \"onnx.Relu\"(%c) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>\n  return %d : "
            "tensor<1x4x4x8xf32>",
            t, false},
           // Relu(a) opens an elementwise group that c does not read: it is
           // emitted after c, so c must not write over a.
           {"a read by the open elementwise group",
            "%e = \"onnx.Relu\"(%a) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>", "%a",
            "%d = \"onnx.Relu\"(%c) : (tensor<1x4x4x8xf32>) -> tensor<1x4x4x8xf32>\n  return %d, "
            "%e : tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>",
            "(tensor<1x4x4x8xf32>, tensor<1x4x4x8xf32>)", false}}) {
    SCOPED_TRACE(c.name);
    std::string source = kResidualChain;
    for (auto [key, value] :
         std::vector<std::pair<std::string, std::string>>{{"RESULTS", c.results},
                                                          {"BEFORE", c.before},
                                                          {"RESIDUAL", c.residual},
                                                          {"TAIL", c.tail}})
      source.replace(source.find(key), key.size(), value);
    std::optional<ortc::EpContextBlob> blob = ortc::cputest::compileCpuPartition(source.c_str());
    ASSERT_TRUE(blob);
    auto view = ortc::cpu::openCpuBlob(blob->bytes.data(), blob->bytes.size(), "test",
                                       ortc::cpu::hostArchitecture(), ortc::cpu::hostCpuFeatures());
    ASSERT_TRUE(view.isOk()) << view.status().message();
    const auto &buffers = *view.value().plan->buffers();
    int a = -1, convC = -1;
    for (unsigned i = 0; i < buffers.size(); ++i) {
      std::string name = buffers[i]->name() ? buffers[i]->name()->str() : "";
      if (name == "conv_a")
        a = int(i);
      if (name == "conv_c")
        convC = int(i);
    }
    ASSERT_GE(a, 0);
    ASSERT_GE(convC, 0);
    bool overwrites = buffers[convC]->kind() == ortc::cpu::fb::BufferKind::Alias &&
                      buffers[convC]->alias_of() == a;
    EXPECT_EQ(overwrites, c.overwrites);

    auto loaded = ortc::cputest::loadCpuBlob(blob->bytes);
    ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
    std::vector<float> x(128);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = std::sin(float(i) * 0.37f);
    std::vector<ortc::TensorView> in{{x.data(), ortc::ElementType::Float, {1, 4, 4, 8}}};
    size_t outputs = std::string(c.results).find(',') == std::string::npos ? 1 : 2;
    std::vector<std::vector<float>> y(outputs, std::vector<float>(128, -99.f));
    std::vector<ortc::TensorView> out;
    for (std::vector<float> &v : y)
      out.push_back({v.data(), ortc::ElementType::Float, {1, 4, 4, 8}});
    ortc::Status status = loaded.value()->run(in, out);
    ASSERT_TRUE(status.isOk()) << status.message();
    bool residualIsX = std::string(c.residual) == "%x";
    bool addsA = std::string(c.tail).find("onnx.Add") != std::string::npos;
    for (int64_t p = 0; p < 16; ++p) {
      float sum = 0;
      for (int k = 0; k < 8; ++k)
        sum += x[p * 8 + k];
      float va = 0.125f * sum, vb = -0.0625f * 8 * va;
      for (int k = 0; k < 8; ++k) {
        float res = residualIsX ? x[p * 8 + k] : va;
        float vc = std::max(0.5f * 8 * vb + res, 0.f);
        ASSERT_NEAR(y[0][p * 8 + k], addsA ? vc + va : vc, 1e-5) << p << "," << k;
        if (outputs == 2) // a, or Relu(a)
          ASSERT_NEAR(y[1][p * 8 + k], std::string(c.before).empty() ? va : std::max(va, 0.f),
                      1e-5);
      }
    }
  }
}

// Channels-last 3x3 stride-1 convs: one onto 8x8 runs as Winograd (its W
// transformed and packed as "winograd_f2x3_bt", packed_w 6: 4 tiles of 4x4
// would be too few), the next, onto 6x6 (convRunsWinogradChannelsLast: 9
// tiles of 2x2, fewer than 16), keeps W^T ("gemm_bt_hwc", packed_w 3); both
// give the conv's values (splat weights: each output is the weight times
// its window's sum).
/// The packed weights of a CPU blob, in buffer order: "packing [shape]".
std::vector<std::string> packedWeights(const std::vector<char> &bytes) {
  auto view = ortc::cpu::openCpuBlob(bytes.data(), bytes.size(), "test",
                                     ortc::cpu::hostArchitecture(), ortc::cpu::hostCpuFeatures());
  EXPECT_TRUE(view.isOk()) << view.status().message();
  std::vector<std::string> packed;
  if (!view.isOk())
    return packed;
  for (const auto *buffer : *view.value().plan->buffers())
    if (buffer->packing() && buffer->packing()->size())
      packed.push_back(buffer->packing()->str() + " " +
                       ortc::shapeToString({buffer->shape()->begin(), buffer->shape()->end()}));
  return packed;
}

TEST(CpuPartition, ChannelsLastConvsRunAsWinogradOntoLargerOutputs) {
  const char *source = R"mlir(
func.func @cpu_ep_p0(%x: tensor<1x8x8x32xf32>) -> tensor<1x6x6x32xf32> attributes {ortc.ep = "cpu_ep"} {
  %none = "onnx.NoValue"() : () -> none
  %w1 = "onnx.Constant"() {value = dense<0.03125> : tensor<32x32x3x3xf32>} : () -> tensor<32x32x3x3xf32>
  %w2 = "onnx.Constant"() {value = dense<-0.25> : tensor<32x32x3x3xf32>} : () -> tensor<32x32x3x3xf32>
  %a = ortc.fused_conv %x, %w1, %none, %none {activation = "none", activation_params = array<f32>, channels_last, pads = array<i64: 1, 1, 1, 1>} : tensor<1x8x8x32xf32>, tensor<32x32x3x3xf32>, none, none -> tensor<1x8x8x32xf32> loc("conv_a")
  %b = ortc.fused_conv %a, %w2, %none, %none {activation = "none", activation_params = array<f32>, channels_last} : tensor<1x8x8x32xf32>, tensor<32x32x3x3xf32>, none, none -> tensor<1x6x6x32xf32> loc("conv_b")
  return %b : tensor<1x6x6x32xf32>
}
)mlir";
  std::optional<ortc::EpContextBlob> blob = ortc::cputest::compileCpuPartition(source);
  ASSERT_TRUE(blob);
  EXPECT_EQ(packedWeights(blob->bytes),
            (std::vector<std::string>{"winograd_f2x3_bt [32,32,3,3]", "gemm_bt_hwc [32,32,3,3]"}));

  auto loaded = ortc::cputest::loadCpuBlob(blob->bytes);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  std::vector<float> x(8 * 8 * 32);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(float(i) * 0.37f);
  std::vector<float> y(6 * 6 * 32, -99.f);
  std::vector<ortc::TensorView> in{{x.data(), ortc::ElementType::Float, {1, 8, 8, 32}}};
  std::vector<ortc::TensorView> out{{y.data(), ortc::ElementType::Float, {1, 6, 6, 32}}};
  ortc::Status status = loaded.value()->run(in, out);
  ASSERT_TRUE(status.isOk()) << status.message();
  // Every channel of a is the same: 1/32 of the channel sums over the window.
  auto windowSum = [](const std::vector<float> &v, int64_t size, int64_t h, int64_t w) {
    double sum = 0;
    for (int64_t r = h; r < h + 3; ++r)
      for (int64_t q = w; q < w + 3; ++q)
        if (r >= 0 && r < size && q >= 0 && q < size)
          sum += v[size_t(r * size + q)];
    return sum;
  };
  std::vector<float> positionSums(64), a(64);
  for (int64_t p = 0; p < 64; ++p)
    for (int64_t c = 0; c < 32; ++c)
      positionSums[size_t(p)] += x[size_t(p * 32 + c)];
  for (int64_t h = 0; h < 8; ++h)
    for (int64_t w = 0; w < 8; ++w)
      a[size_t(h * 8 + w)] = float(0.03125 * windowSum(positionSums, 8, h - 1, w - 1));
  for (int64_t h = 0; h < 6; ++h)
    for (int64_t w = 0; w < 6; ++w) {
      float want = float(-0.25 * 32 * windowSum(a, 8, h, w));
      for (int64_t m = 0; m < 32; ++m)
        ASSERT_NEAR(y[size_t((h * 6 + w) * 32 + m)], want, 1e-4 * (1 + std::fabs(want)))
            << h << "," << w << "," << m;
    }
}

// torch's Linear exports Gemm with transB, which cpu-fuse-matmul-epilogue
// makes a matmul_bias with trans_b (lit: fuse_matmul_epilogue.mlir). Its
// constant B [N, K] (not square here) is packed transposed, a [K, N]
// weight, and the step runs relu(x W^T + c).
TEST(CpuPartition, TransposedMatMulBiasRunsOnAPackedB) {
  const char *source = R"mlir(
func.func @cpu_ep_p0(%x: tensor<2x3xf32>) -> tensor<2x5xf32> attributes {ortc.ep = "cpu_ep"} {
  %w = "onnx.Constant"() {value = dense<[[1.0, 2.0, 3.0], [-1.0, 0.5, 0.0], [0.0, 0.0, 1.0], [2.0, -2.0, 1.0], [0.25, 0.25, 0.25]]> : tensor<5x3xf32>} : () -> tensor<5x3xf32>
  %c = "onnx.Constant"() {value = dense<[0.5, -1.0, 0.0, 1.0, -0.5]> : tensor<5xf32>} : () -> tensor<5xf32>
  %y = ortc.matmul_bias %x, %w, %c {activation = "relu", alpha = 1.000000e+00 : f32, trans_b = true} : tensor<2x3xf32>, tensor<5x3xf32>, tensor<5xf32> -> tensor<2x5xf32>
  return %y : tensor<2x5xf32>
}
)mlir";
  std::optional<ortc::EpContextBlob> blob = ortc::cputest::compileCpuPartition(source);
  ASSERT_TRUE(blob);
  EXPECT_EQ(packedWeights(blob->bytes), (std::vector<std::string>{"gemm_b [3,5]"}));

  auto loaded = ortc::cputest::loadCpuBlob(blob->bytes);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  const float w[5][3] = {{1, 2, 3}, {-1, 0.5f, 0}, {0, 0, 1}, {2, -2, 1}, {0.25f, 0.25f, 0.25f}};
  const float c[5] = {0.5f, -1, 0, 1, -0.5f};
  std::vector<float> x = {1, -2, 0.5f, 3, 1, -1}, y(10, -99.f);
  std::vector<ortc::TensorView> in{{x.data(), ortc::ElementType::Float, {2, 3}}};
  std::vector<ortc::TensorView> out{{y.data(), ortc::ElementType::Float, {2, 5}}};
  ortc::Status status = loaded.value()->run(in, out);
  ASSERT_TRUE(status.isOk()) << status.message();
  for (int i = 0; i < 2; ++i)
    for (int n = 0; n < 5; ++n) {
      float sum = c[n];
      for (int k = 0; k < 3; ++k)
        sum += x[size_t(i * 3 + k)] * w[n][k];
      EXPECT_FLOAT_EQ(y[size_t(i * 5 + n)], std::max(sum, 0.f)) << i << "," << n;
    }
}

// The CPU EP claims a matmul_bias with trans_b only on a matrix B (the
// kernel transposes a 2-D B; a batched one it refuses at run time).
TEST(CpuPartition, ClaimsTransBMatMulBiasOnAMatrixOnly) {
  const char *source = R"mlir(
func.func @cpu_ep_p0(%x: tensor<2x3xf32>, %w: tensor<5x3xf32>, %c: tensor<5xf32>, %x3: tensor<2x2x3xf32>, %w3: tensor<2x5x3xf32>) -> (tensor<2x5xf32>, tensor<2x2x5xf32>) {
  %y = ortc.matmul_bias %x, %w, %c {activation = "relu", alpha = 1.000000e+00 : f32, trans_b = true} : tensor<2x3xf32>, tensor<5x3xf32>, tensor<5xf32> -> tensor<2x5xf32>
  %z = ortc.matmul_bias %x3, %w3, %c {activation = "none", alpha = 1.000000e+00 : f32, trans_b = true} : tensor<2x2x3xf32>, tensor<2x5x3xf32>, tensor<5xf32> -> tensor<2x2x5xf32>
  return %y, %z : tensor<2x5xf32>, tensor<2x2x5xf32>
}
)mlir";
  mlir::MLIRContext context;
  ortc::loadImportDialects(context);
  context.loadDialect<mlir::func::FuncDialect, ortc::fused::OrtcDialect>();
  mlir::OwningOpRef<mlir::ModuleOp> module =
      mlir::parseSourceString<mlir::ModuleOp>(source, &context);
  ASSERT_TRUE(module);
  std::string error;
  auto ep = ortc::cpu::createCpuCompileEp({}, error);
  ASSERT_TRUE(ep) << error;
  std::vector<std::string> verdicts;
  module->walk([&](mlir::Operation *op) {
    if (op->getName().getStringRef() != "ortc.matmul_bias")
      return;
    ortc::KernelMatch match = ep->supportsOp(ortc::NodeQuery::fromOp(op));
    verdicts.push_back(match.isSupported() ? "claimed" : match.reason().format());
  });
  ASSERT_EQ(verdicts.size(), 2u);
  EXPECT_EQ(verdicts[0], "claimed");
  EXPECT_NE(verdicts[1].find("rank 3"), std::string::npos) << verdicts[1];
}

// A lone Transpose that keeps its leading non-1 dim in place (the layout
// Transposes around a channels-last conv chain keep the batch) splits into
// row blocks on a pool as elementwise kernels do; one that moves that dim
// runs whole. Both give the transposed values, serial and on a pool.
TEST(CpuPartition, TransposesKeepingTheBatchSplitOnAPool) {
  const char *source = R"mlir(
func.func @main(%x: tensor<8x16x32x32xf32>) -> (tensor<8x32x32x16xf32>, tensor<16x8x32x32xf32>) {
  %a = "onnx.Transpose"(%x) {perm = array<i64: 0, 2, 3, 1>} : (tensor<8x16x32x32xf32>) -> tensor<8x32x32x16xf32>
  %b = "onnx.Transpose"(%x) {perm = array<i64: 1, 0, 2, 3>} : (tensor<8x16x32x32xf32>) -> tensor<16x8x32x32xf32>
  return %a, %b : tensor<8x32x32x16xf32>, tensor<16x8x32x32xf32>
}
)mlir";
  std::optional<ortc::EpContextBlob> blob = ortc::cputest::compileCpuPartition(source);
  ASSERT_TRUE(blob);
  std::string bytes(blob->bytes.begin(), blob->bytes.end());
  size_t marks = 0;
  for (size_t at = bytes.find("split_dim"); at != std::string::npos;
       at = bytes.find("split_dim", at + 1))
    ++marks;
  EXPECT_EQ(marks, 1u); // the first Transpose's step only
  ortc::EpContextView view;
  view.source = "ortc_cpu";
  view.partitionName = "cpu_ep_p0";
  view.data = blob->bytes.data();
  view.size = blob->bytes.size();
  const int64_t N = 8, C = 16, H = 32, W = 32;
  std::vector<float> x(N * C * H * W);
  for (size_t i = 0; i < x.size(); ++i)
    x[i] = float(i);
  for (int threads : {1, 3}) {
    SCOPED_TRACE(std::to_string(threads) + " threads");
    auto loaded = ortc::cpu::PlanExecutor::load(
        view, threads > 1 ? std::make_shared<ortc::cpu::ThreadPool>(threads) : nullptr);
    ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
    std::vector<float> a(x.size(), -1.f), b(x.size(), -1.f);
    std::vector<ortc::TensorView> in{{x.data(), ortc::ElementType::Float, {N, C, H, W}}};
    std::vector<ortc::TensorView> out{{a.data(), ortc::ElementType::Float, {N, H, W, C}},
                                      {b.data(), ortc::ElementType::Float, {C, N, H, W}}};
    ortc::Status status = loaded.value()->run(in, out);
    ASSERT_TRUE(status.isOk()) << status.message();
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c)
        for (int64_t p = 0; p < H * W; ++p) {
          float want = x[size_t((n * C + c) * H * W + p)];
          ASSERT_EQ(a[size_t((n * H * W + p) * C + c)], want) << n << "," << c << "," << p;
          ASSERT_EQ(b[size_t((c * N + n) * H * W + p)], want) << n << "," << c << "," << p;
        }
  }
}
