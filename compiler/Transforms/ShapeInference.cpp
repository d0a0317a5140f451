//===- ShapeInference.cpp - onnx-shape-inference --------------------------===//
//
// Forward inference of result types. Each op's shape rule (its
// ShapeInferenceOpInterface, ShapeRules/) proposes an element type and dims
// per result, as expressions (SymbolicShapes.h); a dim whose expression is a
// constant is static. The pass joins the proposal with what the result
// already has: a static dim or a rank known on either side wins, and two
// static dims that disagree are a warning (the inferred type wins, as
// onnxruntime runs the graph) or, with --strict-shapes, an error.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/FunctionTypes.h"
#include "compiler/Transforms/ShapeRules/SequenceTypes.h"
#include "compiler/Transforms/ShapeRules/ShapeRuleContext.h"
#include "compiler/Transforms/SymbolicShapes.h"
#include "dialects/onnx/OnnxDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/Diagnostics.h"

namespace ortc {
#define GEN_PASS_DEF_ONNXSHAPEINFERENCE
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace {

constexpr int64_t kDyn = ShapedType::kDynamic;

/// The type a proposal stands for: a constant dim is static. Null when the
/// rule has no opinion (no element type).
Type proposedType(const ortc::ShapeRuleContext &rule, const ortc::ShapeRuleContext::Proposal &p) {
  if (p.whole)
    return p.whole;
  if (!p.element)
    return nullptr;
  if (!p.dims)
    return UnrankedTensorType::get(p.element);
  SmallVector<int64_t> shape;
  for (int32_t d : *p.dims)
    shape.push_back(rule.constantValue(d).value_or(kDyn));
  return RankedTensorType::get(shape, p.element);
}

/// The more precise of two types of one value, or failure if they disagree.
FailureOr<Type> join(Type have, Type proposed) {
  if (!proposed || have == proposed)
    return have;
  if (isa<od::UnknownType>(have))
    return proposed;
  // A sequence or an optional: the more precise of the element types.
  auto haveSeq = dyn_cast<od::SeqType>(have), newSeq = dyn_cast<od::SeqType>(proposed);
  auto haveOpt = dyn_cast<od::OptType>(have), newOpt = dyn_cast<od::OptType>(proposed);
  if ((haveSeq && newSeq) || (haveOpt && newOpt)) {
    Type a = haveSeq ? haveSeq.getElementType() : haveOpt.getElementType();
    Type b = newSeq ? newSeq.getElementType() : newOpt.getElementType();
    FailureOr<Type> element = join(a, b);
    if (failed(element))
      return failure();
    return haveSeq ? Type(od::SeqType::get(have.getContext(), *element))
                   : Type(od::OptType::get(have.getContext(), *element));
  }
  if (haveSeq || newSeq || haveOpt || newOpt)
    return isa<TensorType>(have) || isa<TensorType>(proposed) ? FailureOr<Type>(failure())
                                                              : FailureOr<Type>(have);
  auto haveTensor = dyn_cast<TensorType>(have), newTensor = dyn_cast<TensorType>(proposed);
  if (!haveTensor || !newTensor)
    return have;
  if (haveTensor.getElementType() != newTensor.getElementType())
    return failure();
  if (!newTensor.hasRank())
    return have;
  if (!haveTensor.hasRank())
    return proposed;
  if (haveTensor.getRank() != newTensor.getRank())
    return failure();
  SmallVector<int64_t> dims;
  for (int64_t i = 0; i < haveTensor.getRank(); ++i) {
    int64_t a = haveTensor.getDimSize(i), b = newTensor.getDimSize(i);
    if (a != kDyn && b != kDyn && a != b)
      return failure();
    dims.push_back(a != kDyn ? a : b);
  }
  return Type(RankedTensorType::get(dims, haveTensor.getElementType()));
}

/// Whether `v` is returned by the graph's own function (not a body's yield).
bool isGraphOutput(Value v) {
  return llvm::any_of(v.getUsers(), [](Operation *user) { return isa<func::ReturnOp>(user); });
}

/// Sets each result's type from its rule's proposal.
class TypeRefiner : public ortc::ResultTypeRefiner {
public:
  explicit TypeRefiner(bool strictShapes) : strictShapes(strictShapes) {}

  void refine(Operation *op, const ortc::ShapeRuleContext &rule) override {
    if (op->hasTrait<OpTrait::IsTerminator>() || op->getNumResults() == 0)
      return;
    // A rule that failed has reported why on the op.
    if (rule.failedRule())
      failedAny = true;
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      Type have = op->getResult(i).getType();
      Type proposed = proposedType(rule, rule.proposals()[i]);
      FailureOr<Type> joined = join(have, proposed);
      if (failed(joined)) {
        // A declared type that inference contradicts (in a body too): the
        // declaration is a hint, as in onnxruntime, which runs with what the
        // graph computes, and so do we unless asked not to. A graph output's
        // element type is the compiled model's contract, so it stays an error.
        auto haveTensor = dyn_cast<TensorType>(have);
        auto inferred = dyn_cast<TensorType>(proposed);
        bool shapeOnly =
            haveTensor && inferred && haveTensor.getElementType() == inferred.getElementType();
        bool hint = haveTensor && inferred && (shapeOnly || !isGraphOutput(op->getResult(i)));
        if (strictShapes || !hint) {
          op->emitError("result ") << i << " is declared as " << have << " but its inputs give "
                                   << proposed;
          failedAny = true;
          continue;
        }
        op->emitWarning("result ")
            << i << " is declared as " << have << " but its inputs give " << proposed
            << (shapeOnly ? "; using the inferred shape" : "; using the inferred type");
        joined = proposed;
      }
      if (*joined != have) {
        op->getResult(i).setType(*joined);
        ++numRefined;
      }
    }
  }

  bool strictShapes;
  bool failedAny = false;
  unsigned numRefined = 0;
};

} // namespace

namespace {
/// A Loop body's arguments that the model leaves unranked take the rank of
/// what flows in: the iteration number and condition are scalars, a carried
/// value has its initial value's rank (dims dynamic, as they may change per
/// iteration; a scalar stays static).
unsigned refineLoopBodyArguments(func::FuncOp func) {
  unsigned refined = 0;
  func.walk([&](Operation *op) {
    if (op->getName().getStringRef() != "onnx.Loop" || op->getNumRegions() != 1 ||
        op->getRegion(0).empty())
      return;
    Block &body = op->getRegion(0).front();
    if (body.getNumArguments() != op->getNumOperands())
      return;
    for (BlockArgument arg : body.getArguments()) {
      // A carried sequence whose declared elements have no rank takes the
      // Loop result's type, which covers its initial value and what every
      // iteration yields.
      if (TensorType held = ortc::containerElementType(arg.getType());
          held && !held.hasRank() && !isa<TensorType>(arg.getType()) && arg.getArgNumber() >= 2 &&
          arg.getArgNumber() - 2 < op->getNumResults()) {
        Type result = op->getResult(arg.getArgNumber() - 2).getType();
        TensorType resultHeld = ortc::containerElementType(result);
        if (resultHeld && resultHeld.hasRank() &&
            ortc::containerKindOf(result) == ortc::containerKindOf(arg.getType())) {
          arg.setType(result);
          ++refined;
        }
        continue;
      }
      auto have = dyn_cast<UnrankedTensorType>(arg.getType());
      if (!have)
        continue;
      Type element = have.getElementType();
      Type want;
      if (arg.getArgNumber() < 2) {
        want = RankedTensorType::get({}, element);
      } else if (auto init = dyn_cast<RankedTensorType>(op->getOperand(arg.getArgNumber()).getType());
                 init && init.getElementType() == element) {
        want = RankedTensorType::get(SmallVector<int64_t>(init.getRank(), ShapedType::kDynamic),
                                     element);
      }
      if (want) {
        arg.setType(want);
        ++refined;
      }
    }
  });
  return refined;
}
} // namespace

LogicalResult ortc::inferShapesIn(func::FuncOp func, unsigned &numRefined, bool strictShapes) {
  numRefined += refineLoopBodyArguments(func);
  TypeRefiner refiner(strictShapes);
  SymbolicShapes walk(func, SymbolicShapes::Walk::WithRegions, &refiner);
  numRefined += refiner.numRefined;
  if (refiner.failedAny)
    return failure();
  ortc::syncFunctionResultTypes(func);
  return success();
}

namespace {

struct OnnxShapeInference : ortc::impl::OnnxShapeInferenceBase<OnnxShapeInference> {
  using Base::Base;

  void runOnOperation() override {
    unsigned refined = 0;
    if (failed(ortc::inferShapesIn(getOperation(), refined, strictShapes)))
      return signalPassFailure();
    numRefined += refined;
  }
};

} // namespace
