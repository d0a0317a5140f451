//===- SpatialKernels.cpp - CUDA kernels for 2-D windows ------------------===//

#include "providers/cuda/compile/SpatialKernels.h"
#include "providers/cuda/compile/KernelEmitter.h"

#include "dialects/onnx/OnnxOps.h"
#include "runtime/ep/WindowGeometry.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <sstream>

using namespace mlir;
namespace onnx = ortc::onnx_dialect;

namespace ortc::cuda {

namespace {

bool isConv(Operation *op) { return isa<onnx::ConvOp>(op); }
bool isPool(Operation *op) { return isa<onnx::MaxPoolOp, onnx::AveragePoolOp>(op); }

/// A 2-element attribute (or its default), false when it has another size.
bool readPair(Operation *op, StringRef name, int64_t dflt, int64_t out[2]) {
  out[0] = out[1] = dflt;
  auto attr = op->getAttrOfType<DenseI64ArrayAttr>(name);
  if (!attr)
    return true;
  if (attr.size() != 2)
    return false;
  out[0] = attr[0];
  out[1] = attr[1];
  return true;
}

} // namespace

bool WindowAttrs::pointwise() const {
  return kernel[0] == 1 && kernel[1] == 1 && stride[0] == 1 && stride[1] == 1 && padBegin[0] == 0 &&
         padBegin[1] == 0 && padEnd[0] == 0 && padEnd[1] == 0 &&
         AutoPad(autoPad) != AutoPad::SameUpper && AutoPad(autoPad) != AutoPad::SameLower;
}

WindowAttrs windowAttrs(Operation *op) {
  WindowAttrs w;
  if (isConv(op)) {
    auto shape = cast<RankedTensorType>(op->getOperand(1).getType()).getShape();
    w.kernel[0] = shape[2];
    w.kernel[1] = shape[3];
    w.group = op->getAttrOfType<IntegerAttr>("group").getInt();
  } else {
    readPair(op, "kernel_shape", 1, w.kernel);
    w.ceilMode = op->getAttrOfType<IntegerAttr>("ceil_mode").getInt() != 0;
    if (isa<onnx::MaxPoolOp>(op))
      w.pool = WindowAttrs::Pool::Max;
    else
      w.pool = op->getAttrOfType<IntegerAttr>("count_include_pad").getInt()
                   ? WindowAttrs::Pool::AverageIncludingPad
                   : WindowAttrs::Pool::AverageExcludingPad;
  }
  readPair(op, "strides", 1, w.stride);
  readPair(op, "dilations", 1, w.dilation);
  if (auto pads = op->getAttrOfType<DenseI64ArrayAttr>("pads"); pads && pads.size() == 4) {
    w.padBegin[0] = pads[0];
    w.padBegin[1] = pads[1];
    w.padEnd[0] = pads[2];
    w.padEnd[1] = pads[3];
  }
  auto autoPad = op->getAttrOfType<StringAttr>("auto_pad");
  w.autoPad = int(parseAutoPad(autoPad ? autoPad.getValue().str() : "NOTSET").value_or(AutoPad::NotSet));
  return w;
}

bool isSpatialKernelOp(Operation *op, std::string *why) {
  if (!isConv(op) && !isPool(op))
    return false;
  auto refuse = [&](std::string text) {
    if (why)
      *why = std::move(text);
    return false;
  };
  auto x = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
  auto y = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!x || !y || x.getRank() != 4 || y.getRank() != 4)
    return refuse("an input or output that is not a 4-D (NCHW) tensor");
  Type e = x.getElementType();
  if ((!e.isF32() && !e.isF16() && !e.isBF16()) || y.getElementType() != e)
    return refuse("element types other than one of f32, f16, bf16");
  auto autoPad = op->getAttrOfType<StringAttr>("auto_pad");
  if (!parseAutoPad(autoPad ? autoPad.getValue().str() : "NOTSET"))
    return refuse("an unknown auto_pad");
  for (StringRef name : {"strides", "dilations", "kernel_shape"}) {
    int64_t pair[2];
    if (!readPair(op, name, 1, pair) || pair[0] < 1 || pair[1] < 1)
      return refuse(name.str() + " that are not two positive values");
  }
  if (auto pads = op->getAttrOfType<DenseI64ArrayAttr>("pads"))
    if (pads.size() != 4 || llvm::any_of(pads.asArrayRef(), [](int64_t p) { return p < 0; }))
      return refuse("pads that are not four values >= 0");
  if (isConv(op)) {
    auto w = dyn_cast<RankedTensorType>(op->getOperand(1).getType());
    if (!w || w.getRank() != 4 || !w.hasStaticShape() || w.getElementType() != e)
      return refuse("a weight that is not a static 4-D tensor of the input's type");
    int64_t group = op->getAttrOfType<IntegerAttr>("group").getInt();
    if (x.isDynamicDim(1) || group < 1 || x.getDimSize(1) % group || w.getDimSize(0) % group ||
        w.getDimSize(1) * group != x.getDimSize(1))
      return refuse("channels that do not divide into the groups (or a dynamic channel count)");
    auto kernel = op->getAttrOfType<DenseI64ArrayAttr>("kernel_shape");
    if (kernel && (kernel.size() != 2 || kernel[0] != w.getDimSize(2) || kernel[1] != w.getDimSize(3)))
      return refuse("a kernel_shape other than the weight's");
    return true;
  }
  if (op->getNumResults() > 1 && !op->getResult(1).use_empty() &&
      !isa<NoneType>(op->getResult(1).getType()))
    return refuse("MaxPool's Indices output is used");
  if (isa<onnx::MaxPoolOp>(op) && op->getAttrOfType<IntegerAttr>("storage_order").getInt() != 0)
    return refuse("storage_order 1");
  if (isa<onnx::AveragePoolOp>(op)) {
    int64_t dilation[2];
    readPair(op, "dilations", 1, dilation);
    if (dilation[0] != 1 || dilation[1] != 1)
      return refuse("an AveragePool with dilations");
  }
  return true;
}

FailureOr<std::string> emitSpatialKernel(Operation *op, const std::string &name) {
  std::string why;
  if (!isSpatialKernelOp(op, &why))
    return op->emitError("cuda spatial kernel: ") << why;
  WindowAttrs w = windowAttrs(op);
  Type e = cast<RankedTensorType>(op->getOperand(0).getType()).getElementType();
  std::string T = floatStorageType(e);
  std::ostringstream out;
  if (isConv(op)) {
    if (w.pointwise())
      return std::string();
    // col[(c * kh + i) * kw + j][oh * OW + ow] for image g.image, 0 where the
    // window reads padding.
    out << "extern \"C\" __global__ void __launch_bounds__(" << kSpatialThreadsPerBlock << ") "
        << name << "(const " << T << " *__restrict__ x, " << T
        << " *__restrict__ col, ortc_window g) {\n"
        << "  const long long spatial = g.oh * g.ow;\n"
        << "  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        << "  if (t >= g.c * g.kh * g.kw * spatial) return;\n"
        << "  const long long s = t % spatial, row = t / spatial;\n"
        << "  const long long j = row % g.kw, i = (row / g.kw) % g.kh, c = row / (g.kw * g.kh);\n"
        << "  const long long oh = s / g.ow, ow = s % g.ow;\n"
        << "  const long long h = oh * g.sh - g.ph + i * g.dh, wd = ow * g.sw - g.pw + j * g.dw;\n"
        << "  " << T << " v = 0;\n"
        << "  if (h >= 0 && h < g.h && wd >= 0 && wd < g.w)\n"
        << "    v = x[((g.image * g.c + c) * g.h + h) * g.w + wd];\n"
        << "  col[t] = v;\n}\n";
  } else {
    bool max = w.pool == WindowAttrs::Pool::Max;
    bool includePad = w.pool == WindowAttrs::Pool::AverageIncludingPad;
    out << "extern \"C\" __global__ void __launch_bounds__(" << kSpatialThreadsPerBlock << ") "
        << name << "(const " << T << " *__restrict__ x, " << T
        << " *__restrict__ y, ortc_window g) {\n"
        << "  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
        << "  if (t >= g.n * g.c * g.oh * g.ow) return;\n"
        << "  const long long ow = t % g.ow, oh = (t / g.ow) % g.oh, nc = t / (g.ow * g.oh);\n"
        << "  const long long h0 = oh * g.sh - g.ph, w0 = ow * g.sw - g.pw;\n"
        << "  const " << T << " *plane = x + nc * g.h * g.w;\n";
    if (max) {
      // Like onnxruntime's MaxPool: a NaN never replaces the running max.
      out << "  float m = -__int_as_float(0x7f800000);\n"
          << "  for (long long i = 0; i < g.kh; ++i) {\n"
          << "    const long long h = h0 + i * g.dh;\n"
          << "    if (h < 0 || h >= g.h) continue;\n"
          << "    for (long long j = 0; j < g.kw; ++j) {\n"
          << "      const long long wd = w0 + j * g.dw;\n"
          << "      if (wd < 0 || wd >= g.w) continue;\n"
          << "      const float v = " << loadAsFloat(e, "plane[h * g.w + wd]") << ";\n"
          << "      if (v > m) m = v;\n"
          << "    }\n  }\n"
          << "  y[t] = " << storeFromFloat(e, "m") << ";\n}\n";
    } else {
      // The divisor: the window inside the padded input (count_include_pad)
      // or inside the input, as onnxruntime's AveragePool counts it.
      out << "  const long long hend = h0 + g.kh < g.h + g.ph_end ? h0 + g.kh : g.h + g.ph_end;\n"
          << "  const long long wend = w0 + g.kw < g.w + g.pw_end ? w0 + g.kw : g.w + g.pw_end;\n"
          << "  const long long padded = (hend - h0) * (wend - w0);\n"
          << "  const long long hs = h0 > 0 ? h0 : 0, ws = w0 > 0 ? w0 : 0;\n"
          << "  const long long he = hend < g.h ? hend : g.h, we = wend < g.w ? wend : g.w;\n"
          << "  float s = 0.0f;\n"
          << "  for (long long h = hs; h < he; ++h)\n"
          << "    for (long long wd = ws; wd < we; ++wd)\n"
          << "      s += " << loadAsFloat(e, "plane[h * g.w + wd]") << ";\n"
          << "  const long long count = " << (includePad ? "padded" : "(he - hs) * (we - ws)")
          << ";\n"
          << "  y[t] = " << storeFromFloat(e, "count > 0 ? s / (float)count : 0.0f") << ";\n}\n";
    }
  }
  out << "#ifdef ORTC_HOST_EMULATION\nORTC_EMU_ENTRY(" << name << ")\n#endif\n";
  return out.str();
}

} // namespace ortc::cuda
