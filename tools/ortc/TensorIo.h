//===- TensorIo.h - inputs and outputs of `ortc run` and `bench` -*- C++ -*-===//
//
// What the commands that run a model share (ortc run, ortc bench and the
// runtime-only runner ortc-run; library OrtcToolSupport, runtime only): the options that say where
// the inputs come from (.npy or TensorProto .pb files, or random values) and
// how the session runs, loading the session, writing outputs, and the
// summary line printed for each output.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_TOOLS_ORTC_TENSORIO_H
#define ORTC_TOOLS_ORTC_TENSORIO_H

#include "tools/ortc/CliUtil.h"

#include "runtime/session/Session.h"
#include "runtime/support/Npy.h"

#include <cstdint>
#include <iosfwd>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ortc::cli {

enum class TensorFormat { Npy, Pb };

/// --input, --batch, --seed, --threads and --ep-option.
struct InputOptions {
  /// --input NAME=FILE, in command-line order.
  std::vector<std::pair<std::string, std::string>> files;
  /// Random inputs: every dynamic dim, and the seed (fixed, so runs repeat).
  int64_t batch = 1;
  uint64_t seed = 0;
  /// Random inputs: a whole shape for some inputs (ortc-run's --shape
  /// NAME=D0,D1,...), in command-line order; the others take --batch.
  std::vector<std::pair<std::string, std::vector<int64_t>>> shapes;
  /// --batch, --seed (or --shape) was given: they need random inputs.
  bool randomOptionGiven = false;
  /// SessionOptions::intraOpThreads.
  int threads = 0;
  /// SessionOptions::epOptions (--ep-option EP:KEY=VALUE).
  EpOptionsByEp epOptions;
};

/// Declares InputOptions' options on `parser`.
void addInputOptions(OptionParser &parser, InputOptions &options);

/// Checks the options together once parsing is done (reports, false).
bool checkInputOptions(const InputOptions &options);

/// parser.parse(args), then checkInputOptions(inputs): nullopt to go on,
/// else the exit status.
std::optional<int> parseWithInputOptions(OptionParser &parser,
                                         const std::vector<std::string> &args,
                                         const InputOptions &inputs);

/// Help text lines for the shared options (then runtimeEpOptionsHelp()).
extern const char *const kInputOptionsHelp;
/// The options of this build's runtime EPs, for --help (from the registry).
std::string runtimeEpOptionsHelp();

/// The session options the command line asked for.
SessionOptions sessionOptions(const InputOptions &options);
/// Loads `model` with this build's EPs and `options`' session options.
Result<std::unique_ptr<Session>> loadSession(const std::string &model, const InputOptions &options);

/// A session's inputs, in the order of Session::inputs().
struct ModelInputs {
  std::vector<NpyArray> arrays; // a sequence or optional input: empty
  /// Per input: its kind, and the value of a sequence or optional input.
  std::vector<ValueKind> kinds;
  std::vector<SequenceValue> sequences;
  bool random = false;
  bool allPb = false; // every input came from a TensorProto file

  std::vector<TensorView> views();
};

/// Reads every input from its file or, when no --input was given, fills each
/// with random values of its declared shape (dynamic dims = --batch). A
/// sequence or optional input comes from a SequenceProto or OptionalProto
/// .pb file only.
/// Errors are one line naming the model, the input or the file.
Result<ModelInputs> prepareInputs(const std::string &model,
                                  const std::vector<TensorSignature> &signatures,
                                  const InputOptions &options);

/// Prints what the random inputs are: one line per input.
void printRandomInputs(std::ostream &os, const std::vector<TensorSignature> &signatures,
                       const ModelInputs &inputs, const InputOptions &options);

/// "random (seed 0, batch 1)" or "files".
std::string describeInputs(const ModelInputs &inputs, const InputOptions &options);

/// Reads a tensor file: .npy or .pb by extension, else by content.
Result<NpyArray> readTensorFile(const std::string &path, TensorFormat &format);

/// The file name stem of output `name`: characters other than letters,
/// digits, '_', '-' and '.' become '_', and a leading '.' (or an empty
/// name) gets a '_' in front.
std::string outputFileStem(const std::string &name);

/// Writes output `name` to DIR/<name>.npy or .pb (the name made safe as a
/// file name) and returns the path.
Result<std::string> writeOutput(const std::string &dir, const std::string &name,
                                const TensorView &tensor, TensorFormat format);

/// The outputs' format for --output-format `requested` ("pb", "npy", or ""
/// for pb when every input was a .pb file, else npy).
TensorFormat outputFormatFor(const std::string &requested, bool inputsAllPb);

/// --output-dir DIR and --output-format npy|pb (refusing anything else).
void addOutputOptions(OptionParser &parser, std::string &dir, std::string &format);

/// Creates the output folder `dir` (and its parents) if missing; the error
/// names it.
Status createOutputDir(const std::string &dir);

/// Prints "outputs:" and a row per output: its name, dtype and shape, the
/// file it was written to (when `dir` is set: the folder is made first, and
/// the outputs are written as `format`), and summarizeValues. The error of a
/// write that fails, before anything is printed.
Status printOutputs(std::ostream &os, const std::vector<TensorSignature> &signatures,
                    const std::vector<RunOutput> &outputs, const std::string &dir,
                    TensorFormat format);
Status printOutputs(std::ostream &os, const std::vector<TensorSignature> &signatures,
                    const std::vector<OwnedTensor> &outputs, const std::string &dir,
                    TensorFormat format);

/// "min -1 max 2.5 mean 0.3" for numbers (NaNs skipped and counted),
/// "true 3 of 4" for bools, "" when empty.
std::string summarizeValues(const TensorView &tensor);

} // namespace ortc::cli

#endif // ORTC_TOOLS_ORTC_TENSORIO_H
