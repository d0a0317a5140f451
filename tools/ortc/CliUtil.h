//===- CliUtil.h - option parsing and tables for the commands ---*- C++ -*-===//
//
// Shared by the `ortc` tool and the runtime-only runner `ortc-run` (library
// OrtcToolSupport, with TensorIo.h): nothing here reaches the compiler.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_TOOLS_ORTC_CLIUTIL_H
#define ORTC_TOOLS_ORTC_CLIUTIL_H

#include <cstdint>
#include <functional>
#include <iosfwd>
#include <optional>
#include <string>
#include <vector>

namespace ortc::cli {

// Exit codes shared by every command of both tools.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1; // bad input, compile error, a run that fails
constexpr int kExitUsage = 2;  // bad command line, or a feature not available yet

/// The program errors are printed under: "ortc" unless the tool sets
/// another ("ortc-run"). OptionParser's messages name it too.
void setProgramName(const std::string &name);
const std::string &programName();

/// Prints "<program>: <message>" on stderr, on one line.
void printError(const std::string &message);

/// `text` with line breaks and other control characters escaped (\xNN), so
/// that a name from a hostile model stays on one line.
std::string escapeLineBreaks(const std::string &text);

/// The options of one `ortc` subcommand, declared once and parsed by one
/// loop that every subcommand shares: `--name VALUE` and `--name=VALUE`,
/// flags, -h/--help, the model argument, and options that belong to another
/// subcommand (refused with where they belong). Handlers report their own
/// errors (printError) and return false.
class OptionParser {
public:
  using ValueHandler = std::function<bool(const std::string &value)>;

  /// `command` is the subcommand ("run": messages say 'ortc run'); empty for
  /// a tool without subcommands (messages say 'ortc-run').
  OptionParser(std::string command, std::function<void()> help);

  /// An option without a value.
  void flag(const std::string &name, std::function<bool()> onSeen);
  void flag(const std::string &name, bool &seen);
  /// An option with a value; several names may share one handler.
  void value(const std::vector<std::string> &names, ValueHandler onValue);
  void value(const std::string &name, ValueHandler onValue);
  void value(const std::string &name, std::string &into);
  /// An option whose value is optional: `--name` gives "", `--name=VALUE`
  /// gives VALUE; the next argument is never taken.
  void optionalValue(const std::string &name, ValueHandler onValue);
  /// An integer option in [min, max].
  void integer(const std::string &name, int64_t min, int64_t max, int64_t &into);
  /// Options of other subcommands: "option NAME is for WHERE, not 'ortc CMD'".
  void elsewhere(const std::vector<std::string> &names, const std::string &where);

  /// The model: the one positional argument, required.
  void model(std::string &into);

  /// Parses `args`. Returns nullopt to go on, or the exit status to return
  /// now: kExitOk after --help, kExitUsage after a reported error.
  std::optional<int> parse(const std::vector<std::string> &args);

private:
  struct Option {
    std::vector<std::string> names;
    bool takesValue = false;
    bool valueOptional = false;
    ValueHandler handler; // flags get ""
    std::string elsewhere;
  };
  const Option *find(const std::string &name) const;

  std::string command;
  std::function<void()> help;
  std::vector<Option> options;
  std::string *modelSlot = nullptr;
};

/// Parses `text` as a decimal integer in [min, max] for option `name`;
/// reports and returns false otherwise.
bool parseInteger(const std::string &name, const std::string &text, int64_t min, int64_t max,
                  int64_t &value);

/// Prints `rows` with every column padded to its widest cell, columns two
/// spaces apart, each row after `indent`. Cells are escaped to stay on one
/// line (names come from the model).
void printTable(std::ostream &os, const std::vector<std::vector<std::string>> &rows,
                const std::string &indent = "  ");

/// A number for tables: `digits` significant digits, %g style ("nan", "inf"
/// as printf writes them).
std::string formatNumber(double value, int digits = 6);
/// A number for JSON: %.6g, or null when not finite (JSON has no NaN).
/// (jsonString, which needs the compiler's escaping, is in Commands.h.)
std::string jsonNumber(double value);

} // namespace ortc::cli

#endif // ORTC_TOOLS_ORTC_CLIUTIL_H
