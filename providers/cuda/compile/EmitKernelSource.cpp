//===- EmitKernelSource.cpp - cuda-emit-kernel-source ---------------------===//

#include "providers/cuda/compile/KernelEmitter.h"
#include "providers/cuda/compile/Passes.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "mlir/IR/BuiltinOps.h"

namespace ortc::cuda {
#define GEN_PASS_DEF_CUDAEMITKERNELSOURCE
#include "providers/cuda/compile/Passes.h.inc"
} // namespace ortc::cuda

using namespace mlir;

namespace {

struct CudaEmitKernelSourcePass
    : ortc::cuda::impl::CudaEmitKernelSourceBase<CudaEmitKernelSourcePass> {
  void runOnOperation() override {
    bool failedAny = false;
    for (auto fn : getOperation().getOps<func::FuncOp>()) {
      if (!fn->hasAttr("ortc.cuda.kernel"))
        continue;
      FailureOr<std::string> source = ortc::cuda::emitElementwiseKernel(fn);
      if (failed(source)) {
        failedAny = true;
        continue;
      }
      fn->setAttr("ortc.cuda.source", StringAttr::get(fn.getContext(), *source));
    }
    if (failedAny)
      signalPassFailure();
  }
};

} // namespace
