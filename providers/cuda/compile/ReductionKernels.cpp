//===- ReductionKernels.cpp - CUDA kernels that reduce along axes ---------===//

#include "providers/cuda/compile/ReductionKernels.h"
#include "providers/cuda/compile/KernelEmitter.h"

#include "compiler/Lowering/LowerToLinalg.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Operation.h"

#include <cstdio>
#include <cstring>
#include <sstream>

using namespace mlir;
namespace onnx = ortc::onnx_dialect;

namespace ortc::cuda {

namespace {

enum class Family { Sum, Mean, Max, Min, Softmax, LogSoftmax, LayerNorm, RmsNorm };

std::optional<Family> familyOf(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (name == "onnx.ReduceSum")
    return Family::Sum;
  if (name == "onnx.ReduceMean" || name == "onnx.GlobalAveragePool")
    return Family::Mean;
  if (name == "onnx.ReduceMax" || name == "onnx.GlobalMaxPool")
    return Family::Max;
  if (name == "onnx.ReduceMin")
    return Family::Min;
  if (name == "onnx.Softmax")
    return Family::Softmax;
  if (name == "onnx.LogSoftmax")
    return Family::LogSoftmax;
  if (name == "ortc.layer_norm")
    return Family::LayerNorm;
  if (name == "onnx.RMSNormalization")
    return Family::RmsNorm;
  return std::nullopt;
}

bool isAbsent(Value v) { return v.getDefiningOp() && isa<onnx::NoValueOp>(v.getDefiningOp()); }

/// LayerNorm's and RMSNorm's scale and bias (null when absent).
std::pair<Value, Value> scaleAndBias(Operation *op) {
  if (auto ln = dyn_cast<fused::LayerNormOp>(op))
    return {ln.getScale(), ln.getBias()};
  if (auto rms = dyn_cast<onnx::RMSNormalizationOp>(op))
    return {isAbsent(rms.getScale()) ? Value() : rms.getScale(), Value()};
  return {Value(), Value()};
}

/// The reduced run [first, last) of the input's dims, or nullopt with `why`.
std::optional<std::pair<int64_t, int64_t>> reducedRun(Operation *op, Family family,
                                                      std::string &why) {
  auto in = cast<RankedTensorType>(op->getOperand(0).getType());
  int64_t rank = in.getRank();
  auto axisAttr = [&](int64_t dflt) {
    auto a = op->getAttrOfType<IntegerAttr>("axis");
    int64_t axis = a ? a.getInt() : dflt;
    return axis < 0 ? axis + rank : axis;
  };
  switch (family) {
  case Family::Softmax:
  case Family::LogSoftmax: {
    int64_t axis = axisAttr(-1);
    if (axis < 0 || axis >= rank) {
      why = "axis out of range";
      return std::nullopt;
    }
    return std::make_pair(axis, axis + 1);
  }
  case Family::LayerNorm:
  case Family::RmsNorm: {
    int64_t axis = axisAttr(-1);
    if (axis < 0 || axis >= rank) {
      why = "axis out of range";
      return std::nullopt;
    }
    return std::make_pair(axis, rank);
  }
  default: {
    // A global pool reduces every spatial dim: [N, C, D1, ...] -> [N, C, 1, ...].
    if (isa<onnx::GlobalAveragePoolOp, onnx::GlobalMaxPoolOp>(op)) {
      if (rank < 3) {
        why = "a global pool of a tensor without spatial dims";
        return std::nullopt;
      }
      return std::make_pair(int64_t(2), rank);
    }
    std::optional<SmallVector<bool>> mask = reduceAxesMask(op, why);
    if (!mask)
      return std::nullopt;
    int64_t first = -1, last = -1;
    for (int64_t i = 0; i < rank; ++i)
      if ((*mask)[i]) {
        if (first < 0)
          first = i;
        else if (last != i) {
          why = "the reduced axes are not one contiguous run of dims";
          return std::nullopt;
        }
        last = i + 1;
      }
    if (first < 0) {
      why = "no axis is reduced";
      return std::nullopt;
    }
    return std::make_pair(first, last);
  }
  }
}

} // namespace

bool isReductionKernelOp(Operation *op, std::string *why) {
  std::optional<Family> family = familyOf(op);
  if (!family)
    return false;
  std::string reason;
  auto refuse = [&](std::string text) {
    if (why)
      *why = std::move(text);
    return false;
  };
  if (op->getNumResults() < 1)
    return refuse("no result");
  for (unsigned i = 1; i < op->getNumResults(); ++i)
    if (!op->getResult(i).use_empty() && !isa<NoneType>(op->getResult(i).getType()))
      return refuse("output " + std::to_string(i) + " (mean or inverse std) is used");
  auto in = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!in || !out || in.getRank() == 0)
    return refuse("the input is not a ranked tensor of rank 1 or more");
  Type e = in.getElementType();
  if ((!e.isF32() && !e.isF16() && !e.isBF16()) || out.getElementType() != e)
    return refuse("element types other than one of f32, f16, bf16");
  std::optional<std::pair<int64_t, int64_t>> run = reducedRun(op, *family, reason);
  if (!run)
    return refuse(reason);
  if (*family == Family::LayerNorm || *family == Family::RmsNorm) {
    // Scale and bias: one value, or exactly the normalized dims.
    auto [scale, bias] = scaleAndBias(op);
    for (Value v : {scale, bias}) {
      if (!v)
        continue;
      auto t = dyn_cast<RankedTensorType>(v.getType());
      if (!t || t.getElementType() != e)
        return refuse("scale or bias of another element type");
      bool one = t.hasStaticShape() && t.getNumElements() == 1;
      bool trailing = t.getRank() == in.getRank() - run->first &&
                      t.getShape() == in.getShape().drop_front(run->first) && t.hasStaticShape();
      if (!one && !trailing)
        return refuse("scale or bias shaped other than the normalized dims (static) or one value");
    }
  }
  return true;
}

FailureOr<ReductionKernel> emitReductionKernel(Operation *op, const std::string &name) {
  std::string why;
  if (!isReductionKernelOp(op, &why))
    return op->emitError("cuda reduction kernel: ") << why;
  Family family = *familyOf(op);
  auto in = cast<RankedTensorType>(op->getOperand(0).getType());
  Type e = in.getElementType();
  auto [first, last] = *reducedRun(op, family, why);

  ReductionKernel kernel;
  kernel.inputs.push_back(op->getOperand(0));
  bool norm = family == Family::LayerNorm || family == Family::RmsNorm;
  bool hasScale = false, hasBias = false;
  int64_t scaleCount = 0, biasCount = 0;
  if (norm) {
    auto [scale, bias] = scaleAndBias(op);
    if (scale) {
      kernel.inputs.push_back(scale);
      hasScale = true;
      scaleCount = cast<RankedTensorType>(scale.getType()).getNumElements();
    }
    if (bias) {
      kernel.inputs.push_back(bias);
      hasBias = true;
      biasCount = cast<RankedTensorType>(bias.getType()).getNumElements();
    }
  }
  for (int64_t j = 0; j < in.getRank(); ++j)
    if (j < first || j >= last)
      kernel.gridDims.push_back(j);

  // Input 0's dims are the first slots of the dims struct.
  auto dim = [&](int64_t j) {
    return in.isDynamicDim(j) ? "d.v[" + std::to_string(j) + "]"
                              : std::to_string(in.getDimSize(j)) + "LL";
  };
  auto product = [&](int64_t from, int64_t to) {
    std::string p = "1LL";
    for (int64_t j = from; j < to; ++j)
      p += " * " + dim(j);
    return p;
  };
  int64_t slots = 0;
  for (Value v : kernel.inputs)
    slots += cast<RankedTensorType>(v.getType()).getRank();
  slots += cast<RankedTensorType>(op->getResult(0).getType()).getRank();

  std::string T = floatStorageType(e);
  std::ostringstream out;
  out << "struct " << name << "_dims { long long v[" << std::max<int64_t>(slots, 1) << "]; };\n";
  out << "extern \"C\" __global__ void __launch_bounds__(" << kReductionThreadsPerBlock << ") "
      << name << "(const " << T << " *__restrict__ a0, ";
  for (size_t i = 1; i < kernel.inputs.size(); ++i)
    out << "const " << T << " *__restrict__ a" << i << ", ";
  out << T << " *__restrict__ r0, " << name << "_dims d) {\n";
  out << "  __shared__ float ortc_shared[32];\n"
      << "  const long long R = " << product(first, last) << ";\n"
      << "  const long long inner = " << product(last, in.getRank()) << ";\n"
      << "  const long long o = (long long)blockIdx.x / inner, in = (long long)blockIdx.x % inner;\n"
      << "  const long long base = o * R * inner + in;\n";
  auto x = [&](const std::string &r) { return loadAsFloat(e, "a0[base + (" + r + ") * inner]"); };
  auto loop = [&](const std::string &body) {
    out << "  for (long long r = threadIdx.x; r < R; r += blockDim.x) {\n" << body << "  }\n";
  };
  switch (family) {
  case Family::Sum:
  case Family::Mean:
    out << "  float acc = 0.0f;\n";
    loop("    acc += " + x("r") + ";\n");
    out << "  acc = ortc_block_sum(acc, ortc_shared);\n";
    if (family == Family::Mean)
      out << "  acc = acc / (float)R;\n";
    out << "  if (threadIdx.x == 0) r0[o * inner + in] = " << storeFromFloat(e, "acc") << ";\n";
    break;
  case Family::Max:
  case Family::Min: {
    bool max = family == Family::Max;
    std::string fn = max ? "ortc_maximumf" : "ortc_minimumf";
    out << "  float acc = " << (max ? "-__int_as_float(0x7f800000)" : "__int_as_float(0x7f800000)")
        << ";\n";
    loop("    acc = " + fn + "(acc, " + x("r") + ");\n");
    out << "  acc = " << (max ? "ortc_block_max" : "ortc_block_min") << "(acc, ortc_shared);\n";
    out << "  if (threadIdx.x == 0) r0[o * inner + in] = " << storeFromFloat(e, "acc") << ";\n";
    break;
  }
  case Family::Softmax:
  case Family::LogSoftmax:
    out << "  float m = -__int_as_float(0x7f800000);\n";
    loop("    m = ortc_maximumf(m, " + x("r") + ");\n");
    out << "  m = ortc_block_max(m, ortc_shared);\n  float s = 0.0f;\n";
    loop("    s += expf(" + x("r") + " - m);\n");
    out << "  s = ortc_block_sum(s, ortc_shared);\n";
    if (family == Family::Softmax) {
      out << "  const float inv = 1.0f / s;\n";
      loop("    r0[base + r * inner] = " + storeFromFloat(e, "expf(" + x("r") + " - m) * inv") + ";\n");
    } else {
      out << "  const float ls = logf(s);\n";
      loop("    r0[base + r * inner] = " + storeFromFloat(e, x("r") + " - m - ls") + ";\n");
    }
    break;
  case Family::LayerNorm:
  case Family::RmsNorm: {
    float epsilon = op->getAttrOfType<FloatAttr>("epsilon")
                        ? float(op->getAttrOfType<FloatAttr>("epsilon").getValueAsDouble())
                        : 1e-5f;
    char eps[64];
    std::snprintf(eps, sizeof eps, "__int_as_float(0x%08x)", [&] {
      unsigned bits;
      std::memcpy(&bits, &epsilon, 4);
      return bits;
    }());
    int next = 1;
    std::string scale = hasScale ? "a" + std::to_string(next++) : "";
    std::string bias = hasBias ? "a" + std::to_string(next++) : "";
    auto param = [&](const std::string &p, int64_t count) {
      return loadAsFloat(e, p + "[" + (count == 1 ? std::string("0") : std::string("r")) + "]");
    };
    std::string y;
    if (family == Family::LayerNorm) {
      out << "  float s = 0.0f;\n";
      loop("    s += " + x("r") + ";\n");
      out << "  const float mean = ortc_block_sum(s, ortc_shared) / (float)R;\n"
          << "  float q = 0.0f;\n";
      loop("    const float c = " + x("r") + " - mean;\n    q += c * c;\n");
      out << "  const float rstd = rsqrtf(ortc_block_sum(q, ortc_shared) / (float)R + " << eps
          << ");\n";
      y = "(" + x("r") + " - mean) * rstd";
    } else {
      out << "  float q = 0.0f;\n";
      loop("    const float c = " + x("r") + ";\n    q += c * c;\n");
      out << "  const float rrms = rsqrtf(ortc_block_sum(q, ortc_shared) / (float)R + " << eps
          << ");\n";
      y = x("r") + " * rrms";
    }
    if (hasScale)
      y = "(" + y + ") * " + param(scale, scaleCount);
    if (hasBias)
      y = "(" + y + ") + " + param(bias, biasCount);
    loop("    r0[base + r * inner] = " + storeFromFloat(e, y) + ";\n");
    break;
  }
  }
  out << "}\n";
  out << "#ifdef ORTC_HOST_EMULATION\nextern \"C\" const int " << name
      << "__cooperative = 1;\nORTC_EMU_ENTRY(" << name << ")\n#endif\n";
  kernel.source = out.str();
  return kernel;
}

} // namespace ortc::cuda
