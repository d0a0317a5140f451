//===- TensorImport.h - ONNX TensorProto to MLIR attributes -----*- C++ -*-===//
//
// Tensor bytes become `dense_resource` blobs without a copy where possible:
// inline raw_data is moved out of the proto and owned by the blob; external
// data is memory-mapped (one map per file, shared) and never read at import.
// Typed fields (float_data, int32_data, ...) are converted once.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_IMPORT_TENSORIMPORT_H
#define ORTC_COMPILER_IMPORT_TENSORIMPORT_H

#include "mlir/IR/Attributes.h"
#include "mlir/IR/MLIRContext.h"
#include "mlir/Support/LLVM.h"

#include <map>
#include <memory>
#include <string>

namespace onnx {
class TensorProto;
}

namespace ortc {

class MappedFile;

/// MLIR element type for a TensorProto.DataType code, or null if unknown.
mlir::Type tensorElementType(mlir::MLIRContext &context, int code);

class TensorImporter {
public:
  TensorImporter(mlir::MLIRContext &context, std::string modelDir);
  ~TensorImporter();

  /// Imports `tensor` (its inline bytes may be moved out). On failure the
  /// message, which starts with `what`, is available from takeError().
  mlir::FailureOr<mlir::Attribute> importTensor(onnx::TensorProto &tensor, const std::string &what);
  std::string takeError() { return std::move(error); }

private:
  mlir::FailureOr<std::shared_ptr<MappedFile>> mapExternal(const std::string &location,
                                                           const std::string &what);
  mlir::LogicalResult fail(std::string message) {
    error = std::move(message);
    return mlir::failure();
  }

  mlir::MLIRContext &context;
  std::string modelDir;
  std::string error;
  std::map<std::string, std::shared_ptr<MappedFile>> mappedFiles;
};

} // namespace ortc

#endif // ORTC_COMPILER_IMPORT_TENSORIMPORT_H
