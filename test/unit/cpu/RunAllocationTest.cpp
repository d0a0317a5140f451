//===- RunAllocationTest.cpp - runs whose shapes repeat allocate nothing --===//
//
// A Loop's body runs once per iteration; once its shapes repeat (its layout
// is cached, its blocks have grown), an iteration must not touch the heap.
// This binary replaces the global operator new to count allocations while a
// flag is set, compiles a partition whose Loop body holds a generated kernel
// and Copy steps, warms it up, and compares the allocations of a run of
// N iterations with one of 4N: they must be the same. (Blocks the executor
// takes with aligned_alloc grow only with a larger size, which these runs
// never ask for.)
//
//===----------------------------------------------------------------------===//

#include "test/unit/cpu/CompileCpuPartition.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

namespace {
std::atomic<bool> counting{false};
std::atomic<long> allocations{0};

void *allocate(std::size_t size, std::size_t alignment) {
  if (counting.load(std::memory_order_relaxed))
    allocations.fetch_add(1, std::memory_order_relaxed);
  void *p = alignment > alignof(std::max_align_t)
                ? std::aligned_alloc(alignment, (size + alignment - 1) / alignment * alignment)
                : std::malloc(size ? size : 1);
  return p;
}
} // namespace

void *operator new(std::size_t size) {
  if (void *p = allocate(size, 0))
    return p;
  throw std::bad_alloc();
}
void *operator new[](std::size_t size) { return operator new(size); }
void *operator new(std::size_t size, std::align_val_t a) {
  if (void *p = allocate(size, std::size_t(a)))
    return p;
  throw std::bad_alloc();
}
void *operator new[](std::size_t size, std::align_val_t a) { return operator new(size, a); }
void *operator new(std::size_t size, const std::nothrow_t &) noexcept { return allocate(size, 0); }
void *operator new(std::size_t size, std::align_val_t a, const std::nothrow_t &) noexcept {
  return allocate(size, std::size_t(a));
}
void operator delete(void *p) noexcept { std::free(p); }
void operator delete[](void *p) noexcept { std::free(p); }
void operator delete(void *p, std::size_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t) noexcept { std::free(p); }
void operator delete(void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::align_val_t) noexcept { std::free(p); }
void operator delete(void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }
void operator delete[](void *p, std::size_t, std::align_val_t) noexcept { std::free(p); }

using namespace mlir;

namespace {

// acc' = relu(acc * w + x) over M iterations, each iteration's acc also a
// scan output: a generated kernel, Copy steps for the body's outputs, a scan
// to stack. (Library kernels keep small vectors of their own per call; the
// executor's part is what this measures.)
constexpr const char *kLoop = R"mlir(
func.func @cpu_ep_p0(%x: tensor<?x4xf32> {onnx.dim_params = ["b"]}, %m: tensor<i64>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) attributes {ortc.ep = "cpu_ep"} {
  %none = "onnx.NoValue"() : () -> none
  %w = "onnx.Constant"() {value = dense<0.25> : tensor<4xf32>} : () -> tensor<4xf32>
  %out:2 = "onnx.Loop"(%m, %none, %x) ({
  ^bb0(%i: tensor<i64>, %c: tensor<i1>, %acc: tensor<?x4xf32>):
    %p = "onnx.Mul"(%acc, %w) : (tensor<?x4xf32>, tensor<4xf32>) -> tensor<?x4xf32>
    %s = "onnx.Add"(%p, %x) : (tensor<?x4xf32>, tensor<?x4xf32>) -> tensor<?x4xf32>
    %r = "onnx.Relu"(%s) : (tensor<?x4xf32>) -> tensor<?x4xf32>
    "onnx.Yield"(%c, %r, %r) : (tensor<i1>, tensor<?x4xf32>, tensor<?x4xf32>) -> ()
  }) : (tensor<i64>, none, tensor<?x4xf32>) -> (tensor<?x4xf32>, tensor<?x?x4xf32>) loc("loop")
  return %out#0, %out#1 : tensor<?x4xf32>, tensor<?x?x4xf32>
}
)mlir";

TEST(RunAllocation, LoopIterationsWhoseShapesRepeatAllocateNothing) {
  std::optional<ortc::EpContextBlob> blob = ortc::cputest::compileCpuPartition(kLoop);
  ASSERT_TRUE(blob);
  auto loaded = ortc::cputest::loadCpuBlob(blob->bytes);
  ASSERT_TRUE(loaded.isOk()) << loaded.status().message();
  ortc::LoadedPartition &partition = *loaded.value();

  std::vector<float> x(8, 0.5f), last(8);
  std::vector<float> stacked(64 * 8);
  int64_t trips = 0;
  std::vector<ortc::TensorView> in{{x.data(), ortc::ElementType::Float, {2, 4}},
                                   {&trips, ortc::ElementType::Int64, {}}};
  // Both are sized when the loop ends: the carried value's dims are the
  // broadcast of the body's (the analysis does not prove them invariant).
  std::vector<ortc::TensorView> out{{nullptr, ortc::ElementType::Float, {-1, 4}},
                                    {nullptr, ortc::ElementType::Float, {-1, 2, 4}}};
  ortc::OutputAllocator allocate = [&](size_t i, const std::vector<int64_t> &) -> ortc::Result<void *> {
    return static_cast<void *>(i == 0 ? last.data() : stacked.data());
  };
  auto allocationsOfARun = [&](int64_t iterations) {
    trips = iterations;
    allocations = 0;
    counting = true;
    ortc::Status status = partition.run(in, out, allocate);
    counting = false;
    EXPECT_TRUE(status.isOk()) << status.message();
    return allocations.load();
  };
  // Warm up at the largest count: the layouts are cached and every block
  // has its size.
  allocationsOfARun(64);
  allocationsOfARun(64);
  long few = allocationsOfARun(16), many = allocationsOfARun(64);
  EXPECT_EQ(many, few) << "allocations grow with the iterations: " << few << " for 16, " << many
                       << " for 64";
  // The numbers themselves: what a whole run costs, outside the loop.
  RecordProperty("allocations_per_run", std::to_string(many));
  std::printf("allocations per run: %ld for 16 iterations, %ld for 64\n", few, many);
}

} // namespace
