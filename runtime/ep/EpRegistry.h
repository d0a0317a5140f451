//===- EpRegistry.h - EPs by name and by context source key -----*- C++ -*-===//
//
// The runtime maps each EPContext node's `source` to the EP that declared that
// key. A key held by two EPs, an EP name used twice, or an empty key is an
// error at registration, not a silent override.
//
// A build's EPs come from a factory list that the leaf
// providers/RuntimeEps.cpp defines (builtinRuntimeEpFactories); generic code
// never names an EP. Link the OrtcRuntimeEps target to get it.
//
//===----------------------------------------------------------------------===//

#ifndef ORTC_RUNTIME_EP_EPREGISTRY_H
#define ORTC_RUNTIME_EP_EPREGISTRY_H

#include "runtime/ep/RuntimeEp.h"

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ortc {

/// How a runtime build makes one of its EPs.
struct RuntimeEpFactory {
  std::string name;                 // the EP's identity name, "cpu_ep"
  std::vector<std::string> aliases; // other names users may write, "cpu"
  std::function<std::shared_ptr<RuntimeEp>()> create;
};

class EpRegistry {
public:
  /// A registry with one EP from each factory, in list order.
  static Result<EpRegistry> fromFactories(const std::vector<RuntimeEpFactory> &factories);

  /// Adds `ep` with the keys it reports from contextSourceKeys(); `aliases`
  /// are other names findByName() takes for it.
  Status add(std::shared_ptr<RuntimeEp> ep, std::vector<std::string> aliases = {});

  /// The EP called `name` (its identity name or an alias), or null.
  RuntimeEp *findByName(const std::string &name) const;
  /// The EP holding `source`, or an error naming the source and listing every
  /// registered EP with its keys.
  Result<RuntimeEp *> findBySource(const std::string &source) const;

  /// Checks options keyed by EP name or alias: an EP that is not registered
  /// or a key that EP does not list is one line naming both and what is
  /// accepted. Values are the EP's to check (initialize).
  Status checkOptions(const EpOptionsByEp &options) const;
  /// The options of `ep` in `options`, whichever of its names they were given under.
  EpOptionMap optionsFor(const RuntimeEp &ep, const EpOptionsByEp &options) const;

  /// "cpu_ep [ortc_cpu], cuda_ep [ortc_cuda]" (EPs in registration order).
  std::string describe() const;
  const std::vector<std::shared_ptr<RuntimeEp>> &eps() const { return eps_; }

private:
  std::vector<std::shared_ptr<RuntimeEp>> eps_;
  std::map<std::string, RuntimeEp *> bySource_;
  std::map<std::string, RuntimeEp *> byAlias_;
};

/// The EPs of this build (defined by providers/RuntimeEps.cpp, the leaf that
/// CMake's ORTC_ENABLE_<EP> options fill).
const std::vector<RuntimeEpFactory> &builtinRuntimeEpFactories();

/// EpRegistry::fromFactories(builtinRuntimeEpFactories()).
Result<EpRegistry> createBuiltinEpRegistry();

} // namespace ortc

#endif // ORTC_RUNTIME_EP_EPREGISTRY_H
