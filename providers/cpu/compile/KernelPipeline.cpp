//===- KernelPipeline.cpp - CPU kernels from onnx ops to LLVM IR ----------===//
//
// The kernel pipeline (see KernelPipeline.h for its input and output): the
// passes of Passes.td strung together with upstream ones, the dialects and
// interface models they need, and the translation to LLVM IR. Each CPU pass
// lives in its own file:
//
//   onnx-lower-to-linalg       LowerToLinalg.cpp
//   cpu-fuse-elementwise      FuseElementwise.cpp
//   cpu-tile-and-vectorize    TileAndVectorize.cpp
//   cpu-approximate-math      ApproximateMath.cpp
//   cpu-emit-kernel-entries   EmitKernelEntries.cpp
//
//===----------------------------------------------------------------------===//

#include "providers/cpu/compile/KernelPipeline.h"
#include "providers/cpu/compile/Passes.h"
#include "compiler/EP/PassContext.h"
#include "compiler/Lowering/Passes.h"

#include "dialects/onnx/OnnxDialect.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Conversion/AffineToStandard/AffineToStandard.h"
#include "mlir/Conversion/ArithToLLVM/ArithToLLVM.h"
#include "mlir/Conversion/ControlFlowToLLVM/ControlFlowToLLVM.h"
#include "mlir/Conversion/FuncToLLVM/ConvertFuncToLLVMPass.h"
#include "mlir/Conversion/IndexToLLVM/IndexToLLVM.h"
#include "mlir/Conversion/MathToLLVM/MathToLLVM.h"
#include "mlir/Conversion/MathToLibm/MathToLibm.h"
#include "mlir/Conversion/MemRefToLLVM/MemRefToLLVM.h"
#include "mlir/Conversion/ReconcileUnrealizedCasts/ReconcileUnrealizedCasts.h"
#include "mlir/Conversion/SCFToControlFlow/SCFToControlFlow.h"
#include "mlir/Conversion/UBToLLVM/UBToLLVM.h"
#include "mlir/Conversion/VectorToLLVM/ConvertVectorToLLVMPass.h"
#include "mlir/Dialect/Affine/IR/AffineOps.h"
#include "mlir/Dialect/Affine/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/IR/Arith.h"
#include "mlir/Dialect/Arith/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/Arith/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/IR/Bufferization.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/FuncBufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/ControlFlow/IR/ControlFlow.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/ControlFlow/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Index/IR/IndexDialect.h"
#include "mlir/Dialect/LLVMIR/LLVMDialect.h"
#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/Linalg/Transforms/AllInterfaces.h"
#include "mlir/Dialect/Math/IR/Math.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/MemRef/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/AllocationOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/BufferViewFlowOpInterfaceImpl.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/Dialect/SCF/IR/SCF.h"
#include "mlir/Dialect/SCF/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferDeallocationOpInterfaceImpl.h"
#include "mlir/Dialect/SCF/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/Tensor.h"
#include "mlir/Dialect/Tensor/IR/TensorInferTypeOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/TensorTilingInterfaceImpl.h"
#include "mlir/Dialect/Tensor/IR/ValueBoundsOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Tensor/Transforms/SubsetInsertionOpInterfaceImpl.h"
#include "mlir/Dialect/UB/IR/UBOps.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"
#include "mlir/Dialect/Vector/Transforms/BufferizableOpInterfaceImpl.h"
#include "mlir/Dialect/Vector/Transforms/SubsetOpInterfaceImpl.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Target/LLVMIR/Dialect/Builtin/BuiltinToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Dialect/LLVMIR/LLVMToLLVMIRTranslation.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "mlir/Transforms/Passes.h"
#include "llvm/IR/Module.h"

using namespace mlir;

void ortc::cpu::registerKernelPipelineDialects(DialectRegistry &registry) {
  registry.insert<affine::AffineDialect, arith::ArithDialect, bufferization::BufferizationDialect,
                  cf::ControlFlowDialect, func::FuncDialect, index::IndexDialect,
                  linalg::LinalgDialect, LLVM::LLVMDialect, math::MathDialect,
                  memref::MemRefDialect, scf::SCFDialect, tensor::TensorDialect,
                  ub::UBDialect, vector::VectorDialect, onnx_dialect::OnnxDialect,
                  fused::OrtcDialect>();
  affine::registerValueBoundsOpInterfaceExternalModels(registry);
  arith::registerBufferDeallocationOpInterfaceExternalModels(registry);
  arith::registerBufferizableOpInterfaceExternalModels(registry);
  arith::registerBufferViewFlowOpInterfaceExternalModels(registry);
  arith::registerValueBoundsOpInterfaceExternalModels(registry);
  bufferization::func_ext::registerBufferizableOpInterfaceExternalModels(registry);
  cf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  cf::registerBufferizableOpInterfaceExternalModels(registry);
  linalg::registerAllDialectInterfaceImplementations(registry);
  memref::registerAllocationOpInterfaceExternalModels(registry);
  memref::registerBufferViewFlowOpInterfaceExternalModels(registry);
  memref::registerValueBoundsOpInterfaceExternalModels(registry);
  scf::registerBufferDeallocationOpInterfaceExternalModels(registry);
  scf::registerBufferizableOpInterfaceExternalModels(registry);
  scf::registerValueBoundsOpInterfaceExternalModels(registry);
  tensor::registerBufferizableOpInterfaceExternalModels(registry);
  tensor::registerInferTypeOpInterfaceExternalModels(registry);
  tensor::registerSubsetOpInterfaceExternalModels(registry);
  tensor::registerTilingInterfaceExternalModels(registry);
  tensor::registerValueBoundsOpInterfaceExternalModels(registry);
  vector::registerBufferizableOpInterfaceExternalModels(registry);
  vector::registerSubsetOpInterfaceExternalModels(registry);
  registerBuiltinDialectTranslation(registry);
  registerLLVMDialectTranslation(registry);
}

void ortc::cpu::buildCpuKernelLoweringPipeline(OpPassManager &pm,
                                               const KernelPipelineOptions &options) {
  {
    OpPassManager &fn = pm.nest<func::FuncOp>();
    OnnxLowerToLinalgOptions lower;
    lower.failOnUnlowered = true;
    fn.addPass(createOnnxLowerToLinalg(lower));
    fn.addPass(createCanonicalizerPass());
    fn.addPass(createCSEPass());
    fn.addPass(createCpuFuseElementwise());
    fn.addPass(createCanonicalizerPass());
    fn.addPass(createCSEPass());
  }
  // Outputs are written in place: the tensor.empty of a value that goes to
  // an output becomes that output's buffer.
  pm.addPass(bufferization::createEmptyTensorEliminationPass());
  bufferization::OneShotBufferizePassOptions bufferize;
  bufferize.bufferizeFunctionBoundaries = false; // kernels take memrefs already
  bufferize.unknownTypeConversion = bufferization::LayoutMapOption::IdentityLayoutMap;
  pm.addPass(bufferization::createOneShotBufferizePass(bufferize));
  pm.addPass(createCanonicalizerPass());
  // Temporaries that survive fusion are freed.
  bufferization::buildBufferDeallocationPipeline(pm);
  {
    OpPassManager &fn = pm.nest<func::FuncOp>();
    CpuTileAndVectorizeOptions tiling;
    tiling.vectorWidth = options.vectorWidth;
    tiling.unroll = options.unroll;
    fn.addPass(createCpuTileAndVectorize(tiling));
    fn.addPass(createCanonicalizerPass());
    fn.addPass(createCSEPass());
    fn.addPass(createConvertLinalgToLoopsPass());
    fn.addPass(memref::createFoldMemRefAliasOpsPass());
    fn.addPass(createCanonicalizerPass());
  }
  pm.addPass(createCpuApproximateMath());
  pm.addPass(createCpuEmitKernelEntries());
  pm.addPass(memref::createExpandStridedMetadataPass());
  pm.addPass(createLowerAffinePass());
  pm.addPass(createSCFToControlFlowPass());
  // Math before vectors: libm calls unroll vectors with vector ops.
  pm.addPass(createConvertMathToLLVMPass());
  pm.addPass(createConvertMathToLibmPass());
  pm.addPass(createConvertVectorToLLVMPass());
  pm.addPass(createFinalizeMemRefToLLVMConversionPass());
  pm.addPass(createArithToLLVMConversionPass());
  pm.addPass(createConvertIndexToLLVMPass());
  pm.addPass(createConvertControlFlowToLLVMPass());
  pm.addPass(createConvertFuncToLLVMPass());
  pm.addPass(createUBToLLVMConversionPass());
  pm.addPass(createReconcileUnrealizedCastsPass());
  pm.addPass(createCanonicalizerPass());
}

FailureOr<std::unique_ptr<llvm::Module>>
ortc::cpu::lowerKernelsToLLVMIR(ModuleOp kernels, llvm::LLVMContext &llvmContext,
                                const KernelPipelineOptions &options) {
  MLIRContext *ctx = kernels->getContext();
  DialectRegistry registry;
  registerKernelPipelineDialects(registry);
  ctx->appendDialectRegistry(registry);

  // Count the errors the passes report (they still reach the caller's
  // handler), so that a failure without one still says something.
  int errors = 0;
  ScopedDiagnosticHandler counter(ctx, [&](Diagnostic &diag) {
    if (diag.getSeverity() == DiagnosticSeverity::Error)
      ++errors;
    return failure();
  });

  PassManager pm(ctx, kernels->getName().getStringRef());
  preparePassManager(pm);
  buildCpuKernelLoweringPipeline(pm, options);
  // The kernels are independent functions: their nested pipelines run on
  // every core (diagnostics still come back in order, on this thread).
  bool wasMultithreaded = ctx->isMultithreadingEnabled();
  ctx->enableMultithreading(true);
  LogicalResult lowered = pm.run(kernels);
  ctx->enableMultithreading(wasMultithreaded);
  if (failed(lowered)) {
    if (errors == 0)
      emitError(kernels.getLoc(), "cpu kernel lowering pipeline failed");
    return failure();
  }
  std::unique_ptr<llvm::Module> module = translateModuleToLLVMIR(kernels, llvmContext, "ortc_cpu_kernels");
  if (!module) {
    if (errors == 0)
      emitError(kernels.getLoc(), "cpu kernels: translation to LLVM IR failed");
    return failure();
  }
  return module;
}
