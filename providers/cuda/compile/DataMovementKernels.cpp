//===- DataMovementKernels.cpp - CUDA kernels that move elements ----------===//

#include "providers/cuda/compile/DataMovementKernels.h"

#include "providers/cuda/compile/KernelEmitter.h"

#include "compiler/Transforms/ConstantValues.h"
#include "dialects/onnx/OnnxOps.h"
#include "runtime/ep/SliceGeometry.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"

#include <functional>
#include <sstream>

using namespace mlir;
namespace onnx = ortc::onnx_dialect;

namespace ortc::cuda {

namespace {

bool isAbsent(Value v) { return v.getDefiningOp() && isa<onnx::NoValueOp>(v.getDefiningOp()); }

std::optional<SmallVector<int64_t>> constantInts(Value v) {
  if (isAbsent(v))
    return std::nullopt;
  return ortc::getConstantIntValues(v);
}

int64_t normalize(int64_t axis, int64_t rank) { return axis < 0 ? axis + rank : axis; }

/// Slice's per-axis start and step over the input's dims (an unsliced axis
/// starts at 0 with step 1); nullopt with `why` when they are not known at
/// compile time.
std::optional<std::vector<std::pair<int64_t, int64_t>>> sliceSteps(onnx::SliceOp op,
                                                                   std::string &why) {
  auto in = cast<RankedTensorType>(op.getData().getType());
  int64_t rank = in.getRank();
  auto starts = constantInts(op.getStarts()), ends = constantInts(op.getEnds());
  if (!starts || !ends || starts->size() != ends->size()) {
    why = "starts or ends that are not constants of one length";
    return std::nullopt;
  }
  SmallVector<int64_t> axes, steps(starts->size(), 1);
  for (size_t i = 0; i < starts->size(); ++i)
    axes.push_back(int64_t(i));
  if (!isAbsent(op.getAxes())) {
    auto a = constantInts(op.getAxes());
    if (!a || a->size() != starts->size()) {
      why = "axes that are not a constant of the starts' length";
      return std::nullopt;
    }
    axes = *a;
  }
  if (!isAbsent(op.getSteps())) {
    auto st = constantInts(op.getSteps());
    if (!st || st->size() != starts->size()) {
      why = "steps that are not a constant of the starts' length";
      return std::nullopt;
    }
    steps = *st;
  }
  std::vector<std::pair<int64_t, int64_t>> out(size_t(rank), {0, 1});
  std::vector<bool> seen(size_t(rank), false);
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t axis = normalize(axes[i], rank);
    if (axis < 0 || axis >= rank || seen[size_t(axis)] || steps[i] == 0) {
      why = "an axis out of range or repeated, or a step of 0";
      return std::nullopt;
    }
    seen[size_t(axis)] = true;
    if (in.isDynamicDim(axis)) {
      why = "a dynamic dim on a sliced axis";
      return std::nullopt;
    }
    SliceAxis s = sliceAxis(in.getDimSize(axis), (*starts)[i], (*ends)[i], steps[i]);
    out[size_t(axis)] = {s.start, steps[i]};
  }
  return out;
}

std::optional<SmallVector<int64_t>> transposePerm(onnx::TransposeOp op) {
  int64_t rank = cast<RankedTensorType>(op.getData().getType()).getRank();
  SmallVector<int64_t> perm;
  if (auto attr = op.getPermAttr())
    perm.assign(attr.asArrayRef().begin(), attr.asArrayRef().end());
  else
    for (int64_t i = rank - 1; i >= 0; --i)
      perm.push_back(i);
  if (int64_t(perm.size()) != rank)
    return std::nullopt;
  std::vector<bool> seen(size_t(rank), false);
  for (int64_t p : perm) {
    if (p < 0 || p >= rank || seen[size_t(p)])
      return std::nullopt;
    seen[size_t(p)] = true;
  }
  return perm;
}

/// The kernel's inputs: the tensors it reads (not the constant operands).
std::vector<Value> dataInputs(Operation *op) {
  if (isa<onnx::ConcatOp>(op))
    return std::vector<Value>(op->getOperands().begin(), op->getOperands().end());
  if (isa<onnx::GatherOp, onnx::GatherElementsOp, onnx::GatherNDOp>(op))
    return {op->getOperand(0), op->getOperand(1)};
  return {op->getOperand(0)};
}

} // namespace

std::optional<SplitPieces> splitPieces(Operation *op, std::string *why) {
  auto split = dyn_cast<onnx::SplitOp>(op);
  auto refuse = [&](std::string text) -> std::optional<SplitPieces> {
    if (why)
      *why = std::move(text);
    return std::nullopt;
  };
  if (!split)
    return refuse("not a Split");
  auto in = dyn_cast<RankedTensorType>(split.getInput().getType());
  if (!in)
    return refuse("an unranked input");
  SplitPieces pieces;
  pieces.axis = normalize(split.getAxis(), in.getRank());
  if (pieces.axis < 0 || pieces.axis >= in.getRank())
    return refuse("axis out of range");
  if (in.isDynamicDim(pieces.axis))
    return refuse("a dynamic dim on the split axis");
  int64_t dim = in.getDimSize(pieces.axis), count = int64_t(split.getNumResults());
  std::vector<int64_t> sizes;
  if (!isAbsent(split.getSplit())) {
    std::optional<SmallVector<int64_t>> given = constantInts(split.getSplit());
    if (!given)
      return refuse("split sizes that are not a constant");
    sizes.assign(given->begin(), given->end());
  } else {
    // Equal pieces, the last smaller when they do not divide the dim.
    int64_t n = split.getNumOutputs() ? int64_t(*split.getNumOutputs()) : count;
    if (n < 1)
      return refuse("no outputs");
    int64_t piece = (dim + n - 1) / n;
    for (int64_t i = 0; i < n; ++i)
      sizes.push_back(std::max<int64_t>(0, std::min(piece, dim - i * piece)));
  }
  int64_t start = 0;
  for (int64_t size : sizes) {
    if (size < 0)
      return refuse("a negative split size");
    pieces.bounds.push_back({start, start + size});
    start += size;
  }
  if (int64_t(sizes.size()) != count || start != dim)
    return refuse("split sizes that do not add up to the axis dim over the outputs");
  for (auto [i, result] : llvm::enumerate(split.getResults())) {
    auto t = dyn_cast<RankedTensorType>(result.getType());
    if (!t || t.getRank() != in.getRank() || t.isDynamicDim(pieces.axis) ||
        t.getDimSize(pieces.axis) != pieces.bounds[i].second - pieces.bounds[i].first)
      return refuse("an output whose type does not match its piece");
  }
  return pieces;
}

bool isDataMovementKernelOp(Operation *op, std::string *why) {
  if (isa<onnx::SplitOp>(op)) {
    auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
    if (!out || !cudaElementType(out.getElementType())) {
      if (why)
        *why = "an output whose element type device buffers do not hold";
      return false;
    }
    return splitPieces(op, why).has_value();
  }
  if (!isa<onnx::TransposeOp, onnx::ConcatOp, onnx::SliceOp, onnx::GatherOp,
           onnx::GatherElementsOp, onnx::GatherNDOp, onnx::ExpandOp>(op))
    return false;
  auto refuse = [&](std::string text) {
    if (why)
      *why = std::move(text);
    return false;
  };
  auto out = dyn_cast<RankedTensorType>(op->getResult(0).getType());
  if (!out || !cudaElementType(out.getElementType()))
    return refuse("an output whose element type device buffers do not hold");
  for (Value v : dataInputs(op)) {
    auto t = dyn_cast<RankedTensorType>(v.getType());
    if (!t || !cudaElementType(t.getElementType()))
      return refuse("an input whose element type device buffers do not hold");
  }
  if (auto t = dyn_cast<onnx::TransposeOp>(op)) {
    if (!transposePerm(t))
      return refuse("perm is not a permutation of the input's dims");
  } else if (auto c = dyn_cast<onnx::ConcatOp>(op)) {
    int64_t axis = normalize(c.getAxis(), out.getRank());
    if (axis < 0 || axis >= out.getRank())
      return refuse("axis out of range");
  } else if (auto s = dyn_cast<onnx::SliceOp>(op)) {
    std::string reason;
    if (!sliceSteps(s, reason))
      return refuse(reason);
  } else if (auto g = dyn_cast<onnx::GatherOp>(op)) {
    auto data = cast<RankedTensorType>(g.getData().getType());
    auto indices = cast<RankedTensorType>(g.getIndices().getType());
    int64_t axis = normalize(g.getAxis(), data.getRank());
    if (axis < 0 || axis >= data.getRank())
      return refuse("axis out of range");
    if (!indices.getElementType().isInteger(64) && !indices.getElementType().isInteger(32))
      return refuse("indices that are not int32 or int64");
  } else if (auto g = dyn_cast<onnx::GatherElementsOp>(op)) {
    auto data = cast<RankedTensorType>(g.getData().getType());
    auto indices = cast<RankedTensorType>(g.getIndices().getType());
    int64_t axis = normalize(g.getAxis(), data.getRank());
    if (axis < 0 || axis >= data.getRank() || indices.getRank() != data.getRank())
      return refuse("axis out of range, or indices of another rank than the data");
    if (!indices.getElementType().isInteger(64) && !indices.getElementType().isInteger(32))
      return refuse("indices that are not int32 or int64");
  } else if (auto g = dyn_cast<onnx::GatherNDOp>(op)) {
    auto data = cast<RankedTensorType>(g.getData().getType());
    auto indices = cast<RankedTensorType>(g.getIndices().getType());
    int64_t batch = g.getBatchDims(), ir = indices.getRank();
    if (ir < 1 || indices.isDynamicDim(ir - 1) || batch < 0 || batch >= ir ||
        batch + indices.getDimSize(ir - 1) > data.getRank() ||
        out.getRank() != ir - 1 + data.getRank() - batch - indices.getDimSize(ir - 1))
      return refuse("indices whose last dim is dynamic or too long for the data, or batch_dims "
                    "out of range");
    if (!indices.getElementType().isInteger(64))
      return refuse("indices that are not int64");
  } else if (auto e = dyn_cast<onnx::ExpandOp>(op)) {
    auto in = cast<RankedTensorType>(e.getInput().getType());
    if (in.getRank() > out.getRank())
      return refuse("an input of higher rank than the output");
    // A dynamic input dim is read as the output's (checked equal: the
    // shape rule makes them one expression or the claim sees them differ).
    for (int64_t q = 0; q < in.getRank(); ++q)
      if (in.isDynamicDim(q) && !out.isDynamicDim(q + out.getRank() - in.getRank()))
        return refuse("a dynamic input dim that would broadcast");
  }
  return true;
}

FailureOr<DataMovementKernel> emitDataMovementKernel(Operation *op, const std::string &name) {
  std::string why;
  if (!isDataMovementKernelOp(op, &why))
    return op->emitError("cuda data-movement kernel: ") << why;
  DataMovementKernel kernel;
  kernel.inputs = dataInputs(op);
  std::vector<RankedTensorType> params;
  for (Value v : kernel.inputs)
    params.push_back(cast<RankedTensorType>(v.getType()));
  auto out = cast<RankedTensorType>(op->getResult(0).getType());
  params.push_back(out);
  std::vector<int64_t> slot;
  int64_t slots = 0;
  for (RankedTensorType t : params) {
    slot.push_back(slots);
    slots += t.getRank();
  }
  size_t outParam = params.size() - 1;
  auto dim = [&](size_t param, int64_t j) {
    return params[param].isDynamicDim(j) ? "d.v[" + std::to_string(slot[param] + j) + "]"
                                         : std::to_string(params[param].getDimSize(j)) + "LL";
  };
  // The row-major offset in `param` of coordinates `coord(q)`.
  auto offset = [&](size_t param, const std::function<std::string(int64_t)> &coord) {
    std::string text = "0LL";
    for (int64_t q = 0; q < params[param].getRank(); ++q)
      text = "(" + text + ") * " + dim(param, q) + " + (" + coord(q) + ")";
    return text;
  };
  auto c = [](int64_t j) { return "c" + std::to_string(j); };
  int64_t rank = out.getRank();

  std::ostringstream body;
  if (auto t = dyn_cast<onnx::TransposeOp>(op)) {
    SmallVector<int64_t> perm = *transposePerm(t);
    SmallVector<int64_t> inverse(perm.size());
    for (size_t j = 0; j < perm.size(); ++j)
      inverse[size_t(perm[j])] = int64_t(j);
    body << "    r0[i] = a0[" << offset(0, [&](int64_t q) { return c(inverse[size_t(q)]); })
         << "];\n";
  } else if (auto cat = dyn_cast<onnx::ConcatOp>(op)) {
    int64_t axis = normalize(cat.getAxis(), rank);
    // The first input whose extent along the axis holds `a` is read.
    body << "    long long a = " << c(axis) << ";\n";
    for (size_t k = 0; k < kernel.inputs.size(); ++k) {
      body << "    if (a < " << dim(k, axis) << ") { r0[i] = a" << k << "["
           << offset(k, [&](int64_t q) { return q == axis ? std::string("a") : c(q); })
           << "]; return; }\n    a -= " << dim(k, axis) << ";\n";
    }
  } else if (auto s = dyn_cast<onnx::SliceOp>(op)) {
    std::vector<std::pair<int64_t, int64_t>> steps = *sliceSteps(s, why);
    body << "    r0[i] = a0[" << offset(0, [&](int64_t q) {
      auto [start, step] = steps[size_t(q)];
      return std::to_string(start) + "LL + " + c(q) + " * " + std::to_string(step) + "LL";
    }) << "];\n";
  } else if (auto g = dyn_cast<onnx::GatherOp>(op)) {
    int64_t dataRank = params[0].getRank(), indexRank = params[1].getRank();
    int64_t axis = normalize(g.getAxis(), dataRank);
    body << "    long long idx = (long long)a1["
         << offset(1, [&](int64_t q) { return c(axis + q); }) << "];\n"
         << "    if (idx < 0) idx += " << dim(0, axis) << ";\n"
         << "    if (idx < 0 || idx >= " << dim(0, axis) << ") { r0[i] = 0; return; }\n"
         << "    r0[i] = a0[" << offset(0, [&](int64_t q) {
              if (q < axis)
                return c(q);
              if (q == axis)
                return std::string("idx");
              return c(q - 1 + indexRank);
            }) << "];\n";
  } else if (auto g = dyn_cast<onnx::GatherElementsOp>(op)) {
    // The index at the output's own coordinates replaces the axis coordinate.
    int64_t axis = normalize(g.getAxis(), params[0].getRank());
    body << "    long long idx = (long long)a1[" << offset(1, c) << "];\n"
         << "    if (idx < 0) idx += " << dim(0, axis) << ";\n"
         << "    if (idx < 0 || idx >= " << dim(0, axis) << ") { r0[i] = 0; return; }\n"
         << "    r0[i] = a0[" << offset(0, [&](int64_t q) {
              return q == axis ? std::string("idx") : c(q);
            }) << "];\n";
  } else if (auto g = dyn_cast<onnx::GatherNDOp>(op)) {
    // Output coordinates: the batch dims, the index positions, then the data
    // dims after the indexed ones; indices' last dim holds the index tuple.
    int64_t batch = g.getBatchDims(), ir = params[1].getRank();
    int64_t k = params[1].getDimSize(ir - 1);
    for (int64_t j = 0; j < k; ++j) {
      std::string name = "idx" + std::to_string(j);
      body << "    long long " << name << " = (long long)a1[" << offset(1, [&](int64_t q) {
        return q < ir - 1 ? c(q) : std::to_string(j) + "LL";
      }) << "];\n"
           << "    if (" << name << " < 0) " << name << " += " << dim(0, batch + j) << ";\n"
           << "    if (" << name << " < 0 || " << name << " >= " << dim(0, batch + j)
           << ") { r0[i] = 0; return; }\n";
    }
    body << "    r0[i] = a0[" << offset(0, [&](int64_t q) {
      if (q < batch)
        return c(q);
      if (q < batch + k)
        return "idx" + std::to_string(q - batch);
      return c(ir - 1 + q - batch - k);
    }) << "];\n";
  } else {
    int64_t inRank = params[0].getRank(), lead = rank - inRank;
    body << "    r0[i] = a0[" << offset(0, [&](int64_t q) {
      return params[0].getDimSize(q) == 1 && out.getDimSize(q + lead) != 1 ? std::string("0")
                                                                           : c(q + lead);
    }) << "];\n";
  }

  std::ostringstream src;
  src << "struct " << name << "_dims { long long v[" << std::max<int64_t>(slots, 1) << "]; };\n";
  src << "extern \"C\" __global__ void __launch_bounds__(" << kElementwiseThreadsPerBlock << ") "
      << name << "(";
  for (size_t p = 0; p < params.size(); ++p) {
    bool input = p < outParam;
    std::string ct = *cudaElementType(params[p].getElementType());
    std::string pointer = (input ? "const " : "") + ct + " *__restrict__";
    src << pointer << (input ? " a" + std::to_string(p) : std::string(" r0")) << ", ";
  }
  src << name << "_dims d) {\n";
  src << "  const long long n = 1LL";
  for (int64_t j = 0; j < rank; ++j)
    src << " * " << dim(outParam, j);
  src << ";\n  const long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;\n"
      << "  if (i >= n) return;\n";
  if (rank) {
    src << "  long long rest = i;\n";
    for (int64_t j = rank - 1; j > 0; --j)
      src << "  const long long " << c(j) << " = rest % " << dim(outParam, j) << "; rest /= "
          << dim(outParam, j) << ";\n";
    src << "  const long long " << c(0) << " = rest;\n";
  }
  src << "  {\n" << body.str() << "  }\n}\n";
  src << "#ifdef ORTC_HOST_EMULATION\nORTC_EMU_ENTRY(" << name << ")\n#endif\n";
  kernel.source = src.str();
  return kernel;
}

} // namespace ortc::cuda
