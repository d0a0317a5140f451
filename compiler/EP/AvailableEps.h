//===- AvailableEps.h - the compile-side EPs of this build ------*- C++ -*-===//
//
// `ortc compile --ep=cuda,cpu` looks EPs up here. Each EP's compile half
// registers with this list when its issue lands; short names ("cpu") and full
// names ("cpu_ep") both work.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_EP_AVAILABLEEPS_H
#define ORTC_COMPILER_EP_AVAILABLEEPS_H

#include "compiler/EP/CompileEp.h"

#include <memory>
#include <string>
#include <vector>

namespace ortc {

/// Names of the EPs this build can compile for.
std::vector<std::string> availableCompileEps();

/// Compile options that EPs read (from `ortc compile`'s command line).
struct EpOptions {
  std::string cpu = "host"; // --cpu: the CPU EP's target
};

/// A new instance of the EP named `name`, or null with a one-line `error`
/// that lists what is available or says why the options are refused.
std::unique_ptr<CompileEp> createCompileEp(const std::string &name, const EpOptions &options,
                                           std::string &error);
std::unique_ptr<CompileEp> createCompileEp(const std::string &name, std::string &error);

} // namespace ortc

#endif // ORTC_COMPILER_EP_AVAILABLEEPS_H
