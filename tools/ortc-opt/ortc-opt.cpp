//===- ortc-opt.cpp - mlir-opt over ortc's dialects and passes ------------===//
//
// The lit driver: parses IR in our dialects, runs passes by name, prints.
//
//===----------------------------------------------------------------------===//

#include "compiler/Partition/Passes.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/ortc/OrtcDialect.h"
#include "providers/cpu/compile/KernelPipeline.h"
#include "providers/cpu/compile/Passes.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassManager.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry
      .insert<mlir::func::FuncDialect, ortc::onnx_dialect::OnnxDialect, ortc::fused::OrtcDialect>();
  // The CPU kernel pipeline's dialects and interface models (linalg, tensor,
  // bufferization, vector, LLVM, ...).
  ortc::cpu::registerKernelPipelineDialects(registry);
  // Generic MLIR passes (canonicalize, cse, symbol-dce, ...) for tests, and
  // the upstream ones the CPU kernel pipeline strings together.
  mlir::registerTransformsPasses();
  mlir::registerConversionPasses();
  mlir::bufferization::registerBufferizationPasses();
  mlir::bufferization::registerBufferizationPipelines();
  mlir::registerLinalgPasses();
  mlir::memref::registerMemRefPasses();
  ortc::registerOnnxGenericPasses();
  ortc::registerOrtcPartitionPasses();
  ortc::cpu::registerCpuPasses();
  // The whole CPU kernel pipeline, as one pass name.
  mlir::PassPipelineRegistration<>(
      "cpu-kernel-pipeline", "Lower CPU EP kernels from the onnx dialect to the LLVM dialect",
      [](mlir::OpPassManager &pm) { ortc::cpu::buildCpuKernelLoweringPipeline(pm); });
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "ortc optimizer driver\n", registry));
}
