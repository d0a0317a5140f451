//===- UnrollControlFlow.cpp - onnx-unroll-control-flow -------------------===//
//
// EPs cannot run subgraphs, but a Scan over a static sequence or a Loop with
// a constant trip count and a condition that stays true is a straight-line
// program once unrolled: each iteration is a copy of the body whose state
// arguments are the previous copy's results, whose scan-input arguments are
// Gathers of one step, and whose scan outputs are Unsqueezed and Concatenated.
// If with a constant condition is inlined by onnx-fold-constants; an If
// choosing between constants becomes a Where.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/Scan8Form.h"

#include "compiler/Transforms/FunctionTypes.h"
#include "compiler/Transforms/HostTensor.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/IRMapping.h"

#include <string>

namespace ortc {
#define GEN_PASS_DEF_ONNXUNROLLCONTROLFLOW
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
using ortc::HostTensor;

namespace {

/// A result type to start from: the element type where known; shape
/// inference refines it afterwards.
Type looseType(Type type) {
  if (auto tensor = dyn_cast<TensorType>(type))
    return UnrankedTensorType::get(tensor.getElementType());
  return type;
}

std::string locName(Location loc) {
  if (auto name = dyn_cast<NameLoc>(loc))
    return name.getName().str();
  return "";
}

/// Number of ops a copy of `block` creates (nested regions included).
int64_t countOps(Block &block) {
  int64_t n = 0;
  for (Operation &op : block.without_terminator())
    op.walk([&](Operation *) { ++n; });
  return n;
}

class Unroller {
public:
  Unroller(Operation *op) : builder(op), loc(op->getLoc()), name(locName(op->getLoc())) {}

  Value constantI64(ArrayRef<int64_t> shape, ArrayRef<int64_t> values) {
    HostTensor t = HostTensor::make(shape, builder.getI64Type());
    t.ints.assign(values.begin(), values.end());
    return constant(t);
  }
  Value constantTrue() {
    HostTensor t = HostTensor::make({}, builder.getI1Type());
    t.ints.assign(1, 1);
    return constant(t);
  }
  Value constant(const HostTensor &t) {
    OperationState state(loc, "onnx.Constant");
    Attribute value = t.toAttribute();
    state.addAttribute("value", value);
    state.addTypes(cast<TypedAttr>(value).getType());
    return builder.create(state)->getResult(0);
  }
  /// Step `index` of `x` along `axis`, without that axis.
  Value gather(Value x, int64_t index, int64_t axis) {
    OperationState state(loc, "onnx.Gather");
    state.addOperands({x, constantI64({}, {index})});
    state.addAttribute("axis", builder.getI64IntegerAttr(axis));
    state.addTypes(looseType(x.getType()));
    return builder.create(state)->getResult(0);
  }
  Value unsqueeze(Value x, int64_t axis) {
    OperationState state(loc, "onnx.Unsqueeze");
    state.addOperands({x, constantI64({1}, {axis})});
    state.addTypes(looseType(x.getType()));
    return builder.create(state)->getResult(0);
  }
  /// `steps` stacked along a new `axis`, in order.
  Value stack(ArrayRef<Value> steps, int64_t axis) {
    SmallVector<Value> parts;
    for (Value step : steps)
      parts.push_back(unsqueeze(step, axis));
    if (parts.size() == 1)
      return parts.front();
    OperationState state(loc, "onnx.Concat");
    state.addOperands(parts);
    state.addAttribute("axis", builder.getI64IntegerAttr(axis));
    state.addTypes(looseType(steps.front().getType()));
    return builder.create(state)->getResult(0);
  }
  /// A copy of `body` before the op with its arguments bound to `args`;
  /// returns the values it yields. The copy's ops are named
  /// "<op>[<iteration>]/<body op>".
  SmallVector<Value> cloneBody(Block &body, ValueRange args, const std::string &iteration) {
    IRMapping mapping;
    mapping.map(body.getArguments(), args);
    for (Operation &op : body.without_terminator()) {
      Operation *copy = builder.clone(op, mapping);
      copy->setLoc(NameLoc::get(
          builder.getStringAttr(name + iteration + "/" + locName(op.getLoc())), op.getLoc()));
    }
    SmallVector<Value> yielded;
    for (Value v : body.getTerminator()->getOperands())
      yielded.push_back(mapping.lookupOrDefault(v));
    return yielded;
  }

  OpBuilder builder;
  Location loc;
  std::string name;
};

int64_t attrAt(ArrayRef<int64_t> values, size_t i) { return i < values.size() ? values[i] : 0; }

/// Scan-9+ semantics over `states` and `scans` (each of static length `steps`
/// along its axis); returns the final states, then the scan outputs.
SmallVector<Value> unrollScan(Unroller &u, Block &body, ArrayRef<Value> states,
                              ArrayRef<Value> scans, ArrayRef<int64_t> inAxes,
                              ArrayRef<int64_t> inDirs, ArrayRef<int64_t> outAxes,
                              ArrayRef<int64_t> outDirs, int64_t steps, const std::string &tag) {
  SmallVector<Value> carried(states);
  unsigned numState = states.size();
  unsigned numOut = body.getTerminator()->getNumOperands() - numState;
  SmallVector<SmallVector<Value>> outs(numOut);
  for (int64_t t = 0; t < steps; ++t) {
    SmallVector<Value> args(carried);
    for (auto [j, x] : llvm::enumerate(scans))
      args.push_back(u.gather(x, attrAt(inDirs, j) == 1 ? steps - 1 - t : t, attrAt(inAxes, j)));
    SmallVector<Value> yielded = u.cloneBody(body, args, tag + "[" + std::to_string(t) + "]");
    for (unsigned i = 0; i < numState; ++i)
      carried[i] = yielded[i];
    for (unsigned k = 0; k < numOut; ++k)
      outs[k].push_back(yielded[numState + k]);
  }
  SmallVector<Value> results(carried);
  for (unsigned k = 0; k < numOut; ++k) {
    if (attrAt(outDirs, k) == 1)
      std::reverse(outs[k].begin(), outs[k].end());
    results.push_back(u.stack(outs[k], attrAt(outAxes, k)));
  }
  return results;
}

/// The static length of `x` along `axis` (negative counts from the back),
/// or -1.
int64_t staticDim(Value x, int64_t axis) {
  auto type = dyn_cast<RankedTensorType>(x.getType());
  if (!type)
    return -1;
  if (axis < 0)
    axis += type.getRank();
  if (axis < 0 || axis >= type.getRank() || type.isDynamicDim(axis))
    return -1;
  return type.getDimSize(axis);
}

SmallVector<int64_t> arrayAttr(Attribute attr) {
  if (auto dense = dyn_cast_or_null<DenseI64ArrayAttr>(attr))
    return SmallVector<int64_t>(dense.asArrayRef());
  SmallVector<int64_t> values;
  if (auto array = dyn_cast_or_null<ArrayAttr>(attr))
    for (Attribute a : array)
      if (auto i = dyn_cast<IntegerAttr>(a))
        values.push_back(i.getInt());
  return values;
}

struct OnnxUnrollControlFlow : ortc::impl::OnnxUnrollControlFlowBase<OnnxUnrollControlFlow> {
  using Base::Base;

  /// Whether `iterations` copies of `body` fit the budgets.
  bool fits(Block &body, int64_t iterations) {
    return iterations >= 1 && iterations <= maxIterations && iterations * countOps(body) <= maxOps;
  }

  /// The single block of region `region` of `op` (which has `numRegions`), with a terminator
  /// yielding `numYield` values, or null.
  static Block *bodyOf(Operation *op, unsigned numArgs, unsigned numYield, unsigned region = 0,
                       unsigned numRegions = 1) {
    if (op->getNumRegions() != numRegions || !op->getRegion(region).hasOneBlock())
      return nullptr;
    Block &body = op->getRegion(region).front();
    if (body.getNumArguments() != numArgs || body.empty() ||
        body.getTerminator()->getNumOperands() != numYield)
      return nullptr;
    return &body;
  }

  static void replace(Operation *op, ArrayRef<Value> values) {
    for (auto [result, value] : llvm::zip(op->getResults(), values))
      result.replaceAllUsesWith(value);
    op->erase();
  }

  bool unrollScan9(Operation *op) {
    auto numScanAttr = op->getAttrOfType<IntegerAttr>("num_scan_inputs");
    if (!numScanAttr)
      return false;
    int64_t numScan = numScanAttr.getInt();
    int64_t numState = int64_t(op->getNumOperands()) - numScan;
    if (numScan < 1 || numState < 0)
      return false;
    Block *body = bodyOf(op, op->getNumOperands(), op->getNumResults());
    if (!body)
      return false;
    SmallVector<int64_t> inAxes = arrayAttr(op->getAttr("scan_input_axes"));
    SmallVector<int64_t> inDirs = arrayAttr(op->getAttr("scan_input_directions"));
    SmallVector<int64_t> outAxes = arrayAttr(op->getAttr("scan_output_axes"));
    SmallVector<int64_t> outDirs = arrayAttr(op->getAttr("scan_output_directions"));
    SmallVector<Value> states(op->getOperands().take_front(numState));
    SmallVector<Value> scans(op->getOperands().drop_front(numState));
    int64_t steps = -1;
    for (auto [j, x] : llvm::enumerate(scans)) {
      int64_t n = staticDim(x, attrAt(inAxes, j));
      if (n < 0 || (steps >= 0 && n != steps))
        return false;
      steps = n;
    }
    if (!fits(*body, steps))
      return false;
    Unroller u(op);
    replace(op, unrollScan(u, *body, states, scans, inAxes, inDirs, outAxes, outDirs, steps, ""));
    return true;
  }

  /// Scan-8 (onnx.Generic): inputs and states have a leading batch dim, scan
  /// inputs then the sequence dim; no sequence_lens.
  bool unrollScan8(Operation *op) {
    std::optional<ortc::Scan8Form> form = ortc::readScan8(op);
    if (!form)
      return false;
    int64_t numState = form->numState;
    Block *body = form->body;
    SmallVector<int64_t> dirs = form->directions;
    SmallVector<Value> states(op->getOperands().slice(1, numState));
    SmallVector<Value> scans(op->getOperands().drop_front(1 + numState));
    int64_t batch = -1, steps = -1;
    for (Value x : scans) {
      int64_t b = staticDim(x, 0), n = staticDim(x, 1);
      if (b < 0 || n < 0 || (batch >= 0 && b != batch) || (steps >= 0 && n != steps))
        return false;
      batch = b;
      steps = n;
    }
    for (Value s : states)
      if (staticDim(s, 0) != batch)
        return false;
    if (!fits(*body, batch * steps))
      return false;
    Unroller u(op);
    unsigned numResults = op->getNumResults();
    SmallVector<SmallVector<Value>> perBatch(numResults);
    for (int64_t b = 0; b < batch; ++b) {
      SmallVector<Value> bStates, bScans;
      for (Value s : states)
        bStates.push_back(u.gather(s, b, 0));
      for (Value x : scans)
        bScans.push_back(u.gather(x, b, 0));
      SmallVector<Value> results = unrollScan(u, *body, bStates, bScans, {}, dirs, {}, {}, steps,
                                              "[" + std::to_string(b) + "]");
      for (unsigned i = 0; i < numResults; ++i)
        perBatch[i].push_back(results[i]);
    }
    SmallVector<Value> results;
    for (unsigned i = 0; i < numResults; ++i)
      results.push_back(u.stack(perBatch[i], 0));
    replace(op, results);
    return true;
  }

  /// Whether `cond` (a Loop body's condition output) is true in every
  /// iteration when the incoming condition is: a constant true, or the
  /// incoming condition passed through Identity.
  static bool staysTrue(Value cond, Value incoming) {
    while (Operation *def = cond.getDefiningOp()) {
      if (def->getName().getStringRef() != "onnx.Identity" || def->getNumOperands() != 1)
        break;
      cond = def->getOperand(0);
    }
    if (cond == incoming)
      return true;
    std::optional<HostTensor> value = ortc::readHostTensor(cond, 1);
    return value && value->numElements() == 1 && value->intAt(0) != 0;
  }

  bool unrollLoop(Operation *op) {
    if (op->getNumOperands() < 2)
      return false;
    unsigned numCarried = op->getNumOperands() - 2;
    if (op->getNumResults() < numCarried)
      return false;
    unsigned numScanOut = op->getNumResults() - numCarried;
    Block *body = bodyOf(op, 2 + numCarried, 1 + numCarried + numScanOut);
    if (!body)
      return false;
    std::optional<HostTensor> trips = ortc::readHostTensor(op->getOperand(0), 1);
    if (!trips || trips->numElements() != 1 || trips->isFloat())
      return false;
    Value cond = op->getOperand(1);
    if (!isa<NoneType>(cond.getType())) {
      std::optional<HostTensor> c = ortc::readHostTensor(cond, 1);
      if (!c || c->numElements() != 1 || c->intAt(0) == 0)
        return false;
    }
    if (!staysTrue(body->getTerminator()->getOperand(0), body->getArgument(1)))
      return false;
    int64_t steps = trips->intAt(0);
    if (!fits(*body, steps))
      return false;
    Unroller u(op);
    SmallVector<Value> carried(op->getOperands().drop_front(2));
    SmallVector<SmallVector<Value>> outs(numScanOut);
    Value yes = u.constantTrue();
    for (int64_t i = 0; i < steps; ++i) {
      SmallVector<Value> args{u.constantI64({}, {i}), yes};
      args.append(carried);
      SmallVector<Value> yielded = u.cloneBody(*body, args, "[" + std::to_string(i) + "]");
      for (unsigned k = 0; k < numCarried; ++k)
        carried[k] = yielded[1 + k];
      for (unsigned k = 0; k < numScanOut; ++k)
        outs[k].push_back(yielded[1 + numCarried + k]);
    }
    SmallVector<Value> results(carried);
    for (unsigned k = 0; k < numScanOut; ++k)
      results.push_back(u.stack(outs[k], 0));
    replace(op, results);
    return true;
  }

  /// If whose branches compute nothing (they only yield constants and values
  /// from outside, possibly through Identity), with a one-element condition
  /// and both branches yielding the same static type: Where(cond, then,
  /// else). Neither branch can fail, so evaluating both is safe.
  bool selectIf(Operation *op) {
    if (op->getNumRegions() != 2 || op->getNumOperands() != 1)
      return false;
    auto condType = dyn_cast<RankedTensorType>(op->getOperand(0).getType());
    if (!condType || !condType.getElementType().isInteger(1) || !condType.hasStaticShape() ||
        condType.getNumElements() != 1)
      return false;
    // The typed If's regions are (else_branch, then_branch).
    Block *elseBody = bodyOf(op, 0, op->getNumResults(), 0, 2);
    Block *thenBody = bodyOf(op, 0, op->getNumResults(), 1, 2);
    if (!elseBody || !thenBody)
      return false;
    for (Block *body : {elseBody, thenBody})
      for (Operation &inner : body->without_terminator()) {
        StringRef name = inner.getName().getStringRef();
        if ((name != "onnx.Constant" && name != "onnx.Identity") || inner.getNumRegions() != 0)
          return false;
      }
    for (unsigned i = 0; i < op->getNumResults(); ++i) {
      Type thenType = thenBody->getTerminator()->getOperand(i).getType();
      auto type = dyn_cast<RankedTensorType>(thenType);
      if (!type || !type.hasStaticShape() ||
          elseBody->getTerminator()->getOperand(i).getType() != thenType ||
          type.getRank() < condType.getRank())
        return false;
    }
    Unroller u(op);
    SmallVector<Value> thenValues = u.cloneBody(*thenBody, {}, "/then");
    SmallVector<Value> elseValues = u.cloneBody(*elseBody, {}, "/else");
    SmallVector<Value> results;
    for (auto [t, e] : llvm::zip(thenValues, elseValues)) {
      OperationState state(op->getLoc(), "onnx.Where");
      state.addOperands({op->getOperand(0), t, e});
      state.addTypes(t.getType());
      results.push_back(u.builder.create(state)->getResult(0));
    }
    replace(op, results);
    return true;
  }

  static bool isCandidate(Operation *op) {
    StringRef name = op->getName().getStringRef();
    if (name == "onnx.Scan" || name == "onnx.Loop" || name == "onnx.If")
      return true;
    if (name != "onnx.Generic")
      return false;
    return ortc::isScan8(op);
  }

  /// One sweep over the function's Scan, Loop and If ops; returns how many
  /// it replaced.
  unsigned unrollOnce(func::FuncOp func) {
    // Post-order: inner loops unroll before the body that holds them is
    // copied; each listed op is in a region no earlier unrolling erased.
    SmallVector<Operation *> candidates;
    func.walk([&](Operation *op) {
      if (isCandidate(op))
        candidates.push_back(op);
    });
    unsigned unrolled = 0;
    for (Operation *op : candidates) {
      StringRef name = op->getName().getStringRef();
      bool done = name == "onnx.Scan"   ? unrollScan9(op)
                  : name == "onnx.Loop" ? unrollLoop(op)
                  : name == "onnx.If"   ? selectIf(op)
                                        : unrollScan8(op);
      unrolled += done;
    }
    return unrolled;
  }

  void runOnOperation() override {
    func::FuncOp func = getOperation();
    for (unsigned round = 0; round < maxRounds; ++round) {
      unsigned unrolled = unrollOnce(func);
      numUnrolled += unrolled;
      if (unrolled)
        ortc::syncFunctionResultTypes(func);
      bool left = false;
      func.walk([&](Operation *op) { left |= isCandidate(op); });
      if (!unrolled || !left)
        return;
      // What is left (such as copies of inner Scan/Loop/If, or a Loop whose
      // trip count an unrolled Scan computes) may unroll once the new ops'
      // types are inferred and folded.
      for (unsigned step = 0; step < 100; ++step) {
        unsigned refined = 0;
        if (failed(ortc::inferShapesIn(func, refined, strictShapes)))
          return signalPassFailure();
        unsigned folded = ortc::foldConstantsIn(func, /*maxElements=*/65536);
        if (refined == 0 && folded == 0)
          break;
      }
    }
  }
};

} // namespace
