//===- ortc-opt.cpp - mlir-opt over ortc's dialects and passes ------------===//
//
// The lit driver: parses IR in our dialects, runs passes by name, prints.
// Generic passes and pipelines come from the compiler; each EP's come from
// its registry entry, so this file names no EP.
//
//===----------------------------------------------------------------------===//

#include "compiler/Driver/Driver.h"
#include "compiler/EP/CompileEpRegistry.h"
#include "compiler/Lowering/Passes.h"
#include "compiler/Transforms/ShapeRules/ShapeRules.h"
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Conversion/Passes.h"
#include "mlir/Dialect/Bufferization/Pipelines/Passes.h"
#include "mlir/Dialect/Bufferization/Transforms/Passes.h"
#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/Dialect/Linalg/Passes.h"
#include "mlir/Dialect/MemRef/Transforms/Passes.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Pass/PassRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry
      .insert<mlir::func::FuncDialect, ortc::onnx_dialect::OnnxDialect, ortc::fused::OrtcDialect>();
  // Each op's shape rule (ShapeInferenceOpInterface).
  ortc::registerShapeRules(registry);
  // Generic MLIR passes (canonicalize, cse, symbol-dce, ...) for tests, and
  // the upstream ones the EPs' pipelines string together.
  mlir::registerTransformsPasses();
  mlir::registerConversionPasses();
  mlir::bufferization::registerBufferizationPasses();
  mlir::bufferization::registerBufferizationPipelines();
  mlir::registerLinalgPasses();
  mlir::memref::registerMemRefPasses();
  // ortc's generic passes and -ortc-generic-pipeline, then every EP's.
  ortc::registerDriverPipelines();
  ortc::registerOrtcLoweringPasses();
  ortc::builtinCompileEps().registerPasses(registry);
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "ortc optimizer driver\n", registry));
}
