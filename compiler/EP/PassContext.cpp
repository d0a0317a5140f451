//===- PassContext.cpp - verifier failures that name their pass -----------===//

#include "compiler/EP/PassContext.h"

#include "mlir/IR/MLIRContext.h"
#include "mlir/Pass/Pass.h"
#include "mlir/Pass/PassInstrumentation.h"
#include "mlir/Pass/PassManager.h"

#include <vector>

namespace ortc {

namespace {

struct RunningPass {
  const mlir::Pass *pass;
  bool verifying = false;
};

/// The passes running on this thread, outermost first (pass adaptors, a
/// pipeline's nesting, included).
thread_local std::vector<RunningPass> runningPasses;

class RunningPassTracker : public mlir::PassInstrumentation {
public:
  void runBeforePass(mlir::Pass *pass, mlir::Operation *) override {
    runningPasses.push_back({pass});
  }
  void runAfterPass(mlir::Pass *, mlir::Operation *) override { pop(); }
  void runAfterPassFailed(mlir::Pass *, mlir::Operation *) override { pop(); }

private:
  static void pop() {
    if (!runningPasses.empty())
      runningPasses.pop_back();
  }
};

/// MLIR runs a pass inside a PassExecutionAction, then verifies its output,
/// then calls runAfterPass: what happens between the end of the action and
/// runAfterPass is the verifier.
void markVerificationAfterPasses(llvm::function_ref<void()> transform,
                                 const mlir::tracing::Action &action) {
  transform();
  auto *execution = llvm::dyn_cast<mlir::PassExecutionAction>(&action);
  if (execution && !runningPasses.empty() && runningPasses.back().pass == &execution->getPass())
    runningPasses.back().verifying = true;
}

} // namespace

void preparePassManager(mlir::PassManager &pm) {
  pm.enableVerifier(true);
  pm.addInstrumentation(std::make_unique<RunningPassTracker>());
  pm.getContext()->registerActionHandler(markVerificationAfterPasses);
}

llvm::StringRef passBeingVerified() {
  if (runningPasses.empty() || !runningPasses.back().verifying)
    return {};
  const mlir::Pass *pass = runningPasses.back().pass;
  return pass->getArgument().empty() ? pass->getName() : pass->getArgument();
}

} // namespace ortc
