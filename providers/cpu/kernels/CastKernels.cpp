//===- CastKernels.cpp - Cast and CastLike between every element type -----===//
//
// The conversions are runtime/ep/ElementCast.h's; this file checks the call
// and spreads the elements over the pool. The output view's element type is
// the target (Cast's `to`, CastLike's second input's type); the compile half
// checks that the two agree.
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/kernels/KernelUtil.h"
#include "providers/cpu/kernels/ThreadPool.h"

#include "runtime/ep/ElementCast.h"

#include <algorithm>

namespace ortc::cpu::kernels {

namespace {

/// Elements per parallel chunk: a multiple of every packing (4 per byte).
constexpr int64_t kChunk = 1 << 14;

Status readCastOptions(const char *op, const StepAttributes &attrs, CastOptions &options) {
  int64_t saturate = attrs.getInt("saturate", 1);
  if (saturate != 0 && saturate != 1)
    return invalid(op, "saturate " + std::to_string(saturate) + " (expected 0 or 1)");
  options.saturate = saturate == 1;
  std::string mode = attrs.getString("round_mode", "up");
  if (mode == "up")
    options.e8m0Rounding = E8M0Rounding::Up;
  else if (mode == "down")
    options.e8m0Rounding = E8M0Rounding::Down;
  else if (mode == "nearest")
    options.e8m0Rounding = E8M0Rounding::Nearest;
  else
    return invalid(op, "round_mode '" + mode + "' (expected up, down or nearest)");
  return Status::ok();
}

} // namespace

Status cast(const KernelCall &call) {
  const char *op = "Cast";
  const TensorView *X = dataInput(call, 0);
  if (!X)
    return invalid(op, "missing input");
  if (call.numOutputs < 1 || (!call.outputs[0].data && call.outputs[0].numElements() > 0))
    return invalid(op, "missing output");
  const TensorView &Y = call.outputs[0];
  if (!isKnownElementType(X->type))
    return invalid(op, "input has element type " + elementTypeName(X->type) +
                           ", which Cast does not handle");
  if (!isKnownElementType(Y.type))
    return invalid(op, "output has element type " + elementTypeName(Y.type) +
                           ", which Cast does not handle");
  if (Status s = checkOutputShape(op, Y, X->shape); !s.isOk())
    return s;
  CastOptions options;
  if (Status s = readCastOptions(op, call.attrs, options); !s.isOk())
    return s;
  int64_t count = X->numElements();
  int64_t chunks = (count + kChunk - 1) / kChunk;
  parallelFor(call.pool, chunks, [&](int64_t c) {
    int64_t begin = c * kChunk, end = std::min(count, begin + kChunk);
    castElements(X->type, X->data, Y.type, Y.data, begin, end, options);
  });
  return Status::ok();
}

} // namespace ortc::cpu::kernels
