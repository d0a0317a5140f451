//===- SequenceShapes.cpp - sequences and optionals ------------------------===//
//
// A sequence's type bounds the tensors it may hold (seq<tensor<?x4xf32>>: each
// element is [?, 4]); the rules keep that bound as tight as the graph allows,
// so that a tensor taken out (SequenceAt, ConcatFromSequence,
// OptionalGetElement) has a rank and its static dims, and a data symbol for
// each dim only the run knows.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ShapeRules/SequenceTypes.h"

#include "compiler/Transforms/ShapeRules/ShapeRuleModels.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/onnx/OnnxOps.h"

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace ortc {

std::optional<ContainerKind> containerKindOf(Type type) {
  if (isa<TensorType>(type))
    return ContainerKind::None;
  if (auto seq = dyn_cast<od::SeqType>(type))
    return isa<TensorType>(seq.getElementType()) ? std::optional(ContainerKind::Sequence)
                                                 : std::nullopt;
  if (auto opt = dyn_cast<od::OptType>(type)) {
    if (isa<TensorType>(opt.getElementType()))
      return ContainerKind::OptionalTensor;
    if (auto seq = dyn_cast<od::SeqType>(opt.getElementType());
        seq && isa<TensorType>(seq.getElementType()))
      return ContainerKind::OptionalSequence;
  }
  return std::nullopt;
}

TensorType containerElementType(Type type) {
  if (auto t = dyn_cast<TensorType>(type))
    return t;
  if (auto seq = dyn_cast<od::SeqType>(type))
    return dyn_cast<TensorType>(seq.getElementType());
  if (auto opt = dyn_cast<od::OptType>(type))
    return containerElementType(opt.getElementType());
  return nullptr;
}

TensorType coveringTensorType(TensorType a, TensorType b) {
  if (!a || !b || a.getElementType() != b.getElementType())
    return nullptr;
  if (a == b)
    return a;
  if (!a.hasRank() || !b.hasRank() || a.getRank() != b.getRank())
    return UnrankedTensorType::get(a.getElementType());
  SmallVector<int64_t> dims;
  for (int64_t d = 0; d < a.getRank(); ++d)
    dims.push_back(a.getDimSize(d) == b.getDimSize(d) ? a.getDimSize(d) : ShapedType::kDynamic);
  return RankedTensorType::get(dims, a.getElementType());
}

Type coveringContainerType(Type a, Type b) {
  std::optional<ContainerKind> ka = containerKindOf(a), kb = containerKindOf(b);
  if (!ka || !kb || *ka != *kb || *ka == ContainerKind::None)
    return nullptr;
  TensorType element = coveringTensorType(containerElementType(a), containerElementType(b));
  if (!element)
    return nullptr;
  MLIRContext *context = a.getContext();
  switch (*ka) {
  case ContainerKind::Sequence:
    return od::SeqType::get(context, element);
  case ContainerKind::OptionalTensor:
    return od::OptType::get(context, element);
  case ContainerKind::OptionalSequence:
    return od::OptType::get(context, od::SeqType::get(context, element));
  case ContainerKind::None:
    break;
  }
  return nullptr;
}

bool isEmptySequence(Value v) { return v && v.getDefiningOp<od::SequenceEmptyOp>(); }

bool isEmptyContainer(Value v) {
  if (isEmptySequence(v))
    return true;
  auto optional = v ? v.getDefiningOp<od::OptionalOp>() : nullptr;
  return optional && (optional.getInput() == nullptr || isa<NoneType>(optional.getInput().getType()));
}

namespace {

Type seqOf(TensorType element) { return od::SeqType::get(element.getContext(), element); }

/// The element type `v` bounds, when `v` is a sequence.
TensorType sequenceElements(Value v) {
  auto seq = dyn_cast<od::SeqType>(v.getType());
  return seq ? dyn_cast<TensorType>(seq.getElementType()) : nullptr;
}

/// A Loop body's carried sequence that starts empty and whose only other
/// source is `yielded`: what it holds is what `yielded` adds to it.
bool carriedFromEmptyInto(Value seq, Value yielded) {
  auto arg = dyn_cast<BlockArgument>(seq);
  if (!arg || arg.getArgNumber() < 2)
    return false;
  auto loop = dyn_cast<od::LoopOp>(arg.getOwner()->getParentOp());
  if (!loop || arg.getOwner() != &loop.getBody().front() ||
      arg.getArgNumber() - 2 >= loop.getVInitial().size())
    return false;
  Operation *yield = arg.getOwner()->getTerminator();
  return isEmptySequence(loop.getVInitial()[arg.getArgNumber() - 2]) && yield &&
         yield->getOperand(arg.getArgNumber() - 1) == yielded;
}

LogicalResult inferSequenceEmpty(od::SequenceEmptyOp op, ShapeRuleContext &ctx) {
  int code = op.getDtype() ? int(*op.getDtype()) : 1; // ONNX: float by default
  Type element = od::elementTypeForOnnxCode(op->getContext(), code);
  if (!element)
    return ctx.fail("dtype " + Twine(code) + " is no tensor element type");
  ctx.setType(op.getOutput(), seqOf(UnrankedTensorType::get(element)));
  return success();
}

LogicalResult inferSequenceConstruct(od::SequenceConstructOp op, ShapeRuleContext &ctx) {
  TensorType covering;
  for (Value v : op.getInputs()) {
    auto t = dyn_cast<TensorType>(v.getType());
    if (!t)
      return success();
    covering = covering ? coveringTensorType(covering, t) : t;
    if (!covering)
      return ctx.fail("its inputs differ in element type");
  }
  if (covering)
    ctx.setType(op.getOutputSequence(), seqOf(covering));
  return success();
}

LogicalResult inferSequenceInsert(od::SequenceInsertOp op, ShapeRuleContext &ctx) {
  TensorType held = sequenceElements(op.getInputSequence());
  auto inserted = dyn_cast<TensorType>(op.getTensor().getType());
  if (!held || !inserted)
    return success();
  // Into an empty sequence (or a Loop's that starts empty and gets only
  // this), the elements are the inserted tensor's type.
  bool empty = isEmptySequence(op.getInputSequence()) ||
               carriedFromEmptyInto(op.getInputSequence(), op.getOutputSequence());
  TensorType covering = empty ? inserted : coveringTensorType(held, inserted);
  if (!covering)
    return ctx.fail("the tensor's element type differs from the sequence's");
  ctx.setType(op.getOutputSequence(), seqOf(covering));
  return success();
}

LogicalResult inferSequenceErase(od::SequenceEraseOp op, ShapeRuleContext &ctx) {
  if (TensorType held = sequenceElements(op.getInputSequence()))
    ctx.setType(op.getOutputSequence(), seqOf(held));
  return success();
}

LogicalResult inferSequenceAt(od::SequenceAtOp op, ShapeRuleContext &ctx) {
  if (TensorType held = sequenceElements(op.getInputSequence()))
    ctx.setTakenFrom(op.getTensor(), held);
  return success();
}

LogicalResult inferSequenceLength(od::SequenceLengthOp op, ShapeRuleContext &ctx) {
  ctx.setResult(op.getLength(), IntegerType::get(op->getContext(), 64), {});
  return success();
}

/// Each piece has the input's dims, the split axis as the split makes it:
/// 1 without a split (removed when keepdims is 0), the chunk when a constant
/// split gives every piece one size, else dynamic.
LogicalResult inferSplitToSequence(od::SplitToSequenceOp op, ShapeRuleContext &ctx) {
  auto in = dyn_cast<RankedTensorType>(op.getInput().getType());
  if (!in) {
    if (auto t = dyn_cast<TensorType>(op.getInput().getType()))
      ctx.setType(op.getOutputSequence(), seqOf(UnrankedTensorType::get(t.getElementType())));
    return success();
  }
  std::optional<int64_t> axis = normalizeAxis(op.getAxis(), in.getRank());
  if (!axis)
    return ctx.fail("axis " + Twine(op.getAxis()) + " is out of range for rank " +
                    Twine(in.getRank()));
  SmallVector<int64_t> dims(in.getShape());
  if (!ctx.present(op.getSplit())) {
    if (op.getKeepdims() == 0)
      dims.erase(dims.begin() + *axis);
    else
      dims[*axis] = 1;
  } else {
    int64_t piece = ShapedType::kDynamic;
    if (std::optional<SmallVector<int64_t>> split = ctx.constantInts(op.getSplit())) {
      bool scalar = cast<ShapedType>(op.getSplit().getType()).getRank() == 0;
      int64_t length = in.getDimSize(*axis);
      if (!split->empty() && llvm::all_equal(*split) &&
          (!scalar || (!ShapedType::isDynamic(length) && length % (*split)[0] == 0)))
        piece = (*split)[0];
    }
    dims[*axis] = piece;
  }
  ctx.setType(op.getOutputSequence(),
              seqOf(RankedTensorType::get(dims, in.getElementType())));
  return success();
}

/// The elements' rank (one more with new_axis); the concatenated dim and
/// every dim the element type leaves dynamic are data.
LogicalResult inferConcatFromSequence(od::ConcatFromSequenceOp op, ShapeRuleContext &ctx) {
  TensorType held = sequenceElements(op.getInputSequence());
  if (!held)
    return success();
  Value result = op.getConcatResult();
  if (!held.hasRank()) {
    ctx.setTakenFrom(result, held);
    return success();
  }
  bool newAxis = op.getNewAxis() != 0;
  int64_t rank = held.getRank() + (newAxis ? 1 : 0);
  std::optional<int64_t> axis = normalizeAxis(op.getAxis(), rank);
  if (!axis)
    return ctx.fail("axis " + Twine(op.getAxis()) + " is out of range for rank " + Twine(rank));
  SmallVector<int64_t> dims(held.getShape());
  if (newAxis)
    dims.insert(dims.begin() + *axis, ShapedType::kDynamic);
  else
    dims[*axis] = ShapedType::kDynamic;
  ctx.setTakenFrom(result, RankedTensorType::get(dims, held.getElementType()));
  return success();
}

LogicalResult inferOptional(od::OptionalOp op, ShapeRuleContext &ctx) {
  Type inner;
  if (ctx.present(op.getInput()))
    inner = op.getInput().getType();
  else if (op.getTypeAttr())
    inner = op.getTypeAttr().getValue();
  if (inner && containerKindOf(inner) &&
      (*containerKindOf(inner) == ContainerKind::None ||
       *containerKindOf(inner) == ContainerKind::Sequence))
    ctx.setType(op.getOutput(), od::OptType::get(op->getContext(), inner));
  return success();
}

LogicalResult inferOptionalHasElement(od::OptionalHasElementOp op, ShapeRuleContext &ctx) {
  ctx.setResult(op.getOutput(), IntegerType::get(op->getContext(), 1), {});
  return success();
}

/// An optional's value; a tensor or a sequence is itself.
LogicalResult inferOptionalGetElement(od::OptionalGetElementOp op, ShapeRuleContext &ctx) {
  Type in = op.getInput().getType();
  if (isa<TensorType>(in)) {
    ctx.setLike(op.getOutput(), op.getInput());
    return success();
  }
  Type inner = in;
  if (auto opt = dyn_cast<od::OptType>(in))
    inner = opt.getElementType();
  if (auto t = dyn_cast<TensorType>(inner))
    ctx.setTakenFrom(op.getOutput(), t);
  else if (isa<od::SeqType>(inner))
    ctx.setType(op.getOutput(), inner);
  return success();
}

} // namespace

void attachSequenceShapeRules(MLIRContext *context) {
  attachRule<inferSequenceEmpty, od::SequenceEmptyOp>(context);
  attachRule<inferSequenceConstruct, od::SequenceConstructOp>(context);
  attachRule<inferSequenceInsert, od::SequenceInsertOp>(context);
  attachRule<inferSequenceErase, od::SequenceEraseOp>(context);
  attachRule<inferSequenceAt, od::SequenceAtOp>(context);
  attachRule<inferSequenceLength, od::SequenceLengthOp>(context);
  attachRule<inferSplitToSequence, od::SplitToSequenceOp>(context);
  attachRule<inferConcatFromSequence, od::ConcatFromSequenceOp>(context);
  attachRule<inferOptional, od::OptionalOp>(context);
  attachRule<inferOptionalHasElement, od::OptionalHasElementOp>(context);
  attachRule<inferOptionalGetElement, od::OptionalGetElementOp>(context);
}

} // namespace ortc
