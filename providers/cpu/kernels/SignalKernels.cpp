//===- SignalKernels.cpp - DFT, STFT, MelWeightMatrix ----------------------===//
//
// Direct transforms in fp64 (O(n^2) per signal): these ops show up in audio
// front ends on short frames, where exactness matters more than an FFT.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelApi.h"
#include "providers/cpu/kernels/KernelUtil.h"

#include <cmath>
#include <complex>
#include <vector>

namespace ortc::cpu::kernels {

namespace {

using Complex = std::complex<double>;
constexpr double kPi = 3.14159265358979323846;

/// One scalar of an int32/int64 input, or `fallback` when it is omitted.
Status readOptionalInt(const char *op, const TensorView *t, const char *role, int64_t fallback,
                       int64_t &out) {
  out = fallback;
  if (!t)
    return Status::ok();
  if (t->numElements() != 1)
    return invalid(op, std::string(role) + " must hold one element");
  if (t->type == ElementType::Int64)
    out = *static_cast<const int64_t *>(t->data);
  else if (t->type == ElementType::Int32)
    out = *static_cast<const int32_t *>(t->data);
  else
    return invalid(op, std::string(role) + " must be int32 or int64, got " +
                           elementTypeName(t->type));
  return Status::ok();
}

/// out[k] = sum_t in[t] e^{sign 2 pi i k t / n}, k < out.size(); `in` is
/// zero-padded or truncated to n.
void directDft(const std::vector<Complex> &in, int64_t n, int sign, std::vector<Complex> &out) {
  int64_t m = std::min<int64_t>(int64_t(in.size()), n);
  for (size_t k = 0; k < out.size(); ++k) {
    Complex sum = 0;
    for (int64_t t = 0; t < m; ++t) {
      // The angle reduced mod n first keeps it exact for large k*t.
      double angle = sign * 2 * kPi * double((int64_t(k) * t) % n) / double(n);
      sum += in[t] * Complex(std::cos(angle), std::sin(angle));
    }
    out[k] = sum;
  }
}

} // namespace

Status dft(const KernelCall &call) {
  const char *op = "DFT";
  const TensorView *X = dataInput(call, 0);
  if (Status s = checkFloat(op, X, "input 0"); !s.isOk())
    return s;
  size_t rank = X->shape.size();
  if (rank < 2 || (X->shape.back() != 1 && X->shape.back() != 2))
    return invalid(op, "input " + shapeToString(X->shape) + " must end in a dim of 1 or 2");
  int64_t axis;
  if (Status s = readOptionalInt(op, dataInput(call, 2), "axis", -2, axis); !s.isOk())
    return s;
  int64_t given = axis;
  if (!normalizeAxis(axis, rank) || axis == int64_t(rank) - 1)
    return invalid(op, "axis " + std::to_string(given) + " is out of range or the last dim");
  bool inverse = call.attrs.getInt("inverse", 0) != 0;
  bool onesided = call.attrs.getInt("onesided", 0) != 0;
  int64_t len = X->shape[axis];
  int64_t n;
  if (Status s = readOptionalInt(op, dataInput(call, 1), "dft_length",
                                 inverse && onesided ? 2 * (len - 1) : len, n);
      !s.isOk())
    return s;
  if (n < 1)
    return invalid(op, "dft_length " + std::to_string(n) + " is not positive");

  // irfft: a one-sided spectrum in, a real signal of n out.
  bool realOut = inverse && onesided;
  int64_t outLen = realOut ? n : (onesided ? n / 2 + 1 : n);
  std::vector<int64_t> outShape = X->shape;
  outShape[axis] = outLen;
  outShape.back() = realOut ? 1 : 2;
  const TensorView &Y = call.outputs[0];
  if (Status s = checkFloat(op, &Y, "output 0"); !s.isOk())
    return s;
  if (Status s = checkOutputShape(op, Y, outShape); !s.isOk())
    return s;

  int64_t c = X->shape.back(), cOut = outShape.back();
  int64_t outer = product(X->shape, 0, axis), inner = product(X->shape, axis + 1, rank - 1);
  const float *x = static_cast<const float *>(X->data);
  float *y = static_cast<float *>(Y.data);
  std::vector<Complex> in(len), out(outLen);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t j = 0; j < inner; ++j) {
      for (int64_t t = 0; t < len; ++t) {
        const float *e = x + ((o * len + t) * inner + j) * c;
        in[t] = Complex(e[0], c == 2 ? e[1] : 0.0);
      }
      if (realOut) {
        // Rebuild the full Hermitian spectrum of length n from its first half.
        std::vector<Complex> full(n, 0.0);
        for (int64_t k = 0; k < n; ++k) {
          int64_t src = k <= n / 2 ? k : n - k;
          if (src < len)
            full[k] = k <= n / 2 ? in[src] : std::conj(in[src]);
        }
        directDft(full, n, +1, out);
      } else {
        directDft(in, n, inverse ? +1 : -1, out);
      }
      for (int64_t k = 0; k < outLen; ++k) {
        Complex v = inverse ? out[k] / double(n) : out[k];
        float *e = y + ((o * outLen + k) * inner + j) * cOut;
        e[0] = float(v.real());
        if (cOut == 2)
          e[1] = float(v.imag());
      }
    }
  return Status::ok();
}

Status stft(const KernelCall &call) {
  const char *op = "STFT";
  const TensorView *X = dataInput(call, 0), *W = dataInput(call, 2);
  if (Status s = checkFloat(op, X, "signal"); !s.isOk())
    return s;
  if (X->shape.size() != 3 || (X->shape[2] != 1 && X->shape[2] != 2))
    return invalid(op, "signal " + shapeToString(X->shape) + " is not [batch, length, 1 or 2]");
  if (W) {
    if (Status s = checkFloat(op, W, "window"); !s.isOk())
      return s;
    if (W->shape.size() != 1)
      return invalid(op, "window must be 1-D");
  }
  int64_t step, frameLength;
  if (Status s = readOptionalInt(op, dataInput(call, 1), "frame_step", 0, step); !s.isOk())
    return s;
  int64_t length = X->shape[1];
  if (Status s = readOptionalInt(op, dataInput(call, 3), "frame_length",
                                 W ? W->shape[0] : length, frameLength);
      !s.isOk())
    return s;
  if (step < 1 || frameLength < 1 || frameLength > length ||
      (W && W->shape[0] != frameLength))
    return invalid(op, "frame_step " + std::to_string(step) + " and frame_length " +
                           std::to_string(frameLength) + " do not fit the signal and window");
  bool onesided = call.attrs.getInt("onesided", 1) != 0;
  int64_t batch = X->shape[0], c = X->shape[2];
  int64_t frames = 1 + (length - frameLength) / step;
  int64_t bins = onesided ? frameLength / 2 + 1 : frameLength;
  const TensorView &Y = call.outputs[0];
  if (Status s = checkFloat(op, &Y, "output 0"); !s.isOk())
    return s;
  if (Status s = checkOutputShape(op, Y, {batch, frames, bins, 2}); !s.isOk())
    return s;
  const float *x = static_cast<const float *>(X->data);
  const float *w = W ? static_cast<const float *>(W->data) : nullptr;
  float *y = static_cast<float *>(Y.data);
  std::vector<Complex> frame(frameLength), out(bins);
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t f = 0; f < frames; ++f) {
      for (int64_t t = 0; t < frameLength; ++t) {
        const float *e = x + (b * length + f * step + t) * c;
        double weight = w ? w[t] : 1.0;
        frame[t] = Complex(e[0], c == 2 ? e[1] : 0.0) * weight;
      }
      directDft(frame, frameLength, -1, out);
      for (int64_t k = 0; k < bins; ++k) {
        float *e = y + ((b * frames + f) * bins + k) * 2;
        e[0] = float(out[k].real());
        e[1] = float(out[k].imag());
      }
    }
  return Status::ok();
}

Status melWeightMatrix(const KernelCall &call) {
  const char *op = "MelWeightMatrix";
  int64_t bins, dftLength, sampleRate;
  if (Status s = readOptionalInt(op, dataInput(call, 0), "num_mel_bins", -1, bins); !s.isOk())
    return s;
  if (Status s = readOptionalInt(op, dataInput(call, 1), "dft_length", -1, dftLength); !s.isOk())
    return s;
  if (Status s = readOptionalInt(op, dataInput(call, 2), "sample_rate", -1, sampleRate);
      !s.isOk())
    return s;
  const TensorView *lowT = dataInput(call, 3), *highT = dataInput(call, 4);
  if (Status s = checkFloats(op, {{lowT, "lower_edge_hertz"}, {highT, "upper_edge_hertz"}});
      !s.isOk())
    return s;
  if (bins < 1 || dftLength < 1 || sampleRate < 1 || lowT->numElements() != 1 ||
      highT->numElements() != 1)
    return invalid(op, "num_mel_bins, dft_length and sample_rate must be positive scalars");
  int64_t spectrogramBins = dftLength / 2 + 1;
  const TensorView &Y = call.outputs[0];
  if (Status s = checkFloat(op, &Y, "output 0"); !s.isOk())
    return s;
  if (Status s = checkOutputShape(op, Y, {spectrogramBins, bins}); !s.isOk())
    return s;
  // As the ONNX reference computes it: mel points spaced over bins + 2 steps.
  double low = *static_cast<const float *>(lowT->data);
  double high = *static_cast<const float *>(highT->data);
  double lowMel = 2595 * std::log1p(low / 700) / std::log(10.0);
  double highMel = 2595 * std::log1p(high / 700) / std::log(10.0);
  double step = (highMel - lowMel) / double(bins + 2);
  std::vector<int64_t> points(bins + 2);
  for (int64_t i = 0; i < bins + 2; ++i) {
    double hz = 700 * std::expm1((double(i) * step + lowMel) / 2595 * std::log(10.0));
    points[i] = int64_t(std::floor(double(dftLength + 1) * hz / double(sampleRate)));
    if (points[i] < 0 || points[i] >= spectrogramBins)
      return invalid(op, "mel point " + std::to_string(points[i]) + " falls outside the " +
                             std::to_string(spectrogramBins) + " spectrogram bins");
  }
  float *y = static_cast<float *>(Y.data);
  std::fill(y, y + spectrogramBins * bins, 0.f);
  for (int64_t i = 0; i < bins; ++i) {
    int64_t left = points[i], center = points[i + 1], right = points[i + 2];
    if (center == left)
      y[center * bins + i] = 1;
    else
      for (int64_t j = left; j <= center; ++j)
        y[j * bins + i] = float(double(j - left) / double(center - left));
    for (int64_t j = center; j < right; ++j)
      y[j * bins + i] = float(double(right - j) / double(right - center));
  }
  return Status::ok();
}

} // namespace ortc::cpu::kernels
