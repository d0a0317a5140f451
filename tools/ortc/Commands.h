//===- Commands.h - the subcommands of the ortc tool ------------*- C++ -*-===//

#ifndef ORTC_TOOLS_ORTC_COMMANDS_H
#define ORTC_TOOLS_ORTC_COMMANDS_H

#include "tools/ortc/CliUtil.h" // exit codes, printError

#include <string>
#include <vector>

namespace ortc::cli {

constexpr const char *kOrtcVersion = "0.1.0";

int runCompile(const std::vector<std::string> &args);
void printCompileHelp();
int runRun(const std::vector<std::string> &args);
void printRunHelp();
int runInspect(const std::vector<std::string> &args);
void printInspectHelp();
int runBench(const std::vector<std::string> &args);
void printBenchHelp();

/// A quoted, escaped JSON string (the compiler's jsonEscape; in ortc.cpp, so
/// that the code ortc-run shares needs no compiler library).
std::string jsonString(const std::string &text);

} // namespace ortc::cli

#endif // ORTC_TOOLS_ORTC_COMMANDS_H
