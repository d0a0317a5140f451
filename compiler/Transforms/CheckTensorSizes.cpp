//===- CheckTensorSizes.cpp - onnx-check-tensor-sizes ---------------------===//
//
// A static shape is a promise of memory: one over the limit is refused here,
// with the value it belongs to, before any EP plans memory for it. The
// runtime holds runs to the same default limit (the CPU EP's
// max_tensor_bytes), so what compiles with the defaults loads with them.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <optional>
#include <string>

namespace ortc {
#define GEN_PASS_DEF_ONNXCHECKTENSORSIZES
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;

namespace {

/// The bytes of `type` when it is a tensor of a static shape whose elements
/// have a bit width (sub-byte types rounded up), saturating; nullopt otherwise.
std::optional<uint64_t> staticBytes(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  if (!tensor || !tensor.hasStaticShape())
    return std::nullopt;
  Type element = tensor.getElementType();
  uint64_t bits = 0;
  if (element.isIntOrFloat())
    bits = element.getIntOrFloatBitWidth();
  else if (auto complex = dyn_cast<ComplexType>(element);
           complex && complex.getElementType().isIntOrFloat())
    bits = 2 * complex.getElementType().getIntOrFloatBitWidth();
  else
    return std::nullopt;
  uint64_t count = 1;
  for (int64_t dim : tensor.getShape())
    if (__builtin_mul_overflow(count, uint64_t(dim), &count))
      return UINT64_MAX;
  uint64_t totalBits = 0;
  if (__builtin_mul_overflow(count, bits, &totalBits))
    return UINT64_MAX;
  return (totalBits + 7) / 8;
}

std::string typeText(Type type) {
  std::string text;
  llvm::raw_string_ostream os(text);
  os << type;
  return text;
}

std::string interfaceName(DictionaryAttr attrs, const char *what, unsigned index) {
  auto name = attrs ? attrs.getAs<StringAttr>("onnx.name") : StringAttr();
  return name ? std::string(what) + " '" + name.str() + "'"
              : std::string(what) + " #" + std::to_string(index);
}

struct OnnxCheckTensorSizes : public ortc::impl::OnnxCheckTensorSizesBase<OnnxCheckTensorSizes> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    const int64_t option = maxBytes;
    const uint64_t limit = option > 0 ? uint64_t(option) : 0;
    auto over = [&](Type type) {
      std::optional<uint64_t> bytes = staticBytes(type);
      return bytes && *bytes > limit ? *bytes : 0;
    };
    auto refuse = [&](Location loc, const std::string &what, Type type, uint64_t bytes) {
      emitError(loc) << what << " (" << typeText(type) << ") needs " << bytes
                     << " bytes, over the limit of " << limit
                     << " for one tensor (--max-tensor-bytes raises it)";
      signalPassFailure();
    };
    // The graph's interface is named by the message, not by the graph's name.
    Location graphLoc = func.getLoc();
    if (auto named = dyn_cast<NameLoc>(graphLoc))
      graphLoc = named.getChildLoc();
    FunctionType signature = func.getFunctionType();
    for (auto [index, type] : llvm::enumerate(signature.getInputs()))
      if (uint64_t bytes = over(type))
        return refuse(graphLoc, interfaceName(func.getArgAttrDict(index), "graph input", index),
                      type, bytes);
    for (auto [index, type] : llvm::enumerate(signature.getResults()))
      if (uint64_t bytes = over(type))
        return refuse(graphLoc, interfaceName(func.getResultAttrDict(index), "graph output", index),
                      type, bytes);
    func.walk([&](Operation *op) {
      for (OpResult result : op->getResults())
        if (uint64_t bytes = over(result.getType())) {
          refuse(op->getLoc(), "result " + std::to_string(result.getResultNumber()),
                 result.getType(), bytes);
          return WalkResult::interrupt();
        }
      for (Region &region : op->getRegions())
        for (BlockArgument arg : region.getArguments())
          if (uint64_t bytes = over(arg.getType())) {
            refuse(op->getLoc(), "subgraph input " + std::to_string(arg.getArgNumber()),
                   arg.getType(), bytes);
            return WalkResult::interrupt();
          }
      return WalkResult::advance();
    });
  }
};

} // namespace
