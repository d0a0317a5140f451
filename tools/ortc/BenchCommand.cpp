//===- BenchCommand.cpp - ortc bench --------------------------------------===//
//
//   ortc bench model_ctx.onnx [--runs N] [--warmup K] [--input ...] [--json]
//                             [--profile] [--profile-json FILE]
//
// Times Session::load, the first run, and N runs after K warm-up runs, on
// the given inputs or random ones. Prints a table, or one JSON object. With
// --profile, N more runs are timed step by step (RunProfile) and each step's
// share of them printed and, with --profile-json, written.
//
//===----------------------------------------------------------------------===//

#include "tools/ortc/Commands.h"
#include "tools/ortc/TensorIo.h"
#include "compiler/Driver/Driver.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <map>
#include <sstream>
#include <optional>

namespace ortc::cli {

void printBenchHelp() {
  std::cout << R"(Usage: ortc bench MODEL_ctx.onnx [options]

Times loading a compiled model (Session::load), its first run, and then N
runs after K warm-up runs, and prints the latency percentiles.

Options:
  --runs N              Timed runs (default 100).
  --warmup K            Untimed runs after the first run (default 5).
  --profile             Then time N more runs step by step and print each
                        step's share: a generated kernel (with the op types
                        fused into it) or a library call, with its nodes;
                        then the shares summed by step kind and op types.
  --profile-json FILE   As --profile, and write the profile to FILE as JSON
                        (with --json, the profile goes only there).
  --profile-top K       Steps the profile table lists (default 25).
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
  bool profile = false;
  std::string profileJson;
  int64_t profileTop = 25;
  InputOptions inputs;
};

// nullopt to go on, else the exit status (help, or a bad command line).
std::optional<int> parseBenchOptions(const std::vector<std::string> &args, BenchOptions &options) {
  OptionParser parser("bench", printBenchHelp);
  addInputOptions(parser, options.inputs);
  parser.integer("--runs", 1, 100000000, options.runs);
  parser.integer("--warmup", 0, 100000000, options.warmup);
  parser.flag("--json", options.json);
  parser.flag("--profile", options.profile);
  parser.value("--profile-json", options.profileJson);
  parser.integer("--profile-top", 1, 1000000, options.profileTop);
  parser.elsewhere({"--output-dir", "--output-format"}, "'ortc run'");
  parser.model(options.model);
  std::optional<int> exit = parseWithInputOptions(parser, args, options.inputs);
  options.profile |= !options.profileJson.empty();
  return exit;
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

/// One row of the profile: a step, or a group of steps summed.
struct ProfileRow {
  std::string partition, kind, callee, ops, nodes, shape;
  double ms = 0; // per run
  uint64_t calls = 0;
};

struct ProfileTable {
  double runMs = 0;             // a whole profiled run, mean
  std::vector<ProfileRow> steps; // by time, longest first
  std::vector<ProfileRow> groups; // summed by partition EP, kind and op types
};

ProfileTable tabulate(const RunProfile &profile) {
  ProfileTable table;
  double runs = double(std::max<uint64_t>(profile.runs, 1));
  table.runMs = double(profile.nanoseconds) / 1e6 / runs;
  std::map<std::string, size_t> groupOf;
  auto addToGroup = [&](const ProfileRow &row, const std::string &ep) {
    std::string key = ep + "\n" + row.kind + "\n" + row.ops;
    auto [it, added] = groupOf.emplace(key, table.groups.size());
    if (added) {
      ProfileRow group;
      group.partition = ep;
      group.kind = row.kind;
      group.ops = row.ops;
      table.groups.push_back(group);
    }
    ProfileRow &group = table.groups[it->second];
    group.ms += row.ms;
    group.calls += 1;
  };
  for (const PartitionProfile &partition : profile.partitions) {
    if (partition.steps.empty()) {
      // An EP that times no steps: the partition as one row.
      ProfileRow row;
      row.partition = partition.name;
      row.kind = "Partition";
      row.callee = partition.ep;
      row.ms = double(partition.nanoseconds) / 1e6 / runs;
      row.calls = partition.runs;
      addToGroup(row, partition.ep);
      table.steps.push_back(std::move(row));
      continue;
    }
    for (const StepProfile &step : partition.steps) {
      ProfileRow row;
      row.partition = partition.name;
      row.kind = step.kind;
      row.callee = step.callee;
      row.ops = step.ops.empty() ? step.callee : step.ops;
      row.nodes = step.nodes;
      row.shape = step.shape;
      row.ms = double(step.nanoseconds) / 1e6 / runs;
      row.calls = step.calls;
      addToGroup(row, partition.ep);
      table.steps.push_back(std::move(row));
    }
  }
  auto longestFirst = [](const ProfileRow &a, const ProfileRow &b) { return a.ms > b.ms; };
  std::stable_sort(table.steps.begin(), table.steps.end(), longestFirst);
  std::stable_sort(table.groups.begin(), table.groups.end(), longestFirst);
  return table;
}

/// At most `width` characters: longer lists of node names end in "...".
std::string abbreviate(const std::string &text, size_t width) {
  return text.size() <= width ? text : text.substr(0, width - 3) + "...";
}

std::string percentOf(double part, double whole) {
  return whole > 0 ? formatNumber(100.0 * part / whole, 3) + "%" : "-";
}

void printProfile(const BenchOptions &options, const ProfileTable &table, uint64_t runs) {
  std::cout << "\nprofile: " << runs << " runs, " << formatNumber(table.runMs, 4)
            << " ms per run; steps by time:\n";
  std::vector<std::vector<std::string>> rows = {
      {"share", "ms/run", "kind", "op types", "output", "nodes"}};
  double listed = 0;
  size_t shown = std::min(table.steps.size(), size_t(options.profileTop));
  for (size_t i = 0; i < shown; ++i) {
    const ProfileRow &row = table.steps[i];
    listed += row.ms;
    rows.push_back({percentOf(row.ms, table.runMs), formatNumber(row.ms, 3), row.kind,
                    abbreviate(row.ops, 40), row.shape, abbreviate(row.nodes, 48)});
  }
  printTable(std::cout, rows);
  if (shown < table.steps.size())
    std::cout << "  (" << table.steps.size() - shown << " more steps: "
              << percentOf(table.runMs - listed, table.runMs) << " with the session's own work)\n";
  std::cout << "\nby step kind and op types:\n";
  rows = {{"share", "ms/run", "steps", "ep", "kind", "op types"}};
  for (const ProfileRow &group : table.groups)
    rows.push_back({percentOf(group.ms, table.runMs), formatNumber(group.ms, 3),
                    std::to_string(group.calls), group.partition, group.kind,
                    abbreviate(group.ops, 60)});
  printTable(std::cout, rows);
}

std::string profileJson(const BenchOptions &options, const ProfileTable &table, uint64_t runs) {
  std::ostringstream os;
  auto rowJson = [&](const ProfileRow &row, bool step) {
    os << "{\"" << (step ? "partition" : "ep") << "\": " << jsonString(row.partition)
       << ", \"kind\": " << jsonString(row.kind) << ", \"ops\": " << jsonString(row.ops);
    if (step)
      os << ", \"callee\": " << jsonString(row.callee) << ", \"nodes\": " << jsonString(row.nodes)
         << ", \"shape\": " << jsonString(row.shape)
         << ", \"calls\": " << row.calls;
    else
      os << ", \"steps\": " << row.calls;
    os << ", \"ms\": " << jsonNumber(row.ms)
       << ", \"share\": " << jsonNumber(table.runMs > 0 ? row.ms / table.runMs : 0) << "}";
  };
  os << "{\"model\": " << jsonString(options.model) << ", \"threads\": " << options.inputs.threads
     << ", \"runs\": " << runs << ", \"total_ms\": " << jsonNumber(table.runMs)
     << ", \"steps\": [";
  for (size_t i = 0; i < table.steps.size(); ++i) {
    os << (i ? ",\n  " : "\n  ");
    rowJson(table.steps[i], true);
  }
  os << "],\n \"groups\": [";
  for (size_t i = 0; i < table.groups.size(); ++i) {
    os << (i ? ",\n  " : "\n  ");
    rowJson(table.groups[i], false);
  }
  os << "]}\n";
  return os.str();
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
  if (!options.profile)
    return kExitOk;

  // Profiled runs after the timed ones, so that timing steps costs those
  // nothing.
  RunProfile profile;
  session.value()->attachProfile(&profile);
  for (int64_t i = 0; i < options.runs; ++i)
    if (!timedRun(s, views, ms))
      return kExitFailed;
  session.value()->attachProfile(nullptr);
  ProfileTable table = tabulate(profile);
  if (!options.json)
    printProfile(options, table, profile.runs);
  if (!options.profileJson.empty()) {
    std::string error;
    if (!writeFileAtomically(options.profileJson, profileJson(options, table, profile.runs),
                             error)) {
      printError(error);
      return kExitFailed;
    }
  }
  return kExitOk;
}

} // namespace ortc::cli
