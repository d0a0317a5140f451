//===- CudaClaims.cpp - what the CUDA EP runs -----------------------------===//

#include "providers/cuda/compile/CudaClaims.h"

#include "providers/cuda/compile/KernelGroups.h"
#include "providers/cuda/compile/ReductionKernels.h"
#include "providers/cuda/compile/SpatialKernels.h"
#include "providers/cuda/compile/DataMovementKernels.h"

#include "compiler/Lowering/LowerToLinalg.h"
#include "compiler/Transforms/SymbolicShapes.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"
#include "dialects/onnx/OnnxSchema.h"
#include "runtime/ep/Tensor.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"

#include <memory>
#include <set>

using namespace mlir;

namespace ortc::cuda {

namespace {

struct Refusal {
  RejectedKind kind = RejectedKind::OpType;
  std::string rejected, accepts, remediation;
  bool any() const { return !rejected.empty(); }
};

bool isOp(Operation *op, StringRef name) { return op && op->getName().getStringRef() == name; }

/// The operands a view reads for its shape or axes: constants, or absent.
bool constantOrAbsent(Value v) {
  Operation *def = v.getDefiningOp();
  return isOp(def, "onnx.Constant") || isOp(def, "onnx.NoValue");
}

const char *kViewOps = "Reshape, Flatten, Squeeze, Unsqueeze";

/// Every operand and result a ranked tensor of an element type the device
/// buffers hold, with an expression for each dim.
Refusal checkValues(Operation *op, const SymbolicShapes &shapes) {
  auto check = [&](Value v, const std::string &what) -> Refusal {
    if (isOp(v.getDefiningOp(), "onnx.NoValue"))
      return {};
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t)
      return {RejectedKind::Shape, what + " is not a ranked tensor", "ranked tensors"};
    int32_t code = 0;
    Type e = t.getElementType();
    if (e.isF32() || e.isF64() || e.isF16() || e.isBF16() || e.isInteger(1))
      code = 1;
    else if (auto i = dyn_cast<IntegerType>(e))
      code = (i.getWidth() == 8 || i.getWidth() == 16 || i.getWidth() == 32 || i.getWidth() == 64);
    if (!code) {
      std::string type;
      llvm::raw_string_ostream(type) << e;
      return {RejectedKind::DType, what + " has element type " + type,
              "f32, f64, f16, bf16, bool and 8- to 64-bit integers"};
    }
    const SmallVector<int32_t> *dims = shapes.dims(v);
    if (!dims || llvm::is_contained(*dims, kUnknownDim))
      return {RejectedKind::Shape,
              what + " has a dim no shape rule gives as an expression of the inputs' dims",
              "tensors whose dims the compiler can compute before the run"};
    return {};
  };
  for (auto [i, v] : llvm::enumerate(op->getOperands()))
    if (Refusal r = check(v, "input " + std::to_string(i)); r.any())
      return r;
  // A size only the op's own run decides (a data symbol no input's dim
  // reads: NonZero's count, a computed TopK K) has no binding in a CUDA plan.
  std::set<int64_t> known;
  for (Value v : op->getOperands())
    if (const SmallVector<int32_t> *dims = shapes.dims(v))
      for (int32_t d : *dims)
        shapes.collectDataSymbols(d, known);
  for (auto [i, v] : llvm::enumerate(op->getResults())) {
    // An optional output left out or unused (MaxPool's Indices).
    if (i > 0 && (isa<NoneType>(v.getType()) || v.use_empty()))
      continue;
    if (Refusal r = check(v, "output " + std::to_string(i)); r.any())
      return r;
    std::set<int64_t> reads;
    for (int32_t d : *shapes.dims(v))
      shapes.collectDataSymbols(d, reads);
    for (int64_t k : reads)
      if (!known.count(k))
        return {RejectedKind::Shape,
                "output " + std::to_string(i) + " " + shapes.print(v) +
                    " is sized by the data when the op runs",
                "ops whose output sizes follow from their inputs' dims"};
  }
  return {};
}

Refusal checkElementwise(Operation *op, const SymbolicShapes &shapes) {
  // A kernel reads an input dim as the output's; where that cannot hold
  // (SwiGLU, BitCast) a dynamic input dim is refused.
  if (!readsInputDimsAsOutputs(op))
    for (auto [i, v] : llvm::enumerate(op->getOperands()))
      if (auto t = dyn_cast<RankedTensorType>(v.getType()); t && !t.hasStaticShape())
        return {RejectedKind::Shape,
                "input " + std::to_string(i) + " has a dynamic dim, which this op's kernel "
                                              "cannot line up with the output's",
                "static input shapes for this op"};
  return {};
}

/// MatMul and Gemm: one float type, and batch dims cuBLAS's strided batch
/// can express.
Refusal checkGemm(Operation *op, const SymbolicShapes &shapes) {
  Type element;
  for (auto [i, v] : llvm::enumerate(op->getOperands())) {
    if (isOp(v.getDefiningOp(), "onnx.NoValue"))
      continue;
    Type e = cast<RankedTensorType>(v.getType()).getElementType();
    if (!e.isF32() && !e.isF16() && !e.isBF16()) {
      std::string type;
      llvm::raw_string_ostream(type) << e;
      return {RejectedKind::DType, "input " + std::to_string(i) + " has element type " + type,
              "f32, f16 and bf16 matrices (cuBLAS)"};
    }
    if (element && e != element)
      return {RejectedKind::DType, "inputs of different element types", "one element type"};
    element = e;
  }
  if (isa<onnx_dialect::GemmOp>(op))
    return {};
  auto a = cast<RankedTensorType>(op->getOperand(0).getType());
  auto b = cast<RankedTensorType>(op->getOperand(1).getType());
  if (a.getRank() == 0 || b.getRank() == 0)
    return {RejectedKind::Shape, "a scalar operand", "operands of rank 1 or more"};
  // Batch dims: those before the last two.
  auto batchOf = [&](Value v, RankedTensorType t) {
    SmallVector<int32_t> dims;
    if (t.getRank() > 2)
      dims.assign(shapes.dims(v)->begin(), shapes.dims(v)->end() - 2);
    return dims;
  };
  SmallVector<int32_t> batchA = batchOf(op->getOperand(0), a),
                       batchB = batchOf(op->getOperand(1), b);
  auto allOnes = [&](const SmallVector<int32_t> &dims) {
    return llvm::all_of(dims,
                        [&](int32_t d) { return shapes.table().constantValue(d) == int64_t(1); });
  };
  if (allOnes(batchA) || allOnes(batchB) || batchA == batchB)
    return {};
  return {RejectedKind::Shape,
          "batch dims " + shapes.print(op->getOperand(0)) + " and " +
              shapes.print(op->getOperand(1)) + " that broadcast in part",
          "batch dims equal on both sides or all 1 on one (a strided-batched GEMM)"};
}

/// ortc.attention: one float type, q, k and v of one rank, and batch dims
/// both GEMMs can stride over (cuda-expand-attention's products).
Refusal checkAttention(Operation *op, const SymbolicShapes &shapes) {
  auto attention = cast<fused::AttentionOp>(op);
  Type element = cast<RankedTensorType>(attention.getQuery().getType()).getElementType();
  if (!element.isF32() && !element.isF16() && !element.isBF16())
    return {RejectedKind::DType, "a query that is not f32, f16 or bf16",
            "f32, f16 and bf16 attention"};
  SmallVector<Value> operands = {attention.getQuery(), attention.getKey(), attention.getValue()};
  if (attention.getMask())
    operands.push_back(attention.getMask());
  int64_t rank = cast<RankedTensorType>(attention.getQuery().getType()).getRank();
  for (Value v : operands) {
    auto t = cast<RankedTensorType>(v.getType());
    if (t.getElementType() != element)
      return {RejectedKind::DType, "operands of different element types (a boolean mask?)",
              "q, k, v and an additive mask of one float type"};
  }
  for (Value v : ArrayRef<Value>(operands).take_front(3))
    if (cast<RankedTensorType>(v.getType()).getRank() != rank || rank < 2)
      return {RejectedKind::Shape, "q, k and v of different ranks, or of rank below 2",
              "q, k and v of one rank >= 2"};
  auto batch = [&](Value v) {
    const SmallVector<int32_t> *dims = shapes.dims(v);
    return SmallVector<int32_t>(dims->begin(), dims->end() - 2);
  };
  auto ones = [&](const SmallVector<int32_t> &dims) {
    return llvm::all_of(dims,
                        [&](int32_t d) { return shapes.table().constantValue(d) == int64_t(1); });
  };
  SmallVector<int32_t> bq = batch(attention.getQuery()), bk = batch(attention.getKey()),
                       bv = batch(attention.getValue());
  SmallVector<int32_t> scores = ones(bq) ? bk : bq;
  if (!(ones(bq) || ones(bk) || bq == bk) || !(ones(scores) || ones(bv) || scores == bv))
    return {RejectedKind::Shape, "batch dims of q, k and v that broadcast in part",
            "batch dims equal or all 1 (strided-batched GEMMs)"};
  return {};
}

KernelCost costOf(Operation *op) {
  double bytes = 0;
  for (Value v : llvm::concat<Value>(op->getOperands(), op->getResults()))
    if (auto t = dyn_cast<RankedTensorType>(v.getType())) {
      double n = 1;
      for (int64_t d : t.getShape())
        n *= ShapedType::isDynamic(d) ? 1 : double(d);
      n *= std::max<unsigned>(t.getElementTypeBitWidth(), 8) / 8;
      bytes += n;
    }
  KernelCost cost;
  cost.memoryNs = bytes / 3000.0; // ~3 TB/s of HBM
  cost.launchNs = 3000;
  return cost;
}

} // namespace

bool isCudaAttentionOp(Operation *op) { return isa<fused::AttentionOp>(op); }

bool isCudaGemmOp(Operation *op) {
  return isa<onnx_dialect::MatMulOp, onnx_dialect::GemmOp, fused::MatMulBiasOp>(op);
}

bool isCudaViewOp(Operation *op) {
  StringRef name = op->getName().getStringRef();
  if (name == "onnx.Flatten")
    return true;
  // A Reshape's target may be computed: its result dims are expressions
  // (the claim checks), bound at run time from the target's values.
  if (name == "onnx.Reshape")
    return true;
  if (name == "onnx.Squeeze" || name == "onnx.Unsqueeze")
    return op->getNumOperands() < 2 || constantOrAbsent(op->getOperand(1));
  return false;
}

KernelMatch matchCudaOp(const NodeQuery &query, const std::string &epName) {
  Operation *op = query.op;
  auto decline = [&](const Refusal &r) {
    return KernelMatch::unsupported(
        query.decline(epName, r.kind, r.rejected, r.accepts, r.remediation));
  };
  if (isOp(op, "onnx.Generic")) {
    std::string schemaDomain = query.domain == "ai.onnx" ? "" : query.domain;
    const auto *schema = onnx_dialect::lookupOnnxSchema(schemaDomain, query.opType);
    std::string name = query.domain + "::" + query.opType;
    if (schema)
      return decline({RejectedKind::Opset,
                      "opset " + std::to_string(query.opset) + " of " + name +
                          " (imported untyped, as onnx.Generic)",
                      name + " from opset " + std::to_string(schema->compatibleSince),
                      "re-export the model with opset " +
                          std::to_string(schema->compatibleSince) + " or newer"});
    return decline({RejectedKind::Opset, name + " (no typed schema; imported as onnx.Generic)",
                    "ops with a typed schema in ortc's onnx dialect"});
  }
  if (query.domain != "ai.onnx" && query.domain != "ortc")
    return decline({RejectedKind::Domain, "domain " + query.domain, "ai.onnx and ortc ops"});

  std::unique_ptr<SymbolicShapes> ownShapes;
  const SymbolicShapes *shapes = query.shapes;
  if (!shapes) {
    ownShapes = std::make_unique<SymbolicShapes>(op->getParentOfType<func::FuncOp>());
    shapes = ownShapes.get();
  }

  if (std::string why; !isDataMovementKernelOp(op, &why) && !why.empty()) {
    if (Refusal r = checkValues(op, *shapes); r.any())
      return decline(r);
    return decline({RejectedKind::Attribute, why,
                    "Transpose, Concat, Gather, GatherElements, GatherND (static index length), "
                    "Expand, Slice with constant starts, ends, "
                    "axes and steps over static sliced dims, and Split into pieces known at "
                    "compile time over a static axis"});
  }
  if (std::string why; !isSpatialKernelOp(op, &why) && !why.empty()) {
    if (Refusal r = checkValues(op, *shapes); r.any())
      return decline(r);
    return decline({RejectedKind::Attribute, why,
                    "2-D Conv (grouped, depthwise), MaxPool and AveragePool on NCHW f32, f16 "
                    "or bf16"});
  }
  if (std::string why; !isReductionKernelOp(op, &why) && !why.empty()) {
    if (Refusal r = checkValues(op, *shapes); r.any())
      return decline(r);
    return decline({RejectedKind::Attribute, why,
                    "reductions over one contiguous run of constant axes; Softmax and "
                    "LayerNormalization of f32, f16 or bf16"});
  }
  if (isKernelOp(op) || isCudaViewOp(op) || isCudaGemmOp(op) || isReductionKernelOp(op) ||
      isSpatialKernelOp(op) || isDataMovementKernelOp(op) || isCudaAttentionOp(op)) {
    if (Refusal r = checkValues(op, *shapes); r.any())
      return decline(r);
    if (isCudaViewOp(op))
      return KernelMatch::supported(KernelCost{});
    if (isReductionKernelOp(op) || isSpatialKernelOp(op) || isDataMovementKernelOp(op))
      return KernelMatch::supported(costOf(op));
    if (isCudaGemmOp(op)) {
      if (Refusal r = checkGemm(op, *shapes); r.any())
        return decline(r);
      return KernelMatch::supported(costOf(op));
    }
    if (isCudaAttentionOp(op)) {
      if (Refusal r = checkAttention(op, *shapes); r.any())
        return decline(r);
      return KernelMatch::supported(costOf(op));
    }
    if (Refusal r = checkElementwise(op, *shapes); r.any())
      return decline(r);
    return KernelMatch::supported(costOf(op));
  }
  // An elementwise op whose types or attributes the lowering refuses.
  if (ElementwiseRefusal r; explainElementwiseRefusal(op, r)) {
    RejectedKind kind = r.kind == ElementwiseRefusalKind::DType       ? RejectedKind::DType
                        : r.kind == ElementwiseRefusalKind::Shape     ? RejectedKind::Shape
                        : r.kind == ElementwiseRefusalKind::Attribute ? RejectedKind::Attribute
                                                                      : RejectedKind::OpType;
    return decline({kind, r.rejected, r.accepts});
  }
  if (isOp(op, "onnx.Squeeze") || isOp(op, "onnx.Unsqueeze"))
    return decline({RejectedKind::Shape, "its axes input is computed at run time, not a constant",
                    "Squeeze and Unsqueeze whose axes are constants"});
  return decline({RejectedKind::OpType,
                  "no CUDA kernel for " + query.domain + "::" + query.opType + " yet",
                  "elementwise ops (fused into generated kernels), Reduce{Sum,Mean,Max,Min}, "
                  "Softmax, LogSoftmax, LayerNormalization, RMSNormalization, MatMul, Gemm and "
                  "2-D Conv (cuBLAS), MaxPool, AveragePool, Transpose, Concat, Slice, Gather, "
                  "Expand, ortc.attention (as GEMMs and a softmax) and the views " +
                      std::string(kViewOps),
                  "add cpu after cuda in --ep (--ep=cuda,cpu) to run it on the CPU EP"});
}

} // namespace ortc::cuda
