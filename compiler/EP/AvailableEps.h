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

/// A new instance of the EP named `name`, or null with a one-line `error`
/// that lists what is available.
std::unique_ptr<CompileEp> createCompileEp(const std::string &name, std::string &error);

} // namespace ortc

#endif // ORTC_COMPILER_EP_AVAILABLEEPS_H
