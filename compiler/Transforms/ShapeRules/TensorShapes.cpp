//===- TensorShapes.cpp - data movement and shape-computing ops -----------===//
//
// Reshape and its kin, Concat/Split/Slice/Gather, Pad/Tile/Expand, and the
// ops that make or read shapes (Shape, Size, ConstantOfShape, Range). Shape
// values flow through here: Shape(x) has x's dims as elements, and Gather,
// Slice, Concat, (Un)Squeeze, Reshape and Flatten pass them on, so that a
// Reshape or Expand target built from Shape(x) resolves to x's dims.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/ShapeRules/ShapeRuleModels.h"

#include "compiler/Transforms/HostTensor.h"
#include "dialects/onnx/OnnxOps.h"
#include "runtime/ep/SliceGeometry.h"

#include "llvm/ADT/Twine.h"

#include <cmath>

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace ortc {
namespace {

/// The length of a 1-D shape tensor when it is static.
std::optional<int64_t> staticLength(ShapeRuleContext &ctx, Value shape) {
  const DimList *len = ctx.dims(shape);
  return len && len->size() == 1 ? ctx.constantValue((*len)[0]) : std::nullopt;
}

/// A result computed from a shape tensor `shape` whose values are unknown:
/// its rank is shape's length when that is static.
void setRankFromShapeLength(ShapeRuleContext &ctx, Value result, Type element, Value shape) {
  if (std::optional<int64_t> n = staticLength(ctx, shape))
    ctx.setResult(result, element, DimList(*n, kUnknownDim));
  else
    ctx.setUnranked(result, element);
}

/// The shape value of `from` passed on unchanged (a reshape of its
/// elements; the analysis checks the count).
void passElements(ShapeRuleContext &ctx, Value result, Value from) {
  if (const DimList *e = ctx.elements(from))
    ctx.setElements(result, *e);
}

LogicalResult inferTranspose(od::TransposeOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getData());
  const DimList *in = ctx.dimsOrUnranked(op.getData(), op.getTransposed(), element);
  if (!in)
    return success();
  std::optional<ArrayRef<int64_t>> perm = op.getPerm();
  if (perm && perm->size() != in->size())
    return ctx.fail("perm does not permute the " + Twine(in->size()) + " input dims");
  DimList out;
  SmallVector<bool> used(in->size(), false);
  for (size_t i = 0; i < in->size(); ++i) {
    int64_t from = perm ? (*perm)[i] : int64_t(in->size() - 1 - i);
    if (from < 0 || from >= int64_t(in->size()) || used[from])
      return ctx.fail("perm does not permute the " + Twine(in->size()) + " input dims");
    used[from] = true;
    out.push_back((*in)[from]);
  }
  ctx.setResult(op.getTransposed(), element, out);
  return success();
}

/// Reshape dims for a target with elements known only at run time (value
/// symbols, which may be 0 to copy the input's dim or -1 to infer one):
/// each such element e becomes [e == 0] * in_i + [e == -1] * inferred +
/// [else] * e, and the inferred size is the element count divided by the
/// product of the others (-1 counting as 1). The Reshape kernel computes the
/// same from the data and checks it.
DimList reshapeByRunTimeTarget(DimTable &t, const DimList &target, const DimList &in,
                               int32_t total, bool allowZero) {
  int32_t one = t.constant(1);
  SmallVector<int32_t> resolved, isInferred;
  for (size_t i = 0; i < target.size(); ++i) {
    int32_t e = target[i];
    std::optional<int64_t> v = t.constantValue(e);
    if (v && *v == -1) {
      resolved.push_back(one);
      isInferred.push_back(one);
      continue;
    }
    if (v) {
      resolved.push_back(*v == 0 && !allowZero ? (i < in.size() ? in[i] : t.constant(0)) : e);
      isInferred.push_back(t.constant(0));
      continue;
    }
    int32_t copies = allowZero ? t.constant(0) : equalsConstant(t, e, 0);
    int32_t infers = equalsConstant(t, e, -1);
    int32_t copied = i < in.size() ? t.mul(copies, in[i]) : t.constant(0);
    int32_t literal = t.mul(t.sub(t.sub(one, copies), infers), e);
    resolved.push_back(t.add(t.add(copied, infers), literal));
    isInferred.push_back(infers);
  }
  int32_t rest = one;
  for (int32_t r : resolved)
    rest = t.mul(rest, r);
  // max(rest, 1): without a -1 the quotient is unused, and a zero-sized
  // target must not make the run divide by zero.
  int32_t inferredSize = t.floorDiv(total, t.max(rest, one));
  DimList out;
  for (size_t i = 0; i < target.size(); ++i)
    out.push_back(t.add(resolved[i], t.mul(isInferred[i], t.sub(inferredSize, one))));
  return out;
}

/// Reshape: 0 copies the input's dim (unless allowzero), one -1 is what the
/// element count leaves.
LogicalResult inferReshape(od::ReshapeOp op, ShapeRuleContext &ctx) {
  Value result = op.getReshaped();
  Type element = ctx.elementType(op.getData());
  passElements(ctx, result, op.getData());
  const DimList *target = ctx.elements(op.getShape());
  if (!target) {
    setRankFromShapeLength(ctx, result, element, op.getShape());
    return success();
  }
  const DimList *in = ctx.dims(op.getData());
  DimTable &t = ctx.table();
  DimList out;
  int inferred = -1;
  bool runTimeElement = false;
  for (size_t i = 0; i < target->size(); ++i) {
    int32_t d = (*target)[i];
    std::optional<int64_t> v = ctx.constantValue(d);
    if (!v && t.readsSigned(d)) {
      runTimeElement = true;
    } else if (v == 0 && !op.getAllowzero()) {
      d = in && i < in->size() ? (*in)[i] : kUnknownDim;
    } else if (v == -1) {
      if (inferred >= 0)
        return ctx.fail("shape has more than one -1");
      inferred = int(i);
      d = kUnknownDim;
    } else if (v && *v < -1) {
      return ctx.fail("shape has the invalid dimension " + Twine(*v));
    }
    out.push_back(d);
  }
  int32_t total = in ? ctx.product(*in) : kUnknownDim;
  if (runTimeElement) {
    out = total == kUnknownDim
              ? DimList(target->size(), kUnknownDim)
              : reshapeByRunTimeTarget(t, *target, *in, total, op.getAllowzero() != 0);
  } else if (inferred >= 0 && total != kUnknownDim) {
    DimList others = out;
    others.erase(others.begin() + inferred);
    int32_t rest = ctx.product(others);
    std::optional<int64_t> ct = ctx.constantValue(total), cr = ctx.constantValue(rest);
    if (ct && cr && *cr != 0) {
      if (*ct % *cr != 0)
        return ctx.fail("cannot reshape " + Twine(*ct) + " elements into the target shape");
      out[inferred] = ctx.constant(*ct / *cr);
    } else if (rest != kUnknownDim && cr != 0) {
      out[inferred] = t.floorDiv(total, rest);
    }
  }
  ctx.setResult(result, element, out);
  return success();
}

LogicalResult inferFlatten(od::FlattenOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getInput());
  passElements(ctx, op.getOutput(), op.getInput());
  const DimList *in = ctx.dims(op.getInput());
  if (!in) {
    ctx.setResult(op.getOutput(), element, {kUnknownDim, kUnknownDim});
    return success();
  }
  int64_t rank = int64_t(in->size()), axis = int64_t(op.getAxis());
  if (axis < 0)
    axis += rank;
  if (axis < 0 || axis > rank)
    return ctx.fail("axis is out of range for rank " + Twine(rank));
  ArrayRef<int32_t> dims(*in);
  ctx.setResult(op.getOutput(), element,
                {ctx.product(dims.take_front(axis)), ctx.product(dims.drop_front(axis))});
  return success();
}

LogicalResult inferUnsqueeze(od::UnsqueezeOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getData());
  passElements(ctx, op.getExpanded(), op.getData());
  const DimList *in = ctx.dims(op.getData());
  std::optional<SmallVector<int64_t>> axes = ctx.constantInts(op.getAxes());
  if (!in || !axes) {
    ctx.setUnranked(op.getExpanded(), element);
    return success();
  }
  int64_t rank = int64_t(in->size() + axes->size());
  SmallVector<bool> inserted(rank, false);
  for (int64_t a : *axes) {
    std::optional<int64_t> axis = normalizeAxis(a, rank);
    if (!axis || inserted[*axis])
      return ctx.fail("axes are out of range or repeated");
    inserted[*axis] = true;
  }
  DimList out;
  size_t next = 0;
  for (int64_t i = 0; i < rank; ++i)
    out.push_back(inserted[i] ? ctx.constant(1) : (*in)[next++]);
  ctx.setResult(op.getExpanded(), element, out);
  return success();
}

LogicalResult inferSqueeze(od::SqueezeOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getData());
  passElements(ctx, op.getSqueezed(), op.getData());
  const DimList *in = ctx.dimsOrUnranked(op.getData(), op.getSqueezed(), element);
  if (!in)
    return success();
  int64_t rank = int64_t(in->size());
  SmallVector<bool> removed(rank, false);
  if (ctx.present(op.getAxes())) {
    std::optional<SmallVector<int64_t>> axes = ctx.constantInts(op.getAxes());
    if (!axes) {
      ctx.setUnranked(op.getSqueezed(), element);
      return success();
    }
    for (int64_t a : *axes) {
      std::optional<int64_t> axis = normalizeAxis(a, rank);
      std::optional<int64_t> size = axis ? ctx.constantValue((*in)[*axis]) : std::nullopt;
      if (!axis || (size && *size != 1))
        return ctx.fail("cannot squeeze axis " + Twine(a) + " of a tensor of rank " + Twine(rank));
      removed[*axis] = true;
    }
  } else {
    // No axes: every 1 goes, so a dim not known to be static leaves the
    // rank unknown.
    for (int64_t i = 0; i < rank; ++i) {
      std::optional<int64_t> size = ctx.constantValue((*in)[i]);
      if (!size) {
        ctx.setUnranked(op.getSqueezed(), element);
        return success();
      }
      removed[i] = *size == 1;
    }
  }
  DimList out;
  for (int64_t i = 0; i < rank; ++i)
    if (!removed[i])
      out.push_back((*in)[i]);
  ctx.setResult(op.getSqueezed(), element, out);
  return success();
}

LogicalResult inferConcat(od::ConcatOp op, ShapeRuleContext &ctx) {
  Value result = op.getConcatResult();
  Type element = ctx.elementType(op.getInputs().front());
  SmallVector<const DimList *> inputs;
  for (Value v : op.getInputs()) {
    inputs.push_back(ctx.dims(v));
    if (!inputs.back()) {
      ctx.setUnranked(result, element);
      return success();
    }
  }
  int64_t rank = int64_t(inputs[0]->size());
  std::optional<int64_t> axis = normalizeAxis(int64_t(op.getAxis()), rank);
  if (!axis)
    return ctx.fail("axis is out of range for rank " + Twine(rank));
  DimList out = *inputs[0];
  for (size_t n = 1; n < inputs.size(); ++n) {
    if (int64_t(inputs[n]->size()) != rank)
      return ctx.fail("inputs have different ranks");
    for (int64_t i = 0; i < rank; ++i) {
      int32_t d = (*inputs[n])[i];
      std::optional<int64_t> have = ctx.constantValue(out[i]), other = ctx.constantValue(d);
      if (i == *axis)
        out[i] = out[i] == kUnknownDim || d == kUnknownDim ? kUnknownDim : ctx.table().add(out[i], d);
      else if (have && other && *have != *other)
        return ctx.fail("inputs differ in dim " + Twine(i) + ": " + Twine(*have) + " and " +
                        Twine(*other));
      else if (!have && (other || out[i] == kUnknownDim))
        out[i] = d; // the better known of two dims that must be equal
    }
  }
  ctx.setResult(result, element, out);
  // Concatenated shape values.
  DimList elements;
  for (Value v : op.getInputs()) {
    const DimList *e = ctx.elements(v);
    if (!e)
      return success();
    elements.append(e->begin(), e->end());
  }
  ctx.setElements(result, elements);
  return success();
}

LogicalResult inferShape(od::ShapeOp op, ShapeRuleContext &ctx) {
  Type i64 = IntegerType::get(op->getContext(), 64);
  const DimList *in = ctx.dims(op.getData());
  if (!in) {
    ctx.setResult(op.getShape(), i64, {kUnknownDim});
    return success();
  }
  int64_t rank = int64_t(in->size());
  SliceAxis dims = shapeOpRange(rank, int64_t(op.getStart()),
                                op.getEnd() ? int64_t(*op.getEnd()) : rank);
  ctx.setResult(op.getShape(), i64, {ctx.constant(dims.count)});
  DimList elements(in->begin() + dims.start, in->begin() + dims.start + dims.count);
  if (!llvm::is_contained(elements, kUnknownDim))
    ctx.setElements(op.getShape(), elements);
  return success();
}

LogicalResult inferSize(od::SizeOp op, ShapeRuleContext &ctx) {
  ctx.setResult(op.getSize(), IntegerType::get(op->getContext(), 64), {});
  if (const DimList *in = ctx.dims(op.getData()))
    if (int32_t n = ctx.product(*in); n != kUnknownDim)
      ctx.setElements(op.getSize(), {n});
  return success();
}

LogicalResult inferGather(od::GatherOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getData());
  const DimList *data = ctx.dims(op.getData()), *indices = ctx.dims(op.getIndices());
  if (!data || !indices) {
    ctx.setUnranked(op.getOutput(), element);
    return success();
  }
  std::optional<int64_t> axis = normalizeAxis(int64_t(op.getAxis()), int64_t(data->size()));
  if (!axis)
    return ctx.fail("axis is out of range for rank " + Twine(data->size()));
  DimList out(data->begin(), data->begin() + *axis);
  out.append(indices->begin(), indices->end());
  out.append(data->begin() + *axis + 1, data->end());
  ctx.setResult(op.getOutput(), element, out);
  // Picking elements of a shape value.
  const DimList *e = ctx.elements(op.getData());
  std::optional<SmallVector<int64_t>> picks = ctx.constantInts(op.getIndices());
  if (!e || !picks || *axis != 0)
    return success();
  DimList picked;
  for (int64_t i : *picks) {
    std::optional<int64_t> at = normalizeAxis(i, int64_t(e->size()));
    if (!at)
      return success();
    picked.push_back((*e)[*at]);
  }
  ctx.setElements(op.getOutput(), picked);
  return success();
}

LogicalResult inferGatherElements(od::GatherElementsOp op, ShapeRuleContext &ctx) {
  ctx.setDimsOf(op.getOutput(), ctx.elementType(op.getData()), op.getIndices());
  return success();
}

/// GatherND with batch_dims b: indices[:-1] + data[b + indices[-1]:].
LogicalResult inferGatherND(od::GatherNDOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getData());
  const DimList *data = ctx.dims(op.getData()), *indices = ctx.dims(op.getIndices());
  std::optional<int64_t> depth =
      indices && !indices->empty() ? ctx.constantValue(indices->back()) : std::nullopt;
  if (!data || !depth) {
    ctx.setUnranked(op.getOutput(), element);
    return success();
  }
  int64_t b = int64_t(op.getBatchDims());
  if (b < 0 || b + *depth > int64_t(data->size()) || b >= int64_t(indices->size()))
    return ctx.fail("indices do not fit the data's rank");
  DimList out(indices->begin(), indices->end() - 1);
  out.append(data->begin() + b + *depth, data->end());
  ctx.setResult(op.getOutput(), element, out);
  return success();
}

LogicalResult inferSplit(od::SplitOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getInput());
  const DimList *in = ctx.dims(op.getInput());
  unsigned n = op->getNumResults();
  if (!in || n == 0)
    return success();
  std::optional<int64_t> axis = normalizeAxis(int64_t(op.getAxis()), int64_t(in->size()));
  if (!axis)
    return ctx.fail("axis is out of range for rank " + Twine(in->size()));
  DimList sizes;
  int32_t whole = (*in)[*axis];
  if (ctx.present(op.getSplit())) {
    const DimList *given = ctx.bounds(op.getSplit());
    if (!given)
      sizes.assign(n, kUnknownDim);
    else if (given->size() != n)
      return ctx.fail("split has " + Twine(given->size()) + " sizes for " + Twine(n) + " outputs");
    else
      sizes = *given;
  } else if (std::optional<int64_t> dim = ctx.constantValue(whole)) {
    // Equal parts, the last ones smaller (num_outputs semantics).
    int64_t chunk = (*dim + n - 1) / n;
    for (unsigned i = 0; i < n; ++i)
      sizes.push_back(ctx.constant(std::max<int64_t>(std::min<int64_t>(chunk, *dim - chunk * i), 0)));
  } else if (whole != kUnknownDim) {
    SymDim part = ceilDiv(ctx.dim(whole), int64_t(n));
    sizes.assign(n, part.id);
    sizes.back() = (ctx.dim(whole) - part * int64_t(n - 1)).id;
  } else {
    sizes.assign(n, kUnknownDim);
  }
  for (unsigned i = 0; i < n; ++i) {
    DimList out = *in;
    out[*axis] = sizes[i];
    ctx.setResult(op->getResult(i), element, out);
  }
  // A shape value split into parts: each part's elements, in order.
  const DimList *e = ctx.elements(op.getInput());
  if (!e || *axis != 0)
    return success();
  size_t next = 0;
  for (unsigned i = 0; i < n; ++i) {
    std::optional<int64_t> size = ctx.constantValue(sizes[i]);
    if (!size || *size < 0 || next + size_t(*size) > e->size())
      return success();
    ctx.setElements(op->getResult(i), DimList(e->begin() + next, e->begin() + next + *size));
    next += size_t(*size);
  }
  return success();
}

/// One sliced dim: clamp(start, 0, n) and clamp(end, 0, n), then
/// ceil((end - start) / step), for a step > 0 and bounds that are constants
/// or expressions known not to be negative. kUnknownDim otherwise.
int32_t slicedDim(ShapeRuleContext &ctx, int32_t dim, int32_t start, int32_t end, int64_t step) {
  std::optional<int64_t> n = ctx.constantValue(dim), b = ctx.constantValue(start),
                         e = ctx.constantValue(end);
  if (n && b && e)
    return ctx.constant(sliceAxis(*n, *b, *e, step).count);
  if (dim == kUnknownDim || step <= 0)
    return kUnknownDim;
  DimTable &t = ctx.table();
  SymDim size = ctx.dim(dim);
  auto bound = [&](int32_t id) -> std::optional<SymDim> {
    std::optional<int64_t> v = ctx.constantValue(id);
    if (v && *v >= (int64_t(1) << 40))
      return size;
    // A symbolic bound counts from the end only if it is negative, so it
    // must be known not to be.
    std::optional<int64_t> low = t.lowerBound(id);
    if (!v && (!low || *low < 0))
      return std::nullopt;
    SymDim raw = v && *v < 0 ? size + *v : ctx.dim(id);
    return SymDim{&t, t.min(t.max(raw.id, t.constant(0)), size.id)};
  };
  std::optional<SymDim> from = bound(start), to = bound(end);
  if (!from || !to)
    return kUnknownDim;
  return dimMax(ceilDiv(*to - *from, step), 0).id;
}

LogicalResult inferSlice(od::SliceOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getData());
  const DimList *in = ctx.dimsOrUnranked(op.getData(), op.getOutput(), element);
  if (!in)
    return success();
  int64_t rank = int64_t(in->size());
  // Bounds may be shape values (Slice(x, 0, Shape(y)[1])); axes and steps
  // must be constants.
  const DimList *starts = ctx.bounds(op.getStarts()), *ends = ctx.bounds(op.getEnds());
  std::optional<SmallVector<int64_t>> axes, steps;
  if (ctx.present(op.getAxes()))
    axes = ctx.constantInts(op.getAxes());
  else if (starts)
    axes = llvm::to_vector(llvm::seq<int64_t>(0, int64_t(starts->size())));
  if (ctx.present(op.getSteps()))
    steps = ctx.constantInts(op.getSteps());
  else if (starts)
    steps = SmallVector<int64_t>(starts->size(), 1);
  if (!starts || !ends || !axes || !steps) {
    ctx.setResult(op.getOutput(), element, DimList(rank, kUnknownDim));
    return success();
  }
  size_t n = starts->size();
  if (ends->size() != n || axes->size() != n || steps->size() != n)
    return ctx.fail("starts, ends, axes and steps have different lengths");
  DimList out = *in;
  for (size_t i = 0; i < n; ++i) {
    std::optional<int64_t> axis = normalizeAxis((*axes)[i], rank);
    if (!axis || (*steps)[i] == 0)
      return ctx.fail("slice axis out of range or step 0");
    out[*axis] = slicedDim(ctx, out[*axis], (*starts)[i], (*ends)[i], (*steps)[i]);
  }
  ctx.setResult(op.getOutput(), element, out);
  // A slice of a shape value with constant bounds.
  const DimList *e = ctx.elements(op.getData());
  std::optional<int64_t> b = ctx.constantValue((*starts)[0]), en = ctx.constantValue((*ends)[0]);
  if (!e || n != 1 || !b || !en || (*steps)[0] <= 0)
    return success();
  SliceAxis range = sliceAxis(int64_t(e->size()), *b, *en, (*steps)[0]);
  DimList sliced;
  for (int64_t k = 0; k < range.count; ++k)
    sliced.push_back((*e)[range.start + k * (*steps)[0]]);
  ctx.setElements(op.getOutput(), sliced);
  return success();
}

/// Pad: each padded dim grows by its two pads (constants or shape values,
/// as SAME pads computed from Shape(x) are).
LogicalResult inferPad(od::PadOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getData());
  const DimList *in = ctx.dimsOrUnranked(op.getData(), op.getOutput(), element);
  if (!in)
    return success();
  int64_t rank = int64_t(in->size());
  const DimList *pads = ctx.bounds(op.getPads());
  std::optional<SmallVector<int64_t>> axes = llvm::to_vector(llvm::seq<int64_t>(0, rank));
  if (ctx.present(op.getAxes()))
    axes = ctx.constantInts(op.getAxes());
  if (!pads || !axes) {
    ctx.setResult(op.getOutput(), element, DimList(rank, kUnknownDim));
    return success();
  }
  size_t n = axes->size();
  if (pads->size() != 2 * n)
    return ctx.fail("pads has " + Twine(pads->size()) + " values for " + Twine(n) + " axes");
  DimTable &t = ctx.table();
  DimList out = *in;
  for (size_t i = 0; i < n; ++i) {
    std::optional<int64_t> axis = normalizeAxis((*axes)[i], rank);
    if (!axis)
      return ctx.fail("pad axis out of range");
    int32_t &d = out[*axis];
    if (d == kUnknownDim)
      continue;
    d = t.add(d, t.add((*pads)[i], (*pads)[i + n]));
    if (std::optional<int64_t> size = ctx.constantValue(d); size && *size < 0)
      return ctx.fail("negative pads remove more than dim " + Twine(*axis) + " holds");
  }
  ctx.setResult(op.getOutput(), element, out);
  return success();
}

/// Expand broadcasts the input against the target shape; with the target's
/// values unknown, its length still gives the rank, and every input dim
/// that is static and not 1 stays.
LogicalResult inferExpand(od::ExpandOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getInput());
  const DimList *in = ctx.dimsOrUnranked(op.getInput(), op.getOutput(), element);
  if (!in)
    return success();
  if (const DimList *target = ctx.elements(op.getShape())) {
    FailureOr<std::optional<DimList>> out = broadcastDims(ctx.table(), {in, target});
    if (failed(out))
      return ctx.fail("the input cannot be expanded to the target shape");
    ctx.setResult(op.getOutput(), element, **out);
    return success();
  }
  std::optional<int64_t> n = staticLength(ctx, op.getShape());
  if (!n) {
    ctx.setUnranked(op.getOutput(), element);
    return success();
  }
  int64_t rank = std::max<int64_t>(int64_t(in->size()), *n);
  DimList out(rank, kUnknownDim);
  for (size_t i = 0; i < in->size(); ++i)
    if (std::optional<int64_t> size = ctx.constantValue((*in)[i]); size && *size != 1)
      out[rank - in->size() + i] = (*in)[i];
  ctx.setResult(op.getOutput(), element, out);
  return success();
}

/// Tile multiplies each dim by its repeat count.
LogicalResult inferTile(od::TileOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getInput());
  const DimList *in = ctx.dims(op.getInput());
  const DimList *repeats = ctx.bounds(op.getRepeats());
  if (!in || !repeats) {
    if (in)
      ctx.setResult(op.getOutput(), element, DimList(in->size(), kUnknownDim));
    else
      ctx.setUnranked(op.getOutput(), element);
    return success();
  }
  if (repeats->size() != in->size())
    return ctx.fail("repeats has " + Twine(repeats->size()) + " values for rank " +
                    Twine(in->size()));
  DimList out;
  for (size_t i = 0; i < in->size(); ++i) {
    if (std::optional<int64_t> r = ctx.constantValue((*repeats)[i]); r && *r < 0)
      return ctx.fail("negative repeat count");
    out.push_back((*in)[i] == kUnknownDim ? kUnknownDim : ctx.table().mul((*in)[i], (*repeats)[i]));
  }
  ctx.setResult(op.getOutput(), element, out);
  return success();
}

/// ConstantOfShape: the shape is input 0's values; the element type is the
/// `value` attribute's (f32 without one).
LogicalResult inferConstantOfShape(od::ConstantOfShapeOp op, ShapeRuleContext &ctx) {
  Type element = Float32Type::get(op->getContext());
  if (std::optional<ElementsAttr> value = op.getValue())
    element = value->getElementType();
  const DimList *target = ctx.elements(op.getInput());
  if (!target) {
    setRankFromShapeLength(ctx, op.getOutput(), element, op.getInput());
    return success();
  }
  for (int32_t d : *target)
    if (std::optional<int64_t> size = ctx.constantValue(d); size && *size < 0)
      return ctx.fail("the shape has a negative dim");
  ctx.setResult(op.getOutput(), element, *target);
  return success();
}

/// Range: max(ceil((limit - start) / delta), 0) elements: computed as the
/// runtimes do for constants, as an expression for shape values with a
/// constant positive delta.
LogicalResult inferRange(od::RangeOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getStart());
  std::optional<HostTensor> start = readHostTensor(op.getStart(), 1),
                            limit = readHostTensor(op.getLimit(), 1),
                            delta = readHostTensor(op.getDelta(), 1);
  if (start && limit && delta && start->numElements() == 1 && limit->numElements() == 1 &&
      delta->numElements() == 1) {
    double n;
    if (start->isFloat() && start->elementType.isF32()) // the difference in f32
      n = std::ceil(double(float(limit->floatAt(0)) - float(start->floatAt(0))) /
                    delta->floatAt(0));
    else if (start->isFloat())
      n = std::ceil((limit->floatAt(0) - start->floatAt(0)) / delta->floatAt(0));
    else if (delta->intAt(0) != 0)
      n = std::ceil(double(limit->intAt(0) - start->intAt(0)) / double(delta->intAt(0)));
    else
      n = NAN;
    if (!std::isfinite(n) || n > 1e15)
      return ctx.fail("delta is zero or the range is not finite");
    ctx.setResult(op.getOutput(), element, {ctx.constant(std::max<int64_t>(int64_t(n), 0))});
    return success();
  }
  const DimList *s = ctx.elements(op.getStart()), *l = ctx.elements(op.getLimit()),
                *d = ctx.elements(op.getDelta());
  // Bounds computed from data, or a step that is not a positive constant:
  // the kernel reports the length (a data symbol).
  int64_t by = d && d->size() == 1 ? ctx.constantValue((*d)[0]).value_or(0) : 0;
  if (!s || !l || s->size() != 1 || l->size() != 1 || by <= 0) {
    ctx.setResult(op.getOutput(), element, {ctx.dataDim(op.getOutput(), 0)});
    return success();
  }
  SymDim span = ctx.dim((*l)[0]) - ctx.dim((*s)[0]);
  ctx.setResult(op.getOutput(), element, {dimMax(ceilDiv(span, by), 0).id});
  return success();
}

/// EyeLike, RandomUniformLike, RandomNormalLike, Bernoulli: the input's
/// dims, the `dtype` attribute's element type (else the input's).
template <typename LikeOp> LogicalResult inferLikeWithDtype(LikeOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getInput());
  if (std::optional<uint64_t> dtype = op.getDtype())
    element = od::elementTypeForOnnxCode(op->getContext(), int(*dtype));
  ctx.setDimsOf(op.getOutput(), element, op.getInput());
  return success();
}

//===--- Outputs sized by their data ----------------------------------------===//
// The count is a data symbol (ShapeRuleContext::dataDim): the kernel reports
// it, the runtime binds it, and what follows is shaped by it.

LogicalResult inferNonZero(od::NonZeroOp op, ShapeRuleContext &ctx) {
  Type i64 = IntegerType::get(op->getContext(), 64);
  const DimList *in = ctx.dimsOrUnranked(op.getX(), op.getY(), i64);
  if (!in)
    return success();
  ctx.setResult(op.getY(), i64,
                {ctx.constant(int64_t(in->size())), ctx.dataDim(op.getY(), 1)});
  return success();
}

LogicalResult inferCompress(od::CompressOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getInput());
  const DimList *in = ctx.dimsOrUnranked(op.getInput(), op.getOutput(), element);
  if (!in)
    return success();
  if (!op.getAxis()) {
    ctx.setResult(op.getOutput(), element, {ctx.dataDim(op.getOutput(), 0)});
    return success();
  }
  std::optional<int64_t> axis = normalizeAxis(*op.getAxis(), int64_t(in->size()));
  if (!axis)
    return ctx.fail("axis is out of range for rank " + Twine(in->size()));
  DimList out = *in;
  out[*axis] = ctx.dataDim(op.getOutput(), unsigned(*axis));
  ctx.setResult(op.getOutput(), element, out);
  return success();
}

LogicalResult inferNonMaxSuppression(od::NonMaxSuppressionOp op, ShapeRuleContext &ctx) {
  ctx.setResult(op.getSelectedIndices(), IntegerType::get(op->getContext(), 64),
                {ctx.dataDim(op.getSelectedIndices(), 0), ctx.constant(3)});
  return success();
}

LogicalResult inferUnique(od::UniqueOp op, ShapeRuleContext &ctx) {
  Type element = ctx.elementType(op.getX());
  Type i64 = IntegerType::get(op->getContext(), 64);
  const DimList *in = ctx.dimsOrUnranked(op.getX(), op.getY(), element);
  if (!in)
    return success();
  // One count for Y's unique axis, indices and counts.
  DimList y;
  int32_t scanned;
  if (op.getAxis()) {
    std::optional<int64_t> axis = normalizeAxis(*op.getAxis(), int64_t(in->size()));
    if (!axis)
      return ctx.fail("axis is out of range for rank " + Twine(in->size()));
    y = *in;
    y[*axis] = ctx.dataDim(op.getY(), unsigned(*axis));
    scanned = (*in)[*axis];
    ctx.setResult(op.getY(), element, y);
    y = {y[*axis]};
  } else {
    y = {ctx.dataDim(op.getY(), 0)};
    scanned = ctx.product(*in);
    ctx.setResult(op.getY(), element, y);
  }
  ctx.setResult(op.getIndices(), i64, y);
  ctx.setResult(op.getCounts(), i64, y);
  if (scanned != kUnknownDim)
    ctx.setResult(op.getInverseIndices(), i64, {scanned});
  else
    ctx.setResult(op.getInverseIndices(), i64, {kUnknownDim});
  return success();
}

} // namespace

void attachTensorShapeRules(MLIRContext *context) {
  attachRule<inferTranspose, od::TransposeOp>(context);
  attachRule<inferReshape, od::ReshapeOp>(context);
  attachRule<inferFlatten, od::FlattenOp>(context);
  attachRule<inferUnsqueeze, od::UnsqueezeOp>(context);
  attachRule<inferSqueeze, od::SqueezeOp>(context);
  attachRule<inferConcat, od::ConcatOp>(context);
  attachRule<inferShape, od::ShapeOp>(context);
  attachRule<inferSize, od::SizeOp>(context);
  attachRule<inferNonZero, od::NonZeroOp>(context);
  attachRule<inferCompress, od::CompressOp>(context);
  attachRule<inferNonMaxSuppression, od::NonMaxSuppressionOp>(context);
  attachRule<inferUnique, od::UniqueOp>(context);
  attachRule<inferGather, od::GatherOp>(context);
  attachRule<inferGatherElements, od::GatherElementsOp>(context);
  attachRule<inferGatherND, od::GatherNDOp>(context);
  attachRule<inferSplit, od::SplitOp>(context);
  attachRule<inferSlice, od::SliceOp>(context);
  attachRule<inferPad, od::PadOp>(context);
  attachRule<inferExpand, od::ExpandOp>(context);
  attachRule<inferTile, od::TileOp>(context);
  attachRule<inferConstantOfShape, od::ConstantOfShapeOp>(context);
  attachRule<inferRange, od::RangeOp>(context);
  attachRule<inferLikeWithDtype<od::EyeLikeOp>, od::EyeLikeOp>(context);
  attachRule<inferLikeWithDtype<od::RandomUniformLikeOp>, od::RandomUniformLikeOp>(context);
  attachRule<inferLikeWithDtype<od::RandomNormalLikeOp>, od::RandomNormalLikeOp>(context);
  attachRule<inferLikeWithDtype<od::BernoulliOp>, od::BernoulliOp>(context);
}

} // namespace ortc
