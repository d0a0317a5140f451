//===- OutlineKernels.cpp - cuda-outline-kernels --------------------------===//

#include "providers/cuda/compile/KernelGroups.h"
#include "providers/cuda/compile/Passes.h"

#include "compiler/Transforms/SymbolicShapes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/DenseMap.h"

namespace ortc::cuda {
#define GEN_PASS_DEF_CUDAOUTLINEKERNELS
#include "providers/cuda/compile/Passes.h.inc"
} // namespace ortc::cuda

using namespace mlir;

namespace {

struct CudaOutlineKernelsPass
    : ortc::cuda::impl::CudaOutlineKernelsBase<CudaOutlineKernelsPass> {
  void runOnOperation() override {
    ModuleOp module = getOperation();
    SmallVector<func::FuncOp> functions;
    for (auto fn : module.getOps<func::FuncOp>())
      if (!fn->hasAttr("ortc.cuda.kernel") && !fn.isExternal())
        functions.push_back(fn);
    for (func::FuncOp fn : functions) {
      ortc::SymbolicShapes shapes(fn);
      std::vector<ortc::cuda::KernelGroup> groups = ortc::cuda::formKernelGroups(fn, shapes);
      // Every kernel is cloned before any member is replaced; a later
      // group may read an earlier one's result, which its call replaces.
      SmallVector<func::FuncOp> kernels;
      for (auto [n, group] : llvm::enumerate(groups))
        kernels.push_back(ortc::cuda::buildKernelFunction(
            group, module, fn.getSymName().str() + "_k" + std::to_string(n)));
      llvm::DenseMap<Value, Value> replaced;
      for (auto [group, kernel] : llvm::zip(groups, kernels)) {
        OpBuilder builder(group.last());
        builder.setInsertionPointAfter(group.last());
        SmallVector<Value> operands;
        for (Value v : group.inputs)
          operands.push_back(replaced.lookup(v) ? replaced.lookup(v) : v);
        auto call = func::CallOp::create(builder, group.last()->getLoc(), kernel, operands);
        for (auto [i, v] : llvm::enumerate(group.outputs)) {
          Value output = v;
          output.replaceAllUsesWith(call.getResult(i));
          replaced[output] = call.getResult(i);
        }
        for (Operation *op : llvm::reverse(group.ops))
          op->erase();
        ++numKernels;
        numFused += group.ops.size();
      }
    }
  }
};

} // namespace
