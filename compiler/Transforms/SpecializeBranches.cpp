//===- SpecializeBranches.cpp - onnx-specialize-branches ------------------===//
//
// Plans give every value a rank, so an If whose branches yield different
// ranks (torch's x.squeeze(d) on a dynamic dim exports as "If dim d is 1:
// Squeeze, else Identity") cannot run as an If: what follows it would need
// both ranks. Often only one branch leaves a graph that type-checks: under
// the other, a later op gets a rank it cannot take, or an If whose condition
// then folds contradicts its declared types. Each branch is tried on a copy
// of the function (shape inference and folding to a fixed point); when
// exactly one comes through clean, the If becomes that branch, and an
// ortc.check_condition refuses at run time an input whose condition would
// take the other. Ifs where both or neither come through are left alone;
// the EPs decline their unranked results with a reason.
//
//===----------------------------------------------------------------------===//

#include "compiler/Transforms/Passes.h"

#include "compiler/Transforms/FunctionTypes.h"
#include "compiler/Transforms/HostTensor.h"
#include "compiler/Transforms/OpQueries.h"
#include "compiler/Transforms/RegionInlining.h"
#include "dialects/onnx/OnnxOps.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"

#include <optional>
#include <string>

namespace ortc {
#define GEN_PASS_DEF_ONNXSPECIALIZEBRANCHES
#include "compiler/Transforms/Passes.h.inc"
} // namespace ortc

using namespace mlir;
namespace od = ortc::onnx_dialect;

namespace {

constexpr int64_t kFoldElements = 65536;
constexpr unsigned kMaxRounds = 100;

bool hasConstantCondition(od::IfOp op) {
  return ortc::readHostTensor(op.getCond(), 1).has_value();
}

/// Whether the branches yield some value in two different ranks (or one of
/// them of unknown rank) while the condition is not known.
bool isRankDivergent(od::IfOp op) {
  if (hasConstantCondition(op) || !op.getThenBranch().hasOneBlock() ||
      !op.getElseBranch().hasOneBlock())
    return false;
  Operation *a = op.getThenBranch().front().getTerminator();
  Operation *b = op.getElseBranch().front().getTerminator();
  if (a->getNumOperands() != b->getNumOperands())
    return false;
  for (auto [x, y] : llvm::zip(a->getOperands(), b->getOperands())) {
    auto tx = dyn_cast<TensorType>(x.getType()), ty = dyn_cast<TensorType>(y.getType());
    if (tx && ty && tx.hasRank() && ty.hasRank() && tx.getRank() != ty.getRank())
      return true;
  }
  return false;
}

/// The If ops of `fn` in walk order (the same in a clone).
SmallVector<od::IfOp> ifsOf(func::FuncOp fn) {
  SmallVector<od::IfOp> ifs;
  fn.walk<WalkOrder::PreOrder>([&](od::IfOp op) { ifs.push_back(op); });
  return ifs;
}

/// Replaces `op` by the ops of one branch.
void inlineBranch(od::IfOp op, bool thenBranch) {
  ortc::inlineRegionInPlaceOf(op, thenBranch ? op.getThenBranch() : op.getElseBranch());
}

/// Shape inference, folding and upgrades to a fixed point, as
/// onnx-propagate-shapes runs them; false on an error.
bool propagate(func::FuncOp fn) {
  for (unsigned round = 0; round < kMaxRounds; ++round) {
    unsigned refined = 0;
    if (failed(ortc::inferShapesIn(fn, refined, /*strictShapes=*/false)))
      return false;
    unsigned folded = ortc::foldConstantsIn(fn, kFoldElements);
    unsigned upgraded = ortc::upgradeGenericOpsIn(fn);
    if (refined == 0 && folded == 0 && upgraded == 0)
      return true;
  }
  return false;
}

/// What the graph looks like with If number `index` replaced by a branch.
struct Trial {
  bool typeChecks = false;
  // Ifs whose condition folded but whose branch disagrees with their types,
  // and values whose declared rank inference contradicts.
  unsigned contradictions = 0;
  std::string firstError;
  bool clean() const { return typeChecks && contradictions == 0; }
};

/// The rank of a printed tensor type ("tensor<1x?x128xf32>": 3, "tensor<f32>":
/// 0), or -1 for an unranked or unreadable one.
int printedRank(StringRef type) {
  if (!type.consume_front("tensor<") || type.starts_with("*"))
    return -1;
  type = type.take_until([](char c) { return c == '>'; });
  return int(type.count('x'));
}

/// Whether `message` is shape inference's warning that a declared type and
/// the inferred one differ in rank.
bool isRankContradiction(StringRef message) {
  size_t declared = message.find("is declared as '");
  size_t inferred = message.find("but its inputs give '");
  if (declared == StringRef::npos || inferred == StringRef::npos)
    return false;
  int a = printedRank(message.substr(declared + 16));
  int b = printedRank(message.substr(inferred + 21));
  return a >= 0 && b >= 0 && a != b;
}

Trial tryBranch(func::FuncOp fn, size_t index, bool thenBranch) {
  // The copy lives in a module of its own with the original's attributes
  // (opset imports), so the rules see what they would see in place.
  ModuleOp parent = fn->getParentOfType<ModuleOp>();
  OwningOpRef<ModuleOp> scratch = ModuleOp::create(fn.getLoc());
  if (parent)
    (*scratch)->setAttrs(parent->getAttrDictionary());
  func::FuncOp copy = fn.clone();
  scratch->push_back(copy);
  Trial trial;
  {
    ScopedDiagnosticHandler capture(fn.getContext(), [&](Diagnostic &d) {
      if (d.getSeverity() == DiagnosticSeverity::Error && trial.firstError.empty())
        trial.firstError = d.str();
      // Shape inference's "declared as T but its inputs give U; using the
      // inferred shape", where the ranks differ.
      if (d.getSeverity() == DiagnosticSeverity::Warning && isRankContradiction(d.str()))
        ++trial.contradictions;
      return success(); // the copy's diagnostics are not the user's
    });
    inlineBranch(ifsOf(copy)[index], thenBranch);
    trial.typeChecks = propagate(copy) && trial.firstError.empty();
  }
  for (od::IfOp op : ifsOf(copy))
    trial.contradictions += hasConstantCondition(op);
  return trial;
}

struct OnnxSpecializeBranches
    : ortc::impl::OnnxSpecializeBranchesBase<OnnxSpecializeBranches> {
  using Base::Base;

  void runOnOperation() override {
    func::FuncOp fn = getOperation();
    // One If at a time: specializing one folds the conditions of others.
    for (unsigned round = 0; round < maxSpecializations; ++round) {
      if (!specializeOne(fn))
        return;
      ++numSpecialized;
      if (!propagate(fn)) {
        fn.emitError("shape inference failed after specializing an If");
        return signalPassFailure();
      }
    }
  }

  /// Specializes the first rank-divergent If that one branch decides.
  bool specializeOne(func::FuncOp fn) {
    SmallVector<od::IfOp> ifs = ifsOf(fn);
    for (size_t index = 0; index < ifs.size(); ++index) {
      od::IfOp op = ifs[index];
      if (!isRankDivergent(op))
        continue;
      Trial onThen = tryBranch(fn, index, true), onElse = tryBranch(fn, index, false);
      if (onThen.clean() == onElse.clean())
        continue;
      bool thenBranch = onThen.clean();
      const Trial &other = thenBranch ? onElse : onThen;
      std::string taken = thenBranch ? "then_branch" : "else_branch";
      std::string refused = thenBranch ? "else_branch" : "then_branch";
      std::string why = !other.typeChecks && !other.firstError.empty()
                            ? other.firstError
                            : "an If whose condition then folds contradicts its declared types";
      std::string message = "node '" + ortc::nodeNameOf(op, "If") + "' was compiled for its " + taken +
                            ", its branches giving different ranks (under the " + refused +
                            " the graph does not type-check: " + why + "); this input's " +
                            "condition takes the " + refused;
      OpBuilder builder(op);
      ortc::fused::CheckConditionOp::create(builder, op.getLoc(), op.getCond(),
                                            builder.getBoolAttr(thenBranch),
                                            builder.getStringAttr(message));
      inlineBranch(op, thenBranch);
      ortc::syncFunctionResultTypes(fn);
      return true;
    }
    return false;
  }
};

} // namespace
