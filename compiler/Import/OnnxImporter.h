//===- OnnxImporter.h - ONNX ModelProto to the onnx dialect -----*- C++ -*-===//
//
// Builds one module with a `func.func @main_graph` from an ONNX model:
//  - graph inputs/outputs become arguments/results named by `onnx.name`; a
//    symbolic dim is `?` with its dim_param in `onnx.dim_params`;
//  - initializers become `onnx.Constant` ops over `dense_resource` blobs that
//    own (inline) or memory-map (external) the bytes: nothing is copied into
//    the MLIRContext;
//  - every node becomes a typed op when its schema version matches one,
//    otherwise `onnx.Generic`; its location is the node's name;
//  - If/Loop/Scan bodies become regions ended by `onnx.Yield`;
//  - `opset_import` and the model's header go into module attributes.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_IMPORT_ONNXIMPORTER_H
#define ORTC_COMPILER_IMPORT_ONNXIMPORTER_H

#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/OwningOpRef.h"

#include <string>

namespace onnx {
class ModelProto;
}

namespace ortc {

struct ImportOptions {
  /// A negative dim_value (Paddle2ONNX writes -1 for "dynamic") is an error.
  /// Otherwise it is read as a dynamic dim, with a warning diagnostic.
  bool strictShapes = false;
};

/// Reads and imports the model file at `path`. On failure returns null and a
/// one-line message naming the file (and node, initializer or value) in `error`.
/// Warnings go to the context's diagnostic handler.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModelFile(mlir::MLIRContext &context,
                                                      const std::string &path, std::string &error,
                                                      const ImportOptions &options = {});

/// Imports an already parsed model. `path` names it in messages and anchors
/// relative external-data locations. Inline tensor bytes are moved out of
/// `model` into the module's resources.
mlir::OwningOpRef<mlir::ModuleOp> importOnnxModel(mlir::MLIRContext &context,
                                                  onnx::ModelProto &model, const std::string &path,
                                                  std::string &error,
                                                  const ImportOptions &options = {});

/// Loads every dialect the imported IR uses.
void loadImportDialects(mlir::MLIRContext &context);

} // namespace ortc

#endif // ORTC_COMPILER_IMPORT_ONNXIMPORTER_H
