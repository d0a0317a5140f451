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
Status maxPoolChannelsLast(const KernelCall &call);
Status depthwiseBlock(const KernelCall &call);
Status averagePool(const KernelCall &call);
Status globalAveragePool(const KernelCall &call);
Status globalMaxPool(const KernelCall &call);

Status softmax(const KernelCall &call);
Status logSoftmax(const KernelCall &call);
Status layerNormalization(const KernelCall &call);
Status batchNormalization(const KernelCall &call);
Status instanceNormalization(const KernelCall &call);
Status attention(const KernelCall &call);
Status onnxAttention(const KernelCall &call);
Status rotaryEmbedding(const KernelCall &call);

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
Status reshape(const KernelCall &call);
Status eyeLike(const KernelCall &call);
Status hannWindow(const KernelCall &call);
Status hammingWindow(const KernelCall &call);
Status blackmanWindow(const KernelCall &call);
Status nonMaxSuppression(const KernelCall &call);
Status compress(const KernelCall &call);
Status nonZero(const KernelCall &call);
Status unique(const KernelCall &call);
Status checkCondition(const KernelCall &call);
Status det(const KernelCall &call);
Status constantOfShape(const KernelCall &call);
Status dft(const KernelCall &call);
Status stft(const KernelCall &call);
Status melWeightMatrix(const KernelCall &call);
Status causalConvWithState(const KernelCall &call);
Status linearAttention(const KernelCall &call);
Status squeeze(const KernelCall &call);
Status unsqueeze(const KernelCall &call);
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
Status reduceLogSum(const KernelCall &call);
Status argMax(const KernelCall &call);
Status argMin(const KernelCall &call);

// LossKernels.cpp
Status negativeLogLikelihoodLoss(const KernelCall &call);
Status softmaxCrossEntropyLoss(const KernelCall &call);

// NormalizationExtraKernels.cpp
Status rmsNormalization(const KernelCall &call);
Status groupNormalization(const KernelCall &call);
Status lpNormalization(const KernelCall &call);
Status meanVarianceNormalization(const KernelCall &call);
Status lrn(const KernelCall &call);
Status hardmax(const KernelCall &call);
Status trilu(const KernelCall &call);
Status cumSum(const KernelCall &call);
Status cumProd(const KernelCall &call);
Status scatterElements(const KernelCall &call);
Status scatterND(const KernelCall &call);
Status tensorScatter(const KernelCall &call);
Status gatherElements(const KernelCall &call);
Status gatherND(const KernelCall &call);
Status topK(const KernelCall &call);
Status oneHot(const KernelCall &call);
Status reverseSequence(const KernelCall &call);
Status range(const KernelCall &call);
Status einsum(const KernelCall &call);
Status lpPool(const KernelCall &call); // ConvPoolKernels.cpp

// SpatialKernels.cpp
Status gridSample(const KernelCall &call);
Status convTranspose(const KernelCall &call);
Status col2Im(const KernelCall &call);
Status centerCropPad(const KernelCall &call);
Status affineGrid(const KernelCall &call);
Status roiAlign(const KernelCall &call);
Status maxUnpool(const KernelCall &call);
Status deformConv(const KernelCall &call);
Status quantizeLinear(const KernelCall &call);
Status dequantizeLinear(const KernelCall &call);
Status dynamicQuantizeLinear(const KernelCall &call);
Status matMulInteger(const KernelCall &call);
Status qLinearMatMul(const KernelCall &call);
Status convInteger(const KernelCall &call);
Status qLinearConv(const KernelCall &call);

Status rnn(const KernelCall &call);
Status gru(const KernelCall &call);
Status lstm(const KernelCall &call);
Status cast(const KernelCall &call);
} // namespace kernels

namespace {

struct KernelEntry {
  const char *name;
  LibraryKernelFn fn;
};

// Sorted by name: findLibraryKernel bisects.
const KernelEntry kKernels[] = {
    {"AffineGrid", kernels::affineGrid},
    {"ArgMax", kernels::argMax},
    {"ArgMin", kernels::argMin},
    {"Attention", kernels::attention},
    {"AveragePool", kernels::averagePool},
    {"BatchNormalization", kernels::batchNormalization},
    {"BlackmanWindow", kernels::blackmanWindow},
    {"Cast", kernels::cast},
    {"CausalConvWithState", kernels::causalConvWithState},
    {"CenterCropPad", kernels::centerCropPad},
    {"CheckCondition", kernels::checkCondition},
    {"Col2Im", kernels::col2Im},
    {"Compress", kernels::compress},
    {"Concat", kernels::concat},
    {"ConstantOfShape", kernels::constantOfShape},
    {"Conv", kernels::conv},
    {"ConvInteger", kernels::convInteger},
    {"ConvTranspose", kernels::convTranspose},
    {"Copy", kernels::copy},
    {"CumProd", kernels::cumProd},
    {"CumSum", kernels::cumSum},
    {"DFT", kernels::dft},
    {"DeformConv", kernels::deformConv},
    {"DepthToSpace", kernels::depthToSpace},
    {"DepthwiseBlock", kernels::depthwiseBlock},
    {"DequantizeLinear", kernels::dequantizeLinear},
    {"Det", kernels::det},
    {"DynamicQuantizeLinear", kernels::dynamicQuantizeLinear},
    {"Einsum", kernels::einsum},
    {"Expand", kernels::expand},
    {"EyeLike", kernels::eyeLike},
    {"GRU", kernels::gru},
    {"Gather", kernels::gather},
    {"GatherElements", kernels::gatherElements},
    {"GatherND", kernels::gatherND},
    {"Gemm", kernels::gemm},
    {"GlobalAveragePool", kernels::globalAveragePool},
    {"GlobalMaxPool", kernels::globalMaxPool},
    {"GridSample", kernels::gridSample},
    {"GroupNormalization", kernels::groupNormalization},
    {"HammingWindow", kernels::hammingWindow},
    {"HannWindow", kernels::hannWindow},
    {"Hardmax", kernels::hardmax},
    {"InstanceNormalization", kernels::instanceNormalization},
    {"LRN", kernels::lrn},
    {"LSTM", kernels::lstm},
    {"LayerNormalization", kernels::layerNormalization},
    {"LinearAttention", kernels::linearAttention},
    {"LogSoftmax", kernels::logSoftmax},
    {"LpNormalization", kernels::lpNormalization},
    {"LpPool", kernels::lpPool},
    {"MatMul", kernels::matMul},
    {"MatMulInteger", kernels::matMulInteger},
    {"MaxPool", kernels::maxPool},
    {"MaxPoolChannelsLast", kernels::maxPoolChannelsLast},
    {"MaxUnpool", kernels::maxUnpool},
    {"MeanVarianceNormalization", kernels::meanVarianceNormalization},
    {"MelWeightMatrix", kernels::melWeightMatrix},
    {"NegativeLogLikelihoodLoss", kernels::negativeLogLikelihoodLoss},
    {"NonMaxSuppression", kernels::nonMaxSuppression},
    {"NonZero", kernels::nonZero},
    {"OneHot", kernels::oneHot},
    {"OnnxAttention", kernels::onnxAttention},
    {"Pad", kernels::pad},
    {"QLinearConv", kernels::qLinearConv},
    {"QLinearMatMul", kernels::qLinearMatMul},
    {"QuantizeLinear", kernels::quantizeLinear},
    {"RMSNormalization", kernels::rmsNormalization},
    {"RNN", kernels::rnn},
    {"Range", kernels::range},
    {"ReduceL1", kernels::reduceL1},
    {"ReduceL2", kernels::reduceL2},
    {"ReduceLogSum", kernels::reduceLogSum},
    {"ReduceLogSumExp", kernels::reduceLogSumExp},
    {"ReduceMax", kernels::reduceMax},
    {"ReduceMean", kernels::reduceMean},
    {"ReduceMin", kernels::reduceMin},
    {"ReduceProd", kernels::reduceProd},
    {"ReduceSum", kernels::reduceSum},
    {"ReduceSumSquare", kernels::reduceSumSquare},
    {"Reshape", kernels::reshape},
    {"Resize", kernels::resize},
    {"ReverseSequence", kernels::reverseSequence},
    {"RoiAlign", kernels::roiAlign},
    {"RotaryEmbedding", kernels::rotaryEmbedding},
    {"STFT", kernels::stft},
    {"ScatterElements", kernels::scatterElements},
    {"ScatterND", kernels::scatterND},
    {"Shape", kernels::shape},
    {"Slice", kernels::slice},
    {"Softmax", kernels::softmax},
    {"SoftmaxCrossEntropyLoss", kernels::softmaxCrossEntropyLoss},
    {"SpaceToDepth", kernels::spaceToDepth},
    {"Split", kernels::split},
    {"Squeeze", kernels::squeeze},
    {"TensorScatter", kernels::tensorScatter},
    {"Tile", kernels::tile},
    {"TopK", kernels::topK},
    {"Transpose", kernels::transpose},
    {"Trilu", kernels::trilu},
    {"Unique", kernels::unique},
    {"Unsqueeze", kernels::unsqueeze},
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
