//===- CliUtil.cpp - option parsing and tables for the commands -----------===//

#include "tools/ortc/CliUtil.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <ostream>

namespace ortc::cli {

// Names in a hostile model may hold newlines or other line breaks; escape them
// so that every error stays on one line.
std::string escapeLineBreaks(const std::string &text) {
  std::string out;
  static const char hex[] = "0123456789abcdef";
  auto escape = [&](unsigned char c) {
    out += "\\x";
    out += hex[c >> 4];
    out += hex[c & 15];
  };
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = text[i];
    unsigned char next = i + 1 < text.size() ? text[i + 1] : 0;
    unsigned char third = i + 2 < text.size() ? text[i + 2] : 0;
    if (c < 0x20 || c == 0x7f) {
      escape(c);
    } else if (c == 0xc2 && next >= 0x80 && next <= 0x9f) { // C1 controls, NEL
      escape(c);
      escape(next);
      ++i;
    } else if (c == 0xe2 && next == 0x80 && (third == 0xa8 || third == 0xa9)) { // U+2028/9
      escape(c);
      escape(next);
      escape(third);
      i += 2;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out;
}

namespace {
std::string &programNameSlot() {
  static std::string name = "ortc";
  return name;
}
} // namespace

void setProgramName(const std::string &name) { programNameSlot() = name; }
const std::string &programName() { return programNameSlot(); }

void printError(const std::string &message) {
  std::cerr << programName() << ": " << escapeLineBreaks(message) << "\n";
}

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
  // "ortc run", or the tool's own name when it has no subcommands.
  std::string tool = command.empty() ? programName() : programName() + " " + command;
  std::string seeHelp = " (see `" + tool + " --help`)";
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
        printError("unknown option '" + arg + "' for '" + tool + "'" + seeHelp);
        return kExitUsage;
      }
      if (!option->elsewhere.empty()) {
        printError("option " + name + " is for " + option->elsewhere + ", not '" + tool + "'");
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

} // namespace ortc::cli
