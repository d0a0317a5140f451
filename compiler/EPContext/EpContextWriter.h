//===- EpContextWriter.h - the compiled model as EPContext ONNX -*- C++ -*-===//
//
// Turns a partitioned module (@main_graph calling outlined functions tagged
// `ortc.ep`) and the blob each partition compiled to into an ONNX model whose
// graph keeps the original inputs and outputs and holds one
// com.microsoft::EPContext node per partition, in call order.
//
// Values crossing between partitions get fresh unique names; values at the
// graph's boundary keep their ONNX names. A graph output that is a graph input
// of the same name needs no node; one that folded to a constant is stored as
// an initializer of that name. A blob is inline in the node
// (embed_mode 1) or in a sidecar file beside the model (embed_mode 0) named
// `<stem>_<ep>.bin` for an EP's first partition and `<stem>_<ep>_<n>.bin` for
// its n-th (n >= 1), where `<stem>` is the output's file name without `.onnx`.
//
// Writing is all or nothing: every file goes to a temporary file in the
// output's folder first, and the renames happen only once all are complete;
// on any failure the temporaries and whatever was already renamed are removed.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_EPCONTEXT_EPCONTEXTWRITER_H
#define ORTC_COMPILER_EPCONTEXT_EPCONTEXTWRITER_H

#include "compiler/EP/CompileEp.h"

#include "mlir/IR/BuiltinOps.h"

#include <climits>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace onnx {
class ModelProto;
}

namespace ortc {

enum class EmbedPolicy {
  Auto,    // inline unless the blobs total more than autoEmbedLimit
  Embed,   // inline (refused above maxEmbeddedBytes)
  Sidecar, // every blob in its own file
};

struct EpContextWriteOptions {
  EmbedPolicy embed = EmbedPolicy::Auto;
  /// Larger blobs go to sidecars: a sidecar is mapped and used in place,
  /// while an inline blob is copied twice at load (the protobuf parse, then
  /// to aligned memory), which for a 14 MiB blob is 4x the whole load.
  uint64_t autoEmbedLimit = uint64_t(1) << 20;
  /// Protobuf cannot hold a message of 2 GB or more.
  uint64_t maxEmbeddedBytes = INT_MAX;
  /// The input model's path: the file that errors about the graph name.
  std::string sourcePath;
};

/// The blob of each partition, by its function's name ("cpu_ep_p0").
using EpContextBlobs = std::map<std::string, EpContextBlob>;

/// A model ready to be written: the ModelProto and the sidecars it names.
struct EpContextOutput {
  struct Sidecar {
    std::string fileName;           // relative to the model's folder
    const std::vector<char> *bytes; // points into the EpContextBlobs
  };
  std::unique_ptr<onnx::ModelProto> model;
  std::vector<Sidecar> sidecars;

  EpContextOutput();
  ~EpContextOutput();
  EpContextOutput(EpContextOutput &&);
  EpContextOutput &operator=(EpContextOutput &&);
};

/// Builds the EPContext model for `outputPath` (which fixes the sidecar
/// names) without touching the disk. `blobs` must outlive the result. On
/// failure returns false with a one-line `error` naming the file and the node
/// or value the model cannot express (an op outside every partition, a graph
/// output that is a graph input under another name, ...).
bool buildEpContextModel(mlir::ModuleOp module, const EpContextBlobs &blobs,
                         const std::string &outputPath, const EpContextWriteOptions &options,
                         EpContextOutput &output, std::string &error);

/// Writes the sidecars and the model, all or nothing (see above).
bool writeEpContextOutput(const EpContextOutput &output, const std::string &outputPath,
                          std::string &error);

/// buildEpContextModel, then writeEpContextOutput.
bool writeEpContextModel(mlir::ModuleOp module, const EpContextBlobs &blobs,
                         const std::string &outputPath, const EpContextWriteOptions &options,
                         std::string &error);

/// The sidecar file name for an EP's `index`-th partition (0-based) of the
/// model written to `outputPath`.
std::string sidecarFileName(const std::string &outputPath, const std::string &ep, int index);

} // namespace ortc

#endif // ORTC_COMPILER_EPCONTEXT_EPCONTEXTWRITER_H
