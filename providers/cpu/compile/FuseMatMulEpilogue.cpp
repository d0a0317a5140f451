//===- FuseMatMulEpilogue.cpp - cpu-fuse-matmul-epilogue ------------------===//
//
// A float32 MatMul by a matrix whose only reader adds a bias over the last
// dim becomes ortc.matmul_bias, with the activation that alone reads the sum
// (Relu, ortc.gelu in either form) folded in too: the library MatMul adds
// the bias and applies the activation to each tile while it is in cache,
// instead of a generated kernel reading and writing the whole product again
// (a transformer's feed-forward: MatMul, Add, GELU).
//
//   MatMul(a, B[K,N]) -> Add(bias[N]) [-> Relu | ortc.gelu]
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/Passes.h"

#include "compiler/Transforms/OpQueries.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"

namespace ortc::cpu {
#define GEN_PASS_DEF_CPUFUSEMATMULEPILOGUE
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

using namespace mlir;
namespace onnx = ortc::onnx_dialect;
namespace fused = ortc::fused;
using ortc::isF32Tensor;

namespace {

/// What one MatMul's epilogue absorbs.
struct Match {
  onnx::MatMulOp matmul;
  onnx::AddOp add;
  Value bias;
  Operation *activationOp = nullptr;
  StringRef activation = "none";
};

/// The activation `op` applies to the sum, when the epilogue has it.
std::optional<StringRef> activationOf(Operation *op) {
  if (op->getNumResults() != 1 || op->getResult(0).getType() != op->getOperand(0).getType())
    return std::nullopt;
  if (isa<onnx::ReluOp>(op))
    return StringRef("relu");
  if (auto gelu = dyn_cast<fused::GeluOp>(op)) {
    if (gelu.getApproximate() == "none")
      return StringRef("gelu");
    if (gelu.getApproximate() == "tanh")
      return StringRef("gelu_tanh");
  }
  return std::nullopt;
}

std::optional<Match> matchMatMul(onnx::MatMulOp matmul) {
  Value y = matmul.getY();
  auto b = dyn_cast<RankedTensorType>(matmul.getB().getType());
  auto out = dyn_cast<RankedTensorType>(y.getType());
  if (!isF32Tensor(matmul.getA().getType()) || !b || !b.getElementType().isF32() ||
      b.getRank() != 2 || b.isDynamicDim(1) || !out || !out.getElementType().isF32() ||
      out.getRank() < 1 || out.getShape().back() != b.getDimSize(1))
    return std::nullopt;
  auto add = dyn_cast_or_null<onnx::AddOp>(ortc::soleUser(y));
  if (!add || add.getC().getType() != y.getType())
    return std::nullopt;
  Value bias = add.getA() == y ? add.getB() : add.getA();
  auto biasType = dyn_cast<RankedTensorType>(bias.getType());
  if (bias == y || !biasType || !biasType.getElementType().isF32() || biasType.getRank() != 1 ||
      biasType.getDimSize(0) != b.getDimSize(1))
    return std::nullopt;
  Match m{matmul, add, bias};
  if (Operation *user = ortc::soleUser(add.getC()))
    if (std::optional<StringRef> activation = activationOf(user)) {
      m.activationOp = user;
      m.activation = *activation;
    }
  return m;
}

/// Replaces the matched chain with one ortc.matmul_bias.
void rewrite(Match m) {
  Operation *last = m.activationOp ? m.activationOp : m.add.getOperation();
  SmallVector<Location, 3> locations = {m.matmul.getLoc(), m.add.getLoc()};
  SmallVector<Operation *, 3> chain = {m.matmul, m.add};
  if (m.activationOp) {
    locations.push_back(m.activationOp->getLoc());
    chain.push_back(m.activationOp);
  }
  OpBuilder b(last);
  auto fusedOp = fused::MatMulBiasOp::create(
      b, b.getFusedLoc(locations), last->getResult(0).getType(), m.matmul.getA(), m.matmul.getB(),
      m.bias, b.getBoolAttr(false), b.getF32FloatAttr(1.0f), b.getStringAttr(m.activation));
  last->getResult(0).replaceAllUsesWith(fusedOp.getOutput());
  // From the last op back: each has no readers left.
  for (Operation *op : llvm::reverse(chain))
    op->erase();
}

struct CpuFuseMatMulEpiloguePass
    : ortc::cpu::impl::CpuFuseMatMulEpilogueBase<CpuFuseMatMulEpiloguePass> {
  void runOnOperation() override {
    std::vector<Match> matches;
    getOperation().walk([&](onnx::MatMulOp matmul) {
      if (std::optional<Match> m = matchMatMul(matmul))
        matches.push_back(*m);
    });
    for (Match &m : matches)
      rewrite(m);
    numFused += matches.size();
  }
};

} // namespace
