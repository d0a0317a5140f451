//===- KernelApi.cpp - attributes, scratch and the kernel registry --------===//

#include "providers/cpu/kernels/KernelApi.h"

#include <algorithm>
#include <cstring>
#include <new>

namespace ortc::cpu {

//===----------------------------------------------------------------------===//
// The kernels, defined in the *Kernels.cpp files of this folder.
//===----------------------------------------------------------------------===//

namespace kernels {
Status matMul(const KernelCall &call);
Status gemm(const KernelCall &call);

Status conv(const KernelCall &call);
Status maxPool(const KernelCall &call);
Status averagePool(const KernelCall &call);
Status globalAveragePool(const KernelCall &call);
Status globalMaxPool(const KernelCall &call);

Status softmax(const KernelCall &call);
Status logSoftmax(const KernelCall &call);
Status layerNormalization(const KernelCall &call);
Status batchNormalization(const KernelCall &call);
Status instanceNormalization(const KernelCall &call);
Status attention(const KernelCall &call);

Status transpose(const KernelCall &call);
Status concat(const KernelCall &call);
Status split(const KernelCall &call);
Status slice(const KernelCall &call);
Status gather(const KernelCall &call);
Status expand(const KernelCall &call);
Status tile(const KernelCall &call);
Status pad(const KernelCall &call);
Status resize(const KernelCall &call);
Status copy(const KernelCall &call);
Status shape(const KernelCall &call);
Status depthToSpace(const KernelCall &call);
Status spaceToDepth(const KernelCall &call);

Status reduceMean(const KernelCall &call);
Status reduceSum(const KernelCall &call);
Status reduceMax(const KernelCall &call);
Status reduceMin(const KernelCall &call);
Status reduceProd(const KernelCall &call);
Status reduceL1(const KernelCall &call);
Status reduceL2(const KernelCall &call);
Status reduceSumSquare(const KernelCall &call);
Status reduceLogSumExp(const KernelCall &call);
Status argMax(const KernelCall &call);
Status argMin(const KernelCall &call);

Status cast(const KernelCall &call);
} // namespace kernels

namespace {

struct KernelEntry {
  const char *name;
  LibraryKernelFn fn;
};

// Sorted by name: findLibraryKernel bisects.
const KernelEntry kKernels[] = {
    {"ArgMax", kernels::argMax},
    {"ArgMin", kernels::argMin},
    {"Attention", kernels::attention},
    {"AveragePool", kernels::averagePool},
    {"BatchNormalization", kernels::batchNormalization},
    {"Cast", kernels::cast},
    {"Concat", kernels::concat},
    {"Conv", kernels::conv},
    {"Copy", kernels::copy},
    {"DepthToSpace", kernels::depthToSpace},
    {"Expand", kernels::expand},
    {"Gather", kernels::gather},
    {"Gemm", kernels::gemm},
    {"GlobalAveragePool", kernels::globalAveragePool},
    {"GlobalMaxPool", kernels::globalMaxPool},
    {"InstanceNormalization", kernels::instanceNormalization},
    {"LayerNormalization", kernels::layerNormalization},
    {"LogSoftmax", kernels::logSoftmax},
    {"MatMul", kernels::matMul},
    {"MaxPool", kernels::maxPool},
    {"Pad", kernels::pad},
    {"ReduceL1", kernels::reduceL1},
    {"ReduceL2", kernels::reduceL2},
    {"ReduceLogSumExp", kernels::reduceLogSumExp},
    {"ReduceMax", kernels::reduceMax},
    {"ReduceMean", kernels::reduceMean},
    {"ReduceMin", kernels::reduceMin},
    {"ReduceProd", kernels::reduceProd},
    {"ReduceSum", kernels::reduceSum},
    {"ReduceSumSquare", kernels::reduceSumSquare},
    {"Resize", kernels::resize},
    {"Shape", kernels::shape},
    {"Slice", kernels::slice},
    {"Softmax", kernels::softmax},
    {"SpaceToDepth", kernels::spaceToDepth},
    {"Split", kernels::split},
    {"Tile", kernels::tile},
    {"Transpose", kernels::transpose},
};

} // namespace

//===----------------------------------------------------------------------===//
// StepAttributes
//===----------------------------------------------------------------------===//

int64_t StepAttributes::getInt(const std::string &name, int64_t fallback) const {
  auto it = ints.find(name);
  return it == ints.end() || it->second.empty() ? fallback : it->second.front();
}

std::vector<int64_t> StepAttributes::getInts(const std::string &name,
                                             std::vector<int64_t> fallback) const {
  auto it = ints.find(name);
  return it == ints.end() ? fallback : it->second;
}

float StepAttributes::getFloat(const std::string &name, float fallback) const {
  auto it = floats.find(name);
  return it == floats.end() || it->second.empty() ? fallback : it->second.front();
}

std::string StepAttributes::getString(const std::string &name, std::string fallback) const {
  auto it = strings.find(name);
  return it == strings.end() ? fallback : it->second;
}

bool StepAttributes::has(const std::string &name) const {
  return ints.count(name) || floats.count(name) || strings.count(name);
}

//===----------------------------------------------------------------------===//
// Scratch
//===----------------------------------------------------------------------===//

namespace {
constexpr size_t kScratchAlign = 64;
} // namespace

void *Scratch::get(size_t bytes) {
  if (bytes <= size_ && data_)
    return data_;
  // Grow geometrically so that a sequence of slightly larger requests does not
  // reallocate every call; the old contents need not survive.
  size_t want = std::max(bytes, size_ + size_ / 2);
  want = (want + kScratchAlign - 1) / kScratchAlign * kScratchAlign;
  if (want == 0)
    want = kScratchAlign;
  ::operator delete(data_, std::align_val_t(kScratchAlign));
  data_ = ::operator new(want, std::align_val_t(kScratchAlign), std::nothrow);
  size_ = data_ ? want : 0;
  return data_;
}

Scratch::~Scratch() { ::operator delete(data_, std::align_val_t(kScratchAlign)); }

//===----------------------------------------------------------------------===//
// Registry
//===----------------------------------------------------------------------===//

LibraryKernelFn findLibraryKernel(const std::string &name) {
  auto begin = std::begin(kKernels), end = std::end(kKernels);
  auto it = std::lower_bound(begin, end, name, [](const KernelEntry &e, const std::string &n) {
    return std::strcmp(e.name, n.c_str()) < 0;
  });
  return it != end && name == it->name ? it->fn : nullptr;
}

std::vector<std::string> libraryKernelNames() {
  std::vector<std::string> names;
  for (const KernelEntry &e : kKernels)
    names.emplace_back(e.name);
  return names;
}

} // namespace ortc::cpu
