//===- CompileReport.cpp ---------------------------------------------------===//

#include "compiler/Driver/CompileReport.h"

#include "compiler/EP/KernelMatch.h"

#include <cmath>
#include <cstdio>

namespace ortc {

namespace {

std::string quoted(const std::string &text) { return "\"" + jsonEscape(text) + "\""; }
std::string quotedOrNull(const std::string &text) { return text.empty() ? "null" : quoted(text); }

std::string milliseconds(double ms) {
  char buffer[32];
  std::snprintf(buffer, sizeof(buffer), "%.3f", std::isfinite(ms) ? ms : 0.0);
  return buffer;
}

const char *outcomeName(DriverResult::Outcome outcome) {
  switch (outcome) {
  case DriverResult::Outcome::Ok:
    return "ok";
  case DriverResult::Outcome::Usage:
    return "usage_error";
  case DriverResult::Outcome::Failed:
    return "failed";
  }
  return "failed";
}

} // namespace

std::string formatCompileReportJson(const DriverOptions &options, const DriverResult &result,
                                    const std::string &ortcVersion) {
  std::string json = "{\"report_version\": " + std::to_string(kCompileReportVersion);
  json += ", \"ortc_version\": " + quoted(ortcVersion);
  json += ", \"input\": " + quoted(options.input);
  json += ", \"output\": " + quotedOrNull(result.outputPath);
  json += ", \"emit\": " + quoted(emitKindName(options.emit));
  json += ", \"status\": " + quoted(outcomeName(result.outcome));
  json += ", \"error\": " + quotedOrNull(result.error);
  json += ", \"failed_stage\": " + quotedOrNull(result.failedStage);
  json += ", \"warnings\": [";
  for (size_t i = 0; i < result.warnings.size(); ++i)
    json += std::string(i ? ", " : "") + quoted(result.warnings[i]);
  json += "]";
  json += ", \"eps\": [";
  for (size_t i = 0; i < result.eps.size(); ++i) {
    const EpRecord &ep = result.eps[i];
    json += std::string(i ? ", " : "") + "{\"name\": " + quoted(ep.name) + ", \"options\": {";
    bool first = true;
    for (const auto &[key, value] : ep.options) {
      json += (first ? "" : ", ") + quoted(key) + ": " + quoted(value);
      first = false;
    }
    json += std::string("}, \"test\": ") + (ep.test ? "true" : "false") + "}";
  }
  json += "], \"stages\": [";
  for (size_t i = 0; i < result.stages.size(); ++i)
    json += std::string(i ? ", " : "") + "{\"name\": " + quoted(result.stages[i].name) +
            ", \"ms\": " + milliseconds(result.stages[i].milliseconds) + "}";
  json += "], \"total_ms\": " + milliseconds(result.totalMilliseconds);
  json += std::string(", \"partitioned\": ") + (result.partitioned ? "true" : "false");
  json += ", " + result.partitions.formatJsonFields();
  json += ", \"compiled\": [";
  for (size_t i = 0; i < result.compiled.size(); ++i) {
    const CompiledPartitionRecord &c = result.compiled[i];
    json += std::string(i ? ", " : "") + "{\"partition\": " + quoted(c.partition) +
            ", \"ep\": " + quoted(c.ep) + ", \"source\": " + quoted(c.source) +
            ", \"hardware_architecture\": " + quoted(c.hardwareArchitecture) +
            ", \"ep_sdk_version\": " + quoted(c.epSdkVersion) +
            ", \"blob_bytes\": " + std::to_string(c.blobBytes) +
            ", \"ms\": " + milliseconds(c.milliseconds) + ", \"notes\": " + quoted(c.notes) + "}";
  }
  return json + "]}";
}

std::string formatCompileReportText(const DriverResult &result) {
  std::string text;
  if (result.partitioned)
    text += result.partitions.formatText();
  for (const CompiledPartitionRecord &c : result.compiled)
    text += "compiled " + c.partition + " (" + c.ep + "): " + c.notes + "\n";
  if (!result.stages.empty()) {
    text += "stages:";
    for (const StageTiming &stage : result.stages)
      text += " " + stage.name + " " + milliseconds(stage.milliseconds) + " ms,";
    text += " total " + milliseconds(result.totalMilliseconds) + " ms\n";
  }
  return text;
}

} // namespace ortc
