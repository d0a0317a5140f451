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
// A plain Gemm (A not transposed, alpha = beta = 1, C absent or [N]) whose
// only reader is such an activation, directly or through one Reshape (as
// GPT-2's Conv1D exports: Gemm, Reshape, GELU), takes the activation the
// same way, B transposed or not (torch's Linear exports Gemm with transB);
// the Reshape then reads the fused product. A matmul_bias with no
// activation whose only reader adds a value of its type (a transformer's
// skip connection) takes it as its residual.
//
//   Gemm(a, B[K,N] | B[N,K] transB, C[N]?) [-> Reshape] -> Relu | ortc.gelu
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/Passes.h"

#include "compiler/Transforms/OpQueries.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace ortc::cpu {
#define GEN_PASS_DEF_CPUFUSEMATMULEPILOGUE
#include "providers/cpu/compile/Passes.h.inc"
} // namespace ortc::cpu

using namespace mlir;
namespace onnx = ortc::onnx_dialect;
namespace fused = ortc::fused;
using ortc::isF32Tensor;

namespace {

/// What one MatMul's epilogue absorbs. Ops only: a Value kept from match
/// time may be the result of an op an earlier rewrite erased.
struct Match {
  onnx::MatMulOp matmul;
  onnx::AddOp add;
  Operation *activationOp = nullptr;
  StringRef activation = "none";

  /// The Add's operand that is not the product.
  Value bias() {
    Value product = matmul.getY();
    return add.getA() == product ? add.getB() : add.getA();
  }
  SmallVector<Operation *, 3> ops() const {
    SmallVector<Operation *, 3> all = {matmul, add};
    if (activationOp)
      all.push_back(activationOp);
    return all;
  }
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
  Match m{matmul, add};
  if (Operation *user = ortc::soleUser(add.getC()))
    if (std::optional<StringRef> activation = activationOf(user)) {
      m.activationOp = user;
      m.activation = *activation;
    }
  return m;
}

/// A Gemm whose activation the epilogue absorbs (see the file comment).
struct GemmMatch {
  onnx::GemmOp gemm;
  onnx::ReshapeOp reshape; // null when the activation reads the Gemm
  Operation *activationOp;
  StringRef activation;

  SmallVector<Operation *, 3> ops() const { return {gemm, activationOp}; }
};

std::optional<GemmMatch> matchGemm(onnx::GemmOp gemm) {
  auto a = dyn_cast<RankedTensorType>(gemm.getA().getType());
  auto b = dyn_cast<RankedTensorType>(gemm.getB().getType());
  auto y = dyn_cast<RankedTensorType>(gemm.getY().getType());
  if (!a || !b || !y || !isF32Tensor(a) || !isF32Tensor(b) || !isF32Tensor(y) || b.getRank() != 2 ||
      gemm.getTransA() != 0 || gemm.getAlpha().convertToDouble() != 1.0 ||
      gemm.getBeta().convertToDouble() != 1.0)
    return std::nullopt;
  int64_t nDim = gemm.getTransB() != 0 ? 0 : 1;
  if (b.isDynamicDim(nDim))
    return std::nullopt;
  Value c = gemm.getC();
  if (!ortc::isAbsentOperand(c)) {
    auto cType = dyn_cast<RankedTensorType>(c.getType());
    if (!cType || !isF32Tensor(cType) || cType.getRank() != 1 ||
        cType.getDimSize(0) != b.getDimSize(nDim))
      return std::nullopt;
  }
  GemmMatch m{gemm, nullptr, ortc::soleUser(gemm.getY()), "none"};
  if (auto reshape = dyn_cast_or_null<onnx::ReshapeOp>(m.activationOp)) {
    m.reshape = reshape;
    m.activationOp = ortc::soleUser(reshape.getReshaped());
  }
  std::optional<StringRef> activation =
      m.activationOp ? activationOf(m.activationOp) : std::nullopt;
  if (!activation)
    return std::nullopt;
  m.activation = *activation;
  return m;
}

/// Replaces a matched Gemm and its activation with one ortc.matmul_bias (a
/// zero bias where C is absent), which the Reshape, if any, then reads.
void rewrite(GemmMatch m) {
  OpBuilder b(m.gemm);
  Value bias = m.gemm.getC();
  bool transB = m.gemm.getTransB() != 0;
  if (ortc::isAbsentOperand(bias)) {
    auto type = RankedTensorType::get(
        {cast<RankedTensorType>(m.gemm.getB().getType()).getDimSize(transB ? 0 : 1)},
        b.getF32Type());
    OperationState state(m.gemm.getLoc(), "onnx.Constant");
    state.addAttribute("value", DenseElementsAttr::get(type, 0.0f));
    state.addTypes(type);
    bias = b.create(state)->getResult(0);
  }
  fused::MatMulBiasEpilogue epilogue;
  epilogue.transB = transB;
  epilogue.activation = m.activation;
  auto fusedOp = fused::MatMulBiasOp::create(
      b, b.getFusedLoc({m.gemm.getLoc(), m.activationOp->getLoc()}), m.gemm.getY().getType(),
      m.gemm.getA(), m.gemm.getB(), bias, epilogue);
  Value product = fusedOp.getOutput();
  if (m.reshape) {
    m.reshape->setOperand(0, product);
    product = m.reshape.getReshaped();
  }
  m.activationOp->getResult(0).replaceAllUsesWith(product);
  m.activationOp->erase();
  m.gemm->erase();
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
  fused::MatMulBiasEpilogue epilogue;
  epilogue.activation = m.activation;
  auto fusedOp =
      fused::MatMulBiasOp::create(b, b.getFusedLoc(locations), last->getResult(0).getType(),
                                  m.matmul.getA(), m.matmul.getB(), m.bias(), epilogue);
  last->getResult(0).replaceAllUsesWith(fusedOp.getOutput());
  // From the last op back: each has no readers left.
  for (Operation *op : llvm::reverse(chain))
    op->erase();
}

/// A matmul_bias with no activation whose only reader adds a value of its
/// own type (a skip connection) takes that value as its residual: one
/// ortc.matmul_bias at the Add, so the residual is defined before it.
bool foldResidual(fused::MatMulBiasOp op) {
  if (op.getActivation() != "none" || op.getResidual())
    return false;
  auto add = dyn_cast_or_null<onnx::AddOp>(ortc::soleUser(op.getOutput()));
  if (!add || add.getC().getType() != op.getOutput().getType())
    return false;
  Value residual = add.getA() == op.getOutput() ? add.getB() : add.getA();
  if (residual == op.getOutput() || residual.getType() != op.getOutput().getType())
    return false;
  OpBuilder b(add);
  fused::MatMulBiasEpilogue epilogue = op.getEpilogue();
  epilogue.residual = residual;
  auto folded = fused::MatMulBiasOp::create(b, b.getFusedLoc({op.getLoc(), add.getLoc()}),
                                            add.getC().getType(), op.getA(), op.getB(),
                                            op.getBias(), epilogue);
  add.getC().replaceAllUsesWith(folded.getOutput());
  add->erase();
  op->erase();
  return true;
}

struct CpuFuseMatMulEpiloguePass
    : ortc::cpu::impl::CpuFuseMatMulEpilogueBase<CpuFuseMatMulEpiloguePass> {
  void runOnOperation() override {
    std::vector<Match> matches;
    getOperation().walk([&](onnx::MatMulOp matmul) {
      if (std::optional<Match> m = matchMatMul(matmul))
        matches.push_back(*m);
    });
    std::vector<GemmMatch> gemms;
    getOperation().walk([&](onnx::GemmOp gemm) {
      if (std::optional<GemmMatch> m = matchGemm(gemm))
        gemms.push_back(*m);
    });
    // Two matches may share an op (two MatMuls of [N] results added): the
    // first rewritten takes it and the other is left as it is.
    llvm::SmallPtrSet<Operation *, 16> rewritten;
    auto claim = [&](ArrayRef<Operation *> ops) {
      if (llvm::any_of(ops, [&](Operation *op) { return rewritten.contains(op); }))
        return false;
      rewritten.insert(ops.begin(), ops.end());
      ++numFused;
      return true;
    };
    for (Match &m : matches)
      if (claim(m.ops()))
        rewrite(m);
    for (GemmMatch &m : gemms)
      if (claim(m.ops()))
        rewrite(m);
    std::vector<fused::MatMulBiasOp> products;
    getOperation().walk([&](fused::MatMulBiasOp op) { products.push_back(op); });
    for (fused::MatMulBiasOp op : products)
      numResiduals += foldResidual(op);
  }
};

} // namespace
