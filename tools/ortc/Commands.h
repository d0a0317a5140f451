//===- Commands.h - the subcommands of the ortc tool ------------*- C++ -*-===//

#ifndef ORTC_TOOLS_ORTC_COMMANDS_H
#define ORTC_TOOLS_ORTC_COMMANDS_H

#include <string>
#include <vector>

namespace ortc::cli {

constexpr const char *kOrtcVersion = "0.1.0";

// Exit codes shared by every subcommand.
constexpr int kExitOk = 0;
constexpr int kExitFailed = 1; // bad input, compile error
constexpr int kExitUsage = 2;  // bad command line, or a feature not available yet

int runCompile(const std::vector<std::string> &args);
void printCompileHelp();
int runRun(const std::vector<std::string> &args);
void printRunHelp();
int runInspect(const std::vector<std::string> &args);
void printInspectHelp();
int runBench(const std::vector<std::string> &args);
void printBenchHelp();

/// Prints "ortc: <message>" on stderr.
void printError(const std::string &message);

/// `text` with line breaks and other control characters escaped (\xNN), so
/// that a name from a hostile model stays on one line.
std::string escapeLineBreaks(const std::string &text);

} // namespace ortc::cli

#endif // ORTC_TOOLS_ORTC_COMMANDS_H
