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

OptionParser::OptionParser(std::string command, std::function<void()> help)
    : command(std::move(command)), help(std::move(help)) {}

void OptionParser::flag(const std::string &name, std::function<bool()> onSeen) {
  options.push_back({{name}, false, false, [onSeen](const std::string &) { return onSeen(); }, ""});
}

void OptionParser::flag(const std::string &name, bool &seen) {
  flag(name, [&seen] {
    seen = true;
    return true;
  });
}

void OptionParser::value(const std::vector<std::string> &names, ValueHandler onValue) {
  options.push_back({names, true, false, std::move(onValue), ""});
}

void OptionParser::optionalValue(const std::string &name, ValueHandler onValue) {
  options.push_back({{name}, true, true, std::move(onValue), ""});
}

void OptionParser::value(const std::string &name, ValueHandler onValue) {
  value(std::vector<std::string>{name}, std::move(onValue));
}

void OptionParser::value(const std::string &name, std::string &into) {
  value(name, [&into](const std::string &text) {
    into = text;
    return true;
  });
}

void OptionParser::integer(const std::string &name, int64_t min, int64_t max, int64_t &into) {
  value(name, [name, min, max, &into](const std::string &text) {
    return parseInteger(name, text, min, max, into);
  });
}

void OptionParser::elsewhere(const std::vector<std::string> &names, const std::string &where) {
  for (const std::string &name : names)
    options.push_back({{name}, true, false, nullptr, where});
}

void OptionParser::model(std::string &into) { modelSlot = &into; }

const OptionParser::Option *OptionParser::find(const std::string &name) const {
  for (const Option &option : options)
    for (const std::string &n : option.names)
      if (n == name)
        return &option;
  return nullptr;
}

std::optional<int> OptionParser::parse(const std::vector<std::string> &args) {
  std::string seeHelp = " (see `ortc " + command + " --help`)";
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string &arg = args[i];
    if (arg == "-h" || arg == "--help") {
      help();
      return kExitOk;
    }
    if (arg.size() > 1 && arg[0] == '-') {
      // --name=value, or --name [value].
      size_t eq = arg.find('=');
      std::string name = arg.substr(0, eq);
      const Option *option = find(name);
      if (!option) {
        printError("unknown option '" + arg + "' for 'ortc " + command + "'" + seeHelp);
        return kExitUsage;
      }
      if (!option->elsewhere.empty()) {
        printError("option " + name + " is for " + option->elsewhere + ", not 'ortc " + command +
                   "'");
        return kExitUsage;
      }
      std::string value;
      if (!option->takesValue) {
        if (eq != std::string::npos) {
          printError("option " + name + " takes no value, got '" + arg + "'");
          return kExitUsage;
        }
      } else if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
      } else if (option->valueOptional) {
        value.clear();
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        printError("option " + name + " needs a value");
        return kExitUsage;
      }
      if (!option->handler(value))
        return kExitUsage;
      continue;
    }
    if (!modelSlot) {
      printError("unexpected argument '" + arg + "'" + seeHelp);
      return kExitUsage;
    }
    if (!modelSlot->empty()) {
      printError("one model at a time: got '" + *modelSlot + "' and '" + arg + "'");
      return kExitUsage;
    }
    *modelSlot = arg;
  }
  if (modelSlot && modelSlot->empty()) {
    printError("no model given" + seeHelp);
    return kExitUsage;
  }
  return std::nullopt;
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
