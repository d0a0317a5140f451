//===- CompileEp.h - the compile half of the EP contract --------*- C++ -*-===//
//
// What the compiler asks of an execution provider: which nodes it can run and
// at what cost (supportsOp), which it takes regardless of cost (claimNodes),
// its own passes (addCustomPasses), and compiling a partition into the blob
// that the runtime half loads (compilePartition, saveContext).
//
// Claim honesty: an EP that answers Supported must compile and run that node.
// Finding an ordinary shape, dtype or attribute limit only in compilePartition
// is a bug; answering Unsupported is normal.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_EP_COMPILEEP_H
#define ORTC_COMPILER_EP_COMPILEEP_H

#include "compiler/EP/CompileProgress.h"
#include "compiler/EP/KernelMatch.h"
#include "runtime/ep/DeviceBuffer.h"

#include "mlir/IR/Operation.h"
#include "mlir/IR/Types.h"
#include "mlir/Support/LLVM.h"
#include "llvm/ADT/SmallVector.h"

#include <memory>
#include <string>
#include <vector>

namespace mlir {
class OpPassManager;
namespace func {
class FuncOp;
}
} // namespace mlir

namespace ortc {

class SymbolicShapes;

/// Everything supportsOp may look at, taken from one onnx-dialect op.
struct NodeQuery {
  mlir::Operation *op = nullptr;
  std::string node;                         // the ONNX node name, from the op's location
  std::string opType;                       // "Conv"
  std::string domain;                       // "ai.onnx", "ai.onnx.ml", "com.microsoft", ...
  int64_t opset = 0;                        // the domain's opset in the model
  llvm::SmallVector<mlir::Type> inputTypes; // none for an omitted optional input
  std::vector<TensorLayout> inputLayouts;   // row-major unless a pass chose otherwise
  /// Every dynamic dim of the function as an expression (the partitioner
  /// analyses the graph once); null when the caller has none, and then an EP
  /// that needs one builds it for the op's function.
  const SymbolicShapes *shapes = nullptr;

  static NodeQuery fromOp(mlir::Operation *op);

  /// A decline for this node, with its node/op/domain/opset filled in.
  DeclineReason decline(const std::string &ep, RejectedKind kind, std::string rejected,
                        std::string accepts, std::string remediation = "") const;
};

/// What an EP made of one partition; each EP subclasses it.
class CompiledPartition {
public:
  virtual ~CompiledPartition() = default;
};

/// The bytes and attributes of one EPContext node.
struct EpContextBlob {
  std::string source; // one of the EP's context source keys
  std::string hardwareArchitecture;
  std::string epSdkVersion;
  std::string notes;
  std::vector<char> bytes;
};

class CompileEp {
public:
  virtual ~CompileEp() = default;

  virtual const EpIdentity &identity() const = 0;
  const std::string &name() const { return identity().name; }

  virtual KernelMatch supportsOp(const NodeQuery &query) const = 0;
  /// Ops this EP takes whatever the cost model says (default: none).
  virtual std::vector<mlir::Operation *> claimNodes(mlir::func::FuncOp graph) const;
  /// Passes to run on this EP's partitions after the generic ones.
  virtual void addCustomPasses(mlir::OpPassManager &pm) const {}
  virtual std::vector<std::string> contextSourceKeys() const { return {}; }

  /// Compiles one outlined partition; errors are emitted as diagnostics on it.
  virtual mlir::FailureOr<std::unique_ptr<CompiledPartition>>
  compilePartition(mlir::func::FuncOp partition) = 0;
  /// The EPContext node of a compiled partition, which it may take the bytes
  /// of (a blob of hundreds of MiB is moved, not copied).
  virtual mlir::FailureOr<EpContextBlob> saveContext(CompiledPartition &&compiled) = 0;

  /// Where compilePartition reports its progress (null: nowhere); the
  /// driver sets it.
  void setProgress(CompileProgress *progress) { progress_ = progress; }

protected:
  /// `done` of `total` units of `what` in the partition being compiled.
  void reportWork(const std::string &what, int done, int total) const {
    if (progress_)
      progress_->work(what, done, total);
  }

private:
  CompileProgress *progress_ = nullptr;
};

/// Op type and domain of an onnx-dialect op: typed ops by name ("onnx.Conv",
/// "onnx.ml.LabelEncoder"), onnx.Generic by its attributes.
std::pair<std::string, std::string> onnxOpTypeAndDomain(mlir::Operation *op);

/// onnx.Constant and onnx.NoValue: not placed on an EP; each partition that
/// uses one gets a copy.
bool isFreeOnnxOp(mlir::Operation *op);

/// The ops EPs are asked about: onnx and ortc ops other than free ones and
/// terminators.
bool isPlaceableOp(mlir::Operation *op);

/// The node name an op carries in its location, or "<OpType>" if none.
std::string onnxNodeName(mlir::Operation *op);

} // namespace ortc

#endif // ORTC_COMPILER_EP_COMPILEEP_H
