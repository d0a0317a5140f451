//===- ortc-opt.cpp - mlir-opt over ortc's dialects and passes ------------===//
//
// The lit driver: parses IR in our dialects, runs passes by name, prints.
//
//===----------------------------------------------------------------------===//

#include "compiler/Partition/Passes.h"
#include "compiler/Transforms/Passes.h"
#include "dialects/onnx/OnnxDialect.h"
#include "dialects/ortc/OrtcDialect.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/DialectRegistry.h"
#include "mlir/Tools/mlir-opt/MlirOptMain.h"
#include "mlir/Transforms/Passes.h"

int main(int argc, char **argv) {
  mlir::DialectRegistry registry;
  registry
      .insert<mlir::func::FuncDialect, ortc::onnx_dialect::OnnxDialect, ortc::fused::OrtcDialect>();
  // Generic MLIR passes (canonicalize, cse, symbol-dce, ...) for tests.
  mlir::registerTransformsPasses();
  ortc::registerOnnxGenericPasses();
  ortc::registerOrtcPartitionPasses();
  return mlir::asMainReturnCode(mlir::MlirOptMain(argc, argv, "ortc optimizer driver\n", registry));
}
