//===- CliUtil.cpp - option parsing and tables for the commands -----------===//

#include "tools/ortc/CliUtil.h"

#include "tools/ortc/Commands.h"

#include "compiler/EP/KernelMatch.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <ostream>

namespace ortc::cli {

Taken takeOption(const std::vector<std::string> &args, size_t &i, const std::string &name,
                 std::string &value) {
  const std::string &arg = args[i];
  if (arg.size() > name.size() && arg.compare(0, name.size() + 1, name + "=") == 0) {
    value = arg.substr(name.size() + 1);
    return Taken::Yes;
  }
  if (arg != name)
    return Taken::No;
  if (i + 1 >= args.size()) {
    printError(name + " needs a value");
    return Taken::Error;
  }
  value = args[++i];
  return Taken::Yes;
}

bool takeModelArgument(const std::string &arg, const char *command, std::string &model) {
  if (!arg.empty() && arg[0] == '-') {
    printError("unknown option '" + arg + "' (see `ortc " + command + " --help`)");
    return false;
  }
  if (!model.empty()) {
    printError("one model at a time: got '" + model + "' and '" + arg + "'");
    return false;
  }
  model = arg;
  return true;
}

bool requireModel(const std::string &model, const char *command) {
  if (!model.empty())
    return true;
  printError(std::string("no model given (see `ortc ") + command + " --help`)");
  return false;
}

bool parseInteger(const std::string &name, const std::string &text, int64_t min, int64_t max,
                  int64_t &value) {
  errno = 0;
  char *end = nullptr;
  long long parsed = std::strtoll(text.c_str(), &end, 10);
  bool ok = !text.empty() && end == text.c_str() + text.size() && errno == 0 && parsed >= min &&
            parsed <= max;
  if (!ok) {
    printError(name + " wants an integer from " + std::to_string(min) + " to " +
               std::to_string(max) + ", got '" + text + "'");
    return false;
  }
  value = parsed;
  return true;
}

void printTable(std::ostream &os, const std::vector<std::vector<std::string>> &rows,
                const std::string &indent) {
  std::vector<std::vector<std::string>> cells;
  std::vector<size_t> widths;
  for (const auto &row : rows) {
    cells.emplace_back();
    for (size_t c = 0; c < row.size(); ++c) {
      cells.back().push_back(escapeLineBreaks(row[c]));
      if (widths.size() <= c)
        widths.push_back(0);
      widths[c] = std::max(widths[c], cells.back().back().size());
    }
  }
  for (const auto &row : cells) {
    std::string line = indent;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size())
        line += std::string(widths[c] - row[c].size() + 2, ' ');
    }
    // No trailing blanks when the last cells are empty.
    line.erase(line.find_last_not_of(' ') + 1);
    os << line << "\n";
  }
}

std::string formatNumber(double value, int digits) {
  char buffer[40];
  std::snprintf(buffer, sizeof(buffer), "%.*g", digits, value);
  return buffer;
}

std::string jsonNumber(double value) { return std::isfinite(value) ? formatNumber(value) : "null"; }

std::string jsonString(const std::string &text) { return "\"" + jsonEscape(text) + "\""; }

} // namespace ortc::cli
