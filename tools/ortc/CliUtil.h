//===- CliUtil.h - option parsing and tables for the commands ---*- C++ -*-===//

#ifndef ORTC_TOOLS_ORTC_CLIUTIL_H
#define ORTC_TOOLS_ORTC_CLIUTIL_H

#include <cstdint>
#include <iosfwd>
#include <string>
#include <vector>

namespace ortc::cli {

/// What takeOption() found at args[i].
enum class Taken { No, Yes, Error };

/// Matches `NAME VALUE` or `NAME=VALUE` at args[i] and advances `i` past the
/// value. Error (already reported) when NAME comes last without a value.
Taken takeOption(const std::vector<std::string> &args, size_t &i, const std::string &name,
                 std::string &value);

/// A positional argument of `ortc COMMAND`: the model path, once. Refuses
/// (reported, false) an unknown option or a second model.
bool takeModelArgument(const std::string &arg, const char *command, std::string &model);

/// Reports and returns false when no model was given to `ortc COMMAND`.
bool requireModel(const std::string &model, const char *command);

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
std::string jsonNumber(double value);

/// A quoted, escaped JSON string.
std::string jsonString(const std::string &text);

} // namespace ortc::cli

#endif // ORTC_TOOLS_ORTC_CLIUTIL_H
