//===- BenchCommand.cpp - ortc bench --------------------------------------===//
//
//   ortc bench model_ctx.onnx [--runs N] [--warmup K] [--input ...] [--json]
//
// Times Session::load, the first run, and N runs after K warm-up runs, on
// the given inputs or random ones. Prints a table, or one JSON object.
//
//===----------------------------------------------------------------------===//

#include "tools/ortc/Commands.h"
#include "tools/ortc/TensorIo.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <optional>

namespace ortc::cli {

void printBenchHelp() {
  std::cout << R"(Usage: ortc bench MODEL_ctx.onnx [options]

Times loading a compiled model (Session::load), its first run, and then N
runs after K warm-up runs, and prints the latency percentiles.

Options:
  --runs N              Timed runs (default 100).
  --warmup K            Untimed runs after the first run (default 5).
)" << kInputOptionsHelp
            << runtimeEpOptionsHelp()
            << R"(  --json                Print one JSON object instead of the table.
  -h, --help            Show this help.

Exit status: 0 on success, 1 when the model or an input is refused or a run
fails, 2 for a bad command line.
)";
}

namespace {

struct BenchOptions {
  std::string model;
  int64_t runs = 100;
  int64_t warmup = 5;
  bool json = false;
  InputOptions inputs;
};

// nullopt to go on, else the exit status (help, or a bad command line).
std::optional<int> parseBenchOptions(const std::vector<std::string> &args, BenchOptions &options) {
  OptionParser parser("bench", printBenchHelp);
  addInputOptions(parser, options.inputs);
  parser.integer("--runs", 1, 100000000, options.runs);
  parser.integer("--warmup", 0, 100000000, options.warmup);
  parser.flag("--json", options.json);
  parser.elsewhere({"--output-dir", "--output-format"}, "'ortc run'");
  parser.model(options.model);
  return parseWithInputOptions(parser, args, options.inputs);
}

using Clock = std::chrono::steady_clock;

double millisecondsSince(Clock::time_point start) {
  return std::chrono::duration<double, std::milli>(Clock::now() - start).count();
}

struct BenchResult {
  std::string inputs; // how the inputs were made
  bool random = false;
  double loadMs = 0, firstRunMs = 0;
  std::vector<double> runMs; // sorted

  // Nearest rank: the smallest time at or above p percent of the runs.
  double percentile(double p) const {
    size_t rank = size_t(std::ceil(p / 100.0 * double(runMs.size())));
    return runMs[std::min(runMs.size(), std::max<size_t>(rank, 1)) - 1];
  }
  double mean() const {
    double sum = 0;
    for (double ms : runMs)
      sum += ms;
    return sum / double(runMs.size());
  }
};

// One timed run; false after reporting a failure.
bool timedRun(const Session &session, const std::vector<TensorView> &inputs, double &ms) {
  Clock::time_point start = Clock::now();
  Result<std::vector<OwnedTensor>> outputs = session.run(inputs);
  ms = millisecondsSince(start);
  if (!outputs.isOk())
    printError(outputs.status().message());
  return outputs.isOk();
}

std::string threadsText(int threads) {
  return threads == 0 ? "0 (one per core)" : std::to_string(threads);
}

void printTableResult(const BenchOptions &options, const BenchResult &result) {
  // Four digits: run-to-run noise makes more meaningless.
  auto ms = [](double value) { return formatNumber(value, 4) + " ms"; };
  printTable(std::cout,
             {{"model", options.model},
              {"inputs", result.inputs},
              {"threads", threadsText(options.inputs.threads)},
              {"load", ms(result.loadMs)},
              {"first run", ms(result.firstRunMs)},
              {"runs", std::to_string(options.runs) + " (after " + std::to_string(options.warmup) +
                           " warm-up)"},
              {"p50", ms(result.percentile(50))},
              {"p90", ms(result.percentile(90))},
              {"p99", ms(result.percentile(99))},
              {"mean", ms(result.mean())},
              {"min", ms(result.runMs.front())},
              {"max", ms(result.runMs.back())}},
             "");
}

void printJsonResult(const BenchOptions &options, const BenchResult &result) {
  std::cout << "{\"model\": " << jsonString(options.model)
            << ", \"inputs\": " << (result.random ? "\"random\"" : "\"files\"")
            << ", \"seed\": " << (result.random ? std::to_string(options.inputs.seed) : "null")
            << ", \"batch\": " << (result.random ? std::to_string(options.inputs.batch) : "null")
            << ", \"threads\": " << options.inputs.threads << ", \"runs\": " << options.runs
            << ", \"warmup\": " << options.warmup << ", \"load_ms\": " << jsonNumber(result.loadMs)
            << ", \"first_run_ms\": " << jsonNumber(result.firstRunMs)
            << ", \"p50_ms\": " << jsonNumber(result.percentile(50))
            << ", \"p90_ms\": " << jsonNumber(result.percentile(90))
            << ", \"p99_ms\": " << jsonNumber(result.percentile(99))
            << ", \"mean_ms\": " << jsonNumber(result.mean())
            << ", \"min_ms\": " << jsonNumber(result.runMs.front())
            << ", \"max_ms\": " << jsonNumber(result.runMs.back()) << "}\n";
}

} // namespace

int runBench(const std::vector<std::string> &args) {
  BenchOptions options;
  if (std::optional<int> exit = parseBenchOptions(args, options))
    return *exit;

  Result<EpRegistry> registry = createBuiltinEpRegistry();
  if (!registry.isOk()) {
    printError(registry.status().message());
    return kExitFailed;
  }
  BenchResult result;
  Clock::time_point start = Clock::now();
  Result<std::unique_ptr<Session>> session =
      Session::load(options.model, registry.takeValue(), sessionOptions(options.inputs));
  result.loadMs = millisecondsSince(start);
  if (!session.isOk()) {
    printError(session.status().message());
    return kExitFailed;
  }
  const Session &s = *session.value();
  Result<ModelInputs> inputs = prepareInputs(options.model, s.inputs(), options.inputs);
  if (!inputs.isOk()) {
    printError(inputs.status().message());
    return kExitFailed;
  }
  result.inputs = describeInputs(inputs.value(), options.inputs);
  result.random = inputs.value().random;
  std::vector<TensorView> views = inputs.value().views();

  if (!timedRun(s, views, result.firstRunMs))
    return kExitFailed;
  double ms;
  for (int64_t i = 0; i < options.warmup; ++i)
    if (!timedRun(s, views, ms))
      return kExitFailed;
  result.runMs.reserve(size_t(options.runs));
  for (int64_t i = 0; i < options.runs; ++i) {
    if (!timedRun(s, views, ms))
      return kExitFailed;
    result.runMs.push_back(ms);
  }
  std::sort(result.runMs.begin(), result.runMs.end());

  if (options.json)
    printJsonResult(options, result);
  else
    printTableResult(options, result);
  return kExitOk;
}

} // namespace ortc::cli
