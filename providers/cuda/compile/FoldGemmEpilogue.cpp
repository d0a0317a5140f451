//===- FoldGemmEpilogue.cpp - cuda-fold-gemm-epilogue ---------------------===//
//
// A matrix product with a bias over its last dim (and a ReLU or a tanh GELU
// after) becomes ortc.matmul_bias: one cuBLASLt call with an epilogue
// instead of a GEMM and an elementwise kernel.
//
//===----------------------------------------------------------------------===//

#include "providers/cuda/compile/Passes.h"

#include "compiler/Transforms/OpQueries.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinTypes.h"
#include "llvm/ADT/SmallPtrSet.h"

namespace ortc::cuda {
#define GEN_PASS_DEF_CUDAFOLDGEMMEPILOGUE
#include "providers/cuda/compile/Passes.h.inc"
} // namespace ortc::cuda

using namespace mlir;
namespace onnx = ortc::onnx_dialect;
namespace fused = ortc::fused;

namespace {

/// f32, f16 or bf16: what cuBLASLt's epilogues take.
bool isGemmFloat(Type type) {
  auto tensor = dyn_cast<RankedTensorType>(type);
  return tensor && (tensor.getElementType().isF32() || tensor.getElementType().isF16() ||
                    tensor.getElementType().isBF16());
}

/// Whether `bias` is a vector [N] of `result`'s type, N its static last dim.
bool isLastDimBias(Value bias, Value result) {
  auto b = dyn_cast<RankedTensorType>(bias.getType());
  auto y = dyn_cast<RankedTensorType>(result.getType());
  return b && y && b.getRank() == 1 && y.getRank() >= 1 && !b.isDynamicDim(0) &&
         b.getDimSize(0) == y.getShape().back() && b.getElementType() == y.getElementType();
}

/// A product whose bias the epilogue can add. Only ops are kept: a Value
/// read at match time may be the result of an op that folding an earlier
/// candidate replaced and erased (a Relu that feeds the next layer's
/// MatMul), so the operands are read from the ops when the candidate is
/// folded.
struct Candidate {
  Operation *product;     // onnx.MatMul or onnx.Gemm
  Operation *add;         // the Add of the bias; null for a Gemm whose C is the bias
  unsigned biasIndex = 0; // the bias's operand index in `add` (or 2, the Gemm's C)
  bool transB = false;
  float alpha = 1;

  Value a() const { return product->getOperand(0); }
  Value b() const { return product->getOperand(1); }
  Value bias() const { return add ? add->getOperand(biasIndex) : product->getOperand(2); }
};

/// The Add that is the one reader of `product` and adds a bias to it, and
/// the bias's operand index in it.
std::optional<std::pair<Operation *, unsigned>> biasAdd(Value product) {
  Operation *user = ortc::soleUser(product);
  if (!isa_and_nonnull<onnx::AddOp>(user) || user->getResult(0).getType() != product.getType() ||
      user->getOperand(0) == user->getOperand(1))
    return std::nullopt;
  unsigned biasIndex = user->getOperand(0) == product ? 1 : 0;
  if (!isLastDimBias(user->getOperand(biasIndex), product))
    return std::nullopt;
  return std::make_pair(user, biasIndex);
}

std::optional<Candidate> matchProduct(Operation *op) {
  if (auto mm = dyn_cast<onnx::MatMulOp>(op)) {
    auto b = dyn_cast<RankedTensorType>(mm.getB().getType());
    if (!b || b.getRank() != 2 || !isGemmFloat(mm.getY().getType()))
      return std::nullopt;
    std::optional<std::pair<Operation *, unsigned>> add = biasAdd(mm.getY());
    if (!add)
      return std::nullopt;
    return Candidate{op, add->first, add->second, false, 1.0f};
  }
  auto gemm = dyn_cast<onnx::GemmOp>(op);
  if (!gemm || gemm.getTransA() != 0 || !isGemmFloat(gemm.getY().getType()))
    return std::nullopt;
  bool transB = gemm.getTransB() != 0;
  float alpha = gemm.getAlpha().convertToFloat();
  Value c = gemm.getC();
  if (isa_and_nonnull<onnx::NoValueOp>(c.getDefiningOp())) {
    // Gemm(A, B) then Add(bias), as torch's addmm exports.
    std::optional<std::pair<Operation *, unsigned>> add = biasAdd(gemm.getY());
    if (!add)
      return std::nullopt;
    return Candidate{op, add->first, add->second, transB, alpha};
  }
  // Gemm(A, B, C) with C [N] and beta 1: alpha A op(B) + C.
  if (gemm.getBeta().convertToFloat() != 1.0f || !isLastDimBias(c, gemm.getY()))
    return std::nullopt;
  return Candidate{op, nullptr, 2, transB, alpha};
}

} // namespace

unsigned ortc::cuda::foldGemmEpilogue(func::FuncOp fn) {
  std::vector<Candidate> candidates;
  fn.walk([&](Operation *op) {
    if (std::optional<Candidate> c = matchProduct(op))
      candidates.push_back(*c);
  });
  // Two products may share one Add (MatMul + MatMul of [N] results): the
  // first to be folded takes it, the other is left as it is.
  llvm::SmallPtrSet<Operation *, 16> folded;
  unsigned numFolded = 0;
  for (const Candidate &c : candidates) {
    if (folded.contains(c.product) || (c.add && folded.contains(c.add)))
      continue;
    Operation *last = c.add ? c.add : c.product;
    Value result = last->getResult(0);
    // An activation after it, when the sum has no other reader.
    fused::MatMulBiasEpilogue epilogue;
    epilogue.transB = c.transB;
    epilogue.alpha = c.alpha;
    if (Operation *user = ortc::soleUser(result)) {
      if (isa<onnx::ReluOp>(user) && user->getResult(0).getType() == result.getType()) {
        epilogue.activation = "relu";
      } else if (auto gelu = dyn_cast<fused::GeluOp>(user);
                 gelu && gelu.getApproximate() == "tanh" && gelu.getType() == result.getType()) {
        epilogue.activation = "gelu_tanh";
      }
      if (epilogue.activation != "none")
        last = user;
    }
    SmallVector<Operation *, 3> chain = {c.product};
    if (c.add)
      chain.push_back(c.add);
    if (last != chain.back())
      chain.push_back(last);
    // The product's location first: messages name its ONNX node.
    SmallVector<Location, 3> locations;
    for (Operation *op : chain)
      locations.push_back(op->getLoc());
    OpBuilder b(last);
    auto product =
        fused::MatMulBiasOp::create(b, b.getFusedLoc(locations), last->getResult(0).getType(),
                                    c.a(), c.b(), c.bias(), epilogue);
    last->getResult(0).replaceAllUsesWith(product.getOutput());
    // Erase from the last op back: each has no readers left.
    for (Operation *op : llvm::reverse(chain)) {
      folded.insert(op);
      op->erase();
    }
    ++numFolded;
  }
  return numFolded;
}

namespace {

struct CudaFoldGemmEpiloguePass
    : ortc::cuda::impl::CudaFoldGemmEpilogueBase<CudaFoldGemmEpiloguePass> {
  void runOnOperation() override { numFolded += ortc::cuda::foldGemmEpilogue(getOperation()); }
};

} // namespace
