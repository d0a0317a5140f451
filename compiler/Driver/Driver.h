//===- Driver.h - model.onnx in, model_ctx.onnx out --------------*- C++ -*-===//
//
// The whole compile behind one call, for `ortc compile` and for tests:
//
//   check the EPs and the output path (before any work)
//   -> import -> generic passes -> partition -> each EP's passes
//   -> compilePartition + saveContext per partition (source-key check)
//   -> write model_ctx.onnx (or print the IR after a chosen stage)
//
// It returns what it wrote, the wall time of every stage, the partition
// report and what each EP compiled; the caller prints. Errors are one line
// naming the file and the node, initializer or value.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_DRIVER_DRIVER_H
#define ORTC_COMPILER_DRIVER_DRIVER_H

#include "compiler/EP/CompileProgress.h"
#include "compiler/EPContext/EpContextWriter.h"
#include "compiler/Partition/Partitioner.h"
#include "runtime/ep/EpOptions.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ortc {

class CompileEpRegistry;

/// How far the compile goes and what it writes.
enum class EmitKind {
  OnnxMlir,        // the imported IR
  OptimizedMlir,   // after the generic passes
  PartitionedMlir, // after partitioning and the EPs' passes
  EpContext,       // the compiled model (the default)
};
std::optional<EmitKind> parseEmitKind(const std::string &name);
const char *emitKindName(EmitKind kind);
/// Whether `kind` partitions the model (and so needs EPs).
inline bool partitions(EmitKind kind) {
  return kind == EmitKind::PartitionedMlir || kind == EmitKind::EpContext;
}

struct DriverOptions {
  std::string input;
  /// Where to write. Empty: MODEL_ctx.onnx beside the input for EpContext,
  /// the result's text for the MLIR kinds; "-": the result's text.
  std::string output;
  EmitKind emit = EmitKind::EpContext;
  /// EPs by name or alias, in priority order. Empty (and no testEps): every
  /// EP of the registry.
  std::vector<std::string> eps;
  /// Options per EP (by name or alias); an EP given options must be in use.
  EpOptionsByEp epOptions;
  /// SpecEp descriptions (compiler/Partition/SpecEp.h), after `eps`.
  std::vector<std::string> testEps;
  bool allowUnclaimed = false;
  /// Declared shapes as written: a negative dim_value, or a declared shape
  /// that contradicts inference, is an error rather than a warning.
  bool strictShapes = false;
  /// The largest tensor of a static shape a model may have, in bytes.
  int64_t maxTensorBytes = int64_t(1) << 34;
  EmbedPolicy embed = EmbedPolicy::Auto;
  /// MLIR output: constants of more than this many elements print without
  /// their bytes (-1: all in full).
  int64_t elideConstantsAbove = 4096;
  bool printLocations = false;
  /// Where stages, partitions and EP work are reported (may be null).
  CompileProgress *progress = nullptr;
};

/// The wall time of one stage.
struct StageTiming {
  std::string name; // "import", "generic-passes", "partition", "ep-passes", "codegen", "write"
  double milliseconds = 0;
};

/// What an EP made of one partition.
struct CompiledPartitionRecord {
  std::string partition, ep;
  std::string source, hardwareArchitecture, epSdkVersion;
  std::string notes; // the EP's own summary (the CPU EP: memory plan, kernels, weights, code)
  uint64_t blobBytes = 0;
  double milliseconds = 0;
};

struct EpRecord {
  std::string name;
  EpOptionMap options;
  bool test = false; // from --test-ep
};

struct DriverResult {
  enum class Outcome {
    Ok,
    Usage,  // a bad request: unknown EP, option or emit combination
    Failed, // bad input or a failed stage
  };
  Outcome outcome = Outcome::Ok;
  std::string error;       // one line when not Ok
  std::string failedStage; // the stage that failed, or ""
  /// Warnings, one line each, naming the file and the node like errors.
  std::vector<std::string> warnings;

  std::string outputPath; // the file written; empty when the text is the output
  std::string text;       // the MLIR when it goes to the caller
  std::vector<EpRecord> eps;
  std::vector<StageTiming> stages;
  double totalMilliseconds = 0;
  bool partitioned = false; // partitions (and its declines) are filled
  PartitionReport partitions;
  std::vector<CompiledPartitionRecord> compiled;

  bool ok() const { return outcome == Outcome::Ok; }
};

/// The default output of EmitKind::EpContext: MODEL_ctx.onnx beside MODEL.onnx.
std::string defaultContextPath(const std::string &input);

/// Writes `text` to `path` through a temporary file and a rename, so that a
/// failure never leaves a partial file; false with a one-line `error`.
bool writeFileAtomically(const std::string &path, const std::string &text, std::string &error);

/// Refuses, before any work, an output that cannot be written: a missing or
/// unwritable folder, or an existing directory. One line naming the path.
bool checkOutputPath(const std::string &path, const std::string &what, std::string &error);

/// Compiles `options.input` with EPs from `registry` (see the file comment).
DriverResult compileModel(const CompileEpRegistry &registry, const DriverOptions &options);

/// The generic pipeline (compiler/Transforms) registered as
/// -ortc-generic-pipeline, with the generic and partition passes.
void registerDriverPipelines();

} // namespace ortc

#endif // ORTC_COMPILER_DRIVER_DRIVER_H
