//===- CompileEpRegistry.h - the compile-side EPs of a build ----*- C++ -*-===//
//
// `ortc compile --ep=cpu` looks EPs up here. Each EP describes itself from its
// own folder (providers/<ep>/compile) as a CompileEpPlugin: its name and
// aliases, the options it accepts, a factory, and a hook that registers its
// passes and pipelines by name (for ortc-opt and --test-ep's +<pass>). Which
// EPs a build has is decided in one leaf, providers/CompileEps.cpp, by CMake's
// ORTC_ENABLE_<EP> options; generic code never names an EP.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_COMPILER_EP_COMPILEEPREGISTRY_H
#define ORTC_COMPILER_EP_COMPILEEPREGISTRY_H

#include "compiler/EP/CompileEp.h"
#include "runtime/ep/EpOptions.h"

#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace mlir {
class DialectRegistry;
}

namespace ortc {

/// One EP as the compiler's registry holds it.
struct CompileEpPlugin {
  std::string name;                 // the EP's identity name, "cpu_ep"
  std::vector<std::string> aliases; // "cpu"
  std::string summary;              // one line for `ortc compile --help`
  /// The keys the factory accepts; the registry refuses any other.
  std::vector<EpOptionSpec> options;
  /// A new EP for `options` (only listed keys), or null with a one-line
  /// `error` naming the EP, the key and what it accepts.
  std::function<std::unique_ptr<CompileEp>(const EpOptionMap &options, std::string &error)> create;
  /// Registers the EP's passes and pipelines with MLIR's pass registry and
  /// its dialects with `dialects` (optional).
  std::function<void(mlir::DialectRegistry &dialects)> registerPasses;
  /// Whether `ortc compile` without --ep uses it. A device EP says no, so
  /// that a plain compile writes a model that runs on any machine.
  bool usedByDefault = true;
};

class CompileEpRegistry {
public:
  /// Adds `plugin`; refuses (false, `error`) a name or alias already taken.
  bool add(CompileEpPlugin plugin, std::string &error);

  /// The plugin called `name` (its name or an alias), or null.
  const CompileEpPlugin *find(const std::string &name) const;
  const std::vector<CompileEpPlugin> &plugins() const { return plugins_; }
  /// The EP names in registration order.
  std::vector<std::string> names() const;
  /// Those of them used without --ep (usedByDefault).
  std::vector<std::string> defaultNames() const;
  /// "cpu_ep (alias cpu)": every EP, for messages.
  std::string describe() const;

  /// A new instance of the EP called `name` with `options`, or null with a
  /// one-line `error`: an EP this build lacks (listing those it has), a key
  /// the EP does not take, or a value the EP refuses.
  std::unique_ptr<CompileEp> create(const std::string &name, const EpOptionMap &options,
                                    std::string &error) const;

  /// Runs every plugin's registerPasses.
  void registerPasses(mlir::DialectRegistry &dialects) const;

private:
  std::vector<CompileEpPlugin> plugins_;
};

/// The compile-side EPs of this build, registered once on first use (the
/// leaf providers/CompileEps.cpp defines it; link OrtcCompileEps).
const CompileEpRegistry &builtinCompileEps();

} // namespace ortc

#endif // ORTC_COMPILER_EP_COMPILEEPREGISTRY_H
